/* libFuzzer target: the SCSI data blkmap takes from targets. The first byte picks the parser
 * (standard INQUIRY, VPD 0x80, VPD 0x83, VPD 0xB0, READ CAPACITY(16), PERSISTENT RESERVE IN READ KEYS,
 * READ RESERVATION and REPORT CAPABILITIES, REPORT LUNS); the rest is the data-in buffer as a target
 * sent it, in memory of exactly its length. Whatever a parser takes stays inside its output: strings
 * end within their arrays, counts within theirs, every designator inside the page, block sizes sane,
 * LUNs 14 bits, capability bits 0 or 1. */
#include "blkmap/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *s, size_t cap)
{
	if (memchr(s, 0, cap) == NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct blkmap_inquiry inq;
	struct blkmap_pr_keys keys;
	struct blkmap_pr_reservation resv;
	struct blkmap_pr_caps caps;
	unsigned luns[64];
	uint64_t blocks;
	uint32_t u32, len;
	uint8_t *d;
	int rc;

	if (size < 1 || size - 1 > 1u << 20)
		return 0;
	len = (uint32_t)(size - 1);
	d = malloc(len ? len : 1);
	if (!d)
		return 0;
	memcpy(d, data + 1, len);
	memset(&inq, 0xa5, sizeof(inq));
	switch (data[0] % 9) {
	case 0:
		if (bm_parse_std_inquiry(d, len, &inq) == 0) {
			terminated(inq.vendor, sizeof(inq.vendor));
			terminated(inq.product, sizeof(inq.product));
			terminated(inq.revision, sizeof(inq.revision));
		}
		break;
	case 1:
		if (bm_parse_vpd80(d, len, &inq) == 0)
			terminated(inq.serial, sizeof(inq.serial));
		break;
	case 2:
		if (bm_parse_vpd83(d, len, &inq) == 0) {
			size_t room = len - 4; /* every designator: a 4-byte header and its bytes */
			if (inq.ndesig > BLKMAP_MAX_DESIGNATORS)
				abort();
			for (unsigned i = 0; i < inq.ndesig; i++) {
				if (4u + inq.desig[i].len > room)
					abort();
				room -= 4u + inq.desig[i].len;
			}
		}
		break;
	case 3:
		bm_parse_vpdb0(d, len, &u32);
		break;
	case 4:
		if (bm_parse_readcap16(d, len, &blocks, &u32) == 0 &&
		    (u32 < 512 || u32 > 65536 || (u32 & (u32 - 1)) != 0))
			abort();
		break;
	case 5:
		if (bm_parse_read_keys(d, len, &keys) == 0 &&
		    (keys.nkeys > BLKMAP_PR_MAX_KEYS || keys.nkeys > keys.total || 8u + 8u * keys.nkeys > len))
			abort();
		break;
	case 6:
		if (bm_parse_read_resv(d, len, &resv) == 0 && (resv.type > 15 || resv.scope > 15 || (resv.reserved && len < 24)))
			abort();
		break;
	case 7:
		rc = bm_parse_report_luns(d, len, luns, 64);
		if (rc > 64 || (rc >= 0 && (uint64_t)rc * 8 + 8 > len))
			abort();
		for (int i = 0; i < rc; i++)
			if (luns[i] >= 1u << 14)
				abort();
		break;
	case 8:
		if (bm_parse_report_caps(d, len, &caps) == 0 && (len < 8 || (caps.ptpl_c | caps.ptpl_a | caps.tmv) > 1))
			abort();
		break;
	}
	free(d);
	return 0;
}
