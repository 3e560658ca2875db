/* Ping-pong between rank 0 and the last rank: round-trip time in seconds and
 * in timeslices (STORM timeslice from argv[1], microseconds). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, iters = argc > 2 ? atoi(argv[2]) : 50;
	double slice = argc > 1 ? atof(argv[1]) * 1e-6 : 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	char b[8] = {0};
	int peer = size - 1;
	MPI_Barrier(MPI_COMM_WORLD);
	double t = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(b, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
			MPI_Recv(b, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == peer) {
			MPI_Recv(b, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	t = MPI_Wtime() - t;
	if (rank == 0)
		printf("pingpong: %d round trips, %.3f ms each, %.2f timeslices each\n", iters,
		       t / iters * 1e3, slice > 0 ? t / iters / slice : 0);
	MPI_Finalize();
	return 0;
}
