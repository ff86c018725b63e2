/* The MDS's durable store: every piece of pool metadata (namespace, extent maps, free space, client
 * records) in one LMDB environment in the pool directory, changed only inside explicit transactions.
 * Every mutating call is all-or-nothing inside its transaction (a failed call leaves the transaction
 * exactly as it was), so a COMPOUND whose third op fails can still commit the first two. */
#ifndef MDS_STORE_H
#define MDS_STORE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Conventions
 * - Every function returns 0 or a negative errno. Errors with a fixed meaning here:
 *     -ENOENT    no such object (fileid, name, client, pending range)
 *     -EEXIST    the name or record already exists
 *     -ENOTDIR   a directory was required; -EISDIR a directory was not allowed
 *     -ENOTEMPTY directory not empty;  -EINVAL bad argument (bad name, bad cookie, bad range)
 *     -ENAMETOOLONG name > MDS_NAME_MAX bytes or symlink target > MDS_SYMLINK_MAX
 *     -ENOSPC    the volume has no room for an allocation, or the LMDB map is full
 *     -ENODATA   an extent operation met a hole where allocated blocks were required
 *     -EROFS     a change was attempted in a read-only transaction or store
 *     -EUCLEAN   the store contradicts itself (corruption); -EPROTO unknown store format
 *   mds_store_strerror() names them in the store's terms; mds_store_errstr() gives the detail
 *   (the LMDB call and its message) of the last failure on a store.
 * - Sizes and offsets are bytes (uint64_t). Extent ranges must be multiples of the pool's block
 *   size (mds_store_meta.block_bytes); MDS_TO_END as a length means "to the end of the file".
 * - One writer at a time: mds_txn_begin(rw) blocks while another write transaction is open, in this
 *   process or another. Read transactions never block and see a consistent snapshot. A store handle
 *   is used by one thread at a time (the server's event loop).
 * - Iteration callbacks (mds_dir_iter, mds_orphan_iter, mds_pending_iter, mds_client_iter) must not
 *   change the store: collect what to change, then change it after the iteration returns.
 * - Each mutating call runs in a nested LMDB transaction, whose cost grows with the dirty pages of
 *   the enclosing one (about 10 us per allocation in a transaction of 1,000 calls, 30 us at 20,000):
 *   keep transactions to one COMPOUND.
 */

#define MDS_STORE_FORMAT_VERSION 1
#define MDS_NAME_MAX 255
#define MDS_SYMLINK_MAX 4096
#define MDS_OWNER_MAX 1024     /* NFS4_OPAQUE_LIMIT: client owner bytes */
#define MDS_PRINCIPAL_MAX 255
#define MDS_LINK_MAX 65000u
#define MDS_MAX_LUNS 256
#define MDS_TO_END UINT64_MAX
/* The first cookie a directory entry gets: NFSv4 reserves 0 (start), 1 and 2. */
#define MDS_COOKIE_FIRST 3

struct mds_store;
struct mds_txn;

/* ---- the store ---------------------------------------------------------------------------- */

enum mds_volume_type {
	MDS_VOL_STRIPE = 1,
	MDS_VOL_CONCAT = 2,
};

struct mds_store_lun {
	uint64_t size_bytes;       /* the LUN's capacity when formatted */
	uint64_t data_start_bytes; /* where the data area starts on the LUN */
	uint64_t data_bytes;       /* the data area's length used by the volume */
};

/* What a new store describes: the pool's identity and geometry. */
struct mds_store_format {
	uint8_t pool_uuid[16];
	uint32_t block_bytes;        /* layout block size: allocation granule, power of two >= 512 */
	uint64_t stripe_unit_bytes;  /* stripe unit (also the preferred alignment); 0 for concat */
	enum mds_volume_type volume_type;
	uint64_t volume_bytes;       /* the pool volume's size, a multiple of block_bytes */
	uint32_t nluns;
	struct mds_store_lun luns[MDS_MAX_LUNS];
};

struct mds_store_meta {
	uint32_t format_version;
	uint8_t pool_uuid[16];
	uint32_t block_bytes;
	uint64_t stripe_unit_bytes;
	enum mds_volume_type volume_type;
	uint64_t volume_bytes;
	uint32_t nluns;
	uint64_t root_fileid;
	uint64_t next_fileid;
	uint64_t boot;               /* bumped by mds_store_bump_boot at every server start */
};

struct mds_store_opts {
	uint64_t map_bytes;          /* LMDB map size; 0: MDS_STORE_DEFAULT_MAP_BYTES (or, when
					opening, the size the environment already has, if larger) */
	int rdonly;                  /* MDB_RDONLY: safe alongside a running server */
};
#define MDS_STORE_DEFAULT_MAP_BYTES (8ull << 30)

/* Create a new store in directory dir (which must exist and hold no store: -EEXIST), with the
 * root directory (mode 0755, uid/gid 0) and the whole volume free. opts may be NULL.
 * On success *out is an open read-write store; caller closes with mds_store_close. */
int mds_store_create(const char *dir, const struct mds_store_format *fmt,
		     const struct mds_store_opts *opts, struct mds_store **out);

/* Open an existing store (-ENOENT when dir holds none, -EPROTO for an unknown format).
 * opts may be NULL (read-write, default map). Caller closes with mds_store_close. */
int mds_store_open(const char *dir, const struct mds_store_opts *opts, struct mds_store **out);

/* Close; every transaction must have ended. Safe on NULL. */
void mds_store_close(struct mds_store *st);

/* A static description of a store error code (-errno). */
const char *mds_store_strerror(int err);
/* The detail of the last failure on this store ("" if none); valid until the next call. */
const char *mds_store_errstr(const struct mds_store *st);

/* The pool geometry read at open (immutable): block size, stripe unit, volume size, LUN table.
 * Borrowed pointer, valid while the store is open. */
const struct mds_store_format *mds_store_format(const struct mds_store *st);

/* ---- transactions ----------------------------------------------------------------------- */

enum { MDS_TXN_RW = 0, MDS_TXN_RDONLY = 1 };

/* Begin a transaction; *out is freed by commit or abort. */
int mds_txn_begin(struct mds_store *st, unsigned flags, struct mds_txn **out);
/* Commit durably (fsync'd before return); the txn is freed whatever the result. */
/* A write transaction inside parent (which must not be used until this one ends): its commit
 * makes its changes part of parent's, its abort drops them; nothing is durable before parent's
 * own commit. Its clock is read anew. 0 or -errno. */
int mds_txn_begin_nested(struct mds_txn *parent, struct mds_txn **out);
int mds_txn_commit(struct mds_txn *t);
/* fn(t, arg) in a read-write transaction of its own: committed when fn returns 0, aborted
 * otherwise. Returns fn's error or the commit's. */
int mds_txn_run(struct mds_store *st, int (*fn)(struct mds_txn *t, void *arg), void *arg);
/* Commit with the data pages synced but the meta page only written (LMDB's MDB_NOMETASYNC for
 * this commit): the store stays consistent whatever happens, but a crash may undo this commit
 * until the next sync of the file, which is the next commit's data sync or mds_store_sync().
 * Nothing that depends on it may be told to anyone before then. The txn is freed. */
int mds_txn_commit_unsynced_meta(struct mds_txn *t);
/* The ID of the last committed write transaction (grows with every commit that wrote). */
uint64_t mds_store_last_txnid(struct mds_store *st);
/* Sync the store's file (an fdatasync): every commit so far is durable. 0 or -errno. */
int mds_store_sync(struct mds_store *st);
/* Discard every change; the txn is freed. Safe on NULL. */
void mds_txn_abort(struct mds_txn *t);
struct mds_store *mds_txn_store(const struct mds_txn *t);

struct mds_time {
	int64_t sec;
	uint32_t nsec;
};
/* The time stamped on every change in this transaction (taken at begin; settable for tests). */
struct mds_time mds_txn_now(const struct mds_txn *t);
void mds_txn_set_now(struct mds_txn *t, struct mds_time now);

/* ---- meta and statistics ------------------------------------------------------------------ */

int mds_store_meta(struct mds_txn *t, struct mds_store_meta *out);
/* Increment the boot counter (write verifiers, grace); *boot gets the new value. */
int mds_store_bump_boot(struct mds_txn *t, uint64_t *boot);

/* The SCSI designator LUN i had when the pool was formatted (its preferred logical-unit VPD 0x83
 * designator, as blkmap picks it), kept so that a LUN answering at the LUN's URL later can be told
 * from another one. type and code_set use SPC's numbers; bytes at most MDS_DESIG_MAX. Pools formatted
 * before it was kept get it recorded at their next start. get: 0, or -ENOENT when none was recorded. */
#define MDS_DESIG_MAX 255
struct mds_lun_designator {
	uint8_t type, code_set, len;
	uint8_t bytes[MDS_DESIG_MAX];
};
int mds_store_lun_designator(struct mds_txn *t, uint32_t lun, struct mds_lun_designator *out);
int mds_store_set_lun_designator(struct mds_txn *t, uint32_t lun, const struct mds_lun_designator *d);

struct mds_store_stats {
	uint64_t volume_bytes;
	uint64_t free_bytes;     /* in free space, allocatable now */
	uint64_t used_bytes;     /* owned by files' extents */
	uint64_t pending_bytes;  /* freed, parked until layouts covering them are gone */
	uint64_t files;          /* inodes of every type, the root included */
	uint64_t free_extents;   /* pieces of free space (fragmentation) */
};
int mds_store_stats(struct mds_txn *t, struct mds_store_stats *out);

/* Verify every invariant: free-space indexes in step and coalesced; every volume byte owned once
 * (free, pending or one file's extent) and free + used + pending == volume; each file's extents
 * sorted, merged and non-overlapping and its space_used their sum; directory indexes in step,
 * nlink counts, parents, counters. Each problem is reported through report (may be NULL) as one
 * line; returns 0 if none, -EUCLEAN if any, another -errno if the check itself failed. */
int mds_store_check(struct mds_txn *t, void (*report)(void *arg, const char *problem), void *arg);

/* ---- inodes -------------------------------------------------------------------------------- */

/* Types carry NFSv4's nfs_ftype4 values. */
enum mds_ftype {
	MDS_FT_REG = 1,
	MDS_FT_DIR = 2,
	MDS_FT_BLK = 3,
	MDS_FT_CHR = 4,
	MDS_FT_LNK = 5,
	MDS_FT_SOCK = 6,
	MDS_FT_FIFO = 7,
};

struct mds_inode {
	uint64_t fileid;
	enum mds_ftype type;
	uint32_t mode;           /* permission bits only (07777) */
	uint32_t nlink;          /* directories: 2 + subdirectories; 0: an orphan kept open */
	uint32_t uid, gid;
	uint64_t size;           /* bytes; symlinks: the target's length */
	uint64_t space_used;     /* bytes allocated to the file's extents */
	uint32_t rdev_major, rdev_minor;
	struct mds_time atime, mtime, ctime, crtime;
	uint64_t change;         /* bumped on every change of the object */
	uint64_t parent;         /* directories: the parent (the root's is itself); others: 0 */
	uint64_t cookieverf;     /* directories: READDIR cookie verifier */
};

int mds_inode_read(struct mds_txn *t, uint64_t fileid, struct mds_inode *out);

enum {
	MDS_SA_MODE = 1u << 0,
	MDS_SA_UID = 1u << 1,
	MDS_SA_GID = 1u << 2,
	MDS_SA_SIZE = 1u << 3,
	MDS_SA_ATIME = 1u << 4,     /* to sa->atime */
	MDS_SA_MTIME = 1u << 5,     /* to sa->mtime */
	MDS_SA_ATIME_NOW = 1u << 6, /* to the transaction's time */
	MDS_SA_MTIME_NOW = 1u << 7,
};
struct mds_setattr {
	unsigned mask;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct mds_time atime, mtime;
};

/* A list of volume ranges (freed blocks). Callers zero-initialise it; free with mds_ranges_free. */
struct mds_range {
	uint64_t vol_off, len;
};
struct mds_ranges {
	size_t n, cap;
	struct mds_range *v;
};
void mds_ranges_free(struct mds_ranges *r);

/* How blocks leave a file (truncate, remove, punch). */
enum {
	MDS_FREE_PENDING = 1u << 0, /* park them as pending (layouts may still cover them) instead of
				       returning them to free space now */
	MDS_KEEP_ORPHAN = 1u << 1,  /* when the last link of a non-directory goes, keep the inode as
				       an orphan (open files); mds_inode_destroy removes it later */
};

/* Change attributes; bumps change and ctime. A size decrease removes the blocks wholly past the
 * new size (rounded up to the block size) as flags say (MDS_FREE_PENDING or freed now), appending
 * the freed ranges to freed (may be NULL); the caller zeroes the rest of the last block on disk.
 * SIZE is for regular files only (-EISDIR for directories, -EINVAL otherwise). Mode keeps only
 * 07777. out (may be NULL) gets the new attributes. */
int mds_inode_setattr(struct mds_txn *t, uint64_t fileid, const struct mds_setattr *sa,
		      unsigned flags, struct mds_ranges *freed, struct mds_inode *out);

/* Data was written up to end_bytes (WRITE, LAYOUTCOMMIT): size grows to end_bytes if smaller;
 * mtime becomes *mtime (NULL: now), ctime now, change bumped. out may be NULL. */
int mds_inode_note_write(struct mds_txn *t, uint64_t fileid, uint64_t end_bytes,
			 const struct mds_time *mtime, struct mds_inode *out);

/* Remove an orphan (nlink 0, kept by MDS_KEEP_ORPHAN): its blocks go as flags say. -EBUSY if it
 * still has links. */
int mds_inode_destroy(struct mds_txn *t, uint64_t fileid, unsigned flags, struct mds_ranges *freed);

/* Every orphan's fileid (the server destroys them at start: no file is open after a restart).
 * cb returns 0 to go on, > 0 to stop (returned), < 0 an error (returned). */
int mds_orphan_iter(struct mds_txn *t, int (*cb)(void *arg, uint64_t fileid), void *arg);

/* A symlink's target into buf (not NUL-terminated), *len its length. -ERANGE if bufsize is too
 * small (*len still set); -EINVAL if fileid is not a symlink. */
int mds_symlink_read(struct mds_txn *t, uint64_t fileid, char *buf, size_t bufsize, size_t *len);

/* ---- namespace ------------------------------------------------------------------------------ */

/* Names are 1..MDS_NAME_MAX bytes of anything but '/' and NUL; "." and ".." are refused. */
int mds_name_check(const char *name, size_t len);

struct mds_change_info {
	uint64_t before, after;  /* the directory's change attribute around the operation (atomic) */
};

struct mds_create_args {
	enum mds_ftype type;
	uint32_t mode, uid, gid;
	uint32_t rdev_major, rdev_minor;  /* MDS_FT_BLK, MDS_FT_CHR */
	const char *target;               /* MDS_FT_LNK: 1..MDS_SYMLINK_MAX bytes */
	size_t target_len;
};

/* Create name in directory dir. -EEXIST if the name exists (nothing changes). dir's mtime, ctime
 * and change move; a new directory adds one to dir's nlink. out gets the new inode, cinfo (may be
 * NULL) dir's change attribute before and after. */
int mds_ns_create(struct mds_txn *t, uint64_t dir, const char *name, size_t len,
		  const struct mds_create_args *a, struct mds_inode *out, struct mds_change_info *cinfo);

/* The fileid named name in dir (-ENOENT, -ENOTDIR). */
int mds_ns_lookup(struct mds_txn *t, uint64_t dir, const char *name, size_t len, uint64_t *fileid);

/* A new name for a non-directory (-EISDIR for directories, -EMLINK past MDS_LINK_MAX). */
int mds_ns_link(struct mds_txn *t, uint64_t fileid, uint64_t dir, const char *name, size_t len,
		struct mds_change_info *cinfo);

struct mds_unlink_result {
	struct mds_change_info dir;
	uint64_t fileid;          /* the object the name referred to */
	uint32_t nlink;           /* its links left */
	int destroyed;            /* it is gone (its blocks freed or parked per flags) */
	int orphaned;             /* it stays as an orphan (MDS_KEEP_ORPHAN) */
};

/* Remove name from dir; a directory must be empty (-ENOTEMPTY). When the last link goes the inode
 * is destroyed (or orphaned, see MDS_KEEP_ORPHAN; directories are always destroyed), its blocks
 * freed or parked per flags and appended to freed (may be NULL). res may be NULL. */
int mds_ns_unlink(struct mds_txn *t, uint64_t dir, const char *name, size_t len, unsigned flags,
		  struct mds_ranges *freed, struct mds_unlink_result *res);

struct mds_rename_result {
	struct mds_change_info src_dir, dst_dir;
	uint64_t fileid;          /* the object renamed */
	uint64_t replaced;        /* the object the target name referred to, 0 if none */
	int replaced_destroyed;   /* it lost its last link and is gone */
	int replaced_orphaned;
};

/* Rename with POSIX rules: a directory replaces only an empty directory (-ENOTEMPTY; -ENOTDIR over
 * a non-directory), a non-directory only a non-directory (-EISDIR); a directory cannot move into its
 * own subtree (-EINVAL); two names of the same object: nothing happens, 0. A rename inside one
 * directory keeps the entry's READDIR cookie. The replaced target is treated as by mds_ns_unlink
 * (flags, freed). res may be NULL. */
int mds_ns_rename(struct mds_txn *t, uint64_t sdir, const char *sname, size_t slen, uint64_t ddir,
		  const char *dname, size_t dlen, unsigned flags, struct mds_ranges *freed,
		  struct mds_rename_result *res);

struct mds_dirent {
	uint64_t cookie;          /* >= MDS_COOKIE_FIRST, increasing in iteration order */
	uint64_t fileid;
	enum mds_ftype type;
	const char *name;         /* borrowed for the callback's duration; not NUL-terminated */
	size_t name_len;
};

/* The entries of dir after cookie (0: from the start) in cookie order. Cookies are never reused
 * in a directory, and a rename inside it keeps the cookie, so resuming from any cookie returned
 * earlier (even of a since-removed entry) skips no entry still present since then and returns none
 * twice. -EINVAL for cookie 1, 2 or one the directory never gave out. cb returns 0 to go on,
 * > 0 to stop (returned), < 0 an error (returned). "." and ".." are not entries. */
int mds_dir_iter(struct mds_txn *t, uint64_t dir, uint64_t cookie,
		 int (*cb)(void *arg, const struct mds_dirent *e), void *arg);
/* Number of entries in dir. */
int mds_dir_count(struct mds_txn *t, uint64_t dir, uint64_t *count);

/* ---- extent maps ---------------------------------------------------------------------------- */

/* RFC 5663 pnfs_block_extent_state4 values. Stored extents are RW, READ or INVALID; holes are
 * absent from the map and reported as NONE by mds_ext_map. */
enum mds_ext_state {
	MDS_EXT_RW = 0,       /* PNFS_BLOCK_READ_WRITE_DATA */
	MDS_EXT_READ = 1,     /* PNFS_BLOCK_READ_DATA */
	MDS_EXT_INVALID = 2,  /* PNFS_BLOCK_INVALID_DATA: allocated, not yet written: reads zeros */
	MDS_EXT_NONE = 3,     /* PNFS_BLOCK_NONE_DATA: hole */
};
#define MDS_EXT_MASK(state) (1u << (state))
#define MDS_EXT_MASK_ALL (MDS_EXT_MASK(MDS_EXT_RW) | MDS_EXT_MASK(MDS_EXT_READ) | \
			  MDS_EXT_MASK(MDS_EXT_INVALID))

struct mds_extent {
	uint64_t file_off;
	uint64_t vol_off;     /* meaningless for MDS_EXT_NONE */
	uint64_t len;
	enum mds_ext_state state;
};

/* Stored extents of a regular file overlapping [off, off+len), whole (not clipped), in file order:
 * at most max into out, *n how many. Finding the first costs one B-tree seek. Call again from the
 * end of the last one to continue. */
int mds_ext_lookup(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		   struct mds_extent *out, size_t max, size_t *n);

/* The map of [off, off+len) clipped to the range, holes as MDS_EXT_NONE extents, at most max
 * pieces; *n pieces, *end_off where they stop (off+len when the range is covered). */
int mds_ext_map(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		struct mds_extent *out, size_t max, size_t *n, uint64_t *end_off);

/* Allocate every hole of [off, off+len) (rounded out to the block size) as INVALID extents:
 * contiguous with the file's previous extent where free space allows; otherwise best fit, holes of
 * a stripe unit or more placed so that volume offsets agree with file offsets modulo the stripe
 * unit (smaller ones packed); in several pieces when fragmented. All or nothing: -ENOSPC (nothing allocated) when the volume cannot hold it.
 * *allocated (may be NULL) gets the bytes newly allocated. */
int mds_ext_alloc(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		  uint64_t *allocated);

/* Set [off, off+len) (block-aligned) to state (RW, READ or INVALID), splitting and merging
 * neighbours; -ENODATA (nothing changed) if the range has a hole. */
int mds_ext_set_state(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		      enum mds_ext_state state);

/* LAYOUTCOMMIT of one written extent: [off, off+len) must be allocated contiguously starting at
 * volume offset vol_off (-EINVAL otherwise, -ENODATA for a hole) in state INVALID or RW; it becomes
 * RW. Nothing changes on error. */
int mds_ext_commit(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len, uint64_t vol_off);

/* Remove the mapping of [off, off+len) (block-aligned; MDS_TO_END allowed) for extents whose state
 * is in states_mask (MDS_EXT_MASK_ALL for all; MDS_EXT_MASK(MDS_EXT_INVALID) for layout return);
 * the blocks are freed now or parked (MDS_FREE_PENDING) and appended to freed (may be NULL). */
int mds_ext_punch(struct mds_txn *t, uint64_t fileid, uint64_t off, uint64_t len,
		  unsigned states_mask, unsigned flags, struct mds_ranges *freed);

/* Allocated, never committed: every file whose map holds INVALID extents (LAYOUTGET allocated
 * them; no LAYOUTCOMMIT made them data), in fileid order, with how many extents and bytes. fn must
 * not change the store; a non-zero return stops the walk and is returned. Returns 0 or -errno. */
int mds_ext_invalid_iter(struct mds_txn *t,
			 int (*fn)(void *arg, uint64_t fileid, uint64_t nextents, uint64_t bytes), void *arg);

/* ---- pending (deferred) frees --------------------------------------------------------------- */

/* Freed ranges parked by MDS_FREE_PENDING are released to free space only by these calls; they
 * survive restarts (the server releases them all when its grace period ends). Each parked piece
 * remembers the fileid that owned it. */

/* Release [vol_off, vol_off+len), which must be wholly pending (-ENOENT, nothing changes). */
int mds_pending_release(struct mds_txn *t, uint64_t vol_off, uint64_t len);
/* Release every piece parked from fileid; *bytes (may be NULL) gets how much. */
int mds_pending_release_file(struct mds_txn *t, uint64_t fileid, uint64_t *bytes);
int mds_pending_release_all(struct mds_txn *t, uint64_t *bytes);
/* cb gets each parked piece in volume order; return values as mds_dir_iter's. */
int mds_pending_iter(struct mds_txn *t,
		     int (*cb)(void *arg, uint64_t vol_off, uint64_t len, uint64_t fileid), void *arg);

/* ---- client records (recovery) -------------------------------------------------------------- */

enum {
	MDS_CLIENT_RECLAIM_COMPLETE = 1u << 0,
};
struct mds_client_rec {
	uint64_t clientid;
	uint8_t verifier[8];
	uint32_t flags;
	uint32_t owner_len;
	uint8_t owner[MDS_OWNER_MAX];
	uint32_t principal_len;
	char principal[MDS_PRINCIPAL_MAX]; /* not NUL-terminated */
};

/* Insert or replace the record of rec->clientid. -EINVAL for oversized owner/principal. */
int mds_client_write(struct mds_txn *t, const struct mds_client_rec *rec);
int mds_client_read(struct mds_txn *t, uint64_t clientid, struct mds_client_rec *out);
int mds_client_del(struct mds_txn *t, uint64_t clientid);
/* cb gets each record in clientid order (borrowed); return values as mds_dir_iter's. */
int mds_client_iter(struct mds_txn *t, int (*cb)(void *arg, const struct mds_client_rec *rec),
		    void *arg);

#endif
