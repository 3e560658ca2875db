/* Gang scheduling: the MM's side of the Ousterhout matrix. Jobs are placed
 * in rows when they start and removed when they end; every quantum the MM
 * picks the next row and each strobe tells every node which job its cell in
 * that row holds. */
#include "mm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned gang_slice_us(struct mm *mm, int row)
{
	return matrix_row_slice(&mm->matrix, row, mm->conf.timeslice_us);
}

/* A row is worth a turn when one of its jobs has ranks to run: a job still
 * transferring its program holds cells but has nothing on the nodes. */
static bool row_runnable(struct mm *mm, int row)
{
	if (row < 0)
		return false;
	uint64_t last = 0;
	for (int p = 0; p < mm->conf.nnodes; p++) {
		uint64_t id = matrix_at(&mm->matrix, row, p);
		if (!id || id == last)
			continue;
		last = id;
		struct job *j = job_find(mm, id);
		if (j && j->state == STORM__CTL__JOB_STATE__RUNNING)
			return true;
	}
	return false;
}

static void mark_ran(struct mm *mm, int row)
{
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->state == STORM__CTL__JOB_STATE__RUNNING && !j->ran &&
		    matrix_runs_in(&mm->matrix, j->id, row))
			j->ran = true;
}

/* One slice's step of the row rotation from (*row, *quantum_left): 0 inside
 * a turn, 1 at a boundary that keeps the row, 2 when a new row takes its turn. ran_rows: rows that run before this step in
 * a prediction (their jobs count as having run). Shared by gang_tick and
 * gang_predict, so the schedule ahead is the one the MM will follow. */
static int rotate(struct mm *mm, int *row, unsigned *quantum_left, uint32_t ran_rows)
{
	if (*quantum_left > 0)
		(*quantum_left)--;
	if (*quantum_left > 0 && row_runnable(mm, *row))
		return 0;
	/* a row boundary: a job that has not run yet goes first (oldest first),
	 * so a new interactive job starts now rather than after a full turn
	 * of the matrix; then the rows in order, skipping empty ones */
	int next = -1;
	for (struct job *j = mm->jobs; j && next < 0; j = j->next)
		if (j->state == STORM__CTL__JOB_STATE__RUNNING && !j->ran) {
			const struct matrix_job *mj = matrix_find(&mm->matrix, j->id);
			if (mj && !(ran_rows & (1u << mj->home)))
				next = mj->home;
		}
	for (int step = 1; step <= mm->matrix.mpl && next < 0; step++) {
		int r = ((*row < 0 ? -1 : *row) + step) % mm->matrix.mpl;
		if (row_runnable(mm, r))
			next = r;
	}
	if (next < 0)
		return 0; /* nothing to run; keep the row, so its cells show */
	int turn = next != *row ? 2 : 1;
	*row = next;
	*quantum_left = matrix_turn_slices(mm->conf.quantum, mm->conf.timeslice_us,
					   gang_slice_us(mm, next));
	return turn;
}

void gang_tick(struct mm *mm)
{
	int row = mm->row;
	unsigned q = mm->quantum_left;
	int step = rotate(mm, &row, &q, 0);
	if (step == 2) {
		trace_rows(mm, mm->row, row);
		mm->switches++;
	}
	mm->row = row;
	mm->quantum_left = q;
	if (step)
		mark_ran(mm, row);
}

/* The cells of row for each node: a job's cells are side by side in its row,
 * decided once per job, not per node (alloc_frozen walks the job table) */
static void fill_run(struct mm *mm, int row, uint64_t *run)
{
	uint64_t last = 0, last_run = 0;
	for (int p = 0; p < mm->conf.nnodes; p++) {
		uint64_t id = row >= 0 ? matrix_at(&mm->matrix, row, p) : 0;
		if (id && id != last) {
			struct job *j = job_find(mm, id);
			/* only launched jobs: a node must not take a job it is still
			 * receiving for one to continue; a job being checkpointed is
			 * frozen until every node saved it */
			last_run = j && !alloc_frozen(mm, j) &&
						   (j->state == STORM__CTL__JOB_STATE__RUNNING ||
						    j->state == STORM__CTL__JOB_STATE__LAUNCHING)
					   ? id
					   : 0;
			last = id;
		}
		run[p] = id ? last_run : 0;
	}
}

void gang_fill_strobe(struct mm *mm, struct strobe *s)
{
	s->row = mm->row;
	s->slice_us = mm->slice_us;
	s->switches = mm->switches;
	fill_run(mm, mm->row, strobe_run(s));
	unsigned k = strobe_ahead(s);
	if (!k)
		return;
	/* the slices ahead as the rotation will run them if nothing changes
	 * (a job's end or start changes them: the next strobe corrects) */
	struct strobe_slot *slot = strobe_slots(s);
	int row = mm->row;
	unsigned q = mm->quantum_left;
	uint64_t sw = mm->switches;
	uint32_t ran_rows = row >= 0 ? 1u << row : 0;
	slot[0].start_ns = mm->slice_grid_ns;
	slot[0].switches = sw;
	slot[0].row = row;
	slot[0].pad = 0;
	uint64_t start = mm->slice_grid_ns, len_us = mm->slice_us;
	for (unsigned i = 1; i <= k; i++) {
		if (rotate(mm, &row, &q, ran_rows) == 2)
			sw++;
		if (row >= 0)
			ran_rows |= 1u << row;
		/* each slice as long as its row's: the one before sets the start */
		start += len_us * 1000;
		len_us = gang_slice_us(mm, row);
		slot[i].start_ns = start;
		slot[i].switches = sw;
		slot[i].row = row;
		slot[i].pad = 0;
		fill_run(mm, row, strobe_run_ahead(s, i));
	}
}

/* The running row's slice changed (a job asking for a shorter one came or
 * went): the rest of its turn is counted in its new slices, so the turn
 * still lasts as long. */
static void retime_turn(struct mm *mm, unsigned old_us)
{
	unsigned now_us = gang_slice_us(mm, mm->row);
	if (now_us == old_us || !mm->quantum_left)
		return;
	uint64_t q = ((uint64_t)mm->quantum_left * old_us + now_us - 1) / now_us;
	mm->quantum_left = q > UINT32_MAX ? UINT32_MAX : (unsigned)q;
}

int gang_place(struct mm *mm, struct job *j)
{
	unsigned old_us = gang_slice_us(mm, mm->row);
	if (matrix_place(&mm->matrix, j->id, (int)j->nnodes) < 0)
		return -1;
	const struct matrix_job *mj = matrix_find(&mm->matrix, j->id);
	memcpy(j->nodes, mj->pes, sizeof(int) * j->nnodes);
	matrix_set_slice(&mm->matrix, j->id, j->spec->timeslice_us);
	matrix_backfill(&mm->matrix);
	retime_turn(mm, old_us);
	/* it may start in the running row: then it runs from its launch */
	if (mm->row < 0 || !row_runnable(mm, mm->row))
		mm->quantum_left = 0;
	return 0;
}

void gang_remove(struct mm *mm, struct job *j)
{
	if (!matrix_find(&mm->matrix, j->id))
		return;
	unsigned old_us = gang_slice_us(mm, mm->row);
	matrix_remove(&mm->matrix, j->id);
	matrix_compact(&mm->matrix);
	retime_turn(mm, old_us);
	/* compaction may have moved the running row's jobs: follow the one
	 * that has run longest in it rather than lose the rest of its turn */
	if (!row_runnable(mm, mm->row))
		mm->quantum_left = 0;
}

/* a step runs in its allocation's cells (jobid_alloc) */
bool gang_runs_now(struct mm *mm, const struct job *j)
{
	return mm->row >= 0 && matrix_runs_in(&mm->matrix, jobid_alloc(j->id), mm->row);
}

int gang_home(struct mm *mm, const struct job *j)
{
	const struct matrix_job *mj = matrix_find(&mm->matrix, jobid_alloc(j->id));
	return mj ? mj->home : -1;
}

const char *gang_waiting_reason(struct mm *mm, const struct job *j, char *buf, size_t len)
{
	int up = 0;
	for (int i = 0; i < mm->conf.nnodes; i++)
		up += mm->nodes[i].state == STORM__CTL__NODE_STATE__UP;
	if ((int)j->nnodes > up)
		snprintf(buf, len, "waiting for %u nodes (%d of %d up)", j->nnodes, up,
			 mm->conf.nnodes);
	else
		snprintf(buf, len, "waiting for %u nodes free in one row of the matrix "
				   "(at most %d free in a row, MPL %u)",
			 j->nnodes, matrix_room(&mm->matrix), mm->conf.mpl);
	return buf;
}
