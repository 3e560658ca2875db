/* A run whose failure comes late, for bench/replay: every step, rank 0
 * takes one message from each other rank through MPI_ANY_SOURCE receives
 * it polls with MPI_Test, and folds whom each came from and how many polls
 * failed first into a running value. The other ranks sleep a few
 * milliseconds (a step's work, paced by the clock so a loaded machine
 * stretches every run alike) and send. The value is the race's record:
 * timing decides it, so only a replay that forces the recorded outcomes
 * gives it again. After the last step rank 0 prints the value and aborts
 * the job, standing for a check that finds a late value corrupted: the
 * failure is that line and MPI_Abort's exit status, and a replay has
 * reached the same failure when it prints the same value.
 * Usage: latefail STEPS */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void nap_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static uint64_t step_root(int step, int size, uint64_t h)
{
	for (int k = 1; k < size; k++) {
		int v = -1, flag = 0;
		long polls = 0;
		MPI_Request req;
		MPI_Status st;
		MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, step, MPI_COMM_WORLD, &req);
		for (;;) {
			MPI_Test(&req, &flag, &st);
			if (flag)
				break;
			polls++;
			/* a poll every 200 us leaves the core to the other ranks */
			nap_us(200);
		}
		h = (h ^ (uint64_t)st.MPI_SOURCE) * 1099511628211ULL;
		h = (h ^ (uint64_t)polls) * 1099511628211ULL;
	}
	return h;
}

int main(int argc, char **argv)
{
	int rank, size;
	if (argc != 2 || atoi(argv[1]) < 1) {
		fprintf(stderr, "usage: latefail STEPS\n");
		return 2;
	}
	int steps = atoi(argv[1]);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	uint64_t h = 14695981039346656037ULL;
	for (int step = 0; step < steps; step++) {
		if (rank == 0) {
			h = step_root(step, size, h);
		} else {
			nap_us(2000 + 1000L * ((rank * 5 + step * 3) % 7));
			int v = rank * 1000 + step;
			MPI_Send(&v, 1, MPI_INT, 0, step, MPI_COMM_WORLD);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	if (rank == 0) {
		printf("failure: value %016llx after %d steps on %d ranks\n", (unsigned long long)h,
		       steps, size);
		fflush(stdout);
		MPI_Abort(MPI_COMM_WORLD, 5);
	}
	MPI_Finalize();
	return 0;
}
