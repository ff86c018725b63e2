/* Extent maps and the allocator: splitting and merging, LAYOUTCOMMIT checks, holes, alignment and
 * contiguity, fragmentation, pending frees; and thousands of random operations checked block by
 * block against a simple in-memory model (no volume byte owned twice, free + used + pending ==
 * volume, maps sorted, merged, non-overlapping), with aborts and a reopen along the way. */
#include "tests/mds/store_util.h"

#include <errno.h>
#include <stdlib.h>

#define ROOT 1
#define BS 4096u

static struct mds_store *st;
static struct mds_txn *t;
static const char *sdir;

static void begin(const char *tag, uint64_t volume, uint64_t su)
{
	st = ts_begin(tag, volume, BS, su, &sdir, &t);
}

static void end(void)
{
	ts_end(&st, t);
}

static uint64_t mkfile(const char *name)
{
	struct mds_create_args a = ts_args(MDS_FT_REG, 0644);
	struct mds_inode ino;

	CU_ASSERT_EQUAL_FATAL(mds_ns_create(t, ROOT, name, strlen(name), &a, &ino, NULL), 0);
	return ino.fileid;
}

static size_t exts(uint64_t f, struct mds_extent *x, size_t max)
{
	size_t n = 0;

	CU_ASSERT_EQUAL(mds_ext_lookup(t, f, 0, MDS_TO_END, x, max, &n), 0);
	return n;
}

static void test_alloc_contiguous_aligned(void)
{
	struct mds_extent x[16];
	uint64_t f, g, got = 0;
	size_t n;

	begin("ext-alloc", 64u << 20, 65536);
	f = mkfile("f");
	g = mkfile("g");
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 0, 1 << 20, &got), 0);
	CU_ASSERT_EQUAL(got, 1 << 20);
	n = exts(f, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(x[0].file_off, 0);
	CU_ASSERT_EQUAL(x[0].len, 1 << 20);
	CU_ASSERT_EQUAL(x[0].state, MDS_EXT_INVALID);
	CU_ASSERT_EQUAL(x[0].vol_off % 65536, 0);
	/* Already allocated: nothing new. Unaligned requests round out to blocks. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 100, 5000, &got), 0);
	CU_ASSERT_EQUAL(got, 0);
	/* Another file takes space right after f's extent... */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 0, 65536, &got), 0);
	/* ...so f's next range cannot be contiguous; then f grows contiguously from there on. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, (1 << 20) + 1, 10, &got), 0);
	CU_ASSERT_EQUAL(got, BS);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, (1 << 20) + BS, 3 * BS, &got), 0);
	n = exts(f, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(x[1].file_off, 1 << 20);
	CU_ASSERT_EQUAL(x[1].len, 4 * BS);
	/* The file offset and the volume offset agree modulo the stripe unit. */
	CU_ASSERT_EQUAL(x[1].vol_off % 65536, (1u << 20) % 65536);
	/* A stripe unit or more at an odd file offset keeps the stripe phase too... */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 5 * 65536 + 3 * BS, 65536 + 2 * BS, &got), 0);
	n = exts(g, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(x[1].vol_off % 65536, 3 * BS);
	/* ...while a small one is packed into the smallest fragment that holds it (best fit), so it
	 * never cuts a new fragment out of a big free extent. */
	{
		struct mds_store_stats s0, s1;
		CU_ASSERT_EQUAL(mds_store_stats(t, &s0), 0);
		CU_ASSERT(s0.free_extents > 1);
		CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 40 * 65536 + 5 * BS, BS, &got), 0);
		CU_ASSERT_EQUAL(mds_store_stats(t, &s1), 0);
		CU_ASSERT(s1.free_extents <= s0.free_extents);
	}
	/* Bad requests. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 0, 0, &got), -EINVAL);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, ROOT, 0, BS, &got), -EISDIR);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, 424242, 0, BS, &got), -ENOENT);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 1ull << 63, BS, &got), -EINVAL);
	end();
}

static void test_states_split_merge_commit(void)
{
	struct mds_extent x[16];
	uint64_t f, v0;
	size_t n;

	begin("ext-states", 16u << 20, 65536);
	f = mkfile("f");
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 0, 16 * BS, NULL), 0);
	v0 = exts(f, x, 16) == 1 ? x[0].vol_off : 0;
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 4 * BS, 4 * BS, MDS_EXT_RW), 0);
	n = exts(f, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT_EQUAL(x[1].file_off, 4 * BS);
	CU_ASSERT_EQUAL(x[1].vol_off, v0 + 4 * BS);
	CU_ASSERT_EQUAL(x[1].state, MDS_EXT_RW);
	CU_ASSERT_EQUAL(x[2].state, MDS_EXT_INVALID);
	/* Committing the left part merges it with the RW middle. */
	CU_ASSERT_EQUAL(mds_ext_commit(t, f, 0, 4 * BS, v0), 0);
	n = exts(f, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(x[0].len, 8 * BS);
	CU_ASSERT_EQUAL(x[0].state, MDS_EXT_RW);
	/* A commit whose volume offset does not match the map is refused, nothing changes. */
	CU_ASSERT_EQUAL(mds_ext_commit(t, f, 8 * BS, 4 * BS, v0 + 9 * BS), -EINVAL);
	CU_ASSERT_EQUAL(exts(f, x, 16), 2);
	/* Over a hole: -ENODATA, nothing changes. */
	CU_ASSERT_EQUAL(mds_ext_commit(t, f, 12 * BS, 8 * BS, v0 + 12 * BS), -ENODATA);
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 15 * BS, 2 * BS, MDS_EXT_RW), -ENODATA);
	CU_ASSERT_EQUAL(exts(f, x, 16), 2);
	/* Unaligned or bad states. */
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 1, BS, MDS_EXT_RW), -EINVAL);
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 0, BS, MDS_EXT_NONE), -EINVAL);
	/* READ_DATA pieces cannot be committed. */
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 12 * BS, BS, MDS_EXT_READ), 0);
	CU_ASSERT_EQUAL(mds_ext_commit(t, f, 12 * BS, BS, v0 + 12 * BS), -EINVAL);
	CU_ASSERT_EQUAL(mds_ext_commit(t, f, 8 * BS, 4 * BS, v0 + 8 * BS), 0);
	CU_ASSERT_EQUAL(mds_ext_commit(t, f, 13 * BS, 3 * BS, v0 + 13 * BS), 0);
	CU_ASSERT_EQUAL(exts(f, x, 16), 3);
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 12 * BS, BS, MDS_EXT_RW), 0);
	n = exts(f, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(x[0].len, 16 * BS);
	CU_ASSERT_EQUAL(x[0].state, MDS_EXT_RW);
	end();
}

static void test_map_and_lookup(void)
{
	struct mds_extent x[16];
	uint64_t f, end_off;
	size_t n;

	begin("ext-map", 16u << 20, 65536);
	f = mkfile("f");
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 2 * BS, 2 * BS, NULL), 0);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 10 * BS, 4 * BS, NULL), 0);
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 10 * BS, 4 * BS, MDS_EXT_RW), 0);
	/* [BS, 12 BS): hole, INVALID, hole, RW clipped. */
	CU_ASSERT_EQUAL(mds_ext_map(t, f, BS, 11 * BS, x, 16, &n, &end_off), 0);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	CU_ASSERT_EQUAL(end_off, 12 * BS);
	CU_ASSERT_EQUAL(x[0].state, MDS_EXT_NONE);
	CU_ASSERT_EQUAL(x[0].file_off, BS);
	CU_ASSERT_EQUAL(x[0].len, BS);
	CU_ASSERT_EQUAL(x[1].state, MDS_EXT_INVALID);
	CU_ASSERT_EQUAL(x[1].len, 2 * BS);
	CU_ASSERT_EQUAL(x[2].state, MDS_EXT_NONE);
	CU_ASSERT_EQUAL(x[2].len, 6 * BS);
	CU_ASSERT_EQUAL(x[3].state, MDS_EXT_RW);
	CU_ASSERT_EQUAL(x[3].file_off, 10 * BS);
	CU_ASSERT_EQUAL(x[3].len, 2 * BS);
	/* Limited to two pieces: stops where they end. */
	CU_ASSERT_EQUAL(mds_ext_map(t, f, BS, 11 * BS, x, 2, &n, &end_off), 0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(end_off, 4 * BS);
	/* Inside an extent: one clipped piece with the matching volume offset. */
	CU_ASSERT_EQUAL(mds_ext_map(t, f, 11 * BS, BS, x, 16, &n, &end_off), 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(x[0].file_off, 11 * BS);
	/* Lookup returns whole extents, from the one containing the offset. */
	CU_ASSERT_EQUAL(mds_ext_lookup(t, f, 3 * BS, 8 * BS, x, 16, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(x[0].file_off, 2 * BS);
	CU_ASSERT_EQUAL(x[1].file_off, 10 * BS);
	CU_ASSERT_EQUAL(mds_ext_lookup(t, f, 4 * BS, 6 * BS, x, 16, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	end();
}

static void test_punch_and_pending(void)
{
	struct mds_extent x[16];
	struct mds_ranges fr = { 0 };
	struct mds_store_stats s;
	uint64_t f, g, v0, bytes = 0;
	size_t n;

	begin("ext-punch", 4u << 20, 65536);
	f = mkfile("f");
	g = mkfile("g");
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 0, 16 * BS, NULL), 0);
	v0 = exts(f, x, 16) == 1 ? x[0].vol_off : 0;
	CU_ASSERT_EQUAL(mds_ext_set_state(t, f, 0, 8 * BS, MDS_EXT_RW), 0);
	/* Punch only INVALID extents in [4, 12): the RW part stays. */
	CU_ASSERT_EQUAL(mds_ext_punch(t, f, 4 * BS, 8 * BS, MDS_EXT_MASK(MDS_EXT_INVALID), 0, &fr), 0);
	CU_ASSERT_EQUAL_FATAL(fr.n, 1);
	CU_ASSERT_EQUAL(fr.v[0].vol_off, v0 + 8 * BS);
	CU_ASSERT_EQUAL(fr.v[0].len, 4 * BS);
	n = exts(f, x, 16);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(x[0].len, 8 * BS);
	CU_ASSERT_EQUAL(x[1].file_off, 12 * BS);
	/* Punch the middle of the RW extent, parking the blocks. */
	fr.n = 0;
	CU_ASSERT_EQUAL(mds_ext_punch(t, f, 2 * BS, 2 * BS, MDS_EXT_MASK_ALL, MDS_FREE_PENDING, &fr), 0);
	CU_ASSERT_EQUAL_FATAL(fr.n, 1);
	CU_ASSERT_EQUAL(fr.v[0].vol_off, v0 + 2 * BS);
	CU_ASSERT_EQUAL(exts(f, x, 16), 3);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.pending_bytes, 2 * BS);
	CU_ASSERT_EQUAL(s.used_bytes, 10 * BS);
	CU_ASSERT_EQUAL(s.free_bytes + s.used_bytes + s.pending_bytes, s.volume_bytes);
	/* Pending blocks are not reused: fill the volume, the pending ones stay out. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 0, s.free_bytes, NULL), 0);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 1 << 30, BS, NULL), -ENOSPC);
	CU_ASSERT_EQUAL(mds_ext_lookup(t, g, 0, MDS_TO_END, x, 16, &n), 0);
	for (size_t i = 0; i < n; i++)
		CU_ASSERT(x[i].vol_off + x[i].len <= v0 + 2 * BS || x[i].vol_off >= v0 + 4 * BS);
	/* Releasing needs the range wholly pending. */
	CU_ASSERT_EQUAL(mds_pending_release(t, v0 + BS, 2 * BS), -ENOENT);
	CU_ASSERT_EQUAL(mds_pending_release(t, v0 + 2 * BS, BS), 0);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.pending_bytes, BS);
	CU_ASSERT_EQUAL(s.free_bytes, BS);
	end();

	/* Pending survives a restart; grace's end releases it. */
	CU_ASSERT_EQUAL_FATAL(mds_store_open(sdir, NULL, &st), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.pending_bytes, BS);
	CU_ASSERT_EQUAL(mds_pending_release_all(t, &bytes), 0);
	CU_ASSERT_EQUAL(bytes, BS);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.pending_bytes, 0);
	CU_ASSERT_EQUAL(s.free_bytes, 2 * BS);
	/* Punch to the end of the file. */
	fr.n = 0;
	CU_ASSERT_EQUAL(mds_ext_punch(t, f, 0, MDS_TO_END, MDS_EXT_MASK_ALL, 0, &fr), 0);
	CU_ASSERT_EQUAL(exts(f, x, 16), 0);
	CU_ASSERT_EQUAL(mds_ext_punch(t, f, 3, BS, MDS_EXT_MASK_ALL, 0, &fr), -EINVAL);
	mds_ranges_free(&fr);
	end();
}

static void test_fragmented(void)
{
	struct mds_extent x[64];
	struct mds_store_stats s;
	char name[32];
	uint64_t ids[64], big;
	size_t n;

	begin("ext-frag", 1u << 20, 65536); /* 256 blocks */
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ids[i] = mkfile(name);
		CU_ASSERT_EQUAL(mds_ext_alloc(t, ids[i], 0, 4 * BS, NULL), 0);
	}
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_bytes, 0);
	for (int i = 0; i < 64; i += 2) {
		snprintf(name, sizeof(name), "f%d", i);
		CU_ASSERT_EQUAL(mds_ns_unlink(t, ROOT, name, strlen(name), 0, NULL, NULL), 0);
	}
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_bytes, 32 * 4 * BS);
	CU_ASSERT_EQUAL(s.free_extents, 32);
	big = mkfile("big");
	/* More than is free: nothing at all is taken. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, big, 0, 32 * 4 * BS + BS, NULL), -ENOSPC);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_extents, 32);
	/* Exactly what is free: in 32 pieces. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, big, 0, 32 * 4 * BS, NULL), 0);
	n = exts(big, x, 64);
	CU_ASSERT_EQUAL(n, 32);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_bytes, 0);
	/* Freeing everything coalesces back into one extent. */
	CU_ASSERT_EQUAL(mds_ns_unlink(t, ROOT, "big", 3, 0, NULL, NULL), 0);
	for (int i = 1; i < 64; i += 2) {
		snprintf(name, sizeof(name), "f%d", i);
		CU_ASSERT_EQUAL(mds_ns_unlink(t, ROOT, name, strlen(name), 0, NULL, NULL), 0);
	}
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_extents, 1);
	CU_ASSERT_EQUAL(s.free_bytes, 1u << 20);
	end();
}

/* Best fit: the smallest free extent that holds the request is used, not the first. */
static void test_best_fit(void)
{
	struct mds_extent x[4];
	uint64_t a, b, c, d, e, g;

	begin("ext-bestfit", 1u << 20, 0);
	a = mkfile("a");
	b = mkfile("b");
	c = mkfile("c");
	d = mkfile("d");
	e = mkfile("e");
	g = mkfile("g");
	CU_ASSERT_EQUAL(mds_ext_alloc(t, a, 0, 8 * BS, NULL), 0);   /* [0, 8) */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, b, 0, BS, NULL), 0);       /* [8, 9) */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, c, 0, 3 * BS, NULL), 0);   /* [9, 12) */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, d, 0, BS, NULL), 0);       /* [12, 13) */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, e, 0, 200 * BS, NULL), 0); /* rest but 43 blocks */
	CU_ASSERT_EQUAL(mds_ns_unlink(t, ROOT, "a", 1, 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, ROOT, "c", 1, 0, NULL, NULL), 0);
	/* Holes of 8, 3 and 43 blocks: 3 blocks go in the 3-block hole. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 0, 3 * BS, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(exts(g, x, 4), 1);
	CU_ASSERT_EQUAL(x[0].vol_off, 9 * BS);
	end();
}

/* ---- random operations against a model ------------------------------------------------------ */

#define VB 2048    /* volume blocks */
#define NF 8       /* files */
#define FB 512     /* blocks per file */
#define FREE_OWN (-1)
#define PEND_OWN (-2)

struct mblk {
	int32_t vol;   /* -1: hole */
	uint8_t state;
};

struct model {
	struct mblk f[NF][FB];
	uint64_t fileid[NF];
	uint64_t size[NF];
	int32_t owner[VB];      /* file index, FREE_OWN or PEND_OWN */
	uint64_t pend_fid[VB];  /* pending: the fileid it came from */
	unsigned serial;
};

static struct model M, SNAP;
static unsigned rseed;
static int rnd(int n)
{
	return (int)(rand_r(&rseed) % (unsigned)n);
}

static int model_failures;
#define MCHECK(cond, ...)                                         \
	do {                                                      \
		if (!(cond)) {                                    \
			if (model_failures++ < 10) {              \
				fprintf(stderr, "model: " __VA_ARGS__); \
				fprintf(stderr, "\n");            \
			}                                         \
			CU_FAIL("store differs from the model"); \
		}                                                 \
	} while (0)

static void model_init(void)
{
	memset(&M, 0, sizeof(M));
	for (int i = 0; i < NF; i++)
		for (int b = 0; b < FB; b++)
			M.f[i][b].vol = -1;
	for (int v = 0; v < VB; v++)
		M.owner[v] = FREE_OWN;
}

static void model_newfile(int i)
{
	char name[16];

	snprintf(name, sizeof(name), "m%d", i);
	M.fileid[i] = mkfile(name);
	M.size[i] = 0;
	for (int b = 0; b < FB; b++)
		M.f[i][b].vol = -1;
}

static void verify_file(int i)
{
	static struct mds_extent x[FB];
	size_t n = 0;
	struct mblk got[FB];

	for (int b = 0; b < FB; b++)
		got[b].vol = -1;
	{
		int rc = mds_ext_lookup(t, M.fileid[i], 0, MDS_TO_END, x, FB, &n);
		MCHECK(rc == 0, "lookup of file %d (%llu): %d %s", i, (unsigned long long)M.fileid[i], rc,
		       mds_store_errstr(st));
	}
	for (size_t k = 0; k < n; k++) {
		MCHECK(x[k].file_off % BS == 0 && x[k].len % BS == 0 && x[k].vol_off % BS == 0,
		       "file %d: unaligned extent", i);
		MCHECK(x[k].file_off + x[k].len <= (uint64_t)FB * BS, "file %d: extent past the model", i);
		if (k)
			MCHECK(x[k - 1].file_off + x[k - 1].len <= x[k].file_off, "file %d: unsorted", i);
		for (uint64_t o = 0; o < x[k].len / BS && x[k].file_off / BS + o < FB; o++) {
			got[x[k].file_off / BS + o].vol = (int32_t)(x[k].vol_off / BS + o);
			got[x[k].file_off / BS + o].state = (uint8_t)x[k].state;
		}
	}
	for (int b = 0; b < FB; b++) {
		MCHECK(got[b].vol == M.f[i][b].vol, "file %d block %d: store vol %d, model %d", i, b,
		       got[b].vol, M.f[i][b].vol);
		if (got[b].vol >= 0 && got[b].vol == M.f[i][b].vol) {
			MCHECK(got[b].state == M.f[i][b].state, "file %d block %d: state %u, model %u", i,
			       b, got[b].state, M.f[i][b].state);
			MCHECK(M.owner[got[b].vol] == i, "volume block %d: owner %d, file %d maps it",
			       got[b].vol, M.owner[got[b].vol], i);
		}
	}
}

static void verify_stats(void)
{
	struct mds_store_stats s;
	uint64_t fr = 0, pe = 0, us = 0;

	for (int v = 0; v < VB; v++) {
		if (M.owner[v] == FREE_OWN)
			fr++;
		else if (M.owner[v] == PEND_OWN)
			pe++;
		else
			us++;
	}
	CU_ASSERT_EQUAL_FATAL(mds_store_stats(t, &s), 0);
	MCHECK(s.free_bytes == fr * BS, "free %llu, model %llu", (unsigned long long)s.free_bytes,
	       (unsigned long long)(fr * BS));
	MCHECK(s.pending_bytes == pe * BS, "pending %llu, model %llu",
	       (unsigned long long)s.pending_bytes, (unsigned long long)(pe * BS));
	MCHECK(s.used_bytes == us * BS, "used %llu, model %llu", (unsigned long long)s.used_bytes,
	       (unsigned long long)(us * BS));
	MCHECK(s.free_bytes + s.used_bytes + s.pending_bytes == s.volume_bytes, "sum != volume");
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* The store's freed list equals the model's freed blocks (as sets of volume blocks). */
static void compare_freed(const struct mds_ranges *fr, int32_t *mblocks, int nm)
{
	static int32_t sb[VB];
	int ns = 0;

	for (size_t k = 0; k < fr->n; k++)
		for (uint64_t o = 0; o < fr->v[k].len / BS && ns < VB; o++)
			sb[ns++] = (int32_t)(fr->v[k].vol_off / BS + o);
	qsort(sb, (size_t)ns, sizeof(*sb), cmp_i32);
	qsort(mblocks, (size_t)nm, sizeof(*mblocks), cmp_i32);
	MCHECK(ns == nm && memcmp(sb, mblocks, (size_t)nm * sizeof(*sb)) == 0,
	       "freed %d blocks, model %d", ns, nm);
}

/* Model side of giving up block b of file i. */
static void model_release_block(int i, int b, int pending, int32_t *out, int *nout)
{
	int32_t v = M.f[i][b].vol;

	out[(*nout)++] = v;
	M.owner[v] = pending ? PEND_OWN : FREE_OWN;
	M.pend_fid[v] = pending ? M.fileid[i] : 0;
	M.f[i][b].vol = -1;
}

static void op_alloc(void)
{
	int i = rnd(NF), off = rnd(FB), len = 1 + rnd(rnd(8) ? 16 : 256), holes = 0, nfree = 0;
	uint64_t got = 0;
	int rc;
	static struct mds_extent x[FB];
	size_t n;

	if (off + len > FB)
		len = FB - off;
	for (int b = off; b < off + len; b++)
		holes += M.f[i][b].vol < 0;
	for (int v = 0; v < VB; v++)
		nfree += M.owner[v] == FREE_OWN;
	/* Byte offsets inside blocks round out to whole blocks. */
	rc = mds_ext_alloc(t, M.fileid[i], (uint64_t)off * BS + (uint64_t)rnd(BS),
			   (uint64_t)(len - 1) * BS + 1, &got);
	if (holes > nfree) {
		MCHECK(rc == -ENOSPC, "alloc of %d holes with %d free: %d", holes, nfree, rc);
		return;
	}
	MCHECK(rc == 0 && got == (uint64_t)holes * BS, "alloc: rc %d got %llu, model %d holes", rc,
	       (unsigned long long)got, holes);
	if (rc)
		return;
	CU_ASSERT_EQUAL(mds_ext_lookup(t, M.fileid[i], (uint64_t)off * BS, (uint64_t)len * BS, x, FB,
				       &n), 0);
	for (size_t k = 0; k < n; k++) {
		for (uint64_t o = 0; o < x[k].len / BS; o++) {
			int64_t b = (int64_t)(x[k].file_off / BS + o);
			int32_t v = (int32_t)(x[k].vol_off / BS + o);
			if (b < off || b >= off + len || M.f[i][b].vol >= 0)
				continue;
			MCHECK(M.owner[v] == FREE_OWN, "alloc gave volume block %d owned by %d", v,
			       M.owner[v]);
			MCHECK(x[k].state == MDS_EXT_INVALID, "fresh allocation not INVALID");
			M.owner[v] = i;
			M.f[i][b].vol = v;
			M.f[i][b].state = MDS_EXT_INVALID;
		}
	}
}

static void op_set_state(void)
{
	int i = rnd(NF), off = rnd(FB), len = 1 + rnd(32), holes = 0, rc;
	enum mds_ext_state s = (enum mds_ext_state)rnd(3);

	if (off + len > FB)
		len = FB - off;
	for (int b = off; b < off + len; b++)
		holes += M.f[i][b].vol < 0;
	rc = mds_ext_set_state(t, M.fileid[i], (uint64_t)off * BS, (uint64_t)len * BS, s);
	MCHECK(rc == (holes ? -ENODATA : 0), "set_state: %d with %d holes", rc, holes);
	if (!rc)
		for (int b = off; b < off + len; b++)
			M.f[i][b].state = (uint8_t)s;
}

static void op_commit(void)
{
	int i = rnd(NF), off = rnd(FB), len, rc, expect = 0;
	int32_t v;

	/* Mostly a run that is mapped contiguously; sometimes a wrong volume offset. */
	for (int tries = 0; tries < 20 && M.f[i][off].vol < 0; tries++)
		off = rnd(FB);
	v = M.f[i][off].vol;
	len = 1;
	while (off + len < FB && len < 40 && M.f[i][off + len].vol == v + len && rnd(10))
		len++;
	if (v >= 0 && !rnd(6))
		v++;
	for (int b = off; b < off + len; b++)
		if (M.f[i][b].vol < 0)
			expect = -ENODATA;
	for (int b = off; !expect && b < off + len; b++)
		if (M.f[i][b].vol != v + (b - off) || M.f[i][b].state == MDS_EXT_READ)
			expect = -EINVAL;
	rc = mds_ext_commit(t, M.fileid[i], (uint64_t)off * BS, (uint64_t)len * BS,
			    (uint64_t)(v < 0 ? 0 : v) * BS);
	MCHECK(rc == expect, "commit: %d, model %d", rc, expect);
	if (!rc)
		for (int b = off; b < off + len; b++)
			M.f[i][b].state = MDS_EXT_RW;
}

static void op_punch(void)
{
	static int32_t mb[VB];
	int i = rnd(NF), off = rnd(FB), len = 1 + rnd(rnd(4) ? 24 : FB), nm = 0, rc;
	int to_end = !rnd(8), pending = rnd(2);
	unsigned mask = rnd(3) ? MDS_EXT_MASK_ALL : MDS_EXT_MASK((enum mds_ext_state)rnd(3));
	struct mds_ranges fr = { 0 };

	if (to_end || off + len > FB)
		len = FB - off;
	rc = mds_ext_punch(t, M.fileid[i], (uint64_t)off * BS, to_end ? MDS_TO_END : (uint64_t)len * BS,
			   mask, pending ? MDS_FREE_PENDING : 0, &fr);
	MCHECK(rc == 0, "punch: %d", rc);
	if (!rc) {
		for (int b = off; b < off + len; b++)
			if (M.f[i][b].vol >= 0 && (mask & MDS_EXT_MASK(M.f[i][b].state)))
				model_release_block(i, b, pending, mb, &nm);
		compare_freed(&fr, mb, nm);
	}
	mds_ranges_free(&fr);
}

static void op_truncate(void)
{
	static int32_t mb[VB];
	int i = rnd(NF), nm = 0, pending = rnd(2), rc;
	struct mds_setattr sa = { .mask = MDS_SA_SIZE };
	struct mds_ranges fr = { 0 };

	if (rnd(2)) {
		/* A write reported up to some end (size only grows). */
		uint64_t e = (uint64_t)rnd(FB * (int)BS);
		CU_ASSERT_EQUAL(mds_inode_note_write(t, M.fileid[i], e, NULL, NULL), 0);
		if (e > M.size[i])
			M.size[i] = e;
		return;
	}
	sa.size = (uint64_t)rnd(FB * (int)BS);
	rc = mds_inode_setattr(t, M.fileid[i], &sa, pending ? MDS_FREE_PENDING : 0, &fr, NULL);
	MCHECK(rc == 0, "truncate: %d", rc);
	if (!rc) {
		if (sa.size < M.size[i])
			for (uint64_t b = (sa.size + BS - 1) / BS; b < FB; b++)
				if (M.f[i][b].vol >= 0)
					model_release_block(i, (int)b, pending, mb, &nm);
		M.size[i] = sa.size;
		compare_freed(&fr, mb, nm);
	}
	mds_ranges_free(&fr);
}

static void op_remove(void)
{
	static int32_t mb[VB];
	int i = rnd(NF), nm = 0, pending = rnd(2), rc;
	struct mds_ranges fr = { 0 };
	struct mds_unlink_result ur;
	char name[16];

	snprintf(name, sizeof(name), "m%d", i);
	rc = mds_ns_unlink(t, ROOT, name, strlen(name), pending ? MDS_FREE_PENDING : 0, &fr, &ur);
	MCHECK(rc == 0 && ur.destroyed && ur.fileid == M.fileid[i], "remove: %d", rc);
	for (int b = 0; b < FB; b++)
		if (M.f[i][b].vol >= 0)
			model_release_block(i, b, pending, mb, &nm);
	compare_freed(&fr, mb, nm);
	mds_ranges_free(&fr);
	model_newfile(i);
}

static void op_release(void)
{
	int kind = rnd(6), rc;
	uint64_t bytes = 0, want = 0;

	if (kind == 0) {
		CU_ASSERT_EQUAL(mds_pending_release_all(t, &bytes), 0);
		for (int v = 0; v < VB; v++)
			if (M.owner[v] == PEND_OWN) {
				M.owner[v] = FREE_OWN;
				want++;
			}
		MCHECK(bytes == want * BS, "release_all %llu, model %llu", (unsigned long long)bytes,
		       (unsigned long long)(want * BS));
	} else if (kind == 1) {
		/* By file: sometimes a file already removed (its pieces remember its fileid). */
		uint64_t fid = 0;
		for (int v = rnd(VB), k = 0; k < VB; k++, v = (v + 1) % VB)
			if (M.owner[v] == PEND_OWN) {
				fid = M.pend_fid[v];
				break;
			}
		if (!fid)
			return;
		CU_ASSERT_EQUAL(mds_pending_release_file(t, fid, &bytes), 0);
		for (int v = 0; v < VB; v++)
			if (M.owner[v] == PEND_OWN && M.pend_fid[v] == fid) {
				M.owner[v] = FREE_OWN;
				want++;
			}
		MCHECK(bytes == want * BS, "release_file %llu, model %llu", (unsigned long long)bytes,
		       (unsigned long long)(want * BS));
	} else {
		/* A range: a run of pending blocks (across pieces), or one that is not wholly pending. */
		int v = rnd(VB), len = 1, whole = 1;
		for (int k = 0; k < VB && M.owner[v] != PEND_OWN; k++)
			v = (v + 1) % VB;
		if (M.owner[v] != PEND_OWN)
			return;
		while (v + len < VB && M.owner[v + len] == PEND_OWN && rnd(8))
			len++;
		if (!rnd(4) && v + len < VB)
			len++;
		for (int b = v; b < v + len; b++)
			whole &= M.owner[b] == PEND_OWN;
		rc = mds_pending_release(t, (uint64_t)v * BS, (uint64_t)len * BS);
		MCHECK(rc == (whole ? 0 : -ENOENT), "release range: %d, model whole %d", rc, whole);
		if (!rc)
			for (int b = v; b < v + len; b++)
				M.owner[b] = FREE_OWN;
	}
}

static void test_random_model(void)
{
	const char *env = getenv("PNFS_SEED");
	int ops = 6000, aborts = 0, commits = 0, full_checks = 0;

	rseed = env ? (unsigned)strtoul(env, NULL, 0) : 20240601u;
	model_failures = 0;
	begin("ext-model", (uint64_t)VB * BS, 8 * BS);
	model_init();
	for (int i = 0; i < NF; i++)
		model_newfile(i);
	CU_ASSERT_EQUAL_FATAL(mds_txn_commit(t), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	SNAP = M;
	for (int n = 0; n < ops && model_failures == 0; n++) {
		int r = rnd(100);
		if (r < 30)
			op_alloc();
		else if (r < 45)
			op_set_state();
		else if (r < 57)
			op_commit();
		else if (r < 74)
			op_punch();
		else if (r < 82)
			op_truncate();
		else if (r < 88)
			op_remove();
		else
			op_release();
		verify_stats();
		if (n % 97 == 0) {
			for (int i = 0; i < NF; i++)
				verify_file(i);
			CU_ASSERT_EQUAL(ts_check(st, t), 0);
			full_checks++;
		}
		if (rnd(40) == 0) {
			CU_ASSERT_EQUAL_FATAL(mds_txn_commit(t), 0);
			CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
			SNAP = M;
			commits++;
		} else if (rnd(90) == 0) {
			/* Abort: the store goes back to the last commit, and so does the model. */
			mds_txn_abort(t);
			CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
			M = SNAP;
			aborts++;
			for (int i = 0; i < NF; i++)
				verify_file(i);
		}
		if (n == ops / 2) {
			/* Through a close and reopen. */
			CU_ASSERT_EQUAL_FATAL(mds_txn_commit(t), 0);
			mds_store_close(st);
			CU_ASSERT_EQUAL_FATAL(mds_store_open(sdir, NULL, &st), 0);
			CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
			SNAP = M;
		}
	}
	for (int i = 0; i < NF; i++)
		verify_file(i);
	CU_ASSERT(commits > 50);
	CU_ASSERT(aborts > 10);
	CU_ASSERT(full_checks > 50);
	if (model_failures)
		fprintf(stderr, "model: seed %u\n", rseed);
	end();
}

TEST_SUITE(store_ext, "mds/store_ext", NULL, NULL,
	   { "alloc_contiguous_aligned", test_alloc_contiguous_aligned },
	   { "states_split_merge_commit", test_states_split_merge_commit },
	   { "map_and_lookup", test_map_and_lookup },
	   { "punch_and_pending", test_punch_and_pending },
	   { "fragmented", test_fragmented },
	   { "best_fit", test_best_fit },
	   { "random_model", test_random_model });
