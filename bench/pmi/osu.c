/* OSU-style measurements of an ordinary MPI program (built with MPICH's
 * mpicc), to compare the same binary under storm run (PMI-1) and under
 * mpiexec:
 *   latency  ping-pong between ranks 0 and 1: one line "SIZE USEC" per size
 *            (half the round trip, median of 5 batches)
 *   bw       ranks 0 -> 1, windows of 64 non-blocking sends: "SIZE MB/S"
 *   init     MPI_Init's time: "init USEC", from the earliest rank's call to
 *            the latest rank's return (CLOCK_REALTIME: one host) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double t0 = now_us();
	MPI_Init(&argc, &argv);
	double t1 = now_us();
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	const char *mode = argc > 1 ? argv[1] : "latency";
	if (!strcmp(mode, "init")) {
		double first, last;
		MPI_Reduce(&t0, &first, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
		MPI_Reduce(&t1, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (r == 0)
			printf("init %.0f\n", last - first);
		MPI_Finalize();
		return 0;
	}
	size_t max = 1 << 22;
	char *buf = malloc(max);
	memset(buf, 1, max);
	MPI_Request req[64];
	MPI_Status st[64];
	for (size_t sz = 1; sz <= max; sz *= 4) {
		int iters = sz >= (1 << 20) ? 20 : 200;
		double batch[5];
		for (int b = 0; b < 5; b++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double s = MPI_Wtime();
			if (!strcmp(mode, "latency")) {
				for (int i = 0; i < iters && r < 2; i++) {
					if (r == 0) {
						MPI_Send(buf, (int)sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
						MPI_Recv(buf, (int)sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					} else {
						MPI_Recv(buf, (int)sz, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
						MPI_Send(buf, (int)sz, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
					}
				}
				batch[b] = (MPI_Wtime() - s) * 1e6 / iters / 2;
			} else {
				int win = 64, rounds = sz >= (1 << 20) ? 2 : 10;
				for (int i = 0; i < rounds && r < 2; i++) {
					for (int w = 0; w < win; w++) {
						if (r == 0)
							MPI_Isend(buf, (int)sz, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
						else
							MPI_Irecv(buf, (int)sz, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
					}
					MPI_Waitall(win, req, st);
					char ack = 0;
					if (r == 0)
						MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					else
						MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
				}
				double secs = MPI_Wtime() - s;
				batch[b] = (double)sz * win * rounds / secs / 1e6;
			}
		}
		qsort(batch, 5, sizeof(double), cmp);
		if (r == 0)
			printf("%zu %.2f\n", sz, batch[2]);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
