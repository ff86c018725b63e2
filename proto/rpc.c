/* ONC RPC over TCP: record marking, the encoding buffer, call/reply headers and AUTH_SYS.
 * Every decoder reads through an xdrmem stream over the received record, so no read can pass the
 * record's end; lengths are checked against their RFC 5531 caps before anything is copied. */
#include "proto/rpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- record marking ---------------------------------------------------------------------------- */

void proto_rm_reader_init(struct proto_rm_reader *r, size_t max_record)
{
	memset(r, 0, sizeof(*r));
	if (max_record == 0)
		max_record = PROTO_RM_RECORD_DEFAULT;
	if (max_record > PROTO_RM_RECORD_LIMIT)
		max_record = PROTO_RM_RECORD_LIMIT;
	r->max_record = max_record;
}

void proto_rm_reader_destroy(struct proto_rm_reader *r)
{
	free(r->rec);
	r->rec = NULL;
	r->rec_len = r->rec_cap = 0;
	r->ready = 0;
}

size_t proto_rm_pending(const struct proto_rm_reader *r)
{
	return r->rec_len + r->hdr_have;
}

/* Grow the record buffer geometrically to hold need bytes, never past max_record: memory follows
 * the bytes that actually arrived, not what a fragment header claims. */
static int rm_reserve(struct proto_rm_reader *r, size_t need)
{
	size_t cap = r->rec_cap ? r->rec_cap : 4096;
	uint8_t *p;

	if (need <= r->rec_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > r->max_record)
		cap = need > r->max_record ? need : r->max_record;
	p = realloc(r->rec, cap);
	if (!p)
		return -ENOMEM;
	r->rec = p;
	r->rec_cap = cap;
	return 0;
}

static void rm_end_fragment(struct proto_rm_reader *r)
{
	r->in_frag = 0;
	if (r->last)
		r->ready = 1;
}

ssize_t proto_rm_feed(struct proto_rm_reader *r, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t used = 0;

	if (r->failed)
		return -EPIPE;
	while (used < len && !r->ready) {
		size_t n;

		if (!r->in_frag) {
			uint32_t v;

			while (r->hdr_have < 4 && used < len)
				r->hdr[r->hdr_have++] = p[used++];
			if (r->hdr_have < 4)
				break;
			v = get_be32(r->hdr);
			r->hdr_have = 0;
			r->last = (v & PROTO_RM_LAST_FRAG) != 0;
			r->frag_left = v & ~PROTO_RM_LAST_FRAG;
			if (r->frag_left > r->max_record - r->rec_len) {
				r->failed = 1;
				return -EMSGSIZE;
			}
			r->in_frag = 1;
			if (r->frag_left == 0) {
				rm_end_fragment(r);
				continue;
			}
			if (used == len)
				break;
		}
		n = len - used;
		if (n > r->frag_left)
			n = r->frag_left;
		if (rm_reserve(r, r->rec_len + n) < 0) {
			r->failed = 1;
			return -ENOMEM;
		}
		memcpy(r->rec + r->rec_len, p + used, n);
		r->rec_len += n;
		r->frag_left -= (uint32_t)n;
		used += n;
		if (r->frag_left == 0)
			rm_end_fragment(r);
	}
	return (ssize_t)used;
}

int proto_rm_take(struct proto_rm_reader *r, void **rec, size_t *len)
{
	if (!r->ready)
		return 0;
	if (!r->rec) {
		r->rec = malloc(1);
		if (!r->rec)
			return -ENOMEM;
	}
	*rec = r->rec;
	*len = r->rec_len;
	r->rec = NULL;
	r->rec_len = r->rec_cap = 0;
	r->ready = 0;
	return 1;
}

void proto_rm_mark(uint8_t hdr[4], uint32_t len, int last)
{
	uint32_t v = (len & ~PROTO_RM_LAST_FRAG) | (last ? PROTO_RM_LAST_FRAG : 0);

	hdr[0] = (uint8_t)(v >> 24);
	hdr[1] = (uint8_t)(v >> 16);
	hdr[2] = (uint8_t)(v >> 8);
	hdr[3] = (uint8_t)v;
}

int proto_rm_frame(const void *rec, size_t len, size_t max_frag, void **out, size_t *out_len)
{
	const uint8_t *src = rec;
	size_t nfrag, off = 0, total;
	uint8_t *dst, *q;

	if (len >= PROTO_RM_LAST_FRAG)
		return -EINVAL;
	if (max_frag == 0 || max_frag > len)
		max_frag = len ? len : 1;
	nfrag = len ? (len + max_frag - 1) / max_frag : 1;
	total = len + 4 * nfrag;
	dst = malloc(total);
	if (!dst)
		return -ENOMEM;
	q = dst;
	for (size_t i = 0; i < nfrag; i++) {
		size_t n = len - off < max_frag ? len - off : max_frag;

		proto_rm_mark(q, (uint32_t)n, i == nfrag - 1);
		if (n)
			memcpy(q + 4, src + off, n);
		q += 4 + n;
		off += n;
	}
	*out = dst;
	*out_len = total;
	return 0;
}

/* ---- encoding buffer ---------------------------------------------------------------------------- */

int proto_msg_init(struct proto_msg *m, size_t cap)
{
	memset(m, 0, sizeof(*m));
	if (cap == 0 || cap > PROTO_RM_RECORD_LIMIT)
		return -EINVAL;
	m->buf = malloc(cap + 4);
	if (!m->buf)
		return -ENOMEM;
	m->cap = cap;
	xdrmem_create(&m->xdr, (char *)m->buf + 4, (u_int)cap, XDR_ENCODE);
	return 0;
}

void proto_msg_destroy(struct proto_msg *m)
{
	if (m->buf)
		xdr_destroy(&m->xdr);
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

size_t proto_msg_len(struct proto_msg *m)
{
	return xdr_getpos(&m->xdr);
}

const uint8_t *proto_msg_data(const struct proto_msg *m)
{
	return m->buf + 4;
}

int proto_msg_finish(struct proto_msg *m, const uint8_t **wire, size_t *wire_len)
{
	size_t len = proto_msg_len(m);

	proto_rm_mark(m->buf, (uint32_t)len, 1);
	*wire = m->buf;
	*wire_len = len + 4;
	return 0;
}

void proto_msg_reset(struct proto_msg *m)
{
	xdr_setpos(&m->xdr, 0);
}

/* ---- AUTH_SYS ------------------------------------------------------------------------------------ */

int proto_authsys_encode(const struct proto_authsys *s, uint8_t body[PROTO_AUTH_BODY_MAX], uint32_t *len)
{
	size_t nlen = strnlen(s->machinename, sizeof(s->machinename));
	u_int ulen = (u_int)nlen;
	uint32_t ngids = s->ngids;
	XDR x;
	int ret = -EINVAL;

	if (nlen > PROTO_AUTHSYS_MACHINENAME_MAX || ngids > PROTO_AUTHSYS_GIDS_MAX)
		return -EINVAL;
	xdrmem_create(&x, (char *)body, PROTO_AUTH_BODY_MAX, XDR_ENCODE);
	if (!xdr_uint32_t(&x, (uint32_t *)&s->stamp) || !xdr_u_int(&x, &ulen) ||
	    !xdr_opaque(&x, (char *)s->machinename, ulen) || !xdr_uint32_t(&x, (uint32_t *)&s->uid) ||
	    !xdr_uint32_t(&x, (uint32_t *)&s->gid) || !xdr_uint32_t(&x, &ngids))
		goto out;
	for (uint32_t i = 0; i < ngids; i++)
		if (!xdr_uint32_t(&x, (uint32_t *)&s->gids[i]))
			goto out;
	*len = xdr_getpos(&x);
	ret = 0;
out:
	xdr_destroy(&x);
	return ret;
}

int proto_authsys_decode(const uint8_t *body, uint32_t len, struct proto_authsys *s)
{
	u_int nlen;
	XDR x;
	int ret = -EBADMSG;

	memset(s, 0, sizeof(*s));
	if (len > PROTO_AUTH_BODY_MAX)
		return -EBADMSG;
	xdrmem_create(&x, (char *)body, len, XDR_DECODE);
	if (!xdr_uint32_t(&x, &s->stamp) || !xdr_u_int(&x, &nlen) ||
	    nlen > PROTO_AUTHSYS_MACHINENAME_MAX || !xdr_opaque(&x, s->machinename, nlen))
		goto out;
	s->machinename[nlen] = 0;
	if (strlen(s->machinename) != nlen)
		goto out;
	if (!xdr_uint32_t(&x, &s->uid) || !xdr_uint32_t(&x, &s->gid) || !xdr_uint32_t(&x, &s->ngids) ||
	    s->ngids > PROTO_AUTHSYS_GIDS_MAX)
		goto out;
	for (uint32_t i = 0; i < s->ngids; i++)
		if (!xdr_uint32_t(&x, &s->gids[i]))
			goto out;
	if (xdr_getpos(&x) != len)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		memset(s, 0, sizeof(*s));
	xdr_destroy(&x);
	return ret;
}

/* ---- opaque_auth ---------------------------------------------------------------------------- */

static int auth_encode(XDR *x, const struct proto_auth *a)
{
	uint8_t sysbody[PROTO_AUTH_BODY_MAX];
	const uint8_t *body = a->body;
	uint32_t flavor = a->flavor, len = a->len;
	int ret;

	if (flavor == AUTH_NONE) {
		len = 0;
	} else if (flavor == AUTH_SYS) {
		ret = proto_authsys_encode(&a->sys, sysbody, &len);
		if (ret < 0)
			return ret;
		body = sysbody;
	} else if (len > PROTO_AUTH_BODY_MAX) {
		return -EINVAL;
	}
	if (!xdr_uint32_t(x, &flavor) || !xdr_uint32_t(x, &len) || !xdr_opaque(x, (char *)body, len))
		return -EMSGSIZE;
	return 0;
}

/* 0, -EBADMSG (truncated), -EACCES (body over 400 bytes or a malformed AUTH_SYS body). */
static int auth_decode(XDR *x, struct proto_auth *a, int parse_sys)
{
	memset(a, 0, sizeof(*a));
	if (!xdr_uint32_t(x, &a->flavor) || !xdr_uint32_t(x, &a->len))
		return -EBADMSG;
	if (a->len > PROTO_AUTH_BODY_MAX)
		return -EACCES;
	if (!xdr_opaque(x, (char *)a->body, a->len))
		return -EBADMSG;
	if (parse_sys && a->flavor == AUTH_SYS && proto_authsys_decode(a->body, a->len, &a->sys) < 0)
		return -EACCES;
	return 0;
}

/* ---- call header ---------------------------------------------------------------------------- */

int proto_rpc_call_encode(struct proto_msg *m, const struct proto_rpc_call *c)
{
	uint32_t w[6] = { c->xid, CALL, PROTO_RPC_VERS, c->prog, c->vers, c->proc };
	u_int pos = xdr_getpos(&m->xdr);
	int ret;

	for (int i = 0; i < 6; i++)
		if (!xdr_uint32_t(&m->xdr, &w[i])) {
			ret = -EMSGSIZE;
			goto fail;
		}
	ret = auth_encode(&m->xdr, &c->cred);
	if (ret < 0)
		goto fail;
	ret = auth_encode(&m->xdr, &c->verf);
	if (ret < 0)
		goto fail;
	return 0;
fail:
	xdr_setpos(&m->xdr, pos);
	return ret;
}

int proto_rpc_call_decode(const void *rec, size_t len, struct proto_rpc_call *c, size_t *args_off,
			  uint32_t *auth_err)
{
	uint32_t msg_type;
	XDR x;
	int ret = -EBADMSG;

	memset(c, 0, sizeof(*c));
	if (auth_err)
		*auth_err = AUTH_OK;
	if (len > PROTO_RM_RECORD_LIMIT)
		return -EBADMSG;
	xdrmem_create(&x, (char *)rec, (u_int)len, XDR_DECODE);
	if (!xdr_uint32_t(&x, &c->xid) || !xdr_uint32_t(&x, &msg_type) || msg_type != CALL ||
	    !xdr_uint32_t(&x, &c->rpcvers))
		goto out;
	if (c->rpcvers != PROTO_RPC_VERS) {
		ret = -EPROTONOSUPPORT;
		goto out;
	}
	if (!xdr_uint32_t(&x, &c->prog) || !xdr_uint32_t(&x, &c->vers) || !xdr_uint32_t(&x, &c->proc))
		goto out;
	ret = auth_decode(&x, &c->cred, 1);
	if (ret < 0) {
		if (ret == -EACCES && auth_err)
			*auth_err = AUTH_BADCRED;
		goto out;
	}
	ret = auth_decode(&x, &c->verf, 0);
	if (ret < 0) {
		if (ret == -EACCES && auth_err)
			*auth_err = AUTH_BADVERF;
		goto out;
	}
	*args_off = xdr_getpos(&x);
	ret = 0;
out:
	xdr_destroy(&x);
	return ret;
}

/* ---- reply header ---------------------------------------------------------------------------- */

static void reply_init(struct proto_rpc_reply *r, uint32_t xid, uint32_t reply_stat)
{
	memset(r, 0, sizeof(*r));
	r->xid = xid;
	r->reply_stat = reply_stat;
	r->verf.flavor = AUTH_NONE;
}

void proto_rpc_reply_accepted(struct proto_rpc_reply *r, uint32_t xid, uint32_t accept_stat)
{
	reply_init(r, xid, MSG_ACCEPTED);
	r->accept_stat = accept_stat;
}

void proto_rpc_reply_prog_mismatch(struct proto_rpc_reply *r, uint32_t xid, uint32_t low, uint32_t high)
{
	proto_rpc_reply_accepted(r, xid, PROG_MISMATCH);
	r->mismatch_low = low;
	r->mismatch_high = high;
}

void proto_rpc_reply_rpc_mismatch(struct proto_rpc_reply *r, uint32_t xid)
{
	reply_init(r, xid, MSG_DENIED);
	r->reject_stat = RPC_MISMATCH;
	r->mismatch_low = PROTO_RPC_VERS;
	r->mismatch_high = PROTO_RPC_VERS;
}

void proto_rpc_reply_auth_error(struct proto_rpc_reply *r, uint32_t xid, uint32_t auth_stat)
{
	reply_init(r, xid, MSG_DENIED);
	r->reject_stat = AUTH_ERROR;
	r->auth_stat = auth_stat;
}

int proto_rpc_reply_encode(struct proto_msg *m, const struct proto_rpc_reply *r)
{
	uint32_t w[3] = { r->xid, REPLY, r->reply_stat };
	uint32_t low = r->mismatch_low, high = r->mismatch_high, st;
	u_int pos = xdr_getpos(&m->xdr);
	XDR *x = &m->xdr;
	int ret = -EMSGSIZE;

	for (int i = 0; i < 3; i++)
		if (!xdr_uint32_t(x, &w[i]))
			goto fail;
	if (r->reply_stat == MSG_ACCEPTED) {
		if (r->verf.flavor == AUTH_SYS) {
			ret = -EINVAL; /* a server verifier is AUTH_NONE or a raw flavour body */
			goto fail;
		}
		ret = auth_encode(x, &r->verf);
		if (ret < 0)
			goto fail;
		ret = -EMSGSIZE;
		st = r->accept_stat;
		if (st > SYSTEM_ERR) {
			ret = -EINVAL;
			goto fail;
		}
		if (!xdr_uint32_t(x, &st))
			goto fail;
		if (st == PROG_MISMATCH && (!xdr_uint32_t(x, &low) || !xdr_uint32_t(x, &high)))
			goto fail;
	} else if (r->reply_stat == MSG_DENIED) {
		st = r->reject_stat;
		if (!xdr_uint32_t(x, &st))
			goto fail;
		if (st == RPC_MISMATCH) {
			if (!xdr_uint32_t(x, &low) || !xdr_uint32_t(x, &high))
				goto fail;
		} else if (st == AUTH_ERROR) {
			uint32_t why = r->auth_stat;
			if (!xdr_uint32_t(x, &why))
				goto fail;
		} else {
			ret = -EINVAL;
			goto fail;
		}
	} else {
		ret = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	xdr_setpos(x, pos);
	return ret;
}

int proto_rpc_reply_decode(const void *rec, size_t len, struct proto_rpc_reply *r, size_t *res_off)
{
	uint32_t msg_type;
	XDR x;
	int ret = -EBADMSG;

	memset(r, 0, sizeof(*r));
	if (len > PROTO_RM_RECORD_LIMIT)
		return -EBADMSG;
	xdrmem_create(&x, (char *)rec, (u_int)len, XDR_DECODE);
	if (!xdr_uint32_t(&x, &r->xid) || !xdr_uint32_t(&x, &msg_type) || msg_type != REPLY ||
	    !xdr_uint32_t(&x, &r->reply_stat))
		goto out;
	if (r->reply_stat == MSG_ACCEPTED) {
		if (auth_decode(&x, &r->verf, 0) < 0 || !xdr_uint32_t(&x, &r->accept_stat) ||
		    r->accept_stat > SYSTEM_ERR)
			goto out;
		if (r->accept_stat == PROG_MISMATCH &&
		    (!xdr_uint32_t(&x, &r->mismatch_low) || !xdr_uint32_t(&x, &r->mismatch_high)))
			goto out;
	} else if (r->reply_stat == MSG_DENIED) {
		if (!xdr_uint32_t(&x, &r->reject_stat))
			goto out;
		if (r->reject_stat == RPC_MISMATCH) {
			if (!xdr_uint32_t(&x, &r->mismatch_low) || !xdr_uint32_t(&x, &r->mismatch_high))
				goto out;
		} else if (r->reject_stat == AUTH_ERROR) {
			if (!xdr_uint32_t(&x, &r->auth_stat))
				goto out;
		} else {
			goto out;
		}
	} else {
		goto out;
	}
	*res_off = xdr_getpos(&x);
	ret = 0;
out:
	xdr_destroy(&x);
	return ret;
}

int proto_rpc_peek(const void *rec, size_t len, uint32_t *xid, uint32_t *msg_type)
{
	const uint8_t *p = rec;
	uint32_t t;

	if (len < 8)
		return -EBADMSG;
	t = get_be32(p + 4);
	if (t != CALL && t != REPLY)
		return -EBADMSG;
	*xid = get_be32(p);
	*msg_type = t;
	return 0;
}
