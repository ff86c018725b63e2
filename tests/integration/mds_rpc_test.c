/* The RPC edge of pnfs-mds under normal and hostile input: every RPC-level error a wrong call
 * deserves (PROG_UNAVAIL, PROG_MISMATCH 4..4, PROC_UNAVAIL, GARBAGE_ARGS, AUTH_ERROR, RPC_MISMATCH),
 * and connections that send truncated records, absurd lengths, random bytes, unknown operations,
 * huge compounds or never read their replies. Each attack gets its error or a closed connection,
 * and a well-behaved client keeps working between all of them. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct test_lab *lab;
static struct test_mds *mds;
static struct nc *good;     /* the well-behaved client */
static int good_ops;

static int suite_init(void)
{
	char why[64];

	mds = tmds_lab_up(&lab, 1, "64M", NULL, "--concat", why, sizeof(why), "%s", "");
	if (!mds)
		return 1;
	good = nc_connect(mds->port);
	if (!good || nc_setup(good, "good-client") != 0)
		return 1;
	return 0;
}

static int suite_clean(void)
{
	nc_free(good);
	return tmds_lab_down(&lab, &mds);
}

/* The good client does real work: look up the root and read its attributes. */
static void good_client_works(void)
{
	struct nc_fh root;
	struct nc_attrs a;

	CU_ASSERT_EQUAL(nc_rootfh(good, &root), 0);
	CU_ASSERT_EQUAL(nc_getattrs(good, &root, &a), 0);
	CU_ASSERT_EQUAL(a.type, NF4DIR);
	good_ops++;
}

static struct nc *attacker(void)
{
	struct nc *c = nc_connect(mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

static void test_rpc_errors(void)
{
	struct nc *c = attacker();
	struct proto_rpc_reply r;
	void *body = NULL;
	size_t blen;

	/* NULL works with AUTH_NONE and AUTH_SYS. */
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_NULL,
			.flavor = AUTH_NONE }, &r, NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.reply_stat, MSG_ACCEPTED);
	CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_NULL,
			.flavor = AUTH_SYS }, &r, &body, &blen), 0);
	CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
	CU_ASSERT_EQUAL(blen, 0);
	free(body);
	/* Another program (MOUNT), another version (NFSv3), another procedure. */
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = 100005, .vers = 3, .proc = 0, .flavor = AUTH_SYS }, &r,
			NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.reply_stat, MSG_ACCEPTED);
	CU_ASSERT_EQUAL(r.accept_stat, PROG_UNAVAIL);
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = 3, .proc = 0, .flavor = AUTH_SYS },
			&r, NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.accept_stat, PROG_MISMATCH);
	CU_ASSERT_EQUAL(r.mismatch_low, 4);
	CU_ASSERT_EQUAL(r.mismatch_high, 4);
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = 7,
			.flavor = AUTH_SYS }, &r, NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.accept_stat, PROC_UNAVAIL);
	/* COMPOUND arguments that do not decode: a tag claiming 2 GiB. */
	{
		uint8_t bad[8] = { 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1 };
		CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4,
				.proc = NFSPROC4_COMPOUND, .flavor = AUTH_SYS, .args = bad, .alen = sizeof(bad) }, &r,
				NULL, NULL),
				0);
		if (r.accept_stat != GARBAGE_ARGS)
			fprintf(stderr, "\n  reply %u/%u/%u\n", r.reply_stat, r.accept_stat, r.reject_stat);
		CU_ASSERT_EQUAL(r.accept_stat, GARBAGE_ARGS);
	}
	/* RPCSEC_GSS (6): a flavour we do not speak. */
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_NULL,
			.flavor = 6 }, &r, NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.reply_stat, MSG_DENIED);
	CU_ASSERT_EQUAL(r.reject_stat, AUTH_ERROR);
	CU_ASSERT_EQUAL(r.auth_stat, AUTH_BADCRED);
	/* RPC version 3: RPC_MISMATCH 2..2 (built by hand: our encoder always says 2). */
	{
		uint8_t call[40] = { 0 };
		uint32_t w[10] = { 0x1234, CALL, 3, NFS4_PROGRAM, NFS_V4, 0, AUTH_NONE, 0, AUTH_NONE, 0 };
		void *rec;
		size_t rl, off;
		for (int i = 0; i < 10; i++) {
			call[4 * i] = (uint8_t)(w[i] >> 24);
			call[4 * i + 1] = (uint8_t)(w[i] >> 16);
			call[4 * i + 2] = (uint8_t)(w[i] >> 8);
			call[4 * i + 3] = (uint8_t)w[i];
		}
		CU_ASSERT_EQUAL(nc_send_record(c, call, sizeof(call)), 0);
		CU_ASSERT_EQUAL_FATAL(nc_recv_reply(c, &rec, &rl), 0);
		CU_ASSERT_EQUAL(proto_rpc_reply_decode(rec, rl, &r, &off), 0);
		CU_ASSERT_EQUAL(r.xid, 0x1234);
		CU_ASSERT_EQUAL(r.reply_stat, MSG_DENIED);
		CU_ASSERT_EQUAL(r.reject_stat, RPC_MISMATCH);
		CU_ASSERT_EQUAL(r.mismatch_low, 2);
		CU_ASSERT_EQUAL(r.mismatch_high, 2);
		free(rec);
		/* A call header cut short inside a whole record: GARBAGE_ARGS for its xid. */
		call[11] = 2;
		CU_ASSERT_EQUAL(nc_send_record(c, call, 16), 0);
		CU_ASSERT_EQUAL_FATAL(nc_recv_reply(c, &rec, &rl), 0);
		CU_ASSERT_EQUAL(proto_rpc_reply_decode(rec, rl, &r, &off), 0);
		CU_ASSERT_EQUAL(r.xid, 0x1234);
		CU_ASSERT_EQUAL(r.accept_stat, GARBAGE_ARGS);
		free(rec);
	}
	/* The connection is still usable after all that. */
	CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_NULL,
			.flavor = AUTH_SYS }, &r, NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
	nc_free(c);
	good_client_works();
}

/* An AUTH_SYS NFSv4 COMPOUND call header with this xid. */
static void compound_call(struct proto_rpc_call *call, uint32_t xid)
{
	memset(call, 0, sizeof(*call));
	call->xid = xid;
	call->prog = NFS4_PROGRAM;
	call->vers = NFS_V4;
	call->proc = NFSPROC4_COMPOUND;
	call->cred.flavor = AUTH_SYS;
	snprintf(call->cred.sys.machinename, sizeof(call->cred.sys.machinename), "mds-test");
}

/* End the COMPOUND e in m, send it on c (m destroyed) and read the reply: its record in *rec (caller
 * frees), *rl bytes, the COMPOUND result from *off on. */
static void send_raw(struct nc *c, struct proto_msg *m, struct proto_compound_enc *e, void **rec, size_t *rl,
		     size_t *off)
{
	struct proto_rpc_reply r;
	const uint8_t *wire;
	size_t wlen;

	CU_ASSERT_EQUAL(proto_compound_end(e), 0);
	CU_ASSERT_EQUAL(proto_msg_finish(m, &wire, &wlen), 0);
	CU_ASSERT_EQUAL(nc_send_bytes(c, wire, wlen), 0);
	proto_msg_destroy(m);
	CU_ASSERT_EQUAL_FATAL(nc_recv_reply(c, rec, rl), 0);
	CU_ASSERT_EQUAL(proto_rpc_reply_decode(*rec, *rl, &r, off), 0);
}

/* SEQUENCE + PUTROOTFH + a bare opcode appended by hand (our encoder only knows NFSv4.1's). */
static void seq_with_raw_op(struct nc *c, uint32_t minor, uint32_t opcode, struct proto_compound_res *res)
{
	struct proto_msg m;
	struct proto_compound_enc e;
	struct proto_rpc_call call;
	size_t rl, off;
	void *rec;
	nfs_argop4 ops[2];
	uint32_t be = htonl(opcode);

	compound_call(&call, 0x77 + opcode);
	memset(ops, 0, sizeof(ops));
	ops[0].argop = OP_SEQUENCE;
	memcpy(ops[0].nfs_argop4_u.opsequence.sa_sessionid, c->sessid, NFS4_SESSIONID_SIZE);
	ops[0].nfs_argop4_u.opsequence.sa_sequenceid = ++c->slot_seq;
	nc_op_simple(&ops[1], OP_PUTROOTFH);
	memset(res, 0, sizeof(*res));
	CU_ASSERT_EQUAL_FATAL(proto_msg_init(&m, 4096), 0);
	CU_ASSERT_EQUAL(proto_rpc_call_encode(&m, &call), 0);
	CU_ASSERT_EQUAL(proto_compound_begin(&e, &m, "raw-op", minor), 0);
	CU_ASSERT_EQUAL(proto_compound_add(&e, &ops[0]), 0);
	CU_ASSERT_EQUAL(proto_compound_add(&e, &ops[1]), 0);
	CU_ASSERT(xdr_opaque(&m.xdr, (char *)&be, 4));
	e.nops++;
	send_raw(c, &m, &e, &rec, &rl, &off);
	free(c->last_body);
	c->last_body_len = rl - off;
	c->last_body = malloc(c->last_body_len);
	memcpy(c->last_body, (uint8_t *)rec + off, c->last_body_len);
	/* proto decodes 4.1 results; a trailing 4.2 result is checked by hand from the bytes. */
	proto_compound_res_decode((uint8_t *)rec + off, rl - off, res);
	free(rec);
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void test_compound_level_errors(void)
{
	struct nc *c = attacker();
	struct proto_compound_res res;
	nfs_argop4 ops[4];

	/* Minor version 3 does not exist: an empty result array. */
	c->minorversion = 3;
	nc_op_simple(&ops[0], OP_PUTROOTFH);
	CU_ASSERT_EQUAL(nc_compound(c, ops, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_MINOR_VERS_MISMATCH);
	CU_ASSERT_EQUAL(res.res.resarray.resarray_len, 0);
	proto_compound_res_free(&res);
	c->minorversion = 1;
	/* No ops: OK. An op outside a session: OP_NOT_IN_SESSION. */
	CU_ASSERT_EQUAL(nc_compound(c, NULL, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(nc_compound(c, ops, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_OP_NOT_IN_SESSION);
	proto_compound_res_free(&res);
	/* In a session: an unknown opcode becomes OP_ILLEGAL after the ops before it ran. */
	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "compound-errors"), 0);
	{
		uint8_t raw[256];
		size_t n = 0;
		struct proto_msg m;
		struct proto_compound_enc e;
		struct proto_rpc_call call;
		void *rec;
		size_t rl, off;
		nfs_argop4 seq;
		SEQUENCE4args *sa = &seq.nfs_argop4_u.opsequence;
		(void)raw;
		(void)n;

		compound_call(&call, 0x77);
		nc_op_simple(&seq, OP_SEQUENCE);
		memcpy(sa->sa_sessionid, c->sessid, NFS4_SESSIONID_SIZE);
		sa->sa_sequenceid = ++c->slot_seq;
		CU_ASSERT_EQUAL_FATAL(proto_msg_init(&m, 4096), 0);
		CU_ASSERT_EQUAL(proto_rpc_call_encode(&m, &call), 0);
		CU_ASSERT_EQUAL(proto_compound_begin(&e, &m, "illegal", 1), 0);
		CU_ASSERT_EQUAL(proto_compound_add(&e, &seq), 0);
		nc_op_simple(&ops[0], OP_PUTROOTFH);
		CU_ASSERT_EQUAL(proto_compound_add(&e, &ops[0]), 0);
		/* opcode 9999 with no arguments, appended by hand, and the count fixed up */
		{
			uint32_t bogus = htonl(9999);
			CU_ASSERT(xdr_opaque(&m.xdr, (char *)&bogus, 4));
			e.nops++;
		}
		send_raw(c, &m, &e, &rec, &rl, &off);
		CU_ASSERT_EQUAL(proto_compound_res_decode((uint8_t *)rec + off, rl - off, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_OP_ILLEGAL);
		CU_ASSERT_EQUAL_FATAL(res.res.resarray.resarray_len, 3);
		CU_ASSERT_EQUAL(res.res.resarray.resarray_val[1].resop, OP_PUTROOTFH);
		CU_ASSERT_EQUAL(res.res.resarray.resarray_val[2].resop, OP_ILLEGAL);
		proto_compound_res_free(&res);
		free(rec);
	}
	/* In minor version 2, NFSv4.2's operations exist but are not offered: NOTSUPP, as the
	 * last result, opcode kept. In minor version 1 the same opcode is illegal. */
	seq_with_raw_op(c, 2, 59 /* ALLOCATE */, &res);
	CU_ASSERT_EQUAL(be32_at(c->last_body), NFS4ERR_NOTSUPP);
	CU_ASSERT(c->last_body_len >= 8 && be32_at(c->last_body + c->last_body_len - 8) == 59);
	CU_ASSERT(c->last_body_len >= 8 && be32_at(c->last_body + c->last_body_len - 4) == NFS4ERR_NOTSUPP);
	proto_compound_res_free(&res);
	seq_with_raw_op(c, 1, 59, &res);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_OP_ILLEGAL);
	CU_ASSERT_EQUAL(res.res.resarray.resarray_len, 3);
	proto_compound_res_free(&res);
	seq_with_raw_op(c, 2, 76, &res); /* past NFSv4.2 */
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_OP_ILLEGAL);
	proto_compound_res_free(&res);
	/* SEQUENCE not first, or twice. */
	nc_op_simple(&ops[0], OP_PUTROOTFH);
	nc_op_simple(&ops[1], OP_SEQUENCE);
	memcpy(ops[1].nfs_argop4_u.opsequence.sa_sessionid, c->sessid, NFS4_SESSIONID_SIZE);
	CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_SEQUENCE_POS);
	proto_compound_res_free(&res);
	nc_free(c);
	good_client_works();
}

static void test_huge_compounds(void)
{
	struct nc *c = attacker();
	struct proto_compound_res res;
	nfs_argop4 *ops = calloc(300, sizeof(*ops));

	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "huge-compounds"), 0);
	/* More ops than the session allows (we asked for 32): TOO_MANY_OPS from SEQUENCE. */
	for (int i = 0; i < 299; i++)
		nc_op_simple(&ops[i], OP_PUTROOTFH);
	CU_ASSERT_EQUAL(nc_seq(c, ops, 40, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_TOO_MANY_OPS);
	proto_compound_res_free(&res);
	/* More than any server decodes (299 > 128; our encoder refuses that many, so the extra
	 * PUTROOTFHs are appended by hand). */
	{
		struct proto_rpc_call call;
		struct proto_compound_enc e;
		struct proto_rpc_reply r;
		struct proto_msg m;
		const uint8_t *wire;
		size_t wlen, rl, off;
		void *rec;
		nfs_argop4 seq;
		uint32_t op = htonl(OP_PUTROOTFH);

		memset(&call, 0, sizeof(call));
		call.xid = 0x99;
		call.prog = NFS4_PROGRAM;
		call.vers = NFS_V4;
		call.proc = NFSPROC4_COMPOUND;
		call.cred.flavor = AUTH_NONE;
		nc_op_simple(&seq, OP_SEQUENCE);
		memcpy(seq.nfs_argop4_u.opsequence.sa_sessionid, c->sessid, NFS4_SESSIONID_SIZE);
		seq.nfs_argop4_u.opsequence.sa_sequenceid = c->slot_seq + 1;
		CU_ASSERT_EQUAL_FATAL(proto_msg_init(&m, 8192), 0);
		proto_rpc_call_encode(&m, &call);
		proto_compound_begin(&e, &m, "huge", 1);
		proto_compound_add(&e, &seq);
		for (int i = 0; i < 298; i++)
			CU_ASSERT(xdr_opaque(&m.xdr, (char *)&op, 4));
		e.nops += 298;
		proto_compound_end(&e);
		proto_msg_finish(&m, &wire, &wlen);
		CU_ASSERT_EQUAL(nc_send_bytes(c, wire, wlen), 0);
		proto_msg_destroy(&m);
		CU_ASSERT_EQUAL_FATAL(nc_recv_reply(c, &rec, &rl), 0);
		CU_ASSERT_EQUAL(proto_rpc_reply_decode(rec, rl, &r, &off), 0);
		CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
		CU_ASSERT_EQUAL(proto_compound_res_decode((uint8_t *)rec + off, rl - off, &res), 0);
		if (res.res.status != NFS4ERR_TOO_MANY_OPS)
			fprintf(stderr, "\n  299 ops: %s, %u results\n", proto_nfsstat4_name(res.res.status),
				res.res.resarray.resarray_len);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_TOO_MANY_OPS);
		proto_compound_res_free(&res);
		free(rec);
	}
	/* The slot was not consumed by the refused requests: the session works. */
	CU_ASSERT_EQUAL(nc_seq(c, ops, 3, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	/* A count of 2^31 ops with one op present. */
	{
		uint8_t args[] = { 0, 0, 0, 0, /* tag */ 0, 0, 0, 1, /* minor */ 0x80, 0, 0, 0, /* count */
				   0, 0, 0, OP_PUTROOTFH };
		struct proto_rpc_reply r;
		void *body = NULL;
		size_t blen = 0;
		CU_ASSERT_EQUAL(nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4,
				.proc = NFSPROC4_COMPOUND, .flavor = AUTH_SYS, .args = args, .alen = sizeof(args) }, &r,
				&body, &blen),
				0);
		CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
		if (body && blen) {
			CU_ASSERT_EQUAL(proto_compound_res_decode(body, blen, &res), 0);
			CU_ASSERT_NOT_EQUAL(res.res.status, NFS4_OK);
			proto_compound_res_free(&res);
		}
		free(body);
	}
	free(ops);
	nc_free(c);
	good_client_works();
}

static void test_hostile_bytes(void)
{
	unsigned char junk[8192];

	/* A record mark promising 2 GiB - 1: past max-record, the connection closes. */
	{
		struct nc *c = attacker();
		uint8_t mark[4] = { 0xff, 0xff, 0xff, 0xff };
		CU_ASSERT_EQUAL(nc_send_bytes(c, mark, 4), 0);
		CU_ASSERT_EQUAL(nc_wait_closed(c, 5000), 1);
		nc_free(c);
		good_client_works();
	}
	/* Just over max-record (2 MiB by default), in fragments. */
	{
		struct nc *c = attacker();
		uint8_t mark[4];
		unsigned char *big = calloc(1, 1100 << 10);
		proto_rm_mark(mark, 1100 << 10, 0);
		nc_send_bytes(c, mark, 4);
		nc_send_bytes(c, big, 1100 << 10);
		proto_rm_mark(mark, 1100 << 10, 1);
		nc_send_bytes(c, mark, 4);
		nc_send_bytes(c, big, 1100 << 10);
		CU_ASSERT_EQUAL(nc_wait_closed(c, 5000), 1);
		free(big);
		nc_free(c);
		good_client_works();
	}
	/* A truncated record, then the client vanishes mid-record. */
	{
		struct nc *c = attacker();
		uint8_t mark[4];
		proto_rm_mark(mark, 1000, 1);
		nc_send_bytes(c, mark, 4);
		nc_send_bytes(c, junk, 100);
		nc_free(c);
		good_client_works();
	}
	/* A record too short to be RPC at all. */
	{
		struct nc *c = attacker();
		CU_ASSERT_EQUAL(nc_send_record(c, "\x01\x02", 2), 0);
		CU_ASSERT_EQUAL(nc_wait_closed(c, 5000), 1);
		nc_free(c);
		good_client_works();
	}
	/* Random bytes, many seeds: whatever they mean, the server answers or closes, and lives. */
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct nc *c = attacker();
		test_fill_random(junk, sizeof(junk), seed);
		if (seed % 2)
			junk[0] &= 0x7f; /* half of them look like a small first fragment */
		nc_send_bytes(c, junk, sizeof(junk));
		nc_wait_closed(c, 200);
		nc_free(c);
	}
	good_client_works();
	/* A well-framed record of random bytes after a valid xid and CALL: an RPC error or close. */
	for (uint64_t seed = 30; seed <= 40; seed++) {
		struct nc *c = attacker();
		struct proto_rpc_reply r;
		void *rec;
		size_t rl, off;
		test_fill_random(junk, 512, seed);
		memcpy(junk, "\0\0\0\x42\0\0\0\0", 8);
		CU_ASSERT_EQUAL(nc_send_record(c, junk, 512), 0);
		c->timeout_ms = 2000;
		if (nc_recv_reply(c, &rec, &rl) == 0) {
			CU_ASSERT_EQUAL(proto_rpc_reply_decode(rec, rl, &r, &off), 0);
			CU_ASSERT(r.reply_stat == MSG_DENIED || r.accept_stat != SUCCESS);
			free(rec);
		}
		nc_free(c);
	}
	good_client_works();
}

/* A client that pipelines large READs and never reads the replies must not slow the others. */
static void test_slow_reader(void)
{
	struct nc *slow = attacker();
	struct nc_fh root, fh;
	stateid4 sid;
	unsigned char *buf = malloc(1 << 20);
	struct proto_compound_res res;
	int sent = 0;

	slow->want_slots = 64;
	CU_ASSERT_EQUAL_FATAL(nc_setup(slow, "slow-reader"), 0);
	CU_ASSERT_EQUAL(slow->fore.ca_maxrequests, 64);
	CU_ASSERT_EQUAL(nc_rootfh(good, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(good, &root, "big", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	test_fill_random(buf, 1 << 20, 5);
	CU_ASSERT_EQUAL(nc_write(good, &fh, &sid, 0, buf, 1 << 20, FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(nc_close(good, &fh, &sid), 0);
	/* 63 READs of 1 MiB on the wire, each on a slot of its own (slot 0 served the setup); none
	 * of the replies is read. */
	{
		stateid4 anon;
		memset(&anon, 0, sizeof(anon));
		for (int i = 1; i < 64; i++) {
			struct proto_compound_enc e;
			struct proto_rpc_call call;
			struct proto_msg m;
			const uint8_t *wire;
			size_t wlen;
			nfs_argop4 ops[3];
			SEQUENCE4args *sa = &ops[0].nfs_argop4_u.opsequence;

			memset(ops, 0, sizeof(ops));
			ops[0].argop = OP_SEQUENCE;
			memcpy(sa->sa_sessionid, slow->sessid, NFS4_SESSIONID_SIZE);
			sa->sa_sequenceid = 1;
			sa->sa_slotid = (uint32_t)i;
			sa->sa_highest_slotid = 63;
			nc_op_putfh(&ops[1], &fh);
			ops[2].argop = OP_READ;
			ops[2].nfs_argop4_u.opread.stateid = anon;
			ops[2].nfs_argop4_u.opread.count = 1 << 20;
			memset(&call, 0, sizeof(call));
			call.xid = 1000 + (uint32_t)i;
			call.prog = NFS4_PROGRAM;
			call.vers = NFS_V4;
			call.proc = NFSPROC4_COMPOUND;
			call.cred.flavor = AUTH_SYS;
			snprintf(call.cred.sys.machinename, sizeof(call.cred.sys.machinename), "slow");
			if (proto_msg_init(&m, 4096) != 0)
				break;
			proto_rpc_call_encode(&m, &call);
			proto_compound_begin(&e, &m, "slow", 1);
			for (int k = 0; k < 3; k++)
				proto_compound_add(&e, &ops[k]);
			proto_compound_end(&e);
			proto_msg_finish(&m, &wire, &wlen);
			{
				struct pollfd p = { slow->fd, POLLOUT, 0 };
				if (poll(&p, 1, 200) == 1 && nc_send_bytes(slow, wire, wlen) == 0)
					sent++;
			}
			proto_msg_destroy(&m);
			/* The good client keeps working while the slow one's replies pile up. */
			if (i % 8 == 7)
				good_client_works();
		}
	}
	CU_ASSERT(sent >= 8);
	good_client_works();
	/* The slow reader finally reads: it gets its replies. */
	for (int i = 0; i < 3; i++) {
		void *rec;
		size_t rl, off;
		struct proto_rpc_reply r;
		slow->timeout_ms = 20000;
		CU_ASSERT_EQUAL_FATAL(nc_recv_reply(slow, &rec, &rl), 0);
		CU_ASSERT_EQUAL(proto_rpc_reply_decode(rec, rl, &r, &off), 0);
		CU_ASSERT(r.xid >= 1000 && r.xid < 1064);
		CU_ASSERT_EQUAL(proto_compound_res_decode((uint8_t *)rec + off, rl - off, &res), 0);
		if (res.res.status != NFS4_OK)
			fprintf(stderr, "\n  slow READ: %s, %u results\n", proto_nfsstat4_name(res.res.status),
				res.res.resarray.resarray_len);
		CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
		CU_ASSERT_EQUAL(res.res.resarray.resarray_len, 3);
		if (res.res.resarray.resarray_len == 3)
			CU_ASSERT_EQUAL(res.res.resarray.resarray_val[2].nfs_resop4_u.opread.READ4res_u.resok4.data.data_len,
					1u << 20);
		proto_compound_res_free(&res);
		free(rec);
	}
	nc_free(slow);
	free(buf);
	good_client_works();
	CU_ASSERT(good_ops >= 8);
}

TEST_SUITE(mds_rpc, "integration/mds-rpc", suite_init, suite_clean,
	   { "rpc_errors", test_rpc_errors },
	   { "compound_level_errors", test_compound_level_errors },
	   { "huge_compounds", test_huge_compounds },
	   { "hostile_bytes", test_hostile_bytes },
	   { "slow_reader", test_slow_reader });
