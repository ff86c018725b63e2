/* Leaf devices, whatever carries them: opening by URL or path, reference counting, the per-device
 * command queue (at most queue_depth in flight, the rest waiting in order), device I/O and the SCSI
 * persistent reservation calls. Transport details live in iscsi.c and fdev.c. */
#include "blkmap/internal.h"
#include "proto/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *bm_op_name(const struct bm_cmd *cmd)
{
	switch (cmd->op) {
	case BM_OP_READ:
		return "READ(16)";
	case BM_OP_WRITE:
		return "WRITE(16)";
	case BM_OP_PROUT:
		return "PERSISTENT RESERVE OUT";
	case BM_OP_FLUSH:
		return cmd->dev->kind == BLKMAP_DEV_ISCSI ? "SYNCHRONIZE CACHE(10)" : "fdatasync";
	case BM_OP_CDB:
		switch (cmd->cdb[0]) {
		case 0x12:
			return "INQUIRY";
		case 0x9e:
			return "READ CAPACITY(16)";
		case 0x5e:
			return "PERSISTENT RESERVE IN";
		case 0x5f:
			return "PERSISTENT RESERVE OUT";
		case 0x00:
			return "TEST UNIT READY";
		}
		return "SCSI command";
	}
	return "command";
}

const char *bm_cmd_what(const struct bm_cmd *cmd, char *buf, size_t len)
{
	/* an LBA only for I/O: "PERSISTENT RESERVE OUT LBA 0+0" says nothing */
	if (cmd->op == BM_OP_FLUSH || (cmd->op != BM_OP_READ && cmd->op != BM_OP_WRITE && cmd->nblocks == 0))
		snprintf(buf, len, "%s", bm_op_name(cmd));
	else
		snprintf(buf, len, "%s LBA %" PRIu64 "+%u", bm_op_name(cmd), cmd->lba, cmd->nblocks);
	return buf;
}

/* A fresh device for spec, linked into the context (an iSCSI login runs through the context's loop). */
static struct blkmap_dev *dev_new(struct blkmap_ctx *ctx, const char *spec, unsigned flags)
{
	struct blkmap_dev *dev = calloc(1, sizeof(*dev));

	if (!dev) {
		bm_err(ctx, -ENOMEM, "blkmap: out of memory opening %s", spec);
		return NULL;
	}
	dev->ctx = ctx;
	dev->refs = 1;
	dev->fd = -1;
	dev->reg_fd = -1;
	dev->src = (struct bm_src){ BM_SRC_DEV, dev };
	dev->readonly = !!(flags & BLKMAP_OPEN_RDONLY);
	proto_list_add(&ctx->devs, &dev->link);
	return dev;
}

/* The context's key on a LUN just opened (blkmap_ctx_opts.register_key), before anything reads it. */
static int register_key(struct blkmap_dev *dev)
{
	struct blkmap_ctx *ctx = dev->ctx;
	char why[sizeof(ctx->err)];
	int rc;

	if (!ctx->register_key || dev->kind != BLKMAP_DEV_ISCSI)
		return 0;
	rc = blkmap_pr_register(dev, 0, ctx->register_key, 1);
	if (rc == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", ctx->err);
	return bm_err(ctx, rc, "%s: cannot register key %016" PRIx64 " (REGISTER AND IGNORE EXISTING KEY): %s",
		      dev->name, ctx->register_key, why);
}

void bm_dev_unregister_key(struct blkmap_dev *dev)
{
	struct blkmap_ctx *ctx = dev->ctx;
	char saved[sizeof(ctx->err)];

	if (!ctx || !ctx->register_key || ctx->keep_key || dev->kind != BLKMAP_DEV_ISCSI ||
	    dev->pr_key != ctx->register_key || dev->state != BM_UP || dev->logout || ctx->depth > 0)
		return;
	memcpy(saved, ctx->err, sizeof(saved));
	if (blkmap_pr_register(dev, ctx->register_key, 0, 0) < 0)
		LOG_WARN("%s: key %016" PRIx64 " stays registered: %s", dev->name, ctx->register_key, ctx->err);
	memcpy(ctx->err, saved, sizeof(saved));
}

/* The device opened with rc: its transfer limit when it did; freed when it did not. */
static int dev_opened(struct blkmap_dev *dev, int rc)
{
	if (rc == 0)
		rc = register_key(dev);
	if (rc < 0) {
		dev->refs = 0;
		bm_dev_destroy(dev);
		return rc;
	}
	dev->max_xfer_bytes = dev->ctx->max_xfer_bytes;
	if (dev->bl_max_bytes && dev->bl_max_bytes < dev->max_xfer_bytes)
		dev->max_xfer_bytes = dev->bl_max_bytes;
	dev->max_xfer_bytes -= dev->max_xfer_bytes % dev->block_bytes;
	if (dev->max_xfer_bytes == 0)
		dev->max_xfer_bytes = dev->block_bytes;
	return 0;
}

static int is_iscsi(const char *spec)
{
	return strncmp(spec, "iscsi://", 8) == 0;
}

int blkmap_dev_open(struct blkmap_ctx *ctx, const char *spec, unsigned flags, struct blkmap_dev **out)
{
	struct blkmap_dev *dev;
	int rc;

	*out = NULL;
	if (!spec || !*spec)
		return bm_err(ctx, -EINVAL, "blkmap: empty device name");
	dev = dev_new(ctx, spec, flags);
	if (!dev)
		return -ENOMEM;
	rc = is_iscsi(spec) ? bm_iscsi_open(dev, spec) : bm_fdev_open(dev, spec, flags);
	rc = dev_opened(dev, rc);
	if (rc == 0)
		*out = dev;
	return rc;
}

unsigned blkmap_dev_open_many(struct blkmap_ctx *ctx, const char *const *specs, const unsigned *flags, unsigned n,
			      struct blkmap_dev **out, char *errs, size_t errlen)
{
	struct blkmap_dev **devs = calloc(n ? n : 1, sizeof(*devs));
	const char **urls = calloc(n ? n : 1, sizeof(*urls));
	int *rcs = calloc(n ? n : 1, sizeof(*rcs));
	char **why = calloc(n ? n : 1, sizeof(*why));
	unsigned *at = calloc(n ? n : 1, sizeof(*at)), k = 0, opened = 0;
	int together = devs && urls && rcs && why && at;

	for (unsigned i = 0; i < n; i++) {
		out[i] = NULL;
		if (errs && errlen)
			errs[(size_t)i * errlen] = 0;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned fl = flags ? flags[i] : 0;
		char *err = errs && errlen ? errs + (size_t)i * errlen : NULL;
		/* without the room to open them together, one after another */
		if (!together || !specs[i] || !is_iscsi(specs[i])) {
			if (blkmap_dev_open(ctx, specs[i], fl, &out[i]) == 0)
				opened++;
			else if (err)
				snprintf(err, errlen, "%s", blkmap_errstr(ctx));
			continue;
		}
		devs[k] = dev_new(ctx, specs[i], fl);
		if (!devs[k]) {
			if (err)
				snprintf(err, errlen, "%s", blkmap_errstr(ctx));
			continue;
		}
		urls[k] = specs[i];
		why[k] = err;
		at[k++] = i;
	}
	if (k)
		bm_iscsi_open_many(devs, urls, rcs, errs && errlen ? why : NULL, errlen, k);
	for (unsigned j = 0; j < k; j++) {
		if (dev_opened(devs[j], rcs[j]) == 0) {
			out[at[j]] = devs[j];
			opened++;
		}
	}
	free(devs);
	free(urls);
	free(rcs);
	free(why);
	free(at);
	return opened;
}

struct blkmap_dev *blkmap_dev_ref(struct blkmap_dev *dev)
{
	dev->refs++;
	return dev;
}

static void fail_list(struct blkmap_dev *dev)
{
	struct bm_cmd *c;

	while ((c = bm_pend_pop(dev)))
		bm_cmd_finish(c, -ECANCELED, "%s: device closed", dev->name);
}

/* Shut the device down (its commands fail with -ECANCELED), unlink it from its context and free it,
 * or leave the memory to the last reference when it is an orphan. */
void bm_dev_destroy(struct blkmap_dev *dev)
{
	struct blkmap_ctx *ctx = dev->ctx;
	int keep = dev->refs > 0; /* ctx destroyed under references: the memory outlives it */

	dev->refs++; /* alive while its commands are cancelled (their callbacks may take references) */
	bm_ident_free(dev);
	bm_dev_unregister_key(dev);
	if (dev->kind == BLKMAP_DEV_ISCSI)
		bm_iscsi_close(dev);
	else
		bm_fdev_close(dev);
	fail_list(dev);
	dev->refs--;
	proto_list_del(&dev->link);
	if (keep || dev->refs > 0) {
		dev->orphan = 1;
		dev->ctx = NULL;
		return;
	}
	if (ctx->depth > 0) {
		/* an epoll event of this pass may still point at it */
		proto_list_add(&ctx->graveyard, &dev->link);
	} else {
		free(dev);
	}
}

void blkmap_dev_close(struct blkmap_dev *dev)
{
	if (!dev)
		return;
	if (--dev->refs > 0)
		return;
	if (dev->orphan) {
		free(dev);
		return;
	}
	if (dev->in_isc_service) {
		/* closed from a callback inside libiscsi: finish once libiscsi has returned */
		dev->zombie = 1;
		return;
	}
	bm_dev_destroy(dev);
}

struct blkmap_ctx *blkmap_dev_ctx(const struct blkmap_dev *dev)
{
	return dev->ctx;
}

const char *blkmap_dev_name(const struct blkmap_dev *dev)
{
	return dev->name;
}

enum blkmap_dev_kind blkmap_dev_kind(const struct blkmap_dev *dev)
{
	return dev->kind;
}

uint64_t blkmap_dev_size_bytes(const struct blkmap_dev *dev)
{
	return dev->size_bytes;
}

uint32_t blkmap_dev_block_bytes(const struct blkmap_dev *dev)
{
	return dev->block_bytes;
}

uint32_t blkmap_dev_max_xfer_bytes(const struct blkmap_dev *dev)
{
	return dev->max_xfer_bytes;
}

uint32_t blkmap_dev_block_limits_max_bytes(const struct blkmap_dev *dev)
{
	return dev->bl_max_bytes;
}

unsigned blkmap_dev_inflight(const struct blkmap_dev *dev)
{
	return dev->inflight;
}

unsigned blkmap_dev_logins(const struct blkmap_dev *dev)
{
	return dev->logins;
}

unsigned blkmap_dev_flushes(const struct blkmap_dev *dev)
{
	return dev->flushes;
}

int blkmap_dev_has_volatile_cache(const struct blkmap_dev *dev)
{
	return !dev->no_sync_cache;
}

int blkmap_dev_inquiry(struct blkmap_dev *dev, struct blkmap_inquiry *out)
{
	if (!dev->ctx)
		return -ENODEV;
	if (!dev->have_inq)
		return bm_err(dev->ctx, -EOPNOTSUPP, "%s: no SCSI INQUIRY data for this device", dev->name);
	*out = dev->inq;
	return 0;
}

/* ---- the queue -------------------------------------------------------------------------------- */

void bm_cmd_link(struct bm_cmd **head, struct bm_cmd **tail, struct bm_cmd *c, int first)
{
	struct bm_cmd **end = first ? head : tail;

	c->next = first ? *head : NULL;
	c->prev = first ? NULL : *tail;
	if (*end)
		*(first ? &(*end)->prev : &(*end)->next) = c;
	else
		*(first ? tail : head) = c;
	*end = c;
}

void bm_dev_enqueue(struct blkmap_dev *dev, struct bm_cmd *cmd)
{
	bm_cmd_link(&dev->pend_head, &dev->pend_tail, cmd, 0);
	cmd->on_list = 1;
	dev->npending++;
}

void bm_cmd_unlink(struct bm_cmd **head, struct bm_cmd **tail, struct bm_cmd *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		*tail = c->prev;
	c->next = c->prev = NULL;
	c->on_list = 0;
}

void bm_pend_remove(struct blkmap_dev *dev, struct bm_cmd *c)
{
	bm_cmd_unlink(&dev->pend_head, &dev->pend_tail, c);
	dev->npending--;
}

void bm_pend_push_front(struct blkmap_dev *dev, struct bm_cmd *c)
{
	bm_cmd_link(&dev->pend_head, &dev->pend_tail, c, 1);
	c->on_list = 1;
	dev->npending++;
}

struct bm_cmd *bm_pend_pop(struct blkmap_dev *dev)
{
	struct bm_cmd *c = dev->pend_head;
	if (c)
		bm_pend_remove(dev, c);
	return c;
}

void bm_dev_dispatch(struct blkmap_dev *dev)
{
	struct blkmap_ctx *ctx = dev->ctx;

	if (dev->kind == BLKMAP_DEV_ISCSI) {
		struct bm_sigpipe g;
		if (dev->state != BM_UP) {
			bm_iscsi_kick(dev);
			return;
		}
		/* one guard for the batch (each send would take its own) */
		bm_sigpipe_block(&g);
		while (dev->pend_head && dev->inflight < ctx->queue_depth && dev->state == BM_UP) {
			struct bm_cmd *c = bm_pend_pop(dev);
			if (bm_iscsi_send(c) < 0)
				break;
		}
		bm_sigpipe_restore(&g);
		/* inside a service pass the pass's end writes the queue and updates the registration */
		if (ctx->depth == 0)
			bm_src_update(dev);
		return;
	}
	while (dev->pend_head && dev->inflight < ctx->queue_depth) {
		struct bm_cmd *c = bm_pend_pop(dev);
		dev->inflight++;
		c->on_list = 3;
		bm_pool_submit(ctx, c);
	}
}

void bm_cmd_finish(struct bm_cmd *cmd, int status, const char *fmt, ...)
{
	cmd->status = status;
	if (status < 0 && fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(cmd->msg, sizeof(cmd->msg), fmt, ap);
		va_end(ap);
	}
	cmd->complete(cmd);
}

void bm_dev_service(struct blkmap_dev *dev, uint32_t events)
{
	if (dev->kind == BLKMAP_DEV_ISCSI)
		bm_iscsi_service(dev, events);
}

void bm_dev_tick(struct blkmap_dev *dev, int64_t now)
{
	if (dev->kind == BLKMAP_DEV_ISCSI)
		bm_iscsi_tick(dev, now);
}

/* ---- device I/O ------------------------------------------------------------------------------- */

static uint64_t iov_total(const struct iovec *iov, int niov)
{
	uint64_t t = 0;
	for (int i = 0; i < niov; i++)
		t += iov[i].iov_len;
	return t;
}

/* Split [off, off+len) of the device into commands of at most max_xfer, each gathering its slice of
 * the caller's iovecs, and queue them. buf_off is where the range starts in the iovec space. */
static int queue_range(struct bm_req *req, struct blkmap_dev *dev, int leaf, enum bm_op op, uint64_t off,
		       uint64_t len, const struct iovec *iov, int niov, uint64_t buf_off)
{
	while (len > 0) {
		uint64_t take = len < dev->max_xfer_bytes ? len : dev->max_xfer_bytes;
		struct bm_cmd *c = bm_cmd_new(req, dev, op);
		int rc;
		if (!c)
			return -ENOMEM;
		c->leaf = leaf;
		c->lba = off / dev->block_bytes;
		c->nblocks = (uint32_t)(take / dev->block_bytes);
		rc = bm_cmd_add_range(c, iov, niov, buf_off, take);
		if (rc < 0) {
			bm_cmd_finish(c, rc, "%s: out of memory", dev->name);
			return rc;
		}
		bm_dev_enqueue(dev, c);
		off += take;
		buf_off += take;
		len -= take;
	}
	return 0;
}

static int dev_io_async(struct blkmap_dev *dev, enum bm_op op, uint64_t off, const struct iovec *iov,
			int niov, blkmap_io_cb cb, void *priv)
{
	struct blkmap_ctx *ctx = dev->ctx;
	uint64_t len = iov_total(iov, niov);
	struct bm_req *req;
	int rc;

	if (!ctx)
		return -ENODEV; /* its context was destroyed */
	if (niov < 0 || (niov > 0 && !iov))
		return bm_err(ctx, -EINVAL, "%s: bad iovec array", dev->name);
	if (off % dev->block_bytes || len % dev->block_bytes)
		return bm_err(ctx, -EINVAL,
			      "%s: offset %" PRIu64 " and length %" PRIu64 " must be multiples of the block size %u",
			      dev->name, off, len, dev->block_bytes);
	if (off > dev->size_bytes || len > dev->size_bytes - off)
		return bm_err(ctx, -ERANGE, "%s: range %" PRIu64 "+%" PRIu64 " is beyond the end (%" PRIu64 " bytes)",
			      dev->name, off, len, dev->size_bytes);
	if (op == BM_OP_WRITE && dev->readonly)
		return bm_err(ctx, -EROFS, "%s: opened read-only", dev->name);
	req = bm_req_new(ctx);
	if (!req)
		return bm_err(ctx, -ENOMEM, "%s: out of memory", dev->name);
	req->io_cb = cb;
	req->priv = priv;
	req->res.bytes = len;
	rc = queue_range(req, dev, -1, op, off, len, iov, niov, 0);
	if (rc < 0)
		bm_req_fail_early(req, rc, "%s: out of memory queueing I/O", dev->name);
	bm_dev_dispatch(dev);
	bm_req_submit_done(req);
	return 0;
}

int blkmap_dev_readv_async(struct blkmap_dev *dev, uint64_t off_bytes, const struct iovec *iov, int niov,
			   blkmap_io_cb cb, void *private_data)
{
	return dev_io_async(dev, BM_OP_READ, off_bytes, iov, niov, cb, private_data);
}

int blkmap_dev_writev_async(struct blkmap_dev *dev, uint64_t off_bytes, const struct iovec *iov, int niov,
			    blkmap_io_cb cb, void *private_data)
{
	return dev_io_async(dev, BM_OP_WRITE, off_bytes, iov, niov, cb, private_data);
}

struct sync_wait {
	int done;
	int status;
};

static void sync_io_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct sync_wait *w = priv;
	(void)ctx;
	(void)res;
	w->status = status;
	w->done = 1;
}

static void sync_cmd_cb(struct blkmap_ctx *ctx, int status, void *priv)
{
	struct sync_wait *w = priv;
	(void)ctx;
	w->status = status;
	w->done = 1;
}

static int sync_finish(struct blkmap_ctx *ctx, struct sync_wait *w)
{
	int rc = bm_wait(ctx, &w->done);
	return rc < 0 ? rc : w->status;
}

int blkmap_dev_pread(struct blkmap_dev *dev, void *buf, size_t len, uint64_t off_bytes)
{
	struct iovec iov = { buf, len };
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync read from inside a completion callback", dev->name);
	rc = blkmap_dev_readv_async(dev, off_bytes, &iov, 1, sync_io_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

int blkmap_dev_pwrite(struct blkmap_dev *dev, const void *buf, size_t len, uint64_t off_bytes)
{
	struct iovec iov = { (void *)buf, len };
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync write from inside a completion callback", dev->name);
	rc = blkmap_dev_writev_async(dev, off_bytes, &iov, 1, sync_io_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

/* ---- cache flush ------------------------------------------------------------------------------ */

int bm_flush_count(struct bm_req *req, struct bm_cmd *cmd)
{
	(void)req;
	cmd->dev->flushes++;
	return 0;
}

int bm_flush_queue(struct bm_req *req, struct blkmap_dev *dev, int leaf)
{
	struct bm_cmd *c;

	if (dev->no_sync_cache) {
		/* the target said it has no SYNCHRONIZE CACHE: it acknowledges writes from stable media */
		dev->flushes++;
		return 0;
	}
	c = bm_cmd_new(req, dev, BM_OP_FLUSH);
	if (!c)
		return -ENOMEM;
	c->leaf = leaf;
	bm_dev_enqueue(dev, c);
	return 0;
}

int blkmap_dev_flush_async(struct blkmap_dev *dev, blkmap_io_cb cb, void *private_data)
{
	struct bm_req *req;

	if (!dev->ctx)
		return -ENODEV; /* its context was destroyed */
	req = bm_req_new(dev->ctx);
	if (!req)
		return bm_err(dev->ctx, -ENOMEM, "%s: out of memory", dev->name);
	req->io_cb = cb;
	req->priv = private_data;
	req->finish = bm_flush_count;
	if (bm_flush_queue(req, dev, -1) < 0)
		bm_req_fail_early(req, -ENOMEM, "%s: out of memory queueing a cache flush", dev->name);
	bm_dev_dispatch(dev);
	bm_req_submit_done(req);
	return 0;
}

int blkmap_dev_flush(struct blkmap_dev *dev)
{
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync flush from inside a completion callback", dev->name);
	rc = blkmap_dev_flush_async(dev, sync_io_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

/* ---- persistent reservations ------------------------------------------------------------------ */

static int pr_check(struct blkmap_dev *dev)
{
	if (!dev->ctx)
		return -ENODEV; /* its context was destroyed */
	if (dev->kind == BLKMAP_DEV_FILE)
		return bm_err(dev->ctx, -EOPNOTSUPP, "%s: a regular file has no persistent reservations", dev->name);
	return 0;
}

static int prout_finish(struct bm_req *req, struct bm_cmd *cmd)
{
	const struct blkmap_pr_out *a = &cmd->prout;
	(void)req;
	if ((a->action == BLKMAP_PR_REGISTER || a->action == BLKMAP_PR_REGISTER_AND_IGNORE))
		cmd->dev->pr_key = a->sa_key;
	return 0;
}

int blkmap_pr_out_async(struct blkmap_dev *dev, const struct blkmap_pr_out *args, blkmap_cmd_cb cb,
			void *private_data)
{
	struct bm_req *req;
	struct bm_cmd *c;
	int rc = pr_check(dev);

	if (rc < 0)
		return rc;
	if ((unsigned)args->action > BLKMAP_PR_REGISTER_AND_IGNORE)
		return bm_err(dev->ctx, -EINVAL, "%s: unknown PERSISTENT RESERVE OUT action %d", dev->name,
			      (int)args->action);
	req = bm_req_new(dev->ctx);
	if (!req)
		return bm_err(dev->ctx, -ENOMEM, "%s: out of memory", dev->name);
	req->cmd_cb = cb;
	req->priv = private_data;
	req->finish = prout_finish;
	c = bm_cmd_new(req, dev, dev->kind == BLKMAP_DEV_ISCSI ? BM_OP_CDB : BM_OP_PROUT);
	if (!c) {
		bm_req_fail_early(req, -ENOMEM, "%s: out of memory", dev->name);
	} else {
		c->prout = *args;
		if (dev->kind == BLKMAP_DEV_ISCSI) {
			uint8_t param[24];
			c->dbuf = malloc(24);
			if (!c->dbuf) {
				bm_cmd_finish(c, -ENOMEM, "%s: out of memory", dev->name);
				goto out;
			}
			if (args->action == BLKMAP_PR_PREEMPT_AND_ABORT && dev->no_preempt_abort)
				c->prout.action = BLKMAP_PR_PREEMPT;
			bm_cdb_prout(c, &c->prout, param);
			memcpy(c->dbuf, param, 24);
			c->dlen = 24;
			c->dir = 2;
		}
		bm_dev_enqueue(dev, c);
		bm_dev_dispatch(dev);
	}
out:
	bm_req_submit_done(req);
	return 0;
}

int blkmap_pr_out(struct blkmap_dev *dev, const struct blkmap_pr_out *args)
{
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync call from inside a completion callback", dev->name);
	rc = blkmap_pr_out_async(dev, args, sync_cmd_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

static int keys_finish(struct bm_req *req, struct bm_cmd *cmd)
{
	return bm_parse_read_keys(cmd->dbuf, cmd->dgot, req->out);
}

static int resv_finish(struct bm_req *req, struct bm_cmd *cmd)
{
	return bm_parse_read_resv(cmd->dbuf, cmd->dgot, req->out);
}

static int caps_finish(struct bm_req *req, struct bm_cmd *cmd)
{
	return bm_parse_report_caps(cmd->dbuf, cmd->dgot, req->out);
}

static int prin_async(struct blkmap_dev *dev, int sa, void *out, int (*finish)(struct bm_req *, struct bm_cmd *),
		      blkmap_cmd_cb cb, void *priv)
{
	struct bm_req *req;
	struct bm_cmd *c;
	uint16_t alloc = sa == 0 ? (uint16_t)(8 + 8 * BLKMAP_PR_MAX_KEYS) : sa == 2 ? 8 : 24;
	int rc = pr_check(dev);

	if (rc < 0)
		return rc;
	req = bm_req_new(dev->ctx);
	if (!req)
		return bm_err(dev->ctx, -ENOMEM, "%s: out of memory", dev->name);
	req->cmd_cb = cb;
	req->priv = priv;
	req->finish = finish;
	req->out = out;
	c = bm_cmd_new(req, dev, BM_OP_CDB);
	if (!c || !(c->dbuf = calloc(1, alloc))) {
		if (c)
			bm_cmd_finish(c, -ENOMEM, "%s: out of memory", dev->name);
		else
			bm_req_fail_early(req, -ENOMEM, "%s: out of memory", dev->name);
	} else {
		bm_cdb_prin(c, sa, alloc);
		c->dlen = alloc;
		c->dir = 1;
		bm_dev_enqueue(dev, c);
		bm_dev_dispatch(dev);
	}
	bm_req_submit_done(req);
	return 0;
}

int blkmap_pr_read_keys_async(struct blkmap_dev *dev, struct blkmap_pr_keys *out, blkmap_cmd_cb cb,
			      void *private_data)
{
	return prin_async(dev, 0, out, keys_finish, cb, private_data);
}

int blkmap_pr_read_reservation_async(struct blkmap_dev *dev, struct blkmap_pr_reservation *out,
				     blkmap_cmd_cb cb, void *private_data)
{
	return prin_async(dev, 1, out, resv_finish, cb, private_data);
}

int blkmap_pr_report_caps_async(struct blkmap_dev *dev, struct blkmap_pr_caps *out, blkmap_cmd_cb cb,
				void *private_data)
{
	return prin_async(dev, 2, out, caps_finish, cb, private_data);
}

int blkmap_pr_report_caps(struct blkmap_dev *dev, struct blkmap_pr_caps *out)
{
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync call from inside a completion callback", dev->name);
	rc = blkmap_pr_report_caps_async(dev, out, sync_cmd_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

int blkmap_pr_read_keys(struct blkmap_dev *dev, struct blkmap_pr_keys *out)
{
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync call from inside a completion callback", dev->name);
	rc = blkmap_pr_read_keys_async(dev, out, sync_cmd_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

int blkmap_pr_read_reservation(struct blkmap_dev *dev, struct blkmap_pr_reservation *out)
{
	struct sync_wait w = { 0, 0 };
	int rc;

	if (!dev->ctx)
		return -ENODEV;
	if (dev->ctx->depth > 0)
		return bm_err(dev->ctx, -EDEADLK, "%s: sync call from inside a completion callback", dev->name);
	rc = blkmap_pr_read_reservation_async(dev, out, sync_cmd_cb, &w);
	return rc < 0 ? rc : sync_finish(dev->ctx, &w);
}

int blkmap_pr_register(struct blkmap_dev *dev, uint64_t old_key, uint64_t new_key, int ignore_existing)
{
	struct blkmap_pr_out a = { .action = ignore_existing ? BLKMAP_PR_REGISTER_AND_IGNORE : BLKMAP_PR_REGISTER,
				   .key = ignore_existing ? 0 : old_key,
				   .sa_key = new_key };
	return blkmap_pr_out(dev, &a);
}

int blkmap_pr_reserve(struct blkmap_dev *dev, uint64_t key, enum blkmap_pr_type type)
{
	struct blkmap_pr_out a = { .action = BLKMAP_PR_RESERVE, .key = key, .type = type };
	return blkmap_pr_out(dev, &a);
}

int blkmap_pr_release(struct blkmap_dev *dev, uint64_t key, enum blkmap_pr_type type)
{
	struct blkmap_pr_out a = { .action = BLKMAP_PR_RELEASE, .key = key, .type = type };
	return blkmap_pr_out(dev, &a);
}

int blkmap_pr_preempt(struct blkmap_dev *dev, uint64_t key, uint64_t victim_key, enum blkmap_pr_type type,
		      int abort)
{
	struct blkmap_pr_out a = { .action = abort ? BLKMAP_PR_PREEMPT_AND_ABORT : BLKMAP_PR_PREEMPT,
				   .key = key,
				   .sa_key = victim_key,
				   .type = type };
	return blkmap_pr_out(dev, &a);
}

int blkmap_pr_clear(struct blkmap_dev *dev, uint64_t key)
{
	struct blkmap_pr_out a = { .action = BLKMAP_PR_CLEAR, .key = key };
	return blkmap_pr_out(dev, &a);
}

int blkmap_designator_str(const struct blkmap_designator *d, char *buf, size_t len)
{
	const char *t;
	int o;

	switch (d->type) {
	case BLKMAP_DESIG_T10:
		t = "t10";
		break;
	case BLKMAP_DESIG_EUI64:
		t = "eui64";
		break;
	case BLKMAP_DESIG_NAA:
		t = "naa";
		break;
	case BLKMAP_DESIG_NAME:
		t = "name";
		break;
	case BLKMAP_DESIG_VENDOR:
		t = "vendor";
		break;
	default:
		t = "type?";
	}
	o = snprintf(buf, len, "%s:", t);
	if (d->code_set == BLKMAP_CODE_ASCII || d->code_set == BLKMAP_CODE_UTF8) {
		unsigned n = d->len;
		while (n > 0 && d->bytes[n - 1] == 0)
			n--; /* the NUL padding some targets add (tgt's T10 id) */
		for (unsigned i = 0; i < n; i++) {
			char c = (char)d->bytes[i];
			if (c < 0x20 || c > 0x7e)
				c = '?';
			o += snprintf(buf + ((size_t)o < len ? (size_t)o : len), (size_t)o < len ? len - (size_t)o : 0,
				      "%c", c);
		}
	} else {
		for (unsigned i = 0; i < d->len; i++)
			o += snprintf(buf + ((size_t)o < len ? (size_t)o : len), (size_t)o < len ? len - (size_t)o : 0,
				      "%02x", d->bytes[i]);
	}
	return o;
}
