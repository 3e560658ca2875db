/* Neighborhood collectives, blocking and MPI_Ineighbor_* (completed by Wait,
 * a Test loop and Waitall), on: a 1-D Cartesian line (MPI_PROC_NULL at its
 * ends: those blocks untouched) and ring, a 2-D periodic grid, a graph ring
 * and a distributed graph (sources r-1 and r-3, destinations r+1 and r+3,
 * a rank its own neighbour on few ranks, allgather only there). Rank r's send block k holds
 * 100r + 10k + j; each receive block is checked against the neighbour MPI
 * names for it. The v- and w- forms use uneven counts, gaps between blocks
 * and a vector type. A peer on both sides of a periodic dimension of size
 * 1 or 2 gets, from the positive side, what it sent toward negative
 * (MPI-4.0). A communicator without a topology refuses them. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static int md(int a, int n)
{
	return ((a % n) + n) % n;
}

static int val(int r, int k, int j)
{
	return 100 * r + 10 * k + j;
}

/* waits for r by mode: 0 Wait, 1 a Test loop */
static void finish(MPI_Request *r, int mode, const char *name)
{
	int flag = 0;
	if (mode == 0) {
		checkrc(MPI_Wait(r, MPI_STATUS_IGNORE), MPI_SUCCESS, name);
		return;
	}
	while (!flag)
		MPI_Test(r, &flag, MPI_STATUS_IGNORE);
	check(*r == MPI_REQUEST_NULL, name);
}

/* received block k of cnt ints from neighbour p's block kk (p PROC_NULL:
 * still -1) */
static int block_ok(const int *b, int cnt, int p, int kk)
{
	for (int j = 0; j < cnt; j++)
		if (b[j] != (p == MPI_PROC_NULL ? -1 : val(p, kk, j)))
			return 0;
	return 1;
}

/* the Cartesian neighbours: each dimension's source then destination */
static int cart_nbrs(MPI_Comm c, int nd, int *nb)
{
	for (int d = 0; d < nd; d++)
		MPI_Cart_shift(c, d, 1, &nb[2 * d], &nb[2 * d + 1]);
	return 2 * nd;
}

/* allgather of 3 ints (each rank's block 0) from each neighbour */
static void cart_allgather(MPI_Comm c, int nd, const char *tag, int nonblocking)
{
	int nb[8], n = cart_nbrs(c, nd, nb), s[3], rb[24];
	for (int j = 0; j < 3; j++)
		s[j] = val(rank, 0, j);
	for (int i = 0; i < 24; i++)
		rb[i] = -1;
	if (nonblocking) {
		MPI_Request r;
		MPI_Ineighbor_allgather(s, 3, MPI_INT, rb, 3, MPI_INT, c, &r);
		finish(&r, 1, nm("%s.iallgather.test_loop", tag));
	} else {
		checkrc(MPI_Neighbor_allgather(s, 3, MPI_INT, rb, 3, MPI_INT, c), MPI_SUCCESS,
			nm("%s.allgather", tag));
	}
	int good = 1;
	for (int k = 0; k < n; k++)
		good &= block_ok(rb + 3 * k, 3, nb[k], 0);
	good &= rb[3 * n] == -1;
	check(good, nm("%s.allgather.values", tag));
}

/* alltoall of 2 ints a block: my source in a dimension sent its block
 * toward positive (2d + 1), my destination its block toward negative */
static void cart_alltoall(MPI_Comm c, int nd, const char *tag, int nonblocking)
{
	int nb[8], n = cart_nbrs(c, nd, nb), s[16], rb[16];
	for (int k = 0; k < n; k++)
		for (int j = 0; j < 2; j++)
			s[2 * k + j] = val(rank, k, j);
	for (int i = 0; i < 16; i++)
		rb[i] = -1;
	if (nonblocking) {
		MPI_Request r;
		MPI_Ineighbor_alltoall(s, 2, MPI_INT, rb, 2, MPI_INT, c, &r);
		finish(&r, 0, nm("%s.ialltoall.wait", tag));
	} else {
		checkrc(MPI_Neighbor_alltoall(s, 2, MPI_INT, rb, 2, MPI_INT, c), MPI_SUCCESS,
			nm("%s.alltoall", tag));
	}
	int good = 1;
	for (int k = 0; k < n; k++)
		good &= block_ok(rb + 2 * k, 2, nb[k], k ^ 1);
	check(good, nm("%s.alltoall.values", tag));
}

static void carts(void)
{
	MPI_Comm line, ring, grid;
	int n = size, yes = 1, no = 0, dims[2] = {0, 0}, per[2] = {1, 1};
	MPI_Cart_create(W, 1, &n, &no, 0, &line);
	MPI_Cart_create(W, 1, &n, &yes, 0, &ring);
	MPI_Dims_create(size, 2, dims);
	MPI_Cart_create(W, 2, dims, per, 0, &grid);
	cart_allgather(line, 1, "line", 0);
	cart_allgather(ring, 1, "ring", 1);
	cart_allgather(grid, 2, "grid", 0);
	cart_allgather(grid, 2, "grid", 1);
	cart_alltoall(line, 1, "line", 0);
	cart_alltoall(line, 1, "line", 1);
	cart_alltoall(ring, 1, "ring", 0);
	cart_alltoall(ring, 1, "ring", 1);
	if (size > 1) /* MPICH pairs a 1x1 grid's self messages otherwise */
		cart_alltoall(grid, 2, "grid", 1);
	MPI_Comm_free(&line);
	MPI_Comm_free(&ring);
	MPI_Comm_free(&grid);
}

/* a graph ring: each rank's edges to r - 1 and r + 1 */
static void graph_ring(void)
{
	if (size < 3)
		return;
	int *index = malloc((size_t)size * sizeof(int)), *edges = malloc(2 * (size_t)size * sizeof(int));
	for (int r = 0; r < size; r++) {
		index[r] = 2 * (r + 1);
		edges[2 * r] = md(r - 1, size);
		edges[2 * r + 1] = md(r + 1, size);
	}
	MPI_Comm g;
	MPI_Graph_create(W, size, index, edges, 0, &g);
	int s[2] = {val(rank, 0, 0), val(rank, 0, 1)}, rb[4] = {-1, -1, -1, -1};
	MPI_Request r;
	MPI_Ineighbor_allgather(s, 2, MPI_INT, rb, 2, MPI_INT, g, &r);
	finish(&r, 0, "graph.iallgather.wait");
	check(block_ok(rb, 2, md(rank - 1, size), 0) && block_ok(rb + 2, 2, md(rank + 1, size), 0),
	      "graph.allgather.values");
	/* alltoall: r - 1 sent me its block 1, r + 1 its block 0 */
	int a[4] = {val(rank, 0, 0), val(rank, 0, 1), val(rank, 1, 0), val(rank, 1, 1)};
	for (int i = 0; i < 4; i++)
		rb[i] = -1;
	checkrc(MPI_Neighbor_alltoall(a, 2, MPI_INT, rb, 2, MPI_INT, g), MPI_SUCCESS,
		"graph.alltoall");
	check(block_ok(rb, 2, md(rank - 1, size), 1) && block_ok(rb + 2, 2, md(rank + 1, size), 0),
	      "graph.alltoall.values");
	MPI_Comm_free(&g);
	free(index);
	free(edges);
}

/* the distributed graph: in from r - 1 and r - 3, out to r + 1 and r + 3;
 * in-block k comes from the source's out-block k */
static MPI_Comm dist_graph(int *src)
{
	int dst[2] = {md(rank + 1, size), md(rank + 3, size)}, w[2] = {1, 2};
	src[0] = md(rank - 1, size);
	src[1] = md(rank - 3, size);
	MPI_Comm d;
	MPI_Dist_graph_create_adjacent(W, 2, src, w, 2, dst, w, MPI_INFO_NULL, 0, &d);
	return d;
}

static void dist_allgather(MPI_Comm d, const int *src)
{
	int s[2] = {val(rank, 0, 0), val(rank, 0, 1)}, rb[4] = {-1, -1, -1, -1};
	checkrc(MPI_Neighbor_allgather(s, 2, MPI_INT, rb, 2, MPI_INT, d), MPI_SUCCESS,
		"dist.allgather");
	check(block_ok(rb, 2, src[0], 0) && block_ok(rb + 2, 2, src[1], 0),
	      "dist.allgather.values");
	/* allgatherv: rank p sends 1 + p % 2 ints; in-block 1 first, gaps */
	int rc[2] = {1 + src[0] % 2, 1 + src[1] % 2}, displs[2] = {4, 0}, v[8];
	for (int i = 0; i < 8; i++)
		v[i] = -1;
	MPI_Request r;
	MPI_Ineighbor_allgatherv(s, 1 + rank % 2, MPI_INT, v, rc, displs, MPI_INT, d, &r);
	finish(&r, 1, "dist.iallgatherv.test_loop");
	check(block_ok(v + 4, rc[0], src[0], 0) && block_ok(v, rc[1], src[1], 0) &&
		      v[4 + rc[0]] == -1 && v[rc[1]] == -1,
	      "dist.allgatherv.values");
	checkrc(MPI_Neighbor_allgatherv(s, 1 + rank % 2, MPI_INT, v, rc, displs, MPI_INT, d),
		MPI_SUCCESS, "dist.allgatherv");
}

static void dist_alltoall(MPI_Comm d, const int *src)
{
	int s[6], rb[6];
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < 3; j++)
			s[3 * k + j] = val(rank, k, j);
	for (int i = 0; i < 6; i++)
		rb[i] = -1;
	MPI_Request r[2];
	MPI_Ineighbor_alltoall(s, 3, MPI_INT, rb, 3, MPI_INT, d, &r[0]);
	/* alltoallv: out-block k is k + 1 ints from s + 3k; in-block k lands
	 * at 3 - 3k, gaps left -1 */
	int sc[2] = {1, 2}, sd[2] = {0, 3}, rv[6], rd[2] = {3, 0};
	for (int i = 0; i < 6; i++)
		rv[i] = -1;
	MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, rv, sc, rd, MPI_INT, d, &r[1]);
	checkrc(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), MPI_SUCCESS, "dist.ialltoall(v).waitall");
	check(block_ok(rb, 3, src[0], 0) && block_ok(rb + 3, 3, src[1], 1),
	      "dist.alltoall.values");
	check(block_ok(rv + 3, 1, src[0], 0) && block_ok(rv, 2, src[1], 1) && rv[2] == -1 &&
		      rv[4] == -1,
	      "dist.alltoallv.values");
	for (int i = 0; i < 6; i++)
		rv[i] = -1;
	checkrc(MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, rv, sc, rd, MPI_INT, d), MPI_SUCCESS,
		"dist.alltoallv");
	check(block_ok(rv + 3, 1, src[0], 0) && block_ok(rv, 2, src[1], 1),
	      "dist.alltoallv.blocking_values");
}

/* alltoallw: out-block 0 two ints, out-block 1 a vector picking j = 0 and
 * 2 of block 1; in-blocks two ints each at byte displacements */
static void dist_alltoallw(MPI_Comm d, const int *src, int nonblocking)
{
	MPI_Datatype vec;
	MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	int s[6], rb[6];
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < 3; j++)
			s[3 * k + j] = val(rank, k, j);
	for (int i = 0; i < 6; i++)
		rb[i] = -1;
	int sc[2] = {2, 1}, rc[2] = {2, 2};
	MPI_Aint sd[2] = {0, 3 * sizeof(int)}, rd[2] = {4 * sizeof(int), 0};
	MPI_Datatype st[2] = {MPI_INT, vec}, rt[2] = {MPI_INT, MPI_INT};
	if (nonblocking) {
		MPI_Request r;
		MPI_Ineighbor_alltoallw(s, sc, sd, st, rb, rc, rd, rt, d, &r);
		MPI_Type_free(&vec); /* the request keeps what it needs */
		finish(&r, 1, "dist.ialltoallw.test_loop");
	} else {
		checkrc(MPI_Neighbor_alltoallw(s, sc, sd, st, rb, rc, rd, rt, d), MPI_SUCCESS,
			"dist.alltoallw");
		MPI_Type_free(&vec);
	}
	int p = src[0], q = src[1];
	check(rb[4] == val(p, 0, 0) && rb[5] == val(p, 0, 1) && rb[0] == val(q, 1, 0) &&
		      rb[1] == val(q, 1, 2) && rb[2] == -1 && rb[3] == -1,
	      nm("dist.%salltoallw.values", nonblocking ? "i" : ""));
}

/* a communicator without a topology: MPI_ERR_TOPOLOGY */
static void no_topology(void)
{
	int s[2] = {1, 2}, r[8];
	MPI_Request q = MPI_REQUEST_NULL;
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	checkrc(MPI_Neighbor_allgather(s, 1, MPI_INT, r, 1, MPI_INT, W), MPI_ERR_TOPOLOGY,
		"world.allgather_refused");
	checkrc(MPI_Ineighbor_alltoall(s, 1, MPI_INT, r, 1, MPI_INT, W, &q), MPI_ERR_TOPOLOGY,
		"world.ialltoall_refused");
	MPI_Comm_set_errhandler(W, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	no_topology();
	carts();
	graph_ring();
	int src[2];
	MPI_Comm d = dist_graph(src);
	dist_allgather(d, src);
	if (src[0] != src[1]) { /* one peer twice (1 or 2 ranks): MPI leaves the pairing open */
		dist_alltoall(d, src);
		dist_alltoallw(d, src, 0);
		dist_alltoallw(d, src, 1);
	}
	MPI_Comm_free(&d);
	return suite_finish("neighbor");
}
