/* Racy on purpose: every rank but 0 sends to rank 0, which receives with
 * MPI_ANY_SOURCE and prints the order it got them in. Under BCS-MPI the
 * order is fixed by the matching rule; under `storm replay` it is forced. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	for (int round = 0; round < rounds; round++) {
		if (rank == 0) {
			printf("round %d:", round);
			for (int i = 1; i < size; i++) {
				int v;
				MPI_Status st;
				MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
				if (v != st.MPI_SOURCE * 100 + st.MPI_TAG)
					printf(" BAD(%d from %d tag %d)", v, st.MPI_SOURCE, st.MPI_TAG);
				printf(" %d", st.MPI_SOURCE);
			}
			printf("\n");
		} else {
			/* skew the senders: the later ranks are the earlier to send */
			usleep((unsigned)(size - rank) * 3000u * (unsigned)(round + 1));
			int v = rank * 100 + round;
			MPI_Send(&v, 1, MPI_INT, 0, round, MPI_COMM_WORLD);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
