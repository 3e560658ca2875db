/* MPI-4 persistent collectives: each _init once, then started three times
 * with new data each time (MPI_Start + Wait, a Test loop, and Startall of
 * all of them at once with Waitall), then freed: Barrier, Bcast from each
 * root, Reduce and Allreduce with a non-commutative op (2x2 matrix
 * products mod a prime: rank order or another answer), Scan, Exscan,
 * Reduce_scatter(_block), Gather(v), Scatter(v), Allgather(v), Alltoall(v/w);
 * three started in a different order on each rank; a Bcast_init on an
 * intercommunicator (the even and the odd ranks).
 * BCS-MPI only: Debian's MPICH 4.0.2 leaves a persistent Gather's blocks
 * unset or wrong, fails later starts with "Invalid communicator", and hangs
 * in a Wait on a persistent collective not yet started (not done here). */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;
static MPI_Datatype mat;
static MPI_Op matop;
#define N 3 /* starts */

/* rank r's matrix k at start s */
static void mat_of(int r, int k, int s, int *m)
{
	m[0] = 1 + k + s;
	m[1] = r + 2;
	m[2] = 3 * r + k;
	m[3] = 1 + s;
}

/* the product of ranks lo..hi-1's matrices k at start s, in rank order */
static void product(int lo, int hi, int k, int s, int *m)
{
	int x[4];
	m[0] = m[3] = 1;
	m[1] = m[2] = 0;
	for (int r = lo; r < hi; r++) {
		mat_of(r, k, s, x);
		suite_matmul(m, x, m);
	}
}

/* the requests of one round, and what each start's data is */
enum { R_BARRIER, R_BCAST, R_REDUCE, R_ALLREDUCE, R_SCAN, R_EXSCAN, R_RS, R_RSB, R_GATHER,
       R_GATHERV, R_SCATTER, R_SCATTERV, R_ALLGATHER, R_ALLGATHERV, R_ALLTOALL, R_ALLTOALLV,
       R_ALLTOALLW, NREQ };
static const char *names[NREQ] = {"barrier", "bcast", "reduce", "allreduce", "scan", "exscan",
				  "reduce_scatter", "reduce_scatter_block", "gather", "gatherv",
				  "scatter", "scatterv", "allgather", "allgatherv", "alltoall",
				  "alltoallv", "alltoallw"};

struct bufs {
	int bc[2], red[8], redout[8], scan[4], scanout[4], exout[4];
	int *rs, *rsout, *cnt1, *dsp, *cnt, *rdsp, *bdsp, *in, *out;
	MPI_Datatype *types;
};

/* every send buffer's data for start s (the rooted ones' root is the
 * last rank) */
static void fill(struct bufs *b, int s)
{
	b->bc[0] = rank == size - 1 ? 1000 + s : -1;
	b->bc[1] = rank == size - 1 ? s : -1;
	for (int k = 0; k < 2; k++)
		mat_of(rank, k, s, b->red + 4 * k);
	mat_of(rank, 0, s, b->scan);
	for (int k = 0; k < 2 * size; k++)
		mat_of(rank, k, s, b->rs + 4 * k);
	for (int i = 0; i < 2 * size; i++) {
		b->in[i] = 10000 * s + 100 * rank + i;
		b->out[i] = -1;
	}
	memset(b->redout, 0xff, sizeof(b->redout));
	memset(b->scanout, 0xff, sizeof(b->scanout));
	memset(b->exout, 0xff, sizeof(b->exout));
}

static void inits(struct bufs *b, MPI_Request *q)
{
	MPI_Info in = MPI_INFO_NULL;
	int last = size - 1;
	MPI_Barrier_init(W, in, &q[R_BARRIER]);
	MPI_Bcast_init(b->bc, 2, MPI_INT, last, W, in, &q[R_BCAST]);
	MPI_Reduce_init(b->red, b->redout, 2, mat, matop, last, W, in, &q[R_REDUCE]);
	MPI_Allreduce_init(b->red, b->redout, 2, mat, matop, W, in, &q[R_ALLREDUCE]);
	MPI_Scan_init(b->scan, b->scanout, 1, mat, matop, W, in, &q[R_SCAN]);
	MPI_Exscan_init(b->scan, b->exout, 1, mat, matop, W, in, &q[R_EXSCAN]);
	MPI_Reduce_scatter_init(b->rs, b->rsout, b->cnt1, mat, matop, W, in, &q[R_RS]);
	MPI_Reduce_scatter_block_init(b->rs, b->rsout, 2, mat, matop, W, in, &q[R_RSB]);
	MPI_Gather_init(b->in, 1, MPI_INT, b->out, 1, MPI_INT, last, W, in, &q[R_GATHER]);
	MPI_Gatherv_init(b->in, rank % 2 + 1, MPI_INT, b->out, b->cnt, b->rdsp, MPI_INT, last, W,
			 in, &q[R_GATHERV]);
	MPI_Scatter_init(b->in, 1, MPI_INT, b->out, 1, MPI_INT, last, W, in, &q[R_SCATTER]);
	MPI_Scatterv_init(b->in, b->cnt, b->rdsp, MPI_INT, b->out, rank % 2 + 1, MPI_INT, last, W,
			  in, &q[R_SCATTERV]);
	MPI_Allgather_init(b->in, 1, MPI_INT, b->out, 1, MPI_INT, W, in, &q[R_ALLGATHER]);
	MPI_Allgatherv_init(b->in, rank % 2 + 1, MPI_INT, b->out, b->cnt, b->rdsp, MPI_INT, W, in,
			    &q[R_ALLGATHERV]);
	MPI_Alltoall_init(b->in, 1, MPI_INT, b->out, 1, MPI_INT, W, in, &q[R_ALLTOALL]);
	MPI_Alltoallv_init(b->in, b->cnt1, b->dsp, MPI_INT, b->out, b->cnt1, b->dsp, MPI_INT, W,
			   in, &q[R_ALLTOALLV]);
	MPI_Alltoallw_init(b->in, b->cnt1, b->bdsp, b->types, b->out, b->cnt1, b->bdsp, b->types, W,
			   in, &q[R_ALLTOALLW]);
}

static int mats_are(const int *got, int lo, int hi, int k0, int n, int s)
{
	int ok = 1, w[4];
	for (int k = 0; k < n; k++) {
		product(lo, hi, k0 + k, s, w);
		ok = ok && !memcmp(got + 4 * k, w, sizeof(w));
	}
	return ok;
}

/* is request i's result right for start s */
static int right(const struct bufs *b, int i, int s)
{
	int last = size - 1, ok = 1;
	switch (i) {
	case R_BARRIER:
		return 1;
	case R_BCAST:
		return b->bc[0] == 1000 + s && b->bc[1] == s;
	case R_REDUCE:
		return rank != last || mats_are(b->redout, 0, size, 0, 2, s);
	case R_ALLREDUCE:
		return mats_are(b->redout, 0, size, 0, 2, s);
	case R_SCAN:
		return mats_are(b->scanout, 0, rank + 1, 0, 1, s);
	case R_EXSCAN:
		return rank == 0 || mats_are(b->exout, 0, rank, 0, 1, s);
	case R_RS: /* rank r's block: 2 matrices at 2r (counts of 2 each) */
	case R_RSB:
		return mats_are(b->rsout, 0, size, 2 * rank, 2, s);
	case R_GATHER:
		for (int r = 0; rank == last && r < size; r++)
			ok = ok && b->out[r] == 10000 * s + 100 * r;
		return ok;
	case R_GATHERV:
	case R_ALLGATHERV:
		for (int r = 0; (rank == last || i == R_ALLGATHERV) && r < size; r++)
			ok = ok && b->out[b->rdsp[r]] == 10000 * s + 100 * r &&
			     (b->cnt[r] == 1 || b->out[b->rdsp[r] + 1] == 10000 * s + 100 * r + 1);
		return ok;
	case R_SCATTER:
		return b->out[0] == 10000 * s + 100 * last + rank;
	case R_SCATTERV:
		return b->out[0] == 10000 * s + 100 * last + b->rdsp[rank] &&
		       (rank % 2 == 0 || b->out[1] == 10000 * s + 100 * last + b->rdsp[rank] + 1);
	case R_ALLGATHER:
		for (int r = 0; r < size; r++)
			ok = ok && b->out[r] == 10000 * s + 100 * r;
		return ok;
	case R_ALLTOALL:
		for (int r = 0; r < size; r++)
			ok = ok && b->out[r] == 10000 * s + 100 * r + rank;
		return ok;
	default: /* Alltoallv and Alltoallw: two ints from each rank r */
		for (int r = 0; r < size; r++)
			ok = ok && b->out[2 * r] == 10000 * s + 100 * r + 2 * rank &&
			     b->out[2 * r + 1] == 10000 * s + 100 * r + 2 * rank + 1;
		return ok;
	}
}

/* each alone: started, then Wait (start 0) or a Test loop (start 1) */
static void alone(struct bufs *b, MPI_Request *q, int s)
{
	for (int i = 0; i < NREQ; i++) {
		fill(b, s);
		checkrc(MPI_Start(&q[i]), MPI_SUCCESS, nm("%s.start%d.rc", names[i], s));
		int flag = s == 0;
		if (s == 0)
			MPI_Wait(&q[i], MPI_STATUS_IGNORE);
		while (!flag)
			MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE);
		check(q[i] != MPI_REQUEST_NULL, nm("%s.start%d.handle_kept", names[i], s));
		check(right(b, i, s), nm("%s.start%d.result", names[i], s));
	}
}

/* the ones with buffers of their own all at once: Startall, Waitall */
static void together(struct bufs *b, MPI_Request *q, int s)
{
	static const int set[] = {R_BARRIER, R_BCAST, R_ALLREDUCE, R_SCAN, R_EXSCAN, R_RSB,
				  R_ALLTOALLW};
	MPI_Request some[7];
	fill(b, s);
	for (int k = 0; k < 7; k++)
		some[k] = q[set[k]];
	checkrc(MPI_Startall(7, some), MPI_SUCCESS, nm("startall%d.rc", s));
	checkrc(MPI_Waitall(7, some, MPI_STATUSES_IGNORE), MPI_SUCCESS, nm("waitall%d.rc", s));
	for (int k = 0; k < 7; k++)
		check(right(b, set[k], s), nm("%s.startall%d.result", names[set[k]], s));
}

/* started in a different order on each rank (MPI matches persistent
 * collectives by the order of their _init calls), a blocking Allreduce
 * between the starts and the waits */
static void out_of_order(void)
{
	int a = -1, x = rank + 1, sum = -1, sum2 = -1;
	MPI_Request q[3];
	MPI_Bcast_init(&a, 1, MPI_INT, 0, W, MPI_INFO_NULL, &q[0]);
	MPI_Barrier_init(W, MPI_INFO_NULL, &q[1]);
	MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, W, MPI_INFO_NULL, &q[2]);
	if (rank == 0)
		a = 42;
	for (int k = 0; k < 3; k++)
		MPI_Start(&q[(rank + (rank % 2 ? 2 - k : k)) % 3]);
	MPI_Allreduce(&x, &sum2, 1, MPI_INT, MPI_MAX, W);
	checkrc(MPI_Waitall(3, q, MPI_STATUSES_IGNORE), MPI_SUCCESS, "order.waitall_rc");
	check(a == 42 && sum == size * (size + 1) / 2 && sum2 == size, "order.results");
	for (int k = 0; k < 3; k++)
		MPI_Request_free(&q[k]);
}

/* the even ranks' rank 0 broadcasts to the odd ranks, started twice */
static void inter(void)
{
	MPI_Comm local, ic;
	int color = rank % 2, lrank = rank / 2, v = -1;
	MPI_Comm_split(W, color, rank, &local);
	MPI_Intercomm_create(local, 0, W, 1 - color, 5, &ic);
	int root = color ? 0 : lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
	MPI_Request q;
	checkrc(MPI_Bcast_init(&v, 1, MPI_INT, root, ic, MPI_INFO_NULL, &q), MPI_SUCCESS,
		"inter.bcast_init.rc");
	for (int s = 0; s < 2; s++) {
		v = root == MPI_ROOT ? 70 + s : -1;
		MPI_Start(&q);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		if (color)
			checki(v, 70 + s, nm("inter.bcast.start%d", s));
	}
	MPI_Request_free(&q);
	MPI_Comm_free(&ic);
	MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Type_contiguous(4, MPI_INT, &mat);
	MPI_Type_commit(&mat);
	MPI_Op_create(suite_mat_op, 0, &matop);
	struct bufs b;
	b.rs = malloc(sizeof(int) * 4 * 2 * (size_t)size);
	b.rsout = malloc(sizeof(int) * 4 * 2);
	b.cnt1 = malloc(sizeof(int) * 5 * (size_t)size);
	b.dsp = b.cnt1 + size;
	b.cnt = b.dsp + size;
	b.rdsp = b.cnt + size;
	b.bdsp = b.rdsp + size;
	b.in = malloc(sizeof(int) * 2 * (size_t)size);
	b.out = malloc(sizeof(int) * 2 * (size_t)size);
	b.types = malloc(sizeof(MPI_Datatype) * (size_t)size);
	/* v-forms: rank r's i % 2 + 1 ints, placed in reverse rank order */
	for (int i = size - 1, at = 0; i >= 0; i--) {
		b.cnt1[i] = 2;
		b.dsp[i] = 2 * i;
		b.bdsp[i] = 2 * i * (int)sizeof(int);
		b.types[i] = MPI_INT;
		b.cnt[i] = i % 2 + 1;
		b.rdsp[i] = at;
		at += b.cnt[i];
	}
	MPI_Request q[NREQ], none;
	inits(&b, q);
	alone(&b, q, 0);
	alone(&b, q, 1);
	together(&b, q, 2);
	for (int i = 0; i < NREQ; i++) {
		none = q[i];
		checkrc(MPI_Request_free(&none), MPI_SUCCESS, nm("%s.free.rc", names[i]));
		check(none == MPI_REQUEST_NULL, nm("%s.free.null", names[i]));
	}
	out_of_order();
	if (size >= 2)
		inter();
	MPI_Op_free(&matop);
	MPI_Type_free(&mat);
	return suite_finish("pcoll");
}
