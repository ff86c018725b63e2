/* Compounds: every call to the MDS is one. A compound waits for a ready session and a free slot, is
 * encoded only when it goes out (so a resend after recovery carries current stateids), gets SEQUENCE
 * in front, and on the reply its SEQUENCE result decides: slot accounting and status flags on
 * success; requeue after session recovery (BADSESSION, DEADSESSION); a retry after NFS4ERR_DELAY.
 * On connection loss compounds in flight keep their slot and are replayed with the same seqid once
 * the connection is bound to the session again: the server's reply cache answers them. */
#include "client/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PC_DELAY_RETRIES 60      /* NFS4ERR_DELAY: 100 ms doubling to 2 s, about a minute */
#define PC_STALE_RETRIES 3

/* ---- building -------------------------------------------------------------------------------- */

struct pc_compound *pc_compound_new(struct pnfs_context *ctx, const char *fmt, ...)
{
	struct pc_compound *c = calloc(1, sizeof(*c));
	va_list ap;

	if (!c)
		return NULL;
	c->ctx = ctx;
	proto_list_init(&c->link);
	va_start(ap, fmt);
	vsnprintf(c->what, sizeof(c->what), fmt, ap);
	va_end(ap);
	c->slot = -1;
	c->nops = 1; /* ops[0]: SEQUENCE, filled at send time */
	c->ops[0].argop = OP_SEQUENCE;
	return c;
}

void pc_compound_free(struct pc_compound *c)
{
	if (!c)
		return;
	if (c->have_res)
		proto_compound_res_free(&c->res);
	while (c->arena) {
		struct pc_alloc *a = c->arena;
		c->arena = a->next;
		free(a);
	}
	free(c);
}

void *pc_alloc(struct pc_compound *c, size_t len)
{
	struct pc_alloc *a = calloc(1, sizeof(*a) + len + 1);

	if (!a) {
		c->status = -ENOMEM;
		return NULL;
	}
	a->next = c->arena;
	c->arena = a;
	return a->data;
}

char *pc_strdup(struct pc_compound *c, const char *s)
{
	size_t n = strlen(s);
	char *p = pc_alloc(c, n);
	if (p)
		memcpy(p, s, n + 1);
	return p;
}

nfs_argop4 *pc_add(struct pc_compound *c, nfs_opnum4 op)
{
	nfs_argop4 *a;

	if (c->nops >= PC_MAX_OPS) {
		c->status = -E2BIG;
		return NULL;
	}
	a = &c->ops[c->nops++];
	memset(a, 0, sizeof(*a));
	a->argop = op;
	return a;
}

void pc_utf8(utf8string *u, const char *s)
{
	u->utf8string_val = (char *)s;
	u->utf8string_len = (u_int)strlen(s);
}

void pc_add_putfh(struct pc_compound *c, const uint8_t *fh, uint32_t len)
{
	nfs_argop4 *a = pc_add(c, OP_PUTFH);
	if (!a)
		return;
	a->nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh;
	a->nfs_argop4_u.opputfh.object.nfs_fh4_len = len;
}

void pc_add_putrootfh(struct pc_compound *c)
{
	pc_add(c, OP_PUTROOTFH);
}

void pc_add_lookup(struct pc_compound *c, const char *name)
{
	nfs_argop4 *a = pc_add(c, OP_LOOKUP);
	if (a)
		pc_utf8(&a->nfs_argop4_u.oplookup.objname, name);
}

void pc_add_getfh(struct pc_compound *c)
{
	pc_add(c, OP_GETFH);
}

void pc_add_getattr(struct pc_compound *c, const struct proto_attrmask *m)
{
	nfs_argop4 *a = pc_add(c, OP_GETATTR);
	uint32_t *w;
	unsigned n = PROTO_BITMAP_MAX;

	if (!a)
		return;
	while (n > 0 && m->w[n - 1] == 0)
		n--;
	w = pc_alloc(c, sizeof(uint32_t) * (n ? n : 1));
	if (!w)
		return;
	memcpy(w, m->w, sizeof(uint32_t) * n);
	a->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = w;
	a->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = n;
}

void pc_bind_stateid(struct pc_compound *c, struct pnfs_fh *fh, stateid4 *sid)
{
	if (c->nsid >= sizeof(c->sid_ptr) / sizeof(c->sid_ptr[0]))
		return;
	c->sid_fh = fh;
	c->sid_ptr[c->nsid++] = sid;
	*sid = fh->open_sid;
}

/* ---- results --------------------------------------------------------------------------------- */

nfs_resop4 *pc_res(struct pc_compound *c, uint32_t i)
{
	uint32_t k;

	if (!c->have_res)
		return NULL;
	if (c->nosession) {
		if (i == 0)
			return NULL;
		k = i - 1;
	} else {
		k = i;
	}
	if (k >= c->res.res.resarray.resarray_len)
		return NULL;
	return &c->res.res.resarray.resarray_val[k];
}

nfs_resop4 *pc_res_op(struct pc_compound *c, nfs_opnum4 op)
{
	if (!c->have_res)
		return NULL;
	for (u_int k = 0; k < c->res.res.resarray.resarray_len; k++)
		if (c->res.res.resarray.resarray_val[k].resop == (unsigned)op)
			return &c->res.res.resarray.resarray_val[k];
	return NULL;
}

nfs_resop4 *pc_result(struct pc_compound *c, nfs_opnum4 op, int *rc)
{
	nfs_resop4 *r = pc_res_op(c, op);

	*rc = 0;
	if (c->status < 0)
		*rc = pc_compound_err(c);
	else if (!r)
		*rc = pc_err(c->ctx, -EPROTO, "%s: no %s result", c->what, proto_opnum4_name(op));
	return *rc < 0 ? NULL : r;
}

const char *pc_failed_op(struct pc_compound *c)
{
	u_int n;

	if (!c->have_res || (n = c->res.res.resarray.resarray_len) == 0)
		return "COMPOUND";
	return proto_opnum4_name(c->res.res.resarray.resarray_val[n - 1].resop);
}

/* The statuses that mean what a local file system's errno would: said in those words too. */
static const char *plain_words(nfsstat4 st)
{
	switch (st) {
	case NFS4ERR_PERM: case NFS4ERR_NOENT: case NFS4ERR_IO: case NFS4ERR_NXIO: case NFS4ERR_ACCESS: case NFS4ERR_EXIST: case NFS4ERR_XDEV:
	case NFS4ERR_NOTDIR: case NFS4ERR_ISDIR: case NFS4ERR_FBIG: case NFS4ERR_NOSPC: case NFS4ERR_ROFS:
	case NFS4ERR_MLINK: case NFS4ERR_NAMETOOLONG: case NFS4ERR_NOTEMPTY: case NFS4ERR_DQUOT:
	case NFS4ERR_STALE:
		return strerror(-pc_nfs_errno(st));
	default:
		return NULL;
	}
}

int pc_compound_err(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;

	if (c->status == 0)
		return 0;
	if (c->have_res && c->nfs_status != NFS4_OK && plain_words(c->nfs_status))
		pc_err(ctx, c->status, "%s: %s: %s (%s)", c->what, pc_failed_op(c), proto_nfsstat4_name(c->nfs_status),
		       plain_words(c->nfs_status));
	else if (c->have_res && c->nfs_status != NFS4_OK)
		pc_err(ctx, c->status, "%s: %s: %s", c->what, pc_failed_op(c), proto_nfsstat4_name(c->nfs_status));
	else if (c->errtext[0])
		pc_err(ctx, c->status, "%s: %s", c->what, c->errtext);
	else if (c->status == -ECANCELED)
		pc_err(ctx, c->status, "%s: cancelled", c->what);
	else
		pc_err(ctx, c->status, "%s: %s", c->what, strerror(-c->status));
	return c->status;
}

static void cerr(struct pc_compound *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cerr(struct pc_compound *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->errtext, sizeof(c->errtext), fmt, ap);
	va_end(ap);
}

/* ---- queues ---------------------------------------------------------------------------------- */

static void q_remove(struct pnfs_context *ctx, struct pc_compound *c)
{
	switch (c->q) {
	case PC_Q_WAIT:
	case PC_Q_SENT:
		proto_list_del(&c->link);
		break;
	case PC_Q_DELAY:
		pc_timer_cancel(ctx, &c->delay_timer);
		break;
	case PC_Q_NONE:
		break;
	}
	c->q = PC_Q_NONE;
}

static void q_wait_push(struct pnfs_context *ctx, struct pc_compound *c, int front)
{
	c->q = PC_Q_WAIT;
	if (front)
		proto_list_add(&ctx->waitq, &c->link);
	else
		proto_list_add_tail(&ctx->waitq, &c->link);
}

static void q_sent_push(struct pnfs_context *ctx, struct pc_compound *c)
{
	c->q = PC_Q_SENT;
	proto_list_add(&ctx->sentq, &c->link);
}

static void slot_release(struct pnfs_context *ctx, struct pc_compound *c)
{
	if (c->slot >= 0 && c->slot < PC_MAX_SLOTS && ctx->slots[c->slot].c == c)
		ctx->slots[c->slot].c = NULL;
	c->slot = -1;
	c->replay = 0;
}

static int slot_acquire(struct pnfs_context *ctx, struct pc_compound *c)
{
	unsigned limit = ctx->nslots;

	if (ctx->target_slots && ctx->target_slots < limit)
		limit = ctx->target_slots;
	for (unsigned i = 0; i < limit; i++) {
		struct pc_slot *s = &ctx->slots[i];
		if (c->probe ? i != c->probe_slot : s->interrupted)
			continue;
		if (!s->c && !s->bad) {
			s->c = c;
			c->slot = (int)i;
			c->seqid = s->seqid + 1;
			c->replay = 0;
			return 0;
		}
	}
	return -EBUSY;
}

static void complete(struct pc_compound *c);

/* c was sent and is given up without a reply (its caller timed out across reconnects). Whether the
 * server ran it is unknown, so no call may use the slot until a lone SEQUENCE on c's seqid settles it
 * (RFC 8881 2.10.6.1.3): a server that never saw c takes the probe as new; one that ran c answers
 * with a false or uncached retry, or with c's cached reply. Either way it then holds that seqid. A
 * real call in the probe's place could be answered with c's cached reply by a server that does not
 * compare a retry's arguments. */
static void slot_abandon(struct pnfs_context *ctx, struct pc_compound *c)
{
	struct pc_slot *s;

	if (c->slot < 0 || c->slot >= PC_MAX_SLOTS || !c->replay)
		return;
	s = &ctx->slots[c->slot];
	s->seqid = c->seqid - 1;
	if (!s->interrupted)
		ctx->slots_in_doubt++;
	s->interrupted = 1;
}

static void probe_done(struct pc_compound *p)
{
	struct pnfs_context *ctx = p->ctx;

	ctx->slots[p->probe_slot].probing = 0;
	if (p->status < 0)
		LOG_DEBUG("pnfs: %s:%d: slot %u not settled yet: %s", ctx->host, ctx->port, p->probe_slot,
			  ctx->err);
	pc_compound_free(p);
}

/* Queue a probe for every slot in doubt that has none out. */
static void probe_slots(struct pnfs_context *ctx)
{
	for (unsigned i = 0; i < ctx->nslots; i++) {
		struct pc_slot *s = &ctx->slots[i];
		struct pc_compound *p;

		if (!s->interrupted || s->probing || s->bad)
			continue;
		p = pc_compound_new(ctx, "SEQUENCE (slot %u in doubt) %s:%d", i, ctx->host, ctx->port);
		if (!p)
			return;
		p->probe = 1;
		p->probe_slot = i;
		p->done = probe_done;
		p->submitted_ms = pc_now_ms();
		s->probing = 1;
		ctx->ncompounds++;
		q_wait_push(ctx, p, 1);
	}
}

/* A probe's answer that settles its slot (see slot_abandon). Returns 1 when p was completed. */
static int probe_settled(struct pnfs_context *ctx, struct pc_compound *p, nfsstat4 seq_status)
{
	struct pc_slot *s;

	if (!p->probe || p->slot < 0)
		return 0;
	if (seq_status != NFS4_OK && seq_status != NFS4ERR_SEQ_FALSE_RETRY &&
	    seq_status != NFS4ERR_RETRY_UNCACHED_REP)
		return 0;
	s = &ctx->slots[p->slot];
	s->seqid = p->seqid;
	if (s->interrupted)
		ctx->slots_in_doubt--;
	s->interrupted = 0;
	ctx->stats.slots_settled++;
	LOG_DEBUG("pnfs: %s:%d: slot %d settled at seqid %u (%s)", ctx->host, ctx->port, p->slot, p->seqid,
		  proto_nfsstat4_name(seq_status));
	p->status = 0;
	complete(p);
	pc_compounds_kick(ctx);
	return 1;
}

static unsigned usable_slots(struct pnfs_context *ctx)
{
	unsigned n = 0;
	for (unsigned i = 0; i < ctx->nslots; i++)
		n += !ctx->slots[i].bad;
	return n;
}

static uint32_t highest_busy_slot(struct pnfs_context *ctx)
{
	uint32_t h = 0;
	for (unsigned i = 0; i < ctx->nslots; i++)
		if (ctx->slots[i].c)
			h = i;
	return h;
}

static void complete(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;

	q_remove(ctx, c);
	slot_release(ctx, c);
	if (ctx->ncompounds)
		ctx->ncompounds--;
	c->done(c);
}

static void fail(struct pc_compound *c, int err)
{
	c->status = err;
	complete(c);
}

/* ---- sending --------------------------------------------------------------------------------- */

static int encode(struct pc_compound *c, uint8_t **wire, size_t *wire_len)
{
	struct pnfs_context *ctx = c->ctx;
	struct proto_rpc_call call;
	struct proto_compound_enc e;
	struct proto_msg m;
	const uint8_t *w;
	size_t cap = 1024;
	uint32_t first = c->nosession ? 1 : 0;
	int rc;

	for (uint32_t i = first; i < c->nops; i++)
		cap += xdr_sizeof((xdrproc_t)xdr_nfs_argop4, &c->ops[i]) + 16;
	if (cap > PROTO_RM_RECORD_LIMIT)
		return -EMSGSIZE;
	rc = proto_msg_init(&m, cap);
	if (rc < 0)
		return rc;
	memset(&call, 0, sizeof(call));
	call.xid = c->xid;
	call.prog = NFS4_PROGRAM;
	call.vers = NFS_V4;
	call.proc = NFSPROC4_COMPOUND;
	call.cred.flavor = AUTH_SYS;
	call.cred.sys.stamp = (uint32_t)(pc_now_ms() / 1000);
	snprintf(call.cred.sys.machinename, sizeof(call.cred.sys.machinename), "%s", ctx->machine);
	call.cred.sys.uid = ctx->uid;
	call.cred.sys.gid = ctx->gid;
	call.verf.flavor = AUTH_NONE;
	rc = proto_rpc_call_encode(&m, &call);
	if (rc == 0)
		rc = proto_compound_begin(&e, &m, NULL, 1);
	for (uint32_t i = first; rc == 0 && i < c->nops; i++)
		rc = proto_compound_add(&e, &c->ops[i]);
	if (rc == 0)
		rc = proto_compound_end(&e);
	if (rc == 0 && !c->nosession && ctx->fore_maxreq && proto_msg_len(&m) > ctx->fore_maxreq)
		rc = -EMSGSIZE;
	if (rc < 0) {
		proto_msg_destroy(&m);
		return rc;
	}
	proto_msg_finish(&m, &w, wire_len);
	*wire = m.buf;
	m.buf = NULL;
	xdr_destroy(&m.xdr);
	(void)w;
	return 0;
}

static void watchdog(struct pnfs_context *ctx, struct pc_timer *t);

static void arm_watchdog(struct pnfs_context *ctx)
{
	if (!ctx->watchdog.armed) {
		ctx->watchdog.fn = watchdog;
		pc_timer_arm(ctx, &ctx->watchdog, ctx->opts.timeout_ms / 4 + 1);
	}
}

/* No byte from the server for timeout_ms while calls wait for replies: the connection is dead even
 * if TCP has not noticed; drop it, reconnect and replay. */
static void watchdog(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)t;
	if (proto_list_empty(&ctx->sentq) || ctx->conn.fd < 0 || !ctx->conn.connected)
		return;
	if (pc_now_ms() - ctx->conn.last_rx_ms >= ctx->opts.timeout_ms) {
		LOG_WARN("pnfs: no reply from %s:%d for %u ms; reconnecting", ctx->host, ctx->port,
			 ctx->opts.timeout_ms);
		pc_conn_close(ctx);
		pc_conn_why(ctx, "no reply for %u ms", ctx->opts.timeout_ms);
		ctx->server_silent = 1;
		pc_session_conn_lost(ctx, -ETIMEDOUT);
		return;
	}
	arm_watchdog(ctx);
}

static int send_one(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;
	uint8_t *wire;
	size_t len;
	int rc;

	if (!c->nosession) {
		SEQUENCE4args *sa = &c->ops[0].nfs_argop4_u.opsequence;
		c->ops[0].argop = OP_SEQUENCE;
		memcpy(sa->sa_sessionid, ctx->sessionid, sizeof(sa->sa_sessionid));
		sa->sa_sequenceid = c->seqid;
		sa->sa_slotid = (uint32_t)c->slot;
		sa->sa_highest_slotid = highest_busy_slot(ctx);
		sa->sa_cachethis = c->cachethis ? TRUE : FALSE;
		ctx->slots[c->slot].seqid = c->seqid;
	}
	if (c->sid_fh) {
		for (unsigned i = 0; i < c->nsid; i++)
			*c->sid_ptr[i] = c->sid_fh->open_sid;
		c->sid_gen = c->sid_fh->sid_gen;
	}
	c->xid = proto_xid_next(ctx->xids);
	rc = encode(c, &wire, &len);
	if (rc < 0) {
		cerr(c, "cannot encode the request (%s)", strerror(-rc));
		return rc;
	}
	rc = proto_xid_add(ctx->xids, c->xid, c, 0);
	if (rc < 0) {
		free(wire);
		cerr(c, "too many calls outstanding");
		return rc;
	}
	rc = pc_conn_send(ctx, wire, len);
	if (rc < 0) {
		proto_xid_take(ctx->xids, c->xid);
		cerr(c, "%s", strerror(-rc));
		return rc;
	}
	if (c->replay)
		ctx->stats.replays++;
	ctx->stats.compounds++;
	q_sent_push(ctx, c);
	if (!c->nosession)
		pc_lease_touch(ctx);
	arm_watchdog(ctx);
	return 0;
}

/* Whether c may go out in the current session state. */
static int may_send(struct pnfs_context *ctx, struct pc_compound *c)
{
	if (!ctx->conn.connected)
		return 0;
	if (c->nosession)
		return c->setup;
	if (c->sid_fh && c->sid_fh->reclaim_pending && !c->setup && !c->reclaim_op)
		return 0;
	if (!ctx->have_session)
		return 0;
	if (ctx->state == PC_ST_READY)
		return 1;
	return c->setup && ctx->state == PC_ST_RECLAIM;
}

void pc_compounds_kick(struct pnfs_context *ctx)
{
	struct proto_list *l, *next;

	if (ctx->slots_in_doubt && ctx->state == PC_ST_READY && ctx->conn.connected)
		probe_slots(ctx);
	for (l = ctx->waitq.next; l != &ctx->waitq; l = next) {
		struct pc_compound *c = proto_list_entry(l, struct pc_compound, link);
		next = l->next;
		if (!may_send(ctx, c))
			continue;
		if (!c->nosession && c->slot < 0 && slot_acquire(ctx, c) < 0)
			continue; /* later ones may be setup compounds: keep looking */
		q_remove(ctx, c);
		int rc = send_one(c);
		if (rc < 0) {
			if (ctx->conn.fd < 0 || !ctx->conn.connected) {
				/* Lost while sending: back to the queue, recovery resends it. */
				c->replay = c->slot >= 0;
				q_wait_push(ctx, c, 1);
				return;
			}
			if (c->slot >= 0)
				ctx->slots[c->slot].seqid = c->seqid - 1;
			fail(c, rc);
			next = ctx->waitq.next;
		}
	}
}

void pc_submit(struct pc_compound *c)
{
	struct pnfs_context *ctx = c->ctx;

	ctx->ncompounds++;
	c->submitted_ms = pc_now_ms();
	if (c->status < 0) { /* building failed (ENOMEM, E2BIG) */
		fail(c, c->status);
		return;
	}
	if (ctx->state == PC_ST_FAILED && !c->setup) {
		cerr(c, "not mounted");
		fail(c, -ENOTCONN);
		return;
	}
	q_wait_push(ctx, c, c->setup);
	if (ctx->state == PC_ST_DOWN && !ctx->conn.connected)
		pc_session_start(ctx); /* reconnect on demand */
	pc_compounds_kick(ctx);
}

/* ---- delays ------------------------------------------------------------------------------------ */

static void delay_fire(struct pnfs_context *ctx, struct pc_timer *t)
{
	struct pc_compound *c = t->arg;

	c->q = PC_Q_NONE;
	q_wait_push(ctx, c, 0);
	pc_compounds_kick(ctx);
}

static void retry_later(struct pc_compound *c, uint64_t ms)
{
	struct pnfs_context *ctx = c->ctx;

	q_remove(ctx, c);
	slot_release(ctx, c);
	if (c->have_res) {
		proto_compound_res_free(&c->res);
		c->have_res = 0;
	}
	c->q = PC_Q_DELAY;
	c->delay_timer.fn = delay_fire;
	c->delay_timer.arg = c;
	pc_timer_arm(ctx, &c->delay_timer, ms);
}

/* NFS4ERR_RETRY_UNCACHED_REP: a compound the server was not asked to cache (idempotent) is sent
 * afresh, a few times at most; 1 when it was. */
static int retry_uncached(struct pc_compound *c)
{
	if (c->cachethis || c->retries++ >= PC_STALE_RETRIES)
		return 0;
	retry_later(c, 0);
	return 1;
}

static uint64_t backoff_ms(unsigned retries)
{
	uint64_t ms = 100ull << (retries < 5 ? retries : 5);
	return ms > 2000 ? 2000 : ms;
}

/* ---- replies ----------------------------------------------------------------------------------- */

static void requeue_front(struct pnfs_context *ctx, struct pc_compound *c, int keep_slot)
{
	q_remove(ctx, c);
	if (!keep_slot)
		slot_release(ctx, c);
	else
		c->replay = 1;
	if (c->have_res) {
		proto_compound_res_free(&c->res);
		c->have_res = 0;
	}
	q_wait_push(ctx, c, 1);
}

/* SEQUENCE failed: the request was not executed. Returns 1 when c was requeued or completed. */
static void sequence_failed(struct pnfs_context *ctx, struct pc_compound *c, nfsstat4 st)
{
	struct pc_slot *s = c->slot >= 0 ? &ctx->slots[c->slot] : NULL;

	if (probe_settled(ctx, c, st))
		return;
	switch (st) {
	case NFS4ERR_BADSESSION:
	case NFS4ERR_DEADSESSION:
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_CONN_NOT_BOUND_TO_SESSION:
		if (c->no_retry) {
			c->nfs_status = st;
			fail(c, pc_nfs_errno(st));
			return;
		}
		requeue_front(ctx, c, 0);
		pc_session_recover(ctx, st);
		return;
	case NFS4ERR_DELAY:
		/* Not executed: the slot's seqid did not advance. */
		if (s)
			s->seqid = c->seqid - 1;
		if (c->retries++ < PC_DELAY_RETRIES) {
			retry_later(c, backoff_ms(c->retries));
			return;
		}
		break;
	case NFS4ERR_RETRY_UNCACHED_REP:
		if (retry_uncached(c))
			return;
		break;
	case NFS4ERR_BADSLOT:
	case NFS4ERR_SEQ_MISORDERED:
	case NFS4ERR_SEQ_FALSE_RETRY:
		/* Our idea of this slot differs from the server's: stop using it until a new session. */
		if (s) {
			LOG_WARN("pnfs: %s:%d: slot %d %s; not using it again", ctx->host, ctx->port, c->slot,
				 proto_nfsstat4_name(st));
			s->bad = 1;
			if (!usable_slots(ctx)) {
				/* Calls would wait for a slot forever: a new session brings fresh ones
				 * (state lives on with the client ID). */
				requeue_front(ctx, c, 0);
				pc_session_recover(ctx, st);
				return;
			}
		}
		if (!c->probe && c->retries++ < PC_STALE_RETRIES) {
			requeue_front(ctx, c, 0);
			pc_compounds_kick(ctx);
			return;
		}
		break;
	default:
		break;
	}
	c->nfs_status = st;
	fail(c, pc_nfs_errno(st));
}

void pc_rpc_reply(struct pnfs_context *ctx, void *rec, size_t len)
{
	struct proto_rpc_reply rh;
	struct pc_compound *c;
	uint32_t xid, type;
	size_t off;
	nfs_resop4 *seq;
	int rc;

	proto_rpc_peek(rec, len, &xid, &type);
	c = proto_xid_take(ctx->xids, xid);
	if (!c) {
		free(rec);
		return;
	}
	rc = proto_rpc_reply_decode(rec, len, &rh, &off);
	if (rc < 0 || rh.reply_stat != MSG_ACCEPTED || rh.accept_stat != SUCCESS) {
		if (c->slot >= 0)
			ctx->slots[c->slot].seqid = c->seqid - 1;
		c->status = -EPROTO;
		if (rc < 0) {
			cerr(c, "undecodable RPC reply");
		} else if (rh.reply_stat != MSG_ACCEPTED) {
			cerr(c, "RPC call denied (%s, auth_stat %u)",
			     rh.reject_stat == RPC_MISMATCH ? "RPC version mismatch" : "authentication error",
			     rh.auth_stat);
			c->status = -EACCES;
		} else {
			cerr(c, "RPC call not accepted (accept_stat %u)", rh.accept_stat);
		}
		free(rec);
		complete(c);
		return;
	}
	rc = proto_compound_res_decode((const uint8_t *)rec + off, len - off, &c->res);
	free(rec);
	c->have_res = 1;
	if (rc < 0) {
		cerr(c, "malformed COMPOUND reply (%s)", strerror(-rc));
		c->status = -EPROTO;
		complete(c);
		return;
	}
	c->nfs_status = c->res.res.status;
	if (!c->nosession) {
		seq = c->res.res.resarray.resarray_len ? &c->res.res.resarray.resarray_val[0] : NULL;
		if (!seq || seq->resop != OP_SEQUENCE) {
			nfsstat4 st = seq ? proto_resop_status(seq) : c->res.res.status;
			if (st != NFS4_OK) {
				sequence_failed(ctx, c, st);
				return;
			}
			cerr(c, "reply does not start with SEQUENCE");
			c->status = -EPROTO;
			complete(c);
			return;
		}
		if (seq->nfs_resop4_u.opsequence.sr_status != NFS4_OK) {
			sequence_failed(ctx, c, seq->nfs_resop4_u.opsequence.sr_status);
			return;
		}
		if (probe_settled(ctx, c, NFS4_OK))
			return;
		{
			SEQUENCE4resok *ok = &seq->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
			uint32_t target = ok->sr_target_highest_slotid + 1;
			ctx->target_slots = target < ctx->nslots ? target : ctx->nslots;
			if (ok->sr_status_flags)
				pc_session_seq_flags(ctx, ok->sr_status_flags);
		}
	}
	if (c->nfs_status == NFS4_OK) {
		c->status = 0;
		complete(c);
		return;
	}
	/* An op failed. Retry what the server asks to retry; stateids replaced under us: resend. */
	switch (c->nfs_status) {
	case NFS4ERR_RETRY_UNCACHED_REP:
		/* A replay after a lost connection that the server executed but did not cache: for a
		 * compound we did not ask it to cache (READ, WRITE, GETATTR: idempotent) a fresh send is
		 * correct; anything else cannot be known to have happened once. */
		if (retry_uncached(c))
			return;
		break;
	case NFS4ERR_DELAY:
	case NFS4ERR_GRACE:
		if (c->retries++ < (c->max_delay_retries ? c->max_delay_retries : PC_DELAY_RETRIES)) {
			retry_later(c, c->nfs_status == NFS4ERR_GRACE ? 1000 : backoff_ms(c->retries));
			return;
		}
		break;
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_OLD_STATEID:
	case NFS4ERR_EXPIRED:
		if (c->sid_fh && c->sid_fh->sid_gen != c->sid_gen && c->retries++ < PC_STALE_RETRIES) {
			retry_later(c, 0);
			return;
		}
		break;
	default:
		break;
	}
	c->status = pc_nfs_errno(c->nfs_status);
	complete(c);
}

/* ---- connection and session loss ------------------------------------------------------------- */

static void drain_one(uint32_t xid, void *cookie, void *arg)
{
	struct pc_compound **list = arg;
	struct pc_compound *c = cookie;
	(void)xid;
	c->u64[3] = (uint64_t)(uintptr_t)*list; /* temporary chain */
	*list = c;
}

/* The next compound of a chain drain_one made, taken off it (NULL at its end). */
static struct pc_compound *drained_next(struct pc_compound **list)
{
	struct pc_compound *c = *list;

	if (c) {
		*list = (struct pc_compound *)(uintptr_t)c->u64[3];
		c->u64[3] = 0;
	}
	return c;
}

void pc_compounds_conn_lost(struct pnfs_context *ctx)
{
	struct pc_compound *list = NULL, *c;

	proto_xid_drain(ctx->xids, drain_one, &list);
	while ((c = drained_next(&list))) {
		q_remove(ctx, c);
		if (c->setup && c->nosession) {
			/* Session setup restarts from the top on the next connection. */
			c->status = -ENOTCONN;
			complete(c);
			continue;
		}
		/* Keep the slot: replayed with the same seqid if the session survives. */
		c->replay = c->slot >= 0;
		q_wait_push(ctx, c, 1);
	}
}

void pc_compounds_session_lost(struct pnfs_context *ctx)
{
	proto_list_for_each_safe(c, &ctx->waitq, struct pc_compound, link) {
		if (c->setup && !c->nosession) {
			/* Reclaim work of the old session: it restarts with the new one. */
			q_remove(ctx, c);
			c->status = -ENOTCONN;
			complete(c);
			continue;
		}
		if (c->no_retry && c->slot >= 0) {
			q_remove(ctx, c);
			fail(c, -ENOTCONN);
			continue;
		}
		slot_release(ctx, c);
	}
	for (unsigned i = 0; i < PC_MAX_SLOTS; i++) {
		ctx->slots[i].c = NULL;
		ctx->slots[i].seqid = 0;
		ctx->slots[i].bad = 0;
		ctx->slots[i].interrupted = 0;
		ctx->slots[i].probing = 0;
	}
	ctx->slots_in_doubt = 0;
}

void pc_compounds_expire(struct pnfs_context *ctx, uint64_t max_age_ms, uint64_t since_ms, int err,
			 const char *why)
{
	uint64_t now = pc_now_ms();

	for (struct proto_list *l = ctx->waitq.next, *next; l != &ctx->waitq; l = next) {
		struct pc_compound *c = proto_list_entry(l, struct pc_compound, link);
		uint64_t from = since_ms ? since_ms : c->submitted_ms;

		next = l->next;
		/* (a completion below may submit a call after now was read: it is young) */
		if (from >= now || now - from < max_age_ms)
			continue;
		snprintf(c->errtext, sizeof(c->errtext), "%s", why);
		slot_abandon(ctx, c);
		fail(c, err);
		next = ctx->waitq.next; /* a completion may have changed the queue */
	}
}

void pc_compounds_fail_all(struct pnfs_context *ctx, int err)
{
	struct pc_compound *list = NULL, *c;

	proto_xid_drain(ctx->xids, drain_one, &list);
	while ((c = drained_next(&list))) {
		fail(c, err);
	}
	while (!proto_list_empty(&ctx->waitq))
		fail(proto_list_first(&ctx->waitq, struct pc_compound, link), err);
	/* Delayed compounds sit on timers; a completion may change the list, so start over each time. */
	for (;;) {
		struct pc_timer *found = NULL;
		proto_list_for_each(t, &ctx->timers, struct pc_timer, link)
			if (t->fn == delay_fire) {
				found = t;
				break;
			}
		if (!found)
			break;
		fail(found->arg, err);
	}
}
