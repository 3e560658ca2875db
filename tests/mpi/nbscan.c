/* MPI_Iscan and MPI_Iexscan: sums (separate buffers and MPI_IN_PLACE), a
 * non-commutative user op (2x2 matrix products mod a prime, so any other
 * order than rank order gives another answer) on a contiguous type, both
 * kinds in flight at once with a barrier between, completed by Wait, a Test
 * loop and Waitall, and the blocking forms' answers beside them. Rank 0's
 * Iexscan result is undefined: not looked at. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static void mat_of(int r, int k, int *m)
{
	m[0] = 1 + k;
	m[1] = r + 2;
	m[2] = 3 * r + k;
	m[3] = 1;
}

/* the product of ranks 0..top-1's matrices k */
static void prefix(int top, int k, int *m)
{
	int id[4] = {1, 0, 0, 1}, x[4];
	memcpy(m, id, sizeof(id));
	for (int r = 0; r < top; r++) {
		mat_of(r, k, x);
		suite_matmul(m, x, m);
	}
}

static void sums(void)
{
	int s[3], inc[3], exc[3] = {-1, -1, -1}, inplace[3];
	for (int j = 0; j < 3; j++)
		s[j] = inplace[j] = (rank + 1) * (j + 1);
	MPI_Request r[3];
	checkrc(MPI_Iscan(s, inc, 3, MPI_INT, MPI_SUM, W, &r[0]), MPI_SUCCESS, "iscan.sum.post");
	checkrc(MPI_Iexscan(s, exc, 3, MPI_INT, MPI_SUM, W, &r[1]), MPI_SUCCESS,
		"iexscan.sum.post");
	checkrc(MPI_Iscan(MPI_IN_PLACE, inplace, 3, MPI_INT, MPI_SUM, W, &r[2]), MPI_SUCCESS,
		"iscan.in_place.post");
	MPI_Barrier(W); /* the three stay open across another collective */
	checkrc(MPI_Waitall(3, r, MPI_STATUSES_IGNORE), MPI_SUCCESS, "iscan.sum.waitall");
	int good = 1, good_ex = 1, good_ip = 1;
	for (int j = 0; j < 3; j++) {
		int upto = (rank + 1) * (rank + 2) / 2 * (j + 1);
		good &= inc[j] == upto;
		good_ip &= inplace[j] == upto;
		good_ex &= rank == 0 || exc[j] == rank * (rank + 1) / 2 * (j + 1);
	}
	check(good, "iscan.sum.values");
	check(good_ex, "iexscan.sum.values");
	check(good_ip, "iscan.in_place.values");
	checki(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, 1, "iscan.requests_null");
}

static void matrices(void)
{
	MPI_Datatype mat;
	MPI_Op op;
	MPI_Type_contiguous(4, MPI_INT, &mat);
	MPI_Type_commit(&mat);
	MPI_Op_create(suite_mat_op, 0, &op);
	int mine[2][4], inc[2][4], exc[2][4], binc[2][4], bexc[2][4], want[4];
	for (int k = 0; k < 2; k++)
		mat_of(rank, k, mine[k]);
	MPI_Request r[2];
	MPI_Iscan(mine, inc, 2, mat, op, W, &r[0]);
	MPI_Iexscan(mine, exc, 2, mat, op, W, &r[1]);
	int done = 0, flag = 0;
	while (!done) {
		MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE);
		done = flag;
	}
	checkrc(MPI_Wait(&r[0], MPI_STATUS_IGNORE), MPI_SUCCESS, "iscan.matrix.wait");
	MPI_Scan(mine, binc, 2, mat, op, W);
	MPI_Exscan(mine, bexc, 2, mat, op, W);
	for (int k = 0; k < 2; k++) {
		prefix(rank + 1, k, want);
		check(!memcmp(inc[k], want, sizeof(want)), nm("iscan.matrix%d.rank_order", k));
		check(!memcmp(inc[k], binc[k], sizeof(want)), nm("iscan.matrix%d.as_scan", k));
		if (rank == 0)
			continue;
		prefix(rank, k, want);
		check(!memcmp(exc[k], want, sizeof(want)), nm("iexscan.matrix%d.rank_order", k));
		check(!memcmp(exc[k], bexc[k], sizeof(want)), nm("iexscan.matrix%d.as_exscan", k));
	}
	MPI_Op_free(&op);
	MPI_Type_free(&mat);
}

/* on a communicator of the odd ranks, rank order reversed */
static void split(void)
{
	MPI_Comm c;
	MPI_Comm_split(W, rank % 2, size - rank, &c);
	int me, v = rank, got = -1;
	MPI_Comm_rank(c, &me);
	MPI_Request r;
	MPI_Iexscan(&v, &got, 1, MPI_INT, MPI_MAX, c, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	/* the lower ranks of c are the higher world ranks of my parity: the
	 * highest of them is c's rank 0 */
	if (me > 0)
		checki(got, (size - 1) % 2 == rank % 2 ? size - 1 : size - 2, "iexscan.split.max");
	MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	sums();
	matrices();
	split();
	return suite_finish("nbscan");
}
