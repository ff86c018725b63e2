/* The inside of struct blkmap_vol, shared by the volume, text, mapping, table, engine and discovery
 * code of this part. An entry holds what the RFC says plus what blkmap learns: sizes and bindings. */
#ifndef BLKMAP_VOL_INT_H
#define BLKMAP_VOL_INT_H

#include "blkmap/internal.h"

struct bm_volent {
	enum blkmap_vol_type type;
	/* simple */
	struct blkmap_sig_comp *sig;
	uint8_t **sigbytes;
	unsigned nsig;
	/* scsi */
	struct blkmap_designator desig;
	uint64_t pr_key;
	/* slice (members[0] is the sliced volume), concat, stripe */
	uint64_t start, length, unit;
	uint32_t *members;
	unsigned nmembers;
	uint64_t *starts; /* concat: offset of each member, nmembers + 1 entries */
	/* learnt */
	uint64_t size;      /* 0 = not known yet */
	uint64_t leaf_size; /* leaves: from the bound device or set by hand */
	struct blkmap_dev *dev;
};

struct blkmap_vol {
	struct bm_volent *v;
	unsigned n, cap;
	int validated;
	char err[512];
};

int bm_vol_err(struct blkmap_vol *vol, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int bm_vol_sizes(struct blkmap_vol *vol);
/* validate when not yet validated (after adds or bindings) */
int bm_vol_ready(struct blkmap_vol *vol);
/* one dm table line "START LEN TARGET PARAMS": *params points into line */
int bm_table_parse_line(const char *line, uint64_t *start, uint64_t *len, char *target, size_t tlen,
			const char **params);

#endif
