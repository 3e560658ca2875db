/* Accesses a dynamic window cannot serve (BCS-MPI's own answers: MPI leaves
 * them erroneous, and MPICH does not check them): a put or get into memory
 * the target detached is MPI_ERR_RMA_RANGE at the origin, the target's
 * batch refused whole (its memory untouched, detached or not), and the
 * target goes on serving; attach and detach errors; request-based
 * operations outside a passive-target epoch.
 *   rma_range         the checks, MPI_ERRORS_RETURN on the windows
 *   rma_range fatal   a put into detached memory under MPI_ERRORS_ARE_FATAL:
 *                     prints "fatal: before", the job ends with the error */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	int fatal = argc > 1 && strcmp(argv[1], "fatal") == 0;
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	MPI_Win win;
	MPI_Win_create_dynamic(MPI_INFO_NULL, W, &win);
	if (!fatal)
		MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	int a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
	MPI_Win_attach(win, a, sizeof(a));
	MPI_Win_attach(win, b, sizeof(b));
	MPI_Aint mine[2], *all = malloc((size_t)size * 2 * sizeof(MPI_Aint));
	MPI_Get_address(a, &mine[0]);
	MPI_Get_address(b, &mine[1]);
	MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, W);
	/* b goes; its memory stays, so a put that reached it would show */
	MPI_Win_detach(win, b);
	MPI_Barrier(W);
	int v = 100 + rank;
	if (fatal) {
		if (rank == 0) {
			printf("fatal: before\n");
			fflush(stdout);
		}
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
		MPI_Put(&v, 1, MPI_INT, right, all[2 * right + 1], 1, MPI_INT, win);
		MPI_Win_unlock(right, win);
		printf("fatal: after\n");
		MPI_Finalize();
		return 0;
	}

	/* a batch with a put into a and one into detached b: refused whole */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
	MPI_Put(&v, 1, MPI_INT, right, all[2 * right], 1, MPI_INT, win);
	MPI_Put(&v, 1, MPI_INT, right, MPI_Aint_add(all[2 * right + 1], sizeof(int)), 1, MPI_INT,
		win);
	checkrc(MPI_Win_unlock(right, win), MPI_ERR_RMA_RANGE, "range.put_detached");
	/* one past the end of a, and straddling its end */
	MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
	MPI_Put(&v, 1, MPI_INT, right, MPI_Aint_add(all[2 * right], sizeof(a)), 1, MPI_INT, win);
	checkrc(MPI_Win_unlock(right, win), MPI_ERR_RMA_RANGE, "range.put_past_end");
	int two[2] = {v, v};
	MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
	MPI_Put(two, 2, MPI_INT, right, MPI_Aint_add(all[2 * right], 3 * sizeof(int)), 2, MPI_INT,
		win);
	checkrc(MPI_Win_unlock(right, win), MPI_ERR_RMA_RANGE, "range.put_straddling_end");
	MPI_Barrier(W);
	check(a[0] == 1 && a[1] == 2 && a[2] == 3 && a[3] == 4, "range.attached_untouched");
	check(b[0] == 5 && b[1] == 6 && b[2] == 7 && b[3] == 8, "range.detached_untouched");
	MPI_Barrier(W);

	/* the target still serves what is attached */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
	MPI_Put(&v, 1, MPI_INT, right, all[2 * right], 1, MPI_INT, win);
	checkrc(MPI_Win_unlock(right, win), MPI_SUCCESS, "range.put_attached_after");
	MPI_Barrier(W);
	checki(a[0], 100 + left, "range.put_attached_landed");
	MPI_Barrier(W);

	/* a get: the result buffer is left alone; then through a request */
	int got = -1;
	MPI_Win_lock_all(0, win);
	MPI_Get(&got, 1, MPI_INT, right, all[2 * right + 1], 1, MPI_INT, win);
	checkrc(MPI_Win_flush(right, win), MPI_ERR_RMA_RANGE, "range.get_detached");
	checki(got, -1, "range.get_result_untouched");
	MPI_Request r;
	MPI_Rget(&got, 1, MPI_INT, right, all[2 * right + 1], 1, MPI_INT, win, &r);
	checkrc(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_RMA_RANGE, "range.rget_detached");
	MPI_Rget(&got, 1, MPI_INT, right, MPI_Aint_add(all[2 * right], sizeof(int)), 1, MPI_INT,
		 win, &r);
	checkrc(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS, "range.rget_attached");
	checki(got, 2, "range.rget_attached_value");
	checkrc(MPI_Win_unlock_all(win), MPI_SUCCESS, "range.unlock_all");

	/* attach and detach errors, local */
	checkrc(MPI_Win_attach(win, &a[2], sizeof(int)), MPI_ERR_RMA_ATTACH, "attach.overlap");
	checkrc(MPI_Win_detach(win, b), MPI_ERR_RMA_ATTACH, "detach.not_attached");
	/* outside a passive-target epoch */
	checkrc(MPI_Rput(&v, 1, MPI_INT, right, all[2 * right], 1, MPI_INT, win, &r),
		MPI_ERR_RMA_SYNC, "rput.no_epoch");
	check(r == MPI_REQUEST_NULL, "rput.no_epoch_null");
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(MPI_ERR_RMA_RANGE, text, &len);
	check(len > 0 && strstr(text, "not attached") != NULL, "error_string.rma_range");
	MPI_Win_detach(win, a);
	MPI_Barrier(W);
	checkrc(MPI_Win_free(&win), MPI_SUCCESS, "win_free");

	/* not a dynamic window, not a shared one */
	MPI_Win sw;
	MPI_Win_create(a, sizeof(a), sizeof(int), MPI_INFO_NULL, W, &sw);
	MPI_Win_set_errhandler(sw, MPI_ERRORS_RETURN);
	checkrc(MPI_Win_attach(sw, b, sizeof(b)), MPI_ERR_RMA_FLAVOR, "attach.not_dynamic");
	MPI_Aint sz;
	int unit, *p;
	checkrc(MPI_Win_shared_query(sw, 0, &sz, &unit, &p), MPI_ERR_RMA_FLAVOR,
		"shared_query.not_shared");
	MPI_Win_free(&sw);
	free(all);
	return suite_finish("rma_range");
}
