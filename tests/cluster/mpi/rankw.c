/* Two 4 MiB messages from rank 0 to rank 1, each checked. With a path
 * (argv[1]), between the two the ranks poll MPI (MPI_Iprobe) until that
 * file exists, so that a test's checkpoint finds them calling MPI: they
 * close their endpoints at its drain and open new ones after it, and the
 * second message goes over those (or, restored, over the new process's). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define N (1024 * 1024) /* ints: 4 MiB */

int main(int argc, char **argv)
{
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int *buf = malloc(N * sizeof(int));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int round = 0; round < 2; round++) {
		if (rank == 0) {
			for (int i = 0; i < N; i++)
				buf[i] = i * 3 + round;
			MPI_Send(buf, N, MPI_INT, 1, round, MPI_COMM_WORLD);
		} else if (rank == 1) {
			int bad = 0;
			MPI_Recv(buf, N, MPI_INT, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (int i = 0; i < N && !bad; i++)
				bad = buf[i] != i * 3 + round;
			printf("rankw: round %d: %s\n", round, bad ? "CORRUPT" : "intact");
			fflush(stdout);
		}
		if (round == 0 && argc > 1) {
			struct timespec tick = {0, 1000000};
			int flag;
			fprintf(stderr, "rankw: rank %d holds\n", rank);
			while (access(argv[1], F_OK) != 0) {
				MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
				nanosleep(&tick, NULL);
			}
		}
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
