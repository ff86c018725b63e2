/* Known answers: byte vectors written out by hand from the XDR rules (RFC 4506: big-endian 4-byte
 * units, hyper = 8 bytes, opaque<> = length then bytes padded to 4, bool = 0/1, union = the
 * discriminant then the arm) and the RFCs' type layouts, compared with what our encoders produce
 * and decoded back field by field. If an encoder and decoder agreed on a wrong layout, the round
 * trips would pass; these would not. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_bytes(const void *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	CU_ASSERT_EQUAL(got_len, want_len);
	if (got_len == want_len && memcmp(got, want, want_len) != 0) {
		const uint8_t *g = got;
		for (size_t i = 0; i < want_len; i++)
			if (g[i] != want[i]) {
				fprintf(stderr, "first difference at byte %zu: got %02x, want %02x\n", i, g[i], want[i]);
				break;
			}
		CU_FAIL("bytes differ");
	}
}

static void seq16(uint8_t *p, uint8_t first)
{
	for (int i = 0; i < 16; i++)
		p[i] = (uint8_t)(first + i);
}

/* ---- SEQUENCE + PUTFH + LAYOUTGET (RFC 8881 §18.46, §18.19, §18.43) ------------------------------ */
static const uint8_t kat_layoutget_compound[] = {
	0x00, 0x00, 0x00, 0x03, 'k', 'a', 't', 0x00,           /* tag "kat", padded */
	0x00, 0x00, 0x00, 0x01,                                 /* minorversion 1 */
	0x00, 0x00, 0x00, 0x03,                                 /* 3 operations */
	0x00, 0x00, 0x00, 0x35,                                 /* OP_SEQUENCE (53) */
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,         /*   sa_sessionid */
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x00, 0x00, 0x2a,                                 /*   sa_sequenceid 42 */
	0x00, 0x00, 0x00, 0x00,                                 /*   sa_slotid 0 */
	0x00, 0x00, 0x00, 0x00,                                 /*   sa_highest_slotid 0 */
	0x00, 0x00, 0x00, 0x01,                                 /*   sa_cachethis TRUE */
	0x00, 0x00, 0x00, 0x16,                                 /* OP_PUTFH (22) */
	0x00, 0x00, 0x00, 0x08,                                 /*   filehandle, 8 bytes */
	0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04,
	0x00, 0x00, 0x00, 0x32,                                 /* OP_LAYOUTGET (50) */
	0x00, 0x00, 0x00, 0x00,                                 /*   loga_signal_layout_avail FALSE */
	0x00, 0x00, 0x00, 0x03,                                 /*   LAYOUT4_BLOCK_VOLUME */
	0x00, 0x00, 0x00, 0x02,                                 /*   LAYOUTIOMODE4_RW */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,         /*   loga_offset 0 */
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,         /*   loga_length NFS4_UINT64_MAX */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,         /*   loga_minlength 4096 */
	0x00, 0x00, 0x00, 0x01,                                 /*   loga_stateid.seqid 1 */
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,         /*   loga_stateid.other */
	0xa8, 0xa9, 0xaa, 0xab,
	0x00, 0x01, 0x00, 0x00,                                 /*   loga_maxcount 65536 */
};

static void sequence_putfh_layoutget(void)
{
	static uint8_t fhbytes[8] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4 };
	struct proto_msg m;
	struct proto_compound_enc e;
	struct proto_compound_args a;
	nfs_argop4 op;

	CU_ASSERT_FATAL(proto_msg_init(&m, 1024) == 0);
	CU_ASSERT_FATAL(proto_compound_begin(&e, &m, "kat", 1) == 0);
	memset(&op, 0, sizeof(op));
	op.argop = OP_SEQUENCE;
	seq16((uint8_t *)op.nfs_argop4_u.opsequence.sa_sessionid, 0);
	op.nfs_argop4_u.opsequence.sa_sequenceid = 42;
	op.nfs_argop4_u.opsequence.sa_cachethis = TRUE;
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	memset(&op, 0, sizeof(op));
	op.argop = OP_PUTFH;
	op.nfs_argop4_u.opputfh.object.nfs_fh4_len = 8;
	op.nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fhbytes;
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	memset(&op, 0, sizeof(op));
	op.argop = OP_LAYOUTGET;
	op.nfs_argop4_u.oplayoutget.loga_layout_type = LAYOUT4_BLOCK_VOLUME;
	op.nfs_argop4_u.oplayoutget.loga_iomode = LAYOUTIOMODE4_RW;
	op.nfs_argop4_u.oplayoutget.loga_length = NFS4_UINT64_MAX;
	op.nfs_argop4_u.oplayoutget.loga_minlength = 4096;
	op.nfs_argop4_u.oplayoutget.loga_stateid.seqid = 1;
	for (int i = 0; i < 12; i++)
		op.nfs_argop4_u.oplayoutget.loga_stateid.other[i] = (char)(0xa0 + i);
	op.nfs_argop4_u.oplayoutget.loga_maxcount = 65536;
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT(proto_compound_end(&e) == 0);
	check_bytes(proto_msg_data(&m), proto_msg_len(&m), kat_layoutget_compound, sizeof(kat_layoutget_compound));
	proto_msg_destroy(&m);

	/* And the hand-written bytes decode to those fields. */
	CU_ASSERT_FATAL(proto_compound_args_decode(kat_layoutget_compound, sizeof(kat_layoutget_compound), 0, &a) == 0);
	CU_ASSERT(a.stop == PROTO_COMPOUND_DONE && a.args.argarray.argarray_len == 3 && a.args.minorversion == 1);
	{
		nfs_argop4 *o = a.args.argarray.argarray_val;
		LAYOUTGET4args *lg = &o[2].nfs_argop4_u.oplayoutget;
		CU_ASSERT(o[0].argop == OP_SEQUENCE && o[0].nfs_argop4_u.opsequence.sa_sequenceid == 42 &&
			  o[0].nfs_argop4_u.opsequence.sa_cachethis && o[0].nfs_argop4_u.opsequence.sa_sessionid[15] == 0x0f);
		CU_ASSERT(o[1].argop == OP_PUTFH && o[1].nfs_argop4_u.opputfh.object.nfs_fh4_len == 8 &&
			  memcmp(o[1].nfs_argop4_u.opputfh.object.nfs_fh4_val, fhbytes, 8) == 0);
		CU_ASSERT(o[2].argop == OP_LAYOUTGET && !lg->loga_signal_layout_avail);
		CU_ASSERT(lg->loga_layout_type == LAYOUT4_BLOCK_VOLUME && lg->loga_iomode == LAYOUTIOMODE4_RW);
		CU_ASSERT(lg->loga_offset == 0 && lg->loga_length == NFS4_UINT64_MAX && lg->loga_minlength == 4096);
		CU_ASSERT(lg->loga_stateid.seqid == 1 && (uint8_t)lg->loga_stateid.other[11] == 0xab);
		CU_ASSERT(lg->loga_maxcount == 65536);
	}
	proto_compound_args_free(&a);
}

/* ---- GETDEVICEINFO result: a stripe of two slices of two simple volumes (RFC 5663 §2.3.1) ------ */
static const uint8_t kat_getdeviceinfo_res[] = {
	0x00, 0x00, 0x00, 0x2f,                                 /* OP_GETDEVICEINFO (47) */
	0x00, 0x00, 0x00, 0x00,                                 /* NFS4_OK */
	0x00, 0x00, 0x00, 0x03,                                 /* da_layout_type LAYOUT4_BLOCK_VOLUME */
	0x00, 0x00, 0x00, 0x7c,                                 /* da_addr_body: 124 bytes */
	0x00, 0x00, 0x00, 0x05,                                 /*   5 volumes */
	0x00, 0x00, 0x00, 0x00,                                 /*   [0] PNFS_BLOCK_VOLUME_SIMPLE */
	0x00, 0x00, 0x00, 0x01,                                 /*       1 signature component */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,         /*       bsc_sig_offset 512 */
	0x00, 0x00, 0x00, 0x04, 'L', 'U', 'N', '0',             /*       bsc_contents "LUN0" */
	0x00, 0x00, 0x00, 0x00,                                 /*   [1] SIMPLE */
	0x00, 0x00, 0x00, 0x01,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x00,         /*       offset -512: from the end */
	0x00, 0x00, 0x00, 0x04, 'L', 'U', 'N', '1',
	0x00, 0x00, 0x00, 0x01,                                 /*   [2] PNFS_BLOCK_VOLUME_SLICE */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,         /*       bsv_start 1 MiB */
	0x00, 0x00, 0x00, 0x00, 0x03, 0xf0, 0x00, 0x00,         /*       bsv_length 63 MiB */
	0x00, 0x00, 0x00, 0x00,                                 /*       of volume 0 */
	0x00, 0x00, 0x00, 0x01,                                 /*   [3] SLICE */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x03, 0xf0, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01,                                 /*       of volume 1 */
	0x00, 0x00, 0x00, 0x03,                                 /*   [4] PNFS_BLOCK_VOLUME_STRIPE */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,         /*       bsv_stripe_unit 1 MiB */
	0x00, 0x00, 0x00, 0x02,                                 /*       2 volumes: */
	0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03,         /*       2 and 3 */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,         /* gdir_notification: 1 word, CHANGE */
};

static void getdeviceinfo_stripe_of_slices(void)
{
	pnfs_block_volume4 v[5];
	pnfs_block_sig_component4 sig[2];
	uint32_t stripe[2] = { 2, 3 };
	uint32_t notify = 1u << NOTIFY_DEVICEID4_CHANGE;
	pnfs_block_deviceaddr4 da = { { 5, v } }, dd;
	nfs_resop4 res, back;
	void *b;
	size_t len;

	memset(v, 0, sizeof(v));
	for (int i = 0; i < 2; i++) {
		sig[i].bsc_sig_offset = i == 0 ? 512 : -512;
		sig[i].bsc_contents.bsc_contents_len = 4;
		sig[i].bsc_contents.bsc_contents_val = i == 0 ? "LUN0" : "LUN1";
		v[i].type = PNFS_BLOCK_VOLUME_SIMPLE;
		v[i].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_len = 1;
		v[i].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val = &sig[i];
		v[2 + i].type = PNFS_BLOCK_VOLUME_SLICE;
		v[2 + i].pnfs_block_volume4_u.bv_slice_info.bsv_start = 1 << 20;
		v[2 + i].pnfs_block_volume4_u.bv_slice_info.bsv_length = 63 << 20;
		v[2 + i].pnfs_block_volume4_u.bv_slice_info.bsv_volume = (uint32_t)i;
	}
	v[4].type = PNFS_BLOCK_VOLUME_STRIPE;
	v[4].pnfs_block_volume4_u.bv_stripe_info.bsv_stripe_unit = 1 << 20;
	v[4].pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len = 2;
	v[4].pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val = stripe;

	memset(&res, 0, sizeof(res));
	res.resop = OP_GETDEVICEINFO;
	CU_ASSERT_FATAL(proto_block_deviceaddr_encode(&da, &res.nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_device_addr) == 0);
	res.nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_notification.bitmap4_len = 1;
	res.nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_notification.bitmap4_val = &notify;
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_nfs_resop4, &res, &b, &len) == 0);
	check_bytes(b, len, kat_getdeviceinfo_res, sizeof(kat_getdeviceinfo_res));
	free(b);
	proto_device_addr_free(&res.nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_device_addr);

	/* The hand-written bytes decode to the same topology. */
	memset(&back, 0, sizeof(back));
	CU_ASSERT_FATAL(proto_xdr_decode((xdrproc_t)xdr_nfs_resop4, &back, kat_getdeviceinfo_res, sizeof(kat_getdeviceinfo_res)) == 0);
	CU_ASSERT_EQUAL(proto_resop_status(&back), NFS4_OK);
	memset(&dd, 0, sizeof(dd));
	CU_ASSERT_FATAL(proto_block_deviceaddr_decode(&back.nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_device_addr, &dd) == 0);
	CU_ASSERT_EQUAL_FATAL(dd.bda_volumes.bda_volumes_len, 5);
	{
		pnfs_block_volume4 *w = dd.bda_volumes.bda_volumes_val;
		CU_ASSERT(w[1].type == PNFS_BLOCK_VOLUME_SIMPLE &&
			  w[1].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val[0].bsc_sig_offset == -512 &&
			  memcmp(w[1].pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val[0].bsc_contents.bsc_contents_val, "LUN1", 4) == 0);
		CU_ASSERT(w[3].type == PNFS_BLOCK_VOLUME_SLICE && w[3].pnfs_block_volume4_u.bv_slice_info.bsv_volume == 1 &&
			  w[3].pnfs_block_volume4_u.bv_slice_info.bsv_length == 63u << 20);
		CU_ASSERT(w[4].type == PNFS_BLOCK_VOLUME_STRIPE &&
			  w[4].pnfs_block_volume4_u.bv_stripe_info.bsv_stripe_unit == 1u << 20 &&
			  w[4].pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val[1] == 3);
	}
	proto_block_deviceaddr_free(&dd);
	proto_xdr_free((xdrproc_t)xdr_nfs_resop4, &back);
}

/* ---- LAYOUTCOMMIT with a block layoutupdate (RFC 8881 §18.42, RFC 5663 §2.3.2) ----------------- */
static const uint8_t kat_layoutcommit[] = {
	0x00, 0x00, 0x00, 0x31,                                 /* OP_LAYOUTCOMMIT (49) */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,         /*   loca_offset 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,         /*   loca_length 2 MiB */
	0x00, 0x00, 0x00, 0x00,                                 /*   loca_reclaim FALSE */
	0x00, 0x00, 0x00, 0x02,                                 /*   loca_stateid.seqid 2 */
	0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb,
	0x00, 0x00, 0x00, 0x01,                                 /*   loca_last_write_offset: TRUE */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x1f, 0xff, 0xff,         /*     2 MiB - 1 */
	0x00, 0x00, 0x00, 0x01,                                 /*   loca_time_modify: TRUE */
	0x00, 0x00, 0x00, 0x00, 0x65, 0x53, 0xf1, 0x00,         /*     seconds 1700000000 */
	0x00, 0x00, 0x01, 0xf4,                                 /*     nseconds 500 */
	0x00, 0x00, 0x00, 0x03,                                 /*   lou_type LAYOUT4_BLOCK_VOLUME */
	0x00, 0x00, 0x00, 0x5c,                                 /*   lou_body: 92 bytes */
	0x00, 0x00, 0x00, 0x02,                                 /*     blu_commit_list: 2 extents */
	0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,         /*     [0] bex_vol_id */
	0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,         /*         bex_file_offset 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,         /*         bex_length 1 MiB */
	0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x00, 0x00,         /*         bex_storage_offset 5 GiB */
	0x00, 0x00, 0x00, 0x00,                                 /*         PNFS_BLOCK_READ_WRITE_DATA */
	0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,         /*     [1] */
	0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,         /*         1 MiB */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,         /*         1 MiB */
	0x00, 0x00, 0x00, 0x01, 0x40, 0x10, 0x00, 0x00,         /*         5 GiB + 1 MiB */
	0x00, 0x00, 0x00, 0x00,
};

static void layoutcommit_block_update(void)
{
	pnfs_block_extent4 ext[2];
	pnfs_block_layoutupdate4 lu = { { 2, ext } }, back_lu;
	nfs_argop4 op, back;
	LAYOUTCOMMIT4args *lc = &op.nfs_argop4_u.oplayoutcommit;
	void *b;
	size_t len;

	memset(ext, 0, sizeof(ext));
	for (int i = 0; i < 2; i++) {
		seq16((uint8_t *)ext[i].bex_vol_id, 0xc0);
		ext[i].bex_file_offset = (uint64_t)i << 20;
		ext[i].bex_length = 1 << 20;
		ext[i].bex_storage_offset = (5ull << 30) + ((uint64_t)i << 20);
		ext[i].bex_state = PNFS_BLOCK_READ_WRITE_DATA;
	}
	memset(&op, 0, sizeof(op));
	op.argop = OP_LAYOUTCOMMIT;
	lc->loca_length = 2 << 20;
	lc->loca_stateid.seqid = 2;
	for (int i = 0; i < 12; i++)
		lc->loca_stateid.other[i] = (char)(0xb0 + i);
	lc->loca_last_write_offset.no_newoffset = TRUE;
	lc->loca_last_write_offset.newoffset4_u.no_offset = (2 << 20) - 1;
	lc->loca_time_modify.nt_timechanged = TRUE;
	lc->loca_time_modify.newtime4_u.nt_time.seconds = 1700000000;
	lc->loca_time_modify.newtime4_u.nt_time.nseconds = 500;
	CU_ASSERT_FATAL(proto_block_layoutupdate_encode(&lu, &lc->loca_layoutupdate) == 0);
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &b, &len) == 0);
	check_bytes(b, len, kat_layoutcommit, sizeof(kat_layoutcommit));
	free(b);
	proto_layoutupdate_free(&lc->loca_layoutupdate);

	memset(&back, 0, sizeof(back));
	CU_ASSERT_FATAL(proto_xdr_decode((xdrproc_t)xdr_nfs_argop4, &back, kat_layoutcommit, sizeof(kat_layoutcommit)) == 0);
	lc = &back.nfs_argop4_u.oplayoutcommit;
	CU_ASSERT(lc->loca_length == 2u << 20 && !lc->loca_reclaim && lc->loca_stateid.seqid == 2);
	CU_ASSERT(lc->loca_last_write_offset.no_newoffset && lc->loca_last_write_offset.newoffset4_u.no_offset == (2u << 20) - 1);
	CU_ASSERT(lc->loca_time_modify.nt_timechanged && lc->loca_time_modify.newtime4_u.nt_time.seconds == 1700000000 &&
		  lc->loca_time_modify.newtime4_u.nt_time.nseconds == 500);
	memset(&back_lu, 0, sizeof(back_lu));
	CU_ASSERT_FATAL(proto_block_layoutupdate_decode(&lc->loca_layoutupdate, &back_lu) == 0);
	CU_ASSERT(back_lu.blu_commit_list.blu_commit_list_len == 2 &&
		  memcmp(back_lu.blu_commit_list.blu_commit_list_val, ext, sizeof(ext)) == 0);
	proto_block_layoutupdate_free(&back_lu);
	proto_xdr_free((xdrproc_t)xdr_nfs_argop4, &back);
}

TEST_SUITE(proto_kat, "proto/kat", NULL, NULL,
	   { "sequence_putfh_layoutget", sequence_putfh_layoutget },
	   { "getdeviceinfo_stripe_of_slices", getdeviceinfo_stripe_of_slices },
	   { "layoutcommit_block_update", layoutcommit_block_update });
