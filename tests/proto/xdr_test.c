/* The generated XDR on real values: every argument and result type round-trips (encode, decode,
 * encode again: same bytes, same fields), every proper prefix of an encoding is rejected, and
 * every cap and union discriminant refuses what it must. Run under `make asan` for over-reads. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Encode, decode, re-encode; compare bytes; reject every truncation and a trailing byte.
 * Returns the encoded length; *out (if not NULL) keeps the decoded copy for field checks. */
static size_t roundtrip(xdrproc_t proc, const void *obj, size_t size, void *out)
{
	void *b1 = NULL, *b2 = NULL, *copy = calloc(1, size), *tmp = calloc(1, size);
	size_t l1 = 0, l2 = 0;
	uint8_t *longer;

	CU_ASSERT_FATAL(copy && tmp);
	CU_ASSERT_FATAL(proto_xdr_encode(proc, obj, &b1, &l1) == 0);
	CU_ASSERT_EQUAL(l1 % 4, 0);
	CU_ASSERT_FATAL(proto_xdr_decode(proc, copy, b1, l1) == 0);
	CU_ASSERT_FATAL(proto_xdr_encode(proc, copy, &b2, &l2) == 0);
	CU_ASSERT_EQUAL(l1, l2);
	CU_ASSERT(l1 == l2 && memcmp(b1, b2, l1) == 0);
	/* No proper prefix decodes: XDR reads are deterministic, so a prefix that decoded would have
	 * stopped the full decode early too. Each prefix is its own allocation so ASan sees over-reads. */
	for (size_t cut = 0; cut < l1; cut++) {
		uint8_t *p = malloc(cut ? cut : 1);
		memcpy(p, b1, cut);
		memset(tmp, 0, size);
		CU_ASSERT(proto_xdr_decode(proc, tmp, p, cut) == -EBADMSG);
		free(p);
	}
	longer = calloc(1, l1 + 4);
	memcpy(longer, b1, l1);
	memset(tmp, 0, size);
	CU_ASSERT(proto_xdr_decode(proc, tmp, longer, l1 + 4) == -EBADMSG);
	free(longer);
	free(b1);
	free(b2);
	free(tmp);
	if (out)
		memcpy(out, copy, size);
	else
		proto_xdr_free(proc, copy);
	free(copy);
	return l1;
}

/* Every argument (res 0) or result (res 1) sample roundtrips; there are at least min of them. */
static void roundtrip_samples(int res, unsigned min)
{
	unsigned n = 0;

	for (const struct sample_case *c = res ? sample_res_cases : sample_arg_cases; c->op; c++, n++) {
		nfs_argop4 op;
		nfs_resop4 r;

		if (res) {
			sample_resop(c, &r);
			roundtrip((xdrproc_t)xdr_nfs_resop4, &r, sizeof(r), NULL);
		} else {
			sample_argop(c, &op);
			roundtrip((xdrproc_t)xdr_nfs_argop4, &op, sizeof(op), NULL);
		}
	}
	CU_ASSERT(n >= min);
	samples_free();
}

static void roundtrip_args(void)
{
	roundtrip_samples(0, 56);
}

static void roundtrip_results(void)
{
	roundtrip_samples(1, 57);
}

static void roundtrip_cb(void)
{
	for (const struct sample_case *c = sample_cb_arg_cases; c->op; c++) {
		nfs_cb_argop4 op;
		sample_cb_argop(c, &op);
		roundtrip((xdrproc_t)xdr_nfs_cb_argop4, &op, sizeof(op), NULL);
	}
	for (const struct sample_case *c = sample_cb_res_cases; c->op; c++) {
		nfs_cb_resop4 res;
		sample_cb_resop(c, &res);
		roundtrip((xdrproc_t)xdr_nfs_cb_resop4, &res, sizeof(res), NULL);
	}
	samples_free();
}

/* Whether the sample list cases (ended by op 0) holds op. */
static int has_sample(const struct sample_case *cases, uint32_t op)
{
	for (const struct sample_case *c = cases; c->op; c++)
		if (c->op == op)
			return 1;
	return 0;
}

/* Every operation and callback the issue lists has an argument and a result sample. */
static void issue_ops_covered(void)
{
	for (const uint32_t *op = sample_issue_ops; *op; op++) {
		int both = has_sample(sample_arg_cases, *op) && has_sample(sample_res_cases, *op);
		if (!both)
			fprintf(stderr, "no sample for %s\n", proto_opnum4_name(*op));
		CU_ASSERT(both);
	}
	for (const uint32_t *op = sample_issue_cb_ops; *op; op++)
		CU_ASSERT(has_sample(sample_cb_arg_cases, *op) && has_sample(sample_cb_res_cases, *op));
}

/* Beyond equal bytes: the decoded fields are the ones we put in. */
static void decoded_fields(void)
{
	struct sample_case wc = { OP_WRITE, 0 }, rc = { OP_READDIR, 0 }, oc = { OP_OPEN, 1 }, sc = { OP_SEQUENCE, 0 };
	nfs_argop4 w, wd, o, od, s, sd;
	nfs_resop4 r, rd;
	entry4 *e;
	unsigned n = 0;

	sample_argop(&wc, &w);
	roundtrip((xdrproc_t)xdr_nfs_argop4, &w, sizeof(w), &wd);
	CU_ASSERT_EQUAL(wd.argop, OP_WRITE);
	CU_ASSERT_EQUAL(wd.nfs_argop4_u.opwrite.offset, 8192);
	CU_ASSERT_EQUAL(wd.nfs_argop4_u.opwrite.stable, FILE_SYNC4);
	CU_ASSERT_EQUAL(wd.nfs_argop4_u.opwrite.stateid.seqid, 5);
	CU_ASSERT(memcmp(wd.nfs_argop4_u.opwrite.stateid.other, w.nfs_argop4_u.opwrite.stateid.other, 12) == 0);
	CU_ASSERT_EQUAL(wd.nfs_argop4_u.opwrite.data.data_len, 301);
	CU_ASSERT(memcmp(wd.nfs_argop4_u.opwrite.data.data_val, w.nfs_argop4_u.opwrite.data.data_val, 301) == 0);
	proto_xdr_free((xdrproc_t)xdr_nfs_argop4, &wd);

	sample_argop(&oc, &o);
	roundtrip((xdrproc_t)xdr_nfs_argop4, &o, sizeof(o), &od);
	CU_ASSERT_EQUAL(od.nfs_argop4_u.opopen.openhow.opentype, OPEN4_CREATE);
	CU_ASSERT_EQUAL(od.nfs_argop4_u.opopen.openhow.openflag4_u.how.mode, EXCLUSIVE4_1);
	CU_ASSERT_EQUAL(od.nfs_argop4_u.opopen.claim.claim, CLAIM_NULL);
	CU_ASSERT_EQUAL(od.nfs_argop4_u.opopen.claim.open_claim4_u.file.utf8string_len, 9);
	CU_ASSERT(memcmp(od.nfs_argop4_u.opopen.claim.open_claim4_u.file.utf8string_val, "exclusive", 9) == 0);
	CU_ASSERT_EQUAL(od.nfs_argop4_u.opopen.owner.clientid, 0x5555aaaa5555aaaaull);
	proto_xdr_free((xdrproc_t)xdr_nfs_argop4, &od);

	sample_argop(&sc, &s);
	roundtrip((xdrproc_t)xdr_nfs_argop4, &s, sizeof(s), &sd);
	CU_ASSERT_EQUAL(sd.nfs_argop4_u.opsequence.sa_sequenceid, 42);
	CU_ASSERT_EQUAL(sd.nfs_argop4_u.opsequence.sa_slotid, 3);
	CU_ASSERT_EQUAL(sd.nfs_argop4_u.opsequence.sa_highest_slotid, 7);
	CU_ASSERT(sd.nfs_argop4_u.opsequence.sa_cachethis);
	CU_ASSERT(memcmp(sd.nfs_argop4_u.opsequence.sa_sessionid, s.nfs_argop4_u.opsequence.sa_sessionid, 16) == 0);
	proto_xdr_free((xdrproc_t)xdr_nfs_argop4, &sd);

	sample_resop(&rc, &r);
	roundtrip((xdrproc_t)xdr_nfs_resop4, &r, sizeof(r), &rd);
	for (e = rd.nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.entries; e; e = e->nextentry, n++) {
		char want[16];
		struct proto_fattr a;
		snprintf(want, sizeof(want), "file-%u", n);
		CU_ASSERT_EQUAL(e->cookie, 100 + n);
		CU_ASSERT(e->name.utf8string_len == strlen(want) && memcmp(e->name.utf8string_val, want, strlen(want)) == 0);
		CU_ASSERT(proto_fattr_decode(&e->attrs, &a, NULL) == 0);
		CU_ASSERT_EQUAL(a.fileid, 1000 + n);
	}
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT(rd.nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.eof);
	proto_xdr_free((xdrproc_t)xdr_nfs_resop4, &rd);
	samples_free();
}

/* ---- caps ------------------------------------------------------------------------------------- */

/* An opcode, a length word and len bytes of payload: the shape of PUTFH, LOOKUP, ... */
static int decode_len_op(uint32_t opcode, uint32_t len, size_t present)
{
	size_t total = 8 + present;
	uint8_t *b = calloc(1, total);
	nfs_argop4 op;
	int ret;

	b[0] = (uint8_t)(opcode >> 24);
	b[1] = (uint8_t)(opcode >> 16);
	b[2] = (uint8_t)(opcode >> 8);
	b[3] = (uint8_t)opcode;
	b[4] = (uint8_t)(len >> 24);
	b[5] = (uint8_t)(len >> 16);
	b[6] = (uint8_t)(len >> 8);
	b[7] = (uint8_t)len;
	memset(&op, 0, sizeof(op));
	ret = proto_xdr_decode((xdrproc_t)xdr_nfs_argop4, &op, b, total);
	if (ret == 0)
		proto_xdr_free((xdrproc_t)xdr_nfs_argop4, &op);
	free(b);
	return ret;
}

static void caps_filehandle_and_names(void)
{
	nfs_argop4 op;
	void *buf;
	size_t len;
	char *big = calloc(1, PROTO_UTF8STR_MAX + 1);

	/* A filehandle of NFS4_FHSIZE bytes is fine, one more is not, whichever way. */
	CU_ASSERT(decode_len_op(OP_PUTFH, NFS4_FHSIZE, NFS4_FHSIZE) == 0);
	CU_ASSERT(decode_len_op(OP_PUTFH, NFS4_FHSIZE + 1, NFS4_FHSIZE + 4) == -EBADMSG);
	memset(&op, 0, sizeof(op));
	op.argop = OP_PUTFH;
	op.nfs_argop4_u.opputfh.object.nfs_fh4_len = NFS4_FHSIZE + 1;
	op.nfs_argop4_u.opputfh.object.nfs_fh4_val = big;
	CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == -EINVAL);

	/* Names: PROTO_UTF8STR_MAX and one more. */
	CU_ASSERT(decode_len_op(OP_LOOKUP, PROTO_UTF8STR_MAX, PROTO_UTF8STR_MAX) == 0);
	CU_ASSERT(decode_len_op(OP_LOOKUP, PROTO_UTF8STR_MAX + 1, PROTO_UTF8STR_MAX + 4) == -EBADMSG);
	op.argop = OP_LOOKUP;
	op.nfs_argop4_u.oplookup.objname.utf8string_len = PROTO_UTF8STR_MAX + 1;
	op.nfs_argop4_u.oplookup.objname.utf8string_val = big;
	CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == -EINVAL);

	/* A length beyond the bytes present: refused, nothing read past the end. */
	CU_ASSERT(decode_len_op(OP_LOOKUP, 100, 20) == -EBADMSG);
	CU_ASSERT(decode_len_op(OP_PUTFH, 0xffffffffu, 16) == -EBADMSG);
	free(big);
}

static void caps_io_and_arrays(void)
{
	nfs_argop4 op;
	void *buf;
	size_t len;
	uint8_t hdr[40] = { 0 };

	/* WRITE: stateid(16) offset(8) stable(4) then the data length. */
	hdr[3] = OP_WRITE;
	hdr[4 + 16 + 8 + 3] = FILE_SYNC4;
	{
		uint32_t l = PROTO_IO_MAX + 1;
		uint8_t *p = hdr + 4 + 16 + 8 + 4;
		p[0] = (uint8_t)(l >> 24);
		p[1] = (uint8_t)(l >> 16);
		p[2] = (uint8_t)(l >> 8);
		p[3] = (uint8_t)l;
		memset(&op, 0, sizeof(op));
		CU_ASSERT(proto_xdr_decode((xdrproc_t)xdr_nfs_argop4, &op, hdr, sizeof(hdr)) == -EBADMSG);
	}

	/* Encoders refuse what decoders would refuse. */
	memset(&op, 0, sizeof(op));
	op.argop = OP_WRITE;
	op.nfs_argop4_u.opwrite.data.data_len = PROTO_IO_MAX + 1;
	op.nfs_argop4_u.opwrite.data.data_val = calloc(1, PROTO_IO_MAX + 1);
	CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == -EINVAL);
	op.nfs_argop4_u.opwrite.data.data_len = PROTO_IO_MAX;
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == 0);
	CU_ASSERT_EQUAL(len, 4 + 16 + 8 + 4 + 4 + PROTO_IO_MAX);
	free(buf);
	free(op.nfs_argop4_u.opwrite.data.data_val);

	/* bitmap4: PROTO_BITMAP_MAX words, not one more. */
	memset(&op, 0, sizeof(op));
	op.argop = OP_GETATTR;
	op.nfs_argop4_u.opgetattr.attr_request.bitmap4_len = PROTO_BITMAP_MAX + 1;
	op.nfs_argop4_u.opgetattr.attr_request.bitmap4_val = calloc(PROTO_BITMAP_MAX + 1, 4);
	CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == -EINVAL);
	op.nfs_argop4_u.opgetattr.attr_request.bitmap4_len = PROTO_BITMAP_MAX;
	CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == 0);
	((uint8_t *)buf)[7] = PROTO_BITMAP_MAX + 1; /* claim one word more than the cap */
	{
		nfs_argop4 d;
		uint8_t *more = calloc(1, len + 4);
		memcpy(more, buf, len);
		memset(&d, 0, sizeof(d));
		CU_ASSERT(proto_xdr_decode((xdrproc_t)xdr_nfs_argop4, &d, more, len + 4) == -EBADMSG);
		free(more);
	}
	free(buf);
	free(op.nfs_argop4_u.opgetattr.attr_request.bitmap4_val);

	/* TEST_STATEID: PROTO_STATEIDS_MAX stateids, then one more. */
	memset(&op, 0, sizeof(op));
	op.argop = OP_TEST_STATEID;
	op.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_len = PROTO_STATEIDS_MAX + 1;
	op.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_val = calloc(PROTO_STATEIDS_MAX + 1, sizeof(stateid4));
	CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == -EINVAL);
	op.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_len = PROTO_STATEIDS_MAX;
	CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_nfs_argop4, &op, &buf, &len) == 0);
	free(buf);
	free(op.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_val);

	/* A whole COMPOUND4args over PROTO_COMPOUND_MAX_OPS does not encode. */
	{
		COMPOUND4args ca = { 0 };
		ca.argarray.argarray_len = PROTO_COMPOUND_MAX_OPS + 1;
		ca.argarray.argarray_val = calloc(PROTO_COMPOUND_MAX_OPS + 1, sizeof(nfs_argop4));
		for (unsigned i = 0; i <= PROTO_COMPOUND_MAX_OPS; i++)
			ca.argarray.argarray_val[i].argop = OP_GETFH;
		CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_COMPOUND4args, &ca, &buf, &len) == -EINVAL);
		ca.argarray.argarray_len = PROTO_COMPOUND_MAX_OPS;
		CU_ASSERT(proto_xdr_encode((xdrproc_t)xdr_COMPOUND4args, &ca, &buf, &len) == 0);
		free(buf);
		free(ca.argarray.argarray_val);
	}
}

/* n READDIR entries of the smallest shape: TRUE, cookie, empty name, empty fattr4. */
static uint8_t *dirlist_wire(unsigned n, size_t *len)
{
	size_t per = 4 + 8 + 4 + 4 + 4;
	uint8_t *b = calloc(1, n * per + 8), *p = b;

	for (unsigned i = 0; i < n; i++, p += per) {
		p[3] = 1;         /* value follows */
		p[11] = (uint8_t)i; /* cookie */
	}
	p[3] = 0; /* no more entries */
	p[7] = 1; /* eof */
	*len = n * per + 8;
	return b;
}

static void dirlist_bounded_and_iterative(void)
{
	dirlist4 dl;
	size_t len;
	uint8_t *b;
	unsigned n = 0;

	/* The cap exactly: decodes, without recursion (rpcgen's coder would nest 65536 calls). */
	b = dirlist_wire(PROTO_DIRLIST_MAX, &len);
	memset(&dl, 0, sizeof(dl));
	CU_ASSERT_FATAL(proto_xdr_decode((xdrproc_t)xdr_dirlist4, &dl, b, len) == 0);
	for (entry4 *e = dl.entries; e; e = e->nextentry)
		n++;
	CU_ASSERT_EQUAL(n, PROTO_DIRLIST_MAX);
	CU_ASSERT(dl.eof);
	{
		void *again;
		size_t alen;
		CU_ASSERT_FATAL(proto_xdr_encode((xdrproc_t)xdr_dirlist4, &dl, &again, &alen) == 0);
		CU_ASSERT(alen == len && memcmp(again, b, len) == 0);
		free(again);
	}
	proto_xdr_free((xdrproc_t)xdr_dirlist4, &dl);
	CU_ASSERT_PTR_NULL(dl.entries);
	free(b);

	/* One entry more: refused, and the partial list is freed (ASan checks the leak). */
	b = dirlist_wire(PROTO_DIRLIST_MAX + 1, &len);
	memset(&dl, 0, sizeof(dl));
	CU_ASSERT(proto_xdr_decode((xdrproc_t)xdr_dirlist4, &dl, b, len) == -EBADMSG);
	free(b);

	/* Truncated in the middle of an entry. */
	b = dirlist_wire(10, &len);
	memset(&dl, 0, sizeof(dl));
	CU_ASSERT(proto_xdr_decode((xdrproc_t)xdr_dirlist4, &dl, b, len - 30) == -EBADMSG);
	free(b);
}

/* ---- union discriminants ---------------------------------------------------------------- */

static int decode_word(xdrproc_t proc, size_t size, uint32_t disc, size_t pad)
{
	uint8_t b[64] = { 0 };
	void *obj = calloc(1, size);
	int ret;

	b[0] = (uint8_t)(disc >> 24);
	b[1] = (uint8_t)(disc >> 16);
	b[2] = (uint8_t)(disc >> 8);
	b[3] = (uint8_t)disc;
	ret = proto_xdr_decode(proc, obj, b, 4 + pad);
	if (ret == 0)
		proto_xdr_free(proc, obj);
	free(obj);
	return ret;
}

static void unknown_discriminants(void)
{
#define REJECTS(type, disc) CU_ASSERT(decode_word((xdrproc_t)xdr_##type, sizeof(type), (disc), 32) == -EBADMSG)
	REJECTS(nfs_argop4, 2);            /* opcodes 0-2 do not exist */
	REJECTS(nfs_argop4, 59);           /* an NFSv4.2 op is not ours */
	REJECTS(nfs_argop4, 0xffffffffu);
	REJECTS(nfs_resop4, 1000);
	REJECTS(nfs_cb_argop4, 15);
	REJECTS(nfs_cb_resop4, 2);
	REJECTS(open_claim4, 7);
	REJECTS(createhow4, 4);
	REJECTS(open_delegation4, 4);
	REJECTS(nfs_space_limit4, 3);
	REJECTS(layoutrecall4, 4);
	REJECTS(callback_sec_parms4, 2);
	REJECTS(state_protect4_a, 3);
	REJECTS(state_protect4_r, 3);
	REJECTS(deleg_claim4, 0);
	REJECTS(GET_DIR_DELEGATION4res_non_fatal, 2);
	REJECTS(pnfs_block_volume4, 4);    /* 4 is SCSI's BASE, not a block volume type */
	REJECTS(pnfs_scsi_volume4, 0);     /* 0 is block's SIMPLE, not a SCSI volume type */
	REJECTS(pnfs_scsi_volume4, 5);
#undef REJECTS
	/* Known arms with a void body decode from the discriminant alone. */
	CU_ASSERT(decode_word((xdrproc_t)xdr_nfs_argop4, sizeof(nfs_argop4), OP_GETFH, 0) == 0);
	CU_ASSERT(decode_word((xdrproc_t)xdr_layoutrecall4, sizeof(layoutrecall4), LAYOUTRECALL4_ALL, 0) == 0);
}

TEST_SUITE(proto_xdr, "proto/xdr", NULL, NULL,
	   { "roundtrip_args", roundtrip_args },
	   { "roundtrip_results", roundtrip_results },
	   { "roundtrip_callbacks", roundtrip_cb },
	   { "issue_ops_covered", issue_ops_covered },
	   { "decoded_fields", decoded_fields },
	   { "caps_filehandle_and_names", caps_filehandle_and_names },
	   { "caps_io_and_arrays", caps_io_and_arrays },
	   { "dirlist_bounded_and_iterative", dirlist_bounded_and_iterative },
	   { "unknown_discriminants", unknown_discriminants });
