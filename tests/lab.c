/* Labs for integration tests: drives the real `san-lab` tool, reads back its state files, and
 * ties the lab's life to the runner (cleanup hooks here, --watch-pid in san-lab for crashes). */
#include "tests/lab.h"
#include "tests/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void lab_cleanup_cb(void *arg)
{
	struct test_lab *lab = arg;
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "'%s' down --dir '%s' >/dev/null 2>&1", test_bin("san-lab"), lab->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "lab: 'san-lab down --dir %s' failed\n", lab->dir);
}

static int read_state_value(const char *dir, const char *key, char *val, size_t len)
{
	char path[400], line[512];
	size_t klen = strlen(key);
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "%s/lab.env", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
			char *v = line + klen + 1;
			v[strcspn(v, "\n")] = 0;
			snprintf(val, len, "%s", v);
			found = 1;
			break;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

struct test_lab *lab_up(int nluns, const char *size, const struct lab_opts *opts)
{
	struct lab_opts none = { 0 };
	struct test_lab *lab;
	char *out = NULL, extra[400] = "", val[300], path[400];
	int rc, n = 0;
	FILE *f;

	if (!opts)
		opts = &none;
	if (nluns < 1 || nluns > LAB_MAX_LUNS)
		return NULL;
	lab = calloc(1, sizeof(*lab));
	if (!lab)
		return NULL;
	snprintf(lab->dir, sizeof(lab->dir), "%s", test_tmpdir("lab"));
	if (opts->ram)
		strcat(extra, " --ram");
	if (opts->chap)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " --chap '%s'", opts->chap);
	if (opts->initiator)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " --initiator '%s'",
			 opts->initiator);

	for (int attempt = 0; attempt < 5; attempt++) {
		lab->port = test_free_port();
		if (opts->hosts > 0)
			rc = test_run(&out, "'%s' up --hosts %d --rate %d --size %s --dir '%s' --port %d --watch-pid %d%s",
				      test_bin("san-lab"), opts->hosts, opts->rate_mbit, size, lab->dir,
				      lab->port, (int)getpid(), extra);
		else
			rc = test_run(&out, "'%s' up --luns %d --size %s --dir '%s' --port %d --watch-pid %d%s",
				      test_bin("san-lab"), nluns, size, lab->dir, lab->port, (int)getpid(), extra);
		if (rc == 0)
			break;
		free(out);
		out = NULL;
		/* A port taken between our probe and tgtd's bind: try another. */
	}
	if (rc != 0) {
		fprintf(stderr, "lab: san-lab up failed (exit %d)\n", rc);
		free(lab);
		return NULL;
	}
	lab->cleanup_handle = test_cleanup_push(lab_cleanup_cb, lab);

	for (char *line = strtok(out, "\n"); line && n < LAB_MAX_LUNS; line = strtok(NULL, "\n")) {
		if (strncmp(line, "iscsi://", 8) == 0)
			snprintf(lab->urls[n++], sizeof(lab->urls[0]), "%s", line);
	}
	free(out);
	lab->nluns = n;
	if (read_state_value(lab->dir, "LAB_IQN", val, sizeof(val)) == 0)
		snprintf(lab->iqn, sizeof(lab->iqn), "%s", val);
	if (read_state_value(lab->dir, "LAB_BYTES", val, sizeof(val)) == 0)
		lab->lun_bytes = strtoull(val, NULL, 10);
	if (read_state_value(lab->dir, "LAB_DATADIR", val, sizeof(val)) == 0) {
		for (int i = 0; i < n; i++)
			snprintf(lab->files[i], sizeof(lab->files[0]), "%s/lun%d.img", val, i + 1);
	}
	snprintf(path, sizeof(path), "%s/luns", lab->dir);
	f = fopen(path, "r");
	if (!f || n != (opts->hosts > 0 ? opts->hosts : nluns)) {
		fprintf(stderr, "lab: san-lab reported %d LUN URLs, expected %d\n", n,
			opts->hosts > 0 ? opts->hosts : nluns);
		if (f)
			fclose(f);
		lab_down(lab);
		return NULL;
	}
	fclose(f);
	return lab;
}

void lab_down(struct test_lab *lab)
{
	if (!lab)
		return;
	test_cleanup_cancel(lab->cleanup_handle);
	lab_cleanup_cb(lab);
	free(lab);
}

int lab_kill_target(struct test_lab *lab)
{
	char val[64];
	if (read_state_value(lab->dir, "LAB_PID", val, sizeof(val)) != 0 || atoi(val) <= 0)
		return -1;
	return test_run(NULL, "kill -9 %d", atoi(val)) == 0 ? 0 : -1;
}
