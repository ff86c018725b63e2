/* Stateids as operation arguments (RFC 8881 §8.2): the special stateids, the current stateid of a
 * COMPOUND (§16.2.3.1.2), seqid checks, and the share-reservation check for I/O with anonymous
 * stateids. */
#include "mds/compound.h"
#include "mds/state.h"

#include <string.h>

void mds_stateid_bump(struct mds_stateid *st)
{
	st->seqid++;
	if (st->seqid == 0)
		st->seqid = 1;
}

void mds_sid_set_current(struct mds_compound *c, const struct mds_stateid *st)
{
	mds_stateid_export(st, &c->cur_sid);
	c->cur_sid_set = 1;
}

nfsstat4 mds_sid_resolve(struct mds_compound *c, const stateid4 *in, stateid4 *out)
{
	if (mds_stateid_special(in) == MDS_SID_CURRENT) {
		if (!c->cur_sid_set)
			return NFS4ERR_BAD_STATEID;
		*out = c->cur_sid;
		return NFS4_OK;
	}
	*out = *in;
	return NFS4_OK;
}

static nfsstat4 revoked_status(const struct mds_stateid *st)
{
	return st->type == MDS_ST_DELEG ? NFS4ERR_DELEG_REVOKED : NFS4ERR_ADMIN_REVOKED;
}

nfsstat4 mds_sid_lookup(struct mds_compound *c, const stateid4 *sid, unsigned type_mask,
			struct mds_stateid **out)
{
	struct mds_stateid *st;
	int stale;

	switch (mds_stateid_special(sid)) {
	case MDS_SID_NORMAL:
		break;
	default:
		return NFS4ERR_BAD_STATEID;
	}
	st = mds_stateid_find(c->srv, sid, &stale);
	if (stale)
		return NFS4ERR_STALE_STATEID;
	if (!st || !(type_mask & MDS_STM(st->type)))
		return NFS4ERR_BAD_STATEID;
	if (c->clp && st->clp != c->clp)
		return NFS4ERR_BAD_STATEID;
	if (st->revoked)
		return revoked_status(st);
	if (sid->seqid != 0 && sid->seqid != st->seqid) {
		/* seqid comparisons wrap (RFC 8881 §8.2.2): "older" is within 2^31 behind. */
		int32_t d = (int32_t)(sid->seqid - st->seqid);
		return d < 0 ? NFS4ERR_OLD_STATEID : NFS4ERR_BAD_STATEID;
	}
	*out = st;
	return NFS4_OK;
}

nfsstat4 mds_sid_find(struct mds_compound *c, const stateid4 *in, unsigned type_mask, struct mds_stateid **out)
{
	stateid4 sid;
	nfsstat4 st = mds_sid_resolve(c, in, &sid);

	return st ? st : mds_sid_lookup(c, &sid, type_mask, out);
}

nfsstat4 mds_sid_find_cfh(struct mds_compound *c, const stateid4 *in, unsigned type_mask,
			  struct mds_stateid **out)
{
	nfsstat4 st = mds_sid_find(c, in, type_mask, out);

	if (st)
		return st;
	return (*out)->file && (*out)->file->fileid == c->cfh.fileid ? NFS4_OK : NFS4ERR_BAD_STATEID;
}

nfsstat4 mds_sid_check_io(struct mds_compound *c, const stateid4 *in, uint64_t fileid, int write,
			  struct mds_stateid **out)
{
	struct mds_stateid *st;
	struct mds_file *f;
	stateid4 sid;
	nfsstat4 rc;

	*out = NULL;
	rc = mds_sid_resolve(c, in, &sid);
	if (rc)
		return rc;
	switch (mds_stateid_special(&sid)) {
	case MDS_SID_ANON:
	case MDS_SID_BYPASS:
		f = mds_file_find(c->srv, fileid);
		if (f) {
			uint32_t acc, deny;
			mds_file_share_union(f, NULL, &acc, &deny);
			/* Bypass ignores deny-read for READ (§8.2.3); nothing bypasses deny-write. */
			if (write ? (deny & OPEN4_SHARE_DENY_WRITE) != 0
				  : (deny & OPEN4_SHARE_DENY_READ) && mds_stateid_special(&sid) == MDS_SID_ANON)
				return NFS4ERR_LOCKED;
		}
		return NFS4_OK;
	case MDS_SID_NORMAL:
		break;
	default:
		return NFS4ERR_BAD_STATEID;
	}
	rc = mds_sid_lookup(c, &sid, MDS_STM(MDS_ST_OPEN) | MDS_STM(MDS_ST_LOCK) | MDS_STM(MDS_ST_DELEG), &st);
	if (rc)
		return rc;
	if (!st->file || st->file->fileid != fileid)
		return NFS4ERR_BAD_STATEID;
	if (write) {
		const struct mds_stateid *open = st->type == MDS_ST_LOCK ? st->open : st;
		if (st->type == MDS_ST_DELEG) {
			if (!(st->share_access & OPEN4_SHARE_ACCESS_WRITE))
				return NFS4ERR_OPENMODE;
		} else if (!open || !(open->share_access & OPEN4_SHARE_ACCESS_WRITE)) {
			return NFS4ERR_OPENMODE;
		}
	}
	*out = st;
	return NFS4_OK;
}

int mds_client_needs_backchannel(const struct mds_client *clp)
{
	for (const struct mds_stateid *st = clp->states; st; st = st->next_in_client)
		if (st->type == MDS_ST_DELEG || st->type == MDS_ST_LAYOUT)
			return 1;
	return 0;
}
