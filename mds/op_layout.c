/* The pNFS operations: LAYOUTGET (allocate holes for RW as INVALID extents aligned to the block
 * size, to the stripe unit when the range spans one; map the range into as few merged extents as
 * the reply allows), LAYOUTCOMMIT (written extents become READ_WRITE_DATA, size and mtime move, in
 * the COMPOUND's one transaction), LAYOUTRETURN (FILE, FSID, ALL), GETDEVICEINFO and
 * GETDEVICELIST. State rules and recalls are in layout.c; this file checks arguments and talks to
 * the store. */
#include "mds/layout_int.h"

#include "mds/compound.h"
#include "mds/fh.h"
#include "mds/ops.h"
#include "mds/pool.h"
#include "mds/state.h"
#include "proto/layout.h"
#include "proto/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of one block/SCSI extent on the wire and of the fixed parts of a LAYOUTGET result:
 * return_on_close + stateid, then the layout4 array (count, offset, length, iomode, type, body
 * length) and the extent count inside the body. */
#define EXTENT_XDR PROTO_BLOCK_EXTENT_XDR_SIZE
#define LAYOUTGET_FIXED (4 + 16)
#define LAYOUT_ARRAY_FIXED (4 + 8 + 8 + 4 + 4 + 4 + 4)
/* The most extents one LAYOUTGET returns, whatever the client could take. */
#define MAX_EXTENTS 16384u

static uint64_t floor_to(uint64_t v, uint64_t a)
{
	return v / a * a;
}

/* Round up, saturating to the largest multiple of a. */
static uint64_t ceil_to(uint64_t v, uint64_t a)
{
	if (v > UINT64_MAX - (a - 1))
		return floor_to(UINT64_MAX, a);
	return (v + a - 1) / a * a;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Whether clp has the file open (or delegated) for writing. */
static int client_may_write(const struct mds_file *f, const struct mds_client *clp)
{
	for (const struct mds_stateid *st = f->states; st; st = st->next_in_file)
		if (st->clp == clp && !st->revoked && (st->type == MDS_ST_OPEN || st->type == MDS_ST_DELEG) &&
		    (st->share_access & OPEN4_SHARE_ACCESS_WRITE))
			return 1;
	return 0;
}

/* ---- LAYOUTGET ------------------------------------------------------------------------------ */

struct lg_window {
	uint64_t off, end;   /* the aligned range the layout will describe (and RW allocates) */
	uint64_t need_end;   /* it must reach at least here (loga_offset + loga_minlength) */
};

static void layout_window(const struct mds_server *srv, const struct mds_inode *ino, const LAYOUTGET4args *a,
			  struct lg_window *w)
{
	const struct mds_store_format *fmt = mds_store_format(srv->store);
	uint64_t bs = srv->block_bytes, su = fmt->stripe_unit_bytes;
	uint64_t req_end = mds_lo_end(a->loga_offset, a->loga_length);
	uint64_t min_end = mds_lo_end(a->loga_offset, a->loga_minlength);
	uint64_t cap_end = mds_lo_end(a->loga_offset, max64(a->loga_minlength, MDS_LO_MAX_WINDOW_BYTES));
	uint64_t end, align = bs;

	end = min64(req_end, cap_end);
	if (a->loga_iomode == LAYOUTIOMODE4_READ) {
		/* Past the end of file there is nothing to describe but one hole. */
		uint64_t lim = max64(ceil_to(ino->size, bs), min_end);
		if (lim <= a->loga_offset)
			lim = mds_lo_end(a->loga_offset, bs);
		end = min64(end, lim);
	} else if (su && su % bs == 0 && end - a->loga_offset >= su) {
		/* Whole stripe units: each allocation then lands on one LUN per unit. */
		align = su;
	}
	w->off = floor_to(a->loga_offset, align);
	w->end = ceil_to(end, align);
	w->need_end = ceil_to(min_end, bs);
	if (w->need_end < w->off)
		w->need_end = w->off;
}

/* Map [w->off, w->end) into at most max extents for the layout, merged; *covered gets where they
 * end. */
static int map_extents(struct mds_compound *c, uint64_t fileid, uint32_t iomode, const struct mds_lo_type *t,
		       const struct lg_window *w, size_t max, struct proto_extent *out, size_t *nout, uint64_t *covered)
{
	const unsigned char *devid = mds_lo_devid(c->srv, t);
	struct mds_extent *pieces;
	uint64_t end_off;
	size_t n, k = 0;
	int rc;

	pieces = malloc((max ? max : 1) * sizeof(*pieces));
	if (!pieces)
		return -ENOMEM;
	rc = mds_ext_map(c->txn, fileid, w->off, w->end - w->off, pieces, max, &n, &end_off);
	if (rc) {
		free(pieces);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		const struct mds_extent *p = &pieces[i];
		pnfs_block_extent_state4 s;
		struct proto_extent *prev = k ? &out[k - 1] : NULL;
		uint64_t soff = p->vol_off;

		switch (p->state) {
		case MDS_EXT_RW:
			s = iomode == LAYOUTIOMODE4_RW ? PNFS_BLOCK_READ_WRITE_DATA : PNFS_BLOCK_READ_DATA;
			break;
		case MDS_EXT_READ:
			s = PNFS_BLOCK_READ_DATA;
			break;
		case MDS_EXT_INVALID:
			/* A reader sees never-written blocks as the hole they are. */
			s = iomode == LAYOUTIOMODE4_RW ? PNFS_BLOCK_INVALID_DATA : PNFS_BLOCK_NONE_DATA;
			break;
		default:
			s = PNFS_BLOCK_NONE_DATA;
			break;
		}
		if (s == PNFS_BLOCK_NONE_DATA)
			soff = 0;
		if (prev && prev->state == (uint32_t)s && prev->file_offset + prev->length == p->file_off &&
		    (s == PNFS_BLOCK_NONE_DATA || prev->storage_offset + prev->length == soff)) {
			prev->length += p->len;
			continue;
		}
		memcpy(out[k].vol_id, devid, NFS4_DEVICEID4_SIZE);
		out[k].file_offset = p->file_off;
		out[k].length = p->len;
		out[k].storage_offset = soff;
		out[k].state = (uint32_t)s;
		k++;
	}
	free(pieces);
	*nout = k;
	*covered = n ? end_off : w->off;
	return 0;
}

static int encode_layout(struct mds_compound *c, layouttype4 type, const struct proto_extent *ext, size_t n,
			 layout_content4 *out)
{
	int rc = proto_layout_extents_encode(type, ext, n, out);

	if (rc)
		return rc;
	return mds_compound_defer_free(c, (xdrproc_t)xdr_layout_content4, out);
}

/* Drop the never-written blocks of [off, end) of f that no layout covers (an allocation a
 * LAYOUTGET could not hand out after all). */
static void undo_alloc(struct mds_server *srv, struct mds_file *f, uint64_t off, uint64_t end)
{
	struct mds_lo_set s = { 0 };

	if (end > off && mds_lo_set_add(&s, off, end) == 0)
		mds_lo_drop_invalid(srv, f, &s);
	mds_lo_set_free(&s);
}

/* The checks of RFC 8881 §18.43.3 on the arguments alone, and the current file's inode. */
static nfsstat4 layoutget_check_args(struct mds_compound *c, const LAYOUTGET4args *a, struct mds_inode *ino,
				     const struct mds_lo_type **t)
{
	uint32_t iomode = a->loga_iomode;
	nfsstat4 st;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	st = mds_cfh_inode(c, ino);
	if (st)
		return st;
	if (iomode != LAYOUTIOMODE4_READ && iomode != LAYOUTIOMODE4_RW)
		return NFS4ERR_BADIOMODE;
	*t = mds_lo_type_offered(c->srv, a->loga_layout_type);
	if (!*t)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (ino->type != MDS_FT_REG)
		return NFS4ERR_LAYOUTUNAVAILABLE;
	if (a->loga_length == 0 || a->loga_length < a->loga_minlength ||
	    (a->loga_minlength != NFS4_UINT64_MAX && a->loga_minlength > NFS4_UINT64_MAX - a->loga_offset) ||
	    (a->loga_length != NFS4_UINT64_MAX && a->loga_length > NFS4_UINT64_MAX - a->loga_offset))
		return NFS4ERR_INVAL;
	if ((uint64_t)a->loga_offset >= (uint64_t)NFS4_INT64_MAX)
		return NFS4ERR_INVAL;
	if (c->srv->in_grace || !c->clp->reclaim_complete)
		return NFS4ERR_GRACE;
	if (iomode == LAYOUTIOMODE4_RW)
		return mds_check_writable_export(c);
	return NFS4_OK;
}

/* The file the stateid names (it must be the current one) and the client's layout state of that
 * type on it, if it has one yet (*ls NULL otherwise). */
static nfsstat4 layoutget_find_state(struct mds_compound *c, const LAYOUTGET4args *a, const struct mds_inode *ino,
				     struct mds_file **f, struct mds_lo_state **ls)
{
	struct mds_stateid *sst;
	nfsstat4 st;

	st = mds_sid_find(c, &a->loga_stateid, MDS_STM(MDS_ST_OPEN) | MDS_STM(MDS_ST_LOCK) | MDS_STM(MDS_ST_DELEG) | MDS_STM(MDS_ST_LAYOUT), &sst);
	if (st)
		return st;
	if (!sst->file || sst->file->fileid != ino->fileid)
		return NFS4ERR_BAD_STATEID;
	*f = sst->file;
	if (sst->type == MDS_ST_LAYOUT) {
		*ls = mds_lo_of(sst);
		if (!*ls || (*ls)->type != a->loga_layout_type)
			return NFS4ERR_BAD_STATEID;
	} else {
		*ls = mds_lo_find(*f, c->clp, a->loga_layout_type);
	}
	if (a->loga_iomode == LAYOUTIOMODE4_RW && !client_may_write(*f, c->clp))
		return NFS4ERR_OPENMODE;
	if ((*f)->orphaned)
		return NFS4ERR_LAYOUTUNAVAILABLE; /* removed: what is left of it goes through the MDS */
	return NFS4_OK;
}

/* Whether the pool's LUNs may be handed out now. */
static nfsstat4 layoutget_pool_ready(struct mds_server *srv, LAYOUTGET4res *r)
{
	struct mds_layouts *lo = srv->layouts;

	/* A LUN that came back as another one is handed to nobody: the client's I/O goes through the MDS,
	 * which refuses what touches that LUN (NFS4ERR_IO) and serves the rest. */
	if (mds_pool_luns_out(srv->pool, NULL)) {
		lo->stats.lun_out++;
		return NFS4ERR_LAYOUTUNAVAILABLE;
	}
	/* One whose session was lost is not handed out until its next login has been checked (a target
	 * that restarted may serve other LUNs now, which the check is about to find out). */
	if (mds_pool_luns_unchecked(srv->pool)) {
		lo->stats.lun_unchecked++;
		r->LAYOUTGET4res_u.logr_will_signal_layout_avail = FALSE;
		return NFS4ERR_LAYOUTTRYLATER;
	}
	return NFS4_OK;
}

/* How many extents fit what the client takes (loga_maxcount) and what the reply may still carry
 * (*room bytes). */
static nfsstat4 layoutget_extent_room(struct mds_compound *c, const LAYOUTGET4args *a, size_t *nmax, size_t *room)
{
	*room = mds_compound_reply_room(c);
	*nmax = MAX_EXTENTS;
	if (a->loga_maxcount < LAYOUT_ARRAY_FIXED + EXTENT_XDR)
		return NFS4ERR_TOOSMALL;
	*nmax = min64(*nmax, (a->loga_maxcount - LAYOUT_ARRAY_FIXED) / EXTENT_XDR);
	if (*room < LAYOUTGET_FIXED + LAYOUT_ARRAY_FIXED + EXTENT_XDR)
		return NFS4ERR_REP_TOO_BIG;
	*nmax = min64(*nmax, (*room - LAYOUTGET_FIXED - LAYOUT_ARRAY_FIXED) / EXTENT_XDR);
	return NFS4_OK;
}

/* RW: allocate the holes of the window (when the pool is short, at least up to w->need_end, and
 * w->end shrinks to it); *allocated says whether anything was. */
static nfsstat4 layoutget_alloc(struct mds_compound *c, uint64_t fileid, struct lg_window *w, uint64_t *allocated)
{
	uint64_t bs = c->srv->block_bytes;
	int rc;

	rc = mds_ext_alloc(c->txn, fileid, w->off, w->end - w->off, allocated);
	if (rc == -ENOSPC && w->need_end < w->end) {
		/* Not all of it: at least what the client must have. */
		w->end = ceil_to(w->need_end > w->off ? w->need_end : w->off + bs, bs);
		rc = mds_ext_alloc(c->txn, fileid, w->off, w->end - w->off, allocated);
	}
	if (rc)
		return rc == -ENOSPC ? NFS4ERR_NOSPC : mds_errno_to_nfs(rc);
	if (*allocated)
		mds_compound_dirty(c);
	return NFS4_OK;
}

/* The reply for a layout of [off, covered) held by ls, and the counters. */
static void layoutget_reply(struct mds_compound *c, const LAYOUTGET4args *a, const struct mds_lo_type *t,
			    struct mds_lo_state *ls, layout4 *l, uint64_t off, uint64_t covered, LAYOUTGET4resok *ok)
{
	struct mds_layouts *lo = c->srv->layouts;
	uint32_t iomode = a->loga_iomode;

	l->lo_offset = off;
	l->lo_length = covered - off;
	l->lo_iomode = iomode;
	ok->logr_return_on_close = TRUE;
	mds_stateid_export(ls->st, &ok->logr_stateid);
	ok->logr_layout.logr_layout_len = 1;
	ok->logr_layout.logr_layout_val = l;
	mds_sid_set_current(c, ls->st);
	lo->stats.granted[t->index][iomode == LAYOUTIOMODE4_RW]++;
	if (t->granted)
		t->granted(c->clp);
	lo->stats.granted_bytes += covered - off;
}

nfsstat4 mds_op_layoutget(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTGET4args *a = &arg->nfs_argop4_u.oplayoutget;
	LAYOUTGET4res *r = &res->nfs_resop4_u.oplayoutget;
	struct mds_server *srv = c->srv;
	struct mds_inode ino;
	struct mds_lo_state *ls;
	const struct mds_lo_type *t;
	struct mds_file *f;
	struct lg_window w;
	struct proto_extent *ext;
	layout4 *l;
	size_t room, nmax, n = 0;
	uint64_t covered = 0, allocated = 0;
	uint32_t iomode = a->loga_iomode;
	nfsstat4 st;
	int rc;

	st = layoutget_check_args(c, a, &ino, &t);
	if (!st)
		st = layoutget_find_state(c, a, &ino, &f, &ls);
	if (!st)
		st = layoutget_pool_ready(srv, r);
	if (st)
		return st;
	layout_window(srv, &ino, a, &w);
	if (w.end <= w.off)
		return NFS4ERR_INVAL;
	st = mds_lo_conflicts(srv, f, c->clp, w.off, w.end, iomode);
	if (st) {
		srv->layouts->stats.trylater++;
		if (st == NFS4ERR_LAYOUTTRYLATER)
			r->LAYOUTGET4res_u.logr_will_signal_layout_avail = FALSE;
		return st;
	}
	st = layoutget_extent_room(c, a, &nmax, &room);
	if (st)
		return st;
	if (!mds_compound_txn(c))
		return NFS4ERR_SERVERFAULT;
	if (iomode == LAYOUTIOMODE4_RW) {
		st = layoutget_alloc(c, ino.fileid, &w, &allocated);
		if (st)
			return st;
	}
	ext = mds_arena_calloc(&c->arena, nmax, sizeof(*ext));
	if (!ext) {
		st = NFS4ERR_RESOURCE;
		goto fail_undo;
	}
	rc = map_extents(c, ino.fileid, iomode, t, &w, nmax, ext, &n, &covered);
	if (rc) {
		st = mds_errno_to_nfs(rc);
		goto fail_undo;
	}
	if (covered < w.need_end || n == 0) {
		/* The extents the client must have do not fit in what it can take. */
		st = a->loga_maxcount < room ? NFS4ERR_TOOSMALL : NFS4ERR_REP_TOO_BIG;
		goto fail_undo;
	}
	if (allocated && covered < w.end)
		undo_alloc(srv, f, covered, w.end);
	if (!ls) {
		ls = mds_lo_new(srv, c->clp, f, a->loga_layout_type);
		if (!ls) {
			st = NFS4ERR_RESOURCE;
			goto fail_undo;
		}
	} else {
		mds_stateid_bump(ls->st);
	}
	rc = mds_lo_set_add(iomode == LAYOUTIOMODE4_RW ? &ls->rw : &ls->rd, w.off, covered);
	l = mds_arena_calloc(&c->arena, 1, sizeof(*l));
	if (rc || !l || encode_layout(c, a->loga_layout_type, ext, n, &l->lo_content) != 0) {
		st = NFS4ERR_RESOURCE;
		goto fail_discard;
	}
	layoutget_reply(c, a, t, ls, l, w.off, covered, &r->LAYOUTGET4res_u.logr_resok4);
	return NFS4_OK;

fail_discard:
	if (!mds_lo_holds(ls))
		mds_lo_discard(srv, ls);
fail_undo:
	/* what this LAYOUTGET allocated and could not hand out goes back */
	if (allocated)
		undo_alloc(srv, f, w.off, w.end);
	return st;
}

/* ---- LAYOUTCOMMIT ----------------------------------------------------------------------------- */

/* RFC 8154 §2.4.2: a SCSI layoutupdate lists the ranges written; the map has their volume
 * offsets. */
nfsstat4 mds_lo_scsi_decode_update(struct mds_server *srv, const struct mds_lo_type *t, struct mds_arena *arena,
				   const layoutupdate4 *u, struct mds_lo_written **out, size_t *n)
{
	pnfs_scsi_layoutupdate4 su;
	struct mds_lo_written *v;
	size_t cnt;

	(void)srv;
	(void)t;
	memset(&su, 0, sizeof(su));
	if (proto_scsi_layoutupdate_decode(u, &su) != 0)
		return NFS4ERR_BADLAYOUT;
	cnt = su.slu_commit_list.slu_commit_list_len;
	v = mds_arena_calloc(arena, cnt ? cnt : 1, sizeof(*v));
	for (size_t i = 0; v && i < cnt; i++) {
		v[i].off = su.slu_commit_list.slu_commit_list_val[i].sr_file_offset;
		v[i].len = su.slu_commit_list.slu_commit_list_val[i].sr_length;
	}
	proto_scsi_layoutupdate_free(&su);
	*out = v;
	*n = cnt;
	return NFS4_OK;
}

/* RFC 5663 §2.3.2: the client commits what it wrote, as READ_WRITE_DATA extents on our volume. */
nfsstat4 mds_lo_block_decode_update(struct mds_server *srv, const struct mds_lo_type *t, struct mds_arena *arena,
				    const layoutupdate4 *u, struct mds_lo_written **out, size_t *n)
{
	pnfs_block_layoutupdate4 bu;
	struct mds_lo_written *v;
	size_t cnt;
	nfsstat4 st = NFS4_OK;

	memset(&bu, 0, sizeof(bu));
	if (proto_block_layoutupdate_decode(u, &bu) != 0)
		return NFS4ERR_BADLAYOUT;
	cnt = bu.blu_commit_list.blu_commit_list_len;
	v = mds_arena_calloc(arena, cnt ? cnt : 1, sizeof(*v));
	for (size_t i = 0; v && i < cnt; i++) {
		const pnfs_block_extent4 *e = &bu.blu_commit_list.blu_commit_list_val[i];
		if (e->bex_state != PNFS_BLOCK_READ_WRITE_DATA ||
		    memcmp(e->bex_vol_id, mds_lo_devid(srv, t), NFS4_DEVICEID4_SIZE) != 0) {
			st = NFS4ERR_BADLAYOUT;
			goto out;
		}
		v[i].off = e->bex_file_offset;
		v[i].len = e->bex_length;
		v[i].soff = e->bex_storage_offset;
		v[i].have_soff = 1;
	}
	*out = v;
	*n = cnt;
out:
	proto_block_layoutupdate_free(&bu);
	return st;
}

/* The ranges a layoutupdate says were written, rounded out to whole blocks, after the checks
 * both types share. */
static nfsstat4 decode_update(struct mds_compound *c, const struct mds_lo_type *t, const layoutupdate4 *u,
			      struct mds_lo_written **out, size_t *n)
{
	struct mds_server *srv = c->srv;
	uint64_t bs = srv->block_bytes;
	struct mds_lo_written *v = NULL;
	size_t cnt = 0;
	nfsstat4 st;

	*out = NULL;
	*n = 0;
	/* An empty body: nothing written, only size and time to update. */
	if (u->lou_body.lou_body_len == 0)
		return NFS4_OK;
	st = t->decode_update(srv, t, &c->arena, u, &v, &cnt);
	if (st)
		return st;
	if (!v)
		return NFS4ERR_RESOURCE;
	for (size_t i = 0; i < cnt; i++) {
		uint64_t end;
		if (v[i].len == 0 || v[i].off > UINT64_MAX - v[i].len || v[i].off + v[i].len > (uint64_t)NFS4_INT64_MAX)
			return NFS4ERR_INVAL;
		/* Clients write whole blocks (zero-filling around their data): commit those. */
		end = ceil_to(v[i].off + v[i].len, bs);
		if (v[i].have_soff)
			v[i].soff -= v[i].off - floor_to(v[i].off, bs);
		v[i].off = floor_to(v[i].off, bs);
		v[i].len = end - v[i].off;
	}
	*out = v;
	*n = cnt;
	return NFS4_OK;
}

/* Make the allocated parts of [off, off+len) READ_WRITE_DATA, with the volume offsets the map
 * has (a client's storage offset only has to agree where it says something). Holes (blocks
 * that left the file meanwhile, e.g. by a truncate) are skipped. */
static int commit_range(struct mds_compound *c, uint64_t fileid, const struct mds_lo_written *r, uint64_t *bytes)
{
	struct mds_extent pieces[64];
	uint64_t off = r->off, end = r->off + r->len;

	while (off < end) {
		size_t n;
		uint64_t stop;
		int rc = mds_ext_map(c->txn, fileid, off, end - off, pieces, 64, &n, &stop);
		if (rc)
			return rc;
		for (size_t i = 0; i < n; i++) {
			const struct mds_extent *p = &pieces[i];
			if (p->state != MDS_EXT_INVALID && p->state != MDS_EXT_RW)
				continue;
			if (r->have_soff && r->soff + (p->file_off - r->off) != p->vol_off)
				LOG_DEBUG("file %llu: LAYOUTCOMMIT names storage offset %llu for file offset %llu, "
					  "the map has %llu; the map wins", (unsigned long long)fileid,
					  (unsigned long long)(r->soff + (p->file_off - r->off)),
					  (unsigned long long)p->file_off, (unsigned long long)p->vol_off);
			if (p->state == MDS_EXT_INVALID) {
				rc = mds_ext_commit(c->txn, fileid, p->file_off, p->len, p->vol_off);
				if (rc)
					return rc;
				*bytes += p->len;
			}
		}
		if (!n || stop <= off)
			break;
		off = stop;
	}
	return 0;
}

nfsstat4 mds_op_layoutcommit(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTCOMMIT4args *a = &arg->nfs_argop4_u.oplayoutcommit;
	LAYOUTCOMMIT4resok *ok = &res->nfs_resop4_u.oplayoutcommit.LAYOUTCOMMIT4res_u.locr_resok4;
	struct mds_server *srv = c->srv;
	struct mds_layouts *lo = srv->layouts;
	struct mds_inode ino, after;
	const struct mds_lo_type *t;
	struct mds_lo_written *ranges;
	struct mds_lo_state *ls = NULL;
	struct mds_time mt, *mtp = NULL;
	uint64_t end = 0, bytes = 0, range_end;
	size_t n;
	nfsstat4 st;
	int rc;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	t = mds_lo_type_offered(srv, a->loca_layoutupdate.lou_type);
	if (!t)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (ino.type != MDS_FT_REG)
		return NFS4ERR_LAYOUTUNAVAILABLE;
	if (a->loca_length != NFS4_UINT64_MAX && a->loca_length > NFS4_UINT64_MAX - a->loca_offset)
		return NFS4ERR_INVAL;
	range_end = mds_lo_end(a->loca_offset, a->loca_length);
	if (a->loca_last_write_offset.no_newoffset) {
		uint64_t lw = a->loca_last_write_offset.newoffset4_u.no_offset;
		if (lw < a->loca_offset || lw >= range_end || lw >= (uint64_t)NFS4_INT64_MAX)
			return NFS4ERR_INVAL;
		end = lw + 1;
	}
	if (a->loca_reclaim) {
		/* After a restart the layout is gone; during grace a client that had state may still
		 * commit what it wrote through it (RFC 8881 §18.42.3). */
		if (!srv->in_grace || !c->clp->reclaim_ok || c->clp->reclaim_complete)
			return NFS4ERR_NO_GRACE;
	} else {
		struct mds_stateid *sst;
		stateid4 sid;
		if (srv->in_grace)
			return NFS4ERR_GRACE;
		uint32_t seqid;
		st = mds_sid_resolve(c, &a->loca_stateid, &sid);
		if (st)
			return st;
		/* The seqid only has to be one we gave out: a commit racing a recall (which bumps it)
		 * or a parallel LAYOUTGET still names the same layout. */
		seqid = sid.seqid;
		sid.seqid = 0;
		st = mds_sid_lookup(c, &sid, MDS_STM(MDS_ST_LAYOUT), &sst);
		if (st)
			return st == NFS4ERR_BAD_STATEID ? NFS4ERR_BADLAYOUT : st;
		if (seqid && (int32_t)(seqid - sst->seqid) > 0)
			return NFS4ERR_BAD_STATEID;
		ls = mds_lo_of(sst);
		if (!ls || !sst->file || sst->file->fileid != ino.fileid || ls->type != a->loca_layoutupdate.lou_type)
			return NFS4ERR_BADLAYOUT;
		if (!mds_lo_set_overlaps(&ls->rw, a->loca_offset, range_end))
			return mds_lo_set_overlaps(&ls->rd, a->loca_offset, range_end) ? NFS4ERR_BADIOMODE
											: NFS4ERR_BADLAYOUT;
	}
	st = decode_update(c, t, &a->loca_layoutupdate, &ranges, &n);
	if (st)
		return st;
	/* Only what the client's RW layout covers may be committed. */
	for (size_t i = 0; ls && i < n; i++)
		if (!mds_lo_set_covers(&ls->rw, ranges[i].off, ranges[i].off + ranges[i].len))
			return NFS4ERR_BADLAYOUT;
	if (!mds_compound_txn(c))
		return NFS4ERR_SERVERFAULT;
	for (size_t i = 0; i < n; i++) {
		rc = commit_range(c, ino.fileid, &ranges[i], &bytes);
		if (rc) {
			LOG_ERROR("file %llu: LAYOUTCOMMIT: %s (%s)", (unsigned long long)ino.fileid,
				  mds_store_strerror(rc), mds_store_errstr(srv->store));
			return mds_errno_to_nfs(rc);
		}
	}
	if (a->loca_time_modify.nt_timechanged) {
		mt.sec = a->loca_time_modify.newtime4_u.nt_time.seconds;
		mt.nsec = a->loca_time_modify.newtime4_u.nt_time.nseconds;
		if (mt.nsec >= 1000000000u)
			return NFS4ERR_INVAL;
		mtp = &mt;
	}
	rc = mds_inode_note_write(c->txn, ino.fileid, end, mtp, &after);
	if (rc)
		return mds_errno_to_nfs(rc);
	mds_compound_dirty(c);
	if (after.size != ino.size) {
		ok->locr_newsize.ns_sizechanged = TRUE;
		ok->locr_newsize.newsize4_u.ns_size = after.size;
	} else {
		ok->locr_newsize.ns_sizechanged = FALSE;
	}
	lo->stats.commits++;
	lo->stats.committed_bytes += bytes;
	return NFS4_OK;
}

/* ---- LAYOUTRETURN ----------------------------------------------------------------------------- */

static nfsstat4 return_file(struct mds_compound *c, const LAYOUTRETURN4args *a, layoutreturn_stateid *out)
{
	const layoutreturn_file4 *lf = &a->lora_layoutreturn.layoutreturn4_u.lr_layout;
	struct mds_server *srv = c->srv;
	uint64_t bs = srv->block_bytes, off, end;
	struct mds_stateid *sst;
	struct mds_lo_state *ls;
	struct mds_inode ino;
	nfsstat4 st;
	int had;

	st = mds_cfh_inode(c, &ino);
	if (st)
		return st;
	if (lf->lrf_length == 0 ||
	    (lf->lrf_length != NFS4_UINT64_MAX && lf->lrf_length > NFS4_UINT64_MAX - lf->lrf_offset))
		return NFS4ERR_INVAL;
	st = mds_sid_find(c, &lf->lrf_stateid, MDS_STM(MDS_ST_LAYOUT), &sst);
	if (st)
		return st;
	ls = mds_lo_of(sst);
	if (!ls || !sst->file || sst->file->fileid != ino.fileid || ls->type != a->lora_layout_type)
		return NFS4ERR_BAD_STATEID;
	/* Only whole blocks go back: the client keeps what it did not return all of. */
	off = ceil_to(lf->lrf_offset, bs);
	end = mds_lo_end(lf->lrf_offset, lf->lrf_length);
	if (end != UINT64_MAX)
		end = floor_to(end, bs);
	had = end > off ? mds_lo_return_range(srv, ls, off, end, a->lora_iomode) : 0;
	if (had < 0)
		return NFS4ERR_SERVERFAULT;
	if (had)
		srv->layouts->stats.returned++;
	if (!mds_lo_holds(ls)) {
		/* Nothing left: the layout stateid ends (RFC 8881 §12.5.3). */
		mds_lo_discard(srv, ls);
		out->lrs_present = FALSE;
		return NFS4_OK;
	}
	mds_stateid_bump(ls->st);
	out->lrs_present = TRUE;
	mds_stateid_export(ls->st, &out->layoutreturn_stateid_u.lrs_stateid);
	mds_sid_set_current(c, ls->st);
	return NFS4_OK;
}

static int holds_iomode(const struct mds_lo_state *ls, uint32_t iomode)
{
	if (iomode == LAYOUTIOMODE4_READ)
		return ls->rd.n != 0;
	if (iomode == LAYOUTIOMODE4_RW)
		return ls->rw.n != 0;
	return ls->rd.n || ls->rw.n;
}

static nfsstat4 return_all(struct mds_compound *c, const LAYOUTRETURN4args *a)
{
	struct mds_server *srv = c->srv;

	/* Collect, then return (returning frees stateids from the client's list); a state returned
	 * no longer holds that iomode, so every pass finds fewer. */
	for (;;) {
		struct mds_lo_state *v[256];
		unsigned n = 0;
		int full = 0;
		for (struct mds_stateid *st = c->clp->states; st; st = st->next_in_client) {
			struct mds_lo_state *ls = mds_lo_of(st);
			if (!ls || st->revoked || ls->type != a->lora_layout_type || !holds_iomode(ls, a->lora_iomode))
				continue;
			if (n == 256) {
				full = 1;
				break;
			}
			v[n++] = ls;
		}
		for (unsigned i = 0; i < n; i++) {
			int had = mds_lo_return_range(srv, v[i], 0, UINT64_MAX, a->lora_iomode);
			if (had < 0)
				return NFS4ERR_SERVERFAULT;
			if (had)
				srv->layouts->stats.returned++;
			if (!mds_lo_holds(v[i]))
				mds_lo_discard(srv, v[i]);
		}
		if (!full)
			return NFS4_OK;
	}
}

nfsstat4 mds_op_layoutreturn(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	LAYOUTRETURN4args *a = &arg->nfs_argop4_u.oplayoutreturn;
	layoutreturn_stateid *out = &res->nfs_resop4_u.oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid;
	struct mds_server *srv = c->srv;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	if (!mds_lo_type_offered(srv, a->lora_layout_type))
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (a->lora_iomode != LAYOUTIOMODE4_READ && a->lora_iomode != LAYOUTIOMODE4_RW &&
	    a->lora_iomode != LAYOUTIOMODE4_ANY)
		return NFS4ERR_INVAL;
	out->lrs_present = FALSE;
	if (a->lora_reclaim) {
		/* Layouts do not survive a restart: during grace there is nothing to give back. */
		return srv->in_grace ? NFS4_OK : NFS4ERR_NO_GRACE;
	}
	if (!mds_compound_txn(c))
		return NFS4ERR_SERVERFAULT;
	switch (a->lora_layoutreturn.lr_returntype) {
	case LAYOUTRETURN4_FILE:
		if (!c->cfh.set)
			return NFS4ERR_NOFILEHANDLE;
		return return_file(c, a, out);
	case LAYOUTRETURN4_FSID:
		/* One file system: every layout of the client is in the current filehandle's. */
		if (!c->cfh.set)
			return NFS4ERR_NOFILEHANDLE;
		return return_all(c, a);
	case LAYOUTRETURN4_ALL:
		return return_all(c, a);
	default:
		return NFS4ERR_INVAL;
	}
}

/* ---- GETDEVICEINFO, GETDEVICELIST ----------------------------------------------------------- */

#define NOTIFY_SUPPORTED ((1u << NOTIFY_DEVICEID4_CHANGE) | (1u << NOTIFY_DEVICEID4_DELETE))

nfsstat4 mds_op_getdeviceinfo(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	GETDEVICEINFO4args *a = &arg->nfs_argop4_u.opgetdeviceinfo;
	GETDEVICEINFO4res *r = &res->nfs_resop4_u.opgetdeviceinfo;
	GETDEVICEINFO4resok *ok = &r->GETDEVICEINFO4res_u.gdir_resok4;
	struct mds_server *srv = c->srv;
	device_addr4 *da = &ok->gdir_device_addr;
	const struct mds_lo_type *t;
	uint32_t *words;
	size_t need;
	int rc;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	if (!mds_lo_type_offered(srv, a->gdia_layout_type))
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	t = mds_lo_type_of_devid(srv, (const unsigned char *)a->gdia_device_id);
	if (!t)
		return NFS4ERR_NOENT; /* not ours, or of an earlier server instance */
	if (t->type != a->gdia_layout_type)
		return NFS4ERR_INVAL;
	/* The device never changes while the server runs, so both notifications can be promised:
	 * there is never anything to notify. */
	words = mds_arena_calloc(&c->arena, 1, sizeof(*words));
	if (!words)
		return NFS4ERR_RESOURCE;
	words[0] = (a->gdia_notify_types.bitmap4_len ? a->gdia_notify_types.bitmap4_val[0] : 0) & NOTIFY_SUPPORTED;
	ok->gdir_notification.bitmap4_len = 1;
	ok->gdir_notification.bitmap4_val = words;
	if (a->gdia_maxcount == 0) {
		/* Only the notification bits (RFC 8881 §18.40.3): no address. */
		da->da_layout_type = t->type;
		return NFS4_OK;
	}
	rc = t->dev_addr(srv, c->clp, da);
	if (rc == -EAGAIN)
		return NFS4ERR_DELAY;
	if (rc)
		return rc == -ENOMEM ? NFS4ERR_RESOURCE : NFS4ERR_SERVERFAULT;
	need = 4 + 4 + ((da->da_addr_body.da_addr_body_len + 3u) & ~3u);
	if (need > a->gdia_maxcount) {
		proto_device_addr_free(da);
		memset(ok, 0, sizeof(*ok));
		r->GETDEVICEINFO4res_u.gdir_mincount = (count4)need;
		return NFS4ERR_TOOSMALL;
	}
	if (mds_compound_defer_free(c, (xdrproc_t)xdr_device_addr4, da) != 0) {
		memset(ok, 0, sizeof(*ok));
		return NFS4ERR_RESOURCE;
	}
	return NFS4_OK;
}

nfsstat4 mds_op_getdevicelist(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	GETDEVICELIST4args *a = &arg->nfs_argop4_u.opgetdevicelist;
	GETDEVICELIST4resok *ok = &res->nfs_resop4_u.opgetdevicelist.GETDEVICELIST4res_u.gdlr_resok4;
	struct mds_server *srv = c->srv;
	unsigned char verf[NFS4_VERIFIER_SIZE];
	const struct mds_lo_type *t;
	deviceid4 *ids;

	if (!c->clp)
		return NFS4ERR_OP_NOT_IN_SESSION;
	t = mds_lo_type_offered(srv, a->gdla_layout_type);
	if (!t)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (a->gdla_maxdevices == 0)
		return NFS4ERR_INVAL;
	/* The list (one device, the pool volume) is the same for the server's life. */
	for (int i = 0; i < NFS4_VERIFIER_SIZE; i++)
		verf[i] = (unsigned char)(srv->boot >> (56 - 8 * i));
	if (a->gdla_cookie != 0) {
		if (a->gdla_cookie != 1)
			return NFS4ERR_BAD_COOKIE;
		if (memcmp(a->gdla_cookieverf, verf, NFS4_VERIFIER_SIZE) != 0)
			return NFS4ERR_NOT_SAME;
	}
	memcpy(ok->gdlr_cookieverf, verf, NFS4_VERIFIER_SIZE);
	ok->gdlr_cookie = 1;
	ok->gdlr_eof = TRUE;
	if (a->gdla_cookie == 1)
		return NFS4_OK;
	ids = mds_arena_calloc(&c->arena, 1, sizeof(*ids));
	if (!ids)
		return NFS4ERR_RESOURCE;
	memcpy(ids[0], mds_lo_devid(srv, t), NFS4_DEVICEID4_SIZE);
	ok->gdlr_deviceid_list.gdlr_deviceid_list_len = 1;
	ok->gdlr_deviceid_list.gdlr_deviceid_list_val = ids;
	return NFS4_OK;
}
