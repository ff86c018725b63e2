/* The shared helpers of proto/util.h and proto/list.h: the byte counts and sizes every program
 * prints and parses, JSON strings, error texts into a caller's buffer, and the list's links. */
#include "tests/harness.h"
#include "proto/list.h"
#include "proto/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fmt_bytes(void)
{
	char b[32];

	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(0, PROTO_FMT_TENTHS, b, sizeof(b)), "0 B");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(1023, PROTO_FMT_TENTHS, b, sizeof(b)), "1023 B");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(64 << 10, PROTO_FMT_TENTHS, b, sizeof(b)), "64.0 KiB");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(3ull << 29, PROTO_FMT_TENTHS, b, sizeof(b)), "1.5 GiB");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(2ull << 50, PROTO_FMT_TENTHS, b, sizeof(b)), "2.0 PiB");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(64 << 10, PROTO_FMT_SHORT, b, sizeof(b)), "64 KiB");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(3ull << 29, PROTO_FMT_SHORT, b, sizeof(b)), "1.5 GiB");
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(512, PROTO_FMT_SHORT, b, sizeof(b)), "512 B");
	/* a short buffer is cut, never overrun */
	CU_ASSERT_STRING_EQUAL(proto_fmt_bytes(64 << 10, PROTO_FMT_TENTHS, b, 4), "64.");
}

static void parse_size(void)
{
	uint64_t v = 7;

	CU_ASSERT(proto_parse_size("64Mi", &v) == 0 && v == 64u << 20);
	CU_ASSERT(proto_parse_size("1k", &v) == 0 && v == 1024);
	CU_ASSERT(proto_parse_size("010", &v) == 0 && v == 8);
	CU_ASSERT_EQUAL(proto_parse_size("+1", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size(" 1", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("1B", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size("1MiBs", &v), -EINVAL);
	CU_ASSERT_EQUAL(proto_parse_size(NULL, &v), -EINVAL);
	CU_ASSERT_EQUAL(v, 8); /* the last success: failures leave it alone */
}

static void json_str(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	proto_json_str(f, "a\"b\\c\n\x7f\xc3\xa9");
	fclose(f);
	CU_ASSERT_STRING_EQUAL(out, "\"a\\\"b\\\\c\\u000a\\u007f\xc3\xa9\"");
	free(out);
}

static void errf(void)
{
	char e[8] = "old";

	CU_ASSERT_EQUAL(proto_errf(e, sizeof(e), -EIO, "lun %d: %s", 3, "gone"), -EIO);
	CU_ASSERT_STRING_EQUAL(e, "lun 3: ");
	CU_ASSERT_EQUAL(proto_errf(NULL, 0, -ENOENT, "nowhere %d", 1), -ENOENT);
	strcpy(e, "kept");
	CU_ASSERT_EQUAL(proto_errf(e, 0, 0, "not written"), 0);
	CU_ASSERT_STRING_EQUAL(e, "kept");
}

struct item {
	int v;
	struct proto_list link;
};

static void list(void)
{
	struct proto_list head;
	struct item it[4];
	int seen[4], n = 0;

	proto_list_init(&head);
	CU_ASSERT(proto_list_empty(&head));
	for (int i = 0; i < 4; i++) {
		it[i].v = i;
		proto_list_init(&it[i].link);
	}
	proto_list_add(&head, &it[1].link);      /* 1 */
	proto_list_add(&head, &it[0].link);      /* 0 1 */
	proto_list_add_tail(&head, &it[3].link); /* 0 1 3 */
	proto_list_add_tail(&it[3].link, &it[2].link); /* before 3: 0 1 2 3 */
	proto_list_for_each(p, &head, struct item, link)
		seen[n++] = p->v;
	CU_ASSERT_EQUAL_FATAL(n, 4);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(seen[i], i);
	/* unlinking while walking: all but 2 go, first, middle and last alike */
	proto_list_for_each_safe(p, &head, struct item, link)
		if (p->v != 2)
			proto_list_del(&p->link);
	CU_ASSERT(!proto_list_linked(&it[0].link));
	CU_ASSERT(proto_list_linked(&it[2].link));
	CU_ASSERT_PTR_EQUAL(proto_list_first(&head, struct item, link), &it[2]);
	proto_list_del(&it[0].link); /* twice: harmless */
	proto_list_del(&it[2].link);
	CU_ASSERT(proto_list_empty(&head));
}

TEST_SUITE(proto_util, "proto/util", NULL, NULL,
	   { "fmt_bytes", fmt_bytes },
	   { "parse_size", parse_size },
	   { "json_str", json_str },
	   { "errf", errf },
	   { "list", list });
