/* An equivalent of OSU's osu_reduce (our own code): MPI_Reduce of size/4
 * floats with MPI_SUM to rank 0, sizes from 4 bytes. */
#include "osu_coll.h"

static int reduce(long len, int iter, int rank, int nprocs, char *sbuf, char *rbuf, int validate)
{
	long n = len / (long)sizeof(float);
	if (validate) {
		osu_fill_floats((float *)sbuf, n, rank, iter);
		memset(rbuf, 0, (size_t)len);
	}
	MPI_Reduce(sbuf, rbuf, (int)n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
	return !validate || rank != 0 || osu_check_sum((float *)rbuf, n, nprocs, iter);
}

int main(int argc, char **argv)
{
	return osu_coll_main(argc, argv, "Reduce Latency", 4, reduce);
}
