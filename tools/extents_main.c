/* pnfs-extents: where exactly do a file's bytes live? Per extent: file range, state, volume offset,
 * and through the volume the LUN and LBA range, with per-LUN and fragmentation figures, JSON, an SVG
 * picture, and --verify. Exit status: 0 ok, 1 failure (or a verification mismatch), 2 usage. */
#include "blkmap/blkmap.h"
#include "client/pnfs.h"
#include "proto/log.h"
#include "tools/extents.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define MAX_SAN 64

static void usage(FILE *o)
{
	fprintf(o,
		"Usage: pnfs-extents [OPTIONS] pnfs://HOST[:PORT]/PATH\n"
		"       pnfs-extents [OPTIONS] --pool DIR (--file-id N | --path /PATH)\n"
		"Show where a file's bytes live: per extent the file range, the state (READ_WRITE, READ,\n"
		"INVALID, NONE for holes), the volume offset, the LUN and the LBA range on it, split where\n"
		"the volume moves to another LUN; then bytes and extents per LUN and fragmentation figures.\n\n"
		"Source:\n"
		"  pnfs://HOST[:PORT]/PATH  ask the MDS for the file's layout, as a client would\n"
		"  --pool DIR           read the MDS's metadata store in DIR read-only (safe while it runs)\n"
		"  --file-id N          with --pool: the file by its fileid\n"
		"  --path /PATH         with --pool: the file by its path from the pool's root\n\n"
		"What to show:\n"
		"  --offset SIZE        start of the part to show (default 0)\n"
		"  --length SIZE        its length (default: to the end of the file)\n"
		"  --no-split           one row per extent instead of one per piece on a LUN\n"
		"  --json               one JSON object instead of the table\n"
		"  --svg FILE           also draw the extents as an SVG bar (one segment per extent)\n\n"
		"Checks:\n"
		"  --verify             read every mapped range straight from the LUNs and compare it with\n"
		"                       the same range read through the MDS (READ); mismatches are reported\n"
		"                       by extent and make the exit status 1\n"
		"  --compare FILE       with --verify: compare with a local copy of the file instead\n"
		"                       (the only reference in --pool mode)\n\n"
		"LUNs:\n"
		"  --offline            --pool: do not open the LUNs (LBAs in 512-byte sectors)\n"
		"  --portal URL         pnfs://: iscsi://HOST[:PORT] to discover LUNs on (repeatable)\n"
		"  --device SPEC        pnfs://: an iSCSI LUN URL, block device or file to consider\n"
		"                       (repeatable)\n"
		"  --scan-local         pnfs://: also consider local block devices\n"
		"  --initiator IQN      iSCSI initiator name\n"
		"  --timeout SECONDS    per SCSI command and login (default 10)\n"
		"  -h, --help           this text\n"
		"  --version            the release (as the only argument)\n\n"
		"With a pnfs:// URL the file is read as a client reads it: a READ layout, in which data\n"
		"shows as READ and never-written blocks as NONE; the LUNs are found through --portal and\n"
		"--device (with neither, local block devices); a SCSI layout's key is registered on them,\n"
		"as every client must. LUNs not found still give volume offsets (LBAs in 512-byte sectors).\n\n"
		"SIZE takes K, M, G, T suffixes (powers of 1024). Exit status: 0 ok, 1 failure or a\n"
		"verification mismatch, 2 usage error.\n");
}

enum { OPT_POOL = 256, OPT_FILEID, OPT_PATH, OPT_OFFSET, OPT_LENGTH, OPT_NOSPLIT, OPT_JSON, OPT_SVG,
       OPT_VERIFY, OPT_COMPARE, OPT_OFFLINE, OPT_PORTAL, OPT_DEVICE, OPT_SCAN, OPT_INIT, OPT_TIMEOUT };

static const struct option opts[] = {
	{ "pool", required_argument, NULL, OPT_POOL },
	{ "file-id", required_argument, NULL, OPT_FILEID },
	{ "path", required_argument, NULL, OPT_PATH },
	{ "offset", required_argument, NULL, OPT_OFFSET },
	{ "length", required_argument, NULL, OPT_LENGTH },
	{ "no-split", no_argument, NULL, OPT_NOSPLIT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "compare", required_argument, NULL, OPT_COMPARE },
	{ "offline", no_argument, NULL, OPT_OFFLINE },
	{ "portal", required_argument, NULL, OPT_PORTAL },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "scan-local", no_argument, NULL, OPT_SCAN },
	{ "initiator", required_argument, NULL, OPT_INIT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *pool, *path, *url, *svg, *compare, *initiator;
	uint64_t fileid, off, len;
	int have_fileid, have_len;
	int no_split, json, verify, offline, scan_local;
	unsigned timeout_s;
	const char *portals[MAX_SAN], *devices[MAX_SAN];
	unsigned nportals, ndevices;
};

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "pnfs-extents: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see --help)\n");
	return EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int ch;

	memset(a, 0, sizeof(*a));
	a->len = TOOL_TO_END;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (ch) {
		case 'h':
			usage(stdout);
			return 1;
		case OPT_POOL:
			a->pool = optarg;
			break;
		case OPT_FILEID:
			errno = 0;
			a->fileid = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg || optarg[0] == '-' || !a->fileid)
				return bad("bad --file-id '%s': a positive number", optarg);
			a->have_fileid = 1;
			break;
		case OPT_PATH:
			a->path = optarg;
			break;
		case OPT_OFFSET:
			if (proto_parse_size(optarg, &a->off))
				return bad("bad --offset '%s'", optarg);
			break;
		case OPT_LENGTH:
			if (proto_parse_size(optarg, &a->len) || !a->len)
				return bad("bad --length '%s': a size above zero", optarg);
			a->have_len = 1;
			break;
		case OPT_NOSPLIT:
			a->no_split = 1;
			break;
		case OPT_JSON:
			a->json = 1;
			break;
		case OPT_SVG:
			a->svg = optarg;
			break;
		case OPT_VERIFY:
			a->verify = 1;
			break;
		case OPT_COMPARE:
			a->compare = optarg;
			break;
		case OPT_OFFLINE:
			a->offline = 1;
			break;
		case OPT_PORTAL:
			if (a->nportals == MAX_SAN)
				return bad("too many --portal options (at most 64): '%s'", optarg);
			a->portals[a->nportals++] = optarg;
			break;
		case OPT_DEVICE:
			if (a->ndevices == MAX_SAN)
				return bad("too many --device options (at most 64): '%s'", optarg);
			a->devices[a->ndevices++] = optarg;
			break;
		case OPT_SCAN:
			a->scan_local = 1;
			break;
		case OPT_INIT:
			a->initiator = optarg;
			break;
		case OPT_TIMEOUT: {
			unsigned long t = strtoul(optarg, &end, 10);
			if (*end || end == optarg || !t || t > 3600)
				return bad("bad --timeout '%s': 1 to 3600 seconds", optarg);
			a->timeout_s = (unsigned)t;
			break;
		}
		default:
			return bad("unknown option or missing argument: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		a->url = argv[optind++];
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (!a->pool && !a->url)
		return bad("%s", "give a pnfs:// URL or --pool DIR");
	if (a->url) {
		struct pnfs_url u;
		if (pnfs_parse_url(a->url, &u) < 0)
			return bad("%s: not a valid pnfs://host[:port]/path URL", a->url);
	}
	if (a->pool && a->url)
		return bad("give either a pnfs:// URL or --pool DIR, not both ('%s')", a->url);
	if (a->pool && !a->have_fileid && !a->path)
		return bad("--pool %s needs --file-id N or --path /PATH", a->pool);
	if (a->pool && a->have_fileid && a->path)
		return bad("--file-id and --path exclude each other (--path %s)", a->path);
	if (!a->pool && (a->have_fileid || a->path))
		return bad("%s", "--file-id and --path go with --pool");
	if (!a->pool && a->offline)
		return bad("%s", "--offline goes with --pool");
	if (a->compare && !a->verify)
		return bad("--compare %s goes with --verify", a->compare);
	if (a->verify && a->offline)
		return bad("%s", "--verify reads the LUNs: it cannot go with --offline");
	if (a->pool && a->verify && !a->compare)
		return bad("--verify with --pool %s needs --compare FILE: there is no MDS path to compare with "
			   "when reading the store",
			   a->pool);
	if (a->pool && (a->nportals || a->ndevices || a->scan_local))
		return bad("--pool %s names its LUNs in pool.conf: --portal, --device and --scan-local do "
			   "not apply",
			   a->pool);
	return 0;
}

static struct blkmap_ctx *make_ctx(const struct args *a)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx;
	int rc;

	blkmap_ctx_opts_init(&o);
	o.initiator_name = a->initiator;
	o.timeout_ms = (a->timeout_s ? a->timeout_s : 10) * 1000;
	rc = blkmap_ctx_create(&o, &ctx);
	if (rc) {
		fprintf(stderr, "pnfs-extents: cannot create the I/O context: %s\n", strerror(-rc));
		return NULL;
	}
	return ctx;
}

static int write_svg(const char *path, const struct tool_map *m)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f) {
		fprintf(stderr, "pnfs-extents: --svg %s: %s\n", path, strerror(errno));
		return -errno;
	}
	rc = tool_map_write_svg(f, m);
	if (fclose(f) && !rc)
		rc = -errno;
	if (rc)
		fprintf(stderr, "pnfs-extents: --svg %s: writing failed: %s\n", path, strerror(-rc));
	return rc;
}

static int run_pool(const struct args *a, struct tool_map *m, struct blkmap_ctx *ctx)
{
	char err[1024];
	int rc = tool_pool_load(ctx, a->pool, a->have_fileid ? a->fileid : 0, a->path, a->off,
				a->have_len ? a->len : TOOL_TO_END, m, err, sizeof(err));

	if (rc)
		fprintf(stderr, "pnfs-extents: %s\n", err);
	return rc;
}

static int run_mds(const struct args *a, struct tool_map *m, struct tool_mds **session)
{
	struct tool_mds_opts o = {
		.portals = a->portals,
		.nportals = a->nportals,
		.devices = a->devices,
		.ndevices = a->ndevices,
		.scan_local = a->scan_local,
		.initiator = a->initiator,
		.timeout_s = a->timeout_s,
	};
	char err[1024] = "";
	int rc = tool_mds_load(a->url, &o, a->off, a->have_len ? a->len : TOOL_TO_END, m, session, err,
			       sizeof(err));

	if (rc)
		fprintf(stderr, "pnfs-extents: %s\n", err);
	return rc;
}

static int verify_against_file(const struct args *a, struct tool_map *m)
{
	int fd = open(a->compare, O_RDONLY | O_CLOEXEC), rc;
	char what[TOOL_NAME_MAX];

	if (fd < 0) {
		fprintf(stderr, "pnfs-extents: --compare %s: %s\n", a->compare, strerror(errno));
		return -errno;
	}
	snprintf(what, sizeof(what), "%s", a->compare);
	rc = tool_map_verify(m, tool_read_local, &fd, what);
	close(fd);
	if (rc < 0)
		fprintf(stderr, "pnfs-extents: --verify: %s\n", strerror(-rc));
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	struct tool_map m;
	struct blkmap_ctx *ctx = NULL;
	struct tool_mds *session = NULL;
	int rc, status = 0;

	proto_log_set_prog("pnfs-extents");
	proto_version_exit(argc, argv, "pnfs-extents");
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	tool_map_init(&m);
	if (a.pool && !a.offline) {
		ctx = make_ctx(&a);
		if (!ctx)
			return 1;
	}
	if (a.pool)
		rc = run_pool(&a, &m, ctx);
	else
		rc = run_mds(&a, &m, &session);
	if (rc) {
		status = 1;
		goto out;
	}
	if (a.off > 0 && a.off >= m.size) {
		fprintf(stderr, "pnfs-extents: --offset %" PRIu64 " is past the end of %s (%" PRIu64 " bytes)\n", a.off,
			m.path[0] ? m.path : "the file", m.size);
		status = 1;
		goto out;
	}
	if (a.verify) {
		if (a.compare || !session) {
			rc = verify_against_file(&a, &m);
		} else {
			char err[1024];
			rc = tool_mds_verify(session, &m, err, sizeof(err));
			if (rc < 0)
				fprintf(stderr, "pnfs-extents: %s\n", err);
		}
		if (rc)
			status = 1;
	}
	if (a.json)
		tool_map_print_json(stdout, &m, a.no_split ? TOOL_OUT_NO_SPLIT : 0);
	else
		tool_map_print_text(stdout, &m, a.no_split ? TOOL_OUT_NO_SPLIT : 0);
	if (fflush(stdout)) {
		fprintf(stderr, "pnfs-extents: writing the report: %s\n", strerror(errno));
		status = 1;
	}
	if (a.svg && write_svg(a.svg, &m))
		status = 1;
out:
	tool_map_free(&m);
	tool_mds_close(session);
	blkmap_ctx_destroy(ctx);
	return status;
}
