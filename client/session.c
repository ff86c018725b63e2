/* Client ID and session life: EXCHANGE_ID (asking for the pNFS MDS role), CREATE_SESSION with the
 * backchannel on the fore connection, RECLAIM_COMPLETE, lease renewal with SEQUENCE, and recovery.
 * Recovery climbs only as far as needed: a new connection is first bound to the old session
 * (BIND_CONN_TO_SESSION: in-flight calls replay from the server's reply cache); a dead session gets a
 * new one on the same client ID (state survives); a stale client ID means the server lost our state:
 * a new client ID, opens reclaimed, the writes layouts held uncommitted committed with LAYOUTCOMMIT
 * reclaim (the other layouts dropped), then RECLAIM_COMPLETE. A server that cannot be reached (at the
 * mount too: refused, reset, lost before the session is set up) is tried again with backoff for the
 * connect timeout, each try through the same setup. */
#include "client/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void send_exchange_id(struct pnfs_context *ctx);
static void send_create_session(struct pnfs_context *ctx);
static void send_bind(struct pnfs_context *ctx);
static void session_ready(struct pnfs_context *ctx);
static void lease_arm(struct pnfs_context *ctx);

static const char *state_name(enum pc_state s)
{
	static const char *const n[] = { "none", "connecting", "EXCHANGE_ID", "CREATE_SESSION",
					 "BIND_CONN_TO_SESSION", "reclaim", "ready", "down", "failed" };
	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static void set_state(struct pnfs_context *ctx, enum pc_state s)
{
	if (ctx->state != s)
		LOG_DEBUG("pnfs: %s:%d: %s -> %s", ctx->host, ctx->port, state_name(ctx->state), state_name(s));
	ctx->state = s;
}

/* Mount (first setup) failed: stop, and complete the mount call with err (ctx->err says why: every
 * caller sets it, naming the server). */
static void mount_failed(struct pnfs_context *ctx, int err)
{
	struct pc_call *call = ctx->mount_call;

	set_state(ctx, PC_ST_FAILED);
	pc_timer_cancel(ctx, &ctx->reconnect_timer);
	pc_timer_cancel(ctx, &ctx->connect_deadline);
	pc_timer_cancel(ctx, &ctx->setup_timer);
	pc_conn_close(ctx);
	ctx->mount_call = NULL;
	ctx->mount_looking = 0;
	pc_compounds_fail_all(ctx, err);
	if (call)
		pc_call_complete(call, err, NULL);
}

static void mount_failed_nomem(struct pnfs_context *ctx)
{
	mount_failed(ctx, pc_err(ctx, -ENOMEM, "%s:%d: out of memory", ctx->host, ctx->port));
}

/* ---- connecting ------------------------------------------------------------------------------ */

/* Seconds for messages: "30", "2.5". */
static const char *secs_str(unsigned ms, char *buf, size_t len)
{
	snprintf(buf, len, "%g", ms / 1000.0);
	return buf;
}

/* Whether a failure to reach the server may go away by itself (a server restarting, a network
 * blip), so that trying again is worth it. */
static int conn_retriable(const struct pnfs_context *ctx, int err)
{
	if (ctx->conn_fatal)
		return 0;
	switch (-err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ENETDOWN:
	case EHOSTDOWN:
	case EPIPE:
	case ENOTCONN:
	case EAGAIN:
	case EADDRNOTAVAIL:
		return 1;
	default:
		return 0;
	}
}

/* Why the server could not be reached, for the error of whatever gives up: the last failure, or,
 * with a try still under way, how far it got. */
static const char *conn_reason(struct pnfs_context *ctx, char *buf, size_t len)
{
	if (ctx->conn.fd >= 0 && !ctx->conn.connected)
		snprintf(buf, len, "%s%sno answer to the connection request yet", ctx->conn_why,
			 ctx->conn_why[0] ? "; then " : "");
	else if (ctx->conn.connected)
		snprintf(buf, len, "%s%sno answer to %s yet", ctx->conn_why, ctx->conn_why[0] ? "; then " : "",
			 ctx->state == PC_ST_EXCHANGE_ID || ctx->state == PC_ST_CREATE_SESSION || ctx->state == PC_ST_BIND
				 ? state_name(ctx->state) : "the session setup");
	else
		snprintf(buf, len, "%s", ctx->conn_why[0] ? ctx->conn_why : "not connected");
	return buf;
}

static void reconnect_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)t;
	if (ctx->state == PC_ST_DOWN && ctx->conn.fd < 0)
		pc_session_start(ctx);
}

/* Calls waiting for a connection longer than the timeout fail; the context keeps trying. A server
 * that answered nothing on a live connection is given the RPC timeout (from the call's submission);
 * one that cannot be reached, the connect timeout from the first failure: past it, a new call gets
 * one more try of its own (pc_submit reconnects at once), and fails with it. */
static void expire_waiters(struct pnfs_context *ctx)
{
	int err = ctx->last_conn_err ? ctx->last_conn_err : -ETIMEDOUT;
	char why[600], reason[400], secs[32];

	if (ctx->server_silent) {
		snprintf(why, sizeof(why), "no reply from %s:%d for %u ms", ctx->host, ctx->port,
			 ctx->opts.timeout_ms);
		pc_compounds_expire(ctx, ctx->opts.timeout_ms, 0, err, why);
		return;
	}
	snprintf(why, sizeof(why), "%s:%d: cannot connect for %s s: %s", ctx->host, ctx->port,
		 secs_str(ctx->opts.connect_timeout_ms, secs, sizeof(secs)), conn_reason(ctx, reason, sizeof(reason)));
	pc_compounds_expire(ctx, ctx->opts.connect_timeout_ms, ctx->connect_started_ms, err, why);
}

/* The connect timeout is over and no session is ready: a mount fails with the last reason; a
 * mounted context fails the calls that waited that long (and goes on trying). */
static void connect_deadline_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	char reason[400], secs[32];
	int err = ctx->last_conn_err ? ctx->last_conn_err : -ETIMEDOUT;
	(void)t;

	if (ctx->state == PC_ST_READY || ctx->state == PC_ST_FAILED)
		return;
	if (ctx->mounted) {
		expire_waiters(ctx);
		return;
	}
	if (!ctx->mount_call)
		return;
	pc_err(ctx, err, "%s:%d: cannot connect for %s s: %s", ctx->host, ctx->port,
	       secs_str(ctx->opts.connect_timeout_ms, secs, sizeof(secs)), conn_reason(ctx, reason, sizeof(reason)));
	LOG_DEBUG("pnfs: %s", ctx->err);
	mount_failed(ctx, err);
}

/* The server is not reached yet: from now on tries are bounded by the connect timeout. */
static void connect_series_begin(struct pnfs_context *ctx)
{
	if (ctx->connect_started_ms)
		return;
	ctx->connect_started_ms = pc_now_ms();
	ctx->connect_failures = 0;
	ctx->connect_deadline.fn = connect_deadline_fire;
	pc_timer_arm(ctx, &ctx->connect_deadline, ctx->opts.connect_timeout_ms);
}

/* A session is set up on the connection (CREATE_SESSION or BIND_CONN_TO_SESSION done): the server
 * is reached. What follows (a reclaim, the mount's LOOKUP) is bounded by the RPC timeout. */
static void connect_series_end(struct pnfs_context *ctx)
{
	ctx->connect_started_ms = 0;
	ctx->connect_failures = 0;
	ctx->last_conn_err = 0;
	ctx->conn_why[0] = 0;
	pc_timer_cancel(ctx, &ctx->connect_deadline);
}

/* The next try: at once after a connection of a mounted context was lost, then 100 ms doubling to
 * 2 s. */
static void reconnect_later(struct pnfs_context *ctx)
{
	unsigned n = ctx->connect_failures + (ctx->mounted ? 0 : 1);
	uint64_t delay = n ? 100ull << (n - 1 < 5 ? n - 1 : 5) : 0;

	if (delay > 2000)
		delay = 2000;
	ctx->connect_failures++;
	ctx->reconnect_timer.fn = reconnect_fire;
	pc_timer_arm(ctx, &ctx->reconnect_timer, delay);
}

void pc_session_start(struct pnfs_context *ctx)
{
	int rc;

	if (ctx->conn.fd >= 0)
		return;
	pc_timer_cancel(ctx, &ctx->reconnect_timer);
	if (ctx->state == PC_ST_NONE || ctx->state == PC_ST_FAILED)
		set_state(ctx, PC_ST_CONNECTING);
	connect_series_begin(ctx);
	rc = pc_conn_open(ctx);
	if (rc < 0) {
		ctx->last_conn_err = rc;
		ctx->server_silent = 0;
		pc_session_conn_lost(ctx, rc);
	}
}

void pc_session_conn_up(struct pnfs_context *ctx)
{
	/* The server is not reached until a session is set up on this connection (connect_series_end):
	 * a connection lost before that is one more failed try. */
	ctx->server_silent = 0;
	if (ctx->have_session)
		send_bind(ctx);
	else if (ctx->have_clientid)
		send_create_session(ctx);
	else
		send_exchange_id(ctx);
}

void pc_session_conn_lost(struct pnfs_context *ctx, int err)
{
	char secs[32];

	pc_conn_close(ctx);
	ctx->last_conn_err = err;
	if (!ctx->conn_why[0])
		pc_conn_why(ctx, "%s", strerror(-err));
	if (!ctx->mounted) {
		if (!ctx->mount_call && ctx->state == PC_ST_FAILED)
			return;
		connect_series_begin(ctx);
		if (ctx->mount_call && conn_retriable(ctx, err) &&
		    pc_now_ms() - ctx->connect_started_ms < ctx->opts.connect_timeout_ms) {
			/* A server restarting, say: try again; setup starts over from where it got to. */
			LOG_DEBUG("pnfs: %s:%d: %s; trying again", ctx->host, ctx->port, ctx->conn_why);
			set_state(ctx, PC_ST_DOWN);
			pc_timer_cancel(ctx, &ctx->setup_timer);
			pc_compounds_conn_lost(ctx);
			reconnect_later(ctx);
			return;
		}
		if (conn_retriable(ctx, err))
			pc_err(ctx, err, "%s:%d: cannot connect for %s s: %s", ctx->host, ctx->port,
			       secs_str(ctx->opts.connect_timeout_ms, secs, sizeof(secs)), ctx->conn_why);
		else
			pc_err(ctx, err, "%s:%d: %s", ctx->host, ctx->port, ctx->conn_why);
		mount_failed(ctx, err);
		return;
	}
	if (ctx->state == PC_ST_FAILED)
		return;
	connect_series_begin(ctx);
	set_state(ctx, PC_ST_DOWN);
	pc_timer_cancel(ctx, &ctx->setup_timer);
	pc_compounds_conn_lost(ctx);
	expire_waiters(ctx);
	reconnect_later(ctx);
}

/* A setup step failed in a way a later try may fix (DELAY, resources): try again shortly. */
static void setup_retry_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)t;
	if (!ctx->conn.connected)
		return;
	pc_session_conn_up(ctx);
}

static void setup_retry(struct pnfs_context *ctx)
{
	uint64_t ms = 200ull << (ctx->setup_delays < 4 ? ctx->setup_delays : 4);

	if (++ctx->setup_delays > 40) {
		pc_err(ctx, -ETIMEDOUT, "%s:%d: session setup kept failing", ctx->host, ctx->port);
		if (!ctx->mounted) {
			mount_failed(ctx, -ETIMEDOUT);
			return;
		}
	}
	ctx->setup_timer.fn = setup_retry_fire;
	pc_timer_arm(ctx, &ctx->setup_timer, ms);
}

/* Whether a setup step's outcome no longer matters: the connection was lost (the reconnect restarts
 * setup) or the context failed. */
static int setup_stale(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;

	return (c->status == -ENOTCONN && !ctx->conn.connected) || c->status == -ECANCELED ||
	       ctx->state == PC_ST_FAILED;
}

/* The step's result, or NULL with c->status set to why not. */
static nfs_resop4 *setup_result(struct pc_compound *c, nfs_opnum4 op)
{
	nfs_resop4 *r = pc_res_op(c, op);

	if (!r && c->status >= 0) {
		c->status = -EPROTO;
		snprintf(c->errtext, sizeof(c->errtext), "the reply has no %s result", proto_opnum4_name(op));
	}
	return r;
}

static void setup_fatal(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	int err = pc_compound_err(c);

	LOG_WARN("pnfs: %s", ctx->err);
	if (!ctx->mounted)
		mount_failed(ctx, err);
	else
		setup_retry(ctx);
}

/* ---- EXCHANGE_ID --------------------------------------------------------------------------- */

static void exchange_id_done(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	nfs_resop4 *r;
	EXCHANGE_ID4resok *ok;

	if (setup_stale(c))
		goto out;
	if (c->nfs_status == NFS4ERR_DELAY || c->nfs_status == NFS4ERR_RESOURCE) {
		setup_retry(ctx);
		goto out;
	}
	r = setup_result(c, OP_EXCHANGE_ID);
	if (c->status < 0 || !r) {
		setup_fatal(c);
		goto out;
	}
	ok = &r->nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
	if (ctx->have_clientid && ctx->clientid == ok->eir_clientid && (ok->eir_flags & EXCHGID4_FLAG_CONFIRMED_R)) {
		/* The server still knows this client: its state is intact. */
		ctx->new_clientid = 0;
	} else if (ctx->mounted) {
		ctx->new_clientid = 1;
	}
	ctx->clientid = ok->eir_clientid;
	ctx->create_seq = ok->eir_sequenceid;
	ctx->eir_flags = ok->eir_flags;
	ctx->server_major_len = ok->eir_server_owner.so_major_id.so_major_id_len;
	if (ctx->server_major_len > sizeof(ctx->server_major))
		ctx->server_major_len = sizeof(ctx->server_major);
	memcpy(ctx->server_major, ok->eir_server_owner.so_major_id.so_major_id_val, ctx->server_major_len);
	ctx->server_scope_len = ok->eir_server_scope.eir_server_scope_len;
	if (ctx->server_scope_len > sizeof(ctx->server_scope))
		ctx->server_scope_len = sizeof(ctx->server_scope);
	memcpy(ctx->server_scope, ok->eir_server_scope.eir_server_scope_val, ctx->server_scope_len);
	ctx->have_clientid = 1;
	if (!(ok->eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS))
		LOG_DEBUG("pnfs: %s:%d does not act as a pNFS MDS for us (flags 0x%x): MDS-path I/O only",
			  ctx->host, ctx->port, ok->eir_flags);
	send_create_session(ctx);
out:
	if (ctx->setup_c == c)
		ctx->setup_c = NULL;
	pc_compound_free(c);
}

static void send_exchange_id(struct pnfs_context *ctx)
{
	struct pc_compound *c = pc_compound_new(ctx, "EXCHANGE_ID %s:%d", ctx->host, ctx->port);
	EXCHANGE_ID4args *a;
	nfs_argop4 *op;

	if (!c) {
		mount_failed_nomem(ctx);
		return;
	}
	set_state(ctx, PC_ST_EXCHANGE_ID);
	c->nosession = 1;
	c->setup = 1;
	c->done = exchange_id_done;
	op = pc_add(c, OP_EXCHANGE_ID);
	if (op) {
		a = &op->nfs_argop4_u.opexchange_id;
		memcpy(a->eia_clientowner.co_verifier, ctx->boot_verf, sizeof(ctx->boot_verf));
		a->eia_clientowner.co_ownerid.co_ownerid_val = ctx->owner_id;
		a->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(ctx->owner_id);
		a->eia_flags = ctx->opts.mds_io ? 0 : EXCHGID4_FLAG_USE_PNFS_MDS;
		a->eia_state_protect.spa_how = SP4_NONE;
	}
	ctx->setup_c = c;
	pc_submit(c);
}

/* ---- CREATE_SESSION ------------------------------------------------------------------------ */

static void reclaim_done(struct pnfs_context *ctx);

static void send_reclaim_complete(struct pnfs_context *ctx);

static void create_session_done(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	nfs_resop4 *r;
	CREATE_SESSION4resok *ok;
	int first = !ctx->mounted;

	if (setup_stale(c))
		goto out;
	switch (c->nfs_status) {
	case NFS4_OK:
		r = setup_result(c, OP_CREATE_SESSION);
		if (c->status < 0 || !r) {
			setup_fatal(c);
			goto out;
		}
		break;
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_SEQ_MISORDERED:
	case NFS4ERR_CLID_INUSE:
		/* The client ID is gone (server restart, lease expiry): start over with a new one. */
		LOG_INFO("pnfs: %s:%d: client ID %016llx: %s; establishing a new one", ctx->host, ctx->port,
			 (unsigned long long)ctx->clientid, proto_nfsstat4_name(c->nfs_status));
		ctx->have_clientid = 0;
		if (ctx->mounted)
			ctx->new_clientid = 1;
		ctx->stats.clientid_recoveries++;
		send_exchange_id(ctx);
		goto out;
	case NFS4ERR_DELAY:
	case NFS4ERR_RESOURCE:
		setup_retry(ctx);
		goto out;
	default:
		setup_fatal(c);
		goto out;
	}
	ok = &r->nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
	memcpy(ctx->sessionid, ok->csr_sessionid, sizeof(ctx->sessionid));
	ctx->create_seq++;
	ctx->have_session = 1;
	connect_series_end(ctx);
	ctx->setup_delays = 0;
	ctx->nslots = ok->csr_fore_chan_attrs.ca_maxrequests;
	if (ctx->nslots > PC_MAX_SLOTS)
		ctx->nslots = PC_MAX_SLOTS;
	if (ctx->nslots == 0)
		ctx->nslots = 1;
	ctx->target_slots = ctx->nslots;
	ctx->fore_maxreq = ok->csr_fore_chan_attrs.ca_maxrequestsize;
	ctx->fore_maxresp = ok->csr_fore_chan_attrs.ca_maxresponsesize;
	ctx->fore_maxops = ok->csr_fore_chan_attrs.ca_maxoperations;
	ctx->cb_nslots = ok->csr_back_chan_attrs.ca_maxrequests;
	if (ctx->cb_nslots > PC_CB_SLOTS)
		ctx->cb_nslots = PC_CB_SLOTS;
	ctx->cb_maxreq = ok->csr_back_chan_attrs.ca_maxrequestsize;
	ctx->cb_maxresp = ok->csr_back_chan_attrs.ca_maxresponsesize;
	for (unsigned i = 0; i < PC_CB_SLOTS; i++) {
		free(ctx->cb_slots[i].reply);
		ctx->cb_slots[i].reply = NULL;
		ctx->cb_slots[i].reply_len = 0;
		ctx->cb_slots[i].seqid = 0;
	}
	for (unsigned i = 0; i < PC_MAX_SLOTS; i++) {
		ctx->slots[i].seqid = 0;
		ctx->slots[i].bad = 0;
	}
	if (!(ok->csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN))
		LOG_WARN("pnfs: %s:%d: no backchannel on the session: layout recalls cannot reach us, so no "
			 "layouts are used", ctx->host, ctx->port);
	if (!(ok->csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN))
		ctx->eir_flags &= ~EXCHGID4_FLAG_USE_PNFS_MDS;
	LOG_DEBUG("pnfs: %s:%d: session with %u slots, max request %u, max response %u, %u ops", ctx->host,
		  ctx->port, ctx->nslots, ctx->fore_maxreq, ctx->fore_maxresp, ctx->fore_maxops);
	if (ctx->new_clientid) {
		/* The server lost our state: reclaim the opens during its grace period. */
		set_state(ctx, PC_ST_RECLAIM);
		pc_devices_new_clientid(ctx);
		pc_files_reclaim(ctx, 1, reclaim_done);
	} else if (first) {
		set_state(ctx, PC_ST_RECLAIM);
		send_reclaim_complete(ctx);
	} else {
		session_ready(ctx);
	}
out:
	pc_compound_free(c);
}

static void send_create_session(struct pnfs_context *ctx)
{
	struct pc_compound *c = pc_compound_new(ctx, "CREATE_SESSION %s:%d", ctx->host, ctx->port);
	CREATE_SESSION4args *a;
	nfs_argop4 *op;
	callback_sec_parms4 *sec;

	if (!c) {
		mount_failed_nomem(ctx);
		return;
	}
	set_state(ctx, PC_ST_CREATE_SESSION);
	if (ctx->have_session) {
		ctx->have_session = 0;
		pc_compounds_session_lost(ctx);
	}
	c->nosession = 1;
	c->setup = 1;
	c->done = create_session_done;
	op = pc_add(c, OP_CREATE_SESSION);
	sec = pc_alloc(c, sizeof(*sec));
	if (op && sec) {
		a = &op->nfs_argop4_u.opcreate_session;
		a->csa_clientid = ctx->clientid;
		a->csa_sequence = ctx->create_seq;
		a->csa_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		a->csa_fore_chan_attrs.ca_maxrequestsize = PROTO_IO_MAX + 16384;
		a->csa_fore_chan_attrs.ca_maxresponsesize = PROTO_IO_MAX + 16384;
		a->csa_fore_chan_attrs.ca_maxresponsesize_cached = 64 * 1024;
		a->csa_fore_chan_attrs.ca_maxoperations = PC_MAX_OPS;
		a->csa_fore_chan_attrs.ca_maxrequests = ctx->opts.slots;
		a->csa_back_chan_attrs.ca_maxrequestsize = 256 * 1024;
		a->csa_back_chan_attrs.ca_maxresponsesize = 16 * 1024;
		a->csa_back_chan_attrs.ca_maxresponsesize_cached = 16 * 1024;
		a->csa_back_chan_attrs.ca_maxoperations = 16;
		a->csa_back_chan_attrs.ca_maxrequests = PC_CB_SLOTS;
		a->csa_cb_program = PC_CB_PROGRAM;
		sec->cb_secflavor = AUTH_NONE;
		a->csa_sec_parms.csa_sec_parms_val = sec;
		a->csa_sec_parms.csa_sec_parms_len = 1;
	}
	pc_submit(c);
}

/* ---- BIND_CONN_TO_SESSION -------------------------------------------------------------------- */

static void bind_done(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	int state_change = c->u64[0] == 0; /* 0: after reconnect; 1: only fixing the backchannel */

	if (setup_stale(c))
		goto out;
	if (c->nfs_status == NFS4_OK && c->status == 0 && pc_res_op(c, OP_BIND_CONN_TO_SESSION)) {
		if (state_change) {
			connect_series_end(ctx);
			session_ready(ctx);
		}
		goto out;
	}
	if (!state_change) {
		LOG_WARN("pnfs: %s:%d: could not rebind the backchannel: %s", ctx->host, ctx->port,
			 proto_nfsstat4_name(c->nfs_status));
		goto out;
	}
	if (c->nfs_status == NFS4ERR_DELAY) {
		setup_retry(ctx);
		goto out;
	}
	/* BADSESSION, DEADSESSION, or a server without BIND_CONN_TO_SESSION: a new session on the same
	 * client ID keeps the state; calls in flight are sent again on it. */
	LOG_INFO("pnfs: %s:%d: session not rebound (%s); creating a new one", ctx->host, ctx->port,
		 c->have_res ? proto_nfsstat4_name(c->nfs_status) : strerror(-c->status));
	ctx->stats.session_recoveries++;
	send_create_session(ctx);
out:
	pc_compound_free(c);
}

static void send_bind_dir(struct pnfs_context *ctx, int backchannel_only)
{
	struct pc_compound *c = pc_compound_new(ctx, "BIND_CONN_TO_SESSION %s:%d", ctx->host, ctx->port);
	nfs_argop4 *op;

	if (!c)
		return;
	if (!backchannel_only)
		set_state(ctx, PC_ST_BIND);
	c->nosession = 1;
	c->setup = 1;
	c->u64[0] = (uint64_t)backchannel_only;
	c->done = bind_done;
	op = pc_add(c, OP_BIND_CONN_TO_SESSION);
	if (op) {
		memcpy(op->nfs_argop4_u.opbind_conn_to_session.bctsa_sessid, ctx->sessionid,
		       sizeof(ctx->sessionid));
		op->nfs_argop4_u.opbind_conn_to_session.bctsa_dir = CDFC4_BACK_OR_BOTH;
		op->nfs_argop4_u.opbind_conn_to_session.bctsa_use_conn_in_rdma_mode = FALSE;
	}
	pc_submit(c);
}

static void send_bind(struct pnfs_context *ctx)
{
	send_bind_dir(ctx, 0);
}

/* ---- RECLAIM_COMPLETE and readiness -------------------------------------------------------- */

static void reclaim_complete_done(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;

	if (c->status == -ENOTCONN || c->status == -ECANCELED || ctx->state == PC_ST_FAILED)
		goto out;
	if (c->status < 0 && c->nfs_status != NFS4ERR_COMPLETE_ALREADY) {
		pc_compound_err(c);
		LOG_WARN("pnfs: %s", ctx->err);
	}
	session_ready(ctx);
out:
	pc_compound_free(c);
}

static void send_reclaim_complete(struct pnfs_context *ctx)
{
	struct pc_compound *c = pc_compound_new(ctx, "RECLAIM_COMPLETE %s:%d", ctx->host, ctx->port);
	nfs_argop4 *op;

	if (!c) {
		mount_failed_nomem(ctx);
		return;
	}
	c->setup = 1;
	c->cachethis = 1;
	c->done = reclaim_complete_done;
	op = pc_add(c, OP_RECLAIM_COMPLETE);
	if (op)
		op->nfs_argop4_u.opreclaim_complete.rca_one_fs = FALSE;
	pc_submit(c);
}

static void reclaim_done(struct pnfs_context *ctx)
{
	if (ctx->state != PC_ST_RECLAIM)
		return;
	ctx->new_clientid = 0;
	send_reclaim_complete(ctx);
}

static void mount_lookup(struct pnfs_context *ctx);

static void session_ready(struct pnfs_context *ctx)
{
	set_state(ctx, PC_ST_READY);
	connect_series_end(ctx);
	ctx->setup_delays = 0;
	ctx->last_seq_ms = pc_now_ms();
	lease_arm(ctx);
	if (!ctx->mounted && ctx->mount_call && !ctx->mount_looking)
		mount_lookup(ctx);
	pc_compounds_kick(ctx);
}

static void old_session_destroyed(struct pc_compound *c)
{
	if (c->status < 0)
		LOG_DEBUG("pnfs: %s:%d: the old session was not destroyed: %s", c->ctx->host, c->ctx->port,
			  pc_compound_err(c) ? strerror(-pc_compound_err(c)) : "?");
	pc_compound_free(c);
}

/* A teardown call on its own, outside any session (DESTROY_SESSION, DESTROY_CLIENTID), not retried:
 * *op is filled in by the caller, then pc_submit(). NULL when out of memory. */
static struct pc_compound *teardown_call(struct pnfs_context *ctx, nfs_opnum4 opnum, const char *name,
					 void (*done)(struct pc_compound *), void *priv, nfs_argop4 **op)
{
	struct pc_compound *c = pc_compound_new(ctx, "%s %s:%d", name, ctx->host, ctx->port);

	if (!c)
		return NULL;
	c->nosession = 1;
	c->setup = 1;
	c->no_retry = 1;
	c->priv = priv;
	c->done = done;
	*op = pc_add(c, opnum);
	return c;
}

/* Send DESTROY_SESSION for the current session, on its own (not in it): done gets the compound.
 * Returns 0, or -ENOMEM (nothing sent, done not called). */
static int send_destroy_session(struct pnfs_context *ctx, void (*done)(struct pc_compound *), void *priv)
{
	nfs_argop4 *op;
	struct pc_compound *c = teardown_call(ctx, OP_DESTROY_SESSION, "DESTROY_SESSION", done, priv, &op);

	if (!c)
		return -ENOMEM;
	if (op)
		memcpy(op->nfs_argop4_u.opdestroy_session.dsa_sessionid, ctx->sessionid, sizeof(ctx->sessionid));
	pc_submit(c);
	return 0;
}

void pc_session_recover(struct pnfs_context *ctx, nfsstat4 why)
{
	if (ctx->state != PC_ST_READY || !ctx->conn.connected)
		return; /* already on its way */
	LOG_INFO("pnfs: %s:%d: %s; recovering the session", ctx->host, ctx->port, proto_nfsstat4_name(why));
	if (why == NFS4ERR_CONN_NOT_BOUND_TO_SESSION) {
		send_bind(ctx);
		return;
	}
	if (why == NFS4ERR_STALE_CLIENTID) {
		ctx->have_clientid = 0;
		ctx->have_session = 0;
		ctx->new_clientid = 1;
		ctx->stats.clientid_recoveries++;
		pc_compounds_session_lost(ctx);
		send_exchange_id(ctx);
		return;
	}
	ctx->stats.session_recoveries++;
	/* The server still has a session given up for its slots: destroy it, or it keeps the session,
	 * and its client ID with it, busy until the lease ends. */
	if (why != NFS4ERR_BADSESSION && why != NFS4ERR_DEADSESSION)
		(void)send_destroy_session(ctx, old_session_destroyed, NULL);
	send_create_session(ctx);
}

void pc_session_seq_flags(struct pnfs_context *ctx, uint32_t flags)
{
	uint64_t now = pc_now_ms();

	if ((flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION |
		      SEQ4_STATUS_BACKCHANNEL_FAULT)) &&
	    now - ctx->cb_path_fix_ms > 10000) {
		ctx->cb_path_fix_ms = now;
		LOG_INFO("pnfs: %s:%d reports the backchannel down (flags 0x%x); binding it again", ctx->host,
			 ctx->port, flags);
		send_bind_dir(ctx, 1);
	}
	if (flags & (SEQ4_STATUS_DEVID_CHANGED | SEQ4_STATUS_DEVID_DELETED))
		pc_devices_changed(ctx);
	if (flags & (SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED | SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED |
		     SEQ4_STATUS_ADMIN_STATE_REVOKED | SEQ4_STATUS_RECALLABLE_STATE_REVOKED))
		LOG_WARN("pnfs: %s:%d revoked some of our state (flags 0x%x): files using it will fail with "
			 "EBADF", ctx->host, ctx->port, flags);
	if (flags & SEQ4_STATUS_RESTART_RECLAIM_NEEDED)
		pc_session_recover(ctx, NFS4ERR_STALE_CLIENTID);
}

/* ---- lease ------------------------------------------------------------------------------------ */

void pc_lease_touch(struct pnfs_context *ctx)
{
	ctx->last_seq_ms = pc_now_ms();
}

static void renew_done(struct pc_compound *c)
{
	c->ctx->renewing = 0;
	if (c->status < 0 && c->status != -ENOTCONN && c->status != -ECANCELED) {
		pc_compound_err(c);
		LOG_DEBUG("pnfs: lease renewal: %s", c->ctx->err);
	}
	pc_compound_free(c);
}

static void lease_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	uint64_t period = (uint64_t)(ctx->lease_s ? ctx->lease_s : 90) * 1000 / 3;
	(void)t;

	if (ctx->state == PC_ST_FAILED || !ctx->have_session)
		return;
	if (ctx->state == PC_ST_READY && !ctx->renewing && pc_now_ms() - ctx->last_seq_ms >= period) {
		struct pc_compound *c = pc_compound_new(ctx, "SEQUENCE (lease renewal) %s:%d", ctx->host,
							 ctx->port);
		if (c) {
			ctx->renewing = 1;
			c->done = renew_done;
			pc_submit(c);
		}
	}
	lease_arm(ctx);
}

static void lease_arm(struct pnfs_context *ctx)
{
	uint64_t period = (uint64_t)(ctx->lease_s ? ctx->lease_s : 90) * 1000 / 6;

	ctx->lease_timer.fn = lease_fire;
	pc_timer_arm(ctx, &ctx->lease_timer, period ? period : 1000);
}

/* ---- mount ------------------------------------------------------------------------------------ */

static void mount_lookup_done(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	struct pc_call *call = ctx->mount_call;
	nfs_resop4 *fh = pc_res_op(c, OP_GETFH), *ga = pc_res_op(c, OP_GETATTR);
	struct proto_fattr fa;
	int rc = c->status;

	ctx->mount_looking = 0;
	if (!call)
		goto out;
	if (rc < 0) {
		pc_compound_err(c);
		goto fail;
	}
	if (!fh || !ga) {
		rc = pc_err(ctx, -EPROTO, "%s: reply without GETFH/GETATTR", c->what);
		goto fail;
	}
	{
		nfs_fh4 *o = &fh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
		if (o->nfs_fh4_len == 0 || o->nfs_fh4_len > NFS4_FHSIZE) {
			rc = pc_err(ctx, -EPROTO, "%s: bad file handle length %u", c->what, o->nfs_fh4_len);
			goto fail;
		}
		memcpy(ctx->root_fh, o->nfs_fh4_val, o->nfs_fh4_len);
		ctx->root_fhlen = o->nfs_fh4_len;
	}
	memset(&fa, 0, sizeof(fa));
	rc = proto_fattr_decode(&ga->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, &fa, NULL);
	if (rc < 0 && rc != -ENOTSUP) {
		rc = pc_err(ctx, -EPROTO, "%s: undecodable attributes", c->what);
		goto fail;
	}
	if (proto_attrmask_isset(&fa.mask, FATTR4_TYPE) && fa.type != NF4DIR) {
		rc = pc_err(ctx, -ENOTDIR, "%s: not a directory", c->what);
		goto fail;
	}
	ctx->lease_s = proto_attrmask_isset(&fa.mask, FATTR4_LEASE_TIME) && fa.lease_time ? fa.lease_time : 90;
	ctx->layout_blksize = proto_attrmask_isset(&fa.mask, FATTR4_LAYOUT_BLKSIZE) ? fa.layout_blksize : 0;
	ctx->nfs_layout_types = 0;
	if (proto_attrmask_isset(&fa.mask, FATTR4_FS_LAYOUT_TYPES)) {
		ctx->nfs_layout_types = fa.fs_layout_types_len;
		memcpy(ctx->fs_layout_types, fa.fs_layout_types, sizeof(layouttype4) * fa.fs_layout_types_len);
	}
	ctx->layout_type = ctx->opts.mds_io ? 0 : pc_lo_type_choose(ctx, ctx->fs_layout_types, ctx->nfs_layout_types);
	ctx->fs_maxread = proto_attrmask_isset(&fa.mask, FATTR4_MAXREAD) ? fa.maxread : 0;
	ctx->fs_maxwrite = proto_attrmask_isset(&fa.mask, FATTR4_MAXWRITE) ? fa.maxwrite : 0;
	ctx->mounted = 1;
	ctx->mount_call = NULL;
	lease_arm(ctx);
	LOG_DEBUG("pnfs: mounted %s:%d%s (lease %us, %u layout types, layout_blksize %u)", ctx->host, ctx->port,
		  ctx->export, ctx->lease_s, ctx->nfs_layout_types, ctx->layout_blksize);
	pc_compound_free(c);
	pc_call_complete(call, 0, NULL);
	return;
fail:
	pc_compound_free(c);
	mount_failed(ctx, rc);
	return;
out:
	pc_compound_free(c);
}

static void mount_lookup(struct pnfs_context *ctx)
{
	struct pc_compound *c = pc_compound_new(ctx, "LOOKUP %s:%d%s", ctx->host, ctx->port, ctx->export);
	const char *comp[PC_PATH_MAX_DEPTH];
	int n;

	if (!c) {
		mount_failed_nomem(ctx);
		return;
	}
	c->done = mount_lookup_done;
	pc_add_putrootfh(c);
	n = pc_path_split(c, ctx->export, comp, PC_PATH_MAX_DEPTH);
	if (n < 0) {
		pc_compound_free(c);
		mount_failed(ctx, pc_err(ctx, n, "%s:%d: bad export path %s", ctx->host, ctx->port, ctx->export));
		return;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(comp[i], "..") == 0)
			pc_add(c, OP_LOOKUPP);
		else
			pc_add_lookup(c, comp[i]);
	}
	pc_add_getfh(c);
	pc_add_getattr(c, &pc_attrs_fs);
	ctx->mount_looking = 1;
	pc_submit(c);
}

int pnfs_mount_async(struct pnfs_context *ctx, const char *host, int port, const char *export,
		     pnfs_cb cb, void *private_data)
{
	struct pc_call *call;

	if (!ctx || !host || !*host)
		return -EINVAL;
	if (ctx->state != PC_ST_NONE)
		return pc_err(ctx, -EALREADY, "this context is already mounted (or was)");
	if (strlen(host) >= sizeof(ctx->host))
		return pc_err(ctx, -EINVAL, "host name too long");
	snprintf(ctx->host, sizeof(ctx->host), "%s", host);
	ctx->port = port > 0 ? port : PNFS_DEFAULT_PORT;
	free(ctx->export);
	ctx->export = strdup(export && *export ? export : "/");
	call = pc_call_new(ctx, sizeof(*call), cb, private_data);
	if (!ctx->export || !call) {
		free(call);
		return pc_err(ctx, -ENOMEM, "out of memory");
	}
	ctx->mount_call = call;
	pc_session_start(ctx);
	return 0;
}

/* ---- umount ------------------------------------------------------------------------------------ */

struct umount_call {
	struct pc_call call;
	int status;
};

static void umount_finish(struct umount_call *u)
{
	struct pnfs_context *ctx = u->call.ctx;

	/* the terminal state, as after a failure; said as what it is */
	LOG_DEBUG("pnfs: %s:%d: %s -> unmounted", ctx->host, ctx->port, state_name(ctx->state));
	ctx->state = PC_ST_FAILED;
	pc_timer_cancel(ctx, &ctx->lease_timer);
	pc_timer_cancel(ctx, &ctx->reconnect_timer);
	pc_timer_cancel(ctx, &ctx->connect_deadline);
	pc_timer_cancel(ctx, &ctx->setup_timer);
	pc_timer_cancel(ctx, &ctx->watchdog);
	pc_conn_close(ctx);
	ctx->have_session = ctx->have_clientid = 0;
	ctx->mounted = 0;
	pc_call_complete(&u->call, u->status, NULL);
}

/* A teardown step's reply (c, then freed): its error is the umount's unless one came first (a lost
 * connection is none). */
static void teardown_step_done(struct umount_call *u, struct pc_compound *c)
{
	if (c->status < 0 && u->status == 0 && c->status != -ENOTCONN)
		u->status = pc_compound_err(c);
	pc_compound_free(c);
}

static void destroy_clientid_done(struct pc_compound *c)
{
	struct umount_call *u = c->priv;

	teardown_step_done(u, c);
	umount_finish(u);
}

static void destroy_session_done(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	struct umount_call *u = c->priv;
	struct pc_compound *d;
	nfs_argop4 *op;

	teardown_step_done(u, c);
	ctx->have_session = 0;
	if (!ctx->conn.connected || !ctx->have_clientid) {
		umount_finish(u);
		return;
	}
	d = teardown_call(ctx, OP_DESTROY_CLIENTID, "DESTROY_CLIENTID", destroy_clientid_done, u, &op);
	if (!d) {
		umount_finish(u);
		return;
	}
	if (op)
		op->nfs_argop4_u.opdestroy_clientid.dca_clientid = ctx->clientid;
	pc_submit(d);
}

static void umount_files_closed(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct umount_call *u = priv;
	(void)data;

	if (status < 0 && u->status == 0)
		u->status = status;
	if (!ctx->have_session || !ctx->conn.connected || send_destroy_session(ctx, destroy_session_done, u) < 0)
		umount_finish(u);
}

static void umount_close_next(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct umount_call *u = priv;
	(void)data;

	if (status < 0 && u->status == 0)
		u->status = status;
	if (ctx->files) {
		int rc = pnfs_close_async(ctx, ctx->files, umount_close_next, u);
		if (rc == 0)
			return;
		if (u->status == 0)
			u->status = rc;
		while (ctx->files)
			pc_fh_free(ctx->files);
	}
	umount_files_closed(ctx, 0, NULL, u);
}

int pnfs_umount_async(struct pnfs_context *ctx, pnfs_cb cb, void *private_data)
{
	struct umount_call *u;

	if (!ctx)
		return -EINVAL;
	if (!ctx->mounted)
		return pc_err(ctx, -ENOTCONN, "not mounted");
	u = (struct umount_call *)pc_call_new(ctx, sizeof(*u), cb, private_data);
	if (!u)
		return pc_err(ctx, -ENOMEM, "out of memory");
	umount_close_next(ctx, 0, NULL, u);
	return 0;
}
