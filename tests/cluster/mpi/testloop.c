/* Timing-dependent on purpose: rank 0 polls MPI_Test and MPI_Iprobe while
 * the last rank sleeps before sending, and prints how many polls failed. A
 * plain run prints some count; `storm replay` of a recorded run prints the
 * recorded counts again. argv[1]: rounds (default 2). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 2;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int r = 0; r < rounds; r++) {
		if (rank == 0) {
			int v = -1, flag = 0, polls = 0, probes = 0;
			MPI_Request req;
			while (!flag) {
				MPI_Iprobe(MPI_ANY_SOURCE, r, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
				probes += !flag;
			}
			MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, r, MPI_COMM_WORLD, &req);
			for (flag = 0; !flag; polls++) {
				MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
				usleep(300);
			}
			printf("round %d: value %d after %d failed probes and %d tests\n", r, v, probes, polls);
		} else if (rank == size - 1) {
			usleep(20000u + (unsigned)(rand() % 5000));
			int v = 1000 + r;
			MPI_Send(&v, 1, MPI_INT, 0, r, MPI_COMM_WORLD);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
