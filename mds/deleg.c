/* Delegations. A client that asks for one (OPEN4_SHARE_ACCESS_WANT_*_DELEG) and has a working
 * backchannel gets a read delegation when no other client writes the file, a write delegation
 * when no other client has it open at all. Another client's conflicting OPEN (or change) sends
 * CB_RECALL and gets NFS4ERR_DELAY until the holder returns it; one not returned within a lease
 * period is revoked (NFS4ERR_DELEG_REVOKED, SEQ4_STATUS_RECALLABLE_STATE_REVOKED). */
#include "mds/deleg.h"

#include "mds/backchannel.h"
#include "mds/compound.h"
#include "mds/fh.h"
#include "mds/state.h"
#include "proto/log.h"

#include <stdlib.h>
#include <string.h>

struct mds_stateid *mds_deleg_find(struct mds_file *f, struct mds_client *clp)
{
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file)
		if (st->type == MDS_ST_DELEG && st->clp == clp && !st->revoked)
			return st;
	return NULL;
}

static void deleg_revoke(struct mds_server *srv, struct mds_stateid *st, const char *why)
{
	if (st->revoked)
		return;
	LOG_WARN("client %016llx: delegation on file %llu revoked: %s", (unsigned long long)st->clp->clientid,
		 (unsigned long long)(st->file ? st->file->fileid : 0), why);
	st->revoked = 1;
	if (st->recall_ms && srv->nrecalls)
		srv->nrecalls--;
	st->recall_ms = 0;
}

struct recall_arg {
	unsigned char other[NFS4_OTHER_SIZE];
};

static void recall_done(struct mds_server *srv, int status, const CB_COMPOUND4res *res, void *arg)
{
	struct recall_arg *ra = arg;
	struct mds_stateid *st = mds_map_find(&srv->stateids, ra->other, NFS4_OTHER_SIZE);

	free(ra);
	if (!st || st->type != MDS_ST_DELEG)
		return; /* returned meanwhile */
	if (status)
		LOG_WARN("client %016llx: CB_RECALL failed (%d); the delegation is revoked after a lease period",
			 (unsigned long long)st->clp->clientid, status);
	else if (res && res->status != NFS4_OK)
		LOG_DEBUG("client %016llx: CB_RECALL answered %d", (unsigned long long)st->clp->clientid, res->status);
}

static void send_recall(struct mds_server *srv, struct mds_stateid *st)
{
	struct mds_session *s = mds_cb_session(st->clp);
	struct recall_arg *ra;
	nfs_cb_argop4 op;
	CB_RECALL4args *ca = &op.nfs_cb_argop4_u.opcbrecall;
	unsigned char fh[MDS_FH_BYTES];

	st->recall_ms = mds_loop_now_ms();
	srv->nrecalls++;
	if (!s) {
		deleg_revoke(srv, st, "no backchannel to recall it");
		return;
	}
	ra = malloc(sizeof(*ra));
	if (!ra)
		return; /* the tick revokes it */
	memcpy(ra->other, st->other, NFS4_OTHER_SIZE);
	memset(&op, 0, sizeof(op));
	op.argop = OP_CB_RECALL;
	mds_stateid_export(st, &ca->stateid);
	ca->truncate = FALSE;
	mds_fh_encode(srv, st->file->fileid, fh);
	ca->fh.nfs_fh4_len = MDS_FH_BYTES;
	ca->fh.nfs_fh4_val = (char *)fh;
	if (mds_cb_compound(srv, s, &op, 1, recall_done, ra) != 0)
		free(ra);
	LOG_DEBUG("client %016llx: recalling its delegation on file %llu", (unsigned long long)st->clp->clientid,
		  (unsigned long long)st->file->fileid);
}

nfsstat4 mds_deleg_break(struct mds_compound *c, struct mds_file *f, uint32_t access)
{
	int pending = 0;

	for (struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		int conflict;
		if (st->type != MDS_ST_DELEG || st->revoked || st->clp == c->clp)
			continue;
		conflict = (st->share_access & OPEN4_SHARE_ACCESS_WRITE) || (access & OPEN4_SHARE_ACCESS_WRITE) ||
			   access == 0;
		if (!conflict)
			continue;
		if (!st->recall_ms)
			send_recall(c->srv, st);
		if (!st->revoked)
			pending = 1;
	}
	return pending ? NFS4ERR_DELAY : NFS4_OK;
}

static void none_ext(open_delegation4 *out, why_no_delegation4 why)
{
	out->delegation_type = OPEN_DELEGATE_NONE_EXT;
	out->open_delegation4_u.od_whynone.ond_why = why;
	if (why == WND4_CONTENTION)
		out->open_delegation4_u.od_whynone.open_none_delegation4_u.ond_server_will_push_deleg = FALSE;
	else if (why == WND4_RESOURCE)
		out->open_delegation4_u.od_whynone.open_none_delegation4_u.ond_server_will_signal_avail = FALSE;
}

void mds_deleg_offer(struct mds_compound *c, struct mds_file *f, struct mds_stateid *open, uint32_t want,
		     uint32_t access, int reclaim, open_delegation4 *out)
{
	struct mds_session *s = mds_cb_session(c->clp);
	int others_write = 0, others_open = 0, others_deleg = 0, write;
	struct mds_stateid *d;
	(void)open;

	memset(out, 0, sizeof(*out));
	out->delegation_type = OPEN_DELEGATE_NONE;
	switch (want) {
	case OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE:
		return; /* we hand out delegations only to clients that ask */
	case OPEN4_SHARE_ACCESS_WANT_NO_DELEG:
		none_ext(out, WND4_NOT_WANTED);
		return;
	case OPEN4_SHARE_ACCESS_WANT_CANCEL:
		none_ext(out, WND4_CANCELLED);
		return;
	case OPEN4_SHARE_ACCESS_WANT_READ_DELEG:
	case OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG:
	case OPEN4_SHARE_ACCESS_WANT_ANY_DELEG:
		break;
	default:
		none_ext(out, WND4_NOT_WANTED);
		return;
	}
	if (reclaim || !s || !s->cb_probed || s->cb_fault) {
		none_ext(out, WND4_RESOURCE);
		return;
	}
	if (mds_deleg_find(f, c->clp)) {
		none_ext(out, WND4_NOT_SUPP_UPGRADE);
		return;
	}
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		if (st->clp == c->clp || st->revoked)
			continue;
		if (st->type == MDS_ST_OPEN) {
			others_open = 1;
			if (st->share_access & OPEN4_SHARE_ACCESS_WRITE)
				others_write = 1;
		} else if (st->type == MDS_ST_DELEG) {
			others_deleg = 1;
			if (st->share_access & OPEN4_SHARE_ACCESS_WRITE)
				others_write = 1;
		}
	}
	write = want == OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG ||
		(want == OPEN4_SHARE_ACCESS_WANT_ANY_DELEG && (access & OPEN4_SHARE_ACCESS_WRITE));
	if (write && (others_open || others_deleg || !(access & OPEN4_SHARE_ACCESS_WRITE))) {
		if (want == OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG) {
			none_ext(out, WND4_CONTENTION);
			return;
		}
		write = 0;
	}
	if (!write && others_write) {
		none_ext(out, WND4_CONTENTION);
		return;
	}
	d = mds_stateid_new(c->srv, c->clp, f, NULL, MDS_ST_DELEG);
	if (!d) {
		none_ext(out, WND4_RESOURCE);
		return;
	}
	d->share_access = write ? OPEN4_SHARE_ACCESS_BOTH : OPEN4_SHARE_ACCESS_READ;
	if (write) {
		open_write_delegation4 *w = &out->open_delegation4_u.write;
		out->delegation_type = OPEN_DELEGATE_WRITE;
		mds_stateid_export(d, &w->stateid);
		w->recall = FALSE;
		w->space_limit.limitby = NFS_LIMIT_SIZE;
		w->space_limit.nfs_space_limit4_u.filesize = NFS4_UINT64_MAX;
		/* An empty ACE: the client asks ACCESS for others' opens (RFC 8881 §10.4.1). */
		w->permissions.type = ACE4_ACCESS_ALLOWED_ACE_TYPE;
	} else {
		open_read_delegation4 *r = &out->open_delegation4_u.read;
		out->delegation_type = OPEN_DELEGATE_READ;
		mds_stateid_export(d, &r->stateid);
		r->recall = FALSE;
		r->permissions.type = ACE4_ACCESS_ALLOWED_ACE_TYPE;
	}
}

void mds_deleg_freed(struct mds_server *srv, struct mds_stateid *st)
{
	if (st->recall_ms && !st->revoked && srv->nrecalls)
		srv->nrecalls--;
	st->recall_ms = 0;
}

void mds_deleg_tick(struct mds_server *srv, uint64_t now_ms)
{
	struct mds_map_iter it;
	uint64_t limit = (uint64_t)mds_lease_s(srv) * 1000;

	if (!srv->nrecalls)
		return;
	for (struct mds_stateid *st = mds_map_first(&srv->stateids, &it); st; st = mds_map_next(&srv->stateids, &it))
		if (st->type == MDS_ST_DELEG && st->recall_ms && !st->revoked && now_ms - st->recall_ms >= limit)
			deleg_revoke(srv, st, "not returned within a lease period of its recall");
}
