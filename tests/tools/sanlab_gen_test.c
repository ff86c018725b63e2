/* san-lab's generators write text for hosts this one cannot be (LIO, tgt-admin, open-iscsi): the
 * text must be exactly right, so these tests compare it byte for byte with what an admin would type. */
#include "tests/harness.h"

#include <stdlib.h>
#include <string.h>

static void expect_output(const char *args, int want_rc, const char *want)
{
	char *out = NULL;
	int rc = test_run(&out, "'%s' %s 2>/dev/null", test_bin("san-lab"), args);

	CU_ASSERT_EQUAL(rc, want_rc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	if (want) {
		CU_ASSERT_STRING_EQUAL(out, want);
		if (strcmp(out, want) != 0)
			fprintf(stderr, "\n--- got:\n%s--- want:\n%s", out, want);
	}
	free(out);
}

static void test_targetcli_block_and_file_chap(void)
{
	expect_output("targetcli --luns /dev/sdb,/srv/pnfs/lun2.img --size 10G"
		      " --initiator iqn.2024-01.example:node1 --portal 192.0.2.10:3260"
		      " --chap node1:secret123456 --iqn iqn.2024-01.example:pool",
		      0,
		      "#!/bin/sh\n"
		      "# targetcli-fb script from san-lab: one LIO iSCSI target with 2 LUN(s) for a pNFS pool.\n"
		      "# Run as root on the storage host (needs the target_core_mod and iscsi_target_mod modules).\n"
		      "set -e\n"
		      "targetcli /backstores/block create name=pnfs_lun1 dev=/dev/sdb\n"
		      "targetcli /backstores/fileio create name=pnfs_lun2 file_or_dev=/srv/pnfs/lun2.img size=10G sparse=true\n"
		      "targetcli /iscsi create iqn.2024-01.example:pool\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/luns create /backstores/block/pnfs_lun1\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/luns create /backstores/fileio/pnfs_lun2\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/portals delete 0.0.0.0 3260\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/portals create 192.0.2.10 3260\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1 set parameter MaxRecvDataSegmentLength=262144\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/acls create iqn.2024-01.example:node1\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/acls/iqn.2024-01.example:node1 set auth userid=node1 password=secret123456\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1 set attribute authentication=1\n"
		      "targetcli saveconfig\n");
}

static void test_targetcli_count_default_portal(void)
{
	expect_output("targetcli --luns 2 --size 1G --initiator iqn.2024-01.example:node2"
		      " --backstore-dir /srv/luns",
		      0,
		      "#!/bin/sh\n"
		      "# targetcli-fb script from san-lab: one LIO iSCSI target with 2 LUN(s) for a pNFS pool.\n"
		      "# Run as root on the storage host (needs the target_core_mod and iscsi_target_mod modules).\n"
		      "set -e\n"
		      "targetcli /backstores/fileio create name=pnfs_lun1 file_or_dev=/srv/luns/lun1.img size=1G sparse=true\n"
		      "targetcli /backstores/fileio create name=pnfs_lun2 file_or_dev=/srv/luns/lun2.img size=1G sparse=true\n"
		      "targetcli /iscsi create iqn.2024-01.lab.san-lab:pool\n"
		      "targetcli /iscsi/iqn.2024-01.lab.san-lab:pool/tpg1/luns create /backstores/fileio/pnfs_lun1\n"
		      "targetcli /iscsi/iqn.2024-01.lab.san-lab:pool/tpg1/luns create /backstores/fileio/pnfs_lun2\n"
		      "targetcli /iscsi/iqn.2024-01.lab.san-lab:pool/tpg1 set parameter MaxRecvDataSegmentLength=262144\n"
		      "targetcli /iscsi/iqn.2024-01.lab.san-lab:pool/tpg1/acls create iqn.2024-01.example:node2\n"
		      "targetcli /iscsi/iqn.2024-01.lab.san-lab:pool/tpg1 set attribute authentication=0\n"
		      "targetcli saveconfig\n");
}

/* Several initiators (a host and a VM guest): an ACL each, CHAP on each. */
static void test_targetcli_two_initiators(void)
{
	expect_output("targetcli --luns /dev/sdb --initiator iqn.2024-01.example:host"
		      " --initiator iqn.2024-01.example:guest --chap node1:secret123456 --iqn iqn.2024-01.example:pool",
		      0,
		      "#!/bin/sh\n"
		      "# targetcli-fb script from san-lab: one LIO iSCSI target with 1 LUN(s) for a pNFS pool.\n"
		      "# Run as root on the storage host (needs the target_core_mod and iscsi_target_mod modules).\n"
		      "set -e\n"
		      "targetcli /backstores/block create name=pnfs_lun1 dev=/dev/sdb\n"
		      "targetcli /iscsi create iqn.2024-01.example:pool\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/luns create /backstores/block/pnfs_lun1\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1 set parameter MaxRecvDataSegmentLength=262144\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/acls create iqn.2024-01.example:host\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/acls create iqn.2024-01.example:guest\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/acls/iqn.2024-01.example:host set auth userid=node1 password=secret123456\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1/acls/iqn.2024-01.example:guest set auth userid=node1 password=secret123456\n"
		      "targetcli /iscsi/iqn.2024-01.example:pool/tpg1 set attribute authentication=1\n"
		      "targetcli saveconfig\n");
	expect_output("tgt-conf --luns /dev/sdb --iqn iqn.2024-01.example:pool --initiator iqn.2024-01.example:host"
		      " --initiator iqn.2024-01.example:guest --tgtd-malloc stock",
		      0,
		      "# tgt targets.conf from san-lab: one iSCSI target with 1 LUN(s) for a pNFS pool.\n"
		      "# Install as /etc/tgt/conf.d/pnfs-pool.conf and run 'tgt-admin --update ALL'.\n"
		      "<target iqn.2024-01.example:pool>\n"
		      "    backing-store /dev/sdb\n"
		      "    initiator-name iqn.2024-01.example:host\n"
		      "    initiator-name iqn.2024-01.example:guest\n"
		      "    MaxRecvDataSegmentLength 262144\n"
		      "</target>\n");
	/* one client logs in as one name */
	expect_output("iscsiadm --portal 192.0.2.10 --target iqn.2024-01.example:pool --initiator iqn.2024-01.example:host"
		      " --initiator iqn.2024-01.example:guest",
		      2, "");
	expect_output("targetcli --luns 1 --initiator iqn.2024-01.example:host --initiator bad", 2, "");
}

static void test_tgt_conf(void)
{
	expect_output("tgt-conf --luns 2 --size 1G --initiator iqn.2024-01.example:node1"
		      " --chap node1:secret123456",
		      0,
		      "# tgt targets.conf from san-lab: one iSCSI target with 2 LUN(s) for a pNFS pool.\n"
		      "# Install as /etc/tgt/conf.d/pnfs-pool.conf and run 'tgt-admin --update ALL'.\n"
		      "# create first: truncate -s 1G /var/lib/san-lab/lun1.img\n"
		      "# create first: truncate -s 1G /var/lib/san-lab/lun2.img\n"
		      "<target iqn.2024-01.lab.san-lab:pool>\n"
		      "    backing-store /var/lib/san-lab/lun1.img\n"
		      "    backing-store /var/lib/san-lab/lun2.img\n"
		      "    initiator-name iqn.2024-01.example:node1\n"
		      "    incominguser node1 secret123456\n"
		      "    MaxRecvDataSegmentLength 262144\n"
		      "</target>\n"
		      "# tgtd maps a fresh buffer for every command over 128 KiB and faults in each page; to have\n"
		      "# it reuse freed buffers (what 'san-lab up' does), run 'systemctl edit tgt' and add:\n"
		      "#   [Service]\n"
		      "#   Environment=GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:"
		      "glibc.malloc.trim_threshold=1073741824\n");
	/* --param: a later value of a name wins, new names follow in order; tgt's own defaults back
	 * (segment length and malloc) */
	expect_output("tgt-conf --luns /dev/sdb,/dev/sdc --iqn iqn.2024-01.example:pool"
		      " --param FirstBurstLength=131072 --param MaxRecvDataSegmentLength=8192 --tgtd-malloc stock",
		      0,
		      "# tgt targets.conf from san-lab: one iSCSI target with 2 LUN(s) for a pNFS pool.\n"
		      "# Install as /etc/tgt/conf.d/pnfs-pool.conf and run 'tgt-admin --update ALL'.\n"
		      "<target iqn.2024-01.example:pool>\n"
		      "    backing-store /dev/sdb\n"
		      "    backing-store /dev/sdc\n"
		      "    FirstBurstLength 131072\n"
		      "    MaxRecvDataSegmentLength 8192\n"
		      "</target>\n");
	expect_output("tgt-conf --luns 1 --param MaxRecvDataSegmentLength", 2, NULL);
	expect_output("tgt-conf --luns 1 --param 'Max=1;reboot'", 2, NULL);
}

static void test_iscsiadm(void)
{
	expect_output("iscsiadm --portal 192.0.2.10 --target iqn.2024-01.example:pool"
		      " --initiator iqn.2024-01.example:node1 --chap node1:secret123456",
		      0,
		      "#!/bin/sh\n"
		      "# open-iscsi commands from san-lab: log this Linux client in to the pNFS pool's LUNs.\n"
		      "# Run as root on the client (needs the iscsi_tcp module and iscsid).\n"
		      "set -e\n"
		      "echo 'InitiatorName=iqn.2024-01.example:node1' > /etc/iscsi/initiatorname.iscsi\n"
		      "systemctl restart iscsid\n"
		      "iscsiadm -m discovery -t sendtargets -p 192.0.2.10:3260\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.10:3260 -o update -n node.session.auth.authmethod -v CHAP\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.10:3260 -o update -n node.session.auth.username -v node1\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.10:3260 -o update -n node.session.auth.password -v secret123456\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.10:3260 -o update -n node.startup -v automatic\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.10:3260 --login\n"
		      "iscsiadm -m session -P 3 | grep 'Attached scsi disk'\n");
	expect_output("iscsiadm --portal 192.0.2.11:3261 --target iqn.2024-01.example:pool --dir /nonexistent",
		      0,
		      "#!/bin/sh\n"
		      "# open-iscsi commands from san-lab: log this Linux client in to the pNFS pool's LUNs.\n"
		      "# Run as root on the client (needs the iscsi_tcp module and iscsid).\n"
		      "set -e\n"
		      "iscsiadm -m discovery -t sendtargets -p 192.0.2.11:3261\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.11:3261 -o update -n node.startup -v automatic\n"
		      "iscsiadm -m node -T iqn.2024-01.example:pool -p 192.0.2.11:3261 --login\n"
		      "iscsiadm -m session -P 3 | grep 'Attached scsi disk'\n");
}

static void test_usage_errors(void)
{
	/* Exit status 2 for usage errors, with nothing on stdout. */
	expect_output("targetcli --luns 2", 2, "");
	expect_output("targetcli --luns 2 --initiator not-an-iqn", 2, "");
	expect_output("targetcli --luns 2 --initiator iqn.2024-01.example:n --chap user:short", 2, "");
	expect_output("targetcli --luns relative/path --initiator iqn.2024-01.example:n", 2, "");
	expect_output("iscsiadm --target iqn.2024-01.example:pool --dir /nonexistent", 2, "");
	expect_output("up --luns 0", 2, "");
	expect_output("up --luns 2 --size 12Q", 2, "");
	expect_output("up --luns 2 --port 70000", 2, "");
	expect_output("up --hosts 2", 2, "");
	expect_output("frobnicate", 2, "");
	expect_output("up --luns 2 --bogus", 2, "");
	expect_output("up --luns 2 --wipe", 2, "");
	expect_output("down --fresh", 2, "");
	expect_output("up --luns 2 --portal 127.0.0.300", 2, "");
	expect_output("up --luns 2 --portal localhost", 2, "");
	expect_output("up --luns 2 --portal 127.0.0.2:3260 --port 3261", 2, "");
	expect_output("up --hosts 2 --rate 10 --portal 127.0.0.2", 2, "");
	/* --help is not an error. */
	expect_output("--help >/dev/null; echo ok", 0, "ok\n");
}

TEST_SUITE(sanlab_gen, "tools/san-lab-generators", NULL, NULL,
	   { "targetcli_block_and_file_chap", test_targetcli_block_and_file_chap },
	   { "targetcli_count_default_portal", test_targetcli_count_default_portal },
	   { "targetcli_two_initiators", test_targetcli_two_initiators },
	   { "tgt_conf", test_tgt_conf },
	   { "iscsiadm", test_iscsiadm },
	   { "usage_errors", test_usage_errors });
