/* Linux's own pNFS SCSI-layout client (RFC 8154) against pnfs-mds with its default settings, the
 * LUNs served by LIO (the guest's own kernel target, set up through configfs as targetcli does;
 * tgt refuses the APTPL bit the kernel sets when it registers its key). The kernel finds each
 * LUN by the designator the MDS sends, as /dev/disk/by-id/wwn-0x<id> made by the guest's udev,
 * registers its key, and does its I/O on the LUNs; a guest cut off from the MDS is fenced: its
 * key is preempted and its later writes fail with RESERVATION CONFLICT, and none of their bytes
 * reach the blocks the MDS hands to another file. */
#include "tests/harness.h"
#include "tests/kernel/vmlab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct vmlab L;

static int suite_init(void)
{
	/* A short lease: the fencing case waits for a recall to time out. */
	return vmlab_up(&L, "kscsi", "--san lio --mem 1536 --mds-opt=--lease-time=10");
}

static int suite_clean(void)
{
	vmlab_down(&L);
	return 0;
}

/* dd through SCSI layouts: the kernel opens the LUNs by the designators udev named, registers its
 * key (no "failed to register"), writes and reads on the LUNs; nothing through the MDS. */
static void test_scsi_direct_io(void)
{
	char *out = NULL, *hout = NULL;
	char src[40], buf[40], dir[40], rd[40], h[40];
	long long w0, r0;
	int rc;

	VM_REQUIRE_LAB(&L);
	w0 = vmlab_metric(&L, "pnfs_mds_data_written_bytes_total");
	r0 = vmlab_metric(&L, "pnfs_mds_data_read_bytes_total");
	/* LIO accepted the server's REGISTER with APTPL at start (and took APTPL back off): SCSI layouts
	 * are offered with the default scsi-layouts auto */
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_scsi_layouts_offered") == 1);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_lun_aptpl{lun=\"0\"}") == 1);
	CU_ASSERT_EQUAL(vmlab_log_count(&L, "SCSI layouts off"), 0);
	CU_ASSERT_EQUAL(vmlab_log_count(&L, "APTPL stays active"), 0);
	rc = vmlab_guest(&L, &out,
			 "vm-login >/dev/null || exit 1\n"
			 "echo links=$(ls /dev/disk/by-id | grep -c '^wwn-0x')\n"
			 "vm-mount || exit 1\n"
			 "dd if=/dev/urandom of=/tmp/src bs=1M count=32 2>/dev/null\n"
			 "dd if=/tmp/src of=/mnt/kscsi-buf bs=1M conv=fsync 2>/dev/null || exit 1\n"
			 "dd if=/tmp/src of=/mnt/kscsi-direct bs=1M oflag=direct 2>/dev/null || exit 1\n"
			 "sync; echo 3 > /proc/sys/vm/drop_caches\n"
			 "echo src=$(md5sum < /tmp/src | cut -c1-32)\n"
			 "echo buf=$(md5sum < /mnt/kscsi-buf | cut -c1-32)\n"
			 "echo dir=$(md5sum < /mnt/kscsi-direct | cut -c1-32)\n"
			 "echo rd=$(dd if=/mnt/kscsi-direct bs=1M iflag=direct 2>/dev/null | md5sum | cut -c1-32)\n"
			 "rm -f /tmp/src\n"
			 "echo registered=$(dmesg | grep -c 'pNFS: using block device sd.*reservation key')\n"
			 "echo regfail=$(dmesg | grep -c 'failed to register key')\n"
			 "grep -E '^[[:space:]]+(READ|WRITE|LAYOUTGET|GETDEVICEINFO|LAYOUTCOMMIT):' /proc/self/mountstats\n"
			 "dmesg | grep pNFS | tail -4\n");
	VM_CHECK(rc == 0, out);
	vmlab_md5(out, "src", src);
	vmlab_md5(out, "buf", buf);
	vmlab_md5(out, "dir", dir);
	vmlab_md5(out, "rd", rd);
	VM_CHECK(vmlab_is_md5(src) && !strcmp(src, buf) && !strcmp(src, dir) && !strcmp(src, rd), out);
	VM_CHECK(vmlab_kv(out, "links") == 4, out);
	VM_CHECK(vmlab_kv(out, "registered") == 4, out);
	VM_CHECK(vmlab_kv(out, "regfail") == 0, out);
	VM_CHECK(vmlab_mountstat(out, "LAYOUTGET") > 0, out);
	VM_CHECK(vmlab_mountstat(out, "GETDEVICEINFO") > 0, out);
	VM_CHECK(vmlab_mountstat(out, "LAYOUTCOMMIT") > 0, out);
	VM_CHECK(vmlab_mountstat(out, "WRITE") == 0, out);
	fprintf(stderr, "\n  guest mountstats (SCSI layouts on LIO):\n%s", strstr(out, "READ:") ? strstr(out, "READ:") - 9 : out);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_layouts_granted_total{type=\"scsi\",iomode=\"rw\"}") > 0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_data_written_bytes_total") == w0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_data_read_bytes_total") == r0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_scsi_fencing") == 1);

	/* libpnfs on the host reads the same bytes through its own SCSI layout and key. */
	rc = vmlab_host(&L, &hout,
			"pnfs cp -q %s --stats --json \"$VM_MDS_URL/kscsi-buf\" /dev/stdout 2>/tmp/kscsi.stats | md5sum | sed 's/^/h=/'\n"
			"echo direct=$(grep -o '\"direct_bytes_read\": *[0-9]*' /tmp/kscsi.stats | grep -o '[0-9]*$')\n"
			"rm -f /tmp/kscsi.stats\n",
			L.dev_opts);
	VM_CHECK(rc == 0, hout);
	vmlab_md5(hout, "h", h);
	VM_CHECK(!strcmp(h, src), hout);
	VM_CHECK(vmlab_kv(hout, "direct") == 32LL * 1024 * 1024, hout);
	free(out);
	free(hout);
}

/* Fencing a kernel client: the guest writes a file through its layout, then loses the MDS (its
 * packets to and from the MDS port are dropped; the LUNs stay reachable). The host removes the
 * file; the recall goes unanswered, the MDS preempts the guest's key when the recall times out,
 * and only then frees the blocks. The guest's writes from then on fail on the LUNs with
 * RESERVATION CONFLICT, and a file the host writes into the freed blocks reads back as written. */
static void test_fencing_a_kernel_client(void)
{
	char *out = NULL, *hout = NULL;
	char a[40], b[40];
	long long fenced0, fenced = -1;
	int rc;

	VM_REQUIRE_LAB(&L);
	rc = vmlab_guest(&L, &out,
			 "vm-login >/dev/null || exit 1\n"
			 "vm-mount || exit 1\n"
			 "dd if=/dev/zero of=/mnt/kfence bs=1M count=8 conv=fsync 2>/dev/null || exit 1\n"
			 "dmesg -c >/dev/null\n"
			 /* One descriptor, the same 8 MiB rewritten with 0xab through the layout every
			  * 0.2 s: no OPEN, CLOSE or LAYOUTCOMMIT needs the MDS while it is cut off. */
			 "vm-rewrite /mnt/kfence 8 0xab > /tmp/writer.log 2>&1 &\n"
			 "echo $! > /tmp/writer.pid\n"
			 "i=0; while ! grep -q 'pass 2 done' /tmp/writer.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n"
			 "grep -q 'pass 2 done' /tmp/writer.log || { cat /tmp/writer.log; exit 1; }\n"
			 "echo ok=1\n");
	VM_CHECK(rc == 0, out);
	free(out);
	out = NULL;
	fenced0 = vmlab_metric(&L, "pnfs_mds_fenced_clients_total");
	rc = test_run(&hout, "'%s' cut --dir '%s' mds 2>&1", test_bin("vm-lab"), L.dir);
	CU_ASSERT(rc == 0);
	free(hout);
	hout = NULL;
	rc = vmlab_host(&L, &hout, "pnfs rm %s \"$VM_MDS_URL/kfence\"; echo rm=$?\n", L.dev_opts);
	VM_CHECK(rc == 0 && vmlab_kv(hout, "rm") == 0, hout);
	free(hout);
	hout = NULL;
	/* The recall times out after the lease (10 s), then the guest is fenced. */
	for (int i = 0; i < 400; i++) {
		fenced = vmlab_metric(&L, "pnfs_mds_fenced_clients_total");
		if (fenced > fenced0)
			break;
		usleep(100000);
	}
	CU_ASSERT(fenced > fenced0);
	/* A new file takes the freed blocks; the guest's writer keeps trying meanwhile. */
	rc = vmlab_host(&L, &hout,
			"T=$(mktemp -d)\n"
			"head -c 32M /dev/urandom > $T/n\n"
			"pnfs cp -q %s $T/n \"$VM_MDS_URL/knew\"\n"
			"echo wrote=$(md5sum < $T/n | cut -c1-32)\n"
			"sleep 3\n"
			"pnfs cp -q %s \"$VM_MDS_URL/knew\" $T/back\n"
			"echo back=$(md5sum < $T/back | cut -c1-32)\n"
			"echo ab=$(tr -cd '\\253' < $T/back | wc -c)\n"
			"rm -rf $T\n",
			L.dev_opts, L.dev_opts);
	VM_CHECK(rc == 0, hout);
	vmlab_md5(hout, "wrote", a);
	vmlab_md5(hout, "back", b);
	VM_CHECK(vmlab_is_md5(a) && !strcmp(a, b), hout);
	rc = vmlab_guest(&L, &out,
			 "echo conflicts=$(dmesg | grep -c -i 'reservation conflict')\n"
			 "dmesg | grep -i -E 'reservation|pnfs' | tail -5\n"
			 "tail -3 /tmp/writer.log\n"
			 "kill $(cat /tmp/writer.pid) 2>/dev/null; true\n");
	VM_CHECK(rc == 0, out);
	VM_CHECK(vmlab_kv(out, "conflicts") > 0, out);
	CU_ASSERT(vmlab_log_count(&L, "fenced") > 0);
	(void)test_run(NULL, "'%s' cut --dir '%s' none >/dev/null 2>&1", test_bin("vm-lab"), L.dir);
	free(out);
	free(hout);
}

TEST_SUITE(kernel_scsi, "kernel/scsi", suite_init, suite_clean,
	   { "SCSI layouts on LIO: designators, key registration, direct I/O", test_scsi_direct_io },
	   { "a kernel client cut off from the MDS is fenced", test_fencing_a_kernel_client });
