/* Communicators and derived datatypes: Comm_dup, Comm_split (colors, keys,
 * MPI_UNDEFINED), Comm_free, traffic isolation between communicators that
 * share ranks and tags, COMM_SELF, error handlers on derived communicators;
 * Type_contiguous, Type_vector, Type_commit, Type_free, counts in derived
 * types, strided receives and a several-MiB strided message; hundreds of
 * duplicates of one communicator alive at once, thousands made and freed. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static int val(int from, int i) { return from * 1000 + i + 1; }

static void dup_isolation(void)
{
	MPI_Comm d, dd;
	int r, n, right = (rank + 1) % size, left = (rank + size - 1) % size;
	checkrc(MPI_Comm_dup(W, &d), MPI_SUCCESS, "dup.rc");
	MPI_Comm_rank(d, &r);
	MPI_Comm_size(d, &n);
	check(r == rank && n == size, "dup.rank_size");
	check(d != W, "dup.new_handle");

	/* same source, same tag, two communicators: the dup's message is sent
	 * first, yet a wildcard receive on WORLD only sees WORLD's */
	int a = val(rank, 1), b = val(rank, 2), x = -1, y = -1;
	MPI_Request rq[2];
	MPI_Status st;
	MPI_Isend(&a, 1, MPI_INT, right, 7, d, &rq[0]);
	MPI_Isend(&b, 1, MPI_INT, right, 7, W, &rq[1]);
	MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
	check(x == val(left, 2) && st.MPI_SOURCE == left, "isolation.world_gets_world");
	MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, d, &st);
	check(y == val(left, 1), "isolation.dup_gets_dup");
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);

	/* a pending wildcard receive on the dup ignores WORLD traffic */
	int z = -1, w = -1, flag = 0;
	MPI_Request pend;
	MPI_Irecv(&z, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, d, &pend);
	MPI_Sendrecv(&a, 1, MPI_INT, right, 8, &w, 1, MPI_INT, left, 8, W, MPI_STATUS_IGNORE);
	MPI_Test(&pend, &flag, MPI_STATUS_IGNORE);
	check(!flag && z == -1 && w == val(left, 1), "isolation.pending_dup_receive");
	/* the left neighbour sends on the dup only after this "go" */
	int go = 1, g;
	MPI_Sendrecv(&go, 1, MPI_INT, left, 10, &g, 1, MPI_INT, right, 10, W, MPI_STATUS_IGNORE);
	MPI_Send(&b, 1, MPI_INT, right, 9, d);
	MPI_Wait(&pend, &st);
	check(z == val(left, 2) && st.MPI_TAG == 9, "isolation.pending_dup_completes");

	/* collectives on the dup and a dup of the dup */
	MPI_Comm_dup(d, &dd);
	int s = 0, one = 1;
	MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, dd);
	checki(s, size, "dup_of_dup.allreduce");
	checkrc(MPI_Comm_free(&dd), MPI_SUCCESS, "free.rc");
	check(dd == MPI_COMM_NULL, "free.sets_null");
	MPI_Comm_free(&d);

	/* dup/free cycles: contexts are recycled */
	int good = 1;
	for (int i = 0; i < 20; i++) {
		MPI_Comm c;
		good &= MPI_Comm_dup(W, &c) == MPI_SUCCESS;
		int v = i, u = -1;
		MPI_Sendrecv(&v, 1, MPI_INT, right, i, &u, 1, MPI_INT, left, i, c, MPI_STATUS_IGNORE);
		good &= u == i;
		good &= MPI_Comm_free(&c) == MPI_SUCCESS;
	}
	check(good, "dup_free.20_cycles");
}

static void split(void)
{
	MPI_Comm even_odd, rev, none, sub2;
	int r, n;
	/* color by parity, key reversed: new rank order is the reverse */
	MPI_Comm_split(W, rank % 2, size - rank, &even_odd);
	MPI_Comm_rank(even_odd, &r);
	MPI_Comm_size(even_odd, &n);
	int members = (size - rank % 2 + 1) / 2;
	checki(n, members, "split.parity.size");
	checki(r, members - 1 - rank / 2, "split.parity.rank_by_key");

	/* equal keys: ordered by old rank */
	MPI_Comm_split(W, 0, 0, &rev);
	MPI_Comm_rank(rev, &r);
	checki(r, rank, "split.equal_keys.rank");
	MPI_Comm_free(&rev);

	/* MPI_UNDEFINED: no communicator */
	MPI_Comm_split(W, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
	if (rank == 0) {
		check(none == MPI_COMM_NULL, "split.undefined.null");
	} else {
		MPI_Comm_size(none, &n);
		checki(n, size - 1, "split.undefined.others_size");
		MPI_Comm_free(&none);
	}

	/* traffic in the parity communicator: a ring among its members, and the
	 * sum of the world ranks there */
	MPI_Comm_size(even_odd, &n);
	MPI_Comm_rank(even_odd, &r);
	int out = val(rank, 0), in = -1, sum = -1;
	MPI_Status st;
	MPI_Sendrecv(&out, 1, MPI_INT, (r + 1) % n, 3, &in, 1, MPI_INT, (r + n - 1) % n, 3,
		     even_odd, &st);
	/* the member before us in the new order has the world rank two above */
	int from = rank + 2 < size ? rank + 2 : rank % 2;
	checki(in, val(from, 0), "split.ring.data");
	checki(st.MPI_SOURCE, (r + n - 1) % n, "split.ring.source_is_local_rank");
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, even_odd);
	int want = 0;
	for (int i = rank % 2; i < size; i += 2)
		want += i;
	checki(sum, want, "split.allreduce");
	int *all = malloc((size_t)n * sizeof *all);
	MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, even_odd);
	int good = 1;
	for (int i = 0; i < n; i++)
		good &= all[i] == (members - 1 - i) * 2 + rank % 2;
	check(good, "split.allgather_order");
	free(all);

	/* a split of the split, then both freed */
	MPI_Comm_split(even_odd, r < n / 2, r, &sub2);
	MPI_Comm_size(sub2, &n);
	MPI_Bcast(&sum, 1, MPI_INT, 0, sub2);
	checki(sum, want, "split_of_split.bcast");
	MPI_Comm_free(&sub2);
	MPI_Comm_free(&even_odd);
	check(even_odd == MPI_COMM_NULL, "split.free_null");
}

static void self_comm(void)
{
	int r = -1, n = -1, x = val(rank, 0), y = 0;
	MPI_Comm_rank(MPI_COMM_SELF, &r);
	MPI_Comm_size(MPI_COMM_SELF, &n);
	check(r == 0 && n == 1, "comm_self.rank_size");
	MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
	checki(y, x, "comm_self.allreduce");
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_SELF, &d);
	MPI_Comm_size(d, &n);
	checki(n, 1, "comm_self.dup_size");
	MPI_Comm_free(&d);
	MPI_Comm_size(W, &n);
	checki(n, size, "comm_world.size");
}

static void errhandlers(void)
{
	/* WORLD returns errors; a dup inherits that, a split too */
	MPI_Comm d;
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	MPI_Comm_dup(W, &d);
	int big[4] = { 1, 2, 3, 4 }, small[2];
	MPI_Request rq;
	MPI_Isend(big, 4, MPI_INT, rank, 1, d, &rq);
	int rc = MPI_Recv(small, 2, MPI_INT, rank, 1, d, MPI_STATUS_IGNORE);
	checkrc(rc, MPI_ERR_TRUNCATE, "errhandler.dup_inherits_return");
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	checkrc(MPI_Comm_set_errhandler(d, MPI_ERRORS_ARE_FATAL), MPI_SUCCESS,
		"errhandler.set_fatal.rc");
	checkrc(MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN), MPI_SUCCESS,
		"errhandler.set_return.rc");
	checkrc(MPI_Send(big, 1, MPI_INT, size, 1, d), MPI_ERR_RANK, "errhandler.dup_rank_error");
	MPI_Comm_free(&d);
	checkrc(MPI_Comm_free(&d), MPI_ERR_COMM, "errhandler.free_null_comm");
}

static void datatypes(void)
{
	MPI_Datatype c3, vec, vec_of_c3;
	MPI_Status st;
	MPI_Request rq;
	int right = (rank + 1) % size, left = (rank + size - 1) % size, n, good;

	checkrc(MPI_Type_contiguous(3, MPI_INT, &c3), MPI_SUCCESS, "contiguous.rc");
	checkrc(MPI_Type_commit(&c3), MPI_SUCCESS, "commit.rc");
	int out[12], in[12];
	for (int i = 0; i < 12; i++)
		out[i] = val(rank, i);
	memset(in, 0, sizeof in);
	/* 2 of c3 arrive as 6 ints */
	MPI_Irecv(in, 12, MPI_INT, left, 1, W, &rq);
	MPI_Send(out, 2, c3, right, 1, W);
	MPI_Wait(&rq, &st);
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, 6, "contiguous.as_ints.count");
	check(in[5] == val(left, 5) && in[6] == 0, "contiguous.as_ints.data");
	/* 6 ints arrive as 2 of c3; 5 ints as an undefined count of c3 */
	MPI_Irecv(in, 4, c3, left, 2, W, &rq);
	MPI_Send(out, 6, MPI_INT, right, 2, W);
	MPI_Wait(&rq, &st);
	MPI_Get_count(&st, c3, &n);
	checki(n, 2, "contiguous.count");
	MPI_Irecv(in, 4, c3, left, 3, W, &rq);
	MPI_Send(out, 5, MPI_INT, right, 3, W);
	MPI_Wait(&rq, &st);
	MPI_Get_count(&st, c3, &n);
	checki(n, MPI_UNDEFINED, "contiguous.partial_count_undefined");
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, 5, "contiguous.partial_count_ints");
	/* truncation in units of a derived type */
	MPI_Irecv(in, 1, c3, left, 4, W, &rq);
	MPI_Send(out, 4, MPI_INT, right, 4, W);
	checkrc(MPI_Wait(&rq, &st), MPI_ERR_TRUNCATE, "contiguous.truncate");

	/* vector: 4 blocks of 2 ints, stride 5, out of a 4x5 matrix */
	checkrc(MPI_Type_vector(4, 2, 5, MPI_INT, &vec), MPI_SUCCESS, "vector.rc");
	MPI_Type_commit(&vec);
	int m[20], packed[8], back[20];
	for (int i = 0; i < 20; i++)
		m[i] = val(rank, i);
	MPI_Irecv(packed, 8, MPI_INT, left, 5, W, &rq);
	MPI_Send(m, 1, vec, right, 5, W);
	MPI_Wait(&rq, &st);
	good = 1;
	for (int b = 0; b < 4; b++)
		for (int j = 0; j < 2; j++)
			good &= packed[2 * b + j] == val(left, 5 * b + j);
	check(good, "vector.send_strided");
	/* and back into a strided receive: gaps untouched */
	for (int i = 0; i < 20; i++)
		back[i] = -1;
	MPI_Sendrecv(packed, 8, MPI_INT, right, 6, back, 1, vec, left, 6, W, &st);
	good = 1;
	for (int i = 0; i < 20; i++) {
		int j = i % 5;
		good &= j < 2 ? back[i] == val((left + size - 1) % size, i) : back[i] == -1;
	}
	check(good, "vector.recv_strided");
	MPI_Get_count(&st, vec, &n);
	checki(n, 1, "vector.count");
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, 8, "vector.count_ints");

	/* a vector of contiguous: 3 blocks of one c3, stride 2 c3 */
	MPI_Type_vector(3, 1, 2, c3, &vec_of_c3);
	MPI_Type_commit(&vec_of_c3);
	int big[18], got[9];
	for (int i = 0; i < 18; i++)
		big[i] = val(rank, i);
	MPI_Sendrecv(big, 1, vec_of_c3, rank, 7, got, 9, MPI_INT, rank, 7, W, MPI_STATUS_IGNORE);
	good = 1;
	for (int b = 0; b < 3; b++)
		for (int j = 0; j < 3; j++)
			good &= got[3 * b + j] == val(rank, 6 * b + j);
	check(good, "vector_of_contiguous.self");

	/* a collective with a derived type */
	int bm[20];
	for (int i = 0; i < 20; i++)
		bm[i] = rank == 0 ? val(0, i) : -1;
	MPI_Bcast(bm, 1, vec, 0, W);
	check(bm[0] == val(0, 0) && bm[6] == val(0, 6) && (rank == 0 || bm[2] == -1), "vector.bcast");
	int *gall = malloc((size_t)size * 3 * sizeof *gall);
	MPI_Allgather(out, 1, c3, gall, 3, MPI_INT, W);
	good = 1;
	for (int r = 0; r < size; r++)
		good &= gall[3 * r + 2] == val(r, 2);
	check(good, "contiguous.allgather");
	free(gall);

	/* a type freed while a send using it is pending: the send completes */
	MPI_Datatype tmp;
	MPI_Type_vector(2, 1, 3, MPI_INT, &tmp);
	MPI_Type_commit(&tmp);
	int two[2];
	MPI_Isend(m, 1, tmp, right, 8, W, &rq);
	checkrc(MPI_Type_free(&tmp), MPI_SUCCESS, "type_free.pending.rc");
	check(tmp == MPI_DATATYPE_NULL, "type_free.null");
	MPI_Recv(two, 2, MPI_INT, left, 8, W, MPI_STATUS_IGNORE);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	check(two[0] == val(left, 0) && two[1] == val(left, 3), "type_free.pending_send_delivers");

	/* several MiB strided: 512Ki blocks of 2 ints, stride 3 */
	int blocks = 512 * 1024, good2 = 1;
	MPI_Datatype sv;
	MPI_Type_vector(blocks, 2, 3, MPI_INT, &sv);
	MPI_Type_commit(&sv);
	int *src = malloc((size_t)blocks * 3 * sizeof *src), *dst = malloc((size_t)blocks * 2 * sizeof *dst);
	for (int i = 0; i < blocks * 3; i++)
		src[i] = val(rank, i);
	MPI_Irecv(dst, blocks * 2, MPI_INT, left, 9, W, &rq);
	MPI_Send(src, 1, sv, right, 9, W);
	MPI_Wait(&rq, &st);
	for (int b = 0; b < blocks; b++)
		good2 &= dst[2 * b] == val(left, 3 * b) && dst[2 * b + 1] == val(left, 3 * b + 1);
	check(good2, "vector.large.data");
	MPI_Get_count(&st, MPI_INT, &n);
	checki(n, blocks * 2, "vector.large.count");
	free(src);
	free(dst);
	MPI_Type_free(&sv);
	MPI_Type_free(&vec_of_c3);
	MPI_Type_free(&vec);
	MPI_Type_free(&c3);
}

/* Many duplicates of one communicator alive at once (more than one
 * block of context ids), a duplicate of one of them among them, and a
 * loop of duplicates freed at once: each carries only its own messages,
 * sent on every one before any is received, received in reverse order */
#define MANY 600
static void many_dups(void)
{
	static MPI_Comm d[MANY + 1];
	int right = (rank + 1) % size, left = (rank + size - 1) % size, ok = 1;
	MPI_Comm base;
	MPI_Comm_dup(W, &base);
	for (int k = 0; k < MANY; k++)
		ok &= MPI_Comm_dup(base, &d[k]) == MPI_SUCCESS;
	ok &= MPI_Comm_dup(d[MANY / 2], &d[MANY]) == MPI_SUCCESS;
	check(ok, "many_dups: 601 duplicates");
	MPI_Request *rq = malloc((MANY + 1) * sizeof(MPI_Request));
	int *out = malloc((MANY + 1) * sizeof(int)), *in = malloc((MANY + 1) * sizeof(int));
	for (int k = 0; k <= MANY; k++) {
		out[k] = val(rank, k);
		MPI_Isend(&out[k], 1, MPI_INT, right, 5, d[k], &rq[k]);
	}
	for (int k = MANY; k >= 0; k--)
		MPI_Recv(&in[k], 1, MPI_INT, left, 5, d[k], MPI_STATUS_IGNORE);
	MPI_Waitall(MANY + 1, rq, MPI_STATUSES_IGNORE);
	ok = 1;
	for (int k = 0; k <= MANY; k++)
		ok &= in[k] == val(left, k);
	check(ok, "many_dups: each message on its own duplicate");
	for (int k = 0; k <= MANY; k++)
		MPI_Comm_free(&d[k]);
	/* duplicated and freed again and again */
	ok = 1;
	for (int it = 0; it < 2000 && ok; it++) {
		MPI_Comm t;
		ok &= MPI_Comm_dup(base, &t) == MPI_SUCCESS;
		if (it % 500 == 0) {
			int v = -1;
			MPI_Sendrecv(&it, 1, MPI_INT, right, 1, &v, 1, MPI_INT, left, 1, t,
				     MPI_STATUS_IGNORE);
			ok &= v == it;
		}
		ok &= MPI_Comm_free(&t) == MPI_SUCCESS;
	}
	check(ok, "many_dups: 2000 duplicates made and freed");
	MPI_Comm_free(&base);
	free(rq);
	free(out);
	free(in);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	dup_isolation();
	split();
	self_comm();
	errhandlers();
	datatypes();
	many_dups();
	return suite_finish("comm");
}
