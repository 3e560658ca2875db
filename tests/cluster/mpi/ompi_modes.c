/* One Open MPI program for tests/cluster/test_pmix.sh, by its argument:
 *   ring     a token goes once round all ranks (each adds 1), then an
 *            allreduce of the ranks; every rank prints what it saw
 *   abort    rank 1 calls MPI_Abort(..., 3) while the others wait in a
 *            receive that never completes
 *   barrier  every rank says it is up, then loops in MPI_Barrier forever */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ring";
	int r, n;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (!strcmp(mode, "abort")) {
		int v;
		if (r == 1) {
			fprintf(stderr, "rank 1 aborts\n");
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("rank %d: not reached\n", r);
	} else if (!strcmp(mode, "barrier")) {
		printf("rank %d of %d up\n", r, n);
		fflush(stdout);
		for (;;)
			MPI_Barrier(MPI_COMM_WORLD);
	} else {
		int tok = 0, sum = 0;
		if (r == 0) {
			tok = 1;
			MPI_Send(&tok, 1, MPI_INT, 1 % n, 0, MPI_COMM_WORLD);
			MPI_Recv(&tok, 1, MPI_INT, n - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&tok, 1, MPI_INT, r - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			tok++;
			MPI_Send(&tok, 1, MPI_INT, (r + 1) % n, 0, MPI_COMM_WORLD);
		}
		MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		printf("rank %d of %d: token %d sum %d\n", r, n, tok, sum);
	}
	MPI_Finalize();
	return 0;
}
