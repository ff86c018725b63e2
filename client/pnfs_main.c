/* pnfs: the command-line client (cp, cat, put, get, ls, stat, rm, mkdir, mv, df, mount) on libpnfs, in
 * the manner of libnfs's nfs-cp/nfs-ls. Remote files are pnfs://host[:port]/path URLs. This file reads
 * the options and settings, keeps one context per server and runs the command; the commands live in
 * client/cli_*.c (copies: cli_copy.c for one file, cli_tree.c for trees; ls/stat/df: cli_ls.c;
 * rm/mkdir/mv: cli_ns.c) and client/mount_main.c. Exit status: 0 ok, 1 failure, 2 usage. */
#include "client/cli.h"
#include "client/mount.h"
#include "proto/log.h"
#include "proto/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CTX 4

struct cli_opts cli;

volatile sig_atomic_t cli_stop_signal;

/* One context per server. */
struct server {
	char host[256];
	int port;
	struct pnfs_context *ctx;
};
static struct server servers[MAX_CTX];
static unsigned nservers;

static void on_stop_signal(int sig)
{
	cli_stop_signal = sig;
}

void cli_die_usage(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "pnfs: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'pnfs --help'.\n");
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pnfs [OPTIONS] COMMAND ARGS...\n"
		"An NFSv4.1 client with pNFS block and SCSI layouts: file data goes straight to the SAN's LUNs\n"
		"when the server hands out layouts, through the server otherwise.\n"
		"\n"
		"Commands (remote files are pnfs://host[:port]/path, port 2049 by default):\n"
		"  cp [-r] SRC DST     copy a file: local to remote, remote to local, remote to remote; with -r\n"
		"                      a directory tree, the same ways (files, directories, symlinks;\n"
		"                      not into itself). The copy is written under a temporary name beside DST\n"
		"                      (.NAME.pnfs-XXXXXX on the server, .NAME.XXXXXX here) and renamed over\n"
		"                      it once complete; a failed or interrupted copy leaves DST as it was.\n"
		"                      A copy of a file onto itself is refused\n"
		"  put [-r] LOCAL URL  copy a local file (or tree) to the server (DST may be a directory)\n"
		"  get [-r] URL LOCAL  copy a file (or tree) from the server (\"-\": standard output)\n"
		"  cat URL...          write files to standard output\n"
		"  ls [-l] [-h] URL    list a directory (or show one file); -h: sizes as 1.5K, 3.0M\n"
		"  stat URL...         show attributes\n"
		"  rm URL...           remove files, symlinks or empty directories\n"
		"  mkdir [-p] URL...   make directories\n"
		"  mv URL URL          rename within a server\n"
		"  df URL              space and layout support of the file system\n"
		"  mount URL DIR [-f] [-o OPTS]  the server's PATH as a file system (FUSE); 'pnfs mount\n"
		"                      --help' for more. umount DIR: unmount it. As mount.fuse.pnfs:\n"
		"                      mount(8)'s helper (mount -t fuse.pnfs, fstab; 'mount.fuse.pnfs --help')\n"
		"  config              the settings in force and where each comes from\n"
		"pnfs:///path (no host) names a path on the default server (mds in client.conf, PNFS_MDS).\n"
		"\n"
		"Options:\n"
		"  --mds-io             all file data through the MDS (no layouts)\n"
		"  --json               machine-readable output (ls, stat, df)\n"
		"  -r, -R, --recursive  cp, put, get: copy a directory tree\n"
		"  --inplace            cp, put, get: write the destination itself, not a temporary renamed\n"
		"                       over it (an interrupted copy then leaves it partly written)\n"
		"  --sparse=WHEN        cp, put, get: holes in the copy. auto (the default): where the source\n"
		"                       has them (SEEK_DATA/SEEK_HOLE here; on a server, what its layout says\n"
		"                       was never written, else all-zero blocks); always: also every all-zero\n"
		"                       4 KiB block; never: every byte written, as on a device or pipe\n"
		"  --human-readable     ls -l: sizes in K, M, G... (as ls -h)\n"
		"  --portal URL         iSCSI portal iscsi://host[:port] to find layout volumes on (repeatable)\n"
		"  --device SPEC        iSCSI LUN URL, block device or file that may hold a volume (repeatable)\n"
		"  --initiator IQN      iSCSI initiator name for the data path\n"
		"  --io-timeout SECONDS give up on a SAN command (and its LUN's path) after this long, 30 by\n"
		"                       default; the file's I/O then goes through the MDS. Also how long\n"
		"                       to keep trying to reach the MDS (a refused or lost connection is\n"
		"                       tried again, 100 ms doubling to 2 s apart) before failing, and\n"
		"                       half of how long I/O through the MDS may go unanswered (EIO)\n"
		"  -q, --quiet          no progress display\n"
		"  --progress           progress even when standard error is not a terminal\n"
		"  --stats              print I/O counters (MDS bytes, direct bytes, layouts) at the end\n"
		"  -v, --verbose        more messages (twice: debug)\n"
		"  -h, --help           this text\n"
		"  --version            the release (as the only argument)\n"
		"\n"
		"Defaults for --portal, --device, --initiator, --io-timeout and the server come from\n"
		"/etc/pnfs/client.conf, then ~/.config/pnfs/client.conf (key = value lines: portal, device,\n"
		"initiator, io-timeout, mds), then PNFS_PORTAL, PNFS_DEVICE, PNFS_INITIATOR, PNFS_IO_TIMEOUT,\n"
		"PNFS_MDS; flags win. The initiator defaults to /etc/iscsi/initiatorname.iscsi's.\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error (bad options, arguments, URLs or settings).\n");
}

/* ---- contexts --------------------------------------------------------------------------------- */

/* The library's options from the ones in force. */
static void library_opts(struct pnfs_opts *po)
{
	pnfs_opts_init(po);
	po->mds_io = cli.mds_io;
	po->portals = cli.portals;
	po->nportals = cli.nportals;
	po->devices = cli.devices;
	po->ndevices = cli.ndevices;
	po->initiator_name = cli.initiator;
	if (cli.io_timeout_ms)
		po->io_timeout_ms = cli.io_timeout_ms;
}

static struct pnfs_context *server_ctx(const struct pnfs_url *u)
{
	struct pnfs_opts po;
	struct server *s;
	int rc;

	for (unsigned i = 0; i < nservers; i++)
		if (servers[i].port == u->port && strcmp(servers[i].host, u->host) == 0)
			return servers[i].ctx;
	if (nservers == MAX_CTX) {
		fprintf(stderr, "pnfs: too many servers\n");
		return NULL;
	}
	s = &servers[nservers];
	library_opts(&po);
	rc = pnfs_context_create(&po, &s->ctx);
	if (rc < 0) {
		fprintf(stderr, "pnfs: cannot create a client context: %s\n", strerror(-rc));
		return NULL;
	}
	rc = pnfs_mount(s->ctx, u->host, u->port, "/");
	if (rc < 0) {
		char where[300];
		const char *err = pnfs_get_error(s->ctx);

		/* The library's text names the server; say which one if it does not. */
		snprintf(where, sizeof(where), "%s:%d", u->host, u->port);
		if (strstr(err, where))
			fprintf(stderr, "pnfs: %s\n", err);
		else
			fprintf(stderr, "pnfs: %s: %s\n", where, *err ? err : strerror(-rc));
		pnfs_context_destroy(s->ctx);
		s->ctx = NULL;
		return NULL;
	}
	snprintf(s->host, sizeof(s->host), "%s", u->host);
	s->port = u->port;
	nservers++;
	return s->ctx;
}

static void print_stats(void)
{
	for (unsigned i = 0; i < nservers; i++) {
		struct pnfs_stats st;
		pnfs_get_stats(servers[i].ctx, &st);
		if (cli.json) {
			fprintf(stderr,
				"{\"server\":\"%s:%d\",\"mds_bytes_sent\":%" PRIu64 ",\"mds_bytes_received\":%" PRIu64
				",\"direct_bytes_read\":%" PRIu64 ",\"direct_bytes_written\":%" PRIu64
				",\"mds_data_read\":%" PRIu64 ",\"mds_data_written\":%" PRIu64
				",\"zero_filled_bytes\":%" PRIu64 ",\"layoutgets\":%" PRIu64
				",\"layoutgets_ahead\":%" PRIu64 ",\"layout_waits\":%" PRIu64
				",\"layoutcommits\":%" PRIu64 ",\"layoutreturns\":%" PRIu64 ",\"recalls\":%" PRIu64
				",\"fallbacks\":%" PRIu64 "}\n",
				servers[i].host, servers[i].port, st.mds_bytes_sent, st.mds_bytes_received,
				st.direct_bytes_read, st.direct_bytes_written, st.mds_data_read, st.mds_data_written,
				st.zero_filled_bytes, st.layoutgets, st.layoutgets_ahead, st.layout_waits,
				st.layoutcommits, st.layoutreturns, st.recalls, st.fallbacks);
		} else {
			fprintf(stderr,
				"%s:%d: MDS connection %" PRIu64 " bytes out, %" PRIu64 " in; direct %" PRIu64
				" read, %" PRIu64 " written; via MDS %" PRIu64 " read, %" PRIu64 " written; "
				"layouts %" PRIu64 " got (%" PRIu64 " ahead of the writes, %" PRIu64 " waited for), %" PRIu64
				" committed, %" PRIu64 " returned, %" PRIu64 " recalled; %" PRIu64 " fallbacks\n",
				servers[i].host, servers[i].port, st.mds_bytes_sent, st.mds_bytes_received,
				st.direct_bytes_read, st.direct_bytes_written, st.mds_data_read, st.mds_data_written,
				st.layoutgets, st.layoutgets_ahead, st.layout_waits, st.layoutcommits, st.layoutreturns,
				st.recalls, st.fallbacks);
		}
	}
	if (!cli_local_direct_bytes && !cli_local_cached_bytes && !cli_local_direct_read_bytes)
		return;
	if (cli.json)
		fprintf(stderr,
			"{\"local_direct_written\":%" PRIu64 ",\"local_cached_written\":%" PRIu64
			",\"local_direct_read\":%" PRIu64 "}\n",
			cli_local_direct_bytes, cli_local_cached_bytes, cli_local_direct_read_bytes);
	else
		fprintf(stderr,
			"local files: %" PRIu64 " bytes written with O_DIRECT, %" PRIu64 " through the page cache; %" PRIu64
			" read with O_DIRECT\n",
			cli_local_direct_bytes, cli_local_cached_bytes, cli_local_direct_read_bytes);
}

static void shutdown_all(void)
{
	for (unsigned i = 0; i < nservers; i++) {
		if (pnfs_umount(servers[i].ctx) < 0 && cli.verbose)
			fprintf(stderr, "pnfs: umount %s:%d: %s\n", servers[i].host, servers[i].port,
				pnfs_get_error(servers[i].ctx));
		pnfs_context_destroy(servers[i].ctx);
	}
	nservers = 0;
}

int cli_remote(const char *arg, struct rpath *r)
{
	if (pnfs_parse_url(arg, &r->u) < 0) {
		fprintf(stderr, "pnfs: %s: not a valid pnfs://host[:port]/path URL\n", arg);
		return -EINVAL;
	}
	r->ctx = server_ctx(&r->u);
	return r->ctx ? 0 : -EIO;
}

int cli_need_remote(const char *arg, struct rpath *r)
{
	if (!pnfs_is_url(arg))
		cli_die_usage("%s: expected a pnfs:// URL", arg);
	return cli_remote(arg, r);
}


/* ---- settings: client.conf, PNFS_* variables, flags -------------------------------------------- */

static struct pnfs_conf conf;

static void die_conf(const char *what) __attribute__((noreturn));
static void die_conf(const char *what)
{
	fprintf(stderr, "pnfs: %s\n", what);
	exit(2);
}

static void flag_set(const char *key, const char *value, const char *flag)
{
	char why[700];

	if (pnfs_conf_set(&conf, key, value, PNFS_CONF_FLAG, flag, why, sizeof(why)) < 0)
		cli_die_usage("%s: %s", flag, why);
}

/* The files and variables under the flags; o then holds what is in force. */
static void settings_load(void)
{
	char err[1200];

	if (pnfs_conf_load(&conf, err, sizeof(err)) < 0)
		die_conf(err);
	for (unsigned i = 0; i < cli.nportals; i++)
		flag_set("portal", cli.portals[i], "--portal");
	for (unsigned i = 0; i < cli.ndevices; i++)
		flag_set("device", cli.devices[i], "--device");
	if (cli.initiator)
		flag_set("initiator", cli.initiator, "--initiator");
	if (cli.io_timeout)
		flag_set("io-timeout", cli.io_timeout, "--io-timeout");
	cli.nportals = conf.nportal;
	for (unsigned i = 0; i < conf.nportal; i++)
		cli.portals[i] = conf.portal[i].value;
	cli.ndevices = conf.ndevice;
	for (unsigned i = 0; i < conf.ndevice; i++)
		cli.devices[i] = conf.device[i].value;
	cli.initiator = conf.initiator_set ? conf.initiator.value : NULL;
	cli.io_timeout_ms = conf.io_timeout_ms;
}

/* Every URL argument well formed (a usage error otherwise, before anything is done), and
 * pnfs:///path on the default server. */
static void urls_check(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		struct pnfs_url u;
		if (!pnfs_is_url(argv[i]))
			continue;
		if (!strncmp(argv[i], "pnfs:///", 8)) {
			size_t n;
			char *full;
			if (!conf.mds.value[0])
				cli_die_usage("%s: no server in the URL and no default one (mds in client.conf, PNFS_MDS)",
					  argv[i]);
			n = strlen(conf.mds.value) + strlen(argv[i]) + 1;
			full = malloc(n);
			if (!full)
				die_conf("out of memory");
			snprintf(full, n, "pnfs://%s%s", conf.mds.value, argv[i] + 7);
			argv[i] = full; /* lives until exit */
		}
		if (pnfs_parse_url(argv[i], &u) < 0)
			cli_die_usage("%s: not a valid pnfs://host[:port]/path URL", argv[i]);
	}
}

static void conf_line(const char *key, const struct pnfs_conf_item *it, const char *note)
{
	printf("%-10s = %-40s # %s%s\n", key, it->value, it->from, note ? note : "");
}

/* What is in force, as client.conf lines with where each came from. */
static int cmd_config(void)
{
	static const struct pnfs_conf_item none = { "", "default: none" };

	for (int i = 0; i < 2; i++)
		if (conf.files[i][0])
			printf("# %s file %s: %s\n", i ? "user" : "system", conf.files[i],
			       conf.file_read[i] > 0 ? "read" : conf.file_read[i] < 0 ? strerror(-conf.file_read[i]) : "absent");
	for (unsigned i = 0; i < conf.nportal; i++)
		conf_line("portal", &conf.portal[i], NULL);
	if (!conf.nportal)
		conf_line("portal", &none, conf.ndevice ? NULL : " (nor device: local block devices are searched)");
	for (unsigned i = 0; i < conf.ndevice; i++)
		conf_line("device", &conf.device[i], NULL);
	if (!conf.ndevice)
		conf_line("device", &none, NULL);
	conf_line("initiator", &conf.initiator, "; the name to admit in the targets' ACLs");
	conf_line("io-timeout", &conf.io_timeout, NULL);
	conf_line("mds", &conf.mds, conf.mds.value[0] ? "; pnfs:///path is on this server" : NULL);
	return 0;
}

/* ---- main ------------------------------------------------------------------------------------- */

enum { OPT_MDS_IO = 256, OPT_JSON, OPT_PORTAL, OPT_DEVICE, OPT_INITIATOR, OPT_IO_TIMEOUT, OPT_PROGRESS, OPT_STATS,
       OPT_INPLACE, OPT_HUMAN, OPT_SPARSE, OPT_HELP };

/* One option (before or after the command): -1 taken, else the exit status (help, or a bad one). */
static int take_opt(int c)
{
	char *end;
	double secs;

	switch (c) {
	case OPT_MDS_IO: cli.mds_io = 1; break;
	case OPT_JSON: cli.json = 1; break;
	case OPT_PORTAL:
		if (cli.nportals == 16)
			cli_die_usage("too many --portal options");
		cli.portals[cli.nportals++] = optarg;
		break;
	case OPT_DEVICE:
		if (cli.ndevices == 64)
			cli_die_usage("too many --device options");
		cli.devices[cli.ndevices++] = optarg;
		break;
	case OPT_INITIATOR: cli.initiator = optarg; break;
	case OPT_IO_TIMEOUT:
		errno = 0;
		secs = strtod(optarg, &end);
		if (errno || end == optarg || *end || !(secs >= 0.1 && secs <= 3600))
			cli_die_usage("--io-timeout takes seconds, 0.1 to 3600, not '%s'", optarg);
		cli.io_timeout_ms = (unsigned)(secs * 1000 + 0.5);
		cli.io_timeout = optarg;
		break;
	case 'q': cli.quiet = 1; break;
	case OPT_PROGRESS: cli.progress = 1; break;
	case OPT_STATS: cli.stats = 1; break;
	case 'v': cli.verbose++; break;
	case 'l': cli.long_list = 1; break;
	case 'p': cli.parents = 1; break;
	case 'r': case 'R': cli.recursive = 1; break;
	case OPT_INPLACE: cli.inplace = 1; break;
	case OPT_HUMAN: cli.human = 1; break;
	case OPT_SPARSE:
		if (strcmp(optarg, "auto") == 0)
			cli.sparse = SPARSE_AUTO;
		else if (strcmp(optarg, "always") == 0)
			cli.sparse = SPARSE_ALWAYS;
		else if (strcmp(optarg, "never") == 0)
			cli.sparse = SPARSE_NEVER;
		else
			cli_die_usage("--sparse takes always, auto or never, not '%s'", optarg);
		break;
	case 'h': case OPT_HELP: usage(stdout); return 0;
	default: fprintf(stderr, "Try 'pnfs --help'.\n"); return 2;
	}
	return -1;
}

/* ---- commands ---------------------------------------------------------------------------------- */

static int run_copy(int argc, char **argv)
{
	return cli_cmd_copy(argv[0], argc == 2 ? argv[1] : ".");
}

static int put_args(int argc, char **argv)
{
	(void)argc;
	return !pnfs_is_url(argv[0]) && pnfs_is_url(argv[1]);
}

static int get_args(int argc, char **argv)
{
	return pnfs_is_url(argv[0]) && !(argc == 2 && pnfs_is_url(argv[1]));
}

static int run_ls(int argc, char **argv)
{
	(void)argc;
	return cli_cmd_ls(argv[0]);
}

static int run_df(int argc, char **argv)
{
	(void)argc;
	return cli_cmd_df(argv[0]);
}

static int run_mv(int argc, char **argv)
{
	(void)argc;
	return cli_cmd_mv(argv[0], argv[1]);
}

static int run_config(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cmd_config();
}

/* The commands (mount, umount and help aside): how many arguments each takes (max -1: any number),
 * what a wrong call says, and what runs it; copies stop cleanly on SIGINT, SIGTERM and SIGHUP. */
static const struct command {
	const char *name;
	int min_args, max_args;
	int (*args_ok)(int argc, char **argv); /* more checks on the arguments, or NULL */
	const char *usage;
	int copies;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "cp", 2, 2, NULL, "cp: needs SRC and DST", 1, run_copy },
	{ "put", 2, 2, put_args, "put: needs LOCAL and a pnfs:// URL", 1, run_copy },
	{ "get", 1, 2, get_args, "get: needs a pnfs:// URL and LOCAL", 1, run_copy },
	{ "cat", 1, -1, NULL, "cat: needs a URL", 0, cli_cmd_cat },
	{ "ls", 1, 1, NULL, "ls: needs one URL", 0, run_ls },
	{ "stat", 1, -1, NULL, "stat: needs a URL", 0, cli_cmd_stat },
	{ "rm", 1, -1, NULL, "rm: needs a URL", 0, cli_cmd_rm },
	{ "mkdir", 1, -1, NULL, "mkdir: needs a URL", 0, cli_cmd_mkdir },
	{ "mv", 2, 2, NULL, "mv: needs two URLs", 0, run_mv },
	{ "df", 1, 1, NULL, "df: needs one URL", 0, run_df },
	{ "config", 0, 0, NULL, "config: takes no arguments", 0, run_config },
};

static const struct command *command_named(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* ---- mount.fuse.pnfs: the mount(8) helper ----------------------------------------------------- */

/* mount -t fuse.pnfs pnfs://HOST[:PORT]/PATH DIR -o OPTS (and fstab) runs
 * /sbin/mount.fuse.pnfs SOURCE DIR [-sfnv] [-N NS] [-o OPTS] [-t TYPE]: the pnfs program under
 * that name. The client's settings may come in the options (device=, portal=, initiator=,
 * io_timeout=, mds_io) as a fstab line has no other place for them; mount(8)'s own options
 * (noauto, _netdev, user, ...) are dropped, the rest go to `pnfs mount`. */
static const char *const helper_ignored[] = { "defaults", "auto", "noauto", "_netdev", "user", "nouser", "users",
					      "owner", "group", "nofail", "nobootwait", NULL };

static void helper_usage(FILE *f)
{
	fprintf(f,
		"usage: mount.fuse.pnfs pnfs://HOST[:PORT]/PATH MOUNTPOINT [-nsfv] [-o OPT[,OPT...]]\n"
		"The mount(8) helper: 'mount -t fuse.pnfs URL DIR -o OPTS' and fstab lines\n"
		"  pnfs://mds1/data  /mnt/data  fuse.pnfs  _netdev,device=iscsi://san1/iqn.x/0  0 0\n"
		"run 'pnfs mount URL DIR -o OPTS'. Options: those of 'pnfs mount' (attr_timeout=S,\n"
		"write_behind=MIB, read_ahead=KIB, stats=FILE, FUSE's), the client settings\n"
		"device=URL, portal=HOST[:PORT] (each may repeat), initiator=IQN, io_timeout=S, mds_io\n"
		"(else client.conf and PNFS_* as for every pnfs command); mount(8)'s defaults, auto,\n"
		"noauto, _netdev, user, users, nouser, owner, group, nofail, comment=... and x-... are\n"
		"ignored. -f: check the arguments, mount nothing; -n, -s: ignored; -v: verbose.\n"
		"Exit status: 0 mounted, 1 failure, 2 usage error.\n");
}

static int helper_die(const char *fmt, const char *arg) __attribute__((noreturn));
static int helper_die(const char *fmt, const char *arg)
{
	fprintf(stderr, "mount.fuse.pnfs: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'mount.fuse.pnfs --help'.\n");
	exit(2);
}

static int helper_ignored_opt(const char *t)
{
	for (unsigned i = 0; helper_ignored[i]; i++)
		if (!strcmp(t, helper_ignored[i]))
			return 1;
	return !strncmp(t, "comment=", 8) || !strncmp(t, "x-", 2);
}

/* One client setting given as a mount option: 1 taken (into cli), 0 not one of them. */
static int helper_setting(char *t)
{
	char *v = strchr(t, '=');
	size_t klen = v ? (size_t)(v - t) : strlen(t);

	if (!strcmp(t, "mds_io")) {
		cli.mds_io = 1;
		return 1;
	}
	if (!v)
		return 0;
	v++;
	if (klen == 6 && !strncmp(t, "device", 6)) {
		if (cli.ndevices == 64)
			helper_die("too many device= options (at most %s)", "64");
		cli.devices[cli.ndevices++] = v;
	} else if (klen == 6 && !strncmp(t, "portal", 6)) {
		if (cli.nportals == 16)
			helper_die("too many portal= options (at most %s)", "16");
		cli.portals[cli.nportals++] = v;
	} else if (klen == 9 && !strncmp(t, "initiator", 9)) {
		cli.initiator = v;
	} else if (klen == 10 && !strncmp(t, "io_timeout", 10)) {
		char *end;
		double secs;
		errno = 0;
		secs = strtod(v, &end);
		if (errno || end == v || *end || !(secs >= 0.1 && secs <= 3600))
			helper_die("io_timeout takes seconds, 0.1 to 3600, not '%s'", v);
		cli.io_timeout_ms = (unsigned)(secs * 1000 + 0.5);
		cli.io_timeout = v;
	} else {
		return 0;
	}
	if (!*v)
		helper_die("mount option '%s' needs a value", t);
	return 1;
}

static int mount_helper(int argc, char **argv)
{
	static char mopts[4096];
	const char *src = NULL, *mp = NULL;
	char *margv[5];
	int fake = 0, margc = 0;
	struct pnfs_opts po;
	size_t ml = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			helper_usage(stdout);
			return 0;
		}
		if (a[0] != '-' || !a[1]) {
			if (!src)
				src = a;
			else if (!mp)
				mp = a;
			else
				helper_die("unexpected argument '%s'", a);
			continue;
		}
		if (!strncmp(a, "-o", 2)) {
			char *list;
			if (!a[2] && i + 1 >= argc)
				helper_die("%s needs a list of options", a);
			list = a[2] ? argv[i] + 2 : argv[++i];
			for (char *sv, *t = strtok_r(list, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
				if (helper_ignored_opt(t) || helper_setting(t))
					continue;
				if (ml + strlen(t) + 2 > sizeof(mopts))
					helper_die("too many mount options (%s)", "more than 4 KiB");
				ml += (size_t)sprintf(mopts + ml, "%s%s", ml ? "," : "", t);
			}
		} else if (!strcmp(a, "-t")) {
			if (i + 1 >= argc)
				helper_die("%s needs a type", a);
			a = argv[++i];
			if (strcmp(a, "fuse.pnfs") && strcmp(a, "pnfs"))
				helper_die("file system type '%s': this helper mounts fuse.pnfs", a);
		} else if (!strcmp(a, "-N")) {
			helper_die("-N %s: mounting in another namespace is not supported", i + 1 < argc ? argv[i + 1] : "");
		} else if (a[strspn(a + 1, "nsfv") + 1] == 0) { /* -n -s -f -v, alone or together */
			if (strchr(a, 'f'))
				fake = 1;
			for (const char *c = a + 1; *c; c++)
				if (*c == 'v')
					cli.verbose++;
		} else {
			helper_die("unknown option '%s'", a);
		}
	}
	if (!src || !mp)
		helper_die("%s", !src ? "no source (pnfs://HOST[:PORT]/PATH) and mount point given"
				      : "no mount point given");
	if (!pnfs_is_url(src))
		helper_die("source '%s' is not a pnfs://HOST[:PORT]/PATH URL", src);
	proto_log_set_level(cli.verbose >= 2 ? PROTO_LOG_DEBUG : cli.verbose ? PROTO_LOG_INFO : PROTO_LOG_WARN);
	margv[margc++] = (char *)src;
	urls_check(1, margv);
	margv[margc++] = (char *)mp;
	if (ml) {
		margv[margc++] = "-o";
		margv[margc++] = mopts;
	}
	margv[margc] = NULL;
	settings_load();
	if (fake)
		return 0;
	library_opts(&po);
	return pnfs_cli_mount(margc, margv, &po);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mds-io", no_argument, NULL, OPT_MDS_IO },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "portal", required_argument, NULL, OPT_PORTAL },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "initiator", required_argument, NULL, OPT_INITIATOR },
		{ "io-timeout", required_argument, NULL, OPT_IO_TIMEOUT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "recursive", no_argument, NULL, 'r' },
		{ "inplace", no_argument, NULL, OPT_INPLACE },
		{ "human-readable", no_argument, NULL, OPT_HUMAN },
		{ "sparse", required_argument, NULL, OPT_SPARSE },
		{ "help", no_argument, NULL, OPT_HELP }, /* not 'h': that is ls -h */
		{ NULL, 0, NULL, 0 },
	};
	const struct command *c;
	const char *cmd;
	int opt, rc, status;

	proto_version_exit(argc, argv, "pnfs");
	{
		const char *name = strrchr(argv[0], '/');
		if (!strcmp(name ? name + 1 : argv[0], "mount.fuse.pnfs"))
			return mount_helper(argc, argv);
	}
	/* Options may come before or after the command ("pnfs ls -l URL"). */
	while ((opt = getopt_long(argc, argv, "+qvhlprR", lo, NULL)) != -1)
		if ((rc = take_opt(opt)) >= 0)
			return rc;
	if (optind >= argc)
		cli_die_usage("no command given");
	cmd = argv[optind++];
	if (strcmp(cmd, "mount") == 0 || strcmp(cmd, "umount") == 0) {
		/* FUSE's options (-o, -f) follow these commands: they parse their own arguments. */
		struct pnfs_opts po;
		proto_log_set_level(cli.verbose >= 2 ? PROTO_LOG_DEBUG : cli.verbose ? PROTO_LOG_INFO : PROTO_LOG_WARN);
		if (strcmp(cmd, "umount") == 0)
			return pnfs_cli_umount(argc - optind, argv + optind);
		settings_load();
		library_opts(&po);
		return pnfs_cli_mount(argc - optind, argv + optind, &po);
	}
	{
		/* Options after the command. */
		int sub_argc = argc - optind + 1;
		char **sub_argv = argv + optind - 1;
		optind = 0; /* GNU getopt: start a fresh scan (the first one used "+") */
		while ((opt = getopt_long(sub_argc, sub_argv, "qvhlprR", lo, NULL)) != -1) {
			if (opt == 'h' && strcmp(cmd, "ls") == 0) {
				cli.human = 1; /* ls -h, as ls(1) has it (--help still helps) */
				continue;
			}
			if ((rc = take_opt(opt)) >= 0)
				return rc;
		}
		argc = sub_argc - optind;
		argv = sub_argv + optind;
	}
	proto_log_set_level(cli.verbose >= 2 ? PROTO_LOG_DEBUG : cli.verbose ? PROTO_LOG_INFO : PROTO_LOG_WARN);
	if (strcmp(cmd, "help") != 0) {
		settings_load();
		urls_check(argc, argv);
	}

	if (strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	c = command_named(cmd);
	if (!c)
		cli_die_usage("unknown command '%s'", cmd);
	if (argc < c->min_args || (c->max_args >= 0 && argc > c->max_args) || (c->args_ok && !c->args_ok(argc, argv)))
		cli_die_usage("%s", c->usage);
	if (c->copies) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_signal; /* no SA_RESTART: a blocked read of a FIFO ends too */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	status = c->run(argc, argv);
	fflush(stdout);
	if (cli.stats)
		print_stats();
	shutdown_all();
	if (cli_stop_signal) {
		/* the copy's temporary is gone: end the way the signal would have */
		signal(cli_stop_signal, SIG_DFL);
		raise(cli_stop_signal);
	}
	return status;
}

