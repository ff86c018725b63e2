/* libpnfs's MDS path against another NFSv4.1 server: Debian's nfs-ganesha with FSAL VFS on loopback.
 * Everything is checked twice, through the client and in the exported directory on disk: namespace
 * calls, I/O of many sizes and shapes, many calls in flight, errors with their reasons, a cut
 * connection (reconnect and replay), a server restart (new client ID, reopen) and lease renewal.
 * Skips with a reason when ganesha cannot start. */
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEASE_S 4

static struct ct_ganesha *gsh;
static char gsh_why[300];

static int suite_init(void)
{
	gsh = ct_ganesha_up(LEASE_S, gsh_why, sizeof(gsh_why));
	return 0;
}

static int suite_clean(void)
{
	ct_ganesha_down(gsh);
	gsh = NULL;
	return 0;
}

#define NEED_GANESHA() TEST_SKIP_IF(!gsh, "%s", gsh_why)

static struct pnfs_context *mount_at(int port, const struct pnfs_opts *opts)
{
	return ct_mount(opts, port, "/export");
}

static struct pnfs_context *mount_ganesha(void)
{
	return mount_at(gsh->port, NULL);
}

static const char *on_disk(const char *rel)
{
	static char p[4][600];
	static int k;
	char *b = p[k++ % 4];
	snprintf(b, sizeof(p[0]), "%s/%s", gsh->export_dir, rel);
	return b;
}

/* Compare a file on the server's disk with expected bytes. */
static int disk_equals(const char *rel, const void *want, size_t len)
{
	void *got;
	size_t glen;
	int same;

	if (ct_read_file(on_disk(rel), &got, &glen) < 0)
		return 0;
	same = glen == len && memcmp(got, want, len) == 0;
	free(got);
	return same;
}

static void test_namespace(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha();
	struct pnfs_stat st;
	struct pnfs_dir *d;
	const struct pnfs_dirent *e;
	char link[64];
	int seen_f = 0, seen_l = 0, seen_sub = 0;
	struct stat ds;

	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "ns", 0750), 0);
	CU_ASSERT_EQUAL(stat(on_disk("ns"), &ds), 0);
	CU_ASSERT(S_ISDIR(ds.st_mode));
	CU_ASSERT_EQUAL(ds.st_mode & 0777, 0750);
	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "ns/sub", 0755), 0);
	CU_ASSERT_EQUAL(ct_write_file(on_disk("ns/f"), "hello", 5), 0);
	CU_ASSERT_EQUAL(pnfs_symlink(ctx, "f", "ns/l"), 0);
	CU_ASSERT_EQUAL(pnfs_readlink(ctx, "ns/l", link, sizeof(link)), 1);
	CU_ASSERT_STRING_EQUAL(link, "f");
	CU_ASSERT_EQUAL(readlink(on_disk("ns/l"), link, sizeof(link)), 1);

	CU_ASSERT_EQUAL(pnfs_stat(ctx, "ns/f", &st), 0);
	CU_ASSERT_EQUAL(st.type, PNFS_REG);
	CU_ASSERT_EQUAL(st.size, 5);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "ns/l", &st), 0);
	CU_ASSERT_EQUAL(st.type, PNFS_LNK);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "/export/ns", &st), 0); /* absolute from the server root */
	CU_ASSERT_EQUAL(st.type, PNFS_DIR);
	CU_ASSERT_EQUAL(st.mode, 0750);
	CU_ASSERT_EQUAL(pnfs_chmod(ctx, "ns/f", 0600), 0);
	CU_ASSERT_EQUAL(stat(on_disk("ns/f"), &ds), 0);
	CU_ASSERT_EQUAL(ds.st_mode & 0777, 0600);

	CU_ASSERT_EQUAL_FATAL(pnfs_opendir(ctx, "ns", &d), 0);
	CU_ASSERT_EQUAL(pnfs_dir_count(d), 3);
	while ((e = pnfs_readdir(d))) {
		if (strcmp(e->name, "f") == 0) {
			seen_f = 1;
			CU_ASSERT_EQUAL(e->st.size, 5);
			CU_ASSERT_EQUAL(e->st.type, PNFS_REG);
		} else if (strcmp(e->name, "l") == 0) {
			seen_l = e->st.type == PNFS_LNK;
		} else if (strcmp(e->name, "sub") == 0) {
			seen_sub = e->st.type == PNFS_DIR;
		}
	}
	pnfs_closedir(d);
	CU_ASSERT(seen_f && seen_l && seen_sub);

	CU_ASSERT_EQUAL(pnfs_rename(ctx, "ns/f", "ns/sub/g"), 0);
	CU_ASSERT_NOT_EQUAL(access(on_disk("ns/f"), F_OK), 0);
	CU_ASSERT_TRUE(disk_equals("ns/sub/g", "hello", 5));
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "ns/sub"), -ENOTEMPTY);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "NFS4ERR_NOTEMPTY (Directory not empty)"));
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "ns/sub/g"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "ns/sub"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "ns/l"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "ns"), 0);
	CU_ASSERT_NOT_EQUAL(access(on_disk("ns"), F_OK), 0);

	/* A large directory takes several READDIR rounds. */
	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "big", 0755), 0);
	for (int i = 0; i < 1500; i++) {
		char p[64];
		snprintf(p, sizeof(p), "big/entry-with-a-longish-name-%04d", i);
		CU_ASSERT_EQUAL(ct_write_file(on_disk(p), "", 0), 0);
	}
	CU_ASSERT_EQUAL_FATAL(pnfs_opendir(ctx, "big", &d), 0);
	CU_ASSERT_EQUAL(pnfs_dir_count(d), 1500);
	pnfs_closedir(d);
	CU_ASSERT_EQUAL(test_run(NULL, "rm -rf '%s'", on_disk("big")), 0);

	CU_ASSERT_EQUAL(pnfs_umount(ctx), 0);
	pnfs_context_destroy(ctx);
}

static void test_sizes(void)
{
	NEED_GANESHA();
	static const size_t sizes[] = { 0, 1, 511, 512, 4095, 4096, 65537, (1u << 20) - 1, (1u << 20) + 1,
					(3u << 20) + 123, 9u << 20 };
	struct pnfs_context *ctx = mount_ganesha();
	size_t max = 9u << 20;
	char *a = malloc(max), *b = malloc(max + 100);

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pnfs_fh *fh;
		struct pnfs_stat st;
		char name[64];
		size_t n = sizes[i];

		snprintf(name, sizeof(name), "size-%zu", n);
		test_fill_random(a, n, 1000 + n);
		CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, name, O_CREAT | O_WRONLY | O_TRUNC, 0644, &fh), 0);
		CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, a, n, 0), (ssize_t)n);
		CU_ASSERT_EQUAL(pnfs_fstat(ctx, fh, &st), 0);
		CU_ASSERT_EQUAL(st.size, n);
		CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
		CU_ASSERT_TRUE(disk_equals(name, a, n));

		CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, name, O_RDONLY, 0, &fh), 0);
		memset(b, 0xee, n + 100);
		CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, b, n + 100, 0), (ssize_t)n); /* short at EOF */
		CU_ASSERT_EQUAL(memcmp(a, b, n), 0);
		CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, b, 10, n), 0);               /* at EOF */
		CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, b, 10, n + 4096), 0);        /* past EOF */
		CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
		CU_ASSERT_EQUAL(pnfs_unlink(ctx, name), 0);
	}
	free(a);
	free(b);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

static void test_vectored_and_holes(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha();
	struct pnfs_fh *fh;
	char p1[1000], p2[70000], p3[3], r1[500], r2[70500], all[80000];
	struct iovec w[3] = { { p1, sizeof(p1) }, { p2, sizeof(p2) }, { p3, sizeof(p3) } };
	struct iovec r[2] = { { r1, sizeof(r1) }, { r2, sizeof(r2) } };
	const uint64_t off = 123457;
	void *disk;
	size_t dlen;

	test_fill_random(p1, sizeof(p1), 1);
	test_fill_random(p2, sizeof(p2), 2);
	test_fill_random(p3, sizeof(p3), 3);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "vec", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pwritev(ctx, fh, w, 3, off), (ssize_t)(sizeof(p1) + sizeof(p2) + sizeof(p3)));
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_preadv(ctx, fh, r, 2, off), (ssize_t)(sizeof(r1) + sizeof(r2)));
	memcpy(all, r1, sizeof(r1));
	memcpy(all + sizeof(r1), r2, sizeof(r2));
	CU_ASSERT_EQUAL(memcmp(all, p1, sizeof(p1)), 0);
	CU_ASSERT_EQUAL(memcmp(all + sizeof(p1), p2, sizeof(r1) + sizeof(r2) - sizeof(p1)), 0);
	/* The hole before the data reads as zeros. */
	memset(all, 1, sizeof(all));
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, all, 70000, 0), 70000);
	for (size_t i = 0; i < 70000; i++)
		if (all[i] != 0) {
			CU_FAIL("hole not zero");
			break;
		}
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_EQUAL_FATAL(ct_read_file(on_disk("vec"), &disk, &dlen), 0);
	CU_ASSERT_EQUAL(dlen, off + sizeof(p1) + sizeof(p2) + sizeof(p3));
	CU_ASSERT_EQUAL(memcmp((char *)disk + off + sizeof(p1) + sizeof(p2), p3, 3), 0);
	free(disk);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "vec"), 0);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

struct inflight {
	int done, fails;
	unsigned max_out;
};

static void count_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct inflight *f = priv;
	(void)data;
	f->done++;
	if (status != 256 * 1024) {
		f->fails++;
		fprintf(stderr, "write failed: %d %s\n", status, pnfs_get_error(ctx));
	}
}

static void test_async_many_in_flight(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha();
	struct pnfs_fh *fh;
	const int n = 48;
	const size_t chunk = 256 * 1024;
	char *buf = malloc((size_t)n * chunk), *back = malloc((size_t)n * chunk);
	struct inflight f = { 0 };
	struct pnfs_stats st;

	test_fill_random(buf, (size_t)n * chunk, 77);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "async", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	/* Issued in reverse order: offsets decide placement, not completion order. */
	for (int i = n - 1; i >= 0; i--)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + (size_t)i * chunk, chunk, (uint64_t)i * chunk,
						  count_cb, &f), 0);
	CU_ASSERT_EQUAL(pnfs_outstanding(ctx), (unsigned)n);
	while (f.done < n)
		CU_ASSERT_EQUAL_FATAL(pnfs_run_once(ctx, 5000), 0);
	CU_ASSERT_EQUAL(f.fails, 0);
	CU_ASSERT_EQUAL(pnfs_outstanding(ctx), 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, (size_t)n * chunk, 0), (ssize_t)((size_t)n * chunk));
	CU_ASSERT_EQUAL(memcmp(buf, back, (size_t)n * chunk), 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_TRUE(disk_equals("async", buf, (size_t)n * chunk));
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.mds_data_written, (uint64_t)n * chunk);
	CU_ASSERT_EQUAL(st.direct_bytes_written, 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "async"), 0);
	free(buf);
	free(back);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

static void test_truncate_and_modes(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha();
	struct pnfs_fh *fh, *ro;
	struct pnfs_stat st;
	struct stat ds;
	char buf[10000];

	test_fill_random(buf, sizeof(buf), 5);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "tr", O_CREAT | O_RDWR | O_TRUNC, 0640, &fh), 0);
	CU_ASSERT_EQUAL(stat(on_disk("tr"), &ds), 0);
	CU_ASSERT_EQUAL(ds.st_mode & 0777, 0640);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL(pnfs_ftruncate(ctx, fh, 3000), 0);
	CU_ASSERT_EQUAL(pnfs_fstat(ctx, fh, &st), 0);
	CU_ASSERT_EQUAL(st.size, 3000);
	CU_ASSERT_EQUAL(stat(on_disk("tr"), &ds), 0);
	CU_ASSERT_EQUAL(ds.st_size, 3000);
	CU_ASSERT_EQUAL(pnfs_ftruncate(ctx, fh, 1 << 20), 0);
	CU_ASSERT_EQUAL(stat(on_disk("tr"), &ds), 0);
	CU_ASSERT_EQUAL(ds.st_size, 1 << 20);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);

	/* O_TRUNC on an existing file empties it; O_EXCL refuses it. */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "tr", O_WRONLY | O_TRUNC, 0, &fh), 0);
	CU_ASSERT_EQUAL(stat(on_disk("tr"), &ds), 0);
	CU_ASSERT_EQUAL(ds.st_size, 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_open(ctx, "tr", O_CREAT | O_EXCL | O_WRONLY, 0644, &fh), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "/export/tr"));

	/* Access modes are enforced by the client. */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "tr", O_RDONLY, 0, &ro), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, ro, buf, 10, 0), -EBADF);
	CU_ASSERT_EQUAL(pnfs_ftruncate(ctx, ro, 0), -EBADF);
	CU_ASSERT_EQUAL(pnfs_close(ctx, ro), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "tr"), 0);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

static void test_errors(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha(), *bad;
	struct pnfs_fh *fh;
	struct pnfs_dir *d;
	struct pnfs_stat st;

	CU_ASSERT_EQUAL(pnfs_open(ctx, "no/such/file", O_RDONLY, 0, &fh), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "NFS4ERR_NOENT (No such file or directory)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "/export/no/such/file"));
	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "e", 0755), 0);
	CU_ASSERT_EQUAL(pnfs_mkdir(ctx, "e", 0755), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "CREATE: NFS4ERR_EXIST (File exists)"));
	CU_ASSERT_EQUAL(pnfs_open(ctx, "e", O_RDONLY, 0, &fh), -EISDIR);
	CU_ASSERT_EQUAL(ct_write_file(on_disk("e/f"), "x", 1), 0);
	CU_ASSERT_EQUAL(pnfs_opendir(ctx, "e/f", &d), -ENOTDIR);
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "e/f/x", &st), -ENOTDIR);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "/"), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_rename(ctx, "e/nothing", "e/g"), -ENOENT);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "e/f"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "e"), 0);
	pnfs_umount(ctx);
	/* Calls on an unmounted context fail cleanly. */
	CU_ASSERT_EQUAL(pnfs_stat(ctx, "x", &st), -ENOTCONN);
	pnfs_context_destroy(ctx);

	/* No server: the mount tries again for the connect timeout, then fails with the reason. */
	{
		struct pnfs_opts o;
		char want[100];
		int port = test_free_port();

		pnfs_opts_init(&o);
		o.connect_timeout_ms = 300;
		CU_ASSERT_EQUAL_FATAL(pnfs_context_create(&o, &bad), 0);
		CU_ASSERT_EQUAL(pnfs_mount(bad, "127.0.0.1", port, "/"), -ECONNREFUSED);
		snprintf(want, sizeof(want), "127.0.0.1:%d: cannot connect for 0.3 s: Connection refused", port);
		CU_ASSERT_STRING_EQUAL(pnfs_get_error(bad), want);
		pnfs_context_destroy(bad);
	}
	/* A bad export path. */
	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(NULL, &bad), 0);
	CU_ASSERT_EQUAL(pnfs_mount(bad, "127.0.0.1", gsh->port, "/not-an-export"), -ENOENT);
	pnfs_context_destroy(bad);
}

/* The connection is cut while writes are in flight: the client reconnects, binds the new connection
 * to its session and replays; every byte arrives once. */
static void test_connection_loss(void)
{
	NEED_GANESHA();
	struct ct_proxy *px = ct_proxy_start(gsh->port);
	struct pnfs_context *ctx;
	struct pnfs_fh *fh;
	struct pnfs_stats st;
	const size_t len = 24u << 20;
	char *buf = malloc(len), *back = malloc(len);
	struct inflight f = { 0 };
	const size_t chunk = 256 * 1024;
	int n = (int)(len / chunk), cut = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	ctx = mount_at(ct_proxy_port(px), NULL);
	test_fill_random(buf, len, 99);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "cut", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + (size_t)i * chunk, chunk, (uint64_t)i * chunk,
						  count_cb, &f), 0);
	while (f.done < n) {
		CU_ASSERT_EQUAL_FATAL(pnfs_run_once(ctx, 5000), 0);
		if (!cut && f.done >= n / 3) {
			CU_ASSERT(ct_proxy_cut(px) >= 1);
			cut = 1;
		}
	}
	CU_ASSERT_EQUAL(f.fails, 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_TRUE(disk_equals("cut", buf, len));
	pnfs_get_stats(ctx, &st);
	CU_ASSERT(st.connects >= 2);
	CU_ASSERT(ct_proxy_accepted(px) >= 2);
	/* The session outlived the connection: no new client ID was needed. */
	CU_ASSERT_EQUAL(st.clientid_recoveries, 0);

	/* Reads across another cut. */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "cut", O_RDONLY, 0, &fh), 0);
	CU_ASSERT(ct_proxy_cut(px) >= 1);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, len, 0), (ssize_t)len);
	CU_ASSERT_EQUAL(memcmp(buf, back, len), 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "cut"), 0);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	ct_proxy_stop(px);
	free(buf);
	free(back);
}

/* The server restarts (state lost): the client gets a new client ID and session, reopens its files
 * and carries on; unstable writes that may have been lost are reported by fsync, never hidden. */
static void test_server_restart(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha();
	struct pnfs_fh *sync_fh, *unstable_fh;
	struct pnfs_stats st;
	char a[65536], b[65536], back[131072];

	test_fill_random(a, sizeof(a), 11);
	test_fill_random(b, sizeof(b), 12);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "rs-sync", O_CREAT | O_RDWR | O_TRUNC | O_SYNC, 0644, &sync_fh), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "rs-unstable", O_CREAT | O_RDWR | O_TRUNC, 0644, &unstable_fh), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, sync_fh, a, sizeof(a), 0), (ssize_t)sizeof(a));
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, unstable_fh, a, sizeof(a), 0), (ssize_t)sizeof(a));

	CU_ASSERT_EQUAL_FATAL(ct_ganesha_restart(gsh), 0);

	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, sync_fh, b, sizeof(b), sizeof(a)), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(pnfs_pread(ctx, sync_fh, back, sizeof(back), 0), (ssize_t)sizeof(back));
	CU_ASSERT_EQUAL(memcmp(back, a, sizeof(a)), 0);
	CU_ASSERT_EQUAL(memcmp(back + sizeof(a), b, sizeof(b)), 0);
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, sync_fh), 0);

	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, unstable_fh, b, sizeof(b), sizeof(a)), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, unstable_fh), -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "restarted"));
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, unstable_fh), 0); /* reported once */

	pnfs_get_stats(ctx, &st);
	CU_ASSERT(st.clientid_recoveries >= 1);
	CU_ASSERT_EQUAL(pnfs_close(ctx, sync_fh), 0);
	CU_ASSERT_EQUAL(pnfs_close(ctx, unstable_fh), 0);
	memcpy(back, a, sizeof(a));
	memcpy(back + sizeof(a), b, sizeof(b));
	CU_ASSERT_TRUE(disk_equals("rs-sync", back, sizeof(back)));
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "rs-sync"), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "rs-unstable"), 0);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* An idle client keeps its lease with SEQUENCE: after three lease periods its open still works. */
static void test_lease_renewal(void)
{
	NEED_GANESHA();
	struct pnfs_context *ctx = mount_ganesha();
	struct pnfs_fh *fh;
	struct pnfs_stats before, after;
	uint64_t until;

	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "lease", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	pnfs_get_stats(ctx, &before);
	until = ct_now_ms() + 3ull * LEASE_S * 1000;
	while (ct_now_ms() < until)
		CU_ASSERT_EQUAL_FATAL(pnfs_run_once(ctx, 200), 0);
	pnfs_get_stats(ctx, &after);
	CU_ASSERT(after.compounds - before.compounds >= 5); /* renewals, every lease/3 */
	CU_ASSERT_EQUAL(after.clientid_recoveries, 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, "abc", 3, 0), 3);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_TRUE(disk_equals("lease", "abc", 3));
	CU_ASSERT_EQUAL(pnfs_unlink(ctx, "lease"), 0);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* Two contexts are two clients: the same file opened by both, written by one, read by the other. */
static void test_two_clients(void)
{
	NEED_GANESHA();
	struct pnfs_context *c1 = mount_ganesha(), *c2 = mount_ganesha();
	struct pnfs_fh *f1, *f2;
	char a[5000], b[5000];

	test_fill_random(a, sizeof(a), 21);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(c1, "two", O_CREAT | O_RDWR | O_TRUNC, 0644, &f1), 0);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(c2, "two", O_RDWR, 0, &f2), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(c1, f1, a, 2500, 0), 2500);
	CU_ASSERT_EQUAL(pnfs_pwrite(c2, f2, a + 2500, 2500, 2500), 2500);
	CU_ASSERT_EQUAL(pnfs_fsync(c1, f1), 0);
	CU_ASSERT_EQUAL(pnfs_fsync(c2, f2), 0);
	CU_ASSERT_EQUAL(pnfs_pread(c2, f2, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	CU_ASSERT_EQUAL(pnfs_close(c1, f1), 0);
	CU_ASSERT_EQUAL(pnfs_close(c2, f2), 0);
	CU_ASSERT_EQUAL(pnfs_unlink(c1, "two"), 0);
	pnfs_umount(c1);
	pnfs_umount(c2);
	pnfs_context_destroy(c1);
	pnfs_context_destroy(c2);
}

/* The pnfs command against ganesha: copies both ways, listings, JSON, exit statuses. */
static void test_cli(void)
{
	NEED_GANESHA();
	const char *tmp = test_tmpdir("cli");
	const char *pnfs = test_bin("pnfs");
	char url[200], local[400], back[400], *out = NULL;
	void *a, *b;
	size_t al, bl;

	snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d/export", gsh->port);
	snprintf(local, sizeof(local), "%s/in.bin", tmp);
	snprintf(back, sizeof(back), "%s/out.bin", tmp);
	{
		size_t n = (5u << 20) + 77;
		char *d = malloc(n);
		test_fill_random(d, n, 31);
		CU_ASSERT_EQUAL(ct_write_file(local, d, n), 0);
		free(d);
	}
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' mkdir -p %s/c1/c2", pnfs, url), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' cp -q '%s' %s/c1/c2/", pnfs, local, url), 0);
	CU_ASSERT_EQUAL(ct_read_file(local, &a, &al), 0);
	CU_ASSERT_TRUE(disk_equals("c1/c2/in.bin", a, al));
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' get -q %s/c1/c2/in.bin '%s'", pnfs, url, back), 0);
	CU_ASSERT_EQUAL(ct_read_file(back, &b, &bl), 0);
	CU_ASSERT(al == bl && memcmp(a, b, al) == 0);
	free(b);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' cat %s/c1/c2/in.bin | cmp - '%s'", pnfs, url, local), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' cp -q %s/c1/c2/in.bin %s/c1/copy", pnfs, url, url), 0);
	CU_ASSERT_TRUE(disk_equals("c1/copy", a, al));
	free(a);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' ls --json %s/c1", pnfs, url), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"name\":\"c2\",\"type\":\"directory\""));
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"name\":\"copy\",\"type\":\"file\",\"size\":5242957"));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' ls -l %s/c1", pnfs, url), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "-rw-r--r--"));
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, " copy\n"));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' stat --json %s/c1/copy", pnfs, url), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"size\":5242957"));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' df --json %s", pnfs, url), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"layout_types\":[]")); /* ganesha VFS: no layouts */
	free(out);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' mv %s/c1/copy %s/c1/moved", pnfs, url, url), 0);
	CU_ASSERT_EQUAL(access(on_disk("c1/moved"), F_OK), 0);
	/* failures: 1; usage: 2; help: 0 */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' rm %s/c1/nothing 2>/dev/null", pnfs, url), 1);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' --io-timeout 0.5 cat pnfs://127.0.0.1:%d/x 2>/dev/null", pnfs,
				 test_free_port()), 1);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' frobnicate 2>/dev/null", pnfs), 2);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' cp onlyone 2>/dev/null", pnfs), 2);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' ls not-a-url 2>/dev/null", pnfs), 2);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' --io-timeout 0 ls %s/ >/dev/null 2>&1", pnfs, url), 2);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' ls %s/ --io-timeout 2x >/dev/null 2>&1", pnfs, url), 2);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' ls %s/ --io-timeout 2.5 >/dev/null", pnfs, url), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' --help >/dev/null", pnfs), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' rm %s/c1/moved %s/c1/c2/in.bin %s/c1/c2 %s/c1", pnfs, url, url, url, url), 0);
	CU_ASSERT_NOT_EQUAL(access(on_disk("c1"), F_OK), 0);
}

TEST_SUITE(client_ganesha, "integration/client_ganesha", suite_init, suite_clean,
	   { "namespace", test_namespace },
	   { "sizes", test_sizes },
	   { "vectored_and_holes", test_vectored_and_holes },
	   { "async_many_in_flight", test_async_many_in_flight },
	   { "truncate_and_modes", test_truncate_and_modes },
	   { "errors", test_errors },
	   { "two_clients", test_two_clients },
	   { "connection_loss", test_connection_loss },
	   { "server_restart", test_server_restart },
	   { "lease_renewal", test_lease_renewal },
	   { "cli", test_cli });
