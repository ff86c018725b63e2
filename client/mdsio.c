/* I/O through the MDS: READ and WRITE compounds in chunks the session and the server allow, a window
 * of them in flight at once, short writes continued, and COMMIT with write-verifier checks (a changed
 * verifier means the server restarted and unstable writes may be lost: reported, never hidden). */
#include "client/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MDS_IO_WINDOW 16
#define MDS_IO_CHUNK (1u << 20)
#define MDS_IO_OVERHEAD 1024

/* ---- iovec helpers --------------------------------------------------------------------------- */

size_t pc_iov_total(const struct iovec *iov, int niov)
{
	size_t t = 0;
	for (int i = 0; i < niov; i++)
		t += iov[i].iov_len;
	return t;
}

/* Walk [off, off+len) of the iovec array, calling fn on each contiguous piece. */
static void iov_walk(const struct iovec *iov, int niov, size_t off, size_t len,
		     void (*fn)(void *base, size_t n, size_t pos, void *arg), void *arg)
{
	size_t pos = 0;

	for (int i = 0; i < niov && len; i++) {
		size_t l = iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t n = l - off < len ? l - off : len;
		fn((char *)iov[i].iov_base + off, n, pos, arg);
		pos += n;
		len -= n;
		off = 0;
	}
}

static void copy_in_fn(void *base, size_t n, size_t pos, void *arg)
{
	memcpy(base, (const char *)arg + pos, n);
}

static void copy_out_fn(void *base, size_t n, size_t pos, void *arg)
{
	memcpy((char *)arg + pos, base, n);
}

static void zero_fn(void *base, size_t n, size_t pos, void *arg)
{
	(void)pos;
	(void)arg;
	memset(base, 0, n);
}

void pc_iov_copy_in(const struct iovec *iov, int niov, size_t off, const void *src, size_t len)
{
	iov_walk(iov, niov, off, len, copy_in_fn, (void *)src);
}

void pc_iov_copy_out(const struct iovec *iov, int niov, size_t off, void *dst, size_t len)
{
	iov_walk(iov, niov, off, len, copy_out_fn, dst);
}

void pc_iov_zero(const struct iovec *iov, int niov, size_t off, size_t len)
{
	iov_walk(iov, niov, off, len, zero_fn, NULL);
}

struct iov_slice {
	struct iovec *v;
	int n;
};

static void slice_fn(void *base, size_t n, size_t pos, void *arg)
{
	struct iov_slice *s = arg;

	(void)pos;
	s->v[s->n].iov_base = base;
	s->v[s->n].iov_len = n;
	s->n++;
}

int pc_iov_slice(const struct iovec *iov, int niov, size_t off, size_t len, struct iovec **out, int *nout)
{
	struct iov_slice s = { calloc((size_t)niov + 1, sizeof(*s.v)), 0 };

	if (!s.v)
		return -ENOMEM;
	iov_walk(iov, niov, off, len, slice_fn, &s);
	*out = s.v;
	*nout = s.n;
	return 0;
}

/* ---- chunking ------------------------------------------------------------------------------------- */

static uint32_t chunk_bytes(struct pnfs_context *ctx, int write)
{
	uint64_t c = MDS_IO_CHUNK;
	uint64_t fs = write ? ctx->fs_maxwrite : ctx->fs_maxread;
	uint32_t sess = write ? ctx->fore_maxreq : ctx->fore_maxresp;

	if (fs && fs < c)
		c = fs;
	if (sess && sess > MDS_IO_OVERHEAD + 4096 && sess - MDS_IO_OVERHEAD < c)
		c = sess - MDS_IO_OVERHEAD;
	if (c > PROTO_IO_MAX)
		c = PROTO_IO_MAX;
	if (c >= 65536)
		c &= ~(uint64_t)4095;
	return (uint32_t)(c ? c : 4096);
}

struct mds_io {
	struct pnfs_context *ctx;
	struct pnfs_fh *fh;
	struct iovec *iov;
	int niov;
	uint64_t off;
	size_t total;
	size_t next;            /* next byte (relative) to issue */
	unsigned inflight;
	uint64_t eof_at;        /* reads: smallest offset known to be at or past EOF */
	int err;
	int write;
	uint32_t chunk;
	pc_io_cb cb;
	void *arg;
	/* An I/O that makes no progress for the io timeout while the server is connected fails with
	 * EIO (the MDS waits on LUNs that may be gone; the caller is not held past its own timeout).
	 * Its compounds run on; their replies find the I/O abandoned and only free it. */
	struct pc_timer patience;
	uint64_t progress_ms;
	unsigned patience_ms;
	int abandoned;
};

static void mds_io_pump(struct mds_io *io);
static int mds_io_send(struct mds_io *io, uint64_t coff, size_t n);

static void mds_io_progress(struct mds_io *io)
{
	io->progress_ms = pc_now_ms();
	io->ctx->mds_io_rx_ms = io->progress_ms;
}

/* ---- patience: the io timeout of MDS-path calls ------------------------------------------------ */

/* A call's patience timer t, not armed: fn(ctx, t) with t->arg = arg when it fires; *ms is how long
 * an MDS-path call may go unanswered: twice the io timeout (30 s by default), because its answer
 * includes the server's own SCSI I/O, which may take an io timeout of its own on a slow LUN. */
static void patience_init(struct pnfs_context *ctx, struct pc_timer *t, unsigned *ms,
			  void (*fn)(struct pnfs_context *, struct pc_timer *), void *arg)
{
	*ms = 2 * (ctx->opts.io_timeout_ms ? ctx->opts.io_timeout_ms : 30000);
	t->fn = fn;
	t->arg = arg;
}

/* The patience timer t of a call fired: 1 when the call may wait on (t is armed again), 0 when it
 * has gone ms without an answer. Progress is any answer to MDS-path data I/O of this context (many
 * calls queued behind each other on a busy server all wait, but the server is answering), or the
 * call's own *progress_ms when it keeps one. While reconnecting the connection's own timeouts
 * decide, and the count starts again from its return. */
static int patience_left(struct pnfs_context *ctx, struct pc_timer *t, unsigned ms, uint64_t *progress_ms)
{
	uint64_t last, idle;

	if (ctx->state != PC_ST_READY || !ctx->conn.connected) {
		if (progress_ms)
			*progress_ms = pc_now_ms();
		pc_timer_arm(ctx, t, ms);
		return 1;
	}
	last = progress_ms && *progress_ms > ctx->mds_io_rx_ms ? *progress_ms : ctx->mds_io_rx_ms;
	idle = pc_now_ms() - last;
	if (idle < ms) {
		pc_timer_arm(ctx, t, ms - idle);
		return 1;
	}
	return 0;
}

/* A call given up on for want of an answer: its caller has EIO, its reply is still to come, and the
 * file is not freed before it does (pnfs_close of the file meanwhile sets free_pending). */
static void abandon_call(struct pnfs_fh *fh, int *abandoned)
{
	*abandoned = 1;
	fh->ios_abandoned++;
}

/* The reply of an abandoned call came (the call is freed): a file closed meanwhile may go now. */
static void abandoned_reply(struct pnfs_fh *fh)
{
	if (fh->ios_abandoned && --fh->ios_abandoned == 0 && fh->free_pending)
		pc_fh_free(fh);
}

/* ---- READ and WRITE ------------------------------------------------------------------------------ */

static void mds_io_patience(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct mds_io *io = t->arg;
	struct pnfs_fh *fh = io->fh;
	pc_io_cb cb = io->cb;
	int err;

	if (patience_left(ctx, t, io->patience_ms, &io->progress_ms))
		return;
	err = pc_err(ctx, -EIO, "%s %s through the MDS: no answer for %u ms (the server's LUNs may be unreachable): %s",
		     io->write ? "write to" : "read of", pc_path_show(ctx, fh->path), io->patience_ms, strerror(EIO));
	if (io->write)
		pc_fh_set_sticky(fh, -EIO, "%s", pnfs_get_error(ctx)); /* logs it */
	else
		LOG_WARN("pnfs: %s", pnfs_get_error(ctx));
	abandon_call(fh, &io->abandoned);
	io->err = err;
	io->cb = NULL;
	pc_fh_io_end(fh);
	cb(ctx, err, io->arg);
}

/* The last reply of an abandoned I/O: nobody waits for it; free it (and a file closed meanwhile). */
static void mds_io_free_abandoned(struct mds_io *io)
{
	struct pnfs_fh *fh = io->fh;

	free(io->iov);
	free(io);
	abandoned_reply(fh);
}

static void mds_io_finish(struct mds_io *io)
{
	struct pnfs_fh *fh = io->fh;
	struct pnfs_context *ctx = fh->ctx;
	int status;

	pc_timer_cancel(ctx, &io->patience);
	if (io->abandoned) {
		mds_io_free_abandoned(io);
		return;
	}
	if (io->err < 0) {
		status = io->err;
	} else if (io->write) {
		status = (int)(io->total > INT32_MAX ? INT32_MAX : io->total);
		if (io->off + io->total > fh->size)
			fh->size = io->off + io->total;
	} else {
		uint64_t end = io->off + io->total;
		if (io->eof_at < end)
			end = io->eof_at > io->off ? io->eof_at : io->off;
		status = (int)(end - io->off);
	}
	pc_fh_io_end(fh);
	free(io->iov);
	{
		pc_io_cb cb = io->cb;
		void *arg = io->arg;
		free(io);
		cb(ctx, status, arg);
	}
}

/* A READ or WRITE reply came: it is counted, and its result returned for use; NULL when there is
 * none to use: the I/O was abandoned (its caller has EIO and may have reused the buffer: what came
 * is dropped), or the call failed (io->err says why). */
static nfs_resop4 *mds_io_reply(struct mds_io *io, struct pc_compound *c, nfs_opnum4 opnum)
{
	nfs_resop4 *r;
	int rc;

	io->inflight--;
	if (c->status >= 0 || c->nfs_status)
		mds_io_progress(io);
	if (io->abandoned)
		return NULL;
	if (io->err) {
		/* the first error stands, and its text: only a usable result goes on */
		r = pc_res_op(c, opnum);
		return c->status < 0 ? NULL : r;
	}
	r = pc_result(c, opnum, &rc);
	if (!r)
		io->err = rc;
	return r;
}

/* A READ or WRITE (c, now freed) moved less than asked: send the rest, [coff, coff + n). */
static void mds_io_rest(struct mds_io *io, struct pc_compound *c, uint64_t coff, size_t n)
{
	pc_compound_free(c);
	if (mds_io_send(io, coff, n) < 0)
		io->err = -ENOMEM;
	mds_io_pump(io);
}

static void read_done(struct pc_compound *c)
{
	struct mds_io *io = c->priv;
	uint64_t coff = c->u64[0], clen = c->u64[1];
	nfs_resop4 *r = mds_io_reply(io, c, OP_READ);

	if (r) {
		READ4resok *ok = &r->nfs_resop4_u.opread.READ4res_u.resok4;
		size_t got = ok->data.data_len;
		if (got > clen)
			got = clen;
		pc_iov_copy_in(io->iov, io->niov, coff - io->off, ok->data.data_val, got);
		io->fh->ctx->stats.mds_data_read += got;
		if (got < clen) {
			if (ok->eof || got == 0) {
				if (coff + got < io->eof_at)
					io->eof_at = coff + got;
			} else {
				/* A short read before EOF: ask for the rest. */
				io->next = coff + got - io->off < io->next ? coff + got - io->off : io->next;
				/* simplest correct course: read the remainder of this chunk again */
				mds_io_rest(io, c, coff + got, clen - got);
				return;
			}
		}
	}
	pc_compound_free(c);
	mds_io_pump(io);
}

static void write_done(struct pc_compound *c)
{
	struct mds_io *io = c->priv;
	struct pnfs_fh *fh = io->fh;
	uint64_t coff = c->u64[0], clen = c->u64[1];
	nfs_resop4 *r = mds_io_reply(io, c, OP_WRITE);

	if (r) {
		WRITE4resok *ok = &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
		if (ok->committed != FILE_SYNC4)
			fh->unstable = 1;
		if (fh->wverf_set && memcmp(fh->wverf, ok->writeverf, sizeof(verifier4)) != 0 && fh->unstable)
			fh->verf_mismatch = 1;
		memcpy(fh->wverf, ok->writeverf, sizeof(verifier4));
		fh->wverf_set = 1;
		fh->ctx->stats.mds_data_written += ok->count < clen ? ok->count : clen;
		if (ok->count == 0 && clen > 0) {
			if (io->err == 0)
				io->err = pc_err(c->ctx, -EIO, "%s: the server wrote 0 of %llu bytes at %llu", c->what,
						 (unsigned long long)clen, (unsigned long long)coff);
		} else if (ok->count < clen) {
			/* A short write: send the rest. */
			mds_io_rest(io, c, coff + ok->count, clen - ok->count);
			return;
		}
	}
	pc_compound_free(c);
	mds_io_pump(io);
}

/* The WRITE carries its own copy of the bytes: an I/O abandoned for want of an answer returns to
 * its caller while the compound may still be sent again after a reconnect. */
static int write_data(struct pc_compound *c, struct mds_io *io, size_t rel, size_t n, WRITE4args *w)
{
	w->data.data_val = pc_alloc(c, n);
	if (!w->data.data_val)
		return -ENOMEM;
	pc_iov_copy_out(io->iov, io->niov, rel, w->data.data_val, n);
	w->data.data_len = (u_int)n;
	return 0;
}

/* Send one READ or WRITE of the file's bytes [coff, coff + n) of the I/O; its reply goes to
 * read_done or write_done. 0 or -ENOMEM. */
static int mds_io_send(struct mds_io *io, uint64_t coff, size_t n)
{
	struct pnfs_fh *fh = io->fh;
	struct pnfs_context *ctx = fh->ctx;
	struct pc_compound *c = pc_compound_new(ctx, "%s %s", io->write ? "write" : "read", pc_path_show(ctx, fh->path));
	nfs_argop4 *op;

	if (!c)
		return -ENOMEM;
	pc_add_putfh(c, fh->fh, fh->fhlen);
	op = pc_add(c, io->write ? OP_WRITE : OP_READ);
	if (op && io->write) {
		WRITE4args *w = &op->nfs_argop4_u.opwrite;
		pc_bind_stateid(c, fh, &w->stateid);
		w->offset = coff;
		w->stable = (fh->flags & O_SYNC) ? FILE_SYNC4 : UNSTABLE4;
		if (write_data(c, io, coff - io->off, n, w) < 0)
			c->status = -ENOMEM;
	} else if (op) {
		READ4args *r = &op->nfs_argop4_u.opread;
		pc_bind_stateid(c, fh, &r->stateid);
		r->offset = coff;
		r->count = (count4)n;
	}
	c->u64[0] = coff;
	c->u64[1] = n;
	c->done = io->write ? write_done : read_done;
	c->priv = io;
	io->inflight++;
	pc_submit(c);
	return 0;
}

static void mds_io_pump(struct mds_io *io)
{
	struct pnfs_fh *fh = io->fh;
	struct pnfs_context *ctx = fh->ctx;

	while (io->err == 0 && io->inflight < MDS_IO_WINDOW && io->next < io->total) {
		size_t n = io->total - io->next < io->chunk ? io->total - io->next : io->chunk;
		uint64_t coff = io->off + io->next;

		if (!io->write && coff >= io->eof_at)
			break;
		if (mds_io_send(io, coff, n) < 0) {
			io->err = pc_err(ctx, -ENOMEM, "out of memory");
			break;
		}
		io->next += n;
	}
	if (io->inflight == 0 && (io->err < 0 || io->next >= io->total ||
				  (!io->write && io->off + io->next >= io->eof_at)))
		mds_io_finish(io);
}

static int mds_io_start(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, int write,
			pc_io_cb cb, void *arg)
{
	struct pnfs_context *ctx = fh->ctx;
	struct mds_io *io = calloc(1, sizeof(*io));

	if (!io)
		return pc_err(ctx, -ENOMEM, "out of memory");
	io->ctx = ctx;
	io->fh = fh;
	io->off = off;
	io->write = write;
	patience_init(ctx, &io->patience, &io->patience_ms, mds_io_patience, io);
	mds_io_progress(io);
	io->cb = cb;
	io->arg = arg;
	io->eof_at = UINT64_MAX;
	io->chunk = chunk_bytes(ctx, write);
	if (pc_iov_slice(iov, niov, 0, pc_iov_total(iov, niov), &io->iov, &io->niov) < 0) {
		free(io);
		return pc_err(ctx, -ENOMEM, "out of memory");
	}
	io->total = pc_iov_total(io->iov, io->niov);
	pc_fh_io_begin(fh);
	if (io->total)
		pc_timer_arm(ctx, &io->patience, io->patience_ms);
	if (io->total == 0) {
		/* Nothing to move: finish from the loop, not from inside the caller. */
		io->next = 0;
	}
	mds_io_pump(io);
	return 0;
}

int pc_mds_read(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg)
{
	return mds_io_start(fh, iov, niov, off, 0, cb, arg);
}

int pc_mds_write(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg)
{
	return mds_io_start(fh, iov, niov, off, 1, cb, arg);
}

/* ---- COMMIT -------------------------------------------------------------------------------------- */

struct commit_op {
	pc_io_cb cb;
	void *arg;
	struct pnfs_fh *fh;
	struct pc_timer patience; /* as an I/O's: EIO after the io timeout without an answer */
	unsigned patience_ms;
	int abandoned;
};

static void commit_patience(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct commit_op *co = t->arg;
	struct pnfs_fh *fh = co->fh;
	pc_io_cb cb = co->cb;
	int err;

	if (patience_left(ctx, t, co->patience_ms, NULL))
		return;
	err = pc_err(ctx, -EIO, "commit of %s through the MDS: no answer for %u ms (the server's LUNs may be unreachable): %s",
		     pc_path_show(ctx, fh->path), co->patience_ms, strerror(EIO));
	pc_fh_set_sticky(fh, -EIO, "%s", pnfs_get_error(ctx));
	abandon_call(fh, &co->abandoned);
	cb(ctx, err, co->arg);
}

static void commit_done(struct pc_compound *c)
{
	struct commit_op *co = c->priv;
	struct pnfs_fh *fh = co->fh;
	struct pnfs_context *ctx = c->ctx;
	nfs_resop4 *r = pc_res_op(c, OP_COMMIT);
	int rc = c->status;

	pc_timer_cancel(ctx, &co->patience);
	if (rc >= 0 || c->nfs_status)
		ctx->mds_io_rx_ms = pc_now_ms();
	if (co->abandoned) {
		pc_compound_free(c);
		free(co);
		abandoned_reply(fh);
		return;
	}
	if (rc < 0) {
		pc_compound_err(c);
	} else if (r) {
		COMMIT4resok *ok = &r->nfs_resop4_u.opcommit.COMMIT4res_u.resok4;
		if (fh->verf_mismatch || (fh->wverf_set && memcmp(fh->wverf, ok->writeverf, sizeof(verifier4)) != 0)) {
			pc_fh_set_sticky(fh, -EIO, "%s: the server restarted before COMMIT: some writes may be lost",
					 pc_path_show(ctx, fh->path));
			fh->verf_mismatch = 0;
		}
		fh->unstable = 0;
	}
	pc_compound_free(c);
	{
		pc_io_cb cb = co->cb;
		void *arg = co->arg;
		free(co);
		cb(ctx, rc, arg);
	}
}

int pc_mds_commit(struct pnfs_fh *fh, pc_io_cb cb, void *arg)
{
	struct pnfs_context *ctx = fh->ctx;
	struct commit_op *co = calloc(1, sizeof(*co));
	struct pc_compound *c = pc_compound_new(ctx, "commit %s", pc_path_show(ctx, fh->path));
	nfs_argop4 *op;

	if (!co || !c) {
		free(co);
		pc_compound_free(c);
		return pc_err(ctx, -ENOMEM, "out of memory");
	}
	co->cb = cb;
	co->arg = arg;
	co->fh = fh;
	patience_init(ctx, &co->patience, &co->patience_ms, commit_patience, co);
	pc_timer_arm(ctx, &co->patience, co->patience_ms);
	pc_add_putfh(c, fh->fh, fh->fhlen);
	op = pc_add(c, OP_COMMIT);
	if (op) {
		op->nfs_argop4_u.opcommit.offset = 0;
		op->nfs_argop4_u.opcommit.count = 0;
	}
	c->done = commit_done;
	c->priv = co;
	pc_submit(c);
	return 0;
}
