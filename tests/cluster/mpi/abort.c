/* Rank 1 calls MPI_Abort while the others wait for a message that never
 * comes: the whole job must end, with rank 1's code. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, v;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 1) {
		fprintf(stderr, "rank 1 aborts\n");
		MPI_Abort(MPI_COMM_WORLD, 7);
	}
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	printf("rank %d: not reached\n", rank);
	MPI_Finalize();
	return 0;
}
