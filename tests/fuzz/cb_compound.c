/* libFuzzer target: the backchannel. First byte even: CB_COMPOUND4args as a client receives it;
 * odd: CB_COMPOUND4res as the server receives it. Decoded ops and results must encode again. */
#include "proto/proto.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	void *b;
	size_t l;

	if (size < 1)
		return 0;
	if (data[0] % 2 == 0) {
		struct proto_cb_compound_args a;
		if (proto_cb_compound_args_decode(data + 1, size - 1, 0, &a) == 0) {
			for (u_int i = 0; i < a.args.argarray.argarray_len; i++) {
				if (!proto_cb_opnum_valid(a.args.argarray.argarray_val[i].argop))
					abort();
				if (proto_xdr_encode((xdrproc_t)xdr_nfs_cb_argop4, &a.args.argarray.argarray_val[i], &b, &l) != 0)
					abort();
				free(b);
			}
		}
		proto_cb_compound_args_free(&a);
	} else {
		struct proto_cb_compound_res r;
		if (proto_cb_compound_res_decode(data + 1, size - 1, &r) == 0) {
			u_int n = r.res.resarray.resarray_len;
			for (u_int i = 0; i < n; i++) {
				if (i + 1 < n && proto_cb_resop_status(&r.res.resarray.resarray_val[i]) != NFS4_OK)
					abort();
				if (proto_xdr_encode((xdrproc_t)xdr_nfs_cb_resop4, &r.res.resarray.resarray_val[i], &b, &l) != 0)
					abort();
				free(b);
			}
		}
		proto_cb_compound_res_free(&r);
	}
	return 0;
}
