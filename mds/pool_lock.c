/* DIR/mds.lock: one exclusive flock(2) per pool directory, and the holder's identity as text
 * ("prog", "pid", "host", "since", "listen" lines) so that a refused process can name it. See
 * mds/pool_lock.h. */
#include "mds/pool_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static int lock_path(const char *dir, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", dir, MDS_POOL_LOCK_FILE);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static void parse_holder(const char *text, struct mds_pool_holder *h)
{
	const char *p = text;

	memset(h, 0, sizeof(*h));
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[300];
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = 0;
		if (!strncmp(line, "prog ", 5))
			snprintf(h->prog, sizeof(h->prog), "%s", line + 5);
		else if (!strncmp(line, "pid ", 4))
			h->pid = atoi(line + 4);
		else if (!strncmp(line, "host ", 5))
			snprintf(h->host, sizeof(h->host), "%s", line + 5);
		else if (!strncmp(line, "since ", 6))
			h->since = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "listen ", 7))
			snprintf(h->listen, sizeof(h->listen), "%s", line + 7);
		p = nl ? nl + 1 : NULL;
	}
}

static void read_holder(int fd, struct mds_pool_holder *h)
{
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = 0;
	parse_holder(buf, h);
}

static int write_holder(int fd, const struct mds_pool_holder *h)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "prog %s\npid %d\nhost %s\nsince %" PRIu64 "\nlisten %s\n", h->prog, h->pid,
			 h->host, h->since, h->listen);

	if (ftruncate(fd, 0) != 0)
		return -errno;
	if (pwrite(fd, buf, (size_t)n, 0) != n)
		return errno ? -errno : -EIO;
	return 0;
}

void mds_pool_holder_str(const char *dir, const struct mds_pool_holder *h, char *out, size_t outlen)
{
	char when[64] = "an unknown time";
	time_t t = (time_t)h->since;
	struct tm tm;
	int server = !h->prog[0] || !strcmp(h->prog, "pnfs-mds");

	if (h->since && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (!h->pid) {
		snprintf(out, outlen, "pool %s is in use by another process (it holds %s/%s and has not said who it is yet)",
			 dir, dir, MDS_POOL_LOCK_FILE);
		return;
	}
	snprintf(out, outlen, "pool %s is %s %s pid %d on %s since %s%s%s%s", dir, server ? "served by" : "in use by",
		 h->prog[0] ? h->prog : "pnfs-mds", h->pid, h->host[0] ? h->host : "an unknown host", when,
		 h->listen[0] ? " (listening on " : "", h->listen, h->listen[0] ? ")" : "");
}

int mds_pool_lock(const char *dir, const char *prog, int *fd, struct mds_pool_holder *holder, char *err,
		  size_t errlen)
{
	struct mds_pool_holder me, other;
	char path[PATH_MAX];
	int f, rc;

	*fd = -1;
	rc = lock_path(dir, path, sizeof(path));
	if (rc) {
		snprintf(err, errlen, "pool %s: path too long", dir);
		return rc;
	}
	f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (f < 0) {
		rc = -errno;
		snprintf(err, errlen, "pool %s: cannot open %s: %s", dir, path, strerror(errno));
		return rc;
	}
	if (flock(f, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (rc == -EBUSY) {
			read_holder(f, &other);
			mds_pool_holder_str(dir, &other, err, errlen);
			if (holder)
				*holder = other;
		} else {
			snprintf(err, errlen, "pool %s: cannot lock %s: %s", dir, path, strerror(-rc));
		}
		close(f);
		return rc;
	}
	memset(&me, 0, sizeof(me));
	snprintf(me.prog, sizeof(me.prog), "%s", prog);
	me.pid = (int)getpid();
	if (gethostname(me.host, sizeof(me.host) - 1) != 0)
		snprintf(me.host, sizeof(me.host), "localhost");
	me.since = (uint64_t)time(NULL);
	rc = write_holder(f, &me);
	if (rc) {
		snprintf(err, errlen, "pool %s: cannot write %s: %s", dir, path, strerror(-rc));
		close(f);
		return rc;
	}
	*fd = f;
	return 0;
}

int mds_pool_lock_set_listen(int fd, const char *addr, int port)
{
	struct mds_pool_holder h;

	if (fd < 0)
		return -EBADF;
	read_holder(fd, &h);
	snprintf(h.listen, sizeof(h.listen), strchr(addr, ':') ? "[%s]:%d" : "%s:%d", addr, port);
	return write_holder(fd, &h);
}

void mds_pool_unlock(int fd)
{
	if (fd < 0)
		return;
	/* Nobody holds it now: say so, for whoever reads the file by hand. */
	if (ftruncate(fd, 0) != 0) {
		/* harmless: the contents only matter while the lock is held */
	}
	flock(fd, LOCK_UN);
	close(fd);
}

int mds_pool_lock_holder(const char *dir, struct mds_pool_holder *h)
{
	char path[PATH_MAX];
	int f, rc;

	memset(h, 0, sizeof(*h));
	rc = lock_path(dir, path, sizeof(path));
	if (rc)
		return rc;
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(f, LOCK_SH | LOCK_NB) == 0) {
		flock(f, LOCK_UN);
		close(f);
		return 0;
	}
	rc = errno == EWOULDBLOCK ? 1 : -errno;
	if (rc == 1)
		read_holder(f, h);
	close(f);
	return rc;
}
