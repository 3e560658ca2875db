/* A program whose outcome depends on timing under a conventional MPI: in each
 * of ROUNDS rounds every rank but 0 does a different small amount of work,
 * then sends to rank 0, which receives with MPI_ANY_SOURCE and notes who came
 * first. Rank 0 prints the order of the first round and an FNV-1a digest of
 * all arrival orders. Under BCS-MPI the matching, hence the output, must be
 * the same on every run. Usage: racy [ROUNDS] (default 4). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

static void work(int units)
{
	for (long i = 0; i < units * 20000L; i++)
		sink += (unsigned long)i ^ sink;
}

int main(int argc, char **argv)
{
	int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 4;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	uint64_t digest = 14695981039346656037ULL;
	for (int round = 0; round < rounds; round++) {
		if (rank != 0) {
			work((rank * 7 + round * 3) % 4);
			int msg = rank * 1000 + round;
			MPI_Send(&msg, 1, MPI_INT, 0, round, MPI_COMM_WORLD);
			continue;
		}
		if (round == 0)
			printf("racy: first round order:");
		for (int i = 1; i < size; i++) {
			int msg;
			MPI_Status st;
			MPI_Recv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, round, MPI_COMM_WORLD, &st);
			if (msg != st.MPI_SOURCE * 1000 + round) {
				printf("\nracy: FAIL message %d from %d in round %d\n", msg, st.MPI_SOURCE, round);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			digest = (digest ^ (uint64_t)st.MPI_SOURCE) * 1099511628211ULL;
			if (round == 0)
				printf(" %d", st.MPI_SOURCE);
		}
		if (round == 0)
			printf("\n");
	}
	if (rank == 0)
		printf("racy: %d rounds on %d ranks, order digest %016llx\n", rounds, size,
		       (unsigned long long)digest);
	MPI_Finalize();
	return 0;
}
