/* pnfs-extents' model: a file's extent map (from the MDS's store or from a layout), mapped through the
 * pool volume to pieces on LUNs, with the figures, reports and checks the command prints. The one
 * idea: whatever the source, an extent becomes (file range, state, volume offset) and blkmap's
 * mapping (the device-mapper table's) turns it into (LUN, byte offset, length) pieces. */
#ifndef TOOLS_EXTENTS_H
#define TOOLS_EXTENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/util.h"

struct blkmap_vol;
struct blkmap_dev;

/* RFC 5663 pnfs_block_extent_state4 values. */
enum tool_ext_state {
	TOOL_EXT_READ_WRITE = 0,
	TOOL_EXT_READ = 1,
	TOOL_EXT_INVALID = 2,
	TOOL_EXT_NONE = 3,
};
/* "READ_WRITE", "READ", "INVALID", "NONE"; "?" for anything else. */
const char *tool_ext_state_name(int state);

/* What verification found for one extent. */
enum tool_verdict {
	TOOL_VERIFY_NONE = 0,      /* not verified */
	TOOL_VERIFY_OK,            /* LUN bytes equal the reference (or zeros where the file reads zeros) */
	TOOL_VERIFY_ZEROS,         /* INVALID / NONE: the reference reads as zeros, as it must */
	TOOL_VERIFY_MISMATCH,      /* bytes differ */
	TOOL_VERIFY_ERROR,         /* a read failed (why says which) */
};
const char *tool_verdict_name(enum tool_verdict v);

/* One LUN: a leaf of the volume, in volume array order. */
#define TOOL_NAME_MAX 512
struct tool_lun {
	char name[TOOL_NAME_MAX];   /* URL (password removed) or device path */
	uint32_t leaf;              /* volume array index */
	uint32_t block_bytes;       /* logical block size: LBAs are in these units */
	int block_known;            /* 0: the LUN was not opened; block_bytes is 512 (sectors) */
	struct blkmap_dev *dev;     /* open device for --verify, or NULL (a reference of the map's) */
	char why[320];              /* why the LUN is not usable ("" when it is) */
};

/* A piece of an extent on one LUN (extents split where the volume mapping changes LUN). */
struct tool_piece {
	uint32_t ext;               /* extent index */
	uint32_t lun;               /* index into the map's LUNs */
	uint64_t file_off, len, vol_off;
	uint64_t lun_off;           /* bytes from the LUN's start */
};

struct tool_extent {
	uint64_t file_off, len;
	uint64_t vol_off;           /* meaningless for NONE */
	int state;                  /* enum tool_ext_state (as the source said: checked by resolve) */
	size_t piece0, npieces;     /* its pieces in the map's piece array */
	enum tool_verdict verdict;
	uint64_t bad_off;           /* MISMATCH: the first differing file offset */
	uint64_t bad_bytes;         /* MISMATCH: how many bytes differ */
	char why[400];              /* MISMATCH / ERROR: in words */
};

struct tool_map {
	/* The file, as the source names it. */
	char source[8];             /* "pool" or "mds" */
	char where[TOOL_NAME_MAX];  /* the pool directory or the server URL */
	char path[4096];            /* "" when looked up by file id only */
	uint64_t fileid, size;
	uint32_t block_bytes;       /* layout block size, 0 unknown */
	uint64_t range_off, range_len;   /* the part examined */
	/* The volume the extents point into: borrowed (or owned, see vol_owned). */
	struct blkmap_vol *vol;
	int vol_owned;
	char vol_desc[160];         /* "stripe of 4 LUNs, unit 1.0 MiB, 252.0 MiB" */
	uint32_t nluns;
	struct tool_lun *luns;
	size_t n, cap;
	struct tool_extent *ext;
	size_t npieces, pcap;
	struct tool_piece *pieces;
	char note[512];             /* a remark on the whole map for the report ("" if none) */
	int verified;               /* verification ran */
	char verified_against[TOOL_NAME_MAX]; /* "the MDS path" or the reference file */
};

/* A zeroed map. */
void tool_map_init(struct tool_map *m);
/* Frees the arrays, drops the LUN device references and the volume if owned. */
void tool_map_free(struct tool_map *m);

/* Append an extent (file order is checked later by tool_map_resolve). 0 or -ENOMEM. */
int tool_map_add(struct tool_map *m, uint64_t file_off, uint64_t len, uint64_t vol_off, int state);

/* Take the volume's leaves as the map's LUNs, in array order, named "leaf N" until named with
 * tool_map_name_lun (a bound device gives its name and block size). The volume must be validated.
 * 0 or -ENOMEM / -EINVAL. */
int tool_map_set_volume(struct tool_map *m, struct blkmap_vol *vol, int owned);
/* The map's LUN for a volume leaf index, or -1. */
int tool_map_lun_of_leaf(const struct tool_map *m, uint32_t leaf);
/* Name LUN i, give it a block size (0: keep 512, unknown) and optionally an open device (a reference
 * is taken). */
void tool_map_name_lun(struct tool_map *m, uint32_t i, const char *name, uint32_t block_bytes,
		       struct blkmap_dev *dev);

/* The part of the file to examine: [off, off + len) rounded out to whole blocks of block_bytes;
 * len TOOL_TO_END, or a range that runs past the largest offset, ends at end_of_file (the file's end
 * as the source knows it). Sets range_off and range_len. */
void tool_map_set_range(struct tool_map *m, uint64_t off, uint64_t len, uint64_t end_of_file,
			uint32_t block_bytes);

/* Check the extents (lengths non-zero, sorted by file offset, not overlapping, a known state, mapped
 * ones inside the volume) and map every extent that has blocks (all but NONE) to pieces. Errors name
 * the extent: "extent 3 (file 1048576+4096): ...". Returns 0 or -EINVAL / -ERANGE / -ENOMEM. */
int tool_map_resolve(struct tool_map *m, char *err, size_t errlen);

/* ---- figures ------------------------------------------------------------------------------- */

struct tool_lun_stats {
	uint64_t bytes;             /* bytes of extents with blocks on this LUN */
	uint64_t extents;           /* extents with at least one piece on it */
	uint64_t pieces;
	uint64_t lba_min, lba_max;  /* first and last LBA touched (valid when pieces > 0) */
};

struct tool_stats {
	uint64_t extents;           /* all, holes included */
	uint64_t data_extents;      /* READ_WRITE, READ, INVALID: extents with blocks */
	uint64_t holes, hole_bytes;
	uint64_t data_bytes;        /* bytes with blocks */
	uint64_t by_state[4];       /* bytes per state */
	uint64_t largest, smallest; /* data extents' lengths (0 when there is none) */
	double mean;
	double extents_per_mib;     /* data extents per MiB of data */
	uint64_t joins;             /* pairs of consecutive data extents */
	uint64_t contiguous_joins;  /* of which the second starts where the first ends in the volume */
	double contiguity;          /* contiguous_joins / joins; 1 with fewer than two data extents */
	uint64_t vol_span;          /* from the lowest to the highest volume byte used */
	uint64_t pieces;
};

/* Figures over the resolved map; lun_stats (may be NULL) gets m->nluns entries. */
void tool_map_stats(const struct tool_map *m, struct tool_stats *st, struct tool_lun_stats *lun_stats);

/* ---- verification --------------------------------------------------------------------------- */

/* Read len bytes of the file at file offset off into buf, through the reference path (the MDS, or a
 * local copy). Returns the bytes read (short only at end of file) or -errno, with why filled. */
typedef long long (*tool_read_fn)(void *arg, uint64_t off, void *buf, size_t len, char *why,
				  size_t whylen);

/* Verify every extent of the map against the reference: for extents with data (READ_WRITE, READ),
 * every piece is read straight from its LUN's device and compared, byte for byte, with the same
 * file range read through ref (bytes past the end of file are not compared); INVALID and NONE
 * extents read as zeros, so the reference must give zeros there. Each extent gets a verdict.
 * Returns the number of extents that are not right (MISMATCH or ERROR), or -errno when verification
 * could not run at all (no device for a LUN is a per-extent ERROR, not this). */
int tool_map_verify(struct tool_map *m, tool_read_fn ref, void *arg, const char *against);

/* ---- output --------------------------------------------------------------------------------- */

enum {
	TOOL_OUT_NO_SPLIT = 1u << 0,  /* one row per extent, not per piece */
};

/* The human report: header, one row per piece (or extent), the per-LUN summary, the fragmentation
 * figures and, when verification ran, its verdicts. */
void tool_map_print_text(FILE *o, const struct tool_map *m, unsigned flags);
/* The same as one JSON object. */
void tool_map_print_json(FILE *o, const struct tool_map *m, unsigned flags);
/* An SVG picture: the examined range as a bar with one segment (<g class="segment">) per extent,
 * its pieces coloured by LUN and a strip below coloured by state; a legend and offset labels.
 * Returns 0 or -errno (writing failed). */
int tool_map_write_svg(FILE *o, const struct tool_map *m);

/* ---- sources ------------------------------------------------------------------------------- */

struct blkmap_ctx;

/* The part of a file to examine: [off, off + len); len TOOL_TO_END: to the end of the file (its size
 * or its last extent, whichever is further). */
#define TOOL_TO_END UINT64_MAX

/* From the MDS's own records: the pool directory's store opened read-only (safe beside a running
 * pnfs-mds), the file by fileid (when non-zero) or by absolute path, the volume built from the
 * pool's geometry and its LUNs named by pool.conf. With ctx, every LUN is opened and its label
 * checked (for block sizes and --verify; a LUN that cannot be, keeps its name and says why); with
 * ctx NULL no LUN is touched and LBAs are in 512-byte sectors. The range is rounded out to the
 * pool's block size. The map is resolved on return. Errors name what failed (the directory, the
 * path component, the fileid). Returns 0 or -errno with err. */
int tool_pool_load(struct blkmap_ctx *ctx, const char *dir, uint64_t fileid, const char *path,
		   uint64_t off, uint64_t len, struct tool_map *m, char *err, size_t errlen);

/* From the server, as a client sees it: pnfs://HOST[:PORT]/PATH mounted (block layouts preferred;
 * SCSI only from a server with nothing else), the file opened read-only, its layout asked for over
 * the range (rounded out to the layout block size) in READ iomode, the device resolved to LUNs
 * through the portals and devices given (with none, local block devices). A device whose LUNs are
 * not found still gives volume offsets, and leaf offsets in 512-byte sectors (the map's note says
 * why). The map borrows the session's volume: free the map before the session. *session is set
 * whatever happens (release with tool_mds_close()). The map is resolved on return. 0 or -errno with
 * err. */
struct tool_mds;
struct tool_mds_opts {
	const char *const *portals;
	unsigned nportals;
	const char *const *devices;
	unsigned ndevices;
	int scan_local;
	const char *initiator;
	unsigned timeout_s;         /* per SCSI command; 0: 10 s */
};
int tool_mds_load(const char *url, const struct tool_mds_opts *o, uint64_t off, uint64_t len,
		  struct tool_map *m, struct tool_mds **session, char *err, size_t errlen);
/* --verify against the MDS path: a second mount of the server with layouts off, the same file read
 * with READ. Returns as tool_map_verify() (the number of bad extents, or -errno with err). */
int tool_mds_verify(struct tool_mds *s, struct tool_map *m, char *err, size_t errlen);
/* Close the files, unmount, free. Safe on NULL. */
void tool_mds_close(struct tool_mds *s);

/* A tool_read_fn over a local file (fd in *arg, an int): the reference for --compare. */
long long tool_read_local(void *arg, uint64_t off, void *buf, size_t len, char *why, size_t whylen);

#endif
