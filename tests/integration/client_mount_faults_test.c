/* pnfs mount when the server or the SAN goes away: pnfs-mds killed (SIGKILL) and not started again
 * gives the application an error (not a hang) for a lookup and for fsync, and the mount can still
 * be unmounted; pnfs-mds killed and started again under a writer that fsyncs each record loses
 * no record fsync acknowledged; tgtd killed under a reader gives the read an error, not wrong bytes.
 * The watchdogs below only turn a hang into a failure. */
#include "tests/harness.h"
#include "tests/integration/mount_lab.h"
#include "tests/integration/wait.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static struct mount_lab ml;
static char mnt[500];

static int suite_init(void)
{
	mount_lab_up(&ml, "--lease-time 10 --grace-time 2 --lun-timeout 2", "mountfaults");
	if (!ml.mds)
		return 0;
	snprintf(mnt, sizeof(mnt), "%s/m", ml.dir);
	mkdir(mnt, 0755);
	return 0;
}

static int suite_clean(void)
{
	if (ml.have_fuse) {
		(void)test_run(NULL, "fusermount3 -uz '%s' 2>/dev/null", mnt);
		if (ml.mds && ml.mds->pid <= 0)
			(void)tmds_start(ml.mds);
	}
	mount_lab_down(&ml);
	return 0;
}

#define NEED() MOUNT_LAB_NEED(&ml)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for a child up to secs; 0 with its status, -1 (child killed with SIGKILL) on a hang. */
static int wait_bounded(pid_t pid, int secs, int *status)
{
	int ended = 0;

	TW_WAIT_UNTIL(ended || (ended = waitpid(pid, status, WNOHANG) == pid), secs * 1000, 20);
	if (ended)
		return 0;
	kill(pid, SIGKILL);
	(void)waitpid(pid, status, 0);
	return -1;
}

static int mount_it(const char *extra)
{
	return test_run(NULL, "'%s' %s %s mount %s/ '%s' 2>&1", test_bin("pnfs"), ml.devs, extra, ml.url, mnt);
}

/* Unmount (bounded by a watchdog); 0 when pnfs umount returned 0 and the mount is gone. */
static int umount_bounded(void)
{
	return test_run(NULL, "timeout -s KILL 60 '%s' umount '%s' && ! grep -q ' %s ' /proc/mounts",
			test_bin("pnfs"), mnt, mnt);
}

/* What the child reports: the errno of each step (0: it succeeded) and how long it took. */
struct outcome {
	int stat_err, write_err, fsync_err;
	double stat_s, fsync_s;
};

/* pnfs-mds killed and not started again: stat of a new name and fsync of a file written through
 * layouts return an error in a child before the watchdog, and the mount unmounts. */
static void test_killed_mds_eio(void)
{
	char path[600], *buf = malloc(MIB);
	struct outcome oc;
	int fd, p[2], status = 0;
	pid_t pid;

	NEED();
	CU_ASSERT_EQUAL_FATAL(mount_it("--io-timeout 2"), 0);
	snprintf(path, sizeof(path), "%s/held", mnt);
	test_fill_random(buf, MIB, 290);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, buf, MIB, 0), MIB);
	CU_ASSERT_EQUAL(fsync(fd), 0);
	CU_ASSERT_EQUAL(tmds_stop(ml.mds, SIGKILL), 128 + SIGKILL);
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct stat st;
		char fresh[600];
		double t;

		close(p[0]);
		memset(&oc, 0, sizeof(oc));
		snprintf(fresh, sizeof(fresh), "%s/never-seen", mnt);
		t = now_s();
		oc.stat_err = stat(fresh, &st) == 0 ? 0 : errno;
		oc.stat_s = now_s() - t;
		t = now_s();
		oc.write_err = pwrite(fd, buf, MIB, MIB) == MIB ? 0 : errno;
		oc.fsync_err = fsync(fd) == 0 ? 0 : errno;
		oc.fsync_s = now_s() - t;
		if (write(p[1], &oc, sizeof(oc)) != sizeof(oc))
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	if (wait_bounded(pid, 60, &status) != 0)
		CU_FAIL("stat or fsync did not return within 60 s of the server's death");
	memset(&oc, 0, sizeof(oc));
	CU_ASSERT_EQUAL(read(p[0], &oc, sizeof(oc)), (ssize_t)sizeof(oc));
	close(p[0]);
	fprintf(stderr, "\n  server killed: stat %s after %.1f s; write %s; fsync %s after %.1f s\n",
		strerror(oc.stat_err), oc.stat_s, strerror(oc.write_err), strerror(oc.fsync_err), oc.fsync_s);
	/* stat of a name never looked up must ask the server: an I/O error, and not "no such file"
	 * nor a connection's errno; the write may be taken (through the layout), its fsync not */
	CU_ASSERT_EQUAL(oc.stat_err, EIO);
	CU_ASSERT(oc.write_err == EIO || (oc.write_err == 0 && oc.fsync_err == EIO));
	close(fd);
	CU_ASSERT_EQUAL(umount_bounded(), 0);
	(void)test_run(NULL, "fusermount3 -uz '%s' 2>/dev/null", mnt);
	CU_ASSERT_EQUAL(tmds_start(ml.mds), 0);
	free(buf);
}

/* Record i of the writer: 1 MiB of bytes from seed 1000 + i. */
static void record(char *buf, int i)
{
	test_fill_random(buf, MIB, 1000 + (uint64_t)i);
}

/* How many of the first n records of the file differ from what the writer wrote. */
static int bad_records(const char *file, int n)
{
	char *buf = malloc(MIB), *back = malloc(MIB);
	int fd = open(file, O_RDONLY), bad = 0;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(buf && back);
	for (int i = 0; i < n; i++) {
		record(buf, i);
		if (pread(fd, back, MIB, (off_t)i * MIB) != MIB || memcmp(buf, back, MIB) != 0)
			bad++;
	}
	close(fd);
	free(buf);
	free(back);
	return bad;
}

/* pnfs-mds killed (SIGKILL) under a writer of 1 MiB records, each fsynced, and started again on the
 * same pool 1.5 s later: the writer rides through (the client retries), and every record whose
 * fsync returned reads back exactly, through the mount and through pnfs cp. */
static void test_mds_restart_under_writer(void)
{
	enum { RECORDS = 40, KILL_AFTER = 6 };
	char path[600], local[600], *buf = malloc(MIB), *back = malloc(MIB);
	int p[2], status = 0, acked = 0, rc, werr = 0;
	long long off;
	double t0 = 0;
	FILE *in;
	pid_t pid;

	NEED();
	CU_ASSERT_EQUAL_FATAL(mount_it(""), 0);
	snprintf(path, sizeof(path), "%s/records", mnt);
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		close(p[0]);
		if (fd < 0)
			_exit(2);
		for (int i = 0; i < RECORDS; i++) {
			record(buf, i);
			if (pwrite(fd, buf, MIB, (off_t)i * MIB) != MIB || fsync(fd) != 0) {
				dprintf(p[1], "error %d %d\n", i, errno);
				_exit(1);
			}
			dprintf(p[1], "%lld\n", (long long)i * MIB);
		}
		_exit(close(fd) == 0 ? 0 : 1);
	}
	close(p[1]);
	in = fdopen(p[0], "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	{
		char line[128];
		while (fgets(line, sizeof(line), in)) {
			int ei, en;
			if (sscanf(line, "error %d %d", &ei, &en) == 2) {
				fprintf(stderr, "\n  writer: record %d: %s\n", ei, strerror(en));
				werr = en;
				break;
			}
			off = strtoll(line, NULL, 10);
			CU_ASSERT_EQUAL(off, (long long)acked * MIB);
			acked++;
			if (acked == KILL_AFTER) {
				CU_ASSERT_EQUAL(tmds_stop(ml.mds, SIGKILL), 128 + SIGKILL);
				/* Time passes on purpose: the server stays dead for 1.5 s while the
				 * writer's fsync retries, which is what this test is about. */
				usleep(1500 * 1000);
				CU_ASSERT_EQUAL(tmds_start(ml.mds), 0);
				t0 = now_s();
			}
		}
	}
	fclose(in);
	if (wait_bounded(pid, 120, &status) != 0)
		CU_FAIL("the writer did not end within 120 s");
	fprintf(stderr, "\n  %d records acknowledged; the writer ended %.1f s after the restart\n", acked,
		t0 ? now_s() - t0 : 0.0);
	CU_ASSERT_EQUAL(werr, 0);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT_EQUAL(acked, RECORDS);
	/* every acknowledged record, through the mount */
	CU_ASSERT_EQUAL(bad_records(path, acked), 0);
	/* and through pnfs cp */
	snprintf(local, sizeof(local), "%s/records.back", ml.dir);
	rc = test_run(NULL, "'%s' %s cp -q %s/records '%s'", test_bin("pnfs"), ml.devs, ml.url, local);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(bad_records(local, acked), 0);
	unlink(local);
	(void)unlink(path);
	CU_ASSERT_EQUAL(umount_bounded(), 0);
	(void)test_run(NULL, "fusermount3 -uz '%s' 2>/dev/null", mnt);
	free(buf);
	free(back);
}

/* tgtd killed (SIGKILL) under a reader of a file through layouts: the read returns an error before
 * the watchdog, and no byte it returned differs from the file's. The client gives up on the LUNs
 * after --io-timeout and falls back to the MDS path, which gives up after the server's
 * --lun-timeout (2 s here; at its default of 30 s per command the read outlasts the watchdog). */
static void test_lost_lun_eio(void)
{
	enum { SIZE = 32 * MIB };
	char src[600], path[600], *buf = malloc(SIZE), *back = malloc(SIZE);
	int p[2], q[2], status = 0;
	struct {
		long long got;
		int err;
		double secs;
	} r;
	pid_t pid;

	NEED();
	snprintf(src, sizeof(src), "%s/lun.src", ml.dir);
	test_fill_random(buf, SIZE, 310);
	{
		FILE *f = fopen(src, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(fwrite(buf, 1, SIZE, f), (size_t)SIZE);
		fclose(f);
	}
	/* written by another client, so that the mount reads it from the LUNs, not from its cache */
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "'%s' %s cp -q '%s' %s/lun.bin", test_bin("pnfs"), ml.devs, src, ml.url), 0);
	CU_ASSERT_EQUAL_FATAL(mount_it("--io-timeout 2"), 0);
	snprintf(path, sizeof(path), "%s/lun.bin", mnt);
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(q), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDONLY);
		ssize_t n = 0;
		double t;
		char k;

		close(p[0]);
		close(q[1]);
		memset(&r, 0, sizeof(r));
		if (fd < 0)
			_exit(2);
		/* the first MiB read while the target is up, then wait for the parent to kill it */
		if (read(fd, back, MIB) != MIB)
			_exit(3);
		r.got = MIB;
		if (write(p[1], "r", 1) != 1)
			_exit(3);
		/* the parent kills tgtd meanwhile (it waits for our 'r') and says so */
		if (read(q[0], &k, 1) != 1)
			_exit(3);
		t = now_s();
		while (r.got < SIZE && (n = read(fd, back + r.got, SIZE - (size_t)r.got)) > 0)
			r.got += n;
		r.err = n < 0 ? errno : 0;
		r.secs = now_s() - t;
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(3);
		_exit(memcmp(back, buf, (size_t)r.got) == 0 ? 0 : 4);
	}
	close(p[1]);
	close(q[0]);
	{
		char c;
		CU_ASSERT_EQUAL_FATAL(read(p[0], &c, 1), 1);
	}
	CU_ASSERT_EQUAL(lab_kill_target(ml.lab), 0);
	CU_ASSERT_EQUAL(write(q[1], "k", 1), 1);
	close(q[1]);
	if (wait_bounded(pid, 90, &status) != 0)
		CU_FAIL("the read did not return within 90 s of the target's death");
	memset(&r, 0, sizeof(r));
	CU_ASSERT_EQUAL(read(p[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	close(p[0]);
	fprintf(stderr, "\n  target killed: read %s after %.1f s, %lld of %d bytes read\n", strerror(r.err), r.secs,
		r.got, SIZE);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* 4: a byte read differs */
	CU_ASSERT_EQUAL(r.err, EIO);
	CU_ASSERT(r.got < SIZE);
	CU_ASSERT_EQUAL(umount_bounded(), 0);
	(void)test_run(NULL, "fusermount3 -uz '%s' 2>/dev/null", mnt);
	CU_ASSERT_EQUAL(lab_restart(ml.lab), 0);
	unlink(src);
	free(buf);
	free(back);
}

TEST_SUITE(client_mount_faults, "integration/client_mount_faults", suite_init, suite_clean,
	   { "killed_mds_eio", test_killed_mds_eio },
	   { "mds_restart_under_writer", test_mds_restart_under_writer },
	   { "lost_lun_eio", test_lost_lun_eio });
