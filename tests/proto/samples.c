/* Sample arguments and results for every NFSv4.1 operation and callback, one case per union arm
 * worth exercising. Every sample is a legal value built from the RFC's types; the tests encode it,
 * decode it back, and compare, so a field coded in the wrong order or width shows up as a mismatch. */
#include "tests/proto/samples.h"

#include <CUnit/CUnit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena -------------------------------------------------------------------------------------- */
struct arena_block {
	struct arena_block *next;
	max_align_t data[];
};
static struct arena_block *arena;

void *sample_alloc(size_t n)
{
	struct arena_block *b = calloc(1, sizeof(*b) + n + 1);

	if (!b)
		abort();
	b->next = arena;
	arena = b;
	return b->data;
}

void samples_free(void)
{
	while (arena) {
		struct arena_block *next = arena->next;
		free(arena);
		arena = next;
	}
}

/* ---- building blocks ------------------------------------------------------------------------ */
static utf8string str(const char *s)
{
	utf8string u;
	u.utf8string_len = (u_int)strlen(s);
	u.utf8string_val = sample_alloc(u.utf8string_len);
	memcpy(u.utf8string_val, s, u.utf8string_len);
	return u;
}

static void fill(void *p, size_t n, uint8_t seed)
{
	uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + 7 * i + 1);
}

static nfs_fh4 fh(uint8_t seed, u_int len)
{
	nfs_fh4 f;
	f.nfs_fh4_len = len;
	f.nfs_fh4_val = sample_alloc(len);
	fill(f.nfs_fh4_val, len, seed);
	return f;
}

static stateid4 sid(uint32_t seq, uint8_t seed)
{
	stateid4 s;
	s.seqid = seq;
	fill(s.other, sizeof(s.other), seed);
	return s;
}

static bitmap4 bm(uint32_t w0, uint32_t w1, uint32_t w2)
{
	bitmap4 b;
	u_int n = w2 ? 3 : w1 ? 2 : 1;
	b.bitmap4_len = n;
	b.bitmap4_val = sample_alloc(n * sizeof(uint32_t));
	b.bitmap4_val[0] = w0;
	if (n > 1)
		b.bitmap4_val[1] = w1;
	if (n > 2)
		b.bitmap4_val[2] = w2;
	return b;
}

static void owner(state_owner4 *o, uint64_t clientid, const char *s)
{
	o->clientid = clientid;
	o->owner.owner_len = (u_int)strlen(s);
	o->owner.owner_val = sample_alloc(o->owner.owner_len);
	memcpy(o->owner.owner_val, s, o->owner.owner_len);
}

static change_info4 cinfo(uint64_t before)
{
	change_info4 c = { .atomic = TRUE, .before = before, .after = before + 3 };
	return c;
}

static nfstime4 when(int64_t s, uint32_t ns)
{
	nfstime4 t = { .seconds = s, .nseconds = ns };
	return t;
}

static void opaque_copy(u_int *len, char **val, const void *src, size_t n)
{
	*len = (u_int)n;
	*val = sample_alloc(n);
	memcpy(*val, src, n);
}

/* a with the n attributes of attrs marked set, encoded into a fattr4 in sample memory. */
static fattr4 sample_encoded(struct proto_fattr *a, const unsigned *attrs, size_t n)
{
	fattr4 enc, out;

	for (size_t i = 0; i < n; i++)
		proto_fattr_set(a, attrs[i]);
	CU_ASSERT_FATAL(proto_fattr_encode(a, NULL, &enc) == 0);
	out.attrmask.bitmap4_len = enc.attrmask.bitmap4_len;
	out.attrmask.bitmap4_val = sample_alloc(enc.attrmask.bitmap4_len * sizeof(uint32_t));
	memcpy(out.attrmask.bitmap4_val, enc.attrmask.bitmap4_val, enc.attrmask.bitmap4_len * sizeof(uint32_t));
	opaque_copy(&out.attr_vals.attrlist4_len, &out.attr_vals.attrlist4_val, enc.attr_vals.attrlist4_val,
		    enc.attr_vals.attrlist4_len);
	xdr_free((xdrproc_t)xdr_fattr4, (char *)&enc);
	return out;
}

fattr4 sample_fattr4(void)
{
	static const unsigned attrs[] = { FATTR4_SIZE, FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP,
					  FATTR4_TIME_MODIFY_SET };
	struct proto_fattr *a = sample_alloc(sizeof(*a));

	a->mode = 0644;
	a->size = 1234567;
	strcpy(a->owner, "alice@example.org");
	strcpy(a->owner_group, "staff@example.org");
	a->time_modify_set.set_it = SET_TO_CLIENT_TIME4;
	a->time_modify_set.settime4_u.time = when(1700000000, 123456789);
	return sample_encoded(a, attrs, sizeof(attrs) / sizeof(attrs[0]));
}

/* The attributes a GETATTR/READDIR reply would carry. */
static fattr4 sample_getattr_fattr4(uint64_t fileid)
{
	static const unsigned attrs[] = { FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE,
					  FATTR4_NUMLINKS, FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_TIME_MODIFY,
					  FATTR4_FS_LAYOUT_TYPES, FATTR4_LAYOUT_BLKSIZE };
	struct proto_fattr *a = sample_alloc(sizeof(*a));

	a->type = NF4REG;
	a->change = 77;
	a->size = 4096 * fileid;
	a->fileid = fileid;
	a->mode = 0600;
	a->numlinks = 1;
	strcpy(a->owner, "1000");
	strcpy(a->owner_group, "1000");
	a->time_modify = when(1700000001, 5);
	a->fs_layout_types_len = 2;
	a->fs_layout_types[0] = LAYOUT4_BLOCK_VOLUME;
	a->fs_layout_types[1] = LAYOUT4_SCSI;
	a->layout_blksize = 4096;
	return sample_encoded(a, attrs, sizeof(attrs) / sizeof(attrs[0]));
}

static void sample_deviceid(deviceid4 d, uint8_t seed)
{
	fill(d, NFS4_DEVICEID4_SIZE, seed);
}

/* nluns simple volumes (label signatures), a slice of each, and a stripe over the slices: the
 * pool topology DESIGN.md describes, top-level volume last. */
pnfs_block_deviceaddr4 sample_stripe_of_slices(unsigned nluns)
{
	pnfs_block_deviceaddr4 da;
	unsigned n = 2 * nluns + 1;
	pnfs_block_volume4 *v = sample_alloc(n * sizeof(*v));
	uint32_t *idx = sample_alloc(nluns * sizeof(uint32_t));

	for (unsigned i = 0; i < nluns; i++) {
		pnfs_block_simple_volume_info4 *s = &v[i].pnfs_block_volume4_u.bv_simple_info;
		pnfs_block_sig_component4 *c = sample_alloc(sizeof(*c));
		char sig[24];

		v[i].type = PNFS_BLOCK_VOLUME_SIMPLE;
		memcpy(sig, "PNFSLBL1", 8);
		fill(sig + 8, 16, (uint8_t)(0x40 + i));
		c->bsc_sig_offset = 512;
		opaque_copy(&c->bsc_contents.bsc_contents_len, &c->bsc_contents.bsc_contents_val, sig, sizeof(sig));
		s->bsv_ds.bsv_ds_len = 1;
		s->bsv_ds.bsv_ds_val = c;

		v[nluns + i].type = PNFS_BLOCK_VOLUME_SLICE;
		v[nluns + i].pnfs_block_volume4_u.bv_slice_info.bsv_start = 1 << 20;
		v[nluns + i].pnfs_block_volume4_u.bv_slice_info.bsv_length = 63ull << 20;
		v[nluns + i].pnfs_block_volume4_u.bv_slice_info.bsv_volume = i;
		idx[i] = nluns + i;
	}
	v[n - 1].type = PNFS_BLOCK_VOLUME_STRIPE;
	v[n - 1].pnfs_block_volume4_u.bv_stripe_info.bsv_stripe_unit = 1 << 20;
	v[n - 1].pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len = nluns;
	v[n - 1].pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val = idx;
	da.bda_volumes.bda_volumes_len = n;
	da.bda_volumes.bda_volumes_val = v;
	return da;
}

pnfs_block_layout4 sample_block_layout(unsigned nextents)
{
	pnfs_block_layout4 bl;
	pnfs_block_extent4 *e = sample_alloc((nextents ? nextents : 1) * sizeof(*e));

	for (unsigned i = 0; i < nextents; i++) {
		sample_deviceid(e[i].bex_vol_id, 0x10);
		e[i].bex_file_offset = (uint64_t)i << 20;
		e[i].bex_length = 1 << 20;
		e[i].bex_storage_offset = ((uint64_t)i << 20) + (5ull << 30);
		e[i].bex_state = (pnfs_block_extent_state4)(i % 4);
	}
	bl.blo_extents.blo_extents_len = nextents;
	bl.blo_extents.blo_extents_val = e;
	return bl;
}

static layout_content4 block_content(unsigned nextents)
{
	pnfs_block_layout4 bl = sample_block_layout(nextents);
	layout_content4 enc, out;

	CU_ASSERT_FATAL(proto_block_layout_encode(&bl, &enc) == 0);
	out.loc_type = enc.loc_type;
	opaque_copy(&out.loc_body.loc_body_len, &out.loc_body.loc_body_val, enc.loc_body.loc_body_val,
		    enc.loc_body.loc_body_len);
	proto_layout_content_free(&enc);
	return out;
}

static layoutupdate4 block_update(void)
{
	pnfs_block_layoutupdate4 lu;
	pnfs_block_layout4 bl = sample_block_layout(2);
	layoutupdate4 enc, out;

	lu.blu_commit_list.blu_commit_list_len = bl.blo_extents.blo_extents_len;
	lu.blu_commit_list.blu_commit_list_val = bl.blo_extents.blo_extents_val;
	for (unsigned i = 0; i < 2; i++)
		lu.blu_commit_list.blu_commit_list_val[i].bex_state = PNFS_BLOCK_READ_WRITE_DATA;
	CU_ASSERT_FATAL(proto_block_layoutupdate_encode(&lu, &enc) == 0);
	out.lou_type = enc.lou_type;
	opaque_copy(&out.lou_body.lou_body_len, &out.lou_body.lou_body_val, enc.lou_body.lou_body_val,
		    enc.lou_body.lou_body_len);
	proto_layoutupdate_free(&enc);
	return out;
}

static device_addr4 block_devaddr(void)
{
	pnfs_block_deviceaddr4 da = sample_stripe_of_slices(3);
	device_addr4 enc, out;

	CU_ASSERT_FATAL(proto_block_deviceaddr_encode(&da, &enc) == 0);
	out.da_layout_type = enc.da_layout_type;
	opaque_copy(&out.da_addr_body.da_addr_body_len, &out.da_addr_body.da_addr_body_val,
		    enc.da_addr_body.da_addr_body_val, enc.da_addr_body.da_addr_body_len);
	proto_device_addr_free(&enc);
	return out;
}

static channel_attrs4 chan(uint32_t scale)
{
	channel_attrs4 c = { .ca_headerpadsize = 0,
			     .ca_maxrequestsize = 1049620 * scale,
			     .ca_maxresponsesize = 1049480 * scale,
			     .ca_maxresponsesize_cached = 7584,
			     .ca_maxoperations = 16,
			     .ca_maxrequests = 64 / scale };
	return c;
}

static callback_sec_parms4 *cb_sec(u_int *n)
{
	callback_sec_parms4 *p = sample_alloc(3 * sizeof(*p));
	authsys_parms *sys = &p[1].callback_sec_parms4_u.cbsp_sys_cred;
	gss_cb_handles4 *g = &p[2].callback_sec_parms4_u.cbsp_gss_handles;

	p[0].cb_secflavor = AUTH_NONE;
	p[1].cb_secflavor = AUTH_SYS;
	sys->aup_time = 1700000002;
	sys->aup_machname = sample_alloc(16);
	strcpy(sys->aup_machname, "client-7");
	sys->aup_uid = 1000;
	sys->aup_gid = 100;
	sys->aup_len = 2;
	sys->aup_gids = sample_alloc(2 * sizeof(gid_t));
	sys->aup_gids[0] = 10;
	sys->aup_gids[1] = 20;
	p[2].cb_secflavor = RPCSEC_GSS;
	g->gcbp_service = RPC_GSS_SVC_INTEGRITY;
	opaque_copy(&g->gcbp_handle_from_server.gsshandle4_t_len, &g->gcbp_handle_from_server.gsshandle4_t_val,
		    "srvhandle", 9);
	opaque_copy(&g->gcbp_handle_from_client.gsshandle4_t_len, &g->gcbp_handle_from_client.gsshandle4_t_val,
		    "clihandle!", 10);
	*n = 3;
	return p;
}

static void impl_id(nfs_impl_id4 *id, const char *name)
{
	id->nii_domain = str("example.org");
	id->nii_name = str(name);
	id->nii_date = when(1690000000, 42);
}

static nfsace4 ace(void)
{
	nfsace4 a = { .type = ACE4_ACCESS_ALLOWED_ACE_TYPE, .flag = 0, .access_mask = ACE4_READ_DATA,
		      .who = str("EVERYONE@") };
	return a;
}

/* ---- the case lists ------------------------------------------------------------------------ */

const uint32_t sample_issue_ops[] = {
	OP_EXCHANGE_ID, OP_CREATE_SESSION, OP_DESTROY_SESSION, OP_DESTROY_CLIENTID,
	OP_BIND_CONN_TO_SESSION, OP_BACKCHANNEL_CTL, OP_SEQUENCE, OP_RECLAIM_COMPLETE, OP_PUTROOTFH,
	OP_PUTPUBFH, OP_PUTFH, OP_GETFH, OP_SAVEFH, OP_RESTOREFH, OP_LOOKUP, OP_LOOKUPP, OP_GETATTR,
	OP_SETATTR, OP_ACCESS, OP_VERIFY, OP_NVERIFY, OP_OPEN, OP_OPEN_DOWNGRADE, OP_CLOSE, OP_CREATE,
	OP_REMOVE, OP_RENAME, OP_LINK, OP_READDIR, OP_READLINK, OP_READ, OP_WRITE, OP_COMMIT, OP_LOCK,
	OP_LOCKT, OP_LOCKU, OP_SECINFO, OP_SECINFO_NO_NAME, OP_TEST_STATEID, OP_FREE_STATEID,
	OP_DELEGRETURN, OP_LAYOUTGET, OP_LAYOUTCOMMIT, OP_LAYOUTRETURN, OP_GETDEVICEINFO,
	OP_GETDEVICELIST, 0
};

const uint32_t sample_issue_cb_ops[] = {
	OP_CB_SEQUENCE, OP_CB_LAYOUTRECALL, OP_CB_RECALL_ANY, OP_CB_NOTIFY_DEVICEID, 0
};

const struct sample_case sample_arg_cases[] = {
	{ OP_ACCESS, 0 }, { OP_CLOSE, 0 }, { OP_COMMIT, 0 }, { OP_CREATE, 0 }, { OP_CREATE, 1 },
	{ OP_CREATE, 2 }, { OP_DELEGPURGE, 0 }, { OP_DELEGRETURN, 0 }, { OP_GETATTR, 0 },
	{ OP_GETFH, 0 }, { OP_LINK, 0 }, { OP_LOCK, 0 }, { OP_LOCK, 1 }, { OP_LOCKT, 0 },
	{ OP_LOCKU, 0 }, { OP_LOOKUP, 0 }, { OP_LOOKUPP, 0 }, { OP_NVERIFY, 0 }, { OP_OPEN, 0 },
	{ OP_OPEN, 1 }, { OP_OPEN, 2 }, { OP_OPEN, 3 }, { OP_OPEN, 4 }, { OP_OPENATTR, 0 },
	{ OP_OPEN_CONFIRM, 0 }, { OP_OPEN_DOWNGRADE, 0 }, { OP_PUTFH, 0 }, { OP_PUTPUBFH, 0 },
	{ OP_PUTROOTFH, 0 }, { OP_READ, 0 }, { OP_READDIR, 0 }, { OP_READLINK, 0 }, { OP_REMOVE, 0 },
	{ OP_RENAME, 0 }, { OP_RENEW, 0 }, { OP_RESTOREFH, 0 }, { OP_SAVEFH, 0 }, { OP_SECINFO, 0 },
	{ OP_SETATTR, 0 }, { OP_SETCLIENTID, 0 }, { OP_SETCLIENTID_CONFIRM, 0 }, { OP_VERIFY, 0 },
	{ OP_WRITE, 0 }, { OP_RELEASE_LOCKOWNER, 0 }, { OP_BACKCHANNEL_CTL, 0 },
	{ OP_BIND_CONN_TO_SESSION, 0 }, { OP_EXCHANGE_ID, 0 }, { OP_EXCHANGE_ID, 1 },
	{ OP_EXCHANGE_ID, 2 }, { OP_CREATE_SESSION, 0 }, { OP_DESTROY_SESSION, 0 },
	{ OP_FREE_STATEID, 0 }, { OP_GET_DIR_DELEGATION, 0 }, { OP_GETDEVICEINFO, 0 },
	{ OP_GETDEVICELIST, 0 }, { OP_LAYOUTCOMMIT, 0 }, { OP_LAYOUTCOMMIT, 1 }, { OP_LAYOUTGET, 0 },
	{ OP_LAYOUTRETURN, 0 }, { OP_LAYOUTRETURN, 1 }, { OP_LAYOUTRETURN, 2 },
	{ OP_SECINFO_NO_NAME, 0 }, { OP_SEQUENCE, 0 }, { OP_SET_SSV, 0 }, { OP_TEST_STATEID, 0 },
	{ OP_WANT_DELEGATION, 0 }, { OP_DESTROY_CLIENTID, 0 }, { OP_RECLAIM_COMPLETE, 0 }, { 0, 0 }
};

const struct sample_case sample_res_cases[] = {
	{ OP_ACCESS, 0 }, { OP_CLOSE, 0 }, { OP_COMMIT, 0 }, { OP_CREATE, 0 }, { OP_DELEGPURGE, 0 },
	{ OP_DELEGRETURN, 0 }, { OP_GETATTR, 0 }, { OP_GETFH, 0 }, { OP_LINK, 0 }, { OP_LOCK, 0 },
	{ OP_LOCK, 1 }, { OP_LOCKT, 0 }, { OP_LOCKT, 1 }, { OP_LOCKU, 0 }, { OP_LOOKUP, 0 },
	{ OP_LOOKUPP, 0 }, { OP_NVERIFY, 0 }, { OP_OPEN, 0 }, { OP_OPEN, 1 }, { OP_OPEN, 2 },
	{ OP_OPEN, 3 }, { OP_OPENATTR, 0 }, { OP_OPEN_CONFIRM, 0 }, { OP_OPEN_DOWNGRADE, 0 },
	{ OP_PUTFH, 0 }, { OP_PUTPUBFH, 0 }, { OP_PUTROOTFH, 0 }, { OP_READ, 0 }, { OP_READDIR, 0 },
	{ OP_READDIR, 1 }, { OP_READLINK, 0 }, { OP_REMOVE, 0 }, { OP_RENAME, 0 }, { OP_RENEW, 0 },
	{ OP_RESTOREFH, 0 }, { OP_SAVEFH, 0 }, { OP_SECINFO, 0 }, { OP_SETATTR, 0 },
	{ OP_SETCLIENTID, 0 }, { OP_SETCLIENTID, 1 }, { OP_SETCLIENTID_CONFIRM, 0 }, { OP_VERIFY, 0 },
	{ OP_WRITE, 0 }, { OP_RELEASE_LOCKOWNER, 0 }, { OP_BACKCHANNEL_CTL, 0 },
	{ OP_BIND_CONN_TO_SESSION, 0 }, { OP_EXCHANGE_ID, 0 }, { OP_CREATE_SESSION, 0 },
	{ OP_DESTROY_SESSION, 0 }, { OP_FREE_STATEID, 0 }, { OP_GET_DIR_DELEGATION, 0 },
	{ OP_GET_DIR_DELEGATION, 1 }, { OP_GETDEVICEINFO, 0 }, { OP_GETDEVICEINFO, 1 },
	{ OP_GETDEVICELIST, 0 }, { OP_LAYOUTCOMMIT, 0 }, { OP_LAYOUTCOMMIT, 1 }, { OP_LAYOUTGET, 0 },
	{ OP_LAYOUTGET, 1 }, { OP_LAYOUTRETURN, 0 }, { OP_LAYOUTRETURN, 1 }, { OP_SECINFO_NO_NAME, 0 },
	{ OP_SEQUENCE, 0 }, { OP_SEQUENCE, 1 }, { OP_SET_SSV, 0 }, { OP_TEST_STATEID, 0 },
	{ OP_WANT_DELEGATION, 0 }, { OP_DESTROY_CLIENTID, 0 }, { OP_RECLAIM_COMPLETE, 0 },
	{ OP_ILLEGAL, 0 }, { 0, 0 }
};

const struct sample_case sample_cb_arg_cases[] = {
	{ OP_CB_GETATTR, 0 }, { OP_CB_RECALL, 0 }, { OP_CB_LAYOUTRECALL, 0 }, { OP_CB_LAYOUTRECALL, 1 },
	{ OP_CB_LAYOUTRECALL, 2 }, { OP_CB_NOTIFY, 0 }, { OP_CB_PUSH_DELEG, 0 }, { OP_CB_RECALL_ANY, 0 },
	{ OP_CB_RECALLABLE_OBJ_AVAIL, 0 }, { OP_CB_RECALL_SLOT, 0 }, { OP_CB_SEQUENCE, 0 },
	{ OP_CB_WANTS_CANCELLED, 0 }, { OP_CB_NOTIFY_LOCK, 0 }, { OP_CB_NOTIFY_DEVICEID, 0 }, { 0, 0 }
};

const struct sample_case sample_cb_res_cases[] = {
	{ OP_CB_GETATTR, 0 }, { OP_CB_RECALL, 0 }, { OP_CB_LAYOUTRECALL, 0 }, { OP_CB_NOTIFY, 0 },
	{ OP_CB_PUSH_DELEG, 0 }, { OP_CB_RECALL_ANY, 0 }, { OP_CB_RECALLABLE_OBJ_AVAIL, 0 },
	{ OP_CB_RECALL_SLOT, 0 }, { OP_CB_SEQUENCE, 0 }, { OP_CB_SEQUENCE, 1 },
	{ OP_CB_WANTS_CANCELLED, 0 }, { OP_CB_NOTIFY_LOCK, 0 }, { OP_CB_NOTIFY_DEVICEID, 0 },
	{ OP_CB_ILLEGAL, 0 }, { 0, 0 }
};

/* ---- arguments ------------------------------------------------------------------------------ */

void sample_argop(const struct sample_case *c, nfs_argop4 *out)
{
	__typeof__(out->nfs_argop4_u) *u = &out->nfs_argop4_u;
	int v = c->variant;

	memset(out, 0, sizeof(*out));
	out->argop = (nfs_opnum4)c->op;
	switch (c->op) {
	case OP_ACCESS:
		u->opaccess.access = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXECUTE;
		break;
	case OP_CLOSE:
		u->opclose.seqid = 7;
		u->opclose.open_stateid = sid(3, 0x20);
		break;
	case OP_COMMIT:
		u->opcommit.offset = 4096;
		u->opcommit.count = 65536;
		break;
	case OP_CREATE: {
		CREATE4args *a = &u->opcreate;
		if (v == 0) {
			a->objtype.type = NF4LNK;
			a->objtype.createtype4_u.linkdata.linktext4_len = 9;
			a->objtype.createtype4_u.linkdata.linktext4_val = sample_alloc(9);
			memcpy(a->objtype.createtype4_u.linkdata.linktext4_val, "../target", 9);
		} else if (v == 1) {
			a->objtype.type = NF4BLK;
			a->objtype.createtype4_u.devdata.specdata1 = 8;
			a->objtype.createtype4_u.devdata.specdata2 = 17;
		} else {
			a->objtype.type = NF4DIR;
		}
		a->objname = str(v == 0 ? "link" : v == 1 ? "sdb1" : "subdir");
		a->createattrs = sample_fattr4();
		break;
	}
	case OP_DELEGPURGE:
		u->opdelegpurge.clientid = 0x1122334455667788ull;
		break;
	case OP_DELEGRETURN:
		u->opdelegreturn.deleg_stateid = sid(1, 0x30);
		break;
	case OP_GETATTR:
		u->opgetattr.attr_request = bm(1u << FATTR4_TYPE | 1u << FATTR4_SIZE | 1u << FATTR4_FILEID,
					       1u << (FATTR4_MODE - 32) | 1u << (FATTR4_TIME_MODIFY - 32),
					       1u << (FATTR4_LAYOUT_BLKSIZE - 64));
		break;
	case OP_LINK:
		u->oplink.newname = str("hardlink");
		break;
	case OP_LOCK: {
		LOCK4args *a = &u->oplock;
		a->locktype = WRITE_LT;
		a->reclaim = FALSE;
		a->offset = 100;
		a->length = 200;
		if (v == 0) {
			a->locker.new_lock_owner = TRUE;
			a->locker.locker4_u.open_owner.open_seqid = 4;
			a->locker.locker4_u.open_owner.open_stateid = sid(2, 0x40);
			a->locker.locker4_u.open_owner.lock_seqid = 5;
			owner(&a->locker.locker4_u.open_owner.lock_owner, 0xabcdef, "lockowner-1");
		} else {
			a->locker.new_lock_owner = FALSE;
			a->locker.locker4_u.lock_owner.lock_stateid = sid(6, 0x44);
			a->locker.locker4_u.lock_owner.lock_seqid = 9;
		}
		break;
	}
	case OP_LOCKT:
		u->oplockt.locktype = READ_LT;
		u->oplockt.offset = 0;
		u->oplockt.length = NFS4_UINT64_MAX;
		owner(&u->oplockt.owner, 0xabcdef, "tester");
		break;
	case OP_LOCKU:
		u->oplocku.locktype = WRITE_LT;
		u->oplocku.seqid = 11;
		u->oplocku.lock_stateid = sid(7, 0x48);
		u->oplocku.offset = 100;
		u->oplocku.length = 200;
		break;
	case OP_LOOKUP:
		u->oplookup.objname = str("data.bin");
		break;
	case OP_NVERIFY:
		u->opnverify.obj_attributes = sample_fattr4();
		break;
	case OP_VERIFY:
		u->opverify.obj_attributes = sample_fattr4();
		break;
	case OP_OPEN: {
		OPEN4args *a = &u->opopen;
		a->seqid = 0;
		a->share_access = OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
		a->share_deny = OPEN4_SHARE_DENY_NONE;
		owner(&a->owner, 0x5555aaaa5555aaaaull, "open id:\x01\x02");
		switch (v) {
		case 0: /* create, guarded, by name */
			a->openhow.opentype = OPEN4_CREATE;
			a->openhow.openflag4_u.how.mode = GUARDED4;
			a->openhow.openflag4_u.how.createhow4_u.createattrs = sample_fattr4();
			a->claim.claim = CLAIM_NULL;
			a->claim.open_claim4_u.file = str("newfile");
			break;
		case 1: /* exclusive 4.1 create */
			a->openhow.opentype = OPEN4_CREATE;
			a->openhow.openflag4_u.how.mode = EXCLUSIVE4_1;
			fill(a->openhow.openflag4_u.how.createhow4_u.ch_createboth.cva_verf, NFS4_VERIFIER_SIZE, 9);
			a->openhow.openflag4_u.how.createhow4_u.ch_createboth.cva_attrs = sample_fattr4();
			a->claim.claim = CLAIM_NULL;
			a->claim.open_claim4_u.file = str("exclusive");
			break;
		case 2: /* open by filehandle */
			a->openhow.opentype = OPEN4_NOCREATE;
			a->claim.claim = CLAIM_FH;
			break;
		case 3: /* reclaim after a server restart */
			a->openhow.opentype = OPEN4_NOCREATE;
			a->claim.claim = CLAIM_PREVIOUS;
			a->claim.open_claim4_u.delegate_type = OPEN_DELEGATE_READ;
			break;
		default:
			a->openhow.opentype = OPEN4_CREATE;
			a->openhow.openflag4_u.how.mode = EXCLUSIVE4;
			fill(a->openhow.openflag4_u.how.createhow4_u.createverf, NFS4_VERIFIER_SIZE, 3);
			a->claim.claim = CLAIM_DELEGATE_CUR;
			a->claim.open_claim4_u.delegate_cur_info.delegate_stateid = sid(12, 0x50);
			a->claim.open_claim4_u.delegate_cur_info.file = str("delegated");
			break;
		}
		break;
	}
	case OP_OPENATTR:
		u->opopenattr.createdir = TRUE;
		break;
	case OP_OPEN_CONFIRM:
		u->opopen_confirm.open_stateid = sid(1, 0x52);
		u->opopen_confirm.seqid = 2;
		break;
	case OP_OPEN_DOWNGRADE:
		u->opopen_downgrade.open_stateid = sid(4, 0x54);
		u->opopen_downgrade.seqid = 3;
		u->opopen_downgrade.share_access = OPEN4_SHARE_ACCESS_READ;
		u->opopen_downgrade.share_deny = OPEN4_SHARE_DENY_NONE;
		break;
	case OP_PUTFH:
		u->opputfh.object = fh(0x60, 28);
		break;
	case OP_READ:
		u->opread.stateid = sid(1, 0x62);
		u->opread.offset = 1ull << 33;
		u->opread.count = 1 << 20;
		break;
	case OP_READDIR:
		u->opreaddir.cookie = 3;
		fill(u->opreaddir.cookieverf, NFS4_VERIFIER_SIZE, 0x64);
		u->opreaddir.dircount = 8192;
		u->opreaddir.maxcount = 32768;
		u->opreaddir.attr_request = bm(1u << FATTR4_TYPE | 1u << FATTR4_FILEID, 1u << (FATTR4_MODE - 32), 0);
		break;
	case OP_REMOVE:
		u->opremove.target = str("old.txt");
		break;
	case OP_RENAME:
		u->oprename.oldname = str("a.tmp");
		u->oprename.newname = str("a.final");
		break;
	case OP_RENEW:
		u->oprenew.clientid = 99;
		break;
	case OP_SECINFO:
		u->opsecinfo.name = str("export");
		break;
	case OP_SETATTR:
		u->opsetattr.stateid = sid(2, 0x66);
		u->opsetattr.obj_attributes = sample_fattr4();
		break;
	case OP_SETCLIENTID:
		fill(u->opsetclientid.client.verifier, NFS4_VERIFIER_SIZE, 1);
		opaque_copy(&u->opsetclientid.client.id.id_len, &u->opsetclientid.client.id.id_val, "v40-client", 10);
		u->opsetclientid.callback.cb_program = 0x40000000;
		u->opsetclientid.callback.cb_location.na_r_netid = sample_alloc(8);
		strcpy(u->opsetclientid.callback.cb_location.na_r_netid, "tcp");
		u->opsetclientid.callback.cb_location.na_r_addr = sample_alloc(32);
		strcpy(u->opsetclientid.callback.cb_location.na_r_addr, "127.0.0.1.3.255");
		u->opsetclientid.callback_ident = 5;
		break;
	case OP_SETCLIENTID_CONFIRM:
		u->opsetclientid_confirm.clientid = 7;
		fill(u->opsetclientid_confirm.setclientid_confirm, NFS4_VERIFIER_SIZE, 2);
		break;
	case OP_WRITE: {
		static const u_int n = 301; /* not a multiple of 4: exercises the padding */
		u->opwrite.stateid = sid(5, 0x68);
		u->opwrite.offset = 8192;
		u->opwrite.stable = FILE_SYNC4;
		u->opwrite.data.data_len = n;
		u->opwrite.data.data_val = sample_alloc(n);
		fill(u->opwrite.data.data_val, n, 0x6a);
		break;
	}
	case OP_RELEASE_LOCKOWNER:
		owner(&u->oprelease_lockowner.lock_owner, 12, "lo");
		break;
	case OP_BACKCHANNEL_CTL:
		u->opbackchannel_ctl.bca_cb_program = NFS4_CALLBACK;
		u->opbackchannel_ctl.bca_sec_parms.bca_sec_parms_val =
			cb_sec(&u->opbackchannel_ctl.bca_sec_parms.bca_sec_parms_len);
		break;
	case OP_BIND_CONN_TO_SESSION:
		fill(u->opbind_conn_to_session.bctsa_sessid, NFS4_SESSIONID_SIZE, 0x70);
		u->opbind_conn_to_session.bctsa_dir = CDFC4_BACK_OR_BOTH;
		u->opbind_conn_to_session.bctsa_use_conn_in_rdma_mode = FALSE;
		break;
	case OP_EXCHANGE_ID: {
		EXCHANGE_ID4args *a = &u->opexchange_id;
		fill(a->eia_clientowner.co_verifier, NFS4_VERIFIER_SIZE, 0x72);
		opaque_copy(&a->eia_clientowner.co_ownerid.co_ownerid_len, &a->eia_clientowner.co_ownerid.co_ownerid_val,
			    "Linux NFSv4.1 client-7", 22);
		a->eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS | EXCHGID4_FLAG_SUPP_MOVED_REFER;
		if (v == 0) {
			a->eia_state_protect.spa_how = SP4_NONE;
			a->eia_client_impl_id.eia_client_impl_id_len = 1;
			a->eia_client_impl_id.eia_client_impl_id_val = sample_alloc(sizeof(nfs_impl_id4));
			impl_id(a->eia_client_impl_id.eia_client_impl_id_val, "libpnfs 0.1");
		} else if (v == 1) {
			a->eia_state_protect.spa_how = SP4_MACH_CRED;
			a->eia_state_protect.state_protect4_a_u.spa_mach_ops.spo_must_enforce =
				bm(0, 1u << (OP_BIND_CONN_TO_SESSION - 32) | 1u << (OP_DESTROY_SESSION - 32), 0);
			a->eia_state_protect.state_protect4_a_u.spa_mach_ops.spo_must_allow = bm(1u << OP_CLOSE, 0, 0);
		} else {
			ssv_sp_parms4 *s = &a->eia_state_protect.state_protect4_a_u.spa_ssv_parms;
			sec_oid4 *oid = sample_alloc(sizeof(*oid));
			a->eia_state_protect.spa_how = SP4_SSV;
			s->ssp_ops.spo_must_enforce = bm(1, 0, 0);
			s->ssp_ops.spo_must_allow = bm(2, 0, 0);
			opaque_copy(&oid->sec_oid4_len, &oid->sec_oid4_val, "\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01", 11);
			s->ssp_hash_algs.ssp_hash_algs_len = 1;
			s->ssp_hash_algs.ssp_hash_algs_val = oid;
			s->ssp_window = 16;
			s->ssp_num_gss_handles = 2;
		}
		break;
	}
	case OP_CREATE_SESSION: {
		CREATE_SESSION4args *a = &u->opcreate_session;
		a->csa_clientid = 0x0123456789abcdefull;
		a->csa_sequence = 1;
		a->csa_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		a->csa_fore_chan_attrs = chan(1);
		a->csa_back_chan_attrs = chan(2);
		a->csa_cb_program = NFS4_CALLBACK;
		a->csa_sec_parms.csa_sec_parms_val = cb_sec(&a->csa_sec_parms.csa_sec_parms_len);
		break;
	}
	case OP_DESTROY_SESSION:
		fill(u->opdestroy_session.dsa_sessionid, NFS4_SESSIONID_SIZE, 0x74);
		break;
	case OP_FREE_STATEID:
		u->opfree_stateid.fsa_stateid = sid(8, 0x76);
		break;
	case OP_GET_DIR_DELEGATION:
		u->opget_dir_delegation.gdda_signal_deleg_avail = TRUE;
		u->opget_dir_delegation.gdda_notification_types = bm(1u << NOTIFY4_ADD_ENTRY, 0, 0);
		u->opget_dir_delegation.gdda_child_attr_delay = when(1, 0);
		u->opget_dir_delegation.gdda_dir_attr_delay = when(2, 500);
		u->opget_dir_delegation.gdda_child_attributes = bm(1u << FATTR4_SIZE, 0, 0);
		u->opget_dir_delegation.gdda_dir_attributes = bm(1u << FATTR4_CHANGE, 0, 0);
		break;
	case OP_GETDEVICEINFO:
		sample_deviceid(u->opgetdeviceinfo.gdia_device_id, 0x10);
		u->opgetdeviceinfo.gdia_layout_type = LAYOUT4_BLOCK_VOLUME;
		u->opgetdeviceinfo.gdia_maxcount = 65536;
		u->opgetdeviceinfo.gdia_notify_types = bm(1u << NOTIFY_DEVICEID4_CHANGE | 1u << NOTIFY_DEVICEID4_DELETE, 0, 0);
		break;
	case OP_GETDEVICELIST:
		u->opgetdevicelist.gdla_layout_type = LAYOUT4_BLOCK_VOLUME;
		u->opgetdevicelist.gdla_maxdevices = 16;
		u->opgetdevicelist.gdla_cookie = 0;
		fill(u->opgetdevicelist.gdla_cookieverf, NFS4_VERIFIER_SIZE, 0x78);
		break;
	case OP_LAYOUTCOMMIT: {
		LAYOUTCOMMIT4args *a = &u->oplayoutcommit;
		a->loca_offset = 0;
		a->loca_length = 2 << 20;
		a->loca_reclaim = FALSE;
		a->loca_stateid = sid(3, 0x7a);
		if (v == 0) {
			a->loca_last_write_offset.no_newoffset = TRUE;
			a->loca_last_write_offset.newoffset4_u.no_offset = (2 << 20) - 1;
			a->loca_time_modify.nt_timechanged = TRUE;
			a->loca_time_modify.newtime4_u.nt_time = when(1700000003, 999);
		} else {
			a->loca_last_write_offset.no_newoffset = FALSE;
			a->loca_time_modify.nt_timechanged = FALSE;
		}
		a->loca_layoutupdate = block_update();
		break;
	}
	case OP_LAYOUTGET:
		u->oplayoutget.loga_signal_layout_avail = FALSE;
		u->oplayoutget.loga_layout_type = LAYOUT4_BLOCK_VOLUME;
		u->oplayoutget.loga_iomode = LAYOUTIOMODE4_RW;
		u->oplayoutget.loga_offset = 0;
		u->oplayoutget.loga_length = NFS4_UINT64_MAX;
		u->oplayoutget.loga_minlength = 4096;
		u->oplayoutget.loga_stateid = sid(1, 0x7c);
		u->oplayoutget.loga_maxcount = 4096;
		break;
	case OP_LAYOUTRETURN: {
		LAYOUTRETURN4args *a = &u->oplayoutreturn;
		a->lora_reclaim = FALSE;
		a->lora_layout_type = LAYOUT4_BLOCK_VOLUME;
		a->lora_iomode = LAYOUTIOMODE4_ANY;
		if (v == 0) {
			a->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
			a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_offset = 0;
			a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_length = NFS4_UINT64_MAX;
			a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_stateid = sid(2, 0x7e);
		} else {
			a->lora_layoutreturn.lr_returntype = v == 1 ? LAYOUTRETURN4_FSID : LAYOUTRETURN4_ALL;
		}
		break;
	}
	case OP_SECINFO_NO_NAME:
		u->opsecinfo_no_name = SECINFO_STYLE4_PARENT;
		break;
	case OP_SEQUENCE:
		fill(u->opsequence.sa_sessionid, NFS4_SESSIONID_SIZE, 0x70);
		u->opsequence.sa_sequenceid = 42;
		u->opsequence.sa_slotid = 3;
		u->opsequence.sa_highest_slotid = 7;
		u->opsequence.sa_cachethis = TRUE;
		break;
	case OP_SET_SSV:
		opaque_copy(&u->opset_ssv.ssa_ssv.ssa_ssv_len, &u->opset_ssv.ssa_ssv.ssa_ssv_val, "0123456789abcdef", 16);
		opaque_copy(&u->opset_ssv.ssa_digest.ssa_digest_len, &u->opset_ssv.ssa_digest.ssa_digest_val, "digest", 6);
		break;
	case OP_TEST_STATEID: {
		stateid4 *s = sample_alloc(3 * sizeof(*s));
		s[0] = sid(1, 0x80);
		s[1] = sid(2, 0x90);
		s[2] = sid(3, 0xa0);
		u->optest_stateid.ts_stateids.ts_stateids_len = 3;
		u->optest_stateid.ts_stateids.ts_stateids_val = s;
		break;
	}
	case OP_WANT_DELEGATION:
		u->opwant_delegation.wda_want = OPEN4_SHARE_ACCESS_WANT_READ_DELEG;
		u->opwant_delegation.wda_claim.dc_claim = CLAIM_PREVIOUS;
		u->opwant_delegation.wda_claim.deleg_claim4_u.dc_delegate_type = OPEN_DELEGATE_WRITE;
		break;
	case OP_DESTROY_CLIENTID:
		u->opdestroy_clientid.dca_clientid = 0x0123456789abcdefull;
		break;
	case OP_RECLAIM_COMPLETE:
		u->opreclaim_complete.rca_one_fs = FALSE;
		break;
	default: /* GETFH, LOOKUPP, PUTPUBFH, PUTROOTFH, READLINK, RESTOREFH, SAVEFH: no arguments */
		break;
	}
}

/* ---- results ---------------------------------------------------------------------------------- */

static entry4 *dir_entries(unsigned n)
{
	entry4 *head = NULL, **tail = &head;
	char name[16];

	for (unsigned i = 0; i < n; i++) {
		entry4 *e = sample_alloc(sizeof(*e));
		snprintf(name, sizeof(name), "file-%u", i);
		e->cookie = 100 + i;
		e->name = str(name);
		e->attrs = sample_getattr_fattr4(1000 + i);
		*tail = e;
		tail = &e->nextentry;
	}
	return head;
}

static SECINFO4res secinfo(void)
{
	SECINFO4res r;
	secinfo4 *s = sample_alloc(2 * sizeof(*s));

	memset(&r, 0, sizeof(r));
	s[0].flavor = RPCSEC_GSS;
	opaque_copy(&s[0].secinfo4_u.flavor_info.oid.sec_oid4_len, &s[0].secinfo4_u.flavor_info.oid.sec_oid4_val,
		    "\x2a\x86\x48\x86\xf7\x12\x01\x02\x02", 9);
	s[0].secinfo4_u.flavor_info.qop = 0;
	s[0].secinfo4_u.flavor_info.service = RPC_GSS_SVC_PRIVACY;
	s[1].flavor = AUTH_SYS;
	r.status = NFS4_OK;
	r.SECINFO4res_u.resok4.SECINFO4resok_len = 2;
	r.SECINFO4res_u.resok4.SECINFO4resok_val = s;
	return r;
}

void sample_resop(const struct sample_case *c, nfs_resop4 *out)
{
	__typeof__(out->nfs_resop4_u) *u = &out->nfs_resop4_u;
	int v = c->variant;

	memset(out, 0, sizeof(*out));
	out->resop = (nfs_opnum4)c->op;
	switch (c->op) {
	case OP_ACCESS:
		u->opaccess.ACCESS4res_u.resok4.supported = 0x3f;
		u->opaccess.ACCESS4res_u.resok4.access = ACCESS4_READ | ACCESS4_LOOKUP;
		break;
	case OP_CLOSE:
		u->opclose.CLOSE4res_u.open_stateid = sid(4, 0x21);
		break;
	case OP_COMMIT:
		fill(u->opcommit.COMMIT4res_u.resok4.writeverf, NFS4_VERIFIER_SIZE, 0x23);
		break;
	case OP_CREATE:
		u->opcreate.CREATE4res_u.resok4.cinfo = cinfo(55);
		u->opcreate.CREATE4res_u.resok4.attrset = bm(0, 1u << (FATTR4_MODE - 32), 0);
		break;
	case OP_GETATTR:
		u->opgetattr.GETATTR4res_u.resok4.obj_attributes = sample_getattr_fattr4(42);
		break;
	case OP_GETFH:
		u->opgetfh.GETFH4res_u.resok4.object = fh(0x61, 36);
		break;
	case OP_LINK:
		u->oplink.LINK4res_u.resok4.cinfo = cinfo(66);
		break;
	case OP_LOCK:
		if (v == 0) {
			u->oplock.LOCK4res_u.resok4.lock_stateid = sid(1, 0x41);
		} else {
			u->oplock.status = NFS4ERR_DENIED;
			u->oplock.LOCK4res_u.denied.offset = 10;
			u->oplock.LOCK4res_u.denied.length = 20;
			u->oplock.LOCK4res_u.denied.locktype = WRITE_LT;
			owner(&u->oplock.LOCK4res_u.denied.owner, 0x77, "holder");
		}
		break;
	case OP_LOCKT:
		if (v == 1) {
			u->oplockt.status = NFS4ERR_DENIED;
			u->oplockt.LOCKT4res_u.denied.offset = 1;
			u->oplockt.LOCKT4res_u.denied.length = 2;
			u->oplockt.LOCKT4res_u.denied.locktype = READ_LT;
			owner(&u->oplockt.LOCKT4res_u.denied.owner, 0x78, "other");
		}
		break;
	case OP_LOCKU:
		u->oplocku.LOCKU4res_u.lock_stateid = sid(8, 0x49);
		break;
	case OP_OPEN: {
		OPEN4resok *r = &u->opopen.OPEN4res_u.resok4;
		r->stateid = sid(1, 0x51);
		r->cinfo = cinfo(88);
		r->rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
		r->attrset = bm(1u << FATTR4_SIZE, 1u << (FATTR4_MODE - 32), 0);
		switch (v) {
		case 0:
			r->delegation.delegation_type = OPEN_DELEGATE_NONE;
			break;
		case 1:
			r->delegation.delegation_type = OPEN_DELEGATE_READ;
			r->delegation.open_delegation4_u.read.stateid = sid(2, 0x53);
			r->delegation.open_delegation4_u.read.recall = FALSE;
			r->delegation.open_delegation4_u.read.permissions = ace();
			break;
		case 2:
			r->delegation.delegation_type = OPEN_DELEGATE_WRITE;
			r->delegation.open_delegation4_u.write.stateid = sid(3, 0x55);
			r->delegation.open_delegation4_u.write.recall = TRUE;
			r->delegation.open_delegation4_u.write.space_limit.limitby = NFS_LIMIT_BLOCKS;
			r->delegation.open_delegation4_u.write.space_limit.nfs_space_limit4_u.mod_blocks.num_blocks = 10;
			r->delegation.open_delegation4_u.write.space_limit.nfs_space_limit4_u.mod_blocks.bytes_per_block = 4096;
			r->delegation.open_delegation4_u.write.permissions = ace();
			break;
		default:
			r->delegation.delegation_type = OPEN_DELEGATE_NONE_EXT;
			r->delegation.open_delegation4_u.od_whynone.ond_why = WND4_CONTENTION;
			r->delegation.open_delegation4_u.od_whynone.open_none_delegation4_u.ond_server_will_push_deleg = TRUE;
			break;
		}
		break;
	}
	case OP_OPEN_CONFIRM:
		u->opopen_confirm.OPEN_CONFIRM4res_u.resok4.open_stateid = sid(2, 0x57);
		break;
	case OP_OPEN_DOWNGRADE:
		u->opopen_downgrade.OPEN_DOWNGRADE4res_u.resok4.open_stateid = sid(5, 0x59);
		break;
	case OP_READ: {
		static const u_int n = 1027;
		u->opread.READ4res_u.resok4.eof = TRUE;
		u->opread.READ4res_u.resok4.data.data_len = n;
		u->opread.READ4res_u.resok4.data.data_val = sample_alloc(n);
		fill(u->opread.READ4res_u.resok4.data.data_val, n, 0x63);
		break;
	}
	case OP_READDIR:
		fill(u->opreaddir.READDIR4res_u.resok4.cookieverf, NFS4_VERIFIER_SIZE, 0x65);
		u->opreaddir.READDIR4res_u.resok4.reply.entries = v == 0 ? dir_entries(3) : NULL;
		u->opreaddir.READDIR4res_u.resok4.reply.eof = TRUE;
		break;
	case OP_READLINK:
		u->opreadlink.READLINK4res_u.resok4.link.linktext4_len = 12;
		u->opreadlink.READLINK4res_u.resok4.link.linktext4_val = sample_alloc(12);
		memcpy(u->opreadlink.READLINK4res_u.resok4.link.linktext4_val, "/mnt/x/y/zzz", 12);
		break;
	case OP_REMOVE:
		u->opremove.REMOVE4res_u.resok4.cinfo = cinfo(99);
		break;
	case OP_RENAME:
		u->oprename.RENAME4res_u.resok4.source_cinfo = cinfo(10);
		u->oprename.RENAME4res_u.resok4.target_cinfo = cinfo(20);
		break;
	case OP_SECINFO:
		u->opsecinfo = secinfo();
		break;
	case OP_SECINFO_NO_NAME:
		u->opsecinfo_no_name = secinfo();
		break;
	case OP_SETATTR:
		u->opsetattr.status = NFS4_OK;
		u->opsetattr.attrsset = bm(1u << FATTR4_SIZE, 1u << (FATTR4_MODE - 32), 0);
		break;
	case OP_SETCLIENTID:
		if (v == 0) {
			u->opsetclientid.SETCLIENTID4res_u.resok4.clientid = 5;
			fill(u->opsetclientid.SETCLIENTID4res_u.resok4.setclientid_confirm, NFS4_VERIFIER_SIZE, 6);
		} else {
			u->opsetclientid.status = NFS4ERR_CLID_INUSE;
			u->opsetclientid.SETCLIENTID4res_u.client_using.na_r_netid = sample_alloc(8);
			strcpy(u->opsetclientid.SETCLIENTID4res_u.client_using.na_r_netid, "tcp6");
			u->opsetclientid.SETCLIENTID4res_u.client_using.na_r_addr = sample_alloc(16);
			strcpy(u->opsetclientid.SETCLIENTID4res_u.client_using.na_r_addr, "::1.8.1");
		}
		break;
	case OP_WRITE:
		u->opwrite.WRITE4res_u.resok4.count = 301;
		u->opwrite.WRITE4res_u.resok4.committed = FILE_SYNC4;
		fill(u->opwrite.WRITE4res_u.resok4.writeverf, NFS4_VERIFIER_SIZE, 0x69);
		break;
	case OP_BIND_CONN_TO_SESSION:
		fill(u->opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4.bctsr_sessid, NFS4_SESSIONID_SIZE, 0x70);
		u->opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4.bctsr_dir = CDFS4_BOTH;
		break;
	case OP_EXCHANGE_ID: {
		EXCHANGE_ID4resok *r = &u->opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
		r->eir_clientid = 0x0123456789abcdefull;
		r->eir_sequenceid = 1;
		r->eir_flags = EXCHGID4_FLAG_USE_PNFS_MDS | EXCHGID4_FLAG_CONFIRMED_R;
		r->eir_state_protect.spr_how = SP4_NONE;
		r->eir_server_owner.so_minor_id = 2;
		opaque_copy(&r->eir_server_owner.so_major_id.so_major_id_len, &r->eir_server_owner.so_major_id.so_major_id_val,
			    "pnfs-mds@host", 13);
		opaque_copy(&r->eir_server_scope.eir_server_scope_len, &r->eir_server_scope.eir_server_scope_val, "pool-1", 6);
		r->eir_server_impl_id.eir_server_impl_id_len = 1;
		r->eir_server_impl_id.eir_server_impl_id_val = sample_alloc(sizeof(nfs_impl_id4));
		impl_id(r->eir_server_impl_id.eir_server_impl_id_val, "pnfs-mds 0.1");
		break;
	}
	case OP_CREATE_SESSION: {
		CREATE_SESSION4resok *r = &u->opcreate_session.CREATE_SESSION4res_u.csr_resok4;
		fill(r->csr_sessionid, NFS4_SESSIONID_SIZE, 0x70);
		r->csr_sequence = 1;
		r->csr_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		r->csr_fore_chan_attrs = chan(1);
		r->csr_back_chan_attrs = chan(2);
		break;
	}
	case OP_GET_DIR_DELEGATION:
		if (v == 0) {
			GET_DIR_DELEGATION4resok *r =
				&u->opget_dir_delegation.GET_DIR_DELEGATION4res_u.gddr_res_non_fatal4.GET_DIR_DELEGATION4res_non_fatal_u.gddrnf_resok4;
			u->opget_dir_delegation.GET_DIR_DELEGATION4res_u.gddr_res_non_fatal4.gddrnf_status = GDD4_OK;
			fill(r->gddr_cookieverf, NFS4_VERIFIER_SIZE, 0x71);
			r->gddr_stateid = sid(3, 0x73);
			r->gddr_notification = bm(1, 0, 0);
			r->gddr_child_attributes = bm(2, 0, 0);
			r->gddr_dir_attributes = bm(4, 0, 0);
		} else {
			u->opget_dir_delegation.GET_DIR_DELEGATION4res_u.gddr_res_non_fatal4.gddrnf_status = GDD4_UNAVAIL;
			u->opget_dir_delegation.GET_DIR_DELEGATION4res_u.gddr_res_non_fatal4.GET_DIR_DELEGATION4res_non_fatal_u
				.gddrnf_will_signal_deleg_avail = TRUE;
		}
		break;
	case OP_GETDEVICEINFO:
		if (v == 0) {
			u->opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_device_addr = block_devaddr();
			u->opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4.gdir_notification = bm(1u << NOTIFY_DEVICEID4_CHANGE, 0, 0);
		} else {
			u->opgetdeviceinfo.gdir_status = NFS4ERR_TOOSMALL;
			u->opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_mincount = 12345;
		}
		break;
	case OP_GETDEVICELIST: {
		GETDEVICELIST4resok *r = &u->opgetdevicelist.GETDEVICELIST4res_u.gdlr_resok4;
		deviceid4 *ids = sample_alloc(2 * sizeof(deviceid4));
		r->gdlr_cookie = 2;
		fill(r->gdlr_cookieverf, NFS4_VERIFIER_SIZE, 0x79);
		sample_deviceid(ids[0], 0x10);
		sample_deviceid(ids[1], 0x11);
		r->gdlr_deviceid_list.gdlr_deviceid_list_len = 2;
		r->gdlr_deviceid_list.gdlr_deviceid_list_val = ids;
		r->gdlr_eof = TRUE;
		break;
	}
	case OP_LAYOUTCOMMIT:
		if (v == 0) {
			u->oplayoutcommit.LAYOUTCOMMIT4res_u.locr_resok4.locr_newsize.ns_sizechanged = TRUE;
			u->oplayoutcommit.LAYOUTCOMMIT4res_u.locr_resok4.locr_newsize.newsize4_u.ns_size = 2 << 20;
		}
		break;
	case OP_LAYOUTGET:
		if (v == 0) {
			LAYOUTGET4resok *r = &u->oplayoutget.LAYOUTGET4res_u.logr_resok4;
			layout4 *l = sample_alloc(sizeof(*l));
			r->logr_return_on_close = TRUE;
			r->logr_stateid = sid(2, 0x7d);
			l->lo_offset = 0;
			l->lo_length = 4 << 20;
			l->lo_iomode = LAYOUTIOMODE4_RW;
			l->lo_content = block_content(4);
			r->logr_layout.logr_layout_len = 1;
			r->logr_layout.logr_layout_val = l;
		} else {
			u->oplayoutget.logr_status = NFS4ERR_LAYOUTTRYLATER;
			u->oplayoutget.LAYOUTGET4res_u.logr_will_signal_layout_avail = TRUE;
		}
		break;
	case OP_LAYOUTRETURN:
		if (v == 0) {
			u->oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid.lrs_present = TRUE;
			u->oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid.layoutreturn_stateid_u.lrs_stateid = sid(3, 0x7f);
		}
		break;
	case OP_SEQUENCE:
		if (v == 0) {
			SEQUENCE4resok *r = &u->opsequence.SEQUENCE4res_u.sr_resok4;
			fill(r->sr_sessionid, NFS4_SESSIONID_SIZE, 0x70);
			r->sr_sequenceid = 42;
			r->sr_slotid = 3;
			r->sr_highest_slotid = 63;
			r->sr_target_highest_slotid = 63;
			r->sr_status_flags = SEQ4_STATUS_RECALLABLE_STATE_REVOKED;
		} else {
			u->opsequence.sr_status = NFS4ERR_BADSESSION;
		}
		break;
	case OP_SET_SSV:
		opaque_copy(&u->opset_ssv.SET_SSV4res_u.ssr_resok4.ssr_digest.ssr_digest_len,
			    &u->opset_ssv.SET_SSV4res_u.ssr_resok4.ssr_digest.ssr_digest_val, "srvdigest", 9);
		break;
	case OP_TEST_STATEID: {
		nfsstat4 *s = sample_alloc(3 * sizeof(*s));
		s[0] = NFS4_OK;
		s[1] = NFS4ERR_BAD_STATEID;
		s[2] = NFS4ERR_OLD_STATEID;
		u->optest_stateid.TEST_STATEID4res_u.tsr_resok4.tsr_status_codes.tsr_status_codes_len = 3;
		u->optest_stateid.TEST_STATEID4res_u.tsr_resok4.tsr_status_codes.tsr_status_codes_val = s;
		break;
	}
	case OP_WANT_DELEGATION:
		u->opwant_delegation.WANT_DELEGATION4res_u.wdr_resok4.delegation_type = OPEN_DELEGATE_NONE_EXT;
		u->opwant_delegation.WANT_DELEGATION4res_u.wdr_resok4.open_delegation4_u.od_whynone.ond_why = WND4_NOT_WANTED;
		break;
	case OP_ILLEGAL:
		u->opillegal.status = NFS4ERR_OP_ILLEGAL;
		break;
	default: /* status-only results, NFS4_OK */
		break;
	}
}

/* ---- callbacks ---------------------------------------------------------------------------- */

static notify4 *deviceid_changes(u_int *n)
{
	notify4 *nt = sample_alloc(2 * sizeof(*nt));
	notify_deviceid_change4 ch = { .ndc_layouttype = LAYOUT4_BLOCK_VOLUME, .ndc_immediate = TRUE };
	notify_deviceid_delete4 del = { .ndd_layouttype = LAYOUT4_BLOCK_VOLUME };
	void *buf;
	size_t len;

	sample_deviceid(ch.ndc_deviceid, 0x10);
	sample_deviceid(del.ndd_deviceid, 0x12);
	nt[0].notify_mask = bm(1u << NOTIFY_DEVICEID4_CHANGE, 0, 0);
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_notify_deviceid_change4, &ch, &buf, &len) == 0);
	opaque_copy(&nt[0].notify_vals.notifylist4_len, &nt[0].notify_vals.notifylist4_val, buf, len);
	free(buf);
	nt[1].notify_mask = bm(1u << NOTIFY_DEVICEID4_DELETE, 0, 0);
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_notify_deviceid_delete4, &del, &buf, &len) == 0);
	opaque_copy(&nt[1].notify_vals.notifylist4_len, &nt[1].notify_vals.notifylist4_val, buf, len);
	free(buf);
	*n = 2;
	return nt;
}

void sample_cb_argop(const struct sample_case *c, nfs_cb_argop4 *out)
{
	__typeof__(out->nfs_cb_argop4_u) *u = &out->nfs_cb_argop4_u;
	int v = c->variant;

	memset(out, 0, sizeof(*out));
	out->argop = c->op;
	switch (c->op) {
	case OP_CB_GETATTR:
		u->opcbgetattr.fh = fh(0x60, 28);
		u->opcbgetattr.attr_request = bm(1u << FATTR4_SIZE | 1u << FATTR4_CHANGE, 0, 0);
		break;
	case OP_CB_RECALL:
		u->opcbrecall.stateid = sid(1, 0x31);
		u->opcbrecall.truncate = TRUE;
		u->opcbrecall.fh = fh(0x60, 28);
		break;
	case OP_CB_LAYOUTRECALL: {
		CB_LAYOUTRECALL4args *a = &u->opcblayoutrecall;
		a->clora_type = LAYOUT4_BLOCK_VOLUME;
		a->clora_iomode = LAYOUTIOMODE4_ANY;
		a->clora_changed = TRUE;
		if (v == 0) {
			a->clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
			a->clora_recall.layoutrecall4_u.lor_layout.lor_fh = fh(0x60, 28);
			a->clora_recall.layoutrecall4_u.lor_layout.lor_offset = 1 << 20;
			a->clora_recall.layoutrecall4_u.lor_layout.lor_length = NFS4_UINT64_MAX;
			a->clora_recall.layoutrecall4_u.lor_layout.lor_stateid = sid(4, 0x7d);
		} else if (v == 1) {
			a->clora_recall.lor_recalltype = LAYOUTRECALL4_FSID;
			a->clora_recall.layoutrecall4_u.lor_fsid.major = 1;
			a->clora_recall.layoutrecall4_u.lor_fsid.minor = 2;
		} else {
			a->clora_recall.lor_recalltype = LAYOUTRECALL4_ALL;
		}
		break;
	}
	case OP_CB_NOTIFY: {
		notify4 *nt = sample_alloc(sizeof(*nt));
		u->opcbnotify.cna_stateid = sid(1, 0x33);
		u->opcbnotify.cna_fh = fh(0x62, 20);
		nt->notify_mask = bm(1u << NOTIFY4_CHANGE_DIR_ATTRS, 0, 0);
		opaque_copy(&nt->notify_vals.notifylist4_len, &nt->notify_vals.notifylist4_val, "\0\0\0\0\0\0\0\0", 8);
		u->opcbnotify.cna_changes.cna_changes_len = 1;
		u->opcbnotify.cna_changes.cna_changes_val = nt;
		break;
	}
	case OP_CB_PUSH_DELEG:
		u->opcbpush_deleg.cpda_fh = fh(0x64, 24);
		u->opcbpush_deleg.cpda_delegation.delegation_type = OPEN_DELEGATE_READ;
		u->opcbpush_deleg.cpda_delegation.open_delegation4_u.read.stateid = sid(9, 0x35);
		u->opcbpush_deleg.cpda_delegation.open_delegation4_u.read.permissions = ace();
		break;
	case OP_CB_RECALL_ANY:
		u->opcbrecall_any.craa_objects_to_keep = 0;
		u->opcbrecall_any.craa_type_mask = bm(1u << RCA4_TYPE_MASK_BLK_LAYOUT, 0, 0);
		break;
	case OP_CB_RECALLABLE_OBJ_AVAIL:
		u->opcbrecallable_obj_avail.craa_objects_to_keep = 4;
		u->opcbrecallable_obj_avail.craa_type_mask = bm(1u << RCA4_TYPE_MASK_RDATA_DLG, 0, 0);
		break;
	case OP_CB_RECALL_SLOT:
		u->opcbrecall_slot.rsa_target_highest_slotid = 3;
		break;
	case OP_CB_SEQUENCE: {
		CB_SEQUENCE4args *a = &u->opcbsequence;
		referring_call_list4 *l = sample_alloc(sizeof(*l));
		referring_call4 *rc = sample_alloc(2 * sizeof(*rc));
		fill(a->csa_sessionid, NFS4_SESSIONID_SIZE, 0x70);
		a->csa_sequenceid = 9;
		a->csa_slotid = 0;
		a->csa_highest_slotid = 0;
		a->csa_cachethis = FALSE;
		fill(l->rcl_sessionid, NFS4_SESSIONID_SIZE, 0x70);
		rc[0] = (referring_call4){ 42, 3 };
		rc[1] = (referring_call4){ 43, 4 };
		l->rcl_referring_calls.rcl_referring_calls_len = 2;
		l->rcl_referring_calls.rcl_referring_calls_val = rc;
		a->csa_referring_call_lists.csa_referring_call_lists_len = 1;
		a->csa_referring_call_lists.csa_referring_call_lists_val = l;
		break;
	}
	case OP_CB_WANTS_CANCELLED:
		u->opcbwants_cancelled.cwca_contended_wants_cancelled = TRUE;
		u->opcbwants_cancelled.cwca_resourced_wants_cancelled = FALSE;
		break;
	case OP_CB_NOTIFY_LOCK:
		u->opcbnotify_lock.cnla_fh = fh(0x66, 16);
		owner(&u->opcbnotify_lock.cnla_lock_owner, 0x99, "waiter");
		break;
	case OP_CB_NOTIFY_DEVICEID:
		u->opcbnotify_deviceid.cnda_changes.cnda_changes_val =
			deviceid_changes(&u->opcbnotify_deviceid.cnda_changes.cnda_changes_len);
		break;
	}
}

void sample_cb_resop(const struct sample_case *c, nfs_cb_resop4 *out)
{
	__typeof__(out->nfs_cb_resop4_u) *u = &out->nfs_cb_resop4_u;

	memset(out, 0, sizeof(*out));
	out->resop = c->op;
	switch (c->op) {
	case OP_CB_GETATTR:
		u->opcbgetattr.CB_GETATTR4res_u.resok4.obj_attributes = sample_getattr_fattr4(7);
		break;
	case OP_CB_LAYOUTRECALL:
		u->opcblayoutrecall.clorr_status = NFS4ERR_NOMATCHING_LAYOUT;
		break;
	case OP_CB_SEQUENCE:
		if (c->variant == 0) {
			CB_SEQUENCE4resok *r = &u->opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
			fill(r->csr_sessionid, NFS4_SESSIONID_SIZE, 0x70);
			r->csr_sequenceid = 9;
			r->csr_slotid = 0;
			r->csr_highest_slotid = 0;
			r->csr_target_highest_slotid = 0;
		} else {
			u->opcbsequence.csr_status = NFS4ERR_SEQ_MISORDERED;
		}
		break;
	case OP_CB_ILLEGAL:
		u->opcbillegal.status = NFS4ERR_OP_ILLEGAL;
		break;
	default:
		break;
	}
}
