/* A connection's flow control: reading its requests stops while its replies pile up, and starts again
 * once they drain, whichever path drained them: the socket turning writable, or a later reply (an
 * I/O completing) written out at once. A connection left unread for good is a client hung forever. */
#include "tests/harness.h"

#include "mds/server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fixture {
	struct mds_server srv;
	struct mds_conn *conn;
	int peer;
	char *reply;
};

static int fixture_up(struct fixture *f)
{
	struct sockaddr_storage who;
	int sv[2];

	memset(f, 0, sizeof(*f));
	memset(&who, 0, sizeof(who));
	who.ss_family = AF_INET;
	f->srv.loop = mds_loop_new();
	f->srv.cfg.max_record_bytes = 1u << 20;
	proto_list_init(&f->srv.conns);
	f->reply = calloc(1, 1u << 20);
	if (!f->srv.loop || !f->reply || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return -1;
	(void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(sv[1], F_SETFL, O_NONBLOCK);
	f->peer = sv[1];
	if (mds_conn_accept(&f->srv, sv[0], &who) != 0)
		return -1;
	f->conn = proto_list_empty(&f->srv.conns) ? NULL : proto_list_first(&f->srv.conns, struct mds_conn, link);
	return f->conn ? 0 : -1;
}

static void fixture_down(struct fixture *f)
{
	if (!proto_list_empty(&f->srv.conns))
		mds_conn_close(proto_list_first(&f->srv.conns, struct mds_conn, link), "test over"); /* drops the last reference */
	if (f->peer > 0)
		close(f->peer);
	mds_loop_free(f->srv.loop);
	free(f->reply);
}

/* Everything the peer has been sent so far, read and thrown away. */
static void peer_drain(struct fixture *f)
{
	char buf[65536];
	while (read(f->peer, buf, sizeof(buf)) > 0)
		;
}

static int watching(struct fixture *f, int ev)
{
	return (mds_loop_fd_mask(f->srv.loop, f->conn->fd) & ev) != 0;
}

/* Replies of 1 MiB that the peer does not read, until the connection stops reading. */
static void pile_up(struct fixture *f)
{
	for (int i = 0; i < 64 && !f->conn->read_paused; i++)
		CU_ASSERT_EQUAL(mds_conn_send(f->conn, f->reply, 1u << 20), 0);
	CU_ASSERT_TRUE(f->conn->read_paused);
	CU_ASSERT(f->conn->out_bytes > MDS_OUTQ_PAUSE_BYTES);
	CU_ASSERT_FALSE(watching(f, MDS_EV_READ));
	CU_ASSERT_TRUE(watching(f, MDS_EV_WRITE));
}

/* The peer reads everything; meanwhile either the event loop runs (the socket turns writable) or it
 * never does and small replies keep coming, each writing out what the socket takes. Once nothing is
 * queued the connection reads again and waits for nothing to write. */
static void drain(struct fixture *f, int by_loop)
{
	for (int rounds = 0; f->conn->out_head && rounds < 100000; rounds++) {
		peer_drain(f);
		int rc = by_loop ? mds_loop_once(f->srv.loop, 100) : mds_conn_send(f->conn, "ok", 2);
		CU_ASSERT_FATAL(rc >= 0);
	}
	peer_drain(f);
	CU_ASSERT_PTR_NULL(f->conn->out_head);
	CU_ASSERT_EQUAL(f->conn->out_bytes, 0);
	CU_ASSERT_FALSE(f->conn->read_paused);
	CU_ASSERT_TRUE(watching(f, MDS_EV_READ));
	CU_ASSERT_FALSE(watching(f, MDS_EV_WRITE));
}

static void test_drained_by_later_replies(void)
{
	struct fixture f;

	CU_ASSERT_EQUAL_FATAL(fixture_up(&f), 0);
	pile_up(&f);
	drain(&f, 0);
	fixture_down(&f);
}

static void test_drained_by_the_loop(void)
{
	struct fixture f;

	CU_ASSERT_EQUAL_FATAL(fixture_up(&f), 0);
	pile_up(&f);
	drain(&f, 1);
	/* The socket is read again: the peer closing is seen, and the connection goes. */
	close(f.peer);
	f.peer = -1;
	for (int i = 0; i < 10 && !proto_list_empty(&f.srv.conns); i++)
		CU_ASSERT_EQUAL(mds_loop_once(f.srv.loop, 100) < 0, 0);
	CU_ASSERT(proto_list_empty(&f.srv.conns));
	CU_ASSERT_EQUAL(f.srv.nconns, 0);
	fixture_down(&f);
}

TEST_SUITE(mds_conn, "mds/conn", NULL, NULL,
	   { "drained_by_later_replies", test_drained_by_later_replies },
	   { "drained_by_the_loop", test_drained_by_the_loop });
