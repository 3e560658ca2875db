/* bench/gang: a CPU-bound rank. Computes a fixed amount of work (ITERS
 * rounds of an integer hash, ITERS from argv[1]), prints the checksum so
 * the compiler keeps the work, and exits 0. No I/O, no system calls in the
 * loop: its run time is CPU time plus whatever time it spends stopped or
 * waiting for a core.
 *
 * usage: gang_spin ITERS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s ITERS\n", argv[0]);
		return 2;
	}
	char *end;
	unsigned long long iters = strtoull(argv[1], &end, 10);
	if (*end || end == argv[1]) {
		fprintf(stderr, "gang_spin: bad ITERS: %s\n", argv[1]);
		return 2;
	}
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	for (unsigned long long i = 0; i < iters; i++) {
		/* splitmix64 step: each round depends on the last */
		h += 0x9e3779b97f4a7c15ULL;
		uint64_t z = h;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		h ^= z ^ (z >> 31);
	}
	printf("gang_spin %llu %016llx\n", iters, (unsigned long long)h);
	return 0;
}
