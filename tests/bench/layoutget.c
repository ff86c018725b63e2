/* bench-layoutget: what LAYOUTGET costs as a file's extent map grows, through a real pnfs-mds over RPC.
 * A 4-LUN RAM lab (sparse LUNs: no data is ever written), a pool striped over it, pnfs-mds, and two
 * files built through the protocol: LAYOUTGET RW of a range, LAYOUTCOMMIT of every other block of it,
 * LAYOUTRETURN (the never-written blocks go back to free space), so each file is N written blocks with
 * a hole after each one: N extents nothing can merge. The file of 100 extents is the baseline; the file
 * of 100,000 gets the same LAYOUTGETs at the same random block offsets (scaled to each file): READ of
 * one block and of 16, RW of one written block (nothing to allocate). Each is followed by an untimed
 * LAYOUTRETURN so that the client's layout state is alike on both files; the two files' calls
 * alternate; best of 5 rounds. Target (issue 6): big/small < 2. */
#include "tests/mds/layout_util.h"
#include "tests/mds/nfsclient.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BS 4096ull                 /* the pool's layout block size (pnfs-admin's default) */
#define CHUNK_EXTENTS 8192u        /* extents made per LAYOUTGET RW + LAYOUTCOMMIT (64 MiB of file) */
#define CALLS 2000u                /* timed LAYOUTGETs per file, length and round */
#define ROUNDS 5
#define MAXC 0xffffu
#define BLK LAYOUT4_BLOCK_VOLUME

struct lab {
	char dir[256];
	char urls[4][256];
	int n, up;
	char pool[300];
	pid_t mds;
	int mds_port;
};

static struct lab the_lab;

static const char *bin_dir(void)
{
	const char *b = getenv("PNFS_BIN");
	return b && *b ? b : "build/bin";
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int can_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* ---- the lab, the pool and pnfs-mds --------------------------------------------------------------- */

static void lab_stop(struct lab *l)
{
	char cmd[900];

	if (l->mds > 0) {
		kill(l->mds, SIGTERM);
		for (int i = 0; i < 100 && waitpid(l->mds, NULL, WNOHANG) != l->mds; i++)
			usleep(50000);
		kill(l->mds, SIGKILL);
		waitpid(l->mds, NULL, 0);
		l->mds = 0;
	}
	if (!l->up)
		return;
	snprintf(cmd, sizeof(cmd), "'%s/san-lab' down --dir '%s' >/dev/null 2>&1; rm -rf '%s'", bin_dir(), l->dir,
		 l->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-layoutget: could not stop the lab in %s\n", l->dir);
	l->up = 0;
}

static void on_signal(int sig)
{
	lab_stop(&the_lab);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int lab_start(struct lab *l)
{
	char cmd[1400], line[512];
	FILE *f;
	int port = free_port();
	size_t o;

	memset(l, 0, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "/tmp/bench-layoutget.%d.%d", (int)getpid(), port);
	snprintf(cmd, sizeof(cmd), "'%s/san-lab' up --luns 4 --size 1G --ram --dir '%s' --port %d --watch-pid %d 2>/dev/null",
		 bin_dir(), l->dir, port, (int)getpid());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	l->up = 1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "iscsi://", 8) && l->n < 4)
			snprintf(l->urls[l->n++], sizeof(l->urls[0]), "%s", line);
	}
	if (pclose(f) != 0 || l->n != 4) {
		fprintf(stderr, "bench-layoutget: san-lab up failed\n");
		return -1;
	}
	snprintf(l->pool, sizeof(l->pool), "%s/pool", l->dir);
	o = (size_t)snprintf(cmd, sizeof(cmd), "'%s/pnfs-admin' format --pool '%s'", bin_dir(), l->pool);
	for (int i = 0; i < l->n; i++)
		o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " '%s'", l->urls[i]);
	snprintf(cmd + o, sizeof(cmd) - o, " >/dev/null");
	if (system(cmd) != 0) {
		fprintf(stderr, "bench-layoutget: pnfs-admin format failed\n");
		return -1;
	}
	l->mds_port = free_port();
	l->mds = fork();
	if (l->mds < 0)
		return -1;
	if (l->mds == 0) {
		char portarg[16], log[400], prog[400];
		int fd;
		snprintf(portarg, sizeof(portarg), "%d", l->mds_port);
		snprintf(log, sizeof(log), "%s/mds.log", l->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		snprintf(prog, sizeof(prog), "%s/pnfs-mds", bin_dir());
		execl(prog, "pnfs-mds", "--foreground", "--listen", "127.0.0.1", "--port", portarg, "--pool", l->pool,
		      "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && !can_connect(l->mds_port); i++)
		usleep(20000);
	if (!can_connect(l->mds_port)) {
		fprintf(stderr, "bench-layoutget: pnfs-mds did not start (see %s/mds.log)\n", l->dir);
		return -1;
	}
	return 0;
}

/* ---- building a file of n extents through the protocol --------------------------------------------- */

struct bfile {
	const char *name;
	unsigned next;                 /* extents: written blocks at even block numbers */
	struct nc_fh fh;
	stateid4 open;
};

static void fail(const char *what, int rc)
{
	fprintf(stderr, "bench-layoutget: %s: %d%s\n", what, rc, rc < 0 ? " (no reply)" : " (NFS4ERR_*)");
	lab_stop(&the_lab);
	exit(1);
}

/* The storage offset of file offset foff in layout l (whose extents cover it). */
static int storage_of(const struct lt_layout *l, uint64_t foff, uint64_t *soff)
{
	for (unsigned i = 0; i < l->n; i++) {
		const pnfs_block_extent4 *e = &l->ext[i];
		if (foff >= e->bex_file_offset && foff < e->bex_file_offset + e->bex_length &&
		    e->bex_state == PNFS_BLOCK_INVALID_DATA) {
			*soff = e->bex_storage_offset + (foff - e->bex_file_offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* One chunk: LAYOUTGET RW of 2k blocks at first block base, commit of the k even blocks, return. */
static void build_chunk(struct nc *c, struct bfile *bf, uint64_t base_block, unsigned k, struct lt_layout *l,
			pnfs_block_extent4 *ext)
{
	uint64_t off = base_block * BS, len = 2ull * k * BS;
	stateid4 sid;
	int rc, present = 0;

	if ((rc = lt_layoutget(c, &bf->fh, BLK, LAYOUTIOMODE4_RW, off, len, len, &bf->open, MAXC, l)))
		fail("LAYOUTGET RW", rc);
	sid = l->sid;
	if (l->off > off || l->off + l->len < off + len)
		fail("LAYOUTGET RW did not cover the chunk", -ERANGE);
	for (unsigned i = 0; i < k; i++) {
		uint64_t foff = off + 2ull * i * BS;
		memcpy(ext[i].bex_vol_id, l->ext[0].bex_vol_id, NFS4_DEVICEID4_SIZE);
		ext[i].bex_file_offset = foff;
		ext[i].bex_length = BS;
		ext[i].bex_state = PNFS_BLOCK_READ_WRITE_DATA;
		if (storage_of(l, foff, &ext[i].bex_storage_offset))
			fail("LAYOUTGET RW: a block of the chunk is not INVALID_DATA", -EPROTO);
	}
	rc = lt_layoutcommit(c, &bf->fh, BLK, &sid, off, len, (int64_t)(off + 2ull * (k - 1) * BS + BS - 1), ext, k, 0,
			     0, NULL);
	if (rc)
		fail("LAYOUTCOMMIT", rc);
	/* All of it: a stripe-aligned allocation may reach past the chunk. */
	if ((rc = lt_layoutreturn_file(c, &bf->fh, BLK, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, &sid, &present)))
		fail("LAYOUTRETURN", rc);
	if (present)
		fail("LAYOUTRETURN left a layout", -EPROTO);
}

/* Count the file's extents with READ layouts, window after window: READ_DATA ones are written blocks,
 * NONE_DATA the holes between them. 0 when the map is as built. */
static int check_file(struct nc *c, struct bfile *bf, struct lt_layout *l)
{
	uint64_t off = 0, end = 2ull * bf->next * BS, data = 0, prev_end = 0;
	uint32_t maxc = 4 + 8 + 8 + 4 + 4 + 4 + 4 + 4000 * PROTO_BLOCK_EXTENT_XDR_SIZE;
	int rc, present;

	while (off < end) {
		if ((rc = lt_layoutget(c, &bf->fh, BLK, LAYOUTIOMODE4_READ, off, end - off, 0, &bf->open, maxc, l)))
			fail("LAYOUTGET READ (check)", rc);
		for (unsigned i = 0; i < l->n; i++) {
			const pnfs_block_extent4 *e = &l->ext[i];
			if (e->bex_file_offset + e->bex_length <= off)
				continue;
			if (e->bex_state == PNFS_BLOCK_READ_DATA) {
				if (e->bex_length != BS || e->bex_file_offset % (2 * BS) || (data && e->bex_file_offset <= prev_end))
					return -EPROTO;
				data++;
				prev_end = e->bex_file_offset + e->bex_length;
			}
			off = e->bex_file_offset + e->bex_length;
		}
		if ((rc = lt_layoutreturn_file(c, &bf->fh, BLK, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, &l->sid, &present)))
			fail("LAYOUTRETURN (check)", rc);
		if (!l->n)
			break;
	}
	return data == bf->next ? 0 : -EPROTO;
}

static void build_file(struct nc *c, struct bfile *bf, struct lt_layout *l, pnfs_block_extent4 *ext)
{
	struct nc_fh root;
	double t0 = now_s();
	int rc;

	if ((rc = nc_rootfh(c, &root)))
		fail("PUTROOTFH", rc);
	if ((rc = nc_open(c, &root, bf->name, 1, OPEN4_SHARE_ACCESS_BOTH, 0, &bf->fh, &bf->open)))
		fail("OPEN", rc);
	for (unsigned done = 0; done < bf->next;) {
		unsigned k = bf->next - done < CHUNK_EXTENTS ? bf->next - done : CHUNK_EXTENTS;
		build_chunk(c, bf, 2ull * done, k, l, ext);
		done += k;
	}
	if (check_file(c, bf, l)) {
		fprintf(stderr, "bench-layoutget: %s does not have %u separate extents\n", bf->name, bf->next);
		lab_stop(&the_lab);
		exit(1);
	}
	printf("built %-7s %6u extents (written blocks with a hole after each) in %.1f s, checked\n", bf->name,
	       bf->next, now_s() - t0);
}

/* ---- the measurement -------------------------------------------------------------------------------- */

/* The kinds of call timed: READ layouts of one block and of 16 (8 written blocks and 8 holes), and RW
 * layouts of one written block (no allocation: what a client rewriting data in place asks for). */
struct kind {
	const char *name;
	uint32_t iomode;
	uint64_t len;
	int written;                   /* offsets only at written (even) blocks */
};

static const struct kind kinds[] = {
	{ "READ 4K", LAYOUTIOMODE4_READ, BS, 0 },
	{ "READ 64K", LAYOUTIOMODE4_READ, 16 * BS, 0 },
	{ "RW 4K", LAYOUTIOMODE4_RW, BS, 1 },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* One LAYOUTGET of kind k at fraction r of the file, returned afterwards (untimed): its seconds. */
static double one_get(struct nc *c, struct bfile *bf, double r, const struct kind *k, struct lt_layout *l,
		      unsigned *extents)
{
	uint64_t span = 2ull * bf->next - k->len / BS, off = (uint64_t)(r * (double)(span + 1));
	double t0, t;
	int rc, present;

	if (k->written)
		off = (uint64_t)(r * (double)bf->next) * 2;
	off *= BS;
	t0 = now_s();
	rc = lt_layoutget(c, &bf->fh, BLK, k->iomode, off, k->len, k->len, &bf->open, MAXC, l);
	t = now_s() - t0;
	if (rc)
		fail(k->iomode == LAYOUTIOMODE4_RW ? "LAYOUTGET RW" : "LAYOUTGET READ", rc);
	if (k->written && (l->n != 1 || l->ext[0].bex_state != PNFS_BLOCK_READ_WRITE_DATA))
		fail("LAYOUTGET RW of a written block: not one READ_WRITE_DATA extent", -EPROTO);
	*extents += l->n;
	if ((rc = lt_layoutreturn_file(c, &bf->fh, BLK, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX, &l->sid, &present)))
		fail("LAYOUTRETURN", rc);
	return t;
}

int main(void)
{
	struct bfile files[2] = { { .name = "small", .next = 100 }, { .name = "big", .next = 100000 } };
	double best[2][NKINDS], *r;
	unsigned nextents[2][NKINDS];
	struct lt_layout *l = calloc(1, sizeof(*l));
	pnfs_block_extent4 *ext = calloc(CHUNK_EXTENTS, sizeof(*ext));
	struct nc *c;
	unsigned seed = 6;
	int ok = 1;

	r = calloc(CALLS, sizeof(*r));
	if (!l || !ext || !r)
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (lab_start(&the_lab)) {
		lab_stop(&the_lab);
		return 1;
	}
	printf("lab: 4 RAM LUNs of 1 GiB on one tgtd, pool striped (1 MiB unit, 4 KiB blocks), pnfs-mds on port %d\n",
	       the_lab.mds_port);
	c = nc_connect(the_lab.mds_port);
	if (!c || nc_setup(c, "bench-layoutget") != 0) {
		fprintf(stderr, "bench-layoutget: no session with pnfs-mds\n");
		lab_stop(&the_lab);
		return 1;
	}
	for (int f = 0; f < 2; f++)
		build_file(c, &files[f], l, ext);
	for (unsigned i = 0; i < CALLS; i++)
		r[i] = (double)rand_r(&seed) / ((double)RAND_MAX + 1.0);
	for (int f = 0; f < 2; f++)
		for (unsigned k = 0; k < NKINDS; k++)
			best[f][k] = 1e9;
	/* The two files' calls alternate, so that a noisy neighbour slows both alike. */
	for (int round = 0; round < ROUNDS; round++)
		for (unsigned k = 0; k < NKINDS; k++) {
			double t[2] = { 0, 0 };
			nextents[0][k] = nextents[1][k] = 0;
			for (unsigned i = 0; i < CALLS; i++)
				for (int f = 0; f < 2; f++)
					t[f] += one_get(c, &files[f], r[i], &kinds[k], l, &nextents[f][k]);
			for (int f = 0; f < 2; f++)
				if (t[f] < best[f][k])
					best[f][k] = t[f];
		}
	printf("\n%u LAYOUTGETs per row at random block offsets (each followed by an untimed LAYOUTRETURN), "
	       "the files' calls alternating; best of %d rounds\n",
	       CALLS, ROUNDS);
	printf("%-9s %-6s %8s %10s %13s %7s\n", "layout", "file", "extents", "per reply", "us/LAYOUTGET", "ratio");
	for (unsigned k = 0; k < NKINDS; k++) {
		for (int f = 0; f < 2; f++)
			printf("%-9s %-6s %8u %10.1f %13.1f %7.2f\n", kinds[k].name, files[f].name, files[f].next,
			       (double)nextents[f][k] / CALLS, best[f][k] / CALLS * 1e6, best[f][k] / best[0][k]);
		if (best[1][k] / best[0][k] >= 2.0)
			ok = 0;
	}
	printf("ratio 100000/100 extents:");
	for (unsigned k = 0; k < NKINDS; k++)
		printf(" %s %.2f%s", kinds[k].name, best[1][k] / best[0][k], k + 1 < NKINDS ? "," : "");
	printf(" (target < 2.0: %s)\n", ok ? "met" : "NOT met");
	nc_free(c);
	lab_stop(&the_lab);
	free(l);
	free(ext);
	free(r);
	return 0;
}
