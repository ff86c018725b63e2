/* fattr4 values: every supported attribute round-trips through the C struct, encoding follows the
 * request and is byte-for-byte deterministic (VERIFY compares bytes), a known answer written from
 * RFC 8881's layout, and unsupported or malformed attributes are reported, not guessed at. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct proto_fattr *full_fattr(void)
{
	struct proto_fattr *a = calloc(1, sizeof(*a));

	a->supported_attrs = proto_attr_supported;
	a->type = NF4DIR;
	a->fh_expire_type = FH4_VOLATILE_ANY;
	a->change = 0x0102030405060708ull;
	a->size = 1ull << 40;
	a->link_support = true;
	a->symlink_support = true;
	a->named_attr = false;
	a->fsid = (fsid4){ 0x11, 0x22 };
	a->unique_handles = true;
	a->lease_time = 90;
	a->rdattr_error = NFS4ERR_ACCESS;
	a->aclsupport = 0;
	a->cansettime = true;
	a->case_insensitive = false;
	a->case_preserving = true;
	a->chown_restricted = true;
	a->filehandle.len = NFS4_FHSIZE;
	test_fill_random(a->filehandle.val, NFS4_FHSIZE, 5);
	a->fileid = 77;
	a->files_avail = 1000;
	a->files_free = 1001;
	a->files_total = 1002;
	a->homogeneous = true;
	a->maxfilesize = NFS4_MAXFILELEN;
	a->maxlink = 255;
	a->maxname = 255;
	a->maxread = 1 << 20;
	a->maxwrite = 1 << 20;
	a->mode = 02755;
	a->no_trunc = true;
	a->numlinks = 3;
	memset(a->owner, 'o', PROTO_ATTR_OWNER_MAX); /* at the cap */
	strcpy(a->owner_group, "wheel@example.org");
	a->rawdev = (specdata4){ 8, 1 };
	a->space_avail = 5;
	a->space_free = 6;
	a->space_total = 7;
	a->space_used = 8;
	a->time_access = (nfstime4){ -5, 999999999 }; /* before 1970 */
	a->time_access_set.set_it = SET_TO_SERVER_TIME4;
	a->time_create = (nfstime4){ 1, 2 };
	a->time_delta = (nfstime4){ 0, 1 };
	a->time_metadata = (nfstime4){ 3, 4 };
	a->time_modify = (nfstime4){ 5, 6 };
	a->time_modify_set.set_it = SET_TO_CLIENT_TIME4;
	a->time_modify_set.settime4_u.time = (nfstime4){ 7, 8 };
	a->mounted_on_fileid = 2;
	a->fs_layout_types_len = 2;
	a->fs_layout_types[0] = LAYOUT4_BLOCK_VOLUME;
	a->fs_layout_types[1] = LAYOUT4_SCSI;
	a->layout_hint.loh_type = LAYOUT4_BLOCK_VOLUME;
	a->layout_hint.len = 8;
	memcpy(a->layout_hint.body, "\0\0\0\0\0\0\0\x1e", 8);
	a->layout_types_len = 1;
	a->layout_types[0] = LAYOUT4_BLOCK_VOLUME;
	a->layout_blksize = 4096;
	a->layout_alignment = 1 << 20;
	proto_attrmask_set(&a->suppattr_exclcreat, FATTR4_SIZE);
	proto_attrmask_set(&a->suppattr_exclcreat, FATTR4_MODE);
	a->mask = proto_attr_supported;
	return a;
}

static void roundtrip_every_supported(void)
{
	struct proto_fattr *a = full_fattr(), *d = calloc(1, sizeof(*d));
	struct proto_attrmask got, unsup;
	fattr4 f;

	CU_ASSERT_FATAL(proto_fattr_encode(a, NULL, &f) == 0);
	proto_attrmask_from_bitmap4(&got, &f.attrmask);
	CU_ASSERT(memcmp(&got, &proto_attr_supported, sizeof(got)) == 0);
	CU_ASSERT_FATAL(proto_fattr_decode(&f, d, &unsup) == 0);
	CU_ASSERT(proto_attrmask_empty(&unsup));
	/* Both structs started zeroed, so every byte, padding included, must agree. */
	CU_ASSERT(memcmp(a, d, sizeof(*a)) == 0);
	CU_ASSERT_EQUAL(d->time_access.seconds, -5);
	CU_ASSERT_EQUAL(strlen(d->owner), PROTO_ATTR_OWNER_MAX);
	/* Every truncation of the values is malformed, and so is a trailing word. */
	for (u_int cut = 0; cut < f.attr_vals.attrlist4_len; cut++) {
		fattr4 t = f;
		char *p = malloc(cut ? cut : 1);
		memcpy(p, f.attr_vals.attrlist4_val, cut);
		t.attr_vals.attrlist4_len = cut;
		t.attr_vals.attrlist4_val = p;
		CU_ASSERT(proto_fattr_decode(&t, d, NULL) == -EBADMSG);
		free(p);
	}
	{
		fattr4 t = f;
		char *p = calloc(1, f.attr_vals.attrlist4_len + 4);
		memcpy(p, f.attr_vals.attrlist4_val, f.attr_vals.attrlist4_len);
		t.attr_vals.attrlist4_len += 4;
		t.attr_vals.attrlist4_val = p;
		CU_ASSERT(proto_fattr_decode(&t, d, NULL) == -EBADMSG);
		free(p);
	}
	proto_xdr_free((xdrproc_t)xdr_fattr4, &f);
	free(a);
	free(d);
}

static void request_and_determinism(void)
{
	struct proto_fattr *a = full_fattr(), *d = calloc(1, sizeof(*d));
	struct proto_attrmask req = { { 0 } }, got;
	fattr4 f1, f2;

	proto_attrmask_set(&req, FATTR4_SIZE);
	proto_attrmask_set(&req, FATTR4_ACL); /* not supported: silently not returned */
	proto_attrmask_set(&req, FATTR4_LAYOUT_BLKSIZE);
	proto_attrmask_set(&req, 200);        /* beyond any attribute */
	proto_attrmask_clear(&a->mask, FATTR4_LAYOUT_BLKSIZE); /* not valid in a: not returned */
	CU_ASSERT_FATAL(proto_fattr_encode(a, &req, &f1) == 0);
	proto_attrmask_from_bitmap4(&got, &f1.attrmask);
	CU_ASSERT(proto_attrmask_isset(&got, FATTR4_SIZE));
	CU_ASSERT(!proto_attrmask_isset(&got, FATTR4_ACL));
	CU_ASSERT(!proto_attrmask_isset(&got, FATTR4_LAYOUT_BLKSIZE));
	CU_ASSERT_EQUAL(f1.attrmask.bitmap4_len, 1); /* trailing zero words dropped */
	CU_ASSERT_EQUAL(f1.attr_vals.attrlist4_len, 8);
	CU_ASSERT_FATAL(proto_fattr_decode(&f1, d, NULL) == 0);
	CU_ASSERT_EQUAL(d->size, 1ull << 40);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &f1);
	/* Same input, same bytes. */
	CU_ASSERT_FATAL(proto_fattr_encode(a, NULL, &f1) == 0);
	CU_ASSERT_FATAL(proto_fattr_encode(a, NULL, &f2) == 0);
	CU_ASSERT(f1.attr_vals.attrlist4_len == f2.attr_vals.attrlist4_len &&
		  memcmp(f1.attr_vals.attrlist4_val, f2.attr_vals.attrlist4_val, f1.attr_vals.attrlist4_len) == 0);
	CU_ASSERT(f1.attrmask.bitmap4_len == f2.attrmask.bitmap4_len &&
		  memcmp(f1.attrmask.bitmap4_val, f2.attrmask.bitmap4_val, 4 * f1.attrmask.bitmap4_len) == 0);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &f1);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &f2);
	/* Nothing valid: an empty bitmap and no values. */
	memset(&a->mask, 0, sizeof(a->mask));
	CU_ASSERT_FATAL(proto_fattr_encode(a, NULL, &f1) == 0);
	CU_ASSERT(f1.attrmask.bitmap4_len == 0 && f1.attr_vals.attrlist4_len == 0);
	CU_ASSERT(proto_fattr_decode(&f1, d, NULL) == 0 && proto_attrmask_empty(&d->mask));
	proto_xdr_free((xdrproc_t)xdr_fattr4, &f1);
	free(a);
	free(d);
}

/* size (bit 4), mode (33) and owner (36), laid out by hand per RFC 8881 §3.3.7/§5: a 2-word
 * bitmap, then the values in bit order, the owner as a length and padded bytes. */
static void known_answer(void)
{
	static const uint8_t bitmap_want[] = { 0, 0, 0, 2, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x12 };
	static const uint8_t vals_want[] = {
		0, 0, 0, 0, 0, 0x12, 0xd6, 0x87, /* size 1234567 */
		0, 0, 0x01, 0xa4,                /* mode 0644 */
		0, 0, 0, 5, 'a', 'l', 'i', 'c', 'e', 0, 0, 0,
	};
	struct proto_fattr *a = calloc(1, sizeof(*a));
	fattr4 f;
	void *bits;
	size_t blen;

	a->size = 1234567;
	a->mode = 0644;
	strcpy(a->owner, "alice");
	proto_fattr_set(a, FATTR4_SIZE);
	proto_fattr_set(a, FATTR4_MODE);
	proto_fattr_set(a, FATTR4_OWNER);
	CU_ASSERT_FATAL(proto_fattr_encode(a, NULL, &f) == 0);
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_bitmap4, &f.attrmask, &bits, &blen) == 0);
	CU_ASSERT(blen == sizeof(bitmap_want) && memcmp(bits, bitmap_want, blen) == 0);
	CU_ASSERT(f.attr_vals.attrlist4_len == sizeof(vals_want) &&
		  memcmp(f.attr_vals.attrlist4_val, vals_want, sizeof(vals_want)) == 0);
	free(bits);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &f);
	free(a);
}

static fattr4 raw_fattr(uint32_t *words, u_int nwords, void *vals, u_int vlen)
{
	fattr4 f;
	f.attrmask.bitmap4_len = nwords;
	f.attrmask.bitmap4_val = words;
	f.attr_vals.attrlist4_len = vlen;
	f.attr_vals.attrlist4_val = vals;
	return f;
}

static void unsupported_reported(void)
{
	struct proto_fattr *d = calloc(1, sizeof(*d));
	struct proto_attrmask unsup;
	/* type, size, acl (unsupported), fileid: values before acl decode, acl stops decoding. */
	uint32_t w[1] = { 1u << FATTR4_TYPE | 1u << FATTR4_SIZE | 1u << FATTR4_ACL | 1u << FATTR4_FILEID };
	uint8_t vals[32] = { 0, 0, 0, NF4REG };
	fattr4 f = raw_fattr(w, 1, vals, sizeof(vals));
	uint32_t far[6] = { 0, 0, 0, 0, 0, 1 };

	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, &unsup), -ENOTSUP);
	CU_ASSERT(proto_attrmask_isset(&unsup, FATTR4_ACL));
	CU_ASSERT(!proto_attrmask_isset(&unsup, FATTR4_SIZE) && !proto_attrmask_isset(&unsup, FATTR4_FILEID));
	CU_ASSERT(proto_attrmask_isset(&d->mask, FATTR4_TYPE) && d->type == NF4REG);
	CU_ASSERT(proto_attrmask_isset(&d->mask, FATTR4_SIZE));
	CU_ASSERT(!proto_attrmask_isset(&d->mask, FATTR4_FILEID));
	/* A bit in word 5 (attribute 160) is reported too. */
	f = raw_fattr(far, 6, vals, 0);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, &unsup), -ENOTSUP);
	CU_ASSERT(proto_attrmask_isset(&unsup, 160));
	/* Bitmaps longer than the cap are malformed. */
	{
		uint32_t nine[PROTO_BITMAP_MAX + 1] = { 0 };
		f = raw_fattr(nine, PROTO_BITMAP_MAX + 1, vals, 0);
		CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	}
	free(d);
}

static void malformed_values(void)
{
	struct proto_fattr *d = calloc(1, sizeof(*d));
	uint32_t w0, w1[2];
	uint8_t v[2048];
	fattr4 f;

	/* owner: a NUL inside, and a length over the cap. */
	w1[0] = 0;
	w1[1] = 1u << (FATTR4_OWNER - 32);
	memcpy(v, "\0\0\0\x04" "ab\0c", 8);
	f = raw_fattr(w1, 2, v, 8);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	memset(v, 0, sizeof(v));
	v[2] = (PROTO_ATTR_OWNER_MAX + 1) >> 8;
	v[3] = (PROTO_ATTR_OWNER_MAX + 1) & 0xff;
	f = raw_fattr(w1, 2, v, 4 + PROTO_ATTR_OWNER_MAX + 4);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	/* filehandle of 129 bytes. */
	w0 = 1u << FATTR4_FILEHANDLE;
	memset(v, 0, sizeof(v));
	v[3] = NFS4_FHSIZE + 1;
	f = raw_fattr(&w0, 1, v, 4 + 132);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	/* type 0 and 10 are not file types. */
	w0 = 1u << FATTR4_TYPE;
	memset(v, 0, sizeof(v));
	f = raw_fattr(&w0, 1, v, 4);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	v[3] = 10;
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	/* fs_layout_types: 9 types is over the cap. */
	w1[0] = 0;
	w1[1] = 1u << (FATTR4_FS_LAYOUT_TYPES - 32);
	memset(v, 0, sizeof(v));
	v[3] = PROTO_LAYOUT_TYPES_MAX + 1;
	f = raw_fattr(w1, 2, v, 4 + 4 * (PROTO_LAYOUT_TYPES_MAX + 1));
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	/* time_modify_set with set_it 2. */
	w1[1] = 1u << (FATTR4_TIME_MODIFY_SET - 32);
	memset(v, 0, sizeof(v));
	v[3] = 2;
	f = raw_fattr(w1, 2, v, 4);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	/* A boolean of 2. */
	w0 = 1u << FATTR4_LINK_SUPPORT;
	memset(v, 0, sizeof(v));
	v[3] = 2;
	f = raw_fattr(&w0, 1, v, 4);
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	v[3] = 1;
	CU_ASSERT(proto_fattr_decode(&f, d, NULL) == 0 && d->link_support);
	/* supported_attrs value claiming 9 words. */
	w0 = 1u << FATTR4_SUPPORTED_ATTRS;
	memset(v, 0, sizeof(v));
	v[3] = PROTO_BITMAP_MAX + 1;
	f = raw_fattr(&w0, 1, v, 4 + 4 * (PROTO_BITMAP_MAX + 1));
	CU_ASSERT_EQUAL(proto_fattr_decode(&f, d, NULL), -EBADMSG);
	/* An owner the encoder cannot send (no terminator within the cap). */
	{
		struct proto_fattr *a = calloc(1, sizeof(*a));
		memset(a->owner, 'x', sizeof(a->owner));
		proto_fattr_set(a, FATTR4_OWNER);
		CU_ASSERT_EQUAL(proto_fattr_encode(a, NULL, &f), -EINVAL);
		CU_ASSERT(f.attrmask.bitmap4_val == NULL && f.attr_vals.attrlist4_val == NULL);
		free(a);
	}
	free(d);
}

static void masks_and_names(void)
{
	struct proto_attrmask m, out;
	bitmap4 b;

	/* What SETATTR may set and what is write-only are supported attributes. */
	proto_attrmask_andnot(&m, &proto_attr_writable, &proto_attr_supported);
	CU_ASSERT(proto_attrmask_empty(&m));
	proto_attrmask_andnot(&m, &proto_attr_writeonly, &proto_attr_writable);
	CU_ASSERT(proto_attrmask_empty(&m));
	CU_ASSERT(proto_attrmask_isset(&proto_attr_writable, FATTR4_SIZE));
	CU_ASSERT(!proto_attrmask_isset(&proto_attr_writable, FATTR4_TYPE));
	CU_ASSERT(proto_attrmask_isset(&proto_attr_writeonly, FATTR4_TIME_MODIFY_SET));
	/* The REQUIRED attributes (RFC 8881 §5.6) are all supported. */
	for (unsigned bit = 0; bit <= FATTR4_RDATTR_ERROR; bit++)
		CU_ASSERT(proto_attrmask_isset(&proto_attr_supported, bit));
	CU_ASSERT(proto_attrmask_isset(&proto_attr_supported, FATTR4_FILEHANDLE));
	CU_ASSERT(proto_attrmask_isset(&proto_attr_supported, FATTR4_SUPPATTR_EXCLCREAT));
	CU_ASSERT_STRING_EQUAL(proto_attr_name(FATTR4_MODE), "mode");
	CU_ASSERT_STRING_EQUAL(proto_attr_name(FATTR4_FS_LAYOUT_TYPES), "fs_layout_types");
	CU_ASSERT_STRING_EQUAL(proto_attr_name(FATTR4_LAYOUT_ALIGNMENT), "layout_alignment");
	CU_ASSERT_STRING_EQUAL(proto_attr_name(999), "unknown");
	/* bitmap4 conversion drops trailing zero words. */
	memset(&m, 0, sizeof(m));
	proto_attrmask_set(&m, 65);
	CU_ASSERT_FATAL(proto_attrmask_to_bitmap4(&m, &b) == 0);
	CU_ASSERT(b.bitmap4_len == 3 && b.bitmap4_val[2] == 2 && b.bitmap4_val[0] == 0);
	proto_attrmask_from_bitmap4(&out, &b);
	CU_ASSERT(memcmp(&out, &m, sizeof(m)) == 0);
	proto_xdr_free((xdrproc_t)xdr_bitmap4, &b);
	proto_attrmask_clear(&m, 65);
	CU_ASSERT(proto_attrmask_to_bitmap4(&m, &b) == 0 && b.bitmap4_len == 0 && b.bitmap4_val == NULL);
}

TEST_SUITE(proto_attr, "proto/attr", NULL, NULL,
	   { "roundtrip_every_supported", roundtrip_every_supported },
	   { "request_and_determinism", request_and_determinism },
	   { "known_answer", known_answer },
	   { "unsupported_reported", unsupported_reported },
	   { "malformed_values", malformed_values },
	   { "masks_and_names", masks_and_names });
