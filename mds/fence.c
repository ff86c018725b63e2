/* SCSI fencing (RFC 8154 §2.4) with persistent reservations on the pool's LUNs. Fencing becomes
 * active when the first client asks for a SCSI device address (as Linux's nfsd does), or at start
 * when the LUNs still carry our reservation: the MDS registers its key on every LUN, removes every
 * other key (clients of an earlier run: their keys came from client IDs that no longer exist) and
 * holds an EXCLUSIVE ACCESS - REGISTRANTS ONLY reservation, so only registered initiators reach the
 * LUNs at all. Until then block-volume clients, which have no key to register, use the LUNs freely.
 * Each client registers its own key (given in GETDEVICEINFO); fencing a client is PREEMPT AND ABORT
 * of that key on every LUN, and counts as done only once READ KEYS shows it gone everywhere. */
#include "mds/layout_int.h"

#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EA_RO BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY
/* "PNFS" and 32 zero bits: client keys are client IDs, whose low 32 bits are never zero. */
#define MDS_PR_KEY MDS_POOL_PR_KEY

struct mds_fence {
	struct mds_server *srv;
	uint32_t nluns;
	uint64_t key;
	int active;               /* the reservation is held on every LUN */
};

uint64_t mds_fence_mds_key(void)
{
	return MDS_PR_KEY;
}

uint64_t mds_fence_client_key(clientid4 clientid)
{
	return (uint64_t)clientid;
}

static int has_key(const struct blkmap_pr_keys *k, uint64_t key)
{
	for (unsigned i = 0; i < k->nkeys; i++)
		if (k->keys[i] == key)
			return 1;
	return 0;
}

static int lun_setup(struct mds_server *srv, uint32_t i, struct blkmap_dev *dev, char *err, size_t errlen)
{
	char url[MDS_POOL_URL_MAX];
	struct blkmap_pr_keys keys;
	struct blkmap_pr_reservation r;
	unsigned removed = 0;
	int rc;

	mds_pool_url_display(mds_pool_lun_url(srv->pool, i), url, sizeof(url));
	rc = blkmap_pr_register(dev, 0, MDS_PR_KEY, 1);
	if (rc == -EOPNOTSUPP) {
		snprintf(err, errlen, "LUN %u (%s) cannot do SCSI persistent reservations", i, url);
		return rc;
	}
	if (rc)
		goto fail;
	/* Keys of clients of an earlier run: fence them before anything is handed out. */
	for (int round = 0; round < 64; round++) {
		int foreign = 0;
		rc = blkmap_pr_read_keys(dev, &keys);
		if (rc)
			goto fail;
		for (unsigned k = 0; k < keys.nkeys; k++) {
			if (keys.keys[k] == MDS_PR_KEY)
				continue;
			foreign = 1;
			rc = blkmap_pr_preempt(dev, MDS_PR_KEY, keys.keys[k], EA_RO, 1);
			if (rc && rc != -EBADE)
				goto fail;
			removed++;
		}
		if (!foreign)
			break;
	}
	rc = blkmap_pr_read_reservation(dev, &r);
	if (rc)
		goto fail;
	if (!r.reserved)
		rc = blkmap_pr_reserve(dev, MDS_PR_KEY, EA_RO);
	else if (r.key != MDS_PR_KEY || r.type != EA_RO)
		rc = blkmap_pr_preempt(dev, MDS_PR_KEY, r.key, EA_RO, 0);
	if (rc)
		goto fail;
	rc = blkmap_pr_read_reservation(dev, &r);
	if (rc)
		goto fail;
	if (!r.reserved || r.key != MDS_PR_KEY || r.type != EA_RO) {
		snprintf(err, errlen, "LUN %u (%s): the reservation is not ours after taking it (key %016llx type %d)",
			 i, url, (unsigned long long)r.key, (int)r.type);
		return -EIO;
	}
	if (removed)
		LOG_INFO("pool %s: LUN %u: removed %u registration(s) left by clients of an earlier run", srv->cfg.pool,
			 i, removed);
	return 0;
fail:
	snprintf(err, errlen, "LUN %u (%s): persistent reservation: %s", i, url, blkmap_errstr(srv->bctx));
	return rc;
}

int mds_fence_setup(struct mds_server *srv, struct mds_fence **out, char *err, size_t errlen)
{
	struct mds_fence *fc;
	uint32_t n = mds_pool_nluns(srv->pool);
	int ours = 0;

	*out = NULL;
	for (uint32_t i = 0; i < n; i++) {
		struct blkmap_dev *dev = mds_pool_lun_dev(srv->pool, i);
		struct blkmap_pr_reservation r;
		char url[MDS_POOL_URL_MAX];
		mds_pool_url_display(mds_pool_lun_url(srv->pool, i), url, sizeof(url));
		if (!dev || blkmap_dev_kind(dev) != BLKMAP_DEV_ISCSI) {
			snprintf(err, errlen, "LUN %u (%s) is not an iSCSI LUN: no SCSI persistent reservations", i, url);
			return -EOPNOTSUPP;
		}
		if (blkmap_pr_read_reservation(dev, &r) != 0) {
			snprintf(err, errlen, "LUN %u (%s) cannot do SCSI persistent reservations: %s", i, url,
				 blkmap_errstr(srv->bctx));
			return -EOPNOTSUPP;
		}
		ours |= r.reserved && r.key == MDS_PR_KEY;
	}
	fc = calloc(1, sizeof(*fc));
	if (!fc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fc->srv = srv;
	fc->nluns = n;
	fc->key = MDS_PR_KEY;
	*out = fc;
	if (ours) {
		/* An earlier run fenced with these LUNs: keep them fenced, and fence its clients. */
		int rc = mds_fence_activate(srv, fc, err, errlen);
		if (rc) {
			mds_fence_free(fc);
			*out = NULL;
			return rc;
		}
	}
	return 0;
}

int mds_fence_active(const struct mds_fence *fc)
{
	return fc && fc->active;
}

int mds_fence_activate(struct mds_server *srv, struct mds_fence *fc, char *err, size_t errlen)
{
	int rc;

	if (fc->active)
		return 0;
	for (uint32_t i = 0; i < fc->nluns; i++) {
		rc = lun_setup(srv, i, mds_pool_lun_dev(srv->pool, i), err, errlen);
		if (rc)
			return rc;
	}
	fc->active = 1;
	LOG_INFO("pool %s: SCSI fencing on: key %016llx registered and EXCLUSIVE ACCESS - REGISTRANTS ONLY held on "
		 "%u LUN(s)", srv->cfg.pool, (unsigned long long)MDS_PR_KEY, fc->nluns);
	return 0;
}

void mds_fence_release(struct mds_server *srv)
{
	for (uint32_t i = 0; i < mds_pool_nluns(srv->pool); i++) {
		struct blkmap_dev *dev = mds_pool_lun_dev(srv->pool, i);
		struct blkmap_pr_reservation r;
		if (!dev || blkmap_dev_kind(dev) != BLKMAP_DEV_ISCSI || blkmap_pr_read_reservation(dev, &r) != 0 ||
		    !r.reserved || r.key != MDS_PR_KEY)
			continue;
		if (blkmap_pr_clear(dev, MDS_PR_KEY) == 0)
			LOG_WARN("pool %s: LUN %u: SCSI layouts are off: our reservation and every registration "
				 "on it are cleared (fenced clients of an earlier run can write again)",
				 srv->cfg.pool, i);
		else
			LOG_ERROR("pool %s: LUN %u: cannot clear our reservation: %s", srv->cfg.pool, i,
				  blkmap_errstr(srv->bctx));
	}
}

void mds_fence_free(struct mds_fence *fc)
{
	free(fc);
}

/* ---- APTPL: what stock Linux clients send --------------------------------------------------- */

enum mds_aptpl mds_fence_probe_aptpl(struct mds_server *srv, uint32_t i, char *why, size_t whylen)
{
	struct blkmap_dev *dev = mds_pool_lun_dev(srv->pool, i);
	struct blkmap_pr_out a = { .action = BLKMAP_PR_REGISTER_AND_IGNORE, .sa_key = MDS_PR_KEY, .aptpl = 1 };
	struct blkmap_pr_caps caps;
	char url[MDS_POOL_URL_MAX];
	int rc;

	why[0] = 0;
	if (!dev || blkmap_dev_kind(dev) != BLKMAP_DEV_ISCSI)
		return MDS_APTPL_UNPROBED;
	mds_pool_url_display(mds_pool_lun_url(srv->pool, i), url, sizeof(url));
	/* APTPL already active (some registrant asked for it): that is the answer, and it stays so */
	if (blkmap_pr_report_caps(dev, &caps) == 0 && caps.ptpl_a)
		return MDS_APTPL_ACCEPTED;
	rc = blkmap_pr_out(dev, &a);
	if (rc == -EINVAL) {
		/* the target's answer, without the LUN and the command the caller names anyway */
		const char *e = blkmap_errstr(srv->bctx), *cc = strstr(e, "CHECK CONDITION");
		snprintf(why, whylen, "%s", cc ? cc : e);
		return MDS_APTPL_REFUSED;
	}
	if (rc) {
		snprintf(why, whylen, "%s", blkmap_errstr(srv->bctx));
		return MDS_APTPL_UNKNOWN;
	}
	/* back as it was: our key, our reservation, APTPL off */
	a.aptpl = 0;
	rc = blkmap_pr_out(dev, &a);
	if (rc)
		LOG_WARN("pool %s: LUN %u (%s): APTPL stays active after probing it: %s", srv->cfg.pool, i, url,
			 blkmap_errstr(srv->bctx));
	return MDS_APTPL_ACCEPTED;
}

/* ---- fencing one key, asynchronously ------------------------------------------------------- */

struct fence_op;

struct fence_lun {
	struct fence_op *op;
	uint32_t i;
	int phase;                 /* 0 reading keys, 1 preempting, 2 verifying */
	int seen;                  /* the key was listed */
	struct blkmap_pr_keys keys;
	struct blkmap_pr_out args;
};

struct fence_op {
	struct mds_server *srv;
	uint64_t victim;
	unsigned remaining;
	int status;
	mds_fence_done_fn *done;
	void *arg;
	struct fence_lun lun[];
};

static void lun_step(struct blkmap_ctx *ctx, int status, void *priv);

static void lun_finish(struct fence_lun *l, int status)
{
	struct fence_op *op = l->op;

	if (status && !op->status) {
		char url[MDS_POOL_URL_MAX];
		mds_pool_url_display(mds_pool_lun_url(op->srv->pool, l->i), url, sizeof(url));
		LOG_ERROR("fencing key %016llx on LUN %u (%s): %s", (unsigned long long)op->victim, l->i, url,
			  status == -EEXIST ? "the key is still registered after PREEMPT AND ABORT"
					    : blkmap_errstr(op->srv->bctx));
		op->status = status;
	}
	if (--op->remaining == 0) {
		op->done(op->srv, op->status, op->arg);
		free(op);
	}
}

static void lun_step(struct blkmap_ctx *ctx, int status, void *priv)
{
	struct fence_lun *l = priv;
	struct mds_server *srv = l->op->srv;
	struct blkmap_dev *dev = mds_pool_lun_dev(srv->pool, l->i);
	int rc;
	(void)ctx;

	switch (l->phase) {
	case 0: /* READ KEYS done */
		if (status) {
			lun_finish(l, status);
			return;
		}
		l->seen = has_key(&l->keys, l->op->victim);
		/* Not listed, and the list was complete: nothing to do on this LUN. */
		if (!l->seen && l->keys.total <= l->keys.nkeys) {
			lun_finish(l, 0);
			return;
		}
		l->phase = 1;
		memset(&l->args, 0, sizeof(l->args));
		l->args.action = BLKMAP_PR_PREEMPT_AND_ABORT;
		l->args.key = MDS_PR_KEY;
		l->args.sa_key = l->op->victim;
		l->args.type = EA_RO;
		rc = blkmap_pr_out_async(dev, &l->args, lun_step, l);
		break;
	case 1: /* PREEMPT AND ABORT done */
		if (status == -EBADE && !l->seen) {
			/* A key beyond what READ KEYS returned, and not registered after all. */
			lun_finish(l, 0);
			return;
		}
		if (status) {
			lun_finish(l, status);
			return;
		}
		l->phase = 2;
		rc = blkmap_pr_read_keys_async(dev, &l->keys, lun_step, l);
		break;
	default: /* verified */
		if (!status && has_key(&l->keys, l->op->victim))
			status = -EEXIST;
		lun_finish(l, status);
		return;
	}
	if (rc)
		lun_finish(l, rc);
}

int mds_fence_key(struct mds_server *srv, struct mds_fence *fc, uint64_t key, mds_fence_done_fn *done, void *arg)
{
	struct fence_op *op;
	uint32_t n;

	if (!fc)
		return -EOPNOTSUPP;
	if (!fc->active) {
		/* No reservation was ever taken, so no client learnt a key from us: nothing to cut. */
		done(srv, 0, arg);
		return 0;
	}
	n = fc->nluns;
	op = calloc(1, sizeof(*op) + n * sizeof(op->lun[0]));
	if (!op)
		return -ENOMEM;
	op->srv = srv;
	op->victim = key;
	op->done = done;
	op->arg = arg;
	/* One extra count so that completions during submission cannot finish the op early. */
	op->remaining = n + 1;
	for (uint32_t i = 0; i < n; i++) {
		struct fence_lun *l = &op->lun[i];
		int rc;
		l->op = op;
		l->i = i;
		rc = blkmap_pr_read_keys_async(mds_pool_lun_dev(srv->pool, i), &l->keys, lun_step, l);
		if (rc)
			lun_finish(l, rc);
	}
	LOG_INFO("fencing key %016llx: PREEMPT AND ABORT on %u LUN(s)", (unsigned long long)key, n);
	if (--op->remaining == 0) {
		op->done(srv, op->status, op->arg);
		free(op);
	}
	return 0;
}
