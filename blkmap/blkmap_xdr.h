/* blkmap volumes to and from the wire types proto/ generates: pnfs_block_deviceaddr4 (RFC 5663) and
 * pnfs_scsi_deviceaddr4 (RFC 8154), the device_addr4 of a GETDEVICEINFO reply, and the raw
 * da_addr_body bytes a pool directory keeps in volume.xdr. A separate header so that callers of
 * blkmap.h alone need not see the generated NFSv4.1 types.
 *
 * Conversions into a volume build it with the blkmap_vol_add_* calls and validate it, so whatever
 * a peer sends is held to the same rules (references backwards, each used once, stripe units,
 * bounded depth and counts); failures return -EINVAL (-E2BIG over a cap, -EBADMSG for malformed
 * bytes) with err naming the entry. Conversions out of a volume refuse an entry the layout type has
 * no place for (a SCSI base volume in a block layout, a signature volume in a SCSI one). */
#ifndef BLKMAP_BLKMAP_XDR_H
#define BLKMAP_BLKMAP_XDR_H

#include "blkmap/blkmap.h"
#include "nfs41.h"
#include "proto/layout.h"

/* Decoded XDR to a new volume (caller frees with blkmap_vol_free). err may be NULL. */
int blkmap_vol_from_block(const pnfs_block_deviceaddr4 *da, struct blkmap_vol **out, char *err, size_t errlen);
int blkmap_vol_from_scsi(const pnfs_scsi_deviceaddr4 *da, struct blkmap_vol **out, char *err, size_t errlen);

/* A volume to XDR structs (out is overwritten). Caller frees with blkmap_xdr_block_free() /
 * blkmap_xdr_scsi_free(). */
int blkmap_vol_to_block(const struct blkmap_vol *vol, pnfs_block_deviceaddr4 *out, char *err, size_t errlen);
int blkmap_vol_to_scsi(const struct blkmap_vol *vol, pnfs_scsi_deviceaddr4 *out, char *err, size_t errlen);
void blkmap_xdr_block_free(pnfs_block_deviceaddr4 *da);
void blkmap_xdr_scsi_free(pnfs_scsi_deviceaddr4 *da);

/* A GETDEVICEINFO device_addr4 (LAYOUT4_BLOCK_VOLUME or LAYOUT4_SCSI) to a volume, and a volume to
 * one (caller frees with proto_device_addr_free()). */
int blkmap_vol_from_device_addr(const device_addr4 *da, struct blkmap_vol **out, char *err, size_t errlen);
int blkmap_vol_to_device_addr(const struct blkmap_vol *vol, layouttype4 type, device_addr4 *out, char *err,
			      size_t errlen);

/* Raw da_addr_body bytes. type 0 on decode: try the block layout, then the SCSI layout;
 * *type_out (may be NULL) says which it was. Encode: caller frees *buf with free(). */
int blkmap_vol_decode_xdr(const void *buf, size_t len, layouttype4 type, struct blkmap_vol **out,
			  layouttype4 *type_out, char *err, size_t errlen);
int blkmap_vol_encode_xdr(const struct blkmap_vol *vol, layouttype4 type, void **buf, size_t *len, char *err,
			  size_t errlen);

/* The pool file: DIR/volume.xdr as written by `pnfs-admin format` (a pnfs_block_deviceaddr4). */
#define BLKMAP_POOL_VOLUME_FILE "volume.xdr"
int blkmap_vol_read_file(const char *path, struct blkmap_vol **out, layouttype4 *type_out, char *err,
			 size_t errlen);
int blkmap_vol_read_pool(const char *dir, struct blkmap_vol **out, char *err, size_t errlen);

#endif
