/* The layout types the MDS grants, in one table: block volume (RFC 5663) and SCSI (RFC 8154).
 * Both hand out the same extents over the same pool volume; they differ in how the volume is
 * described (signatures or SCSI designators with the client's PR key), what LAYOUTCOMMIT carries,
 * and whether a revoked layout fences its client. Only this table names the types. */
#include "mds/layout_int.h"

#include <stddef.h>

static int block_offered(const struct mds_server *srv)
{
	(void)srv;
	return 1;
}

/* SCSI layouts need fencing: a client that does not return a layout is preempted on every LUN. */
static int scsi_offered(const struct mds_server *srv)
{
	return srv->layouts && srv->layouts->fence;
}

static uint32_t block_devid_gen(const struct mds_server *srv)
{
	(void)srv;
	return 1;
}

static uint32_t scsi_devid_gen(const struct mds_server *srv)
{
	return (uint32_t)srv->boot ? (uint32_t)srv->boot : 1;
}

/* Its I/O through the MDS afterwards is worth a note (op_data.c). */
static void scsi_granted(struct mds_client *clp)
{
	clp->scsi_layout_given = 1;
}

static const struct mds_lo_type lo_types[MDS_LO_NTYPES] = {
	{
		.type = LAYOUT4_BLOCK_VOLUME,
		.name = "block",
		.index = 0,
		.fences = 0,
		.offered = block_offered,
		.devid_gen = block_devid_gen,
		.dev_addr = mds_lo_block_dev_addr,
		.decode_update = mds_lo_block_decode_update,
		.granted = NULL,
	},
	{
		.type = LAYOUT4_SCSI,
		.name = "scsi",
		.index = 1,
		.fences = 1,
		.offered = scsi_offered,
		.devid_gen = scsi_devid_gen,
		.dev_addr = mds_lo_scsi_dev_addr,
		.decode_update = mds_lo_scsi_decode_update,
		.granted = scsi_granted,
	},
};

const struct mds_lo_type *mds_lo_type(layouttype4 type)
{
	for (unsigned i = 0; i < MDS_LO_NTYPES; i++)
		if (lo_types[i].type == type)
			return &lo_types[i];
	return NULL;
}

const struct mds_lo_type *mds_lo_type_offered(const struct mds_server *srv, layouttype4 type)
{
	const struct mds_lo_type *t = mds_lo_type(type);

	return t && t->offered(srv) ? t : NULL;
}

const struct mds_lo_type *mds_lo_type_at(unsigned i)
{
	return i < MDS_LO_NTYPES ? &lo_types[i] : NULL;
}
