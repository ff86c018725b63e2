/* LAYOUTCOMMIT: the dirty ranges are taken out of the layout, the devices written are flushed (a
 * RESERVATION CONFLICT is checked against the session first), and the ranges are committed in
 * batches; extents committed turn READ_WRITE_DATA in our segments. After a server restart the same
 * writes are committed again with loca_reclaim set, before RECLAIM_COMPLETE. */
#include "client/layout_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- LAYOUTCOMMIT ------------------------------------------------------------------------------- */

/* The committed ranges were INVALID_DATA in our segments; they are READ_WRITE_DATA now. */
static void mark_written(struct pc_layout *lo, const struct pc_dirty *d)
{
	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (s->dead || s->iomode != LAYOUTIOMODE4_RW || d->foff + d->len <= s->off || d->foff >= s->end)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			struct pc_ext *e = &s->ext[i];
			uint64_t a = d->foff, b = d->foff + d->len, ea = e->foff, eb = e->foff + e->len;
			struct pc_ext *v;
			size_t k = 0;

			if (e->state != PNFS_BLOCK_INVALID_DATA || e->dev != d->dev || b <= ea || a >= eb)
				continue;
			if (a < ea)
				a = ea;
			if (b > eb)
				b = eb;
			/* Split e into [ea, a) INVALID, [a, b) READ_WRITE, [b, eb) INVALID. */
			v = calloc(s->n + 2, sizeof(*v));
			if (!v)
				return;
			memcpy(v, s->ext, i * sizeof(*v));
			k = i;
			if (a > ea) {
				v[k] = *e;
				v[k].len = a - ea;
				k++;
			}
			v[k] = *e;
			v[k].foff = a;
			v[k].soff = e->soff + (a - ea);
			v[k].len = b - a;
			v[k].state = PNFS_BLOCK_READ_WRITE_DATA;
			k++;
			if (eb > b) {
				v[k] = *e;
				v[k].foff = b;
				v[k].soff = e->soff + (b - ea);
				v[k].len = eb - b;
				k++;
			}
			memcpy(&v[k], &s->ext[i + 1], (s->n - i - 1) * sizeof(*v));
			k += s->n - i - 1;
			free(s->ext);
			s->ext = v;
			s->n = k;
			i += (a > ea) ? 1 : 0;
		}
	}
}

struct commit_run {
	struct pc_layout *lo;
	struct pnfs_fh *fh;
	size_t next;                /* next index into the committing list */
	uint64_t write_end;
	int status;
	pc_io_cb cb;
	void *arg;
	int sent_any;
	struct pc_device *ow_devs[PC_OW_DEVS_MAX]; /* taken from the layout: flushed whole */
	unsigned now_devs;
	int ow_all;
	unsigned flushing;          /* device flushes outstanding before the first LAYOUTCOMMIT */
	int flush_err;
	char flush_msg[700];
	int reclaim;                /* LAYOUTCOMMIT reclaim (loca_reclaim TRUE, the open's stateid) */
	stateid4 open_sid;
	unsigned fence_checks;      /* SEQUENCEs sent after the flush met RESERVATION CONFLICT */
	int fence_answered;
	int handed_over;            /* the server had restarted: its reclaim took the writes */
};

static void commit_send(struct commit_run *cr);

/* A commit whose writes went to the reclaim after a server restart (dirty_take_back) ends when its
 * last call does, whatever that call's outcome: the reclaim's commit says what became of the writes,
 * and the caller waiting on this one waits for that (fsync reports it, or the loss it met). */
static void commit_handed_end(struct commit_run *cr)
{
	struct pc_layout *lo = cr->lo;
	struct pnfs_context *ctx = lo->ctx;
	pc_io_cb cb = cr->cb;
	void *arg = cr->arg;
	struct pnfs_fh *fh = cr->fh;

	free(cr);
	lo->handed--;
	if (cb && !(!ctx->destroying && fh && fh->lo == lo && pc_layout_commit(fh, cb, arg) == 0))
		cb(ctx, 0, arg);
	pc_layout_maybe_free(lo);
}

static void commit_finish(struct commit_run *cr)
{
	struct pc_layout *lo = cr->lo;
	struct pnfs_context *ctx = lo->ctx;
	struct pc_waiter *waiters = lo->commit_waiters;
	pc_io_cb cb = cr->cb;
	void *arg = cr->arg;
	int status = cr->status;

	free(lo->committing_list);
	lo->committing_list = NULL;
	lo->ncommitting = 0;
	lo->committing = 0;
	lo->running = NULL;
	lo->commit_waiters = NULL;
	free(cr);
	if (lo->recalls)
		pc_timer_arm(ctx, &lo->recall_timer, 0);
	pc_layout_kick(lo);
	if (cb)
		cb(ctx, status, arg);
	pc_waiters_run(ctx, waiters);
	pc_layout_maybe_free(lo);
}

static void commit_done(struct pc_compound *c)
{
	struct commit_run *cr = c->priv;
	struct pc_layout *lo = cr->lo;
	struct pnfs_context *ctx = lo->ctx;
	nfs_resop4 *r = pc_res_op(c, OP_LAYOUTCOMMIT);
	size_t first = (size_t)c->u64[0], last = (size_t)c->u64[1];

	if (c->u64[2]) {
		layoutupdate4 *u = (layoutupdate4 *)(uintptr_t)c->u64[2];
		proto_layoutupdate_free(u);
		free(u);
	}
	if (cr->handed_over) {
		/* sent under the state the server lost: the reclaim committed these writes again */
		LOG_DEBUG("pnfs: a LAYOUTCOMMIT sent before the server restarted ended: %s",
			  c->status < 0 ? strerror(-c->status) : proto_nfsstat4_name(c->nfs_status));
		pc_compound_free(c);
		commit_handed_end(cr);
		return;
	}
	if (c->status < 0 || !r) {
		uint64_t bytes = 0;
		pc_compound_err(c);
		for (size_t i = first; i < last; i++)
			bytes += lo->committing_list[i].len;
		{
			struct pnfs_fh *fh = cr->fh ? cr->fh : pc_layout_any_fh(lo);
			char msg[800];
			snprintf(msg, sizeof(msg), "%s: LAYOUTCOMMIT%s failed (%s): writes through the layout up to offset "
				 "%llu (%llu bytes in new blocks) may be lost", fh ? pc_path_show(ctx, fh->path) : "file",
				 cr->reclaim ? " reclaim after the server restarted" : "",
				 c->have_res ? proto_nfsstat4_name(c->nfs_status) : strerror(-c->status),
				 (unsigned long long)cr->write_end,
				 (unsigned long long)bytes);
			pc_layout_sticky_all(lo, cr->fh, msg);
		}
		cr->status = -EIO;
		pc_compound_free(c);
		commit_finish(cr);
		return;
	}
	ctx->stats.layoutcommits++;
	if (cr->reclaim && first == 0)
		ctx->stats.layouts_reclaimed++;
	for (size_t i = first; i < last; i++)
		mark_written(lo, &lo->committing_list[i]);
	{
		LAYOUTCOMMIT4resok *ok = &r->nfs_resop4_u.oplayoutcommit.LAYOUTCOMMIT4res_u.locr_resok4;
		if (ok->locr_newsize.ns_sizechanged)
			for (struct pnfs_fh *f = ctx->files; f; f = f->next)
				if (f->lo == lo && ok->locr_newsize.newsize4_u.ns_size > f->size)
					f->size = ok->locr_newsize.newsize4_u.ns_size;
	}
	pc_compound_free(c);
	cr->next = last;
	if (cr->next < lo->ncommitting) {
		commit_send(cr);
		return;
	}
	commit_finish(cr);
}

static void commit_send(struct commit_run *cr)
{
	struct pc_layout *lo = cr->lo;
	struct pnfs_context *ctx = lo->ctx;
	struct pc_compound *c;
	nfs_argop4 *op;
	layoutupdate4 *u = calloc(1, sizeof(*u));
	const struct pc_lo_type *t;
	size_t first = cr->next, last = first, k = 0;
	uint64_t lo_off = UINT64_MAX, hi = 0;
	int rc;

	/* Only ranges written into INVALID_DATA need the state change; writes into READ_WRITE_DATA
	 * extents need LAYOUTCOMMIT only for size and times. */
	while (last < lo->ncommitting && k < PC_COMMIT_BATCH) {
		if (lo->committing_list[last].invalid)
			k++;
		last++;
	}
	c = pc_compound_new(ctx, "LAYOUTCOMMIT %s", cr->fh ? pc_path_show(ctx, cr->fh->path) : "");
	if (!c || !u) {
		free(u);
		pc_compound_free(c);
		cr->status = pc_err(ctx, -ENOMEM, "out of memory");
		commit_finish(cr);
		return;
	}
	t = pc_lo_type(lo->type);
	rc = t ? t->encode_update(c, &lo->committing_list[first], last - first, k, u) : -EINVAL;
	if (rc < 0) {
		free(u);
		pc_compound_free(c);
		cr->status = pc_err(ctx, rc, "LAYOUTCOMMIT: cannot encode the layout update");
		commit_finish(cr);
		return;
	}
	for (size_t i = first; i < last; i++) {
		const struct pc_dirty *d = &lo->committing_list[i];
		if (d->foff < lo_off)
			lo_off = d->foff;
		if (d->foff + d->len > hi)
			hi = d->foff + d->len;
	}
	if (cr->write_end > hi && last == lo->ncommitting)
		hi = cr->write_end;
	if (lo_off == UINT64_MAX)
		lo_off = 0;
	pc_add_putfh(c, lo->fh, lo->fhlen);
	op = pc_add(c, OP_LAYOUTCOMMIT);
	if (op) {
		LAYOUTCOMMIT4args *a = &op->nfs_argop4_u.oplayoutcommit;
		a->loca_offset = lo_off;
		a->loca_length = hi > lo_off ? hi - lo_off : 1;
		a->loca_reclaim = cr->reclaim ? TRUE : FALSE;
		a->loca_stateid = cr->reclaim ? cr->open_sid : lo->sid;
		if (cr->write_end) {
			a->loca_last_write_offset.no_newoffset = TRUE;
			a->loca_last_write_offset.newoffset4_u.no_offset = cr->write_end - 1;
		}
		a->loca_time_modify.nt_timechanged = FALSE;
		a->loca_layoutupdate = *u;
	}
	c->cachethis = 1;
	c->setup = cr->reclaim; /* inside the reclaim, before RECLAIM_COMPLETE */
	c->u64[0] = first;
	c->u64[1] = last;
	c->u64[2] = (uint64_t)(uintptr_t)u;
	c->done = commit_done;
	c->priv = cr;
	cr->sent_any = 1;
	pc_submit(c);
}

static void commit_after_flush(struct commit_run *cr);

static void commit_fence_checked(struct pc_compound *c)
{
	struct commit_run *cr = c->priv;

	if (c->status == 0)
		cr->fence_answered = 1;
	LOG_DEBUG("pnfs: fence check of a commit: status %d (%s), checks %u, handed over %d", c->status,
		  c->have_res ? proto_nfsstat4_name(c->nfs_status) : "no reply", cr->fence_checks, cr->handed_over);
	pc_compound_free(c);
	commit_after_flush(cr);
}

static void commit_after_flush(struct commit_run *cr)
{
	struct pnfs_context *ctx = cr->lo->ctx;

	if (cr->handed_over) {
		/* The server had restarted: the writes went to its reclaim (its flush, its commit). */
		commit_handed_end(cr);
		return;
	}
	if (!cr->flush_err) {
		commit_send(cr);
		return;
	}
	/* RESERVATION CONFLICT: fenced, or the server restarted and removed the key of a client ID it
	 * no longer knows. Ask it (a SEQUENCE): after a restart the answer comes once the session is
	 * recovered, and the reclaim has taken these writes (pc_layout_reclaim_begin). */
	if (cr->flush_err == -EBADE && !cr->reclaim && !cr->fence_answered && cr->fence_checks < PC_FENCE_CHECKS &&
	    !ctx->destroying) {
		struct pc_compound *c = pc_compound_new(ctx, "SEQUENCE (after RESERVATION CONFLICT)");
		if (c) {
			if (cr->fence_checks++ == 0)
				LOG_INFO("pnfs: %s: RESERVATION CONFLICT flushing the LUNs (%s); asking the server "
					 "whether it restarted", cr->fh ? pc_path_show(ctx, cr->fh->path) : "file",
					 cr->flush_msg);
			c->done = commit_fence_checked;
			c->priv = cr;
			pc_submit(c);
			return;
		}
	}
	char msg[1000];

	/* Not stable, so not committed (RFC 5663 §2.3.2): the blocks stay INVALID_DATA for others. */
	{
		struct pnfs_fh *fh = cr->fh ? cr->fh : pc_layout_any_fh(cr->lo);
		snprintf(msg, sizeof(msg), "%s: cannot make the writes through the layout stable (%s); LAYOUTCOMMIT "
			 "not sent, writes up to offset %llu may be lost", fh ? pc_path_show(ctx, fh->path) : "file",
			 cr->flush_msg, (unsigned long long)cr->write_end);
	}
	pc_layout_sticky_all(cr->lo, cr->fh, msg);
	/* The LUNs could not be flushed: the SAN path failed (or the server fenced us). As with a failed
	 * write, the layout's files stop using it, so the writes the caller does again go through the
	 * MDS instead of waiting on the same silent path. */
	if (!ctx->destroying) {
		char why[800];
		snprintf(why, sizeof(why), "flushing the LUNs failed: %s", cr->flush_msg);
		pc_layout_abandon(cr->lo, cr->fh, why);
	}
	cr->status = pc_err(ctx, -EIO, "%s", msg);
	commit_finish(cr);
}

static void commit_flushed(struct blkmap_ctx *bctx, int status, const struct blkmap_io_result *res, void *arg)
{
	struct commit_run *cr = arg;
	(void)bctx;

	if (status < 0 && !cr->flush_err) {
		cr->flush_err = status;
		snprintf(cr->flush_msg, sizeof(cr->flush_msg), "%s",
			 res && res->message ? res->message : strerror(-status));
	}
	if (--cr->flushing == 0)
		commit_after_flush(cr);
}

void pc_layout_note_overwrite(struct pc_layout *lo, struct pc_device *dev)
{
	for (unsigned i = 0; i < lo->now_devs; i++)
		if (lo->ow_devs[i] == dev)
			return;
	if (lo->now_devs < PC_OW_DEVS_MAX)
		lo->ow_devs[lo->now_devs++] = dev;
	else
		lo->ow_all = 1;
}

static int ow_has(const struct commit_run *cr, const struct pc_device *d)
{
	if (cr->ow_all)
		return 1;
	for (unsigned i = 0; i < cr->now_devs; i++)
		if (cr->ow_devs[i] == d)
			return 1;
	return 0;
}

static void flush_note_err(struct commit_run *cr, int rc, const char *fmt, const char *what)
{
	if (cr->flush_err)
		return;
	cr->flush_err = rc;
	snprintf(cr->flush_msg, sizeof(cr->flush_msg), fmt, what);
}

/* One device's flush: the whole volume, or the leaves holding ranges r[0..k). */
static void flush_device(struct commit_run *cr, struct pc_device *d, const struct blkmap_range *r, size_t k)
{
	int rc;

	if (!d->vol) {
		flush_note_err(cr, -ENODEV, "the device is gone: %s", d->why);
		return;
	}
	cr->flushing++;
	rc = k ? blkmap_vol_flush_ranges_async(d->vol, r, k, commit_flushed, cr)
	       : blkmap_vol_flush_async(d->vol, commit_flushed, cr);
	if (rc < 0) {
		cr->flushing--;
		flush_note_err(cr, rc, "%s", blkmap_vol_errstr(d->vol));
	}
}

/* Before LAYOUTCOMMIT the data must be stable (RFC 5663 §2.3.2): flush the LUNs holding the ranges
 * being committed (whole devices for writes into READ_WRITE_DATA extents), every device's at once,
 * then send. */
static void commit_flush(struct commit_run *cr)
{
	struct pc_layout *lo = cr->lo;
	struct pc_device **seen = calloc(lo->ncommitting ? lo->ncommitting : 1, sizeof(*seen));
	struct blkmap_range *r = calloc(lo->ncommitting ? lo->ncommitting : 1, sizeof(*r));
	size_t nseen = 0;

	cr->flushing = 1; /* held while submitting */
	if (!seen || !r)
		flush_note_err(cr, -ENOMEM, "%s", "out of memory");
	if (cr->ow_all) {
		for (struct pc_device *d = lo->ctx->devices_list; d; d = d->next)
			if (d->vol && d->bms) /* one never resolved, or closed, holds nothing of ours */
				flush_device(cr, d, NULL, 0);
	} else {
		for (unsigned i = 0; i < cr->now_devs; i++)
			flush_device(cr, cr->ow_devs[i], NULL, 0);
	}
	for (size_t i = 0; seen && r && i < lo->ncommitting; i++) {
		struct pc_device *d = lo->committing_list[i].dev;
		size_t k = 0, j;
		for (j = 0; j < nseen && seen[j] != d; j++)
			;
		if (j < nseen)
			continue;
		seen[nseen++] = d;
		if (ow_has(cr, d))
			continue; /* flushed whole above */
		for (size_t m = i; m < lo->ncommitting; m++) {
			if (lo->committing_list[m].dev != d)
				continue;
			r[k].off_bytes = lo->committing_list[m].soff;
			r[k].len_bytes = lo->committing_list[m].len;
			k++;
		}
		flush_device(cr, d, r, k);
	}
	free(seen);
	free(r);
	if (--cr->flushing == 0)
		commit_after_flush(cr);
}

/* Start a commit of everything written so far; cb may be NULL (background). Returns 0 (cb will
 * run), -ENOENT (nothing to commit), -EBUSY (a commit is running: waiters see its end). */
static int commit_start_as(struct pc_layout *lo, struct pnfs_fh *fh, int reclaim, pc_io_cb cb, void *arg)
{
	struct commit_run *cr;

	if (!lo->written && lo->ndirty == 0)
		return -ENOENT;
	if (lo->committing)
		return -EBUSY;
	if (lo->reclaim && !reclaim)
		return -EBUSY; /* the writes wait for the reclaim; its end wakes the commit waiters */
	if (!lo->have_sid && !reclaim) {
		if (lo->ndirty && fh)
			pc_fh_set_sticky(fh, -EIO, "%s: the layout is gone before LAYOUTCOMMIT: writes through it may be "
					 "lost", pc_path_show(lo->ctx, fh->path));
		pc_dirty_drop(lo);
		return -ENOENT;
	}
	cr = malloc(sizeof(*cr));
	if (!cr)
		return -ENOMEM;
	*cr = (struct commit_run){ .lo = lo, .fh = fh, .cb = cb, .arg = arg, .reclaim = reclaim };
	if (reclaim)
		cr->open_sid = fh->open_sid;
	cr->write_end = lo->write_end;
	lo->committing = 1;
	lo->running = cr;
	lo->commit_write_end = lo->write_end;
	lo->committing_list = lo->dirty;
	lo->ncommitting = lo->ndirty;
	lo->dirty = NULL;
	lo->ndirty = 0;
	lo->written = 0;
	lo->write_end = 0;
	memcpy(cr->ow_devs, lo->ow_devs, sizeof(cr->ow_devs));
	cr->now_devs = lo->now_devs;
	cr->ow_all = lo->ow_all;
	lo->now_devs = 0;
	lo->ow_all = 0;
	commit_flush(cr);
	return 0;
}

int pc_layout_commit_start(struct pc_layout *lo, struct pnfs_fh *fh, pc_io_cb cb, void *arg)
{
	return commit_start_as(lo, fh, 0, cb, arg);
}

struct commit_again {
	struct pnfs_fh *fh;
	pc_io_cb cb;
	void *arg;
};

static void commit_after_running(struct pnfs_context *ctx, void *arg)
{
	struct commit_again *ca = arg;
	int rc = ca->fh->lo ? pc_layout_commit_start(ca->fh->lo, ca->fh, ca->cb, ca->arg) : -ENOENT;

	if (rc == -EBUSY) {
		/* Another commit started first: wait for that one too. */
		if (pc_waiter_add(&ca->fh->lo->commit_waiters, 0, commit_after_running, ca) == 0)
			return;
		rc = -ENOMEM;
	}
	if (rc < 0)
		ca->cb(ctx, rc == -ENOENT ? 0 : rc, ca->arg);
	free(ca);
}

int pc_layout_commit(struct pnfs_fh *fh, pc_io_cb cb, void *arg)
{
	struct pc_layout *lo = fh->lo;
	int rc;

	if (!lo)
		return -ENOENT;
	/* A commit in flight (a recall's, say) carries writes made before this call: wait for it, even
	 * with nothing written since, so its outcome is this call's to report. */
	rc = lo->committing ? -EBUSY : pc_layout_commit_start(lo, fh, cb, arg);
	if (rc == -EBUSY) {
		struct commit_again *ca = calloc(1, sizeof(*ca));
		if (!ca || pc_waiter_add(&lo->commit_waiters, 0, commit_after_running, ca) < 0) {
			free(ca);
			return -ENOMEM;
		}
		ca->fh = fh;
		ca->cb = cb;
		ca->arg = arg;
		return 0;
	}
	return rc;
}

void pc_layout_maybe_commit(struct pc_layout *lo, struct pnfs_fh *fh)
{
	if (lo->ndirty > PC_DIRTY_SOFT_MAX && !lo->committing)
		pc_layout_commit_start(lo, fh, NULL, NULL);
}

/* ---- LAYOUTCOMMIT reclaim ------------------------------------------------------------------------ */

/* After a server restart (RFC 8881 §18.42.3) the layout is gone, but what the client wrote through it
 * is on the LUNs, in blocks the server still holds for the file as INVALID_DATA through its grace
 * period. Once the open is reclaimed, the client makes those writes stable (registering its new key
 * on SCSI devices first: the restarted server removed the old one) and commits them with
 * loca_reclaim set, before RECLAIM_COMPLETE. Without it they would be lost with the layout. */

struct reclaim_run {
	struct pc_layout *lo;
	struct pnfs_fh *fh;
	void (*done)(struct pnfs_context *, void *);
	void *arg;
	unsigned waiting;           /* devices being registered again */
	int failed;
	char why[500];
};

static void reclaim_wake_waiters(struct pc_layout *lo)
{
	struct pc_waiter *waiters = lo->commit_waiters;

	lo->commit_waiters = NULL;
	pc_waiters_run(lo->ctx, waiters);
}

static void reclaim_lost(struct pc_layout *lo, struct pnfs_fh *fh, const char *why)
{
	char msg[800];

	snprintf(msg, sizeof(msg), "%s: the server restarted and %s: writes through the layout that were not "
		 "committed may be lost", fh ? pc_path_show(lo->ctx, fh->path) : "file", why);
	pc_layout_sticky_all(lo, fh, msg);
	pc_dirty_drop(lo);
	lo->write_end = 0;
	lo->now_devs = 0;
	lo->ow_all = 0;
	lo->reclaim = 0;
	reclaim_wake_waiters(lo);
}

/* The running commit's writes go back to the dirty list, the newer writes over the older ones, for
 * the reclaim to commit; the commit ends when its flush or call out does (commit_handed_end). */
static void dirty_take_back(struct pc_layout *lo, struct commit_run *cr)
{
	struct pc_dirty *newer = lo->dirty, *older = lo->committing_list;
	size_t nn = lo->ndirty, no = lo->ncommitting;

	lo->dirty = NULL;
	lo->ndirty = 0;
	lo->capdirty = 0;
	lo->committing_list = NULL;
	lo->ncommitting = 0;
	lo->committing = 0;
	lo->running = NULL;
	lo->handed++;
	for (size_t i = 0; i < no; i++)
		pc_dirty_add(lo, older[i].foff, older[i].len, older[i].soff, older[i].dev, older[i].invalid);
	for (size_t i = 0; i < nn; i++)
		pc_dirty_add(lo, newer[i].foff, newer[i].len, newer[i].soff, newer[i].dev, newer[i].invalid);
	free(newer);
	free(older);
	if (lo->commit_write_end > lo->write_end)
		lo->write_end = lo->commit_write_end;
	lo->written = 1;
	for (unsigned i = 0; i < cr->now_devs; i++)
		pc_layout_note_overwrite(lo, cr->ow_devs[i]);
	if (cr->ow_all)
		lo->ow_all = 1;
	cr->handed_over = 1;
}

void pc_layout_reclaim_begin(struct pnfs_fh *fh)
{
	struct pc_layout *lo = fh->lo;

	if (!lo || lo->reclaim)
		return; /* another handle of the file already kept them */
	/* A commit under the old state (flushing, asking whether the server restarted after its flush
	 * met the new server's fence, or its LAYOUTCOMMIT unanswered when the connection went): the
	 * server lost that state, so the writes go to the reclaim. Committed again, ranges already
	 * committed stay as they are (the old server may have done that LAYOUTCOMMIT before it went).
	 * One with no ranges to reclaim, nor newer ones (a size change through READ_WRITE_DATA
	 * extents), stays: it fails, and says so. */
	if (lo->running && !lo->running->reclaim && (lo->ncommitting || lo->ndirty))
		dirty_take_back(lo, lo->running);
	if (!lo->ndirty || lo->committing) {
		/* Nothing to keep, or the reclaim's own commit is out (the server restarted again). */
		pc_layout_forget(fh);
		return;
	}
	lo->reclaim = 1;
	lo->epoch++;
	pc_layout_sid_forget(lo);
	pc_layout_kick(lo);
}

void pc_layout_reclaim_drop(struct pnfs_fh *fh)
{
	struct pc_layout *lo = fh->lo;

	if (lo && lo->reclaim)
		reclaim_lost(lo, fh, "the file's open could not be reclaimed");
}

static void reclaim_committed(struct pnfs_context *ctx, int status, void *arg)
{
	struct reclaim_run *rr = arg;

	if (status == 0)
		LOG_INFO("pnfs: %s: writes through the layout committed again after the server restarted",
			 pc_path_show(ctx, rr->fh->path));
	rr->done(ctx, rr->arg);
	free(rr);
}

static void reclaim_devices_ready(struct pnfs_context *ctx, void *arg);

/* Ask for every device the reclaim flushes (those the kept writes went to, and those written through
 * READ_WRITE_DATA extents) to be usable under the new client ID; some may answer later. */
static void reclaim_ask(struct reclaim_run *rr, struct pc_device *d)
{
	int rc;

	if (rr->failed)
		return;
	if (d->state == PC_DEV_FETCHING && !d->fetch_setup) {
		/* its GETDEVICEINFO waits for the end of the reclaim, which would wait for it */
		rr->failed = 1;
		snprintf(rr->why, sizeof(rr->why), "its device was being looked up at the time");
		return;
	}
	rr->waiting++;
	rc = pc_device_ensure(d, reclaim_devices_ready, rr);
	if (rc != 0)
		rr->waiting--;
	if (rc < 0) {
		rr->failed = 1;
		snprintf(rr->why, sizeof(rr->why), "its device cannot be used again (%s)", d->why[0] ? d->why : strerror(-rc));
	}
}

static void reclaim_devices_ready(struct pnfs_context *ctx, void *arg)
{
	struct reclaim_run *rr = arg;
	struct pc_layout *lo = rr->lo;
	int rc;

	if (rr->waiting && --rr->waiting)
		return;
	/* Every device asked for has settled: ask again until all are ready at once (one registered
	 * under the old ID while we waited is stale again) or one cannot be had. */
	rr->waiting = 1;
	for (size_t i = 0; i < lo->ndirty; i++)
		reclaim_ask(rr, lo->dirty[i].dev);
	if (lo->ow_all) {
		for (struct pc_device *d = ctx->devices_list; d; d = d->next)
			if (d->vol && d->bms)
				reclaim_ask(rr, d);
	} else {
		for (unsigned i = 0; i < lo->now_devs; i++)
			reclaim_ask(rr, lo->ow_devs[i]);
	}
	if (--rr->waiting && !rr->failed)
		return;
	if (rr->failed) {
		if (rr->waiting)
			return; /* the last device to settle finishes */
		reclaim_lost(lo, rr->fh, rr->why);
		rr->done(ctx, rr->arg);
		free(rr);
		return;
	}
	lo->reclaim = 0;
	rc = commit_start_as(lo, rr->fh, 1, reclaim_committed, rr);
	if (rc < 0) {
		if (rc != -ENOENT) {
			snprintf(rr->why, sizeof(rr->why), "the LAYOUTCOMMIT reclaim could not start (%s)", strerror(-rc));
			reclaim_lost(lo, rr->fh, rr->why);
		}
		reclaim_wake_waiters(lo);
		rr->done(ctx, rr->arg);
		free(rr);
	}
}

int pc_layout_reclaim_commit(struct pnfs_fh *fh, void (*done)(struct pnfs_context *, void *), void *arg)
{
	struct pc_layout *lo = fh->lo;
	struct reclaim_run *rr;

	if (!lo || !lo->reclaim)
		return 0;
	rr = calloc(1, sizeof(*rr));
	if (!rr) {
		reclaim_lost(lo, fh, "memory ran out");
		return 0;
	}
	rr->lo = lo;
	rr->fh = fh;
	rr->done = done;
	rr->arg = arg;
	reclaim_devices_ready(lo->ctx, rr);
	return 1;
}
