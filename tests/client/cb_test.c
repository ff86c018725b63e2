/* The backchannel as the server sees it: CB_COMPOUND calls fed into a context whose connection is one
 * end of a socketpair, replies read and decoded from the other end. CB_SEQUENCE slot rules (new,
 * replay with the cached reply, misordered, bad slot, wrong session, not first), CB_LAYOUTRECALL
 * (no layout: NOMATCHING_LAYOUT; a held one: OK and the range stops taking I/O; a LAYOUTGET or a
 * referring call in flight: DELAY), CB_RECALL_ANY, CB_NOTIFY_DEVICEID, CB_RECALL_SLOT, CB_RECALL,
 * illegal ops, and RPC-level errors (program, version, procedure, garbage, minor version). */
#include "client/layout_int.h"
#include "client/pnfs.h"
#include "tests/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const uint8_t SID[16] = "session-0123456";

struct rig {
	struct pnfs_context *ctx;
	int peer;
};

static void rig_up(struct rig *r)
{
	struct pnfs_opts o;
	int sv[2];

	pnfs_opts_init(&o);
	o.mds_io = 1;
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &r->ctx), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	r->peer = sv[1];
	r->ctx->conn.fd = sv[0];
	r->ctx->conn.w.fd = sv[0];
	r->ctx->conn.connected = 1;
	proto_rm_reader_init(&r->ctx->conn.rd, 0);
	r->ctx->have_session = 1;
	memcpy(r->ctx->sessionid, SID, 16);
	r->ctx->cb_nslots = 2;
	r->ctx->nslots = 8;
	r->ctx->target_slots = 8;
	r->ctx->state = PC_ST_READY;
	r->ctx->layout_type = LAYOUT4_BLOCK_VOLUME;
	snprintf(r->ctx->host, sizeof(r->ctx->host), "test");
}

static void rig_down(struct rig *r)
{
	pnfs_context_destroy(r->ctx);
	close(r->peer);
}

/* Build a call record (no record mark), as the connection hands it over (malloc'd). */
static void *call_rec(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, uint32_t minor,
		      const nfs_cb_argop4 *ops, unsigned nops, size_t *len)
{
	struct proto_msg m;
	struct proto_rpc_call c;
	struct proto_compound_enc e;
	void *rec;

	CU_ASSERT_EQUAL_FATAL(proto_msg_init(&m, 65536), 0);
	memset(&c, 0, sizeof(c));
	c.xid = xid;
	c.prog = prog;
	c.vers = vers;
	c.proc = proc;
	c.cred.flavor = AUTH_NONE;
	c.verf.flavor = AUTH_NONE;
	CU_ASSERT_EQUAL_FATAL(proto_rpc_call_encode(&m, &c), 0);
	if (proc == CB_COMPOUND) {
		CU_ASSERT_EQUAL_FATAL(proto_cb_compound_begin(&e, &m, "t", minor, 7), 0);
		for (unsigned i = 0; i < nops; i++)
			CU_ASSERT_EQUAL_FATAL(proto_cb_compound_add(&e, &ops[i]), 0);
		CU_ASSERT_EQUAL_FATAL(proto_compound_end(&e), 0);
	}
	*len = proto_msg_len(&m);
	rec = malloc(*len);
	memcpy(rec, proto_msg_data(&m), *len);
	proto_msg_destroy(&m);
	return rec;
}

/* Read one reply record from the peer end. */
static void *read_reply(struct rig *r, size_t *len)
{
	struct proto_rm_reader rd;
	uint8_t buf[65536];
	void *rec = NULL;

	proto_rm_reader_init(&rd, 0);
	for (;;) {
		struct pollfd p = { r->peer, POLLIN, 0 };
		ssize_t n;
		if (poll(&p, 1, 2000) <= 0)
			break;
		n = read(r->peer, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t used = proto_rm_feed(&rd, buf + off, (size_t)(n - off));
			if (used < 0)
				goto out;
			off += used;
			if (proto_rm_take(&rd, &rec, len) == 1)
				goto out;
		}
	}
out:
	proto_rm_reader_destroy(&rd);
	return rec;
}

static nfs_cb_argop4 seq_op(const uint8_t sid[16], uint32_t seq, uint32_t slot)
{
	nfs_cb_argop4 a;
	memset(&a, 0, sizeof(a));
	a.argop = OP_CB_SEQUENCE;
	memcpy(a.nfs_cb_argop4_u.opcbsequence.csa_sessionid, sid, 16);
	a.nfs_cb_argop4_u.opcbsequence.csa_sequenceid = seq;
	a.nfs_cb_argop4_u.opcbsequence.csa_slotid = slot;
	a.nfs_cb_argop4_u.opcbsequence.csa_highest_slotid = slot;
	return a;
}

static nfs_cb_argop4 recall_op(const uint8_t *fh, uint32_t fhlen, uint32_t seqid)
{
	nfs_cb_argop4 a;
	memset(&a, 0, sizeof(a));
	a.argop = OP_CB_LAYOUTRECALL;
	a.nfs_cb_argop4_u.opcblayoutrecall.clora_type = LAYOUT4_BLOCK_VOLUME;
	a.nfs_cb_argop4_u.opcblayoutrecall.clora_iomode = LAYOUTIOMODE4_ANY;
	a.nfs_cb_argop4_u.opcblayoutrecall.clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
	{
		layoutrecall_file4 *f = &a.nfs_cb_argop4_u.opcblayoutrecall.clora_recall.layoutrecall4_u.lor_layout;
		f->lor_fh.nfs_fh4_val = (char *)fh;
		f->lor_fh.nfs_fh4_len = fhlen;
		f->lor_offset = 0;
		f->lor_length = NFS4_UINT64_MAX;
		f->lor_stateid.seqid = seqid;
	}
	return a;
}

/* Hand the call record rec (len bytes) to the client's backchannel and read its reply: the reply
 * (caller frees), rlen bytes, its RPC header in rh and the body from *off on. Aborts the test when
 * no reply comes or its header does not decode. */
static void *call_and_reply(struct rig *r, void *rec, size_t len, struct proto_rpc_reply *rh, size_t *rlen,
			    size_t *off)
{
	void *rep;

	pc_cb_call(r->ctx, rec, len);
	rep = read_reply(r, rlen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
	CU_ASSERT_EQUAL_FATAL(proto_rpc_reply_decode(rep, *rlen, rh, off), 0);
	return rep;
}

static int cb_call(struct rig *r, uint32_t xid, const nfs_cb_argop4 *ops, unsigned n,
		   struct proto_cb_compound_res *res, void **raw, size_t *rawlen);

/* A CB_COMPOUND of the one op on xid gets the status want. */
static void expect_one(struct rig *r, uint32_t xid, nfs_cb_argop4 op, int want)
{
	struct proto_cb_compound_res res;

	CU_ASSERT_EQUAL(cb_call(r, xid, &op, 1, &res, NULL, NULL), want);
	proto_cb_compound_res_free(&res);
}

/* Send a CB_COMPOUND and decode the reply; returns its status, res gets the results. */
static int cb_call(struct rig *r, uint32_t xid, const nfs_cb_argop4 *ops, unsigned n,
		   struct proto_cb_compound_res *res, void **raw, size_t *rawlen)
{
	size_t len, rlen, off;
	void *rec = call_rec(xid, PC_CB_PROGRAM, 1, CB_COMPOUND, 1, ops, n, &len), *rep;
	struct proto_rpc_reply rh;
	int st = -1;

	rep = call_and_reply(r, rec, len, &rh, &rlen, &off);
	CU_ASSERT_EQUAL(rh.xid, xid);
	CU_ASSERT_EQUAL(rh.reply_stat, MSG_ACCEPTED);
	CU_ASSERT_EQUAL_FATAL(rh.accept_stat, SUCCESS);
	memset(res, 0, sizeof(*res));
	if (proto_cb_compound_res_decode((uint8_t *)rep + off, rlen - off, res) == 0)
		st = (int)res->res.status;
	if (raw) {
		*raw = rep;
		*rawlen = rlen;
	} else {
		free(rep);
	}
	return st;
}

static nfsstat4 res_status(const struct proto_cb_compound_res *res, unsigned i)
{
	if (i >= res->res.resarray.resarray_len)
		return (nfsstat4)-1;
	return proto_cb_resop_status(&res->res.resarray.resarray_val[i]);
}

static void test_sequence_rules(void)
{
	struct rig r;
	struct proto_cb_compound_res res;
	nfs_cb_argop4 ops[2];
	const uint8_t nofh[8] = "nothere";
	void *a, *b;
	size_t al, bl;

	rig_up(&r);
	/* New request on slot 0; a recall for a file we hold nothing of. */
	ops[0] = seq_op(SID, 1, 0);
	ops[1] = recall_op(nofh, 8, 1);
	CU_ASSERT_EQUAL(cb_call(&r, 100, ops, 2, &res, &a, &al), NFS4ERR_NOMATCHING_LAYOUT);
	CU_ASSERT_EQUAL(res_status(&res, 0), NFS4_OK);
	CU_ASSERT_EQUAL(res_status(&res, 1), NFS4ERR_NOMATCHING_LAYOUT);
	{
		CB_SEQUENCE4resok *ok = &res.res.resarray.resarray_val[0].nfs_cb_resop4_u.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
		CU_ASSERT_EQUAL(memcmp(ok->csr_sessionid, SID, 16), 0);
		CU_ASSERT_EQUAL(ok->csr_sequenceid, 1);
		CU_ASSERT_EQUAL(ok->csr_slotid, 0);
		CU_ASSERT_EQUAL(ok->csr_highest_slotid, 1);
	}
	proto_cb_compound_res_free(&res);
	/* The same seqid again (a retry on a new xid): the cached reply, byte for byte but the xid. */
	CU_ASSERT_EQUAL(cb_call(&r, 101, ops, 2, &res, &b, &bl), NFS4ERR_NOMATCHING_LAYOUT);
	proto_cb_compound_res_free(&res);
	CU_ASSERT_EQUAL_FATAL(al, bl);
	CU_ASSERT_EQUAL(memcmp((char *)a + 4, (char *)b + 4, al - 4), 0);
	free(a);
	free(b);
	/* Misordered, bad slot, wrong session, CB_SEQUENCE not first. */
	expect_one(&r, 102, seq_op(SID, 3, 0), NFS4ERR_SEQ_MISORDERED);
	expect_one(&r, 103, seq_op(SID, 1, 5), NFS4ERR_BADSLOT);
	expect_one(&r, 104, seq_op((const uint8_t *)"another-session!", 1, 1), NFS4ERR_BADSESSION);
	expect_one(&r, 105, recall_op(nofh, 8, 1), NFS4ERR_OP_NOT_IN_SESSION);
	/* Slot 1 is independent; slot 0 continues at 2. */
	expect_one(&r, 106, seq_op(SID, 1, 1), NFS4_OK);
	expect_one(&r, 107, seq_op(SID, 2, 0), NFS4_OK);
	rig_down(&r);
}

static void test_other_ops(void)
{
	struct rig r;
	struct proto_cb_compound_res res;
	nfs_cb_argop4 ops[3];
	uint32_t mask = 1u << RCA4_TYPE_MASK_BLK_LAYOUT;
	struct pc_device *d;
	uint8_t vals[64];
	XDR x;
	notify_deviceid_delete4 del;
	notify4 n;
	uint32_t nmask = 1u << NOTIFY_DEVICEID4_DELETE;

	rig_up(&r);
	memset(ops, 0, sizeof(ops));
	ops[0] = seq_op(SID, 1, 0);
	ops[1].argop = OP_CB_RECALL_ANY;
	ops[1].nfs_cb_argop4_u.opcbrecall_any.craa_objects_to_keep = 0;
	ops[1].nfs_cb_argop4_u.opcbrecall_any.craa_type_mask.bitmap4_val = &mask;
	ops[1].nfs_cb_argop4_u.opcbrecall_any.craa_type_mask.bitmap4_len = 1;
	ops[2].argop = OP_CB_RECALL_SLOT;
	ops[2].nfs_cb_argop4_u.opcbrecall_slot.rsa_target_highest_slotid = 2;
	CU_ASSERT_EQUAL(cb_call(&r, 200, ops, 3, &res, NULL, NULL), NFS4_OK);
	CU_ASSERT_EQUAL(res.res.resarray.resarray_len, 3);
	proto_cb_compound_res_free(&res);
	CU_ASSERT_EQUAL(r.ctx->target_slots, 3);

	/* A device deletion notice: the cached device is unusable from now on. */
	d = pc_device_obtain(r.ctx, (const uint8_t *)"device-to-delete", LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	d->state = PC_DEV_READY;
	memset(&del, 0, sizeof(del));
	del.ndd_layouttype = LAYOUT4_BLOCK_VOLUME;
	memcpy(del.ndd_deviceid, "device-to-delete", 16);
	xdrmem_create(&x, (char *)vals, sizeof(vals), XDR_ENCODE);
	CU_ASSERT_TRUE_FATAL(xdr_notify_deviceid_delete4(&x, &del));
	memset(&n, 0, sizeof(n));
	n.notify_mask.bitmap4_val = &nmask;
	n.notify_mask.bitmap4_len = 1;
	n.notify_vals.notifylist4_val = (char *)vals;
	n.notify_vals.notifylist4_len = xdr_getpos(&x);
	xdr_destroy(&x);
	ops[0] = seq_op(SID, 2, 0);
	memset(&ops[1], 0, sizeof(ops[1]));
	ops[1].argop = OP_CB_NOTIFY_DEVICEID;
	ops[1].nfs_cb_argop4_u.opcbnotify_deviceid.cnda_changes.cnda_changes_val = &n;
	ops[1].nfs_cb_argop4_u.opcbnotify_deviceid.cnda_changes.cnda_changes_len = 1;
	CU_ASSERT_EQUAL(cb_call(&r, 201, ops, 2, &res, NULL, NULL), NFS4_OK);
	proto_cb_compound_res_free(&res);
	CU_ASSERT_EQUAL(d->state, PC_DEV_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(d->why, "deleted"));

	/* No delegations are held: CB_RECALL names nothing of ours. */
	ops[0] = seq_op(SID, 3, 0);
	memset(&ops[1], 0, sizeof(ops[1]));
	ops[1].argop = OP_CB_RECALL;
	CU_ASSERT_EQUAL(cb_call(&r, 202, ops, 2, &res, NULL, NULL), NFS4ERR_BAD_STATEID);
	proto_cb_compound_res_free(&res);
	rig_down(&r);
}

static void test_layout_recall(void)
{
	struct rig r;
	struct proto_cb_compound_res res;
	nfs_cb_argop4 ops[2];
	struct pnfs_fh *fh;
	struct pnfs_extent e;
	int recalled = 0;

	rig_up(&r);
	fh = pc_fh_new(r.ctx, "/f");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fh);
	memcpy(fh->fh, "filehandle-1", 12);
	fh->fhlen = 12;
	fh->next = r.ctx->files;
	r.ctx->files = fh;
	memset(&e, 0, sizeof(e));
	e.length = 1 << 20;
	e.state = PNFS_EXT_READ_WRITE;
	memcpy(e.deviceid, "some-device-0001", 16);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 1 << 20, LAYOUTIOMODE4_RW, &e, 1), 0);

	/* A LAYOUTGET of ours is in flight: its reply may hold what is recalled. */
	fh->lo->getting = 1;
	ops[0] = seq_op(SID, 1, 0);
	ops[1] = recall_op(fh->fh, fh->fhlen, 2);
	CU_ASSERT_EQUAL(cb_call(&r, 300, ops, 2, &res, NULL, NULL), NFS4ERR_DELAY);
	proto_cb_compound_res_free(&res);
	fh->lo->getting = 0;

	/* A referring call still in flight on our slot 3 seqid 9: DELAY too. */
	{
		struct pc_compound dummy;
		memset(&dummy, 0, sizeof(dummy));
		r.ctx->slots[3].c = &dummy;
		r.ctx->slots[3].seqid = 9;
		referring_call4 rc = { .rc_sequenceid = 9, .rc_slotid = 3 };
		referring_call_list4 l;
		memcpy(l.rcl_sessionid, SID, 16);
		l.rcl_referring_calls.rcl_referring_calls_val = &rc;
		l.rcl_referring_calls.rcl_referring_calls_len = 1;
		ops[0] = seq_op(SID, 2, 0);
		ops[0].nfs_cb_argop4_u.opcbsequence.csa_referring_call_lists.csa_referring_call_lists_val = &l;
		ops[0].nfs_cb_argop4_u.opcbsequence.csa_referring_call_lists.csa_referring_call_lists_len = 1;
		CU_ASSERT_EQUAL(cb_call(&r, 301, ops, 2, &res, NULL, NULL), NFS4ERR_DELAY);
		proto_cb_compound_res_free(&res);
		r.ctx->slots[3].c = NULL;
	}

	/* Now it is answered, and the range takes no new I/O. */
	ops[0] = seq_op(SID, 3, 0);
	CU_ASSERT_EQUAL(cb_call(&r, 302, ops, 2, &res, NULL, NULL), NFS4_OK);
	proto_cb_compound_res_free(&res);
	CU_ASSERT_PTR_NULL(pc_layout_find(fh->lo, 4096, 1, &recalled));
	CU_ASSERT_EQUAL(recalled, 1);
	CU_ASSERT_PTR_NOT_NULL(fh->lo->recalls);
	CU_ASSERT_EQUAL(r.ctx->stats.recalls, 3);

	/* A recall carrying our layout stateid's next seqid: answered, and the stateid takes that seqid
	 * (the commit and return that answer it must carry it); an older one changes nothing. */
	{
		stateid4 *rs = &ops[1].nfs_cb_argop4_u.opcblayoutrecall.clora_recall.layoutrecall4_u.lor_layout.lor_stateid;
		uint32_t seq = fh->lo->sid.seqid;
		memcpy(rs->other, fh->lo->sid.other, sizeof(rs->other));
		rs->seqid = seq + 1;
		ops[0] = seq_op(SID, 4, 0);
		CU_ASSERT_EQUAL(cb_call(&r, 304, ops, 2, &res, NULL, NULL), NFS4_OK);
		proto_cb_compound_res_free(&res);
		CU_ASSERT_EQUAL(fh->lo->sid.seqid, seq + 1);
		rs->seqid = seq;
		ops[0] = seq_op(SID, 5, 0);
		CU_ASSERT_EQUAL(cb_call(&r, 305, ops, 2, &res, NULL, NULL), NFS4_OK);
		proto_cb_compound_res_free(&res);
		CU_ASSERT_EQUAL(fh->lo->sid.seqid, seq + 1);
	}

	/* A recall of another layout type names nothing we hold. */
	ops[0] = seq_op(SID, 6, 0);
	ops[1].nfs_cb_argop4_u.opcblayoutrecall.clora_type = LAYOUT4_NFSV4_1_FILES;
	CU_ASSERT_EQUAL(cb_call(&r, 303, ops, 2, &res, NULL, NULL), NFS4ERR_NOMATCHING_LAYOUT);
	proto_cb_compound_res_free(&res);
	rig_down(&r);
}

static void expect_rpc_error(struct rig *r, uint32_t prog, uint32_t vers, uint32_t proc, uint32_t accept_stat)
{
	size_t len, rlen, off;
	void *rec = call_rec(400, prog, vers, proc, 1, NULL, 0, &len), *rep;
	struct proto_rpc_reply rh;

	rep = call_and_reply(r, rec, len, &rh, &rlen, &off);
	CU_ASSERT_EQUAL(rh.reply_stat, MSG_ACCEPTED);
	CU_ASSERT_EQUAL(rh.accept_stat, accept_stat);
	free(rep);
}

static void test_rpc_edges(void)
{
	struct rig r;
	struct proto_cb_compound_res res;
	nfs_cb_argop4 op = seq_op(SID, 1, 0);
	size_t len;
	void *rec;

	rig_up(&r);
	expect_rpc_error(&r, PC_CB_PROGRAM, 1, CB_NULL, SUCCESS);
	expect_rpc_error(&r, 100003, 1, CB_NULL, PROG_UNAVAIL);
	expect_rpc_error(&r, PC_CB_PROGRAM, 4, CB_NULL, PROG_MISMATCH);
	expect_rpc_error(&r, PC_CB_PROGRAM, 1, 9, PROC_UNAVAIL);
	/* CB_COMPOUND whose header is cut short: GARBAGE_ARGS; whose first op is: NFS4ERR_BADXDR. */
	rec = call_rec(401, PC_CB_PROGRAM, 1, CB_COMPOUND, 1, &op, 1, &len);
	{
		size_t rlen, off;
		void *rep;
		struct proto_rpc_reply rh;
		void *cut = malloc(len);
		memcpy(cut, rec, len);
		pc_cb_call(r.ctx, rec, len - 30);
		rep = read_reply(&r, &rlen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
		CU_ASSERT_EQUAL(proto_rpc_reply_decode(rep, rlen, &rh, &off), 0);
		CU_ASSERT_EQUAL(rh.accept_stat, SUCCESS);
		CU_ASSERT_EQUAL(proto_cb_compound_res_decode((uint8_t *)rep + off, rlen - off, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_BADXDR);
		proto_cb_compound_res_free(&res);
		free(rep);
		/* 24 bytes of call header + AUTH_NONE cred and verf (16) = 40; 6 more: half a tag */
		pc_cb_call(r.ctx, cut, 46);
		rep = read_reply(&r, &rlen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
		CU_ASSERT_EQUAL(proto_rpc_reply_decode(rep, rlen, &rh, &off), 0);
		CU_ASSERT_EQUAL(rh.accept_stat, GARBAGE_ARGS);
		free(rep);
	}
	/* Minor version 0 on the backchannel. */
	rec = call_rec(402, PC_CB_PROGRAM, 1, CB_COMPOUND, 0, &op, 1, &len);
	{
		size_t rlen, off;
		void *rep;
		struct proto_rpc_reply rh;
		rep = call_and_reply(&r, rec, len, &rh, &rlen, &off);
		CU_ASSERT_EQUAL(proto_cb_compound_res_decode((uint8_t *)rep + off, rlen - off, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_MINOR_VERS_MISMATCH);
		proto_cb_compound_res_free(&res);
		free(rep);
	}
	/* An opcode CB_COMPOUND does not have: CB_ILLEGAL with NFS4ERR_OP_ILLEGAL after what came before. */
	{
		struct proto_msg m;
		struct proto_rpc_call c;
		struct proto_compound_enc e;
		size_t rlen, off;
		void *rep;
		struct proto_rpc_reply rh;
		uint32_t w;

		proto_msg_init(&m, 4096);
		memset(&c, 0, sizeof(c));
		c.xid = 403;
		c.prog = PC_CB_PROGRAM;
		c.vers = 1;
		c.proc = CB_COMPOUND;
		proto_rpc_call_encode(&m, &c);
		proto_cb_compound_begin(&e, &m, NULL, 1, 0);
		op = seq_op(SID, 1, 0);
		proto_cb_compound_add(&e, &op);
		w = 77; /* not a callback opcode */
		xdr_uint32_t(&m.xdr, &w);
		e.nops++;
		proto_compound_end(&e);
		len = proto_msg_len(&m);
		rec = malloc(len);
		memcpy(rec, proto_msg_data(&m), len);
		proto_msg_destroy(&m);
		rep = call_and_reply(&r, rec, len, &rh, &rlen, &off);
		CU_ASSERT_EQUAL(proto_cb_compound_res_decode((uint8_t *)rep + off, rlen - off, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_OP_ILLEGAL);
		CU_ASSERT_EQUAL(res.res.resarray.resarray_len, 2);
		if (res.res.resarray.resarray_len == 2)
			CU_ASSERT_EQUAL(res.res.resarray.resarray_val[1].resop, OP_CB_ILLEGAL);
		proto_cb_compound_res_free(&res);
		free(rep);
	}
	rig_down(&r);
}

TEST_SUITE(client_cb, "client/backchannel", NULL, NULL,
	   { "sequence_rules", test_sequence_rules },
	   { "other_ops", test_other_ops },
	   { "layout_recall", test_layout_recall },
	   { "rpc_edges", test_rpc_edges });
