/* libFuzzer target: COMPOUND4args (what a server receives after the call header) through the
 * op-by-op decoder. Property checked beyond "no crash, no leak": every op the decoder accepts
 * encodes again, and a second decode of that encoding gives the same bytes. */
#include "proto/proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_compound_args a;
	uint32_t max_ops = size ? data[0] % 8 == 0 ? 4 : 0 : 0;

	if (proto_compound_args_decode(data, size, max_ops, &a) == 0) {
		if (a.args.argarray.argarray_len > a.opcount)
			abort();
		if (a.stop == PROTO_COMPOUND_DONE && a.args.argarray.argarray_len != a.opcount)
			abort();
		for (u_int i = 0; i < a.args.argarray.argarray_len; i++) {
			nfs_argop4 *op = &a.args.argarray.argarray_val[i], again;
			void *b1, *b2;
			size_t l1, l2;

			if (!proto_opnum_valid(op->argop))
				abort();
			if (proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, op, &b1, &l1) != 0)
				abort();
			memset(&again, 0, sizeof(again));
			if (proto_xdr_decode((xdrproc_t)xdr_nfs_argop4, &again, b1, l1) != 0)
				abort();
			if (proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &again, &b2, &l2) != 0 || l1 != l2 ||
			    memcmp(b1, b2, l1) != 0)
				abort();
			proto_xdr_free((xdrproc_t)xdr_nfs_argop4, &again);
			free(b1);
			free(b2);
		}
	}
	proto_compound_args_free(&a);
	return 0;
}
