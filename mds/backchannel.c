/* Backchannel calls. A CB_COMPOUND's operations are encoded when it is submitted; CB_SEQUENCE is
 * put in front when the session's callback slot is free and the call goes out, so calls queue
 * per session and each gets the slot's next sequence id. Every call in flight sits in the
 * server's XID map with a timer; its reply (or the timeout, or the connection closing) completes
 * it exactly once. */
#include "mds/backchannel.h"

#include "proto/compound.h"
#include "proto/log.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mds_cb_call {
	struct mds_cb_call *next;   /* in the session's queue */
	struct mds_server *srv;
	struct mds_session *sess;   /* NULL once the session is gone */
	struct mds_conn *conn;      /* where it was sent (referenced), NULL while queued */
	uint32_t xid;
	int is_null;
	int uses_slot;
	uint32_t seqid;             /* CB_SEQUENCE's sequence id when sent */
	unsigned nops;
	uint8_t *ops_xdr;           /* the ops after CB_SEQUENCE, XDR-encoded */
	size_t ops_len;
	uint64_t timer;
	mds_cb_done_fn *done;
	void *arg;
};

static void call_free(struct mds_cb_call *call)
{
	if (call->conn)
		mds_conn_put(call->conn);
	free(call->ops_xdr);
	free(call);
}

static void send_next(struct mds_server *srv, struct mds_session *s);
static void probe_seq_done(struct mds_server *srv, int status, const CB_COMPOUND4res *res, void *arg);

/* Complete a call: unregister, notify, free; then let the next queued call use the slot. */
static void complete(struct mds_cb_call *call, int status, const CB_COMPOUND4res *res)
{
	struct mds_server *srv = call->srv;
	struct mds_session *s = call->sess;

	if (call->timer)
		mds_loop_del_timer(srv->loop, call->timer);
	mds_map_del(&srv->cb_calls, &call->xid, sizeof(call->xid));
	if (s && call->uses_slot)
		s->cb_busy = 0;
	if (call->done)
		call->done(srv, status, res, call->arg);
	call_free(call);
	if (s && !s->destroyed)
		send_next(srv, s);
}

static int64_t on_timeout(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mds_cb_call *call = arg;
	(void)loop;
	(void)id;

	call->timer = 0;
	LOG_WARN("backchannel call %08x to %s: no reply in %d ms", call->xid,
		 call->conn ? call->conn->peer_str : "?", MDS_CB_TIMEOUT_MS);
	complete(call, -ETIMEDOUT, NULL);
	return MDS_TIMER_STOP;
}

static int encode_call(struct mds_server *srv, struct mds_session *s, struct mds_cb_call *call,
		       struct proto_msg *m)
{
	struct proto_rpc_call hdr;
	struct proto_compound_enc e;
	int rc;

	memset(&hdr, 0, sizeof(hdr));
	hdr.xid = call->xid;
	hdr.prog = s->cb_program;
	hdr.vers = NFS_CB;
	hdr.proc = call->is_null ? CB_NULL : CB_COMPOUND;
	hdr.cred.flavor = s->cb_flavor;
	if (s->cb_flavor == AUTH_SYS) {
		hdr.cred.sys.stamp = (uint32_t)srv->boot;
		snprintf(hdr.cred.sys.machinename, sizeof(hdr.cred.sys.machinename), "%s", s->cb_machine);
		hdr.cred.sys.uid = s->cb_uid;
		hdr.cred.sys.gid = s->cb_gid;
	}
	hdr.verf.flavor = AUTH_NONE;
	rc = proto_rpc_call_encode(m, &hdr);
	if (rc || call->is_null)
		return rc;
	rc = proto_cb_compound_begin(&e, m, NULL, s->minorversion ? s->minorversion : 1, 0);
	if (rc)
		return rc;
	{
		nfs_cb_argop4 seq;
		CB_SEQUENCE4args *sa = &seq.nfs_cb_argop4_u.opcbsequence;

		memset(&seq, 0, sizeof(seq));
		seq.argop = OP_CB_SEQUENCE;
		memcpy(sa->csa_sessionid, s->id, NFS4_SESSIONID_SIZE);
		sa->csa_sequenceid = call->seqid;
		sa->csa_slotid = 0;
		sa->csa_highest_slotid = 0;
		sa->csa_cachethis = FALSE;
		rc = proto_cb_compound_add(&e, &seq);
		if (rc)
			return rc;
	}
	if (call->ops_len) {
		if (!xdr_opaque(&m->xdr, (char *)call->ops_xdr, (u_int)call->ops_len))
			return -EMSGSIZE;
		e.nops += call->nops;
	}
	return proto_compound_end(&e);
}

/* Put a call on the wire now. */
static int transmit(struct mds_server *srv, struct mds_session *s, struct mds_cb_call *call)
{
	struct proto_msg m;
	const uint8_t *wire;
	size_t wlen;
	int rc;

	if (!s->bc_conn || s->bc_conn->dead)
		return -ENOTCONN;
	call->xid = srv->next_cb_xid++;
	while (mds_map_find(&srv->cb_calls, &call->xid, sizeof(call->xid)))
		call->xid = srv->next_cb_xid++;
	if (call->uses_slot)
		call->seqid = s->cb_seqid;
	rc = proto_msg_init(&m, call->ops_len + 1024);
	if (rc)
		return rc;
	rc = encode_call(srv, s, call, &m);
	if (rc == 0)
		rc = proto_msg_finish(&m, &wire, &wlen);
	if (rc == 0 && wlen - 4 > s->back.ca_maxrequestsize && !call->is_null)
		rc = -EMSGSIZE;
	if (rc == 0)
		rc = mds_map_insert(&srv->cb_calls, &call->xid, sizeof(call->xid), call);
	if (rc == 0) {
		call->conn = s->bc_conn;
		mds_conn_get(call->conn);
		rc = mds_conn_send(call->conn, wire, wlen);
		if (rc) {
			mds_map_del(&srv->cb_calls, &call->xid, sizeof(call->xid));
			mds_conn_put(call->conn);
			call->conn = NULL;
		}
	}
	proto_msg_destroy(&m);
	if (rc)
		return rc;
	call->timer = mds_loop_add_timer(srv->loop, MDS_CB_TIMEOUT_MS, on_timeout, call);
	if (call->uses_slot)
		s->cb_busy = 1;
	LOG_DEBUG("backchannel call %08x (%s) to session %08x", call->xid, call->is_null ? "CB_NULL" : "CB_COMPOUND",
		  (unsigned)s->id[11] | (unsigned)s->id[10] << 8);
	return 0;
}

static void send_next(struct mds_server *srv, struct mds_session *s)
{
	while (s->cb_queue && !s->cb_busy && s->bc_conn) {
		struct mds_cb_call *call = s->cb_queue;
		int rc;

		s->cb_queue = call->next;
		call->next = NULL;
		rc = transmit(srv, s, call);
		if (rc) {
			call->sess = NULL;
			if (call->done)
				call->done(srv, rc, NULL, call->arg);
			call_free(call);
		}
	}
}

static int submit(struct mds_server *srv, struct mds_session *s, struct mds_cb_call *call)
{
	int rc;

	if (!s || s->destroyed) {
		call_free(call);
		return -ENOTCONN;
	}
	call->srv = srv;
	call->sess = s;
	if (!s->bc_conn) {
		call_free(call);
		return -ENOTCONN;
	}
	if (!call->uses_slot) {
		rc = transmit(srv, s, call);
		if (rc)
			call_free(call);
		return rc;
	}
	/* Queue behind earlier callbacks of this session (one slot). */
	{
		struct mds_cb_call **pp = &s->cb_queue;
		while (*pp)
			pp = &(*pp)->next;
		*pp = call;
	}
	send_next(srv, s);
	return 0;
}

/* A new callback that reports to done(arg); NULL when out of memory. */
static struct mds_cb_call *call_new(mds_cb_done_fn *done, void *arg)
{
	struct mds_cb_call *call = calloc(1, sizeof(*call));

	if (call) {
		call->done = done;
		call->arg = arg;
	}
	return call;
}

int mds_cb_null(struct mds_server *srv, struct mds_session *s, mds_cb_done_fn *done, void *arg)
{
	struct mds_cb_call *call = call_new(done, arg);

	if (!call)
		return -ENOMEM;
	call->is_null = 1;
	return submit(srv, s, call);
}

int mds_cb_compound(struct mds_server *srv, struct mds_session *s, const nfs_cb_argop4 *ops, unsigned nops,
		    mds_cb_done_fn *done, void *arg)
{
	struct mds_cb_call *call = call_new(done, arg);

	if (!call)
		return -ENOMEM;
	call->uses_slot = 1;
	for (unsigned i = 0; i < nops; i++) {
		void *buf;
		size_t len;
		uint8_t *n;
		int rc = proto_xdr_encode((xdrproc_t)xdr_nfs_cb_argop4, &ops[i], &buf, &len);

		if (rc) {
			call_free(call);
			return rc;
		}
		n = realloc(call->ops_xdr, call->ops_len + len);
		if (!n) {
			free(buf);
			call_free(call);
			return -ENOMEM;
		}
		memcpy(n + call->ops_len, buf, len);
		call->ops_xdr = n;
		call->ops_len += len;
		free(buf);
	}
	call->nops = nops;
	return submit(srv, s, call);
}

struct mds_session *mds_cb_session(struct mds_client *clp)
{
	proto_list_for_each(s, &clp->sessions, struct mds_session, in_client)
		if (!s->destroyed && s->bc_conn && !s->bc_conn->dead)
			return s;
	return NULL;
}

void mds_cb_reply(struct mds_conn *conn, uint32_t xid, const void *rec, size_t len)
{
	struct mds_server *srv = conn->srv;
	struct mds_cb_call *call = mds_map_find(&srv->cb_calls, &xid, sizeof(xid));
	struct proto_rpc_reply r;
	struct proto_cb_compound_res cres;
	struct mds_session *s;
	size_t off;
	int rc;

	if (!call || call->conn != conn) {
		LOG_DEBUG("connection %llu: a reply to xid %08x nobody waits for; dropped",
			  (unsigned long long)conn->id, xid);
		return;
	}
	s = call->sess;
	rc = proto_rpc_reply_decode(rec, len, &r, &off);
	if (rc || r.reply_stat != MSG_ACCEPTED || r.accept_stat != SUCCESS) {
		LOG_WARN("backchannel call %08x to %s: RPC error (%d, stat %u/%u)", xid, conn->peer_str, rc,
			 r.reply_stat, r.reply_stat == MSG_ACCEPTED ? r.accept_stat : r.reject_stat);
		if (s)
			s->cb_fault = 1;
		complete(call, -EPROTO, NULL);
		return;
	}
	if (call->is_null) {
		if (s)
			s->cb_probed = 1;
		complete(call, 0, NULL);
		return;
	}
	memset(&cres, 0, sizeof(cres));
	rc = proto_cb_compound_res_decode((const uint8_t *)rec + off, len - off, &cres);
	if (rc) {
		LOG_WARN("backchannel call %08x to %s: undecodable CB_COMPOUND reply", xid, conn->peer_str);
		proto_cb_compound_res_free(&cres);
		if (s)
			s->cb_fault = 1;
		complete(call, -EPROTO, NULL);
		return;
	}
	if (s && cres.res.resarray.resarray_len > 0 &&
	    cres.res.resarray.resarray_val[0].resop == OP_CB_SEQUENCE) {
		CB_SEQUENCE4res *sr = &cres.res.resarray.resarray_val[0].nfs_cb_resop4_u.opcbsequence;
		if (sr->csr_status == NFS4_OK) {
			CB_SEQUENCE4resok *ok = &sr->CB_SEQUENCE4res_u.csr_resok4;
			if (memcmp(ok->csr_sessionid, s->id, NFS4_SESSIONID_SIZE) != 0 ||
			    ok->csr_sequenceid != call->seqid || ok->csr_slotid != 0)
				s->cb_fault = 1;
			else
				s->cb_fault = 0;
			s->cb_seqid = call->seqid + 1;
		} else {
			/* The slot was not used (a client may not know the session yet, or is busy):
			 * the call failed, the path itself works. The probe says so itself. */
			if (call->done == probe_seq_done)
				LOG_DEBUG("backchannel call %08x: CB_SEQUENCE answered %s", xid,
					  proto_nfsstat4_name(sr->csr_status));
			else
				LOG_WARN("backchannel call %08x: CB_SEQUENCE answered %s", xid,
					 proto_nfsstat4_name(sr->csr_status));
		}
	} else if (s) {
		s->cb_fault = 1;
	}
	complete(call, 0, &cres.res);
	proto_cb_compound_res_free(&cres);
}

static void fail_queue(struct mds_server *srv, struct mds_session *s, int status)
{
	while (s->cb_queue) {
		struct mds_cb_call *call = s->cb_queue;
		s->cb_queue = call->next;
		call->sess = NULL;
		if (call->done)
			call->done(srv, status, NULL, call->arg);
		call_free(call);
	}
}

void mds_cb_session_gone(struct mds_server *srv, struct mds_session *s)
{
	struct mds_map_iter it;

	fail_queue(srv, s, -ENOTCONN);
	for (struct mds_cb_call *call = mds_map_first(&srv->cb_calls, &it); call; call = mds_map_next(&srv->cb_calls, &it))
		if (call->sess == s)
			call->sess = NULL;
}

void mds_cb_conn_gone(struct mds_server *srv, struct mds_session *s)
{
	/* Calls already sent fail with their connection (mds_cb_fail_conn); queued ones wait for a
	 * new backchannel connection until the session goes. */
	(void)srv;
	(void)s;
}

void mds_cb_fail_conn(struct mds_server *srv, struct mds_conn *conn)
{
	struct mds_map_iter it;
	struct mds_cb_call *dead[64];
	int n;

	do {
		n = 0;
		for (struct mds_cb_call *call = mds_map_first(&srv->cb_calls, &it); call && n < 64;
		     call = mds_map_next(&srv->cb_calls, &it))
			if (call->conn == conn)
				dead[n++] = call;
		for (int i = 0; i < n; i++)
			complete(dead[i], -ECONNRESET, NULL);
	} while (n == 64);
}

/* The probe: CB_NULL, then an empty CB_COMPOUND [CB_SEQUENCE]. A client may answer the
 * CB_SEQUENCE with NFS4ERR_BADSESSION (or DELAY) for a moment after CREATE_SESSION: Linux
 * matches a callback's session only once the client record it set up is marked ready, which
 * happens after the mount's EXCHANGE_ID/CREATE_SESSION replies are processed. So a probe so
 * answered is tried again, 250 ms doubling, for about 8 s before the path is called faulty. */
#define PROBE_TRIES 6

struct probe {
	struct mds_server *srv;
	unsigned char sessid[NFS4_SESSIONID_SIZE];
	int tries;
	struct proto_list link; /* on srv->probes */
};

static void probe_free(struct probe *p)
{
	proto_list_del(&p->link);
	free(p);
}

void mds_cb_probes_free(struct mds_server *srv)
{
	while (!proto_list_empty(&srv->probes))
		probe_free(proto_list_first(&srv->probes, struct probe, link));
}

static int64_t probe_seq_start(struct mds_loop *loop, uint64_t id, void *arg);

static int probe_retryable(nfsstat4 st)
{
	return st == NFS4ERR_BADSESSION || st == NFS4ERR_DELAY;
}

static void probe_seq_done(struct mds_server *srv, int status, const CB_COMPOUND4res *res, void *arg)
{
	struct probe *p = arg;
	struct mds_session *s = mds_session_find(srv, p->sessid);

	if (!s || status || !res || res->status == NFS4_OK) {
		probe_free(p);
		return;
	}
	if (probe_retryable(res->status) && p->tries < PROBE_TRIES) {
		int64_t delay = 250LL << p->tries;
		LOG_DEBUG("backchannel probe: CB_SEQUENCE answered %s; again in %lld ms",
			  proto_nfsstat4_name(res->status), (long long)delay);
		p->tries++;
		if (mds_loop_add_timer(srv->loop, delay, probe_seq_start, p))
			return;
	}
	LOG_WARN("backchannel probe to session %02x%02x%02x%02x: CB_SEQUENCE answered %s%s",
		 s->id[8], s->id[9], s->id[10], s->id[11], proto_nfsstat4_name(res->status),
		 p->tries ? " every time for 8 s" : "");
	s->cb_fault = 1;
	probe_free(p);
}

static int64_t probe_seq_start(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct probe *p = arg;
	struct mds_session *s = mds_session_find(p->srv, p->sessid);
	(void)loop;
	(void)id;

	if (!s || mds_cb_compound(p->srv, s, NULL, 0, probe_seq_done, p) != 0) {
		if (s)
			s->cb_fault = 1;
		probe_free(p);
	}
	return MDS_TIMER_STOP;
}

static void probe_null_done(struct mds_server *srv, int status, const CB_COMPOUND4res *res, void *arg)
{
	struct probe *p = arg;
	struct mds_session *s = mds_session_find(srv, p->sessid);
	(void)res;

	if (!s) {
		probe_free(p);
		return;
	}
	if (status) {
		LOG_WARN("session %02x%02x%02x%02x: backchannel does not answer CB_NULL (%d)", s->id[8], s->id[9],
			 s->id[10], s->id[11], status);
		s->cb_fault = 1;
		probe_free(p);
		return;
	}
	if (mds_cb_compound(srv, s, NULL, 0, probe_seq_done, p) != 0) {
		s->cb_fault = 1;
		probe_free(p);
	}
}

/* The probe starts from the loop, after the reply that set up the backchannel is queued: a
 * client learns of its session before the first callback on it. */
static int64_t probe_start(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct probe *p = arg;
	struct mds_server *srv = p->srv;
	struct mds_session *s = mds_session_find(srv, p->sessid);
	(void)loop;
	(void)id;

	if (!s || mds_cb_null(srv, s, probe_null_done, p) != 0)
		probe_free(p);
	return MDS_TIMER_STOP;
}

void mds_cb_probe(struct mds_server *srv, struct mds_session *s)
{
	struct probe *p = malloc(sizeof(*p));

	if (!p)
		return;
	p->srv = srv;
	p->tries = 0;
	memcpy(p->sessid, s->id, NFS4_SESSIONID_SIZE);
	proto_list_add_tail(&srv->probes, &p->link);
	if (!mds_loop_add_timer(srv->loop, 0, probe_start, p))
		probe_free(p);
}
