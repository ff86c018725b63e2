/* Device IDs and device addresses: the pool's one volume as GETDEVICEINFO describes it. Block
 * layouts get simple(label signature) -> slice -> stripe/concat (built once: it never changes for
 * the pool's life, so its device ID has generation 1). SCSI layouts get the same tree over SCSI
 * base volumes named by each LUN's VPD 0x83 designator and carrying the asking client's PR key;
 * client keys come from client IDs, which are new after every restart, so the SCSI device ID's
 * generation is the server's boot counter and a client holding an old one must ask again. */
#include "mds/layout_int.h"

#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "mds/pool.h"
#include "proto/layout.h"
#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* pool id (8) | layout type (4) | generation (4) */
static void make_devid(const struct mds_server *srv, layouttype4 type, uint32_t gen, unsigned char *out)
{
	memcpy(out, srv->pool_id, 8);
	put_be32(out + 8, (uint32_t)type);
	put_be32(out + 12, gen);
}

int mds_lo_dev_init(struct mds_server *srv, char *err, size_t errlen)
{
	struct mds_layouts *lo = srv->layouts;
	char why[512] = "";
	int rc;

	for (unsigned i = 0; i < MDS_LO_NTYPES; i++) {
		const struct mds_lo_type *t = mds_lo_type_at(i);
		make_devid(srv, t->type, t->devid_gen(srv), lo->devid[t->index]);
	}
	rc = mds_pool_deviceaddr(srv->vol, &lo->block_addr, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "pool %s: the volume has no block-layout description: %s", srv->cfg.pool, why);
		return rc;
	}
	lo->have_block_addr = 1;
	return 0;
}

void mds_lo_dev_free(struct mds_server *srv)
{
	struct mds_layouts *lo = srv->layouts;

	if (lo->have_block_addr)
		proto_device_addr_free(&lo->block_addr);
	lo->have_block_addr = 0;
}

const struct mds_lo_type *mds_lo_type_of_devid(const struct mds_server *srv, const unsigned char *devid)
{
	for (unsigned i = 0; i < MDS_LO_NTYPES; i++) {
		const struct mds_lo_type *t = mds_lo_type_at(i);
		if (memcmp(devid, mds_lo_devid(srv, t), NFS4_DEVICEID4_SIZE) == 0)
			return t;
	}
	return NULL;
}

static int scsi_volume(struct mds_server *srv, uint64_t key, struct blkmap_vol **out)
{
	const struct mds_store_format *f = mds_store_format(srv->store);
	uint32_t slices[MDS_MAX_LUNS], top;
	struct blkmap_vol *vol = NULL;
	int rc;

	rc = blkmap_vol_create(&vol);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < f->nluns; i++) {
		struct blkmap_dev *dev = mds_pool_lun_dev(srv->pool, i);
		struct blkmap_inquiry inq;
		const struct blkmap_designator *d;
		uint32_t base;

		if (!dev || blkmap_dev_inquiry(dev, &inq) != 0 || !(d = blkmap_inquiry_preferred(&inq))) {
			LOG_ERROR("pool %s: LUN %u has no usable VPD 0x83 designator for SCSI layouts", srv->cfg.pool, i);
			rc = -ENODEV;
			goto fail;
		}
		rc = blkmap_vol_add_scsi(vol, (enum blkmap_desig_type)d->type, (enum blkmap_code_set)d->code_set, d->bytes,
					 d->len, key, &base);
		if (!rc)
			rc = blkmap_vol_set_leaf_size(vol, base, f->luns[i].size_bytes);
		if (!rc)
			rc = blkmap_vol_add_slice(vol, f->luns[i].data_start_bytes, f->luns[i].data_bytes, base, &slices[i]);
		if (rc)
			goto fail;
	}
	rc = mds_pool_volume_top(vol, f, slices, &top);
	if (rc)
		goto fail;
	*out = vol;
	return 0;
fail:
	LOG_ERROR("pool %s: cannot describe the volume for SCSI layouts: %s", srv->cfg.pool, blkmap_vol_errstr(vol));
	blkmap_vol_free(vol);
	return rc;
}

/* The block volume's address is the same for every client: a copy of the one made at start. */
int mds_lo_block_dev_addr(struct mds_server *srv, const struct mds_client *clp, device_addr4 *out)
{
	struct mds_layouts *lo = srv->layouts;
	char *body;

	(void)clp;
	memset(out, 0, sizeof(*out));
	body = malloc(lo->block_addr.da_addr_body.da_addr_body_len + 1);
	if (!body)
		return -ENOMEM;
	memcpy(body, lo->block_addr.da_addr_body.da_addr_body_val, lo->block_addr.da_addr_body.da_addr_body_len);
	out->da_layout_type = LAYOUT4_BLOCK_VOLUME;
	out->da_addr_body.da_addr_body_len = lo->block_addr.da_addr_body.da_addr_body_len;
	out->da_addr_body.da_addr_body_val = body;
	return 0;
}

/* The SCSI volume carries the client's PR key, so it is made for each client. */
int mds_lo_scsi_dev_addr(struct mds_server *srv, const struct mds_client *clp, device_addr4 *out)
{
	struct mds_layouts *lo = srv->layouts;
	struct blkmap_vol *vol = NULL;
	char why[256];
	int rc;

	memset(out, 0, sizeof(*out));
	if (!lo->fence)
		return -EINVAL;
	if (!mds_fence_active(lo->fence)) {
		/* The first SCSI client: from now on only registered initiators reach the LUNs. */
		rc = mds_fence_activate(srv, lo->fence, why, sizeof(why));
		if (rc == -EDEADLK)
			return -EAGAIN; /* inside an I/O completion: the client asks again */
		if (rc) {
			LOG_ERROR("pool %s: cannot set up SCSI fencing: %s", srv->cfg.pool, why);
			return rc;
		}
		LOG_WARN("pool %s: SCSI fencing now holds the LUNs (client %016llx asked for a SCSI device); "
			 "block-volume clients lose direct access", srv->cfg.pool, (unsigned long long)clp->clientid);
	}
	rc = scsi_volume(srv, mds_fence_client_key(clp->clientid), &vol);
	if (rc)
		return rc;
	rc = blkmap_vol_to_device_addr(vol, LAYOUT4_SCSI, out, why, sizeof(why));
	if (rc)
		LOG_ERROR("pool %s: cannot encode the SCSI volume: %s", srv->cfg.pool, why);
	blkmap_vol_free(vol);
	return rc;
}
