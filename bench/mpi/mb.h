/* What the bench/mpi programs share: option parsing, an order-independent
 * checksum and the JSON result line. Plain MPI (the subset BCS-MPI
 * implements), so every program builds unchanged with
 * MPICH's mpicc and with bcs-mpicc. */
#ifndef MB_H
#define MB_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: a bijective mix of 64 bits */
static inline uint64_t mb_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* One cell's share of a checksum: the bits of its value mixed with its
 * global index. The checksum is the sum of the shares modulo 2^64, so it
 * does not depend on which rank holds a cell nor on the order the shares
 * are added in: it is the same for every rank count and MPI library as long
 * as every cell's value is bit for bit the same. */
static inline uint64_t mb_share(uint64_t gidx, double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	return mb_mix(mb_mix(gidx + 0x9e3779b97f4a7c15ULL) ^ b);
}

/* The checksum of every rank's partial sum (at rank 0; unsigned long is 64
 * bits on the LP64 targets we build for, and unsigned sums wrap). */
static inline uint64_t mb_total(uint64_t part)
{
	unsigned long in = (unsigned long)part, out = 0;
	MPI_Reduce(&in, &out, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	return out;
}

/* The run time: from a barrier to the end of the slowest rank (at rank 0). */
static inline double mb_slowest(double t0)
{
	double t = MPI_Wtime() - t0, out = 0;
	MPI_Reduce(&t, &out, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	return out;
}

/* The end of a program: every result printed. Rank 0 says so on stderr
 * before MPI_Finalize, so that run.sh can tell a run that hangs in
 * MPI_Finalize (MPICH over UCX's TCP transport does, now and then) from one
 * still working. */
static inline void mb_finalize(void)
{
	int rank = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	fflush(stdout);
	if (rank == 0) {
		fputs("bench/mpi: results complete\n", stderr);
		fflush(stderr);
	}
	MPI_Finalize();
}

static inline void mb_die(const char *prog, const char *msg, const char *arg)
{
	int rank = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0)
		fprintf(stderr, "%s: %s%s%s\n", prog, msg, arg ? ": " : "", arg ? arg : "");
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

/* Options are `--name VALUE` pairs of positive integers (and flags that take
 * no value, listed in flags). opts[i].val holds the default on entry. */
struct mb_opt {
	const char *name;
	long val;
	int is_flag;
};

static inline void mb_parse(const char *prog, const char *usage, int argc, char **argv,
			    struct mb_opt *opts, int nopts)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			int rank = 0;
			MPI_Comm_rank(MPI_COMM_WORLD, &rank);
			if (rank == 0)
				fputs(usage, stdout);
			MPI_Finalize();
			exit(0);
		}
		int k = -1;
		for (int j = 0; j < nopts; j++)
			if (!strncmp(argv[i], "--", 2) && !strcmp(argv[i] + 2, opts[j].name))
				k = j;
		if (k < 0)
			mb_die(prog, "unknown option (see --help)", argv[i]);
		if (opts[k].is_flag) {
			opts[k].val = 1;
			continue;
		}
		if (i + 1 >= argc)
			mb_die(prog, "option needs a value", argv[i]);
		char *end;
		long v = strtol(argv[++i], &end, 10);
		if (*end || end == argv[i] || v < 0)
			mb_die(prog, "not a non-negative integer", argv[i]);
		opts[k].val = v;
	}
}

static inline long mb_get(const struct mb_opt *opts, int nopts, const char *name)
{
	for (int j = 0; j < nopts; j++)
		if (!strcmp(opts[j].name, name))
			return opts[j].val;
	abort();
}

#endif
