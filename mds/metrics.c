/* Metrics in Prometheus' text exposition format on an optional HTTP port bound to 127.0.0.1
 * (metrics-port): layouts granted, recalled, returned and revoked, committed bytes, fenced clients,
 * connections dropped or refused, and a few gauges (layout stateids, clients, connections, pool
 * space). A tiny HTTP/1.0 responder on the server's own loop: one request per connection, answered
 * and closed; a connection that does not send its request within a few seconds is dropped. */
#include "mds/layout_int.h"

#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "proto/list.h"
#include "proto/log.h"
#include "proto/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define METRICS_MAX_CONNS 16
#define METRICS_REQ_MAX 4096
#define METRICS_TIMEOUT_MS 5000

struct mconn {
	struct proto_list link; /* on mds_metrics.conns */
	struct mds_metrics *m;
	int fd;
	uint64_t timer;
	size_t len;
	char req[METRICS_REQ_MAX];
	char *out;
	size_t out_len, out_off;
};

struct mds_metrics {
	struct mds_server *srv;
	int fd;
	int port;
	struct proto_list conns; /* by mconn.link */
	unsigned nconns;
};

/* ---- the text ------------------------------------------------------------------------------- */

static void counter(struct proto_strbuf *b, const char *name, const char *help, uint64_t v)
{
	proto_strbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static void gauge(struct proto_strbuf *b, const char *name, const char *help, uint64_t v)
{
	proto_strbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

/* Each LUN's service state: 1 in service, 0 while the LUN answering at its URL is not the pool's. */
static void lun_metrics(struct proto_strbuf *b, struct mds_server *srv)
{
	uint32_t n = srv->pool ? mds_pool_nluns(srv->pool) : 0;

	proto_strbuf_printf(b, "# HELP pnfs_mds_lun_in_service 1 while the LUN is the pool's; 0 while it is out of service (it came "
		"back different after a reconnect: see the log).\n"
		"# TYPE pnfs_mds_lun_in_service gauge\n");
	for (uint32_t i = 0; i < n; i++)
		proto_strbuf_printf(b, "pnfs_mds_lun_in_service{lun=\"%u\"} %d\n", i, mds_pool_lun_identity(srv->pool, i, NULL, 0) == 0);
	proto_strbuf_printf(b, "# HELP pnfs_mds_lun_checked 0 from the loss of the LUN's session until the next one passed its identity "
		"check (no layouts are handed out meanwhile).\n"
		"# TYPE pnfs_mds_lun_checked gauge\n");
	for (uint32_t i = 0; i < n; i++)
		proto_strbuf_printf(b, "pnfs_mds_lun_checked{lun=\"%u\"} %d\n", i, blkmap_dev_checked(mds_pool_lun_dev(srv->pool, i)));
	proto_strbuf_printf(b, "# HELP pnfs_mds_lun_identity_failures_total Identity checks after a reconnect that found another LUN.\n"
		"# TYPE pnfs_mds_lun_identity_failures_total counter\n");
	for (uint32_t i = 0; i < n; i++)
		proto_strbuf_printf(b, "pnfs_mds_lun_identity_failures_total{lun=\"%u\"} %u\n", i,
		     blkmap_dev_identity_failures(mds_pool_lun_dev(srv->pool, i)));
	proto_strbuf_printf(b, "# HELP pnfs_mds_lun_aptpl What the LUN answered at start to PERSISTENT RESERVE OUT REGISTER with "
		"APTPL set, as stock Linux clients send it: 1 accepted, 0 refused (tgt), -1 no answer; no sample when "
		"not asked (scsi-layouts no, LUNs not all iSCSI).\n"
		"# TYPE pnfs_mds_lun_aptpl gauge\n");
	for (uint32_t i = 0; i < n && i < MDS_MAX_LUNS; i++) {
		uint8_t a = srv->layouts->aptpl[i];
		if (a != MDS_APTPL_UNPROBED)
			proto_strbuf_printf(b, "pnfs_mds_lun_aptpl{lun=\"%u\"} %d\n", i,
			     a == MDS_APTPL_ACCEPTED ? 1 : a == MDS_APTPL_REFUSED ? 0 : -1);
	}
}

char *mds_metrics_text(struct mds_server *srv)
{
	const struct mds_layouts *lo = srv->layouts;
	const struct mds_lo_stats *s = &lo->stats;
	static const char *const modes[2] = { "read", "rw" };
	struct proto_strbuf b = { 0 };
	struct mds_map_iter it;
	uint64_t nrecalls = 0, clients = 0;

	proto_strbuf_printf(&b, "# HELP pnfs_mds_layouts_granted_total Layouts granted by LAYOUTGET.\n"
		 "# TYPE pnfs_mds_layouts_granted_total counter\n");
	for (unsigned t = 0; t < MDS_LO_NTYPES; t++)
		for (int m = 0; m < 2; m++)
			proto_strbuf_printf(&b, "pnfs_mds_layouts_granted_total{type=\"%s\",iomode=\"%s\"} %llu\n",
			     mds_lo_type_at(t)->name, modes[m], (unsigned long long)s->granted[t][m]);
	counter(&b, "pnfs_mds_layout_granted_bytes_total", "Bytes of file covered by granted layouts.",
		s->granted_bytes);
	counter(&b, "pnfs_mds_layouts_recalled_total", "CB_LAYOUTRECALLs started (truncate, remove, conflicts).",
		s->recalls);
	counter(&b, "pnfs_mds_layouts_returned_total", "Layout returns (LAYOUTRETURN, return-on-close).",
		s->returned);
	counter(&b, "pnfs_mds_layouts_revoked_total",
		"Layout stateids revoked (recall not answered in time, lease expired).", s->revoked);
	counter(&b, "pnfs_mds_layout_trylater_total", "LAYOUTGETs refused while conflicting layouts were recalled.",
		s->trylater);
	counter(&b, "pnfs_mds_layout_lun_out_total",
		"LAYOUTGETs refused (LAYOUTUNAVAILABLE) while a LUN of the pool was out of service.", s->lun_out);
	counter(&b, "pnfs_mds_layout_lun_unchecked_total",
		"LAYOUTGETs answered LAYOUTTRYLATER while a LUN that lost its session was not yet checked again.",
		s->lun_unchecked);
	counter(&b, "pnfs_mds_layoutcommits_total", "LAYOUTCOMMITs done.", s->commits);
	counter(&b, "pnfs_mds_committed_bytes_total", "Bytes LAYOUTCOMMIT turned from INVALID to READ_WRITE.",
		s->committed_bytes);
	counter(&b, "pnfs_mds_store_commits_total",
		"Durable store commits of changing compounds (one per turn of the loop: a group commit).",
		srv->store_commits);
	counter(&b, "pnfs_mds_store_grouped_compounds_total", "Changing compounds those commits carried.",
		srv->grouped_compounds);
	counter(&b, "pnfs_mds_net_received_bytes_total",
		"Bytes read from NFS client connections (RPC records, data of MDS-path WRITEs included).",
		srv->net_bytes_received);
	counter(&b, "pnfs_mds_net_sent_bytes_total",
		"Bytes written to NFS client connections (replies, callbacks, data of MDS-path READs).",
		srv->net_bytes_sent);
	counter(&b, "pnfs_mds_data_reads_total", "READs answered through the MDS (clients without a layout for the range).",
		srv->data_reads);
	counter(&b, "pnfs_mds_data_read_bytes_total", "File bytes those READs returned.", srv->data_read_bytes);
	counter(&b, "pnfs_mds_data_writes_total", "WRITEs done through the MDS.", srv->data_writes);
	counter(&b, "pnfs_mds_data_written_bytes_total", "File bytes those WRITEs wrote.", srv->data_written_bytes);
	counter(&b, "pnfs_mds_conn_login_timeouts_total",
		"Connections dropped for having no session after login-timeout (silent, part of a record, pings only).",
		srv->login_timeouts);
	counter(&b, "pnfs_mds_conns_refused_total",
		"Connections refused at accept (max-connections reached, or shutting down).", srv->conns_refused);
	counter(&b, "pnfs_mds_fenced_clients_total", "Clients fenced by PREEMPT AND ABORT of their key.", s->fenced);
	counter(&b, "pnfs_mds_fence_failures_total", "Fencing attempts that failed on some LUN (retried).",
		s->fence_failures);
	for (const struct mds_lo_state *ls = lo->states; ls; ls = ls->next)
		for (const struct mds_lo_recall *r = ls->recalls; r; r = r->next)
			nrecalls++;
	for (void *v = mds_map_first(&srv->clients, &it); v; v = mds_map_next(&srv->clients, &it))
		clients++;
	gauge(&b, "pnfs_mds_layout_stateids", "Layout stateids held (revoked ones included).", lo->nstates);
	gauge(&b, "pnfs_mds_layout_recalls_outstanding", "Recalls not yet answered by a return.", nrecalls);
	gauge(&b, "pnfs_mds_clients", "NFSv4.1 clients known.", clients);
	gauge(&b, "pnfs_mds_conns", "Client connections open (max-connections caps them).", srv->nconns);
	gauge(&b, "pnfs_mds_conns_unestablished",
	      "Client connections with no session on them yet (dropped after login-timeout).",
	      srv->nconns_unestablished);
	gauge(&b, "pnfs_mds_scsi_fencing", "1 while our persistent reservation holds every LUN.",
	      mds_fence_active(lo->fence) ? 1 : 0);
	gauge(&b, "pnfs_mds_scsi_layouts_offered",
	      "1 when SCSI layouts are offered (fs_layout_type lists LAYOUT4_SCSI); see pnfs_mds_lun_aptpl.",
	      lo->fence ? 1 : 0);
	lun_metrics(&b, srv);
	if (!srv->cur_txn) {
		struct mds_txn *t;
		struct mds_store_stats st;
		if (mds_txn_begin(srv->store, MDS_TXN_RDONLY, &t) == 0) {
			if (mds_store_stats(t, &st) == 0)
				proto_strbuf_printf(&b,
				     "# HELP pnfs_mds_pool_bytes Pool volume bytes by state.\n"
				     "# TYPE pnfs_mds_pool_bytes gauge\n"
				     "pnfs_mds_pool_bytes{state=\"free\"} %llu\n"
				     "pnfs_mds_pool_bytes{state=\"used\"} %llu\n"
				     "pnfs_mds_pool_bytes{state=\"pending\"} %llu\n",
				     (unsigned long long)st.free_bytes, (unsigned long long)st.used_bytes,
				     (unsigned long long)st.pending_bytes);
			mds_txn_abort(t);
		}
	}
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* ---- HTTP ------------------------------------------------------------------------------------ */

static void conn_close(struct mconn *cn)
{
	struct mds_metrics *m = cn->m;

	proto_list_del(&cn->link);
	m->nconns--;
	if (cn->timer)
		mds_loop_del_timer(m->srv->loop, cn->timer);
	mds_loop_del_fd(m->srv->loop, cn->fd, MDS_EV_READ | MDS_EV_WRITE);
	close(cn->fd);
	free(cn->out);
	free(cn);
}

static void on_conn(struct mds_loop *loop, int fd, int events, void *arg);

static void send_more(struct mconn *cn)
{
	while (cn->out_off < cn->out_len) {
		ssize_t n = send(cn->fd, cn->out + cn->out_off, cn->out_len - cn->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				mds_loop_add_fd(cn->m->srv->loop, cn->fd, MDS_EV_WRITE, on_conn, cn);
				return;
			}
			break;
		}
		cn->out_off += (size_t)n;
	}
	conn_close(cn);
}

static void respond(struct mconn *cn, int code, const char *reason, const char *ctype, const char *body)
{
	size_t blen = strlen(body), cap = blen + 256;

	cn->out = malloc(cap);
	if (!cn->out) {
		conn_close(cn);
		return;
	}
	cn->out_len = (size_t)snprintf(cn->out, cap,
				       "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
				       "Connection: close\r\n\r\n",
				       code, reason, ctype, blen);
	memcpy(cn->out + cn->out_len, body, blen);
	cn->out_len += blen;
	mds_loop_del_fd(cn->m->srv->loop, cn->fd, MDS_EV_READ);
	send_more(cn);
}

int mds_metrics_route(const char *req, int *head)
{
	char method[16], path[256];

	*head = 0;
	if (sscanf(req, "%15s %255s", method, path) != 2)
		return 400;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return 405;
	if (strcmp(path, "/metrics") != 0 && strncmp(path, "/metrics?", 9) != 0)
		return 404;
	*head = strcmp(method, "HEAD") == 0;
	return 200;
}

static void handle_request(struct mconn *cn)
{
	int head, code;
	char *text;

	cn->req[cn->len] = 0;
	code = mds_metrics_route(cn->req, &head);
	if (code == 400) {
		respond(cn, 400, "Bad Request", "text/plain", "bad request\n");
		return;
	}
	if (code == 405) {
		respond(cn, 405, "Method Not Allowed", "text/plain", "only GET\n");
		return;
	}
	if (code == 404) {
		respond(cn, 404, "Not Found", "text/plain", "try /metrics\n");
		return;
	}
	text = mds_metrics_text(cn->m->srv);
	if (!text) {
		respond(cn, 500, "Internal Server Error", "text/plain", "out of memory\n");
		return;
	}
	respond(cn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", head ? "" : text);
	free(text);
}

static void on_conn(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct mconn *cn = arg;
	(void)loop;
	(void)fd;

	if (cn->out) {
		if (events & (MDS_EV_WRITE | MDS_EV_ERROR)) {
			mds_loop_del_fd(cn->m->srv->loop, cn->fd, MDS_EV_WRITE);
			send_more(cn);
		}
		return;
	}
	for (;;) {
		ssize_t n = recv(cn->fd, cn->req + cn->len, sizeof(cn->req) - 1 - cn->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(cn);
			return;
		}
		cn->len += (size_t)n;
		cn->req[cn->len] = 0;
		if (strstr(cn->req, "\r\n\r\n") || strstr(cn->req, "\n\n")) {
			handle_request(cn);
			return;
		}
		if (cn->len >= sizeof(cn->req) - 1) {
			respond(cn, 431, "Request Header Fields Too Large", "text/plain", "request too large\n");
			return;
		}
	}
}

static int64_t on_timeout(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mconn *cn = arg;
	(void)loop;
	(void)id;

	cn->timer = 0;
	conn_close(cn);
	return MDS_TIMER_STOP;
}

static void on_accept(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct mds_metrics *m = arg;
	(void)events;

	for (;;) {
		struct mconn *cn;
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (m->nconns >= METRICS_MAX_CONNS || !(cn = calloc(1, sizeof(*cn)))) {
			close(c);
			continue;
		}
		cn->m = m;
		cn->fd = c;
		proto_list_add(&m->conns, &cn->link);
		m->nconns++;
		cn->timer = mds_loop_add_timer(loop, METRICS_TIMEOUT_MS, on_timeout, cn);
		if (mds_loop_add_fd(loop, c, MDS_EV_READ, on_conn, cn) != 0)
			conn_close(cn);
	}
}

int mds_metrics_start(struct mds_server *srv, int port, struct mds_metrics **out, char *err, size_t errlen)
{
	struct sockaddr_in sa = { 0 };
	struct mds_metrics *m;
	int fd, one = 1;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	proto_list_init(&m->conns);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		free(m);
		snprintf(err, errlen, "metrics: socket: %s", strerror(e));
		return -e;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		int e = errno;
		close(fd);
		free(m);
		snprintf(err, errlen, "metrics: cannot listen on 127.0.0.1 port %d: %s", port, strerror(e));
		return -e;
	}
	m->srv = srv;
	m->fd = fd;
	m->port = port;
	if (mds_loop_add_fd(srv->loop, fd, MDS_EV_READ, on_accept, m) != 0) {
		close(fd);
		free(m);
		snprintf(err, errlen, "metrics: cannot watch the socket");
		return -ENOMEM;
	}
	LOG_INFO("metrics on http://127.0.0.1:%d/metrics", port);
	*out = m;
	return 0;
}

void mds_metrics_stop(struct mds_metrics *m)
{
	if (!m)
		return;
	while (!proto_list_empty(&m->conns))
		conn_close(proto_list_first(&m->conns, struct mconn, link));
	mds_loop_del_fd(m->srv->loop, m->fd, MDS_EV_READ);
	close(m->fd);
	free(m);
}
