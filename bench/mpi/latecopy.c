/* A receiver that computes when its message's data could move, for
 * bench/mpi (the same source for MPICH and BCS-MPI):
 *
 *   latecopy [--bytes 4194304] [--compute-ms 50] [--iters 10]
 *
 * ranks 0 and 1: rank 1 posts MPI_Irecv, computes --compute-ms outside MPI,
 * then waits; rank 0 times its blocking MPI_Send of the same message. Under
 * BCS-MPI two ranks of one node show who copies a message whose receiver
 * computes at its grant: the daemon (the send ends within a slice or two)
 * or the receiver at its next MPI call (the send waits for the compute).
 * One JSON line at rank 0: the median send time (µs). */
#include "mb.h"

static const char usage[] =
	"usage: latecopy [--bytes B] [--compute-ms MS] [--iters N]\n"
	"  rank 0's blocking MPI_Send while rank 1 computes after its MPI_Irecv\n";

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct mb_opt opts[] = {
		{"bytes", 4 << 20, 0}, {"compute-ms", 50, 0}, {"iters", 10, 0},
	};
	int nopts = sizeof opts / sizeof opts[0], rank, size;
	MPI_Init(&argc, &argv);
	mb_parse("latecopy", usage, argc, argv, opts, nopts);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long n = mb_get(opts, nopts, "bytes"), iters = mb_get(opts, nopts, "iters");
	double compute = mb_get(opts, nopts, "compute-ms") / 1000.0;
	if (size < 2 || iters < 1 || iters > 1000)
		mb_die("latecopy", "needs 2 ranks and 1 to 1000 iterations", NULL);
	char *buf = malloc((size_t)n);
	double *t = calloc((size_t)iters, sizeof(*t));
	if (!buf || !t)
		mb_die("latecopy", "out of memory", NULL);
	memset(buf, 1, (size_t)n);
	for (long i = 0; i < iters; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			double t0 = MPI_Wtime();
			MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			t[i] = MPI_Wtime() - t0;
		} else if (rank == 1) {
			MPI_Request rq;
			MPI_Irecv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq);
			for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < compute;)
				;
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
		}
	}
	if (rank == 0) {
		qsort(t, (size_t)iters, sizeof(*t), cmp);
		printf("{\"prog\":\"latecopy\",\"bytes\":%ld,\"compute_ms\":%.0f,\"iters\":%ld,"
		       "\"send_us\":%.1f}\n", n, compute * 1e3, iters, t[iters / 2] * 1e6);
	}
	free(buf);
	free(t);
	mb_finalize();
	return 0;
}
