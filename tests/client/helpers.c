/* Test helpers for the client suites: nfs-ganesha under the harness's control, a cuttable TCP relay,
 * file utilities. Ganesha is the real Debian daemon with FSAL VFS; nothing here imitates a server. */
#include "tests/client/helpers.h"

#include "client/pnfs.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t ct_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- ganesha ---------------------------------------------------------------------------------- */

static int port_open(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return 0;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return rc == 0;
}

static void ganesha_kill(struct ct_ganesha *g, int sig)
{
	if (g->pid <= 0)
		return;
	kill(g->pid, sig);
	for (int i = 0; i < 100; i++) {
		if (waitpid(g->pid, NULL, WNOHANG) == g->pid) {
			g->pid = 0;
			return;
		}
		usleep(50000);
	}
	kill(g->pid, SIGKILL);
	waitpid(g->pid, NULL, 0);
	g->pid = 0;
}

static void ganesha_cleanup_cb(void *arg)
{
	ganesha_kill(arg, SIGTERM);
}

static int ganesha_spawn(struct ct_ganesha *g, char *why, size_t whylen)
{
	char pidfile[420];
	pid_t pid;

	snprintf(pidfile, sizeof(pidfile), "%s/ganesha.pid", g->dir);
	g->started = time(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("ganesha.nfsd", "ganesha.nfsd", "-F", "-f", g->conf, "-L", g->log, "-p", pidfile, (char *)NULL);
		_exit(127);
	}
	g->pid = pid;
	for (int i = 0; i < 300; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			g->pid = 0;
			snprintf(why, whylen, "ganesha.nfsd exited at start (status %d; see %s)",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, g->log);
			return -1;
		}
		if (port_open(g->port))
			return 0;
		usleep(50000);
	}
	ganesha_kill(g, SIGKILL);
	snprintf(why, whylen, "ganesha.nfsd did not listen on port %d within 15 s", g->port);
	return -1;
}

struct ct_ganesha *ct_ganesha_up(int lease_s, char *why, size_t whylen)
{
	struct ct_ganesha *g;
	FILE *f;

	if (system("command -v ganesha.nfsd >/dev/null 2>&1") != 0) {
		snprintf(why, whylen, "ganesha.nfsd is not installed (apt-get install nfs-ganesha nfs-ganesha-vfs)");
		return NULL;
	}
	if (!test_is_root()) {
		snprintf(why, whylen, "ganesha with FSAL VFS needs root");
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	snprintf(g->dir, sizeof(g->dir), "%s", test_tmpdir("ganesha"));
	snprintf(g->export_dir, sizeof(g->export_dir), "%s/export", g->dir);
	snprintf(g->conf, sizeof(g->conf), "%s/ganesha.conf", g->dir);
	snprintf(g->log, sizeof(g->log), "%s/ganesha.log", g->dir);
	g->lease_s = lease_s;
	mkdir(g->export_dir, 0755);
	g->port = test_free_port();
	f = fopen(g->conf, "w");
	if (!f) {
		snprintf(why, whylen, "cannot write %s", g->conf);
		free(g);
		return NULL;
	}
	char lease[64] = "";
	if (lease_s)
		snprintf(lease, sizeof(lease), "Lease_Lifetime = %d;", lease_s);
	fprintf(f,
		"NFS_CORE_PARAM { NFS_Port = %d; Bind_Addr = 127.0.0.1; Protocols = 4; Enable_NLM = false;\n"
		"  Enable_RQUOTA = false; Enable_UDP = false; }\n"
		"NFSv4 { Graceless = true; Minor_Versions = 1,2; %s }\n"
		"EXPORT { Export_Id = 1; Path = %s; Pseudo = /export; Protocols = 4; Transports = TCP;\n"
		"  Access_Type = RW; Squash = No_Root_Squash; SecType = sys; FSAL { Name = VFS; } }\n",
		g->port, lease, g->export_dir);
	fclose(f);
	if (ganesha_spawn(g, why, whylen) < 0) {
		free(g);
		return NULL;
	}
	g->cleanup_handle = test_cleanup_push(ganesha_cleanup_cb, g);
	return g;
}

int ct_ganesha_restart(struct ct_ganesha *g)
{
	char why[300];

	ganesha_kill(g, SIGKILL);
	/* Ganesha derives its write verifier from its start time in whole seconds: a restart within
	 * the same second would look to clients like no restart at all. */
	while (time(NULL) <= g->started)
		usleep(50000);
	for (int i = 0; i < 5; i++) {
		if (ganesha_spawn(g, why, sizeof(why)) == 0)
			return 0;
		fprintf(stderr, "ct_ganesha_restart: %s\n", why);
		usleep(500000);
	}
	return -1;
}

void ct_ganesha_down(struct ct_ganesha *g)
{
	if (!g)
		return;
	test_cleanup_cancel(g->cleanup_handle);
	ganesha_kill(g, SIGTERM);
	free(g);
}

/* ---- relay -------------------------------------------------------------------------------------- */

#define CT_PROXY_MAX 8

struct ct_proxy {
	int lfd, upstream, port;
	int wake[2];
	pthread_t thr;
	pthread_mutex_t mu;
	int pairs[CT_PROXY_MAX][2];
	int npairs;
	int cut_req, stop_req, cut_done;
	int drop; /* CT_PROXY_DROP_*: which direction's bytes are read and thrown away */
	int pause; /* CT_PROXY_PAUSE_*: which direction's bytes are left unread (kept, in order) */
	unsigned accepted;
	uint64_t up_bytes; /* relayed towards the upstream (requests and their data) */
	uint64_t down_bytes; /* relayed back (replies and their data) */
	uint64_t dropped[2]; /* thrown away: requests (0), replies (1) */
	unsigned hold; /* relay nothing until this many connections were accepted */
	struct ct_proxy *hold_peer; /* counted with this one's */
};

static int connect_local(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void close_pairs(struct ct_proxy *p)
{
	for (int i = 0; i < p->npairs; i++) {
		close(p->pairs[i][0]);
		close(p->pairs[i][1]);
	}
	p->cut_done = p->npairs;
	p->npairs = 0;
}

static void *proxy_main(void *arg)
{
	struct ct_proxy *p = arg;
	char buf[65536];

	for (;;) {
		struct pollfd pf[2 + 2 * CT_PROXY_MAX];
		int n = 0, held, paused;

		pf[n++] = (struct pollfd){ .fd = p->wake[0], .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = p->lfd, .events = POLLIN };
		{
			struct ct_proxy *peer;
			unsigned seen, hold;
			pthread_mutex_lock(&p->mu);
			seen = p->accepted;
			hold = p->hold;
			peer = p->hold_peer;
			pthread_mutex_unlock(&p->mu);
			if (peer) {
				pthread_mutex_lock(&peer->mu);
				seen += peer->accepted;
				pthread_mutex_unlock(&peer->mu);
			}
			held = seen < hold;
		}
		pthread_mutex_lock(&p->mu);
		paused = p->pause;
		pthread_mutex_unlock(&p->mu);
		for (int i = 0; i < p->npairs && !held; i++) {
			/* a paused side is not polled (a negative fd): its bytes wait in its socket */
			pf[n++] = (struct pollfd){ .fd = (paused & CT_PROXY_PAUSE_REQUESTS) ? -1 : p->pairs[i][0],
						   .events = POLLIN };
			pf[n++] = (struct pollfd){ .fd = (paused & CT_PROXY_PAUSE_REPLIES) ? -1 : p->pairs[i][1],
						   .events = POLLIN };
		}
		/* held: look again soon, the peer's count may have moved */
		if (poll(pf, (nfds_t)n, held ? 20 : -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			char c;
			if (read(p->wake[0], &c, 1) < 0)
				c = 0;
			pthread_mutex_lock(&p->mu);
			if (p->cut_req) {
				close_pairs(p);
				p->cut_req = 0;
			}
			int stop = p->stop_req;
			pthread_mutex_unlock(&p->mu);
			if (stop)
				break;
			continue;
		}
		if (pf[1].revents & POLLIN) {
			int c = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC), u;
			if (c >= 0) {
				u = connect_local(p->upstream);
				if (u < 0 || p->npairs == CT_PROXY_MAX) {
					close(c);
					if (u >= 0)
						close(u);
				} else {
					p->pairs[p->npairs][0] = c;
					p->pairs[p->npairs][1] = u;
					p->npairs++;
					pthread_mutex_lock(&p->mu);
					p->accepted++;
					pthread_mutex_unlock(&p->mu);
				}
			}
			continue;
		}
		for (int i = 0; i < p->npairs && !held; i++) {
			for (int side = 0; side < 2; side++) {
				struct pollfd *q = &pf[2 + 2 * i + side];
				if (!q->revents)
					continue;
				ssize_t r = read(q->fd, buf, sizeof(buf));
				int dead = r <= 0, drop;
				pthread_mutex_lock(&p->mu);
				drop = p->drop;
				pthread_mutex_unlock(&p->mu);
				if (r > 0 && (drop & (side == 0 ? CT_PROXY_DROP_REQUESTS : CT_PROXY_DROP_REPLIES))) {
					pthread_mutex_lock(&p->mu);
					p->dropped[side] += (uint64_t)r;
					pthread_mutex_unlock(&p->mu);
					r = 0; /* lost on the way */
				}
				if (dead && side == 1 && drop == CT_PROXY_BLACK_HOLE) {
					/* the server went away; its peer hears nothing of it */
					close(p->pairs[i][1]);
					p->pairs[i][1] = -1;
					continue;
				}
				for (ssize_t off = 0; !dead && off < r;) {
					ssize_t w = write(p->pairs[i][1 - side], buf + off, (size_t)(r - off));
					if (w <= 0)
						dead = 1;
					else
						off += w;
				}
				if (r > 0 && !dead) {
					pthread_mutex_lock(&p->mu);
					*(side == 0 ? &p->up_bytes : &p->down_bytes) += (uint64_t)r;
					pthread_mutex_unlock(&p->mu);
				}
				if (dead) {
					close(p->pairs[i][0]);
					close(p->pairs[i][1]);
					p->pairs[i][0] = p->pairs[p->npairs - 1][0];
					p->pairs[i][1] = p->pairs[p->npairs - 1][1];
					p->npairs--;
					goto next_round;
				}
			}
		}
next_round:;
	}
	close_pairs(p);
	return NULL;
}

struct ct_proxy *ct_proxy_start(int upstream_port)
{
	struct ct_proxy *p = calloc(1, sizeof(*p));
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int one = 1;

	if (!p)
		return NULL;
	p->upstream = upstream_port;
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(p->lfd, 8) < 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &al) < 0 || pipe2(p->wake, O_CLOEXEC) < 0) {
		if (p->lfd >= 0)
			close(p->lfd);
		free(p);
		return NULL;
	}
	p->port = ntohs(a.sin_port);
	pthread_mutex_init(&p->mu, NULL);
	if (pthread_create(&p->thr, NULL, proxy_main, p) != 0) {
		close(p->lfd);
		close(p->wake[0]);
		close(p->wake[1]);
		free(p);
		return NULL;
	}
	return p;
}

int ct_proxy_port(const struct ct_proxy *p)
{
	return p->port;
}

unsigned ct_proxy_accepted(const struct ct_proxy *p)
{
	return p->accepted;
}

uint64_t ct_proxy_bytes(struct ct_proxy *p, int down)
{
	uint64_t n;
	pthread_mutex_lock(&p->mu);
	n = down ? p->down_bytes : p->up_bytes;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void ct_proxy_hold(struct ct_proxy *p, unsigned n)
{
	ct_proxy_hold_with(p, NULL, n);
}

void ct_proxy_hold_with(struct ct_proxy *p, struct ct_proxy *peer, unsigned n)
{
	pthread_mutex_lock(&p->mu);
	p->hold = n;
	p->hold_peer = peer;
	pthread_mutex_unlock(&p->mu);
}

int ct_proxy_cut(struct ct_proxy *p)
{
	int n;

	pthread_mutex_lock(&p->mu);
	p->cut_req = 1;
	p->cut_done = -1;
	pthread_mutex_unlock(&p->mu);
	if (write(p->wake[1], "c", 1) < 0)
		return -1;
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&p->mu);
		n = p->cut_req ? -1 : p->cut_done;
		pthread_mutex_unlock(&p->mu);
		if (n >= 0)
			return n;
		usleep(5000);
	}
	return -1;
}

void ct_proxy_drop(struct ct_proxy *p, int what)
{
	pthread_mutex_lock(&p->mu);
	p->drop = what;
	pthread_mutex_unlock(&p->mu);
}

void ct_proxy_pause(struct ct_proxy *p, int what)
{
	pthread_mutex_lock(&p->mu);
	p->pause = what;
	pthread_mutex_unlock(&p->mu);
	if (write(p->wake[1], "p", 1) < 0)
		(void)0; /* the pipe is full: the relay wakes anyway */
}

uint64_t ct_proxy_dropped(struct ct_proxy *p, int down)
{
	uint64_t n;

	pthread_mutex_lock(&p->mu);
	n = p->dropped[down ? 1 : 0];
	pthread_mutex_unlock(&p->mu);
	return n;
}

void ct_proxy_stop(struct ct_proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop_req = 1;
	pthread_mutex_unlock(&p->mu);
	if (write(p->wake[1], "s", 1) < 0)
		return;
	pthread_join(p->thr, NULL);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ---- files -------------------------------------------------------------------------------------- */

int ct_read_file(const char *path, void **buf, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *b;
	size_t got = 0;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*buf = b;
	*len = got;
	return got == (size_t)st.st_size ? 0 : -1;
}

int ct_write_file(const char *path, const void *buf, size_t len)
{
	return ct_write_file_mode(path, buf, len, 0644);
}

int ct_write_file_mode(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return close(fd);
}

/* ---- the pnfs command in the background ---------------------------------------------------------- */

/* pnfs cp -q OPTS SRC DST started in the background, its stderr into errfile: its pid, or -1. */
pid_t ct_cp_start(const char *opts, const char *src, const char *dst, const char *errfile)
{
	pid_t pid = fork();

	if (pid == 0) {
		char cmd[8192];
		/* as from a user's shell: the runner ignores SIGPIPE, and an ignored signal stays ignored
		 * across exec, which would hide a copy killed by one */
		signal(SIGPIPE, SIG_DFL);
		snprintf(cmd, sizeof(cmd), "exec '%s' cp -q %s '%s' '%s' 2>'%s'", test_bin("pnfs"), opts, src, dst,
			 errfile);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The end of a pnfs cp forked by a test: wait up to seconds for it (unless it was reaped already,
 * *status holding how it ended), SIGKILL it if it still runs then, and read what it wrote to errfile
 * (its stderr) into errtxt. Returns 0 if it ended on its own, -1 if it had to be killed. */
int ct_cp_wait(pid_t pid, int reaped, int seconds, int *status, const char *errfile, char *errtxt, size_t len)
{
	int exited = reaped;
	char *s = NULL;

	for (int i = 0; i < seconds * 100 && !exited; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			exited = 1;
		else
			usleep(10000);
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, status, 0);
	}
	if (test_run(&s, "cat '%s'", errfile) == 0 && s)
		snprintf(errtxt, len, "%s", s);
	free(s);
	return exited ? 0 : -1;
}

int ct_relay_url(const struct test_lab *lab, struct ct_proxy *px, int i, char *url, size_t len)
{
	char port[16];
	const char *at;
	int n;

	snprintf(port, sizeof(port), ":%d/", lab->port);
	at = strstr(lab->urls[i], port);
	if (!at)
		return -1;
	n = snprintf(url, len, "%.*s:%d/%s", (int)(at - lab->urls[i]), lab->urls[i], ct_proxy_port(px), at + strlen(port));
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

int ct_relay_opts(const struct test_lab *lab, struct ct_proxy *px, const char *initiator, const char *more, char *opts,
		  size_t len)
{
	size_t n = (size_t)snprintf(opts, len, "--initiator %s %s", initiator, more ? more : "");

	for (int i = 0; i < lab->nluns && n < len; i++) {
		char url[512];
		if (ct_relay_url(lab, px, i, url, sizeof(url)) < 0)
			return -1;
		n += (size_t)snprintf(opts + n, len - n, " --device '%s'", url);
	}
	return n < len ? 0 : -1;
}

void ct_lab_devices(struct pnfs_opts *o, const struct test_lab *lab, const char **urls)
{
	for (int i = 0; i < lab->nluns; i++)
		urls[i] = lab->urls[i];
	o->devices = urls;
	o->ndevices = (unsigned)lab->nluns;
}

struct pnfs_context *ct_mount(const struct pnfs_opts *o, int port, const char *path)
{
	struct pnfs_context *ctx = NULL;

	CU_ASSERT_EQUAL_FATAL(pnfs_context_create(o, &ctx), 0);
	if (pnfs_mount(ctx, "127.0.0.1", port, path) != 0) {
		fprintf(stderr, "mount: %s\n", pnfs_get_error(ctx));
		pnfs_context_destroy(ctx);
		CU_FAIL_FATAL("mount");
	}
	return ctx;
}

void ct_unmount(struct pnfs_context *ctx)
{
	if (pnfs_umount(ctx) != 0) {
		fprintf(stderr, "\n  umount: %s\n", pnfs_get_error(ctx));
		CU_FAIL("umount");
	}
	pnfs_context_destroy(ctx);
}
