/* Helpers for the pnfs-extents suites: a pool with a file written into it the way the MDS writes
 * (blocks allocated INVALID, whole blocks written with zeros around the data, then committed
 * READ_WRITE), each write in a session of its own, and a reader for the command's table. */
#ifndef TESTS_TOOLS_EXTENTS_HELPERS_H
#define TESTS_TOOLS_EXTENTS_HELPERS_H

#include <stddef.h>
#include <stdint.h>

/* Format a stripe pool (unit bytes; 0: concat) in dir over the LUNs. 0 or -errno (err printed). */
int xt_pool_format(const char *dir, const char *const *urls, int nluns, uint64_t unit);
/* Create /name (a regular file) in the pool's root; *fileid gets its id. */
int xt_create(const char *dir, const char *name, uint64_t *fileid);
/* One session: open the pool, allocate what [off, off+len) needs, write the data through the pool
 * volume (zero-filling partial blocks that were not written before), commit it and move the size,
 * close the pool. */
int xt_write(const char *dir, uint64_t fileid, uint64_t off, const void *data, size_t len);
/* Allocate [off, off+len) and never write it: INVALID extents, as a client leaves them when it dies
 * before LAYOUTCOMMIT. */
int xt_alloc_only(const char *dir, uint64_t fileid, uint64_t off, uint64_t len);

/* One row of pnfs-extents' table. lun -1 and "-" fields for holes; lun -2 for a no-split row over
 * several LUNs. */
struct xt_row {
	int ext;
	uint64_t file_off, len;
	char state[16];
	uint64_t vol_off;
	int lun;
	uint64_t lba_first, lba_last;
	char dev[512];
};
/* Parse the rows of the table in out; returns how many (at most max). */
int xt_parse_rows(const char *out, struct xt_row *rows, int max);
/* Checks of a piece row (not a hole) against a real lab, for the integration suites. The row names
 * its LUN by URL, lies inside one stripe unit, and its LBA range is its length in 512-byte blocks. */
struct test_lab;
void xt_check_piece(const struct test_lab *lab, const struct xt_row *r, uint64_t unit);
/* Those LBAs in the LUN's backing file hold content's bytes from the piece's file offset on (up to
 * size, the file's size: zeros past it are not compared); buf (buflen bytes) is scratch. Returns the
 * bytes compared. */
uint64_t xt_check_piece_bytes(const struct test_lab *lab, const struct xt_row *r, const uint8_t *content,
			      uint64_t size, uint8_t *buf, size_t buflen);
/* Occurrences of needle in hay. */
int xt_count(const char *hay, const char *needle);
/* Read len bytes at off of a file; 0 or -1. */
int xt_read_at(const char *path, void *buf, size_t len, uint64_t off);
int xt_write_at(const char *path, const void *buf, size_t len, uint64_t off);
/* The report out of the suites' test file (a stripe of 4 LUNs, unit 256 KiB, 9437307 bytes) says
 * what it is. Aborts the test when there is no output. */
void xt_expect_file_summary(const char *out);
/* The table of `--offset 3M --length 1M --no-split` of the suites' test file: two rows, the second
 * write from 3 MiB on in state and the hole after it up to 4 MiB. */
void xt_expect_second_write(const char *out, const char *state);
/* Flip (XOR 0x5a) the byte 4321 bytes into row r's first block in the backing file of its LUN of lab.
 * Calling it again puts the byte back. Aborts the test when the file cannot be read or written. */
void xt_flip_byte(const struct test_lab *lab, const struct xt_row *r);
/* A --verify report out that says summary and names the piece at file offset 3 MiB (extent 2) as
 * bad; with where, also the byte xt_flip_byte flipped in row r as the only difference. */
void xt_expect_bad(const char *out, const char *summary, const struct xt_row *r, int where);

#endif
