/* pnfs-mds configuration: defaults, one setter per key used by both the file parser and the
 * command line, and the file parser itself (`key = value`, `#` comments, line-numbered errors). */
#include "mds/config.h"

#include "proto/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct mds_config_key mds_config_keys[] = {
	{ "config", "FILE", "read settings from FILE (command-line flags override it)" },
	{ "pool", "DIR", "pool directory made by 'pnfs-admin format' (required)" },
	{ "listen", "ADDR", "address to listen on, IPv4 or IPv6 (default 0.0.0.0)" },
	{ "port", "N", "TCP port (default 2049)" },
	{ "foreground", NULL, "stay in the foreground, log to stderr (default: run as a daemon)" },
	{ "log-level", "LEVEL", "error, warn, info or debug (default info)" },
	{ "syslog", NULL, "log to syslog instead of stderr" },
	{ "pid-file", "FILE", "write the daemon's pid here (default /run/pnfs-mds.pid as a daemon)" },
	{ "log-file", "FILE", "as a daemon, append log lines to FILE (default: syslog)" },
	{ "lease-time", "SECONDS", "NFSv4.1 lease time (default 90, 1..3600)" },
	{ "grace-time", "SECONDS", "grace period after restart for reclaims (default: the lease time)" },
	{ "lun-timeout", "SECONDS",
	  "a LUN command (I/O, cache flush) not answered within this fails with an I/O error (default 30, "
	  "1..3600)" },
	{ "initiator", "IQN",
	  "the iSCSI initiator name the MDS logs in to the LUNs with; target ACLs must admit it (default "
	  "iqn.2024-01.org.pnfs-san:mds)" },
	{ "max-record", "BYTES", "largest RPC record accepted (default 2097152; K/M suffixes)" },
	{ "slots", "N", "most fore-channel slots per session (default 64, 1..1024)" },
	{ "max-connections", "N", "most client connections at once (default 1024)" },
	{ "login-timeout", "SECONDS",
	  "drop a connection that set up no session on it (CREATE_SESSION, SEQUENCE or BIND_CONN_TO_SESSION) "
	  "within this (default 30, 0..3600; 0: never)" },
	{ "scsi-layouts", "auto|yes|no",
	  "offer SCSI layouts (RFC 8154): register on every LUN and hold an EXCLUSIVE ACCESS - REGISTRANTS "
	  "ONLY reservation so that clients can be fenced. auto (default): only when every LUN accepts "
	  "persistent reservations with APTPL, which stock Linux clients set (tgt refuses it); yes: whatever "
	  "the LUNs accept; no: block-volume layouts only, LUNs not reserved" },
	{ "takeover", NULL,
	  "start even though another pnfs-mds serves the pool's LUNs from another pool directory or host (its "
	  "heartbeat on LUN 0 is fresh): preempt its key (PREEMPT AND ABORT), which makes it stop; for a "
	  "deliberate failover, given once on the command line" },
	{ "metrics-port", "N", "serve Prometheus metrics on http://127.0.0.1:N/metrics (default 0: off)" },
	{ "export", "'CLIENTS OPTIONS'",
	  "an export rule, repeatable: CLIENTS is *, ADDR or ADDR/BITS; OPTIONS rw|ro, root_squash|"
	  "no_root_squash|all_squash, anonuid=N, anongid=N (default: 127.0.0.0/8 and ::1 rw,no_root_squash)" },
	{ NULL, NULL, NULL },
};

void mds_config_defaults(struct mds_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen, sizeof(cfg->listen), "0.0.0.0");
	cfg->port = MDS_DEFAULT_PORT;
	cfg->log_level = PROTO_LOG_INFO;
	cfg->lease_time_s = MDS_DEFAULT_LEASE_S;
	cfg->grace_time_s = 0; /* 0: same as the lease time */
	cfg->lun_timeout_s = 30;
	snprintf(cfg->initiator, sizeof(cfg->initiator), "%s", MDS_DEFAULT_INITIATOR);
	cfg->max_record_bytes = MDS_DEFAULT_MAX_RECORD_BYTES;
	cfg->max_slots = MDS_DEFAULT_SLOTS;
	cfg->max_connections = 1024;
	cfg->login_timeout_s = MDS_DEFAULT_LOGIN_TIMEOUT_S;
	cfg->scsi_layouts = MDS_SCSI_AUTO;
	cfg->metrics_port = 0;
	/* The lab default: this host only, read-write, root not squashed. The first `export` key
	 * replaces these rules. */
	{
		static const char *const def[] = { "127.0.0.0/8 rw,no_root_squash", "::1 rw,no_root_squash" };
		struct mds_export_rule r;
		char why[64];
		for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
			if (mds_export_parse_rule(def[i], &r, why, sizeof(why)) == 0)
				mds_exports_add(&cfg->exports, &r);
	}
}

static int parse_bool(const char *v, int *out)
{
	if (!*v || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0")) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

/* An unsigned number in [lo, hi], with K/M/G suffixes when `sized`. */
static int parse_num(const char *v, uint64_t lo, uint64_t hi, int sized, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return -EINVAL;
	if (sized && *end) {
		unsigned shift = 0;
		switch (toupper((unsigned char)*end)) {
		case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		default: return -EINVAL;
		}
		end++;
		if (n > (UINT64_MAX >> shift))
			return -EINVAL;
		n <<= shift;
	}
	if (*end || n < lo || n > hi)
		return -EINVAL;
	*out = n;
	return 0;
}

static int set_path(char *dst, size_t len, const char *v)
{
	if (!*v || strlen(v) >= len)
		return -EINVAL;
	snprintf(dst, len, "%s", v);
	return 0;
}

int mds_config_set(struct mds_config *cfg, const char *key, const char *value, char *err,
		   size_t errlen)
{
	uint64_t n;
	int rc = 0;
	const char *expect = "";

	if (!strcmp(key, "pool")) {
		rc = set_path(cfg->pool, sizeof(cfg->pool), value);
		expect = "a directory path";
	} else if (!strcmp(key, "listen")) {
		unsigned char a[16];
		expect = "an IPv4 or IPv6 address";
		if (strlen(value) >= sizeof(cfg->listen) ||
		    (inet_pton(AF_INET, value, a) != 1 && inet_pton(AF_INET6, value, a) != 1))
			rc = -EINVAL;
		else
			snprintf(cfg->listen, sizeof(cfg->listen), "%s", value);
	} else if (!strcmp(key, "port")) {
		expect = "a port number 1..65535";
		rc = parse_num(value, 1, 65535, 0, &n);
		if (!rc)
			cfg->port = (int)n;
	} else if (!strcmp(key, "foreground")) {
		expect = "yes or no";
		rc = parse_bool(value, &cfg->foreground);
	} else if (!strcmp(key, "syslog")) {
		expect = "yes or no";
		rc = parse_bool(value, &cfg->log_syslog);
	} else if (!strcmp(key, "log-level")) {
		enum proto_log_level l;
		expect = "error, warn, info or debug";
		rc = proto_log_parse_level(value, &l);
		if (!rc)
			cfg->log_level = (int)l;
	} else if (!strcmp(key, "pid-file")) {
		expect = "a file path";
		rc = set_path(cfg->pid_file, sizeof(cfg->pid_file), value);
	} else if (!strcmp(key, "initiator")) {
		expect = "an iSCSI name (iqn.YYYY-MM.domain:name or eui.HEX, lower case, at most 223 bytes)";
		rc = -EINVAL;
		if (value[0] && strlen(value) < sizeof(cfg->initiator) &&
		    (!strncmp(value, "iqn.", 4) || !strncmp(value, "eui.", 4) || !strncmp(value, "naa.", 4)) &&
		    strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789.-:") == strlen(value)) {
			snprintf(cfg->initiator, sizeof(cfg->initiator), "%s", value);
			rc = 0;
		}
	} else if (!strcmp(key, "log-file")) {
		expect = "a file path";
		rc = set_path(cfg->log_file, sizeof(cfg->log_file), value);
	} else if (!strcmp(key, "lease-time")) {
		expect = "seconds, 1..3600";
		rc = parse_num(value, 1, 3600, 0, &n);
		if (!rc)
			cfg->lease_time_s = (uint32_t)n;
	} else if (!strcmp(key, "grace-time")) {
		expect = "seconds, 0..3600 (0: the lease time)";
		rc = parse_num(value, 0, 3600, 0, &n);
		if (!rc)
			cfg->grace_time_s = (uint32_t)n;
	} else if (!strcmp(key, "lun-timeout")) {
		expect = "seconds, 1..3600";
		rc = parse_num(value, 1, 3600, 0, &n);
		if (!rc)
			cfg->lun_timeout_s = (uint32_t)n;
	} else if (!strcmp(key, "max-record")) {
		expect = "bytes, 64K..64M";
		rc = parse_num(value, 64u << 10, 64u << 20, 1, &n);
		if (!rc)
			cfg->max_record_bytes = (uint32_t)n;
	} else if (!strcmp(key, "slots")) {
		expect = "1..1024";
		rc = parse_num(value, 1, 1024, 0, &n);
		if (!rc)
			cfg->max_slots = (uint32_t)n;
	} else if (!strcmp(key, "max-connections")) {
		expect = "1..65536";
		rc = parse_num(value, 1, 65536, 0, &n);
		if (!rc)
			cfg->max_connections = (uint32_t)n;
	} else if (!strcmp(key, "login-timeout")) {
		expect = "seconds, 0..3600 (0: never)";
		rc = parse_num(value, 0, 3600, 0, &n);
		if (!rc)
			cfg->login_timeout_s = (uint32_t)n;
	} else if (!strcmp(key, "takeover")) {
		expect = "yes or no";
		rc = parse_bool(value, &cfg->takeover);
	} else if (!strcmp(key, "scsi-layouts")) {
		expect = "auto, yes or no";
		if (!strcmp(value, "auto"))
			cfg->scsi_layouts = MDS_SCSI_AUTO;
		else
			rc = parse_bool(value, &cfg->scsi_layouts);
	} else if (!strcmp(key, "metrics-port")) {
		expect = "a port number 0..65535 (0: off)";
		rc = parse_num(value, 0, 65535, 0, &n);
		if (!rc)
			cfg->metrics_port = (int)n;
	} else if (!strcmp(key, "export")) {
		struct mds_export_rule r;
		char why[200];
		if (!cfg->exports_set) {
			cfg->exports.n = 0;
			cfg->exports_set = 1;
		}
		if (mds_export_parse_rule(value, &r, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "bad value '%s' for 'export': %s", value, why);
			return -EINVAL;
		}
		if (mds_exports_add(&cfg->exports, &r) != 0) {
			snprintf(err, errlen, "too many export rules (at most %d)", MDS_MAX_EXPORT_RULES);
			return -EINVAL;
		}
		return 0;
	} else {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -ENOENT;
	}
	if (rc)
		snprintf(err, errlen, "bad value '%s' for '%s': expected %s", value, key, expect);
	return rc ? -EINVAL : 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = 0;
	return s;
}

/* A value may be quoted with "..." (to keep spaces visible); the quotes are removed. */
static char *unquote(char *v)
{
	size_t n = strlen(v);
	if (n >= 2 && ((v[0] == '"' && v[n - 1] == '"') || (v[0] == '\'' && v[n - 1] == '\''))) {
		v[n - 1] = 0;
		return v + 1;
	}
	return v;
}

int mds_config_parse(struct mds_config *cfg, const char *text, const char *name, char *err,
		     size_t errlen)
{
	const char *p = text;
	int lineno = 0;

	while (*p) {
		char line[2048], why[400], *l, *eq, *key, *val;
		size_t n = strcspn(p, "\n");

		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "%s:%d: line too long", name, lineno);
			return -EINVAL;
		}
		memcpy(line, p, n);
		line[n] = 0;
		p += n;
		if (*p == '\n')
			p++;
		/* A '#' starts a comment unless it sits inside a quoted value. */
		for (char *c = line, q = 0; *c; c++) {
			if (q) {
				if (*c == q)
					q = 0;
			} else if (*c == '"' || *c == '\'') {
				q = *c;
			} else if (*c == '#') {
				*c = 0;
				break;
			}
		}
		l = trim(line);
		if (!*l)
			continue;
		eq = strchr(l, '=');
		if (!eq) {
			/* A bare known switch ("foreground") means yes. */
			key = l;
			val = "";
			int is_switch = 0;
			for (const struct mds_config_key *k = mds_config_keys; k->name; k++)
				if (!strcmp(k->name, key) && !k->arg)
					is_switch = 1;
			if (!is_switch) {
				snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", name, lineno, l);
				return -EINVAL;
			}
		} else {
			*eq = 0;
			key = trim(l);
			val = unquote(trim(eq + 1));
			if (!*key) {
				snprintf(err, errlen, "%s:%d: missing key before '='", name, lineno);
				return -EINVAL;
			}
		}
		if (!strcmp(key, "config")) {
			snprintf(err, errlen, "%s:%d: 'config' cannot be set inside a config file", name, lineno);
			return -EINVAL;
		}
		if (mds_config_set(cfg, key, val, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
			return -EINVAL;
		}
	}
	return 0;
}

int mds_config_load(struct mds_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nt;
			cap = cap ? cap * 2 : 8192;
			if (cap > (4u << 20)) {
				snprintf(err, errlen, "%s: file too large for a config file", path);
				rc = -EFBIG;
				goto out;
			}
			nt = realloc(text, cap);
			if (!nt) {
				rc = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			text = nt;
		}
		size_t got = fread(text + len, 1, 4096, f);
		if (got == 0)
			break;
		len += got;
	}
	if (ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	if (memchr(text ? text : "", 0, len)) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: not a text file (NUL byte)", path);
		goto out;
	}
	if (text)
		text[len] = 0;
	rc = mds_config_parse(cfg, text ? text : "", path, err, errlen);
out:
	free(text);
	fclose(f);
	return rc;
}

int mds_config_check(const struct mds_config *cfg, char *err, size_t errlen)
{
	if (!cfg->pool[0]) {
		snprintf(err, errlen, "no pool directory: set 'pool = DIR' in the config file or pass --pool DIR");
		return -EINVAL;
	}
	return 0;
}
