/* The gang-scheduling matrix: packing, backfilling, compaction, turns. */
#include <CUnit/CUnit.h>

#include "matrix.h"
#include "suites.h"

/* Every job occupies exactly its PEs in its home row, and nowhere else
 * except whole copies of them (alternates). */
static void check_consistent(const struct matrix *m)
{
	for (int i = 0; i < m->njobs; i++) {
		const struct matrix_job *j = &m->jobs[i];
		for (int r = 0; r < m->mpl; r++) {
			int here = 0;
			for (int p = 0; p < m->npe; p++)
				here += matrix_at(m, r, p) == j->id;
			CU_ASSERT(here == 0 || here == j->n);
			if (r == j->home)
				CU_ASSERT_EQUAL(here, j->n);
			for (int k = 0; here && k < j->n; k++)
				CU_ASSERT_EQUAL(matrix_at(m, r, j->pes[k]), j->id);
		}
	}
}

static void test_first_fit(void)
{
	struct matrix m;
	CU_ASSERT_EQUAL_FATAL(matrix_init(&m, 8, 3), 0);
	CU_ASSERT_EQUAL(matrix_place(&m, 1, 6), 0);
	CU_ASSERT_EQUAL(matrix_place(&m, 2, 2), 0); /* fits beside job 1 */
	CU_ASSERT_EQUAL(matrix_place(&m, 3, 4), 1); /* row 0 is full */
	CU_ASSERT_EQUAL(matrix_place(&m, 4, 5), 2);
	CU_ASSERT_EQUAL(matrix_place(&m, 5, 8), -1); /* no row has 8 free: waits */
	CU_ASSERT_EQUAL(matrix_place(&m, 6, 9), -1); /* wider than the machine */
	CU_ASSERT_EQUAL(matrix_place(&m, 1, 1), -1); /* already placed */
	CU_ASSERT_EQUAL(matrix_at(&m, 0, 6), 2);
	CU_ASSERT_EQUAL(matrix_at(&m, 1, 4), 0);
	check_consistent(&m);
	matrix_free(&m);
}

static void test_backfill_and_turns(void)
{
	struct matrix m;
	matrix_init(&m, 8, 3);
	matrix_place(&m, 1, 4); /* row 0, PEs 0-3 */
	matrix_place(&m, 2, 8); /* row 1 */
	matrix_place(&m, 3, 4); /* row 0, PEs 4-7 */
	matrix_place(&m, 4, 2); /* row 2, PEs 0-1 */
	int added = matrix_backfill(&m);
	/* job 1 also in row 2 (PEs 0-1 busy there: no), job 3 in row 2 (4-7 free: yes) */
	CU_ASSERT_EQUAL(added, 4);
	CU_ASSERT(matrix_runs_in(&m, 3, 2));
	CU_ASSERT_FALSE(matrix_runs_in(&m, 1, 2));
	CU_ASSERT_FALSE(matrix_runs_in(&m, 2, 0));
	check_consistent(&m);
	/* every non-empty row gets its turn, in order, cyclically */
	CU_ASSERT_EQUAL(matrix_next_row(&m, -1), 0);
	CU_ASSERT_EQUAL(matrix_next_row(&m, 0), 1);
	CU_ASSERT_EQUAL(matrix_next_row(&m, 1), 2);
	CU_ASSERT_EQUAL(matrix_next_row(&m, 2), 0);
	matrix_free(&m);
}

static void test_compaction(void)
{
	struct matrix m;
	matrix_init(&m, 4, 4);
	matrix_place(&m, 1, 4); /* row 0 */
	matrix_place(&m, 2, 2); /* row 1, PEs 0-1 */
	matrix_place(&m, 3, 2); /* row 1, PEs 2-3 */
	matrix_place(&m, 4, 4); /* row 2 */
	matrix_backfill(&m);
	matrix_remove(&m, 1); /* row 0 empties */
	CU_ASSERT_FALSE(matrix_runs_in(&m, 1, 0));
	int moved = matrix_compact(&m);
	CU_ASSERT_EQUAL(moved, 3); /* jobs 2 and 3 move to row 0, job 4 to row 1 */
	CU_ASSERT(matrix_runs_in(&m, 2, 0) && matrix_runs_in(&m, 3, 0));
	CU_ASSERT(matrix_runs_in(&m, 4, 1));
	CU_ASSERT(matrix_runs_in(&m, 2, 2) && matrix_runs_in(&m, 3, 3)); /* backfilled */
	check_consistent(&m);
	/* alternates yield to a new job: it takes row 2, and 2 and 3 leave it */
	CU_ASSERT_EQUAL(matrix_place(&m, 5, 4), 2);
	CU_ASSERT_FALSE(matrix_runs_in(&m, 2, 2));
	CU_ASSERT(matrix_runs_in(&m, 2, 3));
	check_consistent(&m);
	matrix_remove(&m, 4);
	matrix_remove(&m, 5);
	matrix_compact(&m);
	/* jobs smaller than a row share it, and backfill gives them the empty rows */
	for (int r = 0; r < 4; r++)
		CU_ASSERT(matrix_runs_in(&m, 2, r) && matrix_runs_in(&m, 3, r));
	check_consistent(&m);
	matrix_free(&m);
}

static void test_down_pes(void)
{
	struct matrix m;
	matrix_init(&m, 4, 2);
	matrix_set_down(&m, 1, true);
	CU_ASSERT_EQUAL(matrix_room(&m), 3);
	CU_ASSERT_EQUAL(matrix_place(&m, 1, 4), -1); /* only 3 PEs are up */
	CU_ASSERT_EQUAL(matrix_place(&m, 1, 3), 0);
	const struct matrix_job *j = matrix_find(&m, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT(j->pes[0] == 0 && j->pes[1] == 2 && j->pes[2] == 3);
	CU_ASSERT_EQUAL(matrix_at(&m, 0, 1), 0);
	CU_ASSERT_EQUAL(matrix_room(&m), 3); /* row 1 */
	CU_ASSERT_EQUAL(matrix_place(&m, 2, 1), 1); /* not on PE 1 in row 0 either */
	CU_ASSERT_EQUAL(matrix_at(&m, 1, 0), 2);
	matrix_set_down(&m, 1, false);
	CU_ASSERT_EQUAL(matrix_place(&m, 3, 1), 0);
	CU_ASSERT_EQUAL(matrix_at(&m, 0, 1), 3);
	CU_ASSERT_PTR_NULL(matrix_find(&m, 99));
	check_consistent(&m);
	matrix_free(&m);
}

/* MPL 1 is first come, first served on exclusive nodes. */
static void test_fcfs(void)
{
	struct matrix m;
	matrix_init(&m, 4, 1);
	CU_ASSERT_EQUAL(matrix_place(&m, 1, 3), 0);
	CU_ASSERT_EQUAL(matrix_place(&m, 2, 2), -1);
	CU_ASSERT_EQUAL(matrix_room(&m), 1);
	CU_ASSERT_EQUAL(matrix_backfill(&m), 0);
	CU_ASSERT_EQUAL(matrix_next_row(&m, 0), 0);
	matrix_remove(&m, 1);
	matrix_compact(&m);
	CU_ASSERT_EQUAL(matrix_place(&m, 2, 2), 0);
	CU_ASSERT_EQUAL(matrix_room(&m), 2);
	matrix_free(&m);
}

/* A restarted MM puts jobs back on their PEs, lowest free row first,
 * whether those PEs are up or not. */
static void test_place_on(void)
{
	struct matrix m;
	CU_ASSERT_EQUAL_FATAL(matrix_init(&m, 6, 2), 0);
	int a[] = { 1, 2 }, b[] = { 2, 3 }, c[] = { 0, 5 }, d[] = { 2, 4 }, bad[] = { 3, 1 };
	matrix_set_down(&m, 5, true);
	CU_ASSERT_EQUAL(matrix_place_on(&m, 1, a, 2), 0);
	CU_ASSERT_EQUAL(matrix_place_on(&m, 2, b, 2), 1); /* PE 2 taken in row 0 */
	CU_ASSERT_EQUAL(matrix_place_on(&m, 3, c, 2), 0); /* PE 5 down: still its own */
	CU_ASSERT_EQUAL(matrix_place_on(&m, 4, d, 2), -1); /* PE 2 taken in both rows */
	CU_ASSERT_EQUAL(matrix_place_on(&m, 1, c, 2), -1); /* already placed */
	CU_ASSERT_EQUAL(matrix_place_on(&m, 5, bad, 2), -1); /* not ascending */
	CU_ASSERT_EQUAL(matrix_at(&m, 1, 3), 2);
	CU_ASSERT_EQUAL(matrix_at(&m, 0, 5), 3);
	matrix_backfill(&m);
	check_consistent(&m);
	matrix_free(&m);
}

static void test_bad(void)
{
	struct matrix m;
	CU_ASSERT_EQUAL(matrix_init(&m, 0, 2), -1);
	CU_ASSERT_EQUAL(matrix_init(&m, 4, 0), -1);
	matrix_init(&m, 4, 1);
	CU_ASSERT_EQUAL(matrix_place(&m, 0, 1), -1); /* job id 0 means free */
	CU_ASSERT_EQUAL(matrix_place(&m, 7, 0), -1);
	matrix_remove(&m, 99); /* unknown: nothing happens */
	CU_ASSERT_EQUAL(matrix_next_row(&m, 0), -1);
	matrix_free(&m);
}

/* A row's slice is the shortest its jobs ask for, alternate cells
 * included; the turn keeps its length in the cluster's slices. */
static void test_row_slice(void)
{
	struct matrix m;
	CU_ASSERT_EQUAL_FATAL(matrix_init(&m, 4, 2), 0);
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 0, 10000), 10000); /* empty */
	CU_ASSERT_EQUAL(matrix_row_slice(&m, -1, 10000), 10000); /* no row runs */
	CU_ASSERT_EQUAL(matrix_place(&m, 1, 4), 0);       /* row 0, every PE */
	CU_ASSERT_EQUAL(matrix_place(&m, 2, 2), 1);       /* row 1, PEs 0-1 */
	CU_ASSERT_EQUAL(matrix_place(&m, 3, 2), 1);       /* row 1, PEs 2-3 */
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 10000); /* nobody asks */
	matrix_set_slice(&m, 2, 2000);
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 0, 10000), 10000); /* not its row */
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 2000);
	matrix_set_slice(&m, 3, 1000);
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 1000); /* the shortest */
	matrix_set_slice(&m, 3, 50000);                   /* longer: never above the cluster's */
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 2000);
	matrix_set_slice(&m, 99, 500);                    /* no such job: nothing */
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 2000);
	/* job 1 ends: 2 and 3 move to row 0, and run in row 1 too (backfilled):
	 * job 2's ask moved with it and holds in both */
	matrix_remove(&m, 1);
	matrix_compact(&m);
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 0, 10000), 2000);
	CU_ASSERT(matrix_runs_in(&m, 2, 1));
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 2000);
	/* job 4 takes job 2's alternate cells: row 1 holds 4 and 3's alternate */
	CU_ASSERT_EQUAL(matrix_place(&m, 4, 2), 1);
	CU_ASSERT(!matrix_runs_in(&m, 2, 1));
	CU_ASSERT(matrix_runs_in(&m, 3, 1));
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 10000);
	matrix_set_slice(&m, 3, 1000); /* the alternate's ask counts where it runs */
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 1, 10000), 1000);
	CU_ASSERT_EQUAL(matrix_row_slice(&m, 0, 10000), 1000);
	matrix_free(&m);

	/* the turn: quantum cluster slices' worth, in the row's own slices */
	CU_ASSERT_EQUAL(matrix_turn_slices(1, 10000, 10000), 1);
	CU_ASSERT_EQUAL(matrix_turn_slices(3, 10000, 10000), 3);
	CU_ASSERT_EQUAL(matrix_turn_slices(1, 10000, 1000), 10);
	CU_ASSERT_EQUAL(matrix_turn_slices(2, 10000, 3000), 7);  /* 6.67: nearest */
	CU_ASSERT_EQUAL(matrix_turn_slices(1, 10000, 6000), 2);  /* 1.67 */
	CU_ASSERT_EQUAL(matrix_turn_slices(1, 10000, 9000), 1);  /* at least one */
	CU_ASSERT_EQUAL(matrix_turn_slices(1, 10000, 0), 1);
	CU_ASSERT_EQUAL(matrix_turn_slices(1000000, 10000000, 100), 4294967295u); /* no wrap */
}

void add_matrix_suite(void)
{
	CU_pSuite s = CU_add_suite("matrix", NULL, NULL);
	CU_add_test(s, "first-fit packing", test_first_fit);
	CU_add_test(s, "alternate-slot backfill and row turns", test_backfill_and_turns);
	CU_add_test(s, "compaction when jobs end", test_compaction);
	CU_add_test(s, "down PEs take no new job", test_down_pes);
	CU_add_test(s, "MPL 1 is FCFS", test_fcfs);
	CU_add_test(s, "bad arguments", test_bad);
	CU_add_test(s, "jobs put back on their PEs after a restart", test_place_on);
	CU_add_test(s, "a row's slice and turn", test_row_slice);
}
