/* Discovery: candidate devices from iSCSI portals (SendTargets discovery, then REPORT LUNS on each
 * target), given paths and local block devices (/sys/block), matched to the volume's leaves: a simple
 * volume by its signature (every component must match; negative offsets count from the device's
 * end), a SCSI volume by a logical-unit designator from VPD page 0x83. The context caches each
 * candidate (its open device and the regions read from it), so resolving several volumes, or the
 * same one again, reads each signature region once. */
#include "blkmap/vol_int.h"

#include <dirent.h>
#include <inttypes.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bm_region {
	struct bm_region *next;
	uint64_t off;
	uint32_t len;
	uint8_t *data;
};

struct bm_cand {
	struct bm_cand *next;
	char spec[1100];
	struct blkmap_dev *dev;
	struct bm_region *regions;
	unsigned reads; /* device reads done for this candidate (tests look at the cache through this) */
};

struct bm_cache {
	struct bm_cand *cands;
};

static void cand_free(struct bm_cand *c)
{
	while (c->regions) {
		struct bm_region *r = c->regions;
		c->regions = r->next;
		free(r->data);
		free(r);
	}
	blkmap_dev_close(c->dev);
	free(c);
}

void bm_cache_free(struct blkmap_ctx *ctx)
{
	if (!ctx->cache)
		return;
	while (ctx->cache->cands) {
		struct bm_cand *c = ctx->cache->cands;
		ctx->cache->cands = c->next;
		cand_free(c);
	}
	free(ctx->cache);
	ctx->cache = NULL;
}

void blkmap_cache_flush(struct blkmap_ctx *ctx)
{
	bm_cache_free(ctx);
}

/* The candidates for specs (got[i] NULL where spec i cannot be opened: a controller LUN, a device we
 * may not open), from the cache or opened now, the iSCSI LUNs all at once. Local devices are probed
 * read-only (the host's own disks are among them); the one chosen is opened again for writing when
 * it is bound. The caller's error is kept. */
static void cands_get(struct blkmap_ctx *ctx, char *const *specs, unsigned n, struct bm_cand **got)
{
	const char **todo = calloc(n ? n : 1, sizeof(*todo));
	unsigned *flags = calloc(n ? n : 1, sizeof(*flags)), k = 0;
	struct blkmap_dev **devs = calloc(n ? n : 1, sizeof(*devs));
	struct bm_cand **tail;
	char saved[sizeof(ctx->err)];

	for (unsigned i = 0; i < n; i++)
		got[i] = NULL;
	if (!ctx->cache)
		ctx->cache = calloc(1, sizeof(*ctx->cache));
	if (!ctx->cache || !todo || !flags || !devs)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		int known = 0;
		for (struct bm_cand *c = ctx->cache->cands; c && !got[i]; c = c->next)
			if (!strcmp(c->spec, specs[i]))
				got[i] = c;
		for (unsigned j = 0; j < k && !got[i] && !known; j++)
			known = !strcmp(todo[j], specs[i]);
		if (got[i] || known)
			continue;
		flags[k] = strncmp(specs[i], "iscsi://", 8) ? BLKMAP_OPEN_RDONLY : 0;
		todo[k++] = specs[i];
	}
	memcpy(saved, ctx->err, sizeof(saved));
	bm_dev_open_many(ctx, todo, flags, k, devs);
	memcpy(ctx->err, saved, sizeof(saved));
	for (tail = &ctx->cache->cands; *tail; tail = &(*tail)->next)
		;
	for (unsigned j = 0; j < k; j++) {
		struct bm_cand *c = devs[j] ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			blkmap_dev_close(devs[j]);
			continue;
		}
		snprintf(c->spec, sizeof(c->spec), "%s", todo[j]);
		c->dev = devs[j];
		*tail = c;
		tail = &c->next;
		for (unsigned i = 0; i < n; i++)
			if (!got[i] && !strcmp(specs[i], todo[j]))
				got[i] = c;
	}
out:
	free(todo);
	free(flags);
	free(devs);
}

/* len bytes at off of the candidate, through the region cache */
static int cand_read(struct bm_cand *c, uint64_t off, uint32_t len, uint8_t *out)
{
	uint32_t bs = c->dev->block_bytes;
	uint64_t a0, a1;
	struct bm_region *r;
	int rc;

	for (r = c->regions; r; r = r->next) {
		if (off >= r->off && off + len <= r->off + r->len) {
			memcpy(out, r->data + (off - r->off), len);
			return 0;
		}
	}
	/* read whole blocks, at least 4 KiB, never past the end */
	a0 = off - off % bs;
	a1 = off + len;
	a1 += (bs - a1 % bs) % bs;
	if (a1 - a0 < 4096)
		a1 = a0 + 4096;
	if (a1 > c->dev->size_bytes)
		a1 = c->dev->size_bytes;
	if (a1 <= a0 || a1 - a0 > (64u << 20))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->data = malloc(a1 - a0))) {
		free(r);
		return -ENOMEM;
	}
	rc = blkmap_dev_pread(c->dev, r->data, a1 - a0, a0);
	c->reads++;
	if (rc < 0) {
		free(r->data);
		free(r);
		return rc;
	}
	r->off = a0;
	r->len = (uint32_t)(a1 - a0);
	r->next = c->regions;
	c->regions = r;
	memcpy(out, r->data + (off - a0), len);
	return 0;
}

/* ---- matching --------------------------------------------------------------------------------- */

static int sig_matches(struct bm_cand *c, const struct bm_volent *e, uint8_t *buf)
{
	uint64_t size = c->dev->size_bytes;

	for (unsigned k = 0; k < e->nsig; k++) {
		const struct blkmap_sig_comp *s = &e->sig[k];
		uint64_t at;
		if (s->offset_bytes >= 0) {
			at = (uint64_t)s->offset_bytes;
			if (at > size || s->len > size - at)
				return 0;
		} else {
			uint64_t back = (uint64_t)(-(s->offset_bytes + 1)) + 1;
			if (back > size)
				return 0;
			at = size - back;
			if (s->len > back)
				return 0;
		}
		if (cand_read(c, at, s->len, buf) < 0 || memcmp(buf, s->bytes, s->len) != 0)
			return 0;
	}
	return 1;
}

static int desig_matches(struct bm_cand *c, const struct bm_volent *e)
{
	if (!c->dev->have_inq)
		return 0;
	for (unsigned i = 0; i < c->dev->inq.ndesig; i++) {
		const struct blkmap_designator *d = &c->dev->inq.desig[i];
		if (d->association == 0 && d->type == e->desig.type && d->code_set == e->desig.code_set &&
		    d->len == e->desig.len && memcmp(d->bytes, e->desig.bytes, d->len) == 0)
			return 1;
	}
	return 0;
}

static void describe(const struct bm_volent *e, char *buf, size_t len)
{
	size_t o = 0;

	if (e->type == BLKMAP_VOL_SCSI) {
		o += (size_t)snprintf(buf, len, "designator ");
		blkmap_designator_str(&e->desig, buf + o, len > o ? len - o : 0);
		return;
	}
	o += (size_t)snprintf(buf, len, "signature");
	for (unsigned k = 0; k < e->nsig && o < len; k++) {
		o += (size_t)snprintf(buf + o, len - o, "%s %" PRId64 ":", k ? " and" : "", e->sig[k].offset_bytes);
		for (uint32_t j = 0; j < e->sig[k].len && j < 16 && o < len; j++)
			o += (size_t)snprintf(buf + o, len - o, "%02x", e->sig[k].bytes[j]);
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s (%u bytes)", e->sig[k].len > 16 ? "..." : "",
					      e->sig[k].len);
	}
}

/* ---- candidates from an iSCSI portal ------------------------------------------------------------ */

struct pstep {
	int done;
	int status;
	char **targets;
	unsigned ntargets;
	uint8_t *luns;
	uint32_t lunlen;
};

/* drive one libiscsi context until *done or the deadline */
static int run_one(struct iscsi_context *isc, int *done, int64_t deadline)
{
	while (!*done) {
		struct pollfd p = { .fd = iscsi_get_fd(isc), .events = (short)iscsi_which_events(isc) };
		int64_t left = deadline - bm_now_ms();
		int n;
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)(left > 200 ? 200 : left));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (iscsi_service(isc, n > 0 ? p.revents : 0) < 0 && !*done)
			return -EIO;
	}
	return 0;
}

static void step_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct pstep *s = priv;
	(void)isc;
	(void)data;
	s->status = status;
	s->done = 1;
}

static void disc_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct pstep *s = priv;
	(void)isc;
	s->status = status;
	s->done = 1;
	if (status != SCSI_STATUS_GOOD)
		return;
	for (struct iscsi_discovery_address *a = data; a; a = a->next) {
		char **t = realloc(s->targets, (s->ntargets + 1) * sizeof(*t));
		if (!t)
			return;
		s->targets = t;
		t[s->ntargets] = strdup(a->target_name);
		if (t[s->ntargets])
			s->ntargets++;
	}
}

static void luns_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct pstep *s = priv;
	struct scsi_task *task = data;
	(void)isc;
	s->status = status;
	s->done = 1;
	if (status == SCSI_STATUS_GOOD && task && task->datain.size > 0) {
		s->luns = malloc((size_t)task->datain.size);
		if (s->luns) {
			memcpy(s->luns, task->datain.data, (size_t)task->datain.size);
			s->lunlen = (uint32_t)task->datain.size;
		}
	}
	if (task)
		scsi_free_scsi_task(task);
}

static struct iscsi_context *portal_session(struct blkmap_ctx *ctx, const char *portal, const char *user,
					    const char *pass, const char *target, int64_t deadline, char *why,
					    size_t whylen)
{
	struct iscsi_context *isc = iscsi_create_context(ctx->initiator);
	struct pstep s = { 0 };

	if (!isc) {
		snprintf(why, whylen, "cannot create an iSCSI context");
		return NULL;
	}
	iscsi_set_session_type(isc, target ? ISCSI_SESSION_NORMAL : ISCSI_SESSION_DISCOVERY);
	if (target)
		iscsi_set_targetname(isc, target);
	iscsi_set_header_digest(isc, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	if (user[0])
		iscsi_set_initiator_username_pwd(isc, user, pass);
	if (iscsi_connect_async(isc, portal, step_cb, &s) != 0 || run_one(isc, &s.done, deadline) < 0 ||
	    s.status != SCSI_STATUS_GOOD) {
		snprintf(why, whylen, "connect to %s: %s", portal, iscsi_get_error(isc));
		goto fail;
	}
	s.done = 0;
	if (iscsi_login_async(isc, step_cb, &s) != 0 || run_one(isc, &s.done, deadline) < 0 ||
	    s.status != SCSI_STATUS_GOOD) {
		snprintf(why, whylen, "login to %s%s%s: %s", portal, target ? " target " : "", target ? target : "",
			 iscsi_get_error(isc));
		goto fail;
	}
	return isc;
fail:
	iscsi_destroy_context(isc);
	return NULL;
}

static void session_end(struct iscsi_context *isc, int64_t deadline)
{
	struct pstep s = { 0 };
	if (iscsi_logout_async(isc, step_cb, &s) == 0)
		run_one(isc, &s.done, deadline);
	iscsi_destroy_context(isc);
}

/* Append candidate URLs for every data LUN behind the portal. Returns 0 or -errno (error text set). */
static int portal_luns(struct blkmap_ctx *ctx, const char *url, char ***specs, unsigned *nspecs)
{
	struct iscsi_context *tmp = iscsi_create_context(ctx->initiator), *isc;
	struct iscsi_url *u;
	char portal[300], user[256], pass[256], cred[600] = "", why[400];
	int64_t deadline = bm_now_ms() + ctx->timeout_ms;
	struct pstep s = { 0 };
	int rc = 0;

	if (!tmp)
		return bm_err(ctx, -ENOMEM, "out of memory");
	u = iscsi_parse_portal_url(tmp, url);
	if (!u) {
		rc = bm_err(ctx, -EINVAL, "%s: not an iSCSI portal URL (iscsi://[user%%pass@]host[:port]): %s", url,
			    iscsi_get_error(tmp));
		iscsi_destroy_context(tmp);
		return rc;
	}
	snprintf(portal, sizeof(portal), "%s", u->portal);
	snprintf(user, sizeof(user), "%s", u->user);
	snprintf(pass, sizeof(pass), "%s", u->passwd);
	iscsi_destroy_url(u);
	iscsi_destroy_context(tmp);
	if (user[0])
		snprintf(cred, sizeof(cred), "%s%%%s@", user, pass);

	isc = portal_session(ctx, portal, user, pass, NULL, deadline, why, sizeof(why));
	if (!isc)
		return bm_err(ctx, -ECONNREFUSED, "portal %s: %s", url, why);
	if (iscsi_discovery_async(isc, disc_cb, &s) != 0 || run_one(isc, &s.done, deadline) < 0 ||
	    s.status != SCSI_STATUS_GOOD) {
		rc = bm_err(ctx, -EIO, "portal %s: SendTargets discovery failed: %s", url, iscsi_get_error(isc));
		session_end(isc, deadline);
		goto out;
	}
	session_end(isc, deadline);
	for (unsigned t = 0; t < s.ntargets; t++) {
		struct pstep l = { 0 };
		isc = portal_session(ctx, portal, user, pass, s.targets[t], deadline, why, sizeof(why));
		if (!isc)
			continue; /* a target that will not take us is no candidate */
		if (iscsi_reportluns_task(isc, 0, 16384, luns_cb, &l) && run_one(isc, &l.done, deadline) == 0 &&
		    l.status == SCSI_STATUS_GOOD && l.lunlen >= 8) {
			uint32_t listlen = (uint32_t)l.luns[0] << 24 | (uint32_t)l.luns[1] << 16 | (uint32_t)l.luns[2] << 8 |
					   l.luns[3];
			for (uint32_t o = 8; o + 8 <= l.lunlen && o < 8 + (uint64_t)listlen; o += 8) {
				/* peripheral (00b) or flat (01b) addressing: 14-bit LUN */
				unsigned lun = ((unsigned)(l.luns[o] & 0x3f) << 8) | l.luns[o + 1];
				char **n = realloc(*specs, (*nspecs + 1) * sizeof(*n));
				if (!n)
					break;
				*specs = n;
				if (asprintf(&n[*nspecs], "iscsi://%s%s/%s/%u", cred, portal, s.targets[t], lun) >= 0)
					(*nspecs)++;
			}
		}
		free(l.luns);
		session_end(isc, deadline);
	}
out:
	for (unsigned t = 0; t < s.ntargets; t++)
		free(s.targets[t]);
	free(s.targets);
	return rc;
}

/* ---- local block devices --------------------------------------------------------------------- */

static int local_kind(const char *n)
{
	static const char *const prefixes[] = { "loop", "sd", "dm-", "vd", "nvme", "xvd" };
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(n, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

static void local_devices(const char *sysfs, char ***specs, unsigned *nspecs)
{
	DIR *d = opendir(sysfs);
	struct dirent *de;
	char **names = NULL;
	unsigned n = 0;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[600], buf[64];
		FILE *f;
		unsigned long long sectors = 0;
		if (de->d_name[0] == '.' || !local_kind(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/size", sysfs, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			sectors = strtoull(buf, NULL, 10);
		fclose(f);
		if (sectors == 0)
			continue; /* an unattached loop device */
		{
			char **x = realloc(names, (n + 1) * sizeof(*x));
			if (!x)
				break;
			names = x;
			if (asprintf(&names[n], "/dev/%s", de->d_name) >= 0)
				n++;
		}
	}
	closedir(d);
	/* stable order: by name */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (unsigned i = 0; i < n; i++) {
		char **x = realloc(*specs, (*nspecs + 1) * sizeof(*x));
		if (!x) {
			free(names[i]);
			continue;
		}
		*specs = x;
		x[(*nspecs)++] = names[i];
	}
	free(names);
}

/* ---- resolve ---------------------------------------------------------------------------------- */

void blkmap_report_free(struct blkmap_report *rep)
{
	if (!rep)
		return;
	for (unsigned i = 0; i < rep->ncandidates; i++)
		free(rep->candidate_names[i]);
	free(rep->candidate_names);
	free(rep->matches);
	free(rep);
}

int blkmap_resolve(struct blkmap_ctx *ctx, struct blkmap_vol *vol, const struct blkmap_discover_opts *opts,
		   struct blkmap_report **repp)
{
	struct blkmap_discover_opts none = { 0 };
	struct blkmap_report *rep = calloc(1, sizeof(*rep));
	struct bm_cand **cands = NULL, **chosen = NULL, **got = NULL;
	char **specs = NULL;
	unsigned nspecs = 0, ncands = 0;
	uint8_t *buf = NULL;
	char portal_err[sizeof(ctx->err) + 2] = "";
	int rc = 0;

	if (repp)
		*repp = NULL;
	if (!opts)
		opts = &none;
	if (!rep)
		return bm_err(ctx, -ENOMEM, "out of memory");
	if (vol->n == 0) {
		rc = bm_err(ctx, -EINVAL, "resolve: the volume array is empty");
		goto out;
	}
	/* resolving replaces the bindings; the structure is checked first, sizes come with the devices */
	for (unsigned i = 0; i < vol->n; i++)
		if (vol->v[i].type == BLKMAP_VOL_SIMPLE || vol->v[i].type == BLKMAP_VOL_SCSI)
			blkmap_vol_bind(vol, i, NULL);
	rc = blkmap_vol_validate(vol);
	if (rc < 0) {
		rc = bm_err(ctx, rc, "resolve: %s", blkmap_vol_errstr(vol));
		goto out;
	}
	/* a portal that does not answer is not fatal while the leaves are found elsewhere */
	for (unsigned i = 0; i < opts->nportals; i++) {
		if (portal_luns(ctx, opts->portals[i], &specs, &nspecs) < 0 && !portal_err[0])
			snprintf(portal_err, sizeof(portal_err), "; %s", ctx->err);
	}
	rc = 0;
	for (unsigned i = 0; i < opts->npaths; i++) {
		char **x = realloc(specs, (nspecs + 1) * sizeof(*x));
		if (!x) {
			rc = bm_err(ctx, -ENOMEM, "out of memory");
			goto out;
		}
		specs = x;
		specs[nspecs] = strdup(opts->paths[i]);
		if (specs[nspecs])
			nspecs++;
	}
	if (opts->scan_local)
		local_devices(opts->sysfs_block ? opts->sysfs_block : "/sys/block", &specs, &nspecs);

	cands = calloc(nspecs ? nspecs : 1, sizeof(*cands));
	got = calloc(nspecs ? nspecs : 1, sizeof(*got));
	chosen = calloc(vol->n, sizeof(*chosen));
	buf = malloc(BLKMAP_MAX_SIG_BYTES);
	rep->candidate_names = calloc(nspecs ? nspecs : 1, sizeof(char *));
	rep->matches = calloc(vol->n, sizeof(*rep->matches));
	if (!cands || !got || !chosen || !buf || !rep->candidate_names || !rep->matches) {
		rc = bm_err(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	cands_get(ctx, specs, nspecs, got);
	for (unsigned i = 0; i < nspecs; i++) {
		struct bm_cand *c = got[i];
		int dup = 0;
		if (!c)
			continue;
		for (unsigned k = 0; k < ncands; k++)
			dup |= cands[k] == c;
		if (dup)
			continue;
		cands[ncands++] = c;
		rep->candidate_names[rep->ncandidates] = strdup(c->dev->name);
		if (rep->candidate_names[rep->ncandidates])
			rep->ncandidates++;
	}
	for (unsigned i = 0; i < vol->n; i++) {
		const struct bm_volent *e = &vol->v[i];
		struct blkmap_match *m;
		if (e->type != BLKMAP_VOL_SIMPLE && e->type != BLKMAP_VOL_SCSI)
			continue;
		m = &rep->matches[rep->nmatches++];
		m->leaf = i;
		m->candidates = ncands;
		describe(e, m->how, sizeof(m->how));
		for (unsigned k = 0; k < ncands; k++) {
			int hit = e->type == BLKMAP_VOL_SIMPLE ? sig_matches(cands[k], e, buf) : desig_matches(cands[k], e);
			if (!hit)
				continue;
			if (!chosen[i]) {
				chosen[i] = cands[k];
				snprintf(m->dev_name, sizeof(m->dev_name), "%s", cands[k]->dev->name);
			} else {
				m->also_matched++;
			}
		}
		if (!chosen[i]) {
			rc = bm_err(ctx, -ENODEV, "volume %u (%s, %s) matched none of the %u candidate devices%s", i,
				    bm_vol_type_name(e->type), m->how, ncands, portal_err);
			goto out;
		}
		for (unsigned j = 0; j < i; j++) {
			if (chosen[j] == chosen[i]) {
				rc = bm_err(ctx, -EINVAL, "volumes %u and %u both match %s: the volume cannot use one LUN twice",
					    j, i, chosen[i]->dev->name);
				goto out;
			}
		}
	}
	for (unsigned i = 0; i < vol->n; i++) {
		struct bm_cand *c = chosen[i];
		if (!c)
			continue;
		if (c->dev->readonly && c->dev->kind != BLKMAP_DEV_ISCSI) {
			struct blkmap_dev *rw = NULL;
			char saved[sizeof(ctx->err)];
			memcpy(saved, ctx->err, sizeof(saved));
			if (blkmap_dev_open(ctx, c->spec, 0, &rw) == 0) {
				blkmap_dev_close(c->dev);
				c->dev = rw;
			} else {
				memcpy(ctx->err, saved, sizeof(saved)); /* bound read-only: writes say so */
			}
		}
		blkmap_vol_bind(vol, i, c->dev);
	}
	rc = blkmap_vol_validate(vol);
	if (rc < 0) {
		rc = bm_err(ctx, rc, "resolve: with the devices found: %s", blkmap_vol_errstr(vol));
		for (unsigned i = 0; i < vol->n; i++)
			if (chosen[i])
				blkmap_vol_bind(vol, i, NULL);
	}
out:
	for (unsigned i = 0; i < nspecs; i++)
		free(specs[i]);
	free(specs);
	free(cands);
	free(got);
	free(chosen);
	free(buf);
	if (repp)
		*repp = rep;
	else
		blkmap_report_free(rep);
	return rc;
}

unsigned bm_cache_reads(struct blkmap_ctx *ctx, const char *name)
{
	if (!ctx->cache)
		return 0;
	for (struct bm_cand *c = ctx->cache->cands; c; c = c->next)
		if (!strcmp(c->dev->name, name))
			return c->reads;
	return 0;
}
