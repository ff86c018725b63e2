/* pnfs: the command-line client (cp, cat, put, get, ls, stat, rm, mkdir, mv, df) on libpnfs, in the
 * manner of libnfs's nfs-cp/nfs-ls. Remote files are pnfs://host[:port]/path URLs; copies keep several
 * chunks in flight on the context's loop so the data path (direct LUN I/O or the MDS) stays busy, and
 * write a temporary beside the destination that is renamed over it only once complete.
 * Exit status: 0 ok, 1 failure, 2 usage. */
#include "client/mount.h"
#include "client/pnfs.h"
#include "proto/log.h"
#include "proto/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_BYTES (8u << 20)
/* Chunks in flight. Local reads and writes block the loop while they copy a chunk; eight keep the
 * LUNs busy meanwhile (four left them idle for part of every local write on a copy out). */
#define DEPTH 8
#define MAX_CTX 4

struct opts {
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

/* --sparse: auto keeps the holes the source has (SEEK_DATA/SEEK_HOLE locally, the layout's hole and
 * unwritten extents on a server; all-zero blocks when a server's file has no layout to tell), always
 * also turns all-zero blocks into holes, never writes every byte. */
enum { SPARSE_AUTO = 0, SPARSE_ALWAYS, SPARSE_NEVER };
/* All-zero blocks of this size (at multiples of it in the file) are not written. */
#define ZERO_BLOCK_BYTES 4096u

static struct opts o;

/* SIGINT, SIGTERM or SIGHUP during a copy: it stops, its temporary is removed, and the signal is
 * raised again at the end. */
static volatile sig_atomic_t stop_signal;

/* One context per server. */
struct server {
	char host[256];
	int port;
	struct pnfs_context *ctx;
};
static struct server servers[MAX_CTX];
static unsigned nservers;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die_usage(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "pnfs: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'pnfs --help'.\n");
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pnfs [OPTIONS] COMMAND ARGS...\n"
		"An NFSv4.1 client with pNFS block and SCSI layouts: file data goes straight to the SAN's LUNs\n"
		"when the server hands out layouts, through the server otherwise.\n"
		"\n"
		"Commands (remote files are pnfs://host[:port]/path, port 2049 by default):\n"
		"  cp [-r] SRC DST     copy a file: local to remote, remote to local, remote to remote; with -r\n"
		"                      a directory tree, the same ways (files, directories, symlinks;\n"
		"                      not into itself). The copy is written under a temporary name beside DST\n"
		"                      (.NAME.pnfs-XXXXXX on the server, .NAME.XXXXXX here) and renamed over\n"
		"                      it once complete; a failed or interrupted copy leaves DST as it was.\n"
		"                      A copy of a file onto itself is refused\n"
		"  put [-r] LOCAL URL  copy a local file (or tree) to the server (DST may be a directory)\n"
		"  get [-r] URL LOCAL  copy a file (or tree) from the server (\"-\": standard output)\n"
		"  cat URL...          write files to standard output\n"
		"  ls [-l] [-h] URL    list a directory (or show one file); -h: sizes as 1.5K, 3.0M\n"
		"  stat URL...         show attributes\n"
		"  rm URL...           remove files, symlinks or empty directories\n"
		"  mkdir [-p] URL...   make directories\n"
		"  mv URL URL          rename within a server\n"
		"  df URL              space and layout support of the file system\n"
		"  mount URL DIR [-f] [-o OPTS]  the server's PATH as a file system (FUSE); 'pnfs mount\n"
		"                      --help' for more. umount DIR: unmount it\n"
		"  config              the settings in force and where each comes from\n"
		"pnfs:///path (no host) names a path on the default server (mds in client.conf, PNFS_MDS).\n"
		"\n"
		"Options:\n"
		"  --mds-io             all file data through the MDS (no layouts)\n"
		"  --json               machine-readable output (ls, stat, df)\n"
		"  -r, -R, --recursive  cp, put, get: copy a directory tree\n"
		"  --inplace            cp, put, get: write the destination itself, not a temporary renamed\n"
		"                       over it (an interrupted copy then leaves it partly written)\n"
		"  --sparse=WHEN        cp, put, get: holes in the copy. auto (the default): where the source\n"
		"                       has them (SEEK_DATA/SEEK_HOLE here; on a server, what its layout says\n"
		"                       was never written, else all-zero blocks); always: also every all-zero\n"
		"                       4 KiB block; never: every byte written, as on a device or pipe\n"
		"  --human-readable     ls -l: sizes in K, M, G... (as ls -h)\n"
		"  --portal URL         iSCSI portal iscsi://host[:port] to find layout volumes on (repeatable)\n"
		"  --device SPEC        iSCSI LUN URL, block device or file that may hold a volume (repeatable)\n"
		"  --initiator IQN      iSCSI initiator name for the data path\n"
		"  --io-timeout SECONDS give up on a SAN command (and its LUN's path) after this long, 30 by\n"
		"                       default; the file's I/O then goes through the MDS. Also how long\n"
		"                       to keep trying to reach the MDS (a refused or lost connection is\n"
		"                       tried again, 100 ms doubling to 2 s apart) before failing, and\n"
		"                       how long I/O through the MDS may go unanswered (EIO)\n"
		"  -q, --quiet          no progress display\n"
		"  --progress           progress even when standard error is not a terminal\n"
		"  --stats              print I/O counters (MDS bytes, direct bytes, layouts) at the end\n"
		"  -v, --verbose        more messages (twice: debug)\n"
		"  -h, --help           this text\n"
		"  --version            the release (as the only argument)\n"
		"\n"
		"Defaults for --portal, --device, --initiator, --io-timeout and the server come from\n"
		"/etc/pnfs/client.conf, then ~/.config/pnfs/client.conf (key = value lines: portal, device,\n"
		"initiator, io-timeout, mds), then PNFS_PORTAL, PNFS_DEVICE, PNFS_INITIATOR, PNFS_IO_TIMEOUT,\n"
		"PNFS_MDS; flags win. The initiator defaults to /etc/iscsi/initiatorname.iscsi's.\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error (bad options, arguments, URLs or settings).\n");
}

/* ---- contexts --------------------------------------------------------------------------------- */

static struct pnfs_context *server_ctx(const struct pnfs_url *u)
{
	struct pnfs_opts po;
	struct server *s;
	int rc;

	for (unsigned i = 0; i < nservers; i++)
		if (servers[i].port == u->port && strcmp(servers[i].host, u->host) == 0)
			return servers[i].ctx;
	if (nservers == MAX_CTX) {
		fprintf(stderr, "pnfs: too many servers\n");
		return NULL;
	}
	s = &servers[nservers];
	pnfs_opts_init(&po);
	po.mds_io = o.mds_io;
	po.portals = o.portals;
	po.nportals = o.nportals;
	po.devices = o.devices;
	po.ndevices = o.ndevices;
	po.initiator_name = o.initiator;
	if (o.io_timeout_ms)
		po.io_timeout_ms = o.io_timeout_ms;
	rc = pnfs_context_create(&po, &s->ctx);
	if (rc < 0) {
		fprintf(stderr, "pnfs: cannot create a client context: %s\n", strerror(-rc));
		return NULL;
	}
	rc = pnfs_mount(s->ctx, u->host, u->port, "/");
	if (rc < 0) {
		char where[300];
		const char *err = pnfs_get_error(s->ctx);

		/* The library's text names the server; say which one if it does not. */
		snprintf(where, sizeof(where), "%s:%d", u->host, u->port);
		if (strstr(err, where))
			fprintf(stderr, "pnfs: %s\n", err);
		else
			fprintf(stderr, "pnfs: %s: %s\n", where, *err ? err : strerror(-rc));
		pnfs_context_destroy(s->ctx);
		s->ctx = NULL;
		return NULL;
	}
	snprintf(s->host, sizeof(s->host), "%s", u->host);
	s->port = u->port;
	nservers++;
	return s->ctx;
}

static void print_stats(void)
{
	for (unsigned i = 0; i < nservers; i++) {
		struct pnfs_stats st;
		pnfs_get_stats(servers[i].ctx, &st);
		if (o.json) {
			fprintf(stderr,
				"{\"server\":\"%s:%d\",\"mds_bytes_sent\":%" PRIu64 ",\"mds_bytes_received\":%" PRIu64
				",\"direct_bytes_read\":%" PRIu64 ",\"direct_bytes_written\":%" PRIu64
				",\"mds_data_read\":%" PRIu64 ",\"mds_data_written\":%" PRIu64
				",\"zero_filled_bytes\":%" PRIu64 ",\"layoutgets\":%" PRIu64
				",\"layoutgets_ahead\":%" PRIu64 ",\"layout_waits\":%" PRIu64
				",\"layoutcommits\":%" PRIu64 ",\"layoutreturns\":%" PRIu64 ",\"recalls\":%" PRIu64
				",\"fallbacks\":%" PRIu64 "}\n",
				servers[i].host, servers[i].port, st.mds_bytes_sent, st.mds_bytes_received,
				st.direct_bytes_read, st.direct_bytes_written, st.mds_data_read, st.mds_data_written,
				st.zero_filled_bytes, st.layoutgets, st.layoutgets_ahead, st.layout_waits,
				st.layoutcommits, st.layoutreturns, st.recalls, st.fallbacks);
		} else {
			fprintf(stderr,
				"%s:%d: MDS connection %" PRIu64 " bytes out, %" PRIu64 " in; direct %" PRIu64
				" read, %" PRIu64 " written; via MDS %" PRIu64 " read, %" PRIu64 " written; "
				"layouts %" PRIu64 " got (%" PRIu64 " ahead of the writes, %" PRIu64 " waited for), %" PRIu64
				" committed, %" PRIu64 " returned, %" PRIu64 " recalled; %" PRIu64 " fallbacks\n",
				servers[i].host, servers[i].port, st.mds_bytes_sent, st.mds_bytes_received,
				st.direct_bytes_read, st.direct_bytes_written, st.mds_data_read, st.mds_data_written,
				st.layoutgets, st.layoutgets_ahead, st.layout_waits, st.layoutcommits, st.layoutreturns,
				st.recalls, st.fallbacks);
		}
	}
}

static void shutdown_all(void)
{
	for (unsigned i = 0; i < nservers; i++) {
		if (pnfs_umount(servers[i].ctx) < 0 && o.verbose)
			fprintf(stderr, "pnfs: umount %s:%d: %s\n", servers[i].host, servers[i].port,
				pnfs_get_error(servers[i].ctx));
		pnfs_context_destroy(servers[i].ctx);
	}
	nservers = 0;
}

/* A remote argument: its context and path. */
struct rpath {
	struct pnfs_url u;
	struct pnfs_context *ctx;
};

static int remote(const char *arg, struct rpath *r)
{
	if (pnfs_parse_url(arg, &r->u) < 0) {
		fprintf(stderr, "pnfs: %s: not a valid pnfs://host[:port]/path URL\n", arg);
		return -EINVAL;
	}
	r->ctx = server_ctx(&r->u);
	return r->ctx ? 0 : -EIO;
}

static int need_remote(const char *arg, struct rpath *r)
{
	if (!pnfs_is_url(arg))
		die_usage("%s: expected a pnfs:// URL", arg);
	return remote(arg, r);
}

/* ---- formatting ------------------------------------------------------------------------------- */

static const char *type_name(enum pnfs_ftype t)
{
	switch (t) {
	case PNFS_REG: return "file";
	case PNFS_DIR: return "directory";
	case PNFS_LNK: return "symlink";
	case PNFS_BLK: return "block device";
	case PNFS_CHR: return "character device";
	case PNFS_SOCK: return "socket";
	case PNFS_FIFO: return "fifo";
	}
	return "unknown";
}

static char type_char(enum pnfs_ftype t)
{
	switch (t) {
	case PNFS_DIR: return 'd';
	case PNFS_LNK: return 'l';
	case PNFS_BLK: return 'b';
	case PNFS_CHR: return 'c';
	case PNFS_SOCK: return 's';
	case PNFS_FIFO: return 'p';
	default: return '-';
	}
}

static void mode_str(const struct pnfs_stat *st, char out[11])
{
	const char *rwx = "rwxrwxrwx";
	out[0] = type_char(st->type);
	for (int i = 0; i < 9; i++)
		out[i + 1] = (st->mode >> (8 - i)) & 1 ? rwx[i] : '-';
	out[10] = 0;
}

static void json_stat_fields(FILE *f, const struct pnfs_stat *st)
{
	fprintf(f, "\"type\":\"%s\",\"size\":%" PRIu64 ",\"mode\":\"%04o\",\"nlink\":%u,\"owner\":", type_name(st->type),
		st->size, st->mode, st->nlink);
	proto_json_str(f, st->owner);
	fprintf(f, ",\"group\":");
	proto_json_str(f, st->group);
	fprintf(f, ",\"fileid\":%" PRIu64 ",\"space_used\":%" PRIu64 ",\"mtime\":%lld.%09ld,\"ctime\":%lld.%09ld",
		st->fileid, st->space_used, (long long)st->mtime.tv_sec, st->mtime.tv_nsec,
		(long long)st->ctime.tv_sec, st->ctime.tv_nsec);
}

static void time_str(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;
	time_t t = ts->tv_sec;
	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

/* ---- progress --------------------------------------------------------------------------------- */

struct progress {
	int on;
	uint64_t total, done;
	struct timespec start, last;
	const char *name;
};

static double secs_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void progress_init(struct progress *p, const char *name, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = !o.quiet && (o.progress || isatty(2));
	p->total = total;
	p->name = name;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

static void progress_show(struct progress *p, int final)
{
	char a[32], b[32], r[32];
	double el;

	if (!p->on)
		return;
	if (!final && secs_since(&p->last) < 0.25)
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	el = secs_since(&p->start);
	double rate = el > 0 ? (double)p->done / el : 0;
	proto_fmt_bytes(p->done, PROTO_FMT_TENTHS, a, sizeof(a));
	proto_fmt_bytes(p->total, PROTO_FMT_TENTHS, b, sizeof(b));
	proto_fmt_bytes((uint64_t)rate, PROTO_FMT_TENTHS, r, sizeof(r));
	if (final) {
		fprintf(stderr, "\r%s: %s in %.2f s, %s/s\033[K\n", p->name, a, el, r);
		return;
	}
	if (p->total && rate > 0) {
		double eta = (double)(p->total - p->done) / rate;
		fprintf(stderr, "\r%s: %s / %s (%3.0f%%)  %s/s  ETA %d:%02d\033[K", p->name, a, b,
			100.0 * (double)p->done / (double)p->total, r, (int)eta / 60, (int)eta % 60);
	} else {
		fprintf(stderr, "\r%s: %s  %s/s\033[K", p->name, a, r);
	}
}

/* ---- copying ---------------------------------------------------------------------------------- */

struct end {
	int remote;
	struct pnfs_context *ctx;
	struct pnfs_fh *fh;
	int fd;
	const char *name;
	int known_size;      /* a local regular source: reading less than its size means it shrank */
	int stream;          /* a local source read in turn (standard input, a FIFO, a terminal) */
};

struct copy;
struct chunk {
	struct copy *cp;
	char *buf;           /* the chunk's bytes */
	size_t mapped;       /* of buf, bytes faulted in so far (whole pages) */
	uint64_t off;
	size_t len;
	int busy;
	int ready;           /* read, waiting for its turn on a sequential destination */
	int io_status;       /* the local I/O thread's result: bytes read or written, or -errno */
	size_t wpos;         /* a write to a server: where the next run of bytes to write is looked for */
	struct chunk *io_next; /* on that thread's queue or its done list */
};

/* A copy's local file I/O, off the event loop: the loop keeps servicing the LUNs while a chunk is copied
 * out of or into the page cache (as long, for a chunk, as sending or receiving it). A copy in reads
 * its regular source here, a copy out writes its seekable destination. The thread takes chunks in
 * order from todo, reads or writes them, and puts them on done; the loop, woken through efd, finishes
 * them. */
struct localio {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct chunk *todo, *todo_tail, *done;
	int fd, quit, running;
	int efd;         /* eventfd: done went from empty to not */
	int reading;     /* 1: chunks are read from fd (the source); 0: written to it (the destination) */
	int skip_zeros;  /* writing: all-zero blocks are left as holes */
	unsigned queued; /* chunks handed over and not yet finished by the loop (loop thread only) */
};

struct copy {
	struct end src, dst;
	struct chunk ch[DEPTH];
	uint64_t size;       /* bytes to copy (UINT64_MAX: until EOF, for pipes) */
	uint64_t next;       /* next offset to read */
	uint64_t written;
	int eof;
	int err;
	char errmsg[1200];
	struct progress prog;
	unsigned busy;
	int sequential;      /* destination is a pipe or terminal: write chunks in order */
	struct localio io;
	/* Sparse copies (the destination is a new, empty regular file: what is not written reads as
	 * zeros, and its size is set at the end). */
	int holes;           /* the source's holes are skipped: HOLES_SEEK or HOLES_MAP */
	int skip_zeros;      /* all-zero blocks are not written */
	uint64_t dstart, dend; /* the source's data range that holds next or follows it */
	struct hole *hole;   /* HOLES_MAP: the holes of a server's file, sorted, apart */
	size_t nhole, hole_i;
	uint64_t skipped;    /* bytes of holes passed over (for the progress line) */
	uint64_t wend;       /* the furthest end written to a server */
};

enum { HOLES_SEEK = 1, HOLES_MAP };
struct hole {
	uint64_t off, end;
};

static void copy_fail(struct copy *cp, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void copy_fail(struct copy *cp, int err, const char *fmt, ...)
{
	va_list ap;
	if (cp->err)
		return;
	cp->err = err;
	va_start(ap, fmt);
	vsnprintf(cp->errmsg, sizeof(cp->errmsg), fmt, ap);
	va_end(ap);
}

static void chunk_written(struct copy *cp, struct chunk *c, int status);

/* The chunk is done with (read, written, or given up): it can take the next part of the file. */
static void chunk_idle(struct copy *cp, struct chunk *c)
{
	c->busy = 0;
	cp->busy--;
}

static void remote_write_next(struct copy *cp, struct chunk *c);

static void remote_write_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct chunk *c = priv;
	(void)data;
	(void)ctx;
	if (status < 0)
		chunk_written(c->cp, c, status);
	else
		remote_write_next(c->cp, c);
}

/* Of a chunk, where the block holding byte p (chunk-relative) ends: blocks are ZERO_BLOCK_BYTES at
 * multiples of it in the file, cut by the chunk's ends. */
static size_t zero_block_end(const struct chunk *c, size_t p)
{
	uint64_t e = ((c->off + p) / ZERO_BLOCK_BYTES + 1) * ZERO_BLOCK_BYTES - c->off;

	return e < c->len ? (size_t)e : c->len;
}

/* A whole block of zeros at [p, e): one that need not be written. */
static int zero_block(const struct chunk *c, size_t p, size_t e)
{
	const char *b = c->buf + p;

	if ((c->off + p) % ZERO_BLOCK_BYTES || e - p != ZERO_BLOCK_BYTES)
		return 0;
	return b[0] == 0 && memcmp(b, b + 1, ZERO_BLOCK_BYTES - 1) == 0;
}

/* The next run of the chunk's bytes to write, at pos or after: 1 with [*a, *b), 0 when none is left.
 * With skip, runs of whole all-zero blocks are left out. */
static int next_run(const struct chunk *c, int skip, size_t pos, size_t *a, size_t *b)
{
	if (skip)
		while (pos < c->len && zero_block(c, pos, zero_block_end(c, pos)))
			pos = zero_block_end(c, pos);
	if (pos >= c->len)
		return 0;
	*a = pos;
	if (!skip) {
		*b = c->len;
		return 1;
	}
	while (pos < c->len && !zero_block(c, pos, zero_block_end(c, pos)))
		pos = zero_block_end(c, pos);
	*b = pos;
	return 1;
}

/* Write all of a chunk to a local file (at its offset, or in turn on a pipe or terminal; with skip,
 * not its all-zero blocks, into a new file): bytes of the chunk, or -errno. */
static int write_local(int fd, const struct chunk *c, int sequential, int skip)
{
	size_t a, b;

	for (size_t pos = 0; next_run(c, skip && !sequential, pos, &a, &b); pos = b) {
		size_t done = a;
		while (done < b) {
			ssize_t n = sequential ? write(fd, c->buf + done, b - done)
					       : pwrite(fd, c->buf + done, b - done, (off_t)(c->off + done));
			if (n < 0) {
				if (errno == EINTR && !stop_signal)
					continue;
				return -errno;
			}
			done += (size_t)n;
		}
	}
	return (int)c->len;
}

/* Fault in the chunk's memory for its next use in one call (Linux 5.14+; elsewhere it is faulted in
 * as it is used): mapping it page by page as the bytes arrive cost a tenth of a 1 GiB copy on a VM.
 * Each chunk does it on first use, so a copy starts after one chunk's worth, not all eight (18 ms
 * here), and a small file maps only its own size. */
static void chunk_populate(struct chunk *c)
{
	size_t want = (c->len + 4095) & ~(size_t)4095;

	if (want <= c->mapped)
		return;
#ifdef MADV_POPULATE_WRITE
	(void)madvise(c->buf + c->mapped, want - c->mapped, MADV_POPULATE_WRITE);
#endif
	c->mapped = want;
}

/* Read a chunk's bytes from a local source (at its offset, or in turn from a stream): bytes read,
 * fewer at the end of the file, or -errno. */
static int read_local(int fd, struct chunk *c, int stream)
{
	size_t got = 0;

	chunk_populate(c);
	while (got < c->len) {
		ssize_t n = stream ? read(fd, c->buf + got, c->len - got)
				   : pread(fd, c->buf + got, c->len - got, (off_t)(c->off + got));
		if (n < 0) {
			if (errno == EINTR && !stop_signal)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (int)got;
}

static void *localio_main(void *arg)
{
	struct localio *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct chunk *c = w->todo;
		if (!c) {
			if (w->quit)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		w->todo = c->io_next;
		if (!w->todo)
			w->todo_tail = NULL;
		pthread_mutex_unlock(&w->lock);
		c->io_status = w->reading ? read_local(w->fd, c, 0) : write_local(w->fd, c, 0, w->skip_zeros);
		pthread_mutex_lock(&w->lock);
		c->io_next = w->done;
		w->done = c;
		if (!c->io_next) {
			uint64_t one = 1;
			if (write(w->efd, &one, sizeof(one)) < 0)
				(void)0; /* the counter is full: the loop is already woken */
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The local I/O thread of a copy from a local regular file to a server (it reads) or from a server into
 * a local, seekable file (it writes). Without one (no thread, pipes, terminals, server to server) local
 * reads and writes stay inline. */
static void localio_start(struct copy *cp)
{
	struct localio *w = &cp->io;

	memset(w, 0, sizeof(*w)); /* a copy may run again (through the MDS, after a SAN path failed) */
	if (!cp->src.remote && cp->dst.remote && cp->src.known_size && cp->src.fd > 0) {
		w->reading = 1;
		w->fd = cp->src.fd;
	} else if (cp->src.remote && !cp->dst.remote && !cp->sequential && cp->dst.fd >= 0) {
		w->reading = 0;
		w->fd = cp->dst.fd;
		w->skip_zeros = cp->skip_zeros;
	} else {
		return;
	}
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0)
		return;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, localio_main, w) == 0) {
		w->running = 1;
	} else {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		close(w->efd);
	}
}

static void localio_stop(struct copy *cp)
{
	struct localio *w = &cp->io;

	if (!w->running)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	close(w->efd);
	w->running = 0;
}

static void localio_queue(struct localio *w, struct chunk *c)
{
	c->io_next = NULL;
	pthread_mutex_lock(&w->lock);
	if (w->todo_tail)
		w->todo_tail->io_next = c;
	else
		w->todo = c;
	w->todo_tail = c;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	w->queued++;
}

/* A local write of a chunk ended with rc (bytes or -errno). */
static void local_written(struct copy *cp, struct chunk *c, int rc)
{
	if (rc < 0)
		copy_fail(cp, rc, "%s: %s", cp->dst.name, strerror(-rc));
	chunk_written(cp, c, cp->err ? cp->err : rc);
}

static void source_read(struct copy *cp, struct chunk *c, int got);

/* Finish the chunks the thread is done with (loop thread). */
static void localio_reap(struct copy *cp)
{
	struct localio *w = &cp->io;
	struct chunk *c, *done;

	if (!w->running || w->queued == 0)
		return;
	pthread_mutex_lock(&w->lock);
	done = w->done;
	w->done = NULL;
	pthread_mutex_unlock(&w->lock);
	/* done is newest first: take the chunks in the order the thread did them, so that the chunks a
	 * copy in has read go out to the LUNs in file order */
	for (c = NULL; done;) {
		struct chunk *next = done->io_next;
		done->io_next = c;
		c = done;
		done = next;
	}
	while (c) {
		struct chunk *next = c->io_next;
		w->queued--;
		if (w->reading)
			source_read(cp, c, c->io_status);
		else
			local_written(cp, c, c->io_status);
		c = next;
	}
}

/* Write a chunk's next run of bytes to the server (one run: all of it, unless all-zero blocks are
 * skipped); the chunk is written when none is left. */
static void remote_write_next(struct copy *cp, struct chunk *c)
{
	size_t a, b;
	int rc;

	if (cp->err || !next_run(c, cp->skip_zeros, c->wpos, &a, &b)) {
		chunk_written(cp, c, cp->err ? cp->err : (int)c->len);
		return;
	}
	c->wpos = b;
	if (c->off + b > cp->wend)
		cp->wend = c->off + b;
	rc = pnfs_pwrite_async(cp->dst.ctx, cp->dst.fh, c->buf + a, b - a, c->off + a, remote_write_cb, c);
	if (rc < 0) {
		copy_fail(cp, rc, "%s: %s", cp->dst.name, pnfs_get_error(cp->dst.ctx));
		chunk_idle(cp, c);
	}
}

static void write_chunk(struct copy *cp, struct chunk *c)
{
	if (cp->io.running && !cp->io.reading) {
		localio_queue(&cp->io, c);
		return;
	}
	if (cp->dst.remote) {
		c->wpos = 0;
		remote_write_next(cp, c);
		return;
	}
	local_written(cp, c, write_local(cp->dst.fd, c, cp->sequential, cp->skip_zeros));
}

static void chunk_written(struct copy *cp, struct chunk *c, int status)
{
	if (status < 0)
		copy_fail(cp, status, "%s: %s", cp->dst.name, cp->dst.remote ? pnfs_get_error(cp->dst.ctx) : strerror(-status));
	else {
		cp->written += c->len;
		cp->prog.done = cp->written + cp->skipped;
	}
	chunk_idle(cp, c);
}

static void remote_read_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct chunk *c = priv;
	struct copy *cp = c->cp;
	(void)data;
	(void)ctx;

	if (status < 0) {
		copy_fail(cp, status, "%s: %s", cp->src.name, pnfs_get_error(cp->src.ctx));
		chunk_idle(cp, c);
		return;
	}
	if ((size_t)status < c->len) {
		/* The file ended sooner than its size said (it shrank meanwhile). */
		c->len = (size_t)status;
		cp->eof = 1;
		if (cp->size == UINT64_MAX || c->off + c->len < cp->size)
			cp->size = c->off + c->len;
	}
	if (c->len == 0) {
		chunk_idle(cp, c);
		return;
	}
	if (cp->sequential) {
		c->ready = 1;
		return;
	}
	write_chunk(cp, c);
}

/* A sequential destination takes chunks in file order. */
static void flush_ready(struct copy *cp)
{
	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; i < DEPTH; i++) {
			struct chunk *c = &cp->ch[i];
			if (c->ready && c->off == cp->written) {
				c->ready = 0;
				write_chunk(cp, c);
				again = 1;
			}
		}
	}
}

/* The source's data range from off on: [cp->dstart, cp->dend), dstart at off or after it (the size
 * when only holes are left). Locally from SEEK_DATA and SEEK_HOLE (a file system without them: no
 * holes from here on); on a server from the map of its holes. */
static void data_range(struct copy *cp, uint64_t off)
{
	if (cp->holes == HOLES_SEEK) {
		off_t d = lseek(cp->src.fd, (off_t)off, SEEK_DATA), h = -1;
		struct stat st;
		if (d < 0 && errno == ENXIO) {
			/* nothing but a hole to the end, unless the file ended sooner than it did */
			if (fstat(cp->src.fd, &st) == 0 && (uint64_t)st.st_size < cp->size)
				copy_fail(cp, -EIO, "%s: the file shrank while it was being copied", cp->src.name);
			cp->dstart = cp->dend = cp->size;
			return;
		}
		if (d >= 0)
			h = lseek(cp->src.fd, d, SEEK_HOLE);
		if (d < 0 || h < 0) {
			cp->holes = 0;
			cp->dstart = off;
			cp->dend = UINT64_MAX;
			return;
		}
		cp->dstart = (uint64_t)d;
		cp->dend = (uint64_t)h;
	} else {
		while (cp->hole_i < cp->nhole && cp->hole[cp->hole_i].end <= off)
			cp->hole_i++;
		if (cp->hole_i < cp->nhole && cp->hole[cp->hole_i].off <= off)
			off = cp->hole[cp->hole_i++].end;
		cp->dstart = off;
		cp->dend = cp->hole_i < cp->nhole ? cp->hole[cp->hole_i].off : UINT64_MAX;
	}
	if (cp->dstart > cp->size)
		cp->dstart = cp->size;
}

/* Start reading into a free chunk; local sources are read at once. */
static int start_chunk(struct copy *cp, struct chunk *c)
{
	size_t len = CHUNK_BYTES;

	if (cp->eof || cp->err || (cp->size != UINT64_MAX && cp->next >= cp->size))
		return 0;
	if (cp->holes && cp->next >= cp->dend) {
		data_range(cp, cp->next);
		if (cp->holes && cp->dstart > cp->next) {
			/* a hole: nothing to read or write, the destination's size covers it at the end */
			cp->skipped += cp->dstart - cp->next;
			cp->prog.done = cp->written + cp->skipped;
			cp->next = cp->dstart;
		}
		if (cp->err || cp->next >= cp->size)
			return 0;
	}
	if (cp->size != UINT64_MAX && cp->size - cp->next < len)
		len = (size_t)(cp->size - cp->next);
	if (cp->holes && cp->dend > cp->next && cp->dend - cp->next < len)
		len = (size_t)(cp->dend - cp->next);
	c->off = cp->next;
	c->len = len;
	c->busy = 1;
	cp->busy++;
	cp->next += len;
	if (cp->src.remote) {
		int rc;
		chunk_populate(c);
		rc = pnfs_pread_async(cp->src.ctx, cp->src.fh, c->buf, len, c->off, remote_read_cb, c);
		if (rc < 0) {
			copy_fail(cp, rc, "%s: %s", cp->src.name, pnfs_get_error(cp->src.ctx));
			chunk_idle(cp, c);
		}
		return 1;
	}
	if (cp->io.running && cp->io.reading)
		localio_queue(&cp->io, c);
	else
		source_read(cp, c, read_local(cp->src.fd, c, cp->src.stream));
	return 1;
}

/* A chunk of a local source was read: got bytes, or -errno. */
static void source_read(struct copy *cp, struct chunk *c, int got)
{
	if (got >= 0 && (size_t)got < c->len && cp->src.known_size)
		/* A regular file ended before the size it had when the copy began. */
		copy_fail(cp, -EIO, "%s: the file shrank while it was being copied", cp->src.name);
	else if (got < 0)
		copy_fail(cp, got, "%s: %s", cp->src.name, strerror(-got));
	if (cp->err || got == 0) {
		if (got == 0) {
			cp->eof = 1;
			if (cp->size == UINT64_MAX)
				cp->size = c->off; /* a stream that ended on a chunk's edge */
		}
		chunk_idle(cp, c);
		return;
	}
	if ((size_t)got < c->len) {
		/* the end of standard input */
		c->len = (size_t)got;
		cp->eof = 1;
		cp->size = c->off + c->len;
	}
	write_chunk(cp, c);
}

/* Wait for the servers' events and the local I/O thread's finished chunks, and handle them. */
static int run_loops(struct copy *cp)
{
	struct pnfs_context *ctx[2] = { cp->src.remote ? cp->src.ctx : NULL, cp->dst.remote ? cp->dst.ctx : NULL };
	struct pollfd p[3];
	int n = 0, rc = 0, ie = -1;

	if (ctx[1] == ctx[0])
		ctx[1] = NULL;
	for (int i = 0; i < 2; i++) {
		if (!ctx[i])
			continue;
		p[n].fd = pnfs_get_fd(ctx[i]);
		p[n].events = (short)pnfs_which_events(ctx[i]);
		p[n++].revents = 0;
	}
	if (cp->io.running) {
		ie = n;
		p[n].fd = cp->io.efd;
		p[n].events = POLLIN;
		p[n++].revents = 0;
	}
	if (poll(p, (nfds_t)n, 500) < 0 && errno != EINTR)
		return -errno;
	for (int i = 0, k = 0; i < 2; i++)
		if (ctx[i] && rc == 0)
			rc = pnfs_service(ctx[i], p[k++].revents);
	if (ie >= 0 && p[ie].revents) {
		uint64_t v;
		if (read(cp->io.efd, &v, sizeof(v)) < 0)
			v = 0; /* nothing to read: woken by an earlier count */
		localio_reap(cp);
	}
	return rc;
}

#define HUGE_BYTES (2u << 20)

/* The chunks' memory, on 2 MiB boundaries and asking for huge pages where the kernel has them
 * (transparent huge pages, "madvise" or "always"). Every fresh 4 KiB page costs a fault on its first
 * touch, and on a VM whose hypervisor shadows the page tables each costs several microseconds more:
 * 64 MiB of small pages took 100-290 ms to fault in here, a seventh of a 1 GiB copy, where huge pages
 * took 6-70 ms. The memory is the copy's alone, so a huge page wastes nothing. */
static int chunk_mem_alloc(char **mem)
{
	const size_t want = (size_t)CHUNK_BYTES * DEPTH, len = want + HUGE_BYTES;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (m == MAP_FAILED)
		return -1;
	a = (char *)(((uintptr_t)m + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
	/* keep only the aligned part: chunk_mem_free finds the map at its start */
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + want < m + len)
		munmap(a + want, (size_t)(m + len - (a + want)));
#ifdef MADV_HUGEPAGE
	(void)madvise(a, want, MADV_HUGEPAGE);
#endif
	*mem = a;
	return 0;
}

static void chunk_mem_free(char *mem)
{
	munmap(mem, (size_t)CHUNK_BYTES * DEPTH);
}

static int copy_run(struct copy *cp)
{
	char *mem = NULL;

	if (chunk_mem_alloc(&mem) < 0)
		return -ENOMEM;
	for (int i = 0; i < DEPTH; i++) {
		memset(&cp->ch[i], 0, sizeof(cp->ch[i]));
		cp->ch[i].cp = cp;
		cp->ch[i].buf = mem + (size_t)i * CHUNK_BYTES;
	}
	localio_start(cp);
	for (;;) {
		if (stop_signal)
			copy_fail(cp, -EINTR, "%s: interrupted", cp->dst.name);
		for (int i = 0; i < DEPTH && !cp->err; i++)
			if (!cp->ch[i].busy)
				start_chunk(cp, &cp->ch[i]);
		progress_show(&cp->prog, 0);
		if (cp->busy == 0) {
			if (cp->err || cp->eof || (cp->size != UINT64_MAX && cp->next >= cp->size))
				break;
			continue;
		}
		if (run_loops(cp) < 0) {
			copy_fail(cp, -EIO, "event loop failed");
			break;
		}
		if (cp->sequential)
			flush_ready(cp);
	}
	/* Drain whatever is still in flight after a failure. */
	while (cp->busy > 0 && (cp->src.remote || cp->dst.remote || cp->io.queued > 0)) {
		if (run_loops(cp) < 0)
			break;
		if (cp->sequential && !cp->err)
			flush_ready(cp);
		for (int i = 0; i < DEPTH; i++)
			if (cp->err && cp->ch[i].ready) {
				cp->ch[i].ready = cp->ch[i].busy = 0;
				cp->busy--;
			}
	}
	localio_stop(cp);
	chunk_mem_free(mem);
	return cp->err;
}

/* Is this remote path a directory? */
static int remote_is_dir(struct rpath *r)
{
	struct pnfs_stat st;
	return pnfs_stat(r->ctx, r->u.path, &st) == 0 && st.type == PNFS_DIR;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* One run of the copy with its progress line; a failure is said on stderr. 0 or -errno. */
static int copy_pass(struct copy *cp, const char *name)
{
	int rc;

	progress_init(&cp->prog, name, cp->size == UINT64_MAX ? 0 : cp->size);
	rc = copy_run(cp);
	if (rc == 0)
		progress_show(&cp->prog, 1);
	else if (cp->prog.on)
		fprintf(stderr, "\n");
	if (rc < 0)
		fprintf(stderr, "pnfs: %s\n", cp->errmsg);
	return rc;
}

/* The holes of a server's file, from what its layout says (LAYOUTGET in READ iomode): NONE_DATA
 * (never written) and INVALID_DATA (allocated, not written) extents read as zeros. Returns 0, or
 * -errno when the server gives no layout (the MDS path) or the map does not fit in memory. */
static int remote_holes(struct copy *cp)
{
	struct pnfs_extent *e = NULL;
	size_t n = 0, cap = 0;
	int rc = pnfs_layout_extents(cp->src.ctx, cp->src.fh, 0, cp->size, &e, &n);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = e[i].file_offset, b = a + e[i].length;
		struct hole *last = cp->nhole ? &cp->hole[cp->nhole - 1] : NULL;
		if (e[i].state != PNFS_EXT_NONE && e[i].state != PNFS_EXT_INVALID)
			continue;
		if (b > cp->size)
			b = cp->size;
		if (a >= b)
			continue;
		if (last && last->end >= a) {
			if (b > last->end)
				last->end = b;
			continue;
		}
		if (cp->nhole == cap) {
			struct hole *h = realloc(cp->hole, (cap ? cap * 2 : 16) * sizeof(*h));
			if (!h) {
				rc = -ENOMEM;
				break;
			}
			cp->hole = h;
			cap = cap ? cap * 2 : 16;
		}
		cp->hole[cp->nhole].off = a;
		cp->hole[cp->nhole++].end = b;
	}
	free(e);
	if (rc < 0) {
		free(cp->hole);
		cp->hole = NULL;
		cp->nhole = 0;
	}
	return rc < 0 ? rc : 0;
}

/* How the copy treats holes (--sparse), once both ends are open. Only a new regular file on either
 * side can be left with holes: a pipe, a terminal or a device gets every byte. */
static void plan_sparse(struct copy *cp)
{
	cp->holes = cp->skip_zeros = 0;
	if (o.sparse == SPARSE_NEVER || cp->sequential)
		return;
	cp->skip_zeros = o.sparse == SPARSE_ALWAYS;
	if (cp->src.remote) {
		if (cp->size == 0 || cp->size == UINT64_MAX)
			return;
		if (remote_holes(cp) == 0)
			cp->holes = HOLES_MAP;
		else
			cp->skip_zeros = 1; /* no layout to tell where the holes are: all-zero blocks are */
	} else if (cp->src.known_size) {
		cp->holes = HOLES_SEEK;
	}
}

/* Ready a copy to run (again, from the start). */
static void copy_reset(struct copy *cp)
{
	cp->next = cp->written = cp->skipped = cp->wend = 0;
	cp->dstart = cp->dend = 0;
	cp->hole_i = 0;
	cp->eof = cp->err = 0;
	cp->busy = 0;
	cp->errmsg[0] = 0;
}

/* ---- files and trees -------------------------------------------------------------------------- */

/* One side of a copy: a path on a server (ctx) or a local name ("-": standard input or output). */
struct loc {
	int remote;
	struct pnfs_context *ctx;
	char path[4400];
	char shown[4700];     /* for messages: the argument as given, and the names below it */
};

static mode_t umask_now(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

/* out: parent/name, for the path and the shown name. -ENAMETOOLONG when it does not fit. */
static int loc_child(const struct loc *parent, const char *name, struct loc *out)
{
	size_t pl = strlen(parent->path), sl = strlen(parent->shown);
	const char *ps = pl && parent->path[pl - 1] == '/' ? "" : "/";
	const char *ss = sl && parent->shown[sl - 1] == '/' ? "" : "/";

	out->remote = parent->remote;
	out->ctx = parent->ctx;
	if ((size_t)snprintf(out->path, sizeof(out->path), "%s%s%s", parent->path, ps, name) >= sizeof(out->path) ||
	    (size_t)snprintf(out->shown, sizeof(out->shown), "%s%s%s", parent->shown, ss, name) >= sizeof(out->shown)) {
		fprintf(stderr, "pnfs: %s/%s: %s\n", parent->shown, name, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	return 0;
}

/* The last name of a path, trailing slashes ignored, into buf ("" for the root). */
static const char *last_name(const char *p, char *buf, size_t len)
{
	size_t n = strlen(p);
	const char *s;

	while (n > 1 && p[n - 1] == '/')
		n--;
	snprintf(buf, len, "%.*s", (int)n, p);
	s = strrchr(buf, '/');
	if (s && s[1])
		return s + 1;
	return s ? "" : buf;
}

/* A name for the temporary copy of path in its directory: DIR/.NAME<tag>XXXXXX. */
static void tmp_name(const char *path, const char *tag, char *out, size_t len)
{
	static const char az[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static uint64_t x;
	const char *s = strrchr(path, '/');
	size_t dirlen = s ? (size_t)(s - path) + 1 : 0;
	char rnd[7];

	if (!x) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^ 0x9e3779b97f4a7c15ull;
	}
	for (int i = 0; i < 6; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		rnd[i] = az[x % (sizeof(az) - 1)];
	}
	rnd[6] = 0;
	/* the name part is cut so that the temporary's name stays within NAME_MAX */
	snprintf(out, len, "%.*s.%.200s%s%s", (int)dirlen, path, s ? s + 1 : path, tag, rnd);
}

/* Create the temporary for a copy to the server: O_EXCL, a fresh name until one is free. */
static int remote_tmp_open(const struct loc *dst, uint32_t mode, char *tmp, size_t len, struct pnfs_fh **fh)
{
	int rc = -EEXIST;

	for (int tries = 0; tries < 16 && rc == -EEXIST; tries++) {
		tmp_name(dst->path, ".pnfs-", tmp, len);
		rc = pnfs_open(dst->ctx, tmp, O_WRONLY | O_CREAT | O_EXCL, mode, fh);
	}
	if (rc < 0)
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
	return rc;
}

static int local_tmp_open(const struct loc *dst, char *tmp, size_t len)
{
	int fd;

	tmp_name(dst->path, ".", tmp, len);
	memcpy(tmp + strlen(tmp) - 6, "XXXXXX", 6);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "pnfs: %s: %s (creating the temporary %s to write it through%s)\n", dst->shown,
			strerror(errno), tmp, errno == EACCES || errno == EPERM ? "; --inplace writes the file itself" : "");
	return fd;
}

/* A copy's source and destination are one file on one server (through any names, addresses or
 * ports): copying would destroy it. */
static int same_remote_file(struct pnfs_fh *src, const struct loc *dst)
{
	struct pnfs_identity a, b;

	pnfs_fh_identity(src, &a);
	return pnfs_identity(dst->ctx, dst->path, &b) == 0 && pnfs_identity_equal(&a, &b);
}

/* Copy one file (a regular file or a stream) to the file dst names. The destination is written under a
 * temporary name beside it and renamed over it only when all its bytes are durable (--inplace: written
 * directly). 0 or -errno; failures are said on stderr. */
static int copy_file(const struct loc *src, const struct loc *dst)
{
	struct loc through;
	struct copy cp;
	char tmp[4400];
	uint32_t src_mode = 0666, dst_mode;
	int rc = 0, have_tmp = 0, dst_exists = 0;
	const char *name = base_name(src->path);

	memset(&cp, 0, sizeof(cp));
	cp.src.fd = cp.dst.fd = -1;
	cp.size = UINT64_MAX;
	cp.src.name = src->shown;
	cp.dst.name = dst->shown;
	/* source */
	if (src->remote) {
		struct pnfs_stat st;
		cp.src.remote = 1;
		cp.src.ctx = src->ctx;
		rc = pnfs_open(src->ctx, src->path, O_RDONLY, 0, &cp.src.fh);
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(src->ctx));
			return rc;
		}
		if (pnfs_fstat(src->ctx, cp.src.fh, &st) == 0) {
			cp.size = st.size;
			src_mode = st.mode & 07777;
		}
	} else if (strcmp(src->path, "-") == 0) {
		cp.src.fd = 0;
		cp.src.stream = 1;
	} else {
		struct stat st;
		cp.src.fd = open(src->path, O_RDONLY | O_CLOEXEC);
		if (cp.src.fd < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(errno));
			return rc;
		}
		if (fstat(cp.src.fd, &st) == 0) {
			if (S_ISDIR(st.st_mode)) {
				fprintf(stderr, "pnfs: %s: is a directory (-r copies a tree)\n", src->shown);
				close(cp.src.fd);
				return -EISDIR;
			}
			src_mode = st.st_mode & 07777;
			if (S_ISREG(st.st_mode)) {
				cp.size = (uint64_t)st.st_size;
				cp.src.known_size = 1;
			} else {
				/* a FIFO, a terminal, a character device: read in turn, to its end */
				cp.src.stream = 1;
			}
		}
	}
	dst_mode = src_mode & ~(uint32_t)umask_now();
	/* destination */
	if (dst->remote) {
		struct pnfs_stat st;
		cp.dst.remote = 1;
		cp.dst.ctx = dst->ctx;
		if (pnfs_stat(dst->ctx, dst->path, &st) == 0) {
			dst_exists = 1;
			if (st.type == PNFS_REG)
				dst_mode = st.mode & 07777; /* a file replaced keeps its mode */
			if (src->remote && same_remote_file(cp.src.fh, dst)) {
				fprintf(stderr, "pnfs: %s and %s are the same file: not copied\n", src->shown, dst->shown);
				rc = -EINVAL;
				goto out;
			}
		}
		if (o.inplace) {
			rc = pnfs_open(dst->ctx, dst->path, O_WRONLY | O_CREAT | O_TRUNC, dst_mode, &cp.dst.fh);
			if (rc < 0)
				fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
		} else {
			rc = remote_tmp_open(dst, dst_mode | 0600, tmp, sizeof(tmp), &cp.dst.fh);
			have_tmp = rc == 0;
		}
		if (rc < 0)
			goto out;
	} else if (strcmp(dst->path, "-") == 0) {
		cp.dst.fd = 1;
		cp.sequential = 1;
	} else {
		struct stat st;
		int direct = o.inplace;
		char *real;
		if (!direct && lstat(dst->path, &st) == 0 && S_ISLNK(st.st_mode) && stat(dst->path, &st) == 0 &&
		    S_ISREG(st.st_mode) && (real = realpath(dst->path, NULL))) {
			/* a link to a file: the file is replaced and the link kept, as cp writes through it */
			through = *dst;
			snprintf(through.path, sizeof(through.path), "%s", real);
			free(real);
			dst = &through;
		}
		if (stat(dst->path, &st) == 0) {
			dst_exists = 1;
			if (S_ISREG(st.st_mode))
				dst_mode = st.st_mode & 07777;
			else
				direct = 1; /* a device or FIFO is written, not replaced */
		}
		if (direct) {
			cp.dst.fd = open(dst->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, dst_mode);
			if (cp.dst.fd < 0) {
				rc = -errno;
				fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(errno));
				goto out;
			}
		} else {
			cp.dst.fd = local_tmp_open(dst, tmp, sizeof(tmp));
			if (cp.dst.fd < 0) {
				rc = -EIO;
				goto out;
			}
			have_tmp = 1;
		}
		if (fstat(cp.dst.fd, &st) == 0 && !S_ISREG(st.st_mode))
			cp.sequential = 1;
	}
	(void)dst_exists;
	plan_sparse(&cp);
	rc = copy_pass(&cp, name);
	if (rc == 0 && cp.dst.remote && pnfs_fsync(cp.dst.ctx, cp.dst.fh) < 0) {
		/* Written bytes may be lost: writes through a layout whose SAN path then failed could not
		 * be committed (the file now goes through the MDS), or the server restarted and they could
		 * not be reclaimed (the open not reclaimed in its grace period). A source that can be read
		 * again is copied again, whole, once. */
		int again = cp.src.remote || cp.src.known_size;
		fprintf(stderr, "pnfs: %s: %s%s\n", dst->shown, pnfs_get_error(cp.dst.ctx),
			!again ? "" : *pnfs_fh_mds_reason(cp.dst.fh) ? "; copying again through the MDS" : "; copying again");
		rc = -EIO;
		if (again) {
			copy_reset(&cp);
			rc = copy_pass(&cp, name);
			if (rc == 0 && pnfs_fsync(cp.dst.ctx, cp.dst.fh) < 0) {
				fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(cp.dst.ctx));
				rc = -EIO;
			}
		}
	}
	if (rc == 0 && (cp.holes || cp.skip_zeros) && cp.size != UINT64_MAX) {
		/* holes at the end were not written: the size says where the file ends */
		if (!cp.dst.remote && ftruncate(cp.dst.fd, (off_t)cp.size) < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", have_tmp ? tmp : dst->shown, strerror(errno));
		} else if (cp.dst.remote && cp.wend < cp.size && pnfs_ftruncate(cp.dst.ctx, cp.dst.fh, cp.size) < 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(cp.dst.ctx));
			rc = -EIO;
		}
	}
	if (rc == 0 && have_tmp && !cp.dst.remote) {
		if (fchmod(cp.dst.fd, dst_mode) < 0 || fsync(cp.dst.fd) < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", tmp, strerror(errno));
		}
	}
	if (rc == 0 && stop_signal) {
		fprintf(stderr, "pnfs: %s: interrupted\n", dst->shown);
		rc = -EINTR;
	}
out:
	if (cp.dst.remote && cp.dst.fh) {
		if (pnfs_close(cp.dst.ctx, cp.dst.fh) < 0 && rc == 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(cp.dst.ctx));
			rc = -EIO;
		}
	} else if (cp.dst.fd > 1) {
		if (close(cp.dst.fd) < 0 && rc == 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(errno));
			rc = -EIO;
		}
	}
	free(cp.hole);
	if (cp.src.remote && cp.src.fh)
		pnfs_close(cp.src.ctx, cp.src.fh);
	else if (cp.src.fd > 0)
		close(cp.src.fd);
	if (have_tmp && rc == 0) {
		/* the bytes are durable under the temporary name: it takes the destination's place */
		if (cp.dst.remote) {
			if ((dst_mode & 0600) != 0600 && pnfs_chmod(dst->ctx, tmp, dst_mode) < 0)
				fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(dst->ctx)), rc = -EIO;
			else if (pnfs_rename(dst->ctx, tmp, dst->path) < 0)
				fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx)), rc = -EIO;
		} else if (rename(tmp, dst->path) < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(errno));
		}
	}
	if (have_tmp && rc < 0) {
		/* best effort: the destination itself was never touched */
		if (cp.dst.remote ? pnfs_unlink(dst->ctx, tmp) < 0 : unlink(tmp) < 0)
			fprintf(stderr, "pnfs: %s: cannot remove the temporary copy: %s\n", tmp,
				cp.dst.remote ? pnfs_get_error(dst->ctx) : strerror(errno));
	}
	return rc;
}

/* Copy a symlink as a symlink (one already at dst is replaced). */
static int copy_link(const struct loc *src, const struct loc *dst)
{
	char target[4096];
	int rc;

	if (src->remote) {
		rc = pnfs_readlink(src->ctx, src->path, target, sizeof(target));
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(src->ctx));
			return rc;
		}
		if ((size_t)rc >= sizeof(target)) {
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
	} else {
		ssize_t n = readlink(src->path, target, sizeof(target) - 1);
		if (n < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(errno));
			return rc;
		}
		target[n] = 0;
	}
	if (dst->remote) {
		rc = pnfs_symlink(dst->ctx, target, dst->path);
		if (rc == -EEXIST && pnfs_unlink(dst->ctx, dst->path) == 0)
			rc = pnfs_symlink(dst->ctx, target, dst->path);
		if (rc < 0)
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
		return rc;
	}
	rc = symlink(target, dst->path) < 0 ? -errno : 0;
	if (rc == -EEXIST && unlink(dst->path) == 0)
		rc = symlink(target, dst->path) < 0 ? -errno : 0;
	if (rc < 0)
		fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(-rc));
	return rc;
}

static int copy_tree(const struct loc *src, const struct loc *dst, uint32_t mode);

/* One entry of a tree: a file, a directory (recursively) or a symlink; other types are refused. */
static int copy_entry(const struct loc *src, const struct loc *dst, enum pnfs_ftype type, uint32_t mode)
{
	if (stop_signal)
		return -EINTR;
	switch (type) {
	case PNFS_REG: return copy_file(src, dst);
	case PNFS_DIR: return copy_tree(src, dst, mode);
	case PNFS_LNK: return copy_link(src, dst);
	default:
		fprintf(stderr, "pnfs: %s: not copied: a %s (a tree copy takes regular files, directories and symlinks)\n",
			src->shown, type_name(type));
		return -EINVAL;
	}
}

static enum pnfs_ftype local_type(mode_t m)
{
	if (S_ISREG(m)) return PNFS_REG;
	if (S_ISDIR(m)) return PNFS_DIR;
	if (S_ISLNK(m)) return PNFS_LNK;
	if (S_ISBLK(m)) return PNFS_BLK;
	if (S_ISCHR(m)) return PNFS_CHR;
	if (S_ISSOCK(m)) return PNFS_SOCK;
	return PNFS_FIFO;
}

/* Make dst a directory (one already there is used) holding a copy of the tree src. mode: src's
 * permission bits, given to a directory made here once it is filled. 0, or -errno after the first
 * failure (the other entries are still copied). */
static int copy_tree(const struct loc *src, const struct loc *dst, uint32_t mode)
{
	int rc, status = 0, made = 1;

	if (dst->remote) {
		struct pnfs_stat st;
		rc = pnfs_mkdir(dst->ctx, dst->path, 0700);
		if (rc == -EEXIST && pnfs_stat(dst->ctx, dst->path, &st) == 0 && st.type == PNFS_DIR)
			rc = made = 0;
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
			return rc;
		}
	} else {
		struct stat st;
		rc = mkdir(dst->path, 0700) < 0 ? -errno : 0;
		if (rc == -EEXIST && stat(dst->path, &st) == 0 && S_ISDIR(st.st_mode))
			rc = made = 0;
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(-rc));
			return rc;
		}
	}
	if (src->remote) {
		struct pnfs_dir *d;
		const struct pnfs_dirent *e;
		if (pnfs_opendir(src->ctx, src->path, &d) < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(src->ctx));
			return -EIO;
		}
		while ((e = pnfs_readdir(d)) && !stop_signal) {
			struct loc s, t;
			if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
				continue;
			if (loc_child(src, e->name, &s) < 0 || loc_child(dst, e->name, &t) < 0)
				rc = -ENAMETOOLONG;
			else
				rc = copy_entry(&s, &t, e->st.type, e->st.mode & 07777);
			if (rc < 0 && !status)
				status = rc;
		}
		pnfs_closedir(d);
	} else {
		DIR *d = opendir(src->path);
		struct dirent *e;
		if (!d) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(errno));
			return rc;
		}
		while ((e = readdir(d)) && !stop_signal) {
			struct loc s, t;
			struct stat st;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (loc_child(src, e->d_name, &s) < 0 || loc_child(dst, e->d_name, &t) < 0) {
				rc = -ENAMETOOLONG;
			} else if (lstat(s.path, &st) < 0) {
				rc = -errno;
				fprintf(stderr, "pnfs: %s: %s\n", s.shown, strerror(errno));
			} else {
				rc = copy_entry(&s, &t, local_type(st.st_mode), st.st_mode & 07777);
			}
			if (rc < 0 && !status)
				status = rc;
		}
		closedir(d);
	}
	if (stop_signal && !status)
		status = -EINTR;
	if (made) {
		/* the tree's directory gets its mode last: a read-only one still took its entries */
		uint32_t m = mode & ~(uint32_t)umask_now();
		if (dst->remote ? pnfs_chmod(dst->ctx, dst->path, m) < 0 : chmod(dst->path, m) < 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown,
				dst->remote ? pnfs_get_error(dst->ctx) : strerror(errno));
			if (!status)
				status = -EIO;
		}
	}
	return status;
}

/* What a copy's argument names: its type and mode (0 and -errno when it does not exist). */
static int loc_stat(const struct loc *l, enum pnfs_ftype *type, uint32_t *mode)
{
	if (l->remote) {
		struct pnfs_stat st;
		int rc = pnfs_stat(l->ctx, l->path, &st);
		if (rc < 0)
			return rc;
		*type = st.type;
		*mode = st.mode & 07777;
		return 0;
	} else {
		struct stat st;
		if (strcmp(l->path, "-") == 0 || lstat(l->path, &st) < 0)
			return strcmp(l->path, "-") == 0 ? -ENOENT : -errno;
		*type = local_type(st.st_mode);
		if (*type == PNFS_LNK && stat(l->path, &st) == 0 && S_ISDIR(st.st_mode))
			*type = PNFS_DIR; /* a destination named through a link to a directory */
		*mode = st.st_mode & 07777;
		return 0;
	}
}

/* Is the tree copy's destination dst (or, when it does not exist yet, its parent) the source
 * directory src or inside it, on the same server? Walked up with ".." (LOOKUPP) to the root, comparing
 * identities, so that no spelling hides it. 1 yes, 0 no. */
static int remote_inside(const struct loc *src, const struct loc *dst)
{
	struct pnfs_identity s, root, id;
	char p[4400];
	char *slash;

	if (pnfs_identity(src->ctx, src->path, &s) < 0 || pnfs_identity(dst->ctx, "/", &root) < 0)
		return 0;
	snprintf(p, sizeof(p), "%s", dst->path);
	if (pnfs_identity(dst->ctx, p, &id) < 0) {
		slash = strrchr(p, '/');
		if (!slash)
			return 0;
		slash[slash == p ? 1 : 0] = 0;
		if (pnfs_identity(dst->ctx, p, &id) < 0)
			return 0;
	}
	for (int depth = 0; depth < 256; depth++) {
		if (pnfs_identity_equal(&id, &s))
			return 1;
		if (pnfs_identity_equal(&id, &root) || strlen(p) + 4 >= sizeof(p))
			return 0;
		strcat(p, "/..");
		if (pnfs_identity(dst->ctx, p, &id) < 0)
			return 0;
	}
	return 0;
}

static int arg_loc(const char *arg, struct loc *l)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->shown, sizeof(l->shown), "%s", arg);
	if (pnfs_is_url(arg)) {
		struct rpath r;
		if (remote(arg, &r) < 0)
			return -EIO;
		l->remote = 1;
		l->ctx = r.ctx;
		snprintf(l->path, sizeof(l->path), "%s", r.u.path);
	} else {
		snprintf(l->path, sizeof(l->path), "%s", arg);
	}
	return 0;
}

static int cmd_copy(const char *src, const char *dst)
{
	struct loc s, d;
	enum pnfs_ftype stype = PNFS_REG, dtype = PNFS_REG;
	uint32_t smode = 0, dmode = 0;
	char nbuf[4400];
	const char *name;
	int dst_is_dir;

	if (!pnfs_is_url(src) && !pnfs_is_url(dst))
		die_usage("cp: one of SRC and DST must be a pnfs:// URL (use cp(1) for local copies)");
	if (arg_loc(src, &s) < 0 || arg_loc(dst, &d) < 0)
		return 1;
	if (o.recursive && loc_stat(&s, &stype, &smode) < 0)
		stype = PNFS_REG; /* said when the copy opens it */
	dst_is_dir = strcmp(d.path, "-") != 0 && loc_stat(&d, &dtype, &dmode) == 0 && dtype == PNFS_DIR;
	name = last_name(s.path, nbuf, sizeof(nbuf));
	if (o.recursive && stype == PNFS_DIR) {
		/* like cp -r: into an existing directory, else as the new directory DST */
		if (dst_is_dir && *name && strcmp(name, ".") && strcmp(name, "..")) {
			struct loc in = d;
			if (loc_child(&in, name, &d) < 0)
				return 1;
		}
		if (s.remote && d.remote && remote_inside(&s, &d)) {
			/* it would copy its own copy, without end */
			fprintf(stderr, "pnfs: cp -r: %s is inside %s: cannot copy a directory into itself\n", d.shown,
				src);
			return 1;
		}
		return copy_tree(&s, &d, smode) < 0 ? 1 : 0;
	}
	if (strcmp(d.path, "-") != 0 && (dst_is_dir || dst[strlen(dst) - 1] == '/')) {
		struct loc in = d;
		if (loc_child(&in, base_name(s.path), &d) < 0)
			return 1;
	}
	if (o.recursive && stype == PNFS_LNK)
		return copy_link(&s, &d) < 0 ? 1 : 0;
	return copy_file(&s, &d) < 0 ? 1 : 0;
}

static int cmd_cat(int argc, char **argv)
{
	int status = 0;
	int q = o.quiet;

	o.quiet = 1;
	for (int i = 0; i < argc; i++) {
		if (!pnfs_is_url(argv[i]))
			die_usage("cat: %s: expected a pnfs:// URL", argv[i]);
		if (cmd_copy(argv[i], "-") != 0)
			status = 1;
	}
	o.quiet = q;
	return status;
}

/* ---- ls, stat, df ------------------------------------------------------------------------------- */

static int cmp_dirent(const void *a, const void *b)
{
	const struct pnfs_dirent *x = *(const struct pnfs_dirent *const *)a, *y = *(const struct pnfs_dirent *const *)b;
	return strcmp(x->name, y->name);
}

/* ls -h: 1023, 1.0K, 9.9K, 10K, 1.5M, as ls(1) prints them (rounded up). */
static const char *size_ls(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)b;
	int i = -1;

	if (!o.human || b < 1024) {
		snprintf(buf, len, "%" PRIu64, b);
		return buf;
	}
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (v < 10) {
		double t = v * 10;
		uint64_t tenths = (uint64_t)t;
		if ((double)tenths < t)
			tenths++;
		if (tenths < 100) {
			snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", tenths / 10, tenths % 10, units[i]);
			return buf;
		}
	}
	{
		uint64_t whole = (uint64_t)v;
		if ((double)whole < v)
			whole++;
		if (whole >= 1024 && i < 5) {
			snprintf(buf, len, "1.0%c", units[i + 1]);
			return buf;
		}
		snprintf(buf, len, "%" PRIu64 "%c", whole, units[i]);
	}
	return buf;
}

/* An owner or group as this host names it: a numeric one the server sent is looked up in the
 * host's user and group databases; other strings ("name@domain") and unknown numbers are shown as
 * they came. */
static const char *id_name(const char *s, int group, char *buf, size_t len)
{
	char *end;
	unsigned long id;

	if (!isdigit((unsigned char)s[0]))
		return s;
	errno = 0;
	id = strtoul(s, &end, 10);
	if (*end || errno || id > UINT32_MAX)
		return s;
	if (group) {
		struct group *g = getgrgid((gid_t)id);
		if (g && g->gr_name)
			snprintf(buf, len, "%s", g->gr_name);
		else
			return s;
	} else {
		struct passwd *pw = getpwuid((uid_t)id);
		if (pw && pw->pw_name)
			snprintf(buf, len, "%s", pw->pw_name);
		else
			return s;
	}
	return buf;
}

static void ls_line(const char *name, const struct pnfs_stat *st)
{
	char m[11], t[32], sz[32], on[256], gn[256];

	if (!o.long_list) {
		printf("%s%s\n", name, st->type == PNFS_DIR ? "/" : "");
		return;
	}
	mode_str(st, m);
	time_str(&st->mtime, t, sizeof(t));
	printf("%s %3u %-8s %-8s %*s %s %s\n", m, st->nlink, id_name(st->owner, 0, on, sizeof(on)),
	       id_name(st->group, 1, gn, sizeof(gn)), o.human ? 5 : 12, size_ls(st->size, sz, sizeof(sz)), t, name);
}

static int cmd_ls(const char *arg)
{
	struct rpath r;
	struct pnfs_stat st;
	struct pnfs_dir *d;
	const struct pnfs_dirent *e, **v;
	unsigned n = 0;
	int rc;

	if (need_remote(arg, &r) < 0)
		return 1;
	rc = pnfs_stat(r.ctx, r.u.path, &st);
	if (rc < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
		return 1;
	}
	if (st.type != PNFS_DIR) {
		if (o.json) {
			printf("[{\"name\":");
			proto_json_str(stdout, base_name(r.u.path));
			printf(",");
			json_stat_fields(stdout, &st);
			printf("}]\n");
		} else {
			ls_line(base_name(r.u.path), &st);
		}
		return 0;
	}
	rc = pnfs_opendir(r.ctx, r.u.path, &d);
	if (rc < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
		return 1;
	}
	v = calloc(pnfs_dir_count(d) + 1, sizeof(*v));
	if (!v) {
		pnfs_closedir(d);
		return 1;
	}
	while ((e = pnfs_readdir(d)))
		v[n++] = e;
	qsort(v, n, sizeof(*v), cmp_dirent);
	if (o.json)
		printf("[");
	for (unsigned i = 0; i < n; i++) {
		if (o.json) {
			printf("%s{\"name\":", i ? "," : "");
			proto_json_str(stdout, v[i]->name);
			printf(",");
			json_stat_fields(stdout, &v[i]->st);
			printf("}");
		} else {
			ls_line(v[i]->name, &v[i]->st);
		}
	}
	if (o.json)
		printf("]\n");
	free(v);
	pnfs_closedir(d);
	return 0;
}

static int cmd_stat(int argc, char **argv)
{
	int status = 0;

	if (o.json && argc > 1)
		printf("[");
	for (int i = 0; i < argc; i++) {
		struct rpath r;
		struct pnfs_stat st;
		char m[11], t1[32], t2[32], t3[32];

		if (need_remote(argv[i], &r) < 0) {
			status = 1;
			continue;
		}
		if (pnfs_stat(r.ctx, r.u.path, &st) < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
			status = 1;
			continue;
		}
		if (o.json) {
			printf("%s{\"path\":", i && argc > 1 ? "," : "");
			proto_json_str(stdout, r.u.path);
			printf(",");
			json_stat_fields(stdout, &st);
			printf("}%s", argc > 1 ? "" : "\n");
			continue;
		}
		mode_str(&st, m);
		time_str(&st.atime, t1, sizeof(t1));
		time_str(&st.mtime, t2, sizeof(t2));
		time_str(&st.ctime, t3, sizeof(t3));
		printf("  File: %s\n  Size: %-12" PRIu64 " Used: %-12" PRIu64 " Type: %s\n"
		       "  Mode: (%04o/%s)  Links: %u  Owner: %s  Group: %s\nFileid: %" PRIu64 "  Change: %" PRIu64 "\n"
		       "Access: %s\nModify: %s\nChange: %s\n",
		       r.u.path, st.size, st.space_used, type_name(st.type), st.mode, m, st.nlink, st.owner, st.group,
		       st.fileid, st.change, t1, t2, t3);
	}
	if (o.json && argc > 1)
		printf("]\n");
	return status;
}

static const char *layout_name(uint32_t t)
{
	switch (t) {
	case 1: return "nfsv4.1-files";
	case 2: return "osd2-objects";
	case 3: return "block-volume";
	case 4: return "flex-files";
	case 5: return "scsi";
	}
	return "unknown";
}

static int cmd_df(const char *arg)
{
	struct rpath r;
	struct pnfs_statfs sf;
	char a[32], b[32], c[32];
	uint64_t used;

	if (need_remote(arg, &r) < 0)
		return 1;
	if (pnfs_statfs(r.ctx, r.u.path, &sf) < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
		return 1;
	}
	used = sf.total_bytes > sf.free_bytes ? sf.total_bytes - sf.free_bytes : 0;
	if (o.json) {
		printf("{\"server\":\"%s:%d\",\"total_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
		       ",\"free_bytes\":%" PRIu64 ",\"avail_bytes\":%" PRIu64 ",\"total_files\":%" PRIu64
		       ",\"free_files\":%" PRIu64 ",\"layout_blksize\":%u,\"layout_types\":[",
		       r.u.host, r.u.port, sf.total_bytes, used, sf.free_bytes, sf.avail_bytes, sf.total_files,
		       sf.free_files, sf.layout_blksize);
		for (unsigned i = 0; i < sf.nlayout_types; i++)
			printf("%s\"%s\"", i ? "," : "", layout_name(sf.layout_types[i]));
		printf("]}\n");
		return 0;
	}
	printf("%-28s %12s %12s %12s %5s  %s\n", "Filesystem", "Size", "Used", "Avail", "Use%", "Layouts");
	{
		char fs[300], lt[128] = "";
		snprintf(fs, sizeof(fs), "%s:%d%s", r.u.host, r.u.port, r.u.path);
		for (unsigned i = 0; i < sf.nlayout_types; i++)
			snprintf(lt + strlen(lt), sizeof(lt) - strlen(lt), "%s%s", i ? "," : "",
				 layout_name(sf.layout_types[i]));
		printf("%-28s %12s %12s %12s %4.0f%%  %s\n", fs, proto_fmt_bytes(sf.total_bytes, PROTO_FMT_TENTHS, a, sizeof(a)),
		       proto_fmt_bytes(used, PROTO_FMT_TENTHS, b, sizeof(b)), proto_fmt_bytes(sf.avail_bytes, PROTO_FMT_TENTHS, c, sizeof(c)),
		       sf.total_bytes ? 100.0 * (double)used / (double)sf.total_bytes : 0.0, lt[0] ? lt : "none");
	}
	return 0;
}

/* ---- rm, mkdir, mv ---------------------------------------------------------------------------- */

static int cmd_rm(int argc, char **argv)
{
	int status = 0;
	for (int i = 0; i < argc; i++) {
		struct rpath r;
		r.ctx = NULL;
		if (need_remote(argv[i], &r) < 0) {
			status = 1; /* said by remote() */
			continue;
		}
		if (pnfs_unlink(r.ctx, r.u.path) < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
			status = 1;
		}
	}
	return status;
}

static int mkdir_parents(struct pnfs_context *ctx, const char *path)
{
	char buf[4400];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == 0) {
			char c = buf[i];
			struct pnfs_stat st;
			buf[i] = 0;
			if (pnfs_stat(ctx, buf, &st) < 0) {
				int rc = pnfs_mkdir(ctx, buf, 0755);
				if (rc < 0 && rc != -EEXIST)
					return rc;
			} else if (st.type != PNFS_DIR) {
				return -ENOTDIR;
			}
			buf[i] = c;
		}
	}
	return 0;
}

static int cmd_mkdir(int argc, char **argv)
{
	int status = 0;
	for (int i = 0; i < argc; i++) {
		struct rpath r;
		int rc;
		r.ctx = NULL;
		if (need_remote(argv[i], &r) < 0) {
			status = 1;
			continue;
		}
		rc = o.parents ? mkdir_parents(r.ctx, r.u.path) : pnfs_mkdir(r.ctx, r.u.path, 0755);
		if (rc == -ENOTDIR && o.parents) {
			fprintf(stderr, "pnfs: %s: a path component is not a directory\n", argv[i]);
			status = 1;
		} else if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(r.ctx));
			status = 1;
		}
	}
	return status;
}

static int cmd_mv(const char *from, const char *to)
{
	struct rpath a, b;

	if (need_remote(from, &a) < 0 || need_remote(to, &b) < 0)
		return 1;
	if (a.ctx != b.ctx) {
		fprintf(stderr, "pnfs: mv: both paths must be on one server (use cp and rm)\n");
		return 1;
	}
	if (remote_is_dir(&b)) {
		char p[4400];
		snprintf(p, sizeof(p), "%s/%s", b.u.path, base_name(a.u.path));
		snprintf(b.u.path, sizeof(b.u.path), "%s", p);
	}
	if (pnfs_rename(a.ctx, a.u.path, b.u.path) < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(a.ctx));
		return 1;
	}
	return 0;
}

/* ---- settings: client.conf, PNFS_* variables, flags -------------------------------------------- */

static struct pnfs_conf conf;

static void die_conf(const char *what) __attribute__((noreturn));
static void die_conf(const char *what)
{
	fprintf(stderr, "pnfs: %s\n", what);
	exit(2);
}

static void flag_set(const char *key, const char *value, const char *flag)
{
	char why[700];

	if (pnfs_conf_set(&conf, key, value, PNFS_CONF_FLAG, flag, why, sizeof(why)) < 0)
		die_usage("%s: %s", flag, why);
}

/* The files and variables under the flags; o then holds what is in force. */
static void settings_load(void)
{
	char err[1200];

	if (pnfs_conf_load(&conf, err, sizeof(err)) < 0)
		die_conf(err);
	for (unsigned i = 0; i < o.nportals; i++)
		flag_set("portal", o.portals[i], "--portal");
	for (unsigned i = 0; i < o.ndevices; i++)
		flag_set("device", o.devices[i], "--device");
	if (o.initiator)
		flag_set("initiator", o.initiator, "--initiator");
	if (o.io_timeout)
		flag_set("io-timeout", o.io_timeout, "--io-timeout");
	o.nportals = conf.nportal;
	for (unsigned i = 0; i < conf.nportal; i++)
		o.portals[i] = conf.portal[i].value;
	o.ndevices = conf.ndevice;
	for (unsigned i = 0; i < conf.ndevice; i++)
		o.devices[i] = conf.device[i].value;
	o.initiator = conf.initiator_set ? conf.initiator.value : NULL;
	o.io_timeout_ms = conf.io_timeout_ms;
}

/* Every URL argument well formed (a usage error otherwise, before anything is done), and
 * pnfs:///path on the default server. */
static void urls_check(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		struct pnfs_url u;
		if (!pnfs_is_url(argv[i]))
			continue;
		if (!strncmp(argv[i], "pnfs:///", 8)) {
			size_t n;
			char *full;
			if (!conf.mds.value[0])
				die_usage("%s: no server in the URL and no default one (mds in client.conf, PNFS_MDS)",
					  argv[i]);
			n = strlen(conf.mds.value) + strlen(argv[i]) + 1;
			full = malloc(n);
			if (!full)
				die_conf("out of memory");
			snprintf(full, n, "pnfs://%s%s", conf.mds.value, argv[i] + 7);
			argv[i] = full; /* lives until exit */
		}
		if (pnfs_parse_url(argv[i], &u) < 0)
			die_usage("%s: not a valid pnfs://host[:port]/path URL", argv[i]);
	}
}

static void conf_line(const char *key, const struct pnfs_conf_item *it, const char *note)
{
	printf("%-10s = %-40s # %s%s\n", key, it->value, it->from, note ? note : "");
}

/* What is in force, as client.conf lines with where each came from. */
static int cmd_config(void)
{
	static const struct pnfs_conf_item none = { "", "default: none" };

	for (int i = 0; i < 2; i++)
		if (conf.files[i][0])
			printf("# %s file %s: %s\n", i ? "user" : "system", conf.files[i],
			       conf.file_read[i] > 0 ? "read" : conf.file_read[i] < 0 ? strerror(-conf.file_read[i]) : "absent");
	for (unsigned i = 0; i < conf.nportal; i++)
		conf_line("portal", &conf.portal[i], NULL);
	if (!conf.nportal)
		conf_line("portal", &none, conf.ndevice ? NULL : " (nor device: local block devices are searched)");
	for (unsigned i = 0; i < conf.ndevice; i++)
		conf_line("device", &conf.device[i], NULL);
	if (!conf.ndevice)
		conf_line("device", &none, NULL);
	conf_line("initiator", &conf.initiator, "; the name to admit in the targets' ACLs");
	conf_line("io-timeout", &conf.io_timeout, NULL);
	conf_line("mds", &conf.mds, conf.mds.value[0] ? "; pnfs:///path is on this server" : NULL);
	return 0;
}

/* ---- main ------------------------------------------------------------------------------------- */

enum { OPT_MDS_IO = 256, OPT_JSON, OPT_PORTAL, OPT_DEVICE, OPT_INITIATOR, OPT_IO_TIMEOUT, OPT_PROGRESS, OPT_STATS,
       OPT_INPLACE, OPT_HUMAN, OPT_SPARSE, OPT_HELP };

/* One option (before or after the command): -1 taken, else the exit status (help, or a bad one). */
static int take_opt(int c)
{
	char *end;
	double secs;

	switch (c) {
	case OPT_MDS_IO: o.mds_io = 1; break;
	case OPT_JSON: o.json = 1; break;
	case OPT_PORTAL:
		if (o.nportals == 16)
			die_usage("too many --portal options");
		o.portals[o.nportals++] = optarg;
		break;
	case OPT_DEVICE:
		if (o.ndevices == 64)
			die_usage("too many --device options");
		o.devices[o.ndevices++] = optarg;
		break;
	case OPT_INITIATOR: o.initiator = optarg; break;
	case OPT_IO_TIMEOUT:
		errno = 0;
		secs = strtod(optarg, &end);
		if (errno || end == optarg || *end || !(secs >= 0.1 && secs <= 3600))
			die_usage("--io-timeout takes seconds, 0.1 to 3600, not '%s'", optarg);
		o.io_timeout_ms = (unsigned)(secs * 1000 + 0.5);
		o.io_timeout = optarg;
		break;
	case 'q': o.quiet = 1; break;
	case OPT_PROGRESS: o.progress = 1; break;
	case OPT_STATS: o.stats = 1; break;
	case 'v': o.verbose++; break;
	case 'l': o.long_list = 1; break;
	case 'p': o.parents = 1; break;
	case 'r': case 'R': o.recursive = 1; break;
	case OPT_INPLACE: o.inplace = 1; break;
	case OPT_HUMAN: o.human = 1; break;
	case OPT_SPARSE:
		if (strcmp(optarg, "auto") == 0)
			o.sparse = SPARSE_AUTO;
		else if (strcmp(optarg, "always") == 0)
			o.sparse = SPARSE_ALWAYS;
		else if (strcmp(optarg, "never") == 0)
			o.sparse = SPARSE_NEVER;
		else
			die_usage("--sparse takes always, auto or never, not '%s'", optarg);
		break;
	case 'h': case OPT_HELP: usage(stdout); return 0;
	default: fprintf(stderr, "Try 'pnfs --help'.\n"); return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mds-io", no_argument, NULL, OPT_MDS_IO },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "portal", required_argument, NULL, OPT_PORTAL },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "initiator", required_argument, NULL, OPT_INITIATOR },
		{ "io-timeout", required_argument, NULL, OPT_IO_TIMEOUT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "recursive", no_argument, NULL, 'r' },
		{ "inplace", no_argument, NULL, OPT_INPLACE },
		{ "human-readable", no_argument, NULL, OPT_HUMAN },
		{ "sparse", required_argument, NULL, OPT_SPARSE },
		{ "help", no_argument, NULL, OPT_HELP }, /* not 'h': that is ls -h */
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c, rc, status;

	proto_version_exit(argc, argv, "pnfs");
	/* Options may come before or after the command ("pnfs ls -l URL"). */
	while ((c = getopt_long(argc, argv, "+qvhlprR", lo, NULL)) != -1)
		if ((rc = take_opt(c)) >= 0)
			return rc;
	if (optind >= argc)
		die_usage("no command given");
	cmd = argv[optind++];
	if (strcmp(cmd, "mount") == 0 || strcmp(cmd, "umount") == 0) {
		/* FUSE's options (-o, -f) follow these commands: they parse their own arguments. */
		struct pnfs_opts po;
		proto_log_set_level(o.verbose >= 2 ? PROTO_LOG_DEBUG : o.verbose ? PROTO_LOG_INFO : PROTO_LOG_WARN);
		if (strcmp(cmd, "umount") == 0)
			return pnfs_cli_umount(argc - optind, argv + optind);
		settings_load();
		pnfs_opts_init(&po);
		po.mds_io = o.mds_io;
		po.portals = o.portals;
		po.nportals = o.nportals;
		po.devices = o.devices;
		po.ndevices = o.ndevices;
		po.initiator_name = o.initiator;
		if (o.io_timeout_ms)
			po.io_timeout_ms = o.io_timeout_ms;
		return pnfs_cli_mount(argc - optind, argv + optind, &po);
	}
	{
		/* Options after the command. */
		int sub_argc = argc - optind + 1;
		char **sub_argv = argv + optind - 1;
		optind = 0; /* GNU getopt: start a fresh scan (the first one used "+") */
		while ((c = getopt_long(sub_argc, sub_argv, "qvhlprR", lo, NULL)) != -1) {
			if (c == 'h' && strcmp(cmd, "ls") == 0) {
				o.human = 1; /* ls -h, as ls(1) has it (--help still helps) */
				continue;
			}
			if ((rc = take_opt(c)) >= 0)
				return rc;
		}
		argc = sub_argc - optind;
		argv = sub_argv + optind;
	}
	proto_log_set_level(o.verbose >= 2 ? PROTO_LOG_DEBUG : o.verbose ? PROTO_LOG_INFO : PROTO_LOG_WARN);
	if (strcmp(cmd, "help") != 0) {
		settings_load();
		urls_check(argc, argv);
	}

	if (strcmp(cmd, "cp") == 0 || strcmp(cmd, "put") == 0 || strcmp(cmd, "get") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_signal; /* no SA_RESTART: a blocked read of a FIFO ends too */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	if (strcmp(cmd, "cp") == 0) {
		if (argc != 2)
			die_usage("cp: needs SRC and DST");
		status = cmd_copy(argv[0], argv[1]);
	} else if (strcmp(cmd, "put") == 0) {
		if (argc != 2 || pnfs_is_url(argv[0]) || !pnfs_is_url(argv[1]))
			die_usage("put: needs LOCAL and a pnfs:// URL");
		status = cmd_copy(argv[0], argv[1]);
	} else if (strcmp(cmd, "get") == 0) {
		if (argc < 1 || argc > 2 || !pnfs_is_url(argv[0]) || (argc == 2 && pnfs_is_url(argv[1])))
			die_usage("get: needs a pnfs:// URL and LOCAL");
		status = cmd_copy(argv[0], argc == 2 ? argv[1] : ".");
	} else if (strcmp(cmd, "cat") == 0) {
		if (argc < 1)
			die_usage("cat: needs a URL");
		status = cmd_cat(argc, argv);
	} else if (strcmp(cmd, "ls") == 0) {
		if (argc != 1)
			die_usage("ls: needs one URL");
		status = cmd_ls(argv[0]);
	} else if (strcmp(cmd, "stat") == 0) {
		if (argc < 1)
			die_usage("stat: needs a URL");
		status = cmd_stat(argc, argv);
	} else if (strcmp(cmd, "rm") == 0) {
		if (argc < 1)
			die_usage("rm: needs a URL");
		status = cmd_rm(argc, argv);
	} else if (strcmp(cmd, "mkdir") == 0) {
		if (argc < 1)
			die_usage("mkdir: needs a URL");
		status = cmd_mkdir(argc, argv);
	} else if (strcmp(cmd, "mv") == 0) {
		if (argc != 2)
			die_usage("mv: needs two URLs");
		status = cmd_mv(argv[0], argv[1]);
	} else if (strcmp(cmd, "df") == 0) {
		if (argc != 1)
			die_usage("df: needs one URL");
		status = cmd_df(argv[0]);
	} else if (strcmp(cmd, "config") == 0) {
		if (argc != 0)
			die_usage("config: takes no arguments");
		status = cmd_config();
	} else if (strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	} else {
		die_usage("unknown command '%s'", cmd);
	}
	fflush(stdout);
	if (o.stats)
		print_stats();
	shutdown_all();
	if (stop_signal) {
		/* the copy's temporary is gone: end the way the signal would have */
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
	}
	return status;
}
