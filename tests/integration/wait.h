/* Waiting in the integration suites for something to happen instead of sleeping for a guess:
 * TW_WAIT_UNTIL polls a condition until it holds or a deadline passes. The test then asserts the
 * condition itself, so a deadline that passes is a failure that names what did not happen. */
#ifndef TESTS_INTEGRATION_WAIT_H
#define TESTS_INTEGRATION_WAIT_H

#include <stdint.h>

struct tw_deadline {
	uint64_t end_ms;        /* CLOCK_MONOTONIC */
	int step_ms;
};

struct tw_deadline tw_deadline(int timeout_ms, int step_ms);
/* Sleep one step unless the deadline has passed: 1 when there is time left to look again. */
int tw_step(struct tw_deadline *d);

/* Evaluate expr every step_ms until it is true or timeout_ms have passed (a statement). */
#define TW_WAIT_UNTIL(expr, timeout_ms, step_ms)                                  \
	do {                                                                       \
		struct tw_deadline tw_d_ = tw_deadline((timeout_ms), (step_ms));   \
		while (!(expr) && tw_step(&tw_d_))                                 \
			continue;                                                  \
	} while (0)

#endif
