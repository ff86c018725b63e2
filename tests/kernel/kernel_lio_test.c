/* LIO built by targetcli-fb from `san-lab targetcli` output, run unchanged in the guest (the host's
 * targetcli-fb and its Python, chrooted into the host's root shared read-only): a pool formatted on
 * its LUNs, pnfs-mds serving it with its defaults (SCSI layouts: LIO accepts the APTPL bit), and
 * files copied in and out through layouts; then libiscsi's persistent-reservation suite
 * (iscsi-test-cu) against LIO and against tgt, side by side. */
#include "tests/harness.h"
#include "tests/kernel/vmlab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct vmlab L;
static int lio_up;
static char lio_failed[4096];
#define TCLI_IQN "iqn.2026-12.org.pnfs-san:tcli"

static int suite_init(void)
{
	char *out = NULL;
	int rc;

	vmlab_up(&L, "klio", "--san none --host-root --mem 1536");
	if (!L.up)
		return 0;
	/* Admit the guest, pnfs-mds (its initiator name is fixed) and this host's clients under
	 * either default initiator name (the host's open-iscsi name, or blkmap's made-up one). */
	rc = vmlab_host(&L, &out,
			"GI=iqn.2026-12.org.pnfs-san:vm-lab.guest\n"
			"HI1=$(sed -n 's/^InitiatorName=//p' /etc/iscsi/initiatorname.iscsi 2>/dev/null || true)\n"
			"HI2=iqn.2024-01.org.pnfs-san:blkmap.$(hostname | tr A-Z a-z | sed 's/[^a-z0-9.-]/-/g')\n"
			"san-lab targetcli --luns 2 --size 96M --iqn " TCLI_IQN " --portal $VM_GUEST_ADDR:3260 \\\n"
			"  --backstore-dir /run/lio --initiator $GI --initiator iqn.2024-01.org.pnfs-san:mds --initiator $HI2 \\\n"
			"  ${HI1:+--initiator $HI1} > %s/share/tcli.sh\n"
			"cat %s/share/tcli.sh\n",
			L.dir, L.dir);
	if (rc == 0) {
		free(out);
		out = NULL;
		rc = vmlab_guest(&L, &out,
				 "vm-lio --modules || exit 1\n"
				 "vm-host sh /mnt/tcli.sh > /tmp/tcli.out 2>&1 || { cat /tmp/tcli.out; exit 1; }\n"
				 "ls /sys/kernel/config/target/iscsi/" TCLI_IQN "/tpgt_1/lun\n");
	}
	if (rc == 0)
		lio_up = 1;
	else
		snprintf(lio_failed, sizeof(lio_failed), "%s", out ? out : "");
	free(out);
	return 0;
}

static int suite_clean(void)
{
	vmlab_down(&L);
	return 0;
}

#define REQUIRE_LIO()                                                                      \
	do {                                                                               \
		VM_REQUIRE_LAB(&L);                                                        \
		if (!lio_up)                                                               \
			fprintf(stderr, "\n  targetcli did not build the target:\n%s\n", lio_failed); \
		CU_ASSERT_FATAL(lio_up);                                                   \
	} while (0)

/* pnfs-admin format on the targetcli-made LUNs, pnfs-mds with its defaults, pnfs cp both ways. */
static void test_pool_on_targetcli_lio(void)
{
	char *out = NULL;
	char a[40], b[40];
	int rc;

	REQUIRE_LIO();
	rc = vmlab_host(&L, &out,
			"P=iscsi://$VM_GUEST_ADDR:3260/" TCLI_IQN "\n"
			"pnfs-admin format --pool %s/pool $P/0\n"
			"vm-lab mds --dir %s start --mds-opt=--lease-time=10\n",
			L.dir, L.dir);
	VM_CHECK(rc == 0, out);
	free(out);
	out = NULL;
	rc = vmlab_host(&L, &out,
			"P=iscsi://$VM_GUEST_ADDR:3260/" TCLI_IQN "\n"
			"T=$(mktemp -d)\n"
			"head -c 32M /dev/urandom > $T/f\n"
			"echo src=$(md5sum < $T/f | cut -c1-32)\n"
			"pnfs cp -q --stats --json --device $P/0 $T/f \"$VM_MDS_URL/lio1\" 2>$T/w\n"
			"pnfs cp -q --stats --json --device $P/0 \"$VM_MDS_URL/lio1\" $T/b 2>$T/r\n"
			"echo back=$(md5sum < $T/b | cut -c1-32)\n"
			"echo wdirect=$(grep -o '\"direct_bytes_written\": *[0-9]*' $T/w | grep -o '[0-9]*$')\n"
			"echo rdirect=$(grep -o '\"direct_bytes_read\": *[0-9]*' $T/r | grep -o '[0-9]*$')\n"
			"echo scsi=$(curl -sf \"$VM_METRICS_URL\" | sed -n 's/^pnfs_mds_layouts_granted_total{type=\"scsi\",iomode=\"rw\"} //p')\n"
			"rm -rf $T\n");
	VM_CHECK(rc == 0, out);
	vmlab_md5(out, "src", a);
	vmlab_md5(out, "back", b);
	VM_CHECK(strlen(a) == 32 && !strcmp(a, b), out);
	VM_CHECK(vmlab_kv(out, "wdirect") == 32LL << 20, out);
	VM_CHECK(vmlab_kv(out, "rdirect") == 32LL << 20, out);
	VM_CHECK(vmlab_kv(out, "scsi") > 0, out);
	free(out);
}

/* Whether "Suite.Test ...passed" is in an iscsi-test-cu -v log. */
static int pr_passed(const char *log, const char *suite, const char *test)
{
	char pat[128];
	const char *s;
	snprintf(pat, sizeof(pat), "Suite: %s\n", suite);
	s = log ? strstr(log, pat) : NULL;
	if (!s)
		return 0;
	snprintf(pat, sizeof(pat), "  Test: %s ...passed", test);
	for (const char *p = strstr(s + 1, "  Test: "); p; p = strstr(p + 1, "  Test: ")) {
		const char *next_suite = strstr(s + 1, "Suite: ");
		if (next_suite && p > next_suite)
			break;
		if (!strncmp(p, pat, strlen(pat)))
			return 1;
	}
	return 0;
}

/* libiscsi's PR tests against LIO (LUN 1, not in the pool) and against a tgt LUN. LIO passes all of
 * them; on both, what pnfs-mds relies on passes: REGISTER, READ KEYS, RESERVE with EXCLUSIVE
 * ACCESS - REGISTRANTS ONLY, PREEMPT removing a registration, CLEAR. */
static void test_pr_suite_lio_and_tgt(void)
{
	char *lio = NULL, *tgt = NULL;
	static const char *const needed[][2] = {
		{ "ProutRegister", "Simple" },         { "PrinReadKeys", "Simple" },
		{ "ProutReserve", "Simple" },          { "ProutReserve", "AccessEARO" },
		{ "ProutPreempt", "RemoveRegistration" }, { "ProutClear", "Simple" },
	};

	REQUIRE_LIO();
	(void)vmlab_host(&L, &lio,
			 "iscsi-test-cu --dataloss -v -t 'ALL.Prout*,ALL.Prin*' -i iqn.2026-12.org.pnfs-san:vm-lab.guest "
			 "-I iqn.2024-01.org.pnfs-san:blkmap.$(hostname | tr A-Z a-z | sed 's/[^a-z0-9.-]/-/g') "
			 "iscsi://$VM_GUEST_ADDR:3260/" TCLI_IQN "/1 2>&1\n");
	(void)test_run(&tgt,
		       "D=%s/prtgt; P=$(python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); "
		       "print(s.getsockname()[1])'); "
		       "'%s' up --luns 1 --size 64M --dir $D --port $P --fresh >/dev/null && "
		       "iscsi-test-cu --dataloss -v -t 'ALL.Prout*,ALL.Prin*' $('%s' urls --dir $D | head -1) 2>&1; "
		       "'%s' down --wipe --dir $D >/dev/null 2>&1",
		       L.dir, test_bin("san-lab"), test_bin("san-lab"), test_bin("san-lab"));
	CU_ASSERT(lio && strstr(lio, "Run Summary") != NULL);
	CU_ASSERT(tgt && strstr(tgt, "Run Summary") != NULL);
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (!pr_passed(lio, needed[i][0], needed[i][1]) || !pr_passed(tgt, needed[i][0], needed[i][1]))
			fprintf(stderr, "\n  %s.%s: LIO %s, tgt %s\n", needed[i][0], needed[i][1],
				pr_passed(lio, needed[i][0], needed[i][1]) ? "passed" : "FAILED",
				pr_passed(tgt, needed[i][0], needed[i][1]) ? "passed" : "FAILED");
		CU_ASSERT(pr_passed(lio, needed[i][0], needed[i][1]));
		CU_ASSERT(pr_passed(tgt, needed[i][0], needed[i][1]));
	}
	/* LIO: every PR test of the suite. */
	CU_ASSERT(lio && strstr(lio, "tests     20     20     20      0"));
	fprintf(stderr, "\n  iscsi-test-cu PR tests, LIO then tgt:\n");
	for (const char *log = lio; log; log = log == lio ? tgt : NULL) {
		const char *p = log ? strstr(log, "Run Summary") : NULL;
		const char *t = p ? strstr(p, "tests ") : NULL;
		fprintf(stderr, "    %.*s\n", t ? (int)strcspn(t, "\n") : 0, t ? t : "");
	}
	free(lio);
	free(tgt);
}

TEST_SUITE(kernel_lio, "kernel/lio", suite_init, suite_clean,
	   { "a pool on LIO built by san-lab's targetcli script", test_pool_on_targetcli_lio },
	   { "libiscsi's PR suite on LIO and on tgt", test_pr_suite_lio_and_tgt });
