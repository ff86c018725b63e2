/* The blkmap command against a real lab: show from an XDR blob and a pool directory, resolve over a
 * portal, map, table, write then read through the engine (bytes checked in the LUN files), apply's
 * one-line skip without device-mapper, and exit status 2 for usage errors, 1 for failures. */
#include "blkmap/blkmap_xdr.h"
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <fcntl.h>
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
	CU_ASSERT_EQUAL(run(NULL, ""), 2);
	CU_ASSERT_EQUAL(run(NULL, "frobnicate --vol x"), 2);
	CU_ASSERT_EQUAL(run(NULL, "show"), 2);
	snprintf(args, sizeof(args), "read --xdr '%s'", xdr);
	CU_ASSERT_EQUAL(run(NULL, args), 2); /* no discovery options */
	snprintf(args, sizeof(args), "read %s", common);
	CU_ASSERT_EQUAL(run(NULL, args), 2); /* no range */
	CU_ASSERT_EQUAL(run(NULL, "show --xdr x --timeout zero"), 2);
	CU_ASSERT_EQUAL(run(&out, "--help"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: blkmap COMMAND"));
	free(out);
	snprintf(args, sizeof(args), "show --vol '%s'", data);
	CU_ASSERT_EQUAL(run(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "line 1: "));
	free(out);
	snprintf(args, sizeof(args), "resolve --xdr '%s' --portal iscsi://127.0.0.1:%d", xdr, test_free_port());
	CU_ASSERT_EQUAL(run(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "portal iscsi://127.0.0.1:"));
	free(out);
	snprintf(args, sizeof(args), "read %s --offset 100 --length 512", common);
	CU_ASSERT_EQUAL(run(&out, args), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "not whole 512-byte blocks"));
	free(out);
	free(src);
	free(chk);
	lab_down(lab);
}

TEST_SUITE(blkmap_cli, "integration/blkmap_cli", NULL, NULL, { "cli", test_cli });
