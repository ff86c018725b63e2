/* pnfs-admin and pool opening on a real tgtd SAN: format 4 iSCSI LUNs and see them in status; a
 * labelled LUN is refused without --force; a pool one of whose LUNs is gone (its target down)
 * fails to open with a message naming that LUN, and status says which one; format and open reach
 * the LUNs all at once. */
#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "tests/client/helpers.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int admin(char **out, const char *fmt, const char *a, const char *b)
{
	char args[8192];

	snprintf(args, sizeof(args), fmt, a, b);
	return test_run(out, "%s %s 2>&1", test_bin("pnfs-admin"), args);
}

static void join_urls(const struct test_lab *lab, int from, int n, char *out, size_t len)
{
	out[0] = '\0';
	for (int i = from; i < from + n; i++) {
		strncat(out, lab->urls[i], len - strlen(out) - 2);
		strncat(out, " ", len - strlen(out) - 1);
	}
}

static void test_format_four_luns_status(void)
{
	struct test_lab *lab = lab_up(4, "64M", NULL);
	const char *dir = test_tmpdir("admin-lab");
	char urls[4096], pool[512], *out = NULL;
	uint8_t label[4096];
	struct mds_pool_label l;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	join_urls(lab, 0, 4, urls, sizeof(urls));
	CU_ASSERT_EQUAL(admin(&out, "format --pool %s %s", pool, urls), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "on 4 LUNs"));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, "status --pool %s%s", pool, ""), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "stripe of 4 LUNs, unit 1.0 MiB"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "252.0 MiB (264241152 bytes)"));
	for (int i = 0; i < 4; i++) {
		char line[600];
		snprintf(line, sizeof(line), "%-4d %-12s %-11s %-11s %s", i, "ok", "64.0 MiB", "63.0 MiB",
			 lab->urls[i]);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "files   1"));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, "status --pool %s --json%s", pool, ""), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"luns\":4"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"luns_ok\":true"));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, "check --pool %s%s", pool, ""), 0);
	free(out);
	/* The label is really on the LUN: LUN 3's backing file starts with it. */
	f = fopen(lab->files[3], "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fread(label, 1, sizeof(label), f), sizeof(label));
	fclose(f);
	CU_ASSERT_EQUAL(mds_label_decode(label, sizeof(label), &l, NULL, 0), 0);
	CU_ASSERT_EQUAL(l.lun_index, 3);
	CU_ASSERT_EQUAL(l.lun_count, 4);
	lab_down(lab);
}

static void test_labelled_lun_refused(void)
{
	struct test_lab *lab = lab_up(2, "16M", NULL);
	const char *dir = test_tmpdir("admin-lab-refuse");
	char a[512], b[512], urls[4096], *out = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	join_urls(lab, 0, 2, urls, sizeof(urls));
	CU_ASSERT_EQUAL(admin(&out, "format --pool %s --stripe-unit 64K %s", a, urls), 0);
	free(out);
	CU_ASSERT_EQUAL(admin(&out, "format --pool %s %s", b, lab->urls[1]), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, lab->urls[1]));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "already carries a pool label"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "LUN 1 of 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--force"));
	free(out);
	/* Pool a is untouched. */
	CU_ASSERT_EQUAL(admin(&out, "status --pool %s%s", a, ""), 0);
	free(out);
	/* With --force it is taken, and pool a now sees a LUN of another pool. */
	CU_ASSERT_EQUAL(admin(&out, "format --pool %s --force %s", b, lab->urls[1]), 0);
	free(out);
	CU_ASSERT_EQUAL(admin(&out, "status --pool %s%s", a, ""), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "mismatch"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "labelled for pool"));
	free(out);
	lab_down(lab);
}

static void test_lun_gone_named(void)
{
	struct test_lab *lab_a = lab_up(3, "16M", NULL);
	struct test_lab *lab_b = lab_up(1, "16M", NULL);
	const char *dir = test_tmpdir("admin-lab-gone");
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct mds_pool *p = NULL;
	const char *urls[4];
	char pool[512], err[1024], want[600], lun3[256], *out = NULL;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab_a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lab_b);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	for (int i = 0; i < 3; i++)
		urls[i] = lab_a->urls[i];
	snprintf(lun3, sizeof(lun3), "%s", lab_b->urls[0]); /* lab_down frees lab_b */
	urls[3] = lun3;
	blkmap_ctx_opts_init(&o);
	o.timeout_ms = 5000;
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&o, &ctx), 0);
	rc = mds_pool_format(ctx, pool, urls, 4, &(struct mds_pool_format_opts){ .stripe_unit_bytes = 65536 },
			     NULL, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, pool, NULL, &p, err, sizeof(err)), 0);
	mds_pool_close(p);
	p = NULL;

	/* The storage host of LUN 3 dies. */
	lab_down(lab_b);
	rc = mds_pool_open(ctx, pool, NULL, &p, err, sizeof(err));
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NULL(p);
	snprintf(want, sizeof(want), "LUN 3 (%s): unreachable", urls[3]);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	if (!strstr(err, want))
		fprintf(stderr, "open error: %s\n", err);
	CU_ASSERT_EQUAL(admin(&out, "status --pool %s%s", pool, ""), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "unreachable"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, urls[3]));
	free(out);
	CU_ASSERT_EQUAL(admin(&out, "check --pool %s%s", pool, ""), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	free(out);
	blkmap_ctx_destroy(ctx);
	lab_down(lab_a);
}

/* Format and open log in to every LUN at once: behind a relay that answers nobody until four
 * connections are in, one LUN after another would wait out the login deadline on the first. */
static void test_luns_opened_at_once(void)
{
	struct test_lab *lab = lab_up(4, "64M", NULL);
	const char *dir = test_tmpdir("admin-at-once");
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct mds_pool *p = NULL;
	struct ct_proxy *px;
	char pool[512], err[1024], urlbuf[4][300];
	const char *urls[4];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	px = ct_proxy_start(lab->port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(px);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	for (int i = 0; i < 4; i++) {
		snprintf(urlbuf[i], sizeof(urlbuf[i]), "iscsi://127.0.0.1:%d/%s/%d", ct_proxy_port(px), lab->iqn, i + 1);
		urls[i] = urlbuf[i];
	}
	blkmap_ctx_opts_init(&o);
	o.timeout_ms = 3000;
	CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(&o, &ctx), 0);
	ct_proxy_hold(px, 4);
	CU_ASSERT_EQUAL(mds_pool_format(ctx, pool, urls, 4, &(struct mds_pool_format_opts){ .stripe_unit_bytes = 65536 },
					NULL, err, sizeof(err)), 0);
	/* the same for opening the pool: four more connections before any answer */
	ct_proxy_hold(px, ct_proxy_accepted(px) + 4);
	CU_ASSERT_EQUAL(mds_pool_open(ctx, pool, NULL, &p, err, sizeof(err)), 0);
	if (!p)
		fprintf(stderr, "open error: %s\n", err);
	mds_pool_close(p);
	blkmap_ctx_destroy(ctx);
	ct_proxy_stop(px);
	lab_down(lab);
}

TEST_SUITE(admin_lab, "integration/admin_lab", NULL, NULL,
	   { "format_four_luns_status", test_format_four_luns_status },
	   { "labelled_lun_refused", test_labelled_lun_refused },
	   { "lun_gone_named", test_lun_gone_named },
	   { "luns_opened_at_once", test_luns_opened_at_once });
