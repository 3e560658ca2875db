/* The large-count (MPI-4 "_c") forms: MPI_Count counts and MPI_Aint
 * displacements, in point to point (Send_c, Recv_c, Isend_c, Irecv_c,
 * Get_count_c) and collectives (Bcast_c, Reduce_c, Allreduce_c, and
 * Alltoallv_c with gaps between the blocks, as MPICH's coll/coll_large).
 * Counts that fit in an int: past INT_MAX the two implementations differ
 * (BCS-MPI refuses them with MPI_ERR_COUNT). */
#include "suite.h"

static int val(int from, int i) { return from * 1000 + i * 3 + 1; }

static void p2p(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int out[5], in[5] = { 0 }, in2[5] = { 0 };
	for (int i = 0; i < 5; i++)
		out[i] = val(rank, i);
	MPI_Request rq[2];
	MPI_Status st;
	MPI_Irecv_c(in, (MPI_Count)5, MPI_INT, left, 7, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend_c(out, (MPI_Count)5, MPI_INT, right, 7, MPI_COMM_WORLD, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	int good = 1;
	for (int i = 0; i < 5; i++)
		good &= in[i] == val(left, i);
	check(good, "isend_c.irecv_c.data");
	/* each blocking form with the other side posted first: any rank count */
	int in3[3] = { 0 };
	MPI_Request r1;
	MPI_Irecv(in3, 3, MPI_INT, left, 9, MPI_COMM_WORLD, &r1);
	MPI_Send_c(out, (MPI_Count)3, MPI_INT, right, 9, MPI_COMM_WORLD);
	MPI_Wait(&r1, MPI_STATUS_IGNORE);
	check(in3[0] == val(left, 0) && in3[2] == val(left, 2), "send_c.data");
	MPI_Isend(out, 3, MPI_INT, right, 8, MPI_COMM_WORLD, &r1);
	MPI_Recv_c(in2, (MPI_Count)5, MPI_INT, left, 8, MPI_COMM_WORLD, &st);
	MPI_Wait(&r1, MPI_STATUS_IGNORE);
	MPI_Count n = -5;
	MPI_Get_count_c(&st, MPI_INT, &n);
	checki(n, 3, "recv_c.get_count_c");
	check(in2[0] == val(left, 0) && in2[2] == val(left, 2) && in2[3] == 0, "recv_c.data");
	MPI_Get_count_c(&st, MPI_DOUBLE, &n);
	checki(n, MPI_UNDEFINED, "get_count_c.undefined");
}

static void colls(void)
{
	long long b[4] = { 0 };
	if (rank == size - 1)
		for (int i = 0; i < 4; i++)
			b[i] = 10 * i + 7;
	MPI_Bcast_c(b, (MPI_Count)4, MPI_LONG_LONG, size - 1, MPI_COMM_WORLD);
	check(b[0] == 7 && b[3] == 37, "bcast_c");
	int x[3] = { rank, rank * rank, 1 }, s[3] = { -1, -1, -1 };
	MPI_Allreduce_c(x, s, (MPI_Count)3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	check(s[0] == size * (size - 1) / 2 && s[2] == size, "allreduce_c.sum");
	int m[3] = { -1, -1, -1 };
	MPI_Reduce_c(x, m, (MPI_Count)3, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0)
		check(m[0] == size - 1 && m[1] == (size - 1) * (size - 1) && m[2] == 1,
		      "reduce_c.max");
	else
		check(m[0] == -1, "reduce_c.non_root_untouched");
}

/* rank r sends i + 1 ints to rank i at 3 * i * (i + 1) / 2, leaving gaps,
 * and receives r + 1 from each at 9 * i */
static void alltoallv(void)
{
	MPI_Count sc[8], rc[8];
	MPI_Aint sd[8], rd[8];
	int sbuf[256], rbuf[256];
	for (int i = 0; i < 256; i++) {
		sbuf[i] = rank * 10000 + i;
		rbuf[i] = -1;
	}
	for (int i = 0; i < size; i++) {
		sc[i] = i + 1;
		sd[i] = 3 * i * (i + 1) / 2;
		rc[i] = rank + 1;
		rd[i] = 9 * i;
	}
	checkrc(MPI_Alltoallv_c(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD),
		MPI_SUCCESS, "alltoallv_c: rc");
	int good = 1;
	for (int i = 0; i < size; i++) {
		for (int k = 0; k < rank + 1; k++)
			good &= rbuf[9 * i + k] == i * 10000 + 3 * rank * (rank + 1) / 2 + k;
		good &= rbuf[9 * i + rank + 1] == -1; /* the gap after it */
	}
	check(good, "alltoallv_c.blocks_and_gaps");

	/* in place: the receive side's counts and displacements, both ways */
	for (int i = 0; i < size; i++) {
		rc[i] = 2;
		rd[i] = 4 * i;
		rbuf[4 * i] = rank * 100 + i;
		rbuf[4 * i + 1] = -rank * 100 - i;
	}
	MPI_Alltoallv_c(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rbuf, rc, rd, MPI_INT,
			MPI_COMM_WORLD);
	good = 1;
	for (int i = 0; i < size; i++)
		good &= rbuf[4 * i] == i * 100 + rank && rbuf[4 * i + 1] == -i * 100 - rank;
	check(good, "alltoallv_c.in_place");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	p2p();
	colls();
	alltoallv();
	return suite_finish("bigcount");
}
