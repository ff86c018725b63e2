/* A bump allocator whose memory lives as long as one COMPOUND: results (READ data, READDIR
 * entries, encoded attributes) point into it and everything is released at once after the reply
 * is encoded, so handlers never track who frees what. */
#ifndef MDS_ARENA_H
#define MDS_ARENA_H

#include <stddef.h>

struct mds_arena_chunk;

struct mds_arena_adopted;

struct mds_arena {
	struct mds_arena_chunk *chunks;
	struct mds_arena_adopted *adopted;
	size_t total_bytes;
};

void mds_arena_init(struct mds_arena *a);
/* size bytes, 16-byte aligned, or NULL when out of memory. */
void *mds_arena_alloc(struct mds_arena *a, size_t size);
/* Zeroed. */
void *mds_arena_calloc(struct mds_arena *a, size_t n, size_t size);
/* A copy of len bytes (plus a NUL after them). */
void *mds_arena_dup(struct mds_arena *a, const void *p, size_t len);
/* Take ownership of a malloc'd pointer: freed with the arena. Returns 0, or -ENOMEM (then p is
 * freed at once). */
int mds_arena_adopt(struct mds_arena *a, void *p);
/* Release everything. The arena may be used again. */
void mds_arena_release(struct mds_arena *a);

#endif
