/* The harness is real: a 2-LUN tgtd lab, SCSI over TCP with libiscsi, data checked on the wire and
 * in the LUNs' backing files; CHAP and initiator ACLs really refuse strangers. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/lab_iscsi.h"

#include <fcntl.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_INITIATOR "iqn.2024-01.test.pnfs:harness"

static struct iscsi_context *lun_connect(const char *urlstr, const char *initiator, int *lun)
{
	return lab_iscsi_connect(urlstr, initiator ? initiator : TEST_INITIATOR, lun);
}

static void lun_close(struct iscsi_context *ctx)
{
	if (!ctx)
		return;
	iscsi_logout_sync(ctx);
	iscsi_destroy_context(ctx);
}

static int read_file_at(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;
	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static void test_write_read_two_luns(void)
{
	const size_t len = 1 << 20;          /* 1 MiB per write */
	const uint64_t lbas[] = { 0, 4096, 131072 - 2048 }; /* start, middle, last MiB of 64 MiB */
	struct test_lab *lab = lab_up(2, "64M", NULL);
	unsigned char *pat = malloc(len), *back = malloc(len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	CU_ASSERT_EQUAL(lab->nluns, 2);
	CU_ASSERT_EQUAL(lab->lun_bytes, 64ull << 20);
	for (int l = 0; l < lab->nluns; l++) {
		int lun = -1;
		struct iscsi_context *ctx = lun_connect(lab->urls[l], NULL, &lun);
		struct scsi_task *t;
		struct scsi_readcapacity16 *rc16;

		CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
		t = iscsi_readcapacity16_sync(ctx, lun);
		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		CU_ASSERT_EQUAL(t->status, SCSI_STATUS_GOOD);
		rc16 = scsi_datain_unmarshall(t);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rc16);
		CU_ASSERT_EQUAL(rc16->block_length, 512);
		CU_ASSERT_EQUAL((rc16->returned_lba + 1) * rc16->block_length, lab->lun_bytes);
		scsi_free_scsi_task(t);

		for (size_t k = 0; k < sizeof(lbas) / sizeof(lbas[0]); k++) {
			test_fill_random(pat, len, 1000 * (uint64_t)l + k + 1);
			t = iscsi_write16_sync(ctx, lun, lbas[k], pat, len, 512, 0, 0, 0, 0, 0);
			CU_ASSERT_PTR_NOT_NULL_FATAL(t);
			CU_ASSERT_EQUAL(t->status, SCSI_STATUS_GOOD);
			scsi_free_scsi_task(t);

			t = iscsi_read16_sync(ctx, lun, lbas[k], len, 512, 0, 0, 0, 0, 0);
			CU_ASSERT_PTR_NOT_NULL_FATAL(t);
			CU_ASSERT_EQUAL(t->status, SCSI_STATUS_GOOD);
			CU_ASSERT_EQUAL(t->datain.size, (int)len);
			CU_ASSERT(t->datain.size == (int)len && memcmp(t->datain.data, pat, len) == 0);
			scsi_free_scsi_task(t);

			/* The bytes are really on the LUN: its backing file holds them at LBA * 512. */
			CU_ASSERT_EQUAL(read_file_at(lab->files[l], back, len, (off_t)(lbas[k] * 512)), 0);
			CU_ASSERT(memcmp(back, pat, len) == 0);
		}
		/* Past the end is refused by the target, not silently wrapped. */
		t = iscsi_read16_sync(ctx, lun, lab->lun_bytes / 512, 512, 512, 0, 0, 0, 0, 0);
		CU_ASSERT(t == NULL || t->status == SCSI_STATUS_CHECK_CONDITION);
		if (t)
			scsi_free_scsi_task(t);
		lun_close(ctx);
	}
	/* Two LUNs, two different patterns: LUN 1's data is not LUN 2's. */
	CU_ASSERT_EQUAL(read_file_at(lab->files[0], pat, len, 0), 0);
	CU_ASSERT_EQUAL(read_file_at(lab->files[1], back, len, 0), 0);
	CU_ASSERT(memcmp(pat, back, len) != 0);
	free(pat);
	free(back);
	lab_down(lab);
}

static void test_chap_required(void)
{
	struct lab_opts o = { .chap = "labuser:secret123456" };
	struct test_lab *lab = lab_up(1, "4M", &o);
	char plain[300];
	int lun;
	struct iscsi_context *ctx;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	/* The URL carries the credentials; strip them to act as a stranger. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(strchr(lab->urls[0], '@'));
	snprintf(plain, sizeof(plain), "iscsi://%s", strchr(lab->urls[0], '@') + 1);
	ctx = lun_connect(plain, NULL, &lun);
	CU_ASSERT_PTR_NULL(ctx);
	lun_close(ctx);
	ctx = lun_connect(lab->urls[0], NULL, &lun);
	CU_ASSERT_PTR_NOT_NULL(ctx);
	lun_close(ctx);
	lab_down(lab);
}

static void test_initiator_acl(void)
{
	struct lab_opts o = { .initiator = TEST_INITIATOR };
	struct test_lab *lab = lab_up(1, "4M", &o);
	struct iscsi_context *ctx;
	int lun;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = lun_connect(lab->urls[0], "iqn.2024-01.test.pnfs:stranger", &lun);
	CU_ASSERT_PTR_NULL(ctx);
	lun_close(ctx);
	ctx = lun_connect(lab->urls[0], TEST_INITIATOR, &lun);
	CU_ASSERT_PTR_NOT_NULL(ctx);
	lun_close(ctx);
	lab_down(lab);
}

TEST_SUITE(lab, "integration/lab", NULL, NULL,
	   { "write_read_two_luns", test_write_read_two_luns },
	   { "chap_required", test_chap_required },
	   { "initiator_acl", test_initiator_acl });
