/* More collectives and non-blocking ones: Reduce_scatter, Reduce_scatter_block,
 * Exscan (predefined and non-commutative user ops, MPI_IN_PLACE); Ibarrier,
 * Ibcast, Iallreduce, Ireduce, Iallgather, Igather, Iscatter, Ialltoall (and
 * in place), user ops freed while they are pending; completed by Wait, Test
 * loops and Waitall mixed with point-to-point requests, several in flight on one
 * communicator and overlapping blocking collectives and point to point. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static int vcount(int r) { return r % 3 + 1; }

/* affine maps x -> a x + b composed in rank order: associative, not
 * commutative; in is the lower ranks' part */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	int *p = in, *q = inout;
	for (int i = 0; i < *len; i++) {
		int a = p[2 * i] * q[2 * i], b = q[2 * i] * p[2 * i + 1] + q[2 * i + 1];
		q[2 * i] = a;
		q[2 * i + 1] = b;
	}
}

static void affine_of(int r, int i, int *ab)
{
	ab[0] = 1 + (r + i) % 2;
	ab[1] = r - i;
}

/* the composition of ranks lo..hi-1's maps for element i */
static void affine_range(int lo, int hi, int i, int *ab)
{
	ab[0] = 1;
	ab[1] = 0;
	for (int r = lo; r < hi; r++) {
		int m[2];
		affine_of(r, i, m);
		ab[1] = m[0] * ab[1] + m[1];
		ab[0] = m[0] * ab[0];
	}
}

static void reduce_scatter(void)
{
	int total = 0;
	int *counts = malloc((size_t)size * sizeof(int));
	for (int r = 0; r < size; r++) {
		counts[r] = vcount(r);
		total += counts[r];
	}
	int *s = malloc((size_t)total * sizeof(int)), out[3] = {-1, -1, -1};
	for (int i = 0; i < total; i++)
		s[i] = rank * 10 + i;
	checkrc(MPI_Reduce_scatter(s, out, counts, MPI_INT, MPI_SUM, W), MPI_SUCCESS,
		"reduce_scatter.rc");
	int off = 0;
	for (int r = 0; r < rank; r++)
		off += counts[r];
	int good = 1;
	for (int i = 0; i < counts[rank]; i++)
		good &= out[i] == 10 * size * (size - 1) / 2 + size * (off + i);
	check(good, "reduce_scatter.sum");
	/* MPI_IN_PLACE: the full vector in rbuf */
	for (int i = 0; i < total; i++)
		s[i] = rank * 10 + i;
	MPI_Reduce_scatter(MPI_IN_PLACE, s, counts, MPI_INT, MPI_MAX, W);
	good = 1;
	for (int i = 0; i < counts[rank]; i++)
		good &= s[i] == (size - 1) * 10 + off + i;
	check(good, "reduce_scatter.in_place_max");

	/* block form with doubles and with the non-commutative op */
	double *ds = malloc((size_t)size * 2 * sizeof(double)), dr[2];
	for (int i = 0; i < 2 * size; i++)
		ds[i] = rank * 0.5 + i;
	MPI_Reduce_scatter_block(ds, dr, 2, MPI_DOUBLE, MPI_SUM, W);
	check(dr[0] == size * (size - 1) * 0.25 + size * (2.0 * rank) &&
	      dr[1] == size * (size - 1) * 0.25 + size * (2.0 * rank + 1), "reduce_scatter_block.sum");
	MPI_Datatype aff;
	MPI_Type_contiguous(2, MPI_INT, &aff);
	MPI_Type_commit(&aff);
	MPI_Op op;
	MPI_Op_create(compose, 0, &op);
	int *as = malloc((size_t)size * 2 * sizeof(int)), ar[2], w[2];
	for (int j = 0; j < size; j++)
		affine_of(rank, j, &as[2 * j]);
	MPI_Reduce_scatter_block(as, ar, 1, aff, op, W);
	affine_range(0, size, rank, w);
	check(ar[0] == w[0] && ar[1] == w[1], "reduce_scatter_block.noncommutative");

	/* Exscan: rank r gets ranks 0..r-1 folded; rank 0's result is undefined */
	int x = rank + 1, ex = -7;
	MPI_Exscan(&x, &ex, 1, MPI_INT, MPI_SUM, W);
	if (rank > 0)
		checki(ex, rank * (rank + 1) / 2, "exscan.sum");
	int e2[2];
	affine_of(rank, 0, e2);
	int ein[2] = {e2[0], e2[1]};
	MPI_Exscan(ein, e2, 1, aff, op, W);
	affine_range(0, rank, 0, w);
	if (rank > 0)
		check(e2[0] == w[0] && e2[1] == w[1], "exscan.noncommutative");
	int ip = rank + 1;
	MPI_Exscan(MPI_IN_PLACE, &ip, 1, MPI_INT, MPI_PROD, W);
	int fact = 1;
	for (int r = 1; r <= rank; r++)
		fact *= r;
	if (rank > 0)
		checki(ip, fact, "exscan.in_place_prod");
	MPI_Op_free(&op);
	MPI_Type_free(&aff);
	free(counts);
	free(s);
	free(ds);
	free(as);
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
}

/* user ops freed while reductions that use them are pending: MPI says
 * those complete as if the op were still there */
static void op_freed(void)
{
	MPI_Op a, b;
	MPI_Request q[2];
	int x[2] = {rank + 1, 2 * rank}, all[2] = {-1, -1}, pre[2] = {-1, -1};
	MPI_Op_create(isum, 1, &a);
	MPI_Iallreduce(x, all, 2, MPI_INT, a, W, &q[0]);
	checkrc(MPI_Op_free(&a), MPI_SUCCESS, "op_freed.free_rc");
	/* a new op beside the freed one, in flight too */
	MPI_Op_create(isum, 0, &b);
	MPI_Iscan(x, pre, 2, MPI_INT, b, W, &q[1]);
	MPI_Op_free(&b);
	checkrc(MPI_Waitall(2, q, MPI_STATUSES_IGNORE), MPI_SUCCESS, "op_freed.waitall_rc");
	check(all[0] == size * (size + 1) / 2 && all[1] == size * (size - 1),
	      "op_freed.iallreduce");
	check(pre[0] == (rank + 1) * (rank + 2) / 2 && pre[1] == rank * (rank + 1),
	      "op_freed.iscan");
}

static void nonblocking(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	/* Ibcast overlapping a ring exchange */
	for (int root = 0; root < size; root++) {
		int b[4], v = rank, got = -1;
		for (int i = 0; i < 4; i++)
			b[i] = rank == root ? root * 10 + i : -1;
		MPI_Request q;
		checkrc(MPI_Ibcast(b, 4, MPI_INT, root, W, &q), MPI_SUCCESS,
			nm("ibcast.root%d.rc", root));
		MPI_Sendrecv(&v, 1, MPI_INT, right, 1, &got, 1, MPI_INT, left, 1, W,
			     MPI_STATUS_IGNORE);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		check(q == MPI_REQUEST_NULL && b[0] == root * 10 && b[3] == root * 10 + 3 &&
		      got == left, nm("ibcast.root%d.overlap", root));
	}

	/* Iallreduce, completed by a Test loop, with a blocking Allreduce and a
	 * point-to-point exchange in between */
	double a[3] = {rank, rank * 0.5, -rank}, ra[3] = {0, 0, 0};
	MPI_Request q;
	MPI_Iallreduce(a, ra, 3, MPI_DOUBLE, MPI_SUM, W, &q);
	int one = 1, n = 0, flag = 0;
	MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, W);
	checki(n, size, "iallreduce.blocking_inside");
	int v = rank * 3, got = -1;
	MPI_Request pr[2];
	MPI_Irecv(&got, 1, MPI_INT, left, 2, W, &pr[0]);
	MPI_Isend(&v, 1, MPI_INT, right, 2, W, &pr[1]);
	while (!flag)
		MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
	MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
	double s = size * (size - 1) / 2.0;
	check(ra[0] == s && ra[1] == s * 0.5 && ra[2] == -s && got == left * 3, "iallreduce.sum");

	/* several in flight at once, finished by one Waitall with p2p requests */
	int mx = -1, ag[64], red = -1, in_place = rank + 1;
	MPI_Request m[6];
	MPI_Iallreduce(&rank, &mx, 1, MPI_INT, MPI_MAX, W, &m[0]);
	MPI_Iallgather(&v, 1, MPI_INT, ag, 1, MPI_INT, W, &m[1]);
	MPI_Ireduce(&rank, &red, 1, MPI_INT, MPI_SUM, size - 1, W, &m[2]);
	MPI_Iallreduce(MPI_IN_PLACE, &in_place, 1, MPI_INT, MPI_PROD, W, &m[3]);
	int pv = 100 + rank, pg = -1;
	MPI_Irecv(&pg, 1, MPI_INT, left, 3, W, &m[4]);
	MPI_Isend(&pv, 1, MPI_INT, right, 3, W, &m[5]);
	checkrc(MPI_Waitall(6, m, MPI_STATUSES_IGNORE), MPI_SUCCESS, "many.waitall");
	checki(mx, size - 1, "many.iallreduce_max");
	int good = 1;
	for (int r = 0; r < size; r++)
		good &= ag[r] == r * 3;
	check(good, "many.iallgather");
	if (rank == size - 1)
		checki(red, size * (size - 1) / 2, "many.ireduce_root");
	int fact = 1;
	for (int r = 1; r <= size; r++)
		fact *= r;
	checki(in_place, fact, "many.iallreduce_in_place");
	checki(pg, 100 + left, "many.p2p");

	/* sums that round: with one or two ranks there is one order, so the
	 * non-blocking result has the blocking one's bits */
	double d[2] = {1.0 / (rank + 3), rank * 0.1}, nb[2], bl[2];
	MPI_Iallreduce(d, nb, 2, MPI_DOUBLE, MPI_SUM, W, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	MPI_Allreduce(d, bl, 2, MPI_DOUBLE, MPI_SUM, W);
	if (size <= 2)
		check(memcmp(nb, bl, sizeof nb) == 0, "iallreduce.same_bits_as_blocking");

	/* Ibarrier: nobody leaves before everyone entered; messages sent
	 * before entering are all there to receive afterwards */
	if (rank > 0)
		MPI_Send(&rank, 1, MPI_INT, 0, 4, W);
	MPI_Request bq;
	checkrc(MPI_Ibarrier(W, &bq), MPI_SUCCESS, "ibarrier.rc");
	flag = 0;
	while (!flag)
		MPI_Test(&bq, &flag, MPI_STATUS_IGNORE);
	if (rank == 0) {
		int sum = 0;
		for (int r = 1; r < size; r++) {
			int x = 0;
			MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4, W, MPI_STATUS_IGNORE);
			sum += x;
		}
		checki(sum, size * (size - 1) / 2, "ibarrier.all_entered");
	}
	/* on a split communicator, with Waitany */
	MPI_Comm half;
	MPI_Comm_split(W, rank % 2, rank, &half);
	int hs, hsum = 0;
	MPI_Comm_size(half, &hs);
	MPI_Request h[2];
	MPI_Ibarrier(half, &h[0]);
	MPI_Iallreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half, &h[1]);
	int idx, done = 0;
	while (done < 2) {
		MPI_Waitany(2, h, &idx, MPI_STATUS_IGNORE);
		done++;
	}
	int want = 0;
	for (int r = rank % 2; r < size; r += 2)
		want += r;
	checki(hsum, want, "split.iallreduce");
	/* each half's own root */
	MPI_Request fr;
	int fb = rank == 0 ? 77 : 0;
	MPI_Ibcast(&fb, 1, MPI_INT, 0, half, &fr);
	MPI_Wait(&fr, MPI_STATUS_IGNORE);
	checki(fb, rank % 2 == 0 ? 77 : 0, "split.ibcast");
	MPI_Comm_free(&half);
}

static void routed(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int *all = malloc((size_t)size * 2 * sizeof(int)), *back = malloc((size_t)size * 2 * sizeof(int));
	for (int root = 0; root < size; root++) {
		int mine[2] = {rank * 10, rank * 10 + 1}, got = -1, pv = rank;
		for (int i = 0; i < 2 * size; i++)
			all[i] = -1;
		MPI_Request q[3];
		MPI_Igather(mine, 2, MPI_INT, all, 2, MPI_INT, root, W, &q[0]);
		MPI_Irecv(&got, 1, MPI_INT, left, 6, W, &q[1]);
		MPI_Isend(&pv, 1, MPI_INT, right, 6, W, &q[2]);
		MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
		if (rank == root) {
			int good = 1;
			for (int r = 0; r < size; r++)
				good &= all[2 * r] == r * 10 && all[2 * r + 1] == r * 10 + 1;
			check(good && got == left, nm("igather.root%d", root));
		}
		/* and back out with Iscatter, the root's block in place */
		int two[2] = {-1, -1};
		MPI_Request sq;
		if (rank == root) {
			for (int i = 0; i < 2 * size; i++)
				all[i] += 5;
			MPI_Iscatter(all, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, root, W, &sq);
		} else {
			MPI_Iscatter(NULL, 0, MPI_DATATYPE_NULL, two, 2, MPI_INT, root, W, &sq);
		}
		MPI_Wait(&sq, MPI_STATUS_IGNORE);
		if (rank != root)
			check(two[0] == rank * 10 + 5 && two[1] == rank * 10 + 6,
			      nm("iscatter.root%d", root));
	}
	/* Ialltoall of two ints per peer, gather's in-place root form too */
	for (int i = 0; i < 2 * size; i++) {
		all[i] = rank * 100 + i;
		back[i] = -1;
	}
	MPI_Request aq;
	MPI_Ialltoall(all, 2, MPI_INT, back, 2, MPI_INT, W, &aq);
	int flag = 0;
	while (!flag)
		MPI_Test(&aq, &flag, MPI_STATUS_IGNORE);
	int good = 1;
	for (int p = 0; p < size; p++)
		good &= back[2 * p] == p * 100 + 2 * rank && back[2 * p + 1] == p * 100 + 2 * rank + 1;
	check(good, "ialltoall");
	/* in place: the blocks sent are the buffer's before the call, while
	 * the receives overwrite it; a gather's request in flight beside it */
	for (int i = 0; i < 2 * size; i++)
		back[i] = rank * 100 + i;
	MPI_Request iq[2];
	MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, W, &iq[1]);
	checkrc(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, back, 2, MPI_INT, W, &iq[0]),
		MPI_SUCCESS, "ialltoall.in_place.rc");
	MPI_Waitall(2, iq, MPI_STATUSES_IGNORE);
	good = 1;
	for (int p = 0; p < size; p++)
		good &= back[2 * p] == p * 100 + 2 * rank && back[2 * p + 1] == p * 100 + 2 * rank + 1 &&
			all[p] == p;
	check(good, "ialltoall.in_place");
	for (int i = 0; i < 2 * size; i++)
		all[i] = rank == 0 && i < 2 ? i + 1 : -1;
	int mine[2] = {rank + 1, rank + 2};
	MPI_Request gq;
	MPI_Igather(rank == 0 ? MPI_IN_PLACE : mine, 2, MPI_INT, all, 2, MPI_INT, 0, W, &gq);
	MPI_Wait(&gq, MPI_STATUS_IGNORE);
	if (rank == 0) {
		good = 1;
		for (int r = 0; r < size; r++)
			good &= all[2 * r] == r + 1 && all[2 * r + 1] == r + 2;
		check(good, "igather.in_place");
	}
	free(all);
	free(back);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	reduce_scatter();
	nonblocking();
	op_freed();
	routed();
	return suite_finish("nbcoll");
}
