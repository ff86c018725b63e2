/* The pool's I/O half: formatting a pool directory on LUNs (labels, store, pool.conf, volume.xdr),
 * probing the LUNs' labels for status, and opening a pool at server start, where a LUN that is
 * missing or not the one the store expects fails the open with its URL and the reason. All LUN I/O
 * goes through blkmap's device layer (sync calls); the rules themselves live in pool_label.c. */
#include "mds/pool.h"

#include "blkmap/blkmap.h"
#include "nfs41.h"
#include "proto/layout.h"
#include "proto/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mds_pool {
	struct mds_store *store;
	struct mds_pool_conf conf;
	struct blkmap_vol *vol;
	uint32_t nluns;
	struct blkmap_dev *devs[MDS_MAX_LUNS];
	struct mds_pool_label labels[MDS_MAX_LUNS];
};

void mds_pool_url_display(const char *url, char *out, size_t outlen)
{
	const char *scheme = strstr(url, "://"), *at, *pct, *slash;

	snprintf(out, outlen, "%s", url);
	if (!scheme)
		return;
	slash = strchr(scheme + 3, '/');
	at = strchr(scheme + 3, '@');
	if (!at || (slash && at > slash))
		return;
	pct = memchr(scheme + 3, '%', (size_t)(at - (scheme + 3)));
	if (!pct)
		return;
	snprintf(out, outlen, "%.*s%s", (int)(pct - url), url, at);
}

const char *mds_pool_lun_state_name(enum mds_pool_lun_state s)
{
	static const char *const names[] = {
		[MDS_LUN_OK] = "ok", [MDS_LUN_UNREACHABLE] = "unreachable", [MDS_LUN_UNREADABLE] = "unreadable",
		[MDS_LUN_NO_LABEL] = "no-label", [MDS_LUN_BAD_LABEL] = "bad-label", [MDS_LUN_MISMATCH] = "mismatch",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) && names[s] ? names[s] : "?";
}

/* ---- the volume --------------------------------------------------------------------------------- */

int mds_pool_volume_top(struct blkmap_vol *vol, const struct mds_store_format *f, const uint32_t *slices,
			uint32_t *top)
{
	int rc;

	if (f->volume_type == MDS_VOL_STRIPE)
		rc = blkmap_vol_add_stripe(vol, f->stripe_unit_bytes, slices, f->nluns, top);
	else
		rc = blkmap_vol_add_concat(vol, slices, f->nluns, top);
	return rc ? rc : blkmap_vol_validate(vol);
}

int mds_pool_volume_build(const struct mds_store_format *f, struct blkmap_vol **out, char *err,
			  size_t errlen)
{
	struct blkmap_vol *vol;
	uint32_t slices[MDS_MAX_LUNS];
	int rc;

	*out = NULL;
	rc = blkmap_vol_create(&vol);
	if (rc)
		return proto_errf(err, errlen, rc, "pool volume: %s", strerror(-rc));
	for (uint32_t i = 0; i < f->nluns; i++) {
		struct mds_pool_label l;
		uint8_t sig[MDS_LABEL_SIG_BYTES];
		struct blkmap_sig_comp comp;
		int64_t off;
		size_t len;
		uint32_t simple;

		mds_label_from_format(f, i, 0, &l);
		mds_label_signature(&l, &off, sig, &len);
		comp.offset_bytes = off;
		comp.len = (uint32_t)len;
		comp.bytes = sig;
		rc = blkmap_vol_add_simple(vol, &comp, 1, &simple);
		if (!rc)
			rc = blkmap_vol_set_leaf_size(vol, simple, f->luns[i].size_bytes);
		if (!rc)
			rc = blkmap_vol_add_slice(vol, f->luns[i].data_start_bytes, f->luns[i].data_bytes,
						  simple, &slices[i]);
		if (rc)
			goto fail;
	}
	rc = mds_pool_volume_top(vol, f, slices, NULL);
	if (rc)
		goto fail;
	*out = vol;
	return 0;
fail:
	proto_errf(err, errlen, rc, "pool volume: %s", blkmap_vol_errstr(vol));
	blkmap_vol_free(vol);
	return rc;
}

/* ---- label I/O ---------------------------------------------------------------------------------- */

/* Bytes read to see a label: the label rounded up to the device's block size. */
static size_t label_read_bytes(struct blkmap_dev *dev)
{
	uint32_t b = blkmap_dev_block_bytes(dev);

	return b > MDS_LABEL_BYTES ? b : MDS_LABEL_BYTES;
}

/* See MDS_POOL_PR_KEY. A failure shows up as the read that follows failing. */
static void pool_register(struct blkmap_dev *dev)
{
	if (blkmap_dev_kind(dev) == BLKMAP_DEV_ISCSI)
		(void)blkmap_pr_register(dev, 0, MDS_POOL_PR_KEY, 1);
}

static int read_label_area(struct blkmap_dev *dev, uint8_t *buf, size_t *len)
{
	*len = label_read_bytes(dev);
	if (*len > MDS_LABEL_AREA_BYTES)
		return -EINVAL;
	return blkmap_dev_pread(dev, buf, *len, 0);
}

/* ---- designators ------------------------------------------------------------------------------- */

static void desig_from_blkmap(const struct blkmap_designator *d, struct mds_lun_designator *out)
{
	memset(out, 0, sizeof(*out));
	out->type = d->type;
	out->code_set = d->code_set;
	out->len = d->len;
	memcpy(out->bytes, d->bytes, d->len);
}

static void desig_str(const struct mds_lun_designator *d, char *buf, size_t len)
{
	struct blkmap_designator b = { .type = d->type, .code_set = d->code_set, .len = d->len };

	memcpy(b.bytes, d->bytes, d->len);
	blkmap_designator_str(&b, buf, len);
}

/* The LUN's preferred designator (0), or -ENOENT when it has none (a file, a block device without VPD). */
static int lun_designator(struct blkmap_dev *dev, struct mds_lun_designator *out)
{
	struct blkmap_inquiry *inq = malloc(sizeof(*inq));
	const struct blkmap_designator *d;
	int rc = -ENOENT;

	if (!inq)
		return -ENOMEM;
	if (blkmap_dev_inquiry(dev, inq) == 0 && (d = blkmap_inquiry_preferred(inq))) {
		desig_from_blkmap(d, out);
		rc = 0;
	}
	free(inq);
	return rc;
}

/* Whether the LUN presents the recorded designator among its logical-unit ones. */
static int lun_has_designator(struct blkmap_dev *dev, const struct mds_lun_designator *rec)
{
	struct blkmap_inquiry *inq = malloc(sizeof(*inq));
	int found = 0;

	if (!inq)
		return 0;
	if (blkmap_dev_inquiry(dev, inq) == 0) {
		for (unsigned k = 0; k < inq->ndesig && k < BLKMAP_MAX_DESIGNATORS && !found; k++) {
			const struct blkmap_designator *d = &inq->desig[k];
			found = d->association == 0 && d->type == rec->type && d->code_set == rec->code_set &&
				d->len == rec->len && memcmp(d->bytes, rec->bytes, rec->len) == 0;
		}
	}
	free(inq);
	return found;
}

/* The designators the store recorded, rec[i] for LUN i (len 0: none). */
static int recorded_designators(struct mds_store *store, uint32_t n, struct mds_lun_designator *rec)
{
	struct mds_txn *t;
	int rc = mds_txn_begin(store, MDS_TXN_RDONLY, &t);

	if (rc)
		return rc;
	for (uint32_t i = 0; i < n && !rc; i++) {
		rc = mds_store_lun_designator(t, i, &rec[i]);
		if (rc == -ENOENT)
			rc = 0;
	}
	mds_txn_abort(t);
	return rc;
}

/* Record the designator of every LUN that has one and none recorded (format; the first start of a pool
 * formatted before they were kept). */
static int record_designators(struct mds_store *store, struct blkmap_dev *const *devs, uint32_t n,
			      const struct mds_lun_designator *rec, char *err, size_t errlen)
{
	struct mds_txn *t;
	int rc, todo = 0;

	rc = mds_txn_begin(store, MDS_TXN_RW, &t);
	if (rc)
		return proto_errf(err, errlen, rc, "recording the LUNs' designators: %s", mds_store_strerror(rc));
	for (uint32_t i = 0; i < n && !rc; i++) {
		struct mds_lun_designator d;
		if ((rec && rec[i].len) || !devs[i] || lun_designator(devs[i], &d) != 0)
			continue;
		rc = mds_store_set_lun_designator(t, i, &d);
		todo++;
	}
	if (rc || !todo) {
		mds_txn_abort(t);
		return rc ? proto_errf(err, errlen, rc, "recording the LUNs' designators: %s", mds_store_strerror(rc)) : 0;
	}
	rc = mds_txn_commit(t);
	return rc ? proto_errf(err, errlen, rc, "recording the LUNs' designators: %s", mds_store_strerror(rc)) : 0;
}

/* ---- probe -------------------------------------------------------------------------------------- */

/* The designator part of a probe: the LUN's, for display, checked against rec (len 0: none kept). */
static void probe_designator(struct blkmap_dev *dev, const struct mds_lun_designator *rec,
			     struct mds_pool_lun_status *s)
{
	struct mds_lun_designator d;
	char want[600];

	if (lun_designator(dev, &d) == 0)
		desig_str(&d, s->designator, sizeof(s->designator));
	if (!rec || !rec->len)
		return;
	if (!lun_has_designator(dev, rec)) {
		desig_str(rec, want, sizeof(want));
		s->state = MDS_LUN_MISMATCH;
		snprintf(s->why, sizeof(s->why), "SCSI designator %s was recorded at format; this LUN has %s (another LUN "
			 "at this URL?)", want, s->designator[0] ? s->designator : "none");
		return;
	}
	s->desig_recorded = 1;
}

/* LUN i of the pool, opened as dev (NULL: it could not be, open_err says why): its label checked
 * against the store's format, its designator against rec (NULL or len 0: none recorded). The device
 * goes to *devp, or is closed when devp is NULL. */
static void probe_one(struct blkmap_ctx *ctx, const struct mds_store_format *f, uint32_t i,
		      const char *url, struct blkmap_dev *dev, const char *open_err,
		      const struct mds_lun_designator *rec, struct mds_pool_lun_status *s,
		      struct blkmap_dev **devp)
{
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	memset(s, 0, sizeof(*s));
	s->ptpl_c = -1;
	mds_pool_url_display(url, s->url, sizeof(s->url));
	if (!dev) {
		s->state = MDS_LUN_UNREACHABLE;
		snprintf(s->why, sizeof(s->why), "cannot open: %s", open_err);
		goto out;
	}
	s->size_bytes = blkmap_dev_size_bytes(dev);
	s->block_bytes = blkmap_dev_block_bytes(dev);
	pool_register(dev);
	if (blkmap_dev_kind(dev) == BLKMAP_DEV_ISCSI) {
		struct blkmap_pr_caps caps;
		if (blkmap_pr_report_caps(dev, &caps) == 0)
			s->ptpl_c = caps.ptpl_c;
	}
	buf = malloc(MDS_LABEL_AREA_BYTES);
	if (!buf) {
		s->state = MDS_LUN_UNREADABLE;
		snprintf(s->why, sizeof(s->why), "out of memory");
		goto out;
	}
	rc = read_label_area(dev, buf, &len);
	if (rc) {
		s->state = MDS_LUN_UNREADABLE;
		snprintf(s->why, sizeof(s->why), "cannot read the label: %s", blkmap_errstr(ctx));
		goto out;
	}
	rc = mds_label_decode(buf, len, &s->label, s->why, sizeof(s->why));
	if (rc == -ENOENT) {
		s->state = MDS_LUN_NO_LABEL;
		snprintf(s->why, sizeof(s->why), "no pool label");
		goto out;
	}
	if (rc) {
		s->state = MDS_LUN_BAD_LABEL;
		goto out;
	}
	s->have_label = 1;
	memcpy(s->label_raw, buf, MDS_LABEL_BYTES);
	if (mds_label_check(&s->label, f, i, s->why, sizeof(s->why))) {
		s->state = MDS_LUN_MISMATCH;
		goto out;
	}
	if (s->size_bytes < f->luns[i].data_start_bytes + f->luns[i].data_bytes) {
		s->state = MDS_LUN_MISMATCH;
		snprintf(s->why, sizeof(s->why), "LUN has %llu bytes, its data area needs %llu",
			 (unsigned long long)s->size_bytes,
			 (unsigned long long)(f->luns[i].data_start_bytes + f->luns[i].data_bytes));
		goto out;
	}
	s->state = MDS_LUN_OK;
	probe_designator(dev, rec, s);
out:
	free(buf);
	if (devp)
		*devp = dev;
	else
		blkmap_dev_close(dev);
}

/* The pool's LUNs, all opened at once: opened[i] each, or NULL with errs[i] (OPEN_ERR_LEN bytes) why. */
#define OPEN_ERR_LEN 400
static char *open_luns(struct blkmap_ctx *ctx, const char *const *urls, uint32_t n, struct blkmap_dev **opened)
{
	char *errs = calloc(n ? n : 1, OPEN_ERR_LEN);

	if (!errs) {
		for (uint32_t i = 0; i < n; i++)
			opened[i] = NULL;
		return NULL;
	}
	blkmap_dev_open_many(ctx, urls, NULL, n, opened, errs, OPEN_ERR_LEN);
	return errs;
}

static const char *open_err(const char *errs, uint32_t i)
{
	return errs ? errs + (size_t)i * OPEN_ERR_LEN : "out of memory";
}

int mds_pool_probe(struct blkmap_ctx *ctx, struct mds_store *store, const struct mds_pool_conf *conf,
		   struct mds_pool_lun_status *st, struct blkmap_dev **devs)
{
	const struct mds_store_format *f = mds_store_format(store);
	uint32_t n = conf->nluns < f->nluns ? conf->nluns : f->nluns;
	struct blkmap_dev *opened[MDS_MAX_LUNS];
	struct mds_lun_designator *rec = calloc(n ? n : 1, sizeof(*rec));
	char *errs = open_luns(ctx, (const char *const *)conf->urls, n, opened);
	int bad = 0;

	/* without the recorded designators (no memory, an unreadable record) the labels are still checked */
	if (rec && recorded_designators(store, n, rec) != 0)
		memset(rec, 0, n * sizeof(*rec));
	for (uint32_t i = 0; i < n; i++) {
		probe_one(ctx, f, i, conf->urls[i], opened[i], open_err(errs, i), rec ? &rec[i] : NULL, &st[i],
			  devs ? &devs[i] : NULL);
		bad += st[i].state != MDS_LUN_OK;
	}
	free(rec);
	free(errs);
	return bad;
}

/* ---- open --------------------------------------------------------------------------------------- */

static void explain_region(const uint8_t *now, size_t len, char *why, size_t whylen, void *priv)
{
	mds_label_explain(now, len, priv, why, whylen);
}

static int conf_matches_store(const struct mds_pool_conf *c, const struct mds_store_format *f,
			      const char *dir, char *err, size_t errlen)
{
	char a[37], b[37];

	if (c->nluns != f->nluns)
		return proto_errf(err, errlen, -EINVAL, "%s/%s lists %u LUNs, the pool has %u", dir,
			    MDS_POOL_CONF, c->nluns, f->nluns);
	if (c->have_uuid && memcmp(c->pool_uuid, f->pool_uuid, 16)) {
		mds_uuid_format(c->pool_uuid, a);
		mds_uuid_format(f->pool_uuid, b);
		return proto_errf(err, errlen, -EINVAL, "%s/%s is for pool %s, the store is pool %s", dir,
			    MDS_POOL_CONF, a, b);
	}
	return 0;
}

void mds_pool_close(struct mds_pool *p)
{
	if (!p)
		return;
	blkmap_vol_free(p->vol);
	for (uint32_t i = 0; i < p->nluns; i++) {
		if (!p->devs[i])
			continue;
		blkmap_dev_unexpect(p->devs[i], p);
		blkmap_dev_close(p->devs[i]);
	}
	mds_store_close(p->store);
	mds_pool_conf_free(&p->conf);
	free(p);
}

int mds_pool_open(struct blkmap_ctx *ctx, const char *dir, const struct mds_pool_open_opts *opts,
		  struct mds_pool **out, char *err, size_t errlen)
{
	struct mds_store_opts so = { 0 };
	const struct mds_store_format *f;
	struct mds_pool_lun_status *st = NULL;
	struct mds_lun_designator *rec = NULL;
	struct blkmap_dev *opened[MDS_MAX_LUNS];
	struct mds_pool *p;
	char *errs = NULL;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = mds_pool_conf_read(dir, &p->conf, err, errlen);
	if (rc) {
		if (rc == -ENOENT)
			proto_errf(err, errlen, rc, "%s holds no pool (no %s)", dir, MDS_POOL_CONF);
		goto fail;
	}
	so.rdonly = opts && opts->rdonly;
	so.map_bytes = opts ? opts->map_bytes : 0;
	rc = mds_store_open(dir, &so, &p->store);
	if (rc) {
		proto_errf(err, errlen, rc, "%s: metadata store: %s%s%s", dir, mds_store_strerror(rc),
		     p->store ? ": " : "", p->store ? mds_store_errstr(p->store) : "");
		goto fail;
	}
	f = mds_store_format(p->store);
	rc = conf_matches_store(&p->conf, f, dir, err, errlen);
	if (rc)
		goto fail;
	p->nluns = f->nluns;
	st = calloc(f->nluns, sizeof(*st));
	rec = calloc(f->nluns, sizeof(*rec));
	if (!st || !rec) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = recorded_designators(p->store, f->nluns, rec);
	if (rc) {
		proto_errf(err, errlen, rc, "%s: metadata store: the LUNs' designators: %s", dir, mds_store_errstr(p->store));
		goto fail;
	}
	errs = open_luns(ctx, (const char *const *)p->conf.urls, f->nluns, opened);
	for (uint32_t i = 0; i < f->nluns; i++)
		probe_one(ctx, f, i, p->conf.urls[i], opened[i], open_err(errs, i), &rec[i], &st[i], &p->devs[i]);
	for (uint32_t i = 0; i < f->nluns; i++) {
		if (st[i].state != MDS_LUN_OK) {
			rc = st[i].state == MDS_LUN_UNREACHABLE ? -ENODEV : -EINVAL;
			proto_errf(err, errlen, rc, "LUN %u (%s): %s: %s", i, st[i].url,
			     mds_pool_lun_state_name(st[i].state), st[i].why);
			goto fail;
		}
		p->labels[i] = st[i].label;
	}
	if (!so.rdonly) {
		rc = record_designators(p->store, p->devs, f->nluns, rec, err, errlen);
		if (rc)
			goto fail;
	}
	for (uint32_t i = 0; i < f->nluns; i++) {
		rc = blkmap_dev_expect(p->devs[i], p, "pool label", 0, st[i].label_raw, MDS_LABEL_BYTES, explain_region,
				       &p->labels[i]);
		if (rc) {
			proto_errf(err, errlen, rc, "LUN %u (%s): %s", i, st[i].url, blkmap_errstr(ctx));
			goto fail;
		}
	}
	rc = mds_pool_volume_build(f, &p->vol, err, errlen);
	for (uint32_t i = 0; !rc && i < f->nluns; i++) {
		rc = blkmap_vol_bind(p->vol, MDS_POOL_VOL_SIMPLE(i), p->devs[i]);
		if (rc)
			proto_errf(err, errlen, rc, "LUN %u (%s): %s", i, st[i].url, blkmap_vol_errstr(p->vol));
	}
	if (!rc) {
		rc = blkmap_vol_validate(p->vol);
		if (rc)
			proto_errf(err, errlen, rc, "pool volume: %s", blkmap_vol_errstr(p->vol));
	}
	if (!rc && !so.rdonly && mds_pool_volume_xdr_check(dir, f, NULL, 0))
		rc = mds_pool_volume_xdr_write(dir, f, err, errlen);
	if (rc)
		goto fail;
	free(rec);
	free(st);
	free(errs);
	*out = p;
	return 0;
fail:
	free(rec);
	free(st);
	free(errs);
	mds_pool_close(p);
	return rc;
}

int mds_pool_lun_identity(const struct mds_pool *p, uint32_t i, char *why, size_t whylen)
{
	if (i >= p->nluns || !p->devs[i])
		return -ENODEV;
	return blkmap_dev_identity(p->devs[i], why, whylen);
}

uint32_t mds_pool_luns_unchecked(const struct mds_pool *p)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nluns; i++)
		n += p->devs[i] && !blkmap_dev_checked(p->devs[i]);
	return n;
}

uint32_t mds_pool_luns_out(const struct mds_pool *p, uint32_t *first)
{
	uint32_t n = 0;

	for (uint32_t i = p->nluns; i-- > 0;) {
		if (p->devs[i] && blkmap_dev_identity(p->devs[i], NULL, 0) != 0) {
			n++;
			if (first)
				*first = i;
		}
	}
	return n;
}

struct mds_store *mds_pool_store(const struct mds_pool *p)
{
	return p->store;
}

struct blkmap_vol *mds_pool_volume(const struct mds_pool *p)
{
	return p->vol;
}

uint32_t mds_pool_nluns(const struct mds_pool *p)
{
	return p->nluns;
}

struct blkmap_dev *mds_pool_lun_dev(const struct mds_pool *p, uint32_t i)
{
	return i < p->nluns ? p->devs[i] : NULL;
}

const struct mds_pool_label *mds_pool_lun_label(const struct mds_pool *p, uint32_t i)
{
	return i < p->nluns ? &p->labels[i] : NULL;
}

const char *mds_pool_lun_url(const struct mds_pool *p, uint32_t i)
{
	return i < p->nluns ? p->conf.urls[i] : NULL;
}

/* ---- format ------------------------------------------------------------------------------------- */

/* The pool directory, made now (*made) or empty of any pool. */
static int dir_prepare(const char *dir, int *made, char *err, size_t errlen)
{
	char path[4096];
	struct stat sb;

	*made = 0;
	if (mkdir(dir, 0700) == 0)
		*made = 1;
	else if (errno != EEXIST)
		return proto_errf(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
		return proto_errf(err, errlen, -ENOTDIR, "%s: not a directory", dir);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (stat(path, &sb) == 0)
		return proto_errf(err, errlen, -EEXIST, "%s already holds a pool (data.mdb)", dir);
	snprintf(path, sizeof(path), "%s/%s", dir, MDS_POOL_CONF);
	if (stat(path, &sb) == 0)
		return proto_errf(err, errlen, -EEXIST, "%s already holds a pool (%s)", dir, MDS_POOL_CONF);
	return 0;
}

/* A failed format takes back what it made in dir: the files of a pool (none was there: dir_prepare
 * saw to it) and the directory itself when it made it. */
static void dir_undo(const char *dir, int made, int store_made)
{
	static const char *const files[] = { MDS_POOL_CONF, MDS_POOL_VOLUME_XDR };
	char path[4096];

	if (store_made) {
		snprintf(path, sizeof(path), "%s/data.mdb", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/lock.mdb", dir);
		unlink(path);
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			unlink(path);
		}
	}
	if (made)
		rmdir(dir);
}

/* A relative LUN path made absolute (the MDS may run elsewhere): a copy, caller frees; NULL when out
 * of memory. URLs and absolute paths are copied as they are (no symlink is resolved: /dev/disk/by-id
 * names stay). */
static char *lun_absolute(const char *u)
{
	char cwd[4096], *out;
	size_t n;

	if (u[0] == '/' || strstr(u, "://") || !getcwd(cwd, sizeof(cwd)))
		return strdup(u);
	while (u[0] == '.' && u[1] == '/')
		u += 2;
	n = strlen(cwd) + strlen(u) + 2;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", cwd, u);
	return out;
}

static int pool_format(struct blkmap_ctx *ctx, const char *dir, const char *const *urls, uint32_t nluns,
		       const struct mds_pool_format_opts *opts, uint8_t *uuid_out, char *err, size_t errlen);

int mds_pool_format(struct blkmap_ctx *ctx, const char *dir, const char *const *urls, uint32_t nluns,
		    const struct mds_pool_format_opts *opts, uint8_t *uuid_out, char *err,
		    size_t errlen)
{
	char **abs;
	int rc = 0;

	if (nluns == 0 || nluns > MDS_MAX_LUNS)
		return proto_errf(err, errlen, -EINVAL, "%u LUNs: a pool has 1 to %u", nluns, MDS_MAX_LUNS);
	abs = calloc(nluns, sizeof(*abs));
	for (uint32_t i = 0; abs && i < nluns && !rc; i++)
		if (!(abs[i] = lun_absolute(urls[i])))
			rc = -ENOMEM;
	if (!abs || rc)
		rc = proto_errf(err, errlen, -ENOMEM, "out of memory");
	else
		rc = pool_format(ctx, dir, (const char *const *)abs, nluns, opts, uuid_out, err, errlen);
	for (uint32_t i = 0; abs && i < nluns; i++)
		free(abs[i]);
	free(abs);
	return rc;
}

/* The URLs of a format: a count a pool may have, each short enough for the label's conf and none
 * given twice. */
static int format_check_urls(const char *const *urls, uint32_t nluns, char *err, size_t errlen)
{
	if (nluns == 0 || nluns > MDS_MAX_LUNS)
		return proto_errf(err, errlen, -EINVAL, "%u LUNs: a pool has 1 to %u", nluns, MDS_MAX_LUNS);
	for (uint32_t i = 0; i < nluns; i++) {
		if (strlen(urls[i]) >= MDS_POOL_URL_MAX)
			return proto_errf(err, errlen, -EINVAL, "LUN %u: URL too long", i);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(urls[i], urls[j]) == 0)
				return proto_errf(err, errlen, -EINVAL, "LUN %s given twice (%u and %u)", urls[i],
					    j, i);
	}
	return 0;
}

/* Open every LUN (all at once) and look for labels before touching any: sizes and block sizes of
 * each into sizes[] and blocks[]; a LUN that carries a label already is an error unless force. */
static int format_open_luns(struct blkmap_ctx *ctx, const char *const *urls, uint32_t nluns, int force,
			    struct blkmap_dev **devs, uint64_t *sizes, uint32_t *blocks, uint8_t *area, char *err,
			    size_t errlen)
{
	char disp[MDS_POOL_URL_MAX], why[320];
	char *errs = open_luns(ctx, urls, nluns, devs);
	int rc = 0;

	for (uint32_t i = 0; i < nluns && !rc; i++) {
		struct mds_pool_label old;
		size_t len;
		char u[37];
		mds_pool_url_display(urls[i], disp, sizeof(disp));
		if (!devs[i]) {
			rc = -ENODEV;
			proto_errf(err, errlen, rc, "LUN %u (%s): cannot open: %s", i, disp, open_err(errs, i));
			break;
		}
		sizes[i] = blkmap_dev_size_bytes(devs[i]);
		blocks[i] = blkmap_dev_block_bytes(devs[i]);
		pool_register(devs[i]);
		rc = read_label_area(devs[i], area, &len);
		if (rc) {
			proto_errf(err, errlen, rc, "LUN %u (%s): cannot read: %s", i, disp, blkmap_errstr(ctx));
			break;
		}
		if (!mds_label_present(area, len) || force)
			continue;
		if (mds_label_decode(area, len, &old, why, sizeof(why)) == 0) {
			mds_uuid_format(old.pool_uuid, u);
			proto_errf(err, errlen, -EEXIST,
			     "LUN %u (%s) already carries a pool label (pool %s, LUN %u of %u); "
			     "use --force to overwrite it", i, disp, u, old.lun_index, old.lun_count);
		} else {
			proto_errf(err, errlen, -EEXIST,
			     "LUN %u (%s) already carries a pool label (%s); use --force to "
			     "overwrite it", i, disp, why);
		}
		rc = -EEXIST;
	}
	free(errs);
	return rc;
}

/* Label areas: the label, then zeros to the end of the first MiB. */
static int format_write_labels(struct blkmap_ctx *ctx, const char *const *urls, uint32_t nluns,
			       struct blkmap_dev **devs, const struct mds_store_format *f, uint8_t *area, char *err,
			       size_t errlen)
{
	char disp[MDS_POOL_URL_MAX];
	uint64_t now = (uint64_t)time(NULL);
	int rc;

	for (uint32_t i = 0; i < nluns; i++) {
		struct mds_pool_label l;
		mds_pool_url_display(urls[i], disp, sizeof(disp));
		memset(area, 0, MDS_LABEL_AREA_BYTES);
		mds_label_from_format(f, i, now, &l);
		mds_label_encode(&l, area);
		rc = blkmap_dev_pwrite(devs[i], area, MDS_LABEL_AREA_BYTES, 0);
		if (rc)
			return proto_errf(err, errlen, rc, "LUN %u (%s): writing the label: %s%s", i, disp,
					  blkmap_errstr(ctx),
					  i ? " (earlier LUNs are labelled now: format again with --force)" : "");
	}
	return 0;
}

/* Read them back: each LUN must hold its own label (two URLs of one LUN would not). */
static int format_verify_labels(struct blkmap_ctx *ctx, const char *const *urls, uint32_t nluns,
				struct blkmap_dev **devs, const struct mds_store_format *f, uint8_t *area, char *err,
				size_t errlen)
{
	char disp[MDS_POOL_URL_MAX], why[320];
	int rc;

	for (uint32_t i = 0; i < nluns; i++) {
		struct mds_pool_label back;
		size_t len;
		mds_pool_url_display(urls[i], disp, sizeof(disp));
		rc = read_label_area(devs[i], area, &len);
		if (!rc)
			rc = mds_label_decode(area, len, &back, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%s", blkmap_errstr(ctx));
		if (!rc)
			rc = mds_label_check(&back, f, i, why, sizeof(why));
		if (rc)
			return proto_errf(err, errlen, rc, "LUN %u (%s): label does not read back: %s (is it the same "
					  "LUN as another one?)", i, disp, why);
	}
	return 0;
}

/* The pool's files next to the store: its conf (the LUN URLs, the UUID) and the volume. */
static int format_write_files(const char *dir, const char *const *urls, uint32_t nluns, const uint8_t *uuid,
			      const struct mds_store_format *f, char *err, size_t errlen)
{
	struct mds_pool_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.nluns = nluns;
	conf.have_uuid = 1;
	memcpy(conf.pool_uuid, uuid, 16);
	for (uint32_t i = 0; i < nluns; i++)
		conf.urls[i] = (char *)urls[i];
	rc = mds_pool_conf_write(dir, &conf, err, errlen);
	if (!rc)
		rc = mds_pool_volume_xdr_write(dir, f, err, errlen);
	return rc;
}

static int pool_format(struct blkmap_ctx *ctx, const char *dir, const char *const *urls, uint32_t nluns,
		       const struct mds_pool_format_opts *opts, uint8_t *uuid_out, char *err, size_t errlen)
{
	struct mds_pool_format_opts o = opts ? *opts : (struct mds_pool_format_opts){ 0 };
	struct blkmap_dev *devs[MDS_MAX_LUNS] = { 0 };
	uint64_t sizes[MDS_MAX_LUNS];
	uint32_t blocks[MDS_MAX_LUNS];
	struct mds_store_format *f = NULL;
	struct mds_store_opts so = { 0 };
	struct mds_store *store = NULL;
	uint8_t uuid[16], *area = NULL;
	char why[320];
	int rc, dir_made = 0, store_made = 0;

	if (!o.type)
		o.type = MDS_VOL_STRIPE;
	if (!o.block_bytes)
		o.block_bytes = MDS_POOL_DEFAULT_BLOCK;
	if (o.type == MDS_VOL_STRIPE && !o.stripe_unit_bytes)
		o.stripe_unit_bytes = MDS_POOL_DEFAULT_STRIPE_UNIT;
	rc = format_check_urls(urls, nluns, err, errlen);
	if (rc)
		return rc;
	rc = dir_prepare(dir, &dir_made, err, errlen);
	if (rc) {
		dir_undo(dir, dir_made, 0);
		return rc;
	}
	f = calloc(1, sizeof(*f));
	area = calloc(1, MDS_LABEL_AREA_BYTES);
	if (!f || !area) {
		rc = -ENOMEM;
		goto out;
	}
	rc = format_open_luns(ctx, urls, nluns, o.force, devs, sizes, blocks, area, err, errlen);
	if (rc)
		goto out;
	rc = mds_uuid_generate(uuid);
	if (rc) {
		proto_errf(err, errlen, rc, "cannot generate a pool UUID");
		goto out;
	}
	rc = mds_pool_plan(sizes, blocks, nluns, o.type, o.stripe_unit_bytes, o.block_bytes, uuid, f,
			   why, sizeof(why));
	if (rc) {
		proto_errf(err, errlen, rc, "%s", why);
		goto out;
	}
	rc = format_write_labels(ctx, urls, nluns, devs, f, area, err, errlen);
	if (!rc)
		rc = format_verify_labels(ctx, urls, nluns, devs, f, area, err, errlen);
	if (rc)
		goto out;
	so.map_bytes = o.map_bytes;
	rc = mds_store_create(dir, f, &so, &store);
	store_made = 1; /* or partly made */
	if (rc) {
		proto_errf(err, errlen, rc, "%s: creating the metadata store: %s", dir, mds_store_strerror(rc));
		goto out;
	}
	rc = record_designators(store, devs, nluns, NULL, err, errlen);
	if (!rc)
		rc = format_write_files(dir, urls, nluns, uuid, f, err, errlen);
	if (rc)
		goto out;
	if (uuid_out)
		memcpy(uuid_out, uuid, 16);
out:
	mds_store_close(store);
	for (uint32_t i = 0; i < nluns; i++)
		blkmap_dev_close(devs[i]);
	if (rc)
		dir_undo(dir, dir_made, store_made);
	free(area);
	free(f);
	return rc;
}

/* ---- the volume for clients: pnfs_block_deviceaddr4 ------------------------------------------- */

int mds_pool_deviceaddr(const struct blkmap_vol *vol, struct device_addr4 *out, char *err,
			size_t errlen)
{
	pnfs_block_deviceaddr4 da;
	unsigned n = blkmap_vol_count(vol);
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&da, 0, sizeof(da));
	da.bda_volumes.bda_volumes_val = calloc(n ? n : 1, sizeof(pnfs_block_volume4));
	if (!da.bda_volumes.bda_volumes_val)
		return -ENOMEM;
	da.bda_volumes.bda_volumes_len = n;
	for (uint32_t i = 0; i < n && !rc; i++) {
		pnfs_block_volume4 *v = &da.bda_volumes.bda_volumes_val[i];
		unsigned m = blkmap_vol_nmembers(vol, i);
		uint32_t *members = NULL;

		if (blkmap_vol_type(vol, i) == BLKMAP_VOL_CONCAT || blkmap_vol_type(vol, i) == BLKMAP_VOL_STRIPE) {
			members = calloc(m ? m : 1, sizeof(*members));
			if (!members) {
				rc = -ENOMEM;
				break;
			}
			for (unsigned k = 0; k < m; k++)
				members[k] = blkmap_vol_member(vol, i, k);
		}
		switch (blkmap_vol_type(vol, i)) {
		case BLKMAP_VOL_SIMPLE: {
			unsigned ns = blkmap_vol_nsig(vol, i);
			pnfs_block_sig_component4 *c = calloc(ns ? ns : 1, sizeof(*c));
			v->type = PNFS_BLOCK_VOLUME_SIMPLE;
			if (!c) {
				rc = -ENOMEM;
				break;
			}
			v->pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_val = c;
			v->pnfs_block_volume4_u.bv_simple_info.bsv_ds.bsv_ds_len = ns;
			for (unsigned k = 0; k < ns && !rc; k++) {
				const struct blkmap_sig_comp *sc = blkmap_vol_sig(vol, i, k);
				c[k].bsc_sig_offset = sc->offset_bytes;
				c[k].bsc_contents.bsc_contents_val = malloc(sc->len ? sc->len : 1);
				if (!c[k].bsc_contents.bsc_contents_val) {
					rc = -ENOMEM;
					break;
				}
				memcpy(c[k].bsc_contents.bsc_contents_val, sc->bytes, sc->len);
				c[k].bsc_contents.bsc_contents_len = sc->len;
			}
			break;
		}
		case BLKMAP_VOL_SLICE:
			v->type = PNFS_BLOCK_VOLUME_SLICE;
			v->pnfs_block_volume4_u.bv_slice_info.bsv_start = blkmap_vol_slice_start(vol, i);
			v->pnfs_block_volume4_u.bv_slice_info.bsv_length = blkmap_vol_slice_length(vol, i);
			v->pnfs_block_volume4_u.bv_slice_info.bsv_volume = blkmap_vol_member(vol, i, 0);
			break;
		case BLKMAP_VOL_CONCAT:
			v->type = PNFS_BLOCK_VOLUME_CONCAT;
			v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_val = members;
			v->pnfs_block_volume4_u.bv_concat_info.bcv_volumes.bcv_volumes_len = m;
			members = NULL;
			break;
		case BLKMAP_VOL_STRIPE:
			v->type = PNFS_BLOCK_VOLUME_STRIPE;
			v->pnfs_block_volume4_u.bv_stripe_info.bsv_stripe_unit = blkmap_vol_stripe_unit(vol, i);
			v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_val = members;
			v->pnfs_block_volume4_u.bv_stripe_info.bsv_volumes.bsv_volumes_len = m;
			members = NULL;
			break;
		default:
			/* Leave the entry a simple volume without components so that freeing works. */
			v->type = PNFS_BLOCK_VOLUME_SIMPLE;
			rc = proto_errf(err, errlen, -EINVAL, "volume entry %u has no block-layout form", i);
			break;
		}
		free(members);
	}
	if (!rc) {
		rc = proto_block_deviceaddr_encode(&da, out);
		if (rc)
			proto_errf(err, errlen, rc, "encoding the volume: %s", strerror(-rc));
	} else if (rc == -ENOMEM) {
		proto_errf(err, errlen, rc, "out of memory");
	}
	proto_block_deviceaddr_free(&da);
	return rc;
}

static int volume_xdr_body(const struct mds_store_format *f, device_addr4 *da, char *err, size_t errlen)
{
	struct blkmap_vol *vol;
	int rc = mds_pool_volume_build(f, &vol, err, errlen);

	if (rc)
		return rc;
	rc = mds_pool_deviceaddr(vol, da, err, errlen);
	blkmap_vol_free(vol);
	return rc;
}

int mds_pool_volume_xdr_write(const char *dir, const struct mds_store_format *f, char *err,
			      size_t errlen)
{
	device_addr4 da;
	char path[4096], tmp[4096];
	FILE *fp;
	int rc = volume_xdr_body(f, &da, err, errlen);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", dir, MDS_POOL_VOLUME_XDR);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, MDS_POOL_VOLUME_XDR);
	fp = fopen(tmp, "wb");
	if (!fp) {
		rc = proto_errf(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	errno = 0;
	if (fwrite(da.da_addr_body.da_addr_body_val, 1, da.da_addr_body.da_addr_body_len, fp) !=
	    da.da_addr_body.da_addr_body_len)
		rc = errno ? -errno : -EIO;
	rc = mds_pool_file_commit(fp, rc, tmp, path, err, errlen);
out:
	proto_device_addr_free(&da);
	return rc;
}

int mds_pool_volume_xdr_check(const char *dir, const struct mds_store_format *f, char *why,
			      size_t whylen)
{
	device_addr4 da;
	char path[4096];
	uint8_t *buf = NULL;
	size_t n = 0;
	FILE *fp;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, MDS_POOL_VOLUME_XDR);
	fp = fopen(path, "rb");
	if (!fp)
		return proto_errf(why, whylen, -errno, "%s: %s", path, strerror(errno));
	rc = volume_xdr_body(f, &da, why, whylen);
	if (rc) {
		fclose(fp);
		return rc;
	}
	buf = malloc(da.da_addr_body.da_addr_body_len + 1);
	if (buf)
		n = fread(buf, 1, da.da_addr_body.da_addr_body_len + 1, fp);
	fclose(fp);
	if (!buf)
		rc = -ENOMEM;
	else if (n != da.da_addr_body.da_addr_body_len ||
		 memcmp(buf, da.da_addr_body.da_addr_body_val, n))
		rc = proto_errf(why, whylen, -EINVAL, "%s does not describe this pool's volume", path);
	free(buf);
	proto_device_addr_free(&da);
	return rc;
}
