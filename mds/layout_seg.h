/* Byte-range sets for layout segments: a sorted array of disjoint, non-adjacent [off, end) ranges
 * (end exclusive; UINT64_MAX stands for "to the end of every file"). One set per client, file and
 * iomode says what that client may touch; adding merges, removing splits, and every query is one
 * binary search, so a client holding thousands of segments costs log(n) per check. Internal. */
#ifndef MDS_LAYOUT_SEG_H
#define MDS_LAYOUT_SEG_H

#include <stddef.h>
#include <stdint.h>

struct mds_lo_range {
	uint64_t off, end;
};

/* Zero-initialise; free with mds_lo_set_free. */
struct mds_lo_set {
	size_t n, cap;
	struct mds_lo_range *v;
};

void mds_lo_set_free(struct mds_lo_set *s);
/* Empty the set (memory kept). */
void mds_lo_set_clear(struct mds_lo_set *s);

/* The end of [off, off+len): off+len, or UINT64_MAX when len is NFS4_UINT64_MAX or it would wrap. */
uint64_t mds_lo_end(uint64_t off, uint64_t len);

/* Add [off, end) (merging with what it overlaps or touches). 0, -EINVAL (empty range), -ENOMEM
 * (the set is unchanged). */
int mds_lo_set_add(struct mds_lo_set *s, uint64_t off, uint64_t end);
/* Remove [off, end); the pieces that were in the set are appended to removed (may be NULL).
 * 0 or -ENOMEM (then the set is unchanged; removed may hold a partial list the caller frees). */
int mds_lo_set_remove(struct mds_lo_set *s, uint64_t off, uint64_t end, struct mds_lo_set *removed);
/* Whether any byte of [off, end) is in the set / every byte of it is. */
int mds_lo_set_overlaps(const struct mds_lo_set *s, uint64_t off, uint64_t end);
int mds_lo_set_covers(const struct mds_lo_set *s, uint64_t off, uint64_t end);
/* Bytes in the set (saturating at UINT64_MAX). */
uint64_t mds_lo_set_bytes(const struct mds_lo_set *s);

#endif
