/* Arena: a list of chunks; small requests share 64 KiB chunks, big ones get a chunk of their own. */
#include "mds/arena.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64u << 10)

struct mds_arena_chunk {
	struct mds_arena_chunk *next;
	size_t cap, used;
	_Alignas(16) unsigned char data[];
};

struct mds_arena_adopted {
	struct mds_arena_adopted *next;
	void *p;
};

void mds_arena_init(struct mds_arena *a)
{
	a->chunks = NULL;
	a->adopted = NULL;
	a->total_bytes = 0;
}

int mds_arena_adopt(struct mds_arena *a, void *p)
{
	struct mds_arena_adopted *d = mds_arena_alloc(a, sizeof(*d));

	if (!d) {
		free(p);
		return -ENOMEM;
	}
	d->p = p;
	d->next = a->adopted;
	a->adopted = d;
	return 0;
}

void *mds_arena_alloc(struct mds_arena *a, size_t size)
{
	struct mds_arena_chunk *c = a->chunks;
	size_t need = (size + 15) & ~(size_t)15;

	if (size > SIZE_MAX - 32)
		return NULL;
	if (!c || c->cap - c->used < need) {
		size_t cap = need > CHUNK_BYTES / 4 ? need : CHUNK_BYTES;
		struct mds_arena_chunk *n = malloc(sizeof(*n) + cap);
		if (!n)
			return NULL;
		n->cap = cap;
		n->used = 0;
		if (cap > CHUNK_BYTES / 4 && need > CHUNK_BYTES / 4 && c) {
			/* A big block: keep the current small chunk on top for later requests. */
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			a->chunks = n;
		}
		c = n;
		a->total_bytes += cap;
	}
	void *p = c->data + c->used;
	c->used += need;
	return p;
}

void *mds_arena_calloc(struct mds_arena *a, size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = mds_arena_alloc(a, n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void *mds_arena_dup(struct mds_arena *a, const void *src, size_t len)
{
	unsigned char *p = mds_arena_alloc(a, len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, src, len);
	p[len] = 0;
	return p;
}

void mds_arena_release(struct mds_arena *a)
{
	struct mds_arena_chunk *c = a->chunks, *n;

	for (struct mds_arena_adopted *d = a->adopted; d; d = d->next)
		free(d->p);
	a->adopted = NULL;
	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	a->chunks = NULL;
	a->total_bytes = 0;
}
