/* pnfs mount: libpnfs as a FUSE file system over a real tgt lab and pnfs-mds. Files of many sizes
 * written by dd, cp and tar read back equal through the mount and through pnfs cp; two mounts
 * (two clients) see each other's data after close; the file data goes through layouts (the MDS's
 * own counters of MDS-path bytes stay flat); namespace operations (mkdir, rename, truncate,
 * symlink, rm) and a file removed or renamed while another mount holds it open; a wrong server
 * fails the mount on the terminal. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct test_lab *lab;
static struct test_mds *mds;
static char why[512], url[128], devs[2048], dir[400], mnt1[500], mnt2[500];
static int metrics_port, have_fuse;

static int suite_init(void)
{
	int n;

	have_fuse = access("/dev/fuse", R_OK | W_OK) == 0 && test_run(NULL, "command -v fusermount3 >/dev/null") == 0;
	if (!have_fuse)
		return 0;
	lab = lab_up(4, "96M", NULL);
	if (!lab) {
		snprintf(why, sizeof(why), "no tgtd lab");
		return 0;
	}
	metrics_port = test_free_port();
	{
		char args[128];
		snprintf(args, sizeof(args), "--lease-time 10 --grace-time 2 --metrics-port %d", metrics_port);
		mds = tmds_up(lab, NULL, args, why, sizeof(why));
	}
	if (!mds)
		return 0;
	snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d", mds->port);
	n = 0;
	for (int i = 0; i < lab->nluns; i++)
		n += snprintf(devs + n, sizeof(devs) - (size_t)n, " --device '%s'", lab->urls[i]);
	snprintf(dir, sizeof(dir), "%s", test_tmpdir("mount"));
	snprintf(mnt1, sizeof(mnt1), "%s/m1", dir);
	snprintf(mnt2, sizeof(mnt2), "%s/m2", dir);
	mkdir(mnt1, 0755);
	mkdir(mnt2, 0755);
	if (test_run(NULL, "'%s' %s mount %s/ '%s' 2>&1", test_bin("pnfs"), devs, url, mnt1) != 0 ||
	    test_run(NULL, "'%s' %s mount %s/ '%s' -o attr_timeout=0 2>&1", test_bin("pnfs"), devs, url, mnt2) != 0)
		snprintf(why, sizeof(why), "pnfs mount failed");
	return 0;
}

static int suite_clean(void)
{
	if (have_fuse) {
		(void)test_run(NULL, "fusermount3 -u '%s' 2>/dev/null; fusermount3 -u '%s' 2>/dev/null", mnt1, mnt2);
		tmds_down(mds);
		if (lab)
			lab_down(lab);
	}
	return 0;
}

#define NEED()                                                                      \
	do {                                                                        \
		TEST_SKIP_IF(!have_fuse, "no /dev/fuse or fusermount3 on this host"); \
		if (why[0])                                                         \
			fprintf(stderr, "\n  setup: %s\n", why);                    \
		CU_ASSERT_FATAL(why[0] == 0);                                       \
	} while (0)

static long long metric(const char *name)
{
	char *out = NULL;
	long long v = -1;
	if (test_run(&out, "curl -sf http://127.0.0.1:%d/metrics | sed -n 's/^%s //p'", metrics_port, name) == 0 &&
	    out && *out)
		v = strtoll(out, NULL, 10);
	free(out);
	return v;
}

static int run(char **out, const char *fmt, const char *a, const char *b)
{
	return test_run(out, fmt, a, b);
}

/* dd, cp and tar into the mount; each file read back equal through the mount, through the other
 * mount and through pnfs cp; nothing through the MDS. */
static void test_files_of_many_sizes(void)
{
	char *out = NULL;
	long long w0, r0;
	int rc;

	NEED();
	w0 = metric("pnfs_mds_data_written_bytes_total");
	r0 = metric("pnfs_mds_data_read_bytes_total");
	CU_ASSERT(w0 >= 0 && r0 >= 0);
	rc = test_run(&out,
		      "set -e; D='%s'; M='%s'; N='%s'; mkdir -p $D/src/tree/a/b\n"
		      "for s in 0 1 4095 4096 65537 1048579 17825792; do head -c $s /dev/urandom > $D/src/f$s; done\n"
		      "for s in 0 1 4095 4096 65537 1048579 17825792; do dd if=$D/src/f$s of=$M/dd$s bs=64k 2>/dev/null; done\n"
		      "cp $D/src/f17825792 $M/cp.bin\n"
		      "for i in 1 2 3 4 5; do head -c $((i * 33333)) /dev/urandom > $D/src/tree/a/b/t$i; done\n"
		      "ln -s a/b/t1 $D/src/tree/link\n"
		      "mkdir $M/tree; tar -C $D/src/tree -cf - . | tar -C $M/tree -xf -\n"
		      "bad=0\n"
		      "for s in 0 1 4095 4096 65537 1048579 17825792; do\n"
		      "  cmp -s $D/src/f$s $M/dd$s || { echo mount-differs $s; bad=1; }\n"
		      "  cmp -s $D/src/f$s $N/dd$s || { echo other-mount-differs $s; bad=1; }\n"
		      "  '%s' cp -q %s %s/dd$s $D/back$s && cmp -s $D/src/f$s $D/back$s || { echo pnfs-cp-differs $s; bad=1; }\n"
		      "done\n"
		      "cmp -s $D/src/f17825792 $N/cp.bin || { echo cp-differs; bad=1; }\n"
		      "diff -r $D/src/tree $N/tree || { echo tree-differs; bad=1; }\n"
		      "[ \"$(readlink $N/tree/link)\" = a/b/t1 ] || { echo link-differs; bad=1; }\n"
		      "echo bad=$bad\n",
		      dir, mnt1, mnt2, test_bin("pnfs"), devs, url);
	if (rc != 0 || !out || !strstr(out, "bad=0"))
		fprintf(stderr, "\n  %s\n", out ? out : "");
	CU_ASSERT(rc == 0);
	CU_ASSERT(out && strstr(out, "bad=0"));
	free(out);
	/* Everything went through layouts: the MDS moved no file data (a few READs at the end of a
	 * file return no bytes). */
	CU_ASSERT_EQUAL(metric("pnfs_mds_data_written_bytes_total"), w0);
	CU_ASSERT_EQUAL(metric("pnfs_mds_data_read_bytes_total"), r0);
	CU_ASSERT(metric("pnfs_mds_layoutcommits_total") > 0);
}

/* Close-to-open between two mounts; a file removed, renamed and truncated by one mount while the
 * other holds it open; directories, rename, symlinks, statfs. */
static void test_namespace_and_two_clients(void)
{
	char *out = NULL;
	int rc;

	NEED();
	rc = test_run(&out,
		      "M='%s'; N='%s'; bad=0\n"
		      "echo one > $M/note; [ \"$(cat $N/note)\" = one ] || { echo not-seen; bad=1; }\n"
		      "echo two > $N/note; [ \"$(cat $M/note)\" = two ] || { echo not-seen-back; bad=1; }\n"
		      "mkdir -p $M/d1/d2; mv $M/note $M/d1/d2/moved; [ -f $N/d1/d2/moved ] || { echo no-rename; bad=1; }\n"
		      "ln -s d2/moved $M/d1/sl; [ \"$(cat $N/d1/sl)\" = two ] || { echo no-symlink; bad=1; }\n"
		      "head -c 100000 /dev/urandom > $M/held; exec 3<$N/held\n"
		      "truncate -s 1000 $M/held; [ $(stat -c %%s $N/held) = 1000 ] || { echo no-truncate; bad=1; }\n"
		      "mv $M/held $M/held2; [ -e $N/held ] && { echo old-name-left; bad=1; }\n"
		      "rm $M/held2; [ -e $N/held2 ] && { echo not-removed; bad=1; }\n"
		      "exec 3<&-\n"
		      "rmdir $M/d1 2>/dev/null && { echo rmdir-nonempty; bad=1; }\n"
		      "rm -r $M/d1; [ -e $N/d1 ] && { echo rm-r-failed; bad=1; }\n"
		      "df -P $M | tail -1 | awk '{ if ($2 <= 0) exit 1 }' || { echo no-statfs; bad=1; }\n"
		      "touch -d '2020-01-02 03:04:05' $M/dd1; [ \"$(stat -c %%Y $N/dd1)\" = \"$(date -d '2020-01-02 03:04:05' +%%s)\" ] || { echo no-utimes; bad=1; }\n"
		      "chmod 600 $M/dd1; [ \"$(stat -c %%a $N/dd1)\" = 600 ] || { echo no-chmod; bad=1; }\n"
		      "echo bad=$bad\n",
		      mnt1, mnt2);
	if (rc != 0 || !out || !strstr(out, "bad=0"))
		fprintf(stderr, "\n  %s\n", out ? out : "");
	CU_ASSERT(out && strstr(out, "bad=0"));
	free(out);
}

/* A wrong server or path fails the mount at once, with its reason, exit status 1; bad usage 2. */
static void test_mount_errors(void)
{
	char *out = NULL;
	char bad[160];
	int rc;

	NEED();
	snprintf(bad, sizeof(bad), "pnfs://127.0.0.1:%d/", test_free_port());
	rc = run(&out, "'%s' --io-timeout 1 mount %s /tmp 2>&1", test_bin("pnfs"), bad);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT(out && strstr(out, "pnfs mount: 127.0.0.1:") && strstr(out, "onnect"));
	free(out);
	out = NULL;
	rc = test_run(&out, "'%s' %s mount %s/no/such/dir '%s' 2>&1", test_bin("pnfs"), devs, url, dir);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT(out && strstr(out, "/no/such/dir"));
	free(out);
	out = NULL;
	rc = run(&out, "'%s' mount %s 2>&1", test_bin("pnfs"), url);
	CU_ASSERT_EQUAL(rc, 2);
	free(out);
}

TEST_SUITE(client_mount, "integration/client_mount", suite_init, suite_clean,
	   { "files of many sizes by dd, cp and tar, through layouts", test_files_of_many_sizes },
	   { "namespace operations and two mounts", test_namespace_and_two_clients },
	   { "mount errors", test_mount_errors });
