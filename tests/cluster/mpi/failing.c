/* A recorded run that does not end well (tests/cluster/test_record.sh).
 * Every step, rank 0 takes one message from each other rank through
 * MPI_ANY_SOURCE receives it polls with MPI_Test, and prints whom each came
 * from and how many polls failed first: timing-dependent, so only a replay
 * that forces the recorded outcomes prints the same lines. argv[1] says how
 * the run fails:
 *   crash N   rank 1 dies of SIGSEGV at step N
 *   hang N    at step N rank 1 waits for a message nobody sends: a deadlock
 *   forever   steps until the job is stopped (a time limit)
 * A rank prints a line before it fails, for the test to wait on. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void step_root(int step, int size)
{
	char line[4096];
	int off = snprintf(line, sizeof(line), "step %d:", step);
	for (int k = 1; k < size; k++) {
		int v = -1, flag = 0;
		long polls = 0;
		MPI_Request req;
		MPI_Status st;
		MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, step, MPI_COMM_WORLD, &req);
		/* a pause after each failed poll: a count still set by timing,
		 * but thousands a second, not millions, so that a replay, which
		 * makes each of them again, takes about as long as the record */
		while (!flag) {
			MPI_Test(&req, &flag, &st);
			polls += !flag;
			if (!flag)
				usleep(50);
		}
		off += snprintf(line + off, sizeof(line) - (size_t)off, " %d=%d(%ld polls)",
				st.MPI_SOURCE, v, polls);
	}
	printf("%s\n", line);
	fflush(stdout);
	for (int k = 1; k < size; k++)
		MPI_Send(&step, 1, MPI_INT, k, step, MPI_COMM_WORLD);
}

static void fail_here(const char *mode, int rank, int step)
{
	if (!strcmp(mode, "crash")) {
		printf("rank %d crashes at step %d\n", rank, step);
		fflush(stdout);
		raise(SIGSEGV);
	}
	int v;
	printf("rank %d waits forever at step %d\n", rank, step);
	fflush(stdout);
	MPI_Recv(&v, 1, MPI_INT, 2, 999999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
	int rank, size;
	const char *mode = argc > 1 ? argv[1] : "forever";
	int at = argc > 2 ? atoi(argv[2]) : -1;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	unsigned seed = (unsigned)getpid();
	for (int step = 0;; step++) {
		if (rank == 1 && step == at && strcmp(mode, "forever"))
			fail_here(mode, rank, step);
		if (rank == 0) {
			step_root(step, size);
		} else {
			int v = rank * 1000 + step, ack;
			usleep((unsigned)(rand_r(&seed) % 3000)); /* a different order each run */
			MPI_Send(&v, 1, MPI_INT, 0, step, MPI_COMM_WORLD);
			MPI_Recv(&ack, 1, MPI_INT, 0, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	}
	MPI_Finalize();
	return 0;
}
