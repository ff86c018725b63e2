/* Layouts: placeholder routing every read and write through the MDS until the data path lands. */
#include "client/internal.h"

#include <errno.h>
#include <stdlib.h>

int pc_io_read(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg)
{
	return pc_mds_read(fh, iov, niov, off, cb, arg);
}

int pc_io_write(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg)
{
	return pc_mds_write(fh, iov, niov, off, cb, arg);
}

int pc_layout_commit(struct pnfs_fh *fh, pc_io_cb cb, void *arg)
{
	(void)fh; (void)cb; (void)arg;
	return -ENOENT;
}

int pc_layout_return_all(struct pnfs_fh *fh, int commit, pc_io_cb cb, void *arg)
{
	(void)fh; (void)commit; (void)cb; (void)arg;
	return -ENOENT;
}

void pc_layout_forget(struct pnfs_fh *fh) { (void)fh; }
void pc_layout_free(struct pc_layout *lo) { (void)lo; }
void pc_layout_truncated(struct pnfs_fh *fh, uint64_t size) { (void)fh; (void)size; }
uint64_t pc_layout_dirty_end(struct pnfs_fh *fh) { (void)fh; return 0; }
nfsstat4 pc_layout_recall(struct pnfs_context *ctx, const CB_LAYOUTRECALL4args *a) { (void)ctx; (void)a; return NFS4ERR_NOMATCHING_LAYOUT; }
nfsstat4 pc_layout_recall_any(struct pnfs_context *ctx, const CB_RECALL_ANY4args *a) { (void)ctx; (void)a; return NFS4_OK; }
nfsstat4 pc_device_notify(struct pnfs_context *ctx, const CB_NOTIFY_DEVICEID4args *a) { (void)ctx; (void)a; return NFS4_OK; }
void pc_devices_free(struct pnfs_context *ctx) { (void)ctx; }
void pc_devices_changed(struct pnfs_context *ctx) { (void)ctx; }
int pnfs_fh_extents(struct pnfs_fh *fh, struct pnfs_extent **out, size_t *n) { (void)fh; *out = NULL; *n = 0; return 0; }
struct blkmap_vol *pnfs_device_volume(struct pnfs_context *ctx, const uint8_t deviceid[16]) { (void)ctx; (void)deviceid; return NULL; }
