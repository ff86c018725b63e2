/* Layout segment sets (mds/layout_seg.h) against a model: thousands of random adds and removes over
 * a small universe, checked after every step against a byte map (contents, the pieces a remove
 * reports, overlap and cover queries) and for the set's own shape (sorted, disjoint, never two
 * ranges touching); plus the edges a server meets: ranges to UINT64_MAX, splits, empty ranges. */
#include "mds/layout_seg.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define UNIVERSE 512

static int shape_ok(const struct mds_lo_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].end <= s->v[i].off)
			return 0;
		if (i && s->v[i].off <= s->v[i - 1].end)
			return 0; /* overlapping or touching: should have merged */
	}
	return 1;
}

static int matches_model(const struct mds_lo_set *s, const unsigned char *model, uint64_t unit)
{
	unsigned char got[UNIVERSE] = { 0 };

	for (size_t i = 0; i < s->n; i++)
		for (uint64_t x = s->v[i].off / unit; x < s->v[i].end / unit && x < UNIVERSE; x++)
			got[x] = 1;
	return memcmp(got, model, UNIVERSE) == 0;
}

static void test_model(void)
{
	const uint64_t unit = 4096;
	struct mds_lo_set s = { 0 }, removed = { 0 };
	unsigned char model[UNIVERSE] = { 0 };
	unsigned seed = 12345;
	int bad = 0;

	for (int step = 0; step < 20000 && !bad; step++) {
		uint64_t a = (uint64_t)(rand_r(&seed) % UNIVERSE), b = (uint64_t)(rand_r(&seed) % UNIVERSE);
		int op = rand_r(&seed) % 3;
		if (a > b) {
			uint64_t t = a;
			a = b;
			b = t;
		}
		b++;
		if (op < 2) {
			CU_ASSERT_EQUAL(mds_lo_set_add(&s, a * unit, b * unit), 0);
			memset(model + a, 1, b - a);
		} else {
			unsigned char was[UNIVERSE];
			memcpy(was, model, sizeof(was));
			mds_lo_set_clear(&removed);
			CU_ASSERT_EQUAL(mds_lo_set_remove(&s, a * unit, b * unit, &removed), 0);
			memset(model + a, 0, b - a);
			/* What was reported removed is exactly what was there in [a, b). */
			{
				unsigned char want[UNIVERSE] = { 0 };
				for (uint64_t x = a; x < b; x++)
					want[x] = was[x];
				if (!matches_model(&removed, want, unit)) {
					CU_FAIL("remove reported other pieces than were there");
					bad = 1;
				}
			}
		}
		if (!shape_ok(&s)) {
			CU_FAIL("set not sorted, disjoint and merged");
			bad = 1;
		}
		if (!matches_model(&s, model, unit)) {
			CU_FAIL("set contents differ from the model");
			bad = 1;
		}
		/* Queries at random against the model. */
		for (int q = 0; q < 4 && !bad; q++) {
			uint64_t x = (uint64_t)(rand_r(&seed) % UNIVERSE), y = x + 1 + (uint64_t)(rand_r(&seed) % 16);
			int any = 0, all = 1;
			for (uint64_t k = x; k < y; k++) {
				int in = k < UNIVERSE && model[k];
				any |= in;
				all &= in;
			}
			if (mds_lo_set_overlaps(&s, x * unit, y * unit) != any ||
			    mds_lo_set_covers(&s, x * unit, y * unit) != all) {
				CU_FAIL("overlap/cover query disagrees with the model");
				bad = 1;
			}
		}
	}
	mds_lo_set_free(&s);
	mds_lo_set_free(&removed);
}

static void test_edges(void)
{
	struct mds_lo_set s = { 0 }, removed = { 0 };

	/* Empty ranges are refused by add and ignored by remove. */
	CU_ASSERT_EQUAL(mds_lo_set_add(&s, 10, 10), -EINVAL);
	CU_ASSERT_EQUAL(mds_lo_set_remove(&s, 10, 10, NULL), 0);
	/* To the end of every file. */
	CU_ASSERT_EQUAL(mds_lo_set_add(&s, 8192, UINT64_MAX), 0);
	CU_ASSERT(mds_lo_set_covers(&s, 1ull << 62, UINT64_MAX));
	CU_ASSERT(!mds_lo_set_overlaps(&s, 0, 8192));
	/* A hole punched in the middle splits it; the piece is reported. */
	CU_ASSERT_EQUAL(mds_lo_set_remove(&s, 1 << 20, 2 << 20, &removed), 0);
	CU_ASSERT_EQUAL(s.n, 2);
	CU_ASSERT_EQUAL(s.v[0].off, 8192);
	CU_ASSERT_EQUAL(s.v[0].end, 1 << 20);
	CU_ASSERT_EQUAL(s.v[1].off, 2 << 20);
	CU_ASSERT_EQUAL(s.v[1].end, UINT64_MAX);
	CU_ASSERT_EQUAL(removed.n, 1);
	CU_ASSERT_EQUAL(removed.v[0].off, 1 << 20);
	CU_ASSERT_EQUAL(removed.v[0].end, 2 << 20);
	/* Adjacent ranges merge; the byte count saturates. */
	CU_ASSERT_EQUAL(mds_lo_set_add(&s, 0, 8192), 0);
	CU_ASSERT_EQUAL(mds_lo_set_add(&s, 1 << 20, 2 << 20), 0);
	CU_ASSERT_EQUAL(s.n, 1);
	CU_ASSERT_EQUAL(s.v[0].off, 0);
	CU_ASSERT_EQUAL(mds_lo_set_bytes(&s), UINT64_MAX);
	/* Removing everything leaves nothing. */
	mds_lo_set_clear(&removed);
	CU_ASSERT_EQUAL(mds_lo_set_remove(&s, 0, UINT64_MAX, &removed), 0);
	CU_ASSERT_EQUAL(s.n, 0);
	CU_ASSERT_EQUAL(removed.n, 1);
	CU_ASSERT_EQUAL(mds_lo_end(5, UINT64_MAX), UINT64_MAX);
	CU_ASSERT_EQUAL(mds_lo_end(UINT64_MAX - 3, 10), UINT64_MAX);
	CU_ASSERT_EQUAL(mds_lo_end(5, 10), 15);
	mds_lo_set_free(&s);
	mds_lo_set_free(&removed);
}

/* Many segments stay cheap: 100,000 disjoint ranges, then queries and removals in the middle. */
static void test_many(void)
{
	struct mds_lo_set s = { 0 };
	const uint64_t n = 100000;

	for (uint64_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL_FATAL(mds_lo_set_add(&s, i * 8192 * 2, i * 8192 * 2 + 8192), 0);
	CU_ASSERT_EQUAL(s.n, n);
	CU_ASSERT(mds_lo_set_overlaps(&s, 5000 * 16384, 5000 * 16384 + 1));
	CU_ASSERT(!mds_lo_set_overlaps(&s, 5000 * 16384 + 8192, 5001 * 16384));
	CU_ASSERT_EQUAL(mds_lo_set_remove(&s, 5000 * 16384, 6000 * 16384, NULL), 0);
	CU_ASSERT_EQUAL(s.n, n - 1000);
	CU_ASSERT_EQUAL(mds_lo_set_add(&s, 0, n * 16384), 0);
	CU_ASSERT_EQUAL(s.n, 1);
	mds_lo_set_free(&s);
}

TEST_SUITE(layout_seg, "mds/layout_seg", NULL, NULL,
	   { "model", test_model },
	   { "edges", test_edges },
	   { "many", test_many });
