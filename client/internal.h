/* libpnfs internals shared by the modules of client/: the context with its loop, connection,
 * session and slot table, compounds (the unit every call is built from), open files and their
 * layouts. The one idea: every public call is a small chain of compounds completed by callbacks on
 * the context's loop; nothing blocks except the sync wrappers, which just run that loop. */
#ifndef CLIENT_INTERNAL_H
#define CLIENT_INTERNAL_H

#include "client/pnfs.h"
#include "proto/list.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct blkmap_ctx;
struct blkmap_vol;
struct pc_layout;
struct pc_device;

/* ---- loop -------------------------------------------------------------------------------------- */

struct pc_watch {
	int fd;
	uint32_t events;            /* EPOLLIN / EPOLLOUT */
	int added;
	void (*fn)(struct pnfs_context *ctx, struct pc_watch *w, uint32_t revents);
};

struct pc_timer {
	uint64_t due_ms;
	int armed;
	void (*fn)(struct pnfs_context *ctx, struct pc_timer *t);
	void *arg;
	struct proto_list link; /* on ctx->timers, by due_ms, while armed */
};

uint64_t pc_now_ms(void);
/* A copy of n strings (NULL for none; *fail set when memory ran out), and its release. */
char **pc_strv_dup(const char *const *v, unsigned n, int *fail);
void pc_strv_free(char **v, unsigned n);
int pc_watch_add(struct pnfs_context *ctx, struct pc_watch *w);
int pc_watch_mod(struct pnfs_context *ctx, struct pc_watch *w, uint32_t events);
void pc_watch_del(struct pnfs_context *ctx, struct pc_watch *w);
/* Arm (or re-arm) t to fire after delay_ms from inside pnfs_service(), never from inside another
 * callback: delay 0 is how work is deferred to the top of the loop. */
void pc_timer_arm(struct pnfs_context *ctx, struct pc_timer *t, uint64_t delay_ms);
void pc_timer_cancel(struct pnfs_context *ctx, struct pc_timer *t);

/* ---- errors ------------------------------------------------------------------------------------ */

int pc_err(struct pnfs_context *ctx, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* NFS4ERR_* to -errno. */
int pc_nfs_errno(nfsstat4 st);

/* ---- connection --------------------------------------------------------------------------------- */

struct pc_sendbuf {
	uint8_t *buf;
	size_t len, off;
	struct pc_sendbuf *next;
};

struct pc_conn {
	int fd;
	int connected;              /* TCP established */
	struct pc_watch w;
	struct proto_rm_reader rd;
	struct pc_sendbuf *sq_head, *sq_tail;
	uint64_t last_rx_ms;
	uint8_t *rbuf;
	size_t rbuf_len;
	struct pc_timer handshake;  /* the TCP connect not done within timeout_ms: a failed attempt */
};

/* Start connecting (non-blocking). Returns 0, or -errno with ctx->conn_why saying why (and
 * ctx->conn_fatal set when trying again cannot help: a host name that does not resolve). */
int pc_conn_open(struct pnfs_context *ctx);
void pc_conn_close(struct pnfs_context *ctx);
/* Queue bytes to send; takes ownership of buf (malloc'd). Returns 0 or -errno. */
int pc_conn_send(struct pnfs_context *ctx, uint8_t *buf, size_t len);
/* Record why the connection failed or was lost, in words, for the error of whatever gives up on it
 * (the mount, calls waiting for the connection). */
void pc_conn_why(struct pnfs_context *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- compounds -------------------------------------------------------------------------------- */

#define PC_MAX_OPS 128 /* a PATH_MAX path of 32+ components walks in one compound (the MDS allows 128) */

enum pc_queue { PC_Q_NONE, PC_Q_WAIT, PC_Q_SENT, PC_Q_DELAY };

struct pc_alloc {
	struct pc_alloc *next;
	char data[];
};

struct pc_compound {
	struct pnfs_context *ctx;
	char what[256];             /* for error text: "OPEN /export/a" */
	nfs_argop4 ops[PC_MAX_OPS]; /* ops[0] is SEQUENCE unless nosession */
	uint32_t nops;
	int nosession;              /* EXCHANGE_ID, CREATE_SESSION, BIND_CONN_TO_SESSION... alone */
	int setup;                  /* part of session setup: bypasses the wait for a ready session */
	int no_retry;               /* do not resend after session loss (e.g. DESTROY_SESSION) */
	int cachethis;              /* ask the server to cache the reply (state-changing compounds) */
	int abs_path;               /* the last path split was absolute: walk from the server root */
	int reclaim_op;             /* re-establishes sid_fh's open state: not held by reclaim_pending */
	unsigned max_delay_retries; /* NFS4ERR_DELAY/GRACE retries; 0: the default */
	/* stateids refreshed from the file at every (re)send: reclaim may have replaced them */
	struct pnfs_fh *sid_fh;
	stateid4 *sid_ptr[4];
	unsigned nsid;
	uint32_t sid_gen;
	/* completion: called once, then the owner frees c with pc_compound_free() */
	void (*done)(struct pc_compound *c);
	void *priv;
	uint64_t u64[4];            /* small per-call values for the owner */
	/* outcome */
	int status;                 /* 0 or -errno; -EPROTO etc. for transport/decode failures */
	nfsstat4 nfs_status;        /* COMPOUND status (NFS4_OK when status is 0) */
	char errtext[256];          /* why, for failures below NFS (encode, RPC, transport) */
	struct proto_compound_res res;
	int have_res;
	/* transport */
	int slot;
	uint32_t seqid;
	uint32_t xid;
	int replay;                 /* resend on the same slot and seqid (session survived) */
	int probe;                  /* a lone SEQUENCE settling slot probe_slot (see slot_abandon) */
	unsigned probe_slot;
	unsigned retries;
	uint64_t submitted_ms;
	enum pc_queue q;
	struct proto_list link;     /* on ctx->waitq or ctx->sentq, as q says */
	struct pc_timer delay_timer;
	struct pc_alloc *arena;
};

struct pc_compound *pc_compound_new(struct pnfs_context *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pc_compound_free(struct pc_compound *c);
/* Memory that lives as long as c (names, buffers the ops point to). NULL on ENOMEM. */
void *pc_alloc(struct pc_compound *c, size_t len);
char *pc_strdup(struct pc_compound *c, const char *s);
/* Append an op; returns it (zeroed but for argop) or NULL when full (c->status = -E2BIG). */
nfs_argop4 *pc_add(struct pc_compound *c, nfs_opnum4 op);
void pc_add_putfh(struct pc_compound *c, const uint8_t *fh, uint32_t len);
void pc_add_putrootfh(struct pc_compound *c);
void pc_add_lookup(struct pc_compound *c, const char *name);
void pc_add_getfh(struct pc_compound *c);
void pc_add_getattr(struct pc_compound *c, const struct proto_attrmask *m);
/* Set a component4/utf8string from a C string (borrowed). */
void pc_utf8(utf8string *u, const char *s);
/* Mark a stateid field of an op to be filled from fh's open stateid at send time. */
void pc_bind_stateid(struct pc_compound *c, struct pnfs_fh *fh, stateid4 *sid);
/* Submit: waits for a session and a slot, sends, completes through c->done. */
void pc_submit(struct pc_compound *c);
/* Result of op index i (same index as ops[]), or NULL when the reply stopped before it. */
nfs_resop4 *pc_res(struct pc_compound *c, uint32_t i);
/* Result of the first op of this kind, or NULL. */
nfs_resop4 *pc_res_op(struct pc_compound *c, nfs_opnum4 op);
/* The result of op in a finished compound, with *rc 0; NULL when the call failed (*rc its error,
 * the context error set as by pc_compound_err) or the reply has no such result (*rc -EPROTO). */
nfs_resop4 *pc_result(struct pc_compound *c, nfs_opnum4 op, int *rc);
/* After completion: the failing op's name for messages, or "COMPOUND". */
const char *pc_failed_op(struct pc_compound *c);
/* Set the context error from c's outcome ("WHAT: OP: NFS4ERR_X"). Returns c->status. */
int pc_compound_err(struct pc_compound *c);

/* Called by the connection layer. */
void pc_rpc_reply(struct pnfs_context *ctx, void *rec, size_t len);
void pc_compounds_conn_lost(struct pnfs_context *ctx);
/* Start whatever waits (after the session becomes ready or a slot frees up). */
void pc_compounds_kick(struct pnfs_context *ctx);
/* Fail compounds waiting longer than max_age_ms (no connection), counted from since_ms (the loss of
 * the connection; 0: from their submission), with why as their text. */
void pc_compounds_expire(struct pnfs_context *ctx, uint64_t max_age_ms, uint64_t since_ms, int err,
			 const char *why);
/* Fail every waiting and in-flight compound with err (context shutdown, unrecoverable). */
void pc_compounds_fail_all(struct pnfs_context *ctx, int err);
/* Requeue compounds sent on a dead session (they get new slots). */
void pc_compounds_session_lost(struct pnfs_context *ctx);

/* ---- session -------------------------------------------------------------------------------- */

enum pc_state {
	PC_ST_NONE = 0,             /* not mounted */
	PC_ST_CONNECTING,
	PC_ST_EXCHANGE_ID,
	PC_ST_CREATE_SESSION,
	PC_ST_BIND,
	PC_ST_RECLAIM,
	PC_ST_READY,
	PC_ST_DOWN,                 /* connection lost; reconnect pending */
	PC_ST_FAILED,               /* given up (umounted, or setup failed at mount) */
};

struct pc_slot {
	uint32_t seqid;             /* last seqid used on this slot */
	struct pc_compound *c;      /* in flight */
	int bad;                    /* server rejected it: not used until a new session */
	int interrupted;            /* the last request on it was given up without a reply: the server
				     * may or may not have run it (see slot_abandon) */
	int probing;                /* the SEQUENCE settling that is out */
};

#define PC_MAX_SLOTS 256
#define PC_CB_SLOTS 8
#define PC_CB_PROGRAM 0x40000000u

struct pc_cb_slot {
	uint32_t seqid;
	uint8_t *reply;             /* last reply (record with mark) for replays */
	size_t reply_len;
};

void pc_session_start(struct pnfs_context *ctx);
void pc_session_conn_up(struct pnfs_context *ctx);
void pc_session_conn_lost(struct pnfs_context *ctx, int err);
/* The server said the session, or the client ID, is gone: recover (then waiting compounds resume). */
void pc_session_recover(struct pnfs_context *ctx, nfsstat4 why);
void pc_session_seq_flags(struct pnfs_context *ctx, uint32_t flags);
void pc_lease_touch(struct pnfs_context *ctx);

/* ---- backchannel ------------------------------------------------------------------------------ */

void pc_cb_call(struct pnfs_context *ctx, void *rec, size_t len);

/* ---- paths and attributes ------------------------------------------------------------------ */

#define PC_PATH_MAX_DEPTH 64

/* Split an absolute or relative path into components (".", "" dropped; ".." kept for LOOKUPP);
 * the components point into a copy stored in c's arena. Returns the count or -errno. */
int pc_path_split(struct pc_compound *c, const char *path, const char **comp, int max);
/* PUTFH(root or export) + LOOKUP/LOOKUPP for each of the first n components. Returns 0 or -errno. */
int pc_add_walk(struct pc_compound *c, const char *const *comp, int n);
/* Path for messages, resolved against the export. Static buffer per thread. */
const char *pc_path_show(struct pnfs_context *ctx, const char *path);

extern struct proto_attrmask pc_attrs_stat;   /* what pnfs_stat needs */
extern struct proto_attrmask pc_attrs_open;   /* stat + what the data path needs */
extern struct proto_attrmask pc_attrs_fs;     /* statfs and session setup */
/* Decode a GETATTR result into st (and the fattr). Returns 0 or -EBADMSG. */
int pc_attr_decode(const fattr4 *in, struct proto_fattr *fa, struct pnfs_stat *st);
/* The GETATTR result of a finished compound, decoded into fa (and st unless NULL): 0, the call's
 * error (the context's error text set, as pc_compound_err), or -EPROTO for a missing or bad result. */
int pc_getattr_reply(struct pc_compound *c, struct proto_fattr *fa, struct pnfs_stat *st);
void pc_fattr_to_stat(const struct proto_fattr *fa, struct pnfs_stat *st);
/* Build a fattr4 with mode (and optionally size) in c's arena. */
int pc_fattr_owner(struct pc_compound *c, fattr4 *out, uint32_t uid, uint32_t gid);
int pc_fattr_mode(struct pc_compound *c, fattr4 *out, int with_mode, uint32_t mode, int with_size,
		  uint64_t size);
/* time_access_set / time_modify_set from utimensat-style times (UTIME_NOW: the server's clock,
 * UTIME_OMIT: left alone). */
struct timespec;
int pc_fattr_times(struct pc_compound *c, fattr4 *out, const struct timespec ts[2]);

/* ---- calls and their completion --------------------------------------------------------------- */

/* A public call in progress: its user callback and what to hand it. */
struct pc_call {
	struct pnfs_context *ctx;
	pnfs_cb cb;
	void *priv;
	int status;
	void *data;
	struct pc_timer done_timer;
};
struct pc_call *pc_call_new(struct pnfs_context *ctx, size_t size, pnfs_cb cb, void *priv);
/* Run the user callback (with the context error set if status < 0) and free the call. */
void pc_call_complete(struct pc_call *call, int status, void *data);
/* Complete later, from the top of the loop (for calls that fail or finish before any I/O). */
void pc_call_complete_later(struct pc_call *call, int status);

/* ---- files ------------------------------------------------------------------------------------ */

struct pc_waiter {
	void (*fn)(struct pnfs_context *ctx, void *arg);
	void *arg;
	struct pc_waiter *next;
};

/* An array v of *cap elements of elem bytes, n of them in use, with room for one more: v itself, or
 * v moved to twice the room (first elements the first time) and *cap updated. NULL when out of
 * memory (v is then left as it was). */
static inline void *pc_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t want = *cap ? *cap * 2 : first;
	void *p;

	if (n < *cap)
		return v;
	p = realloc(v, want * elem);
	if (p)
		*cap = want;
	return p;
}

/* Add fn(ctx, arg) to a list of waiters: first, or last when last is set. 0 or -ENOMEM. */
static inline int pc_waiter_add(struct pc_waiter **list, int last, void (*fn)(struct pnfs_context *, void *),
				void *arg)
{
	struct pc_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	if (last)
		while (*list)
			list = &(*list)->next;
	w->next = *list;
	*list = w;
	return 0;
}

/* Free a list of waiters without running them. */
static inline void pc_waiters_free(struct pc_waiter *w)
{
	while (w) {
		struct pc_waiter *next = w->next;
		free(w);
		w = next;
	}
}

/* Run and free a list of waiters taken off its owner (each may add itself to a new list). */
static inline void pc_waiters_run(struct pnfs_context *ctx, struct pc_waiter *w)
{
	while (w) {
		struct pc_waiter *next = w->next;
		w->fn(ctx, w->arg);
		free(w);
		w = next;
	}
}

struct pnfs_fh {
	struct pnfs_context *ctx;
	struct pnfs_fh *next, *prev;     /* ctx->files */
	char *path;
	uint8_t fh[NFS4_FHSIZE];
	uint32_t fhlen;
	stateid4 open_sid;
	uint32_t sid_gen;                /* bumped when the open stateid is replaced by reclaim */
	uint32_t share_access;
	int flags;                       /* open(2) flags */
	uint64_t fileid;
	uint64_t size;                   /* what fstat reports: server size or past it with our writes */
	uint64_t change;
	int reclaim_pending;             /* compounds using the open stateid wait for the reclaim */
	int u_reopen;                    /* reclaim failed: open again after RECLAIM_COMPLETE */
	uint64_t u_owner;                /* open owner id ("open-N") */
	/* MDS-path writes */
	unsigned ios_inflight;           /* reads and writes of this file in flight */
	unsigned ios_abandoned;          /* MDS-path I/O failed for want of an answer, replies pending */
	int free_pending;                /* closed while ios_abandoned: freed by the last of them */
	int unstable;                    /* UNSTABLE4 writes since the last COMMIT */
	verifier4 wverf;
	int wverf_set;
	int verf_mismatch;
	/* an error to report at fsync/close: data that could not be made durable */
	int sticky_err;
	char sticky_msg[512];
	struct pc_waiter *idle_waiters;  /* run when ios_inflight drops to 0 */
	/* data path */
	struct pc_layout *lo;
	int mds_only;                    /* no layouts for this file (reason below) */
	char mds_reason[256];
	int noticed;
};

struct pnfs_fh *pc_fh_new(struct pnfs_context *ctx, const char *path);
void pc_fh_free(struct pnfs_fh *fh);
struct pnfs_fh *pc_fh_find(struct pnfs_context *ctx, const uint8_t *fh, uint32_t len);
void pc_fh_io_begin(struct pnfs_fh *fh);
void pc_fh_io_end(struct pnfs_fh *fh);
/* Run fn when the file has no I/O in flight (now, deferred, if already idle). */
int pc_fh_when_idle(struct pnfs_fh *fh, void (*fn)(struct pnfs_context *, void *), void *arg);
void pc_fh_set_sticky(struct pnfs_fh *fh, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Re-open every open file after a new client ID (reclaim); calls done when all are back. */
void pc_files_reclaim(struct pnfs_context *ctx, int during_grace, void (*done)(struct pnfs_context *));
/* Switch the file to the MDS path with a one-line notice (once per file). */
void pc_fh_to_mds(struct pnfs_fh *fh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* MDS-path I/O (mdsio.c). The iovec array is copied. cb gets bytes or -errno. */
struct pc_iovec {
	struct iovec *iov;
	int niov;
	size_t total;
};
typedef void (*pc_io_cb)(struct pnfs_context *ctx, int status, void *arg);
int pc_mds_read(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg);
int pc_mds_write(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg);
int pc_mds_commit(struct pnfs_fh *fh, pc_io_cb cb, void *arg);
/* Copy helpers over iovec arrays. */
size_t pc_iov_total(const struct iovec *iov, int niov);
void pc_iov_copy_in(const struct iovec *iov, int niov, size_t off, const void *src, size_t len);
void pc_iov_copy_out(const struct iovec *iov, int niov, size_t off, void *dst, size_t len);
void pc_iov_zero(const struct iovec *iov, int niov, size_t off, size_t len);
/* Sub-range [off, off+len) of an iovec array as a new array (malloc'd; caller frees). */
int pc_iov_slice(const struct iovec *iov, int niov, size_t off, size_t len, struct iovec **out, int *nout);

/* ---- the data path (layout*.c, device.c, pio.c) -------------------------------------------------- */

/* The layout type to use among those the server offers (fs_layout_type): the allowed one of
 * highest preference (layout_type.c); 0 when none is usable. */
layouttype4 pc_lo_type_choose(const struct pnfs_context *ctx, const layouttype4 *offered, unsigned n);

/* Read/write through layouts when the file has them; otherwise through the MDS. */
int pc_io_read(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg);
int pc_io_write(struct pnfs_fh *fh, const struct iovec *iov, int niov, uint64_t off, pc_io_cb cb, void *arg);
/* LAYOUTCOMMIT of everything written through layouts (after the writes in flight finish). */
int pc_layout_commit(struct pnfs_fh *fh, pc_io_cb cb, void *arg);
/* Commit and return every layout of the file (close, truncate). */
int pc_layout_return_all(struct pnfs_fh *fh, int commit, pc_io_cb cb, void *arg);
/* Layouts dropped without a word to the server (new client ID: they are gone there). */
void pc_layout_forget(struct pnfs_fh *fh);
void pc_layout_free(struct pc_layout *lo);
/* End of the bytes written through layouts and not yet committed (0: none). */
uint64_t pc_layout_dirty_end(struct pnfs_fh *fh);
/* Truncate the cached layout after SETATTR size. */
void pc_layout_truncated(struct pnfs_fh *fh, uint64_t size);
/* Backchannel entry points: return an NFS status for the reply, work continues on the loop. */
nfsstat4 pc_layout_recall(struct pnfs_context *ctx, const CB_LAYOUTRECALL4args *a);
nfsstat4 pc_layout_recall_any(struct pnfs_context *ctx, const CB_RECALL_ANY4args *a);
nfsstat4 pc_device_notify(struct pnfs_context *ctx, const CB_NOTIFY_DEVICEID4args *a);
void pc_devices_free(struct pnfs_context *ctx);
/* device.c: abandon running resolutions and destroy the devices' blkmap contexts: the commands in
 * flight complete with -ECANCELED (their callbacks run). For a context being destroyed. */
void pc_devices_stop(struct pnfs_context *ctx);
/* device.c: close the blkmap contexts that a device's newer resolution replaced (a device the server
 * changed) once their last command is done. From the loop, outside every callback. */
void pc_devices_retire(struct pnfs_context *ctx);
/* layout.c: every I/O waiting on a layout (for a LAYOUTGET, a device, a recall) ends with status:
 * the context is being destroyed. */
void pc_layouts_cancel_waiting(struct pnfs_context *ctx, int status);
void pc_devices_changed(struct pnfs_context *ctx);
/* device.c: the server gave us a new client ID. SCSI devices are registered again (with the key
 * GETDEVICEINFO now gives) before their next use, fenced ones too: the fencing was of the old ID. */
void pc_devices_new_clientid(struct pnfs_context *ctx);
/* layout_commit.c: the server lost our state. A layout with writes not yet committed keeps them for a
 * LAYOUTCOMMIT reclaim once the file's open is reclaimed; otherwise it is forgotten. */
void pc_layout_reclaim_begin(struct pnfs_fh *fh);
/* layout_commit.c: the open of fh was reclaimed: commit its layout's kept writes with LAYOUTCOMMIT reclaim
 * (devices registered again and flushed first). 1: started, done(ctx, arg) runs at its end; 0: nothing
 * to reclaim. */
int pc_layout_reclaim_commit(struct pnfs_fh *fh, void (*done)(struct pnfs_context *, void *), void *arg);
/* layout_commit.c: the open of fh could not be reclaimed: its kept writes are lost (fsync says so). */
void pc_layout_reclaim_drop(struct pnfs_fh *fh);

/* ---- the context --------------------------------------------------------------------------- */

struct pnfs_context {
	struct pnfs_opts opts;
	char **portals, **devices;
	char *owner_id;
	char machine[256];
	uint32_t uid, gid;
	verifier4 boot_verf;
	char err[1024];

	/* loop */
	int epfd, tfd;
	uint64_t tfd_due_ms; /* what tfd is set to fire at; 0: disarmed */
	struct pc_watch tw;
	struct proto_list timers;  /* armed timers, earliest first (pc_timer.link) */
	int cb_depth;               /* > 0 while user callbacks run */
	int servicing;
	int destroying;

	/* MDS */
	char host[256];
	int port;
	char *export;
	struct pc_conn conn;
	struct proto_xid_table *xids;
	/* Reaching the server: from the first failed try (or the mount's start) until a session is
	 * ready again, tries are spaced by a backoff and bounded by opts.connect_timeout_ms. */
	uint64_t connect_started_ms;     /* 0: the session is up (or was never tried) */
	unsigned connect_failures;
	struct pc_timer reconnect_timer;
	struct pc_timer connect_deadline;
	int last_conn_err;
	char conn_why[256];         /* the last failure's reason in words */
	int conn_fatal;             /* and trying again cannot help */
	int server_silent;          /* the connection was dropped for want of any reply (watchdog) */
	uint64_t mds_io_rx_ms;      /* last reply to a READ, WRITE or COMMIT through the MDS */

	/* client and session */
	enum pc_state state;
	clientid4 clientid;
	sequenceid4 create_seq;
	uint32_t eir_flags;
	/* EXCHANGE_ID's server_owner major id and server scope: who the server is, whatever name or
	 * address reached it (RFC 8881 §2.10.5) */
	uint8_t server_major[NFS4_OPAQUE_LIMIT], server_scope[NFS4_OPAQUE_LIMIT];
	uint32_t server_major_len, server_scope_len;
	int have_clientid, have_session;
	sessionid4 sessionid;
	uint32_t fore_maxreq, fore_maxresp, fore_maxops;
	unsigned nslots;
	unsigned target_slots;
	struct pc_slot slots[PC_MAX_SLOTS];
	unsigned slots_in_doubt;    /* slots with interrupted set */
	struct pc_cb_slot cb_slots[PC_CB_SLOTS];
	unsigned cb_nslots;
	uint32_t cb_maxreq, cb_maxresp;
	uint32_t lease_s;
	uint64_t last_seq_ms;
	struct pc_timer lease_timer;
	struct pc_timer watchdog;
	int renewing;
	int recovering;
	int new_clientid;           /* the setup after this one must reclaim */
	struct pc_timer setup_timer;
	unsigned setup_delays;
	struct pc_compound *setup_c;
	uint64_t cb_path_fix_ms;

	/* mount */
	struct pc_call *mount_call;
	int mount_looking;          /* the export's LOOKUP is out (it outlives a reconnect) */
	int mounted;
	uint8_t root_fh[NFS4_FHSIZE];
	uint32_t root_fhlen;
	uint32_t layout_blksize;
	uint32_t fs_layout_types[PROTO_LAYOUT_TYPES_MAX];
	unsigned nfs_layout_types;
	uint64_t fs_maxread, fs_maxwrite;

	/* compounds */
	struct proto_list waitq;    /* compounds waiting to be sent, in order (pc_compound.link) */
	struct proto_list sentq;    /* sent, waiting for their replies, newest first */
	unsigned ncompounds;        /* alive (submitted, not done) */
	unsigned ncalls;            /* public calls in flight */

	/* files and the data path */
	struct pnfs_fh *files;
	struct pc_device *devices_list;
	int devices_retiring;            /* some device keeps a replaced blkmap context */
	struct pc_layout *layouts;
	layouttype4 layout_type;         /* what LAYOUTGET asks for: SCSI, block, or 0 (none offered) */
	int direct;                      /* layouts and block I/O are on (not --mds-io) */
	uint64_t next_open_owner;

	struct pnfs_stats stats;
};

#endif
