/* bench-randio: small random I/O through layouts (libpnfs's async API) against bare libiscsi on the
 * same LUNs, measured in the same run (issue 30, part 2). Plain lab: 4 RAM LUNs on one tgtd, a pool
 * striped over them, pnfs-mds with SCSI layouts. A 1 GiB file is written once through layouts (8 MiB
 * writes) and committed; then 4 KiB and 64 KiB random reads and writes at queue depth 1, 32 and 128,
 * each row for a fixed time, three ways on the same sequence of random file offsets: libpnfs; the
 * blkmap engine at the volume offsets the file's extents give; and bare libiscsi (READ(16)/WRITE(16)
 * tasks, one context per LUN, one poll loop over all) at the LUN and LBA each offset maps to. Rounds
 * are interleaved (libpnfs, engine, raw, then again in turn) so a noisy round shows in the ratio's
 * range. Printed: median IOPS, the ratio libpnfs/raw (median of the rounds, target >= 0.9, and its
 * min-max), p50/p99 latency in microseconds over all rounds.
 * Then the first-write path: 64 KiB writes (sequential, then random) to a fresh 256 MiB file with
 * fsync every 64 writes: IOPS and LAYOUTGETs / LAYOUTCOMMITs per GiB from pnfs_get_stats().
 * BENCH_QUICK=1: shorter rows, two rounds and a 128 MiB file (to check the program).
 * BENCH_RANDIO_ROW="4KiB write 1" (size, op, depth as printed): that row alone (to profile it). */
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
#define RAW_KEY 0x62656e6372617721ull    /* "bencraw!" */
#define MAX_DEPTH 128
#define MAX_LAT 2000000
#define MAX_ROUNDS 5
#define MAX_PARTS 4

enum side { PNFS, ENGINE, RAW, NSIDES };

static uint64_t file_bytes;
static double row_secs;

/* ---- random offsets and latencies --------------------------------------------------------------- */

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct lats {
	double *v;
	size_t n;
};

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(struct lats *l, double p)
{
	size_t i;
	if (!l->n)
		return -1;
	i = (size_t)(p * (double)(l->n - 1));
	return l->v[i] * 1e6;
}

/* ---- where the file's bytes are: file offset -> (lab LUN, byte offset on it) --------------------- */

struct frun {
	uint64_t foff, len, loff;
	int lun;
};

static struct frun *fruns;
static size_t nfruns;

static int frun_cmp(const void *a, const void *b)
{
	const struct frun *x = a, *y = b;
	return x->foff < y->foff ? -1 : x->foff > y->foff;
}

static int build_fruns(struct benchlab *l, struct blkmap_vol *vol, const struct pnfs_extent *ext, size_t next)
{
	for (size_t i = 0; i < next; i++) {
		struct blkmap_run *runs;
		size_t nr;
		struct frun *nf;
		if (blkmap_vol_map(vol, ext[i].storage_offset, ext[i].length, &runs, &nr) < 0)
			return -1;
		nf = realloc(fruns, (nfruns + nr) * sizeof(*fruns));
		if (!nf) {
			free(runs);
			return -1;
		}
		fruns = nf;
		for (size_t k = 0; k < nr; k++) {
			struct frun *f = &fruns[nfruns++];
			f->foff = ext[i].file_offset + (runs[k].vol_offset_bytes - ext[i].storage_offset);
			f->len = runs[k].length_bytes;
			f->loff = runs[k].leaf_offset_bytes;
			f->lun = benchlab_leaf_lun(l, vol, runs[k].leaf);
			if (f->lun < 0) {
				free(runs);
				return -1;
			}
		}
		free(runs);
	}
	qsort(fruns, nfruns, sizeof(*fruns), frun_cmp);
	return 0;
}

static const struct frun *frun_at(uint64_t foff)
{
	size_t lo = 0, hi = nfruns;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (foff < fruns[mid].foff)
			hi = mid;
		else if (foff >= fruns[mid].foff + fruns[mid].len)
			lo = mid + 1;
		else
			return &fruns[mid];
	}
	return NULL;
}

/* ---- one row: depth requests kept in flight for row_secs ---------------------------------------- */

struct slot {
	struct row *r;
	double t0;
	uint8_t *buf;
	unsigned parts, bad;
	struct benchlab_raw_op ops[MAX_PARTS];
};

struct row {
	size_t req;
	unsigned depth, inflight;
	int write, err, stop;
	enum side side;
	uint64_t done;
	struct lats *lat;
	struct pnfs_context *pc;
	struct pnfs_fh *fh;
	struct blkmap_ctx *bctx;
	struct blkmap_vol *vol;
	struct benchlab_raw *raw;
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
	if (r->lat->n < MAX_LAT)
		r->lat->v[r->lat->n++] = benchlab_now() - s->t0;
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

static void raw_done(struct benchlab_raw_op *op, int status)
{
	struct slot *s = op->priv;
	if (status < 0)
		s->bad = 1;
	if (--s->parts == 0)
		done_one(s, s->bad ? -EIO : 0);
}

/* Bare libiscsi: one command per piece of the file's runs the request covers (one, unless it
 * straddles a stripe unit or an extent). */
static int raw_submit(struct slot *s, uint64_t off)
{
	struct row *r = s->r;
	uint64_t done = 0;

	s->bad = 0;
	s->parts = 0;
	while (done < r->req) {
		const struct frun *f = frun_at(off + done);
		uint64_t take;
		if (!f || s->parts == MAX_PARTS)
			return -1;
		take = f->foff + f->len - (off + done);
		if (take > r->req - done)
			take = r->req - done;
		s->ops[s->parts].cb = raw_done;
		s->ops[s->parts].priv = s;
		if (benchlab_raw_io(r->raw, f->lun, r->write, f->loff + (off + done - f->foff), s->buf + done, take,
				    &s->ops[s->parts]) < 0)
			return -1;
		s->parts++;
		done += take;
	}
	return 0;
}

static int submit(struct slot *s)
{
	struct row *r = s->r;
	uint64_t off = rnd() % (file_bytes / r->req) * r->req;
	int rc;

	s->t0 = benchlab_now();
	if (r->side == PNFS) {
		rc = r->write ? pnfs_pwrite_async(r->pc, r->fh, s->buf, r->req, off, pnfs_done, s)
			      : pnfs_pread_async(r->pc, r->fh, s->buf, r->req, off, pnfs_done, s);
	} else if (r->side == ENGINE) {
		struct iovec v = { s->buf, r->req };
		uint64_t voff = map_off(r, off);
		if (voff == UINT64_MAX)
			return -1;
		rc = r->write ? blkmap_vol_writev_async(r->vol, voff, &v, 1, vol_done, s)
			      : blkmap_vol_readv_async(r->vol, voff, &v, 1, vol_done, s);
	} else
		rc = raw_submit(s, off);
	if (rc < 0)
		return rc;
	r->inflight++;
	return 0;
}

static int turn(struct row *r)
{
	if (r->side == PNFS)
		return pnfs_run_once(r->pc, 1000);
	if (r->side == ENGINE)
		return blkmap_run_once(r->bctx, 1000);
	return benchlab_raw_run_once(r->raw, 1000);
}

/* IOPS of one row on r->side, offsets from seed. */
static double run_row(struct row *r, uint64_t seed)
{
	double t0, t;

	rng = seed;
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
		if (turn(r) < 0) {
			r->err = -EIO;
			break;
		}
	}
	t = benchlab_now() - t0;
	if (r->err)
		return -1;
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
	static const char *side_name[NSIDES] = { "pnfs", "engine", "raw" };
	struct benchlab l;
	struct pnfs_context *pc = NULL;
	struct pnfs_fh *fh = NULL;
	struct pnfs_extent *ext = NULL;
	size_t next = 0;
	struct blkmap_ctx_opts bo;
	struct blkmap_ctx *bctx = NULL;
	struct blkmap_vol *vol = NULL;
	struct benchlab_raw raw = { 0 };
	struct lats lat[NSIDES];
	struct row *r = NULL;
	char err[300];
	uint8_t *bufs = NULL, *big = NULL;
	const char *only = getenv("BENCH_RANDIO_ROW");
	int rc = 1, rounds;

	benchlab_install_cleanup("bench-randio");
	file_bytes = benchlab_quick() ? 128 * MIB : 1024 * MIB;
	row_secs = benchlab_quick() ? 0.5 : 1.0;
	rounds = benchlab_quick() ? 2 : 3;
	for (int k = 0; k < NSIDES; k++) {
		lat[k].v = malloc(MAX_LAT * sizeof(double));
		if (!lat[k].v)
			return 1;
	}
	r = calloc(1, sizeof(*r));
	bufs = aligned_alloc(4096, MAX_DEPTH * 65536);
	big = malloc(8 * MIB);
	if (!r || !bufs || !big)
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
	bo.initiator_name = INITIATOR "-engine";
	if (blkmap_ctx_create(&bo, &bctx) < 0)
		goto out;
	if (blkmap_vol_read_pool(l.pool, &vol, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench-randio: %s\n", err);
		goto out;
	}
	if (benchlab_bind_registered(bctx, &l, vol, ENGINE_KEY) < 0)
		goto out;
	if (build_fruns(&l, vol, ext, next) < 0) {
		fprintf(stderr, "bench-randio: cannot map the file's extents to the lab's LUNs\n");
		goto out;
	}
	if (benchlab_raw_open(&raw, &l, INITIATOR "-raw", RAW_KEY) < 0)
		goto out;

	printf("bench-randio: plain lab (%d RAM LUNs, one tgtd), %" PRIu64 " MiB file in %zu extents (%zu runs on "
	       "the LUNs), %.1f s per row and side, %d rounds interleaved; raw = bare libiscsi READ(16)/WRITE(16) "
	       "at the LUN and LBA of each file offset, engine = the blkmap engine at its volume offset\n",
	       l.n, file_bytes / MIB, next, nfruns, row_secs, rounds);
	printf("%-6s %-5s %5s %10s %10s %10s %6s %11s %7s %8s %8s %8s %8s\n", "size", "op", "depth", "pnfs IOPS",
	       "engine", "raw IOPS", "ratio", "range", "target", "p50 us", "p99 us", "raw p50", "raw p99");
	for (size_t si = 0; si < 2; si++)
		for (int w = 0; w < 2; w++)
			for (size_t di = 0; di < 3; di++) {
				double iops[NSIDES][MAX_ROUNDS], ratio[MAX_ROUNDS], lo = 1e9, hi = 0, m[NSIDES], mr;
				char label[32];
				snprintf(label, sizeof(label), "%s %s %u", sizes[si] == 4096 ? "4KiB" : "64KiB",
					 w ? "write" : "read", depths[di]);
				if (only && strcmp(only, label) != 0)
					continue;
				for (int k = 0; k < NSIDES; k++)
					lat[k].n = 0;
				for (int rd = 0; rd < rounds; rd++) {
					uint64_t seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(si * 64 + (size_t)w * 8 + di) << 32 | (uint64_t)rd);
					for (int k0 = 0; k0 < NSIDES; k0++) {
						/* each round starts with another side, so none always runs first */
						int k = (k0 + rd) % NSIDES;
						memset(r, 0, sizeof(*r));
						r->req = sizes[si];
						r->depth = depths[di];
						r->write = w;
						r->side = (enum side)k;
						r->lat = &lat[k];
						r->pc = pc;
						r->fh = fh;
						r->bctx = bctx;
						r->vol = vol;
						r->raw = &raw;
						r->ext = ext;
						r->next = next;
						for (unsigned i = 0; i < MAX_DEPTH; i++)
							r->slots[i].buf = bufs + (size_t)i * 65536;
						iops[k][rd] = run_row(r, seed);
						if (iops[k][rd] < 0) {
							fprintf(stderr, "bench-randio: %s row failed: %s\n", side_name[k],
								k == PNFS ? pnfs_get_error(pc)
								: k == ENGINE ? blkmap_errstr(bctx) : "libiscsi");
							goto out;
						}
					}
					ratio[rd] = iops[PNFS][rd] / iops[RAW][rd];
					lo = ratio[rd] < lo ? ratio[rd] : lo;
					hi = ratio[rd] > hi ? ratio[rd] : hi;
					if (benchlab_verbose())
						printf("  round %d: pnfs %.0f engine %.0f raw %.0f ratio %.2f\n", rd + 1,
						       iops[PNFS][rd], iops[ENGINE][rd], iops[RAW][rd], ratio[rd]);
				}
				for (int k = 0; k < NSIDES; k++) {
					m[k] = benchlab_median(iops[k], rounds);
					qsort(lat[k].v, lat[k].n, sizeof(double), dcmp);
				}
				mr = benchlab_median(ratio, rounds);
				char range[32];
				snprintf(range, sizeof(range), "%.2f-%.2f", lo, hi);
				printf("%-6s %-5s %5u %10.0f %10.0f %10.0f %6.2f %11s %7s %8.0f %8.0f %8.0f %8.0f\n",
				       sizes[si] == 4096 ? "4KiB" : "64KiB", w ? "write" : "read", depths[di], m[PNFS],
				       m[ENGINE], m[RAW], mr, range, ">=0.90", pct(&lat[PNFS], 0.5), pct(&lat[PNFS], 0.99),
				       pct(&lat[RAW], 0.5), pct(&lat[RAW], 0.99));
				fflush(stdout);
			}
	pnfs_close(pc, fh);
	fh = NULL;

	/* the first-write path: fresh files, 64 KiB writes, fsync every 64 */
	if (only) {
		rc = 0;
		goto out;
	}
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
	free(fruns);
	benchlab_raw_close(&raw);
	if (vol)
		blkmap_vol_free(vol);
	if (bctx)
		blkmap_ctx_destroy(bctx);
	benchlab_stop(&l);
	return rc;
}
