/* pnfs-mds as a library: the NFSv4.1 metadata server object that pnfs-mds (mds/mds_main.c) runs and
 * tests drive. One server owns one event loop, one pool (store + volume) and every connection;
 * it is single-threaded: all calls come from the thread that runs the loop. */
#ifndef MDS_MDS_H
#define MDS_MDS_H

#include <stddef.h>

#include "mds/config.h"

struct mds_server;
struct mds_loop;

/* Open the pool, bump the boot counter, start the grace period if clients may reclaim, and bind
 * the listening socket. cfg is copied. On failure returns -errno with a reason naming the failing
 * thing (LUN URL, pool directory, address) in err. Caller frees with mds_server_free(). */
int mds_server_new(const struct mds_config *cfg, struct mds_server **out, char *err, size_t errlen);

/* Serve until mds_server_stop() (or SIGTERM/SIGINT when signals are handled). Returns 0 or -errno. */
int mds_server_run(struct mds_server *srv);

/* Ask the loop to stop after the current iteration (from a callback on the loop thread). */
void mds_server_stop(struct mds_server *srv);

/* How SIGHUP gets new export rules: fill *out and return 0, or return -errno with a reason in err
 * (the current rules stay). */
typedef int mds_reload_fn(void *arg, struct mds_exports *out, char *err, size_t errlen);

/* Take over SIGTERM, SIGINT (stop cleanly) and SIGHUP (reload exports through reload, which may be
 * NULL: then SIGHUP is only logged) with a signalfd on the loop. arg is borrowed for the server's
 * life. Returns 0 or -errno. */
int mds_server_handle_signals(struct mds_server *srv, mds_reload_fn *reload, void *arg);

/* Replace the export rules (what SIGHUP does). */
void mds_server_set_exports(struct mds_server *srv, const struct mds_exports *ex);

/* The TCP port actually bound (useful with port 0 in tests). */
int mds_server_port(const struct mds_server *srv);

/* The server's loop (for tests that add their own events). Borrowed. */
struct mds_loop *mds_server_loop(struct mds_server *srv);

/* Close every connection, end every transaction (committed), close the pool and free. */
void mds_server_free(struct mds_server *srv);

#endif
