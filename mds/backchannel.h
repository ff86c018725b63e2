/* The backchannel: CB_NULL and CB_COMPOUND calls from the server to a client over the connection
 * bound to its session's back channel, with CB_SEQUENCE on the session's single callback slot.
 * Replies come back on the same connection and are matched by XID. Delegation recalls use it now;
 * layout recalls (CB_LAYOUTRECALL) plug in the same way. Internal header. */
#ifndef MDS_BACKCHANNEL_H
#define MDS_BACKCHANNEL_H

#include "mds/server.h"

/* A call finished. status: 0 with res (the CB_COMPOUND results; NULL for CB_NULL), or -errno:
 * -ETIMEDOUT (no reply in MDS_CB_TIMEOUT_MS), -ENOTCONN (no backchannel connection, or the
 * session went away), -ECONNRESET (the connection closed), -EPROTO (an RPC error or a reply that
 * does not decode). res is borrowed for the callback. */
typedef void mds_cb_done_fn(struct mds_server *srv, int status, const CB_COMPOUND4res *res, void *arg);

/* CB_NULL on the session's backchannel. Returns 0 (done will run) or -errno. */
int mds_cb_null(struct mds_server *srv, struct mds_session *s, mds_cb_done_fn *done, void *arg);
/* CB_COMPOUND [CB_SEQUENCE, ops...] (ops encoded now: they may be freed after the call). Calls wait
 * for the session's one callback slot. Returns 0 (done will run) or -errno. */
int mds_cb_compound(struct mds_server *srv, struct mds_session *s, const nfs_cb_argop4 *ops, unsigned nops,
		    mds_cb_done_fn *done, void *arg);
/* Pick a session of the client with a backchannel (NULL if none). */
struct mds_session *mds_cb_session(struct mds_client *clp);

/* Check a new backchannel: CB_NULL, then a CB_COMPOUND with CB_SEQUENCE alone. A wrong answer
 * sets the session's cb_fault (SEQ4_STATUS_BACKCHANNEL_FAULT). */
void mds_cb_probe(struct mds_server *srv, struct mds_session *s);
/* Frees the probes still under way (the server stops). */
void mds_cb_probes_free(struct mds_server *srv);

/* A REPLY record arrived on conn. */
void mds_cb_reply(struct mds_conn *conn, uint32_t xid, const void *rec, size_t len);
/* The session is destroyed / lost its backchannel connection / a connection closed. */
void mds_cb_session_gone(struct mds_server *srv, struct mds_session *s);
void mds_cb_conn_gone(struct mds_server *srv, struct mds_session *s);
void mds_cb_fail_conn(struct mds_server *srv, struct mds_conn *conn);

#endif
