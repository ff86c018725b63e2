/* Fuzz target for volume descriptions from outside: GETDEVICEINFO bodies (block or SCSI device
 * addresses, as bytes) and the text form. Whatever decodes must validate, map, compile to tables and
 * print back to the same text; nothing may crash or leak. First byte: 0 XDR, 1 text. */
#include "blkmap/blkmap_xdr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void exercise(struct blkmap_vol *vol, const uint8_t *data, size_t size)
{
	unsigned n = blkmap_vol_count(vol);
	struct blkmap_table *t = NULL;
	struct blkmap_run *runs = NULL;
	size_t nruns = 0;
	char *text = NULL, *again = NULL;
	struct blkmap_vol *back = NULL;

	/* give every leaf a size taken from the input */
	for (unsigned i = 0; i < n; i++) {
		if (blkmap_vol_is_leaf(vol, i)) {
			uint64_t s = 512ull * (1 + (size ? data[i % size] : 0)) * 64;
			blkmap_vol_set_leaf_size(vol, i, s);
		}
	}
	if (blkmap_vol_validate(vol) == 0) {
		uint64_t total = blkmap_vol_size_bytes(vol, n - 1);
		if (total) {
			uint64_t off = (size > 2 ? data[1] * 512ull : 0) % total;
			uint64_t len = total - off < 65536 ? total - off : 65536;
			if (blkmap_vol_map(vol, off, len, &runs, &nruns) == 0)
				free(runs);
		}
		if (blkmap_vol_table(vol, "fuzz", &t) == 0) {
			char *s = NULL;
			if (blkmap_table_format(t, &s) == 0)
				free(s);
			blkmap_table_free(t);
		}
	}
	if (blkmap_vol_format_text(vol, &text) == 0) {
		if (blkmap_vol_parse_text(text, &back, NULL, 0) != 0)
			abort();
		if (blkmap_vol_format_text(back, &again) != 0 || strcmp(text, again) != 0)
			abort();
		free(again);
		blkmap_vol_free(back);
		free(text);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct blkmap_vol *vol = NULL;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		char *s = malloc(size);
		if (!s)
			return 0;
		memcpy(s, data + 1, size - 1);
		s[size - 1] = 0;
		if (blkmap_vol_parse_text(s, &vol, NULL, 0) == 0) {
			exercise(vol, data, size);
			blkmap_vol_free(vol);
		}
		free(s);
		return 0;
	}
	if (blkmap_vol_decode_xdr(data + 1, size - 1, 0, &vol, NULL, NULL, 0) == 0) {
		exercise(vol, data, size);
		blkmap_vol_free(vol);
	}
	return 0;
}
