/* The SCSI pieces blkmap builds and parses itself: CDBs, VPD pages 0x80/0x83/0xB0, READ CAPACITY(16),
 * PERSISTENT RESERVE IN data, and status/sense to -errno; truncated or lying responses are refused. */
#include "blkmap/internal.h"
#include "tests/harness.h"

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <string.h>
#include <stdio.h>

static void test_vpd(void)
{
	/* page 0x83: an NAA-6 (16 bytes, binary), a T10 id (ascii), a target-port designator */
	uint8_t p83[] = { 0x00, 0x83, 0x00, 40,
			  0x01, 0x03, 0x00, 16, 0x60, 0x01, 0x40, 0x51, 0x23, 0x45, 0x67, 0x89,
			  0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89,
			  0x02, 0x01, 0x00, 8, 'S', 'A', 'N', 'L', 'A', 'B', ' ', '1',
			  0x51, 0x14, 0x00, 4, 0, 0, 0, 1 };
	uint8_t p80[] = { 0x00, 0x80, 0x00, 8, ' ', ' ', 'S', 'N', '1', '2', ' ', ' ' };
	uint8_t b0[16] = { 0x00, 0xb0, 0x00, 12, 0, 0, 0, 0, 0x00, 0x00, 0x08, 0x00 };
	struct blkmap_inquiry inq;
	uint32_t maxb = 0;
	char s[100];

	memset(&inq, 0, sizeof(inq));
	CU_ASSERT_EQUAL(bm_parse_vpd83(p83, sizeof(p83), &inq), 0);
	CU_ASSERT_EQUAL_FATAL(inq.ndesig, 3);
	CU_ASSERT_EQUAL(inq.desig[0].type, BLKMAP_DESIG_NAA);
	CU_ASSERT_EQUAL(inq.desig[0].code_set, BLKMAP_CODE_BINARY);
	CU_ASSERT_EQUAL(inq.desig[0].len, 16);
	blkmap_designator_str(&inq.desig[0], s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "naa:6001405123456789abcdef0123456789");
	blkmap_designator_str(&inq.desig[1], s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "t10:SANLAB 1");
	CU_ASSERT_EQUAL(inq.desig[2].association, 1);
	/* a designator running past the page is refused */
	p83[4 + 3] = 200;
	CU_ASSERT_EQUAL(bm_parse_vpd83(p83, sizeof(p83), &inq), -EPROTO);
	/* a page length larger than the bytes received is clipped to them */
	p83[4 + 3] = 16;
	p83[3] = 250;
	CU_ASSERT_EQUAL(bm_parse_vpd83(p83, 4 + 20, &inq), 0);
	CU_ASSERT_EQUAL(inq.ndesig, 1);
	CU_ASSERT_EQUAL(bm_parse_vpd83(p83, 3, &inq), -EPROTO);
	CU_ASSERT_EQUAL(bm_parse_vpd80(p80, sizeof(p80), &inq), 0);
	CU_ASSERT_STRING_EQUAL(inq.serial, "SN12");
	CU_ASSERT_EQUAL(bm_parse_vpd80(p83, sizeof(p83), &inq), -EPROTO); /* wrong page */
	CU_ASSERT_EQUAL(bm_parse_vpdb0(b0, sizeof(b0), &maxb), 0);
	CU_ASSERT_EQUAL(maxb, 2048);
	CU_ASSERT_EQUAL(bm_parse_vpdb0(b0, 8, &maxb), -EPROTO);
}

static void test_capacity_and_pr_data(void)
{
	uint8_t rc16[32] = { 0, 0, 0, 0, 0, 0x01, 0xff, 0xff, 0, 0, 0x02, 0x00 };
	uint8_t keys[8 + 24] = { 0, 0, 0, 7, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0xa1, 0, 0, 0, 0, 0, 0, 0, 0xb2,
				 0xff, 0, 0, 0, 0, 0, 0, 0xc3 };
	uint8_t resv[24] = { 0, 0, 0, 9, 0, 0, 0, 16, 0x4d, 0x44, 0x53, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x06, 0, 0 };
	uint8_t none[8] = { 0, 0, 0, 3, 0, 0, 0, 0 };
	struct blkmap_pr_keys k;
	struct blkmap_pr_reservation r;
	uint64_t blocks;
	uint32_t bs;

	CU_ASSERT_EQUAL(bm_parse_readcap16(rc16, sizeof(rc16), &blocks, &bs), 0);
	CU_ASSERT_EQUAL(blocks, 0x20000);
	CU_ASSERT_EQUAL(bs, 512);
	rc16[10] = 0x03; /* 768-byte blocks: not a power of two */
	CU_ASSERT_EQUAL(bm_parse_readcap16(rc16, sizeof(rc16), &blocks, &bs), -EPROTO);
	CU_ASSERT_EQUAL(bm_parse_read_keys(keys, sizeof(keys), &k), 0);
	CU_ASSERT_EQUAL(k.generation, 7);
	CU_ASSERT_EQUAL(k.total, 3);
	CU_ASSERT_EQUAL_FATAL(k.nkeys, 3);
	CU_ASSERT_EQUAL(k.keys[0], 0xa1);
	CU_ASSERT_EQUAL(k.keys[2], 0xff000000000000c3ull);
	/* the target claims 3 keys but sent one: only what arrived is read */
	CU_ASSERT_EQUAL(bm_parse_read_keys(keys, 16, &k), 0);
	CU_ASSERT_EQUAL(k.nkeys, 1);
	CU_ASSERT_EQUAL(k.total, 3);
	CU_ASSERT_EQUAL(bm_parse_read_keys(keys, 4, &k), -EPROTO);
	CU_ASSERT_EQUAL(bm_parse_read_resv(resv, sizeof(resv), &r), 0);
	CU_ASSERT_EQUAL(r.reserved, 1);
	CU_ASSERT_EQUAL(r.key, 0x4d44530000000001ull);
	CU_ASSERT_EQUAL(r.type, BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY);
	CU_ASSERT_EQUAL(bm_parse_read_resv(resv, 20, &r), -EPROTO);
	CU_ASSERT_EQUAL(bm_parse_read_resv(none, sizeof(none), &r), 0);
	CU_ASSERT_EQUAL(r.reserved, 0);
	CU_ASSERT_EQUAL(r.generation, 3);
}

/* REPORT CAPABILITIES as tgt 1.0.85 and LIO answer it: tgt is not persist-through-power-loss capable
 * (it refuses REGISTER with APTPL), LIO is, and says when APTPL is active. */
static void test_report_caps(void)
{
	uint8_t tgt[8] = { 0x00, 0x08, 0x00, 0x80, 0xea, 0x01, 0, 0 };
	uint8_t lio[8] = { 0x00, 0x08, 0x11, 0x81, 0xea, 0x01, 0, 0 };
	uint8_t shortlen[8] = { 0x00, 0x06, 0x01, 0x00, 0, 0, 0, 0 };
	struct blkmap_pr_caps c;

	CU_ASSERT_EQUAL(bm_parse_report_caps(tgt, sizeof(tgt), &c), 0);
	CU_ASSERT_EQUAL(c.ptpl_c, 0);
	CU_ASSERT_EQUAL(c.ptpl_a, 0);
	CU_ASSERT_EQUAL(c.tmv, 1);
	CU_ASSERT_EQUAL(c.type_mask, 0xea01);
	CU_ASSERT_EQUAL(bm_parse_report_caps(lio, sizeof(lio), &c), 0);
	CU_ASSERT_EQUAL(c.ptpl_c, 1);
	CU_ASSERT_EQUAL(c.ptpl_a, 1);
	CU_ASSERT_EQUAL(c.crh, 1);
	CU_ASSERT_EQUAL(c.sip_c, 0);
	/* short data, or a LENGTH below the 8 bytes SPC defines */
	CU_ASSERT_EQUAL(bm_parse_report_caps(lio, 7, &c), -EPROTO);
	CU_ASSERT_EQUAL(bm_parse_report_caps(shortlen, sizeof(shortlen), &c), -EPROTO);
	/* the CDB: PERSISTENT RESERVE IN, service action 2, allocation length 8 */
	{
		struct bm_cmd cmd;
		memset(&cmd, 0, sizeof(cmd));
		bm_cdb_prin(&cmd, 2, 8);
		CU_ASSERT_EQUAL(cmd.cdb[0], 0x5e);
		CU_ASSERT_EQUAL(cmd.cdb[1], 2);
		CU_ASSERT_EQUAL(cmd.cdb[8], 8);
		CU_ASSERT_EQUAL(cmd.cdb_len, 10);
	}
}

static void test_report_luns(void)
{
	/* LUN 0 (peripheral), LUN 1 (peripheral), LUN 0x105 (flat), one in logical unit addressing
	 * (skipped), and a fifth entry past the list length */
	uint8_t d[8 + 40] = { 0, 0, 0, 32, 0, 0, 0, 0,
			      0, 0, 0, 0, 0, 0, 0, 0,
			      0, 1, 0, 0, 0, 0, 0, 0,
			      0x41, 0x05, 0, 0, 0, 0, 0, 0,
			      0x80, 0x07, 0, 0, 0, 0, 0, 0,
			      0, 9, 0, 0, 0, 0, 0, 0 };
	unsigned l[8];

	CU_ASSERT_EQUAL_FATAL(bm_parse_report_luns(d, sizeof(d), l, 8), 3);
	CU_ASSERT_EQUAL(l[0], 0);
	CU_ASSERT_EQUAL(l[1], 1);
	CU_ASSERT_EQUAL(l[2], 0x105);
	CU_ASSERT_EQUAL(bm_parse_report_luns(d, sizeof(d), l, 2), 2); /* room for two */
	/* a list length beyond the bytes received: only what arrived */
	d[3] = 200;
	CU_ASSERT_EQUAL(bm_parse_report_luns(d, 8 + 16 + 4, l, 8), 2);
	CU_ASSERT_EQUAL(bm_parse_report_luns(d, sizeof(d), l, 8), 4);
	CU_ASSERT_EQUAL(l[3], 9);
	/* an empty list, and a header cut short */
	CU_ASSERT_EQUAL(bm_parse_report_luns(d, 8, l, 8), 0);
	CU_ASSERT_EQUAL(bm_parse_report_luns(d, 7, l, 8), -EPROTO);
}

static void test_cdbs_and_status(void)
{
	struct bm_cmd c;
	struct blkmap_pr_out a = { .action = BLKMAP_PR_PREEMPT_AND_ABORT, .key = 0x1122334455667788ull,
				   .sa_key = 0xa1, .type = BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY };
	uint8_t param[24];
	char msg[200];
	int retry;

	memset(&c, 0, sizeof(c));
	bm_cdb_prout(&c, &a, param);
	CU_ASSERT_EQUAL(c.cdb_len, 10);
	CU_ASSERT_EQUAL(c.cdb[0], 0x5f);
	CU_ASSERT_EQUAL(c.cdb[1], 5);
	CU_ASSERT_EQUAL(c.cdb[2], 6);
	CU_ASSERT_EQUAL(c.cdb[8], 24);
	CU_ASSERT_EQUAL(param[0], 0x11);
	CU_ASSERT_EQUAL(param[7], 0x88);
	CU_ASSERT_EQUAL(param[15], 0xa1);
	CU_ASSERT_EQUAL(param[20], 0);
	bm_cdb_prin(&c, 1, 24);
	CU_ASSERT_EQUAL(c.cdb[0], 0x5e);
	CU_ASSERT_EQUAL(c.cdb[1], 1);
	CU_ASSERT_EQUAL(c.cdb[8], 24);
	bm_cdb_inquiry(&c, 1, 0x83, 4096);
	CU_ASSERT_EQUAL(c.cdb_len, 6);
	CU_ASSERT_EQUAL(c.cdb[2], 0x83);
	CU_ASSERT_EQUAL(c.cdb[3], 0x10);
	CU_ASSERT_EQUAL(c.cdb[4], 0x00);

	CU_ASSERT_EQUAL(bm_scsi_status(SCSI_STATUS_GOOD, 0, 0, msg, sizeof(msg), &retry), 0);
	CU_ASSERT_EQUAL(bm_scsi_status(SCSI_STATUS_RESERVATION_CONFLICT, 0, 0, msg, sizeof(msg), &retry), -EBADE);
	CU_ASSERT_EQUAL(retry, 0);
	CU_ASSERT_STRING_EQUAL(msg, "RESERVATION CONFLICT");
	/* reservations preempted: retry, the next attempt tells the truth */
	CU_ASSERT_EQUAL(bm_scsi_status(SCSI_STATUS_CHECK_CONDITION, SCSI_SENSE_UNIT_ATTENTION, 0x2a03, msg, sizeof(msg),
				       &retry), -EAGAIN);
	CU_ASSERT_EQUAL(retry, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "2a/03"));
	CU_ASSERT_EQUAL(bm_scsi_status(SCSI_STATUS_CHECK_CONDITION, SCSI_SENSE_ILLEGAL_REQUEST, 0x2100, msg, sizeof(msg),
				       &retry), -ERANGE);
	CU_ASSERT_EQUAL(retry, 0);
	CU_ASSERT_EQUAL(bm_scsi_status(SCSI_STATUS_CHECK_CONDITION, SCSI_SENSE_MEDIUM_ERROR, 0x1100, msg, sizeof(msg),
				       &retry), -EIO);
	CU_ASSERT_EQUAL(bm_scsi_status(SCSI_STATUS_BUSY, 0, 0, msg, sizeof(msg), &retry), -EBUSY);
	CU_ASSERT_EQUAL(retry, 1);
}

static void add_desig(struct blkmap_inquiry *inq, uint8_t type, uint8_t code_set, uint8_t assoc, const char *hex)
{
	struct blkmap_designator *d = &inq->desig[inq->ndesig++];
	size_t n = strlen(hex) / 2;

	memset(d, 0, sizeof(*d));
	d->type = type;
	d->code_set = code_set;
	d->association = assoc;
	d->len = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &d->bytes[i]);
}

/* The designator a host names the LUN by, as udev's scsi_id picks it: NAA 6 over NAA 5 over other NAA
 * types, then EUI-64, T10, SCSI name; logical-unit ones only; page order within a kind. This is what
 * tgt answers (T10, NAA 3, NAA 6), and where the NAA 6 one must win. */
static void test_preferred_designator(void)
{
	struct blkmap_inquiry inq = { 0 };
	const struct blkmap_designator *d;
	char s[600];

	CU_ASSERT_PTR_NULL(blkmap_inquiry_preferred(&inq));
	add_desig(&inq, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY, 1, "6000000000000000000000000000aaaa"); /* target port */
	CU_ASSERT_PTR_NULL(blkmap_inquiry_preferred(&inq));
	add_desig(&inq, BLKMAP_DESIG_T10, BLKMAP_CODE_ASCII, 0, "534c30303031");
	CU_ASSERT_EQUAL(blkmap_inquiry_preferred(&inq)->type, BLKMAP_DESIG_T10);
	add_desig(&inq, BLKMAP_DESIG_EUI64, BLKMAP_CODE_BINARY, 0, "0011223344556677");
	CU_ASSERT_EQUAL(blkmap_inquiry_preferred(&inq)->type, BLKMAP_DESIG_EUI64);
	add_desig(&inq, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY, 0, "3000000100000001");
	add_desig(&inq, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY, 0, "5001405000000001");
	d = blkmap_inquiry_preferred(&inq);
	CU_ASSERT_EQUAL(d->bytes[0], 0x50);
	add_desig(&inq, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY, 0, "60000000000000000000000329901001");
	add_desig(&inq, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY, 0, "60000000000000000000000329901002");
	d = blkmap_inquiry_preferred(&inq);
	blkmap_designator_str(d, s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "naa:60000000000000000000000329901001");
	CU_ASSERT_TRUE(blkmap_designator_equal(d, &inq.desig[5]));
	CU_ASSERT_FALSE(blkmap_designator_equal(d, &inq.desig[6]));
	CU_ASSERT_FALSE(blkmap_designator_equal(&inq.desig[0], &inq.desig[5])); /* association differs */
}

TEST_SUITE(blkmap_scsi, "blkmap/scsi", NULL, NULL,
	   { "preferred_designator", test_preferred_designator },
	   { "vpd", test_vpd },
	   { "capacity_and_pr_data", test_capacity_and_pr_data },
	   { "report_caps", test_report_caps },
	   { "report_luns", test_report_luns },
	   { "cdbs_and_status", test_cdbs_and_status });
