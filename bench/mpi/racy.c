/* A racy MPI_ANY_SOURCE program for bench/mpi: in each of ROUNDS rounds
 * rank 0 broadcasts a go, every other rank spins a few microseconds and
 * sends its rank, and rank 0 receives the P-1 messages with MPI_ANY_SOURCE
 * in whatever order they match. The outcome is the sequence of sources
 * matched: with an ordinary MPI it depends on timing, so repeated runs give
 * many outcomes; with BCS-MPI's deterministic matching one.
 *
 *   racy [--rounds 50] [--spin-us 20]
 *
 * Prints one JSON line (rank 0): the outcome's hash, the first round's
 * order, the number of wildcard receives (the nondeterministic events a
 * --record trace holds) and the run time. */
#include "mb.h"

static const char usage[] =
	"usage: racy [--rounds R] [--spin-us US]\n"
	"  R rounds of every rank sending to rank 0, received with MPI_ANY_SOURCE;\n"
	"  prints the hash of the matching order at rank 0.\n";

int main(int argc, char **argv)
{
	struct mb_opt opts[] = {{"rounds", 50, 0}, {"spin-us", 20, 0}};
	int nopts = sizeof opts / sizeof opts[0];
	MPI_Init(&argc, &argv);
	mb_parse("racy", usage, argc, argv, opts, nopts);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int rounds = (int)mb_get(opts, nopts, "rounds");
	double spin = mb_get(opts, nopts, "spin-us") / 1e6;
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	char first[256] = "";
	size_t flen = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int r = 0; r < rounds; r++) {
		int go = r;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (rank) {
			double t = MPI_Wtime();
			while (MPI_Wtime() - t < spin)
				;
			MPI_Send(&rank, 1, MPI_INT, 0, r, MPI_COMM_WORLD);
			continue;
		}
		for (int i = 1; i < size; i++) {
			int who;
			MPI_Status st;
			MPI_Recv(&who, 1, MPI_INT, MPI_ANY_SOURCE, r, MPI_COMM_WORLD, &st);
			if (who != st.MPI_SOURCE)
				mb_die("racy", "payload does not match MPI_SOURCE", NULL);
			h = mb_mix(h ^ (uint64_t)who);
			if (r == 0 && flen + 8 < sizeof first)
				flen += (size_t)snprintf(first + flen, sizeof first - flen, "%s%d", i > 1 ? "," : "", who);
		}
	}
	double t = mb_slowest(t0);
	if (rank == 0)
		printf("{\"prog\":\"racy\",\"ranks\":%d,\"rounds\":%d,\"wildcard_recvs\":%d,\"time_s\":%.6f,"
		       "\"first_round\":\"%s\",\"outcome\":\"0x%016llx\"}\n",
		       size, rounds, rounds * (size - 1), t, first, (unsigned long long)h);
	mb_finalize();
	return 0;
}
