/* Layout queries for tools: "what does the server's layout say about [off, off+len) of this file?".
 * The answer goes through the layout cache like any read's (the same LAYOUTGETs, stateids and
 * recalls), so it shows what a client would use: LAYOUTGET in READ iomode until the range is covered,
 * GETDEVICEINFO and blkmap resolution of every device the extents name, then the extents clipped to
 * the range. A device that cannot be resolved does not fail the query: pnfs_device_info() says why. */
#include "client/layout_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define QUERY_RETRY_MS 200
#define QUERY_RETRIES 50

struct lquery {
	struct pc_call call;        /* first: the call frees the query */
	struct pnfs_fh *fh;
	struct pc_layout *lo;
	uint64_t off, end;
	unsigned retries;
	uint64_t stuck_at;          /* the offset the last LAYOUTGET was asked to cover */
	int asked;
	unsigned pending;           /* devices still being fetched or resolved */
	struct pc_timer retry;
};

static void query_step(struct lquery *q);

static void query_finish(struct lquery *q, int status, struct pnfs_extent *ext)
{
	pc_timer_cancel(q->call.ctx, &q->retry);
	pc_call_complete(&q->call, status, ext);
}

/* Whether extent e, from file offset a on, continues the last one collected (so the answer does not
 * depend on where the server cut its layouts): the same state and iomode, back to back in the file,
 * and for extents with blocks on the same device, back to back in the volume too. */
static int continues(const struct pnfs_extent *last, const struct pc_ext *e, uint64_t a, int rw)
{
	if (last->file_offset + last->length != a || (uint32_t)last->state != e->state || last->rw != rw)
		return 0;
	if (e->state == PNFS_BLOCK_NONE_DATA)
		return 1;
	return memcmp(last->deviceid, e->dev->id, sizeof(last->deviceid)) == 0 &&
	       last->storage_offset + last->length == e->soff + (a - e->foff);
}

/* The extents of the live segments that serve the range, clipped to it, in file order, merged where
 * one continues the other. */
static int collect(struct lquery *q, struct pnfs_extent **out, size_t *nout)
{
	struct pnfs_extent *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t pos = q->off;

	while (pos < q->end) {
		int recalled = 0;
		struct pc_seg *s = pc_layout_find(q->lo, pos, 0, &recalled);
		uint64_t stop;

		if (!s)
			break;
		stop = s->end < q->end ? s->end : q->end;
		for (size_t i = 0; i < s->n; i++) {
			const struct pc_ext *e = &s->ext[i];
			uint64_t a = e->foff > pos ? e->foff : pos;
			uint64_t b = e->foff + e->len < stop ? e->foff + e->len : stop;
			if (b <= a)
				continue;
			if (n && continues(&v[n - 1], e, a, s->iomode == LAYOUTIOMODE4_RW)) {
				v[n - 1].length = b - v[n - 1].file_offset;
				continue;
			}
			struct pnfs_extent *p = pc_grow(v, &cap, n, sizeof(*v), 32);
			if (!p) {
				free(v);
				return -ENOMEM;
			}
			v = p;
			memset(&v[n], 0, sizeof(v[n]));
			v[n].file_offset = a;
			v[n].length = b - a;
			v[n].storage_offset = e->soff + (a - e->foff);
			v[n].state = (enum pnfs_extent_state)e->state;
			memcpy(v[n].deviceid, e->dev->id, sizeof(v[n].deviceid));
			v[n].rw = s->iomode == LAYOUTIOMODE4_RW;
			n++;
		}
		pos = stop;
	}
	*out = v;
	*nout = n;
	return 0;
}

static void query_done(struct lquery *q)
{
	struct pnfs_extent *ext = NULL;
	size_t n = 0;
	int rc = collect(q, &ext, &n);

	if (rc < 0) {
		query_finish(q, pc_err(q->call.ctx, rc, "out of memory"), NULL);
		return;
	}
	if (n > (size_t)0x7fffffff) {
		free(ext);
		query_finish(q, pc_err(q->call.ctx, -E2BIG, "the layout has too many extents"), NULL);
		return;
	}
	query_finish(q, (int)n, ext);
}

static void device_settled(struct pnfs_context *ctx, void *arg)
{
	struct lquery *q = arg;

	(void)ctx;
	if (q->pending && --q->pending == 0)
		query_done(q);
}

/* Every device the range's extents name, fetched and resolved (or failed) before the answer. */
static void query_devices(struct lquery *q)
{
	struct pc_device *seen[64];
	unsigned nseen = 0;
	uint64_t pos = q->off;

	q->pending = 1; /* held while registering, so a device settling now does not finish early */
	while (pos < q->end) {
		int recalled = 0;
		struct pc_seg *s = pc_layout_find(q->lo, pos, 0, &recalled);
		if (!s)
			break;
		for (size_t i = 0; i < s->n; i++) {
			struct pc_device *d = s->ext[i].dev;
			unsigned k;
			if (s->ext[i].state == PNFS_BLOCK_NONE_DATA || s->ext[i].foff >= q->end ||
			    s->ext[i].foff + s->ext[i].len <= pos)
				continue;
			for (k = 0; k < nseen && seen[k] != d; k++)
				;
			if (k < nseen)
				continue;
			if (nseen < sizeof(seen) / sizeof(seen[0]))
				seen[nseen++] = d;
			/* Counted first: a fetch that fails at once settles before ensure returns. */
			q->pending++;
			if (pc_device_ensure(d, device_settled, q) != 0)
				q->pending--;
		}
		pos = s->end;
	}
	device_settled(q->call.ctx, q);
}

static void retry_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)ctx;
	query_step(t->arg);
}

static void get_ended(struct pnfs_context *ctx, void *arg)
{
	struct lquery *q = arg;

	if (q->lo->get_result < 0) {
		query_finish(q, q->lo->get_result, NULL);
		return;
	}
	if (q->lo->get_result == 1) {
		if (++q->retries > QUERY_RETRIES) {
			query_finish(q, pc_err(ctx, -EAGAIN, "LAYOUTGET %s: the server kept asking to try later",
					       pc_path_show(ctx, q->fh->path)),
				     NULL);
			return;
		}
		pc_timer_arm(ctx, &q->retry, QUERY_RETRY_MS);
		return;
	}
	query_step(q);
}

static void query_step(struct lquery *q)
{
	struct pnfs_context *ctx = q->call.ctx;
	uint64_t pos = q->off, bsz = q->lo->blksize ? q->lo->blksize : 4096;
	int recalled = 0;

	while (pos < q->end) {
		struct pc_seg *s = pc_layout_find(q->lo, pos, 0, &recalled);
		if (!s)
			break;
		pos = s->end;
	}
	if (pos >= q->end) {
		query_devices(q);
		return;
	}
	if (recalled || q->lo->returning) {
		/* A recall of this range is being answered: ask again once it is returned. */
		if (++q->retries > QUERY_RETRIES) {
			query_finish(q, pc_err(ctx, -EAGAIN, "LAYOUTGET %s: offset %llu stays recalled",
					       pc_path_show(ctx, q->fh->path), (unsigned long long)pos),
				     NULL);
			return;
		}
		pc_timer_arm(ctx, &q->retry, QUERY_RETRY_MS);
		return;
	}
	if (q->asked && q->stuck_at == pos && !q->lo->getting && q->lo->get_result == 0) {
		/* The server granted a layout that does not reach this offset although asked from it. */
		query_finish(q, pc_err(ctx, -EPROTO, "LAYOUTGET %s: the layout granted does not cover offset %llu",
				       pc_path_show(ctx, q->fh->path), (unsigned long long)pos),
			     NULL);
		return;
	}
	if (pc_layout_on_get(q->lo, get_ended, q) < 0) {
		query_finish(q, pc_err(ctx, -ENOMEM, "out of memory"), NULL);
		return;
	}
	if (!q->lo->getting) {
		struct pc_layout *lo = q->lo;
		uint64_t a = pos - pos % bsz;
		q->asked = 1;
		q->stuck_at = pos;
		/* A LAYOUTGET that fails at once has ended (and told us) before this returns: q may be
		 * gone then, so it is touched again only if the call was never sent at all. */
		pc_layout_get(lo, q->fh, a, q->end - a, 0, LAYOUTIOMODE4_READ);
		if (!lo->getting && pc_layout_off_get(lo, get_ended, q))
			query_finish(q, pc_err(ctx, -ENOMEM, "LAYOUTGET: out of memory"), NULL);
	}
}

int pnfs_layout_extents_async(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t offset, uint64_t length,
			      pnfs_cb cb, void *private_data)
{
	struct lquery *q;

	if (!ctx || !fh || fh->ctx != ctx)
		return -EINVAL;
	if (!ctx->mounted)
		return pc_err(ctx, -ENOTCONN, "layout query: not mounted");
	if (ctx->opts.mds_io || !ctx->layout_type)
		return pc_err(ctx, -EOPNOTSUPP, "%s: %s", pc_path_show(ctx, fh->path),
			      ctx->opts.mds_io ? "layouts are off (MDS I/O only)"
					       : "the server offers no block or SCSI layouts for this file system");
	if (length == 0 || offset + length < offset)
		length = UINT64_MAX - offset;
	q = (struct lquery *)pc_call_new(ctx, sizeof(*q), cb, private_data);
	if (!q)
		return pc_err(ctx, -ENOMEM, "out of memory");
	q->fh = fh;
	q->lo = pc_layout_attach(fh);
	if (!q->lo) {
		ctx->ncalls--;
		free(q);
		return pc_err(ctx, -ENOMEM, "out of memory");
	}
	q->off = offset;
	q->end = offset + length;
	q->retry.fn = retry_fire;
	q->retry.arg = q;
	if (q->off >= q->end) {
		query_finish(q, 0, NULL);
		return 0;
	}
	query_step(q);
	return 0;
}

int pnfs_device_info(struct pnfs_context *ctx, const uint8_t deviceid[16], struct blkmap_vol **vol,
		     const char **why)
{
	for (struct pc_device *d = ctx->devices_list; d; d = d->next) {
		if (memcmp(d->id, deviceid, NFS4_DEVICEID4_SIZE) != 0)
			continue;
		if (vol)
			*vol = d->vol;
		if (why)
			*why = d->state == PC_DEV_READY       ? ""
			       : d->state == PC_DEV_RESOLVING ? "its LUNs are being looked for"
			       : d->state == PC_DEV_FETCHING  ? "GETDEVICEINFO is in flight"
			       : d->why[0]                    ? d->why
			                                      : "not fetched yet";
		return d->state == PC_DEV_READY;
	}
	if (vol)
		*vol = NULL;
	if (why)
		*why = "unknown device";
	return -ENOENT;
}
