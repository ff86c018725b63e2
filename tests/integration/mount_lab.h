/* What the pnfs mount suites share: a 4-LUN tgtd lab with a pnfs-mds on it, the pnfs URL and
 * --device options that reach it, a scratch folder, and shell scripts that report their checks
 * with a last line "bad=0" (each failed check echoes its name and sets bad=1). */
#ifndef TESTS_INTEGRATION_MOUNT_LAB_H
#define TESTS_INTEGRATION_MOUNT_LAB_H

#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <stdio.h>

struct mount_lab {
	struct test_lab *lab;
	struct test_mds *mds;
	int have_fuse;           /* /dev/fuse and fusermount3 are usable here */
	char why[512];           /* why the setup failed; empty when it worked */
	char url[128];           /* pnfs://127.0.0.1:PORT of the MDS */
	char devs[2048];         /* " --device 'URL'" for each LUN */
	char dir[400];           /* a scratch folder of the suite */
};

/* Without FUSE, nothing is started (have_fuse 0). Otherwise a lab of 4 LUNs of 96M and a pnfs-mds
 * with mds_args, the scratch folder named after tag; a failure is left in m->why (the suite's
 * tests fail on it through MOUNT_LAB_NEED). Always 0, as a CUnit suite init wants. */
int mount_lab_up(struct mount_lab *m, const char *mds_args, const char *tag);
/* Stops what mount_lab_up started (unmounting is the suite's own business). */
void mount_lab_down(struct mount_lab *m);

/* At the start of a test: skipped without FUSE, failed when the setup failed. */
#define MOUNT_LAB_NEED(m)                                                             \
	do {                                                                          \
		TEST_SKIP_IF(!(m)->have_fuse, "no /dev/fuse or fusermount3 on this host"); \
		if ((m)->why[0])                                                      \
			fprintf(stderr, "\n  setup: %s\n", (m)->why);                 \
		CU_ASSERT_FATAL((m)->why[0] == 0);                                    \
	} while (0)

/* Runs a shell script whose last line prints "bad=$bad": 1 when it exited 0 and said bad=0, else
 * 0 with its output on stderr (the names of the checks that failed). */
int mount_script_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
