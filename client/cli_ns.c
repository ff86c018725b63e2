/* pnfs rm, mkdir and mv: namespace changes on a server, one call each (mkdir -p walks the path). */
#include "client/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Is this remote path a directory? */
static int remote_is_dir(struct rpath *r)
{
	struct pnfs_stat st;
	return pnfs_stat(r->ctx, r->u.path, &st) == 0 && st.type == PNFS_DIR;
}

/* ---- rm, mkdir, mv ---------------------------------------------------------------------------- */

int cli_cmd_rm(int argc, char **argv)
{
	int status = 0;
	for (int i = 0; i < argc; i++) {
		struct rpath r;
		r.ctx = NULL;
		if (cli_need_remote(argv[i], &r) < 0) {
			status = 1; /* said by cli_remote() */
			continue;
		}
		if (pnfs_unlink(r.ctx, r.u.path) < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
			status = 1;
		}
	}
	return status;
}

static int mkdir_parents(struct pnfs_context *ctx, const char *path)
{
	char buf[4400];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == 0) {
			char c = buf[i];
			struct pnfs_stat st;
			buf[i] = 0;
			if (pnfs_stat(ctx, buf, &st) < 0) {
				int rc = pnfs_mkdir(ctx, buf, 0755);
				if (rc < 0 && rc != -EEXIST)
					return rc;
			} else if (st.type != PNFS_DIR) {
				return -ENOTDIR;
			}
			buf[i] = c;
		}
	}
	return 0;
}

int cli_cmd_mkdir(int argc, char **argv)
{
	int status = 0;
	for (int i = 0; i < argc; i++) {
		struct rpath r;
		int rc;
		r.ctx = NULL;
		if (cli_need_remote(argv[i], &r) < 0) {
			status = 1;
			continue;
		}
		rc = cli.parents ? mkdir_parents(r.ctx, r.u.path) : pnfs_mkdir(r.ctx, r.u.path, 0755);
		if (rc == -ENOTDIR && cli.parents) {
			fprintf(stderr, "pnfs: %s: a path component is not a directory\n", argv[i]);
			status = 1;
		} else if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
			status = 1;
		}
	}
	return status;
}

int cli_cmd_mv(const char *from, const char *to)
{
	struct rpath a, b;

	if (cli_need_remote(from, &a) < 0 || cli_need_remote(to, &b) < 0)
		return 1;
	if (a.ctx != b.ctx) {
		fprintf(stderr, "pnfs: mv: both paths must be on one server (use cp and rm)\n");
		return 1;
	}
	if (remote_is_dir(&b)) {
		char p[4400];
		snprintf(p, sizeof(p), "%s/%s", b.u.path, cli_base_name(a.u.path));
		snprintf(b.u.path, sizeof(b.u.path), "%s", p);
	}
	if (pnfs_rename(a.ctx, a.u.path, b.u.path) < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(a.ctx));
		return 1;
	}
	return 0;
}
