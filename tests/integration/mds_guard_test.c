/* One server per pool, and space that comes back. A second pnfs-mds on a pool that one serves is
 * refused at once, naming the first (foreground, daemon, and with --scsi-layouts no, which must not
 * touch the first one's reservation); pnfs-admin check --repair is refused beside it. Blocks that
 * LAYOUTGET allocated for a writer that is gone come back: a pnfs cp killed mid-copy (after its
 * lease), and pnfs-mds killed with SIGKILL mid-copy (after the restart's grace period); offline,
 * pnfs-admin check reports such space per file and --repair frees it. Real tgtd, real servers. */
#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024u * 1024u)
#define EA_RO BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY
#define OLD_CLIENT_KEY 0x1122334455667788ull

static struct blkmap_ctx *pr_ctx(void)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;

	blkmap_ctx_opts_init(&o);
	o.initiator_name = "iqn.2024-01.test.pnfs:guard";
	o.timeout_ms = 5000;
	if (blkmap_ctx_create(&o, &ctx) != 0)
		return NULL;
	return ctx;
}

/* What the LUN says now: the reservation and whether key is registered. */
static int lun_pr(const char *url, struct blkmap_pr_reservation *r, uint64_t key, int *has)
{
	struct blkmap_ctx *ctx = pr_ctx();
	struct blkmap_dev *d = NULL;
	struct blkmap_pr_keys k;
	int rc = -1;

	if (!ctx)
		return -1;
	if (blkmap_dev_open(ctx, url, 0, &d) == 0 && blkmap_pr_read_reservation(d, r) == 0 &&
	    blkmap_pr_read_keys(d, &k) == 0) {
		*has = 0;
		for (unsigned i = 0; i < k.nkeys; i++)
			*has |= k.keys[i] == key;
		rc = 0;
	}
	if (d)
		blkmap_dev_close(d);
	blkmap_ctx_destroy(ctx);
	return rc;
}

/* The state an MDS that fenced leaves on a LUN: its key holding EXCLUSIVE ACCESS - REGISTRANTS
 * ONLY, and a client of that run still registered (to be fenced at the next start). */
static int leave_fenced_state(const char *url)
{
	struct blkmap_ctx *mctx = pr_ctx(), *cctx = pr_ctx();
	struct blkmap_dev *m = NULL, *c = NULL;
	int rc = -1;

	if (mctx && cctx && blkmap_dev_open(mctx, url, 0, &m) == 0 && blkmap_dev_open(cctx, url, 0, &c) == 0 &&
	    blkmap_pr_register(m, 0, MDS_POOL_PR_KEY, 1) == 0 && blkmap_pr_reserve(m, MDS_POOL_PR_KEY, EA_RO) == 0 &&
	    blkmap_pr_register(c, 0, OLD_CLIENT_KEY, 1) == 0)
		rc = 0;
	if (m)
		blkmap_dev_close(m);
	if (c)
		blkmap_dev_close(c);
	blkmap_ctx_destroy(mctx);
	blkmap_ctx_destroy(cctx);
	return rc;
}

static int run_mds_on(char **out, const char *pool, int port, const char *more)
{
	return test_run(out, "'%s' --listen 127.0.0.1 --port %d --pool '%s' %s 2>&1", test_bin("pnfs-mds"), port, pool,
			more);
}

static int run_mds(char **out, const struct test_mds *m, const char *more)
{
	return run_mds_on(out, m->pool, test_free_port(), more);
}

static int admin(char **out, const char *pool, const char *cmd)
{
	return test_run(out, "'%s' %s --pool '%s' 2>&1", test_bin("pnfs-admin"), cmd, pool);
}

/* The reservation the first server holds, and the old client it fenced, are as it left them. */
static void assert_fenced_intact(const struct test_lab *lab)
{
	for (int i = 0; i < lab->nluns; i++) {
		struct blkmap_pr_reservation r;
		int has = 1;
		CU_ASSERT_EQUAL_FATAL(lun_pr(lab->urls[i], &r, OLD_CLIENT_KEY, &has), 0);
		CU_ASSERT_EQUAL(r.reserved, 1);
		CU_ASSERT_EQUAL(r.key, MDS_POOL_PR_KEY);
		CU_ASSERT_EQUAL(r.type, EA_RO);
		CU_ASSERT_EQUAL(has, 0);
	}
}

/* m still serves: a client named owner makes the directory name in its root. */
static void assert_serves(const struct test_mds *m, const char *owner, const char *name)
{
	struct nc *c = nc_connect(m->port);
	struct nc_fh root;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(nc_setup(c, owner), 0);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, name, 0755, NULL), 0);
	nc_free(c);
}

/* The ways a second server is started on a pool that is served already. */
static const char *const modes[] = { "--foreground", "", "--foreground --scsi-layouts no", "--scsi-layouts no" };

/* The first server of the lab's pool, running: it fences (SCSI layouts forced on tgt, which refuses
 * APTPL: auto would not), its LUNs left fenced by an earlier run. */
static struct test_mds *first_server(struct test_lab *lab)
{
	struct test_mds *m;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	m = tmds_new(lab, NULL, "--scsi-layouts yes");
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	for (int i = 0; i < lab->nluns; i++)
		CU_ASSERT_EQUAL_FATAL(leave_fenced_state(lab->urls[i]), 0);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	return m;
}

static void test_second_server_refused(void)
{
	struct test_lab *lab = lab_up(2, "32M", NULL);
	struct test_mds *m;
	char expect[200], listen[80], *out = NULL, *log;

	m = first_server(lab);
	/* The first server took the LUNs over from its earlier run: fencing is on, the old client out. */
	assert_fenced_intact(lab);
	snprintf(expect, sizeof(expect), "is served by pnfs-mds pid %d on ", (int)m->pid);
	snprintf(listen, sizeof(listen), "(listening on 127.0.0.1:%d)", m->port);
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		char more[600], pidf[400];
		int rc;
		snprintf(pidf, sizeof(pidf), "%s/second.pid", m->dir);
		snprintf(more, sizeof(more), "%s --pid-file '%s' --log-file '%s/second.log'", modes[k], pidf, m->dir);
		rc = run_mds(&out, m, more);
		if (rc != 1 || !strstr(out, expect) || !strstr(out, listen))
			fprintf(stderr, "\n  second pnfs-mds %s: exit %d: %s\n", modes[k], rc, out);
		CU_ASSERT_EQUAL(rc, 1);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, m->pool));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, expect));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, listen));
		free(out);
		out = NULL;
		CU_ASSERT_EQUAL(access(pidf, F_OK), -1);
		/* The first one's reservation and its fenced client are untouched. */
		assert_fenced_intact(lab);
	}
	/* ... and it still serves. */
	assert_serves(m, "guard-client", "still-served");
	log = tmds_log(m);
	CU_ASSERT_PTR_NULL(strstr(log, "cleared"));
	free(log);
	/* status names the server; check --repair is refused beside it. */
	CU_ASSERT_EQUAL(admin(&out, m->pool, "status"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, expect));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, m->pool, "check --repair"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--repair refused"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, expect));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, m->pool, "check"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "is not checked"));
	free(out);
	/* A server that died leaves nothing behind: the kernel dropped its lock. */
	CU_ASSERT_EQUAL(tmds_stop(m, SIGKILL), 128 + SIGKILL);
	CU_ASSERT_EQUAL(admin(&out, m->pool, "status"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "server  none"));
	free(out);
	CU_ASSERT_EQUAL(tmds_start(m), 0);
	assert_fenced_intact(lab);
	tmds_free(m);
	lab_down(lab);
}

/* Another copy of the pool directory on the same LUNs, as a standby host has: the lock file is not
 * shared, the heartbeat on LUN 0 is. Refused (foreground, daemon, --scsi-layouts no) naming the
 * server and its key, the reservation untouched; --takeover claims the LUNs and the old server
 * stops by itself at its next beat. */
static void test_other_copy_refused_then_takeover(void)
{
	struct test_lab *lab = lab_up(2, "32M", NULL);
	struct test_mds *m;
	char copy[400], expect[200], pidf[400], more[1200], *out = NULL, *log;
	int port2 = test_free_port(), pid2 = 0, st = 0, ended = 0;
	struct nc *c;
	struct nc_fh root;

	m = first_server(lab);
	snprintf(copy, sizeof(copy), "%s/standby-pool", m->dir);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "cp -a '%s' '%s'", m->pool, copy), 0);
	snprintf(expect, sizeof(expect), "its LUNs are served by pnfs-mds pid %d on ", (int)m->pid);
	snprintf(pidf, sizeof(pidf), "%s/standby.pid", m->dir);
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		int rc;
		snprintf(more, sizeof(more), "%s --pid-file '%s' --log-file '%s/standby.log'", modes[k], pidf, m->dir);
		rc = run_mds_on(&out, copy, port2, more);
		if (rc != 1 || !strstr(out, expect))
			fprintf(stderr, "\n  standby pnfs-mds %s: exit %d: %s\n", modes[k], rc, out);
		CU_ASSERT_EQUAL(rc, 1);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, expect));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "504e465300000000 holds the reservation on 2 of 2 LUN(s)"));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, m->pool));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "--takeover"));
		free(out);
		out = NULL;
		assert_fenced_intact(lab);
	}
	/* the first server never noticed */
	assert_serves(m, "guard-first", "before-takeover");

	/* --takeover: the standby starts (as a daemon), the first one stops on its own. */
	snprintf(more, sizeof(more), "--takeover --scsi-layouts yes --pid-file '%s' --log-file '%s/standby.log'", pidf,
		 m->dir);
	CU_ASSERT_EQUAL(run_mds_on(&out, copy, port2, more), 0);
	free(out);
	out = NULL;
	pid2 = test_pid_from_file(pidf);
	CU_ASSERT(pid2 > 0);
	TW_WAIT_UNTIL(ended || (ended = waitpid(m->pid, &st, WNOHANG) == m->pid), 30 * 1000, 100);
	CU_ASSERT(ended);
	if (ended) {
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
		m->pid = 0;
	}
	/* fenced off (RESERVATION CONFLICT), or it read the standby's record first */
	log = tmds_log(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(log, "this server stops (it no longer owns the LUNs)"));
	free(log);
	test_run(&out, "cat '%s/standby.log'", m->dir);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "TAKEOVER"));
	free(out);
	out = NULL;
	/* the reservation is held (now by the standby), the old run's client still fenced */
	assert_fenced_intact(lab);
	if (pid2 > 0) {
		c = nc_connect(port2);
		CU_ASSERT_PTR_NOT_NULL(c);
		if (c) {
			CU_ASSERT_EQUAL(nc_setup(c, "guard-standby"), 0);
			CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
			CU_ASSERT_EQUAL(nc_mkdir(c, &root, "after-takeover", 0755, NULL), 0);
			nc_free(c);
		}
		kill(pid2, SIGTERM);
		TW_WAIT_UNTIL(kill(pid2, 0) != 0, 10 * 1000, 100);
		if (kill(pid2, 0) == 0)
			kill(pid2, SIGKILL);
	}
	/* stopped cleanly: the first server starts again at once on its own directory */
	CU_ASSERT_EQUAL(tmds_start(m), 0);
	tmds_free(m);
	lab_down(lab);
}

/* ---- space that comes back ------------------------------------------------------------------ */

struct space {
	uint64_t free_bytes, used_bytes, pending_bytes;
};

static int pool_space(const char *pool, struct space *s)
{
	char *out = NULL;
	int rc = admin(&out, pool, "status --json");

	if (rc == 0 && (test_json_u64(out, "free_bytes", &s->free_bytes) || test_json_u64(out, "used_bytes", &s->used_bytes) ||
			test_json_u64(out, "pending_bytes", &s->pending_bytes)))
		rc = -1;
	free(out);
	return rc;
}

struct copy_lab {
	struct test_lab *lab;
	struct test_mds *m;
	struct ct_proxy *px;
	char src[300], keep_src[300], ef[300], opts[4096];
	char *keep;
	size_t keep_len;
};

static int copy_lab_up(struct copy_lab *s, const char *args)
{
	struct lab_opts ram = { .ram = 1 };
	char dst[300];
	size_t total = 96 * MIB;
	char *buf;
	int rc;

	memset(s, 0, sizeof(*s));
	s->lab = lab_up(2, "160M", &ram);
	if (!s->lab)
		return -1;
	s->m = tmds_new(s->lab, NULL, args);
	if (!s->m || tmds_start(s->m) != 0)
		return -1;
	s->px = ct_proxy_start(s->lab->port);
	if (!s->px || ct_relay_opts(s->lab, s->px, "iqn.2024-01.test.pnfs:guard-cp", NULL, s->opts, sizeof(s->opts)))
		return -1;
	snprintf(s->src, sizeof(s->src), "/dev/shm/pnfs-guard.%d.src", (int)getpid());
	snprintf(s->keep_src, sizeof(s->keep_src), "/dev/shm/pnfs-guard.%d.keep", (int)getpid());
	snprintf(s->ef, sizeof(s->ef), "/dev/shm/pnfs-guard.%d.err", (int)getpid());
	buf = malloc(total);
	if (!buf)
		return -1;
	test_fill_random(buf, total, 27);
	rc = ct_write_file(s->src, buf, total);
	free(buf);
	s->keep_len = 3 * MIB + 123;
	s->keep = malloc(s->keep_len);
	if (rc || !s->keep)
		return -1;
	test_fill_random(s->keep, s->keep_len, 28);
	if (ct_write_file(s->keep_src, s->keep, s->keep_len))
		return -1;
	/* Another file, written whole before the copy: it must come out of all this intact. */
	snprintf(dst, sizeof(dst), "pnfs://127.0.0.1:%d/keep", s->m->port);
	{
		int status = -1;
		char errtxt[2048] = "";
		pid_t pid = ct_cp_start(s->opts, s->keep_src, dst, s->ef);
		if (pid <= 0 || ct_cp_wait(pid, 0, 60, &status, s->ef, errtxt, sizeof(errtxt)) != 0 ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "\n  pnfs cp keep: %s\n", errtxt);
			return -1;
		}
	}
	return 0;
}

static void copy_lab_down(struct copy_lab *s)
{
	unlink(s->src);
	unlink(s->keep_src);
	unlink(s->ef);
	if (s->px)
		ct_proxy_stop(s->px);
	tmds_free(s->m);
	lab_down(s->lab);
	free(s->keep);
}

/* A copy of 96 MiB started and stopped (SIGSTOP) once 40 MiB went to the LUNs: its blocks are
 * allocated, not committed. Returns its pid. */
static pid_t copy_started(struct copy_lab *s, const char *name)
{
	char dst[300];
	uint64_t base = ct_proxy_bytes(s->px, 0);
	pid_t pid;

	snprintf(dst, sizeof(dst), "pnfs://127.0.0.1:%d/%s", s->m->port, name);
	pid = ct_cp_start(s->opts, s->src, dst, s->ef);
	if (pid <= 0)
		return -1;
	TW_WAIT_UNTIL(ct_proxy_bytes(s->px, 0) - base >= 40 * MIB, 20 * 1000, 1);
	kill(pid, SIGSTOP);
	return pid;
}

static void kill_copy(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* The other file reads back as written (through the MDS path: no layout). */
static void assert_keep_intact(struct copy_lab *s)
{
	struct nc *c = nc_connect(s->m->port);
	struct nc_fh root, fh;
	stateid4 sid;
	char *back = malloc(s->keep_len);
	size_t got = 0;
	int rc = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "guard-reader"), 0);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c, &root), 0);
	/* a restarted server: its grace period */
	TW_WAIT_UNTIL((rc = nc_open(c, &root, "keep", 0, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE, &fh, &sid)) !=
			      NFS4ERR_GRACE,
		      30 * 1000, 100);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(nc_read(c, &fh, &sid, 0, back, s->keep_len, &got), 0);
	CU_ASSERT_EQUAL(got, s->keep_len);
	CU_ASSERT(memcmp(back, s->keep, s->keep_len) == 0);
	nc_close(c, &fh, &sid);
	free(back);
	nc_free(c);
}

static int space_is_back(struct copy_lab *s, const struct space *before, struct space *now)
{
	return pool_space(s->m->pool, now) == 0 && now->pending_bytes == 0 &&
	       now->free_bytes + now->used_bytes == before->free_bytes + before->used_bytes &&
	       now->free_bytes == before->free_bytes;
}

/* Free space as before the copy, give or take what the file holds committed (its size, in
 * blocks), polling for up to limit_s while the server gets there. */
static int wait_space_back(struct copy_lab *s, const struct space *before, int limit_s, struct space *now)
{
	TW_WAIT_UNTIL(space_is_back(s, before, now), limit_s * 1000, 100);
	return space_is_back(s, before, now) ? 0 : -1;
}

static void test_killed_copy_space_back(void)
{
	struct copy_lab s;
	struct space before, during, after;
	pid_t pid;
	char *out = NULL;

	CU_ASSERT_EQUAL_FATAL(copy_lab_up(&s, "--lease-time 3 --grace-time 3"), 0);
	CU_ASSERT_EQUAL_FATAL(pool_space(s.m->pool, &before), 0);
	pid = copy_started(&s, "killed");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(pool_space(s.m->pool, &during), 0);
	/* the copy really took space ... */
	CU_ASSERT(during.free_bytes + 32 * MIB < before.free_bytes);
	kill_copy(pid);
	/* ... which is back once its lease ran out: nothing of it was committed */
	CU_ASSERT_EQUAL(wait_space_back(&s, &before, 30, &after), 0);
	CU_ASSERT_EQUAL(after.free_bytes, before.free_bytes);
	CU_ASSERT_EQUAL(after.used_bytes, before.used_bytes);
	assert_keep_intact(&s);
	/* offline, check finds nothing left over */
	CU_ASSERT_EQUAL(tmds_stop(s.m, SIGTERM), 0);
	CU_ASSERT_EQUAL(admin(&out, s.m->pool, "check"), 0);
	CU_ASSERT_PTR_NULL(strstr(out, "never committed"));
	free(out);
	copy_lab_down(&s);
}

static void test_killed_server_space_back(void)
{
	struct copy_lab s;
	struct space before, during, after;
	pid_t pid;
	char *out = NULL;
	uint64_t ub = 0;

	CU_ASSERT_EQUAL_FATAL(copy_lab_up(&s, "--lease-time 3 --grace-time 3"), 0);
	CU_ASSERT_EQUAL_FATAL(pool_space(s.m->pool, &before), 0);

	/* 1. pnfs-mds killed mid-copy, the copy gone too: the store keeps the allocation ... */
	pid = copy_started(&s, "first");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(tmds_stop(s.m, SIGKILL), 128 + SIGKILL);
	kill_copy(pid);
	CU_ASSERT_EQUAL_FATAL(pool_space(s.m->pool, &during), 0);
	CU_ASSERT(during.free_bytes + 32 * MIB < before.free_bytes);
	/* ... which check reports, offline, per file */
	CU_ASSERT_EQUAL(admin(&out, s.m->pool, "check"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "allocated and never committed"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "check --repair"));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, s.m->pool, "check --json"), 1);
	CU_ASSERT_EQUAL(test_json_u64(out, "uncommitted_bytes", &ub), 0);
	CU_ASSERT_EQUAL(ub, before.free_bytes - during.free_bytes);
	free(out);
	/* 2. restarted: once its grace period is over the space is back */
	CU_ASSERT_EQUAL_FATAL(tmds_start(s.m), 0);
	CU_ASSERT_EQUAL(wait_space_back(&s, &before, 30, &after), 0);
	CU_ASSERT_EQUAL(after.free_bytes, before.free_bytes);
	assert_keep_intact(&s);
	{
		char *log = tmds_log(s.m);
		CU_ASSERT_PTR_NOT_NULL(strstr(log, "never committed"));
		free(log);
	}

	/* 3. again, and this time check --repair frees it offline */
	pid = copy_started(&s, "second");
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(tmds_stop(s.m, SIGKILL), 128 + SIGKILL);
	kill_copy(pid);
	CU_ASSERT_EQUAL(admin(&out, s.m->pool, "check"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "allocated and never committed"));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, s.m->pool, "check --repair"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "space: repaired"));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, s.m->pool, "check"), 0);
	CU_ASSERT_PTR_NULL(strstr(out, "never committed"));
	free(out);
	CU_ASSERT_EQUAL_FATAL(pool_space(s.m->pool, &after), 0);
	CU_ASSERT_EQUAL(after.free_bytes, before.free_bytes);
	CU_ASSERT_EQUAL(after.used_bytes, before.used_bytes);
	CU_ASSERT_EQUAL_FATAL(tmds_start(s.m), 0);
	assert_keep_intact(&s);
	copy_lab_down(&s);
}

TEST_SUITE(mds_guard, "integration/mds-guard", NULL, NULL,
	   { "second_server_refused", test_second_server_refused },
	   { "other_copy_refused_then_takeover", test_other_copy_refused_then_takeover },
	   { "killed_copy_space_back", test_killed_copy_space_back },
	   { "killed_server_space_back", test_killed_server_space_back });
