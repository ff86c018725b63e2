/* The COMPOUND engine: runs the operations of one request in order against the per-op handlers
 * (a dispatch table; each op family has its own file), keeps the current and saved filehandles
 * and stateids, the session and slot, one store transaction, and the reply size under the
 * session's limits, then encodes the reply, caches it in the slot and sends it. Internal. */
#ifndef MDS_COMPOUND_H
#define MDS_COMPOUND_H

#include "mds/server.h"

/* Op flags in the dispatch table. */
#define MDS_OPF_FH        0x01  /* needs a current filehandle (else NFS4ERR_NOFILEHANDLE) */
#define MDS_OPF_MODIFY    0x02  /* may change the store: the COMPOUND commits */
#define MDS_OPF_NOSESSION 0x04  /* may be a COMPOUND's only op without SEQUENCE */
#define MDS_OPF_SAVEDFH   0x08  /* needs a saved filehandle too (RENAME, LINK) */

struct mds_op_desc {
	mds_op_fn *fn;
	unsigned flags;
};

/* A COMPOUND for a call on conn (references it). NULL on allocation failure. */
struct mds_compound *mds_compound_new(struct mds_conn *conn, uint32_t xid);
void mds_compound_free(struct mds_compound *c);
void mds_compound_set_args_hash(struct mds_compound *c, const void *args, size_t len);

/* Run the decoded COMPOUND to its reply; c is freed when done (maybe later: asynchronous ops). */
void mds_compound_run(struct mds_compound *c);
/* An asynchronous operation finished with status: record it and go on with the COMPOUND. */
void mds_compound_resume(struct mds_compound *c, nfsstat4 status);

/* The store transaction of this COMPOUND, begun on first use; NULL on failure (then answer
 * NFS4ERR_SERVERFAULT). */
struct mds_txn *mds_compound_txn(struct mds_compound *c);
/* End the transaction now, before going asynchronous: when it changed anything, commit it durably
 * (with the rest of the turn's batch, whose held replies go out). 0 or -errno. */
int mds_compound_txn_end(struct mds_compound *c);
/* Mark that this COMPOUND changed the store (its reply waits for the commit of the batch). */
static inline void mds_compound_dirty(struct mds_compound *c)
{
	c->dirty = 1;
}

/* Keep obj (decoded/encoded with proc) until the reply is encoded, then xdr_free it. */
int mds_compound_defer_free(struct mds_compound *c, xdrproc_t proc, void *obj);

/* Bytes the next result may still take in the reply (READ and READDIR shrink to it). */
size_t mds_compound_reply_room(const struct mds_compound *c);

/* Map an -errno from the store, pool or engine to an NFSv4 status. */
nfsstat4 mds_errno_to_nfs(int err);

/* Set the status of any result (every result type starts with its nfsstat4). */
void mds_res_set_status(nfs_resop4 *res, nfsstat4 status);

/* The op handlers, by family (op_*.c). */
extern const struct mds_op_desc mds_op_table[];
#define MDS_OP_TABLE_SIZE (OP_RECLAIM_COMPLETE + 1)

#endif
