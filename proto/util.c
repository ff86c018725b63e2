/* Shared helpers for error texts, byte counts, sizes and JSON strings (see util.h).
 * Each is a pure function of its arguments, so any part and any program may use it. */
#include "proto/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int proto_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const char *proto_fmt_bytes(uint64_t bytes, enum proto_fmt_bytes_style style, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else if (style == PROTO_FMT_SHORT)
		snprintf(buf, len, "%.4g %s", v, unit[i]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[i]);
	return buf;
}

int proto_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		/* K, M, G, T: 2^10, 2^20, 2^30, 2^40 */
		static const char units[] = "KMGT";
		const char *u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
	}
	if (shift) {
		end++;
		if (*end == 'i')
			end += end[1] == 'B' ? 2 : 1;
		else if (*end == 'B')
			end++;
		if (v > (UINT64_MAX >> shift))
			return -EINVAL;
		v <<= shift;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

void proto_json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

int proto_grow(void *arrp, size_t n, size_t *cap, size_t elem, size_t first)
{
	size_t want;
	void *arr, *p;

	if (n < *cap)
		return 0;
	want = *cap ? *cap : first;
	if (*cap && want > SIZE_MAX / 2)
		return -ENOMEM;
	if (*cap)
		want *= 2;
	if (want <= n) {
		if (n == SIZE_MAX)
			return -ENOMEM;
		want = n + 1;
	}
	if (!elem || want > SIZE_MAX / elem)
		return -ENOMEM;
	memcpy(&arr, arrp, sizeof(arr));
	p = realloc(arr, want * elem);
	if (!p)
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = want;
	return 0;
}

int proto_strbuf_vprintf(struct proto_strbuf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	if (b->failed)
		return -ENOMEM;
	for (;;) {
		size_t room = b->cap - b->n;
		va_copy(aq, ap);
		n = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, aq);
		va_end(aq);
		if (n < 0)
			break;
		if ((size_t)n < room) {
			b->n += (size_t)n;
			return 0;
		}
		if (proto_grow(&b->s, b->n + (size_t)n, &b->cap, 1, 256 + (size_t)n))
			break;
	}
	b->failed = 1;
	return -ENOMEM;
}

int proto_strbuf_printf(struct proto_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = proto_strbuf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}
