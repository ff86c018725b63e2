/* Running pnfs-mds from tests: fork/exec with the output in a log file, a connect loop to see it
 * ready, waitpid for its exit status. The harness cleanup kills a daemon left running. */
#include "tests/mds/mdsd.h"

#include "tests/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void kill_cb(void *arg)
{
	struct test_mds *m = arg;
	int st;

	/* A server that died under a suite (the suite then times out or fails on "connection
	 * refused") says how, with its log, before the run's temporary files go. */
	if (m->pid > 0 && waitpid(m->pid, &st, WNOHANG) == m->pid) {
		(void)test_run(NULL, "{ echo 'pnfs-mds (pid %d) had ended before its cleanup: %s %d; its log ends:'; "
			       "tail -n 25 '%s'; } >&2", (int)m->pid, WIFEXITED(st) ? "exit status" : "signal",
			       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), m->log);
		m->pid = 0;
	}
	if (m->pid > 0) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, NULL, 0);
		m->pid = 0;
	}
}

struct test_mds *tmds_new(const struct test_lab *lab, const char *format_opts, const char *args)
{
	struct test_mds *m = calloc(1, sizeof(*m));
	char urls[LAB_MAX_LUNS * 260] = "", *out = NULL;
	int rc;

	if (!m)
		return NULL;
	snprintf(m->dir, sizeof(m->dir), "%s", test_tmpdir("mds"));
	snprintf(m->pool, sizeof(m->pool), "%s/pool", m->dir);
	snprintf(m->log, sizeof(m->log), "%s/mds.log", m->dir);
	snprintf(m->args, sizeof(m->args), "%s", args ? args : "");
	for (int i = 0; i < lab->nluns; i++) {
		strncat(urls, lab->urls[i], sizeof(urls) - strlen(urls) - 2);
		strncat(urls, " ", sizeof(urls) - strlen(urls) - 1);
	}
	rc = test_run(&out, "'%s' format --pool '%s' %s %s 2>&1", test_bin("pnfs-admin"), m->pool,
		      format_opts ? format_opts : "", urls);
	if (rc != 0) {
		fprintf(stderr, "tmds: pnfs-admin format failed (%d): %s\n", rc, out ? out : "");
		free(out);
		free(m);
		return NULL;
	}
	free(out);
	m->cleanup = test_cleanup_push(kill_cb, m);
	return m;
}

void tmds_free(struct test_mds *m)
{
	if (m)
		test_cleanup_finish(m->cleanup, kill_cb, m);
}

static int can_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int tmds_start(struct test_mds *m)
{
	char cmd[4096];
	pid_t pid;

	if (m->pid > 0)
		return 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		if (!m->port || attempt > 0)
			m->port = test_free_port();
		snprintf(cmd, sizeof(cmd),
			 "exec '%s' --foreground --listen 127.0.0.1 --port %d --pool '%s' %s%s%s %s >>'%s' 2>&1",
			 test_bin("pnfs-mds"), m->port, m->pool, m->conf[0] ? "--config '" : "",
			 m->conf[0] ? m->conf : "", m->conf[0] ? "'" : "", m->args, m->log);
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		m->pid = pid;
		for (int i = 0; i < 1000; i++) {
			int st;
			pid_t w = waitpid(pid, &st, WNOHANG);
			if (w == pid) {
				char *log = tmds_log(m);
				m->pid = 0;
				if (log && strstr(log, "Address already in use")) {
					free(log);
					break; /* a port race: try another */
				}
				free(log);
				return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			}
			if (can_connect(m->port))
				return 0;
			sleep_ms(10);
		}
		if (m->pid > 0) {
			kill_cb(m);
			return -1;
		}
	}
	return -1;
}

int tmds_stop(struct test_mds *m, int sig)
{
	int st;

	if (m->pid <= 0)
		return -1;
	kill(m->pid, sig);
	/* 30 s: a clean stop commits, waits for SAN I/O and releases the pool, on a machine that may
	 * be running other suites meanwhile. */
	for (int i = 0; i < 3000; i++) {
		pid_t w = waitpid(m->pid, &st, WNOHANG);
		if (w == m->pid) {
			int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			m->pid = 0;
			if (rc != 0 && rc != 128 + sig)
				(void)test_run(NULL, "{ echo 'pnfs-mds exited with status %d after signal %d; its log ends:'; "
					       "tail -n 15 '%s'; } >&2", rc, sig, m->log);
			return rc;
		}
		sleep_ms(10);
	}
	(void)test_run(NULL, "{ echo 'pnfs-mds still runs 30 s after signal %d (killed); its log ends:'; tail -n 15 '%s'; } >&2",
		       sig, m->log);
	kill_cb(m);
	return -1;
}

struct test_mds *tmds_up(const struct test_lab *lab, const char *format_opts, const char *args, char *why,
			 size_t whylen)
{
	struct test_mds *m = tmds_new(lab, format_opts, args);

	if (!m || tmds_start(m) != 0) {
		snprintf(why, whylen, "pnfs-mds did not start");
		tmds_free(m);
		return NULL;
	}
	return m;
}

void tmds_down(struct test_mds *m)
{
	if (m)
		tmds_stop(m, SIGTERM);
	tmds_free(m);
}

struct test_mds *tmds_lab_up(struct test_lab **labp, int nluns, const char *size, const struct lab_opts *lab_opts,
			     const char *format_opts, char *why, size_t whylen, const char *args_fmt, ...)
{
	char args[1024];
	va_list ap;

	va_start(ap, args_fmt);
	vsnprintf(args, sizeof(args), args_fmt, ap);
	va_end(ap);
	*labp = lab_up(nluns, size, lab_opts);
	if (!*labp) {
		snprintf(why, whylen, "no tgtd lab");
		return NULL;
	}
	return tmds_up(*labp, format_opts, args, why, whylen);
}

int tmds_lab_down(struct test_lab **labp, struct test_mds **mdsp)
{
	tmds_down(*mdsp);
	lab_down(*labp);
	*mdsp = NULL;
	*labp = NULL;
	return 0;
}

char *tmds_log(const struct test_mds *m)
{
	char *out = NULL;
	test_run(&out, "cat '%s' 2>/dev/null", m->log);
	return out;
}
