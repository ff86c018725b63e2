/* Clients and sessions (RFC 8881 §18.35-18.37, §18.46, §18.33-18.34, §18.50-18.51): EXCHANGE_ID's
 * record cases, CREATE_SESSION with its own sequence and reply replay, channel negotiation,
 * SEQUENCE with the slot table and reply cache, connection binding, the backchannel's
 * parameters, DESTROY_SESSION / DESTROY_CLIENTID and RECLAIM_COMPLETE. */
#include "mds/backchannel.h"
#include "mds/compound.h"
#include "mds/ops.h"
#include "mds/state.h"
#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A channel must be able to carry at least a SEQUENCE request (RPC call header with a small
 * credential, COMPOUND header, SEQUENCE) and a SEQUENCE reply. */
#define MIN_REQUEST_BYTES 128
#define MIN_RESPONSE_BYTES 96
/* Replies we cache per slot at most. */
#define MAX_CACHED_BYTES (64u << 10)
/* What our backchannel calls need from the client (CB_SEQUENCE + CB_RECALL/CB_LAYOUTRECALL with
 * a filehandle, with an AUTH_SYS credential). */
#define MIN_CB_REQUEST_BYTES 512
#define MIN_CB_RESPONSE_BYTES 96
#define MAX_CB_BYTES (64u << 10)

#define EXCHGID4_CLIENT_FLAGS                                                                  \
	(EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR |                      \
	 EXCHGID4_FLAG_BIND_PRINC_STATEID | EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_USE_PNFS_MDS | \
	 EXCHGID4_FLAG_USE_PNFS_DS | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A)

static nfs_impl_id4 server_impl_id = {
	.nii_domain = { 8, "pnfs.san" },
	.nii_name = { 8, "pnfs-mds" },
	.nii_date = { 0, 0 },
};

static void fill_exchange_id(struct mds_compound *c, struct mds_client *clp, EXCHANGE_ID4resok *ok)
{
	struct mds_server *srv = c->srv;
	size_t olen = strlen((const char *)srv->server_owner);

	ok->eir_clientid = clp->clientid;
	ok->eir_sequenceid = clp->cs_seq;
	/* We are a pNFS metadata server (RFC 8881 §13.1: one USE_PNFS_* bit is always set). */
	ok->eir_flags = EXCHGID4_FLAG_USE_PNFS_MDS | (clp->confirmed ? EXCHGID4_FLAG_CONFIRMED_R : 0);
	ok->eir_state_protect.spr_how = SP4_NONE;
	ok->eir_server_owner.so_minor_id = 0;
	ok->eir_server_owner.so_major_id.so_major_id_len = (u_int)olen;
	ok->eir_server_owner.so_major_id.so_major_id_val = (char *)srv->server_owner;
	ok->eir_server_scope.eir_server_scope_len = (u_int)olen;
	ok->eir_server_scope.eir_server_scope_val = (char *)srv->server_owner;
	ok->eir_server_impl_id.eir_server_impl_id_len = 1;
	ok->eir_server_impl_id.eir_server_impl_id_val = &server_impl_id;
	clp->eia_flags = ok->eir_flags;
}

static struct mds_client *new_client(struct mds_compound *c, const client_owner4 *co, const char *princ)
{
	struct mds_server *srv = c->srv;
	struct mds_client *clp = mds_client_new(srv, (const unsigned char *)co->co_ownerid.co_ownerid_val,
						co->co_ownerid.co_ownerid_len,
						(const unsigned char *)co->co_verifier, princ);

	if (clp && srv->in_grace &&
	    mds_map_find(&srv->reclaimable, clp->owner, clp->owner_len))
		clp->reclaim_ok = 1;
	return clp;
}

nfsstat4 mds_op_exchange_id(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	EXCHANGE_ID4args *a = &arg->nfs_argop4_u.opexchange_id;
	EXCHANGE_ID4resok *ok = &res->nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
	struct mds_server *srv = c->srv;
	const void *owner = a->eia_clientowner.co_ownerid.co_ownerid_val;
	uint32_t olen = a->eia_clientowner.co_ownerid.co_ownerid_len;
	struct mds_client *conf, *unconf, *clp;
	char princ[96];
	int update = (a->eia_flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A) != 0;

	if (a->eia_flags & ~EXCHGID4_CLIENT_FLAGS)
		return NFS4ERR_INVAL;
	switch (a->eia_state_protect.spa_how) {
	case SP4_NONE:
		break;
	case SP4_MACH_CRED:
		/* Machine credentials need RPCSEC_GSS, which we do not speak. */
		return NFS4ERR_INVAL;
	default:
		return NFS4ERR_ENCR_ALG_UNSUPP;
	}
	if (olen == 0)
		return NFS4ERR_INVAL;
	mds_cred_principal(&c->cred, princ, sizeof(princ));
	conf = mds_client_conf_by_owner(srv, owner, olen);
	unconf = mds_client_unconf_by_owner(srv, owner, olen);

	if (update) {
		/* Cases 6-9: update a confirmed record. */
		if (!conf)
			return NFS4ERR_NOENT;
		if (strcmp(conf->principal, princ) != 0)
			return NFS4ERR_PERM;
		if (memcmp(conf->verifier, a->eia_clientowner.co_verifier, NFS4_VERIFIER_SIZE) != 0)
			return NFS4ERR_NOT_SAME;
		mds_client_renew(srv, conf);
		fill_exchange_id(c, conf, ok);
		return NFS4_OK;
	}
	if (conf) {
		if (strcmp(conf->principal, princ) != 0) {
			/* Case 3, collision: another principal owns this name. */
			if (mds_client_has_state(conf) && !conf->expired)
				return NFS4ERR_CLID_INUSE;
			mds_client_destroy(srv, conf, 1);
			conf = NULL;
		} else if (memcmp(conf->verifier, a->eia_clientowner.co_verifier, NFS4_VERIFIER_SIZE) == 0) {
			/* Case 2: the same client again. */
			mds_client_renew(srv, conf);
			fill_exchange_id(c, conf, ok);
			return NFS4_OK;
		}
		/* Case 5, client restart: a new unconfirmed record; the confirmed one (and its state)
		 * goes when the new one is confirmed by CREATE_SESSION. */
	}
	/* Cases 1 and 4: a new record, replacing any unconfirmed one. */
	if (unconf)
		mds_client_destroy(srv, unconf, 0);
	clp = new_client(c, &a->eia_clientowner, princ);
	if (!clp)
		return NFS4ERR_RESOURCE;
	fill_exchange_id(c, clp, ok);
	LOG_DEBUG("client %016llx: EXCHANGE_ID from %s (%s)", (unsigned long long)clp->clientid,
		  c->conn->peer_str, princ);
	return NFS4_OK;
}

static nfsstat4 negotiate(const struct mds_server *srv, const channel_attrs4 *fore_in,
			  const channel_attrs4 *back_in, channel_attrs4 *fore, channel_attrs4 *back)
{
	uint32_t max_req = srv->cfg.max_record_bytes;

	if (fore_in->ca_maxrequestsize < MIN_REQUEST_BYTES || fore_in->ca_maxresponsesize < MIN_RESPONSE_BYTES)
		return NFS4ERR_TOOSMALL;
	if (back_in->ca_maxrequestsize < MIN_CB_REQUEST_BYTES ||
	    back_in->ca_maxresponsesize < MIN_CB_RESPONSE_BYTES || back_in->ca_maxoperations < 2 ||
	    back_in->ca_maxrequests < 1)
		return NFS4ERR_TOOSMALL;
	if (fore_in->ca_maxoperations < 1 || fore_in->ca_maxrequests < 1)
		return NFS4ERR_TOOSMALL;
	memset(fore, 0, sizeof(*fore));
	memset(back, 0, sizeof(*back));
	fore->ca_headerpadsize = 0;
	fore->ca_maxrequestsize = fore_in->ca_maxrequestsize < max_req ? fore_in->ca_maxrequestsize : max_req;
	fore->ca_maxresponsesize = fore_in->ca_maxresponsesize < max_req ? fore_in->ca_maxresponsesize : max_req;
	fore->ca_maxresponsesize_cached = fore_in->ca_maxresponsesize_cached < MAX_CACHED_BYTES
						  ? fore_in->ca_maxresponsesize_cached
						  : MAX_CACHED_BYTES;
	if (fore->ca_maxresponsesize_cached > fore->ca_maxresponsesize)
		fore->ca_maxresponsesize_cached = fore->ca_maxresponsesize;
	fore->ca_maxoperations = fore_in->ca_maxoperations < MDS_MAX_OPS ? fore_in->ca_maxoperations : MDS_MAX_OPS;
	fore->ca_maxrequests = fore_in->ca_maxrequests < srv->cfg.max_slots ? fore_in->ca_maxrequests
									    : srv->cfg.max_slots;
	/* The back channel: what we will send. One slot is all our callbacks need. */
	back->ca_maxrequestsize = back_in->ca_maxrequestsize < MAX_CB_BYTES ? back_in->ca_maxrequestsize : MAX_CB_BYTES;
	back->ca_maxresponsesize = back_in->ca_maxresponsesize < MAX_CB_BYTES ? back_in->ca_maxresponsesize
									      : MAX_CB_BYTES;
	back->ca_maxresponsesize_cached = 0;
	back->ca_maxoperations = back_in->ca_maxoperations < 8 ? back_in->ca_maxoperations : 8;
	back->ca_maxrequests = 1;
	return NFS4_OK;
}

/* The callback credential: the first flavour we can use (AUTH_NONE or AUTH_SYS). */
static void set_cb_sec(struct mds_session *s, const callback_sec_parms4 *p, unsigned n)
{
	s->cb_flavor = AUTH_NONE;
	for (unsigned i = 0; i < n; i++) {
		if (p[i].cb_secflavor == AUTH_NONE) {
			s->cb_flavor = AUTH_NONE;
			return;
		}
		if (p[i].cb_secflavor == AUTH_SYS) {
			const authsys_parms *sys = &p[i].callback_sec_parms4_u.cbsp_sys_cred;
			s->cb_flavor = AUTH_SYS;
			s->cb_uid = sys->aup_uid;
			s->cb_gid = sys->aup_gid;
			snprintf(s->cb_machine, sizeof(s->cb_machine), "%s",
				 sys->aup_machname ? sys->aup_machname : "");
			return;
		}
	}
}

struct put_rec_arg {
	struct mds_client *clp;
	clientid4 old;
};

static int persist_client(struct mds_txn *t, struct put_rec_arg *a)
{
	struct mds_client_rec rec;
	struct mds_client *clp = a->clp;
	int rc;

	memset(&rec, 0, sizeof(rec));
	rec.clientid = clp->clientid;
	memcpy(rec.verifier, clp->verifier, sizeof(rec.verifier));
	rec.flags = clp->reclaim_complete ? MDS_CLIENT_RECLAIM_COMPLETE : 0;
	rec.owner_len = clp->owner_len > MDS_OWNER_MAX ? MDS_OWNER_MAX : clp->owner_len;
	memcpy(rec.owner, clp->owner, rec.owner_len);
	rec.principal_len = (uint32_t)strlen(clp->principal);
	memcpy(rec.principal, clp->principal, rec.principal_len);
	if (a->old) {
		rc = mds_client_del(t, a->old);
		if (rc && rc != -ENOENT)
			return rc;
	}
	rc = mds_client_write(t, &rec);
	if (rc == 0)
		clp->persisted = 1;
	return rc;
}

nfsstat4 mds_op_create_session(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	CREATE_SESSION4args *a = &arg->nfs_argop4_u.opcreate_session;
	CREATE_SESSION4res *r = &res->nfs_resop4_u.opcreate_session;
	CREATE_SESSION4resok *ok = &r->CREATE_SESSION4res_u.csr_resok4;
	struct mds_server *srv = c->srv;
	struct mds_client *clp = mds_client_find(srv, a->csa_clientid);
	struct mds_session *s;
	struct put_rec_arg pa = { 0 };
	channel_attrs4 fore, back;
	char princ[96];
	nfsstat4 st;

	if (!clp)
		return NFS4ERR_STALE_CLIENTID;
	if (clp->confirmed) {
		if (a->csa_sequence + 1 == clp->cs_seq && clp->cs_cached) {
			/* A retry of the last CREATE_SESSION: the same answer (RFC 8881 §18.36.4). */
			*r = clp->cs_res;
			if (r->csr_status == NFS4_OK)
				mds_conn_established(c->conn);
			return r->csr_status;
		}
		if (a->csa_sequence != clp->cs_seq)
			return NFS4ERR_SEQ_MISORDERED;
	} else {
		if (a->csa_sequence != clp->cs_seq)
			return NFS4ERR_SEQ_MISORDERED;
		mds_cred_principal(&c->cred, princ, sizeof(princ));
		if (strcmp(princ, clp->principal) != 0)
			return NFS4ERR_CLID_INUSE;
	}
	if (a->csa_flags & ~(CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN |
			     CREATE_SESSION4_FLAG_CONN_RDMA))
		return NFS4ERR_INVAL;
	st = negotiate(srv, &a->csa_fore_chan_attrs, &a->csa_back_chan_attrs, &fore, &back);
	if (st != NFS4_OK)
		return st;
	if (!clp->confirmed) {
		struct mds_client *old = mds_client_conf_by_owner(srv, clp->owner, clp->owner_len);
		struct mds_txn *t = mds_compound_txn(c);
		int rc;

		if (!t)
			return NFS4ERR_SERVERFAULT;
		pa.clp = clp;
		if (old && old->persisted)
			pa.old = old->clientid;
		else if (clp->reclaim_ok)
			pa.old = (clientid4)(uintptr_t)mds_map_find(&srv->reclaimable, clp->owner, clp->owner_len);
		rc = persist_client(t, &pa);
		if (rc)
			return mds_errno_to_nfs(rc);
		mds_compound_dirty(c);
		if (old)
			old->persisted = 0; /* its record was replaced by this one */
		mds_client_confirm(srv, clp);
		LOG_INFO("client %016llx confirmed (%s, from %s)", (unsigned long long)clp->clientid,
			 clp->principal, c->conn->peer_str);
	}
	s = mds_session_new(srv, clp, &fore, &back);
	if (!s)
		return NFS4ERR_RESOURCE;
	mds_session_bind_conn(s, c->conn);
	mds_conn_established(c->conn);
	s->minorversion = c->minorversion;
	s->cb_program = a->csa_cb_program;
	set_cb_sec(s, a->csa_sec_parms.csa_sec_parms_val, a->csa_sec_parms.csa_sec_parms_len);
	memset(ok, 0, sizeof(*ok));
	memcpy(ok->csr_sessionid, s->id, NFS4_SESSIONID_SIZE);
	ok->csr_sequence = a->csa_sequence;
	if (a->csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN) {
		ok->csr_flags |= CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		s->flags |= CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		mds_session_set_backchannel(s, c->conn);
	}
	ok->csr_fore_chan_attrs = s->fore;
	ok->csr_back_chan_attrs = s->back;
	r->csr_status = NFS4_OK;
	clp->cs_seq++;
	clp->cs_res = *r;
	clp->cs_cached = 1;
	mds_client_renew(srv, clp);
	if (s->bc_conn)
		mds_cb_probe(srv, s);
	return NFS4_OK;
}

nfsstat4 mds_op_destroy_session(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	DESTROY_SESSION4args *a = &arg->nfs_argop4_u.opdestroy_session;
	struct mds_session *s = mds_session_find(c->srv, (const unsigned char *)a->dsa_sessionid);
	(void)res;

	if (!s)
		return NFS4ERR_BADSESSION;
	if (s == c->sess && c->op_index + 1 != c->pargs.opcount)
		return NFS4ERR_NOT_ONLY_OP; /* it must be the last op when it ends its own session */
	if (!c->sess && !mds_session_conn_bound(s, c->conn))
		return NFS4ERR_CONN_NOT_BOUND_TO_SESSION;
	mds_session_destroy(c->srv, s);
	return NFS4_OK;
}

static uint32_t seq_status_flags(struct mds_compound *c, struct mds_session *s)
{
	uint32_t f = 0;
	struct mds_client *clp = s->clp;

	if (s->flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN || s->bc_conn) {
		if (!s->bc_conn)
			f |= SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION;
		else if (s->cb_fault)
			f |= SEQ4_STATUS_BACKCHANNEL_FAULT;
	} else if (mds_client_needs_backchannel(clp)) {
		f |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
	}
	for (struct mds_stateid *st = clp->states; st; st = st->next_in_client) {
		if (st->revoked) {
			f |= st->type == MDS_ST_DELEG || st->type == MDS_ST_LAYOUT
				     ? SEQ4_STATUS_RECALLABLE_STATE_REVOKED
				     : SEQ4_STATUS_ADMIN_STATE_REVOKED;
		}
	}
	(void)c;
	return f;
}

static nfsstat4 replay(struct mds_compound *c, struct mds_slot *slot)
{
	if (c->args_hash != slot->args_hash)
		return NFS4ERR_SEQ_FALSE_RETRY;
	if (!slot->cached_full || !slot->reply)
		return NFS4ERR_RETRY_UNCACHED_REP;
	mds_rpc_reply_success(c->conn, c->xid, slot->reply, slot->reply_len);
	mds_conn_established(c->conn); /* a retry on a new connection of the session's */
	c->replayed = 1;
	return NFS4_OK;
}

nfsstat4 mds_op_sequence(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	SEQUENCE4args *a = &arg->nfs_argop4_u.opsequence;
	SEQUENCE4resok *ok = &res->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
	struct mds_session *s = mds_session_find(c->srv, (const unsigned char *)a->sa_sessionid);
	struct mds_slot *slot;

	if (!s || s->clp->destroyed)
		return NFS4ERR_BADSESSION;
	if (a->sa_slotid >= s->nslots)
		return NFS4ERR_BADSLOT;
	slot = &s->slots[a->sa_slotid];
	/* A request still running on this slot: the client must wait for its reply (a retry of it,
	 * or a new request sent too early, RFC 8881 §2.10.6.2). */
	if (slot->busy)
		return NFS4ERR_DELAY;
	if (a->sa_sequenceid == slot->seqid) {
		if (!slot->has_reply)
			return NFS4ERR_SEQ_MISORDERED;
		return replay(c, slot);
	}
	if (a->sa_sequenceid != slot->seqid + 1)
		return NFS4ERR_SEQ_MISORDERED;
	if (c->pargs.opcount > s->fore.ca_maxoperations)
		return NFS4ERR_TOO_MANY_OPS;
	if (c->req_len > s->fore.ca_maxrequestsize)
		return NFS4ERR_REQ_TOO_BIG;
	/* A new request on this slot. */
	c->slot_prev_seqid = slot->seqid;
	slot->seqid = a->sa_sequenceid;
	slot->busy = 1;
	slot->args_hash = c->args_hash;
	slot->has_reply = 0;
	slot->cached_full = 0;
	free(slot->reply);
	slot->reply = NULL;
	c->slot = slot;
	c->sess = s;
	s->refs++;
	c->clp = s->clp;
	s->clp->refs++;
	c->cachethis = a->sa_cachethis;
	c->reply_limit = s->fore.ca_maxresponsesize;
	if (a->sa_cachethis && s->fore.ca_maxresponsesize_cached < c->reply_limit)
		c->reply_limit = s->fore.ca_maxresponsesize_cached;
	mds_client_renew(c->srv, s->clp);
	/* No state protection is enforced, so a SEQUENCE binds its connection (RFC 8881 §2.10.5). */
	mds_session_bind_conn(s, c->conn);
	mds_conn_established(c->conn);
	memcpy(ok->sr_sessionid, s->id, NFS4_SESSIONID_SIZE);
	ok->sr_sequenceid = a->sa_sequenceid;
	ok->sr_slotid = a->sa_slotid;
	ok->sr_highest_slotid = s->nslots - 1;
	ok->sr_target_highest_slotid = s->nslots - 1;
	ok->sr_status_flags = seq_status_flags(c, s);
	return NFS4_OK;
}

nfsstat4 mds_op_bind_conn_to_session(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	BIND_CONN_TO_SESSION4args *a = &arg->nfs_argop4_u.opbind_conn_to_session;
	BIND_CONN_TO_SESSION4resok *ok = &res->nfs_resop4_u.opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4;
	struct mds_session *s = mds_session_find(c->srv, (const unsigned char *)a->bctsa_sessid);
	int fore = 0, back = 0;

	if (!s)
		return NFS4ERR_BADSESSION;
	switch (a->bctsa_dir) {
	case CDFC4_FORE:
		fore = 1;
		break;
	case CDFC4_BACK:
		back = 1;
		break;
	case CDFC4_FORE_OR_BOTH:
	case CDFC4_BACK_OR_BOTH:
		fore = back = 1;
		break;
	default:
		return NFS4ERR_INVAL;
	}
	if (fore)
		mds_session_bind_conn(s, c->conn);
	if (back) {
		mds_session_set_backchannel(s, c->conn);
		s->flags |= CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	}
	memcpy(ok->bctsr_sessid, s->id, NFS4_SESSIONID_SIZE);
	ok->bctsr_dir = fore && back ? CDFS4_BOTH : fore ? CDFS4_FORE : CDFS4_BACK;
	ok->bctsr_use_conn_in_rdma_mode = FALSE;
	mds_conn_established(c->conn);
	mds_client_renew(c->srv, s->clp);
	if (back)
		mds_cb_probe(c->srv, s);
	return NFS4_OK;
}

nfsstat4 mds_op_backchannel_ctl(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	BACKCHANNEL_CTL4args *a = &arg->nfs_argop4_u.opbackchannel_ctl;
	(void)res;

	if (!c->sess)
		return NFS4ERR_OP_NOT_IN_SESSION;
	c->sess->cb_program = a->bca_cb_program;
	set_cb_sec(c->sess, a->bca_sec_parms.bca_sec_parms_val, a->bca_sec_parms.bca_sec_parms_len);
	return NFS4_OK;
}

nfsstat4 mds_op_destroy_clientid(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	DESTROY_CLIENTID4args *a = &arg->nfs_argop4_u.opdestroy_clientid;
	struct mds_client *clp = mds_client_find(c->srv, a->dca_clientid);
	(void)res;

	if (!clp)
		return NFS4ERR_STALE_CLIENTID;
	if (mds_client_has_state(clp) || clp->refs)
		return NFS4ERR_CLIENTID_BUSY;
	if (clp->persisted && !mds_compound_txn(c))
		return NFS4ERR_SERVERFAULT;
	mds_client_destroy(c->srv, clp, 1);
	return NFS4_OK;
}

struct recc_arg {
	struct mds_client *clp;
};

static int persist_recc(struct mds_txn *t, void *arg)
{
	struct recc_arg *a = arg;
	struct mds_client_rec rec;
	int rc = mds_client_read(t, a->clp->clientid, &rec);

	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	rec.flags |= MDS_CLIENT_RECLAIM_COMPLETE;
	return mds_client_write(t, &rec);
}

nfsstat4 mds_op_reclaim_complete(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	RECLAIM_COMPLETE4args *a = &arg->nfs_argop4_u.opreclaim_complete;
	struct mds_server *srv = c->srv;
	struct mds_client *clp = c->clp;
	struct recc_arg ra;
	int rc;
	(void)res;

	if (!clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	if (a->rca_one_fs) {
		/* One file system's reclaims are done: we export one, so this says nothing about
		 * the client's other state (RFC 8881 §18.51.3). */
		if (!c->cfh.set)
			return NFS4ERR_NOFILEHANDLE;
		return NFS4_OK;
	}
	if (clp->reclaim_complete)
		return NFS4ERR_COMPLETE_ALREADY;
	clp->reclaim_complete = 1;
	if (clp->persisted) {
		ra.clp = clp;
		if (!mds_compound_txn(c))
			return NFS4ERR_SERVERFAULT;
		rc = mds_with_txn(srv, persist_recc, &ra);
		if (rc)
			return mds_errno_to_nfs(rc);
		mds_compound_dirty(c);
	}
	if (srv->in_grace && clp->reclaim_ok) {
		clp->reclaim_ok = 0;
		if (srv->nreclaimable)
			srv->nreclaimable--;
		if (srv->nreclaimable == 0)
			mds_grace_end(srv, "every client finished reclaiming");
	}
	return NFS4_OK;
}
