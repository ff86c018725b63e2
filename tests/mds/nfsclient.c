/* The tests' NFSv4.1 client: blocking socket with poll() timeouts, proto/ for every byte on the
 * wire, and a backchannel responder so that the server's callbacks on this connection are
 * answered (and counted) while a reply is awaited. */
#include "tests/mds/nfsclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct nc *nc_connect(int port)
{
	struct nc *c = calloc(1, sizeof(*c));
	struct sockaddr_in a = { .sin_family = AF_INET };
	int one = 1;

	if (!c)
		return NULL;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(c->fd);
		free(c);
		return NULL;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	proto_rm_reader_init(&c->rr, 0);
	c->xid = (uint32_t)(now_ms() * 7919u) ^ (uint32_t)getpid();
	c->minorversion = 1;
	c->flavor = AUTH_SYS;
	snprintf(c->machine, sizeof(c->machine), "mds-test");
	c->timeout_ms = 10000;
	return c;
}

void nc_free(struct nc *c)
{
	if (!c)
		return;
	close(c->fd);
	proto_rm_reader_destroy(&c->rr);
	free(c->last_body);
	free(c);
}

int nc_send_bytes(struct nc *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int nc_send_record(struct nc *c, const void *msg, size_t len)
{
	uint8_t mark[4];
	int rc;

	proto_rm_mark(mark, (uint32_t)len, 1);
	rc = nc_send_bytes(c, mark, 4);
	return rc ? rc : nc_send_bytes(c, msg, len);
}

/* Next complete record (call or reply) within the deadline. Bytes read past a record stay in
 * c->in for the next call. */
static int recv_record(struct nc *c, uint64_t deadline, void **rec, size_t *len)
{
	for (;;) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		uint64_t now;
		ssize_t n;
		int rc;

		if (proto_rm_take(&c->rr, rec, len) == 1)
			return 0;
		if (c->in_off < c->in_len) {
			ssize_t used = proto_rm_feed(&c->rr, c->in + c->in_off, c->in_len - c->in_off);
			if (used < 0)
				return (int)used;
			c->in_off += (size_t)used;
			continue;
		}
		now = now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)(deadline - now));
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc <= 0)
			continue;
		n = recv(c->fd, c->in, sizeof(c->in), 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		c->in_off = 0;
		c->in_len = (size_t)n;
	}
}

static void cb_reply(struct nc *c, uint32_t xid, const void *body, size_t blen)
{
	struct proto_rpc_reply r;
	struct proto_msg m;
	const uint8_t *wire;
	size_t wlen;

	if (proto_msg_init(&m, blen + 128) != 0)
		return;
	proto_rpc_reply_accepted(&r, xid, SUCCESS);
	if (proto_rpc_reply_encode(&m, &r) == 0 && (!blen || xdr_opaque(&m.xdr, (char *)body, (u_int)blen)) &&
	    proto_msg_finish(&m, &wire, &wlen) == 0)
		nc_send_bytes(c, wire, wlen);
	proto_msg_destroy(&m);
}

/* Answer one backchannel call: CB_NULL, or CB_COMPOUND with CB_SEQUENCE, CB_RECALL and CB_LAYOUTRECALL. */
static void handle_callback(struct nc *c, const uint8_t *rec, size_t len)
{
	struct proto_rpc_call call;
	struct proto_cb_compound_args a;
	struct proto_compound_reply rep;
	struct proto_rpc_reply r;
	struct proto_msg m;
	const uint8_t *wire;
	size_t off, wlen;
	nfsstat4 last = NFS4_OK;

	if (proto_rpc_call_decode(rec, len, &call, &off, NULL) != 0)
		return;
	c->cb_last_flavor = call.cred.flavor;
	c->cb_last_uid = call.cred.flavor == AUTH_SYS ? call.cred.sys.uid : 0;
	if (call.proc == CB_NULL) {
		c->cb_nulls++;
		if (!c->cb_silent)
			cb_reply(c, call.xid, NULL, 0);
		return;
	}
	memset(&a, 0, sizeof(a));
	if (proto_cb_compound_args_decode(rec + off, len - off, 0, &a) != 0) {
		proto_cb_compound_args_free(&a);
		return;
	}
	c->cb_compounds++;
	if (c->cb_silent || proto_msg_init(&m, 4096) != 0) {
		proto_cb_compound_args_free(&a);
		return;
	}
	proto_rpc_reply_accepted(&r, call.xid, SUCCESS);
	proto_rpc_reply_encode(&m, &r);
	proto_cb_compound_reply_begin(&rep, &m, a.args.tag.utf8string_val, a.args.tag.utf8string_len, 0);
	for (unsigned i = 0; i < a.args.argarray.argarray_len && last == NFS4_OK; i++) {
		nfs_cb_argop4 *op = &a.args.argarray.argarray_val[i];
		nfs_cb_resop4 res;

		memset(&res, 0, sizeof(res));
		res.resop = op->argop;
		if (op->argop == OP_CB_SEQUENCE) {
			CB_SEQUENCE4args *sa = &op->nfs_cb_argop4_u.opcbsequence;
			CB_SEQUENCE4resok *ok = &res.nfs_cb_resop4_u.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
			c->cb_sequences++;
			c->cb_last_seqid = sa->csa_sequenceid;
			memcpy(c->cb_last_sessid, sa->csa_sessionid, NFS4_SESSIONID_SIZE);
			memcpy(ok->csr_sessionid, sa->csa_sessionid, NFS4_SESSIONID_SIZE);
			ok->csr_sequenceid = sa->csa_sequenceid;
			ok->csr_slotid = sa->csa_slotid;
			ok->csr_highest_slotid = 0;
			ok->csr_target_highest_slotid = 0;
			last = NFS4_OK;
		} else if (op->argop == OP_CB_RECALL) {
			c->cb_recalls++;
			c->cb_last_recall = op->nfs_cb_argop4_u.opcbrecall.stateid;
			last = (nfsstat4)c->cb_answer_recall;
			res.nfs_cb_resop4_u.opcbrecall.status = last;
		} else if (op->argop == OP_CB_LAYOUTRECALL) {
			CB_LAYOUTRECALL4args *lr = &op->nfs_cb_argop4_u.opcblayoutrecall;
			c->cb_layoutrecalls++;
			c->cb_last_layoutrecall = *lr;
			if (lr->clora_recall.lor_recalltype == LAYOUTRECALL4_FILE) {
				nfs_fh4 *fh = &c->cb_last_layoutrecall.clora_recall.layoutrecall4_u.lor_layout.lor_fh;
				size_t n = fh->nfs_fh4_len < NFS4_FHSIZE ? fh->nfs_fh4_len : NFS4_FHSIZE;
				memcpy(c->cb_last_lr_fh, fh->nfs_fh4_val, n);
				fh->nfs_fh4_len = (u_int)n;
				fh->nfs_fh4_val = (char *)c->cb_last_lr_fh;
			}
			last = (nfsstat4)c->cb_answer_layoutrecall;
			res.nfs_cb_resop4_u.opcblayoutrecall.clorr_status = last;
		} else {
			last = NFS4ERR_NOTSUPP;
			memcpy(&res.nfs_cb_resop4_u, &last, sizeof(last));
		}
		if (op->argop == OP_CB_SEQUENCE)
			res.nfs_cb_resop4_u.opcbsequence.csr_status = last;
		proto_cb_compound_reply_add(&rep, &res);
	}
	proto_compound_reply_end(&rep, last);
	if (proto_msg_finish(&m, &wire, &wlen) == 0)
		nc_send_bytes(c, wire, wlen);
	proto_msg_destroy(&m);
	proto_cb_compound_args_free(&a);
}

int nc_recv_reply(struct nc *c, void **rec, size_t *len)
{
	uint64_t deadline = now_ms() + (uint64_t)c->timeout_ms;

	for (;;) {
		uint32_t xid, type;
		void *r;
		size_t rl;
		int rc = recv_record(c, deadline, &r, &rl);

		if (rc)
			return rc;
		if (proto_rpc_peek(r, rl, &xid, &type) == 0 && type == CALL) {
			handle_callback(c, r, rl);
			free(r);
			continue;
		}
		*rec = r;
		*len = rl;
		return 0;
	}
}

void nc_serve_callbacks(struct nc *c, int ms, int count)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	int seen = 0;

	while (seen < count && now_ms() < deadline) {
		void *r;
		size_t rl;
		uint32_t xid, type;
		if (recv_record(c, deadline, &r, &rl) != 0)
			return;
		if (proto_rpc_peek(r, rl, &xid, &type) == 0 && type == CALL) {
			handle_callback(c, r, rl);
			seen++;
		}
		free(r);
	}
}

int nc_wait_closed(struct nc *c, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;

	for (;;) {
		uint8_t buf[4096];
		struct pollfd p = { c->fd, POLLIN, 0 };
		uint64_t now = now_ms();
		ssize_t n;

		if (now >= deadline)
			return 0;
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 1;
	}
}

static void fill_call(struct nc *c, struct proto_rpc_call *call, uint32_t prog, uint32_t vers, uint32_t proc,
		      uint32_t flavor)
{
	memset(call, 0, sizeof(*call));
	call->xid = ++c->xid;
	call->prog = prog;
	call->vers = vers;
	call->proc = proc;
	call->cred.flavor = flavor;
	if (flavor == AUTH_SYS) {
		call->cred.sys.uid = c->uid;
		call->cred.sys.gid = c->gid;
		snprintf(call->cred.sys.machinename, sizeof(call->cred.sys.machinename), "%s", c->machine);
	} else if (flavor != AUTH_NONE) {
		call->cred.len = 8; /* an opaque body for other flavours */
	}
	call->verf.flavor = AUTH_NONE;
}

/* Wait for the reply to xid; decode its header. */
static int wait_reply(struct nc *c, uint32_t xid, struct proto_rpc_reply *r, void **rec, size_t *rl, size_t *off)
{
	for (;;) {
		int rc = nc_recv_reply(c, rec, rl);
		if (rc)
			return rc;
		rc = proto_rpc_reply_decode(*rec, *rl, r, off);
		if (rc) {
			free(*rec);
			return rc;
		}
		if (r->xid == xid)
			return 0;
		free(*rec); /* a stale reply */
	}
}

int nc_rpc(struct nc *c, const struct nc_call *q, struct proto_rpc_reply *r, void **body, size_t *blen)
{
	const void *args = q->args;
	const size_t alen = q->alen;
	struct proto_rpc_call call;
	struct proto_msg m;
	const uint8_t *wire;
	void *rec;
	size_t wlen, rl, off;
	int rc;

	fill_call(c, &call, q->prog, q->vers, q->proc, q->flavor);
	rc = proto_msg_init(&m, alen + 1024);
	if (rc)
		return rc;
	rc = proto_rpc_call_encode(&m, &call);
	if (rc == 0 && alen && !xdr_opaque(&m.xdr, (char *)args, (u_int)alen))
		rc = -EMSGSIZE;
	if (rc == 0)
		rc = proto_msg_finish(&m, &wire, &wlen);
	if (rc == 0)
		rc = nc_send_bytes(c, wire, wlen);
	proto_msg_destroy(&m);
	if (rc)
		return rc;
	rc = wait_reply(c, call.xid, r, &rec, &rl, &off);
	if (rc)
		return rc;
	if (body) {
		*blen = rl - off;
		*body = malloc(*blen ? *blen : 1);
		if (*body)
			memcpy(*body, (uint8_t *)rec + off, *blen);
	}
	free(rec);
	return 0;
}

int nc_compound_send(struct nc *c, const nfs_argop4 *ops, unsigned n, uint32_t *xid)
{
	struct proto_rpc_call call;
	struct proto_compound_enc e;
	struct proto_msg m;
	const uint8_t *wire;
	size_t wlen, need = 4096;
	int rc;

	for (unsigned i = 0; i < n; i++)
		if (ops[i].argop == OP_WRITE)
			need += ops[i].nfs_argop4_u.opwrite.data.data_len;
		else if (ops[i].argop == OP_LAYOUTCOMMIT)
			need += ops[i].nfs_argop4_u.oplayoutcommit.loca_layoutupdate.lou_body.lou_body_len;
	fill_call(c, &call, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, c->flavor);
	rc = proto_msg_init(&m, need);
	if (rc)
		return rc;
	rc = proto_rpc_call_encode(&m, &call);
	if (rc == 0)
		rc = proto_compound_begin(&e, &m, "mds-test", c->minorversion);
	for (unsigned i = 0; rc == 0 && i < n; i++)
		rc = proto_compound_add(&e, &ops[i]);
	if (rc == 0)
		rc = proto_compound_end(&e);
	if (rc == 0)
		rc = proto_msg_finish(&m, &wire, &wlen);
	if (rc == 0)
		rc = nc_send_bytes(c, wire, wlen);
	proto_msg_destroy(&m);
	if (rc == 0)
		*xid = call.xid;
	return rc;
}

int nc_compound_recv(struct nc *c, uint32_t xid, struct proto_compound_res *res)
{
	struct proto_rpc_reply r;
	void *rec;
	size_t rl, off;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = wait_reply(c, xid, &r, &rec, &rl, &off);
	if (rc)
		return rc;
	if (r.reply_stat != MSG_ACCEPTED || r.accept_stat != SUCCESS) {
		free(rec);
		return -EPROTO;
	}
	free(c->last_body);
	c->last_body_len = rl - off;
	c->last_body = malloc(c->last_body_len ? c->last_body_len : 1);
	if (c->last_body)
		memcpy(c->last_body, (uint8_t *)rec + off, c->last_body_len);
	rc = proto_compound_res_decode((uint8_t *)rec + off, rl - off, res);
	free(rec);
	return rc;
}

int nc_compound(struct nc *c, const nfs_argop4 *ops, unsigned n, struct proto_compound_res *res)
{
	uint32_t xid;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = nc_compound_send(c, ops, n, &xid);
	return rc ? rc : nc_compound_recv(c, xid, res);
}

/* SEQUENCE (slot 0, the session's next sequence id unless reuse_seqid) followed by the n ops, in a
 * new array (caller frees), or NULL. */
static nfs_argop4 *with_sequence(struct nc *c, const nfs_argop4 *ops, unsigned n, int cachethis, int reuse_seqid)
{
	nfs_argop4 *all = calloc(n + 1, sizeof(*all));
	SEQUENCE4args *sa;

	if (!all)
		return NULL;
	all[0].argop = OP_SEQUENCE;
	sa = &all[0].nfs_argop4_u.opsequence;
	memcpy(sa->sa_sessionid, c->sessid, NFS4_SESSIONID_SIZE);
	if (!reuse_seqid)
		c->slot_seq++;
	sa->sa_sequenceid = c->slot_seq;
	sa->sa_cachethis = cachethis ? TRUE : FALSE;
	if (n)
		memcpy(all + 1, ops, n * sizeof(*ops));
	return all;
}

int nc_seq_send(struct nc *c, const nfs_argop4 *ops, unsigned n, uint32_t *xid)
{
	nfs_argop4 *all = with_sequence(c, ops, n, 0, 0);
	int rc;

	if (!all)
		return -ENOMEM;
	rc = nc_compound_send(c, all, n + 1, xid);
	free(all);
	return rc;
}

int nc_seq_opts(struct nc *c, const nfs_argop4 *ops, unsigned n, int cachethis, int reuse_seqid,
		struct proto_compound_res *res)
{
	nfs_argop4 *all = with_sequence(c, ops, n, cachethis, reuse_seqid);
	int rc;

	if (!all)
		return -ENOMEM;
	rc = nc_compound(c, all, n + 1, res);
	free(all);
	/* A SEQUENCE that failed did not use the slot: the next request reuses its sequence id. */
	if (rc == 0 && !reuse_seqid && res->res.resarray.resarray_len > 0 &&
	    res->res.resarray.resarray_val[0].resop == OP_SEQUENCE &&
	    res->res.resarray.resarray_val[0].nfs_resop4_u.opsequence.sr_status != NFS4_OK)
		c->slot_seq--;
	if (rc == 0 && res->res.resarray.resarray_len > 0 &&
	    res->res.resarray.resarray_val[0].resop == OP_SEQUENCE &&
	    res->res.resarray.resarray_val[0].nfs_resop4_u.opsequence.sr_status == NFS4_OK)
		c->seq_status_flags = res->res.resarray.resarray_val[0]
					      .nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4.sr_status_flags;
	return rc;
}

int nc_seq(struct nc *c, const nfs_argop4 *ops, unsigned n, struct proto_compound_res *res)
{
	return nc_seq_opts(c, ops, n, 0, 0, res);
}

/* Run ops in a session and give back the COMPOUND status (res kept for the caller when res is
 * not NULL, else freed). */
static int run(struct nc *c, const nfs_argop4 *ops, unsigned n, struct proto_compound_res *res)
{
	struct proto_compound_res local;
	struct proto_compound_res *r = res ? res : &local;
	int rc = nc_seq(c, ops, n, r);

	if (rc) {
		if (!res)
			proto_compound_res_free(r);
		return rc;
	}
	rc = (int)r->res.status;
	if (!res)
		proto_compound_res_free(r);
	return rc;
}

static int setup(struct nc *c, const char *owner, int reclaim_complete)
{
	nfs_argop4 op;
	struct proto_compound_res res;
	EXCHANGE_ID4args *ea = &op.nfs_argop4_u.opexchange_id;
	CREATE_SESSION4args *ca = &op.nfs_argop4_u.opcreate_session;
	callback_sec_parms4 sec = { .cb_secflavor = AUTH_NONE };
	int rc;

	snprintf(c->owner, sizeof(c->owner), "%s", owner);
	nc_op_simple(&op, OP_EXCHANGE_ID);
	memcpy(ea->eia_clientowner.co_verifier, c->verifier, 8);
	ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(c->owner);
	ea->eia_clientowner.co_ownerid.co_ownerid_val = c->owner;
	ea->eia_state_protect.spa_how = SP4_NONE;
	rc = nc_compound(c, &op, 1, &res);
	if (rc)
		return rc;
	rc = (int)res.res.status;
	if (rc == 0) {
		EXCHANGE_ID4resok *ok = &res.res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
		c->clientid = ok->eir_clientid;
		c->cs_seq = ok->eir_sequenceid;
	}
	proto_compound_res_free(&res);
	if (rc)
		return rc;
	nc_op_simple(&op, OP_CREATE_SESSION);
	ca->csa_clientid = c->clientid;
	ca->csa_sequence = c->cs_seq;
	ca->csa_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	ca->csa_fore_chan_attrs =
		(channel_attrs4){ 0, 4u << 20, 4u << 20, 64u << 10, 32, c->want_slots ? c->want_slots : 4, { 0, NULL } };
	ca->csa_back_chan_attrs = (channel_attrs4){ 0, 64u << 10, 64u << 10, 0, 8, 1, { 0, NULL } };
	ca->csa_cb_program = NFS4_CALLBACK;
	ca->csa_sec_parms.csa_sec_parms_len = 1;
	ca->csa_sec_parms.csa_sec_parms_val = &sec;
	rc = nc_compound(c, &op, 1, &res);
	if (rc)
		return rc;
	rc = (int)res.res.status;
	if (rc == 0) {
		CREATE_SESSION4resok *ok =
			&res.res.resarray.resarray_val[0].nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
		memcpy(c->sessid, ok->csr_sessionid, NFS4_SESSIONID_SIZE);
		c->fore = ok->csr_fore_chan_attrs;
		c->slot_seq = 0;
		c->have_session = 1;
		c->cs_seq++;
	}
	proto_compound_res_free(&res);
	if (rc || !reclaim_complete)
		return rc;
	nc_op_simple(&op, OP_RECLAIM_COMPLETE);
	op.nfs_argop4_u.opreclaim_complete.rca_one_fs = FALSE;
	return run(c, &op, 1, NULL);
}

int nc_setup(struct nc *c, const char *owner)
{
	return setup(c, owner, 1);
}

int nc_setup_noreclaim(struct nc *c, const char *owner)
{
	return setup(c, owner, 0);
}

/* ---- op builders ------------------------------------------------------------------------ */

void nc_op_putfh(nfs_argop4 *op, const struct nc_fh *fh)
{
	memset(op, 0, sizeof(*op));
	op->argop = OP_PUTFH;
	op->nfs_argop4_u.opputfh.object.nfs_fh4_len = fh->len;
	op->nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh->val;
}

void nc_op_simple(nfs_argop4 *op, nfs_opnum4 num)
{
	memset(op, 0, sizeof(*op));
	op->argop = num;
}

void nc_op_lookup(nfs_argop4 *op, const char *name)
{
	memset(op, 0, sizeof(*op));
	op->argop = OP_LOOKUP;
	op->nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(name);
	op->nfs_argop4_u.oplookup.objname.utf8string_val = (char *)name;
}

void nc_op_getattr(nfs_argop4 *op, uint32_t *words, unsigned nwords)
{
	memset(op, 0, sizeof(*op));
	op->argop = OP_GETATTR;
	op->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = nwords;
	op->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = words;
}

static void take_fh(const nfs_resop4 *r, struct nc_fh *fh)
{
	const nfs_fh4 *o = &r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
	fh->len = o->nfs_fh4_len;
	memcpy(fh->val, o->nfs_fh4_val, o->nfs_fh4_len);
}

static const nfs_resop4 *last_res(const struct proto_compound_res *r)
{
	unsigned n = r->res.resarray.resarray_len;
	return n ? &r->res.resarray.resarray_val[n - 1] : NULL;
}

int nc_rootfh(struct nc *c, struct nc_fh *fh)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	int rc;

	nc_op_simple(&ops[0], OP_PUTROOTFH);
	nc_op_simple(&ops[1], OP_GETFH);
	rc = run(c, ops, 2, &res);
	if (rc == 0)
		take_fh(last_res(&res), fh);
	proto_compound_res_free(&res);
	return rc;
}

int nc_lookup_path(struct nc *c, const char *path, struct nc_fh *fh)
{
	nfs_argop4 ops[66];
	char copy[1024], *save = NULL;
	struct proto_compound_res res;
	unsigned n = 0;
	int rc;

	snprintf(copy, sizeof(copy), "%s", path);
	nc_op_simple(&ops[n++], OP_PUTROOTFH);
	for (char *p = strtok_r(copy, "/", &save); p && n < 64; p = strtok_r(NULL, "/", &save))
		nc_op_lookup(&ops[n++], p);
	nc_op_simple(&ops[n++], OP_GETFH);
	rc = run(c, ops, n, &res);
	if (rc == 0)
		take_fh(last_res(&res), fh);
	proto_compound_res_free(&res);
	return rc;
}

int nc_getattrs(struct nc *c, const struct nc_fh *fh, struct nc_attrs *out)
{
	uint32_t words[2] = { 1u << FATTR4_TYPE | 1u << FATTR4_CHANGE | 1u << FATTR4_SIZE | 1u << FATTR4_FILEID,
			      1u << (FATTR4_MODE - 32) | 1u << (FATTR4_NUMLINKS - 32) | 1u << (FATTR4_OWNER - 32) |
				      1u << (FATTR4_OWNER_GROUP - 32) | 1u << (FATTR4_SPACE_USED - 32) |
				      1u << (FATTR4_TIME_MODIFY - 32) };
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	struct proto_fattr *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return -ENOMEM;
	nc_op_putfh(&ops[0], fh);
	nc_op_getattr(&ops[1], words, 2);
	rc = run(c, ops, 2, &res);
	if (rc == 0) {
		const fattr4 *f = &last_res(&res)->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
		rc = proto_fattr_decode(f, a, NULL);
		if (rc == 0) {
			memset(out, 0, sizeof(*out));
			out->type = a->type;
			out->change = a->change;
			out->size = a->size;
			out->fileid = a->fileid;
			out->mode = a->mode;
			out->nlink = a->numlinks;
			out->uid = (uint32_t)strtoul(a->owner, NULL, 10);
			out->gid = (uint32_t)strtoul(a->owner_group, NULL, 10);
			out->space_used = a->space_used;
			out->mtime_sec = a->time_modify.seconds;
			out->mtime_nsec = a->time_modify.nseconds;
		}
	}
	proto_compound_res_free(&res);
	free(a);
	return rc;
}

static int mode_attrs(uint32_t mode, fattr4 *out, uint32_t *word)
{
	struct proto_fattr *a = calloc(1, sizeof(*a));
	int rc;
	(void)word;

	if (!a)
		return -ENOMEM;
	a->mode = mode;
	proto_fattr_set(a, FATTR4_MODE);
	rc = proto_fattr_encode(a, NULL, out);
	free(a);
	return rc;
}

int nc_mkdir(struct nc *c, const struct nc_fh *dir, const char *name, uint32_t mode, struct nc_fh *out)
{
	nfs_argop4 ops[3];
	struct proto_compound_res res;
	CREATE4args *ca = &ops[1].nfs_argop4_u.opcreate;
	int rc;

	nc_op_putfh(&ops[0], dir);
	nc_op_simple(&ops[1], OP_CREATE);
	ca->objtype.type = NF4DIR;
	ca->objname.utf8string_len = (u_int)strlen(name);
	ca->objname.utf8string_val = (char *)name;
	rc = mode_attrs(mode, &ca->createattrs, NULL);
	if (rc)
		return rc;
	nc_op_simple(&ops[2], OP_GETFH);
	rc = run(c, ops, 3, &res);
	if (rc == 0 && out)
		take_fh(last_res(&res), out);
	proto_compound_res_free(&res);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &ca->createattrs);
	return rc;
}

int nc_symlink(struct nc *c, const struct nc_fh *dir, const char *name, const char *target)
{
	nfs_argop4 ops[2];
	CREATE4args *ca = &ops[1].nfs_argop4_u.opcreate;

	nc_op_putfh(&ops[0], dir);
	nc_op_simple(&ops[1], OP_CREATE);
	ca->objtype.type = NF4LNK;
	ca->objtype.createtype4_u.linkdata.linktext4_len = (u_int)strlen(target);
	ca->objtype.createtype4_u.linkdata.linktext4_val = (char *)target;
	ca->objname.utf8string_len = (u_int)strlen(name);
	ca->objname.utf8string_val = (char *)name;
	return run(c, ops, 2, NULL);
}

int nc_open(struct nc *c, const struct nc_fh *dir, const char *name, int create, uint32_t access, uint32_t deny,
	    struct nc_fh *out, stateid4 *sid)
{
	nfs_argop4 ops[3];
	struct proto_compound_res res;
	OPEN4args *oa = &ops[1].nfs_argop4_u.opopen;
	char owner[64];
	int rc;

	snprintf(owner, sizeof(owner), "open-owner-%s", c->owner);
	nc_op_putfh(&ops[0], dir);
	nc_op_simple(&ops[1], OP_OPEN);
	oa->share_access = access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
	oa->share_deny = deny;
	oa->owner.clientid = c->clientid;
	oa->owner.owner.owner_len = (u_int)strlen(owner);
	oa->owner.owner.owner_val = owner;
	oa->claim.claim = CLAIM_NULL;
	oa->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
	oa->claim.open_claim4_u.file.utf8string_val = (char *)name;
	if (create) {
		oa->openhow.opentype = OPEN4_CREATE;
		oa->openhow.openflag4_u.how.mode = GUARDED4;
		rc = mode_attrs(0644, &oa->openhow.openflag4_u.how.createhow4_u.createattrs, NULL);
		if (rc)
			return rc;
	} else {
		oa->openhow.opentype = OPEN4_NOCREATE;
	}
	nc_op_simple(&ops[2], OP_GETFH);
	rc = run(c, ops, 3, &res);
	if (rc == 0) {
		take_fh(last_res(&res), out);
		*sid = res.res.resarray.resarray_val[2].nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
	}
	proto_compound_res_free(&res);
	if (create)
		proto_xdr_free((xdrproc_t)xdr_fattr4, &oa->openhow.openflag4_u.how.createhow4_u.createattrs);
	return rc;
}

int nc_close(struct nc *c, const struct nc_fh *fh, const stateid4 *sid)
{
	nfs_argop4 ops[2];

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_CLOSE);
	ops[1].nfs_argop4_u.opclose.open_stateid = *sid;
	return run(c, ops, 2, NULL);
}

int nc_write(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t off, const void *buf, size_t len,
	     stable_how4 stable)
{
	const size_t chunk = 1u << 20;
	size_t done = 0;

	do {
		nfs_argop4 ops[2];
		struct proto_compound_res res;
		size_t n = len - done < chunk ? len - done : chunk;
		int rc;

		nc_op_putfh(&ops[0], fh);
		nc_op_simple(&ops[1], OP_WRITE);
		ops[1].nfs_argop4_u.opwrite.stateid = *sid;
		ops[1].nfs_argop4_u.opwrite.offset = off + done;
		ops[1].nfs_argop4_u.opwrite.stable = stable;
		ops[1].nfs_argop4_u.opwrite.data.data_len = (u_int)n;
		ops[1].nfs_argop4_u.opwrite.data.data_val = (char *)buf + done;
		rc = run(c, ops, 2, &res);
		if (rc == 0) {
			count4 w = last_res(&res)->nfs_resop4_u.opwrite.WRITE4res_u.resok4.count;
			if (w == 0 && n > 0)
				rc = -EIO;
			n = w;
		}
		proto_compound_res_free(&res);
		if (rc)
			return rc;
		done += n;
	} while (done < len);
	return 0;
}

int nc_read(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t off, void *buf, size_t len,
	    size_t *got)
{
	size_t done = 0;

	*got = 0;
	while (done < len) {
		nfs_argop4 ops[2];
		struct proto_compound_res res;
		size_t n = len - done < (1u << 20) ? len - done : (1u << 20);
		int rc, eof = 0;

		nc_op_putfh(&ops[0], fh);
		nc_op_simple(&ops[1], OP_READ);
		ops[1].nfs_argop4_u.opread.stateid = *sid;
		ops[1].nfs_argop4_u.opread.offset = off + done;
		ops[1].nfs_argop4_u.opread.count = (count4)n;
		rc = run(c, ops, 2, &res);
		if (rc == 0) {
			const READ4resok *ok = &last_res(&res)->nfs_resop4_u.opread.READ4res_u.resok4;
			if (ok->data.data_len > n)
				rc = -EPROTO;
			else {
				if (ok->data.data_len)
					memcpy((char *)buf + done, ok->data.data_val, ok->data.data_len);
				done += ok->data.data_len;
				eof = ok->eof || ok->data.data_len == 0;
			}
		}
		proto_compound_res_free(&res);
		if (rc)
			return rc;
		if (eof)
			break;
	}
	*got = done;
	return 0;
}

static int dir_op(struct nc *c, const struct nc_fh *dir, nfs_argop4 *op)
{
	nfs_argop4 ops[2];

	nc_op_putfh(&ops[0], dir);
	ops[1] = *op;
	return run(c, ops, 2, NULL);
}

int nc_remove(struct nc *c, const struct nc_fh *dir, const char *name)
{
	nfs_argop4 op;

	nc_op_simple(&op, OP_REMOVE);
	op.nfs_argop4_u.opremove.target.utf8string_len = (u_int)strlen(name);
	op.nfs_argop4_u.opremove.target.utf8string_val = (char *)name;
	return dir_op(c, dir, &op);
}

int nc_rename(struct nc *c, const struct nc_fh *sdir, const char *sname, const struct nc_fh *ddir, const char *dname)
{
	nfs_argop4 ops[4];
	RENAME4args *ra = &ops[3].nfs_argop4_u.oprename;

	nc_op_putfh(&ops[0], sdir);
	nc_op_simple(&ops[1], OP_SAVEFH);
	nc_op_putfh(&ops[2], ddir);
	nc_op_simple(&ops[3], OP_RENAME);
	ra->oldname.utf8string_len = (u_int)strlen(sname);
	ra->oldname.utf8string_val = (char *)sname;
	ra->newname.utf8string_len = (u_int)strlen(dname);
	ra->newname.utf8string_val = (char *)dname;
	return run(c, ops, 4, NULL);
}

int nc_link(struct nc *c, const struct nc_fh *file, const struct nc_fh *dir, const char *name)
{
	nfs_argop4 ops[4];

	nc_op_putfh(&ops[0], file);
	nc_op_simple(&ops[1], OP_SAVEFH);
	nc_op_putfh(&ops[2], dir);
	nc_op_simple(&ops[3], OP_LINK);
	ops[3].nfs_argop4_u.oplink.newname.utf8string_len = (u_int)strlen(name);
	ops[3].nfs_argop4_u.oplink.newname.utf8string_val = (char *)name;
	return run(c, ops, 4, NULL);
}

static int setattr(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, struct proto_fattr *a)
{
	nfs_argop4 ops[2];
	SETATTR4args *sa = &ops[1].nfs_argop4_u.opsetattr;
	int rc;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_SETATTR);
	if (sid)
		sa->stateid = *sid;
	rc = proto_fattr_encode(a, NULL, &sa->obj_attributes);
	if (rc)
		return rc;
	rc = run(c, ops, 2, NULL);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &sa->obj_attributes);
	return rc;
}

/* One attribute, the mode or the size, set to v. */
static int setattr_one(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, unsigned bit, uint64_t v)
{
	struct proto_fattr *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return -ENOMEM;
	if (bit == FATTR4_MODE)
		a->mode = (uint32_t)v;
	else
		a->size = v;
	proto_fattr_set(a, bit);
	rc = setattr(c, fh, sid, a);
	free(a);
	return rc;
}

int nc_setattr_mode(struct nc *c, const struct nc_fh *fh, uint32_t mode)
{
	return setattr_one(c, fh, NULL, FATTR4_MODE, mode);
}

int nc_setattr_size(struct nc *c, const struct nc_fh *fh, const stateid4 *sid, uint64_t size)
{
	return setattr_one(c, fh, sid, FATTR4_SIZE, size);
}

int nc_readlink(struct nc *c, const struct nc_fh *fh, char *buf, size_t len)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	int rc;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_READLINK);
	rc = run(c, ops, 2, &res);
	if (rc == 0) {
		const linktext4 *l = &last_res(&res)->nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link;
		snprintf(buf, len, "%.*s", (int)l->linktext4_len, l->linktext4_val);
	}
	proto_compound_res_free(&res);
	return rc;
}

int nc_readdir_names(struct nc *c, const struct nc_fh *dir, char *buf, size_t len, unsigned *count)
{
	nfs_cookie4 cookie = 0;
	char verf[8] = { 0 };
	int eof = 0;

	buf[0] = 0;
	*count = 0;
	while (!eof) {
		nfs_argop4 ops[2];
		struct proto_compound_res res;
		READDIR4args *ra = &ops[1].nfs_argop4_u.opreaddir;
		int rc;

		nc_op_putfh(&ops[0], dir);
		nc_op_simple(&ops[1], OP_READDIR);
		ra->cookie = cookie;
		memcpy(ra->cookieverf, verf, 8);
		ra->dircount = 512;
		ra->maxcount = 4096;
		rc = run(c, ops, 2, &res);
		if (rc == 0) {
			const READDIR4resok *ok = &last_res(&res)->nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
			memcpy(verf, ok->cookieverf, 8);
			for (entry4 *e = ok->reply.entries; e; e = e->nextentry) {
				size_t used = strlen(buf);
				snprintf(buf + used, len - used, "%s%.*s", used ? "\n" : "", (int)e->name.utf8string_len,
					 e->name.utf8string_val);
				cookie = e->cookie;
				(*count)++;
			}
			eof = ok->reply.eof;
		}
		proto_compound_res_free(&res);
		if (rc)
			return rc;
	}
	return 0;
}
