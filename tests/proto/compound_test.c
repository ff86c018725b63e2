/* COMPOUND and CB_COMPOUND end to end: the builder, the op-by-op decoders and what they report when
 * they stop (an unknown opcode, undecodable arguments, too many ops, a garbled header), the reply
 * encoder's size limit, the reply decoder stopping at the first error, and the status/name tables. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void same_bytes(xdrproc_t proc, const void *a, const void *b)
{
	void *ba, *bb;
	size_t la, lb;

	CU_ASSERT_FATAL(proto_xdr_encode(proc, a, &ba, &la) == 0);
	CU_ASSERT_FATAL(proto_xdr_encode(proc, b, &bb, &lb) == 0);
	CU_ASSERT(la == lb && memcmp(ba, bb, la) == 0);
	free(ba);
	free(bb);
}

/* A call header for NFS COMPOUND, then the compound; returns the offset of the arguments. */
static size_t start_call(struct proto_msg *m, uint32_t xid)
{
	struct proto_rpc_call c = { .xid = xid, .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_COMPOUND };

	c.cred.flavor = AUTH_SYS;
	strcpy(c.cred.sys.machinename, "c1");
	CU_ASSERT_FATAL(proto_msg_init(m, 1 << 20) == 0);
	CU_ASSERT_FATAL(proto_rpc_call_encode(m, &c) == 0);
	return proto_msg_len(m);
}

static void args_every_op(void)
{
	struct proto_msg m;
	struct proto_compound_enc e;
	struct proto_compound_args a;
	struct proto_rpc_call c;
	size_t off, args_off = start_call(&m, 9);
	unsigned n = 0;

	CU_ASSERT_FATAL(proto_compound_begin(&e, &m, "every op", 1) == 0);
	for (const struct sample_case *sc = sample_arg_cases; sc->op && n < PROTO_COMPOUND_MAX_OPS; sc++, n++) {
		nfs_argop4 op;
		sample_argop(sc, &op);
		CU_ASSERT_FATAL(proto_compound_add(&e, &op) == 0);
	}
	CU_ASSERT_FATAL(proto_compound_end(&e) == 0);
	CU_ASSERT_FATAL(proto_rpc_call_decode(proto_msg_data(&m), proto_msg_len(&m), &c, &off, NULL) == 0);
	CU_ASSERT_EQUAL(off, args_off);
	CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m) + off, proto_msg_len(&m) - off, 0, &a) == 0);
	CU_ASSERT_EQUAL(a.stop, PROTO_COMPOUND_DONE);
	CU_ASSERT_EQUAL(a.opcount, n);
	CU_ASSERT_EQUAL(a.args.argarray.argarray_len, n);
	CU_ASSERT_EQUAL(a.args.minorversion, 1);
	CU_ASSERT(a.args.tag.utf8string_len == 8 && memcmp(a.args.tag.utf8string_val, "every op", 8) == 0);
	n = 0;
	for (const struct sample_case *sc = sample_arg_cases; sc->op && n < a.args.argarray.argarray_len; sc++, n++) {
		nfs_argop4 op;
		sample_argop(sc, &op);
		same_bytes((xdrproc_t)xdr_nfs_argop4, &op, &a.args.argarray.argarray_val[n]);
	}
	proto_compound_args_free(&a);
	proto_msg_destroy(&m);
	samples_free();
}

/* SEQUENCE, PUTFH, then a raw opcode word, then GETATTR. */
static void args_with_raw_op(struct proto_msg *m, uint32_t raw, const void *raw_args, size_t raw_len)
{
	struct proto_compound_enc e;
	struct sample_case s = { OP_SEQUENCE, 0 }, p = { OP_PUTFH, 0 }, g = { OP_GETATTR, 0 };
	nfs_argop4 op;

	CU_ASSERT_FATAL(proto_msg_init(m, 4096) == 0);
	CU_ASSERT_FATAL(proto_compound_begin(&e, m, NULL, 1) == 0);
	sample_argop(&s, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	sample_argop(&p, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT(xdr_uint32_t(&m->xdr, &raw));
	if (raw_len)
		CU_ASSERT(xdr_opaque(&m->xdr, (char *)raw_args, (u_int)raw_len));
	e.nops++;
	sample_argop(&g, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT(proto_compound_end(&e) == 0);
}

static void args_illegal_opcode(void)
{
	uint32_t bad[] = { 9999, OP_ILLEGAL, 59 /* NFSv4.2 ALLOCATE */, 0, 2 };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct proto_msg m;
		struct proto_compound_args a;

		args_with_raw_op(&m, bad[i], NULL, 0);
		CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 0, &a) == 0);
		CU_ASSERT_EQUAL(a.stop, PROTO_COMPOUND_ILLEGAL);
		CU_ASSERT_EQUAL(a.stop_opcode, bad[i]);
		CU_ASSERT_EQUAL(a.opcount, 4);
		CU_ASSERT_EQUAL(a.args.argarray.argarray_len, 2);
		CU_ASSERT(a.args.argarray.argarray_val[0].argop == OP_SEQUENCE &&
			  a.args.argarray.argarray_val[1].argop == OP_PUTFH);
		proto_compound_args_free(&a);
		proto_msg_destroy(&m);
	}
	samples_free();
}

static void args_badxdr_op(void)
{
	/* PUTFH whose filehandle claims 200 bytes (over NFS4_FHSIZE), then 200 bytes. */
	uint8_t fh[204] = { 0, 0, 0, 200 };
	struct proto_msg m;
	struct proto_compound_args a;

	args_with_raw_op(&m, OP_PUTFH, fh, sizeof(fh));
	CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 0, &a) == 0);
	CU_ASSERT_EQUAL(a.stop, PROTO_COMPOUND_BADXDR);
	CU_ASSERT_EQUAL(a.stop_opcode, OP_PUTFH);
	CU_ASSERT_EQUAL(a.args.argarray.argarray_len, 2);
	proto_compound_args_free(&a);
	proto_msg_destroy(&m);

	/* OPEN whose arguments stop half way (allocations inside the failed op are released). */
	{
		struct sample_case o = { OP_OPEN, 0 };
		nfs_argop4 op;
		void *b;
		size_t len;
		sample_argop(&o, &op);
		CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &b, &len) == 0);
		/* Drop the opcode: args_with_raw_op writes it; keep 60 bytes of the arguments. */
		args_with_raw_op(&m, OP_OPEN, (uint8_t *)b + 4, 60);
		CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 0, &a) == 0);
		CU_ASSERT(a.stop == PROTO_COMPOUND_BADXDR && a.stop_opcode == OP_OPEN);
		proto_compound_args_free(&a);
		proto_msg_destroy(&m);
		free(b);
	}
	samples_free();
}

static void args_too_many(void)
{
	struct proto_msg m;
	struct proto_compound_enc e;
	struct proto_compound_args a;
	struct sample_case s = { OP_SEQUENCE, 0 }, g = { OP_GETFH, 0 };
	nfs_argop4 op;

	/* 5 ops against a limit of 4: only SEQUENCE is decoded. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 4096) == 0);
	CU_ASSERT_FATAL(proto_compound_begin(&e, &m, "t", 1) == 0);
	sample_argop(&s, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	sample_argop(&g, &op);
	for (int i = 0; i < 4; i++)
		CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT(proto_compound_end(&e) == 0);
	CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 4, &a) == 0);
	CU_ASSERT_EQUAL(a.stop, PROTO_COMPOUND_TOO_MANY);
	CU_ASSERT_EQUAL(a.opcount, 5);
	CU_ASSERT(a.args.argarray.argarray_len == 1 && a.args.argarray.argarray_val[0].argop == OP_SEQUENCE);
	proto_compound_args_free(&a);
	/* The same message within the limit decodes whole. */
	CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 5, &a) == 0);
	CU_ASSERT(a.stop == PROTO_COMPOUND_DONE && a.args.argarray.argarray_len == 5);
	proto_compound_args_free(&a);
	/* A count of 2^32-1 with one op present: TOO_MANY, and nothing large allocated. */
	{
		uint8_t *p = (uint8_t *)proto_msg_data(&m) + 8 + 4; /* tag "t" padded, minorversion */
		p[0] = p[1] = p[2] = p[3] = 0xff;
		CU_ASSERT_FATAL(proto_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 0, &a) == 0);
		CU_ASSERT(a.stop == PROTO_COMPOUND_TOO_MANY && a.opcount == 0xffffffffu && a.args.argarray.argarray_len == 1);
		proto_compound_args_free(&a);
	}
	proto_msg_destroy(&m);
	/* The builder refuses op 129. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 16) == 0);
	CU_ASSERT_FATAL(proto_compound_begin(&e, &m, NULL, 1) == 0);
	for (int i = 0; i < PROTO_COMPOUND_MAX_OPS; i++)
		CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT_EQUAL(proto_compound_add(&e, &op), -E2BIG);
	proto_msg_destroy(&m);
	samples_free();
}

static void args_garbage(void)
{
	struct proto_msg m;
	struct proto_compound_enc e;
	struct proto_compound_args a;
	struct sample_case s = { OP_SEQUENCE, 0 }, l = { OP_LAYOUTGET, 0 };
	nfs_argop4 op;
	uint8_t hdr[12] = { 0, 0, 0x04, 0x01 }; /* tag length 1025 */

	CU_ASSERT_EQUAL(proto_compound_args_decode(hdr, sizeof(hdr), 0, &a), -EBADMSG);
	proto_compound_args_free(&a);
	CU_ASSERT_EQUAL(proto_compound_args_decode(hdr, 3, 0, &a), -EBADMSG);
	proto_compound_args_free(&a);
	/* Zero ops is a valid (empty) compound. */
	memset(hdr, 0, sizeof(hdr));
	hdr[7] = 1;
	CU_ASSERT(proto_compound_args_decode(hdr, sizeof(hdr), 0, &a) == 0 && a.stop == PROTO_COMPOUND_DONE &&
		  a.args.argarray.argarray_len == 0);
	proto_compound_args_free(&a);
	/* Every truncation: a garbled header or a truncated op, never a crash. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 4096) == 0);
	CU_ASSERT_FATAL(proto_compound_begin(&e, &m, "truncate me", 1) == 0);
	sample_argop(&s, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	sample_argop(&l, &op);
	CU_ASSERT(proto_compound_add(&e, &op) == 0);
	CU_ASSERT(proto_compound_end(&e) == 0);
	for (size_t cut = 0; cut < proto_msg_len(&m); cut++) {
		uint8_t *p = malloc(cut ? cut : 1);
		int ret;
		memcpy(p, proto_msg_data(&m), cut);
		ret = proto_compound_args_decode(p, cut, 0, &a);
		CU_ASSERT(ret == -EBADMSG || (ret == 0 && a.stop == PROTO_COMPOUND_BADXDR));
		proto_compound_args_free(&a);
		free(p);
	}
	proto_msg_destroy(&m);
	samples_free();
}

static void cb_args(void)
{
	struct proto_msg m;
	struct proto_compound_enc e;
	struct proto_cb_compound_args a;
	unsigned n = 0;
	uint32_t bad = 99;

	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 16) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_begin(&e, &m, "cb", 1, 0xcafe) == 0);
	CU_ASSERT_EQUAL(proto_compound_add(&e, NULL), -EINVAL); /* not a fore-channel compound */
	for (const struct sample_case *sc = sample_cb_arg_cases; sc->op; sc++, n++) {
		nfs_cb_argop4 op;
		sample_cb_argop(sc, &op);
		CU_ASSERT_FATAL(proto_cb_compound_add(&e, &op) == 0);
	}
	CU_ASSERT(proto_compound_end(&e) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 0, &a) == 0);
	CU_ASSERT(a.stop == PROTO_COMPOUND_DONE && a.opcount == n && a.args.argarray.argarray_len == n);
	CU_ASSERT(a.args.callback_ident == 0xcafe && a.args.minorversion == 1);
	n = 0;
	for (const struct sample_case *sc = sample_cb_arg_cases; sc->op; sc++, n++) {
		nfs_cb_argop4 op;
		sample_cb_argop(sc, &op);
		same_bytes((xdrproc_t)xdr_nfs_cb_argop4, &op, &a.args.argarray.argarray_val[n]);
	}
	proto_cb_compound_args_free(&a);
	/* An unknown callback op stops decoding for CB_ILLEGAL. */
	CU_ASSERT(xdr_uint32_t(&m.xdr, &bad));
	e.nops++;
	CU_ASSERT(proto_compound_end(&e) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_args_decode(proto_msg_data(&m), proto_msg_len(&m), 0, &a) == 0);
	CU_ASSERT(a.stop == PROTO_COMPOUND_ILLEGAL && a.stop_opcode == 99 && a.args.argarray.argarray_len == n);
	proto_cb_compound_args_free(&a);
	proto_msg_destroy(&m);
	samples_free();
}

/* ---- replies ------------------------------------------------------------------------------------ */

static void results_every_op(void)
{
	struct proto_msg m;
	struct proto_compound_reply r;
	struct proto_compound_res res;
	struct proto_rpc_reply rep, rd;
	uint32_t ops[PROTO_COMPOUND_MAX_OPS];
	unsigned n = 0;
	size_t off;

	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 20) == 0);
	proto_rpc_reply_accepted(&rep, 9, SUCCESS);
	CU_ASSERT_FATAL(proto_rpc_reply_encode(&m, &rep) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, &m, "every op", 8, 0) == 0);
	for (const struct sample_case *sc = sample_res_cases; sc->op; sc++) {
		nfs_resop4 res1;
		sample_resop(sc, &res1);
		if (proto_resop_status(&res1) != NFS4_OK)
			continue; /* errors end a reply; they are tested below */
		CU_ASSERT_FATAL(proto_compound_reply_add(&r, &res1) == 0);
		ops[n++] = sc->op;
	}
	CU_ASSERT(proto_compound_reply_end(&r, NFS4_OK) == 0);
	CU_ASSERT_FATAL(proto_rpc_reply_decode(proto_msg_data(&m), proto_msg_len(&m), &rd, &off) == 0);
	CU_ASSERT_FATAL(proto_compound_res_decode(proto_msg_data(&m) + off, proto_msg_len(&m) - off, &res) == 0);
	CU_ASSERT(res.res.status == NFS4_OK && res.rescount == n && res.res.resarray.resarray_len == n);
	CU_ASSERT(res.res.tag.utf8string_len == 8);
	CU_ASSERT(proto_compound_res_match(&res, ops, n) == 0);
	ops[3] = OP_WRITE == ops[3] ? OP_READ : OP_WRITE;
	CU_ASSERT_EQUAL(proto_compound_res_match(&res, ops, n), -EPROTO);
	n = 0;
	for (const struct sample_case *sc = sample_res_cases; sc->op; sc++) {
		nfs_resop4 res1;
		sample_resop(sc, &res1);
		if (proto_resop_status(&res1) != NFS4_OK)
			continue;
		same_bytes((xdrproc_t)xdr_nfs_resop4, &res1, &res.res.resarray.resarray_val[n++]);
	}
	proto_compound_res_free(&res);
	/* Every truncation of an all-OK reply is an error. */
	for (size_t cut = 0; cut < proto_msg_len(&m) - off; cut++) {
		uint8_t *p = malloc(cut ? cut : 1);
		memcpy(p, proto_msg_data(&m) + off, cut);
		CU_ASSERT(proto_compound_res_decode(p, cut, &res) == -EBADMSG);
		proto_compound_res_free(&res);
		free(p);
	}
	proto_msg_destroy(&m);
	samples_free();
}

static void results_stop_at_first_error(void)
{
	struct proto_msg m;
	struct proto_compound_reply r;
	struct proto_compound_res res;
	nfs_resop4 x;
	struct sample_case seq = { OP_SEQUENCE, 0 }, put = { OP_PUTFH, 0 }, lk = { OP_LOCK, 1 }, ga = { OP_GETATTR, 0 };
	uint32_t sent[] = { OP_SEQUENCE, OP_PUTFH, OP_LOCK, OP_GETATTR };

	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 16) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, &m, NULL, 0, 0) == 0);
	sample_resop(&seq, &x);
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	sample_resop(&put, &x);
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	sample_resop(&lk, &x); /* NFS4ERR_DENIED with its LOCK4denied body */
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	sample_resop(&ga, &x); /* a misbehaving server sends more after the error */
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	CU_ASSERT(proto_compound_reply_end(&r, NFS4ERR_DENIED) == 0);
	CU_ASSERT_FATAL(proto_compound_res_decode(proto_msg_data(&m), proto_msg_len(&m), &res) == 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_DENIED);
	CU_ASSERT_EQUAL(res.rescount, 4);
	CU_ASSERT_EQUAL(res.res.resarray.resarray_len, 3);
	CU_ASSERT_EQUAL(proto_resop_status(&res.res.resarray.resarray_val[2]), NFS4ERR_DENIED);
	CU_ASSERT_EQUAL(res.res.resarray.resarray_val[2].nfs_resop4_u.oplock.LOCK4res_u.denied.length, 20);
	CU_ASSERT(proto_compound_res_match(&res, sent, 4) == 0);
	proto_compound_res_free(&res);
	proto_msg_destroy(&m);

	/* An OP_ILLEGAL result ends a reply to an op the server did not know. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 1024) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, &m, NULL, 0, 0) == 0);
	sample_resop(&seq, &x);
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	memset(&x, 0, sizeof(x));
	x.resop = OP_ILLEGAL;
	x.nfs_resop4_u.opillegal.status = NFS4ERR_OP_ILLEGAL;
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	CU_ASSERT(proto_compound_reply_end(&r, NFS4ERR_OP_ILLEGAL) == 0);
	CU_ASSERT_FATAL(proto_compound_res_decode(proto_msg_data(&m), proto_msg_len(&m), &res) == 0);
	CU_ASSERT(res.res.resarray.resarray_len == 2 && proto_compound_res_match(&res, sent, 4) == 0);
	proto_compound_res_free(&res);
	proto_msg_destroy(&m);
	samples_free();
}

static void results_malformed(void)
{
	/* status, empty tag, 1 result: opcode 777. */
	uint8_t unknown[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x03, 0x09, 0, 0, 0, 0 };
	/* 129 results announced. */
	uint8_t many[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 129, 0, 0, 0, 22, 0, 0, 0, 0 };
	/* OP_ILLEGAL is a valid result opcode; 2 is not. */
	uint8_t two[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0 };
	struct proto_compound_res res;
	struct proto_cb_compound_res cres;

	CU_ASSERT_EQUAL(proto_compound_res_decode(unknown, sizeof(unknown), &res), -EBADMSG);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(proto_compound_res_decode(many, sizeof(many), &res), -EBADMSG);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(proto_compound_res_decode(two, sizeof(two), &res), -EBADMSG);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(proto_cb_compound_res_decode(two, sizeof(two), &cres), -EBADMSG);
	proto_cb_compound_res_free(&cres);
	/* Results announced but absent. */
	many[11] = 3;
	CU_ASSERT_EQUAL(proto_compound_res_decode(many, 12, &res), -EBADMSG);
	proto_compound_res_free(&res);
}

static void reply_size_limit(void)
{
	struct proto_msg m;
	struct proto_compound_reply r;
	struct sample_case rd = { OP_READ, 0 }, seq = { OP_SEQUENCE, 0 }, put = { OP_PUTFH, 0 };
	nfs_resop4 x, p;
	size_t before, limit;

	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 16) == 0);
	sample_resop(&seq, &x);
	sample_resop(&put, &p);
	/* Room for the compound header, SEQUENCE, and a little more — not the 1027-byte READ. */
	limit = 12 + proto_resop_size(&x) + 100;
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, &m, NULL, 0, limit) == 0);
	CU_ASSERT(proto_compound_reply_add(&r, &x) == 0);
	CU_ASSERT_EQUAL(proto_compound_reply_room(&r), 100);
	before = proto_msg_len(&m);
	sample_resop(&rd, &x);
	CU_ASSERT(proto_resop_size(&x) > 100);
	CU_ASSERT_EQUAL(proto_compound_reply_add(&r, &x), -EMSGSIZE);
	CU_ASSERT_EQUAL(proto_msg_len(&m), before); /* nothing half-written */
	CU_ASSERT(proto_compound_reply_add(&r, &p) == 0); /* a small result still fits */
	CU_ASSERT(proto_compound_reply_end(&r, NFS4_OK) == 0);
	CU_ASSERT_EQUAL(r.nres, 2);
	proto_msg_destroy(&m);
	/* A buffer smaller than the limit: the buffer bounds the reply. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 64) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, &m, NULL, 0, 1 << 20) == 0);
	CU_ASSERT_EQUAL(proto_compound_reply_add(&r, &x), -EMSGSIZE);
	CU_ASSERT_EQUAL(proto_compound_reply_room(&r), 64 - 12);
	proto_msg_destroy(&m);
	samples_free();
}

static void cb_results(void)
{
	struct proto_msg m;
	struct proto_compound_reply r;
	struct proto_cb_compound_res res;
	unsigned n = 0;

	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 16) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_reply_begin(&r, &m, "cb", 2, 0) == 0);
	CU_ASSERT_EQUAL(proto_compound_reply_add(&r, NULL), -EINVAL);
	for (const struct sample_case *sc = sample_cb_res_cases; sc->op; sc++) {
		nfs_cb_resop4 x;
		sample_cb_resop(sc, &x);
		if (proto_cb_resop_status(&x) != NFS4_OK)
			continue;
		CU_ASSERT_FATAL(proto_cb_compound_reply_add(&r, &x) == 0);
		n++;
	}
	CU_ASSERT(proto_compound_reply_end(&r, NFS4_OK) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_res_decode(proto_msg_data(&m), proto_msg_len(&m), &res) == 0);
	CU_ASSERT(res.res.status == NFS4_OK && res.res.resarray.resarray_len == n && n >= 10);
	proto_cb_compound_res_free(&res);
	proto_msg_destroy(&m);
	samples_free();
}

/* The status word of an encoded result (after its op number). */
static uint32_t wire_status(xdrproc_t proc, void *x)
{
	uint8_t *b;
	size_t len;
	uint32_t st;

	CU_ASSERT_FATAL(proto_xdr_encode(proc, x, (void **)&b, &len) == 0);
	st = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
	free(b);
	return st;
}

/* proto_resop_status agrees with the status word on the wire for every sample, errors included. */
static void status_accessors(void)
{
	for (const struct sample_case *sc = sample_res_cases; sc->op; sc++) {
		nfs_resop4 x;
		sample_resop(sc, &x);
		CU_ASSERT_EQUAL((uint32_t)proto_resop_status(&x), wire_status((xdrproc_t)xdr_nfs_resop4, &x));
	}
	for (const struct sample_case *sc = sample_cb_res_cases; sc->op; sc++) {
		nfs_cb_resop4 x;
		sample_cb_resop(sc, &x);
		CU_ASSERT_EQUAL((uint32_t)proto_cb_resop_status(&x), wire_status((xdrproc_t)xdr_nfs_cb_resop4, &x));
	}
	samples_free();
}

static void names(void)
{
	for (uint32_t op = OP_ACCESS; op <= OP_RECLAIM_COMPLETE; op++)
		CU_ASSERT_STRING_NOT_EQUAL(proto_opnum4_name(op), "unknown");
	for (uint32_t op = OP_CB_GETATTR; op <= OP_CB_NOTIFY_DEVICEID; op++)
		CU_ASSERT_STRING_NOT_EQUAL(proto_cb_opnum4_name(op), "unknown");
	CU_ASSERT_STRING_EQUAL(proto_opnum4_name(OP_LAYOUTGET), "LAYOUTGET");
	CU_ASSERT_STRING_EQUAL(proto_opnum4_name(OP_SECINFO_NO_NAME), "SECINFO_NO_NAME");
	CU_ASSERT_STRING_EQUAL(proto_opnum4_name(OP_ILLEGAL), "ILLEGAL");
	CU_ASSERT_STRING_EQUAL(proto_opnum4_name(59), "unknown");
	CU_ASSERT_STRING_EQUAL(proto_cb_opnum4_name(OP_CB_LAYOUTRECALL), "CB_LAYOUTRECALL");
	CU_ASSERT_STRING_EQUAL(proto_nfsstat4_name(NFS4_OK), "NFS4_OK");
	CU_ASSERT_STRING_EQUAL(proto_nfsstat4_name(NFS4ERR_REP_TOO_BIG_TO_CACHE), "NFS4ERR_REP_TOO_BIG_TO_CACHE");
	CU_ASSERT_STRING_EQUAL(proto_nfsstat4_name(NFS4ERR_DELEG_REVOKED), "NFS4ERR_DELEG_REVOKED");
	CU_ASSERT_STRING_EQUAL(proto_nfsstat4_name(10073), "unknown");
	CU_ASSERT(proto_opnum_valid(OP_SEQUENCE) && !proto_opnum_valid(OP_ILLEGAL) && !proto_opnum_valid(2));
	CU_ASSERT(proto_cb_opnum_valid(OP_CB_SEQUENCE) && !proto_cb_opnum_valid(OP_CB_ILLEGAL));
}

TEST_SUITE(proto_compound, "proto/compound", NULL, NULL,
	   { "args_every_op", args_every_op },
	   { "args_illegal_opcode", args_illegal_opcode },
	   { "args_badxdr_op", args_badxdr_op },
	   { "args_too_many", args_too_many },
	   { "args_garbage", args_garbage },
	   { "cb_args", cb_args },
	   { "results_every_op", results_every_op },
	   { "results_stop_at_first_error", results_stop_at_first_error },
	   { "results_malformed", results_malformed },
	   { "reply_size_limit", reply_size_limit },
	   { "cb_results", cb_results },
	   { "status_accessors", status_accessors },
	   { "names", names });
