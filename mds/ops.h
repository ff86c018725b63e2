/* Every operation handler, by family: op_session.c (sessions and clients), op_fh.c (filehandles,
 * lookups, security), op_attr.c (attributes, access), op_dir.c (namespace changes, READDIR),
 * op_open.c (OPEN/CLOSE and stateids), op_lock.c (byte-range locks), op_data.c (READ, WRITE,
 * COMMIT), layout.c (pNFS: issue 6). Each returns the op's status; mds/compound.c dispatches. */
#ifndef MDS_OPS_H
#define MDS_OPS_H

#include "mds/server.h"

/* Every handler has the one signature: the COMPOUND, its argument and its result. */

/* op_session.c */
nfsstat4 mds_op_exchange_id(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_create_session(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_destroy_session(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_sequence(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_bind_conn_to_session(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_backchannel_ctl(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_destroy_clientid(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_reclaim_complete(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* op_fh.c */
nfsstat4 mds_op_putfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_putrootfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_putpubfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_getfh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_savefh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_restorefh(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_lookup(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_lookupp(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_secinfo(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_secinfo_no_name(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* op_attr.c */
nfsstat4 mds_op_getattr(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_setattr(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_verify(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_nverify(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_access(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* op_dir.c */
nfsstat4 mds_op_create(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_remove(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_rename(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_link(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_readdir(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_readlink(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* op_open.c */
nfsstat4 mds_op_open(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_open_downgrade(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_close(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_delegreturn(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_delegpurge(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_want_delegation(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_test_stateid(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_free_stateid(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* op_lock.c */
nfsstat4 mds_op_lock(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_lockt(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_locku(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* op_data.c */
nfsstat4 mds_op_read(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_write(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_commit(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* layout.c */
nfsstat4 mds_op_layoutget(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_layoutcommit(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_layoutreturn(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_getdeviceinfo(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
nfsstat4 mds_op_getdevicelist(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);
/* compound.c: operations NFSv4.1 forbids or we do not offer */
nfsstat4 mds_op_notsupp(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);

#endif
