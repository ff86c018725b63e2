/* blkmap: the command line over the blkmap part, for admins, tests and debugging. A volume comes from
 * a GETDEVICEINFO body (--xdr), a pool directory (--pool) or the text form (--vol); discovery options
 * say where its LUNs may be; the commands show, resolve, map, print or apply its device-mapper table,
 * and read or write it through the userspace engine. Exit status 0 ok, 1 failure, 2 usage. */
#include "blkmap/blkmap.h"
#include "blkmap/blkmap_xdr.h"
#include "proto/log.h"
#include "proto/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "blkmap"
#define MAX_LIST 64

static void usage(FILE *f)
{
	fprintf(f,
		"usage: blkmap COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  show       the volume array and its tree (--text: the text form)\n"
		"  resolve    find each leaf volume's device and say how it matched\n"
		"  map        --offset O --length L: the (device, LBA) runs of a volume range\n"
		"  table      the device-mapper table (dmsetup's format; stacked devices as NAME: lines)\n"
		"  apply      create /dev/mapper/NAME with libdevmapper (needs device-mapper on this host)\n"
		"  remove     remove what apply created\n"
		"  read       --offset O --length L [--output FILE]: volume bytes to a file or stdout\n"
		"  write      --offset O [--length L] [--input FILE]: volume bytes from a file or stdin\n"
		"\n"
		"The volume (one of):\n"
		"  --xdr FILE        a pnfs_block_deviceaddr4 or pnfs_scsi_deviceaddr4 in XDR (GETDEVICEINFO body)\n"
		"  --pool DIR        a pool directory made by pnfs-admin format (its volume.xdr)\n"
		"  --vol FILE        the text form, one entry per line ('-' for stdin):\n"
		"                      simple OFFSET:HEX[,OFFSET:HEX...]   scsi naa|t10|eui64|name CODESET HEX [key=K]\n"
		"                      slice START LENGTH VOLUME   concat VOLUME...   stripe UNIT VOLUME...\n"
		"\n"
		"Where the LUNs are (resolve, map, table, apply, read, write):\n"
		"  --portal URL      iscsi://[user%%pass@]host[:port]: SendTargets and REPORT LUNS (repeatable)\n"
		"  --path PATH       a block device or file to consider (repeatable)\n"
		"  --local           consider local block devices (/sys/block: loop, sd, dm, vd, nvme)\n"
		"\n"
		"Other options:\n"
		"  --name NAME       device-mapper name (default pnfs-DEVICEID, or pnfs-volume)\n"
		"  --deviceid HEX    the device ID, for the default name\n"
		"  --initiator IQN   iSCSI initiator name (default: InitiatorName in /etc/iscsi/initiatorname.iscsi)\n"
		"  --timeout SECONDS command timeout (default 30; fractions and an ms suffix: 0.5, 500ms)\n"
		"  --register-key KEY  register KEY (hex) on every iSCSI LUN before reading it (REGISTER AND\n"
		"                    IGNORE EXISTING KEY): a LUN an MDS reserved for SCSI layouts (EXCLUSIVE\n"
		"                    ACCESS - REGISTRANTS ONLY) then serves this initiator; unregistered at exit\n"
		"  --keep-key        leave the --register-key registrations in place at exit\n"
		"  --queue-depth N   commands in flight per LUN (default 32)\n"
		"  --text            show: print the text form\n"
		"  -v, --verbose     more messages             -h, --help       this text\n"
		"  --version         the release (as the only argument)\n"
		"Sizes and offsets take K, M, G, T suffixes. Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

struct opts {
	const char *cmd;
	const char *xdr, *pool, *volfile, *name, *deviceid, *initiator, *input, *output;
	const char *portals[MAX_LIST], *paths[MAX_LIST];
	unsigned nportals, npaths;
	int local, text, verbose, keep_key;
	uint64_t register_key;
	int have_off, have_len;
	uint64_t off, len;
	unsigned timeout_ms, qd;
};

/* One error line on stderr, "blkmap: ..."; status 2 (a usage error) adds where help is. Returns
 * status, the exit status. */
static int complain(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int complain(int status, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(status == 2 ? "\ntry '" PROG " --help'\n" : "\n", stderr);
	return status;
}

/* Seconds, with a fraction ("0.5") or in milliseconds ("500ms"), to whole milliseconds: 0 or -1. */
static int parse_timeout(const char *s, unsigned *ms)
{
	char *end;
	double v;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -1;
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (*end && strcmp(end, "s"))
		return -1;
	if (!(v >= 0.001 && v <= 3600))
		return -1;
	*ms = (unsigned)(v * 1000 + 0.5);
	return 0;
}

/* What a number too big for seconds probably was: the milliseconds --timeout once took. */
static const char *timeout_hint(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return !*end && v > 3600 ? " (it takes seconds now, not milliseconds: add 'ms' for milliseconds)" : "";
}

/* A persistent reservation key: 1 to 16 hex digits, an optional 0x, not zero. 0 or -1. */
static int parse_key(const char *s, uint64_t *key)
{
	char *end;

	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		s += 2;
	if (!*s || strlen(s) > 16 || strspn(s, "0123456789abcdefABCDEF") != strlen(s))
		return -1;
	*key = strtoull(s, &end, 16);
	return *key ? 0 : -1;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t r;
		if (n + 4096 + 1 > cap) {
			char *nb;
			cap = cap ? cap * 2 : 8192;
			if (cap > (64u << 20)) {
				free(buf);
				buf = NULL;
				errno = EFBIG;
				break;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, 4096, f);
		if (r == 0)
			break;
		n += r;
	}
	if (buf)
		buf[n] = 0;
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

static int load_volume(const struct opts *o, struct blkmap_vol **vol, int *is_scsi)
{
	char err[600];
	layouttype4 type = 0;
	int rc;

	*is_scsi = 0;
	if (o->xdr) {
		rc = blkmap_vol_read_file(o->xdr, vol, &type, err, sizeof(err));
		*is_scsi = type == LAYOUT4_SCSI;
	} else if (o->pool) {
		rc = blkmap_vol_read_pool(o->pool, vol, err, sizeof(err));
	} else {
		size_t len;
		char *text = slurp(o->volfile, &len);
		if (!text)
			return complain(1, "%s: %s", o->volfile, strerror(errno));
		rc = blkmap_vol_parse_text(text, vol, err, sizeof(err));
		free(text);
		if (rc < 0)
			return complain(1, "%s: %s", o->volfile, err);
		return 0;
	}
	if (rc < 0)
		return complain(1, "%s", err);
	return 0;
}

static void describe(const struct blkmap_vol *vol, uint32_t i, char *buf, size_t len)
{
	char a[64], b[64];
	size_t o = 0;

	switch (blkmap_vol_type(vol, i)) {
	case BLKMAP_VOL_SIMPLE:
		o += (size_t)snprintf(buf, len, "signature");
		for (unsigned k = 0; k < blkmap_vol_nsig(vol, i) && o < len; k++) {
			const struct blkmap_sig_comp *c = blkmap_vol_sig(vol, i, k);
			o += (size_t)snprintf(buf + o, len - o, "%s %" PRId64 ":", k ? "," : "", c->offset_bytes);
			for (uint32_t j = 0; j < c->len && j < 48 && o < len; j++)
				o += (size_t)snprintf(buf + o, len - o, "%02x", c->bytes[j]);
			if (o < len)
				o += (size_t)snprintf(buf + o, len - o, "%s(%u B)", c->len > 48 ? "... " : " ", c->len);
		}
		break;
	case BLKMAP_VOL_SCSI:
		o += (size_t)snprintf(buf, len, "designator ");
		blkmap_designator_str(blkmap_vol_designator(vol, i), buf + o, len - o);
		o = strlen(buf);
		if (blkmap_vol_pr_key(vol, i) && o < len)
			snprintf(buf + o, len - o, ", PR key 0x%" PRIx64, blkmap_vol_pr_key(vol, i));
		break;
	case BLKMAP_VOL_SLICE:
		proto_fmt_bytes(blkmap_vol_slice_start(vol, i), PROTO_FMT_SHORT, a, sizeof(a));
		proto_fmt_bytes(blkmap_vol_slice_length(vol, i), PROTO_FMT_SHORT, b, sizeof(b));
		snprintf(buf, len, "%s at %s of volume %u", b, a, blkmap_vol_member(vol, i, 0));
		break;
	case BLKMAP_VOL_CONCAT:
	case BLKMAP_VOL_STRIPE:
		if (blkmap_vol_type(vol, i) == BLKMAP_VOL_STRIPE) {
			proto_fmt_bytes(blkmap_vol_stripe_unit(vol, i), PROTO_FMT_SHORT, a, sizeof(a));
			o += (size_t)snprintf(buf, len, "unit %s over", a);
		} else {
			o += (size_t)snprintf(buf, len, "of");
		}
		for (unsigned k = 0; k < blkmap_vol_nmembers(vol, i) && o < len; k++)
			o += (size_t)snprintf(buf + o, len - o, " %u", blkmap_vol_member(vol, i, k));
		break;
	}
}

static void tree(const struct blkmap_vol *vol, uint32_t i, int depth)
{
	char d[600], s[64] = "";
	uint64_t size = blkmap_vol_size_bytes(vol, i);
	struct blkmap_dev *dev = blkmap_vol_leaf_dev(vol, i);

	describe(vol, i, d, sizeof(d));
	if (size)
		proto_fmt_bytes(size, PROTO_FMT_SHORT, s, sizeof(s));
	printf("%*s%u %s: %s%s%s%s\n", 2 + 2 * depth, "", i, blkmap_vol_type_name(blkmap_vol_type(vol, i)), d, size ? " [" : "", s,
	       size ? "]" : "");
	if (dev)
		printf("%*s-> %s\n", 4 + 2 * depth, "", blkmap_dev_name(dev));
	for (unsigned k = 0; k < blkmap_vol_nmembers(vol, i); k++)
		tree(vol, blkmap_vol_member(vol, i, k), depth + 1);
}

static int cmd_show(const struct opts *o, struct blkmap_vol *vol, int is_scsi)
{
	unsigned n = blkmap_vol_count(vol);

	if (o->text) {
		char *s = NULL;
		if (blkmap_vol_format_text(vol, &s) < 0)
			return complain(1, "out of memory");
		fputs(s, stdout);
		free(s);
		return 0;
	}
	printf("%s volume array: %u entr%s, top is %u\n", is_scsi ? "SCSI (RFC 8154)" : "block (RFC 5663)", n,
	       n == 1 ? "y" : "ies", n - 1);
	for (uint32_t i = 0; i < n; i++) {
		char d[600];
		describe(vol, i, d, sizeof(d));
		printf("  %3u  %-7s %s\n", i, blkmap_vol_type_name(blkmap_vol_type(vol, i)), d);
	}
	printf("tree:\n");
	tree(vol, n - 1, 0);
	if (blkmap_vol_validate(vol) < 0)
		return complain(1, "invalid volume: %s", blkmap_vol_errstr(vol));
	return 0;
}

static int need_discovery(const struct opts *o)
{
	return o->nportals || o->npaths || o->local;
}

static int do_resolve(const struct opts *o, struct blkmap_ctx *ctx, struct blkmap_vol *vol, int print)
{
	struct blkmap_discover_opts d = { 0 };
	struct blkmap_report *rep = NULL;
	int rc;

	d.portals = o->portals;
	d.nportals = o->nportals;
	d.paths = o->paths;
	d.npaths = o->npaths;
	d.scan_local = o->local;
	rc = blkmap_resolve(ctx, vol, &d, &rep);
	if (print || o->verbose) {
		if (rep) {
			for (unsigned i = 0; i < rep->nmatches; i++) {
				const struct blkmap_match *m = &rep->matches[i];
				if (!m->dev_name[0])
					continue;
				printf("volume %u: %s\n    matched by %s%s\n", m->leaf, m->dev_name, m->how,
				       m->also_matched ? " (other candidates matched too: multipath?)" : "");
			}
			if (o->verbose)
				for (unsigned i = 0; i < rep->ncandidates; i++)
					fprintf(stderr, PROG ": candidate %s\n", rep->candidate_names[i]);
		}
	}
	blkmap_report_free(rep);
	if (rc < 0)
		return complain(1, "%s", blkmap_errstr(ctx));
	/* sessions to LUNs that matched nothing are not needed any more */
	blkmap_cache_flush(ctx);
	return 0;
}

static int cmd_map(const struct opts *o, struct blkmap_vol *vol)
{
	struct blkmap_run *runs = NULL;
	size_t n = 0;

	if (!o->have_off || !o->have_len)
		return complain(2, "map needs --offset and --length");
	if (blkmap_vol_map(vol, o->off, o->len, &runs, &n) < 0)
		return complain(1, "%s", blkmap_vol_errstr(vol));
	printf("%-14s %-12s %-6s %-14s %s\n", "vol_offset", "length", "leaf", "lba", "device");
	for (size_t i = 0; i < n; i++) {
		struct blkmap_dev *dev = blkmap_vol_leaf_dev(vol, runs[i].leaf);
		uint32_t bs = dev ? blkmap_dev_block_bytes(dev) : 512;
		printf("%-14" PRIu64 " %-12" PRIu64 " %-6u %-14" PRIu64 " %s\n", runs[i].vol_offset_bytes,
		       runs[i].length_bytes, runs[i].leaf, runs[i].leaf_offset_bytes / bs,
		       dev ? blkmap_dev_name(dev) : "(unresolved)");
	}
	free(runs);
	return 0;
}

static void dm_name(const struct opts *o, char *buf, size_t len)
{
	if (o->name)
		snprintf(buf, len, "%s", o->name);
	else if (o->deviceid)
		snprintf(buf, len, "pnfs-%s", o->deviceid);
	else
		snprintf(buf, len, "pnfs-volume");
}

static int cmd_table(const struct opts *o, struct blkmap_vol *vol, int apply)
{
	struct blkmap_table *t = NULL;
	char name[200], err[600];
	char *s = NULL;
	int rc;

	dm_name(o, name, sizeof(name));
	if (blkmap_vol_table(vol, name, &t) < 0)
		return complain(1, "%s", blkmap_vol_errstr(vol));
	if (apply == 0) {
		if (blkmap_table_format(t, &s) < 0) {
			blkmap_table_free(t);
			return complain(1, "out of memory");
		}
		fputs(s, stdout);
		free(s);
		blkmap_table_free(t);
		return 0;
	}
	rc = apply > 0 ? blkmap_table_apply(t, err, sizeof(err)) : blkmap_table_remove(t, err, sizeof(err));
	if (rc == -ENOTSUP) {
		blkmap_table_free(t);
		return complain(1, "%s skipped: %s", apply > 0 ? "apply" : "remove", err);
	}
	if (rc == 0 && apply > 0)
		for (unsigned i = 0; i < t->ndev; i++)
			printf("created /dev/mapper/%s\n", t->dev[i].name);
	if (rc == 0 && apply < 0)
		for (unsigned i = t->ndev; i-- > 0;)
			printf("removed /dev/mapper/%s\n", t->dev[i].name);
	blkmap_table_free(t);
	return rc == 0 ? 0 : complain(1, "%s", err);
}

static int cmd_read(const struct opts *o, struct blkmap_vol *vol)
{
	const uint64_t chunk = 4ull << 20;
	uint8_t *buf;
	int fd = 1, rc = 0;

	if (!o->have_off || !o->have_len)
		return complain(2, "read needs --offset and --length");
	if (o->output && strcmp(o->output, "-")) {
		fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return complain(1, "%s: %s", o->output, strerror(errno));
	}
	buf = malloc(chunk);
	if (!buf)
		return complain(1, "out of memory");
	for (uint64_t done = 0; done < o->len && rc == 0;) {
		uint64_t n = o->len - done < chunk ? o->len - done : chunk;
		if (blkmap_vol_pread(vol, buf, n, o->off + done) < 0) {
			rc = complain(1, "%s", blkmap_vol_errstr(vol));
			break;
		}
		for (uint64_t w = 0; w < n;) {
			ssize_t k = write(fd, buf + w, n - w);
			if (k <= 0) {
				rc = complain(1, "write to %s: %s", o->output ? o->output : "stdout", strerror(errno));
				break;
			}
			w += (uint64_t)k;
		}
		done += n;
	}
	free(buf);
	if (fd != 1)
		close(fd);
	return rc;
}

static int cmd_write(const struct opts *o, struct blkmap_vol *vol)
{
	const uint64_t chunk = 4ull << 20;
	uint64_t done = 0;
	uint8_t *buf;
	int fd = 0, rc = 0;

	if (!o->have_off)
		return complain(2, "write needs --offset");
	if (o->input && strcmp(o->input, "-")) {
		fd = open(o->input, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return complain(1, "%s: %s", o->input, strerror(errno));
	}
	buf = malloc(chunk);
	if (!buf)
		return complain(1, "out of memory");
	while (rc == 0 && (!o->have_len || done < o->len)) {
		uint64_t want = o->have_len && o->len - done < chunk ? o->len - done : chunk, got = 0;
		while (got < want) {
			ssize_t k = read(fd, buf + got, want - got);
			if (k < 0) {
				rc = complain(1, "read from %s: %s", o->input ? o->input : "stdin", strerror(errno));
				break;
			}
			if (k == 0)
				break;
			got += (uint64_t)k;
		}
		if (rc || got == 0)
			break;
		if (blkmap_vol_pwrite(vol, buf, got, o->off + done) < 0)
			rc = complain(1, "%s", blkmap_vol_errstr(vol));
		done += got;
		if (got < want)
			break;
	}
	if (rc == 0 && o->have_len && done < o->len)
		rc = complain(1, "input ended after %" PRIu64 " of %" PRIu64 " bytes", done, o->len);
	if (rc == 0 && o->verbose)
		fprintf(stderr, PROG ": wrote %" PRIu64 " bytes at volume offset %" PRIu64 "\n", done, o->off);
	free(buf);
	if (fd != 0)
		close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "xdr", required_argument, NULL, 'X' },      { "pool", required_argument, NULL, 'P' },
		{ "vol", required_argument, NULL, 'V' },      { "portal", required_argument, NULL, 'p' },
		{ "path", required_argument, NULL, 'a' },     { "local", no_argument, NULL, 'l' },
		{ "name", required_argument, NULL, 'n' },     { "deviceid", required_argument, NULL, 'd' },
		{ "initiator", required_argument, NULL, 'i' }, { "timeout", required_argument, NULL, 't' },
		{ "queue-depth", required_argument, NULL, 'q' }, { "offset", required_argument, NULL, 'o' },
		{ "length", required_argument, NULL, 'L' },   { "input", required_argument, NULL, 'I' },
		{ "output", required_argument, NULL, 'O' },   { "text", no_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },        { "help", no_argument, NULL, 'h' },
		{ "register-key", required_argument, NULL, 'K' }, { "keep-key", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const cmds[] = { "show", "resolve", "map", "table", "apply", "remove", "read", "write" };
	struct opts o = { 0 };
	struct blkmap_ctx_opts co;
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_vol *vol = NULL;
	int c, rc, known = 0, is_scsi = 0, sources;

	proto_log_set_prog(PROG);
	proto_version_exit(argc, argv, PROG);
	if (argc < 2)
		return usage(stderr), 2;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	o.cmd = argv[1];
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		known |= !strcmp(o.cmd, cmds[i]);
	if (!known)
		return complain(2, "unknown command '%s'", o.cmd);
	optind = 2;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		uint64_t v;
		switch (c) {
		case 'X': o.xdr = optarg; break;
		case 'P': o.pool = optarg; break;
		case 'V': o.volfile = optarg; break;
		case 'p':
			if (o.nportals == MAX_LIST)
				return complain(2, "too many --portal options");
			o.portals[o.nportals++] = optarg;
			break;
		case 'a':
			if (o.npaths == MAX_LIST)
				return complain(2, "too many --path options");
			o.paths[o.npaths++] = optarg;
			break;
		case 'l': o.local = 1; break;
		case 'n': o.name = optarg; break;
		case 'd': o.deviceid = optarg; break;
		case 'i': o.initiator = optarg; break;
		case 't':
			if (parse_timeout(optarg, &o.timeout_ms) < 0)
				return complain(2, "--timeout takes seconds, 0.001 to 3600 (e.g. 30, 0.5 or 500ms), not '%s'%s",
						 optarg, timeout_hint(optarg));
			break;
		case 'K':
			if (parse_key(optarg, &o.register_key) < 0)
				return complain(2, "--register-key takes a non-zero key of up to 16 hex digits, not '%s'",
						 optarg);
			break;
		case 'k': o.keep_key = 1; break;
		case 'q':
			if (proto_parse_size(optarg, &v) < 0 || v == 0 || v > 4096)
				return complain(2, "--queue-depth takes 1 to 4096");
			o.qd = (unsigned)v;
			break;
		case 'o':
			if (proto_parse_size(optarg, &o.off) < 0)
				return complain(2, "bad --offset '%s'", optarg);
			o.have_off = 1;
			break;
		case 'L':
			if (proto_parse_size(optarg, &o.len) < 0)
				return complain(2, "bad --length '%s'", optarg);
			o.have_len = 1;
			break;
		case 'I': o.input = optarg; break;
		case 'O': o.output = optarg; break;
		case 'T': o.text = 1; break;
		case 'v': o.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: return complain(2, "bad option");
		}
	}
	if (optind < argc)
		return complain(2, "unexpected argument '%s'", argv[optind]);
	sources = !!o.xdr + !!o.pool + !!o.volfile;
	if (sources != 1)
		return complain(2, "give the volume with exactly one of --xdr FILE, --pool DIR, --vol FILE");
	if (o.deviceid && strspn(o.deviceid, "0123456789abcdefABCDEF") != strlen(o.deviceid))
		return complain(2, "--deviceid takes hex digits");
	if (o.keep_key && !o.register_key)
		return complain(2, "--keep-key goes with --register-key");
	if (o.verbose)
		proto_log_set_level(PROTO_LOG_DEBUG);

	rc = load_volume(&o, &vol, &is_scsi);
	if (rc)
		return rc;
	if (!strcmp(o.cmd, "show")) {
		rc = cmd_show(&o, vol, is_scsi);
		goto out;
	}
	if (!need_discovery(&o) && strcmp(o.cmd, "map") && strcmp(o.cmd, "table")) {
		rc = complain(2, "%s needs to know where the LUNs are: --portal, --path or --local", o.cmd);
		goto out;
	}
	blkmap_ctx_opts_init(&co);
	co.initiator_name = o.initiator;
	co.timeout_ms = o.timeout_ms;
	co.queue_depth = o.qd;
	co.register_key = o.register_key;
	co.keep_key = o.keep_key;
	if (blkmap_ctx_create(&co, &ctx) < 0) {
		rc = complain(1, "cannot create a context (bad --initiator?)");
		goto out;
	}
	if (need_discovery(&o)) {
		rc = do_resolve(&o, ctx, vol, !strcmp(o.cmd, "resolve"));
		if (rc)
			goto out;
	} else if (blkmap_vol_validate(vol) < 0) {
		rc = complain(1, "%s", blkmap_vol_errstr(vol));
		goto out;
	}
	if (!strcmp(o.cmd, "resolve"))
		rc = 0;
	else if (!strcmp(o.cmd, "map"))
		rc = cmd_map(&o, vol);
	else if (!strcmp(o.cmd, "table"))
		rc = cmd_table(&o, vol, 0);
	else if (!strcmp(o.cmd, "apply"))
		rc = cmd_table(&o, vol, 1);
	else if (!strcmp(o.cmd, "remove"))
		rc = cmd_table(&o, vol, -1);
	else if (!strcmp(o.cmd, "read"))
		rc = cmd_read(&o, vol);
	else
		rc = cmd_write(&o, vol);
out:
	blkmap_vol_free(vol);
	blkmap_ctx_destroy(ctx);
	return rc;
}
