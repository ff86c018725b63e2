/* pnfs cp, put, get and cat: what the arguments name (a URL or a local path, a file, a link or, with
 * -r, a directory tree) and the copy of each entry of a tree; one file's bytes are copied by
 * cli_copy.c. */
#include "client/cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- files and trees -------------------------------------------------------------------------- */

/* out: parent/name, for the path and the shown name. -ENAMETOOLONG when it does not fit. */
static int loc_child(const struct loc *parent, const char *name, struct loc *out)
{
	size_t pl = strlen(parent->path), sl = strlen(parent->shown);
	const char *ps = pl && parent->path[pl - 1] == '/' ? "" : "/";
	const char *ss = sl && parent->shown[sl - 1] == '/' ? "" : "/";

	out->remote = parent->remote;
	out->ctx = parent->ctx;
	if ((size_t)snprintf(out->path, sizeof(out->path), "%s%s%s", parent->path, ps, name) >= sizeof(out->path) ||
	    (size_t)snprintf(out->shown, sizeof(out->shown), "%s%s%s", parent->shown, ss, name) >= sizeof(out->shown)) {
		fprintf(stderr, "pnfs: %s/%s: %s\n", parent->shown, name, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	return 0;
}

/* The last name of a path, trailing slashes ignored, into buf ("" for the root). */
static const char *last_name(const char *p, char *buf, size_t len)
{
	size_t n = strlen(p);
	const char *s;

	while (n > 1 && p[n - 1] == '/')
		n--;
	snprintf(buf, len, "%.*s", (int)n, p);
	s = strrchr(buf, '/');
	if (s && s[1])
		return s + 1;
	return s ? "" : buf;
}

/* Copy a symlink as a symlink (one already at dst is replaced). */
static int copy_link(const struct loc *src, const struct loc *dst)
{
	char target[4096];
	int rc;

	if (src->remote) {
		rc = pnfs_readlink(src->ctx, src->path, target, sizeof(target));
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(src->ctx));
			return rc;
		}
		if ((size_t)rc >= sizeof(target)) {
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
	} else {
		ssize_t n = readlink(src->path, target, sizeof(target) - 1);
		if (n < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(errno));
			return rc;
		}
		target[n] = 0;
	}
	if (dst->remote) {
		rc = pnfs_symlink(dst->ctx, target, dst->path);
		if (rc == -EEXIST && pnfs_unlink(dst->ctx, dst->path) == 0)
			rc = pnfs_symlink(dst->ctx, target, dst->path);
		if (rc < 0)
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
		return rc;
	}
	rc = symlink(target, dst->path) < 0 ? -errno : 0;
	if (rc == -EEXIST && unlink(dst->path) == 0)
		rc = symlink(target, dst->path) < 0 ? -errno : 0;
	if (rc < 0)
		fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(-rc));
	return rc;
}

static int copy_tree(const struct loc *src, const struct loc *dst, uint32_t mode);

/* One entry of a tree: a file, a directory (recursively) or a symlink; other types are refused. */
static int copy_entry(const struct loc *src, const struct loc *dst, enum pnfs_ftype type, uint32_t mode)
{
	if (cli_stop_signal)
		return -EINTR;
	switch (type) {
	case PNFS_REG: return cli_copy_file(src, dst);
	case PNFS_DIR: return copy_tree(src, dst, mode);
	case PNFS_LNK: return copy_link(src, dst);
	default:
		fprintf(stderr, "pnfs: %s: not copied: a %s (a tree copy takes regular files, directories and symlinks)\n",
			src->shown, cli_type_name(type));
		return -EINVAL;
	}
}

static enum pnfs_ftype local_type(mode_t m)
{
	if (S_ISREG(m)) return PNFS_REG;
	if (S_ISDIR(m)) return PNFS_DIR;
	if (S_ISLNK(m)) return PNFS_LNK;
	if (S_ISBLK(m)) return PNFS_BLK;
	if (S_ISCHR(m)) return PNFS_CHR;
	if (S_ISSOCK(m)) return PNFS_SOCK;
	return PNFS_FIFO;
}

/* Make dst a directory (one already there is used) holding a copy of the tree src. mode: src's
 * permission bits, given to a directory made here once it is filled. 0, or -errno after the first
 * failure (the other entries are still copied). */
static int copy_tree(const struct loc *src, const struct loc *dst, uint32_t mode)
{
	int rc, status = 0, made = 1;

	if (dst->remote) {
		struct pnfs_stat st;
		rc = pnfs_mkdir(dst->ctx, dst->path, 0700);
		if (rc == -EEXIST && pnfs_stat(dst->ctx, dst->path, &st) == 0 && st.type == PNFS_DIR)
			rc = made = 0;
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
			return rc;
		}
	} else {
		struct stat st;
		rc = mkdir(dst->path, 0700) < 0 ? -errno : 0;
		if (rc == -EEXIST && stat(dst->path, &st) == 0 && S_ISDIR(st.st_mode))
			rc = made = 0;
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(-rc));
			return rc;
		}
	}
	if (src->remote) {
		struct pnfs_dir *d;
		const struct pnfs_dirent *e;
		if (pnfs_opendir(src->ctx, src->path, &d) < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(src->ctx));
			return -EIO;
		}
		while ((e = pnfs_readdir(d)) && !cli_stop_signal) {
			struct loc s, t;
			if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
				continue;
			if (loc_child(src, e->name, &s) < 0 || loc_child(dst, e->name, &t) < 0)
				rc = -ENAMETOOLONG;
			else
				rc = copy_entry(&s, &t, e->st.type, e->st.mode & 07777);
			if (rc < 0 && !status)
				status = rc;
		}
		pnfs_closedir(d);
	} else {
		DIR *d = opendir(src->path);
		struct dirent *e;
		if (!d) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(errno));
			return rc;
		}
		while ((e = readdir(d)) && !cli_stop_signal) {
			struct loc s, t;
			struct stat st;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (loc_child(src, e->d_name, &s) < 0 || loc_child(dst, e->d_name, &t) < 0) {
				rc = -ENAMETOOLONG;
			} else if (lstat(s.path, &st) < 0) {
				rc = -errno;
				fprintf(stderr, "pnfs: %s: %s\n", s.shown, strerror(errno));
			} else {
				rc = copy_entry(&s, &t, local_type(st.st_mode), st.st_mode & 07777);
			}
			if (rc < 0 && !status)
				status = rc;
		}
		closedir(d);
	}
	if (cli_stop_signal && !status)
		status = -EINTR;
	if (made) {
		/* the tree's directory gets its mode last: a read-only one still took its entries */
		uint32_t m = mode & ~(uint32_t)cli_umask_now();
		if (dst->remote ? pnfs_chmod(dst->ctx, dst->path, m) < 0 : chmod(dst->path, m) < 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown,
				dst->remote ? pnfs_get_error(dst->ctx) : strerror(errno));
			if (!status)
				status = -EIO;
		}
	}
	return status;
}

/* What a copy's argument names: its type and mode (0 and -errno when it does not exist). */
static int loc_stat(const struct loc *l, enum pnfs_ftype *type, uint32_t *mode)
{
	if (l->remote) {
		struct pnfs_stat st;
		int rc = pnfs_stat(l->ctx, l->path, &st);
		if (rc < 0)
			return rc;
		*type = st.type;
		*mode = st.mode & 07777;
		return 0;
	} else {
		struct stat st;
		if (strcmp(l->path, "-") == 0 || lstat(l->path, &st) < 0)
			return strcmp(l->path, "-") == 0 ? -ENOENT : -errno;
		*type = local_type(st.st_mode);
		if (*type == PNFS_LNK && stat(l->path, &st) == 0 && S_ISDIR(st.st_mode))
			*type = PNFS_DIR; /* a destination named through a link to a directory */
		*mode = st.st_mode & 07777;
		return 0;
	}
}

/* Is the tree copy's destination dst (or, when it does not exist yet, its parent) the source
 * directory src or inside it, on the same server? Walked up with ".." (LOOKUPP) to the root, comparing
 * identities, so that no spelling hides it. 1 yes, 0 no. */
static int remote_inside(const struct loc *src, const struct loc *dst)
{
	struct pnfs_identity s, root, id;
	char p[4400];
	char *slash;

	if (pnfs_identity(src->ctx, src->path, &s) < 0 || pnfs_identity(dst->ctx, "/", &root) < 0)
		return 0;
	snprintf(p, sizeof(p), "%s", dst->path);
	if (pnfs_identity(dst->ctx, p, &id) < 0) {
		slash = strrchr(p, '/');
		if (!slash)
			return 0;
		slash[slash == p ? 1 : 0] = 0;
		if (pnfs_identity(dst->ctx, p, &id) < 0)
			return 0;
	}
	for (int depth = 0; depth < 256; depth++) {
		if (pnfs_identity_equal(&id, &s))
			return 1;
		if (pnfs_identity_equal(&id, &root) || strlen(p) + 4 >= sizeof(p))
			return 0;
		strcat(p, "/..");
		if (pnfs_identity(dst->ctx, p, &id) < 0)
			return 0;
	}
	return 0;
}

static int arg_loc(const char *arg, struct loc *l)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->shown, sizeof(l->shown), "%s", arg);
	if (pnfs_is_url(arg)) {
		struct rpath r;
		if (cli_remote(arg, &r) < 0)
			return -EIO;
		l->remote = 1;
		l->ctx = r.ctx;
		snprintf(l->path, sizeof(l->path), "%s", r.u.path);
	} else {
		snprintf(l->path, sizeof(l->path), "%s", arg);
	}
	return 0;
}

int cli_cmd_copy(const char *src, const char *dst)
{
	struct loc s, d;
	enum pnfs_ftype stype = PNFS_REG, dtype = PNFS_REG;
	uint32_t smode = 0, dmode = 0;
	char nbuf[4400];
	const char *name;
	int dst_is_dir;

	if (!pnfs_is_url(src) && !pnfs_is_url(dst))
		cli_die_usage("cp: one of SRC and DST must be a pnfs:// URL (use cp(1) for local copies)");
	if (arg_loc(src, &s) < 0 || arg_loc(dst, &d) < 0)
		return 1;
	if (cli.recursive && loc_stat(&s, &stype, &smode) < 0)
		stype = PNFS_REG; /* said when the copy opens it */
	dst_is_dir = strcmp(d.path, "-") != 0 && loc_stat(&d, &dtype, &dmode) == 0 && dtype == PNFS_DIR;
	name = last_name(s.path, nbuf, sizeof(nbuf));
	if (cli.recursive && stype == PNFS_DIR) {
		/* like cp -r: into an existing directory, else as the new directory DST */
		if (dst_is_dir && *name && strcmp(name, ".") && strcmp(name, "..")) {
			struct loc in = d;
			if (loc_child(&in, name, &d) < 0)
				return 1;
		}
		if (s.remote && d.remote && remote_inside(&s, &d)) {
			/* it would copy its own copy, without end */
			fprintf(stderr, "pnfs: cp -r: %s is inside %s: cannot copy a directory into itself\n", d.shown,
				src);
			return 1;
		}
		return copy_tree(&s, &d, smode) < 0 ? 1 : 0;
	}
	if (strcmp(d.path, "-") != 0 && (dst_is_dir || dst[strlen(dst) - 1] == '/')) {
		struct loc in = d;
		if (loc_child(&in, cli_base_name(s.path), &d) < 0)
			return 1;
	}
	if (cli.recursive && stype == PNFS_LNK)
		return copy_link(&s, &d) < 0 ? 1 : 0;
	return cli_copy_file(&s, &d) < 0 ? 1 : 0;
}

int cli_cmd_cat(int argc, char **argv)
{
	int status = 0;
	int q = cli.quiet;

	cli.quiet = 1;
	for (int i = 0; i < argc; i++) {
		if (!pnfs_is_url(argv[i]))
			cli_die_usage("cat: %s: expected a pnfs:// URL", argv[i]);
		if (cli_cmd_copy(argv[i], "-") != 0)
			status = 1;
	}
	cli.quiet = q;
	return status;
}
