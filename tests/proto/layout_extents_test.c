/* One decoded extent type for both layout types: block and SCSI layouts built from the same
 * proto_extent list decode back to it, carry the same body bytes (the RFCs give both extents one
 * shape), and a layout type we do not speak or a bad state is refused. */
#include "tests/harness.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void sample(struct proto_extent *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		memset(e[i].vol_id, (int)(0x10 + i), NFS4_DEVICEID4_SIZE);
		e[i].file_offset = (uint64_t)i << 20;
		e[i].length = 1 << 20;
		e[i].storage_offset = ((uint64_t)i << 32) | 0x1000;
		e[i].state = (uint32_t)(i % 4);
	}
}

static void roundtrip(layouttype4 type)
{
	struct proto_extent e[5], *d = NULL;
	layout_content4 c;
	size_t n = 99;

	sample(e, 5);
	CU_ASSERT_FATAL(proto_layout_extents_encode(type, e, 5, &c) == 0);
	CU_ASSERT_EQUAL(c.loc_type, type);
	CU_ASSERT_EQUAL(c.loc_body.loc_body_len, 4 + 5 * PROTO_BLOCK_EXTENT_XDR_SIZE);
	CU_ASSERT_FATAL(proto_layout_extents_decode(&c, &d, &n) == 0);
	CU_ASSERT_EQUAL_FATAL(n, 5);
	for (size_t i = 0; i < 5; i++) {
		CU_ASSERT(memcmp(d[i].vol_id, e[i].vol_id, NFS4_DEVICEID4_SIZE) == 0);
		CU_ASSERT(d[i].file_offset == e[i].file_offset && d[i].length == e[i].length);
		CU_ASSERT(d[i].storage_offset == e[i].storage_offset && d[i].state == e[i].state);
	}
	free(d);
	proto_layout_content_free(&c);
}

static void both_types_roundtrip(void)
{
	roundtrip(LAYOUT4_BLOCK_VOLUME);
	roundtrip(LAYOUT4_SCSI);
}

static void same_body_bytes(void)
{
	struct proto_extent e[3];
	layout_content4 b, s;

	sample(e, 3);
	CU_ASSERT_FATAL(proto_layout_extents_encode(LAYOUT4_BLOCK_VOLUME, e, 3, &b) == 0);
	CU_ASSERT_FATAL(proto_layout_extents_encode(LAYOUT4_SCSI, e, 3, &s) == 0);
	CU_ASSERT_EQUAL_FATAL(b.loc_body.loc_body_len, s.loc_body.loc_body_len);
	CU_ASSERT(memcmp(b.loc_body.loc_body_val, s.loc_body.loc_body_val, b.loc_body.loc_body_len) == 0);
	proto_layout_content_free(&b);
	proto_layout_content_free(&s);
}

static void empty_and_refused(void)
{
	struct proto_extent e[1], *d = NULL;
	layout_content4 c;
	size_t n = 7;

	CU_ASSERT_FATAL(proto_layout_extents_encode(LAYOUT4_SCSI, NULL, 0, &c) == 0);
	CU_ASSERT_FATAL(proto_layout_extents_decode(&c, &d, &n) == 0);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_PTR_NOT_NULL(d);
	free(d);
	/* a files layout is not ours */
	c.loc_type = LAYOUT4_NFSV4_1_FILES;
	CU_ASSERT_EQUAL(proto_layout_extents_decode(&c, &d, &n), -EINVAL);
	CU_ASSERT_PTR_NULL(d);
	proto_layout_content_free(&c);
	sample(e, 1);
	CU_ASSERT_EQUAL(proto_layout_extents_encode(LAYOUT4_NFSV4_1_FILES, e, 1, &c), -EINVAL);
	e[0].state = PNFS_BLOCK_NONE_DATA + 1;
	CU_ASSERT_EQUAL(proto_layout_extents_encode(LAYOUT4_BLOCK_VOLUME, e, 1, &c), -EINVAL);
	CU_ASSERT_EQUAL(proto_layout_extents_encode(LAYOUT4_SCSI, e, 1, &c), -EINVAL);
	/* a bad state on the wire */
	e[0].state = PNFS_BLOCK_READ_DATA;
	CU_ASSERT_FATAL(proto_layout_extents_encode(LAYOUT4_SCSI, e, 1, &c) == 0);
	c.loc_body.loc_body_val[4 + PROTO_BLOCK_EXTENT_XDR_SIZE - 1] = 9;
	CU_ASSERT_EQUAL(proto_layout_extents_decode(&c, &d, &n), -EBADMSG);
	proto_layout_content_free(&c);
}

TEST_SUITE(proto_layout_extents, "proto/layout_extents", NULL, NULL,
	   { "both_types_roundtrip", both_types_roundtrip },
	   { "same_body_bytes", same_body_bytes },
	   { "empty_and_refused", empty_and_refused });
