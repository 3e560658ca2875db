#include "alloc.h"

#include <stdlib.h>

int alloc_init(struct alloc *a, int nnodes)
{
	a->nnodes = nnodes;
	a->up = calloc((size_t)nnodes, sizeof(bool));
	a->busy = calloc((size_t)nnodes, sizeof(bool));
	return a->up && a->busy ? 0 : -1;
}

void alloc_free(struct alloc *a)
{
	free(a->up);
	free(a->busy);
	a->up = a->busy = NULL;
}

void alloc_set_up(struct alloc *a, int node, bool up) { a->up[node] = up; }

int alloc_available(const struct alloc *a)
{
	int n = 0;
	for (int i = 0; i < a->nnodes; i++)
		n += a->up[i] && !a->busy[i];
	return n;
}

int alloc_up(const struct alloc *a)
{
	int n = 0;
	for (int i = 0; i < a->nnodes; i++)
		n += a->up[i];
	return n;
}

int alloc_take(struct alloc *a, int want, int *out)
{
	if (want <= 0 || alloc_available(a) < want)
		return -1;
	int k = 0;
	for (int i = 0; i < a->nnodes && k < want; i++)
		if (a->up[i] && !a->busy[i]) {
			a->busy[i] = true;
			out[k++] = i;
		}
	return 0;
}

void alloc_release(struct alloc *a, const int *nodes, int n)
{
	for (int i = 0; i < n; i++)
		a->busy[nodes[i]] = false;
}
