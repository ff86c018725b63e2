/* pnfs mount: the userspace pNFS client as a file system, on libfuse3's low-level API.
 *
 * Design: one thread, one event loop, many requests in flight. The mount's thread owns the
 * pnfs_context and polls two fds: the FUSE session fd (/dev/fuse, non-blocking) and the context's
 * fd (pnfs_get_fd). A request read from /dev/fuse is decoded by fuse_session_process_buf and its
 * handler here starts the libpnfs _async call(s) it needs and returns at once; the completion
 * callback, run from pnfs_service() on the same thread, answers with fuse_reply_*(). The kernel
 * does not wait for one answer before sending the next request, so any number of reads, writes and
 * namespace calls are outstanding together (reads of two files by two processes, the kernel's
 * read-ahead of one file, ...), while the SCSI I/O of each runs on libpnfs's own threads. No lock
 * is needed: the table of inodes, the open files and the context are touched by this thread only.
 *
 * Inodes: libpnfs names objects by path, FUSE by node id. Each node keeps the server path it was
 * last looked up by and the server's fileid (a fileid met again, as through a hard link, is the
 * same node); node ids count up and are never reused within a mount, so the generation is one
 * number per mount (its start time). Lookup counts follow the kernel's LOOKUP/FORGET; a rename
 * rewrites the paths of the renamed object and of every node below it; a node whose path no longer
 * names its fileid answers ESTALE, and the kernel looks the name up again.
 *
 * Consistency: close-to-open, as the kernel's NFS client. close(2) (FUSE flush) and fsync(2)
 * commit (LAYOUTCOMMIT / COMMIT), so another client that opens the file afterwards sees the data;
 * every open drops the kernel's cached attributes of the file (and, the file being opened without
 * keep_cache, its cached pages), so an open sees what others committed before it. Between opens,
 * attributes and names are cached for attr_timeout seconds. A file open here answers GETATTR from
 * its open handle (pnfs_fstat), whose size counts writes not yet committed.
 *
 * Write-behind: a write is answered once its libpnfs write is started, while the writes so
 * answered and not yet done fit in -o write_behind (64 MiB); a failure after the answer is the
 * writer's error at its next write, fsync or close, as on a kernel NFS mount. What must see those
 * writes (fsync, close, release, reads, setattr) waits for the file's writes started before it.
 *
 * The context is made after the daemon forked, because libpnfs runs threads; a trial mount before
 * that reports a wrong URL or an unreachable server on the terminal. At the end (unmount, lazy or
 * not, or a signal) the calls in flight finish and every file still open is committed and closed
 * before the session ends. This file belongs to the pnfs command only (kept out of libpnfs). */
#define FUSE_USE_VERSION 35
#include "client/mount.h"
#include "client/pnfs.h"
#include "proto/list.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The longest server path the mount builds: 64 components (libpnfs walks no deeper) of NAME_MAX. */
#define PC_MOUNT_PATH_MAX (64 * (NAME_MAX + 1))

#define MOUNT_MAX_WRITE_BYTES (1u << 20)
#define MOUNT_WRITE_BEHIND_BYTES (64ull << 20)
#define MOUNT_READ_AHEAD_KIB 0 /* the kernel's: more helps the MDS path more than layouts */
#define MOUNT_PREFETCH_BYTES (16ull << 20)      /* read ahead of a sequential reader, per open file */
#define MOUNT_PREFETCH_CHUNK_BYTES (4ull << 20) /* one libpnfs read: a stripe over 4 LUNs of 1 MiB */
#define MOUNT_PREFETCH_START_BYTES (1ull << 20) /* read in order before the mount reads ahead */
#define MOUNT_PREFETCH_FILES 4                  /* all files' prefetch at most this many files' worth */
#define MOUNT_POOL_MAX 96
#define NODE_BUCKETS 16384

struct handle;
struct op;

/* One read ahead of a sequential reader (prefetch): [off, off + len) of the file through the one
 * read path (pnfs_pread_async: layouts, or the MDS); reads of the reader inside it are answered
 * from it. Dropped by a write or size change of the file, an open of it (close-to-open) or a
 * read elsewhere; a dropped chunk still in flight sends its waiters to the read path when done. */
struct ra_chunk {
	uint64_t off;
	size_t len;
	char *data;
	int done, dropped;
	int got;                  /* once done: the bytes read (short at the end of the file) or -errno */
	struct handle *h;         /* its file; the handle's release waits for its chunks in flight */
	struct op *waiters;       /* reads of the reader inside it, waiting for it */
	struct ra_chunk *next;    /* the handle's chunks, in file order */
};

struct node {
	fuse_ino_t ino;
	uint64_t fileid;
	uint32_t type_mode;       /* S_IFMT bits: a fileid met again with another type is a new node */
	uint64_t nlookup;
	unsigned nopen;           /* handles on it, those being closed included */
	char *path;               /* server path it was last found by */
	struct handle *open;      /* the open-file registry: handles open on it, not closing */
	struct proto_list writes; /* writes in flight on it (struct op wlink), oldest first */
	struct op *wwait;          /* requests waiting for writes in flight before them to finish */
	struct node *ino_next, *fid_next;
	int in_fid;               /* hashed by fileid */
};

struct handle {
	struct pnfs_fh *fh;
	struct node *node;
	struct handle *node_next;
	struct handle *all_prev, *all_next;
	int closing;
	int wb_err;               /* a write answered before it finished failed: errno for the writer */
	unsigned reads_inflight;  /* for the stats: files with reads in flight at once */
	/* prefetch: the chunks read ahead, where the last read ended, how far the reader read in
	 * order, where the next chunk starts */
	struct ra_chunk *ra;
	unsigned nra, ra_inflight;
	uint64_t ra_last_end, ra_run_bytes, ra_next;
	int ra_stop;              /* the end of the file (a short chunk) or an error: no more this run */
	int no_ra;                /* opened O_DIRECT: every read goes to the server */
	struct op *release_wait;  /* the release, waiting for chunks in flight */
};

struct dirent_copy {
	char *name;
	struct pnfs_stat st;
};

struct dirh {
	struct dirent_copy *ents;
	unsigned n;
	char *path;
};

enum op_kind { OP_META, OP_READ, OP_WRITE };

/* One FUSE request on its way through libpnfs. */
struct op {
	fuse_req_t req;
	enum op_kind kind;
	struct node *node;
	struct handle *h;
	char *path, *path2;
	struct fuse_file_info fi;
	char *buf;
	size_t size;
	int from_handle;          /* attributes asked of an open file, not of a path */
	int buf_pool;             /* buf: a request buffer (kept for the next request) or a read buffer
				   * of MOUNT_MAX_WRITE_BYTES (kept for the next read), not malloc'd alone */
	mode_t mode;
	int to_set;               /* setattr: what is left to set */
	struct stat attr;
	struct pnfs_fh *tfh;      /* setattr of a size without an open file: a file opened for it */
	int status;
	int want_entry;           /* the reply is an entry (lookup, mkdir, ...) or a create */
	int create;
	int mknod_reg;            /* mknod(2) of a regular file: OPEN, CLOSE, then the entry */
	int resized;              /* setattr: the size was changed (what was read ahead goes again) */
	/* writes: the node's list of writes in flight, and the write-behind window */
	struct proto_list wlink; /* on its node's writes */
	uint64_t wseq;            /* a write: its number; a waiter: the last write it waits for */
	int acked;                /* answered before libpnfs finished it (write-behind) */
	int ack_queued;           /* to be answered once the window has room */
	struct op *ack_next;
	void (*resume)(struct op *); /* a waiter: what it does once the writes before it are done */
	struct op *wait_next;
};

static struct {
	struct pnfs_opts opts;
	struct pnfs_url url;
	char base[PATH_MAX];      /* the URL's path: the mount's root on the server */
	struct pnfs_context *ctx;
	struct fuse_session *se;
	double attr_timeout;
	int failed;               /* the mount in the daemon failed: every operation answers EIO */
	uint64_t generation;
	fuse_ino_t next_ino;
	struct node *by_ino[NODE_BUCKETS], *by_fid[NODE_BUCKETS];
	struct node root;
	struct handle *handles;   /* every handle not yet closed */
	char stats_path[PATH_MAX];
	int stats_dirty;
	/* What the stats file reports. */
	unsigned inflight, inflight_max, reads_inflight, reads_inflight_max, writes_inflight,
		writes_inflight_max, files_reading, files_reading_max;
	uint64_t reads, read_bytes, writes, write_bytes, writes_max_size, write_max_bytes;
	uint64_t requests;
	/* Write-behind: a write(2) is answered once its bytes are copied and its libpnfs write started,
	 * while no more than wb_limit_bytes so answered are still in flight; errors reach the writer at
	 * its next write, fsync(2) or close(2). */
	uint64_t wb_limit_bytes, wb_bytes, wb_bytes_max, writes_behind, wseq;
	struct op *ack_first, *ack_last;
	struct fuse_buf fbuf;     /* the request being read from /dev/fuse */
	/* Buffers kept for reuse: 64 MiB of writes in flight through fresh 1 MiB allocations cost a
	 * page fault per 4 KiB each time (glibc returns freed memory to the system); kept ones are
	 * mapped already. Request buffers are libfuse's (its size); read buffers max_read bytes. */
	void *req_bufs[MOUNT_POOL_MAX], *read_bufs[MOUNT_POOL_MAX];
	unsigned nreq_bufs, nread_bufs;
	char mountpoint[PATH_MAX];
	unsigned read_ahead_kib;  /* the kernel's read-ahead on the mount (0: leave it) */
	/* prefetch (-o prefetch=MIB): per file, in chunks; all files together at most ra_total_bytes */
	uint64_t ra_file_bytes, ra_chunk_bytes, ra_total_bytes, ra_bytes;
	uint64_t ra_chunks, ra_fetched_bytes, ra_hits, ra_hit_bytes, ra_waits, ra_dropped;
	void *ra_bufs[MOUNT_POOL_MAX];
	unsigned nra_bufs;
	int inited, read_ahead_set;
	int ending;               /* the session is ending: no more prefetch */
} M = { .attr_timeout = 1.0, .wb_limit_bytes = MOUNT_WRITE_BEHIND_BYTES, .read_ahead_kib = MOUNT_READ_AHEAD_KIB,
	.ra_file_bytes = MOUNT_PREFETCH_BYTES };

/* ---- the inode table ------------------------------------------------------------------------ */

static unsigned bucket(uint64_t key)
{
	return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 50) % NODE_BUCKETS;
}

static struct node *node_by_ino(fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &M.root;
	for (struct node *n = M.by_ino[bucket(ino)]; n; n = n->ino_next)
		if (n->ino == ino)
			return n;
	return NULL;
}

static void fid_unhash(struct node *n)
{
	if (!n->in_fid)
		return;
	for (struct node **pp = &M.by_fid[bucket(n->fileid)]; *pp; pp = &(*pp)->fid_next)
		if (*pp == n) {
			*pp = n->fid_next;
			break;
		}
	n->in_fid = 0;
}

static void node_set_path(struct node *n, const char *path)
{
	char *p;
	if (n->path && !strcmp(n->path, path))
		return;
	p = strdup(path);
	if (!p)
		return; /* the old path stays: ESTALE, then a new lookup */
	free(n->path);
	n->path = p;
}

/* The node of fileid (its path set to path), made if new. Returns NULL when out of memory. */
static struct node *node_obtain(const struct pnfs_stat *ps, mode_t type, const char *path)
{
	struct node *n;

	if (ps->fileid == M.root.fileid && M.root.fileid)
		return &M.root;
	for (n = M.by_fid[bucket(ps->fileid)]; n; n = n->fid_next)
		if (n->fileid == ps->fileid)
			break;
	if (n && n->type_mode != type) {
		fid_unhash(n); /* the server reused the fileid: the old node lives on until forgotten */
		n = NULL;
	}
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n || !(n->path = strdup(path))) {
			free(n);
			return NULL;
		}
		proto_list_init(&n->writes);
		n->ino = M.next_ino++;
		n->fileid = ps->fileid;
		n->type_mode = type;
		n->ino_next = M.by_ino[bucket(n->ino)];
		M.by_ino[bucket(n->ino)] = n;
		n->fid_next = M.by_fid[bucket(n->fileid)];
		M.by_fid[bucket(n->fileid)] = n;
		n->in_fid = 1;
	}
	node_set_path(n, path);
	return n;
}

static void node_maybe_free(struct node *n)
{
	if (n == &M.root || n->nlookup || n->nopen)
		return;
	fid_unhash(n);
	for (struct node **pp = &M.by_ino[bucket(n->ino)]; *pp; pp = &(*pp)->ino_next)
		if (*pp == n) {
			*pp = n->ino_next;
			break;
		}
	free(n->path);
	free(n);
}

/* After a rename of from to to: the paths of from and of everything below it. */
static void nodes_renamed(const char *from, const char *to)
{
	size_t fl = strlen(from);
	for (unsigned b = 0; b < NODE_BUCKETS; b++)
		for (struct node *n = M.by_ino[b]; n; n = n->ino_next)
			if (!strncmp(n->path, from, fl) && (n->path[fl] == 0 || n->path[fl] == '/')) {
				size_t len = strlen(to) + strlen(n->path + fl) + 1;
				char *p = malloc(len);
				if (!p)
					continue;
				snprintf(p, len, "%s%s", to, n->path + fl);
				free(n->path);
				n->path = p;
			}
}

/* parent's path + "/" + name, malloc'd; NULL with errno ENAMETOOLONG or ENOMEM. The server path
 * includes the mount's base and every directory above the caller's working directory, so it may be
 * longer than PATH_MAX while what the application named was not (the kernel checks that): the only
 * limits are a name's NAME_MAX and libpnfs's depth. */
static char *child_path(const struct node *parent, const char *name)
{
	size_t len = strlen(parent->path) + strlen(name) + 2;
	char *p;
	if (strlen(name) > NAME_MAX || len > (size_t)PC_MOUNT_PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	errno = ENOMEM;
	p = malloc(len);
	if (p)
		snprintf(p, len, "%s%s%s", parent->path, strcmp(parent->path, "/") ? "/" : "", name);
	return p;
}

/* ---- requests ------------------------------------------------------------------------------- */

static void stats_write(void);
static void after_writes(struct op *o, struct node *n, void (*resume)(struct op *));
static uint64_t writes_end(const struct node *n);
static void handle_unregister(struct handle *h);
static void handle_free(struct handle *h);
static void ra_drop(struct handle *h);
static void ra_drop_node(struct node *n);

static struct op *op_new(fuse_req_t req, enum op_kind kind)
{
	struct op *o = calloc(1, sizeof(*o));
	if (!o) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	o->req = req;
	o->kind = kind;
	M.requests++;
	return o;
}

static void buf_keep(void **pool, unsigned *n, void *buf)
{
	if (*n < MOUNT_POOL_MAX)
		pool[(*n)++] = buf;
	else
		free(buf);
}

static void op_free(struct op *o)
{
	free(o->path);
	free(o->path2);
	if (o->buf_pool == 1)
		buf_keep(M.req_bufs, &M.nreq_bufs, o->buf);
	else if (o->buf_pool == 2)
		buf_keep(M.read_bufs, &M.nread_bufs, o->buf);
	else
		free(o->buf);
	free(o);
}

/* Counting libpnfs calls in flight: every _async call started here is one until its callback
 * (a read: of the file h, answering a request or read ahead). */
static void read_begin(struct handle *h)
{
	if (++M.reads_inflight > M.reads_inflight_max)
		M.reads_inflight_max = M.reads_inflight;
	if (h && h->reads_inflight++ == 0 && ++M.files_reading > M.files_reading_max)
		M.files_reading_max = M.files_reading;
}

static void read_end(struct handle *h)
{
	M.reads_inflight--;
	if (h && --h->reads_inflight == 0)
		M.files_reading--;
}

static void call_begin(struct op *o)
{
	M.inflight++;
	if (M.inflight > M.inflight_max)
		M.inflight_max = M.inflight;
	if (o->kind == OP_READ)
		read_begin(o->h);
	if (o->kind == OP_WRITE && ++M.writes_inflight > M.writes_inflight_max)
		M.writes_inflight_max = M.writes_inflight;
	M.stats_dirty = 1;
}

static void call_end(struct op *o)
{
	M.inflight--;
	if (o->kind == OP_READ)
		read_end(o->h);
	if (o->kind == OP_WRITE)
		M.writes_inflight--;
}

/* The errno a file-system call gives the application. A lost connection to the server or a path
 * to a LUN (refused, reset, timed out) is an I/O error to a program, as on a kernel NFS mount: a
 * stat must not answer "Connection refused". */
static int errno_of(int status)
{
	if (status >= 0 || -status >= 4096)
		return EIO;
	switch (-status) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case ETIMEDOUT:
	case EPIPE:
	case ENOTCONN:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return EIO;
	default:
		return -status;
	}
}

static void fail(struct op *o, int status)
{
	/* A node is addressed by the path it was last looked up by: when that name went (a hard link's
	 * other name removed, a rename elsewhere), the kernel is told to look its own name up again. */
	if (status == -ENOENT && o->node && o->node != &M.root && !o->create)
		status = -ESTALE;
	fuse_reply_err(o->req, errno_of(status));
	op_free(o);
}

/* Start a libpnfs call for o: a submission refused at once answers the request. */
#define SUBMIT(o, call)                           \
	do {                                      \
		int rc_;                          \
		call_begin(o);                    \
		rc_ = (call);                     \
		if (rc_ < 0) {                    \
			call_end(o);              \
			fail(o, rc_);             \
		}                                 \
	} while (0)

#define NEED_MOUNT(req)                              \
	do {                                         \
		if (M.failed || !M.ctx) {            \
			fuse_reply_err(req, EIO);    \
			return;                      \
		}                                    \
	} while (0)

#define NEED_NODE(req, n, ino)                        \
	struct node *n = node_by_ino(ino);            \
	do {                                          \
		NEED_MOUNT(req);                      \
		if (!n) {                             \
			fuse_reply_err(req, ESTALE);  \
			return;                       \
		}                                     \
	} while (0)

static mode_t type_of(enum pnfs_ftype t)
{
	static const mode_t types[] = { [PNFS_REG] = S_IFREG, [PNFS_DIR] = S_IFDIR, [PNFS_BLK] = S_IFBLK,
					[PNFS_CHR] = S_IFCHR, [PNFS_LNK] = S_IFLNK, [PNFS_SOCK] = S_IFSOCK,
					[PNFS_FIFO] = S_IFIFO };
	return t >= PNFS_REG && t <= PNFS_FIFO ? types[t] : S_IFREG;
}

static void to_stat(const struct pnfs_stat *ps, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = type_of(ps->type) | (ps->mode & 07777);
	st->st_nlink = ps->nlink ? ps->nlink : 1; /* 0: a server that does not count links */
	st->st_uid = ps->uid;
	st->st_gid = ps->gid;
	st->st_size = (off_t)ps->size;
	st->st_blocks = (blkcnt_t)((ps->space_used + 511) / 512);
	st->st_blksize = MOUNT_MAX_WRITE_BYTES;
	st->st_ino = (ino_t)ps->fileid;
	st->st_atim = ps->atime;
	st->st_mtim = ps->mtime;
	st->st_ctim = ps->ctime;
	if (ps->type == PNFS_CHR || ps->type == PNFS_BLK)
		st->st_rdev = makedev(ps->rdev_major, ps->rdev_minor);
}

/* ---- entries: lookup, and what mkdir, symlink, link and create answer ------------------------ */

static void entry_reply(struct op *o, const struct pnfs_stat *ps)
{
	struct fuse_entry_param e;
	struct node *n = node_obtain(ps, type_of(ps->type), o->path);

	if (!n) {
		fail(o, -ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.generation = M.generation;
	e.attr_timeout = M.attr_timeout;
	e.entry_timeout = M.attr_timeout;
	to_stat(ps, &e.attr);
	if (!proto_list_empty(&n->writes) && writes_end(n) > (uint64_t)e.attr.st_size)
		e.attr.st_size = (off_t)writes_end(n);
	if (o->create) {
		struct handle *h = o->h;
		h->no_ra = (o->fi.flags & O_DIRECT) != 0;
		ra_drop_node(n);
		h->node = n;
		n->nopen++;
		h->node_next = n->open;
		n->open = h;
		o->fi.fh = (uint64_t)(uintptr_t)h;
		o->fi.direct_io = 0;
		o->fi.keep_cache = 0;
		if (fuse_reply_create(o->req, &e, &o->fi) == 0) {
			n->nlookup++;
		} else {
			/* An interrupted create: the kernel will release nothing, so it closes here. */
			handle_unregister(h);
			(void)pnfs_close_async(M.ctx, h->fh, NULL, NULL);
			handle_free(h);
		}
	} else if (fuse_reply_entry(o->req, &e) == 0) {
		n->nlookup++;
	} else {
		node_maybe_free(n);
	}
	op_free(o);
}

static void entry_fstat_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct pnfs_stat *ps = data;
	(void)ctx;
	call_end(o);
	if (status < 0 && o->create) {
		(void)pnfs_close_async(M.ctx, o->h->fh, NULL, NULL);
		handle_free(o->h);
		fail(o, status);
		return;
	}
	if (status >= 0 && (!o->attr.st_ino || ps->fileid == (uint64_t)o->attr.st_ino)) {
		entry_reply(o, ps);
		return;
	}
	/* The open file is not what the name names now: the server's answer stands. */
	{
		struct pnfs_stat *saved = (struct pnfs_stat *)o->buf;
		entry_reply(o, saved);
	}
}

static void entry_stat_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct pnfs_stat *ps = data;
	struct node *n;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	/* A file open here: its size counts writes not yet committed. */
	for (n = M.by_fid[bucket(ps->fileid)]; n; n = n->fid_next)
		if (n->fileid == ps->fileid)
			break;
	if (n && n->open && n->type_mode == type_of(ps->type)) {
		o->buf = malloc(sizeof(*ps));
		if (o->buf) {
			memcpy(o->buf, ps, sizeof(*ps));
			o->attr.st_ino = (ino_t)ps->fileid;
			SUBMIT(o, pnfs_fstat_async(M.ctx, n->open->fh, entry_fstat_cb, o));
			return;
		}
	}
	entry_reply(o, ps);
}

/* Answer o with the entry of o->path (a GETATTR of it first). */
static void entry_start(struct op *o)
{
	SUBMIT(o, pnfs_stat_async(M.ctx, o->path, entry_stat_cb, o));
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NEED_NODE(req, p, parent);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	o->path = child_path(p, name);
	if (!o->path) {
		fail(o, -errno);
		return;
	}
	entry_start(o);
}

static void forget_one(fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = node_by_ino(ino);
	if (!n || n == &M.root)
		return;
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	node_maybe_free(n);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_one(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- attributes ----------------------------------------------------------------------------- */

static void attr_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct pnfs_stat *ps = data;
	struct stat st;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	/* The path names another object now (renamed or removed elsewhere): the kernel looks again. */
	if (o->node != &M.root && ps->fileid != o->node->fileid) {
		fail(o, -ESTALE);
		return;
	}
	to_stat(ps, &st);
	/* An open file whose last name went (removed here or by another client; the server keeps it
	 * while it is open): the server counts no link, and fstat(2) says so. */
	if (o->from_handle && ps->nlink == 0 && ps->type == PNFS_REG)
		st.st_nlink = 0;
	/* Writes answered but not yet done may grow the file. */
	if (!proto_list_empty(&o->node->writes) && writes_end(o->node) > (uint64_t)st.st_size)
		st.st_size = (off_t)writes_end(o->node);
	fuse_reply_attr(o->req, &st, M.attr_timeout);
	op_free(o);
}

/* Answer o with the attributes of o->node: from an open handle if there is one. */
static void attr_start(struct op *o, struct handle *h)
{
	if (!h)
		h = o->node->open;
	if (h && !h->closing) {
		o->from_handle = 1;
		SUBMIT(o, pnfs_fstat_async(M.ctx, h->fh, attr_cb, o));
		return;
	}
	o->from_handle = 0;
	SUBMIT(o, pnfs_stat_async(M.ctx, o->node->path, attr_cb, o));
}

static struct handle *H(struct fuse_file_info *fi)
{
	return fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NEED_NODE(req, n, ino);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	o->node = n;
	attr_start(o, H(fi));
}

static void setattr_next(struct op *o);

static void setattr_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	setattr_next(o);
}

static void trunc_close_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	o->tfh = NULL;
	if (o->status < 0 || status < 0) {
		fail(o, o->status < 0 ? o->status : status);
		return;
	}
	setattr_next(o);
}

static void trunc_done_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	o->status = status;
	SUBMIT(o, pnfs_close_async(M.ctx, o->tfh, trunc_close_cb, o));
}

static void trunc_open_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	o->tfh = data;
	SUBMIT(o, pnfs_ftruncate_async(M.ctx, o->tfh, (uint64_t)o->attr.st_size, trunc_done_cb, o));
}

/* One attribute after the other: owner check, mode, size, times; then the new attributes. */
static void setattr_next(struct op *o)
{
	int s = o->to_set;

	if (o->resized) { /* chunks read ahead while the size changed may hold what it removed */
		ra_drop_node(o->node);
		o->resized = 0;
	}
	if (s & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		/* Owners by number: the server checks who may (root any, an owner its own groups). */
		uint32_t uid = (s & FUSE_SET_ATTR_UID) ? (uint32_t)o->attr.st_uid : (uint32_t)-1;
		uint32_t gid = (s & FUSE_SET_ATTR_GID) ? (uint32_t)o->attr.st_gid : (uint32_t)-1;
		o->to_set &= ~(FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
		SUBMIT(o, pnfs_chown_async(M.ctx, o->node->path, uid, gid, setattr_cb, o));
	} else if (s & FUSE_SET_ATTR_MODE) {
		o->to_set &= ~FUSE_SET_ATTR_MODE;
		SUBMIT(o, pnfs_chmod_async(M.ctx, o->node->path, o->attr.st_mode & 07777, setattr_cb, o));
	} else if (s & FUSE_SET_ATTR_SIZE) {
		struct handle *h = H(&o->fi) ? H(&o->fi) : o->node->open;
		o->to_set &= ~FUSE_SET_ATTR_SIZE;
		o->resized = 1;
		if (h && !h->closing)
			SUBMIT(o, pnfs_ftruncate_async(M.ctx, h->fh, (uint64_t)o->attr.st_size, setattr_cb, o));
		else
			SUBMIT(o, pnfs_open_async(M.ctx, o->node->path, O_WRONLY, 0, trunc_open_cb, o));
	} else if (s & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
		if (s & FUSE_SET_ATTR_ATIME)
			ts[0] = (s & FUSE_SET_ATTR_ATIME_NOW) ? (struct timespec){ 0, UTIME_NOW } : o->attr.st_atim;
		if (s & FUSE_SET_ATTR_MTIME)
			ts[1] = (s & FUSE_SET_ATTR_MTIME_NOW) ? (struct timespec){ 0, UTIME_NOW } : o->attr.st_mtim;
		o->to_set &= ~(FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			       FUSE_SET_ATTR_MTIME_NOW);
		SUBMIT(o, pnfs_utimens_async(M.ctx, o->node->path, ts, setattr_cb, o));
	} else {
		attr_start(o, H(&o->fi));
	}
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	NEED_NODE(req, n, ino);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	o->node = n;
	o->attr = *attr;
	o->to_set = to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE |
			      FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME_NOW);
	if (fi)
		o->fi = *fi;
	if (to_set & FUSE_SET_ATTR_SIZE)
		ra_drop_node(n);
	after_writes(o, n, setattr_next);
}

static void statfs_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct pnfs_statfs *sf = data;
	struct statvfs sv;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = sf->total_bytes / 4096;
	sv.f_bfree = sf->free_bytes / 4096;
	sv.f_bavail = sf->avail_bytes / 4096;
	sv.f_files = sf->total_files;
	sv.f_ffree = sf->free_files;
	sv.f_favail = sf->avail_files;
	sv.f_namemax = 255;
	fuse_reply_statfs(o->req, &sv);
	op_free(o);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	NEED_NODE(req, n, ino);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	SUBMIT(o, pnfs_statfs_async(M.ctx, n->path, statfs_cb, o));
}

/* ---- directories ---------------------------------------------------------------------------- */

static void dirh_free(struct dirh *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < d->n; i++)
		free(d->ents[i].name);
	free(d->ents);
	free(d->path);
	free(d);
}

static void opendir_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct pnfs_dir *pd = data;
	struct dirh *d;
	const struct pnfs_dirent *e;
	unsigned cap;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	/* A copy with random access by index: FUSE's readdir offsets are entry numbers here. */
	cap = pnfs_dir_count(pd) + 2;
	d = calloc(1, sizeof(*d));
	if (d)
		d->ents = calloc(cap, sizeof(*d->ents));
	if (!d || !d->ents || !(d->path = strdup(o->path))) {
		pnfs_closedir(pd);
		dirh_free(d);
		fail(o, -ENOMEM);
		return;
	}
	d->ents[0].name = strdup(".");
	d->ents[1].name = strdup("..");
	d->ents[0].st.type = d->ents[1].st.type = PNFS_DIR;
	d->n = 2;
	while ((e = pnfs_readdir(pd)) && d->n < cap) {
		d->ents[d->n].name = strdup(e->name);
		d->ents[d->n].st = e->st;
		if (!d->ents[d->n].name)
			break;
		d->n++;
	}
	pnfs_closedir(pd);
	o->fi.fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(o->req, &o->fi) != 0)
		dirh_free(d);
	op_free(o);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NEED_NODE(req, n, ino);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	o->fi = *fi;
	o->path = strdup(n->path);
	if (!o->path) {
		fail(o, -ENOMEM);
		return;
	}
	SUBMIT(o, pnfs_opendir_async(M.ctx, n->path, opendir_cb, o));
}

static void do_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, int plus)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *buf = malloc(size ? size : 1);
	size_t used = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (unsigned i = off < 0 ? 0 : (unsigned)off; i < d->n; i++) {
		const struct dirent_copy *de = &d->ents[i];
		struct fuse_entry_param e;
		struct node *n = NULL;
		size_t len;
		int dots = i < 2;

		memset(&e, 0, sizeof(e));
		to_stat(&de->st, &e.attr);
		if (dots)
			e.attr.st_ino = 1;
		if (!plus) {
			len = fuse_add_direntry(req, buf + used, size - used, de->name, &e.attr, (off_t)i + 1);
		} else {
			if (!dots && M.ctx) {
				char *p = child_path(&(struct node){ .path = d->path }, de->name);
				n = p ? node_obtain(&de->st, type_of(de->st.type), p) : NULL;
				free(p);
				if (n) {
					e.ino = n->ino;
					e.generation = M.generation;
					e.attr_timeout = M.attr_timeout;
					e.entry_timeout = M.attr_timeout;
				}
			}
			/* A file open here: its size from the server may be behind; leave its
			 * attributes to a GETATTR. */
			if (n && n->open)
				e.attr_timeout = 0;
			len = fuse_add_direntry_plus(req, buf + used, size - used, de->name, &e, (off_t)i + 1);
		}
		if (len > size - used) {
			if (n)
				node_maybe_free(n);
			break;
		}
		if (n)
			n->nlookup++;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, 0);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, 1);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dirh_free((struct dirh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* ---- namespace changes ---------------------------------------------------------------------- */

/* The object is made: answer with its entry. */
static void made_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	entry_start(o);
}

static struct op *name_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_by_ino(parent);
	struct op *o;

	if (M.failed || !M.ctx) {
		fuse_reply_err(req, EIO);
		return NULL;
	}
	if (!p) {
		fuse_reply_err(req, ESTALE);
		return NULL;
	}
	o = op_new(req, OP_META);
	if (!o)
		return NULL;
	o->path = child_path(p, name);
	if (!o->path) {
		fail(o, -errno);
		return NULL;
	}
	return o;
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct op *o = name_op(req, parent, name);
	if (o)
		SUBMIT(o, pnfs_mkdir_async(M.ctx, o->path, mode & 07777, made_cb, o));
}

static void open_cb(struct pnfs_context *ctx, int status, void *data, void *priv);

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct op *o;

	if (S_ISREG(mode)) {
		/* The kernel sends mknod for a regular file only from mknod(2) itself; create is
		 * what open(O_CREAT) uses. An empty file made by OPEN and CLOSE is that. */
		o = name_op(req, parent, name);
		if (o) {
			o->mknod_reg = 1;
			SUBMIT(o, pnfs_open_async(M.ctx, o->path, O_CREAT | O_EXCL | O_WRONLY, mode & 07777, open_cb, o));
		}
		return;
	}
	o = name_op(req, parent, name);
	if (o)
		SUBMIT(o, pnfs_mknod_async(M.ctx, o->path, (uint32_t)mode, major(rdev), minor(rdev), made_cb, o));
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct op *o = name_op(req, parent, name);
	if (o)
		SUBMIT(o, pnfs_symlink_async(M.ctx, link, o->path, made_cb, o));
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct node *n = node_by_ino(ino);
	struct op *o;

	if (!n && !M.failed && M.ctx) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	o = name_op(req, newparent, newname);
	if (o)
		SUBMIT(o, pnfs_link_async(M.ctx, n->path, o->path, made_cb, o));
}

static void status_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	fuse_reply_err(o->req, status < 0 ? errno_of(status) : 0);
	op_free(o);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op *o = name_op(req, parent, name);
	if (o)
		SUBMIT(o, pnfs_unlink_async(M.ctx, o->path, status_cb, o));
}

/* NFS REMOVE takes files and directories alike: rmdir first checks that it is one. */
static void rmdir_stat_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct pnfs_stat *ps = data;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	if (ps->type != PNFS_DIR) {
		fail(o, -ENOTDIR);
		return;
	}
	SUBMIT(o, pnfs_unlink_async(M.ctx, o->path, status_cb, o));
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op *o = name_op(req, parent, name);
	if (o)
		SUBMIT(o, pnfs_stat_async(M.ctx, o->path, rmdir_stat_cb, o));
}

static void rename_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	if (status >= 0)
		nodes_renamed(o->path, o->path2);
	fuse_reply_err(o->req, status < 0 ? errno_of(status) : 0);
	op_free(o);
}

/* RENAME_NOREPLACE: the target must not exist (checked, then renamed: another client may still
 * create it in between, as with any NFS client). */
static void rename_check_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	if (status >= 0 || status != -ENOENT) {
		fail(o, status >= 0 ? -EEXIST : status);
		return;
	}
	SUBMIT(o, pnfs_rename_async(M.ctx, o->path, o->path2, rename_cb, o));
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct node *np = node_by_ino(newparent);
	struct op *o;

	if (flags & RENAME_EXCHANGE) {
		fuse_reply_err(req, EINVAL); /* NFSv4 RENAME cannot swap */
		return;
	}
	if (!np && !M.failed && M.ctx) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	o = name_op(req, parent, name);
	if (!o)
		return;
	o->path2 = child_path(np, newname);
	if (!o->path2) {
		fail(o, -errno);
		return;
	}
	if (flags & RENAME_NOREPLACE)
		SUBMIT(o, pnfs_stat_async(M.ctx, o->path2, rename_check_cb, o));
	else
		SUBMIT(o, pnfs_rename_async(M.ctx, o->path, o->path2, rename_cb, o));
}

static void readlink_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	fuse_reply_readlink(o->req, data);
	op_free(o);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	NEED_NODE(req, n, ino);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	SUBMIT(o, pnfs_readlink_async(M.ctx, n->path, readlink_cb, o));
}

/* ---- files ---------------------------------------------------------------------------------- */

static struct handle *handle_new(struct pnfs_fh *fh)
{
	struct handle *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->fh = fh;
	h->all_next = M.handles;
	if (M.handles)
		M.handles->all_prev = h;
	M.handles = h;
	return h;
}

static void handle_unregister(struct handle *h)
{
	if (h->node)
		for (struct handle **pp = &h->node->open; *pp; pp = &(*pp)->node_next)
			if (*pp == h) {
				*pp = h->node_next;
				break;
			}
	h->closing = 1;
}

static void handle_free(struct handle *h)
{
	if (h->all_prev)
		h->all_prev->all_next = h->all_next;
	else
		M.handles = h->all_next;
	if (h->all_next)
		h->all_next->all_prev = h->all_prev;
	if (h->node) {
		h->node->nopen--;
		node_maybe_free(h->node);
	}
	free(h);
}

static void open_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	struct handle *h;
	(void)ctx;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	if (o->mknod_reg) {
		SUBMIT(o, pnfs_close_async(M.ctx, data, made_cb, o));
		return;
	}
	/* The node's path names another file now (its name removed and made again): not this node's. */
	if (!o->create && pnfs_fh_fileid(data) && pnfs_fh_fileid(data) != o->node->fileid) {
		(void)pnfs_close_async(M.ctx, data, NULL, NULL);
		fail(o, -ESTALE);
		return;
	}
	h = handle_new(data);
	if (!h) {
		(void)pnfs_close_async(M.ctx, data, NULL, NULL);
		fail(o, -ENOMEM);
		return;
	}
	if (o->create) {
		/* The entry comes from the open file (its fileid and attributes). */
		o->h = h;
		SUBMIT(o, pnfs_fstat_async(M.ctx, h->fh, entry_fstat_cb, o));
		return;
	}
	h->no_ra = (o->fi.flags & O_DIRECT) != 0;
	/* what others read ahead of the file is dropped, as the kernel drops its pages below */
	ra_drop_node(o->node);
	h->node = o->node;
	o->node->nopen++;
	h->node_next = o->node->open;
	o->node->open = h;
	/* Close-to-open: what the kernel holds of the file's attributes is dropped, so the size and
	 * times of this open come from the server (or this open handle); its pages go too, the file
	 * being opened without keep_cache. */
	(void)fuse_lowlevel_notify_inval_inode(M.se, o->node->ino, -1, 0);
	o->fi.fh = (uint64_t)(uintptr_t)h;
	o->fi.direct_io = 0;
	o->fi.keep_cache = 0;
	if (fuse_reply_open(o->req, &o->fi) != 0) {
		handle_unregister(h);
		(void)pnfs_close_async(M.ctx, h->fh, NULL, NULL);
		handle_free(h);
	}
	op_free(o);
}

static int open_flags(int flags)
{
	return flags & (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_SYNC | O_DSYNC);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NEED_NODE(req, n, ino);
	struct op *o = op_new(req, OP_META);
	if (!o)
		return;
	o->node = n;
	o->fi = *fi;
	SUBMIT(o, pnfs_open_async(M.ctx, n->path, open_flags(fi->flags), 0, open_cb, o));
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	struct op *o = name_op(req, parent, name);
	if (!o)
		return;
	o->fi = *fi;
	o->create = 1;
	SUBMIT(o, pnfs_open_async(M.ctx, o->path, open_flags(fi->flags | O_CREAT), mode & 07777, open_cb, o));
}

static void read_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	if (status < 0) {
		fail(o, status);
		return;
	}
	M.read_bytes += (uint64_t)status;
	fuse_reply_buf(o->req, o->buf, (size_t)status);
	op_free(o);
}

/* The read path: one libpnfs read for the request. */
static void read_plain(struct op *o)
{
	if (o->size <= MOUNT_MAX_WRITE_BYTES && M.nread_bufs) {
		o->buf = M.read_bufs[--M.nread_bufs];
		o->buf_pool = 2;
	} else if (o->size <= MOUNT_MAX_WRITE_BYTES) {
		o->buf = malloc(MOUNT_MAX_WRITE_BYTES);
		o->buf_pool = 2;
	} else {
		o->buf = malloc(o->size);
	}
	if (!o->buf) {
		fail(o, -ENOMEM);
		return;
	}
	SUBMIT(o, pnfs_pread_async(M.ctx, o->h->fh, o->buf, o->size, (uint64_t)o->attr.st_size, read_cb, o));
}

/* ---- prefetch: reading ahead of a sequential reader ------------------------------------------ *
 * The kernel offers FUSE 128 KiB of read-ahead, so a sequential reader has a few small reads in
 * flight and the LUNs mostly wait. Once a file has been read 1 MiB in order, the mount keeps up to
 * -o prefetch MiB (16) of the file ahead of the reader in flight or ready, in chunks of 4 MiB (one
 * libpnfs read each, striped over the LUNs), and answers the reader's requests from them. The
 * chunks are read by the same pnfs_pread_async as any request, so what they return is what a read
 * would. A request not wholly inside a chunk's bytes (past the end of the file, a failed chunk)
 * goes to the read path. What the kernel drops at an open the mount drops too: an open of the
 * file, a write to it or a change of its size drops its chunks (a chunk in flight then sends its
 * waiters to the read path); a read elsewhere ends the run. O_DIRECT opens never prefetch. */

static void ra_chunk_free(struct ra_chunk *c)
{
	if (c->len == M.ra_chunk_bytes)
		buf_keep(M.ra_bufs, &M.nra_bufs, c->data);
	else
		free(c->data);
	M.ra_bytes -= c->len;
	free(c);
}

/* Drop h's chunks: the ready ones go, those in flight are marked and go when done. */
static void ra_drop(struct handle *h)
{
	while (h->ra) {
		struct ra_chunk *c = h->ra;
		h->ra = c->next;
		M.ra_dropped++;
		if (c->done) {
			ra_chunk_free(c);
		} else {
			c->dropped = 1;
			c->next = NULL;
		}
	}
	h->nra = 0;
	h->ra_run_bytes = 0;
	h->ra_stop = 0;
}

/* Every open handle of n: a write, a size change, an open. */
static void ra_drop_node(struct node *n)
{
	if (n)
		for (struct handle *h = n->open; h; h = h->node_next)
			ra_drop(h);
}

static int ra_has(const struct ra_chunk *c, uint64_t off, size_t size)
{
	return c->done && c->got >= 0 && off >= c->off && off + size <= c->off + (uint64_t)c->got;
}

static void ra_answer(struct ra_chunk *c, struct op *o)
{
	uint64_t off = (uint64_t)o->attr.st_size;
	M.ra_hits++;
	M.ra_hit_bytes += o->size;
	M.read_bytes += o->size;
	fuse_reply_buf(o->req, c->data + (off - c->off), o->size);
	op_free(o);
}

static void release_go(struct op *o);
static void ra_fill(struct handle *h);

static void ra_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct ra_chunk *c = priv;
	struct handle *h = c->h;
	struct op *w = c->waiters;
	(void)ctx;
	(void)data;
	M.inflight--;
	read_end(h);
	h->ra_inflight--;
	c->done = 1;
	c->got = status;
	c->waiters = NULL;
	if (status > 0)
		M.ra_fetched_bytes += (uint64_t)status;
	while (w) {
		struct op *next = w->wait_next;
		w->wait_next = NULL;
		if (!c->dropped && ra_has(c, (uint64_t)w->attr.st_size, w->size))
			ra_answer(c, w);
		else
			read_plain(w);
		w = next;
	}
	if (!c->dropped && (status < 0 || (size_t)status < c->len)) {
		/* the end of the file, or an error the read path will report: no more chunks this run; a
		 * failed chunk goes */
		h->ra_stop = 1;
		if (status < 0) {
			for (struct ra_chunk **pp = &h->ra; *pp; pp = &(*pp)->next)
				if (*pp == c) {
					*pp = c->next;
					h->nra--;
					break;
				}
			c->dropped = 1;
		}
	}
	if (c->dropped)
		ra_chunk_free(c);
	if (h->release_wait && !h->ra_inflight) {
		struct op *o = h->release_wait;
		h->release_wait = NULL;
		release_go(o);
	} else if (!c->dropped) {
		ra_fill(h);
	}
}

/* Start chunks until h has its window ahead of the reader, within the mount's total. */
static void ra_fill(struct handle *h)
{
	uint64_t depth = M.ra_file_bytes / M.ra_chunk_bytes;
	struct ra_chunk **tail = &h->ra;

	/* not while the file has writes in flight: a chunk could read what they are replacing, and
	 * they dropped the chunks at their start only */
	if (h->ra_stop || h->release_wait || h->closing || M.failed || M.ending ||
	    (h->node && !proto_list_empty(&h->node->writes)))
		return;
	while (*tail)
		tail = &(*tail)->next;
	while (h->nra < depth && M.ra_bytes + M.ra_chunk_bytes <= M.ra_total_bytes) {
		struct ra_chunk *c = calloc(1, sizeof(*c));
		int rc;
		if (!c)
			return;
		c->data = M.nra_bufs ? M.ra_bufs[--M.nra_bufs] : malloc(M.ra_chunk_bytes);
		if (!c->data) {
			free(c);
			return;
		}
		c->off = h->ra_next;
		c->len = M.ra_chunk_bytes;
		c->h = h;
		M.ra_bytes += c->len;
		M.inflight++;
		read_begin(h);
		h->ra_inflight++;
		rc = pnfs_pread_async(M.ctx, h->fh, c->data, c->len, c->off, ra_cb, c);
		if (rc < 0) {
			M.inflight--;
			read_end(h);
			h->ra_inflight--;
			ra_chunk_free(c);
			h->ra_stop = 1;
			return;
		}
		M.ra_chunks++;
		M.stats_dirty = 1;
		*tail = c;
		tail = &c->next;
		h->nra++;
		h->ra_next += c->len;
	}
}

/* A read after the writes in flight before it (it sees what they wrote): from a chunk when one
 * holds it, else through the read path; then the run goes on or ends. */
static void read_go(struct op *o)
{
	struct handle *h = o->h;
	uint64_t off = (uint64_t)o->attr.st_size;
	struct ra_chunk *c = NULL;

	for (struct ra_chunk *k = h->ra; k; k = k->next)
		if (off >= k->off && off + o->size <= k->off + k->len) {
			c = k;
			break;
		}
	/* a read well outside the window (the kernel's reads may come a little out of order): the run
	 * ended */
	if (!c && h->ra && (off + M.ra_chunk_bytes < h->ra->off || off >= h->ra_next + M.ra_chunk_bytes))
		ra_drop(h);
	else if (!c && h->ra_stop && off != h->ra_last_end)
		ra_drop(h); /* after the end of the file or an error, a read elsewhere starts afresh */
	if (off == h->ra_last_end || c)
		h->ra_run_bytes += o->size;
	else
		h->ra_run_bytes = 0;
	h->ra_last_end = off + o->size;
	if (!c)
		read_plain(o);
	else if (!c->done) {
		M.ra_waits++;
		o->wait_next = c->waiters;
		c->waiters = o;
	} else if (ra_has(c, off, o->size))
		ra_answer(c, o);
	else
		read_plain(o);
	/* chunks the reader has passed go */
	while (h->ra && h->ra->done && h->ra->off + h->ra->len <= off) {
		struct ra_chunk *k = h->ra;
		h->ra = k->next;
		h->nra--;
		ra_chunk_free(k);
	}
	if (h->no_ra || !M.ra_file_bytes || h->ra_run_bytes < MOUNT_PREFETCH_START_BYTES)
		return;
	if (!h->ra)
		h->ra_next = (off + o->size) / M.ra_chunk_bytes * M.ra_chunk_bytes;
	ra_fill(h);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct handle *h = H(fi);
	struct op *o;
	(void)ino;
	NEED_MOUNT(req);
	o = op_new(req, OP_READ);
	if (!o)
		return;
	M.reads++;
	o->h = h;
	o->size = size;
	o->attr.st_size = off;
	after_writes(o, h->node, read_go);
}

/* ---- writes in flight ------------------------------------------------------------------------ */

/* Run o->resume(o) once every write to n started before now has finished (at once if none is in
 * flight): reads, fsync, close, size changes and attributes wait so, never for writes started after
 * them, so a writer that goes on writing does not hold them back. */
static void after_writes(struct op *o, struct node *n, void (*resume)(struct op *))
{
	if (!n || proto_list_empty(&n->writes)) {
		resume(o);
		return;
	}
	o->wseq = M.wseq;
	o->resume = resume;
	o->wait_next = NULL;
	if (!n->wwait) {
		n->wwait = o;
	} else {
		struct op *w = n->wwait;
		while (w->wait_next)
			w = w->wait_next;
		w->wait_next = o;
	}
}

/* The waiters of n whose writes are all done now. */
static void writes_waiters_run(struct node *n)
{
	uint64_t oldest =
		proto_list_empty(&n->writes) ? UINT64_MAX : proto_list_first(&n->writes, struct op, wlink)->wseq;
	struct op **pp = &n->wwait, *ready = NULL, **tail = &ready;

	while (*pp) {
		struct op *w = *pp;
		if (w->wseq < oldest) {
			*pp = w->wait_next;
			w->wait_next = NULL;
			*tail = w;
			tail = &w->wait_next;
		} else {
			pp = &w->wait_next;
		}
	}
	while (ready) {
		struct op *w = ready;
		ready = w->wait_next;
		w->resume(w);
	}
}

/* The end of the node's writes in flight (they may grow the file before libpnfs counts them). */
static uint64_t writes_end(const struct node *n)
{
	uint64_t end = 0;
	proto_list_for_each(w, &n->writes, const struct op, wlink)
		if (w->attr.st_size > 0 && (uint64_t)w->attr.st_size > end)
			end = (uint64_t)w->attr.st_size;
	return end;
}

static void write_ack(struct op *o)
{
	o->acked = 1;
	M.wb_bytes += o->size;
	if (M.wb_bytes > M.wb_bytes_max)
		M.wb_bytes_max = M.wb_bytes;
	M.writes_behind++;
	fuse_reply_write(o->req, o->size);
}

/* Answer the writes waiting for room in the window, oldest first, while they fit. */
static void write_acks_run(void)
{
	while (M.ack_first && M.wb_bytes + M.ack_first->size <= M.wb_limit_bytes) {
		struct op *o = M.ack_first;
		M.ack_first = o->ack_next;
		if (!M.ack_first)
			M.ack_last = NULL;
		o->ack_queued = 0;
		write_ack(o);
	}
}

static void write_unqueue(struct op *o)
{
	struct op *prev = NULL;
	for (struct op *w = M.ack_first; w; prev = w, w = w->ack_next)
		if (w == o) {
			if (prev)
				prev->ack_next = o->ack_next;
			else
				M.ack_first = o->ack_next;
			if (M.ack_last == o)
				M.ack_last = prev;
			break;
		}
	o->ack_queued = 0;
}

/* A write finished (status: bytes written or -errno): answered now, or, answered already, its
 * failure kept for the writer. */
static void write_done(struct op *o, int status)
{
	struct node *n = o->node;
	int err = status < 0 ? errno_of(status) : (size_t)status < o->size ? EIO : 0;

	proto_list_del(&o->wlink);
	if (status > 0)
		M.write_bytes += (uint64_t)status;
	if (o->ack_queued)
		write_unqueue(o);
	if (o->acked) {
		M.wb_bytes -= o->size;
		if (err && !o->h->wb_err) {
			o->h->wb_err = err;
			fprintf(stderr, "pnfs mount: write of %s at %llu: %s (reported at the next write, fsync or close)\n",
				n->path, (unsigned long long)o->attr.st_size - o->size, strerror(err));
		}
	} else if (err) {
		fuse_reply_err(o->req, err);
	} else {
		fuse_reply_write(o->req, (size_t)status);
	}
	write_acks_run();
	op_free(o);
	writes_waiters_run(n);
}

static void write_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	write_done(o, status);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct handle *h = H(fi);
	struct node *n = h->node;
	const char *data;
	struct op *o;
	int rc;
	(void)ino;
	NEED_MOUNT(req);
	if (h->wb_err) {
		fuse_reply_err(req, h->wb_err);
		return;
	}
	if (size == 0 || !n) {
		if (n)
			fuse_reply_write(req, 0);
		else
			fuse_reply_err(req, EIO);
		return;
	}
	o = op_new(req, OP_WRITE);
	if (!o)
		return;
	/* The write's bytes are in the buffer the request was read into: the call takes that buffer
	 * (the loop reads the next request into a new one) rather than a copy. */
	if (M.fbuf.mem && buf >= (const char *)M.fbuf.mem && buf + size <= (const char *)M.fbuf.mem + M.fbuf.size) {
		o->buf = M.fbuf.mem;
		o->buf_pool = 1;
		/* the next request goes to a kept buffer, or libfuse allocates one */
		M.fbuf.mem = M.nreq_bufs ? M.req_bufs[--M.nreq_bufs] : NULL;
		data = buf;
	} else {
		o->buf = malloc(size);
		if (!o->buf) {
			fail(o, -ENOMEM);
			return;
		}
		memcpy(o->buf, buf, size);
		data = o->buf;
	}
	M.writes++;
	if (size > M.write_max_bytes)
		M.write_max_bytes = size;
	if (size == MOUNT_MAX_WRITE_BYTES)
		M.writes_max_size++;
	o->h = h;
	o->node = n;
	o->size = size;
	o->attr.st_size = off + (off_t)size; /* where the write ends */
	ra_drop_node(n);
	o->wseq = ++M.wseq;
	proto_list_add_tail(&n->writes, &o->wlink);
	/* O_SYNC, O_DSYNC and O_DIRECT writes are answered when done; the others once copied, while the
	 * window has room, else when there is room (or when done, if that comes first). */
	if (M.wb_limit_bytes && !(fi->flags & (O_SYNC | O_DSYNC | O_DIRECT))) {
		if (!M.ack_first && M.wb_bytes + size <= M.wb_limit_bytes) {
			write_ack(o);
		} else {
			o->ack_queued = 1;
			if (M.ack_last)
				M.ack_last->ack_next = o;
			else
				M.ack_first = o;
			M.ack_last = o;
		}
	}
	call_begin(o);
	rc = pnfs_pwrite_async(M.ctx, h->fh, data, size, (uint64_t)off, write_cb, o);
	if (rc < 0) {
		call_end(o);
		write_done(o, rc);
	}
}

static void sync_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	call_end(o);
	stats_write(); /* so that what a closed file moved is in the stats file when close(2) returns */
	/* A write answered before it was done and failed since: this is where the writer hears of it. */
	fuse_reply_err(o->req, status < 0 ? errno_of(status) : o->h->wb_err);
	op_free(o);
}

static void flush_go(struct op *o)
{
	SUBMIT(o, pnfs_fsync_async(M.ctx, o->h->fh, sync_cb, o));
}

/* Every close(2) of a descriptor: commit what it wrote, so that the next open elsewhere sees it;
 * the writes in flight before it first. */
static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct op *o;
	(void)ino;
	NEED_MOUNT(req);
	o = op_new(req, OP_META);
	if (!o)
		return;
	o->h = H(fi);
	after_writes(o, o->h->node, flush_go);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	ll_flush(req, ino, fi);
}

static void release_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct op *o = priv;
	(void)ctx;
	(void)data;
	(void)status; /* flush reported a failure to commit; a later one has no one to tell */
	call_end(o);
	handle_free(o->h);
	fuse_reply_err(o->req, 0);
	op_free(o);
}

/* The close, once the file's writes and chunks read ahead are done. */
static void release_go(struct op *o)
{
	ra_drop(o->h);
	if (o->h->ra_inflight) {
		o->h->release_wait = o;
		return;
	}
	SUBMIT(o, pnfs_close_async(M.ctx, o->h->fh, release_cb, o));
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = H(fi);
	struct op *o;
	(void)ino;
	if (!M.ctx) {
		fuse_reply_err(req, 0);
		return;
	}
	handle_unregister(h);
	o = op_new(req, OP_META);
	if (!o) {
		ra_drop(h);
		if ((h->node && !proto_list_empty(&h->node->writes)) || h->ra_inflight) {
			fuse_reply_err(req, 0);
			return; /* the handle stays with its file until the unmount closes it */
		}
		(void)pnfs_close_async(M.ctx, h->fh, NULL, NULL);
		handle_free(h);
		return;
	}
	o->h = h;
	after_writes(o, h->node, release_go);
}

/* ---- the session ---------------------------------------------------------------------------- */

/* The stats file (-o stats=FILE): written whole under a temporary name, then renamed over. */
static void stats_write(void)
{
	char tmp[PATH_MAX + 8];
	struct pnfs_stats ps;
	FILE *f;

	if (!M.stats_path[0])
		return;
	memset(&ps, 0, sizeof(ps));
	if (M.ctx)
		pnfs_get_stats(M.ctx, &ps);
	snprintf(tmp, sizeof(tmp), "%s.tmp", M.stats_path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f,
		"requests %llu\ncalls_in_flight %u\ncalls_in_flight_max %u\nreads_in_flight_max %u\n"
		"writes_in_flight_max %u\nfiles_reading_max %u\nreads %llu\nread_bytes %llu\nwrites %llu\nwrite_bytes %llu\n"
		"write_max_bytes %llu\nwrites_of_max_write %llu\ndirect_bytes_read %llu\n"
		"direct_bytes_written %llu\nmds_data_read %llu\nmds_data_written %llu\nlayoutcommits %llu\n"
		"writes_behind %llu\nwrite_behind_max_bytes %llu\nprefetch_chunks %llu\nprefetch_bytes %llu\n"
		"reads_from_prefetch %llu\nread_bytes_from_prefetch %llu\nreads_waiting_for_prefetch %llu\n"
		"prefetch_dropped %llu\n",
		(unsigned long long)M.requests, M.inflight, M.inflight_max, M.reads_inflight_max,
		M.writes_inflight_max, M.files_reading_max, (unsigned long long)M.reads, (unsigned long long)M.read_bytes,
		(unsigned long long)M.writes, (unsigned long long)M.write_bytes,
		(unsigned long long)M.write_max_bytes, (unsigned long long)M.writes_max_size,
		(unsigned long long)ps.direct_bytes_read, (unsigned long long)ps.direct_bytes_written,
		(unsigned long long)ps.mds_data_read, (unsigned long long)ps.mds_data_written,
		(unsigned long long)ps.layoutcommits, (unsigned long long)M.writes_behind,
		(unsigned long long)M.wb_bytes_max, (unsigned long long)M.ra_chunks,
		(unsigned long long)M.ra_fetched_bytes, (unsigned long long)M.ra_hits,
		(unsigned long long)M.ra_hit_bytes, (unsigned long long)M.ra_waits, (unsigned long long)M.ra_dropped);
	if (fclose(f) == 0)
		(void)rename(tmp, M.stats_path);
	M.stats_dirty = 0;
}

/* -o read_ahead=KIB: FUSE offers at most 128 KiB of read-ahead in INIT (the default of a new
 * backing device); the backing device's read_ahead_kb, written after INIT (root only), lets the
 * kernel keep several max_read (1 MiB) reads in flight. The device is found in
 * /proc/self/mountinfo: a stat(2) of the mount point would be a FUSE request to this thread. */
static void read_ahead_set(void)
{
	char line[PATH_MAX * 2 + 200], path[128];
	unsigned maj = 0, min = 0;
	int found = 0;
	FILE *f;

	M.read_ahead_set = 1;
	if (!M.read_ahead_kib || !(f = fopen("/proc/self/mountinfo", "r")))
		return;
	while (fgets(line, sizeof(line), f)) { /* the last one: a mount over an older one */
		char mp[PATH_MAX + 1];
		unsigned a, b;
		if (sscanf(line, "%*u %*u %u:%u %*s %4096s", &a, &b, mp) == 3 && !strcmp(mp, M.mountpoint)) {
			maj = a;
			min = b;
			found = 1;
		}
	}
	fclose(f);
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%u\n", M.read_ahead_kib);
		fclose(f);
	}
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	M.inited = 1;
	conn->max_write = MOUNT_MAX_WRITE_BYTES;
	conn->max_readahead = MOUNT_MAX_WRITE_BYTES;
	conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	/* Write-through: a write(2) is answered once libpnfs has it, close(2) commits. */
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
}

/* The end of the session: calls in flight finish, every file still open here (the kernel sent no
 * release, as after an aborted connection) is committed and closed, then the client leaves. */
static void ll_destroy(void *userdata)
{
	(void)userdata;
	M.ending = 1;
	if (!M.ctx)
		return;
	while (pnfs_outstanding(M.ctx) > 0)
		if (pnfs_run_once(M.ctx, 1000) < 0)
			break;
	while (M.handles) {
		struct handle *h = M.handles;
		int rc = 0;
		if (!h->closing) {
			handle_unregister(h);
			rc = pnfs_close(M.ctx, h->fh);
		}
		if (rc < 0)
			fprintf(stderr, "pnfs mount: closing %s at unmount: %s\n", h->node ? h->node->path : "a file",
				pnfs_get_error(M.ctx));
		ra_drop(h);
		handle_free(h);
	}
	while (M.nra_bufs)
		free(M.ra_bufs[--M.nra_bufs]);
	stats_write();
	if (!M.failed)
		(void)pnfs_umount(M.ctx);
	pnfs_context_destroy(M.ctx);
	M.ctx = NULL;
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
	.destroy = ll_destroy,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mkdir = ll_mkdir,
	.mknod = ll_mknod,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.readdirplus = ll_readdirplus,
	.releasedir = ll_releasedir,
	.statfs = ll_statfs,
	.create = ll_create,
};

/* The loop: requests from /dev/fuse are started, libpnfs's completions answered, until the
 * session ends (unmounted, or a signal). */
static void session_loop(void)
{
	int ffd = fuse_session_fd(M.se);
	time_t last_stats = 0;

	memset(&M.fbuf, 0, sizeof(M.fbuf));
	(void)fcntl(ffd, F_SETFL, fcntl(ffd, F_GETFL) | O_NONBLOCK);
	while (!fuse_session_exited(M.se)) {
		struct pollfd p[2] = { { .fd = ffd, .events = POLLIN }, { .fd = -1 } };
		int n;

		if (M.ctx) {
			p[1].fd = pnfs_get_fd(M.ctx);
			p[1].events = (short)pnfs_which_events(M.ctx);
		}
		n = poll(p, 2, 1000);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && M.ctx && p[1].revents)
			(void)pnfs_service(M.ctx, p[1].revents);
		if (n > 0 && p[0].revents) {
			/* A batch of requests, then libpnfs again, so neither side starves. */
			for (int i = 0; i < 64 && !fuse_session_exited(M.se); i++) {
				int r = fuse_session_receive_buf(M.se, &M.fbuf);
				if (r == -EAGAIN || r == -EINTR || r == 0)
					break;
				if (r == -ENOENT) /* a request interrupted before it was read */
					continue;
				if (r < 0) {
					fuse_session_exit(M.se);
					break;
				}
				fuse_session_process_buf(M.se, &M.fbuf);
				if (M.inited && !M.read_ahead_set)
					read_ahead_set();
			}
		}
		if (M.stats_dirty && time(NULL) != last_stats) {
			stats_write();
			last_stats = time(NULL);
		}
	}
	free(M.fbuf.mem);
	M.fbuf.mem = NULL;
	while (M.nreq_bufs)
		free(M.req_bufs[--M.nreq_bufs]);
	while (M.nread_bufs)
		free(M.read_bufs[--M.nread_bufs]);
}

/* Mount, go to the background (unless fg), make the context, serve until unmounted. */
static int run_session(int argc, char **argv, const char *mp, int fg)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	int rc = 1;

	M.generation = (uint64_t)time(NULL);
	/* mountinfo shows the mount point with spaces and the like escaped: such a mount keeps the
	 * default read-ahead */
	if (!realpath(mp, M.mountpoint))
		snprintf(M.mountpoint, sizeof(M.mountpoint), "%s", mp);
	M.next_ino = FUSE_ROOT_ID + 1;
	M.root.ino = FUSE_ROOT_ID;
	proto_list_init(&M.root.writes);
	M.root.type_mode = S_IFDIR;
	M.root.nlookup = 1;
	M.root.path = M.base;
	M.se = fuse_session_new(&args, &ll_ops, sizeof(ll_ops), NULL);
	if (!M.se)
		goto out;
	if (fuse_set_signal_handlers(M.se) != 0)
		goto out_destroy;
	if (fuse_session_mount(M.se, mp) != 0)
		goto out_signals;
	if (fuse_daemonize(fg) != 0)
		goto out_unmount;
	rc = pnfs_context_create(&M.opts, &M.ctx);
	if (rc == 0)
		rc = pnfs_mount(M.ctx, M.url.host, M.url.port, "/");
	if (rc < 0) {
		fprintf(stderr, "pnfs mount: %s:%d: %s\n", M.url.host, M.url.port,
			M.ctx ? pnfs_get_error(M.ctx) : strerror(-rc));
		M.failed = 1;
	}
	session_loop();
	rc = M.failed;
out_unmount:
	fuse_session_unmount(M.se);
out_signals:
	fuse_remove_signal_handlers(M.se);
out_destroy:
	fuse_session_destroy(M.se); /* ll_destroy: commit and close what is still open */
	M.se = NULL;
	if (M.ctx) { /* the kernel never sent INIT */
		(void)pnfs_umount(M.ctx);
		pnfs_context_destroy(M.ctx);
		M.ctx = NULL;
	}
out:
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}

static void mount_usage(FILE *f)
{
	fprintf(f,
		"usage: pnfs [OPTIONS] mount pnfs://HOST[:PORT]/PATH MOUNTPOINT [-f] [-o OPT[,OPT...]]\n"
		"       pnfs umount MOUNTPOINT\n"
		"Mount PATH of the server on MOUNTPOINT through FUSE; file data goes through layouts.\n"
		"The pnfs OPTIONS (--portal, --device, --initiator, --io-timeout, --mds-io, -v) come\n"
		"before 'mount', or from client.conf and PNFS_* variables as for every command.\n"
		"  -f                 stay in the foreground (default: return once mounted)\n"
		"  -o attr_timeout=S  seconds attributes and names are cached between opens (default 1)\n"
		"  -o write_behind=MIB  answer write(2) once the mount has its bytes, with up to MIB MiB\n"
		"                     not yet written to storage (default 64; 0: answer when written);\n"
		"                     a failed write is reported at the next write, fsync or close\n"
		"  -o read_ahead=KIB  set the kernel's read-ahead on the mount (as root; default: the\n"
		"                     kernel's own, 128)\n"
		"  -o prefetch=MIB    read up to MIB MiB ahead of a sequential reader of a file, in\n"
		"                     4 MiB reads (default 16; 0: off); dropped by a write or open\n"
		"  -o stats=FILE      keep the mount's counters (requests in flight, write sizes) in FILE\n"
		"  -o OPT             any other FUSE mount option (allow_other, ro, ...)\n"
		"Unmount with 'pnfs umount MOUNTPOINT' (fusermount3 -u): open files are committed\n"
		"and their layouts returned first. 'mount -t fuse.pnfs' and fstab run the same through\n"
		"mount.fuse.pnfs (a link to pnfs; 'mount.fuse.pnfs --help').\n");
}

/* A counted mount option (write_behind=MIB, prefetch=MIB, read_ahead=KIB): 0 once set, or -1 after
 * saying what is wrong with it. */
static int opt_count(const char *t)
{
	static const struct {
		const char *name, *unit;
		unsigned long long max;
	} opts[] = { { "write_behind", "MiB", 4096 }, { "prefetch", "MiB", 1024 }, { "read_ahead", "KiB", 1ull << 20 } };
	const char *eq = strchr(t, '=');
	unsigned long long v;
	char *end;

	for (size_t i = 0; eq && i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (strlen(opts[i].name) != (size_t)(eq - t) || strncmp(t, opts[i].name, (size_t)(eq - t)))
			continue;
		v = strtoull(eq + 1, &end, 10);
		if (*end || eq[1] == '-' || eq[1] == 0 || v > opts[i].max) {
			fprintf(stderr, "pnfs mount: bad %s '%s' (%s, 0 to %llu)\n", opts[i].name, eq + 1, opts[i].unit,
				opts[i].max);
			return -1;
		}
		if (i == 0)
			M.wb_limit_bytes = v << 20;
		else if (i == 1)
			M.ra_file_bytes = v << 20;
		else
			M.read_ahead_kib = (unsigned)v;
		return 0;
	}
	return -1;
}

int pnfs_cli_mount(int argc, char **argv, const struct pnfs_opts *opts)
{
	const char *url = NULL, *mp = NULL;
	char optbuf[2048] = "", fsname[600];
	char *fargv[16];
	int fargc = 0, fg = 0, rc;
	struct pnfs_context *probe = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			mount_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-f")) {
			fg = 1;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			char *list = strdup(argv[++i]);
			for (char *sv, *t = strtok_r(list, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
				if (!strncmp(t, "stats=", 6)) {
					if (t[6] != '/' || strlen(t + 6) >= sizeof(M.stats_path) - 8) {
						fprintf(stderr, "pnfs mount: stats=FILE needs an absolute path\n");
						free(list);
						return 2;
					}
					snprintf(M.stats_path, sizeof(M.stats_path), "%s", t + 6);
					continue;
				}
				if (!strncmp(t, "write_behind=", 13) || !strncmp(t, "prefetch=", 9) ||
				    !strncmp(t, "read_ahead=", 11)) {
					if (opt_count(t) < 0) {
						free(list);
						return 2;
					}
					continue;
				}
				if (!strncmp(t, "attr_timeout=", 13)) {
					char *end;
					M.attr_timeout = strtod(t + 13, &end);
					if (*end || M.attr_timeout < 0) {
						fprintf(stderr, "pnfs mount: bad attr_timeout '%s'\n", t + 13);
						free(list);
						return 2;
					}
					continue;
				}
				size_t l = strlen(optbuf);
				snprintf(optbuf + l, sizeof(optbuf) - l, "%s%s", l ? "," : "", t);
			}
			free(list);
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "pnfs mount: unknown option '%s'\n", argv[i]);
			mount_usage(stderr);
			return 2;
		} else if (!url) {
			url = argv[i];
		} else if (!mp) {
			mp = argv[i];
		} else {
			fprintf(stderr, "pnfs mount: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!url || !mp) {
		mount_usage(stderr);
		return 2;
	}
	M.ra_chunk_bytes = M.ra_file_bytes < MOUNT_PREFETCH_CHUNK_BYTES ? M.ra_file_bytes : MOUNT_PREFETCH_CHUNK_BYTES;
	M.ra_total_bytes = M.ra_file_bytes * MOUNT_PREFETCH_FILES;
	if (pnfs_parse_url(url, &M.url) < 0) {
		fprintf(stderr, "pnfs mount: '%s' is not a pnfs://HOST[:PORT]/PATH URL\n", url);
		return 2;
	}
	snprintf(M.base, sizeof(M.base), "%s", M.url.path[0] ? M.url.path : "/");
	{
		size_t l = strlen(M.base);
		while (l > 1 && M.base[l - 1] == '/')
			M.base[--l] = 0;
	}
	M.opts = *opts;
	/* A trial mount: a wrong server or path is said here, not in a daemon's log. */
	rc = pnfs_context_create(&M.opts, &probe);
	if (rc == 0)
		rc = pnfs_mount(probe, M.url.host, M.url.port, "/");
	if (rc == 0) {
		struct pnfs_stat ps;
		rc = pnfs_stat(probe, M.base, &ps);
		if (rc == 0 && ps.type != PNFS_DIR)
			rc = -ENOTDIR;
		M.root.fileid = ps.fileid;
		if (rc < 0)
			fprintf(stderr, "pnfs mount: %s: %s\n", M.base, strerror(-rc));
	} else {
		fprintf(stderr, "pnfs mount: %s:%d: %s\n", M.url.host, M.url.port,
			probe ? pnfs_get_error(probe) : strerror(-rc));
	}
	if (probe) {
		(void)pnfs_umount(probe);
		pnfs_context_destroy(probe);
	}
	if (rc < 0)
		return 1;

	snprintf(fsname, sizeof(fsname), "fsname=pnfs://%s:%d%s,subtype=pnfs", M.url.host, M.url.port, M.base);
	fargv[fargc++] = "pnfs";
	fargv[fargc++] = "-o";
	fargv[fargc++] = fsname;
	if (optbuf[0]) {
		fargv[fargc++] = "-o";
		fargv[fargc++] = optbuf;
	}
	fargv[fargc] = NULL;
	return run_session(fargc, fargv, mp, fg);
}

int pnfs_cli_umount(int argc, char **argv)
{
	pid_t pid;
	int st;

	if (argc != 1 || argv[0][0] == '-') {
		fprintf(stderr, "usage: pnfs umount MOUNTPOINT\n");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", argv[0], (char *)NULL);
		fprintf(stderr, "pnfs umount: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		fprintf(stderr, "pnfs umount: %s\n", strerror(errno));
		return 1;
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
