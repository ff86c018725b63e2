/* libpnfs makes what it wrote through a layout stable before it reports it: on fsync and on close
 * the LUNs holding the written ranges get SYNCHRONIZE CACHE, and only then is LAYOUTCOMMIT sent
 * (RFC 5663 §2.3.2). Seen from outside: strace on the lab's tgtd counts the backing files' syncs
 * (tgt answers SYNCHRONIZE CACHE with fdatasync), strace on pnfs-mds the store commit that
 * LAYOUTCOMMIT makes, and the timestamps order them. A LUN whose target died fails fsync with -EIO,
 * the error naming the LUN, and no LAYOUTCOMMIT goes out. */
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)

struct rig {
	struct test_lab *lab;
	struct test_mds *m;
	struct pnfs_context *ctx;
};

/* The lab's LUN URLs with the relay's port in place of the target's. */
static void urls_via(const struct test_lab *lab, struct ct_proxy *relay, char via[][300])
{
	for (int i = 0; i < lab->nluns; i++)
		CU_ASSERT_EQUAL_FATAL(ct_relay_url(lab, relay, i, via[i], 300), 0);
}

/* relay: the LUNs are reached through it (NULL: directly) */
static void rig_up_via(struct rig *r, int nluns, const char *size, const char *initiator, struct ct_proxy **relay)
{
	struct lab_opts ram = { .ram = 1 };
	struct pnfs_opts o;
	const char *urls[LAB_MAX_LUNS];

	r->lab = lab_up(nluns, size, &ram);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->lab);
	r->m = tmds_new(r->lab, NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(r->m), 0);
	static char via[LAB_MAX_LUNS][300];
	if (relay) {
		*relay = ct_proxy_start(r->lab->port);
		CU_ASSERT_PTR_NOT_NULL_FATAL(*relay);
		urls_via(r->lab, *relay, via);
	}
	for (int i = 0; i < r->lab->nluns; i++)
		urls[i] = relay ? via[i] : r->lab->urls[i];
	pnfs_opts_init(&o);
	o.devices = urls;
	o.ndevices = (unsigned)r->lab->nluns;
	o.initiator_name = initiator;
	o.io_timeout_ms = 2000;
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &r->ctx), 0);
	if (pnfs_mount(r->ctx, "127.0.0.1", r->m->port, "/") != 0) {
		fprintf(stderr, "mount: %s\n", pnfs_get_error(r->ctx));
		CU_FAIL_FATAL("mount");
	}
}

static void rig_up(struct rig *r, int nluns, const char *size, const char *initiator)
{
	rig_up_via(r, nluns, size, initiator, NULL);
}

static void rig_down(struct rig *r)
{
	pnfs_umount(r->ctx);
	pnfs_context_destroy(r->ctx);
	tmds_free(r->m);
	lab_down(r->lab);
}

static void test_fsync_and_close_flush_first(void)
{
	struct rig r = { 0 };
	struct lab_sync_trace *tgt, *mds;
	struct pnfs_stats st0, st;
	struct pnfs_fh *fh = NULL;
	double t_first, t_last, m_first, m_last;
	char why[300];
	unsigned char *buf = malloc(4 * MIB), *back = malloc(4 * MIB);
	int nfds = 0;

	rig_up(&r, 4, "64M", "iqn.2024-01.test.pnfs:durable-a");
	tgt = lab_sync_trace_start(r.lab, why, sizeof(why));
	mds = tgt ? lab_sync_trace_start_pid((int)r.m->pid, why, sizeof(why)) : NULL;
	if (!tgt || !mds) {
		lab_sync_trace_stop(tgt);
		rig_down(&r);
		free(buf);
		free(back);
		test_skip("%s", why);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r.ctx, "/f", O_CREAT | O_RDWR, 0644, &fh), 0);
	test_fill_random(buf, 4 * MIB, 11);
	pnfs_get_stats(r.ctx, &st0);
	lab_sync_trace_reset(tgt);
	CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf, 4 * MIB, 0), (ssize_t)(4 * MIB));
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written - st0.direct_bytes_written, 4 * MIB);
	/* written, not yet made stable */
	CU_ASSERT_EQUAL(lab_sync_trace_count(tgt, NULL), 0);

	/* fsync: the four LUNs' caches first (4 MiB over a 1 MiB stripe unit), then LAYOUTCOMMIT */
	lab_sync_trace_reset(tgt);
	lab_sync_trace_reset(mds);
	CU_ASSERT_EQUAL(pnfs_fsync(r.ctx, fh), 0);
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.layoutcommits - st0.layoutcommits, 1);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tgt, &nfds), 4);
	CU_ASSERT_EQUAL(nfds, 4);
	CU_ASSERT(lab_sync_trace_times(tgt, &t_first, &t_last) >= 1);
	CU_ASSERT(lab_sync_trace_times(mds, &m_first, &m_last) >= 1); /* LAYOUTCOMMIT's store commit */
	CU_ASSERT(t_last > 0 && m_first > 0 && t_last <= m_first);

	/* close: an overwrite of written blocks (READ_WRITE_DATA, nothing for LAYOUTCOMMIT to change but
	 * the size and times) flushes the device's LUNs, again before the LAYOUTCOMMIT */
	test_fill_random(buf + MIB, 64 << 10, 12);
	CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf + MIB, 64 << 10, MIB), (ssize_t)(64 << 10));
	lab_sync_trace_reset(tgt);
	lab_sync_trace_reset(mds);
	pnfs_get_stats(r.ctx, &st0);
	CU_ASSERT_EQUAL(pnfs_close(r.ctx, fh), 0);
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.layoutcommits - st0.layoutcommits, 1);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tgt, &nfds), 4);
	CU_ASSERT_EQUAL(nfds, 4);
	CU_ASSERT(lab_sync_trace_times(tgt, &t_first, &t_last) == 4);
	CU_ASSERT(lab_sync_trace_times(mds, &m_first, &m_last) >= 1);
	CU_ASSERT(t_last > 0 && m_first > 0 && t_last <= m_first);

	/* nothing written since: fsync on a fresh open flushes nothing */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r.ctx, "/f", O_RDWR, 0, &fh), 0);
	lab_sync_trace_reset(tgt);
	CU_ASSERT_EQUAL(pnfs_fsync(r.ctx, fh), 0);
	CU_ASSERT_EQUAL(lab_sync_trace_count(tgt, NULL), 0);
	CU_ASSERT_EQUAL(pnfs_pread(r.ctx, fh, back, 4 * MIB, 0), (ssize_t)(4 * MIB));
	CU_ASSERT(memcmp(buf, back, 4 * MIB) == 0);
	CU_ASSERT_EQUAL(pnfs_close(r.ctx, fh), 0);
	lab_sync_trace_stop(mds);
	lab_sync_trace_stop(tgt);
	rig_down(&r);
	free(buf);
	free(back);
}

/* The target dies between the direct writes and fsync: fsync fails with -EIO naming the LUN and
 * SYNCHRONIZE CACHE, and sends no LAYOUTCOMMIT (the blocks stay INVALID_DATA for everyone else). */
static void test_flush_failure(void)
{
	struct rig r = { 0 };
	struct pnfs_stats st0, st;
	struct pnfs_fh *fh = NULL;
	unsigned char *buf = malloc(MIB);
	const char *err;
	int named = 0;

	rig_up(&r, 2, "32M", "iqn.2024-01.test.pnfs:durable-b");
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r.ctx, "/g", O_CREAT | O_RDWR, 0644, &fh), 0);
	test_fill_random(buf, MIB, 13);
	CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf, MIB, 0), (ssize_t)MIB);
	pnfs_get_stats(r.ctx, &st0);
	CU_ASSERT_EQUAL(st0.direct_bytes_written, MIB);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(r.lab), 0);
	CU_ASSERT_EQUAL(pnfs_fsync(r.ctx, fh), -EIO);
	err = pnfs_get_error(r.ctx);
	for (int i = 0; i < r.lab->nluns; i++)
		named |= strstr(err, r.lab->urls[i]) != NULL;
	CU_ASSERT(named);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SYNCHRONIZE CACHE(10)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "LAYOUTCOMMIT not sent"));
	if (!named)
		fprintf(stderr, "\n  fsync error: %s\n", err);
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.layoutcommits, st0.layoutcommits);
	pnfs_close(r.ctx, fh);
	rig_down(&r);
	free(buf);
}

/* The client's path to the SAN goes silent between two writes (its LUNs stay up for the MDS). The
 * second write times out, the device is given up and the write is done again through the MDS; the
 * first, written directly and never made stable, cannot be committed: fsync says so (-EIO, naming
 * the range), and that range reads as zeros, never as stale bytes. */
static void test_san_path_lost(void)
{
	struct rig r = { 0 };
	struct ct_proxy *relay = NULL;
	struct pnfs_stats st;
	struct pnfs_fh *fh = NULL;
	unsigned char *buf = malloc(8 * MIB), *back = malloc(8 * MIB), *zero = calloc(1, 4 * MIB);
	const char *err;

	rig_up_via(&r, 2, "32M", "iqn.2024-01.test.pnfs:durable-c", &relay);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r.ctx, "/h", O_CREAT | O_RDWR, 0644, &fh), 0);
	test_fill_random(buf, 8 * MIB, 17);
	CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf, 4 * MIB, 0), (ssize_t)(4 * MIB));
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, 4 * MIB);
	ct_proxy_drop(relay, CT_PROXY_DROP_REQUESTS);
	CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf + 4 * MIB, 4 * MIB, 4 * MIB), (ssize_t)(4 * MIB));
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.mds_data_written, 4 * MIB);
	/* the first write's commit (the abandoned layout's) cannot flush: fsync waits for it and says so */
	CU_ASSERT_EQUAL(pnfs_fsync(r.ctx, fh), -EIO);
	err = pnfs_get_error(r.ctx);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/h: cannot make the writes through the layout stable"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "writes up to offset 4194304 may be lost"));
	CU_ASSERT_EQUAL(pnfs_close(r.ctx, fh), 0); /* reported once */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r.ctx, "/h", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(r.ctx, fh, back, 8 * MIB, 0), (ssize_t)(8 * MIB));
	CU_ASSERT(memcmp(back, zero, 4 * MIB) == 0); /* never committed: zeros, not stale bytes */
	CU_ASSERT(memcmp(back + 4 * MIB, buf + 4 * MIB, 4 * MIB) == 0);
	pnfs_close(r.ctx, fh);
	rig_down(&r);
	ct_proxy_stop(relay);
	free(buf);
	free(back);
	free(zero);
}

/* pnfs-mds is killed (SIGKILL) and started again in the middle of a copy in through layouts. The
 * restarted server removes the client's key from the LUNs; the client gets a new client ID,
 * reclaims its open in the grace period and commits what it had written with LAYOUTCOMMIT reclaim
 * (as in layout_reclaim); writes that met RESERVATION CONFLICT under the old client ID, or landed
 * after the reclaim, are done again through a new layout. The copy exits 0 without copying again,
 * and the file reads back as the source. */
static void test_mds_restart_mid_copy(void)
{
	const size_t total = 192 * MIB;
	struct lab_opts ram = { .ram = 1 };
	struct test_lab *lab = lab_up(4, "128M", &ram);
	struct test_mds *m;
	struct ct_proxy *px;
	char *buf = malloc(total), *back = malloc(total), src[300], ef[300], dst[300], opts[4096], errtxt[8192] = "";
	struct pnfs_context *ctx;
	struct pnfs_opts o;
	struct pnfs_fh *fh;
	int status = -1, exited = 0;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	/* SCSI layouts forced on: the restarted server's removal of the key is what this is about (tgt
	 * refuses APTPL, so by default the server would hand out block volumes) */
	m = tmds_new(lab, NULL, "--lease-time 10 --grace-time 4 --scsi-layouts yes");
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	px = ct_proxy_start(lab->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	snprintf(src, sizeof(src), "/dev/shm/pnfs-durable.%d.src", (int)getpid());
	snprintf(ef, sizeof(ef), "/dev/shm/pnfs-durable.%d.err", (int)getpid());
	snprintf(dst, sizeof(dst), "pnfs://127.0.0.1:%d/restarted", m->port);
	test_fill_random(buf, total, 360);
	CU_ASSERT_EQUAL_FATAL(ct_write_file(src, buf, total), 0);
	CU_ASSERT_EQUAL_FATAL(ct_relay_opts(lab, px, "iqn.2024-01.test.pnfs:durable-d", NULL, opts, sizeof(opts)), 0);
	pid = ct_cp_start(opts, src, dst, ef);
	CU_ASSERT_FATAL(pid > 0);
	/* at most 64 MiB in flight: past 80 MiB, direct writes have completed, uncommitted */
	TW_WAIT_UNTIL(ct_proxy_bytes(px, 0) >= 80 * MIB, 10 * 1000, 1);
	CU_ASSERT_EQUAL(kill(pid, SIGSTOP), 0);
	if (waitpid(pid, &status, WNOHANG) == pid) {
		CU_FAIL("the copy ended before the server could be restarted");
		exited = 1;
	}
	CU_ASSERT_EQUAL(tmds_stop(m, SIGKILL), 128 + SIGKILL);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	CU_ASSERT_EQUAL(kill(pid, SIGCONT), 0);
	if (ct_cp_wait(pid, exited, 90, &status, ef, errtxt, sizeof(errtxt)) != 0)
		CU_FAIL("pnfs cp did not end within 90 s of the server's restart");
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* nothing was lost: no second copy */
	CU_ASSERT_PTR_NULL(strstr(errtxt, "copying again"));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(errtxt, "copying again"))
		fprintf(stderr, "\n  pnfs cp said: %s\n", errtxt);
	/* the file is the source, read directly by another client */
	pnfs_opts_init(&o);
	{
		const char *urls[LAB_MAX_LUNS];
		ct_lab_devices(&o, lab, urls);
		o.initiator_name = "iqn.2024-01.test.pnfs:durable-e";
		CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &ctx), 0);
	}
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(ctx, "127.0.0.1", m->port, "/"), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/restarted", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, total, 0), (ssize_t)total);
	CU_ASSERT(memcmp(back, buf, total) == 0);
	pnfs_close(ctx, fh);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	unlink(src);
	unlink(ef);
	ct_proxy_stop(px);
	tmds_free(m);
	lab_down(lab);
	free(buf);
	free(back);
}

/* How a copy meets a server restart at its very start. */
enum { KILLED_AFTER_MS, DOWN_AT_START };

/* pnfs cp from a local file into the pool starts while pnfs-mds goes away: killed with SIGKILL a few
 * milliseconds after the copy started (while it connects, sets up its session, mounts or opens)
 * and started again at once on the same port and pool, or not running when the copy starts and
 * back half a second later. Either way the copy tries the server again until it answers, exits 0
 * without a word, and another client reads the source's bytes from the file. */
static void copy_meets_restart(struct test_lab *lab, struct test_mds *m, int how, unsigned delay_ms,
			       const char *name)
{
	const size_t total = 24 * MIB + 4097;
	char *buf = malloc(total), *back = malloc(total), src[300], ef[300], dst[300], opts[2048], errtxt[8192] = "";
	const char *urls[LAB_MAX_LUNS];
	struct pnfs_context *ctx;
	struct pnfs_opts o;
	struct pnfs_fh *fh;
	int status = -1, n;
	pid_t pid;

	snprintf(src, sizeof(src), "/dev/shm/pnfs-durable.%d.%s.src", (int)getpid(), name);
	snprintf(ef, sizeof(ef), "/dev/shm/pnfs-durable.%d.%s.err", (int)getpid(), name);
	snprintf(dst, sizeof(dst), "pnfs://127.0.0.1:%d/%s", m->port, name);
	test_fill_random(buf, total, 380 + delay_ms);
	CU_ASSERT_EQUAL_FATAL(ct_write_file(src, buf, total), 0);
	n = snprintf(opts, sizeof(opts), "--initiator iqn.2024-01.test.pnfs:durable-h");
	for (int i = 0; i < lab->nluns; i++)
		n += snprintf(opts + n, sizeof(opts) - (size_t)n, " --device '%s'", lab->urls[i]);
	CU_ASSERT_FATAL((size_t)n < sizeof(opts));
	if (how == DOWN_AT_START)
		CU_ASSERT_EQUAL(tmds_stop(m, SIGKILL), 128 + SIGKILL);
	pid = ct_cp_start(opts, src, dst, ef);
	CU_ASSERT_FATAL(pid > 0);
	usleep(delay_ms * 1000); /* on purpose: the copy runs that long before the server goes */
	if (how == KILLED_AFTER_MS)
		CU_ASSERT_EQUAL(tmds_stop(m, SIGKILL), 128 + SIGKILL);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	if (ct_cp_wait(pid, 0, 90, &status, ef, errtxt, sizeof(errtxt)) != 0)
		CU_FAIL("pnfs cp did not end within 90 s of the server's restart");
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT_STRING_EQUAL(errtxt, "");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || errtxt[0])
		fprintf(stderr, "\n  pnfs cp (%s) said: %s\n", name, errtxt);
	pnfs_opts_init(&o);
	ct_lab_devices(&o, lab, urls);
	o.initiator_name = "iqn.2024-01.test.pnfs:durable-i";
	ctx = ct_mount(&o, m->port, "/");
	snprintf(dst, sizeof(dst), "/%s", name);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, dst, O_RDONLY, 0, &fh), 0);
	memset(back, 0, total);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, total + 1, 0), (ssize_t)total);
	CU_ASSERT(memcmp(back, buf, total) == 0);
	pnfs_close(ctx, fh);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, dst), 0); /* room for the next copy */
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	unlink(src);
	unlink(ef);
	free(buf);
	free(back);
}

static void restart_rig_up(struct test_lab **lab, struct test_mds **m)
{
	struct lab_opts ram = { .ram = 1 };

	*lab = lab_up(2, "160M", &ram);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*lab);
	*m = tmds_new(*lab, NULL, "--lease-time 10 --grace-time 4");
	CU_ASSERT_PTR_NOT_NULL_FATAL(*m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(*m), 0);
}

/* Killed at once, and some milliseconds into the copy: before its connection, during its session
 * setup or its mount, during its first calls (where each delay lands depends on the machine's
 * speed; together they cover the start). */
static void test_mds_killed_as_copy_starts(void)
{
	static const unsigned after_ms[] = { 0, 2, 4, 6, 8, 10, 14, 20, 30, 50 };
	struct test_lab *lab;
	struct test_mds *m;
	char name[32];

	restart_rig_up(&lab, &m);
	for (unsigned i = 0; i < sizeof(after_ms) / sizeof(after_ms[0]); i++) {
		snprintf(name, sizeof(name), "killed-%ums", after_ms[i]);
		copy_meets_restart(lab, m, KILLED_AFTER_MS, after_ms[i], name);
	}
	tmds_free(m);
	lab_down(lab);
}

static void test_mds_down_when_copy_starts(void)
{
	struct test_lab *lab;
	struct test_mds *m;

	restart_rig_up(&lab, &m);
	copy_meets_restart(lab, m, DOWN_AT_START, 500, "down-at-start");
	tmds_free(m);
	lab_down(lab);
}

/* pnfs-mds is killed (SIGKILL) and started again after 8 MiB were written through a SCSI layout and
 * before any LAYOUTCOMMIT. The restarted server removed the client's key from the LUNs, knows no
 * layout and has a new ID for its device; it holds the blocks it gave out for the file through its
 * grace period. The client learns of the restart (from the MDS on its next call, or first from the
 * LUNs: RESERVATION CONFLICT on its next write or on fsync's flush, which it checks with the
 * server), reclaims the
 * open, finds its device under the new ID (GETDEVICELIST), registers its new key on every LUN,
 * flushes them and commits the writes with LAYOUTCOMMIT reclaim, then RECLAIM_COMPLETE. fsync
 * reports nothing lost, the device is not taken for fenced, and another client reads every byte
 * back. The write that met the conflict, and the next one, go to the LUNs directly again, through a
 * new layout. */
static void *pass_later(void *arg)
{
	usleep(1000 * 1000); /* on purpose: the path stays a black hole for a second */
	ct_proxy_drop(arg, CT_PROXY_PASS);
	return NULL;
}

/* fsync on a thread of its own, while the test restarts the server */
struct fsync_job {
	struct pnfs_context *ctx;
	struct pnfs_fh *fh;
	int rc;
	pthread_t thr;
};

static void *fsync_main(void *arg)
{
	struct fsync_job *j = arg;
	j->rc = pnfs_fsync(j->ctx, j->fh);
	return NULL;
}

static void fsync_start(struct fsync_job *j, struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	j->ctx = ctx;
	j->fh = fh;
	j->rc = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&j->thr, NULL, fsync_main, j), 0);
}

/* Its end: fsync returned 0 (else the context's error is shown). */
static void fsync_end(struct fsync_job *j)
{
	pthread_join(j->thr, NULL);
	CU_ASSERT_EQUAL(j->rc, 0);
	if (j->rc != 0)
		fprintf(stderr, "\n  fsync: %s\n", pnfs_get_error(j->ctx));
}

enum { FIRST_STAT, FIRST_WRITE, FIRST_FSYNC, FIRST_READ, BLOCK_LAYOUT, COMMIT_UNANSWERED, COMMIT_DONE, COMMIT_FLUSHING };

/* Wait up to 10 s for more than want bytes to have gone up through the relay since from. */
static uint64_t wait_up_bytes(struct ct_proxy *p, uint64_t from, uint64_t want)
{
	TW_WAIT_UNTIL(ct_proxy_bytes(p, 0) - from > want, 10 * 1000, 10);
	return ct_proxy_bytes(p, 0) - from;
}

static void layout_reclaim(int first)
{
	const int write_first = first == FIRST_WRITE;
	struct rig r = { 0 };
	struct lab_opts ram = { .ram = 1 };
	struct pnfs_stats st0, st;
	struct pnfs_stat sa;
	struct pnfs_fh *fh = NULL;
	struct pnfs_context *ctx2;
	struct pnfs_opts o;
	const char *urls[LAB_MAX_LUNS];
	const size_t total = 9 * MIB;
	unsigned char *buf = malloc(total), *back = malloc(total);
	struct ct_proxy *px, *lx = NULL;
	static char via[LAB_MAX_LUNS][300];
	pthread_t passer;
	struct fsync_job job = { 0 };
	const int commit_out = first == COMMIT_UNANSWERED || first == COMMIT_DONE;

	r.lab = lab_up(4, "64M", &ram);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.lab);
	/* SCSI layouts forced on (tgt refuses APTPL, so by default none would be offered); BLOCK_LAYOUT
	 * asks for block layouts */
	r.m = tmds_new(r.lab, NULL, "--lease-time 10 --grace-time 20 --scsi-layouts yes");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(r.m), 0);
	if (first == COMMIT_FLUSHING) {
		/* the LUNs through a relay that can hold their answers */
		lx = ct_proxy_start(r.lab->port);
		CU_ASSERT_PTR_NOT_NULL_FATAL(lx);
		urls_via(r.lab, lx, via);
	}
	for (int i = 0; i < r.lab->nluns; i++)
		urls[i] = lx ? via[i] : r.lab->urls[i];
	pnfs_opts_init(&o);
	o.devices = urls;
	o.ndevices = (unsigned)r.lab->nluns;
	o.initiator_name = "iqn.2024-01.test.pnfs:durable-f";
	o.io_timeout_ms = 4000;
	o.timeout_ms = 1500;
	o.no_scsi = first == BLOCK_LAYOUT; /* block layouts: no keys, the device keeps its ID */
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &r.ctx), 0);
	/* the MDS connection goes through a relay, which can keep the restart from the client */
	px = ct_proxy_start(r.m->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(r.ctx, "127.0.0.1", ct_proxy_port(px), "/"), 0);

	test_fill_random(buf, total, 371);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r.ctx, "/kept", O_CREAT | O_RDWR, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf, 8 * MIB, 0), (ssize_t)(8 * MIB));
	pnfs_get_stats(r.ctx, &st0);
	CU_ASSERT_EQUAL(st0.direct_bytes_written, 8 * MIB);
	CU_ASSERT_EQUAL(st0.layoutcommits, 0);

	if (first == FIRST_WRITE || first == FIRST_FSYNC || first == FIRST_READ)
		ct_proxy_drop(px, CT_PROXY_BLACK_HOLE);
	if (commit_out) {
		/* fsync flushes the LUNs and sends its LAYOUTCOMMIT, which the server never sees
		 * (COMMIT_UNANSWERED) or does and answers into the void (COMMIT_DONE); the server then
		 * restarts. The client's connection ends once the new one is up; the LAYOUTCOMMIT is still
		 * unanswered, under a state the server lost: the reclaim commits the writes, and fsync
		 * reports that, not the old call's fate. */
		const int down = first == COMMIT_DONE;
		ct_proxy_drop(px, down ? CT_PROXY_DROP_REPLIES : CT_PROXY_BLACK_HOLE);
		fsync_start(&job, r.ctx, fh);
		TW_WAIT_UNTIL(ct_proxy_dropped(px, down) != 0, 10 * 1000, 10);
		CU_ASSERT(ct_proxy_dropped(px, down) > 0);
		ct_proxy_drop(px, CT_PROXY_BLACK_HOLE); /* the server's end is not told to the client */
	}
	if (first == COMMIT_FLUSHING) {
		/* fsync's flush reaches the LUNs, whose answers wait in the relay: the commit is still
		 * flushing when the server restarts. The client sees the connection end and recovers;
		 * the reclaim takes the commit's writes, and its own calls to the LUNs wait too (the
		 * bytes that go up after the restart say it has begun). Then the LUNs answer: the old
		 * flush ends, its commit ends without a LAYOUTCOMMIT of its own, and fsync reports the
		 * reclaim's. */
		uint64_t up = ct_proxy_bytes(lx, 0);
		ct_proxy_pause(lx, CT_PROXY_PAUSE_REPLIES);
		fsync_start(&job, r.ctx, fh);
		/* a SYNCHRONIZE CACHE on each LUN: a 48-byte command PDU each */
		CU_ASSERT(wait_up_bytes(lx, up, 48 * (uint64_t)(r.lab->nluns - 1)) >= 48 * (uint64_t)r.lab->nluns);
		up = ct_proxy_bytes(lx, 0);
		CU_ASSERT_EQUAL(tmds_stop(r.m, SIGKILL), 128 + SIGKILL);
		CU_ASSERT_EQUAL_FATAL(tmds_start(r.m), 0);
		CU_ASSERT(wait_up_bytes(lx, up, 0) > 0);
		ct_proxy_pause(lx, 0);
		fsync_end(&job);
	} else {
		CU_ASSERT_EQUAL(tmds_stop(r.m, SIGKILL), 128 + SIGKILL);
		CU_ASSERT_EQUAL_FATAL(tmds_start(r.m), 0);
	}
	if (commit_out) {
		ct_proxy_drop(px, CT_PROXY_PASS);
		ct_proxy_cut(px);
		fsync_end(&job);
	}
	if (write_first) {
		/* The client hears nothing from the MDS until a second from now: its next write meets
		 * RESERVATION CONFLICT, and the SEQUENCE it checks that with is answered only after the
		 * session's recovery under a new client ID, the kept writes reclaimed. The conflict was
		 * the old ID's: the device is not fenced, the write is done again through a new layout. */
		CU_ASSERT_EQUAL_FATAL(pthread_create(&passer, NULL, pass_later, px), 0);
		CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf + 8 * MIB, MIB, 8 * MIB), (ssize_t)MIB);
		pthread_join(passer, NULL);
		pnfs_get_stats(r.ctx, &st);
		CU_ASSERT_EQUAL(st.mds_data_written, 0);
		CU_ASSERT_EQUAL(st.direct_bytes_written - st0.direct_bytes_written, MIB);
	}
	if (first == FIRST_READ) {
		/* a read of what was written, from the LUNs: RESERVATION CONFLICT too (the LUNs admit
		 * registered initiators only), answered after the reclaim, read again directly */
		memset(back, 0, total);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&passer, NULL, pass_later, px), 0);
		CU_ASSERT_EQUAL(pnfs_pread(r.ctx, fh, back, 8 * MIB, 0), (ssize_t)(8 * MIB));
		pthread_join(passer, NULL);
		CU_ASSERT(memcmp(back, buf, 8 * MIB) == 0);
		pnfs_get_stats(r.ctx, &st);
		CU_ASSERT_EQUAL(st.mds_data_read, 0);
		CU_ASSERT(st.direct_bytes_read >= 8 * MIB);
	}
	if (first == FIRST_FSYNC) {
		/* fsync's flush meets RESERVATION CONFLICT; its check is answered after the reclaim,
		 * which took the writes: nothing lost */
		CU_ASSERT_EQUAL_FATAL(pthread_create(&passer, NULL, pass_later, px), 0);
		CU_ASSERT_EQUAL(pnfs_fsync(r.ctx, fh), 0);
		pthread_join(passer, NULL);
		if (pnfs_get_error(r.ctx)[0])
			fprintf(stderr, "\n  fsync: %s\n", pnfs_get_error(r.ctx));
	}
	/* the next call finds the server restarted: new client ID, reclaims, then its answer */
	CU_ASSERT_EQUAL(pnfs_stat(r.ctx, "/kept", &sa), 0);
	pnfs_get_stats(r.ctx, &st);
	CU_ASSERT_EQUAL(st.clientid_recoveries - st0.clientid_recoveries, 1);
	CU_ASSERT_EQUAL(st.layouts_reclaimed - st0.layouts_reclaimed, 1);
	CU_ASSERT_EQUAL(st.layoutcommits - st0.layoutcommits, 1);
	CU_ASSERT_EQUAL(sa.size, 8 * MIB); /* the reclaim's commit set it */
	if (st.layouts_reclaimed != 1)
		fprintf(stderr, "\n  after the restart: %s\n", pnfs_get_error(r.ctx));
	CU_ASSERT_EQUAL(pnfs_fsync(r.ctx, fh), 0);

	if (!write_first) {
		/* direct again, through a new layout, with the key registered under the new client ID */
		CU_ASSERT_EQUAL(pnfs_pwrite(r.ctx, fh, buf + 8 * MIB, MIB, 8 * MIB), (ssize_t)MIB);
		pnfs_get_stats(r.ctx, &st);
		CU_ASSERT_EQUAL(st.direct_bytes_written - st0.direct_bytes_written, MIB);
		CU_ASSERT_EQUAL(st.mds_data_written, 0);
	}
	CU_ASSERT_EQUAL(st.fenced, 0);
	CU_ASSERT_EQUAL(pnfs_close(r.ctx, fh), 0);

	o.initiator_name = "iqn.2024-01.test.pnfs:durable-g";
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &ctx2), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(ctx2, "127.0.0.1", r.m->port, "/"), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx2, "/kept", O_RDONLY, 0, &fh), 0);
	memset(back, 0, total);
	CU_ASSERT_EQUAL(pnfs_pread(ctx2, fh, back, total, 0), (ssize_t)total);
	CU_ASSERT(memcmp(back, buf, total) == 0);
	pnfs_close(ctx2, fh);
	pnfs_umount(ctx2);
	pnfs_context_destroy(ctx2);
	rig_down(&r);
	ct_proxy_stop(px);
	ct_proxy_stop(lx);
	free(buf);
	free(back);
}

static void test_layout_reclaim(void)
{
	layout_reclaim(FIRST_STAT);
}

static void test_layout_reclaim_after_conflict(void)
{
	layout_reclaim(FIRST_WRITE);
}

static void test_layout_reclaim_after_flush_conflict(void)
{
	layout_reclaim(FIRST_FSYNC);
}

static void test_layout_reclaim_after_read_conflict(void)
{
	layout_reclaim(FIRST_READ);
}

static void test_layout_reclaim_block(void)
{
	layout_reclaim(BLOCK_LAYOUT);
}

static void test_layout_reclaim_commit_unanswered(void)
{
	layout_reclaim(COMMIT_UNANSWERED);
}

static void test_layout_reclaim_commit_done(void)
{
	layout_reclaim(COMMIT_DONE);
}

static void test_layout_reclaim_commit_flushing(void)
{
	layout_reclaim(COMMIT_FLUSHING);
}

TEST_SUITE(client_durable, "integration/client_durable", NULL, NULL,
	   { "fsync_and_close_flush_first", test_fsync_and_close_flush_first },
	   { "flush_failure", test_flush_failure },
	   { "san_path_lost", test_san_path_lost },
	   { "mds_restart_mid_copy", test_mds_restart_mid_copy },
	   { "mds_killed_as_copy_starts", test_mds_killed_as_copy_starts },
	   { "mds_down_when_copy_starts", test_mds_down_when_copy_starts },
	   { "layout_reclaim", test_layout_reclaim },
	   { "layout_reclaim_after_conflict", test_layout_reclaim_after_conflict },
	   { "layout_reclaim_after_flush_conflict", test_layout_reclaim_after_flush_conflict },
	   { "layout_reclaim_after_read_conflict", test_layout_reclaim_after_read_conflict },
	   { "layout_reclaim_block", test_layout_reclaim_block },
	   { "layout_reclaim_commit_unanswered", test_layout_reclaim_commit_unanswered },
	   { "layout_reclaim_commit_done", test_layout_reclaim_commit_done },
	   { "layout_reclaim_commit_flushing", test_layout_reclaim_commit_flushing });
