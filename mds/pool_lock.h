/* Who serves a pool: an exclusive flock(2) on DIR/mds.lock, held for as long as a pnfs-mds (or a
 * repairing pnfs-admin) uses the pool directory, with the holder's identity written into the file.
 * The kernel drops the lock when its holder dies, so a crash leaves nothing to clean up. Across
 * hosts (another copy of the pool directory on the same LUNs) see mds/pool_guard.h. */
#ifndef MDS_POOL_LOCK_H
#define MDS_POOL_LOCK_H

#include <stddef.h>
#include <stdint.h>

#define MDS_POOL_LOCK_FILE "mds.lock"

struct mds_pool_holder {
	char prog[64];        /* "pnfs-mds", "pnfs-admin check --repair" */
	int pid;
	char host[256];
	uint64_t since;       /* seconds since the epoch */
	char listen[128];     /* "ADDR:PORT", "" until known (or not a server) */
};

/* Take DIR/mds.lock (created 0644 if missing) without waiting, and write prog, our pid, host and
 * the time into it. Returns 0 with the open descriptor in *fd (close-on-exec; keep it open for as
 * long as the pool is in use, release with mds_pool_unlock), -EBUSY when another process holds it
 * (err: "pool DIR is served by pnfs-mds pid N on HOST since T (listening on ADDR:PORT)"; holder,
 * which may be NULL, filled), or another -errno with err. */
int mds_pool_lock(const char *dir, const char *prog, int *fd, struct mds_pool_holder *holder, char *err,
		  size_t errlen);
/* Record the address the holder listens on (once it is bound). */
int mds_pool_lock_set_listen(int fd, const char *addr, int port);
/* Drop the lock (the file stays; its contents say nothing once nobody holds it). Safe on -1. */
void mds_pool_unlock(int fd);

/* Whether someone holds DIR/mds.lock now: 1 with *h filled, 0 if nobody, -errno if it cannot be
 * told (e.g. the directory is unreadable). Takes and drops the lock when it is free. */
int mds_pool_lock_holder(const char *dir, struct mds_pool_holder *h);

/* "pool DIR is served by pnfs-mds pid N on HOST since T (listening on ADDR:PORT)" */
void mds_pool_holder_str(const char *dir, const struct mds_pool_holder *h, char *out, size_t outlen);

#endif
