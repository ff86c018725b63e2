/* The sync API: each call starts its async form and runs the context's loop until the callback has
 * run. Nothing else differs, so sync and async calls can be mixed on one context (not from inside a
 * callback: -EDEADLK). */
#include "client/internal.h"

#include <errno.h>
#include <string.h>

struct sync_state {
	int done;
	int status;
	void *data;
	/* what to copy out of data before the callback's borrow ends */
	struct pnfs_stat *st;
	struct pnfs_statfs *sf;
	struct pnfs_identity *id;
	char *buf;
	size_t bufsize;
	/* the error text as the callback saw it: loop work after the callback, in the same
	 * pnfs_run_once(), may set another one, and the caller must read the one of its call */
	char err[sizeof(((struct pnfs_context *)0)->err)];
};

static void sync_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct sync_state *s = priv;

	s->done = 1;
	s->status = status;
	s->data = data;
	if (status >= 0 && data) {
		if (s->st)
			*s->st = *(struct pnfs_stat *)data;
		if (s->sf)
			*s->sf = *(struct pnfs_statfs *)data;
		if (s->id)
			*s->id = *(struct pnfs_identity *)data;
		if (s->buf && s->bufsize) {
			size_t n = strlen(data);
			if (n >= s->bufsize)
				n = s->bufsize - 1;
			memcpy(s->buf, data, n);
			s->buf[n] = 0;
		}
	}
	if (status < 0)
		memcpy(s->err, ctx->err, sizeof(s->err));
}

static int sync_wait(struct pnfs_context *ctx, int rc, struct sync_state *s)
{
	if (rc < 0)
		return rc;
	while (!s->done) {
		rc = pnfs_run_once(ctx, -1);
		if (rc < 0)
			return pc_err(ctx, rc, rc == -EDEADLK ? "sync call from inside a callback" : "event loop: %s",
				      strerror(-rc));
	}
	/* A failed call reports the text its callback saw, whatever the loop did after it. */
	if (s->status < 0)
		memcpy(ctx->err, s->err, sizeof(ctx->err));
	return s->status;
}

#define SYNC(call_expr)                                       \
	struct sync_state s;                                  \
	memset(&s, 0, sizeof(s));                             \
	int rc_ = (call_expr);                                \
	return sync_wait(ctx, rc_, &s)

int pnfs_mount(struct pnfs_context *ctx, const char *host, int port, const char *export)
{
	SYNC(pnfs_mount_async(ctx, host, port, export, sync_cb, &s));
}

int pnfs_umount(struct pnfs_context *ctx)
{
	SYNC(pnfs_umount_async(ctx, sync_cb, &s));
}

int pnfs_stat(struct pnfs_context *ctx, const char *path, struct pnfs_stat *st)
{
	struct sync_state s;
	memset(&s, 0, sizeof(s));
	s.st = st;
	return sync_wait(ctx, pnfs_stat_async(ctx, path, sync_cb, &s), &s);
}

int pnfs_identity(struct pnfs_context *ctx, const char *path, struct pnfs_identity *out)
{
	struct sync_state s;
	memset(&s, 0, sizeof(s));
	s.id = out;
	return sync_wait(ctx, pnfs_identity_async(ctx, path, sync_cb, &s), &s);
}

int pnfs_statfs(struct pnfs_context *ctx, const char *path, struct pnfs_statfs *sf)
{
	struct sync_state s;
	memset(&s, 0, sizeof(s));
	s.sf = sf;
	return sync_wait(ctx, pnfs_statfs_async(ctx, path, sync_cb, &s), &s);
}

int pnfs_chmod(struct pnfs_context *ctx, const char *path, uint32_t mode)
{
	SYNC(pnfs_chmod_async(ctx, path, mode, sync_cb, &s));
}

int pnfs_utimens(struct pnfs_context *ctx, const char *path, const struct timespec ts[2])
{
	SYNC(pnfs_utimens_async(ctx, path, ts, sync_cb, &s));
}

int pnfs_chown(struct pnfs_context *ctx, const char *path, uint32_t uid, uint32_t gid)
{
	SYNC(pnfs_chown_async(ctx, path, uid, gid, sync_cb, &s));
}

int pnfs_mkdir(struct pnfs_context *ctx, const char *path, uint32_t mode)
{
	SYNC(pnfs_mkdir_async(ctx, path, mode, sync_cb, &s));
}

int pnfs_mknod(struct pnfs_context *ctx, const char *path, uint32_t mode, uint32_t major, uint32_t minor)
{
	SYNC(pnfs_mknod_async(ctx, path, mode, major, minor, sync_cb, &s));
}

int pnfs_unlink(struct pnfs_context *ctx, const char *path)
{
	SYNC(pnfs_unlink_async(ctx, path, sync_cb, &s));
}

int pnfs_rename(struct pnfs_context *ctx, const char *from, const char *to)
{
	SYNC(pnfs_rename_async(ctx, from, to, sync_cb, &s));
}

int pnfs_link(struct pnfs_context *ctx, const char *existing, const char *newpath)
{
	SYNC(pnfs_link_async(ctx, existing, newpath, sync_cb, &s));
}

int pnfs_symlink(struct pnfs_context *ctx, const char *target, const char *linkpath)
{
	SYNC(pnfs_symlink_async(ctx, target, linkpath, sync_cb, &s));
}

int pnfs_readlink(struct pnfs_context *ctx, const char *path, char *buf, size_t bufsize)
{
	struct sync_state s;
	memset(&s, 0, sizeof(s));
	s.buf = buf;
	s.bufsize = bufsize;
	return sync_wait(ctx, pnfs_readlink_async(ctx, path, sync_cb, &s), &s);
}

int pnfs_opendir(struct pnfs_context *ctx, const char *path, struct pnfs_dir **out)
{
	struct sync_state s;
	int rc;

	memset(&s, 0, sizeof(s));
	*out = NULL;
	rc = sync_wait(ctx, pnfs_opendir_async(ctx, path, sync_cb, &s), &s);
	if (rc >= 0)
		*out = s.data;
	return rc;
}

int pnfs_open(struct pnfs_context *ctx, const char *path, int flags, uint32_t mode, struct pnfs_fh **out)
{
	struct sync_state s;
	int rc;

	memset(&s, 0, sizeof(s));
	*out = NULL;
	rc = sync_wait(ctx, pnfs_open_async(ctx, path, flags, mode, sync_cb, &s), &s);
	if (rc >= 0)
		*out = s.data;
	return rc;
}

ssize_t pnfs_pread(struct pnfs_context *ctx, struct pnfs_fh *fh, void *buf, size_t count, uint64_t offset)
{
	SYNC(pnfs_pread_async(ctx, fh, buf, count, offset, sync_cb, &s));
}

ssize_t pnfs_pwrite(struct pnfs_context *ctx, struct pnfs_fh *fh, const void *buf, size_t count, uint64_t offset)
{
	SYNC(pnfs_pwrite_async(ctx, fh, buf, count, offset, sync_cb, &s));
}

ssize_t pnfs_preadv(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		    uint64_t offset)
{
	SYNC(pnfs_preadv_async(ctx, fh, iov, iovcnt, offset, sync_cb, &s));
}

ssize_t pnfs_pwritev(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		     uint64_t offset)
{
	SYNC(pnfs_pwritev_async(ctx, fh, iov, iovcnt, offset, sync_cb, &s));
}

int pnfs_fsync(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	SYNC(pnfs_fsync_async(ctx, fh, sync_cb, &s));
}

int pnfs_ftruncate(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t length)
{
	SYNC(pnfs_ftruncate_async(ctx, fh, length, sync_cb, &s));
}

int pnfs_fstat(struct pnfs_context *ctx, struct pnfs_fh *fh, struct pnfs_stat *st)
{
	struct sync_state s;
	memset(&s, 0, sizeof(s));
	s.st = st;
	return sync_wait(ctx, pnfs_fstat_async(ctx, fh, sync_cb, &s), &s);
}

int pnfs_close(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	SYNC(pnfs_close_async(ctx, fh, sync_cb, &s));
}

int pnfs_layout_extents(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t offset, uint64_t length,
			struct pnfs_extent **out, size_t *n)
{
	struct sync_state s;
	int rc;

	memset(&s, 0, sizeof(s));
	*out = NULL;
	*n = 0;
	rc = sync_wait(ctx, pnfs_layout_extents_async(ctx, fh, offset, length, sync_cb, &s), &s);
	if (rc < 0)
		return rc;
	*out = s.data;
	*n = (size_t)rc;
	return 0;
}
