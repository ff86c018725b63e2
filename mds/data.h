/* MDS-path file data (READ, WRITE, and SETATTR of the size): bytes on the pool volume at extents
 * from the store's allocator, moved by blkmap's engine from inside the server's loop. Each call
 * continues asynchronously (returns MDS_ASYNC) and resumes the COMPOUND when done. Internal. */
#ifndef MDS_DATA_H
#define MDS_DATA_H

#include "mds/server.h"

/* READ count bytes at offset of the current file into ok (data, eof). */
nfsstat4 mds_data_read(struct mds_compound *c, uint64_t fileid, uint64_t offset, uint32_t count, READ4resok *ok);
/* WRITE the bytes at offset; ok gets count, committed, writeverf. */
nfsstat4 mds_data_write(struct mds_compound *c, uint64_t fileid, uint64_t offset, const void *data, uint32_t len,
			stable_how4 stable, WRITE4resok *ok);
/* COMMIT: flush the LUNs MDS-path writes left data in the caches of since the last flush; ok gets the
 * write verifier (a new one when a LUN logged in again since those writes: they may be lost). */
nfsstat4 mds_data_commit(struct mds_compound *c, uint64_t fileid, COMMIT4resok *ok);
/* SETATTR with a size (and whatever else sa carries): zero the block holding the new end of file
 * past it when the file shrinks into an allocated block, then change the inode. */
nfsstat4 mds_data_setattr_size(struct mds_compound *c, const struct mds_inode *ino, const struct mds_setattr *sa);
/* Whether an MDS-path WRITE of the file is between allocating its blocks and marking them written:
 * then [*a, *b) (block-aligned) are its, INVALID meanwhile, and not to be dropped with a layout. */
int mds_data_writing(const struct mds_file *f, uint64_t *a, uint64_t *b);

#endif
