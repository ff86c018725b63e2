/* The pnfs-mds program itself: --help, usage errors, config-file errors naming file, line, key
 * and value (exit 2), daemon mode reporting start-up success or failure through its exit status
 * with a pid file, SIGHUP re-reading the export rules, and SIGTERM stopping cleanly. */
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int run_mds(char **out, const char *args)
{
	return test_run(out, "'%s' %s 2>&1", test_bin("pnfs-mds"), args);
}

static void test_usage_and_config_errors(void)
{
	const char *dir = test_tmpdir("mds-cli");
	char path[400], args[600], *out = NULL;

	CU_ASSERT_EQUAL(run_mds(&out, "--help"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--pool DIR"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--lease-time"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "export"));
	free(out);
	CU_ASSERT_EQUAL(run_mds(&out, "--no-such-flag"), 2);
	free(out);
	CU_ASSERT_EQUAL(run_mds(&out, "--foreground"), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "pool"));
	free(out);
	CU_ASSERT_EQUAL(run_mds(&out, "--pool /x --port 0"), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "port"));
	free(out);
	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	test_write_text(path, "# pnfs-mds\npool = /srv/pool\n\nlease-time = forever\n");
	snprintf(args, sizeof(args), "--config '%s'", path);
	CU_ASSERT_EQUAL(run_mds(&out, args), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad.conf:4:"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "forever"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "lease-time"));
	free(out);
	test_write_text(path, "pool = /srv/pool\nexprot = * rw\n");
	CU_ASSERT_EQUAL(run_mds(&out, args), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad.conf:2:"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "exprot"));
	free(out);
	/* A pool directory with no pool: a failure (1), not a usage error. */
	snprintf(args, sizeof(args), "--foreground --pool '%s' --port %d", dir, test_free_port());
	CU_ASSERT_EQUAL(run_mds(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, dir));
	free(out);
}

/* Lines of the log file that contain what. */
static int log_lines(const char *logf, const char *what)
{
	char *out = NULL;
	int n;

	(void)test_run(&out, "grep -cF '%s' '%s'", what, logf);
	n = out ? atoi(out) : 0;
	free(out);
	return n;
}

static void test_daemon_mode_pid_file_and_reload(void)
{
	struct test_lab *lab = lab_up(1, "16M", NULL);
	struct test_mds *m;
	char conf[400], pidf[400], logf[400], args[1500], *out = NULL;
	int port = test_free_port(), pid;
	struct nc *c;
	struct nc_fh root;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	m = tmds_new(lab, "--concat", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	snprintf(conf, sizeof(conf), "%s/mds.conf", m->dir);
	snprintf(pidf, sizeof(pidf), "%s/mds.pid", m->dir);
	snprintf(logf, sizeof(logf), "%s/daemon.log", m->dir);
	test_write_text(conf, "export = 127.0.0.1 rw,no_root_squash\n");
	snprintf(args, sizeof(args), "--config '%s' --pool '%s' --listen 127.0.0.1 --port %d --pid-file '%s' --log-file '%s'",
		 conf, m->pool, port, pidf, logf);
	/* Daemon mode: the command returns 0 once the server is up. */
	CU_ASSERT_EQUAL_FATAL(run_mds(&out, args), 0);
	free(out);
	pid = test_pid_from_file(pidf);
	CU_ASSERT_FATAL(pid > 0);
	m->pid = pid; /* the harness cleanup kills it if this test fails */
	c = nc_connect(port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "daemon-client"), 0);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, "before-reload", 0755, NULL), 0);
	/* SIGHUP with a read-only rule in the file: the next change is refused. */
	test_write_text(conf, "export = 127.0.0.1 ro\n");
	CU_ASSERT_EQUAL(kill(pid, SIGHUP), 0);
	TW_WAIT_UNTIL(log_lines(logf, "SIGHUP: 1 export rule(s) loaded") == 1, 10 * 1000, 20);
	CU_ASSERT_EQUAL(log_lines(logf, "SIGHUP: 1 export rule(s) loaded"), 1);
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, "after-reload", 0755, NULL), NFS4ERR_ROFS);
	/* A broken file on SIGHUP keeps the rules that are in force. */
	test_write_text(conf, "export = 127.0.0.1 rw,no_root_squash\nexport = bogus\n");
	CU_ASSERT_EQUAL(kill(pid, SIGHUP), 0);
	TW_WAIT_UNTIL(log_lines(logf, "SIGHUP: exports not reloaded") == 1, 10 * 1000, 20);
	CU_ASSERT_EQUAL(log_lines(logf, "SIGHUP: exports not reloaded"), 1);
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, "after-bad-reload", 0755, NULL), NFS4ERR_ROFS);
	nc_free(c);
	/* SIGTERM: a clean exit that removes the pid file. */
	CU_ASSERT_EQUAL(kill(pid, SIGTERM), 0);
	TW_WAIT_UNTIL(kill(pid, 0) != 0, 5 * 1000, 10);
	CU_ASSERT_NOT_EQUAL(kill(pid, 0), 0);
	m->pid = 0;
	CU_ASSERT_EQUAL(access(pidf, F_OK), -1);
	out = NULL;
	test_run(&out, "cat '%s'", logf);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "SIGHUP: 1 export rule(s) loaded"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "exports not reloaded"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "stopped"));
	free(out);
	/* Daemon mode with a LUN gone: the command fails (1) and says which LUN. */
	test_write_text(conf, "export = 127.0.0.1 rw,no_root_squash\n");
	lab_down(lab);
	{
		int rc = run_mds(&out, args);
		if (rc != 1)
			fprintf(stderr, "\n  daemon with a LUN gone: exit %d: %s\n", rc, out);
		CU_ASSERT_EQUAL(rc, 1);
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "LUN 0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "iscsi://"));
	free(out);
	tmds_free(m);
}

TEST_SUITE(mds_daemon, "integration/mds-daemon", NULL, NULL,
	   { "usage_and_config_errors", test_usage_and_config_errors },
	   { "daemon_mode_pid_file_and_reload", test_daemon_mode_pid_file_and_reload });
