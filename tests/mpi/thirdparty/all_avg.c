/* An equivalent of mpitutorial's all_avg (our own code): as avg, but the
 * partial averages are allgathered and every rank prints the average.
 * Usage: all_avg num_elements_per_proc [seed]. */
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

static float compute_avg(const float *array, int num_elements)
{
	float sum = 0.f;
	for (int i = 0; i < num_elements; i++)
		sum += array[i];
	return sum / num_elements;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "Usage: all_avg num_elements_per_proc [seed]\n");
		return 1;
	}
	int num_elements_per_proc = atoi(argv[1]);
	srand(tutorial_seed(argc, argv, 2));
	MPI_Init(NULL, NULL);
	int world_rank, world_size;
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);

	float *rand_nums = NULL;
	if (world_rank == 0)
		rand_nums = create_rand_nums(num_elements_per_proc * world_size);
	float *sub_rand_nums = malloc(sizeof(float) * (size_t)num_elements_per_proc);
	MPI_Scatter(rand_nums, num_elements_per_proc, MPI_FLOAT, sub_rand_nums,
		    num_elements_per_proc, MPI_FLOAT, 0, MPI_COMM_WORLD);
	float sub_avg = compute_avg(sub_rand_nums, num_elements_per_proc);
	float *sub_avgs = malloc(sizeof(float) * (size_t)world_size);
	MPI_Allgather(&sub_avg, 1, MPI_FLOAT, sub_avgs, 1, MPI_FLOAT, MPI_COMM_WORLD);
	float avg = compute_avg(sub_avgs, world_size);
	printf("Avg of all elements from proc %d is %f\n", world_rank, avg);
	free(rand_nums);
	free(sub_avgs);
	free(sub_rand_nums);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
