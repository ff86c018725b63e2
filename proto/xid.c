/* The table of outstanding calls on one connection, keyed by XID: an open-addressing hash with
 * linear probing and tombstones, rebuilt in place when tombstones pile up. Small and bounded:
 * a connection never has more calls in flight than its slots allow. */
#include "proto/rpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_EMPTY = 0, SLOT_USED = 1, SLOT_DEAD = 2 };

struct xid_slot {
	uint32_t xid;
	uint8_t state;
	void *cookie;
	uint64_t deadline_ms;
};

struct proto_xid_table {
	struct xid_slot *slots;
	unsigned mask;     /* capacity - 1, capacity a power of two >= 2 * max */
	unsigned max;
	unsigned count;
	unsigned dead;
	uint32_t next_xid;
};

static unsigned xid_hash(uint32_t xid)
{
	/* Fibonacci hashing spreads sequential XIDs. */
	return (unsigned)((xid * 2654435769u) >> 7);
}

struct proto_xid_table *proto_xid_table_new(unsigned max_outstanding)
{
	struct proto_xid_table *t;
	unsigned cap = 16;
	uint32_t seed;

	if (max_outstanding == 0 || max_outstanding > 65536)
		return NULL;
	while (cap < 2 * max_outstanding)
		cap *= 2;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	t->mask = cap - 1;
	t->max = max_outstanding;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
		seed = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
	t->next_xid = seed;
	return t;
}

void proto_xid_table_free(struct proto_xid_table *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

static struct xid_slot *xid_find(struct proto_xid_table *t, uint32_t xid)
{
	for (unsigned i = xid_hash(xid), n = 0; n <= t->mask; i++, n++) {
		struct xid_slot *s = &t->slots[i & t->mask];

		if (s->state == SLOT_EMPTY)
			return NULL;
		if (s->state == SLOT_USED && s->xid == xid)
			return s;
	}
	return NULL;
}

static void xid_insert(struct proto_xid_table *t, uint32_t xid, void *cookie, uint64_t deadline_ms)
{
	for (unsigned i = xid_hash(xid);; i++) {
		struct xid_slot *s = &t->slots[i & t->mask];

		if (s->state != SLOT_USED) {
			if (s->state == SLOT_DEAD)
				t->dead--;
			s->state = SLOT_USED;
			s->xid = xid;
			s->cookie = cookie;
			s->deadline_ms = deadline_ms;
			t->count++;
			return;
		}
	}
}

/* Rebuild without tombstones; needs no memory beyond a copy of the live entries. */
static int xid_rebuild(struct proto_xid_table *t)
{
	struct xid_slot *live = malloc((t->count ? t->count : 1) * sizeof(*live));
	unsigned n = 0;

	if (!live)
		return -ENOMEM;
	for (unsigned i = 0; i <= t->mask; i++)
		if (t->slots[i].state == SLOT_USED)
			live[n++] = t->slots[i];
	memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
	t->count = t->dead = 0;
	for (unsigned i = 0; i < n; i++)
		xid_insert(t, live[i].xid, live[i].cookie, live[i].deadline_ms);
	free(live);
	return 0;
}

uint32_t proto_xid_next(struct proto_xid_table *t)
{
	while (xid_find(t, t->next_xid))
		t->next_xid++;
	return t->next_xid++;
}

int proto_xid_add(struct proto_xid_table *t, uint32_t xid, void *cookie, uint64_t deadline_ms)
{
	if (xid_find(t, xid))
		return -EEXIST;
	if (t->count >= t->max)
		return -ENOSPC;
	if (t->count + t->dead + 1 > (t->mask + 1) * 3 / 4 && xid_rebuild(t) < 0)
		return -ENOMEM;
	xid_insert(t, xid, cookie, deadline_ms);
	return 0;
}

void *proto_xid_take(struct proto_xid_table *t, uint32_t xid)
{
	struct xid_slot *s = xid_find(t, xid);
	void *cookie;

	if (!s)
		return NULL;
	cookie = s->cookie;
	s->state = SLOT_DEAD;
	s->cookie = NULL;
	t->count--;
	t->dead++;
	return cookie;
}

unsigned proto_xid_count(const struct proto_xid_table *t)
{
	return t->count;
}

unsigned proto_xid_expire(struct proto_xid_table *t, uint64_t now_ms,
			  void (*fn)(uint32_t xid, void *cookie, void *arg), void *arg)
{
	unsigned n = 0;

	for (unsigned i = 0; i <= t->mask; i++) {
		struct xid_slot *s = &t->slots[i];

		if (s->state == SLOT_USED && s->deadline_ms && s->deadline_ms <= now_ms) {
			uint32_t xid = s->xid;
			void *cookie = s->cookie;

			s->state = SLOT_DEAD;
			s->cookie = NULL;
			t->count--;
			t->dead++;
			n++;
			if (fn)
				fn(xid, cookie, arg);
		}
	}
	return n;
}

void proto_xid_drain(struct proto_xid_table *t, void (*fn)(uint32_t xid, void *cookie, void *arg),
		     void *arg)
{
	if (!t)
		return; /* a table that was never made (its owner's creation failed) */
	for (unsigned i = 0; i <= t->mask; i++) {
		struct xid_slot *s = &t->slots[i];

		if (s->state == SLOT_USED && fn)
			fn(s->xid, s->cookie, arg);
	}
	memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
	t->count = t->dead = 0;
}
