/* pnfs cp keeps holes: a 4 GiB local file holding 4 bytes goes to a pool far smaller than 4 GiB and
 * takes a block of it (SEEK_DATA/SEEK_HOLE on the source, the size set with SETATTR), comes back
 * as a sparse local file (the layout's NONE_DATA and INVALID_DATA extents not read), and between
 * server paths the same; --sparse=never writes every byte; --sparse=always turns all-zero blocks
 * into holes; files with data and holes at odd offsets come back equal every way, through layouts
 * and through the MDS. Real pnfs-mds on a real tgtd lab. */
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/lab_cli.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)

/* 256 MiB of pool: a 4 GiB file fits only with its holes kept */
LAB_CLI_SUITE(4, "64M", "iqn.2024-01.test.pnfs:sparse-a", "pnfs-sparse")

/* Run "pnfs -q ARGS"; 0 when it succeeded, else its status, said on stderr with what it printed. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char args[8192], *err = NULL;
	int rc;

	TEST_VFORMAT(args, fmt);
	rc = test_run(&err, "'%s' -q %s 2>&1 >/dev/null", test_bin("pnfs"), args);
	if (rc != 0)
		fprintf(stderr, "\n  pnfs %s: exit %d:\n%s", args, rc, err ? err : "");
	free(err);
	return rc;
}

#define RUN_OK(...) CU_ASSERT_EQUAL(run(__VA_ARGS__), 0)

/* The pool's used bytes (pnfs-admin status, read-only beside the server); UINT64_MAX when unknown. */
static uint64_t pool_used(void)
{
	char *out = NULL;
	uint64_t v = UINT64_MAX;

	if (test_run(&out, "'%s' status --json --pool '%s' 2>&1", test_bin("pnfs-admin"), cl.mds->pool) != 0 ||
	    test_json_u64(out, "used_bytes", &v) < 0) {
		fprintf(stderr, "\n  pnfs-admin status: %s\n", out ? out : "");
		v = UINT64_MAX;
	}
	free(out);
	return v;
}

/* Run "pnfs -q --json --stats ARGS" and give one of its counters (UINT64_MAX when it failed). */
static uint64_t run_stat(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint64_t run_stat(const char *key, const char *fmt, ...)
{
	char args[8192], *out = NULL;
	uint64_t v = UINT64_MAX;

	TEST_VFORMAT(args, fmt);
	if (test_run(&out, "'%s' -q --json --stats %s 2>&1 >/dev/null", test_bin("pnfs"), args) != 0 ||
	    test_json_u64(out, key, &v) < 0) {
		fprintf(stderr, "\n  pnfs %s: %s\n", args, out ? out : "");
		v = UINT64_MAX;
	}
	free(out);
	return v;
}

/* The size "pnfs --json stat" gives (UINT64_MAX when it fails). */
static uint64_t remote_size(const char *u)
{
	char *out = NULL;
	uint64_t v = UINT64_MAX;

	if (test_run(&out, "'%s' -q --json stat '%s'", test_bin("pnfs"), u) != 0 || test_json_u64(out, "size", &v) < 0)
		v = UINT64_MAX;
	free(out);
	return v;
}

static uint64_t local_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

/* Bytes the local file occupies (du). */
static uint64_t local_alloc(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : UINT64_MAX;
}

/* Whether two local files hold the same bytes (cmp). */
static int same_bytes(const char *a, const char *b)
{
	return test_run(NULL, "cmp '%s' '%s'", a, b) == 0;
}

static void write_at(const char *path, uint64_t off, size_t len, uint64_t seed)
{
	char *d = malloc(len ? len : 1);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	CU_ASSERT_FATAL(fd >= 0);
	test_fill_random(d, len, seed);
	CU_ASSERT_EQUAL(pwrite(fd, d, len, (off_t)off), (ssize_t)len);
	close(fd);
	free(d);
}

/* A new sparse local file of size bytes with nothing in it. */
static void sparse_file(const char *path, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/* pnfs get of u into back with the lab's devices and more options: back holds the bytes of like,
 * 8 MiB or more of it allocated (sparse 0) or less than 1 MiB (sparse 1); then back is removed. */
static void get_and_check(const char *more, const char *u, const char *back, const char *like, int sparse)
{
	RUN_OK("%s %s get %s '%s'", cl.devs, more, u, back);
	CU_ASSERT(sparse ? local_alloc(back) < MIB : local_alloc(back) >= 8 * MIB);
	CU_ASSERT(same_bytes(like, back));
	unlink(back);
}

/* ---- the 4 GiB file with 4 bytes ------------------------------------------------------------- */

static void test_big_sparse_file(void)
{
	NEED_LAB();
	char src[500], back[500], back2[500], u[200], u2[200];
	uint64_t before, after;

	snprintf(src, sizeof(src), "%s/big", cl.tmp);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "truncate -s 4G '%s' && printf abcd | dd of='%s' bs=1 seek=1G "
				       "conv=notrunc status=none", src, src), 0);
	CU_ASSERT_EQUAL(local_size(src), 4 * GIB);
	CU_ASSERT(local_alloc(src) < MIB);
	snprintf(u, sizeof(u), "%s/big", cl.url);
	before = pool_used();
	CU_ASSERT_NOT_EQUAL_FATAL(before, UINT64_MAX);
	/* local to the server: one block taken (and written), the size 4 GiB */
	CU_ASSERT(run_stat("direct_bytes_written", "%s cp '%s' %s", cl.devs, src, u) < MIB);
	after = pool_used();
	CU_ASSERT_EQUAL(remote_size(u), 4 * GIB);
	CU_ASSERT(after >= before && after - before < 4 * MIB);
	if (!(after >= before && after - before < 4 * MIB))
		fprintf(stderr, "\n  pool used %llu before, %llu after\n", (unsigned long long)before,
			(unsigned long long)after);
	/* back: a sparse local file with the same bytes, the holes not even read */
	snprintf(back, sizeof(back), "%s/big.back", cl.tmp);
	CU_ASSERT(run_stat("zero_filled_bytes", "%s cp %s '%s'", cl.devs, u, back) < MIB);
	CU_ASSERT_EQUAL(local_size(back), 4 * GIB);
	CU_ASSERT(local_alloc(back) < MIB);
	CU_ASSERT(same_bytes(src, back));
	unlink(back);
	/* server to server: the same */
	snprintf(u2, sizeof(u2), "%s/big2", cl.url);
	before = pool_used();
	RUN_OK("%s cp %s %s", cl.devs, u, u2);
	after = pool_used();
	CU_ASSERT_EQUAL(remote_size(u2), 4 * GIB);
	CU_ASSERT(after >= before && after - before < 4 * MIB);
	snprintf(back2, sizeof(back2), "%s/big2.back", cl.tmp);
	RUN_OK("%s get %s '%s'", cl.devs, u2, back2);
	CU_ASSERT_EQUAL(local_size(back2), 4 * GIB);
	CU_ASSERT(local_alloc(back2) < MIB);
	CU_ASSERT(same_bytes(src, back2));
	unlink(back2);
	RUN_OK("rm %s %s", u, u2);
	unlink(src);
}

/* ---- --sparse=never and --sparse=always -------------------------------------------------------- */

static void test_never_and_always(void)
{
	NEED_LAB();
	char src[500], dense[500], back[500], u[200];
	uint64_t before, after;

	/* 8 MiB holding 4 bytes in the middle */
	snprintf(src, sizeof(src), "%s/small", cl.tmp);
	sparse_file(src, 8 * MIB);
	write_at(src, 4 * MIB + 1, 4, 1);
	snprintf(u, sizeof(u), "%s/small", cl.url);
	/* auto: a block */
	before = pool_used();
	RUN_OK("%s cp '%s' %s", cl.devs, src, u);
	after = pool_used();
	CU_ASSERT(after >= before && after - before < 2 * MIB);
	CU_ASSERT_EQUAL(remote_size(u), 8 * MIB);
	RUN_OK("rm %s", u);
	/* never: all of it, on the server and here */
	before = pool_used();
	RUN_OK("%s --sparse=never cp '%s' %s", cl.devs, src, u);
	after = pool_used();
	CU_ASSERT(after >= before + 8 * MIB);
	if (!(after >= before + 8 * MIB))
		fprintf(stderr, "\n  --sparse=never: pool used %llu before, %llu after\n", (unsigned long long)before,
			(unsigned long long)after);
	CU_ASSERT_EQUAL(remote_size(u), 8 * MIB);
	snprintf(back, sizeof(back), "%s/small.back", cl.tmp);
	RUN_OK("%s cp --sparse never %s '%s'", cl.devs, u, back);
	CU_ASSERT(local_alloc(back) >= 8 * MIB);
	CU_ASSERT(same_bytes(src, back));
	unlink(back);
	/* a file written full of zeros but for 4 bytes has no holes: auto keeps it whole, always
	 * leaves the zeros out */
	snprintf(dense, sizeof(dense), "%s/dense", cl.tmp);
	CU_ASSERT_EQUAL(test_run(NULL, "head -c %llu /dev/zero > '%s'", 8 * MIB, dense), 0);
	write_at(dense, 4 * MIB + 1, 4, 1);
	CU_ASSERT(local_alloc(dense) >= 8 * MIB);
	CU_ASSERT(same_bytes(src, dense));
	RUN_OK("rm %s", u);
	before = pool_used();
	RUN_OK("%s cp '%s' %s", cl.devs, dense, u);
	after = pool_used();
	CU_ASSERT(after >= before + 8 * MIB);
	get_and_check("", u, back, dense, 0); /* written on the server: copied whole */
	get_and_check("--sparse=always", u, back, dense, 1);
	RUN_OK("rm %s", u);
	before = pool_used();
	RUN_OK("%s cp --sparse=always '%s' %s", cl.devs, dense, u);
	after = pool_used();
	CU_ASSERT(after >= before && after - before < 2 * MIB);
	CU_ASSERT_EQUAL(remote_size(u), 8 * MIB);
	get_and_check("", u, back, dense, 1);
	/* from a pipe (8 MiB: it ends on a chunk's edge): the zeros left out, the size right */
	RUN_OK("rm %s", u);
	before = pool_used();
	CU_ASSERT_EQUAL(test_run(NULL, "cat '%s' | '%s' -q %s --sparse=always cp - %s", dense, test_bin("pnfs"), cl.devs, u), 0);
	after = pool_used();
	CU_ASSERT(after >= before && after - before < 2 * MIB);
	CU_ASSERT_EQUAL(remote_size(u), 8 * MIB);
	RUN_OK("%s get %s '%s'", cl.devs, u, back);
	CU_ASSERT(same_bytes(dense, back));
	unlink(back);
	/* a bad value is a usage error */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' --sparse=sometimes cp '%s' %s 2>/dev/null", test_bin("pnfs"), src, u), 2);
	RUN_OK("rm %s", u);
	unlink(src);
	unlink(dense);
}

/* ---- data and holes at odd offsets ------------------------------------------------------------ */

static void check_back(const char *src, const char *back)
{
	CU_ASSERT_EQUAL(local_size(back), local_size(src));
	CU_ASSERT(same_bytes(src, back));
	if (!same_bytes(src, back))
		fprintf(stderr, "\n  %s differs from %s\n", back, src);
	unlink(back);
}

static void test_odd_holes(void)
{
	NEED_LAB();
	/* data ranges and holes of sizes that fit no block: a hole first, one at the end */
	static const struct {
		uint64_t off;
		size_t len;
	} data[] = {
		{ 5000, 3001 },
		{ MIB + 777, 2 * MIB + 1 },
		{ 3 * MIB + 70000, 1 },
		{ 9 * MIB - 3, 5 },
		{ 12 * MIB + 4095, 129 * 1024 + 7 },
		{ 19 * MIB + 12345, 8 * MIB + 99 },
	};
	const uint64_t size = 30 * MIB + 1234;
	char src[500], back[500], u[200], u2[200];
	uint64_t before, after;

	snprintf(src, sizeof(src), "%s/odd", cl.tmp);
	sparse_file(src, size);
	for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++)
		write_at(src, data[i].off, data[i].len, 40 + i);
	snprintf(u, sizeof(u), "%s/odd", cl.url);
	snprintf(u2, sizeof(u2), "%s/odd2", cl.url);
	snprintf(back, sizeof(back), "%s/odd.back", cl.tmp);
	before = pool_used();
	RUN_OK("%s cp '%s' %s", cl.devs, src, u);
	after = pool_used();
	CU_ASSERT_EQUAL(remote_size(u), size);
	/* about the data (11 MiB), not the file */
	CU_ASSERT(after >= before && after - before < 16 * MIB);
	/* back through layouts, through the MDS (all-zero blocks found), server to server */
	RUN_OK("%s cp %s '%s'", cl.devs, u, back);
	CU_ASSERT(local_alloc(back) < 16 * MIB);
	check_back(src, back);
	RUN_OK("--mds-io cp %s '%s'", u, back);
	CU_ASSERT(local_alloc(back) < 16 * MIB);
	check_back(src, back);
	RUN_OK("%s cp %s %s", cl.devs, u, u2);
	CU_ASSERT_EQUAL(remote_size(u2), size);
	RUN_OK("%s get %s '%s'", cl.devs, u2, back);
	check_back(src, back);
	RUN_OK("rm %s", u2);
	/* written through the MDS, and with every byte */
	RUN_OK("--mds-io cp '%s' %s", src, u2);
	CU_ASSERT_EQUAL(remote_size(u2), size);
	RUN_OK("%s get %s '%s'", cl.devs, u2, back);
	check_back(src, back);
	RUN_OK("rm %s", u2);
	RUN_OK("%s --sparse=never cp '%s' %s", cl.devs, src, u2);
	RUN_OK("%s --sparse=always get %s '%s'", cl.devs, u2, back);
	check_back(src, back);
	/* a source read in turn (no SEEK_DATA on a pipe): copied whole, equal */
	RUN_OK("rm %s", u2);
	CU_ASSERT_EQUAL(test_run(NULL, "cat '%s' | '%s' -q %s cp - %s", src, test_bin("pnfs"), cl.devs, u2), 0);
	CU_ASSERT_EQUAL(remote_size(u2), size);
	RUN_OK("%s get %s '%s'", cl.devs, u2, back);
	check_back(src, back);
	RUN_OK("rm %s %s", u, u2);
	unlink(src);
}

/* Copies out into regular files of sizes and shapes a change to how the destination is written could
 * get wrong: a size that ends inside a block, a destination written in place over a longer file (cut
 * to the copy's size, not left at either length), every byte written (--sparse=never), and data then a
 * hole to the end (the size the source's, the hole still a hole) all come back equal. */
static void test_out_shapes(void)
{
	NEED_LAB();
	const uint64_t size = 9 * MIB + 4097, sparse = 24 * MIB + 3;
	char src[500], back[500], u[200];

	snprintf(src, sizeof(src), "%s/tail", cl.tmp);
	snprintf(back, sizeof(back), "%s/tail.back", cl.tmp);
	snprintf(u, sizeof(u), "%s/tail", cl.url);
	write_at(src, 0, (size_t)size, 77);
	RUN_OK("%s cp '%s' %s", cl.devs, src, u);
	RUN_OK("%s cp %s '%s'", cl.devs, u, back);
	check_back(src, back);
	/* in place over a longer file of other bytes */
	write_at(back, 0, (size_t)(size + 3 * MIB), 78);
	RUN_OK("%s --inplace cp %s '%s'", cl.devs, u, back);
	check_back(src, back);
	/* --sparse=never: the same bytes, every one read and written */
	RUN_OK("%s --sparse=never cp %s '%s'", cl.devs, u, back);
	check_back(src, back);
	RUN_OK("rm %s", u);
	/* data, then a hole to the end: the copy's size is the source's, its tail not allocated */
	unlink(src);
	sparse_file(src, sparse);
	write_at(src, 0, (size_t)(2 * MIB + 5), 79);
	RUN_OK("%s cp '%s' %s", cl.devs, src, u);
	RUN_OK("%s cp %s '%s'", cl.devs, u, back);
	CU_ASSERT(local_alloc(back) < 8 * MIB);
	check_back(src, back);
	RUN_OK("rm %s", u);
	unlink(src);
}

TEST_SUITE(client_sparse, "integration/client_sparse", suite_init, suite_clean,
	   { "out_shapes", test_out_shapes },
	   { "big_sparse_file", test_big_sparse_file },
	   { "never_and_always", test_never_and_always },
	   { "odd_holes", test_odd_holes });
