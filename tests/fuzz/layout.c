/* libFuzzer target: block and SCSI layout bodies. The first byte picks the decoder (block layout,
 * SCSI layout, block device address, SCSI device address, block layoutupdate, SCSI layoutupdate);
 * the rest is the opaque body. Whatever decodes must encode again (validation agrees on both
 * sides) to as many bytes, and decoding that encoding must reproduce it exactly. Only XDR padding
 * may differ from the input: decoders, like every XDR implementation, do not insist it be zero. */
#include "proto/proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_length(const char *a, u_int alen, const uint8_t *b, size_t blen)
{
	(void)a;
	(void)b;
	if (alen != blen)
		abort();
}

/* Decode what we encoded and encode it again: the very same bytes. */
#define STABLE(type, cont, field, dec, enc, freefn, cfree)                                   \
	do {                                                                              \
		type v2;                                                                  \
		__typeof__(cont) again;                                                   \
		memset(&v2, 0, sizeof(v2));                                               \
		if (dec(&cont, &v2) != 0 || enc(&v2, &again) != 0)                         \
			abort();                                                          \
		if (again.field##_len != cont.field##_len ||                              \
		    memcmp(again.field##_val, cont.field##_val, cont.field##_len) != 0)   \
			abort();                                                          \
		freefn(&v2);                                                              \
		cfree(&again);                                                            \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *body = data + 1;
	u_int len;

	if (size < 1)
		return 0;
	len = (u_int)(size - 1);
	switch (data[0] % 6) {
	case 0: {
		layout_content4 in = { LAYOUT4_BLOCK_VOLUME, { len, (char *)body } }, out;
		pnfs_block_layout4 v;
		memset(&v, 0, sizeof(v));
		if (proto_block_layout_decode(&in, &v) == 0) {
			if (proto_block_layout_encode(&v, &out) != 0)
				abort();
			same_length(out.loc_body.loc_body_val, out.loc_body.loc_body_len, body, len);
			STABLE(pnfs_block_layout4, out, loc_body.loc_body, proto_block_layout_decode, proto_block_layout_encode,
			       proto_block_layout_free, proto_layout_content_free);
			proto_layout_content_free(&out);
			proto_block_layout_free(&v);
		}
		break;
	}
	case 1: {
		layout_content4 in = { LAYOUT4_SCSI, { len, (char *)body } }, out;
		pnfs_scsi_layout4 v;
		memset(&v, 0, sizeof(v));
		if (proto_scsi_layout_decode(&in, &v) == 0) {
			if (proto_scsi_layout_encode(&v, &out) != 0)
				abort();
			same_length(out.loc_body.loc_body_val, out.loc_body.loc_body_len, body, len);
			STABLE(pnfs_scsi_layout4, out, loc_body.loc_body, proto_scsi_layout_decode, proto_scsi_layout_encode,
			       proto_scsi_layout_free, proto_layout_content_free);
			proto_layout_content_free(&out);
			proto_scsi_layout_free(&v);
		}
		break;
	}
	case 2: {
		device_addr4 in = { LAYOUT4_BLOCK_VOLUME, { len, (char *)body } }, out;
		pnfs_block_deviceaddr4 v;
		memset(&v, 0, sizeof(v));
		if (proto_block_deviceaddr_decode(&in, &v) == 0) {
			if (proto_block_deviceaddr_encode(&v, &out) != 0)
				abort();
			same_length(out.da_addr_body.da_addr_body_val, out.da_addr_body.da_addr_body_len, body, len);
			STABLE(pnfs_block_deviceaddr4, out, da_addr_body.da_addr_body, proto_block_deviceaddr_decode,
			       proto_block_deviceaddr_encode, proto_block_deviceaddr_free, proto_device_addr_free);
			proto_device_addr_free(&out);
			proto_block_deviceaddr_free(&v);
		}
		break;
	}
	case 3: {
		device_addr4 in = { LAYOUT4_SCSI, { len, (char *)body } }, out;
		pnfs_scsi_deviceaddr4 v;
		memset(&v, 0, sizeof(v));
		if (proto_scsi_deviceaddr_decode(&in, &v) == 0) {
			if (proto_scsi_deviceaddr_encode(&v, &out) != 0)
				abort();
			same_length(out.da_addr_body.da_addr_body_val, out.da_addr_body.da_addr_body_len, body, len);
			STABLE(pnfs_scsi_deviceaddr4, out, da_addr_body.da_addr_body, proto_scsi_deviceaddr_decode,
			       proto_scsi_deviceaddr_encode, proto_scsi_deviceaddr_free, proto_device_addr_free);
			proto_device_addr_free(&out);
			proto_scsi_deviceaddr_free(&v);
		}
		break;
	}
	case 4: {
		layoutupdate4 in = { LAYOUT4_BLOCK_VOLUME, { len, (char *)body } }, out;
		pnfs_block_layoutupdate4 v;
		memset(&v, 0, sizeof(v));
		if (proto_block_layoutupdate_decode(&in, &v) == 0) {
			if (proto_block_layoutupdate_encode(&v, &out) != 0)
				abort();
			same_length(out.lou_body.lou_body_val, out.lou_body.lou_body_len, body, len);
			STABLE(pnfs_block_layoutupdate4, out, lou_body.lou_body, proto_block_layoutupdate_decode,
			       proto_block_layoutupdate_encode, proto_block_layoutupdate_free, proto_layoutupdate_free);
			proto_layoutupdate_free(&out);
			proto_block_layoutupdate_free(&v);
		}
		break;
	}
	default: {
		layoutupdate4 in = { LAYOUT4_SCSI, { len, (char *)body } }, out;
		pnfs_scsi_layoutupdate4 v;
		memset(&v, 0, sizeof(v));
		if (proto_scsi_layoutupdate_decode(&in, &v) == 0) {
			if (proto_scsi_layoutupdate_encode(&v, &out) != 0)
				abort();
			same_length(out.lou_body.lou_body_val, out.lou_body.lou_body_len, body, len);
			STABLE(pnfs_scsi_layoutupdate4, out, lou_body.lou_body, proto_scsi_layoutupdate_decode,
			       proto_scsi_layoutupdate_encode, proto_scsi_layoutupdate_free, proto_layoutupdate_free);
			proto_layoutupdate_free(&out);
			proto_scsi_layoutupdate_free(&v);
		}
		break;
	}
	}
	return 0;
}
