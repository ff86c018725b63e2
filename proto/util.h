/* Small helpers every part and program shares: an error text into a caller's buffer, byte counts
 * for humans, the "64M"/"1GiB" size syntax of the command lines, JSON strings, growing arrays and texts.
 * One home for each, so every program prints and parses them the same way. */
#ifndef PROTO_UTIL_H
#define PROTO_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

/* Format into err (errlen bytes, either may be NULL/0: nothing is written) and return rc, so a
 * failure path reads `return proto_errf(err, errlen, -EINVAL, "bad %s", what);`. */
int proto_errf(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* How proto_fmt_bytes() writes the number of a unit above bytes. */
enum proto_fmt_bytes_style {
	PROTO_FMT_TENTHS,       /* one decimal always: "64.0 KiB", "1.5 GiB" (status and reports) */
	PROTO_FMT_SHORT,        /* at most 4 significant digits, no trailing zeros: "64 KiB", "1.5 GiB" */
};
/* Bytes for humans in binary units: "512 B" below 1 KiB, then KiB, MiB, GiB, TiB, PiB.
 * Writes at most len bytes into buf and returns buf. */
const char *proto_fmt_bytes(uint64_t bytes, enum proto_fmt_bytes_style style, char *buf, size_t len);

/* A size as the command lines take it: decimal, 0x hex or 0 octal, then an optional K, M, G or T
 * (binary, any case) that may be followed by "B", "i" or "iB" ("64M", "1GiB", "4KB", "0x1000").
 * No sign, no spaces, no overflow. Returns 0 with *out set, or -EINVAL. */
int proto_parse_size(const char *s, uint64_t *out);

/* s as a JSON string on o, quotes included: '"' and '\\' escaped, control bytes and DEL as \u00XX;
 * other bytes (UTF-8 included) pass through. */
void proto_json_str(FILE *o, const char *s);

/* Room for element n of the array *arrp (a pointer to any object pointer: &v->items) that has
 * *cap elements of elem bytes: nothing to do while n < *cap; else the array is reallocated to twice
 * *cap elements (first when *cap is 0; n + 1 if that is more) and *arrp and *cap are updated. Returns 0, or -ENOMEM when
 * out of memory or the size would overflow (*arrp and *cap are then left as they were, still the
 * caller's to free). */
int proto_grow(void *arrp, size_t n, size_t *cap, size_t elem, size_t first);

/* A growing text: s holds n bytes and a NUL (s is NULL until the first append), cap allocated.
 * Once an append failed (out of memory, a bad format), failed is set and later appends do nothing.
 * Start it as { 0 }; the caller frees s. */
struct proto_strbuf {
	char *s;
	size_t n, cap;
	int failed;
};
/* Append printf-formatted text to b. Returns 0, or -ENOMEM once b failed. */
int proto_strbuf_printf(struct proto_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int proto_strbuf_vprintf(struct proto_strbuf *b, const char *fmt, va_list ap);

#endif
