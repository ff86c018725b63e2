/* libFuzzer target: COMPOUND4res (what a client receives after the reply header) through the
 * result-by-result decoder, READDIR's hand-coded entry list included. Every decoded result must
 * have a known opcode, only the last may carry an error, and each one encodes again. */
#include "proto/proto.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_compound_res r;

	if (proto_compound_res_decode(data, size, &r) == 0) {
		u_int n = r.res.resarray.resarray_len;

		if (n > r.rescount)
			abort();
		for (u_int i = 0; i < n; i++) {
			nfs_resop4 *res = &r.res.resarray.resarray_val[i];
			void *b;
			size_t l;

			if (i + 1 < n && proto_resop_status(res) != NFS4_OK)
				abort();
			if (proto_xdr_encode((xdrproc_t)xdr_nfs_resop4, res, &b, &l) != 0)
				abort();
			free(b);
		}
	}
	proto_compound_res_free(&r);
	return 0;
}
