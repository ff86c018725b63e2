/* The tree's command-line programs run the way a user runs them, for the CLI suites (tests/tools,
 * tests/client): one call starts `BIN/prog ARGS` through the shell with stderr joined to stdout,
 * another also checks the exit status and a piece of the text, printing the output when not. */
#ifndef TESTS_TOOLS_CLI_H
#define TESTS_TOOLS_CLI_H

/* Runs `env ENV 'BIN/prog' ARGS 2>&1` (env: words for env(1), NULL for none; ARGS from fmt, as
 * the shell splits them). *out (may be NULL) gets the output, caller frees. The exit status. */
int cli_run(char **out, const char *env, const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* cli_run, then asserts that it exited with status and that its output holds says (NULL: any
 * output). On a mismatch the command and its output go to stderr. 1 when both held, else 0. */
int cli_expect(int status, const char *says, const char *env, const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
