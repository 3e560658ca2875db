/* Node allocation behind one interface, so the gang scheduler (the matrix)
 * can replace the policy without touching the MM. For now: exclusive nodes,
 * first fit by index over the nodes that are up and free. */
#ifndef STORM_ALLOC_H
#define STORM_ALLOC_H

#include <stdbool.h>

struct alloc {
	int nnodes;
	bool *up;    /* node is UP */
	bool *busy;  /* node is allocated to a job */
};

int alloc_init(struct alloc *a, int nnodes);
void alloc_free(struct alloc *a);
void alloc_set_up(struct alloc *a, int node, bool up);
int alloc_available(const struct alloc *a); /* up and not busy */
int alloc_up(const struct alloc *a);
/* Takes want nodes into out[] (ascending); 0, or -1 if not enough now. */
int alloc_take(struct alloc *a, int want, int *out);
void alloc_release(struct alloc *a, const int *nodes, int n);

#endif
