/* An equivalent of OSU's osu_put_bw (our own code): the bandwidth of MPI_Put (-W puts per synchronisation, MB/s)
 * from rank 0 into rank 1's window, for each message size, 0 then powers of
 * two up to -m; osu_1sc.h has the window and synchronisation options. */
#include "osu_1sc.h"

int main(int argc, char **argv)
{
	return osu_1sc_main(argc, argv, 0, 1);
}
