/* bench-mount: fio on `pnfs mount` next to `pnfs cp` and to the same fio jobs on a mount whose client
 * uses the MDS path only (`pnfs --mds-io mount`), all on one lab in one run. Lab: 4 RAM LUNs on one
 * tgtd, a pool striped over them (1 MiB unit), pnfs-mds with SCSI layouts (as bench-client). The
 * baseline: `pnfs cp` of a 512 MiB file in (from a local file in the page cache) and out (to a local
 * file). Then on each mount: fio 1 MiB sequential write and read of a 512 MiB file, buffered and
 * O_DIRECT (end_fsync=1 on writes), and 4 KiB random read and write over that file, libaio with
 * iodepth 32 on 4 jobs, O_DIRECT, 10 s each. Sequential rounds on the direct mount and the copies
 * are REPS rounds back to back, each ratio the median of the rounds' ratios; the MDS-path mount runs
 * every job once. fio's JSON report (--output-format=json) is parsed here; a job that reports an
 * error fails the program. Targets (issue 29): sequential >= 0.8 x pnfs cp; the direct path >= 2 x
 * the MDS path. A missed target is printed, not an exit status. BENCH_QUICK=1: an eighth of the data
 * and 2 s random jobs. BENCH_MOUNT_OPTS=OPTS: -o OPTS on both mounts (to compare settings). */
#include "tests/bench/benchlab.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB BENCH_MIB
#define INITIATOR "iqn.2024-01.org.pnfs-san:bench-mount"
#define REPS 3

/* ---- a small JSON reader: enough to walk fio's report ------------------------------------------ */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	double num;
	char *str;           /* J_STR: the string */
	char *key;           /* a member of a J_OBJ: its name */
	struct jval *child;  /* J_ARR / J_OBJ: the first element */
	struct jval *next;   /* the next element of the enclosing array or object */
};

struct jparse {
	const char *p, *end;
	int depth;
};

static void jfree(struct jval *v)
{
	while (v) {
		struct jval *n = v->next;
		jfree(v->child);
		free(v->str);
		free(v->key);
		free(v);
		v = n;
	}
}

static void jskip(struct jparse *j)
{
	while (j->p < j->end && isspace((unsigned char)*j->p))
		j->p++;
}

/* A JSON string at j->p (after its opening quote); escapes kept simple: \uXXXX becomes '?'. */
static char *jstring(struct jparse *j)
{
	size_t cap = 32, n = 0;
	char *s = malloc(cap);

	while (s && j->p < j->end && *j->p != '"') {
		char c = *j->p++;
		if (c == '\\') {
			if (j->p >= j->end)
				break;
			c = *j->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u':
				if (j->end - j->p < 4) {
					free(s);
					return NULL;
				}
				j->p += 4;
				c = '?';
				break;
			default: break; /* \" \\ \/ */
			}
		}
		if (n + 2 > cap) {
			char *t = realloc(s, cap *= 2);
			if (!t) {
				free(s);
				return NULL;
			}
			s = t;
		}
		s[n++] = c;
	}
	if (!s || j->p >= j->end) {
		free(s);
		return NULL;
	}
	j->p++; /* the closing quote */
	s[n] = 0;
	return s;
}

static struct jval *jvalue(struct jparse *j)
{
	struct jval *v;

	jskip(j);
	if (j->p >= j->end || ++j->depth > 64)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	if (*j->p == '{' || *j->p == '[') {
		const char close = *j->p == '{' ? '}' : ']';
		struct jval **tail = &v->child;
		v->type = close == '}' ? J_OBJ : J_ARR;
		j->p++;
		jskip(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
			goto done;
		}
		for (;;) {
			char *key = NULL;
			struct jval *e;
			jskip(j);
			if (v->type == J_OBJ) {
				if (j->p >= j->end || *j->p != '"')
					goto bad;
				j->p++;
				if (!(key = jstring(j)))
					goto bad;
				jskip(j);
				if (j->p >= j->end || *j->p != ':') {
					free(key);
					goto bad;
				}
				j->p++;
			}
			e = jvalue(j);
			if (!e) {
				free(key);
				goto bad;
			}
			e->key = key;
			*tail = e;
			tail = &e->next;
			jskip(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == close) {
				j->p++;
				goto done;
			}
			goto bad;
		}
	} else if (*j->p == '"') {
		j->p++;
		v->type = J_STR;
		if (!(v->str = jstring(j)))
			goto bad;
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
		v->type = J_BOOL;
		v->num = *j->p == 't';
		j->p += *j->p == 't' ? 4 : 5;
	} else if (!strncmp(j->p, "null", 4)) {
		v->type = J_NULL;
		j->p += 4;
	} else {
		char *e;
		v->type = J_NUM;
		v->num = strtod(j->p, &e);
		if (e == j->p || e > j->end)
			goto bad;
		j->p = e;
	}
done:
	j->depth--;
	return v;
bad:
	jfree(v);
	return NULL;
}

/* The member KEY of object o (NULL if none). */
static const struct jval *jget(const struct jval *o, const char *key)
{
	if (!o || o->type != J_OBJ)
		return NULL;
	for (const struct jval *e = o->child; e; e = e->next)
		if (e->key && !strcmp(e->key, key))
			return e;
	return NULL;
}

static double jnum(const struct jval *o, const char *key, double dflt)
{
	const struct jval *v = jget(o, key);
	return v && v->type == J_NUM ? v->num : dflt;
}

/* ---- the lab, the copies, the mounts ------------------------------------------------------------ */

static struct benchlab lab;
static char devs[2048], mnt_direct[400], mnt_mds[400];
static int mounted_direct, mounted_mds;

static void devices_arg(void)
{
	size_t o = 0;
	for (int i = 0; i < lab.n; i++)
		o += (size_t)snprintf(devs + o, sizeof(devs) - o, " --device '%s'", lab.urls[i]);
}

static int do_mount(const char *dir, int mds_io)
{
	char cmd[3000];
	const char *extra = getenv("BENCH_MOUNT_OPTS");
	mkdir(dir, 0755);
	snprintf(cmd, sizeof(cmd), "'%s/pnfs' --initiator %s %s %s mount pnfs://127.0.0.1:%d/ '%s'%s%s%s",
		 benchlab_bin_dir(), INITIATOR, mds_io ? "--mds-io" : "", devs, lab.mds_port, dir,
		 extra && *extra ? " -o '" : "", extra && *extra ? extra : "", extra && *extra ? "'" : "");
	if (system(cmd) != 0) {
		fprintf(stderr, "bench-mount: pnfs mount on %s failed\n", dir);
		return -1;
	}
	return 0;
}

static void do_umount(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "fusermount3 -u '%s' 2>/dev/null", dir);
	for (int i = 0; i < 50 && system(cmd) != 0; i++)
		usleep(100000);
	rmdir(dir);
}

static void cleanup(void)
{
	if (mounted_direct)
		do_umount(mnt_direct);
	if (mounted_mds)
		do_umount(mnt_mds);
	mounted_direct = mounted_mds = 0;
	benchlab_stop(&lab);
}

/* MiB/s of `pnfs cp SRC DST` moving bytes; < 0 on failure. */
static double pnfs_cp(const char *src, const char *dst, uint64_t bytes)
{
	char cmd[3000];
	double t0;

	snprintf(cmd, sizeof(cmd), "'%s/pnfs' cp -q --initiator %s %s '%s' '%s'", benchlab_bin_dir(), INITIATOR, devs,
		 src, dst);
	t0 = benchlab_now();
	if (system(cmd) != 0) {
		fprintf(stderr, "bench-mount: pnfs cp %s %s failed\n", src, dst);
		return -1;
	}
	return (double)bytes / (double)MIB / (benchlab_now() - t0);
}

/* ---- fio ---------------------------------------------------------------------------------------- */

enum job { SEQ_W, SEQ_W_DIRECT, SEQ_R, SEQ_R_DIRECT, RAND_R, RAND_W, NJOBS };

static const struct {
	const char *what, *rw;
	int bs_kib, direct, random;
} jobs[NJOBS] = {
	[SEQ_W] = { "fio seq write 1M", "write", 1024, 0, 0 },
	[SEQ_W_DIRECT] = { "fio seq write 1M O_DIRECT", "write", 1024, 1, 0 },
	[SEQ_R] = { "fio seq read 1M", "read", 1024, 0, 0 },
	[SEQ_R_DIRECT] = { "fio seq read 1M O_DIRECT", "read", 1024, 1, 0 },
	[RAND_R] = { "fio randread 4k qd32 x4", "randread", 4, 1, 1 },
	[RAND_W] = { "fio randwrite 4k qd32 x4", "randwrite", 4, 1, 1 },
};

/* Run job k on FILE (bytes long); the result is MiB/s for sequential jobs, IOPS for random ones
 * (read or write side as the job does), < 0 on failure. */
static double fio_run(enum job k, const char *file, uint64_t bytes)
{
	char cmd[2000], out[500], err[500], *buf = NULL;
	const char *side = strstr(jobs[k].rw, "read") ? "read" : "write";
	struct jparse jp;
	struct jval *root = NULL;
	const struct jval *jobarr, *job, *io;
	double v = -1;
	FILE *f;
	long len;

	snprintf(out, sizeof(out), "%s/fio.json", lab.dir);
	snprintf(err, sizeof(err), "%s/fio.err", lab.dir);
	if (jobs[k].random)
		snprintf(cmd, sizeof(cmd),
			 "fio --name=bench --filename='%s' --size=%" PRIu64 " --rw=%s --bs=4k --ioengine=libaio "
			 "--iodepth=32 --numjobs=4 --direct=1 --time_based --runtime=%d --ramp_time=1 "
			 "--group_reporting --randrepeat=0 %s --output-format=json --output='%s' 2>'%s'",
			 file, bytes, jobs[k].rw, benchlab_quick() ? 2 : 10,
			 strcmp(side, "write") ? "" : "--end_fsync=1", out, err);
	else
		snprintf(cmd, sizeof(cmd),
			 "fio --name=bench --filename='%s' --size=%" PRIu64 " --rw=%s --bs=1M --ioengine=psync "
			 "--direct=%d %s --output-format=json --output='%s' 2>'%s'",
			 file, bytes, jobs[k].rw, jobs[k].direct, strcmp(side, "write") ? "" : "--end_fsync=1", out,
			 err);
	if (system(cmd) != 0) {
		fprintf(stderr, "bench-mount: fio %s on %s failed (see %s)\n", jobs[k].rw, file, err);
		return -1;
	}
	f = fopen(out, "r");
	if (!f || fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) < 0 ||
	    !(buf = malloc((size_t)len)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "bench-mount: cannot read fio's report %s\n", out);
		goto out;
	}
	/* fio may print notes before the report: it starts at the first '{' of a line */
	jp.p = buf;
	while (jp.p < buf + len && !(*jp.p == '{' && (jp.p == buf || jp.p[-1] == '\n')))
		jp.p++;
	jp.end = buf + len;
	jp.depth = 0;
	root = jvalue(&jp);
	jobarr = jget(root, "jobs");
	job = jobarr && jobarr->type == J_ARR ? jobarr->child : NULL;
	io = jget(job, side);
	if (!io) {
		fprintf(stderr, "bench-mount: fio's report %s has no jobs[0].%s\n", out, side);
		goto out;
	}
	if (jnum(job, "error", 0) != 0) {
		fprintf(stderr, "bench-mount: fio %s on %s: job error %g\n", jobs[k].rw, file, jnum(job, "error", 0));
		goto out;
	}
	v = jobs[k].random ? jnum(io, "iops", -1) : jnum(io, "bw_bytes", -1) / (double)MIB;
	if (v <= 0) {
		fprintf(stderr, "bench-mount: fio %s on %s moved nothing\n", jobs[k].rw, file);
		v = -1;
	}
out:
	jfree(root);
	free(buf);
	if (f)
		fclose(f);
	return v;
}

/* ---- the table ---------------------------------------------------------------------------------- */

static void cell_ratio(char *s, size_t n, double ratio, double target, int *missed)
{
	int miss = target > 0 && ratio >= 0 && ratio < target;
	if (ratio < 0)
		snprintf(s, n, "%s", "");
	else
		snprintf(s, n, miss ? "%.3f" : "%.2f", ratio);
	if (miss)
		*missed = 1;
}

static void row(const char *what, const char *unit, double v, double vs_cp, double mds, double vs_mds)
{
	char r1[32], r2[32], m[32] = "";
	int missed = 0;

	cell_ratio(r1, sizeof(r1), vs_cp, 0.8, &missed);
	cell_ratio(r2, sizeof(r2), vs_mds, 2.0, &missed);
	if (mds > 0)
		snprintf(m, sizeof(m), "%.1f", mds);
	printf("%-27s %-5s %9.1f  %9s %-7s  %9s  %9s %-7s%s\n", what, unit, v, r1, vs_cp >= 0 ? ">= 0.8" : "", m, r2,
	       vs_mds >= 0 ? ">= 2" : "", missed ? "  below a target" : "");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	uint64_t bytes = benchlab_scale(512 * MIB);
	char src[400], back[400], url[400], fd_[500], fm[500];
	double cpin[REPS], cpout[REPS], seq[REPS][4], ratio[4][REPS];
	double cin, cout, direct[NJOBS], viamds[NJOBS];
	int fail = 0, n = 0;
	(void)argv;

	if (argc > 1) {
		fprintf(stderr, "usage: bench-mount\n");
		return 2;
	}
	if (access("/dev/fuse", R_OK | W_OK) != 0 || system("command -v fusermount3 >/dev/null && command -v fio >/dev/null") != 0) {
		printf("bench-mount: skipped (needs /dev/fuse, fusermount3 and fio)\n");
		return 0;
	}
	benchlab_install_cleanup("bench-mount");
	atexit(cleanup);
	if (benchlab_start(&lab, "--luns 4 --size 384M") < 0)
		return 1;
	if (benchlab_start_mds(&lab, "--scsi-layouts", "yes") < 0) {
		benchlab_stop(&lab);
		return 1;
	}
	devices_arg();
	snprintf(src, sizeof(src), "%s/src", lab.dir);
	snprintf(back, sizeof(back), "%s/back", lab.dir);
	snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d/cp.bin", lab.mds_port);
	snprintf(mnt_direct, sizeof(mnt_direct), "%s/mnt", lab.dir);
	snprintf(mnt_mds, sizeof(mnt_mds), "%s/mnt-mds", lab.dir);
	snprintf(fd_, sizeof(fd_), "%s/seq", mnt_direct);
	snprintf(fm, sizeof(fm), "%s/seq-mds", mnt_mds);
	if (benchlab_make_source(src, bytes) < 0) {
		fprintf(stderr, "bench-mount: cannot write %s\n", src);
		return 1;
	}
	if (do_mount(mnt_direct, 0) < 0)
		return 1;
	mounted_direct = 1;
	if (do_mount(mnt_mds, 1) < 0)
		return 1;
	mounted_mds = 1;
	printf("lab: 4 RAM LUNs on one tgtd, pool striped 1 MiB, pnfs-mds with SCSI layouts; %" PRIu64 " MiB files;\n"
	       "pnfs cp and the sequential fio jobs on the direct mount: %d rounds, values the rounds' medians,\n"
	       "ratios the medians of the rounds' ratios; the --mds-io mount: every job once; random jobs: libaio,\n"
	       "iodepth 32, 4 jobs, O_DIRECT, %d s\n",
	       bytes / MIB, REPS, benchlab_quick() ? 2 : 10);
	/* The first pass over fresh RAM LUNs allocates their pages: not measured. */
	if (pnfs_cp(src, url, bytes) < 0)
		return 1;
	for (int rep = 0; rep < REPS && !fail; rep++) {
		static const enum job order[4] = { SEQ_W, SEQ_R, SEQ_W_DIRECT, SEQ_R_DIRECT };
		char cmd[1200];
		unlink(back);
		snprintf(cmd, sizeof(cmd), "'%s/pnfs' rm '%s' >/dev/null 2>&1", benchlab_bin_dir(), url);
		if (system(cmd) != 0 || (cpin[n] = pnfs_cp(src, url, bytes)) < 0 || (cpout[n] = pnfs_cp(url, back, bytes)) < 0) {
			fail = 1;
			break;
		}
		for (int k = 0; k < 4 && !fail; k++) {
			enum job j = order[k];
			if (j == SEQ_W || j == SEQ_W_DIRECT)
				unlink(fd_);
			if ((seq[n][j] = fio_run(j, fd_, bytes)) < 0)
				fail = 1;
			else
				ratio[j][n] = seq[n][j] / (j == SEQ_W || j == SEQ_W_DIRECT ? cpin[n] : cpout[n]);
		}
		if (!fail)
			n++;
	}
	if (fail || n == 0)
		return 1;
	{
		char cmd[1200];
		snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", src, back);
		if (system(cmd) != 0) {
			fprintf(stderr, "bench-mount: the file pnfs cp read back differs from the one written\n");
			return 1;
		}
	}
	cin = benchlab_median(cpin, n);
	cout = benchlab_median(cpout, n);
	for (int j = 0; j < 4; j++) {
		double v[REPS];
		for (int r = 0; r < n; r++)
			v[r] = seq[r][j];
		direct[j] = benchlab_median(v, n);
	}
	direct[RAND_R] = fio_run(RAND_R, fd_, bytes);
	direct[RAND_W] = direct[RAND_R] < 0 ? -1 : fio_run(RAND_W, fd_, bytes);
	if (direct[RAND_W] < 0)
		return 1;
	unlink(fd_);
	{
		static const enum job order[NJOBS] = { SEQ_W, SEQ_R, SEQ_W_DIRECT, SEQ_R_DIRECT, RAND_R, RAND_W };
		for (int k = 0; k < NJOBS; k++) {
			enum job j = order[k];
			if (j == SEQ_W || j == SEQ_W_DIRECT)
				unlink(fm);
			if ((viamds[j] = fio_run(j, fm, bytes)) < 0)
				return 1;
		}
		unlink(fm);
	}
	printf("%-27s %-5s %9s  %9s %-7s  %9s  %9s %-7s\n", "what", "unit", "mount", "x pnfs cp", "target", "--mds-io",
	       "x MDS", "target");
	row("pnfs cp in", "MiB/s", cin, -1, 0, -1);
	row("pnfs cp out", "MiB/s", cout, -1, 0, -1);
	for (int j = 0; j < NJOBS; j++)
		row(jobs[j].what, jobs[j].random ? "IOPS" : "MiB/s", direct[j], j < 4 ? benchlab_median(ratio[j], n) : -1,
		    viamds[j], direct[j] / viamds[j]);
	printf("\n");
	unlink(src);
	unlink(back);
	return 0;
}
