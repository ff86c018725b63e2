/* Discovery on a real lab: four labelled tgtd LUNs among two unlabelled decoys (one of them carrying
 * half a signature) are found by signature through SendTargets + REPORT LUNS whatever their order,
 * the cache spares a second resolve any device read, an unmatched volume is an error naming it, SCSI
 * volumes resolve by their VPD 0x83 designator, the same LUN files behind loop devices are found
 * through the local block-device path, and a volume's LUNs are opened, and its portals asked, all at
 * once. */
#include "blkmap/internal.h"
#include "tests/blkmap/helpers.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LUN_BYTES (8ull << 20)

/* LUN i (0-based) carries label order[i], or none when order[i] < 0 */
static const int order[6] = { 2, -1, 0, 3, -2, 1 };

static void runid_fill(uint8_t runid[16], int salt)
{
	test_fill_random(runid, 16, (uint64_t)getpid() * 131 + (uint64_t)salt);
}

static void label_lab(const struct test_lab *lab, const uint8_t runid[16])
{
	for (int i = 0; i < 6; i++) {
		if (order[i] >= 0) {
			bmt_label_write(lab->files[i], LUN_BYTES, runid, (uint32_t)order[i]);
		} else if (order[i] == -2) {
			/* a decoy with the head of label 1 but not its tail: all components must match */
			struct blkmap_sig_comp c[2];
			uint8_t st[64];
			int fd = open(lab->files[i], O_WRONLY);
			bmt_label_sig(c, st, runid, 1);
			CU_ASSERT_FATAL(fd >= 0);
			CU_ASSERT_FATAL(pwrite(fd, c[0].bytes, c[0].len, 512) == (ssize_t)c[0].len);
			close(fd);
		}
	}
}

static int lun_of_label(int label)
{
	for (int i = 0; i < 6; i++)
		if (order[i] == label)
			return i;
	return -1;
}

static void test_signatures_on_lab(void)
{
	struct test_lab *lab = lab_up(6, "8M", NULL);
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct blkmap_report *rep = NULL;
	struct blkmap_discover_opts o = { 0 };
	char portal[128];
	const char *portals[1] = { portal };
	uint8_t runid[16];
	unsigned reads[6];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	runid_fill(runid, 1);
	label_lab(lab, runid);
	snprintf(portal, sizeof(portal), "iscsi://127.0.0.1:%d", lab->port);
	o.portals = portals;
	o.nportals = 1;
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	vol = bmt_pool_volume(runid, 4, 1 << 20, 6 << 20, 64 << 10);

	CU_ASSERT_EQUAL_FATAL(blkmap_resolve(ctx, vol, &o, &rep), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
	CU_ASSERT_EQUAL(rep->ncandidates, 6); /* the controller LUN 0 is no candidate */
	CU_ASSERT_EQUAL_FATAL(rep->nmatches, 4);
	for (unsigned k = 0; k < 4; k++) {
		const struct blkmap_match *m = &rep->matches[k];
		int lun = lun_of_label((int)k);
		CU_ASSERT_EQUAL(m->leaf, 2 * k);
		CU_ASSERT_STRING_EQUAL(m->dev_name, lab->urls[lun]);
		CU_ASSERT_STRING_EQUAL(blkmap_dev_name(blkmap_vol_leaf_dev(vol, 2 * k)), lab->urls[lun]);
		CU_ASSERT_PTR_NOT_NULL(strstr(m->how, "signature 512:504e465354455354"));
		CU_ASSERT_PTR_NOT_NULL(strstr(m->how, "and -4096:"));
		CU_ASSERT_EQUAL(m->candidates, 6);
		CU_ASSERT_EQUAL(m->also_matched, 0);
	}
	CU_ASSERT_EQUAL(blkmap_vol_size_bytes(vol, 8), 24ull << 20);
	blkmap_report_free(rep);

	/* again: every candidate is cached, no device is read a second time */
	for (int i = 0; i < 6; i++)
		reads[i] = bm_cache_reads(ctx, lab->urls[i]);
	CU_ASSERT(reads[0] > 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_resolve(ctx, vol, &o, NULL), 0);
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(bm_cache_reads(ctx, lab->urls[i]), reads[i]);
	blkmap_vol_free(vol);

	/* a fifth leaf nobody carries: an error that names it */
	vol = bmt_pool_volume(runid, 5, 1 << 20, 6 << 20, 64 << 10);
	CU_ASSERT_EQUAL(blkmap_resolve(ctx, vol, &o, &rep), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "volume 8 (simple, signature 512:504e4653"));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "matched none of the 6 candidate devices"));
	CU_ASSERT_PTR_NULL(blkmap_vol_leaf_dev(vol, 0)); /* nothing bound on failure */
	blkmap_report_free(rep);
	blkmap_vol_free(vol);

	/* a portal nobody serves */
	snprintf(portal, sizeof(portal), "iscsi://127.0.0.1:%d", test_free_port());
	vol = bmt_pool_volume(runid, 4, 1 << 20, 6 << 20, 64 << 10);
	CU_ASSERT_EQUAL(blkmap_resolve(ctx, vol, &o, NULL), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "matched none of the 0 candidate devices; portal "));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), portal));
	blkmap_vol_free(vol);
	/* a dead portal next to a live one: the leaves are found through the live one */
	{
		char live[128];
		const char *two[2] = { portal, live };
		struct blkmap_discover_opts o2 = { .portals = two, .nportals = 2 };
		snprintf(live, sizeof(live), "iscsi://127.0.0.1:%d", lab->port);
		vol = bmt_pool_volume(runid, 4, 1 << 20, 6 << 20, 64 << 10);
		CU_ASSERT_EQUAL(blkmap_resolve(ctx, vol, &o2, NULL), 0);
		blkmap_vol_free(vol);
	}

	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

static void test_scsi_designators(void)
{
	struct test_lab *lab = lab_up(3, "4M", NULL);
	struct blkmap_ctx *ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	struct blkmap_dev *dev;
	struct blkmap_inquiry inq[3];
	struct blkmap_discover_opts o = { 0 };
	struct blkmap_report *rep = NULL;
	struct blkmap_vol *vol;
	char portal[128];
	const char *portals[1] = { portal };
	uint32_t a, b, c, top, m[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[i], 0, &dev), 0);
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_inquiry(dev, &inq[i]), 0);
		blkmap_dev_close(dev);
	}
	/* a concat of LUN 3 and LUN 1, named by their T10 vendor ids */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	for (int i = 2; i >= 0; i -= 2) {
		const struct blkmap_designator *d = NULL;
		for (unsigned k = 0; k < inq[i].ndesig; k++)
			if (inq[i].desig[k].type == BLKMAP_DESIG_T10 && inq[i].desig[k].association == 0)
				d = &inq[i].desig[k];
		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_scsi(vol, BLKMAP_DESIG_T10, (enum blkmap_code_set)d->code_set,
							  d->bytes, d->len, 0x1234, i == 2 ? &a : &b), 0);
	}
	m[0] = a;
	m[1] = b;
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_concat(vol, m, 2, &top), 0);
	snprintf(portal, sizeof(portal), "iscsi://127.0.0.1:%d", lab->port);
	o.portals = portals;
	o.nportals = 1;
	CU_ASSERT_EQUAL_FATAL(blkmap_resolve(ctx, vol, &o, &rep), 0);
	CU_ASSERT_EQUAL_FATAL(rep->nmatches, 2);
	CU_ASSERT_STRING_EQUAL(rep->matches[0].dev_name, lab->urls[2]);
	CU_ASSERT_STRING_EQUAL(rep->matches[1].dev_name, lab->urls[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(rep->matches[0].how, "designator t10:"));
	CU_ASSERT_EQUAL(blkmap_vol_size_bytes(vol, top), 8ull << 20);
	blkmap_report_free(rep);
	blkmap_vol_free(vol);
	/* a designator no LUN has */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_scsi(vol, BLKMAP_DESIG_NAA, BLKMAP_CODE_BINARY,
						  (const uint8_t *)"\x60\x01\x02\x03\x04\x05\x06\x07", 8, 0, &c), 0);
	CU_ASSERT_EQUAL(blkmap_resolve(ctx, vol, &o, NULL), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(ctx), "volume 0 (scsi, designator naa:6001020304050607)"));
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	lab_down(lab);
}

static void test_signatures_on_loop_devices(void)
{
	struct test_lab *lab;
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct blkmap_report *rep = NULL;
	struct blkmap_discover_opts o = { 0 };
	char loops[6][64];
	uint8_t runid[16];
	unsigned char buf[4096], back[4096];

	TEST_SKIP_IF(!bmt_have_loop(), "losetup unavailable (needs root and /dev/loop-control)");
	lab = lab_up(6, "8M", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	runid_fill(runid, 2);
	label_lab(lab, runid);
	/* the kernel sees the same LUN files as block devices; tgtd is left alone (no portal given) */
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL_FATAL(bmt_loop_attach(lab->files[i], loops[i], sizeof(loops[i])), 0);
	o.scan_local = 1;
	ctx = bmt_ctx(BMT_INITIATOR_A, 5000);
	vol = bmt_pool_volume(runid, 4, 1 << 20, 6 << 20, 64 << 10);
	CU_ASSERT_EQUAL_FATAL(blkmap_resolve(ctx, vol, &o, &rep), 0);
	CU_ASSERT_EQUAL_FATAL(rep->nmatches, 4);
	for (unsigned k = 0; k < 4; k++) {
		struct blkmap_dev *d = blkmap_vol_leaf_dev(vol, 2 * k);
		CU_ASSERT_STRING_EQUAL(rep->matches[k].dev_name, loops[lun_of_label((int)k)]);
		CU_ASSERT_EQUAL(blkmap_dev_kind(d), BLKMAP_DEV_BLOCK);
	}
	CU_ASSERT(rep->ncandidates >= 6);
	/* the bound devices write (probing was read-only): the first stripe unit lands in label 0's LUN */
	test_fill_random(buf, sizeof(buf), 9);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, sizeof(buf), 0), 0);
	blkmap_report_free(rep);
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	for (int i = 0; i < 6; i++)
		bmt_loop_detach(loops[i]);
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[lun_of_label(0)], back, sizeof(back), 1 << 20), 0);
	CU_ASSERT(memcmp(buf, back, sizeof(buf)) == 0);
	lab_down(lab);
}

/* The candidate LUNs are opened at once: behind a relay that answers nobody until four connections
 * are in, opening them one after another would wait out the login deadline on the first. */
/* A lab of four LUNs carrying the labels 0-3 of a fresh run ID, in LUN order. */
static struct test_lab *labelled_lab4(uint8_t runid[16], int salt)
{
	struct test_lab *lab = lab_up(4, "8M", NULL);

	runid_fill(runid, salt);
	for (int i = 0; lab && i < 4; i++)
		bmt_label_write(lab->files[i], LUN_BYTES, runid, (uint32_t)i);
	return lab;
}

/* The pool volume of labelled_lab4's four LUNs (run id runid), resolved with o by a new context for
 * initiator A in *ctx (the report in *rep). The caller frees all three. */
static struct blkmap_vol *resolve_pool4(const uint8_t *runid, const struct blkmap_discover_opts *o,
					struct blkmap_ctx **ctx, struct blkmap_report **rep)
{
	struct blkmap_vol *vol;

	*ctx = bmt_ctx(BMT_INITIATOR_A, 3000);
	vol = bmt_pool_volume(runid, 4, 1 << 20, 6 << 20, 64 << 10);
	CU_ASSERT_EQUAL(blkmap_resolve(*ctx, vol, o, rep), 0);
	return vol;
}

static void test_opens_at_once(void)
{
	uint8_t runid[16];
	struct test_lab *lab = labelled_lab4(runid, 7);
	struct ct_proxy *px;
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct blkmap_report *rep = NULL;
	struct blkmap_discover_opts o = { 0 };
	char urls[4][300];
	const char *paths[4];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	px = ct_proxy_start(lab->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	ct_proxy_hold(px, 4);
	for (int i = 0; i < 4; i++) {
		snprintf(urls[i], sizeof(urls[i]), "iscsi://127.0.0.1:%d/%s/%d", ct_proxy_port(px), lab->iqn, i + 1);
		paths[i] = urls[i];
	}
	o.paths = paths;
	o.npaths = 4;
	vol = resolve_pool4(runid, &o, &ctx, &rep);
	if (rep) {
		CU_ASSERT_EQUAL(rep->ncandidates, 4);
		CU_ASSERT_EQUAL(rep->nmatches, 4);
	}
	CU_ASSERT_EQUAL(ct_proxy_accepted(px), 4);
	for (unsigned k = 0; k < 4; k++) {
		struct blkmap_dev *d = blkmap_vol_leaf_dev(vol, 2 * k);
		CU_ASSERT_PTR_NOT_NULL(d);
		if (d)
			CU_ASSERT_STRING_EQUAL(blkmap_dev_name(d), urls[k]);
	}
	blkmap_report_free(rep);
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	ct_proxy_stop(px);
	lab_down(lab);
}

/* Portals are asked at once too: two relays to the lab that answer nobody until both have a
 * connection; asking one portal after the other would lose the first to the login deadline. */
static void test_portals_at_once(void)
{
	uint8_t runid[16];
	struct test_lab *lab = labelled_lab4(runid, 8);
	struct ct_proxy *px[2];
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	struct blkmap_report *rep = NULL;
	struct blkmap_discover_opts o = { 0 };
	char portals[2][128];
	const char *pp[2] = { portals[0], portals[1] };

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	for (int k = 0; k < 2; k++) {
		px[k] = ct_proxy_start(lab->port);
		CU_ASSERT_PTR_NOT_NULL_FATAL(px[k]);
		snprintf(portals[k], sizeof(portals[k]), "iscsi://127.0.0.1:%d", ct_proxy_port(px[k]));
	}
	ct_proxy_hold_with(px[0], px[1], 2);
	ct_proxy_hold_with(px[1], px[0], 2);
	o.portals = pp;
	o.nportals = 2;
	vol = resolve_pool4(runid, &o, &ctx, &rep);
	if (rep) {
		/* every LUN through each portal, in portal order */
		CU_ASSERT_EQUAL(rep->ncandidates, 8);
		for (unsigned i = 0; i < rep->ncandidates && i < 8; i++)
			CU_ASSERT_PTR_NOT_NULL(strstr(rep->candidate_names[i], portals[i / 4] + 8));
		CU_ASSERT_EQUAL(rep->nmatches, 4);
		for (unsigned k = 0; k < rep->nmatches; k++)
			CU_ASSERT_EQUAL(rep->matches[k].also_matched, 1);
	}
	blkmap_report_free(rep);
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	ct_proxy_stop(px[0]);
	ct_proxy_stop(px[1]);
	lab_down(lab);
}

TEST_SUITE(blkmap_discover, "integration/blkmap_discover", NULL, NULL,
	   { "signatures_on_lab", test_signatures_on_lab },
	   { "scsi_designators", test_scsi_designators },
	   { "signatures_on_loop_devices", test_signatures_on_loop_devices },
	   { "opens_at_once", test_opens_at_once },
	   { "portals_at_once", test_portals_at_once });
