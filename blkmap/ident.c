/* A LUN's identity across reconnects: what an iSCSI device must still be after a fresh login (its
 * logical-unit designators, block size and capacity as opened, and the identity regions callers and
 * volume bindings add), the comparisons that say in words what differs, and the out-of-service state
 * a device is in while it is some other LUN. The check's commands run in iscsi.c, between the login
 * and the first queued command; nothing is read through a session before it passes. */
#include "blkmap/internal.h"
#include "proto/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- designators ------------------------------------------------------------------------------ */

int blkmap_designator_equal(const struct blkmap_designator *a, const struct blkmap_designator *b)
{
	return a->type == b->type && a->code_set == b->code_set && a->association == b->association &&
	       a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* udev's scsi_id order: the kinds below, and NAA split by its type (the high nibble of byte 0). */
static int desig_rank(const struct blkmap_designator *d)
{
	unsigned naa = d->len ? d->bytes[0] >> 4 : 0;

	switch (d->type) {
	case BLKMAP_DESIG_NAA:
		if (d->code_set != BLKMAP_CODE_BINARY)
			return 3;
		return naa == 6 ? 0 : naa == 5 ? 1 : 2;
	case BLKMAP_DESIG_EUI64:
		return 4;
	case BLKMAP_DESIG_T10:
		return 5;
	case BLKMAP_DESIG_NAME:
		return 6;
	case BLKMAP_DESIG_VENDOR:
		return 7;
	}
	return -1;
}

const struct blkmap_designator *blkmap_inquiry_preferred(const struct blkmap_inquiry *inq)
{
	const struct blkmap_designator *best = NULL;
	int best_rank = 0;

	for (unsigned i = 0; i < inq->ndesig && i < BLKMAP_MAX_DESIGNATORS; i++) {
		const struct blkmap_designator *d = &inq->desig[i];
		int r = desig_rank(d);
		if (d->association != 0 || d->len == 0 || r < 0)
			continue;
		if (!best || r < best_rank) {
			best = d;
			best_rank = r;
		}
	}
	return best;
}

/* Whether the designator seen at open is among the logical-unit ones now. */
static int desig_present(const struct blkmap_designator *was, const struct blkmap_inquiry *now)
{
	for (unsigned k = 0; k < now->ndesig && k < BLKMAP_MAX_DESIGNATORS; k++)
		if (blkmap_designator_equal(was, &now->desig[k]))
			return 1;
	return 0;
}

int bm_ident_check_desig(const struct blkmap_dev *dev, const struct blkmap_inquiry *now, char *why, size_t len)
{
	const struct blkmap_designator *gone = blkmap_inquiry_preferred(&dev->inq), *pref;
	char a[2 * BLKMAP_MAX_DESIG_BYTES + 16], b[2 * BLKMAP_MAX_DESIG_BYTES + 16];

	/* the preferred one is named first: the one a host knows the LUN by */
	if (gone && desig_present(gone, now))
		gone = NULL;
	for (unsigned i = 0; !gone && i < dev->inq.ndesig && i < BLKMAP_MAX_DESIGNATORS; i++)
		if (dev->inq.desig[i].association == 0 && !desig_present(&dev->inq.desig[i], now))
			gone = &dev->inq.desig[i];
	if (!gone)
		return 0;
	blkmap_designator_str(gone, a, sizeof(a));
	pref = blkmap_inquiry_preferred(now);
	if (pref)
		blkmap_designator_str(pref, b, sizeof(b));
	snprintf(why, len, "designator %s is gone (the LUN now has %s)", a, pref ? b : "no designator");
	return -BLKMAP_EWRONGLUN;
}

int bm_ident_check_capacity(const struct blkmap_dev *dev, uint64_t bytes, uint32_t block_bytes, char *why,
			    size_t len)
{
	if (block_bytes != dev->block_bytes) {
		snprintf(why, len, "its block size is %u bytes, it was %u", block_bytes, dev->block_bytes);
		return -BLKMAP_EWRONGLUN;
	}
	if (bytes < dev->size_bytes) {
		snprintf(why, len, "it has %" PRIu64 " bytes, it had %" PRIu64 " (it shrank)", bytes, dev->size_bytes);
		return -BLKMAP_EWRONGLUN;
	}
	if (bytes > dev->size_bytes)
		LOG_INFO("%s: the LUN grew from %" PRIu64 " to %" PRIu64 " bytes; the first %" PRIu64 " are used as before",
			 dev->name, dev->size_bytes, bytes, dev->size_bytes);
	return 0;
}

/* ---- regions ---------------------------------------------------------------------------------- */

static uint64_t region_offset(const struct blkmap_dev *dev, const struct bm_ident_region *r)
{
	return r->off_bytes < 0 ? dev->size_bytes - (uint64_t)(-r->off_bytes) : (uint64_t)r->off_bytes;
}

void bm_ident_region_blocks(const struct blkmap_dev *dev, unsigned i, uint64_t *lba, uint32_t *blocks)
{
	const struct bm_ident_region *r = &dev->regions[i];
	uint64_t off = region_offset(dev, r), skip = off % dev->block_bytes;

	*lba = off / dev->block_bytes;
	*blocks = (uint32_t)((skip + r->len + dev->block_bytes - 1) / dev->block_bytes);
}

int bm_ident_check_region(const struct blkmap_dev *dev, unsigned i, const uint8_t *data, uint32_t got, char *why,
			  size_t len)
{
	const struct bm_ident_region *r = &dev->regions[i];
	uint64_t skip = region_offset(dev, r) % dev->block_bytes;
	const uint8_t *now = data + skip;
	int zeros = 1, o;
	uint32_t first = 0;

	if (got < skip + r->len) {
		snprintf(why, len, "%s at byte %" PRId64 ": only %u bytes read", r->what, r->off_bytes, got);
		return -BLKMAP_EWRONGLUN;
	}
	if (memcmp(now, r->bytes, r->len) == 0)
		return 0;
	while (first < r->len && now[first] == r->bytes[first])
		first++;
	for (uint32_t k = 0; k < r->len && zeros; k++)
		zeros = now[k] == 0;
	o = snprintf(why, len, "%s at byte %" PRId64 ": ", r->what, r->off_bytes);
	if (o < 0 || (size_t)o >= len)
		return -BLKMAP_EWRONGLUN;
	why[o] = '\0';
	if (r->explain)
		r->explain(now, r->len, why + o, len - (size_t)o, r->priv);
	if (!why[o]) {
		if (zeros)
			snprintf(why + o, len - (size_t)o, "all %u bytes are zero now", r->len);
		else
			snprintf(why + o, len - (size_t)o, "differs from byte %u of %u on", first, r->len);
	}
	return -BLKMAP_EWRONGLUN;
}

int blkmap_dev_expect(struct blkmap_dev *dev, const void *owner, const char *what, int64_t off_bytes, const void *bytes,
		      size_t len, blkmap_ident_explain explain, void *priv)
{
	struct bm_ident_region *regs, *r;
	uint64_t off;

	if (!dev->ctx)
		return -ENODEV;
	if (len == 0 || len > BLKMAP_MAX_SIG_BYTES)
		return bm_err(dev->ctx, -EINVAL, "%s: an identity region of %zu bytes (1 to %u)", dev->name, len,
			      BLKMAP_MAX_SIG_BYTES);
	if (off_bytes < 0 && (uint64_t)(-off_bytes) > dev->size_bytes)
		return bm_err(dev->ctx, -EINVAL, "%s: identity region at byte %" PRId64 " is before the start", dev->name,
			      off_bytes);
	off = off_bytes < 0 ? dev->size_bytes - (uint64_t)(-off_bytes) : (uint64_t)off_bytes;
	if (dev->size_bytes && (off > dev->size_bytes || len > dev->size_bytes - off))
		return bm_err(dev->ctx, -EINVAL, "%s: identity region %" PRIu64 "+%zu is past the end (%" PRIu64 " bytes)",
			      dev->name, off, len, dev->size_bytes);
	regs = realloc(dev->regions, (dev->nregions + 1) * sizeof(*regs));
	if (!regs)
		return bm_err(dev->ctx, -ENOMEM, "%s: out of memory", dev->name);
	dev->regions = regs;
	r = &regs[dev->nregions];
	memset(r, 0, sizeof(*r));
	r->bytes = malloc(len);
	if (!r->bytes)
		return bm_err(dev->ctx, -ENOMEM, "%s: out of memory", dev->name);
	memcpy(r->bytes, bytes, len);
	r->owner = owner;
	snprintf(r->what, sizeof(r->what), "%s", what ? what : "identity region");
	r->off_bytes = off_bytes;
	r->len = (uint32_t)len;
	r->explain = explain;
	r->priv = priv;
	dev->nregions++;
	return 0;
}

void blkmap_dev_unexpect(struct blkmap_dev *dev, const void *owner)
{
	unsigned k = 0;

	for (unsigned i = 0; i < dev->nregions; i++) {
		if (dev->regions[i].owner == owner) {
			free(dev->regions[i].bytes);
			continue;
		}
		dev->regions[k++] = dev->regions[i];
	}
	dev->nregions = k;
}

/* ---- the state -------------------------------------------------------------------------------- */

void bm_ident_keeper_update(struct blkmap_dev *dev)
{
	int k = dev->ctx && dev->kind == BLKMAP_DEV_ISCSI && dev->state == BM_DOWN && (dev->keep_session || dev->wrong);

	if (k == dev->keeper)
		return;
	dev->keeper = k;
	if (k)
		dev->ctx->keepers++;
	else
		dev->ctx->keepers--;
}

void bm_ident_wrong(struct blkmap_dev *dev, const char *why)
{
	dev->ident_checks++;
	dev->ident_failures++;
	if (!dev->wrong || strcmp(dev->wrong_why, why) != 0)
		LOG_ERROR("%s: the LUN came back different after a reconnect: %s; out of service until it is the LUN it "
			  "was (checked at every login, every %d s)",
			  dev->name, why, BM_IDENT_RETRY_MS / 1000);
	dev->wrong = 1;
	snprintf(dev->wrong_why, sizeof(dev->wrong_why), "%s", why);
	bm_ident_keeper_update(dev);
}

void bm_ident_passed(struct blkmap_dev *dev)
{
	dev->ident_checks++;
	dev->unchecked = 0;
	if (!dev->wrong)
		return;
	LOG_WARN("%s: the LUN is the one it was again (designators, capacity and %u identity region(s) match): back in "
		 "service",
		 dev->name, dev->nregions);
	dev->wrong = 0;
	dev->wrong_why[0] = '\0';
	bm_ident_keeper_update(dev);
}

void bm_ident_free(struct blkmap_dev *dev)
{
	dev->keep_session = 0;
	dev->wrong = 0;
	bm_ident_keeper_update(dev);
	for (unsigned i = 0; i < dev->nregions; i++)
		free(dev->regions[i].bytes);
	free(dev->regions);
	dev->regions = NULL;
	dev->nregions = 0;
}

void blkmap_dev_keep_session(struct blkmap_dev *dev, int on)
{
	if (!dev->ctx)
		return;
	dev->keep_session = on != 0;
	bm_ident_keeper_update(dev);
	bm_timer_update(dev->ctx);
}

int blkmap_dev_checked(const struct blkmap_dev *dev)
{
	return !dev->unchecked && !dev->wrong;
}

int blkmap_dev_identity(const struct blkmap_dev *dev, char *why, size_t whylen)
{
	if (!dev->wrong)
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s", dev->wrong_why);
	return -BLKMAP_EWRONGLUN;
}

unsigned blkmap_dev_identity_checks(const struct blkmap_dev *dev)
{
	return dev->ident_checks;
}

unsigned blkmap_dev_identity_failures(const struct blkmap_dev *dev)
{
	return dev->ident_failures;
}
