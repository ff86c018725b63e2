/* The one test runner: gathers every TEST_SUITE from the linker section, runs them under CUnit's
 * basic interface and prints its summary. Each test runs under a watchdog; cleanups registered by
 * tests (labs, daemons) run at exit, on signals and on a timeout, so nothing is left behind. */
#include "tests/harness.h"

#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const struct test_suite *const __start_pnfs_test_suites[] __attribute__((weak));
extern const struct test_suite *const __stop_pnfs_test_suites[] __attribute__((weak));

#define MAX_CLEANUPS 1024
struct cleanup {
	void (*fn)(void *);
	void *arg;
	int active;
};
static struct cleanup cleanups[MAX_CLEANUPS];
static int ncleanups;
static volatile sig_atomic_t cleaning;

static char run_tmp[256];
static int skipped_now;
static int nskipped;
static char skip_log[8192];
static unsigned test_timeout_s = 300;
static FILE *result_f;	  /* -j: this worker's results */
static int unit_out_fd = -1; /* -j: the running unit's private output */
static int real_out_fd = -1, lock_fd = -1;

static void dump_unit_output(void);

void test_skip(const char *fmt, ...)
{
	char reason[256];
	va_list ap;
	const CU_pTest t = CU_get_current_test();
	const CU_pSuite s = CU_get_current_suite();

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (!skipped_now) {
		size_t used = strlen(skip_log);
		nskipped++;
		snprintf(skip_log + used, sizeof(skip_log) - used, "  skipped %s/%s: %s\n",
			 s ? s->pName : "?", t ? t->pName : "?", reason);
		if (result_f) {
			fprintf(result_f, "skip %s/%s: %s\n", s ? s->pName : "?", t ? t->pName : "?", reason);
			fflush(result_f);
		}
	}
	skipped_now = 1;
	printf("skipped (%s) ", reason);
	fflush(stdout);
}

int test_skipped(void)
{
	return skipped_now;
}

const char *test_bin_dir(void)
{
	const char *b = getenv("PNFS_BIN");
	return b && *b ? b : "build/bin";
}

const char *test_top_dir(void)
{
	const char *t = getenv("PNFS_TOP");
	return t && *t ? t : ".";
}

const char *test_bin(const char *prog)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];
	snprintf(p, sizeof(path[0]), "%s/%s", test_bin_dir(), prog);
	return p;
}

static void remove_run_tmp(void)
{
	char cmd[300];
	if (!run_tmp[0] || getenv("PNFS_KEEP_TMP"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run_tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "harness: could not remove %s\n", run_tmp);
	run_tmp[0] = 0;
}

const char *test_tmpdir(const char *tag)
{
	static char dirs[32][300];
	static int next;
	char *d;

	if (!run_tmp[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(run_tmp, sizeof(run_tmp), "%s/pnfs-test-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(run_tmp)) {
			perror("harness: mkdtemp");
			abort();
		}
	}
	d = dirs[next++ % 32];
	for (int i = 0;; i++) {
		snprintf(d, sizeof(dirs[0]), "%s/%s.%d", run_tmp, tag, i);
		if (mkdir(d, 0700) == 0)
			break;
		if (errno != EEXIST) {
			perror("harness: mkdir");
			abort();
		}
	}
	return d;
}

int test_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd, port = -1;
	static int last;

	/* Ask the kernel, but avoid handing out the same port twice in a row within a run. */
	for (int tries = 0; tries < 16 && port < 0; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return -1;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = 0;
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    getsockname(fd, (struct sockaddr *)&a, &alen) == 0) {
			int p = ntohs(a.sin_port);
			if (p != last)
				port = p;
		}
		close(fd);
	}
	last = port;
	return port;
}

int test_json_u64(const char *json, const char *key, uint64_t *v)
{
	char k[128];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = json ? strstr(json, k) : NULL;
	if (!p)
		return -1;
	*v = strtoull(p + strlen(k), NULL, 10);
	return 0;
}

void test_fill_random(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	unsigned char *p = buf;
	size_t i = 0;

	while (i < len) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		for (int k = 0; k < 8 && i < len; k++, i++)
			p[i] = (unsigned char)(x >> (8 * k));
	}
}

int test_run(char **out, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	FILE *f;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nb;
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				pclose(f);
				return -1;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, 4096, f);
		if (n == 0)
			break;
		len += n;
	}
	if (buf)
		buf[len] = 0;
	st = pclose(f);
	if (out)
		*out = buf ? buf : strdup("");
	else
		free(buf);
	if (st == -1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int test_cleanup_push(void (*fn)(void *), void *arg)
{
	if (ncleanups >= MAX_CLEANUPS) {
		fprintf(stderr, "harness: too many cleanups\n");
		abort();
	}
	cleanups[ncleanups] = (struct cleanup){ fn, arg, 1 };
	return ncleanups++;
}

void test_cleanup_cancel(int handle)
{
	if (handle >= 0 && handle < ncleanups)
		cleanups[handle].active = 0;
}

void test_cleanup_finish(int handle, void (*fn)(void *), void *obj)
{
	test_cleanup_cancel(handle);
	fn(obj);
	free(obj);
}

static void run_cleanups(void)
{
	if (cleaning)
		return;
	cleaning = 1;
	for (int i = ncleanups - 1; i >= 0; i--) {
		if (cleanups[i].active) {
			cleanups[i].active = 0;
			cleanups[i].fn(cleanups[i].arg);
		}
	}
	cleaning = 0;
}

static void on_exit_cleanup(void)
{
	run_cleanups();
	remove_run_tmp();
}

static void on_signal(int sig)
{
	if (sig == SIGALRM) {
		const CU_pTest t = CU_get_current_test();
		fprintf(stderr, "\nharness: test %s timed out after %u s; cleaning up\n",
			t ? t->pName : "?", test_timeout_s);
	} else {
		fprintf(stderr, "\nharness: signal %d; cleaning up\n", sig);
	}
	run_cleanups();
	remove_run_tmp();
	dump_unit_output();
	signal(sig, SIG_DFL);
	if (sig == SIGALRM)
		_exit(1);
	raise(sig);
}

void test_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

int test_pid_from_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid;
}

int test_is_root(void)
{
	return geteuid() == 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CUnit calls a plain void(void); this trampoline finds the real case by suite and test name and
 * runs it under the watchdog. */
static const struct test_suite *const *suites;
static size_t nsuites;

static void trampoline(void)
{
	const CU_pSuite cs = CU_get_current_suite();
	const CU_pTest ct = CU_get_current_test();

	skipped_now = 0;
	for (size_t i = 0; i < nsuites; i++) {
		if (strcmp(suites[i]->name, cs->pName) != 0)
			continue;
		for (const struct test_case *c = suites[i]->cases; c->name; c++) {
			if (strcmp(c->name, ct->pName) == 0) {
				double t0 = now_s(), dt;
				alarm(test_timeout_s);
				c->fn();
				alarm(0);
				dt = now_s() - t0;
				if (dt >= 2.0) {
					printf("(%.1f s) ", dt);
					fflush(stdout);
				}
				return;
			}
		}
	}
	CU_FAIL_FATAL("harness: test case not found");
}

int harness_selected(const char *suite, const char *test, int argc, char **argv)
{
	char full[512];
	if (argc <= 1)
		return 1;
	snprintf(full, sizeof(full), "%s/%s", suite, test);
	for (int i = 1; i < argc; i++) {
		if (fnmatch(argv[i], suite, 0) == 0 || fnmatch(argv[i], full, 0) == 0)
			return 1;
		/* "proto" selects every "proto/..." suite */
		size_t n = strlen(argv[i]);
		if (strncmp(suite, argv[i], n) == 0 && suite[n] == '/')
			return 1;
	}
	return 0;
}

static int suite_order(const void *a, const void *b)
{
	const struct test_suite *x = *(const struct test_suite *const *)a;
	const struct test_suite *y = *(const struct test_suite *const *)b;
	int xi = strncmp(x->name, "integration", 11) == 0;
	int yi = strncmp(y->name, "integration", 11) == 0;
	if (xi != yi)
		return xi - yi;
	return strcmp(x->name, y->name);
}

static void usage(void)
{
	printf("usage: pnfs-tests [--list] [-j N] [--oom] [PATTERN...]\n"
	       "  PATTERN: a suite name, a part prefix (proto), or suite/test, shell globs allowed.\n"
	       "  -j N: run suites in N worker processes (the kernel/ suites stay in one worker, one\n"
	       "        guest at a time); each suite's output is printed whole when it ends.\n"
	       "  --oom: run each case once per allocation it makes, that allocation failing, in a\n"
	       "        child process (a runner built by `make test-oom`): no crash, no sanitizer\n"
	       "        report, no leak when the case still passes. env PNFS_OOM_CASE_SECONDS (time a\n"
	       "        case may take: spaced allocations beyond it), PNFS_OOM_PERSISTENT=1 (every\n"
	       "        allocation after the Nth fails too).\n"
	       "  env: PNFS_BIN (bin dir), PNFS_TOP (source top), PNFS_TEST_TIMEOUT (s per test),\n"
	       "       PNFS_TEST_JOBS (default for -j), PNFS_KEEP_TMP (keep temporary files).\n");
}

/* Adds suite s's selected cases to CUnit's registry; returns how many, -1 on failure. */
static int register_suite(const struct test_suite *s, int argc, char **argv)
{
	CU_pSuite cs = NULL;
	int n = 0;

	for (const struct test_case *c = s->cases; c->name; c++) {
		if (!harness_selected(s->name, c->name, argc, argv))
			continue;
		if (!cs) {
			cs = CU_add_suite(s->name, s->init, s->cleanup);
			if (!cs)
				return -1;
		}
		if (!CU_add_test(cs, c->name, trampoline))
			return -1;
		n++;
	}
	return n;
}

/* One case alone, its suite's init and cleanup around it (the allocation-failure runs). */
static int one_result;

static void one_complete(const CU_pTest t, const CU_pSuite s, const CU_pFailureRecord first)
{
	(void)s;
	if (first) {
		one_result = 1;
		for (CU_pFailureRecord f = first; f; f = f->pNext)
			printf("%s: %s:%u  - %s\n", t->pName, f->strFileName ? f->strFileName : "?",
			       f->uiLineNumber, f->strCondition ? f->strCondition : "?");
	}
}

static void one_init_failed(const CU_pSuite s)
{
	printf("suite %s: initialisation or cleanup failed\n", s->pName);
	one_result = 1;
}

int harness_run_case(const struct test_suite *s, const struct test_case *c, unsigned timeout_s)
{
	CU_pSuite cs;

	one_result = 0;
	if (timeout_s)
		test_timeout_s = timeout_s;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	cs = CU_add_suite(s->name, s->init, s->cleanup);
	if (!cs || !CU_add_test(cs, c->name, trampoline))
		return 1;
	CU_set_test_complete_handler(one_complete);
	CU_set_suite_init_failure_handler(one_init_failed);
	CU_set_suite_cleanup_failure_handler(one_init_failed);
	CU_run_all_tests();
	CU_cleanup_registry();
	fflush(stdout);
	if (one_result == 0 && skipped_now)
		return 2;
	return one_result;
}

/* ---- Parallel runs (-j N) -------------------------------------------------------------------
 * A unit is a suite, or all kernel/ suites together (each boots a guest: two at once would only
 * fight over the two cores). The parent fills a pipe with unit numbers, longest-running kinds
 * first, and forks N workers that each read the next number, run that unit with their output
 * going to a private file, and print the file whole under a lock. Each worker appends its results
 * to a file of its own, line by line, so a worker killed by a watchdog still accounts for what it
 * finished, and the parent names the unit it died in. */

struct unit {
	const struct test_suite *s[64];
	int n;
	const char *name;
};

static struct unit *units;
static int nunits;
static double test_t0;

static void w_suite_start(const CU_pSuite s)
{
	printf("Suite: %s\n", s->pName);
}

static void w_test_start(const CU_pTest t, const CU_pSuite s)
{
	(void)s;
	printf("  Test: %s ...", t->pName);
	fflush(stdout);
	test_t0 = now_s();
}

static void w_test_complete(const CU_pTest t, const CU_pSuite s, const CU_pFailureRecord first)
{
	CU_pFailureRecord f = first;
	if (!f) {
		printf("passed\n");
		fprintf(result_f, "pass %s/%s %.1f\n", s->pName, t->pName, now_s() - test_t0);
	} else {
		printf("FAILED\n");
		fprintf(result_f, "fail %s/%s %.1f\n", s->pName, t->pName, now_s() - test_t0);
		for (int k = 1; f; f = f->pNext, k++) {
			printf("    %d. %s:%u  - %s\n", k, f->strFileName ? f->strFileName : "?", f->uiLineNumber,
			       f->strCondition ? f->strCondition : "?");
			fprintf(result_f, "why %s/%s %s:%u  - %s\n", s->pName, t->pName,
				f->strFileName ? f->strFileName : "?", f->uiLineNumber,
				f->strCondition ? f->strCondition : "?");
		}
	}
	fflush(result_f);
}

static void w_suite_init_failed(const CU_pSuite s)
{
	printf("Suite %s: initialisation FAILED\n", s->pName);
	fprintf(result_f, "fail %s/(init) 0\n", s->pName);
	fflush(result_f);
}

/* Prints the running unit's output whole, under the lock the workers share. */
static void dump_unit_output(void)
{
	char buf[65536];
	ssize_t n;

	if (unit_out_fd < 0)
		return;
	fflush(stdout);
	fflush(stderr);
	flock(lock_fd, LOCK_EX);
	lseek(unit_out_fd, 0, SEEK_SET);
	while ((n = read(unit_out_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(real_out_fd, buf + off, (size_t)(n - off));
			if (w <= 0)
				break;
			off += w;
		}
	}
	flock(lock_fd, LOCK_UN);
}

static void run_unit(const struct unit *u, int argc, char **argv)
{
	char path[] = "/tmp/pnfs-tests-out-XXXXXX";
	int fd = mkstemp(path), saved2 = dup(2);
	double t0 = now_s();

	if (fd < 0 || saved2 < 0) {
		perror("harness: unit output file");
		_exit(2);
	}
	unlink(path);
	fflush(stdout);
	fflush(stderr);
	dup2(fd, 1);
	dup2(fd, 2);
	unit_out_fd = fd;
	fprintf(result_f, "start %s\n", u->name);
	fflush(result_f);
	if (CU_initialize_registry() != CUE_SUCCESS)
		_exit(2);
	for (int i = 0; i < u->n; i++)
		if (register_suite(u->s[i], argc, argv) < 0)
			_exit(2);
	CU_set_suite_start_handler(w_suite_start);
	CU_set_test_start_handler(w_test_start);
	CU_set_test_complete_handler(w_test_complete);
	CU_set_suite_init_failure_handler(w_suite_init_failed);
	CU_set_suite_cleanup_failure_handler(w_suite_init_failed);
	CU_run_all_tests();
	CU_cleanup_registry();
	printf("(%s: %.1f s)\n", u->name, now_s() - t0);
	fprintf(result_f, "done %s %.1f\n", u->name, now_s() - t0);
	fflush(result_f);
	dump_unit_output();
	unit_out_fd = -1;
	dup2(real_out_fd, 1);
	dup2(saved2, 2);
	close(saved2);
	close(fd);
}

static void worker(int id, int queue_fd, const char *result_dir, int argc, char **argv)
{
	char path[400];
	int idx;

	snprintf(path, sizeof(path), "%s/w%d", result_dir, id);
	result_f = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/lock", result_dir);
	lock_fd = open(path, O_RDWR | O_CREAT, 0600);
	real_out_fd = dup(1);
	if (!result_f || lock_fd < 0 || real_out_fd < 0) {
		perror("harness: worker files");
		_exit(2);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGALRM, on_signal);
	while (read(queue_fd, &idx, sizeof(idx)) == (ssize_t)sizeof(idx)) {
		if (idx < 0 || idx >= nunits)
			break;
		run_unit(&units[idx], argc, argv);
	}
	fclose(result_f);
	exit(0); /* atexit: the worker's cleanups and temporary directory */
}

static pid_t *workers;
static int nworkers;

static void parent_on_signal(int sig)
{
	for (int i = 0; i < nworkers; i++)
		if (workers[i] > 0)
			kill(workers[i], sig);
	signal(sig, SIG_DFL);
}

static int unit_rank(const struct unit *u)
{
	if (strncmp(u->name, "kernel", 6) == 0)
		return 0;
	if (strncmp(u->name, "integration", 11) == 0)
		return 1;
	return 2;
}

static int unit_order(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;
	int rx = unit_rank(x), ry = unit_rank(y);
	return rx != ry ? rx - ry : strcmp(x->name, y->name);
}

/* Reads the workers' result files and prints the run's summary; returns the exit status. */
static int summarise(const char *result_dir, int jobs, double wall)
{
	int pass = 0, fail = 0, crashed = 0;
	char failed[16384] = "", why[16384] = "", slow[8][160] = { "" };
	double slow_s[8] = { 0 };

	for (int w = 0; w < jobs; w++) {
		char path[400], line[1200], cur[200] = "";
		int open_unit = 0;
		FILE *f;

		snprintf(path, sizeof(path), "%s/w%d", result_dir, w);
		f = fopen(path, "r");
		if (!f) {
			crashed++;
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			char name[1000];
			double sec;
			line[strcspn(line, "\n")] = 0;
			if (sscanf(line, "start %199s", cur) == 1) {
				open_unit = 1;
			} else if (sscanf(line, "done %999s %lf", name, &sec) == 2) {
				open_unit = 0;
				for (int k = 0; k < 8; k++) {
					if (sec > slow_s[k]) {
						memmove(slow_s + k + 1, slow_s + k, (7 - k) * sizeof(slow_s[0]));
						memmove(slow[k + 1], slow[k], (7 - k) * sizeof(slow[0]));
						slow_s[k] = sec;
						snprintf(slow[k], sizeof(slow[0]), "%s", name);
						break;
					}
				}
			} else if (sscanf(line, "pass %999s", name) == 1) {
				pass++;
			} else if (sscanf(line, "fail %999s", name) == 1) {
				fail++;
				snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed), "  %s\n", name);
			} else if (strncmp(line, "why ", 4) == 0) {
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "  %s\n", line + 4);
			} else if (strncmp(line, "skip ", 5) == 0) {
				snprintf(skip_log + strlen(skip_log), sizeof(skip_log) - strlen(skip_log), "  skipped %s\n",
					 line + 5);
				nskipped++;
			}
		}
		fclose(f);
		if (open_unit) {
			crashed++;
			snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed),
				 "  %s (its worker died; see its output above)\n", cur);
		}
	}
	printf("\nRun summary (%d workers, %.0f s): %d tests, %d passed, %d failed%s\n", jobs, wall, pass + fail,
	       pass, fail, crashed ? ", a worker died" : "");
	printf("slowest units:");
	for (int k = 0; k < 8 && slow[k][0]; k++)
		printf(" %s %.0f s%s", slow[k], slow_s[k], k < 7 && slow[k + 1][0] ? "," : "\n");
	if (nskipped)
		printf("\n%d test(s) skipped:\n%s", nskipped, skip_log);
	if (fail || crashed)
		printf("\nFAILED:\n%s%s", failed, why);
	printf("\n");
	return fail || crashed ? 1 : 0;
}

static int run_parallel(const struct test_suite **sorted, int jobs, int argc, char **argv)
{
	char result_dir[] = "/tmp/pnfs-tests-run-XXXXXX";
	int q[2], st = 0;
	double t0 = now_s();

	units = calloc(nsuites ? nsuites : 1, sizeof(*units));
	if (!units || !mkdtemp(result_dir) || pipe(q) != 0)
		return -1;
	for (size_t i = 0; i < nsuites; i++) {
		const struct test_suite *s = sorted[i];
		int any = 0, kernel = strncmp(s->name, "kernel/", 7) == 0;
		struct unit *u = NULL;
		for (const struct test_case *c = s->cases; c->name && !any; c++)
			any = harness_selected(s->name, c->name, argc, argv);
		if (!any)
			continue;
		for (int k = 0; kernel && k < nunits; k++)
			if (strcmp(units[k].name, "kernel") == 0)
				u = &units[k];
		if (!u) {
			u = &units[nunits++];
			u->name = kernel ? "kernel" : s->name;
		}
		if (u->n < (int)(sizeof(u->s) / sizeof(u->s[0])))
			u->s[u->n++] = s;
	}
	if (nunits < 2 || jobs < 2) {
		rmdir(result_dir);
		close(q[0]);
		close(q[1]);
		return -1; /* not worth it: the plain run */
	}
	qsort(units, (size_t)nunits, sizeof(*units), unit_order);
	for (int i = 0; i < nunits; i++)
		if (write(q[1], &i, sizeof(i)) != (ssize_t)sizeof(i))
			return -1;
	close(q[1]);
	if (jobs > nunits)
		jobs = nunits;
	workers = calloc((size_t)jobs, sizeof(*workers));
	if (!workers)
		return -1;
	printf("pnfs-tests: %d units in %d workers\n", nunits, jobs);
	fflush(stdout);
	for (int w = 0; w < jobs; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			worker(w, q[0], result_dir, argc, argv);
		}
		workers[w] = pid;
		nworkers = w + 1;
	}
	close(q[0]);
	signal(SIGINT, parent_on_signal);
	signal(SIGTERM, parent_on_signal);
	signal(SIGHUP, parent_on_signal);
	for (int w = 0; w < jobs; w++) {
		int ws;
		while (workers[w] > 0 && waitpid(workers[w], &ws, 0) < 0 && errno == EINTR)
			;
		workers[w] = 0;
	}
	st = summarise(result_dir, jobs, now_s() - t0);
	{
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", result_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "harness: could not remove %s\n", result_dir);
	}
	return st;
}

int main(int argc, char **argv)
{
	const struct test_suite **sorted;
	unsigned failures;
	int list = 0, jobs = 1, oom = 0;
	const char *to = getenv("PNFS_TEST_TIMEOUT"), *js = getenv("PNFS_TEST_JOBS");

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage();
		return 0;
	}
	if (js && atoi(js) > 0)
		jobs = atoi(js);
	for (;;) {
		if (argc > 1 && !strcmp(argv[1], "--list")) {
			list = 1;
			argv++;
			argc--;
		} else if (argc > 1 && !strcmp(argv[1], "--oom")) {
			oom = 1;
			argv++;
			argc--;
		} else if (argc > 2 && !strcmp(argv[1], "-j")) {
			jobs = atoi(argv[2]);
			if (jobs < 1 || jobs > 16) {
				fprintf(stderr, "pnfs-tests: -j takes 1 to 16 workers, not '%s'\n", argv[2]);
				return 2;
			}
			argv += 2;
			argc -= 2;
		} else {
			break;
		}
	}
	if (to && atoi(to) > 0)
		test_timeout_s = (unsigned)atoi(to);
	setvbuf(stdout, NULL, _IOLBF, 0);

	nsuites = __start_pnfs_test_suites ? (size_t)(__stop_pnfs_test_suites - __start_pnfs_test_suites) : 0;
	sorted = calloc(nsuites ? nsuites : 1, sizeof(*sorted));
	if (!sorted)
		return 1;
	memcpy(sorted, __start_pnfs_test_suites, nsuites * sizeof(*sorted));
	qsort(sorted, nsuites, sizeof(*sorted), suite_order);
	suites = sorted;

	signal(SIGPIPE, SIG_IGN);
	if (oom && !list) {
		int st;
		atexit(on_exit_cleanup);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		signal(SIGALRM, on_signal);
		st = oom_main(sorted, nsuites, argc, argv);
		free(sorted);
		return st;
	}
	if (!list && jobs > 1) {
		int st;
		/* The workers install the cleanup handlers; the parent only forwards signals. */
		atexit(on_exit_cleanup);
		signal(SIGALRM, on_signal);
		st = run_parallel(sorted, jobs, argc, argv);
		if (st >= 0) {
			free(sorted);
			return st;
		}
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
	} else {
		atexit(on_exit_cleanup);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		signal(SIGALRM, on_signal);
	}

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (size_t i = 0; i < nsuites; i++) {
		const struct test_suite *s = sorted[i];
		if (list) {
			for (const struct test_case *c = s->cases; c->name; c++)
				if (harness_selected(s->name, c->name, argc, argv))
					printf("%s/%s\n", s->name, c->name);
			continue;
		}
		if (register_suite(s, argc, argv) < 0)
			return 1;
	}
	if (list) {
		CU_cleanup_registry();
		return 0;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
	if (nskipped)
		printf("\n%d test(s) skipped:\n%s", nskipped, skip_log);
	printf("\n");
	CU_cleanup_registry();
	free(sorted);
	return failures ? 1 : 0;
}
