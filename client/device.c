/* The device cache: one entry per device ID the layouts name. An entry is fetched once with
 * GETDEVICEINFO (asking for change/delete notifications), turned into a blkmap volume, resolved to
 * LUNs (portals, given devices, local block devices) and, for SCSI layouts, registered with its PR
 * key on every LUN before the first I/O. Resolution is synchronous in blkmap (discovery, logins,
 * signature reads), so each runs on a thread of its own in a blkmap context of its own, which the
 * device keeps for its I/O: the loop goes on serving the MDS session and the other devices while a
 * portal takes its time to answer. */
#include "client/layout_int.h"

#include "blkmap/blkmap_xdr.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <unistd.h>

#define GDI_MAXCOUNT_DEFAULT (64u * 1024)

static const char *hexid(const uint8_t id[NFS4_DEVICEID4_SIZE])
{
	static __thread char buf[2 * NFS4_DEVICEID4_SIZE + 1];
	for (int i = 0; i < NFS4_DEVICEID4_SIZE; i++)
		snprintf(buf + 2 * i, 3, "%02x", id[i]);
	return buf;
}

/* The context's device of this type and ID (one at most), or NULL. */
static struct pc_device *device_find(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE],
				     layouttype4 type)
{
	for (struct pc_device *d = ctx->devices_list; d; d = d->next)
		if (d->type == type && memcmp(d->id, id, NFS4_DEVICEID4_SIZE) == 0)
			return d;
	return NULL;
}

struct pc_device *pc_device_obtain(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE], layouttype4 type)
{
	struct pc_device *d = device_find(ctx, id, type);

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->ctx = ctx;
	memcpy(d->id, id, NFS4_DEVICEID4_SIZE);
	d->type = type;
	d->maxcount = GDI_MAXCOUNT_DEFAULT;
	d->next = ctx->devices_list;
	ctx->devices_list = d;
	return d;
}

/* Whether d's volume carries our PR key (SCSI), so a new client ID or server instance renames it. */
static int keyed(const struct pc_device *d)
{
	const struct pc_lo_type *t = pc_lo_type(d->type);

	return t && t->keyed;
}

static int device_gone(const struct pc_device *d)
{
	return d->state == PC_DEV_FAILED || d->state == PC_DEV_FENCED;
}

static void wake(struct pc_device *d)
{
	struct pc_waiter *w = d->waiters;

	d->waiters = NULL;
	pc_waiters_run(d->ctx, w);
}

void pc_device_fail(struct pc_device *d, enum pc_dev_state st, const char *fmt, ...)
{
	va_list ap;

	if (d->state == PC_DEV_FENCED)
		return; /* the first verdict stands */
	d->state = st;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	if (st == PC_DEV_FENCED)
		d->ctx->stats.fenced++;
	if (d->bms)
		d->ctx->devices_retiring = 1;
	LOG_WARN("pnfs: device %s: %s", hexid(d->id), d->why);
	wake(d);
}

/* ---- resolution (a thread per device) ---------------------------------------------------------- */

/* One resolution: the volume GETDEVICEINFO described, found among the SAN's LUNs (discovery, logins,
 * signature reads) and, for SCSI layouts, registered with its PR key, all in a blkmap context made for
 * it on a thread of its own. Everything it reads is its own copy, so the client's context may go away
 * meanwhile: the thread then cleans up after itself. The loop learns it is done through an eventfd. */
struct pc_resolve {
	pthread_mutex_t lock;
	pthread_t thread;
	int done;      /* the thread has finished its work (under lock) */
	int abandoned; /* the device went away: whoever is last frees (under lock) */
	struct pc_watch w;
	struct pc_device *d;
	/* in */
	struct blkmap_vol *vol;
	layouttype4 type;
	char *initiator;
	unsigned queue_depth, timeout_ms;
	char **portals, **paths;
	unsigned nportals, npaths;
	int scan_local;
	/* out */
	struct blkmap_ctx *bm;
	int rc;
	char err[1400];
};

static void job_free(struct pc_resolve *j)
{
	if (!j)
		return;
	pc_strv_free(j->portals, j->nportals);
	pc_strv_free(j->paths, j->npaths);
	free(j->initiator);
	blkmap_vol_free(j->vol);
	blkmap_ctx_destroy(j->bm);
	if (j->w.fd >= 0)
		close(j->w.fd);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

static struct pc_resolve *job_new(struct pc_device *d, struct blkmap_vol *vol)
{
	struct pnfs_context *ctx = d->ctx;
	struct pc_resolve *j = calloc(1, sizeof(*j));
	int fail = 0;

	if (!j)
		return NULL;
	pthread_mutex_init(&j->lock, NULL);
	j->w.fd = -1;
	j->d = d;
	j->type = d->type;
	j->initiator = ctx->opts.initiator_name ? strdup(ctx->opts.initiator_name) : NULL;
	fail = ctx->opts.initiator_name && !j->initiator;
	j->queue_depth = ctx->opts.queue_depth;
	j->timeout_ms = ctx->opts.io_timeout_ms;
	j->portals = pc_strv_dup(ctx->opts.portals, ctx->opts.nportals, &fail);
	j->nportals = ctx->opts.nportals;
	j->paths = pc_strv_dup(ctx->opts.devices, ctx->opts.ndevices, &fail);
	j->npaths = ctx->opts.ndevices;
	/* Without any SAN configuration, look at the local block devices (a host logged in with
	 * open-iscsi, or loop devices). */
	j->scan_local = ctx->opts.scan_local || (!j->nportals && !j->npaths);
	if (fail) {
		job_free(j);
		return NULL;
	}
	j->vol = vol; /* owned from here on */
	return j;
}

/* The resolution itself, on the resolver thread (or inline for pc_test_inject_device). */
static void job_run(struct pc_resolve *j)
{
	const struct pc_lo_type *t = pc_lo_type(j->type);
	struct blkmap_ctx_opts bo;
	struct blkmap_discover_opts o;
	struct blkmap_report *rep = NULL;

	blkmap_ctx_opts_init(&bo);
	bo.initiator_name = j->initiator;
	bo.queue_depth = j->queue_depth;
	bo.timeout_ms = j->timeout_ms;
	j->rc = blkmap_ctx_create(&bo, &j->bm);
	if (j->rc < 0) {
		snprintf(j->err, sizeof(j->err), "cannot make a block I/O context: %s", strerror(-j->rc));
		return;
	}
	memset(&o, 0, sizeof(o));
	o.portals = (const char *const *)j->portals;
	o.nportals = j->nportals;
	o.paths = (const char *const *)j->paths;
	o.npaths = j->npaths;
	o.scan_local = j->scan_local;
	j->rc = blkmap_resolve(j->bm, j->vol, &o, &rep);
	blkmap_report_free(rep);
	if (j->rc < 0) {
		snprintf(j->err, sizeof(j->err), "cannot find the volume's LUNs: %s", blkmap_errstr(j->bm));
		return;
	}
	if (t && t->prepare)
		j->rc = t->prepare(j->bm, j->vol, j->err, sizeof(j->err));
}

/* A thread of the library's own: it takes no signals, they are for the application's threads.
 * Returns 0 or -errno. */
static int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void *job_main(void *arg)
{
	struct pc_resolve *j = arg;
	int abandoned;

	job_run(j);
	if (j->rc < 0) {
		/* its logouts are done here, off the loop */
		blkmap_ctx_destroy(j->bm);
		j->bm = NULL;
	}
	pthread_mutex_lock(&j->lock);
	j->done = 1;
	abandoned = j->abandoned;
	if (!abandoned) {
		uint64_t one = 1;
		if (write(j->w.fd, &one, sizeof(one)) < 0)
			(void)0; /* an eventfd counter does not fill up with one write */
	}
	pthread_mutex_unlock(&j->lock);
	if (abandoned)
		job_free(j);
	return NULL;
}

static void bm_ready(struct pnfs_context *ctx, struct pc_watch *w, uint32_t revents)
{
	struct pc_bm *b = (struct pc_bm *)((char *)w - offsetof(struct pc_bm, w));
	(void)ctx;
	(void)revents;
	blkmap_service(b->bm, POLLIN);
}

/* The resolution is over (its thread has finished): take its context and volume, or its error. */
static void job_finish(struct pc_device *d, struct pc_resolve *j)
{
	struct pnfs_context *ctx = d->ctx;
	struct pc_bm *b;

	d->job = NULL;
	if (j->rc < 0 || d->state != PC_DEV_RESOLVING) {
		if (d->state == PC_DEV_RESOLVING) {
			/* the description stays, for pnfs_device_info (volume offsets without LUNs) */
			blkmap_vol_free(d->vol);
			d->vol = j->vol;
			j->vol = NULL;
			pc_device_fail(d, PC_DEV_FAILED, "%s", j->err);
		}
		job_free(j);
		return;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		job_free(j);
		pc_device_fail(d, PC_DEV_FAILED, "out of memory");
		return;
	}
	b->bm = j->bm;
	b->w.fd = blkmap_get_fd(b->bm);
	b->w.events = EPOLLIN;
	b->w.fn = bm_ready;
	if (pc_watch_add(ctx, &b->w) < 0) {
		free(b);
		job_free(j);
		pc_device_fail(d, PC_DEV_FAILED, "cannot watch the LUN sessions: %s", strerror(errno));
		return;
	}
	j->bm = NULL;
	b->next = d->bms;
	d->bms = b;
	/* The volume this one replaces (a device the server changed) goes; its context stays with the
	 * device, serviced, for the I/O it may still complete, and is closed once that is done. */
	if (b->next)
		ctx->devices_retiring = 1;
	blkmap_vol_free(d->vol);
	d->vol = j->vol;
	j->vol = NULL;
	job_free(j);
	d->block_bytes = 512;
	for (unsigned i = 0; i < blkmap_vol_count(d->vol); i++) {
		struct blkmap_dev *dev = blkmap_vol_is_leaf(d->vol, i) ? blkmap_vol_leaf_dev(d->vol, i) : NULL;
		if (dev && blkmap_dev_block_bytes(dev) > d->block_bytes)
			d->block_bytes = blkmap_dev_block_bytes(dev);
	}
	d->size_bytes = blkmap_vol_size_bytes(d->vol, blkmap_vol_count(d->vol) - 1);
	d->state = PC_DEV_READY;
	/* described before a new client ID: registered with a key the server no longer knows */
	d->stale = d->fetch_gen != d->key_gen;
	LOG_DEBUG("pnfs: device %s resolved (%u volumes, %llu bytes)", hexid(d->id), blkmap_vol_count(d->vol),
		  (unsigned long long)d->size_bytes);
	wake(d);
}

static void job_ready(struct pnfs_context *ctx, struct pc_watch *w, uint32_t revents)
{
	struct pc_resolve *j = (struct pc_resolve *)((char *)w - offsetof(struct pc_resolve, w));
	uint64_t v;
	int done;

	(void)revents;
	if (read(w->fd, &v, sizeof(v)) < 0)
		v = 0; /* not yet: a spurious wake-up */
	pthread_mutex_lock(&j->lock);
	done = j->done;
	pthread_mutex_unlock(&j->lock);
	if (!done)
		return;
	pthread_join(j->thread, NULL);
	pc_watch_del(ctx, w);
	job_finish(j->d, j);
}

/* The device no longer wants its resolution: a finished one is freed here, a running one by its
 * thread when it ends (bounded by the command timeout). */
static void job_abandon(struct pc_device *d)
{
	struct pc_resolve *j = d->job;
	int done;

	if (!j)
		return;
	d->job = NULL;
	pc_watch_del(d->ctx, &j->w);
	pthread_mutex_lock(&j->lock);
	done = j->done;
	j->abandoned = 1;
	pthread_mutex_unlock(&j->lock);
	if (done) {
		pthread_join(j->thread, NULL);
		job_free(j);
	} else {
		pthread_detach(j->thread);
	}
}

/* Resolve vol (which the device now owns through its resolution) on a thread; RESOLVING meanwhile. */
static int resolve_start(struct pc_device *d, struct blkmap_vol *vol)
{
	struct pc_resolve *j = job_new(d, vol);
	int rc;

	if (!j) {
		blkmap_vol_free(vol);
		pc_device_fail(d, PC_DEV_FAILED, "out of memory");
		return -ENOMEM;
	}
	job_abandon(d);
	j->w.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	j->w.events = EPOLLIN;
	j->w.fn = job_ready;
	rc = j->w.fd < 0 ? -errno : pc_watch_add(d->ctx, &j->w);
	if (rc == 0) {
		rc = thread_start(&j->thread, job_main, j);
		if (rc < 0)
			pc_watch_del(d->ctx, &j->w);
	}
	if (rc < 0) {
		job_free(j);
		pc_device_fail(d, PC_DEV_FAILED, "cannot start resolving the volume: %s", strerror(-rc));
		return rc;
	}
	d->job = j;
	d->state = PC_DEV_RESOLVING;
	return 0;
}

static int take_volume(struct pc_device *d, const device_addr4 *da)
{
	struct blkmap_vol *vol = NULL;
	char err[300] = "";
	int rc;

	if (da->da_layout_type != d->type) {
		pc_device_fail(d, PC_DEV_FAILED, "GETDEVICEINFO answered with layout type %d, asked %d",
			       da->da_layout_type, d->type);
		return -EPROTO;
	}
	rc = blkmap_vol_from_device_addr(da, &vol, err, sizeof(err));
	if (rc < 0) {
		pc_device_fail(d, PC_DEV_FAILED, "the server's volume description is unusable: %s", err);
		return rc;
	}
	return resolve_start(d, vol);
}

static void fetch(struct pc_device *d);
static void relocate(struct pc_device *d);

static void gdi_done(struct pc_compound *c)
{
	struct pc_device *d = c->priv;
	nfs_resop4 *r = pc_res_op(c, OP_GETDEVICEINFO);

	if (c->nfs_status == NFS4ERR_NOENT && keyed(d) && d->vol && d->fetch_gen != 0) {
		/* a device ID from before the server restarted */
		pc_compound_free(c);
		relocate(d);
		return;
	}
	if (c->nfs_status == NFS4ERR_NOENT && keyed(d) && !d->vol && d->fetch_gen != d->key_gen) {
		/* Asked of the server before it restarted, answered by the restarted one, which no longer
		 * knows the ID: the layouts that named it went with our old client ID (nothing was written
		 * through a device never described). Left to be asked again should a layout name it. */
		LOG_INFO("pnfs: device %s: named by the server before it restarted, unknown to it now",
			 hexid(d->id));
		pc_compound_free(c);
		d->state = PC_DEV_NEW;
		wake(d);
		return;
	}

	if (c->nfs_status == NFS4ERR_TOOSMALL && r && d->maxcount < PROTO_DEVICE_ADDR_MAX) {
		uint32_t need = r->nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_mincount;
		pc_compound_free(c);
		if (need <= d->maxcount || need > PROTO_DEVICE_ADDR_MAX + 1024) {
			pc_device_fail(d, PC_DEV_FAILED, "GETDEVICEINFO needs %u bytes", need);
			return;
		}
		d->maxcount = need;
		d->state = PC_DEV_NEW;
		fetch(d);
		return;
	}
	if (c->status < 0 || !r) {
		pc_compound_err(c);
		pc_device_fail(d, PC_DEV_FAILED, "%s", c->status < 0 ? d->ctx->err : "no GETDEVICEINFO result");
		pc_compound_free(c);
		return;
	}
	take_volume(d, &r->nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_device_addr);
	pc_compound_free(c);
}

/* A GETDEVICEINFO of id for d (asking for change/delete notifications when notify), ready to submit;
 * NULL when out of memory. A LAYOUTCOMMIT reclaim registers the device again before it flushes, so
 * during a reclaim the call goes out inside it. */
static struct pc_compound *gdi_new(struct pc_device *d, const uint8_t id[NFS4_DEVICEID4_SIZE], int notify,
				   void (*done)(struct pc_compound *), void *priv)
{
	struct pnfs_context *ctx = d->ctx;
	struct pc_compound *c = pc_compound_new(ctx, "GETDEVICEINFO %s", hexid(id));
	nfs_argop4 *op;
	uint32_t *bits;

	if (!c)
		return NULL;
	ctx->stats.getdeviceinfos++;
	op = pc_add(c, OP_GETDEVICEINFO);
	bits = notify ? pc_alloc(c, sizeof(uint32_t)) : NULL;
	if (op) {
		GETDEVICEINFO4args *a = &op->nfs_argop4_u.opgetdeviceinfo;
		memcpy(a->gdia_device_id, id, NFS4_DEVICEID4_SIZE);
		a->gdia_layout_type = d->type;
		a->gdia_maxcount = d->maxcount;
		if (bits) {
			*bits = (1u << NOTIFY_DEVICEID4_CHANGE) | (1u << NOTIFY_DEVICEID4_DELETE);
			a->gdia_notify_types.bitmap4_val = bits;
			a->gdia_notify_types.bitmap4_len = 1;
		}
	}
	c->done = done;
	c->priv = priv;
	c->setup = ctx->state == PC_ST_RECLAIM;
	d->fetch_setup = c->setup;
	return c;
}

static void fetch(struct pc_device *d)
{
	struct pc_compound *c = gdi_new(d, d->id, 1, gdi_done, d);

	if (!c) {
		pc_device_fail(d, PC_DEV_FAILED, "out of memory");
		return;
	}
	d->state = PC_DEV_FETCHING;
	d->fetch_gen = d->key_gen;
	pc_submit(c);
}

/* ---- a SCSI device after a server restart --------------------------------------------------------- */

/* A restarted server may give its SCSI devices new IDs (their PR keys, made from client IDs, are new
 * too), and it hands out no layout, so no new device ID, before its grace period ends. A reclaim
 * that has to flush the LUNs an old ID named looks for the same volume among the devices
 * GETDEVICELIST names: same tree, same LUN designators, only the key differs. The device takes the
 * new ID and is resolved and registered under it. */

struct relocation {
	struct pc_device *d;
	uint8_t (*ids)[NFS4_DEVICEID4_SIZE];
	unsigned n, next;
};

/* Whether two volume trees are the same but for their PR keys. */
static int same_volume(const struct blkmap_vol *a, const struct blkmap_vol *b)
{
	unsigned n = a && b ? blkmap_vol_count(a) : 0;

	if (n == 0 || n != blkmap_vol_count(b))
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		enum blkmap_vol_type t = blkmap_vol_type(a, i);
		if (t != blkmap_vol_type(b, i) || blkmap_vol_nmembers(a, i) != blkmap_vol_nmembers(b, i))
			return 0;
		for (unsigned k = 0; k < blkmap_vol_nmembers(a, i); k++)
			if (blkmap_vol_member(a, i, k) != blkmap_vol_member(b, i, k))
				return 0;
		if (t == BLKMAP_VOL_SCSI) {
			const struct blkmap_designator *x = blkmap_vol_designator(a, i), *y = blkmap_vol_designator(b, i);
			if (!x || !y || x->type != y->type || x->code_set != y->code_set || x->len != y->len ||
			    memcmp(x->bytes, y->bytes, x->len) != 0)
				return 0;
		} else if (t == BLKMAP_VOL_SLICE) {
			if (blkmap_vol_slice_start(a, i) != blkmap_vol_slice_start(b, i) ||
			    blkmap_vol_slice_length(a, i) != blkmap_vol_slice_length(b, i))
				return 0;
		} else if (t == BLKMAP_VOL_STRIPE) {
			if (blkmap_vol_stripe_unit(a, i) != blkmap_vol_stripe_unit(b, i))
				return 0;
		} else if (t != BLKMAP_VOL_CONCAT) {
			return 0; /* simple volumes have no place in a SCSI layout */
		}
	}
	return 1;
}

static void relocation_end(struct relocation *rl, const char *why)
{
	if (why)
		pc_device_fail(rl->d, PC_DEV_FAILED, "the restarted server no longer knows this device ID, and %s",
			       why);
	free(rl->ids);
	free(rl);
}

static void relocate_next(struct relocation *rl);

static void relocate_info_done(struct pc_compound *c)
{
	struct relocation *rl = c->priv;
	struct pc_device *d = rl->d;
	nfs_resop4 *r = pc_res_op(c, OP_GETDEVICEINFO);
	struct blkmap_vol *vol = NULL;
	char err[300];

	if (c->status == 0 && r) {
		const device_addr4 *da = &r->nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_device_addr;
		if (da->da_layout_type == d->type && blkmap_vol_from_device_addr(da, &vol, err, sizeof(err)) == 0 &&
		    same_volume(d->vol, vol)) {
			char was[2 * NFS4_DEVICEID4_SIZE + 1];
			snprintf(was, sizeof(was), "%s", hexid(d->id));
			LOG_INFO("pnfs: device %s: the restarted server names it %s", was, hexid(rl->ids[rl->next - 1]));
			memcpy(d->id, rl->ids[rl->next - 1], NFS4_DEVICEID4_SIZE);
			blkmap_vol_free(vol);
			take_volume(d, da);
			pc_compound_free(c);
			relocation_end(rl, NULL);
			return;
		}
		blkmap_vol_free(vol);
	}
	pc_compound_free(c);
	relocate_next(rl);
}

/* GETDEVICEINFO of the next device GETDEVICELIST named. */
static void relocate_next(struct relocation *rl)
{
	struct pc_compound *c;

	if (rl->next >= rl->n) {
		relocation_end(rl, "none of its devices has the same volume");
		return;
	}
	c = gdi_new(rl->d, rl->ids[rl->next], 0, relocate_info_done, rl);
	if (!c) {
		relocation_end(rl, "memory ran out");
		return;
	}
	rl->next++;
	pc_submit(c);
}

static void relocate_list_done(struct pc_compound *c)
{
	struct relocation *rl = c->priv;
	nfs_resop4 *r = pc_res_op(c, OP_GETDEVICELIST);

	if (c->status < 0 || !r) {
		char why[400];
		pc_compound_err(c);
		snprintf(why, sizeof(why), "GETDEVICELIST failed: %s", rl->d->ctx->err);
		pc_compound_free(c);
		relocation_end(rl, why);
		return;
	}
	{
		GETDEVICELIST4resok *ok = &r->nfs_resop4_u.opgetdevicelist.GETDEVICELIST4res_u.gdlr_resok4;
		unsigned n = ok->gdlr_deviceid_list.gdlr_deviceid_list_len;
		if (n > 64)
			n = 64;
		rl->ids = n ? calloc(n, sizeof(*rl->ids)) : NULL;
		if (rl->ids) {
			memcpy(rl->ids, ok->gdlr_deviceid_list.gdlr_deviceid_list_val, n * sizeof(*rl->ids));
			rl->n = n;
		}
	}
	pc_compound_free(c);
	relocate_next(rl);
}

static void relocate(struct pc_device *d)
{
	struct relocation *rl = calloc(1, sizeof(*rl));
	struct pc_compound *c = rl ? pc_compound_new(d->ctx, "GETDEVICELIST") : NULL;
	nfs_argop4 *op;

	if (!c) {
		free(rl);
		pc_device_fail(d, PC_DEV_FAILED, "out of memory");
		return;
	}
	rl->d = d;
	d->state = PC_DEV_FETCHING;
	pc_add_putrootfh(c);
	op = pc_add(c, OP_GETDEVICELIST);
	if (op) {
		GETDEVICELIST4args *a = &op->nfs_argop4_u.opgetdevicelist;
		a->gdla_layout_type = d->type;
		a->gdla_maxdevices = 64;
		a->gdla_cookie = 0;
	}
	c->done = relocate_list_done;
	c->priv = rl;
	c->setup = d->ctx->state == PC_ST_RECLAIM;
	d->fetch_setup = c->setup;
	pc_submit(c);
}

int pc_device_ensure(struct pc_device *d, void (*fn)(struct pnfs_context *, void *), void *arg)
{
	if (d->state == PC_DEV_READY && !d->stale)
		return 1;
	if (d->state == PC_DEV_FAILED || d->state == PC_DEV_FENCED)
		return -ENODEV;
	if (pc_waiter_add(&d->waiters, 0, fn, arg) < 0)
		return -ENOMEM;
	if (d->state == PC_DEV_NEW || (d->state == PC_DEV_READY && d->stale))
		fetch(d);
	return 0;
}

/* ---- notifications and teardown ----------------------------------------------------------------- */

void pc_devices_new_clientid(struct pnfs_context *ctx)
{
	for (struct pc_device *d = ctx->devices_list; d; d = d->next) {
		if (!keyed(d))
			continue;
		d->key_gen++;
		if (d->state == PC_DEV_READY) {
			d->stale = 1;
		} else if (d->state == PC_DEV_FENCED) {
			LOG_INFO("pnfs: device %s: fenced under our earlier client ID; registering again before its "
				 "next use", hexid(d->id));
			d->state = PC_DEV_NEW;
			d->why[0] = 0;
		}
	}
}

void pc_devices_changed(struct pnfs_context *ctx)
{
	/* SEQ4_STATUS_DEVID_CHANGED/DELETED without a CB_NOTIFY_DEVICEID: fetch them all again. */
	for (struct pc_device *d = ctx->devices_list; d; d = d->next)
		if (d->state == PC_DEV_READY)
			d->stale = 1;
}

static void device_notify_one(struct pnfs_context *ctx, unsigned bit, XDR *x)
{
	struct pc_device *d;

	if (bit == NOTIFY_DEVICEID4_CHANGE) {
		notify_deviceid_change4 ch;
		memset(&ch, 0, sizeof(ch));
		if (!xdr_notify_deviceid_change4(x, &ch))
			return;
		d = device_find(ctx, (const uint8_t *)ch.ndc_deviceid, ch.ndc_layouttype);
		if (d && d->state == PC_DEV_READY) {
			LOG_INFO("pnfs: device %s changed; fetching it again", hexid(d->id));
			d->stale = 1;
		}
	} else if (bit == NOTIFY_DEVICEID4_DELETE) {
		notify_deviceid_delete4 del;
		memset(&del, 0, sizeof(del));
		if (!xdr_notify_deviceid_delete4(x, &del))
			return;
		d = device_find(ctx, (const uint8_t *)del.ndd_deviceid, del.ndd_layouttype);
		if (d && d->state != PC_DEV_FENCED)
			pc_device_fail(d, PC_DEV_FAILED, "deleted by the server");
	}
}

nfsstat4 pc_device_notify(struct pnfs_context *ctx, const CB_NOTIFY_DEVICEID4args *a)
{
	for (u_int i = 0; i < a->cnda_changes.cnda_changes_len; i++) {
		const notify4 *n = &a->cnda_changes.cnda_changes_val[i];
		struct proto_attrmask m;
		XDR x;

		proto_attrmask_from_bitmap4(&m, &n->notify_mask);
		xdrmem_create(&x, n->notify_vals.notifylist4_val, n->notify_vals.notifylist4_len, XDR_DECODE);
		for (unsigned bit = 0; bit < 32; bit++)
			if (proto_attrmask_isset(&m, bit)) {
				if (bit != NOTIFY_DEVICEID4_CHANGE && bit != NOTIFY_DEVICEID4_DELETE)
					break; /* unknown: its size is unknowable */
				device_notify_one(ctx, bit, &x);
			}
		xdr_destroy(&x);
	}
	return NFS4_OK;
}

static void *retire_main(void *arg)
{
	blkmap_ctx_destroy(arg);
	return NULL;
}

/* Close a replaced context: its sessions log out on a thread, as a portal that stopped answering
 * (often why the server changed the device) holds a logout up to a second. */
static void bm_retire(struct pnfs_context *ctx, struct pc_bm *b)
{
	pthread_t t;

	pc_watch_del(ctx, &b->w);
	if (thread_start(&t, retire_main, b->bm) == 0)
		pthread_detach(t);
	else
		blkmap_ctx_destroy(b->bm);
	free(b);
}

/* A failed or fenced device's volume lets go of its LUNs (its context is about to close) and keeps
 * its description and sizes, for pnfs_device_info. */
static void vol_unbind(struct blkmap_vol *vol)
{
	for (uint32_t i = 0; vol && i < blkmap_vol_count(vol); i++)
		if (blkmap_vol_is_leaf(vol, i) && blkmap_vol_leaf_dev(vol, i)) {
			uint64_t size = blkmap_vol_size_bytes(vol, i);
			blkmap_vol_bind(vol, i, NULL);
			blkmap_vol_set_leaf_size(vol, i, size);
		}
	if (vol)
		blkmap_vol_validate(vol);
}

/* Close the blkmap contexts no I/O can reach any more, once idle: those a newer resolution replaced,
 * and every one of a device that failed or was fenced, once no layout has data on it to flush
 * before a LAYOUTCOMMIT. */
void pc_devices_retire(struct pnfs_context *ctx)
{
	if (!ctx->devices_retiring)
		return;
	ctx->devices_retiring = 0;
	for (struct pc_device *d = ctx->devices_list; d; d = d->next) {
		int gone = device_gone(d);
		struct pc_bm **pp;

		if (!d->bms)
			continue;
		/* extents may still point at a gone device: I/O through them goes to the MDS */
		if (gone && pc_layouts_hold_device(ctx, d)) {
			ctx->devices_retiring = 1;
			continue;
		}
		/* a usable device's first context is its current one */
		pp = gone ? &d->bms : &d->bms->next;
		while (*pp) {
			struct pc_bm *b = *pp;
			if (blkmap_outstanding(b->bm) > 0) {
				ctx->devices_retiring = 1;
				pp = &b->next;
				continue;
			}
			if (pp == &d->bms)
				vol_unbind(d->vol); /* the current context: the volume may be bound to its LUNs */
			*pp = b->next;
			LOG_DEBUG("pnfs: device %s: closing LUN sessions %s", hexid(d->id),
				  gone ? "no I/O can use any more" : "its new volume replaced");
			bm_retire(ctx, b);
		}
	}
}

void pc_devices_stop(struct pnfs_context *ctx)
{
	for (struct pc_device *d = ctx->devices_list; d; d = d->next) {
		job_abandon(d);
		while (d->bms) {
			struct pc_bm *b = d->bms;
			d->bms = b->next;
			pc_watch_del(ctx, &b->w);
			blkmap_ctx_destroy(b->bm);
			free(b);
		}
	}
}

void pc_devices_free(struct pnfs_context *ctx)
{
	pc_devices_stop(ctx);
	while (ctx->devices_list) {
		struct pc_device *d = ctx->devices_list;
		ctx->devices_list = d->next;
		pc_waiters_free(d->waiters);
		blkmap_vol_free(d->vol);
		free(d);
	}
}

struct blkmap_vol *pnfs_device_volume(struct pnfs_context *ctx, const uint8_t deviceid[16])
{
	for (struct pc_device *d = ctx->devices_list; d; d = d->next)
		if (memcmp(d->id, deviceid, NFS4_DEVICEID4_SIZE) == 0 && d->state == PC_DEV_READY)
			return d->vol;
	return NULL;
}

int pc_test_inject_device(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE], layouttype4 type,
			  struct blkmap_vol *vol)
{
	struct pc_device *d = pc_device_obtain(ctx, id, type);
	struct pc_resolve *j;

	if (!d) {
		blkmap_vol_free(vol);
		return -ENOMEM;
	}
	/* the same resolution, run here rather than on a thread */
	job_abandon(d);
	j = job_new(d, vol);
	if (!j) {
		blkmap_vol_free(vol);
		return -ENOMEM;
	}
	d->state = PC_DEV_RESOLVING;
	job_run(j);
	job_finish(d, j);
	return d->state == PC_DEV_READY ? 0 : -ENODEV;
}
