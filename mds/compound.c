/* The COMPOUND engine. A request runs op by op: position rules first (SEQUENCE first, session-less
 * ops alone), then the op's handler from the dispatch table; the running reply size is checked
 * after every op against the session's limit, so an op whose result would not fit fails with
 * NFS4ERR_REP_TOO_BIG(_TO_CACHE) and the COMPOUND stops there. The store transaction commits
 * before the reply is encoded; the reply goes into the slot's cache and out on the connection. */
#include "mds/compound.h"

#include "mds/ops.h"
#include "mds/state.h"
#include "proto/compound.h"
#include "proto/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* RPC accepted-reply header with an AUTH_NONE verifier: xid, REPLY, MSG_ACCEPTED, verf(0,0),
 * SUCCESS. What ca_maxresponsesize counts besides COMPOUND4res. */
#define RPC_REPLY_HDR_BYTES 24
/* A COMPOUND without a session may answer with this much at most (EXCHANGE_ID and friends). */
#define SESSIONLESS_REPLY_MAX (64u << 10)
/* Without a session limit: what one reply may carry (a READ of MDS_MAX_IO_BYTES). */
#define DEFAULT_REPLY_MAX (MDS_MAX_IO_BYTES + (64u << 10))
/* NFSv4.2's operations (RFC 7862, RFC 8276: ALLOCATE .. REMOVEXATTR): valid in minor version 2,
 * all optional; we offer none of them. */
#define OP42_FIRST 59
#define OP42_LAST 75

const struct mds_op_desc mds_op_table[MDS_OP_TABLE_SIZE] = {
	[OP_ACCESS] = { mds_op_access, MDS_OPF_FH },
	[OP_CLOSE] = { mds_op_close, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_COMMIT] = { mds_op_commit, MDS_OPF_FH },
	[OP_CREATE] = { mds_op_create, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_DELEGPURGE] = { mds_op_delegpurge, 0 },
	[OP_DELEGRETURN] = { mds_op_delegreturn, MDS_OPF_FH },
	[OP_GETATTR] = { mds_op_getattr, MDS_OPF_FH },
	[OP_GETFH] = { mds_op_getfh, MDS_OPF_FH },
	[OP_LINK] = { mds_op_link, MDS_OPF_FH | MDS_OPF_SAVEDFH | MDS_OPF_MODIFY },
	[OP_LOCK] = { mds_op_lock, MDS_OPF_FH },
	[OP_LOCKT] = { mds_op_lockt, MDS_OPF_FH },
	[OP_LOCKU] = { mds_op_locku, MDS_OPF_FH },
	[OP_LOOKUP] = { mds_op_lookup, MDS_OPF_FH },
	[OP_LOOKUPP] = { mds_op_lookupp, MDS_OPF_FH },
	[OP_NVERIFY] = { mds_op_nverify, MDS_OPF_FH },
	[OP_OPEN] = { mds_op_open, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_OPENATTR] = { mds_op_notsupp, MDS_OPF_FH },
	[OP_OPEN_CONFIRM] = { mds_op_notsupp, 0 },
	[OP_OPEN_DOWNGRADE] = { mds_op_open_downgrade, MDS_OPF_FH },
	[OP_PUTFH] = { mds_op_putfh, 0 },
	[OP_PUTPUBFH] = { mds_op_putpubfh, 0 },
	[OP_PUTROOTFH] = { mds_op_putrootfh, 0 },
	[OP_READ] = { mds_op_read, MDS_OPF_FH },
	[OP_READDIR] = { mds_op_readdir, MDS_OPF_FH },
	[OP_READLINK] = { mds_op_readlink, MDS_OPF_FH },
	[OP_REMOVE] = { mds_op_remove, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_RENAME] = { mds_op_rename, MDS_OPF_FH | MDS_OPF_SAVEDFH | MDS_OPF_MODIFY },
	[OP_RENEW] = { mds_op_notsupp, 0 },
	[OP_RESTOREFH] = { mds_op_restorefh, 0 },
	[OP_SAVEFH] = { mds_op_savefh, MDS_OPF_FH },
	[OP_SECINFO] = { mds_op_secinfo, MDS_OPF_FH },
	[OP_SETATTR] = { mds_op_setattr, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_SETCLIENTID] = { mds_op_notsupp, 0 },
	[OP_SETCLIENTID_CONFIRM] = { mds_op_notsupp, 0 },
	[OP_VERIFY] = { mds_op_verify, MDS_OPF_FH },
	[OP_WRITE] = { mds_op_write, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_RELEASE_LOCKOWNER] = { mds_op_notsupp, 0 },
	[OP_BACKCHANNEL_CTL] = { mds_op_backchannel_ctl, 0 },
	[OP_BIND_CONN_TO_SESSION] = { mds_op_bind_conn_to_session, MDS_OPF_NOSESSION },
	[OP_EXCHANGE_ID] = { mds_op_exchange_id, MDS_OPF_NOSESSION },
	[OP_CREATE_SESSION] = { mds_op_create_session, MDS_OPF_NOSESSION | MDS_OPF_MODIFY },
	[OP_DESTROY_SESSION] = { mds_op_destroy_session, MDS_OPF_NOSESSION },
	[OP_FREE_STATEID] = { mds_op_free_stateid, 0 },
	[OP_GET_DIR_DELEGATION] = { mds_op_notsupp, MDS_OPF_FH },
	[OP_GETDEVICEINFO] = { mds_op_getdeviceinfo, 0 },
	[OP_GETDEVICELIST] = { mds_op_getdevicelist, MDS_OPF_FH },
	[OP_LAYOUTCOMMIT] = { mds_op_layoutcommit, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_LAYOUTGET] = { mds_op_layoutget, MDS_OPF_FH | MDS_OPF_MODIFY },
	[OP_LAYOUTRETURN] = { mds_op_layoutreturn, MDS_OPF_MODIFY },
	[OP_SECINFO_NO_NAME] = { mds_op_secinfo_no_name, MDS_OPF_FH },
	[OP_SEQUENCE] = { mds_op_sequence, 0 },
	[OP_SET_SSV] = { mds_op_notsupp, 0 },
	[OP_TEST_STATEID] = { mds_op_test_stateid, 0 },
	[OP_WANT_DELEGATION] = { mds_op_want_delegation, MDS_OPF_FH },
	[OP_DESTROY_CLIENTID] = { mds_op_destroy_clientid, MDS_OPF_NOSESSION | MDS_OPF_MODIFY },
	[OP_RECLAIM_COMPLETE] = { mds_op_reclaim_complete, MDS_OPF_MODIFY },
};

nfsstat4 mds_op_notsupp(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	(void)c;
	(void)arg;
	(void)res;
	return NFS4ERR_NOTSUPP;
}

void mds_res_set_status(nfs_resop4 *res, nfsstat4 status)
{
	/* Every member of nfs_resop4_u begins with its nfsstat4 (union results and the plain
	 * "struct { nfsstat4 status; }" ones alike). */
	memcpy(&res->nfs_resop4_u, &status, sizeof(status));
}

nfsstat4 mds_errno_to_nfs(int err)
{
	switch (err) {
	case 0: return NFS4_OK;
	case -ENOENT: return NFS4ERR_NOENT;
	case -EEXIST: return NFS4ERR_EXIST;
	case -ENOTDIR: return NFS4ERR_NOTDIR;
	case -EISDIR: return NFS4ERR_ISDIR;
	case -ENOTEMPTY: return NFS4ERR_NOTEMPTY;
	case -EINVAL: return NFS4ERR_INVAL;
	case -ENAMETOOLONG: return NFS4ERR_NAMETOOLONG;
	case -ENOSPC: return NFS4ERR_NOSPC;
	case -EROFS: return NFS4ERR_ROFS;
	case -EMLINK: return NFS4ERR_MLINK;
	case -EACCES: return NFS4ERR_ACCESS;
	case -EPERM: return NFS4ERR_PERM;
	case -EFBIG: return NFS4ERR_FBIG;
	case -ENOMEM: return NFS4ERR_RESOURCE;
	case -EXDEV: return NFS4ERR_XDEV;
	case -ESTALE: return NFS4ERR_STALE;
	case -EAGAIN: return NFS4ERR_DELAY;
	case -EIO:
	case -ETIMEDOUT:
	case -ENODEV:
	case -EBADE:
		return NFS4ERR_IO;
	default:
		return NFS4ERR_SERVERFAULT;
	}
}

struct mds_compound *mds_compound_new(struct mds_conn *conn, uint32_t xid)
{
	struct mds_compound *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = conn->srv;
	c->conn = conn;
	mds_conn_get(conn);
	c->xid = xid;
	mds_arena_init(&c->arena);
	return c;
}

void mds_compound_set_args_hash(struct mds_compound *c, const void *args, size_t len)
{
	/* Skip the tag (4-byte length + padded bytes): a retry may carry another tag. */
	size_t taglen = c->pargs.args.tag.utf8string_len, skip = 4 + ((taglen + 3) & ~(size_t)3);
	c->args_hash = skip <= len ? mds_hash_bytes((const unsigned char *)args + skip, len - skip) : 0;
}

int mds_compound_defer_free(struct mds_compound *c, xdrproc_t proc, void *obj)
{
	struct mds_deferred_free *d = mds_arena_alloc(&c->arena, sizeof(*d));

	if (!d) {
		xdr_free(proc, obj);
		return -ENOMEM;
	}
	d->proc = proc;
	d->obj = obj;
	d->next = c->deferred;
	c->deferred = d;
	return 0;
}

size_t mds_compound_reply_room(const struct mds_compound *c)
{
	/* Room left after the op code and status every result carries. */
	size_t used = c->reply_bytes + 8;
	return c->reply_limit > used ? c->reply_limit - used : 0;
}

struct mds_txn *mds_compound_txn(struct mds_compound *c)
{
	struct mds_server *srv = c->srv;
	int rc;

	if (c->txn)
		return c->txn;
	if (srv->cur_txn) {
		/* Cannot happen: a COMPOUND ends its transaction before it yields the loop. */
		LOG_ERROR("xid %08x: a second transaction was requested while one is open", c->xid);
		return NULL;
	}
	if (!srv->batch_txn) {
		rc = mds_txn_begin(srv->store, MDS_TXN_RW, &srv->batch_txn);
		if (rc) {
			LOG_ERROR("pool %s: cannot begin a transaction: %s", srv->cfg.pool, mds_store_strerror(rc));
			srv->batch_txn = NULL;
			c->txn = NULL;
			return NULL;
		}
		srv->batch_dirty = 0;
	}
	rc = mds_txn_begin_nested(srv->batch_txn, &c->txn);
	if (rc) {
		LOG_ERROR("pool %s: cannot begin a transaction: %s", srv->cfg.pool, mds_store_strerror(rc));
		c->txn = NULL;
		return NULL;
	}
	srv->cur_txn = c->txn;
	srv->cur_dirty = &c->dirty;
	return c->txn;
}

/* End the compound's own transaction inside the batch: its changes join the batch (not durable
 * yet) when it made any, else they are dropped. */
static int txn_release(struct mds_compound *c)
{
	struct mds_server *srv = c->srv;
	int rc = 0;

	if (!c->txn)
		return 0;
	if (c->dirty) {
		rc = mds_txn_commit(c->txn);
		if (rc) {
			LOG_ERROR("pool %s: commit failed: %s (%s)", srv->cfg.pool, mds_store_strerror(rc),
				  mds_store_errstr(srv->store));
		} else {
			srv->batch_dirty = 1;
			srv->grouped_compounds++;
			c->batched = 1;
		}
	} else {
		mds_txn_abort(c->txn);
	}
	c->txn = NULL;
	c->dirty = 0;
	srv->cur_txn = NULL;
	srv->cur_dirty = NULL;
	return rc;
}

int mds_compound_txn_end(struct mds_compound *c)
{
	int dirty = c->dirty, rc = txn_release(c);

	/* Called before the compound yields (asynchronous I/O): what it changed is made durable
	 * now, with whatever else the batch holds. */
	if (rc == 0 && dirty)
		rc = mds_batch_commit(c->srv);
	return rc;
}

void mds_compound_free(struct mds_compound *c)
{
	struct mds_deferred_free *d;

	if (!c)
		return;
	if (c->txn) {
		c->dirty = 0;
		mds_compound_txn_end(c);
	}
	for (d = c->deferred; d; d = d->next)
		xdr_free(d->proc, (char *)d->obj);
	if (c->slot)
		c->slot->busy = 0;
	if (c->sess)
		mds_session_release(c->sess);
	if (c->clp)
		mds_client_release(c->clp);
	proto_compound_args_free(&c->pargs);
	mds_arena_release(&c->arena);
	mds_conn_put(c->conn);
	free(c);
}

static size_t compound_header_bytes(const struct mds_compound *c)
{
	size_t taglen = c->pargs.args.tag.utf8string_len;
	return RPC_REPLY_HDR_BYTES + 4 + 4 + ((taglen + 3) & ~(size_t)3) + 4;
}

/* Encode results 0..nres-1 after the reply header; sends it and caches it in the slot. */
static void send_reply(struct mds_compound *c, nfsstat4 status)
{
	struct proto_compound_reply r;
	struct proto_rpc_reply hdr;
	struct proto_msg m;
	const uint8_t *wire;
	size_t wlen, body_off;
	int rc;

	rc = proto_msg_init(&m, c->reply_bytes + 1024);
	if (rc)
		goto fail;
	proto_rpc_reply_accepted(&hdr, c->xid, SUCCESS);
	rc = proto_rpc_reply_encode(&m, &hdr);
	if (rc)
		goto fail_msg;
	body_off = proto_msg_len(&m);
	rc = proto_compound_reply_begin(&r, &m, c->pargs.args.tag.utf8string_val, c->pargs.args.tag.utf8string_len, 0);
	for (unsigned i = 0; rc == 0 && i < c->nres; i++)
		rc = proto_compound_reply_add(&r, &c->res[i]);
	if (rc == 0 && c->tail_op) {
		/* An error result is its opcode and status (RFC 7862's results are unions on the
		 * status with void error arms), so it is written directly. */
		u_int op = c->tail_op, st = NFS4ERR_NOTSUPP;
		if (!xdr_u_int(&m.xdr, &op) || !xdr_u_int(&m.xdr, &st))
			rc = -EMSGSIZE;
		r.nres++;
		status = NFS4ERR_NOTSUPP;
	}
	if (rc == 0)
		rc = proto_compound_reply_end(&r, status);
	if (rc)
		goto fail_msg;
	if (c->slot && c->sess && !c->sess->destroyed) {
		struct mds_slot *s = c->slot;
		size_t blen = proto_msg_len(&m) - body_off;
		free(s->reply);
		s->reply = NULL;
		s->has_reply = 0;
		s->cached_full = 0;
		/* Cache what the client asked us to, and small uncached-by-request replies too (a
		 * retry then gets the real answer instead of NFS4ERR_RETRY_UNCACHED_REP). */
		if (c->cachethis || proto_msg_len(&m) <= c->sess->fore.ca_maxresponsesize_cached) {
			s->reply = malloc(blen);
			if (s->reply) {
				memcpy(s->reply, proto_msg_data(&m) + body_off, blen);
				s->reply_len = blen;
				s->has_reply = 1;
				s->cached_full = 1;
			}
		}
		if (!s->has_reply)
			s->has_reply = 1; /* the slot answered: a retry gets NFS4ERR_RETRY_UNCACHED_REP */
	}
	rc = proto_msg_finish(&m, &wire, &wlen);
	if (rc == 0 && !c->conn->dead)
		mds_conn_send(c->conn, wire, wlen);
	proto_msg_destroy(&m);
	return;
fail_msg:
	proto_msg_destroy(&m);
fail:
	LOG_ERROR("xid %08x: cannot encode the reply (%d)", c->xid, rc);
	{
		struct proto_rpc_reply e;
		struct proto_msg em;
		proto_rpc_reply_accepted(&e, c->xid, SYSTEM_ERR);
		if (proto_msg_init(&em, 64) == 0) {
			if (proto_rpc_reply_encode(&em, &e) == 0 && proto_msg_finish(&em, &wire, &wlen) == 0)
				mds_conn_send(c->conn, wire, wlen);
			proto_msg_destroy(&em);
		}
	}
}

/* Append a status-only result for op (its arguments are not needed). */
static void add_status_result(struct mds_compound *c, uint32_t op, nfsstat4 status)
{
	nfs_resop4 *res = &c->res[c->nres++];

	memset(res, 0, sizeof(*res));
	res->resop = op;
	mds_res_set_status(res, status);
	c->reply_bytes += 8;
}

static nfsstat4 final_status(const struct mds_compound *c)
{
	return c->nres ? proto_resop_status(&c->res[c->nres - 1]) : NFS4_OK;
}

static void finish(struct mds_compound *c)
{
	struct mds_server *srv = c->srv;

	if (c->txn) {
		int dirty = c->dirty;
		if (txn_release(c) != 0 && dirty && c->nres) {
			/* The changes are not durable: the client must not believe they happened. */
			mds_res_set_status(&c->res[c->nres - 1], NFS4ERR_SERVERFAULT);
		}
	}
	if ((srv->batch_txn && srv->batch_dirty) || srv->meta_unsynced || srv->unsynced || srv->held) {
		/* Changes not durable yet, and this reply may tell of them (its own, or what it read of
		 * others'): it waits for the sync that makes them durable. */
		if (!srv->held)
			srv->held_tail = &srv->held;
		c->held_next = NULL;
		*srv->held_tail = c;
		srv->held_tail = &c->held_next;
		return;
	}
	send_reply(c, final_status(c));
	mds_compound_free(c);
}

/* Send the replies of list, in order; each says NFS4ERR_SERVERFAULT when failed (what it told of
 * may be lost). */
static void release(struct mds_compound *list, int failed)
{
	struct mds_compound *c, *next;

	for (c = list; c; c = next) {
		next = c->held_next;
		if (failed && c->nres)
			mds_res_set_status(&c->res[c->nres - 1], NFS4ERR_SERVERFAULT);
		send_reply(c, final_status(c));
		mds_compound_free(c);
	}
}

static struct mds_compound *take(struct mds_compound **head, struct mds_compound ***tail)
{
	struct mds_compound *list = *head;

	*head = NULL;
	*tail = head;
	return list;
}

/* Commit or drop the batch transaction: durably (full), or with its meta page unsynced. */
static int end_batch(struct mds_server *srv, int full)
{
	int rc = 0;

	if (!srv->batch_txn)
		return 0;
	if (srv->batch_dirty) {
		rc = full ? mds_txn_commit(srv->batch_txn) : mds_txn_commit_unsynced_meta(srv->batch_txn);
		srv->store_commits++;
		if (rc)
			LOG_ERROR("pool %s: commit failed: %s (%s)", srv->cfg.pool, mds_store_strerror(rc),
				  mds_store_errstr(srv->store));
	} else {
		mds_txn_abort(srv->batch_txn);
	}
	srv->batch_txn = NULL;
	srv->batch_dirty = 0;
	return rc;
}

int mds_batch_commit(struct mds_server *srv)
{
	struct mds_compound *unsynced, *held;
	int dirty = srv->batch_dirty, rc = 0, sync_rc = 0;

	if (srv->cur_txn) {
		/* Cannot happen: batches are committed between compounds, never inside one. */
		LOG_ERROR("pool %s: batch commit asked while a compound's transaction is open", srv->cfg.pool);
		return -EBUSY;
	}
	rc = end_batch(srv, 1);
	/* A full commit syncs the file before its meta page: earlier commits are durable with it. */
	if ((!dirty || rc) && srv->meta_unsynced) {
		sync_rc = mds_store_sync(srv->store);
		if (sync_rc)
			LOG_ERROR("pool %s: sync failed: %s", srv->cfg.pool, mds_store_errstr(srv->store));
	}
	srv->meta_unsynced = 0;
	unsynced = take(&srv->unsynced, &srv->unsynced_tail);
	held = take(&srv->held, &srv->held_tail);
	release(unsynced, sync_rc);
	release(held, rc || sync_rc);
	return rc ? rc : sync_rc;
}

int mds_batch_turn_end(struct mds_server *srv)
{
	struct mds_compound *list;
	uint64_t txnid;
	int rc;

	if (srv->cur_txn)
		return 0;
	if (!srv->batch_txn || !srv->batch_dirty) {
		if (srv->meta_unsynced || srv->unsynced || srv->held)
			mds_batch_commit(srv);
		else
			end_batch(srv, 1);
		return 0;
	}
	txnid = mds_store_last_txnid(srv->store);
	rc = end_batch(srv, 0);
	if (rc == 0 && mds_store_last_txnid(srv->store) == txnid) {
		/* LMDB had nothing to write (a compound marked dirty changed nothing): no sync happened
		 * either, so the batch is made durable the plain way. */
		srv->meta_unsynced = srv->meta_unsynced || srv->unsynced || srv->held;
		mds_batch_commit(srv);
		return 0;
	}
	if (rc) {
		/* Fall back on a sync: what is committed is made durable, the batch's replies fail. */
		int sync_rc = srv->meta_unsynced ? mds_store_sync(srv->store) : 0;
		srv->meta_unsynced = 0;
		release(take(&srv->unsynced, &srv->unsynced_tail), sync_rc);
		release(take(&srv->held, &srv->held_tail), 1);
		return 0;
	}
	/* This commit synced the file before writing its meta page: the earlier commit's meta page
	 * is on disk, and with it the replies that waited for it. */
	release(take(&srv->unsynced, &srv->unsynced_tail), 0);
	list = take(&srv->held, &srv->held_tail);
	srv->unsynced = list;
	srv->unsynced_tail = &srv->unsynced;
	while (*srv->unsynced_tail)
		srv->unsynced_tail = &(*srv->unsynced_tail)->held_next;
	srv->meta_unsynced = 1;
	return 1;
}

/* RFC 8881 §2.10.6 / §18.46: where each op may appear. Returns NFS4_OK or the op's error. */
static nfsstat4 check_position(struct mds_compound *c, unsigned i, uint32_t op)
{
	const struct mds_op_desc *d = &mds_op_table[op];

	if (i == 0)
		return NFS4_OK; /* checked by run() */
	if (op == OP_SEQUENCE)
		return NFS4ERR_SEQUENCE_POS;
	if (!c->sess)
		return NFS4ERR_NOT_ONLY_OP; /* a session-less op followed by others */
	if (op == OP_BIND_CONN_TO_SESSION)
		return NFS4ERR_NOT_ONLY_OP;
	(void)d;
	return NFS4_OK;
}

/* Size of op i's result, or 0 for "do not account" (the handler already did). */
static int account_result(struct mds_compound *c, nfs_resop4 *res)
{
	size_t sz = proto_resop_size(res);

	if (c->reply_bytes + sz > c->reply_limit)
		return -EMSGSIZE;
	c->reply_bytes += sz;
	return 0;
}

static void run_ops(struct mds_compound *c);

/* Record op c->op_index's status and decide whether to go on. */
static int op_done(struct mds_compound *c, nfsstat4 status)
{
	unsigned i = c->op_index;
	nfs_resop4 *res = &c->res[i];

	mds_res_set_status(res, status);
	if (account_result(c, res) != 0) {
		/* The result does not fit in the reply the client can take (or have cached). */
		memset(&res->nfs_resop4_u, 0, sizeof(res->nfs_resop4_u));
		status = c->cachethis && c->reply_limit < c->sess->fore.ca_maxresponsesize
				 ? NFS4ERR_REP_TOO_BIG_TO_CACHE
				 : NFS4ERR_REP_TOO_BIG;
		if (res->resop == OP_SEQUENCE && c->slot) {
			/* SEQUENCE's own result does not fit: the slot was not really used. */
			c->slot->seqid = c->slot_prev_seqid;
			c->slot->busy = 0;
			c->slot = NULL;
		}
		mds_res_set_status(res, status);
		c->reply_bytes += 8;
	}
	c->nres = i + 1;
	c->op_index = i + 1;
	return status == NFS4_OK;
}

static nfsstat4 dispatch(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	uint32_t op = arg->argop;
	const struct mds_op_desc *d;

	if (op >= MDS_OP_TABLE_SIZE || !mds_op_table[op].fn)
		return NFS4ERR_OP_ILLEGAL;
	d = &mds_op_table[op];
	if ((d->flags & MDS_OPF_FH) && !c->cfh.set)
		return NFS4ERR_NOFILEHANDLE;
	if ((d->flags & MDS_OPF_SAVEDFH) && !c->sfh.set)
		return NFS4ERR_NOFILEHANDLE;
	return d->fn(c, arg, res);
}

static void run_ops(struct mds_compound *c)
{
	COMPOUND4args *a = &c->pargs.args;
	unsigned n = a->argarray.argarray_len;

	while (c->op_index < n) {
		unsigned i = c->op_index;
		nfs_argop4 *arg = &a->argarray.argarray_val[i];
		nfs_resop4 *res = &c->res[i];
		nfsstat4 st;

		memset(res, 0, sizeof(*res));
		res->resop = arg->argop;
		st = check_position(c, i, arg->argop);
		if (st == NFS4_OK)
			st = dispatch(c, arg, res);
		if (st == MDS_ASYNC)
			return; /* mds_compound_resume() continues */
		if (c->replayed) {
			mds_compound_free(c);
			return;
		}
		if (!op_done(c, st)) {
			finish(c);
			return;
		}
	}
	/* Every decoded op succeeded; decoding may have stopped at a bad one. */
	if (c->pargs.stop == PROTO_COMPOUND_ILLEGAL && c->minorversion >= 2 && c->pargs.stop_opcode >= OP42_FIRST &&
	    c->pargs.stop_opcode <= OP42_LAST) {
		c->tail_op = c->pargs.stop_opcode;
		c->reply_bytes += 8;
	} else if (c->pargs.stop == PROTO_COMPOUND_ILLEGAL)
		add_status_result(c, OP_ILLEGAL, NFS4ERR_OP_ILLEGAL);
	else if (c->pargs.stop == PROTO_COMPOUND_BADXDR)
		add_status_result(c, c->pargs.stop_opcode, NFS4ERR_BADXDR);
	else if (c->pargs.stop == PROTO_COMPOUND_TOO_MANY)
		add_status_result(c, n < c->pargs.opcount && n > 0 ? OP_GETATTR : OP_ILLEGAL, NFS4ERR_TOO_MANY_OPS);
	finish(c);
}

void mds_compound_resume(struct mds_compound *c, nfsstat4 status)
{
	c->op_ctx = NULL;
	if (!op_done(c, status)) {
		finish(c);
		return;
	}
	run_ops(c);
}

void mds_compound_run(struct mds_compound *c)
{
	COMPOUND4args *a = &c->pargs.args;
	unsigned n = a->argarray.argarray_len;
	unsigned total = n + 1;
	uint32_t first;

	c->minorversion = a->minorversion;
	c->reply_bytes = compound_header_bytes(c);
	c->reply_limit = SESSIONLESS_REPLY_MAX;
	c->res = mds_arena_calloc(&c->arena, total, sizeof(*c->res));
	if (!c->res) {
		finish(c);
		return;
	}
	/* RFC 8881 §16.2.3: an unsupported minor version gets an empty result array. NFSv4.2
	 * (RFC 7862) adds only optional features: we serve minor version 2 as 4.1 plus none. */
	if (a->minorversion != 1 && a->minorversion != 2) {
		c->nres = 0;
		c->reply_bytes = compound_header_bytes(c);
		send_reply(c, NFS4ERR_MINOR_VERS_MISMATCH);
		mds_compound_free(c);
		return;
	}
	if (c->pargs.opcount == 0) {
		finish(c);
		return;
	}
	if (n == 0) {
		/* The very first op could not be decoded. */
		if (c->pargs.stop == PROTO_COMPOUND_ILLEGAL && a->minorversion >= 2 &&
		    c->pargs.stop_opcode >= OP42_FIRST && c->pargs.stop_opcode <= OP42_LAST) {
			/* Not in a session either: it is a 4.2 op we do not offer, outside SEQUENCE. */
			c->tail_op = c->pargs.stop_opcode;
			c->reply_bytes += 8;
		} else if (c->pargs.stop == PROTO_COMPOUND_BADXDR)
			add_status_result(c, c->pargs.stop_opcode, NFS4ERR_BADXDR);
		else
			add_status_result(c, OP_ILLEGAL, NFS4ERR_OP_ILLEGAL);
		finish(c);
		return;
	}
	first = a->argarray.argarray_val[0].argop;
	if (first != OP_SEQUENCE) {
		if (first < MDS_OP_TABLE_SIZE && (mds_op_table[first].flags & MDS_OPF_NOSESSION)) {
			if (c->pargs.opcount > 1) {
				add_status_result(c, first, NFS4ERR_NOT_ONLY_OP);
				finish(c);
				return;
			}
		} else if (first < MDS_OP_TABLE_SIZE && mds_op_table[first].fn) {
			add_status_result(c, first, NFS4ERR_OP_NOT_IN_SESSION);
			finish(c);
			return;
		}
	} else {
		c->reply_limit = DEFAULT_REPLY_MAX;
	}
	c->op_index = 0;
	run_ops(c);
}
