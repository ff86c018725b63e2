/* Attribute operations (RFC 8881 §18.1, §18.7, §18.30, §18.15, §18.31): GETATTR, SETATTR,
 * ACCESS, VERIFY and NVERIFY. A SETATTR that changes the size goes through the data path
 * (mds/data.h) so that it is ordered with READ/WRITE of the same file and the block holding the
 * new end of file is zeroed past it on the LUNs. */
#include "mds/attr.h"
#include "mds/compound.h"
#include "mds/data.h"
#include "mds/deleg.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/ops.h"
#include "mds/state.h"

#include <errno.h>
#include <string.h>

nfsstat4 mds_op_getattr(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	GETATTR4args *a = &arg->nfs_argop4_u.opgetattr;
	GETATTR4resok *ok = &res->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4;
	struct mds_inode ino;
	nfsstat4 st;

	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	return mds_attr_encode(c, &ino, &a->attr_request, &ok->obj_attributes);
}

nfsstat4 mds_op_access(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	ACCESS4args *a = &arg->nfs_argop4_u.opaccess;
	ACCESS4resok *ok = &res->nfs_resop4_u.opaccess.ACCESS4res_u.resok4;
	struct mds_inode ino;
	uint32_t want = a->access, supported, granted = 0;
	int ro = !(c->have_rule && c->rule.rw);
	nfsstat4 st;

	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	supported = want & (ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND |
			    ACCESS4_DELETE | ACCESS4_EXECUTE);
	if (ino.type == MDS_FT_DIR)
		supported &= ~ACCESS4_EXECUTE;
	else
		supported &= ~(ACCESS4_LOOKUP | ACCESS4_DELETE);
	if ((supported & ACCESS4_READ) && mds_may(&c->cred, &ino, MDS_MAY_READ))
		granted |= ACCESS4_READ;
	if ((supported & ACCESS4_LOOKUP) && mds_may(&c->cred, &ino, MDS_MAY_EXEC))
		granted |= ACCESS4_LOOKUP;
	if (!ro && mds_may(&c->cred, &ino, MDS_MAY_WRITE))
		granted |= supported & (ACCESS4_MODIFY | ACCESS4_EXTEND);
	if (!ro && (supported & ACCESS4_DELETE) && mds_may(&c->cred, &ino, MDS_MAY_WRITE | MDS_MAY_EXEC))
		granted |= ACCESS4_DELETE;
	if ((supported & ACCESS4_EXECUTE) && mds_may(&c->cred, &ino, MDS_MAY_EXEC))
		granted |= ACCESS4_EXECUTE;
	ok->supported = supported;
	ok->access = granted;
	return NFS4_OK;
}

/* VERIFY and NVERIFY: encode our values for the client's bitmap and compare the bytes. */
static nfsstat4 compare_attrs(struct mds_compound *c, const fattr4 *theirs, int *equal)
{
	struct proto_fattr *a = mds_arena_calloc(&c->arena, 1, sizeof(*a));
	struct proto_attrmask want, wo;
	struct mds_inode ino;
	fattr4 ours;
	nfsstat4 st;
	int rc;

	if (!a)
		return NFS4ERR_RESOURCE;
	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	rc = proto_fattr_decode(theirs, a, NULL);
	if (rc == -ENOTSUP)
		return NFS4ERR_ATTRNOTSUPP;
	if (rc)
		return NFS4ERR_BADXDR;
	want = a->mask;
	proto_attrmask_and(&wo, &want, &proto_attr_writeonly);
	if (!proto_attrmask_empty(&wo) || proto_attrmask_isset(&want, FATTR4_RDATTR_ERROR))
		return NFS4ERR_INVAL;
	memset(a, 0, sizeof(*a));
	st = mds_attr_fill(c, &ino, &want, a);
	if (st)
		return st;
	memset(&ours, 0, sizeof(ours));
	rc = proto_fattr_encode(a, &want, &ours);
	if (rc)
		return NFS4ERR_SERVERFAULT;
	*equal = ours.attr_vals.attrlist4_len == theirs->attr_vals.attrlist4_len &&
		 memcmp(ours.attr_vals.attrlist4_val, theirs->attr_vals.attrlist4_val,
			ours.attr_vals.attrlist4_len) == 0;
	xdr_free((xdrproc_t)xdr_fattr4, (char *)&ours);
	return NFS4_OK;
}

/* VERIFY (want_equal: NFS4_OK when the attributes are the file's) and NVERIFY (NFS4_OK when they
 * are not). */
static nfsstat4 verify_attrs(struct mds_compound *c, const fattr4 *attrs, int want_equal)
{
	int equal = 0;
	nfsstat4 st = compare_attrs(c, attrs, &equal);

	if (st)
		return st;
	if (equal == want_equal)
		return NFS4_OK;
	return want_equal ? NFS4ERR_NOT_SAME : NFS4ERR_SAME;
}

nfsstat4 mds_op_verify(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)res;
	return verify_attrs(c, &arg->nfs_argop4_u.opverify.obj_attributes, 1);
}

nfsstat4 mds_op_nverify(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)res;
	return verify_attrs(c, &arg->nfs_argop4_u.opnverify.obj_attributes, 0);
}

nfsstat4 mds_op_setattr(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	SETATTR4args *a = &arg->nfs_argop4_u.opsetattr;
	SETATTR4res *r = &res->nfs_resop4_u.opsetattr;
	struct proto_fattr *fa = mds_arena_calloc(&c->arena, 1, sizeof(*fa));
	struct proto_attrmask set;
	struct mds_setattr sa;
	struct mds_inode ino;
	struct mds_stateid *sst = NULL;
	nfsstat4 st;
	int rc;

	memset(&r->attrsset, 0, sizeof(r->attrsset));
	if (!fa)
		return NFS4ERR_RESOURCE;
	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	st = mds_attr_decode_set(&a->obj_attributes, fa);
	if (st)
		return st;
	st = mds_check_writable_export(c);
	if (st)
		return st;
	st = mds_attr_to_setattr(c, fa, &ino, &sa, &set);
	if (st)
		return st;
	if (sa.mask & MDS_SA_SIZE) {
		st = mds_sid_check_io(c, &a->stateid, ino.fileid, 1, &sst);
		if (st)
			return st;
		/* Without an open for writing, the mode bits decide. */
		if (!sst && !mds_may(&c->cred, &ino, MDS_MAY_WRITE))
			return NFS4ERR_ACCESS;
		{
			struct mds_file *f = mds_file_find(c->srv, ino.fileid);
			if (f && mds_deleg_break(c, f, OPEN4_SHARE_ACCESS_WRITE) != NFS4_OK)
				return NFS4ERR_DELAY;
		}
		mds_attr_bitmap(c, &set, &r->attrsset);
		return mds_data_setattr_size(c, &ino, &sa);
	}
	if (sa.mask) {
		rc = mds_inode_setattr(c->txn, ino.fileid, &sa, 0, NULL, NULL);
		if (rc)
			return mds_errno_to_nfs(rc);
		mds_compound_dirty(c);
	}
	mds_attr_bitmap(c, &set, &r->attrsset);
	return NFS4_OK;
}
