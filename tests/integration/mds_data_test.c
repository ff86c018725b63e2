/* pnfs-mds on a real 4-LUN tgtd lab: files of 0, 1, 4095, 4096 and 10 MiB + 3 bytes written with
 * WRITE survive a restart after SIGTERM and another after kill -9, byte for byte, as do a
 * directory tree, renames, hard links, symlinks and attributes; the bytes really sit on the LUNs;
 * truncation zeroes the tail of the last block; a pool with a LUN gone refuses to start, naming it. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFILES 5
static const size_t file_sizes[NFILES] = { 0, 1, 4095, 4096, (10u << 20) + 3 };

static struct nc *client(struct test_mds *m, const char *owner)
{
	struct nc *c = nc_connect(m->port);
	int rc;

	CU_ASSERT_PTR_NOT_NULL(c);
	if (!c)
		return NULL;
	rc = nc_setup(c, owner);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc) {
		fprintf(stderr, "\n  session setup failed: %d\n", rc);
		nc_free(c);
		return NULL;
	}
	return c;
}

static void write_files(struct nc *c, struct nc_fh *dir)
{
	for (int i = 0; i < NFILES; i++) {
		char name[32];
		struct nc_fh fh;
		stateid4 sid;
		unsigned char *buf = malloc(file_sizes[i] + 1);

		snprintf(name, sizeof(name), "f%d", i);
		test_fill_random(buf, file_sizes[i], 100 + (uint64_t)i);
		CU_ASSERT_EQUAL_FATAL(nc_open(c, dir, name, 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
		/* Every stability level is exercised; the result must not depend on it. */
		CU_ASSERT_EQUAL(nc_write(c, &fh, &sid, 0, buf, file_sizes[i], (stable_how4)(i % 3)), 0);
		CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
		free(buf);
	}
}

static void check_files(struct nc *c, const char *path)
{
	struct nc_fh dir;

	CU_ASSERT_EQUAL_FATAL(nc_lookup_path(c, path, &dir), 0);
	for (int i = 0; i < NFILES; i++) {
		char name[32];
		struct nc_fh fh;
		struct nc_attrs at;
		stateid4 sid;
		size_t got = 0;
		unsigned char *want = malloc(file_sizes[i] + 1), *back = calloc(1, file_sizes[i] + 4096);

		snprintf(name, sizeof(name), "f%d", i);
		test_fill_random(want, file_sizes[i], 100 + (uint64_t)i);
		CU_ASSERT_EQUAL_FATAL(nc_open(c, &dir, name, 0, OPEN4_SHARE_ACCESS_READ, 0, &fh, &sid), 0);
		CU_ASSERT_EQUAL(nc_getattrs(c, &fh, &at), 0);
		CU_ASSERT_EQUAL(at.size, file_sizes[i]);
		CU_ASSERT_EQUAL(at.type, NF4REG);
		/* Ask for more than there is: the read stops at the end of file. */
		CU_ASSERT_EQUAL(nc_read(c, &fh, &sid, 0, back, file_sizes[i] + 4096, &got), 0);
		CU_ASSERT_EQUAL(got, file_sizes[i]);
		if (got != file_sizes[i] || memcmp(want, back, file_sizes[i]) != 0) {
			fprintf(stderr, "\n  %s/%s: %zu bytes differ from what was written\n", path, name, file_sizes[i]);
			CU_FAIL("file content changed");
		}
		CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
		free(want);
		free(back);
	}
}

/* The tree: tree/a/b/deep (file), tree/a/link -> "b/deep" (symlink), tree/moved (renamed from
 * tree/a/tobemoved), tree/hard (a second name of tree/a/b/deep), tree/a/b mode 0700,
 * tree/short truncated from 10000 to 5000 bytes. */
static void make_tree(struct nc *c, struct nc_fh *root)
{
	struct nc_fh tree, a, b, fh, deep;
	stateid4 sid;
	unsigned char buf[10000];

	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, root, "tree", 0755, &tree), 0);
	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, &tree, "a", 0755, &a), 0);
	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, &a, "b", 0755, &b), 0);
	CU_ASSERT_EQUAL(nc_open(c, &b, "deep", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &deep, &sid), 0);
	CU_ASSERT_EQUAL(nc_write(c, &deep, &sid, 0, "deep file", 9, FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(nc_close(c, &deep, &sid), 0);
	CU_ASSERT_EQUAL(nc_symlink(c, &a, "link", "b/deep"), 0);
	CU_ASSERT_EQUAL(nc_open(c, &a, "tobemoved", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_write(c, &fh, &sid, 0, "moved", 5, UNSTABLE4), 0);
	CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_rename(c, &a, "tobemoved", &tree, "moved"), 0);
	CU_ASSERT_EQUAL(nc_link(c, &deep, &tree, "hard"), 0);
	CU_ASSERT_EQUAL(nc_setattr_mode(c, &b, 0700), 0);
	test_fill_random(buf, sizeof(buf), 7);
	CU_ASSERT_EQUAL(nc_open(c, &tree, "short", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_write(c, &fh, &sid, 0, buf, sizeof(buf), FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(nc_setattr_size(c, &fh, &sid, 5000), 0);
	/* Growing it again must show zeros past 5000, not the old bytes. */
	CU_ASSERT_EQUAL(nc_setattr_size(c, &fh, &sid, 9000), 0);
	CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
}

static void check_tree(struct nc *c)
{
	struct nc_fh tree, fh, deep, hard;
	struct nc_attrs at, at2;
	stateid4 sid;
	char names[4096], target[256];
	unsigned char buf[9000], want[10000];
	unsigned n;
	size_t got;

	CU_ASSERT_EQUAL_FATAL(nc_lookup_path(c, "tree", &tree), 0);
	CU_ASSERT_EQUAL(nc_readdir_names(c, &tree, names, sizeof(names), &n), 0);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(names, "a"));
	CU_ASSERT_PTR_NOT_NULL(strstr(names, "moved"));
	CU_ASSERT_PTR_NOT_NULL(strstr(names, "hard"));
	CU_ASSERT_PTR_NOT_NULL(strstr(names, "short"));
	CU_ASSERT_EQUAL(nc_lookup_path(c, "tree/a/tobemoved", &fh), NFS4ERR_NOENT);
	CU_ASSERT_EQUAL(nc_lookup_path(c, "tree/a/b/deep", &deep), 0);
	CU_ASSERT_EQUAL(nc_lookup_path(c, "tree/hard", &hard), 0);
	CU_ASSERT_EQUAL(nc_getattrs(c, &deep, &at), 0);
	CU_ASSERT_EQUAL(nc_getattrs(c, &hard, &at2), 0);
	CU_ASSERT_EQUAL(at.fileid, at2.fileid);
	CU_ASSERT_EQUAL(at.nlink, 2);
	CU_ASSERT_EQUAL(at.size, 9);
	CU_ASSERT_EQUAL(nc_lookup_path(c, "tree/a/b", &fh), 0);
	CU_ASSERT_EQUAL(nc_getattrs(c, &fh, &at), 0);
	CU_ASSERT_EQUAL(at.mode, 0700);
	CU_ASSERT_EQUAL(at.type, NF4DIR);
	CU_ASSERT_EQUAL(nc_lookup_path(c, "tree/a/link", &fh), 0);
	CU_ASSERT_EQUAL(nc_readlink(c, &fh, target, sizeof(target)), 0);
	CU_ASSERT_STRING_EQUAL(target, "b/deep");
	CU_ASSERT_EQUAL(nc_lookup_path(c, "tree", &tree), 0);
	CU_ASSERT_EQUAL(nc_open(c, &tree, "moved", 0, OPEN4_SHARE_ACCESS_READ, 0, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_read(c, &fh, &sid, 0, buf, sizeof(buf), &got), 0);
	CU_ASSERT_EQUAL(got, 5);
	CU_ASSERT(memcmp(buf, "moved", 5) == 0);
	CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_open(c, &tree, "short", 0, OPEN4_SHARE_ACCESS_READ, 0, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_read(c, &fh, &sid, 0, buf, sizeof(buf), &got), 0);
	CU_ASSERT_EQUAL(got, 9000);
	test_fill_random(want, sizeof(want), 7);
	CU_ASSERT(memcmp(buf, want, 5000) == 0);
	for (size_t i = 5000; i < 9000; i++) {
		if (buf[i] != 0) {
			fprintf(stderr, "\n  byte %zu of the re-grown file is %u, not 0\n", i, buf[i]);
			CU_FAIL("old bytes came back after truncate and grow");
			break;
		}
	}
	CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
}

/* Some 4 KiB of the 10 MiB file must be found in one of the LUNs' backing files. */
static void check_bytes_on_luns(const struct test_lab *lab)
{
	size_t len = file_sizes[4];
	unsigned char *want = malloc(len);
	int found = 0;

	test_fill_random(want, len, 104);
	for (int l = 0; l < lab->nluns && !found; l++) {
		FILE *f = fopen(lab->files[l], "rb");
		unsigned char *disk = malloc(lab->lun_bytes);
		size_t n;
		if (!f || !disk) {
			free(disk);
			if (f)
				fclose(f);
			continue;
		}
		n = fread(disk, 1, lab->lun_bytes, f);
		fclose(f);
		found = memmem(disk, n, want + (5u << 20), 4096) != NULL;
		free(disk);
	}
	CU_ASSERT(found);
	free(want);
}

/* COMMIT's write verifier: the same within one server instance, another after a restart. */
static void commit_verifier(struct nc *c, const char *path, char verf[8])
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	struct nc_fh fh;

	CU_ASSERT_EQUAL_FATAL(nc_lookup_path(c, path, &fh), 0);
	nc_op_putfh(&ops[0], &fh);
	nc_op_simple(&ops[1], OP_COMMIT);
	CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	if (res.res.status == NFS4_OK)
		memcpy(verf, res.res.resarray.resarray_val[2].nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf, 8);
	proto_compound_res_free(&res);
}

/* The server m started again and a client of it that finds every file and the tree as written. */
static struct nc *restarted(struct test_mds *m)
{
	struct nc *c;

	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	c = client(m, "durability-client");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	check_files(c, "files");
	check_tree(c);
	return c;
}

static void test_files_survive_restarts(void)
{
	struct test_lab *lab = lab_up(4, "64M", NULL);
	struct test_mds *m;
	struct nc *c;
	struct nc_fh root, files, late;
	stateid4 sid;
	char verf1[8] = { 0 }, verf2[8] = { 0 };
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	m = tmds_new(lab, NULL, "--lease-time 15 --grace-time 5");
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	c = client(m, "durability-client");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, &root, "files", 0755, &files), 0);
	write_files(c, &files);
	make_tree(c, &root);
	check_files(c, "files");
	check_tree(c);
	commit_verifier(c, "files/f4", verf1);
	commit_verifier(c, "files/f3", verf2);
	CU_ASSERT(memcmp(verf1, verf2, 8) == 0);
	nc_free(c);

	/* A clean stop, then everything again from the pool alone. */
	rc = tmds_stop(m, SIGTERM);
	CU_ASSERT_EQUAL(rc, 0);
	check_bytes_on_luns(lab);
	c = restarted(m);
	commit_verifier(c, "files/f4", verf2);
	CU_ASSERT(memcmp(verf1, verf2, 8) != 0);
	/* More changes, and the server dies without warning right after the replies. */
	CU_ASSERT_EQUAL(nc_lookup_path(c, "files", &files), 0);
	CU_ASSERT_EQUAL(nc_open(c, &files, "late", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &late, &sid), 0);
	CU_ASSERT_EQUAL(nc_write(c, &late, &sid, 4096 * 3 + 1, "after restart", 13, UNSTABLE4), 0);
	CU_ASSERT_EQUAL(nc_rename(c, &files, "f1", &files, "f1-renamed"), 0);
	CU_ASSERT_EQUAL(nc_rename(c, &files, "f1-renamed", &files, "f1"), 0);
	CU_ASSERT_EQUAL(tmds_stop(m, SIGKILL), 128 + SIGKILL);
	nc_free(c);

	c = restarted(m);
	{
		unsigned char buf[4096 * 4 + 64];
		size_t got;
		struct nc_attrs at;
		CU_ASSERT_EQUAL(nc_lookup_path(c, "files", &files), 0);
		CU_ASSERT_EQUAL(nc_open(c, &files, "late", 0, OPEN4_SHARE_ACCESS_READ, 0, &late, &sid), 0);
		CU_ASSERT_EQUAL(nc_getattrs(c, &late, &at), 0);
		CU_ASSERT_EQUAL(at.size, 4096 * 3 + 1 + 13);
		CU_ASSERT_EQUAL(nc_read(c, &late, &sid, 0, buf, sizeof(buf), &got), 0);
		CU_ASSERT_EQUAL(got, 4096 * 3 + 1 + 13);
		for (size_t i = 0; i < 4096 * 3 + 1; i++)
			if (buf[i]) {
				CU_FAIL("the hole before the write does not read as zeros");
				break;
			}
		CU_ASSERT(memcmp(buf + 4096 * 3 + 1, "after restart", 13) == 0);
		CU_ASSERT_EQUAL(nc_close(c, &late, &sid), 0);
	}
	nc_free(c);
	CU_ASSERT_EQUAL(tmds_stop(m, SIGTERM), 0);
	tmds_free(m);
	lab_down(lab);
}

static void test_missing_lun_refuses_start(void)
{
	struct test_lab *a = lab_up(2, "16M", NULL), *b = lab_up(1, "16M", NULL);
	struct test_lab both;
	struct test_mds *m;
	char *log;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	both = *a;
	both.nluns = 3;
	snprintf(both.urls[2], sizeof(both.urls[2]), "%s", b->urls[0]);
	m = tmds_new(&both, "--concat", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(tmds_start(m), 0);
	CU_ASSERT_EQUAL(tmds_stop(m, SIGTERM), 0);
	/* The third LUN's target goes away: the server must not start, and must say which LUN. */
	lab_down(b);
	rc = tmds_start(m);
	CU_ASSERT_EQUAL(rc, 1);
	log = tmds_log(m);
	CU_ASSERT_PTR_NOT_NULL(log);
	if (log && !strstr(log, both.urls[2])) {
		fprintf(stderr, "\n  the start-up failure does not name %s:\n%s\n", both.urls[2], log);
		CU_FAIL("missing LUN not named");
	}
	free(log);
	tmds_free(m);
	lab_down(a);
}

TEST_SUITE(mds_data, "integration/mds-data", NULL, NULL,
	   { "files_survive_restarts", test_files_survive_restarts },
	   { "missing_lun_refuses_start", test_missing_lun_refuses_start });
