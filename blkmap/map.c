/* Mapping a range of the top volume to runs on leaves, walking the tree: a slice shifts, a concat
 * picks members by their prefix sums, a stripe sends stripe unit k to member k mod N at row k / N
 * (RFC 5663's formula, which is also device-mapper's striped target). The property test proves this
 * equals an interpreter of the compiled dm table. */
#include "blkmap/vol_int.h"

#include "proto/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct runbuf {
	struct blkmap_run *r;
	size_t n, cap;
};

static int emit(struct runbuf *b, uint32_t leaf, uint64_t loff, uint64_t len, uint64_t voff)
{
	if (b->n > 0) {
		struct blkmap_run *p = &b->r[b->n - 1];
		if (p->leaf == leaf && p->leaf_offset_bytes + p->length_bytes == loff &&
		    p->vol_offset_bytes + p->length_bytes == voff) {
			p->length_bytes += len;
			return 0;
		}
	}
	if (proto_grow(&b->r, b->n, &b->cap, sizeof(*b->r), 16))
		return -ENOMEM;
	b->r[b->n++] = (struct blkmap_run){ leaf, loff, len, voff };
	return 0;
}

/* largest k with starts[k] <= off, for k < n */
static unsigned concat_find(const uint64_t *starts, unsigned n, uint64_t off)
{
	unsigned lo = 0, hi = n;
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;
		if (starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int map_node(const struct blkmap_vol *vol, uint32_t idx, uint64_t off, uint64_t len, uint64_t voff,
		    struct runbuf *b)
{
	const struct bm_volent *e = &vol->v[idx];
	int rc;

	switch (e->type) {
	case BLKMAP_VOL_SIMPLE:
	case BLKMAP_VOL_SCSI:
		return emit(b, idx, off, len, voff);
	case BLKMAP_VOL_SLICE:
		return map_node(vol, e->members[0], e->start + off, len, voff, b);
	case BLKMAP_VOL_CONCAT: {
		unsigned k = concat_find(e->starts, e->nmembers, off);
		while (len > 0) {
			uint64_t in = off - e->starts[k];
			uint64_t avail = e->starts[k + 1] - off;
			uint64_t take = len < avail ? len : avail;
			if (take > 0) {
				rc = map_node(vol, e->members[k], in, take, voff, b);
				if (rc < 0)
					return rc;
			}
			off += take;
			voff += take;
			len -= take;
			k++;
		}
		return 0;
	}
	case BLKMAP_VOL_STRIPE:
		while (len > 0) {
			uint64_t unit_no = off / e->unit;
			uint64_t within = off % e->unit;
			unsigned m = (unsigned)(unit_no % e->nmembers);
			uint64_t row = unit_no / e->nmembers;
			uint64_t take = e->unit - within;
			if (take > len)
				take = len;
			rc = map_node(vol, e->members[m], row * e->unit + within, take, voff, b);
			if (rc < 0)
				return rc;
			off += take;
			voff += take;
			len -= take;
		}
		return 0;
	}
	return -EINVAL;
}

int bm_vol_ready(struct blkmap_vol *vol)
{
	return vol->validated ? 0 : blkmap_vol_validate(vol);
}

int blkmap_vol_map(struct blkmap_vol *vol, uint64_t off, uint64_t len, struct blkmap_run **runs, size_t *nruns)
{
	struct runbuf b = { 0 };
	uint32_t top;
	int rc;

	*runs = NULL;
	*nruns = 0;
	rc = bm_vol_ready(vol);
	if (rc < 0)
		return rc;
	top = vol->n - 1;
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		if ((e->type == BLKMAP_VOL_SIMPLE || e->type == BLKMAP_VOL_SCSI) && !e->size)
			return bm_vol_err(vol, -ENODEV, "volume %u (%s) has no size: not resolved to a device", i,
					  blkmap_vol_type_name(e->type));
	}
	if (off > vol->v[top].size || len > vol->v[top].size - off)
		return bm_vol_err(vol, -ERANGE, "range %" PRIu64 "+%" PRIu64 " is outside the volume (%" PRIu64 " bytes)",
				  off, len, vol->v[top].size);
	if (len == 0) {
		*runs = malloc(sizeof(**runs));
		return *runs ? 0 : -ENOMEM;
	}
	rc = map_node(vol, top, off, len, off, &b);
	if (rc < 0) {
		free(b.r);
		return bm_vol_err(vol, rc, "volume map: out of memory");
	}
	*runs = b.r;
	*nruns = b.n;
	return 0;
}
