/* The store's environment: creating and opening the LMDB environment of a pool, transactions,
 * error mapping, the meta record (identity, geometry, counters) and statistics.
 * Every other store file works inside a struct mds_txn begun here. */
#include "mds/store_int.h"

#include "proto/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STORE_MAX_DBS 16

int st_fail(struct mds_store *st, int err, const char *fmt, ...)
{
	va_list ap;

	if (st) {
		va_start(ap, fmt);
		vsnprintf(st->err, sizeof(st->err), fmt, ap);
		va_end(ap);
	}
	return err;
}

static int lmdb_to_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
		return -ENOSPC;
	case MDB_DBS_FULL:
		return -EMFILE;
	case MDB_READERS_FULL:
	case MDB_TLS_FULL:
	case MDB_MAP_RESIZED:
		return -EAGAIN;
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
		return -EPROTO;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_CURSOR_FULL:
	case MDB_PAGE_FULL:
		return -EUCLEAN;
	case MDB_PANIC:
		return -EIO;
	case MDB_BAD_RSLOT:
	case MDB_BAD_TXN:
	case MDB_BAD_VALSIZE:
	case MDB_BAD_DBI:
		return -EINVAL;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

int st_lmdb_err(struct mds_store *st, int rc, const char *what)
{
	int err = lmdb_to_errno(rc);

	if (rc != MDB_SUCCESS && st)
		snprintf(st->err, sizeof(st->err), "%s: %s", what, mdb_strerror(rc));
	return err;
}

const char *mds_store_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENOENT:
		return "no such object in the store";
	case -EEXIST:
		return "already exists";
	case -ENOTDIR:
		return "not a directory";
	case -EISDIR:
		return "is a directory";
	case -ENOTEMPTY:
		return "directory not empty";
	case -EINVAL:
		return "invalid argument (name, cookie or range)";
	case -ENAMETOOLONG:
		return "name or symlink target too long";
	case -ENOSPC:
		return "no space (volume full, or metadata store map full)";
	case -ENODATA:
		return "range not allocated";
	case -EROFS:
		return "store or transaction is read-only";
	case -EUCLEAN:
		return "metadata store is corrupted";
	case -EPROTO:
		return "unknown metadata store format";
	case -EMLINK:
		return "too many links";
	case -EBUSY:
		return "object still in use";
	case -ERANGE:
		return "buffer too small";
	case -EAGAIN:
		return "store busy (readers full or map resized), try again";
	case -EIO:
		return "I/O error in the metadata store";
	case -ENOMEM:
		return "out of memory";
	default:
		return err < 0 ? strerror(-err) : "unknown error";
	}
}

const char *mds_store_errstr(const struct mds_store *st)
{
	return st ? st->err : "";
}

const struct mds_store_format *mds_store_format(const struct mds_store *st)
{
	return &st->fmt;
}

/* ---- plain accessors -------------------------------------------------------------------- */

int st_read(struct mds_txn *t, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v, const char *what)
{
	MDB_val key = { klen, (void *)k };
	int rc = mdb_get(t->txn, dbi, &key, v);

	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	return rc ? st_lmdb_err(t->st, rc, what) : 0;
}

int st_write(struct mds_txn *t, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen,
	   unsigned flags, const char *what)
{
	MDB_val key = { klen, (void *)k }, val = { vlen, (void *)v };
	int rc = mdb_put(t->txn, dbi, &key, &val, flags);

	return rc ? st_lmdb_err(t->st, rc, what) : 0;
}

int st_del(struct mds_txn *t, MDB_dbi dbi, const void *k, size_t klen, const char *what)
{
	MDB_val key = { klen, (void *)k };
	int rc = mdb_del(t->txn, dbi, &key, NULL);

	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	return rc ? st_lmdb_err(t->st, rc, what) : 0;
}

int st_meta_u64(struct mds_txn *t, const char *key, uint64_t *v)
{
	MDB_val val;
	int rc = st_read(t, t->st->meta, key, strlen(key), &val, "meta get");

	if (rc == -ENOENT)
		return st_fail(t->st, -EUCLEAN, "meta: key %s missing", key);
	if (rc)
		return rc;
	if (val.mv_size != 8)
		return st_fail(t->st, -EUCLEAN, "meta: key %s has %zu bytes", key, val.mv_size);
	*v = be64_get(val.mv_data);
	return 0;
}

int st_meta_put_u64(struct mds_txn *t, const char *key, uint64_t v)
{
	uint8_t b[8];

	be64_put(b, v);
	return st_write(t, t->st->meta, key, strlen(key), b, 8, 0, "meta put");
}

int st_meta_add(struct mds_txn *t, const char *key, int64_t delta)
{
	uint64_t v;
	int rc = st_meta_u64(t, key, &v);

	if (rc)
		return rc;
	if (delta < 0 && v < (uint64_t)-delta)
		return st_fail(t->st, -EUCLEAN, "meta: counter %s would go below zero (%llu %lld)",
			       key, (unsigned long long)v, (long long)delta);
	return st_meta_put_u64(t, key, v + (uint64_t)delta);
}

int st_ranges_add(struct mds_ranges *r, uint64_t vol_off, uint64_t len)
{
	if (!r)
		return 0;
	if (r->n && r->v[r->n - 1].vol_off + r->v[r->n - 1].len == vol_off) {
		r->v[r->n - 1].len += len;
		return 0;
	}
	if (proto_grow(&r->v, r->n, &r->cap, sizeof(*r->v), 16))
		return -ENOMEM;
	r->v[r->n].vol_off = vol_off;
	r->v[r->n].len = len;
	r->n++;
	return 0;
}

void mds_ranges_free(struct mds_ranges *r)
{
	if (!r)
		return;
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
}

/* ---- transactions ----------------------------------------------------------------------- */

int mds_txn_begin(struct mds_store *st, unsigned flags, struct mds_txn **out)
{
	struct mds_txn *t;
	struct timespec ts;
	int rdonly = (flags & MDS_TXN_RDONLY) || st->rdonly;
	int rc;

	if (!(flags & MDS_TXN_RDONLY) && st->rdonly)
		return st_fail(st, -EROFS, "store opened read-only");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->st = st;
	t->rdonly = rdonly;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->now.sec = ts.tv_sec;
	t->now.nsec = (uint32_t)ts.tv_nsec;
	rc = mdb_txn_begin(st->env, NULL, rdonly ? MDB_RDONLY : 0, &t->txn);
	if (rc) {
		free(t);
		return st_lmdb_err(st, rc, "mdb_txn_begin");
	}
	*out = t;
	return 0;
}

int mds_txn_begin_nested(struct mds_txn *parent, struct mds_txn **out)
{
	struct mds_txn *t;
	struct timespec ts;
	int rc;

	if (parent->rdonly)
		return st_fail(parent->st, -EROFS, "nested transaction in a read-only one");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->st = parent->st;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->now.sec = ts.tv_sec;
	t->now.nsec = (uint32_t)ts.tv_nsec;
	rc = mdb_txn_begin(parent->st->env, parent->txn, 0, &t->txn);
	if (rc) {
		free(t);
		return st_lmdb_err(parent->st, rc, "mdb_txn_begin (nested)");
	}
	*out = t;
	return 0;
}

int st_walk(struct mds_txn *t, MDB_dbi dbi, int (*fn)(void *arg, const MDB_val *k, const MDB_val *v), void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc = mdb_cursor_open(t->txn, dbi, &c);

	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_cursor_open");
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		int r = fn(arg, &k, &v);
		if (r) {
			mdb_cursor_close(c);
			return r;
		}
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : st_lmdb_err(t->st, rc, "mdb_cursor_get");
}

int mds_txn_run(struct mds_store *st, int (*fn)(struct mds_txn *t, void *arg), void *arg)
{
	struct mds_txn *t;
	int rc = mds_txn_begin(st, MDS_TXN_RW, &t);

	if (rc)
		return rc;
	rc = fn(t, arg);
	if (rc) {
		mds_txn_abort(t);
		return rc;
	}
	return mds_txn_commit(t);
}

int mds_txn_commit(struct mds_txn *t)
{
	int rc = mdb_txn_commit(t->txn);
	int err = rc ? st_lmdb_err(t->st, rc, "mdb_txn_commit") : 0;

	free(t);
	return err;
}

int mds_txn_commit_unsynced_meta(struct mds_txn *t)
{
	struct mds_store *st = t->st;
	int rc = mdb_env_set_flags(st->env, MDB_NOMETASYNC, 1);

	if (rc) {
		mdb_txn_abort(t->txn);
		free(t);
		return st_lmdb_err(st, rc, "mdb_env_set_flags");
	}
	rc = mds_txn_commit(t);
	mdb_env_set_flags(st->env, MDB_NOMETASYNC, 0);
	return rc;
}

uint64_t mds_store_last_txnid(struct mds_store *st)
{
	MDB_envinfo info;

	if (mdb_env_info(st->env, &info))
		return 0;
	return (uint64_t)info.me_last_txnid;
}

int mds_store_sync(struct mds_store *st)
{
	int rc = mdb_env_sync(st->env, 1);

	return rc ? st_lmdb_err(st, rc, "mdb_env_sync") : 0;
}

void mds_txn_abort(struct mds_txn *t)
{
	if (!t)
		return;
	mdb_txn_abort(t->txn);
	free(t);
}

struct mds_store *mds_txn_store(const struct mds_txn *t)
{
	return t->st;
}

struct mds_time mds_txn_now(const struct mds_txn *t)
{
	return t->now;
}

void mds_txn_set_now(struct mds_txn *t, struct mds_time now)
{
	t->now = now;
}

int st_op_begin(struct mds_txn *t, MDB_txn **saved)
{
	MDB_txn *child;
	int rc;

	if (t->rdonly)
		return st_fail(t->st, -EROFS, "change in a read-only transaction");
	rc = mdb_txn_begin(t->st->env, t->txn, 0, &child);
	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_txn_begin (nested)");
	*saved = t->txn;
	t->txn = child;
	return 0;
}

int st_op_end(struct mds_txn *t, MDB_txn *saved, int rc)
{
	MDB_txn *child = t->txn;

	t->txn = saved;
	if (rc) {
		mdb_txn_abort(child);
		return rc;
	}
	rc = mdb_txn_commit(child);
	return rc ? st_lmdb_err(t->st, rc, "mdb_txn_commit (nested)") : 0;
}

/* ---- environment -------------------------------------------------------------------------- */

static int open_dbis(struct mds_store *st, int create)
{
	MDB_txn *txn;
	unsigned f = create ? MDB_CREATE : 0;
	struct {
		const char *name;
		MDB_dbi *dbi;
	} dbs[] = {
		{ "meta", &st->meta },         { "inodes", &st->inodes },
		{ "dirents", &st->dirents },   { "cookies", &st->cookies },
		{ "extents", &st->extents },   { "free_off", &st->free_off },
		{ "free_len", &st->free_len }, { "pending", &st->pending },
		{ "clients", &st->clients },   { "orphans", &st->orphans },
	};
	int rc;

	rc = mdb_txn_begin(st->env, NULL, st->rdonly ? MDB_RDONLY : 0, &txn);
	if (rc)
		return st_lmdb_err(st, rc, "mdb_txn_begin");
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		rc = mdb_dbi_open(txn, dbs[i].name, f, dbs[i].dbi);
		if (rc) {
			mdb_txn_abort(txn);
			if (rc == MDB_NOTFOUND)
				return st_fail(st, -EPROTO, "store has no database '%s'", dbs[i].name);
			return st_lmdb_err(st, rc, "mdb_dbi_open");
		}
	}
	rc = mdb_txn_commit(txn);
	return rc ? st_lmdb_err(st, rc, "mdb_txn_commit") : 0;
}

static int env_open(const char *dir, const struct mds_store_opts *opts, int create,
		    struct mds_store **out)
{
	struct mds_store *st;
	char path[4096];
	struct stat sb;
	int rdonly = opts && opts->rdonly;
	int rc;

	*out = NULL;
	if (stat(dir, &sb) != 0)
		return -errno;
	if (!S_ISDIR(sb.st_mode))
		return -ENOTDIR;
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (create && stat(path, &sb) == 0)
		return -EEXIST;
	if (!create && stat(path, &sb) != 0)
		return -ENOENT;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->rdonly = rdonly;
	rc = mdb_env_create(&st->env);
	if (rc) {
		rc = st_lmdb_err(st, rc, "mdb_env_create");
		goto fail_free;
	}
	mdb_env_set_maxdbs(st->env, STORE_MAX_DBS);
	if (!rdonly) {
		uint64_t map = opts && opts->map_bytes ? opts->map_bytes : MDS_STORE_DEFAULT_MAP_BYTES;
		rc = mdb_env_set_mapsize(st->env, (size_t)map);
		if (rc) {
			rc = st_lmdb_err(st, rc, "mdb_env_set_mapsize");
			goto fail_env;
		}
	}
	rc = mdb_env_open(st->env, dir, MDB_NOTLS | (rdonly ? MDB_RDONLY : 0), 0644);
	if (rc) {
		rc = st_lmdb_err(st, rc, "mdb_env_open");
		goto fail_env;
	}
	rc = open_dbis(st, create);
	if (rc)
		goto fail_env;
	*out = st;
	return 0;
fail_env:
	mdb_env_close(st->env);
fail_free:
	free(st);
	return rc;
}

void mds_store_close(struct mds_store *st)
{
	if (!st)
		return;
	mdb_env_close(st->env);
	free(st);
}

static int fmt_check(const struct mds_store_format *f)
{
	uint64_t sum = 0;

	if (f->block_bytes < 512 || (f->block_bytes & (f->block_bytes - 1)))
		return -EINVAL;
	if (f->volume_type != MDS_VOL_STRIPE && f->volume_type != MDS_VOL_CONCAT)
		return -EINVAL;
	if (f->stripe_unit_bytes && (f->stripe_unit_bytes % f->block_bytes))
		return -EINVAL;
	if (f->volume_type == MDS_VOL_STRIPE && !f->stripe_unit_bytes)
		return -EINVAL;
	if (!f->volume_bytes || f->volume_bytes % f->block_bytes)
		return -EINVAL;
	if (!f->nluns || f->nluns > MDS_MAX_LUNS)
		return -EINVAL;
	for (uint32_t i = 0; i < f->nluns; i++)
		sum += f->luns[i].data_bytes;
	if (sum != f->volume_bytes)
		return -EINVAL;
	return 0;
}

/* fn of mds_txn_run: arg is the struct mds_store_format. */
static int write_format(struct mds_txn *t, void *arg)
{
	const struct mds_store_format *f = arg;
	/* a new store: the root (fileid 1) is its one file, fileids go on from 2, no space counted yet */
	static const struct {
		const char *key;
		uint64_t value;
	} counters[] = {
		{ META_ROOT, 1 }, { META_NEXT_FILEID, 2 }, { META_BOOT, 0 }, { META_FREE, 0 },
		{ META_USED, 0 }, { META_PENDING, 0 }, { META_FILES, 1 },
	};
	struct mds_store *st = t->st;
	struct mds_inode root;
	uint8_t lun[24];
	char key[32];
	int rc;

	rc = st_write(t, st->meta, META_UUID, strlen(META_UUID), f->pool_uuid, 16, 0, "meta put");
	if (!rc)
		rc = st_meta_put_u64(t, META_VERSION, MDS_STORE_FORMAT_VERSION);
	if (!rc)
		rc = st_meta_put_u64(t, META_BLOCK, f->block_bytes);
	if (!rc)
		rc = st_meta_put_u64(t, META_STRIPE, f->stripe_unit_bytes);
	if (!rc)
		rc = st_meta_put_u64(t, META_VOLTYPE, (uint64_t)f->volume_type);
	if (!rc)
		rc = st_meta_put_u64(t, META_VOLUME, f->volume_bytes);
	if (!rc)
		rc = st_meta_put_u64(t, META_NLUNS, f->nluns);
	for (uint32_t i = 0; !rc && i < f->nluns; i++) {
		be64_put(lun, f->luns[i].size_bytes);
		be64_put(lun + 8, f->luns[i].data_start_bytes);
		be64_put(lun + 16, f->luns[i].data_bytes);
		snprintf(key, sizeof(key), META_LUN_FMT, i);
		rc = st_write(t, st->meta, key, strlen(key), lun, sizeof(lun), 0, "meta put");
	}
	for (size_t i = 0; !rc && i < sizeof(counters) / sizeof(counters[0]); i++)
		rc = st_meta_put_u64(t, counters[i].key, counters[i].value);
	if (rc)
		return rc;
	/* The whole volume starts free. */
	rc = st_space_free(t, 0, f->volume_bytes);
	if (rc)
		return rc;
	memset(&root, 0, sizeof(root));
	root.fileid = 1;
	root.type = MDS_FT_DIR;
	root.mode = 0755;
	root.nlink = 2;
	root.atime = root.mtime = root.ctime = root.crtime = t->now;
	root.change = 1;
	root.parent = 1;
	if (getrandom(&root.cookieverf, sizeof(root.cookieverf), 0) != sizeof(root.cookieverf))
		root.cookieverf = (uint64_t)t->now.sec << 20 ^ t->now.nsec;
	rc = st_inode_write(t, &root, NULL, 0);
	if (!rc)
		rc = st_dir_set_next_cookie(t, 1, MDS_COOKIE_FIRST);
	return rc;
}

static int read_format(struct mds_store *st)
{
	struct mds_txn *t;
	struct mds_store_format *f = &st->fmt;
	MDB_val v;
	uint64_t x;
	char key[32];
	int rc;

	rc = mds_txn_begin(st, MDS_TXN_RDONLY, &t);
	if (rc)
		return rc;
	rc = st_read(t, st->meta, META_VERSION, strlen(META_VERSION), &v, "meta get");
	if (rc == -ENOENT) {
		rc = st_fail(st, -EPROTO, "store has no format version");
		goto out;
	}
	if (rc)
		goto out;
	if (v.mv_size != 8 || be64_get(v.mv_data) != MDS_STORE_FORMAT_VERSION) {
		rc = st_fail(st, -EPROTO, "store format version %llu, this program knows %d",
			     v.mv_size == 8 ? (unsigned long long)be64_get(v.mv_data) : 0ull,
			     MDS_STORE_FORMAT_VERSION);
		goto out;
	}
	rc = st_read(t, st->meta, META_UUID, strlen(META_UUID), &v, "meta get");
	if (rc || v.mv_size != 16) {
		rc = st_fail(st, -EUCLEAN, "meta: pool uuid missing");
		goto out;
	}
	memcpy(f->pool_uuid, v.mv_data, 16);
	if ((rc = st_meta_u64(t, META_BLOCK, &x)))
		goto out;
	f->block_bytes = (uint32_t)x;
	if ((rc = st_meta_u64(t, META_STRIPE, &f->stripe_unit_bytes)))
		goto out;
	if ((rc = st_meta_u64(t, META_VOLTYPE, &x)))
		goto out;
	f->volume_type = (enum mds_volume_type)x;
	if ((rc = st_meta_u64(t, META_VOLUME, &f->volume_bytes)))
		goto out;
	if ((rc = st_meta_u64(t, META_NLUNS, &x)))
		goto out;
	if (x == 0 || x > MDS_MAX_LUNS) {
		rc = st_fail(st, -EUCLEAN, "meta: %llu LUNs", (unsigned long long)x);
		goto out;
	}
	f->nluns = (uint32_t)x;
	for (uint32_t i = 0; i < f->nluns; i++) {
		snprintf(key, sizeof(key), META_LUN_FMT, i);
		rc = st_read(t, st->meta, key, strlen(key), &v, "meta get");
		if (rc || v.mv_size != 24) {
			rc = st_fail(st, -EUCLEAN, "meta: LUN %u record missing", i);
			goto out;
		}
		f->luns[i].size_bytes = be64_get(v.mv_data);
		f->luns[i].data_start_bytes = be64_get((uint8_t *)v.mv_data + 8);
		f->luns[i].data_bytes = be64_get((uint8_t *)v.mv_data + 16);
	}
	if ((rc = st_meta_u64(t, META_ROOT, &st->root)))
		goto out;
	if (fmt_check(f)) {
		rc = st_fail(st, -EUCLEAN, "meta: inconsistent pool geometry");
		goto out;
	}
out:
	mds_txn_abort(t);
	return rc;
}

int mds_store_create(const char *dir, const struct mds_store_format *fmt,
		     const struct mds_store_opts *opts, struct mds_store **out)
{
	struct mds_store_opts o = opts ? *opts : (struct mds_store_opts){ 0 };
	struct mds_store *st;
	int rc;

	*out = NULL;
	if (o.rdonly)
		return -EINVAL;
	rc = fmt_check(fmt);
	if (rc)
		return rc;
	rc = env_open(dir, &o, 1, &st);
	if (rc)
		return rc;
	st->fmt = *fmt;
	st->root = 1;
	rc = mds_txn_run(st, write_format, (void *)fmt);
	if (rc)
		goto fail;
	rc = read_format(st);
	if (rc)
		goto fail;
	*out = st;
	return 0;
fail:
	mds_store_close(st);
	return rc;
}

int mds_store_open(const char *dir, const struct mds_store_opts *opts, struct mds_store **out)
{
	struct mds_store *st;
	int rc = env_open(dir, opts, 0, &st);

	if (rc)
		return rc;
	rc = read_format(st);
	if (rc) {
		mds_store_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

/* ---- meta and stats ----------------------------------------------------------------------- */

int mds_store_meta(struct mds_txn *t, struct mds_store_meta *m)
{
	const struct mds_store_format *f = &t->st->fmt;
	int rc;

	memset(m, 0, sizeof(*m));
	m->format_version = MDS_STORE_FORMAT_VERSION;
	memcpy(m->pool_uuid, f->pool_uuid, 16);
	m->block_bytes = f->block_bytes;
	m->stripe_unit_bytes = f->stripe_unit_bytes;
	m->volume_type = f->volume_type;
	m->volume_bytes = f->volume_bytes;
	m->nluns = f->nluns;
	m->root_fileid = t->st->root;
	rc = st_meta_u64(t, META_NEXT_FILEID, &m->next_fileid);
	if (!rc)
		rc = st_meta_u64(t, META_BOOT, &m->boot);
	return rc;
}

int mds_store_bump_boot(struct mds_txn *t, uint64_t *boot)
{
	MDB_txn *saved;
	uint64_t b = 0;
	int rc = st_op_begin(t, &saved);

	if (rc)
		return rc;
	rc = st_meta_u64(t, META_BOOT, &b);
	if (!rc)
		rc = st_meta_put_u64(t, META_BOOT, ++b);
	rc = st_op_end(t, saved, rc);
	if (!rc && boot)
		*boot = b;
	return rc;
}

int mds_store_lun_designator(struct mds_txn *t, uint32_t lun, struct mds_lun_designator *out)
{
	const uint8_t *b;
	MDB_val v;
	char key[48];
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(key, sizeof(key), META_LUN_DESIG_FMT, lun);
	rc = st_read(t, t->st->meta, key, strlen(key), &v, "meta get");
	if (rc)
		return rc;
	b = v.mv_data;
	if (v.mv_size < 3 || v.mv_size != 3u + b[2] || b[2] == 0)
		return st_fail(t->st, -EUCLEAN, "meta: LUN %u designator record damaged", lun);
	out->type = b[0];
	out->code_set = b[1];
	out->len = b[2];
	memcpy(out->bytes, b + 3, out->len);
	return 0;
}

int mds_store_set_lun_designator(struct mds_txn *t, uint32_t lun, const struct mds_lun_designator *d)
{
	uint8_t rec[3 + MDS_DESIG_MAX];
	MDB_txn *saved;
	char key[48];
	int rc;

	if (d->len == 0 || lun >= t->st->fmt.nluns)
		return -EINVAL;
	rec[0] = d->type;
	rec[1] = d->code_set;
	rec[2] = d->len;
	memcpy(rec + 3, d->bytes, d->len);
	snprintf(key, sizeof(key), META_LUN_DESIG_FMT, lun);
	rc = st_op_begin(t, &saved);
	if (rc)
		return rc;
	rc = st_write(t, t->st->meta, key, strlen(key), rec, 3u + d->len, 0, "meta put");
	return st_op_end(t, saved, rc);
}

int mds_store_stats(struct mds_txn *t, struct mds_store_stats *s)
{
	MDB_stat ms;
	int rc;

	memset(s, 0, sizeof(*s));
	s->volume_bytes = t->st->fmt.volume_bytes;
	rc = st_meta_u64(t, META_FREE, &s->free_bytes);
	if (!rc)
		rc = st_meta_u64(t, META_USED, &s->used_bytes);
	if (!rc)
		rc = st_meta_u64(t, META_PENDING, &s->pending_bytes);
	if (!rc)
		rc = st_meta_u64(t, META_FILES, &s->files);
	if (rc)
		return rc;
	rc = mdb_stat(t->txn, t->st->free_off, &ms);
	if (rc)
		return st_lmdb_err(t->st, rc, "mdb_stat");
	s->free_extents = ms.ms_entries;
	return 0;
}
