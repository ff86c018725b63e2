/* pnfs-mds's group commit: the changing compounds of one turn of the event loop are committed by one
 * durable transaction, and none of their replies leaves before that commit. Several clients' creates
 * sent while the daemon is stopped (SIGSTOP) arrive in one turn: one store commit carries them all
 * (the metrics say so), every reply is NFS4_OK, and a kill -9 right after the replies loses none of
 * them. With strace on the daemon, every reply (writev on a client connection) comes after its
 * request's commit is durable: the data pages' fdatasync, the meta page's pwrite64 and an fdatasync
 * after that (the next turn's commit, or a sync of its own when nothing else is committed). */
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/layout_util.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCLIENTS 6
#define MAXFD 4096

static struct test_lab *lab;
static struct test_mds *mds;
static int mport;
static char why[300];

static int suite_init(void)
{

	mport = test_free_port();
	mds = tmds_lab_up(&lab, 2, "32M", NULL, NULL, why, sizeof(why),
			  "--metrics-port %d", mport);
	return 0;
}

static int suite_clean(void)
{
	return tmds_lab_down(&lab, &mds);
}

#define NEED_MDS() TEST_SKIP_IF(!mds, "%s", why)

struct cl {
	struct nc *c;
	struct nc_fh root;
	uint32_t xid;
};

static void clients_up(struct cl *cl, const char *tag)
{
	for (int k = 0; k < NCLIENTS; k++) {
		char owner[64];
		snprintf(owner, sizeof(owner), "group-%s-%d", tag, k);
		cl[k].c = nc_connect(mds->port);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cl[k].c);
		CU_ASSERT_EQUAL_FATAL(nc_setup(cl[k].c, owner), 0);
		CU_ASSERT_EQUAL_FATAL(nc_rootfh(cl[k].c, &cl[k].root), 0);
	}
}

static void clients_down(struct cl *cl)
{
	for (int k = 0; k < NCLIENTS; k++)
		nc_free(cl[k].c);
}

/* Send PUTFH(root) CREATE(dir name) on client k without waiting for the reply. */
static void send_mkdir(struct cl *k, const char *name)
{
	nfs_argop4 ops[2];
	CREATE4args *ca = &ops[1].nfs_argop4_u.opcreate;

	nc_op_putfh(&ops[0], &k->root);
	nc_op_simple(&ops[1], OP_CREATE);
	ca->objtype.type = NF4DIR;
	ca->objname.utf8string_len = (u_int)strlen(name);
	ca->objname.utf8string_val = (char *)name;
	CU_ASSERT_EQUAL_FATAL(nc_seq_send(k->c, ops, 2, &k->xid), 0);
}

static int recv_status(struct cl *k)
{
	struct proto_compound_res res;
	int rc = nc_compound_recv(k->c, k->xid, &res);

	if (rc == 0)
		rc = (int)res.res.status;
	proto_compound_res_free(&res);
	return rc;
}

static void test_one_commit_for_a_turn(void)
{
	NEED_MDS();
	struct cl cl[NCLIENTS];
	long long commits0, grouped0;
	struct nc *after;
	struct nc_fh fh;
	char name[64];

	clients_up(cl, "turn");
	commits0 = lt_metric(mport, "pnfs_mds_store_commits_total");
	grouped0 = lt_metric(mport, "pnfs_mds_store_grouped_compounds_total");
	CU_ASSERT(commits0 >= 0 && grouped0 >= 0);
	/* Every request is in its socket before the daemon runs again: one turn reads them all. */
	CU_ASSERT_EQUAL_FATAL(kill(mds->pid, SIGSTOP), 0);
	for (int k = 0; k < NCLIENTS; k++) {
		snprintf(name, sizeof(name), "turn-%d", k);
		send_mkdir(&cl[k], name);
	}
	CU_ASSERT_EQUAL_FATAL(kill(mds->pid, SIGCONT), 0);
	for (int k = 0; k < NCLIENTS; k++)
		CU_ASSERT_EQUAL(recv_status(&cl[k]), 0);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_store_commits_total"), commits0 + 1);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_store_grouped_compounds_total"), grouped0 + NCLIENTS);

	/* What the replies said is done survives kill -9 right after them. */
	CU_ASSERT_EQUAL(tmds_stop(mds, SIGKILL), 128 + SIGKILL);
	clients_down(cl);
	CU_ASSERT_EQUAL_FATAL(tmds_start(mds), 0);
	after = nc_connect(mds->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(after);
	CU_ASSERT_EQUAL_FATAL(nc_setup(after, "group-after"), 0);
	for (int k = 0; k < NCLIENTS; k++) {
		snprintf(name, sizeof(name), "/turn-%d", k);
		CU_ASSERT_EQUAL(nc_lookup_path(after, name, &fh), 0);
	}
	nc_free(after);
}

/* The call and its fd in a strace line ("PID  TIME writev(7, ..."), or -1. */
static int trace_call(const char *line, char *call, size_t len)
{
	const char *p = line, *open;
	int fd;

	for (int f = 0; f < 2 && *p; f++) { /* skip the pid and the time */
		p += strspn(p, " ");
		p += strcspn(p, " ");
	}
	p += strspn(p, " ");
	open = strchr(p, '(');
	if (!open || (size_t)(open - p) >= len || sscanf(open + 1, "%d", &fd) != 1)
		return -1;
	memcpy(call, p, (size_t)(open - p));
	call[open - p] = 0;
	return fd;
}

static void test_replies_after_the_sync(void)
{
	NEED_MDS();
	struct cl cl[NCLIENTS];
	struct lab_sync_trace *tr;
	static int state[MAXFD]; /* per connection: 1 request read, 2 synced after, 3 meta written, 4 synced */
	long n = 0;
	int replies = 0, early = 0;
	char path[400], line[1024], name[64];
	FILE *f;

	clients_up(cl, "trace");
	tr = lab_trace_start_pid((int)mds->pid, "trace=read,writev,fdatasync,pwrite64", why, sizeof(why));
	if (!tr) {
		clients_down(cl);
		test_skip("%s", why);
		return;
	}
	snprintf(path, sizeof(path), "%s", lab_trace_path(tr));
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < NCLIENTS; k++) {
			snprintf(name, sizeof(name), "trace-%d-%d", round, k);
			send_mkdir(&cl[k], name);
		}
		for (int k = 0; k < NCLIENTS; k++)
			CU_ASSERT_EQUAL(recv_status(&cl[k]), 0);
	}
	/* Time passes on purpose: the tracer writes the last calls after the replies came back, and
	 * nothing says when it is done with them. */
	usleep(200000);
	lab_sync_trace_stop(tr);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(state, 0, sizeof(state));
	/* For each connection: a reply (writev) after a request (read) needs the request's commit
	 * made durable in between: an fdatasync (the data pages), the meta page's pwrite64, and the
	 * fdatasync after it (the next commit's, or a sync of its own). */
	while (fgets(line, sizeof(line), f)) {
		char call[32];
		int fd = trace_call(line, call, sizeof(call));
		n++;
		if (fd < 0 || fd >= MAXFD || strstr(line, "resumed>"))
			continue;
		if (!strcmp(call, "read")) {
			state[fd] = 1;
		} else if (!strcmp(call, "fdatasync")) {
			for (int i = 0; i < MAXFD; i++)
				if (state[i] == 1 || state[i] == 3)
					state[i]++;
		} else if (!strcmp(call, "pwrite64")) {
			for (int i = 0; i < MAXFD; i++)
				if (state[i] == 2)
					state[i] = 3;
		} else if (!strcmp(call, "writev") && state[fd]) {
			replies++;
			if (state[fd] != 4)
				early++;
			state[fd] = 0;
		}
	}
	fclose(f);
	CU_ASSERT(replies >= 4 * NCLIENTS);
	CU_ASSERT_EQUAL(early, 0);
	if (early)
		fprintf(stderr, "%d of %d replies went out before the commit of their request (trace %s)\n", early,
			replies, path);
	clients_down(cl);
}

TEST_SUITE(mds_group_commit, "integration/mds_group_commit", suite_init, suite_clean,
	   { "replies_after_the_sync", test_replies_after_the_sync },
	   { "one_commit_for_a_turn", test_one_commit_for_a_turn });
