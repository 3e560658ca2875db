/* BCS-MPI virtual topologies: a communicator made by MPI_Cart_create,
 * MPI_Graph_create or MPI_Dist_graph_create(_adjacent) carries its grid or
 * graph (struct bcs_topo). Ranks are never reordered: every message costs
 * the same slice whoever its peer, so there is no placement to improve (and
 * the Cartesian layout is row-major, as MPI defines). The Cartesian
 * arithmetic is pure (bcs_mpi/abi/procs.c, unit-tested). */
#include <stdlib.h>
#include <string.h>

#include "bcs.h"
#include "procs.h"

int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
	return bcs_err(MPI_COMM_WORLD, bcs_dims_create(nnodes, ndims, dims), "MPI_Dims_create");
}

#define CART(comm, fn)                                                          \
	bcs_need_init(fn);                                                      \
	struct bcs_comm *c = bcs_comm_get(comm);                                \
	if (!c)                                                                 \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn);               \
	struct bcs_topo *t = c->topo;                                           \
	if (!t || t->kind != MPI_CART)                                          \
		return bcs_err(comm, MPI_ERR_TOPOLOGY, fn)

/* a topology of kind with len ints to fill */
static struct bcs_topo *topo_alloc(int kind, int len)
{
	struct bcs_topo *t = calloc(1, sizeof(*t) + (size_t)(len > 0 ? len : 1) * sizeof(int));
	if (t) {
		t->kind = kind;
		t->len = len;
	}
	return t;
}

static struct bcs_topo *topo_new(int ndims, const int dims[], const int periods[])
{
	struct bcs_topo *t = topo_alloc(MPI_CART, 2 * ndims);
	if (!t)
		return NULL;
	t->ndims = ndims;
	for (int i = 0; i < ndims; i++) {
		t->dims[i] = dims[i];
		t->dims[ndims + i] = periods[i] != 0;
	}
	return t;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
		    MPI_Comm *newcomm)
{
	(void)reorder; /* every rank keeps its place: the schedule is flat anyway */
	bcs_need_init("MPI_Cart_create");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Cart_create");
	if (c->rworld)
		return bcs_inter_refuse(comm, "MPI_Cart_create");
	long n = 1;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] <= 0)
			return bcs_err(comm, MPI_ERR_DIMS, "MPI_Cart_create");
		n *= dims[i];
	}
	if (ndims < 0 || n > c->size)
		return bcs_err(comm, ndims < 0 ? MPI_ERR_DIMS : MPI_ERR_ARG, "MPI_Cart_create");
	int rc = MPI_Comm_split(comm, c->rank < n ? 0 : MPI_UNDEFINED, c->rank, newcomm);
	if (rc || *newcomm == MPI_COMM_NULL)
		return rc;
	struct bcs_comm *nc = bcs_comm_get(*newcomm);
	if (!(nc->topo = topo_new(ndims, dims, periods)))
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Cart_create");
	return MPI_SUCCESS;
}

int MPI_Topo_test(MPI_Comm comm, int *status)
{
	bcs_need_init("MPI_Topo_test");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Topo_test");
	*status = c->topo ? c->topo->kind : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
	CART(comm, "MPI_Cartdim_get");
	*ndims = t->ndims;
	return MPI_SUCCESS;
}

static void coords_of(const struct bcs_topo *t, int rank, int maxdims, int coords[])
{
	bcs_cart_coords(t->ndims, t->dims, rank, maxdims, coords);
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
	CART(comm, "MPI_Cart_get");
	for (int i = 0; i < t->ndims && i < maxdims; i++) {
		dims[i] = t->dims[i];
		periods[i] = t->dims[t->ndims + i];
	}
	coords_of(t, c->rank, maxdims, coords);
	return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
	CART(comm, "MPI_Cart_coords");
	if (rank < 0 || rank >= c->size)
		return bcs_err(comm, MPI_ERR_RANK, "MPI_Cart_coords");
	coords_of(t, rank, maxdims, coords);
	return MPI_SUCCESS;
}

static int rank_of(const struct bcs_topo *t, const int coords[])
{
	return bcs_cart_rank(t->ndims, t->dims, t->dims + t->ndims, coords);
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
	CART(comm, "MPI_Cart_rank");
	int r = rank_of(t, coords);
	if (r < 0)
		return bcs_err(comm, MPI_ERR_ARG, "MPI_Cart_rank");
	*rank = r;
	return MPI_SUCCESS;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *source, int *dest)
{
	CART(comm, "MPI_Cart_shift");
	if (direction < 0 || direction >= t->ndims)
		return bcs_err(comm, MPI_ERR_ARG, "MPI_Cart_shift");
	int co[t->ndims > 0 ? t->ndims : 1];
	coords_of(t, c->rank, t->ndims, co);
	int mine = co[direction];
	co[direction] = mine + disp;
	int d = rank_of(t, co);
	co[direction] = mine - disp;
	int s = rank_of(t, co);
	*dest = d < 0 ? MPI_PROC_NULL : d;
	*source = s < 0 ? MPI_PROC_NULL : s;
	return MPI_SUCCESS;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *newcomm)
{
	CART(comm, "MPI_Cart_sub");
	int n = t->ndims, co[n > 0 ? n : 1], kept = 0, color = 0, key = 0;
	bool none = true;
	for (int i = 0; i < n; i++)
		none = none && !remain[i];
	/* no dimension kept: a zero-dimensional grid made as Cart_create makes
	 * it, as MPICH does: rank 0 alone in it, MPI_COMM_NULL elsewhere */
	if (none)
		return MPI_Cart_create(comm, 0, NULL, NULL, 0, newcomm);
	int dims[n > 0 ? n : 1], periods[n > 0 ? n : 1];
	coords_of(t, c->rank, n, co);
	/* color: my place along the dropped dimensions; key: along the kept ones */
	for (int i = 0; i < n; i++) {
		if (remain[i]) {
			key = key * t->dims[i] + co[i];
			dims[kept] = t->dims[i];
			periods[kept++] = t->dims[n + i];
		} else {
			color = color * t->dims[i] + co[i];
		}
	}
	int rc = MPI_Comm_split(comm, color, key, newcomm);
	if (rc)
		return rc;
	struct bcs_comm *nc = bcs_comm_get(*newcomm);
	if (!(nc->topo = topo_new(kept, dims, periods)))
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Cart_sub");
	return MPI_SUCCESS;
}

int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
	(void)periods;
	ANY_COMM(comm, "MPI_Cart_map");
	long n = 1;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] <= 0)
			return bcs_err(comm, MPI_ERR_DIMS, "MPI_Cart_map");
		n *= dims[i];
	}
	if (ndims < 0 || n > c->size)
		return bcs_err(comm, ndims < 0 ? MPI_ERR_DIMS : MPI_ERR_ARG, "MPI_Cart_map");
	*newrank = c->rank < n ? c->rank : MPI_UNDEFINED; /* never reordered */
	return MPI_SUCCESS;
}

/* ---- graph topologies: every rank keeps the whole graph */

#define GRAPH(comm, fn)                                                         \
	bcs_need_init(fn);                                                      \
	struct bcs_comm *c = bcs_comm_get(comm);                                \
	if (!c)                                                                 \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn);               \
	struct bcs_topo *t = c->topo;                                           \
	if (!t || t->kind != MPI_GRAPH)                                         \
		return bcs_err(comm, MPI_ERR_TOPOLOGY, fn)

/* a graph of nnodes nodes is sane: index non-decreasing, edges name nodes */
static int graph_check(int nnodes, const int index[], const int edges[], int size)
{
	if (nnodes < 0 || nnodes > size)
		return MPI_ERR_ARG;
	for (int i = 0; i < nnodes; i++)
		if (index[i] < (i ? index[i - 1] : 0))
			return MPI_ERR_ARG;
	for (int e = 0; nnodes > 0 && e < index[nnodes - 1]; e++)
		if (edges[e] < 0 || edges[e] >= nnodes)
			return MPI_ERR_ARG;
	return MPI_SUCCESS;
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[],
		     int reorder, MPI_Comm *newcomm)
{
	(void)reorder;
	COMM(comm, "MPI_Graph_create");
	int rc = graph_check(nnodes, index, edges, c->size);
	if (rc)
		return bcs_err(comm, rc, "MPI_Graph_create");
	/* ranks past the graph's nodes get no communicator (all of them when
	 * the graph is empty, as MPICH) */
	rc = MPI_Comm_split(comm, c->rank < nnodes ? 0 : MPI_UNDEFINED, c->rank, newcomm);
	if (rc || *newcomm == MPI_COMM_NULL)
		return rc;
	int ne = index[nnodes - 1];
	struct bcs_topo *t = topo_alloc(MPI_GRAPH, nnodes + ne);
	if (!t)
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Graph_create");
	t->ndims = nnodes;
	t->nedges = ne;
	memcpy(t->dims, index, (size_t)nnodes * sizeof(int));
	memcpy(t->dims + nnodes, edges, (size_t)ne * sizeof(int));
	bcs_comm_get(*newcomm)->topo = t;
	return MPI_SUCCESS;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
	GRAPH(comm, "MPI_Graphdims_get");
	*nnodes = t->ndims;
	*nedges = t->nedges;
	return MPI_SUCCESS;
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
	GRAPH(comm, "MPI_Graph_get");
	for (int i = 0; i < t->ndims && i < maxindex; i++)
		index[i] = t->dims[i];
	for (int e = 0; e < t->nedges && e < maxedges; e++)
		edges[e] = t->dims[t->ndims + e];
	return MPI_SUCCESS;
}

/* node r's edges: [*first, *first + count) of the edge list */
static int graph_node(const struct bcs_topo *t, int r, int *first)
{
	*first = r ? t->dims[r - 1] : 0;
	return t->dims[r] - *first;
}

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
	GRAPH(comm, "MPI_Graph_neighbors_count");
	if (rank < 0 || rank >= t->ndims)
		return bcs_err(comm, MPI_ERR_RANK, "MPI_Graph_neighbors_count");
	int first;
	*nneighbors = graph_node(t, rank, &first);
	return MPI_SUCCESS;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
	GRAPH(comm, "MPI_Graph_neighbors");
	if (rank < 0 || rank >= t->ndims)
		return bcs_err(comm, MPI_ERR_RANK, "MPI_Graph_neighbors");
	int first, n = graph_node(t, rank, &first);
	for (int i = 0; i < n && i < maxneighbors; i++)
		neighbors[i] = t->dims[t->ndims + first + i];
	return MPI_SUCCESS;
}

int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
		  int *newrank)
{
	ANY_COMM(comm, "MPI_Graph_map");
	int rc = graph_check(nnodes, index, edges, c->size);
	if (rc)
		return bcs_err(comm, rc, "MPI_Graph_map");
	*newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED; /* never reordered */
	return MPI_SUCCESS;
}

/* ---- distributed graphs: each rank keeps its own edges only */

int bcs_unweighted[1], bcs_weights_empty[1];

/* this rank's edges in and out (weights NULL: unweighted), on a duplicate
 * of c */
static int dist_make(MPI_Comm comm, int indeg, const int *src, const int *sw, int outdeg,
		     const int *dst, const int *dw, bool weighted, MPI_Comm *newcomm)
{
	struct bcs_topo *t = topo_alloc(MPI_DIST_GRAPH, 2 * (indeg + outdeg));
	if (!t)
		return MPI_ERR_INTERN;
	t->ndims = indeg;
	t->nedges = outdeg;
	t->weighted = weighted;
	for (int i = 0; i < indeg; i++) {
		t->dims[i] = src[i];
		t->dims[indeg + i] = weighted && sw ? sw[i] : 1;
	}
	int *o = t->dims + 2 * indeg;
	for (int i = 0; i < outdeg; i++) {
		o[i] = dst[i];
		o[outdeg + i] = weighted && dw ? dw[i] : 1;
	}
	int rc = bcs_comm_dup(comm, newcomm);
	if (rc) {
		free(t);
		return rc;
	}
	struct bcs_comm *nc = bcs_comm_get(*newcomm);
	free(nc->topo); /* a duplicate of a topology's communicator has its own */
	nc->topo = t;
	return MPI_SUCCESS;
}

static int ranks_ok(int n, const int *v, int size)
{
	for (int i = 0; i < n; i++)
		if (v[i] < 0 || v[i] >= size)
			return 0;
	return 1;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
				   const int sourceweights[], int outdegree,
				   const int destinations[], const int destweights[],
				   MPI_Info info, int reorder, MPI_Comm *newcomm)
{
	(void)info;
	(void)reorder;
	COMM(comm, "MPI_Dist_graph_create_adjacent");
	if (indegree < 0 || outdegree < 0 || !ranks_ok(indegree, sources, c->size) ||
	    !ranks_ok(outdegree, destinations, c->size))
		return bcs_err(comm, MPI_ERR_ARG, "MPI_Dist_graph_create_adjacent");
	bool weighted = sourceweights != MPI_UNWEIGHTED && destweights != MPI_UNWEIGHTED;
	const int *sw = sourceweights == MPI_WEIGHTS_EMPTY ? NULL : sourceweights;
	const int *dw = destweights == MPI_WEIGHTS_EMPTY ? NULL : destweights;
	return bcs_err(comm, dist_make(comm, indegree, sources, sw, outdegree, destinations, dw,
				       weighted, newcomm), "MPI_Dist_graph_create_adjacent");
}

/* MPI_Dist_graph_create: every rank's edges go to every rank (their
 * counts, then the edges padded to the largest count), and each keeps those
 * that start or end at it, in the order of (giving rank, place given) */
static int dist_create(struct bcs_comm *c, MPI_Comm comm, int n, const int *sources,
		       const int *degrees, const int *dests, const int *weights, MPI_Comm *newcomm)
{
	int size = c->size, me = c->rank, k = 0, rc = MPI_SUCCESS;
	if (n < 0)
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		if (degrees[i] < 0 || !ranks_ok(1, &sources[i], size))
			return MPI_ERR_ARG;
		k += degrees[i];
	}
	if (!ranks_ok(k, dests, size))
		return MPI_ERR_ARG;
	bool weighted = weights != MPI_UNWEIGHTED;
	int *ks = malloc((size_t)size * sizeof(int));
	if (!ks)
		return MPI_ERR_INTERN;
	if ((rc = bcs_allgather_ints(c, &k, 1, ks))) {
		free(ks);
		return rc;
	}
	int most = 0;
	for (int r = 0; r < size; r++)
		most = ks[r] > most ? ks[r] : most;
	/* (source, destination, weight) per edge */
	int *mine = malloc(3 * (size_t)(most ? most : 1) * sizeof(int));
	int *all = malloc(3 * (size_t)(most ? most : 1) * (size_t)size * sizeof(int));
	if (!mine || !all) {
		free(ks);
		free(mine);
		free(all);
		return MPI_ERR_INTERN;
	}
	for (int i = 0, e = 0; i < n; i++)
		for (int d = 0; d < degrees[i]; d++, e++) {
			mine[3 * e] = sources[i];
			mine[3 * e + 1] = dests[e];
			mine[3 * e + 2] = weighted && weights != MPI_WEIGHTS_EMPTY ? weights[e] : 1;
		}
	rc = bcs_allgather_ints(c, mine, 3 * most, all);
	int indeg = 0, outdeg = 0;
	for (int r = 0; !rc && r < size; r++)
		for (int e = 0; e < ks[r]; e++) {
			const int *x = all + 3 * ((long)r * most + e);
			outdeg += x[0] == me;
			indeg += x[1] == me;
		}
	int *v = rc ? NULL : malloc(4 * (size_t)(indeg + outdeg + 1) * sizeof(int));
	if (!rc && !v)
		rc = MPI_ERR_INTERN;
	if (!rc) {
		int *src = v, *sw = v + indeg, *dst = v + 2 * indeg, *dw = dst + outdeg;
		int a = 0, b = 0;
		for (int r = 0; r < size; r++)
			for (int e = 0; e < ks[r]; e++) {
				const int *x = all + 3 * ((long)r * most + e);
				if (x[1] == me) {
					src[a] = x[0];
					sw[a++] = x[2];
				}
				if (x[0] == me) {
					dst[b] = x[1];
					dw[b++] = x[2];
				}
			}
		rc = dist_make(comm, indeg, src, sw, outdeg, dst, dw, weighted, newcomm);
	}
	free(v);
	free(ks);
	free(mine);
	free(all);
	return rc;
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
			  const int destinations[], const int weights[], MPI_Info info,
			  int reorder, MPI_Comm *newcomm)
{
	(void)info;
	(void)reorder;
	COMM(comm, "MPI_Dist_graph_create");
	return bcs_err(comm, dist_create(c, comm, n, sources, degrees, destinations, weights,
					 newcomm), "MPI_Dist_graph_create");
}

#define DIST(comm, fn)                                                          \
	bcs_need_init(fn);                                                      \
	struct bcs_comm *c = bcs_comm_get(comm);                                \
	if (!c)                                                                 \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn);               \
	struct bcs_topo *t = c->topo;                                           \
	if (!t || t->kind != MPI_DIST_GRAPH)                                    \
		return bcs_err(comm, MPI_ERR_TOPOLOGY, fn)

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
	DIST(comm, "MPI_Dist_graph_neighbors_count");
	*indegree = t->ndims;
	*outdegree = t->nedges;
	*weighted = t->weighted;
	return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
			     int maxoutdegree, int destinations[], int destweights[])
{
	DIST(comm, "MPI_Dist_graph_neighbors");
	int in = t->ndims, out = t->nedges;
	const int *o = t->dims + 2 * in;
	for (int i = 0; i < in && i < maxindegree; i++) {
		sources[i] = t->dims[i];
		if (t->weighted && sourceweights != MPI_UNWEIGHTED)
			sourceweights[i] = t->dims[in + i];
	}
	for (int i = 0; i < out && i < maxoutdegree; i++) {
		destinations[i] = o[i];
		if (t->weighted && destweights != MPI_UNWEIGHTED)
			destweights[i] = o[out + i];
	}
	return MPI_SUCCESS;
}

/* Cartesian: each dimension's source then destination of a shift by 1
 * (MPI_PROC_NULL off a non-periodic edge), in and out alike */
static int cart_neighbors(const struct bcs_topo *t, int rank, int *v)
{
	int co[t->ndims > 0 ? t->ndims : 1];
	for (int d = 0; d < t->ndims; d++) {
		coords_of(t, rank, t->ndims, co);
		int mine = co[d];
		co[d] = mine - 1;
		int s = rank_of(t, co);
		co[d] = mine + 1;
		int r = rank_of(t, co);
		v[2 * d] = s < 0 ? MPI_PROC_NULL : s;
		v[2 * d + 1] = r < 0 ? MPI_PROC_NULL : r;
	}
	return 2 * t->ndims;
}

int bcs_topo_neighbors(const struct bcs_comm *c, int **in, int *nin, int **out, int *nout)
{
	const struct bcs_topo *t = c->topo;
	if (!t)
		return MPI_ERR_TOPOLOGY;
	int first, ni, no;
	const int *src = NULL, *dst = NULL;
	if (t->kind == MPI_CART) {
		ni = no = 2 * t->ndims;
	} else if (t->kind == MPI_GRAPH) {
		ni = no = graph_node(t, c->rank, &first);
		src = dst = t->dims + t->ndims + first;
	} else {
		ni = t->ndims;
		no = t->nedges;
		src = t->dims;
		dst = t->dims + 2 * ni;
	}
	*in = malloc((size_t)(ni ? ni : 1) * sizeof(int));
	*out = malloc((size_t)(no ? no : 1) * sizeof(int));
	if (!*in || !*out) {
		free(*in);
		free(*out);
		return MPI_ERR_INTERN;
	}
	if (t->kind == MPI_CART) {
		cart_neighbors(t, c->rank, *in);
		cart_neighbors(t, c->rank, *out);
	} else {
		memcpy(*in, src, (size_t)ni * sizeof(int));
		memcpy(*out, dst, (size_t)no * sizeof(int));
	}
	*nin = ni;
	*nout = no;
	return MPI_SUCCESS;
}
