/* A LUN that comes back different after a reconnect is never read as the one opened: against a real
 * tgtd, a session is dropped (as a target restart or a network cut would) after the LUN's bytes or
 * its SCSI identity were changed behind it; the next command fails with -BLKMAP_EWRONGLUN naming
 * what differs instead of returning the other LUN's data, and once the LUN is the right one again the
 * device goes back into service by itself. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REGION 512

static void file_write(const char *path, const void *buf, size_t len, off_t off)
{
	int fd = open(path, O_WRONLY);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(pwrite(fd, buf, len, off), (ssize_t)len);
	CU_ASSERT_EQUAL(fsync(fd), 0);
	close(fd);
}

/* Run the context's loop until the device's identity state is want (0 or -BLKMAP_EWRONGLUN), for at
 * most limit_ms; returns the state reached. */
static int wait_identity(struct blkmap_ctx *ctx, struct blkmap_dev *dev, int want, int64_t limit_ms)
{
	int64_t end = bmt_now_ms() + limit_ms;
	int st;

	while ((st = blkmap_dev_identity(dev, NULL, 0)) != want && bmt_now_ms() < end)
		blkmap_run_once(ctx, 100);
	return st;
}

/* The bytes an identity region holds are overwritten on the target, the session dropped: the read
 * that follows fails, named, and reads nothing; the bytes put back, the device (keeping its session)
 * returns to service with no command queued, and reads the data again. */
static void test_region_changed_then_back(void)
{
	struct test_lab *lab = lab_up(1, "8M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	uint8_t label[4096], buf[4096], zeros[REGION] = { 0 };
	char why[400];
	int owner;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	test_fill_random(label, sizeof(label), 25);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_pwrite(dev, label, sizeof(label), 0), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_expect(dev, &owner, "test label", 0, label, REGION, NULL, NULL), 0);
	blkmap_dev_keep_session(dev, 1);
	CU_ASSERT_EQUAL(blkmap_dev_identity(dev, why, sizeof(why)), 0);

	/* another LUN now answers at this URL: its first bytes are zeros */
	file_write(lab->files[0], zeros, sizeof(zeros), 0);
	CU_ASSERT_TRUE_FATAL(bmt_lab_drop_sessions(lab) >= 1);
	memset(buf, 0xa5, sizeof(buf));
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), -BLKMAP_EWRONGLUN);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), lab->urls[0]));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "came back different"));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "test label at byte 0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "zero"));
	for (size_t i = 0; i < sizeof(buf); i++)
		if (buf[i] != 0xa5) {
			CU_FAIL("a read of a LUN out of service wrote into the buffer");
			break;
		}
	CU_ASSERT_EQUAL(blkmap_dev_identity(dev, why, sizeof(why)), -BLKMAP_EWRONGLUN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "test label"));
	/* new commands fail at once too, writes included */
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, label, sizeof(label), 0), -BLKMAP_EWRONGLUN);
	CU_ASSERT_TRUE(blkmap_dev_identity_failures(dev) >= 1);

	/* the right LUN is back: service resumes with nothing asked of the device */
	file_write(lab->files[0], label, REGION, 0);
	CU_ASSERT_EQUAL(wait_identity(ctx, dev, 0, 15000), 0);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(memcmp(buf, label, sizeof(buf)), 0);

	/* a region removed is not checked any more */
	blkmap_dev_unexpect(dev, &owner);
	file_write(lab->files[0], zeros, sizeof(zeros), 0);
	CU_ASSERT_TRUE(bmt_lab_drop_sessions(lab) >= 1);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(memcmp(buf, zeros, REGION), 0);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

static int set_scsi_id(struct test_lab *lab, const char *id)
{
	char ctl[32];

	if (bmt_lab_value(lab, "LAB_CTL", ctl, sizeof(ctl)) != 0)
		return -1;
	return test_run(NULL, "tgtadm -C %s --lld iscsi --mode logicalunit --op update --tid 1 --lun 1 --params scsi_id=%s",
			ctl, id);
}

/* The LUN's designators change (another LUN mapped at the same target and number): refused, with
 * the designator named; the old identity restored, the device is back. No region is involved. */
static void test_designator_changed(void)
{
	struct test_lab *lab = lab_up(1, "8M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	struct blkmap_inquiry inq;
	char why[400], old_id[64];
	uint8_t buf[4096];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_inquiry(dev, &inq), 0);
	snprintf(old_id, sizeof(old_id), "%s", inq.serial); /* san-lab sets scsi_id and scsi_sn alike */
	CU_ASSERT_TRUE_FATAL(old_id[0] != 0);

	CU_ASSERT_EQUAL_FATAL(set_scsi_id(lab, "OTHERLUN0001"), 0);
	CU_ASSERT_TRUE_FATAL(bmt_lab_drop_sessions(lab) >= 1);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), -BLKMAP_EWRONGLUN);
	CU_ASSERT_EQUAL(blkmap_dev_identity(dev, why, sizeof(why)), -BLKMAP_EWRONGLUN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "designator"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is gone"));

	CU_ASSERT_EQUAL_FATAL(set_scsi_id(lab, old_id), 0);
	/* no keep-session asked: a device out of service logs in again all the same, until it passes */
	CU_ASSERT_EQUAL(wait_identity(ctx, dev, 0, 15000), 0);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), 0);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

/* A simple volume bound to a LUN makes its signature an identity region: the engine's volume reads
 * refuse a LUN whose signature is gone after a reconnect, naming the device. */
static void test_volume_signature(void)
{
	struct test_lab *lab = lab_up(1, "8M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_dev *dev = NULL;
	struct blkmap_vol *vol;
	struct blkmap_sig_comp comps[2];
	uint8_t storage[64], runid[16], buf[8192], zeros[4096] = { 0 };
	uint32_t simple;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	test_fill_random(runid, sizeof(runid), 26);
	bmt_label_write(lab->files[0], lab->lun_bytes, runid, 0);
	bmt_label_sig(comps, storage, runid, 0);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_simple(vol, comps, 2, &simple), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_bind(vol, simple, dev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_validate(vol), 0);
	CU_ASSERT_EQUAL(blkmap_vol_pread(vol, buf, sizeof(buf), 1 << 20), 0);

	/* the tail component of the signature is gone */
	file_write(lab->files[0], zeros, sizeof(zeros), (off_t)lab->lun_bytes - 4096);
	CU_ASSERT_TRUE_FATAL(bmt_lab_drop_sessions(lab) >= 1);
	CU_ASSERT_EQUAL(blkmap_vol_pread(vol, buf, sizeof(buf), 1 << 20), -BLKMAP_EWRONGLUN);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), lab->urls[0]));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "signature at byte -4096"));

	/* unbinding removes the volume's regions: the device alone is in service again at its next login */
	CU_ASSERT_EQUAL(blkmap_vol_bind(vol, simple, NULL), 0);
	CU_ASSERT_EQUAL(wait_identity(ctx, dev, 0, 15000), 0);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, 4096, 1 << 20), 0);
	blkmap_vol_free(vol);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

/* A region the session cannot read because another initiator holds the LUN reserved does not fail
 * the check: the read that follows fails as the RESERVATION CONFLICT it is, not as another LUN. */
static void test_reserved_region_not_wrong(void)
{
	struct test_lab *lab = lab_up(1, "8M", NULL);
	struct blkmap_ctx *ctx, *other;
	struct blkmap_dev *dev = NULL, *holder = NULL;
	uint8_t label[REGION], buf[4096];
	const uint64_t key = 0x4d44530000000077ull;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	other = bmt_ctx(BMT_INITIATOR_B, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[0], 0, &dev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(other, lab->urls[0], 0, &holder), 0);
	test_fill_random(label, sizeof(label), 27);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_pwrite(dev, label, sizeof(label), 0), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_expect(dev, ctx, "test label", 0, label, sizeof(label), NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_pr_register(holder, 0, key, 0), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_pr_reserve(holder, key, BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY), 0);

	CU_ASSERT_TRUE_FATAL(bmt_lab_drop_sessions(lab) >= 1);
	CU_ASSERT_EQUAL(blkmap_dev_pread(dev, buf, sizeof(buf), 0), -BLKMAP_ERESERVATION);
	CU_ASSERT_EQUAL(blkmap_dev_identity(dev, NULL, 0), 0);
	CU_ASSERT_EQUAL(blkmap_dev_identity_failures(dev), 0);
	CU_ASSERT_TRUE(blkmap_dev_identity_checks(dev) >= 1);

	CU_ASSERT_EQUAL(blkmap_pr_clear(holder, key), 0);
	blkmap_dev_close(holder);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(other);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

TEST_SUITE(blkmap_ident, "integration/blkmap_ident", NULL, NULL,
	   { "region_changed_then_back", test_region_changed_then_back },
	   { "designator_changed", test_designator_changed },
	   { "volume_signature", test_volume_signature },
	   { "reserved_region_not_wrong", test_reserved_region_not_wrong });
