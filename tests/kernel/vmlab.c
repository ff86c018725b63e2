/* tools/vm-lab driven from the kernel suites (see vmlab.h). */
#include "tests/kernel/vmlab.h"
#include "tests/harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int script_seq;

static void line_value(const char *text, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	buf[0] = 0;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t n = strcspn(v, "\n");
			if (n >= len)
				n = len - 1;
			memcpy(buf, v, n);
			buf[n] = 0;
			return;
		}
	}
}

int vmlab_up(struct vmlab *lab, const char *tag, const char *opts)
{
	char *out = NULL;
	int rc;

	memset(lab, 0, sizeof(*lab));
	snprintf(lab->dir, sizeof(lab->dir), "%s/lab", test_tmpdir(tag));
	rc = test_run(&out, "'%s' up --dir '%s' %s 2>&1", test_bin("vm-lab"), lab->dir, opts ? opts : "");
	if (rc == 77) {
		const char *p = out ? strstr(out, "cannot boot a guest here: ") : NULL;
		snprintf(lab->skip, sizeof(lab->skip), "%.*s", p ? (int)strcspn(p, "\n") : 40,
			 p ? p : "vm-lab: cannot boot a guest here");
	} else if (rc != 0) {
		snprintf(lab->failed, sizeof(lab->failed), "exit %d: %s", rc, out ? out : "");
	} else {
		line_value(out, "VM_MDS", lab->mds, sizeof(lab->mds));
		line_value(out, "VM_MDS_URL", lab->url, sizeof(lab->url));
		line_value(out, "VM_LUNS", lab->luns, sizeof(lab->luns));
		char tmp[1024];
		snprintf(tmp, sizeof(tmp), "%s", lab->luns);
		lab->dev_opts[0] = 0;
		for (char *sv, *t = strtok_r(tmp, " ", &sv); t; t = strtok_r(NULL, " ", &sv)) {
			size_t l = strlen(lab->dev_opts);
			snprintf(lab->dev_opts + l, sizeof(lab->dev_opts) - l, " --device %s", t);
		}
		lab->up = 1;
	}
	free(out);
	return 0;
}

void vmlab_down(struct vmlab *lab)
{
	if (!lab->dir[0])
		return;
	(void)test_run(NULL, "'%s' down --dir '%s' >/dev/null 2>&1", test_bin("vm-lab"), lab->dir);
	lab->up = 0;
}

static int run_script(struct vmlab *lab, char **out, const char *how, const char *fmt, va_list ap)
{
	char path[400];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s.script-%d.sh", lab->dir, script_seq++);
	f = fopen(path, "w");
	if (!f)
		return -1;
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fclose(f);
	if (!strcmp(how, "guest"))
		rc = test_run(out, "'%s' exec --dir '%s' --timeout 300 --script '%s' 2>&1", test_bin("vm-lab"),
			      lab->dir, path);
	else
		rc = test_run(out, "PATH='%s':$PATH '%s' host --dir '%s' -- bash -e '%s' 2>&1", test_bin_dir(),
			      test_bin("vm-lab"), lab->dir, path);
	return rc;
}

int vmlab_guest(struct vmlab *lab, char **out, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = run_script(lab, out, "guest", fmt, ap);
	va_end(ap);
	return rc;
}

int vmlab_host(struct vmlab *lab, char **out, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = run_script(lab, out, "host", fmt, ap);
	va_end(ap);
	return rc;
}

const char *vmlab_md5(const char *text, const char *key, char *buf)
{
	line_value(text, key, buf, 33);
	return buf;
}

int vmlab_is_md5(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

long long vmlab_kv(const char *text, const char *key)
{
	char v[64];
	line_value(text, key, v, sizeof(v));
	return v[0] ? strtoll(v, NULL, 10) : -1;
}

long long vmlab_mountstat(const char *text, const char *op)
{
	char pat[64];
	size_t pl;
	snprintf(pat, sizeof(pat), "%s: ", op);
	pl = strlen(pat);
	for (const char *p = text; p && (p = strstr(p, pat)); p += pl)
		if (p > text && (p[-1] == ' ' || p[-1] == '\t'))
			return strtoll(p + pl, NULL, 10);
	return -1;
}

long long vmlab_metric(struct vmlab *lab, const char *sample)
{
	char *out = NULL;
	long long v = -1;
	char pat[256];
	const char *p;

	if (vmlab_host(lab, &out, "curl -sf \"$VM_METRICS_URL\"") == 0 && out) {
		snprintf(pat, sizeof(pat), "\n%s ", sample);
		p = strstr(out, pat);
		if (p)
			v = strtoll(p + strlen(pat), NULL, 10);
	}
	free(out);
	return v;
}

int vmlab_log_count(struct vmlab *lab, const char *needle)
{
	char path[400], line[2048];
	FILE *f;
	int n = 0;
	snprintf(path, sizeof(path), "%s/mds.log", lab->dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}
