/* BCS-MPI Cartesian topologies: a communicator made by MPI_Cart_create
 * carries its grid (struct bcs_topo); ranks are laid out row-major, as MPI
 * defines, and never reordered. The arithmetic is pure
 * (bcs_mpi/abi/procs.c, unit-tested). */
#include <stdlib.h>
#include <string.h>

#include "bcs.h"
#include "procs.h"

struct bcs_topo *bcs_topo_dup(const struct bcs_topo *t)
{
	if (!t)
		return NULL;
	size_t sz = sizeof(*t) + 2 * (size_t)t->ndims * sizeof(int);
	struct bcs_topo *c = malloc(sz);
	if (c)
		memcpy(c, t, sz);
	return c;
}

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
	if (!t)                                                                 \
		return bcs_err(comm, MPI_ERR_TOPOLOGY, fn)

static struct bcs_topo *topo_new(int ndims, const int dims[], const int periods[])
{
	struct bcs_topo *t = malloc(sizeof(*t) + 2 * (size_t)ndims * sizeof(int));
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
	*status = c->topo ? MPI_CART : MPI_UNDEFINED;
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
