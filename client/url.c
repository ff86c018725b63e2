/* pnfs://host[:port]/path URLs, the form the pnfs command and tools take (like libnfs's nfs://).
 * IPv6 literals go in brackets; %XX escapes in the path are decoded. */
#include "client/pnfs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PNFS_SCHEME "pnfs://"

int pnfs_is_url(const char *s)
{
	return s && strncmp(s, PNFS_SCHEME, strlen(PNFS_SCHEME)) == 0;
}

/* The byte a %XX escape at s names (s after the '%'), or -1 when XX is not two hex digits. */
static int pct_byte(const char *s)
{
	char hex[3] = { 0 };

	if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]))
		return -1;
	hex[0] = s[0];
	hex[1] = s[1];
	return (int)strtol(hex, NULL, 16);
}

int pnfs_parse_url(const char *url, struct pnfs_url *out)
{
	const char *p, *host, *hend, *path;
	size_t hlen, o = 0;

	memset(out, 0, sizeof(*out));
	if (!pnfs_is_url(url))
		return -EINVAL;
	p = url + strlen(PNFS_SCHEME);
	if (*p == '[') {
		host = p + 1;
		hend = strchr(host, ']');
		if (!hend)
			return -EINVAL;
		p = hend + 1;
	} else {
		host = p;
		hend = host + strcspn(host, ":/");
		p = hend;
	}
	hlen = (size_t)(hend - host);
	if (hlen == 0 || hlen >= sizeof(out->host))
		return -EINVAL;
	for (size_t i = 0; i < hlen; i++) {
		int ch = (unsigned char)host[i];
		if (!isalnum(ch) && ch != '-' && ch != '.' && ch != '_' && !(ch == ':' && host[-1] == '['))
			return -EINVAL;
	}
	memcpy(out->host, host, hlen);
	out->port = PNFS_DEFAULT_PORT;
	if (*p == ':') {
		char *end;
		long port = strtol(p + 1, &end, 10);
		if (end == p + 1 || port < 1 || port > 65535 || (*end && *end != '/'))
			return -EINVAL;
		out->port = (int)port;
		p = end;
	} else if (*p && *p != '/') {
		return -EINVAL;
	}
	path = *p ? p : "/";
	for (; *path; path++) {
		int c = (unsigned char)*path;
		if (c == '%') {
			c = pct_byte(path + 1);
			if (c <= 0)
				return -EINVAL;
			path += 2;
		}
		if (o + 1 >= sizeof(out->path))
			return -ENAMETOOLONG;
		out->path[o++] = (char)c;
	}
	out->path[o] = 0;
	return 0;
}
