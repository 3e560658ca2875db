/* A recorded run that is checkpointed and replayed from a checkpoint
 * (tests/cluster/test_replay_from.sh). Every step, rank 0 takes one message
 * from each other rank through MPI_ANY_SOURCE receives it polls with
 * MPI_Test, and folds who came and how many polls failed into its result:
 * timing-dependent, so only a replay that forces the recorded outcomes
 * prints the same lines and result. At step HOLD1 and step HOLD2 every rank
 * holds until the file GATE.STEP exists (the test checkpoints the job
 * meanwhile), and rank 0 prints "holding at step N" first and "resumed at
 * step N" after: a run restored there prints the second line first.
 * Usage: ckptrace STEPS HOLD1 HOLD2 GATE */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(int units)
{
	for (long i = 0; i < units * 30000L; i++)
		sink += (unsigned long)i ^ sink;
}

static void hold(int rank, int step, const char *gate)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s.%d", gate, step);
	if (rank == 0) {
		printf("holding at step %d\n", step);
		fflush(stdout);
	}
	while (access(path, F_OK) != 0)
		usleep(2000);
	if (rank == 0) {
		printf("resumed at step %d\n", step);
		fflush(stdout);
	}
}

static uint64_t step_root(int step, int size, uint64_t h)
{
	char line[4096];
	int off = snprintf(line, sizeof(line), "step %d:", step);
	for (int k = 1; k < size; k++) {
		int v = -1, flag = 0;
		long polls = 0;
		MPI_Request req;
		MPI_Status st;
		MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, step, MPI_COMM_WORLD, &req);
		while (!flag) {
			MPI_Test(&req, &flag, &st);
			polls += !flag;
		}
		h = (h ^ (uint64_t)st.MPI_SOURCE) * 1099511628211ULL;
		h = (h ^ (uint64_t)polls) * 1099511628211ULL;
		off += snprintf(line + off, sizeof(line) - (size_t)off, " %d=%d(%ld polls)",
				st.MPI_SOURCE, v, polls);
	}
	printf("%s\n", line);
	fflush(stdout);
	return h;
}

int main(int argc, char **argv)
{
	int rank, size;
	if (argc != 5) {
		fprintf(stderr, "usage: ckptrace STEPS HOLD1 HOLD2 GATE\n");
		return 2;
	}
	int steps = atoi(argv[1]), hold1 = atoi(argv[2]), hold2 = atoi(argv[3]);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	uint64_t h = 14695981039346656037ULL;
	for (int step = 0; step < steps; step++) {
		if (step == hold1 || step == hold2)
			hold(rank, step, argv[4]);
		if (rank == 0) {
			h = step_root(step, size, h);
		} else {
			work((rank * 5 + step * 3) % 7);
			int v = rank * 1000 + step;
			MPI_Send(&v, 1, MPI_INT, 0, step, MPI_COMM_WORLD);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	if (rank == 0)
		printf("result %016llx after %d steps on %d ranks\n", (unsigned long long)h, steps,
		       size);
	MPI_Finalize();
	return 0;
}
