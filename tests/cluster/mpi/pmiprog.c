/* An ordinary MPI program, built with MPICH's mpicc (never bcs-mpicc), for
 * storm's PMI wire-up: ring   a token round the ranks and an allreduce;
 * bw BYTES  rank 0 sends BYTES to the last rank 8 times, which echoes a
 * checksum; abort CODE  the last rank calls MPI_Abort(CODE) while the
 * others wait in a barrier; abort2 FILE TEXT  the last rank calls
 * MPI_Abort(3), rank 0 calls MPI_Abort(4) once FILE holds TEXT (the abort
 * was heard); loop  barriers until killed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int file_has(const char *path, const char *text)
{
	char line[1024];
	int found = 0;
	FILE *f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	const char *mode = argc > 1 ? argv[1] : "ring";
	if (!strcmp(mode, "ring")) {
		int tok = 0;
		if (n == 1) {
			tok = 1;
		} else if (r == 0) {
			tok = 1;
			MPI_Send(&tok, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(&tok, 1, MPI_INT, n - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&tok, 1, MPI_INT, r - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			tok++;
			MPI_Send(&tok, 1, MPI_INT, (r + 1) % n, 0, MPI_COMM_WORLD);
		}
		int sum = 0;
		MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		printf("rank %d of %d: token %d sum %d\n", r, n, tok, sum);
	} else if (!strcmp(mode, "bw") && argc > 2) {
		size_t bytes = strtoull(argv[2], NULL, 10);
		unsigned char *b = malloc(bytes);
		unsigned long sum = 0;
		for (int it = 0; it < 8; it++) {
			if (r == 0) {
				for (size_t i = 0; i < bytes; i++)
					b[i] = (unsigned char)(i * 7 + (size_t)it);
				MPI_Send(b, (int)bytes, MPI_BYTE, n - 1, it, MPI_COMM_WORLD);
			} else if (r == n - 1) {
				MPI_Recv(b, (int)bytes, MPI_BYTE, 0, it, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				for (size_t i = 0; i < bytes; i++)
					sum += b[i];
			}
		}
		if (r == n - 1)
			printf("received %zu bytes 8 times, checksum %lu\n", bytes, sum);
		free(b);
	} else if (!strcmp(mode, "abort") && argc > 2) {
		/* every rank done with MPI_Init first: a peer that aborts while
		 * another still connects to it in MPI_Init (UCX does at init)
		 * makes that one abort too, with the library's code */
		MPI_Barrier(MPI_COMM_WORLD);
		if (r == n - 1) {
			printf("rank %d aborts\n", r);
			fflush(stdout);
			MPI_Abort(MPI_COMM_WORLD, atoi(argv[2]));
		}
		MPI_Barrier(MPI_COMM_WORLD);
		printf("rank %d passed a barrier it should not have\n", r);
	} else if (!strcmp(mode, "abort2") && argc > 3) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (r == n - 1)
			MPI_Abort(MPI_COMM_WORLD, 3);
		if (r == 0) {
			while (!file_has(argv[2], argv[3]))
				usleep(1000);
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else if (!strcmp(mode, "loop")) {
		if (r == 0) {
			printf("looping\n");
			fflush(stdout);
		}
		for (;;)
			MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
