/* bench-clients: N = 1, 4, 16, 32 client processes at once (fork; one libpnfs context each, so N client
 * IDs), each writing then reading its own file (64 MiB, or $BENCH_CLIENT_MIB) in 4 MiB sync calls
 * through layouts, then fsync, against N processes of bare libiscsi moving the same bytes on regions of
 * the pool's volume the same way libpnfs does: each 4 MiB call mapped through the pool's stripe to
 * its LUNs, cut at the engine's transfer limit, every piece in flight at once (one libiscsi context
 * per LUN, one poll loop), the next call once all are done; SYNCHRONIZE CACHE on every LUN after the
 * writes (libpnfs's commit flushes the LUNs it wrote). Two labs: the plain lab (4 RAM LUNs on one
 * tgtd) and the shaped lab (4 storage hosts, each a network namespace with its own tgtd and one LUN
 * behind a 400 Mbit/s link; root only). Printed: aggregate MiB/s, ratio (target >= 0.9), and
 * pnfs-mds's CPU seconds (/proc/PID/stat) and RSS growth (VmRSS) per client during the libpnfs run.
 * BENCH_QUICK=1: an eighth of the bytes. --plain / --shaped: one lab only. */
#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "client/pnfs.h"
#include "tests/bench/benchlab.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB BENCH_MIB
#define INITIATOR "iqn.2024-01.org.pnfs-san:bench-clients"
#define ENGINE_KEY 0x62656e63636c6e74ull /* "bencclnt" */
#define RAW_KEY 0x62656e6372617721ull    /* "bencraw!" */
#define CHUNK (4 * MIB)
#define MAX_CLIENTS 32
#define MAX_OPS 64

static uint64_t per_client, max_xfer;

/* Where each client's region of the volume lies on the lab's LUNs (computed before the fork). */
struct vrun {
	uint64_t voff, len, loff;
	int lun;
};
static struct vrun *vruns[MAX_CLIENTS];
static size_t nvruns[MAX_CLIENTS];

static int map_regions(struct benchlab *l)
{
	struct blkmap_ctx_opts bo;
	struct blkmap_ctx *bctx = NULL;
	struct blkmap_vol *vol = NULL;
	char err[300];
	int rc = -1;

	blkmap_ctx_opts_init(&bo);
	bo.initiator_name = INITIATOR "-map";
	if (blkmap_ctx_create(&bo, &bctx) < 0)
		return -1;
	if (blkmap_vol_read_pool(l->pool, &vol, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench-clients: %s\n", err);
		goto out;
	}
	if (benchlab_bind_registered(bctx, l, vol, ENGINE_KEY) < 0)
		goto out;
	/* the engine's cut: its default transfer limit, or a LUN's lower Block Limits */
	max_xfer = MIB;
	for (uint32_t v = 0; v < blkmap_vol_count(vol); v++) {
		struct blkmap_dev *d = blkmap_vol_is_leaf(vol, v) ? blkmap_vol_leaf_dev(vol, v) : NULL;
		if (d && blkmap_dev_max_xfer_bytes(d) && blkmap_dev_max_xfer_bytes(d) < max_xfer)
			max_xfer = blkmap_dev_max_xfer_bytes(d);
	}
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct blkmap_run *runs;
		size_t nr;
		free(vruns[i]);
		vruns[i] = NULL;
		if (blkmap_vol_map(vol, (uint64_t)i * per_client, per_client, &runs, &nr) < 0)
			goto out;
		vruns[i] = calloc(nr, sizeof(struct vrun));
		if (!vruns[i]) {
			free(runs);
			goto out;
		}
		for (size_t k = 0; k < nr; k++) {
			vruns[i][k].voff = runs[k].vol_offset_bytes - (uint64_t)i * per_client;
			vruns[i][k].len = runs[k].length_bytes;
			vruns[i][k].loff = runs[k].leaf_offset_bytes;
			vruns[i][k].lun = benchlab_leaf_lun(l, vol, runs[k].leaf);
		}
		nvruns[i] = nr;
		free(runs);
	}
	rc = 0;
out:
	if (vol)
		blkmap_vol_free(vol);
	blkmap_ctx_destroy(bctx);
	return rc;
}

/* ---- one raw client: bare libiscsi on its region ---------------------------------------------- */

struct raw_call {
	unsigned left;
	int bad;
	struct benchlab_raw_op ops[MAX_OPS];
};

static void raw_piece_done(struct benchlab_raw_op *op, int status)
{
	struct raw_call *c = op->priv;
	if (status < 0)
		c->bad = 1;
	c->left--;
}

static int raw_wait(struct benchlab_raw *r, struct raw_call *c)
{
	while (c->left)
		if (benchlab_raw_run_once(r, 1000) < 0)
			return -1;
	return c->bad ? -1 : 0;
}

/* One CHUNK call at region offset o: every piece (runs cut at max_xfer) in flight, then wait. */
static int raw_chunk(struct benchlab_raw *r, int idx, int write, uint8_t *buf, uint64_t o)
{
	struct raw_call c = { 0 };
	unsigned n = 0;

	for (size_t k = 0; k < nvruns[idx]; k++) {
		const struct vrun *v = &vruns[idx][k];
		uint64_t a = v->voff > o ? v->voff : o, z = v->voff + v->len < o + CHUNK ? v->voff + v->len : o + CHUNK;
		while (a < z) {
			uint64_t take = z - a > max_xfer ? max_xfer : z - a;
			if (n == MAX_OPS)
				return -1;
			c.ops[n].cb = raw_piece_done;
			c.ops[n].priv = &c;
			if (benchlab_raw_io(r, v->lun, write, v->loff + (a - v->voff), buf + (a - o), take, &c.ops[n]) < 0)
				return -1;
			c.left++;
			n++;
			a += take;
		}
	}
	return raw_wait(r, &c);
}

static int raw_child(struct benchlab *l, int idx, uint8_t *buf)
{
	struct benchlab_raw r;
	struct raw_call c = { 0 };
	char iqn[128];

	/* a name of its own: libiscsi's ISID would be the same in every forked child */
	snprintf(iqn, sizeof(iqn), "%s-raw-%d", INITIATOR, idx);
	if (benchlab_raw_open(&r, l, iqn, RAW_KEY) < 0)
		return 1;
	for (uint64_t o = 0; o < per_client; o += CHUNK)
		if (raw_chunk(&r, idx, 1, buf, o) < 0)
			goto fail;
	for (int i = 0; i < r.n; i++) {
		c.ops[i].cb = raw_piece_done;
		c.ops[i].priv = &c;
		if (benchlab_raw_flush(&r, i, &c.ops[i]) < 0)
			goto fail;
		c.left++;
	}
	if (raw_wait(&r, &c) < 0)
		goto fail;
	for (uint64_t o = 0; o < per_client; o += CHUNK)
		if (raw_chunk(&r, idx, 0, buf, o) < 0)
			goto fail;
	benchlab_raw_close(&r);
	return 0;
fail:
	fprintf(stderr, "bench-clients: raw client %d failed\n", idx);
	benchlab_raw_close(&r);
	return 1;
}

/* ---- one libpnfs client -------------------------------------------------------------------------- */

static int pnfs_child(struct benchlab *l, int idx, uint8_t *buf)
{
	struct pnfs_context *pc = benchlab_client(l, INITIATOR, 0);
	struct pnfs_fh *fh;
	char name[64];
	if (!pc)
		return 1;
	snprintf(name, sizeof(name), "/client-%d", idx);
	if (pnfs_open(pc, name, O_CREAT | O_RDWR | O_TRUNC, 0644, &fh) < 0)
		goto fail;
	for (uint64_t o = 0; o < per_client; o += CHUNK)
		if (pnfs_pwrite(pc, fh, buf, CHUNK, o) < 0)
			goto fail;
	if (pnfs_fsync(pc, fh) < 0)
		goto fail;
	for (uint64_t o = 0; o < per_client; o += CHUNK)
		if (pnfs_pread(pc, fh, buf, CHUNK, o) < 0)
			goto fail;
	if (pnfs_close(pc, fh) < 0)
		goto fail;
	pnfs_umount(pc);
	pnfs_context_destroy(pc);
	return 0;
fail:
	fprintf(stderr, "bench-clients: client %d: %s\n", idx, pnfs_get_error(pc));
	return 1;
}

static int child(struct benchlab *l, int idx, int raw)
{
	uint8_t *buf = aligned_alloc(4096, CHUNK);
	if (!buf)
		return 1;
	memset(buf, idx, CHUNK);
	return raw ? raw_child(l, idx, buf) : pnfs_child(l, idx, buf);
}

/* Aggregate MiB/s of n processes at once (written and read bytes over the wall time), or -1. */
static double run(struct benchlab *l, int n, int raw)
{
	pid_t pids[MAX_CLIENTS];
	int bad = 0;
	double t0 = benchlab_now();
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(child(l, i, raw));
	}
	for (int i = 0; i < n; i++) {
		int st;
		if (pids[i] < 0 || waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	if (bad)
		return -1;
	return 2.0 * (double)n * (double)per_client / (double)MIB / (benchlab_now() - t0);
}

static int one_lab(const char *what, const char *shape)
{
	static const int ns[] = { 1, 4, 16, 32 };
	struct benchlab l;
	int rc = 1;

	if (benchlab_start(&l, shape) < 0)
		return 1;
	if (benchlab_start_mds(&l, "--scsi-layouts", "yes") < 0 || map_regions(&l) < 0)
		goto out;
	printf("bench-clients: %s, %" PRIu64 " MiB per client written, fsynced, read (4 MiB sync calls); raw = as "
	       "many bare libiscsi processes on regions of the pool's volume (pieces of <= %" PRIu64 " KiB, a "
	       "call's pieces in flight at once)\n",
	       what, per_client / MIB, max_xfer / 1024);
	printf("%-8s %10s %10s %6s %7s %12s %14s\n", "clients", "pnfs MiB/s", "raw MiB/s", "ratio", "target",
	       "MDS cpu s/cl", "MDS RSS KiB/cl");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		double raw = run(&l, ns[i], 1), c0 = benchlab_proc_cpu_s(l.mds), pn;
		long r0 = benchlab_proc_rss_kib(l.mds);
		pn = run(&l, ns[i], 0);
		if (raw < 0 || pn < 0) {
			fprintf(stderr, "bench-clients: %d clients failed\n", ns[i]);
			goto out;
		}
		printf("%-8d %10.0f %10.0f %6.2f %7s %12.4f %14.0f\n", ns[i], pn, raw, pn / raw, ">=0.90",
		       (benchlab_proc_cpu_s(l.mds) - c0) / ns[i], (double)(benchlab_proc_rss_kib(l.mds) - r0) / ns[i]);
		fflush(stdout);
	}
	rc = 0;
out:
	benchlab_stop(&l);
	return rc;
}

int main(int argc, char **argv)
{
	const char *e = getenv("BENCH_CLIENT_MIB");
	int do_plain, do_shaped, fail = 0;
	uint64_t lun_mib;
	char shape[96];

	if (benchlab_which_labs(argc, argv, "bench-clients", &do_plain, &do_shaped))
		return 2;
	benchlab_install_cleanup("bench-clients");
	per_client = (e && atoi(e) > 0 ? (uint64_t)atoi(e) : 64) * MIB;
	per_client = benchlab_scale(per_client) / CHUNK * CHUNK;
	if (per_client < CHUNK)
		per_client = CHUNK;
	/* room for 32 files and the raw regions side by side */
	lun_mib = (MAX_CLIENTS * per_client / MIB) / 4 * 2 + 256;
	if (do_plain) {
		snprintf(shape, sizeof(shape), "--luns 4 --size %" PRIu64 "M", lun_mib);
		fail |= one_lab("plain lab (4 RAM LUNs, one tgtd)", shape);
	}
	if (do_shaped) {
		if (geteuid() != 0) {
			printf("bench-clients: shaped lab skipped (needs root for network namespaces)\n");
		} else {
			snprintf(shape, sizeof(shape), "--hosts 4 --rate 400 --size %" PRIu64 "M", lun_mib);
			fail |= one_lab("shaped lab (4 storage hosts, one LUN each, 400 Mbit/s links)", shape);
		}
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		free(vruns[i]);
	return fail;
}
