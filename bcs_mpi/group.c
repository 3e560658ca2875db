/* BCS-MPI process groups and the communicators made from them
 * (Comm_create, Comm_create_group, Comm_split_type). A group is an ordered
 * list of world ranks, kept in the rank's own memory. */
#include <stdlib.h>
#include <string.h>

#include "bcs.h"
#include "procs.h"

struct group {
	int used;
	int n;
	int *world; /* group rank -> world rank */
};

static struct group *groups;
static int ngroups;

static struct group *group_get(MPI_Group h)
{
	if (h == MPI_GROUP_EMPTY) {
		static struct group empty = {1, 0, NULL};
		return &empty;
	}
	return h > MPI_GROUP_EMPTY && h < ngroups && groups[h].used ? &groups[h] : NULL;
}

const int *bcs_group_world(MPI_Group h, int *n)
{
	static const int none[1];
	struct group *g = group_get(h);
	if (!g)
		return NULL;
	*n = g->n;
	return g->world ? g->world : none;
}

/* A new group owning world (n entries); MPI_GROUP_NULL when out of memory. */
static MPI_Group group_new(int n, int *world)
{
	int h = MPI_GROUP_EMPTY + 1;
	while (h < ngroups && groups[h].used)
		h++;
	if (h >= ngroups) {
		int m = ngroups ? ngroups * 2 : 64;
		struct group *v = realloc(groups, (size_t)m * sizeof(*v));
		if (!v) {
			free(world);
			return MPI_GROUP_NULL;
		}
		memset(v + ngroups, 0, (size_t)(m - ngroups) * sizeof(*v));
		groups = v;
		ngroups = m;
	}
	groups[h] = (struct group){1, n, world};
	return h;
}

static int *ints(int n)
{
	return malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
}

static int index_of(const struct group *g, int world)
{
	return bcs_ranks_index(g->world, g->n, world);
}

#define GROUP(h, gr, fn)                                                          \
	struct group *gr = group_get(h);                                          \
	if (!gr)                                                                  \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_GROUP, fn)

static int give(int n, int *world, MPI_Group *out, const char *fn)
{
	if (!world)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, fn);
	if (n == 0) {
		free(world);
		*out = MPI_GROUP_EMPTY;
		return MPI_SUCCESS;
	}
	*out = group_new(n, world);
	return *out == MPI_GROUP_NULL ? bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, fn) : MPI_SUCCESS;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
	bcs_need_init("MPI_Comm_group");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_group");
	int *w = ints(c->size);
	if (w)
		memcpy(w, c->world, (size_t)c->size * sizeof(int));
	return give(c->size, w, group, "MPI_Comm_group");
}

int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
	INTER(comm, "MPI_Comm_remote_group");
	MPI_Group wg;
	int rc = MPI_Comm_group(MPI_COMM_WORLD, &wg);
	if (rc)
		return rc;
	rc = MPI_Group_incl(wg, c->rsize, c->rworld, group);
	MPI_Group_free(&wg);
	return rc;
}

int MPI_Group_size(MPI_Group group, int *size)
{
	GROUP(group, g, "MPI_Group_size");
	*size = g->n;
	return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
	GROUP(group, g, "MPI_Group_rank");
	int me;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	int i = index_of(g, me);
	*rank = i < 0 ? MPI_UNDEFINED : i;
	return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group)
{
	GROUP(*group, g, "MPI_Group_free");
	if (*group != MPI_GROUP_EMPTY) {
		free(g->world);
		memset(g, 0, sizeof(*g));
	}
	*group = MPI_GROUP_NULL;
	return MPI_SUCCESS;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	GROUP(group, g, "MPI_Group_incl");
	if (n < 0 || n > g->n)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_incl");
	int *w = ints(n);
	if (!w)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Group_incl");
	for (int i = 0; i < n; i++) {
		bool dup = false;
		for (int k = 0; k < i; k++)
			dup = dup || ranks[k] == ranks[i];
		if (ranks[i] < 0 || ranks[i] >= g->n || dup) {
			free(w);
			return bcs_err(MPI_COMM_WORLD, MPI_ERR_RANK, "MPI_Group_incl");
		}
		w[i] = g->world[ranks[i]];
	}
	return give(n, w, newgroup, "MPI_Group_incl");
}

/* excluded[i]: group rank i is left out; ranks must be valid and distinct */
static int exclude(struct group *g, int n, const int ranks[], MPI_Group *newgroup, const char *fn)
{
	char *out = calloc((size_t)g->n + 1, 1);
	int *w = ints(g->n);
	if (!out || !w) {
		free(out);
		free(w);
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, fn);
	}
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= g->n || out[ranks[i]]) {
			free(out);
			free(w);
			return bcs_err(MPI_COMM_WORLD, MPI_ERR_RANK, fn);
		}
		out[ranks[i]] = 1;
	}
	int k = 0;
	for (int i = 0; i < g->n; i++)
		if (!out[i])
			w[k++] = g->world[i];
	free(out);
	return give(k, w, newgroup, fn);
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	GROUP(group, g, "MPI_Group_excl");
	if (n < 0 || n > g->n)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_excl");
	return exclude(g, n, ranks, newgroup, "MPI_Group_excl");
}

/* The ranks of n (first, last, stride) triplets, in order; NULL on an error
 * (its class in *rc). */
static int *expand_ranges(struct group *g, int n, int ranges[][3], int *count, int *rc)
{
	int total = 0;
	*rc = MPI_SUCCESS;
	for (int i = 0; i < n; i++) {
		int f = ranges[i][0], l = ranges[i][1], s = ranges[i][2];
		if (s == 0 || f < 0 || f >= g->n || l < 0 || l >= g->n) {
			*rc = MPI_ERR_ARG;
			return NULL;
		}
		if ((l - f) / s >= 0)
			total += (l - f) / s + 1;
	}
	int *v = ints(total), k = 0;
	if (!v) {
		*rc = MPI_ERR_INTERN;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		int f = ranges[i][0], l = ranges[i][1], s = ranges[i][2];
		for (int r = f; s > 0 ? r <= l : r >= l; r += s)
			v[k++] = r;
	}
	*count = k;
	return v;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	GROUP(group, g, "MPI_Group_range_incl");
	int k, rc, *r = expand_ranges(g, n, ranges, &k, &rc);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, rc, "MPI_Group_range_incl");
	rc = MPI_Group_incl(group, k, r, newgroup);
	free(r);
	return rc;
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	GROUP(group, g, "MPI_Group_range_excl");
	int k, rc, *r = expand_ranges(g, n, ranges, &k, &rc);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, rc, "MPI_Group_range_excl");
	rc = exclude(g, k, r, newgroup, "MPI_Group_range_excl");
	free(r);
	return rc;
}

int MPI_Group_translate_ranks(MPI_Group g1, int n, const int ranks1[], MPI_Group g2,
			      int ranks2[])
{
	GROUP(g1, a, "MPI_Group_translate_ranks");
	GROUP(g2, b, "MPI_Group_translate_ranks");
	return bcs_err(MPI_COMM_WORLD,
		       bcs_ranks_translate(a->world, a->n, b->world, b->n, n, ranks1, ranks2),
		       "MPI_Group_translate_ranks");
}

/* union (kind 0), intersection (1), difference (2) */
static int setop(MPI_Group g1, MPI_Group g2, int kind, MPI_Group *out, const char *fn)
{
	GROUP(g1, a, fn);
	GROUP(g2, b, fn);
	int *w = ints(a->n + b->n);
	if (!w)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, fn);
	return give(bcs_ranks_setop(kind, a->world, a->n, b->world, b->n, w), w, out, fn);
}

int MPI_Group_union(MPI_Group g1, MPI_Group g2, MPI_Group *out)
{
	return setop(g1, g2, 0, out, "MPI_Group_union");
}

int MPI_Group_intersection(MPI_Group g1, MPI_Group g2, MPI_Group *out)
{
	return setop(g1, g2, 1, out, "MPI_Group_intersection");
}

int MPI_Group_difference(MPI_Group g1, MPI_Group g2, MPI_Group *out)
{
	return setop(g1, g2, 2, out, "MPI_Group_difference");
}

int MPI_Group_compare(MPI_Group g1, MPI_Group g2, int *result)
{
	GROUP(g1, a, "MPI_Group_compare");
	GROUP(g2, b, "MPI_Group_compare");
	if (a->n != b->n) {
		*result = MPI_UNEQUAL;
		return MPI_SUCCESS;
	}
	bool same_order = true, same_set = true;
	for (int i = 0; i < a->n; i++) {
		same_order = same_order && a->world[i] == b->world[i];
		same_set = same_set && index_of(b, a->world[i]) >= 0;
	}
	*result = same_order ? MPI_IDENT : same_set ? MPI_SIMILAR : MPI_UNEQUAL;
	return MPI_SUCCESS;
}

/* The communicator of g's members, on context ctx (this rank is in g). */
static int comm_of_group(const struct group *g, uint32_t ctx, int errh, MPI_Comm *newcomm)
{
	int me, *w = ints(g->n);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (!w)
		return MPI_ERR_INTERN;
	memcpy(w, g->world, (size_t)g->n * sizeof(int));
	*newcomm = bcs_comm_new(g->n, index_of(g, me), w, ctx, errh);
	if (*newcomm == MPI_COMM_NULL) {
		free(w);
		return MPI_ERR_INTERN;
	}
	return MPI_SUCCESS;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	bcs_need_init("MPI_Comm_create");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_create");
	GROUP(group, g, "MPI_Comm_create");
	for (int i = 0; i < g->n; i++) {
		bool in = false;
		for (int k = 0; k < c->size && !in; k++)
			in = c->world[k] == g->world[i];
		if (!in)
			return bcs_err(comm, MPI_ERR_GROUP, "MPI_Comm_create");
	}
	if (c->rworld) { /* each side's members of its group: a split by membership */
		int me = index_of(g, c->world[c->rank]);
		return bcs_inter_split(c, comm, me < 0 ? MPI_UNDEFINED : 0, me, newcomm,
				       "MPI_Comm_create");
	}
	/* collective over comm: everyone agrees on the context, members use it */
	uint32_t ctx;
	int rc = bcs_new_ctx(c, &ctx);
	if (rc)
		return bcs_err(comm, rc, "MPI_Comm_create");
	if (index_of(g, c->world[c->rank]) < 0) {
		*newcomm = MPI_COMM_NULL;
		return MPI_SUCCESS;
	}
	return bcs_err(comm, comm_of_group(g, ctx, c->errh, newcomm), "MPI_Comm_create");
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
	bcs_need_init("MPI_Comm_create_group");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_create_group");
	if (c->rworld)
		return bcs_inter_refuse(comm, "MPI_Comm_create_group");
	GROUP(group, g, "MPI_Comm_create_group");
	if (tag < 0 || tag > MPI_TAG_UB)
		return bcs_err(comm, MPI_ERR_TAG, "MPI_Comm_create_group");
	int me = index_of(g, c->world[c->rank]);
	if (me < 0) {
		/* as MPICH does (and programs such as mpitutorial's groups rely
		 * on): a caller outside the group gets no communicator */
		*newcomm = MPI_COMM_NULL;
		return MPI_SUCCESS;
	}
	/* collective over the group only: the members agree on a context over
	 * comm's collective context; every receive names its source, so a
	 * non-member's traffic there cannot match, and the parts carry a tag
	 * of the call's own, so that a member's collective on comm posted
	 * before (an MPI_Comm_idup) does not take them */
	struct bcs_comm tmp = {.used = 1, .size = g->n, .rank = me, .world = g->world,
			       .ctx = c->ctx, .errh = c->errh};
	uint32_t ctx;
	int was = bcs_coll_tag_set(TAG_GROUP_BASE + tag);
	int rc = bcs_new_ctx(&tmp, &ctx);
	bcs_coll_tag_set(was);
	if (!rc)
		rc = comm_of_group(g, ctx, c->errh, newcomm);
	return bcs_err(comm, rc, "MPI_Comm_create_group");
}

/* The hardware a rank can name: the node it runs on, its shared memory.
 * Whatever is finer (a socket, a core) depends on a binding BCS-MPI does
 * not know, so it names nothing: MPI_COMM_NULL, as MPI allows. */
static bool node_resource(MPI_Info info)
{
	char v[MPI_MAX_INFO_VAL + 1];
	int flag = 0;
	if (info == MPI_INFO_NULL ||
	    MPI_Info_get(info, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, v, &flag) != MPI_SUCCESS ||
	    !flag)
		return false;
	return !strcmp(v, "mpi_shared_memory") || !strcmp(v, "machine");
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
			MPI_Comm *newcomm)
{
	ANY_COMM(comm, "MPI_Comm_split_type");
	if (c->rworld)
		return bcs_inter_refuse(comm, "MPI_Comm_split_type");
	int color;
	switch (split_type) {
	case MPI_COMM_TYPE_SHARED:
		color = bcs_node_id(); /* shared memory: the ranks of one node */
		break;
	case MPI_COMM_TYPE_HW_GUIDED:
		color = node_resource(info) ? bcs_node_id() : MPI_UNDEFINED;
		break;
	case MPI_COMM_TYPE_HW_UNGUIDED: {
		/* a strict subset of comm, or none: a node's ranks when comm
		 * spans nodes (every member sees the same sizes) */
		int rc = MPI_Comm_split(comm, bcs_node_id(), key, newcomm);
		if (rc != MPI_SUCCESS)
			return rc;
		int n;
		MPI_Comm_size(*newcomm, &n);
		if (n == c->size)
			return MPI_Comm_free(newcomm); /* sets MPI_COMM_NULL */
		if (info != MPI_INFO_NULL)
			MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
		return MPI_SUCCESS;
	}
	case MPI_UNDEFINED:
		color = MPI_UNDEFINED;
		break;
	default:
		return bcs_err(comm, MPI_ERR_ARG, "MPI_Comm_split_type");
	}
	return MPI_Comm_split(comm, color, key, newcomm);
}
