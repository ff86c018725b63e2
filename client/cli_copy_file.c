/* One file's copy for the pnfs command: both ends opened (a server's file, a local file, standard
 * input or output), a temporary beside the destination renamed over it only once the copy is
 * complete and durable, a second pass when written bytes may have been lost, and the ends closed.
 * The bytes are moved by the engine (client/cli_copy.c). */
#include "client/cli_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* One file's copy: the engine's state and what the steps around it need. */
struct file_copy {
	struct copy cp;
	const struct loc *src, *dst; /* dst: the argument, or through (a local link's target) */
	struct loc through;
	char tmp[4400];              /* the temporary's name, when have_tmp */
	int have_tmp;
	uint32_t src_mode, dst_mode;
	const char *name;            /* for the progress line */
};

/* End e of the copy is on the server l names. */
static struct end *on_server(struct end *e, const struct loc *l)
{
	e->remote = 1;
	e->ctx = l->ctx;
	return e;
}

/* Open a file on a server to copy from; its size and mode when fstat says them. */
static int open_remote_source(struct file_copy *fc)
{
	struct end *e = on_server(&fc->cp.src, fc->src);
	struct pnfs_stat st;
	int rc = pnfs_open(e->ctx, fc->src->path, O_RDONLY, 0, &e->fh);

	if (rc < 0) {
		fprintf(stderr, "pnfs: %s\n", pnfs_get_error(e->ctx));
		return rc;
	}
	if (pnfs_fstat(e->ctx, e->fh, &st) == 0) {
		fc->cp.size = st.size;
		fc->src_mode = st.mode & 07777;
	}
	return 0;
}

/* The alignment fd's file system needs for O_DIRECT (offsets, lengths and buffers alike), or 0 when
 * it does no direct I/O or needs more than a chunk gives (the chunks start on huge-page boundaries
 * and are whole MiB: any power of two up to that fits). */
static size_t dio_align(int fd)
{
	struct statx sx;
	size_t align;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) < 0 || !(sx.stx_mask & STATX_DIOALIGN) ||
	    !sx.stx_dio_offset_align || !sx.stx_dio_mem_align)
		return 0;
	align = sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
	return align & (align - 1) || align > CHUNK_BYTES ? 0 : align;
}

/* A local regular source on a file system that does direct I/O (statx STATX_DIOALIGN) is opened a
 * second time with O_DIRECT: the I/O thread reads a chunk of which the page cache holds nothing
 * (cachestat) from the disk straight into the chunk, and others through the page cache, without
 * filling the page cache with a file the copy reads once. */
static void plan_source_direct(struct copy *cp, const char *path, const struct stat *st)
{
	struct stat ds;
	size_t align;
	int fd;

	align = dio_align(cp->src.fd);
	if (!align)
		return;
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return;
	/* the same file, not one renamed over it meanwhile */
	if (fstat(fd, &ds) < 0 || ds.st_dev != st->st_dev || ds.st_ino != st->st_ino) {
		close(fd);
		return;
	}
	cp->src.dio_fd = fd;
	cp->src.dio_align = align;
	/* no read-ahead through the page cache of what the direct reads will read */
	(void)posix_fadvise(cp->src.fd, 0, 0, POSIX_FADV_RANDOM);
}

/* Open a local file to copy from: a regular file (its size known), or a FIFO, terminal or character
 * device read in turn to its end; a directory is refused. */
static int open_local_source(struct file_copy *fc)
{
	struct copy *cp = &fc->cp;
	const struct loc *src = fc->src;
	struct stat st;
	int rc;

	cp->src.fd = open(src->path, O_RDONLY | O_CLOEXEC);
	if (cp->src.fd < 0) {
		rc = -errno;
		fprintf(stderr, "pnfs: %s: %s\n", src->shown, strerror(errno));
		return rc;
	}
	if (fstat(cp->src.fd, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "pnfs: %s: is a directory (-r copies a tree)\n", src->shown);
		close(cp->src.fd);
		cp->src.fd = -1;
		return -EISDIR;
	}
	fc->src_mode = st.st_mode & 07777;
	if (S_ISREG(st.st_mode)) {
		cp->size = (uint64_t)st.st_size;
		cp->src.known_size = 1;
		plan_source_direct(cp, src->path, &st);
	} else {
		cp->src.stream = 1;
	}
	return 0;
}

/* The source of the copy: a server's file, standard input ("-") or a local file. 0 or -errno (said);
 * on failure nothing is left open. */
static int open_source(struct file_copy *fc)
{
	if (fc->src->remote)
		return open_remote_source(fc);
	if (strcmp(fc->src->path, "-") == 0) {
		fc->cp.src.fd = 0;
		fc->cp.src.stream = 1;
		return 0;
	}
	return open_local_source(fc);
}

/* Open the destination on a server: the temporary beside it (--inplace: the file itself). A file
 * replaced keeps its mode; the source itself is refused as a destination. */
static int open_remote_dest(struct file_copy *fc)
{
	struct copy *cp = &fc->cp;
	const struct loc *dst = fc->dst;
	struct pnfs_stat st;
	int rc;

	on_server(&cp->dst, dst);
	if (pnfs_stat(dst->ctx, dst->path, &st) == 0) {
		if (st.type == PNFS_REG)
			fc->dst_mode = st.mode & 07777; /* a file replaced keeps its mode */
		if (fc->src->remote && same_remote_file(cp->src.fh, dst)) {
			fprintf(stderr, "pnfs: %s and %s are the same file: not copied\n", fc->src->shown, dst->shown);
			return -EINVAL;
		}
	}
	if (cli.inplace) {
		rc = pnfs_open(dst->ctx, dst->path, O_WRONLY | O_CREAT | O_TRUNC, fc->dst_mode, &cp->dst.fh);
		if (rc < 0)
			fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx));
		return rc;
	}
	rc = remote_tmp_open(dst, fc->dst_mode | 0600, fc->tmp, sizeof(fc->tmp), &cp->dst.fh);
	fc->have_tmp = rc == 0;
	return rc;
}

/* A local destination that is a link to a regular file: the file is replaced and the link kept, as
 * cp writes through it (fc->dst then names the file). */
static void follow_local_link(struct file_copy *fc)
{
	struct stat st;
	char *real;

	if (lstat(fc->dst->path, &st) == 0 && S_ISLNK(st.st_mode) && stat(fc->dst->path, &st) == 0 &&
	    S_ISREG(st.st_mode) && (real = realpath(fc->dst->path, NULL))) {
		fc->through = *fc->dst;
		snprintf(fc->through.path, sizeof(fc->through.path), "%s", real);
		free(real);
		fc->dst = &fc->through;
	}
}

/* A local regular destination is written with O_DIRECT where its file system says it can do direct
 * I/O (statx STATX_DIOALIGN: ext4, XFS, btrfs, f2fs; Linux 6.1+): the chunks go from the copy's
 * buffers to the device, with no copy into the page cache, no fresh page-cache pages and no
 * write-back of them at the fsync. tmpfs, ramfs, FUSE and NFS say nothing (tmpfs's O_DIRECT is a
 * buffered copy anyway) and are written through the page cache. */
static void plan_direct(struct copy *cp)
{
	size_t align;
	int fl;

	cp->dst.dio_align = 0;
	align = dio_align(cp->dst.fd);
	if (!align)
		return;
	/* it may still refuse it: then nothing changes */
	fl = fcntl(cp->dst.fd, F_GETFL);
	if (fl < 0 || fcntl(cp->dst.fd, F_SETFL, fl | O_DIRECT) < 0)
		return;
	(void)fcntl(cp->dst.fd, F_SETFL, fl);
	cp->dst.dio_align = align;
}

/* Open a local destination: standard output ("-"), the file itself (--inplace, a device, a FIFO) or
 * a temporary beside it. Anything but a regular file is written in order. */
static int open_local_dest(struct file_copy *fc)
{
	struct copy *cp = &fc->cp;
	struct stat st;
	int direct = cli.inplace, rc;

	if (strcmp(fc->dst->path, "-") == 0) {
		cp->dst.fd = 1;
		cp->sequential = 1;
		return 0;
	}
	if (!direct)
		follow_local_link(fc);
	if (stat(fc->dst->path, &st) == 0) {
		if (S_ISREG(st.st_mode))
			fc->dst_mode = st.st_mode & 07777;
		else
			direct = 1; /* a device or FIFO is written, not replaced */
	}
	if (direct) {
		cp->dst.fd = open(fc->dst->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fc->dst_mode);
		if (cp->dst.fd < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", fc->dst->shown, strerror(errno));
			return rc;
		}
	} else {
		cp->dst.fd = local_tmp_open(fc->dst, fc->tmp, sizeof(fc->tmp));
		if (cp->dst.fd < 0)
			return -EIO;
		fc->have_tmp = 1;
	}
	if (fstat(cp->dst.fd, &st) == 0 && !S_ISREG(st.st_mode))
		cp->sequential = 1;
	else
		plan_direct(cp);
	return 0;
}

/* Run the copy and make a server's destination durable. When its fsync fails, written bytes may be
 * lost: writes through a layout whose SAN path then failed could not be committed (the file now goes
 * through the MDS), or the server restarted and they could not be reclaimed (the open not reclaimed
 * in its grace period). A source that can be read again is then copied again, whole, once. */
static int copy_durably(struct file_copy *fc)
{
	struct copy *cp = &fc->cp;
	const struct loc *dst = fc->dst;
	int rc, again;

	cli_copy_plan_sparse(cp);
	rc = cli_copy_pass(cp, fc->name);
	if (rc < 0 || !cp->dst.remote || pnfs_fsync(cp->dst.ctx, cp->dst.fh) == 0)
		return rc;
	again = cp->src.remote || cp->src.known_size;
	fprintf(stderr, "pnfs: %s: %s%s\n", dst->shown, pnfs_get_error(cp->dst.ctx),
		!again ? "" : *pnfs_fh_mds_reason(cp->dst.fh) ? "; copying again through the MDS" : "; copying again");
	if (!again)
		return -EIO;
	cli_copy_reset(cp);
	rc = cli_copy_pass(cp, fc->name);
	if (rc == 0 && pnfs_fsync(cp->dst.ctx, cp->dst.fh) < 0) {
		fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(cp->dst.ctx));
		rc = -EIO;
	}
	return rc;
}

/* After the bytes: holes at the end were not written, so the size says where the file ends; a local
 * temporary gets the destination's mode and is made durable; an interrupted copy fails here. */
static int finish_dest(struct file_copy *fc)
{
	struct copy *cp = &fc->cp;
	const struct loc *dst = fc->dst;

	if ((cp->holes || cp->skip_zeros || cp->io.padded || cp->prealloc) && cp->size != UINT64_MAX) {
		if (!cp->dst.remote && ftruncate(cp->dst.fd, (off_t)cp->size) < 0) {
			int rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", fc->have_tmp ? fc->tmp : dst->shown, strerror(errno));
			return rc;
		}
		if (cp->dst.remote && cp->wend < cp->size && pnfs_ftruncate(cp->dst.ctx, cp->dst.fh, cp->size) < 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(cp->dst.ctx));
			return -EIO;
		}
	}
	if (fc->have_tmp && !cp->dst.remote && (fchmod(cp->dst.fd, fc->dst_mode) < 0 || fsync(cp->dst.fd) < 0)) {
		int rc = -errno;
		fprintf(stderr, "pnfs: %s: %s\n", fc->tmp, strerror(errno));
		return rc;
	}
	if (cli_stop_signal) {
		fprintf(stderr, "pnfs: %s: interrupted\n", dst->shown);
		return -EINTR;
	}
	return 0;
}

/* Close both ends; a failed close of the destination fails a copy that had not failed yet. */
static int close_ends(struct file_copy *fc, int rc)
{
	struct copy *cp = &fc->cp;
	const struct loc *dst = fc->dst;

	if (cp->dst.remote && cp->dst.fh) {
		if (pnfs_close(cp->dst.ctx, cp->dst.fh) < 0 && rc == 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(cp->dst.ctx));
			rc = -EIO;
		}
	} else if (cp->dst.fd > 1) {
		if (close(cp->dst.fd) < 0 && rc == 0) {
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(errno));
			rc = -EIO;
		}
	}
	free(cp->hole);
	if (cp->src.dio_fd >= 0)
		close(cp->src.dio_fd);
	if (cp->src.remote && cp->src.fh)
		pnfs_close(cp->src.ctx, cp->src.fh);
	else if (cp->src.fd > 0)
		close(cp->src.fd);
	return rc;
}

/* The temporary takes the destination's place once the copy succeeded (its bytes are durable under
 * the temporary name), and is removed once it failed: the destination itself was never touched. */
static int settle_tmp(struct file_copy *fc, int rc)
{
	const struct loc *dst = fc->dst;
	int remote = fc->cp.dst.remote;

	if (!fc->have_tmp)
		return rc;
	if (rc == 0) {
		if (remote) {
			if ((fc->dst_mode & 0600) != 0600 && pnfs_chmod(dst->ctx, fc->tmp, fc->dst_mode) < 0)
				fprintf(stderr, "pnfs: %s: %s\n", dst->shown, pnfs_get_error(dst->ctx)), rc = -EIO;
			else if (pnfs_rename(dst->ctx, fc->tmp, dst->path) < 0)
				fprintf(stderr, "pnfs: %s\n", pnfs_get_error(dst->ctx)), rc = -EIO;
		} else if (rename(fc->tmp, dst->path) < 0) {
			rc = -errno;
			fprintf(stderr, "pnfs: %s: %s\n", dst->shown, strerror(errno));
		}
	}
	if (rc < 0) {
		/* best effort */
		if (remote ? pnfs_unlink(dst->ctx, fc->tmp) < 0 : unlink(fc->tmp) < 0)
			fprintf(stderr, "pnfs: %s: cannot remove the temporary copy: %s\n", fc->tmp,
				remote ? pnfs_get_error(dst->ctx) : strerror(errno));
	}
	return rc;
}

/* Copy one file (a regular file or a stream) to the file dst names. The destination is written under a
 * temporary name beside it and renamed over it only when all its bytes are durable (--inplace: written
 * directly). 0 or -errno; failures are said on stderr. */
int cli_copy_file(const struct loc *src, const struct loc *dst)
{
	struct file_copy fc;
	int rc;

	memset(&fc, 0, sizeof(fc));
	fc.src = src;
	fc.dst = dst;
	fc.src_mode = 0666;
	fc.name = cli_base_name(src->path);
	fc.cp.src.fd = fc.cp.dst.fd = -1;
	fc.cp.src.dio_fd = fc.cp.dst.dio_fd = -1;
	fc.cp.size = UINT64_MAX;
	fc.cp.src.name = src->shown;
	fc.cp.dst.name = dst->shown;
	rc = open_source(&fc);
	if (rc < 0)
		return rc;
	fc.dst_mode = fc.src_mode & ~(uint32_t)cli_umask_now();
	rc = dst->remote ? open_remote_dest(&fc) : open_local_dest(&fc);
	if (rc == 0)
		rc = copy_durably(&fc);
	if (rc == 0)
		rc = finish_dest(&fc);
	rc = close_ends(&fc, rc);
	return settle_tmp(&fc, rc);
}
