/* The MDS event loop: one epoll set of file events plus a list of timers, in the spirit of Redis'
 * ae.c. Everything the server does runs from callbacks of this loop on one thread; no callback may
 * block. File callbacks get the events that fired; timer callbacks say when to fire next. */
#ifndef MDS_LOOP_H
#define MDS_LOOP_H

#include <stdint.h>

struct mds_loop;

#define MDS_EV_READ 1
#define MDS_EV_WRITE 2
/* Reported to file callbacks only: the peer hung up or the fd is in error (epoll HUP/ERR). */
#define MDS_EV_ERROR 4

/* A file event: `events` is the subset of the registered mask that fired (plus MDS_EV_ERROR). */
typedef void mds_file_fn(struct mds_loop *loop, int fd, int events, void *arg);

/* A timer: return the delay in milliseconds until the next firing, or MDS_TIMER_STOP to end it
 * (the timer is then deleted; its id becomes invalid). */
#define MDS_TIMER_STOP (-1)
typedef int64_t mds_timer_fn(struct mds_loop *loop, uint64_t id, void *arg);

/* Create a loop. Caller frees with mds_loop_free(). Returns NULL on failure (errno set). */
struct mds_loop *mds_loop_new(void);
/* Free the loop and its timers. File descriptors are not closed (their owners close them). */
void mds_loop_free(struct mds_loop *loop);

/* Watch fd for `mask` (MDS_EV_READ | MDS_EV_WRITE); adding to an fd already watched merges the
 * mask and replaces the callback. `arg` is borrowed until the fd is removed. Returns 0 or -errno. */
int mds_loop_add_fd(struct mds_loop *loop, int fd, int mask, mds_file_fn *fn, void *arg);
/* Stop watching `mask` on fd; when nothing is left the fd leaves the epoll set. Safe to call from
 * any callback, including for an fd whose events are pending in the current iteration. */
void mds_loop_del_fd(struct mds_loop *loop, int fd, int mask);
/* The mask currently watched on fd (0 when none). */
int mds_loop_fd_mask(struct mds_loop *loop, int fd);

/* Add a timer firing after delay_ms; returns its id (> 0) or 0 on allocation failure. */
uint64_t mds_loop_add_timer(struct mds_loop *loop, int64_t delay_ms, mds_timer_fn *fn, void *arg);
/* Delete a timer by id; returns 0 or -ENOENT. Safe from inside any callback (also its own). */
int mds_loop_del_timer(struct mds_loop *loop, uint64_t id);

/* Milliseconds on a monotonic clock (the loop's time base). */
uint64_t mds_loop_now_ms(void);

/* Run one iteration: wait up to timeout_ms (-1: until the next timer or an event) and dispatch.
 * Returns the number of events and timers handled, or -errno (EINTR is not an error: 0). */
int mds_loop_once(struct mds_loop *loop, int timeout_ms);
/* Run until mds_loop_stop(). Returns 0, or -errno when epoll fails. */
int mds_loop_run(struct mds_loop *loop);
/* fn(arg) runs at the end of every turn (after the file handlers and timers that were due, before
 * the loop waits again): work that is cheaper done once for everything the turn did. When it
 * returns nonzero the next turn does not wait for events (it only takes those already there). */
typedef int mds_turn_fn(void *arg);
void mds_loop_set_turn_end(struct mds_loop *loop, mds_turn_fn *fn, void *arg);
/* Make mds_loop_run() return after the current iteration. */
void mds_loop_stop(struct mds_loop *loop);

#endif
