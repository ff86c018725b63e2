/* MDS-path data operations (RFC 8881 §18.22, §18.32, §18.3): checks here, the bytes in
 * mds/data.c. The metadata of every WRITE is committed in the store before its reply; what COMMIT
 * adds is the flush of the LUNs' write caches (mds/data.c). */
#include "mds/compound.h"
#include "mds/data.h"
#include "mds/deleg.h"
#include "mds/fh.h"
#include "mds/ops.h"
#include "mds/state.h"
#include "proto/log.h"

#include <string.h>

static nfsstat4 regular_file(struct mds_compound *c, struct mds_inode *ino)
{
	nfsstat4 st = mds_cfh_inode(c, ino);

	if (st)
		return st;
	if (ino->type == MDS_FT_DIR)
		return NFS4ERR_ISDIR;
	if (ino->type == MDS_FT_LNK)
		return NFS4ERR_SYMLINK;
	if (ino->type != MDS_FT_REG)
		return NFS4ERR_INVAL;
	return NFS4_OK;
}

/* A client given a SCSI layout that still reads or writes through the MDS most likely failed to
 * register its key on a LUN (the stock Linux client falls back so, silently, when the target refuses
 * the APTPL bit it sets): said once per client. */
static void note_mds_io(struct mds_compound *c, const char *what)
{
	struct mds_client *clp = c->clp;

	if (!clp || !clp->scsi_layout_given || clp->mds_io_noted)
		return;
	clp->mds_io_noted = 1;
	LOG_INFO("client %016llx (%s, from %s) got a SCSI layout but %s through the MDS: it probably could not "
		 "register its key on the LUNs",
		 (unsigned long long)clp->clientid, clp->principal, c->conn ? c->conn->peer_str : "?", what);
}

nfsstat4 mds_op_read(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	READ4args *a = &arg->nfs_argop4_u.opread;
	READ4resok *ok = &res->nfs_resop4_u.opread.READ4res_u.resok4;
	struct mds_stateid *st = NULL;
	struct mds_inode ino;
	nfsstat4 s;

	s = regular_file(c, &ino);
	if (s)
		return s;
	s = mds_sid_check_io(c, &a->stateid, ino.fileid, 0, &st);
	if (s)
		return s;
	/* An open already checked the mode bits; I/O without one is checked here. */
	if (!st && !mds_may(&c->cred, &ino, MDS_MAY_READ) && c->cred.uid != ino.uid)
		return NFS4ERR_ACCESS;
	note_mds_io(c, "reads");
	s = mds_data_read(c, ino.fileid, a->offset, a->count, ok);
	if (s == NFS4_OK) {
		c->srv->data_reads++;
		c->srv->data_read_bytes += ok->data.data_len;
	}
	return s;
}

nfsstat4 mds_op_write(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	WRITE4args *a = &arg->nfs_argop4_u.opwrite;
	WRITE4resok *ok = &res->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
	struct mds_stateid *st = NULL;
	struct mds_inode ino;
	struct mds_file *f;
	nfsstat4 s;

	s = regular_file(c, &ino);
	if (s)
		return s;
	s = mds_check_writable_export(c);
	if (s)
		return s;
	s = mds_sid_check_io(c, &a->stateid, ino.fileid, 1, &st);
	if (s)
		return s;
	if (!st && !mds_may(&c->cred, &ino, MDS_MAY_WRITE))
		return NFS4ERR_ACCESS;
	if (a->stable > FILE_SYNC4)
		return NFS4ERR_INVAL;
	f = mds_file_find(c->srv, ino.fileid);
	if (f && (!st || st->type != MDS_ST_DELEG)) {
		s = mds_deleg_break(c, f, OPEN4_SHARE_ACCESS_WRITE);
		if (s)
			return s;
	}
	note_mds_io(c, "writes");
	s = mds_data_write(c, ino.fileid, a->offset, a->data.data_val, a->data.data_len, a->stable, ok);
	if (s == NFS4_OK) {
		c->srv->data_writes++;
		c->srv->data_written_bytes += ok->count;
	}
	return s;
}

nfsstat4 mds_op_commit(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	COMMIT4args *a = &arg->nfs_argop4_u.opcommit;
	COMMIT4resok *ok = &res->nfs_resop4_u.opcommit.COMMIT4res_u.resok4;
	struct mds_inode ino;
	nfsstat4 s;

	s = regular_file(c, &ino);
	if (s)
		return s == NFS4ERR_SYMLINK ? NFS4ERR_INVAL : s;
	if (a->count && a->offset > NFS4_UINT64_MAX - a->count)
		return NFS4ERR_INVAL;
	return mds_data_commit(c, ino.fileid, ok);
}
