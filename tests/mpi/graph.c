/* Graph topologies: Graph_create (every rank a node, and fewer nodes than
 * ranks), Topo_test, Graphdims_get, Graph_get, Graph_neighbors(_count),
 * Graph_map and Cart_map, messages to the graph's neighbours, a duplicate
 * keeping its graph; distributed graphs made by Dist_graph_create_adjacent
 * (weighted and MPI_UNWEIGHTED) and by Dist_graph_create (each rank giving
 * its own edges, and one rank giving all of them), their
 * Dist_graph_neighbors(_count). Dist_graph_create leaves the order of
 * neighbours to the implementation: those lists are compared sorted. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

/* node r of n: edges to r + 1 and r + 2 (mod n), and to 0 from odd nodes */
static int graph_of(int n, int *index, int *edges)
{
	int e = 0;
	for (int r = 0; r < n; r++) {
		if (n > 1)
			edges[e++] = (r + 1) % n;
		if (n > 2)
			edges[e++] = (r + 2) % n;
		if (r % 2 && n > 3 && (r + 1) % n != 0 && (r + 2) % n != 0)
			edges[e++] = 0;
		index[r] = e;
	}
	return e;
}

static void graph(int n)
{
	int *index = malloc((size_t)n * sizeof(int) + 1), *edges = malloc(3 * (size_t)n * sizeof(int) + 1);
	int ne = graph_of(n, index, edges), newrank = -2;
	MPI_Graph_map(W, n, index, edges, &newrank);
	checki(newrank, rank < n ? rank : MPI_UNDEFINED, nm("graph%d.map", n));
	MPI_Comm g = MPI_COMM_NULL;
	checkrc(MPI_Graph_create(W, n, index, edges, 0, &g), MPI_SUCCESS, nm("graph%d.create", n));
	if (rank >= n) {
		check(g == MPI_COMM_NULL, nm("graph%d.outside_gets_null", n));
		free(index);
		free(edges);
		return;
	}
	int st = -1, nn = -1, nedges = -1;
	MPI_Topo_test(g, &st);
	checki(st, MPI_GRAPH, nm("graph%d.topo_test", n));
	MPI_Graphdims_get(g, &nn, &nedges);
	check(nn == n && nedges == ne, nm("graph%d.dims", n));
	int *gi = malloc((size_t)n * sizeof(int) + 1), *ge = malloc((size_t)ne * sizeof(int) + 1);
	MPI_Graph_get(g, n, ne, gi, ge);
	int good = 1;
	for (int i = 0; i < n; i++)
		good &= gi[i] == index[i];
	for (int e = 0; e < ne; e++)
		good &= ge[e] == edges[e];
	check(good, nm("graph%d.get", n));
	good = 1;
	for (int r = 0; r < n; r++) {
		int k = -1, nb[3] = {-1, -1, -1}, first = r ? index[r - 1] : 0;
		MPI_Graph_neighbors_count(g, r, &k);
		MPI_Graph_neighbors(g, r, 3, nb);
		good &= k == index[r] - first;
		for (int i = 0; i < k; i++)
			good &= nb[i] == edges[first + i];
	}
	check(good, nm("graph%d.neighbors", n));
	/* a message along each of my edges; from each that points at me */
	int k = 0, nb[3], from = 0;
	MPI_Graph_neighbors_count(g, rank, &k);
	MPI_Graph_neighbors(g, rank, 3, nb);
	MPI_Request q[3];
	int out = rank * 10;
	for (int i = 0; i < k; i++)
		MPI_Isend(&out, 1, MPI_INT, nb[i], 9, g, &q[i]);
	int sum = 0, want = 0;
	for (int r = 0; r < n; r++)
		for (int e = r ? index[r - 1] : 0; e < index[r]; e++)
			if (edges[e] == rank) {
				int x = -1;
				MPI_Recv(&x, 1, MPI_INT, r, 9, g, MPI_STATUS_IGNORE);
				sum += x;
				want += r * 10;
				from++;
			}
	MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
	check(sum == want, nm("graph%d.messages_from_%d_in_edges", n, from));
	/* a duplicate keeps the graph */
	MPI_Comm d;
	MPI_Comm_dup(g, &d);
	MPI_Topo_test(d, &st);
	nn = -1;
	MPI_Graphdims_get(d, &nn, &nedges);
	check(st == MPI_GRAPH && nn == n && nedges == ne, nm("graph%d.dup_keeps_it", n));
	MPI_Comm_free(&d);
	MPI_Comm_free(&g);
	free(gi);
	free(ge);
	free(index);
	free(edges);
}

static void cart_map(void)
{
	int dims[2] = {1, size}, per[2] = {0, 1}, nr = -2;
	MPI_Cart_map(W, 2, dims, per, &nr);
	checki(nr, rank, "cart_map.all");
	dims[1] = (size + 1) / 2;
	MPI_Cart_map(W, 2, dims, per, &nr);
	checki(nr, rank < dims[1] ? rank : MPI_UNDEFINED, "cart_map.half");
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void adjacent(void)
{
	int n = size, left = (rank + n - 1) % n, right = (rank + 1) % n;
	int src[2] = {left, right}, sw[2] = {rank + 1, rank + 2};
	int dst[1] = {right}, dw[1] = {7 * rank};
	MPI_Comm g;
	checkrc(MPI_Dist_graph_create_adjacent(W, 2, src, sw, 1, dst, dw, MPI_INFO_NULL, 0, &g),
		MPI_SUCCESS, "adjacent.create");
	int st = -1, in = -1, out = -1, w = -1;
	MPI_Topo_test(g, &st);
	checki(st, MPI_DIST_GRAPH, "adjacent.topo_test");
	MPI_Dist_graph_neighbors_count(g, &in, &out, &w);
	check(in == 2 && out == 1 && w, "adjacent.count_weighted");
	int s[2] = {-1, -1}, s_w[2] = {-1, -1}, d[1] = {-1}, d_w[1] = {-1};
	MPI_Dist_graph_neighbors(g, 2, s, s_w, 1, d, d_w);
	check(s[0] == left && s[1] == right && s_w[0] == rank + 1 && s_w[1] == rank + 2 &&
	      d[0] == right && d_w[0] == 7 * rank, "adjacent.neighbors_in_given_order");
	/* a message to my destination, from my left source */
	int x = rank, y = -1;
	MPI_Sendrecv(&x, 1, MPI_INT, right, 3, &y, 1, MPI_INT, left, 3, g, MPI_STATUS_IGNORE);
	checki(y, left, "adjacent.message");
	MPI_Comm_free(&g);

	/* unweighted */
	checkrc(MPI_Dist_graph_create_adjacent(W, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED,
					       MPI_INFO_NULL, 0, &g), MPI_SUCCESS,
		"unweighted.create");
	MPI_Dist_graph_neighbors_count(g, &in, &out, &w);
	check(in == 1 && out == 1 && !w, "unweighted.count");
	s[0] = d[0] = -1;
	MPI_Dist_graph_neighbors(g, 1, s, MPI_UNWEIGHTED, 1, d, MPI_UNWEIGHTED);
	check(s[0] == left && d[0] == right, "unweighted.neighbors");
	MPI_Comm_free(&g);
}

/* edges r -> r + 1 and r -> r + 3 (mod n), weight 100 r + destination */
static void general(int all_from_root)
{
	int n = size, srcs[2 * 64], degs[2 * 64], dsts[2 * 64], wts[2 * 64], k = 0, e = 0;
	const char *how = all_from_root ? "dist_root" : "dist_own";
	for (int r = 0; r < n && n <= 64; r++) {
		if (all_from_root ? rank != 0 : r != rank)
			continue;
		srcs[k] = r;
		degs[k++] = 2;
		dsts[e] = (r + 1) % n;
		wts[e] = 100 * r + dsts[e];
		e++;
		dsts[e] = (r + 3) % n;
		wts[e] = 100 * r + dsts[e];
		e++;
	}
	MPI_Comm g;
	checkrc(MPI_Dist_graph_create(W, k, srcs, degs, dsts, wts, MPI_INFO_NULL, 0, &g),
		MPI_SUCCESS, nm("%s.create", how));
	int in = -1, out = -1, w = -1;
	MPI_Dist_graph_neighbors_count(g, &in, &out, &w);
	check(in == 2 && out == 2 && w, nm("%s.count", how));
	/* (neighbour, weight) pairs, sorted */
	int s[2], sw[2], d[2], dw[2], sp[2], dp[2];
	MPI_Dist_graph_neighbors(g, 2, s, sw, 2, d, dw);
	for (int i = 0; i < 2; i++) {
		sp[i] = s[i] * 100000 + sw[i];
		dp[i] = d[i] * 100000 + dw[i];
	}
	qsort(sp, 2, sizeof(int), cmp_int);
	qsort(dp, 2, sizeof(int), cmp_int);
	int ws[2] = {(rank + n - 1) % n, ((rank - 3) % n + n) % n};
	int want_s[2], want_d[2];
	for (int i = 0; i < 2; i++)
		want_s[i] = ws[i] * 100000 + 100 * ws[i] + rank;
	int wd[2] = {(rank + 1) % n, (rank + 3) % n};
	for (int i = 0; i < 2; i++)
		want_d[i] = wd[i] * 100000 + 100 * rank + wd[i];
	qsort(want_s, 2, sizeof(int), cmp_int);
	qsort(want_d, 2, sizeof(int), cmp_int);
	check(sp[0] == want_s[0] && sp[1] == want_s[1], nm("%s.sources", how));
	check(dp[0] == want_d[0] && dp[1] == want_d[1], nm("%s.destinations", how));
	MPI_Comm_free(&g);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	graph(size);
	graph((size + 1) / 2);
	cart_map();
	adjacent();
	general(0);
	general(1);
	return suite_finish("graph");
}
