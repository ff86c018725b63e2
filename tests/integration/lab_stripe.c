/* The blkmap integration suites' stripe over lab LUNs (see the header): labels written straight into
 * the LUNs' backing files, then found over iSCSI as a client finds a pool's LUNs. */
#include "tests/integration/lab_stripe.h"

#include "tests/blkmap/helpers.h"
#include "tests/harness.h"

#include <stdio.h>

void lab_stripe_labs_up(struct test_lab **labs, int n, const char *size)
{
	for (int i = 0; i < n; i++) {
		labs[i] = lab_up(1, size, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(labs[i]);
	}
}

struct blkmap_vol *lab_stripe_up(struct test_lab *const *labs, int nlabs, uint64_t seed, unsigned timeout_ms,
				 uint64_t start, uint64_t len, uint64_t unit, struct blkmap_ctx **ctx)
{
	struct blkmap_discover_opts o = { 0 };
	struct blkmap_vol *vol;
	char portal_buf[LAB_MAX_LUNS][128];
	const char *portals[LAB_MAX_LUNS];
	uint8_t runid[16];
	unsigned nluns = 0;

	test_fill_random(runid, 16, seed);
	for (int i = 0; i < nlabs; i++)
		for (int j = 0; j < labs[i]->nluns; j++, nluns++)
			bmt_label_write(labs[i]->files[j], labs[i]->lun_bytes, runid, nluns);
	*ctx = bmt_ctx(BMT_INITIATOR_A, timeout_ms);
	vol = bmt_pool_volume(runid, nluns, start, len, unit);
	for (int i = 0; i < nlabs; i++) {
		snprintf(portal_buf[i], sizeof(portal_buf[i]), "iscsi://127.0.0.1:%d", labs[i]->port);
		portals[i] = portal_buf[i];
	}
	o.portals = portals;
	o.nportals = (unsigned)nlabs;
	CU_ASSERT_EQUAL_FATAL(blkmap_resolve(*ctx, vol, &o, NULL), 0);
	return vol;
}
