/* Discovery: candidate devices from iSCSI portals (SendTargets, REPORT LUNS), local block devices and
 * given paths, matched to the volume's leaves by signature or SCSI designator, with a per-device cache. */
#include "blkmap/vol_int.h"

void bm_cache_free(struct blkmap_ctx *ctx)
{
	(void)ctx;
}
