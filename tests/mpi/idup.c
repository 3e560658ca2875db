/* Non-blocking communicator duplication: MPI_Comm_idup and
 * MPI_Comm_idup_with_info completed by Wait, Test loops and Waitall; several
 * in flight at once, overlapping Comm_dup, Comm_split and non-blocking
 * collectives on the parent; duplicates of overlapping pair communicators
 * posted in an order that a blocking Comm_dup would deadlock on; attributes,
 * error handlers and a Cartesian topology carried over; traffic on the
 * duplicate isolated from the parent's; a duplicate of a duplicate; one
 * pending across a Comm_create_group; duplicates of an intercommunicator. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

/* the duplicate works: same ranks, a reduction over it, and a wildcard
 * receive on it never takes the parent's message of the same tag */
static void works(MPI_Comm d, MPI_Comm parent, const char *what)
{
	int r = -1, n = -1, res = MPI_UNEQUAL;
	MPI_Comm_rank(d, &r);
	MPI_Comm_size(d, &n);
	int pr, pn;
	MPI_Comm_rank(parent, &pr);
	MPI_Comm_size(parent, &pn);
	check(r == pr && n == pn, nm("%s.rank_size", what));
	MPI_Comm_compare(d, parent, &res);
	checki(res, MPI_CONGRUENT, nm("%s.congruent", what));
	int one = r + 1, sum = 0;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d);
	checki(sum, n * (n + 1) / 2, nm("%s.allreduce", what));
	int right = (r + 1) % n, left = (r + n - 1) % n, a = 100 + r, b = 200 + r, x = -1;
	MPI_Request q[2];
	MPI_Status st;
	MPI_Isend(&a, 1, MPI_INT, right, 5, parent, &q[0]);
	MPI_Isend(&b, 1, MPI_INT, right, 5, d, &q[1]);
	MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 5, d, &st);
	check(x == 200 + left && st.MPI_SOURCE == left, nm("%s.isolated", what));
	MPI_Recv(&x, 1, MPI_INT, left, 5, parent, MPI_STATUS_IGNORE);
	checki(x, 100 + left, nm("%s.parent_gets_its_own", what));
	MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
}

static void basic(void)
{
	MPI_Comm d = MPI_COMM_NULL;
	MPI_Request q = MPI_REQUEST_NULL;
	checkrc(MPI_Comm_idup(W, &d, &q), MPI_SUCCESS, "idup.rc");
	checkrc(MPI_Wait(&q, MPI_STATUS_IGNORE), MPI_SUCCESS, "idup.wait");
	check(q == MPI_REQUEST_NULL && d != MPI_COMM_NULL && d != W, "idup.new_handle");
	works(d, W, "idup");

	/* completed by a Test loop, with an info; then a duplicate of it */
	MPI_Info info;
	MPI_Info_create(&info);
	MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
	MPI_Comm e = MPI_COMM_NULL, f = MPI_COMM_NULL;
	checkrc(MPI_Comm_idup_with_info(d, info, &e, &q), MPI_SUCCESS, "idup_with_info.rc");
	MPI_Info_free(&info);
	int flag = 0;
	while (!flag)
		MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
	works(e, d, "idup_with_info");
	MPI_Comm_idup(e, &f, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	works(f, e, "idup_of_idup");
	MPI_Comm_free(&f);
	MPI_Comm_free(&e);
	MPI_Comm_free(&d);
}

/* several in flight, other communicators made and collectives run on the
 * parent before any completes */
#define NDUP 4
static void overlapped(void)
{
	MPI_Comm d[NDUP], dup, half;
	MPI_Request q[2 * NDUP];
	int in[NDUP], out[NDUP];
	for (int i = 0; i < NDUP; i++) {
		in[i] = rank + i;
		MPI_Comm_idup(W, &d[i], &q[2 * i]);
		MPI_Iallreduce(&in[i], &out[i], 1, MPI_INT, MPI_SUM, W, &q[2 * i + 1]);
	}
	MPI_Comm_dup(W, &dup);
	works(dup, W, "overlap.dup");
	MPI_Comm_split(W, rank % 2, size - rank, &half);
	int hs = -1;
	MPI_Comm_size(half, &hs);
	checki(hs, rank % 2 ? size / 2 : (size + 1) / 2, "overlap.split_size");
	MPI_Waitall(2 * NDUP, q, MPI_STATUSES_IGNORE);
	for (int i = 0; i < NDUP; i++) {
		checki(out[i], size * (size - 1) / 2 + size * i, nm("overlap.iallreduce_%d", i));
		works(d[i], W, nm("overlap.idup_%d", i));
	}
	/* a duplicate of the split half: disjoint halves at once */
	MPI_Comm hd;
	MPI_Request hq;
	MPI_Comm_idup(half, &hd, &hq);
	MPI_Wait(&hq, MPI_STATUS_IGNORE);
	works(hd, half, "overlap.idup_of_split");
	MPI_Comm_free(&hd);
	for (int i = 0; i < NDUP; i++)
		MPI_Comm_free(&d[i]);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
}

/* rank i shares a pair communicator with i + 1 (its primary) and with i - 1
 * (its secondary), and duplicates its primary first: every rank waits on
 * its right neighbour, which duplicates its own primary first, so a
 * blocking duplicate would go round the ring for ever */
static void ring_of_pairs(void)
{
	if (size < 2)
		return;
	MPI_Comm prim = MPI_COMM_NULL, sec = MPI_COMM_NULL, tmp;
	for (int i = 0; i < size; i++) {
		if (rank == i) {
			MPI_Comm_split(W, 0, 0, &prim);
		} else if (rank == (i + 1) % size) {
			MPI_Comm_split(W, 0, 1, &sec);
		} else {
			MPI_Comm_split(W, 1, 0, &tmp);
			MPI_Comm_free(&tmp);
		}
	}
	MPI_Comm d[2];
	MPI_Request q[2];
	MPI_Comm_idup(prim, &d[0], &q[0]);
	MPI_Comm_idup(sec, &d[1], &q[1]);
	checkrc(MPI_Waitall(2, q, MPI_STATUSES_IGNORE), MPI_SUCCESS, "ring.waitall");
	/* rank 0 of my primary is me, of my secondary my left neighbour (keys) */
	int got[2] = {rank, rank};
	/* both at once: a blocking broadcast may wait for its receivers (it
	 * does under BCS-MPI), and my receiver is broadcasting to me */
	MPI_Ibcast(&got[0], 1, MPI_INT, 0, d[0], &q[0]);
	MPI_Ibcast(&got[1], 1, MPI_INT, 0, d[1], &q[1]);
	MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
	check(got[0] == rank && got[1] == (rank + size - 1) % size, "ring.bcast_on_each");
	MPI_Comm_free(&d[0]);
	MPI_Comm_free(&d[1]);
	MPI_Comm_free(&prim);
	MPI_Comm_free(&sec);
}

static int copies;
static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
	(void)old;
	(void)key;
	(void)extra;
	copies++;
	*(void **)out = (char *)in + 1;
	*flag = 1;
	return MPI_SUCCESS;
}

static void carried(void)
{
	int key, flag = 0;
	static char val[4];
	MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL);
	MPI_Comm d, e;
	MPI_Comm_dup(W, &d);
	MPI_Comm_set_attr(d, key, val);
	MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
	MPI_Comm_set_name(d, "named");
	MPI_Request q;
	MPI_Comm_idup(d, &e, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	void *got = NULL;
	MPI_Comm_get_attr(e, key, &got, &flag);
	check(flag && got == val + 1 && copies == 1, "attr.copied");
	MPI_Errhandler h = MPI_ERRHANDLER_NULL;
	MPI_Comm_get_errhandler(e, &h);
	check(h == MPI_ERRORS_RETURN, "errhandler.copied");
	MPI_Errhandler_free(&h);
	char name[MPI_MAX_OBJECT_NAME];
	int len = -1;
	MPI_Comm_get_name(e, name, &len);
	checki(len, 0, "name.not_copied");
	MPI_Comm_free(&e);
	MPI_Comm_free(&d);
	MPI_Comm_free_keyval(&key);

	/* a Cartesian communicator's duplicate keeps its grid */
	int dims[1] = {size}, per[1] = {1}, st = -1, src, dst;
	MPI_Comm cart, cd;
	MPI_Cart_create(W, 1, dims, per, 0, &cart);
	MPI_Comm_idup(cart, &cd, &q);
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	MPI_Topo_test(cd, &st);
	checki(st, MPI_CART, "cart.topo_kept");
	MPI_Cart_shift(cd, 0, 1, &src, &dst);
	check(src == (rank + size - 1) % size && dst == (rank + 1) % size, "cart.shift");
	MPI_Comm_free(&cd);
	MPI_Comm_free(&cart);
}

/* a duplicate pending while a Comm_create_group over the same ranks runs:
 * even ranks create the group first, odd ones post the duplicate first
 * (MPICH's comm/comm_create_group_idup) */
static void beside_create_group(void)
{
	MPI_Group wg;
	MPI_Comm gc, d;
	MPI_Request rq;
	MPI_Comm_group(W, &wg);
	if (rank % 2 == 0) {
		MPI_Comm_create_group(W, wg, 7, &gc);
		MPI_Comm_idup(W, &d, &rq);
	} else {
		MPI_Comm_idup(W, &d, &rq);
		MPI_Comm_create_group(W, wg, 7, &gc);
	}
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	works(d, W, "beside_create_group.dup");
	works(gc, W, "beside_create_group.group");
	MPI_Group_free(&wg);
	MPI_Comm_free(&d);
	MPI_Comm_free(&gc);
}

/* duplicates of an intercommunicator (even ranks and odd): two in flight,
 * a message on the parent between them, each a congruent intercommunicator
 * whose traffic stays its own */
static void inter(void)
{
	if (size < 2)
		return;
	MPI_Comm local, ic, d[2];
	MPI_Comm_split(W, rank % 2, rank, &local);
	MPI_Intercomm_create(local, 0, W, rank % 2 ? 0 : 1, 77, &ic);
	int lr, rs;
	MPI_Comm_rank(local, &lr);
	MPI_Comm_remote_size(ic, &rs);
	MPI_Request q[3];
	checkrc(MPI_Comm_idup(ic, &d[0], &q[0]), MPI_SUCCESS, "inter.idup");
	int out = 1000 + rank, in = -1, peer = lr < rs ? lr : MPI_PROC_NULL;
	MPI_Request m[2];
	MPI_Irecv(&in, 1, MPI_INT, peer, 3, ic, &m[0]);
	MPI_Isend(&out, 1, MPI_INT, peer, 3, ic, &m[1]);
	MPI_Info info;
	MPI_Info_create(&info);
	checkrc(MPI_Comm_idup_with_info(ic, info, &d[1], &q[1]), MPI_SUCCESS,
		"inter.idup_with_info");
	MPI_Info_free(&info);
	q[2] = MPI_REQUEST_NULL;
	MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
	MPI_Waitall(2, m, MPI_STATUSES_IGNORE);
	if (peer != MPI_PROC_NULL)
		checki(in, 1000 + (rank % 2 ? 2 * lr : 2 * lr + 1), "inter.parent_message");
	for (int k = 0; k < 2; k++) {
		int flag = 0, res = MPI_UNEQUAL, r = -1, n = -1;
		MPI_Comm_test_inter(d[k], &flag);
		checki(flag, 1, nm("inter.%d.is_inter", k));
		MPI_Comm_compare(d[k], ic, &res);
		checki(res, MPI_CONGRUENT, nm("inter.%d.congruent", k));
		MPI_Comm_remote_size(d[k], &r);
		MPI_Comm_size(d[k], &n);
		check(r == rs && n == (rank % 2 ? size / 2 : (size + 1) / 2), nm("inter.%d.sizes", k));
		/* the same tag on the duplicate and on the parent: each its own */
		int a = 10 * k + rank, b = -1, c = -1;
		MPI_Request x[4];
		MPI_Irecv(&b, 1, MPI_INT, peer, 5, d[k], &x[0]);
		MPI_Irecv(&c, 1, MPI_INT, peer, 5, ic, &x[1]);
		int pa = a + 500;
		MPI_Isend(&pa, 1, MPI_INT, peer, 5, ic, &x[2]);
		MPI_Isend(&a, 1, MPI_INT, peer, 5, d[k], &x[3]);
		MPI_Waitall(4, x, MPI_STATUSES_IGNORE);
		if (peer != MPI_PROC_NULL) {
			int pw = rank % 2 ? 2 * lr : 2 * lr + 1;
			check(b == 10 * k + pw && c == 500 + 10 * k + pw, nm("inter.%d.isolated", k));
		}
		/* a collective between the groups: the sum of the remote group's ranks */
		int one = lr, sum = -1;
		MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d[k]);
		checki(sum, rs * (rs - 1) / 2, nm("inter.%d.allreduce", k));
		MPI_Comm_free(&d[k]);
	}
	MPI_Comm_free(&ic);
	MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	basic();
	overlapped();
	ring_of_pairs();
	carried();
	beside_create_group();
	inter();
	return suite_finish("idup");
}
