/* An equivalent of mpitutorial's reduce_avg (our own code): every rank
 * draws random floats (seeded with its rank) and sums them; MPI_Reduce
 * sums the sums at rank 0, which prints the global average. Usage:
 * reduce_avg num_elements_per_proc [seed]. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "tutorial.h"

static float *create_rand_nums(int num_elements)
{
	float *rand_nums = malloc(sizeof(float) * (size_t)num_elements);
	for (int i = 0; i < num_elements; i++)
		rand_nums[i] = (rand() / (float)RAND_MAX);
	return rand_nums;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "Usage: avg num_elements_per_proc [seed]\n");
		return 1;
	}
	int num_elements_per_proc = atoi(argv[1]);
	unsigned seed = tutorial_seed(argc, argv, 2);
	MPI_Init(NULL, NULL);
	int world_rank, world_size;
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);

	srand(seed * (unsigned)world_rank);
	float *rand_nums = create_rand_nums(num_elements_per_proc);
	float local_sum = 0;
	for (int i = 0; i < num_elements_per_proc; i++)
		local_sum += rand_nums[i];
	printf("Local sum for process %d - %f, avg = %f\n", world_rank, local_sum,
	       local_sum / num_elements_per_proc);
	float global_sum;
	MPI_Reduce(&local_sum, &global_sum, 1, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (world_rank == 0)
		printf("Total sum = %f, avg = %f\n", global_sum,
		       global_sum / (world_size * num_elements_per_proc));
	free(rand_nums);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
