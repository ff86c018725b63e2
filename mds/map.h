/* A small hash map from byte-string keys to pointers, for the server's state tables (clients by id
 * and by owner, sessions, stateids, open and lock owners, files). Keys are copied; values are
 * borrowed. Iteration order is unspecified; deleting the current entry while iterating is safe. */
#ifndef MDS_MAP_H
#define MDS_MAP_H

#include <stddef.h>
#include <stdint.h>

struct mds_map_ent;

struct mds_map {
	struct mds_map_ent **buckets;
	size_t nbuckets;
	size_t count;
};

/* An empty map (no allocation until the first put). */
void mds_map_init(struct mds_map *m);
/* Free the map's entries (not the values). */
void mds_map_clear(struct mds_map *m);

/* The value stored under key, or NULL. */
void *mds_map_find(const struct mds_map *m, const void *key, size_t klen);
/* Store val under key: -EEXIST if present (nothing changes), -ENOMEM. */
int mds_map_insert(struct mds_map *m, const void *key, size_t klen, void *val);
/* Remove key; returns its value or NULL. */
void *mds_map_del(struct mds_map *m, const void *key, size_t klen);

/* Iteration: `for (v = mds_map_first(m, &it); v; v = mds_map_next(m, &it))`. The current entry may
 * be deleted while iterating (mds_map_iter_del, or mds_map_del of its key); deleting any other
 * entry, or putting, invalidates the iteration. */
struct mds_map_iter {
	size_t bucket;
	struct mds_map_ent *ent, *next;
};
void *mds_map_first(const struct mds_map *m, struct mds_map_iter *it);
void *mds_map_next(const struct mds_map *m, struct mds_map_iter *it);
/* Delete the entry the iterator is on (the iteration goes on correctly). */
void mds_map_iter_del(struct mds_map *m, struct mds_map_iter *it);

uint64_t mds_hash_bytes(const void *p, size_t n);

#endif
