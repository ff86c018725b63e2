/* pnfs ls, stat and df: a directory's entries (sorted by name), a file's attributes, the file
 * system's space and layout support, as text or, with --json, one JSON document. */
#include "client/cli.h"
#include "proto/util.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- formatting ------------------------------------------------------------------------------- */

const char *cli_type_name(enum pnfs_ftype t)
{
	switch (t) {
	case PNFS_REG: return "file";
	case PNFS_DIR: return "directory";
	case PNFS_LNK: return "symlink";
	case PNFS_BLK: return "block device";
	case PNFS_CHR: return "character device";
	case PNFS_SOCK: return "socket";
	case PNFS_FIFO: return "fifo";
	}
	return "unknown";
}

static char type_char(enum pnfs_ftype t)
{
	switch (t) {
	case PNFS_DIR: return 'd';
	case PNFS_LNK: return 'l';
	case PNFS_BLK: return 'b';
	case PNFS_CHR: return 'c';
	case PNFS_SOCK: return 's';
	case PNFS_FIFO: return 'p';
	default: return '-';
	}
}

static void mode_str(const struct pnfs_stat *st, char out[11])
{
	const char *rwx = "rwxrwxrwx";
	out[0] = type_char(st->type);
	for (int i = 0; i < 9; i++)
		out[i + 1] = (st->mode >> (8 - i)) & 1 ? rwx[i] : '-';
	out[10] = 0;
}

static void json_stat_fields(FILE *f, const struct pnfs_stat *st)
{
	fprintf(f, "\"type\":\"%s\",\"size\":%" PRIu64 ",\"mode\":\"%04o\",\"nlink\":%u,\"owner\":", cli_type_name(st->type),
		st->size, st->mode, st->nlink);
	proto_json_str(f, st->owner);
	fprintf(f, ",\"group\":");
	proto_json_str(f, st->group);
	fprintf(f, ",\"fileid\":%" PRIu64 ",\"space_used\":%" PRIu64 ",\"mtime\":%lld.%09ld,\"ctime\":%lld.%09ld",
		st->fileid, st->space_used, (long long)st->mtime.tv_sec, st->mtime.tv_nsec,
		(long long)st->ctime.tv_sec, st->ctime.tv_nsec);
}

static void time_str(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;
	time_t t = ts->tv_sec;
	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

/* ---- ls, stat, df ------------------------------------------------------------------------------- */

static int cmp_dirent(const void *a, const void *b)
{
	const struct pnfs_dirent *x = *(const struct pnfs_dirent *const *)a, *y = *(const struct pnfs_dirent *const *)b;
	return strcmp(x->name, y->name);
}

/* ls -h: 1023, 1.0K, 9.9K, 10K, 1.5M, as ls(1) prints them (rounded up). */
static const char *size_ls(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)b;
	int i = -1;

	if (!cli.human || b < 1024) {
		snprintf(buf, len, "%" PRIu64, b);
		return buf;
	}
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (v < 10) {
		double t = v * 10;
		uint64_t tenths = (uint64_t)t;
		if ((double)tenths < t)
			tenths++;
		if (tenths < 100) {
			snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", tenths / 10, tenths % 10, units[i]);
			return buf;
		}
	}
	{
		uint64_t whole = (uint64_t)v;
		if ((double)whole < v)
			whole++;
		if (whole >= 1024 && i < 5) {
			snprintf(buf, len, "1.0%c", units[i + 1]);
			return buf;
		}
		snprintf(buf, len, "%" PRIu64 "%c", whole, units[i]);
	}
	return buf;
}

/* An owner or group as this host names it: a numeric one the server sent is looked up in the
 * host's user and group databases; other strings ("name@domain") and unknown numbers are shown as
 * they came. */
static const char *id_name(const char *s, int group, char *buf, size_t len)
{
	char *end;
	unsigned long id;

	if (!isdigit((unsigned char)s[0]))
		return s;
	errno = 0;
	id = strtoul(s, &end, 10);
	if (*end || errno || id > UINT32_MAX)
		return s;
	if (group) {
		struct group *g = getgrgid((gid_t)id);
		if (g && g->gr_name)
			snprintf(buf, len, "%s", g->gr_name);
		else
			return s;
	} else {
		struct passwd *pw = getpwuid((uid_t)id);
		if (pw && pw->pw_name)
			snprintf(buf, len, "%s", pw->pw_name);
		else
			return s;
	}
	return buf;
}

static void ls_line(const char *name, const struct pnfs_stat *st)
{
	char m[11], t[32], sz[32], on[256], gn[256];

	if (!cli.long_list) {
		printf("%s%s\n", name, st->type == PNFS_DIR ? "/" : "");
		return;
	}
	mode_str(st, m);
	time_str(&st->mtime, t, sizeof(t));
	printf("%s %3u %-8s %-8s %*s %s %s\n", m, st->nlink, id_name(st->owner, 0, on, sizeof(on)),
	       id_name(st->group, 1, gn, sizeof(gn)), cli.human ? 5 : 12, size_ls(st->size, sz, sizeof(sz)), t, name);
}

int cli_cmd_ls(const char *arg)
{
	struct rpath r;
	struct pnfs_stat st;
	struct pnfs_dir *d;
	const struct pnfs_dirent *e, **v;
	unsigned n = 0;
	int rc;

	if (cli_need_remote(arg, &r) < 0)
		return 1;
	rc = pnfs_stat(r.ctx, r.u.path, &st);
	if (rc < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
		return 1;
	}
	if (st.type != PNFS_DIR) {
		if (cli.json) {
			printf("[{\"name\":");
			proto_json_str(stdout, cli_base_name(r.u.path));
			printf(",");
			json_stat_fields(stdout, &st);
			printf("}]\n");
		} else {
			ls_line(cli_base_name(r.u.path), &st);
		}
		return 0;
	}
	rc = pnfs_opendir(r.ctx, r.u.path, &d);
	if (rc < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
		return 1;
	}
	v = calloc(pnfs_dir_count(d) + 1, sizeof(*v));
	if (!v) {
		pnfs_closedir(d);
		return 1;
	}
	while ((e = pnfs_readdir(d)))
		v[n++] = e;
	qsort(v, n, sizeof(*v), cmp_dirent);
	if (cli.json)
		printf("[");
	for (unsigned i = 0; i < n; i++) {
		if (cli.json) {
			printf("%s{\"name\":", i ? "," : "");
			proto_json_str(stdout, v[i]->name);
			printf(",");
			json_stat_fields(stdout, &v[i]->st);
			printf("}");
		} else {
			ls_line(v[i]->name, &v[i]->st);
		}
	}
	if (cli.json)
		printf("]\n");
	free(v);
	pnfs_closedir(d);
	return 0;
}

int cli_cmd_stat(int argc, char **argv)
{
	int status = 0;

	if (cli.json && argc > 1)
		printf("[");
	for (int i = 0; i < argc; i++) {
		struct rpath r;
		struct pnfs_stat st;
		char m[11], t1[32], t2[32], t3[32];

		if (cli_need_remote(argv[i], &r) < 0) {
			status = 1;
			continue;
		}
		if (pnfs_stat(r.ctx, r.u.path, &st) < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
			status = 1;
			continue;
		}
		if (cli.json) {
			printf("%s{\"path\":", i && argc > 1 ? "," : "");
			proto_json_str(stdout, r.u.path);
			printf(",");
			json_stat_fields(stdout, &st);
			printf("}%s", argc > 1 ? "" : "\n");
			continue;
		}
		mode_str(&st, m);
		time_str(&st.atime, t1, sizeof(t1));
		time_str(&st.mtime, t2, sizeof(t2));
		time_str(&st.ctime, t3, sizeof(t3));
		printf("  File: %s\n  Size: %-12" PRIu64 " Used: %-12" PRIu64 " Type: %s\n"
		       "  Mode: (%04o/%s)  Links: %u  Owner: %s  Group: %s\nFileid: %" PRIu64 "  Change: %" PRIu64 "\n"
		       "Access: %s\nModify: %s\nChange: %s\n",
		       r.u.path, st.size, st.space_used, cli_type_name(st.type), st.mode, m, st.nlink, st.owner, st.group,
		       st.fileid, st.change, t1, t2, t3);
	}
	if (cli.json && argc > 1)
		printf("]\n");
	return status;
}

static const char *layout_name(uint32_t t)
{
	switch (t) {
	case 1: return "nfsv4.1-files";
	case 2: return "osd2-objects";
	case 3: return "block-volume";
	case 4: return "flex-files";
	case 5: return "scsi";
	}
	return "unknown";
}

int cli_cmd_df(const char *arg)
{
	struct rpath r;
	struct pnfs_statfs sf;
	char a[32], b[32], c[32];
	uint64_t used;

	if (cli_need_remote(arg, &r) < 0)
		return 1;
	if (pnfs_statfs(r.ctx, r.u.path, &sf) < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
		return 1;
	}
	used = sf.total_bytes > sf.free_bytes ? sf.total_bytes - sf.free_bytes : 0;
	if (cli.json) {
		printf("{\"server\":\"%s:%d\",\"total_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
		       ",\"free_bytes\":%" PRIu64 ",\"avail_bytes\":%" PRIu64 ",\"total_files\":%" PRIu64
		       ",\"free_files\":%" PRIu64 ",\"layout_blksize\":%u,\"layout_types\":[",
		       r.u.host, r.u.port, sf.total_bytes, used, sf.free_bytes, sf.avail_bytes, sf.total_files,
		       sf.free_files, sf.layout_blksize);
		for (unsigned i = 0; i < sf.nlayout_types; i++)
			printf("%s\"%s\"", i ? "," : "", layout_name(sf.layout_types[i]));
		printf("]}\n");
		return 0;
	}
	printf("%-28s %12s %12s %12s %5s  %s\n", "Filesystem", "Size", "Used", "Avail", "Use%", "Layouts");
	{
		char fs[300], lt[128] = "";
		snprintf(fs, sizeof(fs), "%s:%d%s", r.u.host, r.u.port, r.u.path);
		for (unsigned i = 0; i < sf.nlayout_types; i++)
			snprintf(lt + strlen(lt), sizeof(lt) - strlen(lt), "%s%s", i ? "," : "",
				 layout_name(sf.layout_types[i]));
		printf("%-28s %12s %12s %12s %4.0f%%  %s\n", fs, proto_fmt_bytes(sf.total_bytes, PROTO_FMT_TENTHS, a, sizeof(a)),
		       proto_fmt_bytes(used, PROTO_FMT_TENTHS, b, sizeof(b)), proto_fmt_bytes(sf.avail_bytes, PROTO_FMT_TENTHS, c, sizeof(c)),
		       sf.total_bytes ? 100.0 * (double)used / (double)sf.total_bytes : 0.0, lt[0] ? lt : "none");
	}
	return 0;
}
