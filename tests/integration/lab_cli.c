/* The pnfs command suites' fixture: tmds_lab_up for the lab and the server, then the options and
 * the scratch directory every such suite builds the same way. */
#include "tests/integration/lab_cli.h"

#include "tests/client/helpers.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void tmp_remove(void *arg)
{
	struct lab_cli *c = arg;

	if (c->tmp[0])
		test_run(NULL, "rm -rf '%s'", c->tmp);
}

int lab_cli_up(struct lab_cli *c, int nluns, const char *size, const char *initiator, const char *name)
{
	struct lab_opts ram = { .ram = 1 };
	size_t n;

	c->mds = tmds_lab_up(&c->lab, nluns, size, &ram, NULL, c->why, sizeof(c->why),
			     "--lease-time 10 --grace-time 2");
	if (!c->mds)
		return 0;
	snprintf(c->url, sizeof(c->url), "pnfs://127.0.0.1:%d", c->mds->port);
	n = (size_t)snprintf(c->devs, sizeof(c->devs), "--initiator %s", initiator);
	for (int i = 0; i < c->lab->nluns; i++)
		n += (size_t)snprintf(c->devs + n, sizeof(c->devs) - n, " --device '%s'", c->lab->urls[i]);
	snprintf(c->tmp, sizeof(c->tmp), "/dev/shm/%s.%d", name, (int)getpid());
	if (mkdir(c->tmp, 0755) < 0 && errno != EEXIST) {
		snprintf(c->why, sizeof(c->why), "%s: %s", c->tmp, strerror(errno));
		tmds_down(c->mds);
		c->mds = NULL;
		return 0;
	}
	chmod(c->tmp, 0755);
	test_cleanup_push(tmp_remove, c);
	return 0;
}

int lab_cli_down(struct lab_cli *c)
{
	tmds_lab_down(&c->lab, &c->mds);
	tmp_remove(c);
	return 0;
}

void lab_cli_local_file(const struct lab_cli *c, const char *name, size_t len, uint64_t seed, char *path,
			size_t pathlen)
{
	char *d = malloc(len ? len : 1);

	snprintf(path, pathlen, "%s/%s", c->tmp, name);
	test_fill_random(d, len, seed);
	CU_ASSERT_EQUAL_FATAL(ct_write_file(path, d, len), 0);
	chmod(path, 0644);
	free(d);
}
