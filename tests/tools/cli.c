/* Running the tree's programs for the CLI suites (tests/tools/cli.h): one shell command each,
 * through the harness's test_run, so output capture and the exit status work the same in every
 * suite. */
#include "tests/tools/cli.h"

#include "tests/harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cli_vrun(char **out, const char *env, const char *prog, const char *fmt, va_list ap)
{
	char *args = NULL;
	int rc;

	if (vasprintf(&args, fmt, ap) < 0)
		return -1;
	rc = test_run(out, "%s%s '%s' %s 2>&1", env ? "env " : "", env ? env : "", test_bin(prog), args);
	free(args);
	return rc;
}

int cli_run(char **out, const char *env, const char *prog, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = cli_vrun(out, env, prog, fmt, ap);
	va_end(ap);
	return rc;
}

int cli_expect(int status, const char *says, const char *env, const char *prog, const char *fmt, ...)
{
	char *out = NULL;
	va_list ap;
	int rc, ok;

	va_start(ap, fmt);
	rc = cli_vrun(&out, env, prog, fmt, ap);
	va_end(ap);
	CU_ASSERT_EQUAL(rc, status);
	CU_ASSERT_PTR_NOT_NULL(out);
	ok = rc == status && out && (!says || strstr(out, says));
	if (says)
		CU_ASSERT(out && strstr(out, says));
	if (!ok) {
		va_start(ap, fmt);
		fprintf(stderr, "\n  %s (", prog);
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, "): exit %d, wanted %d%s%s; output:\n%s\n", rc, status, says ? " and " : "",
			says ? says : "", out ? out : "");
		va_end(ap);
	}
	free(out);
	return ok;
}
