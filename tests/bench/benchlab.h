/* What the benchmark programs share: a san-lab started and stopped from the program (stopped again on
 * exit and on SIGINT/SIGTERM), optionally with a pool formatted over its LUNs and a pnfs-mds serving
 * it; clocks, free ports, BENCH_QUICK scaling; and the statistics of interleaved rounds. */
#ifndef PNFS_TESTS_BENCH_BENCHLAB_H
#define PNFS_TESTS_BENCH_BENCHLAB_H

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_MIB ((uint64_t)1 << 20)
#define BENCHLAB_MAX_LUNS 8

struct benchlab {
	char dir[256];
	char urls[BENCHLAB_MAX_LUNS][256];
	int n, up;
	char pool[300];
	pid_t mds;
	int mds_port;
};

/* The directory of the project's programs: $PNFS_BIN, or build/bin. */
const char *benchlab_bin_dir(void);
double benchlab_now(void); /* CLOCK_MONOTONIC seconds */
int benchlab_free_port(void);
int benchlab_can_connect(int port);
/* BENCH_QUICK set (and not "0"): an eighth of v, to check a program rather than measure. */
uint64_t benchlab_scale(uint64_t v);
int benchlab_quick(void);
/* BENCH_VERBOSE set (and not "0"): print every round, not only the medians. */
int benchlab_verbose(void);

/* Stop every lab still up at exit and on SIGINT/SIGTERM. Call once, first. */
void benchlab_install_cleanup(const char *prog);
/* Which labs to run from the command line ([--plain | --shaped]; both by default): 0, or 2 after
 * printing prog's usage. */
int benchlab_which_labs(int argc, char **argv, const char *prog, int *plain, int *shaped);
/* `san-lab up SHAPE --ram` in a fresh directory on a free port; the LUN URLs in l->urls. */
int benchlab_start(struct benchlab *l, const char *shape);
/* `pnfs-admin format` a pool over every LUN of the lab and start pnfs-mds on it (EXTRA_ARG, if not
 * NULL, is one more argument pair such as "--log-level", "warn"). */
int benchlab_start_mds(struct benchlab *l, const char *extra_opt, const char *extra_val);
void benchlab_stop(struct benchlab *l);

struct blkmap_ctx;
struct blkmap_vol;
struct pnfs_context;
/* Open every LUN of the lab, register the PR key key on it (once a client has asked for a SCSI layout
 * the MDS holds EXCLUSIVE ACCESS - REGISTRANTS ONLY: only registered initiators read or write), bind
 * each simple leaf of vol to the LUN whose bytes match its signature, and validate vol. 0 or -1 (the
 * reason on stderr). */
int benchlab_bind_registered(struct blkmap_ctx *ctx, struct benchlab *l, struct blkmap_vol *vol, uint64_t key);
/* A libpnfs context mounted on the lab's pnfs-mds as initiator, with every LUN of the lab as a device
 * and queue_depth commands in flight per LUN (0: the default). NULL on failure (the reason on stderr).
 * Caller unmounts and destroys it. */
struct pnfs_context *benchlab_client(struct benchlab *l, const char *initiator, unsigned queue_depth);
/* A process's CPU seconds (user + system, /proc/PID/stat) and resident KiB (VmRSS); -1 when unknown. */
double benchlab_proc_cpu_s(pid_t pid);
long benchlab_proc_rss_kib(pid_t pid);

/* ---- bare libiscsi: the raw baseline of the I/O benchmarks ----------------------------------------- */

/* One libiscsi context per LUN of a lab; the caller keeps commands in flight and turns the loop. */
struct benchlab_raw {
	int n;
	struct iscsi_context *isc[BENCHLAB_MAX_LUNS];
	int lun[BENCHLAB_MAX_LUNS];
	uint32_t block_bytes[BENCHLAB_MAX_LUNS];
	unsigned inflight;
};

/* One command, owned by the caller until cb ran (the iovec libiscsi reads from or writes into lives
 * here). */
struct benchlab_raw_op {
	void (*cb)(struct benchlab_raw_op *op, int status); /* status 0, or -EIO (not GOOD) */
	void *priv;
	struct benchlab_raw *raw;
	struct scsi_iovec iov;
};

/* Log in to every LUN of the lab as initiator (libiscsi's sync full connect), read its block size and
 * register key on it (REGISTER AND IGNORE EXISTING KEY: the MDS's EXCLUSIVE ACCESS - REGISTRANTS ONLY
 * reservation admits registered initiators only). 0 or -1 (the reason on stderr). Release with
 * benchlab_raw_close(). */
int benchlab_raw_open(struct benchlab_raw *r, const struct benchlab *l, const char *initiator, uint64_t key);
void benchlab_raw_close(struct benchlab_raw *r);
/* Queue READ(16) or WRITE(16) of len bytes (whole blocks) at byte offset off_bytes of the lab's LUN
 * lun, into or from buf (borrowed until op->cb). 0 or -1. */
int benchlab_raw_io(struct benchlab_raw *r, int lun, int write, uint64_t off_bytes, void *buf, size_t len,
		    struct benchlab_raw_op *op);
/* Queue SYNCHRONIZE CACHE(10) of the whole LUN lun (what a client's commit does to the LUNs it wrote). */
int benchlab_raw_flush(struct benchlab_raw *r, int lun, struct benchlab_raw_op *op);
/* One poll over every context (up to timeout_ms) and service what is ready: completions run from
 * here. 0 or -1 (a session failed). */
int benchlab_raw_run_once(struct benchlab_raw *r, int timeout_ms);
/* The lab's LUN index (into l->urls) that leaf index of vol is bound to (after
 * benchlab_bind_registered), or -1. */
int benchlab_leaf_lun(const struct benchlab *l, const struct blkmap_vol *vol, uint32_t leaf);

/* The median of n values (sorted in place); -1 when n is 0. */
double benchlab_median(double *v, int n);

/* A file of bytes (whole MiBs) of pseudo-random data, fsynced; 0 or -1. */
int benchlab_make_source(const char *path, uint64_t bytes);

#endif
