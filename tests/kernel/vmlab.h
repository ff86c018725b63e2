/* The kernel suites' lab: tools/vm-lab (a guest running Debian's kernel under qemu, a tgtd and a
 * pnfs-mds in a network namespace), driven from C. A suite brings one lab up in its init and down
 * in its cleanup; when this host cannot boot a guest at all (vm-lab exits 77: no qemu, no kernel
 * package, not root) every case of the suite skips with vm-lab's one-line reason. */
#ifndef TESTS_KERNEL_VMLAB_H
#define TESTS_KERNEL_VMLAB_H

#include <stddef.h>

struct vmlab {
	char dir[320];
	int up;            /* the guest is ready */
	char skip[256];    /* why this host cannot run the suite (then up is 0) */
	char failed[1024]; /* why up failed on a host that could run it */
	char mds[64];      /* HOST:PORT of the lab's pnfs-mds */
	char url[96];      /* pnfs://HOST:PORT */
	char luns[1024];   /* the LUN URLs, space-separated */
	char dev_opts[1400]; /* --device URL ... for pnfs and pnfs-extents */
};

/* vm-lab up with extra options (e.g. "--mds-opt=--scsi-layouts=no"). 0 in every case: a suite
 * init never fails, its cases skip (lab->skip) or fail (lab->failed) with the reason. */
int vmlab_up(struct vmlab *lab, const char *tag, const char *opts);
void vmlab_down(struct vmlab *lab);

/* Run a shell script in the guest (as root); *out (malloc'd, may be NULL) gets its stdout and
 * stderr. Returns its exit status, or -1. */
int vmlab_guest(struct vmlab *lab, char **out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Run a bash script on the host inside the lab's namespace, with vm-lab's env variables. */
int vmlab_host(struct vmlab *lab, char **out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* In text of KEY=VALUE lines, the md5 (32 hex digits) after "KEY=" into buf[33] ("" if absent);
 * returns buf. */
const char *vmlab_md5(const char *text, const char *key, char *buf);
/* Whether s is 32 lower-case hex digits. */
int vmlab_is_md5(const char *s);
/* In text of KEY=VALUE lines, the number after "KEY=" (-1 if absent). */
long long vmlab_kv(const char *text, const char *key);
/* A counter from a /proc/self/mountstats dump: the ops count of "  NAME:" (-1 if absent). */
long long vmlab_mountstat(const char *text, const char *op);
/* A Prometheus sample "NAME VALUE" or "NAME{labels} VALUE" from the MDS's metrics (-1 if absent). */
long long vmlab_metric(struct vmlab *lab, const char *sample);
/* Lines of the MDS's log containing needle. */
int vmlab_log_count(struct vmlab *lab, const char *needle);

/* CUnit-style checks with the guest's output shown on failure. */
#define VM_CHECK(cond, out)                                                          \
	do {                                                                         \
		if (!(cond))                                                         \
			fprintf(stderr, "\n  failed: %s\n  output:\n%s\n", #cond, (out) ? (out) : ""); \
		CU_ASSERT(cond);                                                     \
	} while (0)

#define VM_REQUIRE_LAB(lab)                                           \
	do {                                                          \
		TEST_SKIP_IF(!(lab)->up && (lab)->skip[0], "%s", (lab)->skip); \
		if (!(lab)->up) {                                     \
			fprintf(stderr, "\n  vm-lab up failed: %s\n", (lab)->failed); \
			CU_FAIL_FATAL("vm-lab up failed");            \
		}                                                     \
	} while (0)

#endif
