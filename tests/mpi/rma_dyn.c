/* One-sided communication as the OSU one-sided benchmarks use it: a
 * dynamic window with several regions attached on every rank (their
 * addresses exchanged with Allgather), puts and gets into them from every
 * rank, a region detached and another attached in its place, accesses
 * across two regions attached side by side; request-based
 * operations (Rput, Rget, Raccumulate, Rget_accumulate) completed with
 * Waitall inside lock_all and lock epochs, flush_local; a shared window of
 * each node's ranks (Win_allocate_shared, Win_shared_query, Win_sync); the
 * window flavors; a linked list every rank appends to at once, as MPICH's
 * rma/linked_list programs do (compare-and-swap on a tail's next rank in an
 * exclusive epoch or under lock_all with flush, chases that spin on gets and
 * poll MPI_Iprobe, a rank spinning on exclusive epochs of its own window
 * for what another rank puts there). Only what MPI defines is printed,
 * whatever the ranks per node. */
#include <stddef.h>

#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

#define NREG 3
#define SLOTS 8 /* a slot per rank: at most 8 ranks */

static int flavor_of(MPI_Win win)
{
	int *f = NULL, flag = 0;
	MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &f, &flag);
	return flag ? *f : -1;
}

/* the value rank `from` writes into region k of rank `to`, slot `from` */
static int val(int from, int to, int k)
{
	return 10000 * (k + 1) + 100 * to + from;
}

static void dynamic_window(void)
{
	MPI_Win win;
	checkrc(MPI_Win_create_dynamic(MPI_INFO_NULL, W, &win), MPI_SUCCESS, "dyn.create.rc");
	checki(flavor_of(win), MPI_WIN_FLAVOR_DYNAMIC, "dyn.flavor");
	/* regions of their own sizes and element types, allocated apart */
	int *reg[NREG];
	MPI_Aint mine[NREG], *all = malloc((size_t)size * NREG * sizeof(MPI_Aint));
	for (int k = 0; k < NREG; k++) {
		reg[k] = malloc((SLOTS + 4 * k) * sizeof(int));
		for (int i = 0; i < SLOTS + 4 * k; i++)
			reg[k][i] = -1;
		checkrc(MPI_Win_attach(win, reg[k], (SLOTS + 4 * k) * sizeof(int)), MPI_SUCCESS,
			nm("dyn.attach_%d.rc", k));
		MPI_Get_address(reg[k], &mine[k]);
	}
	MPI_Allgather(mine, NREG, MPI_AINT, all, NREG, MPI_AINT, W);

	/* every rank puts into every region of every rank, at its own slot */
	MPI_Win_lock_all(0, win);
	for (int p = 0; p < size; p++)
		for (int k = 0; k < NREG; k++) {
			int v = val(rank, p, k);
			MPI_Put(&v, 1, MPI_INT, p, MPI_Aint_add(all[p * NREG + k], rank * sizeof(int)),
				1, MPI_INT, win);
			/* a put's buffer is the program's again at once under BCS-MPI
			 * (packed by the call) but not under MPICH: flushed first */
			MPI_Win_flush(p, win);
		}
	MPI_Win_unlock_all(win);
	MPI_Barrier(W);
	for (int k = 0; k < NREG; k++) {
		int ok = 1;
		for (int from = 0; from < size; from++)
			ok = ok && reg[k][from] == val(from, rank, k);
		for (int i = size; i < SLOTS + 4 * k; i++)
			ok = ok && reg[k][i] == -1;
		check(ok, nm("dyn.put_from_all.region_%d", k));
	}

	/* gets from every rank's regions; a strided target type too */
	int *got = malloc((size_t)size * NREG * sizeof(int));
	MPI_Win_lock_all(0, win);
	for (int p = 0; p < size; p++)
		for (int k = 0; k < NREG; k++)
			MPI_Get(&got[p * NREG + k], 1, MPI_INT, p,
				MPI_Aint_add(all[p * NREG + k], ((rank + 1) % size) * sizeof(int)), 1,
				MPI_INT, win);
	MPI_Win_flush_all(win);
	int ok = 1;
	for (int p = 0; p < size; p++)
		for (int k = 0; k < NREG; k++)
			ok = ok && got[p * NREG + k] == val((rank + 1) % size, p, k);
	check(ok, "dyn.get_from_all");
	MPI_Datatype every2;
	MPI_Type_vector(2, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int two[2] = {0, 0}, r = (rank + 1) % size;
	MPI_Get(two, 2, MPI_INT, r, all[r * NREG + 2], 1, every2, win);
	MPI_Win_unlock_all(win);
	check(two[0] == val(0, r, 2) && two[1] == (size > 2 ? val(2, r, 2) : -1),
	      "dyn.get_strided");
	MPI_Type_free(&every2);
	MPI_Barrier(W);

	/* region 1 goes, a new one comes in its place: the new addresses */
	checkrc(MPI_Win_detach(win, reg[1]), MPI_SUCCESS, "dyn.detach.rc");
	long *fresh = calloc(SLOTS, sizeof(long));
	checkrc(MPI_Win_attach(win, fresh, SLOTS * sizeof(long)), MPI_SUCCESS,
		"dyn.attach_fresh.rc");
	MPI_Aint fa, *fall = malloc((size_t)size * sizeof(MPI_Aint));
	MPI_Get_address(fresh, &fa);
	MPI_Allgather(&fa, 1, MPI_AINT, fall, 1, MPI_AINT, W);
	int l = (rank + size - 1) % size;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, l, 0, win);
	long lv = 1000L * rank + 1;
	MPI_Accumulate(&lv, 1, MPI_LONG, l, MPI_Aint_add(fall[l], sizeof(long)), 1, MPI_LONG,
		       MPI_SUM, win);
	MPI_Win_unlock(l, win);
	MPI_Barrier(W);
	checki(fresh[1], 1000L * ((rank + 1) % size) + 1, "dyn.acc_into_fresh");
	checki(fresh[0], 0, "dyn.fresh_untouched");
	MPI_Barrier(W);
	for (int k = 0; k < NREG; k++)
		if (k != 1)
			MPI_Win_detach(win, reg[k]);
	MPI_Win_detach(win, fresh);
	checkrc(MPI_Win_free(&win), MPI_SUCCESS, "dyn.free.rc");
	for (int k = 0; k < NREG; k++)
		free(reg[k]);
	free(fresh);
	free(fall);
	free(got);
	free(all);
}

/* the two halves of one array attached apart: a put, an accumulate and a
 * get that each run across the seam, which MPI allows (every byte is
 * attached) and MPICH's rma/win_dynamic_rma_flush_get does */
enum { HALF = 64, SPAN = 48, BEFORE = 16 };

/* int i of the span rank `from` put across the seam, after the accumulate
 * of ones into the 4 ints either side of it */
static int seam_val(int from, int i)
{
	return 1000 * from + i + (i >= BEFORE - 4 && i < BEFORE + 4);
}

static void adjacent_regions(void)
{
	int *mem = malloc(2 * HALF * sizeof(int));
	for (int i = 0; i < 2 * HALF; i++)
		mem[i] = -1;
	MPI_Win win;
	MPI_Win_create_dynamic(MPI_INFO_NULL, W, &win);
	checkrc(MPI_Win_attach(win, mem, HALF * sizeof(int)), MPI_SUCCESS, "dyn.seam.attach_lo.rc");
	checkrc(MPI_Win_attach(win, mem + HALF, HALF * sizeof(int)), MPI_SUCCESS,
		"dyn.seam.attach_hi.rc");
	MPI_Aint a, *all = malloc((size_t)size * sizeof(MPI_Aint));
	MPI_Get_address(mem, &a);
	MPI_Allgather(&a, 1, MPI_AINT, all, 1, MPI_AINT, W);
	int dst = (rank + 1) % size, src[SPAN], ones[8], back[SPAN];
	for (int i = 0; i < SPAN; i++)
		src[i] = 1000 * rank + i;
	for (int i = 0; i < 8; i++)
		ones[i] = 1;
	MPI_Aint at = MPI_Aint_add(all[dst], (HALF - BEFORE) * sizeof(int));
	MPI_Win_lock_all(0, win);
	checkrc(MPI_Put(src, SPAN, MPI_INT, dst, at, SPAN, MPI_INT, win), MPI_SUCCESS,
		"dyn.seam.put.rc");
	checkrc(MPI_Win_flush(dst, win), MPI_SUCCESS, "dyn.seam.put_flush.rc");
	/* 4 ints either side of the seam */
	MPI_Accumulate(ones, 8, MPI_INT, dst, MPI_Aint_add(all[dst], (HALF - 4) * sizeof(int)), 8,
		       MPI_INT, MPI_SUM, win);
	checkrc(MPI_Win_flush(dst, win), MPI_SUCCESS, "dyn.seam.acc_flush.rc");
	MPI_Get(back, SPAN, MPI_INT, dst, at, SPAN, MPI_INT, win);
	checkrc(MPI_Win_flush(dst, win), MPI_SUCCESS, "dyn.seam.get_flush.rc");
	MPI_Win_unlock_all(win);
	int ok = 1;
	for (int i = 0; i < SPAN; i++)
		ok = ok && back[i] == seam_val(rank, i);
	check(ok, "dyn.seam.get_back");
	MPI_Barrier(W);
	/* what the left neighbour wrote here, and nothing outside it */
	int l = (rank + size - 1) % size;
	ok = mem[HALF - BEFORE - 1] == -1 && mem[HALF - BEFORE + SPAN] == -1;
	for (int i = 0; i < SPAN; i++)
		ok = ok && mem[HALF - BEFORE + i] == seam_val(l, i);
	check(ok, "dyn.seam.target");
	MPI_Barrier(W);
	MPI_Win_detach(win, mem);
	MPI_Win_detach(win, mem + HALF);
	checkrc(MPI_Win_free(&win), MPI_SUCCESS, "dyn.seam.free.rc");
	free(all);
	free(mem);
}

static void request_based(void)
{
	double *base;
	MPI_Win win;
	MPI_Win_allocate((MPI_Aint)(2 * SLOTS * sizeof(double)), sizeof(double), MPI_INFO_NULL, W,
			 &base, &win);
	checki(flavor_of(win), MPI_WIN_FLAVOR_ALLOCATE, "req.flavor_allocate");
	/* MPI leaves Win_allocate's memory undefined */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	for (int i = 0; i < 2 * SLOTS; i++)
		base[i] = 0;
	MPI_Win_unlock(rank, win);
	MPI_Barrier(W);
	MPI_Request *req = malloc((size_t)(2 * size + 2) * sizeof(MPI_Request));
	double *out = malloc((size_t)size * sizeof(double));
	MPI_Win_lock_all(0, win);
	for (int p = 0; p < size; p++) {
		out[p] = rank + p / 8.0;
		MPI_Rput(&out[p], 1, MPI_DOUBLE, p, rank, 1, MPI_DOUBLE, win, &req[p]);
	}
	checkrc(MPI_Waitall(size, req, MPI_STATUSES_IGNORE), MPI_SUCCESS, "req.rput_waitall.rc");
	/* local completion: the buffers may be reused before the flush */
	for (int p = 0; p < size; p++)
		out[p] = -1;
	MPI_Win_flush_local_all(win);
	MPI_Win_flush_all(win);
	MPI_Win_unlock_all(win);
	MPI_Barrier(W);
	int ok = 1;
	for (int from = 0; from < size; from++)
		ok = ok && base[from] == from + rank / 8.0;
	check(ok, "req.rput_from_all");

	/* Rget from every rank, completed by one Waitall, inside lock_all */
	double *in = malloc((size_t)size * sizeof(double));
	MPI_Win_lock_all(0, win);
	for (int p = 0; p < size; p++) {
		in[p] = -5;
		MPI_Rget(&in[p], 1, MPI_DOUBLE, p, (rank + 1) % size, 1, MPI_DOUBLE, win, &req[p]);
	}
	checkrc(MPI_Waitall(size, req, MPI_STATUSES_IGNORE), MPI_SUCCESS, "req.rget_waitall.rc");
	ok = 1;
	for (int p = 0; p < size; p++)
		ok = ok && in[p] == (rank + 1) % size + p / 8.0;
	check(ok, "req.rget_from_all");
	MPI_Win_unlock_all(win);
	MPI_Barrier(W);

	/* Raccumulate into rank 0 from all; then Rget_accumulate reads it */
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	double one = rank + 1;
	MPI_Raccumulate(&one, 1, MPI_DOUBLE, 0, SLOTS, 1, MPI_DOUBLE, MPI_SUM, win, &req[0]);
	MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	MPI_Win_unlock(0, win);
	MPI_Barrier(W);
	double sum = -1, dummy = 0;
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Rget_accumulate(&dummy, 1, MPI_DOUBLE, &sum, 1, MPI_DOUBLE, 0, SLOTS, 1, MPI_DOUBLE,
			    MPI_NO_OP, win, &req[0]);
	int flag = 0;
	MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
	MPI_Win_unlock(0, win);
	checki((long long)sum, (long long)size * (size + 1) / 2, "req.raccumulate_sum");
	check(flag && req[0] == MPI_REQUEST_NULL, "req.done_is_null");

	/* an exclusive counter: each rank's Rget_accumulate sees a distinct
	 * old value (the order of the epochs is free: only the set is printed) */
	MPI_Barrier(W);
	long *cnt;
	MPI_Win cw;
	MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, W, &cnt, &cw);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, cw);
	*cnt = 0;
	MPI_Win_unlock(rank, cw);
	MPI_Barrier(W);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cw);
	long inc = 1, old = -1;
	MPI_Rget_accumulate(&inc, 1, MPI_LONG, &old, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, cw,
			    &req[0]);
	MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	MPI_Win_unlock(0, cw);
	long *olds = malloc((size_t)size * sizeof(long));
	MPI_Allgather(&old, 1, MPI_LONG, olds, 1, MPI_LONG, W);
	int seen = 0;
	for (int i = 0; i < size; i++)
		if (olds[i] >= 0 && olds[i] < size)
			seen |= 1 << olds[i];
	checki(seen, (1 << size) - 1, "req.counter_permutation");
	MPI_Win_free(&cw);
	/* a request to MPI_PROC_NULL completes at once */
	MPI_Win_lock_all(0, win);
	MPI_Rget(in, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, 1, MPI_DOUBLE, win, &req[0]);
	MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	MPI_Win_unlock_all(win);
	check(req[0] == MPI_REQUEST_NULL, "req.proc_null");
	MPI_Win_free(&win);
	free(olds);
	free(in);
	free(out);
	free(req);
}

static void shared_window(void)
{
	MPI_Comm node;
	MPI_Comm_split_type(W, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	int nr, nn;
	MPI_Comm_rank(node, &nr);
	MPI_Comm_size(node, &nn);
	int *mine = NULL;
	MPI_Win win;
	checkrc(MPI_Win_allocate_shared((MPI_Aint)(4 * sizeof(int)), sizeof(int), MPI_INFO_NULL,
					node, &mine, &win),
		MPI_SUCCESS, "shared.allocate.rc");
	checki(flavor_of(win), MPI_WIN_FLAVOR_SHARED, "shared.flavor");
	MPI_Win_lock_all(0, win);
	for (int i = 0; i < 4; i++)
		mine[i] = 100 * rank + i;
	MPI_Win_sync(win);
	MPI_Barrier(node);
	MPI_Win_sync(win);
	/* the next rank of the node, by a load from its segment */
	int nb = (nr + 1) % nn, *theirs = NULL, unit = 0;
	MPI_Aint sz = 0;
	MPI_Win_shared_query(win, nb, &sz, &unit, &theirs);
	int wr;
	MPI_Group ng, wg;
	MPI_Comm_group(node, &ng);
	MPI_Comm_group(W, &wg);
	MPI_Group_translate_ranks(ng, 1, &nb, wg, &wr);
	check(sz == (MPI_Aint)(4 * sizeof(int)) && unit == (int)sizeof(int), "shared.query");
	check(theirs[0] == 100 * wr && theirs[3] == 100 * wr + 3, "shared.load_neighbour");
	/* a put through the window lands in the memory the neighbour loads */
	int v = -rank;
	MPI_Put(&v, 1, MPI_INT, nb, 2, 1, MPI_INT, win);
	MPI_Win_flush(nb, win);
	MPI_Win_sync(win);
	MPI_Barrier(node);
	MPI_Win_sync(win);
	int pr = (nr + nn - 1) % nn, pw;
	MPI_Group_translate_ranks(ng, 1, &pr, wg, &pw);
	checki(mine[2], -pw, "shared.put_from_previous");
	MPI_Win_unlock_all(win);
	MPI_Group_free(&ng);
	MPI_Group_free(&wg);
	MPI_Win_free(&win);
	MPI_Comm_free(&node);
}

/* ---- a linked list in a dynamic window, every rank appending */

struct elem {
	int value;
	int next_rank; /* -1: the tail */
	MPI_Aint next_disp;
};

#define LL_PER_RANK 8
#define LL_PROBES 20

static MPI_Aint ll_alloc(MPI_Win win, int value, struct elem **keep, int *nkeep)
{
	struct elem *e = NULL;
	MPI_Alloc_mem(sizeof(*e), MPI_INFO_NULL, &e);
	*e = (struct elem){.value = value, .next_rank = -1, .next_disp = 0};
	MPI_Win_attach(win, e, sizeof(*e));
	keep[(*nkeep)++] = e;
	MPI_Aint d;
	MPI_Get_address(e, &d);
	return d;
}

#define NEXT_RANK(d) ((d) + (MPI_Aint)offsetof(struct elem, next_rank))
#define NEXT_DISP(d) ((d) + (MPI_Aint)offsetof(struct elem, next_disp))

/* One append: a compare-and-swap of the tail's next rank, then its next
 * displacement put; a stale tail is chased. lockall: under lock_all with
 * flushes (MPICH's linked_list_lockall), else exclusive epochs. */
static void ll_append(MPI_Win win, int *trank, MPI_Aint *tdisp, MPI_Aint mine, int lockall)
{
	int nil = -1;
	for (;;) {
		int got = -1;
		if (!lockall)
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, *trank, 0, win);
		MPI_Compare_and_swap(&rank, &nil, &got, MPI_INT, *trank, NEXT_RANK(*tdisp), win);
		if (lockall)
			MPI_Win_flush(*trank, win);
		else
			MPI_Win_unlock(*trank, win);
		if (got == -1) {
			if (lockall) {
				MPI_Accumulate(&mine, 1, MPI_AINT, *trank, NEXT_DISP(*tdisp), 1,
					       MPI_AINT, MPI_REPLACE, win);
				MPI_Win_flush(*trank, win);
			} else {
				MPI_Win_lock(MPI_LOCK_EXCLUSIVE, *trank, 0, win);
				MPI_Put(&mine, 1, MPI_AINT, *trank, NEXT_DISP(*tdisp), 1, MPI_AINT,
					win);
				MPI_Win_unlock(*trank, win);
			}
			*trank = rank;
			*tdisp = mine;
			for (int j = 0; j < LL_PROBES; j++) {
				int flag;
				MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, W, &flag, MPI_STATUS_IGNORE);
			}
			return;
		}
		/* stale: the next element's displacement, once its appender put it */
		MPI_Aint next = 0;
		do {
			if (lockall) {
				MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, &next, 1, MPI_AINT,
						   *trank, NEXT_DISP(*tdisp), 1, MPI_AINT, MPI_NO_OP,
						   win);
				MPI_Win_flush(*trank, win);
			} else {
				MPI_Win_lock(MPI_LOCK_EXCLUSIVE, *trank, 0, win);
				MPI_Get(&next, 1, MPI_AINT, *trank, NEXT_DISP(*tdisp), 1, MPI_AINT,
					win);
				MPI_Win_unlock(*trank, win);
			}
		} while (next == 0);
		*trank = got;
		*tdisp = next;
	}
}

/* rank 0 walks the list from head: each rank's elements counted */
static void ll_check(MPI_Win win, MPI_Aint head, int lockall, const char *what)
{
	char name[96];
	if (rank == 0) {
		int counts[SLOTS] = {0}, n = 0, trank = 0, bad = 0;
		MPI_Aint tdisp = head;
		if (lockall)
			MPI_Win_lock_all(0, win);
		while (trank != -1 && n <= size * LL_PER_RANK + 1) {
			struct elem e;
			if (!lockall)
				MPI_Win_lock(MPI_LOCK_EXCLUSIVE, trank, 0, win);
			MPI_Get(&e, (int)sizeof(e), MPI_BYTE, trank, tdisp, (int)sizeof(e), MPI_BYTE,
				win);
			if (lockall)
				MPI_Win_flush(trank, win);
			else
				MPI_Win_unlock(trank, win);
			if (n > 0) {
				if (e.value >= 0 && e.value < size)
					counts[e.value]++;
				else
					bad++;
			}
			n++;
			trank = e.next_rank;
			tdisp = e.next_disp;
		}
		if (lockall)
			MPI_Win_unlock_all(win);
		snprintf(name, sizeof(name), "linked_list.%s.length", what);
		checki(n - 1, size * LL_PER_RANK, name);
		snprintf(name, sizeof(name), "linked_list.%s.values", what);
		checki(bad, 0, name);
		for (int r = 0; r < size; r++) {
			snprintf(name, sizeof(name), "linked_list.%s.rank%d", what, r);
			checki(counts[r], LL_PER_RANK, name);
		}
	}
	MPI_Barrier(W);
}

static void linked_list(void)
{
	MPI_Win win;
	struct elem *keep[2 * LL_PER_RANK + 4];
	int nkeep = 0;
	MPI_Win_create_dynamic(MPI_INFO_NULL, W, &win);

	/* rank 0 spins on exclusive epochs of its own window until the last
	 * rank's put lands there: its epochs must let the put through */
	MPI_Aint flagd = rank == 0 ? ll_alloc(win, 0, keep, &nkeep) : 0;
	MPI_Bcast(&flagd, 1, MPI_AINT, 0, W);
	if (rank == size - 1) {
		int one = 1;
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		MPI_Put(&one, 1, MPI_INT, 0, flagd, 1, MPI_INT, win);
		MPI_Win_unlock(0, win);
	}
	if (rank == 0) {
		int seen = 0, spins = 0;
		while (!seen) {
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
			MPI_Get(&seen, 1, MPI_INT, 0, flagd, 1, MPI_INT, win);
			MPI_Win_unlock(0, win);
			spins++;
		}
		checki(seen, 1, "linked_list.self_spin");
	}
	MPI_Barrier(W);

	for (int lockall = 0; lockall < 2; lockall++) {
		MPI_Aint head = rank == 0 ? ll_alloc(win, -1, keep, &nkeep) : 0;
		MPI_Bcast(&head, 1, MPI_AINT, 0, W);
		int trank = 0;
		MPI_Aint tdisp = head;
		if (lockall)
			MPI_Win_lock_all(0, win);
		for (int i = 0; i < LL_PER_RANK; i++)
			ll_append(win, &trank, &tdisp, ll_alloc(win, rank, keep, &nkeep), lockall);
		if (lockall)
			MPI_Win_unlock_all(win);
		MPI_Barrier(W);
		ll_check(win, head, lockall, lockall ? "lockall" : "exclusive");
	}
	MPI_Win_free(&win);
	for (int i = 0; i < nkeep; i++)
		MPI_Free_mem(keep[i]);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	if (size > SLOTS) {
		if (rank == 0)
			printf("rma_dyn: at most %d ranks\n", SLOTS);
		MPI_Finalize();
		return 1;
	}
	dynamic_window();
	adjacent_regions();
	request_based();
	shared_window();
	linked_list();
	return suite_finish("rma_dyn");
}
