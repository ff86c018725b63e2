/* The engine on real LUNs: 64 MiB of random data written through a 4-way stripe with a 64 KiB unit
 * and read back equal, every byte found where RFC 5663 puts it in each LUN's backing file; a LUN
 * whose tgtd is killed mid-run (one lab per LUN, so only that target dies) fails its commands within
 * the command timeout with errors naming it, while the other LUNs' runs complete; and a writer whose
 * target is killed under it fails with a reason, never by SIGPIPE. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/integration/lab_stripe.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define UNIT (64ull << 10)
#define START MIB

struct io_state {
	int done, failed;
	int first_status;
	char first_msg[700];
	char first_dev[512];
	int64_t last_ms;
	int leaf;
};

static void io_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct io_state *s = priv;
	(void)ctx;
	s->done++;
	s->last_ms = bmt_now_ms();
	if (status < 0) {
		if (!s->failed) {
			s->first_status = status;
			snprintf(s->first_msg, sizeof(s->first_msg), "%s", res->message ? res->message : "");
			snprintf(s->first_dev, sizeof(s->first_dev), "%s", res->dev_name ? res->dev_name : "");
			s->leaf = res->leaf;
		}
		s->failed++;
	}
}

/* where byte b of the stripe lives: LUN index and offset in its backing file */
static void locate(uint64_t b, unsigned n, unsigned *lun, uint64_t *off)
{
	uint64_t unit_no = b / UNIT;
	*lun = (unsigned)(unit_no % n);
	*off = START + (unit_no / n) * UNIT + b % UNIT;
}

static void test_roundtrip_64m(void)
{
	const uint64_t total = 64 * MIB, req = 4 * MIB;
	struct test_lab *lab = lab_up(4, "20M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct io_state st = { 0 };
	unsigned char *src = malloc(total), *back = malloc(total), *file = malloc(16 * MIB);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	vol = lab_stripe_up(&lab, 1, (uint64_t)getpid(), 20000, START, 16 * MIB, UNIT, &ctx);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_size_bytes(vol, 8), total);

	/* all 64 MiB in flight at once, 16 requests of 4 MiB */
	test_fill_random(src, total, 4242);
	for (uint64_t off = 0; off < total; off += req) {
		struct iovec iov[2] = { { src + off, req / 2 }, { src + off + req / 2, req / 2 } };
		CU_ASSERT_EQUAL(blkmap_vol_writev_async(vol, off, iov, 2, io_cb, &st), 0);
	}
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);
	CU_ASSERT_EQUAL(st.done, 16);
	CU_ASSERT_EQUAL(st.failed, 0);
	memset(back, 0, total);
	CU_ASSERT_EQUAL(blkmap_vol_pread(vol, back, total, 0), 0);
	CU_ASSERT(memcmp(src, back, total) == 0);

	/* the bytes are where the stripe formula says, in each LUN's backing file */
	for (unsigned l = 0; l < 4; l++) {
		uint64_t bad = 0;
		CU_ASSERT_EQUAL_FATAL(bmt_read_file(lab->files[l], file, 16 * MIB, START), 0);
		for (uint64_t b = 0; b < total; b += UNIT) {
			unsigned lun;
			uint64_t off;
			locate(b, 4, &lun, &off);
			if (lun == l && memcmp(file + (off - START), src + b, UNIT) != 0)
				bad++;
		}
		CU_ASSERT_EQUAL(bad, 0);
	}
	/* an unaligned range is refused with a reason, nothing sent */
	CU_ASSERT_EQUAL(blkmap_vol_pread(vol, back, 1000, 0), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "not whole 512-byte blocks"));
	CU_ASSERT_EQUAL(blkmap_vol_pread(vol, back, 4096, total), -ERANGE);
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	free(src);
	free(back);
	free(file);
	lab_down(lab);
}

/* keeps `window` writes in flight until `total` were submitted, cycling over the volume */
struct pump {
	struct io_state st;
	struct blkmap_vol *vol;
	unsigned char *src;
	uint64_t vol_bytes, req;
	int submitted, total;
};

static void pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv);

static void pump_one(struct pump *p)
{
	uint64_t off = ((uint64_t)p->submitted * p->req) % p->vol_bytes;
	struct iovec iov = { p->src + off, p->req };
	if (blkmap_vol_writev_async(p->vol, off, &iov, 1, pump_cb, p) == 0)
		p->submitted++;
	else
		p->total = p->submitted; /* stop: counted as a failure below */
}

static void pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct pump *p = priv;
	io_cb(ctx, status, res, &p->st);
	if (p->submitted < p->total)
		pump_one(p);
}

static void test_vanished_lun(void)
{
	const unsigned timeout_ms = 2000;
	struct test_lab *labs[4] = { 0 };
	struct blkmap_ctx *ctx;
	struct pump p = { 0 };
	unsigned char *file = malloc(8 * MIB);
	int64_t t_kill;
	int victim = 1, done_at_kill;

	/* one lab per LUN: killing one tgtd takes exactly one LUN away */
	lab_stripe_labs_up(labs, 4, "8M");
	p.vol = lab_stripe_up(labs, 4, (uint64_t)getpid() + 7, timeout_ms, START, 6 * MIB, UNIT, &ctx);
	p.vol_bytes = 24 * MIB;
	p.req = MIB;
	p.total = 100000; /* until the kill, then a bounded tail */
	p.src = malloc(p.vol_bytes);
	test_fill_random(p.src, p.vol_bytes, 99);

	/* writes keep flowing (16 in flight); the victim's target dies in the middle of them */
	for (int i = 0; i < 16; i++)
		pump_one(&p);
	while (p.st.done < 40)
		CU_ASSERT_EQUAL_FATAL(blkmap_run_once(ctx, 1000), 0);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(labs[victim]), 0);
	t_kill = bmt_now_ms();
	done_at_kill = p.st.done;
	p.total = p.submitted; /* what is in flight now finishes; nothing new */
	CU_ASSERT_EQUAL(blkmap_wait_idle(ctx), 0);

	/* no hang: everything in flight at the kill completed within the timeout (plus loop slack) */
	CU_ASSERT_EQUAL(p.st.done, p.total);
	CU_ASSERT(p.st.last_ms - t_kill <= (int64_t)timeout_ms + 1000);
	CU_ASSERT(p.st.failed >= 1);
	CU_ASSERT(p.st.failed <= 16);
	CU_ASSERT(done_at_kill >= 40);
	CU_ASSERT_EQUAL(p.st.leaf, 2 * victim);
	CU_ASSERT_STRING_EQUAL(p.st.first_dev, labs[victim]->urls[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.st.first_msg, labs[victim]->urls[0]));
	CU_ASSERT_PTR_NOT_NULL(strstr(p.st.first_msg, "WRITE(16) LBA "));
	CU_ASSERT_EQUAL(p.st.first_status, -ETIMEDOUT);

	/* the surviving LUNs got every one of their stripe units (each offset always gets the same bytes) */
	for (int l = 0; l < 4; l++) {
		uint64_t bad = 0;
		if (l == victim)
			continue;
		CU_ASSERT_EQUAL_FATAL(bmt_read_file(labs[l]->files[0], file, 6 * MIB, START), 0);
		for (uint64_t b = 0; b < p.vol_bytes; b += UNIT) {
			unsigned lun;
			uint64_t off;
			locate(b, 4, &lun, &off);
			if ((int)lun == l && memcmp(file + (off - START), p.src + b, UNIT) != 0)
				bad++;
		}
		CU_ASSERT_EQUAL(bad, 0);
	}
	/* and still serve: a unit on LUN 0 reads back, a unit on the dead LUN fails within the timeout */
	{
		unsigned char u[4096];
		int64_t t0 = bmt_now_ms();
		CU_ASSERT_EQUAL(blkmap_vol_pread(p.vol, u, sizeof(u), 0), 0);
		CU_ASSERT(memcmp(u, p.src, sizeof(u)) == 0);
		CU_ASSERT_EQUAL(blkmap_vol_pread(p.vol, u, sizeof(u), UNIT * (uint64_t)victim), -ETIMEDOUT);
		CU_ASSERT(bmt_now_ms() - t0 <= (int64_t)timeout_ms + 1000);
		CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(p.vol), labs[victim]->urls[0]));
	}
	blkmap_vol_free(p.vol);
	blkmap_ctx_destroy(ctx);
	for (int i = 0; i < 4; i++)
		lab_down(labs[i]);
	free(p.src);
	free(file);
}

/* ---- a target killed under a writer ----------------------------------------------------------- */

static void kill_pid(void *arg)
{
	pid_t *pid = arg;
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
}

#define EPOLL_DELAY_US "20000"

/* `blkmap write` of len zero bytes (from /dev/zero) to the pool's volume, as a shell starts it
 * (SIGPIPE's default action), under strace with every epoll_wait returning EPOLL_DELAY_US late, its
 * stderr into errfile: strace's pid (strace ends as its tracee did: with its exit status, or killed
 * by the same signal). */
static pid_t late_writer(const char *pool, const struct test_lab *lab, uint64_t len, const char *errfile)
{
	char portal[64], length[32];
	pid_t pid;

	snprintf(portal, sizeof(portal), "iscsi://127.0.0.1:%d", lab->port);
	snprintf(length, sizeof(length), "%llu", (unsigned long long)len);
	pid = fork();
	if (pid == 0) {
		int ef = open(errfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (ef >= 0)
			dup2(ef, 2);
		signal(SIGPIPE, SIG_DFL); /* the runner ignores it, and an ignored signal stays so across exec */
		execlp("strace", "strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=epoll_wait", "-e",
		       "inject=epoll_wait:delay_exit=" EPOLL_DELAY_US, test_bin("blkmap"), "write", "--pool", pool,
		       "--portal", portal, "--offset", "0", "--length", length, "--input", "/dev/zero", "--timeout", "1",
		       "--initiator", BMT_INITIATOR_A, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Bytes strace's tracee has read so far (/proc/PID/io rchar: here, mostly its input), or -1. */
static int64_t tracee_read(pid_t tracer)
{
	char path[96], buf[512];
	const char *at;
	ssize_t n;
	long tracee;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)tracer, (int)tracer);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0; /* not started yet */
	buf[n] = 0;
	tracee = strtol(buf, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%ld/io", tracee);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	at = strstr(buf, "rchar: ");
	return at ? strtoll(at + 7, NULL, 10) : 0;
}

/* tgtd is killed with SIGKILL while `blkmap write` streams data to the LUNs; the writer exits 1 with a
 * reason on stderr, not killed by SIGPIPE. libiscsi writes SCSI data with writev(), without
 * MSG_NOSIGNAL: when the target dies with nothing unread its sockets close with FIN, and a write the
 * engine makes from an event it took before that FIN arrived reaches a dead port, whose RST turns
 * the next writev() into EPIPE, and SIGPIPE unless it is blocked. That window is a few microseconds
 * wide on an idle host (a loaded one hits it now and then: pnfs cp died so); here every epoll_wait
 * of the writer returns 20 ms late (strace's fault injection), so the events it acts on are always
 * older than the target's death, and a writer that meets no SIGPIPE is one that keeps it away.
 * Four rounds, each killed at another point of the stream (without blkmap's guard every round ended
 * by SIGPIPE). */
static void test_target_killed_under_writer(void)
{
	enum { ROUNDS = 4 };
	const uint64_t len = 100 * MIB; /* within the volume: a run can only fail by the kill */
	struct lab_opts ram = { .ram = 1 };
	struct test_lab *lab;
	struct test_mds *m;
	static pid_t writer;
	char errfile[400];
	int handle, by_signal = 0;

	TEST_SKIP_IF(test_run(NULL, "strace -f -qq -o /dev/null -e trace=epoll_wait -e inject=epoll_wait:delay_exit=1 "
				    "true >/dev/null 2>&1") != 0,
		     "strace cannot trace here (missing, no ptrace, or without syscall fault injection)");
	lab = lab_up(2, "64M", &ram);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	m = tmds_new(lab, NULL, NULL); /* only its pool: pnfs-admin format labels the LUNs */
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	snprintf(errfile, sizeof(errfile), "%s/writer.err", test_tmpdir("pipe"));
	handle = test_cleanup_push(kill_pid, &writer); /* a writer left by a failure or the runner's timeout */
	for (int r = 0; r < ROUNDS; r++) {
		const int64_t at = (int64_t)(6 + 8 * r) * (int64_t)MIB;
		int status = -1, ended = 0;
		pid_t pid = writer = late_writer(m->pool, lab, len, errfile);
		int64_t got = 0;
		char *err = NULL;

		if (pid <= 0) {
			CU_FAIL("cannot fork the writer");
			break;
		}
		while ((got = tracee_read(pid)) >= 0 && got < at) {
			if (waitpid(pid, &status, WNOHANG) == pid) {
				ended = 1;
				break;
			}
			usleep(1000);
		}
		if (got < 0 && !ended) {
			kill_pid(&writer);
			test_skip("cannot read /proc/PID/task/PID/children: the writer's progress is unknown");
			break;
		}
		CU_ASSERT_EQUAL(ended, 0); /* still writing when its target dies */
		if (lab_kill_target(lab) != 0) {
			kill_pid(&writer);
			CU_FAIL("cannot kill the lab's tgtd");
			break;
		}
		TW_WAIT_UNTIL(ended || (ended = waitpid(pid, &status, WNOHANG) == pid), 60 * 1000, 10);
		if (!ended) {
			kill_pid(&writer);
			CU_FAIL("blkmap write did not end within 60 s of its target's death (1 s command timeout)");
			break;
		}
		writer = 0;
		CU_ASSERT_FALSE(WIFSIGNALED(status));
		if (WIFSIGNALED(status)) {
			by_signal++;
			fprintf(stderr, "\n  round %d (killed after %d MiB): blkmap write died of signal %d (%s)\n", r,
				(int)(at / (int64_t)MIB), WTERMSIG(status), strsignal(WTERMSIG(status)));
		}
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
		/* and says why, naming the LUN */
		CU_ASSERT_EQUAL(test_run(&err, "cat '%s'", errfile), 0);
		CU_ASSERT(err && !strncmp(err, "blkmap: iscsi://", 16));
		if (WIFEXITED(status) && (WEXITSTATUS(status) != 1 || !err || strncmp(err, "blkmap: iscsi://", 16)))
			fprintf(stderr, "\n  round %d: exit %d: %s\n", r, WEXITSTATUS(status), err ? err : "");
		free(err);
		if (lab_restart(lab) != 0) {
			CU_FAIL("the lab did not come back");
			break;
		}
	}
	if (by_signal)
		fprintf(stderr, "\n  %d of %d rounds ended by a signal\n", by_signal, ROUNDS);
	test_cleanup_cancel(handle);
	tmds_free(m);
	lab_down(lab);
}

TEST_SUITE(blkmap_engine, "integration/blkmap_engine", NULL, NULL,
	   { "roundtrip_64m", test_roundtrip_64m },
	   { "vanished_lun", test_vanished_lun },
	   { "target_killed_under_writer", test_target_killed_under_writer });
