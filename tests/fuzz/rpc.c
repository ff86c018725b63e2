/* libFuzzer target: a TCP byte stream into the record-marking reader, and every record it yields
 * into the RPC call and reply header decoders. The first byte sets the feeding chunk size, so the
 * fuzzer also explores fragment headers split across reads. */
#include "proto/proto.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_record(const uint8_t *rec, size_t len)
{
	struct proto_rpc_call c;
	struct proto_rpc_reply r;
	uint32_t xid, type, err;
	size_t off;

	if (proto_rpc_peek(rec, len, &xid, &type) < 0)
		return;
	if (proto_rpc_call_decode(rec, len, &c, &off, &err) == 0 && off > len)
		abort();
	if (proto_rpc_reply_decode(rec, len, &r, &off) == 0 && off > len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_rm_reader rd;
	size_t chunk, pos = 1;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] + 1;
	proto_rm_reader_init(&rd, 4096);
	while (pos < size) {
		size_t n = size - pos < chunk ? size - pos : chunk;
		ssize_t used = proto_rm_feed(&rd, data + pos, n);
		void *rec;
		size_t len;

		if (used < 0)
			break;
		if ((size_t)used > n)
			abort();
		pos += (size_t)used;
		while (proto_rm_take(&rd, &rec, &len) == 1) {
			if (len > 4096)
				abort();
			one_record(rec, len);
			free(rec);
		}
	}
	proto_rm_reader_destroy(&rd);
	/* The input as one record, too. */
	one_record(data, size);
	return 0;
}
