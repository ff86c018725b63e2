/* Tests' handle on a real pnfs-mds: a pool formatted with pnfs-admin on a lab's LUNs, the daemon
 * started in the foreground on a free port with its log in a file, stopped by SIGTERM or SIGKILL,
 * restarted on the same pool, and killed by the harness's cleanups whatever happens. */
#ifndef TESTS_MDS_MDSD_H
#define TESTS_MDS_MDSD_H

#include <sys/types.h>

#include "tests/lab.h"

struct test_mds {
	char dir[300];        /* scratch directory */
	char pool[340];       /* pool directory */
	char log[340];        /* daemon log (appended across restarts) */
	char conf[340];       /* config file written by tmds_write_config (may be empty) */
	char args[1024];      /* extra command-line arguments */
	int port;
	pid_t pid;
	int cleanup;
};

/* Format a pool on the lab's LUNs (pnfs-admin format; extra options such as "--concat" may be
 * NULL) and return a stopped server for it. NULL on failure (the reason on stderr). Free with
 * tmds_free (which kills a running daemon). */
struct test_mds *tmds_new(const struct test_lab *lab, const char *format_opts, const char *args);
void tmds_free(struct test_mds *m);
/* Start the daemon and wait until it accepts connections (returns 0), or until it exits
 * (returns its exit status, > 0) or 10 s pass (-1). */
int tmds_start(struct test_mds *m);
/* Stop with signal sig (SIGTERM waits for a clean exit, up to 10 s); returns the exit status
 * (128 + signal when killed), -1 if it had to be killed. */
int tmds_stop(struct test_mds *m, int sig);
/* A suite's server: tmds_new and tmds_start in one. The running server, or NULL with why set to
 * "pnfs-mds did not start" (nothing left to free). Stop and free with tmds_down. */
struct test_mds *tmds_up(const struct test_lab *lab, const char *format_opts, const char *args, char *why,
			 size_t whylen);
/* Stop a running server with SIGTERM (a clean exit), then free it. Safe on NULL. */
void tmds_down(struct test_mds *m);
/* A suite's lab and server in one: lab_up(nluns, size, lab_opts), then tmds_up on it with the
 * arguments made from args_fmt (printf). The running server, or NULL with why set ("no tgtd lab" or
 * tmds_up's reason); *labp is the lab, NULL when it did not start. Both go with tmds_lab_down. */
struct test_mds *tmds_lab_up(struct test_lab **labp, int nluns, const char *size, const struct lab_opts *lab_opts,
			     const char *format_opts, char *why, size_t whylen, const char *args_fmt, ...)
	__attribute__((format(printf, 8, 9)));
/* tmds_down(*mdsp), then lab_down(*labp); both set to NULL. Returns 0, what a suite's clean returns. */
int tmds_lab_down(struct test_lab **labp, struct test_mds **mdsp);
/* A suite's lab and server as the file's statics lab and mds: init brings them up with tmds_lab_up
 * (no lab options; the server's arguments from the printf arguments after format_opts) and fails the
 * suite when they do not start, clean takes them down. */
#define TMDS_SUITE(init, clean, nluns, size, format_opts, ...)                                           \
	static struct test_lab *lab;                                                                     \
	static struct test_mds *mds;                                                                     \
	static int init(void)                                                                            \
	{                                                                                                \
		char why_[64];                                                                           \
		mds = tmds_lab_up(&lab, nluns, size, NULL, format_opts, why_, sizeof(why_), __VA_ARGS__); \
		return !mds;                                                                             \
	}                                                                                                \
	static int clean(void) { return tmds_lab_down(&lab, &mds); }

/* The daemon's log so far (caller frees), for failure messages and checks. */
char *tmds_log(const struct test_mds *m);

#endif
