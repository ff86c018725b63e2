/* The rules behind one server per pool, without a SAN: DIR/mds.lock (a second taker is refused
 * with the holder named, the lock goes with its holder), and the heartbeat record (round trip,
 * any damaged byte rejected, and when it says a server is alive). */
#include "mds/guard.h"
#include "mds/pool_lock.h"
#include "tests/harness.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_lock_refuses_second_taker(void)
{
	const char *dir = test_tmpdir("pool-lock");
	struct mds_pool_holder h;
	char err[1024], want[64];
	int fd = -1, fd2 = -1;

	CU_ASSERT_EQUAL(mds_pool_lock_holder(dir, &h), 0);
	CU_ASSERT_EQUAL_FATAL(mds_pool_lock(dir, "pnfs-mds", &fd, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mds_pool_lock_set_listen(fd, "127.0.0.1", 2049), 0);
	/* another open file description, as another process has */
	CU_ASSERT_EQUAL(mds_pool_lock(dir, "pnfs-mds", &fd2, &h, err, sizeof(err)), -EBUSY);
	CU_ASSERT_EQUAL(fd2, -1);
	CU_ASSERT_EQUAL(h.pid, (int)getpid());
	snprintf(want, sizeof(want), "is served by pnfs-mds pid %d on ", (int)getpid());
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, dir));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "(listening on 127.0.0.1:2049)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, " UTC "));
	CU_ASSERT_EQUAL(mds_pool_lock_holder(dir, &h), 1);
	CU_ASSERT_STRING_EQUAL(h.listen, "127.0.0.1:2049");
	mds_pool_unlock(fd);
	CU_ASSERT_EQUAL(mds_pool_lock_holder(dir, &h), 0);
	/* a holder that dies releases it without a word */
	{
		pid_t pid = fork();
		int st;
		if (pid == 0) {
			int cfd;
			char e[256];
			_exit(mds_pool_lock(dir, "pnfs-admin check --repair", &cfd, NULL, e, sizeof(e)) ? 1 : 0);
		}
		CU_ASSERT_FATAL(pid > 0);
		waitpid(pid, &st, 0);
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CU_ASSERT_EQUAL(mds_pool_lock(dir, "pnfs-mds", &fd, NULL, err, sizeof(err)), 0);
	mds_pool_unlock(fd);
}

static void sample(struct mds_guard_beat *b)
{
	memset(b, 0, sizeof(*b));
	b->state = MDS_GUARD_SERVING;
	for (int i = 0; i < 16; i++)
		b->pool_uuid[i] = (uint8_t)(i * 7 + 1);
	b->nonce = 0x0123456789abcdefull;
	b->started = 1800000000;
	b->beat = 1800000100;
	b->seq = 51;
	b->pid = 4242;
	snprintf(b->host, sizeof(b->host), "mds1.example");
	snprintf(b->listen, sizeof(b->listen), "0.0.0.0:2049");
	snprintf(b->dir, sizeof(b->dir), "/srv/pool");
	for (int i = 0; i < 16; i++)
		b->boot_id[i] = (uint8_t)(0xa0 + i);
}

static void test_beat_roundtrip_and_damage(void)
{
	struct mds_guard_beat b, back;
	uint8_t rec[MDS_GUARD_RECORD_BYTES];

	sample(&b);
	mds_guard_encode(&b, rec);
	CU_ASSERT_EQUAL_FATAL(mds_guard_decode(rec, sizeof(rec), &back), 0);
	CU_ASSERT(memcmp(&b, &back, sizeof(b)) == 0);
	for (size_t i = 0; i < sizeof(rec); i++) {
		rec[i] ^= 0x10;
		CU_ASSERT_EQUAL(mds_guard_decode(rec, sizeof(rec), &back), -ENOENT);
		rec[i] ^= 0x10;
	}
	CU_ASSERT_EQUAL(mds_guard_decode(rec, sizeof(rec) - 1, &back), -ENOENT);
	memset(rec, 0, sizeof(rec));
	CU_ASSERT_EQUAL(mds_guard_decode(rec, sizeof(rec), &back), -ENOENT);
}

static void test_beat_alive_rules(void)
{
	struct mds_guard_beat b;
	uint8_t other[16], zero[16] = { 0 };
	char why[200];
	pid_t dead;
	int st;

	sample(&b);
	mds_guard_boot_id(other);
	CU_ASSERT(memcmp(other, zero, 16) != 0);
	/* another host (or another boot of this one, or a clone with the same name) */
	memset(other, 0x55, sizeof(other));
	/* another host: the age of the last beat decides */
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat + 1, other, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat + MDS_GUARD_STALE_S - 1, other, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat + MDS_GUARD_STALE_S, other, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "old"));
	/* a clean stop is never alive */
	b.state = MDS_GUARD_STOPPED;
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat, other, why, sizeof(why)), 0);
	b.state = MDS_GUARD_SERVING;
	/* this host, this boot: whether the process exists, whatever the clock says */
	b.pid = (uint32_t)getpid();
	memcpy(other, b.boot_id, 16);
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat + 100000, other, why, sizeof(why)), 1);
	dead = fork();
	if (dead == 0)
		_exit(0);
	CU_ASSERT_FATAL(dead > 0);
	waitpid(dead, &st, 0);
	b.pid = (uint32_t)dead;
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat, other, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "gone"));
	/* a record without a boot ID is judged by its beat */
	memset(b.boot_id, 0, 16);
	memset(other, 0, 16);
	b.pid = (uint32_t)getpid();
	CU_ASSERT_EQUAL(mds_guard_alive(&b, b.beat + MDS_GUARD_STALE_S, other, why, sizeof(why)), 0);
}

TEST_SUITE(pool_guard, "mds/pool_guard", NULL, NULL,
	   { "lock_refuses_second_taker", test_lock_refuses_second_taker },
	   { "beat_roundtrip_and_damage", test_beat_roundtrip_and_damage },
	   { "beat_alive_rules", test_beat_alive_rules });
