/* Drawing the gang-scheduling matrix for `storm matrix`: rows (time slots)
 * down, nodes across, a job id per cell. Pure (no protobuf), so the unit
 * tests link it alone. */
#ifndef STORM_CLI_MVIEW_H
#define STORM_CLI_MVIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct mview {
	int mpl, nnodes;
	int row;                 /* running now, -1: none */
	const uint64_t *cells;   /* mpl x nnodes, row by row; 0 free */
	const bool *down;        /* per node, NULL: all up */
	int njobs;               /* jobs and their home rows, to mark alternates */
	const uint64_t *job_ids;
	const int *job_homes;
};

/* Writes the grid, at most `width` columns wide (more nodes than fit go in
 * further blocks). Cells: the job id; '.' free; 'x' free on a DOWN node; a
 * trailing '+' marks an alternate slot (the job's backfilled copy). The
 * running row is marked '>'. */
void mview_draw(FILE *f, const struct mview *v, int width);

#endif
