/* A plain MPI C program for the wrapper tests: built the ways users build
 * one (make, cmake, pkg-config), its output must equal MPICH's. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int mine = (rank + 1) * (rank + 1);
	MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("hello: %d ranks, sum of squares %d\n", size, sum);
	return MPI_Finalize();
}
