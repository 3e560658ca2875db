/* The copy floor of bench/launch: writes one file N times on this machine,
 * in one process: the file is mapped once, then written with plain write() to DIR/copy-0 .. DIR/copy-(N-1), created with mode 0755 as a
 * launcher materialising an executable on N nodes would. That is the least
 * work any launch with N local copies does: one pass of the bytes into the
 * page cache per copy, with no process started per copy. Nothing is fsync'ed
 * (neither storm nor Slurm does). It measures nothing itself:
 * bench/launch/timeit.py times it like every other command.
 *
 * usage: copy_floor SRC DIR N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: copy_floor SRC DIR N\n");
		return 2;
	}
	char *end;
	long n = strtol(argv[3], &end, 10);
	if (*end || n < 1 || n > 100000) {
		fprintf(stderr, "copy_floor: bad N '%s'\n", argv[3]);
		return 2;
	}
	int in = open(argv[1], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0) {
		fprintf(stderr, "copy_floor: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size_t size = (size_t)st.st_size;
	/* The source mapped (and populated) rather than read into fresh memory:
	 * faulting in a 12 MiB anonymous buffer alone costs more than one copy. */
	char *buf = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, in, 0) : "";
	if (buf == MAP_FAILED) {
		fprintf(stderr, "copy_floor: mmap %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(in);
	for (long i = 0; i < n; i++) {
		char dst[4096];
		if (snprintf(dst, sizeof dst, "%s/copy-%ld", argv[2], i) >= (int)sizeof dst) {
			fprintf(stderr, "copy_floor: path too long\n");
			return 1;
		}
		int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
		if (out < 0 || write_all(out, buf, size) < 0 || close(out) < 0) {
			fprintf(stderr, "copy_floor: %s: %s\n", dst, strerror(errno));
			return 1;
		}
	}
	return 0;
}
