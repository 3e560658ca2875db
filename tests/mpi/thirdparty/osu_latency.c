/* An equivalent of OSU's osu_latency (our own code): ping-pong between two
 * ranks for each message size, 0 then powers of two up to -m; prints the
 * one-way latency in us (half the round trip's mean). */
#include "osu.h"

int main(int argc, char **argv)
{
	struct osu_opts o = { 0, 1 << 22, 1000, 100, 0, 0 };
	int rank, size, ok = 1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (osu_parse(argc, argv, &o, rank) || !osu_two(size, rank)) {
		MPI_Finalize();
		return 1;
	}
	char *s_buf = malloc((size_t)o.max_size + 1), *r_buf = malloc((size_t)o.max_size + 1);
	if (rank == 0)
		osu_header("Latency", "# Size          Latency (us)", &o);
	for (long len = o.min_size; len <= o.max_size; len = len ? len * 2 : 1) {
		double t_start = 0, t_end = 0;
		int valid = 1;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < o.iterations + o.skip; i++) {
			if (i == o.skip)
				t_start = MPI_Wtime();
			if (rank == 0) {
				if (o.validate)
					osu_fill(s_buf, len, i, 0);
				MPI_Send(s_buf, (int)len, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
				MPI_Recv(r_buf, (int)len, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (o.validate)
					valid &= osu_check(r_buf, len, i, 1);
			} else {
				MPI_Recv(r_buf, (int)len, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (o.validate) {
					valid &= osu_check(r_buf, len, i, 0);
					osu_fill(s_buf, len, i, 1);
				}
				MPI_Send(s_buf, (int)len, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
			}
		}
		t_end = MPI_Wtime();
		/* rank 1's checks count too */
		int all = 0;
		MPI_Reduce(&valid, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			osu_row(len, (t_end - t_start) * 1e6 / (2.0 * o.iterations), &o, all);
			ok &= all;
		}
	}
	free(s_buf);
	free(r_buf);
	MPI_Finalize();
	return ok ? 0 : 1;
}
