/* Block (RFC 5663) and SCSI (RFC 8154) layout bodies to and from the opaques NFSv4.1 carries them
 * in: layout_content4.loc_body (LAYOUTGET), device_addr4.da_addr_body (GETDEVICEINFO) and
 * layoutupdate4.lou_body (LAYOUTCOMMIT). Decoders check the body's shape before anything is
 * allocated (an extent list is exactly 4 + 44 bytes per extent), reject extent states and volume
 * references the RFCs do not allow, and reject volume graphs with cycles. */
#ifndef PROTO_LAYOUT_H
#define PROTO_LAYOUT_H

#include "nfs41.h"

/* Bytes of one pnfs_block_extent4 / pnfs_scsi_extent4 and of one pnfs_scsi_range4 on the wire. */
#define PROTO_BLOCK_EXTENT_XDR_SIZE (NFS4_DEVICEID4_SIZE + 3 * 8 + 4)
#define PROTO_SCSI_RANGE_XDR_SIZE   (2 * 8)

/*
 * Encoders set the type (LAYOUT4_BLOCK_VOLUME or LAYOUT4_SCSI) and allocate the body; the caller
 * frees it with proto_layout_content_free() / proto_device_addr_free() / proto_layoutupdate_free().
 * They return 0, -EINVAL (an extent state out of range, a volume index out of range or a cycle,
 * a list over its cap), -ENOMEM.
 *
 * Decoders return 0, -EINVAL (the container is of another layout type: the server answers
 * NFS4ERR_UNKNOWN_LAYOUTTYPE or NFS4ERR_BADLAYOUT), -EBADMSG (a malformed body: truncated, bytes
 * left over, over a cap, an unknown volume type or extent state, a volume index out of range, a
 * cycle, an empty volume array), -ENOMEM. out must be zeroed; on success the caller frees it with
 * the matching proto_*_free(); on failure nothing is left to free.
 */
int proto_block_layout_encode(const pnfs_block_layout4 *bl, layout_content4 *out);
int proto_block_layout_decode(const layout_content4 *in, pnfs_block_layout4 *out);
void proto_block_layout_free(pnfs_block_layout4 *bl);

int proto_block_deviceaddr_encode(const pnfs_block_deviceaddr4 *da, device_addr4 *out);
int proto_block_deviceaddr_decode(const device_addr4 *in, pnfs_block_deviceaddr4 *out);
void proto_block_deviceaddr_free(pnfs_block_deviceaddr4 *da);

int proto_block_layoutupdate_encode(const pnfs_block_layoutupdate4 *lu, layoutupdate4 *out);
int proto_block_layoutupdate_decode(const layoutupdate4 *in, pnfs_block_layoutupdate4 *out);
void proto_block_layoutupdate_free(pnfs_block_layoutupdate4 *lu);

int proto_scsi_layout_encode(const pnfs_scsi_layout4 *sl, layout_content4 *out);
int proto_scsi_layout_decode(const layout_content4 *in, pnfs_scsi_layout4 *out);
void proto_scsi_layout_free(pnfs_scsi_layout4 *sl);

int proto_scsi_deviceaddr_encode(const pnfs_scsi_deviceaddr4 *da, device_addr4 *out);
int proto_scsi_deviceaddr_decode(const device_addr4 *in, pnfs_scsi_deviceaddr4 *out);
void proto_scsi_deviceaddr_free(pnfs_scsi_deviceaddr4 *da);

int proto_scsi_layoutupdate_encode(const pnfs_scsi_layoutupdate4 *lu, layoutupdate4 *out);
int proto_scsi_layoutupdate_decode(const layoutupdate4 *in, pnfs_scsi_layoutupdate4 *out);
void proto_scsi_layoutupdate_free(pnfs_scsi_layoutupdate4 *lu);

/*
 * One decoded extent for either layout type: RFC 8154's pnfs_scsi_extent4 has the fields, states
 * and wire shape of RFC 5663's pnfs_block_extent4, so callers work on this and name the layout type
 * only when encoding. state is a pnfs_block_extent_state4 (the SCSI states have the same values).
 */
struct proto_extent {
	unsigned char vol_id[NFS4_DEVICEID4_SIZE];
	uint64_t file_offset, length, storage_offset;
	uint32_t state;
};

/* A layout_content4 of type (LAYOUT4_BLOCK_VOLUME or LAYOUT4_SCSI) carrying e[0..n); the caller
 * frees out with proto_layout_content_free(). 0, -EINVAL (another layout type, a state out of
 * range, over the cap), -ENOMEM. */
int proto_layout_extents_encode(layouttype4 type, const struct proto_extent *e, size_t n, layout_content4 *out);
/* The extents of a block or SCSI layout_content4: *e (caller frees with free(), never NULL on
 * success) and *n. The errors of the typed decoders above; -EINVAL for a layout type we do not
 * speak. */
int proto_layout_extents_decode(const layout_content4 *in, struct proto_extent **e, size_t *n);

/* Free the bodies the encoders allocated. */
void proto_layout_content_free(layout_content4 *c);
void proto_device_addr_free(device_addr4 *d);
void proto_layoutupdate_free(layoutupdate4 *u);

#endif
