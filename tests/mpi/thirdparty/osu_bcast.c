/* An equivalent of OSU's osu_bcast (our own code): MPI_Bcast of each size
 * from rank 0, mean latency over ranks. */
#include "osu_coll.h"

static int bcast(long len, int iter, int rank, int nprocs, char *sbuf, char *rbuf, int validate)
{
	(void)nprocs;
	(void)rbuf;
	if (validate && rank == 0)
		osu_fill(sbuf, len, iter, 0);
	else if (validate)
		memset(sbuf, 0, (size_t)len);
	MPI_Bcast(sbuf, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
	return !validate || osu_check(sbuf, len, iter, 0);
}

int main(int argc, char **argv)
{
	return osu_coll_main(argc, argv, "Broadcast Latency", 1, bcast);
}
