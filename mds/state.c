/* In-memory NFSv4.1 state: clients with their sessions, owners and stateids, files with their
 * opens and locks, leases and their expiry. Objects referenced by a running COMPOUND are kept
 * alive by reference counts and freed when the last reference goes. */
#include "mds/state.h"

#include "mds/backchannel.h"
#include "mds/layout.h"
#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void mds_cred_principal(const struct mds_cred *cred, char *out, size_t len)
{
	if (cred->flavor == AUTH_SYS)
		snprintf(out, len, "sys:%u@%.64s", cred->raw_uid, cred->machine);
	else
		snprintf(out, len, "none");
}

/* ---- clients ---------------------------------------------------------------------------- */

struct mds_client *mds_client_find(struct mds_server *srv, clientid4 id)
{
	struct mds_client *clp = mds_map_find(&srv->clients, &id, sizeof(id));
	return clp && !clp->destroyed ? clp : NULL;
}

struct mds_client *mds_client_conf_by_owner(struct mds_server *srv, const void *owner, uint32_t len)
{
	return mds_map_find(&srv->conf_by_owner, owner, len);
}

struct mds_client *mds_client_unconf_by_owner(struct mds_server *srv, const void *owner, uint32_t len)
{
	return mds_map_find(&srv->unconf_by_owner, owner, len);
}

struct mds_client *mds_client_new(struct mds_server *srv, const unsigned char *owner, uint32_t owner_len,
				  const unsigned char *verifier, const char *principal)
{
	struct mds_client *clp = calloc(1, sizeof(*clp));

	if (!clp)
		return NULL;
	proto_list_init(&clp->sessions);
	clp->owner = malloc(owner_len ? owner_len : 1);
	if (!clp->owner) {
		free(clp);
		return NULL;
	}
	memcpy(clp->owner, owner, owner_len);
	clp->owner_len = owner_len;
	memcpy(clp->verifier, verifier, NFS4_VERIFIER_SIZE);
	snprintf(clp->principal, sizeof(clp->principal), "%s", principal);
	/* The boot counter in the high half: a clientid from an earlier instance is never reused. */
	clp->clientid = ((uint64_t)(uint32_t)srv->boot << 32) | srv->next_clientid++;
	clp->cs_seq = 1;
	mds_map_init(&clp->openowners);
	mds_map_init(&clp->lockowners);
	if (mds_map_insert(&srv->clients, &clp->clientid, sizeof(clp->clientid), clp) != 0 ||
	    mds_map_insert(&srv->unconf_by_owner, owner, owner_len, clp) != 0) {
		mds_map_del(&srv->clients, &clp->clientid, sizeof(clp->clientid));
		free(clp->owner);
		free(clp);
		return NULL;
	}
	mds_client_renew(srv, clp);
	return clp;
}

void mds_client_renew(struct mds_server *srv, struct mds_client *clp)
{
	clp->lease_expire_ms = mds_loop_now_ms() + (uint64_t)mds_lease_s(srv) * 1000;
	clp->expired = 0;
}

int mds_client_has_state(const struct mds_client *clp)
{
	return !proto_list_empty(&clp->sessions) || clp->states != NULL;
}

void mds_client_confirm(struct mds_server *srv, struct mds_client *clp)
{
	struct mds_client *old = mds_client_conf_by_owner(srv, clp->owner, clp->owner_len);

	if (old && old != clp)
		mds_client_destroy(srv, old, 0);
	mds_map_del(&srv->unconf_by_owner, clp->owner, clp->owner_len);
	mds_map_insert(&srv->conf_by_owner, clp->owner, clp->owner_len, clp);
	clp->confirmed = 1;
}

struct del_rec_arg {
	clientid4 id;
};

static int del_client_rec(struct mds_txn *t, void *arg)
{
	struct del_rec_arg *a = arg;
	int rc = mds_client_del(t, a->id);
	return rc == -ENOENT ? 0 : rc;
}

static void free_owner_map(struct mds_map *m)
{
	struct mds_map_iter it;

	for (struct mds_owner *ow = mds_map_first(m, &it); ow; ow = mds_map_next(m, &it)) {
		free(ow->owner);
		free(ow);
	}
	mds_map_clear(m);
}

static void client_free(struct mds_client *clp)
{
	free_owner_map(&clp->openowners);
	free_owner_map(&clp->lockowners);
	if (clp->cs_cached)
		xdr_free((xdrproc_t)xdr_CREATE_SESSION4res, (char *)&clp->cs_res);
	free(clp->owner);
	free(clp);
}

void mds_client_destroy(struct mds_server *srv, struct mds_client *clp, int del_rec)
{
	if (clp->destroyed)
		return;
	LOG_DEBUG("client %016llx: destroyed", (unsigned long long)clp->clientid);
	clp->destroyed = 1;
	while (!proto_list_empty(&clp->sessions))
		mds_session_destroy(srv, proto_list_first(&clp->sessions, struct mds_session, in_client));
	/* Layouts first: revoking them needs the files and the client as they are. */
	mds_lo_client_gone(srv, clp);
	/* Locks before opens: a lock stateid refers to its open. */
	for (int pass = 0; pass < 2; pass++) {
		struct mds_stateid *st = clp->states, *n;
		for (; st; st = n) {
			n = st->next_in_client;
			if ((pass == 0) != (st->type == MDS_ST_OPEN))
				mds_stateid_free(srv, st);
		}
	}
	if (clp->confirmed) {
		if (mds_map_find(&srv->conf_by_owner, clp->owner, clp->owner_len) == clp)
			mds_map_del(&srv->conf_by_owner, clp->owner, clp->owner_len);
	} else if (mds_map_find(&srv->unconf_by_owner, clp->owner, clp->owner_len) == clp) {
		mds_map_del(&srv->unconf_by_owner, clp->owner, clp->owner_len);
	}
	mds_map_del(&srv->clients, &clp->clientid, sizeof(clp->clientid));
	if (del_rec && clp->persisted) {
		struct del_rec_arg a = { clp->clientid };
		int rc = mds_with_txn(srv, del_client_rec, &a);
		if (rc)
			LOG_ERROR("client %016llx: cannot delete its record: %s",
				  (unsigned long long)clp->clientid, mds_store_strerror(rc));
	}
	if (clp->refs == 0)
		client_free(clp);
}

/* A COMPOUND that held the client finished: free it if it was destroyed meanwhile. */
void mds_client_release(struct mds_client *clp)
{
	if (--clp->refs == 0 && clp->destroyed)
		client_free(clp);
}

/* ---- sessions ------------------------------------------------------------------------------ */

struct mds_session *mds_session_find(struct mds_server *srv, const unsigned char *id)
{
	struct mds_session *s = mds_map_find(&srv->sessions, id, NFS4_SESSIONID_SIZE);
	return s && !s->destroyed ? s : NULL;
}

struct mds_session *mds_session_new(struct mds_server *srv, struct mds_client *clp,
				    const channel_attrs4 *fore, const channel_attrs4 *back)
{
	struct mds_session *s = calloc(1, sizeof(*s));
	uint32_t n;

	if (!s)
		return NULL;
	s->fore = *fore;
	s->back = *back;
	s->fore.ca_rdma_ird.ca_rdma_ird_len = 0;
	s->fore.ca_rdma_ird.ca_rdma_ird_val = NULL;
	s->back.ca_rdma_ird.ca_rdma_ird_len = 0;
	s->back.ca_rdma_ird.ca_rdma_ird_val = NULL;
	s->nslots = fore->ca_maxrequests;
	s->slots = calloc(s->nslots, sizeof(*s->slots));
	if (!s->slots) {
		free(s);
		return NULL;
	}
	/* clientid, then a per-instance counter: unique for this server's life. */
	memcpy(s->id, &clp->clientid, 8);
	n = srv->next_session++;
	put_be32(s->id + 8, n);
	put_be32(s->id + 12, (uint32_t)srv->boot);
	s->clp = clp;
	s->cb_seqid = 1;
	if (mds_map_insert(&srv->sessions, s->id, sizeof(s->id), s) != 0) {
		free(s->slots);
		free(s);
		return NULL;
	}
	proto_list_add(&clp->sessions, &s->in_client);
	return s;
}

static void session_free(struct mds_session *s)
{
	for (uint32_t i = 0; i < s->nslots; i++)
		free(s->slots[i].reply);
	free(s->slots);
	free(s);
}

void mds_session_destroy(struct mds_server *srv, struct mds_session *s)
{
	if (s->destroyed)
		return;
	s->destroyed = 1;
	LOG_DEBUG("session %08x of client %016llx destroyed", get_be32(s->id + 8),
		  (unsigned long long)s->clp->clientid);
	proto_list_del(&s->in_client);
	mds_map_del(&srv->sessions, s->id, sizeof(s->id));
	mds_cb_session_gone(srv, s);
	if (s->bc_conn && s->bc_conn->bc_session == s)
		s->bc_conn->bc_session = NULL;
	s->bc_conn = NULL;
	if (s->refs == 0)
		session_free(s);
}

void mds_session_release(struct mds_session *s)
{
	if (--s->refs == 0 && s->destroyed)
		session_free(s);
}

int mds_session_bind_conn(struct mds_session *s, struct mds_conn *conn)
{
	if (mds_session_conn_bound(s, conn))
		return 0;
	if (s->nconns >= MDS_MAX_CONN_PER_SESSION) {
		/* Forget the oldest binding: a client that reconnects often must not run out. */
		memmove(s->conns, s->conns + 1, (MDS_MAX_CONN_PER_SESSION - 1) * sizeof(s->conns[0]));
		s->nconns--;
	}
	s->conns[s->nconns++] = conn;
	return 0;
}

int mds_session_conn_bound(const struct mds_session *s, const struct mds_conn *conn)
{
	for (unsigned i = 0; i < s->nconns; i++)
		if (s->conns[i] == conn)
			return 1;
	return 0;
}

void mds_session_set_backchannel(struct mds_session *s, struct mds_conn *conn)
{
	s->bc_conn = conn;
	s->cb_fault = 0;
	conn->bc_session = s;
}

void mds_state_conn_gone(struct mds_server *srv, struct mds_conn *conn)
{
	struct mds_map_iter it;

	for (struct mds_session *s = mds_map_first(&srv->sessions, &it); s; s = mds_map_next(&srv->sessions, &it)) {
		for (unsigned i = 0; i < s->nconns; i++) {
			if (s->conns[i] == conn) {
				memmove(s->conns + i, s->conns + i + 1, (s->nconns - i - 1) * sizeof(s->conns[0]));
				s->nconns--;
				break;
			}
		}
		if (s->bc_conn == conn) {
			s->bc_conn = NULL;
			mds_cb_conn_gone(srv, s);
		}
	}
	conn->bc_session = NULL;
	mds_cb_fail_conn(srv, conn);
}

/* ---- files ---------------------------------------------------------------------------------- */

struct mds_file *mds_file_find(struct mds_server *srv, uint64_t fileid)
{
	return mds_map_find(&srv->files, &fileid, sizeof(fileid));
}

struct mds_file *mds_file_get(struct mds_server *srv, uint64_t fileid)
{
	struct mds_file *f = mds_file_find(srv, fileid);

	if (f) {
		f->refs++;
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fileid = fileid;
	f->refs = 1;
	proto_list_init(&f->locks);
	if (mds_map_insert(&srv->files, &f->fileid, sizeof(f->fileid), f) != 0) {
		free(f);
		return NULL;
	}
	return f;
}

struct destroy_arg {
	uint64_t fileid;
	unsigned flags;
};

static int destroy_orphan_txn(struct mds_txn *t, void *arg)
{
	struct destroy_arg *a = arg;
	int rc = mds_inode_destroy(t, a->fileid, a->flags, NULL);
	return rc == -ENOENT || rc == -EBUSY ? 0 : rc;
}

void mds_file_put(struct mds_server *srv, struct mds_file *f)
{
	if (--f->refs > 0)
		return;
	if (f->orphaned) {
		/* The last open of a removed file went away: now its inode and blocks go. */
		struct destroy_arg a = { f->fileid, mds_lo_free_flags(srv, f, 0) };
		int rc = mds_with_txn(srv, destroy_orphan_txn, &a);
		if (rc)
			LOG_ERROR("file %llu: cannot remove the orphan: %s", (unsigned long long)f->fileid,
				  mds_store_strerror(rc));
	}
	mds_map_del(&srv->files, &f->fileid, sizeof(f->fileid));
	free(f);
}

/* ---- owners ---------------------------------------------------------------------------------- */

struct mds_owner *mds_owner_lookup(struct mds_server *srv, struct mds_client *clp, int is_lock,
				const void *owner, uint32_t len, int create)
{
	struct mds_map *m = is_lock ? &clp->lockowners : &clp->openowners;
	struct mds_owner *ow = mds_map_find(m, owner, len);
	(void)srv;

	if (ow || !create)
		return ow;
	ow = calloc(1, sizeof(*ow));
	if (!ow)
		return NULL;
	ow->owner = malloc(len ? len : 1);
	if (!ow->owner) {
		free(ow);
		return NULL;
	}
	memcpy(ow->owner, owner, len);
	ow->owner_len = len;
	ow->clp = clp;
	ow->is_lock = is_lock;
	if (mds_map_insert(m, owner, len, ow) != 0) {
		free(ow->owner);
		free(ow);
		return NULL;
	}
	return ow;
}

static void owner_unref(struct mds_owner *ow)
{
	struct mds_map *m;

	if (--ow->nstates > 0)
		return;
	/* Open owners stay while their client lives (cheap, and clients reuse them); lock owners
	 * go with their last stateid. */
	if (!ow->is_lock)
		return;
	m = &ow->clp->lockowners;
	mds_map_del(m, ow->owner, ow->owner_len);
	free(ow->owner);
	free(ow);
}

/* ---- stateids -------------------------------------------------------------------------------- */

struct mds_stateid *mds_stateid_new(struct mds_server *srv, struct mds_client *clp, struct mds_file *f,
				    struct mds_owner *ow, enum mds_state_type type)
{
	struct mds_stateid *st = calloc(1, sizeof(*st));
	uint64_t n;

	if (!st)
		return NULL;
	st->type = type;
	st->seqid = 1;
	put_be32(st->other, (uint32_t)srv->boot);
	n = srv->next_stateid++;
	put_be32(st->other + 4, (uint32_t)(n >> 32));
	put_be32(st->other + 8, (uint32_t)n);
	st->other[4] = (unsigned char)(st->other[4] | (type << 4)); /* the type, for readable traces */
	if (mds_map_insert(&srv->stateids, st->other, sizeof(st->other), st) != 0) {
		free(st);
		return NULL;
	}
	st->clp = clp;
	st->next_in_client = clp->states;
	if (clp->states)
		clp->states->prev_in_client = st;
	clp->states = st;
	st->file = f;
	if (f) {
		f->refs++;
		st->next_in_file = f->states;
		if (f->states)
			f->states->prev_in_file = st;
		f->states = st;
	}
	st->owner = ow;
	if (ow)
		ow->nstates++;
	return st;
}

void mds_stateid_free(struct mds_server *srv, struct mds_stateid *st)
{
	struct mds_client *clp = st->clp;
	struct mds_file *f = st->file;

	if (st->type == MDS_ST_OPEN && f) {
		/* Lock stateids that came from this open go with it. */
		for (struct mds_stateid *l = f->states, *n; l; l = n) {
			n = l->next_in_file;
			if (l->type == MDS_ST_LOCK && l->open == st)
				mds_stateid_free(srv, l);
		}
		f = st->file;
		mds_lo_open_closed(srv, st);
	}
	if (st->type == MDS_ST_LOCK && f)
		mds_locks_release_state(f, st);
	if (st->type == MDS_ST_DELEG)
		mds_deleg_freed(srv, st);
	if (st->type == MDS_ST_LAYOUT)
		mds_lo_stateid_freed(srv, st);
	mds_map_del(&srv->stateids, st->other, sizeof(st->other));
	if (st->prev_in_client)
		st->prev_in_client->next_in_client = st->next_in_client;
	else
		clp->states = st->next_in_client;
	if (st->next_in_client)
		st->next_in_client->prev_in_client = st->prev_in_client;
	if (f) {
		if (st->prev_in_file)
			st->prev_in_file->next_in_file = st->next_in_file;
		else
			f->states = st->next_in_file;
		if (st->next_in_file)
			st->next_in_file->prev_in_file = st->prev_in_file;
	}
	if (st->owner)
		owner_unref(st->owner);
	free(st);
	if (f)
		mds_file_put(srv, f);
}

void mds_stateid_export(const struct mds_stateid *st, stateid4 *out)
{
	out->seqid = st->seqid;
	memcpy(out->other, st->other, NFS4_OTHER_SIZE);
}

struct mds_stateid *mds_stateid_find(struct mds_server *srv, const stateid4 *sid, int *stale)
{
	const unsigned char *o = (const unsigned char *)sid->other;

	*stale = get_be32(o) != (uint32_t)srv->boot;
	if (*stale)
		return NULL;
	return mds_map_find(&srv->stateids, o, NFS4_OTHER_SIZE);
}

enum mds_special_sid mds_stateid_special(const stateid4 *sid)
{
	static const unsigned char zero[NFS4_OTHER_SIZE], ones[NFS4_OTHER_SIZE] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};

	if (memcmp(sid->other, zero, NFS4_OTHER_SIZE) == 0) {
		if (sid->seqid == 0)
			return MDS_SID_ANON;
		if (sid->seqid == 1)
			return MDS_SID_CURRENT;
		if (sid->seqid == NFS4_UINT32_MAX)
			return MDS_SID_INVALID;
		return MDS_SID_BAD;
	}
	if (memcmp(sid->other, ones, NFS4_OTHER_SIZE) == 0)
		return sid->seqid == NFS4_UINT32_MAX ? MDS_SID_BYPASS : MDS_SID_BAD;
	return MDS_SID_NORMAL;
}

struct mds_stateid *mds_open_find(struct mds_file *f, struct mds_owner *ow)
{
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file)
		if (st->type == MDS_ST_OPEN && st->owner == ow && !st->revoked)
			return st;
	return NULL;
}

struct mds_stateid *mds_lockstate_find(struct mds_file *f, struct mds_owner *ow)
{
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file)
		if (st->type == MDS_ST_LOCK && st->owner == ow)
			return st;
	return NULL;
}

void mds_file_share_union(const struct mds_file *f, const struct mds_stateid *except, uint32_t *access,
			  uint32_t *deny)
{
	*access = 0;
	*deny = 0;
	for (const struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		if (st->type != MDS_ST_OPEN || st == except || st->revoked)
			continue;
		*access |= st->share_access;
		*deny |= st->share_deny;
	}
}

void mds_locks_release_state(struct mds_file *f, struct mds_stateid *st)
{
	proto_list_for_each_safe(l, &f->locks, struct mds_lock, link)
		if (l->st == st) {
			proto_list_del(&l->link);
			free(l);
		}
}

/* ---- leases ---------------------------------------------------------------------------------- */

void mds_state_expire(struct mds_server *srv)
{
	uint64_t now = mds_loop_now_ms();
	struct mds_map_iter it;
	struct mds_client *doomed[256];
	int n = 0;

	for (struct mds_client *clp = mds_map_first(&srv->clients, &it); clp && n < 256;
	     clp = mds_map_next(&srv->clients, &it)) {
		if (clp->destroyed || clp->refs || now < clp->lease_expire_ms)
			continue;
		doomed[n++] = clp;
	}
	for (int i = 0; i < n; i++) {
		struct mds_client *clp = doomed[i];
		LOG_INFO("client %016llx: lease expired%s", (unsigned long long)clp->clientid,
			 clp->confirmed ? ", its state is released" : " before confirmation");
		/* A confirmed client keeps its store record through one more grace: it may still
		 * reclaim after a restart only while the record exists; expiry ends that too. */
		mds_client_destroy(srv, clp, 1);
	}
	mds_deleg_tick(srv, now);
}

void mds_state_free_all(struct mds_server *srv)
{
	struct mds_map_iter it;

	/* Shutdown: in-memory state goes; client records stay in the store for the next grace. */
	for (struct mds_client *clp = mds_map_first(&srv->clients, &it); clp; clp = mds_map_next(&srv->clients, &it)) {
		clp->refs = 0;
		clp->persisted = 0; /* keep the record */
		mds_client_destroy(srv, clp, 0);
	}
}
