/* pnfs-admin: format a pool on LUNs, show its status, check it. The pool directory holds the MDS's
 * metadata store, pool.conf and the volume description; status and check open the store read-only,
 * so they are safe beside a running pnfs-mds. Exit status: 0 ok, 1 failure, 2 usage. */
#include "blkmap/blkmap.h"
#include "mds/pool.h"
#include "mds/pool_lock.h"
#include "mds/store.h"
#include "proto/log.h"
#include "proto/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

struct common {
	const char *pool;
	const char *initiator;
	unsigned timeout_s;
	int json;
};

static void usage_main(FILE *o)
{
	fprintf(o,
		"Usage: pnfs-admin COMMAND [OPTIONS]\n"
		"Manage the LUN pool of a block-layout pNFS metadata server.\n\n"
		"Commands:\n"
		"  format  --pool DIR [--stripe-unit SIZE | --concat] [--block-size SIZE] [--force] LUN-URL...\n"
		"          label the LUNs and create the pool in DIR\n"
		"  status  --pool DIR [--json]   show the LUNs, the volume and the space\n"
		"  check   --pool DIR [--json] [--repair]\n"
		"          verify the LUN labels and the metadata store; --repair frees space\n"
		"          allocated and never committed (only while no pnfs-mds serves the pool)\n\n"
		"Common options:\n"
		"  --initiator IQN     iSCSI initiator name (default: /etc/iscsi/initiatorname.iscsi's)\n"
		"  --timeout SECONDS   per SCSI command and login (default 10)\n"
		"  -h, --help          help (also after a command)\n"
		"  --version           the release (as the only argument)\n\n"
		"LUN-URL: iscsi://[user%%password@]host[:port]/target-iqn/lun, or a block device path.\n"
		"Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

static void usage_format(FILE *o)
{
	fprintf(o,
		"Usage: pnfs-admin format --pool DIR [--stripe-unit SIZE | --concat] [--block-size SIZE]\n"
		"                         [--force] [--map-size SIZE] LUN-URL...\n"
		"Write a pool label into the first MiB of every LUN (in the order given: that is the volume\n"
		"order), create the metadata store in DIR (the root directory, all space free) and\n"
		"DIR/pool.conf (relative LUN paths are stored absolute). The volume stripes the LUNs' data\n"
		"areas with the stripe unit (default 1M, a power of two >= 4K), or concatenates them with\n"
		"--concat. --block-size is the layout block size (default 4K). A LUN that already carries a\n"
		"pool label is refused unless --force; a DIR that already holds a pool is always refused. A\n"
		"format that fails removes what it made. SIZE takes K, M, G suffixes (powers of 1024).\n");
}

static void usage_status(FILE *o)
{
	fprintf(o,
		"Usage: pnfs-admin status --pool DIR [--json]\n"
		"Show the pool: every LUN (index, URL, size, whether its label is right), the volume (type,\n"
		"stripe unit, size) and the space (free, used, pending) and file count. Exits 1 if a LUN is\n"
		"not right. Safe while pnfs-mds runs (the store is opened read-only).\n");
}

static void usage_check(FILE *o)
{
	fprintf(o,
		"Usage: pnfs-admin check --pool DIR [--json] [--repair]\n"
		"Verify every LUN's label against the store, DIR/volume.xdr against the pool's geometry,\n"
		"and every invariant of the metadata store (free-space indexes, extent maps, ownership of\n"
		"every volume byte, directories, counters).\n"
		"While no pnfs-mds serves the pool (nobody holds DIR/mds.lock), space allocated by\n"
		"LAYOUTGET and never committed (INVALID extents of writers that are gone) is reported per\n"
		"file; pnfs-mds frees it itself once its grace period after a start is over. --repair\n"
		"frees it now, holding DIR/mds.lock meanwhile (a server that starts is refused); file\n"
		"sizes stay what was committed. --repair is refused while a server runs, naming it.\n"
		"Prints each problem; exits 0 if there is none (or all were repaired), 1 otherwise.\n");
}

static struct blkmap_ctx *make_ctx(const struct common *c)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx;
	int rc;

	blkmap_ctx_opts_init(&o);
	o.initiator_name = c->initiator;
	o.timeout_ms = (c->timeout_s ? c->timeout_s : 10) * 1000;
	rc = blkmap_ctx_create(&o, &ctx);
	if (rc) {
		fprintf(stderr, "pnfs-admin: cannot create the I/O context: %s\n", strerror(-rc));
		return NULL;
	}
	return ctx;
}

enum { OPT_POOL = 256, OPT_STRIPE, OPT_CONCAT, OPT_BLOCK, OPT_FORCE, OPT_JSON, OPT_INIT, OPT_TIMEOUT,
       OPT_MAP, OPT_REPAIR };

static const struct option opts_all[] = {
	{ "pool", required_argument, NULL, OPT_POOL },
	{ "stripe-unit", required_argument, NULL, OPT_STRIPE },
	{ "concat", no_argument, NULL, OPT_CONCAT },
	{ "block-size", required_argument, NULL, OPT_BLOCK },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "map-size", required_argument, NULL, OPT_MAP },
	{ "repair", no_argument, NULL, OPT_REPAIR },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "initiator", required_argument, NULL, OPT_INIT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	struct common c;
	uint64_t stripe_unit;
	int concat, force, have_stripe, repair;
	uint64_t block, map;
	int nrest;
	char **rest;
};

/* Parse a command's options; allowed lists the options this command takes. Returns 0, 1 for help
 * (printed), or EXIT_USAGE. */
static int parse_args(int argc, char **argv, const char *allowed, void (*usage)(FILE *), struct args *a)
{
	int ch;

	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", opts_all, NULL)) != -1) {
		uint64_t v;
		if (ch == 'h') {
			usage(stdout);
			return 1;
		}
		if (ch == '?' || ch == ':') {
			fprintf(stderr, "pnfs-admin %s: unknown option or missing argument: %s\n", argv[0],
				argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (!strchr(allowed, (char)(ch - OPT_POOL + 'a'))) {
			fprintf(stderr, "pnfs-admin %s: option %s does not apply here\n", argv[0],
				argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
		switch (ch) {
		case OPT_POOL:
			a->c.pool = optarg;
			break;
		case OPT_STRIPE:
			if (proto_parse_size(optarg, &a->stripe_unit)) {
				fprintf(stderr, "pnfs-admin: bad --stripe-unit '%s'\n", optarg);
				return EXIT_USAGE;
			}
			a->have_stripe = 1;
			break;
		case OPT_CONCAT:
			a->concat = 1;
			break;
		case OPT_BLOCK:
		case OPT_MAP:
			if (proto_parse_size(optarg, &v) || (ch == OPT_BLOCK && v > UINT32_MAX)) {
				fprintf(stderr, "pnfs-admin: bad size '%s'\n", optarg);
				return EXIT_USAGE;
			}
			if (ch == OPT_BLOCK)
				a->block = v;
			else
				a->map = v;
			break;
		case OPT_FORCE:
			a->force = 1;
			break;
		case OPT_REPAIR:
			a->repair = 1;
			break;
		case OPT_JSON:
			a->c.json = 1;
			break;
		case OPT_INIT:
			a->c.initiator = optarg;
			break;
		case OPT_TIMEOUT: {
			char *end;
			unsigned long t = strtoul(optarg, &end, 10);
			if (*end || !t || t > 3600) {
				fprintf(stderr, "pnfs-admin: bad --timeout '%s'\n", optarg);
				return EXIT_USAGE;
			}
			a->c.timeout_s = (unsigned)t;
			break;
		}
		}
	}
	if (!a->c.pool) {
		fprintf(stderr, "pnfs-admin %s: --pool DIR is required\n", argv[0]);
		usage(stderr);
		return EXIT_USAGE;
	}
	a->nrest = argc - optind;
	a->rest = argv + optind;
	return 0;
}

/* Option letters: 'a' + (OPT_x - OPT_POOL). */
#define A_POOL "a"
#define A_STRIPE "b"
#define A_CONCAT "c"
#define A_BLOCK "d"
#define A_FORCE "e"
#define A_JSON "f"
#define A_INIT "g"
#define A_TIMEOUT "h"
#define A_MAP "i"
#define A_REPAIR "j"

static int cmd_format(int argc, char **argv)
{
	struct args a;
	struct mds_pool_format_opts fo = { 0 };
	struct blkmap_ctx *ctx;
	char err[1024], u[37];
	uint8_t uuid[16];
	int rc = parse_args(argc, argv,
			    A_POOL A_STRIPE A_CONCAT A_BLOCK A_FORCE A_INIT A_TIMEOUT A_MAP,
			    usage_format, &a);

	if (rc)
		return rc == 1 ? 0 : rc;
	if (a.nrest < 1) {
		fprintf(stderr, "pnfs-admin format: no LUN-URL given\n");
		usage_format(stderr);
		return EXIT_USAGE;
	}
	if (a.concat && a.have_stripe) {
		fprintf(stderr, "pnfs-admin format: --stripe-unit and --concat exclude each other\n");
		return EXIT_USAGE;
	}
	fo.type = a.concat ? MDS_VOL_CONCAT : MDS_VOL_STRIPE;
	fo.stripe_unit_bytes = a.stripe_unit;
	fo.block_bytes = (uint32_t)a.block;
	fo.force = a.force;
	fo.map_bytes = a.map;
	ctx = make_ctx(&a.c);
	if (!ctx)
		return 1;
	rc = mds_pool_format(ctx, a.c.pool, (const char *const *)a.rest, (uint32_t)a.nrest, &fo, uuid,
			     err, sizeof(err));
	blkmap_ctx_destroy(ctx);
	if (rc) {
		fprintf(stderr, "pnfs-admin format: %s\n", err);
		return 1;
	}
	mds_uuid_format(uuid, u);
	printf("pool %s formatted in %s on %d LUN%s\n", u, a.c.pool, a.nrest, a.nrest == 1 ? "" : "s");
	return 0;
}

/* Everything status and check show, gathered once. */
struct view {
	struct mds_pool_conf conf;
	struct mds_store *store;
	const struct mds_store_format *f;
	struct mds_store_stats stats;
	struct mds_pool_lun_status *lun;
	int bad_luns;
};

static int view_load(const struct common *c, struct view *v, int rdwr, char *err, size_t errlen)
{
	struct mds_store_opts so = { .rdonly = !rdwr };
	struct blkmap_ctx *ctx;
	struct mds_txn *t;
	int rc;

	memset(v, 0, sizeof(*v));
	rc = mds_pool_conf_read(c->pool, &v->conf, err, errlen);
	if (rc) {
		if (rc == -ENOENT)
			snprintf(err, errlen, "%s holds no pool (no %s)", c->pool, MDS_POOL_CONF);
		return rc;
	}
	rc = mds_store_open(c->pool, &so, &v->store);
	if (rc) {
		snprintf(err, errlen, "%s: metadata store: %s", c->pool, mds_store_strerror(rc));
		return rc;
	}
	v->f = mds_store_format(v->store);
	if (v->conf.nluns != v->f->nluns) {
		snprintf(err, errlen, "%s/%s lists %u LUNs, the store has %u", c->pool, MDS_POOL_CONF,
			 v->conf.nluns, v->f->nluns);
		return -EINVAL;
	}
	rc = mds_txn_begin(v->store, MDS_TXN_RDONLY, &t);
	if (!rc) {
		rc = mds_store_stats(t, &v->stats);
		mds_txn_abort(t);
	}
	if (rc) {
		snprintf(err, errlen, "%s: metadata store: %s", c->pool, mds_store_strerror(rc));
		return rc;
	}
	v->lun = calloc(v->f->nluns, sizeof(*v->lun));
	if (!v->lun)
		return -ENOMEM;
	ctx = make_ctx(c);
	if (!ctx)
		return -ENOMEM;
	v->bad_luns = mds_pool_probe(ctx, v->store, &v->conf, v->lun, NULL);
	blkmap_ctx_destroy(ctx);
	return 0;
}

static void view_free(struct view *v)
{
	free(v->lun);
	mds_store_close(v->store);
	mds_pool_conf_free(&v->conf);
}

static const char *vtype(enum mds_volume_type t)
{
	return t == MDS_VOL_STRIPE ? "stripe" : "concat";
}

static void print_luns_json(FILE *o, const struct view *v)
{
	fprintf(o, "\"luns\":[");
	for (uint32_t i = 0; i < v->f->nluns; i++) {
		const struct mds_pool_lun_status *s = &v->lun[i];
		fprintf(o, "%s{\"index\":%u,\"url\":", i ? "," : "", i);
		proto_json_str(o, s->url);
		fprintf(o, ",\"state\":\"%s\",\"label_ok\":%s,\"size_bytes\":%" PRIu64
			   ",\"block_bytes\":%u,\"data_start_bytes\":%" PRIu64 ",\"data_bytes\":%" PRIu64
			   ",\"reason\":",
			mds_pool_lun_state_name(s->state), s->state == MDS_LUN_OK ? "true" : "false",
			s->size_bytes, s->block_bytes, v->f->luns[i].data_start_bytes,
			v->f->luns[i].data_bytes);
		proto_json_str(o, s->why);
		fprintf(o, ",\"designator\":");
		proto_json_str(o, s->designator);
		fprintf(o, ",\"designator_recorded\":%s,\"aptpl_capable\":%s}", s->desig_recorded ? "true" : "false",
			s->ptpl_c < 0 ? "null" : s->ptpl_c ? "true" : "false");
	}
	fputc(']', o);
}

/* What the LUNs say of APTPL (REPORT CAPABILITIES), which stock Linux SCSI-layout clients set when
 * they register their key: one line, naming the LUNs that are not capable. pnfs-mds decides by
 * trying a REGISTER with APTPL at start (its log and pnfs_mds_lun_aptpl say what it found). */
static void print_aptpl(const struct view *v)
{
	char list[256] = "";
	size_t o = 0;
	unsigned no = 0, unknown = 0;

	for (uint32_t i = 0; i < v->f->nluns; i++) {
		if (v->lun[i].ptpl_c < 0) {
			unknown++;
		} else if (!v->lun[i].ptpl_c) {
			if (o < sizeof(list))
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%u", no ? ", " : "", i);
			no++;
		}
	}
	if (no)
		printf("aptpl   not persist-through-power-loss capable: LUN %s (stock Linux clients cannot register "
		       "their keys: pnfs-mds with scsi-layouts auto serves block-volume layouts)\n",
		       list);
	else if (unknown == v->f->nluns)
		printf("aptpl   unknown (no LUN answered REPORT CAPABILITIES)\n");
	else
		printf("aptpl   every LUN%s is persist-through-power-loss capable (SCSI layouts for stock Linux "
		       "clients)\n",
		       unknown ? " that answered" : "");
}

static int cmd_status(int argc, char **argv)
{
	struct args a;
	struct view v;
	char err[1024], u[37], h1[32], h2[32], h3[32], h4[32], served[1024] = "";
	int rc = parse_args(argc, argv, A_POOL A_JSON A_INIT A_TIMEOUT, usage_status, &a);

	if (rc)
		return rc == 1 ? 0 : rc;
	if (a.nrest) {
		fprintf(stderr, "pnfs-admin status: unexpected argument '%s'\n", a.rest[0]);
		return EXIT_USAGE;
	}
	rc = view_load(&a.c, &v, 0, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "pnfs-admin status: %s\n", err);
		view_free(&v);
		return 1;
	}
	{
		struct mds_pool_holder h;
		if (mds_pool_lock_holder(a.c.pool, &h) > 0)
			mds_pool_holder_str(a.c.pool, &h, served, sizeof(served));
	}
	mds_uuid_format(v.f->pool_uuid, u);
	if (a.c.json) {
		printf("{\"pool\":{\"dir\":");
		proto_json_str(stdout, a.c.pool);
		printf(",\"uuid\":\"%s\",\"served_by\":", u);
		if (served[0])
			proto_json_str(stdout, served);
		else
			printf("null");
		printf("},\"volume\":{\"type\":\"%s\",\"stripe_unit_bytes\":%" PRIu64
		       ",\"block_bytes\":%u,\"size_bytes\":%" PRIu64 ",\"luns\":%u},",
		       vtype(v.f->volume_type), v.f->stripe_unit_bytes, v.f->block_bytes,
		       v.f->volume_bytes, v.f->nluns);
		print_luns_json(stdout, &v);
		printf(",\"space\":{\"free_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
		       ",\"pending_bytes\":%" PRIu64 ",\"free_extents\":%" PRIu64 "},\"files\":%" PRIu64
		       ",\"luns_ok\":%s}\n",
		       v.stats.free_bytes, v.stats.used_bytes, v.stats.pending_bytes,
		       v.stats.free_extents, v.stats.files, v.bad_luns ? "false" : "true");
	} else {
		proto_fmt_bytes(v.f->volume_bytes, PROTO_FMT_TENTHS, h1, sizeof(h1));
		printf("pool    %s  (%s)\n", u, a.c.pool);
		if (v.f->volume_type == MDS_VOL_STRIPE) {
			proto_fmt_bytes(v.f->stripe_unit_bytes, PROTO_FMT_TENTHS, h2, sizeof(h2));
			printf("volume  stripe of %u LUNs, unit %s, block %u B, %s (%" PRIu64 " bytes)\n",
			       v.f->nluns, h2, v.f->block_bytes, h1, v.f->volume_bytes);
		} else {
			printf("volume  concat of %u LUNs, block %u B, %s (%" PRIu64 " bytes)\n", v.f->nluns,
			       v.f->block_bytes, h1, v.f->volume_bytes);
		}
		printf("LUN  LABEL        SIZE        DATA        URL\n");
		for (uint32_t i = 0; i < v.f->nluns; i++) {
			const struct mds_pool_lun_status *s = &v.lun[i];
			proto_fmt_bytes(s->size_bytes, PROTO_FMT_TENTHS, h2, sizeof(h2));
			proto_fmt_bytes(v.f->luns[i].data_bytes, PROTO_FMT_TENTHS, h3, sizeof(h3));
			printf("%-4u %-12s %-11s %-11s %s\n", i, mds_pool_lun_state_name(s->state),
			       s->state == MDS_LUN_UNREACHABLE ? "-" : h2, h3, s->url);
			if (s->state != MDS_LUN_OK)
				printf("     %s\n", s->why);
		}
		print_aptpl(&v);
		proto_fmt_bytes(v.stats.free_bytes, PROTO_FMT_TENTHS, h1, sizeof(h1));
		proto_fmt_bytes(v.stats.used_bytes, PROTO_FMT_TENTHS, h2, sizeof(h2));
		proto_fmt_bytes(v.stats.pending_bytes, PROTO_FMT_TENTHS, h3, sizeof(h3));
		snprintf(h4, sizeof(h4), "%" PRIu64, v.stats.files);
		printf("space   free %s, used %s, pending %s (%" PRIu64 " free extents)\n", h1, h2, h3,
		       v.stats.free_extents);
		printf("files   %s\n", h4);
		printf("server  %s\n", served[0] ? served : "none (nobody holds the pool's mds.lock)");
	}
	rc = v.bad_luns ? 1 : 0;
	view_free(&v);
	return rc;
}

struct problems {
	int json, n;
};

static void report_problem(void *arg, const char *line)
{
	struct problems *p = arg;

	if (p->json) {
		printf("%s", p->n ? "," : "");
		proto_json_str(stdout, line);
	} else {
		printf("store: %s\n", line);
	}
	p->n++;
}

/* Space allocated and never committed, per file (offline check and repair). */
struct uncommitted {
	struct problems *pr;
	uint64_t files, extents, bytes;
	uint64_t *ids;
	size_t nids, capids;
};

static int uncommitted_one(void *arg, uint64_t fileid, uint64_t nextents, uint64_t bytes)
{
	struct uncommitted *u = arg;
	char h[32];

	if (proto_grow(&u->ids, u->nids, &u->capids, sizeof(*u->ids), 64))
		return -ENOMEM;
	u->ids[u->nids++] = fileid;
	u->files++;
	u->extents += nextents;
	u->bytes += bytes;
	proto_fmt_bytes(bytes, PROTO_FMT_TENTHS, h, sizeof(h));
	if (u->pr->json)
		printf("%s{\"fileid\":%" PRIu64 ",\"extents\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", u->files > 1 ? "," : "",
		       fileid, nextents, bytes);
	else
		printf("space: file %" PRIu64 ": %" PRIu64 " extent(s), %s (%" PRIu64
		       " bytes) allocated and never committed\n",
		       fileid, nextents, h, bytes);
	return 0;
}

static int uncommitted_txn_walk(struct mds_store *st, struct uncommitted *u)
{
	struct mds_txn *t;
	int rc = mds_txn_begin(st, MDS_TXN_RDONLY, &t);

	if (rc)
		return rc;
	rc = mds_ext_invalid_iter(t, uncommitted_one, u);
	mds_txn_abort(t);
	return rc;
}

/* Free what the walk found, in one transaction; the freed byte count goes to *bytes. */
static int uncommitted_repair(struct mds_store *st, const struct uncommitted *u, uint64_t *bytes)
{
	struct mds_txn *t;
	int rc = mds_txn_begin(st, MDS_TXN_RW, &t);

	*bytes = 0;
	for (size_t i = 0; !rc && i < u->nids; i++) {
		struct mds_ranges freed = { 0 };
		rc = mds_ext_punch(t, u->ids[i], 0, MDS_TO_END, MDS_EXT_MASK(MDS_EXT_INVALID), 0, &freed);
		for (size_t k = 0; k < freed.n; k++)
			*bytes += freed.v[k].len;
		mds_ranges_free(&freed);
	}
	if (rc) {
		mds_txn_abort(t);
		return rc;
	}
	return mds_txn_commit(t);
}

static int count_client(void *arg, const struct mds_client_rec *rec)
{
	(void)rec;
	(*(uint64_t *)arg)++;
	return 0;
}

static int cmd_check(int argc, char **argv)
{
	struct args a;
	struct view v;
	struct problems pr = { 0 };
	struct uncommitted u = { .pr = &pr };
	struct mds_pool_holder holder;
	struct mds_txn *t;
	char err[1024], served[1024] = "";
	int lock_fd = -1, held, urc = 0;
	uint64_t repaired = 0, clients = 0;
	int rc = parse_args(argc, argv, A_POOL A_JSON A_INIT A_TIMEOUT A_REPAIR, usage_check, &a), src;

	if (rc)
		return rc == 1 ? 0 : rc;
	if (a.nrest) {
		fprintf(stderr, "pnfs-admin check: unexpected argument '%s'\n", a.rest[0]);
		return EXIT_USAGE;
	}
	if (a.repair) {
		/* Held until the end: no server starts on the pool while it is repaired. */
		rc = mds_pool_lock(a.c.pool, "pnfs-admin check --repair", &lock_fd, NULL, err, sizeof(err));
		if (rc == -EBUSY) {
			fprintf(stderr, "pnfs-admin check: --repair refused: %s; stop it first\n", err);
			return 1;
		}
		if (rc) {
			fprintf(stderr, "pnfs-admin check: %s\n", err);
			return 1;
		}
		held = 0;
	} else {
		held = mds_pool_lock_holder(a.c.pool, &holder);
		if (held > 0)
			mds_pool_holder_str(a.c.pool, &holder, served, sizeof(served));
	}
	rc = view_load(&a.c, &v, a.repair, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "pnfs-admin check: %s\n", err);
		view_free(&v);
		mds_pool_unlock(lock_fd);
		return 1;
	}
	pr.json = a.c.json;
	if (pr.json) {
		printf("{");
		print_luns_json(stdout, &v);
		printf(",");
	} else {
		for (uint32_t i = 0; i < v.f->nluns; i++)
			if (v.lun[i].state != MDS_LUN_OK)
				printf("LUN %u (%s): %s: %s\n", i, v.lun[i].url,
				       mds_pool_lun_state_name(v.lun[i].state), v.lun[i].why);
	}
	{
		char why[600];
		int xrc = mds_pool_volume_xdr_check(a.c.pool, v.f, why, sizeof(why));
		if (xrc) {
			v.bad_luns++;
			if (pr.json) {
				printf("\"volume_xdr\":");
				proto_json_str(stdout, why);
				printf(",");
			} else {
				printf("%s\n", why);
			}
		}
	}
	if (pr.json)
		printf("\"store_problems\":[");
	src = mds_txn_begin(v.store, MDS_TXN_RDONLY, &t);
	if (!src) {
		src = mds_store_check(t, report_problem, &pr);
		if (!src || src == -EUCLEAN)
			(void)mds_client_iter(t, count_client, &clients);
		mds_txn_abort(t);
	}
	if (src && src != -EUCLEAN && !pr.json)
		printf("store: check failed: %s (%s)\n", mds_store_strerror(src),
		       mds_store_errstr(v.store));
	if (pr.json) {
		printf("],\"served_by\":");
		if (served[0])
			proto_json_str(stdout, served);
		else
			printf("null");
		printf(",\"uncommitted\":[");
	}
	/* With a server running, INVALID extents are layouts at work: not a problem, not counted. */
	if (!served[0] && !src) {
		urc = uncommitted_txn_walk(v.store, &u);
		if (urc && !pr.json)
			printf("space: cannot walk the extent maps: %s (%s)\n", mds_store_strerror(urc),
			       mds_store_errstr(v.store));
	}
	if (!urc && a.repair && u.bytes) {
		urc = uncommitted_repair(v.store, &u, &repaired);
		if (urc && !pr.json)
			printf("space: repair failed: %s (%s)\n", mds_store_strerror(urc), mds_store_errstr(v.store));
	}
	if (pr.json) {
		printf("],\"uncommitted_files\":%" PRIu64 ",\"uncommitted_bytes\":%" PRIu64 ",\"repaired_bytes\":%" PRIu64,
		       u.files, u.bytes, repaired);
	} else if (served[0]) {
		printf("%s: space allocated under its layouts is not checked\n", served);
	} else if (u.bytes && repaired == u.bytes) {
		char h[32];
		proto_fmt_bytes(repaired, PROTO_FMT_TENTHS, h, sizeof(h));
		printf("space: repaired: %s (%" PRIu64 " bytes) in %" PRIu64 " file(s) freed; file sizes are unchanged\n",
		       h, repaired, u.files);
		if (clients)
			printf("space: %" PRIu64 " client record(s) remain: those clients can no longer commit, in the "
			       "next grace period, what they wrote into that space\n",
			       clients);
	} else if (u.bytes) {
		char h[32];
		proto_fmt_bytes(u.bytes, PROTO_FMT_TENTHS, h, sizeof(h));
		printf("space: %s (%" PRIu64 " bytes) in %" PRIu64
		       " file(s) allocated and never committed: pnfs-mds frees it after its next grace period, "
		       "'pnfs-admin check --repair' now\n",
		       h, u.bytes, u.files);
	}
	{
		int leftover = urc || (u.bytes && repaired != u.bytes);
		int bad = v.bad_luns || src || leftover;
		if (pr.json)
			printf(",\"ok\":%s}\n", bad ? "false" : "true");
		else if (!bad)
			printf("pool %s: %u LUN labels, volume.xdr and the metadata store are consistent\n", a.c.pool,
			       v.f->nluns);
		rc = bad ? 1 : 0;
	}
	free(u.ids);
	view_free(&v);
	mds_pool_unlock(lock_fd);
	return rc;
}

int main(int argc, char **argv)
{
	proto_log_set_prog("pnfs-admin");
	proto_version_exit(argc, argv, "pnfs-admin");
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage_main(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "format"))
		return cmd_format(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc - 1, argv + 1);
	fprintf(stderr, "pnfs-admin: unknown command '%s'\n", argv[1]);
	usage_main(stderr);
	return EXIT_USAGE;
}
