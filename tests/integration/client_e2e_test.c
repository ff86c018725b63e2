/* The client end to end on a 4-LUN RAM lab with a real pnfs-mds handing out layouts: the pnfs
 * command copies files of many sizes in and out through layouts, byte for byte; two clients write
 * disjoint ranges of one file at once and read each other's data; a remove on another client recalls
 * the layout of a file in the middle of its copy, which ends cleanly without touching other files;
 * and a 512 MiB write and read move their data straight to the LUNs (under 1% of it through the MDS's
 * port, counted on the client's MDS socket and on the server's), at the extents the layout gave. */
#include "blkmap/blkmap.h"
#include "client/layout_int.h"
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define INITIATOR_A "iqn.2024-01.test.pnfs:e2e-a"
#define INITIATOR_B "iqn.2024-01.test.pnfs:e2e-b"
#define INITIATOR_CP "iqn.2024-01.test.pnfs:e2e-cp"

static struct test_lab *lab;
static struct test_mds *mds;
static int metrics_port;
static char shm[300];
static char why[400];

static void shm_remove(void *arg)
{
	char cmd[400];
	(void)arg;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", shm);
	if (shm[0] && system(cmd) != 0)
		fprintf(stderr, "client_e2e: could not remove %s\n", shm);
}

static int suite_init(void)
{
	struct lab_opts ram = { .ram = 1 };

	snprintf(shm, sizeof(shm), "/dev/shm/pnfs-e2e.%d", (int)getpid());
	if (mkdir(shm, 0700) != 0) {
		snprintf(why, sizeof(why), "cannot create %s", shm);
		return 0;
	}
	test_cleanup_push(shm_remove, NULL);
	metrics_port = test_free_port();
	mds = tmds_lab_up(&lab, 4, "352M", &ram, NULL, why, sizeof(why),
			  "--metrics-port %d", metrics_port);
	return 0;
}

static int suite_clean(void)
{
	shm_remove(NULL);
	return tmds_lab_down(&lab, &mds);
}

#define NEED_LAB() TEST_SKIP_IF(!mds, "%s", why)

/* ---- helpers ---------------------------------------------------------------------------------- */

/* A client of the lab's MDS at port (0: the MDS's own), with opts's slots and timeout when given. */
static struct pnfs_context *client_at(const char *initiator, int mds_io, int port, const struct pnfs_opts *tune)
{
	struct pnfs_opts o;
	const char *urls[LAB_MAX_LUNS];

	pnfs_opts_init(&o);
	if (tune) {
		o.slots = tune->slots;
		o.timeout_ms = tune->timeout_ms;
	}
	ct_lab_devices(&o, lab, urls);
	o.initiator_name = initiator;
	o.mds_io = mds_io;
	return ct_mount(&o, port ? port : mds->port, "/");
}

static struct pnfs_context *client(const char *initiator, int mds_io)
{
	return client_at(initiator, mds_io, 0, NULL);
}

#define client_done(ctx) ct_unmount(ctx)

/* One counter from pnfs-mds's metrics endpoint (GET /metrics), or UINT64_MAX. */
static uint64_t mds_metric(const char *name)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)metrics_port) };
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	char *text = malloc(1 << 16), key[128], *p;
	size_t len = 0;
	uint64_t v = UINT64_MAX;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!text || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		goto out;
	for (;;) {
		ssize_t n = read(fd, text + len, (1 << 16) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	text[len] = 0;
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(text, key);
	if (p)
		v = strtoull(p + strlen(key), NULL, 10);
out:
	if (fd >= 0)
		close(fd);
	free(text);
	return v;
}

static uint64_t mds_net_bytes(void)
{
	return mds_metric("pnfs_mds_net_received_bytes_total") + mds_metric("pnfs_mds_net_sent_bytes_total");
}

/* A whole local file, mode 0600. */
static int write_file(const char *path, const void *buf, size_t len)
{
	return ct_write_file_mode(path, buf, len, 0600);
}

/* Whether the local file holds exactly len bytes equal to buf. */
static int file_equals(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_RDONLY), same = 1;
	char *tmp = malloc(8 * MIB);
	size_t done = 0;
	ssize_t n;

	if (fd < 0 || !tmp) {
		free(tmp);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (same && (n = read(fd, tmp, 8 * MIB)) > 0) {
		if (done + (size_t)n > len || memcmp(tmp, (const char *)buf + done, (size_t)n) != 0)
			same = 0;
		done += (size_t)n;
	}
	close(fd);
	free(tmp);
	return same && done == len;
}

/* "--initiator IQN --device URL ..." for the pnfs command. */
static const char *cp_opts(const char *initiator)
{
	static char o[LAB_MAX_LUNS * 270 + 200];
	size_t n = (size_t)snprintf(o, sizeof(o), "--initiator %s", initiator);

	for (int i = 0; i < lab->nluns; i++)
		n += (size_t)snprintf(o + n, sizeof(o) - n, " --device '%s'", lab->urls[i]);
	return o;
}

/* pnfs cp OPTS SRC DST with its counters (--stats --json) in stats (caller frees). Exit status. */
static int pnfs_cp_with(const char *opts, const char *src, const char *dst, char **stats)
{
	char sf[400];
	int rc;

	snprintf(sf, sizeof(sf), "%s/cp.stats", shm);
	rc = test_run(NULL, "'%s' cp -q --stats --json %s %s '%s' '%s' 2>'%s'", test_bin("pnfs"), opts,
		      cp_opts(INITIATOR_CP), src, dst, sf);
	*stats = NULL;
	if (test_run(stats, "cat '%s'", sf) != 0) {
		free(*stats);
		*stats = NULL;
	}
	return rc;
}

static int pnfs_cp(const char *src, const char *dst, char **stats)
{
	return pnfs_cp_with("", src, dst, stats);
}

static char *url(const char *path)
{
	static char u[2][400];
	static int k;
	k ^= 1;
	snprintf(u[k], sizeof(u[k]), "pnfs://127.0.0.1:%d%s", mds->port, path);
	return u[k];
}

/* ---- files of many sizes copied in and out with the pnfs command ------------------------------- */

static void test_sizes(void)
{
	NEED_LAB();
	static const uint64_t sizes[] = { 0, 1, 511, 512, 4095, 4097, MIB + 7, 8 * MIB + 4097, 64 * MIB - 3,
					  64 * MIB + 1, 512 * MIB + 1 };
	const size_t n = sizeof(sizes) / sizeof(sizes[0]);
	struct pnfs_context *ctx = client(INITIATOR_A, 0);
	char *buf = malloc(512 * MIB + 1), src[400], back[400], name[64];

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "/sizes", 0755), 0);
	snprintf(src, sizeof(src), "%s/src", shm);
	snprintf(back, sizeof(back), "%s/back", shm);
	for (size_t i = 0; i < n; i++) {
		size_t len = (size_t)sizes[i];
		struct pnfs_stat st;
		char *stats = NULL;

		test_fill_random(buf, len, 100 + i);
		CU_ASSERT_EQUAL_FATAL(write_file(src, buf, len), 0);
		snprintf(name, sizeof(name), "/sizes/f%zu", len);
		if (pnfs_cp(src, url(name), &stats) != 0) {
			fprintf(stderr, "pnfs cp in of %zu bytes failed: %s\n", len, stats ? stats : "");
			CU_FAIL("pnfs cp in");
		}
		/* Every byte went straight to the LUNs (whole blocks: at least the data). */
		if (len > 0) {
			CU_ASSERT(test_json_num(stats, "direct_bytes_written") >= len);
			CU_ASSERT(test_json_num(stats, "layoutgets") >= 1);
			CU_ASSERT(test_json_num(stats, "layoutcommits") >= 1);
		}
		CU_ASSERT_EQUAL(test_json_num(stats, "mds_data_written"), 0);
		free(stats);
		CU_ASSERT_EQUAL(pnfs_stat(ctx, name, &st), 0);
		CU_ASSERT_EQUAL(st.size, len);
		unlink(back);
		CU_ASSERT_EQUAL(pnfs_cp(url(name), back, &stats), 0);
		if (len > 0)
			CU_ASSERT(test_json_num(stats, "direct_bytes_read") >= len);
		CU_ASSERT_EQUAL(test_json_num(stats, "mds_data_read"), 0);
		free(stats);
		if (!file_equals(back, buf, len)) {
			fprintf(stderr, "a %zu-byte file read back differs\n", len);
			CU_FAIL("read back differs");
		}
		/* Keep the small ones (their blocks must survive the big copies); free the big ones. */
		if (len >= 64 * MIB)
			CU_ASSERT_EQUAL(pnfs_unlink(ctx, name), 0);
	}
	/* The small files are still what was written after the big ones came and went. */
	for (size_t i = 0; i < n && sizes[i] < 64 * MIB; i++) {
		size_t len = (size_t)sizes[i];
		char *stats = NULL;
		snprintf(name, sizeof(name), "/sizes/f%zu", len);
		test_fill_random(buf, len, 100 + i);
		unlink(back);
		CU_ASSERT_EQUAL(pnfs_cp(url(name), back, &stats), 0);
		free(stats);
		CU_ASSERT(file_equals(back, buf, len));
		CU_ASSERT_EQUAL(pnfs_unlink(ctx, name), 0);
	}
	CU_ASSERT_EQUAL(pnfs_rmdir(ctx, "/sizes"), 0);
	unlink(src);
	unlink(back);
	free(buf);
	client_done(ctx);
}

/* ---- a local destination that fills up ---------------------------------------------------------- */

static void umount_dir(void *arg)
{
	const char *d = arg;
	if (test_run(NULL, "umount '%s' 2>/dev/null", d) != 0)
		fprintf(stderr, "client_e2e: could not unmount %s\n", d);
}

/* A copy out whose destination file system is full mid-copy (writes of later chunks fail with ENOSPC
 * while earlier ones are done and reads are still in flight) stops with the error naming the file
 * and exit 1, drains, and leaves the source intact. */
static void test_destination_full(void)
{
	NEED_LAB();
	static char dir[400]; /* outlives the test: its unmount runs at cleanup */
	char src[400], dst[400], *out = NULL, *stats = NULL;
	char *buf = malloc(48 * MIB);
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	snprintf(dir, sizeof(dir), "%s", test_tmpdir("small-fs"));
	if (test_run(NULL, "mount -t tmpfs -o size=20m pnfs-e2e-full '%s' 2>/dev/null", dir) != 0) {
		test_skip("cannot mount a 20 MiB tmpfs here (needs root)");
		free(buf);
		return;
	}
	test_cleanup_push(umount_dir, (void *)dir);
	test_fill_random(buf, 48 * MIB, 4242);
	snprintf(src, sizeof(src), "%s/full-src", shm);
	CU_ASSERT_EQUAL_FATAL(write_file(src, buf, 48 * MIB), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_cp(src, url("/full"), &stats), 0);
	free(stats);
	snprintf(dst, sizeof(dst), "%s/copy", dir);
	rc = test_run(&out, "timeout 60 '%s' cp -q %s '%s' '%s' 2>&1", test_bin("pnfs"), cp_opts(INITIATOR_CP),
		      url("/full"), dst);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, dst));
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, strerror(ENOSPC)));
	if (out && !strstr(out, strerror(ENOSPC)))
		fprintf(stderr, "pnfs cp said: %s\n", out);
	free(out);
	/* the remote file is as it was: a copy to a roomy place is whole */
	snprintf(dst, sizeof(dst), "%s/full-back", shm);
	CU_ASSERT_EQUAL(pnfs_cp(url("/full"), dst, &stats), 0);
	free(stats);
	CU_ASSERT(file_equals(dst, buf, 48 * MIB));
	unlink(src);
	unlink(dst);
	free(buf);
}

/* ---- two clients, one file ------------------------------------------------------------------- */

struct ops {
	int done, bad;
	int first_err;
};

static void ops_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct ops *o = priv;
	(void)ctx;
	(void)data;
	o->done++;
	if (status < 0) {
		o->bad++;
		if (!o->first_err)
			o->first_err = status;
	}
}

/* Run both contexts' loops until each has completed its expected count (or the loops fail). */
static int drive2(struct pnfs_context *a, struct ops *oa, int na, struct pnfs_context *b, struct ops *ob, int nb)
{
	while (oa->done < na || ob->done < nb) {
		struct pollfd p[2] = { { pnfs_get_fd(a), (short)pnfs_which_events(a), 0 },
				       { pnfs_get_fd(b), (short)pnfs_which_events(b), 0 } };
		if (poll(p, 2, 1000) < 0)
			return -errno;
		if (pnfs_service(a, p[0].revents) < 0 || pnfs_service(b, p[1].revents) < 0)
			return -EIO;
	}
	return 0;
}

/* Client A writes [0, 40 MiB + 3), client B [64 MiB, 104 MiB + 5) of one file, at the same time,
 * 4 MiB at a time, through their own layouts; both commit, and each reads back the other's range
 * (and the hole between them as zeros). */
static void test_two_clients(void)
{
	NEED_LAB();
	const size_t alen = 40 * MIB + 3, blen = 40 * MIB + 5, piece = 4 * MIB;
	const uint64_t boff = 64 * MIB;
	struct pnfs_context *a = client(INITIATOR_A, 0), *b = client(INITIATOR_B, 0);
	char *da = malloc(alen), *db = malloc(blen), *back = malloc(boff + blen);
	struct pnfs_fh *fa = NULL, *fb = NULL;
	struct ops oa = { 0 }, ob = { 0 };
	struct pnfs_stats sa, sb;
	struct pnfs_stat st;
	int na = 0, nb = 0;

	test_fill_random(da, alen, 201);
	test_fill_random(db, blen, 202);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(a, "/shared", O_CREAT | O_RDWR, 0644, &fa), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(b, "/shared", O_RDWR, 0, &fb), 0);
	for (size_t off = 0; off < alen || off < blen; off += piece) {
		if (off < alen) {
			size_t l = alen - off < piece ? alen - off : piece;
			CU_ASSERT_EQUAL(pnfs_pwrite_async(a, fa, da + off, l, off, ops_cb, &oa), 0);
			na++;
		}
		if (off < blen) {
			size_t l = blen - off < piece ? blen - off : piece;
			CU_ASSERT_EQUAL(pnfs_pwrite_async(b, fb, db + off, l, boff + off, ops_cb, &ob), 0);
			nb++;
		}
	}
	CU_ASSERT_EQUAL_FATAL(drive2(a, &oa, na, b, &ob, nb), 0);
	CU_ASSERT_EQUAL(oa.bad, 0);
	CU_ASSERT_EQUAL(ob.bad, 0);
	CU_ASSERT_EQUAL(pnfs_fsync_async(a, fa, ops_cb, &oa), 0);
	CU_ASSERT_EQUAL(pnfs_fsync_async(b, fb, ops_cb, &ob), 0);
	CU_ASSERT_EQUAL_FATAL(drive2(a, &oa, na + 1, b, &ob, nb + 1), 0);
	CU_ASSERT_EQUAL(oa.bad, 0);
	CU_ASSERT_EQUAL(ob.bad, 0);
	/* Both wrote through layouts, nothing through the MDS. */
	pnfs_get_stats(a, &sa);
	pnfs_get_stats(b, &sb);
	CU_ASSERT(sa.direct_bytes_written >= alen);
	CU_ASSERT(sb.direct_bytes_written >= blen);
	CU_ASSERT_EQUAL(sa.mds_data_written, 0);
	CU_ASSERT_EQUAL(sb.mds_data_written, 0);
	CU_ASSERT_EQUAL(pnfs_stat(a, "/shared", &st), 0);
	CU_ASSERT_EQUAL(st.size, boff + blen);

	/* Each reads the other's range (the reads recall the other's RW layout: both loops run). */
	memset(back, 0xcc, boff + blen);
	CU_ASSERT_EQUAL(pnfs_pread_async(a, fa, back + boff, blen, boff, ops_cb, &oa), 0);
	CU_ASSERT_EQUAL(pnfs_pread_async(b, fb, back, alen, 0, ops_cb, &ob), 0);
	CU_ASSERT_EQUAL_FATAL(drive2(a, &oa, na + 2, b, &ob, nb + 2), 0);
	CU_ASSERT_EQUAL(oa.bad, 0);
	CU_ASSERT_EQUAL(ob.bad, 0);
	CU_ASSERT_EQUAL(memcmp(back + boff, db, blen), 0);
	CU_ASSERT_EQUAL(memcmp(back, da, alen), 0);
	/* Through layouts too: each read recalled the other's RW layout, which was returned. */
	pnfs_get_stats(a, &sa);
	pnfs_get_stats(b, &sb);
	CU_ASSERT(sa.direct_bytes_read >= blen);
	CU_ASSERT(sb.direct_bytes_read >= alen);
	CU_ASSERT_EQUAL(sa.mds_data_read, 0);
	CU_ASSERT_EQUAL(sb.mds_data_read, 0);
	CU_ASSERT(sa.recalls + sb.recalls >= 2);
	/* The hole between the ranges reads as zeros, from either client. */
	CU_ASSERT_EQUAL(pnfs_pread(a, fa, back + alen, boff - alen, alen), (ssize_t)(boff - alen));
	for (size_t i = alen; i < boff; i++)
		if (back[i]) {
			CU_FAIL("the hole between the two ranges is not zeros");
			break;
		}
	CU_ASSERT_EQUAL(pnfs_close(a, fa), 0);
	CU_ASSERT_EQUAL(pnfs_close(b, fb), 0);
	/* After both closed, a third look through a fresh client: the whole file. */
	{
		struct pnfs_context *c = client(INITIATOR_CP, 0);
		struct pnfs_fh *fc = NULL;
		CU_ASSERT_EQUAL_FATAL(pnfs_open(c, "/shared", O_RDONLY, 0, &fc), 0);
		memset(back, 0xcc, boff + blen);
		CU_ASSERT_EQUAL(pnfs_pread(c, fc, back, boff + blen, 0), (ssize_t)(boff + blen));
		CU_ASSERT_EQUAL(memcmp(back, da, alen), 0);
		CU_ASSERT_EQUAL(memcmp(back + boff, db, blen), 0);
		CU_ASSERT_EQUAL(pnfs_close(c, fc), 0);
		CU_ASSERT_EQUAL(pnfs_unlink(c, "/shared"), 0);
		client_done(c);
	}
	client_done(a);
	client_done(b);
	free(da);
	free(db);
	free(back);
}

/* ---- a recall in the middle of a copy -------------------------------------------------------- */

struct keep {
	const char *name;
	size_t len;
	uint64_t seed;
};

static const struct keep keeps[] = {
	{ "/keep/a", 3 * MIB + 1, 301 },
	{ "/keep/b", 17 * MIB, 302 },
	{ "/keep/c", 9 * MIB + 11, 303 },
};
#define NKEEPS (sizeof(keeps) / sizeof(keeps[0]))

static void check_keeps(char *buf)
{
	char back[400];

	snprintf(back, sizeof(back), "%s/keep.back", shm);
	for (size_t i = 0; i < NKEEPS; i++) {
		char *stats = NULL;
		test_fill_random(buf, keeps[i].len, keeps[i].seed);
		unlink(back);
		CU_ASSERT_EQUAL(pnfs_cp(url(keeps[i].name), back, &stats), 0);
		free(stats);
		if (!file_equals(back, buf, keeps[i].len)) {
			fprintf(stderr, "%s changed\n", keeps[i].name);
			CU_FAIL("a file not involved in the recall changed");
		}
	}
	unlink(back);
}

/* pnfs cp from a pipe the test feeds: the copy is stopped half way (its first layout held, writes
 * in flight or done) while another client removes the file; the remove recalls the layout. The
 * rest of the data arrives, the copy ends with success within the watch, and the
 * other files are intact, also after a new file takes the freed blocks. */
static void test_recall_mid_copy(void)
{
	NEED_LAB();
	const size_t total = 192 * MIB, half = 100 * MIB;
	struct pnfs_context *b = client(INITIATOR_B, 0);
	char *buf = malloc(total), src[400], sf[400], errtxt[4096] = "";
	uint64_t recalls0, granted0;
	int p[2], status = -1;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL(pnfs_mkdir(b, "/keep", 0755), 0);
	snprintf(src, sizeof(src), "%s/keep.src", shm);
	for (size_t i = 0; i < NKEEPS; i++) {
		char *stats = NULL;
		test_fill_random(buf, keeps[i].len, keeps[i].seed);
		CU_ASSERT_EQUAL_FATAL(write_file(src, buf, keeps[i].len), 0);
		CU_ASSERT_EQUAL_FATAL(pnfs_cp(src, url(keeps[i].name), &stats), 0);
		free(stats);
	}
	unlink(src);

	test_fill_random(buf, total, 310);
	granted0 = mds_metric("pnfs_mds_layout_granted_bytes_total");
	snprintf(sf, sizeof(sf), "%s/recall.stats", shm);
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		char cmd[8192];
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		/* --inplace: the file removed is the one the copy writes */
		snprintf(cmd, sizeof(cmd), "exec '%s' cp -q --inplace --stats --json %s - '%s' 2>'%s'", test_bin("pnfs"),
			 cp_opts(INITIATOR_CP), url("/big"), sf);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	{
		size_t done = 0;
		while (done < half) {
			ssize_t n = write(p[1], buf + done, half - done);
			if (n <= 0)
				break;
			done += (size_t)n;
		}
		CU_ASSERT_EQUAL(done, half);
	}
	/* The copy holds a layout and is writing through it: wait for the grant to show. */
	TW_WAIT_UNTIL(mds_metric("pnfs_mds_layout_granted_bytes_total") != granted0, 10 * 1000, 10);
	CU_ASSERT(mds_metric("pnfs_mds_layout_granted_bytes_total") > granted0);
	/* The other client removes the file being copied: its layout is recalled. */
	recalls0 = mds_metric("pnfs_mds_layouts_recalled_total");
	CU_ASSERT_EQUAL(pnfs_unlink(b, "/big"), 0);
	CU_ASSERT(mds_metric("pnfs_mds_layouts_recalled_total") > recalls0);
	{
		size_t done = half;
		signal(SIGPIPE, SIG_IGN);
		while (done < total) {
			ssize_t n = write(p[1], buf + done, total - done);
			if (n <= 0)
				break; /* the copy gave up: it says why below */
			done += (size_t)n;
		}
	}
	close(p[1]);
	/* No hang: the copy ends on its own (a minute is far beyond what 192 MiB needs). */
	if (ct_cp_wait(pid, 0, 60, &status, sf, errtxt, sizeof(errtxt)) != 0)
		CU_FAIL("pnfs cp hung after the recall");
	/* The copy succeeds: a removed file stays open for its writer (the MDS keeps the orphan), the
	 * recalled layout is committed and returned, the next LAYOUTGET gets LAYOUTUNAVAILABLE for the
	 * orphan, and the rest of the data goes through the MDS until the close. */
	CU_ASSERT(WIFEXITED(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		fprintf(stderr, "\n  recall mid-copy: pnfs cp exit %d: %s\n", WEXITSTATUS(status), errtxt);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT(test_json_num(errtxt, "recalls") >= 1);
	/* The name is gone, the other files are intact. */
	{
		struct pnfs_stat st;
		CU_ASSERT_EQUAL(pnfs_stat(b, "/big", &st), -ENOENT);
	}
	check_keeps(buf);
	/* A new file now gets blocks (those the removed file had, among others): no copy of the old
	 * one lands there or on the other files. */
	{
		char *stats = NULL, back[400];
		test_fill_random(buf, total, 320);
		CU_ASSERT_EQUAL_FATAL(write_file(src, buf, total), 0);
		CU_ASSERT_EQUAL(pnfs_cp(src, url("/after"), &stats), 0);
		free(stats);
		snprintf(back, sizeof(back), "%s/after.back", shm);
		CU_ASSERT_EQUAL(pnfs_cp(url("/after"), back, &stats), 0);
		free(stats);
		CU_ASSERT(file_equals(back, buf, total));
		unlink(back);
		unlink(src);
		CU_ASSERT_EQUAL(pnfs_unlink(b, "/after"), 0);
	}
	check_keeps(buf);
	for (size_t i = 0; i < NKEEPS; i++)
		CU_ASSERT_EQUAL(pnfs_unlink(b, keeps[i].name), 0);
	CU_ASSERT_EQUAL(pnfs_rmdir(b, "/keep"), 0);
	client_done(b);
	free(buf);
}

/* pnfs cp sends a local regular file straight from its mapped pages. Cut short while it is being
 * copied (the copy stopped with SIGSTOP once it holds its layout, the source truncated, the copy let
 * go), the copy ends at once with a clear error and exit status 1 instead of sending pages that are
 * gone; no other file changes. */
static void test_source_shrinks(void)
{
	NEED_LAB();
	const size_t total = 512 * MIB, keep_len = 9 * MIB + 11;
	struct pnfs_context *b = client(INITIATOR_B, 0);
	char *buf = malloc(total), src[400], sf[400], back[400], errtxt[4096] = "", *stats = NULL;
	uint64_t granted0;
	int status = -1, exited = 0;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	snprintf(src, sizeof(src), "%s/shrink.src", shm);
	snprintf(sf, sizeof(sf), "%s/shrink.stats", shm);
	snprintf(back, sizeof(back), "%s/shrink.back", shm);
	test_fill_random(buf, keep_len, 330);
	CU_ASSERT_EQUAL_FATAL(write_file(src, buf, keep_len), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_cp(src, url("/unchanged"), &stats), 0);
	free(stats);
	test_fill_random(buf, total, 331);
	CU_ASSERT_EQUAL_FATAL(write_file(src, buf, total), 0);

	granted0 = mds_metric("pnfs_mds_layout_granted_bytes_total");
	pid = ct_cp_start(cp_opts(INITIATOR_CP), src, url("/shrinking"), sf);
	CU_ASSERT_FATAL(pid > 0);
	TW_WAIT_UNTIL(mds_metric("pnfs_mds_layout_granted_bytes_total") != granted0, 10 * 1000, 10);
	CU_ASSERT_EQUAL(kill(pid, SIGSTOP), 0);
	if (waitpid(pid, &status, WNOHANG) == pid) {
		CU_FAIL("the copy ended before its source could be cut short");
		exited = 1;
	}
	CU_ASSERT(mds_metric("pnfs_mds_layout_granted_bytes_total") > granted0);
	CU_ASSERT_EQUAL(truncate(src, (off_t)MIB), 0);
	CU_ASSERT_EQUAL(kill(pid, SIGCONT), 0);
	/* It ends on its own, long before its command timeout (30 s) would end a write of a gone page. */
	if (ct_cp_wait(pid, exited, 20, &status, sf, errtxt, sizeof(errtxt)) != 0)
		CU_FAIL("pnfs cp did not stop within 20 s of its source being cut short");
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(errtxt, "the file shrank while it was being copied"));
	CU_ASSERT_PTR_NOT_NULL(strstr(errtxt, src));
	/* The other file is as it was. */
	test_fill_random(buf, keep_len, 330);
	CU_ASSERT_EQUAL(pnfs_cp(url("/unchanged"), back, &stats), 0);
	free(stats);
	CU_ASSERT(file_equals(back, buf, keep_len));
	unlink(back);
	unlink(src);
	unlink(sf);
	{
		struct pnfs_stat st;
		if (pnfs_stat(b, "/shrinking", &st) == 0)
			CU_ASSERT_EQUAL(pnfs_unlink(b, "/shrinking"), 0);
	}
	CU_ASSERT_EQUAL(pnfs_unlink(b, "/unchanged"), 0);
	client_done(b);
	free(buf);
}

/* ---- the direct path, proven ----------------------------------------------------------------- */

/* Which lab LUN a blkmap device is, or -1. */
static int lun_of(struct blkmap_vol *vol, uint32_t leaf)
{
	const char *name = blkmap_dev_name(blkmap_vol_leaf_dev(vol, leaf));
	for (int k = 0; name && k < lab->nluns; k++)
		if (strcmp(lab->urls[k], name) == 0)
			return k;
	return -1;
}

/* Compare the file's bytes with what the LUNs' backing files hold at the places the extents say:
 * extent → device volume → (LUN, offset) runs. Returns 0 if every byte matches; *luns gets the
 * bytes found on each LUN. */
static int check_on_luns(struct pnfs_context *ctx, const struct pnfs_extent *ext, size_t next, const char *data,
			 uint64_t len, uint64_t luns[LAB_MAX_LUNS])
{
	int fds[LAB_MAX_LUNS], rc = 0;
	char *tmp = malloc(4 * MIB);

	for (int k = 0; k < lab->nluns; k++)
		fds[k] = open(lab->files[k], O_RDONLY);
	for (size_t i = 0; i < next && !rc && tmp; i++) {
		struct blkmap_vol *vol = pnfs_device_volume(ctx, ext[i].deviceid);
		struct blkmap_run *runs = NULL;
		size_t nruns = 0;
		uint64_t foff = ext[i].file_offset, elen = ext[i].length;

		if (foff >= len)
			continue;
		if (foff + elen > len)
			elen = len - foff;
		if (!vol || blkmap_vol_map(vol, ext[i].storage_offset, elen, &runs, &nruns) < 0) {
			rc = -1;
			break;
		}
		for (size_t r = 0; r < nruns && !rc; r++) {
			int lun = lun_of(vol, runs[r].leaf);
			uint64_t done = 0;
			if (lun < 0 || fds[lun] < 0) {
				rc = -1;
				break;
			}
			luns[lun] += runs[r].length_bytes;
			while (done < runs[r].length_bytes && !rc) {
				size_t l = runs[r].length_bytes - done < 4 * MIB ? (size_t)(runs[r].length_bytes - done)
										 : 4 * MIB;
				uint64_t at = foff + (runs[r].vol_offset_bytes - ext[i].storage_offset) + done;
				if (pread(fds[lun], tmp, l, (off_t)(runs[r].leaf_offset_bytes + done)) != (ssize_t)l ||
				    memcmp(tmp, data + at, l) != 0)
					rc = -1;
				done += l;
			}
		}
		free(runs);
	}
	for (int k = 0; k < lab->nluns; k++)
		if (fds[k] >= 0)
			close(fds[k]);
	free(tmp);
	return tmp ? rc : -1;
}

/* Move len bytes between buf and the file, 8 MiB at a time with 8 in flight. */
static int big_io(struct pnfs_context *ctx, struct pnfs_fh *fh, char *buf, uint64_t len, int write)
{
	const size_t piece = 8 * MIB;
	const int depth = 8;
	struct ops o = { 0 };
	uint64_t next = 0;
	int issued = 0;

	while (o.done < issued || next < len) {
		while (next < len && issued - o.done < depth) {
			size_t l = len - next < piece ? (size_t)(len - next) : piece;
			int rc = write ? pnfs_pwrite_async(ctx, fh, buf + next, l, next, ops_cb, &o)
				       : pnfs_pread_async(ctx, fh, buf + next, l, next, ops_cb, &o);
			if (rc < 0)
				return rc;
			next += l;
			issued++;
		}
		if (pnfs_run_once(ctx, 1000) < 0)
			return -EIO;
	}
	return o.bad ? o.first_err : 0;
}

static double share(uint64_t part, uint64_t whole)
{
	return 100.0 * (double)part / (double)whole;
}

static void test_direct_path(void)
{
	NEED_LAB();
	const uint64_t len = 512 * MIB;
	struct pnfs_context *w = client(INITIATOR_A, 0), *r = client(INITIATOR_B, 0);
	char *data = malloc(len), *back = malloc(len);
	struct pnfs_stats s0, s1;
	struct pnfs_extent *ext = NULL;
	struct pnfs_fh *fh = NULL;
	uint64_t m0, m1, luns[LAB_MAX_LUNS] = { 0 }, covered = 0, client_bytes;
	size_t next = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_NOT_EQUAL_FATAL(mds_metric("pnfs_mds_net_sent_bytes_total"), UINT64_MAX);
	CU_ASSERT_NOT_EQUAL_FATAL(mds_metric("pnfs_mds_net_received_bytes_total"), UINT64_MAX);
	test_fill_random(data, len, 400);

	/* The write: 512 MiB through the layout, committed by fsync. */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(w, "/direct", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	pnfs_get_stats(w, &s0);
	m0 = mds_net_bytes();
	CU_ASSERT_EQUAL_FATAL(big_io(w, fh, data, len, 1), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_fsync(w, fh), 0);
	m1 = mds_net_bytes();
	pnfs_get_stats(w, &s1);
	client_bytes = (s1.mds_bytes_sent - s0.mds_bytes_sent) + (s1.mds_bytes_received - s0.mds_bytes_received);
	fprintf(stderr, "\n  512 MiB write: MDS port %" PRIu64 " bytes (%.4f%%) by the server's count, %" PRIu64
			" (%.4f%%) by the client's; %" PRIu64 " bytes direct\n",
		m1 - m0, share(m1 - m0, len), client_bytes, share(client_bytes, len),
		s1.direct_bytes_written - s0.direct_bytes_written);
	CU_ASSERT(s1.direct_bytes_written - s0.direct_bytes_written >= len);
	CU_ASSERT_EQUAL(s1.mds_data_written - s0.mds_data_written, 0);
	CU_ASSERT(client_bytes > 0);
	CU_ASSERT(client_bytes * 100 < len);
	CU_ASSERT(m1 > m0);
	CU_ASSERT((m1 - m0) * 100 < len);

	/* Where the data sits: the layout's extents, resolved to LUNs, hold exactly the file's bytes. */
	CU_ASSERT_EQUAL_FATAL(pnfs_fh_extents(fh, &ext, &next), 0);
	CU_ASSERT_FATAL(next > 0);
	for (size_t i = 0; i < next; i++) {
		CU_ASSERT_EQUAL(ext[i].file_offset, covered);
		/* written below the end; past it, what was granted ahead of the writes is allocated and
		 * unwritten */
		CU_ASSERT_EQUAL(ext[i].state, ext[i].file_offset < len ? PNFS_EXT_READ_WRITE : PNFS_EXT_INVALID);
		CU_ASSERT_PTR_NOT_NULL(pnfs_device_volume(w, ext[i].deviceid));
		covered = ext[i].file_offset + ext[i].length;
	}
	CU_ASSERT(covered >= len);
	/* A sequential writer asks for the next window before its writes reach it: but for the first,
	 * every LAYOUTGET of the write went out ahead (how many writes still waited depends on the
	 * server's speed and is only shown) */
	CU_ASSERT(s1.layoutgets - s0.layoutgets >= 2);
	CU_ASSERT_EQUAL(s1.layoutgets_ahead - s0.layoutgets_ahead, s1.layoutgets - s0.layoutgets - 1);
	fprintf(stderr, "  512 MiB write: %" PRIu64 " LAYOUTGETs, %" PRIu64 " of them ahead, %" PRIu64
			" writes waited for one\n",
		s1.layoutgets - s0.layoutgets, s1.layoutgets_ahead - s0.layoutgets_ahead, s1.layout_waits - s0.layout_waits);
	CU_ASSERT_EQUAL(check_on_luns(w, ext, next, data, len, luns), 0);
	/* Striped: every LUN holds a quarter. */
	for (int k = 0; k < lab->nluns; k++)
		CU_ASSERT_EQUAL(luns[k], len / (uint64_t)lab->nluns);
	free(ext);
	CU_ASSERT_EQUAL(pnfs_close(w, fh), 0);
	/* Returned with the layout at close: nothing stays allocated past the end of the file. */
	{
		struct pnfs_stat st;
		CU_ASSERT_EQUAL(pnfs_stat(w, "/direct", &st), 0);
		CU_ASSERT_EQUAL(st.size, len);
		CU_ASSERT_EQUAL(st.space_used, len);
	}

	/* The read, by another client: 512 MiB through its own layout. */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(r, "/direct", O_RDONLY, 0, &fh), 0);
	pnfs_get_stats(r, &s0);
	m0 = mds_net_bytes();
	memset(back, 0, len);
	CU_ASSERT_EQUAL_FATAL(big_io(r, fh, back, len, 0), 0);
	m1 = mds_net_bytes();
	pnfs_get_stats(r, &s1);
	client_bytes = (s1.mds_bytes_sent - s0.mds_bytes_sent) + (s1.mds_bytes_received - s0.mds_bytes_received);
	fprintf(stderr, "  512 MiB read:  MDS port %" PRIu64 " bytes (%.4f%%) by the server's count, %" PRIu64
			" (%.4f%%) by the client's; %" PRIu64 " bytes direct\n",
		m1 - m0, share(m1 - m0, len), client_bytes, share(client_bytes, len),
		s1.direct_bytes_read - s0.direct_bytes_read);
	CU_ASSERT_EQUAL(memcmp(back, data, len), 0);
	CU_ASSERT_EQUAL(s1.direct_bytes_read - s0.direct_bytes_read, len);
	CU_ASSERT_EQUAL(s1.mds_data_read - s0.mds_data_read, 0);
	CU_ASSERT(client_bytes > 0);
	CU_ASSERT(client_bytes * 100 < len);
	CU_ASSERT(m1 > m0);
	CU_ASSERT((m1 - m0) * 100 < len);
	/* The reader's layout names the same places. */
	CU_ASSERT_EQUAL_FATAL(pnfs_fh_extents(fh, &ext, &next), 0);
	memset(luns, 0, sizeof(luns));
	CU_ASSERT_EQUAL(check_on_luns(r, ext, next, data, len, luns), 0);
	free(ext);
	CU_ASSERT_EQUAL(pnfs_close(r, fh), 0);

	/* The counters do see data that crosses the MDS: 16 MiB through the MDS path. */
	{
		struct pnfs_context *m = client(INITIATOR_CP, 1);
		const size_t n = 16 * MIB;
		CU_ASSERT_EQUAL_FATAL(pnfs_open(m, "/direct", O_RDONLY, 0, &fh), 0);
		pnfs_get_stats(m, &s0);
		m0 = mds_net_bytes();
		CU_ASSERT_EQUAL(pnfs_pread(m, fh, back, n, 0), (ssize_t)n);
		m1 = mds_net_bytes();
		pnfs_get_stats(m, &s1);
		CU_ASSERT_EQUAL(memcmp(back, data, n), 0);
		CU_ASSERT(m1 - m0 >= n);
		CU_ASSERT(s1.mds_bytes_received - s0.mds_bytes_received >= n);
		CU_ASSERT_EQUAL(s1.mds_data_read - s0.mds_data_read, n);
		CU_ASSERT_EQUAL(pnfs_close(m, fh), 0);
		client_done(m);
	}
	CU_ASSERT_EQUAL(pnfs_unlink(w, "/direct"), 0);
	client_done(w);
	client_done(r);
	free(data);
	free(back);
}

/* ---- calls the MDS never answered -------------------------------------------------------------- */

struct pending {
	int done, ok, failed;
	char err[300]; /* the last failure's text */
};

static void pending_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct pending *p = priv;
	(void)data;
	p->done++;
	if (status >= 0) {
		p->ok++;
	} else {
		p->failed++;
		snprintf(p->err, sizeof(p->err), "%s", pnfs_get_error(ctx));
	}
}

/* Reads of 4 KiB at the given block numbers, all in flight at once; how many succeeded with the
 * file's bytes, or -1 when they did not all finish in time. */
static int reads_at_once(struct pnfs_context *ctx, struct pnfs_fh *fh, const char *data, const int *blocks, int n,
			 char *err, size_t errlen)
{
	struct pending p = { 0 };
	char *back = calloc((size_t)n, 4096);
	uint64_t t0 = ct_now_ms();
	int good = 0;

	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(pnfs_pread_async(ctx, fh, back + (size_t)i * 4096, 4096, (uint64_t)blocks[i] * 4096,
						 pending_cb, &p), 0);
	while (p.done < n && ct_now_ms() - t0 < 60000)
		if (pnfs_run_once(ctx, 500) < 0)
			break;
	for (int i = 0; p.done == n && i < n; i++)
		good += memcmp(back + (size_t)i * 4096, data + (size_t)blocks[i] * 4096, 4096) == 0;
	free(back);
	if (err)
		snprintf(err, errlen, "%s", p.err);
	return p.done == n ? (p.ok == good ? good : -2) : -1;
}

/* Calls lost on the way to the MDS, or whose replies were lost, are given up (timed out across
 * reconnects) on every slot of the session. Whether the MDS ran them is unknown to the client: each
 * slot is settled by a lone SEQUENCE before a call uses it again, and every call after them
 * succeeds: the session is kept, no slot is lost for good, and the reads return the file's bytes. */
static void test_unanswered_calls(void)
{
	NEED_LAB();
	static const int lost[4] = { 0, 1, 2, 3 }, same[4] = { 0, 1, 2, 3 }, other[4] = { 4, 5, 6, 7 };
	struct ct_proxy *px = ct_proxy_start(mds->port);
	const size_t len = 64 * 1024;
	char *data = malloc(len);
	struct pnfs_opts tune = { .slots = 4, .timeout_ms = 1000 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	test_fill_random(data, len, 61);
	for (int mode = CT_PROXY_DROP_REQUESTS; mode <= CT_PROXY_DROP_REPLIES; mode++) {
		struct pnfs_context *ctx = client_at(INITIATOR_A, 1, ct_proxy_port(px), &tune);
		struct pnfs_fh *fh;
		struct pnfs_stats st;
		char back[4096], err[300];
		int good;

		CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/unanswered", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
		CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, data, len, 0), (ssize_t)len);
		CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), 0);
		ct_proxy_drop(px, mode);
		good = reads_at_once(ctx, fh, data, lost, 4, err, sizeof(err));
		CU_ASSERT_EQUAL(good, 0); /* all four given up, saying why */
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "no reply from 127.0.0.1:"));
		ct_proxy_drop(px, CT_PROXY_PASS);
		/* One at a time: each slot in turn settles. */
		for (int i = 0; i < 8; i++) {
			ssize_t got = pnfs_pread(ctx, fh, back, sizeof(back), (uint64_t)(8 + i) * 4096);
			if (got != (ssize_t)sizeof(back))
				fprintf(stderr, "\n  read %d after %s: %s\n", i,
					mode == CT_PROXY_DROP_REQUESTS ? "lost requests" : "lost replies",
					pnfs_get_error(ctx));
			CU_ASSERT_EQUAL(got, (ssize_t)sizeof(back));
			CU_ASSERT_EQUAL(memcmp(back, data + (size_t)(8 + i) * 4096, sizeof(back)), 0);
		}
		/* All slots at once, with the requests given up on them (same args) and others. */
		CU_ASSERT_EQUAL(reads_at_once(ctx, fh, data, same, 4, NULL, 0), 4);
		CU_ASSERT_EQUAL(reads_at_once(ctx, fh, data, other, 4, NULL, 0), 4);
		pnfs_get_stats(ctx, &st);
		CU_ASSERT(st.connects >= 2);
		CU_ASSERT_EQUAL(st.clientid_recoveries, 0);
		CU_ASSERT_EQUAL(st.session_recoveries, 0);
		CU_ASSERT_EQUAL(st.slots_settled, 4); /* one lone SEQUENCE per slot in doubt */
		CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
		CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/unanswered"), 0);
		client_done(ctx);
	}
	ct_proxy_stop(px);
	free(data);
}

/* ---- a layout its holder never gives back ------------------------------------------------------ */

/* A client holds the RW layout of a file and goes silent (its connection to the MDS, backchannel
 * and all, loses everything), so the MDS can neither recall the layout nor revoke it before the
 * holder's lease runs out. A copy into the file from another client is refused a layout (try later)
 * until it gives up on layouts for that I/O: it says so in one line, writes through the MDS, and a
 * copy out of the file, once the holder is back and has closed, has the copy's bytes. */
static void test_layout_held_elsewhere(void)
{
	NEED_LAB();
	struct ct_proxy *px = ct_proxy_start(mds->port);
	struct pnfs_opts tune = { .timeout_ms = 60000 };
	const size_t len = 1 * MIB;
	char *data = malloc(len), src[400], back[400], *stats = NULL;
	struct pnfs_context *holder;
	struct pnfs_fh *fh;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	holder = client_at(INITIATOR_A, 0, ct_proxy_port(px), &tune);
	CU_ASSERT_PTR_NOT_NULL_FATAL(holder);
	test_fill_random(data, len, 71);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(holder, "/held", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(holder, fh, data, len, 0), (ssize_t)len);
	CU_ASSERT_EQUAL(pnfs_fsync(holder, fh), 0);
	ct_proxy_drop(px, CT_PROXY_DROP_REQUESTS | CT_PROXY_DROP_REPLIES);

	test_fill_random(data, len, 72);
	snprintf(src, sizeof(src), "%s/held.src", shm);
	CU_ASSERT_FATAL(write_file(src, data, len) == 0);
	/* --inplace: into the file whose layout is held (not a new temporary) */
	CU_ASSERT_EQUAL(pnfs_cp_with("--inplace", src, url("/held"), &stats), 0);
	if (!stats || !strstr(stats, "/held: no layout after 25 tries"))
		fprintf(stderr, "\n  pnfs cp said: %s\n", stats ? stats : "(nothing)");
	CU_ASSERT_PTR_NOT_NULL(stats ? strstr(stats, "/held: no layout after 25 tries") : NULL);
	CU_ASSERT_PTR_NOT_NULL(stats ? strstr(stats, "this I/O goes through the MDS") : NULL);
	CU_ASSERT(test_json_num(stats, "mds_data_written") >= len);
	free(stats);

	/* The holder comes back and closes (returning its layout); the file has the copy's bytes. */
	ct_proxy_drop(px, CT_PROXY_PASS);
	CU_ASSERT_EQUAL(pnfs_close(holder, fh), 0);
	snprintf(back, sizeof(back), "%s/held.back", shm);
	CU_ASSERT_EQUAL(pnfs_cp(url("/held"), back, &stats), 0);
	free(stats);
	CU_ASSERT(file_equals(back, data, len));
	CU_ASSERT_EQUAL(pnfs_unlink(holder, "/held"), 0);
	client_done(holder);
	unlink(src);
	unlink(back);
	ct_proxy_stop(px);
	free(data);
}

/* ---- a portal that does not answer ----------------------------------------------------------- */

/* Run ctx's loop until the relay has taken n connections (at most 20 s); whether it did. */
static int drive_until_accepted(struct pnfs_context *ctx, struct ct_proxy *px, unsigned n)
{
	uint64_t t0 = ct_now_ms();

	while (ct_proxy_accepted(px) < n && ct_now_ms() - t0 < 20000)
		if (pnfs_run_once(ctx, 50) < 0)
			return 0;
	return ct_proxy_accepted(px) >= n;
}

/* Finding a device's LUNs waits on the SAN (discovery, logins): here on a portal that takes the
 * connection and never answers, until the command timeout. That wait is the device's alone. The
 * client goes on serving its MDS session meanwhile: calls complete while the device is still being
 * resolved. Once the silent portal is given up, the LUNs behind the live one carry the write. A
 * context destroyed while a resolution waits does not wait for it. */
static void test_silent_portal(void)
{
	NEED_LAB();
	struct ct_proxy *px = ct_proxy_start(lab->port);
	char silent[80], live[80], *data = malloc(MIB), *back = malloc(MIB);
	const char *portals[2] = { silent, live };
	struct pnfs_context *ctx, *b, *c;
	struct pnfs_opts o;
	struct pnfs_extent *ext = NULL;
	struct pnfs_stat st;
	struct pnfs_stats stats;
	struct pnfs_fh *fh, *fb, *fc;
	struct ops w = { 0 }, wc = { 0 };
	uint8_t devid[16];
	size_t next = 0;
	const char *why_not = NULL;
	unsigned n0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	test_fill_random(data, MIB, 81);
	/* The pool's device ID, from a client configured with the LUNs themselves. */
	b = client(INITIATOR_B, 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(b, "/silent-id", O_CREAT | O_RDWR | O_TRUNC, 0644, &fb), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(b, fb, data, 4096, 0), 4096);
	CU_ASSERT_EQUAL_FATAL(pnfs_layout_extents(b, fb, 0, 4096, &ext, &next), 0);
	CU_ASSERT_FATAL(next >= 1);
	memcpy(devid, ext[0].deviceid, sizeof(devid));
	free(ext);
	CU_ASSERT_EQUAL(pnfs_close(b, fb), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(b, "/silent-id"), 0);
	client_done(b);

	/* Client A knows two portals; the first answers nothing. */
	ct_proxy_drop(px, CT_PROXY_DROP_REPLIES);
	snprintf(silent, sizeof(silent), "iscsi://127.0.0.1:%d", ct_proxy_port(px));
	snprintf(live, sizeof(live), "iscsi://127.0.0.1:%d", lab->port);
	pnfs_opts_init(&o);
	o.portals = portals;
	o.nportals = 2;
	o.initiator_name = INITIATOR_A;
	o.io_timeout_ms = 4000;
	ctx = ct_mount(&o, mds->port, "/");
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/silent", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_pwrite_async(ctx, fh, data, MIB, 0, ops_cb, &w), 0);
	CU_ASSERT_FATAL(drive_until_accepted(ctx, px, 1));
	/* The silent portal has the resolution waiting; the session still serves calls. */
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(pnfs_stat(ctx, "/silent", &st), 0);
	CU_ASSERT_EQUAL(pnfs_device_info(ctx, devid, NULL, &why_not), 0);
	CU_ASSERT_STRING_EQUAL(why_not, "its LUNs are being looked for");
	CU_ASSERT_EQUAL(w.done, 0);
	/* Then the live portal's LUNs take the write. */
	while (w.done < 1)
		if (pnfs_run_once(ctx, 1000) < 0)
			break;
	CU_ASSERT_EQUAL(w.bad, 0);
	CU_ASSERT_EQUAL(pnfs_device_info(ctx, devid, NULL, &why_not), 1);
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, MIB, 0), (ssize_t)MIB);
	CU_ASSERT_EQUAL(memcmp(back, data, MIB), 0);
	pnfs_get_stats(ctx, &stats);
	CU_ASSERT_EQUAL(stats.direct_bytes_written, MIB);
	CU_ASSERT_EQUAL(stats.mds_data_written, 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);

	/* Client C knows only the silent portal, and is destroyed while its device waits on it. */
	o.portals = portals;
	o.nportals = 1;
	o.initiator_name = INITIATOR_B;
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &c), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_mount(c, "127.0.0.1", mds->port, "/"), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(c, "/silent-c", O_CREAT | O_RDWR | O_TRUNC, 0644, &fc), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_pwrite_async(c, fc, data, 4096, 0, ops_cb, &wc), 0);
	n0 = ct_proxy_accepted(px);
	CU_ASSERT_FATAL(drive_until_accepted(c, px, n0 + 1));
	CU_ASSERT_EQUAL(pnfs_device_info(c, devid, NULL, &why_not), 0);
	CU_ASSERT_STRING_EQUAL(why_not, "its LUNs are being looked for");
	pnfs_context_destroy(c); /* the write completes as cancelled */
	CU_ASSERT_EQUAL(wc.done, 1);
	CU_ASSERT_EQUAL(wc.first_err, -ECANCELED);

	/* A's file is intact. */
	memset(back, 0, MIB);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/silent", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, MIB, 0), (ssize_t)MIB);
	CU_ASSERT_EQUAL(memcmp(back, data, MIB), 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/silent"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/silent-c"), 0);
	client_done(ctx);
	ct_proxy_stop(px);
	free(data);
	free(back);
}

/* ---- destroyed with I/O in flight ------------------------------------------------------------- */

/* MDS-path writes into blocks the file's RW layout allocated (INVALID until written) are in flight
 * when that layout comes back: the blocks a write is filling stay the write's, not dropped with the
 * layout's unwritten ones, and every write lands (before, the one between its two transactions
 * failed with NFS4ERR_SERVERFAULT). */
static void returned_cb(struct pnfs_context *ctx, int status, void *arg)
{
	ops_cb(ctx, status, NULL, arg);
}

static void test_mds_writes_during_return(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(INITIATOR_A, 0);
	const size_t chunk = MIB;
	const int n = 8;
	char *buf = malloc((size_t)n * chunk + 4096), *back = malloc((size_t)n * chunk + 4096);
	struct ops w = { 0 }, r = { 0 };
	struct pnfs_fh *fh;

	test_fill_random(buf, (size_t)n * chunk + 4096, 350);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/wret", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	/* a direct write: the RW layout, its blocks ahead allocated as INVALID */
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, 4096, 0), 4096);
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fh->lo);
	/* then the file goes through the MDS, and the layout goes back while its writes run */
	pc_fh_to_mds(fh, "test");
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + 4096 + (size_t)i * chunk, chunk,
						  4096 + (uint64_t)i * chunk, ops_cb, &w), 0);
	CU_ASSERT_EQUAL(pc_layout_return_all(fh, 0, returned_cb, &r), 0);
	while (w.done < n || r.done < 1)
		if (pnfs_run_once(ctx, 5000) < 0)
			break;
	CU_ASSERT_EQUAL(w.bad, 0);
	if (w.bad)
		fprintf(stderr, "\n  MDS-path write: %s\n", strerror(-w.first_err));
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, (size_t)n * chunk + 4096, 0), (ssize_t)((size_t)n * chunk + 4096));
	CU_ASSERT_EQUAL(memcmp(buf, back, (size_t)n * chunk + 4096), 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/wret"), 0);
	client_done(ctx);
	free(buf);
	free(back);
}

/* Start pnfs cp SRC DST through the relay px; once more than 80 MiB crossed it in the data's
 * direction (a copy keeps at most 64 MiB in flight, so some of its I/O has completed), the relay
 * loses everything sent that way. Waits for the copy (60 s at most); its stderr goes to errtxt.
 * Returns its wait status. */
static int cp_path_goes_silent(struct ct_proxy *px, const char *src, const char *dst, int down, const char *errfile,
			       char *errtxt, size_t len)
{
	char opts[LAB_MAX_LUNS * 300 + 200];
	int status = -1, exited = 0;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(ct_relay_opts(lab, px, INITIATOR_CP, "--io-timeout 1", opts, sizeof(opts)), 0);
	pid = ct_cp_start(opts, src, dst, errfile);
	CU_ASSERT_FATAL(pid > 0);
	TW_WAIT_UNTIL(ct_proxy_bytes(px, down) >= 80 * MIB, 10 * 1000, 1);
	CU_ASSERT_EQUAL(kill(pid, SIGSTOP), 0);
	if (waitpid(pid, &status, WNOHANG) == pid) {
		CU_FAIL("the copy ended before its path could be cut");
		exited = 1;
	}
	CU_ASSERT(ct_proxy_bytes(px, down) >= 80 * MIB);
	ct_proxy_drop(px, down ? CT_PROXY_DROP_REPLIES : CT_PROXY_DROP_REQUESTS);
	CU_ASSERT_EQUAL(kill(pid, SIGCONT), 0);
	/* A check that the copy does not hang on the silent path, not a timing: what is left of it then
	 * goes through the MDS, up to the whole file again, which an ASan-built server on a loaded
	 * machine writes at a few MiB/s. */
	if (ct_cp_wait(pid, exited, 180, &status, errfile, errtxt, len) != 0)
		CU_FAIL("pnfs cp did not end within 180 s of its SAN path going silent");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "\n  pnfs cp said: %s\n", errtxt);
	return status;
}

/* The client's path to the LUNs goes silent in the middle of a copy in. The writes then in flight
 * time out, the file goes through the MDS, and the writes that had landed directly cannot be
 * committed (there is no path left to flush them): the copy says so, copies the file again through
 * the MDS, whole, and exits 0 with the source's bytes in the file. Then the same in the middle of a
 * copy out: the reads that time out are done again through the MDS, and the copy is the file. */
static void test_san_path_lost_mid_copy(void)
{
	NEED_LAB();
	const size_t total = 256 * MIB;
	struct ct_proxy *px = ct_proxy_start(lab->port), *px2 = ct_proxy_start(lab->port);
	char *buf = malloc(total), src[400], sf[400], back[400], errtxt[8192] = "", *stats = NULL;
	int status;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	snprintf(src, sizeof(src), "%s/pathlost.src", shm);
	snprintf(sf, sizeof(sf), "%s/pathlost.err", shm);
	snprintf(back, sizeof(back), "%s/pathlost.back", shm);
	test_fill_random(buf, total, 340);
	CU_ASSERT_EQUAL_FATAL(write_file(src, buf, total), 0);
	status = cp_path_goes_silent(px, src, url("/pathlost"), 0, sf, errtxt, sizeof(errtxt));
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(errtxt, "may be lost; copying again through the MDS"));
	/* every byte is the source's, read back over the real portal */
	CU_ASSERT_EQUAL(pnfs_cp(url("/pathlost"), back, &stats), 0);
	free(stats);
	CU_ASSERT(file_equals(back, buf, total));
	unlink(back);
	/* and out */
	status = cp_path_goes_silent(px2, url("/pathlost"), back, 1, sf, errtxt, sizeof(errtxt));
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(errtxt, "using the MDS path"));
	CU_ASSERT(file_equals(back, buf, total));
	{
		struct pnfs_context *ctx = client(INITIATOR_A, 0);
		CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/pathlost"), 0);
		client_done(ctx);
	}
	unlink(src);
	unlink(sf);
	unlink(back);
	ct_proxy_stop(px);
	ct_proxy_stop(px2);
	free(buf);
}

/* Every write through the layout has landed when the SAN path goes silent; fsync cannot flush the
 * LUNs (SYNCHRONIZE CACHE times out), so it fails and says the writes may be lost. The file then
 * goes through the MDS (a copy doing its writes again must not wait on the silent path once more):
 * the same writes done again land through the MDS, fsync succeeds, and another client reads them. */
static void test_flush_path_lost(void)
{
	NEED_LAB();
	const size_t len = 4 * MIB;
	struct ct_proxy *px = ct_proxy_start(lab->port);
	char *data = malloc(len), *back = malloc(len), relay[LAB_MAX_LUNS][512];
	const char *urls[LAB_MAX_LUNS];
	struct pnfs_context *ctx, *other;
	struct pnfs_opts o;
	struct pnfs_stats st;
	struct pnfs_fh *fh;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	test_fill_random(data, len, 97);
	pnfs_opts_init(&o);
	for (int i = 0; i < lab->nluns; i++) {
		CU_ASSERT_EQUAL_FATAL(ct_relay_url(lab, px, i, relay[i], sizeof(relay[i])), 0);
		urls[i] = relay[i];
	}
	o.devices = urls;
	o.ndevices = (unsigned)lab->nluns;
	o.initiator_name = INITIATOR_CP;
	o.io_timeout_ms = 1000;
	ctx = ct_mount(&o, mds->port, "/");
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/flushlost", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, data, len, 0), (ssize_t)len);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, len);
	CU_ASSERT_STRING_EQUAL(pnfs_fh_mds_reason(fh), "");

	ct_proxy_drop(px, CT_PROXY_DROP_REQUESTS);
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "cannot make the writes through the layout stable"));
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_fh_mds_reason(fh), "flushing the LUNs failed"));

	/* written again, through the MDS this time */
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, data, len, 0), (ssize_t)len);
	if (pnfs_fsync(ctx, fh) != 0)
		fprintf(stderr, "\n  fsync after the rewrite: %s\n", pnfs_get_error(ctx));
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), 0);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT(st.mds_data_written >= len);
	CU_ASSERT_EQUAL(st.direct_bytes_written, len);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);

	other = client(INITIATOR_B, 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(other, "/flushlost", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(other, fh, back, len, 0), (ssize_t)len);
	CU_ASSERT_EQUAL(memcmp(back, data, len), 0);
	CU_ASSERT_EQUAL(pnfs_close(other, fh), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(other, "/flushlost"), 0);
	client_done(other);
	ct_proxy_drop(px, CT_PROXY_PASS);
	client_done(ctx);
	ct_proxy_stop(px);
	free(data);
	free(back);
}

/* pnfs_context_destroy with direct writes in flight on the LUNs: each write completes once, written
 * or cancelled (-ECANCELED), and nothing is touched after it is freed (the ASan build checks that).
 * The file is left as it is: the MDS keeps the gone client's state until its lease runs out. */
static void test_destroy_in_flight(void)
{
	NEED_LAB();
	const size_t len = 4 * MIB;
	const int n = 8;
	char *data = malloc(len * (size_t)n);
	struct pnfs_context *ctx = client(INITIATOR_A, 0);
	struct pnfs_stats st;
	struct pnfs_fh *fh;
	struct ops w = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	test_fill_random(data, len * (size_t)n, 91);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/destroyed-mid-write", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	/* the layout and the device first */
	CU_ASSERT_EQUAL_FATAL(pnfs_pwrite(ctx, fh, data, 4096, 0), 4096);
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, data + (size_t)i * len, len, (uint64_t)i * len, ops_cb, &w), 0);
	CU_ASSERT(pnfs_run_once(ctx, 0) >= 0);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.mds_data_written, 0);
	pnfs_context_destroy(ctx);
	CU_ASSERT_EQUAL(w.done, n);
	CU_ASSERT(w.bad >= 1);
	CU_ASSERT_EQUAL(w.first_err, -ECANCELED);
	free(data);
}

/* The body of test_truncate_own_layout, in a child: writes, truncates to smaller sizes (the MDS
 * recalls from this very client the layout past the new end) and to larger ones, reads and writes
 * again across the old and the new end, checked against a copy in memory; then another client,
 * through the MDS, reads what was committed. Returns 0 when every byte matched, or the step that
 * went wrong. */
static int truncate_own_layout_body(void)
{
	const size_t max = 1024 * 1024;
	static const uint64_t trunc_to[] = { 450560, 282624, 8192, 700001, 0, 123457, 4096, 65536 };
	char *model = calloc(1, max), *buf = malloc(max), *back = malloc(max);
	struct pnfs_context *ctx;
	struct pnfs_opts o;
	const char *urls[LAB_MAX_LUNS];
	struct pnfs_fh *fh;
	uint64_t size = 0;
	unsigned seed = 8881;

	if (!model || !buf || !back)
		return 1;
	pnfs_opts_init(&o);
	ct_lab_devices(&o, lab, urls);
	o.initiator_name = INITIATOR_A;
	if (pnfs_context_create(&o, &ctx) != 0)
		return 2;
	if (pnfs_mount(ctx, "127.0.0.1", mds->port, "/") != 0)
		return 3;
	if (pnfs_open(ctx, "/trunc-own", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh) != 0)
		return 4;
	for (int round = 0; round < 24; round++) {
		uint64_t t = trunc_to[round % (sizeof(trunc_to) / sizeof(trunc_to[0]))];
		/* a write reaching past the truncation point, from somewhere before it */
		uint64_t off = (uint64_t)(rand_r(&seed) % 300000), len = 1 + (uint64_t)(rand_r(&seed) % 400000);

		if (off + len > max)
			len = max - off;
		test_fill_random(buf, len, (unsigned)round + 1);
		if (pnfs_pwrite(ctx, fh, buf, len, off) != (ssize_t)len)
			return 10;
		memcpy(model + off, buf, len);
		if (off + len > size)
			size = off + len;
		if (pnfs_ftruncate(ctx, fh, t) != 0)
			return 11;
		if (t < size)
			memset(model + t, 0, size - t);
		size = t;
		/* reads before the new end, across it and across the old one */
		uint64_t ro = (uint64_t)(rand_r(&seed) % 600000), rl = 1 + (uint64_t)(rand_r(&seed) % 300000);
		ssize_t want = ro >= size ? 0 : (ssize_t)(size - ro < rl ? size - ro : rl);
		if (pnfs_pread(ctx, fh, back, rl, ro) != want || memcmp(back, model + ro, (size_t)want) != 0)
			return 12;
		if (size > 8192 && (pnfs_pread(ctx, fh, back, 57344, 8192) !=
					    (ssize_t)(size - 8192 < 57344 ? size - 8192 : 57344) ||
				    memcmp(back, model + 8192, size - 8192 < 57344 ? size - 8192 : 57344) != 0))
			return 13;
		/* and a write after the new end, then everything back */
		off = size + (uint64_t)(rand_r(&seed) % 20000);
		len = 1 + (uint64_t)(rand_r(&seed) % 100000);
		test_fill_random(buf, len, (unsigned)round + 100);
		if (pnfs_pwrite(ctx, fh, buf, len, off) != (ssize_t)len)
			return 14;
		memcpy(model + off, buf, len);
		size = off + len;
		ssize_t got = pnfs_pread(ctx, fh, back, max, 0);
		if (got != (ssize_t)size || memcmp(back, model, size) != 0) {
			size_t k = 0;
			while (k < size && k < (size_t)(got > 0 ? got : 0) && back[k] == model[k])
				k++;
			fprintf(stderr, "\n  round %d: read %zd of %" PRIu64 ", first difference at %zu (last write "
				"%" PRIu64 "+%" PRIu64 ", truncated to %" PRIu64 ")\n", round, got, size, k, off, len, t);
			return 15;
		}
	}
	if (pnfs_fsync(ctx, fh) != 0)
		return 16;
	{
		struct pnfs_context *other;
		struct pnfs_fh *ofh;

		o.mds_io = 1;
		o.initiator_name = INITIATOR_B;
		if (pnfs_context_create(&o, &other) != 0 || pnfs_mount(other, "127.0.0.1", mds->port, "/") != 0 ||
		    pnfs_open(other, "/trunc-own", O_RDONLY, 0, &ofh) != 0)
			return 17;
		memset(back, 0, max);
		if (pnfs_pread(other, ofh, back, max, 0) != (ssize_t)size || memcmp(back, model, size) != 0)
			return 18;
		pnfs_close(other, ofh);
		pnfs_context_destroy(other);
	}
	if (pnfs_close(ctx, fh) != 0 || pnfs_unlink(ctx, "/trunc-own") != 0)
		return 19;
	pnfs_context_destroy(ctx);
	free(model);
	free(buf);
	free(back);
	return 0;
}

/* A truncate on the client that holds the file's layout: the MDS recalls that layout (the part past
 * the new end) from the very client whose SETATTR it serves, and the client answers with a return
 * of that part only. The rest of the layout stays usable: I/O before the new end, and past it, goes
 * on (an I/O waiting for a return that is never sent would hang; the child is given 120 s). */
static void test_truncate_own_layout(void)
{
	NEED_LAB();
	int status = -1;
	pid_t pid = fork();

	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		signal(SIGALRM, SIG_DFL); /* not the harness's: that one would clean up the suite */
		alarm(120);
		_exit(truncate_own_layout_body());
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "\n  the child died of signal %d (SIGALRM: it hung)\n", WTERMSIG(status));
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "\n  the child failed at step %d\n", WEXITSTATUS(status));
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_SUITE(client_e2e, "integration/client_e2e", suite_init, suite_clean,
	   { "sizes_0_to_512MiB_with_pnfs_cp", test_sizes },
	   { "two_clients_disjoint_ranges", test_two_clients },
	   { "recall_mid_copy_on_remove", test_recall_mid_copy },
	   { "source_shrinks_mid_copy", test_source_shrinks },
	   { "direct_path_512MiB", test_direct_path },
	   { "destination_full", test_destination_full },
	   { "unanswered_calls", test_unanswered_calls },
	   { "layout_held_elsewhere", test_layout_held_elsewhere },
	   { "silent_portal_while_resolving", test_silent_portal },
	   { "destroyed_with_io_in_flight", test_destroy_in_flight },
	   { "san_path_lost_mid_copy", test_san_path_lost_mid_copy },
	   { "flush_path_lost", test_flush_path_lost },
	   { "mds_writes_during_return", test_mds_writes_during_return },
	   { "truncate_own_layout", test_truncate_own_layout });
