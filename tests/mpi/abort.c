/* Ends a job the hard ways; run.sh checks the exit status and that nothing
 * after the failing call printed.
 *   abort      the last rank calls MPI_Abort(MPI_COMM_WORLD, 3) while the
 *              others wait in a receive that nothing will match
 *   fatal      rank 0 truncates a receive under the default handler
 *              (MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD)
 *   fatal-dup  the same on a dup set back to MPI_ERRORS_ARE_FATAL while
 *              MPI_COMM_WORLD returns errors */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank, size, x[4] = { 1, 2, 3, 4 }, y[2];
	const char *mode = argc > 1 ? argv[1] : "abort";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm c = MPI_COMM_WORLD;
	if (strcmp(mode, "fatal-dup") == 0) {
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		MPI_Comm_dup(MPI_COMM_WORLD, &c);
		MPI_Comm_set_errhandler(c, MPI_ERRORS_ARE_FATAL);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("%s: before\n", mode);
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (strcmp(mode, "abort") == 0) {
		if (rank == size - 1)
			MPI_Abort(MPI_COMM_WORLD, 3);
		else
			MPI_Recv(y, 1, MPI_INT, size - 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (rank == 0) {
		MPI_Request rq;
		MPI_Isend(x, 4, MPI_INT, 0, 1, c, &rq);
		MPI_Recv(y, 2, MPI_INT, 0, 1, c, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(y, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	printf("%s: after (rank %d)\n", mode, rank);
	MPI_Finalize();
	return 0;
}
