/* Namespace, attributes, opens and locks on a running pnfs-mds: the pNFS attributes clients need,
 * filehandles (stable, STALE, BADHANDLE), READDIR cookies over many calls, VERIFY/NVERIFY, every
 * OPEN create mode and share reservation conflicts, OPEN_DOWNGRADE, byte-range locks with the
 * conflicting lock reported, mode-bit access for AUTH_SYS users, and export rules: read-only,
 * root squash, and a client network that is not exported at all. */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct test_lab *lab;
static struct test_mds *mds;
static struct nc *c;

static int suite_init(void)
{
	char why[64];

	/* SCSI layouts forced on: fs_layout_type lists both (tgt's refusal of APTPL would leave SCSI out) */
	mds = tmds_lab_up(&lab, 2, "32M", NULL, "--stripe-unit 64K", why, sizeof(why), "--scsi-layouts yes");
	if (!mds)
		return 1;
	c = nc_connect(mds->port);
	return !c || nc_setup(c, "ns-client") != 0;
}

static int suite_clean(void)
{
	nc_free(c);
	return tmds_lab_down(&lab, &mds);
}

static int getattr_raw(const struct nc_fh *fh, uint32_t *words, unsigned nw, struct proto_fattr *a)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	int rc;

	nc_op_putfh(&ops[0], fh);
	nc_op_getattr(&ops[1], words, nw);
	rc = nc_seq(c, ops, 2, &res);
	if (rc == 0)
		rc = (int)res.res.status;
	if (rc == 0)
		rc = proto_fattr_decode(&res.res.resarray.resarray_val[2].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4
					  .obj_attributes,
				  a, NULL);
	proto_compound_res_free(&res);
	return rc;
}

static void test_pnfs_attributes(void)
{
	struct nc_fh root;
	struct proto_fattr *a = calloc(1, sizeof(*a));
	uint32_t w[3] = { 1u << FATTR4_SUPPORTED_ATTRS | 1u << FATTR4_LEASE_TIME | 1u << FATTR4_MAXREAD |
				  1u << FATTR4_MAXWRITE | 1u << FATTR4_FH_EXPIRE_TYPE,
			  1u << (FATTR4_FS_LAYOUT_TYPES - 32),
			  1u << (FATTR4_LAYOUT_BLKSIZE - 64) | 1u << (FATTR4_LAYOUT_ALIGNMENT - 64) };

	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(getattr_raw(&root, w, 3, a), 0);
	CU_ASSERT_EQUAL(a->lease_time, 90);
	CU_ASSERT_EQUAL(a->maxread, 1u << 20);
	CU_ASSERT_EQUAL(a->maxwrite, 1u << 20);
	CU_ASSERT_EQUAL(a->fh_expire_type, FH4_PERSISTENT);
	CU_ASSERT_EQUAL_FATAL(a->fs_layout_types_len, 2);
	CU_ASSERT_EQUAL(a->fs_layout_types[0], LAYOUT4_BLOCK_VOLUME);
	CU_ASSERT_EQUAL(a->fs_layout_types[1], LAYOUT4_SCSI);
	CU_ASSERT_EQUAL(a->layout_blksize, 4096);
	CU_ASSERT_EQUAL(a->layout_alignment, 64u << 10);
	CU_ASSERT(proto_attrmask_isset(&a->supported_attrs, FATTR4_FS_LAYOUT_TYPES));
	free(a);
}

static void test_filehandles(void)
{
	struct nc_fh root, dir, again, bad;
	struct nc_attrs at;

	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, &root, "fhdir", 0755, &dir), 0);
	CU_ASSERT_EQUAL(nc_lookup_path(c, "fhdir", &again), 0);
	CU_ASSERT_EQUAL(dir.len, again.len);
	CU_ASSERT(memcmp(dir.val, again.val, dir.len) == 0);
	/* A corrupted handle is not ours; a removed file's handle is stale. */
	bad = dir;
	bad.val[bad.len / 2] ^= 0x40;
	CU_ASSERT_EQUAL(nc_getattrs(c, &bad, &at), NFS4ERR_BADHANDLE);
	bad.len = 5;
	CU_ASSERT_EQUAL(nc_getattrs(c, &bad, &at), NFS4ERR_BADHANDLE);
	CU_ASSERT_EQUAL(nc_remove(c, &root, "fhdir"), 0);
	CU_ASSERT_EQUAL(nc_getattrs(c, &dir, &at), NFS4ERR_STALE);
	/* LOOKUPP of the root. */
	{
		nfs_argop4 ops[2];
		struct proto_compound_res res;
		nc_op_simple(&ops[0], OP_PUTROOTFH);
		nc_op_simple(&ops[1], OP_LOOKUPP);
		CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_NOENT);
		proto_compound_res_free(&res);
		/* No current filehandle. */
		nc_op_simple(&ops[0], OP_GETFH);
		CU_ASSERT_EQUAL(nc_seq(c, ops, 1, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_NOFILEHANDLE);
		proto_compound_res_free(&res);
	}
}

static void test_readdir_cookies(void)
{
	struct nc_fh root, dir;
	char *names = malloc(200000);
	unsigned n = 0;

	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_mkdir(c, &root, "many", 0755, &dir), 0);
	for (int i = 0; i < 300; i++) {
		char name[64];
		snprintf(name, sizeof(name), "entry-with-a-longish-name-%04d", i);
		CU_ASSERT_EQUAL(nc_symlink(c, &dir, name, "target"), 0);
	}
	/* 300 entries through 4 KiB READDIR replies: many calls, each entry exactly once. */
	CU_ASSERT_EQUAL(nc_readdir_names(c, &dir, names, 200000, &n), 0);
	CU_ASSERT_EQUAL(n, 300);
	for (int i = 0; i < 300; i++) {
		char name[64], *p, *q;
		snprintf(name, sizeof(name), "entry-with-a-longish-name-%04d", i);
		p = strstr(names, name);
		CU_ASSERT_PTR_NOT_NULL(p);
		q = p ? strstr(p + 1, name) : NULL;
		CU_ASSERT_PTR_NULL(q);
	}
	free(names);
}

static void test_verify_nverify(void)
{
	struct nc_fh root, fh;
	stateid4 sid;
	struct proto_fattr *a = calloc(1, sizeof(*a));
	nfs_argop4 ops[3];
	struct proto_compound_res res;

	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c, &root, "verified", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	CU_ASSERT_EQUAL(nc_write(c, &fh, &sid, 0, "12345", 5, FILE_SYNC4), 0);
	a->size = 5;
	proto_fattr_set(a, FATTR4_SIZE);
	nc_op_putfh(&ops[0], &fh);
	nc_op_simple(&ops[1], OP_VERIFY);
	CU_ASSERT_EQUAL_FATAL(proto_fattr_encode(a, NULL, &ops[1].nfs_argop4_u.opverify.obj_attributes), 0);
	nc_op_simple(&ops[2], OP_GETFH);
	CU_ASSERT_EQUAL(nc_seq(c, ops, 3, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	ops[1].argop = OP_NVERIFY;
	CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_SAME);
	proto_compound_res_free(&res);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &ops[1].nfs_argop4_u.opverify.obj_attributes);
	a->size = 6;
	ops[1].argop = OP_VERIFY;
	CU_ASSERT_EQUAL_FATAL(proto_fattr_encode(a, NULL, &ops[1].nfs_argop4_u.opverify.obj_attributes), 0);
	CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4ERR_NOT_SAME);
	proto_compound_res_free(&res);
	proto_xdr_free((xdrproc_t)xdr_fattr4, &ops[1].nfs_argop4_u.opverify.obj_attributes);
	CU_ASSERT_EQUAL(nc_close(c, &fh, &sid), 0);
	free(a);
}

/* OPEN by hand, for create modes and deny/want flags nc_open does not offer. */
static nfsstat4 open_how(const struct nc_fh *dir, const char *name, const char *owner, createmode4 mode,
			 const char *verf, uint32_t access, uint32_t deny, stateid4 *sid)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	OPEN4args *oa = &ops[1].nfs_argop4_u.opopen;
	nfsstat4 st;

	nc_op_putfh(&ops[0], dir);
	nc_op_simple(&ops[1], OP_OPEN);
	oa->share_access = access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
	oa->share_deny = deny;
	oa->owner.owner.owner_len = (u_int)strlen(owner);
	oa->owner.owner.owner_val = (char *)owner;
	oa->claim.claim = CLAIM_NULL;
	oa->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
	oa->claim.open_claim4_u.file.utf8string_val = (char *)name;
	oa->openhow.opentype = OPEN4_CREATE;
	oa->openhow.openflag4_u.how.mode = mode;
	if (mode == EXCLUSIVE4)
		memcpy(oa->openhow.openflag4_u.how.createhow4_u.createverf, verf, 8);
	if (mode == EXCLUSIVE4_1)
		memcpy(oa->openhow.openflag4_u.how.createhow4_u.ch_createboth.cva_verf, verf, 8);
	if (nc_seq(c, ops, 2, &res) != 0)
		return NFS4ERR_SERVERFAULT;
	st = res.res.status;
	if (st == NFS4_OK && sid)
		*sid = res.res.resarray.resarray_val[2].nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
	proto_compound_res_free(&res);
	return st;
}

static void test_open_modes_and_shares(void)
{
	struct nc_fh root, fh;
	stateid4 s1, s2, s3;
	struct nc_attrs at;

	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	/* EXCLUSIVE4_1: a retry with the same verifier is the same create; another verifier is EXIST. */
	CU_ASSERT_EQUAL(open_how(&root, "excl", "owner-x", EXCLUSIVE4_1, "verifier", OPEN4_SHARE_ACCESS_BOTH, 0, &s1), 0);
	CU_ASSERT_EQUAL(open_how(&root, "excl", "owner-x", EXCLUSIVE4_1, "verifier", OPEN4_SHARE_ACCESS_BOTH, 0, &s2), 0);
	CU_ASSERT_EQUAL(s2.seqid, s1.seqid + 1); /* the same open, upgraded */
	CU_ASSERT(memcmp(s1.other, s2.other, 12) == 0);
	CU_ASSERT_EQUAL(open_how(&root, "excl", "owner-x", EXCLUSIVE4_1, "otherone", OPEN4_SHARE_ACCESS_BOTH, 0, NULL),
			NFS4ERR_EXIST);
	CU_ASSERT_EQUAL(open_how(&root, "excl4", "owner-x", EXCLUSIVE4, "verifie4", OPEN4_SHARE_ACCESS_BOTH, 0, &s3), 0);
	CU_ASSERT_EQUAL(open_how(&root, "excl4", "owner-x", EXCLUSIVE4, "verifie4", OPEN4_SHARE_ACCESS_BOTH, 0, NULL), 0);
	CU_ASSERT_EQUAL(open_how(&root, "excl", "owner-x", GUARDED4, NULL, OPEN4_SHARE_ACCESS_BOTH, 0, NULL), NFS4ERR_EXIST);
	CU_ASSERT_EQUAL(open_how(&root, "excl", "owner-y", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_READ, 0, NULL), 0);
	/* Share reservations: owner-y denies write; owner-z's write open is refused; read is not. */
	CU_ASSERT_EQUAL(open_how(&root, "shared", "owner-y", GUARDED4, NULL, OPEN4_SHARE_ACCESS_READ,
				 OPEN4_SHARE_DENY_WRITE, &s1),
			0);
	CU_ASSERT_EQUAL(open_how(&root, "shared", "owner-z", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_WRITE, 0, NULL),
			NFS4ERR_SHARE_DENIED);
	CU_ASSERT_EQUAL(open_how(&root, "shared", "owner-z", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_READ,
				 OPEN4_SHARE_DENY_READ, NULL),
			NFS4ERR_SHARE_DENIED);
	CU_ASSERT_EQUAL(open_how(&root, "shared", "owner-z", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_READ, 0, &s2), 0);
	/* A WRITE with the anonymous stateid is locked out by the deny too. */
	CU_ASSERT_EQUAL(nc_lookup_path(c, "shared", &fh), 0);
	{
		stateid4 anon;
		memset(&anon, 0, sizeof(anon));
		CU_ASSERT_EQUAL(nc_write(c, &fh, &anon, 0, "x", 1, FILE_SYNC4), NFS4ERR_LOCKED);
		/* A read-only open cannot write. */
		CU_ASSERT_EQUAL(nc_write(c, &fh, &s2, 0, "x", 1, FILE_SYNC4), NFS4ERR_OPENMODE);
	}
	/* OPEN_DOWNGRADE only to modes that were opened. */
	{
		nfs_argop4 ops[2];
		struct proto_compound_res res;
		stateid4 s4;
		CU_ASSERT_EQUAL(open_how(&root, "down", "owner-d", GUARDED4, NULL, OPEN4_SHARE_ACCESS_READ, 0, &s4), 0);
		CU_ASSERT_EQUAL(open_how(&root, "down", "owner-d", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_WRITE, 0, &s4), 0);
		CU_ASSERT_EQUAL(nc_lookup_path(c, "down", &fh), 0);
		nc_op_putfh(&ops[0], &fh);
		nc_op_simple(&ops[1], OP_OPEN_DOWNGRADE);
		ops[1].nfs_argop4_u.opopen_downgrade.open_stateid = s4;
		ops[1].nfs_argop4_u.opopen_downgrade.share_access = OPEN4_SHARE_ACCESS_READ;
		CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
		proto_compound_res_free(&res);
		s4.seqid++;
		ops[1].nfs_argop4_u.opopen_downgrade.open_stateid = s4;
		ops[1].nfs_argop4_u.opopen_downgrade.share_access = OPEN4_SHARE_ACCESS_BOTH;
		CU_ASSERT_EQUAL(nc_seq(c, ops, 2, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_INVAL);
		proto_compound_res_free(&res);
		/* An old seqid is OLD_STATEID. */
		s4.seqid -= 2;
		CU_ASSERT_EQUAL(nc_close(c, &fh, &s4), NFS4ERR_OLD_STATEID);
	}
	/* Opening a directory or a symlink for I/O. */
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, "adir", 0755, NULL), 0);
	CU_ASSERT_EQUAL(open_how(&root, "adir", "owner-x", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_READ, 0, NULL),
			NFS4ERR_ISDIR);
	CU_ASSERT_EQUAL(nc_getattrs(c, &root, &at), 0);
}

static nfsstat4 lock(const struct nc_fh *fh, const stateid4 *open_sid, const char *lowner, nfs_lock_type4 type,
		     uint64_t off, uint64_t len, stateid4 *lock_sid, LOCK4denied *denied)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	LOCK4args *la = &ops[1].nfs_argop4_u.oplock;
	nfsstat4 st;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_LOCK);
	la->locktype = type;
	la->offset = off;
	la->length = len;
	if (lock_sid && lock_sid->seqid) {
		la->locker.new_lock_owner = FALSE;
		la->locker.locker4_u.lock_owner.lock_stateid = *lock_sid;
	} else {
		la->locker.new_lock_owner = TRUE;
		la->locker.locker4_u.open_owner.open_stateid = *open_sid;
		la->locker.locker4_u.open_owner.lock_owner.owner.owner_len = (u_int)strlen(lowner);
		la->locker.locker4_u.open_owner.lock_owner.owner.owner_val = (char *)lowner;
	}
	if (nc_seq(c, ops, 2, &res) != 0)
		return NFS4ERR_SERVERFAULT;
	st = res.res.status;
	if (st == NFS4_OK && lock_sid)
		*lock_sid = res.res.resarray.resarray_val[2].nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
	if (st == NFS4ERR_DENIED && denied) {
		*denied = res.res.resarray.resarray_val[2].nfs_resop4_u.oplock.LOCK4res_u.denied;
		denied->owner.owner.owner_val = NULL; /* freed with res */
	}
	proto_compound_res_free(&res);
	return st;
}

static nfsstat4 unlock(const struct nc_fh *fh, stateid4 *lock_sid, uint64_t off, uint64_t len)
{
	nfs_argop4 ops[2];
	struct proto_compound_res res;
	nfsstat4 st;

	nc_op_putfh(&ops[0], fh);
	nc_op_simple(&ops[1], OP_LOCKU);
	ops[1].nfs_argop4_u.oplocku.locktype = WRITE_LT;
	ops[1].nfs_argop4_u.oplocku.lock_stateid = *lock_sid;
	ops[1].nfs_argop4_u.oplocku.offset = off;
	ops[1].nfs_argop4_u.oplocku.length = len;
	if (nc_seq(c, ops, 2, &res) != 0)
		return NFS4ERR_SERVERFAULT;
	st = res.res.status;
	if (st == NFS4_OK)
		*lock_sid = res.res.resarray.resarray_val[2].nfs_resop4_u.oplocku.LOCKU4res_u.lock_stateid;
	proto_compound_res_free(&res);
	return st;
}

static void test_byte_range_locks(void)
{
	struct nc_fh root, fh;
	stateid4 open_a, open_b, lock_a = { 0 }, lock_b = { 0 }, none = { 0 };
	LOCK4denied d;

	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(open_how(&root, "locked", "owner-la", GUARDED4, NULL, OPEN4_SHARE_ACCESS_BOTH, 0, &open_a), 0);
	CU_ASSERT_EQUAL_FATAL(open_how(&root, "locked", "owner-lb", UNCHECKED4, NULL, OPEN4_SHARE_ACCESS_BOTH, 0, &open_b), 0);
	CU_ASSERT_EQUAL(nc_lookup_path(c, "locked", &fh), 0);
	CU_ASSERT_EQUAL(lock(&fh, &open_a, "lock-a", WRITE_LT, 100, 100, &lock_a, NULL), 0);
	CU_ASSERT_EQUAL(lock_a.seqid, 1);
	/* Overlapping write lock by another owner: DENIED with the holder's lock. */
	memset(&d, 0, sizeof(d));
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", READ_LT, 150, 10, &lock_b, &d), NFS4ERR_DENIED);
	CU_ASSERT_EQUAL(d.offset, 100);
	CU_ASSERT_EQUAL(d.length, 100);
	CU_ASSERT_EQUAL(d.locktype, WRITE_LT);
	CU_ASSERT_EQUAL(d.owner.clientid, c->clientid);
	/* Next to it is free; a read lock there and a second read lock overlapping both work. */
	lock_b = none;
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", READ_LT, 200, 50, &lock_b, NULL), 0);
	CU_ASSERT_EQUAL(lock(&fh, &open_a, "lock-a", READ_LT, 220, 10, &lock_a, NULL), 0);
	/* Unlocking the middle of a's write lock splits it: 150..159 is free for b, 100 is not. */
	CU_ASSERT_EQUAL(unlock(&fh, &lock_a, 140, 30), 0);
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", WRITE_LT, 150, 10, &lock_b, NULL), 0);
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", WRITE_LT, 100, 1, &lock_b, &d), NFS4ERR_DENIED);
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", WRITE_LT, 195, 10, &lock_b, &d), NFS4ERR_DENIED);
	/* Bad ranges. */
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", WRITE_LT, 0, 0, &lock_b, NULL), NFS4ERR_INVAL);
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", WRITE_LT, NFS4_UINT64_MAX - 5, 10, &lock_b, NULL), NFS4ERR_INVAL);
	/* To the end of the file, once a released everything. */
	CU_ASSERT_EQUAL(unlock(&fh, &lock_a, 0, NFS4_UINT64_MAX), 0);
	CU_ASSERT_EQUAL(lock(&fh, &open_b, "lock-b", WRITE_LT, 0, NFS4_UINT64_MAX, &lock_b, NULL), 0);
	/* A lock stateid with locks cannot be freed; closing the open releases them. */
	{
		nfs_argop4 op;
		struct proto_compound_res res;
		nc_op_simple(&op, OP_FREE_STATEID);
		op.nfs_argop4_u.opfree_stateid.fsa_stateid = lock_b;
		CU_ASSERT_EQUAL(nc_seq(c, &op, 1, &res), 0);
		CU_ASSERT_EQUAL(res.res.status, NFS4ERR_LOCKS_HELD);
		proto_compound_res_free(&res);
	}
	CU_ASSERT_EQUAL(nc_close(c, &fh, &open_b), 0);
	lock_a = none;
	CU_ASSERT_EQUAL(lock(&fh, &open_a, "lock-a", WRITE_LT, 0, NFS4_UINT64_MAX, &lock_a, NULL), 0);
	CU_ASSERT_EQUAL(nc_close(c, &fh, &open_a), 0);
}

static void test_access_by_mode_bits(void)
{
	struct nc_fh root, dir, fh;
	stateid4 sid;
	struct nc *u = nc_connect(mds->port);

	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	u->uid = 1000;
	u->gid = 1000;
	CU_ASSERT_EQUAL_FATAL(nc_setup(u, "user-1000"), 0);
	CU_ASSERT_EQUAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, "private", 0700, &dir), 0);
	/* uid 1000 may not look into root's 0700 directory, nor create in the 0755 root. */
	CU_ASSERT_EQUAL(nc_lookup_path(u, "private/x", &fh), NFS4ERR_ACCESS);
	CU_ASSERT_EQUAL(nc_open(u, &root, "mine", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), NFS4ERR_ACCESS);
	CU_ASSERT_EQUAL(nc_mkdir(c, &root, "open", 0777, &dir), 0);
	CU_ASSERT_EQUAL(nc_setattr_mode(c, &dir, 0777), 0);
	CU_ASSERT_EQUAL(nc_open(u, &dir, "mine", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), 0);
	{
		struct nc_attrs at;
		CU_ASSERT_EQUAL(nc_getattrs(u, &fh, &at), 0);
		CU_ASSERT_EQUAL(at.uid, 1000);
		CU_ASSERT_EQUAL(at.gid, 1000);
	}
	CU_ASSERT_EQUAL(nc_close(u, &fh, &sid), 0);
	/* Only the owner (or root) changes the mode. */
	CU_ASSERT_EQUAL(nc_setattr_mode(u, &dir, 0700), NFS4ERR_PERM);
	CU_ASSERT_EQUAL(nc_setattr_mode(u, &fh, 0600), 0);
	nc_free(u);
}

static struct test_mds *export_server(const struct test_lab *elab, const char *rule)
{
	char args[256], why[64];

	snprintf(args, sizeof(args), "--export '%s'", rule);
	return tmds_up(elab, "--force --concat", args, why, sizeof(why));
}

/* A client named owner of a new export_server(elab, rule), which goes into *m. Aborts the test when
 * either does not start. */
static struct nc *export_client(const struct test_lab *elab, const char *rule, const char *owner,
				struct test_mds **m)
{
	struct nc *e;

	*m = export_server(elab, rule);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*m);
	e = nc_connect((*m)->port);
	CU_ASSERT_EQUAL_FATAL(nc_setup(e, owner), 0);
	return e;
}

static void test_export_rules(void)
{
	struct nc_fh root, fh;
	stateid4 sid;
	struct nc *e;
	struct test_mds *m;
	struct test_lab *elab = lab_up(1, "16M", NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(elab);
	/* Read-only: lookups work, changes are ROFS. (Each server formats the LUN anew.) */
	e = export_client(elab, "127.0.0.1 ro,no_root_squash", "ro-client", &m);
	CU_ASSERT_EQUAL(nc_rootfh(e, &root), 0);
	CU_ASSERT_EQUAL(nc_mkdir(e, &root, "nope", 0755, NULL), NFS4ERR_ROFS);
	CU_ASSERT_EQUAL(nc_open(e, &root, "nope", 1, OPEN4_SHARE_ACCESS_BOTH, 0, &fh, &sid), NFS4ERR_ROFS);
	nc_free(e);
	tmds_down(m);
	/* Root squashed: uid 0 acts as nobody, and cannot create in root's 0755 root. */
	e = export_client(elab, "127.0.0.0/8 rw,root_squash", "squashed", &m);
	CU_ASSERT_EQUAL(nc_rootfh(e, &root), 0);
	CU_ASSERT_EQUAL(nc_mkdir(e, &root, "nope", 0755, NULL), NFS4ERR_ACCESS);
	nc_free(e);
	tmds_down(m);
	/* A network that is not ours: no access to any filehandle. */
	e = export_client(elab, "10.0.0.0/8 rw", "stranger", &m);
	CU_ASSERT_EQUAL(nc_rootfh(e, &root), NFS4ERR_ACCESS);
	nc_free(e);
	tmds_down(m);
	lab_down(elab);
}

TEST_SUITE(mds_ns, "integration/mds-ns", suite_init, suite_clean,
	   { "pnfs_attributes", test_pnfs_attributes },
	   { "filehandles", test_filehandles },
	   { "readdir_cookies", test_readdir_cookies },
	   { "verify_nverify", test_verify_nverify },
	   { "open_modes_and_shares", test_open_modes_and_shares },
	   { "byte_range_locks", test_byte_range_locks },
	   { "access_by_mode_bits", test_access_by_mode_bits },
	   { "export_rules", test_export_rules });
