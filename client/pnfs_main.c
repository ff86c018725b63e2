/* pnfs: the command-line client (cp, cat, put, get, ls, stat, rm, mkdir, mv, df) on libpnfs, in the
 * manner of libnfs's nfs-cp/nfs-ls. Remote files are pnfs://host[:port]/path URLs; copies keep several
 * chunks in flight on the context's loop so the data path (direct LUN I/O or the MDS) stays busy.
 * Exit status: 0 ok, 1 failure, 2 usage. */
#include "client/mount.h"
#include "client/pnfs.h"
#include "proto/log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
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
	int mds_io, json, quiet, progress, verbose, stats, long_list, parents;
	const char *portals[16];
	unsigned nportals;
	const char *devices[64];
	unsigned ndevices;
	const char *initiator;
	const char *io_timeout; /* --io-timeout's seconds, checked */
	unsigned io_timeout_ms; /* 0: the library's default */
};

static struct opts o;

/* One context per server. */
struct server {
	char host[256];
	int port;
	struct pnfs_context *ctx;
};
static struct server servers[MAX_CTX];
static unsigned nservers;

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
		"  cp SRC DST          copy a file: local to remote, remote to local, remote to remote\n"
		"  put LOCAL URL       copy a local file to the server (DST may be a directory)\n"
		"  get URL LOCAL       copy a file from the server (\"-\": standard output)\n"
		"  cat URL...          write files to standard output\n"
		"  ls [-l] URL         list a directory (or show one file)\n"
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
		"  --portal URL         iSCSI portal iscsi://host[:port] to find layout volumes on (repeatable)\n"
		"  --device SPEC        iSCSI LUN URL, block device or file that may hold a volume (repeatable)\n"
		"  --initiator IQN      iSCSI initiator name for the data path\n"
		"  --io-timeout SECONDS give up on a SAN command (and its LUN's path) after this long, 30 by\n"
		"                       default; the file's I/O then goes through the MDS. Also how long\n"
		"                       to keep trying to reach the MDS (a refused or lost connection is\n"
		"                       tried again, 100 ms doubling to 2 s apart) before failing\n"
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
				",\"mds_data_read\":%" PRIu64 ",\"mds_data_written\":%" PRIu64 ",\"layoutgets\":%" PRIu64
				",\"layoutgets_ahead\":%" PRIu64 ",\"layout_waits\":%" PRIu64
				",\"layoutcommits\":%" PRIu64 ",\"layoutreturns\":%" PRIu64 ",\"recalls\":%" PRIu64
				",\"fallbacks\":%" PRIu64 "}\n",
				servers[i].host, servers[i].port, st.mds_bytes_sent, st.mds_bytes_received,
				st.direct_bytes_read, st.direct_bytes_written, st.mds_data_read, st.mds_data_written,
				st.layoutgets, st.layoutgets_ahead, st.layout_waits, st.layoutcommits, st.layoutreturns,
				st.recalls, st.fallbacks);
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

static const char *human(uint64_t b, char *buf, size_t len)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
	return buf;
}

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

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_stat_fields(FILE *f, const struct pnfs_stat *st)
{
	fprintf(f, "\"type\":\"%s\",\"size\":%" PRIu64 ",\"mode\":\"%04o\",\"nlink\":%u,\"owner\":", type_name(st->type),
		st->size, st->mode, st->nlink);
	json_str(f, st->owner);
	fprintf(f, ",\"group\":");
	json_str(f, st->group);
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
	human(p->done, a, sizeof(a));
	human(p->total, b, sizeof(b));
	human((uint64_t)rate, r, sizeof(r));
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

static void remote_write_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct chunk *c = priv;
	(void)data;
	(void)ctx;
	chunk_written(c->cp, c, status);
}

/* Write all of a chunk to a local file (at its offset, or in turn on a pipe or terminal): bytes
 * written, or -errno. */
static int write_local(int fd, const struct chunk *c, int sequential)
{
	size_t done = 0;

	while (done < c->len) {
		ssize_t n = sequential ? write(fd, c->buf + done, c->len - done)
				       : pwrite(fd, c->buf + done, c->len - done, (off_t)(c->off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
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

/* Read a chunk's bytes from a local source (at its offset, or in turn from standard input): bytes
 * read, fewer at the end of the file, or -errno. */
static int read_local(int fd, struct chunk *c)
{
	size_t got = 0;

	chunk_populate(c);
	while (got < c->len) {
		ssize_t n = fd == 0 ? read(0, c->buf + got, c->len - got)
				    : pread(fd, c->buf + got, c->len - got, (off_t)(c->off + got));
		if (n < 0) {
			if (errno == EINTR)
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
		c->io_status = w->reading ? read_local(w->fd, c) : write_local(w->fd, c, 0);
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

static void write_chunk(struct copy *cp, struct chunk *c)
{
	if (cp->io.running && !cp->io.reading) {
		localio_queue(&cp->io, c);
		return;
	}
	if (cp->dst.remote) {
		int rc = pnfs_pwrite_async(cp->dst.ctx, cp->dst.fh, c->buf, c->len, c->off, remote_write_cb, c);
		if (rc < 0) {
			copy_fail(cp, rc, "%s: %s", cp->dst.name, pnfs_get_error(cp->dst.ctx));
			chunk_idle(cp, c);
		}
		return;
	}
	local_written(cp, c, write_local(cp->dst.fd, c, cp->sequential));
}

static void chunk_written(struct copy *cp, struct chunk *c, int status)
{
	if (status < 0)
		copy_fail(cp, status, "%s: %s", cp->dst.name, cp->dst.remote ? pnfs_get_error(cp->dst.ctx) : strerror(-status));
	else {
		cp->written += c->len;
		cp->prog.done = cp->written;
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

/* Start reading into a free chunk; local sources are read at once. */
static int start_chunk(struct copy *cp, struct chunk *c)
{
	size_t len = CHUNK_BYTES;

	if (cp->eof || cp->err || (cp->size != UINT64_MAX && cp->next >= cp->size))
		return 0;
	if (cp->size != UINT64_MAX && cp->size - cp->next < len)
		len = (size_t)(cp->size - cp->next);
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
		source_read(cp, c, read_local(cp->src.fd, c));
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
		if (got == 0)
			cp->eof = 1;
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

static int cmd_copy(const char *src, const char *dst)
{
	struct copy cp;
	struct rpath rs, rd;
	char dstpath[4400], localdst[4400];
	int rc = 0, src_remote = pnfs_is_url(src), dst_remote = pnfs_is_url(dst);

	memset(&cp, 0, sizeof(cp));
	cp.src.fd = cp.dst.fd = -1;
	cp.size = UINT64_MAX;
	if (!src_remote && !dst_remote)
		die_usage("cp: one of SRC and DST must be a pnfs:// URL (use cp(1) for local copies)");
	/* source */
	if (src_remote) {
		struct pnfs_stat st;
		if (remote(src, &rs) < 0)
			return 1;
		cp.src.remote = 1;
		cp.src.ctx = rs.ctx;
		cp.src.name = src;
		rc = pnfs_open(rs.ctx, rs.u.path, O_RDONLY, 0, &cp.src.fh);
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(rs.ctx));
			return 1;
		}
		if (pnfs_fstat(rs.ctx, cp.src.fh, &st) == 0)
			cp.size = st.size;
	} else {
		struct stat st;
		cp.src.name = src;
		if (strcmp(src, "-") == 0) {
			cp.src.fd = 0;
		} else {
			cp.src.fd = open(src, O_RDONLY | O_CLOEXEC);
			if (cp.src.fd < 0) {
				fprintf(stderr, "pnfs: %s: %s\n", src, strerror(errno));
				return 1;
			}
			if (fstat(cp.src.fd, &st) == 0) {
				if (S_ISDIR(st.st_mode)) {
					fprintf(stderr, "pnfs: %s: is a directory\n", src);
					close(cp.src.fd);
					return 1;
				}
				if (S_ISREG(st.st_mode)) {
					cp.size = (uint64_t)st.st_size;
					cp.src.known_size = 1;
				}
			}
		}
	}
	/* destination */
	if (dst_remote) {
		if (remote(dst, &rd) < 0) {
			rc = -EIO;
			goto out;
		}
		snprintf(dstpath, sizeof(dstpath), "%s", rd.u.path);
		if (dst[strlen(dst) - 1] == '/' || remote_is_dir(&rd))
			snprintf(dstpath, sizeof(dstpath), "%s%s%s", rd.u.path,
				 rd.u.path[strlen(rd.u.path) - 1] == '/' ? "" : "/",
				 base_name(src_remote ? rs.u.path : src));
		cp.dst.remote = 1;
		cp.dst.ctx = rd.ctx;
		cp.dst.name = dst;
		rc = pnfs_open(rd.ctx, dstpath, O_WRONLY | O_CREAT | O_TRUNC, 0644, &cp.dst.fh);
		if (rc < 0) {
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(rd.ctx));
			goto out;
		}
	} else {
		struct stat st;
		cp.dst.name = dst;
		if (strcmp(dst, "-") == 0) {
			cp.dst.fd = 1;
			cp.sequential = 1;
		} else {
			snprintf(localdst, sizeof(localdst), "%s", dst);
			if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
				snprintf(localdst, sizeof(localdst), "%s/%s", dst, base_name(rs.u.path));
			cp.dst.fd = open(localdst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (cp.dst.fd < 0) {
				fprintf(stderr, "pnfs: %s: %s\n", localdst, strerror(errno));
				rc = -errno;
				goto out;
			}
			if (fstat(cp.dst.fd, &st) == 0 && !S_ISREG(st.st_mode))
				cp.sequential = 1;
		}
	}
	rc = copy_pass(&cp, base_name(src_remote ? rs.u.path : src));
	if (rc == 0 && cp.dst.remote && pnfs_fsync(cp.dst.ctx, cp.dst.fh) < 0) {
		/* Written bytes may be lost: writes through a layout whose SAN path then failed could not
		 * be committed (the file now goes through the MDS), or the server restarted and they could
		 * not be reclaimed (the open not reclaimed in its grace period). A source that can be read again is copied again,
		 * whole, once. */
		int again = cp.src.remote || cp.src.known_size;
		fprintf(stderr, "pnfs: %s: %s%s\n", dst, pnfs_get_error(cp.dst.ctx),
			!again ? "" : *pnfs_fh_mds_reason(cp.dst.fh) ? "; copying again through the MDS" : "; copying again");
		rc = -EIO;
		if (again) {
			cp.next = cp.written = 0;
			cp.eof = cp.err = 0;
			cp.busy = 0;
			cp.errmsg[0] = 0;
			rc = copy_pass(&cp, base_name(src_remote ? rs.u.path : src));
			if (rc == 0 && pnfs_fsync(cp.dst.ctx, cp.dst.fh) < 0) {
				fprintf(stderr, "pnfs: %s: %s\n", dst, pnfs_get_error(cp.dst.ctx));
				rc = -EIO;
			}
		}
	}
out:
	if (cp.dst.remote && cp.dst.fh) {
		if (pnfs_close(cp.dst.ctx, cp.dst.fh) < 0 && rc == 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst, pnfs_get_error(cp.dst.ctx));
			rc = -EIO;
		}
	} else if (cp.dst.fd > 1) {
		if (close(cp.dst.fd) < 0 && rc == 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst, strerror(errno));
			rc = -EIO;
		}
	}
	if (cp.src.remote && cp.src.fh)
		pnfs_close(cp.src.ctx, cp.src.fh);
	else if (cp.src.fd > 0)
		close(cp.src.fd);
	return rc < 0 ? 1 : 0;
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

static void ls_line(const char *name, const struct pnfs_stat *st)
{
	char m[11], t[32];

	if (!o.long_list) {
		printf("%s%s\n", name, st->type == PNFS_DIR ? "/" : "");
		return;
	}
	mode_str(st, m);
	time_str(&st->mtime, t, sizeof(t));
	printf("%s %3u %-8s %-8s %12" PRIu64 " %s %s\n", m, st->nlink, st->owner, st->group, st->size, t, name);
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
			json_str(stdout, base_name(r.u.path));
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
			json_str(stdout, v[i]->name);
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
			json_str(stdout, r.u.path);
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
		printf("%-28s %12s %12s %12s %4.0f%%  %s\n", fs, human(sf.total_bytes, a, sizeof(a)),
		       human(used, b, sizeof(b)), human(sf.avail_bytes, c, sizeof(c)),
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

enum { OPT_MDS_IO = 256, OPT_JSON, OPT_PORTAL, OPT_DEVICE, OPT_INITIATOR, OPT_IO_TIMEOUT, OPT_PROGRESS, OPT_STATS };

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
	case 'h': usage(stdout); return 0;
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c, rc, status;

	proto_version_exit(argc, argv, "pnfs");
	/* Options may come before or after the command ("pnfs ls -l URL"). */
	while ((c = getopt_long(argc, argv, "+qvhlp", lo, NULL)) != -1)
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
		while ((c = getopt_long(sub_argc, sub_argv, "qvhlp", lo, NULL)) != -1)
			if ((rc = take_opt(c)) >= 0)
				return rc;
		argc = sub_argc - optind;
		argv = sub_argv + optind;
	}
	proto_log_set_level(o.verbose >= 2 ? PROTO_LOG_DEBUG : o.verbose ? PROTO_LOG_INFO : PROTO_LOG_WARN);
	if (strcmp(cmd, "help") != 0) {
		settings_load();
		urls_check(argc, argv);
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
	return status;
}
