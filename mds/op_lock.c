/* Byte-range locks (RFC 8881 §18.10-18.12, §9): POSIX-style advisory locks per lock owner and
 * file; a new lock replaces the owner's own overlapping ranges; a conflict is a lock of another
 * owner overlapping the range where either lock is a write lock, answered NFS4ERR_DENIED with
 * that lock's range, type and owner. */
#include "mds/compound.h"
#include "mds/ops.h"
#include "mds/state.h"

#include <stdlib.h>
#include <string.h>

#define END_OF_FILE NFS4_UINT64_MAX

/* [offset, end) with end END_OF_FILE meaning "to the end". NFS4_OK or NFS4ERR_INVAL. */
static nfsstat4 lock_range(uint64_t offset, uint64_t length, uint64_t *end)
{
	if (length == 0)
		return NFS4ERR_INVAL;
	if (length == NFS4_UINT64_MAX) {
		*end = END_OF_FILE;
		return NFS4_OK;
	}
	if (offset > NFS4_UINT64_MAX - length)
		return NFS4ERR_INVAL;
	*end = offset + length;
	return NFS4_OK;
}

/* A lock type and range as LOCK, LOCKT and LOCKU take them; *end gets the range's end. */
static nfsstat4 lock_args(nfs_lock_type4 type, uint64_t offset, uint64_t length, uint64_t *end)
{
	if (type < READ_LT || type > WRITEW_LT)
		return NFS4ERR_INVAL;
	return lock_range(offset, length, end);
}

/* LOCK and LOCKT: a client's session, then the lock type and range. */
static nfsstat4 lock_start(const struct mds_compound *c, nfs_lock_type4 type, uint64_t offset, uint64_t length,
			   uint64_t *end)
{
	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	return lock_args(type, offset, length, end);
}

static uint64_t lock_end(const struct mds_lock *l)
{
	return l->length == NFS4_UINT64_MAX ? END_OF_FILE : l->offset + l->length;
}

static int overlaps(const struct mds_lock *l, uint64_t off, uint64_t end)
{
	return l->offset < end && off < lock_end(l);
}

static int is_write(nfs_lock_type4 t)
{
	return t == WRITE_LT || t == WRITEW_LT;
}

/* The first lock of another owner conflicting with [off, end) of type write. */
static struct mds_lock *find_conflict(struct mds_file *f, const struct mds_owner *ow, uint64_t off, uint64_t end,
				      int write)
{
	proto_list_for_each(l, &f->locks, struct mds_lock, link) {
		if (l->st->owner == ow)
			continue;
		if (!overlaps(l, off, end))
			continue;
		if (write || l->write)
			return l;
	}
	return NULL;
}

/* Find a conflict against a lock owner that has no state yet (LOCKT): compare owners by value. */
static struct mds_lock *find_conflict_named(struct mds_file *f, const struct mds_client *clp, const void *owner,
					    uint32_t olen, uint64_t off, uint64_t end, int write)
{
	proto_list_for_each(l, &f->locks, struct mds_lock, link) {
		const struct mds_owner *o = l->st->owner;
		if (o->clp == clp && o->owner_len == olen && memcmp(o->owner, owner, olen) == 0)
			continue;
		if (overlaps(l, off, end) && (write || l->write))
			return l;
	}
	return NULL;
}

static void fill_denied(struct mds_compound *c, const struct mds_lock *l, LOCK4denied *d)
{
	d->offset = l->offset;
	d->length = l->length;
	d->locktype = l->write ? WRITE_LT : READ_LT;
	d->owner.clientid = l->st->owner->clp->clientid;
	d->owner.owner.owner_len = l->st->owner->owner_len;
	d->owner.owner.owner_val = mds_arena_dup(&c->arena, l->st->owner->owner, l->st->owner->owner_len);
}

static struct mds_lock *new_lock(struct mds_stateid *st, uint64_t off, uint64_t end, int write)
{
	struct mds_lock *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	proto_list_init(&l->link);
	l->st = st;
	l->offset = off;
	l->length = end == END_OF_FILE ? NFS4_UINT64_MAX : end - off;
	l->write = write;
	return l;
}

/* Remove [off, end) from the locks of state st, splitting ranges that straddle it. Returns 0 or
 * -ENOMEM (nothing changed). */
static int unlock_range(struct mds_file *f, struct mds_stateid *st, uint64_t off, uint64_t end)
{
	/* First make sure a split cannot fail halfway. */
	proto_list_for_each(l, &f->locks, struct mds_lock, link) {
		if (l->st == st && l->offset < off && lock_end(l) > end) {
			struct mds_lock *tail = new_lock(st, end, lock_end(l), l->write);
			if (!tail)
				return -1;
			l->length = off - l->offset;
			proto_list_add(&l->link, &tail->link); /* right after l */
			break; /* only one lock can straddle both ends */
		}
	}
	proto_list_for_each_safe(l, &f->locks, struct mds_lock, link) {
		uint64_t le = lock_end(l);
		if (l->st != st || !overlaps(l, off, end))
			continue;
		if (l->offset >= off && le <= end) {
			proto_list_del(&l->link);
			free(l);
			continue;
		}
		if (l->offset < off)
			l->length = off - l->offset;            /* keep the head */
		else {
			l->length = le == END_OF_FILE ? NFS4_UINT64_MAX : le - end; /* keep the tail */
			l->offset = end;
		}
	}
	return 0;
}

static nfsstat4 grace_check(struct mds_compound *c, int reclaim)
{
	struct mds_server *srv = c->srv;

	if (reclaim)
		return srv->in_grace && c->clp->reclaim_ok && !c->clp->reclaim_complete ? NFS4_OK : NFS4ERR_NO_GRACE;
	return srv->in_grace ? NFS4ERR_GRACE : NFS4_OK;
}

nfsstat4 mds_op_lock(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LOCK4args *a = &arg->nfs_argop4_u.oplock;
	LOCK4res *r = &res->nfs_resop4_u.oplock;
	struct mds_server *srv = c->srv;
	struct mds_stateid *open, *lst;
	struct mds_lock *conflict, *l;
	uint64_t end;
	int write = is_write(a->locktype);
	nfsstat4 st;

	st = lock_start(c, a->locktype, a->offset, a->length, &end);
	if (st)
		return st;
	st = grace_check(c, a->reclaim);
	if (st)
		return st;
	if (a->locker.new_lock_owner) {
		open_to_lock_owner4 *o = &a->locker.locker4_u.open_owner;
		struct mds_owner *ow;

		st = mds_sid_find_cfh(c, &o->open_stateid, MDS_STM(MDS_ST_OPEN), &open);
		if (st)
			return st;
		ow = mds_owner_lookup(srv, c->clp, 1, o->lock_owner.owner.owner_val, o->lock_owner.owner.owner_len, 1);
		if (!ow)
			return NFS4ERR_RESOURCE;
		lst = mds_lockstate_find(open->file, ow);
		if (!lst) {
			lst = mds_stateid_new(srv, c->clp, open->file, ow, MDS_ST_LOCK);
			if (!lst)
				return NFS4ERR_RESOURCE;
			lst->open = open;
			lst->seqid = 0; /* bumped to 1 below */
		}
	} else {
		st = mds_sid_find_cfh(c, &a->locker.locker4_u.lock_owner.lock_stateid, MDS_STM(MDS_ST_LOCK), &lst);
		if (st)
			return st;
		open = lst->open;
	}
	/* The lock type must fit the open's access (RFC 8881 §18.10.4). */
	if (!open || !(open->share_access & (write ? OPEN4_SHARE_ACCESS_WRITE : OPEN4_SHARE_ACCESS_READ))) {
		if (lst->seqid == 0)
			mds_stateid_free(srv, lst);
		return NFS4ERR_OPENMODE;
	}
	conflict = find_conflict(lst->file, lst->owner, a->offset, end, write);
	if (conflict) {
		fill_denied(c, conflict, &r->LOCK4res_u.denied);
		if (lst->seqid == 0)
			mds_stateid_free(srv, lst); /* a lock stateid that never held anything */
		return NFS4ERR_DENIED;
	}
	l = new_lock(lst, a->offset, end, write);
	if (!l || unlock_range(lst->file, lst, a->offset, end) != 0) {
		free(l);
		return NFS4ERR_RESOURCE;
	}
	proto_list_add(&lst->file->locks, &l->link);
	mds_stateid_bump(lst);
	mds_stateid_export(lst, &r->LOCK4res_u.resok4.lock_stateid);
	mds_sid_set_current(c, lst);
	return NFS4_OK;
}

nfsstat4 mds_op_lockt(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LOCKT4args *a = &arg->nfs_argop4_u.oplockt;
	LOCKT4res *r = &res->nfs_resop4_u.oplockt;
	struct mds_file *f;
	struct mds_lock *conflict;
	uint64_t end;
	nfsstat4 st;

	st = lock_start(c, a->locktype, a->offset, a->length, &end);
	if (st)
		return st;
	if (c->srv->in_grace)
		return NFS4ERR_GRACE;
	f = mds_file_find(c->srv, c->cfh.fileid);
	if (!f)
		return NFS4_OK;
	conflict = find_conflict_named(f, c->clp, a->owner.owner.owner_val, a->owner.owner.owner_len, a->offset, end,
				       is_write(a->locktype));
	if (conflict) {
		fill_denied(c, conflict, &r->LOCKT4res_u.denied);
		return NFS4ERR_DENIED;
	}
	return NFS4_OK;
}

nfsstat4 mds_op_locku(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LOCKU4args *a = &arg->nfs_argop4_u.oplocku;
	stateid4 *out = &res->nfs_resop4_u.oplocku.LOCKU4res_u.lock_stateid;
	struct mds_stateid *lst;
	uint64_t end;
	nfsstat4 st;

	st = lock_args(a->locktype, a->offset, a->length, &end);
	if (st)
		return st;
	st = mds_sid_find_cfh(c, &a->lock_stateid, MDS_STM(MDS_ST_LOCK), &lst);
	if (st)
		return st;
	if (unlock_range(lst->file, lst, a->offset, end) != 0)
		return NFS4ERR_RESOURCE;
	mds_stateid_bump(lst);
	mds_stateid_export(lst, out);
	mds_sid_set_current(c, lst);
	return NFS4_OK;
}
