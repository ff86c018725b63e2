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
	int read_rc;    /* the last read's failure (0: none): a resolve that finds nothing says it */
	char read_err[400];
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
static void cands_gather(struct blkmap_ctx *ctx, char *const *specs, unsigned n, struct bm_cand **got)
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
	blkmap_dev_open_many(ctx, todo, flags, k, devs, NULL, 0);
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
	c->read_rc = rc < 0 ? rc : 0;
	if (rc < 0) {
		snprintf(c->read_err, sizeof(c->read_err), "%s", blkmap_errstr(c->dev->ctx));
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

/* A portal as given: where to connect, the CHAP credentials, and (once asked) its targets. */
struct portal {
	const char *url;
	char addr[300], user[256], pass[256], cred[600];
	int rc;        /* 0, or why the portal gave no candidates (err) */
	char err[700];
	struct pstep disc; /* the SendTargets answer: the target names */
};

/* One session with a portal: a SendTargets session (target NULL) or one to a target for its REPORT
 * LUNS, each connect, login, question and logout a step; every session of a resolve runs at once. */
enum job_step { J_CONNECT, J_LOGIN, J_ASK, J_LOGOUT, J_DONE };

struct job {
	struct portal *p;
	const char *target;
	struct iscsi_context *isc;
	enum job_step step;
	struct pstep st;   /* connect, login, logout */
	struct pstep ask;  /* the question: SendTargets into p->disc, or REPORT LUNS here */
	int rc;            /* 0 or -errno: no answer to the question */
	char err[500];
};

static struct pstep *job_wait(struct job *j)
{
	return j->step == J_ASK ? (j->target ? &j->ask : &j->p->disc) : &j->st;
}

static void job_end(struct job *j)
{
	if (j->isc)
		iscsi_destroy_context(j->isc);
	j->isc = NULL;
	j->step = J_DONE;
}

static void job_fail(struct job *j, int rc, const char *what)
{
	j->rc = rc;
	snprintf(j->err, sizeof(j->err), "%s%s: %s", what, j->p->addr, iscsi_get_error(j->isc));
	job_end(j);
}

static void job_start(struct blkmap_ctx *ctx, struct job *j)
{
	j->isc = iscsi_create_context(ctx->initiator);
	if (!j->isc) {
		j->rc = -ENOMEM;
		snprintf(j->err, sizeof(j->err), "cannot create an iSCSI context");
		j->step = J_DONE;
		return;
	}
	iscsi_set_session_type(j->isc, j->target ? ISCSI_SESSION_NORMAL : ISCSI_SESSION_DISCOVERY);
	if (j->target)
		iscsi_set_targetname(j->isc, j->target);
	iscsi_set_header_digest(j->isc, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	if (j->p->user[0])
		iscsi_set_initiator_username_pwd(j->isc, j->p->user, j->p->pass);
	j->step = J_CONNECT;
	if (iscsi_connect_async(j->isc, j->p->addr, step_cb, &j->st) != 0)
		job_fail(j, -ECONNREFUSED, "connect to ");
}

/* The step that ended leads to the next. */
static void job_advance(struct job *j)
{
	struct pstep *w = job_wait(j);
	int ok;

	if (j->step == J_DONE || !w->done)
		return;
	ok = w->status == SCSI_STATUS_GOOD;
	switch (j->step) {
	case J_CONNECT:
		if (!ok) {
			job_fail(j, -ECONNREFUSED, "connect to ");
			return;
		}
		j->st = (struct pstep){ 0 };
		j->step = J_LOGIN;
		if (iscsi_login_async(j->isc, step_cb, &j->st) != 0)
			job_fail(j, -ECONNREFUSED, "login to ");
		return;
	case J_LOGIN:
		if (!ok) {
			job_fail(j, -ECONNREFUSED, "login to ");
			return;
		}
		j->step = J_ASK;
		if (j->target ? iscsi_reportluns_task(j->isc, 0, 16384, luns_cb, &j->ask) == NULL
			      : iscsi_discovery_async(j->isc, disc_cb, &j->p->disc) != 0)
			job_fail(j, -EIO, "a question to ");
		return;
	case J_ASK:
		if (!ok) {
			j->rc = -EIO;
			snprintf(j->err, sizeof(j->err), "%s", iscsi_get_error(j->isc));
		}
		j->st = (struct pstep){ 0 };
		j->step = J_LOGOUT;
		if (iscsi_logout_async(j->isc, step_cb, &j->st) != 0)
			job_end(j);
		return;
	case J_LOGOUT:
	case J_DONE:
		job_end(j);
		return;
	}
}

/* Run the jobs' sessions together until every one is done or the deadline passes. */
static void jobs_run(struct job *jobs, unsigned n, int64_t deadline)
{
	struct pollfd *pf = calloc(n ? n : 1, sizeof(*pf));
	unsigned *at = calloc(n ? n : 1, sizeof(*at));

	if (!pf || !at) {
		for (unsigned i = 0; i < n; i++) {
			if (jobs[i].step != J_DONE) {
				jobs[i].rc = -ENOMEM;
				snprintf(jobs[i].err, sizeof(jobs[i].err), "out of memory");
				job_end(&jobs[i]);
			}
		}
		n = 0;
	}
	for (;;) {
		unsigned k = 0;
		int64_t left = deadline - bm_now_ms();
		for (unsigned i = 0; i < n; i++) {
			job_advance(&jobs[i]);
			if (jobs[i].step == J_DONE)
				continue;
			pf[k] = (struct pollfd){ .fd = iscsi_get_fd(jobs[i].isc),
						 .events = (short)iscsi_which_events(jobs[i].isc) };
			at[k++] = i;
		}
		if (k == 0)
			break;
		if (left <= 0) {
			for (unsigned i = 0; i < n; i++) {
				struct job *j = &jobs[i];
				if (j->step == J_DONE)
					continue;
				if (j->step < J_LOGOUT) {
					j->rc = -ETIMEDOUT;
					snprintf(j->err, sizeof(j->err), "no answer from %s within the timeout", j->p->addr);
				}
				job_end(j);
			}
			break;
		}
		if (poll(pf, k, (int)(left > 200 ? 200 : left)) < 0 && errno != EINTR)
			continue;
		for (unsigned q = 0; q < k; q++) {
			struct job *j = &jobs[at[q]];
			if (iscsi_service(j->isc, pf[q].revents) < 0 && !job_wait(j)->done) {
				/* the session broke: the step ends as failed */
				job_wait(j)->status = -1;
				job_wait(j)->done = 1;
			}
		}
	}
	free(pf);
	free(at);
}

/* Append candidate URLs for every data LUN behind the portals (SendTargets, then REPORT LUNS of each
 * target, every portal and target at once), in portal, target and LUN order. A portal that gives
 * none has its rc and err set. */
static void portals_luns(struct blkmap_ctx *ctx, struct portal *ps, unsigned np, char ***specs, unsigned *nspecs)
{
	struct job *jobs = calloc(np ? np : 1, sizeof(*jobs));
	struct bm_sigpipe g;
	unsigned nj = 0;

	/* every session below is connected, questioned and logged out inside this call */
	bm_sigpipe_block(&g);

	for (unsigned i = 0; i < np; i++) {
		struct portal *p = &ps[i];
		struct iscsi_context *tmp = iscsi_create_context(ctx->initiator);
		struct iscsi_url *u = tmp ? iscsi_parse_portal_url(tmp, p->url) : NULL;
		if (!u) {
			p->rc = -EINVAL;
			snprintf(p->err, sizeof(p->err), "%s: not an iSCSI portal URL (iscsi://[user%%pass@]host[:port]): %s",
				 p->url, tmp ? iscsi_get_error(tmp) : "out of memory");
		} else {
			snprintf(p->addr, sizeof(p->addr), "%s", u->portal);
			snprintf(p->user, sizeof(p->user), "%s", u->user);
			snprintf(p->pass, sizeof(p->pass), "%s", u->passwd);
			if (p->user[0])
				snprintf(p->cred, sizeof(p->cred), "%s%%%s@", p->user, p->pass);
			iscsi_destroy_url(u);
		}
		if (tmp)
			iscsi_destroy_context(tmp);
		if (p->rc == 0 && !jobs) {
			p->rc = -ENOMEM;
			snprintf(p->err, sizeof(p->err), "portal %s: out of memory", p->url);
		} else if (p->rc == 0) {
			jobs[nj].p = p;
			job_start(ctx, &jobs[nj++]);
		}
	}
	jobs_run(jobs, nj, bm_now_ms() + ctx->timeout_ms);
	for (unsigned k = 0; k < nj; k++) {
		struct job *j = &jobs[k];
		if (j->rc == 0)
			continue;
		j->p->rc = j->rc;
		if (j->rc == -EIO && j->p->disc.done)
			snprintf(j->p->err, sizeof(j->p->err), "portal %s: SendTargets discovery failed: %s", j->p->url,
				 j->err);
		else
			snprintf(j->p->err, sizeof(j->p->err), "portal %s: %s", j->p->url, j->err);
	}
	free(jobs);
	/* every target of every portal that answered, at once */
	nj = 0;
	for (unsigned i = 0; i < np; i++)
		nj += ps[i].rc == 0 ? ps[i].disc.ntargets : 0;
	jobs = calloc(nj ? nj : 1, sizeof(*jobs));
	nj = 0;
	for (unsigned i = 0; i < np && jobs; i++) {
		for (unsigned t = 0; ps[i].rc == 0 && t < ps[i].disc.ntargets; t++) {
			jobs[nj].p = &ps[i];
			jobs[nj].target = ps[i].disc.targets[t];
			job_start(ctx, &jobs[nj++]);
		}
	}
	jobs_run(jobs, nj, bm_now_ms() + ctx->timeout_ms);
	for (unsigned k = 0; k < nj; k++) {
		/* a target that will not take us, or answer, is no candidate */
		struct job *j = &jobs[k];
		struct pstep *l = &j->ask;
		unsigned *luns = NULL;
		int nl = 0;
		if (j->rc == 0 && l->done && l->status == SCSI_STATUS_GOOD && l->lunlen >= 8 &&
		    (luns = malloc((l->lunlen / 8) * sizeof(*luns))))
			nl = bm_parse_report_luns(l->luns, l->lunlen, luns, l->lunlen / 8);
		for (int i = 0; i < nl; i++) {
			char **n = realloc(*specs, (*nspecs + 1) * sizeof(*n));
			if (!n)
				break;
			*specs = n;
			if (asprintf(&n[*nspecs], "iscsi://%s%s/%s/%u", j->p->cred, j->p->addr, j->target, luns[i]) >= 0)
				(*nspecs)++;
		}
		free(luns);
		free(l->luns);
	}
	free(jobs);
	bm_sigpipe_restore(&g);
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

/* The LUNs of the portals (a portal that does not answer is not fatal while the leaves are found
 * elsewhere: its reason goes to portal_err, for the error if they are not), then the paths and the
 * local block devices, appended to *specs. */
static int gather_specs(struct blkmap_ctx *ctx, const struct blkmap_discover_opts *opts, char ***specs,
			unsigned *nspecs, char *portal_err, size_t errlen)
{
	if (opts->nportals) {
		struct portal *ps = calloc(opts->nportals, sizeof(*ps));
		if (!ps)
			return bm_err(ctx, -ENOMEM, "out of memory");
		for (unsigned i = 0; i < opts->nportals; i++)
			ps[i].url = opts->portals[i];
		portals_luns(ctx, ps, opts->nportals, specs, nspecs);
		for (unsigned i = 0; i < opts->nportals; i++) {
			if (ps[i].rc < 0 && !portal_err[0]) {
				bm_err(ctx, ps[i].rc, "%s", ps[i].err);
				snprintf(portal_err, errlen, "; %s", ps[i].err);
			}
			for (unsigned t = 0; t < ps[i].disc.ntargets; t++)
				free(ps[i].disc.targets[t]);
			free(ps[i].disc.targets);
		}
		free(ps);
	}
	for (unsigned i = 0; i < opts->npaths; i++) {
		char **x = realloc(*specs, (*nspecs + 1) * sizeof(*x));
		if (!x)
			return bm_err(ctx, -ENOMEM, "out of memory");
		*specs = x;
		x[*nspecs] = strdup(opts->paths[i]);
		if (x[*nspecs])
			(*nspecs)++;
	}
	if (opts->scan_local)
		local_devices(opts->sysfs_block ? opts->sysfs_block : "/sys/block", specs, nspecs);
	return 0;
}

/* The distinct candidates of got[0..n) into cands (*ncands), their names into the report. */
static void unique_cands(struct bm_cand **got, unsigned n, struct bm_cand **cands, unsigned *ncands,
			 struct blkmap_report *rep)
{
	for (unsigned i = 0; i < n; i++) {
		struct bm_cand *c = got[i];
		int dup = 0;
		if (!c)
			continue;
		for (unsigned k = 0; k < *ncands; k++)
			dup |= cands[k] == c;
		if (dup)
			continue;
		cands[(*ncands)++] = c;
		rep->candidate_names[rep->ncandidates] = strdup(c->dev->name);
		if (rep->candidate_names[rep->ncandidates])
			rep->ncandidates++;
	}
}

/* Choose the candidate for leaf i (the first that matches; the others are counted), recorded in
 * the report; an error when none does or when an earlier leaf has it already. */
static int match_leaf(struct blkmap_ctx *ctx, const struct blkmap_vol *vol, unsigned i, struct bm_cand **cands,
		      unsigned ncands, struct bm_cand **chosen, uint8_t *buf, struct blkmap_report *rep,
		      const char *portal_err)
{
	const struct bm_volent *e = &vol->v[i];
	struct blkmap_match *m = &rep->matches[rep->nmatches++];

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
		/* a candidate whose bytes could not be read may be the one (a reservation keeping this
		 * initiator out, a LUN gone): say so */
		char unread[sizeof(cands[0]->read_err) + 40] = "";
		for (unsigned k = 0; k < ncands && !unread[0]; k++)
			if (cands[k]->read_rc < 0)
				snprintf(unread, sizeof(unread), "; a candidate could not be read: %s", cands[k]->read_err);
		return bm_err(ctx, -ENODEV, "volume %u (%s, %s) matched none of the %u candidate devices%s%s", i,
			      blkmap_vol_type_name(e->type), m->how, ncands, unread, portal_err);
	}
	for (unsigned j = 0; j < i; j++)
		if (chosen[j] == chosen[i])
			return bm_err(ctx, -EINVAL, "volumes %u and %u both match %s: the volume cannot use one LUN twice",
				      j, i, chosen[i]->dev->name);
	return 0;
}

/* Bind each leaf to its chosen device, reopened read-write where it was found read-only (a local
 * device; an iSCSI LUN is opened for both already), and check the sizes. */
static int bind_chosen(struct blkmap_ctx *ctx, struct blkmap_vol *vol, struct bm_cand **chosen)
{
	int rc;

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
	return rc;
}

static int is_leaf(const struct bm_volent *e)
{
	return e->type == BLKMAP_VOL_SIMPLE || e->type == BLKMAP_VOL_SCSI;
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
		if (is_leaf(&vol->v[i]))
			blkmap_vol_bind(vol, i, NULL);
	rc = blkmap_vol_validate(vol);
	if (rc < 0) {
		rc = bm_err(ctx, rc, "resolve: %s", blkmap_vol_errstr(vol));
		goto out;
	}
	rc = gather_specs(ctx, opts, &specs, &nspecs, portal_err, sizeof(portal_err));
	if (rc < 0)
		goto out;
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
	cands_gather(ctx, specs, nspecs, got);
	unique_cands(got, nspecs, cands, &ncands, rep);
	for (unsigned i = 0; i < vol->n; i++) {
		if (!is_leaf(&vol->v[i]))
			continue;
		rc = match_leaf(ctx, vol, i, cands, ncands, chosen, buf, rep, portal_err);
		if (rc < 0)
			goto out;
	}
	rc = bind_chosen(ctx, vol, chosen);
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
