/* Helpers shared by the blkmap unit and integration suites: contexts with test settings, lab state
 * lookups (the tgtd control port, sessions) and file comparisons. */
#ifndef TESTS_BLKMAP_HELPERS_H
#define TESTS_BLKMAP_HELPERS_H

#include "blkmap/blkmap.h"
#include "tests/lab.h"

#include <stddef.h>
#include <stdint.h>

#define BMT_INITIATOR_A "iqn.2024-01.test.pnfs:blkmap-a"
#define BMT_INITIATOR_B "iqn.2024-01.test.pnfs:blkmap-b"

/* A context with this initiator name and command timeout (0: default); aborts the test on failure. */
struct blkmap_ctx *bmt_ctx(const char *initiator, unsigned timeout_ms);

/* A value from the lab's san-lab state file (lab.env). Returns 0 or -1. */
int bmt_lab_value(const struct test_lab *lab, const char *key, char *val, size_t len);

/* Drop every iSCSI connection of the lab's target 1 with tgtadm (as a network blip would). Returns the
 * number of connections dropped, or -1. */
int bmt_lab_drop_sessions(const struct test_lab *lab);

/* Read len bytes at off of a file; 0 or -1. */
int bmt_read_file(const char *path, void *buf, size_t len, uint64_t off);

/* Milliseconds on the monotonic clock. */
int64_t bmt_now_ms(void);

/* Whether losetup can attach loop devices here (root, /dev/loop-control). */
int bmt_have_loop(void);

/* Attach a loop device over path; the device name goes to dev (e.g. /dev/loop3). Registered for
 * detaching at exit as well. Returns 0 or -1. */
int bmt_loop_attach(const char *path, char *dev, size_t len);
void bmt_loop_detach(const char *dev);

/* Test labels: at byte 512 "PNFSTEST" + a 16-byte run id + the 4-byte index, and 8 bytes
 * "TAIL" + index 4096 bytes before the end. bmt_label_write puts one into a LUN's backing file;
 * bmt_label_sig fills the two signature components that find it (storage: 64 bytes). */
void bmt_label_write(const char *path, uint64_t size, const uint8_t runid[16], uint32_t index);
void bmt_label_sig(struct blkmap_sig_comp comps[2], uint8_t storage[64], const uint8_t runid[16], uint32_t index);

/* A pool-shaped volume: nleaves simple volumes with test labels (leaf k finds label index k), each
 * sliced at [start, start+len), striped with unit. Leaf k is entry 2k, its slice 2k+1, the stripe last. */
struct blkmap_vol *bmt_pool_volume(const uint8_t runid[16], unsigned nleaves, uint64_t start, uint64_t len,
				   uint64_t unit);

#endif
