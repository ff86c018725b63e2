/* san-lab as users run it: labs side by side, a used port refused, up idempotent, down stopping
 * only what its lab started, and the shaped multi-host lab with its namespaces and tc classes. */
#include "blkmap/blkmap.h"
#include "tests/harness.h"
#include "tests/lab.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	/* Another lab on A's port: refused, clearly. */
	rc = test_run(&out, "'%s' up --luns 1 --size 8M --dir '%s' --port %d 2>&1", test_bin("san-lab"),
		      dir2, a->port);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "in use"));
	free(out);
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
	for (int i = 0; i < 100 && access(cap, F_OK) != 0; i++)
		usleep(20000);
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
	usleep(200000);
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

	/* a parameter tgtd refuses: exit 1 naming it, no tgtd left on the port, the directory reusable */
	port = test_free_port();
	rc = test_run(&out, "'%s' up --luns 1 --size 8M --ram --dir '%s' --port %d --param NoSuchKey=1 2>&1",
		      test_bin("san-lab"), dir, port);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "NoSuchKey=1"));
	free(out);
	CU_ASSERT_NOT_EQUAL(test_run(NULL, "ss -Hltn 'sport = :%d' | grep -q .", port), 0);
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
	for (int i = 0; i < 50 && test_run(NULL, "tgtadm -C %d --mode system --op show >/dev/null 2>&1", ctl); i++)
		usleep(100000);
	a = lab_up(1, "8M", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	lab_down(a);
	CU_ASSERT(pid_alive(foreign));
	CU_ASSERT_EQUAL(test_run(NULL, "tgtadm -C %d --mode system --op show >/dev/null 2>&1", ctl), 0);
	kill_foreign(&foreign);
	test_cleanup_cancel(h);
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
	snprintf(ns, sizeof(ns), "sl%dh", lab->port);
	lab_down(lab);
	/* down removed the namespaces (and with them the veths and their qdiscs). */
	CU_ASSERT_EQUAL(test_run(&out, "ip netns list"), 0);
	CU_ASSERT_PTR_NULL(strstr(out, ns));
	free(out);
}

/* A lab tied to a process goes down by itself when that process dies (a crashed test runner). */
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
	char state[400];
	snprintf(state, sizeof(state), "%s/lab.env", dir);
	for (int i = 0; i < 100 && (pid_alive(pid) || access(state, F_OK) == 0); i++)
		usleep(100000);
	CU_ASSERT(!pid_alive(pid));
	CU_ASSERT_NOT_EQUAL(access(state, F_OK), 0);
	/* Belt and braces if the watcher failed: never leave it running. */
	test_run(NULL, "'%s' down --dir '%s' >/dev/null 2>&1", test_bin("san-lab"), dir);
}

TEST_SUITE(sanlab, "integration/san-lab", NULL, NULL,
	   { "two_labs_and_iscsi_ls", test_two_labs_and_iscsi_ls },
	   { "used_port_and_idempotent_up", test_used_port_and_idempotent_up },
	   { "down_leaves_foreign_tgtd", test_down_leaves_foreign_tgtd },
	   { "watch_pid_teardown", test_watch_pid_teardown },
	   { "target_params", test_target_params },
	   { "tgtd_malloc", test_tgtd_malloc },
	   { "shaped_hosts", test_shaped_hosts });
