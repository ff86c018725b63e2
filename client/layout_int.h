/* The data path's internals, shared by layout*.c (the layout cache and LAYOUTGET / LAYOUTCOMMIT /
 * LAYOUTRETURN / recalls), device.c (GETDEVICEINFO cache, blkmap resolution, PR registration) and
 * pio.c (direct I/O: extents to volume I/O, zero-fill, copy-on-write, fallback). The idea it rests on:
 * one layout per file per context, made of the segments the server granted; I/O that cannot run yet
 * (no layout, device not resolved, range recalled) waits on the layout and is stepped again when
 * anything changes. */
#ifndef CLIENT_LAYOUT_INT_H
#define CLIENT_LAYOUT_INT_H

#include "client/internal.h"

#include "blkmap/blkmap.h"

#define PC_LO_READ_AHEAD (64ull << 20)  /* LAYOUTGET asks at least this much */
/* A sequential writer past this share (1/N) of the RW segment it writes in asks for the next one */
#define PC_LO_WRITE_AHEAD_AT 2
#define PC_COMMIT_BATCH 4096             /* extents per LAYOUTCOMMIT */
#define PC_DIRTY_SOFT_MAX 2048           /* more dirty ranges than this: commit in the background */
#define PC_OW_DEVS_MAX 8                 /* devices remembered as overwritten before a commit */
#define PC_FENCE_CHECKS 3                /* unanswered SEQUENCEs before a RESERVATION CONFLICT counts */

enum pc_dev_state {
	PC_DEV_NEW = 0,
	PC_DEV_FETCHING,    /* GETDEVICEINFO in flight */
	PC_DEV_RESOLVING,   /* blkmap resolution running on its own thread */
	PC_DEV_READY,
	PC_DEV_FAILED,      /* cannot be used: why says */
	PC_DEV_FENCED,      /* RESERVATION CONFLICT: the server fenced us */
};

/* A blkmap context the device's LUNs live in, serviced from the client's loop. A device resolves
 * into a context of its own, on a thread of its own (device.c), so a portal that does not answer
 * holds up that device alone, never the MDS session or the other devices' I/O. */
struct pc_bm {
	struct pc_bm *next;
	struct blkmap_ctx *bm;
	struct pc_watch w;
};

struct pc_resolve;
struct commit_run;

struct pc_device {
	struct pc_device *next;
	struct pnfs_context *ctx;
	uint8_t id[NFS4_DEVICEID4_SIZE];
	layouttype4 type;
	enum pc_dev_state state;
	struct blkmap_vol *vol;
	uint32_t block_bytes;       /* the largest logical block among its LUNs */
	uint64_t size_bytes;
	char why[400];
	int stale;                  /* CB_NOTIFY_DEVICEID change: fetch again before new I/O */
	struct pc_waiter *waiters;
	struct pc_resolve *job;     /* the resolution running on its thread (RESOLVING) */
	struct pc_bm *bms;          /* its blkmap contexts: the current one first, then earlier ones
	                               that may still complete I/O (closed once idle) */
	uint32_t maxcount;          /* GETDEVICEINFO gdia_maxcount (grows on NFS4ERR_TOOSMALL) */
	unsigned key_gen;           /* bumped with each new client ID (SCSI: a new PR key to register) */
	int fetch_setup;            /* the GETDEVICEINFO in flight goes out during a reclaim */
	unsigned fetch_gen;         /* key_gen when the last GETDEVICEINFO was sent */
};

struct pc_ext {
	uint64_t foff, len, soff;   /* file offset, length, storage offset in the device's volume */
	uint32_t state;             /* PNFS_BLOCK_* (the SCSI states have the same numbers) */
	struct pc_device *dev;
};

struct pc_seg {
	struct pc_seg *next;
	uint64_t off, end;          /* [off, end) of the file; end saturates at UINT64_MAX */
	layoutiomode4 iomode;
	struct pc_ext *ext;         /* sorted by foff */
	size_t n;
	int dead;                   /* replaced or returned: freed when inflight drops to 0 */
	unsigned inflight;          /* direct I/O pieces using it */
	int recalled;               /* the server asked for it back: no new I/O */
};

/* A range written through a layout and not yet committed. */
struct pc_dirty {
	uint64_t foff, len, soff;
	struct pc_device *dev;
	int invalid;                /* written into an INVALID_DATA extent (needs the state change) */
};

/* One layout type the client uses (block volume, RFC 5663; SCSI, RFC 8154): what differs between
 * them, in one table (layout_type.c), so the layout and device code do not branch on the type.
 * Both decode to the same extents (struct proto_extent, then struct pc_ext). */
struct pc_lo_type {
	layouttype4 type;
	const char *name;           /* "block", "scsi" */
	/* Its devices carry our PR key: a new client ID names them anew, and a restarted server may
	 * not know an ID it gave out (GETDEVICEINFO NFS4ERR_NOENT is then expected). */
	int keyed;
	/* Which the client takes when the server offers several: the highest (SCSI: it fences with
	 * persistent reservations). */
	int preference;
	/* Whether the context's options allow it (NULL: always). */
	int (*allowed)(const struct pnfs_context *ctx);
	/* Before the first I/O on a resolved volume (SCSI: REGISTER our key on every LUN); NULL: none.
	 * 0 or -errno with err filled. Runs on the device's resolver thread. */
	int (*prepare)(struct blkmap_ctx *bm, struct blkmap_vol *vol, char *err, size_t errlen);
	/* The layoutupdate4 for the ranges written into INVALID_DATA among d[0..n) (k of them), its
	 * arrays from c's arena. 0, -ENOMEM, or the encoder's error. */
	int (*encode_update)(struct pc_compound *c, const struct pc_dirty *d, size_t n, size_t k, layoutupdate4 *out);
};
/* The type's row, or NULL for a layout type the client does not speak. */
const struct pc_lo_type *pc_lo_type(layouttype4 type);

/* A write's claim on its layout blocks: overlapping writes wait (zero-fill and read-modify-write of
 * edge blocks must not race). */
struct pc_lock {
	struct pc_lock *next, **pprev; /* pprev: the pointer to this one (released in O(1)) */
	uint64_t start, end;
};

struct pc_recall {
	struct pc_recall *next;
	uint64_t off, len;
	layoutiomode4 iomode;
};

/* One read or write on the data path (pio.c). */
struct pc_io {
	struct pc_io *wnext;        /* the layout's wait queue */
	struct pnfs_fh *fh;
	struct pc_layout *lo;
	int write;
	struct iovec *iov;
	int niov;
	size_t total;
	uint64_t off;
	pc_io_cb cb;
	void *arg;
	int waiting;
	int force_mds;              /* the layout path gave up on this one */
	unsigned trylater;
	int size_checked;
	struct pc_lock *lock;
	unsigned pending;           /* pieces in flight */
	int err;
	char errmsg[400];
	struct pc_device *errdev;
	unsigned errgen;            /* errdev's key_gen when the failed piece was issued */
	unsigned fence_checks;      /* SEQUENCEs sent to check a RESERVATION CONFLICT with the server */
	int fence_answered;         /* and one was answered */
	int stale_write;            /* a piece landed through a layout the server lost, after its reclaim */
	unsigned redone;            /* times done again for that */
	uint64_t len;               /* bytes this I/O moves (reads: clamped at EOF) */
};

struct pc_layout {
	struct pc_layout *next;     /* ctx's list */
	struct pnfs_context *ctx;
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;
	unsigned refs;              /* open handles of this file */
	layouttype4 type;
	stateid4 sid;
	int have_sid;
	int return_on_close;
	struct pc_seg *segs;
	struct pc_dirty *dirty;
	size_t ndirty, capdirty;
	struct pc_dirty *committing_list; /* taken out of dirty by the LAYOUTCOMMIT in flight */
	size_t ncommitting;
	uint64_t commit_write_end;  /* write_end of the writes that commit covers */
	int written;                /* writes since the last LAYOUTCOMMIT */
	uint64_t write_end;         /* end of the furthest write since then */
	uint64_t write_front;       /* the furthest end of a direct write issued through this layout */
	int getting;                /* LAYOUTGET in flight (one at a time per file) */
	int committing;
	int returning;
	unsigned trylater;          /* LAYOUTTRYLATER / RECALLCONFLICT in a row */
	int busy_noticed;           /* told once that I/O went through the MDS for want of a layout */
	int err_noticed;            /* told once that a LAYOUTGET failed and I/O went through the MDS */
	struct pc_io *waitq;        /* I/O waiting for the layout to change */
	struct pc_lock *locks;
	struct pc_recall *recalls;
	struct pc_timer kick;       /* steps the waiting I/O from the top of the loop */
	struct pc_timer recall_timer;
	struct pc_timer retry_timer;
	uint32_t blksize;           /* commit and zero-fill granularity */
	/* devices written through READ_WRITE_DATA extents since the last commit (not in the dirty
	 * list, which holds what LAYOUTCOMMIT must change): flushed whole before it */
	struct pc_device *ow_devs[PC_OW_DEVS_MAX];
	unsigned now_devs;
	int ow_all;                 /* more devices than that: flush every device */
	struct pc_waiter *commit_waiters;
	/* Told when a LAYOUTGET ends (layout queries): get_result is 0 (installed), 1 (the server said
	 * try again later) or -errno (failed, the context error says why). */
	struct pc_waiter *get_waiters;
	int get_result;
	int reclaim;                /* the server lost our state: dirty waits for a LAYOUTCOMMIT reclaim */
	struct commit_run *running; /* the commit in progress (its writes are committing_list) */
	unsigned handed;            /* commits that handed their writes to a reclaim, calls still out */
	unsigned epoch;             /* bumped when the server loses the layout with our client ID */
};

/* pio.c: (re)try an I/O; it completes, queues itself on its layout, or goes to the MDS. */
void pc_pio_step(struct pc_io *io);
/* End an I/O that has nothing in flight (it waits on its layout) with status. */
void pc_pio_fail(struct pc_io *io, int status);

/* device.c */
struct pc_device *pc_device_obtain(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE], layouttype4 type);
/* 1: ready; 0: not yet (fn(ctx, arg) runs when it settles); -errno: unusable (d->why says why). */
int pc_device_ensure(struct pc_device *d, void (*fn)(struct pnfs_context *, void *), void *arg);
void pc_device_fail(struct pc_device *d, enum pc_dev_state st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* layout.c, layout_seg.c, layout_commit.c, layout_return.c */
struct pc_layout *pc_layout_attach(struct pnfs_fh *fh);
void pc_layout_detach(struct pnfs_fh *fh);
void pc_layout_wait(struct pc_layout *lo, struct pc_io *io);
void pc_layout_kick(struct pc_layout *lo);
/* Start a LAYOUTGET for [off, off+len) unless one is in flight; waiting I/O is kicked when it ends. */
void pc_layout_get(struct pc_layout *lo, struct pnfs_fh *fh, uint64_t off, uint64_t len, uint64_t minlen,
		   layoutiomode4 iomode);
/* Run fn(ctx, arg) once, when the LAYOUTGET in flight (or the next one) ends; lo->get_result says
 * how. 0 or -ENOMEM. */
int pc_layout_on_get(struct pc_layout *lo, void (*fn)(struct pnfs_context *, void *), void *arg);
/* Take back a waiter pc_layout_on_get registered: 1 if it was still waiting, 0 if it ran. */
int pc_layout_off_get(struct pc_layout *lo, void (*fn)(struct pnfs_context *, void *), void *arg);
/* The segment that serves offset off for I/O of this kind (write: RW only), or NULL. *recalled is set
 * when a recalled segment covers it (the I/O must wait). */
struct pc_seg *pc_layout_find(struct pc_layout *lo, uint64_t off, int write, int *recalled);
/* Whether [foff, foff+len) of the file is dirty (written and not committed) as a whole; partially
 * dirty ranges return -1 (the caller splits at pc_dirty_boundary). */
int pc_dirty_state(struct pc_layout *lo, uint64_t foff, uint64_t len);
/* The first dirty-state boundary after foff (end of the dirty or clean run containing foff). */
uint64_t pc_dirty_boundary(struct pc_layout *lo, uint64_t foff, uint64_t limit);
void pc_dirty_add(struct pc_layout *lo, uint64_t foff, uint64_t len, uint64_t soff, struct pc_device *dev,
		  int invalid);
/* Whether a LAYOUTCOMMIT still has to flush d (dirty ranges on it, or a commit in flight). */
int pc_layouts_hold_device(struct pnfs_context *ctx, const struct pc_device *d);
/* A write through a READ_WRITE_DATA extent of dev landed: the next commit flushes dev first. */
void pc_layout_note_overwrite(struct pc_layout *lo, struct pc_device *dev);
int pc_lock_try(struct pc_layout *lo, uint64_t start, uint64_t end, struct pc_lock **out);
void pc_lock_release(struct pc_layout *lo, struct pc_lock *l);
/* An I/O piece finished on a segment: recall and return work may proceed. */
void pc_layout_io_done(struct pc_layout *lo);
/* Background LAYOUTCOMMIT when the dirty list grows long. */
void pc_layout_maybe_commit(struct pc_layout *lo, struct pnfs_fh *fh);
/* The server's layouts for this file are unusable (fencing, SAN failure): commit what can be,
 * return everything, and send the file's I/O through the MDS from now on. */
void pc_layout_abandon(struct pc_layout *lo, struct pnfs_fh *fh, const char *why);

/* For tests: install a segment without the server (as if LAYOUTGET had granted it) and a device
 * (already resolved: vol's leaves bound). Used by the data-path suite before the MDS serves layouts. */
int pc_test_inject_device(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE], layouttype4 type,
			  struct blkmap_vol *vol);
int pc_test_inject_segment(struct pnfs_fh *fh, uint64_t off, uint64_t len, layoutiomode4 iomode,
			   const struct pnfs_extent *ext, size_t n);
/* The dirty list as a LAYOUTCOMMIT would send it (for tests). *out malloc'd. */
int pc_test_dirty(struct pnfs_fh *fh, struct pnfs_extent **out, size_t *n);

#endif
