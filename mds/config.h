/* pnfs-mds configuration: one set of keys shared by the config file (`key = value` lines, `#`
 * comments) and the command line (`--key value`), so every flag mirrors a key. Errors name the
 * file, the line, the key and the bad value. Export rules live here too (see mds/export.h). */
#ifndef MDS_CONFIG_H
#define MDS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "mds/export.h"

#define MDS_DEFAULT_INITIATOR "iqn.2024-01.org.pnfs-san:mds"
#define MDS_DEFAULT_PORT 2049
#define MDS_DEFAULT_LEASE_S 90
#define MDS_DEFAULT_MAX_RECORD_BYTES (2u << 20)
#define MDS_DEFAULT_SLOTS 64
#define MDS_DEFAULT_LOGIN_TIMEOUT_S 30
#define MDS_CONFIG_PATH_MAX 1024

/* scsi-layouts: SCSI layouts (RFC 8154, clients fenced with persistent reservations) offered or not.
 * auto offers them when every LUN takes a PERSISTENT RESERVE OUT REGISTER with APTPL set, which the
 * stock Linux client always sends (tgt refuses it; then block-volume layouts only). */
enum mds_scsi_layouts { MDS_SCSI_NO = 0, MDS_SCSI_YES = 1, MDS_SCSI_AUTO = 2 };

struct mds_config {
	char pool[MDS_CONFIG_PATH_MAX];     /* pool directory (pnfs-admin format --pool DIR) */
	char listen[256];                   /* address to bind, IPv4 or IPv6 literal */
	int port;
	int foreground;
	int log_level;                      /* enum proto_log_level */
	int log_syslog;                     /* log to syslog instead of stderr */
	char pid_file[MDS_CONFIG_PATH_MAX]; /* written in daemon mode (and in foreground if set) */
	char log_file[MDS_CONFIG_PATH_MAX]; /* daemon mode: append log lines here (else syslog) */
	uint32_t lease_time_s;
	uint32_t grace_time_s;
	uint32_t lun_timeout_s;             /* blkmap command timeout on the pool's LUNs */
	char initiator[224];                /* iSCSI initiator name on the LUNs */
	uint32_t max_record_bytes;          /* largest RPC record accepted; larger closes the connection */
	uint32_t max_slots;                 /* fore channel slots per session at most */
	uint32_t max_connections;
	uint32_t login_timeout_s;           /* a connection without a session by then is dropped; 0: never */
	struct mds_exports exports;
	int exports_set;                    /* some `export` key was given (else the default rule) */
	int takeover;                       /* claim LUNs another server serves (deliberate failover) */
	int scsi_layouts;                   /* enum mds_scsi_layouts: offer SCSI layouts (fence with PRs) */
	int metrics_port;                   /* Prometheus text on 127.0.0.1:PORT/metrics; 0: off */
};

/* One key the daemon knows: its name, an argument placeholder, and its help line. */
struct mds_config_key {
	const char *name;
	const char *arg;  /* NULL: a switch (`--foreground`, `foreground = yes`) */
	const char *help;
};
extern const struct mds_config_key mds_config_keys[];

/* Fill cfg with the defaults (which work for a lab on one host). */
void mds_config_defaults(struct mds_config *cfg);

/* Set one key from its text value. Returns 0, -ENOENT for an unknown key, -EINVAL for a bad value;
 * on error writes a reason naming key and value into err. */
int mds_config_set(struct mds_config *cfg, const char *key, const char *value, char *err,
		   size_t errlen);

/* Read a config file into cfg (keys not in the file keep their values). Returns 0 or -errno with
 * "FILE:LINE: reason" in err. */
int mds_config_load(struct mds_config *cfg, const char *path, char *err, size_t errlen);

/* Parse config text (for tests; `name` is used in messages). Same contract as mds_config_load. */
int mds_config_parse(struct mds_config *cfg, const char *text, const char *name, char *err,
		     size_t errlen);

/* Check the whole configuration for consistency after everything is applied (pool set, grace
 * and lease sane). Returns 0 or -EINVAL with a reason. */
int mds_config_check(const struct mds_config *cfg, char *err, size_t errlen);

#endif
