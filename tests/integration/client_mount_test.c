/* pnfs mount: libpnfs as a FUSE file system over a real tgt lab and pnfs-mds. Files of many sizes
 * written by dd, cp and tar read back equal through the mount and through pnfs cp; two mounts
 * (two clients) see each other's data after close; the file data goes through layouts (the MDS's
 * own counters of MDS-path bytes stay flat); namespace operations (mkdir, rename, truncate,
 * symlink, rm) and a file removed or renamed while another mount holds it open; a wrong server
 * fails the mount on the terminal. */
#include "tests/harness.h"
#include "tests/integration/mount_lab.h"
#include "client/pnfs.h"

#include <errno.h>
#include <fcntl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct mount_lab ml;
static char mnt1[500], mnt2[500], mnt3[500], mnt4[500];
static int metrics_port;

static int suite_init(void)
{
	char args[128];

	metrics_port = test_free_port();
	snprintf(args, sizeof(args), "--lease-time 10 --grace-time 2 --metrics-port %d", metrics_port);
	mount_lab_up(&ml, args, "mount");
	if (!ml.mds)
		return 0;
	snprintf(mnt1, sizeof(mnt1), "%s/m1", ml.dir);
	snprintf(mnt2, sizeof(mnt2), "%s/m2", ml.dir);
	snprintf(mnt3, sizeof(mnt3), "%s/m3", ml.dir);
	snprintf(mnt4, sizeof(mnt4), "%s/m4", ml.dir);
	mkdir(mnt1, 0755);
	mkdir(mnt2, 0755);
	mkdir(mnt3, 0755);
	mkdir(mnt4, 0755);
	if (test_run(NULL, "'%s' %s mount %s/ '%s' 2>&1", test_bin("pnfs"), ml.devs, ml.url, mnt1) != 0 ||
	    test_run(NULL, "'%s' %s mount %s/ '%s' -o attr_timeout=0 2>&1", test_bin("pnfs"), ml.devs, ml.url,
		     mnt2) != 0)
		snprintf(ml.why, sizeof(ml.why), "pnfs mount failed");
	return 0;
}

static int suite_clean(void)
{
	if (ml.have_fuse) {
		(void)test_run(NULL, "fusermount3 -u '%s' 2>/dev/null; fusermount3 -u '%s' 2>/dev/null", mnt1, mnt2);
		(void)test_run(NULL, "fusermount3 -uz '%s' 2>/dev/null; fusermount3 -uz '%s' 2>/dev/null", mnt3, mnt4);
		(void)test_run(NULL, "fusermount3 -uz '%s/m5' 2>/dev/null", ml.dir);
	}
	mount_lab_down(&ml);
	return 0;
}

#define NEED() MOUNT_LAB_NEED(&ml)

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
	long long w0, r0;

	NEED();
	w0 = metric("pnfs_mds_data_written_bytes_total");
	r0 = metric("pnfs_mds_data_read_bytes_total");
	CU_ASSERT(w0 >= 0 && r0 >= 0);
	CU_ASSERT(mount_script_ok("set -e; D='%s'; M='%s'; N='%s'; mkdir -p $D/src/tree/a/b\n"
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
				  ml.dir, mnt1, mnt2, test_bin("pnfs"), ml.devs, ml.url));
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
	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; bad=0\n"
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
				  mnt1, mnt2));
}

/* Deep trees: a directory whose path on the server is longer than PATH_MAX is used through a
 * working directory inside it (the kernel only checks the path the application gave); a name over
 * NAME_MAX is ENAMETOOLONG, not an out-of-memory error. */
static void test_deep_paths(void)
{
	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; bad=0\n"
				  "c=$(printf 'd%%.0s' $(seq 200))\n"
				  /* chdir one level at a time (a shell's cd would pass the whole path to chdir) */
				  "python3 - \"$M\" \"$c\" <<'EOF' || bad=1\n"
				  "import os, sys, errno\n"
				  "os.chdir(sys.argv[1])\n"
				  "for i in range(24):\n"
				  "    os.mkdir(sys.argv[2]); os.chdir(sys.argv[2])\n"
				  "open('f', 'w').write('deep')\n"
				  "assert open('f').read() == 'deep'\n"
				  "os.rename('f', 'g'); os.unlink('g')\n"
				  "try:\n"
				  "    open('x' * 256, 'w'); sys.exit('a 256-byte name was created')\n"
				  "except OSError as e:\n"
				  "    assert e.errno == errno.ENAMETOOLONG, e\n"
				  "EOF\n"
				  "cd /; rm -r $M/$c || { echo rm-r-failed; bad=1; }; [ -e $N/$c ] && { echo left; bad=1; }\n"
				  "echo bad=$bad\n",
				  mnt1, mnt2));
}

/* A value of the mount's stats file (-o stats=FILE), -1 when absent. */
static long long stat_of(const char *file, const char *name)
{
	char *out = NULL;
	long long v = -1;
	if (test_run(&out, "sed -n 's/^%s //p' '%s'", name, file) == 0 && out && *out)
		v = strtoll(out, NULL, 10);
	free(out);
	return v;
}

/* A node is named by the path it was last looked up by. Here that is the other name of a hard
 * link (the cached entries dropped, then "hard" and "orig" looked up in that order), and that name
 * is removed: reads through "hard", whose entry the kernel still holds, read the file. Then "orig"
 * is removed and made again, as another file, through the other mount: "hard" still reads its own
 * bytes, not the new file's (the node's path names another fileid now). */
static void test_link_other_name_gone(void)
{
	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; W='%s/lo.want'; bad=0\n"
				  "look() { sync; echo 2 > /proc/sys/vm/drop_caches; stat $M/lo.hard $M/lo.orig > /dev/null; }\n"
				  "head -c 200000 /dev/urandom > $M/lo.orig; cp $M/lo.orig $W; ln $M/lo.orig $M/lo.hard\n"
				  "look; rm $M/lo.orig\n"
				  "cmp -s $M/lo.hard $W || { echo lost-by-rm; bad=1; }\n"
				  "ln $M/lo.hard $M/lo.orig; look\n"
				  "rm $N/lo.orig; echo another > $N/lo.orig\n"
				  "cmp -s $M/lo.hard $W || { echo other-file-read; bad=1; }\n"
				  "rm $M/lo.hard $M/lo.orig $W\n"
				  "echo bad=$bad\n",
				  mnt1, mnt2, ml.dir));
}

/* Hard links: through the mount (ln), seen by the other mount as one file with two names; and
 * libpnfs's pnfs_link refusing a directory and a name that exists. */
static void test_link(void)
{
	struct pnfs_context *ctx = NULL;
	struct pnfs_stat a, b;

	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; bad=0\n"
				  "head -c 300000 /dev/urandom > $M/orig; ln $M/orig $M/hard || { echo ln-failed; bad=1; }\n"
				  "[ $(stat -c %%h $N/orig) = 2 ] || { echo nlink-not-2; bad=1; }\n"
				  "[ $(stat -c %%i $N/orig) = $(stat -c %%i $N/hard) ] || { echo not-one-file; bad=1; }\n"
				  "cmp -s $M/orig $N/hard || { echo data-differs; bad=1; }\n"
				  "rm $M/orig; cmp -s $M/hard $N/hard && [ $(stat -c %%s $N/hard) = 300000 ] || { echo lost-by-rm; bad=1; }\n"
				  "[ $(stat -c %%h $N/hard) = 1 ] || { echo nlink-not-1; bad=1; }\n"
				  "mkdir $M/ldir; ln $M/ldir $M/ldir2 2>/dev/null && { echo dir-linked; bad=1; }\n"
				  "rm $M/hard; rmdir $M/ldir\n"
				  "echo bad=$bad\n",
				  mnt1, mnt2));

	{
		struct pnfs_opts o;
		pnfs_opts_init(&o);
		o.mds_io = 1; /* namespace calls only: no SAN needed */
		CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &ctx), 0);
	}
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(ctx, "127.0.0.1", ml.mds->port, "/"), 0);
	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "/linkdir", 0755), 0);
	{
		struct pnfs_fh *fh = NULL;
		CU_ASSERT_EQUAL(pnfs_open(ctx, "/linkdir/a", O_WRONLY | O_CREAT, 0644, &fh), 0);
		if (fh) {
			CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, "hello", 5, 0), 5);
			CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
		}
	}
	CU_ASSERT_EQUAL(pnfs_link(ctx, "/linkdir/a", "/linkdir/b"), 0);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "/linkdir/a", &a), 0);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "/linkdir/b", &b), 0);
	CU_ASSERT_EQUAL(a.fileid, b.fileid);
	CU_ASSERT_EQUAL(b.nlink, 2);
	CU_ASSERT_EQUAL(b.size, 5);
	CU_ASSERT_EQUAL(pnfs_link(ctx, "/linkdir/a", "/linkdir/b"), -EEXIST);
	CU_ASSERT_EQUAL(pnfs_link(ctx, "/linkdir", "/linkdir2"), -EISDIR);
	CU_ASSERT_EQUAL(pnfs_link(ctx, "/linkdir/none", "/linkdir/c"), -ENOENT);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/linkdir/a"), 0);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "/linkdir/b", &b), 0);
	CU_ASSERT_EQUAL(b.nlink, 1);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/linkdir/b"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/linkdir"), 0);
	(void)pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* Attribute caching: a change made through the other mount is seen after attr_timeout (mnt1: 1 s)
 * by stat, and at once by a new open (close-to-open), even on a mount caching attributes for an
 * hour. */
static void test_attr_timeout(void)
{
	NEED();
	CU_ASSERT(mount_script_ok("set -e; '%s' %s mount %s/ '%s' -o attr_timeout=3600 2>&1\n"
				  "M='%s'; N='%s'; L='%s'; D='%s'; bad=0\n"
				  "head -c 1000 /dev/urandom > $N/grow\n"
				  "[ $(stat -c %%s $M/grow) = 1000 ] && [ $(stat -c %%s $L/grow) = 1000 ] || { echo first-size; bad=1; }\n"
				  "head -c 50000 /dev/urandom > $D/grow; cp $D/grow $N/grow\n"
				  "cmp -s $D/grow $L/grow || { echo open-saw-old-data; bad=1; }\n"
				  "[ $(stat -c %%s $L/grow) = 50000 ] || { echo open-kept-old-size; bad=1; }\n"
				  "sleep 1.5; [ $(stat -c %%s $M/grow) = 50000 ] || { echo stat-after-timeout-old; bad=1; }\n"
				  "chmod 640 $N/grow; sleep 1.5; [ $(stat -c %%a $M/grow) = 640 ] || { echo mode-after-timeout-old; bad=1; }\n"
				  "rm $N/grow; sleep 1.5; [ -e $M/grow ] && { echo name-after-timeout; bad=1; }\n"
				  "fusermount3 -u $L\n"
				  "echo bad=$bad\n",
				  test_bin("pnfs"), ml.devs, ml.url, mnt3, mnt1, mnt2, mnt3, ml.dir));
}

/* Mount the lab a third time at mnt3, its stats file (-o stats) in the suite's folder as name. */
static void mount3_with_stats(char *stats, size_t len, const char *name)
{
	char *out = NULL;
	int rc;

	snprintf(stats, len, "%s/%s", ml.dir, name);
	rc = test_run(&out, "'%s' %s mount %s/ '%s' -o stats=%s 2>&1", test_bin("pnfs"), ml.devs, ml.url, mnt3, stats);
	if (rc != 0)
		fprintf(stderr, "\n  pnfs mount said: %s\n", out ? out : "");
	free(out);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* Many requests in flight: two dd readers of two files at once have reads of both files
 * outstanding together in libpnfs (the mount's stats file counts calls in flight); dd bs=1M
 * writes reach libpnfs as 1 MiB writes. */
static void test_concurrency_and_large_writes(void)
{
	char stats[600];
	char *out = NULL;
	long long w0;
	int rc;

	NEED();
	mount3_with_stats(stats, sizeof(stats), "stats");
	rc = test_run(&out, "dd if=/dev/urandom of='%s/par1' bs=1M count=40 2>&1 && "
		      "dd if=/dev/urandom of='%s/par2' bs=1M count=40 2>&1", mnt3, mnt3);
	CU_ASSERT_EQUAL(rc, 0);
	free(out);
	out = NULL;
	w0 = stat_of(stats, "writes_of_max_write");
	CU_ASSERT(w0 >= 80);               /* every dd write of 1 MiB arrived whole */
	CU_ASSERT(stat_of(stats, "write_max_bytes") == 1 << 20);
	CU_ASSERT(stat_of(stats, "writes_behind") >= 80); /* answered before they reached the LUNs */
	rc = test_run(&out,
		      "M='%s'; N='%s'; (dd if=$M/par1 of=/dev/null bs=1M 2>/dev/null & dd if=$M/par2 of=/dev/null bs=1M 2>/dev/null & wait)\n"
		      "cmp -s $M/par1 $N/par1 && cmp -s $M/par2 $N/par2 && echo same",
		      mnt3, mnt2);
	CU_ASSERT(rc == 0 && out && strstr(out, "same"));
	free(out);
	out = NULL;
	if (stat_of(stats, "files_reading_max") < 2 || stat_of(stats, "reads_in_flight_max") < 2)
		(void)test_run(NULL, "cat '%s' >&2", stats);
	CU_ASSERT(stat_of(stats, "files_reading_max") >= 2);
	CU_ASSERT(stat_of(stats, "reads_in_flight_max") >= 2);
	CU_ASSERT(stat_of(stats, "direct_bytes_read") >= 80ll << 20);
	CU_ASSERT_EQUAL(stat_of(stats, "mds_data_written"), 0);
	(void)test_run(NULL, "rm -f '%s/par1' '%s/par2'; fusermount3 -u '%s'", mnt3, mnt3, mnt3);
}

/* Prefetch: a file read in order is read ahead by the mount (its stats count reads answered from
 * chunks read ahead) and reads back equal; what the mount read ahead never outlives a change of
 * the file: a write through the mount ahead of a reader that holds the file open, a truncate and
 * extension under that reader, and a write by another client before a new open are all seen.
 * O_DIRECT reads are not read ahead. */
static void test_prefetch(void)
{
	char stats[600];
	long long chunks;

	NEED();
	mount3_with_stats(stats, sizeof(stats), "stats-pf");
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; D='%s'; bad=0\n"
				  "head -c 40M /dev/urandom > $D/pf.src; cp $D/pf.src $N/pf\n"
				  "cmp -s $D/pf.src $M/pf || { echo differs-read-in-order; bad=1; }\n"
				  "echo bad=$bad\n",
				  mnt3, mnt2, ml.dir));
	if (stat_of(stats, "reads_from_prefetch") <= 0)
		(void)test_run(NULL, "cat '%s' >&2", stats);
	CU_ASSERT(stat_of(stats, "prefetch_chunks") > 0);
	CU_ASSERT(stat_of(stats, "reads_from_prefetch") > 0);
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; D='%s'; bad=0\n"
				  "head -c 1M /dev/urandom > $D/pf.patch; cp $D/pf.src $D/pf.want\n"
				  "dd if=$D/pf.patch of=$D/pf.want bs=1M seek=12 conv=notrunc 2>/dev/null\n"
				  "exec 3<$M/pf\n"
				  "dd bs=1M count=8 <&3 > $D/pf.head 2>/dev/null\n"
				  "dd if=$D/pf.patch of=$M/pf bs=1M seek=12 conv=notrunc 2>/dev/null\n"
				  "cat <&3 > $D/pf.tail; exec 3<&-\n"
				  "cat $D/pf.head $D/pf.tail | cmp -s - $D/pf.want || { echo old-data-after-write-ahead-of-reader; bad=1; }\n"
				  /* truncated to 6 MiB and extended again under a reader at 4 MiB: zeros from 6 MiB */
				  "exec 3<$M/pf\n"
				  "dd bs=1M count=4 <&3 > $D/pf.head 2>/dev/null\n"
				  "truncate -s 6M $M/pf; truncate -s 40M $M/pf\n"
				  "cat <&3 > $D/pf.tail; exec 3<&-\n"
				  "{ head -c 6M $D/pf.want; head -c 34M /dev/zero; } > $D/pf.want2\n"
				  "cat $D/pf.head $D/pf.tail | cmp -s - $D/pf.want2 || { echo old-data-after-truncate; bad=1; }\n"
				  /* another client's write, then a new open here */
				  "cmp -s $D/pf.want2 $M/pf || { echo differs-after-truncate; bad=1; }\n"
				  "dd if=$D/pf.patch of=$N/pf bs=1M seek=30 conv=notrunc 2>/dev/null\n"
				  "dd if=$D/pf.patch of=$D/pf.want2 bs=1M seek=30 conv=notrunc 2>/dev/null\n"
				  "cmp -s $D/pf.want2 $M/pf || { echo old-data-after-other-client; bad=1; }\n"
				  "echo bad=$bad\n",
				  mnt3, mnt2, ml.dir));
	chunks = stat_of(stats, "prefetch_chunks");
	CU_ASSERT(mount_script_ok("M='%s'; D='%s'; bad=0\n"
				  "dd if=$M/pf of=$D/pf.direct bs=1M iflag=direct 2>/dev/null || { echo direct-read; bad=1; }\n"
				  "cmp -s $D/pf.want2 $D/pf.direct || { echo differs-direct; bad=1; }\n"
				  "echo bad=$bad\n",
				  mnt3, ml.dir));
	CU_ASSERT_EQUAL(stat_of(stats, "prefetch_chunks"), chunks);
	(void)test_run(NULL, "rm -f '%s/pf' '%s'/pf.*; fusermount3 -u '%s'", mnt3, ml.dir, mnt3);
}

/* Unmount with writes pending: a lazy unmount while a writer holds the file open, the writer
 * writing on and closing after it; and a mount ended by SIGTERM under a writer that has not closed
 * (the end of the session commits and closes the file). Another client reads every byte. */
static void test_unmount_with_writes_pending(void)
{
	NEED();
	if (!mount_script_ok("P='%s'; S='%s'; U='%s'; L='%s'; N='%s'; D='%s'; bad=0\n"
				  "head -c 12582912 /dev/urandom > $D/lazy.src; head -c 9437184 /dev/urandom > $D/term.src\n"
				  "$P $S mount $U/ $L -f > $D/lazy.log 2>&1 & pid=$!\n"
				  "for i in $(seq 100); do grep -q \" $L \" /proc/mounts && break; sleep 0.1; done\n"
				  "exec 3>$L/lazy; head -c 8388608 $D/lazy.src >&3\n"
				  "fusermount3 -uz $L || { echo no-lazy-umount; bad=1; }\n"
				  "tail -c +8388609 $D/lazy.src >&3; exec 3>&-\n"
				  "wait $pid || { echo lazy-exit-$?; bad=1; }\n"
				  "$P $S cp -q $U/lazy $D/lazy.back && cmp -s $D/lazy.src $D/lazy.back || { echo lazy-data-differs; bad=1; }\n"
				  "cmp -s $D/lazy.src $N/lazy || { echo lazy-other-mount-differs; bad=1; }\n"
				  "$P $S mount $U/ $L -f > $D/term.log 2>&1 & pid=$!\n"
				  "for i in $(seq 100); do grep -q \" $L \" /proc/mounts && break; sleep 0.1; done\n"
				  "exec 3>$L/term; cat $D/term.src >&3\n"
				  "kill -TERM $pid; wait $pid\n"
				  "exec 3>&-\n"
				  "grep -q \" $L \" /proc/mounts && { echo still-mounted; bad=1; fusermount3 -uz $L; }\n"
				  "$P $S cp -q $U/term $D/term.back && cmp -s $D/term.src $D/term.back || { echo term-data-differs; bad=1; }\n"
				  "rm -f $N/lazy $N/term\n"
				  "echo bad=$bad\n",
				  test_bin("pnfs"), ml.devs, ml.url, mnt4, mnt2, ml.dir)) {
		CU_FAIL("a lazy unmount or a SIGTERM under a writer lost data");
		(void)test_run(NULL, "cat '%s/lazy.log' '%s/term.log' >&2", ml.dir, ml.dir);
	}
}

/* An open file whose last name went (pjdfstest unlink/14): fstat says nlink 0, and the file is
 * still read and written through the descriptor; a file with another name left says 1; a file
 * open on one mount and removed through the other says 0 too. */
static void test_open_file_unlinked(void)
{
	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; bad=0\n"
				  "python3 - \"$M\" \"$N\" <<'EOF' || bad=1\n"
				  "import os, sys\n"
				  "m, n = sys.argv[1], sys.argv[2]\n"
				  "fd = os.open(m + '/gone', os.O_RDWR | os.O_CREAT, 0o644)\n"
				  "os.write(fd, b'x' * 5000)\n"
				  "assert os.fstat(fd).st_nlink == 1, os.fstat(fd).st_nlink\n"
				  "os.unlink(m + '/gone')\n"
				  "assert os.fstat(fd).st_nlink == 0, 'after unlink: nlink %%d' %% os.fstat(fd).st_nlink\n"
				  "os.pwrite(fd, b'y' * 3000, 5000)\n"
				  "assert os.pread(fd, 8000, 0) == b'x' * 5000 + b'y' * 3000\n"
				  "assert os.fstat(fd).st_size == 8000\n"
				  "assert not os.path.exists(n + '/gone')\n"
				  "os.close(fd)\n"
				  "fd = os.open(m + '/two', os.O_RDWR | os.O_CREAT, 0o644)\n"
				  "os.link(m + '/two', m + '/two-b'); os.unlink(m + '/two')\n"
				  "assert os.fstat(fd).st_nlink == 1, 'one name left: nlink %%d' %% os.fstat(fd).st_nlink\n"
				  "os.close(fd); os.unlink(m + '/two-b')\n"
				  "open(m + '/other', 'w').write('held')\n"
				  "fd = os.open(n + '/other', os.O_RDONLY)\n"  /* n: no attribute cache */
				  "os.unlink(m + '/other')\n"
				  "assert os.fstat(fd).st_nlink == 0, 'removed elsewhere: nlink %%d' %% os.fstat(fd).st_nlink\n"
				  "assert os.pread(fd, 10, 0) == b'held'\n"
				  "os.close(fd)\n"
				  "EOF\n"
				  "echo bad=$bad\n",
				  mnt1, mnt2));
}

/* Write-behind: writes are answered before they reach the LUNs, so a write that fails later
 * (the pool is full: 4 LUNs of 96M) is reported at a later write, fsync(2) or close(2), never
 * lost: dd of more than the pool fails, with ENOSPC, and the space comes back with rm. */
static void test_write_behind_error(void)
{
	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; bad=0\n"
				  "python3 - \"$M\" <<'EOF' || bad=1\n"
				  "import os, sys, errno\n"
				  "fd = os.open(sys.argv[1] + '/full', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
				  "buf = b'z' * (1 << 20)\n"
				  "err = None\n"
				  "try:\n"
				  "    for i in range(600):\n"
				  "        os.write(fd, buf)\n"
				  "    os.fsync(fd)\n"
				  "except OSError as e:\n"
				  "    err = e.errno\n"
				  "try:\n"
				  "    os.close(fd)\n"
				  "except OSError as e:\n"
				  "    err = err or e.errno\n"
				  "assert err == errno.ENOSPC, 'no ENOSPC from 600 MiB into a 384 MiB pool: %%s' %% err\n"
				  "EOF\n"
				  "rm $M/full || { echo rm-failed; bad=1; }\n"
				  "dd if=/dev/zero of=$M/after bs=1M count=8 conv=fsync 2>/dev/null || { echo space-not-back; bad=1; }\n"
				  "rm -f $M/after\n"
				  "echo bad=$bad\n",
				  mnt1));
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
	rc = test_run(&out, "'%s' %s mount %s/no/such/dir '%s' 2>&1", test_bin("pnfs"), ml.devs, ml.url, ml.dir);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT(out && strstr(out, "/no/such/dir"));
	free(out);
	out = NULL;
	rc = run(&out, "'%s' mount %s 2>&1", test_bin("pnfs"), ml.url);
	CU_ASSERT_EQUAL(rc, 2);
	free(out);
}

/* mount -t fuse.pnfs and fstab: the pnfs program run as mount.fuse.pnfs, with mount(8)'s calling
 * convention (SOURCE DIR -o OPTS), the client's devices among the options and mount(8)'s own
 * options (rw, noauto, _netdev, user) dropped. A file written through that mount reads back equal
 * through pnfs cat, and one put with pnfs reads back equal through the mount; the mount shows the
 * server's URL as its source. Bad arguments are usage errors (status 2) that name what is wrong. */
static void test_mount_helper(void)
{
	char helper[600], dir[520], opts[2048] = "rw,noauto,_netdev,user,attr_timeout=0";
	char *out = NULL;
	size_t n = strlen(opts);
	int rc;

	NEED();
	for (int i = 0; i < ml.lab->nluns; i++)
		n += (size_t)snprintf(opts + n, sizeof(opts) - n, ",device=%s", ml.lab->urls[i]);
	snprintf(helper, sizeof(helper), "%s/mount.fuse.pnfs", ml.dir);
	snprintf(dir, sizeof(dir), "%s/m5", ml.dir);
	(void)unlink(helper);
	CU_ASSERT_EQUAL_FATAL(symlink(test_bin("pnfs"), helper), 0);
	mkdir(dir, 0755);
	rc = test_run(&out, "'%s' %s/ '%s' -o %s 2>&1", helper, ml.url, dir, opts);
	if (rc != 0 && out)
		fprintf(stderr, "\n  mount.fuse.pnfs: %s\n", out);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	free(out);
	out = NULL;
	CU_ASSERT(mount_script_ok("H='%s'; D='%s'; P='%s'; U='%s'; bad=0\n"
				  "grep -q \" $H fuse.pnfs \" /proc/mounts || { echo not-in-proc-mounts; bad=1; }\n"
				  "grep \" $H fuse.pnfs \" /proc/mounts | grep -q \"^$U/ \" || { echo source-not-url; bad=1; }\n"
				  "head -c 3000000 /dev/urandom > $D/helper.src\n"
				  "cp $D/helper.src $H/helper.f || { echo cp-in; bad=1; }\n"
				  "\"$P\" %s cat $U/helper.f > $D/helper.back || { echo cat; bad=1; }\n"
				  "cmp -s $D/helper.src $D/helper.back || { echo differs-through-pnfs; bad=1; }\n"
				  "\"$P\" %s put $D/helper.src $U/helper.g || { echo put; bad=1; }\n"
				  "cmp -s $D/helper.src $H/helper.g || { echo differs-through-mount; bad=1; }\n"
				  "rm -f $H/helper.f $H/helper.g\n"
				  "fusermount3 -u $H || { echo umount; bad=1; }\n"
				  "echo bad=$bad\n",
				  dir, ml.dir, test_bin("pnfs"), ml.url, ml.devs, ml.devs));
	/* bad arguments: exit status 2 and the words that name the problem ("%U": the lab's URL) */
	{
		static const struct {
			const char *args, *says, *also;
		} bad[] = {
			{ "%U/", "mount.fuse.pnfs: no mount point given", NULL },
			{ "/dev/sdz %D", "source '/dev/sdz' is not a pnfs://", NULL },
			{ "%U/ %D -t ext4", "type 'ext4'", NULL },
			{ "%U/ %D -o io_timeout=soon", "io_timeout takes seconds", "'soon'" },
			{ "%U/ %D -N 4242", "namespace", NULL },
		};
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			char args[1000] = "";
			for (const char *a = bad[k].args; *a; a++) {
				size_t n = strlen(args);
				if (a[0] == '%' && (a[1] == 'U' || a[1] == 'D')) {
					snprintf(args + n, sizeof(args) - n, "%s", a[1] == 'U' ? ml.url : dir);
					a++;
				} else if (n + 1 < sizeof(args)) {
					args[n] = *a;
					args[n + 1] = 0;
				}
			}
			rc = test_run(&out, "'%s' %s 2>&1", helper, args);
			if (rc != 2 || !out || !strstr(out, bad[k].says) || (bad[k].also && !strstr(out, bad[k].also)))
				fprintf(stderr, "\n  mount.fuse.pnfs %s: exit %d, said: %s\n", args, rc, out ? out : "");
			CU_ASSERT_EQUAL(rc, 2);
			CU_ASSERT(out && strstr(out, bad[k].says) && (!bad[k].also || strstr(out, bad[k].also)));
			free(out);
			out = NULL;
		}
	}
	/* -f (mount -f, "fake"): the arguments are checked, nothing is mounted */
	rc = test_run(&out, "'%s' %s/ '%s' -f -o %s 2>&1; echo rc=$?; echo mounted=$(grep -c \" %s fuse.pnfs \" /proc/mounts)",
		      helper, ml.url, dir, opts, dir);
	CU_ASSERT(out && strstr(out, "rc=0\n") && strstr(out, "mounted=0\n"));
	free(out);
	out = NULL;
	/* a server that is not there: a failure (1) with its reason, not a usage error */
	rc = test_run(&out, "'%s' pnfs://127.0.0.1:%d/ '%s' -o io_timeout=1 2>&1", helper, test_free_port(), dir);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT(out && strstr(out, "onnect"));
	free(out);
	(void)unlink(helper);
}

/* FIFOs, sockets, device files and mknod(2) of a regular file: made on one mount, seen with their
 * type, mode and device numbers on the other and through libpnfs; a FIFO carries bytes between two
 * processes on the same mount (its data never reaches the server). Owners changed by root (chown,
 * chgrp) are seen by the other mount. */
static void test_special_files(void)
{
	struct pnfs_context *ctx = NULL;
	struct pnfs_stat st;
	char *out = NULL;
	int rc;

	NEED();
	CU_ASSERT(mount_script_ok("M='%s'; N='%s'; bad=0\n"
				  "mkdir $M/sp; mkfifo -m 0640 $M/sp/fifo || { echo mkfifo-failed; bad=1; }\n"
				  "[ \"$(stat -c '%%F %%a' $N/sp/fifo)\" = 'fifo 640' ] || { echo fifo-type: $(stat -c '%%F %%a' $N/sp/fifo); bad=1; }\n"
				  "mknod -m 0600 $M/sp/chr c 1 3 || { echo mknod-c-failed; bad=1; }\n"
				  "[ \"$(stat -c '%%F %%a %%t %%T' $N/sp/chr)\" = 'character special file 600 1 3' ] || "
				  "{ echo chr: $(stat -c '%%F %%a %%t %%T' $N/sp/chr); bad=1; }\n"
				  "mknod $M/sp/blk b 7 200 || { echo mknod-b-failed; bad=1; }\n"
				  "[ \"$(stat -c '%%F %%t %%T' $N/sp/blk)\" = 'block special file 7 c8' ] || "
				  "{ echo blk: $(stat -c '%%F %%t %%T' $N/sp/blk); bad=1; }\n"
				  "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' $M/sp/sock || "
				  "{ echo bind-failed; bad=1; }\n"
				  "[ \"$(stat -c '%%F' $N/sp/sock)\" = 'socket' ] || { echo sock: $(stat -c '%%F' $N/sp/sock); bad=1; }\n"
				  "python3 -c 'import os,sys; os.mknod(sys.argv[1], 0o100604)' $M/sp/reg || { echo mknod-reg-failed; bad=1; }\n"
				  "[ \"$(stat -c '%%F %%a %%s' $N/sp/reg)\" = 'regular empty file 604 0' ] || "
				  "{ echo reg: $(stat -c '%%F %%a %%s' $N/sp/reg); bad=1; }\n"
				  "mkfifo $M/sp/fifo 2>/dev/null && { echo fifo-made-twice; bad=1; }\n"
				  "( echo through-the-fifo > $M/sp/fifo & ); [ \"$(timeout 20 cat $M/sp/fifo)\" = through-the-fifo ] || "
				  "{ echo fifo-data; bad=1; }\n"
				  "[ $(ls $N/sp | wc -l) = 5 ] || { echo ls: $(ls $N/sp); bad=1; }\n"
				  "chown 1234:567 $M/sp/reg $M/sp/fifo || { echo chown-failed; bad=1; }\n"
				  "[ \"$(stat -c '%%u %%g' $N/sp/reg) $(stat -c '%%u %%g' $N/sp/fifo)\" = '1234 567 1234 567' ] || "
				  "{ echo owners: $(stat -c '%%u %%g' $N/sp/reg $N/sp/fifo); bad=1; }\n"
				  "chgrp 89 $M/sp/reg && [ \"$(stat -c '%%u %%g' $N/sp/reg)\" = '1234 89' ] || { echo chgrp; bad=1; }\n"
				  "echo bad=$bad\n",
				  mnt1, mnt2));

	{
		struct pnfs_opts o;
		pnfs_opts_init(&o);
		o.mds_io = 1;
		CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &ctx), 0);
	}
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(ctx, "127.0.0.1", ml.mds->port, "/"), 0);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "/sp/chr", &st), 0);
	CU_ASSERT_EQUAL(st.type, PNFS_CHR);
	CU_ASSERT_EQUAL(st.rdev_major, 1);
	CU_ASSERT_EQUAL(st.rdev_minor, 3);
	CU_ASSERT_EQUAL(pnfs_mknod(ctx, "/sp/lib-fifo", S_IFIFO | 0644, 0, 0), 0);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "/sp/lib-fifo", &st), 0);
	CU_ASSERT_EQUAL(st.type, PNFS_FIFO);
	CU_ASSERT_EQUAL(st.mode, 0644);
	CU_ASSERT_EQUAL(pnfs_mknod(ctx, "/sp/lib-fifo", S_IFIFO | 0644, 0, 0), -EEXIST);
	CU_ASSERT_EQUAL(pnfs_mknod(ctx, "/sp/lib-reg", S_IFREG | 0644, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_mknod(ctx, "/sp/none/x", S_IFSOCK | 0644, 0, 0), -ENOENT);
	pnfs_context_destroy(ctx);
	rc = test_run(&out, "rm -r '%s/sp' && ! ls '%s/sp' 2>/dev/null", mnt1, mnt2);
	CU_ASSERT_EQUAL(rc, 0);
	free(out);
}

TEST_SUITE(client_mount, "integration/client_mount", suite_init, suite_clean,
	   { "files of many sizes by dd, cp and tar, through layouts", test_files_of_many_sizes },
	   { "namespace operations and two mounts", test_namespace_and_two_clients },
	   { "hard links", test_link },
	   { "a hard link whose looked-up name went", test_link_other_name_gone },
	   { "special files and owners", test_special_files },
	   { "deep paths and long names", test_deep_paths },
	   { "attribute cache timeout and close-to-open", test_attr_timeout },
	   { "two readers at once, 1 MiB writes", test_concurrency_and_large_writes },
	   { "prefetch of a file read in order, dropped by changes", test_prefetch },
	   { "unmount with writes pending", test_unmount_with_writes_pending },
	   { "fstat of an open file after its last name went", test_open_file_unlinked },
	   { "a write-behind failure reaches the writer", test_write_behind_error },
	   { "mount errors", test_mount_errors },
	   { "mount.fuse.pnfs: the mount(8) helper", test_mount_helper });
