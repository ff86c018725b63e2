/* Durability of the store: a child process commits transactions back to back and is killed with
 * SIGKILL at an arbitrary point; reopening shows exactly the committed transactions, each whole
 * (file, extents, client record together or not at all), and the invariants hold. */
#include "tests/mds/store_util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROOT 1
#define BS 4096u

static uint64_t blocks_of(uint32_t i)
{
	return i % 7 + 1;
}

/* Child: transaction i creates d<i>, gives it blocks_of(i) blocks (half committed RW) and a
 * client record i, commits, then reports i. Never returns. */
static void committer(const char *dir, int fd)
{
	struct mds_store *st;
	struct mds_create_args a = ts_args(MDS_FT_REG, 0644);

	if (mds_store_open(dir, NULL, &st))
		_exit(20);
	for (uint32_t i = 0; i < 1000000; i++) {
		struct mds_client_rec r;
		struct mds_inode ino;
		struct mds_txn *t;
		char name[32];
		snprintf(name, sizeof(name), "d%06u", i);
		memset(&r, 0, sizeof(r));
		r.clientid = i;
		r.owner_len = 8;
		memcpy(r.owner, "owner-xx", 8);
		if (mds_txn_begin(st, MDS_TXN_RW, &t) ||
		    mds_ns_create(t, ROOT, name, strlen(name), &a, &ino, NULL) ||
		    mds_ext_alloc(t, ino.fileid, 0, blocks_of(i) * BS, NULL) ||
		    mds_ext_set_state(t, ino.fileid, 0, (blocks_of(i) + 1) / 2 * BS, MDS_EXT_RW) ||
		    mds_client_write(t, &r) || mds_txn_commit(t))
			_exit(21);
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(22);
	}
	_exit(0);
}

static int present(struct mds_txn *t, uint32_t i, int *whole)
{
	char name[32];
	uint64_t id;
	struct mds_inode ino;
	struct mds_client_rec r;
	int has_client;

	snprintf(name, sizeof(name), "d%06u", i);
	has_client = mds_client_read(t, i, &r) == 0;
	if (mds_ns_lookup(t, ROOT, name, strlen(name), &id)) {
		*whole = !has_client;
		return 0;
	}
	*whole = has_client && mds_inode_read(t, id, &ino) == 0 &&
		 ino.space_used == blocks_of(i) * BS;
	return 1;
}

/* A new 256 MiB store in dir, a pipe in fds, then fork: the child's 0 or the parent's child pid.
 * Aborts the test when any of it fails. */
static pid_t fork_on_new_store(const char *dir, int fds[2])
{
	struct mds_store_format f;
	struct mds_store *st;
	pid_t pid;

	ts_format(&f, 256u << 20, BS, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(mds_store_create(dir, &f, NULL, &st), 0);
	mds_store_close(st);
	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	return pid;
}

static void kill_round(uint32_t target)
{
	const char *dir = test_tmpdir("store-kill");
	struct mds_store *st;
	struct mds_store_stats s;
	struct mds_txn *t;
	int fds[2], status, whole;
	uint32_t got = 0, last = 0, n;
	uint64_t files = 0, used = 0;
	int seen = 0;
	pid_t pid;

	pid = fork_on_new_store(dir, fds);
	if (pid == 0) {
		close(fds[0]);
		committer(dir, fds[1]);
	}
	close(fds[1]);
	while (read(fds[0], &n, sizeof(n)) == sizeof(n)) {
		last = n;
		seen = 1;
		if (++got > target)
			break;
	}
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Whatever the child reported before dying was committed. */
	while (read(fds[0], &n, sizeof(n)) == sizeof(n))
		last = n;
	close(fds[0]);
	CU_ASSERT_FATAL(seen);

	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &st), 0);
	CU_ASSERT_EQUAL(ts_check(st, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RDONLY, &t), 0);
	for (uint32_t i = 0; i <= last; i++) {
		CU_ASSERT(present(t, i, &whole));
		CU_ASSERT(whole);
		files++;
		used += blocks_of(i) * BS;
	}
	/* The one in flight may or may not have made it, whole; nothing after it. */
	if (present(t, last + 1, &whole)) {
		files++;
		used += blocks_of(last + 1) * BS;
	}
	CU_ASSERT(whole);
	for (uint32_t i = last + 2; i < last + 6; i++) {
		CU_ASSERT(!present(t, i, &whole));
		CU_ASSERT(whole);
	}
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.files, 1 + files);
	CU_ASSERT_EQUAL(s.used_bytes, used);
	mds_txn_abort(t);
	mds_store_close(st);
}

static void test_sigkill_mid_stream(void)
{
	kill_round(5);
	kill_round(40);
	kill_round(120);
}

/* A big transaction that never commits leaves no trace after SIGKILL. */
static void test_sigkill_uncommitted(void)
{
	const char *dir = test_tmpdir("store-kill-big");
	struct mds_store *st;
	struct mds_store_stats s;
	struct mds_txn *t;
	int fds[2], status;
	pid_t pid;
	char c;

	pid = fork_on_new_store(dir, fds);
	if (pid == 0) {
		struct mds_create_args a = ts_args(MDS_FT_REG, 0644);
		close(fds[0]);
		if (mds_store_open(dir, NULL, &st) || mds_txn_begin(st, MDS_TXN_RW, &t))
			_exit(20);
		for (int i = 0; i < 2000; i++) {
			struct mds_inode ino;
			char name[32];
			snprintf(name, sizeof(name), "big%d", i);
			if (mds_ns_create(t, ROOT, name, strlen(name), &a, &ino, NULL) ||
			    mds_ext_alloc(t, ino.fileid, 0, 8 * BS, NULL))
				_exit(21);
		}
		if (write(fds[1], "r", 1) != 1)
			_exit(22);
		pause();
		_exit(0);
	}
	close(fds[1]);
	CU_ASSERT_EQUAL(read(fds[0], &c, 1), 1);
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	close(fds[0]);
	CU_ASSERT_EQUAL_FATAL(mds_store_open(dir, NULL, &st), 0);
	CU_ASSERT_EQUAL(ts_check(st, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(mds_txn_begin(st, MDS_TXN_RDONLY, &t), 0);
	CU_ASSERT_EQUAL(mds_store_stats(t, &s), 0);
	CU_ASSERT_EQUAL(s.files, 1);
	CU_ASSERT_EQUAL(s.free_bytes, s.volume_bytes);
	mds_txn_abort(t);
	/* And the writer lock died with the child: a new write transaction starts at once. */
	CU_ASSERT_EQUAL(mds_txn_begin(st, MDS_TXN_RW, &t), 0);
	mds_txn_abort(t);
	mds_store_close(st);
}

TEST_SUITE(store_durability, "mds/store_durability", NULL, NULL,
	   { "sigkill_mid_stream", test_sigkill_mid_stream },
	   { "sigkill_uncommitted", test_sigkill_uncommitted });
