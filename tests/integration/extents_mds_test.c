/* pnfs-extents pnfs://... against a real pnfs-mds on a real tgtd SAN: a file written through libpnfs
 * in three sessions with holes between them is shown from the server's READ layout (written data as
 * READ, holes as NONE, covering the file block for block), and every LBA range it prints holds the
 * file's bytes in that LUN's backing file. --verify passes on the good file; a LUN whose bytes differ
 * from what the MDS reads (the tool pointed at copies of the LUN files, one byte flipped) is reported
 * as exactly that extent with exit status 1, and so is a byte flipped on the LUN itself against a
 * known-good copy. The SVG has one segment per extent and renders to PNG. */
#include "client/pnfs.h"
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/mdsd.h"
#include "tests/tools/extents_helpers.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLUNS 4
#define UNIT (256u << 10)
#define MIB (1u << 20)
#define BLK 4096u

static const struct {
	uint64_t off, len;
} writes[3] = {
	{ 0, 3 * MIB / 2 },                  /* six stripe units */
	{ 3 * MIB + 100, 700 * 1024 },       /* starts and ends inside blocks */
	{ 6 * MIB + 4096, 3 * MIB - 4096 + 123 },
};
#define FILE_SIZE (9ull * MIB + 123)

static struct test_lab *lab;
static struct test_mds *mds;
static uint8_t *content;   /* what the file reads as */
static char why[300], url[200], devs[4096], dir[400];

/* A libpnfs context in *ctx for initiator with the lab's LUNs, mounted on the suite's server: 0, or
 * -1 (*ctx, when not NULL, holds the error; the caller destroys it either way). */
static int lab_client(const char *initiator, struct pnfs_context **ctx)
{
	struct pnfs_opts o;
	const char *urls[NLUNS];

	for (int i = 0; i < NLUNS; i++)
		urls[i] = lab->urls[i];
	pnfs_opts_init(&o);
	o.devices = urls;
	o.ndevices = NLUNS;
	o.initiator_name = initiator;
	if (pnfs_context_create(&o, ctx))
		return -1;
	return pnfs_mount(*ctx, "127.0.0.1", mds->port, "/") ? -1 : 0;
}

static int write_file(void)
{
	struct pnfs_context *ctx = NULL;
	int rc = -1;

	if (lab_client("iqn.2024-01.test.pnfs:extents-writer", &ctx))
		goto out;
	/* Three sessions: open, write, close (which commits the layout's writes). */
	for (int s = 0; s < 3; s++) {
		struct pnfs_fh *fh = NULL;
		int flags = O_RDWR | (s == 0 ? O_CREAT | O_EXCL : 0);
		test_fill_random(content + writes[s].off, writes[s].len, 200 + s);
		if (pnfs_open(ctx, "/data.bin", flags, 0644, &fh) ||
		    pnfs_pwrite(ctx, fh, content + writes[s].off, writes[s].len, writes[s].off) !=
			    (ssize_t)writes[s].len) {
			fprintf(stderr, "extents_mds: session %d: %s\n", s, pnfs_get_error(ctx));
			if (fh)
				pnfs_close(ctx, fh);
			goto out;
		}
		if (pnfs_close(ctx, fh)) {
			fprintf(stderr, "extents_mds: close %d: %s\n", s, pnfs_get_error(ctx));
			goto out;
		}
	}
	rc = pnfs_umount(ctx);
out:
	if (rc && ctx)
		fprintf(stderr, "extents_mds: writing the file: %s\n", pnfs_get_error(ctx));
	pnfs_context_destroy(ctx);
	return rc;
}

static int suite_init(void)
{
	size_t used = 0;

	snprintf(dir, sizeof(dir), "%s", test_tmpdir("extents-mds"));
	content = calloc(1, FILE_SIZE);
	if (!content) {
		snprintf(why, sizeof(why), "out of memory");
		return 0;
	}
	mds = tmds_lab_up(&lab, NLUNS, "64M", NULL, "--stripe-unit 256K", why, sizeof(why), "%s", "");
	if (!mds)
		return 0;
	if (write_file() != 0) {
		snprintf(why, sizeof(why), "could not write the file through libpnfs");
		tmds_down(mds);
		mds = NULL;
		return 0;
	}
	snprintf(url, sizeof(url), "pnfs://127.0.0.1:%d/data.bin", mds->port);
	for (int i = 0; i < NLUNS; i++)
		used += (size_t)snprintf(devs + used, sizeof(devs) - used, " --device %s", lab->urls[i]);
	return 0;
}

static int suite_clean(void)
{
	free(content);
	content = NULL;
	return tmds_lab_down(&lab, &mds);
}

#define NEED_MDS() TEST_SKIP_IF(!mds, "%s", why)

static int extents(char **out, const char *opts)
{
	return test_run(out, "%s %s %s 2>&1", test_bin("pnfs-extents"), url, opts);
}

/* Whether block b of the file holds written bytes. */
static int block_written(uint64_t b)
{
	for (int s = 0; s < 3; s++)
		if (b * BLK < writes[s].off + writes[s].len && (b + 1) * BLK > writes[s].off)
			return 1;
	return 0;
}

static void test_states_and_lbas(void)
{
	static struct xt_row rows[256];
	uint64_t nblocks = (FILE_SIZE + BLK - 1) / BLK, pos = 0, checked = 0, want_checked = 0;
	uint8_t *lun = malloc(MIB);
	char *out = NULL;
	int n, prev_ext = -1, nreads = 0;

	NEED_MDS();
	CU_ASSERT_FATAL(lun != NULL);
	CU_ASSERT_EQUAL(extents(&out, devs), 0);
	xt_expect_file_summary(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "source    the layout from 127.0.0.1:"));
	n = xt_parse_rows(out, rows, 256);
	CU_ASSERT_FATAL(n > 5);
	for (int i = 0; i < n; i++) {
		struct xt_row *r = &rows[i];
		/* Pieces in file order, back to back, over the whole file in whole blocks. */
		CU_ASSERT_EQUAL(r->file_off, pos);
		pos = r->file_off + r->len;
		CU_ASSERT(r->ext >= prev_ext);
		prev_ext = r->ext;
		/* A READ layout: what the file holds is READ, the rest is a hole. */
		CU_ASSERT(!strcmp(r->state, "READ") || !strcmp(r->state, "NONE"));
		for (uint64_t b = r->file_off / BLK; b < (r->file_off + r->len) / BLK && b < nblocks; b++)
			CU_ASSERT_EQUAL(block_written(b), strcmp(r->state, "READ") == 0);
		if (strcmp(r->state, "READ")) {
			CU_ASSERT_EQUAL(r->lun, -1);
			continue;
		}
		nreads++;
		xt_check_piece(lab, r, UNIT);
		if (r->lun < 0 || r->file_off >= FILE_SIZE)
			continue;
		/* Those LBAs in the LUN's backing file hold the file's bytes (zeros around the writes
		 * inside their blocks). */
		checked += xt_check_piece_bytes(lab, r, content, FILE_SIZE, lun, MIB);
	}
	CU_ASSERT_EQUAL(pos, nblocks * BLK);
	for (uint64_t b = 0; b < nblocks; b++)
		if (block_written(b))
			want_checked += (b + 1) * BLK > FILE_SIZE ? FILE_SIZE - b * BLK : BLK;
	CU_ASSERT_EQUAL(checked, want_checked);
	/* The first write alone is six stripe units: six pieces, on every LUN. */
	CU_ASSERT(nreads >= 6 + 3 + 12);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 holes"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "READ-iomode layout"));
	free(out);

	/* Whole extents: READ, NONE, READ, NONE, READ. */
	CU_ASSERT_EQUAL(extents(&out, "--no-split"), 0);
	n = xt_parse_rows(out, rows, 256);
	CU_ASSERT_EQUAL(n, 5);
	for (int i = 0; i < n && i < 5; i++)
		CU_ASSERT_STRING_EQUAL(rows[i].state, i % 2 ? "NONE" : "READ");
	free(out);

	/* A part of the file: the second write and the hole after it. */
	CU_ASSERT_EQUAL(extents(&out, "--offset 3M --length 1M --no-split"), 0);
	xt_expect_second_write(out, "READ");
	free(out);

	/* Without any way to the LUNs, the volume's offsets still map to the leaves (in sectors). */
	CU_ASSERT_EQUAL(extents(&out, "--no-split"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "the device's LUNs were not found"));
	CU_ASSERT_EQUAL(xt_parse_rows(out, rows, 256), 5);
	free(out);

	/* JSON, for scripts: the same states, the LUNs, and bytes per LUN adding up. */
	if (test_run(NULL, "command -v jq >/dev/null") == 0) {
		CU_ASSERT_EQUAL(test_run(NULL, "%s %s %s --json | jq -e '"
					 ".source == \"mds\" and .size == 9437307 and "
					 "[.extents[].state] == [\"READ\",\"NONE\",\"READ\",\"NONE\",\"READ\"] and "
					 "(.luns | length) == 4 and .fragmentation.holes == 2 and "
					 "(.extents[0].pieces | length) == 6 and "
					 "([.luns[].bytes] | add) == .fragmentation.data_bytes' >/dev/null",
					 test_bin("pnfs-extents"), url, devs),
				0);
	}
	free(lun);
}

/* Row of the first piece of extent ext longer than min bytes, or -1. */
static int piece_of(const struct xt_row *rows, int n, int ext, uint64_t min)
{
	for (int i = 0; i < n; i++)
		if (rows[i].ext == ext && rows[i].len > min)
			return i;
	return -1;
}

/* Give LUN lun of lab `to` the SCSI ID and serial of the same LUN of lab `from` (tgtadm on to's tgtd). */
static int same_scsi_id(struct test_lab *to, struct test_lab *from, int lun)
{
	char *ctl = NULL, *id = NULL;
	int rc = -1;

	if (test_run(&ctl, "sed -n 's/^LAB_CTL=//p' '%s/lab.env'", to->dir) != 0 || !ctl || !ctl[0])
		goto out;
	ctl[strcspn(ctl, "\n")] = 0;
	if (test_run(&id, "iscsi-inq -e 1 -c 128 '%s' | sed -n 's/^Unit Serial Number:\\[ *\\(.*\\)\\]/\\1/p'",
		     from->urls[lun - 1]) != 0 || !id || !id[0])
		goto out;
	id[strcspn(id, "\n")] = 0;
	rc = test_run(NULL, "tgtadm -C %s --lld iscsi --mode logicalunit --op update --tid 1 --lun %d "
			    "--params scsi_id=%s,scsi_sn=%s", ctl, lun, id, id);
out:
	free(ctl);
	free(id);
	return rc;
}

static void test_verify(void)
{
	static struct xt_row rows[256];
	char *out = NULL, opts[8192], copies[4096], ref[500];
	struct test_lab *lab2;
	size_t used = 0;
	int n, t;
	FILE *f;

	NEED_MDS();
	snprintf(opts, sizeof(opts), "%s --verify", devs);
	CU_ASSERT_EQUAL(extents(&out, opts), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "verify    LUN bytes against the MDS path: 5 extents, 3 ok, "
					   "2 reading as zeros, 0 bad"));
	n = xt_parse_rows(out, rows, 256);
	free(out);
	t = piece_of(rows, n, 2, 5000);
	CU_ASSERT_FATAL(t >= 0);

	/* A second SAN whose LUNs carry the same identity (tgt derives its designators from the target
	 * and LUN numbers and from the SCSI ID, which is set to the first lab's) and copies of the pool's
	 * bytes, one byte of the second write flipped: the tool, pointed at it, reads other bytes than
	 * the MDS does, and reports exactly that extent. */
	lab2 = lab_up(NLUNS, "64M", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lab2);
	for (int i = 0; i < NLUNS; i++) {
		CU_ASSERT_EQUAL_FATAL(same_scsi_id(lab2, lab, i + 1), 0);
		CU_ASSERT_EQUAL_FATAL(test_run(NULL, "cp --sparse=always %s %s", lab->files[i], lab2->files[i]), 0);
		used += (size_t)snprintf(copies + used, sizeof(copies) - used, " --device %s", lab2->urls[i]);
	}
	xt_flip_byte(lab2, &rows[t]);
	snprintf(opts, sizeof(opts), "%s --verify", copies);
	CU_ASSERT_EQUAL(extents(&out, opts), 1);
	xt_expect_bad(out, "2 ok, 2 reading as zeros, 1 bad", &rows[t], 1);
	free(out);
	lab_down(lab2);

	/* A byte flipped on the LUN itself is read alike by both paths (the MDS reads the same block);
	 * a known-good copy of the file finds it. */
	snprintf(ref, sizeof(ref), "%s/reference", dir);
	f = fopen(ref, "wb");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(fwrite(content, 1, FILE_SIZE, f), FILE_SIZE);
	CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
	xt_flip_byte(lab, &rows[t]);
	snprintf(opts, sizeof(opts), "%s --verify", devs);
	CU_ASSERT_EQUAL(extents(&out, opts), 0);
	free(out);
	snprintf(opts, sizeof(opts), "%s --verify --compare %s", devs, ref);
	CU_ASSERT_EQUAL(extents(&out, opts), 1);
	xt_expect_bad(out, "2 ok, 2 reading as zeros, 1 bad", &rows[t], 0);
	free(out);
	/* Put it back. */
	xt_flip_byte(lab, &rows[t]);
}

static void test_svg_renders(void)
{
	char *out = NULL, svg[600], png[600], opts[5000];
	uint8_t head[24];
	FILE *f;

	NEED_MDS();
	snprintf(svg, sizeof(svg), "%s/map.svg", dir);
	snprintf(png, sizeof(png), "%s/map.png", dir);
	snprintf(opts, sizeof(opts), "%s --svg %s", devs, svg);
	CU_ASSERT_EQUAL_FATAL(extents(NULL, opts), 0);
	CU_ASSERT_EQUAL_FATAL(test_run(&out, "cat %s", svg), 0);
	CU_ASSERT_EQUAL(xt_count(out, "class=\"segment\""), 5);
	CU_ASSERT(xt_count(out, "class=\"piece\"") >= 6 + 3 + 12);
	CU_ASSERT_EQUAL(xt_count(out, "class=\"lun\""), NLUNS);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, lab->urls[2]));
	free(out);
	if (test_run(NULL, "command -v rsvg-convert >/dev/null") != 0) {
		test_skip("rsvg-convert (librsvg2-bin) is not installed");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "rsvg-convert -o %s %s", png, svg), 0);
	f = fopen(png, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fread(head, 1, sizeof(head), f), sizeof(head));
	fclose(f);
	CU_ASSERT_EQUAL(memcmp(head, "\x89PNG\r\n\x1a\n", 8), 0);
	CU_ASSERT_EQUAL(((unsigned)head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19]), 1000);
}

/* A file longer than one LAYOUTGET covers (the server grants at most 64 MiB past the offset): the
 * query asks again from where each layout ends until the range is covered, clips to it, and the
 * tool shows the whole file. */
#define FAR_OFF (150ull * MIB)
static void test_long_file_layouts(void)
{
	struct pnfs_context *ctx = NULL;
	struct pnfs_fh *fh = NULL;
	struct pnfs_extent *ext = NULL;
	struct pnfs_stats s0, s1;
	uint8_t head[4096], tail[4096];
	uint64_t pos = 0;
	size_t n = 0;
	char *out = NULL, cmd[5000];

	NEED_MDS();
	CU_ASSERT_EQUAL_FATAL(lab_client("iqn.2024-01.test.pnfs:extents-long", &ctx), 0);
	test_fill_random(head, sizeof(head), 301);
	test_fill_random(tail, sizeof(tail), 302);
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/long.bin", O_CREAT | O_EXCL | O_RDWR, 0644, &fh), 0);
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, head, sizeof(head), 0), (ssize_t)sizeof(head));
	CU_ASSERT_EQUAL(pnfs_pwrite(ctx, fh, tail, sizeof(tail), FAR_OFF), (ssize_t)sizeof(tail));
	CU_ASSERT_EQUAL_FATAL(pnfs_close(ctx, fh), 0);

	/* The library call: the whole file in READ layouts, from more than one LAYOUTGET. */
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/long.bin", O_RDONLY, 0, &fh), 0);
	pnfs_get_stats(ctx, &s0);
	CU_ASSERT_EQUAL_FATAL(pnfs_layout_extents(ctx, fh, 0, FAR_OFF + 4096, &ext, &n), 0);
	pnfs_get_stats(ctx, &s1);
	CU_ASSERT(s1.layoutgets - s0.layoutgets >= 2);
	/* Merged across the layouts' boundaries: the data, the hole, the data. */
	CU_ASSERT_EQUAL_FATAL(n, 3);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(ext[i].file_offset, pos);
		pos = ext[i].file_offset + ext[i].length;
		if (ext[i].state != PNFS_EXT_NONE)
			CU_ASSERT_EQUAL(pnfs_device_info(ctx, ext[i].deviceid, NULL, NULL), 1);
	}
	CU_ASSERT_EQUAL(pos, FAR_OFF + 4096);
	CU_ASSERT_EQUAL(ext[0].state, PNFS_EXT_READ);
	CU_ASSERT_EQUAL(ext[0].length, 4096);
	CU_ASSERT_EQUAL(ext[n - 1].state, PNFS_EXT_READ);
	CU_ASSERT_EQUAL(ext[n - 1].file_offset, FAR_OFF);
	free(ext);
	/* A part in the middle: clipped to it, one hole. */
	CU_ASSERT_EQUAL(pnfs_layout_extents(ctx, fh, 80 * MIB, 4 * MIB, &ext, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(ext[0].file_offset, 80 * MIB);
	CU_ASSERT_EQUAL(ext[0].length, 4 * MIB);
	CU_ASSERT_EQUAL(ext[0].state, PNFS_EXT_NONE);
	free(ext);
	CU_ASSERT_EQUAL(pnfs_close(ctx, fh), 0);
	CU_ASSERT_EQUAL(pnfs_umount(ctx), 0);
	pnfs_context_destroy(ctx);

	/* The command over it: READ, NONE, READ to the end, verified against the MDS path. */
	snprintf(cmd, sizeof(cmd), "%s --no-split --verify", devs);
	CU_ASSERT_EQUAL(test_run(&out, "%s pnfs://127.0.0.1:%d/long.bin %s 2>&1", test_bin("pnfs-extents"),
				 mds->port, cmd),
			0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "range     0+157290496"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "3 extents, 2 ok, 1 reading as zeros, 0 bad"));
	free(out);
}

TEST_SUITE(extents_mds, "integration/extents_mds", suite_init, suite_clean,
	   { "states_and_lbas", test_states_and_lbas },
	   { "verify", test_verify },
	   { "svg_renders", test_svg_renders },
	   { "long_file_layouts", test_long_file_layouts });
