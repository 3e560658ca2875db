/* The Ousterhout matrix of gang scheduling: processing elements
 * (nodes) across, time slots (rows, at most MPL) down. A job occupies the
 * same PEs in its home row and, by alternate-slot backfilling, in every
 * other row where those PEs are free. A pure library: the MM drives it
 * (daemons/mm/job.c places and removes jobs, slice.c picks the row each
 * quantum and tells every node which job its cell in that row holds). */
#ifndef STORM_MATRIX_H
#define STORM_MATRIX_H

#include <stdbool.h>
#include <stdint.h>

struct matrix_job {
	uint64_t id;
	int n;       /* PEs */
	int *pes;    /* ascending */
	int home;    /* the row it was placed in */
	unsigned slice_us; /* the slice it asks its rows to run at, 0: none */
};

struct matrix {
	int npe, mpl;
	uint64_t *cell; /* mpl x npe job ids, 0: free */
	bool *down;     /* per PE: not to be given to new jobs */
	struct matrix_job *jobs;
	int njobs, cap;
};

int matrix_init(struct matrix *m, int npe, int mpl);
void matrix_free(struct matrix *m);
uint64_t matrix_at(const struct matrix *m, int row, int pe);
/* A PE that is down takes no new job (its jobs are the MM's to end). */
void matrix_set_down(struct matrix *m, int pe, bool down);
/* The largest job that could be placed now: the most takeable PEs in a row. */
int matrix_room(const struct matrix *m);
const struct matrix_job *matrix_find(const struct matrix *m, uint64_t job);
/* First fit: the lowest row with n free PEs, the lowest such PEs. Returns
 * the row, or -1 when no row has room (the job waits). */
int matrix_place(struct matrix *m, uint64_t job, int n);
/* Puts a job back on the given PEs (ascending), in the lowest row where
 * they are free, whether up or down: the MM restoring its jobs after a
 * restart. Returns the row, or -1. */
int matrix_place_on(struct matrix *m, uint64_t job, const int *pes, int n);
/* Frees every cell of the job. */
void matrix_remove(struct matrix *m, uint64_t job);
/* Alternate slots: each job also runs in every other row where all its PEs
 * are free. Returns the cells added. */
int matrix_backfill(struct matrix *m);
/* After jobs end: moves each job's home down to the lowest row where its
 * PEs are free (PEs never change: its processes live there), drops the
 * alternate cells and backfills again. Returns the jobs moved. */
int matrix_compact(struct matrix *m);
/* The next row after `row` (cyclically) that holds any job; -1 if none. */
int matrix_next_row(const struct matrix *m, int row);
bool matrix_runs_in(const struct matrix *m, uint64_t job, int row);
/* A job's ask for a slice of us microseconds (0: none) in every row it runs in. */
void matrix_set_slice(struct matrix *m, uint64_t job, unsigned us);
/* The slice a row runs at: the shortest any job running in it (home or
 * alternate cells) asks for; cluster_us when none asks for a shorter one
 * (an empty row, row -1). */
unsigned matrix_row_slice(const struct matrix *m, int row, unsigned cluster_us);
/* The slices of row_us in a row's turn: as near quantum slices of
 * cluster_us as whole slices come, at least one. A row at short slices
 * gets the same share of the machine as the others and the switch period
 * stays quantum x cluster_us: only the strobes come more often. */
unsigned matrix_turn_slices(unsigned quantum, unsigned cluster_us, unsigned row_us);

#endif
