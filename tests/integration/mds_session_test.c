/* Sessions and state on a running pnfs-mds: EXCHANGE_ID's record cases, CREATE_SESSION's own
 * sequence and replay, SEQUENCE's slot rules and reply cache (a retry gets the very same bytes),
 * the backchannel (the server's CB_NULL and CB_COMPOUND/CB_SEQUENCE probe reach this client, and a
 * delegation recall arrives as CB_RECALL), BIND_CONN_TO_SESSION, lease expiry releasing state,
 * DESTROY_SESSION/DESTROY_CLIENTID, and grace after a restart with CLAIM_PREVIOUS reclaims. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TMDS_SUITE(suite_init, suite_clean, 1, "32M", "--concat", "--lease-time 3 --grace-time 4")

/* Wait while keeping c's lease alive (the suite runs with a 3 s lease). */
static void idle_renewing(struct nc *c, int seconds)
{
	for (int i = 0; i < seconds * 2; i++) {
		struct timespec ts = { 0, 500000000L };
		struct proto_compound_res res;
		nanosleep(&ts, NULL);
		if (nc_seq(c, NULL, 0, &res) == 0)
			proto_compound_res_free(&res);
	}
}

static struct nc *conn(void)
{
	struct nc *c = nc_connect(mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

static nfsstat4 exchange_id(struct nc *c, const char *owner, const char *verf, uint32_t flags, clientid4 *id,
			    uint32_t *eir_flags)
{
	nfs_argop4 op;
	struct proto_compound_res res;
	EXCHANGE_ID4args *a = &op.nfs_argop4_u.opexchange_id;
	nfsstat4 st;

	nc_op_simple(&op, OP_EXCHANGE_ID);
	memcpy(a->eia_clientowner.co_verifier, verf, 8);
	a->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(owner);
	a->eia_clientowner.co_ownerid.co_ownerid_val = (char *)owner;
	a->eia_flags = flags;
	a->eia_state_protect.spa_how = SP4_NONE;
	if (nc_compound(c, &op, 1, &res) != 0)
		return NFS4ERR_SERVERFAULT;
	st = res.res.status;
	if (st == NFS4_OK) {
		EXCHANGE_ID4resok *ok = &res.res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
		if (id)
			*id = ok->eir_clientid;
		if (eir_flags)
			*eir_flags = ok->eir_flags;
		c->clientid = ok->eir_clientid;
		c->cs_seq = ok->eir_sequenceid;
	}
	proto_compound_res_free(&res);
	return st;
}

static void test_exchange_id_cases(void)
{
	struct nc *c = conn();
	clientid4 a, b;
	uint32_t flags = 0;

	/* The pNFS MDS role is announced. */
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", 0, &a, &flags), NFS4_OK);
	CU_ASSERT(flags & EXCHGID4_FLAG_USE_PNFS_MDS);
	CU_ASSERT(!(flags & EXCHGID4_FLAG_CONFIRMED_R));
	/* An unconfirmed record is replaced: a new clientid. */
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", 0, &b, NULL), NFS4_OK);
	CU_ASSERT_NOT_EQUAL(a, b);
	/* Update of an unconfirmed record: NOENT; undefined flags: INVAL. */
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, NULL, NULL),
			NFS4ERR_NOENT);
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", 0x4, NULL, NULL), NFS4ERR_INVAL);
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", EXCHGID4_FLAG_CONFIRMED_R, NULL, NULL), NFS4ERR_INVAL);
	/* Confirmed by a session: the same owner and verifier gets the same clientid back. */
	memcpy(c->verifier, "verf0001", 8);
	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "eid-owner"), 0);
	a = c->clientid;
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", 0, &b, &flags), NFS4_OK);
	CU_ASSERT_EQUAL(a, b);
	CU_ASSERT(flags & EXCHGID4_FLAG_CONFIRMED_R);
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &b, NULL), NFS4_OK);
	CU_ASSERT_EQUAL(a, b);
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0002", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, NULL, NULL),
			NFS4ERR_NOT_SAME);
	/* Another principal, while the first holds a session: CLID_INUSE; updating: PERM. */
	c->uid = 4242;
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", 0, NULL, NULL), NFS4ERR_CLID_INUSE);
	CU_ASSERT_EQUAL(exchange_id(c, "eid-owner", "verf0001", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, NULL, NULL),
			NFS4ERR_PERM);
	c->uid = 0;
	/* A client restart (new verifier): a new clientid, and the old session lives until the new
	 * record is confirmed. */
	{
		struct nc *old = c;
		struct nc *n = conn();
		struct proto_compound_res res;
		memcpy(n->verifier, "verf0003", 8);
		CU_ASSERT_EQUAL(exchange_id(n, "eid-owner", "verf0003", 0, &b, NULL), NFS4_OK);
		CU_ASSERT_NOT_EQUAL(a, b);
		CU_ASSERT_EQUAL(nc_seq(old, NULL, 0, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
		proto_compound_res_free(&res);
		CU_ASSERT_EQUAL(nc_setup(n, "eid-owner"), 0);
		CU_ASSERT_EQUAL(nc_seq(old, NULL, 0, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_BADSESSION);
		proto_compound_res_free(&res);
		nc_free(n);
	}
	nc_free(c);
}

static nfsstat4 create_session(struct nc *c, uint32_t seq, uint32_t maxreq, unsigned char *sessid,
			       CREATE_SESSION4resok *copy)
{
	nfs_argop4 op;
	struct proto_compound_res res;
	CREATE_SESSION4args *a = &op.nfs_argop4_u.opcreate_session;
	nfsstat4 st;

	nc_op_simple(&op, OP_CREATE_SESSION);
	a->csa_clientid = c->clientid;
	a->csa_sequence = seq;
	a->csa_fore_chan_attrs = (channel_attrs4){ 0, maxreq, 8192, 1024, 16, 2049, { 0, NULL } };
	a->csa_back_chan_attrs = (channel_attrs4){ 0, 8192, 8192, 0, 4, 1, { 0, NULL } };
	a->csa_cb_program = NFS4_CALLBACK;
	if (nc_compound(c, &op, 1, &res) != 0)
		return NFS4ERR_SERVERFAULT;
	st = res.res.status;
	if (st == NFS4_OK) {
		CREATE_SESSION4resok *ok = &res.res.resarray.resarray_val[0].nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
		if (sessid)
			memcpy(sessid, ok->csr_sessionid, NFS4_SESSIONID_SIZE);
		if (copy)
			*copy = *ok;
	}
	proto_compound_res_free(&res);
	return st;
}

static void test_create_session_sequence_and_replay(void)
{
	struct nc *c = conn();
	unsigned char s1[16], s2[16];
	CREATE_SESSION4resok ok;
	uint32_t seq;

	CU_ASSERT_EQUAL_FATAL(exchange_id(c, "cs-owner", "verf0001", 0, NULL, NULL), NFS4_OK);
	seq = c->cs_seq;
	/* A contrived replay of an unconfirmed record: misordered. */
	CU_ASSERT_EQUAL(create_session(c, seq - 1, 8192, s1, NULL), NFS4ERR_SEQ_MISORDERED);
	/* A request the server could never answer within: TOOSMALL. */
	CU_ASSERT_EQUAL(create_session(c, seq, 20, s1, NULL), NFS4ERR_TOOSMALL);
	CU_ASSERT_EQUAL(create_session(c, seq, 8192, s1, &ok), NFS4_OK);
	CU_ASSERT_EQUAL(ok.csr_sequence, seq);
	/* 2049 slots asked for: the server gives its own limit. */
	CU_ASSERT(ok.csr_fore_chan_attrs.ca_maxrequests <= 64);
	CU_ASSERT(ok.csr_fore_chan_attrs.ca_maxrequests >= 1);
	/* The same request again is a replay: the same session, not a new one. */
	CU_ASSERT_EQUAL(create_session(c, seq, 8192, s2, NULL), NFS4_OK);
	CU_ASSERT(memcmp(s1, s2, 16) == 0);
	CU_ASSERT_EQUAL(create_session(c, seq + 2, 8192, s2, NULL), NFS4ERR_SEQ_MISORDERED);
	CU_ASSERT_EQUAL(create_session(c, seq + 1, 8192, s2, NULL), NFS4_OK);
	CU_ASSERT(memcmp(s1, s2, 16) != 0);
	/* An unknown clientid. */
	c->clientid ^= 0x5555;
	CU_ASSERT_EQUAL(create_session(c, 1, 8192, s2, NULL), NFS4ERR_STALE_CLIENTID);
	nc_free(c);
}

static void test_sequence_slots_and_reply_cache(void)
{
	struct nc *c = conn();
	struct proto_compound_res r1, r2;
	nfs_argop4 ops[3];
	struct nc_fh root;
	uint8_t name[] = "no-such-name";

	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "seq-owner"), 0);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	/* A non-idempotent request that fails, retried with the same slot and sequence id: the
	 * cached reply comes back identical (not a second execution). */
	nc_op_putfh(&ops[0], &root);
	nc_op_simple(&ops[1], OP_REMOVE);
	ops[1].nfs_argop4_u.opremove.target.utf8string_len = sizeof(name) - 1;
	ops[1].nfs_argop4_u.opremove.target.utf8string_val = (char *)name;
	CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 2, 1, 0, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4ERR_NOENT);
	{
		size_t len = c->last_body_len;
		uint8_t *first = malloc(len);
		memcpy(first, c->last_body, len);
		CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 2, 1, 1, &r2), 0);
		CU_ASSERT_EQUAL(r2.res.status, NFS4ERR_NOENT);
		CU_ASSERT_EQUAL(c->last_body_len, len);
		CU_ASSERT(c->last_body_len == len && memcmp(first, c->last_body, len) == 0);
		free(first);
	}
	/* A create replayed is not done twice: the retry answers OK from the cache, it does not
	 * find the directory existing. */
	{
		nfs_argop4 mk[3];
		CREATE4args *ca = &mk[1].nfs_argop4_u.opcreate;
		struct proto_compound_res m1, m2;
		nc_op_putfh(&mk[0], &root);
		nc_op_simple(&mk[1], OP_CREATE);
		ca->objtype.type = NF4DIR;
		ca->objname.utf8string_len = 6;
		ca->objname.utf8string_val = "replay";
		CU_ASSERT_EQUAL(nc_seq_opts(c, mk, 2, 1, 0, &m1), 0);
		CU_ASSERT_EQUAL(m1.res.status, NFS4_OK);
		CU_ASSERT_EQUAL(nc_seq_opts(c, mk, 2, 1, 1, &m2), 0);
		CU_ASSERT_EQUAL(m2.res.status, NFS4_OK);
		proto_compound_res_free(&m1);
		proto_compound_res_free(&m2);
		CU_ASSERT_EQUAL(nc_seq_opts(c, mk, 2, 1, 0, &m1), 0);
		CU_ASSERT_EQUAL(m1.res.status, NFS4ERR_EXIST);
		proto_compound_res_free(&m1);
	}
	proto_compound_res_free(&r1);
	proto_compound_res_free(&r2);
	/* The same sequence id with other operations: a false retry. */
	nc_op_simple(&ops[0], OP_PUTROOTFH);
	CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 1, 1, 1, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4ERR_SEQ_FALSE_RETRY);
	proto_compound_res_free(&r1);
	/* Skipping a sequence id: misordered (and the slot is not used). */
	c->slot_seq++;
	CU_ASSERT_EQUAL(nc_seq(c, ops, 1, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4ERR_SEQ_MISORDERED);
	proto_compound_res_free(&r1);
	c->slot_seq--;
	CU_ASSERT_EQUAL(nc_seq(c, ops, 1, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4_OK);
	proto_compound_res_free(&r1);
	/* A slot past the table. */
	nc_op_simple(&ops[0], OP_SEQUENCE);
	memcpy(ops[0].nfs_argop4_u.opsequence.sa_sessionid, c->sessid, 16);
	ops[0].nfs_argop4_u.opsequence.sa_sequenceid = 1;
	ops[0].nfs_argop4_u.opsequence.sa_slotid = c->fore.ca_maxrequests;
	CU_ASSERT_EQUAL(nc_compound(c, ops, 1, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4ERR_BADSLOT);
	proto_compound_res_free(&r1);
	/* An unknown session. */
	ops[0].nfs_argop4_u.opsequence.sa_sessionid[0] ^= 0xff;
	ops[0].nfs_argop4_u.opsequence.sa_slotid = 0;
	CU_ASSERT_EQUAL(nc_compound(c, ops, 1, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4ERR_BADSESSION);
	proto_compound_res_free(&r1);
	/* Session-less ops must be alone. */
	nc_op_simple(&ops[1], OP_PUTROOTFH);
	nc_op_simple(&ops[0], OP_DESTROY_CLIENTID);
	CU_ASSERT_EQUAL(nc_compound(c, ops, 2, &r1), 0);
	CU_ASSERT_EQUAL(r1.res.status, NFS4ERR_NOT_ONLY_OP);
	proto_compound_res_free(&r1);
	nc_free(c);
}

static void test_retry_uncached_reply(void)
{
	struct nc *c = conn();
	struct proto_compound_res res;
	nfs_argop4 ops[2];
	struct nc_fh root, dir;

	/* A session whose replies are cached up to 1 KiB only. */
	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "uncached-setup"), 0);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, &root, "uncached", 0755, &dir), 0);
	for (int i = 0; i < 40; i++) {
		char name[64];
		snprintf(name, sizeof(name), "a-name-long-enough-to-fill-replies-%02d", i);
		CU_ASSERT_EQUAL(nc_symlink(c, &dir, name, "t"), 0);
	}
	CU_ASSERT_EQUAL_FATAL(exchange_id(c, "uncached-owner", "verf0009", 0, NULL, NULL), NFS4_OK);
	CU_ASSERT_EQUAL_FATAL(create_session(c, c->cs_seq, 8192, c->sessid, NULL), NFS4_OK);
	c->slot_seq = 0;
	nc_op_putfh(&ops[0], &dir);
	nc_op_simple(&ops[1], OP_READDIR);
	ops[1].nfs_argop4_u.opreaddir.dircount = 4096;
	ops[1].nfs_argop4_u.opreaddir.maxcount = 4096;
	/* Not asked to cache, and too big to keep anyway: a retry cannot be answered from cache. */
	CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 2, 0, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	CU_ASSERT(c->last_body_len > 1024);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 2, 0, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_RETRY_UNCACHED_REP);
	proto_compound_res_free(&res);
	/* Asked to cache it: READDIR shrinks its reply to what the cache holds, and the retry gets
	 * that reply back. */
	CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 2, 1, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	CU_ASSERT(c->last_body_len + 24 <= 1024);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(nc_seq_opts(c, ops, 2, 1, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	/* A SEQUENCE alone whose reply cannot be cached in 10 bytes: REP_TOO_BIG_TO_CACHE. */
	CU_ASSERT_EQUAL_FATAL(exchange_id(c, "uncached-owner2", "verf0010", 0, NULL, NULL), NFS4_OK);
	{
		nfs_argop4 op;
		CREATE_SESSION4args *a = &op.nfs_argop4_u.opcreate_session;
		nc_op_simple(&op, OP_CREATE_SESSION);
		a->csa_clientid = c->clientid;
		a->csa_sequence = c->cs_seq;
		a->csa_fore_chan_attrs = (channel_attrs4){ 0, 8192, 8192, 10, 16, 4, { 0, NULL } };
		a->csa_back_chan_attrs = (channel_attrs4){ 0, 8192, 8192, 0, 4, 1, { 0, NULL } };
		CU_ASSERT_EQUAL(nc_compound(c, &op, 1, &res), 0);
		CU_ASSERT_EQUAL_FATAL(res.res.status, NFS4_OK);
		memcpy(c->sessid, res.res.resarray.resarray_val[0].nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u
					  .csr_resok4.csr_sessionid,
		       16);
		proto_compound_res_free(&res);
		c->slot_seq = 0;
		CU_ASSERT_EQUAL(nc_seq_opts(c, NULL, 0, 1, 0, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_REP_TOO_BIG_TO_CACHE);
		proto_compound_res_free(&res);
		/* The slot was not used: the same sequence id works without cachethis. */
		CU_ASSERT_EQUAL(nc_seq_opts(c, NULL, 0, 0, 0, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
		proto_compound_res_free(&res);
	}
	nc_free(c);
}

static void test_backchannel_calls_arrive(void)
{
	struct nc *c = conn();
	struct nc *other = conn();
	struct nc_fh root, fh, fh2;
	stateid4 sid, sid2;
	nfs_argop4 ops[3];
	struct proto_compound_res res;
	OPEN4args *oa;
	const char *owner = "deleg-owner";

	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "cb-client"), 0);
	/* The server checks a new backchannel: CB_NULL, then a CB_COMPOUND with CB_SEQUENCE on the
	 * session's slot 0, sequence id 1. */
	nc_serve_callbacks(c, 3000, 2);
	CU_ASSERT_EQUAL(c->cb_nulls, 1);
	CU_ASSERT_EQUAL(c->cb_sequences, 1);
	CU_ASSERT_EQUAL(c->cb_last_seqid, 1);
	CU_ASSERT(memcmp(c->cb_last_sessid, c->sessid, 16) == 0);
	CU_ASSERT_EQUAL(c->cb_last_flavor, AUTH_NONE);
	/* The path is up: no CB_PATH_DOWN in SEQUENCE. */
	CU_ASSERT_EQUAL(nc_seq(c, NULL, 0, &res), 0);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(c->seq_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
	CU_ASSERT_EQUAL(c->seq_status_flags & SEQ4_STATUS_BACKCHANNEL_FAULT, 0);

	/* A read delegation, then another client opens for writing: CB_RECALL on our backchannel
	 * (CB_SEQUENCE id 2), the writer is told to wait, and gets in once we return it. */
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL(nc_open(c, &root, "delegated", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
	nc_op_putfh(&ops[0], &root);
	nc_op_simple(&ops[1], OP_OPEN);
	oa = &ops[1].nfs_argop4_u.opopen;
	oa->share_access = OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG;
	oa->owner.owner.owner_len = (u_int)strlen(owner);
	oa->owner.owner.owner_val = (char *)owner;
	oa->claim.claim = CLAIM_NULL;
	oa->claim.open_claim4_u.file.utf8string_len = 9;
	oa->claim.open_claim4_u.file.utf8string_val = "delegated";
	CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
	CU_ASSERT_EQUAL_FATAL(res.res.status, NFS4_OK);
	{
		OPEN4resok *ok = &res.res.resarray.resarray_val[2].nfs_resop4_u.opopen.OPEN4res_u.resok4;
		stateid4 deleg;
		CU_ASSERT_EQUAL_FATAL(ok->delegation.delegation_type, OPEN_DELEGATE_READ);
		deleg = ok->delegation.open_delegation4_u.read.stateid;
		sid = ok->stateid;
		proto_compound_res_free(&res);

		CU_ASSERT_EQUAL_FATAL(nc_setup(other, "cb-writer"), 0);
		CU_ASSERT_EQUAL(nc_open(other, &root, "delegated", 0, OPEN4_SHARE_ACCESS_WRITE, 0, &fh2, &sid2),
				NFS4ERR_DELAY);
		nc_serve_callbacks(c, 3000, 1);
		CU_ASSERT_EQUAL(c->cb_recalls, 1);
		CU_ASSERT_EQUAL(c->cb_last_seqid, 2);
		CU_ASSERT(memcmp(c->cb_last_recall.other, deleg.other, NFS4_OTHER_SIZE) == 0);
		nc_op_putfh(&ops[0], &fh);
		nc_op_simple(&ops[1], OP_DELEGRETURN);
		ops[1].nfs_argop4_u.opdelegreturn.deleg_stateid = deleg;
		CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
		proto_compound_res_free(&res);
		CU_ASSERT_EQUAL(nc_open(other, &root, "delegated", 0, OPEN4_SHARE_ACCESS_WRITE, 0, &fh2, &sid2), 0);
		CU_ASSERT_EQUAL(nc_close(other, &fh2, &sid2), 0);
		CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);

		/* Removing a file another client holds a delegation of recalls it first too. */
		CU_ASSERT_EQUAL(nc_seq(c, ops, 0, &res), 0);
		proto_compound_res_free(&res);
		nc_op_putfh(&ops[0], &root);
		nc_op_simple(&ops[1], OP_OPEN);
		oa->share_access = OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG;
		oa->owner.owner.owner_len = (u_int)strlen(owner);
		oa->owner.owner.owner_val = (char *)owner;
		oa->claim.claim = CLAIM_NULL;
		oa->claim.open_claim4_u.file.utf8string_len = 9;
		oa->claim.open_claim4_u.file.utf8string_val = "delegated";
		CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
		CU_ASSERT_EQUAL_FATAL(res.res.status, NFS4_OK);
		ok = &res.res.resarray.resarray_val[2].nfs_resop4_u.opopen.OPEN4res_u.resok4;
		CU_ASSERT_EQUAL_FATAL(ok->delegation.delegation_type, OPEN_DELEGATE_READ);
		deleg = ok->delegation.open_delegation4_u.read.stateid;
		sid = ok->stateid;
		proto_compound_res_free(&res);
		CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
		CU_ASSERT_EQUAL(nc_remove(other, &root, "delegated"), NFS4ERR_DELAY);
		nc_serve_callbacks(c, 3000, 1);
		CU_ASSERT_EQUAL(c->cb_recalls, 2);
		nc_op_putfh(&ops[0], &fh);
		nc_op_simple(&ops[1], OP_DELEGRETURN);
		ops[1].nfs_argop4_u.opdelegreturn.deleg_stateid = deleg;
		CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
		proto_compound_res_free(&res);
		CU_ASSERT_EQUAL(nc_remove(other, &root, "delegated"), NFS4_OK);
	}
	nc_free(other);
	nc_free(c);
}

static void test_bind_conn_and_destroy(void)
{
	struct nc *c = conn(), *second = conn();
	struct proto_compound_res res;
	nfs_argop4 op;

	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "bind-owner"), 0);
	nc_serve_callbacks(c, 2000, 2);
	/* A second connection takes over the backchannel. */
	nc_op_simple(&op, OP_BIND_CONN_TO_SESSION);
	memcpy(op.nfs_argop4_u.opbind_conn_to_session.bctsa_sessid, c->sessid, 16);
	op.nfs_argop4_u.opbind_conn_to_session.bctsa_dir = CDFC4_BACK_OR_BOTH;
	CU_ASSERT_EQUAL(nc_compound(second, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	if (res.res.status == NFS4_OK)
		CU_ASSERT_EQUAL(res.res.resarray.resarray_val[0].nfs_resop4_u.opbind_conn_to_session
					.BIND_CONN_TO_SESSION4res_u.bctsr_resok4.bctsr_dir,
				CDFS4_BOTH);
	proto_compound_res_free(&res);
	nc_serve_callbacks(second, 3000, 2);
	CU_ASSERT_EQUAL(second->cb_nulls, 1);
	CU_ASSERT_EQUAL(second->cb_sequences, 1);
	/* The second connection now also carries the fore channel of the session. */
	memcpy(second->sessid, c->sessid, 16);
	second->slot_seq = c->slot_seq;
	CU_ASSERT_EQUAL(nc_seq(second, NULL, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	c->slot_seq = second->slot_seq;
	/* DESTROY_CLIENTID while a session exists: busy. */
	nc_op_simple(&op, OP_DESTROY_CLIENTID);
	op.nfs_argop4_u.opdestroy_clientid.dca_clientid = c->clientid;
	CU_ASSERT_EQUAL(nc_compound(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_CLIENTID_BUSY);
	proto_compound_res_free(&res);
	/* DESTROY_SESSION, then the session is gone and the client may go. */
	nc_op_simple(&op, OP_DESTROY_SESSION);
	memcpy(op.nfs_argop4_u.opdestroy_session.dsa_sessionid, c->sessid, 16);
	CU_ASSERT_EQUAL(nc_compound(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(nc_seq(c, NULL, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_BADSESSION);
	proto_compound_res_free(&res);
	nc_op_simple(&op, OP_DESTROY_CLIENTID);
	op.nfs_argop4_u.opdestroy_clientid.dca_clientid = c->clientid;
	CU_ASSERT_EQUAL(nc_compound(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(nc_compound(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_STALE_CLIENTID);
	proto_compound_res_free(&res);
	nc_free(second);
	nc_free(c);
}

static void test_lease_expiry_releases_state(void)
{
	struct nc *a = conn(), *b = conn();
	struct nc_fh root, fh, fh2;
	stateid4 sid, sid2;
	struct proto_compound_res res;

	CU_ASSERT_EQUAL_FATAL(nc_setup(a, "lease-a"), 0);
	CU_ASSERT_EQUAL_FATAL(nc_setup(b, "lease-b"), 0);
	CU_ASSERT_EQUAL(nc_rootfh(a, &root), 0);
	CU_ASSERT_EQUAL(nc_open(a, &root, "leased", 1, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE, &fh, &sid),
			0);
	CU_ASSERT_EQUAL(nc_open(b, &root, "leased", 0, OPEN4_SHARE_ACCESS_WRITE, 0, &fh2, &sid2),
			NFS4ERR_SHARE_DENIED);
	/* a stops renewing; b keeps its lease alive and gets in once a's lease (3 s) ran out. */
	idle_renewing(b, 6);
	CU_ASSERT_EQUAL(nc_open(b, &root, "leased", 0, OPEN4_SHARE_ACCESS_WRITE, 0, &fh2, &sid2), 0);
	CU_ASSERT_EQUAL(nc_close(b, &fh2, &sid2), 0);
	/* a's session died with its lease. */
	CU_ASSERT_EQUAL(nc_seq(a, NULL, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_BADSESSION);
	proto_compound_res_free(&res);
	nc_free(a);
	nc_free(b);
}

static nfsstat4 open_previous(struct nc *c, const struct nc_fh *fh, stateid4 *sid)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	OPEN4args *oa = &ops[1].nfs_argop4_u.opopen;
	nfsstat4 st;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_OPEN);
	oa->share_access = OPEN4_SHARE_ACCESS_BOTH;
	oa->owner.owner.owner_len = 7;
	oa->owner.owner.owner_val = "reclaim";
	oa->claim.claim = CLAIM_PREVIOUS;
	oa->claim.open_claim4_u.delegate_type = OPEN_DELEGATE_NONE;
	if (nc_seq(c, ops, 2, &res) != 0)
		return NFS4ERR_SERVERFAULT;
	st = res.res.status;
	if (st == NFS4_OK && sid)
		*sid = res.res.resarray.resarray_val[2].nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
	proto_compound_res_free(&res);
	return st;
}

static void test_grace_and_reclaim(void)
{
	struct nc *c = conn(), *late;
	struct nc_fh root, fh, fh2;
	stateid4 sid;
	struct proto_compound_res res;
	nfs_argop4 op;

	CU_ASSERT_EQUAL_FATAL(nc_setup(c, "reclaimer"), 0);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL(nc_open(c, &root, "reclaimed", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	/* Outside grace, a reclaim is refused. */
	CU_ASSERT_EQUAL(open_previous(c, &fh, NULL), NFS4ERR_NO_GRACE);
	nc_free(c);
	/* Two clients knew the server; it restarts; grace lasts until both finished (or 4 s). */
	late = conn();
	CU_ASSERT_EQUAL_FATAL(nc_setup(late, "late-client"), 0);
	nc_free(late);
	CU_ASSERT_EQUAL_FATAL(tmds_stop(mds, SIGKILL), 128 + SIGKILL);
	CU_ASSERT_EQUAL_FATAL(tmds_start(mds), 0);
	c = conn();
	CU_ASSERT_EQUAL_FATAL(nc_setup_noreclaim(c, "reclaimer"), 0);
	/* Non-reclaim OPEN during grace: GRACE. A reclaim of the open: fine. */
	CU_ASSERT_EQUAL(nc_lookup_path(c, "", &root), 0);
	CU_ASSERT_EQUAL(nc_open(c, &root, "reclaimed", 0, OPEN4_SHARE_ACCESS_READ, 0, &fh2, &sid), NFS4ERR_GRACE);
	CU_ASSERT_EQUAL(open_previous(c, &fh, &sid), NFS4_OK);
	nc_op_simple(&op, OP_RECLAIM_COMPLETE);
	CU_ASSERT_EQUAL(nc_seq(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(nc_seq(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_COMPLETE_ALREADY);
	proto_compound_res_free(&res);
	/* After its RECLAIM_COMPLETE, no more reclaims for this client. */
	CU_ASSERT_EQUAL(open_previous(c, &fh, NULL), NFS4ERR_NO_GRACE);
	/* The other client never came back: grace ends by time; then opens work. */
	idle_renewing(c, 5);
	CU_ASSERT_EQUAL(nc_open(c, &root, "reclaimed", 0, OPEN4_SHARE_ACCESS_READ, 0, &fh2, &sid), NFS4_OK);
	nc_free(c);
}

TEST_SUITE(mds_session, "integration/mds-session", suite_init, suite_clean,
	   { "exchange_id_cases", test_exchange_id_cases },
	   { "create_session_sequence_and_replay", test_create_session_sequence_and_replay },
	   { "sequence_slots_and_reply_cache", test_sequence_slots_and_reply_cache },
	   { "retry_uncached_reply", test_retry_uncached_reply },
	   { "backchannel_calls_arrive", test_backchannel_calls_arrive },
	   { "bind_conn_and_destroy", test_bind_conn_and_destroy },
	   { "lease_expiry_releases_state", test_lease_expiry_releases_state },
	   { "grace_and_reclaim", test_grace_and_reclaim });
