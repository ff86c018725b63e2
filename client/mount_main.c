/* pnfs mount: the userspace pNFS client as a file system, through FUSE (libfuse3's path-based
 * API). Every FUSE operation becomes one call of libpnfs's sync API on one context; a mutex keeps
 * the context to one caller at a time, so FUSE's worker threads queue there (the I/O of each call
 * still runs in parallel on every LUN inside libpnfs). Data moves through layouts, the MDS path
 * being libpnfs's fallback; close(2) (FUSE flush) and fsync(2) commit (LAYOUTCOMMIT / COMMIT), so
 * another client that opens the file afterwards sees the data: close-to-open, as the kernel's NFS
 * client. The context is made in FUSE's init, after the daemon forked, because libpnfs runs
 * threads; a trial mount before that reports a wrong URL or an unreachable server on the terminal.
 * This file belongs to the pnfs command only (kept out of libpnfs). */
#define FUSE_USE_VERSION 35
#include "client/mount.h"
#include "client/pnfs.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
	struct pnfs_opts opts;
	struct pnfs_url url;
	char base[PATH_MAX];      /* the URL's path: the mount's root on the server */
	struct pnfs_context *ctx;
	pthread_mutex_t lock;
	double attr_timeout;
	int failed;               /* the mount in init failed: every operation answers EIO */
} M = { .lock = PTHREAD_MUTEX_INITIALIZER, .attr_timeout = 1.0 };

/* The server path of a FUSE path (always absolute, "/" for the root). */
static const char *spath(const char *path, char *buf, size_t len)
{
	if (!strcmp(M.base, "/") || !M.base[0])
		return path;
	snprintf(buf, len, "%s%s", M.base, strcmp(path, "/") ? path : "");
	return buf;
}

/* Files open in this mount, by server path: a GETATTR of a path the server answers from what is
 * committed, which misses writes still under a layout (the size grows at LAYOUTCOMMIT), so a path
 * open here is answered from its open file (pnfs_fstat counts those writes). Under M.lock. */
struct openf {
	struct openf *next;
	struct pnfs_fh *fh;
	char path[PATH_MAX];
};
static struct openf *openfs;

static struct pnfs_fh *open_find(const char *path)
{
	for (struct openf *o = openfs; o; o = o->next)
		if (!strcmp(o->path, path))
			return o->fh;
	return NULL;
}

static void open_add(const char *path, struct pnfs_fh *fh)
{
	struct openf *o = calloc(1, sizeof(*o));
	if (!o)
		return; /* only the size of a file being written is less fresh */
	o->fh = fh;
	snprintf(o->path, sizeof(o->path), "%s", path);
	o->next = openfs;
	openfs = o;
}

static void open_del(struct pnfs_fh *fh)
{
	for (struct openf **pp = &openfs; *pp; pp = &(*pp)->next)
		if ((*pp)->fh == fh) {
			struct openf *o = *pp;
			*pp = o->next;
			free(o);
			return;
		}
}

static void open_rename(const char *from, const char *to)
{
	size_t fl = strlen(from);
	for (struct openf *o = openfs; o; o = o->next)
		if (!strncmp(o->path, from, fl) && (o->path[fl] == 0 || o->path[fl] == '/')) {
			char rest[PATH_MAX];
			snprintf(rest, sizeof(rest), "%s", o->path + fl);
			snprintf(o->path, sizeof(o->path), "%s%s", to, rest);
		}
}

#define LOCKED(expr)                             \
	({                                       \
		__typeof__(expr) r_;             \
		pthread_mutex_lock(&M.lock);     \
		r_ = M.failed ? -EIO : (expr);   \
		pthread_mutex_unlock(&M.lock);   \
		r_;                              \
	})

static void to_stat(const struct pnfs_stat *ps, struct stat *st)
{
	static const mode_t types[] = { [PNFS_REG] = S_IFREG, [PNFS_DIR] = S_IFDIR, [PNFS_BLK] = S_IFBLK,
					[PNFS_CHR] = S_IFCHR, [PNFS_LNK] = S_IFLNK, [PNFS_SOCK] = S_IFSOCK,
					[PNFS_FIFO] = S_IFIFO };
	memset(st, 0, sizeof(*st));
	st->st_mode = (ps->type <= PNFS_FIFO ? types[ps->type] : S_IFREG) | (ps->mode & 07777);
	st->st_nlink = ps->nlink ? ps->nlink : 1;
	st->st_uid = ps->uid;
	st->st_gid = ps->gid;
	st->st_size = (off_t)ps->size;
	st->st_blocks = (blkcnt_t)((ps->space_used + 511) / 512);
	st->st_blksize = 1 << 20;
	st->st_ino = (ino_t)ps->fileid;
	st->st_atim = ps->atime;
	st->st_mtim = ps->mtime;
	st->st_ctim = ps->ctime;
}

static struct pnfs_fh *FH(struct fuse_file_info *fi)
{
	return fi ? (struct pnfs_fh *)(uintptr_t)fi->fh : NULL;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	int rc;

	conn->max_write = 1 << 20;
	conn->max_readahead = 1 << 20;
	cfg->attr_timeout = M.attr_timeout;
	cfg->entry_timeout = M.attr_timeout;
	cfg->negative_timeout = 0;
	cfg->use_ino = 1;
	cfg->hard_remove = 1; /* no .fuse_hidden files: the server keeps an open file's data */
	rc = pnfs_context_create(&M.opts, &M.ctx);
	if (rc == 0)
		rc = pnfs_mount(M.ctx, M.url.host, M.url.port, "/");
	if (rc < 0) {
		fprintf(stderr, "pnfs mount: %s:%d: %s\n", M.url.host, M.url.port,
			M.ctx ? pnfs_get_error(M.ctx) : strerror(-rc));
		M.failed = 1;
	}
	return NULL;
}

static void op_destroy(void *priv)
{
	(void)priv;
	pthread_mutex_lock(&M.lock);
	if (M.ctx) {
		/* Open files are closed (committed, layouts returned) by the unmount. */
		if (!M.failed)
			(void)pnfs_umount(M.ctx);
		pnfs_context_destroy(M.ctx);
		M.ctx = NULL;
	}
	pthread_mutex_unlock(&M.lock);
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	char b[PATH_MAX];
	struct pnfs_stat ps;
	const char *p = spath(path, b, sizeof(b));
	struct pnfs_fh *fh = FH(fi);
	int rc;

	pthread_mutex_lock(&M.lock);
	if (M.failed) {
		rc = -EIO;
	} else if (fh) {
		rc = pnfs_fstat(M.ctx, fh, &ps);
	} else {
		/* The name as the server has it; if it still names a file open here, that file's
		 * own view (its size counts writes not yet committed). */
		struct pnfs_fh *open = open_find(p);
		struct pnfs_stat os;
		rc = pnfs_stat(M.ctx, p, &ps);
		if (rc == 0 && open && pnfs_fstat(M.ctx, open, &os) == 0 && os.fileid == ps.fileid)
			ps = os;
	}
	pthread_mutex_unlock(&M.lock);
	if (rc < 0)
		return rc;
	to_stat(&ps, st);
	return 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	char b[PATH_MAX];
	struct pnfs_dir *d = NULL;
	const struct pnfs_dirent *e;
	int rc;
	(void)off;
	(void)fi;
	(void)flags;

	rc = LOCKED(pnfs_opendir(M.ctx, spath(path, b, sizeof(b)), &d));
	if (rc < 0)
		return rc;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	while ((e = pnfs_readdir(d))) {
		struct stat st;
		to_stat(&e->st, &st);
		if (fill(buf, e->name, &st, 0, FUSE_FILL_DIR_PLUS))
			break;
	}
	pnfs_closedir(d);
	return 0;
}

static int do_open(const char *path, int flags, mode_t mode, struct fuse_file_info *fi)
{
	char b[PATH_MAX];
	struct pnfs_fh *fh = NULL;
	int keep = flags & (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_SYNC | O_DSYNC);
	const char *p = spath(path, b, sizeof(b));
	int rc;

	pthread_mutex_lock(&M.lock);
	rc = M.failed ? -EIO : pnfs_open(M.ctx, p, keep, mode & 07777, &fh);
	if (rc == 0)
		open_add(p, fh);
	pthread_mutex_unlock(&M.lock);
	if (rc < 0)
		return rc;
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 0;
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	return do_open(path, fi->flags, 0, fi);
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return do_open(path, fi->flags | O_CREAT, mode, fi);
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	return (int)LOCKED(pnfs_pread(M.ctx, FH(fi), buf, size, (uint64_t)off));
}

static int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	return (int)LOCKED(pnfs_pwrite(M.ctx, FH(fi), buf, size, (uint64_t)off));
}

/* Every close(2) of a descriptor: commit what it wrote, so that the next open elsewhere sees it. */
static int op_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	return LOCKED(pnfs_fsync(M.ctx, FH(fi)));
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	return LOCKED(pnfs_fsync(M.ctx, FH(fi)));
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	pthread_mutex_lock(&M.lock);
	open_del(FH(fi));
	if (M.ctx)
		(void)pnfs_close(M.ctx, FH(fi));
	pthread_mutex_unlock(&M.lock);
	return 0;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	char b[PATH_MAX];
	struct pnfs_fh *fh = NULL;
	int rc;

	if (FH(fi))
		return LOCKED(pnfs_ftruncate(M.ctx, FH(fi), (uint64_t)size));
	rc = LOCKED(pnfs_open(M.ctx, spath(path, b, sizeof(b)), O_WRONLY, 0, &fh));
	if (rc < 0)
		return rc;
	rc = LOCKED(pnfs_ftruncate(M.ctx, fh, (uint64_t)size));
	{
		int rc2 = LOCKED(pnfs_close(M.ctx, fh));
		if (rc == 0)
			rc = rc2;
	}
	return rc;
}

static int op_mkdir(const char *path, mode_t mode)
{
	char b[PATH_MAX];
	return LOCKED(pnfs_mkdir(M.ctx, spath(path, b, sizeof(b)), mode & 07777));
}

static int op_unlink(const char *path)
{
	char b[PATH_MAX];
	return LOCKED(pnfs_unlink(M.ctx, spath(path, b, sizeof(b))));
}

static int op_rmdir(const char *path)
{
	char b[PATH_MAX];
	struct pnfs_stat ps;
	const char *p = spath(path, b, sizeof(b));
	int rc = LOCKED(pnfs_stat(M.ctx, p, &ps));
	if (rc < 0)
		return rc;
	if (ps.type != PNFS_DIR)
		return -ENOTDIR;
	return LOCKED(pnfs_unlink(M.ctx, p));
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	char b1[PATH_MAX], b2[PATH_MAX];
	const char *t = spath(to, b2, sizeof(b2));

	if (flags & RENAME_EXCHANGE)
		return -EINVAL; /* NFSv4 RENAME cannot swap */
	if (flags & RENAME_NOREPLACE) {
		struct pnfs_stat ps;
		int rc = LOCKED(pnfs_stat(M.ctx, t, &ps));
		if (rc == 0)
			return -EEXIST;
		if (rc != -ENOENT)
			return rc;
	}
	{
		const char *f = spath(from, b1, sizeof(b1));
		int rc;
		pthread_mutex_lock(&M.lock);
		rc = M.failed ? -EIO : pnfs_rename(M.ctx, f, t);
		if (rc == 0)
			open_rename(f, t);
		pthread_mutex_unlock(&M.lock);
		return rc;
	}
}

static int op_symlink(const char *target, const char *linkpath)
{
	char b[PATH_MAX];
	return LOCKED(pnfs_symlink(M.ctx, target, spath(linkpath, b, sizeof(b))));
}

static int op_readlink(const char *path, char *buf, size_t size)
{
	char b[PATH_MAX];
	int rc = LOCKED(pnfs_readlink(M.ctx, spath(path, b, sizeof(b)), buf, size));
	return rc < 0 ? rc : 0;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	char b[PATH_MAX];
	(void)fi;
	return LOCKED(pnfs_chmod(M.ctx, spath(path, b, sizeof(b)), mode & 07777));
}

/* NFSv4 owners are strings; libpnfs sets none yet: a chown that changes nothing succeeds (tar
 * and cp -p as the files' owner), any other is refused. */
static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = op_getattr(path, &st, fi);
	if (rc < 0)
		return rc;
	if ((uid == (uid_t)-1 || uid == st.st_uid) && (gid == (gid_t)-1 || gid == st.st_gid))
		return 0;
	return -EPERM;
}

static int op_utimens(const char *path, const struct timespec ts[2], struct fuse_file_info *fi)
{
	char b[PATH_MAX];
	(void)fi;
	return LOCKED(pnfs_utimens(M.ctx, spath(path, b, sizeof(b)), ts));
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	char b[PATH_MAX];
	struct pnfs_statfs sf;
	int rc = LOCKED(pnfs_statfs(M.ctx, spath(path, b, sizeof(b)), &sf));
	if (rc < 0)
		return rc;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_blocks = sf.total_bytes / 4096;
	sv->f_bfree = sf.free_bytes / 4096;
	sv->f_bavail = sf.avail_bytes / 4096;
	sv->f_files = sf.total_files;
	sv->f_ffree = sf.free_files;
	sv->f_favail = sf.avail_files;
	sv->f_namemax = 255;
	return 0;
}

static const struct fuse_operations ops = {
	.init = op_init,
	.destroy = op_destroy,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.truncate = op_truncate,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.symlink = op_symlink,
	.readlink = op_readlink,
	.chmod = op_chmod,
	.utimens = op_utimens,
	.chown = op_chown,
	.statfs = op_statfs,
};

static void mount_usage(FILE *f)
{
	fprintf(f,
		"usage: pnfs [OPTIONS] mount pnfs://HOST[:PORT]/PATH MOUNTPOINT [-f] [-o OPT[,OPT...]]\n"
		"       pnfs umount MOUNTPOINT\n"
		"Mount PATH of the server on MOUNTPOINT through FUSE; file data goes through layouts.\n"
		"The pnfs OPTIONS (--portal, --device, --initiator, --io-timeout, --mds-io, -v) come\n"
		"before 'mount', or from client.conf and PNFS_* variables as for every command.\n"
		"  -f                 stay in the foreground (default: return once mounted)\n"
		"  -o attr_timeout=S  seconds attributes and names are cached (default 1)\n"
		"  -o OPT             any other FUSE mount option (allow_other, ro, ...)\n"
		"Unmount with 'pnfs umount MOUNTPOINT' (fusermount3 -u): open files are committed\n"
		"and their layouts returned first.\n");
}

int pnfs_cli_mount(int argc, char **argv, const struct pnfs_opts *opts)
{
	const char *url = NULL, *mp = NULL;
	char optbuf[2048] = "", fsname[600];
	char *fargv[16];
	int fargc = 0, fg = 0, rc;
	struct pnfs_context *probe = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			mount_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-f")) {
			fg = 1;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			char *list = strdup(argv[++i]);
			for (char *sv, *t = strtok_r(list, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
				if (!strncmp(t, "attr_timeout=", 13)) {
					char *end;
					M.attr_timeout = strtod(t + 13, &end);
					if (*end || M.attr_timeout < 0) {
						fprintf(stderr, "pnfs mount: bad attr_timeout '%s'\n", t + 13);
						free(list);
						return 2;
					}
					continue;
				}
				size_t l = strlen(optbuf);
				snprintf(optbuf + l, sizeof(optbuf) - l, "%s%s", l ? "," : "", t);
			}
			free(list);
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "pnfs mount: unknown option '%s'\n", argv[i]);
			mount_usage(stderr);
			return 2;
		} else if (!url) {
			url = argv[i];
		} else if (!mp) {
			mp = argv[i];
		} else {
			fprintf(stderr, "pnfs mount: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!url || !mp) {
		mount_usage(stderr);
		return 2;
	}
	if (pnfs_parse_url(url, &M.url) < 0) {
		fprintf(stderr, "pnfs mount: '%s' is not a pnfs://HOST[:PORT]/PATH URL\n", url);
		return 2;
	}
	snprintf(M.base, sizeof(M.base), "%s", M.url.path[0] ? M.url.path : "/");
	{
		size_t l = strlen(M.base);
		while (l > 1 && M.base[l - 1] == '/')
			M.base[--l] = 0;
	}
	M.opts = *opts;
	/* A trial mount: a wrong server or path is said here, not in a daemon's log. */
	rc = pnfs_context_create(&M.opts, &probe);
	if (rc == 0)
		rc = pnfs_mount(probe, M.url.host, M.url.port, "/");
	if (rc == 0) {
		struct pnfs_stat ps;
		rc = pnfs_stat(probe, M.base, &ps);
		if (rc == 0 && ps.type != PNFS_DIR)
			rc = -ENOTDIR;
		if (rc < 0)
			fprintf(stderr, "pnfs mount: %s: %s\n", M.base, strerror(-rc));
	} else {
		fprintf(stderr, "pnfs mount: %s:%d: %s\n", M.url.host, M.url.port,
			probe ? pnfs_get_error(probe) : strerror(-rc));
	}
	if (probe) {
		(void)pnfs_umount(probe);
		pnfs_context_destroy(probe);
	}
	if (rc < 0)
		return 1;

	snprintf(fsname, sizeof(fsname), "fsname=pnfs://%s:%d%s,subtype=pnfs", M.url.host, M.url.port, M.base);
	fargv[fargc++] = "pnfs";
	fargv[fargc++] = (char *)mp;
	fargv[fargc++] = "-o";
	fargv[fargc++] = fsname;
	if (optbuf[0]) {
		fargv[fargc++] = "-o";
		fargv[fargc++] = optbuf;
	}
	if (fg)
		fargv[fargc++] = "-f";
	fargv[fargc] = NULL;
	rc = fuse_main(fargc, fargv, &ops, NULL);
	return rc == 0 && !M.failed ? 0 : 1;
}

int pnfs_cli_umount(int argc, char **argv)
{
	pid_t pid;
	int st;

	if (argc != 1 || argv[0][0] == '-') {
		fprintf(stderr, "usage: pnfs umount MOUNTPOINT\n");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", argv[0], (char *)NULL);
		fprintf(stderr, "pnfs umount: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		fprintf(stderr, "pnfs umount: %s\n", strerror(errno));
		return 1;
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
