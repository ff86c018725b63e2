/* Attribute values for the NFSv4 side. Owners travel as numeric strings ("1000"): the server has
 * no identity mapping, and numeric ids are what AUTH_SYS clients send (Linux clients accept them
 * with nfs4_disable_idmapping, its default for AUTH_SYS). */
#include "mds/attr.h"

#include "mds/compound.h"
#include "mds/fh.h"
#include "mds/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nfstime4 to_nfstime(struct mds_time t)
{
	nfstime4 n = { t.sec, t.nsec };
	return n;
}

static nfs_ftype4 to_ftype(enum mds_ftype t)
{
	return (nfs_ftype4)t; /* the store uses nfs_ftype4's numbers */
}

int mds_attr_parse_id(const char *s, uint32_t *id)
{
	char buf[PROTO_ATTR_OWNER_MAX + 1], *at, *end;
	unsigned long v;

	snprintf(buf, sizeof(buf), "%s", s);
	at = strchr(buf, '@');
	if (at)
		*at = 0;
	if (!strcmp(buf, "root")) {
		*id = 0;
		return 0;
	}
	if (!strcmp(buf, "nobody")) {
		*id = MDS_NOBODY_ID;
		return 0;
	}
	if (!buf[0] || buf[0] == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

static void want_stats(const struct proto_attrmask *w, int *yes)
{
	static const unsigned bits[] = { FATTR4_FILES_AVAIL, FATTR4_FILES_FREE, FATTR4_FILES_TOTAL,
					 FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE, FATTR4_SPACE_TOTAL };
	*yes = 0;
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (proto_attrmask_isset(w, bits[i]))
			*yes = 1;
}

/* ---- GETATTR values: one filler per attribute number (as nfsd's fattr4 encoders) ---------------- */

struct attr_src {
	struct mds_server *srv;
	const struct mds_inode *ino;
	const struct mds_store_format *fmt;
};

/* Each fills its attribute into a and returns 1, or 0 when the object has no such value. */
typedef int attr_fill_fn(const struct attr_src *s, struct proto_fattr *a);

#define FILL(name) static int fill_##name(const struct attr_src *s, struct proto_fattr *a)
#define CONST_FILL(name, field, value)          \
	FILL(name)                              \
	{                                       \
		(void)s;                        \
		a->field = (value);             \
		return 1;                       \
	}
#define INODE_FILL(name, field, expr) \
	FILL(name)                    \
	{                             \
		a->field = (expr);    \
		return 1;             \
	}

CONST_FILL(supported_attrs, supported_attrs, proto_attr_supported)
CONST_FILL(fh_expire_type, fh_expire_type, FH4_PERSISTENT)
CONST_FILL(link_support, link_support, true)
CONST_FILL(symlink_support, symlink_support, true)
CONST_FILL(named_attr, named_attr, false)
CONST_FILL(unique_handles, unique_handles, true)
CONST_FILL(rdattr_error, rdattr_error, NFS4_OK)
CONST_FILL(aclsupport, aclsupport, 0)
CONST_FILL(cansettime, cansettime, true)
CONST_FILL(case_insensitive, case_insensitive, false)
CONST_FILL(case_preserving, case_preserving, true)
CONST_FILL(chown_restricted, chown_restricted, true)
CONST_FILL(homogeneous, homogeneous, true)
CONST_FILL(maxfilesize, maxfilesize, NFS4_INT64_MAX)
CONST_FILL(maxlink, maxlink, MDS_LINK_MAX)
CONST_FILL(maxname, maxname, MDS_NAME_MAX)
CONST_FILL(maxread, maxread, MDS_MAX_IO_BYTES)
CONST_FILL(maxwrite, maxwrite, MDS_MAX_IO_BYTES)
CONST_FILL(no_trunc, no_trunc, true)
INODE_FILL(type, type, to_ftype(s->ino->type))
INODE_FILL(change, change, s->ino->change)
INODE_FILL(size, size, s->ino->size)
INODE_FILL(fileid, fileid, s->ino->fileid)
INODE_FILL(mode, mode, s->ino->mode & 07777)
INODE_FILL(numlinks, numlinks, s->ino->nlink)
INODE_FILL(space_used, space_used, s->ino->space_used)
INODE_FILL(time_access, time_access, to_nfstime(s->ino->atime))
INODE_FILL(time_create, time_create, to_nfstime(s->ino->crtime))
INODE_FILL(time_metadata, time_metadata, to_nfstime(s->ino->ctime))
INODE_FILL(time_modify, time_modify, to_nfstime(s->ino->mtime))
INODE_FILL(mounted_on_fileid, mounted_on_fileid, s->ino->fileid)
INODE_FILL(lease_time, lease_time, mds_lease_s(s->srv))
INODE_FILL(layout_blksize, layout_blksize, s->srv->block_bytes)

FILL(fsid)
{
	uint64_t major = 0;
	for (int i = 0; i < 8; i++)
		major = major << 8 | s->srv->pool_id[i];
	a->fsid.major = major;
	a->fsid.minor = 0;
	return 1;
}

FILL(filehandle)
{
	a->filehandle.len = MDS_FH_BYTES;
	mds_fh_encode(s->srv, s->ino->fileid, a->filehandle.val);
	return 1;
}

FILL(owner)
{
	snprintf(a->owner, sizeof(a->owner), "%u", s->ino->uid);
	return 1;
}

FILL(owner_group)
{
	snprintf(a->owner_group, sizeof(a->owner_group), "%u", s->ino->gid);
	return 1;
}

FILL(rawdev)
{
	a->rawdev.specdata1 = s->ino->rdev_major;
	a->rawdev.specdata2 = s->ino->rdev_minor;
	return 1;
}

FILL(time_delta)
{
	(void)s;
	a->time_delta.seconds = 0;
	a->time_delta.nseconds = 1;
	return 1;
}

/* What the pool can offer: SCSI (RFC 8154, when fencing works) and block volumes. */
FILL(fs_layout_types)
{
	a->fs_layout_types_len = mds_lo_types(s->srv, a->fs_layout_types, PROTO_LAYOUT_TYPES_MAX);
	return 1;
}

FILL(layout_types)
{
	if (s->ino->type != MDS_FT_REG)
		return 0;
	a->layout_types_len = mds_lo_types(s->srv, a->layout_types, PROTO_LAYOUT_TYPES_MAX);
	return 1;
}

FILL(layout_alignment)
{
	uint64_t su = s->fmt ? s->fmt->stripe_unit_bytes : 0;
	a->layout_alignment = su && su <= UINT32_MAX ? (uint32_t)su : s->srv->block_bytes;
	return 1;
}

FILL(suppattr_exclcreat)
{
	struct proto_attrmask m = { { 0 } };
	(void)s;
	proto_attrmask_set(&m, FATTR4_MODE);
	proto_attrmask_set(&m, FATTR4_OWNER);
	proto_attrmask_set(&m, FATTR4_OWNER_GROUP);
	proto_attrmask_set(&m, FATTR4_SIZE);
	proto_attrmask_set(&m, FATTR4_TIME_ACCESS_SET);
	proto_attrmask_set(&m, FATTR4_TIME_MODIFY_SET);
	a->suppattr_exclcreat = m;
	return 1;
}

#undef FILL
#undef CONST_FILL
#undef INODE_FILL

/* Indexed by attribute number. The file-system counts (files_*, space_*) come from one store
 * query, filled together below. */
static attr_fill_fn *const attr_fillers[] = {
	[FATTR4_SUPPORTED_ATTRS] = fill_supported_attrs,
	[FATTR4_TYPE] = fill_type,
	[FATTR4_FH_EXPIRE_TYPE] = fill_fh_expire_type,
	[FATTR4_CHANGE] = fill_change,
	[FATTR4_SIZE] = fill_size,
	[FATTR4_LINK_SUPPORT] = fill_link_support,
	[FATTR4_SYMLINK_SUPPORT] = fill_symlink_support,
	[FATTR4_NAMED_ATTR] = fill_named_attr,
	[FATTR4_FSID] = fill_fsid,
	[FATTR4_UNIQUE_HANDLES] = fill_unique_handles,
	[FATTR4_LEASE_TIME] = fill_lease_time,
	[FATTR4_RDATTR_ERROR] = fill_rdattr_error,
	[FATTR4_ACLSUPPORT] = fill_aclsupport,
	[FATTR4_CANSETTIME] = fill_cansettime,
	[FATTR4_CASE_INSENSITIVE] = fill_case_insensitive,
	[FATTR4_CASE_PRESERVING] = fill_case_preserving,
	[FATTR4_CHOWN_RESTRICTED] = fill_chown_restricted,
	[FATTR4_FILEHANDLE] = fill_filehandle,
	[FATTR4_FILEID] = fill_fileid,
	[FATTR4_HOMOGENEOUS] = fill_homogeneous,
	[FATTR4_MAXFILESIZE] = fill_maxfilesize,
	[FATTR4_MAXLINK] = fill_maxlink,
	[FATTR4_MAXNAME] = fill_maxname,
	[FATTR4_MAXREAD] = fill_maxread,
	[FATTR4_MAXWRITE] = fill_maxwrite,
	[FATTR4_MODE] = fill_mode,
	[FATTR4_NO_TRUNC] = fill_no_trunc,
	[FATTR4_NUMLINKS] = fill_numlinks,
	[FATTR4_OWNER] = fill_owner,
	[FATTR4_OWNER_GROUP] = fill_owner_group,
	[FATTR4_RAWDEV] = fill_rawdev,
	[FATTR4_SPACE_USED] = fill_space_used,
	[FATTR4_TIME_ACCESS] = fill_time_access,
	[FATTR4_TIME_CREATE] = fill_time_create,
	[FATTR4_TIME_DELTA] = fill_time_delta,
	[FATTR4_TIME_METADATA] = fill_time_metadata,
	[FATTR4_TIME_MODIFY] = fill_time_modify,
	[FATTR4_MOUNTED_ON_FILEID] = fill_mounted_on_fileid,
	[FATTR4_FS_LAYOUT_TYPES] = fill_fs_layout_types,
	[FATTR4_LAYOUT_TYPES] = fill_layout_types,
	[FATTR4_LAYOUT_BLKSIZE] = fill_layout_blksize,
	[FATTR4_LAYOUT_ALIGNMENT] = fill_layout_alignment,
	[FATTR4_SUPPATTR_EXCLCREAT] = fill_suppattr_exclcreat,
};

nfsstat4 mds_attr_fill(struct mds_compound *c, const struct mds_inode *ino, const struct proto_attrmask *want,
		       struct proto_fattr *a)
{
	struct mds_server *srv = c->srv;
	const struct attr_src src = { srv, ino, mds_store_format(srv->store) };
	int need_stats;

	want_stats(want, &need_stats);
	if (need_stats) {
		struct mds_txn *t = mds_compound_txn(c);
		struct mds_store_stats st;
		/* Inodes are not a limited resource in LMDB: report what the map could still hold
		 * at about 256 bytes per file. */
		uint64_t files_total;

		if (!t || mds_store_stats(t, &st) != 0)
			return NFS4ERR_SERVERFAULT;
		files_total = st.files + (st.free_bytes >> 12) + 1000000;
		a->files_total = files_total;
		a->files_free = files_total - st.files;
		a->files_avail = a->files_free;
		a->space_total = st.volume_bytes;
		a->space_free = st.free_bytes;
		a->space_avail = st.free_bytes;
		proto_fattr_set(a, FATTR4_FILES_AVAIL);
		proto_fattr_set(a, FATTR4_FILES_FREE);
		proto_fattr_set(a, FATTR4_FILES_TOTAL);
		proto_fattr_set(a, FATTR4_SPACE_AVAIL);
		proto_fattr_set(a, FATTR4_SPACE_FREE);
		proto_fattr_set(a, FATTR4_SPACE_TOTAL);
	}
	for (unsigned bit = 0; bit < sizeof(attr_fillers) / sizeof(attr_fillers[0]); bit++)
		if (attr_fillers[bit] && proto_attrmask_isset(want, bit) && attr_fillers[bit](&src, a))
			proto_fattr_set(a, bit);
	return NFS4_OK;
}

nfsstat4 mds_attr_encode(struct mds_compound *c, const struct mds_inode *ino, const bitmap4 *req, fattr4 *out)
{
	struct proto_attrmask want;
	struct proto_fattr *a = mds_arena_calloc(&c->arena, 1, sizeof(*a));
	nfsstat4 st;
	int rc;

	if (!a)
		return NFS4ERR_RESOURCE;
	proto_attrmask_from_bitmap4(&want, req);
	proto_attrmask_and(&want, &want, &proto_attr_supported);
	proto_attrmask_andnot(&want, &want, &proto_attr_writeonly);
	st = mds_attr_fill(c, ino, &want, a);
	if (st != NFS4_OK)
		return st;
	memset(out, 0, sizeof(*out));
	rc = proto_fattr_encode(a, &want, out);
	if (rc)
		return rc == -ENOMEM ? NFS4ERR_RESOURCE : NFS4ERR_SERVERFAULT;
	mds_compound_defer_free(c, (xdrproc_t)xdr_fattr4, out);
	return NFS4_OK;
}

nfsstat4 mds_attr_decode_set(const fattr4 *in, struct proto_fattr *a)
{
	struct proto_attrmask extra;
	int rc;

	memset(a, 0, sizeof(*a));
	rc = proto_fattr_decode(in, a, NULL);
	if (rc == -ENOTSUP)
		return NFS4ERR_ATTRNOTSUPP;
	if (rc)
		return NFS4ERR_BADXDR;
	proto_attrmask_andnot(&extra, &a->mask, &proto_attr_writable);
	if (!proto_attrmask_empty(&extra))
		return NFS4ERR_INVAL;
	return NFS4_OK;
}

static int in_groups(const struct mds_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return 1;
	for (unsigned i = 0; i < cr->ngids; i++)
		if (cr->gids[i] == gid)
			return 1;
	return 0;
}

nfsstat4 mds_attr_to_setattr(struct mds_compound *c, const struct proto_fattr *a, const struct mds_inode *ino,
			     struct mds_setattr *sa, struct proto_attrmask *set)
{
	const struct mds_cred *cr = &c->cred;
	int owner = !ino || cr->uid == 0 || cr->uid == ino->uid;

	memset(sa, 0, sizeof(*sa));
	memset(set, 0, sizeof(*set));
	if (proto_attrmask_isset(&a->mask, FATTR4_MODE)) {
		if (!owner)
			return NFS4ERR_PERM;
		sa->mask |= MDS_SA_MODE;
		sa->mode = a->mode & 07777;
		proto_attrmask_set(set, FATTR4_MODE);
	}
	if (proto_attrmask_isset(&a->mask, FATTR4_OWNER)) {
		uint32_t uid;
		if (mds_attr_parse_id(a->owner, &uid) != 0)
			return NFS4ERR_BADOWNER;
		/* chown_restricted: only root gives a file away. */
		if (ino ? (uid != ino->uid && cr->uid != 0) : (uid != cr->uid && cr->uid != 0))
			return NFS4ERR_PERM;
		sa->mask |= MDS_SA_UID;
		sa->uid = uid;
		proto_attrmask_set(set, FATTR4_OWNER);
	}
	if (proto_attrmask_isset(&a->mask, FATTR4_OWNER_GROUP)) {
		uint32_t gid;
		if (mds_attr_parse_id(a->owner_group, &gid) != 0)
			return NFS4ERR_BADOWNER;
		if (cr->uid != 0 && (ino ? gid != ino->gid : 1) && !(owner && in_groups(cr, gid)))
			return NFS4ERR_PERM;
		sa->mask |= MDS_SA_GID;
		sa->gid = gid;
		proto_attrmask_set(set, FATTR4_OWNER_GROUP);
	}
	if (proto_attrmask_isset(&a->mask, FATTR4_SIZE)) {
		if (ino && ino->type == MDS_FT_DIR)
			return NFS4ERR_ISDIR;
		if (ino && ino->type != MDS_FT_REG)
			return NFS4ERR_INVAL;
		sa->mask |= MDS_SA_SIZE;
		sa->size = a->size;
		proto_attrmask_set(set, FATTR4_SIZE);
	}
	for (int which = 0; which < 2; which++) {
		unsigned bit = which ? FATTR4_TIME_MODIFY_SET : FATTR4_TIME_ACCESS_SET;
		const settime4 *st = which ? &a->time_modify_set : &a->time_access_set;
		if (!proto_attrmask_isset(&a->mask, bit))
			continue;
		if (st->set_it == SET_TO_CLIENT_TIME4) {
			struct mds_time t = { st->settime4_u.time.seconds, st->settime4_u.time.nseconds };
			if (!owner)
				return NFS4ERR_PERM;
			if (t.nsec >= 1000000000u)
				return NFS4ERR_INVAL;
			if (which) {
				sa->mask |= MDS_SA_MTIME;
				sa->mtime = t;
			} else {
				sa->mask |= MDS_SA_ATIME;
				sa->atime = t;
			}
		} else {
			/* "now" is allowed to anyone who may write the file (utimes(NULL) rule). */
			if (!owner && ino && !mds_may(cr, ino, MDS_MAY_WRITE))
				return NFS4ERR_ACCESS;
			sa->mask |= which ? MDS_SA_MTIME_NOW : MDS_SA_ATIME_NOW;
		}
		proto_attrmask_set(set, bit);
	}
	if (proto_attrmask_isset(&a->mask, FATTR4_TIME_CREATE))
		return NFS4ERR_INVAL; /* the store keeps the birth time it saw */
	if (proto_attrmask_isset(&a->mask, FATTR4_LAYOUT_HINT))
		proto_attrmask_set(set, FATTR4_LAYOUT_HINT); /* a hint: noted, nothing to keep */
	return NFS4_OK;
}

void mds_attr_bitmap(struct mds_compound *c, const struct proto_attrmask *m, bitmap4 *out)
{
	memset(out, 0, sizeof(*out));
	if (proto_attrmask_to_bitmap4(m, out) == 0)
		mds_compound_defer_free(c, (xdrproc_t)xdr_bitmap4, out);
	else
		memset(out, 0, sizeof(*out));
}
