/* Collective conformance: Barrier, Bcast, Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v), with every root and their MPI_IN_PLACE forms; Reduce, Allreduce
 * and Scan with user operations (Op_create), commutative or not, on a derived
 * datatype. The predefined operations on every type are in ops.c. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static int val(int from, int i) { return from * 1000 + i + 1; }

/* rank r contributes (r % 3) + 1 elements to the v-variants */
static int vcount(int r) { return r % 3 + 1; }

static void bcast(void)
{
	for (int root = 0; root < size; root++) {
		int b[5];
		for (int i = 0; i < 5; i++)
			b[i] = rank == root ? val(root, i) : -1;
		checkrc(MPI_Bcast(b, 5, MPI_INT, root, W), MPI_SUCCESS, nm("bcast.root%d.rc", root));
		check(b[0] == val(root, 0) && b[4] == val(root, 4), nm("bcast.root%d.data", root));
	}
	/* several MiB from the last rank */
	int n = 3 * 1024 * 1024 + 1, good = 1, root = size - 1;
	int *big = malloc((size_t)n * sizeof *big);
	for (int i = 0; i < n; i++)
		big[i] = rank == root ? val(root, i) : 0;
	MPI_Bcast(big, n, MPI_INT, root, W);
	for (int i = 0; i < n; i++)
		good &= big[i] == val(root, i);
	check(good, "bcast.large.data");
	free(big);
	MPI_Bcast(NULL, 0, MPI_INT, 0, W);
	check(1, "bcast.zero");
}

static void gather_scatter(void)
{
	int *all = malloc((size_t)size * 3 * sizeof *all), mine[3], good;
	for (int root = 0; root < size; root++) {
		/* Gather */
		for (int i = 0; i < 3; i++)
			mine[i] = val(rank, i);
		for (int i = 0; i < 3 * size; i++)
			all[i] = -1;
		MPI_Gather(mine, 3, MPI_INT, all, 3, MPI_INT, root, W);
		if (rank == root) {
			good = 1;
			for (int r = 0; r < size; r++)
				for (int i = 0; i < 3; i++)
					good &= all[3 * r + i] == val(r, i);
			check(good, nm("gather.root%d", root));
			/* IN_PLACE at the root: its own block is already in place */
			for (int i = 0; i < 3 * size; i++)
				all[i] = -1;
			for (int i = 0; i < 3; i++)
				all[3 * root + i] = val(root, i);
			MPI_Gather(MPI_IN_PLACE, 3, MPI_INT, all, 3, MPI_INT, root, W);
			good = 1;
			for (int r = 0; r < size; r++)
				good &= all[3 * r + 2] == val(r, 2);
			check(good, nm("gather.in_place.root%d", root));
		} else {
			MPI_Gather(mine, 3, MPI_INT, NULL, 0, MPI_INT, root, W);
		}

		/* Scatter */
		if (rank == root)
			for (int r = 0; r < size; r++)
				for (int i = 0; i < 3; i++)
					all[3 * r + i] = val(r, i) + root;
		mine[0] = mine[1] = mine[2] = -1;
		MPI_Scatter(all, 3, MPI_INT, mine, 3, MPI_INT, root, W);
		check(mine[0] == val(rank, 0) + root && mine[2] == val(rank, 2) + root,
		      nm("scatter.root%d", root));
		if (rank == root) {
			all[3 * root] = -5;
			MPI_Scatter(all, 3, MPI_INT, MPI_IN_PLACE, 3, MPI_INT, root, W);
			check(all[3 * root] == -5, nm("scatter.in_place.root%d.kept", root));
		} else {
			mine[0] = -1;
			MPI_Scatter(NULL, 0, MPI_INT, mine, 3, MPI_INT, root, W);
			check(mine[0] == val(rank, 0) + root, nm("scatter.in_place.root%d", root));
		}
	}
	free(all);
}

static void gatherv_scatterv(void)
{
	int *counts = malloc((size_t)size * sizeof *counts), *displs = malloc((size_t)size * sizeof *displs);
	int total = 0;
	/* blocks in reverse rank order with a gap of one element between them */
	for (int r = size - 1; r >= 0; r--) {
		counts[r] = vcount(r);
		displs[r] = total;
		total += counts[r] + 1;
	}
	int *all = malloc((size_t)total * sizeof *all), mine[3], good;
	for (int root = 0; root < size; root++) {
		for (int i = 0; i < 3; i++)
			mine[i] = val(rank, i);
		for (int i = 0; i < total; i++)
			all[i] = -1;
		MPI_Gatherv(mine, vcount(rank), MPI_INT, all, counts, displs, MPI_INT, root, W);
		if (rank == root) {
			good = 1;
			for (int r = 0; r < size; r++) {
				for (int i = 0; i < counts[r]; i++)
					good &= all[displs[r] + i] == val(r, i);
				good &= all[displs[r] + counts[r]] == -1;
			}
			check(good, nm("gatherv.root%d", root));
			for (int i = 0; i < total; i++)
				all[i] = -1;
			for (int i = 0; i < counts[root]; i++)
				all[displs[root] + i] = val(root, i);
			MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, all, counts, displs, MPI_INT, root, W);
			good = 1;
			for (int r = 0; r < size; r++)
				good &= all[displs[r]] == val(r, 0);
			check(good, nm("gatherv.in_place.root%d", root));
		} else {
			MPI_Gatherv(mine, vcount(rank), MPI_INT, NULL, NULL, NULL, MPI_INT, root, W);
		}

		if (rank == root)
			for (int r = 0; r < size; r++)
				for (int i = 0; i < counts[r]; i++)
					all[displs[r] + i] = val(r, i) * 2;
		mine[0] = mine[1] = mine[2] = -1;
		MPI_Scatterv(all, counts, displs, MPI_INT, mine, 3, MPI_INT, root, W);
		good = 1;
		for (int i = 0; i < 3; i++)
			good &= mine[i] == (i < vcount(rank) ? val(rank, i) * 2 : -1);
		check(good, nm("scatterv.root%d", root));
		if (rank == root) {
			MPI_Scatterv(all, counts, displs, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root, W);
			check(all[displs[root]] == val(root, 0) * 2, nm("scatterv.in_place.root%d", root));
		} else {
			mine[0] = -1;
			MPI_Scatterv(NULL, NULL, NULL, MPI_INT, mine, 3, MPI_INT, root, W);
			check(mine[0] == val(rank, 0) * 2, nm("scatterv.in_place.root%d", root));
		}
	}
	free(all);
	free(counts);
	free(displs);
}

static void allgather_alltoall(void)
{
	int n = size, good;
	int *all = malloc((size_t)n * 4 * sizeof *all), *out = malloc((size_t)n * 4 * sizeof *out);
	int mine[2] = { val(rank, 0), val(rank, 1) };
	MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		good &= all[2 * r] == val(r, 0) && all[2 * r + 1] == val(r, 1);
	check(good, "allgather");
	for (int i = 0; i < 2 * n; i++)
		all[i] = -1;
	all[2 * rank] = val(rank, 0);
	all[2 * rank + 1] = val(rank, 1);
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		good &= all[2 * r] == val(r, 0) && all[2 * r + 1] == val(r, 1);
	check(good, "allgather.in_place");

	/* Allgatherv: blocks in reverse order */
	int *counts = malloc((size_t)n * sizeof *counts), *displs = malloc((size_t)n * sizeof *displs);
	int total = 0;
	for (int r = n - 1; r >= 0; r--) {
		counts[r] = vcount(r);
		displs[r] = total;
		total += counts[r];
	}
	int *v = malloc((size_t)total * sizeof *v), m3[3] = { val(rank, 0), val(rank, 1), val(rank, 2) };
	MPI_Allgatherv(m3, vcount(rank), MPI_INT, v, counts, displs, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		for (int i = 0; i < counts[r]; i++)
			good &= v[displs[r] + i] == val(r, i);
	check(good, "allgatherv");
	for (int i = 0; i < total; i++)
		v[i] = -1;
	for (int i = 0; i < vcount(rank); i++)
		v[displs[rank] + i] = val(rank, i);
	MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		for (int i = 0; i < counts[r]; i++)
			good &= v[displs[r] + i] == val(r, i);
	check(good, "allgatherv.in_place");

	/* Alltoall: block for r is 2 ints (rank, r) */
	for (int r = 0; r < n; r++) {
		out[2 * r] = val(rank, r);
		out[2 * r + 1] = -val(rank, r);
	}
	MPI_Alltoall(out, 2, MPI_INT, all, 2, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		good &= all[2 * r] == val(r, rank) && all[2 * r + 1] == -val(r, rank);
	check(good, "alltoall");
	for (int r = 0; r < n; r++) {
		out[2 * r] = val(rank, r);
		out[2 * r + 1] = -val(rank, r);
	}
	MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, 2, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		good &= out[2 * r] == val(r, rank) && out[2 * r + 1] == -val(r, rank);
	check(good, "alltoall.in_place");

	/* Alltoallv: rank s sends (s + r) % 3 + 1 ints to r, blocks reversed */
	int *sc = malloc((size_t)n * sizeof *sc), *sd = malloc((size_t)n * sizeof *sd);
	int *rc = malloc((size_t)n * sizeof *rc), *rd = malloc((size_t)n * sizeof *rd);
	int st = 0, rt = 0;
	for (int r = n - 1; r >= 0; r--) {
		sc[r] = (rank + r) % 3 + 1;
		sd[r] = st;
		st += sc[r];
		rc[r] = (r + rank) % 3 + 1;
		rd[r] = rt;
		rt += rc[r] + 1;
	}
	int *sb = malloc((size_t)st * sizeof *sb), *rb = malloc((size_t)rt * sizeof *rb);
	for (int r = 0; r < n; r++)
		for (int i = 0; i < sc[r]; i++)
			sb[sd[r] + i] = val(rank, r * 10 + i);
	for (int i = 0; i < rt; i++)
		rb[i] = -1;
	MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++) {
		for (int i = 0; i < rc[r]; i++)
			good &= rb[rd[r] + i] == val(r, rank * 10 + i);
		good &= rb[rd[r] + rc[r]] == -1;
	}
	check(good, "alltoallv");
	/* in place: send and receive layouts are the receive ones */
	for (int r = 0; r < n; r++)
		for (int i = 0; i < rc[r]; i++)
			rb[rd[r] + i] = val(rank, r * 10 + i);
	MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, W);
	good = 1;
	for (int r = 0; r < n; r++)
		for (int i = 0; i < rc[r]; i++)
			good &= rb[rd[r] + i] == val(r, rank * 10 + i);
	check(good, "alltoallv.in_place");
	free(sc), free(sd), free(rc), free(rd), free(sb), free(rb);
	free(all), free(out), free(counts), free(displs), free(v);
}

static void reduce_basic(void)
{
	int n = size, x[2] = { rank + 1, -(rank + 1) }, y[2] = { 0, 0 };
	int sum = n * (n + 1) / 2;
	for (int root = 0; root < n; root++) {
		y[0] = y[1] = 0;
		MPI_Reduce(x, y, 2, MPI_INT, MPI_SUM, root, W);
		if (rank == root)
			check(y[0] == sum && y[1] == -sum, nm("reduce.sum.root%d", root));
		else
			check(y[0] == 0, nm("reduce.sum.root%d.others_untouched", root));
	}
	int z[2] = { rank + 1, rank };
	MPI_Reduce(rank == n - 1 ? MPI_IN_PLACE : z, z, 2, MPI_INT, MPI_MAX, n - 1, W);
	if (rank == n - 1)
		check(z[0] == n && z[1] == n - 1, "reduce.in_place");
	MPI_Allreduce(x, y, 2, MPI_INT, MPI_SUM, W);
	check(y[0] == sum && y[1] == -sum, "allreduce.sum");
	z[0] = rank + 1, z[1] = rank;
	MPI_Allreduce(MPI_IN_PLACE, z, 2, MPI_INT, MPI_MIN, W);
	check(z[0] == 1 && z[1] == 0, "allreduce.in_place");
	MPI_Scan(x, y, 2, MPI_INT, MPI_SUM, W);
	checki(y[0], (rank + 1) * (rank + 2) / 2, "scan.sum");
	z[0] = rank + 1, z[1] = 0;
	MPI_Scan(MPI_IN_PLACE, z, 2, MPI_INT, MPI_SUM, W);
	checki(z[0], (rank + 1) * (rank + 2) / 2, "scan.in_place");
	MPI_Allreduce(x, y, 0, MPI_INT, MPI_SUM, W);
	check(1, "allreduce.zero");
	/* several MiB */
	int m = 1024 * 1024 + 5, good = 1;
	int *a = malloc((size_t)m * sizeof *a), *b = malloc((size_t)m * sizeof *b);
	for (int i = 0; i < m; i++)
		a[i] = (i % 7) + rank;
	MPI_Allreduce(a, b, m, MPI_INT, MPI_SUM, W);
	for (int i = 0; i < m; i++)
		good &= b[i] == n * (i % 7) + n * (n - 1) / 2;
	check(good, "allreduce.large");
	free(a), free(b);
}

/* A 2x2 matrix product modulo P: associative, not commutative. Each element
 * is one matrix, a contiguous type of 4 ints. */
#define P 10007
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	int *a = in, *b = inout;
	for (int k = 0; k < *len; k++, a += 4, b += 4) {
		long long c0 = ((long long)a[0] * b[0] + (long long)a[1] * b[2]) % P;
		long long c1 = ((long long)a[0] * b[1] + (long long)a[1] * b[3]) % P;
		long long c2 = ((long long)a[2] * b[0] + (long long)a[3] * b[2]) % P;
		long long c3 = ((long long)a[2] * b[1] + (long long)a[3] * b[3]) % P;
		b[0] = (int)c0, b[1] = (int)c1, b[2] = (int)c2, b[3] = (int)c3;
	}
}
static void mat_of(int r, int k, int m[4])
{
	m[0] = 1 + k;
	m[1] = r + 2;
	m[2] = 3 * r + k;
	m[3] = 1;
}
/* the product M(lo,k) ... M(hi,k) */
static void mat_prod(int lo, int hi, int k, int out[4])
{
	mat_of(lo, k, out);
	for (int r = lo + 1; r <= hi; r++) {
		int m[4], len = 1;
		mat_of(r, k, m);
		/* out = out * m: matmul computes inout = in * inout */
		matmul(out, m, &len, NULL);
		memcpy(out, m, sizeof m);
	}
}

/* commutative: the element-wise maximum of absolute values */
static void absmax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	int *a = in, *b = inout;
	for (int i = 0; i < *len; i++) {
		int x = abs(a[i]), y = abs(b[i]);
		b[i] = x > y ? x : y;
	}
}

static void user_ops(void)
{
	MPI_Datatype mat;
	MPI_Op mul, amax;
	MPI_Type_contiguous(4, MPI_INT, &mat);
	MPI_Type_commit(&mat);
	checkrc(MPI_Op_create(matmul, 0, &mul), MPI_SUCCESS, "op_create.noncommutative");
	checkrc(MPI_Op_create(absmax, 1, &amax), MPI_SUCCESS, "op_create.commutative");
	enum { K = 3 };
	int mine[4 * K], res[4 * K], want[4], good;
	for (int k = 0; k < K; k++)
		mat_of(rank, k, mine + 4 * k);
	for (int root = 0; root < size; root++) {
		memset(res, 0, sizeof res);
		MPI_Reduce(mine, res, K, mat, mul, root, W);
		if (rank == root) {
			good = 1;
			for (int k = 0; k < K; k++) {
				mat_prod(0, size - 1, k, want);
				good &= memcmp(want, res + 4 * k, sizeof want) == 0;
			}
			check(good, nm("reduce.noncommutative.root%d", root));
		}
	}
	memset(res, 0, sizeof res);
	MPI_Allreduce(mine, res, K, mat, mul, W);
	good = 1;
	for (int k = 0; k < K; k++) {
		mat_prod(0, size - 1, k, want);
		good &= memcmp(want, res + 4 * k, sizeof want) == 0;
	}
	check(good, "allreduce.noncommutative");
	MPI_Scan(mine, res, K, mat, mul, W);
	good = 1;
	for (int k = 0; k < K; k++) {
		mat_prod(0, rank, k, want);
		good &= memcmp(want, res + 4 * k, sizeof want) == 0;
	}
	check(good, "scan.noncommutative");
	memcpy(res, mine, sizeof res);
	MPI_Allreduce(MPI_IN_PLACE, res, K, mat, mul, W);
	mat_prod(0, size - 1, K - 1, want);
	check(memcmp(want, res + 4 * (K - 1), sizeof want) == 0, "allreduce.noncommutative.in_place");

	int a[3] = { rank % 2 ? -rank : rank, -1, 2 * rank - 3 }, b[3];
	MPI_Allreduce(a, b, 3, MPI_INT, amax, W);
	int w2 = 0;
	for (int r = 0; r < size; r++)
		w2 = abs(2 * r - 3) > w2 ? abs(2 * r - 3) : w2;
	/* one contribution alone is the result: the operation is not applied */
	if (size == 1)
		w2 = -3;
	check(b[0] == size - 1 && b[1] == (size > 1 ? 1 : -1) && b[2] == w2, "allreduce.commutative");
	MPI_Scan(a, b, 3, MPI_INT, amax, W);
	check(b[0] == rank && b[1] == (rank > 0 ? 1 : -1), "scan.commutative");
	MPI_Reduce(a, b, 3, MPI_INT, amax, 0, W);
	if (rank == 0)
		check(b[0] == size - 1, "reduce.commutative");
	MPI_Type_free(&mat);
	check(mat == MPI_DATATYPE_NULL, "type_free.null");
}

static void barrier(void)
{
	/* a message sent before the barrier is there to probe after it */
	int x = val(rank, 0), flag = 0, y;
	MPI_Request rq;
	MPI_Isend(&x, 1, MPI_INT, (rank + 1) % size, 5, W, &rq);
	checkrc(MPI_Barrier(W), MPI_SUCCESS, "barrier.rc");
	while (!flag)
		MPI_Iprobe(MPI_ANY_SOURCE, 5, W, &flag, MPI_STATUS_IGNORE);
	MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 5, W, MPI_STATUS_IGNORE);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	check(y == val((rank + size - 1) % size, 0), "barrier.message");
	for (int i = 0; i < 20; i++)
		MPI_Barrier(W);
	check(1, "barrier.repeated");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	barrier();
	bcast();
	gather_scatter();
	gatherv_scatterv();
	allgather_alltoall();
	reduce_basic();
	user_ops();
	return suite_finish("coll");
}
