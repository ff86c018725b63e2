/* pnfs-mds configuration: keys from text and flags, line-numbered errors that name the bad key or
 * value, and export rules matching client addresses with the right access and squashing. */
#include "tests/harness.h"

#include "mds/config.h"
#include "mds/export.h"
#include "proto/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static void test_defaults_and_keys(void)
{
	struct mds_config c;
	char err[512] = "";
	const char *text =
		"# a lab server\n"
		"pool = /srv/pool   # trailing comment\n"
		"listen = ::1\n"
		"port=20490\n"
		"\n"
		"foreground\n"
		"log-level = debug\n"
		"lease-time = 15\n"
		"grace-time = 20\n"
		"max-record = 4M\n"
		"slots = 16\n"
		"login-timeout = 5\n"
		"export = \"10.0.0.0/8 ro\"\n"
		"export = * rw,all_squash,anonuid=99,anongid=98\n";

	mds_config_defaults(&c);
	CU_ASSERT_EQUAL(c.port, 2049);
	CU_ASSERT_EQUAL(c.lease_time_s, 90);
	CU_ASSERT_EQUAL(c.login_timeout_s, 30);
	CU_ASSERT_EQUAL(c.exports.n, 2);
	CU_ASSERT_EQUAL(mds_config_check(&c, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "pool") != NULL);
	CU_ASSERT_EQUAL_FATAL(mds_config_parse(&c, text, "t.conf", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.pool, "/srv/pool");
	CU_ASSERT_STRING_EQUAL(c.listen, "::1");
	CU_ASSERT_EQUAL(c.port, 20490);
	CU_ASSERT_EQUAL(c.foreground, 1);
	CU_ASSERT_EQUAL(c.log_level, PROTO_LOG_DEBUG);
	CU_ASSERT_EQUAL(c.lease_time_s, 15);
	CU_ASSERT_EQUAL(c.grace_time_s, 20);
	CU_ASSERT_EQUAL(c.max_record_bytes, 4u << 20);
	CU_ASSERT_EQUAL(c.max_slots, 16);
	CU_ASSERT_EQUAL(c.login_timeout_s, 5);
	/* The file's export rules replace the defaults. */
	CU_ASSERT_EQUAL_FATAL(c.exports.n, 2);
	CU_ASSERT_EQUAL(c.exports.rules[0].rw, 0);
	CU_ASSERT_EQUAL(c.exports.rules[1].squash, MDS_SQUASH_ALL);
	CU_ASSERT_EQUAL(c.exports.rules[1].anon_uid, 99);
	CU_ASSERT_EQUAL(c.exports.rules[1].anon_gid, 98);
	CU_ASSERT_EQUAL(mds_config_check(&c, err, sizeof(err)), 0);
	/* A flag after the file overrides it through the same setter. */
	CU_ASSERT_EQUAL(mds_config_set(&c, "port", "111", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.port, 111);
	/* 0 turns the login timeout off. */
	CU_ASSERT_EQUAL(mds_config_set(&c, "login-timeout", "0", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.login_timeout_s, 0);
	/* The initiator name the LUNs see: a default that target ACLs can list, and a chosen one. */
	mds_config_defaults(&c);
	CU_ASSERT_STRING_EQUAL(c.initiator, "iqn.2024-01.org.pnfs-san:mds");
	CU_ASSERT_EQUAL(mds_config_set(&c, "initiator", "iqn.2026-12.example:mds1", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.initiator, "iqn.2026-12.example:mds1");
	CU_ASSERT_EQUAL(mds_config_set(&c, "initiator", "Not An IQN", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "iSCSI name"));
	CU_ASSERT_STRING_EQUAL(c.initiator, "iqn.2026-12.example:mds1");
	/* SCSI layouts: auto unless told; yes forces them on, no off */
	mds_config_defaults(&c);
	CU_ASSERT_EQUAL(c.scsi_layouts, MDS_SCSI_AUTO);
	CU_ASSERT_EQUAL(mds_config_set(&c, "scsi-layouts", "yes", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.scsi_layouts, MDS_SCSI_YES);
	CU_ASSERT_EQUAL(mds_config_set(&c, "scsi-layouts", "no", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.scsi_layouts, MDS_SCSI_NO);
	CU_ASSERT_EQUAL(mds_config_set(&c, "scsi-layouts", "auto", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.scsi_layouts, MDS_SCSI_AUTO);
}

static void expect_error(const char *text, const char *want1, const char *want2)
{
	struct mds_config c;
	char err[512] = "";

	mds_config_defaults(&c);
	CU_ASSERT_EQUAL(mds_config_parse(&c, text, "bad.conf", err, sizeof(err)), -EINVAL);
	if (!strstr(err, want1) || (want2 && !strstr(err, want2))) {
		fprintf(stderr, "\n  config error '%s' lacks '%s' / '%s'\n", err, want1, want2 ? want2 : "");
		CU_FAIL("error text does not name the problem");
	}
}

static void test_errors_name_line_key_value(void)
{
	expect_error("pool = /p\nprot = 1\n", "bad.conf:2:", "'prot'");
	expect_error("\n\nport = 70000\n", "bad.conf:3:", "'70000'");
	expect_error("port = 12ab\n", "bad.conf:1:", "'port'");
	expect_error("lease-time = 0\n", "bad.conf:1:", "lease-time");
	expect_error("log-level = loud\n", "'loud'", "log-level");
	expect_error("listen = 300.1.1.1\n", "'300.1.1.1'", "listen");
	expect_error("just words\n", "bad.conf:1:", "key = value");
	expect_error("= 5\n", "bad.conf:1:", "missing key");
	expect_error("export = 10.0.0.0/33 rw\n", "prefix", "33");
	expect_error("export = * rw,fast\n", "bad.conf:1:", "'fast'");
	expect_error("export = * rw,anonuid=x\n", "anonuid", NULL);
	expect_error("foreground = maybe\n", "'maybe'", "foreground");
	expect_error("scsi-layouts = sometimes\n", "'sometimes'", "auto, yes or no");
	expect_error("max-record = 1K\n", "max-record", NULL);
	expect_error("login-timeout = 3601\n", "bad.conf:1:", "login-timeout");
	expect_error("login-timeout = -1\n", "'-1'", "login-timeout");
	expect_error("config = /etc/x\n", "bad.conf:1:", "config");
}

static void test_load_file(void)
{
	const char *dir = test_tmpdir("config");
	char path[400], err[512];
	struct mds_config c;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mds.conf", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("pool = /x\nport = 99999\n", f);
	fclose(f);
	mds_config_defaults(&c);
	CU_ASSERT_EQUAL(mds_config_load(&c, path, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "mds.conf:2:") != NULL);
	CU_ASSERT(strstr(err, "99999") != NULL);
	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	CU_ASSERT_EQUAL(mds_config_load(&c, path, err, sizeof(err)), -ENOENT);
	CU_ASSERT(strstr(err, "missing.conf") != NULL);
}

static void sa4(struct sockaddr_storage *ss, const char *a)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;
	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	CU_ASSERT_EQUAL(inet_pton(AF_INET, a, &s->sin_addr), 1);
}

static void sa6(struct sockaddr_storage *ss, const char *a)
{
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
	memset(ss, 0, sizeof(*ss));
	s->sin6_family = AF_INET6;
	CU_ASSERT_EQUAL(inet_pton(AF_INET6, a, &s->sin6_addr), 1);
}

static void test_export_match_and_squash(void)
{
	struct mds_exports ex = { 0 };
	struct mds_export_rule r;
	struct sockaddr_storage ss;
	const struct mds_export_rule *m;
	char err[256];
	const char *rules[] = { "192.168.1.7 rw,no_root_squash", "192.168.0.0/16 ro", "fd00::/8 rw",
				"10.1.2.0/23 rw,anonuid=7" };

	for (size_t i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL_FATAL(mds_export_parse_rule(rules[i], &r, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(mds_exports_add(&ex, &r), 0);
	}
	sa4(&ss, "192.168.1.7");
	m = mds_export_match(&ex, (struct sockaddr *)&ss);
	CU_ASSERT_PTR_EQUAL(m, &ex.rules[0]);
	sa4(&ss, "192.168.200.1");
	m = mds_export_match(&ex, (struct sockaddr *)&ss);
	CU_ASSERT_PTR_EQUAL(m, &ex.rules[1]);
	CU_ASSERT_EQUAL(m->rw, 0);
	CU_ASSERT_EQUAL(m->squash, MDS_SQUASH_ROOT);
	sa4(&ss, "10.1.3.255");
	CU_ASSERT_PTR_EQUAL(mds_export_match(&ex, (struct sockaddr *)&ss), &ex.rules[3]);
	sa4(&ss, "10.1.4.0");
	CU_ASSERT_PTR_NULL(mds_export_match(&ex, (struct sockaddr *)&ss));
	sa6(&ss, "fd12::1");
	CU_ASSERT_PTR_EQUAL(mds_export_match(&ex, (struct sockaddr *)&ss), &ex.rules[2]);
	sa6(&ss, "fe80::1");
	CU_ASSERT_PTR_NULL(mds_export_match(&ex, (struct sockaddr *)&ss));
	/* An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d. */
	sa6(&ss, "::ffff:192.168.1.7");
	CU_ASSERT_PTR_EQUAL(mds_export_match(&ex, (struct sockaddr *)&ss), &ex.rules[0]);

	uint32_t uid = 0, gid = 0, gids[3] = { 5, 0, 6 };
	mds_export_squash(&ex.rules[3], &uid, &gid, gids, 3);
	CU_ASSERT_EQUAL(uid, 7);
	CU_ASSERT_EQUAL(gid, MDS_NOBODY_ID);
	CU_ASSERT_EQUAL(gids[0], 5);
	CU_ASSERT_EQUAL(gids[1], MDS_NOBODY_ID);
	uid = 1000;
	gid = 100;
	mds_export_squash(&ex.rules[3], &uid, &gid, gids, 3);
	CU_ASSERT_EQUAL(uid, 1000);
	CU_ASSERT_EQUAL(gid, 100);
	uid = 0;
	mds_export_squash(&ex.rules[0], &uid, &gid, gids, 3);
	CU_ASSERT_EQUAL(uid, 0);

	CU_ASSERT_EQUAL(mds_export_parse_rule("", &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(mds_export_parse_rule("* rw extra", &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(mds_export_parse_rule("host.example rw", &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "host.example") != NULL);
}

TEST_SUITE(mds_config, "mds/config", NULL, NULL,
	   { "defaults_and_keys", test_defaults_and_keys },
	   { "errors_name_line_key_value", test_errors_name_line_key_value },
	   { "load_file", test_load_file },
	   { "export_match_and_squash", test_export_match_and_squash });
