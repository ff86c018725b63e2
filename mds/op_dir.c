/* Namespace changes and listings (RFC 8881 §18.4, §18.25, §18.26, §18.9, §18.23, §18.24): CREATE
 * of non-regular objects, REMOVE, RENAME, LINK, READDIR with cookies and size limits, READLINK.
 * A removed file that is still open stays as an orphan until its last CLOSE. */
#include "mds/attr.h"
#include "mds/compound.h"
#include "mds/deleg.h"
#include "mds/fh.h"
#include "mds/layout.h"
#include "mds/ops.h"
#include "mds/state.h"

#include <errno.h>
#include <string.h>

static void cinfo(change_info4 *out, const struct mds_change_info *ci)
{
	out->atomic = TRUE;
	out->before = ci->before;
	out->after = ci->after;
}

/* The directory a namespace change happens in: a directory we may write into. */
static nfsstat4 writable_dir(struct mds_compound *c, int saved, struct mds_inode *dir)
{
	nfsstat4 st = saved ? mds_sfh_inode(c, dir) : mds_cfh_inode(c, dir);

	if (st)
		return st;
	if (dir->type != MDS_FT_DIR)
		return dir->type == MDS_FT_LNK && !saved ? NFS4ERR_NOTDIR : NFS4ERR_NOTDIR;
	st = mds_check_writable_export(c);
	if (st)
		return st;
	return mds_check_access(c, dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
}

/* The sticky bit: only the file's owner, the directory's owner or root may remove or rename. */
static nfsstat4 sticky_ok(const struct mds_compound *c, const struct mds_inode *dir, struct mds_txn *t,
			  const component4 *name)
{
	struct mds_inode child;
	uint64_t id;

	if (!(dir->mode & 01000) || c->cred.uid == 0 || c->cred.uid == dir->uid)
		return NFS4_OK;
	if (mds_ns_lookup(t, dir->fileid, name->utf8string_val, name->utf8string_len, &id) != 0)
		return NFS4_OK; /* the store reports the missing name */
	if (mds_inode_read(t, id, &child) != 0)
		return NFS4_OK;
	return child.uid == c->cred.uid ? NFS4_OK : NFS4ERR_ACCESS;
}

nfsstat4 mds_op_create(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	CREATE4args *a = &arg->nfs_argop4_u.opcreate;
	CREATE4resok *ok = &res->nfs_resop4_u.opcreate.CREATE4res_u.resok4;
	struct proto_fattr *fa = mds_arena_calloc(&c->arena, 1, sizeof(*fa));
	struct mds_create_args ca;
	struct mds_setattr sa;
	struct proto_attrmask set;
	struct mds_change_info ci;
	struct mds_inode dir, ino;
	nfsstat4 st;
	int rc;

	if (!fa)
		return NFS4ERR_RESOURCE;
	st = writable_dir(c, 0, &dir);
	if (st)
		return st;
	memset(&ca, 0, sizeof(ca));
	switch (a->objtype.type) {
	case NF4DIR:
		ca.type = MDS_FT_DIR;
		ca.mode = 0755;
		break;
	case NF4LNK:
		ca.type = MDS_FT_LNK;
		ca.mode = 0777;
		ca.target = a->objtype.createtype4_u.linkdata.linktext4_val;
		ca.target_len = a->objtype.createtype4_u.linkdata.linktext4_len;
		if (ca.target_len == 0)
			return NFS4ERR_INVAL;
		break;
	case NF4BLK:
	case NF4CHR:
		ca.type = a->objtype.type == NF4BLK ? MDS_FT_BLK : MDS_FT_CHR;
		ca.mode = 0644;
		ca.rdev_major = a->objtype.createtype4_u.devdata.specdata1;
		ca.rdev_minor = a->objtype.createtype4_u.devdata.specdata2;
		break;
	case NF4SOCK:
		ca.type = MDS_FT_SOCK;
		ca.mode = 0644;
		break;
	case NF4FIFO:
		ca.type = MDS_FT_FIFO;
		ca.mode = 0644;
		break;
	default:
		/* Regular files are made by OPEN; named-attribute types do not exist here. */
		return NFS4ERR_BADTYPE;
	}
	st = mds_check_name(&a->objname);
	if (st)
		return st;
	st = mds_attr_decode_set(&a->createattrs, fa);
	if (st)
		return st;
	if (proto_attrmask_isset(&fa->mask, FATTR4_SIZE))
		return NFS4ERR_INVAL;
	st = mds_attr_to_setattr(c, fa, NULL, &sa, &set);
	if (st)
		return st;
	ca.uid = c->cred.uid;
	ca.gid = (dir.mode & 02000) ? dir.gid : c->cred.gid;
	if (sa.mask & MDS_SA_MODE)
		ca.mode = sa.mode;
	if (sa.mask & MDS_SA_UID)
		ca.uid = sa.uid;
	if (sa.mask & MDS_SA_GID)
		ca.gid = sa.gid;
	sa.mask &= ~(MDS_SA_MODE | MDS_SA_UID | MDS_SA_GID);
	rc = mds_ns_create(c->txn, dir.fileid, a->objname.utf8string_val, a->objname.utf8string_len, &ca, &ino,
			   &ci);
	if (rc)
		return mds_errno_to_nfs(rc);
	mds_compound_dirty(c);
	if (sa.mask) {
		rc = mds_inode_setattr(c->txn, ino.fileid, &sa, 0, NULL, NULL);
		if (rc)
			return mds_errno_to_nfs(rc);
	}
	cinfo(&ok->cinfo, &ci);
	mds_attr_bitmap(c, &set, &ok->attrset);
	c->cfh.set = 1;
	c->cfh.fileid = ino.fileid;
	c->cur_sid_set = 0;
	return NFS4_OK;
}

/* Whether a file has opens (then removing its last name keeps it as an orphan). */
static int file_is_open(struct mds_server *srv, uint64_t fileid)
{
	struct mds_file *f = mds_file_find(srv, fileid);

	if (!f)
		return 0;
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file)
		if (st->type == MDS_ST_OPEN)
			return 1;
	return 0;
}

static void note_orphan(struct mds_server *srv, uint64_t fileid)
{
	struct mds_file *f = mds_file_find(srv, fileid);
	if (f)
		f->orphaned = 1;
}

/* Before name in dir loses its file (REMOVE, or RENAME over it): other clients' delegations of the
 * file are recalled first (their caches), and *flags get what the store must keep: the orphan of a
 * file still open, blocks that layouts still cover. NFS4ERR_DELAY while a recall runs. */
static nfsstat4 before_unlink(struct mds_compound *c, const struct mds_inode *dir, const component4 *name,
			      unsigned *flags)
{
	struct mds_file *f;
	uint64_t victim;

	if (mds_ns_lookup(c->txn, dir->fileid, name->utf8string_val, name->utf8string_len, &victim) != 0)
		return NFS4_OK;
	f = mds_file_find(c->srv, victim);
	if (f && mds_deleg_break(c, f, 0) != NFS4_OK)
		return NFS4ERR_DELAY;
	if (file_is_open(c->srv, victim))
		*flags |= MDS_KEEP_ORPHAN;
	if (f)
		*flags |= mds_lo_free_flags(c->srv, f, 0);
	return NFS4_OK;
}

/* After a REMOVE, or a RENAME over an existing name, took fileid's last name: an orphan (still
 * open) is noted, its layouts learn it is gone, and the blocks it freed go to the layout code,
 * which reuses them once no layout covers them. */
static void gone(struct mds_compound *c, uint64_t fileid, int orphaned, int destroyed, struct mds_ranges *freed)
{
	if (orphaned)
		note_orphan(c->srv, fileid);
	mds_lo_removed(c->srv, fileid, destroyed);
	if (freed->n)
		mds_lo_blocks_freed(c->srv, fileid, 0, freed);
}

nfsstat4 mds_op_remove(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	REMOVE4args *a = &arg->nfs_argop4_u.opremove;
	REMOVE4resok *ok = &res->nfs_resop4_u.opremove.REMOVE4res_u.resok4;
	struct mds_unlink_result ur;
	struct mds_ranges freed = { 0 };
	struct mds_inode dir;
	unsigned flags = 0;
	nfsstat4 st;
	int rc;

	st = writable_dir(c, 0, &dir);
	if (st)
		return st;
	st = mds_check_lookup_name(&a->target);
	if (st)
		return st;
	st = sticky_ok(c, &dir, c->txn, &a->target);
	if (st)
		return st;
	st = before_unlink(c, &dir, &a->target, &flags);
	if (st)
		return st;
	rc = mds_ns_unlink(c->txn, dir.fileid, a->target.utf8string_val, a->target.utf8string_len, flags, &freed,
			   &ur);
	if (rc) {
		mds_ranges_free(&freed);
		return mds_errno_to_nfs(rc);
	}
	mds_compound_dirty(c);
	gone(c, ur.fileid, ur.orphaned, ur.destroyed, &freed);
	mds_ranges_free(&freed);
	cinfo(&ok->cinfo, &ur.dir);
	return NFS4_OK;
}

nfsstat4 mds_op_rename(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	RENAME4args *a = &arg->nfs_argop4_u.oprename;
	RENAME4resok *ok = &res->nfs_resop4_u.oprename.RENAME4res_u.resok4;
	struct mds_rename_result rr;
	struct mds_ranges freed = { 0 };
	struct mds_inode sdir, ddir;
	unsigned flags = 0;
	nfsstat4 st;
	int rc;

	st = writable_dir(c, 1, &sdir);
	if (st)
		return st;
	st = writable_dir(c, 0, &ddir);
	if (st)
		return st;
	st = mds_check_name(&a->oldname);
	if (st == NFS4ERR_BADNAME)
		return NFS4ERR_BADNAME;
	if (st)
		return st;
	st = mds_check_name(&a->newname);
	if (st)
		return st;
	st = sticky_ok(c, &sdir, c->txn, &a->oldname);
	if (st)
		return st;
	st = sticky_ok(c, &ddir, c->txn, &a->newname);
	if (st)
		return st;
	{
		uint64_t moved;
		if (mds_ns_lookup(c->txn, sdir.fileid, a->oldname.utf8string_val, a->oldname.utf8string_len, &moved) == 0) {
			struct mds_file *mf = mds_file_find(c->srv, moved);
			if (mf && mds_deleg_break(c, mf, 0) != NFS4_OK)
				return NFS4ERR_DELAY;
		}
	}
	st = before_unlink(c, &ddir, &a->newname, &flags);
	if (st)
		return st;
	rc = mds_ns_rename(c->txn, sdir.fileid, a->oldname.utf8string_val, a->oldname.utf8string_len, ddir.fileid,
			   a->newname.utf8string_val, a->newname.utf8string_len, flags, &freed, &rr);
	if (rc) {
		mds_ranges_free(&freed);
		return mds_errno_to_nfs(rc);
	}
	mds_compound_dirty(c);
	if (rr.replaced)
		gone(c, rr.replaced, rr.replaced_orphaned, rr.replaced_destroyed, &freed);
	mds_ranges_free(&freed);
	cinfo(&ok->source_cinfo, &rr.src_dir);
	cinfo(&ok->target_cinfo, &rr.dst_dir);
	return NFS4_OK;
}

nfsstat4 mds_op_link(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LINK4args *a = &arg->nfs_argop4_u.oplink;
	LINK4resok *ok = &res->nfs_resop4_u.oplink.LINK4res_u.resok4;
	struct mds_change_info ci;
	struct mds_inode src, dir;
	nfsstat4 st;
	int rc;

	st = mds_sfh_inode(c, &src);
	if (st)
		return st;
	st = writable_dir(c, 0, &dir);
	if (st)
		return st;
	if (src.type == MDS_FT_DIR)
		return NFS4ERR_ISDIR;
	st = mds_check_name(&a->newname);
	if (st)
		return st;
	rc = mds_ns_link(c->txn, src.fileid, dir.fileid, a->newname.utf8string_val, a->newname.utf8string_len, &ci);
	if (rc)
		return mds_errno_to_nfs(rc);
	mds_compound_dirty(c);
	cinfo(&ok->cinfo, &ci);
	return NFS4_OK;
}

nfsstat4 mds_op_readlink(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	READLINK4resok *ok = &res->nfs_resop4_u.opreadlink.READLINK4res_u.resok4;
	struct mds_inode ino;
	char *buf;
	size_t len;
	nfsstat4 st;
	int rc;
	(void)arg;

	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	if (ino.type != MDS_FT_LNK)
		return ino.type == MDS_FT_DIR ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	buf = mds_arena_alloc(&c->arena, MDS_SYMLINK_MAX);
	if (!buf)
		return NFS4ERR_RESOURCE;
	rc = mds_symlink_read(c->txn, ino.fileid, buf, MDS_SYMLINK_MAX, &len);
	if (rc)
		return mds_errno_to_nfs(rc);
	ok->link.linktext4_len = (u_int)len;
	ok->link.linktext4_val = buf;
	return NFS4_OK;
}

/* ---- READDIR --------------------------------------------------------------------------------- */

struct rd_ctx {
	struct mds_compound *c;
	const bitmap4 *req;
	int want_rdattr_error;
	size_t dir_bytes;      /* counted against dircount (names and cookies) */
	size_t reply_bytes;    /* counted against maxcount */
	size_t dircount, maxcount;
	entry4 *head, **tail;
	unsigned n;
	int full;              /* stopped for lack of room */
	nfsstat4 err;
};

static int rd_entry(void *arg, const struct mds_dirent *e)
{
	struct rd_ctx *r = arg;
	struct mds_compound *c = r->c;
	entry4 *ent = mds_arena_calloc(&c->arena, 1, sizeof(*ent));
	struct mds_inode ino;
	size_t sz;
	nfsstat4 st;
	int rc;

	if (!ent) {
		r->err = NFS4ERR_RESOURCE;
		return 1;
	}
	ent->cookie = e->cookie;
	ent->name.utf8string_len = (u_int)e->name_len;
	ent->name.utf8string_val = mds_arena_dup(&c->arena, e->name, e->name_len);
	if (!ent->name.utf8string_val) {
		r->err = NFS4ERR_RESOURCE;
		return 1;
	}
	rc = mds_inode_read(c->txn, e->fileid, &ino);
	if (rc) {
		r->err = mds_errno_to_nfs(rc);
		return 1;
	}
	st = mds_attr_encode(c, &ino, r->req, &ent->attrs);
	if (st) {
		r->err = st;
		return 1;
	}
	/* value_follows + cookie + name + attrs */
	sz = 4 + 8 + 4 + ((e->name_len + 3) & ~(size_t)3) + 4 + 4 * ent->attrs.attrmask.bitmap4_len + 4 +
	     ((ent->attrs.attr_vals.attrlist4_len + 3) & ~(size_t)3);
	if (r->reply_bytes + sz > r->maxcount || (r->dircount && r->dir_bytes + 8 + e->name_len > r->dircount)) {
		r->full = 1;
		return 1;
	}
	r->reply_bytes += sz;
	r->dir_bytes += 8 + e->name_len;
	*r->tail = ent;
	r->tail = &ent->nextentry;
	r->n++;
	return 0;
}

nfsstat4 mds_op_readdir(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	READDIR4args *a = &arg->nfs_argop4_u.opreaddir;
	READDIR4resok *ok = &res->nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
	struct rd_ctx r;
	struct mds_inode dir;
	size_t room;
	uint64_t verf_wire;
	nfsstat4 st;
	int rc;

	st = mds_cfh_dir(c, &dir, 0);
	if (st)
		return st;
	st = mds_check_access(c, &dir, MDS_MAY_READ);
	if (st)
		return st;
	if (a->cookie == 1 || a->cookie == 2)
		return NFS4ERR_BAD_COOKIE;
	memcpy(&verf_wire, a->cookieverf, 8);
	if (a->cookie != 0 && verf_wire != 0 && verf_wire != dir.cookieverf)
		return NFS4ERR_NOT_SAME;
	/* Fixed part of the reply: status, verifier, eof and the final "no more entries". */
	if (a->maxcount < 16 + 4 + 4 + 8)
		return NFS4ERR_TOOSMALL;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.req = &a->attr_request;
	r.dircount = a->dircount;
	room = mds_compound_reply_room(c);
	r.maxcount = a->maxcount < room ? a->maxcount : room;
	r.reply_bytes = 8 + 4 + 4; /* verifier, end-of-list marker, eof */
	r.tail = &r.head;
	rc = mds_dir_iter(c->txn, dir.fileid, a->cookie, rd_entry, &r);
	if (rc < 0)
		return rc == -EINVAL ? NFS4ERR_BAD_COOKIE : mds_errno_to_nfs(rc);
	if (r.err)
		return r.err;
	if (r.full && r.n == 0)
		return NFS4ERR_TOOSMALL;
	memcpy(ok->cookieverf, &dir.cookieverf, 8);
	ok->reply.entries = r.head;
	ok->reply.eof = !r.full;
	return NFS4_OK;
}
