/* Extent maps: file offset -> (volume offset, length, RFC 5663 state), keyed by big-endian
 * (fileid, file offset) so the first extent of a range is one cursor seek away. Every change loads
 * the window of extents it touches plus both file-contiguous neighbours, computes the new window
 * (split, allocated, re-stated or punched), merges what can merge, and writes the window back. */
#include "mds/store_int.h"

#include "proto/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* File offsets stay below 2^63 (NFSv4's largest file size is a signed 64-bit quantity). */
#define EXT_FILE_MAX (1ull << 63)

struct evec {
	size_t n, cap;
	struct mds_extent *v;
};

static int evec_push(struct evec *e, const struct mds_extent *x)
{
	if (proto_grow(&e->v, e->n, &e->cap, sizeof(*e->v), 16))
		return -ENOMEM;
	e->v[e->n++] = *x;
	return 0;
}

/* Append, merging with the last piece when file, volume and state all continue it. */
static int evec_add(struct evec *e, uint64_t foff, uint64_t voff, uint64_t len,
		    enum mds_ext_state state)
{
	struct mds_extent x = { foff, voff, len, state };

	if (!len)
		return 0;
	if (e->n) {
		struct mds_extent *l = &e->v[e->n - 1];
		if (l->file_off + l->len == foff && l->vol_off + l->len == voff && l->state == state) {
			l->len += len;
			return 0;
		}
	}
	return evec_push(e, &x);
}

static void ext_key(uint8_t *k, uint64_t fileid, uint64_t off)
{
	be64_put(k, fileid);
	be64_put(k + 8, off);
}

static int ext_decode(struct mds_txn *t, const MDB_val *k, const MDB_val *v, uint64_t fileid,
		      struct mds_extent *x)
{
	const uint8_t *p = v->mv_data;

	if (k->mv_size != 16 || be64_get(k->mv_data) != fileid)
		return 1;
	if (v->mv_size != 17 || p[16] > MDS_EXT_INVALID || !be64_get(p + 8))
		return st_fail(t->st, -EUCLEAN, "file %llu: extent record malformed",
			       (unsigned long long)fileid);
	x->file_off = be64_get((uint8_t *)k->mv_data + 8);
	x->vol_off = be64_get(p);
	x->len = be64_get(p + 8);
	x->state = (enum mds_ext_state)p[16];
	return 0;
}

/* Position c on the first extent of fileid ending after off (the one containing off, or the next);
 * 0 with *x, 1 if none, -errno. One B-tree descent: the seek finds the first key at or after off,
 * a step back looks at the extent before it (which may reach over off), a step forward returns. */
static int ext_seek(struct mds_txn *t, MDB_cursor *c, uint64_t fileid, uint64_t off,
		    struct mds_extent *x)
{
	uint8_t kb[16];
	MDB_val k = { 16, kb }, v, pk, pv;
	struct mds_extent found, px;
	int have_found, rc, prc, d;

	ext_key(kb, fileid, off);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	if (rc && rc != MDB_NOTFOUND)
		return st_lmdb_err(t->st, rc, "mdb_cursor_get");
	have_found = 0;
	if (rc == 0) {
		d = ext_decode(t, &k, &v, fileid, &found);
		if (d < 0)
			return d;
		have_found = d == 0;
		if (have_found && found.file_off == off) {
			*x = found;
			return 0;
		}
	}
	prc = mdb_cursor_get(c, &pk, &pv, rc == 0 ? MDB_PREV : MDB_LAST);
	if (prc && prc != MDB_NOTFOUND)
		return st_lmdb_err(t->st, prc, "mdb_cursor_get");
	if (prc == 0) {
		d = ext_decode(t, &pk, &pv, fileid, &px);
		if (d < 0)
			return d;
		if (d == 0 && px.file_off + px.len > off) {
			*x = px;
			return 0;
		}
	}
	if (!have_found)
		return 1;
	/* Back to the extent the seek found; re-seek if the step back left the cursor nowhere. */
	if (prc == 0)
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	else {
		k.mv_size = 16;
		k.mv_data = kb;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	}
	if (rc)
		return st_lmdb_err(t->st, rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc, "mdb_cursor_get");
	*x = found;
	return 0;
}

static int ext_next(struct mds_txn *t, MDB_cursor *c, uint64_t fileid, struct mds_extent *x)
{
	MDB_val k, v;
	int rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);

	if (rc == MDB_NOTFOUND)
		return 1;
	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_get");
	return ext_decode(t, &k, &v, fileid, x);
}

static int get_reg(struct mds_txn *t, uint64_t fileid, struct mds_inode *ino)
{
	int rc = st_inode_read(t, fileid, ino, NULL, NULL);

	if (rc)
		return rc;
	if (ino->type != MDS_FT_REG)
		return ino->type == MDS_FT_DIR ? -EISDIR : -EINVAL;
	return 0;
}

/* [off, off+len) as [*a, *b): block-aligned, below EXT_FILE_MAX; MDS_TO_END reaches the maximum. */
static int ext_range(struct mds_txn *t, uint64_t off, uint64_t len, int to_end_ok, uint64_t *a,
		     uint64_t *b)
{
	uint64_t bs = t->st->fmt.block_bytes;

	if (len == MDS_TO_END && to_end_ok && off < EXT_FILE_MAX && off % bs == 0) {
		*a = off;
		*b = EXT_FILE_MAX;
		return 0;
	}
	if (!len || off % bs || len % bs || off >= EXT_FILE_MAX || len > EXT_FILE_MAX - off)
		return st_fail(t->st, -EINVAL, "file range %llu+%llu invalid (block size %llu)",
			       (unsigned long long)off, (unsigned long long)len,
			       (unsigned long long)bs);
	*a = off;
	*b = off + len;
	return 0;
}

/* The window for a change of [a, b): the extents overlapping it plus the neighbours that end at a
 * or start at b (they may merge). */
static int ext_window(struct mds_txn *t, uint64_t fileid, uint64_t a, uint64_t b, struct evec *w)
{
	MDB_cursor *c;
	struct mds_extent x;
	int rc = mdb_cursor_open(t->txn, t->st->extents, &c);

	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_open");
	rc = ext_seek(t, c, fileid, a ? a - 1 : 0, &x);
	while (rc == 0 && x.file_off <= b) {
		if (x.file_off + x.len >= a || a == 0) {
			rc = evec_push(w, &x);
			if (rc)
				break;
		}
		rc = ext_next(t, c, fileid, &x);
	}
	mdb_cursor_close(c);
	return rc < 0 ? rc : 0;
}

static void normalize(struct evec *w)
{
	size_t o = 0;

	for (size_t i = 0; i < w->n; i++) {
		struct mds_extent *x = &w->v[i];
		if (!x->len)
			continue;
		if (o) {
			struct mds_extent *l = &w->v[o - 1];
			if (l->file_off + l->len == x->file_off && l->vol_off + l->len == x->vol_off &&
			    l->state == x->state) {
				l->len += x->len;
				continue;
			}
		}
		w->v[o++] = *x;
	}
	w->n = o;
}

static uint64_t evec_bytes(const struct evec *w)
{
	uint64_t s = 0;

	for (size_t i = 0; i < w->n; i++)
		s += w->v[i].len;
	return s;
}

/* Replace the stored window old by new (sorted, normalized) and account the change in bytes. */
static int ext_rewrite(struct mds_txn *t, struct mds_inode *ino, const struct evec *old,
		       struct evec *new)
{
	uint8_t k[16], v[17];
	uint64_t ob = evec_bytes(old), nb;
	int64_t delta;
	int rc;

	normalize(new);
	nb = evec_bytes(new);
	for (size_t i = 0; i < old->n; i++) {
		ext_key(k, ino->fileid, old->v[i].file_off);
		rc = st_del(t, t->st->extents, k, 16, "extent del");
		if (rc)
			return rc == -ENOENT ? -EUCLEAN : rc;
	}
	for (size_t i = 0; i < new->n; i++) {
		const struct mds_extent *x = &new->v[i];
		ext_key(k, ino->fileid, x->file_off);
		be64_put(v, x->vol_off);
		be64_put(v + 8, x->len);
		v[16] = (uint8_t)x->state;
		rc = st_write(t, t->st->extents, k, 16, v, 17, MDB_NOOVERWRITE, "extent put");
		if (rc)
			return rc == -EEXIST ? -EUCLEAN : rc;
	}
	if (nb == ob)
		return 0;
	delta = (int64_t)(nb - ob);
	if (delta < 0 && ino->space_used < (uint64_t)-delta)
		return st_fail(t->st, -EUCLEAN, "file %llu: space used below zero",
			       (unsigned long long)ino->fileid);
	ino->space_used += (uint64_t)delta;
	rc = st_meta_add(t, META_USED, delta);
	if (!rc)
		rc = st_inode_write(t, ino, NULL, 0);
	return rc;
}

/* Split window w at [a, b): pieces outside keep as they are; each inside piece goes to fn. */
typedef int (*piece_fn)(struct mds_txn *t, struct evec *out, const struct mds_extent *piece,
			void *arg);

static int split_apply(struct mds_txn *t, const struct evec *w, uint64_t a, uint64_t b,
		       struct evec *out, piece_fn fn, void *arg)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < w->n; i++) {
		const struct mds_extent *x = &w->v[i];
		uint64_t xe = x->file_off + x->len;
		uint64_t s = x->file_off > a ? x->file_off : a, e = xe < b ? xe : b;
		if (s >= e) {
			rc = evec_push(out, x);
			continue;
		}
		if (x->file_off < s)
			rc = evec_add(out, x->file_off, x->vol_off, s - x->file_off, x->state);
		if (!rc) {
			struct mds_extent mid = { s, x->vol_off + (s - x->file_off), e - s, x->state };
			rc = fn(t, out, &mid, arg);
		}
		if (!rc && xe > e)
			rc = evec_add(out, e, x->vol_off + (e - x->file_off), xe - e, x->state);
	}
	return rc;
}

/* Whether the window covers [a, b) without a hole. */
static int covered(const struct evec *w, uint64_t a, uint64_t b)
{
	uint64_t at = a;

	for (size_t i = 0; i < w->n && at < b; i++) {
		const struct mds_extent *x = &w->v[i];
		if (x->file_off + x->len <= at)
			continue;
		if (x->file_off > at)
			return 0;
		at = x->file_off + x->len;
	}
	return at >= b;
}

/* ---- lookup ------------------------------------------------------------------------------ */

/* A cursor over the extents of the regular file fileid, for a look at len bytes into max slots:
 * 1 with *c open (caller closes), 0 when there is nothing to look at, or a negative errno. */
static int ext_cursor(struct mds_txn *t, uint64_t fileid, uint64_t len, size_t max, MDB_cursor **c)
{
	struct mds_inode ino;
	int rc = get_reg(t, fileid, &ino);

	if (rc)
		return rc;
	if (!len || !max)
		return 0;
	rc = mdb_cursor_open(t->txn, t->st->extents, c);
	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_open");
	return 1;
}

int mds_ext_lookup(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		   struct mds_extent *out, size_t max, size_t *n)
{
	struct mds_extent x;
	MDB_cursor *c;
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	int rc;

	*n = 0;
	rc = ext_cursor(t, fileid, len, max, &c);
	if (rc <= 0)
		return rc;
	for (rc = ext_seek(t, c, fileid, off, &x); rc == 0 && x.file_off < end && *n < max;
	     rc = ext_next(t, c, fileid, &x))
		out[(*n)++] = x;
	mdb_cursor_close(c);
	return rc < 0 ? rc : 0;
}

int mds_ext_map(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		struct mds_extent *out, size_t max, size_t *n, uint64_t *end_off)
{
	struct mds_extent x;
	MDB_cursor *c;
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len, at = off;
	int rc;

	*n = 0;
	*end_off = off;
	rc = ext_cursor(t, fileid, len, max, &c);
	if (rc <= 0)
		return rc;
	for (rc = ext_seek(t, c, fileid, off, &x); rc == 0 && x.file_off < end && *n < max;
	     rc = ext_next(t, c, fileid, &x)) {
		uint64_t s, e;
		if (x.file_off > at) {
			out[(*n)++] = (struct mds_extent){ at, 0, x.file_off - at, MDS_EXT_NONE };
			at = x.file_off;
			if (*n == max)
				break;
		}
		s = x.file_off > at ? x.file_off : at;
		e = x.file_off + x.len < end ? x.file_off + x.len : end;
		out[(*n)++] = (struct mds_extent){ s, x.vol_off + (s - x.file_off), e - s, x.state };
		at = e;
	}
	mdb_cursor_close(c);
	if (rc < 0)
		return rc;
	if (at < end && *n < max) {
		out[(*n)++] = (struct mds_extent){ at, 0, end - at, MDS_EXT_NONE };
		at = end;
	}
	*end_off = at;
	return 0;
}

/* ---- allocation ---------------------------------------------------------------------------- */

struct alloc_ctx {
	uint64_t fileid;
	uint64_t allocated;
};

int mds_ext_alloc(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		  uint64_t *allocated)
{
	const struct mds_store_format *f = &t->st->fmt;
	uint64_t bs = f->block_bytes, a, b, total = 0;
	uint64_t prev_file_end = UINT64_MAX, prev_vol_end = 0, at;
	struct evec w = { 0 }, nw = { 0 };
	struct mds_ranges got = { 0 };
	struct mds_inode ino;
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	if (!len || off >= EXT_FILE_MAX || len > EXT_FILE_MAX - off) {
		rc = st_fail(t->st, -EINVAL, "allocation range %llu+%llu invalid",
			     (unsigned long long)off, (unsigned long long)len);
		goto out;
	}
	a = off / bs * bs;
	b = (off + len + bs - 1) / bs * bs;
	rc = get_reg(t, fileid, &ino);
	if (!rc)
		rc = ext_window(t, fileid, a, b, &w);
	if (rc)
		goto out;
	at = a;
	for (size_t i = 0; i <= w.n && !rc; i++) {
		const struct mds_extent *x = i < w.n ? &w.v[i] : NULL;
		uint64_t hole_end = x ? (x->file_off < b ? x->file_off : b) : b;
		if (x && x->file_off + x->len <= a) {
			prev_file_end = x->file_off + x->len;
			prev_vol_end = x->vol_off + x->len;
			rc = evec_push(&nw, x);
			continue;
		}
		if (at < hole_end) {
			uint64_t hint = prev_file_end == at ? prev_vol_end : ST_NO_HINT;
			uint64_t fo = at;
			got.n = 0;
			rc = st_space_alloc(t, hole_end - at, f->stripe_unit_bytes, at, hint, &got);
			for (size_t j = 0; !rc && j < got.n; j++) {
				rc = evec_add(&nw, fo, got.v[j].vol_off, got.v[j].len, MDS_EXT_INVALID);
				fo += got.v[j].len;
			}
			if (rc)
				break;
			total += hole_end - at;
			prev_file_end = hole_end;
			prev_vol_end = got.v[got.n - 1].vol_off + got.v[got.n - 1].len;
		}
		if (!x)
			break;
		rc = evec_push(&nw, x);
		prev_file_end = x->file_off + x->len;
		prev_vol_end = x->vol_off + x->len;
		if (prev_file_end > at)
			at = prev_file_end;
	}
	if (!rc && total)
		rc = ext_rewrite(t, &ino, &w, &nw);
	if (!rc && allocated)
		*allocated = total;
out:
	free(w.v);
	free(nw.v);
	mds_ranges_free(&got);
	return st_op_end(t, saved, rc);
}

/* ---- state changes -------------------------------------------------------------------------- */

static int set_piece(struct mds_txn *t, struct evec *out, const struct mds_extent *p, void *arg)
{
	(void)t;
	return evec_add(out, p->file_off, p->vol_off, p->len, *(enum mds_ext_state *)arg);
}

static int restate(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		   enum mds_ext_state state, int commit, uint64_t vol_off)
{
	struct evec w = { 0 }, nw = { 0 };
	struct mds_inode ino;
	uint64_t a, b;
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	if (state != MDS_EXT_RW && state != MDS_EXT_READ && state != MDS_EXT_INVALID) {
		rc = -EINVAL;
		goto out;
	}
	rc = ext_range(t, off, len, 0, &a, &b);
	if (!rc)
		rc = get_reg(t, fileid, &ino);
	if (!rc)
		rc = ext_window(t, fileid, a, b, &w);
	if (rc)
		goto out;
	if (!covered(&w, a, b)) {
		rc = st_fail(t->st, -ENODATA, "file %llu: range %llu+%llu has a hole",
			     (unsigned long long)fileid, (unsigned long long)a,
			     (unsigned long long)(b - a));
		goto out;
	}
	if (commit) {
		for (size_t i = 0; i < w.n; i++) {
			const struct mds_extent *x = &w.v[i];
			uint64_t s = x->file_off > a ? x->file_off : a;
			if (x->file_off + x->len <= a || x->file_off >= b)
				continue;
			if (x->state == MDS_EXT_READ ||
			    x->vol_off + (s - x->file_off) != vol_off + (s - a)) {
				rc = st_fail(t->st, -EINVAL,
					     "file %llu: commit of %llu+%llu at volume %llu does not "
					     "match the extent map",
					     (unsigned long long)fileid, (unsigned long long)a,
					     (unsigned long long)(b - a), (unsigned long long)vol_off);
				goto out;
			}
		}
	}
	rc = split_apply(t, &w, a, b, &nw, set_piece, &state);
	if (!rc)
		rc = ext_rewrite(t, &ino, &w, &nw);
out:
	free(w.v);
	free(nw.v);
	return st_op_end(t, saved, rc);
}

int mds_ext_set_state(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		      enum mds_ext_state state)
{
	return restate(t, fileid, off, len, state, 0, 0);
}

int mds_ext_commit(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len, uint64_t vol_off)
{
	return restate(t, fileid, off, len, MDS_EXT_RW, 1, vol_off);
}

/* ---- punching ------------------------------------------------------------------------------- */

struct punch_ctx {
	uint64_t fileid;
	unsigned mask, flags;
	struct mds_ranges *freed;
};

static int punch_piece(struct mds_txn *t, struct evec *out, const struct mds_extent *p, void *arg)
{
	struct punch_ctx *pc = arg;
	int rc;

	if (!(pc->mask & MDS_EXT_MASK(p->state)))
		return evec_add(out, p->file_off, p->vol_off, p->len, p->state);
	if (pc->flags & MDS_FREE_PENDING)
		rc = st_pending_park(t, p->vol_off, p->len, pc->fileid);
	else
		rc = st_space_free(t, p->vol_off, p->len);
	if (!rc)
		rc = st_ranges_add(pc->freed, p->vol_off, p->len);
	return rc;
}

static int punch(struct mds_txn *t, struct mds_inode *ino, uint64_t a, uint64_t b, unsigned mask,
		 unsigned flags, struct mds_ranges *freed)
{
	struct evec w = { 0 }, nw = { 0 };
	struct punch_ctx pc = { ino->fileid, mask, flags, freed };
	int rc = ext_window(t, ino->fileid, a, b, &w);

	if (!rc)
		rc = split_apply(t, &w, a, b, &nw, punch_piece, &pc);
	if (!rc)
		rc = ext_rewrite(t, ino, &w, &nw);
	free(w.v);
	free(nw.v);
	return rc;
}

int mds_ext_punch(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		  unsigned states_mask, unsigned flags, struct mds_ranges *freed)
{
	struct mds_inode ino;
	uint64_t a, b;
	MDB_txn *saved;
	struct st_ranges_mark m = st_ranges_mark(freed);
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = ext_range(t, off, len, 1, &a, &b);
	if (!rc)
		rc = get_reg(t, fileid, &ino);
	if (!rc)
		rc = punch(t, &ino, a, b, states_mask, flags, freed);
	return st_ranges_rollback(freed, m, st_op_end(t, saved, rc));
}

int st_ext_drop_all(struct mds_txn *t, struct mds_inode *ino, unsigned flags,
		    struct mds_ranges *freed)
{
	return punch(t, ino, 0, EXT_FILE_MAX, MDS_EXT_MASK_ALL, flags, freed);
}

int mds_ext_invalid_iter(struct mds_txn *t,
			 int (*fn)(void *arg, uint64_t fileid, uint64_t nextents, uint64_t bytes), void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t cur = 0, n = 0, bytes = 0;
	int rc = mdb_cursor_open(t->txn, t->st->extents, &c), op = MDB_FIRST;

	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_open");
	for (;; op = MDB_NEXT) {
		const uint8_t *p;
		uint64_t fileid;
		rc = mdb_cursor_get(c, &k, &v, (MDB_cursor_op)op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = st_lmdb_err(t->st, rc, "mdb_cursor_get");
			break;
		}
		if (k.mv_size != 16 || v.mv_size != 17) {
			rc = st_fail(t->st, -EUCLEAN, "extent record malformed");
			break;
		}
		p = v.mv_data;
		fileid = be64_get(k.mv_data);
		if (fileid != cur && n) {
			rc = fn(arg, cur, n, bytes);
			if (rc)
				break;
			n = bytes = 0;
		}
		cur = fileid;
		if (p[16] == MDS_EXT_INVALID) {
			n++;
			bytes += be64_get(p + 8);
		}
	}
	if (!rc && n)
		rc = fn(arg, cur, n, bytes);
	mdb_cursor_close(c);
	return rc;
}
