/* Export rules: parse `CLIENTS OPTIONS`, match a client address by network prefix, squash
 * identities. Matching is a linear walk over a short list: first match wins, like a firewall. */
#include "mds/export.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_clients(const char *spec, struct mds_export_rule *r, char *err, size_t errlen)
{
	char addr[128];
	const char *slash = strchr(spec, '/');
	size_t alen = slash ? (size_t)(slash - spec) : strlen(spec);
	unsigned maxbits;

	if (strcmp(spec, "*") == 0) {
		r->family = 0;
		return 0;
	}
	if (alen == 0 || alen >= sizeof(addr)) {
		snprintf(err, errlen, "bad client network '%s'", spec);
		return -EINVAL;
	}
	memcpy(addr, spec, alen);
	addr[alen] = 0;
	if (inet_pton(AF_INET, addr, r->addr) == 1) {
		r->family = AF_INET;
		maxbits = 32;
	} else if (inet_pton(AF_INET6, addr, r->addr) == 1) {
		r->family = AF_INET6;
		maxbits = 128;
	} else {
		snprintf(err, errlen, "bad client address '%s' (expected *, an IP address or ADDR/BITS)", addr);
		return -EINVAL;
	}
	r->prefix_bits = maxbits;
	if (slash) {
		char *end;
		unsigned long bits = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || bits > maxbits) {
			snprintf(err, errlen, "bad prefix length '%s' in '%s' (0..%u)", slash + 1, spec, maxbits);
			return -EINVAL;
		}
		r->prefix_bits = (unsigned)bits;
	}
	return 0;
}

static int parse_id(const char *v, uint32_t *out)
{
	char *end;
	unsigned long n;

	if (!*v)
		return -EINVAL;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > UINT32_MAX || v[0] == '-')
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

static int parse_options(const char *opts, struct mds_export_rule *r, char *err, size_t errlen)
{
	char buf[160], *save = NULL;

	if (strlen(opts) >= sizeof(buf)) {
		snprintf(err, errlen, "export options too long");
		return -EINVAL;
	}
	strcpy(buf, opts);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "rw"))
			r->rw = 1;
		else if (!strcmp(o, "ro"))
			r->rw = 0;
		else if (!strcmp(o, "root_squash"))
			r->squash = MDS_SQUASH_ROOT;
		else if (!strcmp(o, "no_root_squash"))
			r->squash = MDS_SQUASH_NONE;
		else if (!strcmp(o, "all_squash"))
			r->squash = MDS_SQUASH_ALL;
		else if (!strncmp(o, "anonuid=", 8)) {
			if (parse_id(o + 8, &r->anon_uid)) {
				snprintf(err, errlen, "bad anonuid '%s'", o + 8);
				return -EINVAL;
			}
		} else if (!strncmp(o, "anongid=", 8)) {
			if (parse_id(o + 8, &r->anon_gid)) {
				snprintf(err, errlen, "bad anongid '%s'", o + 8);
				return -EINVAL;
			}
		} else {
			snprintf(err, errlen,
				 "unknown export option '%s' (rw, ro, root_squash, no_root_squash, all_squash, anonuid=N, anongid=N)",
				 o);
			return -EINVAL;
		}
	}
	return 0;
}

/* The n bytes at src as a string in dst (size bytes), or -EINVAL with "<what> too long". */
static int copy_word(char *dst, size_t size, const char *src, size_t n, const char *what, char *err, size_t errlen)
{
	if (n >= size) {
		snprintf(err, errlen, "%s too long", what);
		return -EINVAL;
	}
	memcpy(dst, src, n);
	dst[n] = 0;
	return 0;
}

int mds_export_parse_rule(const char *text, struct mds_export_rule *out, char *err, size_t errlen)
{
	char clients[160];
	const char *p = text, *opts;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	out->squash = MDS_SQUASH_ROOT;
	out->anon_uid = MDS_NOBODY_ID;
	out->anon_gid = MDS_NOBODY_ID;
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, " \t");
	if (n == 0) {
		snprintf(err, errlen, "empty export rule (expected CLIENTS [OPTIONS])");
		return -EINVAL;
	}
	rc = copy_word(clients, sizeof(clients), p, n, "client network", err, errlen);
	if (!rc)
		rc = parse_clients(clients, out, err, errlen);
	if (rc)
		return rc;
	opts = p + n;
	while (*opts == ' ' || *opts == '\t')
		opts++;
	if (*opts) {
		size_t olen = strcspn(opts, " \t");
		const char *rest = opts + olen;
		while (*rest == ' ' || *rest == '\t')
			rest++;
		if (*rest) {
			snprintf(err, errlen, "unexpected '%s' after export options", rest);
			return -EINVAL;
		}
		char o[160];
		rc = copy_word(o, sizeof(o), opts, olen, "export options", err, errlen);
		if (!rc)
			rc = parse_options(o, out, err, errlen);
		if (rc)
			return rc;
	}
	snprintf(out->text, sizeof(out->text), "%s", p);
	return 0;
}

int mds_exports_add(struct mds_exports *ex, const struct mds_export_rule *rule)
{
	if (ex->n >= MDS_MAX_EXPORT_RULES)
		return -ENOSPC;
	ex->rules[ex->n++] = *rule;
	return 0;
}

static int prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned full = bits / 8, rem = bits % 8;

	if (memcmp(a, net, full) != 0)
		return 0;
	if (rem) {
		uint8_t mask = (uint8_t)(0xff << (8 - rem));
		if ((a[full] & mask) != (net[full] & mask))
			return 0;
	}
	return 1;
}

const struct mds_export_rule *mds_export_match(const struct mds_exports *ex, const struct sockaddr *sa)
{
	uint8_t v4[4], v6[16];
	int have4 = 0, have6 = 0;

	if (sa->sa_family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		have4 = 1;
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		memcpy(v6, a, 16);
		have6 = 1;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(v4, v6 + 12, 4);
			have4 = 1;
		}
	}
	for (int i = 0; i < ex->n; i++) {
		const struct mds_export_rule *r = &ex->rules[i];
		if (r->family == 0)
			return r;
		if (r->family == AF_INET && have4 && prefix_match(v4, r->addr, r->prefix_bits))
			return r;
		if (r->family == AF_INET6 && have6 && prefix_match(v6, r->addr, r->prefix_bits))
			return r;
	}
	return NULL;
}

void mds_export_squash(const struct mds_export_rule *rule, uint32_t *uid, uint32_t *gid,
		       uint32_t *gids, unsigned ngids)
{
	if (rule->squash == MDS_SQUASH_NONE)
		return;
	if (rule->squash == MDS_SQUASH_ALL || *uid == 0)
		*uid = rule->anon_uid;
	if (rule->squash == MDS_SQUASH_ALL || *gid == 0)
		*gid = rule->anon_gid;
	for (unsigned i = 0; i < ngids; i++)
		if (rule->squash == MDS_SQUASH_ALL || gids[i] == 0)
			gids[i] = rule->anon_gid;
}
