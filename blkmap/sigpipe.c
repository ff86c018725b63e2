/* SIGPIPE kept away from the application around libiscsi's socket writes. libiscsi sends a PDU's
 * header with MSG_NOSIGNAL but its data with plain writev(), so a target that dies mid-transfer can
 * raise SIGPIPE in the caller's thread, whose default action ends the process. A library must not
 * change the process's signal dispositions, so the signal is blocked in the calling thread for the
 * duration of the call, and one the call raised is taken back with sigtimedwait() before the old mask
 * returns. Nested guards (a send inside a service) cost nothing. */
#include "blkmap/internal.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

static _Thread_local unsigned guard_depth;

static void pipe_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGPIPE);
}

void bm_sigpipe_block(struct bm_sigpipe *g)
{
	sigset_t set, pending;

	g->active = guard_depth++ == 0;
	if (!g->active)
		return;
	pipe_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
	/* One pending already (raised elsewhere, with the signal blocked by the application) is not ours.
	 * Unblocked in this thread until now, none can be: it would have been delivered here. */
	g->was_pending = sigismember(&g->old, SIGPIPE) == 1 && sigpending(&pending) == 0 &&
			 sigismember(&pending, SIGPIPE) == 1;
}

void bm_sigpipe_restore(struct bm_sigpipe *g)
{
	sigset_t set, pending;
	int saved = errno;

	guard_depth--;
	if (!g->active)
		return;
	pipe_set(&set);
	if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
		const struct timespec now = { 0, 0 };
		while (sigtimedwait(&set, NULL, &now) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	errno = saved;
}
