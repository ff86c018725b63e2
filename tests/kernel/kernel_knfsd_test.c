/* Linux knfsd as the reference block-layout server: XFS on a LUN of the guest's LIO, exported by
 * knfsd with the pnfs option (Debian's 6.1 kernel has NFSD_BLOCKLAYOUT, not NFSD_SCSILAYOUT), the
 * same LUN reachable from the host's libiscsi. The project's client writes and reads files there
 * through layouts (LAYOUTCOMMIT accepted, the guest reads what the host wrote), and pnfs-extents'
 * map of a fragmented file agrees with `xfs_bmap -v` of it, LBA for LBA. */
#include "tests/harness.h"
#include "tests/kernel/vmlab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct vmlab L;
static int knfsd_up;
static char knfsd_failed[2048];

static int suite_init(void)
{
	char *out = NULL;

	vmlab_up(&L, "kknfsd", "--san lio --luns 1 --size 512M --no-mds --mem 1536");
	if (!L.up)
		return 0;
	if (vmlab_guest(&L, &out, "vm-login >/dev/null || exit 1\nvm-knfsd /dev/sda\n") == 0)
		knfsd_up = 1;
	else
		snprintf(knfsd_failed, sizeof(knfsd_failed), "%s", out ? out : "");
	free(out);
	return 0;
}

static int suite_clean(void)
{
	vmlab_down(&L);
	return 0;
}

#define REQUIRE_KNFSD()                                                                   \
	do {                                                                              \
		VM_REQUIRE_LAB(&L);                                                       \
		if (!knfsd_up)                                                            \
			fprintf(stderr, "\n  knfsd did not start in the guest:\n%s\n", knfsd_failed); \
		CU_ASSERT_FATAL(knfsd_up);                                                \
	} while (0)

/* libpnfs against knfsd: the data goes straight to the LUN both ways, knfsd accepts the
 * LAYOUTCOMMIT, and the guest's XFS holds the bytes. */
static void test_libpnfs_on_knfsd(void)
{
	char *out = NULL, *gout = NULL;
	char a[40], b[40], c[40];
	int rc;

	REQUIRE_KNFSD();
	rc = vmlab_host(&L, &out,
			"T=$(mktemp -d)\n"
			"U=pnfs://$VM_GUEST_ADDR\n"
			"head -c 24M /dev/urandom > $T/f\n"
			"echo src=$(md5sum < $T/f | cut -c1-32)\n"
			"pnfs cp -q --stats --json %s $T/f $U/kn1 2>$T/w\n"
			"echo wdirect=$(grep -o '\"direct_bytes_written\": *[0-9]*' $T/w | grep -o '[0-9]*$')\n"
			"echo wmds=$(grep -o '\"mds_data_written\": *[0-9]*' $T/w | grep -o '[0-9]*$')\n"
			"echo commits=$(grep -o '\"layouts_committed\": *[0-9]*' $T/w | grep -o '[0-9]*$')\n"
			"pnfs cp -q --stats --json %s $U/kn1 $T/back 2>$T/r\n"
			"echo back=$(md5sum < $T/back | cut -c1-32)\n"
			"echo rdirect=$(grep -o '\"direct_bytes_read\": *[0-9]*' $T/r | grep -o '[0-9]*$')\n"
			"cat $T/w $T/r | grep -v '^{' || true\n"
			"rm -rf $T\n",
			L.dev_opts, L.dev_opts);
	VM_CHECK(rc == 0, out);
	vmlab_md5(out, "src", a);
	vmlab_md5(out, "back", b);
	VM_CHECK(strlen(a) == 32 && !strcmp(a, b), out);
	VM_CHECK(vmlab_kv(out, "wdirect") == 24LL << 20, out);
	VM_CHECK(vmlab_kv(out, "wmds") == 0, out);
	VM_CHECK(vmlab_kv(out, "rdirect") == 24LL << 20, out);
	rc = vmlab_guest(&L, &gout,
			 "echo 3 > /proc/sys/vm/drop_caches\n"
			 "echo guest=$(md5sum < /export/kn1 | cut -c1-32)\n"
			 "echo size=$(stat -c %%s /export/kn1)\n");
	VM_CHECK(rc == 0, gout);
	vmlab_md5(gout, "guest", c);
	VM_CHECK(!strcmp(a, c), gout);
	VM_CHECK(vmlab_kv(gout, "size") == 24LL << 20, gout);
	free(out);
	free(gout);
}

/* A fragmented file written in the guest (1 MiB pieces with holes between, another file's blocks
 * interleaved): every data extent pnfs-extents reports from knfsd's layout has the LBAs that
 * xfs_bmap -v gives for it, and --verify finds the LUN's bytes equal to knfsd's READ. */
static void test_extents_agree_with_xfs_bmap(void)
{
	char *gout = NULL, *out = NULL;
	int rc;

	REQUIRE_KNFSD();
	rc = vmlab_guest(&L, &gout,
			 "for i in 0 1 2 3 4 5; do\n"
			 "  dd if=/dev/urandom of=/export/kfrag bs=1M count=1 seek=$((i * 2)) conv=notrunc,fsync 2>/dev/null\n"
			 "  dd if=/dev/urandom of=/export/kfill$i bs=1M count=1 conv=fsync 2>/dev/null\n"
			 "done\n"
			 "sync\n"
			 "xfs_io -r -c 'bmap -v' /export/kfrag > /lab/kfrag.bmap || exit 1\n"
			 "cat /lab/kfrag.bmap\n");
	VM_CHECK(rc == 0, gout);
	rc = vmlab_host(&L, &out,
			"S=%s/share\n"
			"pnfs-extents --json %s pnfs://$VM_GUEST_ADDR/kfrag > $S/kfrag.json\n"
			"pnfs-extents --verify %s pnfs://$VM_GUEST_ADDR/kfrag > $S/kfrag.verify 2>&1; echo verify=$?\n"
			"/usr/bin/python3 - $S/kfrag.json $S/kfrag.bmap <<'EOF'\n"
			"import json, re, sys\n"
			"j = json.load(open(sys.argv[1]))\n"
			"size = j['size']\n"
			"ours = {}\n"
			"for e in j['extents']:\n"
			"    if e['state'] == 'NONE': continue\n"
			"    for p in e['pieces']:\n"
			"        assert p['block_bytes'] == 512, p\n"
			"        for k in range(p['length'] // 512):\n"
			"            ours[p['file_offset'] // 512 + k] = p['lba_first'] + k\n"
			"xfs = {}\n"
			"for line in open(sys.argv[2]):\n"
			"    m = re.match(r'\\s*\\d+: \\[(\\d+)\\.\\.(\\d+)\\]:\\s+(\\d+)\\.\\.(\\d+)', line)\n"
			"    if not m: continue\n"
			"    f0, f1, b0, b1 = map(int, m.groups())\n"
			"    for k in range(f1 - f0 + 1):\n"
			"        if (f0 + k) * 512 < size: xfs[f0 + k] = b0 + k\n"
			"print('data_sectors=%%d xfs_sectors=%%d' %% (len(ours), len(xfs)))\n"
			"print('xfs_extents=%%d' %% sum(1 for l in open(sys.argv[2]) if re.match(r'\\s*\\d+: \\[\\d+\\.\\.\\d+\\]:\\s+\\d+', l)))\n"
			"bad = [s for s in set(ours) | set(xfs) if ours.get(s) != xfs.get(s)]\n"
			"print('mismatched_sectors=%%d' %% len(bad))\n"
			"EOF\n",
			L.dir, L.dev_opts, L.dev_opts);
	VM_CHECK(rc == 0, out);
	VM_CHECK(vmlab_kv(out, "verify") == 0, out);
	VM_CHECK(vmlab_kv(out, "data_sectors") == 6 * 2048, out);
	VM_CHECK(vmlab_kv(out, "xfs_extents") >= 2, out);
	VM_CHECK(vmlab_kv(out, "mismatched_sectors") == 0, out);
	fprintf(stderr, "\n  xfs_bmap -v:\n%s  compared: %s", gout, out);
	free(gout);
	free(out);
}

TEST_SUITE(kernel_knfsd, "kernel/knfsd", suite_init, suite_clean,
	   { "libpnfs writes and reads through knfsd's block layouts", test_libpnfs_on_knfsd },
	   { "pnfs-extents on knfsd agrees with xfs_bmap", test_extents_agree_with_xfs_bmap });
