/* Integration tests' access to a real SAN: a `san-lab` started on a free port, torn down by the
 * harness even when a test fails, the runner is interrupted, or it dies (san-lab's --watch-pid). */
#ifndef TESTS_LAB_H
#define TESTS_LAB_H

#include <stddef.h>
#include <stdint.h>

#define LAB_MAX_LUNS 32

struct test_lab {
	char dir[300];              /* san-lab state directory */
	int port;                   /* iSCSI portal port on 127.0.0.1 or opts->portal (hosts mode: in each netns) */
	int nluns;
	uint64_t lun_bytes;
	char iqn[128];
	char urls[LAB_MAX_LUNS][256];  /* iscsi://127.0.0.1:PORT/IQN/L */
	char files[LAB_MAX_LUNS][300]; /* each LUN's backing file */
	char up_cmd[1024];          /* the san-lab up that started it (lab_restart runs it again) */
	int cleanup_handle;
};

/* Options for lab_up beyond LUN count and size; pass NULL for defaults. */
struct lab_opts {
	int ram;                 /* LUN files in /dev/shm */
	const char *chap;        /* "user:secret" or NULL */
	const char *initiator;   /* restrict to these initiator IQNs (space-separated), or NULL (address ACL) */
	const char *portal;      /* listen address (san-lab --portal ADDR), or NULL for 127.0.0.1 */
	int hosts;               /* > 0: shaped multi-host lab (root) */
	int rate_mbit;           /* with hosts */
	const char *params;      /* iSCSI target parameters, "NAME=VALUE ..." (san-lab --param each), or NULL */
	int stock_malloc;        /* tgtd with glibc's default malloc (san-lab --tgtd-malloc stock) */
};

/* Start a lab with nluns LUNs of size (san-lab syntax, e.g. "64M"). Returns NULL on failure
 * (with a message on stderr). The lab is registered for cleanup; free with lab_down(). */
struct test_lab *lab_up(int nluns, const char *size, const struct lab_opts *opts);

/* The value of KEY in the lab's state file (lab.env: LAB_PID, LAB_IQN, ...) into val:
 * 0, or -1 when the file or the key is missing. */
int lab_value(const struct test_lab *lab, const char *key, char *val, size_t len);

/* Stop the lab, remove its LUN files (san-lab down --wipe) and free it. Safe on NULL. */
void lab_down(struct test_lab *lab);

/* Start the lab's target again after lab_kill_target() or a plain `san-lab down`: the same
 * `san-lab up`, which serves the same LUN files with the same identities. Returns 0 when it came up
 * with the URLs it had, -1 (with a message on stderr) otherwise. lab_restart_with adds arguments to
 * that `up` (e.g. "--fresh": new, empty LUN files behind the same URLs). */
int lab_restart(struct test_lab *lab);
int lab_restart_with(struct test_lab *lab, const char *more);

/* Kill the lab's tgtd(s) with SIGKILL, as when a storage host dies (the lab stays registered
 * for cleanup). Returns 0 on success. */
int lab_kill_target(struct test_lab *lab);

/* Watching a target's cache flushes: strace (-f, every thread) on a process for fdatasync, fsync and
 * sync_file_range, which tgt's rdwr backing store calls on a LUN's backing file when SYNCHRONIZE CACHE
 * arrives. The trace is stopped and freed by lab_sync_trace_stop() or by the harness at exit. */
struct lab_sync_trace;

/* Trace the lab's tgtd / any process. Returns NULL when strace is missing or cannot attach (no
 * ptrace here), with a one-line reason in why. Returns only once every thread is attached. */
struct lab_sync_trace *lab_sync_trace_start(struct test_lab *lab, char *why, size_t whylen);
struct lab_sync_trace *lab_sync_trace_start_pid(int pid, char *why, size_t whylen);
/* The same tracer for other system calls (strace's -e argument, e.g. "trace=read,writev"), its
 * output (one line per call, in order) read by the caller from lab_trace_path(); stopped by
 * lab_sync_trace_stop(). */
struct lab_sync_trace *lab_trace_start_pid(int pid, const char *calls, char *why, size_t whylen);
const char *lab_trace_path(const struct lab_sync_trace *t);

/* Sync calls seen since the start or the last lab_sync_trace_reset(); *nfds (may be NULL) gets how
 * many distinct file descriptors they were made on (one per LUN backing file). */
int lab_sync_trace_count(struct lab_sync_trace *t, int *nfds);
void lab_sync_trace_reset(struct lab_sync_trace *t);
/* The same count, with the wall-clock times (seconds) of the first and the last of those calls
 * (0 when none): traces of two processes can be compared to order their calls. */
int lab_sync_trace_times(struct lab_sync_trace *t, double *first_s, double *last_s);
/* Stop strace (it detaches) and free. Safe on NULL. */
void lab_sync_trace_stop(struct lab_sync_trace *t);

#endif
