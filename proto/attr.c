/* fattr4 coding: attribute values laid out one after another in bit order inside attr_vals.
 * Each supported attribute has one case in attr_code(), used for both directions, so encoding and
 * decoding cannot drift apart; values land in fixed-size fields, so a hostile length cannot make
 * the decoder allocate. An attribute we do not know ends decoding: its size is unknowable. */
#include "proto/attr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BIT(bit) (1u << ((bit) % 32))

/* Bits 0..31, 32..63, 64..95 of the supported set; keep proto_fattr and attr_code() in step. */
const struct proto_attrmask proto_attr_supported = { .w = {
	[0] = BIT(FATTR4_SUPPORTED_ATTRS) | BIT(FATTR4_TYPE) | BIT(FATTR4_FH_EXPIRE_TYPE) |
	      BIT(FATTR4_CHANGE) | BIT(FATTR4_SIZE) | BIT(FATTR4_LINK_SUPPORT) |
	      BIT(FATTR4_SYMLINK_SUPPORT) | BIT(FATTR4_NAMED_ATTR) | BIT(FATTR4_FSID) |
	      BIT(FATTR4_UNIQUE_HANDLES) | BIT(FATTR4_LEASE_TIME) | BIT(FATTR4_RDATTR_ERROR) |
	      BIT(FATTR4_ACLSUPPORT) | BIT(FATTR4_CANSETTIME) | BIT(FATTR4_CASE_INSENSITIVE) |
	      BIT(FATTR4_CASE_PRESERVING) | BIT(FATTR4_CHOWN_RESTRICTED) | BIT(FATTR4_FILEHANDLE) |
	      BIT(FATTR4_FILEID) | BIT(FATTR4_FILES_AVAIL) | BIT(FATTR4_FILES_FREE) |
	      BIT(FATTR4_FILES_TOTAL) | BIT(FATTR4_HOMOGENEOUS) | BIT(FATTR4_MAXFILESIZE) |
	      BIT(FATTR4_MAXLINK) | BIT(FATTR4_MAXNAME) | BIT(FATTR4_MAXREAD) | BIT(FATTR4_MAXWRITE),
	[1] = BIT(FATTR4_MODE) | BIT(FATTR4_NO_TRUNC) | BIT(FATTR4_NUMLINKS) | BIT(FATTR4_OWNER) |
	      BIT(FATTR4_OWNER_GROUP) | BIT(FATTR4_RAWDEV) | BIT(FATTR4_SPACE_AVAIL) |
	      BIT(FATTR4_SPACE_FREE) | BIT(FATTR4_SPACE_TOTAL) | BIT(FATTR4_SPACE_USED) |
	      BIT(FATTR4_TIME_ACCESS) | BIT(FATTR4_TIME_ACCESS_SET) | BIT(FATTR4_TIME_CREATE) |
	      BIT(FATTR4_TIME_DELTA) | BIT(FATTR4_TIME_METADATA) | BIT(FATTR4_TIME_MODIFY) |
	      BIT(FATTR4_TIME_MODIFY_SET) | BIT(FATTR4_MOUNTED_ON_FILEID) |
	      BIT(FATTR4_FS_LAYOUT_TYPES) | BIT(FATTR4_LAYOUT_HINT),
	[2] = BIT(FATTR4_LAYOUT_TYPES) | BIT(FATTR4_LAYOUT_BLKSIZE) | BIT(FATTR4_LAYOUT_ALIGNMENT) |
	      BIT(FATTR4_SUPPATTR_EXCLCREAT),
} };

/* RFC 8881 §5.6/5.7 read-write attributes among those we support. */
const struct proto_attrmask proto_attr_writable = { .w = {
	[0] = BIT(FATTR4_SIZE),
	[1] = BIT(FATTR4_MODE) | BIT(FATTR4_OWNER) | BIT(FATTR4_OWNER_GROUP) |
	      BIT(FATTR4_TIME_ACCESS_SET) | BIT(FATTR4_TIME_CREATE) | BIT(FATTR4_TIME_MODIFY_SET) |
	      BIT(FATTR4_LAYOUT_HINT),
} };

const struct proto_attrmask proto_attr_writeonly = { .w = {
	[1] = BIT(FATTR4_TIME_ACCESS_SET) | BIT(FATTR4_TIME_MODIFY_SET),
} };

static const char *const attr_names[] = {
	[0] = "supported_attrs",
	[1] = "type",
	[2] = "fh_expire_type",
	[3] = "change",
	[4] = "size",
	[5] = "link_support",
	[6] = "symlink_support",
	[7] = "named_attr",
	[8] = "fsid",
	[9] = "unique_handles",
	[10] = "lease_time",
	[11] = "rdattr_error",
	[12] = "acl",
	[13] = "aclsupport",
	[14] = "archive",
	[15] = "cansettime",
	[16] = "case_insensitive",
	[17] = "case_preserving",
	[18] = "chown_restricted",
	[19] = "filehandle",
	[20] = "fileid",
	[21] = "files_avail",
	[22] = "files_free",
	[23] = "files_total",
	[24] = "fs_locations",
	[25] = "hidden",
	[26] = "homogeneous",
	[27] = "maxfilesize",
	[28] = "maxlink",
	[29] = "maxname",
	[30] = "maxread",
	[31] = "maxwrite",
	[32] = "mimetype",
	[33] = "mode",
	[34] = "no_trunc",
	[35] = "numlinks",
	[36] = "owner",
	[37] = "owner_group",
	[38] = "quota_avail_hard",
	[39] = "quota_avail_soft",
	[40] = "quota_used",
	[41] = "rawdev",
	[42] = "space_avail",
	[43] = "space_free",
	[44] = "space_total",
	[45] = "space_used",
	[46] = "system",
	[47] = "time_access",
	[48] = "time_access_set",
	[49] = "time_backup",
	[50] = "time_create",
	[51] = "time_delta",
	[52] = "time_metadata",
	[53] = "time_modify",
	[54] = "time_modify_set",
	[55] = "mounted_on_fileid",
	[56] = "dir_notif_delay",
	[57] = "dirent_notif_delay",
	[58] = "dacl",
	[59] = "sacl",
	[60] = "change_policy",
	[61] = "fs_status",
	[62] = "fs_layout_types",
	[63] = "layout_hint",
	[64] = "layout_types",
	[65] = "layout_blksize",
	[66] = "layout_alignment",
	[67] = "fs_locations_info",
	[68] = "mdsthreshold",
	[69] = "retention_get",
	[70] = "retention_set",
	[71] = "retentevt_get",
	[72] = "retentevt_set",
	[73] = "retention_hold",
	[74] = "mode_set_masked",
	[75] = "suppattr_exclcreat",
	[76] = "fs_charset_cap",
};

const char *proto_attr_name(unsigned bit)
{
	if (bit < sizeof(attr_names) / sizeof(attr_names[0]) && attr_names[bit])
		return attr_names[bit];
	return "unknown";
}

int proto_attrmask_empty(const struct proto_attrmask *m)
{
	for (unsigned i = 0; i < PROTO_BITMAP_MAX; i++)
		if (m->w[i])
			return 0;
	return 1;
}

void proto_attrmask_and(struct proto_attrmask *out, const struct proto_attrmask *a, const struct proto_attrmask *b)
{
	for (unsigned i = 0; i < PROTO_BITMAP_MAX; i++)
		out->w[i] = a->w[i] & b->w[i];
}

void proto_attrmask_andnot(struct proto_attrmask *out, const struct proto_attrmask *a,
			   const struct proto_attrmask *b)
{
	for (unsigned i = 0; i < PROTO_BITMAP_MAX; i++)
		out->w[i] = a->w[i] & ~b->w[i];
}

void proto_attrmask_from_bitmap4(struct proto_attrmask *m, const bitmap4 *b)
{
	memset(m, 0, sizeof(*m));
	for (u_int i = 0; i < b->bitmap4_len && i < PROTO_BITMAP_MAX; i++)
		m->w[i] = b->bitmap4_val[i];
}

static unsigned mask_words(const struct proto_attrmask *m)
{
	unsigned n = PROTO_BITMAP_MAX;

	while (n > 0 && m->w[n - 1] == 0)
		n--;
	return n;
}

int proto_attrmask_to_bitmap4(const struct proto_attrmask *m, bitmap4 *out)
{
	unsigned n = mask_words(m);

	out->bitmap4_len = 0;
	out->bitmap4_val = NULL;
	if (n == 0)
		return 0;
	out->bitmap4_val = malloc(n * sizeof(uint32_t));
	if (!out->bitmap4_val)
		return -ENOMEM;
	memcpy(out->bitmap4_val, m->w, n * sizeof(uint32_t));
	out->bitmap4_len = n;
	return 0;
}

/* ---- value coders: one function per shape, both directions ------------------------------------ */

/* XDR booleans are 0 or 1 (RFC 4506 §4.4); anything else is malformed, not "true", so that a
 * decoded value encodes back to the same bytes. */
static bool_t code_bool(XDR *x, bool *v)
{
	uint32_t t = *v ? 1 : 0;

	if (!xdr_uint32_t(x, &t) || t > 1)
		return FALSE;
	*v = t == 1;
	return TRUE;
}

static bool_t code_mask(XDR *x, struct proto_attrmask *m)
{
	u_int n = mask_words(m);

	if (!xdr_u_int(x, &n) || n > PROTO_BITMAP_MAX)
		return FALSE;
	if (x->x_op == XDR_DECODE)
		memset(m, 0, sizeof(*m));
	for (u_int i = 0; i < n; i++)
		if (!xdr_uint32_t(x, &m->w[i]))
			return FALSE;
	return TRUE;
}

/* owner/owner_group: a counted string into a fixed buffer, NUL-terminated, no NUL inside. */
static bool_t code_owner(XDR *x, char *s)
{
	u_int n = 0;

	if (x->x_op == XDR_ENCODE) {
		n = (u_int)strnlen(s, PROTO_ATTR_OWNER_MAX + 1);
		if (n > PROTO_ATTR_OWNER_MAX)
			return FALSE;
	}
	if (!xdr_u_int(x, &n) || n > PROTO_ATTR_OWNER_MAX || !xdr_opaque(x, s, n))
		return FALSE;
	if (x->x_op == XDR_DECODE) {
		s[n] = 0;
		if (strlen(s) != n)
			return FALSE;
	}
	return TRUE;
}

static bool_t code_types(XDR *x, uint32_t *len, layouttype4 *types)
{
	if (!xdr_uint32_t(x, len) || *len > PROTO_LAYOUT_TYPES_MAX)
		return FALSE;
	for (uint32_t i = 0; i < *len; i++)
		if (!xdr_layouttype4(x, &types[i]))
			return FALSE;
	return TRUE;
}

/* settime4's union has a default arm; only the two RFC values are accepted. */
static bool_t code_settime(XDR *x, settime4 *t)
{
	return xdr_settime4(x, t) && (t->set_it == SET_TO_SERVER_TIME4 || t->set_it == SET_TO_CLIENT_TIME4);
}

static bool_t attr_code(XDR *x, unsigned bit, struct proto_fattr *a)
{
	switch (bit) {
	case FATTR4_SUPPORTED_ATTRS: return code_mask(x, &a->supported_attrs);
	case FATTR4_TYPE:
		return xdr_nfs_ftype4(x, &a->type) && a->type >= NF4REG && a->type <= NF4NAMEDATTR;
	case FATTR4_FH_EXPIRE_TYPE: return xdr_uint32_t(x, &a->fh_expire_type);
	case FATTR4_CHANGE: return xdr_uint64_t(x, &a->change);
	case FATTR4_SIZE: return xdr_uint64_t(x, &a->size);
	case FATTR4_LINK_SUPPORT: return code_bool(x, &a->link_support);
	case FATTR4_SYMLINK_SUPPORT: return code_bool(x, &a->symlink_support);
	case FATTR4_NAMED_ATTR: return code_bool(x, &a->named_attr);
	case FATTR4_FSID: return xdr_fsid4(x, &a->fsid);
	case FATTR4_UNIQUE_HANDLES: return code_bool(x, &a->unique_handles);
	case FATTR4_LEASE_TIME: return xdr_uint32_t(x, &a->lease_time);
	case FATTR4_RDATTR_ERROR: return xdr_nfsstat4(x, &a->rdattr_error);
	case FATTR4_ACLSUPPORT: return xdr_uint32_t(x, &a->aclsupport);
	case FATTR4_CANSETTIME: return code_bool(x, &a->cansettime);
	case FATTR4_CASE_INSENSITIVE: return code_bool(x, &a->case_insensitive);
	case FATTR4_CASE_PRESERVING: return code_bool(x, &a->case_preserving);
	case FATTR4_CHOWN_RESTRICTED: return code_bool(x, &a->chown_restricted);
	case FATTR4_FILEHANDLE:
		return xdr_uint32_t(x, &a->filehandle.len) && a->filehandle.len <= NFS4_FHSIZE &&
		       xdr_opaque(x, (char *)a->filehandle.val, a->filehandle.len);
	case FATTR4_FILEID: return xdr_uint64_t(x, &a->fileid);
	case FATTR4_FILES_AVAIL: return xdr_uint64_t(x, &a->files_avail);
	case FATTR4_FILES_FREE: return xdr_uint64_t(x, &a->files_free);
	case FATTR4_FILES_TOTAL: return xdr_uint64_t(x, &a->files_total);
	case FATTR4_HOMOGENEOUS: return code_bool(x, &a->homogeneous);
	case FATTR4_MAXFILESIZE: return xdr_uint64_t(x, &a->maxfilesize);
	case FATTR4_MAXLINK: return xdr_uint32_t(x, &a->maxlink);
	case FATTR4_MAXNAME: return xdr_uint32_t(x, &a->maxname);
	case FATTR4_MAXREAD: return xdr_uint64_t(x, &a->maxread);
	case FATTR4_MAXWRITE: return xdr_uint64_t(x, &a->maxwrite);
	case FATTR4_MODE: return xdr_uint32_t(x, &a->mode);
	case FATTR4_NO_TRUNC: return code_bool(x, &a->no_trunc);
	case FATTR4_NUMLINKS: return xdr_uint32_t(x, &a->numlinks);
	case FATTR4_OWNER: return code_owner(x, a->owner);
	case FATTR4_OWNER_GROUP: return code_owner(x, a->owner_group);
	case FATTR4_RAWDEV: return xdr_specdata4(x, &a->rawdev);
	case FATTR4_SPACE_AVAIL: return xdr_uint64_t(x, &a->space_avail);
	case FATTR4_SPACE_FREE: return xdr_uint64_t(x, &a->space_free);
	case FATTR4_SPACE_TOTAL: return xdr_uint64_t(x, &a->space_total);
	case FATTR4_SPACE_USED: return xdr_uint64_t(x, &a->space_used);
	case FATTR4_TIME_ACCESS: return xdr_nfstime4(x, &a->time_access);
	case FATTR4_TIME_ACCESS_SET: return code_settime(x, &a->time_access_set);
	case FATTR4_TIME_CREATE: return xdr_nfstime4(x, &a->time_create);
	case FATTR4_TIME_DELTA: return xdr_nfstime4(x, &a->time_delta);
	case FATTR4_TIME_METADATA: return xdr_nfstime4(x, &a->time_metadata);
	case FATTR4_TIME_MODIFY: return xdr_nfstime4(x, &a->time_modify);
	case FATTR4_TIME_MODIFY_SET: return code_settime(x, &a->time_modify_set);
	case FATTR4_MOUNTED_ON_FILEID: return xdr_uint64_t(x, &a->mounted_on_fileid);
	case FATTR4_FS_LAYOUT_TYPES: return code_types(x, &a->fs_layout_types_len, a->fs_layout_types);
	case FATTR4_LAYOUT_HINT:
		return xdr_layouttype4(x, &a->layout_hint.loh_type) && xdr_uint32_t(x, &a->layout_hint.len) &&
		       a->layout_hint.len <= PROTO_LAYOUTHINT_BODY_MAX &&
		       xdr_opaque(x, (char *)a->layout_hint.body, a->layout_hint.len);
	case FATTR4_LAYOUT_TYPES: return code_types(x, &a->layout_types_len, a->layout_types);
	case FATTR4_LAYOUT_BLKSIZE: return xdr_uint32_t(x, &a->layout_blksize);
	case FATTR4_LAYOUT_ALIGNMENT: return xdr_uint32_t(x, &a->layout_alignment);
	case FATTR4_SUPPATTR_EXCLCREAT: return code_mask(x, &a->suppattr_exclcreat);
	}
	return FALSE;
}

/* The largest attr_vals our supported set can produce: two owners and a layout hint at their caps,
 * a filehandle, two bitmaps, two layout-type lists, and under 1 KiB of fixed-size values. */
#define ATTR_ENCODE_MAX (3 * (8 + PROTO_UTF8STR_MAX) + 8 + NFS4_FHSIZE + \
			 2 * 4 * (1 + PROTO_BITMAP_MAX) + 2 * 4 * (1 + PROTO_LAYOUT_TYPES_MAX) + 1024)

int proto_fattr_encode(const struct proto_fattr *a, const struct proto_attrmask *request, fattr4 *out)
{
	struct proto_attrmask want, done = { { 0 } };
	struct proto_fattr tmp;
	char *buf;
	XDR x;
	int ret = -EINVAL;

	memset(out, 0, sizeof(*out));
	proto_attrmask_and(&want, &a->mask, &proto_attr_supported);
	if (request)
		proto_attrmask_and(&want, &want, request);
	buf = malloc(ATTR_ENCODE_MAX);
	if (!buf)
		return -ENOMEM;
	/* The coders take non-const pointers for both directions; encode from a copy. */
	memcpy(&tmp, a, sizeof(tmp));
	xdrmem_create(&x, buf, ATTR_ENCODE_MAX, XDR_ENCODE);
	for (unsigned bit = 0; bit < 32 * PROTO_BITMAP_MAX; bit++) {
		if (!proto_attrmask_isset(&want, bit))
			continue;
		if (!attr_code(&x, bit, &tmp))
			goto out;
		proto_attrmask_set(&done, bit);
	}
	ret = proto_attrmask_to_bitmap4(&done, &out->attrmask);
	if (ret < 0)
		goto out;
	out->attr_vals.attrlist4_len = xdr_getpos(&x);
	if (out->attr_vals.attrlist4_len) {
		out->attr_vals.attrlist4_val = malloc(out->attr_vals.attrlist4_len);
		if (!out->attr_vals.attrlist4_val) {
			ret = -ENOMEM;
			goto out;
		}
		memcpy(out->attr_vals.attrlist4_val, buf, out->attr_vals.attrlist4_len);
	}
	ret = 0;
out:
	if (ret < 0)
		xdr_free((xdrproc_t)xdr_fattr4, (char *)out);
	xdr_destroy(&x);
	free(buf);
	return ret;
}

int proto_fattr_decode(const fattr4 *in, struct proto_fattr *a, struct proto_attrmask *unsupported)
{
	struct proto_attrmask mask, unsup;
	u_int len = in->attr_vals.attrlist4_len;
	XDR x;
	int ret = -EBADMSG;

	memset(a, 0, sizeof(*a));
	if (unsupported)
		memset(unsupported, 0, sizeof(*unsupported));
	if (in->attrmask.bitmap4_len > PROTO_BITMAP_MAX || len > PROTO_ATTRLIST_MAX)
		return -EBADMSG;
	proto_attrmask_from_bitmap4(&mask, &in->attrmask);
	proto_attrmask_andnot(&unsup, &mask, &proto_attr_supported);
	if (unsupported)
		*unsupported = unsup;
	xdrmem_create(&x, in->attr_vals.attrlist4_val ? in->attr_vals.attrlist4_val : (char *)"", len,
		      XDR_DECODE);
	for (unsigned bit = 0; bit < 32 * PROTO_BITMAP_MAX; bit++) {
		if (!proto_attrmask_isset(&mask, bit))
			continue;
		if (proto_attrmask_isset(&unsup, bit)) {
			ret = -ENOTSUP;
			goto out;
		}
		if (!attr_code(&x, bit, a))
			goto out;
		proto_attrmask_set(&a->mask, bit);
	}
	if (xdr_getpos(&x) != len)
		goto out;
	ret = 0;
out:
	xdr_destroy(&x);
	return ret;
}
