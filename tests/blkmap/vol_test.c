/* The volume model: every validation rule refuses with a message naming the entry, the text form
 * parses back to what it printed, mapping gives the runs the RFC formula says, and the dm tables come
 * out in dmsetup's exact text, stacked where one table cannot express the volume. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const uint8_t SIG[] = "PNFSLBL1";

static struct blkmap_vol *parse(const char *text)
{
	struct blkmap_vol *vol = NULL;
	char err[300];
	int rc = blkmap_vol_parse_text(text, &vol, err, sizeof(err));
	if (rc != 0)
		printf("parse failed: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	return vol;
}

/* validation fails and the message contains want */
static void expect_invalid(const char *text, const char *want)
{
	struct blkmap_vol *vol = NULL;
	char err[300] = "";
	int rc = blkmap_vol_parse_text(text, &vol, err, sizeof(err));

	if (rc == 0) {
		rc = blkmap_vol_validate(vol);
		snprintf(err, sizeof(err), "%s", blkmap_vol_errstr(vol));
		blkmap_vol_free(vol);
	}
	CU_ASSERT(rc < 0);
	if (!strstr(err, want))
		printf("\n  expected '%s' in '%s'\n", want, err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void test_validation(void)
{
	struct blkmap_vol *vol;
	uint32_t idx, members[2] = { 0, 5 };
	struct blkmap_sig_comp comps[17];

	/* fine */
	vol = parse("simple 0:aa\nsimple 0:bb\nslice 0 1M 0\nslice 0 1M 1\nstripe 64K 2 3\n");
	CU_ASSERT_EQUAL(blkmap_vol_validate(vol), 0);
	blkmap_vol_free(vol);

	expect_invalid("", "no volumes");
	expect_invalid("simple 0:aa\nslice 0 1M 1\n", "member 1 does not refer to an earlier entry");
	expect_invalid("simple 0:aa\nconcat 0 0\n", "volume 0 is used more than once");
	expect_invalid("simple 0:aa\nsimple 0:bb\nslice 0 1M 0\n", "volume 1 (simple) is not part of the top volume 2");
	expect_invalid("simple 0:aa\nslice 0 1000 0\n", "multiples of 512");
	expect_invalid("simple 0:aa\nslice 0 0 0\n", "zero length");
	expect_invalid("simple 0:aa\nstripe 6144 0\n", "not a power of two");
	expect_invalid("simple 0:aa\nstripe 2048 0\n", "not a power of two of at least 4096");
	expect_invalid("simple 0:aa\nsimple 0:bb\nslice 0 1M 0\nslice 0 2M 1\nstripe 64K 2 3\n",
		       "volume 4 (stripe): members differ in size");
	expect_invalid("simple -2:aabbcc\n", "runs past the end");
	expect_invalid("simple 0:\n", "bad signature contents");
	expect_invalid("simple 0:aa\nmirror 0\n", "line 2: unknown volume type 'mirror'");
	expect_invalid("simple 0:aa\n\n# comment\nslice 0 1M x\n", "line 4: slice takes START LENGTH VOLUME");
	expect_invalid("scsi naa binary 6001 key=zz\n", "is not key=NUMBER");
	expect_invalid("scsi md5 binary 6001\n", "type is naa");

	/* depth: a chain of 17 slices below the top */
	{
		char text[2048] = "simple 0:aa\n";
		for (int i = 0; i < 17; i++)
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "slice 0 1M %d\n", i);
		expect_invalid(text, "levels below the top, at most 16");
	}
	/* a concat or stripe of more members than a volume may have: refused by the text parser */
	for (int stripe = 0; stripe < 2; stripe++) {
		static char text[4096];
		size_t o = (size_t)snprintf(text, sizeof(text), "simple 0:aa\n%s", stripe ? "stripe 64K" : "concat");
		for (unsigned i = 0; i < BLKMAP_MAX_MEMBERS + 1; i++)
			o += (size_t)snprintf(text + o, sizeof(text) - o, " 0");
		snprintf(text + o, sizeof(text) - o, "\n");
		expect_invalid(text, stripe ? "line 2: stripe has 257 members; at most 256"
					    : "line 2: concat has 257 members; at most 256");
	}
	/* a slice beyond its member's known size */
	vol = parse("simple 0:aa\nslice 1M 1M 0\n");
	CU_ASSERT_EQUAL(blkmap_vol_set_leaf_size(vol, 0, 1 << 20), 0);
	CU_ASSERT_EQUAL(blkmap_vol_validate(vol), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "lies outside volume 0"));
	CU_ASSERT_EQUAL(blkmap_vol_set_leaf_size(vol, 0, 2 << 20), 0);
	CU_ASSERT_EQUAL(blkmap_vol_validate(vol), 0);
	CU_ASSERT_EQUAL(blkmap_vol_set_leaf_size(vol, 1, 5), -EINVAL); /* not a leaf */
	blkmap_vol_free(vol);

	/* builder-level refusals */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	CU_ASSERT_EQUAL(blkmap_vol_validate(vol), -EINVAL);
	CU_ASSERT_EQUAL(blkmap_vol_add_simple(vol, NULL, 0, &idx), -EINVAL);
	for (int i = 0; i < 17; i++)
		comps[i] = (struct blkmap_sig_comp){ i, 1, SIG };
	CU_ASSERT_EQUAL(blkmap_vol_add_simple(vol, comps, 17, &idx), -E2BIG);
	CU_ASSERT_EQUAL(blkmap_vol_add_simple(vol, comps, 16, &idx), 0);
	CU_ASSERT_EQUAL(idx, 0);
	CU_ASSERT_EQUAL(blkmap_vol_add_concat(vol, members, 2, &idx), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "member 5"));
	CU_ASSERT_EQUAL(blkmap_vol_add_stripe(vol, 65536, members, 0, &idx), -EINVAL);
	CU_ASSERT_EQUAL(blkmap_vol_add_scsi(vol, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY, SIG, 0, 0, &idx), -EINVAL);
	CU_ASSERT_EQUAL(blkmap_vol_add_scsi(vol, BLKMAP_DESIG_NAA, 9, SIG, 8, 0, &idx), -EINVAL);
	CU_ASSERT_EQUAL(blkmap_vol_count(vol), 1);
	blkmap_vol_free(vol);
}

static void test_text_roundtrip(void)
{
	const char *text = "simple 512:504e46534c424c31,-4096:00ff\n"
			   "scsi naa binary 600140512345678a key=0xabc\n"
			   "scsi t10 ascii 53414e4c4142\n"
			   "slice 1M 63M 0\n"
			   "slice 0 4K 1\n"
			   "slice 0 4K 2\n"
			   "concat 4 5\n"
			   "stripe 64K 3\n"
			   "concat 7 6\n";
	struct blkmap_vol *vol = parse(text), *again;
	const struct blkmap_sig_comp *c;
	const struct blkmap_designator *d;
	char *out = NULL, *out2 = NULL;

	CU_ASSERT_EQUAL(blkmap_vol_count(vol), 9);
	CU_ASSERT_EQUAL(blkmap_vol_type(vol, 0), BLKMAP_VOL_SIMPLE);
	CU_ASSERT_EQUAL(blkmap_vol_nsig(vol, 0), 2);
	c = blkmap_vol_sig(vol, 0, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(c->offset_bytes, -4096);
	CU_ASSERT_EQUAL(c->len, 2);
	CU_ASSERT_EQUAL(c->bytes[1], 0xff);
	d = blkmap_vol_designator(vol, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(d->type, BLKMAP_DESIG_NAA);
	CU_ASSERT_EQUAL(d->len, 8);
	CU_ASSERT_EQUAL(blkmap_vol_pr_key(vol, 1), 0xabc);
	CU_ASSERT_EQUAL(blkmap_vol_slice_start(vol, 3), 1 << 20);
	CU_ASSERT_EQUAL(blkmap_vol_slice_length(vol, 3), 63 << 20);
	CU_ASSERT_EQUAL(blkmap_vol_stripe_unit(vol, 7), 65536);
	CU_ASSERT_EQUAL(blkmap_vol_nmembers(vol, 8), 2);
	CU_ASSERT_EQUAL(blkmap_vol_member(vol, 8, 1), 6);
	CU_ASSERT_EQUAL(blkmap_vol_validate(vol), 0);
	CU_ASSERT_EQUAL(blkmap_vol_format_text(vol, &out), 0);
	CU_ASSERT_STRING_EQUAL(out, text);
	again = parse(out);
	CU_ASSERT_EQUAL(blkmap_vol_format_text(again, &out2), 0);
	CU_ASSERT_STRING_EQUAL(out, out2);
	free(out);
	free(out2);
	blkmap_vol_free(again);
	blkmap_vol_free(vol);
}

static char *table_text(struct blkmap_vol *vol, unsigned *ndev)
{
	struct blkmap_table *t = NULL;
	char *s = NULL;
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_table(vol, "pnfs-x", &t), 0);
	*ndev = t->ndev;
	CU_ASSERT_EQUAL(blkmap_table_format(t, &s), 0);
	blkmap_table_free(t);
	return s;
}

/* vol's device-mapper table is want, over ndev devices (-1: any number). */
static void expect_table(struct blkmap_vol *vol, int ndev, const char *want)
{
	unsigned got;
	char *s = table_text(vol, &got);

	if (ndev >= 0)
		CU_ASSERT_EQUAL(got, (unsigned)ndev);
	CU_ASSERT_STRING_EQUAL(s, want);
	free(s);
}

/* Volumes whose tables are more than one line per leaf: the volume, each leaf's size (0: not a leaf),
 * the devices and the table. */
static const struct {
	const char *text;
	uint64_t leaf_bytes[5];
	int ndev;
	const char *table;
} stacked[] = {
	/* a stripe of concats cannot be one table: the concats are stacked below */
	{ "simple 0:aa\nsimple 0:bb\nconcat 0 1\nsimple 0:cc\nsimple 0:dd\nconcat 3 4\nstripe 64K 2 5\n",
	  { 8 << 20, 8 << 20, 0, 8 << 20, 8 << 20 },
	  3,
	  "pnfs-x-v2: 0 16384 linear leaf0 0\n"
	  "pnfs-x-v2: 16384 16384 linear leaf1 0\n"
	  "pnfs-x-v5: 0 16384 linear leaf3 0\n"
	  "pnfs-x-v5: 16384 16384 linear leaf4 0\n"
	  "pnfs-x: 0 65536 striped 2 128 /dev/mapper/pnfs-x-v2 0 /dev/mapper/pnfs-x-v5 0\n" },
	/* a slice of a stripe that starts inside a row: partial rows become per-chunk linear lines */
	{ "simple 0:aa\nsimple 0:bb\nstripe 4K 0 1\nslice 8704 64K 2\n",
	  { 1 << 20, 1 << 20 },
	  1,
	  "0 7 linear leaf0 9\n"
	  "7 8 linear leaf1 8\n"
	  "15 112 striped 2 8 leaf0 16 leaf1 16\n"
	  "127 1 linear leaf0 72\n" },
};

static void test_tables(void)
{
	struct blkmap_vol *vol;
	struct blkmap_run *runs = NULL;
	size_t n = 0;

	/* the pool shape: a stripe of slices of labelled LUNs */
	vol = parse("simple 0:aa\nslice 1M 63M 0\nsimple 0:bb\nslice 1M 63M 2\n"
		    "simple 0:cc\nslice 1M 63M 4\nsimple 0:dd\nslice 1M 63M 6\nstripe 64K 1 3 5 7\n");
	for (uint32_t i = 0; i < 8; i += 2)
		blkmap_vol_set_leaf_size(vol, i, 64 << 20);
	expect_table(vol, 1, "0 516096 striped 4 128 leaf0 2048 leaf2 2048 leaf4 2048 leaf6 2048\n");
	CU_ASSERT_EQUAL(blkmap_vol_size_bytes(vol, 8), 252ull << 20);
	/* 192 KiB from 32 KiB: units 0 (half), 1, 2, 3 (half) on LUNs 0..3 */
	CU_ASSERT_EQUAL(blkmap_vol_map(vol, 32 << 10, 192 << 10, &runs, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	CU_ASSERT_EQUAL(runs[0].leaf, 0);
	CU_ASSERT_EQUAL(runs[0].leaf_offset_bytes, (1 << 20) + (32 << 10));
	CU_ASSERT_EQUAL(runs[0].length_bytes, 32 << 10);
	CU_ASSERT_EQUAL(runs[1].leaf, 2);
	CU_ASSERT_EQUAL(runs[1].leaf_offset_bytes, 1 << 20);
	CU_ASSERT_EQUAL(runs[1].vol_offset_bytes, 64 << 10);
	CU_ASSERT_EQUAL(runs[3].leaf, 6);
	CU_ASSERT_EQUAL(runs[3].length_bytes, 32 << 10);
	free(runs);
	CU_ASSERT_EQUAL(blkmap_vol_map(vol, 252ull << 20, 512, &runs, &n), -ERANGE);
	blkmap_vol_free(vol);

	for (size_t c = 0; c < sizeof(stacked) / sizeof(stacked[0]); c++) {
		vol = parse(stacked[c].text);
		for (uint32_t i = 0; i < 5; i++)
			if (stacked[c].leaf_bytes[i])
				blkmap_vol_set_leaf_size(vol, i, stacked[c].leaf_bytes[i]);
		expect_table(vol, stacked[c].ndev, stacked[c].table);
		blkmap_vol_free(vol);
	}

	/* a concat of slices of one LUN that meet end to end merges into one line */
	vol = parse("simple 0:aa\nslice 0 1M 0\nsimple 0:bb\nslice 0 1M 2\nconcat 1 3\n");
	blkmap_vol_set_leaf_size(vol, 0, 4 << 20);
	blkmap_vol_set_leaf_size(vol, 2, 4 << 20);
	expect_table(vol, -1, "0 2048 linear leaf0 0\n2048 2048 linear leaf2 0\n");
	/* unresolved leaves have no size: no table */
	blkmap_vol_set_leaf_size(vol, 2, 0);
	{
		struct blkmap_table *t = NULL;
		CU_ASSERT_EQUAL(blkmap_vol_table(vol, "pnfs-x", &t), -ENODEV);
		CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "volume 2 (simple) has no size"));
		CU_ASSERT_EQUAL(blkmap_vol_map(vol, 0, 512, &runs, &n), -ENODEV);
	}
	blkmap_vol_free(vol);
}

static void test_apply_skips_without_dm(void)
{
	struct blkmap_vol *vol = parse("simple 0:aa\nslice 0 1M 0\n");
	struct blkmap_table *t = NULL;
	char err[300] = "";
	int rc;

	blkmap_vol_set_leaf_size(vol, 0, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_table(vol, "pnfs-test", &t), 0);
	rc = blkmap_table_apply(t, err, sizeof(err));
	if (access("/dev/mapper/control", F_OK) != 0) {
		CU_ASSERT_EQUAL(rc, -ENOTSUP);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "/dev/mapper/control does not exist"));
		CU_ASSERT_PTR_NULL(strchr(err, '\n'));
	} else {
		/* with dm, an unresolved leaf is refused before anything is created */
		CU_ASSERT_EQUAL(rc, -ENODEV);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "leaf0"));
	}
	blkmap_table_free(t);
	blkmap_vol_free(vol);
}

TEST_SUITE(blkmap_vol, "blkmap/vol", NULL, NULL,
	   { "validation", test_validation },
	   { "text_roundtrip", test_text_roundtrip },
	   { "tables", test_tables },
	   { "apply_skips_without_dm", test_apply_skips_without_dm });
