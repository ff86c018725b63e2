/* The layout types the client uses, in one table: block volume (RFC 5663) and SCSI (RFC 8154).
 * Their extents are the same; they differ in what LAYOUTCOMMIT carries (extents or ranges) and in
 * the SCSI devices' persistent-reservation key, registered before any I/O and renewed with a new
 * client ID. Only this table names the types. */
#include "client/layout_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* RFC 5663 §2.3.2: the extents written, as READ_WRITE_DATA, on the device they were written to. */
static int block_encode_update(struct pc_compound *c, const struct pc_dirty *d, size_t n, size_t k,
			       layoutupdate4 *out)
{
	pnfs_block_extent4 *ev = pc_alloc(c, sizeof(*ev) * (k ? k : 1));
	pnfs_block_layoutupdate4 lu;
	size_t j = 0;

	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!d[i].invalid)
			continue;
		memcpy(ev[j].bex_vol_id, d[i].dev->id, NFS4_DEVICEID4_SIZE);
		ev[j].bex_file_offset = d[i].foff;
		ev[j].bex_length = d[i].len;
		ev[j].bex_storage_offset = d[i].soff;
		ev[j].bex_state = PNFS_BLOCK_READ_WRITE_DATA;
		j++;
	}
	lu.blu_commit_list.blu_commit_list_val = ev;
	lu.blu_commit_list.blu_commit_list_len = (u_int)j;
	return proto_block_layoutupdate_encode(&lu, out);
}

/* RFC 8154 §2.4.2: only the file ranges written; the server knows where they are. */
static int scsi_encode_update(struct pc_compound *c, const struct pc_dirty *d, size_t n, size_t k,
			      layoutupdate4 *out)
{
	pnfs_scsi_range4 *rv = pc_alloc(c, sizeof(*rv) * (k ? k : 1));
	pnfs_scsi_layoutupdate4 lu;
	size_t j = 0;

	if (!rv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!d[i].invalid)
			continue;
		rv[j].sr_file_offset = d[i].foff;
		rv[j].sr_length = d[i].len;
		j++;
	}
	lu.slu_commit_list.slu_commit_list_val = rv;
	lu.slu_commit_list.slu_commit_list_len = (u_int)j;
	return proto_scsi_layoutupdate_encode(&lu, out);
}

/* RFC 8154 §2.4: register our key on every LUN before any I/O. */
static int scsi_prepare(struct blkmap_ctx *bm, struct blkmap_vol *vol, char *err, size_t errlen)
{
	int rc = blkmap_vol_pr_register(vol);

	if (rc < 0)
		snprintf(err, errlen, "PERSISTENT RESERVE OUT REGISTER failed: %s", blkmap_errstr(bm));
	return rc;
}

/* --no-scsi (or the config's no_scsi) keeps to block layouts. */
static int scsi_allowed(const struct pnfs_context *ctx)
{
	return !ctx->opts.no_scsi;
}

static const struct pc_lo_type lo_types[] = {
	{
		.type = LAYOUT4_BLOCK_VOLUME,
		.name = "block",
		.keyed = 0,
		.preference = 1,
		.allowed = NULL,
		.prepare = NULL,
		.encode_update = block_encode_update,
	},
	{
		.type = LAYOUT4_SCSI,
		.name = "scsi",
		.keyed = 1,
		.preference = 2,
		.allowed = scsi_allowed,
		.prepare = scsi_prepare,
		.encode_update = scsi_encode_update,
	},
};

const struct pc_lo_type *pc_lo_type(layouttype4 type)
{
	for (size_t i = 0; i < sizeof(lo_types) / sizeof(lo_types[0]); i++)
		if (lo_types[i].type == type)
			return &lo_types[i];
	return NULL;
}

layouttype4 pc_lo_type_choose(const struct pnfs_context *ctx, const layouttype4 *offered, unsigned n)
{
	const struct pc_lo_type *best = NULL;

	for (unsigned i = 0; i < n; i++) {
		const struct pc_lo_type *t = pc_lo_type(offered[i]);
		if (!t || (t->allowed && !t->allowed(ctx)))
			continue;
		if (!best || t->preference > best->preference)
			best = t;
	}
	return best ? best->type : (layouttype4)0;
}
