#include "tests/bench/benchlab.h"

#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "client/pnfs.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ACTIVE 4

static struct benchlab *active[MAX_ACTIVE];
static const char *progname = "bench";

const char *benchlab_bin_dir(void)
{
	const char *b = getenv("PNFS_BIN");
	return b && *b ? b : "build/bin";
}

double benchlab_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int env_set(const char *name)
{
	const char *q = getenv(name);
	return q && *q && strcmp(q, "0") != 0;
}

int benchlab_quick(void)
{
	return env_set("BENCH_QUICK");
}

int benchlab_verbose(void)
{
	return env_set("BENCH_VERBOSE");
}

uint64_t benchlab_scale(uint64_t v)
{
	return benchlab_quick() ? v / 8 : v;
}

int benchlab_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int benchlab_can_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static void forget(struct benchlab *l)
{
	for (int i = 0; i < MAX_ACTIVE; i++)
		if (active[i] == l)
			active[i] = NULL;
}

void benchlab_stop(struct benchlab *l)
{
	char cmd[900];

	if (l->mds > 0) {
		kill(l->mds, SIGTERM);
		for (int i = 0; i < 100 && waitpid(l->mds, NULL, WNOHANG) != l->mds; i++)
			usleep(50000);
		kill(l->mds, SIGKILL);
		waitpid(l->mds, NULL, 0);
		l->mds = 0;
	}
	forget(l);
	if (!l->up)
		return;
	/* the lab's RAM LUNs go with it (a plain down keeps them for a later up) */
	snprintf(cmd, sizeof(cmd), "'%s/san-lab' down --wipe --dir '%s' >/dev/null 2>&1; rm -rf '%s'",
		 benchlab_bin_dir(), l->dir, l->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "%s: could not stop the lab in %s\n", progname, l->dir);
	l->up = 0;
}

static void stop_all(void)
{
	for (int i = 0; i < MAX_ACTIVE; i++)
		if (active[i])
			benchlab_stop(active[i]);
}

static void on_signal(int sig)
{
	stop_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void benchlab_install_cleanup(const char *prog)
{
	progname = prog;
	atexit(stop_all);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
}

int benchlab_start(struct benchlab *l, const char *shape)
{
	char cmd[1000], line[512];
	FILE *f;
	int port = benchlab_free_port();

	memset(l, 0, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "/tmp/%s.%d.%d", progname, (int)getpid(), port);
	snprintf(cmd, sizeof(cmd), "'%s/san-lab' up %s --ram --dir '%s' --port %d --watch-pid %d 2>/dev/null",
		 benchlab_bin_dir(), shape, l->dir, port, (int)getpid());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	l->up = 1;
	for (int i = 0; i < MAX_ACTIVE; i++)
		if (!active[i]) {
			active[i] = l;
			break;
		}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "iscsi://", 8) && l->n < BENCHLAB_MAX_LUNS)
			snprintf(l->urls[l->n++], sizeof(l->urls[0]), "%s", line);
	}
	if (pclose(f) != 0 || l->n == 0) {
		fprintf(stderr, "%s: san-lab up %s failed\n", progname, shape);
		benchlab_stop(l);
		return -1;
	}
	return 0;
}

int benchlab_start_mds(struct benchlab *l, const char *extra_opt, const char *extra_val)
{
	char cmd[1400];
	size_t o;

	snprintf(l->pool, sizeof(l->pool), "%s/pool", l->dir);
	o = (size_t)snprintf(cmd, sizeof(cmd), "'%s/pnfs-admin' format --pool '%s'", benchlab_bin_dir(), l->pool);
	for (int i = 0; i < l->n; i++)
		o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " '%s'", l->urls[i]);
	snprintf(cmd + o, sizeof(cmd) - o, " >/dev/null");
	if (system(cmd) != 0) {
		fprintf(stderr, "%s: pnfs-admin format failed\n", progname);
		return -1;
	}
	l->mds_port = benchlab_free_port();
	l->mds = fork();
	if (l->mds < 0) {
		l->mds = 0;
		return -1;
	}
	if (l->mds == 0) {
		char portarg[16], log[400], prog[400];
		int fd;
		snprintf(portarg, sizeof(portarg), "%d", l->mds_port);
		snprintf(log, sizeof(log), "%s/mds.log", l->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		snprintf(prog, sizeof(prog), "%s/pnfs-mds", benchlab_bin_dir());
		execl(prog, "pnfs-mds", "--foreground", "--listen", "127.0.0.1", "--port", portarg, "--pool", l->pool,
		      extra_opt, extra_val, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && !benchlab_can_connect(l->mds_port); i++)
		usleep(20000);
	if (!benchlab_can_connect(l->mds_port)) {
		fprintf(stderr, "%s: pnfs-mds did not start (see %s/mds.log)\n", progname, l->dir);
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double benchlab_median(double *v, int n)
{
	if (n <= 0)
		return -1;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int sig_matches(struct blkmap_dev *dev, const struct blkmap_sig_comp *c)
{
	uint64_t size = blkmap_dev_size_bytes(dev), bs = blkmap_dev_block_bytes(dev), off, a, z;
	uint8_t *buf;
	int ok;

	off = c->offset_bytes < 0 ? size - (uint64_t)(-c->offset_bytes) : (uint64_t)c->offset_bytes;
	/* whole device blocks around the component */
	a = off / bs * bs;
	z = (off + c->len + bs - 1) / bs * bs;
	buf = malloc(z - a);
	ok = buf && blkmap_dev_pread(dev, buf, z - a, a) == 0 && memcmp(buf + (off - a), c->bytes, c->len) == 0;
	free(buf);
	return ok;
}

int benchlab_bind_registered(struct blkmap_ctx *ctx, struct benchlab *l, struct blkmap_vol *vol, uint64_t key)
{
	struct blkmap_dev *devs[BENCHLAB_MAX_LUNS] = { 0 };
	int rc = 0;

	for (int i = 0; i < l->n && !rc; i++) {
		if (blkmap_dev_open(ctx, l->urls[i], 0, &devs[i]) < 0 || blkmap_pr_register(devs[i], 0, key, 1) < 0) {
			fprintf(stderr, "%s: %s: %s\n", progname, l->urls[i], blkmap_errstr(ctx));
			rc = -1;
		}
	}
	for (uint32_t v = 0; v < blkmap_vol_count(vol) && !rc; v++) {
		int found = 0;
		if (blkmap_vol_type(vol, v) != BLKMAP_VOL_SIMPLE)
			continue;
		for (int i = 0; i < l->n && !found; i++) {
			int all = 1;
			for (unsigned k = 0; k < blkmap_vol_nsig(vol, v) && all; k++)
				all = sig_matches(devs[i], blkmap_vol_sig(vol, v, k));
			if (all && blkmap_vol_bind(vol, v, devs[i]) == 0)
				found = 1;
		}
		if (!found) {
			fprintf(stderr, "%s: volume %u matches none of the lab's LUNs\n", progname, v);
			rc = -1;
		}
	}
	for (int i = 0; i < l->n; i++)
		if (devs[i])
			blkmap_dev_close(devs[i]);
	return rc ? rc : blkmap_vol_validate(vol);
}

struct pnfs_context *benchlab_client(struct benchlab *l, const char *initiator, unsigned queue_depth)
{
	const char *devs[BENCHLAB_MAX_LUNS];
	struct pnfs_opts o;
	struct pnfs_context *pc;

	for (int i = 0; i < l->n; i++)
		devs[i] = l->urls[i];
	pnfs_opts_init(&o);
	o.devices = devs;
	o.ndevices = (unsigned)l->n;
	o.initiator_name = initiator;
	if (queue_depth)
		o.queue_depth = queue_depth;
	if (pnfs_context_create(&o, &pc) < 0)
		return NULL;
	if (pnfs_mount(pc, "127.0.0.1", l->mds_port, "/") < 0) {
		fprintf(stderr, "%s: mount: %s\n", progname, pnfs_get_error(pc));
		pnfs_context_destroy(pc);
		return NULL;
	}
	return pc;
}

double benchlab_proc_cpu_s(pid_t pid)
{
	char path[64], line[2048], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL; /* the command name may hold spaces */
	fclose(f);
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long benchlab_proc_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

/* ---- bare libiscsi --------------------------------------------------------------------------------- */

void benchlab_raw_close(struct benchlab_raw *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->isc[i]) {
			iscsi_logout_sync(r->isc[i]);
			iscsi_destroy_context(r->isc[i]);
			r->isc[i] = NULL;
		}
	r->n = 0;
}

static int raw_open_one(struct benchlab_raw *r, int i, const char *url, const char *initiator, uint64_t key)
{
	struct iscsi_context *isc = iscsi_create_context(initiator);
	struct iscsi_url *u = NULL;
	struct scsi_task *t = NULL;
	struct scsi_readcapacity16 *rc16;
	struct scsi_persistent_reserve_out_basic reg = { 0 };
	int ok = 0;

	r->isc[i] = isc;
	if (!isc)
		return -1;
	u = iscsi_parse_full_url(isc, url);
	if (!u)
		goto out;
	iscsi_set_targetname(isc, u->target);
	iscsi_set_session_type(isc, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(isc, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	r->lun[i] = u->lun;
	if (iscsi_full_connect_sync(isc, u->portal, u->lun) != 0)
		goto out;
	/* a fresh login reports a unit attention first */
	for (int k = 0; k < 3 && !ok; k++) {
		t = iscsi_testunitready_sync(isc, u->lun);
		ok = t && t->status == SCSI_STATUS_GOOD;
		if (t)
			scsi_free_scsi_task(t);
	}
	t = ok ? iscsi_readcapacity16_sync(isc, u->lun) : NULL;
	ok = 0;
	if (!t || t->status != SCSI_STATUS_GOOD || !(rc16 = scsi_datain_unmarshall(t)))
		goto out;
	r->block_bytes[i] = rc16->block_length;
	scsi_free_scsi_task(t);
	reg.service_action_reservation_key = key;
	t = iscsi_persistent_reserve_out_sync(isc, u->lun, SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY,
					      SCSI_PERSISTENT_RESERVE_SCOPE_LU, 0, &reg);
	ok = t && t->status == SCSI_STATUS_GOOD;
out:
	if (t)
		scsi_free_scsi_task(t);
	if (!ok)
		fprintf(stderr, "%s: libiscsi %s: %s\n", progname, url, iscsi_get_error(isc));
	if (u)
		iscsi_destroy_url(u);
	return ok ? 0 : -1;
}

int benchlab_raw_open(struct benchlab_raw *r, const struct benchlab *l, const char *initiator, uint64_t key)
{
	memset(r, 0, sizeof(*r));
	r->n = l->n;
	for (int i = 0; i < l->n; i++)
		if (raw_open_one(r, i, l->urls[i], initiator, key) < 0) {
			benchlab_raw_close(r);
			return -1;
		}
	return 0;
}

static void raw_done(struct iscsi_context *isc, int status, void *command_data, void *private_data)
{
	struct benchlab_raw_op *op = private_data;
	struct scsi_task *t = command_data;

	(void)isc;
	op->raw->inflight--;
	if (t)
		scsi_free_scsi_task(t);
	op->cb(op, status == SCSI_STATUS_GOOD ? 0 : -EIO);
}

int benchlab_raw_io(struct benchlab_raw *r, int lun, int write, uint64_t off_bytes, void *buf, size_t len,
		    struct benchlab_raw_op *op)
{
	struct scsi_task *t;
	uint32_t bs;

	if (lun < 0 || lun >= r->n)
		return -1;
	bs = r->block_bytes[lun];
	op->raw = r;
	op->iov.iov_base = buf;
	op->iov.iov_len = len;
	if (write)
		t = iscsi_write16_iov_task(r->isc[lun], r->lun[lun], off_bytes / bs, NULL, (uint32_t)len, (int)bs, 0, 0, 0,
					   0, 0, raw_done, op, &op->iov, 1);
	else
		t = iscsi_read16_iov_task(r->isc[lun], r->lun[lun], off_bytes / bs, (uint32_t)len, (int)bs, 0, 0, 0, 0, 0,
					  raw_done, op, &op->iov, 1);
	if (!t)
		return -1;
	r->inflight++;
	return 0;
}

int benchlab_raw_flush(struct benchlab_raw *r, int lun, struct benchlab_raw_op *op)
{
	if (lun < 0 || lun >= r->n)
		return -1;
	op->raw = r;
	if (!iscsi_synchronizecache10_task(r->isc[lun], r->lun[lun], 0, 0, 0, 0, raw_done, op))
		return -1;
	r->inflight++;
	return 0;
}

int benchlab_raw_run_once(struct benchlab_raw *r, int timeout_ms)
{
	struct pollfd p[BENCHLAB_MAX_LUNS];

	for (int i = 0; i < r->n; i++) {
		p[i].fd = iscsi_get_fd(r->isc[i]);
		p[i].events = (short)iscsi_which_events(r->isc[i]);
		p[i].revents = 0;
	}
	if (poll(p, (nfds_t)r->n, timeout_ms) < 0)
		return errno == EINTR ? 0 : -1;
	for (int i = 0; i < r->n; i++)
		if (p[i].revents && iscsi_service(r->isc[i], p[i].revents) < 0) {
			fprintf(stderr, "%s: libiscsi: %s\n", progname, iscsi_get_error(r->isc[i]));
			return -1;
		}
	return 0;
}

int benchlab_leaf_lun(const struct benchlab *l, const struct blkmap_vol *vol, uint32_t leaf)
{
	struct blkmap_dev *d = blkmap_vol_leaf_dev(vol, leaf);
	const char *name = d ? blkmap_dev_name(d) : NULL;

	for (int i = 0; name && i < l->n; i++)
		if (!strcmp(name, l->urls[i]))
			return i;
	return -1;
}

int benchlab_make_source(const char *path, uint64_t bytes)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t *blk = malloc(BENCH_MIB), x = 0x9e3779b97f4a7c15ull;

	if (fd < 0 || !blk) {
		if (fd >= 0)
			close(fd);
		free(blk);
		return -1;
	}
	for (uint64_t off = 0; off < bytes; off += BENCH_MIB) {
		for (size_t i = 0; i < BENCH_MIB / 8; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			blk[i] = x;
		}
		if (write(fd, blk, BENCH_MIB) != (ssize_t)BENCH_MIB) {
			close(fd);
			free(blk);
			return -1;
		}
	}
	free(blk);
	/* on a disk file system: written back now, not while a copy reads it (it stays in the page cache) */
	if (fsync(fd) < 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

int benchlab_which_labs(int argc, char **argv, const char *prog, int *plain, int *shaped)
{
	*plain = *shaped = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plain")) {
			*shaped = 0;
		} else if (!strcmp(argv[i], "--shaped")) {
			*plain = 0;
		} else {
			fprintf(stderr, "usage: %s [--plain | --shaped]\n", prog);
			return 2;
		}
	}
	return 0;
}
