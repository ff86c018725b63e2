/* pnfs cp, put and get lose no data through a mistake or an interruption: a copy of a file onto
 * itself (under any spelling, host name or port of its server) is refused and the file kept; a copy
 * is written under a temporary name and renamed over its destination only when done, so a copy
 * killed or interrupted leaves the old destination whole (and, when interrupted, no temporary);
 * --inplace writes the destination itself; FIFO sources are read in turn; modes are kept like cp(1)
 * keeps them; ls -l -h and owner names; cp -r of trees both ways; local destinations written with
 * O_DIRECT where their file system does direct I/O, through the page cache where not (tmpfs, ramfs);
 * local sources read with O_DIRECT where the page cache does not hold them.
 * Real pnfs-mds on a real tgtd lab. */
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/lab_cli.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)

LAB_CLI_SUITE(2, "128M", "iqn.2024-01.test.pnfs:copy-a", "pnfs-copy")

/* Run "pnfs -q ARGS" (umask 022); its exit status, and its stderr in err (caller frees) when not NULL. */
static int pnfs_run(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pnfs_run(char **err, const char *fmt, ...)
{
	char args[8192];
	int rc;

	TEST_VFORMAT(args, fmt);
	rc = test_run(err, "umask 022; '%s' -q %s 2>&1 >/dev/null", test_bin("pnfs"), args);
	if (err && !*err)
		*err = strdup("");
	return rc;
}

static void run_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_ok(const char *fmt, ...)
{
	char args[8192], *err = NULL;
	int rc;

	TEST_VFORMAT(args, fmt);
	rc = pnfs_run(&err, "%s", args);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc != 0)
		fprintf(stderr, "\n  pnfs %s: exit %d:\n%s", args, rc, err);
	free(err);
}

/* The command fails with status 1 and says expect. */
static void run_fails(const char *expect, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_fails(const char *expect, const char *fmt, ...)
{
	char args[8192], *err = NULL;
	int rc;

	TEST_VFORMAT(args, fmt);
	rc = pnfs_run(&err, "%s", args);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, expect));
	if (rc != 1 || !strstr(err, expect))
		fprintf(stderr, "\n  pnfs %s: exit %d (wanted 1), wanted \"%s\", said:\n%s", args, rc, expect, err);
	free(err);
}

/* The standard output of "pnfs ARGS" (caller frees; "" when it fails). */
static char *pnfs_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *pnfs_out(const char *fmt, ...)
{
	char args[8192], *out = NULL;

	TEST_VFORMAT(args, fmt);
	if (test_run(&out, "'%s' -q %s", test_bin("pnfs"), args) != 0 || !out) {
		free(out);
		out = strdup("");
	}
	return out;
}

#define local_file(name, len, seed, path, pathlen) lab_cli_local_file(&cl, name, len, seed, path, pathlen)

/* md5 of a remote file (pnfs cat) or of a local one, as 32 hex digits ("" when unreadable). */
static void md5_remote(const char *u, char out[33])
{
	char *s = NULL;

	out[0] = 0;
	if (test_run(&s, "'%s' -q --mds-io cat '%s' > '%s/md5.tmp' && md5sum < '%s/md5.tmp'; s=$?; rm -f '%s/md5.tmp'; exit $s",
		     test_bin("pnfs"), u, cl.tmp, cl.tmp, cl.tmp) == 0 && s && strlen(s) >= 32)
		snprintf(out, 33, "%.32s", s);
	free(s);
}

static void md5_local(const char *path, char out[33])
{
	char *s = NULL;

	out[0] = 0;
	if (test_run(&s, "md5sum < '%s'", path) == 0 && s && strlen(s) >= 32)
		snprintf(out, 33, "%.32s", s);
	free(s);
}

/* The fileid "pnfs --json stat" gives (0 when it fails). */
static unsigned long long remote_fileid(const char *u)
{
	char *s = pnfs_out("--json stat '%s'", u), *p = strstr(s, "\"fileid\":");
	unsigned long long id = p ? strtoull(p + 9, NULL, 10) : 0;

	free(s);
	return id;
}

static unsigned remote_mode(const char *u)
{
	char *s = pnfs_out("--json stat '%s'", u), *p = strstr(s, "\"mode\":\"");
	unsigned m = p ? (unsigned)strtoul(p + 8, NULL, 8) : 0;

	free(s);
	return m;
}

/* How many names in the remote directory start with prefix. */
static int remote_count(const char *dir, const char *prefix)
{
	char *s = pnfs_out("ls '%s'", dir), *line = s;
	int n = 0;

	while (line && *line) {
		char *e = strchr(line, '\n');
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			n++;
		line = e ? e + 1 : NULL;
	}
	free(s);
	return n;
}

static int local_count(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* Remove the files of a remote directory (the pool is small). */
static void remote_empty(const char *dir)
{
	test_run(NULL, "for n in $('%s' -q ls '%s'); do '%s' -q rm '%s'/\"$n\"; done", test_bin("pnfs"), dir,
		 test_bin("pnfs"), dir);
	CU_ASSERT_EQUAL(remote_count(dir, ""), 0);
}

/* ---- the same file --------------------------------------------------------------------------- */

static void test_self_copy_refused(void)
{
	NEED_LAB();
	char src[500], before[33], after[33], u[200], other[200], alias[200];
	struct ct_proxy *px;
	const char *same = "are the same file";

	local_file("self.src", 3 * MIB + 123, 11, src, sizeof(src));
	run_ok("mkdir %s/self", cl.url);
	snprintf(u, sizeof(u), "%s/self/a.bin", cl.url);
	run_ok("%s put '%s' %s", cl.devs, src, u);
	md5_remote(u, before);
	CU_ASSERT_EQUAL(strlen(before), 32);
	/* the same spelling, and others of the same path */
	run_fails(same, "%s cp %s %s", cl.devs, u, u);
	run_fails(same, "%s cp %s %s//self/a.bin", cl.devs, u, cl.url);
	run_fails(same, "%s cp %s/self/./a.bin %s", cl.devs, cl.url, u);
	run_fails(same, "%s cp %s/self/../self/a.bin %s", cl.devs, cl.url, u);
	run_fails(same, "%s cp %s %s/self/", cl.devs, u, cl.url);
	run_fails(same, "%s cp %s %s/self", cl.devs, u, cl.url);
	run_fails(same, "%s --inplace cp %s %s", cl.devs, u, u);
	run_fails(same, "--mds-io cp %s %s", u, u);
	/* another name of the server: its own context, the server's identity decides */
	snprintf(alias, sizeof(alias), "pnfs://localhost:%d/self/a.bin", cl.mds->port);
	run_fails(same, "%s cp %s %s", cl.devs, alias, u);
	run_fails(same, "%s cp %s %s", cl.devs, u, alias);
	/* another port leading to the same server */
	px = ct_proxy_start(cl.mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	snprintf(other, sizeof(other), "pnfs://127.0.0.1:%d/self/a.bin", ct_proxy_port(px));
	run_fails(same, "%s cp %s %s", cl.devs, other, u);
	run_fails(same, "%s --inplace cp %s %s", cl.devs, u, other);
	ct_proxy_stop(px);
	md5_remote(u, after);
	CU_ASSERT_STRING_EQUAL(after, before);
	/* no temporary was left by any of them, and another file of the server is still a copy */
	CU_ASSERT_EQUAL(remote_count(cl.url, "."), 0);
	CU_ASSERT_EQUAL(remote_count(u, ".a.bin"), 0);
	run_ok("%s cp %s %s/self/b.bin", cl.devs, u, cl.url);
	snprintf(other, sizeof(other), "%s/self/b.bin", cl.url);
	md5_remote(other, after);
	CU_ASSERT_STRING_EQUAL(after, before);
	unlink(src);
}

/* The library's side: pnfs_identity() through two contexts (two names of the server) and of an open
 * file agree for one file, and differ for two. */
static void test_identity_api(void)
{
	NEED_LAB();
	struct pnfs_context *a = NULL, *b = NULL;
	struct pnfs_identity i1, i2, i3, i4;
	struct pnfs_fh *fh = NULL;

	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(NULL, &a), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(NULL, &b), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(a, "127.0.0.1", cl.mds->port, "/"), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(b, "localhost", cl.mds->port, "/"), 0);
	CU_ASSERT_EQUAL(pnfs_mkdir(a, "/ident", 0755), 0);
	CU_ASSERT_EQUAL(pnfs_open(a, "/ident/one", O_CREAT | O_WRONLY, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_close(a, fh), 0);
	CU_ASSERT_EQUAL(pnfs_open(a, "/ident/two", O_CREAT | O_WRONLY, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_identity(a, "/ident/one", &i1), 0);
	CU_ASSERT_EQUAL(pnfs_identity(b, "/ident/../ident/./one", &i2), 0);
	CU_ASSERT_EQUAL(pnfs_identity(b, "/ident/two", &i3), 0);
	CU_ASSERT_EQUAL(pnfs_fh_identity(fh, &i4), 0);
	CU_ASSERT(i1.major_len > 0 && i1.fh_len > 0);
	CU_ASSERT_EQUAL(pnfs_identity_equal(&i1, &i2), 1);
	CU_ASSERT_EQUAL(pnfs_identity_equal(&i1, &i3), 0);
	CU_ASSERT_EQUAL(pnfs_identity_equal(&i3, &i4), 1);
	CU_ASSERT_EQUAL(pnfs_identity(a, "/ident/none", &i4), -ENOENT);
	CU_ASSERT_EQUAL(pnfs_close(a, fh), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(a, "/ident/one"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(a, "/ident/two"), 0);
	pnfs_umount(a);
	pnfs_umount(b);
	pnfs_context_destroy(a);
	pnfs_context_destroy(b);
}

/* ---- temporaries and renames ------------------------------------------------------------------- */

/* A copy through the relay px, stalled after 8 MiB, then sent sig: it ends, by the signal. down: the
 * copy's bytes flow from the server (a get) rather than to it. */
static void copy_signalled(struct ct_proxy *px, const char *src, const char *dst, int down, int sig, int *status)
{
	char errf[500], errtxt[8192] = "";
	uint64_t base = ct_proxy_bytes(px, down);
	pid_t pid;

	snprintf(errf, sizeof(errf), "%s/sig.err", cl.tmp);
	pid = ct_cp_start("--mds-io", src, dst, errf);
	CU_ASSERT_FATAL(pid > 0);
	TW_WAIT_UNTIL(ct_proxy_bytes(px, down) >= base + 8 * MIB, 20 * 1000, 5);
	CU_ASSERT(ct_proxy_bytes(px, down) >= base + 8 * MIB);
	/* no reply gets through until the signal is in: the copy cannot be done before it */
	ct_proxy_pause(px, CT_PROXY_PAUSE_REPLIES);
	/* Time passes on purpose, both times: requests in flight meet the paused replies before the
	 * signal, and the copy takes the signal before any reply arrives; neither shows outside the
	 * process, so there is nothing to wait on. */
	usleep(100000);
	kill(pid, sig);
	usleep(100000);
	ct_proxy_pause(px, 0);
	CU_ASSERT_EQUAL(ct_cp_wait(pid, 0, 60, status, errf, errtxt, sizeof(errtxt)), 0);
	CU_ASSERT(WIFSIGNALED(*status) && WTERMSIG(*status) == sig);
	if (!WIFSIGNALED(*status) || WTERMSIG(*status) != sig)
		fprintf(stderr, "\n  pnfs cp %s %s (signal %d) ended with status 0x%x, said:\n%s", src, dst, sig, *status,
			errtxt);
	unlink(errf);
}

static void test_interrupted_put_keeps_destination(void)
{
	NEED_LAB();
	char old[500], big[500], d[200], dr[200], before[33], after[33];
	struct ct_proxy *px = ct_proxy_start(cl.mds->port);
	int status;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	local_file("old.src", 2 * MIB + 7, 21, old, sizeof(old));
	local_file("big.src", 64 * MIB, 22, big, sizeof(big));
	run_ok("mkdir %s/intr", cl.url);
	snprintf(d, sizeof(d), "%s/intr/dst.bin", cl.url);
	snprintf(dr, sizeof(dr), "pnfs://127.0.0.1:%d/intr/dst.bin", ct_proxy_port(px));
	run_ok("%s put '%s' %s", cl.devs, old, d);
	md5_remote(d, before);
	CU_ASSERT_EQUAL(strlen(before), 32);
	/* SIGINT and SIGTERM: the old file is kept and the temporary removed */
	copy_signalled(px, big, dr, 0, SIGINT, &status);
	md5_remote(d, after);
	CU_ASSERT_STRING_EQUAL(after, before);
	CU_ASSERT_EQUAL(remote_count(d, "."), 0);
	{
		char dir[200];
		snprintf(dir, sizeof(dir), "%s/intr", cl.url);
		CU_ASSERT_EQUAL(remote_count(dir, ".dst.bin.pnfs-"), 0);
		copy_signalled(px, big, dr, 0, SIGTERM, &status);
		md5_remote(d, after);
		CU_ASSERT_STRING_EQUAL(after, before);
		CU_ASSERT_EQUAL(remote_count(dir, ".dst.bin.pnfs-"), 0);
		/* SIGKILL: nothing can clean up, but the destination is still the old file */
		copy_signalled(px, big, dr, 0, SIGKILL, &status);
		md5_remote(d, after);
		CU_ASSERT_STRING_EQUAL(after, before);
		CU_ASSERT_EQUAL(remote_count(dir, ".dst.bin.pnfs-"), 1);
		if (remote_count(dir, ".dst.bin.pnfs-") != 1)
			test_run(NULL, "'%s' ls -l %s >&2", test_bin("pnfs"), dir);
		CU_ASSERT_EQUAL(remote_count(dir, "dst.bin"), 1);
		/* a copy to a name that did not exist leaves no file under it */
		snprintf(dr, sizeof(dr), "pnfs://127.0.0.1:%d/intr/new.bin", ct_proxy_port(px));
		copy_signalled(px, big, dr, 0, SIGINT, &status);
		CU_ASSERT_EQUAL(remote_count(dir, "new.bin"), 0);
		CU_ASSERT_EQUAL(remote_count(dir, ".new.bin"), 0);
	}
	/* and a copy that ends replaces the file */
	run_ok("%s put '%s' %s", cl.devs, big, d);
	md5_remote(d, after);
	md5_local(big, before);
	CU_ASSERT_STRING_EQUAL(after, before);
	ct_proxy_stop(px);
	{
		char dir[200];
		snprintf(dir, sizeof(dir), "%s/intr", cl.url);
		remote_empty(dir);
	}
	unlink(old);
	unlink(big);
}

/* Without --inplace the destination is a new file renamed over the old one (a new fileid); with it,
 * the old file is written (its fileid kept). */
static void test_inplace_writes_directly(void)
{
	NEED_LAB();
	char a[500], b[500], d[200], m1[33], m2[33];
	unsigned long long id0, id1, id2;

	local_file("inpl.a", 1 * MIB + 5, 31, a, sizeof(a));
	local_file("inpl.b", 3 * MIB + 9, 32, b, sizeof(b));
	run_ok("mkdir %s/inpl", cl.url);
	snprintf(d, sizeof(d), "%s/inpl/f", cl.url);
	run_ok("%s put '%s' %s", cl.devs, a, d);
	id0 = remote_fileid(d);
	CU_ASSERT(id0 != 0);
	run_ok("%s put '%s' %s", cl.devs, b, d);
	id1 = remote_fileid(d);
	CU_ASSERT(id1 != 0 && id1 != id0);
	md5_remote(d, m1);
	md5_local(b, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	run_ok("%s --inplace put '%s' %s", cl.devs, a, d);
	id2 = remote_fileid(d);
	CU_ASSERT_EQUAL(id2, id1);
	md5_remote(d, m1);
	md5_local(a, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	run_ok("%s cp '%s' %s --inplace", cl.devs, b, d);
	CU_ASSERT_EQUAL(remote_fileid(d), id1);
	md5_remote(d, m1);
	md5_local(b, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	/* locally too: --inplace keeps the inode, a copy without it replaces it */
	{
		char l[500];
		struct stat s0, s1, s2;
		snprintf(l, sizeof(l), "%s/inpl.local", cl.tmp);
		run_ok("%s get %s '%s'", cl.devs, d, l);
		CU_ASSERT_EQUAL(stat(l, &s0), 0);
		run_ok("%s get %s '%s'", cl.devs, d, l);
		CU_ASSERT_EQUAL(stat(l, &s1), 0);
		CU_ASSERT(s1.st_ino != s0.st_ino);
		run_ok("%s --inplace get %s '%s'", cl.devs, d, l);
		CU_ASSERT_EQUAL(stat(l, &s2), 0);
		CU_ASSERT_EQUAL(s2.st_ino, s1.st_ino);
		md5_local(l, m1);
		CU_ASSERT_STRING_EQUAL(m1, m2);
		unlink(l);
	}
	/* a local symlink to a file: the file is replaced, the link stays */
	{
		char target[500], link[500];
		struct stat st;
		snprintf(target, sizeof(target), "%s/inpl.target", cl.tmp);
		snprintf(link, sizeof(link), "%s/inpl.link", cl.tmp);
		CU_ASSERT_EQUAL(ct_write_file(target, "old", 3), 0);
		CU_ASSERT_EQUAL(symlink("inpl.target", link), 0);
		run_ok("%s get %s '%s'", cl.devs, d, link);
		CU_ASSERT(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
		md5_local(target, m1);
		CU_ASSERT_STRING_EQUAL(m1, m2);
		unlink(link);
		unlink(target);
	}
	CU_ASSERT_EQUAL(local_count(cl.tmp, ".inpl"), 0);
	unlink(a);
	unlink(b);
}

static void test_interrupted_get(void)
{
	NEED_LAB();
	char big[500], old[500], d[200], dr[200], l[500], m1[33], m2[33];
	struct ct_proxy *px = ct_proxy_start(cl.mds->port);
	int status;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	local_file("get.big", 64 * MIB, 41, big, sizeof(big));
	run_ok("mkdir %s/get", cl.url);
	snprintf(d, sizeof(d), "%s/get/big", cl.url);
	snprintf(dr, sizeof(dr), "pnfs://127.0.0.1:%d/get/big", ct_proxy_port(px));
	run_ok("%s put '%s' %s", cl.devs, big, d);
	/* no file there before: none under its name after */
	snprintf(l, sizeof(l), "%s/got.bin", cl.tmp);
	copy_signalled(px, dr, l, 1, SIGINT, &status);
	CU_ASSERT(access(l, F_OK) < 0 && errno == ENOENT);
	CU_ASSERT_EQUAL(local_count(cl.tmp, ".got.bin"), 0);
	copy_signalled(px, dr, l, 1, SIGKILL, &status);
	CU_ASSERT(access(l, F_OK) < 0 && errno == ENOENT);
	CU_ASSERT_EQUAL(local_count(cl.tmp, ".got.bin"), 1);
	if (local_count(cl.tmp, ".got.bin") != 1)
		test_run(NULL, "ls -la '%s' >&2", cl.tmp);
	test_run(NULL, "rm -f '%s'/.got.bin.*", cl.tmp);
	/* an old file there: kept whole */
	local_file("got.bin", 1 * MIB + 3, 42, old, sizeof(old));
	md5_local(old, m1);
	copy_signalled(px, dr, l, 1, SIGTERM, &status);
	md5_local(l, m2);
	CU_ASSERT_STRING_EQUAL(m2, m1);
	CU_ASSERT_EQUAL(local_count(cl.tmp, ".got.bin"), 0);
	/* finished: replaced */
	run_ok("%s get %s '%s'", cl.devs, d, l);
	md5_local(l, m1);
	md5_local(big, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	CU_ASSERT_EQUAL(local_count(cl.tmp, ".got.bin"), 0);
	ct_proxy_stop(px);
	snprintf(d, sizeof(d), "%s/get", cl.url);
	remote_empty(d);
	unlink(l);
	unlink(big);
}

/* A FIFO as the source is read in turn; one that fails leaves no file on the server. */
static void test_fifo_source(void)
{
	NEED_LAB();
	char src[500], fifo[500], d[200], m1[33], m2[33], *err = NULL;
	int rc;

	local_file("fifo.src", 20 * MIB + 11, 51, src, sizeof(src));
	snprintf(fifo, sizeof(fifo), "%s/fifo", cl.tmp);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0644), 0);
	run_ok("mkdir %s/fifo", cl.url);
	snprintf(d, sizeof(d), "%s/fifo/copy", cl.url);
	rc = test_run(&err, "cat '%s' > '%s' & '%s' -q %s cp '%s' %s 2>&1; s=$?; wait; exit $s", src, fifo,
		      test_bin("pnfs"), cl.devs, fifo, d);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc != 0)
		fprintf(stderr, "\n  pnfs cp FIFO: exit %d:\n%s", rc, err ? err : "");
	free(err);
	md5_remote(d, m1);
	md5_local(src, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	/* through the MDS, and from standard input */
	rc = test_run(NULL, "cat '%s' > '%s' & '%s' -q --mds-io put '%s' %s/fifo/copy2; s=$?; wait; exit $s", src, fifo,
		      test_bin("pnfs"), fifo, cl.url);
	CU_ASSERT_EQUAL(rc, 0);
	snprintf(d, sizeof(d), "%s/fifo/copy2", cl.url);
	md5_remote(d, m1);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	rc = test_run(NULL, "'%s' -q %s put - %s/fifo/copy3 < '%s'", test_bin("pnfs"), cl.devs, cl.url, src);
	CU_ASSERT_EQUAL(rc, 0);
	snprintf(d, sizeof(d), "%s/fifo/copy3", cl.url);
	md5_remote(d, m1);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	/* a copy that fails before its end (the server is not there for the name) leaves nothing */
	rc = test_run(NULL, "(cat '%s' > '%s' 2>/dev/null &); '%s' -q %s cp '%s' %s/fifo/nodir/copy 2>/dev/null",
		      src, fifo, test_bin("pnfs"), cl.devs, fifo, cl.url);
	CU_ASSERT_EQUAL(rc, 1);
	{
		char dir[200];
		snprintf(dir, sizeof(dir), "%s/fifo", cl.url);
		CU_ASSERT_EQUAL(remote_count(dir, "."), 0);
		CU_ASSERT_EQUAL(remote_count(dir, "copy"), 3);
		remote_empty(dir);
	}
	/* a FIFO whose writer sends nothing: SIGINT ends the copy blocked reading it, nothing is left */
	{
		char dir[200], errf[500], errtxt[4096] = "";
		int status = 0;
		pid_t w = fork(), pid;
		CU_ASSERT_FATAL(w >= 0);
		if (w == 0) {
			int fd = open(fifo, O_WRONLY);
			/* on purpose: a writer that holds the FIFO open and sends nothing */
			sleep(60);
			_exit(fd < 0);
		}
		snprintf(dir, sizeof(dir), "%s/fifo", cl.url);
		snprintf(d, sizeof(d), "%s/fifo/stalled", cl.url);
		snprintf(errf, sizeof(errf), "%s/stalled.err", cl.tmp);
		pid = ct_cp_start(cl.devs, fifo, d, errf);
		CU_ASSERT_FATAL(pid > 0);
		TW_WAIT_UNTIL(remote_count(dir, ".stalled.pnfs-") != 0, 10 * 1000, 10);
		CU_ASSERT_EQUAL(remote_count(dir, ".stalled.pnfs-"), 1);
		kill(pid, SIGINT);
		CU_ASSERT_EQUAL(ct_cp_wait(pid, 0, 30, &status, errf, errtxt, sizeof(errtxt)), 0);
		CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
		CU_ASSERT_EQUAL(remote_count(dir, ".stalled"), 0);
		CU_ASSERT_EQUAL(remote_count(dir, "stalled"), 0);
		kill(w, SIGKILL);
		waitpid(w, NULL, 0);
		unlink(errf);
	}
	unlink(fifo);
	unlink(src);
}

/* cp's way with modes: a new file gets the source's bits (less the umask), a replaced one keeps its. */
static void test_modes(void)
{
	NEED_LAB();
	char src[500], l[500], d[200];
	struct stat st;

	local_file("mode.src", 100000, 61, src, sizeof(src));
	chmod(src, 0750);
	run_ok("mkdir %s/mode", cl.url);
	snprintf(d, sizeof(d), "%s/mode/new", cl.url);
	run_ok("%s put '%s' %s", cl.devs, src, d);
	CU_ASSERT_EQUAL(remote_mode(d), 0750);
	chmod(src, 0666);
	snprintf(d, sizeof(d), "%s/mode/u", cl.url);
	run_ok("%s put '%s' %s", cl.devs, src, d); /* umask 022 */
	CU_ASSERT_EQUAL(remote_mode(d), 0644);
	/* replaced: the old file's mode */
	chmod(src, 0755);
	snprintf(d, sizeof(d), "%s/mode/new", cl.url);
	run_ok("%s put '%s' %s", cl.devs, src, d);
	CU_ASSERT_EQUAL(remote_mode(d), 0750);
	/* read-only for its owner: still replaced, still read-only */
	chmod(src, 0444);
	snprintf(d, sizeof(d), "%s/mode/ro", cl.url);
	run_ok("%s put '%s' %s", cl.devs, src, d);
	CU_ASSERT_EQUAL(remote_mode(d), 0444);
	chmod(src, 0644);
	run_ok("%s put '%s' %s", cl.devs, src, d);
	CU_ASSERT_EQUAL(remote_mode(d), 0444);
	/* and into local files */
	snprintf(l, sizeof(l), "%s/mode.got", cl.tmp);
	snprintf(d, sizeof(d), "%s/mode/new", cl.url);
	run_ok("%s get %s '%s'", cl.devs, d, l);
	CU_ASSERT(stat(l, &st) == 0 && (st.st_mode & 07777) == 0750);
	chmod(l, 0600);
	run_ok("%s get %s '%s'", cl.devs, d, l);
	CU_ASSERT(stat(l, &st) == 0 && (st.st_mode & 07777) == 0600);
	unlink(l);
	unlink(src);
}

/* ---- ls -l -h, owner names ------------------------------------------------------------------- */

static void test_ls_long_human(void)
{
	NEED_LAB();
	char a[500], b[500], c[500], *out;
	struct passwd *pw = getpwuid(getuid());

	local_file("ls.a", 3 * MIB, 71, a, sizeof(a));
	local_file("ls.b", 1536, 72, b, sizeof(b));
	local_file("ls.c", 700, 73, c, sizeof(c));
	run_ok("mkdir %s/lsh", cl.url);
	run_ok("%s put '%s' %s/lsh/three", cl.devs, a, cl.url);
	run_ok("%s put '%s' %s/lsh/onehalf", cl.devs, b, cl.url);
	run_ok("%s put '%s' %s/lsh/small", cl.devs, c, cl.url);
	out = pnfs_out("ls -l -h %s/lsh", cl.url);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 3.0M "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 1.5K "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 700 "));
	CU_ASSERT_PTR_NULL(strstr(out, "3145728"));
	if (pw) {
		char want[300];
		snprintf(want, sizeof(want), " %-8s ", pw->pw_name);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	}
	if (!strstr(out, " 3.0M ") || !strstr(out, " 1.5K "))
		fprintf(stderr, "\n  pnfs ls -l -h said:\n%s", out);
	free(out);
	/* without -h: bytes; one file; --human-readable before the command */
	out = pnfs_out("ls -l %s/lsh", cl.url);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 3145728 "));
	free(out);
	out = pnfs_out("--human-readable ls -l %s/lsh/three", cl.url);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 3.0M "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "three"));
	free(out);
	/* after ls, -h is human-readable sizes; --help is still the usage */
	out = pnfs_out("ls --help");
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Usage: pnfs"));
	free(out);
	/* the numbers stay numbers in JSON */
	out = pnfs_out("--json ls %s/lsh", cl.url);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"size\":3145728"));
	free(out);
	unlink(a);
	unlink(b);
	unlink(c);
}

/* ---- trees ------------------------------------------------------------------------------------ */

static const char *tree_files[] = { "a", "sub/b", "sub/deeper/c", "sub/deeper/big", "sub/deeper/evendeeper/d" };

static void make_tree(const char *root)
{
	const size_t sizes[] = { 1 * MIB + 1, 100000, 0, 17 * MIB + 333, 4096 };
	char p[600];

	test_run(NULL, "rm -rf '%s' && mkdir -p '%s/sub/deeper/evendeeper' '%s/empty'", root, root, root);
	for (size_t i = 0; i < sizeof(tree_files) / sizeof(tree_files[0]); i++) {
		char *d = malloc(sizes[i] ? sizes[i] : 1);
		snprintf(p, sizeof(p), "%s/%s", root, tree_files[i]);
		test_fill_random(d, sizes[i], 80 + i);
		CU_ASSERT_EQUAL(ct_write_file(p, d, sizes[i]), 0);
		free(d);
	}
	snprintf(p, sizeof(p), "%s/link", root);
	CU_ASSERT_EQUAL(symlink("sub/b", p), 0);
	snprintf(p, sizeof(p), "%s/sub/dangling", root);
	CU_ASSERT_EQUAL(symlink("../nowhere", p), 0);
}

static void check_tree(const char *want, const char *got)
{
	char a[600], b[600], m1[33], m2[33], t1[100], t2[100];
	struct stat st;
	ssize_t n1, n2;

	for (size_t i = 0; i < sizeof(tree_files) / sizeof(tree_files[0]); i++) {
		snprintf(a, sizeof(a), "%s/%s", want, tree_files[i]);
		snprintf(b, sizeof(b), "%s/%s", got, tree_files[i]);
		md5_local(a, m1);
		md5_local(b, m2);
		CU_ASSERT_EQUAL(strlen(m1), 32);
		CU_ASSERT_STRING_EQUAL(m1, m2);
		if (strcmp(m1, m2))
			fprintf(stderr, "\n  %s differs from %s\n", b, a);
	}
	snprintf(b, sizeof(b), "%s/empty", got);
	CU_ASSERT(stat(b, &st) == 0 && S_ISDIR(st.st_mode));
	snprintf(a, sizeof(a), "%s/link", want);
	snprintf(b, sizeof(b), "%s/link", got);
	n1 = readlink(a, t1, sizeof(t1));
	n2 = readlink(b, t2, sizeof(t2));
	CU_ASSERT(n1 > 0 && n1 == n2 && memcmp(t1, t2, (size_t)n1) == 0);
	snprintf(b, sizeof(b), "%s/sub/dangling", got);
	n2 = readlink(b, t2, sizeof(t2));
	CU_ASSERT(n2 == 10 && memcmp(t2, "../nowhere", 10) == 0);
}

static void test_tree_copies(void)
{
	NEED_LAB();
	char src[500], back[500], back2[500], fifo[600], *out;

	snprintf(src, sizeof(src), "%s/tree", cl.tmp);
	make_tree(src);
	chmod(src, 0750);
	run_ok("mkdir %s/trees", cl.url);
	/* into an existing directory: DST/tree */
	run_ok("%s cp -r '%s' %s/trees", cl.devs, src, cl.url);
	out = pnfs_out("ls %s/trees/tree", cl.url);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "sub/"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "empty/"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "link"));
	free(out);
	{
		char t[200];
		snprintf(t, sizeof(t), "%s/trees/tree", cl.url);
		CU_ASSERT_EQUAL(remote_mode(t), 0750);
	}
	/* back: to a new name */
	snprintf(back, sizeof(back), "%s/back", cl.tmp);
	run_ok("%s cp -r %s/trees/tree '%s'", cl.devs, cl.url, back);
	check_tree(src, back);
	/* the other commands, and options after the command */
	run_ok("%s put -r '%s' %s/trees/put", cl.devs, src, cl.url);
	snprintf(back2, sizeof(back2), "%s/back2", cl.tmp);
	run_ok("%s get %s/trees/put '%s' --recursive", cl.devs, cl.url, back2);
	check_tree(src, back2);
	/* again onto the copies: files replaced, the tree the same */
	run_ok("%s cp -r '%s' %s/trees", cl.devs, src, cl.url);
	run_ok("%s cp -R %s/trees/tree '%s'", cl.devs, cl.url, cl.tmp);
	{
		char again[600];
		snprintf(again, sizeof(again), "%s/tree", cl.tmp);
		check_tree(src, again);
	}
	/* a directory without -r: refused, saying so */
	run_fails("-r copies a tree", "cp '%s' %s/trees/x", src, cl.url);
	/* other types: said, the rest copied */
	snprintf(fifo, sizeof(fifo), "%s/sub/fifo", src);
	CU_ASSERT_EQUAL(mkfifo(fifo, 0644), 0);
	run_fails("not copied: a fifo", "%s cp -r '%s' %s/trees/withfifo", cl.devs, src, cl.url);
	test_run(NULL, "rm -rf '%s'", back);
	run_ok("%s cp -r %s/trees/withfifo '%s'", cl.devs, cl.url, back);
	unlink(fifo);
	check_tree(src, back);
	/* server to server, and back to check */
	run_ok("%s cp -r %s/trees/tree %s/trees/again", cl.devs, cl.url, cl.url);
	test_run(NULL, "rm -rf '%s'", back);
	run_ok("%s cp -r %s/trees/again '%s'", cl.devs, cl.url, back);
	check_tree(src, back);
	/* a tree into itself (under any spelling, through another name of the server): refused */
	run_fails("cannot copy a directory into itself", "cp -r %s/trees/tree %s/trees/tree/sub", cl.url, cl.url);
	run_fails("cannot copy a directory into itself", "cp -r %s/trees/tree %s/trees/tree/sub/new", cl.url, cl.url);
	run_fails("cannot copy a directory into itself", "cp -r %s/trees/tree %s/trees/", cl.url, cl.url);
	run_fails("cannot copy a directory into itself", "cp -r %s/trees/tree pnfs://localhost:%d/trees/./tree/sub/deeper",
		  cl.url, cl.mds->port);
	out = pnfs_out("ls %s/trees/tree/sub", cl.url);
	CU_ASSERT_PTR_NULL(strstr(out, "new"));
	CU_ASSERT_PTR_NULL(strstr(out, "tree"));
	free(out);
	test_run(NULL, "rm -rf '%s' '%s' '%s' '%s/tree'", src, back, back2, cl.tmp);
}

/* ---- local destinations with and without O_DIRECT ------------------------------------------------ */

/* A directory for test files on a file system that does direct I/O (statx STATX_DIOALIGN), made in
 * path (removed by the caller); 0, or -1 when none is found. */
static int direct_dir(char *path, size_t len)
{
	static const char *parents[] = { "/var/tmp", "/tmp", "." };

	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		struct statx sx;
		char probe[600];
		int ok, fd;
		snprintf(path, len, "%s/pnfs-copy-direct.XXXXXX", parents[i]);
		if (!mkdtemp(path))
			continue;
		/* file systems say it of regular files */
		snprintf(probe, sizeof(probe), "%s/probe", path);
		fd = open(probe, O_WRONLY | O_CREAT, 0644);
		ok = fd >= 0 && statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
		     sx.stx_dio_offset_align;
		if (fd >= 0)
			close(fd);
		unlink(probe);
		if (ok)
			return 0;
		rmdir(path);
	}
	return -1;
}

/* get of the remote file u into dst (--inplace when inplace), compared with the local file src; the
 * bytes the copy says it wrote with O_DIRECT and through the page cache. */
static void get_and_compare(const char *u, const char *src, const char *dst, int inplace, uint64_t *direct, uint64_t *cached)
{
	char *out = NULL, m1[33], m2[33];
	struct stat a, b;
	int rc = test_run(&out, "'%s' -q --json --stats %s %s get %s '%s' 2>&1 >/dev/null", test_bin("pnfs"),
			  inplace ? "--inplace" : "", cl.devs, u, dst);

	CU_ASSERT_EQUAL(rc, 0);
	*direct = test_json_num(out, "local_direct_written");
	*cached = test_json_num(out, "local_cached_written");
	md5_local(src, m1);
	md5_local(dst, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	CU_ASSERT(stat(src, &a) == 0 && stat(dst, &b) == 0 && a.st_size == b.st_size);
	if (rc != 0 || strcmp(m1, m2) != 0 || a.st_size != b.st_size)
		fprintf(stderr, "\n  get %s %s: exit %d, md5 %s vs %s:\n%s", u, dst, rc, m1, m2, out ? out : "");
	free(out);
}

/* A copy out writes a local file on a disk file system (ext4, XFS) with O_DIRECT, its last block
 * padded and the file cut to its size; on tmpfs and on ramfs, which refuses O_DIRECT, through the
 * page cache. Every size, aligned or not, reads back equal, also written over a longer file in place
 * and with holes kept. */
static void test_direct_destinations(void)
{
	NEED_LAB();
	static const uint64_t sizes[] = { 0, 1, 511, 4096, 4097, 8 * MIB, 8 * MIB + 1, 17 * MIB + 513 };
	char ddir[400], rdir[400], src[500], dst[600], u[300];
	int have_disk = direct_dir(ddir, sizeof(ddir)) == 0, have_ramfs;
	uint64_t direct, cached;

	snprintf(rdir, sizeof(rdir), "%s/ramfs", cl.tmp);
	have_ramfs = mkdir(rdir, 0755) == 0 && test_run(NULL, "mount -t ramfs ramfs '%s' 2>/dev/null", rdir) == 0;
	if (!have_disk)
		fprintf(stderr, "\n  no file system with direct I/O found for the test's files: O_DIRECT not tried\n");
	if (!have_ramfs)
		fprintf(stderr, "\n  ramfs not mounted (not root?): the refused O_DIRECT not tried\n");
	run_ok("mkdir %s/direct", cl.url);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		local_file("direct.src", (size_t)n, 700 + i, src, sizeof(src));
		snprintf(u, sizeof(u), "%s/direct/f%zu", cl.url, i);
		run_ok("%s put '%s' %s", cl.devs, src, u);
		if (have_disk) {
			snprintf(dst, sizeof(dst), "%s/f%zu", ddir, i);
			get_and_compare(u, src, dst, 0, &direct, &cached);
			/* whole blocks directly, the last one padded; nothing through the page cache */
			CU_ASSERT_EQUAL(direct, n ? n : UINT64_MAX);
			CU_ASSERT(cached == 0 || cached == UINT64_MAX);
		}
		snprintf(dst, sizeof(dst), "%s/f%zu", cl.tmp, i);
		get_and_compare(u, src, dst, 0, &direct, &cached);
		CU_ASSERT(direct == 0 || direct == UINT64_MAX);
		CU_ASSERT_EQUAL(cached, n ? n : UINT64_MAX);
		unlink(dst);
		if (have_ramfs) {
			snprintf(dst, sizeof(dst), "%s/f%zu", rdir, i);
			get_and_compare(u, src, dst, 0, &direct, &cached);
			CU_ASSERT(direct == 0 || direct == UINT64_MAX);
			CU_ASSERT_EQUAL(cached, n ? n : UINT64_MAX);
			unlink(dst);
		}
		run_ok("rm %s", u);
	}
	if (have_disk) {
		/* in place over a longer file: cut to the new size */
		snprintf(dst, sizeof(dst), "%s/f%zu", ddir, sizeof(sizes) / sizeof(sizes[0]) - 1);
		local_file("direct.src", 3 * MIB + 7, 720, src, sizeof(src));
		snprintf(u, sizeof(u), "%s/direct/short", cl.url);
		run_ok("%s put '%s' %s", cl.devs, src, u);
		get_and_compare(u, src, dst, 1, &direct, &cached);
		CU_ASSERT_EQUAL(direct, 3 * MIB + 7);
		run_ok("rm %s", u);
		/* holes stay holes: 1 MiB of data, a 12 MiB hole, 1 MiB + 3 of data */
		{
			char hole[500];
			struct stat st;
			snprintf(hole, sizeof(hole), "%s/direct.hole", cl.tmp);
			CU_ASSERT_EQUAL(test_run(NULL, "head -c 1048576 '%s' > '%s' && truncate -s 13M '%s' && head -c 1048579 '%s' >> '%s'",
						 src, hole, hole, src, hole), 0);
			snprintf(u, sizeof(u), "%s/direct/hole", cl.url);
			run_ok("%s put '%s' %s", cl.devs, hole, u);
			snprintf(dst, sizeof(dst), "%s/hole", ddir);
			get_and_compare(u, hole, dst, 0, &direct, &cached);
			CU_ASSERT(direct >= 2 * MIB && direct < 4 * MIB);
			CU_ASSERT(stat(dst, &st) == 0 && (uint64_t)st.st_blocks * 512 < 8 * MIB);
			run_ok("rm %s", u);
			unlink(hole);
		}
	}
	if (have_ramfs)
		test_run(NULL, "umount '%s'", rdir);
	rmdir(rdir);
	if (have_disk)
		test_run(NULL, "rm -rf '%s'", ddir);
	unlink(src);
	run_ok("rm %s/direct", cl.url);
}

/* The file at path written back and dropped from the page cache (its first keep bytes read back in). */
static void uncache(const char *path, size_t keep)
{
	int fd = open(path, O_RDONLY);
	char *b = malloc(keep ? keep : 1);

	CU_ASSERT_FATAL(fd >= 0 && b != NULL);
	CU_ASSERT_EQUAL(fsync(fd), 0);
	CU_ASSERT_EQUAL(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	/* no read-ahead past keep */
	CU_ASSERT_EQUAL(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	if (keep)
		CU_ASSERT_EQUAL(pread(fd, b, keep, 0), (ssize_t)keep);
	free(b);
	close(fd);
}

/* put of the local file src to u; the bytes the copy says it read with O_DIRECT; the server's copy
 * compared with src. */
static uint64_t put_and_compare(const char *src, const char *u)
{
	char *out = NULL, m1[33], m2[33];
	int rc = test_run(&out, "'%s' -q --json --stats %s put '%s' %s 2>&1 >/dev/null", test_bin("pnfs"), cl.devs, src, u);
	uint64_t direct = test_json_num(out, "local_direct_read");

	CU_ASSERT_EQUAL(rc, 0);
	md5_local(src, m1);
	md5_remote(u, m2);
	CU_ASSERT_STRING_EQUAL(m1, m2);
	if (rc != 0 || strcmp(m1, m2) != 0)
		fprintf(stderr, "\n  put %s %s: exit %d, md5 %s vs %s:\n%s", src, u, rc, m1, m2, out ? out : "");
	free(out);
	return direct;
}

/* A copy in from a disk file system reads what the page cache lacks with O_DIRECT (all of a file not
 * in it, the rest of one partly in it) and the cached part through the page cache; from tmpfs all
 * through the page cache. Every size reads back equal on the server. */
static void test_direct_sources(void)
{
	NEED_LAB();
	static const uint64_t sizes[] = { 1, 511, 4097, 8 * MIB + 1, 17 * MIB + 513 };
	char ddir[400], src[600], tsrc[500], u[300];
	uint64_t direct;

	TEST_SKIP_IF(direct_dir(ddir, sizeof(ddir)) < 0, "no file system with direct I/O found for the test's files");
	run_ok("mkdir %s/dsrc", cl.url);
	snprintf(u, sizeof(u), "%s/dsrc/f", cl.url);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		local_file("dsrc.tmp", (size_t)n, 800 + i, tsrc, sizeof(tsrc));
		snprintf(src, sizeof(src), "%s/src%zu", ddir, i);
		CU_ASSERT_EQUAL(test_run(NULL, "cp '%s' '%s'", tsrc, src), 0);
		/* from tmpfs: no O_DIRECT */
		direct = put_and_compare(tsrc, u);
		CU_ASSERT(direct == 0 || direct == UINT64_MAX);
		run_ok("rm %s", u);
		/* not cached: all of it with O_DIRECT */
		uncache(src, 0);
		CU_ASSERT_EQUAL(put_and_compare(src, u), n);
		run_ok("rm %s", u);
		/* partly cached: the rest with O_DIRECT */
		if (n > 5 * MIB) {
			uncache(src, 5 * MIB + 100);
			direct = put_and_compare(src, u);
			CU_ASSERT(direct > 0 && direct != UINT64_MAX && direct <= n);
			if (direct == 0 || direct == UINT64_MAX || direct > n)
				fprintf(stderr, "\n  partly cached %s: %llu bytes read with O_DIRECT of %llu\n", src,
					(unsigned long long)direct, (unsigned long long)n);
			run_ok("rm %s", u);
		}
		unlink(src);
		unlink(tsrc);
	}
	test_run(NULL, "rm -rf '%s'", ddir);
	run_ok("rm %s/dsrc", cl.url);
}

TEST_SUITE(client_copy, "integration/client_copy", suite_init, suite_clean,
	   { "self_copy_refused", test_self_copy_refused },
	   { "identity_api", test_identity_api },
	   { "interrupted_put_keeps_destination", test_interrupted_put_keeps_destination },
	   { "inplace_writes_directly", test_inplace_writes_directly },
	   { "interrupted_get", test_interrupted_get },
	   { "fifo_source", test_fifo_source },
	   { "modes", test_modes },
	   { "ls_long_human", test_ls_long_human },
	   { "tree_copies", test_tree_copies },
	   { "direct_destinations", test_direct_destinations },
	   { "direct_sources", test_direct_sources });
