/* Whether this rank has loaded libfabric (its own endpoint's library), as
 * its /proc/self/maps says: after small messages only (it must not have:
 * a rank opens its endpoint for its first send or receive of 64 KiB or
 * more), then after a 256 KiB exchange between rank 0 and the last rank
 * (with rank writes on, it must have). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int yes = 0;
	while (f && fgets(line, sizeof(line), f))
		yes |= strstr(line, "libfabric") != NULL;
	if (f)
		fclose(f);
	return yes;
}

int main(int argc, char **argv)
{
	int rank, size, token = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int peer = rank == 0 ? size - 1 : 0;
	if (rank == 0 || rank == size - 1) {
		MPI_Sendrecv_replace(&token, 1, MPI_INT, peer, 1, peer, 1, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
		printf("lazyep: rank %d after small messages: libfabric %s\n", rank,
		       mapped() ? "loaded" : "not loaded");
		fflush(stdout);
		char *buf = calloc(1, 256 << 10);
		if (rank == 0)
			MPI_Send(buf, 256 << 10, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		else
			MPI_Recv(buf, 256 << 10, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("lazyep: rank %d after 256 KiB: libfabric %s\n", rank,
		       mapped() ? "loaded" : "not loaded");
		free(buf);
	}
	MPI_Finalize();
	return 0;
}
