/* pool.conf: the pool directory's list of LUN URLs in volume order (and, optionally, the pool's
 * UUID), parsed with line-numbered errors and written atomically, readable by the owner only
 * because URLs may carry CHAP secrets. */
#include "mds/pool.h"
#include "proto/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void mds_pool_conf_free(struct mds_pool_conf *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < MDS_MAX_LUNS; i++) {
		free(c->urls[i]);
		c->urls[i] = NULL;
	}
	c->nluns = 0;
}

/* Split the next whitespace-separated word of *p; NULL at the end of the line. */
static char *word(char **p)
{
	char *s = *p, *w;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	w = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return w;
}

static int parse_line(char *line, const char *name, unsigned lineno, struct mds_pool_conf *c,
		      char *err, size_t errlen)
{
	char *p = line, *kw, *a, *b, *end;
	unsigned long idx;

	kw = word(&p);
	if (!kw || kw[0] == '#')
		return 0;
	if (strcmp(kw, "pool") == 0) {
		a = word(&p);
		if (!a || word(&p))
			return proto_errf(err, errlen, -EINVAL, "%s:%u: expected 'pool UUID'", name, lineno);
		if (mds_uuid_parse(a, c->pool_uuid))
			return proto_errf(err, errlen, -EINVAL, "%s:%u: '%s' is not a UUID", name, lineno, a);
		if (c->have_uuid)
			return proto_errf(err, errlen, -EINVAL, "%s:%u: second 'pool' line", name, lineno);
		c->have_uuid = 1;
		return 0;
	}
	if (strcmp(kw, "lun") != 0)
		return proto_errf(err, errlen, -EINVAL, "%s:%u: unknown keyword '%s' (expected 'lun' or 'pool')",
				name, lineno, kw);
	a = word(&p);
	b = a ? word(&p) : NULL;
	if (!a || !b || word(&p))
		return proto_errf(err, errlen, -EINVAL, "%s:%u: expected 'lun INDEX URL'", name, lineno);
	errno = 0;
	idx = strtoul(a, &end, 10);
	if (!isdigit((unsigned char)a[0]) || *end || errno || idx >= MDS_MAX_LUNS)
		return proto_errf(err, errlen, -EINVAL, "%s:%u: LUN index '%s' is not a number below %u",
				name, lineno, a, MDS_MAX_LUNS);
	if (strlen(b) >= MDS_POOL_URL_MAX)
		return proto_errf(err, errlen, -EINVAL, "%s:%u: URL longer than %u bytes", name, lineno,
				MDS_POOL_URL_MAX - 1);
	if (c->urls[idx])
		return proto_errf(err, errlen, -EINVAL, "%s:%u: LUN %lu listed twice", name, lineno, idx);
	for (uint32_t i = 0; i < MDS_MAX_LUNS; i++)
		if (c->urls[i] && strcmp(c->urls[i], b) == 0)
			return proto_errf(err, errlen, -EINVAL, "%s:%u: %s is already LUN %u", name, lineno,
					b, i);
	c->urls[idx] = strdup(b);
	if (!c->urls[idx])
		return -ENOMEM;
	if (idx + 1 > c->nluns)
		c->nluns = (uint32_t)idx + 1;
	return 0;
}

int mds_pool_conf_parse(const char *text, const char *name, struct mds_pool_conf *c, char *err,
			size_t errlen)
{
	char *copy = strdup(text), *line, *next;
	unsigned lineno = 0;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if (!copy)
		return -ENOMEM;
	for (line = copy; line && !rc; line = next) {
		size_t n;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		rc = parse_line(line, name, lineno, c, err, errlen);
	}
	free(copy);
	if (rc)
		return rc;
	if (c->nluns == 0)
		return proto_errf(err, errlen, -EINVAL, "%s: no 'lun' lines", name);
	for (uint32_t i = 0; i < c->nluns; i++)
		if (!c->urls[i])
			return proto_errf(err, errlen, -EINVAL,
					"%s: LUN %u missing (LUNs are numbered 0 to %u without gaps)",
					name, i, c->nluns - 1);
	return 0;
}

int mds_pool_conf_read(const char *dir, struct mds_pool_conf *c, char *err, size_t errlen)
{
	char path[4096], *text;
	struct stat sb;
	FILE *f;
	size_t n;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "%s/%s", dir, MDS_POOL_CONF);
	f = fopen(path, "r");
	if (!f)
		return proto_errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &sb) || sb.st_size > (1 << 20)) {
		fclose(f);
		return proto_errf(err, errlen, -EFBIG, "%s: not a file of at most 1 MiB", path);
	}
	text = malloc((size_t)sb.st_size + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(text, 1, (size_t)sb.st_size, f);
	fclose(f);
	text[n] = '\0';
	if (memchr(text, '\0', n)) {
		free(text);
		return proto_errf(err, errlen, -EINVAL, "%s: contains a NUL byte", path);
	}
	rc = mds_pool_conf_parse(text, path, c, err, errlen);
	free(text);
	return rc;
}

int mds_pool_conf_write(const char *dir, const struct mds_pool_conf *c, char *err, size_t errlen)
{
	char path[4096], tmp[4096], uuid[37];
	FILE *f;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, MDS_POOL_CONF);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, MDS_POOL_CONF);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return proto_errf(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return proto_errf(err, errlen, rc, "%s: %s", tmp, strerror(-rc));
	}
	fprintf(f, "# pNFS block pool: the LUNs of the pool volume, in volume order.\n"
		   "# 'lun INDEX URL' per LUN; a LUN that moved may get a new URL here, its label\n"
		   "# (pnfs-admin status) says which LUN it is. May hold CHAP secrets: keep it 0600.\n");
	if (c->have_uuid) {
		mds_uuid_format(c->pool_uuid, uuid);
		fprintf(f, "pool %s\n", uuid);
	}
	for (uint32_t i = 0; i < c->nluns; i++)
		fprintf(f, "lun %u %s\n", i, c->urls[i]);
	return mds_pool_file_commit(f, 0, tmp, path, err, errlen);
}

int mds_pool_file_commit(FILE *f, int rc, const char *tmp, const char *path, char *err, size_t errlen)
{
	errno = 0;
	if (!rc && (fflush(f) || fsync(fileno(f))))
		rc = errno ? -errno : -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return proto_errf(err, errlen, rc, "%s: %s", path, strerror(-rc));
	}
	return 0;
}
