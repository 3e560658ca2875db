/* A receiver that computes outside MPI when its message's data could move:
 * rank 1 posts MPI_Irecv of 12 MiB and then computes until the file
 * argv[1] exists; rank 0's blocking MPI_Send of it must end meanwhile
 * (its "sent" line is what a test waits for before creating the file).
 * Rank 1 then waits and checks the data.
 * With "send" after the file, the sender computes instead: rank 0 posts
 * MPI_Isend and computes until the file exists, and rank 1's blocking
 * MPI_Recv must end meanwhile ("received", then its check). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N (3 * 1024 * 1024 + 17) /* ints: 12 MiB */

int main(int argc, char **argv)
{
	int rank, bad = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: busyrecv GATE_FILE [send]\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int *buf = malloc(N * sizeof(int));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	int busy_sender = argc > 2 && !strcmp(argv[2], "send");
	if (rank == 0 && busy_sender) {
		for (int i = 0; i < N; i++)
			buf[i] = i * 5 + 3;
		MPI_Request rq;
		MPI_Isend(buf, N, MPI_INT, 1, 4, MPI_COMM_WORLD, &rq);
		while (access(argv[1], F_OK)) /* computes: no MPI call */
			usleep(1000);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
	} else if (rank == 1 && busy_sender) {
		MPI_Recv(buf, N, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (int i = 0; i < N && !bad; i++)
			bad = buf[i] != i * 5 + 3;
		fprintf(stderr, "busyrecv: received\n");
		printf("busyrecv: %s\n", bad ? "CORRUPT" : "intact");
	} else if (rank == 0) {
		for (int i = 0; i < N; i++)
			buf[i] = i * 5 + 3;
		MPI_Send(buf, N, MPI_INT, 1, 4, MPI_COMM_WORLD);
		fprintf(stderr, "busyrecv: sent\n");
	} else if (rank == 1) {
		MPI_Request rq;
		MPI_Irecv(buf, N, MPI_INT, 0, 4, MPI_COMM_WORLD, &rq);
		while (access(argv[1], F_OK)) /* computes: no MPI call */
			usleep(1000);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		for (int i = 0; i < N && !bad; i++)
			bad = buf[i] != i * 5 + 3;
		printf("busyrecv: %s\n", bad ? "CORRUPT" : "intact");
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
