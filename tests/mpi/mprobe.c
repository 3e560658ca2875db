/* Matched probes (MPI_Message): Mprobe and Improbe take the message they
 * find off the queue, so that no other receive can have it, and Mrecv or
 * Imrecv receives it by its handle, also into a derived datatype, and
 * truncated into too small a buffer; MPI_PROC_NULL gives
 * MPI_MESSAGE_NO_PROC. A single completion (Mrecv, Recv, Wait) leaves a
 * status's MPI_ERROR alone. Each rank sends to the next and receives from
 * the previous. */
#include "suite.h"

static int next, prev;

/* a status whose error field the call must leave as it is */
static void mark(MPI_Status *st)
{
	st->MPI_ERROR = MPI_ERR_DIMS;
}

static void by_tag(void)
{
	int a = 100 + rank, b = 200 + rank, got = -1;
	MPI_Request rq[2];
	MPI_Isend(&a, 1, MPI_INT, next, 5, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(&b, 1, MPI_INT, next, 6, MPI_COMM_WORLD, &rq[1]);
	MPI_Message m = MPI_MESSAGE_NULL;
	MPI_Status st;
	mark(&st);
	checkrc(MPI_Mprobe(prev, 6, MPI_COMM_WORLD, &m, &st), MPI_SUCCESS, "tag: mprobe");
	check(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "tag: a message handle");
	check_status(&st, prev, 6, MPI_INT, 1, "tag: its status");
	mark(&st);
	checkrc(MPI_Mrecv(&got, 1, MPI_INT, &m, &st), MPI_SUCCESS, "tag: mrecv");
	checki(got, 200 + prev, "tag: mrecv has the probed message");
	check(m == MPI_MESSAGE_NULL, "tag: the handle is spent");
	check_status(&st, prev, 6, MPI_INT, 1, "tag: mrecv's status");
	checki(st.MPI_ERROR, MPI_ERR_DIMS, "tag: mrecv leaves the error field");
	mark(&st);
	MPI_Recv(&got, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, &st);
	checki(got, 100 + prev, "tag: the other one by a receive");
	checki(st.MPI_ERROR, MPI_ERR_DIMS, "tag: recv leaves the error field");
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
}

/* a receive posted between the probe and its Mrecv gets the next message */
static void taken_off(void)
{
	int v[2] = {10 * rank + 1, 10 * rank + 2}, got = -1, other = -1;
	MPI_Request rq[2];
	MPI_Isend(&v[0], 1, MPI_INT, next, 7, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(&v[1], 1, MPI_INT, next, 7, MPI_COMM_WORLD, &rq[1]);
	MPI_Message m;
	MPI_Status st;
	/* any source, but tag 7 only: a rank done early sends rank 0 its log
	 * (suite_finish) with a tag of its own */
	MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m, &st);
	check_status(&st, prev, 7, MPI_INT, 1, "taken: wildcard mprobe");
	MPI_Recv(&other, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	checki(other, 10 * prev + 2, "taken: a receive after the probe gets the second");
	MPI_Mrecv(&got, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
	checki(got, 10 * prev + 1, "taken: mrecv the first");
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
}

static void nonblocking(void)
{
	double x[3] = {rank + 0.5, rank + 1.5, rank + 2.5}, y[3] = {0, 0, 0};
	MPI_Request sq, rq;
	MPI_Isend(x, 3, MPI_DOUBLE, next, 8, MPI_COMM_WORLD, &sq);
	int flag = 0;
	MPI_Message m = MPI_MESSAGE_NULL;
	MPI_Status st;
	while (!flag)
		MPI_Improbe(prev, 8, MPI_COMM_WORLD, &flag, &m, &st);
	check(m != MPI_MESSAGE_NULL, "nb: improbe found it");
	check_status(&st, prev, 8, MPI_DOUBLE, 3, "nb: its status");
	checkrc(MPI_Imrecv(y, 3, MPI_DOUBLE, &m, &rq), MPI_SUCCESS, "nb: imrecv");
	check(m == MPI_MESSAGE_NULL, "nb: the handle is spent");
	mark(&st);
	MPI_Wait(&rq, &st);
	check_status(&st, prev, 8, MPI_DOUBLE, 3, "nb: wait's status");
	checki(st.MPI_ERROR, MPI_ERR_DIMS, "nb: wait leaves the error field");
	check(y[0] == prev + 0.5 && y[2] == prev + 2.5, "nb: the data");
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
}

static void derived_and_short(void)
{
	int a[4] = {rank, rank + 1, rank + 2, rank + 3}, b[8], small[2] = {-1, -1};
	MPI_Datatype every_other;
	MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
	MPI_Type_commit(&every_other);
	MPI_Request rq;
	MPI_Isend(a, 4, MPI_INT, next, 9, MPI_COMM_WORLD, &rq);
	MPI_Message m;
	MPI_Mprobe(prev, 9, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
	for (int i = 0; i < 8; i++)
		b[i] = -1;
	MPI_Mrecv(b, 1, every_other, &m, MPI_STATUS_IGNORE);
	check(b[0] == prev && b[2] == prev + 1 && b[4] == prev + 2 && b[6] == prev + 3 &&
		      b[1] == -1 && b[7] == -1,
	      "derived: mrecv scatters into a vector");
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	MPI_Type_free(&every_other);

	MPI_Isend(a, 4, MPI_INT, next, 10, MPI_COMM_WORLD, &rq);
	MPI_Mprobe(prev, 10, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
	checkrc(MPI_Mrecv(small, 2, MPI_INT, &m, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE,
		"short: mrecv into too small a buffer");
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
}

static void proc_null(void)
{
	MPI_Message m = MPI_MESSAGE_NULL;
	MPI_Status st;
	mark(&st);
	MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &m, &st);
	check(m == MPI_MESSAGE_NO_PROC, "null: mprobe gives MPI_MESSAGE_NO_PROC");
	check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "null: its status");
	int x = 7;
	mark(&st);
	MPI_Mrecv(&x, 1, MPI_INT, &m, &st);
	check(m == MPI_MESSAGE_NULL, "null: mrecv spends it");
	check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "null: mrecv's status");
	checki(x, 7, "null: the buffer untouched");
	int flag = 0;
	MPI_Improbe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE);
	check(flag && m == MPI_MESSAGE_NO_PROC, "null: improbe finds it at once");
	MPI_Request rq;
	MPI_Imrecv(&x, 1, MPI_INT, &m, &rq);
	MPI_Wait(&rq, &st);
	check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "null: imrecv's status");
}

/* Fortran's handles and back */
static void handles(void)
{
	check(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL,
	      "handles: message c2f and f2c");
	check(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD,
	      "handles: comm c2f and f2c");
	check(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "handles: type c2f and f2c");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	next = (rank + 1) % size;
	prev = (rank + size - 1) % size;
	by_tag();
	taken_off();
	nonblocking();
	derived_and_short();
	proc_null();
	handles();
	return suite_finish("mprobe");
}
