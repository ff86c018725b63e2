/* The context and its event loop: one epoll set holds the MDS socket, each resolved device's blkmap fd
 * (its LUN sessions), the resolver threads' wake-ups and a timerfd for the context's timers, so the
 * whole client is one pollable fd. Timers with delay 0
 * are also how work is deferred out of callbacks to the top of pnfs_service(). */
#include "client/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

uint64_t pc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- errors ---------------------------------------------------------------------------------- */

int pc_err(struct pnfs_context *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	if (!ctx)
		return err;
	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *pnfs_get_error(struct pnfs_context *ctx)
{
	return ctx ? ctx->err : "no context";
}

int pc_nfs_errno(nfsstat4 st)
{
	switch (st) {
	case NFS4_OK: return 0;
	case NFS4ERR_PERM: return -EPERM;
	case NFS4ERR_NOENT: return -ENOENT;
	case NFS4ERR_IO: return -EIO;
	case NFS4ERR_NXIO: return -ENXIO;
	case NFS4ERR_ACCESS: return -EACCES;
	case NFS4ERR_EXIST: return -EEXIST;
	case NFS4ERR_XDEV: return -EXDEV;
	case NFS4ERR_NOTDIR: return -ENOTDIR;
	case NFS4ERR_ISDIR: return -EISDIR;
	case NFS4ERR_INVAL: return -EINVAL;
	case NFS4ERR_FBIG: return -EFBIG;
	case NFS4ERR_NOSPC: return -ENOSPC;
	case NFS4ERR_ROFS: return -EROFS;
	case NFS4ERR_MLINK: return -EMLINK;
	case NFS4ERR_NAMETOOLONG: return -ENAMETOOLONG;
	case NFS4ERR_NOTEMPTY: return -ENOTEMPTY;
	case NFS4ERR_DQUOT: return -EDQUOT;
	case NFS4ERR_STALE: return -ESTALE;
	case NFS4ERR_BADHANDLE: return -EBADF;
	case NFS4ERR_NOTSUPP: return -EOPNOTSUPP;
	case NFS4ERR_TOOSMALL: return -ERANGE;
	case NFS4ERR_BADTYPE: return -EINVAL;
	case NFS4ERR_DELAY: return -EAGAIN;
	case NFS4ERR_GRACE: return -EAGAIN;
	case NFS4ERR_SYMLINK: return -ELOOP;
	case NFS4ERR_WRONGSEC: return -EACCES;
	case NFS4ERR_LOCKED: return -EAGAIN;
	case NFS4ERR_SHARE_DENIED: return -EACCES;
	case NFS4ERR_OPENMODE: return -EBADF;
	case NFS4ERR_BADNAME: return -EINVAL;
	case NFS4ERR_BADCHAR: return -EINVAL;
	case NFS4ERR_LAYOUTUNAVAILABLE: return -ENODATA;
	case NFS4ERR_UNKNOWN_LAYOUTTYPE: return -ENODATA;
	case NFS4ERR_LAYOUTTRYLATER: return -EAGAIN;
	case NFS4ERR_RECALLCONFLICT: return -EAGAIN;
	case NFS4ERR_NOMATCHING_LAYOUT: return -ENOENT;
	case NFS4ERR_BADLAYOUT: return -EINVAL;
	case NFS4ERR_RESOURCE: return -ENOMEM;
	case NFS4ERR_REP_TOO_BIG: return -EMSGSIZE;
	case NFS4ERR_REQ_TOO_BIG: return -EMSGSIZE;
	case NFS4ERR_TOO_MANY_OPS: return -E2BIG;
	case NFS4ERR_BADXDR: return -EPROTO;
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_OLD_STATEID:
	case NFS4ERR_EXPIRED:
	case NFS4ERR_ADMIN_REVOKED:
	case NFS4ERR_DELEG_REVOKED:
		return -EBADF;
	case NFS4ERR_BADSESSION:
	case NFS4ERR_DEADSESSION:
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_CONN_NOT_BOUND_TO_SESSION:
		return -ENOTCONN;
	default:
		return -EIO;
	}
}

/* ---- options --------------------------------------------------------------------------------- */

void pnfs_opts_init(struct pnfs_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
}

char **pc_strv_dup(const char *const *v, unsigned n, int *fail)
{
	char **out;

	if (!n)
		return NULL;
	out = calloc(n, sizeof(*out));
	if (!out) {
		*fail = 1;
		return NULL;
	}
	for (unsigned i = 0; i < n; i++) {
		out[i] = strdup(v[i] ? v[i] : "");
		if (!out[i])
			*fail = 1;
	}
	return out;
}

void pc_strv_free(char **v, unsigned n)
{
	if (!v)
		return;
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* ---- loop ------------------------------------------------------------------------------------ */

int pc_watch_add(struct pnfs_context *ctx, struct pc_watch *w)
{
	struct epoll_event ev = { .events = w->events, .data.ptr = w };

	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
		return -errno;
	w->added = 1;
	return 0;
}

int pc_watch_mod(struct pnfs_context *ctx, struct pc_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (w->events == events && w->added)
		return 0;
	w->events = events;
	if (!w->added)
		return pc_watch_add(ctx, w);
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	return 0;
}

void pc_watch_del(struct pnfs_context *ctx, struct pc_watch *w)
{
	if (w->added)
		epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->added = 0;
}

static void timerfd_rearm(struct pnfs_context *ctx)
{
	struct itimerspec its = { 0 };
	uint64_t now = pc_now_ms(), due = 0;

	if (!proto_list_empty(&ctx->timers))
		due = proto_list_first(&ctx->timers, struct pc_timer, link)->due_ms;
	/* Set already (a timerfd that fired stays disarmed, and run_timers() left none due): every
	 * service pass would otherwise pay a timerfd_settime, two per I/O. */
	if (due == ctx->tfd_due_ms && (due == 0 || due > now))
		return;
	ctx->tfd_due_ms = due;
	if (due) {
		uint64_t d = due > now ? due - now : 0;
		if (d == 0) {
			its.it_value.tv_nsec = 1; /* fire at once */
		} else {
			its.it_value.tv_sec = d / 1000;
			its.it_value.tv_nsec = (long)(d % 1000) * 1000000L;
		}
	}
	timerfd_settime(ctx->tfd, 0, &its, NULL);
}

void pc_timer_cancel(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)ctx;
	if (!t->armed)
		return;
	proto_list_del(&t->link);
	t->armed = 0;
}

void pc_timer_arm(struct pnfs_context *ctx, struct pc_timer *t, uint64_t delay_ms)
{
	struct proto_list *at;

	pc_timer_cancel(ctx, t);
	t->due_ms = pc_now_ms() + delay_ms;
	at = ctx->timers.next;
	/* after every timer due at the same time or earlier */
	while (at != &ctx->timers && proto_list_entry(at, struct pc_timer, link)->due_ms <= t->due_ms)
		at = at->next;
	proto_list_add_tail(at, &t->link);
	t->armed = 1;
	if (ctx->timers.next == &t->link && !ctx->servicing)
		timerfd_rearm(ctx);
}

static void run_timers(struct pnfs_context *ctx)
{
	/* Bounded: a timer that re-arms itself at 0 runs again on the next service. */
	for (int n = 0; n < 10000 && !proto_list_empty(&ctx->timers); n++) {
		struct pc_timer *t = proto_list_first(&ctx->timers, struct pc_timer, link);
		if (t->due_ms > pc_now_ms())
			break;
		pc_timer_cancel(ctx, t);
		t->fn(ctx, t);
	}
}

static void timer_fd_ready(struct pnfs_context *ctx, struct pc_watch *w, uint32_t revents)
{
	uint64_t n;
	(void)revents;
	ctx->tfd_due_ms = 0; /* fired: disarmed */
	if (read(w->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		LOG_DEBUG("pnfs: timerfd read: %s", strerror(errno));
}


int pnfs_get_fd(struct pnfs_context *ctx)
{
	return ctx ? ctx->epfd : -EINVAL;
}

int pnfs_which_events(struct pnfs_context *ctx)
{
	(void)ctx;
	return POLLIN;
}

unsigned pnfs_outstanding(struct pnfs_context *ctx)
{
	return ctx->ncalls;
}

/* One pass: wait up to timeout_ms for the context's epoll set (0: what is ready now), run the ready
 * watches, due timers, and re-arm the timer. */
static int service(struct pnfs_context *ctx, int timeout_ms)
{
	struct epoll_event evs[32];
	int n;

	if (!ctx)
		return -EINVAL;
	if (ctx->cb_depth > 0 || ctx->servicing)
		return -EDEADLK;
	n = epoll_wait(ctx->epfd, evs, 32, timeout_ms);
	if (n < 0 && errno != EINTR)
		return -errno;
	ctx->servicing = 1;
	for (int i = 0; i < n; i++) {
		struct pc_watch *w = evs[i].data.ptr;
		/* A handler may have removed another watch; a removed watch has added == 0. */
		if (w && w->added)
			w->fn(ctx, w, evs[i].events);
	}
	pc_devices_retire(ctx);
	run_timers(ctx);
	ctx->servicing = 0;
	timerfd_rearm(ctx);
	return 0;
}

int pnfs_service(struct pnfs_context *ctx, int revents)
{
	(void)revents;
	return service(ctx, 0);
}

/* The wait and the pass in one epoll_wait (a poll() of the epoll fd first would be one more system
 * call per pass). */
int pnfs_run_once(struct pnfs_context *ctx, int timeout_ms)
{
	return service(ctx, timeout_ms);
}


/* ---- calls ----------------------------------------------------------------------------------- */

struct pc_call *pc_call_new(struct pnfs_context *ctx, size_t size, pnfs_cb cb, void *priv)
{
	struct pc_call *call;

	if (size < sizeof(*call))
		size = sizeof(*call);
	call = calloc(1, size);
	if (!call)
		return NULL;
	call->ctx = ctx;
	call->cb = cb;
	call->priv = priv;
	ctx->ncalls++;
	return call;
}

void pc_call_complete(struct pc_call *call, int status, void *data)
{
	struct pnfs_context *ctx = call->ctx;

	if (status < 0 && !ctx->err[0]) {
		/* Every failure sets its text where it happens; should one not, the caller still gets
		 * words rather than an empty reason. */
		LOG_DEBUG("pnfs: a call failed (%s) without saying why", strerror(-status));
		pc_err(ctx, status, "%s", strerror(-status));
	}
	if (!ctx->servicing && !ctx->destroying && !call->done_timer.armed) {
		/* User callbacks run only from pnfs_service(), never inside the call that started them. */
		call->data = data;
		pc_call_complete_later(call, status);
		return;
	}
	pc_timer_cancel(ctx, &call->done_timer);
	ctx->ncalls--;
	if (call->cb) {
		ctx->cb_depth++;
		call->cb(ctx, status, data, call->priv);
		ctx->cb_depth--;
	}
	free(call);
}

static void call_done_timer(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct pc_call *call = t->arg;
	(void)ctx;
	pc_call_complete(call, call->status, call->data);
}

void pc_call_complete_later(struct pc_call *call, int status)
{
	call->status = status;
	call->done_timer.fn = call_done_timer;
	call->done_timer.arg = call;
	pc_timer_arm(call->ctx, &call->done_timer, 0);
}

/* ---- context --------------------------------------------------------------------------------- */

int pnfs_context_create(const struct pnfs_opts *opts, struct pnfs_context **out)
{
	struct pnfs_context *ctx;
	struct pnfs_opts defaults;
	uint8_t rnd[8];
	char owner[512];
	int fail = 0, rc;

	*out = NULL;
	if (!opts) {
		pnfs_opts_init(&defaults);
		opts = &defaults;
	}
	if (opts->slots > PC_MAX_SLOTS)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->epfd = ctx->tfd = -1;
	proto_list_init(&ctx->timers);
	proto_list_init(&ctx->waitq);
	proto_list_init(&ctx->sentq);
	ctx->conn.fd = -1;
	ctx->opts = *opts;
	ctx->portals = pc_strv_dup(opts->portals, opts->nportals, &fail);
	ctx->devices = pc_strv_dup(opts->devices, opts->ndevices, &fail);
	ctx->opts.portals = (const char *const *)ctx->portals;
	ctx->opts.devices = (const char *const *)ctx->devices;
	ctx->opts.initiator_name = opts->initiator_name ? strdup(opts->initiator_name) : NULL;
	if (fail || (opts->initiator_name && !ctx->opts.initiator_name))
		goto nomem;
	if (!ctx->opts.slots)
		ctx->opts.slots = 64;
	if (!ctx->opts.timeout_ms)
		ctx->opts.timeout_ms = 60000;
	if (!ctx->opts.connect_timeout_ms)
		ctx->opts.connect_timeout_ms = ctx->opts.io_timeout_ms ? ctx->opts.io_timeout_ms : 30000;
	if (gethostname(ctx->machine, sizeof(ctx->machine) - 1) < 0)
		snprintf(ctx->machine, sizeof(ctx->machine), "localhost");
	ctx->uid = opts->uid_set ? opts->uid : (uint32_t)getuid();
	ctx->gid = opts->uid_set ? opts->gid : (uint32_t)getgid();
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t t = pc_now_ms() ^ ((uint64_t)getpid() << 32);
		memcpy(rnd, &t, sizeof(rnd));
	}
	memcpy(ctx->boot_verf, rnd, sizeof(ctx->boot_verf));
	if (opts->owner_id)
		snprintf(owner, sizeof(owner), "%s", opts->owner_id);
	else
		snprintf(owner, sizeof(owner), "pnfs:%s:%d:%02x%02x%02x%02x%02x%02x%02x%02x", ctx->machine,
			 (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	ctx->owner_id = strdup(owner);
	ctx->xids = proto_xid_table_new(PC_MAX_SLOTS + 16);
	if (!ctx->owner_id || !ctx->xids)
		goto nomem;
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctx->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctx->epfd < 0 || ctx->tfd < 0) {
		rc = -errno;
		goto fail;
	}
	ctx->tw.fd = ctx->tfd;
	ctx->tw.events = EPOLLIN;
	ctx->tw.fn = timer_fd_ready;
	rc = pc_watch_add(ctx, &ctx->tw);
	if (rc < 0)
		goto fail;

	/* Each device the layouts name gets a blkmap context of its own when it is resolved. */
	ctx->direct = !ctx->opts.mds_io;
	ctx->next_open_owner = 1;
	*out = ctx;
	return 0;
nomem:
	rc = -ENOMEM;
fail:
	pnfs_context_destroy(ctx);
	return rc;
}

void pnfs_context_destroy(struct pnfs_context *ctx)
{
	if (!ctx)
		return;
	ctx->state = PC_ST_FAILED;
	ctx->destroying = 1;
	pc_err(ctx, -ECANCELED, "context destroyed");
	pc_compounds_fail_all(ctx, -ECANCELED);
	/* SCSI commands in flight complete as cancelled, while their I/O and layouts are still there. */
	pc_devices_stop(ctx);
	/* Calls still waiting on timers complete as cancelled. */
	while (!proto_list_empty(&ctx->timers)) {
		struct pc_timer *t = proto_list_first(&ctx->timers, struct pc_timer, link);
		pc_timer_cancel(ctx, t);
		if (t->fn == call_done_timer)
			t->fn(ctx, t);
	}
	/* I/O waiting on a layout or a device, which no timer will step again. */
	pc_layouts_cancel_waiting(ctx, -ECANCELED);
	while (ctx->files)
		pc_fh_free(ctx->files);
	while (ctx->layouts)
		pc_layout_free(ctx->layouts);
	pc_devices_free(ctx);
	pc_conn_close(ctx);
	for (unsigned i = 0; i < PC_CB_SLOTS; i++)
		free(ctx->cb_slots[i].reply);
	if (ctx->xids)
		proto_xid_table_free(ctx->xids);
	if (ctx->tfd >= 0)
		close(ctx->tfd);
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	pc_strv_free(ctx->portals, ctx->opts.nportals);
	pc_strv_free(ctx->devices, ctx->opts.ndevices);
	free((char *)ctx->opts.initiator_name);
	free(ctx->owner_id);
	free(ctx->export);
	free(ctx);
}

void pnfs_get_stats(struct pnfs_context *ctx, struct pnfs_stats *st)
{
	*st = ctx->stats;
}
