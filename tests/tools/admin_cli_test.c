/* pnfs-admin as users meet it: help and usage errors with exit 2, failures with exit 1 and a
 * message naming the object, and format/status/check on regular-file LUNs (no lab needed); a
 * relative LUN path stored absolute; a failed format leaves nothing it made behind. */
#include "tests/harness.h"
#include "tests/tools/cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int admin(char **out, const char *args)
{
	return cli_run(out, NULL, "pnfs-admin", "%s", args);
}

static void test_help_and_usage(void)
{
	struct {
		const char *args;
		int status;
		const char *says;
	} cases[] = {
		{ "", 2, "Usage: pnfs-admin COMMAND" },
		{ "--help", 0, "Commands:" },
		{ "help", 0, "Commands:" },
		{ "format --help", 0, "Usage: pnfs-admin format" },
		{ "status -h", 0, "Usage: pnfs-admin status" },
		{ "check --help", 0, "Usage: pnfs-admin check" },
		{ "frobnicate", 2, "unknown command 'frobnicate'" },
		{ "status", 2, "--pool DIR is required" },
		{ "format --pool /tmp/x", 2, "no LUN-URL given" },
		{ "format --pool /tmp/x --stripe-unit banana a", 2, "bad --stripe-unit 'banana'" },
		{ "format --pool /tmp/x --concat --stripe-unit 1M a", 2, "exclude each other" },
		{ "status --pool /tmp/x --force", 2, "does not apply here" },
		{ "status --pool /tmp/x --bogus", 2, "unknown option" },
		{ "check --pool /tmp/x extra", 2, "unexpected argument 'extra'" },
		{ "status --pool /nonexistent-pool-dir", 1, "holds no pool" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cli_expect(cases[i].status, cases[i].says, NULL, "pnfs-admin", "%s", cases[i].args);
}

static void make_file(const char *path, off_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, size) == 0);
	close(fd);
}

static void test_format_status_check_on_files(void)
{
	const char *d = test_tmpdir("admin-cli");
	char a[512], b[512], args[2048], *out = NULL;

	snprintf(a, sizeof(a), "%s/a.img", d);
	snprintf(b, sizeof(b), "%s/b.img", d);
	make_file(a, 16 << 20);
	make_file(b, 16 << 20);
	snprintf(args, sizeof(args), "format --pool %s/pool --stripe-unit 64K %s %s", d, a, b);
	cli_expect(0, "formatted in", NULL, "pnfs-admin", "%s", args);
	snprintf(args, sizeof(args), "status --pool %s/pool", d);
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "stripe of 2 LUNs, unit 64.0 KiB"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "30.0 MiB (31457280 bytes)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, a));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "free 30.0 MiB, used 0 B, pending 0 B"));
	free(out);
	snprintf(args, sizeof(args), "status --pool %s/pool --json", d);
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"type\":\"stripe\",\"stripe_unit_bytes\":65536"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"free_bytes\":31457280"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"luns_ok\":true"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"files\":1"));
	free(out);
	snprintf(args, sizeof(args), "check --pool %s/pool", d);
	cli_expect(0, "consistent", NULL, "pnfs-admin", "%s", args);

	/* check notices a missing volume.xdr (status does not need it). */
	snprintf(args, sizeof(args), "%s/pool/volume.xdr", d);
	CU_ASSERT_EQUAL(unlink(args), 0);
	snprintf(args, sizeof(args), "check --pool %s/pool", d);
	cli_expect(1, "volume.xdr: No such file", NULL, "pnfs-admin", "%s", args);
	snprintf(args, sizeof(args), "status --pool %s/pool", d);
	cli_expect(0, NULL, NULL, "pnfs-admin", "%s", args);

	/* The same LUNs again without --force: refused, naming the first labelled one. */
	snprintf(args, sizeof(args), "format --pool %s/pool2 %s", d, b);
	CU_ASSERT_EQUAL(admin(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, b));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "already carries a pool label"));
	free(out);
	/* A damaged label: status and check exit 1 and say which LUN. */
	{
		int fd = open(b, O_RDWR);
		char z = 'X';
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT(pwrite(fd, &z, 1, 60) == 1);
		close(fd);
	}
	snprintf(args, sizeof(args), "status --pool %s/pool", d);
	cli_expect(1, "bad-label", NULL, "pnfs-admin", "%s", args);
	snprintf(args, sizeof(args), "check --pool %s/pool --json", d);
	CU_ASSERT_EQUAL(admin(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"state\":\"bad-label\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"ok\":false"));
	free(out);
	/* A concat pool on the first one alone, with --force. */
	snprintf(args, sizeof(args), "format --pool %s/pool3 --concat --block-size 8K --force %s", d, a);
	cli_expect(0, NULL, NULL, "pnfs-admin", "%s", args);
	snprintf(args, sizeof(args), "status --pool %s/pool3", d);
	cli_expect(0, "concat of 1 LUNs, block 8192 B", NULL, "pnfs-admin", "%s", args);
}

/* A LUN named relative to the current directory is stored absolute: the MDS, started anywhere,
 * opens it, and status from another directory finds it. */
static void test_format_relative_path(void)
{
	const char *d = test_tmpdir("admin-rel");
	char a[512], conf[600], *out = NULL;

	snprintf(a, sizeof(a), "%s/rel.img", d);
	make_file(a, 16 << 20);
	CU_ASSERT_EQUAL(test_run(&out, "cd '%s' && '%s' format --pool pool ./rel.img 2>&1", d, test_bin("pnfs-admin")), 0);
	free(out);
	snprintf(conf, sizeof(conf), "grep -qx 'lun 0 %s' '%s/pool/pool.conf'", a, d);
	CU_ASSERT_EQUAL(test_run(NULL, "%s", conf), 0);
	CU_ASSERT_EQUAL(test_run(&out, "cd / && '%s' status --pool '%s/pool' 2>&1", test_bin("pnfs-admin"), d), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, a));
	free(out);
	/* an absolute name stays as given (no symlink resolved) */
	snprintf(conf, sizeof(conf), "%s/link.img", d);
	CU_ASSERT_EQUAL(symlink(a, conf), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' format --force --pool '%s/pool2' '%s' >/dev/null 2>&1", test_bin("pnfs-admin"),
				 d, conf), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "grep -qx 'lun 0 %s' '%s/pool2/pool.conf'", conf, d), 0);
}

/* A format that fails removes the pool directory it made (and leaves one that was there, empty as
 * it was, with what else it held). */
static void test_format_failure_cleans_up(void)
{
	const char *d = test_tmpdir("admin-undo");
	char a[512], small[512], args[2048], p[600], *out = NULL;
	struct stat sb;

	snprintf(a, sizeof(a), "%s/a.img", d);
	snprintf(small, sizeof(small), "%s/small.img", d);
	make_file(a, 16 << 20);
	make_file(small, 4096);
	/* a LUN that does not open */
	snprintf(args, sizeof(args), "format --pool %s/new %s %s/missing.img", d, a, d);
	CU_ASSERT_EQUAL(admin(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "missing.img"));
	free(out);
	snprintf(p, sizeof(p), "%s/new", d);
	CU_ASSERT_NOT_EQUAL(stat(p, &sb), 0);
	/* a LUN too small for a label and data */
	snprintf(args, sizeof(args), "format --pool %s/new2 %s", d, small);
	cli_expect(1, NULL, NULL, "pnfs-admin", "%s", args);
	snprintf(p, sizeof(p), "%s/new2", d);
	CU_ASSERT_NOT_EQUAL(stat(p, &sb), 0);
	/* a directory that was there stays, with its own file, and gets no pool file */
	snprintf(p, sizeof(p), "%s/old", d);
	CU_ASSERT_EQUAL_FATAL(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/old/keep", d);
	make_file(p, 1);
	snprintf(args, sizeof(args), "format --pool %s/old %s/missing.img", d, d);
	cli_expect(1, NULL, NULL, "pnfs-admin", "%s", args);
	CU_ASSERT_EQUAL(stat(p, &sb), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "test \"$(ls -A '%s/old')\" = keep", d), 0);
}

TEST_SUITE(admin_cli, "tools/admin_cli", NULL, NULL,
	   { "help_and_usage", test_help_and_usage },
	   { "format_status_check_on_files", test_format_status_check_on_files },
	   { "format_relative_path", test_format_relative_path },
	   { "format_failure_cleans_up", test_format_failure_cleans_up });
