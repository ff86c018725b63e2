/* Delegations: read and write delegations handed out at OPEN when no other client's open or
 * delegation conflicts, recalled over the backchannel (CB_RECALL) when one does, and revoked when
 * the holder does not return them in time. Internal header. */
#ifndef MDS_DELEG_H
#define MDS_DELEG_H

#include "mds/server.h"

/* Another client wants the file with `access` (OPEN4_SHARE_ACCESS_*; 0 for a REMOVE/RENAME/SETATTR
 * that changes it): recall every conflicting delegation not held by clp. Returns NFS4_OK when
 * none is left, NFS4ERR_DELAY while recalls are outstanding. */
nfsstat4 mds_deleg_break(struct mds_compound *c, struct mds_file *f, uint32_t access);

/* What OPEN answers about delegations: grant one if the client wants it and nothing conflicts,
 * otherwise say why not. open is the OPEN's stateid. */
void mds_deleg_offer(struct mds_compound *c, struct mds_file *f, struct mds_stateid *open, uint32_t want,
		     uint32_t access, int reclaim, open_delegation4 *out);

/* A delegation the client holds on the file (for CLAIM_DELEGATE_CUR checks), or NULL. */
struct mds_stateid *mds_deleg_find(struct mds_file *f, struct mds_client *clp);

#endif
