/* bench/mpi/racy.c's loop, which once hung BCS-MPI on 8 nodes: each round
 * rank 0 broadcasts a go, the others send it their rank, and rank 0 takes
 * the P-1 messages with MPI_ANY_SOURCE (resolved only at quiescence of the
 * job, which a node whose rounds lag behind its slices must still reach).
 * Usage: bcastwild [ROUNDS] (default 20). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 20, bad = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int r = 0; r < rounds; r++) {
		int go = rank == 0 ? r : -1;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (go != r)
			bad++;
		if (rank) {
			MPI_Send(&rank, 1, MPI_INT, 0, r, MPI_COMM_WORLD);
			continue;
		}
		unsigned seen = 0;
		for (int i = 1; i < size; i++) {
			int who;
			MPI_Status st;
			MPI_Recv(&who, 1, MPI_INT, MPI_ANY_SOURCE, r, MPI_COMM_WORLD, &st);
			if (who != st.MPI_SOURCE || who < 1 || who >= size || (seen >> who & 1))
				bad++;
			seen |= 1u << who;
		}
	}
	int total = 0;
	MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("bcastwild: %d rounds on %d ranks, %d errors\n", rounds, size, total);
	MPI_Finalize();
	return 0;
}
