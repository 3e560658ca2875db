/* What one passive-target epoch and one empty MPI_Iprobe cost, the calls
 * MPICH's rma/linked_list programs are made of: every rank times each call
 * (or whole epoch) ITERS times and rank 0 prints, per kind, the median,
 * the 90th percentile, the mean and the largest over every rank's samples,
 * one JSON line each (the mean and the largest show an origin starved).
 *
 *   iprobe_empty        MPI_Iprobe(ANY_SOURCE, ANY_TAG) with nothing to find
 *   excl_cas_right      lock exclusive, Compare_and_swap, unlock: right neighbour
 *   excl_put_right      lock exclusive, Put, unlock: right neighbour
 *   excl_get_rank0      lock exclusive, Get, unlock: every rank on rank 0
 *                       (contention; rank 0's are epochs of its own window)
 *   lockall_fop_flush   Fetch_and_op and Win_flush to the right neighbour
 *                       inside one lock_all
 *   lockall_unlockall   an empty lock_all epoch
 *
 * usage: rma_epochs [--iters N] [--impl NAME] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

enum { IPROBE, CAS, PUT, GET0, FOP, LOCKALL, KINDS };
static const char *names[KINDS] = {"iprobe_empty", "excl_cas_right", "excl_put_right",
				   "excl_get_rank0", "lockall_fop_flush", "lockall_unlockall"};

int main(int argc, char **argv)
{
	int iters = 40;
	const char *impl = "?";
	MPI_Init(&argc, &argv);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--iters"))
			iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--impl"))
			impl = argv[i + 1];
	}
	if (iters < 1 || iters > 100000)
		iters = 40;
	int me, np;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	long *base;
	MPI_Win win;
	MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	double *t = malloc(sizeof(double) * (size_t)iters);
	double *all = malloc(sizeof(double) * (size_t)iters * (size_t)np);
	if (!t || !all)
		MPI_Abort(MPI_COMM_WORLD, 1);
	int right = (me + 1) % np;
	long one = 1, res = 0, cmp = 0;
	for (int k = 0; k < KINDS; k++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (k == FOP)
			MPI_Win_lock_all(0, win);
		for (int i = 0; i < iters; i++) {
			int flag;
			double t0 = MPI_Wtime();
			switch (k) {
			case IPROBE:
				MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
					   MPI_STATUS_IGNORE);
				break;
			case CAS:
				MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
				MPI_Compare_and_swap(&one, &cmp, &res, MPI_LONG, right, 0, win);
				MPI_Win_unlock(right, win);
				break;
			case PUT:
				MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
				MPI_Put(&one, 1, MPI_LONG, right, 1, 1, MPI_LONG, win);
				MPI_Win_unlock(right, win);
				break;
			case GET0:
				MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
				MPI_Get(&res, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win);
				MPI_Win_unlock(0, win);
				break;
			case FOP:
				MPI_Fetch_and_op(&one, &res, MPI_LONG, right, 3, MPI_SUM, win);
				MPI_Win_flush(right, win);
				break;
			case LOCKALL:
				MPI_Win_lock_all(0, win);
				MPI_Win_unlock_all(win);
				break;
			}
			t[i] = (MPI_Wtime() - t0) * 1e3;
		}
		if (k == FOP)
			MPI_Win_unlock_all(win);
		MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		if (me == 0) {
			int n = iters * np;
			double sum = 0;
			qsort(all, (size_t)n, sizeof(double), cmpd);
			for (int i = 0; i < n; i++)
				sum += all[i];
			printf("{\"bench\":\"rma_epochs\",\"impl\":\"%s\",\"ranks\":%d,\"kind\":\"%s\","
			       "\"iters\":%d,\"median_ms\":%.4f,\"p90_ms\":%.4f,\"mean_ms\":%.4f,"
			       "\"max_ms\":%.4f}\n",
			       impl, np, names[k], iters, all[n / 2], all[(n * 9) / 10], sum / n,
			       all[n - 1]);
			fflush(stdout);
		}
	}
	MPI_Win_free(&win);
	free(t);
	free(all);
	MPI_Finalize();
	return 0;
}
