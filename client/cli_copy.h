/* The pnfs command's copy engine, shared by its two files: client/cli_copy.c (the engine: chunks in
 * flight on the contexts' loops, local file I/O on a thread of its own, holes, progress) and
 * client/cli_copy_file.c (one file's steps around it: opening both ends, the temporary beside the
 * destination, durability, the rename). Private to the CLI. */
#ifndef CLIENT_CLI_COPY_H
#define CLIENT_CLI_COPY_H

#include "client/cli.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CHUNK_BYTES (8u << 20)
/* Chunks in flight. Local reads and writes block the loop while they copy a chunk; eight keep the
 * LUNs busy meanwhile (four left them idle for part of every local write on a copy out). */
#define DEPTH 8
/* All-zero blocks of this size (at multiples of it in the file) are not written. */
#define ZERO_BLOCK_BYTES 4096u

struct progress {
	int on;
	uint64_t total, done;
	struct timespec start, last;
	const char *name;
};

struct end {
	int remote;
	struct pnfs_context *ctx;
	struct pnfs_fh *fh;
	int fd;
	const char *name;
	int known_size;      /* a local regular source: reading less than its size means it shrank */
	int stream;          /* a local source read in turn (standard input, a FIFO, a terminal) */
	size_t dio_align;    /* a local destination its file system writes with O_DIRECT: the alignment
	                      * of offsets, lengths and buffers that needs (0: through the page cache) */
	int dio_fd;          /* a local regular source: the file opened again with O_DIRECT, for the parts
	                      * not in the page cache (-1: none); its alignment in dio_align */
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
	int last;            /* nothing of the file follows the chunk: a direct write may pad its end */
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
	struct chunk *todo, *todo_tail, *done, *done_tail; /* both in the order the chunks came */
	int fd, quit, running;
	int efd;         /* eventfd: done went from empty to not */
	int reading;     /* 1: chunks are read from fd (the source); 0: written to it (the destination) */
	int skip_zeros;  /* writing: all-zero blocks are left as holes */
	size_t align;    /* writing with O_DIRECT where a run is aligned to this (0: never) */
	int direct_on;   /* O_DIRECT is set on fd now */
	int padded;      /* the file's last block was written whole, past the file's end */
	uint64_t direct_bytes, buffered_bytes; /* written (read) with O_DIRECT, and through the page cache */
	int dio_fd;      /* reading: the source opened with O_DIRECT (-1: none), aligned to align */
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
	int prealloc;        /* the local destination was allocated to the size first */
};

enum { HOLES_SEEK = 1, HOLES_MAP };
struct hole {
	uint64_t off, end;
};

/* Plan a copy's sparseness (holes skipped, zero blocks not written) from both ends. */
void cli_copy_plan_sparse(struct copy *cp);
/* Copy the whole file once: 0, or -errno with the reason printed. */
int cli_copy_pass(struct copy *cp, const char *name);
/* Back to the start, for a second pass. */
void cli_copy_reset(struct copy *cp);

#endif
