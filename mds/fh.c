/* Filehandles, mode-bit access checks and component-name rules. The filehandle carries a check
 * value over its other bytes so that a corrupted or foreign handle is told apart (BADHANDLE)
 * from one of ours whose file is gone (STALE). */
#include "mds/fh.h"

#include "mds/compound.h"

#include <errno.h>
#include <string.h>

#define FH_VERSION 1

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t fh_check(const unsigned char *p, size_t n)
{
	return (uint32_t)mds_hash_bytes(p, n) ^ 0x5bd1e995u;
}

void mds_fh_encode(const struct mds_server *srv, uint64_t fileid, unsigned char buf[MDS_FH_BYTES])
{
	uint32_t ck;

	buf[0] = FH_VERSION;
	buf[1] = 0;
	memcpy(buf + 2, srv->pool_id, 8);
	put_be64(buf + 10, fileid);
	/* Generation: fileids are never reused within a pool, so it stays 0 (room for a store that
	 * recycles them one day). */
	memset(buf + 18, 0, 4);
	ck = fh_check(buf, 22);
	buf[22] = (unsigned char)(ck >> 24);
	buf[23] = (unsigned char)(ck >> 16);
	buf[24] = (unsigned char)(ck >> 8);
	buf[25] = (unsigned char)ck;
}

nfsstat4 mds_fh_decode(const struct mds_server *srv, const void *fh, size_t len, uint64_t *fileid)
{
	const unsigned char *p = fh;
	uint32_t ck;

	if (len != MDS_FH_BYTES || p[0] != FH_VERSION)
		return NFS4ERR_BADHANDLE;
	ck = fh_check(p, 22);
	if (p[22] != (unsigned char)(ck >> 24) || p[23] != (unsigned char)(ck >> 16) ||
	    p[24] != (unsigned char)(ck >> 8) || p[25] != (unsigned char)ck)
		return NFS4ERR_BADHANDLE;
	if (memcmp(p + 2, srv->pool_id, 8) != 0)
		return NFS4ERR_STALE;
	*fileid = get_be64(p + 10);
	return NFS4_OK;
}

nfsstat4 mds_cfh_set(struct mds_compound *c, uint64_t fileid)
{
	struct mds_txn *t = mds_compound_txn(c);
	struct mds_inode ino;
	int rc;

	if (!t)
		return NFS4ERR_SERVERFAULT;
	rc = mds_inode_read(t, fileid, &ino);
	if (rc == -ENOENT)
		return NFS4ERR_STALE;
	if (rc)
		return mds_errno_to_nfs(rc);
	c->cfh.set = 1;
	c->cfh.fileid = fileid;
	return NFS4_OK;
}

static nfsstat4 fh_inode(struct mds_compound *c, const struct mds_fh *fh, struct mds_inode *ino)
{
	struct mds_txn *t;
	int rc;

	if (!fh->set)
		return NFS4ERR_NOFILEHANDLE;
	t = mds_compound_txn(c);
	if (!t)
		return NFS4ERR_SERVERFAULT;
	rc = mds_inode_read(t, fh->fileid, ino);
	if (rc == -ENOENT)
		return NFS4ERR_STALE;
	return rc ? mds_errno_to_nfs(rc) : NFS4_OK;
}

nfsstat4 mds_cfh_inode(struct mds_compound *c, struct mds_inode *ino)
{
	return fh_inode(c, &c->cfh, ino);
}

nfsstat4 mds_sfh_inode(struct mds_compound *c, struct mds_inode *ino)
{
	return fh_inode(c, &c->sfh, ino);
}

nfsstat4 mds_cfh_dir(struct mds_compound *c, struct mds_inode *dir, int symlink_err)
{
	nfsstat4 st = mds_cfh_inode(c, dir);

	if (st)
		return st;
	if (dir->type == MDS_FT_DIR)
		return NFS4_OK;
	return symlink_err && dir->type == MDS_FT_LNK ? NFS4ERR_SYMLINK : NFS4ERR_NOTDIR;
}

int mds_may(const struct mds_cred *cred, const struct mds_inode *ino, unsigned want)
{
	unsigned bits;

	if (cred->uid == 0) {
		/* root: everything, except executing a non-directory nobody may execute. */
		if ((want & MDS_MAY_EXEC) && ino->type != MDS_FT_DIR && !(ino->mode & 0111))
			return 0;
		return 1;
	}
	if (cred->uid == ino->uid) {
		bits = (ino->mode >> 6) & 7;
	} else {
		int in_group = cred->gid == ino->gid;
		for (unsigned i = 0; i < cred->ngids && !in_group; i++)
			in_group = cred->gids[i] == ino->gid;
		bits = in_group ? (ino->mode >> 3) & 7 : ino->mode & 7;
	}
	return (bits & want) == want;
}

nfsstat4 mds_check_access(const struct mds_compound *c, const struct mds_inode *ino, unsigned want)
{
	return mds_may(&c->cred, ino, want) ? NFS4_OK : NFS4ERR_ACCESS;
}

nfsstat4 mds_check_writable_export(const struct mds_compound *c)
{
	return c->have_rule && c->rule.rw ? NFS4_OK : NFS4ERR_ROFS;
}

/* RFC 3629 UTF-8: no overlongs, no surrogates, nothing past U+10FFFF. */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char b = s[i];
		uint32_t cp;
		size_t need;

		if (b < 0x80) {
			i++;
			continue;
		}
		if ((b & 0xe0) == 0xc0) {
			need = 1;
			cp = b & 0x1f;
		} else if ((b & 0xf0) == 0xe0) {
			need = 2;
			cp = b & 0x0f;
		} else if ((b & 0xf8) == 0xf0) {
			need = 3;
			cp = b & 0x07;
		} else {
			return 0;
		}
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= n || (s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

nfsstat4 mds_check_name(const component4 *name)
{
	const char *p = name->utf8string_val;
	size_t n = name->utf8string_len;

	if (n == 0)
		return NFS4ERR_INVAL;
	if (n > MDS_NAME_MAX)
		return NFS4ERR_NAMETOOLONG;
	if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
		return NFS4ERR_BADNAME;
	if (memchr(p, '/', n) || memchr(p, 0, n))
		return NFS4ERR_BADNAME;
	if (!utf8_valid((const unsigned char *)p, n))
		return NFS4ERR_INVAL;
	return NFS4_OK;
}

nfsstat4 mds_check_lookup_name(const component4 *name)
{
	nfsstat4 st = mds_check_name(name);

	return st == NFS4ERR_BADNAME ? NFS4ERR_NOENT : st;
}
