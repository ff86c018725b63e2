/* Seed inputs for the fuzz targets (tests/fuzz/), built from the samples: every seed must be
 * accepted by the decoder its target drives, which checks the decoders on realistic messages. With
 * PNFS_FUZZ_SEEDS=dir set, the seeds are also written to dir/<target>/ for tests/fuzz/run. */
#include "blkmap/internal.h"
#include "mds/layout_int.h"
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned nseeds;

static void seed(const char *target, const void *prefix, size_t plen, const void *data, size_t len)
{
	const char *dir = getenv("PNFS_FUZZ_SEEDS");
	char path[512];
	FILE *f;

	nseeds++;
	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(dir, 0755);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/seed-%04u", dir, target, nseeds);
	f = fopen(path, "wb");
	CU_ASSERT_FATAL(f != NULL);
	if (plen)
		fwrite(prefix, 1, plen, f);
	fwrite(data, 1, len, f);
	CU_ASSERT(fclose(f) == 0);
}

/* A COMPOUND with SEQUENCE and the op of case c; checks it decodes whole. */
static void compound_seed(const struct sample_case *c, struct proto_msg *m)
{
	struct proto_compound_enc e;
	struct proto_compound_args a;
	struct sample_case s = { OP_SEQUENCE, 0 };
	nfs_argop4 op;

	proto_msg_reset(m);
	CU_ASSERT_FATAL(proto_compound_begin(&e, m, "seed", 1) == 0);
	sample_argop(&s, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	sample_argop(c, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT(proto_compound_end(&e) == 0);
	CU_ASSERT(proto_compound_args_decode(proto_msg_data(m), proto_msg_len(m), 0, &a) == 0 && a.stop == PROTO_COMPOUND_DONE);
	proto_compound_args_free(&a);
	seed("compound_args", NULL, 0, proto_msg_data(m), proto_msg_len(m));
}

static void result_seed(const struct sample_case *c, struct proto_msg *m)
{
	struct proto_compound_reply r;
	struct proto_compound_res res;
	struct sample_case s = { OP_SEQUENCE, 0 };
	nfs_resop4 x;

	proto_msg_reset(m);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, m, "seed", 4, 0) == 0);
	sample_resop(&s, &x);
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	sample_resop(c, &x);
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	CU_ASSERT(proto_compound_reply_end(&r, proto_resop_status(&x)) == 0);
	CU_ASSERT(proto_compound_res_decode(proto_msg_data(m), proto_msg_len(m), &res) == 0 &&
		  res.res.resarray.resarray_len == 2);
	proto_compound_res_free(&res);
	seed("compound_res", NULL, 0, proto_msg_data(m), proto_msg_len(m));
}

static void rpc_seeds(struct proto_msg *m)
{
	struct proto_rpc_call c = { .xid = 1, .prog = NFS4_PROGRAM, .vers = 4, .proc = 1 };
	struct proto_rpc_reply r;
	struct sample_case s = { OP_SEQUENCE, 0 };
	struct proto_compound_enc e;
	nfs_argop4 op;
	uint8_t chunk;
	void *framed;
	size_t flen;

	c.cred.flavor = AUTH_SYS;
	strcpy(c.cred.sys.machinename, "seed-host");
	c.cred.sys.ngids = 3;
	for (int i = 0; i < 4; i++) {
		proto_msg_reset(m);
		if (i == 0) {
			CU_ASSERT(proto_rpc_call_encode(m, &c) == 0);
			CU_ASSERT(proto_compound_begin(&e, m, NULL, 1) == 0);
			sample_argop(&s, &op);
			CU_ASSERT(proto_compound_add(&e, &op) == 0);
			CU_ASSERT(proto_compound_end(&e) == 0);
		} else if (i == 1) {
			proto_rpc_reply_accepted(&r, 1, SUCCESS);
			CU_ASSERT(proto_rpc_reply_encode(m, &r) == 0);
		} else if (i == 2) {
			proto_rpc_reply_prog_mismatch(&r, 2, 4, 4);
			CU_ASSERT(proto_rpc_reply_encode(m, &r) == 0);
		} else {
			proto_rpc_reply_auth_error(&r, 3, AUTH_TOOWEAK);
			CU_ASSERT(proto_rpc_reply_encode(m, &r) == 0);
		}
		CU_ASSERT_FATAL(proto_rm_frame(proto_msg_data(m), proto_msg_len(m), i == 0 ? 17 : 0, &framed, &flen) == 0);
		chunk = (uint8_t)(i * 60);
		seed("rpc", &chunk, 1, framed, flen);
		free(framed);
	}
}

static void cb_seeds(struct proto_msg *m)
{
	struct proto_compound_enc e;
	struct proto_compound_reply r;
	uint8_t args = 0, res = 1;

	for (const struct sample_case *c = sample_cb_arg_cases; c->op; c++) {
		nfs_cb_argop4 op;
		struct sample_case s = { OP_CB_SEQUENCE, 0 };
		struct proto_cb_compound_args a;
		proto_msg_reset(m);
		CU_ASSERT(proto_cb_compound_begin(&e, m, "cb", 1, 7) == 0);
		sample_cb_argop(&s, &op);
		CU_ASSERT(proto_cb_compound_add(&e, &op) == 0);
		sample_cb_argop(c, &op);
		CU_ASSERT(proto_cb_compound_add(&e, &op) == 0);
		CU_ASSERT(proto_compound_end(&e) == 0);
		CU_ASSERT(proto_cb_compound_args_decode(proto_msg_data(m), proto_msg_len(m), 0, &a) == 0 &&
			  a.stop == PROTO_COMPOUND_DONE);
		proto_cb_compound_args_free(&a);
		seed("cb_compound", &args, 1, proto_msg_data(m), proto_msg_len(m));
	}
	for (const struct sample_case *c = sample_cb_res_cases; c->op; c++) {
		nfs_cb_resop4 x;
		struct proto_cb_compound_res cr;
		proto_msg_reset(m);
		CU_ASSERT(proto_cb_compound_reply_begin(&r, m, "cb", 2, 0) == 0);
		sample_cb_resop(c, &x);
		CU_ASSERT(proto_cb_compound_reply_add(&r, &x) == 0);
		CU_ASSERT(proto_compound_reply_end(&r, proto_cb_resop_status(&x)) == 0);
		CU_ASSERT(proto_cb_compound_res_decode(proto_msg_data(m), proto_msg_len(m), &cr) == 0);
		proto_cb_compound_res_free(&cr);
		seed("cb_compound", &res, 1, proto_msg_data(m), proto_msg_len(m));
	}
}

static void layout_seeds(void)
{
	pnfs_block_layout4 bl = sample_block_layout(5), blv;
	pnfs_block_deviceaddr4 da = sample_stripe_of_slices(3), dav;
	pnfs_block_layoutupdate4 lu = { { 2, bl.blo_extents.blo_extents_val } }, luv;
	pnfs_scsi_extent4 se[2] = { { .se_length = 4096, .se_state = PNFS_SCSI_INVALID_DATA },
				    { .se_file_offset = 4096, .se_length = 8192 } };
	pnfs_scsi_layout4 sl = { { 2, se } }, slv;
	pnfs_scsi_range4 rg[1] = { { 0, 12288 } };
	pnfs_scsi_layoutupdate4 slu = { { 1, rg } }, sluv;
	char desig[16] = "\x60\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f";
	uint32_t two[2] = { 0, 1 };
	pnfs_scsi_volume4 sv[4];
	pnfs_scsi_deviceaddr4 sda = { { 4, sv } }, sdav;
	layout_content4 c;
	device_addr4 d;
	layoutupdate4 u;
	uint8_t k;

	memset(sv, 0, sizeof(sv));
	for (int i = 0; i < 2; i++) {
		sv[i].type = PNFS_SCSI_VOLUME_BASE;
		sv[i].pnfs_scsi_volume4_u.sv_simple_info.sbv_code_set = PS_CODE_SET_BINARY;
		sv[i].pnfs_scsi_volume4_u.sv_simple_info.sbv_designator_type = PS_DESIGNATOR_NAA;
		sv[i].pnfs_scsi_volume4_u.sv_simple_info.sbv_designator.sbv_designator_len = 16;
		sv[i].pnfs_scsi_volume4_u.sv_simple_info.sbv_designator.sbv_designator_val = desig;
		sv[i].pnfs_scsi_volume4_u.sv_simple_info.sbv_pr_key = 0x1234 + (uint64_t)i;
	}
	sv[2].type = PNFS_SCSI_VOLUME_CONCAT;
	sv[2].pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_len = 2;
	sv[2].pnfs_scsi_volume4_u.sv_concat_info.scv_volumes.scv_volumes_val = two;
	sv[3].type = PNFS_SCSI_VOLUME_SLICE;
	sv[3].pnfs_scsi_volume4_u.sv_slice_info.ssv_volume = 2;
	sv[3].pnfs_scsi_volume4_u.sv_slice_info.ssv_length = 1 << 20;
	for (unsigned i = 0; i < 2; i++)
		lu.blu_commit_list.blu_commit_list_val[i].bex_state = PNFS_BLOCK_READ_WRITE_DATA;

#define LSEED(kind, enc, obj, out, field, dec, decobj, freefn, outfree)                        \
	do {                                                                                  \
		k = kind;                                                                     \
		CU_ASSERT_FATAL(enc(&obj, &out) == 0);                                        \
		memset(&decobj, 0, sizeof(decobj));                                          \
		CU_ASSERT(dec(&out, &decobj) == 0);                                           \
		freefn(&decobj);                                                              \
		seed("layout", &k, 1, out.field##_val, out.field##_len);                      \
		outfree(&out);                                                                \
	} while (0)
	LSEED(0, proto_block_layout_encode, bl, c, loc_body.loc_body, proto_block_layout_decode, blv,
	      proto_block_layout_free, proto_layout_content_free);
	LSEED(1, proto_scsi_layout_encode, sl, c, loc_body.loc_body, proto_scsi_layout_decode, slv,
	      proto_scsi_layout_free, proto_layout_content_free);
	LSEED(2, proto_block_deviceaddr_encode, da, d, da_addr_body.da_addr_body, proto_block_deviceaddr_decode, dav,
	      proto_block_deviceaddr_free, proto_device_addr_free);
	LSEED(3, proto_scsi_deviceaddr_encode, sda, d, da_addr_body.da_addr_body, proto_scsi_deviceaddr_decode, sdav,
	      proto_scsi_deviceaddr_free, proto_device_addr_free);
	LSEED(4, proto_block_layoutupdate_encode, lu, u, lou_body.lou_body, proto_block_layoutupdate_decode, luv,
	      proto_block_layoutupdate_free, proto_layoutupdate_free);
	LSEED(5, proto_scsi_layoutupdate_encode, slu, u, lou_body.lou_body, proto_scsi_layoutupdate_decode, sluv,
	      proto_scsi_layoutupdate_free, proto_layoutupdate_free);
#undef LSEED
}

static void fattr_seeds(void)
{
	struct sample_case g = { OP_GETATTR, 0 };
	nfs_resop4 x;
	fattr4 f[2];

	sample_resop(&g, &x);
	f[0] = x.nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
	f[1] = sample_fattr4();
	for (int i = 0; i < 2; i++) {
		struct proto_fattr *a = calloc(1, sizeof(*a));
		void *b;
		size_t len;
		CU_ASSERT(proto_fattr_decode(&f[i], a, NULL) == 0);
		CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_fattr4, &f[i], &b, &len) == 0);
		seed("fattr", NULL, 0, b, len);
		free(b);
		free(a);
	}
}

/* What targets send (as tgtd does for its LUNs), each with the selector byte of its parser. */
static void scsi_seeds(void)
{
	static const uint8_t std[36] = { 0x00, 0x00, 0x05, 0x02, 31, 0, 0, 0x02, 'I', 'E', 'T', ' ', ' ', ' ', ' ',
					 ' ', 'V', 'I', 'R', 'T', 'U', 'A', 'L', '-', 'D', 'I', 'S', 'K', ' ',
					 ' ', ' ', ' ', '0', '0', '0', '1' };
	static const uint8_t p80[] = { 0x00, 0x80, 0x00, 8, 'b', 'e', 'a', 'f', '1', '1', ' ', ' ' };
	static const uint8_t p83[] = { 0x00, 0x83, 0x00, 36, 0x01, 0x03, 0x00, 16, 0x60, 0x00, 0x0e, 0x00, 0x00,
				       0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x02,
				       0x01, 0x00, 12, 'I', 'E', 'T', ' ', ' ', ' ', ' ', ' ', 0, 1, 0, 1 };
	static const uint8_t b0[64] = { 0x00, 0xb0, 0x00, 60, 0, 0, 0, 0, 0, 0, 0x08, 0x00 };
	static const uint8_t rc16[32] = { 0, 0, 0, 0, 0, 0x01, 0xff, 0xff, 0, 0, 0x02, 0x00 };
	static const uint8_t keys[8 + 16] = { 0, 0, 0, 2, 0, 0, 0, 16, 0x5c, 0xa1, 0xab, 0x1e, 0, 0, 0, 1,
					      0x4d, 0x44, 0x53, 0, 0, 0, 0, 1 };
	static const uint8_t resv[24] = { 0, 0, 0, 2, 0, 0, 0, 16, 0x4d, 0x44, 0x53, 0, 0, 0, 0, 1,
					  0, 0, 0, 0, 0, 0x06, 0, 0 };
	static const uint8_t luns[8 + 24] = { 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
					      0, 0, 0, 0x40, 0x05, 0, 0, 0, 0, 0, 0 };
	static const uint8_t caps[8] = { 0x00, 0x08, 0x11, 0x81, 0xea, 0x01, 0, 0 };
	struct blkmap_inquiry inq;
	struct blkmap_pr_keys k;
	struct blkmap_pr_reservation r;
	struct blkmap_pr_caps c;
	unsigned l[4];
	uint64_t blocks;
	uint32_t u;
	uint8_t sel;

#define SSEED(n, data, call)                               \
	do {                                               \
		sel = n;                                   \
		CU_ASSERT(call);                           \
		seed("scsi_data", &sel, 1, data, sizeof(data)); \
	} while (0)
	SSEED(0, std, bm_parse_std_inquiry(std, sizeof(std), &inq) == 0);
	SSEED(1, p80, bm_parse_vpd80(p80, sizeof(p80), &inq) == 0);
	SSEED(2, p83, bm_parse_vpd83(p83, sizeof(p83), &inq) == 0 && inq.ndesig == 2);
	SSEED(3, b0, bm_parse_vpdb0(b0, sizeof(b0), &u) == 0);
	SSEED(4, rc16, bm_parse_readcap16(rc16, sizeof(rc16), &blocks, &u) == 0);
	SSEED(5, keys, bm_parse_read_keys(keys, sizeof(keys), &k) == 0 && k.nkeys == 2);
	SSEED(6, resv, bm_parse_read_resv(resv, sizeof(resv), &r) == 0 && r.reserved);
	SSEED(7, luns, bm_parse_report_luns(luns, sizeof(luns), l, 4) == 3);
	SSEED(8, caps, bm_parse_report_caps(caps, sizeof(caps), &c) == 0 && c.ptpl_c);
#undef SSEED
}

static void metrics_seeds(void)
{
	static const char *const heads[] = { "GET /metrics HTTP/1.1\r\nHost: localhost:9100\r\nAccept: */*\r\n\r\n",
					     "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n", "POST /metrics HTTP/1.0\n\n",
					     "GET / HTTP/1.0\r\n\r\n" };
	static const int codes[] = { 200, 200, 405, 404 };
	int head;

	for (unsigned i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		CU_ASSERT_EQUAL(mds_metrics_route(heads[i], &head), codes[i]);
		seed("metrics_http", NULL, 0, heads[i], strlen(heads[i]));
	}
}

static void corpus(void)
{
	struct proto_msg m;

	nseeds = 0;
	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 16) == 0);
	for (const struct sample_case *c = sample_arg_cases; c->op; c++)
		compound_seed(c, &m);
	for (const struct sample_case *c = sample_res_cases; c->op; c++)
		result_seed(c, &m);
	rpc_seeds(&m);
	cb_seeds(&m);
	layout_seeds();
	fattr_seeds();
	scsi_seeds();
	metrics_seeds();
	proto_msg_destroy(&m);
	samples_free();
	CU_ASSERT(nseeds > 150);
}

TEST_SUITE(proto_seeds, "proto/seeds", NULL, NULL, { "corpus", corpus });
