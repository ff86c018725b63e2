/* Free space of the pool volume and pending (deferred) frees. Free extents live in two LMDB
 * databases kept in step: by offset (coalescing neighbours on free) and by (length, offset)
 * (best fit is one cursor seek). Pending pieces are freed blocks parked until no layout covers them. */
#include "mds/store_int.h"

#include "proto/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cursor_open(struct mds_txn *t, MDB_dbi dbi, MDB_cursor **c)
{
	int rc = mdb_cursor_open(t->txn, dbi, c);

	return rc ? st_lmdb_err(t->st, rc, "mdb_cursor_open") : 0;
}

/* A cursor step that maps "no such entry" to 1 and LMDB failures to -errno. */
static int cursor_step(struct mds_txn *t, MDB_cursor *c, MDB_val *k, MDB_val *v, MDB_cursor_op op)
{
	int rc = mdb_cursor_get(c, k, v, op);

	if (rc == MDB_NOTFOUND)
		return 1;
	return rc ? st_lmdb_err(t->st, rc, "mdb_cursor_get") : 0;
}

static int free_insert(struct mds_txn *t, uint64_t off, uint64_t len)
{
	uint8_t k[16], v[8];
	int rc;

	be64_put(k, off);
	be64_put(v, len);
	rc = st_write(t, t->st->free_off, k, 8, v, 8, MDB_NOOVERWRITE, "free_off put");
	if (rc == -EEXIST)
		return st_fail(t->st, -EUCLEAN, "free space: extent at %llu already present",
			       (unsigned long long)off);
	if (rc)
		return rc;
	be64_put(k, len);
	be64_put(k + 8, off);
	rc = st_write(t, t->st->free_len, k, 16, "", 0, MDB_NOOVERWRITE, "free_len put");
	if (rc == -EEXIST)
		return st_fail(t->st, -EUCLEAN, "free space: length index already has %llu+%llu",
			       (unsigned long long)off, (unsigned long long)len);
	return rc;
}

static int free_remove(struct mds_txn *t, uint64_t off, uint64_t len)
{
	uint8_t k[16];
	int rc;

	be64_put(k, off);
	rc = st_del(t, t->st->free_off, k, 8, "free_off del");
	if (!rc) {
		be64_put(k, len);
		be64_put(k + 8, off);
		rc = st_del(t, t->st->free_len, k, 16, "free_len del");
	}
	if (rc == -ENOENT)
		return st_fail(t->st, -EUCLEAN, "free space: indexes disagree on %llu+%llu",
			       (unsigned long long)off, (unsigned long long)len);
	return rc;
}

static int range_ok(struct mds_txn *t, uint64_t off, uint64_t len)
{
	const struct mds_store_format *f = &t->st->fmt;

	if (!len || off % f->block_bytes || len % f->block_bytes || off >= f->volume_bytes ||
	    len > f->volume_bytes - off)
		return st_fail(t->st, -EINVAL, "volume range %llu+%llu invalid",
			       (unsigned long long)off, (unsigned long long)len);
	return 0;
}

int st_space_free(struct mds_txn *t, uint64_t off, uint64_t len)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[8];
	uint64_t noff = off, nlen = len;
	uint64_t roff = 0, rlen = 0, loff = 0, llen = 0;
	int have_r = 0, have_l = 0;
	int rc = range_ok(t, off, len);

	if (rc)
		return rc;
	rc = cursor_open(t, t->st->free_off, &c);
	if (rc)
		return rc;
	be64_put(kb, off);
	k.mv_size = 8;
	k.mv_data = kb;
	rc = cursor_step(t, c, &k, &v, MDB_SET_RANGE);
	if (rc < 0)
		goto out;
	if (rc == 0) {
		roff = be64_get(k.mv_data);
		rlen = be64_get(v.mv_data);
		if (roff < off + len) {
			rc = st_fail(t->st, -EUCLEAN, "free of %llu+%llu overlaps free %llu+%llu",
				     (unsigned long long)off, (unsigned long long)len,
				     (unsigned long long)roff, (unsigned long long)rlen);
			goto out;
		}
		have_r = roff == off + len;
		rc = cursor_step(t, c, &k, &v, MDB_PREV);
	} else {
		rc = cursor_step(t, c, &k, &v, MDB_LAST);
	}
	if (rc < 0)
		goto out;
	if (rc == 0) {
		loff = be64_get(k.mv_data);
		llen = be64_get(v.mv_data);
		if (loff + llen > off) {
			rc = st_fail(t->st, -EUCLEAN, "free of %llu+%llu overlaps free %llu+%llu",
				     (unsigned long long)off, (unsigned long long)len,
				     (unsigned long long)loff, (unsigned long long)llen);
			goto out;
		}
		have_l = loff + llen == off;
	}
	mdb_cursor_close(c);
	c = NULL;
	if (have_l) {
		rc = free_remove(t, loff, llen);
		if (rc)
			goto out;
		noff = loff;
		nlen += llen;
	}
	if (have_r) {
		rc = free_remove(t, roff, rlen);
		if (rc)
			goto out;
		nlen += rlen;
	}
	rc = free_insert(t, noff, nlen);
	if (!rc)
		rc = st_meta_add(t, META_FREE, (int64_t)len);
out:
	if (c)
		mdb_cursor_close(c);
	return rc;
}

/* Take [poff, poff+plen) out of the free extent [foff, foff+flen) that contains it. */
static int take(struct mds_txn *t, uint64_t foff, uint64_t flen, uint64_t poff, uint64_t plen,
		struct mds_ranges *out)
{
	int rc = free_remove(t, foff, flen);

	if (!rc && poff > foff)
		rc = free_insert(t, foff, poff - foff);
	if (!rc && poff + plen < foff + flen)
		rc = free_insert(t, poff + plen, foff + flen - poff - plen);
	if (!rc)
		rc = st_meta_add(t, META_FREE, -(int64_t)plen);
	if (!rc)
		rc = st_ranges_add(out, poff, plen);
	return rc;
}

static uint64_t align_phase(uint64_t off, uint64_t a, uint64_t phase)
{
	uint64_t r = off % a;

	phase %= a;
	return off + (phase + a - r) % a;
}

/* The free extent containing vol offset x: 0 and its bounds, 1 if x is not free. */
static int free_containing(struct mds_txn *t, uint64_t x, uint64_t *foff, uint64_t *flen)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[8];
	int rc = cursor_open(t, t->st->free_off, &c);

	if (rc)
		return rc;
	be64_put(kb, x);
	k.mv_size = 8;
	k.mv_data = kb;
	rc = cursor_step(t, c, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && be64_get(k.mv_data) != x)
		rc = cursor_step(t, c, &k, &v, MDB_PREV);
	else if (rc == 1)
		rc = cursor_step(t, c, &k, &v, MDB_LAST);
	if (rc == 0) {
		*foff = be64_get(k.mv_data);
		*flen = be64_get(v.mv_data);
		if (!(*foff <= x && x < *foff + *flen))
			rc = 1;
	}
	mdb_cursor_close(c);
	return rc;
}

#define FIT_SCAN 32

/* Best fit for len at an offset congruent to phase modulo a: the smallest free extents first.
 * 0 with the extent and start, 1 if none, -errno. */
static int find_fit(struct mds_txn *t, uint64_t len, uint64_t a, uint64_t phase, uint64_t *foff,
		    uint64_t *flen, uint64_t *start)
{
	uint64_t bs = t->st->fmt.block_bytes;
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[16];
	int rc = cursor_open(t, t->st->free_len, &c);

	if (rc)
		return rc;
	for (int pass = 0; pass < 2; pass++) {
		/* First the smallest extents that could fit; then ones big enough to fit whatever
		 * their alignment, so the second pass's first candidate always fits. */
		uint64_t want = pass == 0 ? len : len + a - bs;
		if (pass == 1 && a == bs)
			break;
		be64_put(kb, want);
		be64_put(kb + 8, 0);
		k.mv_size = 16;
		k.mv_data = kb;
		rc = cursor_step(t, c, &k, &v, MDB_SET_RANGE);
		for (int n = 0; rc == 0 && n < FIT_SCAN; n++) {
			uint64_t l = be64_get(k.mv_data), o = be64_get((uint8_t *)k.mv_data + 8);
			uint64_t s = align_phase(o, a, phase);
			if (s + len <= o + l) {
				*foff = o;
				*flen = l;
				*start = s;
				goto out;
			}
			rc = cursor_step(t, c, &k, &v, MDB_NEXT);
		}
		if (rc < 0)
			goto out;
	}
	rc = 1;
out:
	mdb_cursor_close(c);
	return rc;
}

static int largest_free(struct mds_txn *t, uint64_t *foff, uint64_t *flen)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc = cursor_open(t, t->st->free_len, &c);

	if (rc)
		return rc;
	rc = cursor_step(t, c, &k, &v, MDB_LAST);
	if (rc == 0) {
		*flen = be64_get(k.mv_data);
		*foff = be64_get((uint8_t *)k.mv_data + 8);
	}
	mdb_cursor_close(c);
	return rc;
}

int st_space_alloc(struct mds_txn *t, uint64_t len, uint64_t pref, uint64_t phase, uint64_t hint,
		   struct mds_ranges *out)
{
	uint64_t bs = t->st->fmt.block_bytes;
	uint64_t free_bytes, remaining = len, foff, flen, s;
	int rc;

	if (!len || len % bs)
		return st_fail(t->st, -EINVAL, "allocation of %llu bytes", (unsigned long long)len);
	if (pref < bs || pref % bs)
		pref = bs;
	phase -= phase % bs;
	rc = st_meta_u64(t, META_FREE, &free_bytes);
	if (rc)
		return rc;
	if (free_bytes < len)
		return st_fail(t->st, -ENOSPC, "volume full: %llu bytes wanted, %llu free",
			       (unsigned long long)len, (unsigned long long)free_bytes);
	/* Contiguous with what precedes it in the file, as far as the free extent there goes. */
	if (hint != ST_NO_HINT && hint % bs == 0) {
		rc = free_containing(t, hint, &foff, &flen);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			uint64_t piece = foff + flen - hint;
			if (piece > remaining)
				piece = remaining;
			rc = take(t, foff, flen, hint, piece, out);
			if (rc)
				return rc;
			remaining -= piece;
			phase += piece;
		}
	}
	while (remaining) {
		/* Requests of a stripe unit or more keep the stripe phase (volume offset congruent to
		 * the file offset) so whole-unit I/O maps to whole units; smaller ones are packed. */
		rc = 1;
		if (pref != bs && remaining >= pref)
			rc = find_fit(t, remaining, pref, phase, &foff, &flen, &s);
		if (rc == 1)
			rc = find_fit(t, remaining, bs, 0, &foff, &flen, &s);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return take(t, foff, flen, s, remaining, out);
		/* Fragmented: the biggest piece there is, then the rest. */
		rc = largest_free(t, &foff, &flen);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return st_fail(t->st, -EUCLEAN, "free space empty while %llu bytes counted free",
				       (unsigned long long)free_bytes);
		if (flen > remaining)
			return st_fail(t->st, -EUCLEAN, "free extent %llu+%llu fits but was not found",
				       (unsigned long long)foff, (unsigned long long)flen);
		rc = take(t, foff, flen, foff, flen, out);
		if (rc)
			return rc;
		remaining -= flen;
		phase += flen;
	}
	return 0;
}

/* ---- pending ------------------------------------------------------------------------------ */

static int pending_write(struct mds_txn *t, uint64_t off, uint64_t len, uint64_t fileid)
{
	uint8_t k[8], v[16];

	be64_put(k, off);
	be64_put(v, len);
	be64_put(v + 8, fileid);
	return st_write(t, t->st->pending, k, 8, v, 16, 0, "pending put");
}

static int pending_del(struct mds_txn *t, uint64_t off)
{
	uint8_t k[8];

	be64_put(k, off);
	return st_del(t, t->st->pending, k, 8, "pending del");
}

struct piece {
	uint64_t off, len, fileid;
};
struct pieces {
	size_t n, cap;
	struct piece *v;
};

static int pieces_add(struct pieces *p, uint64_t off, uint64_t len, uint64_t fileid)
{
	if (proto_grow(&p->v, p->n, &p->cap, sizeof(*p->v), 16))
		return -ENOMEM;
	p->v[p->n++] = (struct piece){ off, len, fileid };
	return 0;
}

/* Pending pieces overlapping [off, off+len) (len 0: all of them), in volume order. */
static int pending_collect(struct mds_txn *t, uint64_t off, uint64_t len, struct pieces *out)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[8];
	int rc = cursor_open(t, t->st->pending, &c);

	if (rc)
		return rc;
	if (len == 0) {
		rc = cursor_step(t, c, &k, &v, MDB_FIRST);
	} else {
		/* Start from the piece before off: it may reach into the range. */
		be64_put(kb, off);
		k.mv_size = 8;
		k.mv_data = kb;
		rc = cursor_step(t, c, &k, &v, MDB_SET_RANGE);
		if (rc == 0 && be64_get(k.mv_data) > off) {
			rc = cursor_step(t, c, &k, &v, MDB_PREV);
			if (rc == 1)
				rc = cursor_step(t, c, &k, &v, MDB_FIRST);
		} else if (rc == 1) {
			rc = cursor_step(t, c, &k, &v, MDB_LAST);
		}
	}
	while (rc == 0) {
		uint64_t po = be64_get(k.mv_data), pl, pf;
		if (v.mv_size != 16) {
			rc = st_fail(t->st, -EUCLEAN, "pending record at %llu malformed",
				     (unsigned long long)po);
			break;
		}
		pl = be64_get(v.mv_data);
		pf = be64_get((uint8_t *)v.mv_data + 8);
		if (len && po >= off + len)
			break;
		if (!len || po + pl > off) {
			rc = pieces_add(out, po, pl, pf);
			if (rc)
				break;
		}
		rc = cursor_step(t, c, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(c);
	return rc < 0 ? rc : 0;
}

int st_pending_park(struct mds_txn *t, uint64_t off, uint64_t len, uint64_t fileid)
{
	struct pieces p = { 0 };
	uint64_t noff = off, nlen = len;
	int rc = range_ok(t, off, len);

	if (rc)
		return rc;
	/* Neighbours too: a piece ending at off or starting at off+len of the same file merges. */
	rc = pending_collect(t, off ? off - 1 : 0, len + (off ? 2 : 1), &p);
	if (rc)
		goto out;
	for (size_t i = 0; i < p.n; i++) {
		struct piece *q = &p.v[i];
		if (q->off < off + len && q->off + q->len > off) {
			rc = st_fail(t->st, -EUCLEAN, "pending %llu+%llu overlaps pending %llu+%llu",
				     (unsigned long long)off, (unsigned long long)len,
				     (unsigned long long)q->off, (unsigned long long)q->len);
			goto out;
		}
		if (q->fileid != fileid)
			continue;
		if (q->off + q->len == off || q->off == off + len) {
			rc = pending_del(t, q->off);
			if (rc)
				goto out;
			if (q->off < noff)
				noff = q->off;
			nlen += q->len;
		}
	}
	rc = pending_write(t, noff, nlen, fileid);
	if (!rc)
		rc = st_meta_add(t, META_PENDING, (int64_t)len);
out:
	free(p.v);
	return rc;
}

/* Release the part [off, off+len) of piece q. */
static int release_part(struct mds_txn *t, const struct piece *q, uint64_t off, uint64_t len)
{
	int rc = pending_del(t, q->off);

	if (!rc && q->off < off)
		rc = pending_write(t, q->off, off - q->off, q->fileid);
	if (!rc && off + len < q->off + q->len)
		rc = pending_write(t, off + len, q->off + q->len - off - len, q->fileid);
	if (!rc)
		rc = st_meta_add(t, META_PENDING, -(int64_t)len);
	if (!rc)
		rc = st_space_free(t, off, len);
	return rc;
}

int mds_pending_release(struct mds_txn *t, uint64_t off, uint64_t len)
{
	struct pieces p = { 0 };
	MDB_txn *saved;
	uint64_t at = off;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = range_ok(t, off, len);
	if (!rc)
		rc = pending_collect(t, off, len, &p);
	if (rc)
		goto out;
	for (size_t i = 0; i < p.n; i++) {
		if (p.v[i].off > at)
			break;
		at = p.v[i].off + p.v[i].len;
	}
	if (at < off + len) {
		rc = st_fail(t->st, -ENOENT, "volume range %llu+%llu is not wholly pending",
			     (unsigned long long)off, (unsigned long long)len);
		goto out;
	}
	for (size_t i = 0; !rc && i < p.n; i++) {
		uint64_t s = p.v[i].off > off ? p.v[i].off : off;
		uint64_t e = p.v[i].off + p.v[i].len < off + len ? p.v[i].off + p.v[i].len : off + len;
		rc = release_part(t, &p.v[i], s, e - s);
	}
out:
	free(p.v);
	return st_op_end(t, saved, rc);
}

static int release_where(struct mds_txn *t, int all, uint64_t fileid, uint64_t *bytes)
{
	struct pieces p = { 0 };
	MDB_txn *saved;
	uint64_t sum = 0;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = pending_collect(t, 0, 0, &p);
	for (size_t i = 0; !rc && i < p.n; i++) {
		if (!all && p.v[i].fileid != fileid)
			continue;
		rc = release_part(t, &p.v[i], p.v[i].off, p.v[i].len);
		sum += p.v[i].len;
	}
	free(p.v);
	rc = st_op_end(t, saved, rc);
	if (!rc && bytes)
		*bytes = sum;
	return rc;
}

int mds_pending_release_file(struct mds_txn *t, uint64_t fileid, uint64_t *bytes)
{
	return release_where(t, 0, fileid, bytes);
}

int mds_pending_release_all(struct mds_txn *t, uint64_t *bytes)
{
	return release_where(t, 1, 0, bytes);
}

int mds_pending_iter(struct mds_txn *t,
		     int (*cb)(void *arg, uint64_t vol_off, uint64_t len, uint64_t fileid), void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc = cursor_open(t, t->st->pending, &c);

	if (rc)
		return rc;
	for (rc = cursor_step(t, c, &k, &v, MDB_FIRST); rc == 0; rc = cursor_step(t, c, &k, &v, MDB_NEXT)) {
		int r;
		if (v.mv_size != 16) {
			rc = st_fail(t->st, -EUCLEAN, "pending record malformed");
			break;
		}
		r = cb(arg, be64_get(k.mv_data), be64_get(v.mv_data), be64_get((uint8_t *)v.mv_data + 8));
		if (r) {
			mdb_cursor_close(c);
			return r;
		}
	}
	mdb_cursor_close(c);
	return rc < 0 ? rc : 0;
}
