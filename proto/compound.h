/* COMPOUND and CB_COMPOUND the way both ends need them: a builder that appends operations to a
 * message, op-by-op decoders that report where and why decoding stopped (so a server can answer
 * NFS4ERR_OP_ILLEGAL, NFS4ERR_BADXDR or NFS4ERR_TOO_MANY_OPS as RFC 8881 §15.2/§16.2 require), and
 * a reply encoder that appends results under the session's reply-size limit.
 *
 * Client:  proto_msg_init(&m, cap); proto_rpc_call_encode(&m, &call);
 *          proto_compound_begin(&e, &m, "tag", 1); proto_compound_add(&e, &op)...; proto_compound_end(&e);
 *          ... reply: proto_rpc_reply_decode() then proto_compound_res_decode(rec + off, len - off, &res)
 * Server:  proto_rpc_call_decode(); proto_compound_args_decode(rec + off, len - off, 0, &args);
 *          proto_rpc_reply_encode(&m, &ok); proto_compound_reply_begin(&r, &m, tag, tag_len, maxresp);
 *          proto_compound_reply_add(&r, &res)...; proto_compound_reply_end(&r, status)
 * The same pairs exist for the backchannel (proto_cb_*), with the roles swapped.
 */
#ifndef PROTO_COMPOUND_H
#define PROTO_COMPOUND_H

#include <stddef.h>
#include <stdint.h>

#include "nfs41.h"
#include "proto/rpc.h"

/* ---- building calls -------------------------------------------------------------------------- */
struct proto_compound_enc {
	struct proto_msg *m;
	u_int count_pos;        /* where argarray's count goes */
	uint32_t nops;
	int cb;                 /* a CB_COMPOUND */
};

/* Start a COMPOUND4args in m (after the call header). tag: NUL-terminated, NULL for none, at most
 * PROTO_UTF8STR_MAX bytes. Returns 0, -EINVAL, -EMSGSIZE. */
int proto_compound_begin(struct proto_compound_enc *e, struct proto_msg *m, const char *tag,
			 uint32_t minorversion);
/* Start a CB_COMPOUND4args (the server's backchannel call). */
int proto_cb_compound_begin(struct proto_compound_enc *e, struct proto_msg *m, const char *tag,
			    uint32_t minorversion, uint32_t callback_ident);
/* Append one operation; on failure nothing is appended. Returns 0, -EMSGSIZE (no room in m),
 * -E2BIG (more than PROTO_COMPOUND_MAX_OPS), -EINVAL (the op cannot be encoded: a value over its
 * cap, an unknown opcode). */
int proto_compound_add(struct proto_compound_enc *e, const nfs_argop4 *op);
int proto_cb_compound_add(struct proto_compound_enc *e, const nfs_cb_argop4 *op);
/* Write the operation count. */
int proto_compound_end(struct proto_compound_enc *e);

/* ---- decoding calls (server: COMPOUND; client: CB_COMPOUND) ------------------------------------ */
enum proto_compound_stop {
	PROTO_COMPOUND_DONE = 0,   /* every announced operation was decoded */
	PROTO_COMPOUND_ILLEGAL,    /* argarray[argarray_len] had an opcode that is not NFSv4.1's (or was
	                            * OP_ILLEGAL): execute the decoded ops, then answer OP_ILLEGAL with
	                            * NFS4ERR_OP_ILLEGAL as the last result */
	PROTO_COMPOUND_BADXDR,     /* the arguments of op stop_opcode at argarray_len did not decode:
	                            * its result is NFS4ERR_BADXDR */
	PROTO_COMPOUND_TOO_MANY,   /* more than max_ops were announced: only the first op was decoded,
	                            * so the server can process SEQUENCE and answer NFS4ERR_TOO_MANY_OPS */
};

struct proto_compound_args {
	COMPOUND4args args;        /* tag, minorversion, argarray (argarray_len = ops decoded) */
	uint32_t opcount;          /* operations the client announced */
	enum proto_compound_stop stop;
	uint32_t stop_opcode;      /* for ILLEGAL and BADXDR */
};

struct proto_cb_compound_args {
	CB_COMPOUND4args args;
	uint32_t opcount;
	enum proto_compound_stop stop;
	uint32_t stop_opcode;
};

/* Decode COMPOUND4args op by op from the procedure arguments (the bytes after the call header).
 * max_ops: the most ops to decode (0 or above PROTO_COMPOUND_MAX_OPS: PROTO_COMPOUND_MAX_OPS).
 * A session's smaller ca_maxoperations is the server's to compare with opcount.
 * Returns 0 (see out->stop), -EBADMSG when the header (tag, minorversion, count) is undecodable or
 * the tag is over its cap (answer GARBAGE_ARGS), -ENOMEM. Trailing bytes after the last announced
 * op are ignored. Caller frees with proto_compound_args_free() whatever the return. */
int proto_compound_args_decode(const void *buf, size_t len, uint32_t max_ops,
			       struct proto_compound_args *out);
void proto_compound_args_free(struct proto_compound_args *a);
/* The same for CB_COMPOUND4args (client side); caller frees with proto_cb_compound_args_free(). */
int proto_cb_compound_args_decode(const void *buf, size_t len, uint32_t max_ops,
				  struct proto_cb_compound_args *out);
void proto_cb_compound_args_free(struct proto_cb_compound_args *a);

/* ---- encoding replies (server: COMPOUND; client: CB_COMPOUND) ---------------------------------- */
struct proto_compound_reply {
	struct proto_msg *m;
	u_int status_pos, count_pos;
	uint32_t nres;
	size_t limit;           /* message bytes allowed (ca_maxresponsesize), <= m->cap */
	int cb;
};

/* Start COMPOUND4res after the reply header; tag is echoed from the call (tag_len bytes, may be 0).
 * max_reply: the session's ca_maxresponsesize counting the whole RPC message (0: no limit but m's
 * buffer). Returns 0, -EINVAL (tag over its cap), -EMSGSIZE. */
int proto_compound_reply_begin(struct proto_compound_reply *r, struct proto_msg *m, const void *tag,
			       size_t tag_len, size_t max_reply);
int proto_cb_compound_reply_begin(struct proto_compound_reply *r, struct proto_msg *m, const void *tag,
				  size_t tag_len, size_t max_reply);
/* Append one result. Returns 0; -EMSGSIZE if it would take the message past max_reply (nothing is
 * appended: the caller answers NFS4ERR_REP_TOO_BIG or NFS4ERR_REP_TOO_BIG_TO_CACHE instead);
 * -E2BIG past PROTO_COMPOUND_MAX_OPS; -EINVAL if the result cannot be encoded. */
int proto_compound_reply_add(struct proto_compound_reply *r, const nfs_resop4 *res);
int proto_cb_compound_reply_add(struct proto_compound_reply *r, const nfs_cb_resop4 *res);
/* Bytes still allowed under max_reply. */
size_t proto_compound_reply_room(struct proto_compound_reply *r);
/* Write the compound status (the last result's status, RFC 8881 §15.2) and the result count. */
int proto_compound_reply_end(struct proto_compound_reply *r, nfsstat4 status);

/* Encoded size of one result, to decide before executing an op whether its reply can fit. */
size_t proto_resop_size(const nfs_resop4 *res);

/* ---- decoding replies (client: COMPOUND; server: CB_COMPOUND) -------------------------------- */
struct proto_compound_res {
	COMPOUND4res res;          /* status, tag, resarray (the results decoded, in order) */
	uint32_t rescount;         /* results the server announced */
};

struct proto_cb_compound_res {
	CB_COMPOUND4res res;
	uint32_t rescount;
};

/* Decode COMPOUND4res result by result, stopping after the first result whose status is not
 * NFS4_OK (RFC 8881: it is the last one; anything after it is ignored). Returns 0, -EBADMSG
 * (truncated, an unknown result opcode, a value over its cap), -ENOMEM. Caller frees with
 * proto_compound_res_free() whatever the return. */
int proto_compound_res_decode(const void *buf, size_t len, struct proto_compound_res *out);
void proto_compound_res_free(struct proto_compound_res *r);
int proto_cb_compound_res_decode(const void *buf, size_t len, struct proto_cb_compound_res *out);
void proto_cb_compound_res_free(struct proto_cb_compound_res *r);

/* Whether res answers the ops sent, in order (a prefix, as a failing op ends the reply).
 * Returns 0 or -EPROTO. */
int proto_compound_res_match(const struct proto_compound_res *r, const uint32_t *ops, uint32_t nops);

/* The status of any decoded or to-be-encoded result. */
nfsstat4 proto_resop_status(const nfs_resop4 *res);
nfsstat4 proto_cb_resop_status(const nfs_cb_resop4 *res);

/* Whether op is an NFSv4.1 operation a client may send (3..58; not OP_ILLEGAL), and the same for
 * callback operations (3..14). */
int proto_opnum_valid(uint32_t op);
int proto_cb_opnum_valid(uint32_t op);

#endif
