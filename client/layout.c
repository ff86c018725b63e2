/* The layout cache of a file: one layout per file per context, attached by its open handles; I/O
 * that cannot run yet waits on it and is stepped again when anything changes; LAYOUTGET (one at a
 * time per file, segments installed as the server granted them). The cache's other work has files
 * of its own: segments and dirty ranges (layout_seg.c), LAYOUTCOMMIT and its reclaim
 * (layout_commit.c), LAYOUTRETURN and recalls (layout_return.c); client/layout_cache.h is what they
 * share. Segments in use are never freed under a piece of I/O: a replaced or returned segment is
 * marked dead and freed when its last piece completes. */
#include "client/layout_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRYLATER_MAX 25
#define TRYLATER_DELAY_MS 200

/* ---- attach / free --------------------------------------------------------------------------- */

static void kick_fire(struct pnfs_context *ctx, struct pc_timer *t);

struct pc_layout *pc_layout_attach(struct pnfs_fh *fh)
{
	struct pnfs_context *ctx = fh->ctx;
	struct pc_layout *lo;

	if (fh->lo)
		return fh->lo;
	for (lo = (struct pc_layout *)ctx->layouts; lo; lo = lo->next)
		if (lo->fhlen == fh->fhlen && memcmp(lo->fh, fh->fh, fh->fhlen) == 0)
			break;
	if (!lo) {
		lo = calloc(1, sizeof(*lo));
		if (!lo)
			return NULL;
		lo->ctx = ctx;
		memcpy(lo->fh, fh->fh, fh->fhlen);
		lo->fhlen = fh->fhlen;
		lo->type = ctx->layout_type;
		lo->blksize = ctx->layout_blksize ? ctx->layout_blksize : 4096;
		lo->kick.fn = kick_fire;
		lo->kick.arg = lo;
		lo->recall_timer.fn = pc_layout_recall_fire;
		lo->recall_timer.arg = lo;
		lo->next = ctx->layouts;
		ctx->layouts = lo;
	}
	lo->refs++;
	fh->lo = lo;
	return lo;
}

void pc_layout_free(struct pc_layout *lo)
{
	struct pnfs_context *ctx = lo->ctx;
	struct pc_layout **pp;

	for (pp = (struct pc_layout **)&ctx->layouts; *pp; pp = &(*pp)->next)
		if (*pp == lo) {
			*pp = lo->next;
			break;
		}
	pc_timer_cancel(ctx, &lo->kick);
	pc_timer_cancel(ctx, &lo->recall_timer);
	pc_timer_cancel(ctx, &lo->retry_timer);
	while (lo->segs) {
		struct pc_seg *s = lo->segs;
		lo->segs = s->next;
		pc_seg_free(s);
	}
	while (lo->locks) {
		struct pc_lock *l = lo->locks;
		lo->locks = l->next;
		free(l);
	}
	while (lo->recalls) {
		struct pc_recall *r = lo->recalls;
		lo->recalls = r->next;
		free(r);
	}
	pc_waiters_free(lo->commit_waiters);
	pc_waiters_free(lo->get_waiters);
	free(lo->dirty);
	free(lo->committing_list);
	free(lo);
}

/* Free the layout once nothing holds it: no open handle, waiting I/O or call of its own out. */
void pc_layout_maybe_free(struct pc_layout *lo)
{
	if (lo->refs == 0 && !lo->waitq && !lo->committing && !lo->returning && !lo->getting && !lo->handed)
		pc_layout_free(lo);
}

void pc_layout_detach(struct pnfs_fh *fh)
{
	struct pc_layout *lo = fh->lo;

	if (!lo)
		return;
	fh->lo = NULL;
	lo->refs--;
	pc_layout_maybe_free(lo);
}

/* ---- waiting I/O ---------------------------------------------------------------------------------- */

void pc_layout_wait(struct pc_layout *lo, struct pc_io *io)
{
	io->waiting = 1;
	io->wnext = lo->waitq;
	lo->waitq = io;
}

void pc_layout_kick(struct pc_layout *lo)
{
	if (lo->waitq)
		pc_timer_arm(lo->ctx, &lo->kick, 0);
}

static void kick_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct pc_layout *lo = t->arg;
	struct pc_io *list = lo->waitq;
	(void)ctx;

	lo->waitq = NULL;
	/* Oldest first: the queue is a stack. */
	struct pc_io *rev = NULL;
	while (list) {
		struct pc_io *n = list->wnext;
		list->wnext = rev;
		rev = list;
		list = n;
	}
	while (rev) {
		struct pc_io *n = rev->wnext;
		rev->wnext = NULL;
		rev->waiting = 0;
		pc_pio_step(rev);
		rev = n;
	}
}

void pc_layouts_cancel_waiting(struct pnfs_context *ctx, int status)
{
	for (struct pc_layout *lo = ctx->layouts; lo; lo = lo->next) {
		pc_timer_cancel(ctx, &lo->kick);
		while (lo->waitq) {
			struct pc_io *io = lo->waitq;
			lo->waitq = io->wnext;
			io->wnext = NULL;
			io->waiting = 0;
			pc_pio_fail(io, status);
		}
	}
}

int pc_layouts_hold_device(struct pnfs_context *ctx, const struct pc_device *d)
{
	for (struct pc_layout *lo = ctx->layouts; lo; lo = lo->next) {
		if (lo->committing || lo->ow_all)
			return 1; /* a commit's flush may name it (its own list is not kept here) */
		for (unsigned i = 0; i < lo->now_devs; i++)
			if (lo->ow_devs[i] == d)
				return 1;
		for (size_t i = 0; i < lo->ndirty; i++)
			if (lo->dirty[i].dev == d)
				return 1;
		for (size_t i = 0; i < lo->ncommitting; i++)
			if (lo->committing_list[i].dev == d)
				return 1;
	}
	return 0;
}

/* Mark every waiting I/O to go through the MDS (the layout path gave up), then step them. */
static void waiters_to_mds(struct pc_layout *lo)
{
	for (struct pc_io *io = lo->waitq; io; io = io->wnext)
		io->force_mds = 1;
	pc_layout_kick(lo);
}

/* ---- stateids ------------------------------------------------------------------------------------ */

/* Take a layout stateid from a reply if it is newer than ours (RFC 8881 §12.5.3). */
void pc_layout_sid_take(struct pc_layout *lo, const stateid4 *s)
{
	if (!lo->have_sid || memcmp(lo->sid.other, s->other, sizeof(s->other)) != 0 ||
	    (int32_t)(s->seqid - lo->sid.seqid) > 0) {
		lo->sid = *s;
		lo->have_sid = 1;
	}
}

void pc_layout_sid_forget(struct pc_layout *lo)
{
	lo->have_sid = 0;
	for (struct pc_seg *s = lo->segs; s; s = s->next)
		s->dead = 1;
	pc_segs_reap(lo);
}

/* ---- LAYOUTGET ---------------------------------------------------------------------------------- */

struct pnfs_fh *pc_layout_any_fh(struct pc_layout *lo)
{
	for (struct pnfs_fh *fh = lo->ctx->files; fh; fh = fh->next)
		if (fh->lo == lo)
			return fh;
	return NULL;
}

/* A commit's failure is every open handle's to hear (once each, at its next fsync or close), not
 * only the one whose call started the commit: a recall's commit has no caller at all. */
void pc_layout_sticky_all(struct pc_layout *lo, struct pnfs_fh *fh, const char *msg)
{
	int any = 0;

	for (struct pnfs_fh *f = lo->ctx->files; f; f = f->next)
		if (f->lo == lo || f == fh) {
			pc_fh_set_sticky(f, -EIO, "%s", msg);
			any = 1;
		}
	if (!any)
		LOG_ERROR("pnfs: %s", msg);
}

/* Decode one granted layout4 and install it as a segment; -EPROTO when it is of another type,
 * undecodable or carries a bad extent, -ENOMEM when out of memory. */
static int install_layout4(struct pc_layout *lo, const layout4 *l)
{
	struct pnfs_context *ctx = lo->ctx;
	struct proto_extent *pe;
	struct pc_ext *ext = NULL;
	size_t n = 0;
	int rc;

	if (l->lo_content.loc_type != lo->type)
		return -EPROTO;
	rc = proto_layout_extents_decode(&l->lo_content, &pe, &n);
	if (rc < 0)
		return rc;
	ext = calloc(n ? n : 1, sizeof(*ext));
	for (size_t i = 0; ext && i < n; i++) {
		ext[i].foff = pe[i].file_offset;
		ext[i].len = pe[i].length;
		ext[i].soff = pe[i].storage_offset;
		ext[i].state = pe[i].state;
		ext[i].dev = pc_device_obtain(ctx, pe[i].vol_id, lo->type);
		if (!ext[i].dev) {
			free(ext);
			ext = NULL;
		}
	}
	free(pe);
	/* pc_device_obtain() makes an entry for a device id it has not seen (GETDEVICEINFO resolves it
	 * later), so a NULL from it, like one from calloc, is out of memory. */
	if (!ext)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ext[i].len == 0 || ext[i].state > PNFS_BLOCK_NONE_DATA) {
			rc = -EPROTO;
			goto fail_free;
		}
	rc = pc_seg_install(lo, l->lo_offset, l->lo_length, l->lo_iomode, ext, n);
	if (rc < 0)
		goto fail_free;
	return 0;

fail_free:
	free(ext);
	return rc;
}

static void retry_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)ctx;
	pc_layout_kick(t->arg);
}

/* Ask for the layout again in TRYLATER_DELAY_MS (the server said not now). */
static void retry_later(struct pc_layout *lo)
{
	lo->retry_timer.fn = retry_fire;
	lo->retry_timer.arg = lo;
	pc_timer_arm(lo->ctx, &lo->retry_timer, TRYLATER_DELAY_MS);
}

int pc_layout_on_get(struct pc_layout *lo, void (*fn)(struct pnfs_context *, void *), void *arg)
{
	return pc_waiter_add(&lo->get_waiters, 1, fn, arg);
}

int pc_layout_off_get(struct pc_layout *lo, void (*fn)(struct pnfs_context *, void *), void *arg)
{
	for (struct pc_waiter **pp = &lo->get_waiters; *pp; pp = &(*pp)->next) {
		struct pc_waiter *w = *pp;
		if (w->fn == fn && w->arg == arg) {
			*pp = w->next;
			free(w);
			return 1;
		}
	}
	return 0;
}

static void get_waiters_wake(struct pc_layout *lo, int result)
{
	struct pc_waiter *w = lo->get_waiters;

	lo->get_result = result;
	lo->get_waiters = NULL;
	pc_waiters_run(lo->ctx, w);
}

static void layoutget_done(struct pc_compound *c)
{
	int result = 0;
	struct pc_layout *lo = c->priv;
	struct pnfs_context *ctx = c->ctx;
	nfs_resop4 *r = pc_res_op(c, OP_LAYOUTGET);
	struct pnfs_fh *fh = pc_layout_any_fh(lo);

	lo->getting = 0;
	if (c->status == 0 && r) {
		LAYOUTGET4resok *ok = &r->nfs_resop4_u.oplayoutget.LAYOUTGET4res_u.logr_resok4;
		int bad = 0;
		pc_layout_sid_take(lo, &ok->logr_stateid);
		lo->return_on_close = ok->logr_return_on_close;
		for (u_int i = 0; i < ok->logr_layout.logr_layout_len; i++)
			if (install_layout4(lo, &ok->logr_layout.logr_layout_val[i]) < 0)
				bad = 1;
		lo->trylater = 0;
		if (bad && fh)
			pc_fh_to_mds(fh, "the server's layout could not be used (undecodable or of another type)");
		if (bad) {
			waiters_to_mds(lo);
			result = pc_err(ctx, -EPROTO, "LAYOUTGET: the server's layout could not be used "
					"(undecodable or of another type)");
		}
		pc_compound_free(c);
		pc_layout_kick(lo);
		goto check_free;
	}
	switch (c->nfs_status) {
	case NFS4ERR_LAYOUTTRYLATER:
	case NFS4ERR_RECALLCONFLICT:
	case NFS4ERR_DELAY:
	case NFS4ERR_GRACE: /* the server restarted: no layouts until its grace period ends */
		if (++lo->trylater <= TRYLATER_MAX) {
			retry_later(lo);
			result = 1;
			break;
		}
		lo->trylater = 0;
		result = pc_err(ctx, -EAGAIN, "%s: %s %d times in a row", c->what,
				proto_nfsstat4_name(c->nfs_status), TRYLATER_MAX);
		if (!lo->busy_noticed && fh) {
			/* another client's layout (one it does not give back, or a client gone without a
			 * backchannel, until the server revokes it) holds the range */
			lo->busy_noticed = 1;
			LOG_WARN("pnfs: %s: no layout after %d tries (%s); this I/O goes through the MDS",
				 pc_path_show(ctx, fh->path), TRYLATER_MAX, proto_nfsstat4_name(c->nfs_status));
		}
		waiters_to_mds(lo); /* this I/O through the MDS; later ones try layouts again */
		break;
	case NFS4ERR_OLD_STATEID:
		/* The server moved our layout stateid on: a CB_LAYOUTRECALL we answered with DELAY while
		 * this LAYOUTGET was in flight bumped its seqid. The server sends the recall again, and
		 * taking it brings the seqid; asking again later keeps the layout (and what was written
		 * through it and not yet committed). */
		if (lo->have_sid && ++lo->trylater <= TRYLATER_MAX) {
			retry_later(lo);
			result = 1;
			break;
		}
		lo->trylater = 0;
		/* fall through */
	case NFS4ERR_BAD_STATEID:
		if (lo->have_sid) {
			/* Our layout state is gone at the server: start again from the open stateid. */
			pc_layout_sid_forget(lo);
			pc_layout_kick(lo);
			result = 1;
			break;
		}
		/* fall through */
	default:
		result = pc_compound_err(c);
		if (result >= 0)
			result = -EIO;
		if (fh && (c->nfs_status == NFS4ERR_LAYOUTUNAVAILABLE || c->nfs_status == NFS4ERR_UNKNOWN_LAYOUTTYPE ||
			   c->nfs_status == NFS4ERR_NOTSUPP || c->nfs_status == NFS4ERR_BADLAYOUT ||
			   c->nfs_status == NFS4ERR_BADIOMODE || c->nfs_status == NFS4ERR_OP_ILLEGAL))
			pc_fh_to_mds(fh, "no layout (%s)", proto_nfsstat4_name(c->nfs_status));
		else if (fh && !lo->err_noticed) {
			lo->err_noticed = 1;
			LOG_WARN("pnfs: %s: LAYOUTGET failed (%s); this I/O goes through the MDS",
				 pc_path_show(ctx, fh->path), c->nfs_status ? proto_nfsstat4_name(c->nfs_status)
									    : strerror(-result));
		}
		waiters_to_mds(lo);
		break;
	}
	pc_compound_free(c);
check_free:
	get_waiters_wake(lo, result);
	pc_layout_maybe_free(lo);
}

void pc_layout_get(struct pc_layout *lo, struct pnfs_fh *fh, uint64_t off, uint64_t len, uint64_t minlen,
		   layoutiomode4 iomode)
{
	struct pnfs_context *ctx = lo->ctx;
	struct pc_compound *c;
	nfs_argop4 *op;

	if (lo->getting)
		return;
	c = pc_compound_new(ctx, "LAYOUTGET %s", pc_path_show(ctx, fh->path));
	if (!c) {
		waiters_to_mds(lo);
		return;
	}
	lo->getting = 1;
	ctx->stats.layoutgets++;
	pc_add_putfh(c, lo->fh, lo->fhlen);
	op = pc_add(c, OP_LAYOUTGET);
	if (op) {
		LAYOUTGET4args *a = &op->nfs_argop4_u.oplayoutget;
		uint32_t maxresp = ctx->fore_maxresp ? ctx->fore_maxresp : 1u << 20;
		a->loga_signal_layout_avail = FALSE;
		a->loga_layout_type = lo->type;
		a->loga_iomode = iomode;
		a->loga_offset = off;
		a->loga_length = len;
		a->loga_minlength = minlen;
		if (lo->have_sid)
			a->loga_stateid = lo->sid;
		else
			pc_bind_stateid(c, fh, &a->loga_stateid);
		a->loga_maxcount = maxresp > 4096 ? maxresp - 2048 : maxresp;
	}
	c->cachethis = 1;
	c->done = layoutget_done;
	c->priv = lo;
	pc_submit(c);
}

/* ---- inspection and tests -------------------------------------------------------------------------- */

int pnfs_fh_extents(struct pnfs_fh *fh, struct pnfs_extent **out, size_t *n)
{
	struct pc_layout *lo = fh->lo;
	size_t total = 0, k = 0;
	struct pnfs_extent *v;

	*out = NULL;
	*n = 0;
	if (!lo)
		return 0;
	for (struct pc_seg *s = lo->segs; s; s = s->next)
		if (!s->dead)
			total += s->n;
	v = calloc(total ? total : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (s->dead)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			v[k].file_offset = s->ext[i].foff;
			v[k].length = s->ext[i].len;
			v[k].storage_offset = s->ext[i].soff;
			v[k].state = (enum pnfs_extent_state)s->ext[i].state;
			memcpy(v[k].deviceid, s->ext[i].dev->id, 16);
			v[k].rw = s->iomode == LAYOUTIOMODE4_RW;
			k++;
		}
	}
	{
		/* by file offset */
		for (size_t i = 1; i < k; i++)
			for (size_t j = i; j > 0 && v[j - 1].file_offset > v[j].file_offset; j--) {
				struct pnfs_extent t = v[j];
				v[j] = v[j - 1];
				v[j - 1] = t;
			}
	}
	*out = v;
	*n = k;
	return 0;
}

int pc_test_inject_segment(struct pnfs_fh *fh, uint64_t off, uint64_t len, layoutiomode4 iomode,
			   const struct pnfs_extent *ext, size_t n)
{
	struct pc_layout *lo = pc_layout_attach(fh);
	struct pc_ext *v;
	int rc;

	if (!lo)
		return -ENOMEM;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i].foff = ext[i].file_offset;
		v[i].len = ext[i].length;
		v[i].soff = ext[i].storage_offset;
		v[i].state = ext[i].state;
		v[i].dev = pc_device_obtain(fh->ctx, ext[i].deviceid, lo->type);
		if (!v[i].dev) {
			free(v);
			return -ENOMEM;
		}
	}
	rc = pc_seg_install(lo, off, len, iomode, v, n);
	if (rc < 0) {
		free(v);
		return rc;
	}
	if (!lo->have_sid) {
		/* A stateid nobody issued: the server rejects LAYOUTCOMMIT/RETURN with it (the tests check
		 * that failures are reported). */
		memset(&lo->sid, 0, sizeof(lo->sid));
		lo->sid.seqid = 1;
		memcpy(lo->sid.other, "pnfs-test-sid", 12);
		lo->have_sid = 1;
	}
	return 0;
}

int pc_test_dirty(struct pnfs_fh *fh, struct pnfs_extent **out, size_t *n)
{
	struct pc_layout *lo = fh->lo;
	struct pnfs_extent *v;

	*out = NULL;
	*n = 0;
	if (!lo)
		return 0;
	v = calloc(lo->ndirty + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < lo->ndirty; i++) {
		v[i].file_offset = lo->dirty[i].foff;
		v[i].length = lo->dirty[i].len;
		v[i].storage_offset = lo->dirty[i].soff;
		v[i].state = lo->dirty[i].invalid ? PNFS_EXT_INVALID : PNFS_EXT_READ_WRITE;
		memcpy(v[i].deviceid, lo->dirty[i].dev->id, 16);
		v[i].rw = 1;
	}
	*out = v;
	*n = lo->ndirty;
	return 0;
}
