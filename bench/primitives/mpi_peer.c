/* MPI reference numbers for bench/primitives: the same measurements as
 * sn_bench, on MPICH, on the same machine and process counts.
 *
 *   mpiexec -n N ./mpi_peer [--iters K] [--tests bcast,lat,allreduce,barrier]
 *
 * Prints one JSON line per result (rank 0 only), in the shape sn_bench uses:
 *   mpi_bcast      MPI_Bcast from rank 0 of 8 B, 64 KiB, 1 MiB, 12 MiB. Each
 *                  iteration: MPI_Barrier, then every rank times its own
 *                  MPI_Bcast; the iteration's value is the maximum over ranks
 *                  (when the last rank holds the data, from barrier exit), the
 *                  counterpart of XFER-AND-SIGNAL's local event.
 *   mpi_lat        ranks 0 and 1 ping-pong with MPI_Send/MPI_Recv (8 B, 64 KiB,
 *                  1 MiB), half the round trip as seen by rank 0; only with
 *                  exactly 2 ranks.
 *   mpi_allreduce  MPI_Allreduce(MPI_SUM) of one uint64_t, back to back, timed
 *                  per call at rank 0 (COMPARE-AND-WRITE's counterpart).
 *   mpi_barrier    MPI_Barrier, back to back, timed per call at rank 0.
 * Medians over the measured iterations (after warm-up), with p10 and p90.
 * Each measurement also stops early, after at least 5 iterations, once it has
 * spent --budget-s seconds (default 10): with 32 ranks on 2 cores MPICH's
 * busy polling makes one 1 MiB broadcast take seconds. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p)
{
	double pos = p * (n - 1);
	int i = (int)pos;
	if (i >= n - 1)
		return sorted[n - 1];
	return sorted[i] + (sorted[i + 1] - sorted[i]) * (pos - i);
}

static void report(const char *bench, int nodes, long size, double *us, int n, int with_bw)
{
	qsort(us, (size_t)n, sizeof(double), cmp_double);
	double med = pct(us, n, 0.5);
	printf("{\"bench\":\"%s\",\"provider\":\"mpich\",\"nodes\":%d", bench, nodes);
	if (size >= 0)
		printf(",\"size\":%ld", size);
	printf(",\"median_us\":%.3f,\"p10_us\":%.3f,\"p90_us\":%.3f,\"iters\":%d", med,
	       pct(us, n, 0.1), pct(us, n, 0.9), n);
	if (size > 0 && with_bw)
		printf(",\"mbps\":%.1f", (double)size / med);
	printf("}\n");
	fflush(stdout);
}

static double budget_us = 10e6;
#define MIN_ITERS 5

static void bench_bcast(int rank, int nprocs, int iters)
{
	static const long sizes[] = {8, 65536, 1048576, 12582912};
	char *buf = malloc(12582912);
	double *us = malloc(sizeof(double) * (size_t)(iters + 1));
	memset(buf, 1, 12582912);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		long size = sizes[si];
		int warm = nprocs >= 16 ? 1 : 3, done = 0;
		double spent = 0;
		for (int it = -warm; it < iters; it++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
			double dt = (MPI_Wtime() - t0) * 1e6, worst;
			/* every rank learns the maximum, so all agree on when to stop */
			MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
			if (it < 0)
				continue;
			us[done++] = worst;
			spent += worst;
			if (done >= MIN_ITERS && spent > budget_us)
				break;
		}
		if (rank == 0)
			report("mpi_bcast", nprocs, size, us, done, 1);
	}
	free(us);
	free(buf);
}

static void bench_lat(int rank, int nprocs, int iters)
{
	static const long sizes[] = {8, 65536, 1048576};
	if (nprocs != 2)
		return;
	char *buf = malloc(1048576);
	memset(buf, 2, 1048576);
	int k = iters * 10; /* cheap: more rounds */
	double *us = malloc(sizeof(double) * (size_t)k);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		long size = sizes[si];
		int n = size >= 1048576 ? iters : k;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int it = -10; it < n; it++) {
			if (rank == 0) {
				double t0 = MPI_Wtime();
				MPI_Send(buf, (int)size, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
				MPI_Recv(buf, (int)size, MPI_BYTE, 1, 7, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if (it >= 0)
					us[it] = (MPI_Wtime() - t0) * 1e6 / 2;
			} else {
				MPI_Recv(buf, (int)size, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(buf, (int)size, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
			}
		}
		if (rank == 0)
			report("mpi_lat", nprocs, size, us, n, 0);
	}
	free(us);
	free(buf);
}

static void bench_small(int rank, int nprocs, int iters, int allreduce)
{
	double *us = malloc(sizeof(double) * (size_t)iters);
	uint64_t in = (uint64_t)rank, out = 0;
	int done = 0, warm = nprocs >= 16 ? 2 : 5;
	double spent = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	for (int it = -warm; it < iters; it++) {
		double t0 = MPI_Wtime();
		if (allreduce)
			MPI_Allreduce(&in, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
		else
			MPI_Barrier(MPI_COMM_WORLD);
		double dt = (MPI_Wtime() - t0) * 1e6;
		if (it < 0)
			continue;
		us[done++] = dt;
		spent += dt;
		/* rank 0's clock decides, in blocks of 5, outside the timed calls */
		if (done % MIN_ITERS == 0) {
			MPI_Bcast(&spent, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			if (spent > budget_us)
				break;
		}
	}
	if (allreduce && out != (uint64_t)nprocs * (uint64_t)(nprocs - 1) / 2 && rank == 0)
		fprintf(stderr, "mpi_peer: allreduce gave %llu\n", (unsigned long long)out);
	if (rank == 0)
		report(allreduce ? "mpi_allreduce" : "mpi_barrier", nprocs, allreduce ? 8 : -1, us,
		       done, 0);
	free(us);
}

int main(int argc, char **argv)
{
	int iters = 30;
	const char *tests = "lat,bcast,allreduce,barrier";
	MPI_Init(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--budget-s") && i + 1 < argc)
			budget_us = atof(argv[++i]) * 1e6;
		else if (!strcmp(argv[i], "--tests") && i + 1 < argc)
			tests = argv[++i];
	}
	if (iters < 1)
		iters = 1;
	int rank, nprocs;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (strstr(tests, "lat"))
		bench_lat(rank, nprocs, iters);
	if (strstr(tests, "bcast"))
		bench_bcast(rank, nprocs, iters);
	if (strstr(tests, "allreduce"))
		bench_small(rank, nprocs, iters * 10, 1);
	if (strstr(tests, "barrier"))
		bench_small(rank, nprocs, iters * 10, 0);
	MPI_Finalize();
	return 0;
}
