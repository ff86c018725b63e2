/* pnfs-extents --pool on a real tgtd SAN: a file written in three sessions with holes between them
 * (and a range allocated by a writer that never committed) is shown with the right states, and every
 * LBA range the table prints holds the file's bytes in that LUN's backing file; --verify against a
 * copy passes, and names the one extent whose byte was flipped on a LUN; the SVG draws one segment
 * per extent and renders. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/tools/extents_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLUNS 4
#define UNIT (256u << 10)
#define MIB (1u << 20)

/* The file: three sessions with holes between them, then an allocation never written. */
static const struct {
	uint64_t off, len;
} writes[3] = {
	{ 0, 3 * MIB / 2 },                    /* 1.5 MiB over six stripe units */
	{ 3 * MIB + 100, 700 * 1024 },         /* starts and ends inside blocks */
	{ 6 * MIB + 4096, 3 * MIB - 4096 + 123 },
};
#define INVALID_OFF (12ull * MIB)
#define INVALID_LEN (256u << 10)
#define FILE_SIZE (9ull * MIB + 123)

struct fixture {
	struct test_lab *lab;
	char pool[512], ref[512];
	uint8_t *content;  /* FILE_SIZE bytes: what the file reads as */
	uint64_t fileid;
};

static int setup(struct fixture *fx, const char *tag)
{
	const char *dir = test_tmpdir(tag);
	const char *urls[NLUNS];
	FILE *f;

	memset(fx, 0, sizeof(*fx));
	fx->lab = lab_up(NLUNS, "32M", NULL);
	if (!fx->lab)
		return -1;
	for (int i = 0; i < NLUNS; i++)
		urls[i] = fx->lab->urls[i];
	snprintf(fx->pool, sizeof(fx->pool), "%s/pool", dir);
	snprintf(fx->ref, sizeof(fx->ref), "%s/reference", dir);
	if (xt_pool_format(fx->pool, urls, NLUNS, UNIT) || xt_create(fx->pool, "data.bin", &fx->fileid))
		return -1;
	fx->content = calloc(1, FILE_SIZE);
	if (!fx->content)
		return -1;
	for (int s = 0; s < 3; s++) {
		test_fill_random(fx->content + writes[s].off, writes[s].len, 100 + s);
		if (xt_write(fx->pool, fx->fileid, writes[s].off, fx->content + writes[s].off, writes[s].len))
			return -1;
	}
	if (xt_alloc_only(fx->pool, fx->fileid, INVALID_OFF, INVALID_LEN))
		return -1;
	f = fopen(fx->ref, "wb");
	if (!f || fwrite(fx->content, 1, FILE_SIZE, f) != FILE_SIZE) {
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static void teardown(struct fixture *fx)
{
	free(fx->content);
	lab_down(fx->lab);
}

static int extents(char **out, const struct fixture *fx, const char *opts)
{
	return test_run(out, "%s --pool %s --path /data.bin %s 2>&1", test_bin("pnfs-extents"), fx->pool,
			opts);
}

static void test_states_and_lbas(void)
{
	struct fixture fx;
	struct xt_row rows[128];
	char *out = NULL;
	int n, ext_seen[8] = { 0 };
	uint8_t *lun = malloc(MIB);
	uint64_t checked = 0;
	/* Extents in file order: the three writes, the holes between and after them, the INVALID tail. */
	static const char *const want[] = { "READ_WRITE", "NONE", "READ_WRITE", "NONE",
					    "READ_WRITE", "NONE", "INVALID" };

	CU_ASSERT_FATAL(setup(&fx, "extents-pool") == 0);
	CU_ASSERT_EQUAL(extents(&out, &fx, ""), 0);
	xt_expect_file_summary(out);
	n = xt_parse_rows(out, rows, 128);
	CU_ASSERT_FATAL(n > 7);
	for (int i = 0; i < n; i++) {
		struct xt_row *r = &rows[i];
		CU_ASSERT_FATAL(r->ext >= 0 && r->ext < 7);
		CU_ASSERT_STRING_EQUAL(r->state, want[r->ext]);
		ext_seen[r->ext]++;
		if (!strcmp(r->state, "NONE")) {
			CU_ASSERT_EQUAL(r->lun, -1);
			continue;
		}
		xt_check_piece(fx.lab, r, UNIT);
		if (strcmp(r->state, "READ_WRITE") || r->lun < 0)
			continue;
		checked += xt_check_piece_bytes(fx.lab, r, fx.content, FILE_SIZE, lun, MIB);
	}
	for (int e = 0; e < 7; e++)
		CU_ASSERT(ext_seen[e] > 0);
	/* Every written byte (and the zero-filled edges of its blocks) was checked on a LUN. */
	CU_ASSERT_EQUAL(checked, 3 * MIB / 2 + (3 * MIB + 700 * 1024 + 4096 - 3 * MIB) +
					 (FILE_SIZE - 6 * MIB - 4096));
	/* The first write is six stripe units, on LUNs 0, 1, 2, 3, 0, 1. */
	CU_ASSERT_EQUAL(ext_seen[0], 6);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "7 extents: 4 with blocks"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "3 holes"));
	free(out);

	/* Whole extents: one row each. */
	CU_ASSERT_EQUAL(extents(&out, &fx, "--no-split"), 0);
	n = xt_parse_rows(out, rows, 128);
	CU_ASSERT_EQUAL(n, 7);
	for (int i = 0; i < n && i < 7; i++) {
		CU_ASSERT_EQUAL(rows[i].ext, i);
		CU_ASSERT_STRING_EQUAL(rows[i].state, want[i]);
	}
	CU_ASSERT_EQUAL(rows[0].lun, -2);
	CU_ASSERT_PTR_NOT_NULL(strstr(rows[0].dev, "6 pieces on LUNs 0,1,2,3"));
	free(out);

	/* A part of the file: the second write and the hole after it, clipped. */
	CU_ASSERT_EQUAL(extents(&out, &fx, "--offset 3M --length 1M --no-split"), 0);
	xt_expect_second_write(out, "READ_WRITE");
	free(out);

	/* Without touching the LUNs, the same map (in 512-byte sectors, which these LUNs use). */
	CU_ASSERT_EQUAL(extents(&out, &fx, "--offline"), 0);
	CU_ASSERT(xt_parse_rows(out, rows, 128) > 7);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "note      LUNs not opened (--offline)"));
	free(out);

	/* JSON carries the same, for scripts. */
	if (test_run(NULL, "command -v jq >/dev/null") == 0) {
		CU_ASSERT_EQUAL(test_run(NULL, "%s --pool %s --file-id %llu --json | jq -e '"
					 "[.extents[].state] == [\"READ_WRITE\",\"NONE\",\"READ_WRITE\",\"NONE\","
					 "\"READ_WRITE\",\"NONE\",\"INVALID\"] and .size == 9437307 and "
					 "(.luns | length) == 4 and .fragmentation.holes == 3 and "
					 "(.extents[0].pieces | length) == 6 and "
					 "([.luns[].bytes] | add) == .fragmentation.data_bytes' >/dev/null",
					 test_bin("pnfs-extents"), fx.pool, (unsigned long long)fx.fileid),
				0);
	}
	free(lun);
	teardown(&fx);
}

static void test_verify_flipped_byte(void)
{
	struct fixture fx;
	struct xt_row rows[128];
	char *out = NULL, opts[1024];
	int n, target = -1;

	CU_ASSERT_FATAL(setup(&fx, "extents-verify") == 0);
	snprintf(opts, sizeof(opts), "--verify --compare %s", fx.ref);
	CU_ASSERT_EQUAL(extents(&out, &fx, opts), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "7 extents, 3 ok, 4 reading as zeros, 0 bad"));
	n = xt_parse_rows(out, rows, 128);
	/* Flip one byte of the second write on its LUN, behind the MDS's back. */
	for (int i = 0; i < n; i++)
		if (rows[i].ext == 2 && rows[i].len > 5000) {
			target = i;
			break;
		}
	CU_ASSERT_FATAL(target >= 0);
	free(out);
	xt_flip_byte(fx.lab, &rows[target]);
	CU_ASSERT_EQUAL(extents(&out, &fx, opts), 1);
	xt_expect_bad(out, "2 ok, 4 reading as zeros, 1 bad", &rows[target], 1);
	free(out);
	teardown(&fx);
}

static void test_svg_renders(void)
{
	struct fixture fx;
	char *out = NULL, svg[600], png[600], opts[700];
	uint8_t head[24];
	FILE *f;
	long size;

	CU_ASSERT_FATAL(setup(&fx, "extents-svg") == 0);
	snprintf(svg, sizeof(svg), "%s.svg", fx.pool);
	snprintf(png, sizeof(png), "%s.png", fx.pool);
	snprintf(opts, sizeof(opts), "--svg %s", svg);
	CU_ASSERT_EQUAL_FATAL(extents(NULL, &fx, opts), 0);
	CU_ASSERT_EQUAL_FATAL(test_run(&out, "cat %s", svg), 0);
	CU_ASSERT_EQUAL(xt_count(out, "class=\"segment\""), 7);
	/* Pieces coloured by LUN: the first write's six pieces, the second's and third's, the INVALID
	 * allocation's one. */
	CU_ASSERT(xt_count(out, "class=\"piece\"") >= 6 + 3 + 12 + 1);
	CU_ASSERT_EQUAL(xt_count(out, "class=\"lun\""), NLUNS);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, fx.lab->urls[3]));
	free(out);
	if (test_run(NULL, "command -v rsvg-convert >/dev/null") != 0) {
		test_skip("rsvg-convert (librsvg2-bin) is not installed");
		teardown(&fx);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "rsvg-convert -o %s %s", png, svg), 0);
	f = fopen(png, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fread(head, 1, sizeof(head), f), sizeof(head));
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	CU_ASSERT_EQUAL(memcmp(head, "\x89PNG\r\n\x1a\n", 8), 0);
	/* IHDR: 1000 pixels wide. */
	CU_ASSERT_EQUAL(((unsigned)head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19]), 1000);
	CU_ASSERT(size > 8000);
	teardown(&fx);
}

TEST_SUITE(extents_pool, "integration/extents_pool", NULL, NULL,
	   { "states_and_lbas", test_states_and_lbas },
	   { "verify_flipped_byte", test_verify_flipped_byte },
	   { "svg_renders", test_svg_renders });
