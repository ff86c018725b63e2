/* pNFS layouts (issue 6) plug in here. Until they exist, LAYOUTGET, LAYOUTCOMMIT, LAYOUTRETURN,
 * GETDEVICEINFO and GETDEVICELIST answer NFS4ERR_NOTSUPP, and the hooks below, which the rest of
 * the server already calls at the right moments, do nothing. A layout implementation replaces
 * layout.c: grant/commit/return in the handlers, recalls through mds/backchannel.h, and these
 * hooks to keep freed blocks parked while layouts may still cover them. Internal header. */
#ifndef MDS_LAYOUT_H
#define MDS_LAYOUT_H

#include "mds/server.h"

/* How blocks of fileid leave it (truncate, remove, orphan destroy): 0 to free them now, or
 * MDS_FREE_PENDING while layouts may cover them (the layout code releases them later with
 * mds_pending_release*). */
unsigned mds_layout_free_flags(struct mds_server *srv, struct mds_file *f);
/* Blocks left fileid (truncate, remove; the ranges as the store reported them). */
void mds_layout_blocks_freed(struct mds_server *srv, uint64_t fileid, const struct mds_ranges *freed);
/* A file's size is about to shrink to new_size (SETATTR): recall layouts beyond it. */
void mds_layout_truncate(struct mds_server *srv, struct mds_file *f, uint64_t new_size);
/* An open stateid is going away (CLOSE, or its client's state is released): return-on-close. */
void mds_layout_open_closed(struct mds_server *srv, struct mds_stateid *open);
/* A client's lease expired or it was destroyed: its layouts are revoked (and it is fenced). */
void mds_layout_client_gone(struct mds_server *srv, struct mds_client *clp);
/* The name of a file was removed (REMOVE, RENAME over it); destroyed says the inode is gone. */
void mds_layout_removed(struct mds_server *srv, uint64_t fileid, int destroyed);

#endif
