/* BCS-MPI process-set arithmetic, pure (unit-tested): MPI_Dims_create's
 * factoring, group set operations and rank translation over lists of world
 * ranks, and row-major Cartesian coordinates. */
#ifndef BCS_PROCS_H
#define BCS_PROCS_H

/* Fills dims' zero entries with MPICH's balanced factoring of nnodes over
 * them (at most 64), non-increasing; 0 or an MPI error class. */
int bcs_dims_create(int nnodes, int ndims, int dims[]);

/* union (0), intersection (1) or difference (2) of a and b, in MPI's order
 * (a's members first, in a's order); out holds na + nb; returns its count */
int bcs_ranks_setop(int kind, const int *a, int na, const int *b, int nb, int *out);
/* position of w in a, or -1 */
int bcs_ranks_index(const int *a, int na, int w);
/* ranks of group a to ranks of group b (MPI_UNDEFINED when absent,
 * MPI_PROC_NULL kept); 0 or MPI_ERR_RANK */
int bcs_ranks_translate(const int *a, int na, const int *b, int nb, int n, const int *ranks1,
			int *ranks2);

/* row-major coordinates of rank (the first maxdims of them) */
void bcs_cart_coords(int ndims, const int *dims, int rank, int maxdims, int *coords);
/* coords to rank, wrapping periodic dimensions; -1 when off the grid */
int bcs_cart_rank(int ndims, const int *dims, const int *periods, const int *coords);

#endif
