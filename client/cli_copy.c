/* The pnfs command's copy engine: several chunks in flight on the contexts' loops so the data path
 * (direct LUN I/O or the MDS) stays busy, local file I/O on a thread of its own (O_DIRECT where the
 * file system does it), holes kept (--sparse), a progress line. One file's steps around it (both
 * ends, the temporary, durability) are client/cli_copy_file.c. */
#include "client/cli_copy.h"
#include "proto/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- progress --------------------------------------------------------------------------------- */

static double secs_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void progress_init(struct progress *p, const char *name, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = !cli.quiet && (cli.progress || isatty(2));
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

/* Write len bytes at off, all of them (in turn on a pipe or terminal): 0 or -errno. */
uint64_t cli_local_direct_bytes, cli_local_cached_bytes, cli_local_direct_read_bytes;

static int write_all(int fd, const char *buf, size_t len, uint64_t off, int sequential)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = sequential ? write(fd, buf + done, len - done) : pwrite(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR && !cli_stop_signal)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

/* O_DIRECT on the destination's descriptor, on or off: 0, or -1 when the file system refuses it. */
static int set_direct(struct localio *w, int on)
{
	int fl;

	if (w->direct_on == on)
		return 0;
	fl = fcntl(w->fd, F_GETFL);
	if (fl < 0 || fcntl(w->fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) < 0)
		return -1;
	w->direct_on = on;
	return 0;
}

/* Write a run of a chunk ([a, b) of it) to the destination through the I/O thread: its aligned part
 * with O_DIRECT, from the chunk straight to the device with no copy into the page cache, and what is
 * left of it through the page cache. The file's last block is written whole, padded with zeros (the
 * chunk has room: chunks are multiples of any alignment), and the file cut to its size at the end.
 * A file system that refuses a direct write (EINVAL) gets the rest of the copy through the page
 * cache. 0 or -errno. */
static int write_run(struct localio *w, struct chunk *c, size_t a, size_t b)
{
	uint64_t off = c->off + a;
	size_t len = b - a, dlen = 0;
	int rc;

	if (w->align && off % w->align == 0 && (uintptr_t)(c->buf + a) % w->align == 0) {
		dlen = len & ~(w->align - 1);
		if (dlen < len && c->last && b == c->len) {
			dlen += w->align;
			memset(c->buf + b, 0, dlen - len);
		}
	}
	if (dlen && set_direct(w, 1) == 0) {
		rc = write_all(w->fd, c->buf + a, dlen, off, 0);
		if (rc == -EINVAL) {
			/* refused after all: from here on through the page cache */
			w->align = 0;
			(void)set_direct(w, 0);
			dlen = 0;
		} else if (rc < 0) {
			return rc;
		} else {
			w->direct_bytes += dlen < len ? dlen : len;
			if (dlen >= len) {
				w->padded |= dlen > len;
				return 0;
			}
		}
	} else {
		dlen = 0;
	}
	if (set_direct(w, 0) < 0)
		return -EIO;
	w->buffered_bytes += len - dlen;
	return write_all(w->fd, c->buf + a + dlen, len - dlen, off + dlen, 0);
}

/* Write all of a chunk to a local file (at its offset, or in turn on a pipe or terminal; with skip,
 * not its all-zero blocks, into a new file; with w, through the I/O thread, O_DIRECT where w allows):
 * bytes of the chunk, or -errno. */
static int write_local(int fd, struct chunk *c, int sequential, int skip, struct localio *w)
{
	size_t a, b;

	for (size_t pos = 0; next_run(c, skip && !sequential, pos, &a, &b); pos = b) {
		int rc = w ? write_run(w, c, a, b) : write_all(fd, c->buf + a, b - a, c->off + a, sequential);
		if (rc < 0)
			return rc;
		if (!w && !sequential)
			cli_local_cached_bytes += b - a;
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

/* cachestat(2) (Linux 6.5): how much of a file's range the page cache holds, found without reading
 * anything (a RWF_NOWAIT read that finds pages missing starts read-ahead of them). Its number is the
 * same on every architecture with the common system call table. */
#if defined(__linux__) && !defined(__NR_cachestat) && !defined(__alpha__)
#define __NR_cachestat 451
#endif
struct copy_cachestat_range {
	uint64_t off, len;
};
struct copy_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* A chunk's bytes from got on, read with O_DIRECT into the chunk when the page cache holds none of
 * them (the length rounded up to the alignment: the chunk has room; the file's end cuts it): bytes
 * read, -EAGAIN to read them through the page cache instead (some are cached, or they are not
 * aligned), or -errno. A kernel without cachestat, or a file system that refuses the read (EINVAL),
 * gets no direct reads again. */
static ssize_t read_direct(struct localio *w, struct chunk *c, size_t got)
{
	uint64_t off = c->off + got;
	size_t want = c->len - got;
	ssize_t n;

	if (off % w->align || (uintptr_t)(c->buf + got) % w->align)
		return -EAGAIN;
#ifdef __NR_cachestat
	{
		struct copy_cachestat_range r = { off, want };
		struct copy_cachestat cs;
		if (syscall(__NR_cachestat, w->fd, &r, &cs, 0) < 0) {
			w->dio_fd = -1;
			return -EAGAIN;
		}
		if (cs.nr_cache)
			return -EAGAIN;
	}
#else
	w->dio_fd = -1;
	return -EAGAIN;
#endif
	want = (want + w->align - 1) & ~(w->align - 1);
	n = pread(w->dio_fd, c->buf + got, want, (off_t)off);
	if (n < 0) {
		if (errno == EINVAL) {
			w->dio_fd = -1;
			return -EAGAIN;
		}
		return -errno;
	}
	/* a file that grew meanwhile: the chunk takes only its own bytes */
	if ((size_t)n > c->len - got)
		n = (ssize_t)(c->len - got);
	w->direct_bytes += (uint64_t)n;
	return n;
}

/* Read a chunk's bytes from a local source (at its offset, or in turn from a stream; with w, on the
 * I/O thread: what the page cache lacks with O_DIRECT where w has it): bytes read, fewer at the end
 * of the file, or -errno. */
static int read_local(int fd, struct chunk *c, int stream, struct localio *w)
{
	size_t got = 0;

	chunk_populate(c);
	while (got < c->len) {
		ssize_t n = w && w->dio_fd >= 0 ? read_direct(w, c, got) : -EAGAIN;
		if (n == -EAGAIN || n == -EINTR)
			n = stream ? read(fd, c->buf + got, c->len - got)
				   : pread(fd, c->buf + got, c->len - got, (off_t)(c->off + got));
		else if (n < 0)
			errno = (int)-n, n = -1;
		if (n < 0) {
			if (errno == EINTR && !cli_stop_signal)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (int)got;
}

/* c joins the end of a queue (under the thread's lock). */
static void chunk_append(struct chunk **head, struct chunk **tail, struct chunk *c)
{
	c->io_next = NULL;
	if (*tail)
		(*tail)->io_next = c;
	else
		*head = c;
	*tail = c;
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
		c->io_status = w->reading ? read_local(w->fd, c, 0, w) : write_local(w->fd, c, 0, w->skip_zeros, w);
		pthread_mutex_lock(&w->lock);
		chunk_append(&w->done, &w->done_tail, c);
		if (w->done == c) {
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
	w->dio_fd = -1;
	if (!cp->src.remote && cp->dst.remote && cp->src.known_size && cp->src.fd > 0) {
		w->reading = 1;
		w->fd = cp->src.fd;
		w->dio_fd = cp->src.dio_fd;
		w->align = cp->src.dio_align;
	} else if (cp->src.remote && !cp->dst.remote && !cp->sequential && cp->dst.fd >= 0) {
		w->reading = 0;
		w->fd = cp->dst.fd;
		w->skip_zeros = cp->skip_zeros;
		w->align = cp->dst.dio_align;
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
	pthread_mutex_lock(&w->lock);
	chunk_append(&w->todo, &w->todo_tail, c);
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
	struct chunk *c;

	if (!w->running || w->queued == 0)
		return;
	pthread_mutex_lock(&w->lock);
	/* in the order the thread did them, so that the chunks a copy in has read go out to the LUNs
	 * in file order */
	c = w->done;
	w->done = w->done_tail = NULL;
	pthread_mutex_unlock(&w->lock);
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
	c->last = cp->size != UINT64_MAX && c->off + c->len >= cp->size;
	if (cp->io.running && !cp->io.reading) {
		localio_queue(&cp->io, c);
		return;
	}
	if (cp->dst.remote) {
		c->wpos = 0;
		remote_write_next(cp, c);
		return;
	}
	local_written(cp, c, write_local(cp->dst.fd, c, cp->sequential, cp->skip_zeros, NULL));
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
		source_read(cp, c, read_local(cp->src.fd, c, cp->src.stream, NULL));
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

/* A destination written with O_DIRECT, the whole file to be written (no holes to keep): its blocks
 * allocated first, in one extent where the file system can. Direct writes then land in allocated
 * blocks instead of extending the file one write at a time, and a file system too full for the
 * copy fails it at the start. */
static void preallocate(struct copy *cp)
{
	if (!cp->io.running || cp->io.reading || !cp->io.align || cp->size == UINT64_MAX || cp->size == 0 ||
	    cp->nhole || cp->skip_zeros)
		return;
	if (fallocate(cp->dst.fd, 0, 0, (off_t)cp->size) == 0)
		cp->prealloc = 1; /* the size is set again at the end: the source may have shrunk meanwhile */
	else if (errno == ENOSPC)
		copy_fail(cp, -ENOSPC, "%s: %s", cp->dst.name, strerror(ENOSPC));
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
	preallocate(cp);
	for (;;) {
		if (cli_stop_signal)
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
	if (cp->io.reading) {
		cli_local_direct_read_bytes += cp->io.direct_bytes;
	} else {
		cli_local_direct_bytes += cp->io.direct_bytes;
		cli_local_cached_bytes += cp->io.buffered_bytes;
	}
	chunk_mem_free(mem);
	return cp->err;
}

/* One run of the copy with its progress line; a failure is said on stderr. 0 or -errno. */
int cli_copy_pass(struct copy *cp, const char *name)
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
void cli_copy_plan_sparse(struct copy *cp)
{
	cp->holes = cp->skip_zeros = 0;
	if (cli.sparse == SPARSE_NEVER || cp->sequential)
		return;
	cp->skip_zeros = cli.sparse == SPARSE_ALWAYS;
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
void cli_copy_reset(struct copy *cp)
{
	cp->next = cp->written = cp->skipped = cp->wend = 0;
	cp->dstart = cp->dend = 0;
	cp->hole_i = 0;
	cp->eof = cp->err = 0;
	cp->busy = 0;
	cp->errmsg[0] = 0;
}
