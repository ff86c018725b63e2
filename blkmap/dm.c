/* Loading compiled tables into the kernel with libdevmapper: one DM_DEVICE_CREATE per device, stacked
 * ones first, each line handed over as (start, length, target, parameters). Hosts without
 * device-mapper (no /dev/mapper/control: this kind of VM, containers) get -ENOTSUP and one line
 * saying so, before libdevmapper is touched. */
#include "blkmap/vol_int.h"
#include "proto/util.h"

#include <inttypes.h>
#include <libdevmapper.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DM_CONTROL "/dev/mapper/control"

/* "START LEN TARGET PARAMS..." */
int bm_table_parse_line(const char *line, uint64_t *start, uint64_t *len, char *target, size_t tlen,
			const char **params)
{
	char *end;
	const char *p = line, *t;
	size_t n;

	*start = strtoull(p, &end, 10);
	if (end == p || *end != ' ')
		return -EINVAL;
	p = end + 1;
	*len = strtoull(p, &end, 10);
	if (end == p || *end != ' ' || *len == 0)
		return -EINVAL;
	t = end + 1;
	n = strcspn(t, " ");
	if (n == 0 || n >= tlen || !t[n])
		return -EINVAL;
	memcpy(target, t, n);
	target[n] = 0;
	*params = t + n + 1;
	return 0;
}

static int dm_remove_one(const char *name, char *err, size_t errlen)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_REMOVE);
	int ok;

	if (!dmt)
		return proto_errf(err, errlen, -ENOMEM, "libdevmapper: cannot create a task");
	ok = dm_task_set_name(dmt, name) && dm_task_run(dmt);
	dm_task_destroy(dmt);
	return ok ? 0 : proto_errf(err, errlen, -EIO, "device-mapper: cannot remove %s", name);
}

static int dm_create_one(const struct blkmap_table_dev *d, char *err, size_t errlen)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_CREATE);
	const char *line = d->text;
	int rc = 0;

	if (!dmt)
		return proto_errf(err, errlen, -ENOMEM, "libdevmapper: cannot create a task");
	if (!dm_task_set_name(dmt, d->name)) {
		rc = proto_errf(err, errlen, -EINVAL, "device-mapper: bad device name %s", d->name);
		goto out;
	}
	while (*line) {
		const char *nl = strchr(line, '\n'), *params;
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char *copy = strndup(line, n), target[32];
		uint64_t start, len;
		if (!copy) {
			rc = proto_errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		if (bm_table_parse_line(copy, &start, &len, target, sizeof(target), &params) < 0) {
			rc = proto_errf(err, errlen, -EINVAL, "%s: malformed table line '%s'", d->name, copy);
			free(copy);
			goto out;
		}
		if (!dm_task_add_target(dmt, start, len, target, params)) {
			rc = proto_errf(err, errlen, -EINVAL, "%s: device-mapper refused line '%s'", d->name, copy);
			free(copy);
			goto out;
		}
		free(copy);
		line += n + (nl ? 1 : 0);
	}
	if (!dm_task_run(dmt))
		rc = proto_errf(err, errlen, -EIO, "device-mapper: cannot create %s (see the kernel log)", d->name);
out:
	dm_task_destroy(dmt);
	return rc;
}

static int have_dm(char *err, size_t errlen)
{
	if (access(DM_CONTROL, F_OK) != 0)
		return proto_errf(err, errlen, -ENOTSUP,
			      "no device-mapper on this host (" DM_CONTROL " does not exist): use the userspace engine");
	return 0;
}

static int own_device(const struct blkmap_table *t, const char *tok)
{
	if (strncmp(tok, "/dev/mapper/", 12) != 0)
		return 0;
	for (unsigned i = 0; i < t->ndev; i++)
		if (!strcmp(tok + 12, t->dev[i].name))
			return 1;
	return 0;
}

static int check_token(const struct blkmap_table *t, const char *dev, const char *tok, char *err, size_t errlen)
{
	struct stat st;

	if (own_device(t, tok))
		return 0;
	if (!strncmp(tok, "iscsi://", 8))
		return proto_errf(err, errlen, -ENODEV,
			      "%s: leaf %s is an iSCSI URL, not a local block device (log in with open-iscsi and "
			      "resolve against /dev/sd*)",
			      dev, tok);
	if (stat(tok, &st) != 0 || !S_ISBLK(st.st_mode))
		return proto_errf(err, errlen, -ENODEV, "%s: leaf %s is not a local block device", dev, tok);
	return 0;
}

/* every device a table names must be one dm can open: a block device or one of the stacked ones */
static int check_leaves(const struct blkmap_table *t, char *err, size_t errlen)
{
	for (unsigned i = 0; i < t->ndev; i++) {
		const char *line = t->dev[i].text;
		while (*line) {
			const char *nl = strchr(line, '\n'), *params;
			size_t n = nl ? (size_t)(nl - line) : strlen(line);
			char *copy = strndup(line, n), target[32], *save = NULL, *tok;
			uint64_t start, len;
			int rc = 0, k = 0;
			if (!copy)
				return proto_errf(err, errlen, -ENOMEM, "out of memory");
			if (bm_table_parse_line(copy, &start, &len, target, sizeof(target), &params) < 0) {
				free(copy);
				return proto_errf(err, errlen, -EINVAL, "%s: malformed table line", t->dev[i].name);
			}
			/* linear DEV OFF | striped N CHUNK (DEV OFF)... */
			for (tok = strtok_r((char *)params, " ", &save); tok && rc == 0; tok = strtok_r(NULL, " ", &save), k++) {
				int is_dev = !strcmp(target, "linear") ? k == 0 : (k >= 2 && k % 2 == 0);
				if (is_dev)
					rc = check_token(t, t->dev[i].name, tok, err, errlen);
			}
			free(copy);
			if (rc < 0)
				return rc;
			line += n + (nl ? 1 : 0);
		}
	}
	return 0;
}

int blkmap_table_apply(const struct blkmap_table *t, char *err, size_t errlen)
{
	int rc = have_dm(err, errlen);

	if (rc < 0)
		return rc;
	rc = check_leaves(t, err, errlen);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < t->ndev; i++) {
		rc = dm_create_one(&t->dev[i], err, errlen);
		if (rc < 0) {
			while (i-- > 0)
				dm_remove_one(t->dev[i].name, NULL, 0);
			return rc;
		}
	}
	return 0;
}

int blkmap_table_remove(const struct blkmap_table *t, char *err, size_t errlen)
{
	int rc = have_dm(err, errlen), first = 0;

	if (rc < 0)
		return rc;
	for (unsigned i = t->ndev; i-- > 0;) {
		rc = dm_remove_one(t->dev[i].name, err, errlen);
		if (rc < 0 && !first)
			first = rc;
	}
	return first;
}
