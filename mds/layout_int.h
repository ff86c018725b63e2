/* What the layout code keeps: per client, file and layout type one layout stateid whose state is a
 * mds_lo_state (segments by iomode, recalls in flight), server-wide the list of those states,
 * fencing jobs, which files have blocks parked, the device IDs and counters. Shared by layout.c
 * (state, conflicts, recalls, revocation), op_layout.c (the operations), layout_dev.c (device
 * IDs and addresses), fence.c and metrics.c. Internal header. */
#ifndef MDS_LAYOUT_INT_H
#define MDS_LAYOUT_INT_H

#include "mds/layout.h"
#include "mds/layout_seg.h"
#include "mds/server.h"
#include "mds/store.h"

struct mds_arena;
struct mds_fence;
struct mds_metrics;

/* The most a LAYOUTGET allocates or maps beyond its offset when asked for "to the end of file". */
#define MDS_LO_MAX_WINDOW_BYTES (64ull << 20)
/* Resend a recall the client answered NFS4ERR_DELAY after this long. */
#define MDS_LO_RECALL_RETRY_MS 500
/* Retry a fencing that failed (a LUN unreachable) after this long. */
#define MDS_LO_FENCE_RETRY_MS 2000
/* The timer that checks recalls and fencing. */
#define MDS_LO_TICK_MS 200
/* Layout types in the table of layout_type.c (block volume, SCSI). */
#define MDS_LO_NTYPES 2

/* One CB_LAYOUTRECALL a state must answer by returning every segment of iomode in [off, end). */
struct mds_lo_recall {
	struct mds_lo_recall *next;
	uint64_t off, end;
	uint32_t iomode;          /* LAYOUTIOMODE4_READ, _RW or _ANY */
	int changed;              /* clora_changed: the file changed (truncate, remove) */
	uint64_t sent_ms;         /* when the recall began: the timeout counts from here */
	uint64_t resend_ms;       /* resend at this time (0: not scheduled) */
	uint32_t seqid;           /* the layout stateid's seqid in the recall */
};

/* st->layout of an MDS_ST_LAYOUT stateid. */
struct mds_lo_state {
	struct mds_stateid *st;
	layouttype4 type;
	struct mds_lo_set rd, rw;         /* segments held, by iomode */
	struct mds_lo_recall *recalls;
	struct mds_lo_state *next, *prev; /* mds_layouts.states */
};

/* A client being fenced (SCSI layouts): until PREEMPT AND ABORT of its key completed on every
 * LUN, the blocks its revoked layouts covered stay parked and new layouts on them wait. */
struct mds_lo_fence_file {
	struct mds_file *f;               /* referenced */
	struct mds_lo_set rw;             /* where never-written blocks are dropped afterwards */
	struct mds_lo_set all;            /* every range it held (conflicts while fencing) */
};
struct mds_lo_fence_job {
	struct mds_lo_fence_job *next;
	clientid4 clientid;
	uint64_t key;
	int running;                      /* PR commands outstanding */
	uint64_t retry_ms;                /* after a failure: try again at */
	unsigned attempts;
	unsigned nfiles, capfiles;
	struct mds_lo_fence_file *files;
};

struct mds_lo_stats {
	uint64_t granted[MDS_LO_NTYPES][2]; /* [mds_lo_type.index][0 read, 1 rw] LAYOUTGETs granted */
	uint64_t granted_bytes;           /* bytes of file covered by granted layouts */
	uint64_t recalls;                 /* CB_LAYOUTRECALLs started */
	uint64_t returned;                /* LAYOUTRETURNs (and return-on-close) that returned something */
	uint64_t revoked;                 /* layout stateids revoked */
	uint64_t commits;                 /* LAYOUTCOMMITs */
	uint64_t committed_bytes;         /* bytes of extents committed */
	uint64_t fenced;                  /* clients fenced (PREEMPT AND ABORT done on every LUN) */
	uint64_t fence_failures;          /* fencing attempts that failed on some LUN */
	uint64_t trylater;                /* LAYOUTGETs answered LAYOUTTRYLATER / RECALLCONFLICT */
	uint64_t lun_out;                 /* LAYOUTGETs refused while a LUN was out of service */
	uint64_t lun_unchecked;           /* LAYOUTGETs answered TRYLATER while a LUN's new session was unchecked */
};

/* What a LUN said to a PERSISTENT RESERVE OUT REGISTER with APTPL set (fence.c, at start). */
enum mds_aptpl {
	MDS_APTPL_UNPROBED = 0, /* scsi-layouts no, or a LUN that is not iSCSI */
	MDS_APTPL_ACCEPTED,
	MDS_APTPL_REFUSED,      /* ILLEGAL REQUEST: tgt */
	MDS_APTPL_UNKNOWN,      /* the probe failed otherwise (the LUN gone, NOT READY, ...) */
};

struct mds_layouts {
	struct mds_server *srv;
	uint64_t timer;
	uint64_t recall_timeout_ms;
	struct mds_lo_state *states;      /* every layout state */
	unsigned nstates;
	struct mds_lo_fence_job *jobs;
	struct mds_map pending_files;     /* fileid -> lowest parked file offset + 1 (layout.c) */
	struct mds_fence *fence;          /* NULL: no SCSI fencing, so no SCSI layouts */
	uint8_t aptpl[MDS_MAX_LUNS];      /* enum mds_aptpl, per LUN, probed at start */
	unsigned char devid[MDS_LO_NTYPES][NFS4_DEVICEID4_SIZE]; /* by mds_lo_type.index */
	device_addr4 block_addr;          /* the pool volume as GETDEVICEINFO gives it (block) */
	int have_block_addr;
	struct mds_metrics *metrics;
	struct mds_lo_stats stats;
};

static inline struct mds_lo_state *mds_lo_of(const struct mds_stateid *st)
{
	return st && st->type == MDS_ST_LAYOUT ? (struct mds_lo_state *)st->layout : NULL;
}

/* ---- layout.c: state ------------------------------------------------------------------------- */
/* The layout state of (client, file, type), or NULL. */
struct mds_lo_state *mds_lo_find(struct mds_file *f, struct mds_client *clp, layouttype4 type);
/* A new layout stateid (seqid 1) with an empty state. NULL on allocation failure. */
struct mds_lo_state *mds_lo_new(struct mds_server *srv, struct mds_client *clp, struct mds_file *f,
				layouttype4 type);
/* Whether the state holds any segment. */
int mds_lo_holds(const struct mds_lo_state *ls);
/* Whether a state of the client has a recall outstanding overlapping [off, end) for iomode. */
int mds_lo_recalling(const struct mds_lo_state *ls, uint64_t off, uint64_t end, uint32_t iomode);
/* A LAYOUTGET of [off, end) with iomode by clp on f: NFS4_OK when nothing conflicts; otherwise
 * recalls what conflicts (other clients' segments, once per range) and returns
 * NFS4ERR_LAYOUTTRYLATER, or NFS4ERR_RECALLCONFLICT when clp itself has a recall outstanding
 * on the range. */
nfsstat4 mds_lo_conflicts(struct mds_server *srv, struct mds_file *f, struct mds_client *clp, uint64_t off,
			  uint64_t end, uint32_t iomode);
/* Remove [off, end) of iomode (READ, RW or ANY) from the state: never-written blocks in the RW part
 * no other layout covers are dropped, recalls satisfied are completed, parked blocks of the file
 * are released once no layout covers it any more. Store changes join the open transaction (a
 * COMPOUND's) or commit in one of their own. Returns 1 if anything was held in the range, 0 if
 * not (the state may now be empty: the caller frees its stateid if it wants), -errno on a store
 * failure. */
int mds_lo_return_range(struct mds_server *srv, struct mds_lo_state *ls, uint64_t off, uint64_t end,
			uint32_t iomode);
/* Drop never-written (INVALID) blocks of f in the ranges of rw that no remaining layout covers.
 * Blocks go to free space now, or parked while a READ layout or a fencing job reaches them. */
int mds_lo_drop_invalid(struct mds_server *srv, struct mds_file *f, const struct mds_lo_set *rw);
/* Release the file's parked blocks once no layout or fencing job reaches the lowest file offset
 * they were mapped at. */
int mds_lo_release_if_free(struct mds_server *srv, struct mds_file *f);
/* Free an empty state's stateid (it must hold nothing). */
void mds_lo_discard(struct mds_server *srv, struct mds_lo_state *ls);
/* Whether a fencing job still covers [off, end) of f. */
int mds_lo_fencing(const struct mds_server *srv, const struct mds_file *f, uint64_t off, uint64_t end);

/* ---- layout_dev.c: device IDs and addresses ----------------------------------------------------- */
int mds_lo_dev_init(struct mds_server *srv, char *err, size_t errlen);
void mds_lo_dev_free(struct mds_server *srv);
/* The layout type a device ID is ours for (NULL if none: unknown or of an earlier generation). */
const struct mds_lo_type *mds_lo_type_of_devid(const struct mds_server *srv, const unsigned char *devid);

/* ---- layout_type.c: what differs between the layout types ------------------------------------- */
/* A range a LAYOUTCOMMIT says was written (block: extents, SCSI: ranges), before the checks and
 * rounding both types share; soff only where the type carries a storage offset. */
struct mds_lo_written {
	uint64_t off, len, soff;
	int have_soff;
};

/* One layout type the MDS grants (the shape of Linux nfsd's per-layout-type ops): everything that
 * depends on the type is here, so the rest of the layout code does not branch on it. The extents
 * themselves are the same for both (struct proto_extent). */
struct mds_lo_type {
	layouttype4 type;
	const char *name;                 /* "block", "scsi": metrics labels, messages */
	unsigned index;                   /* its row here and in mds_lo_stats.granted */
	int fences;                       /* a revoked layout of this type fences its client (PR) */
	/* Whether the server offers it (SCSI: only with fencing set up). */
	int (*offered)(const struct mds_server *srv);
	/* The generation in its device ID (SCSI: the server's boot, so an ID from before a restart,
	 * whose address carried the clients' keys of then, is not taken for a current one). */
	uint32_t (*devid_gen)(const struct mds_server *srv);
	/* GETDEVICEINFO's address for clp (SCSI: with that client's PR key; the first one activates
	 * fencing). out is freed by the caller with proto_device_addr_free. 0 or -errno (-EAGAIN: ask
	 * again later). */
	int (*dev_addr)(struct mds_server *srv, const struct mds_client *clp, device_addr4 *out);
	/* A non-empty layoutupdate4 body of this type: *out (count *n) from arena; NFS4ERR_BADLAYOUT
	 * for a body that does not decode or names what is not ours. */
	nfsstat4 (*decode_update)(struct mds_server *srv, const struct mds_lo_type *t, struct mds_arena *arena,
				  const layoutupdate4 *u, struct mds_lo_written **out, size_t *n);
	/* A LAYOUTGET of this type was granted to clp (NULL: nothing to note). */
	void (*granted)(struct mds_client *clp);
};
/* The type's row, or NULL for a layout type the MDS does not know. */
const struct mds_lo_type *mds_lo_type(layouttype4 type);
/* The type's row if the server offers it now, else NULL. */
const struct mds_lo_type *mds_lo_type_offered(const struct mds_server *srv, layouttype4 type);
/* Row i (0 <= i < MDS_LO_NTYPES), in the order fs_layout_type lists them. */
const struct mds_lo_type *mds_lo_type_at(unsigned i);
/* The device ID the extents of type t name (made by mds_lo_dev_init). */
static inline const unsigned char *mds_lo_devid(const struct mds_server *srv, const struct mds_lo_type *t)
{
	return srv->layouts->devid[t->index];
}

/* The per-type pieces the table points to (layout_dev.c, op_layout.c). */
int mds_lo_block_dev_addr(struct mds_server *srv, const struct mds_client *clp, device_addr4 *out);
int mds_lo_scsi_dev_addr(struct mds_server *srv, const struct mds_client *clp, device_addr4 *out);
nfsstat4 mds_lo_block_decode_update(struct mds_server *srv, const struct mds_lo_type *t, struct mds_arena *arena,
				    const layoutupdate4 *u, struct mds_lo_written **out, size_t *n);
nfsstat4 mds_lo_scsi_decode_update(struct mds_server *srv, const struct mds_lo_type *t, struct mds_arena *arena,
				   const layoutupdate4 *u, struct mds_lo_written **out, size_t *n);

/* ---- fence.c: SCSI persistent reservations -------------------------------------------------- */
/* The MDS's PR key (registered on every LUN) and a client's (from its clientid; never the MDS's). */
uint64_t mds_fence_mds_key(void);
uint64_t mds_fence_client_key(clientid4 clientid);
/* At start-up (sync): -EOPNOTSUPP when a LUN cannot do persistent reservations (then SCSI layouts
 * are not offered); otherwise *out is the fencing state (caller frees with mds_fence_free),
 * already active when the LUNs still carry our reservation from an earlier run. */
int mds_fence_setup(struct mds_server *srv, struct mds_fence **out, char *err, size_t errlen);
/* Activate (sync; idempotent): register the MDS key on every LUN, remove every other key, hold an
 * EXCLUSIVE ACCESS - REGISTRANTS ONLY reservation. From then on unregistered initiators, block-
 * volume clients included, cannot reach the LUNs. -EDEADLK from inside an I/O completion. */
int mds_fence_activate(struct mds_server *srv, struct mds_fence *fc, char *err, size_t errlen);
int mds_fence_active(const struct mds_fence *fc);
void mds_fence_free(struct mds_fence *fc);
/* Without SCSI layouts: clear a reservation an earlier run of ours left, so that block-volume
 * clients reach the LUNs. */
void mds_fence_release(struct mds_server *srv);
/* At start-up (sync), before mds_fence_setup: whether iSCSI LUN i accepts a PERSISTENT RESERVE OUT
 * REGISTER with APTPL set, as every stock Linux SCSI-layout client sends it (sd_pr_register). The
 * MDS's own session asks, with the key it registered at pool open: REGISTER AND IGNORE EXISTING KEY
 * of that same key changes nothing but APTPL, so its registration and its reservation stay as they
 * were, and no other key ever appears on the LUN; APTPL goes back off with a second REGISTER. A LUN
 * whose REPORT CAPABILITIES says APTPL is active already counts as accepting, untouched. why gets
 * the target's answer when it is not MDS_APTPL_ACCEPTED. */
enum mds_aptpl mds_fence_probe_aptpl(struct mds_server *srv, uint32_t i, char *why, size_t whylen);
typedef void mds_fence_done_fn(struct mds_server *srv, int status, void *arg);
/* Fence key: on every LUN, PREEMPT AND ABORT it if it is registered there. done runs once, with 0
 * when no LUN lists the key any more (at once when fencing never became active: no client was
 * given a key), or the first -errno. Returns 0 (done will run) or -errno. */
int mds_fence_key(struct mds_server *srv, struct mds_fence *fc, uint64_t key, mds_fence_done_fn *done, void *arg);

/* ---- metrics.c --------------------------------------------------------------------------------- */
/* Listen on 127.0.0.1:port for GET /metrics (Prometheus text). 0 or -errno with err. */
int mds_metrics_start(struct mds_server *srv, int port, struct mds_metrics **out, char *err, size_t errlen);
void mds_metrics_stop(struct mds_metrics *m);
/* The metrics text (caller frees); also what the HTTP endpoint serves. NULL on allocation failure. */
char *mds_metrics_text(struct mds_server *srv);
/* The status an HTTP request head (NUL-terminated) gets: 200 for GET or HEAD of /metrics (with
 * *head set for HEAD), 400 if it has no method and path, 405 for other methods, 404 for other paths. */
int mds_metrics_route(const char *req, int *head);

#endif
