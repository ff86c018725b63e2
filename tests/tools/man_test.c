/* The man pages as admins meet them: `make install PREFIX=DIR` puts every command and its page
 * under DIR (bin, share/man/man1, share/man/man8), `man` renders each page from there with its NAME
 * section, every long option a command's --help lists is in its page, and each command's --version
 * prints its name and the release in the VERSION file. */
#include "tests/harness.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	int section;
	const char *helps; /* the --help invocations whose options the page must carry */
} pages[] = {
	{ "pnfs-mds", 8, "--help" },
	{ "pnfs", 1, "--help" },
	{ "pnfs-extents", 1, "--help" },
	{ "pnfs-admin", 8, "--help;format --help;status --help;check --help" },
	{ "blkmap", 8, "--help" },
	{ "san-lab", 1, "--help" },
};

/* Every "--word" of help that page lacks, appended to missing. */
static void options_missing(const char *help, const char *page, char *missing, size_t len)
{
	for (const char *p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
		char opt[64];
		size_t n = 2;
		while (n < sizeof(opt) - 1 && ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') ||
					       (p[n] == '-' && p[n + 1] >= 'a' && p[n + 1] <= 'z')))
			n++;
		if (n == 2 || (p > help && p[-1] != ' ' && p[-1] != '[' && p[-1] != '(' && p[-1] != '|'))
			continue;
		memcpy(opt, p, n);
		opt[n] = 0;
		if (!strcmp(opt, "--help"))
			continue;
		if (!strstr(page, opt) && !strstr(missing, opt) && strlen(missing) + n + 2 < len) {
			strcat(missing, " ");
			strcat(missing, opt);
		}
	}
}

static void test_install_and_render(void)
{
	const char *dir = test_tmpdir("man-install");
	char bin[PATH_MAX], build[PATH_MAX], top[PATH_MAX], *out = NULL, *slash;

	if (test_run(NULL, "command -v man >/dev/null && command -v make >/dev/null") != 0) {
		test_skip("man (man-db) or make is not installed");
		return;
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(test_bin_dir(), bin));
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(test_top_dir(), top));
	snprintf(build, sizeof(build), "%s", bin);
	slash = strrchr(build, '/');
	CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
	*slash = 0; /* the build directory holding bin/ */
	/* The programs are built already; install copies them and the pages. */
	CU_ASSERT_EQUAL_FATAL(test_run(&out, "chmod 755 %s && make -C %s --no-print-directory -s install PREFIX=%s/usr "
					     "BUILD=%s 2>&1",
				       dir, top, dir, build),
			      0);
	free(out);
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		char path[PATH_MAX], help_all[1 << 15] = "", missing[1024] = "", helps[256];
		char *page = NULL;

		snprintf(path, sizeof(path), "%s/usr/share/man/man%d/%s.%d", dir, pages[i].section, pages[i].name,
			 pages[i].section);
		CU_ASSERT_EQUAL(access(path, R_OK), 0);
		snprintf(path, sizeof(path), "%s/usr/bin/%s", dir, pages[i].name);
		CU_ASSERT_EQUAL(access(path, X_OK), 0);
		/* man finds the page through MANPATH alone and renders it, NAME first. */
		CU_ASSERT_EQUAL(test_run(&page, "LC_ALL=C MANWIDTH=250 MANPATH=%s/usr/share/man man -P cat %s 2>&1",
					 dir, pages[i].name),
				0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(page);
		{
			char want[128];
			snprintf(want, sizeof(want), "NAME\n       %s - ", pages[i].name);
			if (!strstr(page, want)) {
				fprintf(stderr, "\n  man %s rendered without its NAME section:\n%.400s\n", pages[i].name,
					page);
				CU_FAIL("NAME section");
			}
		}
		/* --version: the name and the release in the VERSION file */
		{
			char *ver = NULL, want[128], release[64] = "";
			FILE *f;
			snprintf(path, sizeof(path), "%s/VERSION", top);
			f = fopen(path, "r");
			CU_ASSERT_PTR_NOT_NULL_FATAL(f);
			CU_ASSERT_PTR_NOT_NULL(fgets(release, sizeof(release), f));
			fclose(f);
			release[strcspn(release, "\n")] = 0;
			CU_ASSERT(strlen(release) > 0);
			snprintf(want, sizeof(want), "%s %s\n", pages[i].name, release);
			CU_ASSERT_EQUAL(test_run(&ver, "%s/usr/bin/%s --version 2>&1", dir, pages[i].name), 0);
			if (!ver || strcmp(ver, want) != 0) {
				fprintf(stderr, "\n  %s --version printed '%s', not '%s'\n", pages[i].name, ver ? ver : "",
					want);
				CU_FAIL("--version");
			}
			free(ver);
		}
		CU_ASSERT_PTR_NOT_NULL(strstr(page, "SYNOPSIS"));
		CU_ASSERT_PTR_NOT_NULL(strstr(page, "EXIT STATUS"));
		/* Current with the command: every option its help lists. */
		snprintf(helps, sizeof(helps), "%s", pages[i].helps);
		for (char *h = strtok(helps, ";"); h; h = strtok(NULL, ";")) {
			char *text = NULL;
			test_run(&text, "%s/usr/bin/%s %s 2>&1", dir, pages[i].name, h);
			if (text && strlen(help_all) + strlen(text) < sizeof(help_all))
				strcat(help_all, text);
			free(text);
		}
		CU_ASSERT_FATAL(strlen(help_all) > 100);
		options_missing(help_all, page, missing, sizeof(missing));
		if (missing[0]) {
			fprintf(stderr, "\n  man %s lacks options its --help lists:%s\n", pages[i].name, missing);
			CU_FAIL("options missing from the page");
		}
		free(page);
	}
}

TEST_SUITE(man, "tools/man", NULL, NULL, { "install_and_render", test_install_and_render });
