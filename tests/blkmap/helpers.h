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

#endif
