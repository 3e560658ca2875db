/* Collectives between the groups of an intercommunicator (the even and the
 * odd ranks of WORLD): every non-blocking one (Ibarrier, Ibcast from
 * MPI_ROOT to the remote group with MPI_PROC_NULL beside it, Iallreduce,
 * Ireduce, Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v/w),
 * Ireduce_scatter(_block)) and the blocking Alltoallw, Reduce_scatter and
 * Reduce_scatter_block; then rank 0 against the rest (groups of 1 and
 * size - 1). The reductions use a non-commutative op (2x2 matrix products
 * mod a prime): MPI folds the remote group's operands in its rank order,
 * any other order gives another answer. Blocks are by rank of the remote
 * group; v-forms place them in reverse order with uneven counts. One rank:
 * only the answer on an intracommunicator. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;
static int color, lrank, lsize, rsize;
static int (*world_of)(int col, int r);
static MPI_Datatype mat;
static MPI_Op matop;

/* even/odd: rank r of group col (even ranks 0, odd ranks 1) */
static int world_eo(int col, int r) { return 2 * r + col; }
/* rank 0 (group 1) against the rest (group 0) */
static int world_0r(int col, int r) { return col ? 0 : r + 1; }

/* world rank w's matrix k */
static void mat_of(int w, int k, int *m)
{
	m[0] = 1 + k % 7;
	m[1] = w + 2;
	m[2] = 3 * w + k;
	m[3] = 1;
}

/* the remote group's matrices k multiplied in its rank order */
static void remote_product(int k, int *m)
{
	int x[4];
	m[0] = m[3] = 1;
	m[1] = m[2] = 0;
	for (int r = 0; r < rsize; r++) {
		mat_of(world_of(1 - color, r), k, x);
		suite_matmul(m, x, m);
	}
}

/* the root argument when the root is rank r of group col */
static int root_of(int col, int r)
{
	return color == col ? (lrank == r ? MPI_ROOT : MPI_PROC_NULL) : r;
}

static void done(MPI_Request *q, const char *name)
{
	checkrc(MPI_Wait(q, MPI_STATUS_IGNORE), MPI_SUCCESS, name);
}

static void barrier_bcast(MPI_Comm ic, const char *pre)
{
	MPI_Request q[2];
	checkrc(MPI_Ibarrier(ic, &q[0]), MPI_SUCCESS, nm("%s.ibarrier.rc", pre));
	checkrc(MPI_Ibarrier(ic, &q[1]), MPI_SUCCESS, nm("%s.ibarrier.second_rc", pre));
	checkrc(MPI_Waitall(2, q, MPI_STATUSES_IGNORE), MPI_SUCCESS, nm("%s.ibarrier.both", pre));
	/* group 0's last rank to group 1 when that is one rank, else group 0's
	 * rank 0 (Debian's MPICH 4.0.2 loses an Ibcast from a root other than
	 * 0 to a larger group); then group 1's rank 0 to group 0 */
	int g1 = color ? lsize : rsize, last = g1 == 1 ? (color ? rsize : lsize) - 1 : 0;
	int root = root_of(0, last), v[3] = {-1, -1, -1};
	if (root == MPI_ROOT)
		v[0] = 7, v[1] = rank, v[2] = 9;
	checkrc(MPI_Ibcast(v, 3, MPI_INT, root, ic, &q[0]), MPI_SUCCESS, nm("%s.ibcast.rc", pre));
	done(&q[0], nm("%s.ibcast.wait", pre));
	if (color == 1)
		check(v[0] == 7 && v[1] == world_of(0, last) && v[2] == 9,
		      nm("%s.ibcast.from_remote_root", pre));
	else if (root == MPI_PROC_NULL)
		check(v[0] == -1 && v[1] == -1 && v[2] == -1, nm("%s.ibcast.proc_null_untouched", pre));
	double d = color == 1 && lrank == 0 ? 2.5 : 0.0;
	MPI_Ibcast(&d, 1, MPI_DOUBLE, root_of(1, 0), ic, &q[0]);
	done(&q[0], nm("%s.ibcast2.wait", pre));
	if (color == 0)
		check(d == 2.5, nm("%s.ibcast.from_remote_first", pre));
}

/* n matrices per rank: each rank's matrices k in buf */
static int *mats(int n)
{
	int *m = malloc(sizeof(int) * 4 * (size_t)(n + 1));
	for (int k = 0; k < n; k++)
		mat_of(rank, k, m + 4 * k);
	return m;
}

/* got's n matrices are the remote products of matrices first.. */
static int products_are(const int *got, int first, int n)
{
	int ok = 1, w[4];
	for (int k = 0; k < n; k++) {
		remote_product(first + k, w);
		ok = ok && !memcmp(got + 4 * k, w, sizeof(w));
	}
	return ok;
}

static void reductions(MPI_Comm ic, const char *pre)
{
	int *mine = mats(2), got[8];
	MPI_Request q;
	memset(got, 0xff, sizeof(got));
	checkrc(MPI_Iallreduce(mine, got, 2, mat, matop, ic, &q), MPI_SUCCESS,
		nm("%s.iallreduce.rc", pre));
	done(&q, nm("%s.iallreduce.wait", pre));
	check(products_are(got, 0, 2), nm("%s.iallreduce.remote_product_in_rank_order", pre));
	memset(got, 0xff, sizeof(got));
	MPI_Allreduce(mine, got, 2, mat, matop, ic);
	check(products_are(got, 0, 2), nm("%s.allreduce.the_same", pre));
	/* to group 1's last rank */
	int root = root_of(1, (color ? lsize : rsize) - 1);
	memset(got, 0xff, sizeof(got));
	checkrc(MPI_Ireduce(mine, got, 2, mat, matop, root, ic, &q), MPI_SUCCESS,
		nm("%s.ireduce.rc", pre));
	done(&q, nm("%s.ireduce.wait", pre));
	if (root == MPI_ROOT)
		check(products_are(got, 0, 2), nm("%s.ireduce.root_gets_remote_product", pre));
	free(mine);
}

/* Reduce_scatter with uneven counts (the first rank one more, the last one
 * less) and Reduce_scatter_block, blocking and not: 2 * lsize * rsize
 * matrices each, the same total on both sides */
static void reduce_scatters(MPI_Comm ic, const char *pre)
{
	int total = 2 * lsize * rsize, base = 2 * rsize, off = 0;
	int *counts = malloc(sizeof(int) * (size_t)lsize), *sb = mats(total);
	int *rb = malloc(sizeof(int) * 4 * (size_t)(base + 2));
	for (int i = 0; i < lsize; i++)
		counts[i] = base + (lsize > 1 && i == 0) - (lsize > 1 && i == lsize - 1);
	for (int i = 0; i < lrank; i++)
		off += counts[i];
	for (int nb = 0; nb < 2; nb++) {
		const char *how = nb ? "ireduce_scatter" : "reduce_scatter";
		MPI_Request q = MPI_REQUEST_NULL;
		memset(rb, 0xff, sizeof(int) * 4 * (size_t)(base + 2));
		int rc = nb ? MPI_Ireduce_scatter(sb, rb, counts, mat, matop, ic, &q)
			    : MPI_Reduce_scatter(sb, rb, counts, mat, matop, ic);
		checkrc(rc, MPI_SUCCESS, nm("%s.%s.rc", pre, how));
		done(&q, nm("%s.%s.wait", pre, how));
		check(products_are(rb, off, counts[lrank]), nm("%s.%s.my_block", pre, how));
		how = nb ? "ireduce_scatter_block" : "reduce_scatter_block";
		memset(rb, 0xff, sizeof(int) * 4 * (size_t)(base + 2));
		rc = nb ? MPI_Ireduce_scatter_block(sb, rb, base, mat, matop, ic, &q)
			: MPI_Reduce_scatter_block(sb, rb, base, mat, matop, ic);
		checkrc(rc, MPI_SUCCESS, nm("%s.%s.rc", pre, how));
		done(&q, nm("%s.%s.wait", pre, how));
		check(products_are(rb, lrank * base, base), nm("%s.%s.my_block", pre, how));
	}
	free(counts);
	free(sb);
	free(rb);
}

/* counts i % 2 + 1 by remote rank i, placed in reverse rank order */
static int reverse_blocks(int *cnt, int *dsp)
{
	int at = 0;
	for (int i = rsize - 1; i >= 0; i--) {
		cnt[i] = i % 2 + 1;
		dsp[i] = at;
		at += cnt[i];
	}
	return at;
}

static void rooted(MPI_Comm ic, const char *pre, int *all, int *cnt, int *dsp)
{
	MPI_Request q;
	int ok = 1, two[2] = {rank, -rank}, v[2] = {-1, -1};
	/* gathers to group 0's rank 0 */
	int root = root_of(0, 0);
	checkrc(MPI_Igather(&rank, 1, MPI_INT, all, 1, MPI_INT, root, ic, &q), MPI_SUCCESS,
		nm("%s.igather.rc", pre));
	done(&q, nm("%s.igather.wait", pre));
	for (int i = 0; root == MPI_ROOT && i < rsize; i++)
		ok = ok && all[i] == world_of(1 - color, i);
	check(ok, nm("%s.igather.blocks_by_remote_rank", pre));
	reverse_blocks(cnt, dsp);
	ok = 1;
	MPI_Igatherv(two, lrank % 2 + 1, MPI_INT, all, cnt, dsp, MPI_INT, root, ic, &q);
	done(&q, nm("%s.igatherv.wait", pre));
	for (int i = 0; root == MPI_ROOT && i < rsize; i++) {
		int w = world_of(1 - color, i);
		ok = ok && all[dsp[i]] == w && (cnt[i] == 1 || all[dsp[i] + 1] == -w);
	}
	check(ok, nm("%s.igatherv.counts_and_displacements", pre));
	/* scatters from group 1's rank 0 */
	root = root_of(1, 0);
	for (int i = 0; i < rsize; i++)
		all[i] = 500 + i;
	MPI_Iscatter(all, 1, MPI_INT, v, 1, MPI_INT, root, ic, &q);
	done(&q, nm("%s.iscatter.wait", pre));
	if (color == 0)
		checki(v[0], 500 + lrank, nm("%s.iscatter.own_block", pre));
	for (int i = 0; i < rsize; i++)
		all[dsp[i] + cnt[i] - 1] = 2000 + i, all[dsp[i]] = 1000 + i;
	MPI_Iscatterv(all, cnt, dsp, MPI_INT, v, lrank % 2 + 1, MPI_INT, root, ic, &q);
	done(&q, nm("%s.iscatterv.wait", pre));
	if (color == 0)
		check(v[0] == 1000 + lrank && (lrank % 2 == 0 || v[1] == 2000 + lrank),
		      nm("%s.iscatterv.own_block", pre));
}

static void allgathers(MPI_Comm ic, const char *pre, int *all, int *cnt, int *dsp)
{
	MPI_Request q;
	int ok = 1, two[2] = {rank, -rank};
	MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, ic, &q);
	done(&q, nm("%s.iallgather.wait", pre));
	for (int i = 0; i < rsize; i++)
		ok = ok && all[i] == world_of(1 - color, i);
	check(ok, nm("%s.iallgather.remote_group", pre));
	reverse_blocks(cnt, dsp);
	ok = 1;
	MPI_Iallgatherv(two, lrank % 2 + 1, MPI_INT, all, cnt, dsp, MPI_INT, ic, &q);
	done(&q, nm("%s.iallgatherv.wait", pre));
	for (int i = 0; i < rsize; i++) {
		int w = world_of(1 - color, i);
		ok = ok && all[dsp[i]] == w && (cnt[i] == 1 || all[dsp[i] + 1] == -w);
	}
	check(ok, nm("%s.iallgatherv.counts_and_displacements", pre));
}

/* the w-forms' type between world ranks a and b: 3 shorts or 1 int */
static MPI_Datatype wtype(int a, int b, int *count, int *bytes)
{
	int shorts = (a + b) % 2;
	*count = shorts ? 3 : 1;
	*bytes = shorts ? 3 * (int)sizeof(short) : (int)sizeof(int);
	return shorts ? MPI_SHORT : MPI_INT;
}

/* Ialltoallw, then Alltoallw: to remote rank j the value 10 * rank + j in
 * the pair's type, byte displacements back to back */
static void alltoallw(MPI_Comm ic, const char *pre)
{
	int n = rsize, *sc = malloc(sizeof(int) * 4 * (size_t)n), *sd = sc + n, *rc = sd + n,
	    *rd = rc + n, at = 0, bytes;
	MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * 2 * (size_t)n), *rt = st + n;
	char *sb = malloc(16 * (size_t)n), *rb = malloc(16 * (size_t)n);
	for (int j = 0; j < n; j++) {
		st[j] = wtype(rank, world_of(1 - color, j), &sc[j], &bytes);
		sd[j] = at;
		for (int e = 0; e < sc[j]; e++) {
			short s = (short)(10 * rank + j);
			int i = 10 * rank + j;
			memcpy(sb + at + e * bytes / sc[j], st[j] == MPI_SHORT ? (void *)&s : (void *)&i,
			       (size_t)(bytes / sc[j]));
		}
		at += bytes;
	}
	at = 0;
	for (int i = 0; i < n; i++) {
		rt[i] = wtype(world_of(1 - color, i), rank, &rc[i], &bytes);
		rd[i] = at;
		at += bytes;
	}
	for (int nb = 0; nb < 2; nb++) {
		MPI_Request q = MPI_REQUEST_NULL;
		memset(rb, 0xff, 16 * (size_t)n);
		if (nb)
			MPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, ic);
		else
			MPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, ic, &q);
		done(&q, nm("%s.%s.wait", pre, nb ? "alltoallw" : "ialltoallw"));
		int ok = 1;
		for (int i = 0; i < n; i++) {
			int want = 10 * world_of(1 - color, i) + lrank, got;
			short s;
			for (int e = 0; e < rc[i]; e++) {
				if (rt[i] == MPI_SHORT) {
					memcpy(&s, rb + rd[i] + e * (int)sizeof(short), sizeof(s));
					got = s;
				} else {
					memcpy(&got, rb + rd[i], sizeof(got));
				}
				ok = ok && got == want;
			}
		}
		check(ok, nm("%s.%s.blocks_and_types", pre, nb ? "alltoallw" : "ialltoallw"));
	}
	free(sc);
	free(st);
	free(sb);
	free(rb);
}

static void alltoalls(MPI_Comm ic, const char *pre, int *all, int *cnt, int *dsp)
{
	MPI_Request q;
	int n = rsize, ok = 1, *sb = malloc(sizeof(int) * 2 * (size_t)(n + 1));
	int *sc = malloc(sizeof(int) * 2 * (size_t)(n + 1)), *sd = sc + n + 1;
	for (int j = 0; j < n; j++)
		sb[j] = 100 * rank + j;
	MPI_Ialltoall(sb, 1, MPI_INT, all, 1, MPI_INT, ic, &q);
	done(&q, nm("%s.ialltoall.wait", pre));
	for (int i = 0; i < n; i++)
		ok = ok && all[i] == 100 * world_of(1 - color, i) + lrank;
	check(ok, nm("%s.ialltoall.blocks", pre));
	/* to remote j: lrank % 2 + 1 ints; from remote i: i % 2 + 1, in reverse */
	for (int j = 0, at = 0; j < n; j++, at += 2) {
		sc[j] = lrank % 2 + 1;
		sd[j] = at;
		sb[at] = 10 * rank + j;
		sb[at + 1] = -(10 * rank + j);
	}
	reverse_blocks(cnt, dsp);
	ok = 1;
	MPI_Ialltoallv(sb, sc, sd, MPI_INT, all, cnt, dsp, MPI_INT, ic, &q);
	done(&q, nm("%s.ialltoallv.wait", pre));
	for (int i = 0; i < n; i++) {
		int w = 10 * world_of(1 - color, i) + lrank;
		ok = ok && all[dsp[i]] == w && (cnt[i] == 1 || all[dsp[i] + 1] == -w);
	}
	check(ok, nm("%s.ialltoallv.counts_and_displacements", pre));
	free(sb);
	free(sc);
	alltoallw(ic, pre);
}

static void all_of(MPI_Comm ic, const char *pre)
{
	int *all = malloc(sizeof(int) * 2 * (size_t)(rsize + 1));
	int *cnt = malloc(sizeof(int) * 2 * (size_t)(rsize + 1)), *dsp = cnt + rsize + 1;
	barrier_bcast(ic, pre);
	reductions(ic, pre);
	reduce_scatters(ic, pre);
	rooted(ic, pre, all, cnt, dsp);
	allgathers(ic, pre, all, cnt, dsp);
	alltoalls(ic, pre, all, cnt, dsp);
	free(all);
	free(cnt);
}

/* groups col (this rank's) of lsize and 1 - col of rsize; lrank its rank */
static MPI_Comm make(int col, int lr, int rleader, int tag)
{
	MPI_Comm local, ic;
	color = col;
	lrank = lr;
	MPI_Comm_split(W, color, rank, &local);
	MPI_Comm_size(local, &lsize);
	checkrc(MPI_Intercomm_create(local, 0, W, rleader, tag, &ic), MPI_SUCCESS,
		nm("create.%d.rc", tag));
	MPI_Comm_remote_size(ic, &rsize);
	MPI_Comm_free(&local);
	return ic;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	int flag = -1;
	MPI_Comm_test_inter(W, &flag);
	checki(flag, 0, "intra.test_inter");
	MPI_Type_contiguous(4, MPI_INT, &mat);
	MPI_Type_commit(&mat);
	MPI_Op_create(suite_mat_op, 0, &matop);
	if (size >= 2) {
		/* the leaders are world ranks 0 and 1 */
		world_of = world_eo;
		MPI_Comm ic = make(rank % 2, rank / 2, 1 - rank % 2, 77);
		all_of(ic, "eo");
		MPI_Comm_free(&ic);
		world_of = world_0r;
		ic = make(rank == 0, rank ? rank - 1 : 0, rank == 0 ? 1 : 0, 78);
		all_of(ic, "0r");
		MPI_Comm_free(&ic);
	}
	MPI_Op_free(&matop);
	MPI_Type_free(&mat);
	return suite_finish("icoll");
}
