/* One-sided communication: windows (Win_create on Alloc_mem memory,
 * Win_allocate, their attributes), fence epochs with puts and gets to the
 * neighbours (a strided target type too), accumulates of every kind from all
 * ranks into rank 0, Get_accumulate and Fetch_and_op, Compare_and_swap,
 * a post/start/complete/wait ring, and passive target: a fetch-and-op
 * counter, an exclusive read-modify-write through Win_flush, lock_all;
 * info hints (Win_set_info, Win_get_info); MPI_PROC_NULL as a target;
 * lock epochs of puts and gets from 4 bytes to 4 KiB.
 * Only what MPI defines is printed: where the order of lock epochs is free,
 * the checks look at sums and permutations. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static int right(void) { return (rank + 1) % size; }
static int left(void) { return (rank + size - 1) % size; }

static void attributes(void)
{
	int *mem = NULL, *base = NULL, flag = 0, *unit = NULL;
	MPI_Aint *sz = NULL;
	MPI_Win win;
	checkrc(MPI_Alloc_mem(64 * sizeof(int), MPI_INFO_NULL, &mem), MPI_SUCCESS, "alloc_mem.rc");
	checkrc(MPI_Win_create(mem, 64 * sizeof(int), sizeof(int), MPI_INFO_NULL, W, &win),
		MPI_SUCCESS, "win_create.rc");
	MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
	check(flag && base == mem, "attr.base");
	MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag);
	check(flag && *sz == (MPI_Aint)(64 * sizeof(int)), "attr.size");
	MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
	check(flag && *unit == (int)sizeof(int), "attr.disp_unit");
	checkrc(MPI_Win_free(&win), MPI_SUCCESS, "win_free.rc");
	check(win == MPI_WIN_NULL, "win_free.null");
	MPI_Free_mem(mem);

	double *d = NULL;
	checkrc(MPI_Win_allocate(10 * sizeof(double), sizeof(double), MPI_INFO_NULL, W, &d, &win),
		MPI_SUCCESS, "win_allocate.rc");
	MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
	check(flag && (void *)base == (void *)d, "allocate.base");
	MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
	check(flag && *unit == (int)sizeof(double), "allocate.disp_unit");
	MPI_Win_fence(0, win);
	for (int i = 0; i < 10; i++)
		d[i] = rank + i / 10.0;
	MPI_Win_fence(0, win);
	double got[10];
	MPI_Get(got, 10, MPI_DOUBLE, right(), 0, 10, MPI_DOUBLE, win);
	MPI_Win_fence(0, win);
	int ok = 1;
	for (int i = 0; i < 10; i++)
		ok = ok && got[i] == right() + i / 10.0;
	check(ok, "allocate.get_right");
	MPI_Win_free(&win);
}

static void fence_neighbours(void)
{
	int buf[16];
	for (int i = 0; i < 16; i++)
		buf[i] = -1;
	buf[8] = 100 * rank + 8;
	buf[9] = 100 * rank + 9;
	MPI_Win win;
	MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, W, &win);
	MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
	int me = rank, g[2] = {0, 0};
	MPI_Put(&me, 1, MPI_INT, right(), 0, 1, MPI_INT, win); /* my right's slot 0: me */
	MPI_Put(&me, 1, MPI_INT, left(), 1, 1, MPI_INT, win);  /* my left's slot 1: me */
	MPI_Get(g, 2, MPI_INT, right(), 8, 2, MPI_INT, win);
	/* a strided target: slots 10, 12, 14 */
	MPI_Datatype every2;
	MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int three[3] = {rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
	MPI_Put(three, 3, MPI_INT, right(), 10, 1, every2, win);
	MPI_Win_fence(0, win);
	checki(buf[0], left(), "fence.put_from_left");
	checki(buf[1], right(), "fence.put_from_right");
	checki(g[0], 100 * right() + 8, "fence.get_right_8");
	checki(g[1], 100 * right() + 9, "fence.get_right_9");
	check(buf[10] == left() * 10 + 1 && buf[11] == -1 && buf[12] == left() * 10 + 2 &&
	      buf[13] == -1 && buf[14] == left() * 10 + 3, "fence.strided_put");
	/* a second epoch sees the first one's results */
	int back = -2;
	MPI_Get(&back, 1, MPI_INT, left(), 0, 1, MPI_INT, win);
	MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
	checki(back, (left() + size - 1) % size, "fence.second_epoch");
	MPI_Type_free(&every2);
	MPI_Win_free(&win);
}

static void accumulates(void)
{
	long lv[6] = {0, 1, 0, 0, 0, 0};
	double dv[2] = {0, 1};
	lv[2] = -1000;
	lv[3] = 1000;
	MPI_Win lw, dw;
	MPI_Win_create(lv, sizeof(lv), sizeof(long), MPI_INFO_NULL, W, &lw);
	MPI_Win_create(dv, sizeof(dv), sizeof(double), MPI_INFO_NULL, W, &dw);
	MPI_Win_fence(0, lw);
	MPI_Win_fence(0, dw);
	long mine = rank + 1, bits = 1L << rank;
	MPI_Accumulate(&mine, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, lw);
	MPI_Accumulate(&mine, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_PROD, lw);
	MPI_Accumulate(&mine, 1, MPI_LONG, 0, 2, 1, MPI_LONG, MPI_MAX, lw);
	MPI_Accumulate(&mine, 1, MPI_LONG, 0, 3, 1, MPI_LONG, MPI_MIN, lw);
	MPI_Accumulate(&bits, 1, MPI_LONG, 0, 4, 1, MPI_LONG, MPI_BOR, lw);
	MPI_Accumulate(&bits, 1, MPI_LONG, 0, 5, 1, MPI_LONG, MPI_BXOR, lw);
	double two[2] = {0.5 * (rank + 1), 2.0};
	MPI_Accumulate(two, 2, MPI_DOUBLE, 0, 0, 2, MPI_DOUBLE, MPI_SUM, dw);
	MPI_Win_fence(0, lw);
	MPI_Win_fence(0, dw);
	if (rank == 0) {
		long fact = 1;
		for (int i = 1; i <= size; i++)
			fact *= i;
		checki(lv[0], (long)size * (size + 1) / 2, "acc.sum_into_0");
		checki(lv[1], fact, "acc.prod_into_0");
		checki(lv[2], size, "acc.max_into_0");
		checki(lv[3], 1, "acc.min_into_0");
		checki(lv[4], (1L << size) - 1, "acc.bor_into_0");
		checki(lv[5], (1L << size) - 1, "acc.bxor_into_0");
		check(dv[0] == 0.25 * size * (size + 1) && dv[1] == 1 + 2.0 * size,
		      "acc.double_sum_into_0");
	}
	/* replace, then get_accumulate and fetch_and_op see the value before */
	long rep = 7, old = -1, one = 1, before = -1, now = -1;
	if (rank == size - 1)
		MPI_Accumulate(&rep, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_REPLACE, lw);
	MPI_Win_fence(0, lw);
	if (rank == 0)
		checki(lv[0], 7, "acc.replace");
	MPI_Win_fence(0, lw);
	if (rank == 0) {
		MPI_Get_accumulate(&one, 1, MPI_LONG, &old, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM,
				   lw);
		MPI_Fetch_and_op(NULL, &now, MPI_LONG, 0, 0, MPI_NO_OP, lw);
	}
	MPI_Win_fence(0, lw);
	if (rank == 0) {
		checki(old, 7, "get_accumulate.old");
		checki(now, 8, "fetch_and_op.no_op_after");
		checki(lv[0], 8, "get_accumulate.applied");
	}
	MPI_Win_fence(0, lw);
	/* every rank adds one to rank 0 and learns the value before; the order
	 * is free, so rank 0 checks the set of values seen */
	MPI_Fetch_and_op(&one, &before, MPI_LONG, 0, 0, MPI_SUM, lw);
	MPI_Win_fence(0, lw);
	long *all = malloc((size_t)size * sizeof(long));
	MPI_Gather(&before, 1, MPI_LONG, all, 1, MPI_LONG, 0, W);
	if (rank == 0) {
		int seen = 0;
		for (int v = 8; v < 8 + size; v++)
			for (int i = 0; i < size; i++)
				seen += all[i] == v;
		checki(seen, size, "fetch_and_op.fence_values");
		checki(lv[0], 8 + size, "fetch_and_op.fence_sum");
	}
	free(all);
	MPI_Win_free(&lw);
	MPI_Win_free(&dw);
}

static void compare_and_swap(void)
{
	int *slot;
	MPI_Win win;
	MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, W, &slot, &win);
	slot[0] = -1;
	slot[1] = 5;
	MPI_Barrier(W);
	/* everyone races to put its rank in rank 0's slot: one wins */
	int me = rank, cmp = -1, old = -2;
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Compare_and_swap(&me, &cmp, &old, MPI_INT, 0, 0, win);
	MPI_Win_unlock(0, win);
	int won = old == -1, winners = 0, winner = -1;
	MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, W);
	checki(winners, 1, "cas.one_winner");
	int cand = won ? me : -1;
	MPI_Allreduce(&cand, &winner, 1, MPI_INT, MPI_MAX, W);
	if (!won)
		check(old >= 0 && old < size, "cas.loser_sees_a_rank");
	int final = -3;
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Get(&final, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
	MPI_Win_unlock(0, win);
	check(final == winner, "cas.final_is_winner");
	/* a comparison that fails leaves the target alone */
	int nine = 9, four = 4, o2 = -1;
	MPI_Win_fence(0, win);
	MPI_Compare_and_swap(&nine, &four, &o2, MPI_INT, right(), 1, win);
	MPI_Win_fence(0, win);
	checki(o2, 5, "cas.mismatch_old");
	checki(slot[1], 5, "cas.mismatch_kept");
	MPI_Win_free(&win);
}

static void pscw_ring(void)
{
	int buf[4] = {-1, -1, 1000 + rank, -1};
	MPI_Win win;
	MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, W, &win);
	MPI_Group world, from, to;
	MPI_Comm_group(W, &world);
	int l = left(), r = right();
	MPI_Group_incl(world, 1, &l, &from);
	MPI_Group_incl(world, 1, &r, &to);
	int gs = 0;
	MPI_Group_size(from, &gs);
	checki(gs, 1, "pscw.group_size");
	for (int round = 0; round < 3; round++) {
		int v = rank * 10 + round, got = -1;
		MPI_Win_post(from, 0, win);
		MPI_Win_start(to, 0, win);
		MPI_Put(&v, 1, MPI_INT, r, 0, 1, MPI_INT, win);
		MPI_Get(&got, 1, MPI_INT, r, 2, 1, MPI_INT, win);
		MPI_Accumulate(&v, 1, MPI_INT, r, 1, 1, MPI_INT, MPI_MAX, win);
		MPI_Win_complete(win);
		MPI_Win_wait(win);
		checki(buf[0], l * 10 + round, nm("pscw.round%d.put_from_left", round));
		checki(buf[1], l * 10 + round, nm("pscw.round%d.max_from_left", round));
		checki(got, 1000 + r + round, nm("pscw.round%d.get_right", round));
		buf[2]++; /* the next round's get sees it: the epoch is over */
	}
	MPI_Group_free(&from);
	MPI_Group_free(&to);
	MPI_Group_free(&world);
	MPI_Win_free(&win);
}

static void passive(void)
{
	long *cnt;
	MPI_Win win;
	MPI_Win_allocate(3 * sizeof(long), sizeof(long), MPI_INFO_NULL, W, &cnt, &win);
	cnt[0] = cnt[1] = cnt[2] = 0;
	MPI_Barrier(W);
	/* a shared counter at rank 0 */
	enum { N = 5 };
	long one = 1, seen[N];
	for (int i = 0; i < N; i++) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Fetch_and_op(&one, &seen[i], MPI_LONG, 0, 0, MPI_SUM, win);
		MPI_Win_unlock(0, win);
	}
	int rising = 1;
	for (int i = 1; i < N; i++)
		rising = rising && seen[i] > seen[i - 1];
	check(rising, "lock.counter_rises");
	long *all = malloc((size_t)size * N * sizeof(long));
	MPI_Gather(seen, N, MPI_LONG, all, N, MPI_LONG, 0, W);
	if (rank == 0) {
		int perm = 1;
		for (long v = 0; v < (long)size * N; v++) {
			int c = 0;
			for (int i = 0; i < size * N; i++)
				c += all[i] == v;
			perm = perm && c == 1;
		}
		check(perm, "lock.counter_values_each_once");
	}
	free(all);
	/* exclusive read-modify-write of rank size-1's cell: get, flush, put */
	int t = size - 1;
	for (int i = 0; i < N; i++) {
		long x = -1;
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
		MPI_Get(&x, 1, MPI_LONG, t, 1, 1, MPI_LONG, win);
		MPI_Win_flush(t, win);
		x += rank + 1;
		MPI_Put(&x, 1, MPI_LONG, t, 1, 1, MPI_LONG, win);
		MPI_Win_unlock(t, win);
	}
	/* lock_all: everyone adds to everyone's third cell */
	MPI_Win_lock_all(0, win);
	for (int p = 0; p < size; p++)
		MPI_Accumulate(&one, 1, MPI_LONG, p, 2, 1, MPI_LONG, MPI_SUM, win);
	MPI_Win_flush_all(win);
	MPI_Win_unlock_all(win);
	MPI_Barrier(W);
	long mine[3] = {-1, -1, -1};
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
	MPI_Get(mine, 3, MPI_LONG, rank, 0, 3, MPI_LONG, win);
	MPI_Win_unlock(rank, win);
	if (rank == 0)
		checki(mine[0], (long)size * N, "lock.counter_total");
	if (rank == t)
		checki(mine[1], (long)N * size * (size + 1) / 2, "lock.exclusive_rmw_total");
	checki(mine[2], size, "lock_all.each_cell");
	MPI_Win_free(&win);
}

/* MPI_PROC_NULL as a target: a lock epoch on it, a put, a get, an
 * accumulate and an Rput in it, a flush and the unlock, all succeed and
 * touch nothing */
static void proc_null(void)
{
	int *mem, v[2] = {7, 8}, got[2] = {-1, -1};
	MPI_Win win;
	MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, W, &mem, &win);
	mem[0] = mem[1] = 5;
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	MPI_Barrier(W);
	int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, win);
	checkrc(rc, MPI_SUCCESS, "proc_null: lock");
	MPI_Request rq;
	int ok = MPI_Put(v, 2, MPI_INT, MPI_PROC_NULL, 0, 2, MPI_INT, win) == MPI_SUCCESS;
	ok &= MPI_Get(got, 2, MPI_INT, MPI_PROC_NULL, 0, 2, MPI_INT, win) == MPI_SUCCESS;
	ok &= MPI_Accumulate(v, 2, MPI_INT, MPI_PROC_NULL, 0, 2, MPI_INT, MPI_SUM, win) ==
	      MPI_SUCCESS;
	ok &= MPI_Rput(v, 2, MPI_INT, MPI_PROC_NULL, 0, 2, MPI_INT, win, &rq) == MPI_SUCCESS;
	ok &= MPI_Wait(&rq, MPI_STATUS_IGNORE) == MPI_SUCCESS;
	check(ok, "proc_null: put, get, accumulate, rput");
	checkrc(MPI_Win_flush(MPI_PROC_NULL, win), MPI_SUCCESS, "proc_null: flush");
	checkrc(MPI_Win_unlock(MPI_PROC_NULL, win), MPI_SUCCESS, "proc_null: unlock");
	MPI_Barrier(W);
	check(got[0] == -1 && mem[0] == 5 && mem[1] == 5, "proc_null: nothing touched");
	MPI_Win_free(&win);
}

/* a window's info hints: the creating call's and MPI_Win_set_info's come
 * back from MPI_Win_get_info, the others at MPI's defaults */
static int hint_is(MPI_Win win, const char *key, const char *want)
{
	MPI_Info i;
	char v[MPI_MAX_INFO_VAL + 1];
	int flag = 0;
	MPI_Win_get_info(win, &i);
	MPI_Info_get(i, key, MPI_MAX_INFO_VAL, v, &flag);
	MPI_Info_free(&i);
	return flag && !strcmp(v, want);
}

static void set_hint(MPI_Win win, const char *key, const char *val)
{
	MPI_Info i;
	MPI_Info_create(&i);
	MPI_Info_set(i, key, val);
	MPI_Win_set_info(win, i);
	MPI_Info_free(&i);
}

static void hints(void)
{
	MPI_Info i;
	MPI_Win win;
	int *base;
	MPI_Info_create(&i);
	MPI_Info_set(i, "no_locks", "true");
	MPI_Win_allocate(sizeof(int), sizeof(int), i, W, &base, &win);
	MPI_Info_free(&i);
	check(hint_is(win, "no_locks", "true"), "hints: no_locks from the creating call");
	check(hint_is(win, "accumulate_ordering", "rar,raw,war,waw"),
	      "hints: accumulate_ordering's default");
	check(hint_is(win, "accumulate_ops", "same_op_no_op"), "hints: accumulate_ops's default");
	set_hint(win, "accumulate_ordering", "none");
	check(hint_is(win, "accumulate_ordering", "none"), "hints: accumulate_ordering set");
	set_hint(win, "no_locks", "false");
	check(hint_is(win, "no_locks", "false"), "hints: no_locks set again");
	set_hint(win, "same_size", "true");
	check(hint_is(win, "same_size", "true") && hint_is(win, "accumulate_ordering", "none"),
	      "hints: same_size set, the others kept");
	MPI_Win_free(&win);
}

/* lock epochs of puts and gets of every size around the point where an
 * epoch's batch stops travelling with its announcement (a few hundred
 * bytes): each lands whole, and a get in the same epoch reads the put */
static void lock_sizes(void)
{
	enum { MAXN = 1024 };
	static const int counts[] = {1, 2, 100, 120, 127, 128, 129, 140, 1000, MAXN};
	int *base, *mine = malloc(MAXN * sizeof(int)), *back = malloc(MAXN * sizeof(int));
	MPI_Win win;
	MPI_Win_allocate(MAXN * sizeof(int), sizeof(int), MPI_INFO_NULL, W, &base, &win);
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
		int n = counts[k];
		for (int i = 0; i < MAXN; i++)
			base[i] = -1;
		MPI_Barrier(W);
		for (int i = 0; i < n; i++)
			mine[i] = rank * 100000 + n * 10 + i;
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right(), 0, win);
		MPI_Put(mine, n, MPI_INT, right(), 0, n, MPI_INT, win);
		MPI_Win_unlock(right(), win);
		MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win);
		MPI_Get(back, n, MPI_INT, right(), 0, n, MPI_INT, win);
		MPI_Win_unlock(right(), win);
		MPI_Barrier(W);
		int bad = 0;
		for (int i = 0; i < n; i++)
			bad += base[i] != left() * 100000 + n * 10 + i;
		bad += n < MAXN && base[n] != -1;
		checki(bad, 0, nm("lock_sizes.put_%d", n));
		int badback = 0;
		for (int i = 0; i < n; i++)
			badback += back[i] != mine[i];
		checki(badback, 0, nm("lock_sizes.get_%d", n));
	}
	MPI_Win_free(&win);
	free(mine);
	free(back);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	attributes();
	fence_neighbours();
	accumulates();
	compare_and_swap();
	pscw_ring();
	passive();
	hints();
	proc_null();
	lock_sizes();
	return suite_finish("rma");
}
