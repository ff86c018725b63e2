/* OPEN and its state (RFC 8881 §18.16, §18.18, §18.2, §18.6, §18.48, §18.38, §9): every claim
 * type and create mode (the EXCLUSIVE4/EXCLUSIVE4_1 verifier kept in the new file's atime and
 * mtime seconds, as RFC 8881 §18.16.3 suggests), share reservations and their conflicts,
 * OPEN_DOWNGRADE, CLOSE, DELEGRETURN, TEST_STATEID and FREE_STATEID. */
#include "mds/attr.h"
#include "mds/compound.h"
#include "mds/deleg.h"
#include "mds/fh.h"
#include "mds/ops.h"
#include "mds/state.h"
#include "proto/log.h"

#include <errno.h>
#include <string.h>

#define SHARE_ACCESS_MASK 0xffu
#define WANT_MASK OPEN4_SHARE_ACCESS_WANT_DELEG_MASK

static uint32_t be32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static int verifier_matches(const struct mds_inode *ino, const char *verf)
{
	return ino->atime.sec == (int64_t)be32(verf) && ino->mtime.sec == (int64_t)be32(verf + 4) &&
	       ino->atime.nsec == 0 && ino->mtime.nsec == 0;
}

/* Open an existing file: permission by access wanted. */
static nfsstat4 open_access_ok(struct mds_compound *c, const struct mds_inode *ino, uint32_t access)
{
	if ((access & OPEN4_SHARE_ACCESS_WRITE) && mds_check_writable_export(c) != NFS4_OK)
		return NFS4ERR_ROFS;
	if ((access & OPEN4_SHARE_ACCESS_READ) && !mds_may(&c->cred, ino, MDS_MAY_READ))
		return NFS4ERR_ACCESS;
	if ((access & OPEN4_SHARE_ACCESS_WRITE) && !mds_may(&c->cred, ino, MDS_MAY_WRITE))
		return NFS4ERR_ACCESS;
	return NFS4_OK;
}

static nfsstat4 not_regular(const struct mds_inode *ino)
{
	if (ino->type == MDS_FT_DIR)
		return NFS4ERR_ISDIR;
	if (ino->type == MDS_FT_LNK)
		return NFS4ERR_SYMLINK;
	return NFS4ERR_WRONG_TYPE;
}

struct open_target {
	struct mds_inode ino;
	int created;
	struct mds_change_info ci;
	int have_ci;
	struct proto_attrmask attrset;
};

/* CLAIM_NULL / CLAIM_DELEGATE_CUR: find or create name in the current directory. */
static nfsstat4 open_by_name(struct mds_compound *c, OPEN4args *a, const component4 *name, struct open_target *t)
{
	struct mds_inode dir;
	uint64_t id;
	nfsstat4 st;
	int rc, create = a->openhow.opentype == OPEN4_CREATE;

	st = mds_cfh_dir(c, &dir, 1);
	if (st)
		return st;
	st = mds_check_name(name);
	if (st == NFS4ERR_BADNAME && !create)
		return NFS4ERR_NOENT;
	if (st)
		return st;
	st = mds_check_access(c, &dir, MDS_MAY_EXEC);
	if (st)
		return st;
	rc = mds_ns_lookup(c->txn, dir.fileid, name->utf8string_val, name->utf8string_len, &id);
	if (rc && rc != -ENOENT)
		return mds_errno_to_nfs(rc);
	if (rc == 0) {
		rc = mds_inode_read(c->txn, id, &t->ino);
		if (rc)
			return mds_errno_to_nfs(rc);
		t->ci.before = t->ci.after = dir.change;
		t->have_ci = 1;
		if (!create)
			return NFS4_OK;
		switch (a->openhow.openflag4_u.how.mode) {
		case UNCHECKED4:
			break;
		case GUARDED4:
			return NFS4ERR_EXIST;
		case EXCLUSIVE4:
			if (t->ino.type != MDS_FT_REG ||
			    !verifier_matches(&t->ino, a->openhow.openflag4_u.how.createhow4_u.createverf))
				return NFS4ERR_EXIST;
			break;
		case EXCLUSIVE4_1:
			if (t->ino.type != MDS_FT_REG ||
			    !verifier_matches(&t->ino,
					      a->openhow.openflag4_u.how.createhow4_u.ch_createboth.cva_verf))
				return NFS4ERR_EXIST;
			break;
		default:
			return NFS4ERR_INVAL;
		}
		return NFS4_OK;
	}
	if (!create)
		return NFS4ERR_NOENT;

	/* Create a regular file. */
	{
		createhow4 *how = &a->openhow.openflag4_u.how;
		struct proto_fattr *fa = mds_arena_calloc(&c->arena, 1, sizeof(*fa));
		struct mds_create_args ca;
		struct mds_setattr sa;
		const fattr4 *attrs = NULL;
		const char *verf = NULL;

		if (!fa)
			return NFS4ERR_RESOURCE;
		st = mds_check_writable_export(c);
		if (st)
			return st;
		st = mds_check_access(c, &dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
		if (st)
			return st;
		switch (how->mode) {
		case UNCHECKED4:
		case GUARDED4:
			attrs = &how->createhow4_u.createattrs;
			break;
		case EXCLUSIVE4:
			verf = how->createhow4_u.createverf;
			break;
		case EXCLUSIVE4_1:
			verf = how->createhow4_u.ch_createboth.cva_verf;
			attrs = &how->createhow4_u.ch_createboth.cva_attrs;
			break;
		default:
			return NFS4ERR_INVAL;
		}
		memset(&sa, 0, sizeof(sa));
		if (attrs) {
			st = mds_attr_decode_set(attrs, fa);
			if (st)
				return st;
			if (verf && (proto_attrmask_isset(&fa->mask, FATTR4_TIME_ACCESS_SET) ||
				     proto_attrmask_isset(&fa->mask, FATTR4_TIME_MODIFY_SET)))
				return NFS4ERR_INVAL; /* the times hold the verifier */
			st = mds_attr_to_setattr(c, fa, NULL, &sa, &t->attrset);
			if (st)
				return st;
		}
		memset(&ca, 0, sizeof(ca));
		ca.type = MDS_FT_REG;
		ca.mode = (sa.mask & MDS_SA_MODE) ? sa.mode : 0644;
		ca.uid = (sa.mask & MDS_SA_UID) ? sa.uid : c->cred.uid;
		ca.gid = (sa.mask & MDS_SA_GID) ? sa.gid : (dir.mode & 02000) ? dir.gid : c->cred.gid;
		rc = mds_ns_create(c->txn, dir.fileid, name->utf8string_val, name->utf8string_len, &ca, &t->ino, &t->ci);
		if (rc)
			return mds_errno_to_nfs(rc);
		mds_compound_dirty(c);
		t->created = 1;
		t->have_ci = 1;
		sa.mask &= ~(MDS_SA_MODE | MDS_SA_UID | MDS_SA_GID | MDS_SA_SIZE);
		if (verf) {
			sa.mask |= MDS_SA_ATIME | MDS_SA_MTIME;
			sa.atime.sec = be32(verf);
			sa.atime.nsec = 0;
			sa.mtime.sec = be32(verf + 4);
			sa.mtime.nsec = 0;
		}
		if (sa.mask) {
			rc = mds_inode_setattr(c->txn, t->ino.fileid, &sa, 0, NULL, &t->ino);
			if (rc)
				return mds_errno_to_nfs(rc);
		}
		proto_attrmask_clear(&t->attrset, FATTR4_SIZE);
	}
	return NFS4_OK;
}

/* UNCHECKED4 on an existing file with a size attribute: truncate it (an OPEN(O_TRUNC)). */
static nfsstat4 open_truncate(struct mds_compound *c, OPEN4args *a, struct open_target *t)
{
	createhow4 *how = &a->openhow.openflag4_u.how;
	struct proto_fattr *fa;
	struct mds_setattr sa;
	nfsstat4 st;
	int rc;

	if (t->created || a->openhow.opentype != OPEN4_CREATE || how->mode != UNCHECKED4)
		return NFS4_OK;
	fa = mds_arena_calloc(&c->arena, 1, sizeof(*fa));
	if (!fa)
		return NFS4ERR_RESOURCE;
	st = mds_attr_decode_set(&how->createhow4_u.createattrs, fa);
	if (st)
		return st;
	if (!proto_attrmask_isset(&fa->mask, FATTR4_SIZE))
		return NFS4_OK;
	memset(&sa, 0, sizeof(sa));
	sa.mask = MDS_SA_SIZE;
	sa.size = fa->size;
	rc = mds_inode_setattr(c->txn, t->ino.fileid, &sa, 0, NULL, &t->ino);
	if (rc)
		return mds_errno_to_nfs(rc);
	mds_compound_dirty(c);
	proto_attrmask_set(&t->attrset, FATTR4_SIZE);
	return NFS4_OK;
}

nfsstat4 mds_op_open(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	OPEN4args *a = &arg->nfs_argop4_u.opopen;
	OPEN4resok *ok = &res->nfs_resop4_u.opopen.OPEN4res_u.resok4;
	struct mds_server *srv = c->srv;
	struct mds_client *clp = c->clp;
	uint32_t access = a->share_access & SHARE_ACCESS_MASK, deny = a->share_deny;
	uint32_t want = a->share_access & WANT_MASK;
	struct open_target t;
	struct mds_file *f = NULL;
	struct mds_owner *ow;
	struct mds_stateid *st_open;
	uint32_t acc_others, deny_others;
	int reclaim = a->claim.claim == CLAIM_PREVIOUS;
	nfsstat4 st;

	memset(&t, 0, sizeof(t));
	if (!clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	if (access == 0 || access > OPEN4_SHARE_ACCESS_BOTH || deny > OPEN4_SHARE_DENY_BOTH ||
	    (a->share_access & ~(SHARE_ACCESS_MASK | WANT_MASK | OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL |
				 OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED)))
		return NFS4ERR_INVAL;
	if (a->openhow.opentype == OPEN4_CREATE && a->claim.claim != CLAIM_NULL)
		return NFS4ERR_INVAL;
	/* Grace (RFC 8881 §8.4.2, §18.51.3): reclaims only during it, only then, and only by a
	 * client that had state before the restart and has not said RECLAIM_COMPLETE. */
	if (reclaim) {
		if (!srv->in_grace || !clp->reclaim_ok || clp->reclaim_complete)
			return NFS4ERR_NO_GRACE;
	} else {
		if (srv->in_grace)
			return NFS4ERR_GRACE;
		if (!clp->reclaim_complete)
			return NFS4ERR_GRACE;
	}
	switch (a->claim.claim) {
	case CLAIM_NULL:
		st = open_by_name(c, a, &a->claim.open_claim4_u.file, &t);
		break;
	case CLAIM_DELEGATE_CUR: {
		struct mds_stateid *d;
		st = mds_sid_lookup(c, &a->claim.open_claim4_u.delegate_cur_info.delegate_stateid,
				    MDS_STM(MDS_ST_DELEG), &d);
		if (st)
			return st;
		st = open_by_name(c, a, &a->claim.open_claim4_u.delegate_cur_info.file, &t);
		if (st == NFS4_OK && (!d->file || d->file->fileid != t.ino.fileid))
			return NFS4ERR_BAD_STATEID;
		break;
	}
	case CLAIM_DELEG_CUR_FH: {
		struct mds_stateid *d;
		st = mds_sid_lookup(c, &a->claim.open_claim4_u.oc_delegate_stateid, MDS_STM(MDS_ST_DELEG), &d);
		if (st)
			return st;
		st = mds_cfh_inode(c, &t.ino);
		if (st == NFS4_OK && (!d->file || d->file->fileid != t.ino.fileid))
			return NFS4ERR_BAD_STATEID;
		break;
	}
	case CLAIM_FH:
	case CLAIM_PREVIOUS:
		st = mds_cfh_inode(c, &t.ino);
		break;
	case CLAIM_DELEGATE_PREV:
	case CLAIM_DELEG_PREV_FH:
		/* Delegations do not survive a restart here, so there is nothing to reclaim. */
		return NFS4ERR_RECLAIM_BAD;
	default:
		return NFS4ERR_INVAL;
	}
	if (st)
		return st;
	if (t.ino.type != MDS_FT_REG)
		return not_regular(&t.ino);
	if (!t.created) {
		st = open_access_ok(c, &t.ino, access);
		if (st)
			return st;
	}
	f = mds_file_get(srv, t.ino.fileid);
	if (!f)
		return NFS4ERR_RESOURCE;
	ow = mds_owner_lookup(srv, clp, 0, a->owner.owner.owner_val, a->owner.owner.owner_len, 1);
	if (!ow) {
		st = NFS4ERR_RESOURCE;
		goto out;
	}
	st_open = mds_open_find(f, ow);
	mds_file_share_union(f, st_open, &acc_others, &deny_others);
	if ((access & deny_others) || (deny & acc_others)) {
		st = NFS4ERR_SHARE_DENIED;
		goto out;
	}
	st = mds_deleg_break(c, f, access);
	if (st)
		goto out;
	st = open_truncate(c, a, &t);
	if (st)
		goto out;
	if (st_open) {
		st_open->share_access |= access;
		st_open->share_deny |= deny;
		mds_stateid_bump(st_open);
	} else {
		st_open = mds_stateid_new(srv, clp, f, ow, MDS_ST_OPEN);
		if (!st_open) {
			st = NFS4ERR_RESOURCE;
			goto out;
		}
		st_open->share_access = access;
		st_open->share_deny = deny;
	}
	st_open->access_bmap |= 1u << access;
	st_open->deny_bmap |= 1u << deny;
	mds_stateid_export(st_open, &ok->stateid);
	if (t.have_ci) {
		ok->cinfo.atomic = TRUE;
		ok->cinfo.before = t.ci.before;
		ok->cinfo.after = t.ci.after;
	}
	ok->rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
	mds_attr_bitmap(c, &t.attrset, &ok->attrset);
	mds_deleg_offer(c, f, st_open, want, access, reclaim, &ok->delegation);
	mds_sid_set_current(c, st_open);
	c->cfh.set = 1;
	c->cfh.fileid = t.ino.fileid;
	st = NFS4_OK;
out:
	mds_file_put(srv, f);
	return st;
}

nfsstat4 mds_op_open_downgrade(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	OPEN_DOWNGRADE4args *a = &arg->nfs_argop4_u.opopen_downgrade;
	OPEN_DOWNGRADE4resok *ok = &res->nfs_resop4_u.opopen_downgrade.OPEN_DOWNGRADE4res_u.resok4;
	struct mds_stateid *st;
	uint32_t access = a->share_access & SHARE_ACCESS_MASK, deny = a->share_deny;
	nfsstat4 s;

	s = mds_sid_find_cfh(c, &a->open_stateid, MDS_STM(MDS_ST_OPEN), &st);
	if (s)
		return s;
	if (access == 0 || access > OPEN4_SHARE_ACCESS_BOTH || deny > OPEN4_SHARE_DENY_BOTH)
		return NFS4ERR_INVAL;
	/* Only to modes this owner actually opened with (RFC 8881 §18.18.3). */
	if ((access & ~st->share_access) || (deny & ~st->share_deny) || !(st->access_bmap & (1u << access)) ||
	    !(st->deny_bmap & (1u << deny)))
		return NFS4ERR_INVAL;
	st->share_access = access;
	st->share_deny = deny;
	/* Keep only the modes still within the new ones: later downgrades are bounded by them. */
	for (uint32_t m = 0; m < 4; m++) {
		if (m & ~access)
			st->access_bmap &= ~(1u << m);
		if (m & ~deny)
			st->deny_bmap &= ~(1u << m);
	}
	mds_stateid_bump(st);
	mds_stateid_export(st, &ok->open_stateid);
	mds_sid_set_current(c, st);
	return NFS4_OK;
}

nfsstat4 mds_op_close(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	CLOSE4args *a = &arg->nfs_argop4_u.opclose;
	stateid4 *out = &res->nfs_resop4_u.opclose.CLOSE4res_u.open_stateid;
	struct mds_stateid *st;
	nfsstat4 s;

	s = mds_sid_find_cfh(c, &a->open_stateid, MDS_STM(MDS_ST_OPEN), &st);
	if (s)
		return s;
	/* RFC 8881 §18.2.4: the stateid returned is meaningless; send the invalid special one. */
	memset(out, 0, sizeof(*out));
	out->seqid = NFS4_UINT32_MAX;
	mds_stateid_free(c->srv, st);
	c->cur_sid = *out;
	c->cur_sid_set = 1;
	return NFS4_OK;
}

nfsstat4 mds_op_delegreturn(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	DELEGRETURN4args *a = &arg->nfs_argop4_u.opdelegreturn;
	struct mds_stateid *st;
	nfsstat4 s;
	(void)res;

	s = mds_sid_find_cfh(c, &a->deleg_stateid, MDS_STM(MDS_ST_DELEG), &st);
	if (s)
		return s;
	mds_stateid_free(c->srv, st);
	return NFS4_OK;
}

nfsstat4 mds_op_delegpurge(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)c;
	(void)arg;
	(void)res;
	/* Only meaningful with CLAIM_DELEGATE_PREV, which we do not support (RFC 8881 §18.5.3). */
	return NFS4ERR_NOTSUPP;
}

nfsstat4 mds_op_want_delegation(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}

static nfsstat4 test_one(struct mds_compound *c, const stateid4 *sid)
{
	struct mds_stateid *st;
	int stale;

	if (mds_stateid_special(sid) != MDS_SID_NORMAL)
		return NFS4ERR_BAD_STATEID;
	st = mds_stateid_find(c->srv, sid, &stale);
	if (stale)
		return NFS4ERR_STALE_STATEID;
	if (!st || st->clp != c->clp)
		return NFS4ERR_BAD_STATEID;
	if (st->revoked)
		return st->type == MDS_ST_DELEG ? NFS4ERR_DELEG_REVOKED : NFS4ERR_ADMIN_REVOKED;
	if (sid->seqid != 0 && sid->seqid != st->seqid)
		return (int32_t)(sid->seqid - st->seqid) < 0 ? NFS4ERR_OLD_STATEID : NFS4ERR_BAD_STATEID;
	return NFS4_OK;
}

nfsstat4 mds_op_test_stateid(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	TEST_STATEID4args *a = &arg->nfs_argop4_u.optest_stateid;
	TEST_STATEID4resok *ok = &res->nfs_resop4_u.optest_stateid.TEST_STATEID4res_u.tsr_resok4;
	unsigned n = a->ts_stateids.ts_stateids_len;
	nfsstat4 *codes;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	codes = mds_arena_calloc(&c->arena, n ? n : 1, sizeof(*codes));
	if (!codes)
		return NFS4ERR_RESOURCE;
	for (unsigned i = 0; i < n; i++)
		codes[i] = test_one(c, &a->ts_stateids.ts_stateids_val[i]);
	ok->tsr_status_codes.tsr_status_codes_len = n;
	ok->tsr_status_codes.tsr_status_codes_val = codes;
	return NFS4_OK;
}

nfsstat4 mds_op_free_stateid(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	FREE_STATEID4args *a = &arg->nfs_argop4_u.opfree_stateid;
	struct mds_stateid *st;
	stateid4 sid;
	int stale;
	nfsstat4 s;
	(void)res;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	s = mds_sid_resolve(c, &a->fsa_stateid, &sid);
	if (s)
		return s;
	if (mds_stateid_special(&sid) != MDS_SID_NORMAL)
		return NFS4ERR_BAD_STATEID;
	st = mds_stateid_find(c->srv, &sid, &stale);
	if (stale)
		return NFS4ERR_STALE_STATEID;
	if (!st || st->clp != c->clp)
		return NFS4ERR_BAD_STATEID;
	if (!st->revoked) {
		if (sid.seqid != 0 && sid.seqid != st->seqid)
			return (int32_t)(sid.seqid - st->seqid) < 0 ? NFS4ERR_OLD_STATEID : NFS4ERR_BAD_STATEID;
		switch (st->type) {
		case MDS_ST_LOCK:
			if (st->file)
				proto_list_for_each(l, &st->file->locks, struct mds_lock, link)
					if (l->st == st)
						return NFS4ERR_LOCKS_HELD;
			break;
		default:
			/* Opens are closed, delegations returned, layouts returned: not freed. */
			return NFS4ERR_LOCKS_HELD;
		}
	}
	mds_stateid_free(c->srv, st);
	return NFS4_OK;
}
