/* A layout's segments (the ranges the server granted, each a sorted array of extents), the list of
 * ranges written through them and not yet committed, and the write locks on layout blocks. A
 * segment that is replaced, cut or returned dies and is freed once no piece of I/O uses it. */
#include "client/layout_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pc_seg_free(struct pc_seg *s)
{
	free(s->ext);
	free(s);
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
struct pc_seg *pc_seg_trim(const struct pc_seg *s, uint64_t a, uint64_t b)
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
void pc_segs_cut(struct pc_layout *lo, uint64_t a, uint64_t b, layoutiomode4 iomode)
{
	struct pc_seg *add = NULL;

	for (struct pc_seg *s = lo->segs; s; s = s->next) {
		if (!pc_seg_meets(s, a, b, iomode))
			continue;
		pc_seg_push(&add, pc_seg_trim(s, s->off, a));
		pc_seg_push(&add, pc_seg_trim(s, b, s->end));
		s->dead = 1;
	}
	pc_segs_adopt(lo, add);
}

void pc_segs_adopt(struct pc_layout *lo, struct pc_seg *add)
{
	while (add) {
		struct pc_seg *n = add->next;
		add->next = lo->segs;
		lo->segs = add;
		add = n;
	}
}

/* Free dead segments nothing uses. */
void pc_segs_reap(struct pc_layout *lo)
{
	struct pc_seg **pp = &lo->segs;

	while (*pp) {
		struct pc_seg *s = *pp;
		if (s->dead && s->inflight == 0) {
			*pp = s->next;
			pc_seg_free(s);
		} else {
			pp = &s->next;
		}
	}
}

int pc_segs_live(struct pc_layout *lo)
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
int pc_seg_install(struct pc_layout *lo, uint64_t off, uint64_t len, layoutiomode4 iomode,
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
	pc_segs_cut(lo, s->off, s->end, iomode);
	s->next = lo->segs;
	lo->segs = s;
	return 0;
}

void pc_layout_io_done(struct pc_layout *lo)
{
	pc_segs_reap(lo);
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

void pc_dirty_drop(struct pc_layout *lo)
{
	free(lo->dirty);
	lo->dirty = NULL;
	lo->ndirty = 0;
	lo->written = 0;
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
	l = malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (struct pc_lock){ .next = lo->locks, .pprev = &lo->locks, .start = start, .end = end };
	if (lo->locks)
		lo->locks->pprev = &l->next;
	lo->locks = l;
	*out = l;
	return 1;
}

/* Not a walk of the list: with 128 writes in flight that walk was libpnfs's costliest function. */
void pc_lock_release(struct pc_layout *lo, struct pc_lock *l)
{
	*l->pprev = l->next;
	if (l->next)
		l->next->pprev = l->pprev;
	free(l);
	pc_layout_kick(lo);
}
