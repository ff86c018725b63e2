/* pNFS layout operations and hooks: not offered yet (issue 6). The handlers answer
 * NFS4ERR_NOTSUPP (RFC 8881: a server without pNFS support for a file system); fs_layout_type
 * still advertises what the pool can do, so clients see the MDS role. */
#include "mds/layout.h"

#include "mds/ops.h"

unsigned mds_layout_free_flags(struct mds_server *srv, struct mds_file *f)
{
	(void)srv;
	(void)f;
	return 0;
}

void mds_layout_blocks_freed(struct mds_server *srv, uint64_t fileid, const struct mds_ranges *freed)
{
	(void)srv;
	(void)fileid;
	(void)freed;
}

void mds_layout_truncate(struct mds_server *srv, struct mds_file *f, uint64_t new_size)
{
	(void)srv;
	(void)f;
	(void)new_size;
}

void mds_layout_open_closed(struct mds_server *srv, struct mds_stateid *open)
{
	(void)srv;
	(void)open;
}

void mds_layout_client_gone(struct mds_server *srv, struct mds_client *clp)
{
	(void)srv;
	(void)clp;
}

void mds_layout_removed(struct mds_server *srv, uint64_t fileid, int destroyed)
{
	(void)srv;
	(void)fileid;
	(void)destroyed;
}

MDS_OP(layoutget)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}

MDS_OP(layoutcommit)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}

MDS_OP(layoutreturn)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}

MDS_OP(getdeviceinfo)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}

MDS_OP(getdevicelist)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}
