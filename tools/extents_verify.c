/* pnfs-extents --verify: every piece of every extent with data is read straight from its LUN and
 * compared with the same file bytes read through a reference path (the MDS's READ, or a local copy).
 * Extents that read as zeros (INVALID, NONE) are checked on the reference side only: their blocks
 * may hold anything, but the file must read as zeros there. Reads go in chunks of CHUNK_BYTES. */
#include "tools/extents.h"

#include "blkmap/blkmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (1u << 20)

struct vbuf {
	uint8_t *lun;   /* CHUNK_BYTES + two blocks of alignment slack */
	uint8_t *ref;
	size_t lun_cap;
};

/* Read [lun_off, lun_off + len) of dev into out, rounding out to the device's blocks. */
static int read_lun(struct blkmap_dev *dev, struct vbuf *b, uint64_t lun_off, size_t len,
		    const uint8_t **out, char *why, size_t whylen)
{
	uint32_t bs = blkmap_dev_block_bytes(dev);
	uint64_t a = lun_off - lun_off % bs, e = lun_off + len;
	uint64_t z = e % bs ? e + (bs - e % bs) : e;
	int rc;

	if (z - a > b->lun_cap) {
		void *p = realloc(b->lun, z - a);
		if (!p)
			return -ENOMEM;
		b->lun = p;
		b->lun_cap = z - a;
	}
	rc = blkmap_dev_pread(dev, b->lun, z - a, a);
	if (rc) {
		snprintf(why, whylen, "reading LUN %s at byte %" PRIu64 " (+%" PRIu64 "): %s",
			 blkmap_dev_name(dev), a, z - a, blkmap_errstr(blkmap_dev_ctx(dev)));
		return rc;
	}
	*out = b->lun + (lun_off - a);
	return 0;
}

struct diff {
	uint64_t count;
	uint64_t first;      /* file offset */
	int have_first;
	uint8_t lun_byte, ref_byte;
	uint32_t lun;
	uint64_t lun_off;    /* of the first difference */
	int ref_short;       /* the reference ended early, at ref_end */
	uint64_t ref_end;
};

static void note_diff(struct diff *d, uint64_t file_off, uint8_t lb, uint8_t rb, uint32_t lun,
		      uint64_t lun_off)
{
	if (!d->have_first) {
		d->have_first = 1;
		d->first = file_off;
		d->lun_byte = lb;
		d->ref_byte = rb;
		d->lun = lun;
		d->lun_off = lun_off;
	}
	d->count++;
}

/* One piece of a data extent: [from, to) of the file lies on it. Returns 0 or -errno (why set). */
static int verify_piece(struct tool_map *m, const struct tool_piece *p, uint64_t from, uint64_t to,
			tool_read_fn ref, void *arg, struct vbuf *b, struct diff *d, char *why,
			size_t whylen)
{
	const struct tool_lun *l = &m->luns[p->lun];

	if (!l->dev) {
		snprintf(why, whylen, "LUN %u (%s) is not open%s%s", p->lun, l->name, l->why[0] ? ": " : "",
			 l->why);
		return -ENODEV;
	}
	for (uint64_t off = from; off < to;) {
		size_t n = to - off > CHUNK_BYTES ? CHUNK_BYTES : (size_t)(to - off);
		uint64_t lun_off = p->lun_off + (off - p->file_off);
		const uint8_t *lb;
		long long got;
		int rc = read_lun(l->dev, b, lun_off, n, &lb, why, whylen);

		if (rc)
			return rc;
		got = ref(arg, off, b->ref, n, why, whylen);
		if (got < 0)
			return (int)got;
		for (size_t i = 0; i < n; i++) {
			if (i >= (size_t)got)
				note_diff(d, off + i, lb[i], 0, p->lun, lun_off + i);
			else if (lb[i] != b->ref[i])
				note_diff(d, off + i, lb[i], b->ref[i], p->lun, lun_off + i);
		}
		if ((size_t)got < n && !d->ref_short) {
			d->ref_short = 1;
			d->ref_end = off + (uint64_t)got;
		}
		off += n;
	}
	return 0;
}

static void verify_data_extent(struct tool_map *m, struct tool_extent *e, tool_read_fn ref, void *arg,
			       const char *against, struct vbuf *b)
{
	struct diff d = { 0 };

	for (size_t k = 0; k < e->npieces; k++) {
		const struct tool_piece *p = &m->pieces[e->piece0 + k];
		uint64_t to = p->file_off + p->len;
		int rc;

		if (to > m->size)
			to = m->size;
		if (p->file_off >= to)
			continue;
		rc = verify_piece(m, p, p->file_off, to, ref, arg, b, &d, e->why, sizeof(e->why));
		if (rc) {
			e->verdict = TOOL_VERIFY_ERROR;
			return;
		}
	}
	if (!d.count) {
		e->verdict = TOOL_VERIFY_OK;
		return;
	}
	e->verdict = TOOL_VERIFY_MISMATCH;
	e->bad_off = d.first;
	e->bad_bytes = d.count;
	{
		const struct tool_lun *l = &m->luns[d.lun];
		uint32_t bs = l->dev ? blkmap_dev_block_bytes(l->dev) : l->block_bytes;
		snprintf(e->why, sizeof(e->why),
			 "%" PRIu64 " byte%s differ%s, the first at file offset %" PRIu64 ": LUN %u LBA %" PRIu64
			 " byte %" PRIu64 " holds 0x%02x, %s has 0x%02x (%s)",
			 d.count, d.count == 1 ? "" : "s", d.count == 1 ? "s" : "", d.first, d.lun,
			 d.lun_off / bs, d.lun_off % bs, d.lun_byte, against, d.ref_byte, l->name);
		if (d.ref_short) {
			size_t used = strlen(e->why);
			snprintf(e->why + used, sizeof(e->why) - used, "; %s ends at file offset %" PRIu64,
				 against, d.ref_end);
		}
	}
}

/* INVALID and NONE read as zeros: the reference must say so. */
static void verify_zero_extent(struct tool_map *m, struct tool_extent *e, tool_read_fn ref, void *arg,
			       const char *against, struct vbuf *b)
{
	uint64_t to = e->file_off + e->len, count = 0, first = 0;

	if (to > m->size)
		to = m->size;
	for (uint64_t off = e->file_off; off < to;) {
		size_t n = to - off > CHUNK_BYTES ? CHUNK_BYTES : (size_t)(to - off);
		long long got = ref(arg, off, b->ref, n, e->why, sizeof(e->why));

		if (got < 0) {
			e->verdict = TOOL_VERIFY_ERROR;
			return;
		}
		for (long long i = 0; i < got; i++) {
			if (b->ref[i]) {
				if (!count)
					first = off + (uint64_t)i;
				count++;
			}
		}
		off += n;
	}
	if (!count) {
		e->verdict = TOOL_VERIFY_ZEROS;
		return;
	}
	e->verdict = TOOL_VERIFY_MISMATCH;
	e->bad_off = first;
	e->bad_bytes = count;
	snprintf(e->why, sizeof(e->why),
		 "the extent reads as zeros (%s), but %s has %" PRIu64 " non-zero byte%s, the first at file "
		 "offset %" PRIu64,
		 e->state == TOOL_EXT_NONE ? "a hole" : "allocated, never written", against, count,
		 count == 1 ? "" : "s", first);
}

int tool_map_verify(struct tool_map *m, tool_read_fn ref, void *arg, const char *against)
{
	struct vbuf b = { 0 };
	int bad = 0;

	b.ref = malloc(CHUNK_BYTES);
	b.lun_cap = CHUNK_BYTES + 2 * 65536;
	b.lun = malloc(b.lun_cap);
	if (!b.ref || !b.lun) {
		free(b.ref);
		free(b.lun);
		return -ENOMEM;
	}
	snprintf(m->verified_against, sizeof(m->verified_against), "%s", against);
	for (size_t i = 0; i < m->n; i++) {
		struct tool_extent *e = &m->ext[i];
		e->why[0] = '\0';
		e->bad_off = e->bad_bytes = 0;
		if (e->state == TOOL_EXT_READ_WRITE || e->state == TOOL_EXT_READ)
			verify_data_extent(m, e, ref, arg, against, &b);
		else
			verify_zero_extent(m, e, ref, arg, against, &b);
		bad += e->verdict == TOOL_VERIFY_MISMATCH || e->verdict == TOOL_VERIFY_ERROR;
	}
	m->verified = 1;
	free(b.ref);
	free(b.lun);
	return bad;
}
