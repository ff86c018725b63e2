/* proto_grow() and proto_strbuf, the growing arrays and texts of every part: room appears only when
 * an array is full, the elements kept survive, a size that cannot be had leaves the caller's array
 * as it was, and a text holds every append in order, however long. */
#include "tests/harness.h"
#include "proto/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static void strbuf_appends(void)
{
	struct proto_strbuf b = { 0 };
	char big[5000];
	size_t want = 0;

	CU_ASSERT_EQUAL(proto_strbuf_printf(&b, "%s", ""), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.s);
	CU_ASSERT_STRING_EQUAL(b.s, "");
	CU_ASSERT_EQUAL(proto_strbuf_printf(&b, "lun %u of %u\n", 2u, 3u), 0);
	CU_ASSERT_STRING_EQUAL(b.s, "lun 2 of 3\n");
	/* one append longer than twice what the buffer had */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CU_ASSERT_EQUAL(proto_strbuf_printf(&b, "[%s]", big), 0);
	want = strlen("lun 2 of 3\n") + 2 + sizeof(big) - 1;
	CU_ASSERT_EQUAL(b.n, want);
	CU_ASSERT_EQUAL(strlen(b.s), want);
	CU_ASSERT_EQUAL(b.s[11], '[');
	CU_ASSERT_EQUAL(b.s[want - 1], ']');
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL_FATAL(proto_strbuf_printf(&b, "%d,", i % 10), 0);
	CU_ASSERT_EQUAL(b.n, want + 2000);
	CU_ASSERT_EQUAL(memcmp(b.s + want, "0,1,2,", 6), 0);
	CU_ASSERT_FALSE(b.failed);
	/* a failed text stays failed */
	b.failed = 1;
	CU_ASSERT_EQUAL(proto_strbuf_printf(&b, "more"), -ENOMEM);
	CU_ASSERT_EQUAL(b.n, want + 2000);
	free(b.s);
}

TEST_SUITE(proto_grow, "proto/grow", NULL, NULL,
	   { "grows_when_full", grows_when_full },
	   { "overflow_leaves_array", overflow_leaves_array },
	   { "strbuf_appends", strbuf_appends });
