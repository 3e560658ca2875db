/* An equivalent of OSU's osu_bw and, built with -DBIBW, osu_bibw (our own
 * code): rank 0 streams a window of non-blocking sends of each size to
 * rank 1, which acknowledges each window (bw); or both ranks stream to each
 * other at once (bibw). Prints MB/s, 10^6 bytes a second. */
#include "osu.h"

#define TAG_DATA 100
#define TAG_ACK 101

int main(int argc, char **argv)
{
	struct osu_opts o = { 1, 1 << 22, 100, 10, 64, 0 };
	int rank, size, ok = 1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (osu_parse(argc, argv, &o, rank) || !osu_two(size, rank) || o.window < 1) {
		MPI_Finalize();
		return 1;
	}
	const int w = o.window;
	/* one buffer per window slot, so that validation sees every message */
	char *s_buf = malloc((size_t)(o.max_size + 1) * (size_t)w);
	char *r_buf = malloc((size_t)(o.max_size + 1) * (size_t)w);
	MPI_Request *req = malloc(sizeof(*req) * 2 * (size_t)w);
#ifdef BIBW
	const int peer = 1 - rank;
	if (rank == 0)
		osu_header("Bi-Directional Bandwidth", "# Size      Bandwidth (MB/s)", &o);
#else
	char ack[4] = { 0 };
	if (rank == 0)
		osu_header("Bandwidth", "# Size      Bandwidth (MB/s)", &o);
#endif
	for (long len = o.min_size ? o.min_size : 1; len <= o.max_size; len *= 2) {
		double t_start = 0, t_end = 0;
		int valid = 1;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < o.iterations + o.skip; i++) {
			if (i == o.skip)
				t_start = MPI_Wtime();
			int n = 0;
#ifdef BIBW
			for (int j = 0; j < w; j++)
				MPI_Irecv(r_buf + j * len, (int)len, MPI_CHAR, peer, TAG_DATA,
					  MPI_COMM_WORLD, &req[n++]);
			for (int j = 0; j < w; j++) {
				if (o.validate)
					osu_fill(s_buf + j * len, len, i * w + j, rank);
				MPI_Isend(s_buf + j * len, (int)len, MPI_CHAR, peer, TAG_DATA,
					  MPI_COMM_WORLD, &req[n++]);
			}
			MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
			if (o.validate)
				for (int j = 0; j < w; j++)
					valid &= osu_check(r_buf + j * len, len, i * w + j, peer);
#else
			if (rank == 0) {
				for (int j = 0; j < w; j++) {
					if (o.validate)
						osu_fill(s_buf + j * len, len, i * w + j, 0);
					MPI_Isend(s_buf + j * len, (int)len, MPI_CHAR, 1, TAG_DATA,
						  MPI_COMM_WORLD, &req[n++]);
				}
				MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
				MPI_Recv(ack, 4, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				for (int j = 0; j < w; j++)
					MPI_Irecv(r_buf + j * len, (int)len, MPI_CHAR, 0, TAG_DATA,
						  MPI_COMM_WORLD, &req[n++]);
				MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
				if (o.validate)
					for (int j = 0; j < w; j++)
						valid &= osu_check(r_buf + j * len, len, i * w + j, 0);
				MPI_Send(ack, 4, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
			}
#endif
		}
		t_end = MPI_Wtime();
		int all = 0;
		MPI_Reduce(&valid, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			double mb = (double)len / 1e6 * o.iterations * w;
#ifdef BIBW
			mb *= 2;
#endif
			osu_row(len, mb / (t_end - t_start), &o, all);
			ok &= all;
		}
	}
	free(s_buf);
	free(r_buf);
	free(req);
	MPI_Finalize();
	return ok ? 0 : 1;
}
