/* libpnfs: an NFSv4.1 client with the pNFS block (RFC 5663) and SCSI (RFC 8154) layouts, for nodes
 * that see the SAN. One opaque context per MDS connection (struct pnfs_context), in the shape of
 * libnfs and libiscsi: an async core (*_async calls with a completion callback and private_data),
 * driven by the context's event loop, and sync wrappers that run the same loop until the call ends.
 *
 * Event loop: pnfs_get_fd() is one pollable fd (an epoll set) covering the MDS socket, every LUN
 * session of the data path and the context's timers (lease renewal, retries). Poll it for
 * pnfs_which_events() and call pnfs_service() when it is ready; callbacks run from inside
 * pnfs_service(). Programs without a loop use pnfs_run_once() or the sync calls.
 *
 * Data path: reads and writes of a file go straight to the LUNs when the server hands out a layout
 * (LAYOUTGET, GETDEVICEINFO, blkmap resolution of the volume, SCSI commands over libiscsi, written
 * extents reported with LAYOUTCOMMIT on fsync and close); otherwise, or after a failure of the SAN
 * path, through the MDS with READ/WRITE, logged once per file with a one-line notice.
 *
 * Paths are absolute from the server's root ("/export/dir/file"), or relative to the export given to
 * pnfs_mount(). URLs: pnfs://host[:port]/path (port 2049 by default).
 *
 * Conventions: functions return 0 (or a byte count) or a negative errno; pnfs_get_error(ctx) says why
 * in words, naming the file, operation and NFS status. Callbacks get the same: status >= 0 on
 * success. A context belongs to one thread at a time. */
#ifndef CLIENT_PNFS_H
#define CLIENT_PNFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct pnfs_context;
struct pnfs_fh;
struct pnfs_dir;
struct blkmap_vol;

#define PNFS_DEFAULT_PORT 2049

/* ---- context ------------------------------------------------------------------------------- */

struct pnfs_opts {
	const char *owner_id;        /* client owner id; NULL: "pnfs:<host>:<pid>:<random>" (unique
				      * per context, so two contexts are two clients) */
	uint32_t uid, gid;           /* AUTH_SYS credential; both 0 with uid_set 0: the process's */
	int uid_set;
	unsigned slots;              /* fore-channel slots asked for; 0: 64 */
	unsigned timeout_ms;         /* an RPC without any reply bytes for this long drops the
				      * connection (then reconnect and replay), and a TCP handshake
				      * taking this long is a failed try to connect; 0: 60000 */
	int mds_io;                  /* never use layouts: all I/O through the MDS */
	int no_scsi;                 /* do not ask for SCSI layouts (block layouts only) */
	/* The SAN, for resolving layout volumes to LUNs: */
	const char *const *portals;  /* iSCSI portals "iscsi://host[:port]" (SendTargets discovery) */
	unsigned nportals;
	const char *const *devices;  /* device candidates: iSCSI LUN URLs, block devices, files */
	unsigned ndevices;
	int scan_local;              /* also local block devices (/sys/block) */
	const char *initiator_name;  /* iSCSI initiator IQN; NULL: blkmap_default_initiator() */
	unsigned queue_depth;        /* SCSI commands in flight per LUN; 0: 32 */
	unsigned io_timeout_ms;      /* per SCSI command; 0: 30000 */
	unsigned connect_timeout_ms; /* how long to keep trying to reach the MDS (TCP connect, then
				      * EXCHANGE_ID, CREATE_SESSION or BIND_CONN_TO_SESSION): a refused,
				      * reset or lost connection is tried again after 100 ms, doubling to
				      * 2 s; past this the mount fails, or, once mounted, the calls waiting
				      * for the connection fail (the context keeps trying); 0: io_timeout_ms,
				      * else 30000 */
};

void pnfs_opts_init(struct pnfs_opts *opts);

/* Create a context. opts may be NULL (defaults); its strings and arrays are copied. Caller frees with
 * pnfs_context_destroy(). Returns 0, -ENOMEM, -EINVAL. */
int pnfs_context_create(const struct pnfs_opts *opts, struct pnfs_context **out);
/* Destroys the context without a word to the server (use pnfs_umount() first to leave cleanly):
 * outstanding calls complete with -ECANCELED, open files are freed. Safe on NULL. */
void pnfs_context_destroy(struct pnfs_context *ctx);

/* Text of the last failure ("" if none). Borrowed until the next call on ctx. */
const char *pnfs_get_error(struct pnfs_context *ctx);

/* Event-loop integration (see the top of this file). Returns the fd / POLL* mask / 0 or -errno. */
int pnfs_get_fd(struct pnfs_context *ctx);
int pnfs_which_events(struct pnfs_context *ctx);
int pnfs_service(struct pnfs_context *ctx, int revents);
/* Wait up to timeout_ms (-1: no limit) for events and service them. Returns 0 or -errno
 * (-EDEADLK when called from inside a callback). */
int pnfs_run_once(struct pnfs_context *ctx, int timeout_ms);
/* Calls submitted and not yet completed. */
unsigned pnfs_outstanding(struct pnfs_context *ctx);

/* ---- callbacks ----------------------------------------------------------------------------- */
/* status: 0 or a byte count on success, -errno on failure (pnfs_get_error() has the text while the
 * callback runs). data: the call's result as documented for each call, borrowed for the callback's
 * duration unless said otherwise. */
typedef void (*pnfs_cb)(struct pnfs_context *ctx, int status, void *data, void *private_data);

/* ---- mounting ------------------------------------------------------------------------------ */

/* Connect to the MDS, set up the client and session (EXCHANGE_ID asking for the pNFS MDS role,
 * CREATE_SESSION with a backchannel on the same connection, RECLAIM_COMPLETE) and look up export
 * (NULL or "/": the server's root); relative paths of later calls start there.
 * A server that refuses the connection, or loses it before the mount is done (one restarting, say),
 * is tried again with backoff for up to connect_timeout_ms; then the mount fails with the last
 * reason ("HOST:PORT: cannot connect for 30 s: Connection refused", -ECONNREFUSED). A host name
 * that does not resolve fails at once. The error text of a failed mount names the server.
 * A context mounts once. */
int pnfs_mount_async(struct pnfs_context *ctx, const char *host, int port, const char *export,
		     pnfs_cb cb, void *private_data);
int pnfs_mount(struct pnfs_context *ctx, const char *host, int port, const char *export);
/* Close open files (committing and returning their layouts), DESTROY_SESSION, DESTROY_CLIENTID,
 * disconnect. */
int pnfs_umount_async(struct pnfs_context *ctx, pnfs_cb cb, void *private_data);
int pnfs_umount(struct pnfs_context *ctx);

/* ---- attributes ---------------------------------------------------------------------------- */

enum pnfs_ftype { PNFS_REG = 1, PNFS_DIR, PNFS_BLK, PNFS_CHR, PNFS_LNK, PNFS_SOCK, PNFS_FIFO };

struct pnfs_stat {
	enum pnfs_ftype type;
	uint32_t mode;               /* permission bits (07777) */
	uint32_t nlink;
	uint32_t uid, gid;           /* from owner/owner_group when numeric, else 0 */
	char owner[64], group[64];
	uint64_t size;
	uint64_t space_used;
	uint64_t fileid;
	uint64_t change;
	struct timespec atime, mtime, ctime;
	uint32_t rdev_major, rdev_minor; /* device files: the device's numbers */
};

struct pnfs_statfs {
	uint64_t total_bytes, free_bytes, avail_bytes;
	uint64_t total_files, free_files, avail_files;
	uint32_t layout_blksize;     /* 0 when the server hands out no layouts */
	unsigned nlayout_types;
	uint32_t layout_types[8];    /* LAYOUT4_BLOCK_VOLUME (3), LAYOUT4_SCSI (5), ... */
};

/* data: struct pnfs_stat * */
int pnfs_stat_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data);
int pnfs_stat(struct pnfs_context *ctx, const char *path, struct pnfs_stat *st);
/* lstat: a symlink itself (stat follows nothing either: NFS LOOKUP does not follow links). */
#define pnfs_lstat pnfs_stat
/* data: struct pnfs_statfs * */
int pnfs_statfs_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data);
int pnfs_statfs(struct pnfs_context *ctx, const char *path, struct pnfs_statfs *sf);
int pnfs_chmod_async(struct pnfs_context *ctx, const char *path, uint32_t mode, pnfs_cb cb,
		     void *private_data);
int pnfs_chmod(struct pnfs_context *ctx, const char *path, uint32_t mode);
/* Owner and group by number (sent as numeric strings); (uint32_t)-1 leaves one as it is. The server
 * decides who may (root any; the owner its own groups). */
int pnfs_chown_async(struct pnfs_context *ctx, const char *path, uint32_t uid, uint32_t gid, pnfs_cb cb,
		     void *private_data);
int pnfs_chown(struct pnfs_context *ctx, const char *path, uint32_t uid, uint32_t gid);
/* Set the access and modify times as utimensat(2) does: ts[0] access, ts[1] modify; tv_nsec
 * UTIME_NOW sets the server's time, UTIME_OMIT leaves that time alone. */
int pnfs_utimens_async(struct pnfs_context *ctx, const char *path, const struct timespec ts[2], pnfs_cb cb,
		       void *private_data);
int pnfs_utimens(struct pnfs_context *ctx, const char *path, const struct timespec ts[2]);

/* What an object is, to tell whether two names (through one context or two) are one file: the
 * server's identity from EXCHANGE_ID (server_owner major id and server scope) and the object's NFS
 * file handle. Equal identities are the same object on the same server (RFC 8881 §2.10.5), whatever
 * host name, address, port or spelling of the path led to it. */
struct pnfs_identity {
	uint32_t major_len, scope_len, fh_len;
	uint8_t major[1024], scope[1024];
	uint8_t fh[128];
};
/* data: struct pnfs_identity * (LOOKUP and GETFH; a final symlink is not followed) */
int pnfs_identity_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data);
int pnfs_identity(struct pnfs_context *ctx, const char *path, struct pnfs_identity *out);
/* The identity of an open file. Returns 0. */
int pnfs_fh_identity(struct pnfs_fh *fh, struct pnfs_identity *out);
/* 1 when a and b name the same object on the same server, else 0. */
int pnfs_identity_equal(const struct pnfs_identity *a, const struct pnfs_identity *b);

/* ---- namespace ----------------------------------------------------------------------------- */

int pnfs_mkdir_async(struct pnfs_context *ctx, const char *path, uint32_t mode, pnfs_cb cb,
		     void *private_data);
int pnfs_mkdir(struct pnfs_context *ctx, const char *path, uint32_t mode);
/* A special file (NFSv4 CREATE): mode holds the type (S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK) and the
 * permission bits; major and minor name a device file's device. Regular files come from
 * pnfs_open(O_CREAT), directories from pnfs_mkdir: -EINVAL here. */
int pnfs_mknod_async(struct pnfs_context *ctx, const char *path, uint32_t mode, uint32_t major, uint32_t minor,
		     pnfs_cb cb, void *private_data);
int pnfs_mknod(struct pnfs_context *ctx, const char *path, uint32_t mode, uint32_t major, uint32_t minor);
/* Removes a file, a symlink or an empty directory (NFS REMOVE). */
int pnfs_unlink_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data);
int pnfs_unlink(struct pnfs_context *ctx, const char *path);
#define pnfs_rmdir pnfs_unlink
/* Rename within the server (both paths on it). */
int pnfs_rename_async(struct pnfs_context *ctx, const char *from, const char *to, pnfs_cb cb,
		      void *private_data);
int pnfs_rename(struct pnfs_context *ctx, const char *from, const char *to);
/* A hard link (NFS LINK): newpath becomes another name of the file existing names (not a directory:
 * -EISDIR; newpath taken: -EEXIST). */
int pnfs_link_async(struct pnfs_context *ctx, const char *existing, const char *newpath, pnfs_cb cb,
		    void *private_data);
int pnfs_link(struct pnfs_context *ctx, const char *existing, const char *newpath);
int pnfs_symlink_async(struct pnfs_context *ctx, const char *target, const char *linkpath, pnfs_cb cb,
		       void *private_data);
int pnfs_symlink(struct pnfs_context *ctx, const char *target, const char *linkpath);
/* data: the link text (char *, NUL-terminated). The sync form copies it into buf (truncated to
 * bufsize - 1) and returns its full length. */
int pnfs_readlink_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data);
int pnfs_readlink(struct pnfs_context *ctx, const char *path, char *buf, size_t bufsize);

struct pnfs_dirent {
	const char *name;
	struct pnfs_stat st;         /* attributes READDIR returned with the entry */
	uint64_t cookie;
};
/* Read a whole directory. data: struct pnfs_dir *, owned by the caller from then on (free with
 * pnfs_closedir()); the sync form stores it in *out. */
int pnfs_opendir_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data);
int pnfs_opendir(struct pnfs_context *ctx, const char *path, struct pnfs_dir **out);
/* Next entry, or NULL at the end. Borrowed until pnfs_closedir(). */
const struct pnfs_dirent *pnfs_readdir(struct pnfs_dir *dir);
unsigned pnfs_dir_count(const struct pnfs_dir *dir);
void pnfs_closedir(struct pnfs_dir *dir);

/* ---- files --------------------------------------------------------------------------------- */

/* flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_EXCL, O_TRUNC, O_SYNC (MDS-path writes are
 * FILE_SYNC). mode applies when creating. data: struct pnfs_fh *, owned by the caller from then on
 * (release with pnfs_close()); the sync form stores it in *out. */
int pnfs_open_async(struct pnfs_context *ctx, const char *path, int flags, uint32_t mode, pnfs_cb cb,
		    void *private_data);
int pnfs_open(struct pnfs_context *ctx, const char *path, int flags, uint32_t mode, struct pnfs_fh **out);

/* Read up to count bytes at offset; status: bytes read (short only at end of file). buf is borrowed
 * until the callback. Any number of reads and writes may be in flight on one file. */
int pnfs_pread_async(struct pnfs_context *ctx, struct pnfs_fh *fh, void *buf, size_t count, uint64_t offset,
		     pnfs_cb cb, void *private_data);
ssize_t pnfs_pread(struct pnfs_context *ctx, struct pnfs_fh *fh, void *buf, size_t count, uint64_t offset);
/* Write count bytes at offset; status: count. Data written through a layout is visible to other
 * clients after pnfs_fsync() or pnfs_close() (LAYOUTCOMMIT). */
int pnfs_pwrite_async(struct pnfs_context *ctx, struct pnfs_fh *fh, const void *buf, size_t count,
		      uint64_t offset, pnfs_cb cb, void *private_data);
ssize_t pnfs_pwrite(struct pnfs_context *ctx, struct pnfs_fh *fh, const void *buf, size_t count,
		    uint64_t offset);
/* Vectored forms: the iovec array is copied, the buffers are borrowed until the callback. */
int pnfs_preadv_async(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		      uint64_t offset, pnfs_cb cb, void *private_data);
ssize_t pnfs_preadv(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		    uint64_t offset);
int pnfs_pwritev_async(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		       uint64_t offset, pnfs_cb cb, void *private_data);
ssize_t pnfs_pwritev(struct pnfs_context *ctx, struct pnfs_fh *fh, const struct iovec *iov, int iovcnt,
		     uint64_t offset);
/* Wait for the file's writes, COMMIT what went through the MDS, LAYOUTCOMMIT what went through
 * layouts. -EIO when data could not be made durable (its text says which range and why). */
int pnfs_fsync_async(struct pnfs_context *ctx, struct pnfs_fh *fh, pnfs_cb cb, void *private_data);
int pnfs_fsync(struct pnfs_context *ctx, struct pnfs_fh *fh);
int pnfs_ftruncate_async(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t length, pnfs_cb cb,
			 void *private_data);
int pnfs_ftruncate(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t length);
/* data: struct pnfs_stat * (the size includes writes not yet committed) */
int pnfs_fstat_async(struct pnfs_context *ctx, struct pnfs_fh *fh, pnfs_cb cb, void *private_data);
int pnfs_fstat(struct pnfs_context *ctx, struct pnfs_fh *fh, struct pnfs_stat *st);
/* fsync, LAYOUTRETURN, CLOSE; fh is freed whatever the status (which reports what failed). */
int pnfs_close_async(struct pnfs_context *ctx, struct pnfs_fh *fh, pnfs_cb cb, void *private_data);
int pnfs_close(struct pnfs_context *ctx, struct pnfs_fh *fh);

/* ---- the data path, for tools and tests ------------------------------------------------------- */

enum pnfs_extent_state { /* RFC 5663 pnfs_block_extent_state4 */
	PNFS_EXT_READ_WRITE = 0,
	PNFS_EXT_READ = 1,
	PNFS_EXT_INVALID = 2,
	PNFS_EXT_NONE = 3,
};

struct pnfs_extent {
	uint64_t file_offset, length;
	uint64_t storage_offset;     /* in the device's top volume */
	enum pnfs_extent_state state;
	uint8_t deviceid[16];
	int rw;                      /* from a LAYOUTIOMODE4_RW layout */
};

/* The extents the file's cached layouts hold now (after this client's commits and writes), sorted by
 * file offset. *out is malloc'd; caller frees with free(). Returns 0 or -ENOMEM. */
int pnfs_fh_extents(struct pnfs_fh *fh, struct pnfs_extent **out, size_t *n);
/* Ask the server what its layout says about [offset, offset + length) of the file (length 0 or
 * UINT64_MAX: to the end of the offset space), as a reader would: LAYOUTGET in READ iomode, again
 * from wherever the granted layout ends, until the range is covered; GETDEVICEINFO and resolution to
 * LUNs (through the context's portals and devices) of every device its extents name. The layout stays
 * cached (pnfs_close() returns it). status: the number of extents; data: struct pnfs_extent *, that
 * many, clipped to the range and in file order, owned by the caller (free() it; NULL when none);
 * extents that continue each other (same state, back to back in the file and, with blocks, in the
 * volume of one device) are merged, so the answer does not depend on how the server cut its
 * layouts.
 * A device that cannot be resolved does not fail the call (see pnfs_device_info()). fh stays open
 * until the callback. Fails with -EOPNOTSUPP when the context uses no layouts (mds_io, or the server
 * offers neither block nor SCSI layouts). The sync form stores the array in *out and the count in *n. */
int pnfs_layout_extents_async(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t offset, uint64_t length,
			      pnfs_cb cb, void *private_data);
int pnfs_layout_extents(struct pnfs_context *ctx, struct pnfs_fh *fh, uint64_t offset, uint64_t length,
			struct pnfs_extent **out, size_t *n);
/* What the context knows of a device ID: *vol (may be NULL) gets the volume GETDEVICEINFO described,
 * its leaves bound to LUNs when resolved (NULL if it was never fetched); *why (may be NULL) "" when
 * the device is usable, else the reason. Both borrowed for the context's life. Returns 1 usable,
 * 0 not usable, -ENOENT for a device the context has not seen. */
int pnfs_device_info(struct pnfs_context *ctx, const uint8_t deviceid[16], struct blkmap_vol **vol,
		     const char **why);
/* The file's fileid as its OPEN reported it (0 when the server did not say). */
uint64_t pnfs_fh_fileid(const struct pnfs_fh *fh);
/* Whether the file's I/O goes through the MDS now, and why ("" if it does not). Borrowed. */
const char *pnfs_fh_mds_reason(struct pnfs_fh *fh);
/* The blkmap volume the context resolved for a device ID, or NULL. Borrowed for the context's life
 * (struct blkmap_vol from blkmap/blkmap.h). */
struct blkmap_vol *pnfs_device_volume(struct pnfs_context *ctx, const uint8_t deviceid[16]);

struct pnfs_stats {
	uint64_t mds_bytes_sent, mds_bytes_received;   /* every byte on the MDS connection(s) */
	uint64_t direct_bytes_read, direct_bytes_written; /* file data moved to/from LUNs directly */
	uint64_t mds_data_read, mds_data_written;      /* file data moved by READ/WRITE via the MDS */
	uint64_t zero_filled_bytes;                    /* read as zeros (INVALID/NONE, holes) */
	uint64_t compounds;
	uint64_t layoutgets, layoutcommits, layoutreturns, getdeviceinfos;
	uint64_t layoutgets_ahead;  /* of the LAYOUTGETs, those asked ahead of a sequential writer */
	uint64_t layout_waits;      /* reads and writes that had to wait for a LAYOUTGET */
	uint64_t recalls, fallbacks, fenced;
	uint64_t connects, session_recoveries, clientid_recoveries, replays;
	uint64_t slots_settled;     /* slots whose call was given up unanswered, settled by a lone SEQUENCE */
	uint64_t layouts_reclaimed; /* layouts whose uncommitted writes were committed with LAYOUTCOMMIT
	                               reclaim after the server restarted (RFC 8881 §18.42.3) */
};
void pnfs_get_stats(struct pnfs_context *ctx, struct pnfs_stats *st);

/* ---- URLs ---------------------------------------------------------------------------------- */

struct pnfs_url {
	char host[256];
	int port;                    /* PNFS_DEFAULT_PORT when absent */
	char path[4096];             /* absolute, "/" at least; %XX decoded */
};
/* Parse "pnfs://host[:port]/path" (host may be [v6addr]). Returns 0 or -EINVAL. */
int pnfs_parse_url(const char *url, struct pnfs_url *out);
/* Whether s looks like a pnfs:// URL. */
int pnfs_is_url(const char *s);


/* ---- defaults for programs: client.conf and PNFS_* variables ------------------------------ */

/* Layers, lowest first: each overrides the ones before it key by key. */
enum { PNFS_CONF_DEFAULT = 0, PNFS_CONF_SYSTEM, PNFS_CONF_USER, PNFS_CONF_ENV, PNFS_CONF_FLAG };
#define PNFS_CONF_MAX_PORTALS 16
#define PNFS_CONF_MAX_DEVICES 64

struct pnfs_conf_item {
	char value[512];
	char from[400];              /* "default", "FILE:LINE", "PNFS_PORTAL", "--portal", ... */
};
struct pnfs_conf {
	struct pnfs_conf_item portal[PNFS_CONF_MAX_PORTALS];
	unsigned nportal;
	struct pnfs_conf_item device[PNFS_CONF_MAX_DEVICES];
	unsigned ndevice;
	int portal_layer, device_layer; /* the layer the list came from */
	struct pnfs_conf_item initiator; /* the library's default until set */
	int initiator_set;
	struct pnfs_conf_item io_timeout;
	unsigned io_timeout_ms;      /* 0: the library's default (30 s) */
	struct pnfs_conf_item mds;   /* "host[:port]" for pnfs:///path URLs; value "" when none */
	char files[2][320];          /* the system file ($PNFS_CLIENT_CONF, else /etc/pnfs/client.conf) and
				      * the user's ($XDG_CONFIG_HOME/pnfs/client.conf, else
				      * ~/.config/pnfs/client.conf; "" without a home) */
	int file_read[2];            /* each one: 1 read, 0 absent, -errno not reachable (a directory on
				      * the way this user may not search: skipped) */
};

/* Defaults, then the system file, the user file and the variables PNFS_PORTAL, PNFS_DEVICE (lists:
 * blanks or commas between values), PNFS_INITIATOR, PNFS_IO_TIMEOUT, PNFS_MDS. Keys: portal, device
 * (repeatable), initiator, io-timeout (seconds), mds. Missing files are no error. Returns 0, or
 * -errno with err naming the file and line (or the variable). */
int pnfs_conf_load(struct pnfs_conf *c, char *err, size_t errlen);
/* Set one key from layer (a repeatable key set from a new layer drops the values below it); from
 * says where it came from. Returns 0, -EINVAL (bad value) or -ENOENT (unknown key) with why. */
int pnfs_conf_set(struct pnfs_conf *c, const char *key, const char *value, int layer, const char *from, char *why,
		  size_t whylen);

#endif
