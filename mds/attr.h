/* Attributes between the store's inodes and NFSv4's fattr4 (through proto/attr.h): what GETATTR and
 * READDIR return, what SETATTR and create attributes may change and who may change it, and the
 * byte comparison VERIFY/NVERIFY need. Internal header. */
#ifndef MDS_ATTR_H
#define MDS_ATTR_H

#include "mds/server.h"
#include "proto/attr.h"

/* Fill a with ino's values for the attributes in want (others untouched, mask not set). */
nfsstat4 mds_attr_fill(struct mds_compound *c, const struct mds_inode *ino, const struct proto_attrmask *want,
		       struct proto_fattr *a);
/* GETATTR-style: ino's attributes requested by req, encoded into out (freed with the COMPOUND). */
nfsstat4 mds_attr_encode(struct mds_compound *c, const struct mds_inode *ino, const bitmap4 *req, fattr4 *out);

/* Decode attributes a client wants to set: NFS4_OK, NFS4ERR_ATTRNOTSUPP, NFS4ERR_BADXDR, or
 * NFS4ERR_INVAL for a read-only attribute. */
nfsstat4 mds_attr_decode_set(const fattr4 *in, struct proto_fattr *a);

/* Turn decoded attributes into a store setattr for an existing inode (ino) or a new one
 * (ino NULL: creation, the caller becomes the owner), checking the caller's right to set each.
 * set gets the attributes that will be set (for attrsset). NFS4_OK, NFS4ERR_PERM, NFS4ERR_ACCESS,
 * NFS4ERR_BADOWNER, NFS4ERR_INVAL. */
nfsstat4 mds_attr_to_setattr(struct mds_compound *c, const struct proto_fattr *a, const struct mds_inode *ino,
			     struct mds_setattr *sa, struct proto_attrmask *set);

/* bitmap4 from a mask, freed with the COMPOUND (an empty bitmap on failure). */
void mds_attr_bitmap(struct mds_compound *c, const struct proto_attrmask *m, bitmap4 *out);

/* "uid" strings: numbers, or user@domain with a numeric user, "root" and "nobody".
 * Returns 0 or -EINVAL. */
int mds_attr_parse_id(const char *s, uint32_t *id);

#endif
