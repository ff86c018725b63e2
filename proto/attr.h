/* fattr4 values (RFC 8881 §5) to and from a plain C struct. attrlist4 is an opaque whose content
 * follows the bitmap, attribute by attribute in bit order; we code it by hand into fixed fields,
 * so decoding allocates nothing, and encoding is deterministic (VERIFY/NVERIFY compare bytes).
 * The attributes this project supports are listed once, in proto/attr.c (proto_attr_supported). */
#ifndef PROTO_ATTR_H
#define PROTO_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs41.h"

/* An attribute bitmap in its widest form (bitmap4 carries at most PROTO_BITMAP_MAX words). */
struct proto_attrmask {
	uint32_t w[PROTO_BITMAP_MAX];
};

static inline int proto_attrmask_isset(const struct proto_attrmask *m, unsigned bit)
{
	return bit < 32 * PROTO_BITMAP_MAX && (m->w[bit / 32] >> (bit % 32) & 1);
}
static inline void proto_attrmask_set(struct proto_attrmask *m, unsigned bit)
{
	if (bit < 32 * PROTO_BITMAP_MAX)
		m->w[bit / 32] |= 1u << (bit % 32);
}
static inline void proto_attrmask_clear(struct proto_attrmask *m, unsigned bit)
{
	if (bit < 32 * PROTO_BITMAP_MAX)
		m->w[bit / 32] &= ~(1u << (bit % 32));
}
/* Whether no bit is set. */
int proto_attrmask_empty(const struct proto_attrmask *m);
/* out = a & b; out = a & ~b. out may alias either. */
void proto_attrmask_and(struct proto_attrmask *out, const struct proto_attrmask *a, const struct proto_attrmask *b);
void proto_attrmask_andnot(struct proto_attrmask *out, const struct proto_attrmask *a, const struct proto_attrmask *b);

/* bitmap4 <-> mask. from: words past PROTO_BITMAP_MAX cannot occur (bitmap4's cap). to: allocates
 * the fewest words that hold the set bits (trailing zero words dropped, as RFC 8881 §3.3.7 allows;
 * an empty mask gives zero words); caller frees with proto_xdr_free(xdr_bitmap4, out). */
void proto_attrmask_from_bitmap4(struct proto_attrmask *m, const bitmap4 *b);
int proto_attrmask_to_bitmap4(const struct proto_attrmask *m, bitmap4 *out);

/* The one place that says what we support, what SETATTR may set, and what is write-only
 * (time_access_set, time_modify_set: never returned by GETATTR, never compared by VERIFY). */
extern const struct proto_attrmask proto_attr_supported;
extern const struct proto_attrmask proto_attr_writable;
extern const struct proto_attrmask proto_attr_writeonly;

/* "size", "time_modify", ... for any NFSv4.1 attribute number; "unknown" otherwise. */
const char *proto_attr_name(unsigned bit);

/* Longest owner/owner_group string we carry (the utf8string cap). */
#define PROTO_ATTR_OWNER_MAX PROTO_UTF8STR_MAX

/* The values of every supported attribute. mask says which fields are valid. */
struct proto_fattr {
	struct proto_attrmask mask;

	struct proto_attrmask supported_attrs;           /* 0 */
	nfs_ftype4 type;                                 /* 1 */
	uint32_t fh_expire_type;                         /* 2 */
	uint64_t change;                                 /* 3 */
	uint64_t size;                                   /* 4 */
	bool link_support;                               /* 5 */
	bool symlink_support;                            /* 6 */
	bool named_attr;                                 /* 7 */
	fsid4 fsid;                                      /* 8 */
	bool unique_handles;                             /* 9 */
	uint32_t lease_time;                             /* 10 */
	nfsstat4 rdattr_error;                           /* 11 */
	uint32_t aclsupport;                             /* 13 */
	bool cansettime;                                 /* 15 */
	bool case_insensitive;                           /* 16 */
	bool case_preserving;                            /* 17 */
	bool chown_restricted;                           /* 18 */
	struct {
		uint32_t len;
		uint8_t val[NFS4_FHSIZE];
	} filehandle;                                    /* 19 */
	uint64_t fileid;                                 /* 20 */
	uint64_t files_avail;                            /* 21 */
	uint64_t files_free;                             /* 22 */
	uint64_t files_total;                            /* 23 */
	bool homogeneous;                                /* 26 */
	uint64_t maxfilesize;                            /* 27 */
	uint32_t maxlink;                                /* 28 */
	uint32_t maxname;                                /* 29 */
	uint64_t maxread;                                /* 30 */
	uint64_t maxwrite;                               /* 31 */
	uint32_t mode;                                   /* 33 */
	bool no_trunc;                                   /* 34 */
	uint32_t numlinks;                               /* 35 */
	char owner[PROTO_ATTR_OWNER_MAX + 1];            /* 36, NUL-terminated */
	char owner_group[PROTO_ATTR_OWNER_MAX + 1];      /* 37, NUL-terminated */
	specdata4 rawdev;                                /* 41 */
	uint64_t space_avail;                            /* 42 */
	uint64_t space_free;                             /* 43 */
	uint64_t space_total;                            /* 44 */
	uint64_t space_used;                             /* 45 */
	nfstime4 time_access;                            /* 47 */
	settime4 time_access_set;                        /* 48 */
	nfstime4 time_create;                            /* 50 */
	nfstime4 time_delta;                             /* 51 */
	nfstime4 time_metadata;                          /* 52 */
	nfstime4 time_modify;                            /* 53 */
	settime4 time_modify_set;                        /* 54 */
	uint64_t mounted_on_fileid;                      /* 55 */
	uint32_t fs_layout_types_len;                    /* 62 */
	layouttype4 fs_layout_types[PROTO_LAYOUT_TYPES_MAX];
	struct {
		layouttype4 loh_type;
		uint32_t len;
		uint8_t body[PROTO_LAYOUTHINT_BODY_MAX];
	} layout_hint;                                   /* 63 */
	uint32_t layout_types_len;                       /* 64 */
	layouttype4 layout_types[PROTO_LAYOUT_TYPES_MAX];
	uint32_t layout_blksize;                         /* 65 */
	uint32_t layout_alignment;                       /* 66 */
	struct proto_attrmask suppattr_exclcreat;        /* 75 */
};

/* Mark a field valid (sets the bit in a->mask). */
static inline void proto_fattr_set(struct proto_fattr *a, unsigned bit)
{
	proto_attrmask_set(&a->mask, bit);
}

/* Encode the attributes that are in request, valid in a->mask and supported, in bit order, into
 * out (attrmask and attr_vals allocated; caller frees with proto_xdr_free(xdr_fattr4, out)).
 * request NULL means every valid attribute. The same inputs always give the same bytes.
 * Returns 0, -EINVAL (a value that cannot be coded: an owner with no terminator, a count over its
 * cap), -ENOMEM. */
int proto_fattr_encode(const struct proto_fattr *a, const struct proto_attrmask *request, fattr4 *out);

/* Decode in into a (a->mask: what was decoded). Returns:
 *   0         every attribute decoded;
 *   -ENOTSUP  the bitmap has attributes we do not support; *unsupported (may be NULL) gets them and
 *             a holds those before the first one (values after it cannot be located). A server
 *             answers NFS4ERR_ATTRNOTSUPP (SETATTR, VERIFY, create attributes);
 *   -EBADMSG  values truncated, malformed (an owner with a NUL, a count over its cap) or bytes left
 *             over: NFS4ERR_BADXDR.
 * Nothing is allocated. Whether an attribute may be set (proto_attr_writable: else NFS4ERR_INVAL)
 * is the caller's check. */
int proto_fattr_decode(const fattr4 *in, struct proto_fattr *a, struct proto_attrmask *unsupported);

#endif
