/* The client's layout-type table: which type it takes from what the server offers (SCSI first,
 * block with --no-scsi or when SCSI is not offered, nothing it does not speak), and the per-type
 * answers the data path relies on (SCSI devices are keyed and registered before I/O). */
#include "client/layout_int.h"
#include "tests/harness.h"

#include <stdlib.h>

static struct pnfs_context *ctx_new(int no_scsi)
{
	struct pnfs_context *ctx = calloc(1, sizeof(*ctx));

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	ctx->opts.no_scsi = no_scsi;
	return ctx;
}

static void choose(void)
{
	const layouttype4 both[] = { LAYOUT4_BLOCK_VOLUME, LAYOUT4_SCSI };
	const layouttype4 both_rev[] = { LAYOUT4_SCSI, LAYOUT4_BLOCK_VOLUME };
	const layouttype4 scsi_only[] = { LAYOUT4_SCSI };
	const layouttype4 files_block[] = { LAYOUT4_NFSV4_1_FILES, LAYOUT4_BLOCK_VOLUME };
	const layouttype4 files_only[] = { LAYOUT4_NFSV4_1_FILES };
	struct pnfs_context *ctx = ctx_new(0), *noscsi = ctx_new(1);

	CU_ASSERT_EQUAL(pc_lo_type_choose(ctx, both, 2), LAYOUT4_SCSI);
	CU_ASSERT_EQUAL(pc_lo_type_choose(ctx, both_rev, 2), LAYOUT4_SCSI);
	CU_ASSERT_EQUAL(pc_lo_type_choose(noscsi, both, 2), LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(pc_lo_type_choose(noscsi, both_rev, 2), LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(pc_lo_type_choose(noscsi, scsi_only, 1), 0);
	CU_ASSERT_EQUAL(pc_lo_type_choose(ctx, scsi_only, 1), LAYOUT4_SCSI);
	CU_ASSERT_EQUAL(pc_lo_type_choose(ctx, files_block, 2), LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(pc_lo_type_choose(ctx, files_only, 1), 0);
	CU_ASSERT_EQUAL(pc_lo_type_choose(ctx, NULL, 0), 0);
	free(ctx);
	free(noscsi);
}

static void rows(void)
{
	const struct pc_lo_type *b = pc_lo_type(LAYOUT4_BLOCK_VOLUME), *s = pc_lo_type(LAYOUT4_SCSI);

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NULL(pc_lo_type(LAYOUT4_NFSV4_1_FILES));
	CU_ASSERT_PTR_NULL(pc_lo_type(0));
	CU_ASSERT_EQUAL(b->type, LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(s->type, LAYOUT4_SCSI);
	/* SCSI devices carry our PR key: registered before I/O, renamed under a new client ID */
	CU_ASSERT(s->keyed && s->prepare);
	CU_ASSERT(!b->keyed && !b->prepare);
	CU_ASSERT_PTR_NOT_NULL(b->encode_update);
	CU_ASSERT_PTR_NOT_NULL(s->encode_update);
}

TEST_SUITE(client_layout_type, "client/layout_type", NULL, NULL,
	   { "choose", choose },
	   { "rows", rows });
