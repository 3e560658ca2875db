/* Persistent requests: MPI_Send_init, Ssend_init, Rsend_init, Recv_init
 * (a specific source, MPI_ANY_SOURCE, MPI_PROC_NULL, a derived datatype),
 * MPI_Start and MPI_Startall run many times on the same requests, the
 * buffer read at each start; Wait, Test, Waitall, Waitany leave a request
 * inactive, not freed; an inactive one completes at once with an empty
 * status; MPI_Request_free of an inactive one. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static void ring(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int out[3], in[3];
	MPI_Request r[2];
	MPI_Send_init(out, 3, MPI_INT, next, 5, W, &r[0]);
	MPI_Recv_init(in, 3, MPI_INT, prev, 5, W, &r[1]);
	for (int it = 0; it < 4; it++) {
		for (int k = 0; k < 3; k++) {
			out[k] = 100 * it + 10 * rank + k;
			in[k] = -1;
		}
		checkrc(MPI_Startall(2, r), MPI_SUCCESS, nm("ring %d: startall", it));
		MPI_Status st[2];
		MPI_Waitall(2, r, st);
		check(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL,
		      nm("ring %d: the requests stay", it));
		check(in[0] == 100 * it + 10 * prev && in[2] == 100 * it + 10 * prev + 2,
		      nm("ring %d: data", it));
		check_status(&st[1], prev, 5, MPI_INT, 3, nm("ring %d: status", it));
	}
	/* inactive: complete at once, with an empty status */
	MPI_Status st;
	st.MPI_SOURCE = 77;
	MPI_Wait(&r[1], &st);
	check_status(&st, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_INT, 0, "inactive: wait's empty status");
	check(r[1] != MPI_REQUEST_NULL, "inactive: wait keeps it");
	int flag = 0;
	MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
	check(flag && r[0] != MPI_REQUEST_NULL, "inactive: test is true and keeps it");
	int idx = -5;
	MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
	checki(idx, MPI_UNDEFINED, "inactive: waitany of none active");
	MPI_Request_free(&r[0]);
	MPI_Request_free(&r[1]);
	check(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "request_free: null");
}

/* to rank 0 from every other, in turn: MPI_ANY_SOURCE, Waitany, Test */
static void gather_any(void)
{
	if (rank != 0) {
		int v;
		MPI_Request s;
		MPI_Ssend_init(&v, 1, MPI_INT, 0, 8, W, &s);
		for (int it = 0; it < 3; it++) {
			/* one sender at a time: the outcome is MPI's, not timing's */
			MPI_Recv(NULL, 0, MPI_INT, 0, 9, W, MPI_STATUS_IGNORE);
			v = 1000 * it + rank;
			MPI_Start(&s);
			int idx = -1;
			MPI_Waitany(1, &s, &idx, MPI_STATUS_IGNORE);
			checki(idx, 0, nm("any %d: sender's waitany", it));
		}
		MPI_Request_free(&s);
		return;
	}
	int v = -1;
	MPI_Request r;
	MPI_Recv_init(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, W, &r);
	for (int it = 0; it < 3; it++)
		for (int src = 1; src < size; src++) {
			MPI_Start(&r);
			MPI_Send(NULL, 0, MPI_INT, src, 9, W);
			MPI_Status st;
			int flag = 0;
			while (!flag)
				MPI_Test(&r, &flag, &st);
			checki(v, 1000 * it + src, nm("any %d: from %d", it, src));
			check_status(&st, src, 8, MPI_INT, 1, nm("any %d: status from %d", it, src));
		}
	MPI_Request_free(&r);
}

/* a ready send's receive is started before it (a barrier orders them) */
static void ready_and_derived(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int out[6], in[6];
	MPI_Datatype every2;
	MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	MPI_Request s, r;
	MPI_Rsend_init(out, 1, every2, next, 3, W, &s);
	MPI_Recv_init(in, 1, every2, prev, 3, W, &r);
	MPI_Type_free(&every2); /* the requests keep it */
	for (int it = 0; it < 2; it++) {
		for (int k = 0; k < 6; k++) {
			out[k] = 10 * rank + k + it;
			in[k] = -1;
		}
		MPI_Start(&r);
		MPI_Barrier(W);
		MPI_Start(&s);
		MPI_Wait(&s, MPI_STATUS_IGNORE);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		check(in[0] == 10 * prev + it && in[1] == -1 && in[2] == 10 * prev + 2 + it &&
			      in[4] == 10 * prev + 4 + it && in[5] == -1,
		      nm("rsend %d: every other int", it));
	}
	MPI_Request_free(&s);
	MPI_Request_free(&r);
}

static void proc_null(void)
{
	int v = 5;
	MPI_Request r[2];
	MPI_Send_init(&v, 1, MPI_INT, MPI_PROC_NULL, 0, W, &r[0]);
	MPI_Recv_init(&v, 1, MPI_INT, MPI_PROC_NULL, 0, W, &r[1]);
	for (int it = 0; it < 2; it++) {
		MPI_Startall(2, r);
		MPI_Status st[2];
		MPI_Waitall(2, r, st);
		/* (its source: MPI_PROC_NULL, or MPICH's MPI_ANY_SOURCE) */
		int n = -1;
		MPI_Get_count(&st[1], MPI_INT, &n);
		check(n == 0 && st[1].MPI_TAG == MPI_ANY_TAG,
		      nm("proc_null %d: receive's status", it));
		checki(v, 5, nm("proc_null %d: buffer untouched", it));
	}
	MPI_Request_free(&r[0]);
	MPI_Request_free(&r[1]);
}

static void errors(void)
{
	MPI_Request r;
	int v = 0;
	checkrc(MPI_Send_init(&v, 1, MPI_INT, size, 0, W, &r), MPI_ERR_RANK, "error: bad rank");
	checkrc(MPI_Recv_init(&v, -1, MPI_INT, 0, 0, W, &r), MPI_ERR_COUNT, "error: bad count");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	ring();
	gather_any();
	ready_and_derived();
	proc_null();
	errors();
	return suite_finish("persist");
}
