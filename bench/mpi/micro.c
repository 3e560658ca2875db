/* MPI microbenchmarks for bench/mpi, the same source for MPICH and BCS-MPI:
 *
 *   micro [--pingpong] [--bw] [--allreduce] [--budget-ms 400] [--max-bytes 1048576]
 *
 *   pingpong   ranks 0 and 1: MPI_Send/MPI_Recv round trips of 8 B, 64 B, ...
 *              (x8) up to 1 MiB; half the mean round trip (µs).
 *   bw         ranks 0 to 1: a window of 16 MPI_Isend (MPI_Irecv preposted),
 *              MPI_Waitall, an 8 B acknowledgement; MB/s (10^6 B/s); 8 B to
 *              256 KiB by 8, then by 4 (1 MiB, 4 MiB).
 *   allreduce  every rank: MPI_Allreduce(MPI_SUM) of one double, back to
 *              back; mean time per call (µs).
 * Without a test flag, all three. The number of iterations of each
 * measurement is chosen by rank 0 from a short trial so that it takes about
 * --budget-ms (at least 5, at most 100000), and broadcast. One JSON line per
 * result at rank 0. */
#include "mb.h"

static const char usage[] =
	"usage: micro [--pingpong] [--bw] [--allreduce] [--budget-ms MS] [--max-bytes B]\n"
	"  MPI ping-pong latency and streaming bandwidth (ranks 0 and 1, 8 B to B bytes)\n"
	"  and one-word MPI_Allreduce (all ranks); one JSON line per result at rank 0.\n";

#define WINDOW 16
enum { PINGPONG, BW, ALLREDUCE };

static int rank, size;
static char *buf;

/* one repetition of a test on n bytes */
static void once(int test, int n, MPI_Request *rq, MPI_Status *st)
{
	double x = 1.0, y;
	switch (test) {
	case PINGPONG:
		if (rank == 0) {
			MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
		break;
	case BW:
		if (rank == 0) {
			for (int i = 0; i < WINDOW; i++)
				MPI_Isend(buf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[i]);
			MPI_Waitall(WINDOW, rq, st);
			MPI_Recv(&y, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			for (int i = 0; i < WINDOW; i++)
				MPI_Irecv(buf + (size_t)i * n, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[i]);
			MPI_Waitall(WINDOW, rq, st);
			MPI_Send(&x, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
		}
		break;
	case ALLREDUCE:
		MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		break;
	}
}

/* seconds per repetition, over an iteration count that fits the budget */
static double measure(int test, int n, double budget, long *iters_out)
{
	MPI_Request rq[WINDOW];
	MPI_Status st[WINDOW];
	long iters = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	once(test, n, rq, st); /* warm-up: connections, registration */
	once(test, n, rq, st);
	double t0 = MPI_Wtime();
	for (int i = 0; i < 3; i++)
		once(test, n, rq, st);
	double trial = (MPI_Wtime() - t0) / 3;
	if (rank == 0) {
		iters = trial > 0 ? (long)(budget / trial) : 100000;
		iters = iters < 5 ? 5 : iters > 100000 ? 100000 : iters;
	}
	MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		once(test, n, rq, st);
	double t = MPI_Wtime() - t0;
	*iters_out = iters;
	return t / iters;
}

/* bandwidth sizes: by 8, from 256 KiB by 4 (1 MiB, 4 MiB), ending on max */
static long bw_next(long n, long maxb)
{
	long next = n * (n >= 262144 ? 4 : 8);
	return n < maxb && next > maxb ? maxb : next;
}

int main(int argc, char **argv)
{
	struct mb_opt opts[] = {
		{"pingpong", 0, 1}, {"bw", 0, 1}, {"allreduce", 0, 1},
		{"budget-ms", 400, 0}, {"max-bytes", 1 << 20, 0},
	};
	int nopts = sizeof opts / sizeof opts[0];
	MPI_Init(&argc, &argv);
	mb_parse("micro", usage, argc, argv, opts, nopts);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int pp = (int)mb_get(opts, nopts, "pingpong"), bw = (int)mb_get(opts, nopts, "bw");
	int ar = (int)mb_get(opts, nopts, "allreduce");
	if (!pp && !bw && !ar)
		pp = bw = ar = 1;
	double budget = mb_get(opts, nopts, "budget-ms") / 1000.0;
	long maxb = mb_get(opts, nopts, "max-bytes");
	if ((pp || bw) && size < 2)
		mb_die("micro", "--pingpong and --bw need 2 ranks", NULL);
	buf = malloc((size_t)WINDOW * (maxb > 8 ? maxb : 8));
	if (!buf)
		mb_die("micro", "out of memory", NULL);
	memset(buf, 1, (size_t)WINDOW * (maxb > 8 ? maxb : 8));
	long iters;

	for (long n = 8; pp && n <= maxb; n *= 8) {
		double t = measure(PINGPONG, (int)n, budget, &iters);
		if (rank == 0)
			printf("{\"prog\":\"micro\",\"test\":\"pingpong\",\"ranks\":%d,\"bytes\":%ld,"
			       "\"iters\":%ld,\"lat_us\":%.3f}\n", size, n, iters, t / 2 * 1e6);
		if (n < maxb && n * 8 > maxb)
			n = maxb / 8; /* end on max-bytes itself */
	}
	for (long n = 8; bw && n <= maxb; n = bw_next(n, maxb)) {
		double t = measure(BW, (int)n, budget, &iters);
		if (rank == 0)
			printf("{\"prog\":\"micro\",\"test\":\"bw\",\"ranks\":%d,\"bytes\":%ld,\"window\":%d,"
			       "\"iters\":%ld,\"mb_s\":%.3f}\n", size, n, WINDOW, iters,
			       (double)WINDOW * n / t / 1e6);
	}
	if (ar) {
		double t = measure(ALLREDUCE, 8, budget, &iters);
		if (rank == 0)
			printf("{\"prog\":\"micro\",\"test\":\"allreduce\",\"ranks\":%d,\"bytes\":8,"
			       "\"iters\":%ld,\"lat_us\":%.3f}\n", size, iters, t * 1e6);
	}
	free(buf);
	mb_finalize();
	return 0;
}
