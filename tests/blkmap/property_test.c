/* The property behind "one table, two executors": for 10,000 random volumes (stripes of slices,
 * concats of stripes, arbitrary nestings including stripes of concats that need stacked tables) and
 * random ranges, the engine's mapping (blkmap_vol_map) equals, sector by sector, a brute-force
 * interpreter of the compiled device-mapper table text, and equals RFC 5663's stripe formula applied
 * directly to the volume tree. Both references are written here from the texts, not from blkmap. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVOLUMES 10000
#define SECTOR 512ull

/* ---- random volumes ---------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* A mirror of the volume for the RFC interpreter: built alongside the blkmap one. */
struct rnode {
	int type; /* 0 leaf, 1 slice, 2 concat, 3 stripe */
	uint64_t size, start, unit;
	uint32_t members[8];
	unsigned n;
};

struct gen {
	struct blkmap_vol *vol;
	struct rnode nodes[BLKMAP_MAX_VOLUMES];
	unsigned count;
	unsigned leaves;
	int failed;
};

static uint32_t add_leaf(struct gen *g, uint64_t size)
{
	uint8_t sig[8];
	struct blkmap_sig_comp c = { 0, sizeof(sig), sig };
	uint32_t idx;

	for (int i = 0; i < 8; i++)
		sig[i] = (uint8_t)(g->leaves >> (8 * (i % 4)));
	g->leaves++;
	if (blkmap_vol_add_simple(g->vol, &c, 1, &idx) < 0 || blkmap_vol_set_leaf_size(g->vol, idx, size) < 0) {
		g->failed = 1;
		return 0;
	}
	g->nodes[idx] = (struct rnode){ .type = 0, .size = size };
	return idx;
}

static uint32_t gen_sized(struct gen *g, uint64_t size, int depth);

static uint32_t add_slice_of(struct gen *g, uint64_t size, int depth)
{
	uint64_t start = rnd_below(8) * SECTOR * (1 + rnd_below(64));
	uint64_t extra = rnd_below(3) * SECTOR * rnd_below(128);
	uint32_t child = gen_sized(g, start + size + extra, depth - 1), idx;

	if (g->failed || blkmap_vol_add_slice(g->vol, start, size, child, &idx) < 0) {
		g->failed = 1;
		return 0;
	}
	g->nodes[idx] = (struct rnode){ .type = 1, .size = size, .start = start, .members = { child }, .n = 1 };
	return idx;
}

static uint32_t add_concat_of(struct gen *g, uint64_t size, int depth)
{
	unsigned n = 2 + (unsigned)rnd_below(3);
	uint64_t sectors = size / SECTOR, left = sectors;
	uint32_t m[8], idx;

	if (sectors < n)
		n = (unsigned)sectors;
	for (unsigned k = 0; k < n; k++) {
		uint64_t part = k + 1 == n ? left : 1 + rnd_below(left - (n - 1 - k));
		left -= part;
		m[k] = gen_sized(g, part * SECTOR, depth - 1);
		if (g->failed)
			return 0;
	}
	if (blkmap_vol_add_concat(g->vol, m, n, &idx) < 0) {
		g->failed = 1;
		return 0;
	}
	g->nodes[idx] = (struct rnode){ .type = 2, .size = size, .n = n };
	memcpy(g->nodes[idx].members, m, n * sizeof(uint32_t));
	return idx;
}

/* A stripe of n members of per bytes each (generated one level down), unit bytes a stripe unit. */
static uint32_t stripe_of_members(struct gen *g, uint64_t unit, unsigned n, uint64_t per, int depth)
{
	uint32_t m[8], idx;

	for (unsigned k = 0; k < n; k++) {
		m[k] = gen_sized(g, per, depth - 1);
		if (g->failed)
			return 0;
	}
	if (blkmap_vol_add_stripe(g->vol, unit, m, n, &idx) < 0) {
		g->failed = 1;
		return 0;
	}
	g->nodes[idx] = (struct rnode){ .type = 3, .size = per * n, .unit = unit, .n = n };
	memcpy(g->nodes[idx].members, m, n * sizeof(uint32_t));
	return idx;
}

/* a stripe of exactly size bytes when size allows it, else a slice of a larger stripe */
static uint32_t add_stripe_of(struct gen *g, uint64_t size, int depth)
{
	uint64_t unit = 4096ull << rnd_below(5); /* 4K..64K */
	unsigned n = 2 + (unsigned)rnd_below(4);
	uint64_t row = unit * n, rows, per;
	uint32_t idx;

	if (size % row != 0) {
		/* wrap: slice [start, start+size) of a stripe with enough whole rows */
		uint64_t start = rnd_below(6 * row / SECTOR) * SECTOR;
		rows = (start + size + row - 1) / row + rnd_below(2);
		per = rows * unit;
		idx = stripe_of_members(g, unit, n, per, depth);
		if (g->failed)
			return 0;
		{
			uint32_t s;
			if (blkmap_vol_add_slice(g->vol, start, size, idx, &s) < 0) {
				g->failed = 1;
				return 0;
			}
			g->nodes[s] = (struct rnode){ .type = 1, .size = size, .start = start, .members = { idx }, .n = 1 };
			return s;
		}
	}
	per = size / n;
	return stripe_of_members(g, unit, n, per, depth);
}

static uint32_t gen_sized(struct gen *g, uint64_t size, int depth)
{
	uint64_t c = depth <= 0 ? 0 : rnd_below(10);

	if (blkmap_vol_count(g->vol) > BLKMAP_MAX_VOLUMES - 64)
		c = 0;
	if (c < 3)
		return add_leaf(g, size);
	if (c < 5)
		return add_slice_of(g, size, depth);
	if (c < 7)
		return add_concat_of(g, size, depth);
	return add_stripe_of(g, size, depth);
}

/* shape 0: stripe of slices of leaves; 1: concat of stripes; 2: anything nested */
static void generate(struct gen *g, int shape)
{
	uint64_t size = (64 + rnd_below(4096)) * SECTOR;
	uint32_t top = 0, m[8];

	g->failed = 0;
	g->leaves = 0;
	if (blkmap_vol_create(&g->vol) < 0) {
		g->failed = 1;
		return;
	}
	if (shape == 0) {
		uint64_t unit = 4096ull << rnd_below(4);
		unsigned n = 2 + (unsigned)rnd_below(6);
		uint64_t per = (1 + rnd_below(32)) * unit;
		for (unsigned k = 0; k < n; k++) {
			uint64_t start = rnd_below(64) * SECTOR;
			uint32_t leaf = add_leaf(g, start + per + rnd_below(16) * SECTOR);
			if (blkmap_vol_add_slice(g->vol, start, per, leaf, &m[k]) < 0)
				g->failed = 1;
			g->nodes[m[k]] = (struct rnode){ .type = 1, .size = per, .start = start, .members = { leaf }, .n = 1 };
		}
		if (blkmap_vol_add_stripe(g->vol, unit, m, n, &top) < 0)
			g->failed = 1;
		g->nodes[top] = (struct rnode){ .type = 3, .size = per * n, .unit = unit, .n = n };
		memcpy(g->nodes[top].members, m, n * sizeof(uint32_t));
	} else if (shape == 1) {
		unsigned n = 2 + (unsigned)rnd_below(3);
		uint64_t total = 0;
		for (unsigned k = 0; k < n; k++) {
			uint64_t unit = 4096ull << rnd_below(3);
			unsigned w = 2 + (unsigned)rnd_below(3);
			uint64_t sz = (1 + rnd_below(16)) * unit * w;
			m[k] = add_stripe_of(g, sz, 2);
			total += sz;
		}
		if (!g->failed && blkmap_vol_add_concat(g->vol, m, n, &top) < 0)
			g->failed = 1;
		g->nodes[top] = (struct rnode){ .type = 2, .size = total, .n = n };
		memcpy(g->nodes[top].members, m, n * sizeof(uint32_t));
	} else {
		top = gen_sized(g, size, 4);
	}
	(void)top;
}

/* ---- reference 1: the RFC's formulas on the tree ------------------------------------------------ */

/* byte L of node idx -> (leaf, byte) */
static void rfc_locate(const struct gen *g, uint32_t idx, uint64_t L, uint32_t *leaf, uint64_t *off)
{
	const struct rnode *r = &g->nodes[idx];
	switch (r->type) {
	case 0:
		*leaf = idx;
		*off = L;
		return;
	case 1:
		rfc_locate(g, r->members[0], r->start + L, leaf, off);
		return;
	case 2:
		for (unsigned k = 0; k < r->n; k++) {
			uint64_t ms = g->nodes[r->members[k]].size;
			if (L < ms) {
				rfc_locate(g, r->members[k], L, leaf, off);
				return;
			}
			L -= ms;
		}
		*leaf = UINT32_MAX;
		return;
	case 3: {
		/* RFC 5663 2.3.1: stripe unit number, its component, and the offset within it */
		uint64_t unit_no = L / r->unit;
		uint64_t comp = unit_no % r->n;
		uint64_t comp_off = (unit_no / r->n) * r->unit + L % r->unit;
		rfc_locate(g, r->members[comp], comp_off, leaf, off);
		return;
	}
	}
}

/* ---- reference 2: a dm table interpreter ------------------------------------------------------- */

struct dline {
	uint64_t start, len;
	int striped;
	unsigned n;
	uint64_t chunk;
	char dev[8][128];
	uint64_t off[8];
};

struct ddev {
	char name[160];
	struct dline *l;
	unsigned n;
};

struct dtabs {
	struct ddev d[64];
	unsigned n;
};

static int parse_tables(const struct blkmap_table *t, struct dtabs *out)
{
	out->n = 0;
	for (unsigned i = 0; i < t->ndev; i++) {
		struct ddev *d = &out->d[out->n++];
		char *text = strdup(t->dev[i].text), *save = NULL;
		unsigned cap = 0;
		snprintf(d->name, sizeof(d->name), "%s", t->dev[i].name);
		d->l = NULL;
		d->n = 0;
		for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			struct dline x = { 0 };
			char target[16];
			int used = 0;
			if (sscanf(line, "%" SCNu64 " %" SCNu64 " %15s %n", &x.start, &x.len, target, &used) != 3) {
				free(text);
				return -1;
			}
			if (!strcmp(target, "linear")) {
				x.n = 1;
				if (sscanf(line + used, "%127s %" SCNu64, x.dev[0], &x.off[0]) != 2) {
					free(text);
					return -1;
				}
			} else if (!strcmp(target, "striped")) {
				char *p = line + used;
				int k;
				x.striped = 1;
				if (sscanf(p, "%u %" SCNu64 " %n", &x.n, &x.chunk, &k) != 2 || x.n > 8) {
					free(text);
					return -1;
				}
				p += k;
				for (unsigned s = 0; s < x.n; s++) {
					if (sscanf(p, "%127s %" SCNu64 " %n", x.dev[s], &x.off[s], &k) != 2) {
						free(text);
						return -1;
					}
					p += k;
				}
			} else {
				free(text);
				return -1;
			}
			if (d->n == cap) {
				cap = cap ? cap * 2 : 8;
				d->l = realloc(d->l, cap * sizeof(*d->l));
			}
			d->l[d->n++] = x;
		}
		free(text);
	}
	return 0;
}

static void free_tables(struct dtabs *t)
{
	for (unsigned i = 0; i < t->n; i++)
		free(t->d[i].l);
}

/* sector s of the named device -> (leaf, sector); -1 when the table does not cover it */
static int dm_locate(const struct dtabs *t, const char *name, uint64_t s, uint32_t *leaf, uint64_t *ls)
{
	const struct ddev *d = NULL;
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->d[i].name, name))
			d = &t->d[i];
	if (!d)
		return -1;
	for (unsigned i = 0; i < d->n; i++) {
		const struct dline *x = &d->l[i];
		const char *dev;
		uint64_t at;
		if (s < x->start || s >= x->start + x->len)
			continue;
		if (!x->striped) {
			dev = x->dev[0];
			at = x->off[0] + (s - x->start);
		} else {
			/* dm-stripe: chunk number, its stripe, the offset on that stripe */
			uint64_t rel = s - x->start, chunk = rel / x->chunk;
			unsigned stripe = (unsigned)(chunk % x->n);
			dev = x->dev[stripe];
			at = x->off[stripe] + (chunk / x->n) * x->chunk + rel % x->chunk;
		}
		if (!strncmp(dev, "/dev/mapper/", 12))
			return dm_locate(t, dev + 12, at, leaf, ls);
		if (strncmp(dev, "leaf", 4) != 0)
			return -1;
		*leaf = (uint32_t)strtoul(dev + 4, NULL, 10);
		*ls = at;
		return 0;
	}
	return -1;
}

/* lines of each device tile [0, size) exactly */
static int tiles(const struct dtabs *t, const char *name, uint64_t size)
{
	for (unsigned i = 0; i < t->n; i++) {
		uint64_t at = 0;
		if (strcmp(t->d[i].name, name) != 0)
			continue;
		for (unsigned k = 0; k < t->d[i].n; k++) {
			if (t->d[i].l[k].start != at)
				return 0;
			at += t->d[i].l[k].len;
		}
		return at == size;
	}
	return 0;
}

/* ---- the property ------------------------------------------------------------------------------ */

static int check_range(struct gen *g, const struct dtabs *tabs, uint64_t off, uint64_t len, int sector_aligned)
{
	struct blkmap_run *runs = NULL;
	size_t n = 0, r = 0;
	uint32_t top = blkmap_vol_count(g->vol) - 1;
	int ok = 1;

	if (blkmap_vol_map(g->vol, off, len, &runs, &n) != 0)
		return 0;
	/* runs tile the range in order */
	{
		uint64_t at = off;
		for (size_t i = 0; i < n; i++) {
			if (runs[i].vol_offset_bytes != at || runs[i].length_bytes == 0)
				ok = 0;
			at += runs[i].length_bytes;
		}
		if (at != off + len)
			ok = 0;
	}
	for (uint64_t b = off; ok && b < off + len; b += sector_aligned ? SECTOR : 1 + rnd_below(700)) {
		uint32_t leaf_rfc = 0, leaf_dm = 0;
		uint64_t off_rfc = 0, sec_dm = 0, eng;
		while (r < n && b >= runs[r].vol_offset_bytes + runs[r].length_bytes)
			r++;
		if (r == n)
			return 0;
		eng = runs[r].leaf_offset_bytes + (b - runs[r].vol_offset_bytes);
		rfc_locate(g, top, b, &leaf_rfc, &off_rfc);
		if (leaf_rfc != runs[r].leaf || off_rfc != eng)
			ok = 0;
		if (sector_aligned) {
			if (dm_locate(tabs, "pnfs-p", b / SECTOR, &leaf_dm, &sec_dm) != 0 || leaf_dm != runs[r].leaf ||
			    sec_dm * SECTOR != eng)
				ok = 0;
		}
	}
	free(runs);
	return ok;
}

static void test_engine_equals_table_and_rfc(void)
{
	struct gen *g = calloc(1, sizeof(*g));
	struct dtabs *tabs = calloc(1, sizeof(*tabs));
	unsigned bad = 0, stacked = 0, ranges = 0;
	unsigned shapes[3] = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	rng_state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < NVOLUMES && bad < 5; i++) {
		struct blkmap_table *t = NULL;
		uint32_t top;
		uint64_t size;
		int shape = i % 3;

		generate(g, shape);
		if (g->failed || blkmap_vol_validate(g->vol) != 0) {
			printf("\n  volume %d: generator or validation failed: %s\n", i, blkmap_vol_errstr(g->vol));
			bad++;
			blkmap_vol_free(g->vol);
			continue;
		}
		shapes[shape]++;
		top = blkmap_vol_count(g->vol) - 1;
		size = blkmap_vol_size_bytes(g->vol, top);
		if (size != g->nodes[top].size || blkmap_vol_table(g->vol, "pnfs-p", &t) != 0 ||
		    parse_tables(t, tabs) != 0) {
			printf("\n  volume %d: size %" PRIu64 " vs %" PRIu64 " or table failed: %s\n", i, size,
			       g->nodes[top].size, blkmap_vol_errstr(g->vol));
			bad++;
			blkmap_table_free(t);
			blkmap_vol_free(g->vol);
			continue;
		}
		if (t->ndev > 1)
			stacked++;
		for (unsigned d = 0; d < t->ndev; d++) {
			if (!tiles(tabs, t->dev[d].name, blkmap_vol_size_bytes(g->vol, t->dev[d].vol_index) / SECTOR)) {
				printf("\n  volume %d: table %s does not tile its device\n", i, t->dev[d].name);
				bad++;
			}
		}
		for (int k = 0; k < 3; k++) {
			uint64_t sectors = size / SECTOR;
			uint64_t o = rnd_below(sectors), l = 1 + rnd_below(sectors - o < 512 ? sectors - o : 512);
			ranges++;
			if (!check_range(g, tabs, o * SECTOR, l * SECTOR, 1)) {
				char *text = NULL;
				blkmap_vol_format_text(g->vol, &text);
				printf("\n  volume %d: mapping of sectors %" PRIu64 "+%" PRIu64 " differs:\n%s", i, o, l, text);
				free(text);
				bad++;
				break;
			}
		}
		/* byte-granular ranges against the RFC formula (dm works in sectors) */
		{
			uint64_t o = rnd_below(size), l = 1 + rnd_below(size - o < 65536 ? size - o : 65536);
			ranges++;
			if (!check_range(g, tabs, o, l, 0)) {
				printf("\n  volume %d: byte range %" PRIu64 "+%" PRIu64 " differs from the RFC formula\n", i, o, l);
				bad++;
			}
		}
		/* the whole volume end to end, a sector at a time */
		if (i % 100 == 0) {
			ranges++;
			if (!check_range(g, tabs, 0, size, 1)) {
				printf("\n  volume %d: full-volume mapping differs\n", i);
				bad++;
			}
		}
		free_tables(tabs);
		blkmap_table_free(t);
		blkmap_vol_free(g->vol);
	}
	printf("(%u volumes: %u stripe-of-slices, %u concat-of-stripes, %u nested; %u needed stacked tables; %u ranges) ",
	       shapes[0] + shapes[1] + shapes[2], shapes[0], shapes[1], shapes[2], stacked, ranges);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(shapes[0] + shapes[1] + shapes[2], NVOLUMES);
	CU_ASSERT(stacked > 100); /* the nested shapes really exercise stacking */
	free(tabs);
	free(g);
}

TEST_SUITE(blkmap_property, "blkmap/property", NULL, NULL,
	   { "engine_equals_table_and_rfc", test_engine_equals_table_and_rfc });
