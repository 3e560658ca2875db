/* A token goes round the ring three times; each rank adds its rank. With
 * argv[1] = BYTES (and more than one rank), a payload of that many bytes
 * goes round too, each rank checking the pattern its predecessor wrote (a
 * payload of 64 KiB or more between nodes goes from rank to rank where the
 * cluster has rank writes on). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(long i, int lap, int from)
{
	return (unsigned char)(i * 31 + lap * 7 + from);
}

int main(int argc, char **argv)
{
	int rank, size, token = 0, bad = 0;
	long bytes = argc > 1 ? atol(argv[1]) : 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || bytes < 0)
		bytes = 0;
	unsigned char *pay = bytes ? malloc((size_t)bytes) : NULL;
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	for (int lap = 0; lap < 3; lap++) {
		if (rank == 0) {
			token += rank;
			MPI_Send(&token, 1, MPI_INT, next, lap, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_INT, prev, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&token, 1, MPI_INT, prev, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			token += rank;
			MPI_Send(&token, 1, MPI_INT, next, lap, MPI_COMM_WORLD);
		}
		if (!bytes)
			continue;
		/* rank 0 sends first, the others pass it on once theirs is in */
		if (rank != 0)
			MPI_Recv(pay, (int)bytes, MPI_BYTE, prev, 100 + lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (long i = 0; rank != 0 && i < bytes; i++)
			bad += pay[i] != pattern(i, lap, prev);
		for (long i = 0; i < bytes; i++)
			pay[i] = pattern(i, lap, rank);
		MPI_Send(pay, (int)bytes, MPI_BYTE, next, 100 + lap, MPI_COMM_WORLD);
		if (rank == 0) {
			MPI_Recv(pay, (int)bytes, MPI_BYTE, prev, 100 + lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (long i = 0; i < bytes; i++)
				bad += pay[i] != pattern(i, lap, prev);
		}
	}
	if (bytes)
		MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("ring: token %d (expected %d)\n", token, 3 * size * (size - 1) / 2);
		if (bytes)
			printf("ring: %ld-byte payloads %s\n", bytes, bad ? "CORRUPT" : "intact");
	}
	free(pay);
	MPI_Finalize();
	return rank == 0 && (token != 3 * size * (size - 1) / 2 || bad);
}
