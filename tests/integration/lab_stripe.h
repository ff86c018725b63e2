/* A pool-shaped stripe over real lab LUNs for the blkmap integration suites: every LUN carries a
 * test label, and the volume finds its leaves by those labels through the labs' portals. */
#ifndef TESTS_INTEGRATION_LAB_STRIPE_H
#define TESTS_INTEGRATION_LAB_STRIPE_H

#include "blkmap/blkmap.h"
#include "tests/lab.h"

#include <stdint.h>

/* n labs of one LUN of size each (killing one tgtd then takes exactly one LUN away). Aborts the test
 * when one does not start; each is freed with lab_down(). */
void lab_stripe_labs_up(struct test_lab **labs, int n, const char *size);

/* Test labels with a run id drawn from seed on every LUN of labs[0..nlabs) (nlabs at most
 * LAB_MAX_LUNS), in order (the k-th LUN
 * gets index k), a context for BMT_INITIATOR_A with this command timeout in *ctx, and
 * bmt_pool_volume() over those LUNs (each sliced at [start, start + len), striped with unit),
 * resolved through every lab's portal. Aborts the test on failure. The caller frees the volume, then
 * *ctx. */
struct blkmap_vol *lab_stripe_up(struct test_lab *const *labs, int nlabs, uint64_t seed, unsigned timeout_ms,
				 uint64_t start, uint64_t len, uint64_t unit, struct blkmap_ctx **ctx);

#endif
