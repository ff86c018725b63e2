/* pnfs-extents' map: extents in file order, checked and mapped through the volume to pieces on LUNs,
 * and the figures over them. Sources (the store, a layout) only append extents and name LUNs; every
 * rule about what a sane map is lives here, so a hostile layout and a corrupt store meet the same
 * checks. */
#include "tools/extents.h"

#include "blkmap/blkmap.h"
#include "proto/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

const char *tool_ext_state_name(int state)
{
	static const char *const names[] = {
		[TOOL_EXT_READ_WRITE] = "READ_WRITE", [TOOL_EXT_READ] = "READ", [TOOL_EXT_INVALID] = "INVALID",
		[TOOL_EXT_NONE] = "NONE",
	};

	return (unsigned)state < sizeof(names) / sizeof(names[0]) && names[state] ? names[state] : "?";
}

const char *tool_verdict_name(enum tool_verdict v)
{
	static const char *const names[] = {
		[TOOL_VERIFY_NONE] = "not-verified", [TOOL_VERIFY_OK] = "ok", [TOOL_VERIFY_ZEROS] = "zeros",
		[TOOL_VERIFY_MISMATCH] = "MISMATCH", [TOOL_VERIFY_ERROR] = "ERROR",
	};

	return (unsigned)v < sizeof(names) / sizeof(names[0]) && names[v] ? names[v] : "?";
}

void tool_map_init(struct tool_map *m)
{
	memset(m, 0, sizeof(*m));
}

void tool_map_free(struct tool_map *m)
{
	for (uint32_t i = 0; i < m->nluns; i++)
		blkmap_dev_close(m->luns[i].dev);
	free(m->luns);
	free(m->ext);
	free(m->pieces);
	if (m->vol_owned)
		blkmap_vol_free(m->vol);
	tool_map_init(m);
}

void tool_map_set_range(struct tool_map *m, uint64_t off, uint64_t len, uint64_t end_of_file,
			uint32_t block_bytes)
{
	uint64_t end = len == TOOL_TO_END || off + len < off ? end_of_file : off + len;

	off -= off % block_bytes;
	if (end % block_bytes)
		end += block_bytes - end % block_bytes;
	if (end < off)
		end = off;
	m->range_off = off;
	m->range_len = end - off;
}

int tool_map_add(struct tool_map *m, uint64_t file_off, uint64_t len, uint64_t vol_off, int state)
{
	struct tool_extent *e;

	if (proto_grow(&m->ext, m->n, &m->cap, sizeof(*m->ext), 64))
		return -ENOMEM;
	e = &m->ext[m->n++];
	memset(e, 0, sizeof(*e));
	e->file_off = file_off;
	e->len = len;
	e->vol_off = vol_off;
	e->state = state;
	return 0;
}

int tool_map_set_volume(struct tool_map *m, struct blkmap_vol *vol, int owned)
{
	unsigned count = blkmap_vol_count(vol), nleaves = 0;
	uint32_t top;
	char h[32], u[32];

	if (count == 0)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++)
		nleaves += blkmap_vol_is_leaf(vol, i) ? 1 : 0;
	m->luns = calloc(nleaves ? nleaves : 1, sizeof(*m->luns));
	if (!m->luns)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct tool_lun *l;
		if (!blkmap_vol_is_leaf(vol, i))
			continue;
		l = &m->luns[m->nluns++];
		l->leaf = i;
		l->block_bytes = 512;
		snprintf(l->name, sizeof(l->name), "leaf %u", i);
	}
	m->vol = vol;
	m->vol_owned = owned;
	top = count - 1;
	proto_fmt_bytes(blkmap_vol_size_bytes(vol, top), PROTO_FMT_TENTHS, h, sizeof(h));
	switch (blkmap_vol_type(vol, top)) {
	case BLKMAP_VOL_STRIPE:
		proto_fmt_bytes(blkmap_vol_stripe_unit(vol, top), PROTO_FMT_TENTHS, u, sizeof(u));
		snprintf(m->vol_desc, sizeof(m->vol_desc), "stripe of %u LUN%s, unit %s, %s", m->nluns,
			 m->nluns == 1 ? "" : "s", u, h);
		break;
	case BLKMAP_VOL_CONCAT:
		snprintf(m->vol_desc, sizeof(m->vol_desc), "concat of %u LUN%s, %s", m->nluns,
			 m->nluns == 1 ? "" : "s", h);
		break;
	default:
		snprintf(m->vol_desc, sizeof(m->vol_desc), "%s over %u LUN%s, %s",
			 blkmap_vol_type_name(blkmap_vol_type(vol, top)), m->nluns, m->nluns == 1 ? "" : "s", h);
		break;
	}
	return 0;
}

int tool_map_lun_of_leaf(const struct tool_map *m, uint32_t leaf)
{
	for (uint32_t i = 0; i < m->nluns; i++)
		if (m->luns[i].leaf == leaf)
			return (int)i;
	return -1;
}

void tool_map_name_lun(struct tool_map *m, uint32_t i, const char *name, uint32_t block_bytes,
		       struct blkmap_dev *dev)
{
	struct tool_lun *l;

	if (i >= m->nluns)
		return;
	l = &m->luns[i];
	if (name)
		snprintf(l->name, sizeof(l->name), "%s", name);
	if (block_bytes) {
		l->block_bytes = block_bytes;
		l->block_known = 1;
	}
	if (dev) {
		blkmap_dev_close(l->dev);
		l->dev = blkmap_dev_ref(dev);
	}
}

static int add_piece(struct tool_map *m, const struct tool_piece *p)
{
	if (proto_grow(&m->pieces, m->npieces, &m->pcap, sizeof(*m->pieces), 64))
		return -ENOMEM;
	m->pieces[m->npieces++] = *p;
	return 0;
}

int tool_map_resolve(struct tool_map *m, char *err, size_t errlen)
{
	uint64_t vol_bytes = m->vol ? blkmap_vol_size_bytes(m->vol, blkmap_vol_count(m->vol) - 1) : 0;
	int rc;

	m->npieces = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct tool_extent *e = &m->ext[i];
		struct blkmap_run *runs = NULL;
		size_t nruns = 0;

		e->piece0 = m->npieces;
		e->npieces = 0;
		if (e->len == 0)
			return proto_errf(err, errlen, -EINVAL, "extent %zu (file %" PRIu64 "): zero length", i,
					 e->file_off);
		if (e->state < TOOL_EXT_READ_WRITE || e->state > TOOL_EXT_NONE)
			return proto_errf(err, errlen, -EINVAL,
					 "extent %zu (file %" PRIu64 "+%" PRIu64 "): unknown state %d", i,
					 e->file_off, e->len, e->state);
		if (e->file_off + e->len < e->file_off)
			return proto_errf(err, errlen, -ERANGE,
					 "extent %zu (file %" PRIu64 "+%" PRIu64 "): runs past 2^64", i,
					 e->file_off, e->len);
		if (i && e->file_off < m->ext[i - 1].file_off + m->ext[i - 1].len)
			return proto_errf(err, errlen, -EINVAL,
					 "extent %zu (file %" PRIu64 "+%" PRIu64 ") overlaps or precedes extent %zu "
					 "(file %" PRIu64 "+%" PRIu64 ")",
					 i, e->file_off, e->len, i - 1, m->ext[i - 1].file_off, m->ext[i - 1].len);
		if (e->state == TOOL_EXT_NONE)
			continue;
		if (!m->vol)
			return proto_errf(err, errlen, -EINVAL,
					 "extent %zu (file %" PRIu64 "+%" PRIu64 "): no volume to map it into", i,
					 e->file_off, e->len);
		if (e->vol_off + e->len < e->vol_off || e->vol_off + e->len > vol_bytes)
			return proto_errf(err, errlen, -ERANGE,
					 "extent %zu (file %" PRIu64 "+%" PRIu64 "): volume range %" PRIu64 "+%" PRIu64
					 " lies past the end of the volume (%" PRIu64 " bytes)",
					 i, e->file_off, e->len, e->vol_off, e->len, vol_bytes);
		rc = blkmap_vol_map(m->vol, e->vol_off, e->len, &runs, &nruns);
		if (rc)
			return proto_errf(err, errlen, rc,
					 "extent %zu (file %" PRIu64 "+%" PRIu64 "): cannot map volume range %" PRIu64
					 "+%" PRIu64 ": %s",
					 i, e->file_off, e->len, e->vol_off, e->len, blkmap_vol_errstr(m->vol));
		for (size_t k = 0; k < nruns; k++) {
			int lun = tool_map_lun_of_leaf(m, runs[k].leaf);
			struct tool_piece p = {
				.ext = (uint32_t)i,
				.lun = lun < 0 ? 0 : (uint32_t)lun,
				.file_off = e->file_off + (runs[k].vol_offset_bytes - e->vol_off),
				.len = runs[k].length_bytes,
				.vol_off = runs[k].vol_offset_bytes,
				.lun_off = runs[k].leaf_offset_bytes,
			};
			if (lun < 0) {
				free(runs);
				return proto_errf(err, errlen, -EINVAL, "extent %zu: volume leaf %u is not a LUN", i,
						 runs[k].leaf);
			}
			rc = add_piece(m, &p);
			if (rc) {
				free(runs);
				return proto_errf(err, errlen, rc, "out of memory");
			}
			e->npieces++;
		}
		free(runs);
	}
	return 0;
}

void tool_map_stats(const struct tool_map *m, struct tool_stats *st, struct tool_lun_stats *ls)
{
	uint64_t vmin = UINT64_MAX, vmax = 0;
	const struct tool_extent *prev = NULL;
	/* last[l]: 1 + the last extent counted on LUN l, so each extent counts once per LUN. */
	size_t *last = ls && m->nluns ? calloc(m->nluns, sizeof(*last)) : NULL;

	memset(st, 0, sizeof(*st));
	if (ls)
		memset(ls, 0, m->nluns * sizeof(*ls));
	for (size_t i = 0; i < m->n; i++) {
		const struct tool_extent *e = &m->ext[i];
		st->extents++;
		if (e->state >= 0 && e->state <= 3)
			st->by_state[e->state] += e->len;
		if (e->state == TOOL_EXT_NONE) {
			st->holes++;
			st->hole_bytes += e->len;
			continue;
		}
		st->data_extents++;
		st->data_bytes += e->len;
		if (e->len > st->largest)
			st->largest = e->len;
		if (!st->smallest || e->len < st->smallest)
			st->smallest = e->len;
		if (e->vol_off < vmin)
			vmin = e->vol_off;
		if (e->vol_off + e->len > vmax)
			vmax = e->vol_off + e->len;
		if (prev) {
			st->joins++;
			if (prev->vol_off + prev->len == e->vol_off)
				st->contiguous_joins++;
		}
		prev = e;
		for (size_t k = 0; k < e->npieces; k++) {
			const struct tool_piece *p = &m->pieces[e->piece0 + k];
			st->pieces++;
			if (ls && p->lun < m->nluns) {
				struct tool_lun_stats *l = &ls[p->lun];
				uint32_t bs = m->luns[p->lun].block_bytes;
				uint64_t lba0 = p->lun_off / bs, lba1 = (p->lun_off + p->len - 1) / bs;
				if (!last || last[p->lun] != i + 1)
					l->extents++;
				if (last)
					last[p->lun] = i + 1;
				if (!l->pieces || lba0 < l->lba_min)
					l->lba_min = lba0;
				if (!l->pieces || lba1 > l->lba_max)
					l->lba_max = lba1;
				l->pieces++;
				l->bytes += p->len;
			}
		}
	}
	if (st->data_extents) {
		st->mean = (double)st->data_bytes / (double)st->data_extents;
		st->extents_per_mib = (double)st->data_extents / ((double)st->data_bytes / MIB);
		st->vol_span = vmax - vmin;
	}
	st->contiguity = st->joins ? (double)st->contiguous_joins / (double)st->joins : 1.0;
	free(last);
}
