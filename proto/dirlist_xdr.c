/* The READDIR entry list (dirlist4/entry4) coded by hand, iteratively.
 * rpcgen would code "entry4 *nextentry" with one recursive xdr_pointer call per entry, so a hostile
 * reply listing a million entries would exhaust the stack; here a loop walks the list instead. */
#include "nfs41.h"

#include <stdlib.h>

static bool_t entry_fields(XDR *xdrs, entry4 *e)
{
	return xdr_nfs_cookie4(xdrs, &e->cookie) && xdr_component4(xdrs, &e->name) &&
	       xdr_fattr4(xdrs, &e->attrs);
}

static bool_t dirlist_free(dirlist4 *objp)
{
	entry4 *e = objp->entries;

	while (e) {
		entry4 *next = e->nextentry;
		xdr_free((xdrproc_t)xdr_component4, (char *)&e->name);
		xdr_free((xdrproc_t)xdr_fattr4, (char *)&e->attrs);
		free(e);
		e = next;
	}
	objp->entries = NULL;
	return TRUE;
}

static bool_t dirlist_encode(XDR *xdrs, dirlist4 *objp)
{
	bool_t more = TRUE, done = FALSE;
	unsigned n = 0;

	for (entry4 *e = objp->entries; e; e = e->nextentry) {
		if (++n > PROTO_DIRLIST_MAX)
			return FALSE;
		if (!xdr_bool(xdrs, &more) || !entry_fields(xdrs, e))
			return FALSE;
	}
	return xdr_bool(xdrs, &done) && xdr_bool(xdrs, &objp->eof);
}

/* On failure the entries decoded so far stay linked to objp, for xdr_free to release. */
static bool_t dirlist_decode(XDR *xdrs, dirlist4 *objp)
{
	entry4 **tail = &objp->entries;
	unsigned n = 0;

	for (;;) {
		bool_t more;
		entry4 *e;

		if (!xdr_bool(xdrs, &more))
			return FALSE;
		if (!more)
			break;
		if (++n > PROTO_DIRLIST_MAX)
			return FALSE;
		e = calloc(1, sizeof(*e));
		if (!e)
			return FALSE;
		*tail = e;
		tail = &e->nextentry;
		if (!entry_fields(xdrs, e))
			return FALSE;
	}
	return xdr_bool(xdrs, &objp->eof);
}

bool_t xdr_dirlist4(XDR *xdrs, dirlist4 *objp)
{
	switch (xdrs->x_op) {
	case XDR_ENCODE:
		return dirlist_encode(xdrs, objp);
	case XDR_DECODE:
		return dirlist_decode(xdrs, objp);
	case XDR_FREE:
		return dirlist_free(objp);
	}
	return FALSE;
}
