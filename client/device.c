/* The device cache: one entry per device ID the layouts name. An entry is fetched once with
 * GETDEVICEINFO (asking for change/delete notifications), turned into a blkmap volume, resolved to
 * LUNs (portals, given devices, local block devices) and, for SCSI layouts, registered with its PR
 * key on every LUN before the first I/O. Resolution is synchronous in blkmap, so it runs from the
 * top of the loop, never inside a completion callback. */
#include "client/layout_int.h"

#include "blkmap/blkmap_xdr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GDI_MAXCOUNT_DEFAULT (64u * 1024)

static const char *hexid(const uint8_t id[NFS4_DEVICEID4_SIZE])
{
	static __thread char buf[2 * NFS4_DEVICEID4_SIZE + 1];
	for (int i = 0; i < NFS4_DEVICEID4_SIZE; i++)
		snprintf(buf + 2 * i, 3, "%02x", id[i]);
	return buf;
}

struct pc_device *pc_device_get(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE], layouttype4 type)
{
	struct pc_device *d;

	for (d = ctx->devices_list; d; d = d->next)
		if (d->type == type && memcmp(d->id, id, NFS4_DEVICEID4_SIZE) == 0)
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

void pc_device_put(struct pc_device *d)
{
	if (d && d->refs)
		d->refs--;
}

static void wake(struct pc_device *d)
{
	struct pc_waiter *w = d->waiters;

	d->waiters = NULL;
	while (w) {
		struct pc_waiter *next = w->next;
		w->fn(d->ctx, w->arg);
		free(w);
		w = next;
	}
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
	LOG_WARN("pnfs: device %s: %s", hexid(d->id), d->why);
	wake(d);
}

/* ---- resolution (top of the loop) ------------------------------------------------------------- */

static void resolve_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct pc_device *d = t->arg;
	struct blkmap_discover_opts o;
	struct blkmap_report *rep = NULL;
	int rc;

	if (d->state != PC_DEV_RESOLVING)
		return;
	memset(&o, 0, sizeof(o));
	o.portals = ctx->opts.portals;
	o.nportals = ctx->opts.nportals;
	o.paths = ctx->opts.devices;
	o.npaths = ctx->opts.ndevices;
	/* Without any SAN configuration, look at the local block devices (a host logged in with
	 * open-iscsi, or loop devices). */
	o.scan_local = ctx->opts.scan_local || (!o.nportals && !o.npaths);
	rc = blkmap_resolve(ctx->bm, d->vol, &o, &rep);
	if (rc < 0) {
		pc_device_fail(d, PC_DEV_FAILED, "cannot find the volume's LUNs: %s", blkmap_errstr(ctx->bm));
		blkmap_report_free(rep);
		return;
	}
	blkmap_report_free(rep);
	if (d->type == LAYOUT4_SCSI) {
		/* RFC 8154 §2.4: register our key on every LUN before any I/O. */
		rc = blkmap_vol_pr_register(d->vol);
		if (rc < 0) {
			pc_device_fail(d, PC_DEV_FAILED, "PERSISTENT RESERVE OUT REGISTER failed: %s",
				       blkmap_errstr(ctx->bm));
			return;
		}
	}
	d->block_bytes = 512;
	for (unsigned i = 0; i < blkmap_vol_count(d->vol); i++) {
		struct blkmap_dev *dev = blkmap_vol_is_leaf(d->vol, i) ? blkmap_vol_leaf_dev(d->vol, i) : NULL;
		if (dev && blkmap_dev_block_bytes(dev) > d->block_bytes)
			d->block_bytes = blkmap_dev_block_bytes(dev);
	}
	d->size_bytes = blkmap_vol_size_bytes(d->vol, blkmap_vol_count(d->vol) - 1);
	d->state = PC_DEV_READY;
	d->stale = 0;
	LOG_DEBUG("pnfs: device %s resolved (%u volumes, %llu bytes)", hexid(d->id), blkmap_vol_count(d->vol),
		  (unsigned long long)d->size_bytes);
	wake(d);
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
	blkmap_vol_free(d->vol);
	d->vol = vol;
	d->state = PC_DEV_RESOLVING;
	d->work.fn = resolve_fire;
	d->work.arg = d;
	pc_timer_arm(d->ctx, &d->work, 0);
	return 0;
}

static void fetch(struct pc_device *d);

static void gdi_done(struct pc_compound *c)
{
	struct pc_device *d = c->priv;
	nfs_resop4 *r = pc_res_op(c, OP_GETDEVICEINFO);

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

static void fetch(struct pc_device *d)
{
	struct pnfs_context *ctx = d->ctx;
	struct pc_compound *c = pc_compound_new(ctx, "GETDEVICEINFO %s", hexid(d->id));
	nfs_argop4 *op;
	uint32_t *notify;

	if (!c) {
		pc_device_fail(d, PC_DEV_FAILED, "out of memory");
		return;
	}
	d->state = PC_DEV_FETCHING;
	ctx->stats.getdeviceinfos++;
	op = pc_add(c, OP_GETDEVICEINFO);
	notify = pc_alloc(c, sizeof(uint32_t));
	if (op && notify) {
		GETDEVICEINFO4args *a = &op->nfs_argop4_u.opgetdeviceinfo;
		memcpy(a->gdia_device_id, d->id, NFS4_DEVICEID4_SIZE);
		a->gdia_layout_type = d->type;
		a->gdia_maxcount = d->maxcount;
		*notify = (1u << NOTIFY_DEVICEID4_CHANGE) | (1u << NOTIFY_DEVICEID4_DELETE);
		a->gdia_notify_types.bitmap4_val = notify;
		a->gdia_notify_types.bitmap4_len = 1;
	}
	c->done = gdi_done;
	c->priv = d;
	pc_submit(c);
}

int pc_device_ensure(struct pc_device *d, void (*fn)(struct pnfs_context *, void *), void *arg)
{
	struct pc_waiter *w;

	if (d->state == PC_DEV_READY && !d->stale)
		return 1;
	if (d->state == PC_DEV_FAILED || d->state == PC_DEV_FENCED)
		return -ENODEV;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	w->next = d->waiters;
	d->waiters = w;
	if (d->state == PC_DEV_NEW || (d->state == PC_DEV_READY && d->stale))
		fetch(d);
	return 0;
}

/* ---- notifications and teardown ----------------------------------------------------------------- */

void pc_devices_changed(struct pnfs_context *ctx)
{
	/* SEQ4_STATUS_DEVID_CHANGED/DELETED without a CB_NOTIFY_DEVICEID: fetch them all again. */
	for (struct pc_device *d = ctx->devices_list; d; d = d->next)
		if (d->state == PC_DEV_READY)
			d->stale = 1;
}

static void device_notify_one(struct pnfs_context *ctx, unsigned bit, XDR *x)
{
	if (bit == NOTIFY_DEVICEID4_CHANGE) {
		notify_deviceid_change4 ch;
		memset(&ch, 0, sizeof(ch));
		if (!xdr_notify_deviceid_change4(x, &ch))
			return;
		for (struct pc_device *d = ctx->devices_list; d; d = d->next)
			if (d->type == ch.ndc_layouttype && memcmp(d->id, ch.ndc_deviceid, NFS4_DEVICEID4_SIZE) == 0 &&
			    d->state == PC_DEV_READY) {
				LOG_INFO("pnfs: device %s changed; fetching it again", hexid(d->id));
				d->stale = 1;
			}
	} else if (bit == NOTIFY_DEVICEID4_DELETE) {
		notify_deviceid_delete4 del;
		memset(&del, 0, sizeof(del));
		if (!xdr_notify_deviceid_delete4(x, &del))
			return;
		for (struct pc_device *d = ctx->devices_list; d; d = d->next)
			if (d->type == del.ndd_layouttype && memcmp(d->id, del.ndd_deviceid, NFS4_DEVICEID4_SIZE) == 0 &&
			    d->state != PC_DEV_FENCED)
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

void pc_devices_free(struct pnfs_context *ctx)
{
	while (ctx->devices_list) {
		struct pc_device *d = ctx->devices_list;
		ctx->devices_list = d->next;
		pc_timer_cancel(ctx, &d->work);
		while (d->waiters) {
			struct pc_waiter *w = d->waiters;
			d->waiters = w->next;
			free(w);
		}
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
	struct pc_device *d = pc_device_get(ctx, id, type);

	if (!d)
		return -ENOMEM;
	blkmap_vol_free(d->vol);
	d->vol = vol;
	d->state = PC_DEV_RESOLVING;
	d->work.fn = resolve_fire;
	d->work.arg = d;
	resolve_fire(ctx, &d->work);
	return d->state == PC_DEV_READY ? 0 : -ENODEV;
}
