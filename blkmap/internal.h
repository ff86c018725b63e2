/* blkmap internals shared by its source files (not part of the public API; tests of this part may use
 * it). The idea: a request (volume or device I/O, a SCSI command) becomes commands on devices; each
 * device queues its commands and keeps at most queue_depth in flight; one epoll set drives them all. */
#ifndef BLKMAP_INTERNAL_H
#define BLKMAP_INTERNAL_H

#include "blkmap/blkmap.h"
#include "proto/list.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/types.h>

struct iscsi_context;
struct scsi_task;
struct scsi_iovec;

#define BM_SECTOR_BYTES 512u
#define BM_TICK_MS 50
#define BM_MAX_RETRIES 16 /* UNIT ATTENTION / BUSY retries of one command */

/* What an epoll event points at. */
enum bm_src_kind { BM_SRC_DEV = 1, BM_SRC_TIMER, BM_SRC_POOL };
struct bm_src {
	enum bm_src_kind kind;
	void *ptr;
};

/* Block-device and file I/O runs in a few threads: pread/pwrite on an O_DIRECT block device blocks the
 * caller for the whole transfer and Linux has no readiness notification for it, so a small pool behind
 * a queue keeps the event loop free. Completions come back through an eventfd in the epoll set. */
struct bm_cmd;
struct bm_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* work queued */
	pthread_cond_t done_cond; /* a command finished */
	pthread_t *threads;
	unsigned nthreads;
	int started, stop;
	struct bm_cmd *todo_head, *todo_tail;
	struct bm_cmd *done_head, *done_tail;
	int evfd;
};

struct bm_cache; /* discovery cache (discover.c) */

/* What an iSCSI LUN must still hold after a reconnect (ident.c). */
struct bm_ident_region {
	const void *owner; /* who added it (blkmap_dev_unexpect) */
	char what[64];
	int64_t off_bytes; /* negative: from the end of the device as opened */
	uint32_t len;
	uint8_t *bytes;
	blkmap_ident_explain explain;
	void *priv;
};
#define BM_IDENT_RETRY_MS 2000 /* a LUN out of service logs in again this often */

struct blkmap_ctx {
	char initiator[224];
	unsigned queue_depth, timeout_ms, nworkers, max_xfer_bytes;
	uint64_t register_key; /* registered on every iSCSI LUN at open (0: none) */
	int keep_key;          /* and left registered at close */
	int epfd, timerfd, timer_armed;
	struct bm_src timer_src, pool_src;
	char err[1024];
	int depth;            /* > 0 while servicing (callbacks may run) */
	unsigned outstanding; /* requests submitted, not completed */
	unsigned connecting;  /* devices in a connect or restore phase */
	unsigned keepers;     /* devices without a session that log in again with nothing queued */
	struct proto_list devs;      /* open devices, by blkmap_dev.link */
	struct proto_list graveyard; /* closed while servicing: freed after the pass (by .link) */
	struct bm_pool pool;
	struct bm_cache *cache;
};

/* iSCSI session state */
enum bm_dev_state {
	BM_DOWN = 0,   /* no session; next attempt at next_attempt_ms when there is work */
	BM_CONNECTING, /* login in progress */
	BM_RESTORING,  /* logged in again: checking the LUN's identity, then restoring the PR registration */
	BM_UP,         /* commands flow */
	BM_FAILED,     /* initial connect failed (open reports it) */
};

struct blkmap_dev {
	struct blkmap_ctx *ctx;
	struct proto_list link; /* on ctx->devs, or on ctx->graveyard once closed */
	int refs;
	int orphan;        /* its context was destroyed: only the memory is left, for the last unref */
	int in_isc_service; /* inside iscsi_service() for this device: closing is deferred */
	int zombie;        /* closed while in_isc_service: destroyed once iscsi_service() returns */
	enum blkmap_dev_kind kind;
	char name[512];
	int readonly;
	uint64_t size_bytes;
	uint32_t block_bytes;
	uint32_t bl_max_bytes; /* Block Limits, 0 = none */
	uint32_t max_xfer_bytes;
	int have_inq;
	struct blkmap_inquiry inq;

	/* queue */
	struct bm_cmd *pend_head, *pend_tail;
	struct bm_cmd *infl_head, *infl_tail;
	unsigned npending, inflight;

	/* iSCSI */
	struct iscsi_context *isc;
	int lun;
	char portal[300], target[256], user[256], passwd[256];
	uint32_t isid_rnd, isid_qual;
	enum bm_dev_state state;
	int opening;
	struct probe *probe; /* while opening: the login and probe (iscsi.c) */
	unsigned logins;
	int reg_fd;
	uint32_t reg_events;
	struct bm_src src;
	int64_t next_attempt_ms, connect_deadline_ms;
	unsigned backoff_ms;
	int lost;            /* session loss noticed inside a libiscsi callback */
	int connect_result;  /* set by the connect steps: 1 ok, -1 failed */
	unsigned login_uas;  /* UNIT ATTENTIONs the TEST UNIT READYs after login cleared */
	int cancelling;      /* cancelling all tasks: callbacks only detach */
	int logout;          /* 1: a logout is out (bm_iscsi_logout_all); 2: done or given up, close skips it */
	char down_reason[300];
	uint64_t pr_key;     /* registered through this device; restored after reconnect */
	int no_preempt_abort; /* the target refused PREEMPT AND ABORT: PREEMPT is used */
	int no_sync_cache;   /* the target has no SYNCHRONIZE CACHE (no volatile cache): flushes succeed at once */
	unsigned flushes;    /* flush commands completed on the device (sent or answered by no_sync_cache) */
	int restore_step;
	struct bm_cmd *restore_cmd; /* the internal command of the identity check or the restore */

	/* identity after a reconnect (ident.c; the check's commands in iscsi.c) */
	struct bm_ident_region *regions;
	unsigned nregions;
	int keep_session;    /* blkmap_dev_keep_session */
	int wrong;           /* came back different: out of service until a check passes */
	int unchecked;       /* a session was lost and no later one has passed its check yet */
	int keeper;          /* counted in ctx->keepers */
	char wrong_why[300];
	unsigned ident_checks, ident_failures;
	unsigned verify_step;
	int verify_failed;   /* the check found a difference (acted on after libiscsi returns) */
	char verify_why[300];

	/* block device / file */
	int fd;
	int direct;
	dev_t rdev;
	unsigned pool_running; /* commands a worker holds (pool lock) */
};

enum bm_op {
	BM_OP_READ = 1,
	BM_OP_WRITE,
	BM_OP_CDB,   /* raw SCSI CDB: data in (din) or out (dout) */
	BM_OP_PROUT, /* block devices: PR OUT through ioctls (iSCSI uses BM_OP_CDB) */
	BM_OP_FLUSH, /* the device's volatile write cache to stable media: SYNCHRONIZE CACHE(10) or fdatasync */
};

struct bm_req;

struct bm_cmd {
	struct bm_cmd *next, *prev;
	struct bm_req *req;          /* NULL for internal commands */
	void (*complete)(struct bm_cmd *cmd); /* called once with cmd->status set */
	struct blkmap_dev *dev;
	int leaf;
	enum bm_op op;
	uint64_t lba;
	uint32_t nblocks;
	struct scsi_iovec *iov;      /* READ/WRITE: caller's memory */
	int niov, iov_cap;
	uint64_t bytes;
	/* BM_OP_CDB */
	uint8_t cdb[16];
	int cdb_len;
	int dir;                     /* 0 none, 1 in, 2 out */
	uint8_t *dbuf;               /* in: receives up to dlen; out: dlen bytes sent */
	uint32_t dlen, dgot;
	struct blkmap_pr_out prout;  /* BM_OP_PROUT */
	int64_t deadline_ms;         /* 0: not started */
	unsigned retries;
	struct scsi_task *task;
	int timing_out;
	int on_list;                 /* 0 none, 1 pending, 2 inflight, 3 in pool */
	int status;
	char msg[300];
	void *priv;                  /* internal commands */
};

struct bm_req {
	struct blkmap_ctx *ctx;
	unsigned pending;
	int submitting;
	struct blkmap_io_result res;
	int status;
	char dev_name[512];
	char msg[700];
	blkmap_io_cb io_cb;
	blkmap_cmd_cb cmd_cb;
	void *priv;
	/* turns a finished BM_OP_CDB command's data into the caller's struct */
	int (*finish)(struct bm_req *req, struct bm_cmd *cmd);
	void *out;
	struct iovec *iov;
	int niov;
};

/* ctx.c */
int bm_err(struct blkmap_ctx *ctx, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t bm_now_ms(void);

/* SIGPIPE blocked in the calling thread around libiscsi calls that may write to a socket, and one they
 * raised consumed before the thread's mask is restored (sigpipe.c; why: blkmap.h, "Signals"). Use as
 * a pair on the same thread; nesting is allowed. */
struct bm_sigpipe {
	sigset_t old;
	int active;      /* the outermost guard of this thread */
	int was_pending; /* SIGPIPE was pending before: not ours to take */
};
void bm_sigpipe_block(struct bm_sigpipe *g);
void bm_sigpipe_restore(struct bm_sigpipe *g);
void bm_timer_update(struct blkmap_ctx *ctx);
int bm_wait(struct blkmap_ctx *ctx, const int *done);
void bm_src_update(struct blkmap_dev *dev);
void bm_src_remove(struct blkmap_dev *dev);

/* req.c */
struct bm_req *bm_req_new(struct blkmap_ctx *ctx);
struct bm_cmd *bm_cmd_new(struct bm_req *req, struct blkmap_dev *dev, enum bm_op op);
int bm_cmd_add_iov(struct bm_cmd *cmd, void *base, size_t len);
void bm_cmd_free(struct bm_cmd *cmd);
void bm_req_cmd_done(struct bm_cmd *cmd);
void bm_req_submit_done(struct bm_req *req);
void bm_req_fail_early(struct bm_req *req, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* slice [off, off+len) of an iovec array into cmd's scatter/gather list */
int bm_cmd_add_range(struct bm_cmd *cmd, const struct iovec *iov, int niov, uint64_t off, uint64_t len);

/* dev.c */
void bm_dev_enqueue(struct blkmap_dev *dev, struct bm_cmd *cmd);
void bm_dev_dispatch(struct blkmap_dev *dev);
/* Puts c on the command list head..tail, first or last; takes it off. */
void bm_cmd_link(struct bm_cmd **head, struct bm_cmd **tail, struct bm_cmd *c, int first);
void bm_cmd_unlink(struct bm_cmd **head, struct bm_cmd **tail, struct bm_cmd *c);
/* dev's pending list: c taken off it; the first one taken off (NULL: none); c put first (a
 * command sent again). */
void bm_pend_remove(struct blkmap_dev *dev, struct bm_cmd *c);
struct bm_cmd *bm_pend_pop(struct blkmap_dev *dev);
void bm_pend_push_front(struct blkmap_dev *dev, struct bm_cmd *c);
void bm_dev_service(struct blkmap_dev *dev, uint32_t events);
void bm_dev_tick(struct blkmap_dev *dev, int64_t now);
void bm_dev_destroy(struct blkmap_dev *dev);
void bm_cmd_finish(struct bm_cmd *cmd, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *bm_op_name(const struct bm_cmd *cmd);
/* Queue a flush command for dev in req (nothing when the device is known to have no volatile cache);
 * the caller dispatches. 0 or -ENOMEM. */
int bm_flush_queue(struct bm_req *req, struct blkmap_dev *dev, int leaf);
/* A flush request's finish: counts the device's completed flushes. */
int bm_flush_count(struct bm_req *req, struct bm_cmd *cmd);
/* "WRITE(16) LBA 2048+256", or just the command's name when it has no LBA range (a flush) */
const char *bm_cmd_what(const struct bm_cmd *cmd, char *buf, size_t len);

/* iscsi.c */
int bm_iscsi_open(struct blkmap_dev *dev, const char *url);
/* Open n linked, fresh devices from their URLs at once: rcs[i] each one's result and, when errs is not
 * NULL, errs[i] (errlen bytes each, see blkmap_dev_open_many) why it failed; returns 0 or the first
 * failure's (the context's error says it). */
int bm_iscsi_open_many(struct blkmap_dev **devs, const char *const *urls, int *rcs, char **errs, size_t errlen,
		       unsigned n);
int bm_iscsi_send(struct bm_cmd *cmd);
void bm_iscsi_service(struct blkmap_dev *dev, uint32_t events);
/* At the end of a service pass: write what the session has queued (as if the socket had reported
 * POLLOUT) and bring its epoll registration up to date. */
void bm_iscsi_flush(struct blkmap_dev *dev);
void bm_iscsi_tick(struct blkmap_dev *dev, int64_t now);
void bm_iscsi_close(struct blkmap_dev *dev);
/* Log out of every idle session of the context at once, bounded by a second. */
void bm_iscsi_logout_all(struct blkmap_ctx *ctx);
void bm_iscsi_kick(struct blkmap_dev *dev);

/* fdev.c */
int bm_fdev_open(struct blkmap_dev *dev, const char *path, unsigned flags);
int bm_pool_submit(struct blkmap_ctx *ctx, struct bm_cmd *cmd);
void bm_pool_service(struct blkmap_ctx *ctx);
void bm_pool_stop(struct blkmap_ctx *ctx);
void bm_fdev_close(struct blkmap_dev *dev);

/* scsi.c: CDBs, sense, VPD parsing */
void bm_cdb_inquiry(struct bm_cmd *cmd, int evpd, int page, uint16_t alloc);
void bm_cdb_readcap16(struct bm_cmd *cmd);
void bm_cdb_read16(struct bm_cmd *cmd, uint64_t lba, uint32_t blocks);
void bm_cdb_prin(struct bm_cmd *cmd, int sa, uint16_t alloc);
void bm_cdb_prout(struct bm_cmd *cmd, const struct blkmap_pr_out *a, uint8_t param[24]);
int bm_parse_std_inquiry(const uint8_t *d, uint32_t len, struct blkmap_inquiry *inq);
int bm_parse_vpd80(const uint8_t *d, uint32_t len, struct blkmap_inquiry *inq);
int bm_parse_vpd83(const uint8_t *d, uint32_t len, struct blkmap_inquiry *inq);
int bm_parse_vpdb0(const uint8_t *d, uint32_t len, uint32_t *max_blocks);
int bm_parse_readcap16(const uint8_t *d, uint32_t len, uint64_t *blocks, uint32_t *block_bytes);
/* Undo the context's register_key on dev before it closes (unless keep_key). */
void bm_dev_unregister_key(struct blkmap_dev *dev);
int bm_parse_read_keys(const uint8_t *d, uint32_t len, struct blkmap_pr_keys *out);
int bm_parse_read_resv(const uint8_t *d, uint32_t len, struct blkmap_pr_reservation *out);
int bm_parse_report_caps(const uint8_t *d, uint32_t len, struct blkmap_pr_caps *out);
/* REPORT LUNS data: up to max LUN numbers (peripheral or flat addressing, 14 bits; other methods are
 * skipped), the list length clipped to the bytes received. Returns how many, or -EPROTO. */
int bm_parse_report_luns(const uint8_t *d, uint32_t len, unsigned *luns, unsigned max);
/* SCSI status + sense to -errno with text; *retry set when the command should simply be sent again */
int bm_scsi_status(int status, int sense_key, int ascq, char *msg, size_t len, int *retry);

/* ident.c: the checks themselves; each returns 0 or -BLKMAP_EWRONGLUN with why */
int bm_ident_check_desig(const struct blkmap_dev *dev, const struct blkmap_inquiry *now, char *why, size_t len);
int bm_ident_check_capacity(const struct blkmap_dev *dev, uint64_t bytes, uint32_t block_bytes, char *why,
			    size_t len);
/* Region i: the blocks to read for it. */
void bm_ident_region_blocks(const struct blkmap_dev *dev, unsigned i, uint64_t *lba, uint32_t *blocks);
int bm_ident_check_region(const struct blkmap_dev *dev, unsigned i, const uint8_t *data, uint32_t got, char *why,
			  size_t len);
/* A check failed (logged when the device was in service or the reason changed) or passed. */
void bm_ident_wrong(struct blkmap_dev *dev, const char *why);
void bm_ident_passed(struct blkmap_dev *dev);
/* Recount whether the device is one of ctx->keepers (after a state or flag change). */
void bm_ident_keeper_update(struct blkmap_dev *dev);
/* The device is going away: regions freed, counters settled. */
void bm_ident_free(struct blkmap_dev *dev);

void bm_cache_free(struct blkmap_ctx *ctx);
/* device reads the discovery cache made for the candidate of that name (tests) */
unsigned bm_cache_reads(struct blkmap_ctx *ctx, const char *name);

#endif
