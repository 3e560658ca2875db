/* The v- and w- non-blocking collectives: Igatherv, Iscatterv, Iallgatherv,
 * Ialltoallv, Ialltoallw (types per peer, byte displacements), the blocking
 * Alltoallw, Ireduce_scatter and Ireduce_scatter_block (predefined and a
 * non-commutative user op); counts that differ per rank (zero included),
 * displacements with gaps, MPI_IN_PLACE, derived types, and all of them in
 * flight at once, completed by Waitall and by Test loops. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

/* rank r's count toward or from rank q (zero for some pairs) */
static int cnt(int r, int q) { return (r + 2 * q) % 3; }
static int val(int from, int to, int i) { return 10000 * from + 100 * to + i; }

static int *ints(int n, int fill)
{
	int *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	for (int i = 0; i < n; i++)
		v[i] = fill;
	return v;
}

/* displacements of counts c with a gap of 1 before each block; the total */
static int displs_of(const int *c, int *d)
{
	int at = 0;
	for (int i = 0; i < size; i++) {
		d[i] = at + 1;
		at += 1 + c[i];
	}
	return at;
}

static void wait_or_test(MPI_Request *q, int by_test)
{
	if (!by_test) {
		MPI_Wait(q, MPI_STATUS_IGNORE);
		return;
	}
	int flag = 0;
	while (!flag)
		MPI_Test(q, &flag, MPI_STATUS_IGNORE);
}

static void gatherv_scatterv(int root, int by_test)
{
	int *c = ints(size, 0), *d = ints(size, 0);
	for (int i = 0; i < size; i++)
		c[i] = cnt(i, root);
	int total = displs_of(c, d), *all = ints(total, -1), mine[3];
	for (int i = 0; i < c[rank]; i++)
		mine[i] = val(rank, root, i);
	MPI_Request q;
	checkrc(MPI_Igatherv(mine, c[rank], MPI_INT, all, c, d, MPI_INT, root, W, &q), MPI_SUCCESS,
		nm("igatherv.root%d.rc", root));
	wait_or_test(&q, by_test);
	if (rank == root) {
		int good = 1;
		for (int i = 0; i < size; i++) {
			good &= all[d[i] - 1] == -1;
			for (int k = 0; k < c[i]; k++)
				good &= all[d[i] + k] == val(i, root, k);
		}
		check(good, nm("igatherv.root%d.blocks_and_gaps", root));
	}
	/* scatter the same blocks back, then gather in place at the root */
	int back[3] = {-1, -1, -1};
	MPI_Iscatterv(all, c, d, MPI_INT, back, c[rank], MPI_INT, root, W, &q);
	wait_or_test(&q, by_test);
	int good = back[c[rank]] == -1 || c[rank] == 3;
	for (int k = 0; k < c[rank]; k++)
		good &= back[k] == val(rank, root, k);
	check(good, nm("iscatterv.root%d.my_block", root));
	if (rank == root) {
		for (int i = 0; i < total; i++)
			all[i] = i == d[rank] ? 7 : -1;
		MPI_Igatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, c, d, MPI_INT, root, W, &q);
	} else {
		MPI_Igatherv(mine, c[rank], MPI_INT, NULL, NULL, NULL, MPI_INT, root, W, &q);
	}
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	if (rank == root) {
		int ok = c[rank] == 0 || all[d[rank]] == 7;
		for (int i = 0; i < size; i++)
			for (int k = 0; k < c[i]; k++)
				ok &= i == rank || all[d[i] + k] == val(i, root, k);
		check(ok, nm("igatherv.root%d.in_place", root));
		MPI_Iscatterv(all, c, d, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root, W, &q);
	} else {
		back[0] = -1;
		MPI_Iscatterv(NULL, NULL, NULL, MPI_INT, back, c[rank], MPI_INT, root, W, &q);
	}
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	if (rank != root)
		check(c[rank] == 0 || back[0] == val(rank, root, 0),
		      nm("iscatterv.root%d.in_place_root", root));
	free(all);
	free(c);
	free(d);
}

static void allgatherv(void)
{
	int *c = ints(size, 0), *d = ints(size, 0);
	for (int i = 0; i < size; i++)
		c[i] = cnt(i, 0) + 1;
	/* the gaps after the blocks: Debian's MPICH puts a lone rank's block
	 * at the start of the buffer whatever its displacement */
	int total = displs_of(c, d), *all = ints(total, -1), mine[3];
	for (int i = 0; i < size; i++)
		d[i]--;
	for (int k = 0; k < c[rank]; k++)
		mine[k] = val(rank, 0, k);
	MPI_Request q;
	MPI_Iallgatherv(mine, c[rank], MPI_INT, all, c, d, MPI_INT, W, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	int good = 1;
	for (int i = 0; i < size; i++)
		for (int k = 0; k < c[i]; k++)
			good &= all[d[i] + k] == val(i, 0, k) && all[d[i] + c[i]] == -1;
	check(good, "iallgatherv.blocks");
	for (int i = 0; i < total; i++)
		all[i] = -1;
	for (int k = 0; k < c[rank]; k++)
		all[d[rank] + k] = val(rank, 1, k);
	MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, c, d, MPI_INT, W, &q);
	wait_or_test(&q, 1);
	good = 1;
	for (int i = 0; i < size; i++)
		for (int k = 0; k < c[i]; k++)
			good &= all[d[i] + k] == val(i, 1, k);
	check(good, "iallgatherv.in_place");
	/* received into every other int: a vector type per item */
	MPI_Datatype every2;
	MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every2);
	MPI_Type_commit(&every2);
	int *wide = ints(2 * total, -1);
	MPI_Iallgatherv(mine, c[rank], MPI_INT, wide, c, d, every2, W, &q);
	MPI_Type_free(&every2); /* the pending receive keeps it */
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	good = 1;
	for (int i = 0; i < size; i++)
		for (int k = 0; k < c[i]; k++)
			good &= wide[2 * (d[i] + k)] == val(i, 0, k) && wide[2 * (d[i] + k) + 1] == -1;
	check(good, "iallgatherv.resized_type");
	free(wide);
	free(all);
	free(c);
	free(d);
}

static void alltoallv(void)
{
	int *sc = ints(size, 0), *sd = ints(size, 0), *rc = ints(size, 0), *rd = ints(size, 0);
	for (int i = 0; i < size; i++) {
		sc[i] = cnt(rank, i);
		rc[i] = cnt(i, rank);
	}
	int st = displs_of(sc, sd), rt = displs_of(rc, rd);
	int *s = ints(st, -1), *r = ints(rt, -1);
	for (int i = 0; i < size; i++)
		for (int k = 0; k < sc[i]; k++)
			s[sd[i] + k] = val(rank, i, k);
	MPI_Request q;
	MPI_Ialltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, W, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	int good = 1;
	for (int i = 0; i < size; i++)
		for (int k = 0; k < rc[i]; k++)
			good &= r[rd[i] + k] == val(i, rank, k) && r[rd[i] - 1] == -1;
	check(good, "ialltoallv.blocks");
	/* in place: symmetric counts, as MPI requires */
	int *c = ints(size, 0), *d = ints(size, 0);
	for (int i = 0; i < size; i++)
		c[i] = (rank + i) % 3;
	int t = displs_of(c, d), *b = ints(t, -1);
	for (int i = 0; i < size; i++)
		for (int k = 0; k < c[i]; k++)
			b[d[i] + k] = val(rank, i, k);
	MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b, c, d, MPI_INT, W, &q);
	wait_or_test(&q, 1);
	good = 1;
	for (int i = 0; i < size; i++)
		for (int k = 0; k < c[i]; k++)
			good &= b[d[i] + k] == val(i, rank, k);
	check(good, "ialltoallv.in_place");
	free(b);
	free(c);
	free(d);
	free(s);
	free(r);
	free(sc);
	free(sd);
	free(rc);
	free(rd);
}

/* to peer i: cnt ints when i is even, cnt doubles when odd, at byte
 * offsets 16 apart per item so the blocks interleave with gaps */
static void alltoallw(int blocking)
{
	int n = size;
	int *sc = ints(n, 0), *sd = ints(n, 0), *rc = ints(n, 0), *rd = ints(n, 0);
	MPI_Datatype *stp = malloc((size_t)n * sizeof(*stp)), *rtp = malloc((size_t)n * sizeof(*rtp));
	char *s = calloc((size_t)n, 64), *r = calloc((size_t)n, 64);
	for (int i = 0; i < n; i++) {
		sc[i] = cnt(rank, i);
		rc[i] = cnt(i, rank);
		sd[i] = rd[i] = 64 * i + 8;
		stp[i] = i % 2 ? MPI_DOUBLE : MPI_INT;
		rtp[i] = rank % 2 ? MPI_DOUBLE : MPI_INT;
		for (int k = 0; k < sc[i]; k++) {
			if (i % 2)
				((double *)(s + sd[i]))[k] = val(rank, i, k) + 0.5;
			else
				((int *)(s + sd[i]))[k] = val(rank, i, k);
		}
	}
	memset(r, 0x7f, (size_t)n * 64);
	MPI_Request q;
	if (blocking) {
		checkrc(MPI_Alltoallw(s, sc, sd, stp, r, rc, rd, rtp, W), MPI_SUCCESS, "alltoallw.rc");
	} else {
		MPI_Ialltoallw(s, sc, sd, stp, r, rc, rd, rtp, W, &q);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
	}
	int good = 1;
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rc[i]; k++) {
			if (rank % 2)
				good &= ((double *)(r + rd[i]))[k] == val(i, rank, k) + 0.5;
			else
				good &= ((int *)(r + rd[i]))[k] == val(i, rank, k);
		}
		good &= (unsigned char)r[64 * i] == 0x7f;
	}
	check(good, blocking ? "alltoallw.typed_blocks" : "ialltoallw.typed_blocks");
	if (!blocking) {
		/* in place, same types both ways: ints from everyone */
		for (int i = 0; i < n; i++) {
			rtp[i] = MPI_INT;
			rc[i] = (rank + i) % 3;
			for (int k = 0; k < rc[i]; k++)
				((int *)(r + rd[i]))[k] = val(rank, i, k);
		}
		MPI_Ialltoallw(MPI_IN_PLACE, NULL, NULL, NULL, r, rc, rd, rtp, W, &q);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		good = 1;
		for (int i = 0; i < n; i++)
			for (int k = 0; k < rc[i]; k++)
				good &= ((int *)(r + rd[i]))[k] == val(i, rank, k);
		check(good, "ialltoallw.in_place");
	}
	free(s);
	free(r);
	free(stp);
	free(rtp);
	free(sc);
	free(sd);
	free(rc);
	free(rd);
}

/* affine maps x -> a x + b composed in rank order: not commutative */
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

static void ireduce_scatter(void)
{
	int *c = ints(size, 0), total = 0;
	for (int i = 0; i < size; i++)
		total += c[i] = i % 3;
	int *s = ints(total, 0), out[3] = {-1, -1, -1}, off = 0;
	for (int i = 0; i < total; i++)
		s[i] = rank * 10 + i;
	for (int i = 0; i < rank; i++)
		off += c[i];
	MPI_Request q;
	MPI_Ireduce_scatter(s, out, c, MPI_INT, MPI_SUM, W, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	int good = out[c[rank]] == -1 || c[rank] == 3;
	for (int k = 0; k < c[rank]; k++)
		good &= out[k] == 10 * size * (size - 1) / 2 + size * (off + k);
	check(good, "ireduce_scatter.sum");
	MPI_Ireduce_scatter(MPI_IN_PLACE, s, c, MPI_INT, MPI_MAX, W, &q);
	wait_or_test(&q, 1);
	good = 1;
	for (int k = 0; k < c[rank]; k++)
		good &= s[k] == 10 * (size - 1) + off + k;
	check(good, "ireduce_scatter.in_place_max");

	/* block form, the non-commutative op on (a, b) pairs */
	MPI_Op op;
	MPI_Datatype pair;
	MPI_Op_create(compose, 0, &op);
	MPI_Type_contiguous(2, MPI_INT, &pair);
	MPI_Type_commit(&pair);
	int *m = ints(2 * size, 0), res[2] = {0, 0};
	for (int j = 0; j < size; j++) {
		m[2 * j] = 1 + (rank + j) % 2;
		m[2 * j + 1] = rank - j;
	}
	MPI_Ireduce_scatter_block(m, res, 1, pair, op, W, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	int a = 1, b = 0;
	for (int r = 0; r < size; r++) {
		int ma = 1 + (r + rank) % 2, mb = r - rank;
		b = ma * b + mb;
		a = ma * a;
	}
	check(res[0] == a && res[1] == b, "ireduce_scatter_block.noncommutative");
	MPI_Type_free(&pair);
	MPI_Op_free(&op);
	free(m);
	free(s);
	free(c);
}

/* every kind in flight at once, then one Waitall */
static void all_at_once(void)
{
	int n = size, *one = ints(n, 1), *d = ints(n, 0), *g = ints(n, -1), *a = ints(n, -1);
	int *sa = ints(n, 0), *ra = ints(n, -1), rs = -1, sc = -1;
	for (int i = 0; i < n; i++) {
		d[i] = i;
		sa[i] = val(rank, i, 0);
	}
	MPI_Datatype *it = malloc((size_t)n * sizeof(*it));
	int *bd = ints(n, 0);
	for (int i = 0; i < n; i++) {
		it[i] = MPI_INT;
		bd[i] = i * (int)sizeof(int);
	}
	int *wa = ints(n, -1), *ws = ints(n, 0);
	for (int i = 0; i < n; i++)
		ws[i] = val(rank, i, 1);
	MPI_Request q[6];
	int me = rank;
	MPI_Igatherv(&me, 1, MPI_INT, g, one, d, MPI_INT, n - 1, W, &q[0]);
	MPI_Iallgatherv(&me, 1, MPI_INT, a, one, d, MPI_INT, W, &q[1]);
	MPI_Ialltoallv(sa, one, d, MPI_INT, ra, one, d, MPI_INT, W, &q[2]);
	MPI_Ialltoallw(ws, one, bd, it, wa, one, bd, it, W, &q[3]);
	MPI_Ireduce_scatter_block(one, &rs, 1, MPI_INT, MPI_SUM, W, &q[4]);
	MPI_Iscatterv(d, one, d, MPI_INT, &sc, 1, MPI_INT, 0, W, &q[5]);
	checkrc(MPI_Waitall(6, q, MPI_STATUSES_IGNORE), MPI_SUCCESS, "overlap.waitall");
	int good = 1;
	for (int i = 0; i < n; i++) {
		good &= rank != n - 1 || g[i] == i;
		good &= a[i] == i && ra[i] == val(i, rank, 0) && wa[i] == val(i, rank, 1);
	}
	check(good && rs == n && sc == rank, "overlap.every_result");
	free(one);
	free(d);
	free(g);
	free(a);
	free(sa);
	free(ra);
	free(it);
	free(bd);
	free(wa);
	free(ws);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	for (int root = 0; root < size; root++)
		gatherv_scatterv(root, root % 2);
	allgatherv();
	alltoallv();
	alltoallw(0);
	alltoallw(1);
	ireduce_scatter();
	all_at_once();
	return suite_finish("nbcollv");
}
