/* bench-blkmap: the engine's sequential throughput through a stripe against raw libiscsi on the same
 * LUNs, measured in the same run. Plain lab: 4 RAM LUNs on one tgtd, 1 GiB read and written through a
 * 4-way stripe (1 MiB unit) at 128 KiB and 1 MiB requests. Shaped lab (root): N = 1, 2, 4, 8 storage
 * hosts each behind a 400 Mbit/s veth, 1 MiB requests. Each lab prints three rows, each a pair measured
 * alike: reads against iscsi-perf on every LUN at once (both time-based, iscsi-perf's rule), reads and
 * writes against a raw libiscsi reader and writer of ours (both a fixed pass, ended by the slowest LUN).
 * Engine and baseline run back to back in each of several rounds, each after an untimed pass of its own
 * kind; each ratio is the median of the rounds' ratios. Targets are 0.9 x raw (plain) and 0.95 x raw
 * (shaped). --plain, --shaped, --hosts N run a part; BENCH_VERBOSE=1 prints every round. */
#include "blkmap/blkmap.h"
#include "tests/bench/benchlab.h"
#include "tests/lab_iscsi.h"

#include <errno.h>
#include <inttypes.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB BENCH_MIB
#define INITIATOR "iqn.2024-01.org.pnfs-san:bench"
#define MAX_LUNS BENCHLAB_MAX_LUNS
#define QD 32

/* ---- the ring -------------------------------------------------------------------------------- */

/* Engine and raw commands read into and write from one ring with a slot per command in flight,
 * allocated once and faulted in before the first timed run: neither side gets cache-hot buffers the
 * other does not, and neither pays for fresh pages in its timed window. (Allocated per run, the 128 MiB
 * ring cost the engine a quarter of its rate at 1 MiB here: freed and faulted in anew each time, the
 * pages went back and forth to the hypervisor.) NULL when memory is short. */
static uint8_t *ring;
static size_t ring_bytes;

static uint8_t *ring_get(size_t bytes)
{
	if (ring_bytes >= bytes)
		return ring;
	free(ring);
	ring = NULL;
	ring_bytes = 0;
	if (posix_memalign((void **)&ring, 4096, bytes) != 0)
		return NULL;
	memset(ring, 0x5a, bytes);
	ring_bytes = bytes;
	return ring;
}

/* ---- warming up --------------------------------------------------------------------------------- */

/* Every timed run, engine or baseline, follows an untimed pass of the same kind over the first eighth
 * of its bytes. On this project's VMs the first run after a burst of freed memory (the iscsi-perf
 * processes exiting, tgtd's buffers changing size, sessions logging out) ran at half speed with twice
 * the initiator's CPU per byte, whichever side it was: the pages the kernel and tgtd needed anew had
 * been handed back to the hypervisor. The warm-up takes that cost out of both sides alike. */
#define WARM_SHARE 8

static uint64_t warm_bytes(uint64_t total, size_t req)
{
	uint64_t w = total / WARM_SHARE;
	return w - w % req;
}

/* ---- the engine ------------------------------------------------------------------------------- */

/* CPU seconds (user + system) used so far by this process (RUSAGE_SELF) or its waited-for children */
static double cpu_s(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* Sequential requests through a volume, window of them in flight. A fixed pass moves total bytes from
 * offset 0. A timed pass (deadline set) wraps around at wrap bytes and stops at the first completion
 * after the deadline, the moment that stop_* record: iscsi-perf's own rule, so that the two are
 * measured alike (the commands still in flight then complete uncounted, as iscsi-perf's do). */
struct pump {
	struct blkmap_vol *vol;
	uint8_t *ring;
	size_t req;
	unsigned window, slot;
	uint64_t total, next, done_bytes, wrap;
	double deadline, stop_s, stop_cpu;
	uint64_t stop_bytes;
	int write, failed;
	char err[600];
};

static void pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv);

static void pump_submit(struct pump *p)
{
	if (p->wrap && p->next + p->req > p->wrap)
		p->next = 0;
	struct iovec iov = { p->ring + (size_t)(p->slot++ % p->window) * p->req, p->req };
	int rc = p->write ? blkmap_vol_writev_async(p->vol, p->next, &iov, 1, pump_cb, p)
			  : blkmap_vol_readv_async(p->vol, p->next, &iov, 1, pump_cb, p);
	if (rc < 0) {
		p->failed++;
		snprintf(p->err, sizeof(p->err), "%s", blkmap_vol_errstr(p->vol));
		p->next = p->total;
		return;
	}
	p->next += p->req;
}

static void pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct pump *p = priv;
	(void)ctx;
	if (status < 0) {
		if (!p->failed)
			snprintf(p->err, sizeof(p->err), "%s", res->message ? res->message : "I/O failed");
		p->failed++;
	}
	p->done_bytes += p->req;
	if (p->deadline > 0 && p->stop_s == 0 && benchlab_now() >= p->deadline) {
		p->stop_s = benchlab_now();
		p->stop_cpu = cpu_s(RUSAGE_SELF);
		p->stop_bytes = p->done_bytes;
		p->total = 0; /* submit no more */
	}
	if (p->next < p->total && !p->failed)
		pump_submit(p);
}

/* CPU seconds per GiB moved */
static double per_gib(double cpu, double bytes)
{
	return bytes > 0 ? cpu / (bytes / (double)(1u << 30)) : 0;
}

/* One pass of total bytes through the volume from offset 0 in req-sized sequential requests, window
 * at once; 0 or -1 (reported) */
static int engine_pass(struct blkmap_ctx *ctx, struct blkmap_vol *vol, int write, uint64_t total, size_t req,
		       unsigned window)
{
	struct pump p = { .vol = vol, .req = req, .window = window, .total = total, .write = write };

	p.ring = ring_get((size_t)window * req);
	if (!p.ring)
		return -1;
	for (unsigned i = 0; i < window && p.next < total; i++)
		pump_submit(&p);
	if (blkmap_wait_idle(ctx) < 0)
		p.failed++;
	if (p.failed) {
		fprintf(stderr, "bench-blkmap: engine %s failed: %s\n", write ? "write" : "read", p.err);
		return -1;
	}
	return 0;
}

/* MiB/s of a timed engine pass, after an untimed one of an eighth of the bytes (see WARM_SHARE); *cpu:
 * the initiator's CPU seconds per GiB */
static double engine_run(struct blkmap_ctx *ctx, struct blkmap_vol *vol, int write, uint64_t total, size_t req,
			 unsigned window, double *cpu)
{
	double t0, t1, c0;

	if (engine_pass(ctx, vol, write, warm_bytes(total, req), req, window) < 0)
		return -1;
	c0 = cpu_s(RUSAGE_SELF);
	t0 = benchlab_now();
	if (engine_pass(ctx, vol, write, total, req, window) < 0)
		return -1;
	t1 = benchlab_now();
	*cpu = per_gib(cpu_s(RUSAGE_SELF) - c0, (double)total);
	return (double)total / MIB / (t1 - t0);
}

/* MiB/s of reads through the first vol_bytes of the volume for the given seconds, measured as iscsi-perf
 * measures (see struct pump), after the same untimed warm-up as engine_run; *cpu as there */
static double engine_timed_run(struct blkmap_ctx *ctx, struct blkmap_vol *vol, uint64_t vol_bytes, size_t req,
			       unsigned window, int seconds, double *cpu)
{
	struct pump p = { .vol = vol, .req = req, .window = window, .total = UINT64_MAX, .wrap = vol_bytes };
	double t0, c0;

	if (engine_pass(ctx, vol, 0, warm_bytes(vol_bytes, req), req, window) < 0)
		return -1;
	p.ring = ring_get((size_t)window * req);
	if (!p.ring)
		return -1;
	c0 = cpu_s(RUSAGE_SELF);
	t0 = benchlab_now();
	p.deadline = t0 + seconds;
	for (unsigned i = 0; i < window; i++)
		pump_submit(&p);
	if (blkmap_wait_idle(ctx) < 0)
		p.failed++;
	if (p.failed || p.stop_s == 0) {
		fprintf(stderr, "bench-blkmap: engine timed read failed: %s\n", p.failed ? p.err : "no completion");
		return -1;
	}
	*cpu = per_gib(p.stop_cpu - c0, (double)p.stop_bytes);
	return (double)p.stop_bytes / MIB / (p.stop_s - t0);
}

/* ---- raw libiscsi, one process, all LUNs in one poll loop -------------------------------------- */

struct rawlun {
	struct iscsi_context *isc;
	int lun;
	uint64_t pos, limit; /* blocks */
	int inflight, failed;
};


static void raw_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct rawlun *r = priv;
	(void)isc;
	r->inflight--;
	if (status != SCSI_STATUS_GOOD)
		r->failed++;
	scsi_free_scsi_task(data);
}

/* One pass of per_lun bytes from block 2048 (1 MiB) of each of the n sessions, QD commands each, all in
 * one poll loop; the failures counted in r[i].failed */
static void raw_pass(struct rawlun *r, int n, int write, uint64_t per_lun, size_t req, uint8_t *mem0)
{
	uint32_t blocks = (uint32_t)(req / 512);
	size_t slots = (size_t)QD * (size_t)n, slot = 0;
	int busy;

	for (int i = 0; i < n; i++) {
		r[i].pos = 2048;
		r[i].limit = 2048 + per_lun / 512;
	}
	do {
		struct pollfd pf[MAX_LUNS];
		busy = 0;
		for (int i = 0; i < n; i++) {
			while (r[i].inflight < QD && r[i].pos < r[i].limit && !r[i].failed) {
				uint8_t *mem = mem0 + (slot++ % slots) * req;
				struct scsi_task *t =
					write ? iscsi_write16_task(r[i].isc, r[i].lun, r[i].pos, mem, (uint32_t)req, 512, 0, 0, 0, 0, 0,
								   raw_cb, &r[i])
					      : iscsi_read16_task(r[i].isc, r[i].lun, r[i].pos, (uint32_t)req, 512, 0, 0, 0, 0, 0,
								  raw_cb, &r[i]);
				if (!t) {
					r[i].failed++;
					break;
				}
				if (!write)
					scsi_task_add_data_in_buffer(t, (int)req, mem);
				r[i].inflight++;
				r[i].pos += blocks;
			}
			pf[i].fd = iscsi_get_fd(r[i].isc);
			pf[i].events = (short)iscsi_which_events(r[i].isc);
			if (r[i].inflight > 0)
				busy = 1;
		}
		if (!busy)
			break;
		if (poll(pf, (nfds_t)n, 1000) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++)
			if (pf[i].revents && iscsi_service(r[i].isc, pf[i].revents) < 0)
				r[i].failed++;
	} while (busy);
}

/* MiB/s aggregate of a timed raw pass over n LUNs (fresh sessions, as a separate program would have),
 * after an untimed one of an eighth of the bytes; -1 on failure. *cpu: as for the engine. */
static double raw_run(const struct benchlab *l, int n, int write, uint64_t per_lun, size_t req, double *cpu)
{
	struct rawlun r[MAX_LUNS] = { 0 };
	uint8_t *mem0 = ring_get((size_t)QD * (size_t)n * req);
	double t0 = 0, t1 = 0, c0;
	int failed = 0;

	if (!mem0)
		return -1;
	for (int i = 0; i < n; i++) {
		r[i].isc = lab_iscsi_connect(l->urls[i], INITIATOR, &r[i].lun);
		if (!r[i].isc) {
			fprintf(stderr, "bench-blkmap: raw connect to %s failed\n", l->urls[i]);
			for (int k = 0; k < i; k++)
				iscsi_destroy_context(r[k].isc);
			return -1;
		}
	}
	raw_pass(r, n, write, warm_bytes(per_lun, req), req, mem0);
	for (int i = 0; i < n; i++)
		failed += r[i].failed;
	if (!failed) {
		c0 = cpu_s(RUSAGE_SELF);
		t0 = benchlab_now();
		raw_pass(r, n, write, per_lun, req, mem0);
		t1 = benchlab_now();
		*cpu = per_gib(cpu_s(RUSAGE_SELF) - c0, (double)per_lun * n);
	}
	for (int i = 0; i < n; i++) {
		failed += r[i].failed;
		iscsi_logout_sync(r[i].isc);
		iscsi_destroy_context(r[i].isc);
	}
	if (failed) {
		fprintf(stderr, "bench-blkmap: raw %s had %d failures\n", write ? "write" : "read", failed);
		return -1;
	}
	return (double)per_lun * n / MIB / (t1 - t0);
}

/* ---- iscsi-perf, one process per LUN at the same time ------------------------------------------- */

/* MiB/s aggregate of iscsi-perf on n LUNs for the given seconds, after a warm-up read of an eighth of
 * per_lun bytes on each; *cpu: the iscsi-perf processes' CPU seconds per GiB */
static double perf_run(const struct benchlab *l, int n, size_t req, int seconds, uint64_t per_lun, double *cpu)
{
	pid_t pids[MAX_LUNS];
	char outs[MAX_LUNS][128];
	double total = 0, c0, warm_cpu;

	/* iscsi-perf cannot be warmed up inside its own processes: a raw pass of the same reads readies
	 * tgtd and the kernel instead (the timed side of it is not used) */
	if (raw_run(l, n, 0, warm_bytes(per_lun, req), req, &warm_cpu) < 0)
		return -1;
	c0 = cpu_s(RUSAGE_CHILDREN);

	for (int i = 0; i < n; i++) {
		char b[32], t[32];
		snprintf(outs[i], sizeof(outs[i]), "%s.perf%d", l->dir, i);
		snprintf(b, sizeof(b), "%zu", req / 512);
		snprintf(t, sizeof(t), "%d", seconds);
		pids[i] = fork();
		if (pids[i] == 0) {
			FILE *f = freopen(outs[i], "w", stdout);
			(void)f;
			execlp("iscsi-perf", "iscsi-perf", "-i", INITIATOR, "-m", "32", "-b", b, "-t", t, l->urls[i],
			       (char *)NULL);
			_exit(127);
		}
	}
	for (int i = 0; i < n; i++) {
		int st;
		FILE *f;
		char buf[65536];
		size_t len;
		char *p, *last = NULL;
		waitpid(pids[i], &st, 0);
		f = fopen(outs[i], "r");
		if (!f)
			return -1;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		unlink(outs[i]);
		buf[len] = 0;
		for (p = buf; (p = strstr(p, "iops average ")); p++)
			last = p;
		if (!last || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench-blkmap: iscsi-perf on %s failed\n", l->urls[i]);
			return -1;
		}
		total += strtod(last + 13, NULL) * (double)req / MIB;
	}
	*cpu = per_gib(cpu_s(RUSAGE_CHILDREN) - c0, total * MIB * seconds);
	return total;
}

/* ---- volumes over a lab ------------------------------------------------------------------------- */

static struct blkmap_vol *stripe_over(struct blkmap_ctx *ctx, const struct benchlab *l, int n, uint64_t per_lun)
{
	struct blkmap_vol *vol = NULL;
	uint32_t slices[MAX_LUNS], idx;

	if (blkmap_vol_create(&vol) < 0)
		return NULL;
	for (int i = 0; i < n; i++) {
		uint8_t sig[8] = { 'B', 'E', 'N', 'C', 'H', 0, 0, (uint8_t)i };
		struct blkmap_sig_comp c = { 512, sizeof(sig), sig };
		struct blkmap_dev *dev = NULL;
		if (blkmap_vol_add_simple(vol, &c, 1, &idx) < 0 || blkmap_dev_open(ctx, l->urls[i], 0, &dev) < 0 ||
		    blkmap_vol_bind(vol, idx, dev) < 0 || blkmap_vol_add_slice(vol, MIB, per_lun, idx, &slices[i]) < 0) {
			fprintf(stderr, "bench-blkmap: volume over %s: %s %s\n", l->urls[i], blkmap_errstr(ctx),
				blkmap_vol_errstr(vol));
			blkmap_dev_close(dev);
			blkmap_vol_free(vol);
			return NULL;
		}
		blkmap_dev_close(dev); /* the volume holds its own reference */
	}
	if (blkmap_vol_add_stripe(vol, MIB, slices, (unsigned)n, &idx) < 0 || blkmap_vol_validate(vol) < 0) {
		fprintf(stderr, "bench-blkmap: %s\n", blkmap_vol_errstr(vol));
		blkmap_vol_free(vol);
		return NULL;
	}
	return vol;
}

/* A pair of series measured round by round: the engine's rate and the baseline's, taken back to back
 * in each round (the order alternating from round to round, so that neither side always runs on the
 * warmer or the quieter half). The ratio shown is the median of the rounds' own ratios: a burst of
 * load from others on a shared machine then moves one round, not the figure. */
#define MAX_ROUNDS 9

struct pair {
	double eng[MAX_ROUNDS], raw[MAX_ROUNDS];         /* MiB/s */
	double eng_cpu[MAX_ROUNDS], raw_cpu[MAX_ROUNDS]; /* initiator CPU s/GiB */
	int n, failed;
};

static void pair_add(struct pair *p, double eng, double eng_cpu, double raw, double raw_cpu)
{
	if (eng < 0 || raw <= 0) {
		p->failed = 1;
		return;
	}
	if (p->n < MAX_ROUNDS) {
		p->eng[p->n] = eng;
		p->raw[p->n] = raw;
		p->eng_cpu[p->n] = eng_cpu;
		p->raw_cpu[p->n] = raw_cpu;
		p->n++;
	}
}

/* Prints the row; returns -1 when a run of it failed. */
static int row(const char *what, const char *op, const char *req, struct pair *p, const char *base, double target)
{
	double ratios[MAX_ROUNDS], lo = 0, hi = 0, e, r, m;

	if (p->failed || p->n == 0) {
		printf("%-10s %-6s %-6s %10s %10s  %-18s %s\n", what, op, req, "failed", "-", base, "-");
		return -1;
	}
	for (int i = 0; i < p->n; i++) {
		ratios[i] = p->eng[i] / p->raw[i];
		if (i == 0 || ratios[i] < lo)
			lo = ratios[i];
		if (i == 0 || ratios[i] > hi)
			hi = ratios[i];
	}
	if (benchlab_verbose())
		for (int i = 0; i < p->n; i++)
			printf("  round %d (%s first): engine %7.1f  raw %7.1f  ratio %4.2f  cpu %4.2f %4.2f\n", i + 1,
			       i % 2 ? "raw" : "engine", p->eng[i], p->raw[i], ratios[i], p->eng_cpu[i], p->raw_cpu[i]);
	m = benchlab_median(ratios, p->n);
	e = benchlab_median(p->eng, p->n);
	r = benchlab_median(p->raw, p->n);
	printf("%-10s %-6s %-6s %10.1f %10.1f  %-18s %5.2f  %4.2f-%4.2f  %5.2f %5.2f%s\n", what, op, req, e, r, base, m,
	       lo, hi, benchlab_median(p->eng_cpu, p->n), benchlab_median(p->raw_cpu, p->n),
	       m < target ? "  (below target)" : "");
	return 0;
}

static void header(void)
{
	printf("%-10s %-6s %-6s %10s %10s  %-18s %s  %-9s  %s\n", "lab", "op", "req", "engine", "raw", "raw is", "ratio",
	       "rounds", "cpu s/GiB eng raw");
}

static int perf_seconds(void)
{
	return benchlab_quick() ? 1 : 2;
}

#define PLAIN_ROUNDS 5
#define SHAPED_ROUNDS 5

/* One lab's setting for a round: what each kind of run reads or writes */
struct setup {
	struct blkmap_ctx *ctx;
	struct blkmap_vol *vol;
	const struct benchlab *lab;
	int n;            /* LUNs */
	uint64_t per_lun; /* bytes per LUN of a fixed pass */
	size_t req;
	unsigned window;  /* engine requests in flight: QD per LUN */
};

enum run_kind { ENGINE_READ, ENGINE_TIMED_READ, ENGINE_WRITE, RAW_READ, RAW_WRITE, PERF_READ };

static double run(const struct setup *u, enum run_kind k, double *cpu)
{
	uint64_t total = u->per_lun * (uint64_t)u->n;

	switch (k) {
	case ENGINE_READ:
	case ENGINE_WRITE:
		return engine_run(u->ctx, u->vol, k == ENGINE_WRITE, total, u->req, u->window, cpu);
	case ENGINE_TIMED_READ:
		return engine_timed_run(u->ctx, u->vol, total, u->req, u->window, perf_seconds(), cpu);
	case RAW_READ:
	case RAW_WRITE:
		return raw_run(u->lab, u->n, k == RAW_WRITE, u->per_lun, u->req, cpu);
	case PERF_READ:
		return perf_run(u->lab, u->n, u->req, perf_seconds(), u->per_lun, cpu);
	}
	return -1;
}

/* The engine side and the baseline of one row, measured alike */
struct row_spec {
	enum run_kind eng, base;
	const char *op, *base_name;
};

/* Plain and shaped labs print the same three rows: reads against iscsi-perf, both time-based; reads
 * and writes against our raw libiscsi reader and writer, both fixed passes (a stripe's pass ends with
 * its slowest LUN, and so does theirs) */
static const struct row_spec rows[3] = {
	{ ENGINE_TIMED_READ, PERF_READ, "read", "iscsi-perf" },
	{ ENGINE_READ, RAW_READ, "read", "libiscsi reader" },
	{ ENGINE_WRITE, RAW_WRITE, "write", "libiscsi writer" },
};

/* One round: each row's two runs back to back, the engine first in even rounds and last in odd ones */
static void round_rows(const struct setup *u, int round, struct pair *pairs)
{
	for (int i = 0; i < 3; i++) {
		double e, b, ec = 0, bc = 0;
		if (round % 2 == 0) {
			e = run(u, rows[i].eng, &ec);
			b = run(u, rows[i].base, &bc);
		} else {
			b = run(u, rows[i].base, &bc);
			e = run(u, rows[i].eng, &ec);
		}
		pair_add(&pairs[i], e, ec, b, bc);
	}
}

/* Prints a lab's three rows; returns -1 when a run of one failed */
static int print_rows(const char *what, const char *req, struct pair *pairs, const char *xn, double target)
{
	int rc = 0;

	for (int i = 0; i < 3; i++) {
		char base[40];
		snprintf(base, sizeof(base), "%s%s", rows[i].base_name, rows[i].base == PERF_READ ? xn : "");
		rc |= row(what, rows[i].op, req, &pairs[i], base, target);
	}
	return rc ? -1 : 0;
}

static int plain(void)
{
	const uint64_t per_lun = benchlab_scale(256 * MIB), total = 4 * per_lun;
	static const size_t reqs[2] = { 128 << 10, 1 << 20 };
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_vol *vol;
	struct benchlab l;
	int rc = 0;

	if (!ring_get((size_t)4 * QD << 20) || benchlab_start(&l, "--luns 4 --size 257M") < 0)
		return 1;
	blkmap_ctx_opts_init(&o);
	o.initiator_name = INITIATOR;
	if (blkmap_ctx_create(&o, &ctx) < 0 || !(vol = stripe_over(ctx, &l, 4, per_lun))) {
		blkmap_ctx_destroy(ctx);
		benchlab_stop(&l);
		return 1;
	}
	/* fill once so reads return data the target really stores */
	{
		double c;
		engine_run(ctx, vol, 1, total, 1 << 20, 128, &c);
	}
	printf("plain lab: 4 RAM LUNs on one tgtd (127.0.0.1), 4-way stripe with 1 MiB unit, %" PRIu64
	       " MiB sequential\n(against iscsi-perf: %d s of reads, both sides);\nengine: one context, %u commands "
	       "per LUN. %d rounds, engine and raw back to back in each (order\nalternating), each run after an "
	       "untimed eighth; MiB/s medians; ratio: the median of the rounds'\nratios, and their range; cpu: the "
	       "initiator's CPU seconds (user + system) per GiB moved, medians\n",
	       total / MIB, perf_seconds(), QD, PLAIN_ROUNDS);
	header();
	for (int k = 0; k < 2; k++) {
		/* 128 requests in flight: with a 1 MiB unit that is QD commands per LUN at either size */
		struct setup u = { ctx, vol, &l, 4, per_lun, reqs[k], 4 * QD };
		struct pair pairs[3] = { 0 };
		for (int round = 0; round < PLAIN_ROUNDS; round++)
			round_rows(&u, round, pairs);
		rc |= print_rows("plain", k ? "1M" : "128K", pairs, " x4", 0.9) < 0;
	}
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	benchlab_stop(&l);
	return rc;
}

/* The shaped lab at N = 1, 2, 4, 8 storage hosts, or at only_hosts when it is not 0 */
static int shaped(int only_hosts)
{
	static const int ns[4] = { 1, 2, 4, 8 };
	const uint64_t per_lun = benchlab_scale(96 * MIB);
	int rc = 0;

	if (geteuid() != 0) {
		printf("shaped lab: skipped (needs root for network namespaces and tc)\n");
		return 0;
	}
	if (!ring_get((size_t)QD * ns[3] << 20))
		return 1;
	printf("\nshaped lab: N storage hosts, one tgtd and LUN each behind a 400 Mbit/s veth (tc htb);\n"
	       "stripe over the N LUNs, 1 MiB unit and requests, %u commands per LUN, %" PRIu64
	       " MiB per LUN;\n%d rounds as above\n",
	       QD, per_lun / MIB, SHAPED_ROUNDS);
	header();
	for (int k = 0; k < 4; k++) {
		if (only_hosts && ns[k] != only_hosts)
			continue;
		struct blkmap_ctx_opts o;
		struct blkmap_ctx *ctx = NULL;
		struct blkmap_vol *vol;
		struct benchlab l;
		uint64_t total = per_lun * (uint64_t)ns[k];
		unsigned window = (unsigned)(QD * ns[k]);
		char shape[100], what[16];
		snprintf(shape, sizeof(shape), "--hosts %d --rate 400 --size 100M", ns[k]);
		snprintf(what, sizeof(what), "N=%d", ns[k]);
		if (benchlab_start(&l, shape) < 0) {
			rc = 1;
			continue;
		}
		blkmap_ctx_opts_init(&o);
		o.initiator_name = INITIATOR;
		if (blkmap_ctx_create(&o, &ctx) < 0 || !(vol = stripe_over(ctx, &l, ns[k], per_lun))) {
			blkmap_ctx_destroy(ctx);
			benchlab_stop(&l);
			rc = 1;
			continue;
		}
		/* as in the plain lab: fill once, so reads return data the targets store and every tgtd has
		 * grown its buffers before the first timed run; then read it all once, untimed (the first
		 * read after the fill ran a tenth slower on every link here, whichever side it was) */
		if (engine_pass(ctx, vol, 1, total, 1 << 20, window) < 0 ||
		    engine_pass(ctx, vol, 0, total, 1 << 20, window) < 0)
			rc = 1;
		struct setup u = { ctx, vol, &l, ns[k], per_lun, 1 << 20, window };
		struct pair pairs[3] = { 0 };
		for (int round = 0; round < SHAPED_ROUNDS; round++)
			round_rows(&u, round, pairs);
		rc |= print_rows(what, "1M", pairs, " xN", 0.95) < 0;
		blkmap_vol_free(vol);
		blkmap_ctx_destroy(ctx);
		benchlab_stop(&l);
	}
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0, only_plain = 0, only_shaped = 0, only_hosts = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plain")) {
			only_plain = 1;
		} else if (!strcmp(argv[i], "--shaped")) {
			only_shaped = 1;
		} else if (!strcmp(argv[i], "--hosts") && i + 1 < argc &&
			   (!strcmp(argv[i + 1], "1") || !strcmp(argv[i + 1], "2") || !strcmp(argv[i + 1], "4") ||
			    !strcmp(argv[i + 1], "8"))) {
			only_shaped = 1;
			only_hosts = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: bench-blkmap [--plain | --shaped | --hosts 1|2|4|8]\n"
					"  (BENCH_VERBOSE=1 prints every round; BENCH_QUICK=1 moves an eighth of the data)\n");
			return 2;
		}
	}
	benchlab_install_cleanup("bench-blkmap");
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!only_shaped)
		rc |= plain();
	if (!only_plain)
		rc |= shaped(only_hosts);
	free(ring);
	return rc;
}
