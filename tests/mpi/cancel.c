/* MPI_Cancel of sends and receives, with BCS-MPI's answers: MPI lets a
 * cancel of an unmatched send succeed or fail, so MPICH is no reference
 * here (Debian's cancels only a send to its own rank); BCS-MPI decides at
 * the job's quiescence, so the outcome depends only on what the program
 * posts. Sends of 4 bytes (in the descriptor), 64 KiB and 1 MiB (in bulk),
 * to the next rank (another node or the same) and to itself:
 * - unmatched when the job waits: cancelled, and the next message of that
 *   tag reaches the receive;
 * - matched before the cancel: not cancelled, the data arrived;
 * - a receive posted while the sender computes and then cancels, or
 *   computes before it cancels: the receive takes the message, whichever
 *   is first (the cancel waits for quiescence, and the receiver never
 *   waited with nothing posted);
 * - an Issend a probe saw, cancelled and freed (MPICH's issendselfcancel);
 * - a receive cancelled, the next message of its tag to the next one. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;
static const int sizes[] = {4, 65536, 1 << 20};

static void busy_ms(int ms)
{
	struct timespec t = {0, ms * 1000000L};
	nanosleep(&t, NULL);
}

static int cancelled(MPI_Status *st)
{
	int flag = -1;
	MPI_Test_cancelled(st, &flag);
	return flag;
}

static void unmatched(int n)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	char *b = calloc((size_t)n, 1), *r = calloc((size_t)n, 1);
	MPI_Request rq;
	MPI_Status st;
	b[0] = 1;
	MPI_Isend(b, n, MPI_CHAR, right, 112, W, &rq);
	checkrc(MPI_Cancel(&rq), MPI_SUCCESS, nm("unmatched.%d.cancel_rc", n));
	MPI_Wait(&rq, &st);
	checki(cancelled(&st), 1, nm("unmatched.%d.cancelled", n));
	b[0] = 2;
	MPI_Sendrecv(b, n, MPI_CHAR, right, 112, r, n, MPI_CHAR, left, 112, W, &st);
	checki(r[0], 2, nm("unmatched.%d.next_message_received", n));
	free(b);
	free(r);
}

static void matched(int n)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	char *b = calloc((size_t)n, 1), *r = calloc((size_t)n, 1);
	MPI_Request rq;
	MPI_Status st;
	b[n - 1] = 7;
	MPI_Isend(b, n, MPI_CHAR, right, 113, W, &rq);
	MPI_Recv(r, n, MPI_CHAR, left, 113, W, MPI_STATUS_IGNORE);
	MPI_Barrier(W);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	checki(cancelled(&st), 0, nm("matched.%d.not_cancelled", n));
	checki(r[n - 1], 7, nm("matched.%d.data", n));
	free(b);
	free(r);
}

/* who computes (sleeps) first: the sender before its cancel (0) or the
 * receiver before its receive (1); the outcome must not change */
static void racing(int n, int late)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	char *b = calloc((size_t)n, 1), *r = calloc((size_t)n, 1);
	MPI_Request rq, rr;
	MPI_Status st;
	b[0] = 5;
	MPI_Isend(b, n, MPI_CHAR, right, 116, W, &rq);
	if (late == 0)
		busy_ms(20);
	MPI_Cancel(&rq);
	if (late == 1)
		busy_ms(20);
	MPI_Irecv(r, n, MPI_CHAR, left, 116, W, &rr);
	MPI_Wait(&rq, &st);
	checki(cancelled(&st), 0, nm("racing.%d.%s_late.not_cancelled", n,
				     late ? "receiver" : "sender"));
	MPI_Wait(&rr, MPI_STATUS_IGNORE);
	checki(r[0], 5, nm("racing.%d.%s_late.data", n, late ? "receiver" : "sender"));
	free(b);
	free(r);
}

static void to_self(void)
{
	MPI_Request rq;
	MPI_Status st;
	int v = 3, w = -1;
	MPI_Issend(&v, 1, MPI_INT, rank, 114, W, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	checki(cancelled(&st), 1, "self.issend_cancelled");
	v = 4;
	MPI_Sendrecv(&v, 1, MPI_INT, rank, 114, &w, 1, MPI_INT, rank, 114, W, &st);
	checki(w, 4, "self.next_message_received");

	/* MPICH's issendselfcancel: probed, cancelled, freed, never waited */
	MPI_Issend(NULL, 0, MPI_BYTE, 0, 123, MPI_COMM_SELF, &rq);
	MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &st);
	check(st.MPI_SOURCE == 0 && st.MPI_TAG == 123, "self.probe_sees_it");
	MPI_Cancel(&rq);
	check(rq != MPI_REQUEST_NULL, "self.cancel_keeps_request");
	MPI_Request_free(&rq);
	MPI_Irecv(NULL, 0, MPI_BYTE, 0, 123, MPI_COMM_SELF, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	check(rq == MPI_REQUEST_NULL, "self.recv_wait_returns");
}

static void receive(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int a = -1, c = -1, v = rank;
	MPI_Request rq;
	MPI_Status st;
	MPI_Irecv(&a, 1, MPI_INT, left, 115, W, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	checki(cancelled(&st), 1, "recv.cancelled");
	MPI_Sendrecv(&v, 1, MPI_INT, right, 115, &c, 1, MPI_INT, left, 115, W, &st);
	check(a == -1 && c == left, "recv.message_goes_to_next_receive");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		unmatched(sizes[k]);
		matched(sizes[k]);
		racing(sizes[k], 0);
		racing(sizes[k], 1);
	}
	to_self();
	receive();
	return suite_finish("cancel");
}
