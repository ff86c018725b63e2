/* pnfs-admin as users meet it: help and usage errors with exit 2, failures with exit 1 and a
 * message naming the object, and format/status/check on regular-file LUNs (no lab needed). */
#include "tests/harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int admin(char **out, const char *args)
{
	return test_run(out, "%s %s 2>&1", test_bin("pnfs-admin"), args);
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

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL;
		int st = admin(&out, cases[i].args);
		CU_ASSERT_EQUAL(st, cases[i].status);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].says));
		if (st != cases[i].status || !strstr(out, cases[i].says))
			fprintf(stderr, "pnfs-admin %s: exit %d, output:\n%s\n", cases[i].args, st, out);
		free(out);
	}
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
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "formatted in"));
	free(out);
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
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "consistent"));
	free(out);

	/* check notices a missing volume.xdr (status does not need it). */
	snprintf(args, sizeof(args), "%s/pool/volume.xdr", d);
	CU_ASSERT_EQUAL(unlink(args), 0);
	snprintf(args, sizeof(args), "check --pool %s/pool", d);
	CU_ASSERT_EQUAL(admin(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "volume.xdr: No such file"));
	free(out);
	snprintf(args, sizeof(args), "status --pool %s/pool", d);
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	free(out);

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
	CU_ASSERT_EQUAL(admin(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad-label"));
	free(out);
	snprintf(args, sizeof(args), "check --pool %s/pool --json", d);
	CU_ASSERT_EQUAL(admin(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"state\":\"bad-label\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"ok\":false"));
	free(out);
	/* A concat pool on the first one alone, with --force. */
	snprintf(args, sizeof(args), "format --pool %s/pool3 --concat --block-size 8K --force %s", d, a);
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	free(out);
	snprintf(args, sizeof(args), "status --pool %s/pool3", d);
	CU_ASSERT_EQUAL(admin(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "concat of 1 LUNs, block 8192 B"));
	free(out);
}

TEST_SUITE(admin_cli, "tools/admin_cli", NULL, NULL,
	   { "help_and_usage", test_help_and_usage },
	   { "format_status_check_on_files", test_format_status_check_on_files });
