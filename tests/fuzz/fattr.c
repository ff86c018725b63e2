/* libFuzzer target: an XDR fattr4 (bitmap, then the opaque values) into the C struct. Whatever
 * decodes must encode again and decode to the identical struct: the encoding VERIFY and NVERIFY
 * compare must be a function of the values alone. */
#include "proto/proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proto_fattr a, b;
	struct proto_attrmask unsup;
	fattr4 in, out;

	memset(&in, 0, sizeof(in));
	if (proto_xdr_decode((xdrproc_t)xdr_fattr4, &in, data, size) != 0)
		return 0;
	if (proto_fattr_decode(&in, &a, &unsup) == 0) {
		if (!proto_attrmask_empty(&unsup))
			abort();
		if (proto_fattr_encode(&a, NULL, &out) != 0)
			abort();
		if (proto_fattr_decode(&out, &b, NULL) != 0 || memcmp(&a, &b, sizeof(a)) != 0)
			abort();
		proto_xdr_free((xdrproc_t)xdr_fattr4, &out);
	}
	proto_xdr_free((xdrproc_t)xdr_fattr4, &in);
	return 0;
}
