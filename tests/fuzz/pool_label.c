/* libFuzzer target: LUN label decoding. Whatever bytes a LUN's first sector holds, decoding either
 * fails with a reason or yields a label that re-encodes to the same bytes. */
#include "mds/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mds_pool_label l;
	uint8_t again[MDS_LABEL_BYTES];
	char why[256];

	if (mds_label_decode(data, size, &l, why, sizeof(why)) == 0) {
		mds_label_encode(&l, again);
		if (memcmp(again, data, MDS_LABEL_BYTES) != 0)
			abort();
	}
	return 0;
}
