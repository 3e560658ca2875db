/* An equivalent of mpitutorial's my_bcast (our own code): a broadcast made
 * of point-to-point sends from the root; rank 0 broadcasts 100. */
#include <mpi.h>
#include <stdio.h>

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
	MPI_Init(&argc, &argv);
	int world_rank, data;
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	if (world_rank == 0) {
		data = 100;
		printf("Process 0 broadcasting data %d\n", data);
		my_bcast(&data, 1, MPI_INT, 0, MPI_COMM_WORLD);
	} else {
		my_bcast(&data, 1, MPI_INT, 0, MPI_COMM_WORLD);
		printf("Process %d received data %d from root process\n", world_rank, data);
	}
	MPI_Finalize();
	return 0;
}
