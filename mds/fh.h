/* Filehandles and access checks. A filehandle is version, pool id, fileid, generation and a
 * check value: stable across restarts (the pool id and fileids persist, fileids are never
 * reused), STALE when the pool or file is gone, BADHANDLE when it is not ours. Internal header. */
#ifndef MDS_FH_H
#define MDS_FH_H

#include "mds/server.h"

/* Encode fileid's filehandle into buf (MDS_FH_BYTES). */
void mds_fh_encode(const struct mds_server *srv, uint64_t fileid, unsigned char buf[MDS_FH_BYTES]);
/* Decode a wire filehandle: NFS4_OK with *fileid, NFS4ERR_BADHANDLE (not one of ours),
 * NFS4ERR_STALE (another pool). Does not check that the file exists. */
nfsstat4 mds_fh_decode(const struct mds_server *srv, const void *fh, size_t len, uint64_t *fileid);

/* Set the current filehandle to fileid after checking it exists: NFS4_OK or NFS4ERR_STALE. */
nfsstat4 mds_cfh_set(struct mds_compound *c, uint64_t fileid);
/* The current filehandle's inode: NFS4_OK, NFS4ERR_NOFILEHANDLE, NFS4ERR_STALE,
 * NFS4ERR_SERVERFAULT. */
nfsstat4 mds_cfh_inode(struct mds_compound *c, struct mds_inode *ino);
nfsstat4 mds_sfh_inode(struct mds_compound *c, struct mds_inode *ino);
/* The current filehandle's inode, which must be a directory: as mds_cfh_inode(), then for what is
 * not a directory NFS4ERR_NOTDIR, or NFS4ERR_SYMLINK for a symbolic link when symlink_err (LOOKUP,
 * LOOKUPP and OPEN by name say so, RFC 8881 §18.13.3). */
nfsstat4 mds_cfh_dir(struct mds_compound *c, struct mds_inode *dir, int symlink_err);

/* Permission bits a caller wants. */
#define MDS_MAY_READ 4
#define MDS_MAY_WRITE 2
#define MDS_MAY_EXEC 1
/* Whether cred may do `want` on ino by its mode bits (root may do anything but execute a file
 * with no x bit at all). */
int mds_may(const struct mds_cred *cred, const struct mds_inode *ino, unsigned want);
/* NFS4_OK, NFS4ERR_ACCESS. */
nfsstat4 mds_check_access(const struct mds_compound *c, const struct mds_inode *ino, unsigned want);
/* NFS4ERR_ROFS when the export rule is read-only. */
nfsstat4 mds_check_writable_export(const struct mds_compound *c);

/* A component name as NFSv4 wants it: NFS4ERR_INVAL (empty), NFS4ERR_NAMETOOLONG, NFS4ERR_BADNAME
 * ("." / ".." / a '/' or NUL inside), NFS4ERR_BADCHAR (not UTF-8). */
nfsstat4 mds_check_name(const component4 *name);
/* A name to look up: as mds_check_name(), but "." and "..", which are no entries, are NFS4ERR_NOENT. */
nfsstat4 mds_check_lookup_name(const component4 *name);

#endif
