/* Test helpers for pNFS layouts on top of the test client (tests/mds/nfsclient.h): LAYOUTGET,
 * LAYOUTCOMMIT, LAYOUTRETURN, GETDEVICEINFO and GETDEVICELIST as one call each, the device address
 * turned into a blkmap volume resolved against a lab's LUNs (what a real client does before its
 * direct I/O), and a metrics scrape. Each protocol helper returns the operation's status (0 =
 * NFS4_OK, > 0 an NFS4ERR_*) or -errno when no reply came. */
#ifndef TESTS_MDS_LAYOUT_UTIL_H
#define TESTS_MDS_LAYOUT_UTIL_H

#include "blkmap/blkmap.h"
#include "tests/lab.h"
#include "tests/mds/nfsclient.h"

#define LT_MAX_EXTENTS 4096

/* A LAYOUTGET result (SCSI extents are stored in the block extent shape: same fields). */
struct lt_layout {
	stateid4 sid;
	int return_on_close;
	uint64_t off, len;
	uint32_t iomode;
	layouttype4 type;
	unsigned n;
	pnfs_block_extent4 ext[LT_MAX_EXTENTS];
};

/* The arguments of a LAYOUTGET (RFC 8881 §18.43), given by name:
 * lt_layoutget(c, &fh, &(struct lt_get){ .type = ..., .iomode = RW, .len = ..., .sid = &open,
 * .maxcount = ... }, &out). Fields left out are 0. */
struct lt_get {
	layouttype4 type;
	uint32_t iomode;
	uint64_t off, len, minlen;
	const stateid4 *sid;    /* open, lock, delegation or layout stateid */
	uint32_t maxcount;
};

/* LAYOUTGET on fh; out (may be NULL) gets the layout on NFS4_OK. */
int lt_layoutget(struct nc *c, const struct nc_fh *fh, const struct lt_get *a, struct lt_layout *out);

/* The arguments of a LAYOUTCOMMIT, given by name. Fields left out are 0, except that last_write
 * must be given: < 0 means no new last write offset. */
struct lt_commit {
	layouttype4 type;
	const stateid4 *sid;
	uint64_t off, len;
	int64_t last_write;
	const pnfs_block_extent4 *ext;  /* block: the extents as given; SCSI: their ranges */
	unsigned n;
	int reclaim;
	int body_empty;                 /* a zero-length layoutupdate body, whatever ext says */
	uint64_t *newsize;              /* may be NULL: the new size, or UINT64_MAX if unchanged */
};

/* LAYOUTCOMMIT on fh. */
int lt_layoutcommit(struct nc *c, const struct nc_fh *fh, const struct lt_commit *a);

/* LAYOUTRETURN of kind FILE: *sid is updated when the server says a stateid remains (*present 1). */
int lt_layoutreturn_file(struct nc *c, const struct nc_fh *fh, layouttype4 type, uint32_t iomode, uint64_t off,
			 uint64_t len, stateid4 *sid, int *present);
/* LAYOUTRETURN of kind FSID (fh given) or ALL (fh NULL). */
int lt_layoutreturn_bulk(struct nc *c, const struct nc_fh *fh, layouttype4 type, uint32_t iomode);

/* GETDEVICEINFO. out (may be NULL) gets the address (caller frees with proto_device_addr_free);
 * *notification the bits granted; *mincount the size asked for with NFS4ERR_TOOSMALL. */
int lt_getdeviceinfo(struct nc *c, const void *devid, layouttype4 type, uint32_t maxcount, uint32_t notify,
		     device_addr4 *out, uint32_t *notification, uint32_t *mincount);
/* What a GETDEVICELIST answered: up to 8 device IDs, how many, and where to resume. */
struct lt_devlist {
	unsigned char ids[8][NFS4_DEVICEID4_SIZE];
	unsigned n;
	uint64_t cookie;
	unsigned char verf[NFS4_VERIFIER_SIZE];
	int eof;
};

/* GETDEVICELIST on fh from cookie and its verifier (NULL: zeros); *out is set on NFS4_OK. */
int lt_getdevicelist(struct nc *c, const struct nc_fh *fh, layouttype4 type, uint64_t cookie, const unsigned char *verf,
		     struct lt_devlist *out);

/* TEST_STATEID of one stateid: its status. */
int lt_test_stateid(struct nc *c, const stateid4 *sid, nfsstat4 *code);

/* The device's address (GETDEVICEINFO for this client) as a volume whose leaves are bound to the
 * lab's LUNs through ctx (blkmap_resolve against the lab's portal). NULL on failure (message on
 * stderr). Caller frees with blkmap_vol_free. */
struct blkmap_vol *lt_device_volume(struct nc *c, struct blkmap_ctx *ctx, const struct test_lab *lab,
				    const void *devid, layouttype4 type);

/* Bytes of one extent's data through the volume: write (or read) len bytes at file offset foff,
 * which must lie inside extent e. 0 or -errno from blkmap. */
int lt_extent_pwrite(struct blkmap_vol *vol, const pnfs_block_extent4 *e, uint64_t foff, const void *buf, size_t len);
int lt_extent_pread(struct blkmap_vol *vol, const pnfs_block_extent4 *e, uint64_t foff, void *buf, size_t len);

/* GET http://127.0.0.1:port/metrics; the value of the sample named exactly `sample` (with its
 * labels, e.g. "pnfs_mds_pool_bytes{state=\"pending\"}"), or -1. */
long long lt_metric(int port, const char *sample);
/* Send req to 127.0.0.1:port and return the HTTP status of the answer (-1 if none). */
int lt_http_status(int port, const char *req);

/* Keep a client's lease and backchannel alive for ms: SEQUENCE every 300 ms, callbacks answered. */
void lt_idle(struct nc *c, int ms);

#endif
