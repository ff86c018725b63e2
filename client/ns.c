/* Namespace calls: stat, identity, statfs, chmod, mkdir, unlink, rename, link, symlink, readlink and whole-directory
 * reads. Each is one compound (a READDIR is one per batch of entries) built on the path walk. */
#include "client/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ns_call {
	struct pc_call call;
	struct pnfs_stat st;
	struct pnfs_identity id;
	struct pnfs_statfs sf;
	char *text;
	struct pnfs_dir *dir;
	uint8_t dirfh[NFS4_FHSIZE];
	uint32_t dirfhlen;
	char *path;
};

struct pnfs_dir {
	struct pnfs_dirent *ents;
	unsigned n, pos;
	size_t cap;
	char **names;
};

static void ns_free(struct ns_call *nc)
{
	free(nc->text);
	free(nc->path);
}

/* Finish a namespace call: status, data; the call is freed. */
static void ns_done(struct ns_call *nc, int status, void *data)
{
	char *text = nc->text, *path = nc->path;
	nc->text = NULL;
	nc->path = NULL;
	pc_call_complete(&nc->call, status, data);
	free(text);
	free(path);
}

/* A compound for a call on path: the walk to the object (parent 0) or to its parent directory
 * (parent 1, *leaf the last name). Returns NULL with the call completed later on failure. */
static struct pc_compound *path_compound(struct ns_call *nc, const char *opname, const char *path, int parent,
					 const char **leaf, void (*done)(struct pc_compound *))
{
	struct pnfs_context *ctx = nc->call.ctx;
	struct pc_compound *c = pc_compound_new(ctx, "%s %s", opname, pc_path_show(ctx, path));
	const char *comp[PC_PATH_MAX_DEPTH];
	int n, rc;

	if (!c) {
		pc_err(ctx, -ENOMEM, "out of memory");
		pc_call_complete_later(&nc->call, -ENOMEM);
		return NULL;
	}
	n = pc_path_split(c, path, comp, PC_PATH_MAX_DEPTH);
	if (n >= 0 && parent && (n == 0 || strcmp(comp[n - 1], "..") == 0))
		n = -EINVAL;
	if (n < 0) {
		rc = pc_err(ctx, n, "%s: %s", c->what,
			    n == -EINVAL ? "needs a name (not the root, not \"..\")" : strerror(-n));
		goto fail;
	}
	if (parent) {
		*leaf = comp[n - 1];
		n--;
	}
	rc = pc_add_walk(c, comp, n);
	if (rc < 0) {
		pc_err(ctx, rc, "%s: %s", c->what, rc == -ENAMETOOLONG ? "too many path components" : strerror(-rc));
		goto fail;
	}
	c->done = done;
	c->priv = nc;
	return c;
fail:
	pc_compound_free(c);
	pc_call_complete_later(&nc->call, rc);
	return NULL;
}

static struct ns_call *ns_new(struct pnfs_context *ctx, pnfs_cb cb, void *priv)
{
	struct ns_call *nc;

	if (!ctx->mounted) {
		pc_err(ctx, -ENOTCONN, "not mounted");
		return NULL;
	}
	nc = (struct ns_call *)pc_call_new(ctx, sizeof(*nc), cb, priv);
	if (!nc)
		pc_err(ctx, -ENOMEM, "out of memory");
	return nc;
}

#define NS_START(ctx, cb, priv)                                         \
	struct ns_call *nc = ns_new(ctx, cb, priv);                     \
	if (!nc)                                                        \
		return ctx->mounted ? -ENOMEM : -ENOTCONN

/* A query on the object path names: the walk, then GETATTR of mask (NULL: GETFH); done decodes the
 * reply and completes the call. */
static int path_query(struct pnfs_context *ctx, const char *opname, const char *path, const struct proto_attrmask *mask,
		      void (*done)(struct pc_compound *), pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	struct pc_compound *c = path_compound(nc, opname, path, 0, NULL, done);

	if (!c)
		return 0;
	if (mask)
		pc_add_getattr(c, mask);
	else
		pc_add_getfh(c);
	pc_submit(c);
	return 0;
}

/* ---- stat, statfs, chmod ---------------------------------------------------------------------- */

static void stat_done(struct pc_compound *c)
{
	struct ns_call *nc = c->priv;
	struct proto_fattr fa;
	int rc = pc_getattr_reply(c, &fa, &nc->st);

	pc_compound_free(c);
	ns_done(nc, rc, rc < 0 ? NULL : &nc->st);
}

int pnfs_stat_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data)
{
	return path_query(ctx, "stat", path, &pc_attrs_stat, stat_done, cb, private_data);
}

/* ---- identity --------------------------------------------------------------------------------- */

static void identity_server(struct pnfs_context *ctx, struct pnfs_identity *id)
{
	id->major_len = ctx->server_major_len;
	memcpy(id->major, ctx->server_major, id->major_len);
	id->scope_len = ctx->server_scope_len;
	memcpy(id->scope, ctx->server_scope, id->scope_len);
}

static void identity_done(struct pc_compound *c)
{
	struct ns_call *nc = c->priv;
	nfs_resop4 *gfh = pc_res_op(c, OP_GETFH);
	int rc = c->status;

	if (rc < 0) {
		pc_compound_err(c);
	} else if (!gfh || gfh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len > sizeof(nc->id.fh)) {
		rc = pc_err(c->ctx, -EPROTO, "%s: bad GETFH reply", c->what);
	} else {
		nfs_fh4 *f = &gfh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
		memset(&nc->id, 0, sizeof(nc->id));
		identity_server(c->ctx, &nc->id);
		nc->id.fh_len = f->nfs_fh4_len;
		memcpy(nc->id.fh, f->nfs_fh4_val, f->nfs_fh4_len);
	}
	pc_compound_free(c);
	ns_done(nc, rc, rc < 0 ? NULL : &nc->id);
}

int pnfs_identity_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data)
{
	return path_query(ctx, "lookup", path, NULL, identity_done, cb, private_data);
}

int pnfs_fh_identity(struct pnfs_fh *fh, struct pnfs_identity *out)
{
	memset(out, 0, sizeof(*out));
	identity_server(fh->ctx, out);
	out->fh_len = fh->fhlen;
	memcpy(out->fh, fh->fh, fh->fhlen);
	return 0;
}

int pnfs_identity_equal(const struct pnfs_identity *a, const struct pnfs_identity *b)
{
	return a->major_len == b->major_len && a->scope_len == b->scope_len && a->fh_len == b->fh_len &&
	       a->fh_len > 0 && memcmp(a->major, b->major, a->major_len) == 0 &&
	       memcmp(a->scope, b->scope, a->scope_len) == 0 && memcmp(a->fh, b->fh, a->fh_len) == 0;
}

static void statfs_done(struct pc_compound *c)
{
	struct ns_call *nc = c->priv;
	struct proto_fattr fa;
	int rc = pc_getattr_reply(c, &fa, NULL);

	if (rc == 0) {
		struct pnfs_statfs *sf = &nc->sf;
		*sf = (struct pnfs_statfs){
			.total_bytes = fa.space_total, .free_bytes = fa.space_free, .avail_bytes = fa.space_avail,
			.total_files = fa.files_total, .free_files = fa.files_free, .avail_files = fa.files_avail,
		};
		if (proto_attrmask_isset(&fa.mask, FATTR4_LAYOUT_BLKSIZE))
			sf->layout_blksize = fa.layout_blksize;
		if (proto_attrmask_isset(&fa.mask, FATTR4_FS_LAYOUT_TYPES)) {
			sf->nlayout_types = fa.fs_layout_types_len < 8 ? fa.fs_layout_types_len : 8;
			for (unsigned i = 0; i < sf->nlayout_types; i++)
				sf->layout_types[i] = fa.fs_layout_types[i];
		}
	}
	pc_compound_free(c);
	ns_done(nc, rc, rc < 0 ? NULL : &nc->sf);
}

int pnfs_statfs_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data)
{
	return path_query(ctx, "statfs", path, &pc_attrs_fs, statfs_done, cb, private_data);
}

static void status_done(struct pc_compound *c)
{
	struct ns_call *nc = c->priv;
	int rc = c->status;

	if (rc < 0)
		pc_compound_err(c);
	pc_compound_free(c);
	ns_done(nc, rc, NULL);
}

/* What a SETATTR by path sets: one kind of attribute. */
struct ns_attrs {
	enum { NS_SET_MODE, NS_SET_OWNER, NS_SET_TIMES } what;
	uint32_t mode, uid, gid;
	const struct timespec *ts;  /* borrowed for the call that takes the struct */
};

/* One SETATTR on the object path names (PUTROOTFH, LOOKUPs, SETATTR); cb gets the status. */
static int setattr_path(struct pnfs_context *ctx, const char *opname, const char *path, const struct ns_attrs *a,
			pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	struct pc_compound *c = path_compound(nc, opname, path, 0, NULL, status_done);
	nfs_argop4 *op;
	fattr4 *out;
	int rc = 0;

	if (!c)
		return 0;
	c->cachethis = 1;
	op = pc_add(c, OP_SETATTR);
	if (op) {
		out = &op->nfs_argop4_u.opsetattr.obj_attributes;
		switch (a->what) {
		case NS_SET_MODE: rc = pc_fattr_mode(c, out, 1, a->mode, 0, 0); break;
		case NS_SET_OWNER: rc = pc_fattr_owner(c, out, a->uid, a->gid); break;
		case NS_SET_TIMES: rc = pc_fattr_times(c, out, a->ts); break;
		}
		if (rc < 0)
			c->status = -ENOMEM;
	}
	pc_submit(c);
	return 0;
}

int pnfs_chmod_async(struct pnfs_context *ctx, const char *path, uint32_t mode, pnfs_cb cb, void *private_data)
{
	struct ns_attrs a = { .what = NS_SET_MODE, .mode = mode };
	return setattr_path(ctx, "chmod", path, &a, cb, private_data);
}

int pnfs_chown_async(struct pnfs_context *ctx, const char *path, uint32_t uid, uint32_t gid, pnfs_cb cb,
		     void *private_data)
{
	struct ns_attrs a = { .what = NS_SET_OWNER, .uid = uid, .gid = gid };
	return setattr_path(ctx, "chown", path, &a, cb, private_data);
}

int pnfs_utimens_async(struct pnfs_context *ctx, const char *path, const struct timespec ts[2], pnfs_cb cb,
		       void *private_data)
{
	struct ns_attrs a = { .what = NS_SET_TIMES, .ts = ts };
	return setattr_path(ctx, "utimens", path, &a, cb, private_data);
}

/* ---- mkdir, unlink, rename, symlink ------------------------------------------------------------ */

/* CREATE of leaf, of type, with mode, in the directory the walk reached: its arguments, for the
 * type's own fields, or NULL when the op could not be added (c has failed). */
static CREATE4args *add_create(struct pc_compound *c, nfs_ftype4 type, const char *leaf, uint32_t mode)
{
	nfs_argop4 *op;
	CREATE4args *a;

	c->cachethis = 1;
	op = pc_add(c, OP_CREATE);
	if (!op)
		return NULL;
	a = &op->nfs_argop4_u.opcreate;
	a->objtype.type = type;
	pc_utf8(&a->objname, leaf);
	if (pc_fattr_mode(c, &a->createattrs, 1, mode, 0, 0) < 0)
		c->status = -ENOMEM;
	return a;
}

int pnfs_mkdir_async(struct pnfs_context *ctx, const char *path, uint32_t mode, pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	const char *leaf = NULL;
	struct pc_compound *c = path_compound(nc, "mkdir", path, 1, &leaf, status_done);

	if (!c)
		return 0;
	add_create(c, NF4DIR, leaf, mode);
	pc_submit(c);
	return 0;
}

int pnfs_mknod_async(struct pnfs_context *ctx, const char *path, uint32_t mode, uint32_t major, uint32_t minor,
		     pnfs_cb cb, void *private_data)
{
	nfs_ftype4 type;
	const char *leaf = NULL;
	struct pc_compound *c;
	CREATE4args *a;

	switch (mode & S_IFMT) {
	case S_IFIFO: type = NF4FIFO; break;
	case S_IFSOCK: type = NF4SOCK; break;
	case S_IFCHR: type = NF4CHR; break;
	case S_IFBLK: type = NF4BLK; break;
	default:
		return pc_err(ctx, -EINVAL, "mknod %s: type 0%o is not a special file (FIFO, socket, device)",
			      pc_path_show(ctx, path), (unsigned)(mode & S_IFMT));
	}
	NS_START(ctx, cb, private_data);
	c = path_compound(nc, "mknod", path, 1, &leaf, status_done);
	if (!c)
		return 0;
	a = add_create(c, type, leaf, mode & 07777);
	if (a && (type == NF4CHR || type == NF4BLK)) {
		a->objtype.createtype4_u.devdata.specdata1 = major;
		a->objtype.createtype4_u.devdata.specdata2 = minor;
	}
	pc_submit(c);
	return 0;
}

int pnfs_unlink_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	const char *leaf = NULL;
	struct pc_compound *c = path_compound(nc, "remove", path, 1, &leaf, status_done);
	nfs_argop4 *op;

	if (!c)
		return 0;
	c->cachethis = 1;
	op = pc_add(c, OP_REMOVE);
	if (op)
		pc_utf8(&op->nfs_argop4_u.opremove.target, leaf);
	pc_submit(c);
	return 0;
}

/* The second path of a call on two (rename, link): SAVEFH (the first walk's object), then the walk
 * to the directory of path, whose last name goes to *leaf; c's "what" gains " to PATH". 0, or -errno
 * with the context error set (kind names the path in it: "target", "new"). */
static int add_second_path(struct pc_compound *c, const char *path, const char *kind, const char **leaf)
{
	struct pnfs_context *ctx = c->ctx;
	const char *comp[PC_PATH_MAX_DEPTH];
	int n, rc;

	snprintf(c->what + strlen(c->what), sizeof(c->what) - strlen(c->what), " to %s", pc_path_show(ctx, path));
	c->cachethis = 1;
	pc_add(c, OP_SAVEFH);
	n = pc_path_split(c, path, comp, PC_PATH_MAX_DEPTH);
	if (n <= 0 || strcmp(comp[n - 1], "..") == 0)
		return pc_err(ctx, n < 0 ? n : -EINVAL, "%s: bad %s path", c->what, kind);
	*leaf = comp[n - 1];
	rc = pc_add_walk(c, comp, n - 1);
	if (rc < 0)
		return pc_err(ctx, rc, "%s: too many path components", c->what);
	return 0;
}

/* A call that failed before it went out: c is freed, the call completes with rc from the loop. */
static int ns_fail(struct ns_call *nc, struct pc_compound *c, int rc)
{
	pc_compound_free(c);
	pc_call_complete_later(&nc->call, rc);
	return 0;
}

/* A call on two paths (rename, link): the walk to from (to its directory when from_parent), SAVEFH,
 * the walk to the directory of to, then the op with the last names. */
static int two_path_call(struct pnfs_context *ctx, const char *opname, nfs_opnum4 opnum, const char *from,
			 int from_parent, const char *to, const char *to_kind, pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	const char *from_leaf = NULL, *to_leaf = NULL;
	struct pc_compound *c = path_compound(nc, opname, from, from_parent, &from_leaf, status_done);
	nfs_argop4 *op;
	int rc;

	if (!c)
		return 0;
	rc = add_second_path(c, to, to_kind, &to_leaf);
	if (rc < 0)
		return ns_fail(nc, c, rc);
	op = pc_add(c, opnum);
	if (op && opnum == OP_RENAME) {
		pc_utf8(&op->nfs_argop4_u.oprename.oldname, from_leaf);
		pc_utf8(&op->nfs_argop4_u.oprename.newname, to_leaf);
	} else if (op) {
		pc_utf8(&op->nfs_argop4_u.oplink.newname, to_leaf);
	}
	pc_submit(c);
	return 0;
}

int pnfs_rename_async(struct pnfs_context *ctx, const char *from, const char *to, pnfs_cb cb,
		      void *private_data)
{
	return two_path_call(ctx, "rename", OP_RENAME, from, 1, to, "target", cb, private_data);
}

/* LINK: the walk to the existing object, SAVEFH, the walk to the new name's directory, LINK. */
int pnfs_link_async(struct pnfs_context *ctx, const char *existing, const char *newpath, pnfs_cb cb,
		    void *private_data)
{
	return two_path_call(ctx, "link", OP_LINK, existing, 0, newpath, "new", cb, private_data);
}

int pnfs_symlink_async(struct pnfs_context *ctx, const char *target, const char *linkpath, pnfs_cb cb,
		       void *private_data)
{
	NS_START(ctx, cb, private_data);
	const char *leaf = NULL;
	struct pc_compound *c = path_compound(nc, "symlink", linkpath, 1, &leaf, status_done);
	CREATE4args *a;
	char *t;

	if (!c)
		return 0;
	if (strlen(target) > PROTO_LINKTEXT_MAX)
		return ns_fail(nc, c, pc_err(ctx, -ENAMETOOLONG, "symlink target too long"));
	t = pc_strdup(c, target);
	a = add_create(c, NF4LNK, leaf, 0777);
	if (a && t) {
		a->objtype.createtype4_u.linkdata.linktext4_val = t;
		a->objtype.createtype4_u.linkdata.linktext4_len = (u_int)strlen(t);
	}
	pc_submit(c);
	return 0;
}

static void readlink_done(struct pc_compound *c)
{
	struct ns_call *nc = c->priv;
	int rc;
	nfs_resop4 *rl = pc_result(c, OP_READLINK, &rc);

	if (rl) {
		linktext4 *l = &rl->nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link;
		nc->text = malloc(l->linktext4_len + 1);
		if (!nc->text) {
			rc = pc_err(c->ctx, -ENOMEM, "out of memory");
		} else {
			memcpy(nc->text, l->linktext4_val, l->linktext4_len);
			nc->text[l->linktext4_len] = 0;
			rc = (int)l->linktext4_len;
		}
	}
	pc_compound_free(c);
	ns_done(nc, rc, rc < 0 ? NULL : nc->text);
}

int pnfs_readlink_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	struct pc_compound *c = path_compound(nc, "readlink", path, 0, NULL, readlink_done);
	if (!c)
		return 0;
	pc_add(c, OP_READLINK);
	pc_submit(c);
	return 0;
}

/* ---- directories ------------------------------------------------------------------------------- */

void pnfs_closedir(struct pnfs_dir *dir)
{
	if (!dir)
		return;
	for (unsigned i = 0; i < dir->n; i++)
		free((char *)dir->ents[i].name);
	free(dir->ents);
	free(dir);
}

const struct pnfs_dirent *pnfs_readdir(struct pnfs_dir *dir)
{
	if (!dir || dir->pos >= dir->n)
		return NULL;
	return &dir->ents[dir->pos++];
}

unsigned pnfs_dir_count(const struct pnfs_dir *dir)
{
	return dir ? dir->n : 0;
}

static int dir_add(struct pnfs_dir *d, const entry4 *e)
{
	struct pnfs_dirent *de = pc_grow(d->ents, &d->cap, d->n, sizeof(*de), 64);
	struct proto_fattr fa;
	char *name;

	if (!de)
		return -ENOMEM;
	d->ents = de;
	name = malloc(e->name.utf8string_len + 1);
	if (!name)
		return -ENOMEM;
	memcpy(name, e->name.utf8string_val, e->name.utf8string_len);
	name[e->name.utf8string_len] = 0;
	de = &d->ents[d->n++];
	memset(de, 0, sizeof(*de));
	de->name = name;
	de->cookie = e->cookie;
	if (pc_attr_decode(&e->attrs, &fa, &de->st) < 0)
		memset(&de->st, 0, sizeof(de->st));
	return 0;
}

static void readdir_send(struct ns_call *nc, uint64_t cookie, const verifier4 verf);

static void readdir_done(struct pc_compound *c)
{
	struct ns_call *nc = c->priv;
	struct pnfs_context *ctx = c->ctx;
	nfs_resop4 *rd, *fh = pc_res_op(c, OP_GETFH);
	READDIR4resok *ok;
	uint64_t last = 0;
	int rc;

	rd = pc_result(c, OP_READDIR, &rc);
	if (!rd)
		goto fail;
	if (fh) {
		nfs_fh4 *o = &fh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
		if (o->nfs_fh4_len == 0 || o->nfs_fh4_len > NFS4_FHSIZE) {
			rc = pc_err(ctx, -EPROTO, "%s: bad file handle", c->what);
			goto fail;
		}
		memcpy(nc->dirfh, o->nfs_fh4_val, o->nfs_fh4_len);
		nc->dirfhlen = o->nfs_fh4_len;
	}
	ok = &rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
	for (entry4 *e = ok->reply.entries; e; e = e->nextentry) {
		if (dir_add(nc->dir, e) < 0) {
			rc = pc_err(ctx, -ENOMEM, "out of memory");
			goto fail;
		}
		last = e->cookie;
	}
	if (!ok->reply.eof) {
		if (!ok->reply.entries || nc->dir->n > 10000000) {
			rc = pc_err(ctx, -EPROTO, "%s: the server returned no entries but no end of directory", c->what);
			goto fail;
		}
		verifier4 v;
		memcpy(v, ok->cookieverf, sizeof(v));
		pc_compound_free(c);
		readdir_send(nc, last, v);
		return;
	}
	pc_compound_free(c);
	{
		struct pnfs_dir *d = nc->dir;
		nc->dir = NULL;
		ns_done(nc, 0, d);
	}
	return;
fail:
	pc_compound_free(c);
	pnfs_closedir(nc->dir);
	nc->dir = NULL;
	ns_done(nc, rc, NULL);
}

static void readdir_add(struct pc_compound *c, uint64_t cookie, const verifier4 verf)
{
	struct pnfs_context *ctx = c->ctx;
	nfs_argop4 *op = pc_add(c, OP_READDIR);
	uint32_t maxcount = 256 * 1024;

	if (ctx->fore_maxresp && ctx->fore_maxresp < maxcount + 1024)
		maxcount = ctx->fore_maxresp > 2048 ? ctx->fore_maxresp - 1024 : 1024;
	if (!op)
		return;
	op->nfs_argop4_u.opreaddir.cookie = cookie;
	memcpy(op->nfs_argop4_u.opreaddir.cookieverf, verf, sizeof(verifier4));
	op->nfs_argop4_u.opreaddir.dircount = maxcount / 4;
	op->nfs_argop4_u.opreaddir.maxcount = maxcount;
	{
		uint32_t *w = pc_alloc(c, sizeof(uint32_t) * 2);
		if (!w)
			return;
		w[0] = pc_attrs_stat.w[0];
		w[1] = pc_attrs_stat.w[1];
		op->nfs_argop4_u.opreaddir.attr_request.bitmap4_val = w;
		op->nfs_argop4_u.opreaddir.attr_request.bitmap4_len = 2;
	}
}

static void readdir_send(struct ns_call *nc, uint64_t cookie, const verifier4 verf)
{
	struct pnfs_context *ctx = nc->call.ctx;
	struct pc_compound *c = pc_compound_new(ctx, "readdir %s", pc_path_show(ctx, nc->path));

	if (!c) {
		pnfs_closedir(nc->dir);
		nc->dir = NULL;
		ns_done(nc, pc_err(ctx, -ENOMEM, "out of memory"), NULL);
		return;
	}
	c->done = readdir_done;
	c->priv = nc;
	pc_add_putfh(c, nc->dirfh, nc->dirfhlen);
	readdir_add(c, cookie, verf);
	pc_submit(c);
}

int pnfs_opendir_async(struct pnfs_context *ctx, const char *path, pnfs_cb cb, void *private_data)
{
	NS_START(ctx, cb, private_data);
	struct pc_compound *c;
	verifier4 zero = { 0 };

	nc->dir = calloc(1, sizeof(*nc->dir));
	nc->path = strdup(path ? path : "");
	if (!nc->dir || !nc->path) {
		ns_free(nc);
		free(nc->dir);
		nc->dir = NULL;
		nc->text = nc->path = NULL;
		pc_call_complete_later(&nc->call, pc_err(ctx, -ENOMEM, "out of memory"));
		return 0;
	}
	c = path_compound(nc, "readdir", path, 0, NULL, readdir_done);
	if (!c) {
		pnfs_closedir(nc->dir);
		nc->dir = NULL;
		free(nc->path);
		nc->path = NULL;
		return 0;
	}
	pc_add_getfh(c);
	readdir_add(c, 0, zero);
	pc_submit(c);
	return 0;
}
