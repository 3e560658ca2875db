/* Groups and the communicators made from them: Comm_group, Group_size/rank,
 * incl/excl/range_incl/range_excl, translate_ranks, union/intersection/
 * difference, compare, MPI_GROUP_EMPTY, Group_free; Comm_create (members
 * and non-members), Comm_create_group (only the members call it),
 * Comm_split_type(MPI_COMM_TYPE_SHARED, and MPI-4's HW_GUIDED and HW_UNGUIDED)
 * and traffic on each new communicator. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static void groups(void)
{
	MPI_Group world, evens, odds, rev, g;
	int n, r, res;
	checkrc(MPI_Comm_group(W, &world), MPI_SUCCESS, "comm_group.rc");
	MPI_Group_size(world, &n);
	MPI_Group_rank(world, &r);
	check(n == size && r == rank, "comm_group.size_rank");

	/* evens by range, odds by exclusion of the evens */
	int ne = (size + 1) / 2, range[1][3] = {{0, size - 1, 2}};
	checkrc(MPI_Group_range_incl(world, 1, range, &evens), MPI_SUCCESS, "range_incl.rc");
	MPI_Group_size(evens, &n);
	checki(n, ne, "range_incl.size");
	int *ev = malloc((size_t)size * sizeof(int));
	for (int i = 0; i < ne; i++)
		ev[i] = 2 * i;
	MPI_Group_excl(world, ne, ev, &odds);
	MPI_Group_size(odds, &n);
	checki(n, size - ne, "excl.size");
	MPI_Group_rank(odds, &r);
	checki(r, rank % 2 ? rank / 2 : MPI_UNDEFINED, "excl.rank");

	/* reversed world by incl; translate ranks both ways */
	int *ids = malloc((size_t)size * sizeof(int)), *out = malloc((size_t)size * sizeof(int));
	for (int i = 0; i < size; i++)
		ids[i] = size - 1 - i;
	MPI_Group_incl(world, size, ids, &rev);
	MPI_Group_rank(rev, &r);
	checki(r, size - 1 - rank, "incl.reversed_rank");
	for (int i = 0; i < size; i++)
		ids[i] = i;
	MPI_Group_translate_ranks(world, size, ids, rev, out);
	int good = 1;
	for (int i = 0; i < size; i++)
		good &= out[i] == size - 1 - i;
	check(good, "translate.world_to_reversed");
	MPI_Group_translate_ranks(world, size, ids, odds, out);
	good = 1;
	for (int i = 0; i < size; i++)
		good &= out[i] == (i % 2 ? i / 2 : MPI_UNDEFINED);
	check(good, "translate.absent_is_undefined");
	int pn = MPI_PROC_NULL, po = 0;
	MPI_Group_translate_ranks(world, 1, &pn, rev, &po);
	checki(po, MPI_PROC_NULL, "translate.proc_null");

	/* set operations keep the first group's order */
	MPI_Group_union(odds, evens, &g);
	MPI_Group_size(g, &n);
	MPI_Group_rank(g, &r);
	checki(n, size, "union.size");
	checki(r, rank % 2 ? rank / 2 : size / 2 + rank / 2, "union.order");
	MPI_Group_compare(g, world, &res);
	checki(res, size > 1 ? MPI_SIMILAR : MPI_IDENT, "union.compare_world");
	MPI_Group_free(&g);
	MPI_Group_intersection(rev, evens, &g);
	MPI_Group_size(g, &n);
	MPI_Group_rank(g, &r);
	checki(n, ne, "intersection.size");
	/* rev's order: the highest even first */
	checki(r, rank % 2 ? MPI_UNDEFINED : (size - 1 - rank) / 2, "intersection.order");
	MPI_Group_free(&g);
	MPI_Group_difference(world, odds, &g);
	MPI_Group_compare(g, evens, &res);
	checki(res, MPI_IDENT, "difference.equals_evens");
	MPI_Group_free(&g);
	MPI_Group_difference(evens, world, &g);
	MPI_Group_compare(g, MPI_GROUP_EMPTY, &res);
	checki(res, MPI_IDENT, "difference.empty");
	MPI_Group_size(g, &n);
	checki(n, 0, "difference.empty_size");
	if (g != MPI_GROUP_EMPTY)
		MPI_Group_free(&g);
	MPI_Group_compare(world, rev, &res);
	checki(res, size > 1 ? MPI_SIMILAR : MPI_IDENT, "compare.reversed");
	MPI_Group_compare(world, evens, &res);
	checki(res, size > 1 ? MPI_UNEQUAL : MPI_IDENT, "compare.subset");
	MPI_Group_rank(MPI_GROUP_EMPTY, &r);
	checki(r, MPI_UNDEFINED, "empty.rank");

	/* Comm_create from the reversed group: everyone a member */
	MPI_Comm rc, ec;
	checkrc(MPI_Comm_create(W, rev, &rc), MPI_SUCCESS, "create.rc");
	MPI_Comm_rank(rc, &r);
	checki(r, size - 1 - rank, "create.rank");
	int sum = 0, me = rank;
	MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, rc);
	checki(sum, size * (size - 1) / 2, "create.allreduce");
	int first = -1;
	MPI_Bcast(&me, 1, MPI_INT, 0, rc);
	first = me;
	checki(first, size - 1, "create.bcast_from_new_rank0");
	MPI_Comm_free(&rc);

	/* Comm_create from the evens: odds get MPI_COMM_NULL */
	MPI_Comm_create(W, evens, &ec);
	if (rank % 2) {
		check(ec == MPI_COMM_NULL, "create.nonmember_null");
	} else {
		MPI_Comm_size(ec, &n);
		MPI_Comm_rank(ec, &r);
		check(n == ne && r == rank / 2, "create.member_size_rank");
		/* a ring on the new communicator */
		int right = (r + 1) % n, left = (r + n - 1) % n, got = -1, v = 100 + r;
		MPI_Sendrecv(&v, 1, MPI_INT, right, 3, &got, 1, MPI_INT, left, 3, ec,
			     MPI_STATUS_IGNORE);
		checki(got, 100 + left, "create.ring");
		MPI_Comm_free(&ec);
	}

	/* Comm_create_group: only the odds call it */
	if (rank % 2) {
		MPI_Comm oc;
		checkrc(MPI_Comm_create_group(W, odds, 7, &oc), MPI_SUCCESS, "create_group.rc");
		MPI_Comm_size(oc, &n);
		MPI_Comm_rank(oc, &r);
		check(n == size / 2 && r == rank / 2, "create_group.size_rank");
		int s = 0, one = 1;
		MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, oc);
		checki(s, size / 2, "create_group.allreduce");
		MPI_Comm_free(&oc);
	}
	/* meanwhile the evens talk on WORLD */
	if (!(rank % 2) && size > 2) {
		int peer = rank ^ 2, v = rank, got = -1;
		if (peer < size) {
			MPI_Sendrecv(&v, 1, MPI_INT, peer, 4, &got, 1, MPI_INT, peer, 4, W,
				     MPI_STATUS_IGNORE);
			checki(got, peer, "create_group.others_on_world");
		}
	}
	MPI_Group_free(&world);
	MPI_Group_free(&evens);
	MPI_Group_free(&odds);
	MPI_Group_free(&rev);
	check(rev == MPI_GROUP_NULL, "group_free.null");
	free(ev);
	free(ids);
	free(out);
}

/* the shared-memory split: every member runs on the same host */
static void split_shared(void)
{
	MPI_Comm sh;
	int n, r;
	checkrc(MPI_Comm_split_type(W, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &sh), MPI_SUCCESS,
		"split_type.rc");
	MPI_Comm_size(sh, &n);
	MPI_Comm_rank(sh, &r);
	check(n >= 1 && n <= size && r < n, "split_type.size_rank");
	char name[MPI_MAX_PROCESSOR_NAME], *all = malloc((size_t)n * MPI_MAX_PROCESSOR_NAME);
	int len;
	memset(name, 0, sizeof name);
	MPI_Get_processor_name(name, &len);
	MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
		      sh);
	int same = 1;
	for (int i = 0; i < n; i++)
		same &= strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, name) == 0;
	check(same, "split_type.one_host");
	/* key order kept: ranks of the node in world order */
	int me = rank, prev = -1;
	MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	if (r > 0)
		MPI_Irecv(&prev, 1, MPI_INT, r - 1, 5, sh, &q[0]);
	if (r < n - 1)
		MPI_Isend(&me, 1, MPI_INT, r + 1, 5, sh, &q[1]);
	MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
	check(r == 0 || prev < rank, "split_type.key_order");
	MPI_Comm nul;
	MPI_Comm_split_type(W, MPI_UNDEFINED, 0, MPI_INFO_NULL, &nul);
	check(nul == MPI_COMM_NULL, "split_type.undefined");
	free(all);
	MPI_Comm_free(&sh);
}

/* MPI-4's hardware splits: "mpi_shared_memory" is the shared-memory
 * split; no key, another key or a value no implementation knows gives
 * MPI_COMM_NULL; an unguided split is a strict subset naming its kind */
static void split_hw(void)
{
	MPI_Comm sh, hw, nul;
	MPI_Info info;
	int cmp = -1;
	MPI_Comm_split_type(W, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &sh);
	MPI_Info_create(&info);
	MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
	checkrc(MPI_Comm_split_type(W, MPI_COMM_TYPE_HW_GUIDED, rank, info, &hw), MPI_SUCCESS,
		"split_hw.guided_rc");
	if (hw != MPI_COMM_NULL)
		MPI_Comm_compare(sh, hw, &cmp);
	checki(cmp, MPI_CONGRUENT, "split_hw.shared_memory_is_shared");
	if (hw != MPI_COMM_NULL)
		MPI_Comm_free(&hw);
	MPI_Info_free(&info);

	MPI_Comm_split_type(W, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &nul);
	check(nul == MPI_COMM_NULL, "split_hw.no_info_null");
	MPI_Info_create(&info);
	MPI_Info_set(info, "shmem_topo", "machine");
	MPI_Comm_split_type(W, MPI_COMM_TYPE_HW_GUIDED, 0, info, &nul);
	check(nul == MPI_COMM_NULL, "split_hw.other_key_null");
	MPI_Info_set(info, "mpi_hw_resource_type", "__no_such_resource__");
	MPI_Comm_split_type(W, MPI_COMM_TYPE_HW_GUIDED, 0, info, &nul);
	check(nul == MPI_COMM_NULL, "split_hw.unknown_value_null");
	MPI_Info_free(&info);

	MPI_Info_create(&info);
	checkrc(MPI_Comm_split_type(W, MPI_COMM_TYPE_HW_UNGUIDED, rank, info, &hw), MPI_SUCCESS,
		"split_hw.unguided_rc");
	int ok = 1;
	if (hw != MPI_COMM_NULL) {
		int n, flag = 0;
		char kind[MPI_MAX_INFO_VAL + 1] = "";
		MPI_Comm_size(hw, &n);
		MPI_Info_get(info, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, kind, &flag);
		ok = n < size && flag && kind[0];
		MPI_Comm_free(&hw);
	}
	check(ok, "split_hw.unguided_strict_subset_named");
	MPI_Info_free(&info);
	MPI_Comm_free(&sh);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	groups();
	split_shared();
	split_hw();
	return suite_finish("groups");
}
