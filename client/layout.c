/* The layout cache of a file and the operations on it: LAYOUTGET (one at a time per file, segments
 * installed as the server granted them), the list of ranges written and not yet committed (what
 * LAYOUTCOMMIT sends, batched: at fsync and close, on recall, or when it grows long), LAYOUTRETURN
 * (close, recall, truncate, abandon), and CB_LAYOUTRECALL / CB_RECALL_ANY: the range stops taking new
 * I/O, what is in flight drains, written extents are committed, the range is returned, and I/O
 * waiting on it asks for a new layout. Segments in use are never freed under a piece of I/O: a
 * replaced or returned segment is marked dead and freed when its last piece completes. */
#include "client/layout_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRYLATER_MAX 25
#define TRYLATER_DELAY_MS 200

static uint64_t end_of(uint64_t off, uint64_t len)
{
	return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

static uint64_t lo_blksize(struct pc_layout *lo)
{
	return lo->blksize ? lo->blksize : 4096;
}

/* ---- attach / free --------------------------------------------------------------------------- */

static void seg_free(struct pc_seg *s)
{
	free(s->ext);
	free(s);
}

static void kick_fire(struct pnfs_context *ctx, struct pc_timer *t);
static void recall_fire(struct pnfs_context *ctx, struct pc_timer *t);
static int segs_mark(struct pc_layout *lo, uint64_t off, uint64_t end, layoutiomode4 iomode);

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
		lo->recall_timer.fn = recall_fire;
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
		seg_free(s);
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
	while (lo->commit_waiters) {
		struct pc_waiter *w = lo->commit_waiters;
		lo->commit_waiters = w->next;
		free(w);
	}
	while (lo->get_waiters) {
		struct pc_waiter *w = lo->get_waiters;
		lo->get_waiters = w->next;
		free(w);
	}
	free(lo->dirty);
	free(lo->committing_list);
	free(lo);
}

/* Free the layout once nothing holds it: no open handle, waiting I/O or call of its own out. */
static void layout_maybe_free(struct pc_layout *lo)
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
	layout_maybe_free(lo);
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

/* ---- segments ------------------------------------------------------------------------------------ */

struct pc_seg *pc_layout_find(struct pc_layout *lo, uint64_t off, int write, int *recalled)
{
	struct pc_seg *best = NULL;

	*recalled = 0;
	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (s->dead || off < s->off || off >= s->end)
			continue;
		if (write && s->iomode != LAYOUTIOMODE4_RW)
			continue;
		if (s->recalled) {
			*recalled = 1;
			continue;
		}
		/* For reads a RW segment knows our writes; prefer it. */
		if (!best || (s->iomode == LAYOUTIOMODE4_RW && best->iomode != LAYOUTIOMODE4_RW))
			best = s;
	}
	return best;
}

/* A copy of s restricted to [a, b) (NULL when nothing of it remains). */
static struct pc_seg *seg_trim(const struct pc_seg *s, uint64_t a, uint64_t b)
{
	struct pc_seg *t;
	size_t k = 0;

	if (a < s->off)
		a = s->off;
	if (b > s->end)
		b = s->end;
	if (a >= b)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->off = a;
	t->end = b;
	t->iomode = s->iomode;
	t->recalled = s->recalled;
	t->ext = calloc(s->n ? s->n : 1, sizeof(*t->ext));
	if (!t->ext) {
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct pc_ext *e = &s->ext[i];
		uint64_t ea = e->foff, eb = end_of(e->foff, e->len);
		if (eb <= a || ea >= b)
			continue;
		t->ext[k] = *e;
		if (ea < a) {
			t->ext[k].soff += a - ea;
			t->ext[k].foff = a;
			ea = a;
		}
		if (eb > b)
			eb = b;
		t->ext[k].len = eb - ea;
		k++;
	}
	t->n = k;
	return t;
}

/* Take [a, b) out of the segments (those matching iomode; LAYOUTIOMODE4_ANY: all). Remaining parts
 * become new segments; the originals die. */
static void segs_cut(struct pc_layout *lo, uint64_t a, uint64_t b, layoutiomode4 iomode)
{
	struct pc_seg *add = NULL;

	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (s->dead || s->end <= a || s->off >= b)
			continue;
		if (iomode != LAYOUTIOMODE4_ANY && s->iomode != iomode)
			continue;
		struct pc_seg *l = seg_trim(s, s->off, a), *r = seg_trim(s, b, s->end);
		if (l) {
			l->next = add;
			add = l;
		}
		if (r) {
			r->next = add;
			add = r;
		}
		s->dead = 1;
	}
	while (add) {
		struct pc_seg *n = add->next;
		add->next = lo->segs;
		lo->segs = add;
		add = n;
	}
}

/* Free dead segments nothing uses. */
static void segs_reap(struct pc_layout *lo)
{
	struct pc_seg **pp = &lo->segs;

	while (*pp) {
		struct pc_seg *s = *pp;
		if (s->dead && s->inflight == 0) {
			*pp = s->next;
			seg_free(s);
		} else {
			pp = &s->next;
		}
	}
}

static int segs_live(struct pc_layout *lo)
{
	for (struct pc_seg *s = lo->segs; s; s = s->next)
		if (!s->dead)
			return 1;
	return 0;
}

static int ext_cmp(const void *a, const void *b)
{
	const struct pc_ext *x = a, *y = b;
	if (x->foff != y->foff)
		return x->foff < y->foff ? -1 : 1;
	/* READ_DATA (a copy-on-write source) after the extent it backs */
	return (int)(x->state == PNFS_BLOCK_READ_DATA) - (int)(y->state == PNFS_BLOCK_READ_DATA);
}

/* Install a granted segment: it replaces what we held for its range and iomode. */
static int seg_install(struct pc_layout *lo, uint64_t off, uint64_t len, layoutiomode4 iomode,
		       struct pc_ext *ext, size_t n)
{
	struct pc_seg *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->off = off;
	s->end = end_of(off, len);
	s->iomode = iomode;
	s->ext = ext;
	s->n = n;
	qsort(s->ext, n, sizeof(*s->ext), ext_cmp);
	segs_cut(lo, s->off, s->end, iomode);
	s->next = lo->segs;
	lo->segs = s;
	return 0;
}

void pc_layout_io_done(struct pc_layout *lo)
{
	segs_reap(lo);
	if (lo->recalls)
		pc_timer_arm(lo->ctx, &lo->recall_timer, 0);
}

/* ---- dirty ranges ------------------------------------------------------------------------------- */

static int dirty_state_in(const struct pc_dirty *d, size_t n, uint64_t a, uint64_t b)
{
	uint64_t covered = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t da = d[i].foff, db = d[i].foff + d[i].len;
		if (db <= a || da >= b)
			continue;
		covered += (db < b ? db : b) - (da > a ? da : a);
	}
	if (covered == 0)
		return 0;
	return covered == b - a ? 1 : -1;
}

int pc_dirty_state(struct pc_layout *lo, uint64_t foff, uint64_t len)
{
	uint64_t b = end_of(foff, len);
	int x = dirty_state_in(lo->dirty, lo->ndirty, foff, b);
	int y = dirty_state_in(lo->committing_list, lo->ncommitting, foff, b);

	if (x == 0)
		return y;
	if (y == 0)
		return x;
	/* In both lists (rewritten during a commit): covered if either covers it all; else partial. */
	return x == 1 || y == 1 ? 1 : -1;
}

static uint64_t boundary_in(const struct pc_dirty *d, size_t n, uint64_t foff, uint64_t limit)
{
	uint64_t next = limit;

	for (size_t i = 0; i < n; i++) {
		uint64_t da = d[i].foff, db = d[i].foff + d[i].len;
		if (foff >= da && foff < db) {
			if (db < next)
				next = db;
		} else if (da > foff && da < next) {
			next = da;
		}
	}
	return next;
}

uint64_t pc_dirty_boundary(struct pc_layout *lo, uint64_t foff, uint64_t limit)
{
	uint64_t a = boundary_in(lo->dirty, lo->ndirty, foff, limit);
	uint64_t b = boundary_in(lo->committing_list, lo->ncommitting, foff, limit);
	return a < b ? a : b;
}

void pc_dirty_add(struct pc_layout *lo, uint64_t foff, uint64_t len, uint64_t soff, struct pc_device *dev,
		  int invalid)
{
	uint64_t end = foff + len;
	size_t n = 0, cap = lo->ndirty + 2;
	struct pc_dirty *v = calloc(cap + 1, sizeof(*v));

	if (!v)
		return; /* the commit will miss it: reported then as data not committed */
	/* Keep what the new range does not cover, then insert it in order and merge neighbours. */
	for (size_t i = 0; i < lo->ndirty; i++) {
		struct pc_dirty e = lo->dirty[i];
		uint64_t ea = e.foff, eb = e.foff + e.len;
		if (eb <= foff || ea >= end) {
			v[n++] = e;
			continue;
		}
		if (ea < foff) {
			v[n] = e;
			v[n].len = foff - ea;
			n++;
		}
		if (eb > end) {
			v[n] = e;
			v[n].foff = end;
			v[n].soff = e.soff + (end - ea);
			v[n].len = eb - end;
			n++;
		}
	}
	{
		size_t pos = 0;
		while (pos < n && v[pos].foff < foff)
			pos++;
		memmove(&v[pos + 1], &v[pos], (n - pos) * sizeof(*v));
		v[pos] = (struct pc_dirty){ .foff = foff, .len = len, .soff = soff, .dev = dev, .invalid = invalid };
		n++;
	}
	{
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (k && v[k - 1].dev == v[i].dev && v[k - 1].invalid == v[i].invalid &&
			    v[k - 1].foff + v[k - 1].len == v[i].foff && v[k - 1].soff + v[k - 1].len == v[i].soff)
				v[k - 1].len += v[i].len;
			else
				v[k++] = v[i];
		}
		n = k;
	}
	free(lo->dirty);
	lo->dirty = v;
	lo->ndirty = n;
	lo->capdirty = cap + 1;
}

uint64_t pc_layout_dirty_end(struct pnfs_fh *fh)
{
	struct pc_layout *lo = fh->lo;
	uint64_t e = 0;

	/* The end of the caller's bytes, not of the zero-filled blocks around them. */
	if (!lo)
		return 0;
	if (lo->written)
		e = lo->write_end;
	if (lo->committing && lo->commit_write_end > e)
		e = lo->commit_write_end;
	return e;
}

/* ---- write locks ---------------------------------------------------------------------------------- */

int pc_lock_try(struct pc_layout *lo, uint64_t start, uint64_t end, struct pc_lock **out)
{
	struct pc_lock *l;

	for (l = lo->locks; l; l = l->next)
		if (l->start < end && start < l->end)
			return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->start = start;
	l->end = end;
	l->next = lo->locks;
	lo->locks = l;
	*out = l;
	return 1;
}

void pc_lock_release(struct pc_layout *lo, struct pc_lock *l)
{
	for (struct pc_lock **pp = &lo->locks; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			free(l);
			break;
		}
	pc_layout_kick(lo);
}

/* ---- stateids ------------------------------------------------------------------------------------ */

/* Take a layout stateid from a reply if it is newer than ours (RFC 8881 §12.5.3). */
static void sid_take(struct pc_layout *lo, const stateid4 *s)
{
	if (!lo->have_sid || memcmp(lo->sid.other, s->other, sizeof(s->other)) != 0 ||
	    (int32_t)(s->seqid - lo->sid.seqid) > 0) {
		lo->sid = *s;
		lo->have_sid = 1;
	}
}

static void sid_forget(struct pc_layout *lo)
{
	lo->have_sid = 0;
	for (struct pc_seg *s = lo->segs; s; s = s->next)
		s->dead = 1;
	segs_reap(lo);
}

/* ---- LAYOUTGET ---------------------------------------------------------------------------------- */

static struct pnfs_fh *any_fh(struct pc_layout *lo)
{
	for (struct pnfs_fh *fh = lo->ctx->files; fh; fh = fh->next)
		if (fh->lo == lo)
			return fh;
	return NULL;
}

/* A commit's failure is every open handle's to hear (once each, at its next fsync or close), not
 * only the one whose call started the commit: a recall's commit has no caller at all. */
static void sticky_all(struct pc_layout *lo, struct pnfs_fh *fh, const char *msg)
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
		ext[i].dev = pc_device_get(ctx, pe[i].vol_id, lo->type);
		if (!ext[i].dev) {
			free(ext);
			ext = NULL;
		}
	}
	free(pe);
	/* pc_device_get() makes an entry for a device id it has not seen (GETDEVICEINFO resolves it
	 * later), so a NULL from it, like one from calloc, is out of memory. */
	if (!ext)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ext[i].len == 0 || ext[i].state > PNFS_BLOCK_NONE_DATA) {
			rc = -EPROTO;
			goto fail_free;
		}
	rc = seg_install(lo, l->lo_offset, l->lo_length, l->lo_iomode, ext, n);
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

int pc_layout_on_get(struct pc_layout *lo, void (*fn)(struct pnfs_context *, void *), void *arg)
{
	struct pc_waiter *w = calloc(1, sizeof(*w)), **tail = &lo->get_waiters;

	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	return 0;
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
	struct pnfs_fh *fh = any_fh(lo);

	lo->getting = 0;
	if (c->status == 0 && r) {
		LAYOUTGET4resok *ok = &r->nfs_resop4_u.oplayoutget.LAYOUTGET4res_u.logr_resok4;
		int bad = 0;
		sid_take(lo, &ok->logr_stateid);
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
			lo->retry_timer.fn = retry_fire;
			lo->retry_timer.arg = lo;
			pc_timer_arm(ctx, &lo->retry_timer, TRYLATER_DELAY_MS);
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
			lo->retry_timer.fn = retry_fire;
			lo->retry_timer.arg = lo;
			pc_timer_arm(ctx, &lo->retry_timer, TRYLATER_DELAY_MS);
			result = 1;
			break;
		}
		lo->trylater = 0;
		/* fall through */
	case NFS4ERR_BAD_STATEID:
		if (lo->have_sid) {
			/* Our layout state is gone at the server: start again from the open stateid. */
			sid_forget(lo);
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
	layout_maybe_free(lo);
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
	layout_maybe_free(lo);
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
	layout_maybe_free(lo);
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
			struct pnfs_fh *fh = cr->fh ? cr->fh : any_fh(lo);
			char msg[800];
			snprintf(msg, sizeof(msg), "%s: LAYOUTCOMMIT%s failed (%s): writes through the layout up to offset "
				 "%llu (%llu bytes in new blocks) may be lost", fh ? pc_path_show(ctx, fh->path) : "file",
				 cr->reclaim ? " reclaim after the server restarted" : "",
				 c->have_res ? proto_nfsstat4_name(c->nfs_status) : strerror(-c->status),
				 (unsigned long long)cr->write_end,
				 (unsigned long long)bytes);
			sticky_all(lo, cr->fh, msg);
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
		struct pnfs_fh *fh = cr->fh ? cr->fh : any_fh(cr->lo);
		snprintf(msg, sizeof(msg), "%s: cannot make the writes through the layout stable (%s); LAYOUTCOMMIT "
			 "not sent, writes up to offset %llu may be lost", fh ? pc_path_show(ctx, fh->path) : "file",
			 cr->flush_msg, (unsigned long long)cr->write_end);
	}
	sticky_all(cr->lo, cr->fh, msg);
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
		free(lo->dirty);
		lo->dirty = NULL;
		lo->ndirty = 0;
		lo->written = 0;
		return -ENOENT;
	}
	cr = calloc(1, sizeof(*cr));
	if (!cr)
		return -ENOMEM;
	cr->lo = lo;
	cr->fh = fh;
	cr->cb = cb;
	cr->arg = arg;
	cr->reclaim = reclaim;
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

static int commit_start(struct pc_layout *lo, struct pnfs_fh *fh, pc_io_cb cb, void *arg)
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
	int rc = ca->fh->lo ? commit_start(ca->fh->lo, ca->fh, ca->cb, ca->arg) : -ENOENT;

	if (rc == -EBUSY) {
		/* Another commit started first: wait for that one too. */
		struct pc_waiter *w = calloc(1, sizeof(*w));
		if (w) {
			w->fn = commit_after_running;
			w->arg = ca;
			w->next = ca->fh->lo->commit_waiters;
			ca->fh->lo->commit_waiters = w;
			return;
		}
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
	rc = lo->committing ? -EBUSY : commit_start(lo, fh, cb, arg);
	if (rc == -EBUSY) {
		struct commit_again *ca = calloc(1, sizeof(*ca));
		struct pc_waiter *w = calloc(1, sizeof(*w));
		if (!ca || !w) {
			free(ca);
			free(w);
			return -ENOMEM;
		}
		ca->fh = fh;
		ca->cb = cb;
		ca->arg = arg;
		w->fn = commit_after_running;
		w->arg = ca;
		w->next = lo->commit_waiters;
		lo->commit_waiters = w;
		return 0;
	}
	return rc;
}

void pc_layout_maybe_commit(struct pc_layout *lo, struct pnfs_fh *fh)
{
	if (lo->ndirty > PC_DIRTY_SOFT_MAX && !lo->committing)
		commit_start(lo, fh, NULL, NULL);
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
	sticky_all(lo, fh, msg);
	free(lo->dirty);
	lo->dirty = NULL;
	lo->ndirty = 0;
	lo->written = 0;
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
	sid_forget(lo);
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
			sid_take(lo, &r->nfs_resop4_u.oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid
					       .layoutreturn_stateid_u.lrs_stateid);
		else
			lo->have_sid = 0;
		segs_cut(lo, rr->off, end_of(rr->off, rr->len), rr->iomode);
		if (!lo->have_sid)
			sid_forget(lo);
	} else if (c->nfs_status == NFS4ERR_NOMATCHING_LAYOUT || c->nfs_status == NFS4ERR_BAD_STATEID ||
		   c->nfs_status == NFS4ERR_OLD_STATEID || c->nfs_status == NFS4ERR_STALE ||
		   c->nfs_status == NFS4ERR_EXPIRED) {
		/* Nothing of ours left there. */
		segs_cut(lo, rr->off, end_of(rr->off, rr->len), rr->iomode);
		if (c->nfs_status != NFS4ERR_NOMATCHING_LAYOUT || !segs_live(lo))
			sid_forget(lo);
	} else {
		status = pc_compound_err(c);
		/* STALE_STATEID: a layout of the server's earlier boot, gone with it; nothing to tell. */
		if (c->nfs_status == NFS4ERR_STALE_STATEID)
			LOG_DEBUG("pnfs: %s", ctx->err);
		else
			LOG_WARN("pnfs: %s", ctx->err);
		/* Do not use it again either way. */
		segs_cut(lo, rr->off, end_of(rr->off, rr->len), rr->iomode);
	}
	segs_reap(lo);
	pc_compound_free(c);
	if (rr->cb)
		rr->cb(ctx, status, rr->arg);
	free(rr);
	if (lo->recalls)
		pc_timer_arm(ctx, &lo->recall_timer, 0);
	pc_layout_kick(lo);
	layout_maybe_free(lo);
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
	segs_mark(lo, off, end_of(off, len), iomode);
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
	free(lo->dirty);
	lo->dirty = NULL;
	lo->ndirty = 0;
	lo->written = 0;
	lo->epoch++;
	sid_forget(lo);
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
	segs_cut(lo, from, UINT64_MAX, LAYOUTIOMODE4_ANY);
	segs_reap(lo);
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

static void recall_fire(struct pnfs_context *ctx, struct pc_timer *t)
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
		if (commit_start(lo, any_fh(lo), recall_commit_done, lo) == 0)
			return;
	}
	lo->recalls = r->next;
	if (!lo->have_sid) {
		segs_cut(lo, r->off, end_of(r->off, r->len), r->iomode);
		free(r);
		pc_layout_kick(lo);
		if (lo->recalls)
			pc_timer_arm(ctx, &lo->recall_timer, 0);
		return;
	}
	if (return_send(lo, r->off, r->len, r->iomode, recall_return_done, lo) < 0) {
		segs_cut(lo, r->off, end_of(r->off, r->len), r->iomode);
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
static int segs_mark(struct pc_layout *lo, uint64_t off, uint64_t end, layoutiomode4 iomode)
{
	int hit = 0;
	struct pc_seg *add = NULL;

	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (s->dead || s->end <= off || s->off >= end)
			continue;
		if (iomode != LAYOUTIOMODE4_ANY && s->iomode != iomode)
			continue;
		hit = 1;
		if (!s->recalled && (s->off < off || s->end > end)) {
			struct pc_seg *l = seg_trim(s, s->off, off), *m = seg_trim(s, off, end),
				      *r = seg_trim(s, end, s->end);
			if (m && (l || s->off >= off) && (r || s->end <= end)) {
				m->recalled = 1;
				m->next = add;
				add = m;
				if (l) {
					l->next = add;
					add = l;
				}
				if (r) {
					r->next = add;
					add = r;
				}
				s->dead = 1; /* freed when its pieces in flight end; waited for as recalled */
			} else {
				if (m)
					seg_free(m);
				if (l)
					seg_free(l);
				if (r)
					seg_free(r);
			}
		}
		s->recalled = 1;
	}
	while (add) {
		struct pc_seg *n = add->next;
		add->next = lo->segs;
		lo->segs = add;
		add = n;
	}
	segs_reap(lo);
	return hit;
}

static int recall_mark(struct pc_layout *lo, uint64_t off, uint64_t len, layoutiomode4 iomode)
{
	struct pc_recall *r, **pp;
	int hit = segs_mark(lo, off, end_of(off, len), iomode);

	if (!hit && !(lo->ndirty || lo->written))
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->off = off;
	r->len = len;
	r->iomode = iomode;
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
		LOG_INFO("pnfs: layout recall for %s, %llu+%llu", any_fh(lo) ? pc_path_show(ctx, any_fh(lo)->path) : "?",
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
		v[i].dev = pc_device_get(fh->ctx, ext[i].deviceid, lo->type);
		if (!v[i].dev) {
			free(v);
			return -ENOMEM;
		}
	}
	rc = seg_install(lo, off, len, iomode, v, n);
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
