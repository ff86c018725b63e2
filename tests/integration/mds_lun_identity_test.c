/* A LUN that comes back different is never read as the old one, end to end on a real tgtd lab with a
 * real pnfs-mds: the lab's tgtd killed and started again on blank LUN files, or on two of the pool's
 * LUN files exchanged; files written and acknowledged before then fail to read, through layouts and
 * through the MDS, with the LUN named, instead of reading as zeros or as another file's blocks; the
 * server keeps serving, says it once in its log and in its metrics; and when the right LUNs are back
 * it serves them again by itself. A libpnfs client's own sessions are checked the same way. */
#include "client/pnfs.h"
#include "tests/blkmap/helpers.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"
#include "tests/mds/layout_util.h"
#include "tests/mds/mdsd.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INITIATOR "iqn.2024-01.test.pnfs:ident"
#define FILE_BYTES (6u << 20)

struct env {
	struct test_lab *lab;
	struct test_mds *mds;
	int metrics_port;
	char src[400], opts[2048];
	uint8_t *data;
};

static int env_up(struct env *e, const char *mds_args)
{
	char args[200], why[300];
	size_t n;
	int fd;

	memset(e, 0, sizeof(*e));
	e->lab = lab_up(2, "32M", NULL);
	if (!e->lab)
		return -1;
	e->metrics_port = test_free_port();
	snprintf(args, sizeof(args), "--metrics-port %d %s", e->metrics_port, mds_args ? mds_args : "");
	e->mds = tmds_up(e->lab, NULL, args, why, sizeof(why));
	if (!e->mds) {
		fprintf(stderr, "%s\n", why);
		return -1;
	}
	n = (size_t)snprintf(e->opts, sizeof(e->opts), "--initiator %s", INITIATOR);
	for (int i = 0; i < e->lab->nluns; i++)
		n += (size_t)snprintf(e->opts + n, sizeof(e->opts) - n, " --device '%s'", e->lab->urls[i]);
	e->data = malloc(FILE_BYTES);
	if (!e->data)
		return -1;
	test_fill_random(e->data, FILE_BYTES, 2501);
	snprintf(e->src, sizeof(e->src), "%s/src.bin", test_tmpdir("ident"));
	fd = open(e->src, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, e->data, FILE_BYTES) != (ssize_t)FILE_BYTES) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	/* written through layouts and acknowledged (exit 0 after fsync) */
	return test_run(NULL, "'%s' cp -q %s '%s' pnfs://127.0.0.1:%d/f.bin", test_bin("pnfs"), e->opts, e->src,
			e->mds->port) == 0
		       ? 0
		       : -1;
}

static void env_down(struct env *e)
{
	tmds_down(e->mds);
	lab_down(e->lab);
	free(e->data);
}

/* `pnfs [--mds-io] cat` of the file: exit status; *bytes how many it wrote to standard output, *same
 * whether they equal the file's start. */
static int cat_file(struct env *e, int mds_io, size_t *bytes, int *same, char **err)
{
	char out[400], errf[400];
	uint8_t *buf = malloc(FILE_BYTES + 1);
	ssize_t n = 0;
	int rc, fd;

	snprintf(out, sizeof(out), "%s/cat.out", test_tmpdir("ident-cat"));
	snprintf(errf, sizeof(errf), "%s.err", out);
	rc = test_run(NULL, "timeout 120 '%s' %s %s cat pnfs://127.0.0.1:%d/f.bin >'%s' 2>'%s'", test_bin("pnfs"),
		      mds_io ? "--mds-io" : "", e->opts, e->mds->port, out, errf);
	fd = open(out, O_RDONLY);
	if (buf && fd >= 0)
		n = read(fd, buf, FILE_BYTES + 1);
	if (fd >= 0)
		close(fd);
	*bytes = n > 0 ? (size_t)n : 0;
	*same = buf && n > 0 && memcmp(buf, e->data, (size_t)n) == 0;
	free(buf);
	if (err && test_run(err, "cat '%s'", errf) != 0) {
		free(*err);
		*err = NULL;
	}
	return rc;
}

static long long lun_in_service(struct env *e, int lun)
{
	char sample[80];

	snprintf(sample, sizeof(sample), "pnfs_mds_lun_in_service{lun=\"%d\"}", lun);
	return lt_metric(e->metrics_port, sample);
}

/* Wait (up to 20 s) until the MDS's metric sample is want. */
static int wait_metric(struct env *e, const char *sample, long long want)
{
	TW_WAIT_UNTIL(lt_metric(e->metrics_port, sample) == want, 20 * 1000, 100);
	return lt_metric(e->metrics_port, sample) == want ? 0 : -1;
}

/* Wait until LUN lun's service state in the MDS's metrics is want. */
static int wait_in_service(struct env *e, int lun, long long want)
{
	char sample[80];

	snprintf(sample, sizeof(sample), "pnfs_mds_lun_in_service{lun=\"%d\"}", lun);
	return wait_metric(e, sample, want);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Reads of a file whose LUNs are out of service fail, through layouts and through the MDS, with
 * nothing written out and the reason on standard error. */
static void assert_reads_refused(struct env *e)
{
	size_t bytes;
	int same;
	char *err = NULL;

	for (int mds_io = 0; mds_io < 2; mds_io++) {
		CU_ASSERT_NOT_EQUAL(cat_file(e, mds_io, &bytes, &same, &err), 0);
		CU_ASSERT_EQUAL(bytes, 0);
		CU_ASSERT_PTR_NOT_NULL(err);
		if (err) {
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "NFS4ERR_IO"));
			if (!strstr(err, "NFS4ERR_IO"))
				fprintf(stderr, "\n  pnfs%s cat said: %s\n", mds_io ? " --mds-io" : "", err);
		}
		free(err);
		err = NULL;
	}
}

/* The reproduction: tgtd dies mid-life, the lab comes back on new, blank LUN files. */
static void test_blank_luns_after_restart(void)
{
	struct env e;
	char *log = NULL, *out = NULL;
	size_t bytes;
	int same;

	CU_ASSERT_EQUAL_FATAL(env_up(&e, NULL), 0);
	CU_ASSERT_EQUAL(lun_in_service(&e, 0), 1);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(e.lab), 0);
	/* while the target is away, its LUNs are unchecked: no layout is handed out, the read waits for
	 * them through the MDS and gives up after its I/O timeout */
	CU_ASSERT_EQUAL(wait_metric(&e, "pnfs_mds_lun_checked{lun=\"0\"}", 0), 0);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "timeout 60 '%s' --io-timeout 2 %s cat pnfs://127.0.0.1:%d/f.bin >/dev/null 2>&1",
				     test_bin("pnfs"), e.opts, e.mds->port),
			    0);
	CU_ASSERT_TRUE(lt_metric(e.metrics_port, "pnfs_mds_layout_lun_unchecked_total") >= 1);
	CU_ASSERT_EQUAL_FATAL(lab_restart_with(e.lab, "--fresh"), 0);
	/* the server notices by itself, with no I/O asked of it */
	CU_ASSERT_EQUAL(wait_in_service(&e, 0, 0), 0);
	CU_ASSERT_EQUAL(wait_in_service(&e, 1, 0), 0);
	assert_reads_refused(&e);
	CU_ASSERT_TRUE(lt_metric(e.metrics_port, "pnfs_mds_layout_lun_out_total") >= 1);

	/* said once per LUN, loudly, naming it and what differs */
	log = tmds_log(e.mds);
	CU_ASSERT_PTR_NOT_NULL_FATAL(log);
	for (int i = 0; i < 2; i++) {
		char line[600];
		snprintf(line, sizeof(line), "error: %s: the LUN came back different after a reconnect: pool label at byte 0: "
			 "no pool label (the bytes are all zero: a blank LUN)", e.lab->urls[i]);
		CU_ASSERT_EQUAL(count(log, line), 1);
	}
	free(log);

	/* the server still serves what does not need the LUNs */
	CU_ASSERT_EQUAL(test_run(&out, "'%s' ls pnfs://127.0.0.1:%d/", test_bin("pnfs"), e.mds->port), 0);
	CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "f.bin") : NULL);
	free(out);
	out = NULL;
	/* and pnfs-admin, reading the LUNs itself, names what it finds there */
	CU_ASSERT_EQUAL(test_run(&out, "'%s' status --pool '%s'", test_bin("pnfs-admin"), e.mds->pool), 1);
	CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "no-label") : NULL);
	free(out);
	CU_ASSERT_EQUAL(cat_file(&e, 1, &bytes, &same, NULL) != 0, 1);
	env_down(&e);
}

static int swap_files(const char *a, const char *b)
{
	return test_run(NULL, "mv '%s' '%s.swap' && mv '%s' '%s' && mv '%s.swap' '%s'", a, a, b, a, a, b);
}

/* Two LUN files of the pool exchanged while tgtd was down: each LUN now carries the other's label.
 * Refused, named as swapped; exchanged back, the server serves the file again by itself, every byte
 * as written. */
static void test_swapped_luns_then_back(void)
{
	struct env e;
	char *log;
	size_t bytes;
	int same;

	CU_ASSERT_EQUAL_FATAL(env_up(&e, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(e.lab), 0);
	CU_ASSERT_EQUAL_FATAL(swap_files(e.lab->files[0], e.lab->files[1]), 0);
	CU_ASSERT_EQUAL_FATAL(lab_restart(e.lab), 0);
	CU_ASSERT_EQUAL(wait_in_service(&e, 0, 0), 0);
	CU_ASSERT_EQUAL(wait_in_service(&e, 1, 0), 0);
	assert_reads_refused(&e);
	log = tmds_log(e.mds);
	CU_ASSERT_PTR_NOT_NULL(log ? strstr(log, "the label of this pool's LUN 1 of 2, not of LUN 0 (LUNs swapped?)") : NULL);
	free(log);

	CU_ASSERT_EQUAL_FATAL(lab_kill_target(e.lab), 0);
	CU_ASSERT_EQUAL_FATAL(swap_files(e.lab->files[0], e.lab->files[1]), 0);
	CU_ASSERT_EQUAL_FATAL(lab_restart(e.lab), 0);
	CU_ASSERT_EQUAL(wait_in_service(&e, 0, 1), 0);
	CU_ASSERT_EQUAL(wait_in_service(&e, 1, 1), 0);
	for (int mds_io = 0; mds_io < 2; mds_io++) {
		CU_ASSERT_EQUAL(cat_file(&e, mds_io, &bytes, &same, NULL), 0);
		CU_ASSERT_EQUAL(bytes, FILE_BYTES);
		CU_ASSERT_TRUE(same);
	}
	log = tmds_log(e.mds);
	CU_ASSERT_PTR_NOT_NULL(log ? strstr(log, "back in service") : NULL);
	free(log);
	env_down(&e);
}

/* A libpnfs client of the MDS, direct I/O on the lab's LUNs, with the file open and its first MiB
 * read (a layout and its device in hand). */
static struct pnfs_context *client_open(struct env *e, struct pnfs_fh **fh, uint8_t *buf)
{
	struct pnfs_opts o;
	struct pnfs_context *ctx;
	static const char *urls[2];

	urls[0] = e->lab->urls[0];
	urls[1] = e->lab->urls[1];
	pnfs_opts_init(&o);
	o.devices = urls;
	o.ndevices = 2;
	o.initiator_name = INITIATOR;
	o.timeout_ms = 5000;
	ctx = ct_mount(&o, e->mds->port, "/");
	CU_ASSERT_EQUAL_FATAL(pnfs_open(ctx, "/f.bin", O_RDONLY, 0, fh), 0);
	CU_ASSERT_EQUAL(pnfs_pread(ctx, *fh, buf, 1 << 20, 0), 1 << 20);
	CU_ASSERT_EQUAL(memcmp(buf, e->data, 1 << 20), 0);
	CU_ASSERT_STRING_EQUAL(pnfs_fh_mds_reason(*fh), "");
	return ctx;
}

/* The client's next read after the change is not served from the LUN: its own check refuses it
 * (reason holds `what`), the file goes to the MDS path, which refuses too, and the read fails. */
static void client_read_refused(struct pnfs_context *ctx, struct pnfs_fh *fh, uint8_t *buf, const char *what)
{
	memset(buf, 0xa5, 1 << 20);
	CU_ASSERT_TRUE(pnfs_pread(ctx, fh, buf, 1 << 20, 0) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_fh_mds_reason(fh), "came back different"));
	CU_ASSERT_PTR_NOT_NULL(strstr(pnfs_fh_mds_reason(fh), what));
	if (!strstr(pnfs_fh_mds_reason(fh), what))
		fprintf(stderr, "\n  the file's MDS reason: %s\n", pnfs_fh_mds_reason(fh));
	for (size_t i = 0; i < (1 << 20); i++)
		if (buf[i] != 0xa5) {
			CU_FAIL("a refused read wrote into the buffer");
			break;
		}
}

static void client_close(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	pnfs_close(ctx, fh);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* Block-volume layouts: LUN 0 loses its label (and with it the signature the client found it by)
 * behind the client's session, which the target drops. */
static void test_client_block_signature(void)
{
	struct env e;
	struct pnfs_fh *fh = NULL;
	struct pnfs_context *ctx;
	uint8_t *buf = malloc(1 << 20), zeros[512] = { 0 };
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL_FATAL(env_up(&e, "--scsi-layouts no"), 0);
	ctx = client_open(&e, &fh, buf);
	fd = open(e.lab->files[0], O_WRONLY);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, zeros, sizeof(zeros), 0), (ssize_t)sizeof(zeros));
	CU_ASSERT_EQUAL(fsync(fd), 0);
	close(fd);
	CU_ASSERT_TRUE_FATAL(bmt_lab_drop_sessions(e.lab) >= 1);
	client_read_refused(ctx, fh, buf, "signature at byte 0");
	client_close(ctx, fh);
	free(buf);
	env_down(&e);
}

/* SCSI layouts (forced on: tgt refuses APTPL, so by default the server would hand out block
 * volumes): another LUN is mapped at LUN 0's target and number (its SCSI ID, and so its designators,
 * differ) while the client holds a layout on it. */
static void test_client_scsi_designator(void)
{
	struct env e;
	struct pnfs_fh *fh = NULL;
	struct pnfs_context *ctx;
	uint8_t *buf = malloc(1 << 20);
	char ctl[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL_FATAL(env_up(&e, "--scsi-layouts yes"), 0);
	ctx = client_open(&e, &fh, buf);
	CU_ASSERT_EQUAL_FATAL(bmt_lab_value(e.lab, "LAB_CTL", ctl, sizeof(ctl)), 0);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "tgtadm -C %s --lld iscsi --mode logicalunit --op update --tid 1 --lun 1 "
					     "--params scsi_id=ANOTHERLUN01",
				       ctl),
			      0);
	CU_ASSERT_TRUE_FATAL(bmt_lab_drop_sessions(e.lab) >= 1);
	client_read_refused(ctx, fh, buf, "is gone");
	client_close(ctx, fh);
	free(buf);
	env_down(&e);
}

TEST_SUITE(mds_lun_identity, "integration/mds_lun_identity", NULL, NULL,
	   { "blank_luns_after_restart", test_blank_luns_after_restart },
	   { "swapped_luns_then_back", test_swapped_luns_then_back },
	   { "client_block_signature", test_client_block_signature },
	   { "client_scsi_designator", test_client_scsi_designator });
