/* A token goes round the ring three times; each rank adds its rank. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, token = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int lap = 0; lap < 3; lap++) {
		if (rank == 0) {
			token += rank;
			MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, lap, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_INT, size - 1, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Status st;
			MPI_Recv(&token, 1, MPI_INT, rank - 1, lap, MPI_COMM_WORLD, &st);
			token += rank;
			MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, lap, MPI_COMM_WORLD);
		}
	}
	if (rank == 0)
		printf("ring: token %d (expected %d)\n", token, 3 * size * (size - 1) / 2);
	MPI_Finalize();
	return rank == 0 && token != 3 * size * (size - 1) / 2;
}
