/* Block and SCSI layout bodies in their opaques: round trips (a layout of 100,000 extents inside a
 * real LAYOUTGET reply among them), every truncation refused, counts checked against the bytes
 * before anything is allocated, extent states and volume references validated, cycles refused. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void block_layout_roundtrip(void)
{
	pnfs_block_layout4 bl = sample_block_layout(7), d;
	layout_content4 c;

	CU_ASSERT_FATAL(proto_block_layout_encode(&bl, &c) == 0);
	CU_ASSERT_EQUAL(c.loc_type, LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(c.loc_body.loc_body_len, 4 + 7 * PROTO_BLOCK_EXTENT_XDR_SIZE);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_FATAL(proto_block_layout_decode(&c, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(d.blo_extents.blo_extents_len, 7);
	for (unsigned i = 0; i < 7; i++) {
		pnfs_block_extent4 *a = &bl.blo_extents.blo_extents_val[i], *b = &d.blo_extents.blo_extents_val[i];
		CU_ASSERT(memcmp(a->bex_vol_id, b->bex_vol_id, NFS4_DEVICEID4_SIZE) == 0);
		CU_ASSERT(a->bex_file_offset == b->bex_file_offset && a->bex_length == b->bex_length);
		CU_ASSERT(a->bex_storage_offset == b->bex_storage_offset && a->bex_state == b->bex_state);
	}
	proto_block_layout_free(&d);
	/* Every truncation and a trailing word are refused. */
	for (u_int cut = 0; cut <= c.loc_body.loc_body_len + 4; cut++) {
		layout_content4 t = c;
		char *p;
		if (cut == c.loc_body.loc_body_len)
			continue;
		p = calloc(1, cut ? cut : 1);
		memcpy(p, c.loc_body.loc_body_val, cut < c.loc_body.loc_body_len ? cut : c.loc_body.loc_body_len);
		t.loc_body.loc_body_len = cut;
		t.loc_body.loc_body_val = p;
		memset(&d, 0, sizeof(d));
		CU_ASSERT(proto_block_layout_decode(&t, &d) == -EBADMSG);
		free(p);
	}
	/* Another layout type is not ours to decode. */
	c.loc_type = LAYOUT4_NFSV4_1_FILES;
	CU_ASSERT_EQUAL(proto_block_layout_decode(&c, &d), -EINVAL);
	c.loc_type = LAYOUT4_BLOCK_VOLUME;
	/* An extent state past NONE_DATA. */
	c.loc_body.loc_body_val[4 + PROTO_BLOCK_EXTENT_XDR_SIZE - 1] = 4;
	CU_ASSERT_EQUAL(proto_block_layout_decode(&c, &d), -EBADMSG);
	proto_layout_content_free(&c);
	bl.blo_extents.blo_extents_val[0].bex_state = 4;
	CU_ASSERT_EQUAL(proto_block_layout_encode(&bl, &c), -EINVAL);
	samples_free();
}

/* 100,000 extents in one layout, carried by a LAYOUTGET reply in one RPC record. */
static void hundred_thousand_extents(void)
{
	enum { N = 100000 };
	pnfs_block_layout4 bl = sample_block_layout(N), d;
	struct proto_msg m;
	struct proto_compound_reply r;
	struct proto_compound_res res;
	struct proto_rpc_reply rep, rd;
	struct proto_rm_reader rr;
	const uint8_t *wire;
	void *rec;
	size_t wlen, rlen, off;
	nfs_resop4 x;
	layout4 lo = { .lo_offset = 0, .lo_length = (uint64_t)N << 20, .lo_iomode = LAYOUTIOMODE4_RW };

	CU_ASSERT_FATAL(proto_block_layout_encode(&bl, &lo.lo_content) == 0);
	CU_ASSERT_EQUAL(lo.lo_content.loc_body.loc_body_len, 4 + N * PROTO_BLOCK_EXTENT_XDR_SIZE);
	memset(&x, 0, sizeof(x));
	x.resop = OP_LAYOUTGET;
	x.nfs_resop4_u.oplayoutget.LAYOUTGET4res_u.logr_resok4.logr_layout.logr_layout_len = 1;
	x.nfs_resop4_u.oplayoutget.LAYOUTGET4res_u.logr_resok4.logr_layout.logr_layout_val = &lo;

	CU_ASSERT_FATAL(proto_msg_init(&m, PROTO_RM_RECORD_LIMIT) == 0);
	proto_rpc_reply_accepted(&rep, 1, SUCCESS);
	CU_ASSERT_FATAL(proto_rpc_reply_encode(&m, &rep) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, &m, NULL, 0, 0) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_add(&r, &x) == 0);
	CU_ASSERT(proto_compound_reply_end(&r, NFS4_OK) == 0);
	CU_ASSERT(proto_msg_finish(&m, &wire, &wlen) == 0);

	/* Through the record reader with a limit the client would set for such replies. */
	proto_rm_reader_init(&rr, 8u << 20);
	CU_ASSERT_EQUAL(proto_rm_feed(&rr, wire, wlen), (ssize_t)wlen);
	CU_ASSERT_FATAL(proto_rm_take(&rr, &rec, &rlen) == 1);
	CU_ASSERT_FATAL(proto_rpc_reply_decode(rec, rlen, &rd, &off) == 0);
	CU_ASSERT_FATAL(proto_compound_res_decode((uint8_t *)rec + off, rlen - off, &res) == 0);
	CU_ASSERT_EQUAL_FATAL(res.res.resarray.resarray_len, 1);
	{
		LAYOUTGET4resok *ok = &res.res.resarray.resarray_val[0].nfs_resop4_u.oplayoutget.LAYOUTGET4res_u.logr_resok4;
		memset(&d, 0, sizeof(d));
		CU_ASSERT_FATAL(ok->logr_layout.logr_layout_len == 1);
		CU_ASSERT_FATAL(proto_block_layout_decode(&ok->logr_layout.logr_layout_val[0].lo_content, &d) == 0);
		CU_ASSERT_EQUAL(d.blo_extents.blo_extents_len, N);
		CU_ASSERT_EQUAL(d.blo_extents.blo_extents_val[N - 1].bex_file_offset, (uint64_t)(N - 1) << 20);
		CU_ASSERT(memcmp(d.blo_extents.blo_extents_val, bl.blo_extents.blo_extents_val, sizeof(pnfs_block_extent4)) == 0);
		proto_block_layout_free(&d);
	}
	proto_compound_res_free(&res);
	free(rec);
	proto_rm_reader_destroy(&rr);
	proto_msg_destroy(&m);
	proto_layout_content_free(&lo.lo_content);
	samples_free();
}

static void extent_caps(void)
{
	pnfs_block_layout4 bl = sample_block_layout(PROTO_BLOCK_EXTENTS_MAX + 1), d;
	layout_content4 c;
	uint8_t small[4 + 2 * PROTO_BLOCK_EXTENT_XDR_SIZE] = { 0 };
	layout_content4 t = { LAYOUT4_BLOCK_VOLUME, { sizeof(small), (char *)small } };

	CU_ASSERT_EQUAL(proto_block_layout_encode(&bl, &c), -EINVAL);
	bl.blo_extents.blo_extents_len = PROTO_BLOCK_EXTENTS_MAX;
	CU_ASSERT_FATAL(proto_block_layout_encode(&bl, &c) == 0);
	proto_layout_content_free(&c);
	/* A count over the cap, or not matching the bytes, is refused before allocation. */
	put32(small, PROTO_BLOCK_EXTENTS_MAX + 1);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_EQUAL(proto_block_layout_decode(&t, &d), -EBADMSG);
	put32(small, 0x7fffffff);
	CU_ASSERT_EQUAL(proto_block_layout_decode(&t, &d), -EBADMSG);
	put32(small, 3);
	CU_ASSERT_EQUAL(proto_block_layout_decode(&t, &d), -EBADMSG);
	put32(small, 2);
	CU_ASSERT(proto_block_layout_decode(&t, &d) == 0 && d.blo_extents.blo_extents_len == 2);
	proto_block_layout_free(&d);
	samples_free();
}

static void layoutupdate_roundtrip(void)
{
	pnfs_block_layout4 bl = sample_block_layout(3);
	pnfs_block_layoutupdate4 lu = { { 3, bl.blo_extents.blo_extents_val } }, d;
	pnfs_scsi_range4 ranges[2] = { { 0, 4096 }, { 1 << 20, 1 << 21 } };
	pnfs_scsi_layoutupdate4 slu = { { 2, ranges } }, sd;
	layoutupdate4 u;

	CU_ASSERT_FATAL(proto_block_layoutupdate_encode(&lu, &u) == 0);
	CU_ASSERT(u.lou_type == LAYOUT4_BLOCK_VOLUME && u.lou_body.lou_body_len == 4 + 3 * PROTO_BLOCK_EXTENT_XDR_SIZE);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_FATAL(proto_block_layoutupdate_decode(&u, &d) == 0);
	CU_ASSERT(d.blu_commit_list.blu_commit_list_len == 3 &&
		  d.blu_commit_list.blu_commit_list_val[2].bex_storage_offset == bl.blo_extents.blo_extents_val[2].bex_storage_offset);
	proto_block_layoutupdate_free(&d);
	CU_ASSERT_EQUAL(proto_scsi_layoutupdate_decode(&u, &sd), -EINVAL);
	u.lou_body.lou_body_len -= 4;
	CU_ASSERT_EQUAL(proto_block_layoutupdate_decode(&u, &d), -EBADMSG);
	proto_layoutupdate_free(&u);

	CU_ASSERT_FATAL(proto_scsi_layoutupdate_encode(&slu, &u) == 0);
	CU_ASSERT(u.lou_type == LAYOUT4_SCSI && u.lou_body.lou_body_len == 4 + 2 * PROTO_SCSI_RANGE_XDR_SIZE);
	memset(&sd, 0, sizeof(sd));
	CU_ASSERT_FATAL(proto_scsi_layoutupdate_decode(&u, &sd) == 0);
	CU_ASSERT(sd.slu_commit_list.slu_commit_list_len == 2 && sd.slu_commit_list.slu_commit_list_val[1].sr_length == 1 << 21);
	proto_scsi_layoutupdate_free(&sd);
	for (u_int cut = 0; cut < u.lou_body.lou_body_len; cut++) {
		layoutupdate4 t = u;
		t.lou_body.lou_body_len = cut;
		memset(&sd, 0, sizeof(sd));
		CU_ASSERT(proto_scsi_layoutupdate_decode(&t, &sd) == -EBADMSG);
	}
	proto_layoutupdate_free(&u);
	samples_free();
}

static void scsi_layout_roundtrip(void)
{
	pnfs_scsi_extent4 e[2];
	pnfs_scsi_layout4 sl = { { 2, e } }, d;
	layout_content4 c;

	memset(e, 0, sizeof(e));
	memset(e[0].se_vol_id, 0xab, NFS4_DEVICEID4_SIZE);
	e[0].se_length = 1 << 20;
	e[0].se_state = PNFS_SCSI_INVALID_DATA;
	e[1] = e[0];
	e[1].se_file_offset = 1 << 20;
	e[1].se_storage_offset = 9 << 20;
	e[1].se_state = PNFS_SCSI_READ_WRITE_DATA;
	CU_ASSERT_FATAL(proto_scsi_layout_encode(&sl, &c) == 0);
	CU_ASSERT(c.loc_type == LAYOUT4_SCSI);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_FATAL(proto_scsi_layout_decode(&c, &d) == 0);
	CU_ASSERT(d.sl_extents.sl_extents_len == 2 && memcmp(d.sl_extents.sl_extents_val, e, sizeof(e)) == 0);
	proto_scsi_layout_free(&d);
	CU_ASSERT_EQUAL(proto_block_layout_decode(&c, (pnfs_block_layout4 *)&d), -EINVAL);
	proto_layout_content_free(&c);
	e[1].se_state = 7;
	CU_ASSERT_EQUAL(proto_scsi_layout_encode(&sl, &c), -EINVAL);
}

static void deviceaddr_stripe_of_slices(void)
{
	pnfs_block_deviceaddr4 da = sample_stripe_of_slices(4), d;
	device_addr4 a;

	CU_ASSERT_FATAL(proto_block_deviceaddr_encode(&da, &a) == 0);
	CU_ASSERT(a.da_layout_type == LAYOUT4_BLOCK_VOLUME);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_FATAL(proto_block_deviceaddr_decode(&a, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(d.bda_volumes.bda_volumes_len, 9);
	CU_ASSERT_EQUAL(d.bda_volumes.bda_volumes_val[8].type, PNFS_BLOCK_VOLUME_STRIPE);
	CU_ASSERT_EQUAL(d.bda_volumes.bda_volumes_val[8].pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len, 4);
	CU_ASSERT_EQUAL(d.bda_volumes.bda_volumes_val[5].pnfs_block_volume4_u.bv_slice_info.bsv_volume, 1);
	CU_ASSERT_EQUAL(d.bda_volumes.bda_volumes_val[0].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val[0].bsc_sig_offset, 512);
	proto_block_deviceaddr_free(&d);
	for (u_int cut = 0; cut < a.da_addr_body.da_addr_body_len; cut++) {
		device_addr4 t = a;
		t.da_addr_body.da_addr_body_len = cut;
		memset(&d, 0, sizeof(d));
		CU_ASSERT(proto_block_deviceaddr_decode(&t, &d) == -EBADMSG);
	}
	proto_device_addr_free(&a);
	samples_free();
}

static void deviceaddr_bad_graphs(void)
{
	pnfs_block_volume4 v[3];
	pnfs_block_deviceaddr4 da = { { 3, v } }, d;
	uint32_t pair[2] = { 2, 0 };
	device_addr4 a;
	uint8_t body[8];
	device_addr4 raw = { LAYOUT4_BLOCK_VOLUME, { sizeof(body), (char *)body } };

	memset(v, 0, sizeof(v));
	/* 0: simple; 1: slice of 3 (out of range); 2: concat. */
	v[1].type = PNFS_BLOCK_VOLUME_SLICE;
	v[1].pnfs_block_volume4_u.bv_slice_info.bsv_volume = 3;
	v[2].type = PNFS_BLOCK_VOLUME_CONCAT;
	v[2].pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_len = 2;
	v[2].pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val = pair;
	CU_ASSERT_EQUAL(proto_block_deviceaddr_encode(&da, &a), -EINVAL);
	/* 1 slices 2, 2 concatenates 2 and 0: a volume containing itself. */
	v[1].pnfs_block_volume4_u.bv_slice_info.bsv_volume = 2;
	CU_ASSERT_EQUAL(proto_block_deviceaddr_encode(&da, &a), -EINVAL);
	/* The same graph built by a hostile peer: decode refuses it too. */
	{
		void *b;
		size_t len;
		CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_pnfs_block_deviceaddr4, &da, &b, &len) == 0);
		a.da_layout_type = LAYOUT4_BLOCK_VOLUME;
		a.da_addr_body.da_addr_body_len = (u_int)len;
		a.da_addr_body.da_addr_body_val = b;
		memset(&d, 0, sizeof(d));
		CU_ASSERT_EQUAL(proto_block_deviceaddr_decode(&a, &d), -EBADMSG);
		pair[0] = 1; /* 2 = concat(1, 0), 1 = slice(2): still a cycle */
		free(b);
		CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_pnfs_block_deviceaddr4, &da, &b, &len) == 0);
		a.da_addr_body.da_addr_body_val = b;
		CU_ASSERT_EQUAL(proto_block_deviceaddr_decode(&a, &d), -EBADMSG);
		free(b);
	}
	/* A DAG that shares a volume is fine: 2 = concat(0, 0) is odd but acyclic; 1 = slice(0). */
	pair[0] = 0;
	v[1].pnfs_block_volume4_u.bv_slice_info.bsv_volume = 0;
	CU_ASSERT_FATAL(proto_block_deviceaddr_encode(&da, &a) == 0);
	memset(&d, 0, sizeof(d));
	CU_ASSERT(proto_block_deviceaddr_decode(&a, &d) == 0);
	proto_block_deviceaddr_free(&d);
	proto_device_addr_free(&a);
	/* An empty volume array, and a count the bytes cannot hold. */
	put32(body, 0);
	put32(body + 4, 0);
	CU_ASSERT_EQUAL(proto_block_deviceaddr_decode(&raw, &d), -EBADMSG);
	put32(body, 2);
	CU_ASSERT_EQUAL(proto_block_deviceaddr_decode(&raw, &d), -EBADMSG);
	put32(body, PROTO_BLOCK_VOLUMES_MAX + 1);
	CU_ASSERT_EQUAL(proto_block_deviceaddr_decode(&raw, &d), -EBADMSG);
	da.bda_volumes.bda_volumes_len = 0;
	CU_ASSERT_EQUAL(proto_block_deviceaddr_encode(&da, &a), -EINVAL);
}

/* A chain of 8192 slices, each of the one before: checked without recursion. */
static void deviceaddr_deep_chain(void)
{
	unsigned n = PROTO_BLOCK_VOLUMES_MAX;
	pnfs_block_volume4 *v = calloc(n, sizeof(*v));
	pnfs_block_deviceaddr4 da = { { n, v } }, d;
	device_addr4 a;

	for (unsigned i = 1; i < n; i++) {
		v[i].type = PNFS_BLOCK_VOLUME_SLICE;
		v[i].pnfs_block_volume4_u.bv_slice_info.bsv_volume = i - 1;
		v[i].pnfs_block_volume4_u.bv_slice_info.bsv_length = 1 << 20;
	}
	CU_ASSERT_FATAL(proto_block_deviceaddr_encode(&da, &a) == 0);
	memset(&d, 0, sizeof(d));
	CU_ASSERT(proto_block_deviceaddr_decode(&a, &d) == 0 && d.bda_volumes.bda_volumes_len == n);
	proto_block_deviceaddr_free(&d);
	proto_device_addr_free(&a);
	/* Close the chain into a ring: refused. */
	v[0] = v[1];
	v[0].pnfs_block_volume4_u.bv_slice_info.bsv_volume = n - 1;
	CU_ASSERT_EQUAL(proto_block_deviceaddr_encode(&da, &a), -EINVAL);
	free(v);
}

static void scsi_deviceaddr_roundtrip(void)
{
	pnfs_scsi_volume4 v[3];
	pnfs_scsi_deviceaddr4 da = { { 3, v } }, d;
	uint32_t two[2] = { 0, 1 };
	uint8_t naa[16];
	device_addr4 a;

	memset(v, 0, sizeof(v));
	test_fill_random(naa, sizeof(naa), 4);
	naa[0] = 0x60; /* NAA IEEE Registered Extended */
	for (int i = 0; i < 2; i++) {
		pnfs_scsi_base_volume_info4 *b = &v[i].pnfs_scsi_volume4_u.sv_simple_info;
		v[i].type = PNFS_SCSI_VOLUME_BASE;
		b->sbv_code_set = PS_CODE_SET_BINARY;
		b->sbv_designator_type = PS_DESIGNATOR_NAA;
		b->sbv_designator.sbv_designator_len = 16;
		b->sbv_designator.sbv_designator_val = (char *)naa;
		b->sbv_pr_key = 0x1122334455667788ull + (uint64_t)i;
	}
	v[2].type = PNFS_SCSI_VOLUME_STRIPE;
	v[2].pnfs_scsi_volume4_u.sv_stripe_info.ssv_stripe_unit = 1 << 20;
	v[2].pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_len = 2;
	v[2].pnfs_scsi_volume4_u.sv_stripe_info.ssv_volumes.ssv_volumes_val = two;
	CU_ASSERT_FATAL(proto_scsi_deviceaddr_encode(&da, &a) == 0);
	CU_ASSERT(a.da_layout_type == LAYOUT4_SCSI);
	memset(&d, 0, sizeof(d));
	CU_ASSERT_FATAL(proto_scsi_deviceaddr_decode(&a, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(d.sda_volumes.sda_volumes_len, 3);
	{
		pnfs_scsi_base_volume_info4 *b = &d.sda_volumes.sda_volumes_val[1].pnfs_scsi_volume4_u.sv_simple_info;
		CU_ASSERT(b->sbv_pr_key == 0x1122334455667789ull && b->sbv_designator_type == PS_DESIGNATOR_NAA);
		CU_ASSERT(b->sbv_designator.sbv_designator_len == 16 && memcmp(b->sbv_designator.sbv_designator_val, naa, 16) == 0);
	}
	proto_scsi_deviceaddr_free(&d);
	CU_ASSERT_EQUAL(proto_block_deviceaddr_decode(&a, (pnfs_block_deviceaddr4 *)&d), -EINVAL);
	proto_device_addr_free(&a);
	/* A designator longer than SPC-4 allows (one-byte length). */
	{
		char big[PROTO_SCSI_DESIGNATOR_MAX + 1] = { 0 };
		v[0].pnfs_scsi_volume4_u.sv_simple_info.sbv_designator.sbv_designator_len = sizeof(big);
		v[0].pnfs_scsi_volume4_u.sv_simple_info.sbv_designator.sbv_designator_val = big;
		CU_ASSERT_EQUAL(proto_scsi_deviceaddr_encode(&da, &a), -EINVAL);
	}
}

/* XDR padding: like every XDR decoder we skip it without insisting on zeros (found by the layout
 * fuzz target), and what we encode from the result is canonical, zero-padded. */
static void padding_not_checked_but_canonical(void)
{
	/* One BASE volume: code set, designator type, a 14-byte designator padded with 0xee 0xee. */
	uint8_t body[4 + 4 + 4 + 4 + 4 + 16 + 8];
	device_addr4 in = { LAYOUT4_SCSI, { sizeof(body), (char *)body } }, out;
	pnfs_scsi_deviceaddr4 d;

	memset(body, 0, sizeof(body));
	put32(body, 1);
	put32(body + 4, PNFS_SCSI_VOLUME_BASE);
	put32(body + 8, PS_CODE_SET_BINARY);
	put32(body + 12, PS_DESIGNATOR_NAA);
	put32(body + 16, 14);
	memset(body + 20, 0x61, 14);
	body[34] = body[35] = 0xee;
	body[43] = 7; /* the PR key */
	memset(&d, 0, sizeof(d));
	CU_ASSERT_FATAL(proto_scsi_deviceaddr_decode(&in, &d) == 0);
	CU_ASSERT(d.sda_volumes.sda_volumes_val[0].pnfs_scsi_volume4_u.sv_simple_info.sbv_pr_key == 7);
	CU_ASSERT_FATAL(proto_scsi_deviceaddr_encode(&d, &out) == 0);
	CU_ASSERT_EQUAL(out.da_addr_body.da_addr_body_len, sizeof(body));
	body[34] = body[35] = 0;
	CU_ASSERT(memcmp(out.da_addr_body.da_addr_body_val, body, sizeof(body)) == 0);
	proto_device_addr_free(&out);
	proto_scsi_deviceaddr_free(&d);
}

TEST_SUITE(proto_layout, "proto/layout", NULL, NULL,
	   { "block_layout_roundtrip", block_layout_roundtrip },
	   { "hundred_thousand_extents", hundred_thousand_extents },
	   { "extent_caps", extent_caps },
	   { "layoutupdate_roundtrip", layoutupdate_roundtrip },
	   { "scsi_layout_roundtrip", scsi_layout_roundtrip },
	   { "deviceaddr_stripe_of_slices", deviceaddr_stripe_of_slices },
	   { "deviceaddr_bad_graphs", deviceaddr_bad_graphs },
	   { "deviceaddr_deep_chain", deviceaddr_deep_chain },
	   { "scsi_deviceaddr_roundtrip", scsi_deviceaddr_roundtrip },
	   { "padding_not_checked_but_canonical", padding_not_checked_but_canonical });
