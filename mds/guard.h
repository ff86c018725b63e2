/* The pool guard across hosts: another copy of the pool directory on the same LUNs (a standby MDS
 * host) is not stopped by DIR/mds.lock, so the serving pnfs-mds also writes a heartbeat record into
 * LUN 0's label area (MDS_GUARD_OFFSET, inside the first MiB that no file ever uses): who it is
 * (pid, host, start, listen address, pool directory), a random instance nonce, and the time of its
 * last beat, renewed every MDS_GUARD_INTERVAL_S. A server starting on the LUNs reads it first, with
 * the LUNs' persistent reservation, and refuses while the record says another server is alive
 * (this host, this boot: its pid exists; otherwise: it beat within MDS_GUARD_STALE_S). --takeover claims
 * the LUNs anyway, for a deliberate failover: PREEMPT AND ABORT of the MDS key moves the
 * reservation to this server and removes every other registration of it, and the old server, at
 * its next beat, finds the record not its own (or its I/O refused) and stops. */
#ifndef MDS_GUARD_H
#define MDS_GUARD_H

#include <stddef.h>
#include <stdint.h>

#define MDS_GUARD_OFFSET (512u * 1024u)
#define MDS_GUARD_RECORD_BYTES 512u
#define MDS_GUARD_MAGIC "PNFSBEAT"
#define MDS_GUARD_INTERVAL_S 2u
#define MDS_GUARD_STALE_S 10u

enum mds_guard_state { MDS_GUARD_SERVING = 1, MDS_GUARD_STOPPED = 2 };

struct mds_guard_beat {
	enum mds_guard_state state;
	uint8_t pool_uuid[16];
	uint64_t nonce;
	uint64_t started, beat;   /* seconds since the epoch */
	uint64_t seq;
	uint32_t pid;
	uint8_t boot_id[16];      /* the host's boot (/proc/sys/kernel/random/boot_id): pid is meaningful here */
	char host[64];
	char listen[128];
	char dir[232];
};

/* Encode into out (MDS_GUARD_RECORD_BYTES, CRC32C at the end); decode: 0, or -ENOENT (no record,
 * or a damaged one). */
void mds_guard_encode(const struct mds_guard_beat *b, uint8_t *out);
int mds_guard_decode(const uint8_t *buf, size_t len, struct mds_guard_beat *out);

/* Whether b says a server is alive now (see above); the reason in why. my_boot is this host's boot
 * ID (mds_guard_boot_id): a record of the same boot is judged by its pid, any other by its beat
 * (host names may repeat across cloned hosts; boot IDs do not). */
int mds_guard_alive(const struct mds_guard_beat *b, uint64_t now, const uint8_t my_boot[16], char *why,
		    size_t whylen);
/* This host's current boot ID; all zero if the kernel does not say. */
void mds_guard_boot_id(uint8_t out[16]);

struct mds_server;
/* At start, the pool open: refuse (-EBUSY, err naming the live server and its key) or take over
 * (cfg takeover), then write this server's record and start beating. Returns 0 or -errno. */
int mds_guard_start(struct mds_server *srv, char *err, size_t errlen);
/* Once the listening socket is bound: the record gets the address. */
void mds_guard_listening(struct mds_server *srv);
/* At a clean stop: the record says stopped (if it is still ours). */
void mds_guard_stop(struct mds_server *srv);

#endif
