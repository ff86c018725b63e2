/* The server's hash map and arena: many keys through growth, deletion while iterating (what
 * lease expiry and shutdown do), and arena memory that stays put until released. */
#include "tests/harness.h"

#include "mds/arena.h"
#include "mds/map.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_map_put_get_del(void)
{
	struct mds_map m;
	static uint64_t vals[5000];

	mds_map_init(&m);
	CU_ASSERT_PTR_NULL(mds_map_find(&m, "x", 1));
	for (uint64_t i = 0; i < 5000; i++) {
		vals[i] = i;
		CU_ASSERT_EQUAL(mds_map_insert(&m, &i, sizeof(i), &vals[i]), 0);
	}
	CU_ASSERT_EQUAL(m.count, 5000);
	{
		uint64_t k = 77;
		CU_ASSERT_EQUAL(mds_map_insert(&m, &k, sizeof(k), &vals[0]), -EEXIST);
		CU_ASSERT_PTR_EQUAL(mds_map_find(&m, &k, sizeof(k)), &vals[77]);
		/* Same bytes, other length: another key. */
		CU_ASSERT_PTR_NULL(mds_map_find(&m, &k, 4));
	}
	for (uint64_t i = 0; i < 5000; i += 2)
		CU_ASSERT_PTR_EQUAL(mds_map_del(&m, &i, sizeof(i)), &vals[i]);
	CU_ASSERT_EQUAL(m.count, 2500);
	for (uint64_t i = 0; i < 5000; i++)
		CU_ASSERT_PTR_EQUAL(mds_map_find(&m, &i, sizeof(i)), i % 2 ? &vals[i] : NULL);
	mds_map_clear(&m);
	CU_ASSERT_EQUAL(m.count, 0);
}

static void test_map_delete_while_iterating(void)
{
	struct mds_map m;
	struct mds_map_iter it;
	static int vals[1000];
	int seen = 0, kept = 0;

	mds_map_init(&m);
	for (int i = 0; i < 1000; i++) {
		vals[i] = i;
		CU_ASSERT_EQUAL(mds_map_insert(&m, &i, sizeof(i), &vals[i]), 0);
	}
	/* Delete the current entry (by key, as client destruction does) on every other step. */
	for (int *v = mds_map_first(&m, &it); v; v = mds_map_next(&m, &it)) {
		seen++;
		if (*v % 2 == 0)
			CU_ASSERT_PTR_EQUAL(mds_map_del(&m, v, sizeof(*v)), v);
	}
	CU_ASSERT_EQUAL(seen, 1000);
	CU_ASSERT_EQUAL(m.count, 500);
	/* And through the iterator itself. */
	for (int *v = mds_map_first(&m, &it); v; v = mds_map_next(&m, &it)) {
		kept++;
		mds_map_iter_del(&m, &it);
	}
	CU_ASSERT_EQUAL(kept, 500);
	CU_ASSERT_EQUAL(m.count, 0);
	CU_ASSERT_PTR_NULL(mds_map_first(&m, &it));
	mds_map_clear(&m);
}

static void test_arena(void)
{
	struct mds_arena a;
	char *small[100], *big;

	mds_arena_init(&a);
	for (int i = 0; i < 100; i++) {
		small[i] = mds_arena_alloc(&a, 1000);
		CU_ASSERT_PTR_NOT_NULL_FATAL(small[i]);
		CU_ASSERT_EQUAL((uintptr_t)small[i] % 16, 0);
		memset(small[i], i, 1000);
	}
	big = mds_arena_alloc(&a, 3u << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, 0xee, 3u << 20);
	/* Nothing moved or was overwritten. */
	for (int i = 0; i < 100; i++)
		CU_ASSERT(small[i][0] == (char)i && small[i][999] == (char)i);
	CU_ASSERT_STRING_EQUAL((char *)mds_arena_dup(&a, "abc", 3), "abc");
	CU_ASSERT_EQUAL(mds_arena_adopt(&a, malloc(64)), 0);
	CU_ASSERT_PTR_NULL(mds_arena_calloc(&a, SIZE_MAX / 2, 4));
	mds_arena_release(&a);
	CU_ASSERT_EQUAL(a.total_bytes, 0);
}

TEST_SUITE(mds_map, "mds/map", NULL, NULL,
	   { "put_get_del", test_map_put_get_del },
	   { "delete_while_iterating", test_map_delete_while_iterating },
	   { "arena", test_arena });
