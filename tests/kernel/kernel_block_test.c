/* Linux's own pNFS block-layout client against pnfs-mds with its defaults: Debian's kernel in a qemu
 * guest (tools/vm-lab) logs in to the lab's tgtd with open-iscsi, finds the pool's LUNs by signature
 * with blkmapd, mounts with vers=4.1 and writes and reads through block-volume layouts (tgt refuses
 * the APTPL bit the kernel would register a SCSI-layout key with, so the server offers none); the
 * host's libpnfs reads and writes the same files; a host truncate recalls the kernel's layout;
 * blkmap apply builds device-mapper devices in the guest over the open-iscsi disks. */
#include "tests/harness.h"
#include "tests/kernel/vmlab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct vmlab L;

static int suite_init(void)
{
	/* The server's defaults on tgt: block-volume layouts only (tgt refuses APTPL), the LUNs not
	 * reserved, so blkmap on the host and the guest share them with the kernel client. */
	return vmlab_up(&L, "kblock", "");
}

static int suite_clean(void)
{
	vmlab_down(&L);
	return 0;
}

/* blkmap apply in the guest: a striped (the pool's own volume), a concatenated and a sliced volume
 * over the open-iscsi disks; bytes written by the host's userspace engine read the same through
 * /dev/mapper/NAME and the other way round; remove takes the devices away. Runs first: it writes
 * raw volume ranges that no file uses yet (files written later overwrite them). */
static void test_blkmap_apply_in_guest(void)
{
	char *out = NULL;
	int rc;
	static const struct {
		const char *name;
		long long off_mib;
	} vols[] = { { "kstripe", 512 }, { "kconcat", 251 }, { "kslice", 0 } };

	VM_REQUIRE_LAB(&L);
	rc = vmlab_host(&L, &out,
			"S=%s/share\n"
			"blkmap show --text --pool \"$VM_POOL\" > $S/kstripe.vol\n"
			/* LUN 2's and LUN 3's slices, concatenated: 251 MiB + 8 MiB crosses from one to the other */
			"{ sed -n 5p $S/kstripe.vol; echo 'slice 1M 255M 0'; sed -n 7p $S/kstripe.vol;"
			"  echo 'slice 1M 255M 2'; echo 'concat 1 3'; } > $S/kconcat.vol\n"
			/* 64 MiB of LUN 1 from 100 MiB on */
			"{ sed -n 3p $S/kstripe.vol; echo 'slice 100M 64M 0'; } > $S/kslice.vol\n"
			"for v in kstripe kconcat kslice; do head -c 8M /dev/urandom > $S/$v.host; done\n"
			"blkmap write --vol $S/kstripe.vol --portal iscsi://$VM_HOST_ADDR:3260 --offset 512M --input $S/kstripe.host\n"
			"blkmap write --vol $S/kconcat.vol --portal iscsi://$VM_HOST_ADDR:3260 --offset 251M --input $S/kconcat.host\n"
			"blkmap write --vol $S/kslice.vol --portal iscsi://$VM_HOST_ADDR:3260 --offset 0 --input $S/kslice.host\n",
			L.dir);
	VM_CHECK(rc == 0, out);
	free(out);
	out = NULL;

	rc = vmlab_guest(&L, &out,
			 "vm-login >/dev/null || exit 1\n"
			 "for v in kstripe:512 kconcat:251 kslice:0; do\n"
			 "  n=${v%%:*}; o=${v#*:}\n"
			 "  blkmap apply --vol /lab/$n.vol --local --name $n || exit 1\n"
			 "  [ -b /dev/mapper/$n ] || { echo no /dev/mapper/$n; exit 1; }\n"
			 "  echo $n.table=$(dmsetup table $n | awk '{print $3}' | head -1)\n"
			 "  echo $n.read=$(dd if=/dev/mapper/$n bs=1M skip=$o count=8 iflag=direct 2>/dev/null | md5sum | cut -c1-32)\n"
			 "  echo $n.host=$(md5sum < /lab/$n.host | cut -c1-32)\n"
			 "  dd if=/dev/urandom of=/lab/$n.guest bs=1M count=8 2>/dev/null\n"
			 "  dd if=/lab/$n.guest of=/dev/mapper/$n bs=1M seek=$((o + 8)) oflag=direct conv=notrunc 2>/dev/null || exit 1\n"
			 "  echo $n.guest=$(md5sum < /lab/$n.guest | cut -c1-32)\n"
			 "done\n");
	VM_CHECK(rc == 0, out);
	for (size_t i = 0; i < sizeof(vols) / sizeof(vols[0]); i++) {
		char k1[64], k2[64], a[40], b[40];
		snprintf(k1, sizeof(k1), "%s.read", vols[i].name);
		snprintf(k2, sizeof(k2), "%s.host", vols[i].name);
		vmlab_md5(out, k1, a);
		vmlab_md5(out, k2, b);
		VM_CHECK(vmlab_is_md5(a) && !strcmp(a, b), out);
	}
	VM_CHECK(strstr(out, "kstripe.table=striped") != NULL, out);
	VM_CHECK(strstr(out, "kconcat.table=linear") != NULL, out);
	VM_CHECK(strstr(out, "kslice.table=linear") != NULL, out);
	free(out);
	out = NULL;

	/* The guest's writes through dm, read by the host's userspace engine. */
	rc = vmlab_host(&L, &out,
			"S=%s/share\n"
			"for v in kstripe:520M kconcat:259M kslice:8M; do n=${v%%:*}; o=${v#*:}\n"
			"  echo $n.engine=$(blkmap read --vol $S/$n.vol --portal iscsi://$VM_HOST_ADDR:3260 --offset $o --length 8M | md5sum | cut -c1-32)\n"
			"  echo $n.wrote=$(md5sum < $S/$n.guest | cut -c1-32)\n"
			"done\n",
			L.dir);
	VM_CHECK(rc == 0, out);
	for (size_t i = 0; i < sizeof(vols) / sizeof(vols[0]); i++) {
		char k1[64], k2[64], a[40], b[40];
		snprintf(k1, sizeof(k1), "%s.engine", vols[i].name);
		snprintf(k2, sizeof(k2), "%s.wrote", vols[i].name);
		vmlab_md5(out, k1, a);
		vmlab_md5(out, k2, b);
		VM_CHECK(vmlab_is_md5(a) && !strcmp(a, b), out);
	}
	free(out);
	out = NULL;

	rc = vmlab_guest(&L, &out,
			 "for n in kstripe kconcat kslice; do blkmap remove --vol /lab/$n.vol --local --name $n || exit 1; done\n"
			 "echo left=$(dmsetup ls | grep -c -E 'kstripe|kconcat|kslice')\n"
			 "ls /dev/mapper\n");
	VM_CHECK(rc == 0, out);
	VM_CHECK(vmlab_kv(out, "left") == 0, out);
	free(out);
}

/* 64 MiB written by dd through the kernel client, buffered + fsync and O_DIRECT, read back after
 * dropping the caches (buffered and O_DIRECT); mountstats and the MDS's metrics show layouts and
 * no file data through the MDS; the host's libpnfs reads the same bytes, pnfs-extents --verify
 * finds the LUNs hold what the MDS path returns. */
static void test_dd_through_layouts(void)
{
	char *out = NULL, *hout = NULL;
	char src[40], buf[40], dir[40], rbuf[40], rdir[40], h1[40], h2[40];
	long long w0, r0, rc;

	VM_REQUIRE_LAB(&L);
	w0 = vmlab_metric(&L, "pnfs_mds_data_written_bytes_total");
	r0 = vmlab_metric(&L, "pnfs_mds_data_read_bytes_total");
	CU_ASSERT(w0 >= 0 && r0 >= 0);
	rc = vmlab_guest(&L, &out,
			 "vm-login >/dev/null || exit 1\n"
			 "vm-mount || exit 1\n"
			 "dd if=/dev/urandom of=/tmp/src bs=1M count=64 2>/dev/null\n"
			 "dd if=/tmp/src of=/mnt/kblock-buf bs=1M conv=fsync 2>/dev/null || exit 1\n"
			 "dd if=/tmp/src of=/mnt/kblock-direct bs=1M oflag=direct 2>/dev/null || exit 1\n"
			 "sync; echo 3 > /proc/sys/vm/drop_caches\n"
			 "echo src=$(md5sum < /tmp/src | cut -c1-32)\n"
			 "echo buf=$(md5sum < /mnt/kblock-buf | cut -c1-32)\n"
			 "echo dir=$(md5sum < /mnt/kblock-direct | cut -c1-32)\n"
			 "echo 3 > /proc/sys/vm/drop_caches\n"
			 "echo rbuf=$(dd if=/mnt/kblock-buf bs=1M iflag=direct 2>/dev/null | md5sum | cut -c1-32)\n"
			 "echo rdir=$(dd if=/mnt/kblock-direct bs=1M iflag=direct 2>/dev/null | md5sum | cut -c1-32)\n"
			 "rm -f /tmp/src\n"
			 "grep -E '^[[:space:]]+(READ|WRITE|LAYOUTGET|GETDEVICEINFO|LAYOUTCOMMIT|LAYOUTRETURN):' /proc/self/mountstats\n"
			 "echo regfail=$(dmesg | grep -c 'failed to register key')\n"
			 "echo layout=$(grep -o 'pnfs=[A-Z_]*' /proc/self/mountstats | head -1 | cut -d= -f2)\n"
			 "dmesg | grep -i pnfs | tail -5\n");
	VM_CHECK(rc == 0, out);
	vmlab_md5(out, "src", src);
	vmlab_md5(out, "buf", buf);
	vmlab_md5(out, "dir", dir);
	vmlab_md5(out, "rbuf", rbuf);
	vmlab_md5(out, "rdir", rdir);
	VM_CHECK(vmlab_is_md5(src), out);
	VM_CHECK(!strcmp(src, buf) && !strcmp(src, dir) && !strcmp(src, rbuf) && !strcmp(src, rdir), out);
	VM_CHECK(vmlab_mountstat(out, "LAYOUTGET") > 0, out);
	VM_CHECK(vmlab_mountstat(out, "GETDEVICEINFO") > 0, out);
	VM_CHECK(vmlab_mountstat(out, "LAYOUTCOMMIT") > 0, out);
	VM_CHECK(vmlab_mountstat(out, "WRITE") == 0, out);
	/* block-volume layouts, and no SCSI-layout key the target refused */
	VM_CHECK(strstr(out, "layout=LAYOUT_BLOCK_VOLUME") != NULL, out);
	VM_CHECK(vmlab_kv(out, "regfail") == 0, out);
	fprintf(stderr, "\n  guest mountstats:\n%s", strstr(out, "READ:") ? strstr(out, "READ:") - 9 : out);
	/* The MDS's own view: SCSI layouts off on tgt, said once; no file data through it, layouts
	 * granted and committed. */
	CU_ASSERT_EQUAL(vmlab_log_count(&L, "SCSI layouts off: LUN 0 ("), 1);
	CU_ASSERT_EQUAL(vmlab_log_count(&L, "refuses persistent reservations with APTPL"), 1);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_scsi_layouts_offered") == 0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_lun_aptpl{lun=\"0\"}") == 0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_data_written_bytes_total") == w0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_data_read_bytes_total") == r0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_layouts_granted_total{type=\"block\",iomode=\"rw\"}") > 0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_layoutcommits_total") > 0);
	CU_ASSERT(vmlab_metric(&L, "pnfs_mds_committed_bytes_total") >= 2LL * 64 * 1024 * 1024);

	/* The host's libpnfs reads the same bytes through layouts; pnfs-extents checks the LUNs. */
	rc = vmlab_host(&L, &hout,
			"T=$(mktemp -d)\n"
			"pnfs cp -q %s \"$VM_MDS_URL/kblock-buf\" $T/a\n"
			"pnfs cp -q %s --stats --json \"$VM_MDS_URL/kblock-direct\" $T/b 2>$T/stats\n"
			"echo h1=$(md5sum < $T/a | cut -c1-32)\n"
			"echo h2=$(md5sum < $T/b | cut -c1-32)\n"
			"echo direct=$(grep -o '\"direct_bytes_read\": *[0-9]*' $T/stats | grep -o '[0-9]*$')\n"
			"pnfs-extents %s --verify \"$VM_MDS_URL/kblock-buf\" >$T/ext 2>&1; echo verify=$?\n"
			"tail -3 $T/ext\n"
			"rm -rf $T\n",
			L.dev_opts, L.dev_opts, L.dev_opts);
	VM_CHECK(rc == 0, hout);
	vmlab_md5(hout, "h1", h1);
	vmlab_md5(hout, "h2", h2);
	VM_CHECK(!strcmp(h1, src) && !strcmp(h2, src), hout);
	VM_CHECK(vmlab_kv(hout, "direct") == 64LL * 1024 * 1024, hout);
	VM_CHECK(vmlab_kv(hout, "verify") == 0, hout);
	free(out);
	free(hout);
}

/* The kernel client and libpnfs on the same files: each reads what the other wrote. */
static void test_mixed_clients(void)
{
	char *out = NULL, *hout = NULL;
	char a[40], b[40];
	int rc;

	VM_REQUIRE_LAB(&L);
	rc = vmlab_host(&L, &hout,
			"T=$(mktemp -d)\n"
			"head -c 12M /dev/urandom > $T/f\n"
			"pnfs cp -q %s $T/f \"$VM_MDS_URL/kmix-host\"\n"
			"echo host=$(md5sum < $T/f | cut -c1-32)\n"
			"rm -rf $T\n",
			L.dev_opts);
	VM_CHECK(rc == 0, hout);
	rc = vmlab_guest(&L, &out,
			 "vm-login >/dev/null || exit 1\n"
			 "vm-mount || exit 1\n"
			 "echo seen=$(md5sum < /mnt/kmix-host | cut -c1-32)\n"
			 "dd if=/dev/urandom of=/tmp/g bs=1M count=12 2>/dev/null\n"
			 "dd if=/tmp/g of=/mnt/kmix-guest bs=1M conv=fsync 2>/dev/null || exit 1\n"
			 "echo guest=$(md5sum < /tmp/g | cut -c1-32)\n");
	VM_CHECK(rc == 0, out);
	vmlab_md5(hout, "host", a);
	vmlab_md5(out, "seen", b);
	VM_CHECK(vmlab_is_md5(a) && !strcmp(a, b), out);
	free(hout);
	hout = NULL;
	rc = vmlab_host(&L, &hout,
			"T=$(mktemp -d)\n"
			"pnfs cp -q %s \"$VM_MDS_URL/kmix-guest\" $T/g\n"
			"echo read=$(md5sum < $T/g | cut -c1-32)\n"
			"rm -rf $T\n",
			L.dev_opts);
	VM_CHECK(rc == 0, hout);
	vmlab_md5(out, "guest", a);
	vmlab_md5(hout, "read", b);
	VM_CHECK(vmlab_is_md5(a) && !strcmp(a, b), hout);
	free(out);
	free(hout);
}

/* A host client truncating a file the kernel holds a layout on: the MDS recalls the layout
 * (CB_LAYOUTRECALL on the kernel's backchannel). Linux answers a recall of a layout no I/O is
 * using with NFS4ERR_NOMATCHING_LAYOUT (it drops the segments at once: a "forgetful" client, RFC
 * 8881 §12.5.5.1), and a recall of a layout with I/O in flight with NFS4_OK and a LAYOUTRETURN
 * once that I/O is done; both count as returned. The host's writes complete, the kernel reads the
 * new contents once its own descriptor is closed (close-to-open), and no callback is refused with
 * BADSESSION (the backchannel probe right after CREATE_SESSION). */
static void test_truncate_recalls_kernel_layout(void)
{
	char *out = NULL, *hout = NULL;
	char a[40], b[40];
	long long rec0, ret0, rec = -1, ret = -1;
	int rc;

	VM_REQUIRE_LAB(&L);
	/* An idle read layout, held by an open descriptor. */
	rc = vmlab_guest(&L, &out,
			 "vm-login >/dev/null || exit 1\n"
			 "vm-mount || exit 1\n"
			 "dd if=/dev/urandom of=/mnt/krecall bs=1M count=4 conv=fsync 2>/dev/null || exit 1\n"
			 "echo 3 > /proc/sys/vm/drop_caches\n"
			 "rm -f /tmp/holder.ready\n"
			 "sh -c 'exec 3</mnt/krecall; cat <&3 >/dev/null; : > /tmp/holder.ready; sleep 300' >/dev/null 2>&1 &\n"
			 "echo $! > /tmp/holder.pid\n"
			 "i=0; while [ ! -e /tmp/holder.ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
			 "[ -e /tmp/holder.ready ] || exit 1\n");
	VM_CHECK(rc == 0, out);
	free(out);
	out = NULL;
	rec0 = vmlab_metric(&L, "pnfs_mds_layouts_recalled_total");
	ret0 = vmlab_metric(&L, "pnfs_mds_layouts_returned_total");
	rc = vmlab_host(&L, &hout,
			"T=$(mktemp -d)\n"
			"head -c 1M /dev/urandom > $T/f\n"
			"pnfs cp -q %s $T/f \"$VM_MDS_URL/krecall\"\n"
			"echo host=$(md5sum < $T/f | cut -c1-32)\n"
			"rm -rf $T\n",
			L.dev_opts);
	VM_CHECK(rc == 0, hout);
	for (int i = 0; i < 100; i++) {
		rec = vmlab_metric(&L, "pnfs_mds_layouts_recalled_total");
		ret = vmlab_metric(&L, "pnfs_mds_layouts_returned_total");
		if (rec > rec0 && ret > ret0)
			break;
		usleep(100000);
	}
	CU_ASSERT(rec > rec0);
	CU_ASSERT(ret > ret0);
	rc = vmlab_guest(&L, &out,
			 "kill $(cat /tmp/holder.pid); sleep 0.2\n"
			 "echo seen=$(md5sum < /mnt/krecall | cut -c1-32)\n"
			 "echo size=$(stat -c %%s /mnt/krecall)\n");
	VM_CHECK(rc == 0, out);
	vmlab_md5(hout, "host", a);
	vmlab_md5(out, "seen", b);
	VM_CHECK(vmlab_is_md5(a) && !strcmp(a, b), out);
	VM_CHECK(vmlab_kv(out, "size") == 1024 * 1024, out);
	free(out);
	free(hout);
	out = hout = NULL;

	/* Layouts in use: O_DIRECT writes for 8 s while the host truncates the file three times. */
	rc = vmlab_host(&L, &hout,
			"T=$(mktemp -d)\n"
			"head -c 1M /dev/urandom > $T/f\n"
			"vm-lab exec --dir %s -- 'end=$(($(date +%%s) + 8)); n=0\n"
			"  while [ $(date +%%s) -lt $end ]; do\n"
			"    dd if=/dev/zero of=/mnt/kbusy bs=256K count=16 oflag=direct conv=notrunc 2>/dev/null || exit 1\n"
			"    [ $n = 0 ] && touch /mnt/kbusy.writing\n"
			"    n=$((n + 1)); done; echo writes=$n\n"
			"  grep -E \"^[[:space:]]+(LAYOUTGET|LAYOUTRETURN):\" /proc/self/mountstats' > $T/guest &\n"
			"g=$!\n"
			/* the truncates start once the guest writes (and so holds a layout): on a loaded
			 * machine the guest's loop may start seconds later */
			"for i in $(seq 600); do pnfs stat %s \"$VM_MDS_URL/kbusy.writing\" >/dev/null 2>&1 && break; sleep 0.1; done\n"
			"echo started=$i\n"
			"for i in 1 2 3; do pnfs cp -q %s $T/f \"$VM_MDS_URL/kbusy\" 2>/dev/null; echo cp$i=$?; sleep 0.5; done\n"
			"wait $g; echo guest=$?\n"
			"cat $T/guest\n"
			"pnfs rm %s \"$VM_MDS_URL/kbusy.writing\"\n"
			"rm -rf $T\n",
			L.dir, L.dev_opts, L.dev_opts, L.dev_opts);
	VM_CHECK(rc == 0, hout);
	VM_CHECK(vmlab_kv(hout, "guest") == 0, hout);
	VM_CHECK(vmlab_kv(hout, "started") < 600, hout);
	VM_CHECK(vmlab_kv(hout, "cp1") == 0 && vmlab_kv(hout, "cp2") == 0 && vmlab_kv(hout, "cp3") == 0, hout);
	VM_CHECK(vmlab_mountstat(hout, "LAYOUTRETURN") > 0, hout);
	CU_ASSERT(vmlab_log_count(&L, "BADSESSION") == 0);
	CU_ASSERT(vmlab_log_count(&L, "CB_LAYOUTRECALL of file") == 0); /* no failed or refused recall */
	free(hout);
}

/* Two kernel writers and a host writer on three files at once; every file reads back equal from
 * both sides. */
static void test_concurrent_writers(void)
{
	char *out = NULL;
	int rc;

	VM_REQUIRE_LAB(&L);
	rc = vmlab_host(&L, &out,
			"T=$(mktemp -d)\n"
			"head -c 16M /dev/urandom > $T/h\n"
			"vm-lab exec --dir %s -- 'vm-mount || exit 1\n"
			"  for i in 1 2; do dd if=/dev/urandom of=/tmp/w$i bs=1M count=16 2>/dev/null; done\n"
			"  for i in 1 2; do dd if=/tmp/w$i of=/mnt/kconc$i bs=1M conv=fsync 2>/dev/null & done; wait\n"
			"  for i in 1 2; do echo g$i=$(md5sum < /tmp/w$i | cut -c1-32); done' > $T/guest &\n"
			"g=$!\n"
			"pnfs cp -q %s $T/h \"$VM_MDS_URL/kconc-host\"\n"
			"wait $g\n"
			"cat $T/guest\n"
			"echo h=$(md5sum < $T/h | cut -c1-32)\n"
			"for i in 1 2; do echo r$i=$(pnfs cat %s \"$VM_MDS_URL/kconc$i\" | md5sum | cut -c1-32); done\n"
			"vm-lab exec --dir %s -- 'echo 3 > /proc/sys/vm/drop_caches; echo gh=$(md5sum < /mnt/kconc-host | cut -c1-32)'\n"
			"rm -rf $T\n",
			L.dir, L.dev_opts, L.dev_opts, L.dir);
	VM_CHECK(rc == 0, out);
	{
		char g1[40], g2[40], r1[40], r2[40], h[40], gh[40];
		vmlab_md5(out, "g1", g1);
		vmlab_md5(out, "g2", g2);
		vmlab_md5(out, "r1", r1);
		vmlab_md5(out, "r2", r2);
		vmlab_md5(out, "h", h);
		vmlab_md5(out, "gh", gh);
		VM_CHECK(vmlab_is_md5(g1) && vmlab_is_md5(g2) && vmlab_is_md5(h), out);
		VM_CHECK(!strcmp(g1, r1) && !strcmp(g2, r2) && !strcmp(h, gh), out);
	}
	free(out);
}

TEST_SUITE(kernel_block, "kernel/block", suite_init, suite_clean,
	   { "blkmap apply in the guest: striped, concatenated, sliced", test_blkmap_apply_in_guest },
	   { "dd buffered+fsync and O_DIRECT through block layouts", test_dd_through_layouts },
	   { "kernel client and libpnfs read each other's files", test_mixed_clients },
	   { "a host truncate recalls the kernel's layout", test_truncate_recalls_kernel_layout },
	   { "concurrent kernel and host writers", test_concurrent_writers });
