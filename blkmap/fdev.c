/* Local leaves: block devices (O_DIRECT, sizes from the kernel, SCSI identity from sysfs, persistent
 * reservations through the kernel's IOC_PR_* ioctls and SG_IO) and regular files (buffered; for tools
 * and tests). Their I/O runs in the context's worker pool, because a read or write on an O_DIRECT
 * block device blocks its thread for the whole transfer and cannot be polled for readiness. */
#include "blkmap/internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/pr.h>
#include <scsi/sg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

/* ---- identity from sysfs ---------------------------------------------------------------------- */

static ssize_t read_sysfs(const char *dir, const char *name, uint8_t *buf, size_t len)
{
	char path[600];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	close(fd);
	return n < 0 ? -errno : n;
}

static void sysfs_str(const char *dir, const char *name, char *out, size_t outlen)
{
	uint8_t buf[256];
	ssize_t n = read_sysfs(dir, name, buf, sizeof(buf) - 1);
	size_t s = 0, e;

	out[0] = 0;
	if (n <= 0)
		return;
	e = (size_t)n;
	while (s < e && (buf[s] == ' ' || buf[s] == '\n'))
		s++;
	while (e > s && (buf[e - 1] == ' ' || buf[e - 1] == '\n'))
		e--;
	if (e - s >= outlen)
		e = s + outlen - 1;
	memcpy(out, buf + s, e - s);
	out[e - s] = 0;
}

static void block_identity(struct blkmap_dev *dev)
{
	char dir[300];
	uint8_t *buf = malloc(4096);
	char type[16];
	ssize_t n;

	if (!buf)
		return;
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u/device", major(dev->rdev), minor(dev->rdev));
	if (access(dir, F_OK) != 0)
		goto out; /* loop and dm devices have no SCSI identity */
	memset(&dev->inq, 0, sizeof(dev->inq));
	sysfs_str(dir, "vendor", dev->inq.vendor, sizeof(dev->inq.vendor));
	sysfs_str(dir, "model", dev->inq.product, sizeof(dev->inq.product));
	sysfs_str(dir, "rev", dev->inq.revision, sizeof(dev->inq.revision));
	sysfs_str(dir, "type", type, sizeof(type));
	dev->inq.device_type = (uint8_t)atoi(type);
	n = read_sysfs(dir, "vpd_pg80", buf, 4096);
	if (n > 0)
		bm_parse_vpd80(buf, (uint32_t)n, &dev->inq);
	n = read_sysfs(dir, "vpd_pg83", buf, 4096);
	if (n > 0)
		bm_parse_vpd83(buf, (uint32_t)n, &dev->inq);
	dev->have_inq = 1;
out:
	free(buf);
}

int bm_fdev_open(struct blkmap_dev *dev, const char *path, unsigned flags)
{
	struct blkmap_ctx *ctx = dev->ctx;
	struct stat st;
	int oflags, fd;

	snprintf(dev->name, sizeof(dev->name), "%s", path);
	if (stat(path, &st) != 0)
		return bm_err(ctx, -errno, "%s: %s", path, strerror(errno));
	if (S_ISBLK(st.st_mode))
		dev->kind = BLKMAP_DEV_BLOCK;
	else if (S_ISREG(st.st_mode))
		dev->kind = BLKMAP_DEV_FILE;
	else
		return bm_err(ctx, -ENOTBLK, "%s: neither a block device nor a regular file (nor an iscsi:// URL)",
			      path);
	oflags = O_CLOEXEC | ((flags & BLKMAP_OPEN_RDONLY) ? O_RDONLY : O_RDWR);
	fd = open(path, oflags | (dev->kind == BLKMAP_DEV_BLOCK ? O_DIRECT : 0));
	if (fd < 0 && errno == EINVAL && dev->kind == BLKMAP_DEV_BLOCK)
		fd = open(path, oflags);
	else if (fd >= 0 && dev->kind == BLKMAP_DEV_BLOCK)
		dev->direct = 1;
	if (fd < 0 && (errno == EACCES || errno == EROFS) && !(flags & BLKMAP_OPEN_RDONLY)) {
		fd = open(path, O_CLOEXEC | O_RDONLY | (dev->kind == BLKMAP_DEV_BLOCK ? O_DIRECT : 0));
		dev->readonly = 1;
	}
	if (fd < 0)
		return bm_err(ctx, -errno, "%s: %s", path, strerror(errno));
	dev->fd = fd;
	if (dev->kind == BLKMAP_DEV_BLOCK) {
		uint64_t size = 0;
		int ssz = 512;
		dev->rdev = st.st_rdev;
		if (ioctl(fd, BLKGETSIZE64, &size) != 0)
			return bm_err(ctx, -errno, "%s: BLKGETSIZE64: %s", path, strerror(errno));
		if (ioctl(fd, BLKSSZGET, &ssz) != 0 || ssz < 512)
			ssz = 512;
		dev->size_bytes = size;
		dev->block_bytes = (uint32_t)ssz;
		block_identity(dev);
	} else {
		dev->block_bytes = BM_SECTOR_BYTES;
		dev->size_bytes = (uint64_t)st.st_size - (uint64_t)st.st_size % BM_SECTOR_BYTES;
	}
	return 0;
}

/* ---- the work itself (runs in a worker) --------------------------------------------------------- */

static int aligned_for_direct(const struct bm_cmd *c)
{
	uint32_t a = c->dev->block_bytes;
	for (int i = 0; i < c->niov; i++) {
		if ((uintptr_t)c->iov[i].iov_base % a || c->iov[i].iov_len % a)
			return 0;
	}
	return 1;
}

static int full_rw(int fd, int write, struct iovec *iov, int niov, uint64_t off, uint64_t total)
{
	uint64_t done = 0;

	while (done < total) {
		ssize_t n = write ? pwritev(fd, iov, niov, (off_t)(off + done)) : preadv(fd, iov, niov, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (uint64_t)n;
		/* advance the iovec array past what was transferred */
		while (niov > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			niov--;
		}
		if (niov > 0 && n > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static void do_rw(struct bm_cmd *c)
{
	struct blkmap_dev *dev = c->dev;
	int write = c->op == BM_OP_WRITE;
	uint64_t off = c->lba * dev->block_bytes;
	int rc;

	if (dev->direct && !aligned_for_direct(c)) {
		/* O_DIRECT wants aligned memory: go through an aligned bounce buffer */
		void *b = NULL;
		struct iovec one;
		if (posix_memalign(&b, 4096, c->bytes) != 0) {
			c->status = -ENOMEM;
			snprintf(c->msg, sizeof(c->msg), "%s: out of memory for a bounce buffer", dev->name);
			return;
		}
		if (write) {
			size_t o = 0;
			for (int i = 0; i < c->niov; i++) {
				memcpy((char *)b + o, c->iov[i].iov_base, c->iov[i].iov_len);
				o += c->iov[i].iov_len;
			}
		}
		one.iov_base = b;
		one.iov_len = c->bytes;
		rc = full_rw(dev->fd, write, &one, 1, off, c->bytes);
		if (rc == 0 && !write) {
			size_t o = 0;
			for (int i = 0; i < c->niov; i++) {
				memcpy(c->iov[i].iov_base, (char *)b + o, c->iov[i].iov_len);
				o += c->iov[i].iov_len;
			}
		}
		free(b);
	} else {
		struct iovec *v = malloc((size_t)c->niov * sizeof(*v));
		if (!v) {
			c->status = -ENOMEM;
			snprintf(c->msg, sizeof(c->msg), "%s: out of memory", dev->name);
			return;
		}
		for (int i = 0; i < c->niov; i++) {
			v[i].iov_base = c->iov[i].iov_base;
			v[i].iov_len = c->iov[i].iov_len;
		}
		rc = full_rw(dev->fd, write, v, c->niov, off, c->bytes);
		free(v);
	}
	c->status = rc;
	if (rc < 0)
		snprintf(c->msg, sizeof(c->msg), "%s: %s LBA %" PRIu64 "+%u: %s", dev->name, write ? "write" : "read",
			 c->lba, c->nblocks, rc == -EIO ? "unexpected end of device" : strerror(-rc));
}

static int kernel_pr_type(enum blkmap_pr_type t)
{
	switch (t) {
	case BLKMAP_PR_WRITE_EXCLUSIVE:
		return PR_WRITE_EXCLUSIVE;
	case BLKMAP_PR_EXCLUSIVE_ACCESS:
		return PR_EXCLUSIVE_ACCESS;
	case BLKMAP_PR_WRITE_EXCLUSIVE_REG_ONLY:
		return PR_WRITE_EXCLUSIVE_REG_ONLY;
	case BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY:
		return PR_EXCLUSIVE_ACCESS_REG_ONLY;
	case BLKMAP_PR_WRITE_EXCLUSIVE_ALL_REGS:
		return PR_WRITE_EXCLUSIVE_ALL_REGS;
	case BLKMAP_PR_EXCLUSIVE_ACCESS_ALL_REGS:
		return PR_EXCLUSIVE_ACCESS_ALL_REGS;
	}
	return 0;
}

static void do_prout(struct bm_cmd *c)
{
	const struct blkmap_pr_out *a = &c->prout;
	int rc;

	switch (a->action) {
	case BLKMAP_PR_REGISTER:
	case BLKMAP_PR_REGISTER_AND_IGNORE: {
		struct pr_registration r = { .old_key = a->key, .new_key = a->sa_key,
					     .flags = a->action == BLKMAP_PR_REGISTER_AND_IGNORE ? PR_FL_IGNORE_KEY : 0 };
		rc = ioctl(c->dev->fd, IOC_PR_REGISTER, &r);
		break;
	}
	case BLKMAP_PR_RESERVE:
	case BLKMAP_PR_RELEASE: {
		struct pr_reservation r = { .key = a->key, .type = (uint32_t)kernel_pr_type(a->type) };
		rc = ioctl(c->dev->fd, a->action == BLKMAP_PR_RESERVE ? IOC_PR_RESERVE : IOC_PR_RELEASE, &r);
		break;
	}
	case BLKMAP_PR_PREEMPT:
	case BLKMAP_PR_PREEMPT_AND_ABORT: {
		struct pr_preempt p = { .old_key = a->key, .new_key = a->sa_key, .type = (uint32_t)kernel_pr_type(a->type) };
		rc = ioctl(c->dev->fd, a->action == BLKMAP_PR_PREEMPT ? IOC_PR_PREEMPT : IOC_PR_PREEMPT_ABORT, &p);
		break;
	}
	case BLKMAP_PR_CLEAR: {
		struct pr_clear p = { .key = a->key };
		rc = ioctl(c->dev->fd, IOC_PR_CLEAR, &p);
		break;
	}
	default:
		rc = -1;
		errno = EINVAL;
	}
	if (rc == 0) {
		c->status = 0;
		return;
	}
	if (rc > 0) {
		/* the kernel returns the SCSI status byte when the target refused */
		c->status = rc == SCSI_STATUS_RESERVATION_CONFLICT ? -EBADE : -EIO;
		snprintf(c->msg, sizeof(c->msg), "%s: PERSISTENT RESERVE OUT: %s", c->dev->name,
			 rc == SCSI_STATUS_RESERVATION_CONFLICT ? "RESERVATION CONFLICT" : "SCSI error");
		return;
	}
	c->status = (errno == ENOTTY || errno == EOPNOTSUPP) ? -EOPNOTSUPP : -errno;
	snprintf(c->msg, sizeof(c->msg), "%s: PERSISTENT RESERVE OUT: %s", c->dev->name,
		 c->status == -EOPNOTSUPP ? "the kernel has no persistent reservation support for this device"
					  : strerror(errno));
}

static void do_sgio(struct bm_cmd *c)
{
	struct sg_io_hdr h;
	uint8_t sense[64];
	char why[200];
	int retry, key = 0, ascq = 0;

	memset(&h, 0, sizeof(h));
	memset(sense, 0, sizeof(sense));
	h.interface_id = 'S';
	h.cmdp = c->cdb;
	h.cmd_len = (unsigned char)c->cdb_len;
	h.dxfer_direction = c->dir == 1 ? SG_DXFER_FROM_DEV : c->dir == 2 ? SG_DXFER_TO_DEV : SG_DXFER_NONE;
	h.dxferp = c->dbuf;
	h.dxfer_len = c->dlen;
	h.sbp = sense;
	h.mx_sb_len = sizeof(sense);
	h.timeout = c->dev->ctx->timeout_ms;
	if (ioctl(c->dev->fd, SG_IO, &h) != 0) {
		c->status = (errno == ENOTTY || errno == EINVAL) ? -EOPNOTSUPP : -errno;
		snprintf(c->msg, sizeof(c->msg), "%s: %s: %s", c->dev->name, bm_op_name(c),
			 c->status == -EOPNOTSUPP ? "the device takes no SCSI commands (SG_IO)" : strerror(errno));
		return;
	}
	if (h.sb_len_wr >= 14 && (sense[0] & 0x7f) <= 0x71) {
		key = sense[2] & 0x0f;
		ascq = sense[12] << 8 | sense[13];
	} else if (h.sb_len_wr >= 4) {
		key = sense[1] & 0x0f;
		ascq = sense[2] << 8 | sense[3];
	}
	if (h.host_status || (h.driver_status & ~0x08 /* DRIVER_SENSE */)) {
		c->status = -EIO;
		snprintf(c->msg, sizeof(c->msg), "%s: %s: transport error (host 0x%x, driver 0x%x)", c->dev->name,
			 bm_op_name(c), h.host_status, h.driver_status);
		return;
	}
	c->status = bm_scsi_status(h.status, key, ascq, why, sizeof(why), &retry);
	if (c->status < 0)
		snprintf(c->msg, sizeof(c->msg), "%s: %s: %s", c->dev->name, bm_op_name(c), why);
	c->dgot = c->dlen - (uint32_t)(h.resid > 0 ? h.resid : 0);
}

/* fdatasync: for a block device the kernel writes its cache out with a FLUSH (SYNCHRONIZE CACHE on
 * SCSI disks); for a file the page cache goes to the file system, which flushes its own device. */
static void do_flush(struct bm_cmd *c)
{
	int rc;

	do
		rc = fdatasync(c->dev->fd);
	while (rc != 0 && errno == EINTR);
	c->status = rc == 0 ? 0 : -errno;
	if (rc != 0)
		snprintf(c->msg, sizeof(c->msg), "%s: fdatasync: %s", c->dev->name, strerror(errno));
}

static void run_cmd(struct bm_cmd *c)
{
	switch (c->op) {
	case BM_OP_READ:
	case BM_OP_WRITE:
		do_rw(c);
		break;
	case BM_OP_PROUT:
		do_prout(c);
		break;
	case BM_OP_CDB:
		do_sgio(c);
		break;
	case BM_OP_FLUSH:
		do_flush(c);
		break;
	}
}

/* ---- the pool --------------------------------------------------------------------------------- */

/* Append c to a pool list. */
static void cmd_append(struct bm_cmd **head, struct bm_cmd **tail, struct bm_cmd *c)
{
	c->next = NULL;
	if (*tail)
		(*tail)->next = c;
	else
		*head = c;
	*tail = c;
}

static void *worker(void *arg)
{
	struct blkmap_ctx *ctx = arg;
	struct bm_pool *p = &ctx->pool;
	uint64_t one = 1;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct bm_cmd *c;
		while (!p->stop && !p->todo_head)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->todo_head)
			break;
		c = p->todo_head;
		p->todo_head = c->next;
		if (!p->todo_head)
			p->todo_tail = NULL;
		c->next = NULL;
		c->dev->pool_running++;
		pthread_mutex_unlock(&p->lock);
		run_cmd(c);
		pthread_mutex_lock(&p->lock);
		c->dev->pool_running--;
		cmd_append(&p->done_head, &p->done_tail, c);
		pthread_cond_broadcast(&p->done_cond);
		if (write(p->evfd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow in practice; nothing to do */
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int pool_start(struct blkmap_ctx *ctx)
{
	struct bm_pool *p = &ctx->pool;
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t all, old;

	p->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->evfd < 0)
		return -errno;
	ctx->pool_src = (struct bm_src){ BM_SRC_POOL, ctx };
	ev.data.ptr = &ctx->pool_src;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, p->evfd, &ev) != 0) {
		int rc = -errno;
		close(p->evfd);
		p->evfd = -1;
		return rc;
	}
	p->threads = calloc(ctx->nworkers, sizeof(*p->threads));
	if (!p->threads)
		return -ENOMEM;
	/* the workers take no signals: the application's are for its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < ctx->nworkers; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, ctx) != 0)
			break;
		p->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (p->nthreads == 0)
		return -EAGAIN;
	p->started = 1;
	return 0;
}

int bm_pool_submit(struct blkmap_ctx *ctx, struct bm_cmd *c)
{
	struct bm_pool *p = &ctx->pool;

	if (!p->started) {
		int rc = pool_start(ctx);
		if (rc < 0 && p->nthreads == 0) {
			c->dev->inflight--;
			c->on_list = 0;
			bm_cmd_finish(c, rc, "%s: cannot start I/O worker threads: %s", c->dev->name, strerror(-rc));
			return rc;
		}
		p->started = 1;
	}
	pthread_mutex_lock(&p->lock);
	cmd_append(&p->todo_head, &p->todo_tail, c);
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static struct bm_cmd *pop_done(struct bm_pool *p)
{
	struct bm_cmd *c;
	pthread_mutex_lock(&p->lock);
	c = p->done_head;
	if (c) {
		p->done_head = c->next;
		if (!p->done_head)
			p->done_tail = NULL;
		c->next = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	return c;
}

static void complete_pool_cmd(struct bm_cmd *c)
{
	struct blkmap_dev *dev = c->dev;
	dev->inflight--;
	c->on_list = 0;
	bm_cmd_finish(c, c->status, NULL);
	if (dev->refs > 0)
		bm_dev_dispatch(dev);
}

void bm_pool_service(struct blkmap_ctx *ctx)
{
	struct bm_pool *p = &ctx->pool;
	uint64_t n;
	struct bm_cmd *c;

	if (read(p->evfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	while ((c = pop_done(p)))
		complete_pool_cmd(c);
}

/* Move dev's commands from the pool list at *head (whose *tail is set again) to the chain *out, in
 * their order. */
static void take_dev_cmds(struct bm_cmd **head, struct bm_cmd **tail, const struct blkmap_dev *dev,
			  struct bm_cmd **out)
{
	while (*out)
		out = &(*out)->next;
	for (struct bm_cmd **pp = head; *pp;) {
		struct bm_cmd *c = *pp;
		if (c->dev == dev) {
			*pp = c->next;
			c->next = NULL;
			*out = c;
			out = &c->next;
		} else {
			pp = &c->next;
		}
	}
	*tail = NULL;
	for (struct bm_cmd *c = *head; c; c = c->next)
		*tail = c;
}

void bm_fdev_close(struct blkmap_dev *dev)
{
	struct bm_pool *p = &dev->ctx->pool;
	struct bm_cmd *cancelled = NULL, *done = NULL;

	if (p->started) {
		pthread_mutex_lock(&p->lock);
		/* not yet picked up: cancel */
		take_dev_cmds(&p->todo_head, &p->todo_tail, dev, &cancelled);
		/* being worked on: wait, a transfer to a local device always ends */
		while (dev->pool_running > 0)
			pthread_cond_wait(&p->done_cond, &p->lock);
		take_dev_cmds(&p->done_head, &p->done_tail, dev, &done);
		pthread_mutex_unlock(&p->lock);
	}
	while (done) {
		struct bm_cmd *c = done;
		done = c->next;
		dev->inflight--;
		c->on_list = 0;
		bm_cmd_finish(c, c->status, NULL);
	}
	while (cancelled) {
		struct bm_cmd *c = cancelled;
		cancelled = c->next;
		dev->inflight--;
		c->on_list = 0;
		bm_cmd_finish(c, -ECANCELED, "%s: device closed", dev->name);
	}
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
}

void bm_pool_stop(struct blkmap_ctx *ctx)
{
	struct bm_pool *p = &ctx->pool;

	if (!p->started && !p->nthreads)
		goto out;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
out:
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
	if (p->evfd >= 0)
		close(p->evfd);
	p->evfd = -1;
}
