/* The volume array as text, one entry per line, for the CLI, tests and humans: parsing with
 * line-numbered errors and formatting that parses back to the same array. */
#include "blkmap/vol_int.h"

#include "proto/util.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ---------------------------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v, mul = 1;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		mul = 1ull << 10;
		end++;
		break;
	case 'M':
	case 'm':
		mul = 1ull << 20;
		end++;
		break;
	case 'G':
	case 'g':
		mul = 1ull << 30;
		end++;
		break;
	case 'T':
	case 't':
		mul = 1ull << 40;
		end++;
		break;
	}
	if (*end)
		return -1;
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	uint64_t v;
	int neg = *s == '-';

	if (parse_u64(neg ? s + 1 : s, &v) < 0)
		return -1;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -1;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > INT64_MAX)
			return -1;
		*out = (int64_t)v;
	}
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* hex string to bytes; returns the byte count or -1 */
static int parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

static void fmt_size(struct proto_strbuf *b, uint64_t v)
{
	static const char suf[] = "KMGT";
	int k = -1;
	while (v >= 1024 && v % 1024 == 0 && k < 3) {
		v /= 1024;
		k++;
	}
	if (k >= 0)
		proto_strbuf_printf(b, "%" PRIu64 "%c", v, suf[k]);
	else
		proto_strbuf_printf(b, "%" PRIu64, v);
}

/* ---- parsing ---------------------------------------------------------------------------------- */

#define MAX_TOKENS (BLKMAP_MAX_MEMBERS + 4)

static int tokenize(char *line, char **tok, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (n == max)
			return -1;
		tok[n++] = t;
	}
	return n;
}

static int desig_type(const char *s)
{
	if (!strcmp(s, "naa"))
		return BLKMAP_DESIG_NAA;
	if (!strcmp(s, "t10"))
		return BLKMAP_DESIG_T10;
	if (!strcmp(s, "eui64"))
		return BLKMAP_DESIG_EUI64;
	if (!strcmp(s, "name"))
		return BLKMAP_DESIG_NAME;
	if (!strcmp(s, "vendor"))
		return BLKMAP_DESIG_VENDOR;
	return -1;
}

static int code_set(const char *s)
{
	if (!strcmp(s, "binary"))
		return BLKMAP_CODE_BINARY;
	if (!strcmp(s, "ascii"))
		return BLKMAP_CODE_ASCII;
	if (!strcmp(s, "utf8"))
		return BLKMAP_CODE_UTF8;
	return -1;
}

static int parse_line(struct blkmap_vol *vol, char **tok, int n, char *err, size_t errlen)
{
	const char *kind = tok[0];
	uint32_t members[BLKMAP_MAX_MEMBERS];
	uint64_t a, b;
	int rc;

	if (!strcmp(kind, "simple")) {
		struct blkmap_sig_comp comps[BLKMAP_MAX_SIG_COMP];
		uint8_t *bytes;
		unsigned nc = 0;
		char *save = NULL;
		if (n != 2) {
			snprintf(err, errlen, "simple takes one argument: OFFSET:HEX[,OFFSET:HEX...]");
			return -EINVAL;
		}
		bytes = malloc((size_t)BLKMAP_MAX_SIG_COMP * BLKMAP_MAX_SIG_BYTES);
		if (!bytes) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		rc = 0;
		for (char *c = strtok_r(tok[1], ",", &save); c && rc == 0; c = strtok_r(NULL, ",", &save)) {
			char *colon = strchr(c, ':');
			uint8_t *dst = bytes + (size_t)nc * BLKMAP_MAX_SIG_BYTES;
			int len;
			rc = -EINVAL;
			if (nc == BLKMAP_MAX_SIG_COMP) {
				snprintf(err, errlen, "more than %u signature components", BLKMAP_MAX_SIG_COMP);
				break;
			}
			if (!colon) {
				snprintf(err, errlen, "signature component '%s' is not OFFSET:HEX", c);
				break;
			}
			*colon = 0;
			if (parse_i64(c, &comps[nc].offset_bytes) < 0) {
				snprintf(err, errlen, "bad signature offset '%s'", c);
				break;
			}
			len = parse_hex(colon + 1, dst, BLKMAP_MAX_SIG_BYTES);
			if (len < 0) {
				snprintf(err, errlen, "bad signature contents '%s' (an even number of hex digits, at most %u bytes)",
					 colon + 1, BLKMAP_MAX_SIG_BYTES);
				break;
			}
			comps[nc].len = (uint32_t)len;
			comps[nc].bytes = dst;
			nc++;
			rc = 0;
		}
		if (rc == 0) {
			rc = blkmap_vol_add_simple(vol, comps, nc, NULL);
			if (rc < 0)
				snprintf(err, errlen, "%s", blkmap_vol_errstr(vol));
		}
		free(bytes);
		return rc;
	} else if (!strcmp(kind, "scsi")) {
		uint8_t d[BLKMAP_MAX_DESIG_BYTES];
		uint64_t key = 0;
		int t, cs, len;
		if (n != 4 && n != 5) {
			snprintf(err, errlen, "scsi takes TYPE CODESET HEX [key=KEY]");
			return -EINVAL;
		}
		t = desig_type(tok[1]);
		cs = code_set(tok[2]);
		len = parse_hex(tok[3], d, sizeof(d));
		if (t < 0 || cs < 0) {
			snprintf(err, errlen, "scsi: type is naa, t10, eui64, name or vendor; code set binary, ascii or utf8");
			return -EINVAL;
		}
		if (len < 0) {
			snprintf(err, errlen, "scsi: bad designator '%s' (hex, at most %u bytes)", tok[3], BLKMAP_MAX_DESIG_BYTES);
			return -EINVAL;
		}
		if (n == 5 && (strncmp(tok[4], "key=", 4) != 0 || parse_u64(tok[4] + 4, &key) < 0)) {
			snprintf(err, errlen, "scsi: '%s' is not key=NUMBER", tok[4]);
			return -EINVAL;
		}
		rc = blkmap_vol_add_scsi(vol, (enum blkmap_desig_type)t, (enum blkmap_code_set)cs, d, (size_t)len, key, NULL);
	} else if (!strcmp(kind, "slice")) {
		uint64_t m;
		if (n != 4 || parse_u64(tok[1], &a) < 0 || parse_u64(tok[2], &b) < 0 || parse_u64(tok[3], &m) < 0 ||
		    m > UINT32_MAX) {
			snprintf(err, errlen, "slice takes START LENGTH VOLUME");
			return -EINVAL;
		}
		rc = blkmap_vol_add_slice(vol, a, b, (uint32_t)m, NULL);
	} else if (!strcmp(kind, "concat") || !strcmp(kind, "stripe")) {
		int stripe = kind[1] == 't';
		int first = stripe ? 2 : 1;
		if (n < first + 1 || (stripe && parse_u64(tok[1], &a) < 0)) {
			snprintf(err, errlen, stripe ? "stripe takes UNIT VOLUME..." : "concat takes VOLUME...");
			return -EINVAL;
		}
		if (n - first > BLKMAP_MAX_MEMBERS) {
			snprintf(err, errlen, "%s has %d members; at most %u", kind, n - first, BLKMAP_MAX_MEMBERS);
			return -EINVAL;
		}
		for (int i = first; i < n; i++) {
			uint64_t m;
			if (parse_u64(tok[i], &m) < 0 || m > UINT32_MAX) {
				snprintf(err, errlen, "'%s' is not a volume index", tok[i]);
				return -EINVAL;
			}
			members[i - first] = (uint32_t)m;
		}
		rc = stripe ? blkmap_vol_add_stripe(vol, a, members, (unsigned)(n - first), NULL)
			    : blkmap_vol_add_concat(vol, members, (unsigned)(n - first), NULL);
	} else {
		snprintf(err, errlen, "unknown volume type '%s' (simple, scsi, slice, concat, stripe)", kind);
		return -EINVAL;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s", blkmap_vol_errstr(vol));
	return rc;
}

int blkmap_vol_parse_text(const char *text, struct blkmap_vol **out, char *err, size_t errlen)
{
	struct blkmap_vol *vol = NULL;
	char *copy = strdup(text ? text : ""), *line, *save = NULL, msg[600] = "";
	char dummy[8];
	int rc = 0, lineno = 0;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	*out = NULL;
	if (!copy || blkmap_vol_create(&vol) < 0) {
		free(copy);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* strtok_r would merge empty lines and shift the numbers: split by hand */
	line = copy;
	while (line) {
		char *nl = strchr(line, '\n'), *hash, *tok[MAX_TOKENS];
		int n;
		lineno++;
		if (nl)
			*nl = 0;
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		n = tokenize(line, tok, MAX_TOKENS);
		if (n < 0) {
			snprintf(err, errlen, "line %d: too many fields", lineno);
			rc = -EINVAL;
			break;
		}
		if (n > 0) {
			rc = parse_line(vol, tok, n, msg, sizeof(msg));
			if (rc < 0) {
				snprintf(err, errlen, "line %d: %s", lineno, msg);
				break;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	(void)save;
	free(copy);
	if (rc == 0 && vol->n == 0) {
		snprintf(err, errlen, "no volumes in the text");
		rc = -EINVAL;
	}
	if (rc < 0) {
		blkmap_vol_free(vol);
		return rc;
	}
	*out = vol;
	return 0;
}

static const char *desig_type_name(int t)
{
	static const char *const names[] = {
		[BLKMAP_DESIG_NAA] = "naa", [BLKMAP_DESIG_T10] = "t10", [BLKMAP_DESIG_EUI64] = "eui64",
		[BLKMAP_DESIG_NAME] = "name",
	};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "vendor";
}

static const char *code_set_name(int c)
{
	return c == BLKMAP_CODE_ASCII ? "ascii" : c == BLKMAP_CODE_UTF8 ? "utf8" : "binary";
}

int blkmap_vol_format_text(const struct blkmap_vol *vol, char **out)
{
	struct proto_strbuf b = { 0 };

	*out = NULL;
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		switch (e->type) {
		case BLKMAP_VOL_SIMPLE:
			proto_strbuf_printf(&b, "simple ");
			for (unsigned k = 0; k < e->nsig; k++) {
				proto_strbuf_printf(&b, "%s%" PRId64 ":", k ? "," : "", e->sig[k].offset_bytes);
				for (uint32_t j = 0; j < e->sig[k].len; j++)
					proto_strbuf_printf(&b, "%02x", e->sig[k].bytes[j]);
			}
			break;
		case BLKMAP_VOL_SCSI:
			proto_strbuf_printf(&b, "scsi %s %s ", desig_type_name(e->desig.type), code_set_name(e->desig.code_set));
			for (unsigned j = 0; j < e->desig.len; j++)
				proto_strbuf_printf(&b, "%02x", e->desig.bytes[j]);
			if (e->pr_key)
				proto_strbuf_printf(&b, " key=0x%" PRIx64, e->pr_key);
			break;
		case BLKMAP_VOL_SLICE:
			proto_strbuf_printf(&b, "slice ");
			fmt_size(&b, e->start);
			proto_strbuf_printf(&b, " ");
			fmt_size(&b, e->length);
			proto_strbuf_printf(&b, " %u", e->members[0]);
			break;
		case BLKMAP_VOL_CONCAT:
		case BLKMAP_VOL_STRIPE:
			proto_strbuf_printf(&b, "%s", blkmap_vol_type_name(e->type));
			if (e->type == BLKMAP_VOL_STRIPE) {
				proto_strbuf_printf(&b, " ");
				fmt_size(&b, e->unit);
			}
			for (unsigned k = 0; k < e->nmembers; k++)
				proto_strbuf_printf(&b, " %u", e->members[k]);
			break;
		}
		proto_strbuf_printf(&b, "\n");
	}
	if (b.failed || !b.s) {
		free(b.s);
		return -ENOMEM;
	}
	*out = b.s;
	return 0;
}
