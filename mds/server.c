/* The server object: opens the pool, listens, accepts connections onto the loop, runs the lease
 * and grace timers, handles signals through a signalfd, and shuts down with every transaction
 * ended (the store is always consistent: each COMPOUND commits before it replies). */
#include "mds/server.h"

#include "blkmap/blkmap.h"
#include "mds/backchannel.h"
#include "mds/guard.h"
#include "mds/layout.h"
#include "mds/pool.h"
#include "mds/pool_lock.h"
#include "proto/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

uint32_t mds_lease_s(const struct mds_server *srv)
{
	return srv->cfg.lease_time_s;
}

static void on_accept(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct mds_server *srv = arg;
	(void)loop;
	(void)events;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int c = accept4(fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				LOG_WARN("accept on port %d: %s", srv->port, strerror(errno));
			return;
		}
		if (srv->stopping || srv->nconns >= srv->cfg.max_connections) {
			char who[80];
			mds_sockaddr_str(&peer, who, sizeof(who));
			if (srv->stopping)
				LOG_WARN("refusing a connection from %s: shutting down", who);
			else
				LOG_WARN("refusing a connection from %s: too many connections (max-connections %u, %u "
					 "of them without a session yet)",
					 who, srv->cfg.max_connections, srv->nconns_unestablished);
			srv->conns_refused++;
			close(c);
			continue;
		}
		mds_conn_accept(srv, c, &peer);
	}
}

static int listen_on(struct mds_server *srv, char *err, size_t errlen)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t slen;
	int fd, one = 1;

	if (inet_pton(AF_INET6, srv->cfg.listen, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)srv->cfg.port);
		slen = sizeof(*s6);
	} else if (inet_pton(AF_INET, srv->cfg.listen, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)srv->cfg.port);
		slen = sizeof(*s4);
	} else {
		snprintf(err, errlen, "bad listen address '%s'", srv->cfg.listen);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, slen) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot listen on %s port %d: %s", srv->cfg.listen, srv->cfg.port,
			 strerror(e));
		close(fd);
		return -e;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &slen) == 0)
		srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
	srv->listen_fd = fd;
	return mds_loop_add_fd(srv->loop, fd, MDS_EV_READ, on_accept, srv);
}

static int64_t lease_tick(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mds_server *srv = arg;
	(void)loop;
	(void)id;

	mds_state_expire(srv);
	if (srv->in_grace && mds_loop_now_ms() >= srv->grace_end_ms)
		mds_grace_end(srv, "grace period over");
	return 1000;
}

/* Remember every client that had a record before this start: they may reclaim during grace. */
static int collect_client(void *arg, const struct mds_client_rec *rec)
{
	struct mds_server *srv = arg;

	if (mds_map_insert(&srv->reclaimable, rec->owner, rec->owner_len, (void *)(uintptr_t)rec->clientid) == 0)
		srv->nreclaimable++;
	return 0;
}

static int destroy_orphan(void *arg, uint64_t fileid)
{
	uint64_t *ids = arg;
	if (ids[0] < 1023)
		ids[++ids[0]] = fileid;
	return 0;
}

/* Start-up work on the store in one transaction: bump the boot counter (write verifier, stateid
 * and clientid epochs), load client records for grace, destroy orphans (no file is open after a
 * restart). */
static int store_startup(struct mds_server *srv, char *err, size_t errlen)
{
	struct mds_txn *t = NULL;
	struct mds_store_meta meta;
	uint64_t orphans[1024] = { 0 };
	int rc;

	rc = mds_txn_begin(srv->store, MDS_TXN_RW, &t);
	if (rc)
		goto fail;
	rc = mds_store_bump_boot(t, &srv->boot);
	if (rc)
		goto fail;
	rc = mds_store_meta(t, &meta);
	if (rc)
		goto fail;
	srv->root_fileid = meta.root_fileid;
	srv->block_bytes = meta.block_bytes;
	srv->volume_bytes = meta.volume_bytes;
	memcpy(srv->pool_id, meta.pool_uuid, sizeof(srv->pool_id));
	rc = mds_client_iter(t, collect_client, srv);
	if (rc < 0)
		goto fail;
	rc = mds_orphan_iter(t, destroy_orphan, orphans);
	if (rc < 0)
		goto fail;
	for (uint64_t i = 1; i <= orphans[0]; i++) {
		/* A layout of the orphan may be reclaimed during grace: park its blocks until then. */
		rc = mds_inode_destroy(t, orphans[i], srv->nreclaimable ? MDS_FREE_PENDING : 0, NULL);
		if (rc && rc != -ENOENT)
			goto fail;
	}
	if (orphans[0])
		LOG_INFO("removed %llu orphaned file(s) left open at the last stop",
			 (unsigned long long)orphans[0]);
	rc = mds_txn_commit(t);
	t = NULL;
	if (rc)
		goto fail;
	return 0;
fail:
	mds_txn_abort(t);
	snprintf(err, errlen, "pool %s: store: %s (%s)", srv->cfg.pool, mds_store_strerror(rc),
		 mds_store_errstr(srv->store));
	return rc;
}

struct grace_end_arg {
	struct mds_server *srv;
	uint64_t released;
};

static int grace_end_txn(struct mds_txn *t, void *arg)
{
	struct grace_end_arg *a = arg;
	struct mds_server *srv = a->srv;
	struct mds_map_iter it;
	int rc;

	/* Clients that did not come back lose their records (a record whose client is back was
	 * already replaced under the new clientid); blocks parked while layouts could cover them
	 * are free now: no layout survives a restart. */
	for (void *v = mds_map_first(&srv->reclaimable, &it); v; v = mds_map_next(&srv->reclaimable, &it)) {
		rc = mds_client_del(t, (clientid4)(uintptr_t)v);
		if (rc && rc != -ENOENT)
			return rc;
	}
	return mds_pending_release_all(t, &a->released);
}

void mds_grace_end(struct mds_server *srv, const char *why)
{
	struct grace_end_arg a = { srv, 0 };
	int rc;

	if (!srv->in_grace)
		return;
	srv->in_grace = 0;
	LOG_INFO("grace period ended: %s", why);
	rc = mds_with_txn(srv, grace_end_txn, &a);
	if (rc)
		LOG_ERROR("pool %s: ending grace: %s", srv->cfg.pool, mds_store_strerror(rc));
	else if (a.released)
		LOG_INFO("released %llu bytes of deferred frees", (unsigned long long)a.released);
	mds_map_clear(&srv->reclaimable);
	srv->nreclaimable = 0;
	(void)mds_lo_drop_stale(srv);
}

static void make_verifiers(struct mds_server *srv)
{
	unsigned char rnd[8] = { 0 };
	uint64_t b = srv->boot;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		memcpy(rnd, &t, sizeof(t));
	}
	/* Unique per instance: the boot counter (never repeats for this pool) mixed with randomness. */
	for (int i = 0; i < 8; i++)
		srv->write_verf[i] = (unsigned char)(b >> (56 - 8 * i)) ^ (i < 4 ? 0 : rnd[i]);
	snprintf((char *)srv->server_owner, sizeof(srv->server_owner), "pnfs-mds-%02x%02x%02x%02x%02x%02x%02x%02x",
		 srv->pool_id[0], srv->pool_id[1], srv->pool_id[2], srv->pool_id[3], srv->pool_id[4],
		 srv->pool_id[5], srv->pool_id[6], srv->pool_id[7]);
}

static int pool_lock(struct mds_server *srv, char *err, size_t errlen)
{
	char conf[sizeof(srv->cfg.pool) + 32];

	snprintf(conf, sizeof(conf), "%s/%s", srv->cfg.pool, MDS_POOL_CONF);
	if (access(conf, F_OK) != 0)
		return 0;
	return mds_pool_lock(srv->cfg.pool, "pnfs-mds", &srv->pool_lock_fd, NULL, err, errlen);
}

/* The end of a turn of the loop: the group commit of what its compounds changed. */
static int batch_commit_turn(void *arg)
{
	return mds_batch_turn_end(arg);
}

int mds_server_new(const struct mds_config *cfg, struct mds_server **out, char *err, size_t errlen)
{
	struct mds_server *srv = calloc(1, sizeof(*srv));
	int rc;

	*out = NULL;
	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	proto_list_init(&srv->conns);
	proto_list_init(&srv->probes);
	srv->cfg = *cfg;
	srv->listen_fd = -1;
	srv->signal_fd = -1;
	srv->pool_lock_fd = -1;
	mds_map_init(&srv->clients);
	mds_map_init(&srv->conf_by_owner);
	mds_map_init(&srv->unconf_by_owner);
	mds_map_init(&srv->sessions);
	mds_map_init(&srv->stateids);
	mds_map_init(&srv->files);
	mds_map_init(&srv->reclaimable);
	mds_map_init(&srv->cb_calls);
	srv->loop = mds_loop_new();
	if (!srv->loop) {
		rc = -errno;
		snprintf(err, errlen, "event loop: %s", strerror(errno));
		goto fail;
	}
	srv->held_tail = &srv->held;
	srv->unsynced_tail = &srv->unsynced;
	mds_loop_set_turn_end(srv->loop, batch_commit_turn, srv);
	/* Before anything touches the pool: one server per pool directory (a directory without a pool
	 * gets no lock file; opening it fails below, saying so). */
	rc = pool_lock(srv, err, errlen);
	if (rc)
		goto fail;
	rc = mds_server_open_pool(srv, err, errlen);
	if (rc)
		goto fail;
	/* Before the store or a reservation changes: no other server on these LUNs. */
	rc = mds_guard_start(srv, err, errlen);
	if (rc)
		goto fail;
	rc = store_startup(srv, err, errlen);
	if (rc)
		goto fail;
	make_verifiers(srv);
	srv->next_clientid = 1;
	srv->next_session = 1;
	srv->next_stateid = 1;
	srv->next_cb_xid = (uint32_t)(srv->boot << 20) | 1;
	if (srv->nreclaimable) {
		uint32_t g = cfg->grace_time_s ? cfg->grace_time_s : cfg->lease_time_s;
		srv->in_grace = 1;
		srv->grace_end_ms = mds_loop_now_ms() + (uint64_t)g * 1000;
		LOG_INFO("grace period of %u s for %u client(s) to reclaim", g, srv->nreclaimable);
	}
	rc = mds_lo_start(srv, err, errlen);
	if (rc)
		goto fail;
	rc = listen_on(srv, err, errlen);
	if (rc)
		goto fail;
	(void)mds_pool_lock_set_listen(srv->pool_lock_fd, cfg->listen, srv->port);
	mds_guard_listening(srv);
	srv->lease_timer = mds_loop_add_timer(srv->loop, 1000, lease_tick, srv);
	LOG_INFO("serving pool %s on %s port %d (boot %llu, lease %u s)", cfg->pool, cfg->listen, srv->port,
		 (unsigned long long)srv->boot, cfg->lease_time_s);
	*out = srv;
	return 0;
fail:
	mds_server_free(srv);
	return rc;
}

static void on_signal(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct mds_server *srv = arg;
	struct signalfd_siginfo si;
	(void)loop;
	(void)events;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			struct mds_exports ex;
			char why[512] = "";
			if (!srv->reload) {
				LOG_INFO("SIGHUP: nothing to reload");
				continue;
			}
			if (srv->reload(srv->reload_arg, &ex, why, sizeof(why)) != 0) {
				LOG_ERROR("SIGHUP: exports not reloaded: %s", why);
				continue;
			}
			mds_server_set_exports(srv, &ex);
			LOG_INFO("SIGHUP: %d export rule(s) loaded", ex.n);
		} else {
			LOG_INFO("signal %u: shutting down", si.ssi_signo);
			mds_server_stop(srv);
		}
	}
}

int mds_server_handle_signals(struct mds_server *srv, mds_reload_fn *reload, void *arg)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	srv->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (srv->signal_fd < 0)
		return -errno;
	srv->reload = reload;
	srv->reload_arg = arg;
	return mds_loop_add_fd(srv->loop, srv->signal_fd, MDS_EV_READ, on_signal, srv);
}

void mds_server_set_exports(struct mds_server *srv, const struct mds_exports *ex)
{
	srv->cfg.exports = *ex;
}

int mds_with_txn(struct mds_server *srv, int (*fn)(struct mds_txn *t, void *arg), void *arg)
{
	int rc;

	if (srv->cur_txn) {
		rc = fn(srv->cur_txn, arg);
		if (srv->cur_dirty)
			*srv->cur_dirty = 1;
		return rc;
	}
	/* The turn's batch first, so that commits stay in the order of the changes. */
	(void)mds_batch_commit(srv);
	return mds_txn_run(srv->store, fn, arg);
}

int mds_server_run(struct mds_server *srv)
{
	int rc = mds_loop_run(srv->loop);

	return rc ? rc : srv->fatal;
}

void mds_server_stop(struct mds_server *srv)
{
	srv->stopping = 1;
	mds_loop_stop(srv->loop);
}

int mds_server_port(const struct mds_server *srv)
{
	return srv->port;
}

struct mds_loop *mds_server_loop(struct mds_server *srv)
{
	return srv->loop;
}

void mds_server_free(struct mds_server *srv)
{
	if (!srv)
		return;
	srv->stopping = 1;
	/* Finish the MDS-path data operations under way (and those queued behind them on their
	 * files) first: their COMPOUNDs commit and reply before anything closes. No new request
	 * is read meanwhile (srv->stopping). */
	for (int i = 0; i < 6000 && srv->io_pending; i++)
		mds_loop_once(srv->loop, 10);
	if (srv->io_pending)
		LOG_WARN("shutting down with %u data operation(s) unfinished", srv->io_pending);
	(void)mds_batch_commit(srv);
	if (srv->bctx)
		(void)blkmap_wait_idle(srv->bctx);
	while (!proto_list_empty(&srv->conns))
		mds_conn_close(proto_list_first(&srv->conns, struct mds_conn, link), "server shutting down");
	mds_state_free_all(srv);
	if (srv->listen_fd >= 0) {
		mds_loop_del_fd(srv->loop, srv->listen_fd, MDS_EV_READ);
		close(srv->listen_fd);
	}
	if (srv->signal_fd >= 0) {
		mds_loop_del_fd(srv->loop, srv->signal_fd, MDS_EV_READ);
		close(srv->signal_fd);
	}
	mds_lo_stop(srv);
	mds_guard_stop(srv);
	mds_server_close_pool(srv);
	mds_pool_unlock(srv->pool_lock_fd);
	mds_map_clear(&srv->clients);
	mds_map_clear(&srv->conf_by_owner);
	mds_map_clear(&srv->unconf_by_owner);
	mds_map_clear(&srv->sessions);
	mds_map_clear(&srv->stateids);
	mds_map_clear(&srv->files);
	mds_map_clear(&srv->reclaimable);
	mds_map_clear(&srv->cb_calls);
	mds_cb_probes_free(srv); /* those waiting on a timer or on a call that will not end now */
	mds_loop_free(srv->loop);
	free(srv);
}
