/* A small synchronous NFSv4.1 client for the server's tests, built on proto/: one TCP connection,
 * COMPOUNDs with or without a SEQUENCE in front, a session with a backchannel whose calls it
 * answers (and counts) while it waits for replies, raw record I/O for hostile-input tests, and
 * helpers for the namespace and data operations the suites use. Not a library for users. */
#ifndef TESTS_MDS_NFSCLIENT_H
#define TESTS_MDS_NFSCLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/proto.h"

struct nc {
	int fd;
	struct proto_rm_reader rr;
	uint32_t xid;
	uint32_t minorversion;
	/* credential */
	uint32_t flavor, uid, gid;
	char machine[64];
	/* client and session */
	clientid4 clientid;
	uint32_t cs_seq;
	char owner[128];
	unsigned char verifier[8];
	unsigned char sessid[NFS4_SESSIONID_SIZE];
	uint32_t slot_seq;            /* slot 0: last sequence id used */
	uint32_t seq_status_flags;    /* sr_status_flags of the last SEQUENCE */
	channel_attrs4 fore;
	int have_session;
	/* backchannel, as seen by this connection */
	int cb_nulls, cb_compounds, cb_sequences, cb_recalls;
	uint32_t cb_last_seqid;
	unsigned char cb_last_sessid[NFS4_SESSIONID_SIZE];
	uint32_t cb_last_flavor, cb_last_uid;
	stateid4 cb_last_recall;
	int cb_answer_recall;         /* 0: answer CB_RECALL NFS4_OK (default); else this status */
	/* CB_LAYOUTRECALL: how many, the last one's arguments (FILE recalls: fh, range, stateid) */
	int cb_layoutrecalls;
	CB_LAYOUTRECALL4args cb_last_layoutrecall; /* lor_fh points into cb_last_lr_fh */
	unsigned char cb_last_lr_fh[NFS4_FHSIZE];
	int cb_answer_layoutrecall;   /* 0: answer NFS4_OK (default); else this status */
	int cb_silent;                /* do not answer backchannel calls at all */
	int timeout_ms;               /* for one reply (default 10000) */
	uint32_t want_slots;          /* fore-channel slots asked for (default 4) */
	uint8_t *last_body;           /* the last COMPOUND4res as received (malloc'd) */
	size_t last_body_len;
	uint8_t in[65536];            /* received, not yet fed to rr */
	size_t in_off, in_len;
};

/* Connect to 127.0.0.1:port with AUTH_SYS uid/gid 0. NULL on failure. Free with nc_free. */
struct nc *nc_connect(int port);
void nc_free(struct nc *c);

/* Send one RPC record (the message, the mark is added) / receive the next reply record (any
 * backchannel calls that arrive first are answered). *rec malloc'd, caller frees. 0 or -errno
 * (-ETIMEDOUT, -ECONNRESET when the server closed the connection). */
int nc_send_record(struct nc *c, const void *msg, size_t len);
int nc_send_bytes(struct nc *c, const void *buf, size_t len);
int nc_recv_reply(struct nc *c, void **rec, size_t *len);
/* Wait up to ms for the server to close the connection: 1 closed, 0 still open. */
int nc_wait_closed(struct nc *c, int ms);
/* Serve backchannel calls for up to ms milliseconds (or until count calls were answered). */
void nc_serve_callbacks(struct nc *c, int ms, int count);

/* The header and body of an arbitrary RPC call, given by name:
 * nc_rpc(c, &(struct nc_call){ .prog = ..., .vers = ..., .proc = ..., .flavor = AUTH_SYS }, ...).
 * args/alen: the body after the header (none when left out). */
struct nc_call {
	uint32_t prog, vers, proc, flavor;
	const void *args;
	size_t alen;
};

/* An RPC call on the connection; the reply header decoded into r, the results (after the header)
 * copied into *body (malloc'd, caller frees; body may be NULL). */
int nc_rpc(struct nc *c, const struct nc_call *q, struct proto_rpc_reply *r, void **body, size_t *blen);

/* A COMPOUND of ops (no SEQUENCE added). res: caller frees with proto_compound_res_free. Returns
 * 0 when a reply was decoded (see res->res.status), -errno otherwise. */
int nc_compound(struct nc *c, const nfs_argop4 *ops, unsigned n, struct proto_compound_res *res);
/* The two halves of nc_compound, for requests in flight on several connections at once: send (the
 * call's xid in *xid), then wait for that reply. nc_seq_send puts SEQUENCE on slot 0 in front (the
 * next sequence id). 0 or -errno. */
int nc_compound_send(struct nc *c, const nfs_argop4 *ops, unsigned n, uint32_t *xid);
int nc_compound_recv(struct nc *c, uint32_t xid, struct proto_compound_res *res);
int nc_seq_send(struct nc *c, const nfs_argop4 *ops, unsigned n, uint32_t *xid);
/* The same with SEQUENCE on slot 0 in front (the next sequence id; cachethis as given). The
 * results include SEQUENCE's. */
int nc_seq(struct nc *c, const nfs_argop4 *ops, unsigned n, struct proto_compound_res *res);
int nc_seq_opts(struct nc *c, const nfs_argop4 *ops, unsigned n, int cachethis, int reuse_seqid,
		struct proto_compound_res *res);

/* EXCHANGE_ID (owner) + CREATE_SESSION (with a backchannel on this connection) + RECLAIM_COMPLETE.
 * 0 or the failing status (> 0) or -errno. */
int nc_setup(struct nc *c, const char *owner);
/* EXCHANGE_ID + CREATE_SESSION only (for reclaim tests). */
int nc_setup_noreclaim(struct nc *c, const char *owner);

/* ---- helpers; each returns the COMPOUND's status (0 = NFS4_OK) or -errno ------------------- */
struct nc_fh {
	uint32_t len;
	unsigned char val[NFS4_FHSIZE];
};

struct nc_attrs {
	nfs_ftype4 type;
	uint32_t mode, nlink;
	uint64_t size, fileid, change, space_used;
	uint32_t uid, gid;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

int nc_rootfh(struct nc *c, struct nc_fh *fh);
/* Look up a '/'-separated path from the root. */
int nc_lookup_path(struct nc *c, const char *path, struct nc_fh *fh);
int nc_getattrs(struct nc *c, const struct nc_fh *fh, struct nc_attrs *a);
int nc_mkdir(struct nc *c, const struct nc_fh *dir, const char *name, uint32_t mode, struct nc_fh *out);
int nc_symlink(struct nc *c, const struct nc_fh *dir, const char *name, const char *target);
/* OPEN (create GUARDED4 when create, else existing) with access/deny; out: fh and open stateid. */
int nc_open(struct nc *c, const struct nc_fh *dir, const char *name, int create, uint32_t access, uint32_t deny,
	    struct nc_fh *out, stateid4 *sid);
int nc_close(struct nc *c, const struct nc_fh *fh, const stateid4 *sid);
int nc_write(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t off, const void *buf, size_t len,
	     stable_how4 stable);
/* Read exactly len bytes (several READs); *got bytes read before EOF. */
int nc_read(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t off, void *buf, size_t len,
	    size_t *got);
int nc_remove(struct nc *c, const struct nc_fh *dir, const char *name);
int nc_rename(struct nc *c, const struct nc_fh *sdir, const char *sname, const struct nc_fh *ddir, const char *dname);
int nc_link(struct nc *c, const struct nc_fh *file, const struct nc_fh *dir, const char *name);
int nc_setattr_mode(struct nc *c, const struct nc_fh *fh, uint32_t mode);
int nc_setattr_size(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t size);
int nc_readlink(struct nc *c, const struct nc_fh *fh, char *buf, size_t len);
/* READDIR of a whole directory: names joined with '\n' into buf (sorted as returned). */
int nc_readdir_names(struct nc *c, const struct nc_fh *dir, char *buf, size_t len, unsigned *count);

/* Builders for ops (the structs point at the caller's data). */
void nc_op_putfh(nfs_argop4 *op, const struct nc_fh *fh);
void nc_op_simple(nfs_argop4 *op, nfs_opnum4 num);
void nc_op_lookup(nfs_argop4 *op, const char *name);
void nc_op_getattr(nfs_argop4 *op, uint32_t *words, unsigned nwords);

#endif
