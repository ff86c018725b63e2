/* The SIGPIPE guard blkmap puts around libiscsi's socket writes: inside it, a write to a broken pipe
 * fails with EPIPE instead of ending the process (the default action is in force here); afterwards
 * the signal it raised is gone and the thread's mask and SIGPIPE's action are what they were. A
 * SIGPIPE that was pending before is left pending for the application. */
#include "blkmap/internal.h"
#include "tests/harness.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int pipe_pending(void)
{
	sigset_t p;
	return sigpending(&p) == 0 && sigismember(&p, SIGPIPE) == 1;
}

static int pipe_blocked(void)
{
	sigset_t m;
	return pthread_sigmask(SIG_BLOCK, NULL, &m) == 0 && sigismember(&m, SIGPIPE) == 1;
}

/* write() to a pipe whose read end is closed: -errno */
static int write_broken_pipe(void)
{
	int p[2], rc;

	if (pipe(p) != 0)
		return -errno;
	close(p[0]);
	rc = write(p[1], "x", 1) < 0 ? -errno : 0;
	close(p[1]);
	return rc;
}

static void test_guard(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, was, now;
	struct bm_sigpipe outer, inner;

	sigemptyset(&dfl.sa_mask);
	CU_ASSERT_EQUAL_FATAL(sigaction(SIGPIPE, &dfl, &was), 0); /* the runner ignores it */
	CU_ASSERT_FALSE_FATAL(pipe_blocked());

	bm_sigpipe_block(&outer);
	CU_ASSERT_TRUE(pipe_blocked());
	bm_sigpipe_block(&inner); /* nested: a send inside a service */
	CU_ASSERT_EQUAL(write_broken_pipe(), -EPIPE);
	bm_sigpipe_restore(&inner);
	CU_ASSERT_TRUE(pipe_blocked()); /* the outer guard still holds */
	CU_ASSERT_TRUE(pipe_pending());
	CU_ASSERT_EQUAL(write_broken_pipe(), -EPIPE);
	bm_sigpipe_restore(&outer);
	/* we are still alive: the signal was taken back before the mask came back */
	CU_ASSERT_FALSE(pipe_blocked());
	CU_ASSERT_FALSE(pipe_pending());
	CU_ASSERT_EQUAL(sigaction(SIGPIPE, NULL, &now), 0);
	CU_ASSERT_PTR_EQUAL(now.sa_handler, SIG_DFL);

	/* a guard that saw no broken pipe changes nothing */
	bm_sigpipe_block(&outer);
	bm_sigpipe_restore(&outer);
	CU_ASSERT_FALSE(pipe_blocked());
	CU_ASSERT_FALSE(pipe_pending());
	sigaction(SIGPIPE, &was, NULL);
}

static void test_pending_before_is_kept(void)
{
	sigset_t set, old;
	struct bm_sigpipe g;
	const struct timespec zero = { 0, 0 };

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	CU_ASSERT_EQUAL_FATAL(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
	CU_ASSERT_EQUAL(raise(SIGPIPE), 0); /* the application's own, pending while it blocks it */
	CU_ASSERT_TRUE(pipe_pending());
	bm_sigpipe_block(&g);
	CU_ASSERT_EQUAL(write_broken_pipe(), -EPIPE);
	bm_sigpipe_restore(&g);
	CU_ASSERT_TRUE(pipe_blocked()); /* the application's mask */
	CU_ASSERT_TRUE(pipe_pending()); /* and its signal */
	CU_ASSERT_EQUAL(sigtimedwait(&set, NULL, &zero), SIGPIPE);
	CU_ASSERT_FALSE(pipe_pending());
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

TEST_SUITE(blkmap_sigpipe, "blkmap/sigpipe", NULL, NULL,
	   { "guard", test_guard },
	   { "pending_before_is_kept", test_pending_before_is_kept });
