/* Client records for recovery: each confirmed client's owner, verifier, principal and whether it
 * completed RECLAIM_COMPLETE, so that after a restart the server knows who may reclaim in grace.
 * Record: verifier(8) flags(4) owner_len(4) principal_len(4) owner principal, little-endian. */
#include "mds/store_int.h"

#include <errno.h>
#include <string.h>

#define CLIENT_HDR 20

int mds_client_write(struct mds_txn *t, const struct mds_client_rec *rec)
{
	uint8_t k[8], v[CLIENT_HDR + MDS_OWNER_MAX + MDS_PRINCIPAL_MAX];
	MDB_txn *saved;
	int rc;

	if (rec->owner_len == 0 || rec->owner_len > MDS_OWNER_MAX ||
	    rec->principal_len > MDS_PRINCIPAL_MAX)
		return st_fail(t->st, -EINVAL, "client %llu: owner %u bytes, principal %u bytes",
			       (unsigned long long)rec->clientid, rec->owner_len, rec->principal_len);
	rc = st_op_begin(t, &saved);
	if (rc)
		return rc;
	be64_put(k, rec->clientid);
	memcpy(v, rec->verifier, 8);
	le32_put(v + 8, rec->flags);
	le32_put(v + 12, rec->owner_len);
	le32_put(v + 16, rec->principal_len);
	memcpy(v + CLIENT_HDR, rec->owner, rec->owner_len);
	memcpy(v + CLIENT_HDR + rec->owner_len, rec->principal, rec->principal_len);
	rc = st_write(t, t->st->clients, k, 8, v, CLIENT_HDR + rec->owner_len + rec->principal_len, 0,
		    "client put");
	return st_op_end(t, saved, rc);
}

static int client_decode(struct mds_txn *t, const MDB_val *k, const MDB_val *v,
			 struct mds_client_rec *out)
{
	const uint8_t *p = v->mv_data;
	uint32_t ol, pl;

	if (k->mv_size != 8 || v->mv_size < CLIENT_HDR)
		goto bad;
	ol = le32_get(p + 12);
	pl = le32_get(p + 16);
	if (ol > MDS_OWNER_MAX || pl > MDS_PRINCIPAL_MAX || v->mv_size != CLIENT_HDR + ol + pl)
		goto bad;
	out->clientid = be64_get(k->mv_data);
	memcpy(out->verifier, p, 8);
	out->flags = le32_get(p + 8);
	out->owner_len = ol;
	out->principal_len = pl;
	memcpy(out->owner, p + CLIENT_HDR, ol);
	memcpy(out->principal, p + CLIENT_HDR + ol, pl);
	return 0;
bad:
	return st_fail(t->st, -EUCLEAN, "client record malformed");
}

int mds_client_read(struct mds_txn *t, uint64_t clientid, struct mds_client_rec *out)
{
	uint8_t k[8];
	MDB_val key = { 8, k }, v;
	int rc;

	be64_put(k, clientid);
	rc = st_read(t, t->st->clients, k, 8, &v, "client get");
	return rc ? rc : client_decode(t, &key, &v, out);
}

int mds_client_del(struct mds_txn *t, uint64_t clientid)
{
	uint8_t k[8];
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	be64_put(k, clientid);
	rc = st_del(t, t->st->clients, k, 8, "client del");
	return st_op_end(t, saved, rc);
}

struct client_walk {
	struct mds_txn *t;
	int (*cb)(void *arg, const struct mds_client_rec *rec);
	void *arg;
};

static int client_one(void *arg, const MDB_val *k, const MDB_val *v)
{
	struct client_walk *w = arg;
	struct mds_client_rec rec;
	int r = client_decode(w->t, k, v, &rec);

	return r ? r : w->cb(w->arg, &rec);
}

int mds_client_iter(struct mds_txn *t, int (*cb)(void *arg, const struct mds_client_rec *rec),
		    void *arg)
{
	struct client_walk w = { t, cb, arg };

	return st_walk(t, t->st->clients, client_one, &w);
}
