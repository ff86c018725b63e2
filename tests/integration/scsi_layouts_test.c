/* Whether pnfs-mds offers SCSI layouts, on tgt LUNs. Stock Linux SCSI-layout clients register their
 * key with APTPL set and tgt refuses that, so with its default (scsi-layouts auto) the server
 * probes every LUN at start and, finding tgt's refusal, offers block-volume layouts only: says so
 * once in its log, leaves SCSI out of fs_layout_type, answers LAYOUTGET and GETDEVICELIST of
 * LAYOUT4_SCSI with NFS4ERR_UNKNOWN_LAYOUTTYPE (RFC 8881 §18.43.3) and holds no reservation on the
 * LUNs, the probe leaving their persistent-reservation state as it was. scsi-layouts yes offers SCSI
 * layouts all the same (with a warning), and a client that got one and then writes through the MDS
 * is logged once; scsi-layouts no probes nothing. pnfs-admin status shows what the LUNs' REPORT
 * CAPABILITIES says of APTPL. (A target that accepts APTPL, LIO, is the kernel/lio and kernel/scsi
 * suites' SAN: there the default offers SCSI layouts.) */
#include "blkmap/blkmap.h"
#include "client/pnfs.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"
#include "tests/mds/layout_util.h"
#include "tests/mds/mdsd.h"
#include "tests/mds/nfsclient.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLK LAYOUT4_BLOCK_VOLUME
#define SCSI LAYOUT4_SCSI
#define MDS_KEY 0x504e465300000000ull /* the pool's MDS key (mds/pool.h) */

static struct test_lab *lab;
static struct test_mds *mds;
static int mport;
static const size_t log_seen = 0; /* each server has a log of its own */

static int suite_init(void)
{
	lab = lab_up(2, "16M", NULL);
	return !lab;
}

static int suite_clean(void)
{
	tmds_free(mds);
	lab_down(lab);
	return 0;
}

/* A server with these options on a pool formatted afresh on the lab's LUNs (a first start: no grace
 * period to wait out). */
static void start_with(const char *opts)
{
	char args[256];

	if (mds && mds->pid > 0)
		CU_ASSERT_EQUAL(tmds_stop(mds, SIGTERM), 0);
	tmds_free(mds);
	mport = test_free_port();
	snprintf(args, sizeof(args), "--metrics-port %d %s", mport, opts);
	mds = tmds_new(lab, "--force", args);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mds);
	CU_ASSERT_EQUAL_FATAL(tmds_start(mds), 0);
}

/* How many lines of this start's log hold s. */
static int log_count(const char *s)
{
	char *log = tmds_log(mds);
	int n = 0;

	if (log && strlen(log) >= log_seen)
		for (const char *p = log + log_seen; (p = strstr(p, s)); p += strlen(s))
			n++;
	free(log);
	return n;
}

/* fs_layout_type of the root, as libpnfs reads it. */
static unsigned layout_types(uint32_t types[8])
{
	struct pnfs_context *ctx;
	struct pnfs_opts o;
	struct pnfs_statfs sf;
	unsigned n = 0;

	pnfs_opts_init(&o);
	o.mds_io = 1;
	ctx = ct_mount(&o, mds->port, "/");
	if (pnfs_statfs(ctx, "/", &sf) == 0) {
		n = sf.nlayout_types;
		memcpy(types, sf.layout_types, sizeof(sf.layout_types));
	} else {
		CU_FAIL("pnfs_statfs failed");
	}
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
	return n;
}

static struct nc *client(const char *owner)
{
	struct nc *c = nc_connect(mds->port);

	if (c && nc_setup(c, owner) != 0) {
		nc_free(c);
		c = NULL;
	}
	return c;
}

static void create(struct nc *c, const char *name, struct nc_fh *fh, stateid4 *sid)
{
	struct nc_fh root;

	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL_FATAL(nc_open(c, &root, name, 1, OPEN4_SHARE_ACCESS_BOTH, 0, fh, sid), 0);
}

/* What the LUNs carry, seen from another initiator: no reservation, APTPL not active, no key but the
 * MDS's. */
static void luns_untouched(void)
{
	struct blkmap_ctx_opts bo;
	struct blkmap_ctx *ctx;

	blkmap_ctx_opts_init(&bo);
	bo.initiator_name = "iqn.2024-01.test.pnfs:scsi-layouts";
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&bo, &ctx), 0);
	for (int i = 0; i < lab->nluns; i++) {
		struct blkmap_dev *dev = NULL;
		struct blkmap_pr_reservation r;
		struct blkmap_pr_keys k;
		struct blkmap_pr_caps caps;
		CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[i], 0, &dev), 0);
		CU_ASSERT_EQUAL(blkmap_pr_read_reservation(dev, &r), 0);
		CU_ASSERT_EQUAL(r.reserved, 0);
		CU_ASSERT_EQUAL(blkmap_pr_report_caps(dev, &caps), 0);
		CU_ASSERT_EQUAL(caps.ptpl_c, 0); /* tgt says so too */
		CU_ASSERT_EQUAL(caps.ptpl_a, 0);
		CU_ASSERT_EQUAL(blkmap_pr_read_keys(dev, &k), 0);
		for (unsigned j = 0; j < k.nkeys; j++)
			CU_ASSERT_EQUAL(k.keys[j], MDS_KEY);
		blkmap_dev_close(dev);
	}
	blkmap_ctx_destroy(ctx);
}

/* The default on tgt: block-volume layouts only, said once and why. */
static void test_auto_on_tgt(void)
{
	struct nc *c;
	struct nc_fh fh, root;
	stateid4 open;
	struct lt_layout *l = calloc(1, sizeof(*l));
	unsigned char zero[NFS4_VERIFIER_SIZE] = { 0 };
	struct lt_devlist dl;
	uint32_t types[8];
	char want[600];
	unsigned n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	start_with("");
	snprintf(want, sizeof(want),
		 "SCSI layouts off: LUN 0 (%s) refuses persistent reservations with APTPL (tgt does: CHECK "
		 "CONDITION ILLEGAL_REQUEST",
		 lab->urls[0]);
	CU_ASSERT_EQUAL(log_count(want), 1);
	CU_ASSERT_EQUAL(log_count("stock Linux clients could not register their keys; serving block-volume layouts"), 1);
	CU_ASSERT_EQUAL(log_count("SCSI layouts off"), 1);
	if (log_count(want) != 1) {
		char *log = tmds_log(mds);
		fprintf(stderr, "\n  wanted '%s' once in:\n%s\n", want, log ? log + log_seen : "");
		free(log);
	}
	/* fs_layout_type: block volumes only */
	n = layout_types(types);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(types[0], BLK);
	/* SCSI is an unknown layout type here; block volumes work */
	c = client("scsi-auto");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	create(c, "auto", &fh, &open);
	CU_ASSERT_EQUAL(lt_layoutget(c, &fh, &(struct lt_get){ .type = SCSI, .iomode = LAYOUTIOMODE4_RW, .len = 4096,
			.minlen = 4096, .sid = &open, .maxcount = 0xffff }, l),
			NFS4ERR_UNKNOWN_LAYOUTTYPE);
	CU_ASSERT_EQUAL(lt_layoutget(c, &fh, &(struct lt_get){ .type = BLK, .iomode = LAYOUTIOMODE4_RW, .len = 4096,
			.minlen = 4096, .sid = &open, .maxcount = 0xffff }, l), 0);
	CU_ASSERT_EQUAL(l->type, BLK);
	CU_ASSERT_EQUAL_FATAL(nc_rootfh(c, &root), 0);
	CU_ASSERT_EQUAL(lt_getdevicelist(c, &root, SCSI, 0, zero, &dl), NFS4ERR_UNKNOWN_LAYOUTTYPE);
	CU_ASSERT_EQUAL(lt_getdevicelist(c, &root, BLK, 0, zero, &dl), 0);
	CU_ASSERT_EQUAL(dl.n, 1);
	CU_ASSERT_EQUAL(lt_getdeviceinfo(c, dl.ids[0], SCSI, 4096, 0, NULL, NULL, NULL), NFS4ERR_UNKNOWN_LAYOUTTYPE);
	CU_ASSERT_EQUAL(lt_getdeviceinfo(c, dl.ids[0], BLK, 4096, 0, NULL, NULL, NULL), 0);
	/* MDS-path I/O of a client without SCSI layouts is nothing to mention */
	CU_ASSERT_EQUAL(nc_write(c, &fh, &open, 0, "abcd", 4, FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(log_count("through the MDS: it probably could not register its key"), 0);
	nc_close(c, &fh, &open);
	nc_free(c);
	/* the metrics say it too */
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_scsi_layouts_offered"), 0);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_scsi_fencing"), 0);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_lun_aptpl{lun=\"0\"}"), 0);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_lun_aptpl{lun=\"1\"}"), 0);
	/* tgt refused before changing anything: no reservation, no APTPL, no key but the MDS's */
	luns_untouched();
	/* pnfs-admin status tells the same from REPORT CAPABILITIES */
	{
		char *out = NULL;
		CU_ASSERT_EQUAL(test_run(&out, "'%s' status --pool '%s'", test_bin("pnfs-admin"), mds->pool), 0);
		CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "aptpl   not persist-through-power-loss capable: LUN 0, 1 "));
		free(out);
		out = NULL;
		CU_ASSERT_EQUAL(test_run(&out, "'%s' status --json --pool '%s'", test_bin("pnfs-admin"), mds->pool), 0);
		CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"aptpl_capable\":false"));
		CU_ASSERT_PTR_NULL(out ? strstr(out, "\"aptpl_capable\":true") : "");
		free(out);
	}
	free(l);
}

/* scsi-layouts yes: offered all the same, with a warning; a client that got a SCSI layout and then
 * reads and writes through the MDS is named, once. */
static void test_forced_on_tgt(void)
{
	struct nc *c;
	struct nc_fh fh;
	stateid4 open;
	struct lt_layout *l = calloc(1, sizeof(*l));
	uint32_t types[8];
	char want[600], buf[8];
	size_t got = 0;
	unsigned n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	start_with("--scsi-layouts yes");
	snprintf(want, sizeof(want), "SCSI layouts on (scsi-layouts yes), but LUN 0 (%s) refuses persistent reservations with APTPL",
		 lab->urls[0]);
	CU_ASSERT_EQUAL(log_count(want), 1);
	CU_ASSERT_EQUAL(log_count("SCSI layouts off"), 0);
	n = layout_types(types);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(types[0], BLK);
	CU_ASSERT_EQUAL(types[1], SCSI);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_scsi_layouts_offered"), 1);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_lun_aptpl{lun=\"0\"}"), 0);
	c = client("scsi-forced");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	create(c, "forced", &fh, &open);
	/* writes through the MDS before any SCSI layout: nothing said */
	CU_ASSERT_EQUAL(nc_write(c, &fh, &open, 0, "abcd", 4, FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(lt_layoutget(c, &fh, &(struct lt_get){ .type = SCSI, .iomode = LAYOUTIOMODE4_RW, .off = 8192,
			.len = 4096, .minlen = 4096, .sid = &open, .maxcount = 0xffff }, l), 0);
	CU_ASSERT_EQUAL(l->type, SCSI);
	CU_ASSERT_EQUAL(log_count("through the MDS: it probably could not register its key"), 0);
	/* then through the MDS, as a kernel client that failed to register does: one line */
	CU_ASSERT_EQUAL(nc_write(c, &fh, &open, 4, "efgh", 4, FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(nc_write(c, &fh, &open, 8, "ijkl", 4, FILE_SYNC4), 0);
	CU_ASSERT_EQUAL(nc_read(c, &fh, &open, 0, buf, sizeof(buf), &got), 0);
	snprintf(want, sizeof(want), "client %016llx (", (unsigned long long)c->clientid);
	CU_ASSERT_EQUAL(log_count("got a SCSI layout but writes through the MDS: it probably could not register its key"), 1);
	CU_ASSERT_EQUAL(log_count("got a SCSI layout but reads through the MDS"), 0);
	{
		char *log = tmds_log(mds);
		const char *line = log ? strstr(log + log_seen, "got a SCSI layout but writes") : NULL;
		const char *start = line;
		while (start && start > log + log_seen && start[-1] != '\n')
			start--;
		CU_ASSERT(line && start && strstr(start, want) && strstr(start, want) < line);
		free(log);
	}
	nc_close(c, &fh, &open);
	nc_free(c);
	free(l);
}

/* scsi-layouts no: block volumes, no probe. */
static void test_off(void)
{
	uint32_t types[8];
	unsigned n;

	start_with("--scsi-layouts no");
	CU_ASSERT_EQUAL(log_count("APTPL"), 0);
	CU_ASSERT_EQUAL(log_count("SCSI layouts"), 0);
	n = layout_types(types);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(types[0], BLK);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_scsi_layouts_offered"), 0);
	CU_ASSERT_EQUAL(lt_metric(mport, "pnfs_mds_lun_aptpl{lun=\"0\"}"), -1);
	CU_ASSERT_EQUAL(tmds_stop(mds, SIGTERM), 0);
	luns_untouched();
}

TEST_SUITE(scsi_layouts, "integration/scsi_layouts", suite_init, suite_clean,
	   { "auto_on_tgt", test_auto_on_tgt },
	   { "forced_on_tgt", test_forced_on_tgt },
	   { "off", test_off });
