/* Byte-range sets (see layout_seg.h): ranges kept sorted, disjoint and non-adjacent, so the first
 * range that can touch a query is found by binary search on the ends. */
#include "mds/layout_seg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void mds_lo_set_free(struct mds_lo_set *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

void mds_lo_set_clear(struct mds_lo_set *s)
{
	s->n = 0;
}

uint64_t mds_lo_end(uint64_t off, uint64_t len)
{
	if (len == UINT64_MAX || off > UINT64_MAX - len)
		return UINT64_MAX;
	return off + len;
}

/* The first index whose range ends after off (n if none). */
static size_t first_after(const struct mds_lo_set *s, uint64_t off)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].end > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int reserve(struct mds_lo_set *s, size_t n)
{
	struct mds_lo_range *v;
	size_t cap;

	if (n <= s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 4;
	while (cap < n)
		cap *= 2;
	v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

int mds_lo_set_add(struct mds_lo_set *s, uint64_t off, uint64_t end)
{
	size_t i, j;

	if (end <= off)
		return -EINVAL;
	/* The first range that ends at or after off touches or follows [off, end). */
	i = off ? first_after(s, off - 1) : 0;
	j = i;
	while (j < s->n && s->v[j].off <= end) {
		if (s->v[j].off < off)
			off = s->v[j].off;
		if (s->v[j].end > end)
			end = s->v[j].end;
		j++;
	}
	if (j > i) {
		/* Ranges i..j-1 merge into one. */
		s->v[i].off = off;
		s->v[i].end = end;
		memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof(*s->v));
		s->n -= j - i - 1;
		return 0;
	}
	if (reserve(s, s->n + 1))
		return -ENOMEM;
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof(*s->v));
	s->v[i].off = off;
	s->v[i].end = end;
	s->n++;
	return 0;
}

int mds_lo_set_remove(struct mds_lo_set *s, uint64_t off, uint64_t end, struct mds_lo_set *removed)
{
	size_t i, j;

	if (end <= off)
		return 0;
	i = first_after(s, off);
	if (i == s->n || s->v[i].off >= end)
		return 0;
	/* One range strictly containing [off, end) splits in two. */
	if (s->v[i].off < off && s->v[i].end > end) {
		if (reserve(s, s->n + 1))
			return -ENOMEM;
		if (removed && mds_lo_set_add(removed, off, end))
			return -ENOMEM;
		memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof(*s->v));
		s->n++;
		s->v[i].end = off;
		s->v[i + 1].off = end;
		return 0;
	}
	for (j = i; j < s->n && s->v[j].off < end; j++) {
		uint64_t a = s->v[j].off > off ? s->v[j].off : off;
		uint64_t b = s->v[j].end < end ? s->v[j].end : end;
		if (removed && mds_lo_set_add(removed, a, b))
			return -ENOMEM;
	}
	/* Trim the first and last ranges; drop those wholly inside. */
	{
		size_t keep_first = s->v[i].off < off, keep_last = s->v[j - 1].end > end;
		uint64_t last_end = s->v[j - 1].end;
		size_t w = i;
		if (keep_first) {
			s->v[i].end = off;
			w = i + 1;
		}
		if (keep_last) {
			s->v[w].off = end;
			s->v[w].end = last_end;
			w++;
		}
		memmove(s->v + w, s->v + j, (s->n - j) * sizeof(*s->v));
		s->n -= j - w;
	}
	return 0;
}

int mds_lo_set_overlaps(const struct mds_lo_set *s, uint64_t off, uint64_t end)
{
	size_t i;

	if (end <= off)
		return 0;
	i = first_after(s, off);
	return i < s->n && s->v[i].off < end;
}

int mds_lo_set_covers(const struct mds_lo_set *s, uint64_t off, uint64_t end)
{
	size_t i;

	if (end <= off)
		return 1;
	i = first_after(s, off);
	return i < s->n && s->v[i].off <= off && s->v[i].end >= end;
}

uint64_t mds_lo_set_bytes(const struct mds_lo_set *s)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < s->n; i++) {
		uint64_t len = s->v[i].end - s->v[i].off;
		if (sum > UINT64_MAX - len)
			return UINT64_MAX;
		sum += len;
	}
	return sum;
}
