/* Helpers shared by the store suites: a fresh store in a temporary directory with a chosen
 * geometry, and the full invariant check that every store test ends with. */
#ifndef TESTS_MDS_STORE_UTIL_H
#define TESTS_MDS_STORE_UTIL_H

#include "mds/store.h"
#include "tests/harness.h"

#include <stdio.h>
#include <string.h>

static inline void ts_format(struct mds_store_format *f, uint64_t volume_bytes, uint32_t block_bytes,
			     uint64_t stripe_unit_bytes)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < 16; i++)
		f->pool_uuid[i] = (uint8_t)(0xa0 + i);
	f->block_bytes = block_bytes;
	f->stripe_unit_bytes = stripe_unit_bytes;
	f->volume_type = stripe_unit_bytes ? MDS_VOL_STRIPE : MDS_VOL_CONCAT;
	f->volume_bytes = volume_bytes;
	f->nluns = 1;
	f->luns[0].size_bytes = volume_bytes + (1u << 20);
	f->luns[0].data_start_bytes = 1u << 20;
	f->luns[0].data_bytes = volume_bytes;
}

/* A new store in a fresh directory (its path in dir_out if not NULL); NULL on failure. */
static inline struct mds_store *ts_create(const char *tag, uint64_t volume_bytes, uint32_t block_bytes,
					  uint64_t stripe_unit_bytes, uint64_t map_bytes,
					  const char **dir_out)
{
	struct mds_store_format f;
	struct mds_store_opts o = { .map_bytes = map_bytes };
	struct mds_store *st = NULL;
	const char *dir = test_tmpdir(tag);
	int rc;

	ts_format(&f, volume_bytes, block_bytes, stripe_unit_bytes);
	rc = mds_store_create(dir, &f, &o, &st);
	if (rc) {
		fprintf(stderr, "mds_store_create %s: %s (%s)\n", dir, mds_store_strerror(rc),
			mds_store_errstr(st));
		return NULL;
	}
	if (dir_out)
		*dir_out = dir;
	return st;
}

static inline void ts_report(void *arg, const char *problem)
{
	(void)arg;
	fprintf(stderr, "  store check: %s\n", problem);
}

/* mds_store_check in the given transaction (or a fresh read-only one if t is NULL). */
static inline int ts_check(struct mds_store *st, struct mds_txn *t)
{
	struct mds_txn *own = NULL;
	int rc;

	if (!t) {
		rc = mds_txn_begin(st, MDS_TXN_RDONLY, &own);
		if (rc)
			return rc;
		t = own;
	}
	rc = mds_store_check(t, ts_report, NULL);
	if (own)
		mds_txn_abort(own);
	return rc;
}

static inline struct mds_create_args ts_args(enum mds_ftype type, uint32_t mode)
{
	struct mds_create_args a;

	memset(&a, 0, sizeof(a));
	a.type = type;
	a.mode = mode;
	a.uid = 1000;
	a.gid = 1000;
	return a;
}

/* A store as ts_create makes it (no map size given) with a read-write transaction open on it in *t.
 * Aborts the test when either fails. */
static inline struct mds_store *ts_begin(const char *tag, uint64_t volume_bytes, uint32_t block_bytes,
					 uint64_t stripe_unit_bytes, const char **dir_out, struct mds_txn **t)
{
	struct mds_store *st = ts_create(tag, volume_bytes, block_bytes, stripe_unit_bytes, 0, dir_out);

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, t), 0);
	return st;
}

/* The end of a ts_begin test: the invariants hold inside t and after its commit; *st closed, NULL. */
static inline void ts_end(struct mds_store **st, struct mds_txn *t)
{
	CU_ASSERT_EQUAL(ts_check(*st, t), 0);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	CU_ASSERT_EQUAL(ts_check(*st, NULL), 0);
	mds_store_close(*st);
	*st = NULL;
}

#endif
