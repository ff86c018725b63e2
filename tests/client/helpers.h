/* Helpers for the client suites: a real nfs-ganesha (FSAL VFS on loopback) started on a free port and
 * always stopped, a TCP relay whose connections a test can cut (connection loss as the client sees
 * it), and small file utilities. */
#ifndef TESTS_CLIENT_HELPERS_H
#define TESTS_CLIENT_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ct_ganesha {
	int port;
	char dir[300];          /* state: config, log, pid file */
	char export_dir[400];   /* what /export serves */
	char conf[420];
	char log[420];
	pid_t pid;
	int lease_s;
	int cleanup_handle;
	time_t started;         /* wall-clock second of the last start */
};

/* Start ganesha exporting a fresh directory as /export, lease lease_s seconds (0: its default).
 * Returns NULL and a one-line reason in why (for test_skip) when it cannot start. Stopped at exit
 * by the harness whatever happens; ct_ganesha_down() stops it sooner. */
struct ct_ganesha *ct_ganesha_up(int lease_s, char *why, size_t whylen);
/* Kill it (SIGKILL, as a crash) and start it again on the same port and directory. 0 or -1. */
int ct_ganesha_restart(struct ct_ganesha *g);
void ct_ganesha_down(struct ct_ganesha *g);

/* A relay from a local port to 127.0.0.1:upstream on its own thread. */
struct ct_proxy;
struct ct_proxy *ct_proxy_start(int upstream_port);
int ct_proxy_port(const struct ct_proxy *p);
/* Close every relayed connection (both sides): a network blip. Returns how many were cut. */
int ct_proxy_cut(struct ct_proxy *p);
/* Lose bytes on every relayed connection, new ones too, until called with CT_PROXY_PASS: the peer
 * stays connected but hears nothing (a hung server, a black-holed path). */
enum { CT_PROXY_PASS = 0, CT_PROXY_DROP_REQUESTS = 1, CT_PROXY_DROP_REPLIES = 2 };
/* Both: and when the server closes a connection, its peer is not told (until the relay passes bytes
 * again, when its next request finds the connection gone). */
#define CT_PROXY_BLACK_HOLE (CT_PROXY_DROP_REQUESTS | CT_PROXY_DROP_REPLIES)
void ct_proxy_drop(struct ct_proxy *p, int what);
/* Leave the bytes of a direction unread until called with 0: they wait, in order, in the kernel's
 * socket buffers (a slow path, not a lossy one). */
enum { CT_PROXY_PAUSE_REQUESTS = 1, CT_PROXY_PAUSE_REPLIES = 2 };
void ct_proxy_pause(struct ct_proxy *p, int what);
/* Bytes thrown away so far towards the upstream (down 0) or back from it (down 1). */
uint64_t ct_proxy_dropped(struct ct_proxy *p, int down);
/* Connections accepted so far. */
unsigned ct_proxy_accepted(const struct ct_proxy *p);
/* Bytes relayed so far towards the upstream (down 0) or back from it (down 1); dropped ones are not
 * counted. */
uint64_t ct_proxy_bytes(struct ct_proxy *p, int down);
/* Relay no byte of any connection until n connections were accepted (a peer that opens them one
 * after another, waiting for each, gets no answer on the first). Call before the first connects. */
void ct_proxy_hold(struct ct_proxy *p, unsigned n);
/* The same, counting the connections peer accepted too (call it on both). */
void ct_proxy_hold_with(struct ct_proxy *p, struct ct_proxy *peer, unsigned n);
void ct_proxy_stop(struct ct_proxy *p);

/* Whole-file helpers: 0 or -1. */
int ct_read_file(const char *path, void **buf, size_t *len);
int ct_write_file(const char *path, const void *buf, size_t len);
/* The same, a new file created with mode (ct_write_file: 0644). */
int ct_write_file_mode(const char *path, const void *buf, size_t len, mode_t mode);

/* Milliseconds on the monotonic clock. */
uint64_t ct_now_ms(void);

/* pnfs cp -q OPTS SRC DST started in the background, its stderr into errfile, with SIGPIPE's default
 * action (as a shell starts it; the runner ignores SIGPIPE): its pid, or -1. */
pid_t ct_cp_start(const char *opts, const char *src, const char *dst, const char *errfile);
/* The end of such a copy: wait up to seconds for it (unless it was reaped already, *status holding
 * how it ended), SIGKILL it if it still runs then, and read its stderr (errfile) into errtxt. Returns
 * 0 if it ended on its own, -1 if it had to be killed. */
int ct_cp_wait(pid_t pid, int reaped, int seconds, int *status, const char *errfile, char *errtxt, size_t len);

struct test_lab;
struct pnfs_opts;
struct pnfs_context;
/* o's devices: every LUN of lab, urls[LAB_MAX_LUNS] holding their URLs (borrowed while o is used). */
void ct_lab_devices(struct pnfs_opts *o, const struct test_lab *lab, const char **urls);
/* A libpnfs context made from o (NULL: the defaults), mounted on 127.0.0.1:port at path. Aborts the
 * test when it cannot be made or mounted (the reason on stderr). Caller unmounts and destroys it. */
struct pnfs_context *ct_mount(const struct pnfs_opts *o, int port, const char *path);
/* Unmount (a failure fails the test, with the reason on stderr) and destroy ctx. */
void ct_unmount(struct pnfs_context *ctx);
/* LUN i's URL with the relay px's port in place of the target's: 0, or -1 (not the lab's port, or
 * it does not fit in len). */
int ct_relay_url(const struct test_lab *lab, struct ct_proxy *px, int i, char *url, size_t len);
/* pnfs options that reach the lab's LUNs through the relay px as initiator, with more options
 * (NULL: none) before them: 0, or -1 when they do not fit in len. */
int ct_relay_opts(const struct test_lab *lab, struct ct_proxy *px, const char *initiator, const char *more, char *opts,
		  size_t len);

#endif
