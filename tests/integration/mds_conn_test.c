/* Connections that never log in: pnfs-mds drops one that has set up no session within
 * login-timeout, whether it is silent, stuck inside a record or only pinging (NULL, EXCHANGE_ID),
 * with one log line naming the peer and what it sent; a connection with a session (CREATE_SESSION,
 * SEQUENCE, BIND_CONN_TO_SESSION) stays. With max-connections reached by idle sockets a real client
 * is refused only until they are dropped. Metrics count the drops; log lines carry wall-clock time. */
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/layout_util.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LOGIN_S 3      /* the suite's --login-timeout */
#define MAX_CONNS 2    /* and --max-connections */
#define DROP_WAIT_MS 10000

static struct test_lab *lab;
static struct test_mds *mds;
static int mport;

static int suite_init(void)
{
	char why[64];

	mport = test_free_port();
	mds = tmds_lab_up(&lab, 1, "32M", NULL, "--concat", why, sizeof(why),
			  "--login-timeout %d --max-connections %d --metrics-port %d", LOGIN_S, MAX_CONNS, mport);
	if (!mds)
		return 1;
	/* The start-up check's connection is gone before the tests count theirs. */
	TW_WAIT_UNTIL(lt_metric(mport, "pnfs_mds_conns") == 0, 10 * 1000, 50);
	return 0;
}

static int suite_clean(void)
{
	return tmds_lab_down(&lab, &mds);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static struct nc *conn(void)
{
	struct nc *c = nc_connect(mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

/* The local port of c's socket: the server logs the peer as 127.0.0.1:PORT. */
static int local_port(const struct nc *c)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	if (getsockname(c->fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	return ntohs(a.sin_port);
}

/* Wait until the server counts `want` client connections (closes it has not seen yet would make
 * the next test's connection hit max-connections). */
static void wait_conns(long long want)
{
	long long n = -1;

	TW_WAIT_UNTIL((n = lt_metric(mport, "pnfs_mds_conns")) == want, 10 * 1000, 50);
	if (n == want)
		return;
	fprintf(stderr, "\n  pnfs_mds_conns is %lld, not %lld\n", n, want);
	CU_FAIL("the server did not get to the expected number of connections");
}

/* The log line of the drop of the connection from local port `port` (caller frees), or NULL. */
static char *drop_line(int port)
{
	char *log = tmds_log(mds), key[120], *p, *e, *line = NULL;

	if (!log)
		return NULL;
	snprintf(key, sizeof(key), "dropping connection from 127.0.0.1:%d: no session after %d s (", port, LOGIN_S);
	p = strstr(log, key);
	if (p) {
		while (p > log && p[-1] != '\n')
			p--;
		e = strchr(p, '\n');
		line = strndup(p, e ? (size_t)(e - p) : strlen(p));
	}
	free(log);
	return line;
}

/* The connection from `port` was dropped for its login time, and the log line says why. */
static void assert_dropped_for(int port, const char *reason)
{
	char *line = drop_line(port);

	if (!line) {
		char *log = tmds_log(mds);
		fprintf(stderr, "\n  no drop line for port %d in the log:\n%s\n", port, log ? log : "");
		free(log);
		CU_FAIL("the drop is not logged with the peer");
		return;
	}
	if (!strstr(line, reason)) {
		fprintf(stderr, "\n  drop line '%s' lacks '%s'\n", line, reason);
		CU_FAIL("the drop's reason is not logged");
	}
	free(line);
}

/* (a) A connection that sends nothing is closed after login-timeout, not before. */
static void test_silent_dropped(void)
{
	struct nc *c = conn();
	int port = local_port(c);
	uint64_t t0 = mono_ms(), waited;

	CU_ASSERT_EQUAL(nc_wait_closed(c, DROP_WAIT_MS), 1);
	waited = mono_ms() - t0;
	/* The server's timer starts at its accept, after our connect: never earlier than the limit. */
	if (waited + 20 < LOGIN_S * 1000u) {
		fprintf(stderr, "\n  closed after %llu ms\n", (unsigned long long)waited);
		CU_FAIL("a silent connection was dropped before login-timeout");
	}
	assert_dropped_for(port, "(sent nothing)");
	nc_free(c);
	wait_conns(0);
}

/* (b) Part of a record mark, and a whole ping followed by part of a record: both dropped. */
static void test_partial_record_dropped(void)
{
	struct nc *a = conn(), *b = conn();
	int pa = local_port(a), pb = local_port(b);
	static const uint8_t mark3[3] = { 0x80, 0x00, 0x00 };
	uint8_t part[14] = { 0x80, 0x00, 0x00, 100 }; /* a 100-byte record, 10 bytes of it */
	struct proto_rpc_reply r;

	CU_ASSERT_EQUAL(nc_send_bytes(a, mark3, sizeof(mark3)), 0);
	CU_ASSERT_EQUAL(nc_rpc(b, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_NULL,
			.flavor = AUTH_NONE }, &r, NULL, NULL), 0);
	CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
	CU_ASSERT_EQUAL(nc_send_bytes(b, part, sizeof(part)), 0);
	CU_ASSERT_EQUAL(nc_wait_closed(a, DROP_WAIT_MS), 1);
	CU_ASSERT_EQUAL(nc_wait_closed(b, DROP_WAIT_MS), 1);
	assert_dropped_for(pa, "(sent 3 bytes, part of a record)");
	assert_dropped_for(pb, ": 1 record and part of another)");
	nc_free(a);
	nc_free(b);
	wait_conns(0);
}

/* (c) EXCHANGE_ID and then NULL pings every 0.3 s: busy, but no session, so it goes too. */
static void test_pings_do_not_log_in(void)
{
	struct nc *c = conn();
	int port = local_port(c), pings = 0, rc = 0;
	struct proto_compound_res res;
	nfs_argop4 op;
	uint64_t t0 = mono_ms();

	nc_op_simple(&op, OP_EXCHANGE_ID);
	op.nfs_argop4_u.opexchange_id.eia_clientowner.co_ownerid.co_ownerid_len = 11;
	op.nfs_argop4_u.opexchange_id.eia_clientowner.co_ownerid.co_ownerid_val = "ping-client";
	op.nfs_argop4_u.opexchange_id.eia_state_protect.spa_how = SP4_NONE;
	CU_ASSERT_EQUAL_FATAL(nc_compound(c, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	while (mono_ms() - t0 < DROP_WAIT_MS) {
		struct proto_rpc_reply r;
		rc = nc_rpc(c, &(struct nc_call){ .prog = NFS4_PROGRAM, .vers = NFS_V4, .proc = NFSPROC4_NULL,
				.flavor = AUTH_SYS }, &r, NULL, NULL);
		if (rc)
			break;
		CU_ASSERT_EQUAL(r.accept_stat, SUCCESS);
		pings++;
		/* Time passes on purpose: a ping every 0.3 s until the server drops the connection. */
		sleep_ms(300);
	}
	CU_ASSERT_NOT_EQUAL(rc, 0); /* the server closed it */
	CU_ASSERT_EQUAL(nc_wait_closed(c, 1000), 1);
	/* It was answered all along until the limit: at 0.3 s intervals that is several pings. */
	CU_ASSERT(pings >= 3);
	assert_dropped_for(port, "records, none set up a session)");
	nc_free(c);
	wait_conns(0);
}

/* c answers its backchannel and a COMPOUND with SEQUENCE still works on it. */
static void assert_still_serves(struct nc *c, const char *who)
{
	struct nc_fh root;
	struct nc_attrs at;
	int rc = nc_rootfh(c, &root);

	if (rc != 0)
		fprintf(stderr, "\n  %s: PUTROOTFH: %d\n", who, rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(nc_getattrs(c, &root, &at), 0);
	CU_ASSERT_EQUAL(at.type, NF4DIR);
	CU_ASSERT_PTR_NULL(drop_line(local_port(c)));
}

/* A second connection onto s's session with a lone SEQUENCE (which binds it), sharing slot 0. */
static void seq_on(struct nc *c, struct nc *s)
{
	struct proto_compound_res res;

	memcpy(c->sessid, s->sessid, NFS4_SESSIONID_SIZE);
	c->have_session = 1;
	c->slot_seq = s->slot_seq;
	CU_ASSERT_EQUAL_FATAL(nc_seq(c, NULL, 0, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	s->slot_seq = c->slot_seq;
}

/* (d) CREATE_SESSION, a SEQUENCE on the session, or BIND_CONN_TO_SESSION: the connection stays
 * open past twice the limit and still answers. */
static void test_sessions_stay(void)
{
	struct nc *s = conn(), *q = conn(), *b;
	struct proto_compound_res res;
	nfs_argop4 op;

	CU_ASSERT_EQUAL_FATAL(nc_setup(s, "staying-client"), 0);
	seq_on(q, s);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conns_unestablished"), 0);
	/* Wait answering callbacks (the session's backchannel is s's). */
	nc_serve_callbacks(s, 2 * LOGIN_S * 1000 + 500, 1000);
	assert_still_serves(s, "CREATE_SESSION connection");
	q->slot_seq = s->slot_seq;
	assert_still_serves(q, "SEQUENCE connection");
	s->slot_seq = q->slot_seq;
	nc_free(q);
	wait_conns(1);

	b = conn();
	nc_op_simple(&op, OP_BIND_CONN_TO_SESSION);
	memcpy(op.nfs_argop4_u.opbind_conn_to_session.bctsa_sessid, s->sessid, NFS4_SESSIONID_SIZE);
	op.nfs_argop4_u.opbind_conn_to_session.bctsa_dir = CDFC4_FORE;
	CU_ASSERT_EQUAL_FATAL(nc_compound(b, &op, 1, &res), 0);
	CU_ASSERT_EQUAL(res.res.status, NFS4_OK);
	proto_compound_res_free(&res);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conns_unestablished"), 0);
	nc_serve_callbacks(s, 2 * LOGIN_S * 1000 + 500, 1000);
	memcpy(b->sessid, s->sessid, NFS4_SESSIONID_SIZE);
	b->have_session = 1;
	b->slot_seq = s->slot_seq;
	assert_still_serves(b, "BIND_CONN_TO_SESSION connection");
	s->slot_seq = b->slot_seq;
	assert_still_serves(s, "CREATE_SESSION connection, later");
	nc_free(b);
	nc_free(s);
	wait_conns(0);
}

/* (e) Two silent connections fill max-connections: a third client is refused, and once the two are
 * dropped a real client gets in and works. */
static void test_max_connections_freed(void)
{
	struct nc *s1 = conn(), *s2 = conn(), *late, *real;
	long long refused0 = lt_metric(mport, "pnfs_mds_conns_refused_total");
	char *log, key[120];
	int port;

	wait_conns(MAX_CONNS);
	late = conn(); /* the kernel completes the handshake; the server closes it at accept */
	port = local_port(late);
	CU_ASSERT_EQUAL(nc_wait_closed(late, DROP_WAIT_MS), 1);
	nc_free(late);
	log = tmds_log(mds);
	snprintf(key, sizeof(key), "refusing a connection from 127.0.0.1:%d: too many connections", port);
	if (!log || !strstr(log, key)) {
		fprintf(stderr, "\n  no '%s' in the log\n", key);
		CU_FAIL("the third connection was not refused for max-connections");
	}
	free(log);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conns_refused_total"), refused0 + 1);
	/* The idle ones go at their login time... */
	CU_ASSERT_EQUAL(nc_wait_closed(s1, DROP_WAIT_MS), 1);
	CU_ASSERT_EQUAL(nc_wait_closed(s2, DROP_WAIT_MS), 1);
	assert_dropped_for(local_port(s1), "(sent nothing)");
	assert_dropped_for(local_port(s2), "(sent nothing)");
	nc_free(s1);
	nc_free(s2);
	wait_conns(0);
	/* ...and a real client is served. */
	real = conn();
	CU_ASSERT_EQUAL_FATAL(nc_setup(real, "real-client"), 0);
	assert_still_serves(real, "client after the drops");
	nc_free(real);
	wait_conns(0);
}

/* (f) The gauge counts connections without a session; the counter counts the drops. */
static void test_metrics(void)
{
	long long drops0 = lt_metric(mport, "pnfs_mds_conn_login_timeouts_total");
	struct nc *idle, *s;

	CU_ASSERT(drops0 >= 0);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conns_unestablished"), 0);
	s = conn();
	CU_ASSERT_EQUAL_FATAL(nc_setup(s, "metrics-client"), 0);
	idle = conn();
	wait_conns(2);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conns_unestablished"), 1);
	CU_ASSERT_EQUAL(nc_wait_closed(idle, DROP_WAIT_MS), 1);
	nc_free(idle);
	wait_conns(1);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conn_login_timeouts_total"), drops0 + 1);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_conns_unestablished"), 0);
	nc_free(s);
	wait_conns(0);
}

/* Seconds since the epoch of a log line's "YYYY-MM-DDTHH:MM:SS.mmm+hhmm" start, or -1. */
static long long line_time(const char *line)
{
	struct tm tm;
	int y, mo, d, h, mi, s, ms, zh, zm, n = 0;
	char sign;

	if (sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c%2d%2d%n", &y, &mo, &d, &h, &mi, &s, &ms, &sign, &zh, &zm, &n) !=
		    10 ||
	    n != 28 || (sign != '+' && sign != '-') || line[n] != ' ')
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	/* Local time minus its offset is UTC. */
	return (long long)timegm(&tm) - (sign == '+' ? 1 : -1) * (zh * 3600LL + zm * 60LL);
}

/* (g) Every line of the server's log starts with wall-clock time in ISO 8601 with the offset, and a
 * drop logged now is stamped within a minute of time(NULL). */
static void test_log_wall_clock(void)
{
	struct nc *c = conn();
	int port = local_port(c), lines = 0;
	char *log, *line, *p;
	long long now, t;

	CU_ASSERT_EQUAL(nc_wait_closed(c, DROP_WAIT_MS), 1);
	nc_free(c);
	now = (long long)time(NULL);
	line = drop_line(port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	t = line_time(line);
	if (t < 0 || llabs(t - now) > 60) {
		fprintf(stderr, "\n  '%s': %lld, now %lld\n", line, t, now);
		CU_FAIL("the drop's timestamp is not the wall-clock time");
	}
	free(line);
	log = tmds_log(mds);
	CU_ASSERT_PTR_NOT_NULL_FATAL(log);
	for (p = log; *p; lines++) {
		char *e = strchr(p, '\n');
		if (e)
			*e = 0;
		if (strstr(p, " pnfs-mds ")) {
			t = line_time(p);
			if (t < 0 || t > now + 60 || t < now - 3600) {
				fprintf(stderr, "\n  log line without a wall-clock time: '%s'\n", p);
				CU_FAIL("a log line's timestamp is not ISO 8601 wall-clock time");
				break;
			}
		}
		if (!e)
			break;
		p = e + 1;
	}
	CU_ASSERT(lines > 1);
	free(log);
	wait_conns(0);
}

TEST_SUITE(mds_conn, "integration/mds-conn", suite_init, suite_clean,
	   { "silent_dropped", test_silent_dropped },
	   { "partial_record_dropped", test_partial_record_dropped },
	   { "pings_do_not_log_in", test_pings_do_not_log_in },
	   { "sessions_stay", test_sessions_stay },
	   { "max_connections_freed", test_max_connections_freed },
	   { "metrics", test_metrics },
	   { "log_wall_clock", test_log_wall_clock });
