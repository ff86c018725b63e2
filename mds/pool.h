/* The pool: LUN labels, the pool's geometry and volume, pool.conf, and opening or formatting a pool
 * directory. A label in each LUN's first MiB says which pool the LUN belongs to and where; its first
 * bytes double as the RFC 5663 signature the MDS advertises, so clients find LUNs by content. */
#ifndef MDS_POOL_H
#define MDS_POOL_H

#include "mds/store.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- CRC32C (Castagnoli), as iSCSI uses it --------------------------------------------------- */

/* Continue a CRC32C over buf: start with crc = 0; the result of one call over all bytes equals that
 * of chained calls over pieces. */
uint32_t mds_crc32c(uint32_t crc, const void *buf, size_t len);

/* ---- the LUN label ------------------------------------------------------------------------------ */

/*
 * On-disk label, little-endian, in the first MDS_LABEL_BYTES of the LUN (offset 0):
 *   0   8  magic "PNFSPOOL"          40  8  LUN size (bytes, at format)
 *   8   4  version (1)               48  8  data start (bytes)
 *   12  4  label size (512)          56  8  data length (bytes)
 *   16 16  pool UUID                 64  8  stripe unit (bytes; 0 for concat)
 *   32  4  LUN index                 72  4  volume type (1 stripe, 2 concat)
 *   36  4  LUN count                 76  4  layout block size (bytes)
 *   80  8  volume size (bytes)       88  8  format time (seconds since the epoch)
 *   96 .. 507 zero;  508 4  CRC32C of bytes 0..507
 * Bytes 0..35 (magic, version, size, UUID, index) are LUN i's signature: unique to that LUN of that
 * pool, and the same for as long as the pool exists.
 */
#define MDS_LABEL_BYTES 512u
#define MDS_LABEL_VERSION 1u
#define MDS_LABEL_MAGIC "PNFSPOOL"
#define MDS_LABEL_AREA_BYTES (1u << 20)  /* the data area starts here */
#define MDS_LABEL_SIG_OFFSET 0
#define MDS_LABEL_SIG_BYTES 36u

struct mds_pool_label {
	uint8_t pool_uuid[16];
	uint32_t lun_index, lun_count;
	uint64_t lun_bytes;
	uint64_t data_start_bytes, data_bytes;
	uint64_t stripe_unit_bytes;
	enum mds_volume_type volume_type;
	uint32_t block_bytes;
	uint64_t volume_bytes;
	uint64_t format_time;
};

/* Encode into out (MDS_LABEL_BYTES bytes), checksum included. */
void mds_label_encode(const struct mds_pool_label *l, uint8_t out[MDS_LABEL_BYTES]);

/* Decode and verify len bytes read from a LUN's start (at least MDS_LABEL_BYTES). Returns 0, or
 * -ENOENT (no label: the magic is absent), -EPROTONOSUPPORT (a label of another version), -EBADMSG
 * (a label that is damaged or inconsistent: checksum, sizes, index) with the reason in why (may be
 * NULL). */
int mds_label_decode(const uint8_t *buf, size_t len, struct mds_pool_label *out, char *why,
		     size_t whylen);

/* Whether buf (a LUN's first bytes) carries the label magic, intact or not. */
int mds_label_present(const uint8_t *buf, size_t len);

/* The signature identifying LUN l->lun_index of the pool: MDS_LABEL_SIG_BYTES bytes at byte offset
 * *offset of the LUN, written into bytes (at least MDS_LABEL_SIG_BYTES). */
void mds_label_signature(const struct mds_pool_label *l, int64_t *offset, uint8_t *bytes, size_t *len);

/* The label LUN i of a pool gets from the pool's geometry (store format). */
void mds_label_from_format(const struct mds_store_format *f, uint32_t lun_index, uint64_t format_time,
			   struct mds_pool_label *out);

/* Compare a label read from LUN i with the store's geometry; 0 or -EINVAL with why. */
int mds_label_check(const struct mds_pool_label *l, const struct mds_store_format *f, uint32_t lun_index,
		    char *why, size_t whylen);

/* ---- geometry --------------------------------------------------------------------------------- */

#define MDS_POOL_MIN_STRIPE_UNIT 4096u
#define MDS_POOL_DEFAULT_STRIPE_UNIT (1u << 20)
#define MDS_POOL_DEFAULT_BLOCK 4096u

/* Plan a pool over LUNs of the given sizes (bytes) and logical block sizes: each LUN's data area
 * starts at MDS_LABEL_AREA_BYTES; a stripe (unit: power of two >= 4 KiB, a multiple of block_bytes)
 * gives every LUN the smallest data length rounded down to the unit; a concat (unit 0) gives each
 * LUN its own data length rounded down to block_bytes. block_bytes (power of two >= 512) must be a
 * multiple of every LUN's block size. pool_uuid (16 bytes) is copied in. Returns 0 or -EINVAL with
 * why. */
int mds_pool_plan(const uint64_t *lun_bytes, const uint32_t *lun_block_bytes, uint32_t nluns,
		  enum mds_volume_type type, uint64_t stripe_unit_bytes, uint32_t block_bytes,
		  const uint8_t *pool_uuid, struct mds_store_format *out, char *why, size_t whylen);

/* A random (version 4) UUID, and its text form (37 bytes with the NUL). */
int mds_uuid_generate(uint8_t uuid[16]);
void mds_uuid_format(const uint8_t uuid[16], char out[37]);
int mds_uuid_parse(const char *s, uint8_t uuid[16]);

/* ---- pool.conf ---------------------------------------------------------------------------------- */

/*
 * pool.conf, in the pool directory, lists the LUNs in volume order. Lines:
 *   # comment                        (and blank lines)
 *   pool UUID                        optional; must match the store when present
 *   lun INDEX URL                    one per LUN, INDEX 0..N-1 each exactly once
 * URL is a LUN as blkmap opens it (iscsi://[user%pass@]host[:port]/iqn/lun, or a device path).
 * Errors name the line: "pool.conf:3: ...". The file may hold CHAP secrets: it is written 0600.
 */
#define MDS_POOL_CONF "pool.conf"
#define MDS_POOL_VOLUME_XDR "volume.xdr"
#define MDS_POOL_URL_MAX 1024

struct mds_pool_conf {
	uint32_t nluns;
	char *urls[MDS_MAX_LUNS];
	int have_uuid;
	uint8_t pool_uuid[16];
};

/* Parse text (NUL-terminated); name labels errors ("pool.conf"). out is filled (caller frees with
 * mds_pool_conf_free, also after a failure). Returns 0, -EINVAL with err, -ENOMEM. */
int mds_pool_conf_parse(const char *text, const char *name, struct mds_pool_conf *out, char *err,
			size_t errlen);
/* Read DIR/pool.conf. -ENOENT if there is none. */
int mds_pool_conf_read(const char *dir, struct mds_pool_conf *out, char *err, size_t errlen);
/* Write DIR/pool.conf (atomically: a temporary file renamed, mode 0600). */
int mds_pool_conf_write(const char *dir, const struct mds_pool_conf *conf, char *err, size_t errlen);
void mds_pool_conf_free(struct mds_pool_conf *conf);
/* Finish a pool file written to tmp (f open on it; rc the writer's status so far): flushed to disk,
 * closed and renamed over path; on any failure removed, with err naming path. Returns 0 or -errno. */
int mds_pool_file_commit(FILE *f, int rc, const char *tmp, const char *path, char *err, size_t errlen);

/* ---- the pool volume ------------------------------------------------------------------------- */

struct blkmap_ctx;
struct blkmap_dev;
struct blkmap_vol;

/* The pool's volume in blkmap's model: for each LUN i, simple(signature of LUN i) at index 2i (its
 * size set from the store) and slice(data area) at 2i+1; then the top, stripe(unit, slices) or
 * concat(slices). Leaves are not bound. Caller frees *out with blkmap_vol_free. Returns 0 or -errno
 * with err. */
int mds_pool_volume_build(const struct mds_store_format *f, struct blkmap_vol **out, char *err,
			  size_t errlen);
/* The pool volume's top over the slices of its LUNs (slices[0..f->nluns)), stripe or concat as the
 * format says (its index in *top when top is not NULL), and the whole volume validated. Returns 0
 * or -errno (blkmap_vol_errstr says why). */
int mds_pool_volume_top(struct blkmap_vol *vol, const struct mds_store_format *f, const uint32_t *slices,
			uint32_t *top);
#define MDS_POOL_VOL_SIMPLE(i) (2u * (i))
#define MDS_POOL_VOL_SLICE(i) (2u * (i) + 1u)

/* The volume as RFC 5663 describes it to clients (GETDEVICEINFO's da_addr_body for
 * LAYOUT4_BLOCK_VOLUME): vol (simple, slice, concat, stripe entries; the last one the top) becomes
 * a pnfs_block_deviceaddr4, encoded by proto into out (layout type and body). Caller frees out with
 * proto_device_addr_free. Returns 0, -EINVAL (an entry with no block-layout form, e.g. a SCSI
 * volume) or -ENOMEM, with err. */
struct device_addr4;
int mds_pool_deviceaddr(const struct blkmap_vol *vol, struct device_addr4 *out, char *err,
			size_t errlen);

/* DIR/volume.xdr holds exactly that body (the XDR of the pool's pnfs_block_deviceaddr4).
 * write: built from the geometry, written atomically; check: 0 if the file holds what the
 * geometry gives, -ENOENT if absent, -EINVAL (differs) with why. */
int mds_pool_volume_xdr_write(const char *dir, const struct mds_store_format *f, char *err,
			      size_t errlen);
int mds_pool_volume_xdr_check(const char *dir, const struct mds_store_format *f, char *why,
			      size_t whylen);

/* A URL for humans: any CHAP password removed ("iscsi://user%pass@h/..." -> "iscsi://user@h/..."). */
void mds_pool_url_display(const char *url, char *out, size_t outlen);

/* ---- formatting, probing and opening a pool directory --------------------------------------------- */

/* The persistent-reservation key of a pool's MDS (RFC 8154 fencing). A server offering SCSI layouts
 * holds the LUNs with an EXCLUSIVE ACCESS - REGISTRANTS ONLY reservation under this key, and the
 * reservation outlives the server (a fenced client must stay fenced). So format, probe and open
 * register the key on each iSCSI LUN (REGISTER AND IGNORE EXISTING KEY) before reading it: a new
 * session is a new initiator port, unregistered until then. Harmless on unreserved LUNs. */
#define MDS_POOL_PR_KEY 0x504e465300000000ull

struct mds_pool_format_opts {
	enum mds_volume_type type;     /* 0: MDS_VOL_STRIPE */
	uint64_t stripe_unit_bytes;    /* 0: MDS_POOL_DEFAULT_STRIPE_UNIT (stripe only) */
	uint32_t block_bytes;          /* 0: MDS_POOL_DEFAULT_BLOCK */
	int force;                     /* overwrite LUNs that carry a pool label */
	uint64_t map_bytes;            /* LMDB map size, 0: the store's default */
};

/* Format a new pool in dir (created if missing; refused if it holds a pool) on the LUNs given by
 * URL in volume order: write every LUN's label area (label at offset 0, the rest of the first MiB
 * zeroed), read the labels back (two URLs for one LUN are caught), create the store (root
 * directory, the whole volume free) and pool.conf. A LUN that already carries a label is refused
 * without force, naming it. uuid_out (may be NULL) gets the pool UUID. Returns 0 or -errno with
 * err. */
int mds_pool_format(struct blkmap_ctx *ctx, const char *dir, const char *const *urls, uint32_t nluns,
		    const struct mds_pool_format_opts *opts, uint8_t *uuid_out, char *err,
		    size_t errlen);

enum mds_pool_lun_state {
	MDS_LUN_OK = 0,
	MDS_LUN_UNREACHABLE,   /* could not be opened */
	MDS_LUN_UNREADABLE,    /* opened, label area could not be read */
	MDS_LUN_NO_LABEL,
	MDS_LUN_BAD_LABEL,     /* damaged or of an unknown version */
	MDS_LUN_MISMATCH,      /* a good label, but not this LUN of this pool, the LUN shrank, or its
				  SCSI designator is not the one recorded at format */
};

struct mds_pool_lun_status {
	char url[MDS_POOL_URL_MAX];    /* for display: password removed */
	enum mds_pool_lun_state state;
	uint64_t size_bytes;           /* 0 when unreachable */
	uint32_t block_bytes;
	int have_label;
	struct mds_pool_label label;
	uint8_t label_raw[MDS_LABEL_BYTES]; /* the label's bytes as read (when have_label) */
	char designator[600];          /* the LUN's preferred SCSI designator as text, "" if none */
	int ptpl_c;                    /* PERSISTENT RESERVE IN REPORT CAPABILITIES: 1 the LUN is persist-
	                                * through-power-loss capable (REGISTER may set APTPL, as stock Linux
	                                * clients do), 0 not (tgt), -1 unknown (not iSCSI, no answer) */
	int desig_recorded;            /* the store holds the one it had at format (and it matched) */
	char why[320];                 /* what is wrong, "" when OK */
};
const char *mds_pool_lun_state_name(enum mds_pool_lun_state s);

/* Probe each LUN of the pool in store order (the store opened by the caller, pool.conf already
 * read): open, read, decode and check its label, and compare its SCSI designator with the one the
 * store recorded at format; one status per LUN (st[conf->nluns]), never stopping at the first
 * problem. When devs is not NULL, devs[i] keeps LUN i's open device (NULL if
 * it could not be opened; caller closes them). Returns the number of LUNs not OK. */
int mds_pool_probe(struct blkmap_ctx *ctx, struct mds_store *store, const struct mds_pool_conf *conf,
		   struct mds_pool_lun_status *st, struct blkmap_dev **devs);

struct mds_pool;

struct mds_pool_open_opts {
	int rdonly;            /* the store read-only (tools beside a running server) */
	uint64_t map_bytes;    /* LMDB map size, 0: default */
};

/* Open the pool in dir at server start: pool.conf, the store, and every LUN, whose label must match
 * the store (pool UUID, index, count, geometry), whose SCSI designator must be the one recorded at
 * format (recorded now when the store has none: a pool formatted before it was kept) and whose size
 * must still hold its data area. The first LUN that is missing or mismatched fails the open with a
 * message naming it by URL and saying what is wrong. On success the pool volume's leaves are bound
 * to the LUNs, and each LUN's label as read becomes an identity region of its device (blkmap checks
 * it after every reconnect; see blkmap_dev_expect). Caller closes with mds_pool_close. */
int mds_pool_open(struct blkmap_ctx *ctx, const char *dir, const struct mds_pool_open_opts *opts,
		  struct mds_pool **out, char *err, size_t errlen);
void mds_pool_close(struct mds_pool *p);

/* Borrowed for the pool's life. */
struct mds_store *mds_pool_store(const struct mds_pool *p);
struct blkmap_vol *mds_pool_volume(const struct mds_pool *p);
uint32_t mds_pool_nluns(const struct mds_pool *p);
struct blkmap_dev *mds_pool_lun_dev(const struct mds_pool *p, uint32_t i);
const struct mds_pool_label *mds_pool_lun_label(const struct mds_pool *p, uint32_t i);
const char *mds_pool_lun_url(const struct mds_pool *p, uint32_t i);  /* as in pool.conf */

/* Whether LUN i is in service: 0, or -BLKMAP_EWRONGLUN (EMEDIUMTYPE) while the LUN answering at its
 * URL is not the pool's (since a reconnect), with why (may be NULL) saying what differs. */
int mds_pool_lun_identity(const struct mds_pool *p, uint32_t i, char *why, size_t whylen);
/* How many LUNs are out of service now; the first one's index goes to *first (may be NULL). */
uint32_t mds_pool_luns_out(const struct mds_pool *p, uint32_t *first);
/* How many LUNs lost their session and are not yet checked again (see blkmap_dev_checked): in
 * service as far as is known, but not to be handed out until the check says they are the pool's. */
uint32_t mds_pool_luns_unchecked(const struct mds_pool *p);

/* What a label read from a LUN says, next to the one expected (a pool label of another pool, of
 * another LUN of this pool, of this LUN written at another format, or none), in words. */
void mds_label_explain(const uint8_t *now, size_t len, const struct mds_pool_label *expected, char *why,
		       size_t whylen);

#endif
