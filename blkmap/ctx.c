/* The blkmap context: configuration, the last-error text, and the one event loop. Every device
 * session, the worker pool's completion eventfd and a tick timerfd sit in one epoll set, so a caller
 * polls a single fd (libiscsi's get_fd / which_events / service shape) for all LUNs at once. */
#include "blkmap/internal.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int64_t bm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int bm_err(struct blkmap_ctx *ctx, int rc, const char *fmt, ...)
{
	va_list ap;
	char tmp[sizeof(ctx->err)];

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(ctx->err, tmp, sizeof(tmp));
	return rc;
}

void blkmap_ctx_opts_init(struct blkmap_ctx_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
}

static void made_up_initiator(char *buf, size_t len)
{
	char host[64] = "localhost";
	size_t o = 0;

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	o = (size_t)snprintf(buf, len, "iqn.2024-01.org.pnfs-san:blkmap.");
	/* IQNs allow lower-case letters, digits, '-', '.', ':' */
	for (const char *p = host; *p && o + 1 < len; p++) {
		char c = *p;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			c = '-';
		buf[o++] = c;
	}
	buf[o] = 0;
}

/* The InitiatorName= value of an open-iscsi initiatorname file: 0, or -1 when there is none that
 * could be an iSCSI name (iqn., eui. or naa., no blanks) and fits in len. */
static int file_initiator(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int rc = -1;

	if (!f)
		return -1;
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		char *v = line, *e;
		while (*v == ' ' || *v == '\t')
			v++;
		if (strncmp(v, "InitiatorName", 13) != 0)
			continue;
		v += 13;
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v++ != '=')
			continue;
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v; *e && *e != '\n' && *e != '\r' && *e != ' ' && *e != '\t' && *e != '#'; e++)
			;
		*e = 0;
		if ((strncmp(v, "iqn.", 4) && strncmp(v, "eui.", 4) && strncmp(v, "naa.", 4)) || strlen(v) < 5 ||
		    strlen(v) >= len)
			continue;
		snprintf(buf, len, "%s", v);
		rc = 0;
	}
	fclose(f);
	return rc;
}

const char *blkmap_default_initiator(char *buf, size_t len)
{
	static char path[512];
	const char *env = getenv("PNFS_INITIATORNAME_FILE");

	snprintf(path, sizeof(path), "%s", env && *env ? env : "/etc/iscsi/initiatorname.iscsi");
	if (file_initiator(path, buf, len) == 0)
		return path;
	made_up_initiator(buf, len);
	return NULL;
}

int blkmap_ctx_create(const struct blkmap_ctx_opts *opts, struct blkmap_ctx **out)
{
	struct blkmap_ctx_opts none;
	struct blkmap_ctx *ctx;
	struct epoll_event ev = { .events = EPOLLIN };
	int rc;

	*out = NULL;
	if (!opts) {
		blkmap_ctx_opts_init(&none);
		opts = &none;
	}
	if (opts->initiator_name && (strlen(opts->initiator_name) == 0 ||
				     strlen(opts->initiator_name) >= sizeof(ctx->initiator)))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->epfd = ctx->timerfd = -1;
	proto_list_init(&ctx->devs);
	proto_list_init(&ctx->graveyard);
	ctx->pool.evfd = -1;
	if (opts->initiator_name)
		snprintf(ctx->initiator, sizeof(ctx->initiator), "%s", opts->initiator_name);
	else
		blkmap_default_initiator(ctx->initiator, sizeof(ctx->initiator));
	ctx->register_key = opts->register_key;
	ctx->keep_key = opts->keep_key;
	ctx->queue_depth = opts->queue_depth ? opts->queue_depth : 32;
	ctx->timeout_ms = opts->timeout_ms ? opts->timeout_ms : 30000;
	ctx->nworkers = opts->workers ? opts->workers : 4;
	ctx->max_xfer_bytes = opts->max_xfer_bytes ? opts->max_xfer_bytes : (1u << 20);
	if (ctx->queue_depth > 4096 || ctx->nworkers > 64 || ctx->max_xfer_bytes < BM_SECTOR_BYTES) {
		rc = -EINVAL;
		goto fail;
	}
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctx->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctx->epfd < 0 || ctx->timerfd < 0) {
		rc = -errno;
		goto fail;
	}
	ctx->timer_src = (struct bm_src){ BM_SRC_TIMER, ctx };
	ev.data.ptr = &ctx->timer_src;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->timerfd, &ev) != 0) {
		rc = -errno;
		goto fail;
	}
	pthread_mutex_init(&ctx->pool.lock, NULL);
	pthread_cond_init(&ctx->pool.cond, NULL);
	pthread_cond_init(&ctx->pool.done_cond, NULL);
	*out = ctx;
	return 0;
fail:
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	if (ctx->timerfd >= 0)
		close(ctx->timerfd);
	free(ctx);
	return rc;
}

void blkmap_ctx_destroy(struct blkmap_ctx *ctx)
{
	if (!ctx)
		return;
	/* our key off every LUN first: the sessions are about to log out */
	proto_list_for_each(d, &ctx->devs, struct blkmap_dev, link)
		bm_dev_unregister_key(d);
	/* every session at once, before the devices close one by one */
	bm_iscsi_logout_all(ctx);
	bm_cache_free(ctx);
	/* Devices still open: their queued commands complete with -ECANCELED; references callers or
	 * volumes still hold keep only the memory (every call on such a device returns -ENODEV). */
	while (!proto_list_empty(&ctx->devs))
		bm_dev_destroy(proto_list_first(&ctx->devs, struct blkmap_dev, link));
	bm_pool_stop(ctx);
	while (!proto_list_empty(&ctx->graveyard)) {
		struct blkmap_dev *d = proto_list_first(&ctx->graveyard, struct blkmap_dev, link);
		proto_list_del(&d->link);
		free(d);
	}
	pthread_mutex_destroy(&ctx->pool.lock);
	pthread_cond_destroy(&ctx->pool.cond);
	pthread_cond_destroy(&ctx->pool.done_cond);
	close(ctx->timerfd);
	close(ctx->epfd);
	free(ctx);
}

const char *blkmap_errstr(struct blkmap_ctx *ctx)
{
	return ctx ? ctx->err : "no context";
}

const char *blkmap_initiator_name(struct blkmap_ctx *ctx)
{
	return ctx->initiator;
}

int blkmap_get_fd(struct blkmap_ctx *ctx)
{
	return ctx->epfd;
}

int blkmap_which_events(struct blkmap_ctx *ctx)
{
	(void)ctx;
	return POLLIN;
}

unsigned blkmap_outstanding(struct blkmap_ctx *ctx)
{
	return ctx->outstanding;
}

/* The tick runs while anything can time out or needs a retry: requests outstanding or sessions
 * being (re)established. */
void bm_timer_update(struct blkmap_ctx *ctx)
{
	int want = ctx->outstanding > 0 || ctx->connecting > 0 || ctx->keepers > 0;
	struct itimerspec its = { 0 };

	if (want == ctx->timer_armed)
		return;
	if (want) {
		its.it_value.tv_nsec = BM_TICK_MS * 1000000L;
		its.it_interval.tv_nsec = BM_TICK_MS * 1000000L;
	}
	if (timerfd_settime(ctx->timerfd, 0, &its, NULL) == 0)
		ctx->timer_armed = want;
}

static void tick(struct blkmap_ctx *ctx)
{
	uint64_t n;
	int64_t now = bm_now_ms();

	if (read(ctx->timerfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	proto_list_for_each_safe(d, &ctx->devs, struct blkmap_dev, link)
		bm_dev_tick(d, now);
}

static void bury(struct blkmap_ctx *ctx)
{
	if (ctx->depth > 0)
		return;
	while (!proto_list_empty(&ctx->graveyard)) {
		struct blkmap_dev *d = proto_list_first(&ctx->graveyard, struct blkmap_dev, link);
		proto_list_del(&d->link);
		free(d);
	}
}

static int run(struct blkmap_ctx *ctx, int timeout_ms)
{
	struct epoll_event evs[64];
	struct bm_sigpipe g;
	int n;

	n = epoll_wait(ctx->epfd, evs, 64, timeout_ms);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return bm_err(ctx, -errno, "epoll_wait: %s", strerror(errno));
	}
	ctx->depth++;
	/* one SIGPIPE guard for the whole pass: the guards of each service and send nest in it for free */
	bm_sigpipe_block(&g);
	for (int i = 0; i < n; i++) {
		struct bm_src *s = evs[i].data.ptr;
		switch (s->kind) {
		case BM_SRC_TIMER:
			tick(ctx);
			break;
		case BM_SRC_POOL:
			bm_pool_service(ctx);
			break;
		case BM_SRC_DEV: {
			struct blkmap_dev *d = s->ptr;
			/* a device closed earlier in this pass is on the graveyard with refs 0 */
			if (d->refs > 0)
				bm_dev_service(d, evs[i].events);
			break;
		}
		}
	}
	/* What the completions queued goes out now, not on the next pass (libiscsi before 1.20.3 only
	 * queues a PDU: one more wake-up and two epoll_ctl calls per command otherwise). */
	proto_list_for_each_safe(d, &ctx->devs, struct blkmap_dev, link)
		if (d->refs > 0 && d->kind == BLKMAP_DEV_ISCSI)
			bm_iscsi_flush(d);
	bm_sigpipe_restore(&g);
	ctx->depth--;
	bm_timer_update(ctx);
	bury(ctx);
	return 0;
}

int blkmap_service(struct blkmap_ctx *ctx, int revents)
{
	(void)revents;
	return run(ctx, 0);
}

int blkmap_run_once(struct blkmap_ctx *ctx, int timeout_ms)
{
	if (ctx->depth > 0)
		return bm_err(ctx, -EDEADLK, "blkmap: a sync call or loop run from inside a completion callback");
	return run(ctx, timeout_ms);
}

int bm_wait(struct blkmap_ctx *ctx, const int *done)
{
	if (ctx->depth > 0)
		return bm_err(ctx, -EDEADLK, "blkmap: a sync call from inside a completion callback");
	while (!*done) {
		int rc = run(ctx, 1000);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int blkmap_wait_idle(struct blkmap_ctx *ctx)
{
	if (ctx->depth > 0)
		return bm_err(ctx, -EDEADLK, "blkmap: wait_idle from inside a completion callback");
	while (ctx->outstanding > 0) {
		int rc = run(ctx, 1000);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void bm_src_remove(struct blkmap_dev *dev)
{
	if (dev->reg_fd >= 0) {
		epoll_ctl(dev->ctx->epfd, EPOLL_CTL_DEL, dev->reg_fd, NULL);
		dev->reg_fd = -1;
		dev->reg_events = 0;
	}
}
