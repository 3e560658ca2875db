/* A message larger than a slice's budget (several slices), a strided
 * datatype, a truncated receive, a zero-length and a self message. With a
 * path (argv[1]), the ranks hold before their last barrier until that file
 * exists: a test's checkpoint then lands in a job that still runs. Rank 0
 * ends by saying how many of libfabric's scans of /proc/kallsyms its
 * library refused (libbcsmpi's fopen; "none" where the library has no such
 * count). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define N (3 * 1024 * 1024 + 17) /* ints: 12 MiB */

int main(int argc, char **argv)
{
	int rank, size, bad = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int peer = size - 1;
	int *buf = malloc(N * sizeof(int));
	if (rank == 0) {
		for (int i = 0; i < N; i++)
			buf[i] = i * 7 + 1;
		double t = MPI_Wtime();
		MPI_Send(buf, N, MPI_INT, peer, 5, MPI_COMM_WORLD);
		MPI_Recv(buf, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		fprintf(stderr, "bigmsg: %d bytes in %.3f s\n", (int)(N * sizeof(int)), MPI_Wtime() - t);
	} else if (rank == peer) {
		MPI_Status st;
		int count;
		MPI_Recv(buf, N, MPI_INT, 0, 5, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &count);
		for (int i = 0; i < N; i++)
			if (buf[i] != i * 7 + 1) {
				bad++;
				break;
			}
		printf("bigmsg: %d ints from %d tag %d, %s\n", count, st.MPI_SOURCE, st.MPI_TAG,
		       bad ? "CORRUPT" : "intact");
		MPI_Send(buf, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
	}
	/* strided: every other int of 10 */
	if (rank == 0 || rank == peer) {
		MPI_Datatype vec;
		MPI_Type_vector(5, 1, 2, MPI_INT, &vec);
		MPI_Type_commit(&vec);
		int v[10];
		for (int i = 0; i < 10; i++)
			v[i] = rank == 0 ? i : -1;
		if (rank == 0) {
			MPI_Send(v, 1, vec, peer, 7, MPI_COMM_WORLD);
		} else {
			MPI_Recv(v, 1, vec, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			printf("vector:");
			for (int i = 0; i < 10; i++)
				printf(" %d", v[i]);
			printf("\n");
		}
		MPI_Type_free(&vec);
		/* truncation, reported with MPI_ERRORS_RETURN */
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		if (rank == 0) {
			int four[4] = {1, 2, 3, 4};
			MPI_Send(four, 4, MPI_INT, peer, 8, MPI_COMM_WORLD);
		} else {
			int two[2];
			MPI_Status st;
			int rc = MPI_Recv(two, 2, MPI_INT, 0, 8, MPI_COMM_WORLD, &st);
			int cls;
			MPI_Error_class(rc, &cls);
			printf("truncate: %s, got %d %d\n", cls == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE" : "no error", two[0], two[1]);
		}
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	}
	/* zero length and to self */
	MPI_Status st;
	int count = -1, x = rank, y = -1;
	MPI_Sendrecv(NULL, 0, MPI_INT, rank, 9, NULL, 0, MPI_INT, rank, 9, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_INT, &count);
	MPI_Sendrecv(&x, 1, MPI_INT, rank, 10, &y, 1, MPI_INT, rank, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (count != 0 || y != rank)
		printf("rank %d: self/zero-length wrong (count %d, y %d)\n", rank, count, y);
	const struct timespec tick = {0, 10000000};
	while (argc > 1 && access(argv[1], F_OK) != 0)
		nanosleep(&tick, NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("self and zero-length: ok\n");
		const unsigned *refused = dlsym(RTLD_DEFAULT, "sn_kallsyms_refused");
		if (refused)
			printf("bigmsg: libfabric's scans of /proc/kallsyms refused: %u\n", *refused);
		else
			printf("bigmsg: libfabric's scans of /proc/kallsyms refused: none\n");
	}
	free(buf);
	MPI_Finalize();
	return bad;
}
