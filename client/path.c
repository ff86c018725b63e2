/* Paths and attributes: a path becomes PUTFH(export) + one LOOKUP per component in one compound (the
 * server walks it; no per-component round trips), and GETATTR results become struct pnfs_stat. */
#include "client/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BIT(b) (1u << ((b) % 32))

struct proto_attrmask pc_attrs_stat = { .w = {
	[0] = BIT(FATTR4_TYPE) | BIT(FATTR4_CHANGE) | BIT(FATTR4_SIZE) | BIT(FATTR4_FILEID),
	[1] = BIT(FATTR4_MODE) | BIT(FATTR4_NUMLINKS) | BIT(FATTR4_OWNER) | BIT(FATTR4_OWNER_GROUP) |
	      BIT(FATTR4_RAWDEV) | BIT(FATTR4_SPACE_USED) | BIT(FATTR4_TIME_ACCESS) | BIT(FATTR4_TIME_METADATA) |
	      BIT(FATTR4_TIME_MODIFY),
} };

struct proto_attrmask pc_attrs_open = { .w = {
	[0] = BIT(FATTR4_TYPE) | BIT(FATTR4_CHANGE) | BIT(FATTR4_SIZE) | BIT(FATTR4_FILEID),
	[1] = BIT(FATTR4_MODE) | BIT(FATTR4_NUMLINKS) | BIT(FATTR4_OWNER) | BIT(FATTR4_OWNER_GROUP) |
	      BIT(FATTR4_SPACE_USED) | BIT(FATTR4_TIME_ACCESS) | BIT(FATTR4_TIME_METADATA) |
	      BIT(FATTR4_TIME_MODIFY),
} };

struct proto_attrmask pc_attrs_fs = { .w = {
	[0] = BIT(FATTR4_TYPE) | BIT(FATTR4_LEASE_TIME) | BIT(FATTR4_FILES_AVAIL) | BIT(FATTR4_FILES_FREE) |
	      BIT(FATTR4_FILES_TOTAL) | BIT(FATTR4_MAXREAD) | BIT(FATTR4_MAXWRITE),
	[1] = BIT(FATTR4_SPACE_AVAIL) | BIT(FATTR4_SPACE_FREE) | BIT(FATTR4_SPACE_TOTAL) |
	      BIT(FATTR4_FS_LAYOUT_TYPES),
	[2] = BIT(FATTR4_LAYOUT_BLKSIZE),
} };

int pc_path_split(struct pc_compound *c, const char *path, const char **comp, int max)
{
	char *copy = pc_strdup(c, path ? path : "");
	char *p, *save = NULL;
	int n = 0;

	if (!copy)
		return -ENOMEM;
	c->abs_path = path && path[0] == '/';
	for (p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (strcmp(p, ".") == 0)
			continue;
		if (strlen(p) > 255)
			return -ENAMETOOLONG;
		if (n >= max)
			return -ENAMETOOLONG;
		comp[n++] = p;
	}
	return n;
}

int pc_add_walk(struct pc_compound *c, const char *const *comp, int n)
{
	struct pnfs_context *ctx = c->ctx;

	if (n > PC_MAX_OPS - 8 || (ctx->fore_maxops && (uint32_t)n + 6 > ctx->fore_maxops))
		return -ENAMETOOLONG;
	if (c->abs_path)
		pc_add_putrootfh(c);
	else
		pc_add_putfh(c, ctx->root_fh, ctx->root_fhlen);
	for (int i = 0; i < n; i++) {
		if (strcmp(comp[i], "..") == 0)
			pc_add(c, OP_LOOKUPP);
		else
			pc_add_lookup(c, comp[i]);
	}
	return c->status;
}

const char *pc_path_show(struct pnfs_context *ctx, const char *path)
{
	static __thread char buf[4400];
	const char *ex = ctx->export ? ctx->export : "/";

	if (!path)
		path = "";
	if (path[0] == '/' || strcmp(ex, "/") == 0)
		snprintf(buf, sizeof(buf), "%s%s", path[0] == '/' ? "" : "/", path);
	else
		snprintf(buf, sizeof(buf), "%s/%s", ex, path);
	return buf;
}

static void nfstime_to_ts(const nfstime4 *t, struct timespec *ts)
{
	ts->tv_sec = (time_t)t->seconds;
	ts->tv_nsec = (long)t->nseconds;
}

static uint32_t owner_num(const char *s)
{
	char *end;
	unsigned long v;

	if (!s[0])
		return 0;
	v = strtoul(s, &end, 10);
	if (*end == '@' || *end == 0)
		return (uint32_t)v;
	if (strcmp(s, "root") == 0 || strncmp(s, "root@", 5) == 0)
		return 0;
	return 0;
}

void pc_fattr_to_stat(const struct proto_fattr *fa, struct pnfs_stat *st)
{
	memset(st, 0, sizeof(*st));
	if (proto_attrmask_isset(&fa->mask, FATTR4_TYPE))
		st->type = fa->type >= NF4REG && fa->type <= NF4FIFO ? (enum pnfs_ftype)fa->type : PNFS_REG;
	if (proto_attrmask_isset(&fa->mask, FATTR4_MODE))
		st->mode = fa->mode & 07777;
	if (proto_attrmask_isset(&fa->mask, FATTR4_NUMLINKS))
		st->nlink = fa->numlinks;
	if (proto_attrmask_isset(&fa->mask, FATTR4_OWNER)) {
		snprintf(st->owner, sizeof(st->owner), "%s", fa->owner);
		st->uid = owner_num(fa->owner);
	}
	if (proto_attrmask_isset(&fa->mask, FATTR4_OWNER_GROUP)) {
		snprintf(st->group, sizeof(st->group), "%s", fa->owner_group);
		st->gid = owner_num(fa->owner_group);
	}
	if (proto_attrmask_isset(&fa->mask, FATTR4_SIZE))
		st->size = fa->size;
	if (proto_attrmask_isset(&fa->mask, FATTR4_SPACE_USED))
		st->space_used = fa->space_used;
	if (proto_attrmask_isset(&fa->mask, FATTR4_RAWDEV)) {
		st->rdev_major = fa->rawdev.specdata1;
		st->rdev_minor = fa->rawdev.specdata2;
	}
	if (proto_attrmask_isset(&fa->mask, FATTR4_FILEID))
		st->fileid = fa->fileid;
	if (proto_attrmask_isset(&fa->mask, FATTR4_CHANGE))
		st->change = fa->change;
	if (proto_attrmask_isset(&fa->mask, FATTR4_TIME_ACCESS))
		nfstime_to_ts(&fa->time_access, &st->atime);
	if (proto_attrmask_isset(&fa->mask, FATTR4_TIME_MODIFY))
		nfstime_to_ts(&fa->time_modify, &st->mtime);
	if (proto_attrmask_isset(&fa->mask, FATTR4_TIME_METADATA))
		nfstime_to_ts(&fa->time_metadata, &st->ctime);
}

int pc_attr_decode(const fattr4 *in, struct proto_fattr *fa, struct pnfs_stat *st)
{
	int rc;

	memset(fa, 0, sizeof(*fa));
	rc = proto_fattr_decode(in, fa, NULL);
	/* An attribute we did not ask for and do not know ends decoding; what came before is usable. */
	if (rc < 0 && rc != -ENOTSUP)
		return -EBADMSG;
	if (st)
		pc_fattr_to_stat(fa, st);
	return 0;
}

int pc_getattr_reply(struct pc_compound *c, struct proto_fattr *fa, struct pnfs_stat *st)
{
	nfs_resop4 *ga = pc_res_op(c, OP_GETATTR);

	if (c->status < 0)
		return pc_compound_err(c);
	if (!ga || pc_attr_decode(&ga->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, fa, st) < 0)
		return pc_err(c->ctx, -EPROTO, "%s: bad GETATTR reply", c->what);
	return 0;
}

static int fattr_encode(struct pc_compound *c, fattr4 *out, struct proto_fattr *fa);

static void settime(settime4 *st, const struct timespec *ts)
{
	if (ts->tv_nsec == UTIME_NOW) {
		st->set_it = SET_TO_SERVER_TIME4;
	} else {
		st->set_it = SET_TO_CLIENT_TIME4;
		st->settime4_u.time.seconds = ts->tv_sec;
		st->settime4_u.time.nseconds = (uint32_t)ts->tv_nsec;
	}
}

int pc_fattr_times(struct pc_compound *c, fattr4 *out, const struct timespec ts[2])
{
	struct proto_fattr *fa = pc_alloc(c, sizeof(*fa));

	if (!fa)
		return -ENOMEM;
	memset(fa, 0, sizeof(*fa));
	if (ts[0].tv_nsec != UTIME_OMIT) {
		settime(&fa->time_access_set, &ts[0]);
		proto_fattr_set(fa, FATTR4_TIME_ACCESS_SET);
	}
	if (ts[1].tv_nsec != UTIME_OMIT) {
		settime(&fa->time_modify_set, &ts[1]);
		proto_fattr_set(fa, FATTR4_TIME_MODIFY_SET);
	}
	return fattr_encode(c, out, fa);
}

int pc_fattr_mode(struct pc_compound *c, fattr4 *out, int with_mode, uint32_t mode, int with_size,
		  uint64_t size)
{
	struct proto_fattr *fa = pc_alloc(c, sizeof(*fa));

	if (!fa)
		return -ENOMEM;
	memset(fa, 0, sizeof(*fa));
	if (with_mode) {
		fa->mode = mode & 07777;
		proto_fattr_set(fa, FATTR4_MODE);
	}
	if (with_size) {
		fa->size = size;
		proto_fattr_set(fa, FATTR4_SIZE);
	}
	return fattr_encode(c, out, fa);
}

/* Owner and group as numeric strings (RFC 8881 5.9: what a server without id mapping takes);
 * (uint32_t)-1 leaves one unchanged. */
int pc_fattr_owner(struct pc_compound *c, fattr4 *out, uint32_t uid, uint32_t gid)
{
	struct proto_fattr *fa = pc_alloc(c, sizeof(*fa));

	if (!fa)
		return -ENOMEM;
	memset(fa, 0, sizeof(*fa));
	if (uid != (uint32_t)-1) {
		snprintf(fa->owner, sizeof(fa->owner), "%u", uid);
		proto_fattr_set(fa, FATTR4_OWNER);
	}
	if (gid != (uint32_t)-1) {
		snprintf(fa->owner_group, sizeof(fa->owner_group), "%u", gid);
		proto_fattr_set(fa, FATTR4_OWNER_GROUP);
	}
	return fattr_encode(c, out, fa);
}

/* fa encoded into out, the encoding moved into the compound's arena. */
static int fattr_encode(struct pc_compound *c, fattr4 *out, struct proto_fattr *fa)
{
	fattr4 tmp;
	int rc;

	rc = proto_fattr_encode(fa, NULL, &tmp);
	if (rc < 0)
		return rc;
	/* Move the encoder's allocations into the compound's arena. */
	out->attrmask.bitmap4_len = tmp.attrmask.bitmap4_len;
	out->attrmask.bitmap4_val = pc_alloc(c, sizeof(uint32_t) * (tmp.attrmask.bitmap4_len + 1));
	out->attr_vals.attrlist4_len = tmp.attr_vals.attrlist4_len;
	out->attr_vals.attrlist4_val = pc_alloc(c, tmp.attr_vals.attrlist4_len + 1);
	if (out->attrmask.bitmap4_val && out->attr_vals.attrlist4_val) {
		memcpy(out->attrmask.bitmap4_val, tmp.attrmask.bitmap4_val,
		       sizeof(uint32_t) * tmp.attrmask.bitmap4_len);
		memcpy(out->attr_vals.attrlist4_val, tmp.attr_vals.attrlist4_val, tmp.attr_vals.attrlist4_len);
		rc = 0;
	} else {
		rc = -ENOMEM;
	}
	proto_xdr_free((xdrproc_t)xdr_fattr4, &tmp);
	return rc;
}
