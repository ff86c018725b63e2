/* Block and SCSI layout bodies in and out of their NFSv4.1 opaques.
 * Before handing a body to the generated decoder we check its leading count against the bytes
 * present (libtirpc allocates count elements before reading one), and after decoding we check what
 * XDR cannot: extent states in range, volume indices in range, and no volume that contains itself. */
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared checks -------------------------------------------------------------------------- */

static uint32_t body_count(const char *body)
{
	const uint8_t *p = (const uint8_t *)body;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A list of fixed-size elements: exactly 4 + count * elem_size bytes. */
static int check_fixed_list(const char *body, u_int len, size_t elem_size, uint32_t max)
{
	uint32_t count;

	if (len < 4 || !body)
		return -EBADMSG;
	count = body_count(body);
	if (count > max || (uint64_t)len != 4 + (uint64_t)count * elem_size)
		return -EBADMSG;
	return 0;
}

/* A volume array: at least one volume, each at least 8 bytes (type + shortest arm). */
static int check_volume_list(const char *body, u_int len)
{
	uint32_t count;

	if (len < 4 || !body)
		return -EBADMSG;
	count = body_count(body);
	if (count == 0 || count > PROTO_BLOCK_VOLUMES_MAX || (uint64_t)count * 8 > len - 4)
		return -EBADMSG;
	return 0;
}

typedef const uint32_t *(*children_fn)(const void *vols, unsigned i, unsigned *n);

/* Every child index in range and the graph acyclic: an iterative depth-first search (white, grey,
 * black), so a deep chain cannot overflow the stack. */
static int check_volume_graph(const void *vols, unsigned n, children_fn children)
{
	struct frame {
		unsigned v, next;
	} *stack = malloc(n * sizeof(*stack));
	uint8_t *color = calloc(n, 1);
	int ret = -ENOMEM;

	if (!stack || !color)
		goto out;
	ret = -EBADMSG;
	for (unsigned root = 0; root < n; root++) {
		unsigned sp = 0;

		if (color[root])
			continue;
		color[root] = 1;
		stack[sp++] = (struct frame){ root, 0 };
		while (sp) {
			struct frame *f = &stack[sp - 1];
			unsigned nk;
			const uint32_t *kids = children(vols, f->v, &nk);

			if (f->next < nk) {
				uint32_t c = kids[f->next++];

				if (c >= n || color[c] == 1)
					goto out;
				if (color[c] == 0) {
					color[c] = 1;
					stack[sp++] = (struct frame){ c, 0 };
				}
			} else {
				color[f->v] = 2;
				sp--;
			}
		}
	}
	ret = 0;
out:
	free(stack);
	free(color);
	return ret;
}

static int encode_body(xdrproc_t proc, const void *obj, size_t max, u_int *len, char **val)
{
	void *buf;
	size_t n;
	int ret = proto_xdr_encode(proc, obj, &buf, &n);

	if (ret < 0)
		return ret;
	if (n > max) {
		free(buf);
		return -EINVAL;
	}
	*len = (u_int)n;
	*val = buf;
	return 0;
}

void proto_layout_content_free(layout_content4 *c)
{
	xdr_free((xdrproc_t)xdr_layout_content4, (char *)c);
}

void proto_device_addr_free(device_addr4 *d)
{
	xdr_free((xdrproc_t)xdr_device_addr4, (char *)d);
}

void proto_layoutupdate_free(layoutupdate4 *u)
{
	xdr_free((xdrproc_t)xdr_layoutupdate4, (char *)u);
}

/* ---- extents ---------------------------------------------------------------------------------- */

static int block_extents_ok(const pnfs_block_extent4 *e, u_int n)
{
	for (u_int i = 0; i < n; i++)
		if ((unsigned)e[i].bex_state > PNFS_BLOCK_NONE_DATA)
			return 0;
	return 1;
}

static int scsi_extents_ok(const pnfs_scsi_extent4 *e, u_int n)
{
	for (u_int i = 0; i < n; i++)
		if ((unsigned)e[i].se_state > PNFS_SCSI_NONE_DATA)
			return 0;
	return 1;
}

int proto_block_layout_encode(const pnfs_block_layout4 *bl, layout_content4 *out)
{
	memset(out, 0, sizeof(*out));
	if (!block_extents_ok(bl->blo_extents.blo_extents_val, bl->blo_extents.blo_extents_len))
		return -EINVAL;
	out->loc_type = LAYOUT4_BLOCK_VOLUME;
	return encode_body((xdrproc_t)xdr_pnfs_block_layout4, bl, PROTO_LAYOUT_BODY_MAX,
			   &out->loc_body.loc_body_len, &out->loc_body.loc_body_val);
}

int proto_block_layout_decode(const layout_content4 *in, pnfs_block_layout4 *out)
{
	int ret;

	if (in->loc_type != LAYOUT4_BLOCK_VOLUME)
		return -EINVAL;
	ret = check_fixed_list(in->loc_body.loc_body_val, in->loc_body.loc_body_len,
			       PROTO_BLOCK_EXTENT_XDR_SIZE, PROTO_BLOCK_EXTENTS_MAX);
	if (ret == 0)
		ret = proto_xdr_decode((xdrproc_t)xdr_pnfs_block_layout4, out, in->loc_body.loc_body_val,
				       in->loc_body.loc_body_len);
	if (ret == 0 && !block_extents_ok(out->blo_extents.blo_extents_val, out->blo_extents.blo_extents_len)) {
		proto_block_layout_free(out);
		ret = -EBADMSG;
	}
	return ret;
}

void proto_block_layout_free(pnfs_block_layout4 *bl)
{
	xdr_free((xdrproc_t)xdr_pnfs_block_layout4, (char *)bl);
}

int proto_block_layoutupdate_encode(const pnfs_block_layoutupdate4 *lu, layoutupdate4 *out)
{
	memset(out, 0, sizeof(*out));
	if (!block_extents_ok(lu->blu_commit_list.blu_commit_list_val, lu->blu_commit_list.blu_commit_list_len))
		return -EINVAL;
	out->lou_type = LAYOUT4_BLOCK_VOLUME;
	return encode_body((xdrproc_t)xdr_pnfs_block_layoutupdate4, lu, PROTO_LAYOUT_BODY_MAX,
			   &out->lou_body.lou_body_len, &out->lou_body.lou_body_val);
}

int proto_block_layoutupdate_decode(const layoutupdate4 *in, pnfs_block_layoutupdate4 *out)
{
	int ret;

	if (in->lou_type != LAYOUT4_BLOCK_VOLUME)
		return -EINVAL;
	ret = check_fixed_list(in->lou_body.lou_body_val, in->lou_body.lou_body_len,
			       PROTO_BLOCK_EXTENT_XDR_SIZE, PROTO_BLOCK_EXTENTS_MAX);
	if (ret == 0)
		ret = proto_xdr_decode((xdrproc_t)xdr_pnfs_block_layoutupdate4, out, in->lou_body.lou_body_val,
				       in->lou_body.lou_body_len);
	if (ret == 0 &&
	    !block_extents_ok(out->blu_commit_list.blu_commit_list_val, out->blu_commit_list.blu_commit_list_len)) {
		proto_block_layoutupdate_free(out);
		ret = -EBADMSG;
	}
	return ret;
}

void proto_block_layoutupdate_free(pnfs_block_layoutupdate4 *lu)
{
	xdr_free((xdrproc_t)xdr_pnfs_block_layoutupdate4, (char *)lu);
}

int proto_scsi_layout_encode(const pnfs_scsi_layout4 *sl, layout_content4 *out)
{
	memset(out, 0, sizeof(*out));
	if (!scsi_extents_ok(sl->sl_extents.sl_extents_val, sl->sl_extents.sl_extents_len))
		return -EINVAL;
	out->loc_type = LAYOUT4_SCSI;
	return encode_body((xdrproc_t)xdr_pnfs_scsi_layout4, sl, PROTO_LAYOUT_BODY_MAX,
			   &out->loc_body.loc_body_len, &out->loc_body.loc_body_val);
}

int proto_scsi_layout_decode(const layout_content4 *in, pnfs_scsi_layout4 *out)
{
	int ret;

	if (in->loc_type != LAYOUT4_SCSI)
		return -EINVAL;
	ret = check_fixed_list(in->loc_body.loc_body_val, in->loc_body.loc_body_len,
			       PROTO_BLOCK_EXTENT_XDR_SIZE, PROTO_BLOCK_EXTENTS_MAX);
	if (ret == 0)
		ret = proto_xdr_decode((xdrproc_t)xdr_pnfs_scsi_layout4, out, in->loc_body.loc_body_val,
				       in->loc_body.loc_body_len);
	if (ret == 0 && !scsi_extents_ok(out->sl_extents.sl_extents_val, out->sl_extents.sl_extents_len)) {
		proto_scsi_layout_free(out);
		ret = -EBADMSG;
	}
	return ret;
}

void proto_scsi_layout_free(pnfs_scsi_layout4 *sl)
{
	xdr_free((xdrproc_t)xdr_pnfs_scsi_layout4, (char *)sl);
}

int proto_scsi_layoutupdate_encode(const pnfs_scsi_layoutupdate4 *lu, layoutupdate4 *out)
{
	memset(out, 0, sizeof(*out));
	out->lou_type = LAYOUT4_SCSI;
	return encode_body((xdrproc_t)xdr_pnfs_scsi_layoutupdate4, lu, PROTO_LAYOUT_BODY_MAX,
			   &out->lou_body.lou_body_len, &out->lou_body.lou_body_val);
}

int proto_scsi_layoutupdate_decode(const layoutupdate4 *in, pnfs_scsi_layoutupdate4 *out)
{
	int ret;

	if (in->lou_type != LAYOUT4_SCSI)
		return -EINVAL;
	ret = check_fixed_list(in->lou_body.lou_body_val, in->lou_body.lou_body_len,
			       PROTO_SCSI_RANGE_XDR_SIZE, PROTO_BLOCK_EXTENTS_MAX);
	if (ret == 0)
		ret = proto_xdr_decode((xdrproc_t)xdr_pnfs_scsi_layoutupdate4, out, in->lou_body.lou_body_val,
				       in->lou_body.lou_body_len);
	return ret;
}

void proto_scsi_layoutupdate_free(pnfs_scsi_layoutupdate4 *lu)
{
	xdr_free((xdrproc_t)xdr_pnfs_scsi_layoutupdate4, (char *)lu);
}

/* ---- device addresses ------------------------------------------------------------------------ */

static const uint32_t *block_children(const void *vols, unsigned i, unsigned *n)
{
	const pnfs_block_volume4 *v = (const pnfs_block_volume4 *)vols + i;

	switch (v->type) {
	case PNFS_BLOCK_VOLUME_SLICE:
		*n = 1;
		return &v->pnfs_block_volume4_u.bv_slice_info.bsv_volume;
	case PNFS_BLOCK_VOLUME_CONCAT:
		*n = v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_len;
		return v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val;
	case PNFS_BLOCK_VOLUME_STRIPE:
		*n = v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len;
		return v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val;
	default:
		*n = 0;
		return NULL;
	}
}

static const uint32_t *scsi_children(const void *vols, unsigned i, unsigned *n)
{
	const pnfs_scsi_volume4 *v = (const pnfs_scsi_volume4 *)vols + i;

	switch (v->type) {
	case PNFS_SCSI_VOLUME_SLICE:
		*n = 1;
		return &v->pnfs_scsi_volume4_u.sv_slice_info.ssv_volume;
	case PNFS_SCSI_VOLUME_CONCAT:
		*n = v->pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_len;
		return v->pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_val;
	case PNFS_SCSI_VOLUME_STRIPE:
		*n = v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_len;
		return v->pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_val;
	default:
		*n = 0;
		return NULL;
	}
}

int proto_block_deviceaddr_encode(const pnfs_block_deviceaddr4 *da, device_addr4 *out)
{
	unsigned n = da->bda_volumes.bda_volumes_len;
	int ret;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n > PROTO_BLOCK_VOLUMES_MAX)
		return -EINVAL;
	ret = check_volume_graph(da->bda_volumes.bda_volumes_val, n, block_children);
	if (ret < 0)
		return ret == -EBADMSG ? -EINVAL : ret;
	out->da_layout_type = LAYOUT4_BLOCK_VOLUME;
	return encode_body((xdrproc_t)xdr_pnfs_block_deviceaddr4, da, PROTO_DEVICE_ADDR_MAX,
			   &out->da_addr_body.da_addr_body_len, &out->da_addr_body.da_addr_body_val);
}

int proto_block_deviceaddr_decode(const device_addr4 *in, pnfs_block_deviceaddr4 *out)
{
	int ret;

	if (in->da_layout_type != LAYOUT4_BLOCK_VOLUME)
		return -EINVAL;
	ret = check_volume_list(in->da_addr_body.da_addr_body_val, in->da_addr_body.da_addr_body_len);
	if (ret == 0)
		ret = proto_xdr_decode((xdrproc_t)xdr_pnfs_block_deviceaddr4, out,
				       in->da_addr_body.da_addr_body_val, in->da_addr_body.da_addr_body_len);
	if (ret == 0) {
		ret = check_volume_graph(out->bda_volumes.bda_volumes_val, out->bda_volumes.bda_volumes_len,
					 block_children);
		if (ret < 0)
			proto_block_deviceaddr_free(out);
	}
	return ret;
}

void proto_block_deviceaddr_free(pnfs_block_deviceaddr4 *da)
{
	xdr_free((xdrproc_t)xdr_pnfs_block_deviceaddr4, (char *)da);
}

int proto_scsi_deviceaddr_encode(const pnfs_scsi_deviceaddr4 *da, device_addr4 *out)
{
	unsigned n = da->sda_volumes.sda_volumes_len;
	int ret;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n > PROTO_BLOCK_VOLUMES_MAX)
		return -EINVAL;
	ret = check_volume_graph(da->sda_volumes.sda_volumes_val, n, scsi_children);
	if (ret < 0)
		return ret == -EBADMSG ? -EINVAL : ret;
	out->da_layout_type = LAYOUT4_SCSI;
	return encode_body((xdrproc_t)xdr_pnfs_scsi_deviceaddr4, da, PROTO_DEVICE_ADDR_MAX,
			   &out->da_addr_body.da_addr_body_len, &out->da_addr_body.da_addr_body_val);
}

int proto_scsi_deviceaddr_decode(const device_addr4 *in, pnfs_scsi_deviceaddr4 *out)
{
	int ret;

	if (in->da_layout_type != LAYOUT4_SCSI)
		return -EINVAL;
	ret = check_volume_list(in->da_addr_body.da_addr_body_val, in->da_addr_body.da_addr_body_len);
	if (ret == 0)
		ret = proto_xdr_decode((xdrproc_t)xdr_pnfs_scsi_deviceaddr4, out,
				       in->da_addr_body.da_addr_body_val, in->da_addr_body.da_addr_body_len);
	if (ret == 0) {
		ret = check_volume_graph(out->sda_volumes.sda_volumes_val, out->sda_volumes.sda_volumes_len,
					 scsi_children);
		if (ret < 0)
			proto_scsi_deviceaddr_free(out);
	}
	return ret;
}

void proto_scsi_deviceaddr_free(pnfs_scsi_deviceaddr4 *da)
{
	xdr_free((xdrproc_t)xdr_pnfs_scsi_deviceaddr4, (char *)da);
}

/* ---- either layout type ----------------------------------------------------------------------- */

static int block_extents_encode(const struct proto_extent *e, size_t n, layout_content4 *out)
{
	pnfs_block_extent4 *v = calloc(n ? n : 1, sizeof(*v));
	pnfs_block_layout4 bl;
	int ret;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(v[i].bex_vol_id, e[i].vol_id, NFS4_DEVICEID4_SIZE);
		v[i].bex_file_offset = e[i].file_offset;
		v[i].bex_length = e[i].length;
		v[i].bex_storage_offset = e[i].storage_offset;
		v[i].bex_state = (pnfs_block_extent_state4)e[i].state;
	}
	bl.blo_extents.blo_extents_len = (u_int)n;
	bl.blo_extents.blo_extents_val = v;
	ret = proto_block_layout_encode(&bl, out);
	free(v);
	return ret;
}

static int scsi_extents_encode(const struct proto_extent *e, size_t n, layout_content4 *out)
{
	pnfs_scsi_extent4 *v = calloc(n ? n : 1, sizeof(*v));
	pnfs_scsi_layout4 sl;
	int ret;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(v[i].se_vol_id, e[i].vol_id, NFS4_DEVICEID4_SIZE);
		v[i].se_file_offset = e[i].file_offset;
		v[i].se_length = e[i].length;
		v[i].se_storage_offset = e[i].storage_offset;
		v[i].se_state = (pnfs_scsi_extent_state4)e[i].state;
	}
	sl.sl_extents.sl_extents_len = (u_int)n;
	sl.sl_extents.sl_extents_val = v;
	ret = proto_scsi_layout_encode(&sl, out);
	free(v);
	return ret;
}

static int block_extents_decode(const layout_content4 *in, struct proto_extent **out, size_t *n)
{
	pnfs_block_layout4 bl;
	struct proto_extent *e;
	int ret;

	memset(&bl, 0, sizeof(bl));
	ret = proto_block_layout_decode(in, &bl);
	if (ret)
		return ret;
	*n = bl.blo_extents.blo_extents_len;
	e = calloc(*n ? *n : 1, sizeof(*e));
	for (size_t i = 0; e && i < *n; i++) {
		const pnfs_block_extent4 *x = &bl.blo_extents.blo_extents_val[i];
		memcpy(e[i].vol_id, x->bex_vol_id, NFS4_DEVICEID4_SIZE);
		e[i].file_offset = x->bex_file_offset;
		e[i].length = x->bex_length;
		e[i].storage_offset = x->bex_storage_offset;
		e[i].state = (uint32_t)x->bex_state;
	}
	proto_block_layout_free(&bl);
	*out = e;
	return e ? 0 : -ENOMEM;
}

static int scsi_extents_decode(const layout_content4 *in, struct proto_extent **out, size_t *n)
{
	pnfs_scsi_layout4 sl;
	struct proto_extent *e;
	int ret;

	memset(&sl, 0, sizeof(sl));
	ret = proto_scsi_layout_decode(in, &sl);
	if (ret)
		return ret;
	*n = sl.sl_extents.sl_extents_len;
	e = calloc(*n ? *n : 1, sizeof(*e));
	for (size_t i = 0; e && i < *n; i++) {
		const pnfs_scsi_extent4 *x = &sl.sl_extents.sl_extents_val[i];
		memcpy(e[i].vol_id, x->se_vol_id, NFS4_DEVICEID4_SIZE);
		e[i].file_offset = x->se_file_offset;
		e[i].length = x->se_length;
		e[i].storage_offset = x->se_storage_offset;
		e[i].state = (uint32_t)x->se_state;
	}
	proto_scsi_layout_free(&sl);
	*out = e;
	return e ? 0 : -ENOMEM;
}

/* What differs between the layout types in a layout body: only the rpcgen types it is spelled in. */
static const struct layout_codec {
	layouttype4 type;
	int (*encode)(const struct proto_extent *e, size_t n, layout_content4 *out);
	int (*decode)(const layout_content4 *in, struct proto_extent **e, size_t *n);
} layout_codecs[] = {
	{ LAYOUT4_BLOCK_VOLUME, block_extents_encode, block_extents_decode },
	{ LAYOUT4_SCSI, scsi_extents_encode, scsi_extents_decode },
};

static const struct layout_codec *codec_of(layouttype4 type)
{
	for (size_t i = 0; i < sizeof(layout_codecs) / sizeof(layout_codecs[0]); i++)
		if (layout_codecs[i].type == type)
			return &layout_codecs[i];
	return NULL;
}

int proto_layout_extents_encode(layouttype4 type, const struct proto_extent *e, size_t n, layout_content4 *out)
{
	const struct layout_codec *k = codec_of(type);

	memset(out, 0, sizeof(*out));
	return k ? k->encode(e, n, out) : -EINVAL;
}

int proto_layout_extents_decode(const layout_content4 *in, struct proto_extent **e, size_t *n)
{
	const struct layout_codec *k = codec_of(in->loc_type);

	*e = NULL;
	*n = 0;
	return k ? k->decode(in, e, n) : -EINVAL;
}
