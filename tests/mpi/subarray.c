/* Subarray and distributed-array datatypes: MPI_Type_create_subarray (C and
 * Fortran order, 2 and 3 dimensions, of a derived type) and
 * MPI_Type_create_darray (block, cyclic with and without a block size,
 * none; C and Fortran order; the process grid from MPI_Dims_create), their
 * envelopes, size, bounds and true bounds, the elements MPI_Pack takes from
 * a global array (logged, so the output compares them with MPICH's), and
 * messages sent and received with them. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

/* logs a type's layout and the ints it packs from buf */
static void layout(MPI_Datatype t, const int *buf, const char *what)
{
	int sz = -1, pos = 0;
	MPI_Aint lb, ext, tlb, text;
	MPI_Type_size(t, &sz);
	MPI_Type_get_extent(t, &lb, &ext);
	MPI_Type_get_true_extent(t, &tlb, &text);
	suite_line("     %s: size %d lb %ld extent %ld true_lb %ld true_extent %ld", what, sz,
		   (long)lb, (long)ext, (long)tlb, (long)text);
	int *out = malloc((size_t)sz + 1);
	MPI_Pack(buf, 1, t, out, sz, &pos, W);
	char line[4096];
	int at = 0;
	for (int i = 0; i < sz / (int)sizeof(int) && at < (int)sizeof(line) - 16; i++)
		at += snprintf(line + at, sizeof(line) - (size_t)at, " %d", out[i]);
	line[at] = '\0';
	suite_line("     %s: packs%s", what, line);
	free(out);
}

static void envelope(MPI_Datatype t, int ni, int combiner, const char *what)
{
	int a = -1, b = -1, c = -1, comb = -1;
	MPI_Type_get_envelope(t, &a, &b, &c, &comb);
	check(a == ni && b == 0 && c == 1 && comb == combiner, nm("%s.envelope", what));
}

static void subarrays(void)
{
	int g[6 * 8];
	for (int i = 0; i < 6 * 8; i++)
		g[i] = i;
	int sizes[2] = {6, 8}, sub[2] = {3, 4}, start[2] = {1, 2};
	MPI_Datatype c2, f2, c3, pairs;
	checkrc(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &c2),
		MPI_SUCCESS, "sub_c2.rc");
	MPI_Type_commit(&c2);
	envelope(c2, 8, MPI_COMBINER_SUBARRAY, "sub_c2");
	layout(c2, g, "sub_c2");
	/* row 1 + r, columns 2..5 */
	int pos = 0, out[12], good = 1;
	MPI_Pack(g, 1, c2, out, sizeof(out), &pos, W);
	for (int r = 0; r < 3; r++)
		for (int k = 0; k < 4; k++)
			good &= out[4 * r + k] == 8 * (1 + r) + 2 + k;
	check(good && pos == 48, "sub_c2.rows_of_columns");
	/* the same numbers in Fortran order: the first index fastest */
	MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_INT, &f2);
	MPI_Type_commit(&f2);
	layout(f2, g, "sub_f2");
	pos = 0;
	MPI_Pack(g, 1, f2, out, sizeof(out), &pos, W);
	good = 1;
	for (int k = 0; k < 4; k++)
		for (int r = 0; r < 3; r++)
			good &= out[3 * k + r] == 6 * (2 + k) + 1 + r;
	check(good, "sub_f2.columns_of_rows");
	/* 3 dimensions of (int, int) pairs */
	MPI_Type_contiguous(2, MPI_INT, &pairs);
	int s3[3] = {2, 3, 4}, b3[3] = {1, 2, 2}, o3[3] = {1, 0, 1};
	MPI_Type_create_subarray(3, s3, b3, o3, MPI_ORDER_C, pairs, &c3);
	MPI_Type_free(&pairs);
	MPI_Type_commit(&c3);
	envelope(c3, 11, MPI_COMBINER_SUBARRAY, "sub_c3");
	layout(c3, g, "sub_c3");

	/* a subarray to the right, into the same place of a zeroed array */
	int right = (rank + 1) % size, left = (rank + size - 1) % size, mine[6 * 8], got[6 * 8];
	for (int i = 0; i < 6 * 8; i++) {
		mine[i] = 1000 * rank + i;
		got[i] = -1;
	}
	MPI_Sendrecv(mine, 1, c2, right, 4, got, 1, c2, left, 4, W, MPI_STATUS_IGNORE);
	good = 1;
	for (int i = 0; i < 6 * 8; i++) {
		int r = i / 8, k = i % 8;
		int in = r >= 1 && r < 4 && k >= 2 && k < 6;
		good &= got[i] == (in ? 1000 * left + i : -1);
	}
	check(good, "sub_c2.message_lands_in_place");
	/* and received as 12 contiguous ints */
	MPI_Sendrecv(mine, 1, c2, right, 5, out, 12, MPI_INT, left, 5, W, MPI_STATUS_IGNORE);
	checki(out[5], 1000 * left + 8 * 2 + 3, "sub_c2.message_packed");
	MPI_Type_free(&c2);
	MPI_Type_free(&f2);
	MPI_Type_free(&c3);
}

/* the global array's elements this rank's darray takes, for each rank in
 * turn (each rank logs its own) */
static void darray(int n, const int *gs, const int *dist, const int *darg, const int *ps,
		   int order, const char *what)
{
	int total = 1;
	for (int d = 0; d < n; d++)
		total *= gs[d];
	int *g = malloc((size_t)total * sizeof(int));
	for (int i = 0; i < total; i++)
		g[i] = i;
	MPI_Datatype t;
	checkrc(MPI_Type_create_darray(size, rank, n, gs, dist, darg, ps, order, MPI_INT, &t),
		MPI_SUCCESS, nm("%s.rc", what));
	MPI_Type_commit(&t);
	envelope(t, 4 * n + 4, MPI_COMBINER_DARRAY, what);
	layout(t, g, what);
	/* every element is someone's, once */
	int sz;
	MPI_Type_size(t, &sz);
	int *mine = malloc((size_t)sz + 1), pos = 0;
	MPI_Pack(g, 1, t, mine, sz, &pos, W);
	long sum = 0, all = 0, count = sz / (int)sizeof(int), nall = 0;
	for (int i = 0; i < count; i++)
		sum += mine[i];
	MPI_Allreduce(&sum, &all, 1, MPI_LONG, MPI_SUM, W);
	MPI_Allreduce(&count, &nall, 1, MPI_LONG, MPI_SUM, W);
	check(nall == total && all == (long)total * (total - 1) / 2, nm("%s.partition", what));
	MPI_Type_free(&t);
	free(mine);
	free(g);
}

static void darrays(void)
{
	int ps[2] = {0, 0};
	MPI_Dims_create(size, 2, ps);
	int gs[2] = {8, 6}, bb[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK};
	int dflt[3] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
	darray(2, gs, bb, dflt, ps, MPI_ORDER_C, "darray_block_block_c");
	int cb[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, two[2] = {2, MPI_DISTRIBUTE_DFLT_DARG};
	darray(2, gs, cb, two, ps, MPI_ORDER_FORTRAN, "darray_cyclic2_block_f");
	int gs3[3] = {3, 5, 4}, ps3[3] = {1, ps[0], ps[1]};
	int ncb[3] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
	darray(3, gs3, ncb, dflt, ps3, MPI_ORDER_C, "darray_none_cyclic_block_c");
	int g1[1] = {11}, p1[1] = {size}, c1[1] = {MPI_DISTRIBUTE_CYCLIC}, d1[1] = {3};
	darray(1, g1, c1, d1, p1, MPI_ORDER_C, "darray_cyclic3_1d");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	subarrays();
	darrays();
	return suite_finish("subarray");
}
