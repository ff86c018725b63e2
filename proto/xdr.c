/* Generic glue between rpcgen coders and byte buffers, used by the layout helpers, tools and tests.
 * Decoding demands that the buffer be consumed exactly: trailing bytes mean a framing error. */
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int proto_xdr_encode_to(xdrproc_t proc, const void *obj, void *buf, size_t *len)
{
	XDR x;
	int ret = 0;

	if (*len > PROTO_RM_RECORD_LIMIT)
		*len = PROTO_RM_RECORD_LIMIT;
	xdrmem_create(&x, buf, (u_int)*len, XDR_ENCODE);
	if (!proc(&x, (void *)obj))
		ret = xdr_sizeof(proc, (void *)obj) == 0 ? -EINVAL : -EMSGSIZE;
	else
		*len = xdr_getpos(&x);
	xdr_destroy(&x);
	return ret;
}

int proto_xdr_encode(xdrproc_t proc, const void *obj, void **buf, size_t *len)
{
	size_t size = xdr_sizeof(proc, (void *)obj);
	void *p;
	int ret;

	if (size == 0)
		return -EINVAL;
	p = malloc(size);
	if (!p)
		return -ENOMEM;
	ret = proto_xdr_encode_to(proc, obj, p, &size);
	if (ret < 0) {
		free(p);
		return ret;
	}
	*buf = p;
	*len = size;
	return 0;
}

int proto_xdr_decode(xdrproc_t proc, void *obj, const void *buf, size_t len)
{
	XDR x;
	int ret = 0;

	if (len > PROTO_RM_RECORD_LIMIT)
		return -EBADMSG;
	xdrmem_create(&x, (char *)buf, (u_int)len, XDR_DECODE);
	if (!proc(&x, obj) || xdr_getpos(&x) != len) {
		xdr_free(proc, obj);
		ret = -EBADMSG;
	}
	xdr_destroy(&x);
	return ret;
}

void proto_xdr_free(xdrproc_t proc, void *obj)
{
	xdr_free(proc, obj);
}
