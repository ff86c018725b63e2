/* pnfs-extents' model without a SAN: extents mapped through a stripe to exact LUN offsets, a hostile or
 * corrupt map refused with the extent named, the figures computed right, JSON that parses, an SVG
 * with one segment per extent, and verification that finds the byte that differs (regular files
 * stand in for LUNs here; tests/integration/extents_pool_test.c does it on tgtd). */
#include "blkmap/blkmap.h"
#include "tests/harness.h"
#include "tests/tools/extents_helpers.h"
#include "tools/extents.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define K 1024ull
#define M (1024ull * 1024ull)

/* Two 16 MiB LUNs, data areas from 1 MiB, striped with a 64 KiB unit. */
static struct blkmap_vol *stripe2(void)
{
	static const char text[] = "simple 0:50\nsimple 0:51\nslice 1M 8M 0\nslice 1M 8M 1\nstripe 64K 2 3\n";
	struct blkmap_vol *vol = NULL;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(blkmap_vol_parse_text(text, &vol, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_set_leaf_size(vol, 0, 16 * M), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_set_leaf_size(vol, 1, 16 * M), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_validate(vol), 0);
	return vol;
}

static void sample_map(struct tool_map *m)
{
	char err[256];

	tool_map_init(m);
	CU_ASSERT_EQUAL_FATAL(tool_map_set_volume(m, stripe2(), 1), 0);
	tool_map_name_lun(m, 0, "iscsi://h/iqn.x/1", 512, NULL);
	tool_map_name_lun(m, 1, "/dev/<odd>&name", 4096, NULL);
	snprintf(m->path, sizeof(m->path), "/a/b");
	m->fileid = 7;
	m->size = 400 * K;
	m->block_bytes = 4096;
	m->range_off = 0;
	m->range_len = 512 * K;
	CU_ASSERT_EQUAL(tool_map_add(m, 0, 128 * K, 0, TOOL_EXT_READ_WRITE), 0);
	CU_ASSERT_EQUAL(tool_map_add(m, 128 * K, 64 * K, 0, TOOL_EXT_NONE), 0);
	CU_ASSERT_EQUAL(tool_map_add(m, 192 * K, 64 * K, M + 32 * K, TOOL_EXT_INVALID), 0);
	CU_ASSERT_EQUAL(tool_map_add(m, 256 * K, 256 * K, M + 96 * K, TOOL_EXT_READ), 0);
	CU_ASSERT_EQUAL_FATAL(tool_map_resolve(m, err, sizeof(err)), 0);
}

static void test_pieces(void)
{
	struct tool_map m;
	const struct tool_piece *p;

	sample_map(&m);
	CU_ASSERT_STRING_EQUAL(m.vol_desc, "stripe of 2 LUNs, unit 64.0 KiB, 16.0 MiB");
	CU_ASSERT_EQUAL(m.nluns, 2);
	CU_ASSERT_EQUAL(m.luns[0].leaf, 0);
	CU_ASSERT_EQUAL(m.luns[1].leaf, 1);
	/* 2 + 0 + 2 + 5 pieces. */
	CU_ASSERT_EQUAL_FATAL(m.npieces, 9);
	CU_ASSERT_EQUAL(m.ext[0].npieces, 2);
	CU_ASSERT_EQUAL(m.ext[1].npieces, 0);
	p = &m.pieces[0];
	CU_ASSERT(p->lun == 0 && p->lun_off == M && p->len == 64 * K && p->file_off == 0);
	p = &m.pieces[1];
	CU_ASSERT(p->lun == 1 && p->lun_off == M && p->len == 64 * K && p->file_off == 64 * K);
	/* Volume 1M+32K is unit 16, half way: LUN 0's row 8, then unit 17 on LUN 1. */
	p = &m.pieces[2];
	CU_ASSERT(p->lun == 0 && p->lun_off == M + 8 * 64 * K + 32 * K && p->len == 32 * K &&
		  p->file_off == 192 * K && p->vol_off == M + 32 * K);
	p = &m.pieces[3];
	CU_ASSERT(p->lun == 1 && p->lun_off == M + 8 * 64 * K && p->len == 32 * K && p->file_off == 224 * K);
	/* The READ extent starts half way through unit 17 and ends half way through unit 21. */
	CU_ASSERT_EQUAL(m.ext[3].npieces, 5);
	p = &m.pieces[4];
	CU_ASSERT(p->lun == 1 && p->lun_off == M + 8 * 64 * K + 32 * K && p->len == 32 * K);
	p = &m.pieces[8];
	CU_ASSERT(p->lun == 1 && p->lun_off == M + 10 * 64 * K && p->len == 32 * K &&
		  p->file_off + p->len == 512 * K);
	tool_map_free(&m);
}

static void test_bad_maps(void)
{
	static const struct {
		uint64_t off, len, vol;
		int state;
		const char *msg;
	} cases[] = {
		{ 4 * K, 0, 0, TOOL_EXT_READ_WRITE, "extent 1 (file 4096): zero length" },
		{ 4 * K, 4 * K, 0, 7, "extent 1 (file 4096+4096): unknown state 7" },
		{ 2 * K, 4 * K, 0, TOOL_EXT_READ_WRITE, "extent 1 (file 2048+4096) overlaps or precedes extent 0" },
		{ 8 * K, 4 * K, 16 * M - 2 * K, TOOL_EXT_READ_WRITE, "lies past the end of the volume (16777216 bytes)" },
		{ 8 * K, 4 * K, UINT64_MAX - K, TOOL_EXT_INVALID, "lies past the end of the volume" },
		{ UINT64_MAX - K, 4 * K, 0, TOOL_EXT_NONE, "runs past 2^64" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tool_map m;
		char err[512] = "";

		tool_map_init(&m);
		CU_ASSERT_EQUAL_FATAL(tool_map_set_volume(&m, stripe2(), 1), 0);
		CU_ASSERT_EQUAL(tool_map_add(&m, 0, 4 * K, 0, TOOL_EXT_READ_WRITE), 0);
		CU_ASSERT_EQUAL(tool_map_add(&m, cases[i].off, cases[i].len, cases[i].vol, cases[i].state), 0);
		CU_ASSERT(tool_map_resolve(&m, err, sizeof(err)) < 0);
		if (!strstr(err, cases[i].msg))
			fprintf(stderr, "case %zu: '%s'\n", i, err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].msg));
		tool_map_free(&m);
	}
	/* No volume at all (a layout without device info): a mapped extent cannot be placed. */
	{
		struct tool_map m;
		char err[512];
		tool_map_init(&m);
		CU_ASSERT_EQUAL(tool_map_add(&m, 0, 4 * K, 0, TOOL_EXT_NONE), 0);
		CU_ASSERT_EQUAL(tool_map_resolve(&m, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(tool_map_add(&m, 4 * K, 4 * K, 0, TOOL_EXT_READ), 0);
		CU_ASSERT_EQUAL(tool_map_resolve(&m, err, sizeof(err)), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "no volume"));
		tool_map_free(&m);
	}
}

static void test_stats(void)
{
	struct tool_map m;
	struct tool_stats s;
	struct tool_lun_stats ls[2];

	sample_map(&m);
	tool_map_stats(&m, &s, ls);
	CU_ASSERT_EQUAL(s.extents, 4);
	CU_ASSERT_EQUAL(s.data_extents, 3);
	CU_ASSERT_EQUAL(s.holes, 1);
	CU_ASSERT_EQUAL(s.hole_bytes, 64 * K);
	CU_ASSERT_EQUAL(s.data_bytes, 448 * K);
	CU_ASSERT_EQUAL(s.largest, 256 * K);
	CU_ASSERT_EQUAL(s.smallest, 64 * K);
	CU_ASSERT_DOUBLE_EQUAL(s.mean, 448.0 * 1024 / 3, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(s.extents_per_mib, 3.0 / (448.0 / 1024), 1e-9);
	/* 0 -> (1M+32K): not contiguous; (1M+32K)+64K = 1M+96K -> the READ extent: contiguous. */
	CU_ASSERT_EQUAL(s.joins, 2);
	CU_ASSERT_EQUAL(s.contiguous_joins, 1);
	CU_ASSERT_DOUBLE_EQUAL(s.contiguity, 0.5, 1e-9);
	CU_ASSERT_EQUAL(s.vol_span, M + 352 * K);
	CU_ASSERT_EQUAL(s.by_state[TOOL_EXT_READ_WRITE], 128 * K);
	CU_ASSERT_EQUAL(s.by_state[TOOL_EXT_READ], 256 * K);
	CU_ASSERT_EQUAL(s.by_state[TOOL_EXT_INVALID], 64 * K);
	CU_ASSERT_EQUAL(s.pieces, 9);
	/* LUN 0: 64K (ext 0) + 32K (ext 2) + 64K + 32K... pieces 0, 2, 5, 7. */
	CU_ASSERT_EQUAL(ls[0].pieces, 4);
	CU_ASSERT_EQUAL(ls[1].pieces, 5);
	CU_ASSERT_EQUAL(ls[0].extents, 3);
	CU_ASSERT_EQUAL(ls[1].extents, 3);
	CU_ASSERT_EQUAL(ls[0].bytes + ls[1].bytes, 448 * K);
	CU_ASSERT_EQUAL(ls[0].bytes, 64 * K + 32 * K + 64 * K + 64 * K);
	/* LBAs in each LUN's block size: LUN 1 has 4 KiB blocks. */
	CU_ASSERT_EQUAL(ls[0].lba_min, M / 512);
	CU_ASSERT_EQUAL(ls[1].lba_min, M / 4096);
	CU_ASSERT_EQUAL(ls[1].lba_max, (M + 10 * 64 * K + 32 * K - 1) / 4096);
	tool_map_free(&m);

	/* One extent: nothing to join, fully contiguous; no data: zeros, not NaN. */
	tool_map_init(&m);
	CU_ASSERT_EQUAL(tool_map_add(&m, 0, 4 * K, 0, TOOL_EXT_NONE), 0);
	tool_map_stats(&m, &s, NULL);
	CU_ASSERT_EQUAL(s.data_extents, 0);
	CU_ASSERT_DOUBLE_EQUAL(s.extents_per_mib, 0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(s.contiguity, 1.0, 1e-12);
	tool_map_free(&m);
}

static char *capture(void (*fn)(FILE *, const struct tool_map *, unsigned), const struct tool_map *m,
		     unsigned flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fn(f, m, flags);
	fclose(f);
	return buf;
}

static void test_text_and_json(void)
{
	struct tool_map m;
	struct xt_row rows[32];
	const char *dir = test_tmpdir("extents-json");
	char path[512], *out;
	FILE *f;

	sample_map(&m);
	out = capture(tool_map_print_text, &m, 0);
	CU_ASSERT_EQUAL(xt_parse_rows(out, rows, 32), 10);
	CU_ASSERT_STRING_EQUAL(rows[0].dev, "iscsi://h/iqn.x/1");
	CU_ASSERT_EQUAL(rows[0].lba_first, M / 512);
	CU_ASSERT_EQUAL(rows[0].lba_last, (M + 64 * K) / 512 - 1);
	CU_ASSERT_EQUAL(rows[1].lba_first, M / 4096);
	CU_ASSERT_STRING_EQUAL(rows[2].state, "NONE");
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "contiguity 50% (1 of 2 joins continue in the volume)"));
	free(out);
	out = capture(tool_map_print_text, &m, TOOL_OUT_NO_SPLIT);
	CU_ASSERT_EQUAL(xt_parse_rows(out, rows, 32), 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(rows[3].dev, "5 pieces on LUNs 1,0"));
	free(out);

	TEST_SKIP_IF(test_run(NULL, "command -v jq >/dev/null") != 0, "jq is not installed");
	for (unsigned flags = 0; flags <= TOOL_OUT_NO_SPLIT; flags++) {
		snprintf(path, sizeof(path), "%s/map%u.json", dir, flags);
		f = fopen(path, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		tool_map_print_json(f, &m, flags);
		fclose(f);
	}
	CU_ASSERT_EQUAL(test_run(NULL, "jq -e '.path == \"/a/b\" and .fileid == 7 and (.extents | length) == 4 "
				       "and .extents[1].volume_offset == null and .extents[2].state == \"INVALID\" "
				       "and (.extents[3].pieces | length) == 5 and .luns[1].device == \"/dev/<odd>&name\" "
				       "and .luns[1].block_bytes == 4096 and .fragmentation.contiguity == 0.5 "
				       "and .extents[0].pieces[1].lba_first == 256' %s/map0.json >/dev/null", dir),
			0);
	CU_ASSERT_EQUAL(test_run(NULL, "jq -e '.extents[3].pieces == 5 and .extents[3].luns == [1,0]' "
				       "%s/map1.json >/dev/null", dir),
			0);
	tool_map_free(&m);
}

static void test_svg(void)
{
	struct tool_map m;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	sample_map(&m);
	f = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(tool_map_write_svg(f, &m), 0);
	fclose(f);
	CU_ASSERT_EQUAL(xt_count(buf, "class=\"segment\""), 4);
	CU_ASSERT_EQUAL(xt_count(buf, "class=\"piece\""), 9);
	CU_ASSERT_EQUAL(xt_count(buf, "data-state=\"NONE\""), 1);
	CU_ASSERT_EQUAL(xt_count(buf, "fill=\"url(#invalid)\""), 1);
	/* Names are escaped. */
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "/dev/&lt;odd&gt;&amp;name"));
	CU_ASSERT_PTR_NULL(strstr(buf, "<odd>"));
	free(buf);
	tool_map_free(&m);
}

/* Verification with regular files as the LUNs and an in-memory reference. */
struct memref {
	const uint8_t *data;
	size_t len;
};

static long long mem_read(void *arg, uint64_t off, void *buf, size_t len, char *why, size_t whylen)
{
	const struct memref *r = arg;

	(void)why;
	(void)whylen;
	if (off >= r->len)
		return 0;
	if (len > r->len - off)
		len = r->len - off;
	memcpy(buf, r->data + off, len);
	return (long long)len;
}

static void test_verify(void)
{
	const char *dir = test_tmpdir("extents-verify-files");
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_dev *dev[2] = { NULL, NULL };
	struct tool_map m;
	uint8_t *file = calloc(1, 512 * K);
	struct memref ref = { file, 400 * K };
	char luns[2][512];

	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(NULL, &ctx), 0);
	sample_map(&m);
	/* Put the file's bytes where the map says: LUN files hold what the pieces point at. */
	test_fill_random(file, 128 * K, 1);
	test_fill_random(file + 256 * K, 144 * K, 2);
	for (int i = 0; i < 2; i++) {
		int fd;
		snprintf(luns[i], sizeof(luns[i]), "%s/lun%d", dir, i);
		fd = open(luns[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(ftruncate(fd, 16 * M) == 0);
		close(fd);
	}
	for (size_t k = 0; k < m.npieces; k++) {
		const struct tool_piece *p = &m.pieces[k];
		CU_ASSERT_EQUAL(xt_write_at(luns[p->lun], file + p->file_off, p->len, p->lun_off), 0);
	}
	/* Stale bytes under the INVALID extent: not file data, never compared. */
	CU_ASSERT_EQUAL(xt_write_at(luns[0], "stale", 5, m.pieces[2].lun_off), 0);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, luns[i], 0, &dev[i]), 0);
		tool_map_name_lun(&m, (uint32_t)i, NULL, 0, dev[i]);
	}
	CU_ASSERT_EQUAL(tool_map_verify(&m, mem_read, &ref, "the copy"), 0);
	CU_ASSERT_EQUAL(m.ext[0].verdict, TOOL_VERIFY_OK);
	CU_ASSERT_EQUAL(m.ext[1].verdict, TOOL_VERIFY_ZEROS);
	CU_ASSERT_EQUAL(m.ext[2].verdict, TOOL_VERIFY_ZEROS);
	CU_ASSERT_EQUAL(m.ext[3].verdict, TOOL_VERIFY_OK);

	/* One byte on LUN 1 inside the READ extent (past EOF bytes are not compared). */
	{
		const struct tool_piece *p = &m.pieces[6];
		uint8_t b = file[p->file_off + 1000] ^ 1;
		CU_ASSERT_EQUAL(xt_write_at(luns[p->lun], &b, 1, p->lun_off + 1000), 0);
		CU_ASSERT_EQUAL(tool_map_verify(&m, mem_read, &ref, "the copy"), 1);
		CU_ASSERT_EQUAL(m.ext[3].verdict, TOOL_VERIFY_MISMATCH);
		CU_ASSERT_EQUAL(m.ext[3].bad_off, p->file_off + 1000);
		CU_ASSERT_EQUAL(m.ext[3].bad_bytes, 1);
		CU_ASSERT_PTR_NOT_NULL(strstr(m.ext[3].why, "1 byte differs"));
		CU_ASSERT_EQUAL(m.ext[0].verdict, TOOL_VERIFY_OK);
		b ^= 1;
		CU_ASSERT_EQUAL(xt_write_at(luns[p->lun], &b, 1, p->lun_off + 1000), 0);
	}
	/* Data where the file must read zeros (a hole): reported on the hole. */
	file[130 * K] = 9;
	CU_ASSERT_EQUAL(tool_map_verify(&m, mem_read, &ref, "the copy"), 1);
	CU_ASSERT_EQUAL(m.ext[1].verdict, TOOL_VERIFY_MISMATCH);
	CU_ASSERT_EQUAL(m.ext[1].bad_off, 130 * K);
	CU_ASSERT_PTR_NOT_NULL(strstr(m.ext[1].why, "reads as zeros (a hole)"));
	file[130 * K] = 0;
	/* A reference that ends early. */
	ref.len = 300 * K;
	CU_ASSERT_EQUAL(tool_map_verify(&m, mem_read, &ref, "the copy"), 1);
	CU_ASSERT_EQUAL(m.ext[3].verdict, TOOL_VERIFY_MISMATCH);
	CU_ASSERT_PTR_NOT_NULL(strstr(m.ext[3].why, "the copy ends at file offset 307200"));
	ref.len = 400 * K;
	/* A LUN that is not open: an error on the extents that need it, the others still checked. */
	blkmap_dev_close(m.luns[1].dev);
	m.luns[1].dev = NULL;
	snprintf(m.luns[1].why, sizeof(m.luns[1].why), "unreachable: gone");
	CU_ASSERT_EQUAL(tool_map_verify(&m, mem_read, &ref, "the copy"), 2);
	CU_ASSERT_EQUAL(m.ext[0].verdict, TOOL_VERIFY_ERROR);
	CU_ASSERT_PTR_NOT_NULL(strstr(m.ext[0].why, "LUN 1 (/dev/<odd>&name) is not open: unreachable: gone"));

	tool_map_free(&m);
	blkmap_dev_close(dev[0]);
	blkmap_dev_close(dev[1]);
	blkmap_ctx_destroy(ctx);
	free(file);
}

static void test_parse_size(void)
{
	uint64_t v;

	CU_ASSERT(proto_parse_size("0", &v) == 0 && v == 0);
	CU_ASSERT(proto_parse_size("4096", &v) == 0 && v == 4096);
	CU_ASSERT(proto_parse_size("0x1000", &v) == 0 && v == 4096);
	CU_ASSERT(proto_parse_size("3M", &v) == 0 && v == 3 * M);
	CU_ASSERT(proto_parse_size("2GiB", &v) == 0 && v == 2048 * M);
	CU_ASSERT(proto_parse_size("1KB", &v) == 0 && v == 1024);
	CU_ASSERT(proto_parse_size("16T", &v) == 0 && v == 16ull << 40);
	CU_ASSERT_EQUAL(proto_parse_size("", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("-1", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("1X", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("1Mx", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("99999999999T", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("18446744073709551616", &v), -EINVAL);
}

TEST_SUITE(extents_map, "tools/extents_map", NULL, NULL,
	   { "pieces", test_pieces },
	   { "bad_maps", test_bad_maps },
	   { "stats", test_stats },
	   { "text_and_json", test_text_and_json },
	   { "svg", test_svg },
	   { "verify", test_verify },
	   { "parse_size", test_parse_size });
