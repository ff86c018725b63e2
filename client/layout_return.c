/* LAYOUTRETURN (close, truncate, abandon) and CB_LAYOUTRECALL / CB_RECALL_ANY: the recalled range
 * stops taking new I/O, what is in flight drains, written extents are committed, the range is
 * returned, and I/O waiting on it asks for a new layout. */
#include "client/layout_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- LAYOUTRETURN ------------------------------------------------------------------------------- */

struct return_run {
	struct pc_layout *lo;
	uint64_t off, len;
	layoutiomode4 iomode;
	pc_io_cb cb;
	void *arg;
};

static void return_done(struct pc_compound *c)
{
	struct return_run *rr = c->priv;
	struct pc_layout *lo = rr->lo;
	struct pnfs_context *ctx = lo->ctx;
	nfs_resop4 *r = pc_res_op(c, OP_LAYOUTRETURN);
	int status = 0;

	lo->returning = 0;
	if (c->status == 0 && r) {
		ctx->stats.layoutreturns++;
		if (r->nfs_resop4_u.oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid.lrs_present)
			pc_layout_sid_take(lo, &r->nfs_resop4_u.oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid
					       .layoutreturn_stateid_u.lrs_stateid);
		else
			lo->have_sid = 0;
		pc_segs_cut(lo, rr->off, end_of(rr->off, rr->len), rr->iomode);
		if (!lo->have_sid)
			pc_layout_sid_forget(lo);
	} else if (c->nfs_status == NFS4ERR_NOMATCHING_LAYOUT || c->nfs_status == NFS4ERR_BAD_STATEID ||
		   c->nfs_status == NFS4ERR_OLD_STATEID || c->nfs_status == NFS4ERR_STALE ||
		   c->nfs_status == NFS4ERR_EXPIRED) {
		/* Nothing of ours left there. */
		pc_segs_cut(lo, rr->off, end_of(rr->off, rr->len), rr->iomode);
		if (c->nfs_status != NFS4ERR_NOMATCHING_LAYOUT || !pc_segs_live(lo))
			pc_layout_sid_forget(lo);
	} else {
		status = pc_compound_err(c);
		/* STALE_STATEID: a layout of the server's earlier boot, gone with it; nothing to tell. */
		if (c->nfs_status == NFS4ERR_STALE_STATEID)
			LOG_DEBUG("pnfs: %s", ctx->err);
		else
			LOG_WARN("pnfs: %s", ctx->err);
		/* Do not use it again either way. */
		pc_segs_cut(lo, rr->off, end_of(rr->off, rr->len), rr->iomode);
	}
	pc_segs_reap(lo);
	pc_compound_free(c);
	if (rr->cb)
		rr->cb(ctx, status, rr->arg);
	free(rr);
	if (lo->recalls)
		pc_timer_arm(ctx, &lo->recall_timer, 0);
	pc_layout_kick(lo);
	pc_layout_maybe_free(lo);
}

static int return_send(struct pc_layout *lo, uint64_t off, uint64_t len, layoutiomode4 iomode, pc_io_cb cb,
		       void *arg)
{
	struct pnfs_context *ctx = lo->ctx;
	struct return_run *rr = calloc(1, sizeof(*rr));
	struct pc_compound *c = pc_compound_new(ctx, "LAYOUTRETURN");
	nfs_argop4 *op;

	if (!rr || !c) {
		free(rr);
		pc_compound_free(c);
		return -ENOMEM;
	}
	rr->lo = lo;
	rr->off = off;
	rr->len = len;
	rr->iomode = iomode;
	rr->cb = cb;
	rr->arg = arg;
	lo->returning = 1;
	/* What goes back takes no new I/O from now on: that waits for the return, then asks again. */
	pc_segs_mark(lo, off, end_of(off, len), iomode);
	pc_add_putfh(c, lo->fh, lo->fhlen);
	op = pc_add(c, OP_LAYOUTRETURN);
	if (op) {
		LAYOUTRETURN4args *a = &op->nfs_argop4_u.oplayoutreturn;
		a->lora_reclaim = FALSE;
		a->lora_layout_type = lo->type;
		a->lora_iomode = iomode;
		a->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
		a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_offset = off;
		a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_length = len;
		a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_stateid = lo->sid;
	}
	c->cachethis = 1;
	c->done = return_done;
	c->priv = rr;
	pc_submit(c);
	return 0;
}

int pc_layout_return_all(struct pnfs_fh *fh, int commit, pc_io_cb cb, void *arg)
{
	struct pc_layout *lo = fh->lo;

	(void)commit; /* close commits first (fsync) */
	if (!lo || lo->refs > 1 || !lo->have_sid || lo->returning)
		return -ENOENT;
	return return_send(lo, 0, UINT64_MAX, LAYOUTIOMODE4_ANY, cb, arg);
}

void pc_layout_forget(struct pnfs_fh *fh)
{
	struct pc_layout *lo = fh->lo;

	if (!lo)
		return;
	if (lo->ndirty || lo->ncommitting)
		pc_fh_set_sticky(fh, -EIO, "%s: the server lost our layout with our state: writes through it that "
				 "were not committed may be lost", pc_path_show(fh->ctx, fh->path));
	pc_dirty_drop(lo);
	lo->epoch++;
	pc_layout_sid_forget(lo);
	pc_layout_kick(lo);
}

void pc_layout_truncated(struct pnfs_fh *fh, uint64_t size)
{
	struct pc_layout *lo = fh->lo;
	uint64_t from;

	if (!lo)
		return;
	from = (size + lo_blksize(lo) - 1) / lo_blksize(lo) * lo_blksize(lo);
	/* Blocks past the new end are freed by the server: never write there again. */
	for (size_t i = 0; i < lo->ndirty; i++)
		if (lo->dirty[i].foff + lo->dirty[i].len > from) {
			if (lo->dirty[i].foff >= from) {
				lo->dirty[i].len = 0;
			} else {
				lo->dirty[i].len = from - lo->dirty[i].foff;
			}
		}
	{
		size_t k = 0;
		for (size_t i = 0; i < lo->ndirty; i++)
			if (lo->dirty[i].len)
				lo->dirty[k++] = lo->dirty[i];
		lo->ndirty = k;
	}
	if (lo->write_end > size)
		lo->write_end = size;
	if (lo->have_sid && !lo->returning) {
		int any = 0;
		for (struct pc_seg *s = lo->segs; s; s = s->next)
			if (!s->dead && s->end > from)
				any = 1;
		if (any && return_send(lo, from, UINT64_MAX - from, LAYOUTIOMODE4_ANY, NULL, NULL) == 0)
			return;
	}
	pc_segs_cut(lo, from, UINT64_MAX, LAYOUTIOMODE4_ANY);
	pc_segs_reap(lo);
}

/* ---- recalls ------------------------------------------------------------------------------------- */

static int segs_in_flight(struct pc_layout *lo)
{
	for (struct pc_seg *s = lo->segs; s; s = s->next)
		if (s->recalled && s->inflight)
			return 1;
	return 0;
}

static void recall_commit_done(struct pnfs_context *ctx, int status, void *arg)
{
	struct pc_layout *lo = arg;
	(void)status;
	pc_timer_arm(ctx, &lo->recall_timer, 0);
}

static void recall_return_done(struct pnfs_context *ctx, int status, void *arg)
{
	struct pc_layout *lo = arg;
	(void)status;
	if (lo->recalls)
		pc_timer_arm(ctx, &lo->recall_timer, 0);
}

void pc_layout_recall_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct pc_layout *lo = t->arg;
	struct pc_recall *r = lo->recalls;
	(void)ctx;

	if (!r || lo->returning || lo->committing)
		return; /* rearmed when those end */
	if (segs_in_flight(lo))
		return; /* rearmed by pc_layout_io_done */
	if (lo->ndirty || lo->written) {
		/* Written extents are committed before they go back: the data stays the file's. */
		if (pc_layout_commit_start(lo, pc_layout_any_fh(lo), recall_commit_done, lo) == 0)
			return;
	}
	lo->recalls = r->next;
	if (!lo->have_sid) {
		pc_segs_cut(lo, r->off, end_of(r->off, r->len), r->iomode);
		free(r);
		pc_layout_kick(lo);
		if (lo->recalls)
			pc_timer_arm(ctx, &lo->recall_timer, 0);
		return;
	}
	if (return_send(lo, r->off, r->len, r->iomode, recall_return_done, lo) < 0) {
		pc_segs_cut(lo, r->off, end_of(r->off, r->len), r->iomode);
		pc_layout_kick(lo);
	}
	free(r);
}

/* Mark [off, end) of the segments (those matching iomode; LAYOUTIOMODE4_ANY: all) as going back:
 * no new I/O uses it, and I/O there waits for the return, then asks again. Only that range is
 * marked: a segment reaching past it is split at its edges, or the parts outside would stay marked
 * after the return with nothing left to return them, and I/O there would wait for ever. So a marked
 * segment lies wholly inside a recall not yet answered or a return in flight. Returns whether any
 * segment was hit. */
int pc_segs_mark(struct pc_layout *lo, uint64_t off, uint64_t end, layoutiomode4 iomode)
{
	int hit = 0;
	struct pc_seg *add = NULL;

	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (!pc_seg_meets(s, off, end, iomode))
			continue;
		hit = 1;
		if (!s->recalled && (s->off < off || s->end > end)) {
			struct pc_seg *l = pc_seg_trim(s, s->off, off), *m = pc_seg_trim(s, off, end),
				      *r = pc_seg_trim(s, end, s->end);
			if (m && (l || s->off >= off) && (r || s->end <= end)) {
				m->recalled = 1;
				pc_seg_push(&add, m);
				pc_seg_push(&add, l);
				pc_seg_push(&add, r);
				s->dead = 1; /* freed when its pieces in flight end; waited for as recalled */
			} else {
				if (m)
					pc_seg_free(m);
				if (l)
					pc_seg_free(l);
				if (r)
					pc_seg_free(r);
			}
		}
		s->recalled = 1;
	}
	pc_segs_adopt(lo, add);
	pc_segs_reap(lo);
	return hit;
}

static int recall_mark(struct pc_layout *lo, uint64_t off, uint64_t len, layoutiomode4 iomode)
{
	struct pc_recall *r, **pp;
	int hit = pc_segs_mark(lo, off, end_of(off, len), iomode);

	if (!hit && !(lo->ndirty || lo->written))
		return 0;
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct pc_recall){ .off = off, .len = len, .iomode = iomode };
	for (pp = &lo->recalls; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	pc_timer_arm(lo->ctx, &lo->recall_timer, 0);
	return 1;
}

nfsstat4 pc_layout_recall(struct pnfs_context *ctx, const CB_LAYOUTRECALL4args *a)
{
	int any = 0;

	if (!pc_lo_type(a->clora_type))
		return NFS4ERR_NOMATCHING_LAYOUT;
	if (a->clora_recall.lor_recalltype == LAYOUTRECALL4_FILE) {
		const layoutrecall_file4 *f = &a->clora_recall.layoutrecall4_u.lor_layout;
		struct pc_layout *lo;

		for (lo = ctx->layouts; lo; lo = lo->next)
			if (lo->fhlen == f->lor_fh.nfs_fh4_len && memcmp(lo->fh, f->lor_fh.nfs_fh4_val, lo->fhlen) == 0)
				break;
		if (!lo || !lo->have_sid || lo->type != a->clora_type)
			return NFS4ERR_NOMATCHING_LAYOUT;
		/* A LAYOUTGET reply not yet processed may hold what is recalled (RFC 8881 §12.5.5.2.1). */
		if (lo->getting || (int32_t)(f->lor_stateid.seqid - lo->sid.seqid) > 1)
			return NFS4ERR_DELAY;
		LOG_INFO("pnfs: layout recall for %s, %llu+%llu", pc_layout_any_fh(lo) ? pc_path_show(ctx, pc_layout_any_fh(lo)->path) : "?",
			 (unsigned long long)f->lor_offset, (unsigned long long)f->lor_length);
		any = recall_mark(lo, f->lor_offset, f->lor_length, a->clora_iomode);
		/* The recall carries the layout stateid's next seqid (RFC 8881 §12.5.3); the return and
		 * commit that answer it must use it, or the server sees an old stateid. */
		if (any > 0 && memcmp(f->lor_stateid.other, lo->sid.other, sizeof(lo->sid.other)) == 0 &&
		    (int32_t)(f->lor_stateid.seqid - lo->sid.seqid) > 0)
			lo->sid.seqid = f->lor_stateid.seqid;
		return any > 0 ? NFS4_OK : NFS4ERR_NOMATCHING_LAYOUT;
	}
	/* FSID (we use one file system per context) and ALL: every layout. */
	for (struct pc_layout *lo = ctx->layouts; lo; lo = lo->next) {
		if (!lo->have_sid || lo->type != a->clora_type)
			continue;
		if (lo->getting)
			return NFS4ERR_DELAY;
	}
	for (struct pc_layout *lo = ctx->layouts; lo; lo = lo->next)
		if (lo->have_sid && lo->type == a->clora_type && recall_mark(lo, 0, UINT64_MAX, a->clora_iomode) > 0)
			any = 1;
	return any ? NFS4_OK : NFS4ERR_NOMATCHING_LAYOUT;
}

nfsstat4 pc_layout_recall_any(struct pnfs_context *ctx, const CB_RECALL_ANY4args *a)
{
	struct proto_attrmask m;
	unsigned held = 0, keep = a->craa_objects_to_keep;

	proto_attrmask_from_bitmap4(&m, &a->craa_type_mask);
	if (!proto_attrmask_isset(&m, RCA4_TYPE_MASK_BLK_LAYOUT) &&
	    !proto_attrmask_isset(&m, RCA4_TYPE_MASK_OTHER_LAYOUT_MIN))
		return NFS4_OK;
	for (struct pc_layout *lo = ctx->layouts; lo; lo = lo->next)
		if (lo->have_sid)
			held++;
	/* Give back idle layouts first, until only craa_objects_to_keep remain. */
	for (struct pc_layout *lo = ctx->layouts; lo && held > keep; lo = lo->next) {
		if (!lo->have_sid || lo->waitq || lo->locks || lo->recalls)
			continue;
		if (recall_mark(lo, 0, UINT64_MAX, LAYOUTIOMODE4_ANY) > 0)
			held--;
	}
	return NFS4_OK;
}

void pc_layout_abandon(struct pc_layout *lo, struct pnfs_fh *fh, const char *why)
{
	for (struct pnfs_fh *f = lo->ctx->files; f; f = f->next)
		if (f->lo == lo)
			pc_fh_to_mds(f, "%s", why);
	if (fh && fh->lo != lo)
		pc_fh_to_mds(fh, "%s", why);
	if (lo->have_sid)
		recall_mark(lo, 0, UINT64_MAX, LAYOUTIOMODE4_ANY);
}
