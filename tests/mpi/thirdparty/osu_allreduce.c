/* An equivalent of OSU's osu_allreduce (our own code): MPI_Allreduce of
 * size/4 floats with MPI_SUM, sizes from 4 bytes. */
#include "osu_coll.h"

static int allreduce(long len, int iter, int rank, int nprocs, char *sbuf, char *rbuf,
		     int validate)
{
	long n = len / (long)sizeof(float);
	if (validate) {
		osu_fill_floats((float *)sbuf, n, rank, iter);
		memset(rbuf, 0, (size_t)len);
	}
	MPI_Allreduce(sbuf, rbuf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	return !validate || osu_check_sum((float *)rbuf, n, nprocs, iter);
}

int main(int argc, char **argv)
{
	return osu_coll_main(argc, argv, "Allreduce Latency", 4, allreduce);
}
