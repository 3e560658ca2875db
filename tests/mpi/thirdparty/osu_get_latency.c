/* An equivalent of OSU's osu_get_latency (our own code): the latency of MPI_Get (us per synchronised get)
 * from rank 0 into rank 1's window, for each message size, 0 then powers of
 * two up to -m; osu_1sc.h has the window and synchronisation options. */
#include "osu_1sc.h"

int main(int argc, char **argv)
{
	return osu_1sc_main(argc, argv, 1, 0);
}
