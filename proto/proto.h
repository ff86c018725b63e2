/* The wire layer mds, client and tools share: NFSv4.1 (RFC 8881/5662) and the pNFS block and SCSI
 * layout bodies (RFC 5663/8154) as rpcgen types, ONC RPC over TCP, attributes and compounds.
 * Include this one header; it brings the generated types (nfs41.h) and every proto_* API. */
#ifndef PROTO_PROTO_H
#define PROTO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "nfs41.h"
#include "proto/attr.h"
#include "proto/compound.h"
#include "proto/layout.h"
#include "proto/log.h"
#include "proto/rpc.h"
#include "proto/util.h"

/* ---- any generated type to and from bytes --------------------------------------------------- */
/* Encode obj with its rpcgen coder (xdr_<type>) into a malloc'd buffer; caller frees *buf with
 * free(). Returns 0, -EINVAL (obj does not encode: a length over its cap, an unknown union
 * discriminant), -ENOMEM. */
int proto_xdr_encode(xdrproc_t proc, const void *obj, void **buf, size_t *len);
/* Encode into buf of *len bytes; *len becomes the bytes written. -EMSGSIZE if buf is too small. */
int proto_xdr_encode_to(xdrproc_t proc, const void *obj, void *buf, size_t *len);
/* Decode exactly len bytes into obj, which must be zeroed. Returns 0, or -EBADMSG (truncated,
 * malformed, over a cap, or bytes left over); on failure what was decoded is already freed
 * (pointers NULL; do not use the other fields).
 * On success the caller frees obj with proto_xdr_free(proc, obj). */
int proto_xdr_decode(xdrproc_t proc, void *obj, const void *buf, size_t len);
/* xdr_free(): releases what a decode allocated inside obj (not obj itself) and NULLs the pointers. */
void proto_xdr_free(xdrproc_t proc, void *obj);

/* ---- names for logs and tools ------------------------------------------------------------------ */
/* "NFS4ERR_NOENT", "NFS4_OK"; "unknown" for values RFC 8881 does not define. Static strings. */
const char *proto_nfsstat4_name(uint32_t status);
/* "SEQUENCE", "LAYOUTGET", "ILLEGAL"; "unknown" otherwise. */
const char *proto_opnum4_name(uint32_t op);
/* "CB_SEQUENCE", "CB_LAYOUTRECALL", "CB_ILLEGAL"; "unknown" otherwise. */
const char *proto_cb_opnum4_name(uint32_t op);

#endif
