/* Cartesian topologies: Dims_create (free and fixed dimensions), Cart_create
 * (periodic and not, a grid smaller than the communicator), Topo_test,
 * Cartdim_get, Cart_get, Cart_coords, Cart_rank (with wrap-around),
 * Cart_shift, Cart_sub; then a 2-D halo exchange on a periodic grid: rows
 * travel as contiguous runs, columns as an MPI_Type_vector, by Sendrecv with
 * the neighbours Cart_shift names. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static void dims(void)
{
	static const int cases[][2] = {{1, 1}, {6, 2}, {8, 3}, {12, 2}, {16, 4}, {20, 4}, {24, 3},
				       {30, 3}, {36, 2}, {64, 3}, {7, 2}, {360, 4}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int d[4] = {0, 0, 0, 0}, n = cases[k][0], nd = cases[k][1];
		checkrc(MPI_Dims_create(n, nd, d), MPI_SUCCESS, nm("dims.%d_%d.rc", n, nd));
		suite_line("dims %d over %d: %d %d %d %d", n, nd, d[0], d[1], d[2], d[3]);
	}
	int f[3] = {0, 3, 0};
	MPI_Dims_create(24, 3, f);
	suite_line("dims 24 over 0 3 0: %d %d %d", f[0], f[1], f[2]);
	int e[2] = {5, 0};
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	check(MPI_Dims_create(12, 2, e) != MPI_SUCCESS, "dims.not_divisible");
	MPI_Comm_set_errhandler(W, MPI_ERRORS_ARE_FATAL);
}

static void grid(void)
{
	int d[2] = {0, 0}, per[2] = {1, 0}, st, nd, r, co[2], gd[2], gp[2], gc[2];
	MPI_Dims_create(size, 2, d);
	MPI_Comm cart;
	checkrc(MPI_Cart_create(W, 2, d, per, 0, &cart), MPI_SUCCESS, "cart.rc");
	MPI_Topo_test(cart, &st);
	checki(st, MPI_CART, "topo_test.cart");
	MPI_Topo_test(W, &st);
	checki(st, MPI_UNDEFINED, "topo_test.world");
	MPI_Cartdim_get(cart, &nd);
	checki(nd, 2, "cartdim");
	MPI_Comm_rank(cart, &r);
	checki(r, rank, "cart.rank_kept");
	MPI_Cart_coords(cart, r, 2, co);
	check(co[0] == r / d[1] && co[1] == r % d[1], "coords.row_major");
	MPI_Cart_get(cart, 2, gd, gp, gc);
	check(gd[0] == d[0] && gd[1] == d[1] && gp[0] == 1 && gp[1] == 0 && gc[0] == co[0] &&
	      gc[1] == co[1], "cart_get");
	int good = 1;
	for (int i = 0; i < size; i++) {
		int c2[2], back;
		MPI_Cart_coords(cart, i, 2, c2);
		MPI_Cart_rank(cart, c2, &back);
		good &= back == i;
	}
	check(good, "coords_rank.roundtrip");
	/* wrap-around on the periodic dimension */
	int wrap[2] = {co[0] + d[0], co[1]}, wr;
	MPI_Cart_rank(cart, wrap, &wr);
	checki(wr, r, "cart_rank.periodic_wrap");
	int src, dst;
	MPI_Cart_shift(cart, 0, 1, &src, &dst);
	checki(dst, ((co[0] + 1) % d[0]) * d[1] + co[1], "shift.periodic.dest");
	checki(src, ((co[0] + d[0] - 1) % d[0]) * d[1] + co[1], "shift.periodic.source");
	MPI_Cart_shift(cart, 1, 1, &src, &dst);
	checki(dst, co[1] + 1 < d[1] ? r + 1 : MPI_PROC_NULL, "shift.open.dest");
	checki(src, co[1] > 0 ? r - 1 : MPI_PROC_NULL, "shift.open.source");
	MPI_Cart_shift(cart, 1, -2, &src, &dst);
	checki(dst, co[1] - 2 >= 0 ? r - 2 : MPI_PROC_NULL, "shift.back2.dest");

	/* sub-grids: rows (dimension 1 kept) and columns (dimension 0 kept) */
	int keep_row[2] = {0, 1}, keep_col[2] = {1, 0}, n, sr;
	MPI_Comm row, col;
	checkrc(MPI_Cart_sub(cart, keep_row, &row), MPI_SUCCESS, "sub.rc");
	MPI_Comm_size(row, &n);
	MPI_Comm_rank(row, &sr);
	check(n == d[1] && sr == co[1], "sub.row");
	MPI_Cartdim_get(row, &nd);
	checki(nd, 1, "sub.row.ndims");
	int rs = 0;
	MPI_Allreduce(&rank, &rs, 1, MPI_INT, MPI_SUM, row);
	checki(rs, co[0] * d[1] * d[1] + d[1] * (d[1] - 1) / 2, "sub.row.allreduce");
	MPI_Cart_sub(cart, keep_col, &col);
	MPI_Comm_size(col, &n);
	MPI_Comm_rank(col, &sr);
	check(n == d[0] && sr == co[0], "sub.col");
	MPI_Cart_get(col, 1, gd, gp, gc);
	check(gd[0] == d[0] && gp[0] == 1, "sub.col.periodic_kept");
	MPI_Comm_free(&row);
	MPI_Comm_free(&col);
	/* no dimension kept: a zero-dimensional grid of rank 0 alone, as
	 * Cart_create of no dimensions gives (MPICH's answer) */
	int keep_none[2] = {0, 0};
	MPI_Comm none;
	checkrc(MPI_Cart_sub(cart, keep_none, &none), MPI_SUCCESS, "sub.none.rc");
	if (rank == 0) {
		int cmp = -1;
		MPI_Comm_compare(MPI_COMM_SELF, none, &cmp);
		MPI_Cartdim_get(none, &nd);
		check(cmp == MPI_CONGRUENT && nd == 0, "sub.none.self");
		MPI_Comm_free(&none);
	} else {
		check(none == MPI_COMM_NULL, "sub.none.left_out");
	}

	/* a dup keeps the topology */
	MPI_Comm dup;
	MPI_Comm_dup(cart, &dup);
	MPI_Topo_test(dup, &st);
	checki(st, MPI_CART, "dup.keeps_topology");
	MPI_Comm_free(&dup);
	MPI_Comm_free(&cart);

	/* a grid smaller than the communicator: the rest get MPI_COMM_NULL */
	int one[1] = {size > 1 ? size - 1 : 1}, p1[1] = {0};
	MPI_Comm small;
	MPI_Cart_create(W, 1, one, p1, 1, &small);
	if (rank < one[0]) {
		MPI_Comm_size(small, &n);
		checki(n, one[0], "small.size");
		MPI_Comm_free(&small);
	} else {
		check(small == MPI_COMM_NULL, "small.left_out");
	}
}

/* The halo exchange: each rank owns an NXxNY block of a global field with
 * one ghost cell around it; after the exchange every ghost holds its
 * neighbour's border value (periodic in both dimensions). */
#define NX 6
#define NY 5
static double gval(int gx, int gy) { return gx * 1000.0 + gy + 0.25; }

static void halo(void)
{
	int d[2] = {0, 0}, per[2] = {1, 1}, co[2];
	MPI_Dims_create(size, 2, d);
	MPI_Comm cart;
	MPI_Cart_create(W, 2, d, per, 1, &cart);
	int me;
	MPI_Comm_rank(cart, &me);
	MPI_Cart_coords(cart, me, 2, co);
	int GX = d[0] * NX, GY = d[1] * NY;
	/* u[(i)*(NY+2) + j], i in 0..NX+1 (rows, dimension 0), j in 0..NY+1 */
	double u[(NX + 2) * (NY + 2)];
	for (int i = 0; i < NX + 2; i++)
		for (int j = 0; j < NY + 2; j++)
			u[i * (NY + 2) + j] = -1;
	for (int i = 1; i <= NX; i++)
		for (int j = 1; j <= NY; j++)
			u[i * (NY + 2) + j] = gval(co[0] * NX + i - 1, co[1] * NY + j - 1);
	MPI_Datatype column;
	MPI_Type_vector(NX, 1, NY + 2, MPI_DOUBLE, &column);
	MPI_Type_commit(&column);
	int up, down, left, right;
	MPI_Cart_shift(cart, 0, 1, &up, &down);
	MPI_Cart_shift(cart, 1, 1, &left, &right);
	/* rows: send my last row down, receive my top ghost row from up */
	MPI_Sendrecv(&u[NX * (NY + 2) + 1], NY, MPI_DOUBLE, down, 1, &u[0 * (NY + 2) + 1], NY,
		     MPI_DOUBLE, up, 1, cart, MPI_STATUS_IGNORE);
	MPI_Sendrecv(&u[1 * (NY + 2) + 1], NY, MPI_DOUBLE, up, 2, &u[(NX + 1) * (NY + 2) + 1], NY,
		     MPI_DOUBLE, down, 2, cart, MPI_STATUS_IGNORE);
	/* columns as one vector each */
	MPI_Status st;
	MPI_Sendrecv(&u[1 * (NY + 2) + NY], 1, column, right, 3, &u[1 * (NY + 2) + 0], 1, column,
		     left, 3, cart, &st);
	int cnt = -1;
	MPI_Get_count(&st, column, &cnt);
	checki(cnt, 1, "halo.column_count");
	MPI_Get_elements(&st, column, &cnt);
	checki(cnt, NX, "halo.column_elements");
	MPI_Sendrecv(&u[1 * (NY + 2) + 1], 1, column, left, 4, &u[1 * (NY + 2) + NY + 1], 1, column,
		     right, 4, cart, MPI_STATUS_IGNORE);
	int good = 1;
	for (int i = 0; i <= NX + 1; i++)
		for (int j = 0; j <= NY + 1; j++) {
			int corner = (i == 0 || i == NX + 1) && (j == 0 || j == NY + 1);
			double want = corner ? -1
					     : gval((co[0] * NX + i - 1 + GX) % GX,
						    (co[1] * NY + j - 1 + GY) % GY);
			good &= u[i * (NY + 2) + j] == want;
		}
	check(good, "halo.ghosts");
	/* a checksum of the interior plus ghosts, reduced over the grid */
	double s = 0, tot = 0;
	for (int i = 0; i < (NX + 2) * (NY + 2); i++)
		s += u[i];
	MPI_Reduce(&s, &tot, 1, MPI_DOUBLE, MPI_SUM, 0, cart);
	if (me == 0)
		suite_line("halo checksum %.2f", tot);
	MPI_Type_free(&column);
	MPI_Comm_free(&cart);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	dims();
	grid();
	halo();
	return suite_finish("cart");
}
