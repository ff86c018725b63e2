/* Layout state: who holds which byte ranges of which file, conflicts between clients, recalls over
 * the backchannel, return (explicit, on close, on NOMATCHING_LAYOUT), revocation (recall timeout,
 * lease expiry) with SCSI fencing before anything is reused, and the rule that keeps freed blocks
 * parked: blocks leaving a file go to free space only once no layout (and no fencing in progress)
 * covers that file. A client's RW segment on a range excludes every other client's segments on
 * it; READ segments of different clients coexist. */
#include "mds/layout_int.h"

#include "blkmap/blkmap.h"
#include "mds/backchannel.h"
#include "mds/data.h"
#include "mds/fh.h"
#include "mds/pool.h"
#include "mds/state.h"
#include "proto/log.h"
#include "proto/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CLID(clp) ((unsigned long long)(clp)->clientid)

/* ---- states --------------------------------------------------------------------------------- */

struct mds_lo_state *mds_lo_find(struct mds_file *f, struct mds_client *clp, layouttype4 type)
{
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		struct mds_lo_state *ls = mds_lo_of(st);
		if (ls && st->clp == clp && !st->revoked && ls->type == type)
			return ls;
	}
	return NULL;
}

struct mds_lo_state *mds_lo_new(struct mds_server *srv, struct mds_client *clp, struct mds_file *f,
				layouttype4 type)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_lo_state *ls = calloc(1, sizeof(*ls));
	struct mds_stateid *st;

	if (!ls)
		return NULL;
	st = mds_stateid_new(srv, clp, f, NULL, MDS_ST_LAYOUT);
	if (!st) {
		free(ls);
		return NULL;
	}
	st->layout = ls;
	ls->st = st;
	ls->type = type;
	ls->next = lo->states;
	if (lo->states)
		lo->states->prev = ls;
	lo->states = ls;
	lo->nstates++;
	return ls;
}

int mds_lo_holds(const struct mds_lo_state *ls)
{
	return !ls->st->revoked && (ls->rd.n || ls->rw.n);
}

static void recalls_free(struct mds_lo_state *ls)
{
	while (ls->recalls) {
		struct mds_lo_recall *r = ls->recalls;
		ls->recalls = r->next;
		free(r);
	}
}

void mds_lo_stateid_freed(struct mds_server *srv, struct mds_stateid *st)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_lo_state *ls = mds_lo_of(st);

	if (!ls)
		return;
	st->layout = NULL;
	recalls_free(ls);
	mds_lo_set_free(&ls->rd);
	mds_lo_set_free(&ls->rw);
	if (lo) {
		if (ls->prev)
			ls->prev->next = ls->next;
		else if (lo->states == ls)
			lo->states = ls->next;
		if (ls->next)
			ls->next->prev = ls->prev;
		lo->nstates--;
	}
	free(ls);
}

void mds_lo_discard(struct mds_server *srv, struct mds_lo_state *ls)
{
	mds_stateid_free(srv, ls->st);
}

/* ---- what covers a file --------------------------------------------------------------------- */

int mds_lo_fencing(const struct mds_server *srv, const struct mds_file *f, uint64_t off, uint64_t end)
{
	const struct mds_layouts *lo = srv->layouts;

	for (const struct mds_lo_fence_job *j = lo ? lo->jobs : NULL; j; j = j->next)
		for (unsigned i = 0; i < j->nfiles; i++)
			if (j->files[i].f == f && mds_lo_set_overlaps(&j->files[i].all, off, end))
				return 1;
	return 0;
}

/* Whether a layout or a fencing job reaches [from, end) of f: a client holding it could still
 * send I/O to blocks that were mapped there. */
static int file_reached(const struct mds_server *srv, const struct mds_file *f, uint64_t from, uint64_t end)
{
	for (const struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		const struct mds_lo_state *ls = mds_lo_of(st);
		if (ls && mds_lo_holds(ls) &&
		    (mds_lo_set_overlaps(&ls->rd, from, end) || mds_lo_set_overlaps(&ls->rw, from, end)))
			return 1;
	}
	return mds_lo_fencing(srv, f, from, end);
}

/* pending_files maps a fileid to the lowest file offset its parked blocks were mapped at, plus one
 * (so that offset 0 is not NULL). */
_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "parked offsets are kept in pointers");

static uint64_t parked_from(const struct mds_layouts *lo, uint64_t fileid, int *found)
{
	uintptr_t v = (uintptr_t)mds_map_find(&lo->pending_files, &fileid, sizeof(fileid));

	*found = v != 0;
	return v ? (uint64_t)v - 1 : 0;
}

static void note_parked(struct mds_layouts *lo, uint64_t fileid, uint64_t from)
{
	int found;
	uint64_t have = parked_from(lo, fileid, &found);

	if (found && have <= from)
		return;
	if (found)
		mds_map_del(&lo->pending_files, &fileid, sizeof(fileid));
	if (mds_map_insert(&lo->pending_files, &fileid, sizeof(fileid), (void *)(uintptr_t)(from + 1)) != 0)
		LOG_ERROR("file %llu: out of memory noting parked blocks; they are released at the next start",
			  (unsigned long long)fileid);
}

unsigned mds_lo_free_flags(struct mds_server *srv, struct mds_file *f, uint64_t from)
{
	if (!f || !srv->layouts)
		return 0;
	return file_reached(srv, f, from, UINT64_MAX) ? MDS_FREE_PENDING : 0;
}

void mds_lo_blocks_freed(struct mds_server *srv, uint64_t fileid, uint64_t from, const struct mds_ranges *freed)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_file *f = mds_file_find(srv, fileid);

	if (!lo || !freed || !freed->n || !f || !file_reached(srv, f, from, UINT64_MAX))
		return;
	/* They were parked (mds_lo_free_flags said so): remember to release them. */
	note_parked(lo, fileid, from);
}

struct release_arg {
	uint64_t fileid;
	uint64_t bytes;
};

static int release_txn(struct mds_txn *t, void *arg)
{
	struct release_arg *a = arg;
	return mds_pending_release_file(t, a->fileid, &a->bytes);
}

int mds_lo_release_if_free(struct mds_server *srv, struct mds_file *f)
{
	struct mds_layouts *lo = srv->layouts;
	struct release_arg a = { f->fileid, 0 };
	int found, rc;
	uint64_t from = parked_from(lo, f->fileid, &found);

	/* Layouts below the lowest parked offset never mapped those blocks: they do not hold them. */
	if (!found || file_reached(srv, f, from, UINT64_MAX))
		return 0;
	rc = mds_with_txn(srv, release_txn, &a);
	if (rc) {
		LOG_ERROR("file %llu: cannot release parked blocks: %s", (unsigned long long)f->fileid,
			  mds_store_strerror(rc));
		return rc;
	}
	mds_map_del(&lo->pending_files, &f->fileid, sizeof(f->fileid));
	if (a.bytes)
		LOG_DEBUG("file %llu: %llu parked bytes released: no layout reaches offset %llu any more",
			  (unsigned long long)f->fileid, (unsigned long long)a.bytes, (unsigned long long)from);
	return 0;
}

/* ---- dropping never-written blocks ----------------------------------------------------------- */

struct drop_arg {
	struct mds_server *srv;
	struct mds_file *f;
	const struct mds_lo_set *pieces;
	unsigned flags;
	int parked;
	uint64_t parked_from; /* lowest file offset parked */
};

static int drop_txn(struct mds_txn *t, void *arg)
{
	struct drop_arg *a = arg;
	uint32_t bs = a->srv->block_bytes;

	for (size_t i = 0; i < a->pieces->n; i++) {
		struct mds_ranges freed = { 0 };
		uint64_t off = a->pieces->v[i].off, end = a->pieces->v[i].end;
		int rc;

		/* Only whole blocks: partial ones stay with the file. */
		off = (off + bs - 1) / bs * bs;
		if (end != UINT64_MAX)
			end = end / bs * bs;
		if (end <= off)
			continue;
		rc = mds_ext_punch(t, a->f->fileid, off, end == UINT64_MAX ? MDS_TO_END : end - off,
				   MDS_EXT_MASK(MDS_EXT_INVALID), a->flags, &freed);
		if (freed.n && (a->flags & MDS_FREE_PENDING) && (!a->parked || off < a->parked_from)) {
			a->parked = 1;
			a->parked_from = off;
		}
		mds_ranges_free(&freed);
		if (rc && rc != -ENOENT)
			return rc;
	}
	return 0;
}

int mds_lo_drop_invalid(struct mds_server *srv, struct mds_file *f, const struct mds_lo_set *rw)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_lo_set pieces = { 0 };
	struct drop_arg a = { srv, f, &pieces, 0, 0, 0 };
	int rc = 0;

	if (!rw->n)
		return 0;
	/* What no remaining RW layout (or fencing job) still covers. */
	for (size_t i = 0; i < rw->n && !rc; i++)
		rc = mds_lo_set_add(&pieces, rw->v[i].off, rw->v[i].end);
	for (const struct mds_stateid *st = f->states; st && !rc; st = st->next_in_file) {
		const struct mds_lo_state *ls = mds_lo_of(st);
		if (!ls || !mds_lo_holds(ls))
			continue;
		for (size_t i = 0; i < ls->rw.n && !rc; i++)
			rc = mds_lo_set_remove(&pieces, ls->rw.v[i].off, ls->rw.v[i].end, NULL);
	}
	for (const struct mds_lo_fence_job *j = lo->jobs; j && !rc; j = j->next)
		for (unsigned k = 0; k < j->nfiles && !rc; k++)
			if (j->files[k].f == f)
				for (size_t i = 0; i < j->files[k].rw.n && !rc; i++)
					rc = mds_lo_set_remove(&pieces, j->files[k].rw.v[i].off, j->files[k].rw.v[i].end,
							       NULL);
	{
		/* an MDS-path WRITE filling blocks the layout allocated: they are the write's now */
		uint64_t wa, wb;
		if (!rc && mds_data_writing(f, &wa, &wb))
			rc = mds_lo_set_remove(&pieces, wa, wb, NULL);
	}
	if (rc)
		goto out;
	if (!pieces.n)
		goto out;
	/* Never written, so no other client's RW layout maps them (RW layouts exclude each other);
	 * park them only while a READ layout or a fencing job still reaches them. */
	for (size_t i = 0; i < pieces.n && !a.flags; i++)
		if (file_reached(srv, f, pieces.v[i].off, pieces.v[i].end))
			a.flags = MDS_FREE_PENDING;
	rc = mds_with_txn(srv, drop_txn, &a);
	if (rc) {
		LOG_ERROR("file %llu: cannot drop never-written blocks of a returned layout: %s",
			  (unsigned long long)f->fileid, mds_store_strerror(rc));
		goto out;
	}
	if (a.parked)
		note_parked(lo, f->fileid, a.parked_from);
out:
	mds_lo_set_free(&pieces);
	return rc;
}

/* ---- recalls ------------------------------------------------------------------------------- */

static int iomode_matches(uint32_t want, uint32_t have)
{
	return want == LAYOUTIOMODE4_ANY || want == have;
}

/* Whether the state still holds something a recall asks back. */
static int recall_pending(const struct mds_lo_state *ls, const struct mds_lo_recall *r)
{
	return (iomode_matches(r->iomode, LAYOUTIOMODE4_READ) && mds_lo_set_overlaps(&ls->rd, r->off, r->end)) ||
	       (iomode_matches(r->iomode, LAYOUTIOMODE4_RW) && mds_lo_set_overlaps(&ls->rw, r->off, r->end));
}

static void recalls_prune(struct mds_lo_state *ls)
{
	struct mds_lo_recall **pp = &ls->recalls;

	while (*pp) {
		struct mds_lo_recall *r = *pp;
		if (!recall_pending(ls, r)) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

int mds_lo_recalling(const struct mds_lo_state *ls, uint64_t off, uint64_t end, uint32_t iomode)
{
	for (const struct mds_lo_recall *r = ls->recalls; r; r = r->next)
		if (r->off < end && off < r->end &&
		    (iomode == LAYOUTIOMODE4_ANY || r->iomode == LAYOUTIOMODE4_ANY || r->iomode == iomode))
			return 1;
	return 0;
}

struct recall_cookie {
	unsigned char other[NFS4_OTHER_SIZE];
	struct mds_lo_recall *r;
	uint32_t seqid;
};

static struct mds_lo_state *state_by_other(struct mds_server *srv, const unsigned char *other)
{
	return mds_lo_of(mds_map_find(&srv->stateids, other, NFS4_OTHER_SIZE));
}

static int recall_alive(const struct mds_lo_state *ls, const struct mds_lo_recall *r)
{
	for (const struct mds_lo_recall *x = ls ? ls->recalls : NULL; x; x = x->next)
		if (x == r)
			return 1;
	return 0;
}

static void recall_send(struct mds_server *srv, struct mds_lo_state *ls, struct mds_lo_recall *r);

static void recall_done(struct mds_server *srv, int status, const CB_COMPOUND4res *res, void *arg)
{
	struct recall_cookie *ck = arg;
	struct mds_lo_state *ls = state_by_other(srv, ck->other);
	struct mds_lo_recall *r = ck->r;
	nfsstat4 cst;

	free(ck);
	if (!recall_alive(ls, r) || ls->st->revoked)
		return; /* returned (or revoked) meanwhile */
	if (status) {
		LOG_WARN("client %016llx: CB_LAYOUTRECALL of file %llu failed (%s); its layout is revoked if not "
			 "returned in time", CLID(ls->st->clp), (unsigned long long)ls->st->file->fileid,
			 strerror(-status));
		return;
	}
	cst = res->status;
	if (res->resarray.resarray_len >= 2 && res->resarray.resarray_val[1].resop == OP_CB_LAYOUTRECALL)
		cst = res->resarray.resarray_val[1].nfs_cb_resop4_u.opcblayoutrecall.clorr_status;
	switch (cst) {
	case NFS4_OK:
		return; /* a LAYOUTRETURN follows */
	case NFS4ERR_NOMATCHING_LAYOUT: {
		/* The client holds nothing there (RFC 8881 §20.3.4): as good as returned. */
		struct mds_file *f = ls->st->file;
		LOG_DEBUG("client %016llx: holds no layout of file %llu in the recalled range", CLID(ls->st->clp),
			  (unsigned long long)f->fileid);
		mds_lo_return_range(srv, ls, r->off, r->end, r->iomode);
		if (!mds_lo_holds(ls))
			mds_lo_discard(srv, ls);
		return;
	}
	case NFS4ERR_DELAY:
		r->resend_ms = mds_loop_now_ms() + MDS_LO_RECALL_RETRY_MS;
		return;
	default:
		LOG_WARN("client %016llx: CB_LAYOUTRECALL of file %llu answered %d; revoked if not returned in time",
			 CLID(ls->st->clp), (unsigned long long)ls->st->file->fileid, (int)cst);
		return;
	}
}

static void recall_send(struct mds_server *srv, struct mds_lo_state *ls, struct mds_lo_recall *r)
{
	struct mds_session *s = mds_cb_session(ls->st->clp);
	struct recall_cookie *ck;
	nfs_cb_argop4 op;
	CB_LAYOUTRECALL4args *a = &op.nfs_cb_argop4_u.opcblayoutrecall;
	layoutrecall_file4 *lf = &a->clora_recall.layoutrecall4_u.lor_layout;
	unsigned char fh[MDS_FH_BYTES];

	r->resend_ms = 0;
	if (!s) {
		LOG_WARN("client %016llx: no backchannel to recall its layout of file %llu; revoked if not returned "
			 "in time", CLID(ls->st->clp), (unsigned long long)ls->st->file->fileid);
		return;
	}
	ck = calloc(1, sizeof(*ck));
	if (!ck)
		return; /* the timeout still revokes it */
	memcpy(ck->other, ls->st->other, NFS4_OTHER_SIZE);
	ck->r = r;
	memset(&op, 0, sizeof(op));
	op.argop = OP_CB_LAYOUTRECALL;
	a->clora_type = ls->type;
	a->clora_iomode = r->iomode;
	a->clora_changed = r->changed ? TRUE : FALSE;
	a->clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
	mds_fh_encode(srv, ls->st->file->fileid, fh);
	lf->lor_fh.nfs_fh4_len = MDS_FH_BYTES;
	lf->lor_fh.nfs_fh4_val = (char *)fh;
	lf->lor_offset = r->off;
	lf->lor_length = r->end == UINT64_MAX ? NFS4_UINT64_MAX : r->end - r->off;
	lf->lor_stateid.seqid = r->seqid;
	memcpy(lf->lor_stateid.other, ls->st->other, NFS4_OTHER_SIZE);
	if (mds_cb_compound(srv, s, &op, 1, recall_done, ck) != 0) {
		free(ck);
		LOG_WARN("client %016llx: cannot send CB_LAYOUTRECALL of file %llu", CLID(ls->st->clp),
			 (unsigned long long)ls->st->file->fileid);
		return;
	}
	LOG_DEBUG("client %016llx: recalling layout of file %llu [%llu, %llu) iomode %u", CLID(ls->st->clp),
		  (unsigned long long)ls->st->file->fileid, (unsigned long long)r->off, (unsigned long long)r->end,
		  r->iomode);
}

/* Recall [off, end) of iomode from the state unless a recall already asks for it. */
static void lo_recall(struct mds_server *srv, struct mds_lo_state *ls, uint64_t off, uint64_t end, uint32_t iomode,
		      int changed)
{
	struct mds_lo_recall *r;

	for (r = ls->recalls; r; r = r->next)
		if (r->off <= off && r->end >= end && (r->iomode == LAYOUTIOMODE4_ANY || r->iomode == iomode))
			return;
	r = calloc(1, sizeof(*r));
	if (!r) {
		LOG_ERROR("client %016llx: out of memory recalling a layout", CLID(ls->st->clp));
		return;
	}
	r->off = off;
	r->end = end;
	r->iomode = iomode;
	r->changed = changed;
	r->sent_ms = mds_loop_now_ms();
	/* RFC 8881 §12.5.3: every CB_LAYOUTRECALL carries the layout stateid's next seqid. */
	mds_stateid_bump(ls->st);
	r->seqid = ls->st->seqid;
	r->next = ls->recalls;
	ls->recalls = r;
	srv->layouts->stats.recalls++;
	recall_send(srv, ls, r);
}

void mds_lo_recall_all(struct mds_server *srv)
{
	for (struct mds_lo_state *ls = srv->layouts->states; ls; ls = ls->next)
		if (mds_lo_holds(ls))
			lo_recall(srv, ls, 0, UINT64_MAX, LAYOUTIOMODE4_ANY, 1);
}

nfsstat4 mds_lo_conflicts(struct mds_server *srv, struct mds_file *f, struct mds_client *clp, uint64_t off,
			  uint64_t end, uint32_t iomode)
{
	int busy = 0, own = 0;

	for (struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		struct mds_lo_state *ls = mds_lo_of(st);
		int rd, rw;
		if (!ls || !mds_lo_holds(ls))
			continue;
		if (st->clp == clp) {
			if (mds_lo_recalling(ls, off, end, LAYOUTIOMODE4_ANY))
				own = 1;
			continue;
		}
		rw = mds_lo_set_overlaps(&ls->rw, off, end);
		rd = iomode == LAYOUTIOMODE4_RW && mds_lo_set_overlaps(&ls->rd, off, end);
		if (!rw && !rd)
			continue;
		busy = 1;
		lo_recall(srv, ls, off, end, iomode == LAYOUTIOMODE4_RW ? LAYOUTIOMODE4_ANY : LAYOUTIOMODE4_RW, 0);
	}
	if (own)
		return NFS4ERR_RECALLCONFLICT;
	if (busy || mds_lo_fencing(srv, f, off, end))
		return NFS4ERR_LAYOUTTRYLATER;
	return NFS4_OK;
}

/* ---- never-written blocks of layouts that did not survive a restart ---------------------------- */

struct stale_ids {
	uint64_t *v;
	size_t n, cap;
	uint64_t bytes;
};

static int stale_collect(void *arg, uint64_t fileid, uint64_t nextents, uint64_t bytes)
{
	struct stale_ids *s = arg;
	(void)nextents;

	if (proto_grow(&s->v, s->n, &s->cap, sizeof(*s->v), 64))
		return -ENOMEM;
	s->v[s->n++] = fileid;
	s->bytes += bytes;
	return 0;
}

static int stale_collect_txn(struct mds_txn *t, void *arg)
{
	return mds_ext_invalid_iter(t, stale_collect, arg);
}

struct stale_punch {
	uint64_t fileid;
	uint64_t bytes;
};

static int stale_punch_txn(struct mds_txn *t, void *arg)
{
	struct stale_punch *a = arg;
	struct mds_ranges freed = { 0 };
	int rc = mds_ext_punch(t, a->fileid, 0, MDS_TO_END, MDS_EXT_MASK(MDS_EXT_INVALID), 0, &freed);

	for (size_t i = 0; i < freed.n; i++)
		a->bytes += freed.v[i].len;
	mds_ranges_free(&freed);
	return rc == -ENOENT ? 0 : rc;
}

int mds_lo_drop_stale(struct mds_server *srv)
{
	struct stale_ids ids = { 0 };
	uint64_t dropped = 0;
	size_t files = 0;
	int rc;

	rc = mds_with_txn(srv, stale_collect_txn, &ids);
	for (size_t i = 0; !rc && i < ids.n; i++) {
		struct mds_file *f = mds_file_find(srv, ids.v[i]);
		if (f) {
			/* Layouts granted since the start (reclaims during grace, new ones) keep theirs. */
			struct mds_lo_set all = { 0 };
			rc = mds_lo_set_add(&all, 0, UINT64_MAX);
			if (!rc)
				rc = mds_lo_drop_invalid(srv, f, &all);
			mds_lo_set_free(&all);
			continue;
		}
		{
			struct stale_punch a = { ids.v[i], 0 };
			rc = mds_with_txn(srv, stale_punch_txn, &a);
			if (!rc && a.bytes) {
				dropped += a.bytes;
				files++;
			}
		}
	}
	if (rc)
		LOG_ERROR("pool %s: dropping blocks allocated under layouts of the last run: %s", srv->cfg.pool,
			  mds_store_strerror(rc));
	else if (dropped)
		LOG_INFO("pool %s: freed %llu bytes in %zu file(s) allocated under layouts of the last run and never "
			 "committed", srv->cfg.pool, (unsigned long long)dropped, files);
	free(ids.v);
	return rc;
}

/* ---- returning ------------------------------------------------------------------------------- */

int mds_lo_return_range(struct mds_server *srv, struct mds_lo_state *ls, uint64_t off, uint64_t end,
			uint32_t iomode)
{
	struct mds_lo_set gone_rw = { 0 };
	int had = 0, rc = 0;

	if (iomode_matches(iomode, LAYOUTIOMODE4_READ)) {
		had |= mds_lo_set_overlaps(&ls->rd, off, end);
		rc = mds_lo_set_remove(&ls->rd, off, end, NULL);
	}
	if (!rc && iomode_matches(iomode, LAYOUTIOMODE4_RW)) {
		had |= mds_lo_set_overlaps(&ls->rw, off, end);
		rc = mds_lo_set_remove(&ls->rw, off, end, &gone_rw);
	}
	if (rc) {
		mds_lo_set_free(&gone_rw);
		return rc;
	}
	recalls_prune(ls);
	if (gone_rw.n)
		rc = mds_lo_drop_invalid(srv, ls->st->file, &gone_rw);
	mds_lo_set_free(&gone_rw);
	if (!rc)
		rc = mds_lo_release_if_free(srv, ls->st->file);
	return rc < 0 ? rc : had;
}

/* ---- revocation and fencing ---------------------------------------------------------------- */

static struct mds_lo_fence_job *job_find(struct mds_layouts *lo, clientid4 id)
{
	for (struct mds_lo_fence_job *j = lo->jobs; j; j = j->next)
		if (j->clientid == id)
			return j;
	return NULL;
}

static struct mds_lo_fence_job *job_obtain(struct mds_layouts *lo, clientid4 id)
{
	struct mds_lo_fence_job *j = job_find(lo, id);

	if (j)
		return j;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->clientid = id;
	j->key = mds_fence_client_key(id);
	j->next = lo->jobs;
	lo->jobs = j;
	return j;
}

/* The job keeps what the revoked state covered until the client is fenced. */
static int job_add_state(struct mds_lo_fence_job *j, struct mds_lo_state *ls)
{
	struct mds_file *f = ls->st->file;
	struct mds_lo_fence_file *ff = NULL;
	int rc = 0;

	for (unsigned i = 0; i < j->nfiles; i++)
		if (j->files[i].f == f)
			ff = &j->files[i];
	if (!ff) {
		if (j->nfiles == j->capfiles) {
			unsigned cap = j->capfiles ? 2 * j->capfiles : 4;
			struct mds_lo_fence_file *v = realloc(j->files, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			j->files = v;
			j->capfiles = cap;
		}
		ff = &j->files[j->nfiles++];
		memset(ff, 0, sizeof(*ff));
		ff->f = f;
		f->refs++; /* mds_file_put when the job ends */
	}
	for (size_t i = 0; i < ls->rw.n && !rc; i++) {
		rc = mds_lo_set_add(&ff->rw, ls->rw.v[i].off, ls->rw.v[i].end);
		if (!rc)
			rc = mds_lo_set_add(&ff->all, ls->rw.v[i].off, ls->rw.v[i].end);
	}
	for (size_t i = 0; i < ls->rd.n && !rc; i++)
		rc = mds_lo_set_add(&ff->all, ls->rd.v[i].off, ls->rd.v[i].end);
	return rc;
}

static void job_start(struct mds_server *srv, struct mds_lo_fence_job *j);

static void job_finish(struct mds_server *srv, struct mds_lo_fence_job *j)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_lo_fence_job **pp;

	for (pp = &lo->jobs; *pp; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	}
	/* Fenced: nothing the client does reaches the LUNs any more. Its never-written blocks go and
	 * whatever was parked for its layouts may be reused. */
	for (unsigned i = 0; i < j->nfiles; i++) {
		struct mds_lo_fence_file *ff = &j->files[i];
		if (!srv->stopping) {
			mds_lo_drop_invalid(srv, ff->f, &ff->rw);
			mds_lo_release_if_free(srv, ff->f);
		}
		mds_lo_set_free(&ff->rw);
		mds_lo_set_free(&ff->all);
		mds_file_put(srv, ff->f);
	}
	free(j->files);
	free(j);
}

static void job_done(struct mds_server *srv, int status, void *arg)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_lo_fence_job *j = arg;

	j->running = 0;
	if (status) {
		lo->stats.fence_failures++;
		j->attempts++;
		j->retry_ms = mds_loop_now_ms() + MDS_LO_FENCE_RETRY_MS;
		LOG_ERROR("client %016llx: fencing (PREEMPT AND ABORT of key %016llx) failed: %s; its blocks stay "
			  "parked, retrying", (unsigned long long)j->clientid, (unsigned long long)j->key,
			  strerror(-status));
		return;
	}
	lo->stats.fenced++;
	LOG_WARN("client %016llx: fenced (key %016llx removed from every LUN)", (unsigned long long)j->clientid,
		 (unsigned long long)j->key);
	job_finish(srv, j);
}

static void job_start(struct mds_server *srv, struct mds_lo_fence_job *j)
{
	struct mds_layouts *lo = srv->layouts;
	int rc;

	if (j->running)
		return;
	j->retry_ms = 0;
	j->running = 1;
	rc = mds_fence_key(srv, lo->fence, j->key, job_done, j);
	if (rc) {
		j->running = 0;
		job_done(srv, rc, j);
	}
}

/* Revoke one state: it stops counting as a holder at once; what it covered stays parked (SCSI with
 * fencing: until the job finishes; otherwise the never-written blocks go now). */
static void lo_revoke(struct mds_server *srv, struct mds_lo_state *ls, struct mds_lo_fence_job *job, const char *why)
{
	struct mds_file *f = ls->st->file;
	struct mds_lo_set rw = ls->rw;

	if (ls->st->revoked)
		return;
	LOG_WARN("client %016llx: layout of file %llu revoked: %s", CLID(ls->st->clp), (unsigned long long)f->fileid,
		 why);
	if (job && job_add_state(job, ls) != 0)
		LOG_ERROR("client %016llx: out of memory while fencing; blocks of file %llu are released at once",
			  CLID(ls->st->clp), (unsigned long long)f->fileid);
	ls->st->revoked = 1;
	srv->layouts->stats.revoked++;
	recalls_free(ls);
	memset(&ls->rw, 0, sizeof(ls->rw));
	mds_lo_set_free(&ls->rd);
	if (!job)
		mds_lo_drop_invalid(srv, f, &rw);
	mds_lo_set_free(&rw);
	mds_lo_release_if_free(srv, f);
}

/* Revoke every layout of clp (all files); SCSI ones only after fencing the client. keep says whether
 * revoked stateids stay (for the client to see) or are freed. */
static void revoke_client(struct mds_server *srv, struct mds_client *clp, const char *why, int keep)
{
	struct mds_layouts *lo = srv->layouts;
	struct mds_lo_fence_job *job = NULL;
	struct mds_stateid *st, *next;
	int fences = 0;

	for (st = clp->states; st; st = st->next_in_client) {
		struct mds_lo_state *ls = mds_lo_of(st);
		if (ls && mds_lo_holds(ls) && mds_lo_type(ls->type)->fences)
			fences = 1;
	}
	if (fences && lo->fence) {
		job = job_obtain(lo, clp->clientid);
		if (!job)
			LOG_ERROR("client %016llx: out of memory: cannot fence it", CLID(clp));
	}
	for (st = clp->states; st; st = next) {
		struct mds_lo_state *ls = mds_lo_of(st);
		next = st->next_in_client;
		if (!ls)
			continue;
		if (mds_lo_holds(ls))
			lo_revoke(srv, ls, mds_lo_type(ls->type)->fences ? job : NULL, why);
		if (!keep)
			mds_stateid_free(srv, st);
	}
	if (job)
		job_start(srv, job);
}

void mds_lo_client_gone(struct mds_server *srv, struct mds_client *clp)
{
	struct mds_stateid *st, *next;

	if (!srv->layouts)
		return;
	if (srv->stopping) {
		/* Shutdown: layouts are only forgotten; the reservation stays and the next start fences
		 * every client key before anything is handed out again. */
		for (st = clp->states; st; st = next) {
			next = st->next_in_client;
			if (st->type == MDS_ST_LAYOUT)
				mds_stateid_free(srv, st);
		}
		return;
	}
	revoke_client(srv, clp, "the client went away (lease expired or its state was released)", 0);
}

/* ---- hooks ------------------------------------------------------------------------------- */

void mds_lo_open_closed(struct mds_server *srv, struct mds_stateid *open)
{
	struct mds_file *f = open->file;
	struct mds_stateid *st, *next;

	if (!srv->layouts || !f || srv->stopping)
		return;
	for (st = f->states; st; st = st->next_in_file)
		if (st != open && st->type == MDS_ST_OPEN && st->clp == open->clp && !st->revoked)
			return; /* not the client's last open of the file */
	/* Return-on-close (we always grant it): the client's layouts of the file go with its last open. */
	for (st = f->states; st; st = next) {
		struct mds_lo_state *ls = mds_lo_of(st);
		next = st->next_in_file;
		if (!ls || st->clp != open->clp || st->revoked)
			continue;
		if (mds_lo_return_range(srv, ls, 0, UINT64_MAX, LAYOUTIOMODE4_ANY) > 0)
			srv->layouts->stats.returned++;
		/* next may have been freed with it only if it was this state: it was not. */
		mds_lo_discard(srv, ls);
	}
}

void mds_lo_truncate(struct mds_server *srv, struct mds_file *f, uint64_t new_size)
{
	uint64_t from;

	if (!srv->layouts || !f)
		return;
	from = new_size / srv->block_bytes * srv->block_bytes;
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		struct mds_lo_state *ls = mds_lo_of(st);
		if (ls && mds_lo_holds(ls) &&
		    (mds_lo_set_overlaps(&ls->rd, from, UINT64_MAX) || mds_lo_set_overlaps(&ls->rw, from, UINT64_MAX)))
			lo_recall(srv, ls, from, UINT64_MAX, LAYOUTIOMODE4_ANY, 1);
	}
}

void mds_lo_removed(struct mds_server *srv, uint64_t fileid, int destroyed)
{
	struct mds_file *f = mds_file_find(srv, fileid);
	(void)destroyed;

	if (!srv->layouts || !f)
		return;
	/* Removed (gone, or an orphan kept for its opens): no new layouts, the old ones come back. */
	for (struct mds_stateid *st = f->states; st; st = st->next_in_file) {
		struct mds_lo_state *ls = mds_lo_of(st);
		if (ls && mds_lo_holds(ls))
			lo_recall(srv, ls, 0, UINT64_MAX, LAYOUTIOMODE4_ANY, 1);
	}
}

/* ---- the timer ------------------------------------------------------------------------------ */

static int64_t lo_tick(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mds_server *srv = arg;
	struct mds_layouts *lo = srv->layouts;
	uint64_t now = mds_loop_now_ms();
	struct mds_client *late[64];
	unsigned nlate = 0;
	(void)loop;
	(void)id;

	for (struct mds_lo_state *ls = lo->states; ls; ls = ls->next) {
		for (struct mds_lo_recall *r = ls->recalls; r; r = r->next) {
			if (now - r->sent_ms >= lo->recall_timeout_ms) {
				unsigned k;
				for (k = 0; k < nlate && late[k] != ls->st->clp; k++)
					;
				if (k == nlate && nlate < 64)
					late[nlate++] = ls->st->clp;
				break;
			}
			if (r->resend_ms && now >= r->resend_ms)
				recall_send(srv, ls, r);
		}
	}
	/* A client that let a recall time out loses every layout it holds (SCSI: it is fenced, which
	 * cuts it off all LUNs anyway). Its stateids stay, revoked, for it to notice and free. */
	for (unsigned k = 0; k < nlate; k++)
		revoke_client(srv, late[k], "not returned within the recall timeout", 1);
	for (struct mds_lo_fence_job *j = lo->jobs, *n; j; j = n) {
		n = j->next;
		if (!j->running && j->retry_ms && now >= j->retry_ms)
			job_start(srv, j);
	}
	return MDS_LO_TICK_MS;
}

/* ---- start and stop ------------------------------------------------------------------------- */

static int release_all_txn(struct mds_txn *t, void *arg)
{
	return mds_pending_release_all(t, arg);
}

/* Stock Linux SCSI-layout clients register their key with APTPL set and fall back to MDS I/O when
 * a LUN refuses it (tgt does). Probe every LUN once (scsi-layouts auto and yes), say once what was
 * found, and return whether SCSI layouts are to be offered: 1 unless auto found a LUN that did not
 * accept APTPL. A pool with a LUN that is not iSCSI is left to mds_fence_setup, which says why SCSI
 * layouts are not offered. */
static int aptpl_probe(struct mds_server *srv, struct mds_layouts *lo)
{
	uint32_t n = mds_pool_nluns(srv->pool), bad = n;
	char why[400] = "", first_why[400] = "", url[MDS_POOL_URL_MAX];

	for (uint32_t i = 0; i < n; i++) {
		struct blkmap_dev *dev = mds_pool_lun_dev(srv->pool, i);
		if (!dev || blkmap_dev_kind(dev) != BLKMAP_DEV_ISCSI)
			return 1;
	}
	for (uint32_t i = 0; i < n && i < MDS_MAX_LUNS; i++) {
		lo->aptpl[i] = (uint8_t)mds_fence_probe_aptpl(srv, i, why, sizeof(why));
		if (lo->aptpl[i] != MDS_APTPL_ACCEPTED && bad == n) {
			bad = i;
			snprintf(first_why, sizeof(first_why), "%s", why);
		}
	}
	if (bad == n)
		return 1;
	mds_pool_url_display(mds_pool_lun_url(srv->pool, bad), url, sizeof(url));
	if (srv->cfg.scsi_layouts == MDS_SCSI_YES) {
		LOG_WARN("pool %s: SCSI layouts on (scsi-layouts yes), but LUN %u (%s) %s persistent reservations "
			 "with APTPL (%s): stock Linux clients cannot register their keys there and will read and "
			 "write through the MDS",
			 srv->cfg.pool, bad, url, lo->aptpl[bad] == MDS_APTPL_REFUSED ? "refuses" : "could not be asked for",
			 first_why);
		return 1;
	}
	if (lo->aptpl[bad] == MDS_APTPL_REFUSED)
		LOG_INFO("pool %s: SCSI layouts off: LUN %u (%s) refuses persistent reservations with APTPL (tgt does: "
			 "%s); stock Linux clients could not register their keys; serving block-volume layouts "
			 "(scsi-layouts yes offers SCSI layouts all the same)",
			 srv->cfg.pool, bad, url, first_why);
	else
		LOG_INFO("pool %s: SCSI layouts off: LUN %u (%s) could not be asked whether it takes persistent "
			 "reservations with APTPL (%s), which stock Linux clients need to register their keys; "
			 "serving block-volume layouts (scsi-layouts yes offers SCSI layouts all the same)",
			 srv->cfg.pool, bad, url, first_why);
	return 0;
}

int mds_lo_start(struct mds_server *srv, char *err, size_t errlen)
{
	struct mds_layouts *lo = calloc(1, sizeof(*lo));
	int rc;

	if (!lo) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	lo->srv = srv;
	mds_map_init(&lo->pending_files);
	lo->recall_timeout_ms = (uint64_t)mds_lease_s(srv) * 1000;
	srv->layouts = lo;
	rc = mds_lo_dev_init(srv, err, errlen);
	if (rc)
		goto fail;
	if (srv->cfg.scsi_layouts != MDS_SCSI_NO && !aptpl_probe(srv, lo)) {
		/* as with scsi-layouts no: block-volume clients must reach the LUNs */
		mds_fence_release(srv);
	} else if (srv->cfg.scsi_layouts != MDS_SCSI_NO) {
		rc = mds_fence_setup(srv, &lo->fence, err, errlen);
		if (rc == -EOPNOTSUPP) {
			LOG_WARN("pool %s: %s; SCSI layouts are not offered", srv->cfg.pool, err);
			err[0] = 0;
		} else if (rc) {
			goto fail;
		}
	} else {
		mds_fence_release(srv);
	}
	if (!srv->in_grace) {
		/* Nobody can reclaim a layout: whatever was parked before the restart is free now. */
		uint64_t bytes = 0;
		rc = mds_with_txn(srv, release_all_txn, &bytes);
		if (rc) {
			snprintf(err, errlen, "pool %s: releasing parked blocks: %s", srv->cfg.pool, mds_store_strerror(rc));
			goto fail;
		}
		if (bytes)
			LOG_INFO("released %llu bytes parked at the last stop", (unsigned long long)bytes);
		/* Nor can anyone commit into what its layouts allocated. */
		rc = mds_lo_drop_stale(srv);
		if (rc) {
			snprintf(err, errlen, "pool %s: freeing never-committed blocks: %s", srv->cfg.pool,
				 mds_store_strerror(rc));
			goto fail;
		}
	}
	if (srv->cfg.metrics_port) {
		rc = mds_metrics_start(srv, srv->cfg.metrics_port, &lo->metrics, err, errlen);
		if (rc)
			goto fail;
	}
	lo->timer = mds_loop_add_timer(srv->loop, MDS_LO_TICK_MS, lo_tick, srv);
	if (!lo->timer) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	mds_lo_stop(srv);
	return rc;
}

void mds_lo_stop(struct mds_server *srv)
{
	struct mds_layouts *lo = srv->layouts;

	if (!lo)
		return;
	if (lo->timer)
		mds_loop_del_timer(srv->loop, lo->timer);
	while (lo->jobs)
		job_finish(srv, lo->jobs);
	mds_metrics_stop(lo->metrics);
	mds_fence_free(lo->fence);
	mds_lo_dev_free(srv);
	mds_map_clear(&lo->pending_files);
	free(lo);
	srv->layouts = NULL;
}

unsigned mds_lo_types(const struct mds_server *srv, layouttype4 *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < MDS_LO_NTYPES && n < max; i++)
		if (mds_lo_type_at(i)->offered(srv))
			out[n++] = mds_lo_type_at(i)->type;
	return n;
}
