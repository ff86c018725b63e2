/* Labs for integration tests: drives the real `san-lab` tool, reads back its state files, and
 * ties the lab's life to the runner (cleanup hooks here, --watch-pid in san-lab for crashes). */
#include "tests/lab.h"
#include "tests/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void lab_cleanup_cb(void *arg)
{
	struct test_lab *lab = arg;
	char cmd[700];
	/* a test's lab is scratch: its LUN files go with it (RAM ones would outlive the run) */
	snprintf(cmd, sizeof(cmd), "'%s' down --wipe --dir '%s' >/dev/null 2>&1", test_bin("san-lab"), lab->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "lab: 'san-lab down --wipe --dir %s' failed\n", lab->dir);
}

static int read_state_value(const char *dir, const char *key, char *val, size_t len)
{
	char path[400], line[512];
	size_t klen = strlen(key);
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "%s/lab.env", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
			char *v = line + klen + 1;
			v[strcspn(v, "\n")] = 0;
			snprintf(val, len, "%s", v);
			found = 1;
			break;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

/* " OPTION 'WORD'" appended to buf for each blank-separated word of words (NULL: none). */
static void add_each_word(char *buf, size_t len, const char *option, const char *words)
{
	char w[300], *save = NULL;

	if (!words)
		return;
	snprintf(w, sizeof(w), "%s", words);
	for (char *i = strtok_r(w, " ", &save); i; i = strtok_r(NULL, " ", &save))
		snprintf(buf + strlen(buf), len - strlen(buf), " %s '%s'", option, i);
}

int lab_value(const struct test_lab *lab, const char *key, char *val, size_t len)
{
	return read_state_value(lab->dir, key, val, len);
}

struct test_lab *lab_up(int nluns, const char *size, const struct lab_opts *opts)
{
	struct lab_opts none = { 0 };
	struct test_lab *lab;
	char *out = NULL, extra[600] = "", val[300], path[400];
	int rc, n = 0;
	FILE *f;

	if (!opts)
		opts = &none;
	if (nluns < 1 || nluns > LAB_MAX_LUNS)
		return NULL;
	lab = calloc(1, sizeof(*lab));
	if (!lab)
		return NULL;
	snprintf(lab->dir, sizeof(lab->dir), "%s", test_tmpdir("lab"));
	if (opts->ram)
		strcat(extra, " --ram");
	if (opts->stock_malloc)
		strcat(extra, " --tgtd-malloc stock");
	if (opts->chap)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " --chap '%s'", opts->chap);
	add_each_word(extra, sizeof(extra), "--initiator", opts->initiator);
	if (opts->portal)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " --portal '%s'", opts->portal);
	add_each_word(extra, sizeof(extra), "--param", opts->params);

	for (int attempt = 0; attempt < 5; attempt++) {
		lab->port = test_free_port();
		if (opts->hosts > 0)
			snprintf(lab->up_cmd, sizeof(lab->up_cmd),
				 "'%s' up --hosts %d --rate %d --size %s --dir '%s' --port %d --watch-pid %d%s",
				 test_bin("san-lab"), opts->hosts, opts->rate_mbit, size, lab->dir, lab->port,
				 (int)getpid(), extra);
		else
			snprintf(lab->up_cmd, sizeof(lab->up_cmd),
				 "'%s' up --luns %d --size %s --dir '%s' --port %d --watch-pid %d%s", test_bin("san-lab"),
				 nluns, size, lab->dir, lab->port, (int)getpid(), extra);
		rc = test_run(&out, "%s", lab->up_cmd);
		if (rc == 0)
			break;
		free(out);
		out = NULL;
		/* A port taken between our probe and tgtd's bind: try another. */
	}
	if (rc != 0) {
		fprintf(stderr, "lab: san-lab up failed (exit %d)\n", rc);
		free(lab);
		return NULL;
	}
	lab->cleanup_handle = test_cleanup_push(lab_cleanup_cb, lab);

	for (char *line = strtok(out, "\n"); line && n < LAB_MAX_LUNS; line = strtok(NULL, "\n")) {
		if (strncmp(line, "iscsi://", 8) == 0)
			snprintf(lab->urls[n++], sizeof(lab->urls[0]), "%s", line);
	}
	free(out);
	lab->nluns = n;
	if (read_state_value(lab->dir, "LAB_IQN", val, sizeof(val)) == 0)
		snprintf(lab->iqn, sizeof(lab->iqn), "%s", val);
	if (read_state_value(lab->dir, "LAB_BYTES", val, sizeof(val)) == 0)
		lab->lun_bytes = strtoull(val, NULL, 10);
	if (read_state_value(lab->dir, "LAB_DATADIR", val, sizeof(val)) == 0) {
		for (int i = 0; i < n; i++)
			snprintf(lab->files[i], sizeof(lab->files[0]), "%s/lun%d.img", val, i + 1);
	}
	snprintf(path, sizeof(path), "%s/luns", lab->dir);
	f = fopen(path, "r");
	if (!f || n != (opts->hosts > 0 ? opts->hosts : nluns)) {
		fprintf(stderr, "lab: san-lab reported %d LUN URLs, expected %d\n", n,
			opts->hosts > 0 ? opts->hosts : nluns);
		if (f)
			fclose(f);
		lab_down(lab);
		return NULL;
	}
	fclose(f);
	return lab;
}

void lab_down(struct test_lab *lab)
{
	if (lab)
		test_cleanup_finish(lab->cleanup_handle, lab_cleanup_cb, lab);
}

int lab_restart(struct test_lab *lab)
{
	return lab_restart_with(lab, NULL);
}

int lab_restart_with(struct test_lab *lab, const char *more)
{
	char *out = NULL;
	int rc, n = 0, same = 1;

	rc = test_run(&out, "%s %s", lab->up_cmd, more ? more : "");
	if (rc != 0) {
		fprintf(stderr, "lab: san-lab up again in %s failed (exit %d)\n", lab->dir, rc);
		free(out);
		return -1;
	}
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "iscsi://", 8) != 0)
			continue;
		same &= n < lab->nluns && strcmp(line, lab->urls[n]) == 0;
		n++;
	}
	free(out);
	if (!same || n != lab->nluns) {
		fprintf(stderr, "lab: san-lab up again in %s gave other LUN URLs\n", lab->dir);
		return -1;
	}
	return 0;
}

int lab_kill_target(struct test_lab *lab)
{
	char val[64];
	if (read_state_value(lab->dir, "LAB_PID", val, sizeof(val)) != 0 || atoi(val) <= 0)
		return -1;
	return test_run(NULL, "kill -9 %d", atoi(val)) == 0 ? 0 : -1;
}

/* ---- watching cache flushes -------------------------------------------------------------------- */

struct lab_sync_trace {
	pid_t strace_pid;
	char out[400], err[400];
	long base;             /* lines of the trace before the last reset */
	int cleanup_handle;
};

static void trace_kill(void *arg)
{
	struct lab_sync_trace *t = arg;
	if (t->strace_pid > 0) {
		kill(t->strace_pid, SIGTERM); /* strace detaches from the tracee and exits */
		waitpid(t->strace_pid, NULL, 0);
		t->strace_pid = 0;
	}
}

static int count_attached(const char *path)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* "strace: Process 12 attached" or "... attached with 33 threads" (all of them at once) */
		const char *w = strstr(line, " attached with ");
		if (w)
			n += atoi(w + strlen(" attached with "));
		else
			n += strstr(line, " attached") != NULL;
	}
	fclose(f);
	return n;
}

static int count_threads(int pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

struct lab_sync_trace *lab_sync_trace_start_pid(int pid, char *why, size_t whylen)
{
	return lab_trace_start_pid(pid, "trace=fdatasync,fsync,sync_file_range", why, whylen);
}

const char *lab_trace_path(const struct lab_sync_trace *t)
{
	return t->out;
}

struct lab_sync_trace *lab_trace_start_pid(int pid, const char *calls, char *why, size_t whylen)
{
	struct lab_sync_trace *t;
	char pidstr[32];
	const char *dir = test_tmpdir("strace");
	int threads = count_threads(pid);

	if (threads <= 0) {
		snprintf(why, whylen, "no process %d to trace", pid);
		return NULL;
	}
	if (access("/usr/bin/strace", X_OK) != 0) {
		snprintf(why, whylen, "strace is not installed");
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	snprintf(t->out, sizeof(t->out), "%s/trace.out", dir);
	snprintf(t->err, sizeof(t->err), "%s/trace.err", dir);
	snprintf(pidstr, sizeof(pidstr), "%d", pid);
	t->strace_pid = fork();
	if (t->strace_pid == 0) {
		int fd = open(t->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		execl("/usr/bin/strace", "strace", "-f", "-ttt", "-e", calls, "-o",
		      t->out, "-p", pidstr, (char *)NULL);
		_exit(127);
	}
	if (t->strace_pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		free(t);
		return NULL;
	}
	t->cleanup_handle = test_cleanup_push(trace_kill, t);
	/* attached once strace said so for every thread (it stops each one before reporting) */
	for (int i = 0; i < 500; i++) {
		int st;
		if (count_attached(t->err) >= threads)
			return t;
		if (waitpid(t->strace_pid, &st, WNOHANG) == t->strace_pid) {
			char line[300] = "";
			FILE *f = fopen(t->err, "r");
			if (f) {
				if (fgets(line, sizeof(line), f))
					line[strcspn(line, "\n")] = 0;
				fclose(f);
			}
			snprintf(why, whylen, "strace cannot attach to pid %d: %s", pid, line[0] ? line : "it exited");
			t->strace_pid = 0;
			lab_sync_trace_stop(t);
			return NULL;
		}
		usleep(10000);
	}
	snprintf(why, whylen, "strace did not attach to every thread of pid %d within 5 s", pid);
	lab_sync_trace_stop(t);
	return NULL;
}

struct lab_sync_trace *lab_sync_trace_start(struct test_lab *lab, char *why, size_t whylen)
{
	char val[64];
	if (read_state_value(lab->dir, "LAB_PID", val, sizeof(val)) != 0 || atoi(val) <= 0) {
		snprintf(why, whylen, "no tgtd pid in %s/lab.env", lab->dir);
		return NULL;
	}
	return lab_sync_trace_start_pid(atoi(val), why, whylen);
}

/* The sync calls in the trace: the lines starting one ("... fdatasync(12) = 0", or
 * "... fdatasync(12 <unfinished ...>" when threads interleave; the "resumed" half is not counted). */
static long trace_lines(const struct lab_sync_trace *t, int *fds, int maxfds, int *nfds, long skip, double *first,
			double *last)
{
	static const char *const calls[] = { " fdatasync(", " fsync(", " sync_file_range(" };
	char line[1024];
	long n = 0;
	FILE *f = fopen(t->out, "r");

	if (nfds)
		*nfds = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = NULL;
		for (size_t k = 0; k < sizeof(calls) / sizeof(calls[0]) && !p; k++)
			p = strstr(line, calls[k]);
		if (!p)
			continue;
		if (n++ < skip)
			continue;
		{
			/* "PID SECONDS.MICROS fdatasync(..." (-f -ttt): the timestamp precedes the call */
			const char *b = p;
			double ts;
			while (b > line && b[-1] != ' ')
				b--;
			ts = strtod(b, NULL);
			if (first && *first == 0)
				*first = ts;
			if (last)
				*last = ts;
		}
		if (!nfds)
			continue;
		{
			int fd = atoi(strchr(p, '(') + 1), seen = 0;
			for (int i = 0; i < *nfds; i++)
				seen |= fds[i] == fd;
			if (!seen && *nfds < maxfds)
				fds[(*nfds)++] = fd;
		}
	}
	fclose(f);
	return n;
}

int lab_sync_trace_count(struct lab_sync_trace *t, int *nfds)
{
	int fds[256];
	return (int)(trace_lines(t, fds, 256, nfds, t->base, NULL, NULL) - t->base);
}

int lab_sync_trace_times(struct lab_sync_trace *t, double *first_s, double *last_s)
{
	*first_s = *last_s = 0;
	return (int)(trace_lines(t, NULL, 0, NULL, t->base, first_s, last_s) - t->base);
}

void lab_sync_trace_reset(struct lab_sync_trace *t)
{
	t->base = trace_lines(t, NULL, 0, NULL, 0, NULL, NULL);
}

void lab_sync_trace_stop(struct lab_sync_trace *t)
{
	if (t)
		test_cleanup_finish(t->cleanup_handle, trace_kill, t);
}
