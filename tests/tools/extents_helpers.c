/* Helpers for the pnfs-extents suites: pools with files written as the MDS writes them (see the
 * header), and a reader for the command's table. */
#include "tests/tools/extents_helpers.h"

#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "mds/store.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int xt_pool_format(const char *dir, const char *const *urls, int nluns, uint64_t unit)
{
	struct mds_pool_format_opts o = { .type = unit ? MDS_VOL_STRIPE : MDS_VOL_CONCAT,
					  .stripe_unit_bytes = unit };
	struct blkmap_ctx *ctx = NULL;
	char err[1024];
	int rc = blkmap_ctx_create(NULL, &ctx);

	if (rc)
		return rc;
	rc = mds_pool_format(ctx, dir, urls, (uint32_t)nluns, &o, NULL, err, sizeof(err));
	if (rc)
		fprintf(stderr, "xt_pool_format: %s\n", err);
	blkmap_ctx_destroy(ctx);
	return rc;
}

struct session {
	struct blkmap_ctx *ctx;
	struct mds_pool *pool;
};

static int session_open(const char *dir, struct session *s)
{
	char err[1024];
	int rc;

	memset(s, 0, sizeof(*s));
	rc = blkmap_ctx_create(NULL, &s->ctx);
	if (rc)
		return rc;
	rc = mds_pool_open(s->ctx, dir, NULL, &s->pool, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "xt session: %s\n", err);
		blkmap_ctx_destroy(s->ctx);
	}
	return rc;
}

static void session_close(struct session *s)
{
	mds_pool_close(s->pool);
	blkmap_ctx_destroy(s->ctx);
}

int xt_create(const char *dir, const char *name, uint64_t *fileid)
{
	struct session s;
	struct mds_create_args a = { .type = MDS_FT_REG, .mode = 0644 };
	struct mds_store_meta meta;
	struct mds_inode ino;
	struct mds_txn *t;
	int rc = session_open(dir, &s);

	if (rc)
		return rc;
	rc = mds_txn_begin(mds_pool_store(s.pool), MDS_TXN_RW, &t);
	if (!rc) {
		rc = mds_store_meta(t, &meta);
		if (!rc)
			rc = mds_ns_create(t, meta.root_fileid, name, strlen(name), &a, &ino, NULL);
		if (!rc)
			rc = mds_txn_commit(t);
		else
			mds_txn_abort(t);
	}
	if (!rc)
		*fileid = ino.fileid;
	session_close(&s);
	return rc;
}

static int alloc_range(struct mds_pool *p, uint64_t fileid, uint64_t a, uint64_t b)
{
	struct mds_txn *t;
	int rc = mds_txn_begin(mds_pool_store(p), MDS_TXN_RW, &t);

	if (rc)
		return rc;
	rc = mds_ext_alloc(t, fileid, a, b - a, NULL);
	if (rc) {
		mds_txn_abort(t);
		return rc;
	}
	return mds_txn_commit(t);
}

int xt_alloc_only(const char *dir, uint64_t fileid, uint64_t off, uint64_t len)
{
	struct session s;
	int rc = session_open(dir, &s);

	if (rc)
		return rc;
	rc = alloc_range(s.pool, fileid, off, off + len);
	session_close(&s);
	return rc;
}

int xt_write(const char *dir, uint64_t fileid, uint64_t off, const void *data, size_t len)
{
	struct session s;
	struct mds_extent e[256];
	struct mds_txn *t = NULL;
	uint32_t bs;
	uint64_t a, b, end;
	uint8_t *buf = NULL;
	size_t n = 0;
	int rc = session_open(dir, &s);

	if (rc)
		return rc;
	bs = mds_store_format(mds_pool_store(s.pool))->block_bytes;
	a = off - off % bs;
	b = off + len;
	b = b % bs ? b + (bs - b % bs) : b;
	rc = alloc_range(s.pool, fileid, a, b);
	if (rc)
		goto out;
	rc = mds_txn_begin(mds_pool_store(s.pool), MDS_TXN_RDONLY, &t);
	if (!rc)
		rc = mds_ext_map(t, fileid, a, b - a, e, 256, &n, &end);
	mds_txn_abort(t);
	t = NULL;
	if (rc)
		goto out;
	buf = calloc(1, b - a);
	rc = buf ? 0 : -ENOMEM;
	/* Keep what READ_WRITE blocks already hold around the new data; INVALID ones read as zeros. */
	for (size_t i = 0; !rc && i < n; i++)
		if (e[i].state == MDS_EXT_RW)
			rc = blkmap_vol_pread(mds_pool_volume(s.pool), buf + (e[i].file_off - a), e[i].len,
					      e[i].vol_off);
	if (rc)
		goto out;
	memcpy(buf + (off - a), data, len);
	for (size_t i = 0; !rc && i < n; i++)
		rc = blkmap_vol_pwrite(mds_pool_volume(s.pool), buf + (e[i].file_off - a), e[i].len,
				       e[i].vol_off);
	if (rc)
		goto out;
	rc = mds_txn_begin(mds_pool_store(s.pool), MDS_TXN_RW, &t);
	for (size_t i = 0; !rc && i < n; i++)
		rc = mds_ext_commit(t, fileid, e[i].file_off, e[i].len, e[i].vol_off);
	if (!rc)
		rc = mds_inode_note_write(t, fileid, off + len, NULL, NULL);
	if (!rc) {
		rc = mds_txn_commit(t);
		t = NULL;
	}
out:
	mds_txn_abort(t);
	free(buf);
	session_close(&s);
	return rc;
}

static int field_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!strcmp(s, "-")) {
		*v = 0;
		return 0;
	}
	*v = strtoull(s, &end, 10);
	return *end ? -1 : 0;
}

int xt_parse_rows(const char *out, struct xt_row *rows, int max)
{
	const char *p = strstr(out, "\n EXT ");
	int n = 0;

	if (!p)
		p = strstr(out, " EXT ");
	if (!p)
		return 0;
	p = strchr(p + 1, '\n');
	while (p && *++p && *p != '\n' && n < max) {
		char line[1200], f[9][520];
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct xt_row *r = &rows[n];
		int k;

		if (len >= sizeof(line))
			len = sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = '\0';
		k = sscanf(line, "%519s %519s %519s %519s %519s %519s %519s %519s %519[^\n]", f[0], f[1], f[2],
			   f[3], f[4], f[5], f[6], f[7], f[8]);
		if (k != 9)
			break;
		memset(r, 0, sizeof(*r));
		r->ext = atoi(f[0]);
		if (field_u64(f[1], &r->file_off) || field_u64(f[2], &r->len) || field_u64(f[4], &r->vol_off) ||
		    field_u64(f[6], &r->lba_first) || field_u64(f[7], &r->lba_last))
			break;
		snprintf(r->state, sizeof(r->state), "%s", f[3]);
		r->lun = !strcmp(f[5], "-") ? -1 : !strcmp(f[5], "*") ? -2 : atoi(f[5]);
		snprintf(r->dev, sizeof(r->dev), "%s", f[8]);
		n++;
		p = nl;
	}
	return n;
}

static int lun_of(const struct test_lab *lab, const char *dev)
{
	for (int i = 0; i < lab->nluns; i++)
		if (!strcmp(lab->urls[i], dev))
			return i;
	return -1;
}

void xt_check_piece(const struct test_lab *lab, const struct xt_row *r, uint64_t unit)
{
	CU_ASSERT_EQUAL(lun_of(lab, r->dev), r->lun);
	CU_ASSERT(r->len <= unit);
	CU_ASSERT_EQUAL((r->lba_last - r->lba_first + 1) * 512, r->len);
}

uint64_t xt_check_piece_bytes(const struct test_lab *lab, const struct xt_row *r, const uint8_t *content,
			      uint64_t size, uint8_t *buf, size_t buflen)
{
	uint64_t len = r->file_off + r->len > size ? size - r->file_off : r->len;

	CU_ASSERT_FATAL(len <= buflen);
	CU_ASSERT_EQUAL_FATAL(xt_read_at(lab->files[r->lun], buf, len, r->lba_first * 512), 0);
	CU_ASSERT_EQUAL(memcmp(buf, content + r->file_off, len), 0);
	return len;
}

int xt_count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

int xt_read_at(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

int xt_write_at(const char *path, const void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pwrite(fd, buf, len, (off_t)off);
	if (fsync(fd))
		n = -1;
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

void xt_flip_byte(const struct test_lab *lab, const struct xt_row *r)
{
	uint64_t at = r->lba_first * 512 + 4321;
	uint8_t b;

	CU_ASSERT_EQUAL_FATAL(xt_read_at(lab->files[r->lun], &b, 1, at), 0);
	b ^= 0x5a;
	CU_ASSERT_EQUAL_FATAL(xt_write_at(lab->files[r->lun], &b, 1, at), 0);
}

void xt_expect_bad(const char *out, const char *summary, const struct xt_row *r, int where)
{
	char want[300];

	CU_ASSERT_PTR_NOT_NULL(strstr(out, summary));
	snprintf(want, sizeof(want), "extent 2 (file %llu+", 3ull << 20);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	if (where) {
		snprintf(want, sizeof(want), "1 byte differs, the first at file offset %llu: LUN %d LBA %llu byte 225",
			 (unsigned long long)(r->file_off + 4321), r->lun, (unsigned long long)(r->lba_first + 8));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	}
	CU_ASSERT_EQUAL(xt_count(out, "MISMATCH"), 1);
}

void xt_expect_second_write(const char *out, const char *state)
{
	struct xt_row rows[4];
	int n = xt_parse_rows(out, rows, 4);

	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(rows[0].file_off, 3ull << 20);
	CU_ASSERT_STRING_EQUAL(rows[0].state, state);
	CU_ASSERT_EQUAL(rows[1].file_off + rows[1].len, 4ull << 20);
	CU_ASSERT_STRING_EQUAL(rows[1].state, "NONE");
}

void xt_expect_file_summary(const char *out)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "stripe of 4 LUNs, unit 256.0 KiB"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "9437307 bytes"));
}
