/* proto_grow(), the growing arrays of every part: room appears only when an array is full, the
 * elements kept survive, and a size that cannot be had leaves the caller's array as it was. */
#include "tests/harness.h"
#include "proto/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct vec {
	uint64_t *v;
	size_t n, cap;
};

static void grows_when_full(void)
{
	struct vec a = { 0 };
	uint64_t *before;

	CU_ASSERT_EQUAL(proto_grow(&a.v, a.n, &a.cap, sizeof(*a.v), 4), 0);
	CU_ASSERT_PTR_NOT_NULL(a.v);
	CU_ASSERT_EQUAL(a.cap, 4);
	for (uint64_t i = 0; i < 1000; i++) {
		CU_ASSERT_EQUAL_FATAL(proto_grow(&a.v, a.n, &a.cap, sizeof(*a.v), 4), 0);
		CU_ASSERT_FATAL(a.n < a.cap);
		a.v[a.n++] = i * 3;
	}
	CU_ASSERT_EQUAL(a.cap, 1024); /* 4 doubled eight times */
	for (uint64_t i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL_FATAL(a.v[i], i * 3);
	/* not full: nothing moves */
	before = a.v;
	CU_ASSERT_EQUAL(proto_grow(&a.v, a.n, &a.cap, sizeof(*a.v), 4), 0);
	CU_ASSERT_PTR_EQUAL(a.v, before);
	CU_ASSERT_EQUAL(a.cap, 1024);
	free(a.v);
}

static void overflow_leaves_array(void)
{
	struct vec a = { 0 };
	uint64_t *before;
	size_t huge;

	CU_ASSERT_EQUAL(proto_grow(&a.v, 0, &a.cap, sizeof(*a.v), 2), 0);
	a.v[0] = 11;
	a.v[1] = 22;
	before = a.v;
	/* twice this many elements of 8 bytes do not fit a size_t */
	huge = SIZE_MAX / 8;
	a.cap = huge;
	CU_ASSERT_EQUAL(proto_grow(&a.v, huge, &a.cap, sizeof(*a.v), 2), -ENOMEM);
	CU_ASSERT_PTR_EQUAL(a.v, before);
	CU_ASSERT_EQUAL(a.cap, huge);
	a.cap = SIZE_MAX / 2 + 1;
	CU_ASSERT_EQUAL(proto_grow(&a.v, a.cap, &a.cap, 1, 2), -ENOMEM);
	CU_ASSERT_PTR_EQUAL(a.v, before);
	CU_ASSERT_EQUAL(a.v[0], 11);
	CU_ASSERT_EQUAL(a.v[1], 22);
	free(a.v);
}

TEST_SUITE(proto_grow, "proto/grow", NULL, NULL,
	   { "grows_when_full", grows_when_full },
	   { "overflow_leaves_array", overflow_leaves_array });
