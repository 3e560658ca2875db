/* MPI_Isendrecv and MPI_Isendrecv_replace: a ring exchange both ways
 * (several in flight, completed by Waitall, Waitany, Wait and a Test loop),
 * the receive's status on the request, a wildcard source and tag, a message
 * shorter than the receive and an empty one, messages to oneself,
 * MPI_PROC_NULL on either side and both, a derived datatype (freed while
 * pending), _replace of a buffer received into while its old contents
 * leave, and MPI_ERR_RANK and MPI_ERR_TAG refusing the call with nothing
 * left pending. BCS-MPI only: Debian's MPICH 4.0.2 leaves the request's
 * status empty, crashes or never completes with MPI_PROC_NULL, fails its
 * own assertions on derived types and hangs at 4 ranks. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;
#define LEN 16

static void ring(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int out[3][LEN], in[3][LEN];
	MPI_Request r[3];
	for (int m = 0; m < 3; m++) {
		for (int k = 0; k < LEN; k++)
			out[m][k] = 1000 * m + 100 * rank + k;
		/* m = 1 the other way round the ring */
		int to = m == 1 ? prev : next, from = m == 1 ? next : prev;
		checkrc(MPI_Isendrecv(out[m], LEN, MPI_INT, to, m, in[m], LEN, MPI_INT, from, m, W,
				      &r[m]),
			MPI_SUCCESS, nm("ring %d: isendrecv", m));
	}
	MPI_Status st[3];
	checkrc(MPI_Waitall(3, r, st), MPI_SUCCESS, "ring: waitall");
	for (int m = 0; m < 3; m++) {
		int from = m == 1 ? next : prev;
		check(r[m] == MPI_REQUEST_NULL, nm("ring %d: request freed", m));
		check(in[m][0] == 1000 * m + 100 * from && in[m][LEN - 1] == 1000 * m + 100 * from + LEN - 1,
		      nm("ring %d: data", m));
		check_status(&st[m], from, m, MPI_INT, LEN, nm("ring %d: status", m));
	}

	/* a wildcard receive: the status names the sender */
	int v = 7 + rank, got = -1;
	MPI_Request q;
	MPI_Status s;
	MPI_Isendrecv(&v, 1, MPI_INT, next, 20 + rank, &got, 1, MPI_INT, MPI_ANY_SOURCE,
		      MPI_ANY_TAG, W, &q);
	int flag = 0;
	while (!flag)
		MPI_Test(&q, &flag, &s);
	checki(got, 7 + prev, "wildcard: data");
	check_status(&s, prev, 20 + prev, MPI_INT, 1, "wildcard: status");
}

static void edges(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	MPI_Request q;
	MPI_Status s;
	/* a receive larger than the message: the status counts what came */
	double d[4] = {rank + 0.5, rank + 1.5, -1, -1}, e[4] = {-1, -1, -1, -1};
	MPI_Isendrecv(d, 2, MPI_DOUBLE, prev, 5, e, 4, MPI_DOUBLE, next, 5, W, &q);
	MPI_Wait(&q, &s);
	check(e[0] == next + 0.5 && e[1] == next + 1.5 && e[2] == -1, "shorter message: data");
	check_status(&s, next, 5, MPI_DOUBLE, 2, "shorter message: status");
	/* nothing either way but the envelope */
	MPI_Isendrecv(d, 0, MPI_DOUBLE, next, 9, e, 0, MPI_DOUBLE, prev, 9, W, &q);
	MPI_Wait(&q, &s);
	check_status(&s, prev, 9, MPI_DOUBLE, 0, "empty message: status");
	/* the same buffer sent to oneself while another message lands */
	int v = 70 + rank, w = -1;
	MPI_Request two[2];
	MPI_Isendrecv(&v, 1, MPI_INT, rank, 11, &w, 1, MPI_INT, rank, 11, W, &two[0]);
	int x = 80 + rank, y = -1;
	MPI_Isendrecv(&x, 1, MPI_INT, next, 12, &y, 1, MPI_INT, prev, 12, W, &two[1]);
	int idx = -1;
	MPI_Waitany(2, two, &idx, &s);
	MPI_Wait(&two[1 - idx], MPI_STATUS_IGNORE);
	checki(w, 70 + rank, "self: data");
	checki(y, 80 + prev, "self and ring: data");

	/* MPI_PROC_NULL: nothing received (its status), or nothing sent; the
	 * first one's send completes once the second one's receive takes it */
	int got = -5, got2 = -5;
	MPI_Status ss[2];
	v = 90 + rank;
	MPI_Isendrecv(&v, 1, MPI_INT, next, 13, &got, 1, MPI_INT, MPI_PROC_NULL, 13, W, &two[0]);
	MPI_Isendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 13, &got2, 1, MPI_INT, prev, 13, W, &two[1]);
	MPI_Waitall(2, two, ss);
	check_status(&ss[0], MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "proc_null source: status");
	checki(got, -5, "proc_null source: buffer untouched");
	checki(got2, 90 + prev, "proc_null dest: received");
	check_status(&ss[1], prev, 13, MPI_INT, 1, "proc_null dest: status");
	MPI_Isendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 13, &got, 1, MPI_INT, MPI_PROC_NULL, 13, W,
		      &q);
	MPI_Wait(&q, &s);
	check_status(&s, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "proc_null both: status");

	/* a derived type each side, freed while the call is pending */
	MPI_Datatype every2;
	MPI_Type_vector(4, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int out[8], in[4] = {-1, -1, -1, -1};
	for (int k = 0; k < 8; k++)
		out[k] = k % 2 ? -1 : 10 * rank + k;
	MPI_Isendrecv(out, 1, every2, next, 14, in, 4, MPI_INT, prev, 14, W, &q);
	MPI_Type_free(&every2);
	MPI_Wait(&q, &s);
	check(in[0] == 10 * prev && in[1] == 10 * prev + 2 && in[3] == 10 * prev + 6,
	      "derived: data");
	check_status(&s, prev, 14, MPI_INT, 4, "derived: status");
}

static void replace(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int buf[LEN];
	for (int k = 0; k < LEN; k++)
		buf[k] = 100 * rank + k;
	MPI_Request q;
	MPI_Status s;
	checkrc(MPI_Isendrecv_replace(buf, LEN, MPI_INT, next, 6, prev, 6, W, &q), MPI_SUCCESS,
		"replace: isendrecv_replace");
	MPI_Wait(&q, &s);
	check(buf[0] == 100 * prev && buf[LEN - 1] == 100 * prev + LEN - 1, "replace: data");
	check_status(&s, prev, 6, MPI_INT, LEN, "replace: status");

	/* a strided buffer: only the type's elements move */
	MPI_Datatype every2;
	MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int x[6] = {rank, -7, rank + 1, -7, rank + 2, -7};
	MPI_Isendrecv_replace(x, 1, every2, prev, 8, next, 8, W, &q);
	MPI_Wait(&q, &s);
	check(x[0] == next && x[2] == next + 1 && x[4] == next + 2 && x[1] == -7 && x[5] == -7,
	      "replace derived: data");
	check_status(&s, next, 8, every2, 1, "replace derived: status");
	MPI_Type_free(&every2);

	/* many in flight with oneself and the ring, each into its own buffer */
	int b[4][2];
	MPI_Request rs[4];
	for (int m = 0; m < 4; m++) {
		b[m][0] = 1000 * m + rank;
		b[m][1] = -m;
		int peer = m % 2 ? rank : next, from = m % 2 ? rank : prev;
		MPI_Isendrecv_replace(b[m], 2, MPI_INT, peer, 40 + m, from, 40 + m, W, &rs[m]);
	}
	MPI_Waitall(4, rs, MPI_STATUSES_IGNORE);
	for (int m = 0; m < 4; m++) {
		int from = m % 2 ? rank : prev;
		check(b[m][0] == 1000 * m + from && b[m][1] == -m, nm("replace %d: data", m));
	}
}

static void errors(void)
{
	int v = 1, got = -1;
	MPI_Request q = MPI_REQUEST_NULL;
	checkrc(MPI_Isendrecv(&v, 1, MPI_INT, size, 0, &got, 1, MPI_INT, rank, 0, W, &q),
		MPI_ERR_RANK, "error: destination out of range");
	checkrc(MPI_Isendrecv(&v, 1, MPI_INT, rank, 0, &got, 1, MPI_INT, -7, 0, W, &q),
		MPI_ERR_RANK, "error: source out of range");
	checkrc(MPI_Isendrecv(&v, 1, MPI_INT, rank, -3, &got, 1, MPI_INT, rank, 0, W, &q),
		MPI_ERR_TAG, "error: negative send tag");
	checkrc(MPI_Isendrecv_replace(&v, 1, MPI_INT, rank, 0, rank, -3, W, &q), MPI_ERR_TAG,
		"error: replace: negative receive tag");
	/* nothing of the refused calls is pending: this exchange takes tag 0 */
	v = 60 + rank;
	MPI_Isendrecv_replace(&v, 1, MPI_INT, rank, 0, rank, 0, W, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	checki(v, 60 + rank, "error: the next exchange with oneself");
	int flag = -1;
	MPI_Iprobe(rank, MPI_ANY_TAG, W, &flag, MPI_STATUS_IGNORE);
	checki(flag, 0, "error: no message left behind");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	ring();
	edges();
	replace();
	MPI_Barrier(W);
	errors();
	return suite_finish("isendrecv");
}
