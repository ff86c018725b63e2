/* The userspace executor of a volume's table: a volume range is mapped to runs, runs that continue
 * each other on the same leaf are gathered into one command (a stripe row after row lands in one
 * READ/WRITE with a scatter/gather list over the caller's buffers), commands are cut at the device's
 * max transfer, and each device's queue keeps queue_depth of them in flight. */
#include "blkmap/vol_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t iov_total(const struct iovec *iov, int niov)
{
	uint64_t t = 0;
	for (int i = 0; i < niov; i++)
		t += iov[i].iov_len;
	return t;
}

/* Check every run's leaf: bound, one context, aligned to its block size. Returns the context. */
static int check_runs(struct blkmap_vol *vol, const struct blkmap_run *r, size_t n, int write,
		      struct blkmap_ctx **ctxp)
{
	struct blkmap_ctx *ctx = NULL;

	for (size_t i = 0; i < n; i++) {
		struct blkmap_dev *dev = vol->v[r[i].leaf].dev;
		if (!dev)
			return bm_vol_err(vol, -ENODEV, "volume %u (%s) is not bound to a device", r[i].leaf,
					  blkmap_vol_type_name(vol->v[r[i].leaf].type));
		if (!dev->ctx)
			return bm_vol_err(vol, -ENODEV, "volume %u: the blkmap context of %s was destroyed", r[i].leaf,
					  dev->name);
		if (ctx && dev->ctx != ctx)
			return bm_vol_err(vol, -EINVAL, "volume %u: its devices belong to different blkmap contexts",
					  r[i].leaf);
		ctx = dev->ctx;
		if (r[i].leaf_offset_bytes % dev->block_bytes || r[i].length_bytes % dev->block_bytes)
			return bm_vol_err(vol, -EINVAL,
					  "volume offset %" PRIu64 ": %" PRIu64 " bytes at byte %" PRIu64
					  " of %s are not whole %u-byte blocks",
					  r[i].vol_offset_bytes, r[i].length_bytes, r[i].leaf_offset_bytes, dev->name,
					  dev->block_bytes);
		if (write && dev->readonly)
			return bm_vol_err(vol, -EROFS, "%s is open read-only", dev->name);
	}
	*ctxp = ctx;
	return 0;
}

static int vol_io_async(struct blkmap_vol *vol, enum bm_op op, uint64_t off, const struct iovec *iov, int niov,
			blkmap_io_cb cb, void *priv)
{
	uint64_t len = iov_total(iov, niov);
	struct blkmap_run *runs = NULL;
	struct bm_cmd **open = NULL;
	struct blkmap_ctx *ctx = NULL;
	struct bm_req *req;
	size_t nruns = 0;
	int rc;

	if (niov < 0 || (niov > 0 && !iov))
		return bm_vol_err(vol, -EINVAL, "bad iovec array");
	rc = blkmap_vol_map(vol, off, len, &runs, &nruns);
	if (rc < 0)
		return rc;
	if (nruns == 0) {
		free(runs);
		return bm_vol_err(vol, -EINVAL, "empty I/O");
	}
	rc = check_runs(vol, runs, nruns, op == BM_OP_WRITE, &ctx);
	if (rc < 0)
		goto out;
	open = calloc(vol->n, sizeof(*open));
	req = open ? bm_req_new(ctx) : NULL;
	if (!req) {
		rc = bm_vol_err(vol, -ENOMEM, "out of memory");
		goto out;
	}
	req->io_cb = cb;
	req->priv = priv;
	req->res.bytes = len;
	for (size_t i = 0; i < nruns && req->status == 0; i++) {
		const struct blkmap_run *r = &runs[i];
		struct blkmap_dev *dev = vol->v[r->leaf].dev;
		uint64_t loff = r->leaf_offset_bytes, rem = r->length_bytes, boff = r->vol_offset_bytes - off;
		while (rem > 0) {
			struct bm_cmd *c = open[r->leaf];
			uint64_t take;
			if (!c || c->lba * dev->block_bytes + c->bytes != loff || c->bytes >= dev->max_xfer_bytes) {
				c = bm_cmd_new(req, dev, op);
				if (!c) {
					bm_req_fail_early(req, -ENOMEM, "out of memory planning volume I/O");
					break;
				}
				c->leaf = (int)r->leaf;
				c->lba = loff / dev->block_bytes;
				open[r->leaf] = c;
				bm_dev_enqueue(dev, c);
			}
			take = dev->max_xfer_bytes - c->bytes;
			if (take > rem)
				take = rem;
			if (bm_cmd_add_range(c, iov, niov, boff, take) < 0) {
				bm_req_fail_early(req, -ENOMEM, "out of memory planning volume I/O");
				break;
			}
			c->nblocks = (uint32_t)(c->bytes / dev->block_bytes);
			loff += take;
			boff += take;
			rem -= take;
		}
	}
	for (unsigned i = 0; i < vol->n; i++) {
		if (open[i])
			bm_dev_dispatch(open[i]->dev);
	}
	bm_req_submit_done(req);
	rc = 0;
out:
	free(open);
	free(runs);
	return rc;
}

int blkmap_vol_readv_async(struct blkmap_vol *vol, uint64_t off_bytes, const struct iovec *iov, int niov,
			   blkmap_io_cb cb, void *private_data)
{
	return vol_io_async(vol, BM_OP_READ, off_bytes, iov, niov, cb, private_data);
}

int blkmap_vol_writev_async(struct blkmap_vol *vol, uint64_t off_bytes, const struct iovec *iov, int niov,
			    blkmap_io_cb cb, void *private_data)
{
	return vol_io_async(vol, BM_OP_WRITE, off_bytes, iov, niov, cb, private_data);
}

struct vwait {
	int done;
	int status;
	struct blkmap_vol *vol;
};

static void vwait_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct vwait *w = priv;
	(void)ctx;
	w->status = status;
	if (status < 0 && res->message)
		bm_vol_err(w->vol, status, "%s", res->message);
	w->done = 1;
}

/* The context a sync call on the volume waits in; what names the call in the error. */
static int sync_ctx(struct blkmap_vol *vol, const char *what, struct blkmap_ctx **ctxp)
{
	struct blkmap_ctx *ctx = NULL;

	for (unsigned i = 0; i < vol->n && !ctx; i++)
		if (vol->v[i].dev && vol->v[i].dev->ctx)
			ctx = vol->v[i].dev->ctx;
	if (!ctx)
		return bm_vol_err(vol, -ENODEV, "no leaf of the volume is bound to a device");
	if (ctx->depth > 0)
		return bm_vol_err(vol, -EDEADLK, "sync volume %s from inside a completion callback", what);
	*ctxp = ctx;
	return 0;
}

/* Wait for a request started with vwait_cb; rc is what starting it returned. */
static int sync_wait(struct blkmap_ctx *ctx, struct vwait *w, int rc)
{
	if (rc < 0)
		return rc;
	rc = bm_wait(ctx, &w->done);
	return rc < 0 ? rc : w->status;
}

static int vol_sync(struct blkmap_vol *vol, enum bm_op op, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { buf, len };
	struct vwait w = { 0, 0, vol };
	struct blkmap_ctx *ctx = NULL;
	int rc = sync_ctx(vol, "I/O", &ctx);

	if (rc < 0)
		return rc;
	return sync_wait(ctx, &w, vol_io_async(vol, op, off, &iov, 1, vwait_cb, &w));
}

int blkmap_vol_pread(struct blkmap_vol *vol, void *buf, size_t len, uint64_t off_bytes)
{
	return vol_sync(vol, BM_OP_READ, buf, len, off_bytes);
}

int blkmap_vol_pwrite(struct blkmap_vol *vol, const void *buf, size_t len, uint64_t off_bytes)
{
	return vol_sync(vol, BM_OP_WRITE, (void *)buf, len, off_bytes);
}

/* The registrations of blkmap_vol_pr_register, all sent at once: one LUN's round trip, not their sum. */
struct pr_reg {
	unsigned leaf;
	int status;
	char err[300];
	struct pr_regs *all;
};

struct pr_regs {
	unsigned pending;
	int issuing; /* still sending: a completion then does not end the wait */
	int done;
	struct pr_reg r[];
};

static void pr_reg_cb(struct blkmap_ctx *ctx, int status, void *priv)
{
	struct pr_reg *r = priv;

	r->status = status;
	if (status < 0)
		snprintf(r->err, sizeof(r->err), "%s", blkmap_errstr(ctx));
	if (--r->all->pending == 0 && !r->all->issuing)
		r->all->done = 1;
}

int blkmap_vol_pr_register(struct blkmap_vol *vol)
{
	struct pr_regs *all;
	struct blkmap_ctx *ctx = NULL;
	unsigned n = 0;
	int rc = 0;

	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		if (e->type != BLKMAP_VOL_SCSI || !e->pr_key)
			continue;
		if (!e->dev)
			return bm_vol_err(vol, -ENODEV, "volume %u (scsi) is not bound to a device", i);
		if (!e->dev->ctx)
			return bm_vol_err(vol, -ENODEV, "volume %u: its blkmap context was destroyed", i);
		if (ctx && e->dev->ctx != ctx)
			return bm_vol_err(vol, -EINVAL, "volume %u: its devices belong to different blkmap contexts", i);
		ctx = e->dev->ctx;
		n++;
	}
	if (n == 0)
		return 0;
	if (ctx->depth > 0)
		return bm_vol_err(vol, -EDEADLK, "blkmap: a sync call from inside a completion callback");
	all = calloc(1, sizeof(*all) + n * sizeof(all->r[0]));
	if (!all)
		return bm_vol_err(vol, -ENOMEM, "out of memory");
	all->issuing = 1;
	n = 0;
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		struct blkmap_pr_out a = { .action = BLKMAP_PR_REGISTER_AND_IGNORE, .sa_key = e->pr_key };
		struct pr_reg *r = &all->r[n];
		int sent;
		if (e->type != BLKMAP_VOL_SCSI || !e->pr_key)
			continue;
		n++;
		r->leaf = i;
		r->all = all;
		all->pending++;
		sent = blkmap_pr_out_async(e->dev, &a, pr_reg_cb, r);
		if (sent < 0) {
			/* refused before it was queued: no callback comes */
			r->status = sent;
			snprintf(r->err, sizeof(r->err), "%s", blkmap_errstr(ctx));
			all->pending--;
		}
	}
	all->issuing = 0;
	all->done = all->pending == 0;
	rc = bm_wait(ctx, &all->done);
	if (rc < 0)
		/* the loop failed: the registrations still out keep their memory */
		return bm_vol_err(vol, rc, "%s", blkmap_errstr(ctx));
	for (unsigned k = 0; k < n && rc == 0; k++)
		if (all->r[k].status < 0)
			rc = bm_vol_err(vol, all->r[k].status, "volume %u: %s", all->r[k].leaf, all->r[k].err);
	free(all);
	return rc;
}

/* ---- cache flushes -------------------------------------------------------------------------------- */

/* One request with a flush command for each distinct device among the marked leaves, all dispatched
 * at once so the LUNs write their caches out in parallel. */
static int flush_leaves(struct blkmap_vol *vol, const uint8_t *mark, blkmap_io_cb cb, void *priv)
{
	struct blkmap_ctx *ctx = NULL;
	struct bm_req *req;

	for (unsigned i = 0; i < vol->n; i++) {
		struct blkmap_dev *dev = vol->v[i].dev;
		if (!mark[i])
			continue;
		if (!dev)
			return bm_vol_err(vol, -ENODEV, "volume %u (%s) is not bound to a device", i,
					  blkmap_vol_type_name(vol->v[i].type));
		if (!dev->ctx)
			return bm_vol_err(vol, -ENODEV, "volume %u: the blkmap context of %s was destroyed", i,
					  dev->name);
		if (ctx && dev->ctx != ctx)
			return bm_vol_err(vol, -EINVAL, "volume %u: its devices belong to different blkmap contexts", i);
		ctx = dev->ctx;
	}
	if (!ctx)
		return bm_vol_err(vol, -ENODEV, "no leaf of the volume is bound to a device");
	req = bm_req_new(ctx);
	if (!req)
		return bm_vol_err(vol, -ENOMEM, "out of memory");
	req->io_cb = cb;
	req->priv = priv;
	req->finish = bm_flush_count;
	for (unsigned i = 0; i < vol->n && req->status == 0; i++) {
		struct blkmap_dev *dev = vol->v[i].dev;
		int dup = 0;
		if (!mark[i])
			continue;
		for (unsigned j = 0; j < i && !dup; j++)
			dup = mark[j] && vol->v[j].dev == dev;
		if (!dup && bm_flush_queue(req, dev, (int)i) < 0)
			bm_req_fail_early(req, -ENOMEM, "out of memory queueing cache flushes");
	}
	for (unsigned i = 0; i < vol->n; i++)
		if (mark[i] && vol->v[i].dev->pend_head)
			bm_dev_dispatch(vol->v[i].dev);
	bm_req_submit_done(req);
	return 0;
}

int blkmap_vol_flush_leaves_async(struct blkmap_vol *vol, const uint8_t *leaves, blkmap_io_cb cb, void *private_data)
{
	int any = 0;

	for (unsigned i = 0; i < vol->n; i++) {
		if (leaves[i] && !blkmap_vol_is_leaf(vol, i))
			return bm_vol_err(vol, -EINVAL, "volume %u is not a leaf (simple or scsi)", i);
		any |= leaves[i] != 0;
	}
	if (!any)
		return bm_vol_err(vol, -EINVAL, "no leaves to flush");
	return flush_leaves(vol, leaves, cb, private_data);
}

int blkmap_vol_flush_async(struct blkmap_vol *vol, blkmap_io_cb cb, void *private_data)
{
	uint8_t *mark = calloc(vol->n ? vol->n : 1, 1);
	int rc;

	if (!mark)
		return bm_vol_err(vol, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < vol->n; i++)
		mark[i] = (uint8_t)blkmap_vol_is_leaf(vol, i);
	rc = flush_leaves(vol, mark, cb, private_data);
	free(mark);
	return rc;
}

int blkmap_vol_flush_ranges_async(struct blkmap_vol *vol, const struct blkmap_range *ranges, size_t nranges,
				  blkmap_io_cb cb, void *private_data)
{
	uint8_t *mark = calloc(vol->n ? vol->n : 1, 1);
	int rc = 0, any = 0;

	if (!mark)
		return bm_vol_err(vol, -ENOMEM, "out of memory");
	for (size_t k = 0; k < nranges && rc == 0; k++) {
		struct blkmap_run *runs = NULL;
		size_t nruns = 0;
		if (ranges[k].len_bytes == 0)
			continue;
		rc = blkmap_vol_map(vol, ranges[k].off_bytes, ranges[k].len_bytes, &runs, &nruns);
		for (size_t i = 0; rc == 0 && i < nruns; i++) {
			mark[runs[i].leaf] = 1;
			any = 1;
		}
		free(runs);
	}
	if (rc == 0 && !any)
		rc = bm_vol_err(vol, -EINVAL, "no bytes to flush");
	if (rc == 0)
		rc = flush_leaves(vol, mark, cb, private_data);
	free(mark);
	return rc;
}

int blkmap_vol_flush(struct blkmap_vol *vol)
{
	struct vwait w = { 0, 0, vol };
	struct blkmap_ctx *ctx = NULL;
	int rc = sync_ctx(vol, "flush", &ctx);

	if (rc < 0)
		return rc;
	return sync_wait(ctx, &w, blkmap_vol_flush_async(vol, vwait_cb, &w));
}
