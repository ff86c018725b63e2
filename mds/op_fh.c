/* Filehandle operations (RFC 8881 §18.19-18.29, §18.13-18.14, §18.45): setting, saving and
 * restoring the current filehandle, lookups, and the security flavours we offer. Changing the
 * current filehandle also clears the current stateid (§16.2.3.1.2); SAVEFH/RESTOREFH carry it. */
#include "mds/compound.h"
#include "mds/fh.h"
#include "mds/ops.h"

#include <errno.h>
#include <string.h>

static void clear_cur_sid(struct mds_compound *c)
{
	c->cur_sid_set = 0;
}

static nfsstat4 admitted(const struct mds_compound *c)
{
	/* The client's network is not in any export rule. */
	return c->have_rule ? NFS4_OK : NFS4ERR_ACCESS;
}

nfsstat4 mds_op_putfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	PUTFH4args *a = &arg->nfs_argop4_u.opputfh;
	uint64_t fileid;
	nfsstat4 st;
	(void)res;

	st = admitted(c);
	if (st)
		return st;
	st = mds_fh_decode(c->srv, a->object.nfs_fh4_val, a->object.nfs_fh4_len, &fileid);
	if (st)
		return st;
	clear_cur_sid(c);
	return mds_cfh_set(c, fileid);
}

nfsstat4 mds_op_putrootfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	nfsstat4 st = admitted(c);
	(void)arg;
	(void)res;

	if (st)
		return st;
	clear_cur_sid(c);
	return mds_cfh_set(c, c->srv->root_fileid);
}

nfsstat4 mds_op_putpubfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	/* The public filehandle is the root: one export, no separate public tree. */
	return mds_op_putrootfh(c, arg, res);
}

nfsstat4 mds_op_getfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	GETFH4resok *ok = &res->nfs_resop4_u.opgetfh.GETFH4res_u.resok4;
	unsigned char *fh = mds_arena_alloc(&c->arena, MDS_FH_BYTES);
	(void)arg;

	if (!fh)
		return NFS4ERR_RESOURCE;
	mds_fh_encode(c->srv, c->cfh.fileid, fh);
	ok->object.nfs_fh4_len = MDS_FH_BYTES;
	ok->object.nfs_fh4_val = (char *)fh;
	return NFS4_OK;
}

nfsstat4 mds_op_savefh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)arg;
	(void)res;
	c->sfh = c->cfh;
	c->saved_sid = c->cur_sid;
	c->saved_sid_set = c->cur_sid_set;
	return NFS4_OK;
}

nfsstat4 mds_op_restorefh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)arg;
	(void)res;
	if (!c->sfh.set)
		return NFS4ERR_RESTOREFH;
	c->cfh = c->sfh;
	c->cur_sid = c->saved_sid;
	c->cur_sid_set = c->saved_sid_set;
	return NFS4_OK;
}

nfsstat4 mds_op_lookup(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LOOKUP4args *a = &arg->nfs_argop4_u.oplookup;
	struct mds_inode dir;
	uint64_t child;
	nfsstat4 st;
	int rc;
	(void)res;

	st = mds_cfh_dir(c, &dir, 1);
	if (st)
		return st;
	st = mds_check_lookup_name(&a->objname);
	if (st)
		return st;
	st = mds_check_access(c, &dir, MDS_MAY_EXEC);
	if (st)
		return st;
	rc = mds_ns_lookup(c->txn, dir.fileid, a->objname.utf8string_val, a->objname.utf8string_len, &child);
	if (rc)
		return mds_errno_to_nfs(rc);
	clear_cur_sid(c);
	return mds_cfh_set(c, child);
}

nfsstat4 mds_op_lookupp(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct mds_inode ino;
	nfsstat4 st;
	(void)arg;
	(void)res;

	st = mds_cfh_dir(c, &ino, 1);
	if (st)
		return st;
	if (ino.fileid == c->srv->root_fileid)
		return NFS4ERR_NOENT; /* the root has no parent in this server's namespace */
	st = mds_check_access(c, &ino, MDS_MAY_EXEC);
	if (st)
		return st;
	clear_cur_sid(c);
	return mds_cfh_set(c, ino.parent);
}

/* AUTH_SYS and AUTH_NONE, strongest first (RFC 8881 §2.6.3.1). */
static void fill_secinfo(struct mds_compound *c, SECINFO4res *r)
{
	secinfo4 *v = mds_arena_calloc(&c->arena, 2, sizeof(*v));

	if (!v) {
		r->status = NFS4ERR_RESOURCE;
		return;
	}
	v[0].flavor = AUTH_SYS;
	v[1].flavor = AUTH_NONE;
	r->SECINFO4res_u.resok4.SECINFO4resok_len = 2;
	r->SECINFO4res_u.resok4.SECINFO4resok_val = v;
}

nfsstat4 mds_op_secinfo(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	SECINFO4args *a = &arg->nfs_argop4_u.opsecinfo;
	struct mds_inode dir;
	uint64_t child;
	nfsstat4 st;
	int rc;

	st = mds_cfh_dir(c, &dir, 0);
	if (st)
		return st;
	st = mds_check_lookup_name(&a->name);
	if (st)
		return st;
	rc = mds_ns_lookup(c->txn, dir.fileid, a->name.utf8string_val, a->name.utf8string_len, &child);
	if (rc)
		return mds_errno_to_nfs(rc);
	fill_secinfo(c, &res->nfs_resop4_u.opsecinfo);
	/* RFC 8881 §2.6.3.1.1.8: SECINFO consumes the current filehandle. */
	c->cfh.set = 0;
	clear_cur_sid(c);
	return res->nfs_resop4_u.opsecinfo.status;
}

nfsstat4 mds_op_secinfo_no_name(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	SECINFO_NO_NAME4args style = arg->nfs_argop4_u.opsecinfo_no_name;
	struct mds_inode ino;
	nfsstat4 st;

	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	if (style == SECINFO_STYLE4_PARENT) {
		if (ino.type != MDS_FT_DIR)
			return NFS4ERR_NOTDIR;
		if (ino.fileid == c->srv->root_fileid)
			return NFS4ERR_NOENT;
	} else if (style != SECINFO_STYLE4_CURRENT_FH) {
		return NFS4ERR_INVAL;
	}
	fill_secinfo(c, &res->nfs_resop4_u.opsecinfo_no_name);
	c->cfh.set = 0;
	clear_cur_sid(c);
	return res->nfs_resop4_u.opsecinfo_no_name.status;
}
