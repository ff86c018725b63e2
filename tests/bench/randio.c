/* bench-randio: small random I/O through layouts (libpnfs's async API) against the blkmap engine on
 * the same LUNs, measured in the same run (issue 30, part 2). Plain lab: 4 RAM LUNs on one tgtd, a
 * pool striped over them, pnfs-mds with SCSI layouts. A 1 GiB file is written once through layouts
 * (8 MiB writes) and committed; then 4 KiB and 64 KiB random reads and writes at queue depth 1, 32
 * and 128, each row for a fixed time, through libpnfs and through the engine at the same random file
 * offsets mapped through the file's extents to the pool's volume (so the raw I/O lands where the
 * file's does). Printed: IOPS, the ratio to raw (target >= 0.9), p50/p99 latency in microseconds.
 * Then the first-write path: 64 KiB writes (sequential, then random) to a fresh 256 MiB file with
 * fsync every 64 writes: IOPS and LAYOUTGETs / LAYOUTCOMMITs per GiB from pnfs_get_stats().
 * BENCH_QUICK=1: shorter rows and a 128 MiB file (to check the program). */
#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "client/pnfs.h"
#include "tests/bench/benchlab.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB BENCH_MIB
#define INITIATOR "iqn.2024-01.org.pnfs-san:bench-randio"
#define ENGINE_KEY 0x62656e6372616e64ull /* "bencrand" */
#define MAX_DEPTH 128
#define MAX_LAT 2000000

static uint64_t file_bytes;
static double row_secs;

/* ---- random offsets and latencies --------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double *lat;
static size_t nlat;

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double p)
{
	size_t i;
	if (!nlat)
		return -1;
	i = (size_t)(p * (double)(nlat - 1));
	return lat[i] * 1e6;
}

/* ---- one row: depth requests kept in flight for row_secs ---------------------------------------- */

struct slot {
	struct row *r;
	double t0;
	uint8_t *buf;
};

struct row {
	size_t req;
	unsigned depth, inflight;
	int write, err, stop;
	uint64_t done;
	struct pnfs_context *pc;
	struct pnfs_fh *fh;
	struct blkmap_vol *vol;
	const struct pnfs_extent *ext;
	size_t next;
	struct slot slots[MAX_DEPTH];
};

/* The volume offset of file offset off (the extents cover the whole file). */
static uint64_t map_off(const struct row *r, uint64_t off)
{
	for (size_t i = 0; i < r->next; i++)
		if (off >= r->ext[i].file_offset && off < r->ext[i].file_offset + r->ext[i].length)
			return r->ext[i].storage_offset + (off - r->ext[i].file_offset);
	return UINT64_MAX;
}

static int submit(struct slot *s);

static void done_one(struct slot *s, int status)
{
	struct row *r = s->r;
	r->inflight--;
	if (status < 0) {
		r->err = status;
		return;
	}
	if (nlat < MAX_LAT)
		lat[nlat++] = benchlab_now() - s->t0;
	r->done++;
	if (!r->stop && !r->err && submit(s) < 0)
		r->err = -EIO;
}

static void pnfs_done(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	(void)ctx;
	(void)data;
	done_one(priv, status);
}

static void vol_done(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	(void)ctx;
	(void)res;
	done_one(priv, status);
}

static int submit(struct slot *s)
{
	struct row *r = s->r;
	uint64_t off = rnd() % (file_bytes / r->req) * r->req;
	int rc;

	s->t0 = benchlab_now();
	if (r->pc) {
		rc = r->write ? pnfs_pwrite_async(r->pc, r->fh, s->buf, r->req, off, pnfs_done, s)
			      : pnfs_pread_async(r->pc, r->fh, s->buf, r->req, off, pnfs_done, s);
	} else {
		struct iovec v = { s->buf, r->req };
		uint64_t voff = map_off(r, off);
		if (voff == UINT64_MAX)
			return -1;
		rc = r->write ? blkmap_vol_writev_async(r->vol, voff, &v, 1, vol_done, s)
			      : blkmap_vol_readv_async(r->vol, voff, &v, 1, vol_done, s);
	}
	if (rc < 0)
		return rc;
	r->inflight++;
	return 0;
}

/* IOPS of one row; through libpnfs when pc is set, else through the engine (bctx, vol). */
static double run_row(struct row *r, struct blkmap_ctx *bctx)
{
	double t0, t;

	nlat = 0;
	r->done = 0;
	r->stop = 0;
	r->err = 0;
	t0 = benchlab_now();
	for (unsigned i = 0; i < r->depth; i++) {
		r->slots[i].r = r;
		if (submit(&r->slots[i]) < 0) {
			r->err = -EIO;
			break;
		}
	}
	while (r->inflight) {
		if (!r->stop && benchlab_now() - t0 >= row_secs)
			r->stop = 1;
		if (r->pc ? pnfs_run_once(r->pc, 1000) < 0 : blkmap_run_once(bctx, 1000) < 0) {
			r->err = -EIO;
			break;
		}
	}
	t = benchlab_now() - t0;
	if (r->err)
		return -1;
	qsort(lat, nlat, sizeof(*lat), dcmp);
	return (double)r->done / t;
}

/* Write bytes of fh sequentially (req-byte writes, depth in flight), or randomly in req-byte pieces
 * covering it once, fsync every fsync_every writes. Returns IOPS. */
static double first_write(struct pnfs_context *pc, struct pnfs_fh *fh, uint64_t bytes, size_t req, int random,
			  unsigned fsync_every)
{
	uint64_t n = bytes / req, *order = malloc(n * sizeof(*order));
	uint8_t *buf = malloc(req);
	double t0 = benchlab_now();
	int rc = 0;

	if (!order || !buf) {
		free(order);
		free(buf);
		return -1;
	}
	memset(buf, 0x3c, req);
	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	if (random)
		for (uint64_t i = n - 1; i > 0; i--) {
			uint64_t j = rnd() % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
	for (uint64_t i = 0; i < n && rc >= 0; i++) {
		rc = (int)pnfs_pwrite(pc, fh, buf, req, order[i] * req);
		if (rc >= 0 && (i + 1) % fsync_every == 0)
			rc = pnfs_fsync(pc, fh);
	}
	if (rc >= 0)
		rc = pnfs_fsync(pc, fh);
	free(order);
	free(buf);
	if (rc < 0) {
		fprintf(stderr, "bench-randio: first write: %s\n", pnfs_get_error(pc));
		return -1;
	}
	return (double)n / (benchlab_now() - t0);
}

int main(void)
{
	static const size_t sizes[] = { 4096, 65536 };
	static const unsigned depths[] = { 1, 32, 128 };
	struct benchlab l;
	struct pnfs_context *pc = NULL;
	struct pnfs_fh *fh = NULL;
	struct pnfs_extent *ext = NULL;
	size_t next = 0;
	struct blkmap_ctx_opts bo;
	struct blkmap_ctx *bctx = NULL;
	struct blkmap_vol *vol = NULL;
	struct row *r = NULL;
	char err[300];
	uint8_t *bufs = NULL, *big = NULL;
	int rc = 1;

	benchlab_install_cleanup("bench-randio");
	file_bytes = benchlab_quick() ? 128 * MIB : 1024 * MIB;
	row_secs = benchlab_quick() ? 0.5 : 1.5;
	lat = malloc(MAX_LAT * sizeof(*lat));
	r = calloc(1, sizeof(*r));
	bufs = aligned_alloc(4096, MAX_DEPTH * 65536);
	big = malloc(8 * MIB);
	if (!lat || !r || !bufs || !big)
		return 1;
	memset(bufs, 0xa5, MAX_DEPTH * 65536);
	memset(big, 0x5a, 8 * MIB);
	if (benchlab_start(&l, "--luns 4 --size 512M") < 0)
		return 1;
	if (benchlab_start_mds(&l, "--scsi-layouts", "yes") < 0)
		goto out;
	pc = benchlab_client(&l, INITIATOR, MAX_DEPTH);
	if (!pc)
		goto out;
	if (pnfs_open(pc, "/randio", O_CREAT | O_RDWR, 0644, &fh) < 0) {
		fprintf(stderr, "bench-randio: open: %s\n", pnfs_get_error(pc));
		goto out;
	}
	for (uint64_t o = 0; o < file_bytes; o += 8 * MIB)
		if (pnfs_pwrite(pc, fh, big, 8 * MIB, o) < 0) {
			fprintf(stderr, "bench-randio: preallocate: %s\n", pnfs_get_error(pc));
			goto out;
		}
	if (pnfs_fsync(pc, fh) < 0 || pnfs_fh_extents(fh, &ext, &next) < 0 || !next) {
		fprintf(stderr, "bench-randio: commit: %s\n", pnfs_get_error(pc));
		goto out;
	}
	blkmap_ctx_opts_init(&bo);
	bo.initiator_name = INITIATOR "-raw";
	if (blkmap_ctx_create(&bo, &bctx) < 0)
		goto out;
	if (blkmap_vol_read_pool(l.pool, &vol, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench-randio: %s\n", err);
		goto out;
	}
	if (benchlab_bind_registered(bctx, &l, vol, ENGINE_KEY) < 0)
		goto out;

	printf("bench-randio: plain lab (%d RAM LUNs, one tgtd), %" PRIu64 " MiB file in %zu extents, "
	       "%.1f s per row; raw = the blkmap engine at the same offsets (mapped through the file's extents)\n",
	       l.n, file_bytes / MIB, next, row_secs);
	printf("%-6s %-5s %5s %10s %10s %6s %7s %9s %9s %9s %9s\n", "size", "op", "depth", "pnfs IOPS", "raw IOPS",
	       "ratio", "target", "p50 us", "p99 us", "raw p50", "raw p99");
	for (size_t si = 0; si < 2; si++)
		for (int w = 0; w < 2; w++)
			for (size_t di = 0; di < 3; di++) {
				double iops[2], p50[2], p99[2];
				for (int raw = 0; raw < 2; raw++) {
					memset(r, 0, sizeof(*r));
					r->req = sizes[si];
					r->depth = depths[di];
					r->write = w;
					r->pc = raw ? NULL : pc;
					r->fh = fh;
					r->vol = vol;
					r->ext = ext;
					r->next = next;
					for (unsigned i = 0; i < MAX_DEPTH; i++)
						r->slots[i].buf = bufs + (size_t)i * 65536;
					iops[raw] = run_row(r, bctx);
					if (iops[raw] < 0) {
						fprintf(stderr, "bench-randio: %s row failed: %s\n", raw ? "raw" : "pnfs",
							raw ? blkmap_errstr(bctx) : pnfs_get_error(pc));
						goto out;
					}
					p50[raw] = pct(0.5);
					p99[raw] = pct(0.99);
				}
				printf("%-6s %-5s %5u %10.0f %10.0f %6.2f %7s %9.0f %9.0f %9.0f %9.0f\n",
				       sizes[si] == 4096 ? "4KiB" : "64KiB", w ? "write" : "read", depths[di], iops[0],
				       iops[1], iops[0] / iops[1], ">=0.90", p50[0], p99[0], p50[1], p99[1]);
				fflush(stdout);
			}
	pnfs_close(pc, fh);
	fh = NULL;

	/* the first-write path: fresh files, 64 KiB writes, fsync every 64 */
	printf("first write: fresh %" PRIu64 " MiB file, 64 KiB writes, fsync every 64 writes (sync calls, depth 1)\n",
	       file_bytes / 4 / MIB);
	printf("%-10s %10s %14s %16s\n", "order", "IOPS", "LAYOUTGET/GiB", "LAYOUTCOMMIT/GiB");
	for (int random = 0; random < 2; random++) {
		struct pnfs_stats s0, s1;
		double iops, gib = (double)(file_bytes / 4) / (double)(1024 * MIB);
		if (pnfs_open(pc, random ? "/first-rand" : "/first-seq", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh) < 0) {
			fprintf(stderr, "bench-randio: open: %s\n", pnfs_get_error(pc));
			goto out;
		}
		pnfs_get_stats(pc, &s0);
		iops = first_write(pc, fh, file_bytes / 4, 65536, random, 64);
		pnfs_get_stats(pc, &s1);
		if (iops < 0)
			goto out;
		printf("%-10s %10.0f %14.1f %16.1f\n", random ? "random" : "sequential", iops,
		       (double)(s1.layoutgets - s0.layoutgets) / gib, (double)(s1.layoutcommits - s0.layoutcommits) / gib);
		pnfs_close(pc, fh);
		fh = NULL;
	}
	rc = 0;
out:
	if (fh)
		pnfs_close(pc, fh);
	if (pc)
		pnfs_context_destroy(pc);
	free(ext);
	if (vol)
		blkmap_vol_free(vol);
	if (bctx)
		blkmap_ctx_destroy(bctx);
	benchlab_stop(&l);
	return rc;
}
