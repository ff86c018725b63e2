/* The namespace in the store: inode records, directory entries with stable READDIR cookies,
 * create/link/unlink/rename with POSIX rules. A directory's entries are indexed twice, by name
 * (lookup) and by cookie (iteration); (dir, cookie 0) holds the directory's next cookie. */
#include "mds/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* Inode record, little-endian: version, type, mode, nlink, uid, gid, rdev, target length, size,
 * space used, change, parent, cookie verifier, four times; then the symlink target. */
#define INODE_VERSION 1
#define INODE_REC 120

static void put_time(uint8_t *p, struct mds_time tm)
{
	le64_put(p, (uint64_t)tm.sec);
	le32_put(p + 8, tm.nsec);
}

static struct mds_time get_time(const uint8_t *p)
{
	struct mds_time tm = { (int64_t)le64_get(p), le32_get(p + 8) };
	return tm;
}

int st_decode_inode(const MDB_val *v, uint64_t fileid, struct mds_inode *ino,
		    const uint8_t **target, size_t *target_len)
{
	const uint8_t *p = v->mv_data;
	uint32_t tlen;

	if (v->mv_size < INODE_REC || p[0] != INODE_VERSION)
		return -EUCLEAN;
	tlen = le32_get(p + 28);
	if (v->mv_size != INODE_REC + (size_t)tlen || tlen > MDS_SYMLINK_MAX)
		return -EUCLEAN;
	memset(ino, 0, sizeof(*ino));
	ino->fileid = fileid;
	ino->type = (enum mds_ftype)p[1];
	if (ino->type < MDS_FT_REG || ino->type > MDS_FT_FIFO)
		return -EUCLEAN;
	ino->mode = le32_get(p + 4);
	ino->nlink = le32_get(p + 8);
	ino->uid = le32_get(p + 12);
	ino->gid = le32_get(p + 16);
	ino->rdev_major = le32_get(p + 20);
	ino->rdev_minor = le32_get(p + 24);
	ino->size = le64_get(p + 32);
	ino->space_used = le64_get(p + 40);
	ino->change = le64_get(p + 48);
	ino->parent = le64_get(p + 56);
	ino->cookieverf = le64_get(p + 64);
	ino->atime = get_time(p + 72);
	ino->mtime = get_time(p + 84);
	ino->ctime = get_time(p + 96);
	ino->crtime = get_time(p + 108);
	if (target)
		*target = p + INODE_REC;
	if (target_len)
		*target_len = tlen;
	return 0;
}

int st_inode_read(struct mds_txn *t, uint64_t fileid, struct mds_inode *ino, char *target,
		 size_t *target_len)
{
	uint8_t k[8];
	MDB_val v;
	const uint8_t *tp;
	size_t tl;
	int rc;

	be64_put(k, fileid);
	rc = st_read(t, t->st->inodes, k, 8, &v, "inode get");
	if (rc == -ENOENT)
		return st_fail(t->st, -ENOENT, "no inode %llu", (unsigned long long)fileid);
	if (rc)
		return rc;
	rc = st_decode_inode(&v, fileid, ino, &tp, &tl);
	if (rc)
		return st_fail(t->st, rc, "inode %llu: malformed record", (unsigned long long)fileid);
	if (target)
		memcpy(target, tp, tl);
	if (target_len)
		*target_len = tl;
	return 0;
}

int st_inode_write(struct mds_txn *t, const struct mds_inode *ino, const char *target,
		 size_t target_len)
{
	uint8_t k[8], *p;
	size_t n = INODE_REC + target_len;
	MDB_val key = { 8, k }, val = { n, NULL };
	int rc;

	be64_put(k, ino->fileid);
	/* MDB_RESERVE: encode straight into the page. */
	rc = mdb_put(t->txn, t->st->inodes, &key, &val, MDB_RESERVE);
	if (rc)
		return st_lmdb_err(t->st, rc, "inode put");
	p = val.mv_data;
	memset(p, 0, INODE_REC);
	p[0] = INODE_VERSION;
	p[1] = (uint8_t)ino->type;
	le32_put(p + 4, ino->mode);
	le32_put(p + 8, ino->nlink);
	le32_put(p + 12, ino->uid);
	le32_put(p + 16, ino->gid);
	le32_put(p + 20, ino->rdev_major);
	le32_put(p + 24, ino->rdev_minor);
	le32_put(p + 28, (uint32_t)target_len);
	le64_put(p + 32, ino->size);
	le64_put(p + 40, ino->space_used);
	le64_put(p + 48, ino->change);
	le64_put(p + 56, ino->parent);
	le64_put(p + 64, ino->cookieverf);
	put_time(p + 72, ino->atime);
	put_time(p + 84, ino->mtime);
	put_time(p + 96, ino->ctime);
	put_time(p + 108, ino->crtime);
	if (target_len)
		memcpy(p + INODE_REC, target, target_len);
	return 0;
}

/* Rewrite an inode's attributes, keeping its symlink target. */
static int inode_update(struct mds_txn *t, const struct mds_inode *ino)
{
	char *target = NULL;
	size_t tl = 0;
	struct mds_inode old;
	int rc;

	if (ino->type == MDS_FT_LNK) {
		target = malloc(MDS_SYMLINK_MAX);
		if (!target)
			return -ENOMEM;
		rc = st_inode_read(t, ino->fileid, &old, target, &tl);
		if (rc)
			goto out;
	}
	rc = st_inode_write(t, ino, target, tl);
out:
	free(target);
	return rc;
}

int st_dir_next_cookie(struct mds_txn *t, uint64_t dir, uint64_t *next)
{
	uint8_t k[16];
	MDB_val v;
	int rc;

	be64_put(k, dir);
	be64_put(k + 8, 0);
	rc = st_read(t, t->st->cookies, k, 16, &v, "cookie counter get");
	if (rc == -ENOENT)
		return st_fail(t->st, -EUCLEAN, "directory %llu has no cookie counter",
			       (unsigned long long)dir);
	if (rc)
		return rc;
	if (v.mv_size != 8)
		return st_fail(t->st, -EUCLEAN, "directory %llu: cookie counter malformed",
			       (unsigned long long)dir);
	*next = be64_get(v.mv_data);
	return 0;
}

int st_dir_set_next_cookie(struct mds_txn *t, uint64_t dir, uint64_t next)
{
	uint8_t k[16], v[8];

	be64_put(k, dir);
	be64_put(k + 8, 0);
	be64_put(v, next);
	return st_write(t, t->st->cookies, k, 16, v, 8, 0, "cookie counter put");
}

int mds_name_check(const char *name, size_t len)
{
	if (!name || len == 0)
		return -EINVAL;
	if (len > MDS_NAME_MAX)
		return -ENAMETOOLONG;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

/* ---- directory entries ------------------------------------------------------------------- */

struct dent {
	uint64_t cookie, child;
	enum mds_ftype type;
};

static int dirent_key(uint8_t *k, uint64_t dir, const char *name, size_t len)
{
	be64_put(k, dir);
	memcpy(k + 8, name, len);
	return (int)(8 + len);
}

static int dirent_read(struct mds_txn *t, uint64_t dir, const char *name, size_t len, struct dent *d)
{
	uint8_t k[8 + MDS_NAME_MAX];
	MDB_val v;
	int rc = st_read(t, t->st->dirents, k, (size_t)dirent_key(k, dir, name, len), &v, "dirent get");

	if (rc)
		return rc;
	if (v.mv_size != 17)
		return st_fail(t->st, -EUCLEAN, "directory %llu: entry malformed",
			       (unsigned long long)dir);
	d->cookie = be64_get(v.mv_data);
	d->child = be64_get((uint8_t *)v.mv_data + 8);
	d->type = (enum mds_ftype)((uint8_t *)v.mv_data)[16];
	return 0;
}

static int dirent_add(struct mds_txn *t, uint64_t dir, const char *name, size_t len,
		      const struct dent *d)
{
	uint8_t k[8 + MDS_NAME_MAX], v[17 + MDS_NAME_MAX], ck[16];
	int rc;

	be64_put(v, d->cookie);
	be64_put(v + 8, d->child);
	v[16] = (uint8_t)d->type;
	rc = st_write(t, t->st->dirents, k, (size_t)dirent_key(k, dir, name, len), v, 17,
		    MDB_NOOVERWRITE, "dirent put");
	if (rc == -EEXIST)
		return st_fail(t->st, -EEXIST, "directory %llu: name exists", (unsigned long long)dir);
	if (rc)
		return rc;
	be64_put(ck, dir);
	be64_put(ck + 8, d->cookie);
	be64_put(v, d->child);
	v[8] = (uint8_t)d->type;
	memcpy(v + 9, name, len);
	rc = st_write(t, t->st->cookies, ck, 16, v, 9 + len, MDB_NOOVERWRITE, "cookie put");
	if (rc == -EEXIST)
		return st_fail(t->st, -EUCLEAN, "directory %llu: cookie %llu reused",
			       (unsigned long long)dir, (unsigned long long)d->cookie);
	return rc;
}

static int dirent_del(struct mds_txn *t, uint64_t dir, const char *name, size_t len, uint64_t cookie)
{
	uint8_t k[8 + MDS_NAME_MAX], ck[16];
	int rc = st_del(t, t->st->dirents, k, (size_t)dirent_key(k, dir, name, len), "dirent del");

	if (!rc) {
		be64_put(ck, dir);
		be64_put(ck + 8, cookie);
		rc = st_del(t, t->st->cookies, ck, 16, "cookie del");
	}
	if (rc == -ENOENT)
		return st_fail(t->st, -EUCLEAN, "directory %llu: entry indexes disagree",
			       (unsigned long long)dir);
	return rc;
}

/* A fresh cookie of dir (and the counter moved on). */
static int dir_take_cookie(struct mds_txn *t, uint64_t dir, uint64_t *cookie)
{
	int rc = st_dir_next_cookie(t, dir, cookie);

	return rc ? rc : st_dir_set_next_cookie(t, dir, *cookie + 1);
}

static int dir_is_empty(struct mds_txn *t, uint64_t dir)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[16];
	int rc = mdb_cursor_open(t->txn, t->st->cookies, &c);

	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_open");
	be64_put(kb, dir);
	be64_put(kb + 8, 1);
	k.mv_size = 16;
	k.mv_data = kb;
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	mdb_cursor_close(c);
	if (rc == MDB_NOTFOUND)
		return 1;
	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_get");
	return !(k.mv_size == 16 && be64_get(k.mv_data) == dir);
}

/* 0 when ino may be removed or replaced: not a directory, or an empty one; else -ENOTEMPTY or the
 * store's error. */
static int check_removable(struct mds_txn *t, const struct mds_inode *ino)
{
	int rc;

	if (ino->type != MDS_FT_DIR)
		return 0;
	rc = dir_is_empty(t, ino->fileid);
	if (rc < 0)
		return rc;
	return rc ? 0 : -ENOTEMPTY;
}

static int get_dir(struct mds_txn *t, uint64_t dir, struct mds_inode *d)
{
	int rc = st_inode_read(t, dir, d, NULL, NULL);

	if (rc)
		return rc;
	if (d->type != MDS_FT_DIR)
		return st_fail(t->st, -ENOTDIR, "inode %llu is not a directory", (unsigned long long)dir);
	return 0;
}

static void touch(struct mds_txn *t, struct mds_inode *ino, int mtime)
{
	if (mtime)
		ino->mtime = t->now;
	ino->ctime = t->now;
	ino->change++;
}

/* ---- inodes: public ------------------------------------------------------------------------ */

int mds_inode_read(struct mds_txn *t, uint64_t fileid, struct mds_inode *out)
{
	return st_inode_read(t, fileid, out, NULL, NULL);
}

int mds_symlink_read(struct mds_txn *t, uint64_t fileid, char *buf, size_t bufsize, size_t *len)
{
	uint8_t k[8];
	MDB_val v;
	struct mds_inode ino;
	const uint8_t *tp;
	size_t tl;
	int rc;

	be64_put(k, fileid);
	rc = st_read(t, t->st->inodes, k, 8, &v, "inode get");
	if (rc)
		return rc;
	rc = st_decode_inode(&v, fileid, &ino, &tp, &tl);
	if (rc)
		return st_fail(t->st, rc, "inode %llu: malformed record", (unsigned long long)fileid);
	if (ino.type != MDS_FT_LNK)
		return -EINVAL;
	*len = tl;
	if (tl > bufsize)
		return -ERANGE;
	memcpy(buf, tp, tl);
	return 0;
}

int st_inode_remove(struct mds_txn *t, struct mds_inode *ino, unsigned flags,
		    struct mds_ranges *freed)
{
	uint8_t k[16];
	int rc = 0;

	if (ino->type == MDS_FT_REG)
		rc = st_ext_drop_all(t, ino, flags, freed);
	if (rc)
		return rc;
	be64_put(k, ino->fileid);
	rc = st_del(t, t->st->inodes, k, 8, "inode del");
	if (rc)
		return rc;
	rc = st_del(t, t->st->orphans, k, 8, "orphan del");
	if (rc && rc != -ENOENT)
		return rc;
	if (ino->type == MDS_FT_DIR) {
		be64_put(k + 8, 0);
		rc = st_del(t, t->st->cookies, k, 16, "cookie counter del");
		if (rc)
			return rc == -ENOENT ? -EUCLEAN : rc;
	}
	return st_meta_add(t, META_FILES, -1);
}

int mds_inode_setattr(struct mds_txn *t, uint64_t fileid, const struct mds_setattr *sa,
		      unsigned flags, struct mds_ranges *freed, struct mds_inode *out)
{
	struct mds_inode ino;
	struct st_ranges_mark m = st_ranges_mark(freed);
	MDB_txn *saved;
	uint64_t bs = t->st->fmt.block_bytes;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = st_inode_read(t, fileid, &ino, NULL, NULL);
	if (rc)
		goto out;
	if (sa->mask & MDS_SA_SIZE) {
		if (ino.type != MDS_FT_REG) {
			rc = ino.type == MDS_FT_DIR ? -EISDIR : -EINVAL;
			goto out;
		}
		if (sa->size < ino.size) {
			uint64_t from = (sa->size + bs - 1) / bs * bs;
			rc = mds_ext_punch(t, fileid, from, MDS_TO_END, MDS_EXT_MASK_ALL, flags, freed);
			if (rc)
				goto out;
			/* the punch changed space_used */
			rc = st_inode_read(t, fileid, &ino, NULL, NULL);
			if (rc)
				goto out;
		}
		ino.size = sa->size;
		if (!(sa->mask & (MDS_SA_MTIME | MDS_SA_MTIME_NOW)))
			ino.mtime = t->now;
	}
	if (sa->mask & MDS_SA_MODE)
		ino.mode = sa->mode & 07777;
	if (sa->mask & MDS_SA_UID)
		ino.uid = sa->uid;
	if (sa->mask & MDS_SA_GID)
		ino.gid = sa->gid;
	if (sa->mask & MDS_SA_ATIME)
		ino.atime = sa->atime;
	if (sa->mask & MDS_SA_ATIME_NOW)
		ino.atime = t->now;
	if (sa->mask & MDS_SA_MTIME)
		ino.mtime = sa->mtime;
	if (sa->mask & MDS_SA_MTIME_NOW)
		ino.mtime = t->now;
	touch(t, &ino, 0);
	rc = inode_update(t, &ino);
	if (!rc && out)
		*out = ino;
out:
	return st_ranges_rollback(freed, m, st_op_end(t, saved, rc));
}

int mds_inode_note_write(struct mds_txn *t, uint64_t fileid, uint64_t end_bytes,
			 const struct mds_time *mtime, struct mds_inode *out)
{
	struct mds_inode ino;
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = st_inode_read(t, fileid, &ino, NULL, NULL);
	if (rc)
		goto out;
	if (ino.type != MDS_FT_REG) {
		rc = ino.type == MDS_FT_DIR ? -EISDIR : -EINVAL;
		goto out;
	}
	if (end_bytes > ino.size)
		ino.size = end_bytes;
	touch(t, &ino, 1);
	if (mtime)
		ino.mtime = *mtime;
	rc = st_inode_write(t, &ino, NULL, 0);
	if (!rc && out)
		*out = ino;
out:
	return st_op_end(t, saved, rc);
}

int mds_inode_destroy(struct mds_txn *t, uint64_t fileid, unsigned flags, struct mds_ranges *freed)
{
	struct mds_inode ino;
	struct st_ranges_mark m = st_ranges_mark(freed);
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = st_inode_read(t, fileid, &ino, NULL, NULL);
	if (!rc && ino.nlink)
		rc = st_fail(t->st, -EBUSY, "inode %llu still has %u links",
			     (unsigned long long)fileid, ino.nlink);
	if (!rc)
		rc = st_inode_remove(t, &ino, flags, freed);
	return st_ranges_rollback(freed, m, st_op_end(t, saved, rc));
}

struct orphan_walk {
	int (*cb)(void *arg, uint64_t fileid);
	void *arg;
};

static int orphan_one(void *arg, const MDB_val *k, const MDB_val *v)
{
	struct orphan_walk *w = arg;

	(void)v;
	return w->cb(w->arg, be64_get(k->mv_data));
}

int mds_orphan_iter(struct mds_txn *t, int (*cb)(void *arg, uint64_t fileid), void *arg)
{
	struct orphan_walk w = { cb, arg };

	return st_walk(t, t->st->orphans, orphan_one, &w);
}

/* ---- namespace ---------------------------------------------------------------------------- */

int mds_ns_lookup(struct mds_txn *t, uint64_t dir, const char *name, size_t len, uint64_t *fileid)
{
	struct mds_inode d;
	struct dent e;
	int rc = mds_name_check(name, len);

	if (rc)
		return rc;
	rc = get_dir(t, dir, &d);
	if (rc)
		return rc;
	rc = dirent_read(t, dir, name, len, &e);
	if (!rc)
		*fileid = e.child;
	return rc;
}

static int create_args_check(const struct mds_create_args *a)
{
	if (a->type < MDS_FT_REG || a->type > MDS_FT_FIFO)
		return -EINVAL;
	if (a->type == MDS_FT_LNK) {
		if (!a->target || a->target_len == 0)
			return -EINVAL;
		if (a->target_len > MDS_SYMLINK_MAX)
			return -ENAMETOOLONG;
	}
	return 0;
}

int mds_ns_create(struct mds_txn *t, uint64_t dir, const char *name, size_t len,
		  const struct mds_create_args *a, struct mds_inode *out, struct mds_change_info *cinfo)
{
	struct mds_inode d, ino;
	struct dent e;
	uint64_t fileid;
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = mds_name_check(name, len);
	if (!rc)
		rc = create_args_check(a);
	if (!rc)
		rc = get_dir(t, dir, &d);
	if (rc)
		goto out;
	rc = dirent_read(t, dir, name, len, &e);
	if (rc != -ENOENT) {
		if (rc == 0)
			rc = -EEXIST;
		goto out;
	}
	if (a->type == MDS_FT_DIR && d.nlink >= MDS_LINK_MAX) {
		rc = -EMLINK;
		goto out;
	}
	rc = st_meta_u64(t, META_NEXT_FILEID, &fileid);
	if (!rc)
		rc = st_meta_put_u64(t, META_NEXT_FILEID, fileid + 1);
	if (rc)
		goto out;
	memset(&ino, 0, sizeof(ino));
	ino.fileid = fileid;
	ino.type = a->type;
	ino.mode = a->mode & 07777;
	ino.uid = a->uid;
	ino.gid = a->gid;
	ino.nlink = a->type == MDS_FT_DIR ? 2 : 1;
	ino.atime = ino.mtime = ino.ctime = ino.crtime = t->now;
	ino.change = 1;
	if (a->type == MDS_FT_BLK || a->type == MDS_FT_CHR) {
		ino.rdev_major = a->rdev_major;
		ino.rdev_minor = a->rdev_minor;
	}
	if (a->type == MDS_FT_LNK)
		ino.size = a->target_len;
	if (a->type == MDS_FT_DIR) {
		ino.parent = dir;
		if (getrandom(&ino.cookieverf, sizeof(ino.cookieverf), 0) != sizeof(ino.cookieverf))
			ino.cookieverf = fileid * 0x9e3779b97f4a7c15ull ^ (uint64_t)t->now.nsec;
		rc = st_dir_set_next_cookie(t, fileid, MDS_COOKIE_FIRST);
		if (rc)
			goto out;
	}
	rc = st_inode_write(t, &ino, a->type == MDS_FT_LNK ? a->target : NULL,
			  a->type == MDS_FT_LNK ? a->target_len : 0);
	if (rc)
		goto out;
	e.child = fileid;
	e.type = a->type;
	rc = dir_take_cookie(t, dir, &e.cookie);
	if (!rc)
		rc = dirent_add(t, dir, name, len, &e);
	if (rc)
		goto out;
	if (cinfo)
		cinfo->before = d.change;
	if (a->type == MDS_FT_DIR)
		d.nlink++;
	touch(t, &d, 1);
	rc = st_inode_write(t, &d, NULL, 0);
	if (!rc)
		rc = st_meta_add(t, META_FILES, 1);
	if (rc)
		goto out;
	if (cinfo)
		cinfo->after = d.change;
	if (out)
		*out = ino;
out:
	return st_op_end(t, saved, rc);
}

int mds_ns_link(struct mds_txn *t, uint64_t fileid, uint64_t dir, const char *name, size_t len,
		struct mds_change_info *cinfo)
{
	struct mds_inode d, ino;
	struct dent e;
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = mds_name_check(name, len);
	if (!rc)
		rc = get_dir(t, dir, &d);
	if (!rc)
		rc = st_inode_read(t, fileid, &ino, NULL, NULL);
	if (rc)
		goto out;
	if (ino.type == MDS_FT_DIR) {
		rc = -EISDIR;
		goto out;
	}
	if (ino.nlink == 0) {
		rc = st_fail(t->st, -ENOENT, "inode %llu was removed", (unsigned long long)fileid);
		goto out;
	}
	if (ino.nlink >= MDS_LINK_MAX) {
		rc = -EMLINK;
		goto out;
	}
	rc = dirent_read(t, dir, name, len, &e);
	if (rc != -ENOENT) {
		if (rc == 0)
			rc = -EEXIST;
		goto out;
	}
	e.child = fileid;
	e.type = ino.type;
	rc = dir_take_cookie(t, dir, &e.cookie);
	if (!rc)
		rc = dirent_add(t, dir, name, len, &e);
	if (rc)
		goto out;
	ino.nlink++;
	touch(t, &ino, 0);
	rc = inode_update(t, &ino);
	if (rc)
		goto out;
	if (cinfo)
		cinfo->before = d.change;
	touch(t, &d, 1);
	rc = st_inode_write(t, &d, NULL, 0);
	if (!rc && cinfo)
		cinfo->after = d.change;
out:
	return st_op_end(t, saved, rc);
}

/* Drop one link of a non-directory ino (already unnamed); destroy or orphan it at zero. */
static int drop_link(struct mds_txn *t, struct mds_inode *ino, unsigned flags,
		     struct mds_ranges *freed, int *destroyed, int *orphaned)
{
	uint8_t k[8];
	int rc;

	*destroyed = *orphaned = 0;
	if (ino->nlink == 0)
		return st_fail(t->st, -EUCLEAN, "inode %llu named but has no links",
			       (unsigned long long)ino->fileid);
	ino->nlink--;
	touch(t, ino, 0);
	if (ino->nlink > 0)
		return inode_update(t, ino);
	if (flags & MDS_KEEP_ORPHAN) {
		rc = inode_update(t, ino);
		if (rc)
			return rc;
		be64_put(k, ino->fileid);
		*orphaned = 1;
		return st_write(t, t->st->orphans, k, 8, "", 0, 0, "orphan put");
	}
	*destroyed = 1;
	return st_inode_remove(t, ino, flags, freed);
}

/* Remove the (already unnamed) object child from its parent dir d (in memory, written by caller). */
static int remove_object(struct mds_txn *t, struct mds_inode *d, struct mds_inode *child,
			 unsigned flags, struct mds_ranges *freed, int *destroyed, int *orphaned)
{
	if (child->type == MDS_FT_DIR) {
		if (d->nlink <= 2)
			return st_fail(t->st, -EUCLEAN, "directory %llu: nlink %u with a subdirectory",
				       (unsigned long long)d->fileid, d->nlink);
		d->nlink--;
		*destroyed = 1;
		*orphaned = 0;
		return st_inode_remove(t, child, flags, freed);
	}
	return drop_link(t, child, flags, freed, destroyed, orphaned);
}

int mds_ns_unlink(struct mds_txn *t, uint64_t dir, const char *name, size_t len, unsigned flags,
		  struct mds_ranges *freed, struct mds_unlink_result *res)
{
	struct mds_inode d, child;
	struct mds_unlink_result r;
	struct dent e;
	struct st_ranges_mark m = st_ranges_mark(freed);
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	rc = mds_name_check(name, len);
	if (!rc)
		rc = get_dir(t, dir, &d);
	if (!rc)
		rc = dirent_read(t, dir, name, len, &e);
	if (!rc)
		rc = st_inode_read(t, e.child, &child, NULL, NULL);
	if (rc)
		goto out;
	rc = check_removable(t, &child);
	if (!rc)
		rc = dirent_del(t, dir, name, len, e.cookie);
	if (rc)
		goto out;
	r.dir.before = d.change;
	rc = remove_object(t, &d, &child, flags, freed, &r.destroyed, &r.orphaned);
	if (rc)
		goto out;
	touch(t, &d, 1);
	rc = st_inode_write(t, &d, NULL, 0);
	if (rc)
		goto out;
	r.dir.after = d.change;
	r.fileid = child.fileid;
	r.nlink = child.type == MDS_FT_DIR ? 0 : child.nlink;
	if (res)
		*res = r;
out:
	return st_ranges_rollback(freed, m, st_op_end(t, saved, rc));
}

/* Whether moving directory src under dir would put it inside its own subtree. */
static int in_subtree(struct mds_txn *t, uint64_t src, uint64_t dir)
{
	struct mds_inode p;
	uint64_t at = dir;
	int rc;

	for (unsigned depth = 0; depth < 1u << 20; depth++) {
		if (at == src)
			return 1;
		if (at == t->st->root)
			return 0;
		rc = st_inode_read(t, at, &p, NULL, NULL);
		if (rc)
			return rc;
		at = p.parent;
	}
	return st_fail(t->st, -EUCLEAN, "directory %llu: parent chain does not reach the root",
		       (unsigned long long)dir);
}

int mds_ns_rename(struct mds_txn *t, uint64_t sdir, const char *sname, size_t slen, uint64_t ddir,
		  const char *dname, size_t dlen, unsigned flags, struct mds_ranges *freed,
		  struct mds_rename_result *res)
{
	struct mds_inode sd, ddbuf, *dd, src, tgt;
	struct mds_rename_result r;
	struct dent se, te, ne;
	int have_tgt;
	struct st_ranges_mark m = st_ranges_mark(freed);
	MDB_txn *saved;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	rc = mds_name_check(sname, slen);
	if (!rc)
		rc = mds_name_check(dname, dlen);
	if (!rc)
		rc = get_dir(t, sdir, &sd);
	if (rc)
		goto out;
	dd = &sd;
	if (ddir != sdir) {
		dd = &ddbuf;
		rc = get_dir(t, ddir, dd);
		if (rc)
			goto out;
	}
	rc = dirent_read(t, sdir, sname, slen, &se);
	if (!rc)
		rc = st_inode_read(t, se.child, &src, NULL, NULL);
	if (rc)
		goto out;
	rc = dirent_read(t, ddir, dname, dlen, &te);
	if (rc && rc != -ENOENT)
		goto out;
	have_tgt = rc == 0;
	rc = 0;
	r.src_dir.before = r.src_dir.after = sd.change;
	r.dst_dir.before = r.dst_dir.after = dd->change;
	r.fileid = src.fileid;
	if (have_tgt && te.child == se.child) {
		/* Two names of one object (or the same name): POSIX says do nothing. */
		if (res)
			*res = r;
		goto out;
	}
	if (src.type == MDS_FT_DIR && ddir != sdir) {
		rc = in_subtree(t, src.fileid, ddir);
		if (rc < 0)
			goto out;
		if (rc == 1) {
			rc = st_fail(t->st, -EINVAL, "directory %llu cannot move into its own subtree",
				     (unsigned long long)src.fileid);
			goto out;
		}
		if (!have_tgt && dd->nlink >= MDS_LINK_MAX) {
			rc = -EMLINK;
			goto out;
		}
	}
	if (have_tgt) {
		rc = st_inode_read(t, te.child, &tgt, NULL, NULL);
		if (rc)
			goto out;
		if (src.type == MDS_FT_DIR && tgt.type != MDS_FT_DIR) {
			rc = -ENOTDIR;
			goto out;
		}
		if (src.type != MDS_FT_DIR && tgt.type == MDS_FT_DIR) {
			rc = -EISDIR;
			goto out;
		}
		rc = check_removable(t, &tgt);
		if (!rc)
			rc = dirent_del(t, ddir, dname, dlen, te.cookie);
		if (!rc)
			rc = remove_object(t, dd, &tgt, flags, freed, &r.replaced_destroyed,
					   &r.replaced_orphaned);
		if (rc)
			goto out;
		r.replaced = tgt.fileid;
	}
	rc = dirent_del(t, sdir, sname, slen, se.cookie);
	if (rc)
		goto out;
	ne = se;
	if (ddir != sdir) {
		rc = dir_take_cookie(t, ddir, &ne.cookie);
		if (rc)
			goto out;
	}
	rc = dirent_add(t, ddir, dname, dlen, &ne);
	if (rc)
		goto out;
	if (src.type == MDS_FT_DIR && ddir != sdir) {
		sd.nlink--;
		dd->nlink++;
		src.parent = ddir;
	}
	touch(t, &src, 0);
	rc = inode_update(t, &src);
	if (rc)
		goto out;
	touch(t, &sd, 1);
	if (dd != &sd)
		touch(t, dd, 1);
	rc = st_inode_write(t, &sd, NULL, 0);
	if (!rc && dd != &sd)
		rc = st_inode_write(t, dd, NULL, 0);
	if (rc)
		goto out;
	r.src_dir.after = sd.change;
	r.dst_dir.after = dd->change;
	if (res)
		*res = r;
out:
	return st_ranges_rollback(freed, m, st_op_end(t, saved, rc));
}

int mds_dir_iter(struct mds_txn *t, uint64_t dir, uint64_t cookie,
		 int (*cb)(void *arg, const struct mds_dirent *e), void *arg)
{
	struct mds_inode d;
	uint64_t next;
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[16];
	int rc = get_dir(t, dir, &d);

	if (rc)
		return rc;
	rc = st_dir_next_cookie(t, dir, &next);
	if (rc)
		return rc;
	if (cookie == 1 || cookie == 2 || (cookie && cookie >= next))
		return st_fail(t->st, -EINVAL, "directory %llu: bad cookie %llu",
			       (unsigned long long)dir, (unsigned long long)cookie);
	rc = mdb_cursor_open(t->txn, t->st->cookies, &c);
	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_open");
	be64_put(kb, dir);
	be64_put(kb + 8, cookie + 1);
	k.mv_size = 16;
	k.mv_data = kb;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		struct mds_dirent e;
		int r;
		if (k.mv_size != 16 || be64_get(k.mv_data) != dir)
			break;
		if (v.mv_size < 10 || v.mv_size > 9 + MDS_NAME_MAX) {
			mdb_cursor_close(c);
			return st_fail(t->st, -EUCLEAN, "directory %llu: cookie entry malformed",
				       (unsigned long long)dir);
		}
		e.cookie = be64_get((uint8_t *)k.mv_data + 8);
		e.fileid = be64_get(v.mv_data);
		e.type = (enum mds_ftype)((uint8_t *)v.mv_data)[8];
		e.name = (const char *)v.mv_data + 9;
		e.name_len = v.mv_size - 9;
		r = cb(arg, &e);
		if (r) {
			mdb_cursor_close(c);
			return r;
		}
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return st_lmdb_err(t->st, rc, "mdb_cursor_get");
	return 0;
}

static int count_cb(void *arg, const struct mds_dirent *e)
{
	(void)e;
	(*(uint64_t *)arg)++;
	return 0;
}

int mds_dir_count(struct mds_txn *t, uint64_t dir, uint64_t *count)
{
	*count = 0;
	return mds_dir_iter(t, dir, 0, count_cb, count);
}
