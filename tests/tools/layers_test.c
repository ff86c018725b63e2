/* The parts use each other one way only, and through public headers (docs/hacking.md, "Shape of
 * the code"): proto/ uses nothing of ours; blkmap/ uses proto/; mds/ and client/ use proto/ and
 * blkmap/'s public headers and never each other; tools/ uses the public headers of all of them.
 * Every #include "part/file.h" of the source tree is checked against that table. */
#include "tests/harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The headers other parts may include; proto/ is all public (it is the wire, shared by all). */
static const char *const public_headers[] = {
	"blkmap/blkmap.h", "blkmap/blkmap_xdr.h",      /* volumes, discovery, the I/O engine */
	"client/pnfs.h",                               /* libpnfs */
	"mds/store.h", "mds/pool.h", "mds/pool_lock.h", /* the store and its pools (pnfs-admin, pnfs-extents) */
};

/* Which parts a part may include from: "part: uses...". */
static const char *const uses[] = { "proto:", "blkmap: proto", "mds: proto blkmap", "client: proto blkmap",
				    "tools: proto blkmap mds client" };

static int is_public(const char *hdr)
{
	if (strncmp(hdr, "proto/", 6) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(public_headers) / sizeof(public_headers[0]); i++)
		if (strcmp(hdr, public_headers[i]) == 0)
			return 1;
	return 0;
}

static int may_use(const char *uses_list, const char *part)
{
	size_t n = strlen(part);

	for (const char *p = uses_list; (p = strstr(p, part)); p += n)
		if ((p == uses_list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
			return 1;
	return 0;
}

/* What is wrong with `file` (in part) including hdr, or NULL. */
static const char *include_wrong(const char *part, const char *uses_list, const char *hdr)
{
	char other[64];
	const char *slash = strchr(hdr, '/');

	if (!slash || (size_t)(slash - hdr) >= sizeof(other))
		return NULL; /* a generated header (nfs41.h) or a system one */
	snprintf(other, sizeof(other), "%.*s", (int)(slash - hdr), hdr);
	if (strcmp(other, part) == 0)
		return NULL;
	if (strcmp(other, "proto") && strcmp(other, "blkmap") && strcmp(other, "mds") && strcmp(other, "client") &&
	    strcmp(other, "tools"))
		return NULL;
	if (!may_use(uses_list, other))
		return "a part it may not use";
	if (!is_public(hdr))
		return "another part's internal header";
	return NULL;
}

/* Check every .c and .h file of one part; the number of files read. */
static int check_part(const char *top, const char *part, const char *uses_list, char *bad, size_t len)
{
	char dir[600];
	DIR *d;
	struct dirent *e;
	int files = 0;

	snprintf(dir, sizeof(dir), "%s/%s", top, part);
	d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char path[1200], line[512];
		FILE *f;

		if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		files++;
		while (fgets(line, sizeof(line), f)) {
			char hdr[256];
			const char *why;
			if (sscanf(line, " #include \"%255[^\"]\"", hdr) != 1)
				continue;
			why = include_wrong(part, uses_list, hdr);
			if (why && strlen(bad) + strlen(path) + strlen(hdr) + 80 < len)
				snprintf(bad + strlen(bad), len - strlen(bad), "\n  %s/%s includes %s: %s", part, e->d_name,
					 hdr, why);
		}
		fclose(f);
	}
	closedir(d);
	return files;
}

static void test_one_way(void)
{
	char bad[8192] = "";

	for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
		char part[16];
		const char *colon = strchr(uses[i], ':');
		snprintf(part, sizeof(part), "%.*s", (int)(colon - uses[i]), uses[i]);
		CU_ASSERT(check_part(test_top_dir(), part, colon + 1 + (colon[1] == ' '), bad, sizeof(bad)) > 3);
	}
	if (bad[0])
		fprintf(stderr, "\n  includes against the layering:%s\n", bad);
	CU_ASSERT_STRING_EQUAL(bad, "");
}

/* The checker itself: what the table forbids is reported, what it allows is not. */
static void test_checker(void)
{
	CU_ASSERT_PTR_NULL(include_wrong("mds", "proto blkmap", "blkmap/blkmap.h"));
	CU_ASSERT_PTR_NULL(include_wrong("mds", "proto blkmap", "mds/layout_int.h"));
	CU_ASSERT_PTR_NULL(include_wrong("mds", "proto blkmap", "nfs41.h"));
	CU_ASSERT_PTR_NULL(include_wrong("tools", "proto blkmap mds client", "mds/store.h"));
	CU_ASSERT_STRING_EQUAL(include_wrong("mds", "proto blkmap", "client/pnfs.h"), "a part it may not use");
	CU_ASSERT_STRING_EQUAL(include_wrong("proto", "", "blkmap/blkmap.h"), "a part it may not use");
	CU_ASSERT_STRING_EQUAL(include_wrong("client", "proto blkmap", "blkmap/internal.h"),
			       "another part's internal header");
	CU_ASSERT_STRING_EQUAL(include_wrong("tools", "proto blkmap mds client", "mds/layout_int.h"),
			       "another part's internal header");
	CU_ASSERT_STRING_EQUAL(include_wrong("tools", "proto blkmap mds client", "client/internal.h"),
			       "another part's internal header");
}

TEST_SUITE(layers, "tools/layers", NULL, NULL, { "checker", test_checker }, { "one_way", test_one_way });
