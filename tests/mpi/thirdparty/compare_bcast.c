/* An equivalent of mpitutorial's compare_bcast (our own code): the mean
 * time of a broadcast made of sends (my_bcast) against MPI_Bcast, each
 * trial between barriers. Usage: compare_bcast num_elements num_trials. */
#include <assert.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void my_bcast(void *data, int count, MPI_Datatype datatype, int root,
		     MPI_Comm communicator)
{
	int world_rank, world_size;
	MPI_Comm_rank(communicator, &world_rank);
	MPI_Comm_size(communicator, &world_size);
	if (world_rank == root) {
		for (int i = 0; i < world_size; i++)
			if (i != world_rank)
				MPI_Send(data, count, datatype, i, 0, communicator);
	} else {
		MPI_Recv(data, count, datatype, root, 0, communicator, MPI_STATUS_IGNORE);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "Usage: compare_bcast num_elements num_trials\n");
		return 1;
	}
	int num_elements = atoi(argv[1]), num_trials = atoi(argv[2]);
	MPI_Init(NULL, NULL);
	int world_rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	double total_my_bcast_time = 0.0, total_mpi_bcast_time = 0.0;
	int *data = malloc(sizeof(int) * (size_t)num_elements);
	assert(data != NULL);
	for (int i = 0; i < num_trials; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		total_my_bcast_time -= MPI_Wtime();
		my_bcast(data, num_elements, MPI_INT, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		total_my_bcast_time += MPI_Wtime();

		MPI_Barrier(MPI_COMM_WORLD);
		total_mpi_bcast_time -= MPI_Wtime();
		MPI_Bcast(data, num_elements, MPI_INT, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		total_mpi_bcast_time += MPI_Wtime();
	}
	if (world_rank == 0) {
		printf("Data size = %d, Trials = %d\n", num_elements * (int)sizeof(int), num_trials);
		printf("Avg my_bcast time = %lf\n", total_my_bcast_time / num_trials);
		printf("Avg MPI_Bcast time = %lf\n", total_mpi_bcast_time / num_trials);
	}
	free(data);
	MPI_Finalize();
	return 0;
}
