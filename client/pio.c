/* Direct I/O through layouts. A read or write is walked twice over the file's segments: first to see
 * that everything it needs is there (a layout covering it, devices resolved; otherwise it waits, or
 * goes to the MDS), then to issue one volume I/O per extent piece through the blkmap engine, which
 * keeps many commands in flight on every LUN. Extent states decide the bytes (RFC 5663 §2.3):
 * READ_WRITE_DATA and READ_DATA are read from storage, INVALID_DATA reads as zeros until we wrote it,
 * NONE_DATA is a hole; a write into INVALID_DATA covers whole layout blocks, the parts around the data
 * filled with zeros, with what we wrote there before (read back), or from the READ_DATA extent it
 * copies (copy-on-write). A SAN failure (RESERVATION CONFLICT: fenced) sends the I/O, and the file,
 * through the MDS, after the layout is committed and returned. */
#include "client/layout_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rdown(uint64_t x, uint64_t u)
{
	return x / u * u;
}

static uint64_t rup(uint64_t x, uint64_t u)
{
	return x % u ? (x / u + 1) * u : x;
}

static uint64_t umin(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static int layouts_usable(struct pnfs_fh *fh)
{
	struct pnfs_context *ctx = fh->ctx;
	return ctx->direct && !ctx->opts.mds_io && !fh->mds_only && ctx->layout_type != 0;
}

/* ---- finishing ----------------------------------------------------------------------------------- */

static void io_finish(struct pc_io *io, int status)
{
	struct pnfs_fh *fh = io->fh;
	struct pnfs_context *ctx = fh->ctx;
	pc_io_cb cb = io->cb;
	void *arg = io->arg;

	if (io->lock) {
		pc_lock_release(io->lo, io->lock);
		io->lock = NULL;
	}
	free(io->iov);
	free(io);
	pc_fh_io_end(fh);
	cb(ctx, status, arg);
}

void pc_pio_fail(struct pc_io *io, int status)
{
	io_finish(io, status);
}

static void mds_done(struct pnfs_context *ctx, int status, void *arg)
{
	(void)ctx;
	io_finish(arg, status);
}

static void to_mds_now(struct pc_io *io)
{
	int rc = io->write ? pc_mds_write(io->fh, io->iov, io->niov, io->off, mds_done, io)
			   : pc_mds_read(io->fh, io->iov, io->niov, io->off, mds_done, io);
	if (rc < 0)
		io_finish(io, rc);
}

static void to_mds_after_commit(struct pnfs_context *ctx, int status, void *arg)
{
	(void)ctx;
	(void)status; /* a failed commit is reported by fsync/close (sticky) */
	to_mds_now(arg);
}

/* Through the MDS. A write over bytes written through the layout and not committed commits them
 * first, so the two paths never disagree about whose bytes a block holds. */
static void to_mds(struct pc_io *io)
{
	struct pc_layout *lo = io->lo;

	if (io->lock) {
		pc_lock_release(lo, io->lock);
		io->lock = NULL;
	}
	if (io->write && lo && pc_dirty_state(lo, io->off, io->total ? io->total : 1) != 0 &&
	    pc_layout_commit(io->fh, to_mds_after_commit, io) == 0)
		return;
	to_mds_now(io);
}

/* ---- file size for reads -------------------------------------------------------------------------- */

static void size_done(struct pc_compound *c)
{
	struct pc_io *io = c->priv;
	struct pnfs_fh *fh = io->fh;
	nfs_resop4 *ga = pc_res_op(c, OP_GETATTR);
	struct proto_fattr fa;
	struct pnfs_stat st;

	io->size_checked = 1;
	if (c->status < 0 || !ga ||
	    pc_attr_decode(&ga->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, &fa, &st) < 0 ||
	    !proto_attrmask_isset(&fa.mask, FATTR4_SIZE)) {
		pc_compound_free(c);
		to_mds(io);
		return;
	}
	fh->size = umax(st.size, pc_layout_dirty_end(fh));
	pc_compound_free(c);
	pc_pio_step(io);
}

/* A read past the size we know: another client may have written since; ask. */
static void refresh_size(struct pc_io *io)
{
	struct pnfs_fh *fh = io->fh;
	struct pc_compound *c = pc_compound_new(fh->ctx, "getattr %s", pc_path_show(fh->ctx, fh->path));
	struct proto_attrmask m = { { 0 } };

	if (!c) {
		to_mds(io);
		return;
	}
	proto_attrmask_set(&m, FATTR4_SIZE);
	pc_add_putfh(c, fh->fh, fh->fhlen);
	pc_add_getattr(c, &m);
	c->done = size_done;
	c->priv = io;
	pc_submit(c);
}

/* ---- pieces ----------------------------------------------------------------------------------------- */

struct edge {
	uint64_t foff, len;         /* file range of one edge block */
	char *buf;
};

struct piece {
	struct pc_io *io;
	struct pc_seg *seg;
	struct pc_device *dev;
	unsigned gen;               /* dev's key_gen when issued */
	unsigned epoch;             /* the layout's epoch when issued */
	uint64_t foff, len;         /* the caller's bytes */
	uint64_t wfoff, wlen;       /* the window written or read (block aligned) */
	uint64_t wsoff;             /* storage offset of wfoff */
	int invalid;                /* writing into INVALID_DATA */
	struct edge e[2];
	unsigned nedge;
	unsigned fills;             /* edge reads in flight */
	int err;
	const char *errmsg;
	char *head, *tail;          /* read bounces */
	struct iovec *iov;
};

static void piece_free(struct piece *p)
{
	for (unsigned i = 0; i < p->nedge; i++)
		free(p->e[i].buf);
	free(p->head);
	free(p->tail);
	free(p->iov);
	free(p);
}

/* A piece of io through extent e of seg, for the file's bytes [foff, foff + len); NULL when out of
 * memory. Caller frees with piece_free. */
static struct piece *piece_new(struct pc_io *io, struct pc_seg *seg, const struct pc_ext *e, uint64_t foff,
			       uint64_t len)
{
	struct piece *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->io = io;
	p->seg = seg;
	p->dev = e->dev;
	p->gen = e->dev->key_gen;
	p->foff = foff;
	p->len = len;
	return p;
}

static void io_maybe_complete(struct pc_io *io);

static void piece_end(struct piece *p, int status, const struct blkmap_io_result *res)
{
	struct pc_io *io = p->io;
	struct pc_layout *lo = io->lo;
	struct pnfs_context *ctx = io->fh->ctx;

	if (status < 0 && io->err == 0) {
		io->err = status;
		io->errdev = p->dev;
		io->errgen = p->gen;
		snprintf(io->errmsg, sizeof(io->errmsg), "%s",
			 res && res->message ? res->message : strerror(-status));
	}
	if (status >= 0) {
		if (io->write && p->epoch != lo->epoch && !lo->reclaim) {
			/* Written through a layout the server lost with our client ID, and too late for
			 * its reclaim: no commit may name it (under a new layout the range may map to
			 * other blocks). The I/O is done again. */
			io->stale_write = 1;
		} else if (io->write) {
			ctx->stats.direct_bytes_written += p->len;
			if (p->invalid)
				pc_dirty_add(lo, p->wfoff, p->wlen, p->wsoff, p->dev, 1);
			else
				pc_layout_note_overwrite(lo, p->dev);
			lo->written = 1;
			if (p->foff + p->len > lo->write_end)
				lo->write_end = p->foff + p->len;
		} else {
			ctx->stats.direct_bytes_read += p->len;
		}
	}
	p->seg->inflight--;
	piece_free(p);
	io->pending--;
	pc_layout_io_done(lo);
	io_maybe_complete(io);
}

static void piece_cb(struct blkmap_ctx *bctx, int status, const struct blkmap_io_result *res, void *priv)
{
	(void)bctx;
	piece_end(priv, status, res);
}

/* An iovec array: [pre] + the caller's bytes [foff, foff+len) + [post]. */
static struct iovec *build_iov(struct pc_io *io, char *pre, size_t prelen, uint64_t foff, uint64_t len, char *post,
			       size_t postlen, int *n)
{
	struct iovec *user = NULL, *v;
	int nu = 0, k = 0;

	if (pc_iov_slice(io->iov, io->niov, foff - io->off, len, &user, &nu) < 0)
		return NULL;
	v = calloc((size_t)nu + 2, sizeof(*v));
	if (!v) {
		free(user);
		return NULL;
	}
	if (prelen)
		v[k++] = (struct iovec){ pre, prelen };
	for (int i = 0; i < nu; i++)
		v[k++] = user[i];
	if (postlen)
		v[k++] = (struct iovec){ post, postlen };
	free(user);
	*n = k;
	return v;
}

static uint64_t soff_at(const struct pc_ext *e, uint64_t foff)
{
	return e->soff + (foff - e->foff);
}

/* ---- extent lookups ---------------------------------------------------------------------------- */

/* The extent holding foff that data goes to or comes from (not a copy-on-write source). */
static struct pc_ext *target_at(struct pc_seg *s, uint64_t foff)
{
	for (size_t i = 0; i < s->n; i++) {
		struct pc_ext *e = &s->ext[i];
		if (foff >= e->foff && foff - e->foff < e->len && e->state != PNFS_BLOCK_READ_DATA)
			return e;
	}
	return NULL;
}

static struct pc_ext *source_at(struct pc_seg *s, uint64_t foff)
{
	for (size_t i = 0; i < s->n; i++) {
		struct pc_ext *e = &s->ext[i];
		if (foff >= e->foff && foff - e->foff < e->len && e->state == PNFS_BLOCK_READ_DATA)
			return e;
	}
	return NULL;
}

/* The first extent start after foff (a piece must not run into another extent). */
static uint64_t next_start(struct pc_seg *s, uint64_t foff, uint64_t limit)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ext[i].foff > foff && s->ext[i].foff < limit)
			limit = s->ext[i].foff;
	return limit;
}

static uint64_t ext_end(const struct pc_ext *e)
{
	return e->foff + e->len;
}

/* ---- writes ------------------------------------------------------------------------------------- */

static void write_go(struct piece *p);

static void fill_cb(struct blkmap_ctx *bctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct piece *p = priv;
	(void)bctx;

	if (status < 0 && p->err == 0) {
		p->err = status;
		if (p->io->err == 0) {
			p->io->err = status;
			p->io->errdev = p->dev;
			p->io->errgen = p->gen;
			snprintf(p->io->errmsg, sizeof(p->io->errmsg), "%s",
				 res && res->message ? res->message : strerror(-status));
		}
	}
	if (--p->fills == 0) {
		if (p->err) {
			piece_end(p, p->err, NULL);
			return;
		}
		write_go(p);
	}
}

static void write_go(struct piece *p)
{
	struct pc_io *io = p->io;
	struct edge *h = NULL, *t = NULL;
	char *pre = NULL, *post = NULL;
	size_t prelen = 0, postlen = 0;
	int n = 0, rc;

	for (unsigned i = 0; i < p->nedge; i++) {
		if (p->e[i].foff <= p->foff && p->foff < p->e[i].foff + p->e[i].len && p->foff > p->wfoff)
			h = &p->e[i];
		if (p->e[i].foff < p->foff + p->len && p->foff + p->len < p->e[i].foff + p->e[i].len)
			t = &p->e[i];
	}
	if (h) {
		pre = h->buf;
		prelen = p->foff - h->foff;
	}
	if (t) {
		post = t->buf + (p->foff + p->len - t->foff);
		postlen = t->foff + t->len - (p->foff + p->len);
	}
	p->iov = build_iov(io, pre, prelen, p->foff, p->len, post, postlen, &n);
	if (!p->iov) {
		piece_end(p, -ENOMEM, NULL);
		return;
	}
	rc = blkmap_vol_writev_async(p->dev->vol, p->wsoff, p->iov, n, piece_cb, p);
	if (rc < 0)
		piece_end(p, rc, NULL);
}

/* Read [foff, foff+len) of storage extent e into buf (aligned by construction). */
static int fill_read(struct piece *p, const struct pc_ext *e, uint64_t foff, uint64_t len, char *buf)
{
	struct iovec v = { buf, len };
	int rc = blkmap_vol_readv_async(e->dev->vol, soff_at(e, foff), &v, 1, fill_cb, p);
	if (rc == 0)
		p->fills++;
	return rc;
}

/* Fill one edge block of a write into INVALID_DATA: ours from before (dirty) is read back, a
 * copy-on-write source gives the old data, everything else is zero. */
static int fill_edge(struct piece *p, struct pc_seg *seg, const struct pc_ext *t, struct edge *ed)
{
	struct pc_layout *lo = p->io->lo;
	struct pnfs_context *ctx = p->io->fh->ctx;
	uint64_t x = ed->foff, end = ed->foff + ed->len;
	int rc;

	if (!p->invalid)
		return fill_read(p, t, ed->foff, ed->len, ed->buf); /* read-modify-write of a block */
	while (x < end) {
		uint64_t y = pc_dirty_boundary(lo, x, end);
		int dirty = pc_dirty_state(lo, x, y - x) == 1;
		struct pc_ext *src = dirty ? NULL : source_at(seg, x);

		if (src)
			y = umin(y, ext_end(src));
		if (dirty)
			rc = fill_read(p, t, x, y - x, ed->buf + (x - ed->foff));
		else if (src)
			rc = fill_read(p, src, x, y - x, ed->buf + (x - ed->foff));
		else {
			memset(ed->buf + (x - ed->foff), 0, y - x);
			ctx->stats.zero_filled_bytes += y - x;
			rc = 0;
		}
		if (rc < 0)
			return rc;
		x = y;
	}
	return 0;
}

static int issue_write(struct pc_io *io, struct pc_seg *seg, struct pc_ext *t, uint64_t foff, uint64_t len)
{
	struct pc_layout *lo = io->lo;
	uint64_t bs = t->dev->block_bytes ? t->dev->block_bytes : 512;
	uint64_t unit = t->state == PNFS_BLOCK_INVALID_DATA ? umax(lo->blksize ? lo->blksize : 4096, bs) : bs;
	uint64_t wa = umax(rdown(foff, unit), t->foff), wb = umin(rup(foff + len, unit), ext_end(t));
	struct piece *p = piece_new(io, seg, t, foff, len);
	int rc = 0;

	if (!p)
		return -ENOMEM;
	p->epoch = lo->epoch;
	p->wfoff = wa;
	p->wlen = wb - wa;
	p->wsoff = soff_at(t, wa);
	p->invalid = t->state == PNFS_BLOCK_INVALID_DATA;
	/* Edge blocks: the block holding the first byte and the one holding the last, when the data does
	 * not fill them (one block when both ends fall in it). */
	if (foff > wa) {
		uint64_t b0 = wa, b1 = umin(rdown(foff, unit) + unit, wb);
		p->e[p->nedge++] = (struct edge){ b0, b1 - b0, NULL };
	}
	if (foff + len < wb) {
		uint64_t b0 = umax(rdown(foff + len, unit), wa), b1 = wb;
		if (!(p->nedge && p->e[0].foff == b0))
			p->e[p->nedge++] = (struct edge){ b0, b1 - b0, NULL };
	}
	for (unsigned i = 0; i < p->nedge; i++) {
		p->e[i].buf = malloc(p->e[i].len);
		if (!p->e[i].buf) {
			piece_free(p);
			return -ENOMEM;
		}
	}
	seg->inflight++;
	io->pending++;
	p->fills = 1; /* held until every fill is issued */
	for (unsigned i = 0; i < p->nedge && rc == 0; i++)
		rc = fill_edge(p, seg, t, &p->e[i]);
	if (rc < 0 && p->err == 0)
		p->err = rc;
	fill_cb(NULL, 0, NULL, p); /* drop the hold: goes on when the fills are in */
	return 0;
}

/* ---- reads ---------------------------------------------------------------------------------------- */

static int issue_read(struct pc_io *io, struct pc_seg *seg, const struct pc_ext *e, uint64_t foff, uint64_t len)
{
	struct pnfs_context *ctx = io->fh->ctx;
	uint64_t bs, s, ws, we;
	struct piece *p;
	int n = 0, rc;

	if (!e) {
		pc_iov_zero(io->iov, io->niov, foff - io->off, len);
		ctx->stats.zero_filled_bytes += len;
		return 0;
	}
	bs = e->dev->block_bytes ? e->dev->block_bytes : 512;
	s = soff_at(e, foff);
	ws = rdown(s, bs);
	we = rup(s + len, bs);
	p = piece_new(io, seg, e, foff, len);
	if (!p)
		return -ENOMEM;
	if (s > ws && !(p->head = malloc(s - ws))) {
		piece_free(p);
		return -ENOMEM;
	}
	if (we > s + len && !(p->tail = malloc(we - s - len))) {
		piece_free(p);
		return -ENOMEM;
	}
	p->iov = build_iov(io, p->head, s - ws, foff, len, p->tail, we - s - len, &n);
	if (!p->iov) {
		piece_free(p);
		return -ENOMEM;
	}
	seg->inflight++;
	io->pending++;
	rc = blkmap_vol_readv_async(e->dev->vol, ws, p->iov, n, piece_cb, p);
	if (rc < 0) {
		/* Not started: account it as a failed piece so the I/O falls back. */
		piece_end(p, rc, NULL);
	}
	return 0;
}

/* ---- walking the segments ---------------------------------------------------------------------- */

static void devices_settled(struct pnfs_context *ctx, void *arg)
{
	(void)arg;
	for (struct pc_layout *lo = ctx->layouts; lo; lo = lo->next)
		pc_layout_kick(lo);
}

/* 0: ready (or, with issue, issued); 1: waiting (queued on the layout); -1: must go to the MDS. */
static int need_device(struct pc_io *io, struct pc_device *d)
{
	int r = pc_device_ensure(d, devices_settled, NULL);

	if (r > 0)
		return 0;
	if (r == 0) {
		pc_layout_wait(io->lo, io);
		return 1;
	}
	pc_fh_to_mds(io->fh, "%s", d->why[0] ? d->why : "the layout's device cannot be used");
	return -1;
}

static int walk(struct pc_io *io, int issue)
{
	struct pc_layout *lo = io->lo;
	struct pnfs_fh *fh = io->fh;
	uint64_t pos = io->off, end = io->off + io->len, bsz = lo->blksize ? lo->blksize : 4096;

	while (pos < end) {
		int recalled, rc;
		struct pc_seg *seg = pc_layout_find(lo, pos, io->write, &recalled);
		uint64_t segend;

		if (!seg) {
			if (issue)
				return -1;
			if (recalled || lo->returning) {
				pc_layout_wait(lo, io); /* the recall ends with a return: then ask again */
				return 1;
			}
			{
				uint64_t a = rdown(pos, bsz);
				if (io->write) {
					uint64_t need = rup(end, bsz) - a;
					pc_layout_get(lo, fh, a, umax(need, PC_LO_READ_AHEAD), need, LAYOUTIOMODE4_RW);
				} else {
					/* To the end of the file, not NFS4_UINT64_MAX: Linux knfsd over XFS
					 * (6.1) fails a READ LAYOUTGET of that length with NFS4ERR_IO (an
					 * overflow in XFS's block mapping); Linux's own client also asks
					 * for no more than the file's size. */
					uint64_t eof = rup(fh->size, bsz);
					pc_layout_get(lo, fh, a, eof > a ? eof - a : bsz, 0, LAYOUTIOMODE4_READ);
				}
			}
			lo->ctx->stats.layout_waits++;
			pc_layout_wait(lo, io);
			return 1;
		}
		segend = umin(seg->end, end);
		while (pos < segend) {
			struct pc_ext *t = target_at(seg, pos), *src = source_at(seg, pos);
			uint64_t next = segend;

			if (io->write) {
				if (!t || t->state == PNFS_BLOCK_NONE_DATA) {
					pc_fh_to_mds(fh, "the RW layout has no writable extent at %llu",
						     (unsigned long long)pos);
					return -1;
				}
				next = umin(next, ext_end(t));
				if ((rc = need_device(io, t->dev)) != 0)
					return rc;
				if (t->state == PNFS_BLOCK_INVALID_DATA) {
					/* edge blocks may copy from any source overlapping the piece */
					for (size_t i = 0; i < seg->n; i++) {
						struct pc_ext *e = &seg->ext[i];
						if (e->state == PNFS_BLOCK_READ_DATA && e->foff < next + bsz &&
						    ext_end(e) + bsz > pos && (rc = need_device(io, e->dev)) != 0)
							return rc;
					}
				}
				if (issue && (rc = issue_write(io, seg, t, pos, next - pos)) < 0) {
					if (io->err == 0)
						io->err = rc;
					return 0;
				}
			} else {
				const struct pc_ext *from = NULL;
				next = next_start(seg, pos, next);
				if (t)
					next = umin(next, ext_end(t));
				if (src)
					next = umin(next, ext_end(src));
				if (!t && !src) {
					pc_fh_to_mds(fh, "the layout does not cover offset %llu", (unsigned long long)pos);
					return -1;
				}
				if (t && t->state == PNFS_BLOCK_INVALID_DATA) {
					if (pc_dirty_state(lo, pos, next - pos) < 0)
						next = pc_dirty_boundary(lo, pos, next);
					from = pc_dirty_state(lo, pos, next - pos) == 1 ? t : src;
				} else if (t && t->state == PNFS_BLOCK_NONE_DATA) {
					from = NULL;
				} else {
					from = t ? t : src;
				}
				if (from && (rc = need_device(io, from->dev)) != 0)
					return rc;
				if (issue && (rc = issue_read(io, seg, from, pos, next - pos)) < 0) {
					if (io->err == 0)
						io->err = rc;
					return 0;
				}
			}
			pos = next;
		}
	}
	return 0;
}

/* ---- writing ahead ----------------------------------------------------------------------------- */

/* A sequential writer (this write moves the furthest written end on, from no further than a window
 * before it: several writes in flight complete and are stepped in any order) that is past the middle
 * of its RW segment, with nothing granted after it, asks for the next window now, while it still
 * writes in this one: otherwise every window's first write stops at the edge and waits for a
 * LAYOUTGET and the MDS's allocation and commit (a 1 GiB copy stopped sixteen times). What it is
 * granted and does not write is INVALID_DATA, dropped when the layout is returned. Files smaller than
 * half a window never ask ahead. */
static void write_ahead(struct pc_io *io)
{
	struct pc_layout *lo = io->lo;
	uint64_t end = io->off + io->len, bsz = lo->blksize ? lo->blksize : 4096;
	int sequential = end > lo->write_front && io->off + PC_LO_READ_AHEAD >= lo->write_front, recalled;
	struct pc_seg *s;

	if (end > lo->write_front)
		lo->write_front = end;
	if (!sequential || lo->getting || lo->returning || lo->recalls)
		return;
	s = pc_layout_find(lo, end - 1, 1, &recalled);
	if (!s || s->end == UINT64_MAX || end - s->off < (s->end - s->off) / PC_LO_WRITE_AHEAD_AT)
		return;
	if (pc_layout_find(lo, s->end, 1, &recalled) || recalled)
		return;
	pc_layout_get(lo, io->fh, s->end, PC_LO_READ_AHEAD, bsz, LAYOUTIOMODE4_RW);
	if (lo->getting)
		lo->ctx->stats.layoutgets_ahead++;
}

/* ---- the step ---------------------------------------------------------------------------------- */

static void fence_check_done(struct pc_compound *c)
{
	struct pc_io *io = c->priv;

	/* Not answered (the connection timed out): ask again, on the recovered session. */
	if (c->status == 0)
		io->fence_answered = 1;
	pc_compound_free(c);
	io_maybe_complete(io);
}

static void io_maybe_complete(struct pc_io *io)
{
	struct pnfs_fh *fh;
	struct pc_layout *lo;
	const char *why;
	char buf[600];

	if (io->pending || io->waiting)
		return;
	fh = io->fh;
	lo = io->lo;
	if (io->err == 0 && !io->stale_write) {
		if (io->write && io->off + io->len > fh->size)
			fh->size = io->off + io->len;
		if (io->write)
			pc_layout_maybe_commit(lo, fh);
		io_finish(io, (int)(io->len > INT32_MAX ? INT32_MAX : io->len));
		return;
	}
	if (fh->ctx->destroying) {
		/* cancelled by pnfs_context_destroy: there is no MDS path left to redo it on */
		io_finish(io, -ECANCELED);
		return;
	}
	/* Issued under a client ID the server has since forgotten (it restarted and removed that ID's
	 * key), or landed too late for the reclaim: do it again, through a new layout (the device
	 * registered again under the new ID) or through the MDS. */
	if (((io->err == 0 && io->stale_write) ||
	     (io->errdev && io->err == -EBADE && io->errgen != io->errdev->key_gen)) && io->redone < 2) {
		LOG_INFO("pnfs: %s: %s under our earlier client ID; %s offset %llu+%llu again",
			 pc_path_show(fh->ctx, fh->path), io->err ? "RESERVATION CONFLICT" : "a write landed",
			 io->write ? "writing" : "reading", (unsigned long long)io->off, (unsigned long long)io->total);
		io->redone++;
		io->err = 0;
		io->errdev = NULL;
		io->stale_write = 0;
		io->fence_checks = 0;
		io->fence_answered = 0;
		pc_pio_step(io);
		return;
	}
	if (io->err == 0 && io->stale_write) {
		io->stale_write = 0;
		to_mds(io);
		return;
	}
	/* RESERVATION CONFLICT: the server fenced us, or it restarted and removed the key of a client ID
	 * it no longer knows. Ask it first (a SEQUENCE): after a restart the answer comes once the session
	 * is recovered under a new client ID (and what the layout wrote is reclaimed), and the device is
	 * registered again rather than given up. */
	if (io->errdev && io->err == -EBADE && io->errgen == io->errdev->key_gen && !io->fence_answered &&
	    io->fence_checks < PC_FENCE_CHECKS) {
		struct pc_compound *c = pc_compound_new(fh->ctx, "SEQUENCE (after RESERVATION CONFLICT)");
		if (c) {
			if (io->fence_checks++ == 0)
				LOG_INFO("pnfs: %s: RESERVATION CONFLICT (%s); asking the server whether it restarted",
					 pc_path_show(fh->ctx, fh->path), io->errmsg);
			c->done = fence_check_done;
			c->priv = io;
			pc_submit(c);
			return;
		}
	}
	/* The SAN path failed: stop using it for this file, return the layout, redo through the MDS. */
	if (io->errdev) {
		if (io->err == -EBADE) {
			snprintf(buf, sizeof(buf), "fenced by the server (RESERVATION CONFLICT): %s", io->errmsg);
			pc_device_fail(io->errdev, PC_DEV_FENCED, "%s", buf);
		} else {
			snprintf(buf, sizeof(buf), "SAN I/O failed: %s", io->errmsg);
			pc_device_fail(io->errdev, PC_DEV_FAILED, "%s", buf);
		}
		why = buf;
	} else {
		snprintf(buf, sizeof(buf), "direct I/O could not start: %s", strerror(-io->err));
		why = buf;
	}
	pc_layout_abandon(lo, fh, why);
	io->err = 0;
	to_mds(io);
}

void pc_pio_step(struct pc_io *io)
{
	struct pnfs_fh *fh = io->fh;
	struct pc_layout *lo = io->lo;
	uint64_t bsz = lo->blksize ? lo->blksize : 4096;
	int rc;

	if (io->force_mds || !layouts_usable(fh)) {
		to_mds(io);
		return;
	}
	if (!io->write) {
		if (io->off + io->total > fh->size && !io->size_checked) {
			refresh_size(io);
			return;
		}
		io->len = io->off >= fh->size ? 0 : umin(io->total, fh->size - io->off);
	} else {
		io->len = io->total;
	}
	if (io->len == 0) {
		io_finish(io, 0);
		return;
	}
	if (io->write && !io->lock) {
		rc = pc_lock_try(lo, rdown(io->off, bsz), rup(io->off + io->len, bsz), &io->lock);
		if (rc == 0) {
			pc_layout_wait(lo, io); /* an overlapping write is in flight */
			return;
		}
		if (rc < 0) {
			to_mds(io);
			return;
		}
	}
	rc = walk(io, 0);
	if (rc > 0)
		return;
	if (rc < 0) {
		to_mds(io);
		return;
	}
	walk(io, 1);
	if (io->write && io->err == 0)
		write_ahead(io);
	io_maybe_complete(io);
}

static int pio_start(struct pnfs_fh *fh, int write, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb,
		     void *arg)
{
	struct pc_io *io;

	if (!layouts_usable(fh))
		return write ? pc_mds_write(fh, iov, niov, off, cb, arg) : pc_mds_read(fh, iov, niov, off, cb, arg);
	io = calloc(1, sizeof(*io));
	if (!io)
		return pc_err(fh->ctx, -ENOMEM, "out of memory");
	io->lo = pc_layout_attach(fh);
	if (!io->lo || pc_iov_slice(iov, niov, 0, pc_iov_total(iov, niov), &io->iov, &io->niov) < 0) {
		free(io);
		return pc_err(fh->ctx, -ENOMEM, "out of memory");
	}
	io->fh = fh;
	io->write = write;
	io->off = off;
	io->total = pc_iov_total(io->iov, io->niov);
	io->cb = cb;
	io->arg = arg;
	pc_fh_io_begin(fh);
	pc_pio_step(io);
	return 0;
}

int pc_io_read(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg)
{
	return pio_start(fh, 0, iov, niov, off, cb, arg);
}

int pc_io_write(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg)
{
	return pio_start(fh, 1, iov, niov, off, cb, arg);
}
