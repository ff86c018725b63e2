/* COMPOUND/CB_COMPOUND builders, op-by-op decoders and the bounded reply encoder.
 * The decoders are ours, not rpcgen's whole-message coder, because a server must know which op
 * failed to decode and why (an opcode it does not know, arguments it cannot parse, too many ops);
 * rpcgen's coder would only say "false". Each op is still decoded by the generated union coder. */
#include "proto/compound.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One flavour of compound: which union codes an op or a result, and which opcodes exist. */
struct op_kind {
	xdrproc_t proc;
	size_t size;
	int (*valid)(uint32_t op);
};

int proto_opnum_valid(uint32_t op)
{
	return op >= OP_ACCESS && op <= OP_RECLAIM_COMPLETE;
}

int proto_cb_opnum_valid(uint32_t op)
{
	return op >= OP_CB_GETATTR && op <= OP_CB_NOTIFY_DEVICEID;
}

static int res_opnum_valid(uint32_t op)
{
	return proto_opnum_valid(op) || op == OP_ILLEGAL;
}

static int cb_res_opnum_valid(uint32_t op)
{
	return proto_cb_opnum_valid(op) || op == OP_CB_ILLEGAL;
}

static const struct op_kind kind_args = { (xdrproc_t)xdr_nfs_argop4, sizeof(nfs_argop4), proto_opnum_valid };
static const struct op_kind kind_cb_args = { (xdrproc_t)xdr_nfs_cb_argop4, sizeof(nfs_cb_argop4),
					     proto_cb_opnum_valid };
static const struct op_kind kind_res = { (xdrproc_t)xdr_nfs_resop4, sizeof(nfs_resop4), res_opnum_valid };
static const struct op_kind kind_cb_res = { (xdrproc_t)xdr_nfs_cb_resop4, sizeof(nfs_cb_resop4),
					    cb_res_opnum_valid };

/* ---- shared pieces ---------------------------------------------------------------------------- */

static int put_u32(XDR *x, uint32_t v)
{
	return xdr_uint32_t(x, &v) ? 0 : -EMSGSIZE;
}

static int put_tag(XDR *x, const void *tag, size_t len)
{
	u_int ulen = (u_int)len;

	if (len > PROTO_UTF8STR_MAX)
		return -EINVAL;
	if (!xdr_u_int(x, &ulen) || !xdr_opaque(x, (char *)(tag ? tag : ""), ulen))
		return -EMSGSIZE;
	return 0;
}

static int patch_u32(XDR *x, u_int pos, uint32_t v)
{
	u_int end = xdr_getpos(x);
	int ok;

	if (!xdr_setpos(x, pos))
		return -EINVAL;
	ok = xdr_uint32_t(x, &v);
	xdr_setpos(x, end);
	return ok ? 0 : -EINVAL;
}

/* Append one element; on failure restore the stream and tell "no room" from "not encodable". */
static int append_elem(XDR *x, xdrproc_t proc, const void *obj, size_t limit)
{
	u_int pos = xdr_getpos(x);

	if (!proc(x, (void *)obj)) {
		xdr_setpos(x, pos);
		return xdr_sizeof(proc, (void *)obj) == 0 ? -EINVAL : -EMSGSIZE;
	}
	if (limit && xdr_getpos(x) > limit) {
		xdr_setpos(x, pos);
		return -EMSGSIZE;
	}
	return 0;
}

static size_t xdr_left(XDR *x, size_t len)
{
	u_int pos = xdr_getpos(x);
	return pos < len ? len - pos : 0;
}

/*
 * Decode up to want ops (want <= count announced). Stops early at an unknown opcode (ILLEGAL) or an
 * op whose arguments do not decode (BADXDR). A stream that ends before an announced opcode is
 * garbage: -EBADMSG. The array never holds more elements than 4-byte opcodes could fit in the
 * bytes left, so a hostile count cannot make it large.
 */
static int decode_ops(XDR *x, size_t len, uint32_t want, const struct op_kind *k, char **arr,
		      u_int *n, enum proto_compound_stop *stop, uint32_t *stop_op)
{
	size_t cap = xdr_left(x, len) / 4;
	char *a;

	*arr = NULL;
	*n = 0;
	*stop = PROTO_COMPOUND_DONE;
	if (want == 0)
		return 0;
	if (cap > want)
		cap = want;
	if (cap == 0)
		return -EBADMSG;
	a = calloc(cap, k->size);
	if (!a)
		return -ENOMEM;
	*arr = a;
	for (uint32_t i = 0; i < want; i++) {
		char *elem = a + (size_t)i * k->size;
		u_int pos = xdr_getpos(x);
		uint32_t op;

		if (i >= cap || !xdr_uint32_t(x, &op))
			return -EBADMSG;
		if (!k->valid(op)) {
			*stop = PROTO_COMPOUND_ILLEGAL;
			*stop_op = op;
			return 0;
		}
		xdr_setpos(x, pos);
		if (!k->proc(x, elem)) {
			xdr_free(k->proc, elem);
			memset(elem, 0, k->size);
			*stop = PROTO_COMPOUND_BADXDR;
			*stop_op = op;
			return 0;
		}
		(*n)++;
	}
	return 0;
}

static int get_tag(XDR *x, utf8str_cs *tag)
{
	return xdr_utf8str_cs(x, tag) ? 0 : -EBADMSG;
}

/* ---- building calls ------------------------------------------------------------------------------ */

static int begin_common(struct proto_compound_enc *e, struct proto_msg *m, const char *tag,
			uint32_t minorversion, int cb, uint32_t callback_ident)
{
	XDR *x = &m->xdr;
	u_int pos = xdr_getpos(x);
	int ret;

	memset(e, 0, sizeof(*e));
	e->m = m;
	e->cb = cb;
	ret = put_tag(x, tag, tag ? strlen(tag) : 0);
	if (ret == 0)
		ret = put_u32(x, minorversion);
	if (ret == 0 && cb)
		ret = put_u32(x, callback_ident);
	e->count_pos = xdr_getpos(x);
	if (ret == 0)
		ret = put_u32(x, 0);
	if (ret < 0)
		xdr_setpos(x, pos);
	return ret;
}

int proto_compound_begin(struct proto_compound_enc *e, struct proto_msg *m, const char *tag,
			 uint32_t minorversion)
{
	return begin_common(e, m, tag, minorversion, 0, 0);
}

int proto_cb_compound_begin(struct proto_compound_enc *e, struct proto_msg *m, const char *tag,
			    uint32_t minorversion, uint32_t callback_ident)
{
	return begin_common(e, m, tag, minorversion, 1, callback_ident);
}

static int add_common(struct proto_compound_enc *e, const void *op, int cb)
{
	int ret;

	if (e->cb != cb)
		return -EINVAL;
	if (e->nops >= PROTO_COMPOUND_MAX_OPS)
		return -E2BIG;
	ret = append_elem(&e->m->xdr, cb ? kind_cb_args.proc : kind_args.proc, op, 0);
	if (ret == 0)
		e->nops++;
	return ret;
}

int proto_compound_add(struct proto_compound_enc *e, const nfs_argop4 *op)
{
	return add_common(e, op, 0);
}

int proto_cb_compound_add(struct proto_compound_enc *e, const nfs_cb_argop4 *op)
{
	return add_common(e, op, 1);
}

int proto_compound_end(struct proto_compound_enc *e)
{
	return patch_u32(&e->m->xdr, e->count_pos, e->nops);
}

/* ---- decoding calls ------------------------------------------------------------------------------ */

/* A call, COMPOUND or CB_COMPOUND, as pointers into the caller's struct: the head (callback_ident
 * NULL for a COMPOUND, which has none), what the decoder says, and the op array (arr points to the
 * array's element pointer, whatever its type). */
struct call_view {
	utf8str_cs *tag;
	uint32_t *minorversion, *callback_ident, *opcount;
	enum proto_compound_stop *stop;
	uint32_t *stop_opcode;
	void *arr;
	u_int *n;
};

/* Decode the head, then the ops of kind k, for either flavour. */
static int call_decode(const void *buf, size_t len, uint32_t max_ops, const struct op_kind *k,
		       const struct call_view *v)
{
	char *arr = NULL;
	XDR x;
	int ret = -EBADMSG;

	if (max_ops == 0 || max_ops > PROTO_COMPOUND_MAX_OPS)
		max_ops = PROTO_COMPOUND_MAX_OPS;
	if (len > PROTO_RM_RECORD_LIMIT)
		return -EBADMSG;
	xdrmem_create(&x, (char *)buf, (u_int)len, XDR_DECODE);
	if (get_tag(&x, v->tag) < 0 || !xdr_uint32_t(&x, v->minorversion) ||
	    (v->callback_ident && !xdr_uint32_t(&x, v->callback_ident)) || !xdr_uint32_t(&x, v->opcount))
		goto out;
	ret = decode_ops(&x, len, *v->opcount > max_ops ? 1 : *v->opcount, k, &arr, v->n, v->stop, v->stop_opcode);
	if (ret == 0 && *v->opcount > max_ops && *v->stop == PROTO_COMPOUND_DONE)
		*v->stop = PROTO_COMPOUND_TOO_MANY;
out:
	memcpy(v->arr, &arr, sizeof(arr));
	xdr_destroy(&x);
	return ret;
}

int proto_compound_args_decode(const void *buf, size_t len, uint32_t max_ops,
			       struct proto_compound_args *out)
{
	COMPOUND4args *a = &out->args;

	memset(out, 0, sizeof(*out));
	return call_decode(buf, len, max_ops, &kind_args,
			   &(struct call_view){ .tag = &a->tag, .minorversion = &a->minorversion,
						.opcount = &out->opcount, .stop = &out->stop,
						.stop_opcode = &out->stop_opcode, .arr = &a->argarray.argarray_val,
						.n = &a->argarray.argarray_len });
}

void proto_compound_args_free(struct proto_compound_args *a)
{
	xdr_free((xdrproc_t)xdr_COMPOUND4args, (char *)&a->args);
	memset(a, 0, sizeof(*a));
}

int proto_cb_compound_args_decode(const void *buf, size_t len, uint32_t max_ops,
				  struct proto_cb_compound_args *out)
{
	CB_COMPOUND4args *a = &out->args;

	memset(out, 0, sizeof(*out));
	return call_decode(buf, len, max_ops, &kind_cb_args,
			   &(struct call_view){ .tag = &a->tag, .minorversion = &a->minorversion,
						.callback_ident = &a->callback_ident, .opcount = &out->opcount,
						.stop = &out->stop, .stop_opcode = &out->stop_opcode,
						.arr = &a->argarray.argarray_val, .n = &a->argarray.argarray_len });
}

void proto_cb_compound_args_free(struct proto_cb_compound_args *a)
{
	xdr_free((xdrproc_t)xdr_CB_COMPOUND4args, (char *)&a->args);
	memset(a, 0, sizeof(*a));
}

/* ---- encoding replies ----------------------------------------------------------------------- */

static int reply_begin(struct proto_compound_reply *r, struct proto_msg *m, const void *tag,
		       size_t tag_len, size_t max_reply, int cb)
{
	XDR *x = &m->xdr;
	u_int pos = xdr_getpos(x);
	int ret;

	memset(r, 0, sizeof(*r));
	r->m = m;
	r->cb = cb;
	r->limit = max_reply && max_reply < m->cap ? max_reply : m->cap;
	r->status_pos = pos;
	ret = put_u32(x, NFS4_OK);
	if (ret == 0)
		ret = put_tag(x, tag, tag_len);
	r->count_pos = xdr_getpos(x);
	if (ret == 0)
		ret = put_u32(x, 0);
	if (ret == 0 && xdr_getpos(x) > r->limit)
		ret = -EMSGSIZE;
	if (ret < 0)
		xdr_setpos(x, pos);
	return ret;
}

int proto_compound_reply_begin(struct proto_compound_reply *r, struct proto_msg *m, const void *tag,
			       size_t tag_len, size_t max_reply)
{
	return reply_begin(r, m, tag, tag_len, max_reply, 0);
}

int proto_cb_compound_reply_begin(struct proto_compound_reply *r, struct proto_msg *m, const void *tag,
				  size_t tag_len, size_t max_reply)
{
	return reply_begin(r, m, tag, tag_len, max_reply, 1);
}

static int reply_add(struct proto_compound_reply *r, const void *res, int cb)
{
	int ret;

	if (r->cb != cb)
		return -EINVAL;
	if (r->nres >= PROTO_COMPOUND_MAX_OPS)
		return -E2BIG;
	ret = append_elem(&r->m->xdr, cb ? kind_cb_res.proc : kind_res.proc, res, r->limit);
	if (ret == 0)
		r->nres++;
	return ret;
}

int proto_compound_reply_add(struct proto_compound_reply *r, const nfs_resop4 *res)
{
	return reply_add(r, res, 0);
}

int proto_cb_compound_reply_add(struct proto_compound_reply *r, const nfs_cb_resop4 *res)
{
	return reply_add(r, res, 1);
}

size_t proto_compound_reply_room(struct proto_compound_reply *r)
{
	size_t pos = xdr_getpos(&r->m->xdr);
	return pos < r->limit ? r->limit - pos : 0;
}

int proto_compound_reply_end(struct proto_compound_reply *r, nfsstat4 status)
{
	int ret = patch_u32(&r->m->xdr, r->status_pos, (uint32_t)status);

	if (ret == 0)
		ret = patch_u32(&r->m->xdr, r->count_pos, r->nres);
	return ret;
}

size_t proto_resop_size(const nfs_resop4 *res)
{
	return xdr_sizeof((xdrproc_t)xdr_nfs_resop4, (void *)res);
}

/* ---- decoding replies ---------------------------------------------------------------------- */

/* Results until the first non-OK status; every result is at least an opcode and a status. */
static int decode_results(XDR *x, size_t len, uint32_t count, const struct op_kind *k,
			  nfsstat4 (*status_of)(const void *), char **arr, u_int *n)
{
	size_t cap = xdr_left(x, len) / 8;
	char *a;

	*arr = NULL;
	*n = 0;
	if (count == 0)
		return 0;
	if (count > PROTO_COMPOUND_MAX_OPS)
		return -EBADMSG;
	if (cap > count)
		cap = count;
	if (cap == 0)
		return -EBADMSG;
	a = calloc(cap, k->size);
	if (!a)
		return -ENOMEM;
	*arr = a;
	for (uint32_t i = 0; i < count; i++) {
		char *elem = a + (size_t)i * k->size;

		if (i >= cap)
			return -EBADMSG;
		if (!k->proc(x, elem)) {
			xdr_free(k->proc, elem);
			memset(elem, 0, k->size);
			return -EBADMSG;
		}
		(*n)++;
		if (status_of(elem) != NFS4_OK)
			break;
	}
	return 0;
}

static nfsstat4 resop_status_v(const void *p)
{
	return proto_resop_status(p);
}

static nfsstat4 cb_resop_status_v(const void *p)
{
	return proto_cb_resop_status(p);
}

/* A reply, COMPOUND or CB_COMPOUND, as pointers into the caller's struct (arr points to the result
 * array's element pointer, whatever its type). */
struct reply_view {
	nfsstat4 *status;
	utf8str_cs *tag;
	uint32_t *rescount;
	void *arr;
	u_int *n;
};

/* Decode a reply's status, tag and results of kind k, for either flavour. */
static int reply_decode(const void *buf, size_t len, const struct op_kind *k, nfsstat4 (*status_of)(const void *),
			const struct reply_view *v)
{
	char *arr = NULL;
	uint32_t st;
	XDR x;
	int ret = -EBADMSG;

	if (len > PROTO_RM_RECORD_LIMIT)
		return -EBADMSG;
	xdrmem_create(&x, (char *)buf, (u_int)len, XDR_DECODE);
	if (!xdr_uint32_t(&x, &st) || get_tag(&x, v->tag) < 0 || !xdr_uint32_t(&x, v->rescount))
		goto out;
	*v->status = (nfsstat4)st;
	ret = decode_results(&x, len, *v->rescount, k, status_of, &arr, v->n);
out:
	memcpy(v->arr, &arr, sizeof(arr));
	xdr_destroy(&x);
	return ret;
}

int proto_compound_res_decode(const void *buf, size_t len, struct proto_compound_res *out)
{
	COMPOUND4res *r = &out->res;

	memset(out, 0, sizeof(*out));
	return reply_decode(buf, len, &kind_res, resop_status_v,
			    &(struct reply_view){ &r->status, &r->tag, &out->rescount, &r->resarray.resarray_val,
						  &r->resarray.resarray_len });
}

void proto_compound_res_free(struct proto_compound_res *r)
{
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r->res);
	memset(r, 0, sizeof(*r));
}

int proto_cb_compound_res_decode(const void *buf, size_t len, struct proto_cb_compound_res *out)
{
	CB_COMPOUND4res *r = &out->res;

	memset(out, 0, sizeof(*out));
	return reply_decode(buf, len, &kind_cb_res, cb_resop_status_v,
			    &(struct reply_view){ &r->status, &r->tag, &out->rescount, &r->resarray.resarray_val,
						  &r->resarray.resarray_len });
}

void proto_cb_compound_res_free(struct proto_cb_compound_res *r)
{
	xdr_free((xdrproc_t)xdr_CB_COMPOUND4res, (char *)&r->res);
	memset(r, 0, sizeof(*r));
}

int proto_compound_res_match(const struct proto_compound_res *r, const uint32_t *ops, uint32_t nops)
{
	u_int n = r->res.resarray.resarray_len;

	if (n > nops)
		return -EPROTO;
	for (u_int i = 0; i < n; i++) {
		uint32_t got = r->res.resarray.resarray_val[i].resop;
		/* A server answers an op it does not know with OP_ILLEGAL, as the last result. */
		if (got != ops[i] && !(got == OP_ILLEGAL && i == n - 1))
			return -EPROTO;
	}
	return 0;
}

/* ---- status of a result -------------------------------------------------------------------------- */

nfsstat4 proto_resop_status(const nfs_resop4 *res)
{
	const __typeof__(res->nfs_resop4_u) *u = &res->nfs_resop4_u;

	switch (res->resop) {
	case OP_ACCESS: return u->opaccess.status;
	case OP_CLOSE: return u->opclose.status;
	case OP_COMMIT: return u->opcommit.status;
	case OP_CREATE: return u->opcreate.status;
	case OP_DELEGPURGE: return u->opdelegpurge.status;
	case OP_DELEGRETURN: return u->opdelegreturn.status;
	case OP_GETATTR: return u->opgetattr.status;
	case OP_GETFH: return u->opgetfh.status;
	case OP_LINK: return u->oplink.status;
	case OP_LOCK: return u->oplock.status;
	case OP_LOCKT: return u->oplockt.status;
	case OP_LOCKU: return u->oplocku.status;
	case OP_LOOKUP: return u->oplookup.status;
	case OP_LOOKUPP: return u->oplookupp.status;
	case OP_NVERIFY: return u->opnverify.status;
	case OP_OPEN: return u->opopen.status;
	case OP_OPENATTR: return u->opopenattr.status;
	case OP_OPEN_CONFIRM: return u->opopen_confirm.status;
	case OP_OPEN_DOWNGRADE: return u->opopen_downgrade.status;
	case OP_PUTFH: return u->opputfh.status;
	case OP_PUTPUBFH: return u->opputpubfh.status;
	case OP_PUTROOTFH: return u->opputrootfh.status;
	case OP_READ: return u->opread.status;
	case OP_READDIR: return u->opreaddir.status;
	case OP_READLINK: return u->opreadlink.status;
	case OP_REMOVE: return u->opremove.status;
	case OP_RENAME: return u->oprename.status;
	case OP_RENEW: return u->oprenew.status;
	case OP_RESTOREFH: return u->oprestorefh.status;
	case OP_SAVEFH: return u->opsavefh.status;
	case OP_SECINFO: return u->opsecinfo.status;
	case OP_SETATTR: return u->opsetattr.status;
	case OP_SETCLIENTID: return u->opsetclientid.status;
	case OP_SETCLIENTID_CONFIRM: return u->opsetclientid_confirm.status;
	case OP_VERIFY: return u->opverify.status;
	case OP_WRITE: return u->opwrite.status;
	case OP_RELEASE_LOCKOWNER: return u->oprelease_lockowner.status;
	case OP_BACKCHANNEL_CTL: return u->opbackchannel_ctl.bcr_status;
	case OP_BIND_CONN_TO_SESSION: return u->opbind_conn_to_session.bctsr_status;
	case OP_EXCHANGE_ID: return u->opexchange_id.eir_status;
	case OP_CREATE_SESSION: return u->opcreate_session.csr_status;
	case OP_DESTROY_SESSION: return u->opdestroy_session.dsr_status;
	case OP_FREE_STATEID: return u->opfree_stateid.fsr_status;
	case OP_GET_DIR_DELEGATION: return u->opget_dir_delegation.gddr_status;
	case OP_GETDEVICEINFO: return u->opgetdeviceinfo.gdir_status;
	case OP_GETDEVICELIST: return u->opgetdevicelist.gdlr_status;
	case OP_LAYOUTCOMMIT: return u->oplayoutcommit.locr_status;
	case OP_LAYOUTGET: return u->oplayoutget.logr_status;
	case OP_LAYOUTRETURN: return u->oplayoutreturn.lorr_status;
	case OP_SECINFO_NO_NAME: return u->opsecinfo_no_name.status;
	case OP_SEQUENCE: return u->opsequence.sr_status;
	case OP_SET_SSV: return u->opset_ssv.ssr_status;
	case OP_TEST_STATEID: return u->optest_stateid.tsr_status;
	case OP_WANT_DELEGATION: return u->opwant_delegation.wdr_status;
	case OP_DESTROY_CLIENTID: return u->opdestroy_clientid.dcr_status;
	case OP_RECLAIM_COMPLETE: return u->opreclaim_complete.rcr_status;
	case OP_ILLEGAL: return u->opillegal.status;
	}
	return NFS4ERR_OP_ILLEGAL;
}

nfsstat4 proto_cb_resop_status(const nfs_cb_resop4 *res)
{
	const __typeof__(res->nfs_cb_resop4_u) *u = &res->nfs_cb_resop4_u;

	switch (res->resop) {
	case OP_CB_GETATTR: return u->opcbgetattr.status;
	case OP_CB_RECALL: return u->opcbrecall.status;
	case OP_CB_LAYOUTRECALL: return u->opcblayoutrecall.clorr_status;
	case OP_CB_NOTIFY: return u->opcbnotify.cnr_status;
	case OP_CB_PUSH_DELEG: return u->opcbpush_deleg.cpdr_status;
	case OP_CB_RECALL_ANY: return u->opcbrecall_any.crar_status;
	case OP_CB_RECALLABLE_OBJ_AVAIL: return u->opcbrecallable_obj_avail.croa_status;
	case OP_CB_RECALL_SLOT: return u->opcbrecall_slot.rsr_status;
	case OP_CB_SEQUENCE: return u->opcbsequence.csr_status;
	case OP_CB_WANTS_CANCELLED: return u->opcbwants_cancelled.cwcr_status;
	case OP_CB_NOTIFY_LOCK: return u->opcbnotify_lock.cnlr_status;
	case OP_CB_NOTIFY_DEVICEID: return u->opcbnotify_deviceid.cndr_status;
	case OP_CB_ILLEGAL: return u->opcbillegal.status;
	}
	return NFS4ERR_OP_ILLEGAL;
}
