/* Open files: OPEN (with its own open owner per handle, so two opens of one file are two states),
 * reads and writes handed to the data path, fsync (LAYOUTCOMMIT for layout writes, COMMIT for MDS
 * writes), ftruncate, fstat and close (fsync, LAYOUTRETURN, CLOSE). After the server lost our state,
 * opens are reclaimed (CLAIM_PREVIOUS in its grace period, CLAIM_FH after it). */
#include "client/layout_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- handles --------------------------------------------------------------------------------- */

struct pnfs_fh *pc_fh_new(struct pnfs_context *ctx, const char *path)
{
	struct pnfs_fh *fh = calloc(1, sizeof(*fh));

	if (!fh)
		return NULL;
	fh->ctx = ctx;
	fh->path = strdup(path ? path : "");
	if (!fh->path) {
		free(fh);
		return NULL;
	}
	return fh;
}

static void fh_link(struct pnfs_fh *fh)
{
	struct pnfs_context *ctx = fh->ctx;
	fh->prev = NULL;
	fh->next = ctx->files;
	if (ctx->files)
		ctx->files->prev = fh;
	ctx->files = fh;
}

static void fh_unlink(struct pnfs_fh *fh)
{
	struct pnfs_context *ctx = fh->ctx;

	if (fh->prev)
		fh->prev->next = fh->next;
	else if (ctx->files == fh)
		ctx->files = fh->next;
	if (fh->next)
		fh->next->prev = fh->prev;
	fh->next = fh->prev = NULL;
}

void pc_fh_free(struct pnfs_fh *fh)
{
	if (!fh)
		return;
	fh_unlink(fh);
	if (fh->ios_abandoned) {
		/* Compounds of an abandoned MDS-path I/O still name this file: the last one frees it. */
		fh->free_pending = 1;
		return;
	}
	pc_waiters_free(fh->idle_waiters);
	fh->idle_waiters = NULL;
	if (fh->lo)
		pc_layout_detach(fh);
	free(fh->path);
	free(fh);
}

struct pnfs_fh *pc_fh_find(struct pnfs_context *ctx, const uint8_t *fhb, uint32_t len)
{
	for (struct pnfs_fh *fh = ctx->files; fh; fh = fh->next)
		if (fh->fhlen == len && memcmp(fh->fh, fhb, len) == 0)
			return fh;
	return NULL;
}

void pc_fh_io_begin(struct pnfs_fh *fh)
{
	fh->ios_inflight++;
}

struct idle_run {
	struct pc_timer t;
	struct pc_waiter *list;
};

static void idle_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct idle_run *r = t->arg;
	struct pc_waiter *w = r->list;

	free(r);
	pc_waiters_run(ctx, w);
}

/* Waiters run from the top of the loop: an I/O completion must not re-enter the caller's code. */
static void run_idle_waiters(struct pnfs_fh *fh)
{
	struct idle_run *r;

	if (!fh->idle_waiters)
		return;
	r = calloc(1, sizeof(*r));
	if (!r)
		return; /* they run at the next idle moment */
	r->list = fh->idle_waiters;
	fh->idle_waiters = NULL;
	r->t.fn = idle_fire;
	r->t.arg = r;
	pc_timer_arm(fh->ctx, &r->t, 0);
}

void pc_fh_io_end(struct pnfs_fh *fh)
{
	if (fh->ios_inflight)
		fh->ios_inflight--;
	if (fh->ios_inflight == 0)
		run_idle_waiters(fh);
}

int pc_fh_when_idle(struct pnfs_fh *fh, void (*fn)(struct pnfs_context *, void *), void *arg)
{
	if (pc_waiter_add(&fh->idle_waiters, 1, fn, arg) < 0)
		return -ENOMEM;
	if (fh->ios_inflight == 0)
		run_idle_waiters(fh);
	return 0;
}

void pc_fh_set_sticky(struct pnfs_fh *fh, int err, const char *fmt, ...)
{
	va_list ap;

	if (fh->sticky_err)
		return;
	fh->sticky_err = err;
	va_start(ap, fmt);
	vsnprintf(fh->sticky_msg, sizeof(fh->sticky_msg), fmt, ap);
	va_end(ap);
	LOG_ERROR("pnfs: %s", fh->sticky_msg);
}

void pc_fh_to_mds(struct pnfs_fh *fh, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fh->mds_reason, sizeof(fh->mds_reason), fmt, ap);
	va_end(ap);
	if (!fh->mds_only)
		fh->ctx->stats.fallbacks++;
	fh->mds_only = 1;
	if (!fh->noticed) {
		fh->noticed = 1;
		LOG_WARN("pnfs: %s: %s; using the MDS path", pc_path_show(fh->ctx, fh->path), fh->mds_reason);
	}
}

uint64_t pnfs_fh_fileid(const struct pnfs_fh *fh)
{
	return fh->fileid;
}

const char *pnfs_fh_mds_reason(struct pnfs_fh *fh)
{
	if (fh->ctx->opts.mds_io)
		return "--mds-io";
	return fh->mds_only ? fh->mds_reason : "";
}

/* ---- open ------------------------------------------------------------------------------------ */

struct open_call {
	struct pc_call call;
	struct pnfs_fh *fh;
	int flags;
	uint32_t mode;
	int created;
};

static void fill_open_owner(struct pnfs_context *ctx, struct pc_compound *c, open_owner4 *o, uint64_t id)
{
	char *name = pc_alloc(c, 32);

	o->clientid = ctx->clientid;
	if (!name)
		return;
	snprintf(name, 32, "open-%llu", (unsigned long long)id);
	o->owner.owner_val = name;
	o->owner.owner_len = (u_int)strlen(name);
}

/* Keep what OPEN, GETFH and GETATTR said about the file. */
static int open_take_result(struct pc_compound *c, struct pnfs_fh *fh, int need_fh)
{
	nfs_resop4 *op = pc_res_op(c, OP_OPEN), *gfh = pc_res_op(c, OP_GETFH), *ga = pc_res_op(c, OP_GETATTR);
	OPEN4resok *ok;

	if (!op || (need_fh && !gfh))
		return pc_err(c->ctx, -EPROTO, "%s: reply without OPEN/GETFH results", c->what);
	ok = &op->nfs_resop4_u.opopen.OPEN4res_u.resok4;
	fh->open_sid = ok->stateid;
	fh->sid_gen++;
	if (ok->delegation.delegation_type != OPEN_DELEGATE_NONE &&
	    ok->delegation.delegation_type != OPEN_DELEGATE_NONE_EXT)
		LOG_INFO("pnfs: %s: the server granted a delegation we did not ask for; ignoring it",
			 pc_path_show(c->ctx, fh->path));
	if (gfh) {
		nfs_fh4 *o = &gfh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
		if (o->nfs_fh4_len == 0 || o->nfs_fh4_len > NFS4_FHSIZE)
			return pc_err(c->ctx, -EPROTO, "%s: bad file handle length %u", c->what, o->nfs_fh4_len);
		memcpy(fh->fh, o->nfs_fh4_val, o->nfs_fh4_len);
		fh->fhlen = o->nfs_fh4_len;
	}
	if (ga) {
		struct proto_fattr fa;
		struct pnfs_stat st;
		if (pc_attr_decode(&ga->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, &fa, &st) == 0) {
			if (proto_attrmask_isset(&fa.mask, FATTR4_TYPE) && st.type != PNFS_REG)
				return pc_err(c->ctx, st.type == PNFS_DIR ? -EISDIR : -EINVAL, "%s: not a regular file",
					      c->what);
			if (proto_attrmask_isset(&fa.mask, FATTR4_SIZE))
				fh->size = st.size;
			fh->fileid = st.fileid;
			fh->change = st.change;
		}
	}
	return 0;
}

static void close_state_quietly(struct pnfs_context *ctx, struct pnfs_fh *fh);

static void trunc_after_open_done(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct open_call *oc = priv;
	struct pnfs_fh *fh = oc->fh;
	(void)data;

	if (status < 0) {
		close_state_quietly(ctx, fh);
		pc_call_complete(&oc->call, status, NULL);
		return;
	}
	fh_link(fh);
	pc_call_complete(&oc->call, 0, fh);
}

static void open_done(struct pc_compound *c)
{
	struct open_call *oc = c->priv;
	struct pnfs_context *ctx = c->ctx;
	struct pnfs_fh *fh = oc->fh;
	int rc = c->status;

	if (rc < 0) {
		pc_compound_err(c);
		pc_compound_free(c);
		pc_fh_free(fh);
		pc_call_complete(&oc->call, rc, NULL);
		return;
	}
	rc = open_take_result(c, fh, 1);
	pc_compound_free(c);
	if (rc < 0) {
		close_state_quietly(ctx, fh);
		pc_call_complete(&oc->call, rc, NULL);
		return;
	}
	if ((oc->flags & O_TRUNC) && (oc->flags & O_ACCMODE) != O_RDONLY && fh->size != 0) {
		/* O_TRUNC on an existing file: SETATTR size 0 with the new open state. */
		rc = pnfs_ftruncate_async(ctx, fh, 0, trunc_after_open_done, oc);
		if (rc == 0)
			return;
		close_state_quietly(ctx, fh);
		pc_call_complete(&oc->call, rc, NULL);
		return;
	}
	fh_link(fh);
	pc_call_complete(&oc->call, 0, fh);
}

int pnfs_open_async(struct pnfs_context *ctx, const char *path, int flags, uint32_t mode, pnfs_cb cb,
		    void *private_data)
{
	const char *comp[PC_PATH_MAX_DEPTH];
	struct open_call *oc;
	struct pc_compound *c;
	nfs_argop4 *op;
	OPEN4args *a;
	int n, rc, acc = flags & O_ACCMODE;

	if (!ctx)
		return -EINVAL;
	if (!ctx->mounted)
		return pc_err(ctx, -ENOTCONN, "not mounted");
	if (acc != O_RDONLY && acc != O_WRONLY && acc != O_RDWR)
		return pc_err(ctx, -EINVAL, "open %s: bad access mode", pc_path_show(ctx, path));
	oc = (struct open_call *)pc_call_new(ctx, sizeof(*oc), cb, private_data);
	if (!oc)
		return pc_err(ctx, -ENOMEM, "out of memory");
	oc->flags = flags;
	oc->mode = mode;
	oc->fh = pc_fh_new(ctx, path);
	c = pc_compound_new(ctx, "open %s", pc_path_show(ctx, path));
	if (!oc->fh || !c) {
		rc = pc_err(ctx, -ENOMEM, "out of memory");
		goto fail;
	}
	oc->fh->flags = flags;
	oc->fh->share_access = acc == O_RDONLY ? OPEN4_SHARE_ACCESS_READ
			       : acc == O_WRONLY ? OPEN4_SHARE_ACCESS_WRITE
						 : OPEN4_SHARE_ACCESS_BOTH;
	n = pc_path_split(c, path, comp, PC_PATH_MAX_DEPTH);
	if (n == 0 || (n > 0 && strcmp(comp[n - 1], "..") == 0)) {
		rc = pc_err(ctx, -EISDIR, "%s: a directory", c->what);
		goto fail;
	}
	if (n < 0) {
		rc = pc_err(ctx, n, "%s: %s", c->what, strerror(-n));
		goto fail;
	}
	rc = pc_add_walk(c, comp, n - 1);
	if (rc < 0) {
		rc = pc_err(ctx, rc, "%s: too many path components", c->what);
		goto fail;
	}
	c->cachethis = 1;
	op = pc_add(c, OP_OPEN);
	if (!op) {
		rc = pc_err(ctx, -E2BIG, "%s: too many path components", c->what);
		goto fail;
	}
	a = &op->nfs_argop4_u.opopen;
	a->seqid = 0;
	a->share_access = oc->fh->share_access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
	a->share_deny = OPEN4_SHARE_DENY_NONE;
	oc->fh->u_owner = ctx->next_open_owner++;
	fill_open_owner(ctx, c, &a->owner, oc->fh->u_owner);
	if (flags & O_CREAT) {
		a->openhow.opentype = OPEN4_CREATE;
		a->openhow.openflag4_u.how.mode = (flags & O_EXCL) ? GUARDED4 : UNCHECKED4;
		rc = pc_fattr_mode(c, &a->openhow.openflag4_u.how.createhow4_u.createattrs, 1, mode, 0, 0);
		if (rc < 0) {
			rc = pc_err(ctx, rc, "out of memory");
			goto fail;
		}
	} else {
		a->openhow.opentype = OPEN4_NOCREATE;
	}
	a->claim.claim = CLAIM_NULL;
	pc_utf8(&a->claim.open_claim4_u.file, comp[n - 1]);
	pc_add_getfh(c);
	pc_add_getattr(c, &pc_attrs_open);
	c->done = open_done;
	c->priv = oc;
	pc_submit(c);
	return 0;
fail:
	pc_compound_free(c);
	pc_fh_free(oc->fh);
	oc->fh = NULL;
	pc_call_complete_later(&oc->call, rc);
	return 0;
}

/* ---- CLOSE ------------------------------------------------------------------------------------ */

static void quiet_close_done(struct pc_compound *c)
{
	pc_fh_free(c->priv);
	pc_compound_free(c);
}

/* Release an open state whose handle the caller will never see (a failed open). */
static void close_state_quietly(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	struct pc_compound *c = pc_compound_new(ctx, "close %s", pc_path_show(ctx, fh->path));
	nfs_argop4 *op;

	if (!c) {
		pc_fh_free(fh);
		return;
	}
	pc_add_putfh(c, fh->fh, fh->fhlen);
	op = pc_add(c, OP_CLOSE);
	if (op)
		op->nfs_argop4_u.opclose.open_stateid = fh->open_sid;
	c->cachethis = 1;
	c->done = quiet_close_done;
	c->priv = fh;
	pc_submit(c);
}

struct fh_call {
	struct pc_call call;
	struct pnfs_fh *fh;
	int status;
	uint64_t length;
	struct pnfs_stat st;
};

static void close_done(struct pc_compound *c)
{
	struct fh_call *fc = c->priv;
	struct pnfs_fh *fh = fc->fh;
	int rc = fc->status;

	if (c->status < 0 && c->nfs_status != NFS4ERR_BAD_STATEID && c->nfs_status != NFS4ERR_EXPIRED &&
	    c->nfs_status != NFS4ERR_STALE) {
		int e = pc_compound_err(c);
		if (rc == 0)
			rc = e;
	}
	pc_compound_free(c);
	if (rc < 0 && fh->sticky_err && rc == fh->sticky_err)
		pc_err(fh->ctx, rc, "%s", fh->sticky_msg);
	pc_fh_free(fh);
	pc_call_complete(&fc->call, rc, NULL);
}

static void close_send(struct pnfs_context *ctx, struct fh_call *fc)
{
	struct pnfs_fh *fh = fc->fh;
	struct pc_compound *c = pc_compound_new(ctx, "close %s", pc_path_show(ctx, fh->path));
	nfs_argop4 *op;

	if (!c) {
		pc_fh_free(fh);
		pc_call_complete(&fc->call, pc_err(ctx, -ENOMEM, "out of memory"), NULL);
		return;
	}
	pc_add_putfh(c, fh->fh, fh->fhlen);
	op = pc_add(c, OP_CLOSE);
	if (op)
		pc_bind_stateid(c, fh, &op->nfs_argop4_u.opclose.open_stateid);
	c->cachethis = 1;
	c->done = close_done;
	c->priv = fc;
	pc_submit(c);
}

static void close_after_return(struct pnfs_context *ctx, int status, void *arg)
{
	/* A refused LAYOUTRETURN loses no data (it was logged); the CLOSE goes on. */
	(void)status;
	close_send(ctx, arg);
}

static void close_after_fsync(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct fh_call *fc = priv;
	struct pnfs_fh *fh = fc->fh;
	(void)data;

	if (status < 0)
		fc->status = status;
	if (fh->lo && pc_layout_return_all(fh, 0, close_after_return, fc) == 0)
		return;
	close_send(ctx, fc);
}

int pnfs_close_async(struct pnfs_context *ctx, struct pnfs_fh *fh, pnfs_cb cb, void *private_data)
{
	struct fh_call *fc;
	int rc;

	if (!ctx || !fh)
		return -EINVAL;
	fc = (struct fh_call *)pc_call_new(ctx, sizeof(*fc), cb, private_data);
	if (!fc) {
		pc_fh_free(fh);
		return pc_err(ctx, -ENOMEM, "out of memory");
	}
	fc->fh = fh;
	rc = pnfs_fsync_async(ctx, fh, close_after_fsync, fc);
	if (rc < 0)
		close_after_fsync(ctx, rc, NULL, fc);
	return 0;
}

/* ---- fsync ------------------------------------------------------------------------------------ */

static void fsync_finish(struct pnfs_context *ctx, struct fh_call *fc)
{
	struct pnfs_fh *fh = fc->fh;
	int rc = fc->status;

	if ((rc == 0 || rc == fh->sticky_err) && fh->sticky_err) {
		rc = fh->sticky_err;
		pc_err(ctx, rc, "%s", fh->sticky_msg);
		fh->sticky_err = 0; /* reported once, like write-back errors */
	}
	pc_call_complete(&fc->call, rc, NULL);
}

static void fsync_after_commit(struct pnfs_context *ctx, int status, void *arg)
{
	struct fh_call *fc = arg;

	if (status < 0 && fc->status == 0)
		fc->status = status;
	fsync_finish(ctx, fc);
}

static void fsync_after_layoutcommit(struct pnfs_context *ctx, int status, void *arg)
{
	struct fh_call *fc = arg;
	struct pnfs_fh *fh = fc->fh;

	if (status < 0 && fc->status == 0)
		fc->status = status;
	if (fh->unstable && pc_mds_commit(fh, fsync_after_commit, fc) == 0)
		return;
	fsync_finish(ctx, fc);
}

/* The file's writes through layouts are committed first (when it has a layout), then next runs. */
static void layout_commit_then(struct pnfs_context *ctx, struct fh_call *fc, pc_io_cb next)
{
	if (fc->fh->lo && pc_layout_commit(fc->fh, next, fc) == 0)
		return;
	next(ctx, 0, fc);
}

static void fsync_idle(struct pnfs_context *ctx, void *arg)
{
	layout_commit_then(ctx, arg, fsync_after_layoutcommit);
}

/* A call on fh (length: a truncate's) that goes on as fn(ctx, fc) once the file's I/O in flight is
 * done, at once when none is. 0 or -ENOMEM (the context error set). */
static int fh_call_when_idle(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t length,
			     void (*fn)(struct pnfs_context *, void *), pnfs_cb cb, void *private_data)
{
	struct fh_call *fc = (struct fh_call *)pc_call_new(ctx, sizeof(*fc), cb, private_data);
	int rc;

	if (!fc)
		return pc_err(ctx, -ENOMEM, "out of memory");
	fc->fh = fh;
	fc->length = length;
	rc = pc_fh_when_idle(fh, fn, fc);
	if (rc < 0) {
		free(fc);
		ctx->ncalls--;
		return pc_err(ctx, rc, "out of memory");
	}
	return 0;
}

int pnfs_fsync_async(struct pnfs_context *ctx, struct pnfs_fh *fh, pnfs_cb cb, void *private_data)
{
	if (!ctx || !fh)
		return -EINVAL;
	return fh_call_when_idle(ctx, fh, 0, fsync_idle, cb, private_data);
}

/* ---- fstat, ftruncate ------------------------------------------------------------------------- */

static void fstat_done(struct pc_compound *c)
{
	struct fh_call *fc = c->priv;
	struct pnfs_fh *fh = fc->fh;
	struct proto_fattr fa;
	int rc = pc_getattr_reply(c, &fa, &fc->st);

	if (rc == 0) {
		/* Writes not yet committed make the file longer than the server knows. */
		if (pc_layout_dirty_end(fh) > fc->st.size)
			fc->st.size = pc_layout_dirty_end(fh);
		fh->size = fc->st.size;
	}
	pc_compound_free(c);
	pc_call_complete(&fc->call, rc, rc < 0 ? NULL : &fc->st);
}

int pnfs_fstat_async(struct pnfs_context *ctx, struct pnfs_fh *fh, pnfs_cb cb, void *private_data)
{
	struct fh_call *fc;
	struct pc_compound *c;

	if (!ctx || !fh)
		return -EINVAL;
	fc = (struct fh_call *)pc_call_new(ctx, sizeof(*fc), cb, private_data);
	c = pc_compound_new(ctx, "fstat %s", pc_path_show(ctx, fh->path));
	if (!fc || !c) {
		free(fc);
		pc_compound_free(c);
		return pc_err(ctx, -ENOMEM, "out of memory");
	}
	fc->fh = fh;
	pc_add_putfh(c, fh->fh, fh->fhlen);
	pc_add_getattr(c, &pc_attrs_stat);
	c->done = fstat_done;
	c->priv = fc;
	pc_submit(c);
	return 0;
}

static void ftruncate_done(struct pc_compound *c)
{
	struct fh_call *fc = c->priv;
	struct pnfs_fh *fh = fc->fh;
	int rc = c->status;

	if (rc < 0) {
		pc_compound_err(c);
	} else {
		fh->size = fc->length;
		if (fh->lo)
			pc_layout_truncated(fh, fc->length);
	}
	pc_compound_free(c);
	pc_call_complete(&fc->call, rc, NULL);
}

static void ftruncate_send(struct pnfs_context *ctx, int status, void *arg)
{
	struct fh_call *fc = arg;
	struct pnfs_fh *fh = fc->fh;
	struct pc_compound *c;
	nfs_argop4 *op;

	if (status < 0) {
		pc_call_complete(&fc->call, status, NULL);
		return;
	}
	c = pc_compound_new(ctx, "truncate %s to %llu", pc_path_show(ctx, fh->path),
			    (unsigned long long)fc->length);
	if (!c) {
		pc_call_complete(&fc->call, pc_err(ctx, -ENOMEM, "out of memory"), NULL);
		return;
	}
	pc_add_putfh(c, fh->fh, fh->fhlen);
	op = pc_add(c, OP_SETATTR);
	if (op) {
		pc_bind_stateid(c, fh, &op->nfs_argop4_u.opsetattr.stateid);
		if (pc_fattr_mode(c, &op->nfs_argop4_u.opsetattr.obj_attributes, 0, 0, 1, fc->length) < 0)
			c->status = -ENOMEM;
	}
	c->cachethis = 1;
	c->done = ftruncate_done;
	c->priv = fc;
	pc_submit(c);
}

static void ftruncate_idle(struct pnfs_context *ctx, void *arg)
{
	/* Written extents are committed first: a later commit would make the file long again. */
	layout_commit_then(ctx, arg, ftruncate_send);
}

int pnfs_ftruncate_async(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t length, pnfs_cb cb,
			 void *private_data)
{
	if (!ctx || !fh)
		return -EINVAL;
	if ((fh->flags & O_ACCMODE) == O_RDONLY)
		return pc_err(ctx, -EBADF, "truncate %s: opened read-only", pc_path_show(ctx, fh->path));
	return fh_call_when_idle(ctx, fh, length, ftruncate_idle, cb, private_data);
}

/* ---- reads and writes ------------------------------------------------------------------------ */

struct io_call {
	struct pc_call call;
	struct pnfs_fh *fh;
};

static void io_done(struct pnfs_context *ctx, int status, void *arg)
{
	struct io_call *ic = arg;
	(void)ctx;
	pc_call_complete(&ic->call, status, NULL);
}

static int io_start(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		    uint64_t offset, int write, pnfs_cb cb, void *private_data)
{
	struct io_call *ic;
	int acc, rc;

	if (!ctx || !fh || iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	acc = fh->flags & O_ACCMODE;
	if (write && acc == O_RDONLY)
		return pc_err(ctx, -EBADF, "write %s: opened read-only", pc_path_show(ctx, fh->path));
	if (!write && acc == O_WRONLY)
		return pc_err(ctx, -EBADF, "read %s: opened write-only", pc_path_show(ctx, fh->path));
	if (offset > INT64_MAX || pc_iov_total(iov, iovcnt) > INT64_MAX - offset)
		return pc_err(ctx, -EFBIG, "%s %s: offset out of range", write ? "write" : "read",
			      pc_path_show(ctx, fh->path));
	ic = (struct io_call *)pc_call_new(ctx, sizeof(*ic), cb, private_data);
	if (!ic)
		return pc_err(ctx, -ENOMEM, "out of memory");
	ic->fh = fh;
	rc = write ? pc_io_write(fh, iov, iovcnt, offset, io_done, ic) : pc_io_read(fh, iov, iovcnt, offset, io_done, ic);
	if (rc < 0) {
		free(ic);
		ctx->ncalls--;
		return rc;
	}
	return 0;
}

int pnfs_preadv_async(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		      uint64_t offset, pnfs_cb cb, void *private_data)
{
	return io_start(ctx, fh, iov, iovcnt, offset, 0, cb, private_data);
}

int pnfs_pwritev_async(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		       uint64_t offset, pnfs_cb cb, void *private_data)
{
	return io_start(ctx, fh, iov, iovcnt, offset, 1, cb, private_data);
}

int pnfs_pread_async(struct pnfs_context *ctx, struct pnfs_fh *fh, void *buf, size_t count, uint64_t offset,
		     pnfs_cb cb, void *private_data)
{
	struct iovec iov = { buf, count };
	return io_start(ctx, fh, &iov, 1, offset, 0, cb, private_data);
}

int pnfs_pwrite_async(struct pnfs_context *ctx, struct pnfs_fh *fh, const void *buf, size_t count,
		      uint64_t offset, pnfs_cb cb, void *private_data)
{
	struct iovec iov = { (void *)buf, count };
	return io_start(ctx, fh, &iov, 1, offset, 1, cb, private_data);
}

/* ---- reclaim after a new client ID ------------------------------------------------------------ */

struct reclaim {
	struct pnfs_context *ctx;
	unsigned pending;
	void (*done)(struct pnfs_context *);
	int during_grace;
};

static void reopen_fh(struct pnfs_context *ctx, struct pnfs_fh *fh);

static void reclaim_put(struct pnfs_context *ctx, void *arg);

static void reclaim_one_done(struct pc_compound *c)
{
	struct reclaim *r = c->priv;
	struct pnfs_context *ctx = c->ctx;
	struct pnfs_fh *fh = (struct pnfs_fh *)(uintptr_t)c->u64[1];
	if (c->status == 0 && open_take_result(c, fh, 0) == 0) {
		fh->reclaim_pending = 0;
		LOG_INFO("pnfs: %s: open reclaimed", pc_path_show(ctx, fh->path));
		/* then what its layout wrote and had not committed, before RECLAIM_COMPLETE */
		if (pc_layout_reclaim_commit(fh, reclaim_put, r) > 0)
			r->pending++;
	} else if (c->status != -ENOTCONN) {
		/* Out of grace (NO_GRACE, RECLAIM_BAD, ...): open it anew once the reclaim is over. */
		LOG_INFO("pnfs: %s: reclaim failed (%s); reopening", pc_path_show(ctx, fh->path),
			 c->have_res ? proto_nfsstat4_name(c->nfs_status) : strerror(-c->status));
		fh->u_reopen = 1;
		pc_layout_reclaim_drop(fh);
	}
	pc_compound_free(c);
	reclaim_put(ctx, r);
}

/* One part of the reclaim (an open, a layout's commit) is over. */
static void reclaim_put(struct pnfs_context *ctx, void *arg)
{
	struct reclaim *r = arg;

	if (--r->pending == 0) {
		void (*done)(struct pnfs_context *) = r->done;
		free(r);
		for (struct pnfs_fh *f = ctx->files; f; f = f->next)
			if (f->u_reopen) {
				f->u_reopen = 0;
				reopen_fh(ctx, f);
			}
		done(ctx);
	}
}

static void reopen_done(struct pc_compound *c)
{
	struct pnfs_fh *fh = c->priv;
	struct pnfs_context *ctx = c->ctx;

	fh->reclaim_pending = 0;
	if (c->status == 0 && open_take_result(c, fh, 0) == 0) {
		LOG_INFO("pnfs: %s: reopened after the server lost our state", pc_path_show(ctx, fh->path));
	} else {
		pc_compound_err(c);
		pc_fh_set_sticky(fh, -EIO, "%s: could not reopen after the server lost our state: %s",
				 pc_path_show(ctx, fh->path), ctx->err);
	}
	pc_compound_free(c);
	pc_compounds_kick(ctx);
}

/* PUTFH, OPEN of fh again (no create, our open owner, as claim says), GETATTR: the compound that
 * takes back an open after the server lost our state. */
static void add_reopen(struct pc_compound *c, struct pnfs_fh *fh, open_claim_type4 claim)
{
	nfs_argop4 *op;
	OPEN4args *a;

	fh->reclaim_pending = 1;
	pc_add_putfh(c, fh->fh, fh->fhlen);
	op = pc_add(c, OP_OPEN);
	if (op) {
		a = &op->nfs_argop4_u.opopen;
		a->share_access = fh->share_access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
		a->share_deny = OPEN4_SHARE_DENY_NONE;
		fill_open_owner(c->ctx, c, &a->owner, fh->u_owner);
		a->openhow.opentype = OPEN4_NOCREATE;
		a->claim.claim = claim;
		if (claim == CLAIM_PREVIOUS)
			a->claim.open_claim4_u.delegate_type = OPEN_DELEGATE_NONE;
	}
	pc_add_getattr(c, &pc_attrs_open);
	c->cachethis = 1;
}

static void reopen_fh(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	struct pc_compound *c = pc_compound_new(ctx, "reopen %s", pc_path_show(ctx, fh->path));

	if (!c)
		return;
	add_reopen(c, fh, CLAIM_FH);
	c->reclaim_op = 1;
	c->done = reopen_done;
	c->priv = fh;
	pc_submit(c);
}

void pc_files_reclaim(struct pnfs_context *ctx, int during_grace, void (*done)(struct pnfs_context *))
{
	struct reclaim *r = calloc(1, sizeof(*r));

	if (!r) {
		done(ctx);
		return;
	}
	r->ctx = ctx;
	r->done = done;
	r->during_grace = during_grace;
	r->pending = 1;
	for (struct pnfs_fh *fh = ctx->files; fh; fh = fh->next) {
		struct pc_compound *c = pc_compound_new(ctx, "reclaim %s", pc_path_show(ctx, fh->path));

		/* The layouts went with the old client ID; their uncommitted writes wait for a reclaim. */
		if (fh->lo)
			pc_layout_reclaim_begin(fh);
		if (!c)
			continue;
		add_reopen(c, fh, CLAIM_PREVIOUS);
		c->setup = 1;
		c->max_delay_retries = 3;
		c->u64[1] = (uint64_t)(uintptr_t)fh;
		c->done = reclaim_one_done;
		c->priv = r;
		r->pending++;
		pc_submit(c);
	}
	/* The extra count keeps r alive while submitting; drop it now. */
	if (--r->pending == 0) {
		free(r);
		done(ctx);
	}
}
