/* bench-client: `pnfs cp` in and out against the blkmap engine's raw striped rate on the same LUNs,
 * measured in the same run. Plain lab: 4 RAM LUNs on one tgtd, a pool striped over them (1 MiB unit),
 * pnfs-mds; 1 GiB copied in and out with the pnfs command (direct path, SCSI layouts) and once with
 * --mds-io; the baseline is the engine reading and writing the pool's volume itself in the copy's
 * geometry (8 MiB requests, 8 in flight), registered on every LUN as a client is (the MDS holds the
 * SCSI reservation once a client asked for a SCSI layout). 5 rounds, engine and copies back to back
 * in each (order alternating); each ratio is the median of the rounds' ratios: a shared box is noisy.
 * Copies in read a file in the lab's directory (under /tmp), in the page cache; "pnfs cp in from
 * /dev/shm" is the same copy from tmpfs, which shares the cores' time and its file system with the
 * RAM LUNs; "pnfs cp in, not cached" is the copy from the lab's directory once its file is dropped from
 * the page cache (read from the disk). Copies out write a file on /dev/shm and one in the lab's directory (a disk file system on
 * most hosts: the destination a user has; written with O_DIRECT where it does direct I/O), the latter
 * against the lesser of the engine's read rate and that disk's own (8 MiB O_DIRECT writes of the
 * same size and an fsync, measured in the same round). "pnfs cp out >/dev/null" is the same read
 * without the local file, to show what writing the copy costs on the same cores. Shaped lab (root): N = 1, 2, 4, 8 storage hosts behind 400 Mbit/s links,
 * 128 MiB per host per copy: the engine and direct pNFS best of 3, the MDS path once. Every
 * row says which path the bytes took (the client's counters) and how many bytes crossed the MDS
 * connection. The plain lab also prints CPU seconds per GiB of the engine (this process), of each copy
 * (the pnfs process) and of the lab's tgtd meanwhile. Targets: shaped >= 0.95 x N x single device and
 * >= 0.9 x N x MDS path (issue 7); plain cp in and out >= 0.9 x the engine and a copy's CPU per GiB
 * <= 1.3 x the engine's (issue 30). BENCH_QUICK=1 moves an eighth of the data (to check the program). */
#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "tests/bench/benchlab.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB BENCH_MIB
#define MAX_LUNS BENCHLAB_MAX_LUNS
#define INITIATOR "iqn.2024-01.org.pnfs-san:bench-client"
#define ENGINE_KEY 0x62656e6368656e67ull /* "bencheng" */
#define REPS 5
#define SHAPED_REPS 3

/* ---- labs, pools, pnfs-mds ------------------------------------------------------------------------ */

/* The lab, a pool over all its LUNs and the pnfs-mds serving it. */
static int lab_start(struct benchlab *l, const char *shape)
{
	if (benchlab_start(l, shape) < 0)
		return -1;
	/* SCSI layouts, as measured so far (tgt refuses APTPL: by default the server would offer none) */
	if (benchlab_start_mds(l, "--scsi-layouts", "yes") < 0) {
		benchlab_stop(l);
		return -1;
	}
	return 0;
}

/* ---- CPU time --------------------------------------------------------------------------------------- */

/* CPU seconds (user + system) of this process (self) or of its waited-for children. */
static double cpu_seconds(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* CPU seconds of the lab's tgtd so far (its pid from the lab's lab.env, its times from /proc), or -1. */
static double tgtd_seconds(const struct benchlab *l)
{
	char path[400], line[512], *p;
	unsigned long ut = 0, st = 0;
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/lab.env", l->dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "LAB_PID=", 8) == 0)
			pid = strtol(line + 8 + (line[8] == '\'' || line[8] == '"'), NULL, 10);
	fclose(f);
	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	/* after the command's name: state and 10 more fields, then utime and stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The CPU seconds per GiB of the last engine run: its own (this process) and tgtd's. */
static double engine_cpu, engine_tgtd;

/* ---- the engine's raw rate on the pool's volume ----------------------------------------------------- */

struct pump {
	struct blkmap_vol *vol;
	uint8_t *buf;
	size_t req;
	uint64_t next, total;
	unsigned inflight;
	int write, err;
};

static void pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv);

static void pump_fill(struct pump *p, unsigned depth)
{
	while (!p->err && p->inflight < depth && p->next < p->total) {
		struct iovec v = { p->buf + (size_t)(p->inflight % depth) * p->req, p->req };
		int rc = p->write ? blkmap_vol_writev_async(p->vol, p->next, &v, 1, pump_cb, p)
				  : blkmap_vol_readv_async(p->vol, p->next, &v, 1, pump_cb, p);
		if (rc < 0) {
			p->err = rc;
			return;
		}
		p->next += p->req;
		p->inflight++;
	}
}

static void pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct pump *p = priv;
	(void)ctx;
	(void)res;
	p->inflight--;
	if (status < 0)
		p->err = status;
}

/* MiB/s of the engine moving total bytes of the volume in req-byte requests, depth at a time (what
 * the pnfs command does: 8 MiB chunks, 8 in flight). */
static double engine_rate(struct benchlab *l, int write, uint64_t total)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_vol *vol = NULL;
	struct pump p;
	char err[300];
	double t0, t, c0, g0;
	const unsigned depth = 8;

	blkmap_ctx_opts_init(&o);
	o.initiator_name = INITIATOR;
	if (blkmap_ctx_create(&o, &ctx) < 0)
		return -1;
	if (blkmap_vol_read_pool(l->pool, &vol, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench-client: %s\n", err);
		blkmap_ctx_destroy(ctx);
		return -1;
	}
	if (benchlab_bind_registered(ctx, l, vol, ENGINE_KEY) < 0) {
		blkmap_vol_free(vol);
		blkmap_ctx_destroy(ctx);
		return -1;
	}
	memset(&p, 0, sizeof(p));
	p.vol = vol;
	p.req = 8 * MIB;
	p.total = total;
	p.write = write;
	p.buf = malloc(p.req * depth);
	memset(p.buf, 0x5a, p.req * depth);
	c0 = cpu_seconds(RUSAGE_SELF);
	g0 = tgtd_seconds(l);
	t0 = benchlab_now();
	pump_fill(&p, depth);
	while (p.inflight) {
		blkmap_run_once(ctx, 1000);
		pump_fill(&p, depth);
	}
	t = benchlab_now() - t0;
	engine_cpu = (cpu_seconds(RUSAGE_SELF) - c0) * (double)(1024 * MIB) / (double)total;
	engine_tgtd = g0 < 0 ? -1 : (tgtd_seconds(l) - g0) * (double)(1024 * MIB) / (double)total;
	free(p.buf);
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	return p.err ? -1 : (double)total / (double)MIB / t;
}

/* ---- the local disk's own write rate ---------------------------------------------------------------- */

/* MiB/s of writing total bytes to a new file at path in 8 MiB writes, O_DIRECT where the file system
 * takes it (else through the page cache), then fsync: what a copy out to that file system can reach at
 * best when the disk is slower than the LUNs. -1 on failure. */
static double disk_rate(const char *path, uint64_t total)
{
	const size_t req = 8 * MIB;
	char *buf = NULL;
	double t0, t;
	int fd, rc = 0;

	if (posix_memalign((void **)&buf, 2 * MIB, req) != 0)
		return -1;
	for (size_t i = 0; i < req; i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0)
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		free(buf);
		return -1;
	}
	t0 = benchlab_now();
	for (uint64_t off = 0; off < total && rc == 0; off += req)
		if (pwrite(fd, buf, req, (off_t)off) != (ssize_t)req)
			rc = -1;
	if (rc == 0 && fsync(fd) < 0)
		rc = -1;
	t = benchlab_now() - t0;
	close(fd);
	unlink(path);
	free(buf);
	return rc < 0 ? -1 : (double)total / (double)MIB / t;
}

/* ---- pnfs cp ------------------------------------------------------------------------------------- */

struct cp_result {
	double mibs;
	double cpu, tgtd;    /* CPU seconds per GiB: the pnfs process, the lab's tgtd (-1: unknown) */
	uint64_t mds_bytes, direct, via_mds;
};

static uint64_t json_u64(const char *s, const char *key)
{
	char k[64];
	const char *p;
	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(s, k);
	return p ? strtoull(p + strlen(k), NULL, 10) : 0;
}

static int pnfs_cp(struct benchlab *l, const char *src, const char *dst, int mds_io, uint64_t bytes, struct cp_result *r)
{
	char cmd[4096], statsf[400], *buf = NULL;
	size_t o;
	double t0, c0, g0;
	FILE *f;
	int rc;

	snprintf(statsf, sizeof(statsf), "%s/cp.stats", l->dir);
	o = (size_t)snprintf(cmd, sizeof(cmd), "'%s/pnfs' cp -q --stats --json %s --initiator %s", benchlab_bin_dir(),
			     mds_io ? "--mds-io" : "", INITIATOR);
	for (int i = 0; i < l->n; i++)
		o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " --device '%s'", l->urls[i]);
	snprintf(cmd + o, sizeof(cmd) - o, " '%s' '%s' 2>'%s'", src, dst, statsf);
	c0 = cpu_seconds(RUSAGE_CHILDREN);
	g0 = tgtd_seconds(l);
	t0 = benchlab_now();
	rc = system(cmd);
	r->mibs = (double)bytes / (double)MIB / (benchlab_now() - t0);
	r->cpu = (cpu_seconds(RUSAGE_CHILDREN) - c0) * (double)(1024 * MIB) / (double)bytes;
	r->tgtd = g0 < 0 ? -1 : (tgtd_seconds(l) - g0) * (double)(1024 * MIB) / (double)bytes;
	f = fopen(statsf, "r");
	if (f) {
		size_t cap = 65536, n;
		buf = calloc(1, cap + 1);
		n = buf ? fread(buf, 1, cap, f) : 0;
		if (buf)
			buf[n] = 0;
		fclose(f);
	}
	if (rc != 0) {
		fprintf(stderr, "bench-client: pnfs cp %s %s failed: %s\n", src, dst, buf ? buf : "");
		free(buf);
		return -1;
	}
	r->mds_bytes = buf ? json_u64(buf, "mds_bytes_sent") + json_u64(buf, "mds_bytes_received") : 0;
	r->direct = buf ? json_u64(buf, "direct_bytes_read") + json_u64(buf, "direct_bytes_written") : 0;
	r->via_mds = buf ? json_u64(buf, "mds_data_read") + json_u64(buf, "mds_data_written") : 0;
	free(buf);
	return 0;
}

/* The name of the file system path is on (the source of a copy in). */
static const char *fs_name(const char *path)
{
	static char other[32];
	struct statfs sf;

	if (statfs(path, &sf) < 0)
		return "unknown";
	switch ((unsigned long)sf.f_type) {
	case 0xef53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683e: return "btrfs";
	case 0x01021994: return "tmpfs";
	default:
		snprintf(other, sizeof(other), "0x%lx", (unsigned long)sf.f_type);
		return other;
	}
}

/* The file at path dropped from the page cache (it is clean: written and synced). */
static int uncache(const char *path)
{
	int fd = open(path, O_RDONLY), rc;

	if (fd < 0)
		return -1;
	rc = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 0 : -1;
	close(fd);
	return rc;
}

static int same_file(const char *a, const char *b)
{
	char cmd[900];
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

static const char *path_of(const struct cp_result *r)
{
	if (r->direct && !r->via_mds)
		return "direct";
	if (r->direct)
		return "mixed";
	return "MDS";
}

/* One table row; ratio < 0: none. */
static void row_ratio(const char *what, const char *op, double mibs, double ratio, const char *basename,
		      double target, const struct cp_result *r, uint64_t bytes)
{
	char rs[32] = "", tgt[32] = "", mds[32] = "";
	/* a miss is said, with a third digit (0.946 is not 0.95) */
	const int missed = target > 0 && ratio >= 0 && ratio < target;

	if (ratio >= 0)
		snprintf(rs, sizeof(rs), missed ? "%.3f" : "%.2f", ratio);
	if (target > 0)
		snprintf(tgt, sizeof(tgt), ">= %.2f", target);
	if (r)
		snprintf(mds, sizeof(mds), "%.3f%%", 100.0 * (double)r->mds_bytes / (double)bytes);
	printf("%-26s %-6s %9.1f  %-22s %6s %8s  %-6s %8s%s\n", what, op, mibs, basename, rs, tgt, r ? path_of(r) : "",
	       mds, missed ? "  below the target" : "");
	fflush(stdout);
}

static void row(const char *what, const char *op, double mibs, double base, const char *basename, double target,
		const struct cp_result *r, uint64_t bytes)
{
	row_ratio(what, op, mibs, base > 0 ? mibs / base : -1, basename, target, r, bytes);
}

static void header(void)
{
	printf("%-26s %-6s %9s  %-22s %6s %8s  %-6s %8s\n", "what", "op", "MiB/s", "baseline", "ratio", "target",
	       "path", "MDS/data");
}

static int pnfs_rm(struct benchlab *l, const char *url)
{
	char cmd[900];
	(void)l;
	snprintf(cmd, sizeof(cmd), "'%s/pnfs' rm '%s' >/dev/null 2>&1", benchlab_bin_dir(), url);
	return system(cmd) == 0 ? 0 : -1;
}

static void keep_best(struct cp_result *best, const struct cp_result *r)
{
	if (r->mibs > best->mibs)
		*best = *r;
}

/* CPU seconds per GiB moved, the rounds' medians: the engine's (this process), each copy's (the pnfs
 * process: user and system time of the waited-for child) against the engine's in the same direction,
 * and the lab's tgtd meanwhile (the target's share of the same two cores). Ratios of CPU time hold on
 * a busy machine where ratios of rates need not. */
#define CPU_ROWS 8
static void cpu_table(double cpu[CPU_ROWS][REPS], double tgt[CPU_ROWS][REPS], int n, const char *disk_row)
{
	const char *what[CPU_ROWS] = { "blkmap engine (raw)", "blkmap engine (raw)", "pnfs cp in", "pnfs cp out to /dev/shm",
				       "pnfs cp out >/dev/null", "pnfs cp in from /dev/shm", disk_row, "pnfs cp in, not cached" };
	static const char *op[CPU_ROWS] = { "write", "read", "write", "read", "read", "write", "read", "write" };
	static const int base[CPU_ROWS] = { -1, -1, 0, 1, 1, 0, 1, 0 };
	static const double target[CPU_ROWS] = { 0, 0, 1.3, 1.3, 0, 0, 1.3, 0 };
	static const int order[CPU_ROWS] = { 0, 2, 7, 5, 1, 6, 3, 4 };
	double m[CPU_ROWS];

	for (int i = 0; i < CPU_ROWS; i++)
		m[i] = benchlab_median(cpu[i], n);
	printf("\n%-26s %-6s %9s  %-22s %6s %8s  %s\n", "CPU seconds per GiB", "op", "process", "baseline", "ratio",
	       "target", "tgtd");
	for (int k = 0; k < CPU_ROWS; k++) {
		int i = order[k], missed;
		double t = benchlab_median(tgt[i], n), r = base[i] >= 0 && m[base[i]] > 0 ? m[i] / m[base[i]] : -1;
		char rs[32] = "", ts[32] = "", gs[32] = "?";
		missed = target[i] > 0 && r > target[i];
		if (r >= 0)
			snprintf(rs, sizeof(rs), missed ? "%.3f" : "%.2f", r);
		if (target[i] > 0)
			snprintf(ts, sizeof(ts), "<= %.2f", target[i]);
		if (t >= 0)
			snprintf(gs, sizeof(gs), "%.3f", t);
		printf("%-26s %-6s %9.3f  %-22s %6s %8s  %s%s\n", what[i], op[i], m[i],
		       base[i] < 0 ? "" : base[i] ? "x engine read" : "x engine write", rs, ts, gs,
		       missed ? "  above the target" : "");
	}
	fflush(stdout);
}

/* Plain lab, REPS rounds: in each, the engine writes and reads the pool's volume and pnfs cp copies a
 * file of the same size in and out, back to back (engines first in even rounds, copies first in odd
 * ones). Rates are the rounds' medians; a ratio is the median of the rounds' own ratios, so a burst of
 * load from others moves one round rather than the figure. Then the MDS path once.
 *
 * The source of a copy in is a file in the lab's directory (a disk file system on most hosts), written
 * and synced before, so its pages are in the page cache: a compute node copying a local file. The
 * same copy from tmpfs, where the RAM LUNs also live, is shown on its own row: on a small VM its
 * reads cost the cores tgtd needs more (tmpfs pages are 4 KiB folios, ext4 keeps larger ones). */
static int plain(void)
{
	struct benchlab l;
	uint64_t bytes = benchlab_scale(1024 * MIB);
	char src[400], shm[400], back[400], dback[400], probe[400], url[400], url2[400], drow[64], dbase[64];
	struct cp_result in = { 0 }, out = { 0 }, null = { 0 }, inshm = { 0 }, outd = { 0 }, incold = { 0 }, min, mout;
	double raw_w[REPS], raw_r[REPS], in_r[REPS], out_r[REPS], null_r[REPS], shm_r[REPS], disk_r[REPS], outd_r[REPS];
	double rin[REPS], rout[REPS], rnull[REPS], rshm[REPS], rdisk[REPS], routd[REPS], cold_r[REPS], rcold[REPS];
	/* CPU seconds per GiB (process; tgtd): engine write and read, cp in, out to /dev/shm, out
	 * >/dev/null, in from /dev/shm, out to the lab's directory */
	double cpu[CPU_ROWS][REPS], tgt[CPU_ROWS][REPS];
	int fail = 0, n = 0;

	if (lab_start(&l, "--luns 4 --size 320M") < 0)
		return 1;
	snprintf(src, sizeof(src), "%s/src", l.dir);
	snprintf(shm, sizeof(shm), "/dev/shm/bench-client.%d.src", (int)getpid());
	snprintf(back, sizeof(back), "/dev/shm/bench-client.%d.back", (int)getpid());
	snprintf(dback, sizeof(dback), "%s/back", l.dir);
	snprintf(probe, sizeof(probe), "%s/disk.probe", l.dir);
	snprintf(drow, sizeof(drow), "pnfs cp out to %s", fs_name(l.dir));
	snprintf(dbase, sizeof(dbase), "x min(engine, %s)", fs_name(l.dir));
	snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d/big", l.mds_port);
	snprintf(url2, sizeof(url2), "pnfs://127.0.0.1:%d/big-mds", l.mds_port);
	if (benchlab_make_source(src, bytes) < 0 || benchlab_make_source(shm, bytes) < 0) {
		fprintf(stderr, "bench-client: cannot write %s or %s\n", src, shm);
		unlink(src);
		unlink(shm);
		benchlab_stop(&l);
		return 1;
	}
	printf("plain lab: 4 RAM LUNs on one tgtd, pool striped 1 MiB, %" PRIu64 " MiB per copy, %d rounds;\n"
	       "copies in read a file on %s (in the page cache), the last row one on /dev/shm (%s);\n"
	       "copies out write /dev/shm and a file on %s beside the source (O_DIRECT where it does direct I/O),\n"
	       "next to that disk's own rate (8 MiB O_DIRECT writes and fsync);\n"
	       "MiB/s: the rounds' medians; ratio: the median of the rounds' ratios\n",
	       bytes / MIB, REPS, fs_name(src), fs_name(shm), fs_name(l.dir));
	/* The first pass over fresh RAM LUNs allocates their pages: not measured. */
	if (engine_rate(&l, 1, bytes) < 0)
		fail = 1;
	for (int rep = 0; rep < REPS && !fail; rep++) {
		struct cp_result r;
		double ew = -1, er = -1, ecw = 0, etw = 0, ecr = 0, etr = 0, dr;
		if (rep % 2 == 0) {
			ew = engine_rate(&l, 1, bytes);
			ecw = engine_cpu, etw = engine_tgtd;
			er = engine_rate(&l, 0, bytes);
			ecr = engine_cpu, etr = engine_tgtd;
		}
		/* the copy from tmpfs first (and removed), so the file read back is the other one's */
		if (pnfs_cp(&l, shm, url, 0, bytes, &r) < 0) {
			fail = 1;
			break;
		}
		inshm = r;
		pnfs_rm(&l, url);
		if (pnfs_cp(&l, src, url, 0, bytes, &r) < 0) {
			fail = 1;
			break;
		}
		in = r;
		/* the same source dropped from the page cache first: read from the disk */
		pnfs_rm(&l, url);
		if (uncache(src) < 0 || pnfs_cp(&l, src, url, 0, bytes, &r) < 0) {
			fail = 1;
			break;
		}
		incold = r;
		unlink(back);
		if (pnfs_cp(&l, url, back, 0, bytes, &r) < 0) {
			fail = 1;
			break;
		}
		out = r;
		/* The same read without the local file: what the copy's own writes cost on these cores. */
		if (pnfs_cp(&l, url, "/dev/null", 0, bytes, &r) < 0) {
			fail = 1;
			break;
		}
		null = r;
		/* out to the disk file system a user's files are on, next to that disk's own rate */
		dr = disk_rate(probe, bytes);
		if (dr < 0 || pnfs_cp(&l, url, dback, 0, bytes, &r) < 0) {
			fail = 1;
			break;
		}
		outd = r;
		if (!same_file(src, dback)) {
			fprintf(stderr, "bench-client: the file read back to %s differs from the one written\n", dback);
			fail = 1;
		}
		unlink(dback);
		if (rep % 2 == 1) {
			/* the engine writes over the whole volume: the file goes first */
			er = engine_rate(&l, 0, bytes);
			ecr = engine_cpu, etr = engine_tgtd;
			pnfs_rm(&l, url);
			ew = engine_rate(&l, 1, bytes);
			ecw = engine_cpu, etw = engine_tgtd;
		}
		if (ew < 0 || er < 0) {
			fail = 1;
			break;
		}
		if (!same_file(src, back)) {
			fprintf(stderr, "bench-client: the file read back differs from the one written\n");
			fail = 1;
		}
		if (rep % 2 == 0)
			pnfs_rm(&l, url);
		raw_w[n] = ew;
		raw_r[n] = er;
		in_r[n] = in.mibs;
		out_r[n] = out.mibs;
		null_r[n] = null.mibs;
		shm_r[n] = inshm.mibs;
		rin[n] = in.mibs / ew;
		rout[n] = out.mibs / er;
		rnull[n] = null.mibs / er;
		rshm[n] = inshm.mibs / ew;
		disk_r[n] = dr;
		cold_r[n] = incold.mibs;
		rcold[n] = incold.mibs / ew;
		outd_r[n] = outd.mibs;
		rdisk[n] = dr / er;
		routd[n] = outd.mibs / (dr < er ? dr : er);
		cpu[0][n] = ecw, tgt[0][n] = etw;
		cpu[1][n] = ecr, tgt[1][n] = etr;
		cpu[2][n] = in.cpu, tgt[2][n] = in.tgtd;
		cpu[3][n] = out.cpu, tgt[3][n] = out.tgtd;
		cpu[4][n] = null.cpu, tgt[4][n] = null.tgtd;
		cpu[5][n] = inshm.cpu, tgt[5][n] = inshm.tgtd;
		cpu[6][n] = outd.cpu, tgt[6][n] = outd.tgtd;
		cpu[7][n] = incold.cpu, tgt[7][n] = incold.tgtd;
		n++;
	}
	header();
	if (n > 0) {
		double mw = benchlab_median(raw_w, n), mr = benchlab_median(raw_r, n);
		row("blkmap engine (raw)", "write", mw, 0, "", 0, NULL, bytes);
		row_ratio("pnfs cp in", "write", benchlab_median(in_r, n), benchlab_median(rin, n), "x engine write",
			  0.9, &in, bytes);
		row("blkmap engine (raw)", "read", mr, 0, "", 0, NULL, bytes);
		row_ratio("pnfs cp out to /dev/shm", "read", benchlab_median(out_r, n), benchlab_median(rout, n),
			  "x engine read", 0.9, &out, bytes);
		row_ratio(strcmp(fs_name(l.dir), "ext4") ? "local disk write" : "local disk write (ext4)", "write",
			  benchlab_median(disk_r, n), benchlab_median(rdisk, n), "x engine read", 0, NULL, bytes);
		row_ratio(drow, "read", benchlab_median(outd_r, n), benchlab_median(routd, n), dbase, 0.9, &outd, bytes);
		row_ratio("pnfs cp out >/dev/null", "read", benchlab_median(null_r, n), benchlab_median(rnull, n),
			  "x engine read", 0, &null, bytes);
		row_ratio("pnfs cp in from /dev/shm", "write", benchlab_median(shm_r, n), benchlab_median(rshm, n),
			  "x engine write", 0, &inshm, bytes);
		row_ratio("pnfs cp in, not cached", "write", benchlab_median(cold_r, n), benchlab_median(rcold, n),
			  "x engine write", 0, &incold, bytes);
		in.mibs = benchlab_median(in_r, n);
		out.mibs = benchlab_median(out_r, n);
		cpu_table(cpu, tgt, n, drow);
	}
	if (!fail && pnfs_cp(&l, src, url2, 1, bytes, &min) == 0) {
		row("pnfs cp in --mds-io", "write", min.mibs, in.mibs, "x direct", 0, &min, bytes);
		unlink(back);
		if (pnfs_cp(&l, url2, back, 1, bytes, &mout) == 0)
			row("pnfs cp out --mds-io", "read", mout.mibs, out.mibs, "x direct", 0, &mout, bytes);
		if (!same_file(src, back)) {
			fprintf(stderr, "bench-client: the file read back through the MDS differs\n");
			fail = 1;
		}
	}
	unlink(src);
	unlink(shm);
	unlink(back);
	unlink(dback);
	benchlab_stop(&l);
	printf("\n");
	return fail;
}

/* Shaped lab: N storage hosts; each copy moves 128 MiB per host (so every N streams for about as long
 * and the copy's fixed start, a few logins and layout calls, weighs alike), best of SHAPED_REPS; the
 * MDS path once, 128 MiB. */
static int shaped(void)
{
	static const int ns[] = { 1, 2, 4, 8 };
	const uint64_t per_host = benchlab_scale(128 * MIB), mds_bytes = per_host;
	double single = 0, single_w = 0;
	int fail = 0;
	char src[400], msrc[400], back[400];

	if (geteuid() != 0) {
		printf("shaped lab: skipped (needs root for network namespaces)\n");
		return 0;
	}
	snprintf(src, sizeof(src), "/dev/shm/bench-client.%d.src", (int)getpid());
	snprintf(msrc, sizeof(msrc), "/dev/shm/bench-client.%d.msrc", (int)getpid());
	snprintf(back, sizeof(back), "/dev/shm/bench-client.%d.back", (int)getpid());
	if (benchlab_make_source(msrc, mds_bytes) < 0)
		return 1;
	printf("shaped lab: N storage hosts, 400 Mbit/s each, %" PRIu64 " MiB per host per copy, best of %d "
	       "(MDS path: one copy of %" PRIu64 " MiB)\n",
	       per_host / MIB, SHAPED_REPS, mds_bytes / MIB);
	header();
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		struct benchlab l;
		char shape[128], url[300], what[64];
		struct cp_result in = { 0 }, out = { 0 }, mds_in = { 0 }, mds_out = { 0 };
		double eng, eng_w;
		int n = ns[k];
		uint64_t bytes = per_host * (uint64_t)n;

		if (benchlab_make_source(src, bytes) < 0) {
			fail = 1;
			break;
		}
		snprintf(shape, sizeof(shape), "--hosts %d --rate 400 --size %" PRIu64 "M", n, per_host / MIB + 64);
		if (lab_start(&l, shape) < 0) {
			fail = 1;
			continue;
		}
		snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d/f", l.mds_port);
		eng_w = eng = 0;
		for (int rep = 0; rep < SHAPED_REPS; rep++) {
			struct cp_result r;
			double x;
			if ((x = engine_rate(&l, 1, bytes)) > eng_w)
				eng_w = x;
			if ((x = engine_rate(&l, 0, bytes)) > eng)
				eng = x;
			if (pnfs_cp(&l, src, url, 0, bytes, &r) == 0)
				keep_best(&in, &r);
			else
				fail = 1;
			unlink(back);
			if (pnfs_cp(&l, url, back, 0, bytes, &r) == 0)
				keep_best(&out, &r);
			else
				fail = 1;
			if (!same_file(src, back)) {
				fprintf(stderr, "bench-client: N=%d: the file read back differs\n", n);
				fail = 1;
			}
			unlink(back);
			pnfs_rm(&l, url);
		}
		if (n == 1) {
			single_w = eng_w;
			single = eng;
		}
		snprintf(what, sizeof(what), "N=%d blkmap engine", n);
		row(what, "write", eng_w, single_w * n, "x N x single device", 0, NULL, bytes);
		row(what, "read", eng, single * n, "x N x single device", 0, NULL, bytes);
		snprintf(what, sizeof(what), "N=%d pnfs cp in", n);
		row(what, "write", in.mibs, single_w * n, "x N x single device", 0.95, &in, bytes);
		snprintf(what, sizeof(what), "N=%d pnfs cp out", n);
		row(what, "read", out.mibs, single * n, "x N x single device", 0.95, &out, bytes);
		snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d/g", l.mds_port);
		if (pnfs_cp(&l, msrc, url, 1, mds_bytes, &mds_in) == 0 &&
		    pnfs_cp(&l, url, back, 1, mds_bytes, &mds_out) == 0) {
			snprintf(what, sizeof(what), "N=%d pnfs cp --mds-io", n);
			row(what, "write", mds_in.mibs, 0, "", 0, &mds_in, mds_bytes);
			row(what, "read", mds_out.mibs, 0, "", 0, &mds_out, mds_bytes);
			snprintf(what, sizeof(what), "N=%d direct vs MDS", n);
			row(what, "write", in.mibs, n * mds_in.mibs, "x N x MDS path", 0.9, NULL, bytes);
			row(what, "read", out.mibs, n * mds_out.mibs, "x N x MDS path", 0.9, NULL, bytes);
			if (!same_file(msrc, back)) {
				fprintf(stderr, "bench-client: N=%d: the file read back through the MDS differs\n", n);
				fail = 1;
			}
		}
		unlink(back);
		benchlab_stop(&l);
	}
	unlink(src);
	unlink(msrc);
	unlink(back);
	printf("\n");
	return fail;
}

int main(int argc, char **argv)
{
	int do_plain, do_shaped, fail = 0;

	if (benchlab_which_labs(argc, argv, "bench-client", &do_plain, &do_shaped))
		return 2;
	benchlab_install_cleanup("bench-client");
	if (do_plain)
		fail |= plain();
	if (do_shaped)
		fail |= shaped();
	return fail;
}
