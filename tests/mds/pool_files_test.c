/* Formatting and opening pools through blkmap's device layer on regular-file LUNs (fast; the
 * same code runs on iSCSI LUNs in tests/integration/admin_lab_test.c): what format writes, that the
 * volume maps and moves bytes to the right LUN offsets, and that opening names the LUN that is
 * missing, damaged, shrunk or out of order. */
#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "nfs41.h"
#include "proto/layout.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NL 4
#define LUN_BYTES (8u << 20)

static char files[NL][512];
static const char *urls[NL];

static void make_luns(const char *tag)
{
	const char *dir = test_tmpdir(tag);
	static uint8_t junk[1 << 20];

	memset(junk, 0xaa, sizeof(junk));
	for (int i = 0; i < NL; i++) {
		int fd;
		snprintf(files[i], sizeof(files[i]), "%s/lun%d.img", dir, i);
		fd = open(files[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		CU_ASSERT_FATAL(fd >= 0);
		/* Old contents in the label area that format must wipe. */
		CU_ASSERT_FATAL(pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk));
		CU_ASSERT_FATAL(ftruncate(fd, LUN_BYTES) == 0);
		close(fd);
		urls[i] = files[i];
	}
}

static struct blkmap_ctx *ctx_new(void)
{
	struct blkmap_ctx *ctx = NULL;

	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(NULL, &ctx), 0);
	return ctx;
}

/* pread (write 0) or pwrite (write 1) of exactly len bytes at off in the file path: 0 or -1. */
static int io_at(const char *path, void *buf, size_t len, off_t off, int write)
{
	int fd = open(path, write ? O_WRONLY : O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int read_at(const char *path, void *buf, size_t len, off_t off)
{
	return io_at(path, buf, len, off, 0);
}

static int write_at(const char *path, const void *buf, size_t len, off_t off)
{
	return io_at(path, (void *)buf, len, off, 1);
}

static void test_format_writes_labels_and_store(void)
{
	struct blkmap_ctx *ctx = ctx_new();
	const char *dir = test_tmpdir("pool-fmt");
	struct mds_pool_format_opts o = { .stripe_unit_bytes = 64 << 10 };
	struct mds_pool_label l;
	struct mds_pool_conf conf;
	struct mds_store *st;
	uint8_t buf[1 << 20], uuid[16];
	char err[512];

	make_luns("pool-fmt-luns");
	CU_ASSERT_EQUAL_FATAL(mds_pool_format(ctx, dir, urls, NL, &o, uuid, err, sizeof(err)), 0);
	for (int i = 0; i < NL; i++) {
		int zero = 1;
		CU_ASSERT_EQUAL_FATAL(read_at(files[i], buf, sizeof(buf), 0), 0);
		CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &l, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(l.lun_index, (uint32_t)i);
		CU_ASSERT_EQUAL(l.lun_count, NL);
		CU_ASSERT_EQUAL(memcmp(l.pool_uuid, uuid, 16), 0);
		CU_ASSERT_EQUAL(l.data_start_bytes, 1u << 20);
		CU_ASSERT_EQUAL(l.data_bytes, 7u << 20);
		CU_ASSERT_EQUAL(l.stripe_unit_bytes, 64u << 10);
		for (size_t k = MDS_LABEL_BYTES; k < sizeof(buf); k++)
			zero &= buf[k] == 0;
		CU_ASSERT(zero);
	}
	CU_ASSERT_EQUAL(mds_pool_conf_read(dir, &conf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(conf.nluns, NL);
	CU_ASSERT_STRING_EQUAL(conf.urls[3], files[3]);
	CU_ASSERT(conf.have_uuid && memcmp(conf.pool_uuid, uuid, 16) == 0);
	mds_pool_conf_free(&conf);
	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &st), 0);
	CU_ASSERT_EQUAL(mds_store_format(st)->volume_bytes, NL * (7ull << 20));
	CU_ASSERT_EQUAL(mds_store_format(st)->nluns, NL);
	CU_ASSERT_EQUAL(memcmp(mds_store_format(st)->pool_uuid, uuid, 16), 0);
	mds_store_close(st);

	/* Again in the same directory: refused. On the labelled LUNs without force: refused, naming
	 * the LUN; with force: done. */
	CU_ASSERT_EQUAL(mds_pool_format(ctx, dir, urls, NL, &o, NULL, err, sizeof(err)), -EEXIST);
	CU_ASSERT(strstr(err, "already holds a pool") != NULL);
	CU_ASSERT_EQUAL(mds_pool_format(ctx, test_tmpdir("pool-fmt2"), urls + 2, 1, &o, NULL, err,
					sizeof(err)), -EEXIST);
	CU_ASSERT(strstr(err, files[2]) != NULL && strstr(err, "--force") != NULL &&
		  strstr(err, "LUN 2 of 4") != NULL);
	o.force = 1;
	CU_ASSERT_EQUAL(mds_pool_format(ctx, test_tmpdir("pool-fmt3"), urls + 2, 1, &o, NULL, err,
					sizeof(err)), 0);
	/* The same LUN twice; a LUN that does not exist. */
	{
		const char *twice[2] = { files[0], files[0] };
		const char *missing[1] = { "/nonexistent/lun.img" };
		CU_ASSERT_EQUAL(mds_pool_format(ctx, test_tmpdir("pool-fmt4"), twice, 2, &o, NULL, err,
						sizeof(err)), -EINVAL);
		CU_ASSERT(strstr(err, "given twice") != NULL);
		CU_ASSERT(mds_pool_format(ctx, test_tmpdir("pool-fmt5"), missing, 1, &o, NULL, err,
					  sizeof(err)) < 0);
		CU_ASSERT(strstr(err, "/nonexistent/lun.img") != NULL);
	}
	blkmap_ctx_destroy(ctx);
}

static void test_open_volume_io(void)
{
	struct blkmap_ctx *ctx = ctx_new();
	const char *dir = test_tmpdir("pool-open");
	struct mds_pool_format_opts o = { .stripe_unit_bytes = 64 << 10 };
	struct mds_pool *p = NULL;
	struct blkmap_vol *vol;
	struct blkmap_run *runs = NULL;
	size_t nruns = 0;
	uint8_t *data = malloc(4 * 65536), *back = malloc(65536);
	char err[512];

	make_luns("pool-open-luns");
	CU_ASSERT_EQUAL_FATAL(mds_pool_format(ctx, dir, urls, NL, &o, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mds_pool_nluns(p), NL);
	CU_ASSERT_STRING_EQUAL(mds_pool_lun_url(p, 1), files[1]);
	CU_ASSERT_EQUAL(mds_pool_lun_label(p, 3)->lun_index, 3);
	vol = mds_pool_volume(p);
	/* simple, slice per LUN, then the stripe on top. */
	CU_ASSERT_EQUAL(blkmap_vol_count(vol), 2 * NL + 1);
	CU_ASSERT_EQUAL(blkmap_vol_type(vol, 2 * NL), BLKMAP_VOL_STRIPE);
	CU_ASSERT_EQUAL(blkmap_vol_stripe_unit(vol, 2 * NL), 64u << 10);
	CU_ASSERT_EQUAL(blkmap_vol_type(vol, MDS_POOL_VOL_SIMPLE(2)), BLKMAP_VOL_SIMPLE);
	CU_ASSERT_EQUAL(blkmap_vol_size_bytes(vol, 2 * NL), NL * (7ull << 20));
	/* The first four stripe units go to LUNs 0..3 at their data start. */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_map(vol, 0, 4 * 65536, &runs, &nruns), 0);
	CU_ASSERT_EQUAL_FATAL(nruns, 4);
	for (unsigned i = 0; i < NL; i++) {
		CU_ASSERT_EQUAL(runs[i].leaf, MDS_POOL_VOL_SIMPLE(i));
		CU_ASSERT_EQUAL(runs[i].leaf_offset_bytes, 1u << 20);
	}
	free(runs);
	/* Bytes written to the volume land there on the LUNs. */
	test_fill_random(data, 4 * 65536, 77);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, data, 4 * 65536, 0), 0);
	for (int i = 0; i < NL; i++) {
		CU_ASSERT_EQUAL(read_at(files[i], back, 65536, 1 << 20), 0);
		CU_ASSERT_EQUAL(memcmp(back, data + i * 65536, 65536), 0);
	}
	/* The signatures the volume advertises are what the LUNs hold. */
	for (unsigned i = 0; i < NL; i++) {
		const struct blkmap_sig_comp *c = blkmap_vol_sig(vol, MDS_POOL_VOL_SIMPLE(i), 0);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_nsig(vol, MDS_POOL_VOL_SIMPLE(i)), 1);
		CU_ASSERT_EQUAL(read_at(files[i], back, c->len, c->offset_bytes), 0);
		CU_ASSERT_EQUAL(memcmp(back, c->bytes, c->len), 0);
	}
	mds_pool_close(p);
	free(data);
	free(back);
	blkmap_ctx_destroy(ctx);
}

static void swap_conf(const char *dir, int a, int b)
{
	struct mds_pool_conf c;
	char err[256], *tmp;

	CU_ASSERT_EQUAL_FATAL(mds_pool_conf_read(dir, &c, err, sizeof(err)), 0);
	tmp = c.urls[a];
	c.urls[a] = c.urls[b];
	c.urls[b] = tmp;
	CU_ASSERT_EQUAL(mds_pool_conf_write(dir, &c, err, sizeof(err)), 0);
	mds_pool_conf_free(&c);
}

static void test_open_names_the_bad_lun(void)
{
	struct blkmap_ctx *ctx = ctx_new();
	const char *dir = test_tmpdir("pool-bad");
	struct mds_pool_format_opts o = { .stripe_unit_bytes = 64 << 10 };
	struct mds_pool_lun_status st[NL];
	struct mds_pool_conf conf;
	struct mds_store *store;
	struct mds_pool *p = NULL;
	char err[512], want[600], away[600];
	uint8_t b;

	make_luns("pool-bad-luns");
	CU_ASSERT_EQUAL_FATAL(mds_pool_format(ctx, dir, urls, NL, &o, NULL, err, sizeof(err)), 0);

	/* LUNs listed in the wrong order. */
	swap_conf(dir, 0, 1);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "LUN 0 (%s): mismatch: labelled as LUN 1 of 4, expected LUN 0 of 4",
		 files[1]);
	CU_ASSERT_STRING_EQUAL(err, want);
	swap_conf(dir, 0, 1);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), 0);
	mds_pool_close(p);

	/* One damaged byte in LUN 2's label. */
	CU_ASSERT_EQUAL(read_at(files[2], &b, 1, 100), 0);
	b ^= 0x10;
	CU_ASSERT_EQUAL(write_at(files[2], &b, 1, 100), 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "LUN 2 (%s): bad-label: label checksum", files[2]);
	CU_ASSERT(strncmp(err, want, strlen(want)) == 0);
	b ^= 0x10;
	CU_ASSERT_EQUAL(write_at(files[2], &b, 1, 100), 0);

	/* LUN 3 shrank below its data area. */
	CU_ASSERT_EQUAL(truncate(files[3], LUN_BYTES - 4096), 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "LUN 3 (%s): mismatch: LUN has", files[3]);
	CU_ASSERT(strncmp(err, want, strlen(want)) == 0);
	CU_ASSERT_EQUAL(truncate(files[3], LUN_BYTES), 0);

	/* LUN 1 is gone. */
	snprintf(away, sizeof(away), "%s.away", files[1]);
	CU_ASSERT_EQUAL(rename(files[1], away), 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -ENODEV);
	snprintf(want, sizeof(want), "LUN 1 (%s): unreachable: cannot open", files[1]);
	CU_ASSERT(strncmp(err, want, strlen(want)) == 0);
	CU_ASSERT_PTR_NULL(p);
	/* Probing reports every LUN, not only the first bad one. */
	CU_ASSERT_EQUAL(mds_pool_conf_read(dir, &conf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &store), 0);
	CU_ASSERT_EQUAL(mds_pool_probe(ctx, store, &conf, st, NULL), 1);
	CU_ASSERT_EQUAL(st[0].state, MDS_LUN_OK);
	CU_ASSERT_EQUAL(st[1].state, MDS_LUN_UNREACHABLE);
	CU_ASSERT_EQUAL(st[2].state, MDS_LUN_OK);
	CU_ASSERT_EQUAL(st[3].state, MDS_LUN_OK);
	CU_ASSERT_EQUAL(st[3].size_bytes, LUN_BYTES);
	mds_store_close(store);
	mds_pool_conf_free(&conf);
	CU_ASSERT_EQUAL(rename(away, files[1]), 0);

	/* An unlabelled LUN in LUN 2's place. */
	CU_ASSERT_EQUAL(truncate(files[2], 0), 0);
	CU_ASSERT_EQUAL(truncate(files[2], LUN_BYTES), 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "LUN 2 (%s): no-label: no pool label", files[2]);
	CU_ASSERT_STRING_EQUAL(err, want);

	/* pool.conf that does not belong to the store. */
	CU_ASSERT_EQUAL(mds_pool_conf_read(dir, &conf, err, sizeof(err)), 0);
	conf.pool_uuid[0] ^= 1;
	CU_ASSERT_EQUAL(mds_pool_conf_write(dir, &conf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "pool.conf is for pool") != NULL);
	conf.nluns = 3;
	conf.have_uuid = 0;
	CU_ASSERT_EQUAL(mds_pool_conf_write(dir, &conf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "lists 3 LUNs, the pool has 4") != NULL);
	conf.nluns = 4;
	mds_pool_conf_free(&conf);
	/* No pool at all. */
	CU_ASSERT_EQUAL(mds_pool_open(ctx, test_tmpdir("pool-none"), NULL, &p, err, sizeof(err)), -ENOENT);
	CU_ASSERT(strstr(err, "holds no pool") != NULL);
	blkmap_ctx_destroy(ctx);
}

static void test_concat_volume(void)
{
	struct blkmap_ctx *ctx = ctx_new();
	const char *dir = test_tmpdir("pool-concat");
	struct mds_pool_format_opts o = { .type = MDS_VOL_CONCAT };
	struct mds_pool *p;
	struct blkmap_run *runs = NULL;
	size_t nruns = 0;
	char err[512];

	make_luns("pool-concat-luns");
	CU_ASSERT_EQUAL(truncate(files[1], 2 * LUN_BYTES), 0); /* LUNs of different sizes */
	CU_ASSERT_EQUAL_FATAL(mds_pool_format(ctx, dir, urls, NL, &o, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(blkmap_vol_type(mds_pool_volume(p), 2 * NL), BLKMAP_VOL_CONCAT);
	CU_ASSERT_EQUAL(mds_store_format(mds_pool_store(p))->volume_bytes,
			3 * (7ull << 20) + (15ull << 20));
	/* The byte after LUN 0's data area is LUN 1's first data byte. */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_map(mds_pool_volume(p), (7u << 20) - 4096, 8192, &runs, &nruns), 0);
	CU_ASSERT_EQUAL_FATAL(nruns, 2);
	CU_ASSERT_EQUAL(runs[0].leaf, MDS_POOL_VOL_SIMPLE(0));
	CU_ASSERT_EQUAL(runs[0].leaf_offset_bytes, (8u << 20) - 4096);
	CU_ASSERT_EQUAL(runs[1].leaf, MDS_POOL_VOL_SIMPLE(1));
	CU_ASSERT_EQUAL(runs[1].leaf_offset_bytes, 1u << 20);
	free(runs);
	mds_pool_close(p);
	blkmap_ctx_destroy(ctx);
}

/* volume.xdr is the pool's pnfs_block_deviceaddr4: simple(signature) -> slice -> stripe, as a
 * client decodes it; pool open rewrites it when it is missing or wrong, check notices. */
static void test_volume_xdr(void)
{
	struct blkmap_ctx *ctx = ctx_new();
	const char *dir = test_tmpdir("pool-xdr");
	struct mds_pool_format_opts o = { .stripe_unit_bytes = 64 << 10 };
	struct mds_store *st;
	struct mds_pool *p;
	pnfs_block_deviceaddr4 da;
	device_addr4 body;
	static uint8_t buf[1 << 16];
	uint8_t lunhead[64];
	char path[600], err[512];
	FILE *f;
	size_t n;

	make_luns("pool-xdr-luns");
	CU_ASSERT_EQUAL_FATAL(mds_pool_format(ctx, dir, urls, NL, &o, NULL, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/volume.xdr", dir);
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	CU_ASSERT(n > 0 && n < sizeof(buf));
	memset(&body, 0, sizeof(body));
	body.da_layout_type = LAYOUT4_BLOCK_VOLUME;
	body.da_addr_body.da_addr_body_len = (u_int)n;
	body.da_addr_body.da_addr_body_val = (char *)buf;
	memset(&da, 0, sizeof(da));
	CU_ASSERT_EQUAL_FATAL(proto_block_deviceaddr_decode(&body, &da), 0);
	CU_ASSERT_EQUAL_FATAL(da.bda_volumes.bda_volumes_len, 2 * NL + 1);
	for (unsigned i = 0; i < NL; i++) {
		pnfs_block_volume4 *sv = &da.bda_volumes.bda_volumes_val[2 * i];
		pnfs_block_volume4 *sl = &da.bda_volumes.bda_volumes_val[2 * i + 1];
		pnfs_block_sig_component4 *c;
		CU_ASSERT_EQUAL_FATAL(sv->type, PNFS_BLOCK_VOLUME_SIMPLE);
		CU_ASSERT_EQUAL_FATAL(sv->pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_len, 1);
		c = &sv->pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val[0];
		CU_ASSERT_EQUAL(c->bsc_sig_offset, 0);
		CU_ASSERT_EQUAL_FATAL(c->bsc_contents.bsc_contents_len, MDS_LABEL_SIG_BYTES);
		CU_ASSERT_EQUAL(read_at(files[i], lunhead, MDS_LABEL_SIG_BYTES, 0), 0);
		CU_ASSERT_EQUAL(memcmp(c->bsc_contents.bsc_contents_val, lunhead, MDS_LABEL_SIG_BYTES), 0);
		CU_ASSERT_EQUAL(sl->type, PNFS_BLOCK_VOLUME_SLICE);
		CU_ASSERT_EQUAL(sl->pnfs_block_volume4_u.bv_slice_info.bsv_start, 1u << 20);
		CU_ASSERT_EQUAL(sl->pnfs_block_volume4_u.bv_slice_info.bsv_length, 7u << 20);
		CU_ASSERT_EQUAL(sl->pnfs_block_volume4_u.bv_slice_info.bsv_volume, 2 * i);
	}
	{
		pnfs_block_volume4 *top = &da.bda_volumes.bda_volumes_val[2 * NL];
		CU_ASSERT_EQUAL_FATAL(top->type, PNFS_BLOCK_VOLUME_STRIPE);
		CU_ASSERT_EQUAL(top->pnfs_block_volume4_u.bv_stripe_info.bsv_stripe_unit, 65536);
		CU_ASSERT_EQUAL_FATAL(top->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len, NL);
		for (unsigned i = 0; i < NL; i++)
			CU_ASSERT_EQUAL(top->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val[i],
					2 * i + 1);
	}
	proto_block_deviceaddr_free(&da);

	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, &(struct mds_store_opts){ .rdonly = 1 }, &st), 0);
	CU_ASSERT_EQUAL(mds_pool_volume_xdr_check(dir, mds_store_format(st), err, sizeof(err)), 0);
	/* Damaged: noticed; missing: noticed; a read-write open puts it back. */
	buf[n / 2] ^= 1;
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fwrite(buf, 1, n, f), n);
	fclose(f);
	CU_ASSERT_EQUAL(mds_pool_volume_xdr_check(dir, mds_store_format(st), err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "does not describe") != NULL);
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(mds_pool_volume_xdr_check(dir, mds_store_format(st), err, sizeof(err)), -ENOENT);
	mds_store_close(st);
	CU_ASSERT_EQUAL_FATAL(mds_pool_open(ctx, dir, NULL, &p, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mds_pool_volume_xdr_check(dir, mds_store_format(mds_pool_store(p)), err,
						  sizeof(err)), 0);
	/* The body a server hands out for GETDEVICEINFO is the same. */
	CU_ASSERT_EQUAL(mds_pool_deviceaddr(mds_pool_volume(p), &body, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(body.da_layout_type, LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(body.da_addr_body.da_addr_body_len, n);
	proto_device_addr_free(&body);
	mds_pool_close(p);
	blkmap_ctx_destroy(ctx);
}

static void test_url_display(void)
{
	char out[256];

	mds_pool_url_display("iscsi://user%secret@10.0.0.1:3260/iqn.x:y/1", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "iscsi://user@10.0.0.1:3260/iqn.x:y/1");
	mds_pool_url_display("iscsi://10.0.0.1/iqn.x:y%40z/1", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "iscsi://10.0.0.1/iqn.x:y%40z/1");
	mds_pool_url_display("/dev/sdb", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "/dev/sdb");
}

TEST_SUITE(pool_files, "mds/pool_files", NULL, NULL,
	   { "format_writes_labels_and_store", test_format_writes_labels_and_store },
	   { "open_volume_io", test_open_volume_io },
	   { "open_names_the_bad_lun", test_open_names_the_bad_lun },
	   { "concat_volume", test_concat_volume },
	   { "volume_xdr", test_volume_xdr },
	   { "url_display", test_url_display });
