/* The pnfs-extents command: --help, usage errors (exit 2) that say what is wrong, failures (exit 1)
 * that name what failed, and --pool mode on a pool over regular-file LUNs (fast; the tgtd version is
 * tests/integration/extents_pool_test.c). */
#include "tests/harness.h"
#include "tests/tools/cli.h"
#include "tests/tools/extents_helpers.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run(char **out, const char *args)
{
	return cli_run(out, NULL, "pnfs-extents", "%s", args);
}

static void test_usage(void)
{
	static const struct {
		const char *args, *msg;
	} cases[] = {
		{ "", "give a pnfs:// URL or --pool DIR" },
		{ "--pool /tmp/x", "needs --file-id N or --path /PATH" },
		{ "--pool /tmp/x --file-id 2 --path /a", "exclude each other" },
		{ "--pool /tmp/x --file-id 0", "bad --file-id '0'" },
		{ "--pool /tmp/x --file-id 12abc", "bad --file-id '12abc'" },
		{ "--pool /tmp/x --file-id 2 --offset 1Q", "bad --offset '1Q'" },
		{ "--pool /tmp/x --file-id 2 --length 0", "bad --length '0'" },
		{ "--pool /tmp/x --file-id 2 --verify", "needs --compare FILE" },
		{ "--pool /tmp/x --file-id 2 --compare /etc/passwd", "goes with --verify" },
		{ "--pool /tmp/x --file-id 2 --verify --compare /x --offline", "cannot go with --offline" },
		{ "--pool /tmp/x --file-id 2 --portal iscsi://h", "names its LUNs in pool.conf" },
		{ "--pool /tmp/x --file-id 2 pnfs://h/a", "not both" },
		{ "--path /a pnfs://h/a", "go with --pool" },
		{ "--offline pnfs://h/a", "--offline goes with --pool" },
		{ "--bogus", "unknown option" },
		{ "--timeout 0 pnfs://h/a", "bad --timeout '0'" },
		{ "pnfs://h/a extra", "unexpected argument 'extra'" },
		{ "pnfs://bad%host/a", "not a valid pnfs://host[:port]/path URL" },
		{ "pnfs://h:99999/a", "not a valid pnfs://host[:port]/path URL" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cli_expect(2, cases[i].msg, NULL, "pnfs-extents", "%s", cases[i].args);
}

static void test_help(void)
{
	char *out = NULL;

	CU_ASSERT_EQUAL(run(&out, "--help"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Usage: pnfs-extents"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--no-split"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--verify"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Exit status"));
	free(out);
}

#define NL 3
#define LUN_BYTES (12u << 20)

static void make_pool(char *pool, size_t len, uint64_t *fileid)
{
	const char *dir = test_tmpdir("extents-cli");
	static char files[NL][512];
	const char *urls[NL];
	uint8_t data[20000];

	for (int i = 0; i < NL; i++) {
		int fd;
		snprintf(files[i], sizeof(files[i]), "%s/lun%d", dir, i);
		fd = open(files[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(ftruncate(fd, LUN_BYTES) == 0);
		close(fd);
		urls[i] = files[i];
	}
	snprintf(pool, len, "%s/pool", dir);
	CU_ASSERT_EQUAL_FATAL(xt_pool_format(pool, urls, NL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(xt_create(pool, "f", fileid), 0);
	test_fill_random(data, sizeof(data), 5);
	CU_ASSERT_EQUAL_FATAL(xt_write(pool, *fileid, 8192, data, sizeof(data)), 0);
}

static void test_pool_errors(void)
{
	/* with_id: the pool's file by --file-id before opts */
	static const struct {
		int with_id;
		const char *opts;
		int status;
		const char *says;
	} cases[] = {
		/* Path components, fileids, types. */
		{ 0, "--path /f/x", 1, "'x' is under something that is not a directory" },
		{ 0, "--path /nope", 1, "/nope: no such file or directory ('nope' not found)" },
		{ 0, "--path f", 1, "give an absolute path" },
		{ 0, "--path /", 1, "is a directory: only regular files have extents" },
		{ 0, "--file-id 999", 1, "fileid 999: no such file in the pool" },
		{ 1, "--verify --compare /nonexistent/copy", 1, "--compare /nonexistent/copy: No such file or directory" },
		{ 1, "--svg /nonexistent/dir/x.svg", 1, "--svg /nonexistent/dir/x.svg: No such file or directory" },
		/* --offset at or past the end of the file (28192 bytes): nothing there to show */
		{ 0, "--path /f --offset 1M", 1, "--offset 1048576 is past the end of /f (28192 bytes)" },
		{ 0, "--path /f --offset 28192 --offline", 1, "past the end" },
		{ 0, "--path /f --offset 28191 --offline", 0, NULL },
	};
	char pool[600], id[40];
	uint64_t fileid;

	make_pool(pool, sizeof(pool), &fileid);
	/* A directory that holds no pool. */
	cli_expect(1, "/nonexistent/pool holds no pool", NULL, "pnfs-extents", "--pool /nonexistent/pool --file-id 2");
	snprintf(id, sizeof(id), " --file-id %llu", (unsigned long long)fileid);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cli_expect(cases[i].status, cases[i].says, NULL, "pnfs-extents", "--pool %s%s %s", pool,
			   cases[i].with_id ? id : "", cases[i].opts);
}

static void test_pool_concat(void)
{
	char pool[600], args[1200], *out = NULL;
	struct xt_row rows[16];
	uint64_t fileid;
	int n;

	make_pool(pool, sizeof(pool), &fileid);
	snprintf(args, sizeof(args), "--pool %s --path /f", pool);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "concat of 3 LUNs"));
	/* 20000 bytes at 8192: blocks [8K, 28K) after a two-block hole, all on LUN 0 after its label MiB. */
	n = xt_parse_rows(out, rows, 16);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_STRING_EQUAL(rows[0].state, "NONE");
	CU_ASSERT_EQUAL(rows[0].len, 8192);
	CU_ASSERT_STRING_EQUAL(rows[1].state, "READ_WRITE");
	CU_ASSERT_EQUAL(rows[1].file_off, 8192);
	CU_ASSERT_EQUAL(rows[1].len, 20480);
	CU_ASSERT_EQUAL(rows[1].lun, 0);
	CU_ASSERT_EQUAL(rows[1].lba_first, (1u << 20) / 512);
	CU_ASSERT_PTR_NOT_NULL(strstr(rows[1].dev, "/lun0"));
	free(out);
}

TEST_SUITE(extents_cli, "tools/extents_cli", NULL, NULL,
	   { "usage", test_usage },
	   { "help", test_help },
	   { "pool_errors", test_pool_errors },
	   { "pool_concat", test_pool_concat });
