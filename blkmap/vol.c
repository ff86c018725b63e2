/* The volume array of RFC 5663 (simple, slice, concat, stripe; later entries refer to earlier ones,
 * the last is the top) plus RFC 8154's SCSI base volume, its validation, sizes, and leaf bindings.
 * Sizes are computed bottom-up once every leaf below has one; a stripe is as large as its equal
 * members rounded down to whole stripe units, times their count (device-mapper's rule). */
#include "blkmap/vol_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bm_vol_err(struct blkmap_vol *vol, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(vol->err, sizeof(vol->err), fmt, ap);
	va_end(ap);
	return rc;
}

const char *blkmap_vol_type_name(enum blkmap_vol_type t)
{
	static const char *const names[] = {
		[BLKMAP_VOL_SIMPLE] = "simple", [BLKMAP_VOL_SLICE] = "slice", [BLKMAP_VOL_CONCAT] = "concat",
		[BLKMAP_VOL_STRIPE] = "stripe", [BLKMAP_VOL_SCSI] = "scsi",
	};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "?";
}

int blkmap_vol_create(struct blkmap_vol **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

/* A leaf's device with the volume's identity regions on it removed, released. */
static void leaf_release(struct blkmap_vol *vol, struct bm_volent *e)
{
	if (!e->dev)
		return;
	blkmap_dev_unexpect(e->dev, vol);
	blkmap_dev_close(e->dev);
	e->dev = NULL;
}

static void ent_clear(struct blkmap_vol *vol, struct bm_volent *e)
{
	for (unsigned i = 0; i < e->nsig; i++)
		free(e->sigbytes[i]);
	free(e->sig);
	free(e->sigbytes);
	free(e->members);
	free(e->starts);
	leaf_release(vol, e);
}

void blkmap_vol_free(struct blkmap_vol *vol)
{
	if (!vol)
		return;
	for (unsigned i = 0; i < vol->n; i++)
		ent_clear(vol, &vol->v[i]);
	free(vol->v);
	free(vol);
}

const char *blkmap_vol_errstr(const struct blkmap_vol *vol)
{
	if (!vol)
		return "no volume array (out of memory)";
	return vol->err;
}

static struct bm_volent *append(struct blkmap_vol *vol, enum blkmap_vol_type t)
{
	struct bm_volent *e;

	if (vol->n >= BLKMAP_MAX_VOLUMES) {
		bm_vol_err(vol, -E2BIG, "volume array: more than %u entries", BLKMAP_MAX_VOLUMES);
		return NULL;
	}
	if (vol->n == vol->cap) {
		unsigned cap = vol->cap ? vol->cap * 2 : 8;
		struct bm_volent *n = realloc(vol->v, cap * sizeof(*n));
		if (!n) {
			bm_vol_err(vol, -ENOMEM, "volume array: out of memory");
			return NULL;
		}
		vol->v = n;
		vol->cap = cap;
	}
	e = &vol->v[vol->n];
	memset(e, 0, sizeof(*e));
	e->type = t;
	vol->validated = 0;
	return e;
}

static int added(struct blkmap_vol *vol, uint32_t *index)
{
	if (index)
		*index = vol->n;
	vol->n++;
	return 0;
}

int blkmap_vol_add_simple(struct blkmap_vol *vol, const struct blkmap_sig_comp *comps, unsigned ncomps,
			  uint32_t *index)
{
	struct bm_volent *e;
	unsigned idx = vol->n;

	if (ncomps == 0)
		return bm_vol_err(vol, -EINVAL, "volume %u (simple): a signature needs at least one component", idx);
	if (ncomps > BLKMAP_MAX_SIG_COMP)
		return bm_vol_err(vol, -E2BIG, "volume %u (simple): %u signature components, at most %u", idx, ncomps,
				  BLKMAP_MAX_SIG_COMP);
	for (unsigned i = 0; i < ncomps; i++) {
		if (comps[i].len == 0 || !comps[i].bytes)
			return bm_vol_err(vol, -EINVAL, "volume %u (simple): signature component %u is empty", idx, i);
		if (comps[i].len > BLKMAP_MAX_SIG_BYTES)
			return bm_vol_err(vol, -E2BIG, "volume %u (simple): signature component %u has %u bytes, at most %u",
					  idx, i, comps[i].len, BLKMAP_MAX_SIG_BYTES);
		if (comps[i].offset_bytes < 0 && (uint64_t)(-(comps[i].offset_bytes + 1)) + 1 < comps[i].len)
			return bm_vol_err(vol, -EINVAL,
					  "volume %u (simple): signature component %u at %" PRId64
					  " from the end runs past the end (%u bytes)",
					  idx, i, comps[i].offset_bytes, comps[i].len);
		if (comps[i].offset_bytes >= 0 && (uint64_t)comps[i].offset_bytes > UINT64_MAX - comps[i].len)
			return bm_vol_err(vol, -EINVAL, "volume %u (simple): signature component %u offset overflows", idx, i);
	}
	e = append(vol, BLKMAP_VOL_SIMPLE);
	if (!e)
		return -ENOMEM;
	e->sig = calloc(ncomps, sizeof(*e->sig));
	e->sigbytes = calloc(ncomps, sizeof(*e->sigbytes));
	if (!e->sig || !e->sigbytes)
		goto nomem;
	for (unsigned i = 0; i < ncomps; i++) {
		e->sigbytes[i] = malloc(comps[i].len);
		if (!e->sigbytes[i])
			goto nomem;
		memcpy(e->sigbytes[i], comps[i].bytes, comps[i].len);
		e->sig[i] = comps[i];
		e->sig[i].bytes = e->sigbytes[i];
		e->nsig = i + 1;
	}
	return added(vol, index);
nomem:
	ent_clear(vol, e);
	return bm_vol_err(vol, -ENOMEM, "volume %u (simple): out of memory", idx);
}

int blkmap_vol_add_scsi(struct blkmap_vol *vol, enum blkmap_desig_type type, enum blkmap_code_set code_set,
			const uint8_t *designator, size_t len, uint64_t pr_key, uint32_t *index)
{
	struct bm_volent *e;
	unsigned idx = vol->n;

	if (type != BLKMAP_DESIG_T10 && type != BLKMAP_DESIG_EUI64 && type != BLKMAP_DESIG_NAA &&
	    type != BLKMAP_DESIG_NAME && type != BLKMAP_DESIG_VENDOR)
		return bm_vol_err(vol, -EINVAL, "volume %u (scsi): designator type %d is not one RFC 8154 names", idx,
				  (int)type);
	if (code_set < BLKMAP_CODE_BINARY || code_set > BLKMAP_CODE_UTF8)
		return bm_vol_err(vol, -EINVAL, "volume %u (scsi): code set %d is not binary, ascii or utf8", idx,
				  (int)code_set);
	if (len == 0 || !designator)
		return bm_vol_err(vol, -EINVAL, "volume %u (scsi): empty designator", idx);
	if (len > BLKMAP_MAX_DESIG_BYTES)
		return bm_vol_err(vol, -E2BIG, "volume %u (scsi): designator of %zu bytes, at most %u", idx, len,
				  BLKMAP_MAX_DESIG_BYTES);
	e = append(vol, BLKMAP_VOL_SCSI);
	if (!e)
		return -ENOMEM;
	e->desig.type = (uint8_t)type;
	e->desig.code_set = (uint8_t)code_set;
	e->desig.len = (uint8_t)len;
	memcpy(e->desig.bytes, designator, len);
	e->pr_key = pr_key;
	return added(vol, index);
}

static int check_member(struct blkmap_vol *vol, const char *what, uint32_t m)
{
	if (m >= vol->n)
		return bm_vol_err(vol, -EINVAL, "volume %u (%s): member %u does not refer to an earlier entry", vol->n,
				  what, m);
	return 0;
}

int blkmap_vol_add_slice(struct blkmap_vol *vol, uint64_t start_bytes, uint64_t length_bytes, uint32_t member,
			 uint32_t *index)
{
	struct bm_volent *e;
	int rc = check_member(vol, "slice", member);

	if (rc < 0)
		return rc;
	if (length_bytes == 0)
		return bm_vol_err(vol, -EINVAL, "volume %u (slice): zero length", vol->n);
	if (start_bytes > UINT64_MAX - length_bytes)
		return bm_vol_err(vol, -EINVAL, "volume %u (slice): start + length overflows", vol->n);
	e = append(vol, BLKMAP_VOL_SLICE);
	if (!e)
		return -ENOMEM;
	e->start = start_bytes;
	e->length = length_bytes;
	e->members = malloc(sizeof(uint32_t));
	if (!e->members)
		return bm_vol_err(vol, -ENOMEM, "volume %u (slice): out of memory", vol->n);
	e->members[0] = member;
	e->nmembers = 1;
	return added(vol, index);
}

static int add_multi(struct blkmap_vol *vol, enum blkmap_vol_type t, uint64_t unit, const uint32_t *members,
		     unsigned n, uint32_t *index)
{
	const char *what = blkmap_vol_type_name(t);
	struct bm_volent *e;

	if (n == 0)
		return bm_vol_err(vol, -EINVAL, "volume %u (%s): no members", vol->n, what);
	if (n > BLKMAP_MAX_MEMBERS)
		return bm_vol_err(vol, -E2BIG, "volume %u (%s): %u members, at most %u", vol->n, what, n,
				  BLKMAP_MAX_MEMBERS);
	for (unsigned i = 0; i < n; i++) {
		int rc = check_member(vol, what, members[i]);
		if (rc < 0)
			return rc;
	}
	e = append(vol, t);
	if (!e)
		return -ENOMEM;
	e->members = malloc(n * sizeof(uint32_t));
	if (!e->members)
		return bm_vol_err(vol, -ENOMEM, "volume %u (%s): out of memory", vol->n, what);
	memcpy(e->members, members, n * sizeof(uint32_t));
	e->nmembers = n;
	e->unit = unit;
	return added(vol, index);
}

int blkmap_vol_add_concat(struct blkmap_vol *vol, const uint32_t *members, unsigned nmembers, uint32_t *index)
{
	return add_multi(vol, BLKMAP_VOL_CONCAT, 0, members, nmembers, index);
}

int blkmap_vol_add_stripe(struct blkmap_vol *vol, uint64_t unit_bytes, const uint32_t *members, unsigned nmembers,
			  uint32_t *index)
{
	if (unit_bytes < BLKMAP_MIN_STRIPE_UNIT || (unit_bytes & (unit_bytes - 1)))
		return bm_vol_err(vol, -EINVAL,
				  "volume %u (stripe): stripe unit %" PRIu64 " is not a power of two of at least %u bytes",
				  vol->n, unit_bytes, BLKMAP_MIN_STRIPE_UNIT);
	return add_multi(vol, BLKMAP_VOL_STRIPE, unit_bytes, members, nmembers, index);
}

/* ---- validation and sizes --------------------------------------------------------------------- */

/* Compute sizes bottom-up (indices only point backwards, so array order is bottom-up). Sets
 * e->size (0 = unknown) and the concat prefix sums. Returns 0 or -EINVAL for size violations. */
int bm_vol_sizes(struct blkmap_vol *vol)
{
	for (unsigned i = 0; i < vol->n; i++) {
		struct bm_volent *e = &vol->v[i];
		e->size = 0;
		switch (e->type) {
		case BLKMAP_VOL_SIMPLE:
		case BLKMAP_VOL_SCSI:
			e->size = e->leaf_size;
			break;
		case BLKMAP_VOL_SLICE: {
			uint64_t ms = vol->v[e->members[0]].size;
			if (ms && e->start + e->length > ms)
				return bm_vol_err(vol, -EINVAL,
						  "volume %u (slice): %" PRIu64 "+%" PRIu64
						  " lies outside volume %u (%" PRIu64 " bytes)",
						  i, e->start, e->length, e->members[0], ms);
			e->size = e->length;
			break;
		}
		case BLKMAP_VOL_CONCAT: {
			uint64_t sum = 0;
			int known = 1;
			if (!e->starts) {
				e->starts = calloc(e->nmembers + 1, sizeof(uint64_t));
				if (!e->starts)
					return bm_vol_err(vol, -ENOMEM, "volume %u (concat): out of memory", i);
			}
			for (unsigned k = 0; k < e->nmembers; k++) {
				uint64_t ms = vol->v[e->members[k]].size;
				e->starts[k] = sum;
				if (!ms)
					known = 0;
				if (sum > UINT64_MAX - ms)
					return bm_vol_err(vol, -EINVAL, "volume %u (concat): size overflows", i);
				sum += ms;
			}
			e->starts[e->nmembers] = sum;
			e->size = known ? sum : 0;
			break;
		}
		case BLKMAP_VOL_STRIPE: {
			uint64_t ms = vol->v[e->members[0]].size;
			int known = 1;
			for (unsigned k = 0; k < e->nmembers; k++) {
				uint64_t s = vol->v[e->members[k]].size;
				if (!s) {
					known = 0;
					continue;
				}
				if (ms && s != ms)
					return bm_vol_err(vol, -EINVAL,
							  "volume %u (stripe): members differ in size (volume %u: %" PRIu64
							  " bytes, volume %u: %" PRIu64 " bytes)",
							  i, e->members[0], ms, e->members[k], s);
			}
			if (known) {
				uint64_t per = ms - ms % e->unit;
				if (per == 0)
					return bm_vol_err(vol, -EINVAL,
							  "volume %u (stripe): members (%" PRIu64
							  " bytes) are smaller than one stripe unit (%" PRIu64 ")",
							  i, ms, e->unit);
				if (per > UINT64_MAX / e->nmembers)
					return bm_vol_err(vol, -EINVAL, "volume %u (stripe): size overflows", i);
				e->size = per * e->nmembers;
			}
			break;
		}
		}
	}
	return 0;
}

int blkmap_vol_validate(struct blkmap_vol *vol)
{
	unsigned *uses = NULL, *depth = NULL;
	int rc = 0;

	vol->validated = 0;
	if (vol->n == 0)
		return bm_vol_err(vol, -EINVAL, "volume array is empty");
	uses = calloc(vol->n, sizeof(*uses));
	depth = calloc(vol->n, sizeof(*depth));
	if (!uses || !depth) {
		rc = bm_vol_err(vol, -ENOMEM, "volume array: out of memory");
		goto out;
	}
	for (unsigned i = 0; i < vol->n; i++) {
		struct bm_volent *e = &vol->v[i];
		int leaf = e->type == BLKMAP_VOL_SIMPLE || e->type == BLKMAP_VOL_SCSI;
		if (leaf)
			continue;
		if (e->type == BLKMAP_VOL_SLICE && (e->start % BM_SECTOR_BYTES || e->length % BM_SECTOR_BYTES)) {
			rc = bm_vol_err(vol, -EINVAL,
					"volume %u (slice): start %" PRIu64 " and length %" PRIu64
					" must be multiples of 512 bytes",
					i, e->start, e->length);
			goto out;
		}
		if (e->type == BLKMAP_VOL_STRIPE && (e->unit < BLKMAP_MIN_STRIPE_UNIT || (e->unit & (e->unit - 1)))) {
			rc = bm_vol_err(vol, -EINVAL, "volume %u (stripe): stripe unit %" PRIu64 " is not a power of two of at least %u",
					i, e->unit, BLKMAP_MIN_STRIPE_UNIT);
			goto out;
		}
		for (unsigned k = 0; k < e->nmembers; k++) {
			uint32_t m = e->members[k];
			if (m >= i) {
				rc = bm_vol_err(vol, -EINVAL, "volume %u (%s): member %u is not an earlier entry", i,
						blkmap_vol_type_name(e->type), m);
				goto out;
			}
			if (++uses[m] > 1) {
				rc = bm_vol_err(vol, -EINVAL, "volume %u is used more than once (again by volume %u)", m, i);
				goto out;
			}
		}
	}
	for (unsigned i = 0; i + 1 < vol->n; i++) {
		if (uses[i] == 0) {
			rc = bm_vol_err(vol, -EINVAL, "volume %u (%s) is not part of the top volume %u", i,
					blkmap_vol_type_name(vol->v[i].type), vol->n - 1);
			goto out;
		}
	}
	/* depth from the top down: members are earlier, so walk from the end */
	depth[vol->n - 1] = 1;
	for (unsigned i = vol->n; i-- > 0;) {
		struct bm_volent *e = &vol->v[i];
		if (depth[i] > BLKMAP_MAX_DEPTH) {
			rc = bm_vol_err(vol, -EINVAL, "volume %u is %u levels below the top, at most %u", i, depth[i],
					BLKMAP_MAX_DEPTH);
			goto out;
		}
		if (e->type == BLKMAP_VOL_SIMPLE || e->type == BLKMAP_VOL_SCSI)
			continue;
		for (unsigned k = 0; k < e->nmembers; k++)
			depth[e->members[k]] = depth[i] + 1;
	}
	rc = bm_vol_sizes(vol);
	if (rc == 0)
		vol->validated = 1;
out:
	free(uses);
	free(depth);
	return rc;
}

/* ---- inspection ------------------------------------------------------------------------------- */

static const struct bm_volent *ent(const struct blkmap_vol *vol, uint32_t index)
{
	return index < vol->n ? &vol->v[index] : NULL;
}

unsigned blkmap_vol_count(const struct blkmap_vol *vol)
{
	return vol->n;
}

enum blkmap_vol_type blkmap_vol_type(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e ? e->type : (enum blkmap_vol_type)-1;
}

int blkmap_vol_is_leaf(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && (e->type == BLKMAP_VOL_SIMPLE || e->type == BLKMAP_VOL_SCSI);
}

uint64_t blkmap_vol_size_bytes(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e ? e->size : 0;
}

unsigned blkmap_vol_nmembers(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && !blkmap_vol_is_leaf(vol, index) ? e->nmembers : 0;
}

uint32_t blkmap_vol_member(const struct blkmap_vol *vol, uint32_t index, unsigned k)
{
	const struct bm_volent *e = ent(vol, index);
	return e && !blkmap_vol_is_leaf(vol, index) && k < e->nmembers ? e->members[k] : UINT32_MAX;
}

uint64_t blkmap_vol_slice_start(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_SLICE ? e->start : 0;
}

uint64_t blkmap_vol_slice_length(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_SLICE ? e->length : 0;
}

uint64_t blkmap_vol_stripe_unit(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_STRIPE ? e->unit : 0;
}

unsigned blkmap_vol_nsig(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_SIMPLE ? e->nsig : 0;
}

const struct blkmap_sig_comp *blkmap_vol_sig(const struct blkmap_vol *vol, uint32_t index, unsigned k)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_SIMPLE && k < e->nsig ? &e->sig[k] : NULL;
}

const struct blkmap_designator *blkmap_vol_designator(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_SCSI ? &e->desig : NULL;
}

uint64_t blkmap_vol_pr_key(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && e->type == BLKMAP_VOL_SCSI ? e->pr_key : 0;
}

/* ---- leaves ------------------------------------------------------------------------------------ */

int blkmap_vol_bind(struct blkmap_vol *vol, uint32_t index, struct blkmap_dev *dev)
{
	struct bm_volent *e;

	if (!blkmap_vol_is_leaf(vol, index))
		return bm_vol_err(vol, -EINVAL, "volume %u is not a leaf (simple or scsi)", index);
	e = &vol->v[index];
	if (dev)
		blkmap_dev_ref(dev);
	leaf_release(vol, e);
	e->dev = dev;
	/* a simple volume's LUN is the one holding its signature: after a reconnect too */
	for (unsigned k = 0; dev && e->type == BLKMAP_VOL_SIMPLE && k < e->nsig; k++)
		(void)blkmap_dev_expect(dev, vol, "signature", e->sig[k].offset_bytes, e->sig[k].bytes, e->sig[k].len,
					NULL, NULL);
	e->leaf_size = dev ? blkmap_dev_size_bytes(dev) : 0;
	vol->validated = 0;
	return 0;
}

int blkmap_vol_set_leaf_size(struct blkmap_vol *vol, uint32_t index, uint64_t size_bytes)
{
	if (!blkmap_vol_is_leaf(vol, index))
		return bm_vol_err(vol, -EINVAL, "volume %u is not a leaf (simple or scsi)", index);
	vol->v[index].leaf_size = size_bytes;
	vol->validated = 0;
	return 0;
}

struct blkmap_dev *blkmap_vol_leaf_dev(const struct blkmap_vol *vol, uint32_t index)
{
	const struct bm_volent *e = ent(vol, index);
	return e && blkmap_vol_is_leaf(vol, index) ? e->dev : NULL;
}
