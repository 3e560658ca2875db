/* An equivalent of OSU's osu_barrier (our own code): the mean latency of
 * MPI_Barrier over iterations and ranks, one line. */
#include "osu.h"

int main(int argc, char **argv)
{
	struct osu_opts o = { 0, 0, 1000, 200, 0, 0 };
	int rank, nprocs;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (osu_parse(argc, argv, &o, rank)) {
		MPI_Finalize();
		return 1;
	}
	if (rank == 0) {
		printf("# OSU MPI Barrier Latency Test %s\n", OSU_VERSION);
		printf("# Avg Latency(us)\n");
		fflush(stdout);
	}
	double timer = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < o.iterations + o.skip; i++) {
		double t_start = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		double t_stop = MPI_Wtime();
		if (i >= o.skip)
			timer += t_stop - t_start;
	}
	double latency = timer * 1e6 / o.iterations, avg = 0;
	MPI_Reduce(&latency, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%*.*f\n", 17, FLOAT_PRECISION, avg / nprocs);
	MPI_Finalize();
	return 0;
}
