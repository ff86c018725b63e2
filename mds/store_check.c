/* The store's invariant checker (pnfs-admin check, the tests): walks every database once and
 * cross-checks them, so that any disagreement between indexes, counters and ownership of volume
 * bytes is reported in words. It reads only; it never repairs. */
#include "mds/store_int.h"

#include "proto/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_MAX_REPORTS 50

struct owner {
	uint64_t off, len;
	uint64_t who;   /* fileid, or 0 free, or UINT64_MAX pending */
};

struct ino_info {
	uint64_t fileid;
	enum mds_ftype type;
	uint32_t nlink;
	uint64_t parent;
	uint64_t space_used;
	uint64_t ext_bytes;    /* sum of its extents */
	uint32_t names;        /* entries naming it */
	uint32_t subdirs;      /* directories: entries that are directories */
	uint64_t next_cookie;  /* directories */
	uint64_t named_in;     /* directories: the directory naming it */
	int orphan;
};

struct run {
	uint64_t prev_end;
	int have_prev;
	uint64_t sum;
	uint64_t count;
};

struct ext_run {
	uint64_t fileid;
	struct mds_extent prev;
	int have_prev;
	uint64_t sum;
};

struct checker {
	struct run free_run, pend_run;
	struct ext_run ext_run;
	uint64_t dirent_count, cookie_count;
	struct mds_txn *t;
	void (*report)(void *, const char *);
	void *arg;
	unsigned problems;
	struct owner *own;
	size_t nown, capown;
	struct ino_info *ino;
	size_t nino, capino;
};

static void problem(struct checker *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct checker *ck, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	ck->problems++;
	if (!ck->report || ck->problems > CHECK_MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ck->report(ck->arg, line);
}

static int own_add(struct checker *ck, uint64_t off, uint64_t len, uint64_t who)
{
	if (proto_grow(&ck->own, ck->nown, &ck->capown, sizeof(*ck->own), 256))
		return -ENOMEM;
	ck->own[ck->nown++] = (struct owner){ off, len, who };
	return 0;
}

static struct ino_info *ino_find(struct checker *ck, uint64_t fileid)
{
	size_t lo = 0, hi = ck->nino;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ck->ino[mid].fileid == fileid)
			return &ck->ino[mid];
		if (ck->ino[mid].fileid < fileid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct check_walk {
	struct checker *ck;
	int (*fn)(struct checker *ck, const MDB_val *k, const MDB_val *v);
};

static int check_one(void *arg, const MDB_val *k, const MDB_val *v)
{
	struct check_walk *w = arg;

	return w->fn(w->ck, k, v);
}

static int cursor_walk(struct checker *ck, MDB_dbi dbi,
		       int (*fn)(struct checker *ck, const MDB_val *k, const MDB_val *v))
{
	struct check_walk w = { ck, fn };

	return st_walk(ck->t, dbi, check_one, &w);
}

/* ---- inodes ------------------------------------------------------------------------------- */

static int walk_inode(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	struct mds_inode ino;
	uint64_t fileid;

	if (k->mv_size != 8) {
		problem(ck, "inodes: key of %zu bytes", k->mv_size);
		return 0;
	}
	fileid = be64_get(k->mv_data);
	if (st_decode_inode(v, fileid, &ino, NULL, NULL)) {
		problem(ck, "inode %llu: malformed record", (unsigned long long)fileid);
		return 0;
	}
	if (proto_grow(&ck->ino, ck->nino, &ck->capino, sizeof(*ck->ino), 256))
		return -ENOMEM;
	ck->ino[ck->nino++] = (struct ino_info){ .fileid = fileid, .type = ino.type,
						 .nlink = ino.nlink, .parent = ino.parent,
						 .space_used = ino.space_used };
	return 0;
}

/* ---- free space and pending ---------------------------------------------------------------- */


static int range_sane(struct checker *ck, const char *what, uint64_t off, uint64_t len)
{
	const struct mds_store_format *f = &ck->t->st->fmt;

	if (!len || off % f->block_bytes || len % f->block_bytes || off >= f->volume_bytes ||
	    len > f->volume_bytes - off) {
		problem(ck, "%s %llu+%llu: not a block-aligned range inside the volume", what,
			(unsigned long long)off, (unsigned long long)len);
		return 0;
	}
	return 1;
}

/* A record of a space index keyed by offset, its value starting with the length (vsize bytes):
 * 1 with *off and *len, or 0 after reporting it malformed. */
static int index_record(struct checker *ck, const MDB_val *k, const MDB_val *v, size_t vsize, const char *index,
			uint64_t *off, uint64_t *len)
{
	if (k->mv_size != 8 || v->mv_size != vsize) {
		problem(ck, "%s: malformed record", index);
		return 0;
	}
	*off = be64_get(k->mv_data);
	*len = be64_get(v->mv_data);
	return 1;
}

/* Count a record of an index in offset order into r; returns whether there was one before it, with
 * *prev_end where that one ended. */
static int run_add(struct run *r, uint64_t off, uint64_t len, uint64_t *prev_end)
{
	int had = r->have_prev;

	*prev_end = r->prev_end;
	r->count++;
	r->sum += len;
	r->have_prev = 1;
	r->prev_end = off + len;
	return had;
}

static int walk_free(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	uint64_t off, len, prev_end;
	uint8_t lk[16];
	MDB_val lv;
	int rc;

	if (!index_record(ck, k, v, 8, "free_off", &off, &len))
		return 0;
	if (run_add(&ck->free_run, off, len, &prev_end) && prev_end >= off)
		problem(ck, "free %llu+%llu: %s the previous free extent", (unsigned long long)off,
			(unsigned long long)len, prev_end == off ? "not coalesced with" : "overlaps");
	if (!range_sane(ck, "free", off, len))
		return 0;
	be64_put(lk, len);
	be64_put(lk + 8, off);
	rc = st_read(ck->t, ck->t->st->free_len, lk, 16, &lv, "free_len get");
	if (rc == -ENOENT)
		problem(ck, "free %llu+%llu: missing from the length index", (unsigned long long)off,
			(unsigned long long)len);
	else if (rc)
		return rc;
	return own_add(ck, off, len, 0);
}

static int walk_pending(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	uint64_t off, len, prev_end;

	if (!index_record(ck, k, v, 16, "pending", &off, &len))
		return 0;
	if (run_add(&ck->pend_run, off, len, &prev_end) && prev_end > off)
		problem(ck, "pending %llu+%llu overlaps the previous pending piece",
			(unsigned long long)off, (unsigned long long)len);
	if (!range_sane(ck, "pending", off, len))
		return 0;
	return own_add(ck, off, len, UINT64_MAX);
}

/* ---- extents ------------------------------------------------------------------------------ */


static int walk_extent(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	const uint8_t *p = v->mv_data;
	struct mds_extent x;
	uint64_t fileid;
	struct ino_info *ii;

	if (k->mv_size != 16 || v->mv_size != 17) {
		problem(ck, "extents: malformed record");
		return 0;
	}
	fileid = be64_get(k->mv_data);
	x.file_off = be64_get((uint8_t *)k->mv_data + 8);
	x.vol_off = be64_get(p);
	x.len = be64_get(p + 8);
	x.state = (enum mds_ext_state)p[16];
	ck->ext_run.sum += x.len;
	if (!ck->ext_run.have_prev || ck->ext_run.fileid != fileid) {
		ck->ext_run.have_prev = 0;
		ck->ext_run.fileid = fileid;
	}
	ii = ino_find(ck, fileid);
	if (!ii)
		problem(ck, "extent of file %llu at %llu: no such inode", (unsigned long long)fileid,
			(unsigned long long)x.file_off);
	else if (ii->type != MDS_FT_REG)
		problem(ck, "extent of inode %llu, which is not a regular file",
			(unsigned long long)fileid);
	else
		ii->ext_bytes += x.len;
	if (x.state > MDS_EXT_INVALID)
		problem(ck, "file %llu extent at %llu: stored state %u", (unsigned long long)fileid,
			(unsigned long long)x.file_off, x.state);
	if (x.len % ck->t->st->fmt.block_bytes || x.file_off % ck->t->st->fmt.block_bytes)
		problem(ck, "file %llu extent at %llu+%llu: not block-aligned",
			(unsigned long long)fileid, (unsigned long long)x.file_off,
			(unsigned long long)x.len);
	if (ck->ext_run.have_prev) {
		const struct mds_extent *q = &ck->ext_run.prev;
		if (q->file_off + q->len > x.file_off)
			problem(ck, "file %llu: extents at %llu and %llu overlap",
				(unsigned long long)fileid, (unsigned long long)q->file_off,
				(unsigned long long)x.file_off);
		else if (q->file_off + q->len == x.file_off && q->vol_off + q->len == x.vol_off &&
			 q->state == x.state)
			problem(ck, "file %llu: extents at %llu and %llu not merged",
				(unsigned long long)fileid, (unsigned long long)q->file_off,
				(unsigned long long)x.file_off);
	}
	ck->ext_run.prev = x;
	ck->ext_run.have_prev = 1;
	if (!range_sane(ck, "extent", x.vol_off, x.len))
		return 0;
	return own_add(ck, x.vol_off, x.len, fileid);
}

/* ---- directories ---------------------------------------------------------------------------- */


static int walk_dirent(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	uint64_t dir, cookie, child;
	enum mds_ftype type;
	uint8_t ck_key[16];
	MDB_val cv;
	struct ino_info *d, *c;
	size_t nlen;
	int rc;

	if (k->mv_size < 9 || k->mv_size > 8 + MDS_NAME_MAX || v->mv_size != 17) {
		problem(ck, "dirents: malformed record");
		return 0;
	}
	ck->dirent_count++;
	dir = be64_get(k->mv_data);
	nlen = k->mv_size - 8;
	cookie = be64_get(v->mv_data);
	child = be64_get((uint8_t *)v->mv_data + 8);
	type = (enum mds_ftype)((uint8_t *)v->mv_data)[16];
	if (mds_name_check((const char *)k->mv_data + 8, nlen))
		problem(ck, "directory %llu: invalid entry name", (unsigned long long)dir);
	d = ino_find(ck, dir);
	if (!d || d->type != MDS_FT_DIR) {
		problem(ck, "entry in %llu, which is not a directory", (unsigned long long)dir);
		return 0;
	}
	if (cookie < MDS_COOKIE_FIRST || cookie >= d->next_cookie)
		problem(ck, "directory %llu: entry cookie %llu outside [3, %llu)",
			(unsigned long long)dir, (unsigned long long)cookie,
			(unsigned long long)d->next_cookie);
	be64_put(ck_key, dir);
	be64_put(ck_key + 8, cookie);
	rc = st_read(ck->t, ck->t->st->cookies, ck_key, 16, &cv, "cookie get");
	if (rc == -ENOENT)
		problem(ck, "directory %llu: cookie %llu missing from the cookie index",
			(unsigned long long)dir, (unsigned long long)cookie);
	else if (rc)
		return rc;
	else if (cv.mv_size != 9 + nlen || be64_get(cv.mv_data) != child ||
		 memcmp((uint8_t *)cv.mv_data + 9, (uint8_t *)k->mv_data + 8, nlen))
		problem(ck, "directory %llu: cookie %llu disagrees with its entry",
			(unsigned long long)dir, (unsigned long long)cookie);
	c = ino_find(ck, child);
	if (!c) {
		problem(ck, "directory %llu: entry names missing inode %llu", (unsigned long long)dir,
			(unsigned long long)child);
		return 0;
	}
	if (c->type != type)
		problem(ck, "directory %llu: entry type of %llu is wrong", (unsigned long long)dir,
			(unsigned long long)child);
	c->names++;
	if (c->type == MDS_FT_DIR) {
		d->subdirs++;
		c->named_in = dir;
	}
	return 0;
}


static int walk_cookie(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	(void)v;
	if (k->mv_size != 16) {
		problem(ck, "cookies: malformed key");
		return 0;
	}
	if (be64_get((uint8_t *)k->mv_data + 8) == 0) {
		struct ino_info *d = ino_find(ck, be64_get(k->mv_data));
		if (!d || d->type != MDS_FT_DIR)
			problem(ck, "cookie counter of %llu, which is not a directory",
				(unsigned long long)be64_get(k->mv_data));
		else if (v->mv_size == 8)
			d->next_cookie = be64_get(v->mv_data);
		return 0;
	}
	ck->cookie_count++;
	return 0;
}

static int walk_orphan(struct checker *ck, const MDB_val *k, const MDB_val *v)
{
	struct ino_info *ii;

	(void)v;
	if (k->mv_size != 8) {
		problem(ck, "orphans: malformed key");
		return 0;
	}
	ii = ino_find(ck, be64_get(k->mv_data));
	if (!ii)
		problem(ck, "orphan %llu: no such inode", (unsigned long long)be64_get(k->mv_data));
	else
		ii->orphan = 1;
	return 0;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct owner *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static void check_counter(struct checker *ck, const char *key, uint64_t actual)
{
	uint64_t v;

	if (st_meta_u64(ck->t, key, &v))
		problem(ck, "meta: counter %s missing", key);
	else if (v != actual)
		problem(ck, "meta: %s says %llu, the store holds %llu", key, (unsigned long long)v,
			(unsigned long long)actual);
}

int mds_store_check(struct mds_txn *t, void (*report)(void *arg, const char *problem), void *arg)
{
	struct checker ck = { .t = t, .report = report, .arg = arg };
	const struct mds_store_format *f = &t->st->fmt;
	uint64_t next_fileid = 0, owned = 0;
	MDB_stat ms;
	int rc;

	/* the inodes first: the other walks look files up among them */
	const struct {
		MDB_dbi dbi;
		int (*walk)(struct checker *ck, const MDB_val *k, const MDB_val *v);
	} walks[] = {
		{ t->st->inodes, walk_inode }, { t->st->cookies, walk_cookie }, { t->st->free_off, walk_free },
		{ t->st->pending, walk_pending }, { t->st->extents, walk_extent }, { t->st->dirents, walk_dirent },
		{ t->st->orphans, walk_orphan },
	};

	rc = 0;
	for (size_t i = 0; !rc && i < sizeof(walks) / sizeof(walks[0]); i++)
		rc = cursor_walk(&ck, walks[i].dbi, walks[i].walk);
	if (rc)
		goto out;

	/* Counters. */
	check_counter(&ck, META_FREE, ck.free_run.sum);
	check_counter(&ck, META_PENDING, ck.pend_run.sum);
	check_counter(&ck, META_USED, ck.ext_run.sum);
	check_counter(&ck, META_FILES, ck.nino);
	rc = mdb_stat(t->txn, t->st->free_len, &ms);
	if (rc) {
		rc = st_lmdb_err(t->st, rc, "mdb_stat");
		goto out;
	}
	if (ms.ms_entries != ck.free_run.count)
		problem(&ck, "free space: %llu extents by offset, %llu by length",
			(unsigned long long)ck.free_run.count, (unsigned long long)ms.ms_entries);
	if (ck.dirent_count != ck.cookie_count)
		problem(&ck, "directories: %llu entries by name, %llu by cookie",
			(unsigned long long)ck.dirent_count, (unsigned long long)ck.cookie_count);

	/* Every volume byte owned exactly once. */
	qsort(ck.own, ck.nown, sizeof(*ck.own), cmp_owner);
	for (size_t i = 0; i < ck.nown; i++) {
		owned += ck.own[i].len;
		if (i && ck.own[i - 1].off + ck.own[i - 1].len > ck.own[i].off)
			problem(&ck, "volume bytes %llu+%llu owned twice (%s and %s)",
				(unsigned long long)ck.own[i].off,
				(unsigned long long)(ck.own[i - 1].off + ck.own[i - 1].len - ck.own[i].off),
				ck.own[i - 1].who == 0 ? "free" :
				ck.own[i - 1].who == UINT64_MAX ? "pending" : "a file",
				ck.own[i].who == 0 ? "free" :
				ck.own[i].who == UINT64_MAX ? "pending" : "a file");
	}
	if (owned != f->volume_bytes)
		problem(&ck, "free + used + pending = %llu bytes, the volume has %llu",
			(unsigned long long)owned, (unsigned long long)f->volume_bytes);

	/* Inodes against names. */
	if (st_meta_u64(t, META_NEXT_FILEID, &next_fileid))
		problem(&ck, "meta: next_fileid missing");
	if (!ino_find(&ck, t->st->root) || ino_find(&ck, t->st->root)->type != MDS_FT_DIR)
		problem(&ck, "root directory %llu missing", (unsigned long long)t->st->root);
	for (size_t i = 0; i < ck.nino; i++) {
		struct ino_info *ii = &ck.ino[i];
		unsigned long long id = (unsigned long long)ii->fileid;
		if (ii->fileid >= next_fileid)
			problem(&ck, "inode %llu at or past next_fileid %llu", id,
				(unsigned long long)next_fileid);
		if (ii->type == MDS_FT_REG && ii->space_used != ii->ext_bytes)
			problem(&ck, "file %llu: space_used %llu, its extents hold %llu", id,
				(unsigned long long)ii->space_used, (unsigned long long)ii->ext_bytes);
		if (ii->type == MDS_FT_DIR) {
			int is_root = ii->fileid == t->st->root;
			if (!ii->next_cookie)
				problem(&ck, "directory %llu: no cookie counter", id);
			if (ii->nlink != 2 + ii->subdirs)
				problem(&ck, "directory %llu: nlink %u, %u subdirectories", id,
					ii->nlink, ii->subdirs);
			if (ii->names != (is_root ? 0u : 1u))
				problem(&ck, "directory %llu named %u times", id, ii->names);
			if (is_root ? ii->parent != ii->fileid : ii->parent != ii->named_in)
				problem(&ck, "directory %llu: parent %llu but named in %llu", id,
					(unsigned long long)ii->parent,
					(unsigned long long)(is_root ? ii->fileid : ii->named_in));
			if (ii->orphan)
				problem(&ck, "directory %llu marked orphan", id);
		} else {
			if (ii->nlink != ii->names)
				problem(&ck, "inode %llu: nlink %u, named %u times", id, ii->nlink,
					ii->names);
			if ((ii->nlink == 0) != ii->orphan)
				problem(&ck, "inode %llu: nlink %u but %s an orphan", id, ii->nlink,
					ii->orphan ? "marked" : "not marked");
		}
	}
	/* Every directory reaches the root through its parents (no detached cycles). */
	for (size_t i = 0; i < ck.nino; i++) {
		struct ino_info *ii = &ck.ino[i];
		uint64_t at = ii->fileid;
		size_t steps = 0;
		if (ii->type != MDS_FT_DIR)
			continue;
		while (at != t->st->root && steps++ <= ck.nino) {
			struct ino_info *p = ino_find(&ck, at);
			if (!p || p->type != MDS_FT_DIR)
				break;
			at = p->parent;
		}
		if (at != t->st->root)
			problem(&ck, "directory %llu does not reach the root", (unsigned long long)ii->fileid);
	}
	if (ck.problems > CHECK_MAX_REPORTS && report) {
		char line[96];
		snprintf(line, sizeof(line), "... %u problems in all", ck.problems);
		report(arg, line);
	}
	rc = ck.problems ? -EUCLEAN : 0;
out:
	free(ck.own);
	free(ck.ino);
	return rc;
}
