/* Ready sends, a request's status without its completion, statuses set by
 * the program, generalized requests and MPI_Win_test: MPI_Rsend and
 * MPI_Irsend to a receive posted before a barrier (a derived datatype
 * too), MPI_Request_get_status polled until a receive is complete (its
 * status, and the same from the MPI_Wait that follows), on
 * MPI_REQUEST_NULL and on an inactive persistent request;
 * MPI_Status_set_cancelled and MPI_Status_set_elements(_x) read back with
 * MPI_Test_cancelled, MPI_Get_elements(_x) and MPI_Get_count; a
 * generalized request's callbacks (its status from the query, the free
 * callback's count, the cancel callback's "complete" argument); an exposure
 * epoch ended by MPI_Win_test polled until true. Every outcome printed is
 * what MPI defines, never how many polls it took. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

/* each rank sends to the next: its receive is posted before the barrier,
 * so the ready send finds it */
static void ready_sends(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int in[4] = {0}, out[4], vin[6] = {0};
	MPI_Request r[2];
	MPI_Datatype vec;
	MPI_Type_vector(2, 1, 3, MPI_INT, &vec); /* elements 0 and 3 */
	MPI_Type_commit(&vec);
	MPI_Irecv(in, 4, MPI_INT, prev, 1, W, &r[0]);
	MPI_Irecv(vin, 1, vec, prev, 2, W, &r[1]);
	MPI_Barrier(W);
	for (int k = 0; k < 4; k++)
		out[k] = 100 * rank + k;
	checkrc(MPI_Rsend(out, 4, MPI_INT, next, 1, W), MPI_SUCCESS, "rsend");
	MPI_Request s;
	int two[2] = {7 * rank, 7 * rank + 1};
	checkrc(MPI_Irsend(two, 2, MPI_INT, next, 2, W, &s), MPI_SUCCESS, "irsend");
	MPI_Wait(&s, MPI_STATUS_IGNORE);
	MPI_Status st[2];
	MPI_Waitall(2, r, st);
	check_status(&st[0], prev, 1, MPI_INT, 4, "rsend: status");
	check(in[0] == 100 * prev && in[3] == 100 * prev + 3, "rsend: data");
	check_status(&st[1], prev, 2, vec, 1, "irsend: status (vector)");
	check(vin[0] == 7 * prev && vin[3] == 7 * prev + 1 && vin[1] == 0, "irsend: data (vector)");
	MPI_Type_free(&vec);
	/* to MPI_PROC_NULL: nothing to do */
	checkrc(MPI_Rsend(out, 4, MPI_INT, MPI_PROC_NULL, 1, W), MPI_SUCCESS, "rsend to PROC_NULL");
	checkrc(MPI_Rsend(out, 4, MPI_INT, size, 1, W), MPI_ERR_RANK, "rsend: bad rank");
}

static void get_status(void)
{
	int flag = 0;
	MPI_Status st;
	st.MPI_SOURCE = 5;
	st.MPI_TAG = 5;
	checkrc(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st), MPI_SUCCESS,
		"get_status: REQUEST_NULL");
	check(flag && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG &&
		      st.MPI_ERROR == MPI_SUCCESS,
	      "get_status: REQUEST_NULL: flag, empty status");
	flag = 0;
	MPI_Request_get_status(MPI_REQUEST_NULL, &flag, MPI_STATUS_IGNORE);
	check(flag, "get_status: REQUEST_NULL, STATUS_IGNORE");

	/* rank 0 sends 3 ints to the last rank by MPI_Ssend; the last rank
	 * polls its receive's status, which leaves the request, then waits */
	int last = size - 1, buf[3] = {0};
	MPI_Request r = MPI_REQUEST_NULL;
	if (rank == last)
		MPI_Irecv(buf, 3, MPI_INT, 0, 10, W, &r);
	if (rank == 0) {
		int out[3] = {11, 12, 13};
		MPI_Ssend(out, 3, MPI_INT, last, 10, W);
	}
	if (rank == last) {
		flag = 0;
		while (!flag)
			MPI_Request_get_status(r, &flag, &st);
		check_status(&st, 0, 10, MPI_INT, 3, "get_status: complete receive");
		check(r != MPI_REQUEST_NULL, "get_status: the request stays");
		MPI_Status st2;
		checkrc(MPI_Wait(&r, &st2), MPI_SUCCESS, "get_status: then wait");
		check_status(&st2, 0, 10, MPI_INT, 3, "get_status: the wait's status");
		check(r == MPI_REQUEST_NULL && buf[0] == 11 && buf[2] == 13, "get_status: data");
	}
	/* an inactive persistent request: complete, with an empty status */
	MPI_Request p;
	MPI_Recv_init(buf, 3, MPI_INT, MPI_ANY_SOURCE, 3, W, &p);
	flag = 0;
	st.MPI_TAG = 5;
	MPI_Request_get_status(p, &flag, &st);
	check(flag && st.MPI_TAG == MPI_ANY_TAG && st.MPI_SOURCE == MPI_ANY_SOURCE,
	      "get_status: inactive persistent request");
	MPI_Request_free(&p);
	MPI_Barrier(W);
}

static void set_status(void)
{
	MPI_Status st;
	int flag = -1, n = -1;
	MPI_Count x = -1;
	MPI_Status_set_cancelled(&st, 1);
	MPI_Test_cancelled(&st, &flag);
	check(flag == 1, "set_cancelled 1");
	MPI_Status_set_cancelled(&st, 0);
	MPI_Test_cancelled(&st, &flag);
	check(flag == 0, "set_cancelled 0");
	checkrc(MPI_Status_set_elements(&st, MPI_INT, 5), MPI_SUCCESS, "set_elements");
	MPI_Get_elements(&st, MPI_INT, &n);
	checki(n, 5, "set_elements: get_elements");
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, 5, "set_elements: get_count");
	MPI_Get_count(&st, MPI_BYTE, &n);
	checki(n, 5 * (int)sizeof(int), "set_elements: bytes");
	MPI_Count big = 0x7654321ff1234567LL;
	checkrc(MPI_Status_set_elements_x(&st, MPI_BYTE, big), MPI_SUCCESS, "set_elements_x");
	MPI_Get_elements_x(&st, MPI_BYTE, &x);
	check(x == big, "set_elements_x: get_elements_x of 2^62 and more");
	MPI_Status_set_elements_x(&st, MPI_INT, 3);
	MPI_Get_elements_x(&st, MPI_INT, &x);
	checki(x, 3, "set_elements_x: 3 ints");
}

/* ---- a generalized request: a counter of its callbacks' calls */
struct gstate {
	int queried, freed, cancelled, complete_seen;
};

static int g_query(void *extra, MPI_Status *st)
{
	struct gstate *g = extra;
	g->queried++;
	st->MPI_SOURCE = 3;
	st->MPI_TAG = 44;
	MPI_Status_set_cancelled(st, 0);
	MPI_Status_set_elements(st, MPI_INT, 6);
	return MPI_SUCCESS;
}

static int g_free(void *extra)
{
	((struct gstate *)extra)->freed++;
	return MPI_SUCCESS;
}

static int g_cancel(void *extra, int complete)
{
	struct gstate *g = extra;
	g->cancelled++;
	g->complete_seen = complete;
	return MPI_SUCCESS;
}

static void grequests(void)
{
	struct gstate g = {0};
	MPI_Request r;
	int flag = -1, n = -1;
	checkrc(MPI_Grequest_start(g_query, g_free, g_cancel, &g, &r), MPI_SUCCESS,
		"grequest: start");
	MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
	check(flag == 0 && r != MPI_REQUEST_NULL, "grequest: not complete before complete");
	MPI_Cancel(&r);
	check(g.cancelled == 1 && g.complete_seen == 0, "grequest: cancel before complete");
	checkrc(MPI_Grequest_complete(r), MPI_SUCCESS, "grequest: complete");
	MPI_Status st;
	MPI_Request_get_status(r, &flag, &st);
	check(flag && st.MPI_TAG == 44 && g.queried == 1 && g.freed == 0,
	      "grequest: get_status queries, does not free");
	checkrc(MPI_Wait(&r, &st), MPI_SUCCESS, "grequest: wait");
	MPI_Get_count(&st, MPI_INT, &n);
	check(r == MPI_REQUEST_NULL && st.MPI_SOURCE == 3 && st.MPI_TAG == 44 && n == 6,
	      "grequest: the query's status");
	checki(g.freed, 1, "grequest: freed once");
	/* cancelled after it completed */
	g = (struct gstate){0};
	MPI_Grequest_start(g_query, g_free, g_cancel, &g, &r);
	MPI_Grequest_complete(r);
	MPI_Cancel(&r);
	check(g.complete_seen == 1, "grequest: cancel after complete");
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	checki(g.freed, 1, "grequest: wait, STATUS_IGNORE, freed");
}

/* rank 0 exposes its window to every other rank, which puts its rank in
 * its slot; rank 0 ends the epoch by MPI_Win_test */
static void win_test(void)
{
	int *mem, zero = 0;
	MPI_Win win;
	MPI_Alloc_mem((MPI_Aint)(size * (int)sizeof(int)), MPI_INFO_NULL, &mem);
	for (int i = 0; i < size; i++)
		mem[i] = -1;
	MPI_Win_create(mem, (MPI_Aint)(size * (int)sizeof(int)), sizeof(int), MPI_INFO_NULL, W,
		       &win);
	MPI_Group wg, g;
	MPI_Comm_group(W, &wg);
	int flag = -1;
	if (rank == 0) {
		int n = size - 1;
		if (n > 0) {
			MPI_Group_excl(wg, 1, &zero, &g);
			MPI_Win_post(g, 0, win);
			MPI_Group_free(&g);
			int rc = MPI_SUCCESS;
			flag = 0;
			while (!flag && rc == MPI_SUCCESS)
				rc = MPI_Win_test(win, &flag);
			checkrc(rc, MPI_SUCCESS, "win_test: polled until true");
		}
		int ok = 1;
		for (int i = 1; i < size; i++)
			ok &= mem[i] == i;
		check(ok && mem[0] == -1, "win_test: every origin's put landed");
	} else {
		MPI_Group_incl(wg, 1, &zero, &g);
		MPI_Win_start(g, 0, win);
		MPI_Put(&rank, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
		MPI_Win_complete(win);
		MPI_Group_free(&g);
	}
	MPI_Group_free(&wg);
	MPI_Win_free(&win);
	MPI_Free_mem(mem);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	ready_sends();
	get_status();
	set_status();
	grequests();
	win_test();
	return suite_finish("reqstat");
}
