/* An intrusive doubly-linked list: a struct proto_list inside each element, one as the head.
 * The head is a ring with itself as sentinel, so linking and unlinking need no special case for the
 * first or last element and an element unlinks in O(1) without knowing its list. */
#ifndef PROTO_LIST_H
#define PROTO_LIST_H

#include <stddef.h>

struct proto_list {
	struct proto_list *next, *prev;
};

/* An empty list (or an element on no list): both links to itself. */
static inline void proto_list_init(struct proto_list *l)
{
	l->next = l->prev = l;
}

static inline int proto_list_empty(const struct proto_list *head)
{
	return head->next == head;
}

/* Whether an element initialised with proto_list_init() is on a list now. */
static inline int proto_list_linked(const struct proto_list *e)
{
	return e->next != e;
}

static inline void proto_list_link_between(struct proto_list *e, struct proto_list *prev, struct proto_list *next)
{
	e->prev = prev;
	e->next = next;
	prev->next = e;
	next->prev = e;
}

/* e becomes the first element of head's list. */
static inline void proto_list_add(struct proto_list *head, struct proto_list *e)
{
	proto_list_link_between(e, head, head->next);
}

/* e becomes the last element of head's list. */
static inline void proto_list_add_tail(struct proto_list *head, struct proto_list *e)
{
	proto_list_link_between(e, head->prev, head);
}

/* e leaves its list and is left initialised (proto_list_linked() is 0); harmless when unlinked. */
static inline void proto_list_del(struct proto_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	proto_list_init(e);
}

/* The struct of type `type` whose member `member` is the list link at ptr. */
#define proto_list_entry(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* The first element of a non-empty list. */
#define proto_list_first(head, type, member) proto_list_entry((head)->next, type, member)

/* Every element, first to last, as `type *pos`; the body must not unlink pos. */
#define proto_list_for_each(pos, head, type, member)                                           \
	for (type *pos = proto_list_entry((head)->next, type, member); &pos->member != (head); \
	     pos = proto_list_entry(pos->member.next, type, member))

/* Every element, first to last; the body may unlink (and free) pos, not the one after it. */
#define proto_list_for_each_safe(pos, head, type, member)                                            \
	for (type *pos = proto_list_entry((head)->next, type, member),                              \
		  *pos##_next_ = proto_list_entry(pos->member.next, type, member);                    \
	     &pos->member != (head); pos = pos##_next_, pos##_next_ = proto_list_entry(pos->member.next, type, member))

#endif
