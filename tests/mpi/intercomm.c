/* Intercommunicators: the even and the odd ranks of WORLD joined by
 * Intercomm_create; Comm_test_inter, sizes, Comm_remote_size, the local
 * and remote groups, point to point across (ranks name the remote group,
 * specific and wildcard sources, Probe, a rank out of range), Comm_dup and
 * Comm_compare, Comm_split (a colour on both sides, a colour on one side
 * only), Comm_create (a subgroup of each side), Intercomm_merge in both
 * orders, Barrier, Bcast (MPI_ROOT, MPI_PROC_NULL, the remote root),
 * Allreduce, Reduce, Gather(v), Scatter, Allgather and Alltoall; then rank 0
 * against the rest (groups of unequal size). One rank: only the answers on
 * an intracommunicator.
 *
 * With the argument "refuse" (BCS-MPI only): the calls BCS-MPI lacks on an
 * intercommunicator (Scan and Exscan, which MPI has for intracommunicators
 * only; Cart_create and the graph constructors) return MPI_ERR_COMM,
 * so do Comm_remote_size and Intercomm_merge on an intracommunicator, then
 * a collective under MPI_ERRORS_ARE_FATAL ends the job. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;
static int color, lrank, lsize, rsize;

/* the world rank of rank r of group col (even ranks 0, odd ranks 1) */
static int world_of(int col, int r) { return 2 * r + col; }

static int group_size(int col) { return (size - col + 1) / 2; }

static void intra_answers(void)
{
	int flag = -1;
	MPI_Comm_test_inter(W, &flag);
	checki(flag, 0, "intra.test_inter");
}

static MPI_Comm make(void)
{
	MPI_Comm local, ic;
	MPI_Comm_split(W, color, rank, &local);
	/* the leaders are world ranks 0 and 1 */
	checkrc(MPI_Intercomm_create(local, 0, W, 1 - color, 77, &ic), MPI_SUCCESS,
		"create.rc");
	MPI_Comm_free(&local);
	return ic;
}

static void queries(MPI_Comm ic)
{
	int flag = -1, n = -1, r = -1;
	MPI_Comm_test_inter(ic, &flag);
	checki(flag, 1, "test_inter");
	MPI_Comm_size(ic, &n);
	MPI_Comm_rank(ic, &r);
	checki(n, lsize, "size_is_the_local_group's");
	checki(r, lrank, "rank_is_the_local_rank");
	MPI_Comm_remote_size(ic, &n);
	checki(n, rsize, "remote_size");

	MPI_Group wg, lg, rg;
	MPI_Comm_group(W, &wg);
	MPI_Comm_group(ic, &lg);
	MPI_Comm_remote_group(ic, &rg);
	int gl = -1, gr = -1, ok_l = 1, ok_r = 1;
	MPI_Group_size(lg, &gl);
	MPI_Group_size(rg, &gr);
	checki(gl, lsize, "local_group.size");
	checki(gr, rsize, "remote_group.size");
	for (int i = 0; i < gl; i++) {
		int w = -1;
		MPI_Group_translate_ranks(lg, 1, &i, wg, &w);
		ok_l = ok_l && w == world_of(color, i);
	}
	for (int i = 0; i < gr; i++) {
		int w = -1;
		MPI_Group_translate_ranks(rg, 1, &i, wg, &w);
		ok_r = ok_r && w == world_of(1 - color, i);
	}
	check(ok_l, "local_group.members");
	check(ok_r, "remote_group.members");
	MPI_Group_rank(rg, &r);
	checki(r, MPI_UNDEFINED, "remote_group.not_a_member");
	MPI_Group_free(&wg);
	MPI_Group_free(&lg);
	MPI_Group_free(&rg);
}

static void p2p(MPI_Comm ic)
{
	/* rank i of each group and rank i of the other swap their world ranks */
	MPI_Status st;
	int got = -1, me = rank;
	if (lrank < rsize) {
		MPI_Sendrecv(&me, 1, MPI_INT, lrank, 5, &got, 1, MPI_INT, lrank, 5, ic, &st);
		checki(got, world_of(1 - color, lrank), "p2p.sendrecv_value");
		check_status(&st, lrank, 5, MPI_INT, 1, "p2p.sendrecv_status");
	}
	/* every rank to the other group's rank 0, which takes them by wildcard */
	MPI_Send(&me, 1, MPI_INT, 0, 6, ic);
	if (lrank == 0) {
		int sum = 0, all_match = 1;
		for (int i = 0; i < rsize; i++) {
			MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 6, ic, &st);
			all_match = all_match && got == world_of(1 - color, st.MPI_SOURCE);
			sum += got;
		}
		check(all_match, "p2p.wildcard_source_is_the_remote_rank");
		int want = 0;
		for (int i = 0; i < rsize; i++)
			want += world_of(1 - color, i);
		checki(sum, want, "p2p.wildcard_all_arrived");
	}
	/* Probe names the remote rank too */
	if (lrank == 0) {
		int v = 1000 + me;
		MPI_Send(&v, 1, MPI_INT, rsize - 1, 8, ic);
	}
	if (lrank == lsize - 1) {
		MPI_Probe(0, 8, ic, &st);
		check_status(&st, 0, 8, MPI_INT, 1, "p2p.probe_status");
		MPI_Recv(&got, 1, MPI_INT, 0, 8, ic, MPI_STATUS_IGNORE);
		checki(got, 1000 + world_of(1 - color, 0), "p2p.probe_value");
	}
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
	checkrc(MPI_Send(&me, 1, MPI_INT, rsize, 9, ic), MPI_ERR_RANK, "p2p.rank_past_remote_size");
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_ARE_FATAL);
}

static void dup_compare(MPI_Comm ic)
{
	MPI_Comm d;
	int res = -1, flag = -1;
	checkrc(MPI_Comm_dup(ic, &d), MPI_SUCCESS, "dup.rc");
	MPI_Comm_test_inter(d, &flag);
	checki(flag, 1, "dup.test_inter");
	MPI_Comm_compare(ic, ic, &res);
	checki(res, MPI_IDENT, "compare.self_ident");
	MPI_Comm_compare(ic, d, &res);
	checki(res, MPI_CONGRUENT, "compare.dup_congruent");
	MPI_Comm_compare(ic, W, &res);
	checki(res, MPI_UNEQUAL, "compare.inter_vs_world_unequal");
	/* the same peer, tag and source on both: each sees its own message */
	int a = 100 + rank, b = 200 + rank, x = -1, y = -1;
	if (lrank < rsize) {
		MPI_Request q[2];
		MPI_Isend(&a, 1, MPI_INT, lrank, 3, d, &q[0]);
		MPI_Isend(&b, 1, MPI_INT, lrank, 3, ic, &q[1]);
		MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 3, ic, MPI_STATUS_IGNORE);
		MPI_Recv(&y, 1, MPI_INT, lrank, 3, d, MPI_STATUS_IGNORE);
		MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
		checki(x, 200 + world_of(1 - color, lrank), "dup.isolated_from_original");
		checki(y, 100 + world_of(1 - color, lrank), "dup.own_traffic");
	}
	int rs = -1;
	MPI_Comm_remote_size(d, &rs);
	checki(rs, rsize, "dup.remote_size");
	checkrc(MPI_Comm_free(&d), MPI_SUCCESS, "dup.free");
	check(d == MPI_COMM_NULL, "dup.free_sets_null");
}

static void split(MPI_Comm ic)
{
	/* colour lrank % 2 on both sides, keys reversing the order */
	MPI_Comm s;
	int col = lrank % 2, n = -1, r = -1, rs = -1;
	checkrc(MPI_Comm_split(ic, col, -lrank, &s), MPI_SUCCESS, "split.rc");
	int want_l = (lsize - col + 1) / 2, want_r = (rsize - col + 1) / 2;
	if (want_r == 0) {
		check(s == MPI_COMM_NULL, "split.no_remote_partner_null");
	} else {
		MPI_Comm_size(s, &n);
		MPI_Comm_rank(s, &r);
		MPI_Comm_remote_size(s, &rs);
		checki(n, want_l, "split.size");
		checki(r, want_l - 1 - lrank / 2, "split.rank_by_key");
		checki(rs, want_r, "split.remote_size");
		/* rank 0 of each side (the highest old rank of the colour) swap */
		if (r == 0) {
			int me = rank, got = -1;
			MPI_Sendrecv(&me, 1, MPI_INT, 0, 4, &got, 1, MPI_INT, 0, 4, s,
				     MPI_STATUS_IGNORE);
			int top = col + 2 * ((rsize - 1 - col) / 2);
			checki(got, world_of(1 - color, top), "split.p2p_across");
		}
		MPI_Comm_free(&s);
	}
	/* a colour on one side only: nobody gets a communicator */
	checkrc(MPI_Comm_split(ic, color, 0, &s), MPI_SUCCESS, "split.one_sided.rc");
	check(s == MPI_COMM_NULL, "split.one_sided_null");
	checkrc(MPI_Comm_split(ic, lrank == 0 ? 0 : MPI_UNDEFINED, 0, &s), MPI_SUCCESS,
		"split.undefined.rc");
	if (lrank == 0) {
		MPI_Comm_remote_size(s, &rs);
		checki(rs, 1, "split.leaders_only");
		MPI_Comm_free(&s);
	} else {
		check(s == MPI_COMM_NULL, "split.undefined_null");
	}
}

/* Comm_create on an intercommunicator: each side keeps the members of the
 * group it passes (here: all but its rank 0), as MPICH's test harness does */
static void create(MPI_Comm ic)
{
	MPI_Group lg, ng;
	MPI_Comm nc;
	int zero = 0, n = -1, r = -1, rs = -1;
	MPI_Comm_group(ic, &lg);
	MPI_Group_excl(lg, 1, &zero, &ng);
	checkrc(MPI_Comm_create(ic, ng, &nc), MPI_SUCCESS, "create.rc");
	if (lrank == 0 || rsize == 1) {
		check(nc == MPI_COMM_NULL, "create.left_out_null");
	} else {
		MPI_Comm_size(nc, &n);
		MPI_Comm_rank(nc, &r);
		MPI_Comm_remote_size(nc, &rs);
		checki(n, lsize - 1, "create.size");
		checki(r, lrank - 1, "create.rank");
		checki(rs, rsize - 1, "create.remote_size");
		int me = rank, got = -1;
		if (r < rs) {
			MPI_Sendrecv(&me, 1, MPI_INT, r, 2, &got, 1, MPI_INT, r, 2, nc,
				     MPI_STATUS_IGNORE);
			checki(got, world_of(1 - color, lrank), "create.p2p_across");
		}
		MPI_Comm_free(&nc);
	}
	MPI_Group_free(&ng);
	MPI_Group_free(&lg);
}

static void merge(MPI_Comm ic, int high, const char *name)
{
	MPI_Comm m;
	int flag = -1, n = -1, r = -1;
	checkrc(MPI_Intercomm_merge(ic, high, &m), MPI_SUCCESS, nm("%s.rc", name));
	MPI_Comm_test_inter(m, &flag);
	checki(flag, 0, nm("%s.is_intra", name));
	MPI_Comm_size(m, &n);
	checki(n, size, nm("%s.size", name));
	/* the group that passed high = 0 comes first */
	int low_col = high ? 1 - color : color;
	int first = color == low_col ? 0 : group_size(low_col);
	MPI_Comm_rank(m, &r);
	checki(r, first + lrank, nm("%s.rank", name));
	int *all = malloc(sizeof(int) * (size_t)size), ok = 1;
	MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, m);
	for (int i = 0; i < size; i++) {
		int g0 = group_size(low_col);
		ok = ok && all[i] == (i < g0 ? world_of(low_col, i) : world_of(1 - low_col, i - g0));
	}
	check(ok, nm("%s.order", name));
	free(all);
	int sum = 0, one = rank;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, m);
	checki(sum, size * (size - 1) / 2, nm("%s.allreduce", name));
	MPI_Comm_free(&m);
}

static void collectives(MPI_Comm ic)
{
	checkrc(MPI_Barrier(ic), MPI_SUCCESS, "barrier.rc");

	/* the even group's rank 0 broadcasts to the odd group */
	int v[2] = {-1, -1};
	int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
	if (color == 0 && lrank == 0)
		v[0] = 4242, v[1] = 17;
	checkrc(MPI_Bcast(v, 2, MPI_INT, root, ic), MPI_SUCCESS, "bcast.rc");
	if (color == 1)
		check(v[0] == 4242 && v[1] == 17, "bcast.received");
	else if (lrank != 0)
		check(v[0] == -1 && v[1] == -1, "bcast.proc_null_untouched");
	/* then the odd group's last rank to the even group */
	int last = group_size(1) - 1;
	root = color == 1 ? (lrank == last ? MPI_ROOT : MPI_PROC_NULL) : last;
	double d = color == 1 && lrank == last ? 2.5 : 0.0;
	MPI_Bcast(&d, 1, MPI_DOUBLE, root, ic);
	if (color == 0)
		check(d == 2.5, "bcast.from_remote_last");
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
	checkrc(MPI_Bcast(&d, 1, MPI_DOUBLE, rsize, ic), MPI_ERR_ROOT, "bcast.root_past_remote_size");
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_ARE_FATAL);

	/* each group gets the other's reduction */
	int mine[3] = {rank + 1, rank * rank, -rank}, got[3] = {0, 0, 0};
	checkrc(MPI_Allreduce(mine, got, 3, MPI_INT, MPI_SUM, ic), MPI_SUCCESS, "allreduce.rc");
	int want[3] = {0, 0, 0};
	for (int i = 0; i < rsize; i++) {
		int w = world_of(1 - color, i);
		want[0] += w + 1;
		want[1] += w * w;
		want[2] -= w;
	}
	check(got[0] == want[0] && got[1] == want[1] && got[2] == want[2], "allreduce.sum_of_remote");
	int mx = -1;
	MPI_Allreduce(&rank, &mx, 1, MPI_INT, MPI_MAX, ic);
	checki(mx, world_of(1 - color, rsize - 1), "allreduce.max_of_remote");
	checkrc(MPI_Barrier(ic), MPI_SUCCESS, "barrier.again");
}

/* the rooted and flat collectives: blocks by rank of the remote group */
static void more_collectives(MPI_Comm ic)
{
	int root = color == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
	int *all = malloc(sizeof(int) * 2 * (size_t)(rsize + 1)), ok = 1, v = -1;
	int *cnt = malloc(sizeof(int) * (size_t)(rsize + 1));
	int *dsp = malloc(sizeof(int) * (size_t)(rsize + 1));
	for (int i = 0; i < 2 * (rsize + 1); i++)
		all[i] = -1;
	/* Reduce: the odd group's rank 0 gets the even group's sum */
	int mine = rank + 1, sum = -1;
	checkrc(MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, root, ic), MPI_SUCCESS, "reduce.rc");
	if (root == MPI_ROOT) {
		int want = 0;
		for (int i = 0; i < rsize; i++)
			want += world_of(1 - color, i) + 1;
		checki(sum, want, "reduce.root_gets_remote_sum");
	}
	/* Gather to the odd group's rank 0 */
	checkrc(MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, root, ic), MPI_SUCCESS,
		"gather.rc");
	if (root == MPI_ROOT) {
		for (int i = 0; i < rsize; i++)
			ok = ok && all[i] == world_of(1 - color, i);
		check(ok, "gather.blocks_by_remote_rank");
	}
	/* Gatherv: remote rank i sends i % 2 + 1 ints, placed in reverse */
	int two[2] = {rank, -rank}, at = 0;
	for (int i = rsize - 1; i >= 0; i--) {
		cnt[i] = i % 2 + 1;
		dsp[i] = at;
		at += cnt[i];
	}
	checkrc(MPI_Gatherv(two, lrank % 2 + 1, MPI_INT, all, cnt, dsp, MPI_INT, root, ic),
		MPI_SUCCESS, "gatherv.rc");
	if (root == MPI_ROOT) {
		ok = 1;
		for (int i = 0; i < rsize; i++) {
			int w = world_of(1 - color, i);
			ok = ok && all[dsp[i]] == w && (cnt[i] == 1 || all[dsp[i] + 1] == -w);
		}
		check(ok, "gatherv.counts_and_displacements");
	}
	/* Scatter from the odd group's rank 0: block i to remote rank i */
	for (int i = 0; i < rsize; i++)
		all[i] = 500 + i;
	checkrc(MPI_Scatter(all, 1, MPI_INT, &v, 1, MPI_INT, root, ic), MPI_SUCCESS,
		"scatter.rc");
	if (color == 0)
		checki(v, 500 + lrank, "scatter.own_block");
	/* Allgather: every rank gets the remote group's world ranks */
	ok = 1;
	checkrc(MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, ic), MPI_SUCCESS,
		"allgather.rc");
	for (int i = 0; i < rsize; i++)
		ok = ok && all[i] == world_of(1 - color, i);
	check(ok, "allgather.remote_group");
	/* Alltoall: block j to remote rank j, 100 * world + j */
	int *sb = malloc(sizeof(int) * (size_t)(rsize + 1));
	for (int j = 0; j < rsize; j++)
		sb[j] = 100 * rank + j;
	ok = 1;
	checkrc(MPI_Alltoall(sb, 1, MPI_INT, all, 1, MPI_INT, ic), MPI_SUCCESS, "alltoall.rc");
	for (int i = 0; i < rsize; i++)
		ok = ok && all[i] == 100 * world_of(1 - color, i) + lrank;
	check(ok, "alltoall.blocks");
	free(sb);
	free(all);
	free(cnt);
	free(dsp);
}

/* Rank 0 against the rest (groups of 1 and size - 1, as MPICH's test
 * harness makes one): every rank to every remote rank, Bcast, Allreduce,
 * Intercomm_merge with the larger group low */
static void uneven(void)
{
	MPI_Comm local, ic, m;
	int left = rank == 0, lr, rs = -1, r = -1;
	MPI_Comm_split(W, left, rank, &local);
	MPI_Comm_rank(local, &lr);
	/* the remote leader counts at the leaders only */
	int rleader = left ? 1 : lr == 0 ? 0 : -1;
	checkrc(MPI_Intercomm_create(local, 0, W, rleader, 12346, &ic), MPI_SUCCESS,
		"uneven.create.rc");
	MPI_Comm_remote_size(ic, &rs);
	checki(rs, left ? size - 1 : 1, "uneven.remote_size");
	int *out = malloc(sizeof(int) * 2 * (size_t)rs), in[2], ok = 1;
	MPI_Request *q = malloc(sizeof(MPI_Request) * (size_t)rs);
	for (int j = 0; j < rs; j++) {
		out[2 * j] = rank;
		out[2 * j + 1] = j;
		MPI_Isend(&out[2 * j], 2, MPI_INT, j, 0, ic, &q[j]);
	}
	for (int j = 0; j < rs; j++) {
		MPI_Recv(in, 2, MPI_INT, j, 0, ic, MPI_STATUS_IGNORE);
		ok = ok && in[0] == (left ? j + 1 : 0) && in[1] == lr;
	}
	MPI_Waitall(rs, q, MPI_STATUSES_IGNORE);
	check(ok, "uneven.every_remote_rank");
	free(out);
	free(q);
	int v = left ? 99 : -1;
	MPI_Bcast(&v, 1, MPI_INT, left ? MPI_ROOT : 0, ic);
	checki(v, 99, "uneven.bcast");
	int sum = -1;
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ic);
	checki(sum, left ? size * (size - 1) / 2 : 0, "uneven.allreduce");
	checkrc(MPI_Intercomm_merge(ic, left, &m), MPI_SUCCESS, "uneven.merge.rc");
	MPI_Comm_rank(m, &r);
	checki(r, left ? size - 1 : rank - 1, "uneven.merge_rank");
	MPI_Comm_free(&m);
	MPI_Comm_free(&ic);
	MPI_Comm_free(&local);
}

/* BCS-MPI's refusals: MPI_ERR_COMM, never wrong data */
static int refuse(MPI_Comm ic)
{
	int x = rank, *buf = malloc(sizeof(int) * (size_t)(size + 1));
	MPI_Comm c2 = MPI_COMM_NULL;
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
	/* Scan and Exscan are for intracommunicators only in MPI too */
	checkrc(MPI_Scan(&x, buf, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM, "refuse.scan");
	checkrc(MPI_Exscan(&x, buf, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM, "refuse.exscan");
	/* Debian's MPICH, built without argument checks, answers these too */
	int n = -1;
	MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
	checkrc(MPI_Comm_remote_size(W, &n), MPI_ERR_COMM, "refuse.remote_size_of_intra");
	checkrc(MPI_Intercomm_merge(W, 0, &c2), MPI_ERR_COMM, "refuse.merge_of_intra");
	MPI_Comm_set_errhandler(W, MPI_ERRORS_ARE_FATAL);
	int dims[1] = {lsize}, per[1] = {0};
	checkrc(MPI_Cart_create(ic, 1, dims, per, 0, &c2), MPI_ERR_COMM, "refuse.cart_create");
	int gi[1] = {0};
	checkrc(MPI_Graph_create(ic, 1, gi, gi, 0, &c2), MPI_ERR_COMM, "refuse.graph_create");
	checkrc(MPI_Dist_graph_create_adjacent(ic, 0, gi, MPI_UNWEIGHTED, 0, gi, MPI_UNWEIGHTED,
					       MPI_INFO_NULL, 0, &c2), MPI_ERR_COMM,
		"refuse.dist_graph_create_adjacent");
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_ARE_FATAL);
	if (suite_fails)
		printf("%d %s", rank, suite_log);
	/* every rank has checked; now the job ends on the first fatal refusal */
	MPI_Barrier(W);
	if (rank == 0) {
		printf("refuse: before\n");
		fflush(stdout);
	}
	MPI_Barrier(W);
	MPI_Scan(&x, buf, 1, MPI_INT, MPI_SUM, ic);
	printf("refuse: after\n");
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	intra_answers();
	if (size >= 2) {
		color = rank % 2;
		lrank = rank / 2;
		lsize = group_size(color);
		rsize = group_size(1 - color);
		MPI_Comm ic = make();
		if (argc > 1 && !strcmp(argv[1], "refuse"))
			return refuse(ic);
		queries(ic);
		p2p(ic);
		dup_compare(ic);
		split(ic);
		create(ic);
		merge(ic, color, "merge.even_low");
		merge(ic, 1 - color, "merge.odd_low");
		collectives(ic);
		more_collectives(ic);
		checkrc(MPI_Comm_free(&ic), MPI_SUCCESS, "free.rc");
		check(ic == MPI_COMM_NULL, "free.sets_null");
		uneven();
	}
	return suite_finish("intercomm");
}
