/* Allocation-failure runs (`make test-oom`, `pnfs-tests --oom`), in the manner of SQLite's fault
 * injection. In that build the libraries' calls to malloc, calloc, realloc, strdup, strndup,
 * asprintf, posix_memalign and aligned_alloc are renamed to the oom_* functions below (objcopy
 * --redefine-sym on the archives; the code itself compiles as always, and the tests' own
 * allocations are never failed). Each test case runs once to count the allocations it makes, then
 * once per allocation N, in a child process, with the Nth one failing. A run passes when the child
 * neither crashes nor trips AddressSanitizer, and leaks nothing when the test still passed. */
#include "tests/harness.h"

#include <CUnit/CUnit.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- The allocators the libraries call in this build ------------------------------------- */

static atomic_long oom_calls;	   /* allocations made so far in this process */
static atomic_long oom_fail_at;	   /* 0: none fails; N: the Nth fails */
static atomic_int oom_persistent;  /* 1: the Nth and every later one fail */
static atomic_long oom_failed;	   /* how many were failed */

static int oom_fail_now(void)
{
	long n = atomic_fetch_add(&oom_calls, 1) + 1, at = atomic_load(&oom_fail_at);

	if (at <= 0 || n < at || (n > at && !atomic_load(&oom_persistent)))
		return 0;
	atomic_fetch_add(&oom_failed, 1);
	errno = ENOMEM;
	return 1;
}

void *oom_malloc(size_t n);
void *oom_calloc(size_t k, size_t n);
void *oom_realloc(void *p, size_t n);
char *oom_strdup(const char *s);
char *oom_strndup(const char *s, size_t n);
int oom_asprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int oom_vasprintf(char **out, const char *fmt, va_list ap);
int oom_posix_memalign(void **out, size_t align, size_t n);
void *oom_aligned_alloc(size_t align, size_t n);

void *oom_malloc(size_t n)
{
	return oom_fail_now() ? NULL : malloc(n);
}

void *oom_calloc(size_t k, size_t n)
{
	return oom_fail_now() ? NULL : calloc(k, n);
}

void *oom_realloc(void *p, size_t n)
{
	return oom_fail_now() ? NULL : realloc(p, n);
}

char *oom_strdup(const char *s)
{
	return oom_fail_now() ? NULL : strdup(s);
}

char *oom_strndup(const char *s, size_t n)
{
	return oom_fail_now() ? NULL : strndup(s, n);
}

int oom_vasprintf(char **out, const char *fmt, va_list ap)
{
	if (oom_fail_now())
		return -1;
	return vasprintf(out, fmt, ap);
}

int oom_asprintf(char **out, const char *fmt, ...)
{
	int rc = -1;
	va_list ap;

	va_start(ap, fmt);
	if (!oom_fail_now())
		rc = vasprintf(out, fmt, ap);
	va_end(ap);
	return rc;
}

int oom_posix_memalign(void **out, size_t align, size_t n)
{
	return oom_fail_now() ? ENOMEM : posix_memalign(out, align, n);
}

void *oom_aligned_alloc(size_t align, size_t n)
{
	return oom_fail_now() ? NULL : aligned_alloc(align, n);
}

/* ---- The loop over test cases -------------------------------------------------------------- */


/* What a child reports back through shared memory (its exit status says the rest). */
struct oom_report {
	long calls, failed;
	int result;	     /* 0 passed, 1 failed, 2 skipped, -1 did not get that far */
	int failed_before;   /* assertions that failed (counted as they fail) */
};

/* Every CUnit assertion of the tests comes here first (the runner is linked with
 * --wrap=CU_assertImplementation), so that a child that crashes or hangs has already said whether
 * an assertion had failed before. */
static struct oom_report *child_rep;

CU_BOOL __real_CU_assertImplementation(CU_BOOL value, unsigned int line, const char *cond, const char *file,
				       const char *fn, CU_BOOL fatal);
CU_BOOL __wrap_CU_assertImplementation(CU_BOOL value, unsigned int line, const char *cond, const char *file,
				       const char *fn, CU_BOOL fatal);

CU_BOOL __wrap_CU_assertImplementation(CU_BOOL value, unsigned int line, const char *cond, const char *file,
				       const char *fn, CU_BOOL fatal)
{
	if (!value && child_rep)
		child_rep->failed_before++;
	return __real_CU_assertImplementation(value, line, cond, file, fn, fatal);
}

/* Exit statuses the sanitizers are told to use (ASAN_OPTIONS / LSAN_OPTIONS / UBSAN_OPTIONS set
 * by `make test-oom`; the runner sets them too when they are missing). */
#define OOM_EXIT_LEAK 23
#define OOM_EXIT_ASAN 86

enum oom_outcome {
	OOM_PASSED,
	OOM_FAILED_CLEANLY,
	OOM_SKIPPED,
	OOM_LEAK,
	OOM_LEAK_AFTER_FAIL,
	OOM_AFTER_FAIL, /* crashed or hung in a test that went on after a failed assertion */
	OOM_HANG,
	OOM_CRASH
};

struct oom_totals {
	long runs, bad, cases, cases_sampled, no_alloc;
	long by[OOM_CRASH + 1]; /* runs by outcome */
	char bad_log[16384];
};

static double oom_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs one case in a child with allocation fail_at failing (0: none). The child's output goes to
 * out_fd; *rep is what it reported. Returns the child's wait status, -1 if it could not fork. */
static int oom_child(const struct test_suite *s, const struct test_case *c, long fail_at, int persistent,
		     unsigned timeout_s, int out_fd, struct oom_report *rep)
{
	int ws;
	pid_t pid;

	rep->calls = rep->failed = 0;
	rep->result = -1;
	rep->failed_before = 0;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int r;
		dup2(out_fd, 1);
		dup2(out_fd, 2);
		child_rep = rep;
		atomic_store(&oom_calls, 0);
		atomic_store(&oom_failed, 0);
		atomic_store(&oom_persistent, persistent);
		atomic_store(&oom_fail_at, fail_at);
		r = harness_run_case(s, c, timeout_s);
		atomic_store(&oom_fail_at, 0); /* the cleanups at exit allocate normally */
		rep->calls = atomic_load(&oom_calls);
		rep->failed = atomic_load(&oom_failed);
		rep->result = r;
		exit(r == 1 ? 1 : 0); /* atexit: cleanups, then LeakSanitizer */
	}
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			return -1;
	return ws;
}

static enum oom_outcome oom_classify(int ws, const struct oom_report *rep)
{
	if (ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 1 && rep->result < 0)
		return rep->failed_before ? OOM_AFTER_FAIL : OOM_HANG; /* the watchdog's exit */
	if (ws < 0 || WIFSIGNALED(ws) || rep->result < 0)
		return rep->failed_before ? OOM_AFTER_FAIL : OOM_CRASH;
	if (WEXITSTATUS(ws) == OOM_EXIT_LEAK)
		return rep->result == 0 ? OOM_LEAK : OOM_LEAK_AFTER_FAIL;
	if (WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 1)
		return OOM_CRASH; /* a sanitizer's report after the case ended (in a cleanup) */
	if (rep->result == 2)
		return OOM_SKIPPED;
	return rep->result == 0 ? OOM_PASSED : OOM_FAILED_CLEANLY;
}

static const char *oom_outcome_name(enum oom_outcome o)
{
	switch (o) {
	case OOM_PASSED: return "passed";
	case OOM_FAILED_CLEANLY: return "failed cleanly";
	case OOM_SKIPPED: return "skipped";
	case OOM_LEAK: return "LEAK (the test passed, so its cleanup ran)";
	case OOM_LEAK_AFTER_FAIL: return "leak after a failed assertion";
	case OOM_AFTER_FAIL: return "crash or hang after a failed assertion";
	case OOM_HANG: return "HANG (the watchdog ended it)";
	case OOM_CRASH: return "CRASH or sanitizer report";
	}
	return "?";
}

/* Prints the tail of the child's output (the sanitizer's report is at its end). */
static void oom_print_tail(int fd, size_t most)
{
	char buf[8192];
	off_t end = lseek(fd, 0, SEEK_END), from = end > (off_t)most ? end - (off_t)most : 0;
	ssize_t n;

	lseek(fd, from, SEEK_SET);
	while (most > 0 && (n = read(fd, buf, sizeof(buf) < most ? sizeof(buf) : most)) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		most -= (size_t)n;
	}
	printf("\n");
}

static void oom_case(const struct test_suite *s, const struct test_case *c, struct oom_report *rep,
		     double budget_s, int persistent, struct oom_totals *t)
{
	char path[] = "/tmp/pnfs-tests-oom-XXXXXX";
	int fd = mkstemp(path), ws;
	double t0 = oom_now(), one;
	unsigned timeout_s;
	long total, stride, n, done = 0, bad = 0;

	if (fd < 0) {
		perror("pnfs-tests: oom output file");
		exit(2);
	}
	unlink(path);
	t->cases++;
	printf("  %s/%s ...", s->name, c->name);
	fflush(stdout);
	ws = oom_child(s, c, 0, 0, 0, fd, rep);
	one = oom_now() - t0;
	/* A run that takes ten times the plain one (and 10 s more) hangs: the watchdog ends it. */
	timeout_s = (unsigned)(10 * one) + 10;
	if (oom_classify(ws, rep) != OOM_PASSED) {
		enum oom_outcome o = oom_classify(ws, rep);
		if (o == OOM_SKIPPED) {
			printf(" skipped (as in a plain run)\n");
		} else {
			printf(" FAILED without any allocation failing: %s\n", oom_outcome_name(o));
			oom_print_tail(fd, 4000);
			t->bad++;
			snprintf(t->bad_log + strlen(t->bad_log), sizeof(t->bad_log) - strlen(t->bad_log),
				 "  %s/%s: fails with no allocation failing (%s)\n", s->name, c->name,
				 oom_outcome_name(o));
		}
		close(fd);
		return;
	}
	total = rep->calls;
	if (total == 0) {
		t->no_alloc++;
		printf(" no allocations\n");
		close(fd);
		return;
	}
	/* Every allocation if the budget allows; else the first few and evenly spaced ones after
	 * them, until the budget is spent. */
	stride = 1;
	if (one > 0 && (double)total * one > budget_s)
		stride = (long)((double)total * one / budget_s) + 1;
	for (n = 1; n <= total && (n == 1 || oom_now() - t0 < budget_s + one);
	     n = n < 8 ? n + 1 : n + stride) {
		enum oom_outcome o;

		if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
			perror("pnfs-tests: oom output file");
			exit(2);
		}
		ws = oom_child(s, c, n, persistent, timeout_s, fd, rep);
		o = oom_classify(ws, rep);
		done++;
		t->runs++;
		t->by[o]++;
		if (o == OOM_LEAK || o == OOM_HANG || o == OOM_CRASH) {
			bad++;
			t->bad++;
			printf("\n    allocation %ld of %ld failing: %s (%s %d)\n", n, total, oom_outcome_name(o),
			       WIFSIGNALED(ws) ? "signal" : "exit status",
			       WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
			oom_print_tail(fd, 6000);
			snprintf(t->bad_log + strlen(t->bad_log), sizeof(t->bad_log) - strlen(t->bad_log),
				 "  %s/%s with allocation %ld of %ld failing: %s\n", s->name, c->name, n, total,
				 oom_outcome_name(o));
		}
		if (bad >= 3)
			break; /* the first reports say enough */
	}
	if (stride > 1)
		t->cases_sampled++;
	printf(" %ld allocations, %ld runs%s, %s (%.1f s)\n", total, done, stride > 1 ? " (sampled)" : "",
	       bad ? "BAD" : "ok", oom_now() - t0);
	close(fd);
}

int oom_main(const struct test_suite *const *suites, size_t nsuites, int argc, char **argv)
{
	const char *b = getenv("PNFS_OOM_CASE_SECONDS"), *p = getenv("PNFS_OOM_PERSISTENT");
	double budget_s = b && atof(b) > 0 ? atof(b) : 4.0, t0 = oom_now();
	int persistent = p && atoi(p) > 0;
	struct oom_totals *t = calloc(1, sizeof(*t));
	struct oom_report *rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (!t || rep == MAP_FAILED) {
		perror("pnfs-tests: oom");
		return 2;
	}
	setenv("ASAN_OPTIONS", "detect_leaks=1:exitcode=86:abort_on_error=0", 0);
	setenv("LSAN_OPTIONS", "exitcode=23", 0);
	setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=86", 0);
	printf("pnfs-tests --oom: each allocation failing in turn%s, %.0f s at most a case\n",
	       persistent ? " (and every one after it)" : "", budget_s);
	for (size_t i = 0; i < nsuites; i++) {
		const struct test_suite *s = suites[i];
		int announced = 0;
		for (const struct test_case *c = s->cases; c->name; c++) {
			if (!harness_selected(s->name, c->name, argc, argv))
				continue;
			if (!announced++)
				printf("Suite: %s\n", s->name);
			oom_case(s, c, rep, budget_s, persistent, t);
		}
	}
	printf("\nAllocation-failure summary (%.0f s): %ld cases (%ld sampled, %ld without allocations), %ld runs: "
	       "%ld passed, %ld failed cleanly, %ld bad; not counted: %ld leaks and %ld crashes or hangs in a test "
	       "that went on after a failed assertion\n",
	       oom_now() - t0, t->cases, t->cases_sampled, t->no_alloc, t->runs,
	       t->by[OOM_PASSED] + t->by[OOM_SKIPPED], t->by[OOM_FAILED_CLEANLY], t->bad, t->by[OOM_LEAK_AFTER_FAIL],
	       t->by[OOM_AFTER_FAIL]);
	if (t->runs == 0)
		printf("no allocation was failed: is this runner built by `make test-oom`?\n");
	if (t->bad)
		printf("\nBAD:\n%s", t->bad_log);
	{
		int st = t->bad ? 1 : (t->runs == 0 ? 2 : 0);
		free(t);
		munmap(rep, sizeof(*rep));
		return st;
	}
}
