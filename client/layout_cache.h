/* What the files of the layout cache share and nobody else needs: layout.c (attach, waiting I/O,
 * stateids, LAYOUTGET), layout_seg.c (segments, dirty ranges, write locks), layout_commit.c
 * (LAYOUTCOMMIT and its reclaim) and layout_return.c (LAYOUTRETURN, truncate, recalls). The rest of
 * the data path sees the layout through client/layout_int.h alone. */
#ifndef CLIENT_LAYOUT_CACHE_H
#define CLIENT_LAYOUT_CACHE_H

#include "client/layout_int.h"

/* off + len, saturating at UINT64_MAX (a segment to the end of the file). */
static inline uint64_t end_of(uint64_t off, uint64_t len)
{
	return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

/* The layout's commit and zero-fill granularity. */
static inline uint64_t lo_blksize(const struct pc_layout *lo)
{
	return lo->blksize ? lo->blksize : 4096;
}

/* layout.c */
/* Free the layout once nothing holds it: no open handle, waiting I/O or call of its own out. */
void pc_layout_maybe_free(struct pc_layout *lo);
/* Take a layout stateid from a reply if it is newer than ours (RFC 8881 §12.5.3). */
void pc_layout_sid_take(struct pc_layout *lo, const stateid4 *s);
/* The stateid is gone: every segment dies (freed once its I/O ends). */
void pc_layout_sid_forget(struct pc_layout *lo);
/* An open handle of the file (borrowed), or NULL when none is open. */
struct pnfs_fh *pc_layout_any_fh(struct pc_layout *lo);
/* A commit's failure, told to every open handle of the file (and fh): sticky -EIO with msg. */
void pc_layout_sticky_all(struct pc_layout *lo, struct pnfs_fh *fh, const char *msg);

/* layout_seg.c */
void pc_seg_free(struct pc_seg *s);
/* Whether s is alive, meets [a, b) and is of iomode (LAYOUTIOMODE4_ANY: of any). */
static inline int pc_seg_meets(const struct pc_seg *s, uint64_t a, uint64_t b, layoutiomode4 iomode)
{
	return !s->dead && s->end > a && s->off < b && (iomode == LAYOUTIOMODE4_ANY || s->iomode == iomode);
}
/* Push s on a list of segments (nothing when s is NULL). */
static inline void pc_seg_push(struct pc_seg **list, struct pc_seg *s)
{
	if (s) {
		s->next = *list;
		*list = s;
	}
}
/* The segments of the list add join the layout's. */
void pc_segs_adopt(struct pc_layout *lo, struct pc_seg *add);
/* A copy of s restricted to [a, b) (NULL when nothing of it remains). */
struct pc_seg *pc_seg_trim(const struct pc_seg *s, uint64_t a, uint64_t b);
/* Take [a, b) out of the segments (those matching iomode; LAYOUTIOMODE4_ANY: all). */
void pc_segs_cut(struct pc_layout *lo, uint64_t a, uint64_t b, layoutiomode4 iomode);
/* Free dead segments nothing uses. */
void pc_segs_reap(struct pc_layout *lo);
/* Whether any segment is alive. */
int pc_segs_live(struct pc_layout *lo);
/* Forget the dirty ranges: the writes they name will not be committed. */
void pc_dirty_drop(struct pc_layout *lo);
/* Install a granted segment (takes ext, malloc'd): it replaces what we held for its range and
 * iomode. 0 or -ENOMEM (ext is then still the caller's). */
int pc_seg_install(struct pc_layout *lo, uint64_t off, uint64_t len, layoutiomode4 iomode,
		   struct pc_ext *ext, size_t n);

/* layout_commit.c */
/* Start a commit of everything written so far; cb may be NULL (background). 0 (cb will run),
 * -ENOENT (nothing to commit), -EBUSY (a commit is running: waiters see its end), -ENOMEM. */
int pc_layout_commit_start(struct pc_layout *lo, struct pnfs_fh *fh, pc_io_cb cb, void *arg);

/* layout_return.c */
/* The recall timer: drive the recalls not yet answered. */
void pc_layout_recall_fire(struct pnfs_context *ctx, struct pc_timer *t);
/* Mark the segments in [off, end) of iomode recalled; whether any was hit. */
int pc_segs_mark(struct pc_layout *lo, uint64_t off, uint64_t end, layoutiomode4 iomode);

#endif
