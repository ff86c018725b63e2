/* The pnfs command's defaults: /etc/pnfs/client.conf, then ~/.config/pnfs/client.conf, then PNFS_*
 * environment variables, each layer overriding the one before key by key (a repeatable key set in a
 * layer replaces that key's whole list from the layers below); command-line flags go on top. Files
 * use the MDS config's syntax, "key = value" lines, and errors name the file and the line. */
#include "client/pnfs.h"
#include "blkmap/blkmap.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYSTEM_CONF "/etc/pnfs/client.conf"

static const struct {
	const char *key, *env;
} keys[] = {
	{ "portal", "PNFS_PORTAL" },
	{ "device", "PNFS_DEVICE" },
	{ "initiator", "PNFS_INITIATOR" },
	{ "io-timeout", "PNFS_IO_TIMEOUT" },
	{ "mds", "PNFS_MDS" },
};

static void item_set(struct pnfs_conf_item *it, const char *value, const char *from)
{
	snprintf(it->value, sizeof(it->value), "%s", value);
	snprintf(it->from, sizeof(it->from), "%s", from);
}

static int bad(char *why, size_t len, const char *fmt, const char *value)
{
	snprintf(why, len, fmt, value);
	return -EINVAL;
}

/* "host[:port]" or "pnfs://host[:port][/]" into "host[:port]" (brackets kept around IPv6). */
static int mds_value(const char *v, char *out, size_t len)
{
	struct pnfs_url u;
	char url[600];
	size_t n;

	if (!strncmp(v, "pnfs://", 7))
		v += 7;
	n = strcspn(v, "/");
	if (n == 0 || n >= 300 || (v[n] && strcmp(v + n, "/")))
		return -1;
	snprintf(url, sizeof(url), "pnfs://%.*s/", (int)n, v);
	if (pnfs_parse_url(url, &u) < 0)
		return -1;
	snprintf(out, len, "%.*s", (int)n, v);
	return 0;
}

int pnfs_conf_set(struct pnfs_conf *c, const char *key, const char *value, int layer, const char *from, char *why,
		  size_t whylen)
{
	if (!strcmp(key, "portal") || !strcmp(key, "device")) {
		int portal = key[0] == 'p';
		struct pnfs_conf_item *list = portal ? c->portal : c->device;
		unsigned *n = portal ? &c->nportal : &c->ndevice, max = portal ? PNFS_CONF_MAX_PORTALS : PNFS_CONF_MAX_DEVICES;
		int *at = portal ? &c->portal_layer : &c->device_layer;

		if (portal && strncmp(value, "iscsi://", 8))
			return bad(why, whylen, "portal takes iscsi://[user%%pass@]host[:port], not '%s'", value);
		if (!*value || strlen(value) >= sizeof(list[0].value))
			return bad(why, whylen, "device takes an iSCSI LUN URL, block device or file, not '%s'", value);
		if (*at != layer) {
			*n = 0; /* a higher layer replaces the list */
			*at = layer;
		}
		if (*n == max) {
			snprintf(why, whylen, "more than %u %s values", max, key);
			return -EINVAL;
		}
		item_set(&list[(*n)++], value, from);
		return 0;
	}
	if (!strcmp(key, "initiator")) {
		if (!*value || strlen(value) >= 224 || strpbrk(value, " \t"))
			return bad(why, whylen, "initiator takes an iSCSI name (iqn.YYYY-MM.domain:name), not '%s'", value);
		item_set(&c->initiator, value, from);
		c->initiator_set = 1;
		return 0;
	}
	if (!strcmp(key, "io-timeout")) {
		char *end;
		double secs;
		errno = 0;
		secs = strtod(value, &end);
		if (errno || end == value || *end || !(secs >= 0.1 && secs <= 3600))
			return bad(why, whylen, "io-timeout takes seconds, 0.1 to 3600, not '%s'", value);
		c->io_timeout_ms = (unsigned)(secs * 1000 + 0.5);
		item_set(&c->io_timeout, value, from);
		return 0;
	}
	if (!strcmp(key, "mds")) {
		char hp[300];
		if (mds_value(value, hp, sizeof(hp)) < 0)
			return bad(why, whylen, "mds takes host[:port] (or pnfs://host[:port]/), not '%s'", value);
		item_set(&c->mds, hp, from);
		return 0;
	}
	snprintf(why, whylen, "unknown key '%s' (portal, device, initiator, io-timeout, mds)", key);
	return -ENOENT;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* One file. A missing one is no error, nor one behind a directory this user may not search (a HOME
 * that is not the user's, as under su or setpriv): *read says which (0, or -errno). A file that is
 * there but cannot be read is an error. */
static int load_file(struct pnfs_conf *c, const char *path, int layer, int *read, char *err, size_t errlen)
{
	FILE *f;
	struct stat sb;
	char line[2048], from[400], why[600];
	int lineno = 0, rc = 0;

	*read = 0;
	if (stat(path, &sb) != 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) {
			*read = errno == ENOENT ? 0 : -errno;
			return 0;
		}
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	*read = 1;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		char *l, *eq, *k, *v;
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			rc = -EINVAL;
			break;
		}
		l = trim(line);
		if (!*l || *l == '#')
			continue;
		eq = strchr(l, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", path, lineno, l);
			rc = -EINVAL;
			break;
		}
		*eq = 0;
		k = trim(l);
		v = trim(eq + 1);
		if (!*k) {
			snprintf(err, errlen, "%s:%d: missing key before '='", path, lineno);
			rc = -EINVAL;
			break;
		}
		snprintf(from, sizeof(from), "%s:%d", path, lineno);
		rc = pnfs_conf_set(c, k, v, layer, from, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
	}
	fclose(f);
	return rc;
}

/* A list variable: values separated by blanks or commas. */
static int load_env(struct pnfs_conf *c, const char *key, const char *env, char *err, size_t errlen)
{
	const char *v = getenv(env);
	char why[600], *copy, *tok, *save = NULL;
	int rc = 0, list = !strcmp(key, "portal") || !strcmp(key, "device");

	if (!v || !*v)
		return 0;
	if (!list) {
		rc = pnfs_conf_set(c, key, v, PNFS_CONF_ENV, env, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "%s: %s", env, why);
		return rc;
	}
	copy = strdup(v);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (tok = strtok_r(copy, " \t,", &save); tok && !rc; tok = strtok_r(NULL, " \t,", &save)) {
		rc = pnfs_conf_set(c, key, tok, PNFS_CONF_ENV, env, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "%s: %s", env, why);
	}
	free(copy);
	return rc;
}

int pnfs_conf_load(struct pnfs_conf *c, char *err, size_t errlen)
{
	const char *sys = getenv("PNFS_CLIENT_CONF"), *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	const char *from;
	char name[224];
	int rc;

	memset(c, 0, sizeof(*c));
	err[0] = 0;
	item_set(&c->io_timeout, "30", "default");
	item_set(&c->mds, "", "default: none");
	from = blkmap_default_initiator(name, sizeof(name));
	if (from) {
		item_set(&c->initiator, name, from);
	} else {
		/* say why open-iscsi's name is not used when its file is there (root-only, as Debian has it) */
		const char *env = getenv("PNFS_INITIATORNAME_FILE"), *path = env && *env ? env : "/etc/iscsi/initiatorname.iscsi";
		char why[400];
		if (access(path, F_OK) == 0 && access(path, R_OK) != 0)
			snprintf(why, sizeof(why), "default: made up from the host name (%s: %s)", path, strerror(errno));
		else
			snprintf(why, sizeof(why), "default: made up from the host name");
		item_set(&c->initiator, name, why);
	}
	snprintf(c->files[0], sizeof(c->files[0]), "%s", sys && *sys ? sys : SYSTEM_CONF);
	if (xdg && *xdg)
		snprintf(c->files[1], sizeof(c->files[1]), "%s/pnfs/client.conf", xdg);
	else if (home && *home)
		snprintf(c->files[1], sizeof(c->files[1]), "%s/.config/pnfs/client.conf", home);
	rc = load_file(c, c->files[0], PNFS_CONF_SYSTEM, &c->file_read[0], err, errlen);
	if (rc == 0 && c->files[1][0])
		rc = load_file(c, c->files[1], PNFS_CONF_USER, &c->file_read[1], err, errlen);
	for (size_t i = 0; rc == 0 && i < sizeof(keys) / sizeof(keys[0]); i++)
		rc = load_env(c, keys[i].key, keys[i].env, err, errlen);
	return rc;
}
