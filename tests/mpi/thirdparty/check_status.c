/* An equivalent of mpitutorial's check_status (our own code): rank 0 sends
 * a random count (below 100) of ints to rank 1, which receives into 100
 * and reads the count, source and tag from the status. Optional argument:
 * the seed of rand() (the original uses the time). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "tutorial.h"

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int world_size, world_rank;
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	if (world_size != 2) {
		fprintf(stderr, "Must use two processes for this example\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	enum { MAX_NUMBERS = 100 };
	int numbers[MAX_NUMBERS] = { 0 }, number_amount;
	if (world_rank == 0) {
		srand(tutorial_seed(argc, argv, 1));
		number_amount = (int)((rand() / (float)RAND_MAX) * MAX_NUMBERS);
		MPI_Send(numbers, number_amount, MPI_INT, 1, 0, MPI_COMM_WORLD);
		printf("0 sent %d numbers to 1\n", number_amount);
	} else if (world_rank == 1) {
		MPI_Status status;
		MPI_Recv(numbers, MAX_NUMBERS, MPI_INT, 0, 0, MPI_COMM_WORLD, &status);
		MPI_Get_count(&status, MPI_INT, &number_amount);
		printf("1 received %d numbers from 0. Message source = %d, tag = %d\n", number_amount,
		       status.MPI_SOURCE, status.MPI_TAG);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
