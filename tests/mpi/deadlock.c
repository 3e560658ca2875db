/* storm replay --list, --stop and a recorded deadlock
 * (tests/cluster/test_replay_stop.sh). Rank 0 takes one message from rank 1
 * through an MPI_ANY_SOURCE receive it polls with MPI_Test (how many polls
 * fail is timing: only a replay that forces them numbers the calls after
 * the loop the same way), then every rank passes a token around the ring a
 * few times. argv[1]:
 *   ok        then a barrier and MPI_Finalize
 *   deadlock  then every rank receives from its left neighbour, which
 *             nobody sends: each rank waits in MPI_Recv for ever
 * A rank prints a line before it waits, for the test to wait on. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int poll_one(void)
{
	int v = -1, flag = 0;
	long polls = 0;
	MPI_Request req;
	MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, &req);
	while (!flag) {
		MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
		polls += !flag;
	}
	printf("got %d after %ld polls\n", v, polls);
	return v;
}

static void ring(int rank, int size, int step)
{
	int out = rank * 100 + step, in = -1;
	MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, step, &in, 1, MPI_INT,
		     (rank + size - 1) % size, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	printf("step %d: %d\n", step, in);
}

static void wait_left(int rank, int size)
{
	int v;
	printf("rank %d waits for rank %d\n", rank, (rank + size - 1) % size);
	fflush(stdout);
	MPI_Recv(&v, 1, MPI_INT, (rank + size - 1) % size, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank == 0) {
		poll_one();
	} else if (rank == 1) {
		int v = 7;
		usleep(20000); /* rank 0 polls a while first */
		MPI_Send(&v, 1, MPI_INT, 0, 50, MPI_COMM_WORLD);
	}
	for (int step = 0; step < 3; step++)
		ring(rank, size, step);
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "deadlock"))
		wait_left(rank, size);
	MPI_Barrier(MPI_COMM_WORLD);
	printf("rank %d done\n", rank);
	MPI_Finalize();
	return 0;
}
