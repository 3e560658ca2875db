/* Buffered sends: MPI_Buffer_attach/detach, MPI_Bsend, MPI_Ibsend and
 * MPI_Bsend_init: several messages sent before any is received (to the
 * next rank and to oneself), rounds reusing the buffer, a derived
 * datatype, a detach before the receive, and MPI_ERR_BUFFER for no buffer,
 * a message larger than the buffer and a second attach; buffered sends on
 * an intercommunicator. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;
#define N 4   /* messages in flight */
#define LEN 8 /* ints each */

static void rounds(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int bsize = N * (LEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
	char *buf = malloc((size_t)bsize);
	checkrc(MPI_Buffer_attach(buf, bsize), MPI_SUCCESS, "attach");
	for (int it = 0; it < 3; it++) {
		int out[LEN], in[LEN];
		for (int m = 0; m < N; m++) {
			for (int k = 0; k < LEN; k++)
				out[k] = 1000 * it + 100 * m + 10 * rank + k;
			int rc;
			if (m % 2) {
				MPI_Request r;
				rc = MPI_Ibsend(out, LEN, MPI_INT, next, m, W, &r);
				MPI_Wait(&r, MPI_STATUS_IGNORE);
			} else {
				rc = MPI_Bsend(out, LEN, MPI_INT, next, m, W);
			}
			checkrc(rc, MPI_SUCCESS, nm("round %d: bsend %d", it, m));
			out[0] = -9; /* the send has its copy */
		}
		for (int m = N - 1; m >= 0; m--) {
			MPI_Status st;
			MPI_Recv(in, LEN, MPI_INT, prev, m, W, &st);
			check(in[0] == 1000 * it + 100 * m + 10 * prev &&
				      in[LEN - 1] == 1000 * it + 100 * m + 10 * prev + LEN - 1,
			      nm("round %d: message %d", it, m));
			check_status(&st, prev, m, MPI_INT, LEN, nm("round %d: status %d", it, m));
		}
	}
	/* to oneself, received before the detach (MPICH's detach waits for a
	 * message to itself to be received) */
	int v = 40 + rank, got = -1;
	checkrc(MPI_Bsend(&v, 1, MPI_INT, rank, 7, W), MPI_SUCCESS, "self: bsend");
	MPI_Recv(&got, 1, MPI_INT, rank, 7, W, MPI_STATUS_IGNORE);
	checki(got, 40 + rank, "self: received");
	/* to the next rank, received after the detach */
	v = 50 + rank;
	if (size > 1)
		checkrc(MPI_Bsend(&v, 1, MPI_INT, next, 7, W), MPI_SUCCESS, "next: bsend");
	void *back = NULL;
	int bback = -1;
	checkrc(MPI_Buffer_detach(&back, &bback), MPI_SUCCESS, "detach");
	check(back == buf && bback == bsize, "detach: the buffer attached");
	if (size > 1) {
		MPI_Recv(&got, 1, MPI_INT, prev, 7, W, MPI_STATUS_IGNORE);
		checki(got, 50 + prev, "next: received after the detach");
	}
	free(buf);
}

static void derived_and_persistent(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int bsize = 2 * (64 + MPI_BSEND_OVERHEAD);
	char *buf = malloc((size_t)bsize);
	MPI_Buffer_attach(buf, bsize);
	MPI_Datatype every2;
	MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int out[6] = {rank, -1, rank + 2, -1, rank + 4, -1}, in[3];
	checkrc(MPI_Bsend(out, 1, every2, next, 1, W), MPI_SUCCESS, "derived: bsend");
	MPI_Recv(in, 3, MPI_INT, prev, 1, W, MPI_STATUS_IGNORE);
	check(in[0] == prev && in[1] == prev + 2 && in[2] == prev + 4, "derived: received");
	MPI_Type_free(&every2);

	MPI_Request r;
	int x;
	MPI_Bsend_init(&x, 1, MPI_INT, next, 2, W, &r);
	for (int it = 0; it < 3; it++) {
		x = 10 * it + rank;
		checkrc(MPI_Start(&r), MPI_SUCCESS, nm("bsend_init %d: start", it));
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		int y = -1;
		MPI_Recv(&y, 1, MPI_INT, prev, 2, W, MPI_STATUS_IGNORE);
		checki(y, 10 * it + prev, nm("bsend_init %d: received", it));
	}
	MPI_Request_free(&r);
	void *back;
	int bback;
	MPI_Buffer_detach(&back, &bback);
	free(buf);
}

static void errors(void)
{
	int v[64] = {0};
	checkrc(MPI_Bsend(v, 1, MPI_INT, rank, 0, W), MPI_ERR_BUFFER, "error: no buffer");
	int bsize = 16 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
	char *buf = malloc((size_t)bsize);
	MPI_Buffer_attach(buf, bsize);
	checkrc(MPI_Bsend(v, 64, MPI_INT, rank, 0, W), MPI_ERR_BUFFER, "error: larger than it");
	checkrc(MPI_Buffer_attach(buf, bsize), MPI_ERR_BUFFER, "error: attached twice");
	/* the largest that fits */
	checkrc(MPI_Bsend(v, 16, MPI_INT, rank, 0, W), MPI_SUCCESS, "largest that fits");
	MPI_Recv(v, 16, MPI_INT, rank, 0, W, MPI_STATUS_IGNORE);
	void *back;
	int bback;
	MPI_Buffer_detach(&back, &bback);
	free(buf);
}

/* buffered sends between the groups of an intercommunicator (even ranks
 * and odd): Bsend, Ibsend and Bsend_init to the remote rank of one's own
 * local rank, received in the reverse order */
static void inter(void)
{
	if (size < 2)
		return;
	MPI_Comm local, ic;
	MPI_Comm_split(W, rank % 2, rank, &local);
	MPI_Intercomm_create(local, 0, W, rank % 2 ? 0 : 1, 52, &ic);
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
	int lr, rs;
	MPI_Comm_rank(local, &lr);
	MPI_Comm_remote_size(ic, &rs);
	int bsize = 3 * (4 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
	char *buf = malloc((size_t)bsize);
	MPI_Buffer_attach(buf, bsize);
	int peer = lr < rs ? lr : MPI_PROC_NULL, out[3][4], in[4];
	for (int m = 0; m < 3; m++)
		for (int k = 0; k < 4; k++)
			out[m][k] = 100 * m + 10 * rank + k;
	checkrc(MPI_Bsend(out[0], 4, MPI_INT, peer, 60, ic), MPI_SUCCESS, "inter: bsend");
	MPI_Request r;
	checkrc(MPI_Ibsend(out[1], 4, MPI_INT, peer, 61, ic, &r), MPI_SUCCESS, "inter: ibsend");
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	checkrc(MPI_Bsend_init(out[2], 4, MPI_INT, peer, 62, ic, &r), MPI_SUCCESS,
		"inter: bsend_init");
	MPI_Start(&r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Request_free(&r);
	checkrc(MPI_Bsend(out[0], 4, MPI_INT, rs, 63, ic), MPI_ERR_RANK,
		"inter: a rank past the remote group");
	int pw = rank % 2 ? 2 * lr : 2 * lr + 1;
	for (int m = 2; m >= 0 && peer != MPI_PROC_NULL; m--) {
		MPI_Status st;
		MPI_Recv(in, 4, MPI_INT, peer, 60 + m, ic, &st);
		check(in[0] == 100 * m + 10 * pw && in[3] == 100 * m + 10 * pw + 3,
		      nm("inter: message %d", m));
		check_status(&st, peer, 60 + m, MPI_INT, 4, nm("inter: status %d", m));
	}
	void *back;
	int bback;
	MPI_Buffer_detach(&back, &bback);
	free(buf);
	MPI_Comm_free(&ic);
	MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	rounds();
	derived_and_persistent();
	errors();
	inter();
	return suite_finish("bsend");
}
