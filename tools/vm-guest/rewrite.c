/* vm-rewrite FILE MIB [BYTE]: in the vm-lab guest, keep one O_DIRECT descriptor on FILE open and
 * rewrite its first MIB MiB with BYTE (default 0xab) every 200 ms, forever; print each failure.
 * Opening once matters: with the MDS out of reach, an NFS client hangs in OPEN, CLOSE and
 * LAYOUTCOMMIT, but a write through a layout it holds goes to the LUN alone (the fencing test). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const size_t chunk = 1 << 20;
	long mib;
	int fd, byte = 0xab;
	void *buf;

	if (argc < 3 || (mib = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: vm-rewrite FILE MIB [BYTE]\n");
		return 2;
	}
	if (argc > 3)
		byte = (int)strtol(argv[3], NULL, 0);
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "vm-rewrite: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (posix_memalign(&buf, 4096, chunk))
		return 1;
	memset(buf, byte, chunk);
	for (unsigned long pass = 0;; pass++) {
		for (long i = 0; i < mib; i++) {
			ssize_t n = pwrite(fd, buf, chunk, (off_t)i * (off_t)chunk);
			if (n != (ssize_t)chunk)
				printf("pass %lu: write at %ld MiB: %s\n", pass, i, n < 0 ? strerror(errno) : "short");
		}
		printf("pass %lu done\n", pass);
		fflush(stdout);
		nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
	}
}
