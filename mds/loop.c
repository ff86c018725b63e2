/* The MDS event loop: epoll for file events, a sorted list of timers, dispatch from one thread.
 * Callbacks may add and remove events and timers freely: the dispatcher re-checks each fd's mask
 * before calling and removes timers lazily, so nothing fires after it was deleted. */
#include "mds/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct file_ev {
	int mask;
	mds_file_fn *fn;
	void *arg;
};

struct timer {
	uint64_t id;
	uint64_t when_ms;
	mds_timer_fn *fn;
	void *arg;
	int deleted;
	struct timer *next;
};

struct mds_loop {
	int epfd;
	struct file_ev *fds; /* indexed by fd */
	int nfds;            /* capacity of fds */
	struct timer *timers; /* sorted by when_ms */
	struct timer *firing; /* due timers of the current round, detached from timers */
	struct timer *running; /* the timer whose callback runs now */
	uint64_t next_timer_id;
	int stop;
	struct epoll_event evs[256];
	mds_turn_fn *turn_end;        /* run after every turn's handlers and timers */
	void *turn_end_arg;
	int again;                    /* turn_end asked for another turn without sleeping */
};

uint64_t mds_loop_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct mds_loop *mds_loop_new(void)
{
	struct mds_loop *loop = calloc(1, sizeof(*loop));

	if (!loop)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		int e = errno;
		free(loop);
		errno = e;
		return NULL;
	}
	loop->next_timer_id = 1;
	return loop;
}

void mds_loop_free(struct mds_loop *loop)
{
	struct timer *t, *n;

	if (!loop)
		return;
	for (t = loop->timers; t; t = n) {
		n = t->next;
		free(t);
	}
	close(loop->epfd);
	free(loop->fds);
	free(loop);
}

static int grow_fds(struct mds_loop *loop, int fd)
{
	int n = loop->nfds ? loop->nfds : 64;
	struct file_ev *nf;

	while (n <= fd)
		n *= 2;
	nf = realloc(loop->fds, (size_t)n * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	memset(nf + loop->nfds, 0, (size_t)(n - loop->nfds) * sizeof(*nf));
	loop->fds = nf;
	loop->nfds = n;
	return 0;
}

static uint32_t to_epoll(int mask)
{
	return (mask & MDS_EV_READ ? EPOLLIN : 0) | (mask & MDS_EV_WRITE ? EPOLLOUT : 0);
}

int mds_loop_add_fd(struct mds_loop *loop, int fd, int mask, mds_file_fn *fn, void *arg)
{
	struct epoll_event ee = { 0 };
	struct file_ev *fe;
	int op, rc;

	if (fd < 0 || !fn || !(mask & (MDS_EV_READ | MDS_EV_WRITE)))
		return -EINVAL;
	if (fd >= loop->nfds) {
		rc = grow_fds(loop, fd);
		if (rc)
			return rc;
	}
	fe = &loop->fds[fd];
	op = fe->mask ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	ee.events = to_epoll(fe->mask | mask);
	ee.data.fd = fd;
	if (epoll_ctl(loop->epfd, op, fd, &ee) < 0)
		return -errno;
	fe->mask |= mask;
	fe->fn = fn;
	fe->arg = arg;
	return 0;
}

void mds_loop_del_fd(struct mds_loop *loop, int fd, int mask)
{
	struct epoll_event ee = { 0 };
	struct file_ev *fe;

	if (fd < 0 || fd >= loop->nfds || !loop->fds[fd].mask)
		return;
	fe = &loop->fds[fd];
	fe->mask &= ~mask;
	ee.data.fd = fd;
	if (fe->mask) {
		ee.events = to_epoll(fe->mask);
		(void)epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ee);
	} else {
		/* The fd may already be closed by its owner: ignore the error. */
		(void)epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, &ee);
		fe->fn = NULL;
		fe->arg = NULL;
	}
}

int mds_loop_fd_mask(struct mds_loop *loop, int fd)
{
	if (fd < 0 || fd >= loop->nfds)
		return 0;
	return loop->fds[fd].mask;
}

static void insert_timer(struct mds_loop *loop, struct timer *t)
{
	struct timer **pp = &loop->timers;

	while (*pp && (*pp)->when_ms <= t->when_ms)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
}

uint64_t mds_loop_add_timer(struct mds_loop *loop, int64_t delay_ms, mds_timer_fn *fn, void *arg)
{
	struct timer *t = calloc(1, sizeof(*t));

	if (!t)
		return 0;
	if (delay_ms < 0)
		delay_ms = 0;
	t->id = loop->next_timer_id++;
	t->when_ms = mds_loop_now_ms() + (uint64_t)delay_ms;
	t->fn = fn;
	t->arg = arg;
	insert_timer(loop, t);
	return t->id;
}

static int mark_deleted(struct timer *list, uint64_t id)
{
	for (struct timer *t = list; t; t = t->next) {
		if (t->id == id && !t->deleted) {
			t->deleted = 1;
			return 0;
		}
	}
	return -ENOENT;
}

int mds_loop_del_timer(struct mds_loop *loop, uint64_t id)
{
	if (loop->running && loop->running->id == id && !loop->running->deleted) {
		loop->running->deleted = 1;
		return 0;
	}
	if (mark_deleted(loop->firing, id) == 0)
		return 0;
	return mark_deleted(loop->timers, id);
}

static void reap_timers(struct mds_loop *loop)
{
	struct timer **pp = &loop->timers;

	while (*pp) {
		struct timer *t = *pp;
		if (t->deleted) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

/* Fire every timer due now. A timer re-armed by its callback goes back into the list for a later
 * round, so a zero-delay timer cannot starve file events. */
static int run_timers(struct mds_loop *loop)
{
	uint64_t now = mds_loop_now_ms();
	struct timer **tail = &loop->firing;
	int n = 0;

	while (loop->timers && loop->timers->when_ms <= now) {
		struct timer *t = loop->timers;
		loop->timers = t->next;
		t->next = NULL;
		*tail = t;
		tail = &t->next;
	}
	while (loop->firing) {
		struct timer *t = loop->firing;
		int64_t again;

		loop->firing = t->next;
		t->next = NULL;
		if (t->deleted) {
			free(t);
			continue;
		}
		loop->running = t;
		again = t->fn(loop, t->id, t->arg);
		loop->running = NULL;
		n++;
		if (again < 0 || t->deleted) {
			free(t);
			continue;
		}
		t->when_ms = mds_loop_now_ms() + (uint64_t)again;
		insert_timer(loop, t);
	}
	reap_timers(loop);
	return n;
}

static int next_timeout(struct mds_loop *loop, int timeout_ms)
{
	uint64_t now, when;
	int64_t wait;

	for (struct timer *t = loop->timers; t; t = t->next) {
		if (t->deleted)
			continue;
		when = t->when_ms;
		now = mds_loop_now_ms();
		wait = when > now ? (int64_t)(when - now) : 0;
		if (timeout_ms < 0 || wait < timeout_ms)
			return (int)(wait > 1000000 ? 1000000 : wait);
		break;
	}
	return timeout_ms;
}

int mds_loop_once(struct mds_loop *loop, int timeout_ms)
{
	int n, handled = 0;

	n = epoll_wait(loop->epfd, loop->evs, (int)(sizeof(loop->evs) / sizeof(loop->evs[0])),
		       loop->again ? 0 : next_timeout(loop, timeout_ms));
	loop->again = 0;
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		int fd = loop->evs[i].data.fd;
		uint32_t e = loop->evs[i].events;
		struct file_ev *fe;
		int fired = 0;

		if (fd >= loop->nfds)
			continue;
		fe = &loop->fds[fd];
		if (e & (EPOLLIN | EPOLLHUP | EPOLLERR))
			fired |= MDS_EV_READ;
		if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
			fired |= MDS_EV_WRITE;
		fired &= fe->mask;
		if (e & (EPOLLHUP | EPOLLERR))
			fired |= MDS_EV_ERROR;
		if (!fe->mask || !fe->fn)
			continue;
		fe->fn(loop, fd, fired, fe->arg);
		handled++;
	}
	handled += run_timers(loop);
	if (loop->turn_end)
		loop->again = loop->turn_end(loop->turn_end_arg) != 0;
	return handled;
}

void mds_loop_set_turn_end(struct mds_loop *loop, mds_turn_fn *fn, void *arg)
{
	loop->turn_end = fn;
	loop->turn_end_arg = arg;
}

int mds_loop_run(struct mds_loop *loop)
{
	loop->stop = 0;
	while (!loop->stop) {
		int rc = mds_loop_once(loop, -1);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void mds_loop_stop(struct mds_loop *loop)
{
	loop->stop = 1;
}
