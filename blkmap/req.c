/* Requests and commands: what a caller submits (one volume or device I/O, one SCSI command) and the
 * device commands it becomes. A request completes, and its callback runs, once every command has
 * finished; the first failure is what the callback reports, with the device and LBA named. */
#include "blkmap/internal.h"

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bm_req *bm_req_new(struct blkmap_ctx *ctx)
{
	struct bm_req *req = calloc(1, sizeof(*req));
	if (!req)
		return NULL;
	req->ctx = ctx;
	req->submitting = 1;
	req->res.leaf = -1;
	ctx->outstanding++;
	return req;
}

struct bm_cmd *bm_cmd_new(struct bm_req *req, struct blkmap_dev *dev, enum bm_op op)
{
	struct bm_cmd *cmd = calloc(1, sizeof(*cmd));
	if (!cmd)
		return NULL;
	cmd->req = req;
	cmd->dev = dev;
	cmd->op = op;
	cmd->leaf = -1;
	cmd->complete = bm_req_cmd_done;
	if (req) {
		req->pending++;
		req->res.commands++;
	}
	return cmd;
}

void bm_cmd_free(struct bm_cmd *cmd)
{
	if (!cmd)
		return;
	free(cmd->iov);
	free(cmd->dbuf);
	free(cmd);
}

int bm_cmd_add_iov(struct bm_cmd *cmd, void *base, size_t len)
{
	if (len == 0)
		return 0;
	/* extend the previous element when the memory is contiguous */
	if (cmd->niov > 0 && (char *)cmd->iov[cmd->niov - 1].iov_base + cmd->iov[cmd->niov - 1].iov_len ==
				     (char *)base) {
		cmd->iov[cmd->niov - 1].iov_len += len;
		cmd->bytes += len;
		return 0;
	}
	if (cmd->niov == cmd->iov_cap) {
		int cap = cmd->iov_cap ? cmd->iov_cap * 2 : 4;
		struct scsi_iovec *n = realloc(cmd->iov, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		cmd->iov = n;
		cmd->iov_cap = cap;
	}
	cmd->iov[cmd->niov].iov_base = base;
	cmd->iov[cmd->niov].iov_len = len;
	cmd->niov++;
	cmd->bytes += len;
	return 0;
}

int bm_cmd_add_range(struct bm_cmd *cmd, const struct iovec *iov, int niov, uint64_t off, uint64_t len)
{
	int i = 0;

	/* find the element holding off */
	while (i < niov && off >= iov[i].iov_len) {
		off -= iov[i].iov_len;
		i++;
	}
	while (len > 0) {
		uint64_t take;
		int rc;
		if (i >= niov)
			return -EINVAL;
		take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		rc = bm_cmd_add_iov(cmd, (char *)iov[i].iov_base + off, (size_t)take);
		if (rc < 0)
			return rc;
		len -= take;
		off = 0;
		i++;
	}
	return 0;
}

static void req_complete(struct bm_req *req)
{
	struct blkmap_ctx *ctx = req->ctx;

	if (req->status < 0) {
		req->res.dev_name = req->dev_name;
		req->res.message = req->msg;
		bm_err(ctx, req->status, "%s", req->msg);
	} else {
		req->res.dev_name = NULL;
		req->res.message = NULL;
		req->res.leaf = -1;
	}
	ctx->outstanding--;
	ctx->depth++;
	if (req->io_cb)
		req->io_cb(ctx, req->status, &req->res, req->priv);
	else if (req->cmd_cb)
		req->cmd_cb(ctx, req->status, req->priv);
	ctx->depth--;
	free(req->iov);
	free(req);
	bm_timer_update(ctx);
}

void bm_req_submit_done(struct bm_req *req)
{
	req->submitting = 0;
	if (req->pending == 0)
		req_complete(req);
	else
		bm_timer_update(req->ctx);
}

static void req_note_failure(struct bm_req *req, int status, const char *dev_name, int leaf, uint64_t lba,
			     uint32_t blocks, const char *msg)
{
	req->res.failed++;
	if (req->status < 0)
		return;
	req->status = status;
	req->res.leaf = leaf;
	req->res.lba = lba;
	req->res.blocks = blocks;
	snprintf(req->dev_name, sizeof(req->dev_name), "%s", dev_name ? dev_name : "");
	snprintf(req->msg, sizeof(req->msg), "%s", msg);
}

void bm_req_fail_early(struct bm_req *req, int status, const char *fmt, ...)
{
	char msg[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	req_note_failure(req, status, NULL, -1, 0, 0, msg);
}

/* The default completion of a command that belongs to a request. */
void bm_req_cmd_done(struct bm_cmd *cmd)
{
	struct bm_req *req = cmd->req;

	if (cmd->status == 0 && req->finish) {
		int rc = req->finish(req, cmd);
		if (rc < 0) {
			cmd->status = rc;
			if (!cmd->msg[0])
				snprintf(cmd->msg, sizeof(cmd->msg), "%s: malformed %s response",
					 cmd->dev->name, bm_op_name(cmd));
		}
	}
	if (cmd->status < 0)
		req_note_failure(req, cmd->status, cmd->dev->name, cmd->leaf, cmd->lba, cmd->nblocks, cmd->msg);
	bm_cmd_free(cmd);
	req->pending--;
	if (req->pending == 0 && !req->submitting)
		req_complete(req);
}
