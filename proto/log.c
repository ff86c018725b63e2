/* Logger: one line per message, with a timestamp and level on stderr, or through syslog(3).
 * The timestamp is ISO 8601 wall-clock time with milliseconds and the UTC offset. */
#include "proto/log.h"
#include "version.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static enum proto_log_level cur_level = PROTO_LOG_INFO;
static int to_syslog;
static const char *prog_name;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void proto_log_set_level(enum proto_log_level level)
{
	cur_level = level;
}

enum proto_log_level proto_log_get_level(void)
{
	return cur_level;
}

int proto_log_parse_level(const char *name, enum proto_log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum proto_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void proto_log_use_syslog(const char *ident)
{
	openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	to_syslog = 1;
}

void proto_log_set_prog(const char *prog)
{
	prog_name = prog;
}

void proto_version_exit(int argc, char **argv, const char *prog)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("%s %s\n", prog, PNFS_VERSION);
		exit(0);
	}
}

void proto_log_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char day[24], zone[8];

	/* Wall-clock time (not the monotonic clock timers use), so that lines match other hosts'
	 * logs; the offset makes the local time unambiguous. */
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(buf, len, "%s.%03ld%s", day, ts.tv_nsec / 1000000, zone);
}

void proto_log(enum proto_log_level level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[2048];
	va_list ap;

	if (level > cur_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (to_syslog) {
		syslog(prio[level], "%s", msg);
		return;
	}
	{
		char when[PROTO_LOG_TIME_MAX];
		proto_log_time(when, sizeof(when));
		fprintf(stderr, "%s %s%s%s: %s\n", when, prog_name ? prog_name : "", prog_name ? " " : "",
			level_names[level], msg);
	}
}
