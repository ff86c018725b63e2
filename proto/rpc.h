/* ONC RPC (RFC 5531) over TCP, our own code on libtirpc's xdrmem: record marking, call and reply
 * headers with AUTH_NONE/AUTH_SYS, and an XID table. No sockets here: callers feed bytes in and
 * write bytes out, so one connection can carry fore-channel calls and backchannel calls both ways.
 *
 * Demultiplexing one NFSv4.1 connection (either end):
 *     while bytes arrive:  n = proto_rm_feed(&rd, p, len)   (n < 0: close the connection)
 *                          while proto_rm_take(&rd, &rec, &rlen) == 1:
 *                              proto_rpc_peek(rec, rlen, &xid, &type)
 *                              CALL  -> proto_rpc_call_decode(), serve, reply with the same xid
 *                              REPLY -> cookie = proto_xid_take(table, xid) (NULL: unsolicited, drop),
 *                                       proto_rpc_reply_decode(), complete the call
 *                              free(rec)
 */
#ifndef PROTO_RPC_H
#define PROTO_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nfs41.h"

/* ---- record marking (RFC 5531 §11) ------------------------------------------------------------ */
#define PROTO_RM_LAST_FRAG    0x80000000u
/* No reader may be configured above this (16 MiB); the default fits a WRITE of PROTO_IO_MAX. */
#define PROTO_RM_RECORD_LIMIT (16u << 20)
#define PROTO_RM_RECORD_DEFAULT (PROTO_IO_MAX + 65536u)

/* A streaming reader: feed it whatever bytes arrived, take complete records out. The struct is
 * public so it can be embedded; its fields are private. */
struct proto_rm_reader {
	size_t max_record;  /* a record longer than this is refused */
	uint8_t hdr[4];     /* fragment header being assembled */
	unsigned hdr_have;
	uint32_t frag_left; /* data bytes still to come in the current fragment */
	int in_frag;        /* 1 while reading fragment data */
	int last;           /* the current fragment ends the record */
	int ready;          /* a complete record is waiting for proto_rm_take() */
	int failed;         /* an error was reported; the stream is unusable */
	uint8_t *rec;
	size_t rec_len, rec_cap;
};

/* max_record 0 means PROTO_RM_RECORD_DEFAULT; values above PROTO_RM_RECORD_LIMIT are clamped. */
void proto_rm_reader_init(struct proto_rm_reader *r, size_t max_record);
/* Frees a record being assembled. The reader can be initialised again afterwards. */
void proto_rm_reader_destroy(struct proto_rm_reader *r);
/* Consume bytes up to the end of the next complete record (or all of them if none completes).
 * Returns the number of bytes consumed, or -EMSGSIZE when a record would exceed max_record
 * (the caller closes the connection: the stream cannot be resynchronised), -ENOMEM, or -EPIPE if
 * fed again after an error. While a record waits to be taken, nothing is consumed (returns 0). */
ssize_t proto_rm_feed(struct proto_rm_reader *r, const void *data, size_t len);
/* 1 and the record (*rec allocated with malloc, caller frees with free(); a zero-length record gives
 * a non-NULL *rec), or 0 when no record is complete yet. */
int proto_rm_take(struct proto_rm_reader *r, void **rec, size_t *len);
/* Bytes of a partial record currently buffered (0 between records). */
size_t proto_rm_pending(const struct proto_rm_reader *r);

/* The 4-byte fragment header for a fragment of len bytes (len < 2^31). */
void proto_rm_mark(uint8_t hdr[4], uint32_t len, int last);
/* Frame a whole record as fragments of at most max_frag bytes (0: one fragment). *out is malloc'd
 * (caller frees with free()). Returns 0, -EINVAL (len >= 2^31), -ENOMEM. */
int proto_rm_frame(const void *rec, size_t len, size_t max_frag, void **out, size_t *out_len);

/* ---- an encoding buffer with room for the record mark --------------------------------------- */
/* Encoders write an RPC message through m->xdr; proto_msg_finish() puts the record mark in front.
 * Any encoder failing for lack of room returns -EMSGSIZE. */
struct proto_msg {
	uint8_t *buf;   /* buf[0..3]: record mark; buf[4..]: the message */
	size_t cap;     /* room for the message (excluding the mark) */
	XDR xdr;        /* XDR_ENCODE stream over buf + 4 */
};

/* Returns 0 or -ENOMEM / -EINVAL (cap 0 or above PROTO_RM_RECORD_LIMIT). */
int proto_msg_init(struct proto_msg *m, size_t cap);
void proto_msg_destroy(struct proto_msg *m);
/* Bytes of message encoded so far (what RFC 8881's ca_max*size limits count). */
size_t proto_msg_len(struct proto_msg *m);
/* The message bytes (buf + 4), borrowed until proto_msg_destroy(). */
const uint8_t *proto_msg_data(const struct proto_msg *m);
/* Write the record mark (one last fragment) and give the bytes to send, borrowed from m until
 * proto_msg_destroy(): *wire == m->buf, *wire_len == 4 + proto_msg_len(m). */
int proto_msg_finish(struct proto_msg *m, const uint8_t **wire, size_t *wire_len);
/* Start over with an empty message, keeping the buffer. */
void proto_msg_reset(struct proto_msg *m);

/* ---- credentials ---------------------------------------------------------------------------- */
/* RFC 5531 appendix A: AUTH_SYS machinename<255>, gids<16>; any credential body is opaque<400>. */
#define PROTO_AUTHSYS_MACHINENAME_MAX 255
#define PROTO_AUTHSYS_GIDS_MAX        16
#define PROTO_AUTH_BODY_MAX           400

struct proto_authsys {
	uint32_t stamp;
	char machinename[PROTO_AUTHSYS_MACHINENAME_MAX + 1]; /* NUL-terminated */
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[PROTO_AUTHSYS_GIDS_MAX];
};

/* opaque_auth. For AUTH_SYS the parsed form is in .sys (encoders build the body from it;
 * decoders fill it); for other flavours (RPCSEC_GSS ...) the raw body is kept in .body. */
struct proto_auth {
	uint32_t flavor;        /* AUTH_NONE, AUTH_SYS, RPCSEC_GSS, ... (rpc/auth.h) */
	uint32_t len;           /* raw body length (decoders fill it for every flavour) */
	uint8_t body[PROTO_AUTH_BODY_MAX];
	struct proto_authsys sys;
};

/* Encode/decode an AUTH_SYS body (authsys_parms) alone. Decode rejects a body with trailing bytes,
 * a machinename over 255 or containing NUL, more than 16 gids: -EBADMSG. */
int proto_authsys_encode(const struct proto_authsys *s, uint8_t body[PROTO_AUTH_BODY_MAX], uint32_t *len);
int proto_authsys_decode(const uint8_t *body, uint32_t len, struct proto_authsys *s);

/* ---- call and reply headers ------------------------------------------------------------------ */
/* msg_type, reply_stat, accept_stat, reject_stat and auth_stat values are libtirpc's
 * (rpc/rpc_msg.h, rpc/auth.h), which are RFC 5531's. */
#define PROTO_RPC_VERS 2

struct proto_rpc_call {
	uint32_t xid;
	uint32_t rpcvers;       /* encoders ignore it and send 2 */
	uint32_t prog, vers, proc;
	struct proto_auth cred;
	struct proto_auth verf;
};

/* Append a call header (up to and excluding the procedure's arguments) to m. */
int proto_rpc_call_encode(struct proto_msg *m, const struct proto_rpc_call *c);

/* Decode a call header from a record. On success *args_off is where the arguments start.
 * Returns 0, or:
 *   -EBADMSG          not an RPC call, or the header is truncated/garbled (c->xid is valid when
 *                     len >= 4: a server may answer GARBAGE_ARGS, or drop it);
 *   -EPROTONOSUPPORT  rpcvers != 2: answer MSG_DENIED/RPC_MISMATCH (low = high = 2);
 *   -EACCES           a malformed credential or verifier: answer MSG_DENIED/AUTH_ERROR with
 *                     *auth_err (AUTH_BADCRED or AUTH_BADVERF).
 * auth_err may be NULL. Nothing is allocated. */
int proto_rpc_call_decode(const void *rec, size_t len, struct proto_rpc_call *c, size_t *args_off,
			  uint32_t *auth_err);

struct proto_rpc_reply {
	uint32_t xid;
	uint32_t reply_stat;    /* MSG_ACCEPTED or MSG_DENIED */
	/* MSG_ACCEPTED */
	struct proto_auth verf;
	uint32_t accept_stat;   /* SUCCESS, PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR */
	/* MSG_DENIED */
	uint32_t reject_stat;   /* RPC_MISMATCH or AUTH_ERROR */
	uint32_t auth_stat;     /* for AUTH_ERROR */
	/* PROG_MISMATCH (accepted) and RPC_MISMATCH (denied): supported version range */
	uint32_t mismatch_low, mismatch_high;
};

/* Fill r for the common replies (verifier AUTH_NONE). */
void proto_rpc_reply_accepted(struct proto_rpc_reply *r, uint32_t xid, uint32_t accept_stat);
void proto_rpc_reply_prog_mismatch(struct proto_rpc_reply *r, uint32_t xid, uint32_t low, uint32_t high);
void proto_rpc_reply_rpc_mismatch(struct proto_rpc_reply *r, uint32_t xid);
void proto_rpc_reply_auth_error(struct proto_rpc_reply *r, uint32_t xid, uint32_t auth_stat);

/* Append a reply header to m; for accepted SUCCESS the results follow. */
int proto_rpc_reply_encode(struct proto_msg *m, const struct proto_rpc_reply *r);
/* Decode a reply header; for accepted SUCCESS *res_off is where the results start (for every other
 * reply *res_off is the end of the header). Unknown reply/accept/reject states: -EBADMSG. */
int proto_rpc_reply_decode(const void *rec, size_t len, struct proto_rpc_reply *r, size_t *res_off);

/* The xid and msg_type (CALL or REPLY) of a record, for demultiplexing. -EBADMSG if the record is
 * shorter than 8 bytes or msg_type is neither. */
int proto_rpc_peek(const void *rec, size_t len, uint32_t *xid, uint32_t *msg_type);

/* ---- outstanding calls, matched by XID --------------------------------------------------------- */
/* A small table of calls awaiting replies on one connection (the client's fore channel, the
 * server's backchannel). Opaque; not thread-safe (one event loop owns it). */
struct proto_xid_table;

/* Room for max_outstanding calls (1..65536). Caller frees with proto_xid_table_free(). */
struct proto_xid_table *proto_xid_table_new(unsigned max_outstanding);
/* Frees the table, not the cookies (drain first if they need releasing). */
void proto_xid_table_free(struct proto_xid_table *t);
/* An XID that is not outstanding (sequential from a random start). */
uint32_t proto_xid_next(struct proto_xid_table *t);
/* Remember a call. deadline_ms is an absolute time in the caller's clock (0: none).
 * Returns 0, -EEXIST (xid already outstanding), -ENOSPC (table full). The cookie is borrowed. */
int proto_xid_add(struct proto_xid_table *t, uint32_t xid, void *cookie, uint64_t deadline_ms);
/* Forget a call and give back its cookie; NULL if xid is not outstanding (a reply nobody waits
 * for: drop it). */
void *proto_xid_take(struct proto_xid_table *t, uint32_t xid);
unsigned proto_xid_count(const struct proto_xid_table *t);
/* Remove every call whose deadline is set and <= now_ms, calling fn for each. Returns how many.
 * fn must not add to or take from the table (queue re-sends and do them afterwards). */
unsigned proto_xid_expire(struct proto_xid_table *t, uint64_t now_ms,
			  void (*fn)(uint32_t xid, void *cookie, void *arg), void *arg);
/* Remove every call (the connection is gone), calling fn (may be NULL) for each; same rule for fn. */
void proto_xid_drain(struct proto_xid_table *t, void (*fn)(uint32_t xid, void *cookie, void *arg),
		     void *arg);

#endif
