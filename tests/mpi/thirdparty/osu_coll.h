/* The loop OSU's collective latency tests share, in an equivalent of our
 * own: for each size, iterations of the collective, each timed alone and
 * followed by a barrier; rank 0 prints the mean over ranks of each rank's
 * mean time. With -c every iteration's result is checked. */
#ifndef THIRDPARTY_OSU_COLL_H
#define THIRDPARTY_OSU_COLL_H

#include "osu.h"

/* one call of the collective on len bytes (per peer, for alltoall) of
 * iteration iter: fills its send data, runs, and returns whether what this
 * rank received is right (1 when not validating) */
typedef int (*osu_coll_op)(long len, int iter, int rank, int nprocs, char *sbuf, char *rbuf,
			   int validate);

static inline int osu_coll_main(int argc, char **argv, const char *title, long first,
				osu_coll_op op)
{
	struct osu_opts o = { first, 1 << 20, 1000, 200, 0, 0 };
	int rank, nprocs, ok = 1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (osu_parse(argc, argv, &o, rank)) {
		MPI_Finalize();
		return 1;
	}
	if (nprocs < 2) {
		if (rank == 0)
			fprintf(stderr, "This test requires at least two processes\n");
		MPI_Finalize();
		return 1;
	}
	if (o.min_size < first)
		o.min_size = first;
	char *sbuf = malloc((size_t)o.max_size * (size_t)nprocs + 16);
	char *rbuf = malloc((size_t)o.max_size * (size_t)nprocs + 16);
	if (rank == 0)
		osu_header(title, "# Size       Avg Latency(us)", &o);
	for (long len = o.min_size; len <= o.max_size; len *= 2) {
		double timer = 0;
		int valid = 1;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < o.iterations + o.skip; i++) {
			double t_start = MPI_Wtime();
			int v = op(len, i, rank, nprocs, sbuf, rbuf, o.validate);
			double t_stop = MPI_Wtime();
			if (i >= o.skip)
				timer += t_stop - t_start;
			valid &= v;
			MPI_Barrier(MPI_COMM_WORLD);
		}
		double latency = timer * 1e6 / o.iterations, avg = 0;
		int all = 0;
		MPI_Reduce(&latency, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		MPI_Reduce(&valid, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			osu_row(len, avg / nprocs, &o, all);
			ok &= all;
		}
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return ok ? 0 : 1;
}

/* float items whose sums over ranks are exact: a right reduction gives
 * exactly sum_r f(r, j, iter) */
static inline float osu_item(int rank, long j, int iter)
{
	return (float)((rank + j + iter) % 17);
}

static inline void osu_fill_floats(float *f, long n, int rank, int iter)
{
	for (long j = 0; j < n; j++)
		f[j] = osu_item(rank, j, iter);
}

static inline int osu_check_sum(const float *f, long n, int nprocs, int iter)
{
	for (long j = 0; j < n; j++) {
		float want = 0;
		for (int r = 0; r < nprocs; r++)
			want += osu_item(r, j, iter);
		if (f[j] != want)
			return 0;
	}
	return 1;
}

#endif
