/* The lab, MDS and scratch folder the pnfs mount suites share, and their "bad=0" shell scripts
 * (tests/integration/mount_lab.h). */
#include "tests/integration/mount_lab.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mount_lab_up(struct mount_lab *m, const char *mds_args, const char *tag)
{
	int n = 0;

	memset(m, 0, sizeof(*m));
	m->have_fuse = access("/dev/fuse", R_OK | W_OK) == 0 &&
		       test_run(NULL, "command -v fusermount3 >/dev/null") == 0;
	if (!m->have_fuse)
		return 0;
	m->lab = lab_up(4, "96M", NULL);
	if (!m->lab) {
		snprintf(m->why, sizeof(m->why), "no tgtd lab");
		return 0;
	}
	m->mds = tmds_up(m->lab, NULL, mds_args, m->why, sizeof(m->why));
	if (!m->mds)
		return 0;
	snprintf(m->url, sizeof(m->url), "pnfs://127.0.0.1:%d", m->mds->port);
	for (int i = 0; i < m->lab->nluns; i++)
		n += snprintf(m->devs + n, sizeof(m->devs) - (size_t)n, " --device '%s'", m->lab->urls[i]);
	snprintf(m->dir, sizeof(m->dir), "%s", test_tmpdir(tag));
	return 0;
}

void mount_lab_down(struct mount_lab *m)
{
	if (!m->have_fuse)
		return;
	tmds_down(m->mds);
	if (m->lab)
		lab_down(m->lab);
}

int mount_script_ok(const char *fmt, ...)
{
	char *script = NULL, *out = NULL;
	va_list ap;
	int rc, ok;

	va_start(ap, fmt);
	rc = vasprintf(&script, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return 0;
	rc = test_run(&out, "%s", script);
	ok = rc == 0 && out && strstr(out, "bad=0");
	if (!ok)
		fprintf(stderr, "\n  script exit %d:\n  %s\n", rc, out ? out : "");
	free(out);
	free(script);
	return ok;
}
