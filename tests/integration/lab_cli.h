/* The fixture of the pnfs command suites: a RAM lab, a pnfs-mds on it, the pnfs options that reach
 * its LUNs as one initiator, and a scratch directory in /dev/shm (where the user nobody may read
 * what a test copies), all removed by the suite's clean or by the harness whatever happens. */
#ifndef TESTS_INTEGRATION_LAB_CLI_H
#define TESTS_INTEGRATION_LAB_CLI_H

#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <stddef.h>
#include <stdint.h>

struct lab_cli {
	struct test_lab *lab;
	struct test_mds *mds;   /* NULL: the suite's tests skip with why */
	char why[300];
	char url[128];          /* pnfs://127.0.0.1:PORT */
	char devs[2048];        /* --initiator and --device options for the lab's LUNs */
	char tmp[400];          /* local scratch, mode 0755 */
};

/* nluns RAM LUNs of size, pnfs-mds with a 10 s lease and a 2 s grace, devs for initiator, the
 * scratch directory /dev/shm/NAME.PID. Returns 0 (a suite's init): on failure c->mds is NULL and
 * c->why says why. */
int lab_cli_up(struct lab_cli *c, int nluns, const char *size, const char *initiator, const char *name);
/* Stop the server and the lab, remove the scratch directory. Returns 0 (a suite's clean). */
int lab_cli_down(struct lab_cli *c);

/* A local file NAME in the scratch directory of len bytes from test_fill_random(seed), mode 0644;
 * its path in path. Aborts the test when it cannot be written. */
void lab_cli_local_file(const struct lab_cli *c, const char *name, size_t len, uint64_t seed, char *path,
			size_t pathlen);

/* A suite's fixture: the static struct lab_cli cl with suite_init and suite_clean that bring it up
 * and down, and NEED_LAB(), which skips a test with the reason when the server is not up. */
#define LAB_CLI_SUITE(nluns, size, initiator, name)                                       \
	static struct lab_cli cl;                                                         \
	static int suite_init(void) { return lab_cli_up(&cl, nluns, size, initiator, name); } \
	static int suite_clean(void) { return lab_cli_down(&cl); }
#define NEED_LAB() TEST_SKIP_IF(!cl.mds, "%s", cl.why)

#endif
