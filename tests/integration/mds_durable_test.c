/* pnfs-mds makes acknowledged MDS-path writes stable: tgt answers SYNCHRONIZE CACHE with fdatasync on
 * the LUN's backing file, so strace on the lab's tgtd counts the flushes per LUN. An UNSTABLE
 * overwrite flushes nothing until COMMIT, which flushes the LUNs such writes went to (and nothing when
 * no write is pending); FILE_SYNC and DATA_SYNC writes, and writes into new blocks, flush the LUNs they
 * wrote before replying FILE_SYNC4. A LUN logging in again before COMMIT changes the write verifier;
 * a LUN whose target is gone makes COMMIT fail with NFS4ERR_IO and the log name it. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct nc *client(struct test_mds *m, const char *owner)
{
	struct nc *c = nc_connect(m->port);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(nc_setup(c, owner), 0);
	return c;
}

/* One WRITE; its status, committed level and verifier. */
static int write_one(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t off, const void *buf,
		     size_t len, stable_how4 stable, stable_how4 *committed, uint8_t verf[NFS4_VERIFIER_SIZE])
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	int rc;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_WRITE);
	ops[1].nfs_argop4_u.opwrite.stateid = *sid;
	ops[1].nfs_argop4_u.opwrite.offset = off;
	ops[1].nfs_argop4_u.opwrite.stable = stable;
	ops[1].nfs_argop4_u.opwrite.data.data_len = (u_int)len;
	ops[1].nfs_argop4_u.opwrite.data.data_val = (char *)buf;
	rc = nc_seq(c, ops, 2, &res);
	if (rc == 0) {
		rc = (int)res.res.status;
		if (rc == 0 && res.res.resarray.resarray_len == 3) {
			WRITE4resok *ok = &res.res.resarray.resarray_val[2].nfs_resop4_u.opwrite.WRITE4res_u.resok4;
			CU_ASSERT_EQUAL(ok->count, len);
			*committed = ok->committed;
			memcpy(verf, ok->writeverf, NFS4_VERIFIER_SIZE);
		}
	}
	proto_compound_res_free(&res);
	return rc;
}

static int commit_one(struct nc *c, const struct nc_fh *fh, uint8_t verf[NFS4_VERIFIER_SIZE])
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	int rc;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_COMMIT);
	rc = nc_seq(c, ops, 2, &res);
	if (rc == 0) {
		rc = (int)res.res.status;
		if (rc == 0 && res.res.resarray.resarray_len == 3)
			memcpy(verf, res.res.resarray.resarray_val[2].nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf,
			       NFS4_VERIFIER_SIZE);
	}
	proto_compound_res_free(&res);
	return rc;
}

struct setup {
	struct test_lab *lab;
	struct test_mds *m;
	struct nc *c;
	struct nc_fh root, fh;
	stateid4 sid;
};

static int setup(struct setup *s, int nluns, const char *args)
{
	s->lab = lab_up(nluns, "32M", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s->lab);
	s->m = tmds_new(s->lab, NULL, args);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s->m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(s->m), 0);
	s->c = client(s->m, "durable");
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(s->c, &s->root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(s->c, &s->root, "f", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &s->fh, &s->sid), 0);
	return 0;
}

static void teardown(struct setup *s)
{
	nc_free(s->c);
	tmds_free(s->m);
	lab_down(s->lab);
}

static void test_commit_and_stable_writes(void)
{
	struct setup s = { 0 };
	struct lab_sync_trace *tr;
	uint8_t verf[NFS4_VERIFIER_SIZE], cverf[NFS4_VERIFIER_SIZE];
	stable_how4 committed = UNSTABLE4;
	char why[300];
	unsigned char *buf = malloc(64 << 10), *back = malloc(64 << 10);
	size_t got = 0;
	int nfds = 0;

	setup(&s, 4, NULL);
	tr = lab_sync_trace_start(s.lab, why, sizeof(why));
	if (!tr) {
		teardown(&s);
		free(buf);
		free(back);
		test_skip("%s", why);
		return;
	}
	/* UNSTABLE into new blocks: flushed before the blocks count as written, so FILE_SYNC4 */
	test_fill_random(buf, 64 << 10, 1);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, 64 << 10, UNSTABLE4, &committed, verf), 0);
	CU_ASSERT_EQUAL(committed, FILE_SYNC4);
	CU_ASSERT(lab_sync_trace_count(tr, &nfds) >= 1);
	CU_ASSERT_EQUAL(nfds, 1); /* 64 KiB inside one stripe unit: one LUN */

	/* an UNSTABLE overwrite: nothing flushed, UNSTABLE4 */
	lab_sync_trace_reset(tr);
	test_fill_random(buf, 64 << 10, 2);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, 64 << 10, UNSTABLE4, &committed, verf), 0);
	CU_ASSERT_EQUAL(committed, UNSTABLE4);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 0);

	/* COMMIT flushes the LUN that write went to, with the same verifier */
	CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 1);
	CU_ASSERT_EQUAL(nfds, 1);
	CU_ASSERT(memcmp(verf, cverf, NFS4_VERIFIER_SIZE) == 0);

	/* UNSTABLE overwrites on two LUNs (the first and the second stripe unit, 1 MiB): COMMIT flushes
	 * those two */
	{
		unsigned char *big = malloc(2 << 20);
		test_fill_random(big, 2 << 20, 7);
		CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 64 << 10, big, (1 << 20) - (64 << 10), FILE_SYNC4,
					  &committed, verf), 0);
		CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 1 << 20, big, 1 << 20, FILE_SYNC4, &committed, verf), 0);
		lab_sync_trace_reset(tr);
		CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, 64 << 10, UNSTABLE4, &committed, verf), 0);
		CU_ASSERT_EQUAL(committed, UNSTABLE4);
		CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 1 << 20, big, 4096, UNSTABLE4, &committed, verf), 0);
		CU_ASSERT_EQUAL(committed, UNSTABLE4);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 0);
		CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), 0);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 2);
		CU_ASSERT_EQUAL(nfds, 2);
		free(big);
	}

	/* nothing pending: COMMIT answers without a flush */
	lab_sync_trace_reset(tr);
	CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 0);
	CU_ASSERT(memcmp(verf, cverf, NFS4_VERIFIER_SIZE) == 0);

	/* FILE_SYNC and DATA_SYNC overwrites: the LUN written is flushed before the reply */
	lab_sync_trace_reset(tr);
	test_fill_random(buf + 4096, 4096, 3);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 4096, buf + 4096, 4096, FILE_SYNC4, &committed, verf), 0);
	CU_ASSERT_EQUAL(committed, FILE_SYNC4);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 1);
	CU_ASSERT_EQUAL(nfds, 1);
	lab_sync_trace_reset(tr);
	test_fill_random(buf + 8192, 4096, 4);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 8192, buf + 8192, 4096, DATA_SYNC4, &committed, verf), 0);
	CU_ASSERT_EQUAL(committed, FILE_SYNC4);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 1);
	/* and those left nothing for COMMIT */
	lab_sync_trace_reset(tr);
	CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 0);
	lab_sync_trace_stop(tr);

	/* the first 64 KiB are what buf holds (its later pieces rewritten at 4096 and 8192) */
	CU_ASSERT_EQUAL(nc_read(s.c, &s.fh, &s.sid, 0, back, 64 << 10, &got), 0);
	CU_ASSERT_EQUAL(got, 64 << 10);
	CU_ASSERT(memcmp(buf, back, 64 << 10) == 0);
	teardown(&s);
	free(buf);
	free(back);
}

/* The target may have lost its cache when a LUN had to log in again: COMMIT answers a new verifier,
 * so the client writes its UNSTABLE data again. */
static void test_relogin_changes_verifier(void)
{
	struct setup s = { 0 };
	uint8_t verf[NFS4_VERIFIER_SIZE], v2[NFS4_VERIFIER_SIZE], cverf[NFS4_VERIFIER_SIZE];
	stable_how4 committed = UNSTABLE4;
	unsigned char buf[8192];
	char *log;

	setup(&s, 2, NULL);
	test_fill_random(buf, sizeof(buf), 5);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, sizeof(buf), FILE_SYNC4, &committed, verf), 0);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, sizeof(buf), UNSTABLE4, &committed, verf), 0);
	CU_ASSERT_EQUAL(committed, UNSTABLE4);
	CU_ASSERT(bmt_lab_drop_sessions(s.lab) >= 2);
	CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), 0);
	CU_ASSERT(memcmp(verf, cverf, NFS4_VERIFIER_SIZE) != 0);
	log = tmds_log(s.m);
	CU_ASSERT_PTR_NOT_NULL(log && strstr(log, "new write verifier"));
	free(log);
	/* from now on the new verifier; a COMMIT without a relogin keeps it */
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, sizeof(buf), UNSTABLE4, &committed, v2), 0);
	CU_ASSERT(memcmp(v2, cverf, NFS4_VERIFIER_SIZE) == 0);
	CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), 0);
	CU_ASSERT(memcmp(v2, cverf, NFS4_VERIFIER_SIZE) == 0);
	teardown(&s);
}

/* The target dies with an UNSTABLE write in its cache: COMMIT fails with NFS4ERR_IO within the LUN
 * timeout, and the log names the LUN. */
static void test_flush_failure(void)
{
	struct setup s = { 0 };
	uint8_t verf[NFS4_VERIFIER_SIZE], cverf[NFS4_VERIFIER_SIZE];
	stable_how4 committed = UNSTABLE4;
	unsigned char buf[4096];
	char *log;

	setup(&s, 2, "--lun-timeout 2");
	test_fill_random(buf, sizeof(buf), 6);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, sizeof(buf), FILE_SYNC4, &committed, verf), 0);
	CU_ASSERT_EQUAL(write_one(s.c, &s.fh, &s.sid, 0, buf, sizeof(buf), UNSTABLE4, &committed, verf), 0);
	CU_ASSERT_EQUAL(committed, UNSTABLE4);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(s.lab), 0);
	CU_ASSERT_EQUAL(commit_one(s.c, &s.fh, cverf), NFS4ERR_IO);
	log = tmds_log(s.m);
	CU_ASSERT_PTR_NOT_NULL(log && strstr(log, "COMMIT: flushing the pool's LUNs failed"));
	CU_ASSERT_PTR_NOT_NULL(log && strstr(log, "SYNCHRONIZE CACHE(10)"));
	CU_ASSERT_PTR_NOT_NULL(log && (strstr(log, s.lab->urls[0]) || strstr(log, s.lab->urls[1])));
	free(log);
	teardown(&s);
}

TEST_SUITE(mds_durable, "integration/mds_durable", NULL, NULL,
	   { "commit_and_stable_writes", test_commit_and_stable_writes },
	   { "relogin_changes_verifier", test_relogin_changes_verifier },
	   { "flush_failure", test_flush_failure });
