/* The blkmap command against a real lab: show from an XDR blob and a pool directory, resolve over a
 * portal, map, table, write then read through the engine (bytes checked in the LUN files), apply's
 * one-line skip without device-mapper, and exit status 2 for usage errors, 1 for failures; --timeout
 * in seconds; --register-key reading a pool an MDS reserved for SCSI layouts; the initiator name
 * taken from open-iscsi's initiatorname file by default. */
#include "blkmap/blkmap_xdr.h"
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ull << 20)

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

static int run(char **out, const char *args)
{
	return test_run(out, "'%s' %s 2>&1", test_bin("blkmap"), args);
}

/* blkmap ARGS exits with status and says says. */
static void run_says(const char *args, int status, const char *says)
{
	char *out = NULL;

	CU_ASSERT_EQUAL(run(&out, args), status);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, says));
	free(out);
}

/* Command lines blkmap refuses as usage errors (exit 2) before it touches any device. */
static const char *const usage_errors[] = {
	"",
	"frobnicate --vol x",
	"show",
	"show --xdr x --timeout zero",
	"show --xdr x --timeout 0",
	"show --xdr x --register-key 0",
	"show --xdr x --register-key 12345678901234567",
	"show --xdr x --register-key xyz",
	"show --xdr x --keep-key",
};

static void test_cli(void)
{
	struct test_lab *lab = lab_up(3, "12M", NULL);
	const char *dir = test_tmpdir("blkmap-cli");
	struct blkmap_vol *vol;
	char xdr[400], pool[400], data[400], back[400], args[2000], common[900], *out = NULL, err[300];
	uint8_t runid[16];
	void *buf = NULL;
	size_t len = 0;
	unsigned char *src = malloc(2 * MIB), *chk = malloc(2 * MIB);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	test_fill_random(runid, 16, 555);
	bmt_label_write(lab->files[0], 12 * MIB, runid, 1);
	bmt_label_write(lab->files[2], 12 * MIB, runid, 0);
	vol = bmt_pool_volume(runid, 2, MIB, 8 * MIB, 64 << 10);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_encode_xdr(vol, LAYOUT4_BLOCK_VOLUME, &buf, &len, err, sizeof(err)), 0);
	blkmap_vol_free(vol);
	snprintf(xdr, sizeof(xdr), "%s/dev.xdr", dir);
	write_file(xdr, buf, len);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	CU_ASSERT_FATAL(mkdir(pool, 0755) == 0);
	snprintf(args, sizeof(args), "%s/volume.xdr", pool);
	write_file(args, buf, len);
	free(buf);
	snprintf(common, sizeof(common), "--xdr '%s' --portal iscsi://127.0.0.1:%d --timeout 5", xdr, lab->port);

	/* show: from the blob and from the pool directory, the same tree */
	CU_ASSERT_EQUAL(run(&out, "show --xdr ''"), 1);
	free(out);
	snprintf(args, sizeof(args), "show --xdr '%s'", xdr);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "block (RFC 5663) volume array: 5 entries, top is 4"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "4 stripe: unit 64 KiB over 1 3"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "1 slice: 8 MiB at 1 MiB of volume 0"));
	free(out);
	snprintf(args, sizeof(args), "show --pool '%s' --text", pool);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "slice 1M 8M 0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "stripe 64K 1 3\n"));
	free(out);

	/* resolve: label 0 is on LUN 3, label 1 on LUN 1 */
	snprintf(args, sizeof(args), "resolve %s", common);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	snprintf(err, sizeof(err), "volume 0: %s\n", lab->urls[2]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, err));
	snprintf(err, sizeof(err), "volume 2: %s\n", lab->urls[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, err));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "matched by signature 512:504e465354455354"));
	free(out);

	/* table and map */
	snprintf(args, sizeof(args), "table %s --deviceid 0a0b", common);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	snprintf(err, sizeof(err), "0 32768 striped 2 128 %s 2048 %s 2048\n", lab->urls[2], lab->urls[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, err));
	free(out);
	snprintf(args, sizeof(args), "map %s --offset 64K --length 128K", common);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	snprintf(err, sizeof(err), "65536          65536        2      2048           %s", lab->urls[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, err));
	free(out);

	/* write 2 MiB at 1 MiB, read it back; the first unit lands on label 0's LUN (LUN 3) */
	test_fill_random(src, 2 * MIB, 77);
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(back, sizeof(back), "%s/back", dir);
	write_file(data, src, 2 * MIB);
	snprintf(args, sizeof(args), "write %s --offset 1M --input '%s'", common, data);
	CU_ASSERT_EQUAL(run(NULL, args), 0);
	snprintf(args, sizeof(args), "read %s --offset 1M --length 2M --output '%s'", common, back);
	CU_ASSERT_EQUAL(run(NULL, args), 0);
	CU_ASSERT_EQUAL(bmt_read_file(back, chk, 2 * MIB, 0), 0);
	CU_ASSERT(memcmp(src, chk, 2 * MIB) == 0);
	/* volume offset 1 MiB = stripe unit 16 = row 8 of member 0: LUN file offset 1M + 8 * 64K */
	CU_ASSERT_EQUAL(bmt_read_file(lab->files[2], chk, 64 << 10, MIB + 8 * (64 << 10)), 0);
	CU_ASSERT(memcmp(src, chk, 64 << 10) == 0);

	/* apply without device-mapper: one line, exit 1 */
	snprintf(args, sizeof(args), "apply %s", common);
	if (access("/dev/mapper/control", F_OK) != 0) {
		CU_ASSERT_EQUAL(run(&out, args), 1);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "blkmap: apply skipped: no device-mapper on this host"));
		free(out);
	}

	/* usage errors: 2; failures: 1 with the reason */
	for (size_t i = 0; i < sizeof(usage_errors) / sizeof(usage_errors[0]); i++)
		CU_ASSERT_EQUAL(run(NULL, usage_errors[i]), 2);
	snprintf(args, sizeof(args), "read --xdr '%s'", xdr);
	CU_ASSERT_EQUAL(run(NULL, args), 2); /* no discovery options */
	snprintf(args, sizeof(args), "read %s", common);
	CU_ASSERT_EQUAL(run(NULL, args), 2); /* no range */
	/* --timeout is in seconds: fractions and an ms suffix go, an old millisecond count is refused */
	snprintf(args, sizeof(args), "show --xdr '%s' --timeout 0.5", xdr);
	CU_ASSERT_EQUAL(run(NULL, args), 0);
	snprintf(args, sizeof(args), "show --xdr '%s' --timeout 250ms", xdr);
	CU_ASSERT_EQUAL(run(NULL, args), 0);
	snprintf(args, sizeof(args), "show --xdr '%s' --timeout 5000", xdr);
	run_says(args, 2, "it takes seconds now, not milliseconds");
	run_says("--help", 0, "usage: blkmap COMMAND");
	snprintf(args, sizeof(args), "show --vol '%s'", data);
	run_says(args, 1, "line 1: ");
	snprintf(args, sizeof(args), "resolve --xdr '%s' --portal iscsi://127.0.0.1:%d", xdr, test_free_port());
	run_says(args, 1, "portal iscsi://127.0.0.1:");
	snprintf(args, sizeof(args), "read %s --offset 100 --length 512", common);
	run_says(args, 1, "not whole 512-byte blocks");
	free(src);
	free(chk);
	lab_down(lab);
}


/* Whether key is registered on the LUN, and the reservation it carries (seen from a fresh I_T nexus,
 * which INQUIRY, READ CAPACITY and PERSISTENT RESERVE IN reach under any reservation). */
static int key_listed(const char *url, uint64_t key, struct blkmap_pr_reservation *r)
{
	struct blkmap_ctx *ctx = bmt_ctx(BMT_INITIATOR_B, 5000);
	struct blkmap_dev *dev = NULL;
	struct blkmap_pr_keys keys;
	int found = -1;

	if (blkmap_dev_open(ctx, url, 0, &dev) == 0 && blkmap_pr_read_keys(dev, &keys) == 0 &&
	    (!r || blkmap_pr_read_reservation(dev, r) == 0)) {
		found = 0;
		for (unsigned i = 0; i < keys.nkeys; i++)
			found |= keys.keys[i] == key;
	}
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	return found;
}

/* An MDS that handed out a SCSI layout holds EXCLUSIVE ACCESS - REGISTRANTS ONLY on every LUN, and
 * keeps it after it stops: blkmap reads the pool only with --register-key, takes the key off again
 * at exit, and leaves it with --keep-key. */
static void test_register_key(void)
{
	struct lab_opts ram = { .ram = 1 };
	struct test_lab *lab = lab_up(2, "32M", &ram);
	const char *dir = test_tmpdir("blkmap-key");
	struct test_mds *mds;
	struct blkmap_pr_reservation r;
	const uint64_t key = 0xc0ffee0123ull;
	char why[300], src[400], back[400], args[2400], common[1400], devs[1200] = "", *out = NULL, *log;
	const size_t size = 2 * MIB, span = 16 * MIB;
	unsigned char *data = malloc(size), *vol = malloc(span);
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	/* SCSI layouts on tgt, which refuses APTPL: the default (auto) would not offer them. */
	mds = tmds_up(lab, "--stripe-unit 256K", "--scsi-layouts yes", why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL_FATAL(mds);
	for (int i = 0; i < lab->nluns; i++)
		n += snprintf(devs + n, sizeof(devs) - (size_t)n, " --device '%s'", lab->urls[i]);
	test_fill_random(data, size, 4242);
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(back, sizeof(back), "%s/back", dir);
	write_file(src, data, size);
	/* a client with a SCSI layout (the default) writes straight to the LUNs */
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "'%s' -q %s put '%s' pnfs://127.0.0.1:%d/f", test_bin("pnfs"), devs, src,
				       mds->port), 0);
	log = tmds_log(mds);
	CU_ASSERT_PTR_NOT_NULL(log && strstr(log, "SCSI fencing on"));
	free(log);
	CU_ASSERT_EQUAL(tmds_stop(mds, SIGTERM), 0);
	/* the reservation outlives the MDS */
	CU_ASSERT_EQUAL(key_listed(lab->urls[0], key, &r), 0);
	CU_ASSERT(r.reserved && r.type == BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY);

	snprintf(common, sizeof(common), "--pool '%s' --portal iscsi://127.0.0.1:%d --timeout 5", mds->pool, lab->port);
	/* without a key: refused by the target */
	snprintf(args, sizeof(args), "read %s --offset 0 --length 1M --output '%s'", common, back);
	CU_ASSERT_EQUAL(run(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "RESERVATION CONFLICT"));
	if (out && !strstr(out, "RESERVATION CONFLICT"))
		fprintf(stderr, "\n  blkmap %s said:\n%s", args, out);
	free(out);
	/* with one: resolve, then the volume's first 16 MiB hold the file's bytes */
	snprintf(args, sizeof(args), "resolve %s --register-key %llx", common, (unsigned long long)key);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "matched by signature"));
	free(out);
	snprintf(args, sizeof(args), "read %s --register-key 0x%llx --offset 0 --length 16M --output '%s'", common,
		 (unsigned long long)key, back);
	CU_ASSERT_EQUAL(run(&out, args), 0);
	free(out);
	CU_ASSERT_EQUAL_FATAL(bmt_read_file(back, vol, span, 0), 0);
	{
		const unsigned char *at = memmem(vol, span, data, 64 << 10);
		CU_ASSERT_PTR_NOT_NULL(at);
		CU_ASSERT(at && (size_t)(at - vol) + size <= span && memcmp(at, data, size) == 0);
	}
	/* taken off at exit; the reservation is still the MDS's */
	CU_ASSERT_EQUAL(key_listed(lab->urls[0], key, &r), 0);
	CU_ASSERT_EQUAL(key_listed(lab->urls[1], key, NULL), 0);
	CU_ASSERT(r.reserved && r.type == BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY);
	/* pnfs-admin status reads the labels under it too: it registers the MDS's own key */
	snprintf(args, sizeof(args), "'%s' status --pool '%s' --timeout 5 2>&1", test_bin("pnfs-admin"), mds->pool);
	CU_ASSERT_EQUAL(test_run(&out, "%s", args), 0);
	free(out);
	/* --keep-key leaves it */
	snprintf(args, sizeof(args), "resolve %s --register-key %llx --keep-key", common, (unsigned long long)key);
	CU_ASSERT_EQUAL(run(NULL, args), 0);
	CU_ASSERT_EQUAL(key_listed(lab->urls[0], key, NULL), 1);
	CU_ASSERT_EQUAL(key_listed(lab->urls[1], key, NULL), 1);
	free(data);
	free(vol);
	tmds_free(mds);
	lab_down(lab);
}

/* Without --initiator, blkmap logs in under the name in open-iscsi's initiatorname file: a target
 * that admits only that name serves it, and not the made-up name used without the file. */
static void test_initiator_file(void)
{
	struct lab_opts acl = { .initiator = "iqn.1993-08.org.debian:01:feedf00d" };
	struct test_lab *lab = lab_up(1, "8M", &acl);
	const char *dir = test_tmpdir("blkmap-iname");
	char iname[400], vol[400], args[1200], *out = NULL;
	uint8_t runid[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	test_fill_random(runid, 16, 99);
	bmt_label_write(lab->files[0], 8 * MIB, runid, 0);
	snprintf(iname, sizeof(iname), "%s/initiatorname.iscsi", dir);
	snprintf(vol, sizeof(vol), "%s/vol", dir);
	write_file(iname, "InitiatorName=iqn.1993-08.org.debian:01:feedf00d\n", 49);
	{
		char text[200];
		int n = snprintf(text, sizeof(text), "simple 512:504e465354455354");
		for (int i = 0; i < 16; i++)
			n += snprintf(text + n, sizeof(text) - (size_t)n, "%02x", runid[i]);
		snprintf(text + n, sizeof(text) - (size_t)n, "00000000\n");
		write_file(vol, text, strlen(text));
	}
	snprintf(args, sizeof(args), "PNFS_INITIATORNAME_FILE='%s' '%s' resolve --vol '%s' --portal iscsi://127.0.0.1:%d "
		 "--timeout 5 2>&1", iname, test_bin("blkmap"), vol, lab->port);
	CU_ASSERT_EQUAL(test_run(&out, "%s", args), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "matched by signature"));
	if (out && !strstr(out, "matched by signature"))
		fprintf(stderr, "\n  %s said:\n%s", args, out);
	free(out);
	snprintf(args, sizeof(args), "PNFS_INITIATORNAME_FILE='%s/none' '%s' resolve --vol '%s' --portal "
		 "iscsi://127.0.0.1:%d --timeout 5 2>&1", dir, test_bin("blkmap"), vol, lab->port);
	CU_ASSERT_EQUAL(test_run(&out, "%s", args), 1);
	free(out);
	lab_down(lab);
}

TEST_SUITE(blkmap_cli, "integration/blkmap_cli", NULL, NULL, { "cli", test_cli }, { "register_key", test_register_key },
	   { "initiator_file", test_initiator_file });
