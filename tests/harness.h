/* Test harness: CUnit suites that register themselves, one runner for every part.
 * A suite is declared with TEST_SUITE() in any tests/<part>/ source file; the linker gathers the
 * declarations into one section, so adding a test file never means editing a central list. */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct test_case {
	const char *name;
	void (*fn)(void);
};

struct test_suite {
	const char *name;
	int (*init)(void);     /* may be NULL; non-zero fails the whole suite */
	int (*cleanup)(void);  /* may be NULL */
	const struct test_case *cases; /* terminated by { NULL, NULL } */
};

#define TEST_SUITE_SECTION "pnfs_test_suites"

/* TEST_SUITE(ident, "name", init, cleanup, { "case", fn }, ...) */
#define TEST_SUITE(ident, sname, sinit, sclean, ...)                                   \
	static const struct test_case ident##_cases[] = { __VA_ARGS__, { NULL, NULL } }; \
	static const struct test_suite ident##_suite = { sname, sinit, sclean,           \
							 ident##_cases };                 \
	static const struct test_suite *const ident##_ptr                                \
		__attribute__((used, section(TEST_SUITE_SECTION), aligned(sizeof(void *)))) = \
			&ident##_suite

/* Skip the current test with a one-line reason (counted and printed by the runner). */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether test_skip() was called in the running test (for early return helpers). */
int test_skipped(void);
#define TEST_SKIP_IF(cond, ...)          \
	do {                             \
		if (cond) {              \
			test_skip(__VA_ARGS__); \
			return;          \
		}                        \
	} while (0)

/* In a function taking (..., fmt, ...): its arguments after fmt, formatted into the array buf. */
#define TEST_VFORMAT(buf, fmt)                                \
	do {                                                   \
		va_list test_ap_;                              \
		va_start(test_ap_, fmt);                       \
		vsnprintf((buf), sizeof(buf), (fmt), test_ap_); \
		va_end(test_ap_);                              \
	} while (0)

/* Paths: the build's bin directory and the source top, from PNFS_BIN / PNFS_TOP. */
const char *test_bin_dir(void);
const char *test_top_dir(void);
/* A program in the build's bin directory; returns a static buffer. */
const char *test_bin(const char *prog);

/* A fresh temporary directory under $TMPDIR, removed by the runner at exit unless
 * PNFS_KEEP_TMP is set. Returns a string owned by the harness. */
const char *test_tmpdir(const char *tag);

/* A TCP port on 127.0.0.1 that was free a moment ago (bound, then released). */
int test_free_port(void);

/* Fill a buffer with a reproducible pseudo-random pattern from a seed. */
void test_fill_random(void *buf, size_t len, uint64_t seed);

/* The number under "key" in JSON text (the pnfs tools' --json output): 0 and *v, or -1 when the key
 * is absent (or json is NULL). test_json_num: the number, or UINT64_MAX when absent. */
int test_json_u64(const char *json, const char *key, uint64_t *v);
static inline uint64_t test_json_num(const char *json, const char *key)
{
	uint64_t v;
	return test_json_u64(json, key, &v) == 0 ? v : UINT64_MAX;
}

/* Run a shell command line; returns its exit status (or -1) and, when out is not NULL,
 * its standard output (caller frees). stderr passes through. */
int test_run(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Register a cleanup to run at exit and on SIGINT/SIGTERM/SIGHUP, once. Returns a handle
 * for test_cleanup_cancel(). The callback must be async-signal tolerant enough to fork/exec. */
int test_cleanup_push(void (*fn)(void *), void *arg);
void test_cleanup_cancel(int handle);
/* The end of an object with a registered cleanup: cancel it (handle), run fn(obj) now, free obj. */
void test_cleanup_finish(int handle, void (*fn)(void *), void *obj);

/* Write text to the file path (created or truncated). Aborts the test when it cannot be opened. */
void test_write_text(const char *path, const char *text);

/* The process id written in the file path (a daemon's pid file), or 0 when there is none. */
int test_pid_from_file(const char *path);

/* Whether the runner is root (network namespaces, loop devices). */
int test_is_root(void);

/* The runner's own pieces (tests/harness.c, tests/oom.c). */
int harness_selected(const char *suite, const char *test, int argc, char **argv);
/* Runs case c of suite s alone (its suite's init and cleanup around it) under a watchdog of
 * timeout_s (0: the runner's): 0 passed, 1 failed, 2 skipped. */
int harness_run_case(const struct test_suite *s, const struct test_case *c, unsigned timeout_s);
/* `pnfs-tests --oom`: the allocation-failure loop over the selected cases; the exit status. */
int oom_main(const struct test_suite *const *suites, size_t nsuites, int argc, char **argv);

#endif
