/* The event loop: file events on socket pairs, timers in order, re-arming, and removal from inside
 * callbacks (the cases a server hits when a connection dies while its events are pending). */
#include "tests/harness.h"

#include "mds/loop.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct rec {
	int calls;
	int last_events;
	char buf[64];
	int len;
};

static void on_read(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct rec *r = arg;
	(void)loop;
	r->calls++;
	r->last_events = events;
	if (events & MDS_EV_READ) {
		ssize_t n = read(fd, r->buf + r->len, sizeof(r->buf) - (size_t)r->len);
		if (n > 0)
			r->len += (int)n;
	}
}

static void test_file_events(void)
{
	struct mds_loop *loop = mds_loop_new();
	struct rec r = { 0 };
	int sv[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL(mds_loop_add_fd(loop, sv[0], MDS_EV_READ, on_read, &r), 0);
	CU_ASSERT_EQUAL(mds_loop_fd_mask(loop, sv[0]), MDS_EV_READ);
	/* Nothing to read: a bounded wait returns with nothing handled. */
	CU_ASSERT_EQUAL(mds_loop_once(loop, 10), 0);
	CU_ASSERT_EQUAL(r.calls, 0);
	CU_ASSERT_EQUAL(write(sv[1], "hello", 5), 5);
	CU_ASSERT_EQUAL(mds_loop_once(loop, 1000), 1);
	CU_ASSERT_EQUAL(r.calls, 1);
	CU_ASSERT_EQUAL(r.len, 5);
	CU_ASSERT(memcmp(r.buf, "hello", 5) == 0);
	/* Writable is reported only when asked for. */
	CU_ASSERT_EQUAL(mds_loop_add_fd(loop, sv[0], MDS_EV_WRITE, on_read, &r), 0);
	CU_ASSERT_EQUAL(mds_loop_fd_mask(loop, sv[0]), MDS_EV_READ | MDS_EV_WRITE);
	CU_ASSERT_EQUAL(mds_loop_once(loop, 1000), 1);
	CU_ASSERT_EQUAL(r.last_events, MDS_EV_WRITE);
	mds_loop_del_fd(loop, sv[0], MDS_EV_WRITE);
	CU_ASSERT_EQUAL(mds_loop_once(loop, 10), 0);
	/* Peer hang-up shows as readable + error. */
	close(sv[1]);
	CU_ASSERT_EQUAL(mds_loop_once(loop, 1000), 1);
	CU_ASSERT(r.last_events & MDS_EV_READ);
	mds_loop_del_fd(loop, sv[0], MDS_EV_READ);
	CU_ASSERT_EQUAL(mds_loop_fd_mask(loop, sv[0]), 0);
	CU_ASSERT_EQUAL(mds_loop_add_fd(loop, -1, MDS_EV_READ, on_read, &r), -EINVAL);
	close(sv[0]);
	mds_loop_free(loop);
}

/* Two fds ready in the same iteration; the first callback removes and closes the second. The
 * second callback must not run. */
struct pair_ctx {
	int fds[2];
	int calls[2];
};

static void on_pair(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct pair_ctx *p = arg;
	int me = fd == p->fds[0] ? 0 : 1;
	(void)events;
	p->calls[me]++;
	char c;
	if (read(fd, &c, 1) < 0) { /* drained below anyway */ }
	mds_loop_del_fd(loop, p->fds[!me], MDS_EV_READ);
}

static void test_delete_pending_fd(void)
{
	struct mds_loop *loop = mds_loop_new();
	struct pair_ctx p = { 0 };
	int a[2], b[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	p.fds[0] = a[0];
	p.fds[1] = b[0];
	CU_ASSERT_EQUAL(mds_loop_add_fd(loop, a[0], MDS_EV_READ, on_pair, &p), 0);
	CU_ASSERT_EQUAL(mds_loop_add_fd(loop, b[0], MDS_EV_READ, on_pair, &p), 0);
	CU_ASSERT_EQUAL(write(a[1], "x", 1), 1);
	CU_ASSERT_EQUAL(write(b[1], "y", 1), 1);
	mds_loop_once(loop, 1000);
	CU_ASSERT_EQUAL(p.calls[0] + p.calls[1], 1);
	close(a[0]); close(a[1]); close(b[0]); close(b[1]);
	mds_loop_free(loop);
}

struct tctx {
	int order[16];
	int n;
	int fires_left;
	uint64_t kill;  /* a timer to delete from the callback */
	struct mds_loop *loop;
};

static int64_t on_timer(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct tctx *t = arg;
	(void)loop;
	if (t->n < 16)
		t->order[t->n++] = (int)id;
	if (t->kill) {
		CU_ASSERT_EQUAL(mds_loop_del_timer(loop, t->kill), 0);
		t->kill = 0;
	}
	return MDS_TIMER_STOP;
}

static int64_t on_repeat(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct tctx *t = arg;
	(void)loop;
	(void)id;
	t->n++;
	if (--t->fires_left <= 0) {
		mds_loop_stop(loop);
		return MDS_TIMER_STOP;
	}
	return 1;
}

static void test_timers(void)
{
	struct mds_loop *loop = mds_loop_new();
	struct tctx t = { 0 };
	uint64_t a, b, c, start;

	CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
	/* Added out of order, fire in time order. */
	c = mds_loop_add_timer(loop, 30, on_timer, &t);
	a = mds_loop_add_timer(loop, 10, on_timer, &t);
	b = mds_loop_add_timer(loop, 20, on_timer, &t);
	CU_ASSERT(a && b && c);
	start = mds_loop_now_ms();
	while (t.n < 3 && mds_loop_now_ms() - start < 2000)
		mds_loop_once(loop, -1);
	CU_ASSERT_EQUAL(t.n, 3);
	CU_ASSERT_EQUAL(t.order[0], (int)a);
	CU_ASSERT_EQUAL(t.order[1], (int)b);
	CU_ASSERT_EQUAL(t.order[2], (int)c);
	CU_ASSERT(mds_loop_now_ms() - start >= 30);
	/* A stopped timer is gone. */
	CU_ASSERT_EQUAL(mds_loop_del_timer(loop, a), -ENOENT);

	/* Two timers due in the same round: the first deletes the second, which must not fire. */
	t.n = 0;
	a = mds_loop_add_timer(loop, 0, on_timer, &t);
	b = mds_loop_add_timer(loop, 0, on_timer, &t);
	t.kill = b;
	mds_loop_once(loop, 100);
	mds_loop_once(loop, 20);
	CU_ASSERT_EQUAL(t.n, 1);
	CU_ASSERT_EQUAL(t.order[0], (int)a);

	/* A re-arming timer drives mds_loop_run until it stops the loop. */
	t.n = 0;
	t.fires_left = 5;
	CU_ASSERT(mds_loop_add_timer(loop, 1, on_repeat, &t) != 0);
	CU_ASSERT_EQUAL(mds_loop_run(loop), 0);
	CU_ASSERT_EQUAL(t.n, 5);
	mds_loop_free(loop);
}

TEST_SUITE(mds_loop, "mds/loop", NULL, NULL,
	   { "file_events", test_file_events },
	   { "delete_pending_fd", test_delete_pending_fd },
	   { "timers", test_timers });
