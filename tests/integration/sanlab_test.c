/* san-lab as users run it: labs side by side, a used port refused, up idempotent, down stopping
 * only what its lab started, LUN data surviving a crashed or stopped target (and removed only when
 * asked), portals on other addresses, initiator ACLs, and the shaped multi-host lab. */
#include "blkmap/blkmap.h"
#include "tests/harness.h"
#include "tests/integration/wait.h"
#include "tests/lab.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static int pid_alive(int pid)
{
	char path[64];
	FILE *f;
	char state = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%*d %*s %c", &state) != 1)
		state = 0;
	fclose(f);
	return state != 0 && state != 'Z';
}

static int lab_pid(const struct test_lab *lab)
{
	char *out = NULL;
	int pid = -1;
	if (test_run(&out, "sed -n 's/^LAB_PID=//p' '%s/lab.env'", lab->dir) == 0 && out)
		pid = atoi(out);
	free(out);
	return pid;
}

static int wait_dead(int pid)
{
	TW_WAIT_UNTIL(!pid_alive(pid), 5 * 1000, 50);
	return !pid_alive(pid);
}

/* One synchronous I/O on a LUN through blkmap (write when wr); 0 or -errno. */
static int lun_io(const char *url, int wr, void *buf, size_t len, uint64_t off)
{
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_dev *dev = NULL;
	int rc = blkmap_ctx_create(NULL, &ctx);

	if (rc == 0)
		rc = blkmap_dev_open(ctx, url, 0, &dev);
	if (rc == 0)
		rc = wr ? blkmap_dev_pwrite(dev, buf, len, off) : blkmap_dev_pread(dev, buf, len, off);
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	return rc;
}

/* What a LUN says it is: its serial number and VPD 0x83 designators as blkmap decodes them, then
 * libiscsi's iscsi-inq print of VPD pages 0x83 and 0x80. 0, or -1 when it cannot be read. */
static int lun_identity(const char *url, char *buf, size_t len)
{
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_dev *dev = NULL;
	struct blkmap_inquiry inq;
	char *out = NULL;
	size_t o = 0;
	int rc = -1;

	buf[0] = 0;
	if (blkmap_ctx_create(NULL, &ctx) != 0)
		return -1;
	if (blkmap_dev_open(ctx, url, 0, &dev) == 0 && blkmap_dev_inquiry(dev, &inq) == 0 && inq.ndesig > 0) {
		o += (size_t)snprintf(buf, len, "serial %s\n", inq.serial);
		for (unsigned k = 0; k < inq.ndesig && o < len; k++) {
			char t[300];
			blkmap_designator_str(&inq.desig[k], t, sizeof(t));
			o += (size_t)snprintf(buf + o, len - o, "%s\n", t);
		}
		rc = 0;
	}
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	if (rc == 0 && o < len &&
	    test_run(&out, "iscsi-inq -e 1 -c 131 '%s' && iscsi-inq -e 1 -c 128 '%s'", url, url) == 0 && out)
		snprintf(buf + o, len - o, "%s", out);
	else
		rc = -1;
	free(out);
	return rc;
}

static uint64_t file_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void test_two_labs_and_iscsi_ls(void)
{
	struct test_lab *a = lab_up(4, "64M", NULL);
	struct test_lab *b = lab_up(2, "32M", &(struct lab_opts){ .ram = 1 });
	char *out = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_NOT_EQUAL(a->port, b->port);
	CU_ASSERT_EQUAL(test_run(&out, "iscsi-ls -s iscsi://127.0.0.1:%d", a->port), 0);
	CU_ASSERT_EQUAL(count_lines_with(out, "Type:DIRECT_ACCESS"), 4);
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "iscsi-ls -s iscsi://127.0.0.1:%d", b->port), 0);
	CU_ASSERT_EQUAL(count_lines_with(out, "Type:DIRECT_ACCESS"), 2);
	free(out);
	/* Exact sizes: READ CAPACITY(16) of every LUN equals --size. */
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(test_run(&out, "iscsi-readcapacity16 '%s'", a->urls[i]), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "Total size:67108864\n"));
		free(out);
	}
	CU_ASSERT_EQUAL(test_run(&out, "iscsi-readcapacity16 '%s'", b->urls[1]), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Total size:33554432\n"));
	free(out);
	/* RAM LUNs live under /dev/shm. */
	CU_ASSERT_EQUAL(strncmp(b->files[0], "/dev/shm/", 9), 0);
	CU_ASSERT_EQUAL(access(b->files[0], F_OK), 0);

	/* Taking A down leaves B serving. */
	int bpid = lab_pid(b);
	char afile[300];
	snprintf(afile, sizeof(afile), "%s", a->files[0]);
	lab_down(a);
	CU_ASSERT_NOT_EQUAL(access(afile, F_OK), 0);
	CU_ASSERT(pid_alive(bpid));
	CU_ASSERT_EQUAL(test_run(NULL, "iscsi-readcapacity16 '%s' >/dev/null", b->urls[0]), 0);
	snprintf(afile, sizeof(afile), "%s", b->files[0]);
	lab_down(b);
	CU_ASSERT(!pid_alive(bpid));
	CU_ASSERT_NOT_EQUAL(access(afile, F_OK), 0);
}

static void test_used_port_and_idempotent_up(void)
{
	struct test_lab *a = lab_up(1, "8M", NULL);
	const char *dir2 = test_tmpdir("lab-other");
	char *out = NULL;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	/* Another lab on A's port: refused, clearly, and the directory it would have made is not left */
	char sub[400];
	snprintf(sub, sizeof(sub), "%s/lab", dir2);
	rc = test_run(&out, "'%s' up --luns 1 --size 8M --dir '%s' --port %d 2>&1", test_bin("san-lab"),
		      sub, a->port);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "in use"));
	free(out);
	CU_ASSERT_NOT_EQUAL(access(sub, F_OK), 0);
	/* The same up again in A's directory: nothing new starts, the same URLs come back. */
	int pid = lab_pid(a);
	rc = test_run(&out, "'%s' up --luns 1 --size 8M --dir '%s' --port %d 2>/dev/null", test_bin("san-lab"),
		      a->dir, a->port);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, a->urls[0]));
	free(out);
	CU_ASSERT_EQUAL(lab_pid(a), pid);
	/* A different lab in the same directory: refused while A runs. */
	rc = test_run(NULL, "'%s' up --luns 2 --size 8M --dir '%s' --port %d 2>/dev/null", test_bin("san-lab"),
		      a->dir, a->port);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_EQUAL(lab_pid(a), pid);
	/* status tells it runs. */
	CU_ASSERT_EQUAL(test_run(&out, "'%s' status --dir '%s'", test_bin("san-lab"), a->dir), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "running"));
	free(out);
	lab_down(a);
	/* down twice, or where nothing ever ran, is fine. */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' down --dir '%s' 2>/dev/null", test_bin("san-lab"), dir2), 0);
}

/* The largest Data-Out segment the initiator sent in a 1 MiB WRITE to the lab's LUN, read off a capture
 * of the portal's traffic with tshark's iSCSI dissector; 0 with why set when it cannot be seen here. */
static long max_data_out_segment(struct test_lab *lab, char *why, size_t whylen)
{
	const char *dir = test_tmpdir("cap");
	char cap[400], *out = NULL;
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct blkmap_dev *dev = NULL;
	long max = 0;
	void *buf = calloc(1, 1 << 20);
	pid_t pid;

	snprintf(cap, sizeof(cap), "%s/iscsi.pcapng", dir);
	if (access("/usr/bin/dumpcap", X_OK) != 0 || access("/usr/bin/tshark", X_OK) != 0) {
		snprintf(why, whylen, "dumpcap or tshark is not installed");
		free(buf);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		char filter[64];
		int devnull = open("/dev/null", O_WRONLY);
		snprintf(filter, sizeof(filter), "tcp port %d", lab->port);
		if (devnull >= 0)
			dup2(devnull, 2);
		execl("/usr/bin/dumpcap", "dumpcap", "-q", "-i", "lo", "-f", filter, "-w", cap, (char *)NULL);
		_exit(127);
	}
	/* capturing once the file has its header */
	TW_WAIT_UNTIL(access(cap, F_OK) == 0, 2 * 1000, 20);
	/* on purpose: dumpcap writes its header before it captures, and says nothing when it does */
	usleep(200000);
	blkmap_ctx_opts_init(&o);
	if (blkmap_ctx_create(&o, &ctx) == 0 && blkmap_dev_open(ctx, lab->urls[0], 0, &dev) == 0) {
		CU_ASSERT_EQUAL(blkmap_dev_pwrite(dev, buf, 1 << 20, 0), 0);
	} else {
		CU_FAIL("cannot open the lab's LUN");
	}
	blkmap_dev_close(dev);
	blkmap_ctx_destroy(ctx);
	free(buf);
	usleep(200000); /* on purpose: dumpcap's last packets reach its file */
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	if (access(cap, F_OK) != 0) {
		snprintf(why, whylen, "dumpcap captured nothing on lo (no capture permission here?)");
		return 0;
	}
	/* Data-Out is opcode 0x05; the lab's port is not 3260, so tell tshark it is iSCSI */
	if (test_run(&out, "tshark -r '%s' -d tcp.port==%d,iscsi -Y 'iscsi.opcode == 0x05' -T fields "
			   "-e iscsi.datasegmentlength 2>/dev/null",
		     cap, lab->port) == 0 && out) {
		for (char *p = out; *p;) {
			long v = strtol(p, &p, 0);
			if (v > max)
				max = v;
			while (*p == '\n' || *p == ',' || *p == ' ')
				p++;
			if (*p && (*p < '0' || *p > '9'))
				break;
		}
	}
	free(out);
	if (max == 0)
		snprintf(why, whylen, "tshark found no iSCSI Data-Out PDU in the capture");
	return max;
}

/* Target parameters: san-lab's default lets initiators send 256 KiB write segments (tgt's own is 8 KiB),
 * --param puts any back, and one tgtd refuses fails the up and leaves nothing running. */
static void test_target_params(void)
{
	struct lab_opts small = { .ram = 1, .params = "MaxRecvDataSegmentLength=8192" };
	struct lab_opts ram = { .ram = 1 };
	struct test_lab *a = lab_up(1, "8M", &ram);
	const char *dir = test_tmpdir("lab-bad-param");
	char why[200] = "", *out = NULL;
	long seg;
	int rc, port;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	seg = max_data_out_segment(a, why, sizeof(why));
	lab_down(a);
	if (seg == 0) {
		test_skip("%s", why);
		return;
	}
	CU_ASSERT_EQUAL(seg, 262144);
	a = lab_up(1, "8M", &small);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(max_data_out_segment(a, why, sizeof(why)), 8192);
	lab_down(a);

	/* a parameter tgtd refuses: exit 1 naming it, no tgtd left on the port, and nothing the up made
	 * left behind (its directory, its RAM LUN files), so the directory is reusable */
	port = test_free_port();
	rc = test_run(&out, "'%s' up --luns 1 --size 8M --ram --dir '%s/lab' --port %d --param NoSuchKey=1 2>&1",
		      test_bin("san-lab"), dir, port);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "NoSuchKey=1"));
	free(out);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "ss -Hltn 'sport = :%d' | grep -q .", port), 0);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "test -e '%s/lab'", dir), 0);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "ls -d /dev/shm/san-lab-%d.* 2>/dev/null | grep -q .", port), 0);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "'%s' status --dir '%s' 2>/dev/null | grep -q running",
				     test_bin("san-lab"), dir), 0);
	/* and a malformed one is a usage error */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' up --luns 1 --dir '%s' --param nonsense 2>/dev/null", test_bin("san-lab"),
				 dir),
			2);
	test_run(NULL, "'%s' down --dir '%s' >/dev/null 2>&1", test_bin("san-lab"), dir);
}

/* Minor page faults a process has taken so far, all its threads together (field 10 of its stat). */
static long minor_faults(int pid)
{
	char path[64], buf[1024], *p;
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %ld", &v) != 1)
			v = -1;
	fclose(f);
	return v;
}

#define BUF_MIB 32 /* 1 MiB reads in flight: a queue full of them, as the engine keeps */

struct read_pump {
	struct blkmap_dev *dev;
	uint8_t *ring;
	uint64_t next, end;
	unsigned slot;
	int failed;
};

static void read_pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv);

static void read_pump_submit(struct read_pump *p)
{
	struct iovec iov = { p->ring + (size_t)(p->slot++ % BUF_MIB) * (1 << 20), 1 << 20 };
	if (blkmap_dev_readv_async(p->dev, p->next, &iov, 1, read_pump_cb, p) < 0) {
		p->failed++;
		p->next = p->end;
		return;
	}
	p->next += 1 << 20;
}

static void read_pump_cb(struct blkmap_ctx *ctx, int status, const struct blkmap_io_result *res, void *priv)
{
	struct read_pump *p = priv;
	(void)ctx;
	(void)res;
	if (status < 0)
		p->failed++;
	if (p->next < p->end && !p->failed)
		read_pump_submit(p);
}

/* The lab's tgtd page faults while its 64 MiB LUN is read five times over in 1 MiB commands, 32 at once,
 * counted over the last pass (the first ones let tgtd's heap grow to its working size; on a reusing
 * tgtd here that takes two or three); -1 on failure. */
static long faults_per_pass(struct test_lab *lab)
{
	struct blkmap_ctx_opts o;
	struct blkmap_ctx *ctx = NULL;
	struct read_pump p = { 0 };
	long f0 = 0, faults = -1;
	int pid = lab_pid(lab);

	if (posix_memalign((void **)&p.ring, 4096, (size_t)BUF_MIB << 20) != 0)
		return -1;
	blkmap_ctx_opts_init(&o);
	if (blkmap_ctx_create(&o, &ctx) < 0 || blkmap_dev_open(ctx, lab->urls[0], 0, &p.dev) < 0)
		goto out;
	for (int pass = 0; pass < 5; pass++) {
		p.next = 0;
		p.end = 64 << 20;
		f0 = minor_faults(pid);
		for (int i = 0; i < BUF_MIB; i++)
			read_pump_submit(&p);
		if (blkmap_wait_idle(ctx) < 0 || p.failed || f0 < 0)
			goto out;
	}
	faults = minor_faults(pid) - f0;
out:
	blkmap_dev_close(p.dev);
	blkmap_ctx_destroy(ctx);
	free(p.ring);
	return faults;
}

/* A 1-LUN RAM lab started with its tgtd's malloc mode (stock or not), which `san-lab status` must
 * show; then tgtd's faults over a pass of 1 MiB reads (faults_per_pass), or -1 when the lab failed */
static long faults_with(int stock)
{
	struct lab_opts opts = { .ram = 1, .stock_malloc = stock };
	struct test_lab *l = lab_up(1, "64M", &opts);
	char *out = NULL, want[40];
	long faults;

	if (!l) {
		CU_FAIL("the lab did not come up");
		return -1;
	}
	snprintf(want, sizeof(want), "tgtd malloc: %s", stock ? "stock" : "reuse");
	CU_ASSERT_EQUAL(test_run(&out, "'%s' status --dir '%s'", test_bin("san-lab"), l->dir), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, want));
	free(out);
	faults = faults_per_pass(l);
	lab_down(l);
	return faults;
}

/* tgtd's command buffers: with san-lab's default malloc tuning a queue of 1 MiB reads reuses freed
 * buffers and barely faults; with glibc's default (--tgtd-malloc stock) the same reads fault in every
 * page of every buffer anew, which on a VM makes 1 MiB I/O several times slower. */
static void test_tgtd_malloc(void)
{
	const long pages = (64 << 20) / 4096;
	long fr = faults_with(0), fs = faults_with(1);

	CU_ASSERT_FATAL(fr >= 0 && fs >= 0);
	/* a 64 MiB pass touches 16384 pages of buffers: reused, a few hundred faults at most */
	CU_ASSERT(fr < pages / 16);
	/* the control: the count does see faults when buffers are mapped afresh */
	CU_ASSERT(fs > pages / 2);
	if (fr >= pages / 16 || fs <= pages / 2)
		fprintf(stderr, "tgtd faults per 64 MiB pass: reuse %ld, stock %ld\n", fr, fs);
	/* a wrong value is a usage error */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' up --luns 1 --dir '%s' --tgtd-malloc fast 2>/dev/null",
				 test_bin("san-lab"), test_tmpdir("lab-bad-malloc")),
			2);
}

/* A tgtd that san-lab did not start must survive every san-lab down. */
static void kill_foreign(void *arg)
{
	int pid = *(int *)arg;
	if (pid > 0)
		kill(pid, SIGKILL);
}

static void test_down_leaves_foreign_tgtd(void)
{
	static int foreign;
	int port = test_free_port(), ctl = 32000 + port % 700;
	char *out = NULL;
	struct test_lab *a;
	int h;

	CU_ASSERT_EQUAL_FATAL(test_run(&out, "setsid tgtd -f -C %d --iscsi portal=127.0.0.1:%d "
					      "</dev/null >/dev/null 2>&1 & echo $!", ctl, port), 0);
	foreign = atoi(out);
	free(out);
	h = test_cleanup_push(kill_foreign, &foreign);
	TW_WAIT_UNTIL(test_run(NULL, "tgtadm -C %d --mode system --op show >/dev/null 2>&1", ctl) == 0, 5 * 1000, 100);
	a = lab_up(1, "8M", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	lab_down(a);
	CU_ASSERT(pid_alive(foreign));
	CU_ASSERT_EQUAL(test_run(NULL, "tgtadm -C %d --mode system --op show >/dev/null 2>&1", ctl), 0);
	kill_foreign(&foreign);
	test_cleanup_cancel(h);
}

#define PAT_MIB (1u << 20)

/* Two LUNs of 16 MiB, a pattern at the first and last MiB of each, then each LUN's identity. */
static void write_patterns(struct test_lab *lab, char ids[][4096], uint64_t seed)
{
	unsigned char *pat = malloc(PAT_MIB);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pat);
	for (int l = 0; l < lab->nluns; l++) {
		for (int k = 0; k < 2; k++) {
			test_fill_random(pat, PAT_MIB, seed + (uint64_t)(2 * l + k));
			CU_ASSERT_EQUAL(lun_io(lab->urls[l], 1, pat, PAT_MIB, k ? lab->lun_bytes - PAT_MIB : 0), 0);
		}
		CU_ASSERT_EQUAL(lun_identity(lab->urls[l], ids[l], sizeof(ids[l])), 0);
	}
	free(pat);
}

/* The patterns are back and every LUN is the unit it was: size, serial, designators. */
static void check_patterns(struct test_lab *lab, char ids[][4096], uint64_t seed)
{
	unsigned char *pat = malloc(PAT_MIB), *back = malloc(PAT_MIB);
	char now[4096], *out = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pat);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	for (int l = 0; l < lab->nluns; l++) {
		char want[64];
		snprintf(want, sizeof(want), "Total size:%llu\n", (unsigned long long)lab->lun_bytes);
		CU_ASSERT_EQUAL(test_run(&out, "iscsi-readcapacity16 '%s'", lab->urls[l]), 0);
		CU_ASSERT_PTR_NOT_NULL(out && strstr(out, want));
		free(out);
		out = NULL;
		CU_ASSERT_EQUAL(file_bytes(lab->files[l]), lab->lun_bytes);
		for (int k = 0; k < 2; k++) {
			test_fill_random(pat, PAT_MIB, seed + (uint64_t)(2 * l + k));
			memset(back, 0, PAT_MIB);
			CU_ASSERT_EQUAL(lun_io(lab->urls[l], 0, back, PAT_MIB, k ? lab->lun_bytes - PAT_MIB : 0), 0);
			CU_ASSERT(memcmp(pat, back, PAT_MIB) == 0);
		}
		CU_ASSERT_EQUAL(lun_identity(lab->urls[l], now, sizeof(now)), 0);
		CU_ASSERT_STRING_EQUAL(now, ids[l]);
		if (strcmp(now, ids[l]) != 0)
			fprintf(stderr, "LUN %d was:\n%s\nand is now:\n%s\n", l + 1, ids[l], now);
	}
	free(pat);
	free(back);
}

static void test_shaped_hosts(void)
{
	struct lab_opts o = { .hosts = 2, .rate_mbit = 100 };
	struct test_lab *lab;
	char *out = NULL;
	char ns[64];

	TEST_SKIP_IF(!test_is_root(), "network namespaces and tc need root");
	TEST_SKIP_IF(test_run(NULL, "ip netns list >/dev/null 2>&1") != 0, "ip netns does not work here");
	lab = lab_up(2, "8M", &o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	CU_ASSERT_EQUAL(lab->nluns, 2);
	for (int i = 0; i < 2; i++) {
		/* Each host's LUN answers from inside its namespace's address. */
		CU_ASSERT_PTR_NULL(strstr(lab->urls[i], "127.0.0.1"));
		CU_ASSERT_EQUAL(test_run(&out, "iscsi-readcapacity16 '%s'", lab->urls[i]), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "Total size:8388608\n"));
		free(out);
		/* Both directions shaped to the asked rate. */
		snprintf(ns, sizeof(ns), "sl%dh%d", lab->port, i + 1);
		CU_ASSERT_EQUAL(test_run(&out, "tc class show dev %sa", ns), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "rate 100Mbit"));
		free(out);
		CU_ASSERT_EQUAL(test_run(&out, "ip netns exec %s tc class show dev %sb", ns, ns), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "rate 100Mbit"));
		free(out);
	}
	/* No two hosts' LUNs share an identity (VPD 0x83): initiators that name LUNs by designator
	 * (SCSI layouts, multipath) must see two devices. */
	{
		struct blkmap_ctx *ctx = NULL;
		struct blkmap_inquiry inq[2];
		char text[2][4][300];
		unsigned nd[2] = { 0, 0 };

		CU_ASSERT_EQUAL_FATAL(blkmap_ctx_create(NULL, &ctx), 0);
		for (int i = 0; i < 2; i++) {
			struct blkmap_dev *dev = NULL;
			CU_ASSERT_EQUAL_FATAL(blkmap_dev_open(ctx, lab->urls[i], 0, &dev), 0);
			CU_ASSERT_EQUAL(blkmap_dev_inquiry(dev, &inq[i]), 0);
			for (unsigned k = 0; k < inq[i].ndesig && nd[i] < 4; k++)
				if (inq[i].desig[k].association == 0)
					blkmap_designator_str(&inq[i].desig[k], text[i][nd[i]++], sizeof(text[i][0]));
			blkmap_dev_close(dev);
		}
		CU_ASSERT(nd[0] > 0 && nd[1] > 0);
		for (unsigned a = 0; a < nd[0]; a++)
			for (unsigned b = 0; b < nd[1]; b++)
				if (strcmp(text[0][a], text[1][b]) == 0) {
					fprintf(stderr, "both hosts' LUNs are %s\n", text[0][a]);
					CU_FAIL("two LUNs of the lab share a designator");
				}
		CU_ASSERT_STRING_NOT_EQUAL(inq[0].serial, inq[1].serial);
		blkmap_ctx_destroy(ctx);
	}
	/* Both storage hosts crash; the same up clears what is left of them (their namespaces) and
	 * serves the same LUNs again, data and identities. */
	{
		char ids[2][4096];
		int pids[2] = { -1, -1 };

		write_patterns(lab, ids, 400);
		for (int i = 0; i < 2; i++) {
			if (test_run(&out, "sed -n 's/^H%d_PID=//p' '%s/lab.env'", i + 1, lab->dir) == 0 && out)
				pids[i] = atoi(out);
			free(out);
			out = NULL;
			CU_ASSERT_FATAL(pids[i] > 0);
			kill(pids[i], SIGKILL);
		}
		CU_ASSERT(wait_dead(pids[0]) && wait_dead(pids[1]));
		CU_ASSERT_EQUAL_FATAL(lab_restart(lab), 0);
		check_patterns(lab, ids, 400);
	}
	snprintf(ns, sizeof(ns), "sl%dh", lab->port);
	lab_down(lab);
	/* down removed the namespaces (and with them the veths and their qdiscs). */
	CU_ASSERT_EQUAL(test_run(&out, "ip netns list"), 0);
	CU_ASSERT_PTR_NULL(strstr(out, ns));
	free(out);
}

/* A lab tied to a process goes down by itself when that process dies (a crashed test runner), and
 * the LUN files its up created go with it. */
static void test_watch_pid_teardown(void)
{
	const char *dir = test_tmpdir("lab-watch");
	int port = test_free_port(), watched, pid = -1;
	char *out = NULL;

	CU_ASSERT_EQUAL_FATAL(test_run(&out, "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!"), 0);
	watched = atoi(out);
	free(out);
	CU_ASSERT_EQUAL_FATAL(test_run(NULL, "'%s' up --luns 1 --size 8M --dir '%s' --port %d --watch-pid %d "
					     ">/dev/null 2>&1", test_bin("san-lab"), dir, port, watched), 0);
	if (test_run(&out, "sed -n 's/^LAB_PID=//p' '%s/lab.env'", dir) == 0 && out)
		pid = atoi(out);
	free(out);
	CU_ASSERT_FATAL(pid > 0 && pid_alive(pid));
	kill(watched, SIGKILL);
	char state[400], lun[400], data[400];
	snprintf(state, sizeof(state), "%s/lab.env", dir);
	snprintf(lun, sizeof(lun), "%s/luns.d/lun1.img", dir);
	snprintf(data, sizeof(data), "%s/data.env", dir);
	/* The watcher's teardown removes lab.env before the LUN files and data.env: wait for all. */
	TW_WAIT_UNTIL(!pid_alive(pid) && access(state, F_OK) != 0 && access(lun, F_OK) != 0 && access(data, F_OK) != 0,
		      10 * 1000, 100);
	CU_ASSERT(!pid_alive(pid));
	CU_ASSERT_NOT_EQUAL(access(state, F_OK), 0);
	/* the LUN files that up made were the watched process's scratch space: gone with it */
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "test -e '%s/luns.d/lun1.img'", dir), 0);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "test -e '%s/data.env'", dir), 0);
	/* Belt and braces if the watcher failed: never leave it running. */
	test_run(NULL, "'%s' down --dir '%s' >/dev/null 2>&1", test_bin("san-lab"), dir);
}

/* tgtd killed (a crashed target, a storage host gone), then the same up: the LUNs come back with
 * their data and as the same units (VPD 0x80 serial, VPD 0x83 designators), files and RAM alike. */
static void test_crash_restart_keeps_data(void)
{
	for (int ram = 0; ram < 2; ram++) {
		struct test_lab *lab = lab_up(2, "16M", &(struct lab_opts){ .ram = ram });
		char ids[2][4096];
		int pid;

		CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
		write_patterns(lab, ids, 100 + ram);
		CU_ASSERT_STRING_NOT_EQUAL(ids[0], ids[1]);
		pid = lab_pid(lab);
		CU_ASSERT_EQUAL_FATAL(lab_kill_target(lab), 0);
		CU_ASSERT_FATAL(wait_dead(pid));
		/* gone for real: the LUN does not answer */
		CU_ASSERT_NOT_EQUAL(test_run(NULL, "iscsi-readcapacity16 '%s' >/dev/null 2>&1", lab->urls[0]), 0);
		CU_ASSERT_EQUAL_FATAL(lab_restart(lab), 0);
		CU_ASSERT(lab_pid(lab) != pid && pid_alive(lab_pid(lab)));
		check_patterns(lab, ids, 100 + ram);
		lab_down(lab);
	}
}

/* Plain down keeps the LUN files (RAM ones too) and a later up serves them again; down --wipe
 * removes them, and the next up starts empty. */
static void test_down_keeps_wipe_removes(void)
{
	for (int ram = 0; ram < 2; ram++) {
		struct test_lab *lab = lab_up(2, "16M", &(struct lab_opts){ .ram = ram });
		char ids[2][4096], *out = NULL, datadir[300], *slash;
		unsigned char *back = malloc(PAT_MIB), *zero = calloc(1, PAT_MIB);
		int pid;

		CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
		CU_ASSERT_PTR_NOT_NULL_FATAL(back);
		CU_ASSERT_PTR_NOT_NULL_FATAL(zero);
		snprintf(datadir, sizeof(datadir), "%s", lab->files[0]);
		slash = strrchr(datadir, '/');
		CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
		*slash = 0;
		write_patterns(lab, ids, 200 + ram);
		pid = lab_pid(lab);
		CU_ASSERT_EQUAL(test_run(NULL, "'%s' down --dir '%s' 2>/dev/null", test_bin("san-lab"), lab->dir), 0);
		CU_ASSERT(wait_dead(pid));
		CU_ASSERT_EQUAL(access(lab->files[0], F_OK), 0);
		CU_ASSERT_EQUAL(file_bytes(lab->files[1]), lab->lun_bytes);
		/* status says what the lab left, and exits 1 as urls does: no lab runs */
		CU_ASSERT_EQUAL(test_run(&out, "'%s' status --dir '%s'", test_bin("san-lab"), lab->dir), 1);
		CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "is down") && strstr(out, "kept:") && strstr(out, datadir));
		CU_ASSERT_PTR_NULL(out && strstr(out, "running"));
		free(out);
		CU_ASSERT_EQUAL(test_run(NULL, "'%s' urls --dir '%s' 2>/dev/null", test_bin("san-lab"), lab->dir), 1);
		CU_ASSERT_EQUAL_FATAL(lab_restart(lab), 0);
		check_patterns(lab, ids, 200 + ram);

		CU_ASSERT_EQUAL(test_run(NULL, "'%s' down --wipe --dir '%s' 2>/dev/null", test_bin("san-lab"), lab->dir),
				0);
		CU_ASSERT_NOT_EQUAL(access(lab->files[0], F_OK), 0);
		CU_ASSERT_NOT_EQUAL(access(datadir, F_OK), 0);
		CU_ASSERT_EQUAL(test_run(&out, "'%s' status --dir '%s'", test_bin("san-lab"), lab->dir), 1);
		CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "no lab in"));
		free(out);
		/* nothing left to serve: the same up makes new, empty LUNs */
		CU_ASSERT_EQUAL_FATAL(test_run(&out, "%s 2>/dev/null", lab->up_cmd), 0);
		free(out);
		CU_ASSERT_EQUAL(test_run(&out, "sed -n 's/^LAB_DATADIR=//p' '%s/lab.env'", lab->dir), 0);
		if (out) {
			out[strcspn(out, "\n")] = 0;
			snprintf(lab->files[0], sizeof(lab->files[0]), "%s/lun1.img", out);
		}
		free(out);
		CU_ASSERT_EQUAL(lun_io(lab->urls[0], 0, back, PAT_MIB, 0), 0);
		CU_ASSERT(memcmp(back, zero, PAT_MIB) == 0);
		free(back);
		free(zero);
		lab_down(lab);
	}
}

/* LUN files of another geometry are not served and not touched: a different count, size or
 * placement is refused, naming the difference; a failed up over them keeps them; --fresh starts
 * over with empty LUNs of the new geometry. */
static void test_geometry_mismatch_and_fresh(void)
{
	struct test_lab *lab = lab_up(2, "8M", NULL);
	unsigned char *pat = malloc(PAT_MIB), *back = malloc(PAT_MIB), *zero = calloc(1, PAT_MIB);
	const char *sl = test_bin("san-lab");
	char *out = NULL;
	int pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pat);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_PTR_NOT_NULL_FATAL(zero);
	test_fill_random(pat, PAT_MIB, 300);
	CU_ASSERT_EQUAL(lun_io(lab->urls[0], 1, pat, PAT_MIB, 0), 0);
	pid = lab_pid(lab);
	CU_ASSERT_EQUAL_FATAL(lab_kill_target(lab), 0);
	CU_ASSERT_FATAL(wait_dead(pid));

	CU_ASSERT_EQUAL(test_run(&out, "'%s' up --luns 3 --size 8M --dir '%s' --port %d 2>&1", sl, lab->dir, lab->port),
			1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "LUN count differs (2 there, 3 asked)") && strstr(out, "--fresh"));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' up --luns 2 --size 16M --dir '%s' --port %d 2>&1", sl, lab->dir, lab->port),
			1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "LUN size differs (8M there, 16M asked)"));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' up --luns 2 --size 8M --ram --dir '%s' --port %d 2>&1", sl, lab->dir,
				 lab->port),
			1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "--ram"));
	free(out);
	/* the right geometry, but a tgtd that refuses the target: fails, and the files stay */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' up --luns 2 --size 8M --dir '%s' --port %d --param NoSuchKey=1 2>/dev/null",
				 sl, lab->dir, lab->port),
			1);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "ss -Hltn 'sport = :%d' | grep -q .", lab->port), 0);
	for (int l = 0; l < 2; l++)
		CU_ASSERT_EQUAL(file_bytes(lab->files[l]), 8u << 20);
	{
		FILE *f = fopen(lab->files[0], "rb");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(fread(back, 1, PAT_MIB, f), PAT_MIB);
		fclose(f);
		CU_ASSERT(memcmp(back, pat, PAT_MIB) == 0);
	}

	/* --fresh: the new geometry, every LUN empty */
	CU_ASSERT_EQUAL_FATAL(test_run(&out, "'%s' up --luns 3 --size 16M --fresh --dir '%s' --port %d --watch-pid %d "
					     "2>/dev/null",
				       sl, lab->dir, lab->port, (int)getpid()),
			      0);
	CU_ASSERT_EQUAL(count_lines_with(out, "iscsi://"), 3);
	free(out);
	for (int l = 0; l < 3; l++) {
		char url[300], path[400];
		snprintf(url, sizeof(url), "iscsi://127.0.0.1:%d/%s/%d", lab->port, lab->iqn, l + 1);
		snprintf(path, sizeof(path), "%s/luns.d/lun%d.img", lab->dir, l + 1);
		CU_ASSERT_EQUAL(file_bytes(path), 16u << 20);
		CU_ASSERT_EQUAL(test_run(&out, "iscsi-readcapacity16 '%s'", url), 0);
		CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "Total size:16777216\n"));
		free(out);
		memset(back, 0xff, PAT_MIB);
		CU_ASSERT_EQUAL(lun_io(url, 0, back, PAT_MIB, 0), 0);
		CU_ASSERT(memcmp(back, zero, PAT_MIB) == 0);
	}
	/* --fresh on a lab that is up is refused: it is not a way to erase a running lab's LUNs */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' up --luns 3 --size 16M --fresh --dir '%s' --port %d 2>/dev/null", sl,
				 lab->dir, lab->port),
			1);
	free(pat);
	free(back);
	free(zero);
	lab_down(lab);
}

/* --portal: a lab on a second loopback address listens there only, and its URLs, status and urls
 * say so; another lab on 127.0.0.1 takes the same port, as another unit. Addresses this host does
 * not have are refused. */
static void test_portal_address(void)
{
	struct test_lab *lab = lab_up(1, "8M", &(struct lab_opts){ .portal = "127.0.0.2" });
	const char *sl = test_bin("san-lab"), *other = test_tmpdir("lab-portal-other");
	char want[200], *out = NULL, id2[4096], id1[4096], url1[300];

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	snprintf(want, sizeof(want), "iscsi://127.0.0.2:%d/", lab->port);
	CU_ASSERT_EQUAL(strncmp(lab->urls[0], want, strlen(want)), 0);
	CU_ASSERT_EQUAL(test_run(&out, "iscsi-readcapacity16 '%s'", lab->urls[0]), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "Total size:8388608\n"));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "ss -Hltn 'sport = :%d'", lab->port), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "127.0.0.2:"));
	CU_ASSERT_PTR_NULL(out && strstr(out, "127.0.0.1:"));
	free(out);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "iscsi-ls iscsi://127.0.0.1:%d >/dev/null 2>&1", lab->port), 0);
	snprintf(want, sizeof(want), "portal 127.0.0.2:%d: running", lab->port);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' status --dir '%s'", sl, lab->dir), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, want));
	free(out);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' urls --dir '%s'", sl, lab->dir), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strncmp(out, lab->urls[0], strlen(lab->urls[0])) == 0);
	free(out);
	snprintf(want, sizeof(want), "-p 127.0.0.2:%d", lab->port);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' iscsiadm --dir '%s'", sl, lab->dir), 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, want));
	free(out);

	/* the same port on 127.0.0.1: a lab of its own, another unit */
	CU_ASSERT_EQUAL_FATAL(test_run(&out, "'%s' up --luns 1 --size 8M --dir '%s' --port %d --watch-pid %d 2>/dev/null",
				       sl, other, lab->port, (int)getpid()),
			      0);
	snprintf(url1, sizeof(url1), "%s", out ? out : "");
	url1[strcspn(url1, "\n")] = 0;
	free(out);
	CU_ASSERT_EQUAL(strncmp(url1, "iscsi://127.0.0.1:", 18), 0);
	CU_ASSERT_EQUAL(lun_identity(lab->urls[0], id2, sizeof(id2)), 0);
	CU_ASSERT_EQUAL(lun_identity(url1, id1, sizeof(id1)), 0);
	CU_ASSERT_STRING_NOT_EQUAL(id1, id2);
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' down --wipe --dir '%s' 2>/dev/null", sl, other), 0);
	/* and 127.0.0.2's lab still serves */
	CU_ASSERT_EQUAL(test_run(NULL, "iscsi-readcapacity16 '%s' >/dev/null", lab->urls[0]), 0);
	lab_down(lab);

	/* PORT in --portal is --port; two different ones are a usage error; a foreign address fails */
	CU_ASSERT_EQUAL(test_run(NULL, "'%s' up --luns 1 --dir '%s/x' --portal 127.0.0.2:3260 --port 3261 2>/dev/null",
				 sl, other),
			2);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' up --luns 1 --size 8M --dir '%s/x' --portal 192.0.2.77 2>&1", sl, other),
			1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "192.0.2.77"));
	free(out);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "test -e '%s/x'", other), 0);
}

/* --initiator twice: both names log in (a host's libiscsi and a guest's open-iscsi, say); a third
 * name is refused. */
static void test_two_initiators(void)
{
	struct lab_opts o = { .initiator = "iqn.2024-01.test.pnfs:host iqn.2024-01.test.pnfs:guest" };
	struct test_lab *lab = lab_up(1, "4M", &o);
	char *out = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(lab);
	CU_ASSERT_EQUAL(test_run(NULL, "iscsi-inq -i iqn.2024-01.test.pnfs:host '%s' >/dev/null 2>&1", lab->urls[0]), 0);
	CU_ASSERT_EQUAL(test_run(NULL, "iscsi-inq -i iqn.2024-01.test.pnfs:guest '%s' >/dev/null 2>&1", lab->urls[0]), 0);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "iscsi-inq -i iqn.2024-01.test.pnfs:stranger '%s' >/dev/null 2>&1",
				     lab->urls[0]),
			    0);
	CU_ASSERT_EQUAL(test_run(&out, "'%s' status --dir '%s'", test_bin("san-lab"), lab->dir), 0);
	CU_ASSERT_PTR_NOT_NULL(out &&
			       strstr(out, "access: initiators iqn.2024-01.test.pnfs:host, iqn.2024-01.test.pnfs:guest"));
	free(out);
	lab_down(lab);
}

TEST_SUITE(sanlab, "integration/san-lab", NULL, NULL,
	   { "two_labs_and_iscsi_ls", test_two_labs_and_iscsi_ls },
	   { "used_port_and_idempotent_up", test_used_port_and_idempotent_up },
	   { "down_leaves_foreign_tgtd", test_down_leaves_foreign_tgtd },
	   { "watch_pid_teardown", test_watch_pid_teardown },
	   { "crash_restart_keeps_data", test_crash_restart_keeps_data },
	   { "down_keeps_wipe_removes", test_down_keeps_wipe_removes },
	   { "geometry_mismatch_and_fresh", test_geometry_mismatch_and_fresh },
	   { "portal_address", test_portal_address },
	   { "two_initiators", test_two_initiators },
	   { "target_params", test_target_params },
	   { "tgtd_malloc", test_tgtd_malloc },
	   { "shaped_hosts", test_shaped_hosts });
