/* Wireshark understands every byte we send: messages from our encoders, in one TCP stream on port
 * 2049 (client calls and server replies, and a CB_COMPOUND the server sends on the same
 * connection), are wrapped into a capture with text2pcap and dissected by tshark, which must name
 * every operation and callback of issue 3 in calls and replies and report nothing malformed. */
#include "tests/harness.h"
#include "tests/proto/samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct capture {
	FILE *f;
	unsigned packets;
};

/* One record-marked message as one TCP segment. text2pcap -D -T 876,2049 sends 'I' packets from
 * port 876 to 2049 (client to server) and 'O' packets back. */
static void packet(struct capture *c, char dir, struct proto_msg *m)
{
	const uint8_t *wire;
	size_t len;

	CU_ASSERT_FATAL(proto_msg_finish(m, &wire, &len) == 0);
	fprintf(c->f, "%c\n", dir);
	for (size_t off = 0; off < len; off += 16) {
		fprintf(c->f, "%06zx", off);
		for (size_t i = off; i < off + 16 && i < len; i++)
			fprintf(c->f, " %02x", wire[i]);
		fputc('\n', c->f);
	}
	c->packets++;
	proto_msg_reset(m);
}

/* A client call with the given ops (SEQUENCE first where the op needs a session), then the
 * server's reply with each op's sample result. */
static void exchange(struct capture *c, struct proto_msg *m, uint32_t xid, const uint32_t *ops, unsigned n)
{
	struct proto_rpc_call call = { .xid = xid, .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_COMPOUND };
	struct proto_rpc_reply rep;
	struct proto_compound_enc e;
	struct proto_compound_reply r;

	call.cred.flavor = AUTH_SYS;
	call.cred.sys = (struct proto_authsys){ .stamp = 1, .machinename = "client-7", .uid = 0, .gid = 0 };
	CU_ASSERT_FATAL(proto_rpc_call_encode(m, &call) == 0);
	CU_ASSERT_FATAL(proto_compound_begin(&e, m, "tshark", 1) == 0);
	for (unsigned i = 0; i < n; i++) {
		struct sample_case sc = { ops[i], 0 };
		nfs_argop4 op;
		sample_argop(&sc, &op);
		CU_ASSERT_FATAL(proto_compound_add(&e, &op) == 0);
	}
	CU_ASSERT_FATAL(proto_compound_end(&e) == 0);
	packet(c, 'I', m);

	proto_rpc_reply_accepted(&rep, xid, SUCCESS);
	CU_ASSERT_FATAL(proto_rpc_reply_encode(m, &rep) == 0);
	CU_ASSERT_FATAL(proto_compound_reply_begin(&r, m, "tshark", 6, 0) == 0);
	for (unsigned i = 0; i < n; i++) {
		struct sample_case sc = { ops[i], 0 };
		nfs_resop4 res;
		sample_resop(&sc, &res);
		CU_ASSERT_FATAL(proto_compound_reply_add(&r, &res) == 0);
	}
	CU_ASSERT_FATAL(proto_compound_reply_end(&r, NFS4_OK) == 0);
	packet(c, 'O', m);
}

/* The server's backchannel call on the same connection, and the client's reply.
 * Wireshark 4.0 names CB_RECALL_ANY and CB_NOTIFY_DEVICEID but does not dissect their arguments
 * (its CB_COMPOUND dissector skips them), so each goes last in its CB_COMPOUND, after
 * CB_SEQUENCE: otherwise tshark would read their arguments as the next opcode. The bytes it then
 * leaves as data must be exactly that op's arguments. Returns their size. */
static size_t callback(struct capture *c, struct proto_msg *m, uint32_t xid, const uint32_t *ops, unsigned n)
{
	struct proto_rpc_call call = { .xid = xid, .prog = NFS4_CALLBACK, .vers = NFS_CB, .proc = CB_COMPOUND };
	struct proto_rpc_reply rep;
	struct proto_compound_enc e;
	struct proto_compound_reply r;
	size_t last_args = 0;

	call.cred.flavor = AUTH_NONE;
	CU_ASSERT_FATAL(proto_rpc_call_encode(m, &call) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_begin(&e, m, "", 1, 0) == 0);
	for (unsigned i = 0; i < n; i++) {
		struct sample_case sc = { ops[i], 0 };
		nfs_cb_argop4 a;
		sample_cb_argop(&sc, &a);
		CU_ASSERT_FATAL(proto_cb_compound_add(&e, &a) == 0);
		last_args = xdr_sizeof((xdrproc_t)xdr_nfs_cb_argop4, &a) - 4;
	}
	CU_ASSERT_FATAL(proto_compound_end(&e) == 0);
	packet(c, 'O', m);

	proto_rpc_reply_accepted(&rep, xid, SUCCESS);
	CU_ASSERT_FATAL(proto_rpc_reply_encode(m, &rep) == 0);
	CU_ASSERT_FATAL(proto_cb_compound_reply_begin(&r, m, "", 0, 0) == 0);
	for (unsigned i = 0; i < n; i++) {
		nfs_cb_resop4 res;
		memset(&res, 0, sizeof(res));
		res.resop = ops[i];
		if (ops[i] == OP_CB_SEQUENCE) {
			struct sample_case sc = { OP_CB_SEQUENCE, 0 };
			sample_cb_resop(&sc, &res);
		}
		CU_ASSERT_FATAL(proto_cb_compound_reply_add(&r, &res) == 0);
	}
	CU_ASSERT_FATAL(proto_compound_reply_end(&r, NFS4_OK) == 0);
	packet(c, 'I', m);
	return last_args;
}

static int is_session_op(uint32_t op)
{
	return op == OP_EXCHANGE_ID || op == OP_CREATE_SESSION || op == OP_DESTROY_SESSION ||
	       op == OP_DESTROY_CLIENTID || op == OP_BIND_CONN_TO_SESSION || op == OP_SEQUENCE;
}

/* How often tshark's verbose output names an operation: lines "Opcode: NAME (NUMBER)" where NAME
 * is not "Unknown", counted per number, fore channel and callbacks apart (CB names start "CB_").
 * Wireshark's spellings differ from the RFC's in places (GETDEVINFO), so the number decides. */
static void count_ops(const char *text, unsigned fore[], unsigned cb[], unsigned max)
{
	for (const char *p = text; (p = strstr(p, "Opcode: ")); ) {
		char name[64];
		unsigned num;
		p += 8;
		if (sscanf(p, "%63s (%u)", name, &num) == 2 && num < max && strcmp(name, "Unknown") != 0) {
			if (strncmp(name, "CB_", 3) == 0)
				cb[num]++;
			else
				fore[num]++;
		}
	}
}

/* The expert summary lines of one severity section of "tshark -z expert" ("Warns (n)", ...),
 * each checked against the allowed summaries; returns how many were not allowed. */
static unsigned unexpected_expert(const char *text, const char *section, const char *const *allowed)
{
	const char *p = strstr(text, section);
	unsigned bad = 0;

	if (!p || !(p = strstr(p, "Summary")) || !(p = strchr(p, '\n')))
		return 0;
	for (p++; *p && *p != '\n' && *p != '=' && *p != '-'; ) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[512];
		int ok = 0;

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		for (const char *const *a = allowed; *a; a++)
			ok |= strstr(line, *a) != NULL;
		if (!ok) {
			fprintf(stderr, "tshark %s: %s\n", section, line);
			bad++;
		}
		p += len + (nl ? 1 : 0);
	}
	return bad;
}

static void tshark_names_every_op(void)
{
	/* CLOSE4res must carry a stateid; Wireshark flags that field as deprecated whatever its value. */
	static const char *const allowed_warnings[] = { "State ID deprecated in CLOSE responses", NULL };
	static const char *const none[] = { NULL };
	const char *dir = test_tmpdir("tshark");
	char hex[512], pcap[512], want[64];
	struct capture c = { 0 };
	struct proto_msg m;
	uint32_t ops[64];
	unsigned n = 0, fore[128] = { 0 }, cb[128] = { 0 };
	size_t recall_any_args, notify_args;
	char *out = NULL, *expert = NULL, *ports = NULL;
	int st;

	TEST_SKIP_IF(test_run(NULL, "command -v text2pcap >/dev/null && command -v tshark >/dev/null") != 0,
		     "tshark/text2pcap not installed (make deps)");
	snprintf(hex, sizeof(hex), "%s/nfs.hex", dir);
	snprintf(pcap, sizeof(pcap), "%s/nfs.pcapng", dir);
	c.f = fopen(hex, "w");
	CU_ASSERT_FATAL(c.f != NULL);
	CU_ASSERT_FATAL(proto_msg_init(&m, 1 << 20) == 0);

	/* Session set-up and tear-down ops each in their own compound, like a client sends them. */
	exchange(&c, &m, 1, (uint32_t[]){ OP_EXCHANGE_ID }, 1);
	exchange(&c, &m, 2, (uint32_t[]){ OP_CREATE_SESSION }, 1);
	exchange(&c, &m, 3, (uint32_t[]){ OP_BIND_CONN_TO_SESSION }, 1);
	/* Everything else after a SEQUENCE, in one compound. */
	ops[n++] = OP_SEQUENCE;
	for (const uint32_t *op = sample_issue_ops; *op; op++)
		if (!is_session_op(*op))
			ops[n++] = *op;
	exchange(&c, &m, 4, ops, n);
	/* The server's callbacks on the same connection, interleaved with fore-channel traffic. */
	recall_any_args = callback(&c, &m, 0x77, (uint32_t[]){ OP_CB_SEQUENCE, OP_CB_LAYOUTRECALL, OP_CB_RECALL_ANY }, 3);
	exchange(&c, &m, 5, (uint32_t[]){ OP_SEQUENCE, OP_PUTROOTFH, OP_GETFH }, 3);
	notify_args = callback(&c, &m, 0x78, (uint32_t[]){ OP_CB_SEQUENCE, OP_CB_NOTIFY_DEVICEID }, 2);
	exchange(&c, &m, 6, (uint32_t[]){ OP_DESTROY_SESSION }, 1);
	exchange(&c, &m, 7, (uint32_t[]){ OP_DESTROY_CLIENTID }, 1);
	CU_ASSERT(fclose(c.f) == 0);
	proto_msg_destroy(&m);
	CU_ASSERT_EQUAL(c.packets, 18);

	/* text2pcap chatters on stderr even with -q: keep its words for when it fails. */
	st = test_run(&out, "text2pcap -q -D -T 876,2049 -4 10.0.0.2,10.0.0.1 '%s' '%s' 2>&1", hex, pcap);
	if (st != 0)
		fprintf(stderr, "%s", out ? out : "");
	free(out);
	CU_ASSERT_FATAL(st == 0);
	/* Port 2049 is NFS's: no decode-as needed. The tree is built (-V), as Wireshark shows it. */
	st = test_run(&out, "tshark -n -r '%s' -V 2>&1", pcap);
	CU_ASSERT_FATAL(st == 0 && out);
	st = test_run(&expert, "tshark -n -r '%s' -V -z expert,note 2>/dev/null | sed -n '/^=====/,$p'", pcap);
	CU_ASSERT_FATAL(st == 0 && expert);
	st = test_run(&ports, "tshark -2 -n -r '%s' -T fields -e frame.number -e rpc.msgtyp -e rpc.program "
			      "-e tcp.dstport -e rpc.repframe -e rpc.reqframe 2>/dev/null", pcap);
	CU_ASSERT_FATAL(st == 0 && ports);

	/* Every message was taken for RPC: NFS calls to the server's port 2049, callbacks from it, and
	 * every reply matched (by XID, on this one TCP stream) to the call just before it. */
	{
		unsigned frames = 0;
		for (char *line = strtok(ports, "\n"); line; line = strtok(NULL, "\n")) {
			unsigned frame, type, prog, dport, other;
			if (sscanf(line, "%u\t%u\t%u\t%u\t%u", &frame, &type, &prog, &dport, &other) != 5) {
				fprintf(stderr, "tshark fields: %s\n", line);
				CU_FAIL("a message tshark did not take for a matched RPC call or reply");
				continue;
			}
			frames++;
			CU_ASSERT(prog == NFS4_PROGRAM || prog == NFS4_CALLBACK);
			CU_ASSERT_EQUAL(dport, (prog == NFS4_PROGRAM) == (type == CALL) ? 2049u : 876u);
			CU_ASSERT_EQUAL(other, type == CALL ? frame + 1 : frame - 1);
		}
		CU_ASSERT_EQUAL(frames, c.packets);
	}

	/* Every operation named in a call and in a reply. */
	count_ops(out, fore, cb, 128);
	for (const uint32_t *op = sample_issue_ops; *op; op++) {
		if (fore[*op] < 2)
			fprintf(stderr, "tshark named %s %u times\n", proto_opnum4_name(*op), fore[*op]);
		CU_ASSERT(fore[*op] >= 2);
	}
	for (const uint32_t *op = sample_issue_cb_ops; *op; op++) {
		if (cb[*op] < 2)
			fprintf(stderr, "tshark named %s %u times\n", proto_cb_opnum4_name(*op), cb[*op]);
		CU_ASSERT(cb[*op] >= 2);
	}
	CU_ASSERT(strstr(out, "Opcode: Unknown") == NULL);
	/* What tshark leaves undissected is exactly the two callbacks' arguments. */
	snprintf(want, sizeof(want), "Data (%zu bytes)", recall_any_args);
	CU_ASSERT(strstr(out, want) != NULL);
	snprintf(want, sizeof(want), "Data (%zu bytes)", notify_args);
	CU_ASSERT(strstr(out, want) != NULL);
	/* Nothing malformed, no expert errors, no warnings but the one allowed. */
	CU_ASSERT(strstr(out, "Malformed") == NULL && strstr(out, "malformed") == NULL);
	CU_ASSERT(strstr(expert, "Summary") != NULL); /* the expert tap did run */
	CU_ASSERT_EQUAL(unexpected_expert(expert, "Errors (", none), 0);
	CU_ASSERT_EQUAL(unexpected_expert(expert, "Warns (", allowed_warnings), 0);
	free(out);
	free(expert);
	free(ports);
	samples_free();
}

TEST_SUITE(proto_tshark, "proto/tshark", NULL, NULL, { "tshark_names_every_op", tshark_names_every_op });
