/* The deadline behind TW_WAIT_UNTIL (tests/integration/wait.h): monotonic milliseconds, and a nap
 * of one step between looks. */
#include "tests/integration/wait.h"

#include <time.h>

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct tw_deadline tw_deadline(int timeout_ms, int step_ms)
{
	struct tw_deadline d = { now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0), step_ms > 0 ? step_ms : 1 };

	return d;
}

int tw_step(struct tw_deadline *d)
{
	struct timespec ts = { d->step_ms / 1000, (long)(d->step_ms % 1000) * 1000000L };

	if (now_ms() >= d->end_ms)
		return 0;
	nanosleep(&ts, NULL);
	return 1;
}
