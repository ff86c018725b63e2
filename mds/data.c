/* MDS-path data. One operation at a time per file: it runs its store work in the COMPOUND's
 * transaction and commits it before any I/O (so no transaction spans the loop), then moves bytes
 * through blkmap, then commits the outcome in a second transaction. A WRITE allocates the blocks
 * it covers as INVALID first, reads back a partial first or last block only when that block holds
 * written data (INVALID blocks and bytes past the end of file are zeros: stale disk contents never
 * reach a file), writes whole blocks, and only then marks them READ_WRITE and moves the size.
 * Durability: a LUN may hold an acknowledged write in a volatile cache. A stable WRITE, and any
 * WRITE into blocks that held no data of the file, flushes the LUNs it wrote to before the blocks
 * are marked written (a target crash must not leave READ_WRITE extents over what the blocks held
 * before); both answer FILE_SYNC4. An UNSTABLE overwrite of written blocks answers UNSTABLE4 and
 * leaves the flush to COMMIT, which flushes the LUNs such writes went to since the last flush. */
#include "mds/data.h"

#include "blkmap/blkmap.h"
#include "mds/compound.h"
#include "mds/layout.h"
#include "mds/state.h"
#include "proto/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>

enum io_kind { IO_READ = 1, IO_WRITE, IO_SETSIZE, IO_COMMIT };

struct mds_io {
	struct mds_io *next;        /* the file's wait queue */
	enum io_kind kind;
	struct mds_compound *c;
	struct mds_file *f;         /* referenced */
	uint64_t fileid;
	uint64_t off;
	uint32_t len;
	const uint8_t *data;        /* WRITE: borrowed from the COMPOUND's arguments */
	stable_how4 stable;
	struct mds_setattr sa;
	uint64_t a, b;              /* the block-aligned range touched */
	uint64_t old_size;
	uint8_t *buf;               /* b - a bytes */
	struct mds_extent *ext;
	size_t next_ext;
	int pending;                /* engine requests outstanding */
	int err;                    /* first -errno of a request */
	int phase;
	READ4resok *rok;
	WRITE4resok *wok;
	COMMIT4resok *cok;
	int flushed;                /* WRITE: the LUNs written to were flushed */
	uint64_t flush_gen;         /* COMMIT: data_unflushed_gen when its flush started */
	uint8_t *flush_leaves;      /* COMMIT: the volume entries it flushes (arena) */
	char where[200];            /* the failing device and LBA, for the log */
};

static uint64_t floor_to(uint64_t v, uint32_t bs)
{
	return v - v % bs;
}

static uint64_t ceil_to(uint64_t v, uint32_t bs)
{
	return v % bs ? v + (bs - v % bs) : v;
}

static void io_start(struct mds_io *io);

struct waiter_arg {
	struct mds_server *srv;
	struct mds_file *f;   /* referenced until the timer ran */
};

static int64_t start_waiter(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct waiter_arg *w = arg;
	struct mds_file *f = w->f;
	struct mds_io *io;
	(void)loop;
	(void)id;

	io = f->io_head;
	if (io && !f->io_busy) {
		f->io_head = io->next;
		if (!f->io_head)
			f->io_tail = NULL;
		io->next = NULL;
		f->io_busy = 1;
		f->io_active = io;
		io_start(io);
	}
	mds_file_put(w->srv, f);
	free(w);
	return MDS_TIMER_STOP;
}

/* End an operation: release the file for the next one and resume the COMPOUND. */
static void io_finish(struct mds_io *io, nfsstat4 status)
{
	struct mds_compound *c = io->c;
	struct mds_server *srv = c->srv;
	struct mds_file *f = io->f;

	if (mds_compound_txn_end(c) != 0 && status == NFS4_OK)
		status = NFS4ERR_SERVERFAULT;
	free(io->ext);
	io->ext = NULL;
	if (io->kind != IO_READ) {
		free(io->buf);
		io->buf = NULL;
	}
	f->io_busy = 0;
	f->io_active = NULL;
	srv->io_pending--;
	if (f->io_head) {
		/* From the loop, not from here: the next operation must not run inside this one. */
		struct waiter_arg *w = malloc(sizeof(*w));
		if (w) {
			w->srv = srv;
			w->f = f;
			f->refs++;
			if (!mds_loop_add_timer(srv->loop, 0, start_waiter, w)) {
				f->refs--;
				free(w);
			}
		}
		if (!w)
			LOG_ERROR("file %llu: out of memory; queued data operations stall",
				  (unsigned long long)f->fileid);
	}
	mds_file_put(srv, f);
	if (io->kind == IO_SETSIZE && status != NFS4_OK)
		memset(&c->res[c->op_index].nfs_resop4_u.opsetattr.attrsset, 0, sizeof(bitmap4));
	mds_compound_resume(c, status);
}

/* Queue an operation behind others on its file; MDS_ASYNC. */
static nfsstat4 io_submit(struct mds_io *io)
{
	struct mds_compound *c = io->c;
	struct mds_file *f;

	if (mds_compound_txn_end(c) != 0)
		return NFS4ERR_SERVERFAULT;
	f = mds_file_get(c->srv, io->fileid);
	if (!f)
		return NFS4ERR_RESOURCE;
	io->f = f;
	c->op_ctx = io;
	c->srv->io_pending++;
	if (f->io_busy) {
		if (f->io_tail)
			f->io_tail->next = io;
		else
			f->io_head = io;
		f->io_tail = io;
		return MDS_ASYNC;
	}
	f->io_busy = 1;
	f->io_active = io;
	io_start(io);
	return MDS_ASYNC;
}

int mds_data_writing(const struct mds_file *f, uint64_t *a, uint64_t *b)
{
	const struct mds_io *io = f->io_active;

	if (!io || io->kind != IO_WRITE || io->a >= io->b)
		return 0;
	*a = io->a;
	*b = io->b;
	return 1;
}

static void note_failure(struct mds_io *io, int status, const struct blkmap_io_result *res)
{
	if (io->err)
		return;
	io->err = status;
	snprintf(io->where, sizeof(io->where), "%s", res && res->message ? res->message : "I/O error");
}

static void io_step(struct mds_io *io);
static void note_unflushed(struct mds_io *io);

static void on_engine(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *arg)
{
	struct mds_io *io = arg;
	(void)ctx;

	if (status)
		note_failure(io, status, res);
	if (--io->pending == 0)
		io_step(io);
}

/* Submit one engine request; counts it. */
static void submit_rw(struct mds_io *io, int write, uint64_t vol_off, uint8_t *p, uint64_t len)
{
	struct blkmap_vol *vol = io->c->srv->vol;
	struct iovec iov = { p, (size_t)len };
	int rc;

	io->pending++;
	rc = write ? blkmap_vol_writev_async(vol, vol_off, &iov, 1, on_engine, io)
		   : blkmap_vol_readv_async(vol, vol_off, &iov, 1, on_engine, io);
	if (rc) {
		note_failure(io, rc, NULL);
		if (!io->err)
			io->err = rc;
		snprintf(io->where, sizeof(io->where), "%s", blkmap_errstr(io->c->srv->bctx));
		io->pending--;
	}
}

/* The extent covering file offset off among io->ext (which covers [a, b)). */
static const struct mds_extent *ext_at(const struct mds_io *io, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (off >= io->ext[i].file_off && off < io->ext[i].file_off + io->ext[i].len)
			return &io->ext[i];
	return NULL;
}

static int has_data(const struct mds_extent *e)
{
	return e && (e->state == MDS_EXT_RW || e->state == MDS_EXT_READ);
}

/* The map of [a, b) (holes included) into io->ext; *nout pieces. 0 or -errno. */
static int map_range(struct mds_io *io, size_t *nout)
{
	struct mds_txn *t = io->c->txn;
	size_t max = (size_t)((io->b - io->a) / io->c->srv->block_bytes) + 2, n = 0;
	uint64_t end_off;
	int rc;

	io->ext = calloc(max, sizeof(*io->ext));
	if (!io->ext)
		return -ENOMEM;
	rc = mds_ext_map(t, io->fileid, io->a, io->b - io->a, io->ext, max, &n, &end_off);
	if (rc)
		return rc;
	if (end_off != io->b)
		return -EUCLEAN; /* every block of the range must be described */
	*nout = n;
	return 0;
}

static nfsstat4 io_errno(int rc)
{
	if (rc == -ENOENT)
		return NFS4ERR_STALE;
	return mds_errno_to_nfs(rc);
}

/* The compound's transaction, or NULL after finishing io with SERVERFAULT. */
static struct mds_txn *io_txn(struct mds_io *io)
{
	struct mds_txn *t = mds_compound_txn(io->c);

	if (!t)
		io_finish(io, NFS4ERR_SERVERFAULT);
	return t;
}

/* The transaction and the inode io starts on (its size kept as io->old_size), or NULL after
 * finishing io with the error. */
static struct mds_txn *io_inode(struct mds_io *io, struct mds_inode *ino)
{
	struct mds_txn *t = io_txn(io);
	int rc;

	if (!t)
		return NULL;
	rc = mds_inode_read(t, io->fileid, ino);
	if (rc) {
		io_finish(io, io_errno(rc));
		return NULL;
	}
	io->old_size = ino->size;
	return t;
}

/* io->buf, bytes aligned for O_DIRECT; -1 after finishing io with RESOURCE. */
static int io_buf(struct mds_io *io, size_t bytes)
{
	if (posix_memalign((void **)&io->buf, 4096, bytes) != 0) {
		io_finish(io, NFS4ERR_RESOURCE);
		return -1;
	}
	return 0;
}

/* ---- READ ---------------------------------------------------------------------------------- */

static void read_start(struct mds_io *io)
{
	struct mds_compound *c = io->c;
	struct mds_server *srv = c->srv;
	uint32_t bs = srv->block_bytes;
	struct mds_inode ino;
	size_t n = 0, room;
	uint64_t count;
	int rc;

	if (!io_inode(io, &ino))
		return;
	if (io->off >= ino.size || io->len == 0) {
		io->rok->eof = io->off >= ino.size;
		io->rok->data.data_len = 0;
		io->rok->data.data_val = NULL;
		io_finish(io, NFS4_OK);
		return;
	}
	count = io->len;
	if (count > ino.size - io->off)
		count = ino.size - io->off;
	if (count > MDS_MAX_IO_BYTES)
		count = MDS_MAX_IO_BYTES;
	room = mds_compound_reply_room(c);
	room = room > 8 ? room - 8 : 0; /* eof and the data length */
	if (count > room)
		count = room;
	if (count == 0) {
		io_finish(io, NFS4ERR_REP_TOO_BIG);
		return;
	}
	io->len = (uint32_t)count;
	io->a = floor_to(io->off, bs);
	io->b = ceil_to(io->off + count, bs);
	rc = map_range(io, &n);
	mds_compound_txn_end(c);
	if (rc) {
		io_finish(io, io_errno(rc));
		return;
	}
	if (io_buf(io, (size_t)(io->b - io->a)))
		return;
	if (mds_arena_adopt(&c->arena, io->buf) != 0) {
		io->buf = NULL;
		io_finish(io, NFS4ERR_RESOURCE);
		return;
	}
	io->phase = 1;
	io->pending = 1; /* held while submitting */
	for (size_t i = 0; i < n; i++) {
		const struct mds_extent *e = &io->ext[i];
		uint8_t *p = io->buf + (e->file_off - io->a);
		if (has_data(e))
			submit_rw(io, 0, e->vol_off, p, e->len);
		else
			memset(p, 0, (size_t)e->len); /* holes and INVALID extents read as zeros */
	}
	if (--io->pending == 0)
		io_step(io);
}

static void read_done(struct mds_io *io)
{
	if (io->err) {
		/* a LUN out of service was said once, loudly, when it went out */
		proto_log(io->err == -BLKMAP_EWRONGLUN ? PROTO_LOG_DEBUG : PROTO_LOG_ERROR, "file %llu: READ at %llu failed: %s",
			  (unsigned long long)io->fileid, (unsigned long long)io->off, io->where);
		io_finish(io, NFS4ERR_IO);
		return;
	}
	io->rok->data.data_val = (char *)io->buf + (io->off - io->a);
	io->rok->data.data_len = io->len;
	io->rok->eof = io->off + io->len >= io->old_size;
	io_finish(io, NFS4_OK);
}

/* ---- WRITE and the block-zeroing of a size change ------------------------------------------- */

/* Issue the reads a partial block needs (phase 1). */
static void rmw_read_partials(struct mds_io *io, size_t n)
{
	uint32_t bs = io->c->srv->block_bytes;
	uint64_t blocks[2];
	int nb = 0, head = io->off > io->a, tail = io->off + io->len < io->b;

	if (head)
		blocks[nb++] = io->a;
	if (tail && (!head || io->b - bs != io->a))
		blocks[nb++] = io->b - bs;
	io->phase = 1;
	io->pending = 1;
	for (int i = 0; i < nb; i++) {
		const struct mds_extent *e = ext_at(io, blocks[i], n);
		uint8_t *p = io->buf + (blocks[i] - io->a);
		if (has_data(e))
			submit_rw(io, 0, e->vol_off + (blocks[i] - e->file_off), p, bs);
		else
			memset(p, 0, bs);
	}
	if (--io->pending == 0)
		io_step(io);
}

/* Phase 2: the merged blocks go out, extent by extent. */
static void rmw_write(struct mds_io *io)
{
	size_t n = io->next_ext;

	io->phase = 2;
	if (io->err) {
		io_step(io);
		return;
	}
	if (io->old_size < io->b) {
		/* Nothing past the end of file may come from the disk. */
		uint64_t from = io->old_size > io->a ? io->old_size : io->a;
		if (io->kind == IO_WRITE) {
			uint64_t data_end = io->off + io->len;
			if (from < io->off)
				memset(io->buf + (from - io->a), 0, (size_t)(io->off - from));
			if (data_end > from)
				from = data_end;
		}
		if (from < io->b)
			memset(io->buf + (from - io->a), 0, (size_t)(io->b - from));
	}
	if (io->kind == IO_WRITE)
		memcpy(io->buf + (io->off - io->a), io->data, io->len);
	else
		memset(io->buf + (io->off - io->a), 0, (size_t)(io->b - io->off)); /* zero past new EOF */
	io->phase = 2;
	io->pending = 1;
	for (size_t i = 0; i < n; i++) {
		const struct mds_extent *e = &io->ext[i];
		if (e->state == MDS_EXT_NONE)
			continue; /* cannot happen after allocation; skip rather than write nowhere */
		submit_rw(io, 1, e->vol_off, io->buf + (e->file_off - io->a), e->len);
	}
	if (--io->pending == 0)
		io_step(io);
}

static void write_start(struct mds_io *io)
{
	struct mds_compound *c = io->c;
	struct mds_server *srv = c->srv;
	uint32_t bs = srv->block_bytes;
	struct mds_inode ino;
	struct mds_txn *t = io_inode(io, &ino);
	size_t n = 0;
	int rc;

	if (!t)
		return;
	if (io->len == 0) {
		io->wok->count = 0;
		io->wok->committed = io->stable == UNSTABLE4 ? UNSTABLE4 : FILE_SYNC4;
		memcpy(io->wok->writeverf, srv->write_verf, NFS4_VERIFIER_SIZE);
		io_finish(io, NFS4_OK);
		return;
	}
	io->a = floor_to(io->off, bs);
	io->b = ceil_to(io->off + io->len, bs);
	rc = mds_ext_alloc(t, io->fileid, io->a, io->b - io->a, NULL);
	if (rc == 0) {
		mds_compound_dirty(c);
		rc = map_range(io, &n);
	}
	/* The allocation is durable before any byte goes to it (it reads as zeros until the
	 * second transaction marks it written). */
	if (mds_compound_txn_end(c) != 0 && rc == 0)
		rc = -EIO;
	if (rc) {
		io_finish(io, io_errno(rc));
		return;
	}
	io->next_ext = n;
	if (io_buf(io, (size_t)(io->b - io->a)))
		return;
	rmw_read_partials(io, n);
}

static void write_commit(struct mds_io *io)
{
	struct mds_compound *c = io->c;
	struct mds_server *srv = c->srv;
	struct mds_txn *t;
	int rc;

	if (io->err) {
		/* a LUN out of service was said once, loudly, when it went out */
		proto_log(io->err == -BLKMAP_EWRONGLUN ? PROTO_LOG_DEBUG : PROTO_LOG_ERROR, "file %llu: WRITE at %llu failed: %s",
			  (unsigned long long)io->fileid, (unsigned long long)io->off, io->where);
		io_finish(io, NFS4ERR_IO);
		return;
	}
	t = io_txn(io);
	if (!t)
		return;
	rc = mds_ext_set_state(t, io->fileid, io->a, io->b - io->a, MDS_EXT_RW);
	if (rc == 0)
		rc = mds_inode_note_write(t, io->fileid, io->off + io->len, NULL, NULL);
	if (rc) {
		LOG_ERROR("file %llu: WRITE at %llu: its blocks cannot be marked written: %s",
			  (unsigned long long)io->fileid, (unsigned long long)io->off, mds_store_strerror(rc));
		io_finish(io, io_errno(rc));
		return;
	}
	mds_compound_dirty(c);
	io->wok->count = io->len;
	/* Flushed data with its metadata committed before the reply is FILE_SYNC4 whatever was asked;
	 * otherwise the data may still be in a LUN's cache until COMMIT. */
	if (io->flushed) {
		io->wok->committed = FILE_SYNC4;
	} else {
		io->wok->committed = UNSTABLE4;
		note_unflushed(io);
	}
	memcpy(io->wok->writeverf, srv->write_verf, NFS4_VERIFIER_SIZE);
	io_finish(io, NFS4_OK);
}

/* A flush the engine would not start ends its phase at once, with the engine's reason. */
static void flush_not_started(struct mds_io *io, int rc)
{
	io->pending = 0;
	io->err = rc;
	snprintf(io->where, sizeof(io->where), "%s", blkmap_vol_errstr(io->c->srv->vol));
	io_step(io);
}

/* Phase 3 of a WRITE: flush the LUNs holding the blocks just written when the write must be stable
 * or filled blocks without data; the marking waits for it. */
static void write_flush(struct mds_io *io)
{
	struct mds_server *srv = io->c->srv;
	struct blkmap_range *r;
	size_t n = io->next_ext, k = 0;
	int fresh = 0, rc;

	io->phase = 3;
	if (io->err) {
		io_step(io);
		return;
	}
	for (size_t i = 0; i < n; i++)
		fresh |= !has_data(&io->ext[i]);
	if (io->stable == UNSTABLE4 && !fresh) {
		io_step(io);
		return;
	}
	r = calloc(n ? n : 1, sizeof(*r));
	if (!r) {
		io_finish(io, NFS4ERR_RESOURCE);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (io->ext[i].state == MDS_EXT_NONE)
			continue;
		r[k].off_bytes = io->ext[i].vol_off;
		r[k].len_bytes = io->ext[i].len;
		k++;
	}
	io->flushed = 1;
	io->pending = 1;
	rc = blkmap_vol_flush_ranges_async(srv->vol, r, k, on_engine, io);
	free(r);
	if (rc)
		flush_not_started(io, rc);
}

/* ---- COMMIT ---------------------------------------------------------------------------------- */

static uint64_t vol_logins(struct mds_server *srv)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < blkmap_vol_count(srv->vol); i++) {
		struct blkmap_dev *d = blkmap_vol_leaf_dev(srv->vol, i);
		if (d)
			n += blkmap_dev_logins(d);
	}
	return n;
}

_Static_assert(MDS_MAX_VOL_ENTRIES == BLKMAP_MAX_VOLUMES, "one mark per volume entry");

/* An MDS-path write left in the LUNs' caches: COMMIT has something to flush, on the leaves its
 * extents map to (all of them if the mapping fails). */
static void note_unflushed(struct mds_io *io)
{
	struct mds_server *srv = io->c->srv;
	unsigned nent = blkmap_vol_count(srv->vol);

	if (srv->data_unflushed_gen == srv->data_flushed_gen)
		srv->data_unflushed_logins = vol_logins(srv);
	srv->data_unflushed_gen++;
	for (size_t i = 0; i < io->next_ext; i++) {
		struct blkmap_run *runs = NULL;
		size_t nruns = 0;
		if (io->ext[i].state == MDS_EXT_NONE)
			continue;
		if (blkmap_vol_map(srv->vol, io->ext[i].vol_off, io->ext[i].len, &runs, &nruns) != 0) {
			for (unsigned k = 0; k < nent; k++)
				srv->data_unflushed_leaves[k] = (uint8_t)blkmap_vol_is_leaf(srv->vol, k);
			return;
		}
		for (size_t k = 0; k < nruns; k++)
			srv->data_unflushed_leaves[runs[k].leaf] = 1;
		free(runs);
	}
}

/* A new write verifier for this instance: the boot counter in the first half stays, the rest is new,
 * so clients holding UNSTABLE replies with the old one write their data again. */
static void new_write_verf(struct mds_server *srv)
{
	unsigned char rnd[4], old[NFS4_VERIFIER_SIZE];

	memcpy(old, srv->write_verf, sizeof(old));
	do {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			memcpy(rnd, &srv->data_unflushed_gen, sizeof(rnd));
		for (int i = 0; i < 4; i++)
			srv->write_verf[4 + i] ^= (unsigned char)(rnd[i] | (i == 3));
	} while (memcmp(old, srv->write_verf, sizeof(old)) == 0);
}

static void commit_start(struct mds_io *io)
{
	struct mds_server *srv = io->c->srv;
	int rc;

	if (srv->data_unflushed_gen == srv->data_flushed_gen) {
		/* every MDS-path write acknowledged so far was flushed */
		memcpy(io->cok->writeverf, srv->write_verf, NFS4_VERIFIER_SIZE);
		io_finish(io, NFS4_OK);
		return;
	}
	io->flush_gen = srv->data_unflushed_gen;
	io->flush_leaves = mds_arena_calloc(&io->c->arena, MDS_MAX_VOL_ENTRIES, 1);
	if (!io->flush_leaves) {
		io_finish(io, NFS4ERR_RESOURCE);
		return;
	}
	/* the LUNs written since the last flush; later writes mark them again */
	memcpy(io->flush_leaves, srv->data_unflushed_leaves, MDS_MAX_VOL_ENTRIES);
	memset(srv->data_unflushed_leaves, 0, MDS_MAX_VOL_ENTRIES);
	if (!memchr(io->flush_leaves, 1, MDS_MAX_VOL_ENTRIES)) {
		/* another COMMIT's flush, still running, took them: this one cannot wait for it, so it
		 * flushes every LUN itself */
		for (unsigned k = 0; k < blkmap_vol_count(srv->vol); k++)
			io->flush_leaves[k] = (uint8_t)blkmap_vol_is_leaf(srv->vol, k);
	}
	io->phase = 1;
	io->pending = 1;
	rc = blkmap_vol_flush_leaves_async(srv->vol, io->flush_leaves, on_engine, io);
	if (rc)
		flush_not_started(io, rc);
}

static void commit_done(struct mds_io *io)
{
	struct mds_server *srv = io->c->srv;

	if (io->err) {
		LOG_ERROR("file %llu: COMMIT: flushing the pool's LUNs failed: %s", (unsigned long long)io->fileid,
			  io->where);
		for (unsigned k = 0; k < MDS_MAX_VOL_ENTRIES; k++)
			srv->data_unflushed_leaves[k] |= io->flush_leaves[k]; /* still in their caches */
		io_finish(io, NFS4ERR_IO);
		return;
	}
	if (vol_logins(srv) != srv->data_unflushed_logins) {
		/* A LUN session was re-established after unflushed writes were acknowledged: the target
		 * may have restarted and dropped its cache with them. */
		new_write_verf(srv);
		LOG_WARN("pool %s: a LUN logged in again while MDS-path writes were not yet flushed; new write "
			 "verifier, clients write their uncommitted data again",
			 srv->cfg.pool);
	}
	if (io->flush_gen > srv->data_flushed_gen)
		srv->data_flushed_gen = io->flush_gen;
	if (srv->data_unflushed_gen != srv->data_flushed_gen)
		srv->data_unflushed_logins = vol_logins(srv);
	memcpy(io->cok->writeverf, srv->write_verf, NFS4_VERIFIER_SIZE);
	io_finish(io, NFS4_OK);
}

/* A size change: zero the tail of the block holding the new end of file if it has data there. */
static void setsize_start(struct mds_io *io)
{
	struct mds_compound *c = io->c;
	struct mds_server *srv = c->srv;
	uint32_t bs = srv->block_bytes;
	struct mds_inode ino;
	const struct mds_extent *e;
	size_t n = 0;
	int rc;

	if (!io_inode(io, &ino))
		return;
	io->off = io->sa.size;
	if (io->sa.size < ino.size && io->sa.size % bs) {
		io->a = floor_to(io->sa.size, bs);
		io->b = io->a + bs;
		rc = map_range(io, &n);
		if (rc) {
			io_finish(io, io_errno(rc));
			return;
		}
		e = ext_at(io, io->a, n);
		if (has_data(e)) {
			mds_compound_txn_end(c);
			io->next_ext = n;
			if (io_buf(io, bs))
				return;
			io->len = 0;
			io->phase = 1;
			io->pending = 1;
			submit_rw(io, 0, e->vol_off + (io->a - e->file_off), io->buf, bs);
			if (--io->pending == 0)
				io_step(io);
			return;
		}
	}
	io->phase = 3;
	io_step(io);
}

static void setsize_commit(struct mds_io *io)
{
	struct mds_compound *c = io->c;
	struct mds_server *srv = c->srv;
	struct mds_ranges freed = { 0 };
	struct mds_txn *t;
	uint64_t from;
	int rc;

	if (io->err) {
		LOG_ERROR("file %llu: zeroing past the new size %llu failed: %s", (unsigned long long)io->fileid,
			  (unsigned long long)io->sa.size, io->where);
		io_finish(io, NFS4ERR_IO);
		return;
	}
	t = io_txn(io);
	if (!t)
		return;
	if (io->next_ext)
		note_unflushed(io); /* the zeroed block went to the LUN's cache */
	if (io->sa.size < io->old_size)
		mds_lo_truncate(srv, io->f, io->sa.size);
	/* blocks leave from the first whole block past the new size */
	from = floor_to(io->sa.size, srv->block_bytes);
	rc = mds_inode_setattr(t, io->fileid, &io->sa, mds_lo_free_flags(srv, io->f, from), &freed, NULL);
	if (rc == 0) {
		mds_compound_dirty(c);
		if (freed.n)
			mds_lo_blocks_freed(srv, io->fileid, from, &freed);
	}
	mds_ranges_free(&freed);
	io_finish(io, rc ? io_errno(rc) : NFS4_OK);
}

/* Advance an operation after its outstanding requests completed. */
static void io_step(struct mds_io *io)
{
	switch (io->kind) {
	case IO_READ:
		read_done(io);
		return;
	case IO_WRITE:
		if (io->phase == 1)
			rmw_write(io);
		else if (io->phase == 2)
			write_flush(io);
		else
			write_commit(io);
		return;
	case IO_COMMIT:
		commit_done(io);
		return;
	case IO_SETSIZE:
		if (io->phase == 1)
			rmw_write(io);
		else
			setsize_commit(io);
		return;
	}
}

static void io_start(struct mds_io *io)
{
	switch (io->kind) {
	case IO_READ:
		read_start(io);
		break;
	case IO_WRITE:
		write_start(io);
		break;
	case IO_SETSIZE:
		setsize_start(io);
		break;
	case IO_COMMIT:
		commit_start(io);
		break;
	}
}

/* A new operation of kind on fileid in *out, or why not: no volume to do it on (a SETSIZE goes on
 * without), no memory. */
static nfsstat4 io_new(struct mds_compound *c, enum io_kind kind, uint64_t fileid, struct mds_io **out)
{
	struct mds_io *io;

	if (!c->srv->vol && kind != IO_SETSIZE)
		return NFS4ERR_IO;
	io = mds_arena_calloc(&c->arena, 1, sizeof(*io));
	if (!io)
		return NFS4ERR_RESOURCE;
	io->kind = kind;
	io->c = c;
	io->fileid = fileid;
	*out = io;
	return NFS4_OK;
}

nfsstat4 mds_data_read(struct mds_compound *c, uint64_t fileid, uint64_t offset, uint32_t count, READ4resok *ok)
{
	struct mds_io *io;
	nfsstat4 st = io_new(c, IO_READ, fileid, &io);

	if (st)
		return st;
	io->off = offset;
	io->len = count;
	io->rok = ok;
	return io_submit(io);
}

nfsstat4 mds_data_write(struct mds_compound *c, uint64_t fileid, uint64_t offset, const void *data, uint32_t len,
			stable_how4 stable, WRITE4resok *ok)
{
	struct mds_io *io;
	nfsstat4 st = io_new(c, IO_WRITE, fileid, &io);

	if (st)
		return st;
	if (len > MDS_MAX_IO_BYTES)
		len = MDS_MAX_IO_BYTES; /* a short write: the client sends the rest */
	if (offset > (uint64_t)NFS4_INT64_MAX - len)
		return NFS4ERR_FBIG;
	io->off = offset;
	io->len = len;
	io->data = data;
	io->stable = stable;
	io->wok = ok;
	return io_submit(io);
}

nfsstat4 mds_data_setattr_size(struct mds_compound *c, const struct mds_inode *ino, const struct mds_setattr *sa)
{
	struct mds_io *io;
	nfsstat4 st;

	if (sa->size > (uint64_t)NFS4_INT64_MAX)
		return NFS4ERR_FBIG;
	st = io_new(c, IO_SETSIZE, ino->fileid, &io);
	if (st)
		return st;
	io->sa = *sa;
	if (!c->srv->vol) {
		/* No volume (cannot happen in a running server): change the inode only. */
		int rc = mds_inode_setattr(c->txn, ino->fileid, sa, 0, NULL, NULL);
		if (rc == 0)
			mds_compound_dirty(c);
		return mds_errno_to_nfs(rc);
	}
	return io_submit(io);
}

nfsstat4 mds_data_commit(struct mds_compound *c, uint64_t fileid, COMMIT4resok *ok)
{
	struct mds_io *io;
	nfsstat4 st = io_new(c, IO_COMMIT, fileid, &io);

	if (st)
		return st;
	io->cok = ok;
	return io_submit(io);
}
