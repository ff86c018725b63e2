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

nfsstat4 mds_attr_fill(struct mds_compound *c, const struct mds_inode *ino, const struct proto_attrmask *want,
		       struct proto_fattr *a)
{
	struct mds_server *srv = c->srv;
	struct mds_store_stats st;
	int need_stats;
	const struct mds_store_format *fmt = mds_store_format(srv->store);

	want_stats(want, &need_stats);
	if (need_stats) {
		struct mds_txn *t = mds_compound_txn(c);
		if (!t || mds_store_stats(t, &st) != 0)
			return NFS4ERR_SERVERFAULT;
	}
#define WANT(bit) proto_attrmask_isset(want, bit)
#define SET(bit) proto_fattr_set(a, bit)
	if (WANT(FATTR4_SUPPORTED_ATTRS)) {
		a->supported_attrs = proto_attr_supported;
		SET(FATTR4_SUPPORTED_ATTRS);
	}
	if (WANT(FATTR4_TYPE)) {
		a->type = to_ftype(ino->type);
		SET(FATTR4_TYPE);
	}
	if (WANT(FATTR4_FH_EXPIRE_TYPE)) {
		a->fh_expire_type = FH4_PERSISTENT;
		SET(FATTR4_FH_EXPIRE_TYPE);
	}
	if (WANT(FATTR4_CHANGE)) {
		a->change = ino->change;
		SET(FATTR4_CHANGE);
	}
	if (WANT(FATTR4_SIZE)) {
		a->size = ino->size;
		SET(FATTR4_SIZE);
	}
	if (WANT(FATTR4_LINK_SUPPORT)) {
		a->link_support = true;
		SET(FATTR4_LINK_SUPPORT);
	}
	if (WANT(FATTR4_SYMLINK_SUPPORT)) {
		a->symlink_support = true;
		SET(FATTR4_SYMLINK_SUPPORT);
	}
	if (WANT(FATTR4_NAMED_ATTR)) {
		a->named_attr = false;
		SET(FATTR4_NAMED_ATTR);
	}
	if (WANT(FATTR4_FSID)) {
		uint64_t major = 0;
		for (int i = 0; i < 8; i++)
			major = major << 8 | srv->pool_id[i];
		a->fsid.major = major;
		a->fsid.minor = 0;
		SET(FATTR4_FSID);
	}
	if (WANT(FATTR4_UNIQUE_HANDLES)) {
		a->unique_handles = true;
		SET(FATTR4_UNIQUE_HANDLES);
	}
	if (WANT(FATTR4_LEASE_TIME)) {
		a->lease_time = mds_lease_s(srv);
		SET(FATTR4_LEASE_TIME);
	}
	if (WANT(FATTR4_RDATTR_ERROR)) {
		a->rdattr_error = NFS4_OK;
		SET(FATTR4_RDATTR_ERROR);
	}
	if (WANT(FATTR4_ACLSUPPORT)) {
		a->aclsupport = 0;
		SET(FATTR4_ACLSUPPORT);
	}
	if (WANT(FATTR4_CANSETTIME)) {
		a->cansettime = true;
		SET(FATTR4_CANSETTIME);
	}
	if (WANT(FATTR4_CASE_INSENSITIVE)) {
		a->case_insensitive = false;
		SET(FATTR4_CASE_INSENSITIVE);
	}
	if (WANT(FATTR4_CASE_PRESERVING)) {
		a->case_preserving = true;
		SET(FATTR4_CASE_PRESERVING);
	}
	if (WANT(FATTR4_CHOWN_RESTRICTED)) {
		a->chown_restricted = true;
		SET(FATTR4_CHOWN_RESTRICTED);
	}
	if (WANT(FATTR4_FILEHANDLE)) {
		a->filehandle.len = MDS_FH_BYTES;
		mds_fh_encode(srv, ino->fileid, a->filehandle.val);
		SET(FATTR4_FILEHANDLE);
	}
	if (WANT(FATTR4_FILEID)) {
		a->fileid = ino->fileid;
		SET(FATTR4_FILEID);
	}
	if (need_stats) {
		/* Inodes are not a limited resource in LMDB: report what the map could still hold
		 * at about 256 bytes per file. */
		uint64_t files_total = st.files + (st.free_bytes >> 12) + 1000000;
		a->files_total = files_total;
		a->files_free = files_total - st.files;
		a->files_avail = a->files_free;
		a->space_total = st.volume_bytes;
		a->space_free = st.free_bytes;
		a->space_avail = st.free_bytes;
		SET(FATTR4_FILES_AVAIL);
		SET(FATTR4_FILES_FREE);
		SET(FATTR4_FILES_TOTAL);
		SET(FATTR4_SPACE_AVAIL);
		SET(FATTR4_SPACE_FREE);
		SET(FATTR4_SPACE_TOTAL);
	}
	if (WANT(FATTR4_HOMOGENEOUS)) {
		a->homogeneous = true;
		SET(FATTR4_HOMOGENEOUS);
	}
	if (WANT(FATTR4_MAXFILESIZE)) {
		a->maxfilesize = NFS4_INT64_MAX;
		SET(FATTR4_MAXFILESIZE);
	}
	if (WANT(FATTR4_MAXLINK)) {
		a->maxlink = MDS_LINK_MAX;
		SET(FATTR4_MAXLINK);
	}
	if (WANT(FATTR4_MAXNAME)) {
		a->maxname = MDS_NAME_MAX;
		SET(FATTR4_MAXNAME);
	}
	if (WANT(FATTR4_MAXREAD)) {
		a->maxread = MDS_MAX_IO_BYTES;
		SET(FATTR4_MAXREAD);
	}
	if (WANT(FATTR4_MAXWRITE)) {
		a->maxwrite = MDS_MAX_IO_BYTES;
		SET(FATTR4_MAXWRITE);
	}
	if (WANT(FATTR4_MODE)) {
		a->mode = ino->mode & 07777;
		SET(FATTR4_MODE);
	}
	if (WANT(FATTR4_NO_TRUNC)) {
		a->no_trunc = true;
		SET(FATTR4_NO_TRUNC);
	}
	if (WANT(FATTR4_NUMLINKS)) {
		a->numlinks = ino->nlink;
		SET(FATTR4_NUMLINKS);
	}
	if (WANT(FATTR4_OWNER)) {
		snprintf(a->owner, sizeof(a->owner), "%u", ino->uid);
		SET(FATTR4_OWNER);
	}
	if (WANT(FATTR4_OWNER_GROUP)) {
		snprintf(a->owner_group, sizeof(a->owner_group), "%u", ino->gid);
		SET(FATTR4_OWNER_GROUP);
	}
	if (WANT(FATTR4_RAWDEV)) {
		a->rawdev.specdata1 = ino->rdev_major;
		a->rawdev.specdata2 = ino->rdev_minor;
		SET(FATTR4_RAWDEV);
	}
	if (WANT(FATTR4_SPACE_USED)) {
		a->space_used = ino->space_used;
		SET(FATTR4_SPACE_USED);
	}
	if (WANT(FATTR4_TIME_ACCESS)) {
		a->time_access = to_nfstime(ino->atime);
		SET(FATTR4_TIME_ACCESS);
	}
	if (WANT(FATTR4_TIME_CREATE)) {
		a->time_create = to_nfstime(ino->crtime);
		SET(FATTR4_TIME_CREATE);
	}
	if (WANT(FATTR4_TIME_DELTA)) {
		a->time_delta.seconds = 0;
		a->time_delta.nseconds = 1;
		SET(FATTR4_TIME_DELTA);
	}
	if (WANT(FATTR4_TIME_METADATA)) {
		a->time_metadata = to_nfstime(ino->ctime);
		SET(FATTR4_TIME_METADATA);
	}
	if (WANT(FATTR4_TIME_MODIFY)) {
		a->time_modify = to_nfstime(ino->mtime);
		SET(FATTR4_TIME_MODIFY);
	}
	if (WANT(FATTR4_MOUNTED_ON_FILEID)) {
		a->mounted_on_fileid = ino->fileid;
		SET(FATTR4_MOUNTED_ON_FILEID);
	}
	if (WANT(FATTR4_FS_LAYOUT_TYPES)) {
		/* What the pool can offer: SCSI (RFC 8154, when fencing works) and block volumes. */
		a->fs_layout_types_len = mds_layout_types(srv, a->fs_layout_types, PROTO_LAYOUT_TYPES_MAX);
		SET(FATTR4_FS_LAYOUT_TYPES);
	}
	if (WANT(FATTR4_LAYOUT_TYPES) && ino->type == MDS_FT_REG) {
		a->layout_types_len = mds_layout_types(srv, a->layout_types, PROTO_LAYOUT_TYPES_MAX);
		SET(FATTR4_LAYOUT_TYPES);
	}
	if (WANT(FATTR4_LAYOUT_BLKSIZE)) {
		a->layout_blksize = srv->block_bytes;
		SET(FATTR4_LAYOUT_BLKSIZE);
	}
	if (WANT(FATTR4_LAYOUT_ALIGNMENT)) {
		uint64_t su = fmt ? fmt->stripe_unit_bytes : 0;
		a->layout_alignment = su && su <= UINT32_MAX ? (uint32_t)su : srv->block_bytes;
		SET(FATTR4_LAYOUT_ALIGNMENT);
	}
	if (WANT(FATTR4_SUPPATTR_EXCLCREAT)) {
		struct proto_attrmask m = { { 0 } };
		proto_attrmask_set(&m, FATTR4_MODE);
		proto_attrmask_set(&m, FATTR4_OWNER);
		proto_attrmask_set(&m, FATTR4_OWNER_GROUP);
		proto_attrmask_set(&m, FATTR4_SIZE);
		proto_attrmask_set(&m, FATTR4_TIME_ACCESS_SET);
		proto_attrmask_set(&m, FATTR4_TIME_MODIFY_SET);
		a->suppattr_exclcreat = m;
		SET(FATTR4_SUPPATTR_EXCLCREAT);
	}
#undef WANT
#undef SET
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
