/* The layout data path end to end on a real 4-LUN tgtd lab with pnfs-mds: a client writes through
 * its layout straight to the LUNs (blkmap, at the extents the layout gave), LAYOUTCOMMITs, and a
 * second client reads the same bytes through its own layout; before the commit the second client
 * sees the old size and zeros, never the new bytes, and never the stale bytes of a removed file
 * whose blocks a new file got; a layout reclaimed with LAYOUTCOMMIT after a restart keeps what was
 * written. With SCSI layouts: each client registers its own key, an unregistered initiator cannot
 * write, a remove recalls the layout, and a client that does not return it in time is fenced
 * (PREEMPT AND ABORT): its next write fails with RESERVATION CONFLICT at the target; a client whose
 * lease expires is fenced the same way and the blocks it covered are released only then. */
#include "blkmap/blkmap.h"
#include "proto/layout.h"
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/layout_util.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BS 4096ull
#define MAXC 0xffff
#define BLK LAYOUT4_BLOCK_VOLUME
#define SCSI LAYOUT4_SCSI
#define RD LAYOUTIOMODE4_READ
#define RW LAYOUTIOMODE4_RW
#define ANY LAYOUTIOMODE4_ANY

static struct blkmap_ctx *ctx_for(const char *initiator)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;

	blkmap_ctx_opts_init(&o);
	o.initiator_name = initiator;
	o.timeout_ms = 5000;
	if (blkmap_ctx_create(&o, &ctx) != 0)
		return NULL;
	return ctx;
}

static struct nc *client(const struct test_mds *m, const char *owner)
{
	struct nc *c = nc_connect(m->port);

	if (c && nc_setup(c, owner) != 0) {
		nc_free(c);
		c = NULL;
	}
	return c;
}

/* Write buf (len bytes at file offset 0) through the layout's extents, whole blocks: the tail of
 * the last block is zero-filled, as a client must for never-written blocks. */
static int write_through(struct blkmap_vol *vol, const struct lt_layout *l, const unsigned char *buf, size_t len)
{
	size_t padded = (len + BS - 1) / BS * BS;
	unsigned char *b = calloc(1, padded);
	int rc = 0;

	if (!b)
		return -ENOMEM;
	memcpy(b, buf, len);
	for (unsigned i = 0; i < l->n && !rc; i++) {
		const pnfs_block_extent4 *e = &l->ext[i];
		uint64_t a = e->bex_file_offset, z = e->bex_file_offset + e->bex_length;
		if (a >= padded)
			continue;
		if (z > padded)
			z = padded;
		rc = lt_extent_pwrite(vol, e, a, b + a, z - a);
	}
	free(b);
	return rc;
}

static int read_through(struct blkmap_vol *vol, const struct lt_layout *l, unsigned char *buf, size_t len)
{
	int rc = 0;

	for (unsigned i = 0; i < l->n && !rc; i++) {
		const pnfs_block_extent4 *e = &l->ext[i];
		uint64_t a = e->bex_file_offset, z = e->bex_file_offset + e->bex_length;
		if (a >= len)
			continue;
		if (z > len)
			z = (len + BS - 1) / BS * BS;
		if (e->bex_state == PNFS_BLOCK_NONE_DATA || e->bex_state == PNFS_BLOCK_INVALID_DATA) {
			memset(buf + a, 0, (z > len ? len : z) - a);
			continue;
		}
		{
			unsigned char *t = malloc(z - a);
			if (!t)
				return -ENOMEM;
			rc = lt_extent_pread(vol, e, a, t, z - a);
			memcpy(buf + a, t, (z > len ? len : z) - a);
			free(t);
		}
	}
	return rc;
}

static void as_written(const struct lt_layout *l, pnfs_block_extent4 *out)
{
	for (unsigned i = 0; i < l->n; i++) {
		out[i] = l->ext[i];
		out[i].bex_state = PNFS_BLOCK_READ_WRITE_DATA;
	}
}

static int all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* ==== block layouts ========================================================================== */

/* Block-volume layouts only: the LUNs stay open to every initiator. A short grace after the restart
 * of the reclaim test. */
TMDS_SUITE(block_init, block_clean, 4, "16M", "--stripe-unit 64K", "--scsi-layouts no --grace-time 3")

static void test_write_commit_read(void)
{
	const size_t len = (1u << 20) + 5000;
	struct nc *c1 = client(mds, "data-writer"), *c2 = client(mds, "data-reader");
	struct blkmap_ctx *x1 = ctx_for("iqn.2024-01.test.pnfs:writer"), *x2 = ctx_for("iqn.2024-01.test.pnfs:reader");
	struct lt_layout *w = calloc(1, sizeof(*w)), *r = calloc(1, sizeof(*r));
	pnfs_block_extent4 *ext = calloc(LT_MAX_EXTENTS, sizeof(*ext));
	unsigned char *data = malloc(len), *back = calloc(1, len + BS);
	struct blkmap_vol *v1, *v2;
	struct nc_fh root, f1, f2;
	struct nc_attrs at;
	stateid4 o1, o2;
	uint64_t ns;
	size_t got;
	int present;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c1, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c1, &root, "data", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &f1, &o1), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c2, &root, "data", 0, OPEN4_SHARE_ACCESS_READ, 0, &f2, &o2), 0);
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c1, &f1, &(struct lt_get){ .type = BLK, .iomode = RW, .len = len,
			.minlen = len, .sid = &o1, .maxcount = MAXC }, w), 0);
	v1 = lt_device_volume(c1, x1, lab, w->ext[0].bex_vol_id, BLK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
	test_fill_random(data, len, 42);
	CU_ASSERT_EQUAL_FATAL(write_through(v1, w, data, len), 0);
	/* Written to the LUNs, not committed: the other client sees the old size and no bytes. */
	CU_ASSERT_EQUAL(nc_getattrs(c2, &f2, &at), 0);
	CU_ASSERT_EQUAL(at.size, 0);
	CU_ASSERT_EQUAL(nc_read(c2, &f2, &o2, 0, back, len, &got), 0);
	CU_ASSERT_EQUAL(got, 0);
	/* A READ layout would conflict with the writer's RW one: the writer is recalled. */
	CU_ASSERT_EQUAL(lt_layoutget(c2, &f2, &(struct lt_get){ .type = BLK, .iomode = RD, .len = len, .sid = &o2,
			.maxcount = MAXC }, r), NFS4ERR_LAYOUTTRYLATER);
	nc_serve_callbacks(c1, 2000, 1);
	CU_ASSERT_EQUAL(c1->cb_layoutrecalls, 1);
	/* The writer commits what it wrote, then returns. */
	as_written(w, ext);
	/* (with the stateid it had before the recall bumped the seqid) */
	CU_ASSERT_EQUAL(lt_layoutcommit(c1, &f1, &(struct lt_commit){ .type = BLK, .sid = &w->sid, .len = len,
			.last_write = (int64_t)len - 1, .ext = ext, .n = w->n, .newsize = &ns }), 0);
	CU_ASSERT_EQUAL(ns, len);
	{
		stateid4 s = c1->cb_last_layoutrecall.clora_recall.layoutrecall4_u.lor_layout.lor_stateid;
		CU_ASSERT_EQUAL(lt_layoutreturn_file(c1, &f1, BLK, ANY, 0, NFS4_UINT64_MAX, &s, &present), 0);
	}
	/* Now the reader's own layout points at the same blocks, and its own direct read gives the
	 * bytes. */
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c2, &f2, &(struct lt_get){ .type = BLK, .iomode = RD, .len = len,
			.minlen = len, .sid = &o2, .maxcount = MAXC }, r), 0);
	CU_ASSERT_EQUAL(r->ext[0].bex_state, PNFS_BLOCK_READ_DATA);
	CU_ASSERT_EQUAL(r->ext[0].bex_storage_offset, w->ext[0].bex_storage_offset);
	v2 = lt_device_volume(c2, x2, lab, r->ext[0].bex_vol_id, BLK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v2);
	memset(back, 0xaa, len);
	CU_ASSERT_EQUAL(read_through(v2, r, back, len), 0);
	CU_ASSERT(memcmp(back, data, len) == 0);
	/* Through the MDS too, ending where the writer's last write did. */
	memset(back, 0, len + BS);
	CU_ASSERT_EQUAL(nc_read(c2, &f2, &o2, 0, back, len + BS, &got), 0);
	CU_ASSERT_EQUAL(got, len);
	CU_ASSERT(memcmp(back, data, len) == 0);
	blkmap_vol_free(v1);
	blkmap_vol_free(v2);
	nc_close(c1, &f1, &o1);
	nc_close(c2, &f2, &o2);
	nc_free(c1);
	nc_free(c2);
	blkmap_ctx_destroy(x1);
	blkmap_ctx_destroy(x2);
	free(w);
	free(r);
	free(ext);
	free(data);
	free(back);
}

/* Each volume block of "old" holds its own volume offset, so stale data is recognisable. */
static void stamp(unsigned char *b, size_t len, uint64_t vol_off)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = (vol_off + i) ^ 0x57a1e57a1e000000ull;
		memcpy(b + i, &v, 8);
	}
}

static void test_no_stale_data(void)
{
	struct nc *c1 = client(mds, "stale-writer"), *c2 = client(mds, "stale-reader");
	struct blkmap_ctx *x = ctx_for("iqn.2024-01.test.pnfs:stale");
	struct lt_layout *l = calloc(1, sizeof(*l));
	pnfs_block_extent4 *ext = calloc(LT_MAX_EXTENTS, sizeof(*ext));
	struct blkmap_vol *vol = NULL;
	struct nc_fh root, fo, fn, fr;
	stateid4 oo, on, orr;
	uint64_t off = 0, filled = 0;
	const uint64_t windows[3] = { 4u << 20, 64u << 10, BS };
	unsigned char *buf = malloc(4u << 20), *back = malloc(2u << 20);
	int stale = 0;
	size_t got;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c1, &root), 0);
	/* "old" takes every free block of the pool and fills it, committed. */
	CU_ASSERT_EQUAL_FATAL(nc_open(c1, &root, "old", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fo, &oo), 0);
	for (int w = 0; w < 3; w++) {
		for (;;) {
			int rc = lt_layoutget(c1, &fo, &(struct lt_get){ .type = BLK, .iomode = RW, .off = off,
					.len = windows[w], .minlen = windows[w], .sid = filled ? &l->sid : &oo,
					.maxcount = MAXC }, l);
			if (rc == NFS4ERR_NOSPC)
				break;
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			if (!vol) {
				vol = lt_device_volume(c1, x, lab, l->ext[0].bex_vol_id, BLK);
				CU_ASSERT_PTR_NOT_NULL_FATAL(vol);
			}
			for (unsigned i = 0; i < l->n; i++) {
				const pnfs_block_extent4 *e = &l->ext[i];
				CU_ASSERT_EQUAL(e->bex_state, PNFS_BLOCK_INVALID_DATA);
				stamp(buf, e->bex_length, e->bex_storage_offset);
				CU_ASSERT_EQUAL_FATAL(lt_extent_pwrite(vol, e, e->bex_file_offset, buf, e->bex_length), 0);
			}
			as_written(l, ext);
			CU_ASSERT_EQUAL_FATAL(lt_layoutcommit(c1, &fo, &(struct lt_commit){ .type = BLK, .sid = &l->sid,
					.off = off, .len = windows[w], .last_write = (int64_t)(off + windows[w] - 1),
					.ext = ext, .n = l->n }), 0);
			off += windows[w];
			filled += windows[w];
		}
	}
	CU_ASSERT(filled > (40u << 20)); /* most of the 60 MiB volume */
	/* Gone: closed (layouts returned) and removed, its blocks free again. */
	CU_ASSERT_EQUAL(nc_close(c1, &fo, &oo), 0);
	CU_ASSERT_EQUAL(nc_remove(c1, &root, "old"), 0);
	/* A new file gets those very blocks (there are no others): on the LUNs they still hold the
	 * old file's bytes ... */
	CU_ASSERT_EQUAL_FATAL(nc_open(c1, &root, "new", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fn, &on), 0);
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c1, &fn, &(struct lt_get){ .type = BLK, .iomode = RW, .len = 2u << 20,
			.minlen = 2u << 20, .sid = &on, .maxcount = MAXC }, l), 0);
	for (unsigned i = 0; i < l->n; i++) {
		const pnfs_block_extent4 *e = &l->ext[i];
		unsigned char want[64];
		CU_ASSERT_EQUAL(e->bex_state, PNFS_BLOCK_INVALID_DATA);
		CU_ASSERT_EQUAL(lt_extent_pread(vol, e, e->bex_file_offset, back, BS), 0);
		stamp(want, sizeof(want), e->bex_storage_offset);
		stale |= memcmp(back, want, sizeof(want)) == 0;
	}
	CU_ASSERT(stale);
	/* ... but the file is 2 MiB of zeros to everybody (the writer set the size, wrote nothing). */
	CU_ASSERT_EQUAL(lt_layoutcommit(c1, &fn, &(struct lt_commit){ .type = BLK, .sid = &l->sid, .len = 2u << 20,
			.last_write = (2 << 20) - 1, .body_empty = 1 }), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c2, &root, "new", 0, OPEN4_SHARE_ACCESS_READ, 0, &fr, &orr), 0);
	memset(back, 0xee, 2u << 20);
	CU_ASSERT_EQUAL(nc_read(c2, &fr, &orr, 0, back, 2u << 20, &got), 0);
	CU_ASSERT_EQUAL(got, 2u << 20);
	CU_ASSERT(all_zero(back, got));
	/* A READ layout never points a reader at those blocks: holes. */
	{
		struct lt_layout *rl = calloc(1, sizeof(*rl));
		CU_ASSERT_EQUAL_FATAL(lt_layoutget(c1, &fn, &(struct lt_get){ .type = BLK, .iomode = RD,
				.len = 2u << 20, .sid = &l->sid, .maxcount = MAXC }, rl), 0);
		for (unsigned i = 0; i < rl->n; i++)
			CU_ASSERT_EQUAL(rl->ext[i].bex_state, PNFS_BLOCK_NONE_DATA);
		free(rl);
	}
	nc_close(c1, &fn, &on);
	nc_close(c2, &fr, &orr);
	nc_remove(c1, &root, "new");
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(x);
	nc_free(c1);
	nc_free(c2);
	free(l);
	free(ext);
	free(buf);
	free(back);
}

static int reclaim_complete(struct nc *c)
{
	nfs_argop4 op;
	struct proto_compound_res r;
	int rc;

	nc_op_simple(&op, OP_RECLAIM_COMPLETE);
	op.nfs_argop4_u.opreclaim_complete.rca_one_fs = FALSE;
	rc = nc_seq(c, &op, 1, &r);
	if (rc == 0)
		rc = (int)r.res.status;
	proto_compound_res_free(&r);
	return rc;
}

/* Written through a layout, the server restarts before LAYOUTCOMMIT: during grace the client
 * reclaims with LAYOUTCOMMIT(reclaim) and the data is the file's. Runs last: the grace period
 * after the restart keeps new layouts away for a while. */
static void test_reclaim_after_restart(void)
{
	const size_t len = 100000;
	struct nc *c = client(mds, "reclaimer");
	struct blkmap_ctx *x = ctx_for("iqn.2024-01.test.pnfs:reclaimer");
	struct lt_layout *l = calloc(1, sizeof(*l)), *l2 = calloc(1, sizeof(*l2));
	pnfs_block_extent4 *ext = calloc(LT_MAX_EXTENTS, sizeof(*ext));
	unsigned char *data = malloc(len), *back = calloc(1, len + BS);
	struct blkmap_vol *vol;
	struct nc_fh root, fh;
	stateid4 open, none = { 0 };
	uint64_t ns;
	size_t got;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c, &root, "reclaim", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &open), 0);
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c, &fh, &(struct lt_get){ .type = BLK, .iomode = RW, .len = len,
			.minlen = len, .sid = &open, .maxcount = MAXC }, l), 0);
	vol = lt_device_volume(c, x, lab, l->ext[0].bex_vol_id, BLK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vol);
	test_fill_random(data, len, 77);
	CU_ASSERT_EQUAL_FATAL(write_through(vol, l, data, len), 0);
	nc_free(c);
	CU_ASSERT_EQUAL_FATAL(tmds_stop(mds, SIGTERM), 0);
	CU_ASSERT_EQUAL_FATAL(tmds_start(mds), 0);
	c = nc_connect(mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(nc_setup_noreclaim(c, "reclaimer"), 0);
	/* Grace: no new layouts; the old one's writes may be committed with reclaim set. */
	CU_ASSERT_EQUAL(lt_layoutget(c, &fh, &(struct lt_get){ .type = BLK, .iomode = RW, .len = len, .sid = &open,
			.maxcount = MAXC }, l2), NFS4ERR_GRACE);
	CU_ASSERT_EQUAL(lt_layoutcommit(c, &fh, &(struct lt_commit){ .type = BLK, .sid = &l->sid, .len = len,
			.last_write = (int64_t)len - 1, .ext = ext, .body_empty = 1 }), NFS4ERR_GRACE);
	as_written(l, ext);
	CU_ASSERT_EQUAL(lt_layoutcommit(c, &fh, &(struct lt_commit){ .type = BLK, .sid = &none, .len = len,
			.last_write = (int64_t)len - 1, .ext = ext, .n = l->n, .reclaim = 1, .newsize = &ns }), 0);
	CU_ASSERT_EQUAL(ns, len);
	CU_ASSERT_EQUAL(reclaim_complete(c), 0);
	CU_ASSERT_EQUAL(lt_layoutcommit(c, &fh, &(struct lt_commit){ .type = BLK, .sid = &none, .len = len,
			.last_write = (int64_t)len - 1, .ext = ext, .n = l->n, .reclaim = 1, .newsize = &ns }),
			NFS4ERR_NO_GRACE);
	/* After grace (3 s, others did not come back), read it. */
	lt_idle(c, 3500);
	CU_ASSERT_EQUAL_FATAL(nc_open(c, &root, "reclaim", 0, OPEN4_SHARE_ACCESS_READ, 0, &fh, &open), 0);
	CU_ASSERT_EQUAL(nc_read(c, &fh, &open, 0, back, len + BS, &got), 0);
	CU_ASSERT_EQUAL(got, len);
	CU_ASSERT(memcmp(back, data, len) == 0);
	nc_close(c, &fh, &open);
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(x);
	nc_free(c);
	free(l);
	free(l2);
	free(ext);
	free(data);
	free(back);
}

TEST_SUITE(layout_data, "integration/layout_data", block_init, block_clean,
	   { "write_commit_read", test_write_commit_read },
	   { "no_stale_data", test_no_stale_data },
	   { "reclaim_after_restart", test_reclaim_after_restart });

/* ==== SCSI layouts and fencing ================================================================= */

static struct test_lab *slab;
static struct test_mds *smds;
static int sport;
#define LEASE_S 3

static int scsi_init(void)
{
	char why[64];

	sport = test_free_port();
	/* forced on: tgt refuses APTPL, so by default the server would offer no SCSI layouts */
	smds = tmds_lab_up(&slab, 4, "16M", NULL, "--stripe-unit 64K", why, sizeof(why),
			  "--lease-time %d --metrics-port %d --scsi-layouts yes", LEASE_S, sport);
	return !smds;
}

static int scsi_clean(void)
{
	return tmds_lab_down(&slab, &smds);
}

static void test_scsi_remove_fence(void)
{
	const size_t len = 256u << 10;
	struct nc *c1 = client(smds, "scsi-a"), *c2 = client(smds, "scsi-b");
	struct blkmap_ctx *x1 = ctx_for("iqn.2024-01.test.pnfs:scsi-a"), *x2 = ctx_for("iqn.2024-01.test.pnfs:scsi-b");
	struct blkmap_ctx *x3 = ctx_for("iqn.2024-01.test.pnfs:stranger");
	struct lt_layout *l = calloc(1, sizeof(*l)), *l2 = calloc(1, sizeof(*l2));
	pnfs_block_extent4 *ext = calloc(LT_MAX_EXTENTS, sizeof(*ext));
	unsigned char *data = malloc(len), blk[4096];
	struct blkmap_vol *v1, *v2;
	struct blkmap_dev *raw = NULL;
	struct nc_fh root, f1, f2;
	stateid4 o1, o2;
	nfsstat4 code;
	uint64_t ns;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
	CU_ASSERT_EQUAL(lt_metric(sport, "pnfs_mds_scsi_fencing"), 0);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c1, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c1, &root, "scsi", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &f1, &o1), 0);
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c1, &f1, &(struct lt_get){ .type = SCSI, .iomode = RW, .len = len,
			.minlen = len, .sid = &o1, .maxcount = MAXC }, l), 0);
	CU_ASSERT_EQUAL(l->type, SCSI);
	/* The SCSI device address: LUNs by designator, with this client's key. The first one puts
	 * the pool under the MDS's reservation. */
	v1 = lt_device_volume(c1, x1, slab, l->ext[0].bex_vol_id, SCSI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
	CU_ASSERT_EQUAL(lt_metric(sport, "pnfs_mds_scsi_fencing"), 1);
	CU_ASSERT_EQUAL(blkmap_vol_type(v1, 0), BLKMAP_VOL_SCSI);
	CU_ASSERT_EQUAL(blkmap_vol_pr_key(v1, 0), (uint64_t)c1->clientid);
	test_fill_random(data, len, 9);
	/* Not registered yet: the reservation keeps even the layout holder out. */
	CU_ASSERT_EQUAL(write_through(v1, l, data, len), -EBADE);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_pr_register(v1), 0);
	CU_ASSERT_EQUAL_FATAL(write_through(v1, l, data, len), 0);
	as_written(l, ext);
	CU_ASSERT_EQUAL(lt_layoutcommit(c1, &f1, &(struct lt_commit){ .type = SCSI, .sid = &l->sid, .len = len,
			.last_write = (int64_t)len - 1, .ext = ext, .n = l->n, .newsize = &ns }), 0);
	CU_ASSERT_EQUAL(ns, len);
	/* Another client gets its own key; an initiator nobody registered cannot write at all. */
	CU_ASSERT_EQUAL_FATAL(nc_open(c2, &root, "scsi-b", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &f2, &o2), 0);
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c2, &f2, &(struct lt_get){ .type = SCSI, .iomode = RW, .len = 65536,
			.minlen = 65536, .sid = &o2, .maxcount = MAXC }, l2), 0);
	v2 = lt_device_volume(c2, x2, slab, l2->ext[0].bex_vol_id, SCSI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v2);
	CU_ASSERT_EQUAL(blkmap_vol_pr_key(v2, 0), (uint64_t)c2->clientid);
	CU_ASSERT_NOT_EQUAL(c1->clientid, c2->clientid);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_pr_register(v2), 0);
	test_fill_random(blk, sizeof(blk), 10);
	CU_ASSERT_EQUAL(blkmap_dev_open(x3, slab->urls[0], 0, &raw), 0);
	if (raw) {
		CU_ASSERT_EQUAL(blkmap_dev_pwrite(raw, blk, sizeof(blk), 1u << 20), -EBADE);
		CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(x3), "RESERVATION CONFLICT"));
		blkmap_dev_close(raw);
	}
	/* B removes the file A holds a layout of: A is recalled ... */
	CU_ASSERT_EQUAL(nc_remove(c2, &root, "scsi"), 0);
	nc_serve_callbacks(c1, 2000, 1);
	CU_ASSERT_EQUAL_FATAL(c1->cb_layoutrecalls, 1);
	CU_ASSERT_EQUAL(c1->cb_last_layoutrecall.clora_type, SCSI);
	CU_ASSERT_EQUAL(c1->cb_last_layoutrecall.clora_changed, TRUE);
	/* ... answers, but never returns it. After the recall timeout (the lease time) it is
	 * fenced: PREEMPT AND ABORT of its key on every LUN, its layout revoked. */
	CU_ASSERT_EQUAL(write_through(v1, l, data, BS), 0);
	for (int i = 0; i < (LEASE_S + 3) * 4 && lt_metric(sport, "pnfs_mds_fenced_clients_total") < 1; i++) {
		lt_idle(c1, 125);
		lt_idle(c2, 125);
	}
	CU_ASSERT_EQUAL(lt_metric(sport, "pnfs_mds_fenced_clients_total"), 1);
	CU_ASSERT_EQUAL(write_through(v1, l, data, BS), -EBADE);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(v1), "RESERVATION CONFLICT"));
	lt_idle(c1, 50);
	CU_ASSERT(c1->seq_status_flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
	CU_ASSERT_EQUAL(lt_test_stateid(c1, &l->sid, &code), 0);
	CU_ASSERT_EQUAL(code, NFS4ERR_ADMIN_REVOKED);
	CU_ASSERT(lt_metric(sport, "pnfs_mds_layouts_revoked_total") >= 1);
	/* Only A was cut off: B still writes. */
	CU_ASSERT_EQUAL(write_through(v2, l2, blk, sizeof(blk)), 0);
	nc_close(c1, &f1, &o1);
	nc_close(c2, &f2, &o2);
	blkmap_vol_free(v1);
	blkmap_vol_free(v2);
	blkmap_ctx_destroy(x1);
	blkmap_ctx_destroy(x2);
	blkmap_ctx_destroy(x3);
	nc_free(c1);
	nc_free(c2);
	free(l);
	free(l2);
	free(ext);
	free(data);
}

/* A client that stops renewing loses its lease: fenced, and the blocks freed under its layout
 * (a truncate by another client) stay parked until then. */
static void test_scsi_lease_expiry(void)
{
	const size_t len = 128u << 10;
	struct nc *c1 = client(smds, "scsi-lease-a"), *c2 = client(smds, "scsi-lease-b");
	struct blkmap_ctx *x1 = ctx_for("iqn.2024-01.test.pnfs:lease-a");
	struct lt_layout *l = calloc(1, sizeof(*l));
	pnfs_block_extent4 *ext = calloc(LT_MAX_EXTENTS, sizeof(*ext));
	unsigned char *data = malloc(len);
	const char *pending = "pnfs_mds_pool_bytes{state=\"pending\"}";
	long long fenced0 = lt_metric(sport, "pnfs_mds_fenced_clients_total");
	struct blkmap_vol *v1;
	struct nc_fh root, f1, f2;
	stateid4 o1, o2;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c1, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c1, &root, "lease", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &f1, &o1), 0);
	CU_ASSERT_EQUAL_FATAL(lt_layoutget(c1, &f1, &(struct lt_get){ .type = SCSI, .iomode = RW, .len = len,
			.minlen = len, .sid = &o1, .maxcount = MAXC }, l), 0);
	v1 = lt_device_volume(c1, x1, slab, l->ext[0].bex_vol_id, SCSI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_pr_register(v1), 0);
	test_fill_random(data, len, 11);
	CU_ASSERT_EQUAL_FATAL(write_through(v1, l, data, len), 0);
	as_written(l, ext);
	CU_ASSERT_EQUAL(lt_layoutcommit(c1, &f1, &(struct lt_commit){ .type = SCSI, .sid = &l->sid, .len = len,
			.last_write = (int64_t)len - 1, .ext = ext, .n = l->n }), 0);
	/* B truncates: the blocks leave the file but A's layout still covers them. */
	CU_ASSERT_EQUAL_FATAL(nc_open(c2, &root, "lease", 0, OPEN4_SHARE_ACCESS_BOTH, 0, &f2, &o2), 0);
	CU_ASSERT_EQUAL(nc_setattr_size(c2, &f2, &o2, 0), 0);
	CU_ASSERT_EQUAL(lt_metric(sport, pending), (long long)len);
	/* A goes silent (no renewals, no answers): its lease runs out. */
	c1->cb_silent = 1;
	for (int i = 0; i < (LEASE_S + 4) * 4 && lt_metric(sport, "pnfs_mds_fenced_clients_total") <= fenced0; i++)
		lt_idle(c2, 250);
	CU_ASSERT_EQUAL(lt_metric(sport, "pnfs_mds_fenced_clients_total"), fenced0 + 1);
	CU_ASSERT_EQUAL(lt_metric(sport, pending), 0);
	CU_ASSERT_EQUAL(write_through(v1, l, data, BS), -EBADE);
	nc_close(c2, &f2, &o2);
	blkmap_vol_free(v1);
	blkmap_ctx_destroy(x1);
	nc_free(c1);
	nc_free(c2);
	free(l);
	free(ext);
	free(data);
}

TEST_SUITE(layout_fence, "integration/layout_fence", scsi_init, scsi_clean,
	   { "remove_recall_fence", test_scsi_remove_fence },
	   { "lease_expiry", test_scsi_lease_expiry });
