/* Sample values of every NFSv4.1 argument and result the project exchanges, for round trips,
 * truncation sweeps and the tshark check. Values are distinctive (no field left at zero where a
 * zero would hide a swapped or skipped field); memory comes from an arena freed by samples_free(). */
#ifndef TESTS_PROTO_SAMPLES_H
#define TESTS_PROTO_SAMPLES_H

#include "proto/proto.h"

/* One (opcode, variant) pair: variants exercise the arms of the unions inside an op. */
struct sample_case {
	uint32_t op;
	int variant;
};

/* Every fore-channel op and variant with a sample; ends with op 0. */
extern const struct sample_case sample_arg_cases[];
extern const struct sample_case sample_res_cases[];
extern const struct sample_case sample_cb_arg_cases[];
extern const struct sample_case sample_cb_res_cases[];
/* The operations issue 3 names (fore channel), in RFC order; ends with 0. */
extern const uint32_t sample_issue_ops[];
/* The callbacks issue 3 names; ends with 0. */
extern const uint32_t sample_issue_cb_ops[];

void sample_argop(const struct sample_case *c, nfs_argop4 *out);
void sample_resop(const struct sample_case *c, nfs_resop4 *out);
void sample_cb_argop(const struct sample_case *c, nfs_cb_argop4 *out);
void sample_cb_resop(const struct sample_case *c, nfs_cb_resop4 *out);

/* Pieces used by several tests. */
fattr4 sample_fattr4(void);
pnfs_block_deviceaddr4 sample_stripe_of_slices(unsigned nluns);
pnfs_block_layout4 sample_block_layout(unsigned nextents);

/* Zeroed arena memory, valid until samples_free(). */
void *sample_alloc(size_t n);
void samples_free(void);

#endif
