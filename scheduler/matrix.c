/* The Ousterhout matrix of gang scheduling (matrix.h). Pure. */
#include "matrix.h"

#include <stdlib.h>
#include <string.h>

#define CELL(m, r, p) ((m)->cell[(size_t)(r) * (size_t)(m)->npe + (size_t)(p)])

int matrix_init(struct matrix *m, int npe, int mpl)
{
	memset(m, 0, sizeof(*m));
	if (npe <= 0 || mpl <= 0)
		return -1;
	m->npe = npe;
	m->mpl = mpl;
	m->cell = calloc((size_t)npe * (size_t)mpl, sizeof(uint64_t));
	m->down = calloc((size_t)npe, sizeof(bool));
	if (!m->cell || !m->down) {
		matrix_free(m);
		return -1;
	}
	return 0;
}

void matrix_free(struct matrix *m)
{
	for (int i = 0; i < m->njobs; i++)
		free(m->jobs[i].pes);
	free(m->jobs);
	free(m->cell);
	free(m->down);
	memset(m, 0, sizeof(*m));
}

uint64_t matrix_at(const struct matrix *m, int row, int pe) { return CELL(m, row, pe); }

void matrix_set_down(struct matrix *m, int pe, bool down)
{
	if (pe >= 0 && pe < m->npe)
		m->down[pe] = down;
}

static struct matrix_job *find(const struct matrix *m, uint64_t id)
{
	for (int i = 0; i < m->njobs; i++)
		if (m->jobs[i].id == id)
			return &m->jobs[i];
	return NULL;
}

const struct matrix_job *matrix_find(const struct matrix *m, uint64_t job)
{
	return find(m, job);
}


static bool pes_free(const struct matrix *m, int row, const int *pes, int n)
{
	for (int k = 0; k < n; k++)
		if (CELL(m, row, pes[k]))
			return false;
	return true;
}

/* A cell a new job may take: free, or an alternate copy (which yields). */
static bool takeable(const struct matrix *m, int r, int p)
{
	uint64_t id = CELL(m, r, p);
	if (m->down[p])
		return false;
	if (!id)
		return true;
	struct matrix_job *x = find(m, id);
	return x && x->home != r;
}

int matrix_room(const struct matrix *m)
{
	int best = 0;
	for (int r = 0; r < m->mpl; r++) {
		int n = 0;
		for (int p = 0; p < m->npe; p++)
			n += takeable(m, r, p);
		if (n > best)
			best = n;
	}
	return best;
}

/* Drops job id's alternate copy from row r (a copy is all its PEs or none). */
static void drop_alternate(struct matrix *m, int r, uint64_t id)
{
	for (int p = 0; p < m->npe; p++)
		if (CELL(m, r, p) == id)
			CELL(m, r, p) = 0;
}

int matrix_place(struct matrix *m, uint64_t job, int n)
{
	if (job == 0 || n <= 0 || n > m->npe || find(m, job))
		return -1;
	for (int r = 0; r < m->mpl; r++) {
		int freec = 0;
		for (int p = 0; p < m->npe; p++)
			freec += takeable(m, r, p);
		if (freec < n)
			continue;
		if (m->njobs == m->cap) {
			int cap = m->cap ? 2 * m->cap : 8;
			struct matrix_job *nj = realloc(m->jobs, sizeof(*nj) * (size_t)cap);
			if (!nj)
				return -1;
			m->jobs = nj;
			m->cap = cap;
		}
		struct matrix_job *j = &m->jobs[m->njobs];
		j->pes = malloc(sizeof(int) * (size_t)n);
		if (!j->pes)
			return -1;
		j->id = job;
		j->n = n;
		j->home = r;
		j->slice_us = 0;
		m->njobs++; /* before marking, so takeable() no longer sees a stranger */
		for (int p = 0, k = 0; p < m->npe && k < n; p++)
			if (takeable(m, r, p)) {
				if (CELL(m, r, p))
					drop_alternate(m, r, CELL(m, r, p));
				CELL(m, r, p) = job;
				j->pes[k++] = p;
			}
		return r;
	}
	return -1;
}

int matrix_place_on(struct matrix *m, uint64_t job, const int *pes, int n)
{
	if (job == 0 || n <= 0 || n > m->npe || find(m, job))
		return -1;
	for (int k = 0; k < n; k++)
		if (pes[k] < 0 || pes[k] >= m->npe || (k && pes[k] <= pes[k - 1]))
			return -1;
	for (int r = 0; r < m->mpl; r++) {
		bool fits = true;
		for (int k = 0; k < n && fits; k++) {
			uint64_t id = CELL(m, r, pes[k]);
			struct matrix_job *x = id ? find(m, id) : NULL;
			fits = !id || (x && x->home != r);
		}
		if (!fits)
			continue;
		if (m->njobs == m->cap) {
			int cap = m->cap ? 2 * m->cap : 8;
			struct matrix_job *nj = realloc(m->jobs, sizeof(*nj) * (size_t)cap);
			if (!nj)
				return -1;
			m->jobs = nj;
			m->cap = cap;
		}
		struct matrix_job *j = &m->jobs[m->njobs];
		if (!(j->pes = malloc(sizeof(int) * (size_t)n)))
			return -1;
		memcpy(j->pes, pes, sizeof(int) * (size_t)n);
		j->id = job;
		j->n = n;
		j->home = r;
		j->slice_us = 0;
		m->njobs++;
		for (int k = 0; k < n; k++) {
			if (CELL(m, r, pes[k]))
				drop_alternate(m, r, CELL(m, r, pes[k]));
			CELL(m, r, pes[k]) = job;
		}
		return r;
	}
	return -1;
}

void matrix_remove(struct matrix *m, uint64_t job)
{
	for (size_t i = 0; i < (size_t)m->npe * (size_t)m->mpl; i++)
		if (m->cell[i] == job)
			m->cell[i] = 0;
	for (int i = 0; i < m->njobs; i++)
		if (m->jobs[i].id == job) {
			free(m->jobs[i].pes);
			m->jobs[i] = m->jobs[--m->njobs];
			return;
		}
}

static int by_id(const void *a, const void *b)
{
	const struct matrix_job *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Older jobs (lower ids) get the free slots first. */
int matrix_backfill(struct matrix *m)
{
	int added = 0;
	qsort(m->jobs, (size_t)m->njobs, sizeof(*m->jobs), by_id);
	for (int i = 0; i < m->njobs; i++) {
		struct matrix_job *j = &m->jobs[i];
		for (int r = 0; r < m->mpl; r++) {
			if (r == j->home || !pes_free(m, r, j->pes, j->n))
				continue;
			for (int k = 0; k < j->n; k++)
				CELL(m, r, j->pes[k]) = j->id;
			added += j->n;
		}
	}
	return added;
}

int matrix_compact(struct matrix *m)
{
	/* alternates first out, so only home cells block a move */
	for (int r = 0; r < m->mpl; r++)
		for (int p = 0; p < m->npe; p++) {
			uint64_t id = CELL(m, r, p);
			struct matrix_job *j = id ? find(m, id) : NULL;
			if (j && j->home != r)
				CELL(m, r, p) = 0;
		}
	int moved = 0;
	/* lower homes first, so a job never jumps over one that could move */
	for (int r = 1; r < m->mpl; r++)
		for (int i = 0; i < m->njobs; i++) {
			struct matrix_job *j = &m->jobs[i];
			if (j->home != r)
				continue;
			for (int to = 0; to < r; to++) {
				if (!pes_free(m, to, j->pes, j->n))
					continue;
				for (int k = 0; k < j->n; k++) {
					CELL(m, r, j->pes[k]) = 0;
					CELL(m, to, j->pes[k]) = j->id;
				}
				j->home = to;
				moved++;
				break;
			}
		}
	matrix_backfill(m);
	return moved;
}

int matrix_next_row(const struct matrix *m, int row)
{
	for (int step = 1; step <= m->mpl; step++) {
		int r = ((row < 0 ? -1 : row) + step) % m->mpl;
		if (r < 0)
			r += m->mpl;
		for (int p = 0; p < m->npe; p++)
			if (CELL(m, r, p))
				return r;
	}
	return -1;
}

bool matrix_runs_in(const struct matrix *m, uint64_t job, int row)
{
	for (int p = 0; p < m->npe; p++)
		if (CELL(m, row, p) == job)
			return true;
	return false;
}

void matrix_set_slice(struct matrix *m, uint64_t job, unsigned us)
{
	struct matrix_job *j = find(m, job);
	if (j)
		j->slice_us = us;
}

unsigned matrix_row_slice(const struct matrix *m, int row, unsigned cluster_us)
{
	unsigned us = cluster_us;
	if (row < 0 || row >= m->mpl)
		return us;
	for (int i = 0; i < m->njobs; i++) {
		const struct matrix_job *j = &m->jobs[i];
		if (j->slice_us && j->slice_us < us && matrix_runs_in(m, j->id, row))
			us = j->slice_us;
	}
	return us;
}

unsigned matrix_turn_slices(unsigned quantum, unsigned cluster_us, unsigned row_us)
{
	if (!row_us || row_us >= cluster_us)
		return quantum;
	uint64_t n = ((uint64_t)quantum * cluster_us + row_us / 2) / row_us;
	return n < 1 ? 1 : n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
}
