/* Hash map: chained buckets, FNV-1a hashing, doubling when the load passes one entry per bucket. */
#include "mds/map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mds_map_ent {
	struct mds_map_ent *next;
	uint64_t hash;
	void *val;
	size_t klen;
	unsigned char key[];
};

uint64_t mds_hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

void mds_map_init(struct mds_map *m)
{
	memset(m, 0, sizeof(*m));
}

void mds_map_clear(struct mds_map *m)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct mds_map_ent *e = m->buckets[i], *n;
		for (; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(m->buckets);
	memset(m, 0, sizeof(*m));
}

static struct mds_map_ent **find(const struct mds_map *m, const void *key, size_t klen, uint64_t h)
{
	struct mds_map_ent **pp;

	if (!m->nbuckets)
		return NULL;
	pp = &m->buckets[h & (m->nbuckets - 1)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && (*pp)->klen == klen && memcmp((*pp)->key, key, klen) == 0)
			return pp;
	return NULL;
}

void *mds_map_find(const struct mds_map *m, const void *key, size_t klen)
{
	struct mds_map_ent **pp = find(m, key, klen, mds_hash_bytes(key, klen));
	return pp ? (*pp)->val : NULL;
}

static int grow(struct mds_map *m)
{
	size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
	struct mds_map_ent **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct mds_map_ent *e = m->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = nb[e->hash & (n - 1)];
			nb[e->hash & (n - 1)] = e;
		}
	}
	free(m->buckets);
	m->buckets = nb;
	m->nbuckets = n;
	return 0;
}

int mds_map_insert(struct mds_map *m, const void *key, size_t klen, void *val)
{
	uint64_t h = mds_hash_bytes(key, klen);
	struct mds_map_ent *e;

	if (find(m, key, klen, h))
		return -EEXIST;
	if (m->count >= m->nbuckets && grow(m) != 0)
		return -ENOMEM;
	e = malloc(sizeof(*e) + klen);
	if (!e)
		return -ENOMEM;
	e->hash = h;
	e->val = val;
	e->klen = klen;
	memcpy(e->key, key, klen);
	e->next = m->buckets[h & (m->nbuckets - 1)];
	m->buckets[h & (m->nbuckets - 1)] = e;
	m->count++;
	return 0;
}

void *mds_map_del(struct mds_map *m, const void *key, size_t klen)
{
	struct mds_map_ent **pp = find(m, key, klen, mds_hash_bytes(key, klen)), *e;
	void *v;

	if (!pp)
		return NULL;
	e = *pp;
	*pp = e->next;
	v = e->val;
	free(e);
	m->count--;
	return v;
}

static void *advance(const struct mds_map *m, struct mds_map_iter *it)
{
	while (!it->next) {
		if (++it->bucket >= m->nbuckets) {
			it->bucket = m->nbuckets;
			it->ent = NULL;
			return NULL;
		}
		it->next = m->buckets[it->bucket];
	}
	it->ent = it->next;
	it->next = it->ent->next;
	return it->ent->val;
}

void *mds_map_first(const struct mds_map *m, struct mds_map_iter *it)
{
	it->ent = NULL;
	it->next = NULL;
	it->bucket = 0;
	if (!m->nbuckets)
		return NULL;
	it->next = m->buckets[0];
	return advance(m, it);
}

void *mds_map_next(const struct mds_map *m, struct mds_map_iter *it)
{
	if (it->bucket >= m->nbuckets)
		return NULL;
	return advance(m, it);
}

void mds_map_iter_del(struct mds_map *m, struct mds_map_iter *it)
{
	struct mds_map_ent **pp;

	if (!it->ent)
		return;
	pp = &m->buckets[it->bucket];
	while (*pp && *pp != it->ent)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = it->ent->next;
		free(it->ent);
		m->count--;
	}
	it->ent = NULL;
}
