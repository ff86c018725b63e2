/* The pool guard (mds/guard.h): the heartbeat record in LUN 0's label area, read at start to refuse
 * or take over, and renewed from a timer with asynchronous I/O (read it back, then write the next
 * beat), so the server notices at once when another one claimed the LUNs. */
#include "mds/guard.h"

#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "mds/server.h"
#include "proto/log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct mds_guard {
	struct mds_server *srv;
	struct blkmap_dev *dev;      /* LUN 0 (borrowed from the pool) */
	struct mds_guard_beat me;
	uint8_t *buf;                /* one device block */
	size_t buf_bytes;
	uint64_t timer;
	int busy;                    /* a read or write is in flight */
	int lost;                    /* another server claimed the LUNs: stopping */
	int failing;                 /* the last beat failed (said once, until one succeeds) */
	struct iovec iov;
};

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/*
 * Record (little-endian): 0 magic "PNFSBEAT", 8 version (1), 12 state, 16 pool UUID, 32 nonce,
 * 40 started, 48 beat, 56 seq, 64 pid, 68 host[64], 132 listen[128], 260 dir[232], 492 boot ID,
 * 508 CRC32C of bytes 0..507.
 */
void mds_guard_encode(const struct mds_guard_beat *b, uint8_t *out)
{
	memset(out, 0, MDS_GUARD_RECORD_BYTES);
	memcpy(out, MDS_GUARD_MAGIC, 8);
	put_le32(out + 8, 1);
	put_le32(out + 12, (uint32_t)b->state);
	memcpy(out + 16, b->pool_uuid, 16);
	put_le64(out + 32, b->nonce);
	put_le64(out + 40, b->started);
	put_le64(out + 48, b->beat);
	put_le64(out + 56, b->seq);
	put_le32(out + 64, b->pid);
	memcpy(out + 68, b->host, strnlen(b->host, 63));
	memcpy(out + 132, b->listen, strnlen(b->listen, 127));
	memcpy(out + 260, b->dir, strnlen(b->dir, 231));
	memcpy(out + 492, b->boot_id, 16);
	put_le32(out + 508, mds_crc32c(0, out, 508));
}

int mds_guard_decode(const uint8_t *buf, size_t len, struct mds_guard_beat *out)
{
	memset(out, 0, sizeof(*out));
	if (len < MDS_GUARD_RECORD_BYTES || memcmp(buf, MDS_GUARD_MAGIC, 8) || get_le32(buf + 8) != 1 ||
	    get_le32(buf + 508) != mds_crc32c(0, buf, 508))
		return -ENOENT;
	out->state = (enum mds_guard_state)get_le32(buf + 12);
	memcpy(out->pool_uuid, buf + 16, 16);
	out->nonce = get_le64(buf + 32);
	out->started = get_le64(buf + 40);
	out->beat = get_le64(buf + 48);
	out->seq = get_le64(buf + 56);
	out->pid = get_le32(buf + 64);
	memcpy(out->host, buf + 68, 63);
	memcpy(out->listen, buf + 132, 127);
	memcpy(out->dir, buf + 260, 231);
	memcpy(out->boot_id, buf + 492, 16);
	return 0;
}

void mds_guard_boot_id(uint8_t out[16])
{
	char text[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	memset(out, 0, 16);
	if (!f)
		return;
	if (fgets(text, sizeof(text), f))
		text[strcspn(text, "\n")] = 0;
	fclose(f);
	if (mds_uuid_parse(text, out) != 0)
		memset(out, 0, 16);
}

int mds_guard_alive(const struct mds_guard_beat *b, uint64_t now, const uint8_t my_boot[16], char *why,
		    size_t whylen)
{
	static const uint8_t zero[16];

	if (b->state != MDS_GUARD_SERVING) {
		snprintf(why, whylen, "it stopped cleanly");
		return 0;
	}
	if (memcmp(b->boot_id, zero, 16) && !memcmp(b->boot_id, my_boot, 16)) {
		/* This host: the process says it all, whatever the clocks. */
		if (b->pid && (kill((pid_t)b->pid, 0) == 0 || errno == EPERM)) {
			snprintf(why, whylen, "its process %u runs on this host", b->pid);
			return 1;
		}
		snprintf(why, whylen, "its process %u on this host is gone", b->pid);
		return 0;
	}
	if (b->beat + MDS_GUARD_STALE_S > now) {
		snprintf(why, whylen, "it beat %lld s ago (a server beats every %u s)", (long long)(now - b->beat),
			 MDS_GUARD_INTERVAL_S);
		return 1;
	}
	snprintf(why, whylen, "its last beat is %llu s old", (unsigned long long)(now - b->beat));
	return 0;
}

static int read_beat(struct mds_guard *g, struct mds_guard_beat *b)
{
	int rc = blkmap_dev_pread(g->dev, g->buf, g->buf_bytes, MDS_GUARD_OFFSET);

	if (rc)
		return rc;
	return mds_guard_decode(g->buf, g->buf_bytes, b) == 0 ? 1 : 0;
}

static int write_beat(struct mds_guard *g)
{
	memset(g->buf, 0, g->buf_bytes);
	mds_guard_encode(&g->me, g->buf);
	return blkmap_dev_pwrite(g->dev, g->buf, g->buf_bytes, MDS_GUARD_OFFSET);
}

static void when_str(uint64_t t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm) || !strftime(out, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(out, len, "an unknown time");
}

/* What the LUNs' persistent reservations say, for the messages. */
static void pr_state(struct mds_server *srv, char *out, size_t len, int *held)
{
	uint32_t n = mds_pool_nluns(srv->pool), reserved = 0;

	*held = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct blkmap_dev *d = mds_pool_lun_dev(srv->pool, i);
		struct blkmap_pr_reservation r;
		if (d && blkmap_dev_kind(d) == BLKMAP_DEV_ISCSI && blkmap_pr_read_reservation(d, &r) == 0 && r.reserved &&
		    r.key == MDS_POOL_PR_KEY)
			reserved++;
	}
	*held = reserved > 0;
	if (reserved)
		snprintf(out, len, "MDS key %016llx holds the reservation on %u of %u LUN(s)",
			 (unsigned long long)MDS_POOL_PR_KEY, reserved, n);
	else
		snprintf(out, len, "MDS key %016llx registered, no reservation held", (unsigned long long)MDS_POOL_PR_KEY);
}

/* A refused start leaves the LUNs as they were: our own registrations (the pool open's) go. */
static void unregister_ours(struct mds_server *srv)
{
	for (uint32_t i = 0; i < mds_pool_nluns(srv->pool); i++) {
		struct blkmap_dev *d = mds_pool_lun_dev(srv->pool, i);
		if (d && blkmap_dev_kind(d) == BLKMAP_DEV_ISCSI)
			(void)blkmap_pr_register(d, MDS_POOL_PR_KEY, 0, 0);
	}
}

static int take_over(struct mds_server *srv, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < mds_pool_nluns(srv->pool); i++) {
		struct blkmap_dev *d = mds_pool_lun_dev(srv->pool, i);
		struct blkmap_pr_reservation r;
		char url[MDS_POOL_URL_MAX];
		int rc;
		if (!d || blkmap_dev_kind(d) != BLKMAP_DEV_ISCSI)
			continue;
		mds_pool_url_display(mds_pool_lun_url(srv->pool, i), url, sizeof(url));
		rc = blkmap_pr_read_reservation(d, &r);
		if (!rc && (!r.reserved || r.key != MDS_POOL_PR_KEY))
			continue;
		/* Preempting the holder's own key: every other I_T nexus registered with it loses its
		 * registration (and its queued commands), and the reservation becomes ours. */
		if (!rc)
			rc = blkmap_pr_preempt(d, MDS_POOL_PR_KEY, MDS_POOL_PR_KEY, r.type, 1);
		if (rc) {
			snprintf(err, errlen, "--takeover: LUN %u (%s): PREEMPT AND ABORT of key %016llx: %s", i, url,
				 (unsigned long long)MDS_POOL_PR_KEY, blkmap_errstr(srv->bctx));
			return rc;
		}
		LOG_WARN("pool %s: TAKEOVER: LUN %u (%s): the old server's registrations of key %016llx preempted and "
			 "aborted; the reservation is ours",
			 srv->cfg.pool, i, url, (unsigned long long)MDS_POOL_PR_KEY);
	}
	return 0;
}

static void tick_done(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv);

static void lose(struct mds_guard *g, const char *what)
{
	struct mds_server *srv = g->srv;

	g->lost = 1;
	LOG_ERROR("pool %s: %s: this server stops (it no longer owns the LUNs)", srv->cfg.pool, what);
	srv->fatal = -EBUSY;
	mds_server_stop(srv);
}

/* Phase 1 done (the record read back): check it is still ours, then write the next beat. */
static void read_done(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct mds_guard *g = priv;
	struct mds_guard_beat b;
	(void)ctx;

	if (status == -EBADE) {
		g->busy = 0;
		lose(g, "LUN 0 answers RESERVATION CONFLICT: another server took the pool over (--takeover)");
		return;
	}
	if (status) {
		g->busy = 0;
		if (!g->failing++)
			LOG_WARN("pool %s: heartbeat: reading LUN 0: %s (retried every %u s)", g->srv->cfg.pool,
				 res && res->message ? res->message : strerror(-status), MDS_GUARD_INTERVAL_S);
		return;
	}
	if (mds_guard_decode(g->buf, g->buf_bytes, &b) == 0 && b.nonce != g->me.nonce) {
		char msg[700], when[64];
		g->busy = 0;
		when_str(b.started, when, sizeof(when));
		snprintf(msg, sizeof(msg), "taken over by pnfs-mds pid %u on %s since %s (listening on %s, pool directory %s)",
			 b.pid, b.host, when, b.listen, b.dir);
		lose(g, msg);
		return;
	}
	g->me.seq++;
	g->me.beat = (uint64_t)time(NULL);
	memset(g->buf, 0, g->buf_bytes);
	mds_guard_encode(&g->me, g->buf);
	g->iov = (struct iovec){ g->buf, g->buf_bytes };
	if (blkmap_dev_writev_async(g->dev, MDS_GUARD_OFFSET, &g->iov, 1, tick_done, g) != 0)
		g->busy = 0;
}

static void tick_done(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct mds_guard *g = priv;
	(void)ctx;

	g->busy = 0;
	if (status == -EBADE)
		lose(g, "LUN 0 answers RESERVATION CONFLICT: another server took the pool over (--takeover)");
	else if (status && !g->failing++)
		LOG_WARN("pool %s: heartbeat: writing LUN 0: %s (retried every %u s)", g->srv->cfg.pool,
			 res && res->message ? res->message : strerror(-status), MDS_GUARD_INTERVAL_S);
	else if (!status && g->failing) {
		LOG_INFO("pool %s: heartbeat: LUN 0 written again", g->srv->cfg.pool);
		g->failing = 0;
	}
}

static int64_t guard_tick(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mds_guard *g = arg;
	(void)loop;
	(void)id;

	if (g->lost || g->srv->stopping) {
		g->timer = 0;
		return MDS_TIMER_STOP;
	}
	if (!g->busy) {
		g->iov = (struct iovec){ g->buf, g->buf_bytes };
		if (blkmap_dev_readv_async(g->dev, MDS_GUARD_OFFSET, &g->iov, 1, read_done, g) == 0)
			g->busy = 1;
	}
	return MDS_GUARD_INTERVAL_S * 1000;
}

int mds_guard_start(struct mds_server *srv, char *err, size_t errlen)
{
	struct mds_guard *g = calloc(1, sizeof(*g));
	struct mds_guard_beat old;
	char host[64] = "";
	uint8_t boot[16];
	uint64_t now = (uint64_t)time(NULL);
	int rc, have;

	if (!g) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	g->srv = srv;
	g->dev = mds_pool_lun_dev(srv->pool, 0);
	g->buf_bytes = blkmap_dev_block_bytes(g->dev);
	if (g->buf_bytes < MDS_GUARD_RECORD_BYTES)
		g->buf_bytes = MDS_GUARD_RECORD_BYTES;
	g->buf = aligned_alloc(4096, (g->buf_bytes + 4095) / 4096 * 4096);
	if (!g->buf) {
		free(g);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->guard = g;
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "localhost");
	mds_guard_boot_id(boot);
	have = read_beat(g, &old);
	if (have < 0) {
		snprintf(err, errlen, "pool %s: LUN 0: reading the heartbeat record: %s", srv->cfg.pool,
			 blkmap_errstr(srv->bctx));
		return have;
	}
	if (have && !memcmp(old.pool_uuid, mds_store_format(srv->store)->pool_uuid, 16)) {
		char why[200], when[64], pr[200];
		int alive = mds_guard_alive(&old, now, boot, why, sizeof(why)), held;
		when_str(old.started, when, sizeof(when));
		if (alive) {
			pr_state(srv, pr, sizeof(pr), &held);
			if (!srv->cfg.takeover) {
				snprintf(err, errlen,
					 "pool %s: its LUNs are served by pnfs-mds pid %u on %s since %s (listening on %s, "
					 "pool directory %s; %s; %s): stop that server first, or start this one with "
					 "--takeover for a deliberate failover",
					 srv->cfg.pool, old.pid, old.host, when, old.listen, old.dir, pr, why);
				unregister_ours(srv);
				return -EBUSY;
			}
			LOG_WARN("pool %s: TAKEOVER requested: the LUNs are served by pnfs-mds pid %u on %s since %s "
				 "(listening on %s, pool directory %s; %s; %s): claiming them",
				 srv->cfg.pool, old.pid, old.host, when, old.listen, old.dir, pr, why);
		} else {
			LOG_INFO("pool %s: the last server on these LUNs, pnfs-mds pid %u on %s since %s, is not running "
				 "(%s)", srv->cfg.pool, old.pid, old.host, when, why);
		}
	}
	if (srv->cfg.takeover) {
		rc = take_over(srv, err, errlen);
		if (rc)
			return rc;
	}
	g->me.state = MDS_GUARD_SERVING;
	memcpy(g->me.pool_uuid, mds_store_format(srv->store)->pool_uuid, 16);
	if (getrandom(&g->me.nonce, sizeof(g->me.nonce), 0) != (ssize_t)sizeof(g->me.nonce))
		g->me.nonce = now ^ ((uint64_t)getpid() << 32);
	g->me.started = now;
	g->me.beat = now;
	g->me.seq = 1;
	g->me.pid = (uint32_t)getpid();
	snprintf(g->me.host, sizeof(g->me.host), "%s", host);
	memcpy(g->me.boot_id, boot, 16);
	snprintf(g->me.listen, sizeof(g->me.listen), "%s:%d (binding)", srv->cfg.listen, srv->cfg.port);
	snprintf(g->me.dir, sizeof(g->me.dir), "%s", srv->cfg.pool);
	rc = write_beat(g);
	if (rc) {
		snprintf(err, errlen, "pool %s: LUN 0: writing the heartbeat record: %s", srv->cfg.pool,
			 blkmap_errstr(srv->bctx));
		return rc;
	}
	g->timer = mds_loop_add_timer(srv->loop, MDS_GUARD_INTERVAL_S * 1000, guard_tick, g);
	return 0;
}

void mds_guard_listening(struct mds_server *srv)
{
	struct mds_guard *g = srv->guard;

	if (!g)
		return;
	snprintf(g->me.listen, sizeof(g->me.listen), strchr(srv->cfg.listen, ':') ? "[%s]:%d" : "%s:%d", srv->cfg.listen,
		 srv->port);
	if (write_beat(g) != 0)
		LOG_WARN("pool %s: LUN 0: writing the heartbeat record: %s", srv->cfg.pool, blkmap_errstr(srv->bctx));
}

void mds_guard_stop(struct mds_server *srv)
{
	struct mds_guard *g = srv->guard;
	struct mds_guard_beat b;

	if (!g)
		return;
	if (g->timer)
		mds_loop_del_timer(srv->loop, g->timer);
	if (g->busy && srv->bctx)
		(void)blkmap_wait_idle(srv->bctx);
	if (!g->lost && g->me.pid && srv->pool && read_beat(g, &b) == 1 && b.nonce == g->me.nonce) {
		g->me.state = MDS_GUARD_STOPPED;
		g->me.beat = (uint64_t)time(NULL);
		(void)write_beat(g);
	}
	free(g->buf);
	free(g);
	srv->guard = NULL;
}
