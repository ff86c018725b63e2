/* Internals shared by the store's files (mds/store*.c): the handle, key encodings, the nested
 * per-call transaction that makes every mutating call all-or-nothing, and the internal helpers.
 * Keys are big-endian so LMDB's byte order is numeric order and cursor seeks find ranges. */
#ifndef MDS_STORE_INT_H
#define MDS_STORE_INT_H

#include "mds/store.h"

#include <lmdb.h>
#include <stdbool.h>

struct mds_store {
	MDB_env *env;
	MDB_dbi meta;       /* "name" -> value */
	MDB_dbi inodes;     /* be64 fileid -> inode record */
	MDB_dbi dirents;    /* be64 dir + name -> be64 cookie, be64 child, u8 type */
	MDB_dbi cookies;    /* be64 dir + be64 cookie -> be64 child, u8 type, name */
	MDB_dbi extents;    /* be64 fileid + be64 file offset -> be64 vol offset, be64 len, u8 state */
	MDB_dbi free_off;   /* be64 vol offset -> be64 len */
	MDB_dbi free_len;   /* be64 len + be64 vol offset -> (empty) */
	MDB_dbi pending;    /* be64 vol offset -> be64 len, be64 fileid */
	MDB_dbi clients;    /* be64 clientid -> client record */
	MDB_dbi orphans;    /* be64 fileid -> (empty) */
	int rdonly;
	struct mds_store_format fmt; /* immutable geometry, read at open */
	uint64_t root;
	char err[320];
};

struct mds_txn {
	struct mds_store *st;
	MDB_txn *txn;       /* the innermost open transaction (a call's child while it runs) */
	int rdonly;
	struct mds_time now;
};

/* Meta keys. */
#define META_VERSION "version"
#define META_UUID "uuid"
#define META_BLOCK "block_bytes"
#define META_STRIPE "stripe_unit_bytes"
#define META_VOLTYPE "volume_type"
#define META_VOLUME "volume_bytes"
#define META_NLUNS "nluns"
#define META_LUN_FMT "lun.%u"
#define META_LUN_DESIG_FMT "lun.%u.designator"
#define META_ROOT "root_fileid"
#define META_NEXT_FILEID "next_fileid"
#define META_BOOT "boot"
#define META_FREE "free_bytes"
#define META_USED "used_bytes"
#define META_PENDING "pending_bytes"
#define META_FILES "files"

static inline void be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static inline uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline void le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void le64_put(uint8_t *p, uint64_t v)
{
	le32_put(p, (uint32_t)v);
	le32_put(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t le64_get(const uint8_t *p)
{
	return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}

/* Map an LMDB or system error to -errno, recording "what: message" as the store's errstr. */
int st_lmdb_err(struct mds_store *st, int rc, const char *what);
/* Record a formatted detail as the store's errstr; returns err. */
int st_fail(struct mds_store *st, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A mutating call's own child transaction: st_op_begin makes t->txn a child of the current one;
 * st_op_end commits it into the parent on rc == 0, aborts it otherwise, and returns rc (or the
 * commit's error). Read-only transactions get -EROFS from st_op_begin. */
int st_op_begin(struct mds_txn *t, MDB_txn **saved);
int st_op_end(struct mds_txn *t, MDB_txn *saved, int rc);

/* Plain get/put/del on t->txn with error mapping (get: -ENOENT when absent). */
int st_read(struct mds_txn *t, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v, const char *what);
int st_write(struct mds_txn *t, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen,
	   unsigned flags, const char *what);
int st_del(struct mds_txn *t, MDB_dbi dbi, const void *k, size_t klen, const char *what);
/* fn(arg, key, value) for every record of dbi in key order, until fn returns nonzero, which is
 * returned; 0 after the last record, or the store's error. */
int st_walk(struct mds_txn *t, MDB_dbi dbi, int (*fn)(void *arg, const MDB_val *k, const MDB_val *v), void *arg);

int st_meta_u64(struct mds_txn *t, const char *key, uint64_t *v);
int st_meta_put_u64(struct mds_txn *t, const char *key, uint64_t v);
/* Add a signed delta to a counter; -EUCLEAN if it would go below zero. */
int st_meta_add(struct mds_txn *t, const char *key, int64_t delta);

/* Inode records. st_inode_read also returns the symlink target when target != NULL (buffer of
 * MDS_SYMLINK_MAX bytes). */
int st_inode_read(struct mds_txn *t, uint64_t fileid, struct mds_inode *ino, char *target,
		 size_t *target_len);
int st_inode_write(struct mds_txn *t, const struct mds_inode *ino, const char *target,
		 size_t target_len);
/* The record's next-cookie field for directories lives beside the public attributes. */
int st_dir_next_cookie(struct mds_txn *t, uint64_t dir, uint64_t *next);
int st_dir_set_next_cookie(struct mds_txn *t, uint64_t dir, uint64_t next);
int st_decode_inode(const MDB_val *v, uint64_t fileid, struct mds_inode *ino,
		    const uint8_t **target, size_t *target_len);

/* Free space (volume ranges): all lengths and offsets multiples of the block size. */
int st_space_alloc(struct mds_txn *t, uint64_t len, uint64_t pref_align, uint64_t phase,
		   uint64_t hint, struct mds_ranges *out);
int st_space_free(struct mds_txn *t, uint64_t vol_off, uint64_t len);
int st_pending_park(struct mds_txn *t, uint64_t vol_off, uint64_t len, uint64_t fileid);
#define ST_NO_HINT UINT64_MAX

/* Remove every extent of a file (destroy), freeing or parking per flags. */
int st_ext_drop_all(struct mds_txn *t, struct mds_inode *ino, unsigned flags,
		    struct mds_ranges *freed);
/* Destroy an inode with no links left: extents, symlink target, orphan mark, counters. */
int st_inode_remove(struct mds_txn *t, struct mds_inode *ino, unsigned flags,
		    struct mds_ranges *freed);

int st_ranges_add(struct mds_ranges *r, uint64_t vol_off, uint64_t len);

/* A call that fails leaves the caller's freed list as it found it (st_ranges_add may have grown
 * its last entry, so the length of that entry is remembered too). */
struct st_ranges_mark {
	size_t n;
	uint64_t last_len;
};

static inline struct st_ranges_mark st_ranges_mark(const struct mds_ranges *r)
{
	struct st_ranges_mark m = { 0, 0 };

	if (r) {
		m.n = r->n;
		m.last_len = r->n ? r->v[r->n - 1].len : 0;
	}
	return m;
}

static inline int st_ranges_rollback(struct mds_ranges *r, struct st_ranges_mark m, int rc)
{
	if (rc && r) {
		r->n = m.n;
		if (m.n)
			r->v[m.n - 1].len = m.last_len;
	}
	return rc;
}

#endif
