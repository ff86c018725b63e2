/* blkmap's device layer against a real tgtd lab: open by URL, capacity, INQUIRY and VPD, sync and
 * async I/O checked in the LUN backing files, many commands in flight, clear errors for bad URLs,
 * dead portals and non-disk LUNs, and transparent reconnect after the target drops the session. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_open_identity(void)
{
	struct test_lab *lab = lab_up(2, "16M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL, *dev2 = NULL;
	struct blkmap_inquiry inq;
	char sn[64], s[300];
	int have_t10 = 0, have_naa = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	CU_ASSERT_EQUAL(blkmap_dev_kind(dev), BLKMAP_DEV_ISCSI);
	CU_ASSERT_EQUAL(blkmap_dev_size_bytes(dev), 16ull << 20);
	CU_ASSERT_EQUAL(blkmap_dev_block_bytes(dev), 512);
	CU_ASSERT_STRING_EQUAL(blkmap_dev_name(dev), lab->urls[0]);
	/* tgtd reports no Block Limits maximum: the context's 1 MiB cap applies */
	CU_ASSERT_EQUAL(blkmap_dev_block_limits_max_bytes(dev), 0);
	CU_ASSERT_EQUAL(blkmap_dev_max_xfer_bytes(dev), 1u << 20);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_inquiry(dev, &inq), 0);
	CU_ASSERT_EQUAL(inq.device_type, 0);
	CU_ASSERT_STRING_EQUAL(inq.vendor, "SANLAB");
	CU_ASSERT_STRING_EQUAL(inq.product, "pnfs-lab-lun");
	snprintf(sn, sizeof(sn), "SL%05dT1L01", lab->port);
	CU_ASSERT_STRING_EQUAL(inq.serial, sn);
	CU_ASSERT(inq.ndesig >= 2);
	for (unsigned i = 0; i < inq.ndesig; i++) {
		blkmap_designator_str(&inq.desig[i], s, sizeof(s));
		if (inq.desig[i].type == BLKMAP_DESIG_T10 && strstr(s, sn))
			have_t10 = 1;
		if (inq.desig[i].type == BLKMAP_DESIG_NAA && inq.desig[i].len >= 8)
			have_naa = 1;
	}
	CU_ASSERT(have_t10);
	CU_ASSERT(have_naa);
	/* the second LUN is a different unit */
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[1], 0, &dev2), 0);
	{
		struct blkmap_inquiry inq2;
		CU_ASSERT_EQUAL(blkmap_dev_inquiry(dev2, &inq2), 0);
		CU_ASSERT_STRING_NOT_EQUAL(inq2.serial, inq.serial);
	}
	blkmap_dev_close(dev2);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

static void test_open_errors(void)
{
	struct test_lab *lab = lab_up(1, "4M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	char url[400];
	int64_t t0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 3000);
	/* tgt's LUN 0 is the target's controller, not a disk */
	snprintf(url, sizeof(url), "iscsi://127.0.0.1:%d/%s/0", lab->port, lab->iqn);
	CU_ASSERT_EQUAL(blkmap_dev_open(ctx, url, 0, &dev), -ENOTBLK);
	CU_ASSERT_PTR_NULL(dev);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "not a direct-access block device"));
	/* a LUN that does not exist */
	snprintf(url, sizeof(url), "iscsi://127.0.0.1:%d/%s/9", lab->port, lab->iqn);
	CU_ASSERT(blkmap_dev_open(ctx, url, 0, &dev) < 0);
	/* not a URL libiscsi accepts */
	CU_ASSERT_EQUAL(blkmap_dev_open(ctx, "iscsi://127.0.0.1", 0, &dev), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "not an iSCSI LUN URL"));
	/* nobody listens: refused quickly, the URL named */
	snprintf(url, sizeof(url), "iscsi://127.0.0.1:%d/%s/1", test_free_port(), lab->iqn);
	t0 = bmt_now_ms();
	CU_ASSERT_EQUAL(blkmap_dev_open(ctx, url, 0, &dev), -ECONNREFUSED);
	CU_ASSERT(bmt_now_ms() - t0 < 3000);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), url));
	/* a path that does not exist, and a directory */
	CU_ASSERT_EQUAL(blkmap_dev_open(ctx, "/nonexistent/lun.img", 0, &dev), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "/nonexistent/lun.img"));
	CU_ASSERT_EQUAL(blkmap_dev_open(ctx, "/tmp", 0, &dev), -ENOTBLK);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

static void test_sync_io(void)
{
	const size_t len = 1 << 20;
	const uint64_t offs[] = { 0, 5ull << 20, (16ull << 20) - len };
	struct test_lab *lab = lab_up(1, "16M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	unsigned char *pat = malloc(len), *back = malloc(len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	for (size_t k = 0; k < 3; k++) {
		test_fill_random(pat, len, 77 + k);
		CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, pat, len, offs[k]), 0);
		memset(back, 0, len);
		CU_ASSERT_EQUAL(blkmap_dev_pread(dev, back, len, offs[k]), 0);
		CU_ASSERT(memcmp(back, pat, len) == 0);
		CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, len, offs[k]), 0);
		CU_ASSERT(memcmp(back, pat, len) == 0);
	}
	/* a 3 MiB write becomes three commands of the 1 MiB cap; the bytes land in order */
	{
		size_t big = 3 << 20;
		unsigned char *b = malloc(big), *c = malloc(big);
		test_fill_random(b, big, 999);
		CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, b, big, 4096), 0);
		CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], c, big, 4096), 0);
		CU_ASSERT(memcmp(b, c, big) == 0);
		free(b);
		free(c);
	}
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, back, 100, 0), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "multiples of the block size"));
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, back, 4096, 16ull << 20), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "beyond the end"));
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	free(pat);
	free(back);
	lab_down(lab);
}

struct many {
	int done, failed;
	unsigned max_inflight;
	struct blkmap_dev *dev;
};

static void many_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct many *m = priv;
	(void)ctx;
	(void)res;
	m->done++;
	if (status < 0)
		m->failed++;
	if (blkmap_dev_inflight(m->dev) > m->max_inflight)
		m->max_inflight = blkmap_dev_inflight(m->dev);
}

static void test_async_queue_depth(void)
{
	const int n = 96;
	const size_t len = 64 << 10;
	struct test_lab *lab = lab_up(1, "16M", NULL);
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct many m = { 0 };
	unsigned char *buf = malloc((size_t)n * len), *back = malloc((size_t)n * len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	blkmap_ctx_opts_init(&o);
	o.initiator_name = BMT_INITIATOR_A;
	o.queue_depth = 8;
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&o, &ctx), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &m.dev), 0);
	test_fill_random(buf, (size_t)n * len, 5);
	for (int i = 0; i < n; i++) {
		struct iovec iov = { buf + (size_t)i * len, len };
		CU_ASSERT_EQUAL(blkmap_dev_writev_async(m.dev, (uint64_t)i * len, &iov, 1, many_cb, &m), 0);
	}
	/* queued at once; the device holds at most the queue depth on the wire */
	CU_ASSERT_EQUAL(blkmap_outstanding(ctx), (unsigned)n);
	CU_ASSERT(blkmap_dev_inflight(m.dev) <= 8);
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(m.done, n);
	CU_ASSERT_EQUAL(m.failed, 0);
	CU_ASSERT(m.max_inflight <= 8);
	CU_ASSERT(m.max_inflight >= 2);
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, (size_t)n * len, 0), 0);
	CU_ASSERT(memcmp(buf, back, (size_t)n * len) == 0);
	blkmap_dev_close(m.dev);
	blkmap_ctx_destroy(ctx);
	free(buf);
	free(back);
	lab_down(lab);
}

struct loop_state {
	int done, failed, deadlk, resolve_refused;
	struct blkmap_dev *dev;
	unsigned char *buf;
	struct blkmap_vol *vol; /* one leaf, on the LUN at url */
	const char *url;
};

static void own_loop_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct loop_state *s = priv;
	unsigned char b[512];
	(void)res;
	s->done++;
	s->failed += status < 0;
	/* a sync call from a callback would recurse into the loop: refused */
	if (blkmap_dev_pread(s->dev, b, sizeof(b), 0) == -EDEADLK && strstr(blkmap_errstr(ctx), "callback"))
		s->deadlk++;
	/* so would opening LUNs to resolve a volume: it finds no device and binds nothing */
	if (s->done == 1) {
		struct blkmap_discover_opts o = { .paths = &s->url, .npaths = 1 };
		if (blkmap_resolve(ctx, s->vol, &o, NULL) == -ENODEV && !blkmap_vol_leaf_dev(s->vol, 0))
			s->resolve_refused++;
	}
}

/* The way the server and the client drive blkmap: the context's one fd in their own poll loop. */
static void test_own_event_loop(void)
{
	const int n = 40;
	const size_t len = 128 << 10;
	struct test_lab *lab = lab_up(2, "8M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *d2 = NULL;
	struct loop_state s = { 0 };
	unsigned char *back = malloc(len);
	int fd, rounds = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &s.dev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[1], 0, &d2), 0);
	fd = blkmap_get_fd(ctx);
	CU_ASSERT(fd >= 0);
	CU_ASSERT_EQUAL(blkmap_which_events(ctx), POLLIN);
	s.buf = malloc((size_t)n * len);
	test_fill_random(s.buf, (size_t)n * len, 8);
	{
		uint8_t runid[16];
		test_fill_random(runid, sizeof(runid), 9);
		s.vol = bmt_pool_volume(runid, 1, 1 << 20, 1 << 20, 64 << 10);
		s.url = lab->urls[1];
	}
	for (int i = 0; i < n; i++) {
		struct iovec iov = { s.buf + (size_t)i * len, len };
		CU_ASSERT_EQUAL(blkmap_dev_writev_async(i % 2 ? d2 : s.dev, (uint64_t)(i / 2) * len, &iov, 1, own_loop_cb,
							&s), 0);
	}
	while (s.done < n && rounds < 100000) {
		struct pollfd p = { .fd = fd, .events = (short)blkmap_which_events(ctx) };
		int r = poll(&p, 1, 1000);
		CU_ASSERT_FATAL(r >= 0);
		CU_ASSERT_EQUAL(blkmap_service(ctx, r > 0 ? p.revents : 0), 0);
		rounds++;
	}
	CU_ASSERT_EQUAL(s.done, n);
	CU_ASSERT_EQUAL(s.failed, 0);
	CU_ASSERT_EQUAL(s.deadlk, n);
	CU_ASSERT_EQUAL(s.resolve_refused, 1);
	blkmap_vol_free(s.vol);
	CU_ASSERT_EQUAL(blkmap_outstanding(ctx), 0);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(bmt_read_file(lab->files[i % 2], back, len, (uint64_t)(i / 2) * len), 0);
		CU_ASSERT(memcmp(back, s.buf + (size_t)i * len, len) == 0);
	}
	/* closing a device with commands queued: they complete with -ECANCELED, nothing leaks */
	{
		struct many m = { 0 };
		m.dev = d2;
		for (int i = 0; i < 8; i++) {
			struct iovec iov = { s.buf, len };
			CU_ASSERT_EQUAL(blkmap_dev_writev_async(d2, 0, &iov, 1, many_cb, &m), 0);
		}
		blkmap_dev_close(d2);
		CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
		CU_ASSERT_EQUAL(m.done, 8);
		CU_ASSERT_EQUAL(m.failed, 8);
	}
	blkmap_dev_close(s.dev);
	blkmap_ctx_destroy(ctx);
	free(s.buf);
	free(back);
	lab_down(lab);
}

struct closer {
	struct blkmap_dev *dev;
	int done, ok, cancelled;
};

static void closer_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct closer *c = priv;
	(void)ctx;
	(void)res;
	c->done++;
	c->ok += status == 0;
	c->cancelled += status == -ECANCELED;
	if (c->dev) {
		/* the application gives the device up from inside a completion (inside libiscsi) */
		blkmap_dev_close(c->dev);
		c->dev = NULL;
	}
}

static void test_close_from_callback(void)
{
	struct test_lab *lab = lab_up(1, "8M", NULL);
	struct blkmap_ctx *ctx;
	struct closer c = { 0 };
	unsigned char *buf = malloc(64 << 10);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &c.dev), 0);
	memset(buf, 1, 64 << 10);
	for (int i = 0; i < 48; i++) {
		struct iovec iov = { buf, 64 << 10 };
		CU_ASSERT_EQUAL(blkmap_dev_writev_async(c.dev, (uint64_t)i << 16, &iov, 1, closer_cb, &c), 0);
	}
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(c.done, 48);
	CU_ASSERT(c.ok >= 1);
	CU_ASSERT_EQUAL(c.ok + c.cancelled, 48);
	blkmap_ctx_destroy(ctx);
	free(buf);
	lab_down(lab);
}

static void test_reconnect(void)
{
	const size_t len = 256 << 10;
	struct test_lab *lab = lab_up(1, "16M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	unsigned char *pat = malloc(len), *back = malloc(len);
	struct many m = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 8000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	m.dev = dev;
	/* idle session dropped by the target: the next I/O logs in again */
	CU_ASSERT_EQUAL(blkmap_dev_logins(dev), 1);
	CU_ASSERT(bmt_lab_drop_sessions(lab) >= 1);
	test_fill_random(pat, len, 31);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, pat, len, 1 << 20), 0);
	CU_ASSERT_EQUAL(blkmap_dev_logins(dev), 2);
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, len, 1 << 20), 0);
	CU_ASSERT(memcmp(back, pat, len) == 0);
	/* dropped with commands in flight: they are sent again on the new session */
	for (int i = 0; i < 32; i++) {
		struct iovec iov = { pat, len };
		CU_ASSERT_EQUAL(blkmap_dev_writev_async(dev, (uint64_t)i * len, &iov, 1, many_cb, &m), 0);
	}
	CU_ASSERT_EQUAL(blkmap_run_once(ctx, 0), 0);
	CU_ASSERT(bmt_lab_drop_sessions(lab) >= 1);
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(m.done, 32);
	CU_ASSERT_EQUAL(m.failed, 0);
	CU_ASSERT_EQUAL(blkmap_dev_logins(dev), 3);
	for (int i = 0; i < 32; i++) {
		CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, len, (uint64_t)i * len), 0);
		CU_ASSERT(memcmp(back, pat, len) == 0);
	}
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	free(pat);
	free(back);
	lab_down(lab);
}

TEST_SUITE(blkmap_dev, "integration/blkmap_dev", NULL, NULL,
	   { "open_identity", test_open_identity },
	   { "open_errors", test_open_errors },
	   { "sync_io", test_sync_io },
	   { "async_queue_depth", test_async_queue_depth },
	   { "own_event_loop", test_own_event_loop },
	   { "close_from_callback", test_close_from_callback },
	   { "reconnect", test_reconnect });
