/* One exit-status convention for every program: 0 ok, 1 failure, 2 usage error (bad options,
 * arguments, URLs, settings). A table of commands users type, each with the status it must end with
 * and a word its output must say; then the cases that need a real lab: pnfs-admin status with a LUN
 * whose target is gone, san-lab status for a running and a dead lab. */
#include "tests/harness.h"
#include "tests/lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct exit_case {
	const char *prog, *args;
	int status;
	const char *says;
};

static int check(const char *prog, const char *args, int want, const char *says)
{
	char *out = NULL;
	int st = test_run(&out, "'%s' %s 2>&1", test_bin(prog), args);
	int ok = st == want && out && strstr(out, says);

	CU_ASSERT_EQUAL(st, want);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, says));
	if (!ok)
		fprintf(stderr, "\n  %s %s: exit %d (wanted %d), wanted \"%s\", said:\n%s", prog, args, st, want, says,
			out ? out : "");
	free(out);
	return st;
}

static void test_table(void)
{
	const char *d = test_tmpdir("exit-codes");
	char nolab[400], noport[64], args[8][600];
	int port = test_free_port();

	snprintf(nolab, sizeof(nolab), "--dir '%s/no-lab'", d);
	snprintf(noport, sizeof(noport), "pnfs://127.0.0.1:%d/", port);
	snprintf(args[0], sizeof(args[0]), "status %s", nolab);
	snprintf(args[1], sizeof(args[1]), "urls %s", nolab);
	snprintf(args[2], sizeof(args[2]), "-q --io-timeout 0.3 ls %s", noport);
	snprintf(args[3], sizeof(args[3]), "--timeout 1 %s/f", noport);
	{
		const struct exit_case cases[] = {
			/* pnfs */
			{ "pnfs", "--help", 0, "Exit status: 0 success, 1 failure, 2 usage error" },
			{ "pnfs", "", 2, "no command given" },
			{ "pnfs", "frobnicate", 2, "unknown command" },
			{ "pnfs", "--bogus ls pnfs://h/", 2, "Try 'pnfs --help'" },
			{ "pnfs", "ls http://h/x", 2, "expected a pnfs:// URL" },
			{ "pnfs", "ls pnfs://bad%host/", 2, "not a valid pnfs://host[:port]/path URL" },
			{ "pnfs", "ls pnfs://h:0/", 2, "not a valid" },
			{ "pnfs", "cp pnfs://h:99999/a /tmp/x", 2, "not a valid" },
			{ "pnfs", "cat pnfs://ok/a pnfs://[::1/b", 2, "not a valid" },
			{ "pnfs", "--io-timeout 0 ls pnfs://h/", 2, "--io-timeout takes seconds" },
			{ "pnfs", args[2], 1, "127.0.0.1" },
			/* blkmap */
			{ "blkmap", "--help", 0, "Exit status: 0 ok, 1 failure, 2 usage error" },
			{ "blkmap", "", 2, "usage: blkmap" },
			{ "blkmap", "frobnicate", 2, "unknown command" },
			{ "blkmap", "show --xdr /nonexistent/dev.xdr", 1, "/nonexistent/dev.xdr" },
			{ "blkmap", "show --xdr x --timeout 30000", 2, "takes seconds" },
			{ "blkmap", "show --xdr x --timeout 1.5x", 2, "takes seconds" },
			{ "blkmap", "show --xdr x --register-key nothex", 2, "--register-key" },
			/* pnfs-admin */
			{ "pnfs-admin", "--help", 0, "Exit status: 0 ok, 1 failure, 2 usage error" },
			{ "pnfs-admin", "", 2, "Usage" },
			{ "pnfs-admin", "frobnicate", 2, "unknown command" },
			{ "pnfs-admin", "status --pool /nonexistent-pool", 1, "holds no pool" },
			{ "pnfs-admin", "status --pool /x --timeout 0", 2, "bad --timeout" },
			/* pnfs-extents */
			{ "pnfs-extents", "--help", 0, "Exit status" },
			{ "pnfs-extents", "", 2, "give a pnfs:// URL or --pool DIR" },
			{ "pnfs-extents", "pnfs://bad%host/f", 2, "not a valid" },
			{ "pnfs-extents", "--pool /nonexistent-pool --file-id 2 --offline", 1, "holds no pool" },
			{ "pnfs-extents", args[3], 1, "127.0.0.1" },
			/* san-lab: status and urls agree about a lab that is not there */
			{ "san-lab", "--help", 0, "Exit status" },
			{ "san-lab", "frobnicate", 2, "unknown command" },
			{ "san-lab", args[0], 1, "no lab in" },
			{ "san-lab", args[1], 1, "no lab in" },
			{ "san-lab", "up --luns 0", 2, "--luns" },
			/* pnfs-mds */
			{ "pnfs-mds", "--help", 0, "Exit status: 0 stopped cleanly, 1 failed" },
			{ "pnfs-mds", "--bogus", 2, "bogus" },
		};
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			check(cases[i].prog, cases[i].args, cases[i].status, cases[i].says);
	}
	/* a failed up removes the directories it made, parents too, and nothing else */
	snprintf(args[4], sizeof(args[4]), "up --dir '%s/made/a/b' --luns 1 --size 9000T --port %d", d, test_free_port());
	check("san-lab", args[4], 1, "could not create LUN file");
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "test -e '%s/made'", d), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "test -d '%s'", d), 0);
}

/* pnfs-admin status of a pool whose LUN's target died: exit 1, the LUN said to be unreachable; the
 * dead lab's san-lab status says so with 1, a running one 0. */
static void test_lab_cases(void)
{
	struct test_lab *lab = lab_up(1, "16M", NULL);
	const char *d = test_tmpdir("exit-codes-lab");
	char args[1200];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	snprintf(args, sizeof(args), "format --pool '%s/pool' '%s'", d, lab->urls[0]);
	check("pnfs-admin", args, 0, "formatted in");
	snprintf(args, sizeof(args), "status --pool '%s/pool' --timeout 2", d);
	check("pnfs-admin", args, 0, "ok");
	snprintf(args, sizeof(args), "status --dir '%s'", lab->dir);
	check("san-lab", args, 0, "running");
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(lab), 0);
	snprintf(args, sizeof(args), "status --pool '%s/pool' --timeout 2", d);
	check("pnfs-admin", args, 1, "unreachable");
	snprintf(args, sizeof(args), "status --pool '%s/pool' --timeout 2 --json", d);
	check("pnfs-admin", args, 1, "\"luns_ok\":false");
	snprintf(args, sizeof(args), "check --pool '%s/pool' --timeout 2", d);
	check("pnfs-admin", args, 1, "unreachable");
	snprintf(args, sizeof(args), "status --dir '%s'", lab->dir);
	check("san-lab", args, 1, "not running");
	lab_down(lab);
}

TEST_SUITE(exit_codes, "integration/exit_codes", NULL, NULL, { "table", test_table }, { "lab_cases", test_lab_cases });
