/* blkmap: from a pNFS block/SCSI volume description to bytes on LUNs.
 * Leaf devices (iSCSI LUNs over libiscsi, block devices, regular files), the RFC 5663 / RFC 8154 volume
 * array, discovery of the devices behind it, its device-mapper table, and the userspace engine that
 * executes that table with many commands in flight on every LUN from one event loop.
 *
 * Shape (libiscsi style): one opaque context per process part (struct blkmap_ctx) owns the devices,
 * the event loop and the last-error text; every call takes it (or an object made from it) first.
 * I/O and SCSI commands have an async form (callback + private_data, run from blkmap_service()) and a
 * sync wrapper that drives the same loop until the command completes. Integrate with an event loop
 * through blkmap_get_fd() / blkmap_which_events() / blkmap_service(): one pollable fd covers every
 * LUN session, the block-device worker queue and the command timers.
 *
 * Conventions: functions return 0 or a negative errno; blkmap_errstr(ctx) (blkmap_vol_errstr(vol) for
 * volume objects) says why in words, naming the device and LBA. Offsets and lengths are bytes in
 * uint64_t unless the name says _sectors (512 bytes) or _blocks (the device's logical block).
 * Distinct errors callers act on:
 *   -EBADE      RESERVATION CONFLICT: this initiator is not registered or was preempted (fenced).
 *   -ETIMEDOUT  a command did not complete within the command timeout (session down or target hung).
 *   -ENODEV     a volume leaf has no device bound (not resolved).
 *   -EOPNOTSUPP the device cannot do this (persistent reservations on a regular file).
 *   -EDEADLK    a sync call was made from inside a completion callback (use the async form there).
 * Threads: a context and everything made from it belong to one thread at a time.
 * Signals: blkmap never changes the process's signal dispositions, and its own threads (block-device
 * workers) take no signals. libiscsi writes SCSI data to its sockets with writev(), without
 * MSG_NOSIGNAL, so a target that dies mid-transfer would raise SIGPIPE and end an application that
 * keeps the default action; every blkmap call that lets libiscsi write (the service of a session,
 * queueing a command, login, logout, discovery) blocks SIGPIPE in the calling thread for its duration
 * and takes back, with sigtimedwait(), a SIGPIPE it raised itself; one that was pending before is left
 * alone. The failure is reported as the session's loss instead. */
#ifndef BLKMAP_BLKMAP_H
#define BLKMAP_BLKMAP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define BLKMAP_ERESERVATION EBADE /* returned negated: RESERVATION CONFLICT */

struct blkmap_ctx;
struct blkmap_dev;
struct blkmap_vol;

/* ---- context -------------------------------------------------------------------------------- */

struct blkmap_ctx_opts {
	const char *initiator_name; /* iSCSI initiator IQN; NULL: blkmap_default_initiator() */
	unsigned queue_depth;       /* commands in flight per device; 0: 32 */
	unsigned timeout_ms;        /* per command (and per connect attempt); 0: 30000 */
	unsigned workers;           /* threads for block-device and file I/O; 0: 4 */
	unsigned max_xfer_bytes;    /* cap on one command, further capped by Block Limits; 0: 1 MiB */
	uint64_t register_key;      /* non-zero: REGISTER AND IGNORE EXISTING KEY with this key on every
				     * iSCSI LUN the context opens, before its first read or write (a LUN
				     * under an EXCLUSIVE ACCESS - REGISTRANTS ONLY reservation then serves
				     * this initiator); a LUN that refuses it does not open */
	int keep_key;               /* with register_key: leave the registrations when the devices close
				     * (default: unregistered as each device closes) */
};

/* The initiator name a context uses when none is given: the InitiatorName= line of
 * /etc/iscsi/initiatorname.iscsi (open-iscsi's, so the target ACLs made for the host's kernel
 * initiator admit us too; $PNFS_INITIATORNAME_FILE names another file), else one made up from the
 * host name, iqn.2024-01.org.pnfs-san:blkmap.<host>. Writes at most len bytes; returns where it came
 * from: the file's path (borrowed, static) or NULL for the made-up one. */
const char *blkmap_default_initiator(char *buf, size_t len);

/* Fill opts with the defaults above (all zero / NULL). */
void blkmap_ctx_opts_init(struct blkmap_ctx_opts *opts);

/* Create a context. opts may be NULL (defaults); its strings are copied. Caller frees with
 * blkmap_ctx_destroy(). Returns 0 or -errno (no context, so no error text: -ENOMEM, -EINVAL). */
int blkmap_ctx_create(const struct blkmap_ctx_opts *opts, struct blkmap_ctx **out);

/* Destroy the context: outstanding commands complete with -ECANCELED first (their callbacks run),
 * then devices still open are closed; a device a caller or a volume still references keeps only its
 * memory (every call on it returns -ENODEV) until that last reference goes. Not from inside a
 * callback. Safe on NULL. */
void blkmap_ctx_destroy(struct blkmap_ctx *ctx);

/* The text of the last failure in this context ("" if none). Borrowed until the next call. */
const char *blkmap_errstr(struct blkmap_ctx *ctx);

/* The initiator name in use (borrowed). */
const char *blkmap_initiator_name(struct blkmap_ctx *ctx);

/* Event-loop integration. blkmap_get_fd() is stable for the context's life; poll it for
 * blkmap_which_events() (always POLLIN) and call blkmap_service() when it is ready (revents may be 0:
 * then only timers are checked). Completion callbacks run from inside blkmap_service().
 * Returns 0 or -errno. */
int blkmap_get_fd(struct blkmap_ctx *ctx);
int blkmap_which_events(struct blkmap_ctx *ctx);
int blkmap_service(struct blkmap_ctx *ctx, int revents);

/* For programs without a loop of their own: wait up to timeout_ms (-1: forever) for events and service
 * them. Returns 0 or -errno (-EDEADLK from inside a callback). */
int blkmap_run_once(struct blkmap_ctx *ctx, int timeout_ms);

/* Run until no request is outstanding. Returns 0 or -errno. */
int blkmap_wait_idle(struct blkmap_ctx *ctx);

/* Requests (device commands, volume I/O) submitted and not yet completed. */
unsigned blkmap_outstanding(struct blkmap_ctx *ctx);

/* ---- devices ---------------------------------------------------------------------------------- */

enum blkmap_dev_kind {
	BLKMAP_DEV_ISCSI = 1, /* a LUN through libiscsi */
	BLKMAP_DEV_BLOCK = 2, /* a local block device (loop, sd, dm), O_DIRECT */
	BLKMAP_DEV_FILE = 3,  /* a regular file (tools and tests), buffered */
};

#define BLKMAP_OPEN_RDONLY 0x1 /* block devices and files: open read-only */

/* Open a leaf device: "iscsi://[user%pass@]host[:port]/target-iqn/lun" (libiscsi's URL syntax; the
 * target name may be %-encoded), or a path to a block device or a regular file. For iSCSI this logs
 * in, reads the capacity (READ CAPACITY 16), INQUIRY data and VPD pages 0x80, 0x83 and 0xB0 (Block
 * Limits); a LUN that is not a direct-access block device (tgt's LUN 0 controller) is refused with
 * -ENOTBLK. Sync (bounded by the command timeout; not from inside a completion callback: -EDEADLK).
 * Caller releases with blkmap_dev_close(). */
int blkmap_dev_open(struct blkmap_ctx *ctx, const char *spec, unsigned flags, struct blkmap_dev **out);
/* Open n devices at once: iSCSI LUNs log in and are probed side by side (N LUNs open in about the
 * round trips of one), others are opened in turn. flags: one per spec, or NULL for 0 each. out[i]
 * is the device, or NULL; errs, when not NULL, is n buffers of errlen bytes, one after another,
 * each holding why its device did not open ("" for those that did). Returns how many opened. */
unsigned blkmap_dev_open_many(struct blkmap_ctx *ctx, const char *const *specs, const unsigned *flags, unsigned n,
			      struct blkmap_dev **out, char *errs, size_t errlen);

/* Devices are reference counted: blkmap_dev_ref() takes another reference, blkmap_dev_close() drops
 * one; the last one closes the session or fd (outstanding commands complete with -ECANCELED). Closing
 * from inside a completion callback is allowed (it finishes once the transport has returned). */
struct blkmap_dev *blkmap_dev_ref(struct blkmap_dev *dev);
void blkmap_dev_close(struct blkmap_dev *dev);

struct blkmap_ctx *blkmap_dev_ctx(const struct blkmap_dev *dev);
/* Display name: the URL without its password, or the path. Borrowed for the device's life. */
const char *blkmap_dev_name(const struct blkmap_dev *dev);
enum blkmap_dev_kind blkmap_dev_kind(const struct blkmap_dev *dev);
uint64_t blkmap_dev_size_bytes(const struct blkmap_dev *dev);
uint32_t blkmap_dev_block_bytes(const struct blkmap_dev *dev);
/* Largest single command the engine sends to this device: min(context cap, Block Limits MAXIMUM
 * TRANSFER LENGTH when the device reports one). */
uint32_t blkmap_dev_max_xfer_bytes(const struct blkmap_dev *dev);
/* Block Limits MAXIMUM TRANSFER LENGTH in bytes as the device reported it; 0 = no limit / no page. */
uint32_t blkmap_dev_block_limits_max_bytes(const struct blkmap_dev *dev);
/* Commands in flight on the wire for this device right now (for tests and metrics). */
unsigned blkmap_dev_inflight(const struct blkmap_dev *dev);
/* iSCSI logins done for this device so far (1 after open; each reconnect adds one); 0 for others. */
unsigned blkmap_dev_logins(const struct blkmap_dev *dev);

/* SCSI identity. Designator types and code sets use SPC's numbers, which RFC 8154 reuses. */
enum blkmap_desig_type {
	BLKMAP_DESIG_VENDOR = 0,
	BLKMAP_DESIG_T10 = 1,
	BLKMAP_DESIG_EUI64 = 2,
	BLKMAP_DESIG_NAA = 3,
	BLKMAP_DESIG_NAME = 8, /* SCSI name string */
};
enum blkmap_code_set {
	BLKMAP_CODE_BINARY = 1,
	BLKMAP_CODE_ASCII = 2,
	BLKMAP_CODE_UTF8 = 3,
};

#define BLKMAP_MAX_DESIGNATORS 16
#define BLKMAP_MAX_DESIG_BYTES 255

struct blkmap_designator {
	uint8_t type;        /* enum blkmap_desig_type */
	uint8_t code_set;    /* enum blkmap_code_set */
	uint8_t association; /* 0 logical unit, 1 target port, 2 target device */
	uint8_t len;
	uint8_t bytes[BLKMAP_MAX_DESIG_BYTES];
};

struct blkmap_inquiry {
	uint8_t device_type; /* peripheral device type: 0 direct-access */
	char vendor[9], product[17], revision[5]; /* trailing blanks removed */
	char serial[256];    /* VPD 0x80, blanks trimmed; "" if none */
	unsigned ndesig;     /* VPD 0x83 designators */
	struct blkmap_designator desig[BLKMAP_MAX_DESIGNATORS];
};

/* The device's INQUIRY data (read at open: iSCSI by INQUIRY; block devices from sysfs VPD files
 * where the kernel exposes them; files have none: -EOPNOTSUPP). */
int blkmap_dev_inquiry(struct blkmap_dev *dev, struct blkmap_inquiry *out);

/* Format a designator as text ("naa:600140...", "t10:SANLAB  SL...", "eui64:...", "name:iqn...").
 * Returns the length that would have been written (snprintf style). */
int blkmap_designator_str(const struct blkmap_designator *d, char *buf, size_t len);

/* The logical-unit designator a host's name for the LUN is built from, in the order udev's scsi_id
 * takes them for /dev/disk/by-id/wwn-0x... (and Linux's SCSI layout client looks the LUN up there):
 * NAA IEEE Registered Extended (type 6), NAA IEEE Registered (5), any other NAA, EUI-64, T10 vendor
 * ID, SCSI name string, vendor specific; within a kind, the first one on VPD page 0x83. NULL when
 * the LUN has no logical-unit designator. Borrowed from inq. */
const struct blkmap_designator *blkmap_inquiry_preferred(const struct blkmap_inquiry *inq);
/* Whether two designators are the same (type, code set, association and bytes). */
int blkmap_designator_equal(const struct blkmap_designator *a, const struct blkmap_designator *b);

/* ---- identity across reconnects ---------------------------------------------------------------- */

/* A LUN behind the same portal, target and LUN number is not always the same LUN after a session
 * comes back: an array replaced it, a target was mapped wrongly after maintenance, a lab recreated
 * its backing files. So after every login of an iSCSI device except the first, before any queued
 * command is sent, the device is checked against what it was when opened: its logical-unit VPD 0x83
 * designators (each one seen at open must still be there), its block size, its capacity (it may
 * grow, not shrink), and its identity regions: bytes it must hold, added below (a pool label) and by
 * blkmap_vol_bind for a simple volume's signature. A LUN that comes back different is taken out of
 * service: the session is closed, every queued and every new command fails at once with
 * -BLKMAP_EWRONGLUN and a message naming the device and what differs, and the log says so once (an
 * error). It keeps logging in every few seconds, work queued or not, and goes back into service by
 * itself when a check passes (logged too). A region that cannot be read because of a RESERVATION
 * CONFLICT does not fail the check: nothing can be read or written through that session either.
 * Block devices and files are not checked (they do not reconnect). */
#define BLKMAP_EWRONGLUN EMEDIUMTYPE

/* Says what a region holds now that differs from what was expected ("no pool label", "the label of
 * LUN 2"); why is NUL-terminated by blkmap first. Runs inside blkmap_service(). */
typedef void (*blkmap_ident_explain)(const uint8_t *now, size_t len, char *why, size_t whylen, void *priv);

/* Add an identity region: len bytes (1..BLKMAP_MAX_SIG_BYTES, copied) at off_bytes (negative: from the
 * end of the device as opened) that the LUN must hold after a reconnect; what names it in messages
 * ("pool label"); explain (may be NULL) describes a difference; owner is any pointer that identifies
 * who added it, for blkmap_dev_unexpect. Returns 0, -EINVAL (a range outside the device), -ENOMEM. */
int blkmap_dev_expect(struct blkmap_dev *dev, const void *owner, const char *what, int64_t off_bytes, const void *bytes,
		      size_t len, blkmap_ident_explain explain, void *priv);
/* Remove the regions owner added. */
void blkmap_dev_unexpect(struct blkmap_dev *dev, const void *owner);
/* Keep a session: after a loss, log in again at once (with backoff) even with nothing queued, so the
 * device is checked as soon as its target answers, not at the next command (a server that must know
 * whether its LUNs are the right ones before it hands them out). */
void blkmap_dev_keep_session(struct blkmap_dev *dev, int on);
/* 0 while the device is in service; -BLKMAP_EWRONGLUN while it is out of service after a failed
 * check, with why (may be NULL) saying what differs. */
int blkmap_dev_identity(const struct blkmap_dev *dev, char *why, size_t whylen);
/* Whether the device's session has been checked: 1 for the session of the open and for one that
 * passed its identity check; 0 from a session's loss until the next one has passed (the LUN at the
 * URL is not known to be the one it was then: a server should not hand it out meanwhile). */
int blkmap_dev_checked(const struct blkmap_dev *dev);
/* Checks done after reconnects, and how many of them failed (tests, metrics). */
unsigned blkmap_dev_identity_checks(const struct blkmap_dev *dev);
unsigned blkmap_dev_identity_failures(const struct blkmap_dev *dev);

/* I/O completion. res is borrowed for the callback's duration. On failure, status is the first
 * failing command's -errno and res names it; the other commands of the request still ran to their
 * own completion before the callback. */
struct blkmap_io_result {
	uint64_t bytes;        /* bytes requested (on success all of them were transferred) */
	unsigned commands;     /* device commands the request became */
	unsigned failed;       /* of which failed */
	int leaf;              /* volume I/O: array index of the failing leaf; -1 otherwise */
	const char *dev_name;  /* failing device, NULL on success */
	uint64_t lba;          /* first LBA of the failing command */
	uint32_t blocks;       /* its length in blocks */
	const char *message;   /* "DEV: WRITE(16) LBA 2048+256: reason"; NULL on success */
};
typedef void (*blkmap_io_cb)(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res,
			     void *private_data);

/* Device I/O at a byte offset; offset and total length must be multiples of the device's block size
 * (-EINVAL otherwise) and inside it (-ERANGE). The iovec array is copied; the buffers it points to
 * are borrowed until the callback. Async forms return 0 (callback will run) or -errno (it will not). */
int blkmap_dev_readv_async(struct blkmap_dev *dev, uint64_t off_bytes, const struct iovec *iov, int niov,
			   blkmap_io_cb cb, void *private_data);
int blkmap_dev_writev_async(struct blkmap_dev *dev, uint64_t off_bytes, const struct iovec *iov,
			    int niov, blkmap_io_cb cb, void *private_data);
int blkmap_dev_pread(struct blkmap_dev *dev, void *buf, size_t len, uint64_t off_bytes);
int blkmap_dev_pwrite(struct blkmap_dev *dev, const void *buf, size_t len, uint64_t off_bytes);

/* Make the writes the device acknowledged before this call stable (RFC 8881's "stable storage"): an
 * iSCSI LUN gets SYNCHRONIZE CACHE(10) over the whole LUN (IMMED 0: the target answers once its cache
 * is written out); block devices and files get fdatasync(2) in a worker. Writes still in flight when
 * the flush is submitted are not covered. A target that refuses the command as ILLEGAL REQUEST /
 * INVALID COMMAND OPERATION CODE has no volatile cache (SBC lets such devices omit it): the flush
 * succeeds, the device remembers it and later flushes complete without a command (then the callback
 * runs before the async call returns). Retried on UNIT ATTENTION and across reconnects like I/O, and
 * bounded by the command timeout on iSCSI; on failure res->message names the device
 * ("iscsi://...: SYNCHRONIZE CACHE(10): no session within 2000 ms (...)"). Async form: 0 (callback
 * will run) or -errno (it will not). */
int blkmap_dev_flush_async(struct blkmap_dev *dev, blkmap_io_cb cb, void *private_data);
int blkmap_dev_flush(struct blkmap_dev *dev);
/* Flushes completed successfully on this device (tests, metrics). */
unsigned blkmap_dev_flushes(const struct blkmap_dev *dev);
/* 0 once the target said it has no SYNCHRONIZE CACHE (no volatile cache); 1 otherwise. */
int blkmap_dev_has_volatile_cache(const struct blkmap_dev *dev);

/* ---- SCSI persistent reservations ------------------------------------------------------------- */

enum blkmap_pr_type { /* SPC PERSISTENT RESERVE type codes */
	BLKMAP_PR_WRITE_EXCLUSIVE = 1,
	BLKMAP_PR_EXCLUSIVE_ACCESS = 3,
	BLKMAP_PR_WRITE_EXCLUSIVE_REG_ONLY = 5,
	BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY = 6,
	BLKMAP_PR_WRITE_EXCLUSIVE_ALL_REGS = 7,
	BLKMAP_PR_EXCLUSIVE_ACCESS_ALL_REGS = 8,
};

enum blkmap_pr_action { /* PERSISTENT RESERVE OUT service actions */
	BLKMAP_PR_REGISTER = 0,
	BLKMAP_PR_RESERVE = 1,
	BLKMAP_PR_RELEASE = 2,
	BLKMAP_PR_CLEAR = 3,
	BLKMAP_PR_PREEMPT = 4,
	BLKMAP_PR_PREEMPT_AND_ABORT = 5,
	BLKMAP_PR_REGISTER_AND_IGNORE = 6,
};

struct blkmap_pr_out {
	enum blkmap_pr_action action;
	uint64_t key;    /* RESERVATION KEY: the caller's registered key (0 when registering anew) */
	uint64_t sa_key; /* SERVICE ACTION RESERVATION KEY: new key (REGISTER), victim (PREEMPT) */
	enum blkmap_pr_type type; /* RESERVE, RELEASE, PREEMPT */
	int aptpl;       /* activate persist through power loss (REGISTER) */
};

#define BLKMAP_PR_MAX_KEYS 64
struct blkmap_pr_keys {
	uint32_t generation;
	unsigned nkeys;                     /* keys returned (at most BLKMAP_PR_MAX_KEYS) */
	unsigned total;                     /* keys registered on the LUN */
	uint64_t keys[BLKMAP_PR_MAX_KEYS];
};
struct blkmap_pr_reservation {
	uint32_t generation;
	int reserved;                       /* 0: no reservation */
	uint64_t key;                       /* holder's key */
	enum blkmap_pr_type type;
	uint8_t scope;
};

/* PERSISTENT RESERVE IN REPORT CAPABILITIES (SPC-4 6.16.4). */
struct blkmap_pr_caps {
	int ptpl_c;                         /* persist through power loss capable: REGISTER may set APTPL */
	int ptpl_a;                         /* persist through power loss activated (by the last REGISTER) */
	int crh, sip_c, atp_c;              /* compatible reservation handling, SPEC_I_PT, ALL_TG_PT capable */
	int tmv;                            /* type_mask is valid */
	uint16_t type_mask;                 /* reservation types supported (bit 15 WR_EX_AR ... bit 0 EX_AC_AR) */
};

typedef void (*blkmap_cmd_cb)(struct blkmap_ctx *ctx, int status, void *private_data);

/* PERSISTENT RESERVE OUT. A successful REGISTER / REGISTER AND IGNORE with a non-zero new key makes
 * the device remember the key: after a reconnect the engine restores the registration on the new
 * session, but only if READ KEYS still lists the key (a preempted, fenced initiator stays fenced).
 * iSCSI LUNs use the command; block devices the kernel's IOC_PR_* ioctls; files: -EOPNOTSUPP.
 * UNIT ATTENTION (e.g. 2A/03-04 after a preempt) is consumed and the command retried. A target that
 * refuses PREEMPT AND ABORT as an invalid field (tgt 1.0.x) gets PREEMPT instead, with a warning: the
 * victim's registration is removed all the same, only its commands already queued are not aborted. */
int blkmap_pr_out_async(struct blkmap_dev *dev, const struct blkmap_pr_out *args, blkmap_cmd_cb cb,
			void *private_data);
int blkmap_pr_out(struct blkmap_dev *dev, const struct blkmap_pr_out *args);
/* PERSISTENT RESERVE IN: READ KEYS / READ RESERVATION. out is written before the callback runs and
 * must stay valid until then. */
int blkmap_pr_read_keys_async(struct blkmap_dev *dev, struct blkmap_pr_keys *out, blkmap_cmd_cb cb,
			      void *private_data);
int blkmap_pr_read_reservation_async(struct blkmap_dev *dev, struct blkmap_pr_reservation *out,
				     blkmap_cmd_cb cb, void *private_data);
int blkmap_pr_read_keys(struct blkmap_dev *dev, struct blkmap_pr_keys *out);
int blkmap_pr_read_reservation(struct blkmap_dev *dev, struct blkmap_pr_reservation *out);
/* PERSISTENT RESERVE IN: REPORT CAPABILITIES. What a target says, not what it does: pnfs-mds tries
 * a REGISTER with APTPL set before it believes PTPL_C. */
int blkmap_pr_report_caps_async(struct blkmap_dev *dev, struct blkmap_pr_caps *out, blkmap_cmd_cb cb,
				void *private_data);
int blkmap_pr_report_caps(struct blkmap_dev *dev, struct blkmap_pr_caps *out);

/* Conveniences over blkmap_pr_out(). */
int blkmap_pr_register(struct blkmap_dev *dev, uint64_t old_key, uint64_t new_key, int ignore_existing);
int blkmap_pr_reserve(struct blkmap_dev *dev, uint64_t key, enum blkmap_pr_type type);
int blkmap_pr_release(struct blkmap_dev *dev, uint64_t key, enum blkmap_pr_type type);
int blkmap_pr_preempt(struct blkmap_dev *dev, uint64_t key, uint64_t victim_key, enum blkmap_pr_type type,
		      int abort);
int blkmap_pr_clear(struct blkmap_dev *dev, uint64_t key);

/* ---- volumes (RFC 5663 volume array + RFC 8154 SCSI base volume) ------------------------------ */

enum blkmap_vol_type {           /* RFC 5663 pnfs_block_volume_type4, RFC 8154 pnfs_scsi_volume_type4 */
	BLKMAP_VOL_SIMPLE = 0,   /* a LUN found by its signature */
	BLKMAP_VOL_SLICE = 1,
	BLKMAP_VOL_CONCAT = 2,
	BLKMAP_VOL_STRIPE = 3,
	BLKMAP_VOL_SCSI = 4,     /* PNFS_SCSI_VOLUME_BASE: a LUN found by its VPD 0x83 designator */
};

#define BLKMAP_MAX_VOLUMES 1024     /* entries in one array */
#define BLKMAP_MAX_MEMBERS 256      /* members of one concat or stripe */
#define BLKMAP_MAX_DEPTH 16         /* levels from the top to a leaf */
#define BLKMAP_MAX_SIG_COMP 16      /* RFC 5663 PNFS_BLOCK_MAX_SIG_COMP */
#define BLKMAP_MAX_SIG_BYTES 4096   /* contents of one signature component */
#define BLKMAP_MIN_STRIPE_UNIT 4096 /* bytes; device-mapper's smallest chunk (8 sectors) */

struct blkmap_sig_comp {
	int64_t offset_bytes; /* from the start of the device; negative: from its end */
	uint32_t len;
	const uint8_t *bytes; /* copied by blkmap_vol_add_simple() */
};

/* An empty volume array. Caller frees with blkmap_vol_free(). Returns 0 or -ENOMEM. */
int blkmap_vol_create(struct blkmap_vol **out);
/* Frees the array and drops the device references its leaves hold. Safe on NULL. */
void blkmap_vol_free(struct blkmap_vol *vol);
/* Last failure on this volume object ("" if none). Borrowed until the next call on it. */
const char *blkmap_vol_errstr(const struct blkmap_vol *vol);

/* Append entries; the new entry's index goes to *index (may be NULL). Members must already exist
 * (indices below the new one). Checks only what each entry alone can break; blkmap_vol_validate()
 * checks the whole. Return 0 or -EINVAL / -E2BIG / -ENOMEM with blkmap_vol_errstr() set. */
int blkmap_vol_add_simple(struct blkmap_vol *vol, const struct blkmap_sig_comp *comps, unsigned ncomps,
			  uint32_t *index);
int blkmap_vol_add_scsi(struct blkmap_vol *vol, enum blkmap_desig_type type, enum blkmap_code_set code_set,
			const uint8_t *designator, size_t len, uint64_t pr_key, uint32_t *index);
int blkmap_vol_add_slice(struct blkmap_vol *vol, uint64_t start_bytes, uint64_t length_bytes,
			 uint32_t member, uint32_t *index);
int blkmap_vol_add_concat(struct blkmap_vol *vol, const uint32_t *members, unsigned nmembers,
			  uint32_t *index);
int blkmap_vol_add_stripe(struct blkmap_vol *vol, uint64_t unit_bytes, const uint32_t *members,
			  unsigned nmembers, uint32_t *index);

/* Check the array as a whole: at least one entry, the last is the top; references only backwards,
 * each entry used exactly once (a tree), bounded depth and counts; slice start and length multiples
 * of 512 and inside their volume; stripe unit a power of two of at least 8 sectors; stripe members
 * of equal size. Sizes of leaves are checked when known (bound devices or blkmap_vol_set_leaf_size).
 * Returns 0 or -EINVAL with blkmap_vol_errstr() naming the entry. */
int blkmap_vol_validate(struct blkmap_vol *vol);

/* Inspection. Out-of-range indices return 0 / -1 / NULL. */
unsigned blkmap_vol_count(const struct blkmap_vol *vol);
enum blkmap_vol_type blkmap_vol_type(const struct blkmap_vol *vol, uint32_t index);
/* "simple", "slice", "concat", "stripe", "scsi"; "?" for other values. Static strings. */
const char *blkmap_vol_type_name(enum blkmap_vol_type t);
int blkmap_vol_is_leaf(const struct blkmap_vol *vol, uint32_t index);
/* Size in bytes of entry index (the top is blkmap_vol_count() - 1), or 0 while a leaf below it has no
 * size. Sizes are computed by blkmap_vol_validate(). */
uint64_t blkmap_vol_size_bytes(const struct blkmap_vol *vol, uint32_t index);
unsigned blkmap_vol_nmembers(const struct blkmap_vol *vol, uint32_t index);
uint32_t blkmap_vol_member(const struct blkmap_vol *vol, uint32_t index, unsigned k);
/* slice: start and length; stripe: unit (others 0) */
uint64_t blkmap_vol_slice_start(const struct blkmap_vol *vol, uint32_t index);
uint64_t blkmap_vol_slice_length(const struct blkmap_vol *vol, uint32_t index);
uint64_t blkmap_vol_stripe_unit(const struct blkmap_vol *vol, uint32_t index);
/* simple: signature components (borrowed for the volume's life) */
unsigned blkmap_vol_nsig(const struct blkmap_vol *vol, uint32_t index);
const struct blkmap_sig_comp *blkmap_vol_sig(const struct blkmap_vol *vol, uint32_t index, unsigned k);
/* scsi: designator (borrowed), PR key */
const struct blkmap_designator *blkmap_vol_designator(const struct blkmap_vol *vol, uint32_t index);
uint64_t blkmap_vol_pr_key(const struct blkmap_vol *vol, uint32_t index);

/* Leaves. bind takes its own reference on dev (dropped by unbind, rebinding, or blkmap_vol_free) and
 * gives the leaf the device's size. set_leaf_size gives an unbound leaf a size (tools that know it
 * from a label; tests). Both return 0 or -EINVAL (not a leaf). */
int blkmap_vol_bind(struct blkmap_vol *vol, uint32_t index, struct blkmap_dev *dev);
int blkmap_vol_set_leaf_size(struct blkmap_vol *vol, uint32_t index, uint64_t size_bytes);
struct blkmap_dev *blkmap_vol_leaf_dev(const struct blkmap_vol *vol, uint32_t index); /* borrowed */

/* Text form: one entry per line, index = line order (blank lines and '#' comments ignored):
 *   simple OFFSET:HEX[,OFFSET:HEX...]      signature components; OFFSET may be negative
 *   scsi naa|t10|eui64|name|vendor binary|ascii|utf8 HEX [key=0xKEY]
 *   slice START LENGTH VOLUME
 *   concat VOLUME...
 *   stripe UNIT VOLUME...
 * Numbers are decimal or 0x hex, sizes may end in K, M, G or T (powers of 1024). Parse errors name the
 * line: "line 3: ...". blkmap_vol_parse_text: caller frees *out with blkmap_vol_free(); on failure
 * *out is NULL and err (when not NULL) holds the reason. blkmap_vol_format_text: caller frees the
 * string with free(). */
int blkmap_vol_parse_text(const char *text, struct blkmap_vol **out, char *err, size_t errlen);
int blkmap_vol_format_text(const struct blkmap_vol *vol, char **out);

/* ---- mapping ---------------------------------------------------------------------------------- */

/* One contiguous piece of a volume range on one leaf. */
struct blkmap_run {
	uint32_t leaf;             /* volume array index of the leaf (simple or scsi) */
	uint64_t leaf_offset_bytes;
	uint64_t length_bytes;
	uint64_t vol_offset_bytes; /* where the piece starts in the top volume */
};

/* Map [off_bytes, off_bytes + len_bytes) of the top volume to runs in volume order (adjacent pieces
 * contiguous on the same leaf are merged): the mapping the device-mapper table expresses. The range
 * must lie inside the volume (-ERANGE); every leaf on the way needs a size (-ENODEV). *runs is
 * allocated, caller frees with free(). The volume must have passed blkmap_vol_validate(). */
int blkmap_vol_map(struct blkmap_vol *vol, uint64_t off_bytes, uint64_t len_bytes,
		   struct blkmap_run **runs, size_t *nruns);

/* For SCSI layouts: register each SCSI leaf's PR key (RFC 8154 sbv_pr_key) on its bound device with
 * REGISTER AND IGNORE EXISTING KEY, as a client does before I/O. Sync. Returns 0, or the first
 * failure (-ENODEV for an unbound leaf) with blkmap_errstr() naming the device. Leaves without a key
 * are skipped. */
int blkmap_vol_pr_register(struct blkmap_vol *vol);

/* ---- volume I/O (the engine) ------------------------------------------------------------------- */

/* Read or write the top volume through its bound leaves: the range is mapped to runs, leaf-contiguous
 * runs are gathered into single commands (scatter/gather over the caller's iovecs), commands are
 * capped by each device's max transfer and queued per device (queue depth from the context), all
 * driven by the context's loop. Offsets and lengths must be multiples of every touched device's
 * block size. Retries on UNIT ATTENTION and across reconnects of a dropped session until the command
 * timeout; on failure res names the leaf, device and LBA. iovec array copied, buffers borrowed until
 * the callback. All leaves must be bound to devices of one context. */
int blkmap_vol_readv_async(struct blkmap_vol *vol, uint64_t off_bytes, const struct iovec *iov, int niov,
			   blkmap_io_cb cb, void *private_data);
int blkmap_vol_writev_async(struct blkmap_vol *vol, uint64_t off_bytes, const struct iovec *iov, int niov,
			    blkmap_io_cb cb, void *private_data);
int blkmap_vol_pread(struct blkmap_vol *vol, void *buf, size_t len, uint64_t off_bytes);
int blkmap_vol_pwrite(struct blkmap_vol *vol, const void *buf, size_t len, uint64_t off_bytes);

/* Flush the volume's leaves (blkmap_dev_flush on each distinct bound device), every one at once from
 * the context's loop; the request completes when all have answered. blkmap_vol_flush_async: every
 * leaf, which must all be bound (-ENODEV otherwise). blkmap_vol_flush_ranges_async: only the leaves
 * holding a byte of one of the top-volume ranges (-ERANGE outside the volume, -EINVAL when the
 * ranges are all empty); the array is read before the call returns. On failure res names the first
 * failing leaf and device; the other flushes still ran. blkmap_vol_flush: sync, every leaf, with
 * blkmap_vol_errstr() naming the device on failure. */
struct blkmap_range {
	uint64_t off_bytes;
	uint64_t len_bytes;
};
int blkmap_vol_flush_async(struct blkmap_vol *vol, blkmap_io_cb cb, void *private_data);
int blkmap_vol_flush_ranges_async(struct blkmap_vol *vol, const struct blkmap_range *ranges, size_t nranges,
				  blkmap_io_cb cb, void *private_data);
int blkmap_vol_flush(struct blkmap_vol *vol);
/* Only the leaves i with leaves[i] != 0 (an array of blkmap_vol_count() entries, read before the call
 * returns); -EINVAL when none is set or one is not a leaf. */
int blkmap_vol_flush_leaves_async(struct blkmap_vol *vol, const uint8_t *leaves, blkmap_io_cb cb,
				  void *private_data);

/* ---- device-mapper tables --------------------------------------------------------------------- */

/* The table(s) for a volume, in dmsetup's text format ("START LENGTH linear DEV OFFSET",
 * "START LENGTH striped N CHUNK DEV OFFSET ..."; 512-byte sectors, lines joined with '\n'). When one
 * table cannot express the volume (a stripe whose members are not contiguous on one device, e.g. a
 * stripe of concats) the members become devices of their own, stacked below: dev[] lists them in
 * creation order, the top (named `name`) last; stacked ones are named "<name>-v<index>" and referred to
 * as /dev/mapper/<that>. Leaf devices appear as their path when bound to a block device, as their
 * display name when bound to something else (not loadable into dm), and as "leaf<index>" unbound. */
struct blkmap_table_dev {
	char *name;
	char *text;
	uint32_t vol_index; /* the volume entry this device implements */
};
struct blkmap_table {
	unsigned ndev;
	struct blkmap_table_dev *dev;
};
/* The volume must be validated and all sizes known. Caller frees with blkmap_table_free(). */
int blkmap_vol_table(struct blkmap_vol *vol, const char *name, struct blkmap_table **out);
void blkmap_table_free(struct blkmap_table *t);
/* All devices as dmsetup prints several ("NAME: START LENGTH TARGET ARGS" per line); one device: its
 * table alone. Caller frees with free(). */
int blkmap_table_format(const struct blkmap_table *t, char **out);

/* Create the devices with libdevmapper (stacked ones first; on failure those created are removed).
 * Returns 0, -ENOTSUP when the host has no device-mapper (/dev/mapper/control missing; err says so in
 * one line), or -errno with err set. err may be NULL. */
int blkmap_table_apply(const struct blkmap_table *t, char *err, size_t errlen);
/* Remove the devices (top first). Same returns as apply. */
int blkmap_table_remove(const struct blkmap_table *t, char *err, size_t errlen);

/* ---- discovery -------------------------------------------------------------------------------- */

struct blkmap_discover_opts {
	const char *const *portals; /* "iscsi://[user%pass@]host[:port]": SendTargets + REPORT LUNS */
	unsigned nportals;
	const char *const *paths;   /* extra candidates: block devices or regular files */
	unsigned npaths;
	int scan_local;             /* local block devices from /sys/block (loop, sd, dm, vd, nvme) */
	const char *sysfs_block;    /* NULL: "/sys/block" */
};

/* One leaf's outcome. */
struct blkmap_match {
	uint32_t leaf;           /* volume array index */
	char dev_name[512];      /* the device it resolved to */
	char how[512];           /* "signature 512:504e4653... (16 bytes) and -4096:... (8 bytes)" or
				    "designator naa:6001405..." */
	unsigned candidates;     /* candidates examined */
	unsigned also_matched;   /* further candidates that matched too (multipath); first one wins */
};
struct blkmap_report {
	unsigned nmatches;
	struct blkmap_match *matches;
	unsigned ncandidates;    /* devices found (after de-duplication) */
	char **candidate_names;  /* their names, in examination order */
};

/* Find candidate devices (portals first, then paths, then local devices), open them (cached in the
 * context: each device is opened and each signature region read once), match every leaf of vol by
 * signature (all components must match) or designator, and bind the leaves. Unreadable candidates
 * and unreachable portals are skipped. Fails with -ENODEV naming the first unmatched leaf (and the
 * first portal that failed, if one did), or -EINVAL if two leaves matched the same device. rep (may be NULL): caller frees with blkmap_report_free(); filled also on failure
 * as far as it got. */
int blkmap_resolve(struct blkmap_ctx *ctx, struct blkmap_vol *vol, const struct blkmap_discover_opts *opts,
		   struct blkmap_report **rep);
void blkmap_report_free(struct blkmap_report *rep);
/* Drop the discovery cache (devices and the signature data read from them). Devices bound to a
 * volume stay open (the volume holds them); the sessions of candidates that matched nothing close. */
void blkmap_cache_flush(struct blkmap_ctx *ctx);

#endif
