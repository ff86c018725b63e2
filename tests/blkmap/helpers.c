/* Helpers for the blkmap suites: everything here drives real tools (tgtadm, losetup) or real files;
 * nothing stands in for a device. */
#include "tests/blkmap/helpers.h"
#include "tests/harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct blkmap_ctx *bmt_ctx(const char *initiator, unsigned timeout_ms)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;

	blkmap_ctx_opts_init(&o);
	o.initiator_name = initiator;
	o.timeout_ms = timeout_ms;
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&o, &ctx), 0);
	return ctx;
}

int bmt_lab_value(const struct test_lab *lab, const char *key, char *val, size_t len)
{
	return lab_value(lab, key, val, len);
}

int bmt_lab_drop_sessions(const struct test_lab *lab)
{
	char ctl[32], *out = NULL;
	int n = 0;

	if (bmt_lab_value(lab, "LAB_CTL", ctl, sizeof(ctl)) != 0)
		return -1;
	if (test_run(&out, "tgtadm -C %s --lld iscsi --mode conn --op show --tid 1 2>/dev/null", ctl) != 0) {
		free(out);
		return -1;
	}
	/* lines: "Session: S" followed by "Connection: C" */
	for (char *p = out, *sid = NULL; p && *p;) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "Session: ", 9) == 0)
			sid = p + 9;
		else if (strncmp(p, "Connection: ", 12) == 0 && sid) {
			if (test_run(NULL, "tgtadm -C %s --lld iscsi --mode conn --op delete --tid 1 --sid %s --cid %s",
				     ctl, sid, p + 12) == 0)
				n++;
		}
		p = nl ? nl + 1 : NULL;
	}
	free(out);
	return n;
}

int bmt_read_file(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY);
	size_t got = 0;

	if (fd < 0)
		return -1;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return got == len ? 0 : -1;
}

int64_t bmt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int bmt_have_loop(void)
{
	return test_is_root() && access("/dev/loop-control", F_OK) == 0 &&
	       test_run(NULL, "command -v losetup >/dev/null 2>&1") == 0;
}

/* Attached loop devices, detached at exit only if still backed by the file we attached (the number
 * may have been reused by someone else once we let it go). */
struct loop_ent {
	char dev[64];
	char path[400];
	int active;
};
static struct loop_ent loops[16];

static void loop_detach_ent(struct loop_ent *e)
{
	char *out = NULL;

	if (!e->active)
		return;
	e->active = 0;
	if (test_run(&out, "losetup -n -O BACK-FILE '%s' 2>/dev/null", e->dev) == 0 && out) {
		out[strcspn(out, "\n")] = 0;
		if (strcmp(out, e->path) == 0)
			test_run(NULL, "losetup -d '%s' >/dev/null 2>&1", e->dev);
	}
	free(out);
}

static void loop_cleanup(void *arg)
{
	loop_detach_ent(arg);
}

int bmt_loop_attach(const char *path, char *dev, size_t len)
{
	char *out = NULL, real[400];
	struct loop_ent *e = NULL;
	int rc;

	for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++)
		if (!loops[i].active && !loops[i].dev[0]) {
			e = &loops[i];
			break;
		}
	if (!e || !realpath(path, real))
		return -1;
	rc = test_run(&out, "losetup -f --show '%s' 2>/dev/null", real);
	if (rc != 0 || !out || strncmp(out, "/dev/loop", 9) != 0) {
		free(out);
		return -1;
	}
	out[strcspn(out, "\n")] = 0;
	snprintf(dev, len, "%s", out);
	snprintf(e->dev, sizeof(e->dev), "%s", out);
	snprintf(e->path, sizeof(e->path), "%s", real);
	e->active = 1;
	free(out);
	test_cleanup_push(loop_cleanup, e);
	return 0;
}

void bmt_loop_detach(const char *dev)
{
	for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++)
		if (loops[i].active && strcmp(loops[i].dev, dev) == 0)
			loop_detach_ent(&loops[i]);
}

void bmt_label_sig(struct blkmap_sig_comp comps[2], uint8_t storage[64], const uint8_t runid[16], uint32_t index)
{
	memcpy(storage, "PNFSTEST", 8);
	memcpy(storage + 8, runid, 16);
	memcpy(storage + 24, &index, 4);
	memcpy(storage + 32, "TAIL", 4);
	memcpy(storage + 36, &index, 4);
	comps[0] = (struct blkmap_sig_comp){ 512, 28, storage };
	comps[1] = (struct blkmap_sig_comp){ -4096, 8, storage + 32 };
}

void bmt_label_write(const char *path, uint64_t size, const uint8_t runid[16], uint32_t index)
{
	struct blkmap_sig_comp c[2];
	uint8_t st[64];
	int fd = open(path, O_WRONLY);

	CU_ASSERT_FATAL(fd >= 0);
	bmt_label_sig(c, st, runid, index);
	CU_ASSERT_FATAL(pwrite(fd, c[0].bytes, c[0].len, 512) == (ssize_t)c[0].len);
	CU_ASSERT_FATAL(pwrite(fd, c[1].bytes, c[1].len, (off_t)(size - 4096)) == (ssize_t)c[1].len);
	close(fd);
}

struct blkmap_vol *bmt_pool_volume(const uint8_t runid[16], unsigned nleaves, uint64_t start, uint64_t len,
				   uint64_t unit)
{
	struct blkmap_vol *vol = NULL;
	uint32_t slices[64], idx;

	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	for (unsigned k = 0; k < nleaves; k++) {
		struct blkmap_sig_comp c[2];
		uint8_t st[64];
		bmt_label_sig(c, st, runid, k);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_simple(vol, c, 2, &idx), 0);
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_slice(vol, start, len, idx, &slices[k]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_stripe(vol, unit, slices, nleaves, &idx), 0);
	return vol;
}
