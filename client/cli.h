/* What the files of the pnfs command (client/pnfs_main.c and client/cli_*.c, linked into the program
 * only, never into libpnfs) share: the options in force, the contexts per server, the two sides of a
 * copy, and the commands each file provides. Everything below the command line is libpnfs's
 * public API (client/pnfs.h). */
#ifndef CLIENT_CLI_H
#define CLIENT_CLI_H

#include "client/pnfs.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

/* --sparse: auto keeps the holes the source has (SEEK_DATA/SEEK_HOLE locally, the layout's hole and
 * unwritten extents on a server; all-zero blocks when a server's file has no layout to tell), always
 * also turns all-zero blocks into holes, never writes every byte. */
enum { SPARSE_AUTO = 0, SPARSE_ALWAYS, SPARSE_NEVER };

struct cli_opts {
	int mds_io, json, quiet, progress, verbose, stats, long_list, parents, human, recursive, inplace;
	int sparse;             /* SPARSE_AUTO, SPARSE_ALWAYS or SPARSE_NEVER (--sparse) */
	const char *portals[16];
	unsigned nportals;
	const char *devices[64];
	unsigned ndevices;
	const char *initiator;
	const char *io_timeout; /* --io-timeout's seconds, checked */
	unsigned io_timeout_ms; /* 0: the library's default */
};

/* pnfs_main.c: the options in force (flags, client.conf, PNFS_* variables). */
extern struct cli_opts cli;
/* SIGINT, SIGTERM or SIGHUP during a copy: it stops, its temporary is removed, and the signal is
 * raised again at the end. */
extern volatile sig_atomic_t cli_stop_signal;
/* cli_copy.c: bytes the copies wrote to local regular files with O_DIRECT and through the page cache,
 * and read from local regular files with O_DIRECT (--stats). */
extern uint64_t cli_local_direct_bytes, cli_local_cached_bytes, cli_local_direct_read_bytes;

/* Say what is wrong with the command line and exit with status 2. */
void cli_die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* A remote argument: its context and path. */
struct rpath {
	struct pnfs_url u;
	struct pnfs_context *ctx;
};
/* Parse a pnfs:// URL and mount its server (one context per server, kept to the end): 0, or -errno
 * with the reason said on stderr. */
int cli_remote(const char *arg, struct rpath *r);
/* The same for an argument that must be a URL (anything else is a usage error). */
int cli_need_remote(const char *arg, struct rpath *r);

/* One side of a copy: a path on a server (ctx) or a local name ("-": standard input or output). */
struct loc {
	int remote;
	struct pnfs_context *ctx;
	char path[4400];
	char shown[4700];     /* for messages: the argument as given, and the names below it */
};

static inline mode_t cli_umask_now(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

/* The name after the last slash (p itself when it has none); borrowed from p. */
static inline const char *cli_base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* cli_copy.c: copy one file (a regular file or a stream) to the file dst names, through a temporary
 * renamed over it once durable (--inplace: directly). 0 or -errno; failures are said on stderr. */
int cli_copy_file(const struct loc *src, const struct loc *dst);

/* The commands: each returns the exit status (0 ok, 1 failure; usage errors exit 2). */
/* cli_tree.c */
int cli_cmd_copy(const char *src, const char *dst);
int cli_cmd_cat(int argc, char **argv);
/* cli_ls.c */
const char *cli_type_name(enum pnfs_ftype t);
int cli_cmd_ls(const char *arg);
int cli_cmd_stat(int argc, char **argv);
int cli_cmd_df(const char *arg);
/* cli_ns.c */
int cli_cmd_rm(int argc, char **argv);
int cli_cmd_mkdir(int argc, char **argv);
int cli_cmd_mv(const char *from, const char *to);

#endif
