/* bench-clients: N = 1, 4, 16, 32 client processes at once (fork; one libpnfs context each, so N client
 * IDs), each writing then reading its own file (64 MiB, or $BENCH_CLIENT_MIB) in 4 MiB sync calls
 * through layouts, on the plain lab (4 RAM LUNs on one tgtd, pnfs-mds with SCSI layouts), against N
 * processes of the blkmap engine moving the same bytes in the same calls on regions of the pool's
 * volume, in the same run: aggregate MiB/s, ratio (target >= 0.9), and pnfs-mds's CPU seconds
 * (/proc/PID/stat) and RSS (VmRSS) per client. BENCH_QUICK=1: an eighth of the bytes. */
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
#define CHUNK (4 * MIB)

static uint64_t per_client;


/* One client process: write then read its file (pnfs) or its region of the volume (raw). */
static int child(struct benchlab *l, int idx, int raw)
{
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		return 1;
	memset(buf, idx, CHUNK);
	if (raw) {
		struct blkmap_ctx_opts bo;
		struct blkmap_ctx *bctx;
		struct blkmap_vol *vol;
		char err[300];
		uint64_t base = (uint64_t)idx * per_client;
		blkmap_ctx_opts_init(&bo);
		bo.initiator_name = INITIATOR "-raw";
		if (blkmap_ctx_create(&bo, &bctx) < 0 || blkmap_vol_read_pool(l->pool, &vol, err, sizeof(err)) < 0 ||
		    benchlab_bind_registered(bctx, l, vol, ENGINE_KEY) < 0)
			return 1;
		for (uint64_t o = 0; o < per_client; o += CHUNK)
			if (blkmap_vol_pwrite(vol, buf, CHUNK, base + o) < 0)
				return 1;
		for (uint64_t o = 0; o < per_client; o += CHUNK)
			if (blkmap_vol_pread(vol, buf, CHUNK, base + o) < 0)
				return 1;
		return 0;
	}
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

/* Aggregate MiB/s of n processes at once (written and read bytes over the wall time), or -1. */
static double run(struct benchlab *l, int n, int raw)
{
	pid_t pids[64];
	int bad = 0;
	double t0 = benchlab_now();
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

int main(void)
{
	static const int ns[] = { 1, 4, 16, 32 };
	const char *e = getenv("BENCH_CLIENT_MIB");
	struct benchlab l;
	int rc = 1;

	benchlab_install_cleanup("bench-clients");
	per_client = (e && atoi(e) > 0 ? (uint64_t)atoi(e) : 64) * MIB;
	per_client = benchlab_scale(per_client) / CHUNK * CHUNK;
	if (per_client < CHUNK)
		per_client = CHUNK;
	/* room for 32 files and the raw regions side by side */
	char shape[64];
	snprintf(shape, sizeof(shape), "--luns 4 --size %" PRIu64 "M", (32 * per_client / MIB) / 4 * 2 + 256);
	if (benchlab_start(&l, shape) < 0)
		return 1;
	if (benchlab_start_mds(&l, "--scsi-layouts", "yes") < 0)
		goto out;
	printf("bench-clients: plain lab (%d RAM LUNs, one tgtd), %" PRIu64 " MiB per client written then read "
	       "(4 MiB sync calls); raw = as many engine processes on regions of the pool's volume\n",
	       l.n, per_client / MIB);
	printf("%-8s %10s %10s %6s %7s %12s %12s\n", "clients", "pnfs MiB/s", "raw MiB/s", "ratio", "target",
	       "MDS cpu s/cl", "MDS RSS KiB/cl");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		double raw = run(&l, ns[i], 1), c0 = benchlab_proc_cpu_s(l.mds), pn;
		long r0 = benchlab_proc_rss_kib(l.mds);
		pn = run(&l, ns[i], 0);
		if (raw < 0 || pn < 0) {
			fprintf(stderr, "bench-clients: %d clients failed\n", ns[i]);
			goto out;
		}
		printf("%-8d %10.0f %10.0f %6.2f %7s %12.4f %12.0f\n", ns[i], pn, raw, pn / raw, ">=0.90",
		       (benchlab_proc_cpu_s(l.mds) - c0) / ns[i], (double)(benchlab_proc_rss_kib(l.mds) - r0) / ns[i]);
		fflush(stdout);
	}
	rc = 0;
out:
	benchlab_stop(&l);
	return rc;
}
