/* bench-store_extents: the cost of the store's extent lookups as a file's map grows. A file of 100
 * extents is the baseline; files of 10,000 and 100,000 extents are measured in the same run with the
 * same calls a LAYOUTGET makes (mds_ext_map of a range at a random offset, read-only transaction;
 * and the read-write path: mds_ext_alloc of an allocated range, then map). Prints ratios. */
#include "mds/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BS 4096ull

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(const char *what, int rc, struct mds_store *st)
{
	fprintf(stderr, "bench-store_extents: %s: %s (%s)\n", what, mds_store_strerror(rc),
		mds_store_errstr(st));
	exit(1);
}

/* A file of n one-block extents with one-block holes between them (nothing merges). */
static uint64_t make_file(struct mds_store *st, const char *name, unsigned n)
{
	struct mds_create_args a = { .type = MDS_FT_REG, .mode = 0644 };
	struct mds_inode ino;
	struct mds_txn *t;
	int rc;

	if ((rc = mds_txn_begin(st, MDS_TXN_RW, &t)))
		die("begin", rc, st);
	if ((rc = mds_ns_create(t, 1, name, strlen(name), &a, &ino, NULL)))
		die("create", rc, st);
	for (unsigned i = 0; i < n; i++) {
		if ((rc = mds_ext_alloc(t, ino.fileid, 2 * i * BS, BS, NULL)))
			die("alloc", rc, st);
		/* Commit in batches: LMDB's nested transactions (one per store call) get slower as
		 * the enclosing transaction's dirty pages grow. */
		if (i % 1000 == 999) {
			if ((rc = mds_txn_commit(t)) || (rc = mds_txn_begin(st, MDS_TXN_RW, &t)))
				die("commit", rc, st);
		}
	}
	if ((rc = mds_txn_commit(t)))
		die("commit", rc, st);
	return ino.fileid;
}

struct result {
	double map_us, rw_us;
};

static struct result measure(struct mds_store *st, uint64_t f, unsigned n, unsigned iters)
{
	struct mds_extent x[64];
	struct result r;
	struct mds_txn *t;
	unsigned seed = 7;
	size_t got;
	uint64_t end, sum = 0;
	double t0;
	int rc;

	/* Read path: one read-only transaction per call, as a READ LAYOUTGET would. */
	t0 = now_s();
	for (unsigned k = 0; k < iters; k++) {
		uint64_t off = (uint64_t)(rand_r(&seed) % (2 * n)) * BS;
		if ((rc = mds_txn_begin(st, MDS_TXN_RDONLY, &t)))
			die("begin", rc, st);
		if ((rc = mds_ext_map(t, f, off, 16 * BS, x, 64, &got, &end)))
			die("map", rc, st);
		sum += got;
		mds_txn_abort(t);
	}
	r.map_us = (now_s() - t0) / iters * 1e6;
	/* Write path without the commit's fsync: allocate (nothing new), map, abort. */
	t0 = now_s();
	for (unsigned k = 0; k < iters; k++) {
		uint64_t off = (uint64_t)(rand_r(&seed) % n) * 2 * BS;
		if ((rc = mds_txn_begin(st, MDS_TXN_RW, &t)))
			die("begin", rc, st);
		if ((rc = mds_ext_alloc(t, f, off, BS, NULL)))
			die("alloc", rc, st);
		if ((rc = mds_ext_map(t, f, off, 16 * BS, x, 64, &got, &end)))
			die("map", rc, st);
		sum += got;
		mds_txn_abort(t);
	}
	r.rw_us = (now_s() - t0) / iters * 1e6;
	if (!sum)
		fprintf(stderr, "bench-store_extents: no extents found\n");
	return r;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/bench-store-XXXXXX";
	struct mds_store_format fmt;
	struct mds_store *st = NULL;
	const unsigned sizes[] = { 100, 10000, 100000 };
	struct result res[3];
	unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;
	uint64_t files[3];
	double t0;
	int rc;

	if (!mkdtemp(dir))
		return 1;
	memset(&fmt, 0, sizeof(fmt));
	fmt.block_bytes = BS;
	fmt.stripe_unit_bytes = 1 << 20;
	fmt.volume_type = MDS_VOL_STRIPE;
	fmt.volume_bytes = 4ull << 30;
	fmt.nluns = 1;
	fmt.luns[0].size_bytes = fmt.volume_bytes + (1 << 20);
	fmt.luns[0].data_start_bytes = 1 << 20;
	fmt.luns[0].data_bytes = fmt.volume_bytes;
	if ((rc = mds_store_create(dir, &fmt, NULL, &st)))
		die("create store", rc, st);
	t0 = now_s();
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", sizes[i]);
		files[i] = make_file(st, name, sizes[i]);
	}
	printf("setup: %u + %u + %u extents in %.1f s\n", sizes[0], sizes[1], sizes[2], now_s() - t0);
	for (int i = 0; i < 3; i++)
		res[i] = measure(st, files[i], sizes[i], iters);
	for (int i = 0; i < 3; i++)
		printf("extents %6u: map %.2f us/call (ratio %.2f), alloc+map in rw txn %.2f us/call "
		       "(ratio %.2f)\n",
		       sizes[i], res[i].map_us, res[i].map_us / res[0].map_us, res[i].rw_us,
		       res[i].rw_us / res[0].rw_us);
	printf("ratio 100000/100 extents: map %.2f, alloc+map %.2f (target < 2)\n",
	       res[2].map_us / res[0].map_us, res[2].rw_us / res[0].rw_us);
	mds_store_close(st);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench-store_extents: could not remove %s\n", dir);
	}
	return 0;
}
