/* The pnfs command's defaults as a user sets them: the system file, the user's file, PNFS_*
 * variables and flags, each overriding the one before; `pnfs config` says what is in force and where
 * each value came from; errors name the file and line; the initiator comes from open-iscsi's
 * initiatorname file when there is one; pnfs:///path goes to the default server. No server needed:
 * everything here happens before a connection. */
#include "tests/harness.h"
#include "tests/tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[300], sys_conf[400], user_home[400], iname[400];

static void setup(void)
{
	char p[500];

	snprintf(dir, sizeof(dir), "%s", test_tmpdir("client-conf"));
	snprintf(sys_conf, sizeof(sys_conf), "%s/client.conf", dir);
	snprintf(user_home, sizeof(user_home), "%s/home", dir);
	snprintf(iname, sizeof(iname), "%s/initiatorname.iscsi", dir);
	snprintf(p, sizeof(p), "mkdir -p '%s/.config/pnfs'", user_home);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "%s", p), 0);
	test_write_text(iname, "## DO NOT EDIT OR REMOVE THIS FILE!\n"
			  "InitiatorName=iqn.1993-08.org.debian:01:5ca1ab1e\n");
}

static void user_conf(const char *text)
{
	char p[500];
	snprintf(p, sizeof(p), "%s/.config/pnfs/client.conf", user_home);
	test_write_text(p, text);
}

/* `pnfs OPTS ARGS` with the test's files and env (more: extra NAME=VALUE words before it), stdout and
 * stderr together in *out. Returns the exit status. */
static const char *pnfs_env(const char *more)
{
	static char env[2048];

	snprintf(env, sizeof(env),
		 "-u XDG_CONFIG_HOME -u PNFS_PORTAL -u PNFS_DEVICE -u PNFS_INITIATOR -u PNFS_IO_TIMEOUT "
		 "-u PNFS_MDS PNFS_CLIENT_CONF='%s' HOME='%s' PNFS_INITIATORNAME_FILE='%s' %s",
		 sys_conf, user_home, iname, more ? more : "");
	return env;
}

static int pnfs(char **out, const char *env, const char *args)
{
	return cli_run(out, pnfs_env(env), "pnfs", "%s", args);
}

/* The config line for key whose value is value (exactly) and whose source contains from. */
static int has_line(const char *out, const char *key, const char *value, const char *from)
{
	char want[1200];
	const char *p = out;

	snprintf(want, sizeof(want), "%-10s = %s ", key, value);
	while ((p = strstr(p, want))) {
		const char *eol = strchr(p, '\n'), *hash = strstr(p, "# ");
		if (hash && (!eol || hash < eol)) {
			size_t n = eol ? (size_t)(eol - hash) : strlen(hash);
			char src[1200];
			snprintf(src, sizeof(src), "%.*s", (int)n, hash);
			if (strstr(src, from))
				return 1;
		}
		p++;
	}
	fprintf(stderr, "\n  no line '%s= %s' from '%s' in:\n%s", key, value, from, out);
	return 0;
}

struct conf_line {
	const char *key, *value, *from;
};

static const struct conf_line from_env[] = {
	{ "io-timeout", "9", "PNFS_IO_TIMEOUT" },
	{ "portal", "iscsi://a:1", "PNFS_PORTAL" },
	{ "portal", "iscsi://b:2", "PNFS_PORTAL" },
	{ "initiator", "iqn.2021-02.env:x", "PNFS_INITIATOR" },
};

static const struct conf_line from_flags[] = {
	{ "io-timeout", "3", "--io-timeout" },
	{ "device", "/dev/sdz", "--device" },
	{ "initiator", "iqn.2022-03.flag:y", "--initiator" },
};

/* pnfs ARGS run with env: it succeeds, shows the n lines, and absent appears nowhere in what it says. */
static void expect_config(const char *env, const char *args, const struct conf_line *lines, size_t n,
			  const char *absent)
{
	char *out = NULL;

	CU_ASSERT_EQUAL(pnfs(&out, env, args), 0);
	for (size_t i = 0; i < n; i++)
		CU_ASSERT(has_line(out, lines[i].key, lines[i].value, lines[i].from));
	CU_ASSERT_PTR_NULL(strstr(out, absent));
	free(out);
}

static void test_precedence(void)
{
	char *out = NULL, from[500];

	setup();
	/* defaults only: no files */
	test_run(NULL, "rm -f '%s' '%s/.config/pnfs/client.conf'", sys_conf, user_home);
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "config"), 0);
	CU_ASSERT(has_line(out, "io-timeout", "30", "default"));
	CU_ASSERT(has_line(out, "initiator", "iqn.1993-08.org.debian:01:5ca1ab1e", iname));
	CU_ASSERT(has_line(out, "initiator", "iqn.1993-08.org.debian:01:5ca1ab1e", "targets' ACLs"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "absent"));
	free(out);

	/* the system file */
	test_write_text(sys_conf, "# site defaults\n"
			     "portal = iscsi://10.1.0.1:3260\n"
			     "portal = iscsi://10.1.0.2\n"
			     "io-timeout = 5\n"
			     "mds = mds.example:2050\n"
			     "initiator = iqn.2020-01.example:site\n");
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "config"), 0);
	snprintf(from, sizeof(from), "%s:2", sys_conf);
	CU_ASSERT(has_line(out, "portal", "iscsi://10.1.0.1:3260", from));
	snprintf(from, sizeof(from), "%s:3", sys_conf);
	CU_ASSERT(has_line(out, "portal", "iscsi://10.1.0.2", from));
	snprintf(from, sizeof(from), "%s:4", sys_conf);
	CU_ASSERT(has_line(out, "io-timeout", "5", from));
	CU_ASSERT(has_line(out, "mds", "mds.example:2050", sys_conf));
	CU_ASSERT(has_line(out, "initiator", "iqn.2020-01.example:site", sys_conf));
	free(out);

	/* the user's file over it, key by key: its portal replaces the whole list */
	user_conf("io-timeout = 7\nportal = iscsi://192.168.0.9\n");
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "config"), 0);
	CU_ASSERT(has_line(out, "io-timeout", "7", "/home/.config/pnfs/client.conf:1"));
	CU_ASSERT(has_line(out, "portal", "iscsi://192.168.0.9", "/home/.config/pnfs/client.conf:2"));
	CU_ASSERT_PTR_NULL(strstr(out, "10.1.0.1"));
	CU_ASSERT(has_line(out, "mds", "mds.example:2050", sys_conf)); /* not set by the user: kept */
	free(out);

	/* XDG_CONFIG_HOME moves the user's file */
	CU_ASSERT_EQUAL(test_run(NULL, "mkdir -p '%s/xdg/pnfs'", dir), 0);
	snprintf(from, sizeof(from), "%s/xdg/pnfs/client.conf", dir);
	test_write_text(from, "io-timeout = 8\n");
	{
		char env[600];
		snprintf(env, sizeof(env), "XDG_CONFIG_HOME='%s/xdg'", dir);
		CU_ASSERT_EQUAL(pnfs(&out, env, "config"), 0);
		CU_ASSERT(has_line(out, "io-timeout", "8", "/xdg/pnfs/client.conf:1"));
		free(out);
	}

	/* the environment over the files; lists split at blanks and commas */
	expect_config("PNFS_IO_TIMEOUT=9 PNFS_PORTAL='iscsi://a:1,iscsi://b:2' PNFS_INITIATOR=iqn.2021-02.env:x", "config",
		      from_env, sizeof(from_env) / sizeof(from_env[0]), "192.168.0.9");
	/* flags over everything, before or after the command */
	expect_config("PNFS_IO_TIMEOUT=9 PNFS_DEVICE=/dev/sdq",
		      "--io-timeout 3 config --device /dev/sdz --initiator iqn.2022-03.flag:y", from_flags,
		      sizeof(from_flags) / sizeof(from_flags[0]), "/dev/sdq");
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "config extra"), 2);
	free(out);
}

/* Errors name the file and the line (or the variable), exit 2 as a usage error does. */
static void test_errors(void)
{
	static const struct {
		const char *text, *env, *says;
	} cases[] = {
		{ "portal = iscsi://x\nfrobnicate = 1\n", NULL, "client.conf:2: unknown key 'frobnicate'" },
		{ "\n# c\nio-timeout = soon\n", NULL, "client.conf:3: io-timeout takes seconds, 0.1 to 3600, not 'soon'" },
		{ "portal = 10.0.0.1\n", NULL, "client.conf:1: portal takes iscsi://" },
		{ "just words\n", NULL, "client.conf:1: expected 'key = value', got 'just words'" },
		{ "= 3\n", NULL, "client.conf:1: missing key before '='" },
		{ "mds = a/b/c\n", NULL, "client.conf:1: mds takes host[:port]" },
		{ "", "PNFS_IO_TIMEOUT=0", "PNFS_IO_TIMEOUT: io-timeout takes seconds" },
		{ "", "PNFS_PORTAL=nope", "PNFS_PORTAL: portal takes iscsi://" },
	};

	setup();
	test_run(NULL, "rm -f '%s/.config/pnfs/client.conf'", user_home);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		test_write_text(sys_conf, cases[i].text);
		cli_expect(2, cases[i].says, pnfs_env(cases[i].env), "pnfs", "config");
		/* any command, not only config */
		cli_expect(2, cases[i].says, pnfs_env(cases[i].env), "pnfs", "ls pnfs://127.0.0.1:1/");
	}
	/* the user's file is named as well */
	test_write_text(sys_conf, "");
	user_conf("io-timeout = 1\nbogus\n");
	cli_expect(2, "/home/.config/pnfs/client.conf:2: expected 'key = value'", pnfs_env(NULL), "pnfs", "config");
}

/* The initiator: open-iscsi's name when its file has one, the made-up one otherwise. */
static void test_initiator(void)
{
	char *out = NULL, env[600];

	setup();
	test_write_text(sys_conf, "");
	test_run(NULL, "rm -f '%s/.config/pnfs/client.conf'", user_home);
	test_write_text(iname, "# comment\n  InitiatorName = iqn.2005-03.org.open-iscsi:deadbeef  \n");
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "config"), 0);
	CU_ASSERT(has_line(out, "initiator", "iqn.2005-03.org.open-iscsi:deadbeef", iname));
	free(out);
	/* no usable name in it: the made-up one */
	test_write_text(iname, "InitiatorName=\n");
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "config"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "iqn.2024-01.org.pnfs-san:blkmap."));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "made up from the host name"));
	free(out);
	snprintf(env, sizeof(env), "PNFS_INITIATORNAME_FILE='%s/none'", dir);
	CU_ASSERT_EQUAL(pnfs(&out, env, "config"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "iqn.2024-01.org.pnfs-san:blkmap."));
	free(out);
}

/* pnfs:///path: the default server, or a usage error without one; malformed URLs exit 2. */
static void test_urls(void)
{
	char *out = NULL;

	setup();
	test_run(NULL, "rm -f '%s/.config/pnfs/client.conf'", user_home);
	test_write_text(sys_conf, "");
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "ls pnfs:///dir"), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "pnfs:///dir: no server in the URL and no default one"));
	free(out);
	/* with one: the command goes there (a port where nothing listens: a failure, 1, naming it) */
	{
		char conf[100];
		int port = test_free_port();
		snprintf(conf, sizeof(conf), "mds = 127.0.0.1:%d\nio-timeout = 0.5\n", port);
		test_write_text(sys_conf, conf);
		CU_ASSERT_EQUAL(pnfs(&out, NULL, "ls pnfs:///dir"), 1);
		snprintf(conf, sizeof(conf), "127.0.0.1:%d", port);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, conf));
		free(out);
	}
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "ls pnfs://bad%host/"), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "not a valid pnfs://host[:port]/path URL"));
	free(out);
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "get pnfs://h:99999/x /tmp/x"), 2);
	free(out);
	CU_ASSERT_EQUAL(pnfs(&out, NULL, "ls http://h/x"), 2);
	free(out);
}

/* Run as another user with a HOME it may not search (su, setpriv): the user's file is skipped and
 * said to be; a file that is there but unreadable is an error naming it. */
static void test_unreadable(void)
{
	char *out = NULL, home[500], p[600];

	TEST_SKIP_IF(!test_is_root(), "needs root to run pnfs as another user");
	setup();
	snprintf(home, sizeof(home), "%s/locked", dir);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "mkdir -p '%s/.config/pnfs' && echo 'io-timeout = 4' > '%s/.config/pnfs/client.conf' "
				       "&& chmod 700 '%s' && chmod 755 '%s'", home, home, home, dir), 0);
	CU_ASSERT_EQUAL(test_run(&out, "env PNFS_CLIENT_CONF=/dev/null HOME='%s' setpriv --reuid=65534 --regid=65534 "
				       "--clear-groups '%s' config 2>&1", home, test_bin("pnfs")), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "/locked/.config/pnfs/client.conf: Permission denied"));
	CU_ASSERT(out && has_line(out, "io-timeout", "30", "default"));
	free(out);
	/* where every user may search the way to it (the test's directory may be root's alone) */
	snprintf(p, sizeof(p), "/tmp/pnfs-conf-test.%d.unreadable.conf", (int)getpid());
	test_write_text(p, "io-timeout = 4\n");
	CU_ASSERT_EQUAL(test_run(NULL, "chmod 600 '%s'", p), 0);
	CU_ASSERT_EQUAL(test_run(&out, "env PNFS_CLIENT_CONF='%s' HOME=/nonexistent setpriv --reuid=65534 --regid=65534 "
				       "--clear-groups '%s' config 2>&1", p, test_bin("pnfs")), 2);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "unreadable.conf: Permission denied"));
	free(out);
	unlink(p);
}

TEST_SUITE(client_conf, "client/conf", NULL, NULL, { "precedence", test_precedence }, { "errors", test_errors },
	   { "initiator", test_initiator }, { "urls", test_urls }, { "unreadable", test_unreadable });
