/* pnfs-extents --pool: a file's extent map from the MDS's own records. The store is opened read-only
 * (LMDB readers never block the server's writer and see one consistent snapshot), the volume is
 * rebuilt from the pool's geometry exactly as the MDS builds it, and pool.conf names the LUNs. */
#include "tools/extents.h"

#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "mds/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAP_BATCH 1024

static const char *ftype_name(enum mds_ftype t)
{
	switch (t) {
	case MDS_FT_DIR:
		return "a directory";
	case MDS_FT_LNK:
		return "a symbolic link";
	case MDS_FT_BLK:
		return "a block device node";
	case MDS_FT_CHR:
		return "a character device node";
	case MDS_FT_SOCK:
		return "a socket";
	case MDS_FT_FIFO:
		return "a FIFO";
	default:
		return "not a regular file";
	}
}

/* Walk an absolute path from the root, component by component. */
static int lookup_path(struct mds_txn *t, uint64_t root, const char *path, uint64_t *fileid, char *err,
		       size_t errlen)
{
	uint64_t cur = root;
	const char *p = path;

	if (path[0] != '/')
		return proto_errf(err, errlen, -EINVAL, "--path %s: give an absolute path (from the pool's root)",
				 path);
	while (*p) {
		const char *q;
		size_t len;
		int rc;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		q = strchr(p, '/');
		len = q ? (size_t)(q - p) : strlen(p);
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return proto_errf(err, errlen, -EINVAL, "--path %s: '.' and '..' are not followed", path);
		rc = mds_ns_lookup(t, cur, p, len, &cur);
		if (rc == -ENOENT)
			return proto_errf(err, errlen, rc, "%s: no such file or directory ('%.*s' not found)", path,
					 (int)len, p);
		if (rc == -ENOTDIR)
			return proto_errf(err, errlen, rc, "%s: '%.*s' is under something that is not a directory",
					 path, (int)len, p);
		if (rc)
			return proto_errf(err, errlen, rc, "%s: looking up '%.*s': %s", path, (int)len, p,
					 mds_store_strerror(rc));
		p += len;
	}
	*fileid = cur;
	return 0;
}

/* The end of the file's last stored extent (0 if none). */
static int last_extent_end(struct mds_txn *t, uint64_t fileid, uint64_t *end)
{
	struct mds_extent e[MAP_BATCH];
	uint64_t from = 0;
	size_t n;
	int rc;

	*end = 0;
	for (;;) {
		rc = mds_ext_lookup(t, fileid, from, MDS_TO_END, e, MAP_BATCH, &n);
		if (rc || n == 0)
			return rc;
		*end = e[n - 1].file_off + e[n - 1].len;
		if (n < MAP_BATCH)
			return 0;
		from = *end;
	}
}

static int load_extents(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t end, struct tool_map *m,
			char *err, size_t errlen)
{
	struct mds_extent *e = malloc(MAP_BATCH * sizeof(*e));
	int rc = 0;

	if (!e)
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	while (off < end) {
		size_t n = 0;
		uint64_t stop = off;
		rc = mds_ext_map(t, fileid, off, end - off, e, MAP_BATCH, &n, &stop);
		if (rc) {
			proto_errf(err, errlen, rc, "fileid %" PRIu64 ": reading its extent map: %s", fileid,
				  mds_store_strerror(rc));
			break;
		}
		for (size_t i = 0; i < n && !rc; i++)
			rc = tool_map_add(m, e[i].file_off, e[i].len, e[i].vol_off, (int)e[i].state);
		if (rc) {
			proto_errf(err, errlen, rc, "out of memory");
			break;
		}
		if (stop <= off) {
			rc = proto_errf(err, errlen, -EUCLEAN,
				       "fileid %" PRIu64 ": the extent map does not advance at %" PRIu64, fileid, off);
			break;
		}
		off = stop;
	}
	free(e);
	return rc;
}

/* Open and check each LUN; name them all, by pool.conf, whatever happens. */
static void name_luns(struct blkmap_ctx *ctx, struct mds_store *st, const struct mds_pool_conf *conf,
		      struct tool_map *m)
{
	struct mds_pool_lun_status *ls;
	struct blkmap_dev **devs;

	for (uint32_t i = 0; i < conf->nluns && i < m->nluns; i++) {
		char shown[TOOL_NAME_MAX];
		mds_pool_url_display(conf->urls[i], shown, sizeof(shown));
		tool_map_name_lun(m, i, shown, 0, NULL);
	}
	if (!ctx) {
		snprintf(m->note, sizeof(m->note), "LUNs not opened (--offline): LBAs are in 512-byte sectors");
		return;
	}
	ls = calloc(conf->nluns, sizeof(*ls));
	devs = calloc(conf->nluns, sizeof(*devs));
	if (!ls || !devs) {
		free(ls);
		free(devs);
		return;
	}
	mds_pool_probe(ctx, st, conf, ls, devs);
	for (uint32_t i = 0; i < conf->nluns && i < m->nluns; i++) {
		if (ls[i].state == MDS_LUN_OK && devs[i]) {
			tool_map_name_lun(m, i, NULL, blkmap_dev_block_bytes(devs[i]), devs[i]);
		} else {
			if (devs[i])
				tool_map_name_lun(m, i, NULL, blkmap_dev_block_bytes(devs[i]), NULL);
			snprintf(m->luns[i].why, sizeof(m->luns[i].why), "%s: %s",
				 mds_pool_lun_state_name(ls[i].state), ls[i].why);
		}
		blkmap_dev_close(devs[i]);
	}
	free(ls);
	free(devs);
}

int tool_pool_load(struct blkmap_ctx *ctx, const char *dir, uint64_t fileid, const char *path,
		   uint64_t off, uint64_t len, struct tool_map *m, char *err, size_t errlen)
{
	struct mds_store_opts so = { .rdonly = 1 };
	struct mds_pool_conf conf;
	struct mds_store *st = NULL;
	const struct mds_store_format *f;
	struct blkmap_vol *vol = NULL;
	struct mds_store_meta meta;
	struct mds_inode ino;
	struct mds_txn *t = NULL;
	uint64_t last;
	int rc;

	memset(&conf, 0, sizeof(conf));
	snprintf(m->source, sizeof(m->source), "pool");
	snprintf(m->where, sizeof(m->where), "%s", dir);
	rc = mds_pool_conf_read(dir, &conf, err, errlen);
	if (rc) {
		if (rc == -ENOENT)
			proto_errf(err, errlen, rc, "%s holds no pool (no %s)", dir, MDS_POOL_CONF);
		goto out;
	}
	rc = mds_store_open(dir, &so, &st);
	if (rc) {
		proto_errf(err, errlen, rc, "%s: metadata store: %s%s%s", dir, mds_store_strerror(rc), st ? ": " : "",
			  st ? mds_store_errstr(st) : "");
		goto out;
	}
	f = mds_store_format(st);
	if (conf.nluns != f->nluns) {
		rc = proto_errf(err, errlen, -EINVAL, "%s/%s lists %u LUNs, the store has %u", dir, MDS_POOL_CONF,
			       conf.nluns, f->nluns);
		goto out;
	}
	rc = mds_pool_volume_build(f, &vol, err, errlen);
	if (rc)
		goto out;
	rc = tool_map_set_volume(m, vol, 1);
	if (rc) {
		blkmap_vol_free(vol);
		proto_errf(err, errlen, rc, "pool volume: %s", strerror(-rc));
		goto out;
	}
	m->block_bytes = f->block_bytes;
	name_luns(ctx, st, &conf, m);

	rc = mds_txn_begin(st, MDS_TXN_RDONLY, &t);
	if (!rc)
		rc = mds_store_meta(t, &meta);
	if (rc) {
		proto_errf(err, errlen, rc, "%s: metadata store: %s", dir, mds_store_strerror(rc));
		goto out;
	}
	if (path && path[0]) {
		rc = lookup_path(t, meta.root_fileid, path, &fileid, err, errlen);
		if (rc)
			goto out;
		snprintf(m->path, sizeof(m->path), "%s", path);
	}
	rc = mds_inode_read(t, fileid, &ino);
	if (rc) {
		proto_errf(err, errlen, rc, "fileid %" PRIu64 ": %s", fileid,
			  rc == -ENOENT ? "no such file in the pool" : mds_store_strerror(rc));
		goto out;
	}
	if (ino.type != MDS_FT_REG) {
		rc = proto_errf(err, errlen, -EINVAL, "%s%sfileid %" PRIu64 " is %s: only regular files have extents",
			       m->path, m->path[0] ? ": " : "", fileid, ftype_name(ino.type));
		goto out;
	}
	m->fileid = fileid;
	m->size = ino.size;
	rc = last_extent_end(t, fileid, &last);
	if (rc) {
		proto_errf(err, errlen, rc, "fileid %" PRIu64 ": reading its extents: %s", fileid,
			  mds_store_strerror(rc));
		goto out;
	}
	/* The range, rounded out to whole blocks (the store's unit). */
	tool_map_set_range(m, off, len, ino.size > last ? ino.size : last, f->block_bytes);
	rc = load_extents(t, fileid, m->range_off, m->range_off + m->range_len, m, err, errlen);
	if (rc)
		goto out;
	rc = tool_map_resolve(m, err, errlen);
out:
	mds_txn_abort(t);
	mds_store_close(st);
	mds_pool_conf_free(&conf);
	return rc;
}

long long tool_read_local(void *arg, uint64_t off, void *buf, size_t len, char *why, size_t whylen)
{
	int fd = *(int *)arg;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(why, whylen, "reading the reference file at %" PRIu64 ": %s", off + done,
				 strerror(errno));
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (long long)done;
}
