/* Volumes and the generated XDR types: field by field in both directions, with the wire decoding
 * itself left to proto's coders (which check lengths, caps and cycles before anything is built).
 * What comes in is rebuilt through the ordinary blkmap_vol_add_* calls and validated, so a hostile
 * peer meets exactly the rules a local caller does. */
#include "blkmap/blkmap_xdr.h"
#include "blkmap/vol_int.h"
#include "proto/layout.h"
#include "proto/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int finish_in(struct blkmap_vol *vol, int rc, struct blkmap_vol **out, char *err, size_t errlen)
{
	if (rc == 0)
		rc = blkmap_vol_validate(vol);
	if (rc < 0) {
		proto_errf(err, errlen, rc, "%s", blkmap_vol_errstr(vol));
		blkmap_vol_free(vol);
		return rc;
	}
	*out = vol;
	return 0;
}

int blkmap_vol_from_block(const pnfs_block_deviceaddr4 *da, struct blkmap_vol **out, char *err, size_t errlen)
{
	struct blkmap_vol *vol;
	unsigned n = da->bda_volumes.bda_volumes_len;
	int rc = 0;

	*out = NULL;
	if (n > BLKMAP_MAX_VOLUMES)
		return proto_errf(err, errlen, -E2BIG, "block device address: %u volumes, at most %u", n, BLKMAP_MAX_VOLUMES);
	if (blkmap_vol_create(&vol) < 0)
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < n && rc == 0; i++) {
		const pnfs_block_volume4 *v = &da->bda_volumes.bda_volumes_val[i];
		switch (v->type) {
		case PNFS_BLOCK_VOLUME_SIMPLE: {
			const pnfs_block_simple_volume_info4 *s = &v->pnfs_block_volume4_u.bv_simple_info;
			struct blkmap_sig_comp comps[BLKMAP_MAX_SIG_COMP];
			unsigned nc = s->bsv_ds.bsv_ds_len;
			if (nc > BLKMAP_MAX_SIG_COMP) {
				rc = bm_vol_err(vol, -E2BIG, "volume %u (simple): %u signature components, at most %u", i, nc,
						BLKMAP_MAX_SIG_COMP);
				break;
			}
			for (unsigned k = 0; k < nc; k++) {
				const pnfs_block_sig_component4 *c = &s->bsv_ds.bsv_ds_val[k];
				comps[k].offset_bytes = c->bsc_sig_offset;
				comps[k].len = c->bsc_contents.bsc_contents_len;
				comps[k].bytes = (const uint8_t *)c->bsc_contents.bsc_contents_val;
			}
			rc = blkmap_vol_add_simple(vol, comps, nc, NULL);
			break;
		}
		case PNFS_BLOCK_VOLUME_SLICE: {
			const pnfs_block_slice_volume_info4 *s = &v->pnfs_block_volume4_u.bv_slice_info;
			rc = blkmap_vol_add_slice(vol, s->bsv_start, s->bsv_length, s->bsv_volume, NULL);
			break;
		}
		case PNFS_BLOCK_VOLUME_CONCAT: {
			const pnfs_block_concat_volume_info4 *c = &v->pnfs_block_volume4_u.bv_concat_info;
			rc = blkmap_vol_add_concat(vol, c->bcv_volumes.bcv_volumes_val, c->bcv_volumes.bcv_volumes_len, NULL);
			break;
		}
		case PNFS_BLOCK_VOLUME_STRIPE: {
			const pnfs_block_stripe_volume_info4 *s = &v->pnfs_block_volume4_u.bv_stripe_info;
			rc = blkmap_vol_add_stripe(vol, s->bsv_stripe_unit, s->bsv_volumes.bsv_volumes_val,
						   s->bsv_volumes.bsv_volumes_len, NULL);
			break;
		}
		default:
			rc = bm_vol_err(vol, -EINVAL, "volume %u: type %d is not a block volume type", i, (int)v->type);
		}
	}
	return finish_in(vol, rc, out, err, errlen);
}

int blkmap_vol_from_scsi(const pnfs_scsi_deviceaddr4 *da, struct blkmap_vol **out, char *err, size_t errlen)
{
	struct blkmap_vol *vol;
	unsigned n = da->sda_volumes.sda_volumes_len;
	int rc = 0;

	*out = NULL;
	if (n > BLKMAP_MAX_VOLUMES)
		return proto_errf(err, errlen, -E2BIG, "SCSI device address: %u volumes, at most %u", n, BLKMAP_MAX_VOLUMES);
	if (blkmap_vol_create(&vol) < 0)
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < n && rc == 0; i++) {
		const pnfs_scsi_volume4 *v = &da->sda_volumes.sda_volumes_val[i];
		switch (v->type) {
		case PNFS_SCSI_VOLUME_BASE: {
			const pnfs_scsi_base_volume_info4 *b = &v->pnfs_scsi_volume4_u.sv_simple_info;
			rc = blkmap_vol_add_scsi(vol, (enum blkmap_desig_type)b->sbv_designator_type,
						 (enum blkmap_code_set)b->sbv_code_set,
						 (const uint8_t *)b->sbv_designator.sbv_designator_val,
						 b->sbv_designator.sbv_designator_len, b->sbv_pr_key, NULL);
			break;
		}
		case PNFS_SCSI_VOLUME_SLICE: {
			const pnfs_scsi_slice_volume_info4 *s = &v->pnfs_scsi_volume4_u.sv_slice_info;
			rc = blkmap_vol_add_slice(vol, s->ssv_start, s->ssv_length, s->ssv_volume, NULL);
			break;
		}
		case PNFS_SCSI_VOLUME_CONCAT: {
			const pnfs_scsi_concat_volume_info4 *c = &v->pnfs_scsi_volume4_u.sv_concat_info;
			rc = blkmap_vol_add_concat(vol, c->scv_volumes.scv_volumes_val, c->scv_volumes.scv_volumes_len, NULL);
			break;
		}
		case PNFS_SCSI_VOLUME_STRIPE: {
			const pnfs_scsi_stripe_volume_info4 *s = &v->pnfs_scsi_volume4_u.sv_stripe_info;
			rc = blkmap_vol_add_stripe(vol, s->ssv_stripe_unit, s->ssv_volumes.ssv_volumes_val,
						   s->ssv_volumes.ssv_volumes_len, NULL);
			break;
		}
		default:
			rc = bm_vol_err(vol, -EINVAL, "volume %u: type %d is not a SCSI volume type", i, (int)v->type);
		}
	}
	return finish_in(vol, rc, out, err, errlen);
}

/* ---- out ------------------------------------------------------------------------------------- */

static uint32_t *copy_members(const struct bm_volent *e)
{
	uint32_t *m = malloc(e->nmembers * sizeof(uint32_t));
	if (m)
		memcpy(m, e->members, e->nmembers * sizeof(uint32_t));
	return m;
}

void blkmap_xdr_block_free(pnfs_block_deviceaddr4 *da)
{
	for (u_int i = 0; i < da->bda_volumes.bda_volumes_len; i++) {
		pnfs_block_volume4 *v = &da->bda_volumes.bda_volumes_val[i];
		switch (v->type) {
		case PNFS_BLOCK_VOLUME_SIMPLE: {
			pnfs_block_simple_volume_info4 *s = &v->pnfs_block_volume4_u.bv_simple_info;
			for (u_int k = 0; k < s->bsv_ds.bsv_ds_len; k++)
				free(s->bsv_ds.bsv_ds_val[k].bsc_contents.bsc_contents_val);
			free(s->bsv_ds.bsv_ds_val);
			break;
		}
		case PNFS_BLOCK_VOLUME_CONCAT:
			free(v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val);
			break;
		case PNFS_BLOCK_VOLUME_STRIPE:
			free(v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val);
			break;
		default:
			break;
		}
	}
	free(da->bda_volumes.bda_volumes_val);
	memset(da, 0, sizeof(*da));
}

void blkmap_xdr_scsi_free(pnfs_scsi_deviceaddr4 *da)
{
	for (u_int i = 0; i < da->sda_volumes.sda_volumes_len; i++) {
		pnfs_scsi_volume4 *v = &da->sda_volumes.sda_volumes_val[i];
		switch (v->type) {
		case PNFS_SCSI_VOLUME_BASE:
			free(v->pnfs_scsi_volume4_u.sv_simple_info.sbv_designator.sbv_designator_val);
			break;
		case PNFS_SCSI_VOLUME_CONCAT:
			free(v->pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_val);
			break;
		case PNFS_SCSI_VOLUME_STRIPE:
			free(v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_val);
			break;
		default:
			break;
		}
	}
	free(da->sda_volumes.sda_volumes_val);
	memset(da, 0, sizeof(*da));
}

int blkmap_vol_to_block(const struct blkmap_vol *vol, pnfs_block_deviceaddr4 *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (vol->n == 0)
		return proto_errf(err, errlen, -EINVAL, "the volume array is empty");
	out->bda_volumes.bda_volumes_val = calloc(vol->n, sizeof(pnfs_block_volume4));
	if (!out->bda_volumes.bda_volumes_val)
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		pnfs_block_volume4 *v = &out->bda_volumes.bda_volumes_val[i];
		out->bda_volumes.bda_volumes_len = i + 1;
		switch (e->type) {
		case BLKMAP_VOL_SIMPLE: {
			pnfs_block_simple_volume_info4 *s = &v->pnfs_block_volume4_u.bv_simple_info;
			v->type = PNFS_BLOCK_VOLUME_SIMPLE;
			s->bsv_ds.bsv_ds_val = calloc(e->nsig, sizeof(pnfs_block_sig_component4));
			if (!s->bsv_ds.bsv_ds_val)
				goto nomem;
			for (unsigned k = 0; k < e->nsig; k++) {
				pnfs_block_sig_component4 *c = &s->bsv_ds.bsv_ds_val[k];
				s->bsv_ds.bsv_ds_len = k + 1;
				c->bsc_sig_offset = e->sig[k].offset_bytes;
				c->bsc_contents.bsc_contents_val = malloc(e->sig[k].len);
				if (!c->bsc_contents.bsc_contents_val)
					goto nomem;
				memcpy(c->bsc_contents.bsc_contents_val, e->sig[k].bytes, e->sig[k].len);
				c->bsc_contents.bsc_contents_len = e->sig[k].len;
			}
			break;
		}
		case BLKMAP_VOL_SLICE:
			v->type = PNFS_BLOCK_VOLUME_SLICE;
			v->pnfs_block_volume4_u.bv_slice_info.bsv_start = e->start;
			v->pnfs_block_volume4_u.bv_slice_info.bsv_length = e->length;
			v->pnfs_block_volume4_u.bv_slice_info.bsv_volume = e->members[0];
			break;
		case BLKMAP_VOL_CONCAT:
			v->type = PNFS_BLOCK_VOLUME_CONCAT;
			v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val = copy_members(e);
			if (!v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val)
				goto nomem;
			v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_len = e->nmembers;
			break;
		case BLKMAP_VOL_STRIPE:
			v->type = PNFS_BLOCK_VOLUME_STRIPE;
			v->pnfs_block_volume4_u.bv_stripe_info.bsv_stripe_unit = e->unit;
			v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val = copy_members(e);
			if (!v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val)
				goto nomem;
			v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len = e->nmembers;
			break;
		case BLKMAP_VOL_SCSI:
			blkmap_xdr_block_free(out);
			return proto_errf(err, errlen, -EINVAL,
				    "volume %u is a SCSI base volume: the block layout has no such type (use the SCSI layout)", i);
		}
	}
	return 0;
nomem:
	blkmap_xdr_block_free(out);
	return proto_errf(err, errlen, -ENOMEM, "out of memory");
}

int blkmap_vol_to_scsi(const struct blkmap_vol *vol, pnfs_scsi_deviceaddr4 *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (vol->n == 0)
		return proto_errf(err, errlen, -EINVAL, "the volume array is empty");
	out->sda_volumes.sda_volumes_val = calloc(vol->n, sizeof(pnfs_scsi_volume4));
	if (!out->sda_volumes.sda_volumes_val)
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		pnfs_scsi_volume4 *v = &out->sda_volumes.sda_volumes_val[i];
		out->sda_volumes.sda_volumes_len = i + 1;
		switch (e->type) {
		case BLKMAP_VOL_SCSI: {
			pnfs_scsi_base_volume_info4 *b = &v->pnfs_scsi_volume4_u.sv_simple_info;
			v->type = PNFS_SCSI_VOLUME_BASE;
			b->sbv_code_set = (pnfs_scsi_code_set)e->desig.code_set;
			b->sbv_designator_type = (pnfs_scsi_designator_type)e->desig.type;
			b->sbv_designator.sbv_designator_val = malloc(e->desig.len);
			if (!b->sbv_designator.sbv_designator_val)
				goto nomem;
			memcpy(b->sbv_designator.sbv_designator_val, e->desig.bytes, e->desig.len);
			b->sbv_designator.sbv_designator_len = e->desig.len;
			b->sbv_pr_key = e->pr_key;
			break;
		}
		case BLKMAP_VOL_SLICE:
			v->type = PNFS_SCSI_VOLUME_SLICE;
			v->pnfs_scsi_volume4_u.sv_slice_info.ssv_start = e->start;
			v->pnfs_scsi_volume4_u.sv_slice_info.ssv_length = e->length;
			v->pnfs_scsi_volume4_u.sv_slice_info.ssv_volume = e->members[0];
			break;
		case BLKMAP_VOL_CONCAT:
			v->type = PNFS_SCSI_VOLUME_CONCAT;
			v->pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_val = copy_members(e);
			if (!v->pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_val)
				goto nomem;
			v->pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_len = e->nmembers;
			break;
		case BLKMAP_VOL_STRIPE:
			v->type = PNFS_SCSI_VOLUME_STRIPE;
			v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_stripe_unit = e->unit;
			v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_val = copy_members(e);
			if (!v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_val)
				goto nomem;
			v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_len = e->nmembers;
			break;
		case BLKMAP_VOL_SIMPLE:
			blkmap_xdr_scsi_free(out);
			return proto_errf(err, errlen, -EINVAL,
				    "volume %u is a simple (signature) volume: the SCSI layout names LUNs by designator", i);
		}
	}
	return 0;
nomem:
	blkmap_xdr_scsi_free(out);
	return proto_errf(err, errlen, -ENOMEM, "out of memory");
}

/* ---- device_addr4 and raw bytes ------------------------------------------------------------------- */

static const char *decode_why(int rc)
{
	return rc == -EBADMSG ? "malformed XDR" : rc == -ENOMEM ? "out of memory" : "not this layout type";
}

int blkmap_vol_from_device_addr(const device_addr4 *da, struct blkmap_vol **out, char *err, size_t errlen)
{
	int rc;

	*out = NULL;
	if (da->da_layout_type == LAYOUT4_BLOCK_VOLUME) {
		pnfs_block_deviceaddr4 b;
		memset(&b, 0, sizeof(b));
		rc = proto_block_deviceaddr_decode(da, &b);
		if (rc < 0)
			return proto_errf(err, errlen, rc, "block device address: %s", decode_why(rc));
		rc = blkmap_vol_from_block(&b, out, err, errlen);
		proto_block_deviceaddr_free(&b);
		return rc;
	}
	if (da->da_layout_type == LAYOUT4_SCSI) {
		pnfs_scsi_deviceaddr4 s;
		memset(&s, 0, sizeof(s));
		rc = proto_scsi_deviceaddr_decode(da, &s);
		if (rc < 0)
			return proto_errf(err, errlen, rc, "SCSI device address: %s", decode_why(rc));
		rc = blkmap_vol_from_scsi(&s, out, err, errlen);
		proto_scsi_deviceaddr_free(&s);
		return rc;
	}
	return proto_errf(err, errlen, -EINVAL, "layout type %d is neither the block (3) nor the SCSI (5) layout",
		    (int)da->da_layout_type);
}

int blkmap_vol_to_device_addr(const struct blkmap_vol *vol, layouttype4 type, device_addr4 *out, char *err,
			      size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (type == LAYOUT4_BLOCK_VOLUME) {
		pnfs_block_deviceaddr4 b;
		rc = blkmap_vol_to_block(vol, &b, err, errlen);
		if (rc < 0)
			return rc;
		rc = proto_block_deviceaddr_encode(&b, out);
		blkmap_xdr_block_free(&b);
	} else if (type == LAYOUT4_SCSI) {
		pnfs_scsi_deviceaddr4 s;
		rc = blkmap_vol_to_scsi(vol, &s, err, errlen);
		if (rc < 0)
			return rc;
		rc = proto_scsi_deviceaddr_encode(&s, out);
		blkmap_xdr_scsi_free(&s);
	} else {
		return proto_errf(err, errlen, -EINVAL, "layout type %d is neither the block nor the SCSI layout", (int)type);
	}
	if (rc < 0)
		return proto_errf(err, errlen, rc, "encoding the device address failed (%s)", strerror(-rc));
	return 0;
}

int blkmap_vol_decode_xdr(const void *buf, size_t len, layouttype4 type, struct blkmap_vol **out,
			  layouttype4 *type_out, char *err, size_t errlen)
{
	device_addr4 da;
	char first[300] = "";
	int rc;

	*out = NULL;
	if (len > (64u << 20))
		return proto_errf(err, errlen, -E2BIG, "device address of %zu bytes is too large", len);
	da.da_addr_body.da_addr_body_len = (u_int)len;
	da.da_addr_body.da_addr_body_val = (char *)buf;
	if (type == 0 || type == LAYOUT4_BLOCK_VOLUME) {
		da.da_layout_type = LAYOUT4_BLOCK_VOLUME;
		rc = blkmap_vol_from_device_addr(&da, out, first, sizeof(first));
		if (rc == 0 || type != 0) {
			if (rc == 0 && type_out)
				*type_out = LAYOUT4_BLOCK_VOLUME;
			return rc < 0 ? proto_errf(err, errlen, rc, "%s", first) : 0;
		}
	}
	da.da_layout_type = LAYOUT4_SCSI;
	rc = blkmap_vol_from_device_addr(&da, out, err, errlen);
	if (rc == 0 && type_out)
		*type_out = LAYOUT4_SCSI;
	if (rc < 0 && type == 0)
		proto_errf(err, errlen, rc, "neither a block nor a SCSI device address (as block: %s)", first);
	return rc;
}

int blkmap_vol_encode_xdr(const struct blkmap_vol *vol, layouttype4 type, void **buf, size_t *len, char *err,
			  size_t errlen)
{
	device_addr4 da;
	int rc = blkmap_vol_to_device_addr(vol, type, &da, err, errlen);

	*buf = NULL;
	*len = 0;
	if (rc < 0)
		return rc;
	*buf = malloc(da.da_addr_body.da_addr_body_len ? da.da_addr_body.da_addr_body_len : 1);
	if (!*buf) {
		proto_device_addr_free(&da);
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	}
	memcpy(*buf, da.da_addr_body.da_addr_body_val, da.da_addr_body.da_addr_body_len);
	*len = da.da_addr_body.da_addr_body_len;
	proto_device_addr_free(&da);
	return 0;
}

int blkmap_vol_read_file(const char *path, struct blkmap_vol **out, layouttype4 *type_out, char *err,
			 size_t errlen)
{
	struct stat st;
	char msg[400];
	uint8_t *buf;
	ssize_t n;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return proto_errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
		close(fd);
		return proto_errf(err, errlen, -EINVAL, "%s: not a regular file of at most 64 MiB", path);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return proto_errf(err, errlen, -EIO, "%s: short read", path);
	}
	rc = blkmap_vol_decode_xdr(buf, (size_t)n, 0, out, type_out, msg, sizeof(msg));
	free(buf);
	if (rc < 0)
		return proto_errf(err, errlen, rc, "%s: %s", path, msg);
	return 0;
}

int blkmap_vol_read_pool(const char *dir, struct blkmap_vol **out, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, BLKMAP_POOL_VOLUME_FILE);
	return blkmap_vol_read_file(path, out, NULL, err, errlen);
}
