/* blkmap's local leaves: a regular file (buffered, through the worker pool) and, where losetup works,
 * a loop block device opened O_DIRECT, with unaligned caller buffers bounced; persistent reservations
 * on either are refused with -EOPNOTSUPP and a reason. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *make_file(const char *tag, uint64_t bytes)
{
	static char path[400];
	int fd;
	snprintf(path, sizeof(path), "%s/%s.img", test_tmpdir(tag), tag);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)bytes) == 0);
	close(fd);
	return path;
}

struct counts {
	int done, failed;
};

static void count_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct counts *c = priv;
	(void)ctx;
	(void)res;
	c->done++;
	c->failed += status < 0;
}

static void test_file(void)
{
	char *path = make_file("bmfile", 4 << 20);
	struct blkmap_ctx *ctx = bmt_ctx(NULL, 0);
	struct blkmap_dev *dev = NULL, *ro = NULL;
	struct blkmap_inquiry inq;
	unsigned char *buf = malloc(1 << 20), *back = malloc(1 << 20);
	struct counts cnt = { 0 };

	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, path, 0, &dev), 0);
	CU_ASSERT_EQUAL(blkmap_dev_kind(dev), BLKMAP_DEV_FILE);
	CU_ASSERT_EQUAL(blkmap_dev_size_bytes(dev), 4 << 20);
	CU_ASSERT_EQUAL(blkmap_dev_block_bytes(dev), 512);
	CU_ASSERT_STRING_EQUAL(blkmap_dev_name(dev), path);
	test_fill_random(buf, 1 << 20, 11);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, buf, 1 << 20, 3 << 20), 0);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, back, 1 << 20, 3 << 20), 0);
	CU_ASSERT(memcmp(buf, back, 1 << 20) == 0);
	CU_ASSERT_EQUAL(bmt_read_file(path, back, 1 << 20, 3 << 20), 0);
	CU_ASSERT(memcmp(buf, back, 1 << 20) == 0);
	/* many at once through the pool */
	for (int i = 0; i < 64; i++) {
		struct iovec iov = { buf + i * 4096, 4096 };
		CU_ASSERT_EQUAL(blkmap_dev_writev_async(dev, (uint64_t)i * 4096, &iov, 1, count_cb, &cnt), 0);
	}
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(cnt.done, 64);
	CU_ASSERT_EQUAL(cnt.failed, 0);
	CU_ASSERT_EQUAL(bmt_read_file(path, back, 64 * 4096, 0), 0);
	CU_ASSERT(memcmp(buf, back, 64 * 4096) == 0);
	/* no SCSI here */
	CU_ASSERT_EQUAL(blkmap_dev_inquiry(dev, &inq), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(blkmap_pr_register(dev, 0, 1, 1), -EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "no persistent reservations"));
	/* read-only */
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, path, BLKMAP_OPEN_RDONLY, &ro), 0);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(ro, buf, 4096, 0), -EROFS);
	CU_ASSERT_EQUAL(blkmap_dev_pread(ro, back, 4096, 3 << 20), 0);
	CU_ASSERT(memcmp(buf, back, 4096) == 0);
	/* references: the device stays open until the last one goes */
	CU_ASSERT_PTR_EQUAL(blkmap_dev_ref(dev), dev);
	blkmap_dev_close(dev);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, back, 4096, 0), 0);
	blkmap_dev_close(dev);
	blkmap_dev_close(ro);
	blkmap_ctx_destroy(ctx);
	free(buf);
	free(back);
}

static void test_loop_direct(void)
{
	char *path, loop[64];
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	unsigned char *raw = malloc((1 << 20) + 1), *buf = raw + 1, *back = malloc(1 << 20);

	TEST_SKIP_IF(!bmt_have_loop(), "no loop devices here (needs root and losetup)");
	path = make_file("bmloop", 8 << 20);
	CU_ASSERT_EQUAL_FATAL(bmt_loop_attach(path, loop, sizeof(loop)), 0);
	ctx = bmt_ctx(NULL, 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, loop, 0, &dev), 0);
	CU_ASSERT_EQUAL(blkmap_dev_kind(dev), BLKMAP_DEV_BLOCK);
	CU_ASSERT_EQUAL(blkmap_dev_size_bytes(dev), 8 << 20);
	CU_ASSERT(blkmap_dev_block_bytes(dev) >= 512);
	/* an unaligned buffer goes through the bounce path */
	test_fill_random(buf, 1 << 20, 12);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, buf, 1 << 20, 2 << 20), 0);
	memset(back, 0, 1 << 20);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, back, 1 << 20, 2 << 20), 0);
	CU_ASSERT(memcmp(buf, back, 1 << 20) == 0);
	/* aligned buffers go straight through */
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, back, 1 << 20, 0), 0);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	bmt_loop_detach(loop);
	/* the bytes are in the file under the loop device */
	CU_ASSERT_EQUAL(bmt_read_file(path, back, 1 << 20, 2 << 20), 0);
	CU_ASSERT(memcmp(buf, back, 1 << 20) == 0);
	CU_ASSERT_EQUAL(bmt_read_file(path, back, 1 << 20, 0), 0);
	CU_ASSERT(memcmp(buf, back, 1 << 20) == 0);
	free(raw);
	free(back);
}

static void test_loop_no_pr(void)
{
	char *path, loop[64];
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	struct blkmap_pr_keys k;

	TEST_SKIP_IF(!bmt_have_loop(), "no loop devices here (needs root and losetup)");
	path = make_file("bmloop2", 1 << 20);
	CU_ASSERT_EQUAL_FATAL(bmt_loop_attach(path, loop, sizeof(loop)), 0);
	ctx = bmt_ctx(NULL, 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, loop, 0, &dev), 0);
	CU_ASSERT_EQUAL(blkmap_pr_register(dev, 0, 7, 1), -EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), loop));
	CU_ASSERT_EQUAL(blkmap_pr_read_keys(dev, &k), -EOPNOTSUPP);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	bmt_loop_detach(loop);
}

/* A context destroyed while a volume and a caller still hold its devices: the memory stays for the
 * last reference, every call says -ENODEV, nothing crashes or leaks. */
static void test_ctx_destroyed_first(void)
{
	char *path = make_file("bmorphan", 1 << 20);
	struct blkmap_ctx *ctx = bmt_ctx(NULL, 0);
	struct blkmap_dev *dev = NULL;
	struct blkmap_vol *vol = NULL;
	unsigned char buf[512];

	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, path, 0, &dev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_parse_text("simple 0:aa\nslice 0 512K 0\n", &vol, NULL, 0), 0);
	CU_ASSERT_EQUAL(blkmap_vol_bind(vol, 0, dev), 0);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, sizeof(buf), 0), 0);
	blkmap_ctx_destroy(ctx);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), -ENODEV);
	CU_ASSERT_EQUAL(blkmap_vol_pread(vol, buf, sizeof(buf), 0), -ENODEV);
	CU_ASSERT_STRING_EQUAL(blkmap_dev_name(dev), path);
	blkmap_vol_free(vol);
	blkmap_dev_close(dev);
}

struct res_seen {
	int done, status;
	unsigned commands;
	uint64_t bytes;
};

static void res_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct res_seen *r = priv;
	(void)ctx;
	r->done++;
	r->status = status;
	r->commands = res->commands;
	r->bytes = res->bytes;
}

/* The engine's planning on four file LUNs: a request spanning stripe rows becomes one gathered
 * command per LUN, commands are cut at the transfer cap, and the bytes land where the stripe puts them. */
static void test_engine_gathers_and_caps(void)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_vol *vol = NULL;
	struct blkmap_dev *dev;
	struct res_seen r = { 0 };
	char *paths[4], text[512];
	unsigned char *buf = malloc(3 << 20), *back = malloc(64 << 10);
	struct iovec iov[3];

	for (int i = 0; i < 4; i++) {
		char tag[16];
		snprintf(tag, sizeof(tag), "bmeng%d", i);
		paths[i] = strdup(make_file(tag, 2 << 20));
	}
	blkmap_ctx_opts_init(&o);
	o.max_xfer_bytes = 256 << 10;
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&o, &ctx), 0);
	snprintf(text, sizeof(text), "simple 0:aa\nslice 0 1M 0\nsimple 0:bb\nslice 0 1M 2\n"
				     "simple 0:cc\nslice 0 1M 4\nsimple 0:dd\nslice 0 1M 6\nstripe 64K 1 3 5 7\n");
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_parse_text(text, &vol, NULL, 0), 0);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, paths[i], 0, &dev), 0);
		CU_ASSERT_EQUAL(blkmap_dev_max_xfer_bytes(dev), 256 << 10);
		CU_ASSERT_EQUAL(blkmap_vol_bind(vol, 2 * (uint32_t)i, dev), 0);
		blkmap_dev_close(dev);
	}
	test_fill_random(buf, 3 << 20, 21);
	/* 1 MiB from 0 in three iovecs: 16 units, 4 per LUN, contiguous on each: 4 commands of 256 KiB */
	iov[0] = (struct iovec){ buf, 100 << 10 };
	iov[1] = (struct iovec){ buf + (100 << 10), 500 << 10 };
	iov[2] = (struct iovec){ buf + (600 << 10), 424 << 10 };
	CU_ASSERT_EQUAL(blkmap_vol_writev_async(vol, 0, iov, 3, res_cb, &r), 0);
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(r.commands, 4);
	CU_ASSERT_EQUAL(r.bytes, 1 << 20);
	/* 3 MiB: 12 units per LUN = 768 KiB each, cut at the 256 KiB cap: 12 commands */
	iov[0] = (struct iovec){ buf, 3 << 20 };
	r.done = 0;
	CU_ASSERT_EQUAL(blkmap_vol_writev_async(vol, 2 << 20, iov, 1, res_cb, &r), -ERANGE); /* past the end */
	CU_ASSERT_EQUAL(blkmap_vol_count(vol), 9);
	blkmap_vol_free(vol);
	snprintf(text, sizeof(text), "simple 0:aa\nsimple 0:bb\nsimple 0:cc\nsimple 0:dd\nstripe 64K 0 1 2 3\n");
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_parse_text(text, &vol, NULL, 0), 0);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, paths[i], 0, &dev), 0);
		CU_ASSERT_EQUAL(blkmap_vol_bind(vol, (uint32_t)i, dev), 0);
		blkmap_dev_close(dev);
	}
	CU_ASSERT_EQUAL(blkmap_vol_writev_async(vol, 0, iov, 1, res_cb, &r), 0);
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(r.commands, 12);
	/* stripe unit k of the volume is at (k / 4) * 64K of LUN k % 4 */
	for (unsigned k = 0; k < 48; k++) {
		CU_ASSERT_EQUAL(bmt_read_file(paths[k % 4], back, 64 << 10, (uint64_t)(k / 4) * (64 << 10)), 0);
		CU_ASSERT(memcmp(back, buf + (size_t)k * (64 << 10), 64 << 10) == 0);
	}
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	for (int i = 0; i < 4; i++)
		free(paths[i]);
	free(buf);
	free(back);
}

TEST_SUITE(blkmap_dev_local, "blkmap/dev_local", NULL, NULL,
	   { "file", test_file },
	   { "loop_direct", test_loop_direct },
	   { "loop_no_pr", test_loop_no_pr },
	   { "ctx_destroyed_first", test_ctx_destroyed_first },
	   { "engine_gathers_and_caps", test_engine_gathers_and_caps });
