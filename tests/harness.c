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
#include <sys/socket.h>
#include <sys/stat.h>
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
	signal(sig, SIG_DFL);
	if (sig == SIGALRM)
		_exit(1);
	raise(sig);
}

int test_is_root(void)
{
	return geteuid() == 0;
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
				alarm(test_timeout_s);
				c->fn();
				alarm(0);
				return;
			}
		}
	}
	CU_FAIL_FATAL("harness: test case not found");
}

static int selected(const char *suite, const char *test, int argc, char **argv)
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
	printf("usage: pnfs-tests [--list] [PATTERN...]\n"
	       "  PATTERN: a suite name, a part prefix (proto), or suite/test, shell globs allowed.\n"
	       "  env: PNFS_BIN (bin dir), PNFS_TOP (source top), PNFS_TEST_TIMEOUT (s per test),\n"
	       "       PNFS_KEEP_TMP (keep temporary files).\n");
}

int main(int argc, char **argv)
{
	const struct test_suite **sorted;
	unsigned failures;
	int list = 0;
	const char *to = getenv("PNFS_TEST_TIMEOUT");

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		list = 1;
		argv++;
		argc--;
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

	atexit(on_exit_cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGALRM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (size_t i = 0; i < nsuites; i++) {
		const struct test_suite *s = sorted[i];
		CU_pSuite cs = NULL;
		for (const struct test_case *c = s->cases; c->name; c++) {
			if (!selected(s->name, c->name, argc, argv))
				continue;
			if (list) {
				printf("%s/%s\n", s->name, c->name);
				continue;
			}
			if (!cs) {
				cs = CU_add_suite(s->name, s->init, s->cleanup);
				if (!cs)
					return 1;
			}
			CU_add_test(cs, c->name, trampoline);
		}
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
