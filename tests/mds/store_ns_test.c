/* The namespace in the store: names, READDIR cookies that survive concurrent change, the POSIX
 * rename rules, hard links, orphans kept for open files, attributes and change counters. Every test
 * ends with the full invariant check. */
#include "tests/mds/store_util.h"

#include <errno.h>
#include <stdlib.h>

#define ROOT 1

static struct mds_store *st;
static struct mds_txn *t;
static const char *sdir;

static void begin(const char *tag)
{
	st = ts_begin(tag, 32u << 20, 4096, 65536, &sdir, &t);
}

static void end(void)
{
	ts_end(&st, t);
}

static uint64_t mk(uint64_t dir, const char *name, enum mds_ftype type)
{
	struct mds_create_args a = ts_args(type, type == MDS_FT_DIR ? 0755 : 0644);
	struct mds_inode ino;
	int rc;

	if (type == MDS_FT_LNK) {
		a.target = "target";
		a.target_len = 6;
	}
	rc = mds_ns_create(t, dir, name, strlen(name), &a, &ino, NULL);
	CU_ASSERT_EQUAL(rc, 0);
	return rc ? 0 : ino.fileid;
}

static uint64_t look(uint64_t dir, const char *name)
{
	uint64_t id = 0;

	if (mds_ns_lookup(t, dir, name, strlen(name), &id))
		return 0;
	return id;
}

static struct mds_inode iget(uint64_t id)
{
	struct mds_inode ino;

	memset(&ino, 0, sizeof(ino));
	CU_ASSERT_EQUAL(mds_inode_read(t, id, &ino), 0);
	return ino;
}

static int ren(uint64_t sd, const char *sn, uint64_t dd, const char *dn)
{
	return mds_ns_rename(t, sd, sn, strlen(sn), dd, dn, strlen(dn), 0, NULL, NULL);
}

static void test_names(void)
{
	struct mds_create_args a = ts_args(MDS_FT_REG, 0644);
	char n255[MDS_NAME_MAX + 2];
	char odd[] = { 'a', (char)0xff, '\n', ' ', (char)0x80, 'z' };
	uint64_t f, id;

	begin("ns-names");
	memset(n255, 'x', sizeof(n255));
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, n255, 255, &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, n255, 256, &a, NULL, NULL), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, ".", 1, &a, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "..", 2, &a, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "a/b", 3, &a, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "a\0b", 3, &a, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "", 0, &a, NULL, NULL), -EINVAL);
	/* Any other bytes are fine, "..." too, and lookup is exact. */
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, odd, sizeof(odd), &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "...", 3, &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(t, ROOT, odd, sizeof(odd), &id), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(t, ROOT, odd, sizeof(odd) - 1, &id), -ENOENT);
	f = mk(ROOT, "file", MDS_FT_REG);
	/* Lookups in a non-directory, and a missing directory. */
	CU_ASSERT_EQUAL(mds_ns_lookup(t, f, "x", 1, &id), -ENOTDIR);
	CU_ASSERT_EQUAL(mds_ns_create(t, f, "x", 1, &a, NULL, NULL), -ENOTDIR);
	CU_ASSERT_EQUAL(mds_ns_lookup(t, 999999, "x", 1, &id), -ENOENT);
	end();
}

static void test_create_types(void)
{
	struct mds_create_args a = ts_args(MDS_FT_LNK, 0777);
	struct mds_change_info ci;
	struct mds_inode ino, root0, root1;
	char buf[MDS_SYMLINK_MAX + 1];
	size_t len;
	uint64_t d;

	begin("ns-types");
	root0 = iget(ROOT);
	a.target = "../some/where";
	a.target_len = strlen(a.target);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "sym", 3, &a, &ino, &ci), 0);
	CU_ASSERT_EQUAL(ino.type, MDS_FT_LNK);
	CU_ASSERT_EQUAL(ino.size, a.target_len);
	CU_ASSERT_EQUAL(ci.before, root0.change);
	CU_ASSERT(ci.after > ci.before);
	CU_ASSERT_EQUAL(mds_symlink_read(t, ino.fileid, buf, sizeof(buf), &len), 0);
	CU_ASSERT_EQUAL(len, a.target_len);
	CU_ASSERT_EQUAL(memcmp(buf, a.target, len), 0);
	CU_ASSERT_EQUAL(mds_symlink_read(t, ino.fileid, buf, 3, &len), -ERANGE);
	a.target_len = 0;
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "sym0", 4, &a, NULL, NULL), -EINVAL);
	memset(buf, 'p', sizeof(buf));
	a.target = buf;
	a.target_len = MDS_SYMLINK_MAX;
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "symmax", 6, &a, &ino, NULL), 0);
	/* The long target survives an attribute change. */
	{
		struct mds_setattr sa = { .mask = MDS_SA_UID, .uid = 7 };
		char back[MDS_SYMLINK_MAX];
		CU_ASSERT_EQUAL(mds_inode_setattr(t, ino.fileid, &sa, 0, NULL, NULL), 0);
		CU_ASSERT_EQUAL(mds_symlink_read(t, ino.fileid, back, sizeof(back), &len), 0);
		CU_ASSERT_EQUAL(len, MDS_SYMLINK_MAX);
		CU_ASSERT_EQUAL(memcmp(back, buf, len), 0);
	}
	a.target_len = MDS_SYMLINK_MAX + 1;
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "symbig", 6, &a, NULL, NULL), -ENAMETOOLONG);

	a = ts_args(MDS_FT_BLK, 0600);
	a.rdev_major = 8;
	a.rdev_minor = 17;
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "blk", 3, &a, &ino, NULL), 0);
	CU_ASSERT_EQUAL(iget(ino.fileid).rdev_major, 8);
	CU_ASSERT_EQUAL(iget(ino.fileid).rdev_minor, 17);
	a = ts_args(MDS_FT_CHR, 0666);
	a.rdev_major = 1;
	a.rdev_minor = 3;
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "chr", 3, &a, &ino, NULL), 0);
	CU_ASSERT_EQUAL(iget(ino.fileid).type, MDS_FT_CHR);
	mk(ROOT, "sock", MDS_FT_SOCK);
	mk(ROOT, "fifo", MDS_FT_FIFO);
	a = ts_args((enum mds_ftype)9, 0644);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "bad", 3, &a, NULL, NULL), -EINVAL);
	/* Mode keeps permission bits only. */
	a = ts_args(MDS_FT_REG, 0100644 | 07000);
	CU_ASSERT_EQUAL(mds_ns_create(t, ROOT, "suid", 4, &a, &ino, NULL), 0);
	CU_ASSERT_EQUAL(ino.mode, 07644);

	d = mk(ROOT, "dir", MDS_FT_DIR);
	root1 = iget(ROOT);
	CU_ASSERT_EQUAL(root1.nlink, 3);
	CU_ASSERT_EQUAL(iget(d).parent, ROOT);
	CU_ASSERT_EQUAL(iget(d).nlink, 2);
	CU_ASSERT(iget(d).cookieverf != iget(ROOT).cookieverf);
	end();
}

/* Iteration with entries added, removed and renamed between batches (separate transactions, as
 * READDIR calls are): nothing twice, nothing that stayed put skipped, nothing removed returned. */
struct seen {
	uint8_t *count;      /* by fileid */
	uint64_t last_cookie;
	int n, max;
	int order_ok;
};

static int seen_cb(void *arg, const struct mds_dirent *e)
{
	struct seen *s = arg;

	if (e->cookie <= s->last_cookie)
		s->order_ok = 0;
	s->last_cookie = e->cookie;
	if (e->fileid < 100000)
		s->count[e->fileid]++;
	return ++s->n >= s->max ? 1 : 0;
}

static void test_readdir_cookies_under_change(void)
{
	enum { N = 600 };
	static uint64_t ids[N + 400];
	static int state[N + 400]; /* 0 untouched, 1 removed, 2 renamed, 3 added during iteration */
	struct seen s = { 0 };
	char name[32];
	int nids = 0, batches = 0;
	uint64_t cookie = 0, dir, verf;
	unsigned seed = 12345;

	begin("ns-readdir");
	dir = mk(ROOT, "d", MDS_FT_DIR);
	verf = iget(dir).cookieverf;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "e%04d", i);
		ids[nids++] = mk(dir, name, (i % 10) ? MDS_FT_REG : MDS_FT_DIR);
	}
	CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	s.count = calloc(100000, 1);
	s.order_ok = 1;
	for (;;) {
		int r;
		/* One READDIR batch. */
		CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RDONLY, &t), 0);
		s.n = 0;
		s.max = 7;
		s.last_cookie = cookie;
		r = mds_dir_iter(t, dir, cookie, seen_cb, &s);
		CU_ASSERT(r == 0 || r == 1);
		cookie = s.last_cookie;
		CU_ASSERT_EQUAL(iget(dir).cookieverf, verf);
		mds_txn_abort(t);
		batches++;
		if (r == 0)
			break;
		/* Meanwhile: remove a few, rename a few in place, add a few. */
		CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
		for (int k = 0; k < 3; k++) {
			int i = (int)(rand_r(&seed) % (unsigned)nids);
			if (state[i] != 0)
				continue;
			if (i < N)
				snprintf(name, sizeof(name), "e%04d", i);
			else
				snprintf(name, sizeof(name), "new%04d", i);
			if (k == 0) {
				struct mds_unlink_result ur;
				CU_ASSERT_EQUAL(mds_ns_unlink(t, dir, name, strlen(name), 0, NULL, &ur), 0);
				CU_ASSERT_EQUAL(ur.fileid, ids[i]);
				state[i] = 1;
				/* Entries removed before they were seen must never show up. */
				if (!s.count[ids[i]])
					s.count[ids[i]] = 100;
			} else if (k == 1) {
				char to[32];
				snprintf(to, sizeof(to), "renamed%04d", i);
				CU_ASSERT_EQUAL(ren(dir, name, dir, to), 0);
				state[i] = 2;
			} else if (nids < N + 400) {
				snprintf(name, sizeof(name), "new%04d", nids);
				ids[nids] = mk(dir, name, MDS_FT_REG);
				state[nids++] = 3;
			}
		}
		CU_ASSERT_EQUAL(mds_txn_commit(t), 0);
	}
	CU_ASSERT(batches > 50);
	CU_ASSERT(s.order_ok);
	for (int i = 0; i < nids; i++) {
		uint8_t c = s.count[ids[i]];
		/* kept (renamed in place keeps its cookie): exactly once; removed: once before its
		 * removal or never; added meanwhile: at most once */
		int ok = (state[i] == 0 || state[i] == 2) ? c == 1 : state[i] == 1 ? (c == 1 || c == 100) : c <= 1;
		CU_ASSERT(ok);
		if (!ok)
			fprintf(stderr, "entry %d (state %d) returned %u times\n", i, state[i], c);
	}
	/* Bad cookies: the reserved ones and one never given out. */
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	s.max = 1 << 30;
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, 1, seen_cb, &s), -EINVAL);
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, 2, seen_cb, &s), -EINVAL);
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, 1ull << 40, seen_cb, &s), -EINVAL);
	/* A cookie of a removed entry still resumes. */
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, MDS_COOKIE_FIRST, seen_cb, &s), 0);
	for (int i = 1; i < N; i++) {
		if (state[i] == 0 && i % 10) {
			CU_ASSERT_EQUAL(mds_dir_iter(t, ids[i], 0, seen_cb, &s), -ENOTDIR);
			break;
		}
	}
	free(s.count);
	end();
}

static int collect_cb(void *arg, const struct mds_dirent *e)
{
	uint64_t *cookies = arg;

	cookies[cookies[0] + 1] = e->cookie;
	cookies[0]++;
	return 0;
}

static void test_cookies_stable(void)
{
	uint64_t dir, c[64] = { 0 }, c2[64] = { 0 }, d2, n;

	begin("ns-cookies");
	dir = mk(ROOT, "d", MDS_FT_DIR);
	d2 = mk(ROOT, "d2", MDS_FT_DIR);
	mk(dir, "a", MDS_FT_REG);
	mk(dir, "b", MDS_FT_REG);
	mk(dir, "c", MDS_FT_REG);
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, 0, collect_cb, c), 0);
	CU_ASSERT_EQUAL(c[0], 3);
	CU_ASSERT_EQUAL(c[1], MDS_COOKIE_FIRST);
	/* In-place rename keeps the cookie; a move across directories gets a new one there. */
	CU_ASSERT_EQUAL(ren(dir, "b", dir, "bb"), 0);
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, 0, collect_cb, c2), 0);
	CU_ASSERT_EQUAL(c2[0], 3);
	CU_ASSERT_EQUAL(memcmp(c + 1, c2 + 1, 3 * sizeof(uint64_t)), 0);
	CU_ASSERT_EQUAL(ren(dir, "bb", d2, "b"), 0);
	memset(c2, 0, sizeof(c2));
	CU_ASSERT_EQUAL(mds_dir_iter(t, d2, 0, collect_cb, c2), 0);
	CU_ASSERT_EQUAL(c2[0], 1);
	CU_ASSERT_EQUAL(c2[1], MDS_COOKIE_FIRST);
	/* Removal never gives a cookie back. */
	CU_ASSERT_EQUAL(mds_ns_unlink(t, dir, "c", 1, 0, NULL, NULL), 0);
	mk(dir, "c", MDS_FT_REG);
	memset(c2, 0, sizeof(c2));
	CU_ASSERT_EQUAL(mds_dir_iter(t, dir, 0, collect_cb, c2), 0);
	CU_ASSERT_EQUAL(c2[0], 2);
	CU_ASSERT_EQUAL(c2[2], MDS_COOKIE_FIRST + 3);
	CU_ASSERT_EQUAL(mds_dir_count(t, dir, &n), 0);
	CU_ASSERT_EQUAL(n, 2);
	end();
}

static void test_rename_rules(void)
{
	struct mds_rename_result rr;
	uint64_t a, b, f1, f2, e1, e2, sub, deep, x;
	struct mds_inode ia;

	begin("ns-rename");
	a = mk(ROOT, "a", MDS_FT_DIR);
	b = mk(ROOT, "b", MDS_FT_DIR);
	f1 = mk(a, "f1", MDS_FT_REG);
	f2 = mk(a, "f2", MDS_FT_REG);
	e1 = mk(a, "e1", MDS_FT_DIR);
	e2 = mk(a, "e2", MDS_FT_DIR);
	sub = mk(a, "sub", MDS_FT_DIR);
	deep = mk(sub, "deep", MDS_FT_DIR);
	mk(sub, "file", MDS_FT_REG);

	/* Missing source; bad names. */
	CU_ASSERT_EQUAL(ren(a, "nope", a, "x"), -ENOENT);
	CU_ASSERT_EQUAL(ren(a, "f1", a, ".."), -EINVAL);
	CU_ASSERT_EQUAL(ren(a, ".", a, "x"), -EINVAL);
	CU_ASSERT_EQUAL(ren(f1, "x", a, "y"), -ENOTDIR);
	/* Type rules. */
	CU_ASSERT_EQUAL(ren(a, "f1", a, "e1"), -EISDIR);
	CU_ASSERT_EQUAL(ren(a, "e1", a, "f1"), -ENOTDIR);
	CU_ASSERT_EQUAL(ren(a, "e1", a, "sub"), -ENOTEMPTY);
	CU_ASSERT_EQUAL(look(a, "f1"), f1);
	CU_ASSERT_EQUAL(look(a, "sub"), sub);
	/* Not into its own subtree, nor into itself. */
	CU_ASSERT_EQUAL(ren(a, "sub", deep, "x"), -EINVAL);
	CU_ASSERT_EQUAL(ren(a, "sub", sub, "x"), -EINVAL);
	CU_ASSERT_EQUAL(ren(ROOT, "a", deep, "x"), -EINVAL);
	CU_ASSERT_EQUAL(iget(sub).parent, a);

	/* Directory over an empty directory: the target goes, link counts follow. */
	ia = iget(a);
	CU_ASSERT_EQUAL(ia.nlink, 5);
	CU_ASSERT_EQUAL(mds_ns_rename(t, a, "e1", 2, a, "e2", 2, 0, NULL, &rr), 0);
	CU_ASSERT_EQUAL(rr.replaced, e2);
	CU_ASSERT(rr.replaced_destroyed);
	CU_ASSERT_EQUAL(look(a, "e2"), e1);
	CU_ASSERT_EQUAL(look(a, "e1"), 0);
	CU_ASSERT_EQUAL(mds_inode_read(t, e2, &ia), -ENOENT);
	CU_ASSERT_EQUAL(iget(a).nlink, 4);
	CU_ASSERT_EQUAL(rr.src_dir.before, rr.dst_dir.before);
	CU_ASSERT(rr.src_dir.after > rr.src_dir.before);

	/* File over file. */
	CU_ASSERT_EQUAL(mds_ns_rename(t, a, "f1", 2, a, "f2", 2, 0, NULL, &rr), 0);
	CU_ASSERT_EQUAL(rr.replaced, f2);
	CU_ASSERT(rr.replaced_destroyed);
	CU_ASSERT_EQUAL(look(a, "f2"), f1);

	/* Across directories: a directory's parent and both link counts move. */
	CU_ASSERT_EQUAL(mds_ns_rename(t, a, "sub", 3, b, "moved", 5, 0, NULL, &rr), 0);
	CU_ASSERT_EQUAL(rr.fileid, sub);
	CU_ASSERT_EQUAL(iget(sub).parent, b);
	CU_ASSERT_EQUAL(iget(a).nlink, 3);
	CU_ASSERT_EQUAL(iget(b).nlink, 3);
	CU_ASSERT(rr.dst_dir.after > rr.dst_dir.before);
	CU_ASSERT_EQUAL(look(iget(sub).fileid, "deep"), deep);

	/* Two names of one file: nothing happens; the same name: nothing happens. */
	CU_ASSERT_EQUAL(mds_ns_link(t, f1, b, "hard", 4, NULL), 0);
	CU_ASSERT_EQUAL(iget(f1).nlink, 2);
	x = iget(a).change;
	CU_ASSERT_EQUAL(mds_ns_rename(t, a, "f2", 2, b, "hard", 4, 0, NULL, &rr), 0);
	CU_ASSERT_EQUAL(rr.replaced, 0);
	CU_ASSERT_EQUAL(rr.src_dir.before, rr.src_dir.after);
	CU_ASSERT_EQUAL(look(a, "f2"), f1);
	CU_ASSERT_EQUAL(look(b, "hard"), f1);
	CU_ASSERT_EQUAL(iget(a).change, x);
	CU_ASSERT_EQUAL(ren(a, "f2", a, "f2"), 0);
	CU_ASSERT_EQUAL(look(a, "f2"), f1);

	/* Over a file with another link: that file lives on with one link fewer. */
	x = mk(a, "victim", MDS_FT_REG);
	CU_ASSERT_EQUAL(mds_ns_link(t, x, b, "victim-too", 10, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(t, b, "hard", 4, a, "victim", 6, 0, NULL, &rr), 0);
	CU_ASSERT_EQUAL(rr.replaced, x);
	CU_ASSERT(!rr.replaced_destroyed);
	CU_ASSERT_EQUAL(iget(x).nlink, 1);
	CU_ASSERT_EQUAL(look(b, "victim-too"), x);
	CU_ASSERT_EQUAL(iget(f1).nlink, 2);
	end();
}

static int orphan_cb(void *arg, uint64_t fileid)
{
	uint64_t *v = arg;

	v[++v[0]] = fileid;
	return v[0] >= 7 ? 1 : 0;
}

static void test_links_unlink_orphans(void)
{
	struct mds_unlink_result ur;
	struct mds_ranges freed = { 0 };
	struct mds_store_stats s;
	uint64_t d, f, g, sub, bytes = 0, orphans[8] = { 0 };

	begin("ns-links");
	d = mk(ROOT, "d", MDS_FT_DIR);
	f = mk(d, "f", MDS_FT_REG);
	g = mk(d, "g", MDS_FT_REG);
	sub = mk(d, "sub", MDS_FT_DIR);
	mk(sub, "inner", MDS_FT_REG);
	CU_ASSERT_EQUAL(mds_ns_link(t, sub, ROOT, "dirlink", 7, NULL), -EISDIR);
	CU_ASSERT_EQUAL(mds_ns_link(t, f, d, "f", 1, NULL), -EEXIST);
	CU_ASSERT_EQUAL(mds_ns_link(t, f, ROOT, "f-too", 5, NULL), 0);
	CU_ASSERT_EQUAL(iget(f).nlink, 2);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, d, "sub", 3, 0, NULL, NULL), -ENOTEMPTY);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, d, "none", 4, 0, NULL, NULL), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, sub, "inner", 5, 0, NULL, &ur), 0);
	CU_ASSERT(ur.destroyed);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, d, "sub", 3, 0, NULL, &ur), 0);
	CU_ASSERT(ur.destroyed);
	CU_ASSERT_EQUAL(iget(d).nlink, 2);
	CU_ASSERT_EQUAL(mds_inode_read(t, sub, &(struct mds_inode){ 0 }), -ENOENT);

	/* A file with blocks loses its first link and stays; its last link goes with KEEP_ORPHAN and
	 * it stays (an open file), blocks and all, until destroyed. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 0, 1 << 20, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, d, "f", 1, 0, NULL, &ur), 0);
	CU_ASSERT(!ur.destroyed);
	CU_ASSERT_EQUAL(ur.nlink, 1);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, ROOT, "f-too", 5, MDS_KEEP_ORPHAN, NULL, &ur), 0);
	CU_ASSERT(ur.orphaned);
	CU_ASSERT(!ur.destroyed);
	CU_ASSERT_EQUAL(iget(f).nlink, 0);
	CU_ASSERT_EQUAL(iget(f).space_used, 1 << 20);
	CU_ASSERT_EQUAL(mds_ns_link(t, f, ROOT, "resurrect", 9, NULL), -ENOENT);
	/* A file without KEEP_ORPHAN goes at once, its blocks back in free space. */
	CU_ASSERT_EQUAL(mds_ext_alloc(t, g, 0, 65536, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(t, d, "g", 1, 0, &freed, &ur), 0);
	CU_ASSERT(ur.destroyed);
	CU_ASSERT_EQUAL(freed.n, 1);
	CU_ASSERT_EQUAL(freed.v[0].len, 65536);
	mds_ranges_free(&freed);
	end();

	/* After a restart the orphan is still listed; the server destroys it, parking its blocks,
	 * and releases them at the end of grace. */
	CU_ASSERT_EQUAL_FATAL(mds_store_open(sdir, NULL, &st), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	CU_ASSERT_EQUAL(mds_orphan_iter(t, orphan_cb, orphans), 0);
	CU_ASSERT_EQUAL(orphans[0], 1);
	CU_ASSERT_EQUAL(orphans[1], f);
	CU_ASSERT_EQUAL(mds_inode_destroy(t, d, 0, NULL), -EBUSY);
	CU_ASSERT_EQUAL(mds_inode_destroy(t, f, MDS_FREE_PENDING, &freed), 0);
	CU_ASSERT_EQUAL(freed.n, 1);
	CU_ASSERT_EQUAL(freed.v[0].len, 1 << 20);
	CU_ASSERT_EQUAL(mds_inode_destroy(t, f, 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.pending_bytes, 1 << 20);
	CU_ASSERT_EQUAL(s.used_bytes, 0);
	CU_ASSERT_EQUAL(s.files, 2);
	CU_ASSERT_EQUAL(mds_pending_release_file(t, f, &bytes), 0);
	CU_ASSERT_EQUAL(bytes, 1 << 20);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.free_bytes, s.volume_bytes);
	CU_ASSERT_EQUAL(s.free_extents, 1);
	orphans[0] = 0;
	CU_ASSERT_EQUAL(mds_orphan_iter(t, orphan_cb, orphans), 0);
	CU_ASSERT_EQUAL(orphans[0], 0);
	mds_ranges_free(&freed);
	end();
}

static void test_attrs_and_change(void)
{
	struct mds_setattr sa = { 0 };
	struct mds_inode a, b;
	struct mds_ranges freed = { 0 };
	struct mds_time when = { 1700000000, 123456789 }, later = { 1700000100, 5 };
	uint64_t f, d;

	begin("ns-attrs");
	mds_txn_set_now(t, when);
	f = mk(ROOT, "f", MDS_FT_REG);
	d = mk(ROOT, "d", MDS_FT_DIR);
	a = iget(f);
	CU_ASSERT_EQUAL(a.crtime.sec, when.sec);
	CU_ASSERT_EQUAL(a.mtime.nsec, when.nsec);
	CU_ASSERT_EQUAL(a.uid, 1000);

	mds_txn_set_now(t, later);
	sa.mask = MDS_SA_MODE | MDS_SA_UID | MDS_SA_GID | MDS_SA_ATIME | MDS_SA_MTIME_NOW;
	sa.mode = 0600;
	sa.uid = 1;
	sa.gid = 2;
	sa.atime = (struct mds_time){ 42, 7 };
	CU_ASSERT_EQUAL(mds_inode_setattr(t, f, &sa, 0, NULL, &b), 0);
	CU_ASSERT_EQUAL(b.mode, 0600);
	CU_ASSERT_EQUAL(b.uid, 1);
	CU_ASSERT_EQUAL(b.gid, 2);
	CU_ASSERT_EQUAL(b.atime.sec, 42);
	CU_ASSERT_EQUAL(b.atime.nsec, 7);
	CU_ASSERT_EQUAL(b.mtime.sec, later.sec);
	CU_ASSERT_EQUAL(b.ctime.sec, later.sec);
	CU_ASSERT_EQUAL(b.crtime.sec, when.sec);
	CU_ASSERT(b.change > a.change);

	/* Size: regular files only; shrinking frees the blocks past the new end (rounded up). */
	sa.mask = MDS_SA_SIZE;
	sa.size = 10;
	CU_ASSERT_EQUAL(mds_inode_setattr(t, d, &sa, 0, NULL, NULL), -EISDIR);
	CU_ASSERT_EQUAL(mds_ext_alloc(t, f, 0, 10 * 4096, NULL), 0);
	CU_ASSERT_EQUAL(mds_inode_note_write(t, f, 10 * 4096 - 5, NULL, &a), 0);
	CU_ASSERT_EQUAL(a.size, 10 * 4096 - 5);
	CU_ASSERT_EQUAL(mds_inode_note_write(t, f, 100, NULL, &a), 0);
	CU_ASSERT_EQUAL(a.size, 10 * 4096 - 5); /* never shrinks */
	sa.size = 4096 + 1;
	CU_ASSERT_EQUAL(mds_inode_setattr(t, f, &sa, 0, &freed, &b), 0);
	CU_ASSERT_EQUAL(b.size, 4097);
	CU_ASSERT_EQUAL(b.space_used, 2 * 4096);
	CU_ASSERT_EQUAL(freed.n, 1);
	CU_ASSERT_EQUAL(freed.v[0].len, 8 * 4096);
	/* Growing allocates nothing (holes read as zeros). */
	sa.size = 1 << 30;
	CU_ASSERT_EQUAL(mds_inode_setattr(t, f, &sa, 0, &freed, &b), 0);
	CU_ASSERT_EQUAL(b.space_used, 2 * 4096);
	sa.size = 0;
	CU_ASSERT_EQUAL(mds_inode_setattr(t, f, &sa, 0, &freed, &b), 0);
	CU_ASSERT_EQUAL(b.space_used, 0);
	CU_ASSERT_EQUAL(freed.n, 2);
	/* LOOKUPP data: parents; the root is its own. */
	CU_ASSERT_EQUAL(iget(d).parent, ROOT);
	CU_ASSERT_EQUAL(iget(ROOT).parent, ROOT);
	mds_ranges_free(&freed);
	end();
}

TEST_SUITE(store_ns, "mds/store_ns", NULL, NULL,
	   { "names", test_names },
	   { "create_types", test_create_types },
	   { "readdir_cookies_under_change", test_readdir_cookies_under_change },
	   { "cookies_stable", test_cookies_stable },
	   { "rename_rules", test_rename_rules },
	   { "links_unlink_orphans", test_links_unlink_orphans },
	   { "attrs_and_change", test_attrs_and_change });
