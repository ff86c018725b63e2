/* pnfs:// URL parsing: the forms the pnfs command accepts and the ones it must refuse. */
#include "client/pnfs.h"
#include "tests/harness.h"

#include <errno.h>
#include <string.h>

static void test_good(void)
{
	struct pnfs_url u;

	CU_ASSERT_EQUAL(pnfs_parse_url("pnfs://mds.example/export/a/b", &u), 0);
	CU_ASSERT_STRING_EQUAL(u.host, "mds.example");
	CU_ASSERT_EQUAL(u.port, PNFS_DEFAULT_PORT);
	CU_ASSERT_STRING_EQUAL(u.path, "/export/a/b");
	CU_ASSERT_EQUAL(pnfs_parse_url("pnfs://127.0.0.1:20049/x", &u), 0);
	CU_ASSERT_STRING_EQUAL(u.host, "127.0.0.1");
	CU_ASSERT_EQUAL(u.port, 20049);
	CU_ASSERT_EQUAL(pnfs_parse_url("pnfs://h", &u), 0);
	CU_ASSERT_STRING_EQUAL(u.path, "/");
	CU_ASSERT_EQUAL(pnfs_parse_url("pnfs://h:1/", &u), 0);
	CU_ASSERT_EQUAL(u.port, 1);
	CU_ASSERT_EQUAL(pnfs_parse_url("pnfs://[::1]:2049/d%20e/%41", &u), 0);
	CU_ASSERT_STRING_EQUAL(u.host, "::1");
	CU_ASSERT_STRING_EQUAL(u.path, "/d e/A");
	CU_ASSERT_TRUE(pnfs_is_url("pnfs://x"));
	CU_ASSERT_FALSE(pnfs_is_url("/tmp/pnfs://x"));
	CU_ASSERT_FALSE(pnfs_is_url("nfs://x/y"));
}

static void test_bad(void)
{
	static const char *const bad[] = {
		"nfs://h/x", "pnfs://", "pnfs:///x", "pnfs://h:0/x", "pnfs://h:65536/x", "pnfs://h:12ab/x",
		"pnfs://h:/x", "pnfs://[::1/x", "pnfs://h/a%2", "pnfs://h/a%zz", "pnfs://h/a%00b", "pnfs://h?x",
	};
	struct pnfs_url u;
	char longpath[5000];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(pnfs_parse_url(bad[i], &u), -EINVAL);
	memcpy(longpath, "pnfs://h/", 9);
	memset(longpath + 9, 'a', sizeof(longpath) - 10);
	longpath[sizeof(longpath) - 1] = 0;
	CU_ASSERT_EQUAL(pnfs_parse_url(longpath, &u), -ENAMETOOLONG);
}

TEST_SUITE(client_url, "client/url", NULL, NULL,
	   { "good", test_good },
	   { "bad", test_bad });
