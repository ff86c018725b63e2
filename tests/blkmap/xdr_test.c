/* Volumes and the wire types: block and SCSI device addresses round-trip through proto's coders
 * unchanged, a layout type gets only the volume types it has, and hostile input (forward references,
 * shared members, truncated or random bytes) is refused with a reason, never a crash. */
#include "blkmap/blkmap_xdr.h"
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *BLOCK_TEXT = "simple 512:504e46534c424c31,-4096:00ff\n"
				 "slice 1M 63M 0\n"
				 "simple 512:504e46534c424c32\n"
				 "slice 1M 63M 2\n"
				 "stripe 64K 1 3\n";
static const char *SCSI_TEXT = "scsi naa binary 600140512345678a key=0xabc\n"
			       "scsi t10 ascii 53414e4c4142 key=0xabc\n"
			       "concat 0 1\n";

static struct blkmap_vol *parse(const char *text)
{
	struct blkmap_vol *vol = NULL;
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_parse_text(text, &vol, NULL, 0), 0);
	return vol;
}

static void roundtrip(const char *text, layouttype4 type)
{
	struct blkmap_vol *vol = parse(text), *back = NULL;
	void *buf = NULL;
	size_t len = 0;
	layouttype4 got = 0;
	char err[300], *out = NULL;

	CU_ASSERT_EQUAL_FATAL(blkmap_vol_encode_xdr(vol, type, &buf, &len, err, sizeof(err)), 0);
	CU_ASSERT(len > 8);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_decode_xdr(buf, len, 0, &back, &got, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(got, type);
	CU_ASSERT_EQUAL(blkmap_vol_format_text(back, &out), 0);
	CU_ASSERT_STRING_EQUAL(out, text);
	/* forcing the other layout type fails */
	blkmap_vol_free(back);
	back = NULL;
	CU_ASSERT(blkmap_vol_decode_xdr(buf, len, type == LAYOUT4_SCSI ? LAYOUT4_BLOCK_VOLUME : LAYOUT4_SCSI, &back,
					NULL, err, sizeof(err)) < 0);
	CU_ASSERT_PTR_NULL(back);
	free(out);
	free(buf);
	blkmap_vol_free(vol);
}

static void test_roundtrips(void)
{
	struct blkmap_vol *vol;
	device_addr4 da;
	char err[300];

	roundtrip(BLOCK_TEXT, LAYOUT4_BLOCK_VOLUME);
	roundtrip(SCSI_TEXT, LAYOUT4_SCSI);
	/* each layout type takes only its own leaves */
	vol = parse(SCSI_TEXT);
	CU_ASSERT_EQUAL(blkmap_vol_to_device_addr(vol, LAYOUT4_BLOCK_VOLUME, &da, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "volume 0 is a SCSI base volume"));
	CU_ASSERT_EQUAL(blkmap_vol_to_device_addr(vol, 7, &da, err, sizeof(err)), -EINVAL);
	blkmap_vol_free(vol);
	vol = parse(BLOCK_TEXT);
	CU_ASSERT_EQUAL(blkmap_vol_to_device_addr(vol, LAYOUT4_SCSI, &da, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "volume 0 is a simple (signature) volume"));
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_to_device_addr(vol, LAYOUT4_BLOCK_VOLUME, &da, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(da.da_layout_type, LAYOUT4_BLOCK_VOLUME);
	blkmap_vol_free(vol);
	CU_ASSERT_EQUAL(blkmap_vol_from_device_addr(&da, &vol, err, sizeof(err)), 0);
	blkmap_vol_free(vol);
	da.da_layout_type = LAYOUT4_NFSV4_1_FILES;
	CU_ASSERT_EQUAL(blkmap_vol_from_device_addr(&da, &vol, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "neither the block"));
	da.da_layout_type = LAYOUT4_BLOCK_VOLUME;
	proto_device_addr_free(&da);
}

static void test_hostile(void)
{
	pnfs_block_volume4 v[3];
	pnfs_block_deviceaddr4 da = { { 3, v } };
	pnfs_block_sig_component4 sig = { 0, { 4, (char *)"LBL1" } };
	uint32_t two = 2, zero = 0;
	struct blkmap_vol *vol = NULL;
	char err[300] = "";
	void *buf = NULL;
	size_t len;

	memset(v, 0, sizeof(v));
	v[0].type = PNFS_BLOCK_VOLUME_SIMPLE;
	v[0].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_len = 1;
	v[0].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val = &sig;
	/* a slice of a later entry: RFC 5663 refers only backwards */
	v[1].type = PNFS_BLOCK_VOLUME_SLICE;
	v[1].pnfs_block_volume4_u.bv_slice_info = (pnfs_block_slice_volume_info4){ 0, 4096, 2 };
	v[2].type = PNFS_BLOCK_VOLUME_CONCAT;
	v[2].pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_len = 1;
	v[2].pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val = &zero;
	CU_ASSERT_EQUAL(blkmap_vol_from_block(&da, &vol, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "volume 1 (slice): member 2 does not refer to an earlier entry"));
	CU_ASSERT_PTR_NULL(vol);
	/* one member used twice */
	v[1].pnfs_block_volume4_u.bv_slice_info.bsv_volume = 0;
	v[2].pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val = &zero;
	CU_ASSERT_EQUAL(blkmap_vol_from_block(&da, &vol, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "volume 0 is used more than once"));
	(void)two;
	/* fixed up, it converts */
	v[2].pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val = (uint32_t[]){ 1 };
	CU_ASSERT_EQUAL(blkmap_vol_from_block(&da, &vol, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(blkmap_vol_encode_xdr(vol, LAYOUT4_BLOCK_VOLUME, &buf, &len, err, sizeof(err)), 0);
	blkmap_vol_free(vol);

	/* every truncation of a valid body is refused */
	for (size_t cut = 0; cut < len; cut++) {
		vol = NULL;
		CU_ASSERT(blkmap_vol_decode_xdr(buf, cut, 0, &vol, NULL, err, sizeof(err)) < 0);
		CU_ASSERT_PTR_NULL(vol);
	}
	/* random flips of a valid body and random bytes: an answer either way, never a crash */
	for (int i = 0; i < 3000; i++) {
		uint8_t b[256];
		size_t n = i % 2 ? len : (size_t)(i % 200) + 4;
		if (i % 2) {
			memcpy(b, buf, len);
			b[(size_t)i * 7919 % len] ^= (uint8_t)(1u << (i % 8));
		} else {
			test_fill_random(b, n, (uint64_t)i);
		}
		vol = NULL;
		if (blkmap_vol_decode_xdr(b, n, 0, &vol, NULL, err, sizeof(err)) == 0) {
			CU_ASSERT_EQUAL(blkmap_vol_validate(vol), 0);
			blkmap_vol_free(vol);
		}
	}
	free(buf);
}

static void test_pool_file(void)
{
	const char *dir = test_tmpdir("pool");
	struct blkmap_vol *vol = parse(BLOCK_TEXT), *back = NULL;
	char path[400], err[300], *out = NULL;
	void *buf = NULL;
	size_t len = 0;
	int fd;

	CU_ASSERT_EQUAL(blkmap_vol_read_pool(dir, &back, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "volume.xdr"));
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_encode_xdr(vol, LAYOUT4_BLOCK_VOLUME, &buf, &len, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, BLKMAP_POOL_VOLUME_FILE);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, buf, len) == (ssize_t)len);
	close(fd);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_read_pool(dir, &back, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(blkmap_vol_format_text(back, &out), 0);
	CU_ASSERT_STRING_EQUAL(out, BLOCK_TEXT);
	free(out);
	blkmap_vol_free(back);
	/* garbage in the pool file: the error names the file */
	fd = open(path, O_WRONLY | O_TRUNC);
	CU_ASSERT_FATAL(write(fd, "garbage!", 8) == 8);
	close(fd);
	CU_ASSERT(blkmap_vol_read_pool(dir, &back, err, sizeof(err)) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	free(buf);
	blkmap_vol_free(vol);
}

TEST_SUITE(blkmap_xdr, "blkmap/xdr", NULL, NULL,
	   { "roundtrips", test_roundtrips },
	   { "hostile", test_hostile },
	   { "pool_file", test_pool_file });
