/* Cache flushes through the engine, seen where they land: tgtd's rdwr backing store answers
 * SYNCHRONIZE CACHE with fdatasync on the LUN's backing file, so strace on the target counts them per
 * LUN; for files and loop devices the runner's own fdatasync calls are counted. Also the failure path:
 * a LUN whose target was killed fails the volume flush within the command timeout, naming the LUN. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/integration/lab_stripe.h"
#include "tests/lab.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define UNIT (64ull << 10)
#define START MIB

struct flush_state {
	int done, status, leaf;
	char msg[700], dev[512];
};

static void flush_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct flush_state *s = priv;
	(void)ctx;
	s->done++;
	s->status = status;
	s->leaf = res->leaf;
	snprintf(s->msg, sizeof(s->msg), "%s", res->message ? res->message : "");
	snprintf(s->dev, sizeof(s->dev), "%s", res->dev_name ? res->dev_name : "");
}

static void test_stripe_4_luns(void)
{
	struct test_lab *lab = lab_up(4, "12M", NULL);
	struct lab_sync_trace *tr;
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct flush_state st = { 0 };
	char why[300];
	unsigned char *src = malloc(4 * MIB);
	int nfds = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	vol = lab_stripe_up(&lab, 1, (uint64_t)getpid() + 31, 20000, START, 8 * MIB, UNIT, &ctx);
	tr = lab_sync_trace_start(lab, why, sizeof(why));
	if (!tr) {
		blkmap_vol_free(vol);
		blkmap_ctx_destroy(ctx);
		lab_down(lab);
		free(src);
		test_skip("%s", why);
		return;
	}

	/* writes alone make the target sync nothing */
	test_fill_random(src, 4 * MIB, 5);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, src, 4 * MIB, 0), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 0);

	/* a volume flush: one SYNCHRONIZE CACHE per LUN, each a sync of that LUN's backing file */
	CU_ASSERT_EQUAL(blkmap_vol_flush_async(vol, flush_cb, &st), 0);
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(st.done, 1);
	CU_ASSERT_EQUAL(st.status, 0);
	CU_ASSERT_EQUAL(st.leaf, -1);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 4);
	CU_ASSERT_EQUAL(nfds, 4);
	for (unsigned l = 0; l < 4; l++) {
		CU_ASSERT_EQUAL(blkmap_dev_flushes(blkmap_vol_leaf_dev(vol, 2 * l)), 1);
		CU_ASSERT(blkmap_dev_has_volatile_cache(blkmap_vol_leaf_dev(vol, 2 * l)));
	}

	/* the sync form, too */
	lab_sync_trace_reset(tr);
	CU_ASSERT_EQUAL(blkmap_vol_flush(vol), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 4);
	CU_ASSERT_EQUAL(nfds, 4);

	/* ranges: only the LUNs holding them. Units 0 and 4 are both on LUN 0, unit 2 on LUN 2. */
	{
		struct blkmap_range r[3] = { { 0, UNIT }, { 4 * UNIT + 512, 512 }, { 2 * UNIT, 4096 } };
		lab_sync_trace_reset(tr);
		memset(&st, 0, sizeof(st));
		CU_ASSERT_EQUAL(blkmap_vol_flush_ranges_async(vol, r, 2, flush_cb, &st), 0);
		CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
		CU_ASSERT_EQUAL(st.status, 0);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 1);
		CU_ASSERT_EQUAL(blkmap_dev_flushes(blkmap_vol_leaf_dev(vol, 0)), 3);
		CU_ASSERT_EQUAL(blkmap_dev_flushes(blkmap_vol_leaf_dev(vol, 2)), 2);
		lab_sync_trace_reset(tr);
		CU_ASSERT_EQUAL(blkmap_vol_flush_ranges_async(vol, r, 3, flush_cb, &st), 0);
		CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 2);
		CU_ASSERT_EQUAL(nfds, 2);
		CU_ASSERT_EQUAL(blkmap_dev_flushes(blkmap_vol_leaf_dev(vol, 4)), 3);
		/* nothing to flush, or outside the volume: refused, no callback */
		r[0].len_bytes = 0;
		CU_ASSERT_EQUAL(blkmap_vol_flush_ranges_async(vol, r, 1, flush_cb, &st), -EINVAL);
		r[0].off_bytes = 64 * MIB;
		r[0].len_bytes = 4096;
		CU_ASSERT_EQUAL(blkmap_vol_flush_ranges_async(vol, r, 1, flush_cb, &st), -ERANGE);
		CU_ASSERT_EQUAL(st.done, 2);
	}

	/* chosen leaves: entries 2 and 6 (LUNs 1 and 3); none, or a non-leaf, is refused */
	{
		uint8_t leaves[9] = { 0 };
		lab_sync_trace_reset(tr);
		leaves[2] = leaves[6] = 1;
		CU_ASSERT_EQUAL(blkmap_vol_flush_leaves_async(vol, leaves, flush_cb, &st), 0);
		CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
		CU_ASSERT_EQUAL(st.status, 0);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 2);
		CU_ASSERT_EQUAL(nfds, 2);
		CU_ASSERT_EQUAL(blkmap_dev_flushes(blkmap_vol_leaf_dev(vol, 6)), 3);
		memset(leaves, 0, sizeof(leaves));
		CU_ASSERT_EQUAL(blkmap_vol_flush_leaves_async(vol, leaves, flush_cb, &st), -EINVAL);
		leaves[1] = 1; /* a slice */
		CU_ASSERT_EQUAL(blkmap_vol_flush_leaves_async(vol, leaves, flush_cb, &st), -EINVAL);
	}

	/* one device alone */
	lab_sync_trace_reset(tr);
	CU_ASSERT_EQUAL(blkmap_dev_flush(blkmap_vol_leaf_dev(vol, 6)), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 1);
	lab_sync_trace_stop(tr);

	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
	free(src);
}

static char *make_file(const char *tag, uint64_t size)
{
	static char path[4][400];
	static int next;
	char *p = path[next++ % 4];
	int fd;

	snprintf(p, 400, "%s/%s.img", test_tmpdir("flush"), tag);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, (off_t)size), 0);
	close(fd);
	return p;
}

/* Two leaves striped: files, then (root) loop devices over files. The runner's own fdatasync calls
 * are traced: one per leaf device per flush. */
static void flush_local(int loop)
{
	char loopdev[2][64], why[300];
	struct lab_sync_trace *tr;
	struct blkmap_ctx *ctx = bmt_ctx(NULL, 0);
	struct blkmap_vol *vol = NULL;
	struct blkmap_dev *dev[2] = { 0 };
	uint32_t idx, slices[2];
	unsigned char *buf = malloc(MIB);
	int nfds = 0;

	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	for (int k = 0; k < 2; k++) {
		struct blkmap_sig_comp c = { 0, 4, (const uint8_t *)"none" };
		char *path = make_file(k ? "leaf1" : "leaf0", 4 * MIB);
		const char *spec = path;
		if (loop) {
			CU_ASSERT_EQUAL_FATAL(bmt_loop_attach(path, loopdev[k], sizeof(loopdev[k])), 0);
			spec = loopdev[k];
		}
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, spec, 0, &dev[k]), 0);
		CU_ASSERT_EQUAL(blkmap_dev_kind(dev[k]), loop ? BLKMAP_DEV_BLOCK : BLKMAP_DEV_FILE);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_simple(vol, &c, 1, &idx), 0);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_bind(vol, idx, dev[k]), 0);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_slice(vol, 0, 4 * MIB, idx, &slices[k]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_stripe(vol, UNIT, slices, 2, &idx), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_validate(vol), 0);
	test_fill_random(buf, MIB, 77);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, MIB, 0), 0);

	tr = lab_sync_trace_start_pid((int)getpid(), why, sizeof(why));
	if (!tr) {
		test_skip("%s", why);
	} else {
		CU_ASSERT_EQUAL(blkmap_vol_flush(vol), 0);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, &nfds), 2);
		CU_ASSERT_EQUAL(nfds, 2);
		lab_sync_trace_reset(tr);
		CU_ASSERT_EQUAL(blkmap_dev_flush(dev[1]), 0);
		CU_ASSERT_EQUAL(lab_sync_trace_count(tr, NULL), 1);
		lab_sync_trace_stop(tr);
	}
	CU_ASSERT_EQUAL(blkmap_dev_flushes(dev[0]), tr ? 1u : 0u);
	CU_ASSERT_EQUAL(blkmap_dev_flushes(dev[1]), tr ? 2u : 0u);
	/* an unbound leaf cannot be flushed: -ENODEV naming it */
	CU_ASSERT_EQUAL(blkmap_vol_bind(vol, 0, NULL), 0);
	CU_ASSERT_EQUAL(blkmap_vol_flush(vol), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "volume 0"));
	blkmap_vol_free(vol);
	for (int k = 0; k < 2; k++)
		blkmap_dev_close(dev[k]);
	blkmap_ctx_destroy(ctx);
	if (loop)
		for (int k = 0; k < 2; k++)
			bmt_loop_detach(loopdev[k]);
	free(buf);
}

static void test_files(void)
{
	flush_local(0);
}

static void test_loop_devices(void)
{
	TEST_SKIP_IF(!bmt_have_loop(), "no loop devices here (needs root and losetup)");
	flush_local(1);
}

/* One lab per LUN; the second one's tgtd is killed: the flush of the volume fails with -ETIMEDOUT
 * within the command timeout, the message and the result naming that LUN; the others flushed. */
static void test_killed_lun(void)
{
	const unsigned timeout_ms = 2000;
	struct test_lab *labs[4] = { 0 };
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct flush_state st = { 0 };
	unsigned char buf[4096];
	int victim = 1;
	int64_t t0;

	lab_stripe_labs_up(labs, 4, "8M");
	vol = lab_stripe_up(labs, 4, (uint64_t)getpid() + 41, timeout_ms, START, 6 * MIB, UNIT, &ctx);
	test_fill_random(buf, sizeof(buf), 3);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, sizeof(buf), UNIT * (uint64_t)victim), 0);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(labs[victim]), 0);

	t0 = bmt_now_ms();
	CU_ASSERT_EQUAL(blkmap_vol_flush_async(vol, flush_cb, &st), 0);
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT(bmt_now_ms() - t0 <= (int64_t)timeout_ms + 1500); /* bounded by the timeout: no hang */
	CU_ASSERT_EQUAL(st.done, 1);
	CU_ASSERT_EQUAL(st.status, -ETIMEDOUT);
	CU_ASSERT_EQUAL(st.leaf, 2 * victim);
	CU_ASSERT_STRING_EQUAL(st.dev, labs[victim]->urls[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, labs[victim]->urls[0]));
	CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "SYNCHRONIZE CACHE(10)"));
	for (int l = 0; l < 4; l++)
		CU_ASSERT_EQUAL(blkmap_dev_flushes(blkmap_vol_leaf_dev(vol, 2 * (uint32_t)l)), l == victim ? 0u : 1u);
	/* the sync form says the same in the volume's error text */
	CU_ASSERT_EQUAL(blkmap_vol_flush(vol), -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), labs[victim]->urls[0]));
	/* the device alone, through the context's error text */
	CU_ASSERT_EQUAL(blkmap_dev_flush(blkmap_vol_leaf_dev(vol, 2 * (uint32_t)victim)), -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), labs[victim]->urls[0]));
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	for (int i = 0; i < 4; i++)
		lab_down(labs[i]);
}

TEST_SUITE(blkmap_flush, "integration/blkmap_flush", NULL, NULL,
	   { "stripe_4_luns", test_stripe_4_luns },
	   { "files", test_files },
	   { "loop_devices", test_loop_devices },
	   { "killed_lun", test_killed_lun });
