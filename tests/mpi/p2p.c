/* Point-to-point conformance: blocking and non-blocking sends and receives,
 * status fields and counts, truncation, self-sends, zero-length and large
 * messages, thousands of outstanding requests, wildcards, PROC_NULL, probes,
 * the Wait/Test family (Testsome too), Request_free, Cancel of a receive, synchronous sends
 * and argument errors under MPI_ERRORS_RETURN.
 *
 * Every rank sends to its right neighbour and receives from its left one (with
 * one rank both are itself), so each test runs on any number of ranks. */
#include "suite.h"
#include <stdint.h>

static int right, left;
static MPI_Comm W = MPI_COMM_WORLD;

/* a value that says who sent it and which element it is */
static int val(int from, int i) { return from * 1000003 + i * 7 + 1; }

static void basic(void)
{
	int out[16], in[16], i;
	MPI_Status st;
	MPI_Request rq;
	for (i = 0; i < 16; i++)
		out[i] = val(rank, i);

	/* Send / Recv with a pre-posted Irecv, so the ring cannot deadlock */
	memset(in, 0, sizeof in);
	MPI_Irecv(in, 16, MPI_INT, left, 11, W, &rq);
	checkrc(MPI_Send(out, 16, MPI_INT, right, 11, W), MPI_SUCCESS, "send.rc");
	MPI_Wait(&rq, &st);
	check(rq == MPI_REQUEST_NULL, "wait.sets_request_null");
	check_status(&st, left, 11, MPI_INT, 16, "send.status");
	int good = 1;
	for (i = 0; i < 16; i++)
		good &= in[i] == val(left, i);
	check(good, "send.data");
	int bytes;
	MPI_Get_count(&st, MPI_BYTE, &bytes);
	checki(bytes, 16 * (int)sizeof(int), "get_count.bytes");

	/* Isend / Recv */
	memset(in, 0, sizeof in);
	MPI_Isend(out, 16, MPI_INT, right, 12, W, &rq);
	MPI_Recv(in, 16, MPI_INT, left, 12, W, &st);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	check_status(&st, left, 12, MPI_INT, 16, "isend_recv.status");
	check(in[15] == val(left, 15) && in[0] == val(left, 0), "isend_recv.data");

	/* a receive larger than the message: the count says what came */
	memset(in, 0, sizeof in);
	MPI_Irecv(in, 16, MPI_INT, left, 13, W, &rq);
	MPI_Send(out, 5, MPI_INT, right, 13, W);
	MPI_Wait(&rq, &st);
	check_status(&st, left, 13, MPI_INT, 5, "short_message.count");
	check(in[4] == val(left, 4) && in[5] == 0, "short_message.rest_untouched");

	/* Get_count of a byte count that is not a whole number of ints */
	char cb[7] = "abcdef", cin[16];
	MPI_Irecv(cin, 16, MPI_CHAR, left, 14, W, &rq);
	MPI_Send(cb, 7, MPI_CHAR, right, 14, W);
	MPI_Wait(&rq, &st);
	int n;
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, MPI_UNDEFINED, "get_count.undefined");
	check(memcmp(cin, "abcdef", 7) == 0, "char.data");

	/* Sendrecv: different send and receive counts and tags */
	memset(in, 0, sizeof in);
	MPI_Sendrecv(out, 3, MPI_INT, right, 15, in, 16, MPI_INT, left, 15, W, &st);
	check_status(&st, left, 15, MPI_INT, 3, "sendrecv.status");
	check(in[2] == val(left, 2), "sendrecv.data");

	/* Sendrecv_replace: the buffer is sent then overwritten */
	int rep[8];
	for (i = 0; i < 8; i++)
		rep[i] = val(rank, i);
	MPI_Sendrecv_replace(rep, 8, MPI_INT, right, 16, left, 16, W, &st);
	check_status(&st, left, 16, MPI_INT, 8, "sendrecv_replace.status");
	good = 1;
	for (i = 0; i < 8; i++)
		good &= rep[i] == val(left, i);
	check(good, "sendrecv_replace.data");

	/* Ssend and Issend complete once the (pre-posted) receive matched */
	memset(in, 0, sizeof in);
	MPI_Irecv(in, 16, MPI_INT, left, 17, W, &rq);
	checkrc(MPI_Ssend(out, 16, MPI_INT, right, 17, W), MPI_SUCCESS, "ssend.rc");
	MPI_Wait(&rq, &st);
	check_status(&st, left, 17, MPI_INT, 16, "ssend.status");
	MPI_Request two[2];
	MPI_Irecv(in, 16, MPI_INT, left, 18, W, &two[0]);
	MPI_Issend(out, 16, MPI_INT, right, 18, W, &two[1]);
	MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
	check(in[7] == val(left, 7), "issend.data");
}

/* Issend cannot complete before its receive is posted: the receiver posts
 * it only after a "go" that the sender sends after testing. */
static void ssend_semantics(void)
{
	int x = val(rank, 0), y = 0, flag = 1, go = 1, f;
	MPI_Request rq;
	if (size == 1) {
		MPI_Issend(&x, 1, MPI_INT, 0, 20, W, &rq);
		for (int i = 0; i < 3; i++) {
			MPI_Test(&rq, &f, MPI_STATUS_IGNORE);
			flag &= !f;
		}
		check(flag, "issend.pending_until_matched");
		MPI_Recv(&y, 1, MPI_INT, 0, 20, W, MPI_STATUS_IGNORE);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		check(y == x, "issend.self.data");
		return;
	}
	/* pairs (0,1), (2,3), ...: the even one sends */
	int peer = rank ^ 1;
	if (peer >= size)
		return;
	if (rank % 2 == 0) {
		MPI_Issend(&x, 1, MPI_INT, peer, 20, W, &rq);
		for (int i = 0; i < 3; i++) {
			MPI_Test(&rq, &f, MPI_STATUS_IGNORE);
			flag &= !f;
		}
		check(flag, "issend.pending_until_matched");
		MPI_Send(&go, 1, MPI_INT, peer, 21, W);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		check(rq == MPI_REQUEST_NULL, "issend.completes");
	} else {
		MPI_Recv(&go, 1, MPI_INT, peer, 21, W, MPI_STATUS_IGNORE);
		MPI_Recv(&y, 1, MPI_INT, peer, 20, W, MPI_STATUS_IGNORE);
		check(y == val(peer, 0), "issend.data");
	}
}

static void self_sends(void)
{
	int out[4] = { 1, 2, 3, 4 }, in[4] = { 0 };
	MPI_Status st;
	MPI_Request rq;
	MPI_Isend(out, 4, MPI_INT, rank, 30, W, &rq);
	MPI_Recv(in, 4, MPI_INT, rank, 30, W, &st);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	check_status(&st, rank, 30, MPI_INT, 4, "self.isend_recv.status");
	check(in[3] == 4, "self.isend_recv.data");

	memset(in, 0, sizeof in);
	MPI_Irecv(in, 4, MPI_INT, rank, 31, W, &rq);
	MPI_Send(out, 4, MPI_INT, rank, 31, W);
	MPI_Wait(&rq, &st);
	check_status(&st, rank, 31, MPI_INT, 4, "self.irecv_send.status");

	memset(in, 0, sizeof in);
	MPI_Sendrecv(out, 4, MPI_INT, rank, 32, in, 4, MPI_INT, rank, 32, W, &st);
	check(in[0] == 1 && in[3] == 4, "self.sendrecv.data");

	int rep[3] = { 7, 8, 9 };
	MPI_Sendrecv_replace(rep, 3, MPI_INT, rank, 33, rank, 33, W, &st);
	check(rep[0] == 7 && rep[2] == 9, "self.sendrecv_replace.data");
	check_status(&st, rank, 33, MPI_INT, 3, "self.sendrecv_replace.status");

	/* MPI_COMM_SELF */
	memset(in, 0, sizeof in);
	MPI_Sendrecv(out, 4, MPI_INT, 0, 34, in, 4, MPI_INT, 0, 34, MPI_COMM_SELF, &st);
	check_status(&st, 0, 34, MPI_INT, 4, "comm_self.sendrecv.status");
}

static void zero_length(void)
{
	int in[4] = { 5, 5, 5, 5 };
	MPI_Status st;
	MPI_Request rq[2];
	MPI_Irecv(in, 4, MPI_INT, left, 40, W, &rq[0]);
	MPI_Isend(NULL, 0, MPI_INT, right, 40, W, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	MPI_Irecv(NULL, 0, MPI_INT, left, 41, W, &rq[0]);
	MPI_Send(in, 0, MPI_INT, right, 41, W);
	MPI_Wait(&rq[0], &st);
	check_status(&st, left, 41, MPI_INT, 0, "zero.status");
	check(in[0] == 5 && in[3] == 5, "zero.buffer_untouched");
	MPI_Sendrecv(NULL, 0, MPI_BYTE, rank, 42, NULL, 0, MPI_BYTE, rank, 42, W, &st);
	check_status(&st, rank, 42, MPI_BYTE, 0, "zero.self");
	MPI_Irecv(in, 4, MPI_INT, left, 43, W, &rq[0]);
	MPI_Ssend(NULL, 0, MPI_INT, right, 43, W);
	MPI_Wait(&rq[0], &st);
	check_status(&st, left, 43, MPI_INT, 0, "zero.ssend");
}

/* Several MiB, and an odd byte count, so a slice budget must chunk them */
static void large(void)
{
	const int n = 2 * 1024 * 1024 + 3; /* ints: 8 MiB + 12 bytes */
	int *out = malloc((size_t)n * sizeof *out), *in = malloc((size_t)n * sizeof *in);
	MPI_Status st;
	MPI_Request rq;
	for (int i = 0; i < n; i++)
		out[i] = val(rank, i);
	memset(in, 0, (size_t)n * sizeof *in);
	MPI_Irecv(in, n, MPI_INT, left, 50, W, &rq);
	MPI_Send(out, n, MPI_INT, right, 50, W);
	MPI_Wait(&rq, &st);
	check_status(&st, left, 50, MPI_INT, n, "large.status");
	int good = 1;
	for (int i = 0; i < n; i++)
		good &= in[i] == val(left, i);
	check(good, "large.data");

	/* both directions at once, and to itself */
	memset(in, 0, (size_t)n * sizeof *in);
	MPI_Sendrecv(out, n, MPI_INT, left, 51, in, n, MPI_INT, right, 51, W, &st);
	good = 1;
	for (int i = 0; i < n; i++)
		good &= in[i] == val(right, i);
	check(good, "large.sendrecv.data");
	memset(in, 0, (size_t)n * sizeof *in);
	MPI_Irecv(in, n, MPI_INT, rank, 52, W, &rq);
	MPI_Ssend(out, n, MPI_INT, rank, 52, W);
	MPI_Wait(&rq, &st);
	check(memcmp(in, out, (size_t)n * sizeof *in) == 0, "large.self.data");

	/* a large message into a receive buffer that is too small by one byte */
	unsigned char *bin = (unsigned char *)in;
	size_t nb = (size_t)n * sizeof *in;
	memset(bin, 0xee, nb);
	MPI_Irecv(bin, (int)nb - 1, MPI_BYTE, left, 53, W, &rq);
	MPI_Send(out, n, MPI_INT, right, 53, W);
	int rc = MPI_Wait(&rq, &st);
	checkrc(rc, MPI_ERR_TRUNCATE, "large.truncate.rc");
	check(bin[nb - 1] == 0xee, "large.truncate.no_overrun");
	free(out);
	free(in);
}

/* Thousands of outstanding requests: non-overtaking on one tag, and tags
 * matched out of posting order. */
static void many(void)
{
	enum { N = 4096 };
	static int out[N], in[N];
	static MPI_Request rq[2 * N];
	static MPI_Status st[2 * N];
	for (int i = 0; i < N; i++) {
		out[i] = val(rank, i);
		in[i] = -1;
	}
	for (int i = 0; i < N; i++)
		MPI_Irecv(&in[i], 1, MPI_INT, left, 60, W, &rq[i]);
	for (int i = 0; i < N; i++)
		MPI_Isend(&out[i], 1, MPI_INT, right, 60, W, &rq[N + i]);
	checkrc(MPI_Waitall(2 * N, rq, st), MPI_SUCCESS, "many.waitall.rc");
	int good = 1, stgood = 1, nullgood = 1;
	for (int i = 0; i < N; i++) {
		good &= in[i] == val(left, i);
		stgood &= st[i].MPI_SOURCE == left && st[i].MPI_TAG == 60;
	}
	for (int i = 0; i < 2 * N; i++)
		nullgood &= rq[i] == MPI_REQUEST_NULL;
	check(good, "many.same_tag.in_order");
	check(stgood, "many.statuses");
	check(nullgood, "many.requests_null");

	/* receive slot i wants tag N-1-i; sends go out in tag order */
	for (int i = 0; i < N; i++) {
		in[i] = -1;
		MPI_Irecv(&in[i], 1, MPI_INT, left, N - 1 - i, W, &rq[i]);
	}
	for (int i = 0; i < N; i++)
		MPI_Isend(&out[i], 1, MPI_INT, right, i, W, &rq[N + i]);
	MPI_Waitall(2 * N, rq, MPI_STATUSES_IGNORE);
	good = 1;
	for (int i = 0; i < N; i++)
		good &= in[i] == val(left, N - 1 - i);
	check(good, "many.by_tag");
}

static void wildcards(void)
{
	MPI_Status st;
	/* everyone sends one message to rank 0, which takes them with ANY_SOURCE
	 * and ANY_TAG in whatever order and checks it saw each once */
	int x = val(rank, 0);
	MPI_Request rq;
	MPI_Isend(&x, 1, MPI_INT, 0, 100 + rank, W, &rq);
	if (rank == 0) {
		int *seen = calloc((size_t)size, sizeof *seen), good = 1;
		for (int i = 0; i < size; i++) {
			int y;
			MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
			int s = st.MPI_SOURCE;
			if (s < 0 || s >= size || st.MPI_TAG != 100 + s || y != val(s, 0))
				good = 0;
			else
				seen[s]++;
		}
		for (int i = 0; i < size; i++)
			good &= seen[i] == 1;
		check(good, "any_source.all_once");
		free(seen);
	}
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	/* rank 0's wildcards must not catch the messages that follow */
	MPI_Barrier(W);

	/* ANY_TAG from one source keeps the send order */
	int tags[3] = { 5, 3, 9 }, out[3], in[3], good = 1;
	MPI_Request s3[3];
	for (int i = 0; i < 3; i++) {
		out[i] = val(rank, i);
		MPI_Isend(&out[i], 1, MPI_INT, right, tags[i], W, &s3[i]);
	}
	for (int i = 0; i < 3; i++) {
		MPI_Recv(&in[i], 1, MPI_INT, left, MPI_ANY_TAG, W, &st);
		good &= st.MPI_TAG == tags[i] && in[i] == val(left, i);
	}
	MPI_Waitall(3, s3, MPI_STATUSES_IGNORE);
	check(good, "any_tag.send_order");

	/* ANY_SOURCE with a tag skips an earlier message with another tag */
	for (int i = 0; i < 2; i++) {
		out[i] = val(rank, i);
		MPI_Isend(&out[i], 1, MPI_INT, right, 200 + i, W, &s3[i]);
	}
	MPI_Recv(&in[1], 1, MPI_INT, MPI_ANY_SOURCE, 201, W, &st);
	check_status(&st, left, 201, MPI_INT, 1, "any_source.tag_skips.status");
	MPI_Recv(&in[0], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
	check_status(&st, left, 200, MPI_INT, 1, "any_source.then_skipped.status");
	check(in[0] == val(left, 0) && in[1] == val(left, 1), "any_source.tag_skips.data");
	MPI_Waitall(2, s3, MPI_STATUSES_IGNORE);
}

static void proc_null(void)
{
	int buf[2] = { 9, 9 }, flag = 0;
	MPI_Status st;
	MPI_Request rq;
	checkrc(MPI_Send(buf, 2, MPI_INT, MPI_PROC_NULL, 1, W), MPI_SUCCESS, "proc_null.send");
	checkrc(MPI_Ssend(buf, 2, MPI_INT, MPI_PROC_NULL, 1, W), MPI_SUCCESS, "proc_null.ssend");
	MPI_Recv(buf, 2, MPI_INT, MPI_PROC_NULL, 1, W, &st);
	check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "proc_null.recv.status");
	check(buf[0] == 9 && buf[1] == 9, "proc_null.recv.untouched");
	/* MPICH 4.0.2 leaves source and tag 0 here (MPI says PROC_NULL and
	 * ANY_TAG, as for Recv), so only the count is compared */
	MPI_Irecv(buf, 2, MPI_INT, MPI_PROC_NULL, 1, W, &rq);
	MPI_Wait(&rq, &st);
	int n = -1;
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, 0, "proc_null.irecv.count");
	MPI_Isend(buf, 2, MPI_INT, MPI_PROC_NULL, 1, W, &rq);
	MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
	while (!flag)
		MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
	check(rq == MPI_REQUEST_NULL, "proc_null.isend.completes");
	MPI_Probe(MPI_PROC_NULL, 1, W, &st);
	check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "proc_null.probe.status");
	flag = 0;
	MPI_Iprobe(MPI_PROC_NULL, 1, W, &flag, &st);
	check(flag, "proc_null.iprobe.flag");
	/* a non-periodic shift: the ends talk to PROC_NULL */
	int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
	int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	int x = val(rank, 0), y = -1;
	MPI_Sendrecv(&x, 1, MPI_INT, up, 2, &y, 1, MPI_INT, down, 2, W, &st);
	checki(y, down == MPI_PROC_NULL ? -1 : val(down, 0), "proc_null.shift.data");
	checki(st.MPI_SOURCE, down, "proc_null.shift.source");
}

static void probes(void)
{
	MPI_Status st;
	int sizes[3] = { 3, 0, 1000 }, *out = malloc(1000 * sizeof *out), flag;
	MPI_Request s3[3];
	for (int i = 0; i < 1000; i++)
		out[i] = val(rank, i);
	for (int i = 0; i < 3; i++)
		MPI_Isend(out, sizes[i], MPI_INT, right, 70 + i, W, &s3[i]);
	/* Probe does not consume: twice the same message */
	MPI_Probe(left, MPI_ANY_TAG, W, &st);
	check_status(&st, left, 70, MPI_INT, 3, "probe.first");
	MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
	check_status(&st, left, 70, MPI_INT, 3, "probe.again_same");
	for (int i = 0; i < 3; i++) {
		MPI_Probe(MPI_ANY_SOURCE, 70 + i, W, &st);
		int n;
		MPI_Get_count(&st, MPI_INT, &n);
		checki(n, sizes[i], nm("probe.count.%d", i));
		int *in = malloc((size_t)n * sizeof *in + 1);
		MPI_Recv(in, n, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, W, &st);
		check(n == 0 || in[n - 1] == val(left, n - 1), nm("probe.recv.%d", i));
		free(in);
	}
	MPI_Waitall(3, s3, MPI_STATUSES_IGNORE);

	/* Iprobe eventually sees a sent message, never an unsent one */
	int x = val(rank, 1), y;
	MPI_Request rq;
	MPI_Isend(&x, 1, MPI_INT, right, 75, W, &rq);
	flag = 0;
	while (!flag)
		MPI_Iprobe(left, 75, W, &flag, &st);
	check_status(&st, left, 75, MPI_INT, 1, "iprobe.status");
	MPI_Iprobe(MPI_ANY_SOURCE, 76, W, &flag, &st);
	check(!flag, "iprobe.nothing");
	MPI_Recv(&y, 1, MPI_INT, left, 75, W, MPI_STATUS_IGNORE);
	check(y == val(left, 1), "iprobe.recv.data");
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	free(out);
}

static void truncation(void)
{
	int out[10], in[6], i;
	MPI_Status st, sts[2];
	MPI_Request rq[3];
	for (i = 0; i < 10; i++)
		out[i] = val(rank, i);

	/* blocking receive */
	for (i = 0; i < 6; i++)
		in[i] = -7;
	MPI_Isend(out, 10, MPI_INT, right, 80, W, &rq[0]);
	int rc = MPI_Recv(in, 5, MPI_INT, left, 80, W, &st);
	checkrc(rc, MPI_ERR_TRUNCATE, "truncate.recv.rc");
	checki(st.MPI_SOURCE, left, "truncate.recv.source");
	checki(st.MPI_TAG, 80, "truncate.recv.tag");
	check(in[5] == -7, "truncate.recv.no_overrun");
	MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

	/* Waitall: MPI_ERR_IN_STATUS and each status's MPI_ERROR */
	int ok1[10];
	MPI_Irecv(ok1, 10, MPI_INT, left, 81, W, &rq[0]);
	MPI_Irecv(in, 2, MPI_INT, left, 82, W, &rq[1]);
	MPI_Send(out, 10, MPI_INT, right, 81, W);
	MPI_Send(out, 3, MPI_INT, right, 82, W);
	rc = MPI_Waitall(2, rq, sts);
	checkrc(rc, MPI_ERR_IN_STATUS, "truncate.waitall.rc");
	checkrc(sts[0].MPI_ERROR, MPI_SUCCESS, "truncate.waitall.status0");
	checkrc(sts[1].MPI_ERROR, MPI_ERR_TRUNCATE, "truncate.waitall.status1");
	checki(sts[1].MPI_SOURCE, left, "truncate.waitall.source");
	check(ok1[9] == val(left, 9), "truncate.waitall.other_data");

	/* Wait on an Irecv, and the next message still arrives whole */
	MPI_Irecv(in, 1, MPI_INT, left, 83, W, &rq[0]);
	MPI_Send(out, 2, MPI_INT, right, 83, W);
	rc = MPI_Wait(&rq[0], &st);
	checkrc(rc, MPI_ERR_TRUNCATE, "truncate.wait.rc");
	MPI_Irecv(in, 6, MPI_INT, left, 83, W, &rq[0]);
	MPI_Send(out, 6, MPI_INT, right, 83, W);
	rc = MPI_Wait(&rq[0], &st);
	checkrc(rc, MPI_SUCCESS, "truncate.after.rc");
	check_status(&st, left, 83, MPI_INT, 6, "truncate.after.status");

	/* Sendrecv into a short buffer */
	rc = MPI_Sendrecv(out, 4, MPI_INT, right, 84, in, 3, MPI_INT, left, 84, W, &st);
	checkrc(rc, MPI_ERR_TRUNCATE, "truncate.sendrecv.rc");
}

/* The Wait/Test family, with REQUEST_NULL entries and pending requests
 * that provably cannot complete yet (their message is sent on a "go"). */
static void wait_test(void)
{
	MPI_Status st;
	int flag, idx, x, y[4] = { 0 }, out[4];
	MPI_Request rq[6];

	/* on a null request: immediate, empty status */
	MPI_Request nul = MPI_REQUEST_NULL;
	st.MPI_SOURCE = 5;
	MPI_Wait(&nul, &st);
	check(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "wait.null.empty_status");
	MPI_Get_count(&st, MPI_INT, &x);
	checki(x, 0, "wait.null.count");
	flag = 0;
	MPI_Test(&nul, &flag, &st);
	check(flag && st.MPI_SOURCE == MPI_ANY_SOURCE, "test.null");
	for (int i = 0; i < 4; i++)
		rq[i] = MPI_REQUEST_NULL;
	MPI_Waitany(4, rq, &idx, &st);
	checki(idx, MPI_UNDEFINED, "waitany.all_null");
	flag = 0;
	MPI_Testany(4, rq, &idx, &flag, &st);
	check(flag && idx == MPI_UNDEFINED, "testany.all_null");
	flag = 0;
	MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE);
	check(flag, "testall.all_null");
	int outcount, idxs[4];
	MPI_Waitsome(4, rq, &outcount, idxs, MPI_STATUSES_IGNORE);
	checki(outcount, MPI_UNDEFINED, "waitsome.all_null");
	outcount = 7;
	MPI_Testsome(4, rq, &outcount, idxs, MPI_STATUSES_IGNORE);
	checki(outcount, MPI_UNDEFINED, "testsome.all_null");
	MPI_Waitall(0, rq, MPI_STATUSES_IGNORE);
	check(1, "waitall.empty");

	/* pending: the left neighbour sends tags 91 and 92 only after our "go"
	 * on tag 90, and we send ours on the right neighbour's go */
	int go = 1, g, nok = 1;
	MPI_Request grq;
	MPI_Irecv(&g, 1, MPI_INT, right, 90, W, &grq);
	rq[0] = MPI_REQUEST_NULL;
	MPI_Irecv(&y[0], 1, MPI_INT, left, 91, W, &rq[1]);
	rq[2] = MPI_REQUEST_NULL;
	MPI_Irecv(&y[1], 1, MPI_INT, left, 92, W, &rq[3]);
	MPI_Test(&rq[1], &flag, &st);
	nok &= !flag;
	MPI_Testany(4, rq, &idx, &flag, &st);
	nok &= !flag && idx == MPI_UNDEFINED;
	MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE);
	nok &= !flag;
	check(nok, "test_family.pending_is_false");
	outcount = -1;
	MPI_Testsome(4, rq, &outcount, idxs, MPI_STATUSES_IGNORE);
	checki(outcount, 0, "testsome.pending_is_zero");
	check(rq[1] != MPI_REQUEST_NULL && rq[3] != MPI_REQUEST_NULL, "test_family.pending_kept");
	MPI_Send(&go, 1, MPI_INT, left, 90, W);
	MPI_Wait(&grq, MPI_STATUS_IGNORE);
	out[0] = val(rank, 0);
	out[1] = val(rank, 1);
	MPI_Request s2[2];
	MPI_Isend(&out[0], 1, MPI_INT, right, 91, W, &s2[0]);
	MPI_Isend(&out[1], 1, MPI_INT, right, 92, W, &s2[1]);

	/* Testany until both came: each index once, with its status */
	int got[4] = { 0 }, good = 1;
	for (int done = 0; done < 2;) {
		MPI_Testany(4, rq, &idx, &flag, &st);
		if (flag && idx != MPI_UNDEFINED) {
			got[idx]++;
			good &= st.MPI_TAG == (idx == 1 ? 91 : 92) && st.MPI_SOURCE == left;
			done++;
		}
	}
	check(good && got[1] == 1 && got[3] == 1 && rq[1] == MPI_REQUEST_NULL, "testany.each_once");
	check(y[0] == val(left, 0) && y[1] == val(left, 1), "testany.data");
	MPI_Waitall(2, s2, MPI_STATUSES_IGNORE);

	/* Waitany, Waitsome, Testall over real requests */
	MPI_Request r4[4];
	int in4[4];
	for (int i = 0; i < 4; i++) {
		out[i] = val(rank, i);
		MPI_Irecv(&in4[i], 1, MPI_INT, left, 93 + i, W, &r4[i]);
	}
	for (int i = 3; i >= 0; i--)
		MPI_Send(&out[i], 1, MPI_INT, right, 93 + i, W);
	int cnt[4] = { 0 };
	for (int i = 0; i < 4; i++) {
		MPI_Waitany(4, r4, &idx, &st);
		if (idx >= 0 && idx < 4 && st.MPI_TAG == 93 + idx)
			cnt[idx]++;
	}
	MPI_Waitany(4, r4, &idx, &st);
	check(cnt[0] == 1 && cnt[1] == 1 && cnt[2] == 1 && cnt[3] == 1 && idx == MPI_UNDEFINED,
	      "waitany.each_once");

	for (int i = 0; i < 4; i++)
		MPI_Irecv(&in4[i], 1, MPI_INT, left, 93 + i, W, &r4[i]);
	for (int i = 0; i < 4; i++)
		MPI_Send(&out[i], 1, MPI_INT, right, 93 + i, W);
	memset(cnt, 0, sizeof cnt);
	MPI_Status sts[4];
	int total = 0;
	good = 1;
	for (;;) {
		MPI_Waitsome(4, r4, &outcount, idxs, sts);
		if (outcount == MPI_UNDEFINED)
			break;
		for (int i = 0; i < outcount; i++) {
			cnt[idxs[i]]++;
			good &= sts[i].MPI_TAG == 93 + idxs[i] && in4[idxs[i]] == val(left, idxs[i]);
		}
		total += outcount;
	}
	check(good && total == 4 && cnt[0] == 1 && cnt[3] == 1, "waitsome.each_once");

	for (int i = 0; i < 4; i++)
		MPI_Irecv(&in4[i], 1, MPI_INT, left, 97, W, &r4[i]);
	for (int i = 0; i < 4; i++)
		MPI_Send(&out[i], 1, MPI_INT, right, 97, W);
	flag = 0;
	while (!flag)
		MPI_Testall(4, r4, &flag, sts);
	good = 1;
	for (int i = 0; i < 4; i++)
		good &= in4[i] == val(left, i) && sts[i].MPI_SOURCE == left && r4[i] == MPI_REQUEST_NULL;
	check(good, "testall.in_order");

	/* Testsome until all four came, REQUEST_NULL between them: each index
	 * once, its status beside it, the nulls never named */
	MPI_Request r6[6];
	for (int i = 0; i < 6; i++)
		r6[i] = MPI_REQUEST_NULL;
	for (int i = 0; i < 4; i++)
		MPI_Irecv(&in4[i], 1, MPI_INT, left, 101 + i, W, &r6[i + (i >= 2) * 2]);
	for (int i = 3; i >= 0; i--)
		MPI_Send(&out[i], 1, MPI_INT, right, 101 + i, W);
	int cnt6[6] = { 0 }, idx6[6];
	MPI_Status sts6[6];
	total = 0;
	good = 1;
	while (total < 4) {
		MPI_Testsome(6, r6, &outcount, idx6, sts6);
		for (int i = 0; i < outcount; i++) {
			int k = idx6[i], m = k < 2 ? k : k - 2;
			cnt6[k]++;
			good &= k != 2 && k != 3 && sts6[i].MPI_TAG == 101 + m &&
				sts6[i].MPI_SOURCE == left && in4[m] == val(left, m) &&
				r6[k] == MPI_REQUEST_NULL;
		}
		total += outcount;
	}
	check(good && cnt6[0] == 1 && cnt6[1] == 1 && cnt6[4] == 1 && cnt6[5] == 1,
	      "testsome.each_once");
	MPI_Testsome(6, r6, &outcount, idx6, sts6);
	checki(outcount, MPI_UNDEFINED, "testsome.after_all");
}

static void request_free_cancel(void)
{
	static int x, y = 0;
	MPI_Request rq;
	MPI_Status st;
	/* a freed send still delivers */
	x = val(rank, 3);
	MPI_Isend(&x, 1, MPI_INT, right, 110, W, &rq);
	MPI_Request_free(&rq);
	check(rq == MPI_REQUEST_NULL, "request_free.null");
	MPI_Recv(&y, 1, MPI_INT, left, 110, W, &st);
	check(y == val(left, 3), "request_free.delivered");
	/* nobody may still read x when it changes: everyone received */
	MPI_Barrier(W);

	/* a cancelled receive matches nothing afterwards */
	int c = -1, d = -1, m = val(rank, 4);
	MPI_Irecv(&c, 1, MPI_INT, MPI_ANY_SOURCE, 111, W, &rq);
	checkrc(MPI_Cancel(&rq), MPI_SUCCESS, "cancel.rc");
	MPI_Wait(&rq, &st);
	check(rq == MPI_REQUEST_NULL, "cancel.wait_completes");
	MPI_Request srq;
	MPI_Isend(&m, 1, MPI_INT, rank, 111, W, &srq);
	MPI_Recv(&d, 1, MPI_INT, rank, 111, W, &st);
	MPI_Wait(&srq, MPI_STATUS_IGNORE);
	check(d == m && c == -1, "cancel.message_goes_to_next_receive");
}

static void arg_errors(void)
{
	int x = 0;
	checkrc(MPI_Send(&x, 1, MPI_INT, size, 1, W), MPI_ERR_RANK, "error.send_rank");
	checkrc(MPI_Send(&x, 1, MPI_INT, right, -5, W), MPI_ERR_TAG, "error.send_tag");
	checkrc(MPI_Send(&x, -1, MPI_INT, right, 1, W), MPI_ERR_COUNT, "error.send_count");
	checkrc(MPI_Recv(&x, 1, MPI_INT, -7, 1, W, MPI_STATUS_IGNORE), MPI_ERR_RANK, "error.recv_rank");
	checkrc(MPI_Send(&x, 1, MPI_DATATYPE_NULL, right, 1, W), MPI_ERR_TYPE, "error.send_type");
	checkrc(MPI_Send(&x, 1, MPI_INT, right, 1, MPI_COMM_NULL), MPI_ERR_COMM, "error.send_comm");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	basic();
	ssend_semantics();
	self_sends();
	zero_length();
	large();
	many();
	wildcards();
	proc_null();
	probes();
	truncation();
	wait_test();
	request_free_cancel();
	arg_errors();
	return suite_finish("p2p");
}
