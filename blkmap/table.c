/* Compiling a volume to device-mapper tables in dmsetup's text format. A range that maps to one
 * contiguous place becomes a `linear` line; a stripe's whole rows become one `striped` line (its
 * members must each be contiguous: a member that is not, e.g. a concat, is compiled to a device of
 * its own and stacked below), and partial rows at a range's edges become per-chunk linear lines, so
 * slices of stripes at any 512-byte offset are expressed exactly. */
#include "blkmap/vol_int.h"

#include "proto/util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tb {
	struct blkmap_vol *vol;
	const char *name;
	unsigned char *stacked; /* per entry: compiled as a device of its own */
	int self;               /* the entry being compiled as the root of its own device */
	struct proto_strbuf out; /* the device's table */
	/* pending linear line, merged with the next when contiguous */
	int have_lin;
	uint64_t lin_start, lin_len, lin_off;
	char lin_dev[600];
	int err;
	char errmsg[300];
};

static void tb_printf(struct tb *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(struct tb *t, const char *fmt, ...)
{
	va_list ap;

	if (t->err)
		return;
	va_start(ap, fmt);
	if (proto_strbuf_vprintf(&t->out, fmt, ap) < 0)
		t->err = -ENOMEM;
	va_end(ap);
}

static void flush_linear(struct tb *t)
{
	if (!t->have_lin)
		return;
	tb_printf(t, "%" PRIu64 " %" PRIu64 " linear %s %" PRIu64 "\n", t->lin_start, t->lin_len, t->lin_dev, t->lin_off);
	t->have_lin = 0;
}

static void leaf_token(struct tb *t, uint32_t idx, char *buf, size_t len)
{
	const struct bm_volent *e = &t->vol->v[idx];
	if (t->stacked[idx] && (int)idx != t->self && e->type != BLKMAP_VOL_SIMPLE && e->type != BLKMAP_VOL_SCSI)
		snprintf(buf, len, "/dev/mapper/%s-v%u", t->name, idx);
	else if (e->dev)
		snprintf(buf, len, "%s", blkmap_dev_name(e->dev));
	else
		snprintf(buf, len, "leaf%u", idx);
}

/* Whether entry idx is one contiguous range of one device (a leaf, a stacked device, or slices and
 * one-member concats/stripes of those); if so its device token and byte offset. */
static int linear_of(struct tb *t, uint32_t idx, char *tok, size_t toklen, uint64_t *base)
{
	const struct bm_volent *e = &t->vol->v[idx];

	if (e->type == BLKMAP_VOL_SIMPLE || e->type == BLKMAP_VOL_SCSI || (t->stacked[idx] && (int)idx != t->self)) {
		leaf_token(t, idx, tok, toklen);
		*base = 0;
		return 1;
	}
	switch (e->type) {
	case BLKMAP_VOL_SLICE:
		if (!linear_of(t, e->members[0], tok, toklen, base))
			return 0;
		*base += e->start;
		return 1;
	case BLKMAP_VOL_CONCAT:
	case BLKMAP_VOL_STRIPE:
		return e->nmembers == 1 && linear_of(t, e->members[0], tok, toklen, base);
	default:
		return 0;
	}
}

static void line_linear(struct tb *t, uint64_t vstart, uint64_t len, const char *tok, uint64_t off)
{
	uint64_t vs = vstart / BM_SECTOR_BYTES, ls = len / BM_SECTOR_BYTES, os = off / BM_SECTOR_BYTES;

	if (t->have_lin && !strcmp(t->lin_dev, tok) && t->lin_start + t->lin_len == vs && t->lin_off + t->lin_len == os) {
		t->lin_len += ls;
		return;
	}
	flush_linear(t);
	t->have_lin = 1;
	t->lin_start = vs;
	t->lin_len = ls;
	t->lin_off = os;
	snprintf(t->lin_dev, sizeof(t->lin_dev), "%s", tok);
}

static void emit(struct tb *t, uint32_t idx, uint64_t vstart, uint64_t off, uint64_t len);

static void emit_stripe(struct tb *t, const struct bm_volent *e, uint64_t vstart, uint64_t off, uint64_t len)
{
	uint64_t row = e->unit * e->nmembers;

	while (len > 0 && !t->err) {
		if (off % row == 0 && len >= row) {
			/* whole rows: one striped line */
			uint64_t nrows = len / row, r0 = off / row;
			flush_linear(t);
			tb_printf(t, "%" PRIu64 " %" PRIu64 " striped %u %" PRIu64, vstart / BM_SECTOR_BYTES,
				  nrows * row / BM_SECTOR_BYTES, e->nmembers, e->unit / BM_SECTOR_BYTES);
			for (unsigned k = 0; k < e->nmembers; k++) {
				char tok[600];
				uint64_t base = 0;
				linear_of(t, e->members[k], tok, sizeof(tok), &base);
				tb_printf(t, " %s %" PRIu64, tok, (base + r0 * e->unit) / BM_SECTOR_BYTES);
			}
			tb_printf(t, "\n");
			vstart += nrows * row;
			off += nrows * row;
			len -= nrows * row;
			continue;
		}
		{
			/* part of a row: chunk by chunk, each contiguous on one member */
			uint64_t unit_no = off / e->unit, within = off % e->unit;
			unsigned m = (unsigned)(unit_no % e->nmembers);
			uint64_t take = e->unit - within;
			if (take > len)
				take = len;
			emit(t, e->members[m], vstart, (unit_no / e->nmembers) * e->unit + within, take);
			vstart += take;
			off += take;
			len -= take;
		}
	}
}

static void emit(struct tb *t, uint32_t idx, uint64_t vstart, uint64_t off, uint64_t len)
{
	const struct bm_volent *e = &t->vol->v[idx];
	char tok[600];
	uint64_t base;

	if (t->err || len == 0)
		return;
	if (linear_of(t, idx, tok, sizeof(tok), &base)) {
		line_linear(t, vstart, len, tok, base + off);
		return;
	}
	switch (e->type) {
	case BLKMAP_VOL_SLICE:
		emit(t, e->members[0], vstart, e->start + off, len);
		return;
	case BLKMAP_VOL_CONCAT:
		for (unsigned k = 0; k < e->nmembers && len > 0; k++) {
			uint64_t s = e->starts[k], end = e->starts[k + 1];
			uint64_t take;
			if (off >= end)
				continue;
			take = end - off < len ? end - off : len;
			emit(t, e->members[k], vstart, off - s, take);
			vstart += take;
			off += take;
			len -= take;
		}
		return;
	case BLKMAP_VOL_STRIPE:
		emit_stripe(t, e, vstart, off, len);
		return;
	default:
		t->err = -EINVAL;
	}
}

/* Stripe members that are not contiguous get devices of their own. */
static void mark_stacked(struct tb *t)
{
	for (unsigned i = 0; i < t->vol->n; i++) {
		const struct bm_volent *e = &t->vol->v[i];
		char tok[600];
		uint64_t base;
		if (e->type != BLKMAP_VOL_STRIPE)
			continue;
		for (unsigned k = 0; k < e->nmembers; k++) {
			t->self = -1;
			if (!linear_of(t, e->members[k], tok, sizeof(tok), &base))
				t->stacked[e->members[k]] = 1;
		}
	}
}

static int add_dev(struct blkmap_table *tab, char *name, char *text, uint32_t idx)
{
	struct blkmap_table_dev *d = realloc(tab->dev, (tab->ndev + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	tab->dev = d;
	d[tab->ndev].name = name;
	d[tab->ndev].text = text;
	d[tab->ndev].vol_index = idx;
	tab->ndev++;
	return 0;
}

/* post-order: stacked devices below idx first, then idx itself when it is the root or stacked */
static int compile(struct tb *t, struct blkmap_table *tab, uint32_t idx, int root)
{
	const struct bm_volent *e = &t->vol->v[idx];
	char *name;
	int rc;

	if (e->type != BLKMAP_VOL_SIMPLE && e->type != BLKMAP_VOL_SCSI) {
		for (unsigned k = 0; k < e->nmembers; k++) {
			rc = compile(t, tab, e->members[k], 0);
			if (rc < 0)
				return rc;
		}
	}
	if (!root && !t->stacked[idx])
		return 0;
	t->self = (int)idx;
	t->out = (struct proto_strbuf){ 0 };
	t->have_lin = 0;
	emit(t, idx, 0, 0, e->size);
	flush_linear(t);
	if (t->err) {
		free(t->out.s);
		return t->err;
	}
	if (t->out.n > 0 && t->out.s[t->out.n - 1] == '\n')
		t->out.s[--t->out.n] = 0;
	if (root)
		name = strdup(t->name);
	else if (asprintf(&name, "%s-v%u", t->name, idx) < 0)
		name = NULL;
	if (!name || add_dev(tab, name, t->out.s, idx) < 0) {
		free(name);
		free(t->out.s);
		return -ENOMEM;
	}
	return 0;
}

int blkmap_vol_table(struct blkmap_vol *vol, const char *name, struct blkmap_table **out)
{
	struct blkmap_table *tab;
	struct tb t = { 0 };
	int rc;

	*out = NULL;
	if (!name || !*name || strlen(name) > 100 || strpbrk(name, " \t\n/"))
		return bm_vol_err(vol, -EINVAL, "table: the device name must be 1 to 100 characters without blanks or '/'");
	rc = bm_vol_ready(vol);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		if (!e->size)
			return bm_vol_err(vol, -ENODEV, "table: volume %u (%s) has no size: resolve the volume first", i,
					  blkmap_vol_type_name(e->type));
		if (e->size % BM_SECTOR_BYTES)
			return bm_vol_err(vol, -EINVAL, "table: volume %u is %" PRIu64 " bytes, not whole 512-byte sectors",
					  i, e->size);
	}
	tab = calloc(1, sizeof(*tab));
	t.stacked = calloc(vol->n, 1);
	if (!tab || !t.stacked) {
		free(tab);
		free(t.stacked);
		return bm_vol_err(vol, -ENOMEM, "table: out of memory");
	}
	t.vol = vol;
	t.name = name;
	mark_stacked(&t);
	rc = compile(&t, tab, vol->n - 1, 1);
	free(t.stacked);
	if (rc < 0) {
		blkmap_table_free(tab);
		return bm_vol_err(vol, rc, "table: %s", rc == -ENOMEM ? "out of memory" : "cannot express the volume");
	}
	*out = tab;
	return 0;
}

void blkmap_table_free(struct blkmap_table *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->ndev; i++) {
		free(t->dev[i].name);
		free(t->dev[i].text);
	}
	free(t->dev);
	free(t);
}

int blkmap_table_format(const struct blkmap_table *t, char **out)
{
	size_t cap = 1;
	char *s, *p;

	*out = NULL;
	if (t->ndev == 1) {
		*out = malloc(strlen(t->dev[0].text) + 2);
		if (!*out)
			return -ENOMEM;
		sprintf(*out, "%s\n", t->dev[0].text);
		return 0;
	}
	for (unsigned i = 0; i < t->ndev; i++) {
		size_t lines = 1;
		for (const char *c = t->dev[i].text; *c; c++)
			lines += *c == '\n';
		cap += strlen(t->dev[i].text) + lines * (strlen(t->dev[i].name) + 3) + 1;
	}
	s = p = malloc(cap);
	if (!s)
		return -ENOMEM;
	for (unsigned i = 0; i < t->ndev; i++) {
		const char *line = t->dev[i].text;
		while (*line) {
			const char *nl = strchr(line, '\n');
			size_t n = nl ? (size_t)(nl - line) : strlen(line);
			p += sprintf(p, "%s: %.*s\n", t->dev[i].name, (int)n, line);
			line += n + (nl ? 1 : 0);
		}
	}
	*p = 0;
	*out = s;
	return 0;
}
