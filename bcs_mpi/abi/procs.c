/* BCS-MPI process-set arithmetic (procs.h). */
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "procs.h"

/* Best split of n into k non-increasing factors: the lexicographically
 * smallest (smallest largest factor, then smallest next one...), which is
 * MPICH's answer too. */
static int memcmp_ints(const int *a, const int *b, int k)
{
	for (int i = 0; i < k; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static void search(int n, int k, int maxf, int *cur, int depth, int *best, int *found)
{
	if (depth == k - 1) {
		if (n > maxf)
			return;
		cur[depth] = n;
		if (!*found || memcmp_ints(cur, best, k) < 0) {
			memcpy(best, cur, (size_t)k * sizeof(int));
			*found = 1;
		}
		return;
	}
	for (int f = maxf < n ? maxf : n; f >= 1; f--) {
		if (n % f)
			continue;
		/* the remaining factors are at most f each: f^(k-depth) must reach n */
		long cap = f;
		for (int i = depth + 1; i < k && cap < n; i++)
			cap *= f;
		if (cap < n)
			break;
		cur[depth] = f;
		search(n / f, k, f, cur, depth + 1, best, found);
	}
}

int bcs_dims_create(int nnodes, int ndims, int dims[])
{
	if (nnodes < 1 || ndims < 0)
		return MPI_ERR_ARG;
	int fixed = 1, free_dims = 0;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] < 0)
			return MPI_ERR_DIMS;
		if (dims[i] > 0)
			fixed *= dims[i];
		else
			free_dims++;
	}
	if (nnodes % fixed)
		return MPI_ERR_DIMS;
	int rest = nnodes / fixed;
	if (free_dims == 0)
		return rest == 1 ? MPI_SUCCESS : MPI_ERR_DIMS;
	int *cur = malloc((size_t)free_dims * sizeof(int)),
	    *best = malloc((size_t)free_dims * sizeof(int)), found = 0;
	if (!cur || !best) {
		free(cur);
		free(best);
		return MPI_ERR_INTERN;
	}
	search(rest, free_dims, rest, cur, 0, best, &found);
	for (int i = 0, k = 0; i < ndims; i++)
		if (dims[i] == 0)
			dims[i] = best[k++];
	free(cur);
	free(best);
	return MPI_SUCCESS;
}

int bcs_ranks_index(const int *a, int na, int w)
{
	for (int i = 0; i < na; i++)
		if (a[i] == w)
			return i;
	return -1;
}

int bcs_ranks_setop(int kind, const int *a, int na, const int *b, int nb, int *out)
{
	int k = 0;
	for (int i = 0; i < na; i++) {
		int in_b = bcs_ranks_index(b, nb, a[i]) >= 0;
		if (kind == 0 || (kind == 1 && in_b) || (kind == 2 && !in_b))
			out[k++] = a[i];
	}
	for (int i = 0; kind == 0 && i < nb; i++)
		if (bcs_ranks_index(a, na, b[i]) < 0)
			out[k++] = b[i];
	return k;
}

int bcs_ranks_translate(const int *a, int na, const int *b, int nb, int n, const int *ranks1,
			int *ranks2)
{
	for (int i = 0; i < n; i++) {
		if (ranks1[i] == MPI_PROC_NULL) {
			ranks2[i] = MPI_PROC_NULL;
			continue;
		}
		if (ranks1[i] < 0 || ranks1[i] >= na)
			return MPI_ERR_RANK;
		int k = bcs_ranks_index(b, nb, a[ranks1[i]]);
		ranks2[i] = k < 0 ? MPI_UNDEFINED : k;
	}
	return MPI_SUCCESS;
}

void bcs_cart_coords(int ndims, const int *dims, int rank, int maxdims, int *coords)
{
	for (int i = ndims - 1; i >= 0; i--) {
		if (i < maxdims)
			coords[i] = rank % dims[i];
		rank /= dims[i];
	}
}

int bcs_cart_rank(int ndims, const int *dims, const int *periods, const int *coords)
{
	int r = 0;
	for (int i = 0; i < ndims; i++) {
		int d = dims[i], x = coords[i];
		if (periods[i])
			x = ((x % d) + d) % d;
		else if (x < 0 || x >= d)
			return -1;
		r = r * d + x;
	}
	return r;
}
