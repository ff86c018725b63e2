/* The pool behind the server: opened through mds/pool.h (labels checked against the store, the
 * volume's leaves bound to the LUNs), with blkmap's engine driven by the server's own loop through
 * its one pollable fd, plus a slow tick for its timers. */
#include "mds/server.h"

#include "blkmap/blkmap.h"
#include "mds/layout.h"
#include "mds/pool.h"
#include "proto/log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

static void on_blkmap(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct mds_server *srv = arg;
	(void)loop;
	(void)fd;
	(void)events;

	blkmap_service(srv->bctx, POLLIN);
}

/* A LUN that went out of service (it came back as another one): layouts already handed out may map
 * onto it, and a client of SCSI layouts only knows the LUN by its designator, which a swapped
 * backing file keeps. Every layout is recalled; new ones wait until the LUN is back (op_layout.c). */
static void luns_watch(struct mds_server *srv)
{
	uint32_t first = 0, out = mds_pool_luns_out(srv->pool, &first);

	if (out > srv->luns_out) {
		LOG_WARN("pool %s: LUN %u (%u in all) is out of service: recalling every layout; none is handed out until "
			 "it is back",
			 srv->cfg.pool, first, out);
		mds_lo_recall_all(srv);
	} else if (out == 0 && srv->luns_out) {
		LOG_INFO("pool %s: every LUN is in service again: layouts are handed out again", srv->cfg.pool);
	}
	srv->luns_out = out;
}

static int64_t blkmap_tick(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mds_server *srv = arg;
	(void)loop;
	(void)id;

	if (srv->bctx)
		blkmap_service(srv->bctx, 0);
	if (srv->pool)
		luns_watch(srv);
	return 250;
}

int mds_server_open_pool(struct mds_server *srv, char *err, size_t errlen)
{
	struct blkmap_ctx_opts bo;
	char why[1024] = "";
	int rc, fd;

	blkmap_ctx_opts_init(&bo);
	bo.initiator_name = srv->cfg.initiator[0] ? srv->cfg.initiator : MDS_DEFAULT_INITIATOR;
	bo.timeout_ms = srv->cfg.lun_timeout_s ? srv->cfg.lun_timeout_s * 1000 : 0;
	rc = blkmap_ctx_create(&bo, &srv->bctx);
	if (rc) {
		snprintf(err, errlen, "cannot create the I/O engine: %s", strerror(-rc));
		return rc;
	}
	rc = mds_pool_open(srv->bctx, srv->cfg.pool, NULL, &srv->pool, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "pool %s: %s", srv->cfg.pool, why[0] ? why : strerror(-rc));
		return rc;
	}
	srv->store = mds_pool_store(srv->pool);
	srv->vol = mds_pool_volume(srv->pool);
	fd = blkmap_get_fd(srv->bctx);
	if (fd < 0) {
		snprintf(err, errlen, "I/O engine: no event fd: %s", strerror(-fd));
		return fd;
	}
	rc = mds_loop_add_fd(srv->loop, fd, MDS_EV_READ, on_blkmap, srv);
	if (rc) {
		snprintf(err, errlen, "I/O engine: cannot watch its fd: %s", strerror(-rc));
		return rc;
	}
	mds_loop_add_timer(srv->loop, 250, blkmap_tick, srv);
	for (uint32_t i = 0; i < mds_pool_nluns(srv->pool); i++) {
		char url[MDS_POOL_URL_MAX];
		mds_pool_url_display(mds_pool_lun_url(srv->pool, i), url, sizeof(url));
		LOG_INFO("pool %s: LUN %u is %s", srv->cfg.pool, i, url);
		/* a LUN that comes back after a target restart is checked at once, not at its next MDS-path
		 * I/O: LAYOUTGET must know whether it may hand it out */
		blkmap_dev_keep_session(mds_pool_lun_dev(srv->pool, i), 1);
	}
	return 0;
}

void mds_server_close_pool(struct mds_server *srv)
{
	if (srv->bctx) {
		int fd = blkmap_get_fd(srv->bctx);
		if (fd >= 0)
			mds_loop_del_fd(srv->loop, fd, MDS_EV_READ);
	}
	mds_pool_close(srv->pool);
	srv->pool = NULL;
	srv->store = NULL;
	srv->vol = NULL;
	blkmap_ctx_destroy(srv->bctx);
	srv->bctx = NULL;
}
