/* pnfs-mds: the pNFS metadata server daemon. Settings come from defaults, then the config file
 * (--config), then command-line flags, which mirror the config keys one for one. As a daemon it
 * forks first and reports start-up success or failure (a missing LUN, a busy port) through a pipe,
 * so the exit status of `pnfs-mds` says whether the server is up. */
#include "mds/config.h"
#include "mds/mds.h"
#include "proto/log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_PID_FILE "/run/pnfs-mds.pid"
#define MAX_FLAGS 256

struct flag {
	const char *key;
	const char *value;
};

struct settings {
	const char *config_path;
	struct flag flags[MAX_FLAGS];
	int nflags;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pnfs-mds [OPTIONS]\n"
		   "Serve a pool (made by 'pnfs-admin format') over NFSv4.1 as a pNFS metadata server.\n\n"
		   "Every option is also a config-file key: '--port 2049' is 'port = 2049' in the file.\n"
		   "Flags override the file; the file overrides the defaults.\n\n");
	for (const struct mds_config_key *k = mds_config_keys; k->name; k++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
		fprintf(f, "  %-26s %s\n", left, k->help);
	}
	fprintf(f, "  %-26s %s\n", "-F", "same as --foreground");
	fprintf(f, "  %-26s %s\n", "-h, --help", "this text");
	fprintf(f, "  %-26s %s\n", "--version", "the release (as the only argument)");
	fprintf(f, "\nConfig file: one 'key = value' per line, '#' starts a comment, a bare switch\n"
		   "name ('foreground') means yes; 'export' may appear many times. Errors name the line.\n"
		   "Signals: SIGTERM/SIGINT stop cleanly (every transaction is committed before each\n"
		   "reply anyway); SIGHUP re-reads the config file's export rules.\n"
		   "Exit status: 0 stopped cleanly, 1 failed (e.g. a LUN of the pool is missing), 2 usage.\n");
}

/* defaults -> file -> flags. */
static int build_config(const struct settings *s, struct mds_config *cfg, char *err, size_t errlen)
{
	mds_config_defaults(cfg);
	if (s->config_path) {
		int rc = mds_config_load(cfg, s->config_path, err, errlen);
		if (rc)
			return rc;
	}
	for (int i = 0; i < s->nflags; i++) {
		char why[512];
		int rc = mds_config_set(cfg, s->flags[i].key, s->flags[i].value, why, sizeof(why));
		if (rc) {
			snprintf(err, errlen, "--%s: %s", s->flags[i].key, why);
			return rc;
		}
	}
	return 0;
}

static int reload_exports(void *arg, struct mds_exports *out, char *err, size_t errlen)
{
	const struct settings *s = arg;
	struct mds_config *cfg = malloc(sizeof(*cfg));
	int rc;

	if (!cfg) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = build_config(s, cfg, err, errlen);
	if (rc == 0)
		*out = cfg->exports;
	free(cfg);
	return rc;
}

static int parse_args(int argc, char **argv, struct settings *s)
{
	static struct option opts[64];
	int n = 0, c;

	for (const struct mds_config_key *k = mds_config_keys; k->name && n < 60; k++, n++) {
		opts[n].name = k->name;
		opts[n].has_arg = k->arg ? required_argument : no_argument;
		opts[n].flag = NULL;
		opts[n].val = 1000 + n;
	}
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "Fh", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == 'F') {
			s->flags[s->nflags++] = (struct flag){ "foreground", "yes" };
			continue;
		}
		if (c < 1000) {
			fprintf(stderr, "pnfs-mds: unknown or incomplete option '%s' (see --help)\n",
				argv[optind - 1]);
			return -1;
		}
		if (!strcmp(opts[c - 1000].name, "config")) {
			s->config_path = optarg;
			continue;
		}
		if (s->nflags >= MAX_FLAGS) {
			fprintf(stderr, "pnfs-mds: too many options\n");
			return -1;
		}
		s->flags[s->nflags++] = (struct flag){ opts[c - 1000].name, optarg ? optarg : "yes" };
	}
	if (optind < argc) {
		fprintf(stderr, "pnfs-mds: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	return 0;
}

static int write_pid_file(const char *path)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return -e;
	}
	return 0;
}

/* Fork; the parent waits for the child's verdict on the pipe and exits with it. Returns in the
 * child with *report_fd set. */
static void daemonize(int *report_fd)
{
	int p[2], nul;
	pid_t pid;

	if (pipe(p) < 0) {
		fprintf(stderr, "pnfs-mds: pipe: %s\n", strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "pnfs-mds: fork: %s\n", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		char msg[2048];
		ssize_t n, got = 0;
		close(p[1]);
		while ((n = read(p[0], msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
			got += n;
		msg[got > 0 ? got : 0] = 0;
		if (got > 0 && msg[0] == '0')
			exit(0);
		if (got > 1)
			fprintf(stderr, "pnfs-mds: %s\n", msg + 1);
		else {
			int st = 0;
			waitpid(pid, &st, 0);
			fprintf(stderr, "pnfs-mds: the server died while starting\n");
		}
		exit(1);
	}
	close(p[0]);
	setsid();
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		if (nul > 2)
			close(nul);
	}
	*report_fd = p[1];
}

static void report(int fd, int ok, const char *msg)
{
	char buf[2048];
	int n;

	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%c%s", ok ? '0' : '1', msg ? msg : "");
	if (write(fd, buf, (size_t)n) < 0) {
		/* The parent is gone; nothing to tell. */
	}
	close(fd);
}

int main(int argc, char **argv)
{
	static struct settings settings;
	static struct mds_config config;
	struct settings *s = &settings;
	struct mds_config *cfg = &config;
	struct mds_server *srv = NULL;
	char err[2048] = "", abspool[PATH_MAX];
	const char *pid_file = NULL;
	int report_fd = -1, rc;

	proto_version_exit(argc, argv, "pnfs-mds");
	if (parse_args(argc, argv, s) != 0)
		return 2;
	if (build_config(s, cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "pnfs-mds: %s\n", err);
		return 2;
	}
	if (mds_config_check(cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "pnfs-mds: %s\n", err);
		return 2;
	}
	if (realpath(cfg->pool, abspool))
		snprintf(cfg->pool, sizeof(cfg->pool), "%s", abspool);
	signal(SIGPIPE, SIG_IGN);
	proto_log_set_prog("pnfs-mds");
	proto_log_set_level((enum proto_log_level)cfg->log_level);
	if (!cfg->foreground) {
		daemonize(&report_fd);
		if (cfg->log_file[0]) {
			int fd = open(cfg->log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (fd < 0) {
				snprintf(err, sizeof(err), "log file %s: %s", cfg->log_file, strerror(errno));
				report(report_fd, 0, err);
				return 1;
			}
			dup2(fd, 2);
			close(fd);
		} else {
			int nul = open("/dev/null", O_WRONLY);
			if (nul >= 0) {
				dup2(nul, 2);
				close(nul);
			}
			proto_log_use_syslog("pnfs-mds");
		}
		pid_file = cfg->pid_file[0] ? cfg->pid_file : DEFAULT_PID_FILE;
		if (chdir("/") != 0) {
			/* Paths are absolute from here on; staying put is harmless. */
		}
	} else {
		if (cfg->log_syslog)
			proto_log_use_syslog("pnfs-mds");
		pid_file = cfg->pid_file[0] ? cfg->pid_file : NULL;
	}
	/* SIGTERM, SIGINT and SIGHUP wait from here until the loop reads them from its signalfd: the
	 * server listens before that fd exists, and a stop asked for in between is a clean stop too,
	 * not death by the default action. */
	{
		sigset_t stop;
		sigemptyset(&stop);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGHUP);
		sigprocmask(SIG_BLOCK, &stop, NULL);
	}
	rc = mds_server_new(cfg, &srv, err, sizeof(err));
	if (rc) {
		LOG_ERROR("%s", err);
		if (report_fd >= 0)
			report(report_fd, 0, err);
		else
			fprintf(stderr, "pnfs-mds: %s\n", err);
		return 1;
	}
	rc = mds_server_handle_signals(srv, reload_exports, s);
	if (rc == 0 && pid_file)
		rc = write_pid_file(pid_file);
	if (rc) {
		snprintf(err, sizeof(err), "%s: %s", pid_file ? pid_file : "signals", strerror(-rc));
		LOG_ERROR("%s", err);
		report(report_fd, 0, err);
		mds_server_free(srv);
		return 1;
	}
	report(report_fd, 1, NULL);
	rc = mds_server_run(srv);
	mds_server_free(srv);
	if (pid_file)
		unlink(pid_file);
	LOG_INFO("stopped");
	return rc ? 1 : 0;
}
