/* The TCP connection to the MDS: non-blocking connect, a send queue written as the socket allows,
 * and a record-marking reader whose records are demultiplexed by message type: replies complete
 * fore-channel compounds, calls are the server's backchannel (CB_COMPOUND on the same connection). */
#include "client/internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define PC_RBUF_BYTES (256 * 1024)

static void conn_ready(struct pnfs_context *ctx, struct pc_watch *w, uint32_t revents);

static void sendq_free(struct pc_conn *c)
{
	while (c->sq_head) {
		struct pc_sendbuf *b = c->sq_head;
		c->sq_head = b->next;
		free(b->buf);
		free(b);
	}
	c->sq_tail = NULL;
}

void pc_conn_why(struct pnfs_context *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->conn_why, sizeof(ctx->conn_why), fmt, ap);
	va_end(ap);
}

void pc_conn_close(struct pnfs_context *ctx)
{
	struct pc_conn *c = &ctx->conn;

	pc_timer_cancel(ctx, &c->handshake);
	if (c->fd >= 0) {
		pc_watch_del(ctx, &c->w);
		close(c->fd);
	}
	c->fd = -1;
	c->connected = 0;
	sendq_free(c);
	proto_rm_reader_destroy(&c->rd);
	free(c->rbuf);
	c->rbuf = NULL;
}

/* The connection failed or closed: tell the session layer (which reconnects and replays). The
 * reason is kept for whatever gives up on the connection later (a mount, calls waiting for it). */
static void conn_lost(struct pnfs_context *ctx, int err, const char *why)
{
	if (ctx->conn.fd < 0)
		return;
	LOG_INFO("pnfs: connection to %s:%d lost: %s", ctx->host, ctx->port, why);
	pc_conn_why(ctx, "%s", why);
	ctx->server_silent = 0;
	pc_conn_close(ctx);
	pc_session_conn_lost(ctx, err);
}

/* The TCP handshake took longer than the RPC timeout (a host that drops the SYN): a failed try. */
static void handshake_expired(struct pnfs_context *ctx, struct pc_timer *t)
{
	(void)t;
	if (ctx->conn.fd < 0 || ctx->conn.connected)
		return;
	pc_conn_why(ctx, "no answer to the connection request for %u ms", ctx->opts.timeout_ms);
	ctx->server_silent = 0;
	pc_conn_close(ctx);
	pc_session_conn_lost(ctx, -ETIMEDOUT);
}

int pc_conn_open(struct pnfs_context *ctx)
{
	struct pc_conn *c = &ctx->conn;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	char port[16];
	int fd = -1, rc, one = 1;

	pc_conn_close(ctx);
	ctx->conn_fatal = 0;
	snprintf(port, sizeof(port), "%d", ctx->port);
	rc = getaddrinfo(ctx->host, port, &hints, &res);
	if (rc != 0) {
		/* Only a resolver that could not be asked now may answer later. */
		ctx->conn_fatal = rc != EAI_AGAIN;
		pc_conn_why(ctx, "cannot resolve the host name: %s",
			    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	rc = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS)
			break;
		rc = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		pc_conn_why(ctx, "%s", strerror(-rc));
		return rc;
	}
	c->rbuf = malloc(PC_RBUF_BYTES);
	if (!c->rbuf) {
		close(fd);
		pc_conn_why(ctx, "out of memory");
		return -ENOMEM;
	}
	c->rbuf_len = PC_RBUF_BYTES;
	c->fd = fd;
	c->connected = 0;
	proto_rm_reader_init(&c->rd, PROTO_RM_RECORD_LIMIT);
	c->w.fd = fd;
	c->w.events = EPOLLOUT;
	c->w.fn = conn_ready;
	rc = pc_watch_add(ctx, &c->w);
	if (rc < 0) {
		pc_conn_close(ctx);
		pc_conn_why(ctx, "epoll: %s", strerror(-rc));
		return rc;
	}
	c->handshake.fn = handshake_expired;
	pc_timer_arm(ctx, &c->handshake, ctx->opts.timeout_ms);
	ctx->stats.connects++;
	return 0;
}

static void update_events(struct pnfs_context *ctx)
{
	struct pc_conn *c = &ctx->conn;
	uint32_t ev = EPOLLIN;

	if (c->fd < 0)
		return;
	if (!c->connected || c->sq_head)
		ev |= EPOLLOUT;
	if (!c->connected)
		ev = EPOLLOUT;
	pc_watch_mod(ctx, &c->w, ev);
}

static int flush_sendq(struct pnfs_context *ctx)
{
	struct pc_conn *c = &ctx->conn;

	while (c->sq_head) {
		struct pc_sendbuf *b = c->sq_head;
		ssize_t n = send(c->fd, b->buf + b->off, b->len - b->off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -errno;
		}
		ctx->stats.mds_bytes_sent += (uint64_t)n;
		b->off += (size_t)n;
		if (b->off < b->len)
			break;
		c->sq_head = b->next;
		if (!c->sq_head)
			c->sq_tail = NULL;
		free(b->buf);
		free(b);
	}
	return 0;
}

int pc_conn_send(struct pnfs_context *ctx, uint8_t *buf, size_t len)
{
	struct pc_conn *c = &ctx->conn;
	struct pc_sendbuf *b;
	int rc;

	if (c->fd < 0) {
		free(buf);
		return -ENOTCONN;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		free(buf);
		return -ENOMEM;
	}
	b->buf = buf;
	b->len = len;
	if (c->sq_tail)
		c->sq_tail->next = b;
	else
		c->sq_head = b;
	c->sq_tail = b;
	if (c->connected) {
		rc = flush_sendq(ctx);
		if (rc < 0) {
			/* Reported from the loop: the caller's state must not change under it. */
			shutdown(c->fd, SHUT_RDWR);
		}
	}
	update_events(ctx);
	return 0;
}

static void dispatch_record(struct pnfs_context *ctx, void *rec, size_t len)
{
	uint32_t xid, type;

	if (proto_rpc_peek(rec, len, &xid, &type) < 0) {
		LOG_WARN("pnfs: %s:%d sent a record that is not RPC (%zu bytes); ignored", ctx->host,
			 ctx->port, len);
		free(rec);
		return;
	}
	if (type == REPLY)
		pc_rpc_reply(ctx, rec, len);
	else
		pc_cb_call(ctx, rec, len);
}

static void conn_read_records(struct pnfs_context *ctx)
{
	struct pc_conn *c = &ctx->conn;

	for (int rounds = 0; rounds < 64 && c->fd >= 0; rounds++) {
		ssize_t n = recv(c->fd, c->rbuf, c->rbuf_len, 0);
		size_t off = 0;

		if (n == 0) {
			conn_lost(ctx, -ECONNRESET, "the server closed the connection");
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			conn_lost(ctx, -errno, strerror(errno));
			return;
		}
		ctx->stats.mds_bytes_received += (uint64_t)n;
		c->last_rx_ms = pc_now_ms();
		while (off < (size_t)n) {
			ssize_t used = proto_rm_feed(&c->rd, c->rbuf + off, (size_t)n - off);
			void *rec;
			size_t rlen;

			if (used < 0) {
				conn_lost(ctx, (int)used, "bad record marking from the server");
				return;
			}
			off += (size_t)used;
			while (c->fd >= 0 && proto_rm_take(&c->rd, &rec, &rlen) == 1)
				dispatch_record(ctx, rec, rlen);
			if (c->fd < 0)
				return;
		}
		if ((size_t)n < c->rbuf_len)
			return;
	}
}

/* Replies free session slots: compounds waiting for one are sent now, not at the next submission
 * (with every slot busy and nothing more submitted, the last of them waited for its timeout). */
static void conn_read(struct pnfs_context *ctx)
{
	conn_read_records(ctx);
	if (ctx->conn.fd >= 0 && !proto_list_empty(&ctx->waitq))
		pc_compounds_kick(ctx);
}

static void conn_ready(struct pnfs_context *ctx, struct pc_watch *w, uint32_t revents)
{
	struct pc_conn *c = &ctx->conn;
	(void)w;

	if (!c->connected) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		if (err) {
			pc_conn_why(ctx, "%s", strerror(err));
			ctx->last_conn_err = -err;
			ctx->server_silent = 0;
			pc_conn_close(ctx);
			pc_session_conn_lost(ctx, -err);
			return;
		}
		if (!(revents & EPOLLOUT))
			return;
		pc_timer_cancel(ctx, &c->handshake);
		c->connected = 1;
		c->last_rx_ms = pc_now_ms();
		update_events(ctx);
		pc_session_conn_up(ctx);
		return;
	}
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		conn_read(ctx);
		if (c->fd < 0)
			return;
	}
	if (revents & EPOLLOUT) {
		int rc = flush_sendq(ctx);
		if (rc < 0) {
			conn_lost(ctx, rc, strerror(-rc));
			return;
		}
		update_events(ctx);
	}
}
