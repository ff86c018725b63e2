/* ONC RPC over TCP: record marking at every split point, the record-size limit, call and reply
 * headers (AUTH_NONE, AUTH_SYS, every accept and reject state), and one connection carrying
 * fore-channel replies and backchannel calls, demultiplexed by msg_type and XID. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- record marking -------------------------------------------------------------------------- */

struct stream {
	uint8_t *b;
	size_t len;
};

static void stream_add(struct stream *s, const void *p, size_t n)
{
	s->b = realloc(s->b, s->len + n);
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static void stream_frag(struct stream *s, const void *p, uint32_t n, int last)
{
	uint8_t h[4];
	proto_rm_mark(h, n, last);
	stream_add(s, h, 4);
	if (n)
		stream_add(s, p, n);
}

/* Three records: one fragment of 13 bytes; fragments of 5, 0 and 7 bytes; an empty record. */
static struct stream three_records(uint8_t rec0[13], uint8_t rec1[12])
{
	struct stream s = { 0 };

	test_fill_random(rec0, 13, 1);
	test_fill_random(rec1, 12, 2);
	stream_frag(&s, rec0, 13, 1);
	stream_frag(&s, rec1, 5, 0);
	stream_frag(&s, NULL, 0, 0);
	stream_frag(&s, rec1 + 5, 7, 1);
	stream_frag(&s, NULL, 0, 1);
	return s;
}

/* Feed s in pieces cut at the given points; collect the records. */
static int feed_collect(struct proto_rm_reader *r, const struct stream *s, const size_t *cuts, int ncuts,
			void **recs, size_t *lens, int max)
{
	size_t pos = 0;
	int n = 0;

	for (int c = 0; c <= ncuts; c++) {
		size_t end = c < ncuts ? cuts[c] : s->len;
		while (pos < end) {
			ssize_t used = proto_rm_feed(r, s->b + pos, end - pos);
			if (used < 0)
				return (int)used;
			pos += (size_t)used;
			while (n < max && proto_rm_take(r, &recs[n], &lens[n]) == 1)
				n++;
		}
	}
	return n;
}

static void check_three(void **recs, size_t *lens, const uint8_t *rec0, const uint8_t *rec1)
{
	CU_ASSERT(lens[0] == 13 && memcmp(recs[0], rec0, 13) == 0);
	CU_ASSERT(lens[1] == 12 && memcmp(recs[1], rec1, 12) == 0);
	CU_ASSERT(lens[2] == 0 && recs[2] != NULL);
	for (int i = 0; i < 3; i++)
		free(recs[i]);
}

static void rm_split_everywhere(void)
{
	uint8_t rec0[13], rec1[12];
	struct stream s = three_records(rec0, rec1);
	void *recs[4];
	size_t lens[4];

	/* One cut at every byte boundary. */
	for (size_t cut = 0; cut <= s.len; cut++) {
		struct proto_rm_reader r;
		proto_rm_reader_init(&r, 64);
		CU_ASSERT_EQUAL_FATAL(feed_collect(&r, &s, &cut, 1, recs, lens, 4), 3);
		check_three(recs, lens, rec0, rec1);
		CU_ASSERT_EQUAL(proto_rm_pending(&r), 0);
		proto_rm_reader_destroy(&r);
	}
	/* Every pair of cuts. */
	for (size_t a = 0; a <= s.len; a++)
		for (size_t b = a; b <= s.len; b++) {
			struct proto_rm_reader r;
			size_t cuts[2] = { a, b };
			proto_rm_reader_init(&r, 64);
			CU_ASSERT_EQUAL_FATAL(feed_collect(&r, &s, cuts, 2, recs, lens, 4), 3);
			check_three(recs, lens, rec0, rec1);
			proto_rm_reader_destroy(&r);
		}
	/* One byte at a time. */
	{
		struct proto_rm_reader r;
		size_t *cuts = malloc(s.len * sizeof(*cuts));
		for (size_t i = 0; i < s.len; i++)
			cuts[i] = i + 1;
		proto_rm_reader_init(&r, 64);
		CU_ASSERT_EQUAL_FATAL(feed_collect(&r, &s, cuts, (int)s.len, recs, lens, 4), 3);
		check_three(recs, lens, rec0, rec1);
		proto_rm_reader_destroy(&r);
		free(cuts);
	}
	free(s.b);
}

static void rm_feed_stops_at_record(void)
{
	uint8_t rec0[13], rec1[12];
	struct stream s = three_records(rec0, rec1);
	struct proto_rm_reader r;
	void *rec;
	size_t len;

	proto_rm_reader_init(&r, 64);
	/* All bytes offered at once: only the first record's are consumed until it is taken. */
	CU_ASSERT_EQUAL(proto_rm_feed(&r, s.b, s.len), 4 + 13);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, s.b + 17, s.len - 17), 0);
	CU_ASSERT_EQUAL(proto_rm_take(&r, &rec, &len), 1);
	CU_ASSERT_EQUAL(len, 13);
	free(rec);
	CU_ASSERT_EQUAL(proto_rm_take(&r, &rec, &len), 0);
	proto_rm_reader_destroy(&r);
	free(s.b);
}

static void rm_oversize_refused(void)
{
	struct proto_rm_reader r;
	uint8_t data[1001] = { 0 }, h[4];
	void *rec;
	size_t len;

	/* Exactly the limit passes. */
	proto_rm_reader_init(&r, 1000);
	proto_rm_mark(h, 1000, 1);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, h, 4), 4);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, data, 1000), 1000);
	CU_ASSERT_EQUAL(proto_rm_take(&r, &rec, &len), 1);
	CU_ASSERT_EQUAL(len, 1000);
	free(rec);
	/* One byte more is refused on the header, before any data is buffered. */
	proto_rm_mark(h, 1001, 1);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, h, 4), -EMSGSIZE);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, data, 10), -EPIPE);
	proto_rm_reader_destroy(&r);

	/* Fragments that add up past the limit: refused at the fragment that crosses it. */
	proto_rm_reader_init(&r, 1000);
	proto_rm_mark(h, 600, 0);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, h, 4), 4);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, data, 600), 600);
	proto_rm_mark(h, 401, 1);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, h, 4), -EMSGSIZE);
	proto_rm_reader_destroy(&r);

	/* The hard limit caps any configuration. */
	proto_rm_reader_init(&r, (size_t)1 << 40);
	CU_ASSERT_EQUAL(r.max_record, PROTO_RM_RECORD_LIMIT);
	proto_rm_reader_destroy(&r);
	proto_rm_reader_init(&r, 0);
	CU_ASSERT_EQUAL(r.max_record, PROTO_RM_RECORD_DEFAULT);
	proto_rm_reader_destroy(&r);
}

/* A header promising 16 MiB must not make the reader allocate 16 MiB before the bytes arrive. */
static void rm_memory_follows_bytes(void)
{
	struct proto_rm_reader r;
	uint8_t h[4], data[100] = { 0 };

	proto_rm_reader_init(&r, PROTO_RM_RECORD_LIMIT);
	proto_rm_mark(h, PROTO_RM_RECORD_LIMIT, 1);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, h, 4), 4);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, data, sizeof(data)), sizeof(data));
	CU_ASSERT_EQUAL(proto_rm_pending(&r), 100);
	CU_ASSERT(r.rec_cap <= 4096);
	proto_rm_reader_destroy(&r);
}

static void rm_frame_layout(void)
{
	uint8_t rec[20];
	void *out;
	size_t len;
	const uint8_t *p;
	struct proto_rm_reader r;
	void *back;
	size_t blen;

	test_fill_random(rec, sizeof(rec), 3);
	CU_ASSERT_FATAL(proto_rm_frame(rec, sizeof(rec), 7, &out, &len) == 0);
	CU_ASSERT_EQUAL(len, 20 + 3 * 4);
	p = out;
	/* 7, 7, 6 bytes; only the last has the high bit. */
	CU_ASSERT(p[0] == 0x00 && p[1] == 0 && p[2] == 0 && p[3] == 7);
	CU_ASSERT(p[14] == 7 && p[11] == 0x00);
	CU_ASSERT(p[22] == 0x80 && p[25] == 6);
	proto_rm_reader_init(&r, 0);
	CU_ASSERT_EQUAL(proto_rm_feed(&r, out, len), (ssize_t)len);
	CU_ASSERT_FATAL(proto_rm_take(&r, &back, &blen) == 1);
	CU_ASSERT(blen == 20 && memcmp(back, rec, 20) == 0);
	free(back);
	free(out);
	proto_rm_reader_destroy(&r);
	/* An empty record is one empty last fragment. */
	CU_ASSERT_FATAL(proto_rm_frame(rec, 0, 0, &out, &len) == 0);
	CU_ASSERT(len == 4 && memcmp(out, "\x80\0\0\0", 4) == 0);
	free(out);
}

/* ---- call headers ----------------------------------------------------------------------------- */

static void fill_authsys(struct proto_rpc_call *c)
{
	c->cred.flavor = AUTH_SYS;
	c->cred.sys.stamp = 0x5a5a0001;
	strcpy(c->cred.sys.machinename, "client-7.example.org");
	c->cred.sys.uid = 1000;
	c->cred.sys.gid = 100;
	c->cred.sys.ngids = PROTO_AUTHSYS_GIDS_MAX;
	for (unsigned i = 0; i < PROTO_AUTHSYS_GIDS_MAX; i++)
		c->cred.sys.gids[i] = 2000 + i;
	c->verf.flavor = AUTH_NONE;
}

static void call_roundtrip(void)
{
	for (int flavor = 0; flavor < 3; flavor++) {
		struct proto_rpc_call c = { .xid = 0xdeadbeef, .prog = NFS4_PROGRAM, .vers = NFS_V4,
					    .proc = NFSPROC4_COMPOUND };
		struct proto_rpc_call d;
		struct proto_msg m;
		size_t off;
		uint32_t err, args = 0x11223344;

		if (flavor == 1)
			fill_authsys(&c);
		if (flavor == 2) { /* a flavour we carry raw (RPCSEC_GSS) */
			c.cred.flavor = RPCSEC_GSS;
			c.cred.len = 37;
			test_fill_random(c.cred.body, 37, 9);
			c.verf.flavor = RPCSEC_GSS;
			c.verf.len = 8;
			test_fill_random(c.verf.body, 8, 10);
		}
		CU_ASSERT_FATAL(proto_msg_init(&m, 1024) == 0);
		CU_ASSERT_FATAL(proto_rpc_call_encode(&m, &c) == 0);
		CU_ASSERT(xdr_uint32_t(&m.xdr, &args));
		CU_ASSERT_FATAL(proto_rpc_call_decode(proto_msg_data(&m), proto_msg_len(&m), &d, &off, &err) == 0);
		CU_ASSERT_EQUAL(off, proto_msg_len(&m) - 4);
		CU_ASSERT(d.xid == c.xid && d.rpcvers == 2 && d.prog == NFS4_PROGRAM && d.vers == 4 && d.proc == 1);
		CU_ASSERT_EQUAL(d.cred.flavor, c.cred.flavor);
		if (flavor == 1) {
			CU_ASSERT_STRING_EQUAL(d.cred.sys.machinename, c.cred.sys.machinename);
			CU_ASSERT(d.cred.sys.stamp == c.cred.sys.stamp && d.cred.sys.uid == 1000 && d.cred.sys.gid == 100);
			CU_ASSERT(d.cred.sys.ngids == 16 && memcmp(d.cred.sys.gids, c.cred.sys.gids, sizeof(c.cred.sys.gids)) == 0);
		}
		if (flavor == 2) {
			CU_ASSERT(d.cred.len == 37 && memcmp(d.cred.body, c.cred.body, 37) == 0);
			CU_ASSERT(d.verf.len == 8 && memcmp(d.verf.body, c.verf.body, 8) == 0);
		}
		/* Every truncation of the header is an error, never a crash. */
		for (size_t cut = 0; cut < off; cut++) {
			uint8_t *p = malloc(cut ? cut : 1);
			memcpy(p, proto_msg_data(&m), cut);
			CU_ASSERT(proto_rpc_call_decode(p, cut, &d, &off, &err) < 0);
			free(p);
		}
		proto_msg_destroy(&m);
	}
}

/* Build a call header word by word, with a raw credential body. */
static size_t raw_call(uint8_t *b, uint32_t rpcvers, uint32_t cred_flavor, const uint8_t *cred, uint32_t cred_len,
		       uint32_t verf_len)
{
	uint32_t w[] = { 7, CALL, rpcvers, NFS4_PROGRAM, 4, 1, cred_flavor, cred_len };
	size_t n = 0;

	for (unsigned i = 0; i < sizeof(w) / 4; i++, n += 4) {
		b[n] = (uint8_t)(w[i] >> 24);
		b[n + 1] = (uint8_t)(w[i] >> 16);
		b[n + 2] = (uint8_t)(w[i] >> 8);
		b[n + 3] = (uint8_t)w[i];
	}
	if (cred_len)
		memcpy(b + n, cred, cred_len);
	n += (cred_len + 3) & ~3u;
	memset(b + n, 0, 8);
	b[n + 7] = (uint8_t)verf_len;
	b[n + 6] = (uint8_t)(verf_len >> 8);
	n += 8 + ((verf_len + 3) & ~3u);
	return n;
}

static void call_rejects(void)
{
	uint8_t b[2048] = { 0 }, body[PROTO_AUTH_BODY_MAX + 8];
	struct proto_rpc_call c;
	struct proto_authsys s = { .stamp = 1, .uid = 2, .gid = 3 };
	uint32_t blen, err;
	size_t off, n;

	/* rpcvers 3: RPC_MISMATCH. */
	n = raw_call(b, 3, AUTH_NONE, NULL, 0, 0);
	CU_ASSERT_EQUAL(proto_rpc_call_decode(b, n, &c, &off, &err), -EPROTONOSUPPORT);
	CU_ASSERT_EQUAL(c.xid, 7);
	/* A credential over 400 bytes: AUTH_BADCRED. */
	n = raw_call(b, 2, AUTH_SYS, body, PROTO_AUTH_BODY_MAX + 4, 0);
	CU_ASSERT_EQUAL(proto_rpc_call_decode(b, n, &c, &off, &err), -EACCES);
	CU_ASSERT_EQUAL(err, AUTH_BADCRED);
	/* AUTH_SYS with 17 gids. */
	strcpy(s.machinename, "m");
	s.ngids = 16;
	CU_ASSERT_FATAL(proto_authsys_encode(&s, body, &blen) == 0);
	body[blen - 16 * 4 - 1] = 17;
	memcpy(body + blen, "\0\0\0\x01", 4);
	n = raw_call(b, 2, AUTH_SYS, body, blen + 4, 0);
	CU_ASSERT_EQUAL(proto_rpc_call_decode(b, n, &c, &off, &err), -EACCES);
	CU_ASSERT_EQUAL(err, AUTH_BADCRED);
	/* AUTH_SYS machinename of 256 bytes cannot be encoded, nor decoded. */
	memset(s.machinename, 'a', sizeof(s.machinename));
	CU_ASSERT_EQUAL(proto_authsys_encode(&s, body, &blen), -EINVAL);
	{
		uint8_t sys[PROTO_AUTH_BODY_MAX] = { 0 };
		sys[6] = 1; /* name length 256 */
		CU_ASSERT_EQUAL(proto_authsys_decode(sys, 4 + 4 + 256 + 12, &s), -EBADMSG);
	}
	/* AUTH_SYS body with a byte left over, and with a NUL inside the machine name. */
	strcpy(s.machinename, "host");
	s.ngids = 0;
	CU_ASSERT_FATAL(proto_authsys_encode(&s, body, &blen) == 0);
	memset(body + blen, 0, 4);
	CU_ASSERT_EQUAL(proto_authsys_decode(body, blen + 4, &s), -EBADMSG);
	body[9] = 0;
	CU_ASSERT_EQUAL(proto_authsys_decode(body, blen, &s), -EBADMSG);
	/* A verifier over 400 bytes: AUTH_BADVERF. */
	n = raw_call(b, 2, AUTH_NONE, NULL, 0, PROTO_AUTH_BODY_MAX + 4);
	CU_ASSERT_EQUAL(proto_rpc_call_decode(b, n, &c, &off, &err), -EACCES);
	CU_ASSERT_EQUAL(err, AUTH_BADVERF);
	/* A reply is not a call. */
	n = raw_call(b, 2, AUTH_NONE, NULL, 0, 0);
	b[7] = REPLY;
	CU_ASSERT_EQUAL(proto_rpc_call_decode(b, n, &c, &off, &err), -EBADMSG);
	/* A credential length beyond the record. */
	n = raw_call(b, 2, AUTH_SYS, body, 100, 0);
	CU_ASSERT_EQUAL(proto_rpc_call_decode(b, 40, &c, &off, &err), -EBADMSG);
}

/* RFC 5531 call layout, written out by hand: xid, CALL, rpcvers 2, prog, vers, proc, cred
 * (AUTH_SYS: stamp, machinename "ab" padded, uid, gid, 2 gids), verf AUTH_NONE. */
static void call_known_bytes(void)
{
	static const uint8_t want[] = {
		0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0, 0, 2,          /* xid, CALL, rpcvers */
		0x00, 0x01, 0x86, 0xa3, 0, 0, 0, 4, 0, 0, 0, 1,          /* 100003, 4, COMPOUND */
		0, 0, 0, 1, 0, 0, 0, 32,                                /* AUTH_SYS, body 32 bytes */
		0, 0, 0, 9, 0, 0, 0, 2, 'a', 'b', 0, 0,                 /* stamp, "ab" */
		0, 0, 0x03, 0xe8, 0, 0, 0, 100, 0, 0, 0, 2,             /* uid 1000, gid 100, 2 gids */
		0, 0, 0, 10, 0, 0, 0, 20,
		0, 0, 0, 0, 0, 0, 0, 0,                                 /* verf AUTH_NONE */
	};
	struct proto_rpc_call c = { .xid = 0x12345678, .prog = NFS4_PROGRAM, .vers = 4, .proc = 1 };
	struct proto_msg m;
	const uint8_t *wire;
	size_t wlen;

	c.cred.flavor = AUTH_SYS;
	c.cred.sys = (struct proto_authsys){ .stamp = 9, .machinename = "ab", .uid = 1000, .gid = 100, .ngids = 2,
					     .gids = { 10, 20 } };
	CU_ASSERT_FATAL(proto_msg_init(&m, 256) == 0);
	CU_ASSERT_FATAL(proto_rpc_call_encode(&m, &c) == 0);
	CU_ASSERT_FATAL(proto_msg_finish(&m, &wire, &wlen) == 0);
	CU_ASSERT_EQUAL(wlen, 4 + sizeof(want));
	CU_ASSERT(wire[0] == 0x80 && wire[1] == 0 && wire[2] == 0 && wire[3] == sizeof(want));
	CU_ASSERT(memcmp(wire + 4, want, sizeof(want)) == 0);
	proto_msg_destroy(&m);
}

/* ---- reply headers ---------------------------------------------------------------------------- */

static void reply_roundtrip(void)
{
	struct proto_rpc_reply rs[9];
	uint32_t accepted[] = { SUCCESS, PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR };

	for (int i = 0; i < 5; i++)
		proto_rpc_reply_accepted(&rs[i], 100 + i, accepted[i]);
	proto_rpc_reply_prog_mismatch(&rs[5], 105, 4, 4);
	proto_rpc_reply_rpc_mismatch(&rs[6], 106);
	proto_rpc_reply_auth_error(&rs[7], 107, AUTH_TOOWEAK);
	proto_rpc_reply_auth_error(&rs[8], 108, AUTH_BADCRED);
	for (int i = 0; i < 9; i++) {
		struct proto_rpc_reply d;
		struct proto_msg m;
		size_t off;

		CU_ASSERT_FATAL(proto_msg_init(&m, 256) == 0);
		CU_ASSERT_FATAL(proto_rpc_reply_encode(&m, &rs[i]) == 0);
		CU_ASSERT_FATAL(proto_rpc_reply_decode(proto_msg_data(&m), proto_msg_len(&m), &d, &off) == 0);
		CU_ASSERT_EQUAL(off, proto_msg_len(&m));
		CU_ASSERT(d.xid == rs[i].xid && d.reply_stat == rs[i].reply_stat);
		if (d.reply_stat == MSG_ACCEPTED) {
			CU_ASSERT_EQUAL(d.accept_stat, rs[i].accept_stat);
			CU_ASSERT_EQUAL(d.verf.flavor, AUTH_NONE);
		} else {
			CU_ASSERT_EQUAL(d.reject_stat, rs[i].reject_stat);
		}
		if (rs[i].accept_stat == PROG_MISMATCH || (d.reply_stat == MSG_DENIED && d.reject_stat == RPC_MISMATCH))
			CU_ASSERT(d.mismatch_low == rs[i].mismatch_low && d.mismatch_high == rs[i].mismatch_high);
		if (d.reply_stat == MSG_DENIED && d.reject_stat == AUTH_ERROR)
			CU_ASSERT_EQUAL(d.auth_stat, rs[i].auth_stat);
		for (size_t cut = 0; cut < off; cut++) {
			uint8_t *p = malloc(cut ? cut : 1);
			memcpy(p, proto_msg_data(&m), cut);
			CU_ASSERT(proto_rpc_reply_decode(p, cut, &d, &off) == -EBADMSG);
			free(p);
		}
		proto_msg_destroy(&m);
	}
	/* RPC_MISMATCH and PROG_MISMATCH by hand: xid, REPLY, stat, [verf, accept,] low, high. */
	{
		static const uint8_t rpcmm[] = { 0, 0, 0, 106, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2 };
		static const uint8_t progmm[] = { 0, 0, 0, 105, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
						  0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 4 };
		struct proto_msg m;
		CU_ASSERT_FATAL(proto_msg_init(&m, 64) == 0);
		CU_ASSERT(proto_rpc_reply_encode(&m, &rs[6]) == 0);
		CU_ASSERT(proto_msg_len(&m) == sizeof(rpcmm) && memcmp(proto_msg_data(&m), rpcmm, sizeof(rpcmm)) == 0);
		proto_msg_reset(&m);
		CU_ASSERT(proto_rpc_reply_encode(&m, &rs[5]) == 0);
		CU_ASSERT(proto_msg_len(&m) == sizeof(progmm) && memcmp(proto_msg_data(&m), progmm, sizeof(progmm)) == 0);
		proto_msg_destroy(&m);
	}
}

static void reply_rejects(void)
{
	/* xid, REPLY, then a bad reply_stat / accept_stat / reject_stat. */
	uint8_t bad_stat[] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2 };
	uint8_t bad_accept[] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6 };
	uint8_t bad_reject[] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2 };
	uint8_t big_verf[] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0x01, 0x91 };
	struct proto_rpc_reply r;
	struct proto_msg m;
	size_t off;

	CU_ASSERT_EQUAL(proto_rpc_reply_decode(bad_stat, sizeof(bad_stat), &r, &off), -EBADMSG);
	CU_ASSERT_EQUAL(proto_rpc_reply_decode(bad_accept, sizeof(bad_accept), &r, &off), -EBADMSG);
	CU_ASSERT_EQUAL(proto_rpc_reply_decode(bad_reject, sizeof(bad_reject), &r, &off), -EBADMSG);
	CU_ASSERT_EQUAL(proto_rpc_reply_decode(big_verf, sizeof(big_verf), &r, &off), -EBADMSG);
	/* Encoders refuse states that do not exist. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 64) == 0);
	proto_rpc_reply_accepted(&r, 1, 6);
	CU_ASSERT_EQUAL(proto_rpc_reply_encode(&m, &r), -EINVAL);
	CU_ASSERT_EQUAL(proto_msg_len(&m), 0);
	proto_msg_destroy(&m);
}

static void peek_and_buffer_limits(void)
{
	uint8_t call[8] = { 0, 0, 0, 5, 0, 0, 0, 0 }, reply[8] = { 0, 0, 0, 6, 0, 0, 0, 1 }, other[8] = { 0, 0, 0, 7, 0, 0, 0, 2 };
	uint32_t xid, type;
	struct proto_msg m;
	struct proto_rpc_call c = { .xid = 1 };

	CU_ASSERT(proto_rpc_peek(call, 8, &xid, &type) == 0 && xid == 5 && type == CALL);
	CU_ASSERT(proto_rpc_peek(reply, 8, &xid, &type) == 0 && xid == 6 && type == REPLY);
	CU_ASSERT_EQUAL(proto_rpc_peek(other, 8, &xid, &type), -EBADMSG);
	CU_ASSERT_EQUAL(proto_rpc_peek(call, 7, &xid, &type), -EBADMSG);
	/* A message buffer too small for a header: -EMSGSIZE and nothing written. */
	CU_ASSERT_FATAL(proto_msg_init(&m, 20) == 0);
	CU_ASSERT_EQUAL(proto_rpc_call_encode(&m, &c), -EMSGSIZE);
	CU_ASSERT_EQUAL(proto_msg_len(&m), 0);
	proto_msg_destroy(&m);
	CU_ASSERT_EQUAL(proto_msg_init(&m, 0), -EINVAL);
	CU_ASSERT_EQUAL(proto_msg_init(&m, PROTO_RM_RECORD_LIMIT + 1), -EINVAL);
}

/* ---- XID table -------------------------------------------------------------------------------- */

static void count_cb(uint32_t xid, void *cookie, void *arg)
{
	(void)xid;
	(void)cookie;
	(*(unsigned *)arg)++;
}

static void xid_table_basics(void)
{
	struct proto_xid_table *t = proto_xid_table_new(4);
	int a, b, c, d;
	unsigned n = 0;
	uint32_t x;

	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT(proto_xid_table_new(0) == NULL);
	CU_ASSERT(proto_xid_add(t, 10, &a, 0) == 0);
	CU_ASSERT(proto_xid_add(t, 10, &b, 0) == -EEXIST);
	CU_ASSERT(proto_xid_add(t, 11, &b, 500) == 0);
	CU_ASSERT(proto_xid_add(t, 12, &c, 1000) == 0);
	CU_ASSERT(proto_xid_add(t, 13, &d, 0) == 0);
	CU_ASSERT(proto_xid_add(t, 14, &d, 0) == -ENOSPC);
	CU_ASSERT_EQUAL(proto_xid_count(t), 4);
	CU_ASSERT(proto_xid_take(t, 99) == NULL);
	CU_ASSERT(proto_xid_take(t, 10) == &a);
	CU_ASSERT(proto_xid_take(t, 10) == NULL);
	CU_ASSERT_EQUAL(proto_xid_expire(t, 600, count_cb, &n), 1); /* xid 11 */
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT(proto_xid_take(t, 11) == NULL);
	CU_ASSERT(proto_xid_take(t, 12) == &c);
	n = 0;
	proto_xid_drain(t, count_cb, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(proto_xid_count(t), 0);
	/* proto_xid_next never hands out an outstanding XID. */
	x = proto_xid_next(t);
	CU_ASSERT(proto_xid_add(t, x + 1, &a, 0) == 0);
	CU_ASSERT(proto_xid_next(t) == x + 2);
	proto_xid_table_free(t);
}

/* Many add/take cycles against a reference array: tombstones and rebuilds keep lookups right. */
static void xid_table_churn(void)
{
	enum { MAX = 64, SPACE = 4096 };
	struct proto_xid_table *t = proto_xid_table_new(MAX);
	static int cookies[SPACE];
	static char live[SPACE];
	unsigned nlive = 0;
	uint64_t rnd = 12345;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	memset(live, 0, sizeof(live));
	for (int i = 0; i < 200000; i++) {
		uint32_t x;
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		x = (uint32_t)(rnd >> 33) % SPACE;
		if (live[x]) {
			CU_ASSERT_FATAL(proto_xid_take(t, x * 7919u) == &cookies[x]);
			live[x] = 0;
			nlive--;
		} else if (nlive < MAX) {
			CU_ASSERT_FATAL(proto_xid_add(t, x * 7919u, &cookies[x], 0) == 0);
			live[x] = 1;
			nlive++;
		} else {
			CU_ASSERT_FATAL(proto_xid_add(t, x * 7919u, &cookies[x], 0) == -ENOSPC);
		}
		CU_ASSERT_EQUAL_FATAL(proto_xid_count(t), nlive);
	}
	for (unsigned x = 0; x < SPACE; x++)
		if (live[x])
			CU_ASSERT(proto_xid_take(t, x * 7919u) == &cookies[x]);
	CU_ASSERT_EQUAL(proto_xid_count(t), 0);
	proto_xid_table_free(t);
}

/* ---- one connection, both directions ------------------------------------------------------------ */

/* What the server sends a client on one connection: a reply to xid A, a CB_COMPOUND call on the
 * backchannel, a reply nobody asked for, and the reply to xid B — each split across fragments. */
static void demux_one_connection(void)
{
	struct proto_xid_table *t = proto_xid_table_new(16);
	struct stream s = { 0 };
	int call_a, call_b, replies = 0, cb_calls = 0, strays = 0;
	uint32_t xa, xb;
	struct proto_rm_reader r;
	struct sample_case cbc = { OP_CB_LAYOUTRECALL, 0 }, seq = { OP_CB_SEQUENCE, 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	xa = proto_xid_next(t);
	xb = proto_xid_next(t);
	CU_ASSERT(proto_xid_add(t, xa, &call_a, 0) == 0);
	CU_ASSERT(proto_xid_add(t, xb, &call_b, 0) == 0);
	for (int i = 0; i < 4; i++) {
		struct proto_msg m;
		struct proto_rpc_reply rep;
		void *framed;
		size_t flen;

		CU_ASSERT_FATAL(proto_msg_init(&m, 4096) == 0);
		if (i == 1) {
			struct proto_rpc_call c = { .xid = 0x77, .prog = NFS4_CALLBACK, .vers = NFS_CB, .proc = CB_COMPOUND };
			struct proto_compound_enc e;
			nfs_cb_argop4 op;
			c.cred.flavor = AUTH_NONE;
			CU_ASSERT(proto_rpc_call_encode(&m, &c) == 0);
			CU_ASSERT(proto_cb_compound_begin(&e, &m, "recall", 1, 42) == 0);
			sample_cb_argop(&seq, &op);
			CU_ASSERT(proto_cb_compound_add(&e, &op) == 0);
			sample_cb_argop(&cbc, &op);
			CU_ASSERT(proto_cb_compound_add(&e, &op) == 0);
			CU_ASSERT(proto_compound_end(&e) == 0);
		} else {
			proto_rpc_reply_accepted(&rep, i == 0 ? xa : i == 2 ? 0x5555 : xb, SUCCESS);
			CU_ASSERT(proto_rpc_reply_encode(&m, &rep) == 0);
		}
		CU_ASSERT_FATAL(proto_rm_frame(proto_msg_data(&m), proto_msg_len(&m), 16, &framed, &flen) == 0);
		stream_add(&s, framed, flen);
		free(framed);
		proto_msg_destroy(&m);
	}

	/* The client's side: feed in 5-byte pieces, demultiplex every record. */
	proto_rm_reader_init(&r, 0);
	for (size_t pos = 0; pos < s.len;) {
		size_t n = s.len - pos < 5 ? s.len - pos : 5;
		ssize_t used = proto_rm_feed(&r, s.b + pos, n);
		void *rec;
		size_t len;

		CU_ASSERT_FATAL(used >= 0);
		pos += (size_t)used;
		while (proto_rm_take(&r, &rec, &len) == 1) {
			uint32_t xid, type;
			CU_ASSERT_FATAL(proto_rpc_peek(rec, len, &xid, &type) == 0);
			if (type == REPLY) {
				struct proto_rpc_reply d;
				size_t off;
				void *cookie = proto_xid_take(t, xid);
				CU_ASSERT(proto_rpc_reply_decode(rec, len, &d, &off) == 0);
				if (cookie) {
					CU_ASSERT((xid == xa && cookie == &call_a) || (xid == xb && cookie == &call_b));
					replies++;
				} else {
					strays++;
				}
			} else {
				struct proto_rpc_call c;
				struct proto_cb_compound_args a;
				size_t off;
				CU_ASSERT_FATAL(proto_rpc_call_decode(rec, len, &c, &off, NULL) == 0);
				CU_ASSERT(c.prog == NFS4_CALLBACK && c.vers == 1 && c.proc == CB_COMPOUND);
				CU_ASSERT_FATAL(proto_cb_compound_args_decode((uint8_t *)rec + off, len - off, 0, &a) == 0);
				CU_ASSERT(a.stop == PROTO_COMPOUND_DONE && a.args.callback_ident == 42);
				CU_ASSERT(a.args.argarray.argarray_len == 2 &&
					  a.args.argarray.argarray_val[0].argop == OP_CB_SEQUENCE &&
					  a.args.argarray.argarray_val[1].argop == OP_CB_LAYOUTRECALL);
				proto_cb_compound_args_free(&a);
				cb_calls++;
			}
			free(rec);
		}
	}
	CU_ASSERT(replies == 2 && cb_calls == 1 && strays == 1);
	CU_ASSERT_EQUAL(proto_xid_count(t), 0);
	proto_rm_reader_destroy(&r);
	proto_xid_table_free(t);
	free(s.b);
	samples_free();
}

TEST_SUITE(proto_rpc, "proto/rpc", NULL, NULL,
	   { "rm_split_everywhere", rm_split_everywhere },
	   { "rm_feed_stops_at_record", rm_feed_stops_at_record },
	   { "rm_oversize_refused", rm_oversize_refused },
	   { "rm_memory_follows_bytes", rm_memory_follows_bytes },
	   { "rm_frame_layout", rm_frame_layout },
	   { "call_roundtrip", call_roundtrip },
	   { "call_rejects", call_rejects },
	   { "call_known_bytes", call_known_bytes },
	   { "reply_roundtrip", reply_roundtrip },
	   { "reply_rejects", reply_rejects },
	   { "peek_and_buffer_limits", peek_and_buffer_limits },
	   { "xid_table_basics", xid_table_basics },
	   { "xid_table_churn", xid_table_churn },
	   { "demux_one_connection", demux_one_connection });
