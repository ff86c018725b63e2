/* SCSI persistent reservations through blkmap against tgtd, as the MDS fences and clients register:
 * REGISTER, RESERVE Exclusive Access - Registrants Only, an unregistered initiator refused with a
 * RESERVATION CONFLICT (-EBADE), PREEMPT AND ABORT fencing a registered one (its UNIT ATTENTION
 * consumed), CLEAR, a resolve kept out by the reservation saying so, and a registration that
 * survives a session drop only while the key is listed. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MDS 0x4d44530000000001ull
#define KEY_CLIENT 0xc11e000000000002ull
#define EA_RO BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY

static int has_key(struct blkmap_dev *dev, uint64_t key, unsigned *n)
{
	struct blkmap_pr_keys k;
	int found = 0;
	CU_ASSERT_EQUAL_FATAL(blkmap_pr_read_keys(dev, &k), 0);
	for (unsigned i = 0; i < k.nkeys; i++)
		found |= k.keys[i] == key;
	if (n)
		*n = k.total;
	return found;
}

/* A one-LUN lab opened by two initiators, the MDS's (A) in *m and a client's (B) in *c, each with its
 * own context. Aborts the test when any of it fails; two_hosts_down frees it all. */
static struct test_lab *two_hosts_up(struct blkmap_ctx **mds, struct blkmap_ctx **client, struct blkmap_dev **m,
				    struct blkmap_dev **c)
{
	struct test_lab *lab = lab_up(1, "8M", NULL);

	*m = *c = NULL;
	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	*mds = bmt_ctx(BMT_INITIATOR_A, 5000);
	*client = bmt_ctx(BMT_INITIATOR_B, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(*mds, lab->urls[0], 0, m), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(*client, lab->urls[0], 0, c), 0);
	return lab;
}

static void two_hosts_down(struct test_lab *lab, struct blkmap_ctx *mds, struct blkmap_ctx *client,
			   struct blkmap_dev *m, struct blkmap_dev *c)
{
	blkmap_dev_close(c);
	blkmap_dev_close(m);
	blkmap_ctx_destroy(client);
	blkmap_ctx_destroy(mds);
	lab_down(lab);
}

static void test_register_reserve_fence(void)
{
	struct test_lab *lab;
	struct blkmap_ctx *mds, *client;
	struct blkmap_dev *m, *c;
	struct blkmap_pr_reservation r;
	unsigned char buf[4096], back[4096];
	unsigned nkeys;

	lab = two_hosts_up(&mds, &client, &m, &c);

	/* the MDS registers and takes the reservation */
	CU_ASSERT_EQUAL(blkmap_pr_register(m, 0, KEY_MDS, 0), 0);
	CU_ASSERT(has_key(m, KEY_MDS, &nkeys));
	CU_ASSERT_EQUAL(nkeys, 1);
	CU_ASSERT_EQUAL(blkmap_pr_read_reservation(m, &r), 0);
	CU_ASSERT_EQUAL(r.reserved, 0);
	CU_ASSERT_EQUAL(blkmap_pr_reserve(m, KEY_MDS, EA_RO), 0);
	CU_ASSERT_EQUAL(blkmap_pr_read_reservation(c, &r), 0);
	CU_ASSERT_EQUAL(r.reserved, 1);
	CU_ASSERT_EQUAL(r.key, KEY_MDS);
	CU_ASSERT_EQUAL(r.type, EA_RO);

	/* an unregistered initiator can neither write nor read: a distinct error */
	test_fill_random(buf, sizeof(buf), 1);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(c, buf, sizeof(buf), 0), -EBADE);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(client), "RESERVATION CONFLICT"));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(client), lab->urls[0]));
	CU_ASSERT_EQUAL(blkmap_dev_pread(c, back, sizeof(back), 0), -EBADE);
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, sizeof(back), 0), 0);
	CU_ASSERT(memcmp(back, buf, sizeof(buf)) != 0);
	/* nor find a volume on it by its label: the resolve says the LUN could not be read, and why */
	{
		const char *paths[1] = { lab->urls[0] };
		struct blkmap_discover_opts o = { .paths = paths, .npaths = 1 };
		struct blkmap_vol *vol;
		uint8_t runid[16];
		test_fill_random(runid, sizeof(runid), 3);
		bmt_label_write(lab->files[0], 8 << 20, runid, 0);
		vol = bmt_pool_volume(runid, 1, 1 << 20, 6 << 20, 64 << 10);
		CU_ASSERT_EQUAL(blkmap_resolve(client, vol, &o, NULL), -ENODEV);
		CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(client), "matched none of the 1 candidate devices; a candidate "
								     "could not be read: "));
		CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_errstr(client), "RESERVATION CONFLICT"));
		blkmap_vol_free(vol);
	}

	/* registered, the client writes */
	CU_ASSERT_EQUAL(blkmap_pr_register(c, 0, KEY_CLIENT, 1), 0);
	CU_ASSERT(has_key(m, KEY_CLIENT, &nkeys));
	CU_ASSERT_EQUAL(nkeys, 2);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(c, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, sizeof(back), 0), 0);
	CU_ASSERT(memcmp(back, buf, sizeof(buf)) == 0);

	/* fenced: PREEMPT AND ABORT of its key; its next write is refused (the UNIT ATTENTION the preempt
	 * queued for it is consumed on the way) */
	CU_ASSERT_EQUAL(blkmap_pr_preempt(m, KEY_MDS, KEY_CLIENT, EA_RO, 1), 0);
	CU_ASSERT(!has_key(m, KEY_CLIENT, &nkeys));
	CU_ASSERT_EQUAL(nkeys, 1);
	test_fill_random(buf, sizeof(buf), 2);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(c, buf, sizeof(buf), 0), -EBADE);
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[0], back, sizeof(back), 0), 0);
	CU_ASSERT(memcmp(back, buf, sizeof(buf)) != 0);
	/* the reservation holder still writes */
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(m, buf, sizeof(buf), 4096), 0);

	/* a wrong key is refused, CLEAR with the right one releases everything */
	CU_ASSERT_EQUAL(blkmap_pr_clear(c, KEY_CLIENT), -EBADE);
	CU_ASSERT_EQUAL(blkmap_pr_clear(m, KEY_MDS), 0);
	CU_ASSERT_EQUAL(blkmap_pr_read_reservation(m, &r), 0);
	CU_ASSERT_EQUAL(r.reserved, 0);
	CU_ASSERT(!has_key(m, KEY_MDS, &nkeys));
	CU_ASSERT_EQUAL(nkeys, 0);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(c, buf, sizeof(buf), 0), 0);

	two_hosts_down(lab, mds, client, m, c);
}

static void test_registration_after_reconnect(void)
{
	struct test_lab *lab;
	struct blkmap_ctx *mds, *client;
	struct blkmap_dev *m, *c;
	unsigned char buf[4096];

	lab = two_hosts_up(&mds, &client, &m, &c);
	CU_ASSERT_EQUAL(blkmap_pr_register(m, 0, KEY_MDS, 0), 0);
	CU_ASSERT_EQUAL(blkmap_pr_reserve(m, KEY_MDS, EA_RO), 0);
	CU_ASSERT_EQUAL(blkmap_pr_register(c, 0, KEY_CLIENT, 1), 0);
	test_fill_random(buf, sizeof(buf), 3);

	/* the target drops every session: on the new one the client's key is still listed, so its
	 * registration is restored and it keeps writing */
	CU_ASSERT(bmt_lab_drop_sessions(lab) >= 2);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(c, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(blkmap_dev_logins(c), 2);

	/* fenced, then the session drops: the key is gone, nothing is restored, it stays fenced */
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(m, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(blkmap_pr_preempt(m, KEY_MDS, KEY_CLIENT, EA_RO, 1), 0);
	CU_ASSERT(bmt_lab_drop_sessions(lab) >= 2);
	CU_ASSERT_EQUAL(blkmap_dev_pwrite(c, buf, sizeof(buf), 0), -EBADE);
	CU_ASSERT_EQUAL(blkmap_dev_logins(c), 3);
	CU_ASSERT(!has_key(c, KEY_CLIENT, NULL));
	CU_ASSERT_EQUAL(blkmap_pr_clear(m, KEY_MDS), 0);

	two_hosts_down(lab, mds, client, m, c);
}

/* The SCSI layout end to end: a client resolves a stripe of two SCSI base volumes by designator,
 * registers the volume's PR key on both LUNs, writes through the engine under the MDS's EA-RO
 * reservation; once the MDS preempts that key, volume I/O fails with -EBADE naming the LUN. */
static void test_scsi_volume_fencing(void)
{
	struct test_lab *lab = lab_up(2, "8M", NULL);
	struct blkmap_ctx *mds, *client;
	struct blkmap_dev *m[2] = { 0 };
	struct blkmap_vol *vol;
	struct blkmap_discover_opts o = { 0 };
	uint32_t base[2], top;
	char portal[128];
	const char *portals[1] = { portal };
	unsigned char buf[128 << 10];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	mds = bmt_ctx(BMT_INITIATOR_A, 5000);
	client = bmt_ctx(BMT_INITIATOR_B, 5000);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	for (int i = 0; i < 2; i++) {
		struct blkmap_inquiry inq;
		const struct blkmap_designator *d = NULL;
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(mds, lab->urls[i], 0, &m[i]), 0);
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_inquiry(m[i], &inq), 0);
		for (unsigned k = 0; k < inq.ndesig; k++)
			if (inq.desig[k].type == BLKMAP_DESIG_T10 && inq.desig[k].association == 0)
				d = &inq.desig[k];
		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_scsi(vol, BLKMAP_DESIG_T10, (enum blkmap_code_set)d->code_set, d->bytes,
							  d->len, KEY_CLIENT, &base[i]), 0);
		CU_ASSERT_EQUAL(blkmap_pr_register(m[i], 0, KEY_MDS, 1), 0);
		CU_ASSERT_EQUAL(blkmap_pr_reserve(m[i], KEY_MDS, EA_RO), 0);
	}
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_stripe(vol, 64 << 10, base, 2, &top), 0);
	snprintf(portal, sizeof(portal), "iscsi://127.0.0.1:%d", lab->port);
	o.portals = portals;
	o.nportals = 1;
	CU_ASSERT_EQUAL_FATAL(blkmap_resolve(client, vol, &o, NULL), 0);

	/* not registered yet: the reservation keeps the client out */
	test_fill_random(buf, sizeof(buf), 4);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, sizeof(buf), 0), -EBADE);
	CU_ASSERT_EQUAL(blkmap_vol_pr_register(vol), 0);
	CU_ASSERT(has_key(m[0], KEY_CLIENT, NULL));
	CU_ASSERT(has_key(m[1], KEY_CLIENT, NULL));
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, sizeof(buf), 0), 0);

	/* fenced on the second LUN only: the run on it fails as a reservation conflict, named */
	CU_ASSERT_EQUAL(blkmap_pr_preempt(m[1], KEY_MDS, KEY_CLIENT, EA_RO, 1), 0);
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, sizeof(buf), 0), -EBADE);
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), lab->urls[1]));
	CU_ASSERT_PTR_NOT_NULL(strstr(blkmap_vol_errstr(vol), "RESERVATION CONFLICT"));
	/* the first LUN alone still works */
	CU_ASSERT_EQUAL(blkmap_vol_pwrite(vol, buf, 64 << 10, 0), 0);

	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(blkmap_pr_clear(m[i], KEY_MDS), 0);
		blkmap_dev_close(m[i]);
	}
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(client);
	blkmap_ctx_destroy(mds);
	lab_down(lab);
}

TEST_SUITE(blkmap_pr, "integration/blkmap_pr", NULL, NULL,
	   { "register_reserve_fence", test_register_reserve_fence },
	   { "registration_after_reconnect", test_registration_after_reconnect },
	   { "scsi_volume_fencing", test_scsi_volume_fencing });
