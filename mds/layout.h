/* pNFS layouts as the rest of the server sees them: start and stop with the server, the layout types
 * offered, and the hooks the namespace, data and state code call at the right moments (truncate,
 * remove, close, client gone, blocks freed) so that blocks a layout may still cover stay parked
 * until every such layout is returned or revoked. The layout operations themselves are in
 * op_layout.c; the state they keep is described in layout_int.h. Internal header. */
#ifndef MDS_LAYOUT_H
#define MDS_LAYOUT_H

#include "mds/server.h"

/* Set up layouts once the pool is open and the store started: SCSI fencing (the MDS's key on
 * every LUN and its reservation), the recall timer, the metrics listener, and the release of
 * blocks parked before a restart when there is no grace period. 0 or -errno with err. */
int mds_lo_start(struct mds_server *srv, char *err, size_t errlen);
/* Stop timers and listeners and free the layout module (state itself goes with the stateids). */
void mds_lo_stop(struct mds_server *srv);
/* Free the INVALID extents (allocated by LAYOUTGET, never committed) that no layout of this run
 * covers: after a restart, once no client can reclaim a layout (no grace, or grace over). The
 * files' sizes stay what was committed. Returns 0 or -errno (logged). */
int mds_lo_drop_stale(struct mds_server *srv);

/* The layout types offered (fs_layout_type, layout_type): block volume, then SCSI (when fencing
 * works); clients choose by their own preference. Returns how many were written to out (<= max). */
unsigned mds_lo_types(const struct mds_server *srv, layouttype4 *out, unsigned max);

/* How blocks mapped at file offsets >= from leave a file (truncate: from is the new size;
 * remove, orphan destroy: 0): 0 to free them now, or MDS_FREE_PENDING while a layout (or a
 * fencing in progress) reaches that part of the file. f may be NULL. */
unsigned mds_lo_free_flags(struct mds_server *srv, struct mds_file *f, uint64_t from);
/* Blocks mapped at offsets >= from left fileid (the ranges as the store reported them); with the
 * same from as mds_lo_free_flags. */
void mds_lo_blocks_freed(struct mds_server *srv, uint64_t fileid, uint64_t from, const struct mds_ranges *freed);
/* A file's size is about to shrink to new_size (SETATTR): recall layouts beyond it. */
void mds_lo_truncate(struct mds_server *srv, struct mds_file *f, uint64_t new_size);
/* An open stateid is going away (CLOSE, or its client's state is released): return-on-close. */
void mds_lo_open_closed(struct mds_server *srv, struct mds_stateid *open);
/* A client's lease expired or it was destroyed: its layouts are revoked (and it is fenced). Called
 * before its stateids are freed. */
void mds_lo_client_gone(struct mds_server *srv, struct mds_client *clp);
/* Recall every layout held, whole (a LUN of the pool went out of service: clients must stop using
 * what they were handed; one that does not answer is revoked, and fenced, as with any recall). */
void mds_lo_recall_all(struct mds_server *srv);
/* The name of a file was removed (REMOVE, RENAME over it); destroyed says the inode is gone. */
void mds_lo_removed(struct mds_server *srv, uint64_t fileid, int destroyed);
/* A layout stateid is being freed (FREE_STATEID of a revoked one, client teardown). */
void mds_lo_stateid_freed(struct mds_server *srv, struct mds_stateid *st);

#endif
