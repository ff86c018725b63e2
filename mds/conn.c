/* Client connections: non-blocking sockets on the loop, RPC record reassembly with a size cap,
 * and an output queue per connection. A slow reader only fills its own queue (and stops being
 * read past a limit); garbage or a disconnect closes only that connection. A connection gets
 * login-timeout to set up a session on it; one that has none by then (silent, stuck inside a
 * record, or only pinging) is dropped, so idle sockets cannot hold max-connections' slots. */
#include "mds/server.h"

#include "proto/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static void conn_io(struct mds_loop *loop, int fd, int events, void *arg);

void mds_conn_get(struct mds_conn *conn)
{
	conn->refs++;
}

static void conn_free(struct mds_conn *conn)
{
	struct mds_outbuf *o, *n;

	for (o = conn->out_head; o; o = n) {
		n = o->next;
		free(o);
	}
	proto_rm_reader_destroy(&conn->rr);
	free(conn);
}

void mds_conn_put(struct mds_conn *conn)
{
	if (--conn->refs == 0)
		conn_free(conn);
}

void mds_conn_close(struct mds_conn *conn, const char *why)
{
	struct mds_server *srv = conn->srv;

	if (conn->dead)
		return;
	LOG_DEBUG("connection %llu from %s closed: %s", (unsigned long long)conn->id, conn->peer_str, why);
	conn->dead = 1;
	if (conn->login_timer) {
		mds_loop_del_timer(srv->loop, conn->login_timer);
		conn->login_timer = 0;
	}
	if (!conn->established)
		srv->nconns_unestablished--;
	mds_loop_del_fd(srv->loop, conn->fd, MDS_EV_READ | MDS_EV_WRITE);
	close(conn->fd);
	conn->fd = -1;
	proto_list_del(&conn->link);
	srv->nconns--;
	mds_state_conn_gone(srv, conn);
	mds_conn_put(conn);
}

/* Watch the socket for what the connection needs now: writability while replies wait, and its
 * requests unless replies pile up (reading stops above MDS_OUTQ_PAUSE_BYTES queued and resumes below
 * half of that, whichever path drained them: the writable socket or a later reply's own write). */
static void update_events(struct mds_conn *conn)
{
	struct mds_loop *loop = conn->srv->loop;
	int want = 0, have;

	if (conn->dead)
		return;
	if (conn->out_bytes > MDS_OUTQ_PAUSE_BYTES)
		conn->read_paused = 1;
	else if (conn->out_bytes < MDS_OUTQ_PAUSE_BYTES / 2)
		conn->read_paused = 0;
	if (!conn->read_paused && !conn->srv->stopping)
		want |= MDS_EV_READ;
	if (conn->out_head)
		want |= MDS_EV_WRITE;
	have = mds_loop_fd_mask(loop, conn->fd);
	if (want == have)
		return;
	if (have & ~want)
		mds_loop_del_fd(loop, conn->fd, have & ~want);
	if ((want & ~have) && mds_loop_add_fd(loop, conn->fd, want & ~have, conn_io, conn) != 0)
		mds_conn_close(conn, "cannot watch socket");
}

/* Write what the socket takes now. Returns 0, or -errno when the connection must close. */
static int flush_out(struct mds_conn *conn)
{
	while (conn->out_head) {
		struct iovec iov[16];
		int n = 0;
		ssize_t w;

		for (struct mds_outbuf *o = conn->out_head; o && n < 16; o = o->next, n++) {
			iov[n].iov_base = o->data + o->off;
			iov[n].iov_len = o->len - o->off;
		}
		w = writev(conn->fd, iov, n);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		conn->out_bytes -= (size_t)w;
		conn->srv->net_bytes_sent += (uint64_t)w;
		while (w > 0) {
			struct mds_outbuf *o = conn->out_head;
			size_t left = o->len - o->off;
			if ((size_t)w < left) {
				o->off += (size_t)w;
				break;
			}
			w -= (ssize_t)left;
			conn->out_head = o->next;
			if (!conn->out_head)
				conn->out_tail = NULL;
			free(o);
		}
	}
	return 0;
}

static int queue_bufs(struct mds_conn *conn, const struct iovec *iov, int niov)
{
	size_t total = 0;
	struct mds_outbuf *o;
	int rc;

	if (conn->dead)
		return -EPIPE;
	for (int i = 0; i < niov; i++)
		total += iov[i].iov_len;
	o = malloc(sizeof(*o) + total);
	if (!o) {
		mds_conn_close(conn, "out of memory for a reply");
		return -ENOMEM;
	}
	o->next = NULL;
	o->len = total;
	o->off = 0;
	total = 0;
	for (int i = 0; i < niov; i++) {
		memcpy(o->data + total, iov[i].iov_base, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	if (conn->out_tail)
		conn->out_tail->next = o;
	else
		conn->out_head = o;
	conn->out_tail = o;
	conn->out_bytes += o->len;
	rc = flush_out(conn);
	if (rc) {
		mds_conn_close(conn, strerror(-rc));
		return rc;
	}
	/* A peer not reading its replies has its requests left unread until it does. */
	update_events(conn);
	return 0;
}

int mds_conn_send(struct mds_conn *conn, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	return queue_bufs(conn, &iov, 1);
}

int mds_conn_send_record(struct mds_conn *conn, const void *msg, size_t len)
{
	uint8_t mark[4];
	struct iovec iov[2];

	proto_rm_mark(mark, (uint32_t)len, 1);
	iov[0].iov_base = mark;
	iov[0].iov_len = 4;
	iov[1].iov_base = (void *)msg;
	iov[1].iov_len = len;
	return queue_bufs(conn, iov, 2);
}

/* Feed bytes to the record reader and serve every record they complete. Returns 0 or -errno
 * (the stream is unusable: close). */
static int feed(struct mds_conn *conn, const unsigned char *p, size_t n)
{
	while (n > 0 && !conn->dead) {
		void *rec;
		size_t rlen;
		ssize_t used = proto_rm_feed(&conn->rr, p, n);

		if (used < 0)
			return (int)used;
		p += used;
		n -= (size_t)used;
		conn->partial_bytes += (uint64_t)used;
		while (proto_rm_take(&conn->rr, &rec, &rlen) == 1) {
			/* The feed stopped at the record's end: nothing of the next one is in yet. */
			conn->partial_bytes = 0;
			conn->records_in++;
			mds_rpc_record(conn, rec, rlen);
			free(rec);
			if (conn->dead)
				return 0;
		}
		if (used == 0 && n > 0)
			return -EPROTO; /* cannot happen: the record was taken */
	}
	return 0;
}

static void conn_read(struct mds_conn *conn)
{
	unsigned char buf[65536];

	if (conn->srv->stopping) {
		/* Draining at shutdown: no new requests. */
		mds_loop_del_fd(conn->srv->loop, conn->fd, MDS_EV_READ);
		return;
	}

	/* Bounded work per wakeup so one busy client cannot starve the others. */
	for (int rounds = 0; rounds < 16 && !conn->dead && !conn->read_paused; rounds++) {
		ssize_t n = read(conn->fd, buf, sizeof(buf));
		int rc;

		if (n == 0) {
			mds_conn_close(conn, "peer closed");
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			mds_conn_close(conn, strerror(errno));
			return;
		}
		conn->srv->net_bytes_received += (uint64_t)n;
		conn->bytes_in += (uint64_t)n;
		mds_conn_get(conn);
		rc = feed(conn, buf, (size_t)n);
		if (rc < 0 && !conn->dead) {
			LOG_WARN("connection %llu from %s: %s; closing", (unsigned long long)conn->id,
				 conn->peer_str, rc == -EMSGSIZE ? "record larger than max-record" : "bad record marking");
			mds_conn_close(conn, "record error");
		}
		mds_conn_put(conn);
		if ((size_t)n < sizeof(buf))
			return;
	}
}

static void conn_io(struct mds_loop *loop, int fd, int events, void *arg)
{
	struct mds_conn *conn = arg;
	(void)loop;
	(void)fd;

	mds_conn_get(conn);
	if (events & MDS_EV_WRITE) {
		int rc = flush_out(conn);
		if (rc) {
			mds_conn_close(conn, strerror(-rc));
		} else {
			update_events(conn);
		}
	}
	if (!conn->dead && (events & MDS_EV_READ))
		conn_read(conn);
	else if (!conn->dead && (events & MDS_EV_ERROR) && !(events & MDS_EV_WRITE))
		mds_conn_close(conn, "socket error");
	mds_conn_put(conn);
}

void mds_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s->sin_addr, addr, sizeof(addr));
		snprintf(buf, len, "%s:%d", addr, ntohs(s->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s->sin6_addr, addr, sizeof(addr));
		snprintf(buf, len, "[%s]:%d", addr, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "?:0");
	}
}

void mds_conn_established(struct mds_conn *conn)
{
	if (conn->established || conn->dead)
		return;
	conn->established = 1;
	conn->srv->nconns_unestablished--;
	if (conn->login_timer) {
		mds_loop_del_timer(conn->srv->loop, conn->login_timer);
		conn->login_timer = 0;
	}
}

/* What the connection sent before its login time ran out, for the log. */
static void login_what(const struct mds_conn *conn, char *buf, size_t len)
{
	unsigned long long bytes = (unsigned long long)conn->bytes_in, recs = (unsigned long long)conn->records_in;

	if (!bytes)
		snprintf(buf, len, "sent nothing");
	else if (!recs)
		snprintf(buf, len, "sent %llu bytes, part of a record", bytes);
	else if (conn->partial_bytes)
		snprintf(buf, len, "sent %llu bytes: %llu record%s and part of another", bytes, recs, recs == 1 ? "" : "s");
	else
		snprintf(buf, len, "sent %llu bytes in %llu record%s, none set up a session", bytes, recs,
			 recs == 1 ? "" : "s");
}

static int64_t login_expired(struct mds_loop *loop, uint64_t id, void *arg)
{
	struct mds_conn *conn = arg;
	char what[128];
	(void)loop;
	(void)id;

	conn->login_timer = 0; /* this firing ends it */
	if (conn->dead || conn->established)
		return MDS_TIMER_STOP;
	login_what(conn, what, sizeof(what));
	LOG_WARN("dropping connection from %s: no session after %u s (%s)", conn->peer_str,
		 conn->srv->cfg.login_timeout_s, what);
	conn->srv->login_timeouts++;
	mds_conn_close(conn, "login timeout");
	return MDS_TIMER_STOP;
}

int mds_conn_accept(struct mds_server *srv, int fd, const struct sockaddr_storage *peer)
{
	struct mds_conn *conn = calloc(1, sizeof(*conn));
	int one = 1;

	if (!conn) {
		close(fd);
		return -ENOMEM;
	}
	proto_rm_reader_init(&conn->rr, srv->cfg.max_record_bytes);
	conn->srv = srv;
	conn->fd = fd;
	conn->id = ++srv->next_conn_id;
	conn->peer = *peer;
	conn->refs = 1;
	mds_sockaddr_str(peer, conn->peer_str, sizeof(conn->peer_str));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	proto_list_add(&srv->conns, &conn->link);
	srv->nconns++;
	srv->nconns_unestablished++;
	if (srv->cfg.login_timeout_s) {
		conn->login_timer = mds_loop_add_timer(srv->loop, (int64_t)srv->cfg.login_timeout_s * 1000,
						       login_expired, conn);
		if (!conn->login_timer) {
			mds_conn_close(conn, "out of memory for its login timer");
			return -ENOMEM;
		}
	}
	if (mds_loop_add_fd(srv->loop, fd, MDS_EV_READ, conn_io, conn) != 0) {
		mds_conn_close(conn, "cannot watch socket");
		return -EIO;
	}
	LOG_DEBUG("connection %llu from %s", (unsigned long long)conn->id, conn->peer_str);
	return 0;
}
