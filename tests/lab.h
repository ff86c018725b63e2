/* Integration tests' access to a real SAN: a `san-lab` started on a free port, torn down by the
 * harness even when a test fails, the runner is interrupted, or it dies (san-lab's --watch-pid). */
#ifndef TESTS_LAB_H
#define TESTS_LAB_H

#include <stdint.h>

#define LAB_MAX_LUNS 32

struct test_lab {
	char dir[300];              /* san-lab state directory */
	int port;                   /* iSCSI portal port on 127.0.0.1 (hosts mode: in each netns) */
	int nluns;
	uint64_t lun_bytes;
	char iqn[128];
	char urls[LAB_MAX_LUNS][256];  /* iscsi://127.0.0.1:PORT/IQN/L */
	char files[LAB_MAX_LUNS][300]; /* each LUN's backing file */
	int cleanup_handle;
};

/* Options for lab_up beyond LUN count and size; pass NULL for defaults. */
struct lab_opts {
	int ram;                 /* LUN files in /dev/shm */
	const char *chap;        /* "user:secret" or NULL */
	const char *initiator;   /* restrict to this initiator IQN, or NULL (address ACL) */
	int hosts;               /* > 0: shaped multi-host lab (root) */
	int rate_mbit;           /* with hosts */
};

/* Start a lab with nluns LUNs of size (san-lab syntax, e.g. "64M"). Returns NULL on failure
 * (with a message on stderr). The lab is registered for cleanup; free with lab_down(). */
struct test_lab *lab_up(int nluns, const char *size, const struct lab_opts *opts);

/* Stop the lab and free it. Safe on NULL. */
void lab_down(struct test_lab *lab);

/* Kill the lab's tgtd(s) with SIGKILL, as when a storage host dies (the lab stays registered
 * for cleanup). Returns 0 on success. */
int lab_kill_target(struct test_lab *lab);

#endif
