/* The RPC edge of the server: each record from a connection is a call for program 100003 v4
 * (NULL or COMPOUND) or a reply to one of our backchannel calls. Calls we cannot serve get the
 * RPC error RFC 5531 prescribes; a record that is not RPC at all closes the connection. */
#include "mds/server.h"

#include "mds/backchannel.h"
#include "mds/compound.h"
#include "proto/compound.h"
#include "proto/log.h"
#include "proto/rpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Reply header r, then len bytes of body (already XDR) when there are any, to conn. */
static int send_reply(struct mds_conn *conn, const struct proto_rpc_reply *r, const void *body, size_t len)
{
	struct proto_msg m;
	const uint8_t *wire;
	size_t wlen;
	int rc;

	rc = proto_msg_init(&m, len + 256);
	if (rc)
		return rc;
	rc = proto_rpc_reply_encode(&m, r);
	if (rc == 0 && len && !xdr_opaque(&m.xdr, (char *)body, (u_int)len))
		rc = -EMSGSIZE;
	if (rc == 0)
		rc = proto_msg_finish(&m, &wire, &wlen);
	if (rc == 0)
		rc = mds_conn_send(conn, wire, wlen);
	proto_msg_destroy(&m);
	return rc;
}

static int send_reply_header_only(struct mds_conn *conn, const struct proto_rpc_reply *r)
{
	return send_reply(conn, r, NULL, 0);
}

static void reply_accepted(struct mds_conn *conn, uint32_t xid, uint32_t stat)
{
	struct proto_rpc_reply r;

	proto_rpc_reply_accepted(&r, xid, stat);
	send_reply_header_only(conn, &r);
}

int mds_rpc_reply_success(struct mds_conn *conn, uint32_t xid, const void *body, size_t len)
{
	struct proto_rpc_reply r;

	if (conn->dead)
		return -EPIPE;
	proto_rpc_reply_accepted(&r, xid, SUCCESS);
	return send_reply(conn, &r, body, len);
}

/* The credential as the server uses it: AUTH_SYS identities squashed by the export rule. */
static void make_cred(const struct proto_rpc_call *call, const struct mds_export_rule *rule,
		      struct mds_cred *cred)
{
	memset(cred, 0, sizeof(*cred));
	cred->flavor = call->cred.flavor;
	if (call->cred.flavor == AUTH_SYS) {
		const struct proto_authsys *s = &call->cred.sys;
		cred->uid = cred->raw_uid = s->uid;
		cred->gid = s->gid;
		cred->ngids = s->ngids > 16 ? 16 : s->ngids;
		memcpy(cred->gids, s->gids, cred->ngids * sizeof(cred->gids[0]));
		snprintf(cred->machine, sizeof(cred->machine), "%s", s->machinename);
	} else {
		/* AUTH_NONE: the anonymous identity. */
		cred->uid = cred->raw_uid = rule ? rule->anon_uid : MDS_NOBODY_ID;
		cred->gid = rule ? rule->anon_gid : MDS_NOBODY_ID;
	}
	if (rule && call->cred.flavor == AUTH_SYS)
		mds_export_squash(rule, &cred->uid, &cred->gid, cred->gids, cred->ngids);
}

static void serve_compound(struct mds_conn *conn, const struct proto_rpc_call *call, const uint8_t *args,
			   size_t alen, size_t rec_len)
{
	struct mds_server *srv = conn->srv;
	const struct mds_export_rule *rule = mds_export_match(&srv->cfg.exports, (const struct sockaddr *)&conn->peer);
	struct mds_compound *c;
	int rc;

	c = mds_compound_new(conn, call->xid);
	if (!c) {
		reply_accepted(conn, call->xid, SYSTEM_ERR);
		return;
	}
	make_cred(call, rule, &c->cred);
	if (rule) {
		c->rule = *rule;
		c->have_rule = 1;
	}
	c->req_len = rec_len;
	rc = proto_compound_args_decode(args, alen, 0, &c->pargs);
	if (rc) {
		LOG_DEBUG("connection %llu: xid %08x: undecodable COMPOUND (%d)", (unsigned long long)conn->id,
			  call->xid, rc);
		reply_accepted(conn, call->xid, rc == -ENOMEM ? SYSTEM_ERR : GARBAGE_ARGS);
		mds_compound_free(c);
		return;
	}
	mds_compound_set_args_hash(c, args, alen);
	mds_compound_run(c);
}

void mds_rpc_record(struct mds_conn *conn, unsigned char *rec, size_t len)
{
	struct proto_rpc_call call;
	struct proto_rpc_reply r;
	uint32_t xid, type, auth_err = AUTH_BADCRED;
	size_t off;
	int rc;

	if (conn->dead)
		return;
	if (proto_rpc_peek(rec, len, &xid, &type) != 0) {
		LOG_WARN("connection %llu from %s: a record that is not RPC; closing", (unsigned long long)conn->id,
			 conn->peer_str);
		mds_conn_close(conn, "not RPC");
		return;
	}
	if (type == REPLY) {
		mds_cb_reply(conn, xid, rec, len);
		return;
	}
	rc = proto_rpc_call_decode(rec, len, &call, &off, &auth_err);
	if (rc == -EPROTONOSUPPORT) {
		proto_rpc_reply_rpc_mismatch(&r, xid);
		send_reply_header_only(conn, &r);
		return;
	}
	if (rc == -EACCES) {
		proto_rpc_reply_auth_error(&r, xid, auth_err);
		send_reply_header_only(conn, &r);
		return;
	}
	if (rc) {
		/* A garbled call header: the XID is readable, so say GARBAGE_ARGS rather than stay
		 * silent (the client would retry forever). */
		reply_accepted(conn, xid, GARBAGE_ARGS);
		return;
	}
	if (call.prog != NFS4_PROGRAM) {
		reply_accepted(conn, xid, PROG_UNAVAIL);
		return;
	}
	if (call.vers != NFS_V4) {
		proto_rpc_reply_prog_mismatch(&r, xid, NFS_V4, NFS_V4);
		send_reply_header_only(conn, &r);
		return;
	}
	if (call.cred.flavor != AUTH_NONE && call.cred.flavor != AUTH_SYS) {
		/* RPCSEC_GSS and anything else: we speak no other flavour. RFC 5531: a credential
		 * the server cannot use is AUTH_BADCRED (Linux nfsd does the same for unknown
		 * flavours); AUTH_TOOWEAK would mean "known but too weak", which is not the case. */
		proto_rpc_reply_auth_error(&r, xid, AUTH_BADCRED);
		send_reply_header_only(conn, &r);
		return;
	}
	switch (call.proc) {
	case NFSPROC4_NULL:
		reply_accepted(conn, xid, SUCCESS);
		return;
	case NFSPROC4_COMPOUND:
		serve_compound(conn, &call, rec + off, len - off, len);
		return;
	default:
		reply_accepted(conn, xid, PROC_UNAVAIL);
		return;
	}
}
