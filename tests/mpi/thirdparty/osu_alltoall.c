/* An equivalent of OSU's osu_alltoall (our own code): MPI_Alltoall with
 * size bytes to every rank. */
#include "osu_coll.h"

static int alltoall(long len, int iter, int rank, int nprocs, char *sbuf, char *rbuf,
		    int validate)
{
	if (validate) {
		for (int d = 0; d < nprocs; d++)
			osu_fill(sbuf + d * len, len, iter, rank * 1000 + d);
		memset(rbuf, 0, (size_t)(len * nprocs));
	}
	MPI_Alltoall(sbuf, (int)len, MPI_CHAR, rbuf, (int)len, MPI_CHAR, MPI_COMM_WORLD);
	int ok = 1;
	for (int s = 0; validate && s < nprocs; s++)
		ok &= osu_check(rbuf + s * len, len, iter, s * 1000 + rank);
	return ok;
}

int main(int argc, char **argv)
{
	return osu_coll_main(argc, argv, "All-to-All Personalized Exchange Latency", 1, alltoall);
}
