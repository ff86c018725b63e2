/* The one small logger every part uses: levels error/warn/info/debug, to stderr or syslog.
 * Messages name the object they concern ("client 0x1234: lease expired"); no trailing newline. */
#ifndef PROTO_LOG_H
#define PROTO_LOG_H

#include <stddef.h>

enum proto_log_level {
	PROTO_LOG_ERROR = 0,
	PROTO_LOG_WARN = 1,
	PROTO_LOG_INFO = 2,
	PROTO_LOG_DEBUG = 3,
};

/* Messages above this level are dropped. Default PROTO_LOG_INFO. */
void proto_log_set_level(enum proto_log_level level);
enum proto_log_level proto_log_get_level(void);
/* Parse "error", "warn", "info", "debug"; returns 0 or -EINVAL. */
int proto_log_parse_level(const char *name, enum proto_log_level *out);
/* Send messages to syslog(3) with this identity instead of stderr. */
void proto_log_use_syslog(const char *ident);
/* Prefix stderr lines with this program name (default none). The string is borrowed. */
void proto_log_set_prog(const char *prog);
/* `PROG --version` (as the only argument): print the program name and the release, exit 0. */
void proto_version_exit(int argc, char **argv, const char *prog);

/* The wall-clock time now as stderr lines start with it: ISO 8601 local time with milliseconds and
 * the UTC offset, "2026-12-07T01:02:03.456+0000". */
#define PROTO_LOG_TIME_MAX 40
void proto_log_time(char *buf, size_t len);

/* One line: "TIME [PROG ]LEVEL: MESSAGE" on stderr (TIME as proto_log_time), or MESSAGE to syslog
 * at the matching priority. */
void proto_log(enum proto_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_ERROR(...) proto_log(PROTO_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) proto_log(PROTO_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) proto_log(PROTO_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...)                                              \
	do {                                                        \
		if (proto_log_get_level() >= PROTO_LOG_DEBUG)       \
			proto_log(PROTO_LOG_DEBUG, __VA_ARGS__);    \
	} while (0)

#endif
