/* The direct data path on a real 4-LUN tgtd lab, with layouts built from the pool's own volume (what
 * GETDEVICEINFO will describe) and installed the way a LAYOUTGET reply is, while pnfs-mds serves the
 * namespace and the MDS path. Checked in the LUNs' backing files: data lands exactly where the extents
 * say, striped over every LUN; INVALID_DATA never shows stale bytes (zero-filled blocks around partial
 * writes, reads as zeros until written, earlier writes kept); READ_DATA + INVALID_DATA copy-on-write;
 * holes; many commands in flight; a recall stops new I/O to the range and drains; a SCSI layout
 * registers its PR key and, fenced with PREEMPT, falls back to the MDS path. */
#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "client/layout_int.h"
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INITIATOR_A "iqn.2024-01.test.pnfs:client-a"
#define INITIATOR_FENCER "iqn.2024-01.test.pnfs:fencer"
#define MIB (1ull << 20)

static struct test_lab *lab, *lab1;
static struct test_mds *mds;
static char why[400];
static const uint8_t DEVID[16] = "pool-volume-0001";
static const uint8_t SCSI_DEVID[16] = "scsi-volume-0001";

static int suite_init(void)
{
	struct lab_opts ram = { .ram = 1 };

	lab1 = lab_up(1, "40M", &ram);
	if (!lab1) {
		snprintf(why, sizeof(why), "no tgtd lab");
		return 0;
	}
	/* SCSI layouts forced on for scsi_fencing (tgt refuses APTPL: by default none would be offered);
	 * the other cases ask for block layouts (no_scsi) */
	mds = tmds_lab_up(&lab, 4, "64M", &ram, NULL, why, sizeof(why), "--lease-time 10 --scsi-layouts yes");
	return 0;
}

static int suite_clean(void)
{
	tmds_free(mds);
	mds = NULL;
	lab_down(lab1);
	lab1 = NULL;
	return tmds_lab_down(&lab, &mds);
}

#define NEED_LAB() TEST_SKIP_IF(!mds, "%s", why)

static struct pnfs_context *client(int scsi, const struct test_lab *l)
{
	struct pnfs_opts o;
	const char *urls[LAB_MAX_LUNS];

	pnfs_opts_init(&o);
	ct_lab_devices(&o, l, urls);
	o.no_scsi = !scsi;
	o.initiator_name = INITIATOR_A;
	return ct_mount(&o, mds->port, "/");
}

/* The pool's volume, resolved by the client as it resolves what GETDEVICEINFO returns. */
static struct blkmap_vol *pool_device(struct pnfs_context *ctx)
{
	struct blkmap_vol *vol = NULL;
	char err[300];

	CU_ASSERT_EQUAL_FATAL(blkmap_vol_read_pool(mds->pool, &vol, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_device(ctx, DEVID, LAYOUT4_BLOCK_VOLUME, vol), 0);
	vol = pnfs_device_volume(ctx, DEVID);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vol);
	return vol;
}

static uint64_t vol_size(struct blkmap_vol *vol)
{
	return blkmap_vol_size_bytes(vol, blkmap_vol_count(vol) - 1);
}

/* Read or write volume bytes straight in the lab's backing files (what the LUNs hold). */
static int vol_files_io(const struct test_lab *l, struct blkmap_vol *vol, uint64_t soff, void *buf, size_t len,
			int write, unsigned *luns_touched)
{
	struct blkmap_run *runs = NULL;
	size_t nruns = 0, done = 0;
	unsigned touched = 0;

	if (blkmap_vol_map(vol, soff, len, &runs, &nruns) < 0)
		return -1;
	for (size_t i = 0; i < nruns; i++) {
		const char *name = blkmap_dev_name(blkmap_vol_leaf_dev(vol, runs[i].leaf));
		int lun = -1, fd;
		for (int k = 0; k < l->nluns; k++)
			if (strcmp(l->urls[k], name) == 0)
				lun = k;
		if (lun < 0) {
			free(runs);
			return -1;
		}
		touched |= 1u << lun;
		fd = open(l->files[lun], write ? O_WRONLY : O_RDONLY);
		if (fd < 0) {
			free(runs);
			return -1;
		}
		if ((write ? pwrite(fd, (char *)buf + done, runs[i].length_bytes, (off_t)runs[i].leaf_offset_bytes)
			   : pread(fd, (char *)buf + done, runs[i].length_bytes, (off_t)runs[i].leaf_offset_bytes)) !=
		    (ssize_t)runs[i].length_bytes) {
			close(fd);
			free(runs);
			return -1;
		}
		close(fd);
		done += runs[i].length_bytes;
	}
	free(runs);
	if (luns_touched)
		*luns_touched = touched;
	return done == len ? 0 : -1;
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

static struct pnfs_extent ext(uint64_t foff, uint64_t len, uint64_t soff, enum pnfs_extent_state st,
			      const uint8_t *id)
{
	struct pnfs_extent e;
	memset(&e, 0, sizeof(e));
	e.file_offset = foff;
	e.length = len;
	e.storage_offset = soff;
	e.state = st;
	memcpy(e.deviceid, id, 16);
	return e;
}

static struct pnfs_fh *create(struct pnfs_context *ctx, const char *name)
{
	struct pnfs_fh *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, name, O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	return fh;
}

/* Close without the commit's failure mattering: pnfs-mds does not take LAYOUTCOMMIT for layouts it
 * did not grant (the injected ones), which close reports. */
static void close_quiet(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	int rc = pnfs_close(ctx, fh);
	CU_ASSERT(rc == 0 || rc == -EIO);
}

/* READ_WRITE_DATA: unaligned writes land at the storage offsets the extent gives, over all LUNs;
 * reads come back; nothing went through the MDS. */
static void test_rw_extent(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx);
	uint64_t base = vol_size(vol) - 96 * MIB;
	const size_t len = 5 * MIB + 123;
	const uint64_t off = 1000;
	char *buf = malloc(len), *back = malloc(len), *disk = malloc(len + 2000);
	struct pnfs_extent e = ext(0, 8 * MIB, base, PNFS_EXT_READ_WRITE, DEVID);
	struct pnfs_stats st;
	struct pnfs_fh *fh = create(ctx, "rw");
	unsigned luns = 0;

	/* Known bytes around the write: read-modify-write must keep them. */
	test_fill_random(disk, len + 2000, 5);
	CU_ASSERT_EQUAL_FATAL(vol_files_io(lab, vol, base, disk, len + 2000, 1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 8 * MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	test_fill_random(buf, len, 6);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, len, off), (ssize_t)len);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, len, off), (ssize_t)len);
	CU_ASSERT_EQUAL(memcmp(buf, back, len), 0);
	{
		char *now = malloc(len + 2000), *want = malloc(len + 2000);
		memcpy(want, disk, len + 2000);
		memcpy(want + off, buf, len);
		CU_ASSERT_EQUAL(vol_files_io(lab, vol, base, now, len + 2000, 0, &luns), 0);
		CU_ASSERT_EQUAL(memcmp(now, want, len + 2000), 0);
		CU_ASSERT_EQUAL(luns, 0xfu); /* striped over the 4 LUNs */
		free(now);
		free(want);
	}
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, len);
	CU_ASSERT_EQUAL(st.direct_bytes_read, len);
	CU_ASSERT_EQUAL(st.mds_data_written, 0);
	CU_ASSERT_EQUAL(st.mds_data_read, 0);
	CU_ASSERT_STRING_EQUAL(pnfs_fh_mds_reason(fh), "");
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "rw");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	free(buf);
	free(back);
	free(disk);
}

/* INVALID_DATA: stale bytes are never exposed. A small write zero-fills its layout block, the rest of
 * the extent reads as zeros, a second write into the same block keeps the first, and the dirty list
 * (what LAYOUTCOMMIT sends) holds whole blocks with their storage offsets. */
static void test_invalid_zero_fill(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx);
	uint64_t base = vol_size(vol) - 80 * MIB;
	struct pnfs_extent e = ext(0, MIB, base, PNFS_EXT_INVALID, DEVID), *d = NULL;
	struct pnfs_fh *fh = create(ctx, "inval");
	char *stale = malloc(MIB), *back = malloc(MIB), *disk = malloc(MIB);
	char a[100], b[50];
	size_t nd = 0;
	struct pnfs_stats st;

	memset(stale, 0xab, MIB);
	CU_ASSERT_EQUAL_FATAL(vol_files_io(lab, vol, base, stale, MIB, 1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	test_fill_random(a, sizeof(a), 7);
	test_fill_random(b, sizeof(b), 8);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, a, sizeof(a), 5000), (ssize_t)sizeof(a));
	/* On disk: block 4096..8191 is zeros but for the data; the rest of the extent untouched. */
	CU_ASSERT_EQUAL(vol_files_io(lab, vol, base, disk, MIB, 0, NULL), 0);
	CU_ASSERT_TRUE(all_zero(disk + 4096, 5000 - 4096));
	CU_ASSERT_EQUAL(memcmp(disk + 5000, a, sizeof(a)), 0);
	CU_ASSERT_TRUE(all_zero(disk + 5100, 8192 - 5100));
	CU_ASSERT_EQUAL((unsigned char)disk[4095], 0xab);
	CU_ASSERT_EQUAL((unsigned char)disk[8192], 0xab);
	/* Through the client: zeros everywhere but the data (the stale 0xab never shows). */
	memset(back, 0x55, MIB);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, MIB, 0), 5100); /* EOF is the end of the write */
	CU_ASSERT_TRUE(all_zero(back, 5000));
	CU_ASSERT_EQUAL(memcmp(back + 5000, a, sizeof(a)), 0);
	/* Past the data but inside the extent, after growing the file: zeros, not 0xab. */
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, b, sizeof(b), 6000), (ssize_t)sizeof(b)); /* same block */
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, b, sizeof(b), 700000), (ssize_t)sizeof(b)); /* far away */
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, MIB, 0), 700050);
	CU_ASSERT_TRUE(all_zero(back, 5000));
	CU_ASSERT_EQUAL(memcmp(back + 5000, a, sizeof(a)), 0); /* the first write survived the second */
	CU_ASSERT_TRUE(all_zero(back + 5100, 900));
	CU_ASSERT_EQUAL(memcmp(back + 6000, b, sizeof(b)), 0);
	CU_ASSERT_TRUE(all_zero(back + 6050, 700000 - 6050));
	CU_ASSERT_EQUAL(memcmp(back + 700000, b, sizeof(b)), 0);
	/* The commit list: two whole 4 KiB blocks, at their storage offsets. */
	CU_ASSERT_EQUAL(pc_test_dirty(fh, &d, &nd), 0);
	CU_ASSERT_EQUAL_FATAL(nd, 2);
	CU_ASSERT_EQUAL(d[0].file_offset, 4096);
	CU_ASSERT_EQUAL(d[0].length, 4096);
	CU_ASSERT_EQUAL(d[0].storage_offset, base + 4096);
	CU_ASSERT_EQUAL(d[0].state, PNFS_EXT_INVALID);
	CU_ASSERT_EQUAL(d[1].file_offset, 696320);
	CU_ASSERT_EQUAL(d[1].length, 4096);
	free(d);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT(st.zero_filled_bytes > 0);
	CU_ASSERT_EQUAL(st.mds_data_written, 0);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "inval");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	free(stale);
	free(back);
	free(disk);
}

/* READ_DATA + INVALID_DATA over one range: a write copies the old block from the READ_DATA extent
 * around its bytes; reads take unwritten blocks from the old extent. */
static void test_copy_on_write(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx);
	uint64_t src = vol_size(vol) - 64 * MIB, dst = vol_size(vol) - 62 * MIB;
	struct pnfs_extent ex[2] = { ext(0, MIB, src, PNFS_EXT_READ, DEVID), ext(0, MIB, dst, PNFS_EXT_INVALID, DEVID) };
	struct pnfs_fh *fh = create(ctx, "cow");
	char *old = malloc(MIB), *back = malloc(16384), *disk = malloc(8192), *want = malloc(16384);
	char w[10];

	test_fill_random(old, MIB, 9);
	CU_ASSERT_EQUAL_FATAL(vol_files_io(lab, vol, src, old, MIB, 1, NULL), 0);
	memset(disk, 0xcd, 8192);
	CU_ASSERT_EQUAL_FATAL(vol_files_io(lab, vol, dst + 4096, disk, 8192, 1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, MIB, LAYOUTIOMODE4_RW, ex, 2), 0);
	/* The file is as long as the old data. */
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, old + MIB - 1, 1, MIB - 1), 1);
	test_fill_random(w, sizeof(w), 10);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, w, sizeof(w), 4100), (ssize_t)sizeof(w));
	CU_ASSERT_EQUAL(vol_files_io(lab, vol, dst + 4096, disk, 4096, 0, NULL), 0);
	memcpy(want, old + 4096, 4096);
	memcpy(want + 4, w, sizeof(w));
	CU_ASSERT_EQUAL(memcmp(disk, want, 4096), 0); /* old block copied around the new bytes */
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, 16384, 0), 16384);
	memcpy(want, old, 16384);
	memcpy(want + 4100, w, sizeof(w));
	CU_ASSERT_EQUAL(memcmp(back, want, 16384), 0);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "cow");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	free(old);
	free(back);
	free(disk);
	free(want);
}

/* NONE_DATA is a hole (zeros) in a READ layout; a RW layout without a writable extent sends the write
 * through the MDS with a notice. */
static void test_holes_and_unwritable(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx);
	uint64_t src = vol_size(vol) - 60 * MIB;
	struct pnfs_extent rd[2] = { ext(0, MIB, 0, PNFS_EXT_NONE, DEVID), ext(MIB, MIB, src, PNFS_EXT_READ, DEVID) };
	struct pnfs_extent wr = ext(0, MIB, 0, PNFS_EXT_NONE, DEVID);
	struct pnfs_fh *fh = create(ctx, "holes");
	char *data = malloc(MIB), *back = malloc(2 * MIB), x = 'x';
	struct pnfs_stats st;

	test_fill_random(data, MIB, 11);
	CU_ASSERT_EQUAL_FATAL(vol_files_io(lab, vol, src, data, MIB, 1, NULL), 0);
	/* Make the server's size 2 MiB through the MDS path first (the layout comes after). */
	CU_ASSERT_EQUAL(pnfs_ftruncate(ctx, fh, 2 * MIB), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 2 * MIB, LAYOUTIOMODE4_READ, rd, 2), 0);
	memset(back, 0x77, 2 * MIB);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, 2 * MIB, 0), (ssize_t)(2 * MIB));
	CU_ASSERT_TRUE(all_zero(back, MIB));
	CU_ASSERT_EQUAL(memcmp(back + MIB, data, MIB), 0);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_read, MIB);
	CU_ASSERT(st.zero_filled_bytes >= MIB);
	CU_ASSERT_EQUAL(st.mds_data_read, 0);
	/* A RW layout that is all hole: the write goes through the MDS and says why. */
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, MIB, LAYOUTIOMODE4_RW, &wr, 1), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, &x, 1, 10), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_fh_mds_reason(fh), "no writable extent"));
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.mds_data_written, 1);
	CU_ASSERT_EQUAL(st.fallbacks, 1);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "holes");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	free(data);
	free(back);
}

struct flight {
	int done, bad;
};

static void flight_cb(struct pnfs_context *ctx, int status, void *data, void *priv)
{
	struct flight *f = priv;
	(void)ctx;
	(void)data;
	f->done++;
	if (status < 0)
		f->bad++;
}

/* Many writes in flight at once, each many commands over 4 LUNs; then a recall in the middle of a
 * second batch: I/O already issued drains, nothing new is issued on the recalled range, the rest goes
 * (after the server refuses a new layout) through the MDS, and the extents' blocks after the recall
 * point are never touched. */
static void test_in_flight_and_recall(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx);
	uint64_t base = vol_size(vol) - 48 * MIB;
	const size_t chunk = 2 * MIB;
	const int n = 12;
	char *buf = malloc((size_t)n * chunk), *back = malloc((size_t)n * chunk), *marker = malloc(16 * MIB);
	/* The segment reaches well past what the batches write (a hole after the 48 MiB extent), so they
	 * stay in its first half and the client asks no layout ahead of them: the only LAYOUTGETs are the
	 * ones the recall causes. */
	struct pnfs_extent e[2] = { ext(0, 48 * MIB, base, PNFS_EXT_READ_WRITE, DEVID),
				    ext(48 * MIB, 80 * MIB, 0, PNFS_EXT_NONE, DEVID) };
	struct pnfs_fh *fh = create(ctx, "flight");
	struct flight f = { 0 };
	struct pnfs_stats st0, st1;
	CB_LAYOUTRECALL4args ra;

	test_fill_random(buf, (size_t)n * chunk, 12);
	memset(marker, 0xee, 16 * MIB);
	CU_ASSERT_EQUAL_FATAL(vol_files_io(lab, vol, base + 24 * MIB, marker, 16 * MIB, 1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 128 * MIB, LAYOUTIOMODE4_RW, e, 2), 0);
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + (size_t)i * chunk, chunk, (uint64_t)i * chunk, flight_cb,
						  &f), 0);
	CU_ASSERT_EQUAL(pnfs_outstanding(ctx), (unsigned)n);
	while (f.done < n)
		CU_ASSERT_EQUAL_FATAL(pnfs_run_once(ctx, 5000), 0);
	CU_ASSERT_EQUAL(f.bad, 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, (size_t)n * chunk, 0), (ssize_t)((size_t)n * chunk));
	CU_ASSERT_EQUAL(memcmp(buf, back, (size_t)n * chunk), 0);
	pnfs_get_stats(ctx, &st0);
	CU_ASSERT_EQUAL(st0.direct_bytes_written, (uint64_t)n * chunk);
	CU_ASSERT_EQUAL(st0.mds_data_written, 0);
	CU_ASSERT_EQUAL(st0.layoutgets, 0);

	/* Second batch at 24 MiB..40 MiB; the recall arrives after the first write is issued. */
	memset(&ra, 0, sizeof(ra));
	ra.clora_type = LAYOUT4_BLOCK_VOLUME;
	ra.clora_iomode = LAYOUTIOMODE4_ANY;
	ra.clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
	ra.clora_recall.layoutrecall4_u.lor_layout.lor_fh.nfs_fh4_val = (char *)fh->fh;
	ra.clora_recall.layoutrecall4_u.lor_layout.lor_fh.nfs_fh4_len = fh->fhlen;
	ra.clora_recall.layoutrecall4_u.lor_layout.lor_offset = 0;
	ra.clora_recall.layoutrecall4_u.lor_layout.lor_length = NFS4_UINT64_MAX;
	ra.clora_recall.layoutrecall4_u.lor_layout.lor_stateid = fh->lo->sid;
	f.done = f.bad = 0;
	CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf, chunk, 24 * MIB, flight_cb, &f), 0);
	CU_ASSERT_EQUAL(pc_layout_recall(ctx, &ra), NFS4_OK);
	for (int i = 1; i < 8; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + (size_t)i * chunk, chunk, 24 * MIB + (uint64_t)i * chunk,
						  flight_cb, &f), 0);
	while (f.done < 8)
		CU_ASSERT_EQUAL_FATAL(pnfs_run_once(ctx, 5000), 0);
	CU_ASSERT_EQUAL(f.bad, 0);
	pnfs_get_stats(ctx, &st1);
	/* The one issued before the recall went direct; the seven after it went through the MDS. */
	CU_ASSERT_EQUAL(st1.direct_bytes_written - st0.direct_bytes_written, chunk);
	CU_ASSERT_EQUAL(st1.mds_data_written, 7 * chunk);
	CU_ASSERT(st1.layoutreturns + st1.layoutgets >= 1);
	/* The layout's blocks after the recalled write: untouched. */
	CU_ASSERT_EQUAL(vol_files_io(lab, vol, base + 26 * MIB, marker, 14 * MIB, 0, NULL), 0);
	for (size_t i = 0; i < 14 * MIB; i++)
		if ((unsigned char)marker[i] != 0xee) {
			CU_FAIL("a recalled range was written after the recall");
			break;
		}
	/* The bytes written after the recall are the file's, through the MDS path. */
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, 14 * MIB, 26 * MIB), (ssize_t)(14 * MIB));
	CU_ASSERT_EQUAL(memcmp(back, buf + chunk, 14 * MIB), 0);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "flight");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	free(buf);
	free(back);
	free(marker);
}

/* This process's established TCP connections to 127.0.0.1:port (its iSCSI sessions to a lab). */
static int sessions_to(int port)
{
	unsigned long inodes[256];
	int ninodes = 0, n = 0;
	char line[512];
	FILE *f = fopen("/proc/net/tcp", "r");
	DIR *dir;
	struct dirent *de;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && ninodes < 256) {
		unsigned rport, st;
		unsigned long ino;
		/* sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*d: %*x:%*x %*x:%x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &rport, &st, &ino) == 3 &&
		    rport == (unsigned)port && st == 1)
			inodes[ninodes++] = ino;
	}
	fclose(f);
	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		char path[300], target[64];
		ssize_t len;
		unsigned long ino;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (sscanf(target, "socket:[%lu]", &ino) != 1)
			continue;
		for (int i = 0; i < ninodes; i++)
			if (inodes[i] == ino)
				n++;
	}
	closedir(dir);
	return n;
}

/* Wait up to 5 s, servicing the client, for its sessions to the lab to come to want. */
static int sessions_settle(struct pnfs_context *ctx, int port, int want)
{
	int n = sessions_to(port);
	for (int i = 0; i < 500 && n != want; i++) {
		pnfs_service(ctx, POLLIN);
		usleep(10000);
		n = sessions_to(port);
	}
	return n;
}

/* The server changed the device (CB_NOTIFY_DEVICEID) and the client resolved it again, into a context
 * of its own, while writes were in flight on the first: those complete there, new I/O goes to the new
 * context, and the first context's sessions are closed once its last command is done. */
static void test_device_changed(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx), *vol2 = NULL;
	uint64_t base = vol_size(vol) - 40 * MIB;
	const size_t chunk = 2 * MIB;
	const int n = 8;
	char *buf = malloc((size_t)n * chunk), *back = malloc((size_t)n * chunk), err[300];
	struct pnfs_extent e = ext(0, 32 * MIB, base, PNFS_EXT_READ_WRITE, DEVID);
	struct pnfs_fh *fh = create(ctx, "changed");
	struct flight f = { 0 };
	struct pnfs_stats st;

	CU_ASSERT_EQUAL(sessions_to(lab->port), 4);
	test_fill_random(buf, (size_t)n * chunk, 21);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 32 * MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	for (int i = 0; i < n / 2; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + (size_t)i * chunk, chunk, (uint64_t)i * chunk, flight_cb,
						  &f), 0);
	/* the device is resolved again with writes still in flight on its first context */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_read_pool(mds->pool, &vol2, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_device(ctx, DEVID, LAYOUT4_BLOCK_VOLUME, vol2), 0);
	CU_ASSERT_EQUAL(pnfs_outstanding(ctx), (unsigned)(n / 2));
	CU_ASSERT_EQUAL(sessions_to(lab->port), 8);
	for (int i = n / 2; i < n; i++)
		CU_ASSERT_EQUAL(pnfs_pwrite_async(ctx, fh, buf + (size_t)i * chunk, chunk, (uint64_t)i * chunk, flight_cb,
						  &f), 0);
	while (f.done < n)
		CU_ASSERT_EQUAL_FATAL(pnfs_run_once(ctx, 5000), 0);
	CU_ASSERT_EQUAL(f.bad, 0);
	/* the first context is idle: its four sessions go, the new context's four stay */
	CU_ASSERT_EQUAL(sessions_settle(ctx, lab->port, 4), 4);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, (size_t)n * chunk, 0), (ssize_t)((size_t)n * chunk));
	CU_ASSERT_EQUAL(memcmp(buf, back, (size_t)n * chunk), 0);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, (uint64_t)n * chunk);
	CU_ASSERT_EQUAL(st.direct_bytes_read, (uint64_t)n * chunk);
	CU_ASSERT_EQUAL(st.mds_data_written, 0);
	/* and the bytes are on the LUNs, where the extent says */
	memset(back, 0, (size_t)n * chunk);
	CU_ASSERT_EQUAL(vol_files_io(lab, pnfs_device_volume(ctx, DEVID), base, back, (size_t)n * chunk, 0, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(buf, back, (size_t)n * chunk), 0);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "changed");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	CU_ASSERT_EQUAL(sessions_to(lab->port), 0);
	free(buf);
	free(back);
}

/* Service the client for a while (no wait for a state: for counts that must not change). */
static void service_for_ms(struct pnfs_context *ctx, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		pnfs_service(ctx, POLLIN);
		usleep(10000);
	}
}

/* CB_NOTIFY_DEVICEID with one NOTIFY_DEVICEID4_DELETE for a block volume device, as the backchannel
 * hands it over. */
static void notify_delete(struct pnfs_context *ctx, const uint8_t id[NFS4_DEVICEID4_SIZE])
{
	notify_deviceid_delete4 del;
	CB_NOTIFY_DEVICEID4args a;
	uint32_t bit = 1u << NOTIFY_DEVICEID4_DELETE;
	char body[64];
	notify4 n;
	XDR x;

	memset(&del, 0, sizeof(del));
	del.ndd_layouttype = LAYOUT4_BLOCK_VOLUME;
	memcpy(del.ndd_deviceid, id, NFS4_DEVICEID4_SIZE);
	xdrmem_create(&x, body, sizeof(body), XDR_ENCODE);
	CU_ASSERT_FATAL(xdr_notify_deviceid_delete4(&x, &del));
	n.notify_mask.bitmap4_len = 1;
	n.notify_mask.bitmap4_val = &bit;
	n.notify_vals.notifylist4_len = xdr_getpos(&x);
	n.notify_vals.notifylist4_val = body;
	a.cnda_changes.cnda_changes_len = 1;
	a.cnda_changes.cnda_changes_val = &n;
	CU_ASSERT_EQUAL(pc_device_notify(ctx, &a), NFS4_OK);
	xdr_destroy(&x);
}

/* The server deleted the device. Its LUN sessions stay while a file's extent points at it and a
 * write on it waits for its commit, and close once that file is closed. The device keeps its
 * description (for pnfs_device_info), and new I/O through an extent on it goes to the MDS. */
static void test_device_deleted(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	struct blkmap_vol *vol = pool_device(ctx), *dvol = NULL;
	const uint64_t size = vol_size(vol), base = size - 40 * MIB;
	struct pnfs_extent e = ext(0, 4 * MIB, base, PNFS_EXT_READ_WRITE, DEVID);
	struct pnfs_fh *fh = create(ctx, "deleted");
	static char buf[65536], back[65536];
	struct pnfs_stats st;
	const char *why = NULL;

	CU_ASSERT_EQUAL(sessions_to(lab->port), 4);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 4 * MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	test_fill_random(buf, sizeof(buf), 31);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, sizeof(buf));
	notify_delete(ctx, DEVID);
	CU_ASSERT_EQUAL(pnfs_device_info(ctx, DEVID, NULL, &why), 0);
	CU_ASSERT_STRING_EQUAL(why, "deleted by the server");
	/* the open file's extent and its uncommitted write still need the LUNs */
	service_for_ms(ctx, 200);
	CU_ASSERT_EQUAL(sessions_to(lab->port), 4);
	close_quiet(ctx, fh);
	CU_ASSERT_EQUAL(sessions_settle(ctx, lab->port, 0), 0);
	/* the description stays, with its size */
	CU_ASSERT_EQUAL(pnfs_device_info(ctx, DEVID, &dvol, &why), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dvol);
	CU_ASSERT_EQUAL(vol_size(dvol), size);
	CU_ASSERT_STRING_EQUAL(why, "deleted by the server");
	/* an extent on the deleted device: the write goes through the MDS and reads back */
	fh = create(ctx, "deleted2");
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 4 * MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	test_fill_random(buf, sizeof(buf), 32);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, sizeof(buf));
	CU_ASSERT_EQUAL(st.mds_data_written, sizeof(buf));
	CU_ASSERT_EQUAL(sessions_to(lab->port), 0);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "deleted");
	pnfs_unlink(ctx, "deleted2");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* Writes through READ_WRITE_DATA extents on more devices than a layout remembers: the commit flushes
 * every device the client has LUNs for, and skips one it never found (which has none to flush). */
static void test_commit_many_devices(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(0, lab);
	enum { NDEV = PC_OW_DEVS_MAX + 1 };
	struct pnfs_extent e[NDEV];
	uint8_t ids[NDEV + 1][16];
	struct blkmap_vol *vol = NULL, *nowhere = NULL;
	static char buf[NDEV * MIB], back[NDEV * MIB];
	char err[300];
	uint64_t base = 0;
	struct pnfs_fh *fh;
	struct pnfs_stats st;
	const char *why;

	for (int i = 0; i <= NDEV; i++) {
		memcpy(ids[i], DEVID, 16);
		ids[i][15] = (uint8_t)('a' + i);
	}
	for (int i = 0; i < NDEV; i++) {
		CU_ASSERT_EQUAL_FATAL(blkmap_vol_read_pool(mds->pool, &vol, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(pc_test_inject_device(ctx, ids[i], LAYOUT4_BLOCK_VOLUME, vol), 0);
		base = vol_size(pnfs_device_volume(ctx, ids[i])) - 40 * MIB;
		e[i] = ext((uint64_t)i * MIB, MIB, base + (uint64_t)i * MIB, PNFS_EXT_READ_WRITE, ids[i]);
	}
	/* a device whose LUNs are nowhere (no extent of this file is on it) */
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_parse_text("simple 0:0123456789abcdef0123456789abcdef\n", &nowhere, err,
						    sizeof(err)), 0);
	CU_ASSERT_EQUAL(pc_test_inject_device(ctx, ids[NDEV], LAYOUT4_BLOCK_VOLUME, nowhere), -ENODEV);
	CU_ASSERT_EQUAL(pnfs_device_info(ctx, ids[NDEV], NULL, &why), 0);

	fh = create(ctx, "many");
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, NDEV * MIB, LAYOUTIOMODE4_RW, e, NDEV), 0);
	test_fill_random(buf, sizeof(buf), 41);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, sizeof(buf));
	/* the flush succeeds and the LAYOUTCOMMIT is sent (pnfs-mds refuses it: it granted no such layout) */
	CU_ASSERT_EQUAL(pnfs_fsync(ctx, fh), -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_get_error(ctx), "LAYOUTCOMMIT failed"));
	CU_ASSERT_PTR_NULL(strstr(pnfs_get_error(ctx), "stable"));
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, sizeof(back), 0), (ssize_t)sizeof(back));
	CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "many");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* A SCSI layout: the client registers the key GETDEVICEINFO gave on the LUN before I/O; the "MDS"
 * (another initiator holding an Exclusive Access - Registrants Only reservation) preempts it; the next
 * write gets RESERVATION CONFLICT and the client falls back to the MDS path: the data still arrives. */
static void test_scsi_fencing(void)
{
	NEED_LAB();
	struct pnfs_context *ctx = client(1, lab1);
	struct blkmap_ctx_opts bo;
	struct blkmap_ctx *fctx = NULL;
	struct blkmap_dev *fdev = NULL, *probe = NULL;
	struct blkmap_inquiry inq;
	struct blkmap_pr_keys keys;
	struct blkmap_vol *vol = NULL;
	const struct blkmap_designator *ds = NULL;
	const uint64_t key = 0x5ca1ab1e0001ull, mds_key = 0x5ca1ab1e9999ull;
	struct pnfs_extent e;
	struct pnfs_fh *fh;
	struct pnfs_stats st;
	char buf[65536], back[65536];
	uint32_t leaf, sl;

	blkmap_ctx_opts_init(&bo);
	bo.initiator_name = INITIATOR_FENCER;
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&bo, &fctx), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(fctx, lab1->urls[0], 0, &fdev), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_dev_inquiry(fdev, &inq), 0);
	for (unsigned i = 0; i < inq.ndesig && !ds; i++)
		if (inq.desig[i].association == 0 &&
		    (inq.desig[i].type == BLKMAP_DESIG_NAA || inq.desig[i].type == BLKMAP_DESIG_T10 ||
		     inq.desig[i].type == BLKMAP_DESIG_EUI64 || inq.desig[i].type == BLKMAP_DESIG_NAME))
			ds = &inq.desig[i];
	CU_ASSERT_PTR_NOT_NULL_FATAL(ds);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_create(&vol), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_scsi(vol, ds->type, ds->code_set, ds->bytes, ds->len, key, &leaf), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_add_slice(vol, MIB, 32 * MIB, leaf, &sl), 0);
	(void)probe;
	/* The resolution registers our key before any I/O. */
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_device(ctx, SCSI_DEVID, LAYOUT4_SCSI, vol), 0);
	CU_ASSERT_EQUAL(blkmap_pr_read_keys(fdev, &keys), 0);
	CU_ASSERT_EQUAL(keys.total, 1);
	CU_ASSERT_EQUAL(keys.nkeys ? keys.keys[0] : 0, key);
	/* The MDS side: its own key and the reservation that keeps strangers out. */
	CU_ASSERT_EQUAL_FATAL(blkmap_pr_register(fdev, 0, mds_key, 1), 0);
	CU_ASSERT_EQUAL_FATAL(blkmap_pr_reserve(fdev, mds_key, BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY), 0);

	fh = create(ctx, "fenced");
	e = ext(0, 4 * MIB, 0, PNFS_EXT_READ_WRITE, SCSI_DEVID);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, 4 * MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	test_fill_random(buf, sizeof(buf), 13);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 0), (ssize_t)sizeof(buf)); /* registered: allowed */
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, sizeof(buf));
	CU_ASSERT_EQUAL(st.fenced, 0);
	CU_ASSERT_EQUAL(sessions_to(lab1->port), 2); /* the client's and the fencer's */

	/* Fenced. */
	CU_ASSERT_EQUAL(blkmap_pr_preempt(fdev, mds_key, key, BLKMAP_PR_EXCLUSIVE_ACCESS_REG_ONLY, 1), 0);
	test_fill_random(buf, sizeof(buf), 14);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 65536), (ssize_t)sizeof(buf));
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.fenced, 1);
	CU_ASSERT_EQUAL(st.mds_data_written, sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_fh_mds_reason(fh), "RESERVATION CONFLICT"));
	/* From now on the file goes through the MDS, and reads back what was written there. */
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, sizeof(back), 65536), (ssize_t)sizeof(back));
	CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
	/* the layout went back when the write was fenced: the device's session closes, the fencer's stays */
	CU_ASSERT_EQUAL(sessions_settle(ctx, lab1->port, 1), 1);
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "fenced");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	CU_ASSERT_EQUAL(blkmap_pr_clear(fdev, mds_key), 0);
	blkmap_dev_close(fdev);
	blkmap_ctx_destroy(fctx);
}

/* No SAN access: the device cannot be resolved, the file falls back with a notice and the I/O is
 * right. */
static void test_unreachable_san(void)
{
	NEED_LAB();
	struct pnfs_opts o;
	struct pnfs_context *ctx;
	struct blkmap_vol *vol = NULL;
	char err[300], buf[10000], back[10000];
	const char *nothing[] = { "/nonexistent/lun" };
	struct pnfs_extent e;
	struct pnfs_fh *fh;
	struct pnfs_stats st;

	pnfs_opts_init(&o);
	o.devices = nothing;
	o.ndevices = 1;
	o.no_scsi = 1;
	ctx = ct_mount(&o, mds->port, "/");
	CU_ASSERT_EQUAL_FATAL(blkmap_vol_read_pool(mds->pool, &vol, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(pc_test_inject_device(ctx, DEVID, LAYOUT4_BLOCK_VOLUME, vol), -ENODEV);
	fh = create(ctx, "nosan");
	e = ext(0, MIB, 0, PNFS_EXT_READ_WRITE, DEVID);
	CU_ASSERT_EQUAL_FATAL(pc_test_inject_segment(fh, 0, MIB, LAYOUTIOMODE4_RW, &e, 1), 0);
	test_fill_random(buf, sizeof(buf), 15);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_fh_mds_reason(fh), "LUNs"));
	CU_ASSERT_EQUAL(pnfs_pread(ctx, fh, back, sizeof(back), 0), (ssize_t)sizeof(back));
	CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
	pnfs_get_stats(ctx, &st);
	CU_ASSERT_EQUAL(st.direct_bytes_written, 0);
	CU_ASSERT_EQUAL(st.mds_data_written, sizeof(buf));
	close_quiet(ctx, fh);
	pnfs_unlink(ctx, "nosan");
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

TEST_SUITE(client_direct, "integration/client_direct", suite_init, suite_clean,
	   { "rw_extent", test_rw_extent },
	   { "invalid_zero_fill", test_invalid_zero_fill },
	   { "copy_on_write", test_copy_on_write },
	   { "holes_and_unwritable", test_holes_and_unwritable },
	   { "in_flight_and_recall", test_in_flight_and_recall },
	   { "device_changed", test_device_changed },
	   { "device_deleted", test_device_deleted },
	   { "commit_many_devices", test_commit_many_devices },
	   { "scsi_fencing", test_scsi_fencing },
	   { "unreachable_san", test_unreachable_san });
