/* Every operation handler, by family: op_session.c (sessions and clients), op_fh.c (filehandles,
 * lookups, security), op_attr.c (attributes, access), op_dir.c (namespace changes, READDIR),
 * op_open.c (OPEN/CLOSE and stateids), op_lock.c (byte-range locks), op_data.c (READ, WRITE,
 * COMMIT), layout.c (pNFS: issue 6). Each returns the op's status; mds/compound.c dispatches. */
#ifndef MDS_OPS_H
#define MDS_OPS_H

#include "mds/server.h"

#define MDS_OP(name) nfsstat4 mds_op_##name(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)

/* op_session.c */
MDS_OP(exchange_id);
MDS_OP(create_session);
MDS_OP(destroy_session);
MDS_OP(sequence);
MDS_OP(bind_conn_to_session);
MDS_OP(backchannel_ctl);
MDS_OP(destroy_clientid);
MDS_OP(reclaim_complete);
/* op_fh.c */
MDS_OP(putfh);
MDS_OP(putrootfh);
MDS_OP(putpubfh);
MDS_OP(getfh);
MDS_OP(savefh);
MDS_OP(restorefh);
MDS_OP(lookup);
MDS_OP(lookupp);
MDS_OP(secinfo);
MDS_OP(secinfo_no_name);
/* op_attr.c */
MDS_OP(getattr);
MDS_OP(setattr);
MDS_OP(verify);
MDS_OP(nverify);
MDS_OP(access);
/* op_dir.c */
MDS_OP(create);
MDS_OP(remove);
MDS_OP(rename);
MDS_OP(link);
MDS_OP(readdir);
MDS_OP(readlink);
/* op_open.c */
MDS_OP(open);
MDS_OP(open_downgrade);
MDS_OP(close);
MDS_OP(delegreturn);
MDS_OP(delegpurge);
MDS_OP(want_delegation);
MDS_OP(test_stateid);
MDS_OP(free_stateid);
/* op_lock.c */
MDS_OP(lock);
MDS_OP(lockt);
MDS_OP(locku);
/* op_data.c */
MDS_OP(read);
MDS_OP(write);
MDS_OP(commit);
/* layout.c */
MDS_OP(layoutget);
MDS_OP(layoutcommit);
MDS_OP(layoutreturn);
MDS_OP(getdeviceinfo);
MDS_OP(getdevicelist);
/* compound.c: operations NFSv4.1 forbids or we do not offer */
MDS_OP(notsupp);

#endif
