/* The program's own error handlers: MPI_Comm_create_errhandler and
 * MPI_Win_create_errhandler, set, got, inherited by a duplicate, called by
 * an error of a call and by MPI_Comm/Win_call_errhandler, still working
 * once freed while attached, and a thousand made and freed on one window
 * (MPICH's rma/wincall found a leak of handlers that way). */
#include "suite.h"

static int calls, last_class, last_code;
static MPI_Comm last_comm;
static MPI_Win last_win;

static void on_comm(MPI_Comm *comm, int *code, ...)
{
	calls++;
	last_comm = *comm;
	last_code = *code;
	MPI_Error_class(*code, &last_class);
}

static void on_win(MPI_Win *win, int *code, ...)
{
	calls++;
	last_win = *win;
	last_code = *code;
	MPI_Error_class(*code, &last_class);
}

static int err_class(int rc)
{
	int c = -1;
	MPI_Error_class(rc, &c);
	return c;
}

static void comm_handlers(void)
{
	MPI_Errhandler eh, got;
	MPI_Comm d, dd;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	checkrc(MPI_Comm_create_errhandler(on_comm, &eh), MPI_SUCCESS, "comm: create");
	checkrc(MPI_Comm_set_errhandler(d, eh), MPI_SUCCESS, "comm: set");
	MPI_Comm_get_errhandler(d, &got);
	check(got == eh, "comm: get gives it back");
	MPI_Errhandler_free(&got);

	/* an error of a call: the handler, then the call returns the error */
	calls = 0;
	int x = 1;
	int rc = MPI_Send(&x, 1, MPI_INT, size, 0, d);
	checki(calls, 1, "comm: a send to no rank calls it once");
	check(last_comm == d, "comm: with the communicator");
	checki(last_class, MPI_ERR_RANK, "comm: with the error");
	checki(err_class(rc), MPI_ERR_RANK, "comm: and the send returns it");

	calls = 0;
	checkrc(MPI_Comm_call_errhandler(d, MPI_ERR_OTHER), MPI_SUCCESS, "comm: call returns");
	checki(calls, 1, "comm: call calls it once");
	checki(last_code, MPI_ERR_OTHER, "comm: with the code given");

	/* a duplicate inherits it; freed while attached, it still works */
	MPI_Comm_dup(d, &dd);
	MPI_Errhandler_free(&eh);
	check(eh == MPI_ERRHANDLER_NULL, "comm: free sets the handle to null");
	calls = 0;
	MPI_Comm_call_errhandler(dd, MPI_ERR_OTHER);
	checki(calls, 1, "comm: the duplicate's, freed, still called");
	check(last_comm == dd, "comm: with the duplicate");
	MPI_Comm_free(&dd);
	MPI_Comm_free(&d);

	/* the world's own is untouched: it returns errors (main sets that) */
	calls = 0;
	rc = MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
	checki(calls, 0, "comm: the world's errors call no handler");
	checki(err_class(rc), MPI_ERR_RANK, "comm: the world's send returns the error");
}

static void win_handlers(void)
{
	int buf[2] = {0, 0};
	MPI_Win win;
	MPI_Errhandler eh;
	MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	checkrc(MPI_Win_create_errhandler(on_win, &eh), MPI_SUCCESS, "win: create");
	checkrc(MPI_Win_set_errhandler(win, eh), MPI_SUCCESS, "win: set");
	calls = 0;
	checkrc(MPI_Win_call_errhandler(win, MPI_ERR_OTHER), MPI_SUCCESS, "win: call returns");
	checki(calls, 1, "win: call calls it once");
	check(last_win == win, "win: with the window");
	checki(last_code, MPI_ERR_OTHER, "win: with the code given");

	calls = 0;
	int x = 5;
	MPI_Win_fence(0, win);
	int rc = MPI_Put(&x, 1, MPI_INT, size, 0, 1, MPI_INT, win);
	MPI_Win_fence(0, win);
	checki(calls, 1, "win: a put to no rank calls it once");
	checki(last_class, MPI_ERR_RANK, "win: with the error");
	checki(err_class(rc), MPI_ERR_RANK, "win: and the put returns it");

	MPI_Errhandler_free(&eh);
	/* a handler made since must not take the freed one's place */
	MPI_Errhandler other;
	MPI_Comm_create_errhandler(on_comm, &other);
	calls = 0;
	last_win = MPI_WIN_NULL;
	MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
	checki(calls, 1, "win: freed while set, still called");
	check(last_win == win, "win: freed while set, still the window's handler");
	MPI_Errhandler_free(&other);

	/* made, set and freed a thousand times: each one set replaces the
	 * last, which is then held by nothing */
	int ok = 1;
	for (int i = 0; i < 1000 && ok; i++) {
		ok = MPI_Win_create_errhandler(on_win, &eh) == MPI_SUCCESS &&
		     MPI_Win_set_errhandler(win, eh) == MPI_SUCCESS;
		calls = 0;
		MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
		ok = ok && calls == 1;
		MPI_Errhandler_free(&eh);
	}
	check(ok, "win: a thousand made, set, called and freed");
	MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	comm_handlers();
	win_handlers();
	return suite_finish("errh");
}
