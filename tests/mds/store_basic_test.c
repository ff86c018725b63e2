/* The store's environment: create/open with the pool's geometry, transactions that commit or vanish,
 * calls that fail leave nothing behind, a read-only opener beside a live writer, client records,
 * and a full LMDB map giving -ENOSPC rather than a crash. */
#include "tests/mds/store_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_create_open_meta(void)
{
	const char *dir = NULL;
	struct mds_store *st = ts_create("store-meta", 64ull << 20, 4096, 1 << 20, 0, &dir);
	struct mds_store_format f;
	struct mds_store_meta m;
	struct mds_store_stats s;
	struct mds_inode root;
	struct mds_txn *t;
	uint64_t boot = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_store_meta(t, &m), 0);
	CU_ASSERT_EQUAL(m.format_version, MDS_STORE_FORMAT_VERSION);
	CU_ASSERT_EQUAL(m.block_bytes, 4096);
	CU_ASSERT_EQUAL(m.stripe_unit_bytes, 1 << 20);
	CU_ASSERT_EQUAL(m.volume_type, MDS_VOL_STRIPE);
	CU_ASSERT_EQUAL(m.volume_bytes, 64ull << 20);
	CU_ASSERT_EQUAL(m.nluns, 1);
	CU_ASSERT_EQUAL(m.pool_uuid[0], 0xa0);
	CU_ASSERT_EQUAL(m.pool_uuid[15], 0xaf);
	CU_ASSERT_EQUAL(m.boot, 0);
	CU_ASSERT(m.next_fileid > m.root_fileid);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_bytes, 64ull << 20);
	CU_ASSERT_EQUAL(s.used_bytes, 0);
	CU_ASSERT_EQUAL(s.pending_bytes, 0);
	CU_ASSERT_EQUAL(s.files, 1);
	CU_ASSERT_EQUAL(s.free_extents, 1);
	CU_ASSERT_EQUAL(mds_inode_read(t, m.root_fileid, &root), 0);
	CU_ASSERT_EQUAL(root.type, MDS_FT_DIR);
	CU_ASSERT_EQUAL(root.nlink, 2);
	CU_ASSERT_EQUAL(root.parent, m.root_fileid);
	CU_ASSERT_EQUAL(root.mode, 0755);
	CU_ASSERT_EQUAL(mds_store_bump_boot(t, &boot), 0);
	CU_ASSERT_EQUAL(boot, 1);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	mds_store_close(st);

	/* A second store in the same directory is refused; the first one reopens intact. */
	ts_format(&f, 64ull << 20, 4096, 1 << 20);
	CU_ASSERT_EQUAL(mds_store_create(dir, &f, NULL, &st), -EEXIST);
	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &st), 0);
	CU_ASSERT_EQUAL(mds_store_format(st)->volume_bytes, 64ull << 20);
	CU_ASSERT_EQUAL(mds_store_format(st)->luns[0].data_start_bytes, 1u << 20);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_store_bump_boot(t, &boot), 0);
	CU_ASSERT_EQUAL(boot, 2);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	CU_ASSERT_EQUAL(ts_check(st, NULL), 0);
	mds_store_close(st);

	/* No store here; bad geometry. */
	CU_ASSERT_EQUAL(mds_store_open(test_tmpdir("store-empty"), NULL, &st), -ENOENT);
	ts_format(&f, 64ull << 20, 1000, 0);
	CU_ASSERT_EQUAL(mds_store_create(test_tmpdir("store-bad"), &f, NULL, &st), -EINVAL);
	ts_format(&f, 64ull << 20, 4096, 6000);
	CU_ASSERT_EQUAL(mds_store_create(test_tmpdir("store-bad2"), &f, NULL, &st), -EINVAL);
	ts_format(&f, 64ull << 20, 4096, 0);
	f.luns[0].data_bytes = 1 << 20; /* LUN table does not add up to the volume */
	CU_ASSERT_EQUAL(mds_store_create(test_tmpdir("store-bad3"), &f, NULL, &st), -EINVAL);
}

static void test_abort_and_failed_calls(void)
{
	struct mds_store *st = ts_create("store-atomic", 16ull << 20, 4096, 65536, 0, NULL);
	struct mds_create_args a = ts_args(MDS_FT_REG, 0644);
	struct mds_store_stats s0, s1;
	struct mds_inode f;
	struct mds_txn *t;
	uint64_t id, got = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	/* Aborted: gone. */
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_ns_create(t, 1, "gone", 4, &a, &f, NULL), 0);
	mds_txn_abort(t);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(t, 1, "gone", 4, &id), -ENOENT);

	/* A call that fails half-way (the volume cannot hold 8 MiB more after 12 MiB) changes
	 * nothing, and the transaction still commits what came before it. */
	CU_ASSERT_EQUAL(mds_ns_create(t, 1, "kept", 4, &a, &f, NULL), 0);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f.fileid, 0, 12u << 20, &got), 0);
	CU_ASSERT_EQUAL(got, 12u << 20);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s0), 0);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f.fileid, 12u << 20, 8u << 20, &got), -ENOSPC);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s1), 0);
	CU_ASSERT_EQUAL(s0.free_bytes, s1.free_bytes);
	CU_ASSERT_EQUAL(s0.used_bytes, s1.used_bytes);
	/* A failing create (name exists) leaves the fileid counter and the directory alone. */
	CU_ASSERT_EQUAL(mds_ns_create(t, 1, "kept", 4, &a, NULL, NULL), -EEXIST);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s1), 0);
	CU_ASSERT_EQUAL(s1.files, 2);
	CU_ASSERT_EQUAL(ts_check(st, t), 0);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);

	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RDONLY, &t), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(t, 1, "kept", 4, &id), 0);
	CU_ASSERT_EQUAL(id, f.fileid);
	CU_ASSERT_EQUAL(mds_inode_read(t, id, &f), 0);
	CU_ASSERT_EQUAL(f.space_used, 12u << 20);
	/* Read-only transactions refuse changes. */
	CU_ASSERT_EQUAL(mds_ns_create(t, 1, "ro", 2, &a, NULL, NULL), -EROFS);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, id, 0, 4096, NULL), -EROFS);
	mds_txn_abort(t);
	CU_ASSERT_EQUAL(ts_check(st, NULL), 0);
	mds_store_close(st);
}

/* A read-only opener in another process sees the last committed state while a writer is busy. */
static void test_readonly_beside_writer(void)
{
	const char *dir = test_tmpdir("store-ro");
	struct mds_store_format fmt;
	struct mds_store *st;
	struct mds_create_args a = ts_args(MDS_FT_REG, 0644);
	struct mds_txn *t;
	int go[2], done[2], status = 0;
	pid_t pid;
	char c;

	CU_ASSERT_EQUAL_FATAL(pipe(go), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(done), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		/* Child: opens only after the parent created the store; exits 0 when all is right. */
		struct mds_store_opts ro = { .rdonly = 1 };
		struct mds_store *r;
		struct mds_txn *rt;
		uint64_t id;
		int bad = 0;
		close(go[1]);
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(10);
		if (mds_store_open(dir, &ro, &r))
			_exit(11);
		if (mds_txn_begin(r, MDS_TXN_RW, &rt) != -EROFS)
			bad |= 1;
		if (mds_txn_begin(r, MDS_TXN_RDONLY, &rt))
			_exit(12);
		if (mds_ns_lookup(rt, 1, "committed", 9, &id))
			bad |= 2;
		if (mds_ns_lookup(rt, 1, "uncommitted", 11, &id) != -ENOENT)
			bad |= 4;
		if (mds_store_check(rt, NULL, NULL))
			bad |= 8;
		mds_txn_abort(rt);
		mds_store_close(r);
		if (write(done[1], "x", 1) != 1)
			bad |= 16;
		_exit(bad);
	}
	close(go[0]);
	close(done[1]);
	ts_format(&fmt, 8u << 20, 4096, 65536);
	CU_ASSERT_EQUAL_FATAL(mds_store_create(dir, &fmt, NULL, &st), 0);
	CU_ASSERT_EQUAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_ns_create(t, 1, "committed", 9, &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	/* Keep a write transaction open with a change while the child reads. */
	CU_ASSERT_EQUAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_ns_create(t, 1, "uncommitted", 11, &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(write(go[1], "g", 1), 1);
	CU_ASSERT_EQUAL(read(done[0], &c, 1), 1);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	close(go[1]);
	close(done[0]);
	mds_store_close(st);
}

static int count_clients(void *arg, const struct mds_client_rec *r)
{
	(void)r;
	(*(int *)arg)++;
	return 0;
}

static void test_client_records(void)
{
	const char *dir = NULL;
	struct mds_store *st = ts_create("store-clients", 8u << 20, 4096, 65536, 0, &dir);
	struct mds_client_rec r, back;
	struct mds_txn *t;
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	for (uint64_t id = 100; id < 110; id++) {
		memset(&r, 0, sizeof(r));
		r.clientid = id;
		memcpy(r.verifier, "verifier", 8);
		r.owner_len = (uint32_t)(10 + id);
		memset(r.owner, (int)id, r.owner_len);
		r.principal_len = 4;
		memcpy(r.principal, "root", 4);
		r.flags = id % 2 ? MDS_CLIENT_RECLAIM_COMPLETE : 0;
		CU_ASSERT_EQUAL(mds_client_write(t, &r), 0);
	}
	r.owner_len = MDS_OWNER_MAX + 1;
	CU_ASSERT_EQUAL(mds_client_write(t, &r), -EINVAL);
	r.owner_len = 0;
	CU_ASSERT_EQUAL(mds_client_write(t, &r), -EINVAL);
	CU_ASSERT_EQUAL(mds_client_del(t, 105), 0);
	CU_ASSERT_EQUAL(mds_client_del(t, 105), -ENOENT);
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	mds_store_close(st);

	/* They survive a restart, byte for byte. */
	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &st), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RDONLY, &t), 0);
	CU_ASSERT_EQUAL(mds_client_iter(t, count_clients, &n), 0);
	CU_ASSERT_EQUAL(n, 9);
	CU_ASSERT_EQUAL(mds_client_read(t, 105, &back), -ENOENT);
	CU_ASSERT_EQUAL(mds_client_read(t, 107, &back), 0);
	CU_ASSERT_EQUAL(back.clientid, 107);
	CU_ASSERT_EQUAL(back.owner_len, 117);
	CU_ASSERT_EQUAL(back.owner[116], 107);
	CU_ASSERT_EQUAL(memcmp(back.verifier, "verifier", 8), 0);
	CU_ASSERT_EQUAL(back.principal_len, 4);
	CU_ASSERT_EQUAL(memcmp(back.principal, "root", 4), 0);
	CU_ASSERT_EQUAL(back.flags, MDS_CLIENT_RECLAIM_COMPLETE);
	mds_txn_abort(t);
	mds_store_close(st);
}

/* A map too small for the metadata: -ENOSPC from the call that does not fit, nothing half-done,
 * earlier work still commits, and the store reopens clean. */
static void test_map_full(void)
{
	const char *dir = NULL;
	struct mds_store *st = ts_create("store-mapfull", 1ull << 30, 4096, 0, 256 << 10, &dir);
	struct mds_create_args a = ts_args(MDS_FT_REG, 0644);
	struct mds_store_stats s;
	struct mds_txn *t;
	char name[MDS_NAME_MAX + 1];
	int rc = 0, created = 0, committed = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	/* Many small transactions until the map is full. */
	for (int i = 0; i < 100000 && rc == 0; i++) {
		struct mds_inode f;
		memset(name, 'n', 200);
		snprintf(name + 200, sizeof(name) - 200, "%06d", i);
		rc = mds_txn_begin(st, MDS_TXN_RW, &t);
		if (rc)
			break;
		rc = mds_ns_create(t, 1, name, strlen(name), &a, &f, NULL);
		if (!rc)
			rc = mds_ext_alloc(t, f.fileid, 0, 8192, NULL);
		if (!rc)
			rc = mds_ext_alloc(t, f.fileid, 65536, 8192, NULL); /* two extents each */
		if (rc) {
			CU_ASSERT_EQUAL(ts_check(st, t), 0);
			mds_txn_abort(t);
			break;
		}
		rc = mds_txn_commit(t);
		if (!rc)
			committed++;
	}
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT(committed > 10);
	CU_ASSERT(strstr(mds_store_errstr(st), "MDB_MAP_FULL") != NULL);

	/* One big transaction over the full map: the call that does not fit fails alone. */
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	rc = 0;
	for (int i = 0; i < 100000 && rc == 0; i++) {
		snprintf(name, sizeof(name), "big%06d", i);
		rc = mds_ns_create(t, 1, name, strlen(name), &a, NULL, NULL);
		if (!rc)
			created++;
	}
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_EQUAL(ts_check(st, t), 0);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.files, 1 + (uint64_t)committed + (uint64_t)created);
	rc = mds_txn_commit(t);
	CU_ASSERT(rc == 0 || rc == -ENOSPC);
	mds_store_close(st);

	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &st), 0);
	CU_ASSERT_EQUAL(ts_check(st, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RDONLY, &t), 0);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.files, 1 + (uint64_t)committed + (rc == 0 ? (uint64_t)created : 0));
	CU_ASSERT_EQUAL(s.used_bytes, (uint64_t)committed * 16384);
	mds_txn_abort(t);
	mds_store_close(st);

	/* A bigger map lets the same store grow again. */
	{
		struct mds_store_opts o = { .map_bytes = 64 << 20 };
		CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, &o, &st), 0);
		CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
		CU_ASSERT_EQUAL(mds_ns_create(t, 1, "after-grow", 10, &a, NULL, NULL), 0);
		CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
		CU_ASSERT_EQUAL(ts_check(st, NULL), 0);
		mds_store_close(st);
	}
}

/* Garbage or a truncated environment where a store should be: an error, not a crash. */
static void test_corrupt_environment(void)
{
	const char *dir = test_tmpdir("store-garbage"), *good = NULL;
	struct mds_store *st = NULL;
	static uint8_t junk[65536];
	char path[512];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	test_fill_random(junk, sizeof(junk), 99);
	CU_ASSERT_EQUAL(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	rc = mds_store_open(dir, NULL, &st);
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NULL(st);

	/* A real store cut short. */
	st = ts_create("store-trunc", 8u << 20, 4096, 65536, 0, &good);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	mds_store_close(st);
	st = NULL;
	snprintf(path, sizeof(path), "%s/data.mdb", good);
	CU_ASSERT_EQUAL(truncate(path, 4096), 0);
	rc = mds_store_open(good, NULL, &st);
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NULL(st);
	CU_ASSERT(strcmp(mds_store_strerror(rc), "") != 0);
	/* An empty file. */
	CU_ASSERT_EQUAL(truncate(path, 0), 0);
	rc = mds_store_open(good, &(struct mds_store_opts){ .rdonly = 1 }, &st);
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NULL(st);
}

static void test_strerror(void)
{
	CU_ASSERT_STRING_EQUAL(mds_store_strerror(-ENOSPC),
			       "no space (volume full, or metadata store map full)");
	CU_ASSERT_STRING_EQUAL(mds_store_strerror(-EUCLEAN), "metadata store is corrupted");
	CU_ASSERT_PTR_NOT_NULL(mds_store_strerror(-12345));
	CU_ASSERT_STRING_EQUAL(mds_store_errstr(NULL), "");
}

TEST_SUITE(store_basic, "mds/store_basic", NULL, NULL,
	   { "create_open_meta", test_create_open_meta },
	   { "abort_and_failed_calls", test_abort_and_failed_calls },
	   { "readonly_beside_writer", test_readonly_beside_writer },
	   { "client_records", test_client_records },
	   { "map_full", test_map_full },
	   { "corrupt_environment", test_corrupt_environment },
	   { "strerror", test_strerror });
