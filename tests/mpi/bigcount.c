/* The large-count (MPI-4 "_c") forms: MPI_Count counts and MPI_Aint
 * displacements, in point to point (Send_c, Recv_c, Isend_c, Irecv_c,
 * Get_count_c) and collectives (Bcast_c, Reduce_c, Allreduce_c, and
 * Alltoallv_c with gaps between the blocks, as MPICH's coll/coll_large).
 * Counts that fit in an int: past INT_MAX the two implementations differ
 * (BCS-MPI refuses them with MPI_ERR_COUNT); but datatypes of more than
 * INT_MAX bytes (Type_contiguous_c, Type_size_c...), none of them sent. */
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

/* datatypes of more than INT_MAX bytes (none is sent): their size and
 * extent by the _c calls, MPI_UNDEFINED from MPI_Type_size; small ones by
 * the same calls carry data as the int forms do */
static void types(void)
{
	MPI_Datatype big, ib, hi;
	MPI_Count sz = 0, lb = -1, ext = 0, five = 5000000000LL;
	MPI_Type_contiguous_c(five, MPI_CHAR, &big);
	MPI_Type_commit(&big);
	MPI_Type_size_c(big, &sz);
	MPI_Type_get_extent_c(big, &lb, &ext);
	check(sz == five && lb == 0 && ext == five, "types: contiguous_c of 5e9 chars");
	int isz = 0;
	MPI_Type_size(big, &isz);
	checki(isz, MPI_UNDEFINED, "types: its MPI_Type_size is MPI_UNDEFINED");
	MPI_Count tl = -1, te = 0;
	MPI_Type_get_true_extent_c(big, &tl, &te);
	check(tl == 0 && te == five, "types: its true extent");
	MPI_Type_free(&big);
	/* ints 1, 4, 7 (blocks of one at displacements 1, 4, 7 ints) */
	MPI_Count d[3] = {1, 4, 7}, bl[2] = {2, 1}, hd[2] = {0, 12};
	MPI_Type_create_indexed_block_c(3, 1, d, MPI_INT, &ib);
	MPI_Type_commit(&ib);
	/* bytes 0, 1 and 12 */
	MPI_Type_create_hindexed_c(2, bl, hd, MPI_CHAR, &hi);
	MPI_Type_commit(&hi);
	int in[8], out[8] = {0};
	for (int k = 0; k < 8; k++)
		in[k] = val(rank, k);
	MPI_Sendrecv(in, 1, ib, rank, 5, out, 1, ib, rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	check(out[1] == in[1] && out[4] == in[4] && out[7] == in[7] && out[0] == 0 && out[5] == 0,
	      "types: indexed_block_c carries ints 1, 4, 7");
	unsigned char cin[16], cout[16] = {0};
	for (int k = 0; k < 16; k++)
		cin[k] = (unsigned char)(k + 1);
	MPI_Sendrecv(cin, 1, hi, rank, 6, cout, 1, hi, rank, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Type_size_c(hi, &sz);
	check(sz == 3 && cout[0] == 1 && cout[1] == 2 && cout[12] == 13 && cout[2] == 0,
	      "types: hindexed_c carries bytes 0, 1, 12");
	MPI_Type_free(&ib);
	MPI_Type_free(&hi);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	p2p();
	colls();
	alltoallv();
	types();
	return suite_finish("bigcount");
}
