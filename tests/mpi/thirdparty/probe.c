/* An equivalent of mpitutorial's probe (our own code): rank 0 sends a
 * random count of ints; rank 1 probes for the size, allocates just enough
 * and receives. Optional argument: the seed of rand(). */
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
	int number_amount;
	if (world_rank == 0) {
		enum { MAX_NUMBERS = 100 };
		int numbers[MAX_NUMBERS] = { 0 };
		srand(tutorial_seed(argc, argv, 1));
		number_amount = (int)((rand() / (float)RAND_MAX) * MAX_NUMBERS);
		MPI_Send(numbers, number_amount, MPI_INT, 1, 0, MPI_COMM_WORLD);
		printf("0 sent %d numbers to 1\n", number_amount);
	} else if (world_rank == 1) {
		MPI_Status status;
		MPI_Probe(0, 0, MPI_COMM_WORLD, &status);
		MPI_Get_count(&status, MPI_INT, &number_amount);
		int *number_buf = malloc(sizeof(int) * (size_t)(number_amount ? number_amount : 1));
		MPI_Recv(number_buf, number_amount, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("1 dynamically received %d numbers from 0.\n", number_amount);
		free(number_buf);
	}
	MPI_Finalize();
	return 0;
}
