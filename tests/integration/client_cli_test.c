/* The pnfs command's failures, as a user meets them: every error path reachable from the command
 * line (bad URLs and usage, files missing here or on the server, refused and lost connections,
 * a server that dies mid-copy, permissions, ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, a full pool,
 * a pool whose LUNs are gone) ends with exit status 1 (2 for usage and malformed URLs), and every line it writes to
 * standard error gives a reason: text after its last ": ", the way grep -v ': $' would check it.
 * Each case names what its line must say too. Real pnfs-mds on a real tgtd lab; no mocks. */
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/lab_cli.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)

LAB_CLI_SUITE(2, "64M", "iqn.2024-01.test.pnfs:cli-a", "pnfs-cli")

/* The first line of text that is not an error line with a reason ("" if all are): each line but
 * the usage hint must have a non-blank text after its last ": ". */
static const char *line_without_reason(const char *text, char *line, size_t len)
{
	const char *p = text;

	while (*p) {
		const char *e = strchr(p, '\n'), *last = NULL, *q;
		size_t n = e ? (size_t)(e - p) : strlen(p);
		int blank = 1;

		snprintf(line, len, "%.*s", (int)n, p);
		p += n + (e ? 1 : 0);
		if (!line[0] || strcmp(line, "Try 'pnfs --help'.") == 0)
			continue;
		for (q = strstr(line, ": "); q; q = strstr(q + 1, ": "))
			last = q;
		for (q = last ? last + 2 : ""; *q; q++)
			if (*q != ' ' && *q != '\t' && *q != '\r')
				blank = 0;
		if (!last || blank)
			return line;
	}
	line[0] = 0;
	return line;
}

/* Run "pnfs -q ARGS" (as the unprivileged user nobody, AUTH_SYS uid 65534, when nobody is set) with
 * its standard error kept: it must exit with want, write lines to stderr (at least one, when run as
 * root), each with a reason, one of them containing expect. Returns the exit status. */
static int check_case(int nobody, int want, const char *expect, const char *args)
{
	char *err = NULL, line[2048];
	int rc, quiet;

	rc = test_run(&err, "%s'%s' -q %s 2>&1 >/dev/null", nobody ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "",
		      test_bin("pnfs"), args);
	if (!err)
		err = strdup("");
	quiet = !nobody && !err[0];
	CU_ASSERT_EQUAL(rc, want);
	CU_ASSERT(!quiet);
	CU_ASSERT_STRING_EQUAL(line_without_reason(err, line, sizeof(line)), "");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, expect));
	if (rc != want || quiet || line[0] || !strstr(err, expect))
		fprintf(stderr, "\n  %spnfs %s\n    exit %d (wanted %d), wanted \"%s\", said:\n%s", nobody ? "(as nobody) " : "",
			args, rc, want, expect, err);
	free(err);
	return rc;
}

static int run_case(int want, const char *expect, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run_case(int want, const char *expect, const char *fmt, ...)
{
	char args[8192];

	TEST_VFORMAT(args, fmt);
	return check_case(0, want, expect, args);
}

static int run_as_nobody(int want, const char *expect, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run_as_nobody(int want, const char *expect, const char *fmt, ...)
{
	char args[8192];

	TEST_VFORMAT(args, fmt);
	return check_case(1, want, expect, args);
}

/* A command that must work (setting the stage for a failure). */
static void run_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_ok(const char *fmt, ...)
{
	char args[8192];
	int rc;

	TEST_VFORMAT(args, fmt);
	rc = test_run(NULL, "'%s' -q %s >/dev/null", test_bin("pnfs"), args);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc != 0)
		fprintf(stderr, "\n  pnfs %s: exit %d\n", args, rc);
}

#define local_file(name, len, seed, path, pathlen) lab_cli_local_file(&cl, name, len, seed, path, pathlen)

/* ---- usage and URLs ---------------------------------------------------------------------------- */

static void test_usage_and_urls(void)
{
	NEED_LAB();
	run_case(2, "unknown command 'frobnicate'", "frobnicate");
	run_case(2, "no command given", "%s", "");
	run_case(2, "cp: needs SRC and DST", "cp onlyone");
	run_case(2, "one of SRC and DST must be a pnfs:// URL", "cp /etc/hostname /tmp/x");
	run_case(2, "ls: needs one URL", "ls");
	run_case(2, "not-a-url: expected a pnfs:// URL", "ls not-a-url");
	run_case(2, "put: needs LOCAL and a pnfs:// URL", "put %s/a %s/b", cl.url, cl.url);
	run_case(2, "get: needs a pnfs:// URL and LOCAL", "get /etc/hostname /tmp/x");
	run_case(2, "mv: needs two URLs", "mv %s/a", cl.url);
	run_case(2, "--io-timeout takes seconds", "--io-timeout 0 ls %s/", cl.url);
	run_case(2, "--io-timeout takes seconds", "ls %s/ --io-timeout 2x", cl.url);
	run_case(2, "unrecognized option '--frob'", "--frob ls %s/", cl.url);
	/* a malformed URL is a usage error too, found before anything runs (the good one is not touched) */
	run_case(2, "pnfs://: not a valid pnfs://host[:port]/path URL", "ls pnfs://");
	run_case(2, "not a valid pnfs://host[:port]/path URL", "stat pnfs://127.0.0.1:99999/x");
	run_case(2, "not a valid pnfs://host[:port]/path URL", "rm pnfs://127.0.0.1:12ab/x");
	run_case(2, "not a valid pnfs://host[:port]/path URL", "cp /etc/hostname pnfs://[::1/x");
	run_case(2, "not a valid pnfs://host[:port]/path URL", "rm %s/ns-untouched pnfs://h:0/x", cl.url);
}

/* ---- reaching the server ----------------------------------------------------------------------- */

static void test_connection_errors(void)
{
	NEED_LAB();
	char expect[200], src[500];
	int port = test_free_port();
	struct ct_proxy *px;

	local_file("conn.src", 100000, 1, src, sizeof(src));
	/* nobody listening: tried for the timeout, then the reason */
	snprintf(expect, sizeof(expect), "pnfs: 127.0.0.1:%d: cannot connect for 1 s: Connection refused", port);
	run_case(1, expect, "--io-timeout 1 ls pnfs://127.0.0.1:%d/", port);
	run_case(1, expect, "--io-timeout 1 cp '%s' pnfs://127.0.0.1:%d/x", src, port);
	run_case(1, expect, "--io-timeout 1 get pnfs://127.0.0.1:%d/x '%s/never'", port, cl.tmp);
	run_case(1, expect, "--io-timeout 1 stat pnfs://127.0.0.1:%d/x pnfs://127.0.0.1:%d/y", port, port);
	/* a host name that does not resolve: said at once */
	run_case(1, "no-such-host.invalid:2049: ", "--io-timeout 1 ls pnfs://no-such-host.invalid/");
	/* a server that takes the connection and drops it at once (a relay to nothing) */
	px = ct_proxy_start(test_free_port());
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	/* (closed or reset, as the relay's close races the client's first request) */
	snprintf(expect, sizeof(expect), "127.0.0.1:%d: cannot connect for 1 s: ", ct_proxy_port(px));
	run_case(1, expect, "--io-timeout 1 df pnfs://127.0.0.1:%d/", ct_proxy_port(px));
	ct_proxy_stop(px);
	/* a server that takes the connection and never answers */
	px = ct_proxy_start(cl.mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	ct_proxy_drop(px, CT_PROXY_BLACK_HOLE);
	snprintf(expect, sizeof(expect), "127.0.0.1:%d: cannot connect for 1 s: no answer to EXCHANGE_ID yet",
		 ct_proxy_port(px));
	run_case(1, expect, "--io-timeout 1 mkdir pnfs://127.0.0.1:%d/never", ct_proxy_port(px));
	ct_proxy_stop(px);
	unlink(src);
}

/* pnfs-mds goes away in the middle of a copy (its relay closes every connection and stops
 * listening) and does not come back: the copy fails after the timeout, naming the server and why. */
static void test_server_dies_mid_copy(void)
{
	NEED_LAB();
	const size_t len = 48 * MIB;
	char src[500], expect[200], errf[500], errtxt[8192] = "", line[2048], dst[200];
	struct ct_proxy *px = ct_proxy_start(cl.mds->port);
	int status = -1;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	local_file("dies.src", len, 2, src, sizeof(src));
	snprintf(errf, sizeof(errf), "%s/dies.err", cl.tmp);
	snprintf(dst, sizeof(dst), "pnfs://127.0.0.1:%d/dies", ct_proxy_port(px));
	/* through the MDS, so that the relay's bytes say how far the copy got */
	pid = ct_cp_start("--mds-io --io-timeout 1", src, dst, errf);
	CU_ASSERT_FATAL(pid > 0);
	TW_WAIT_UNTIL(ct_proxy_bytes(px, 0) >= 8 * MIB, 10 * 1000, 5);
	CU_ASSERT(ct_proxy_bytes(px, 0) >= 8 * MIB);
	snprintf(expect, sizeof(expect), "127.0.0.1:%d: cannot connect for 1 s: ", ct_proxy_port(px));
	ct_proxy_stop(px);
	CU_ASSERT_EQUAL(ct_cp_wait(pid, 0, 60, &status, errf, errtxt, sizeof(errtxt)), 0);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(errtxt, expect));
	CU_ASSERT_STRING_EQUAL(line_without_reason(errtxt, line, sizeof(line)), "");
	if (!strstr(errtxt, expect) || line[0])
		fprintf(stderr, "\n  pnfs cp said:\n%s", errtxt);
	unlink(src);
	unlink(errf);
}

/* ---- the namespace ------------------------------------------------------------------------------ */

static void test_namespace_errors(void)
{
	NEED_LAB();
	char src[500], name[400];

	local_file("ns.src", 5000, 3, src, sizeof(src));
	run_ok("mkdir %s/ns", cl.url);
	run_ok("%s cp '%s' %s/ns/f", cl.devs, src, cl.url);
	run_ok("mkdir %s/ns/full", cl.url);
	run_ok("%s cp '%s' %s/ns/full/g", cl.devs, src, cl.url);
	/* ENOENT */
	run_case(1, "/ns/nothing: LOOKUP: NFS4ERR_NOENT (No such file or directory)", "stat %s/ns/nothing", cl.url);
	run_case(1, "NFS4ERR_NOENT (No such file or directory)", "stat %s/ns/f %s/ns/nothing", cl.url, cl.url);
	run_case(1, "NFS4ERR_NOENT", "ls %s/ns/nothing", cl.url);
	run_case(1, "NFS4ERR_NOENT", "ls -l %s/nothing/deeper", cl.url);
	run_case(1, "NFS4ERR_NOENT", "cat %s/ns/nothing", cl.url);
	run_case(1, "NFS4ERR_NOENT", "get %s/ns/nothing '%s/never'", cl.url, cl.tmp);
	run_case(1, "NFS4ERR_NOENT", "rm %s/ns/nothing", cl.url);
	run_case(1, "NFS4ERR_NOENT", "mv %s/ns/nothing %s/ns/other", cl.url, cl.url);
	run_case(1, "NFS4ERR_NOENT", "mkdir %s/ns/no/such", cl.url);
	run_case(1, "NFS4ERR_NOENT", "%s cp '%s' %s/ns/no/such", cl.devs, src, cl.url);
	run_case(1, "NFS4ERR_NOENT", "df %s/ns/nothing", cl.url);
	/* EEXIST */
	run_case(1, "NFS4ERR_EXIST (File exists)", "mkdir %s/ns/full", cl.url);
	run_case(1, "NFS4ERR_EXIST (File exists)", "mkdir %s/ns/f", cl.url);
	/* ENOTDIR */
	run_case(1, "NFS4ERR_NOTDIR (Not a directory)", "mkdir %s/ns/f/sub", cl.url);
	run_case(1, "NFS4ERR_NOTDIR (Not a directory)", "stat %s/ns/f/x", cl.url);
	run_case(1, "NFS4ERR_NOTDIR", "%s cp '%s' %s/ns/f/x", cl.devs, src, cl.url);
	run_case(1, "/ns/f/a/b: a path component is not a directory", "mkdir -p %s/ns/f/a/b", cl.url);
	/* EISDIR */
	run_case(1, "Is a directory", "cat %s/ns/full", cl.url);
	run_case(1, "Is a directory", "get %s/ns/full '%s/never'", cl.url, cl.tmp);
	/* ENOTEMPTY */
	run_case(1, "NFS4ERR_NOTEMPTY (Directory not empty)", "rm %s/ns/full", cl.url);
	/* a name too long */
	memset(name, 'n', 300);
	name[300] = 0;
	run_case(1, "File name too long", "mkdir %s/ns/%s", cl.url, name);
	/* two servers (two names of one) */
	run_case(1, "mv: both paths must be on one server", "mv %s/ns/f pnfs://localhost:%d/ns/g", cl.url, cl.mds->port);
	/* rm of several: the missing one said, the others done */
	run_ok("%s cp '%s' %s/ns/h", cl.devs, src, cl.url);
	run_case(1, "NFS4ERR_NOENT", "rm %s/ns/h %s/ns/nothing", cl.url, cl.url);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' -q stat %s/ns/h >/dev/null 2>&1", test_bin("pnfs"), cl.url), 1);
	/* a copy out that could not start made no local file */
	snprintf(name, sizeof(name), "%s/never", cl.tmp);
	CU_ASSERT_NOT_EQUAL(access(name, F_OK), 0);
	unlink(src);
}

/* A long path of many components (30 of 100 bytes; pjdfstest's PATH_MAX cases have 32 of 128) walks
 * in one compound, more LOOKUPs than the 24 a compound once had room for: mkdir -p, a copy in, stat
 * and rm work. */
static void test_deep_paths(void)
{
	NEED_LAB();
	char src[500], deep[4200], *out = NULL;
	size_t o = 0;
	int rc;

	local_file("deep.src", 3000, 5, src, sizeof(src));
	for (int i = 0; i < 30; i++) {
		o += (size_t)snprintf(deep + o, sizeof(deep) - o, "/%02d", i);
		memset(deep + o, 'd', 97);
		o += 97;
		deep[o] = 0;
	}
	run_ok("mkdir -p %s%s", cl.url, deep);
	run_ok("%s cp '%s' %s%s/f", cl.devs, src, cl.url, deep);
	rc = test_run(&out, "'%s' stat %s%s/f 2>&1", test_bin("pnfs"), cl.url, deep);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(out && strstr(out, "3000"));
	if (rc != 0)
		fprintf(stderr, "\n  pnfs stat of a deep path: %s\n", out ? out : "");
	free(out);
	run_ok("rm %s%s/f", cl.url, deep);
	run_ok("rm %s%s", cl.url, deep);
	unlink(src);
}

/* ---- local files ------------------------------------------------------------------------------ */

static void test_local_errors(void)
{
	NEED_LAB();
	char src[500], expect[600];

	local_file("local.src", 70000, 4, src, sizeof(src));
	run_ok("%s cp '%s' %s/local", cl.devs, src, cl.url);
	run_case(1, "/no/such/file: No such file or directory", "cp /no/such/file %s/x", cl.url);
	run_case(1, "/no/such/file: No such file or directory", "put /no/such/file %s/x", cl.url);
	snprintf(expect, sizeof(expect), "%s: is a directory", cl.tmp);
	run_case(1, expect, "cp '%s' %s/x", cl.tmp, cl.url);
	run_case(1, "/no/such/dir/x: No such file or directory", "%s get %s/local /no/such/dir/x", cl.devs, cl.url);
	run_case(1, "/dev/full: No space left on device", "%s get %s/local /dev/full", cl.devs, cl.url);
}

/* ---- permissions ------------------------------------------------------------------------------- */

static void test_permission_errors(void)
{
	NEED_LAB();
	char src[500], expect[600], locked[500];

	TEST_SKIP_IF(!test_is_root(), "needs root to run pnfs as another user");
	TEST_SKIP_IF(test_run(NULL, "setpriv --reuid=65534 --regid=65534 --clear-groups true") != 0,
		     "setpriv cannot switch to uid 65534");
	local_file("perm.src", 40000, 5, src, sizeof(src));
	run_ok("mkdir %s/perm", cl.url);
	run_ok("%s cp '%s' %s/perm/f", cl.devs, src, cl.url);
	/* the server's root and /perm are root's, 0755: nobody may read, not write */
	run_as_nobody(1, "NFS4ERR_ACCESS (Permission denied)", "mkdir %s/perm/d", cl.url);
	run_as_nobody(1, "NFS4ERR_ACCESS (Permission denied)", "%s cp '%s' %s/perm/g", cl.devs, src, cl.url);
	run_as_nobody(1, "NFS4ERR_ACCESS (Permission denied)", "rm %s/perm/f", cl.url);
	run_as_nobody(1, "NFS4ERR_ACCESS (Permission denied)", "mv %s/perm/f %s/perm/h", cl.url, cl.url);
	run_as_nobody(1, "Permission denied", "%s cp '%s' %s/perm/f", cl.devs, src, cl.url);
	/* a local file nobody may not read, a local directory nobody may not write */
	snprintf(locked, sizeof(locked), "%s/locked", cl.tmp);
	CU_ASSERT_EQUAL_FATAL(ct_write_file(locked, "x", 1), 0);
	chmod(locked, 0600);
	snprintf(expect, sizeof(expect), "%s: Permission denied", locked);
	run_as_nobody(1, expect, "cp '%s' %s/perm/x", locked, cl.url);
	snprintf(expect, sizeof(expect), "%s/x: Permission denied", "/root");
	run_as_nobody(1, expect, "%s get %s/perm/f /root/x", cl.devs, cl.url);
	unlink(locked);
	unlink(src);
}

/* ---- the pool -------------------------------------------------------------------------------- */

/* A copy bigger than the pool: the pool is full, said naming the file. */
static void test_pool_full(void)
{
	NEED_LAB();
	char src[500];

	snprintf(src, sizeof(src), "%s/big.src", cl.tmp);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "truncate -s 200M '%s' && chmod 644 '%s'", src, src), 0);
	/* all of it a hole: written whole it does not fit the 128 MiB pool */
	run_case(1, "No space left on device", "%s --sparse=never cp '%s' %s/big", cl.devs, src, cl.url);
	run_case(1, "No space left on device", "--mds-io --sparse=never cp '%s' %s/big2", src, cl.url);
	/* kept a hole, it takes nothing */
	run_ok("%s cp '%s' %s/big", cl.devs, src, cl.url);
	test_run(NULL, "'%s' -q rm %s/big %s/big2 >/dev/null 2>&1", test_bin("pnfs"), cl.url, cl.url);
	unlink(src);
}

/* A lab of its own (two 32 MiB RAM LUNs) and a pnfs-mds with mds_args on it, for a test that kills
 * the lab's target: u[100] gets the server's URL, opts[2048] the pnfs options copts and the LUNs'
 * --device options. Aborts the test when either does not start. */
static struct test_mds *gone_up(struct test_lab **gone, const char *mds_args, const char *copts, char *u, char *opts)
{
	struct lab_opts ram = { .ram = 1 };
	struct test_mds *m;
	int n;

	*gone = lab_up(2, "32M", &ram);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*gone);
	m = tmds_new(*gone, NULL, mds_args);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	snprintf(u, 100, "pnfs://127.0.0.1:%d", m->port);
	n = snprintf(opts, 2048, "%s", copts);
	for (int i = 0; i < (*gone)->nluns; i++)
		n += snprintf(opts + n, 2048 - (size_t)n, " --device '%s'", (*gone)->urls[i]);
	return m;
}

/* A pool whose LUNs are gone (the SAN's target died after the server started): the data has
 * nowhere to go, directly or through the MDS; the namespace still answers. */
static void test_luns_gone(void)
{
	NEED_LAB();
	struct test_lab *gone;
	struct test_mds *m;
	char src[500], u[100], opts[2048], reason[64];

	m = gone_up(&gone, "--lun-timeout 1", "--io-timeout 1 --initiator iqn.2024-01.test.pnfs:cli-b", u, opts);
	local_file("gone.src", 3 * MIB, 6, src, sizeof(src));
	run_ok("%s cp '%s' %s/was", opts, src, u);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(gone), 0);
	snprintf(reason, sizeof(reason), "%s", "Input/output error");
	run_case(1, reason, "%s cp '%s' %s/new", opts, src, u);
	run_case(1, reason, "%s --mds-io cp '%s' %s/new2", opts, src, u);
	run_case(1, reason, "%s cat %s/was", opts, u);
	run_case(1, reason, "--mds-io cat %s/was", u);
	tmds_free(m);
	lab_down(gone);
	unlink(src);
}

/* The LUNs gone for the MDS too, which waits on them for its default lun-timeout (30 s): the
 * client's SAN I/O times out after 2 s, the MDS path gets no answer either for twice that, and
 * the command fails on the client's own timeout with EIO, not on the server's much later one. */
static void test_luns_gone_mds_waits(void)
{
	NEED_LAB();
	struct test_lab *gone;
	struct test_mds *m;
	char src[500], u[100], opts[2048];
	const char *expect = "through the MDS: no answer for 4000 ms";

	m = gone_up(&gone, NULL, "--io-timeout 2 --initiator iqn.2024-01.test.pnfs:cli-c", u, opts);
	local_file("slow.src", 3 * MIB, 7, src, sizeof(src));
	run_ok("%s cp '%s' %s/was", opts, src, u);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(gone), 0);
	run_case(1, expect, "%s cat %s/was", opts, u);
	run_case(1, expect, "%s --mds-io cat %s/was", opts, u);
	run_case(1, expect, "%s --mds-io cp '%s' %s/new", opts, src, u);
	tmds_free(m);
	lab_down(gone);
	unlink(src);
}

TEST_SUITE(client_cli, "integration/client_cli", suite_init, suite_clean,
	   { "usage_and_urls", test_usage_and_urls },
	   { "connection_errors", test_connection_errors },
	   { "server_dies_mid_copy", test_server_dies_mid_copy },
	   { "namespace_errors", test_namespace_errors },
	   { "deep_paths", test_deep_paths },
	   { "local_errors", test_local_errors },
	   { "permission_errors", test_permission_errors },
	   { "pool_full", test_pool_full },
	   { "luns_gone", test_luns_gone },
	   { "luns_gone_mds_waits", test_luns_gone_mds_waits });
