/* The backchannel: CB_COMPOUND calls the server sends on our connection. CB_SEQUENCE is checked
 * against the session and the backchannel slot table (a retried call gets the cached reply again);
 * CB_LAYOUTRECALL, CB_RECALL_ANY and CB_NOTIFY_DEVICEID are answered at once and their work (drain,
 * commit, return; drop device entries) continues on the loop. Referring calls still in flight on our
 * fore channel make a recall answer NFS4ERR_DELAY: the layout it names may be in a reply not yet read. */
#include "client/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void set_status(nfs_cb_resop4 *r, unsigned op, nfsstat4 st)
{
	memset(r, 0, sizeof(*r));
	r->resop = op;
	switch (op) {
	case OP_CB_GETATTR: r->nfs_cb_resop4_u.opcbgetattr.status = st; break;
	case OP_CB_RECALL: r->nfs_cb_resop4_u.opcbrecall.status = st; break;
	case OP_CB_LAYOUTRECALL: r->nfs_cb_resop4_u.opcblayoutrecall.clorr_status = st; break;
	case OP_CB_NOTIFY: r->nfs_cb_resop4_u.opcbnotify.cnr_status = st; break;
	case OP_CB_PUSH_DELEG: r->nfs_cb_resop4_u.opcbpush_deleg.cpdr_status = st; break;
	case OP_CB_RECALL_ANY: r->nfs_cb_resop4_u.opcbrecall_any.crar_status = st; break;
	case OP_CB_RECALLABLE_OBJ_AVAIL: r->nfs_cb_resop4_u.opcbrecallable_obj_avail.croa_status = st; break;
	case OP_CB_RECALL_SLOT: r->nfs_cb_resop4_u.opcbrecall_slot.rsr_status = st; break;
	case OP_CB_SEQUENCE: r->nfs_cb_resop4_u.opcbsequence.csr_status = st; break;
	case OP_CB_WANTS_CANCELLED: r->nfs_cb_resop4_u.opcbwants_cancelled.cwcr_status = st; break;
	case OP_CB_NOTIFY_LOCK: r->nfs_cb_resop4_u.opcbnotify_lock.cnlr_status = st; break;
	case OP_CB_NOTIFY_DEVICEID: r->nfs_cb_resop4_u.opcbnotify_deviceid.cndr_status = st; break;
	default:
		r->resop = OP_CB_ILLEGAL;
		r->nfs_cb_resop4_u.opcbillegal.status = st;
		break;
	}
}

/* Send an RPC reply with no body beyond the header (errors, CB_NULL). */
static void send_plain_reply(struct pnfs_context *ctx, const struct proto_rpc_reply *rh)
{
	struct proto_msg m;
	const uint8_t *w;
	size_t wl;

	if (proto_msg_init(&m, 512) < 0)
		return;
	if (proto_rpc_reply_encode(&m, rh) == 0) {
		proto_msg_finish(&m, &w, &wl);
		pc_conn_send(ctx, m.buf, wl);
		m.buf = NULL;
		xdr_destroy(&m.xdr);
		return;
	}
	proto_msg_destroy(&m);
}

/* Whether a referring call is still in flight on our fore channel. */
static int referring_in_flight(struct pnfs_context *ctx, const CB_SEQUENCE4args *sa)
{
	for (u_int i = 0; i < sa->csa_referring_call_lists.csa_referring_call_lists_len; i++) {
		const referring_call_list4 *l = &sa->csa_referring_call_lists.csa_referring_call_lists_val[i];
		if (memcmp(l->rcl_sessionid, ctx->sessionid, sizeof(ctx->sessionid)) != 0)
			continue;
		for (u_int k = 0; k < l->rcl_referring_calls.rcl_referring_calls_len; k++) {
			const referring_call4 *rc = &l->rcl_referring_calls.rcl_referring_calls_val[k];
			if (rc->rc_slotid < PC_MAX_SLOTS && ctx->slots[rc->rc_slotid].c &&
			    ctx->slots[rc->rc_slotid].seqid == rc->rc_sequenceid)
				return 1;
		}
	}
	return 0;
}

/* CB_SEQUENCE. Returns the status; *slotp is the slot to cache the reply in (-1: none); *replay says
 * the cached reply must be sent instead. */
static nfsstat4 cb_sequence(struct pnfs_context *ctx, const CB_SEQUENCE4args *sa, nfs_cb_resop4 *res,
			    int *slotp, int *replay, int *refer_busy)
{
	struct pc_cb_slot *s;
	CB_SEQUENCE4resok *ok;

	*slotp = -1;
	*replay = 0;
	if (!ctx->have_session || memcmp(sa->csa_sessionid, ctx->sessionid, sizeof(ctx->sessionid)) != 0)
		return NFS4ERR_BADSESSION;
	if (sa->csa_slotid >= ctx->cb_nslots || sa->csa_slotid >= PC_CB_SLOTS)
		return NFS4ERR_BADSLOT;
	s = &ctx->cb_slots[sa->csa_slotid];
	if (sa->csa_sequenceid == s->seqid && s->seqid != 0) {
		if (!s->reply)
			return NFS4ERR_RETRY_UNCACHED_REP;
		*replay = 1;
		*slotp = (int)sa->csa_slotid;
		return NFS4_OK;
	}
	if (sa->csa_sequenceid != s->seqid + 1)
		return NFS4ERR_SEQ_MISORDERED;
	s->seqid = sa->csa_sequenceid;
	*slotp = (int)sa->csa_slotid;
	*refer_busy = referring_in_flight(ctx, sa);
	ok = &res->nfs_cb_resop4_u.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
	memcpy(ok->csr_sessionid, ctx->sessionid, sizeof(ctx->sessionid));
	ok->csr_sequenceid = sa->csa_sequenceid;
	ok->csr_slotid = sa->csa_slotid;
	ok->csr_highest_slotid = ctx->cb_nslots ? ctx->cb_nslots - 1 : 0;
	ok->csr_target_highest_slotid = ok->csr_highest_slotid;
	return NFS4_OK;
}

static nfsstat4 cb_op(struct pnfs_context *ctx, const nfs_cb_argop4 *a, nfs_cb_resop4 *res, int refer_busy)
{
	switch (a->argop) {
	case OP_CB_LAYOUTRECALL:
		ctx->stats.recalls++;
		if (refer_busy)
			return NFS4ERR_DELAY;
		return pc_layout_recall(ctx, &a->nfs_cb_argop4_u.opcblayoutrecall);
	case OP_CB_RECALL_ANY:
		return pc_layout_recall_any(ctx, &a->nfs_cb_argop4_u.opcbrecall_any);
	case OP_CB_NOTIFY_DEVICEID:
		return pc_device_notify(ctx, &a->nfs_cb_argop4_u.opcbnotify_deviceid);
	case OP_CB_RECALL_SLOT: {
		uint32_t t = a->nfs_cb_argop4_u.opcbrecall_slot.rsa_target_highest_slotid + 1;
		ctx->target_slots = t < ctx->nslots ? t : ctx->nslots;
		return NFS4_OK;
	}
	case OP_CB_RECALL:
		/* We ask for no delegations, so none can be recalled. */
		return NFS4ERR_BAD_STATEID;
	case OP_CB_GETATTR:
		return NFS4ERR_BADHANDLE;
	case OP_CB_PUSH_DELEG:
		return NFS4ERR_REJECT_DELEG;
	case OP_CB_NOTIFY:
		return NFS4ERR_BAD_STATEID;
	case OP_CB_RECALLABLE_OBJ_AVAIL:
	case OP_CB_WANTS_CANCELLED:
	case OP_CB_NOTIFY_LOCK:
		return NFS4_OK;
	case OP_CB_SEQUENCE:
		return NFS4ERR_SEQUENCE_POS;
	default:
		(void)res;
		return NFS4ERR_OP_ILLEGAL;
	}
}

static void cb_compound(struct pnfs_context *ctx, const struct proto_rpc_call *call, const uint8_t *args,
			size_t args_len)
{
	struct proto_cb_compound_args ca;
	struct proto_compound_reply r;
	struct proto_rpc_reply rh;
	struct proto_msg m;
	nfs_cb_resop4 res;
	nfsstat4 last = NFS4_OK;
	int slot = -1, replay = 0, refer_busy = 0, rc;
	size_t cap = ctx->cb_maxresp ? ctx->cb_maxresp : 16384;
	const uint8_t *w;
	size_t wl;

	rc = proto_cb_compound_args_decode(args, args_len, 16, &ca);
	if (rc < 0) {
		proto_cb_compound_args_free(&ca);
		proto_rpc_reply_accepted(&rh, call->xid, GARBAGE_ARGS);
		send_plain_reply(ctx, &rh);
		return;
	}
	if (cap < 512)
		cap = 512;
	if (proto_msg_init(&m, cap + 256) < 0)
		goto out_args;
	proto_rpc_reply_accepted(&rh, call->xid, SUCCESS);
	if (proto_rpc_reply_encode(&m, &rh) < 0 ||
	    proto_cb_compound_reply_begin(&r, &m, ca.args.tag.utf8string_val, ca.args.tag.utf8string_len, 0) < 0)
		goto out_msg;
	if (ca.args.minorversion != 1) {
		last = NFS4ERR_MINOR_VERS_MISMATCH;
		goto end;
	}
	for (u_int i = 0; i < ca.args.argarray.argarray_len; i++) {
		const nfs_cb_argop4 *a = &ca.args.argarray.argarray_val[i];
		nfsstat4 st;

		set_status(&res, a->argop, NFS4_OK);
		if (i == 0) {
			if (a->argop != OP_CB_SEQUENCE) {
				st = NFS4ERR_OP_NOT_IN_SESSION;
			} else {
				st = cb_sequence(ctx, &a->nfs_cb_argop4_u.opcbsequence, &res, &slot, &replay,
						 &refer_busy);
				if (st == NFS4_OK && replay)
					goto send_cached;
				if (st == NFS4_OK && ca.stop == PROTO_COMPOUND_TOO_MANY)
					st = NFS4ERR_TOO_MANY_OPS;
			}
		} else {
			st = cb_op(ctx, a, &res, refer_busy);
		}
		if (st != NFS4_OK || a->argop != OP_CB_SEQUENCE)
			set_status(&res, a->argop, st);
		if (proto_cb_compound_reply_add(&r, &res) < 0) {
			last = NFS4ERR_REP_TOO_BIG;
			goto end;
		}
		last = st;
		if (st != NFS4_OK)
			goto end;
	}
	if (ca.stop == PROTO_COMPOUND_ILLEGAL || ca.stop == PROTO_COMPOUND_BADXDR) {
		last = ca.stop == PROTO_COMPOUND_ILLEGAL ? NFS4ERR_OP_ILLEGAL : NFS4ERR_BADXDR;
		set_status(&res, ca.stop == PROTO_COMPOUND_ILLEGAL ? OP_CB_ILLEGAL : ca.stop_opcode, last);
		proto_cb_compound_reply_add(&r, &res);
	}
end:
	proto_compound_reply_end(&r, last);
	proto_msg_finish(&m, &w, &wl);
	if (slot >= 0) {
		struct pc_cb_slot *s = &ctx->cb_slots[slot];
		uint8_t *copy = malloc(wl);
		free(s->reply);
		s->reply = copy;
		s->reply_len = copy ? wl : 0;
		if (copy)
			memcpy(copy, w, wl);
	}
	pc_conn_send(ctx, m.buf, wl);
	m.buf = NULL;
	xdr_destroy(&m.xdr);
	goto out_args;
send_cached: {
		struct pc_cb_slot *s = &ctx->cb_slots[slot];
		uint8_t *copy = malloc(s->reply_len);
		if (copy) {
			uint32_t x = htonl(call->xid);
			memcpy(copy, s->reply, s->reply_len);
			memcpy(copy + 4, &x, 4); /* the retry may come with a new xid */
			pc_conn_send(ctx, copy, s->reply_len);
		}
	}
out_msg:
	proto_msg_destroy(&m);
out_args:
	proto_cb_compound_args_free(&ca);
}

void pc_cb_call(struct pnfs_context *ctx, void *rec, size_t len)
{
	struct proto_rpc_call call;
	struct proto_rpc_reply rh;
	uint32_t auth_err = 0;
	size_t off = 0;
	int rc;

	rc = proto_rpc_call_decode(rec, len, &call, &off, &auth_err);
	if (rc == -EBADMSG) {
		LOG_WARN("pnfs: %s:%d sent an undecodable backchannel call; dropped", ctx->host, ctx->port);
		goto out;
	}
	if (rc == -EPROTONOSUPPORT) {
		proto_rpc_reply_rpc_mismatch(&rh, call.xid);
		send_plain_reply(ctx, &rh);
		goto out;
	}
	if (rc == -EACCES) {
		proto_rpc_reply_auth_error(&rh, call.xid, auth_err);
		send_plain_reply(ctx, &rh);
		goto out;
	}
	if (rc < 0)
		goto out;
	if (call.prog != PC_CB_PROGRAM) {
		proto_rpc_reply_accepted(&rh, call.xid, PROG_UNAVAIL);
		send_plain_reply(ctx, &rh);
		goto out;
	}
	if (call.vers != NFS_CB) {
		proto_rpc_reply_prog_mismatch(&rh, call.xid, NFS_CB, NFS_CB);
		send_plain_reply(ctx, &rh);
		goto out;
	}
	switch (call.proc) {
	case CB_NULL:
		proto_rpc_reply_accepted(&rh, call.xid, SUCCESS);
		send_plain_reply(ctx, &rh);
		break;
	case CB_COMPOUND:
		cb_compound(ctx, &call, (const uint8_t *)rec + off, len - off);
		break;
	default:
		proto_rpc_reply_accepted(&rh, call.xid, PROC_UNAVAIL);
		send_plain_reply(ctx, &rh);
		break;
	}
out:
	free(rec);
}
