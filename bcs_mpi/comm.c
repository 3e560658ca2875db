/* BCS-MPI communicators made from others: duplicates (blocking and not),
 * splits, their context ids, freeing and comparing. Above mpi.c (the
 * communicator table, requests, point to point) and below the files that
 * make communicators of their own (group.c, topo.c, win.c); it calls the
 * collectives, intercomm.c and attr.c for what a new communicator takes
 * from its parent. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

/* MPI_Comm_idup's context ids (idup_ctx): bcs_new_ctx stays below */
#define IDUP_CTX_BASE 0x80000000u
#define IDUP_CTX_PAIRS (1u << 29) /* the ids stay below 0xc0000000 */

static uint32_t idup_next; /* MPI_Comm_idup's contexts this rank led */

struct bcs_topo *bcs_topo_dup(const struct bcs_topo *t)
{
	if (!t)
		return NULL;
	size_t sz = sizeof(*t) + (size_t)t->len * sizeof(int);
	struct bcs_topo *c = malloc(sz);
	if (c)
		memcpy(c, t, sz);
	return c;
}

int bcs_new_ctx(struct bcs_comm *c, uint32_t *ctx)
{
	if (bcs_ctx_next() >= IDUP_CTX_BASE)
		return MPI_ERR_INTERN; /* the ids above are MPI_Comm_idup's */
	int mine = (int)bcs_ctx_next(), *all = malloc((size_t)c->size * sizeof(int));
	if (!all)
		return MPI_ERR_INTERN;
	int rc = bcs_allgather_ints(c, &mine, 1, all);
	uint32_t m = 0;
	for (int i = 0; !rc && i < c->size; i++)
		if ((uint32_t)all[i] > m)
			m = (uint32_t)all[i];
	free(all);
	if (rc)
		return rc;
	*ctx = m;
	bcs_ctx_claim(m + 2); /* m is at least this rank's next id */
	return MPI_SUCCESS;
}

/* A communicator's duplicates take their context ids from a block its
 * members agreed on in one exchange: every member duplicates it in the same
 * order (MPI's rule for collectives on one communicator), so the n-th
 * duplicate takes the same ids on all of them, and the claim of the whole
 * block keeps every other agreement they join above it. One exchange in
 * DUP_BLOCK duplicates, not one each (a loop of Comm_dup and Comm_free
 * cost a slice a duplicate). */
#define DUP_BLOCK 256u /* pairs of ids */

static int dup_ctx(struct bcs_comm *c, uint32_t *ctx)
{
	if (c->dup_next < c->dup_end) {
		*ctx = c->dup_next;
		c->dup_next += 2;
		return MPI_SUCCESS;
	}
	int rc = bcs_new_ctx(c, ctx);
	if (rc)
		return rc;
	uint32_t end = *ctx + 2 * DUP_BLOCK;
	if (end <= IDUP_CTX_BASE) {
		c->dup_next = *ctx + 2;
		c->dup_end = end;
		bcs_ctx_claim(end);
	}
	return MPI_SUCCESS;
}

/* a duplicate without the attributes: a library's own communicator (win.c)
 * must not run the program's copy callbacks */
int bcs_comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return MPI_ERR_COMM;
	uint32_t ctx;
	int rc = dup_ctx(c, &ctx);
	if (rc)
		return rc;
	MPI_Comm h = bcs_comm_alloc();
	int *w = malloc((size_t)c->size * sizeof(int));
	if (!h || !w) {
		free(w);
		return MPI_ERR_INTERN;
	}
	memcpy(w, c->world, (size_t)c->size * sizeof(int));
	bcs_comm_set(h, c->size, c->rank, w, ctx, c->errh);
	bcs_comm_slot(h)->topo = bcs_topo_dup(c->topo);
	*newcomm = h;
	return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	bcs_need_init("MPI_Comm_dup");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_dup");
	MPI_Comm h;
	int rc;
	if (c->rworld) {
		if ((rc = bcs_inter_dup(c, comm, &h)))
			return rc; /* reported there */
	} else if ((rc = bcs_comm_dup(comm, &h))) {
		return bcs_err(comm, rc, "MPI_Comm_dup");
	}
	rc = bcs_attr_copy(BCS_ATTR_COMM, comm, h);
	if (rc) {
		MPI_Comm_free(&h);
		return bcs_err(comm, rc, "MPI_Comm_dup");
	}
	*newcomm = h;
	return MPI_SUCCESS;
}

/* A communicator's info hints: none changes what a communicator does
 * here, so every one is ignored (MPI-4.0 §7.4.4 lets an implementation
 * ignore a hint), and the hints in use are none: an empty info. */
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
	(void)info;
	return MPI_Comm_dup(comm, newcomm);
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
	ANY_COMM(comm, "MPI_Comm_set_info");
	(void)c;
	(void)info;
	return MPI_SUCCESS;
}

int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
	ANY_COMM(comm, "MPI_Comm_get_info");
	(void)c;
	return bcs_err(comm, MPI_Info_create(info_used), "MPI_Comm_get_info");
}

/* MPI_Comm_idup. The context cannot be agreed on as bcs_new_ctx does (a
 * maximum over the members' next ids): the members create other
 * communicators before the request completes, and any of them could take
 * that maximum meanwhile. So the parent's rank 0 alone picks the id, from
 * a range of its own: IDUP_CTX_BASE + (its world rank, the count of idups
 * it led) two ids apart, which no other rank and no other allocator hands
 * out. It sends the id to the others in one round on the parent's
 * collective context, in the order of the parent's collectives, so the
 * request completes as any non-blocking collective and nothing waits at
 * the call. An intercommunicator's duplicate is led by rank 0 of both
 * groups together (bcs_inter_union's order, the same on either side), on
 * its collective context between the groups, and takes two consecutive
 * pairs: the four ids an intercommunicator holds. */

static int idup_ctx(uint32_t *ctx, uint32_t pairs)
{
	const struct bcs_comm *w = bcs_comm_get(MPI_COMM_WORLD);
	uint32_t bits = 1, per;
	while ((1u << bits) < (uint32_t)w->size)
		bits++;
	per = IDUP_CTX_PAIRS >> bits; /* the idups one rank may lead */
	if (idup_next + pairs > per)
		return MPI_ERR_INTERN;
	*ctx = IDUP_CTX_BASE + 2 * ((uint32_t)w->rank * per + idup_next);
	idup_next += pairs;
	return MPI_SUCCESS;
}

struct idup {
	MPI_Comm h;
	uint32_t ctx; /* the leader's id, received here */
};

static int idup_fin(void *state)
{
	struct idup *s = state;
	bcs_comm_slot(s->h)->ctx = s->ctx;
	return MPI_SUCCESS;
}

/* the new communicator's handle, its context set at completion; an
 * intercommunicator's remote group too */
static MPI_Comm idup_handle(const struct bcs_comm *c, uint32_t ctx)
{
	int *w = malloc((size_t)c->size * sizeof(int));
	int *rw = c->rworld ? malloc((size_t)c->rsize * sizeof(int)) : NULL;
	MPI_Comm h = w && (rw || !c->rworld) ? bcs_comm_alloc() : MPI_COMM_NULL;
	if (h == MPI_COMM_NULL) {
		free(w);
		free(rw);
		return MPI_COMM_NULL;
	}
	memcpy(w, c->world, (size_t)c->size * sizeof(int));
	bcs_comm_set(h, c->size, c->rank, w, ctx, c->errh);
	struct bcs_comm *n = bcs_comm_slot(h);
	n->topo = bcs_topo_dup(c->topo);
	if (rw) {
		memcpy(rw, c->rworld, (size_t)c->rsize * sizeof(int));
		n->rsize = c->rsize;
		n->rworld = rw;
	}
	return h;
}

static int idup(struct bcs_comm *c, MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req)
{
	/* g: the members the id goes to, on c's collective context */
	struct bcs_comm u, *g = c;
	int off;
	if (c->rworld) {
		if (bcs_inter_union(c, &u, &off))
			return MPI_ERR_INTERN;
		g = &u;
	}
	struct idup *s = calloc(1, sizeof(*s));
	int rc = !s ? MPI_ERR_INTERN : g->rank == 0 ? idup_ctx(&s->ctx, c->rworld ? 2 : 1) : 0;
	MPI_Comm h = rc ? MPI_COMM_NULL : idup_handle(c, s->ctx);
	if (!rc && h == MPI_COMM_NULL)
		rc = MPI_ERR_INTERN;
	if (!rc) {
		s->h = h;
		if ((rc = bcs_attr_copy(BCS_ATTR_COMM, comm, h)))
			MPI_Comm_free(&h);
	}
	if (rc) {
		free(s);
		if (g != c)
			free(u.world);
		return rc;
	}
	int id = bcs_coll_start(comm, idup_fin, s);
	MPI_Request r;
	for (int i = 1; !rc && g->rank == 0 && i < g->size; i++) {
		rc = bcs_isend(&s->ctx, 1, MPI_UINT32_T, i, TAG_COLL, g, true, &r);
		if (!rc)
			bcs_coll_part(id, r);
	}
	if (g->rank != 0) {
		rc = bcs_irecv(&s->ctx, 1, MPI_UINT32_T, 0, TAG_COLL, g, true, &r);
		if (!rc)
			bcs_coll_part(id, r);
	}
	bcs_coll_arm(id, rc);
	if (g != c)
		free(u.world); /* posted: the descriptors name world ranks */
	*newcomm = h;
	*req = id;
	return rc;
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Comm_idup");
	return bcs_err(comm, idup(c, comm, newcomm, req), "MPI_Comm_idup");
}

int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *req)
{
	(void)info; /* no hint changes what a communicator does here */
	ANY_COMM(comm, "MPI_Comm_idup_with_info");
	return bcs_err(comm, idup(c, comm, newcomm, req), "MPI_Comm_idup_with_info");
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	bcs_need_init("MPI_Comm_split");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_split");
	if (color < 0 && color != MPI_UNDEFINED)
		return bcs_err(comm, MPI_ERR_ARG, "MPI_Comm_split");
	if (c->rworld)
		return bcs_inter_split(c, comm, color, key, newcomm, "MPI_Comm_split");
	int mine[2] = {color, key};
	int *all = malloc((size_t)c->size * 2 * sizeof(int));
	if (!all)
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Comm_split");
	int rc = bcs_allgather_ints(c, mine, 2, all);
	uint32_t ctx = 0;
	if (!rc)
		rc = bcs_new_ctx(c, &ctx);
	if (rc) {
		free(all);
		return bcs_err(comm, rc, "MPI_Comm_split");
	}
	if (color == MPI_UNDEFINED) {
		free(all);
		*newcomm = MPI_COMM_NULL;
		return MPI_SUCCESS;
	}
	/* members of my color ordered by (key, old rank): insertion sort */
	int n = 0, *mem = malloc((size_t)c->size * sizeof(int));
	if (!mem) {
		free(all);
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Comm_split");
	}
	for (int i = 0; i < c->size; i++) {
		if (all[2 * i] != color)
			continue;
		int k = n++;
		while (k > 0 && all[2 * mem[k - 1] + 1] > all[2 * i + 1]) {
			mem[k] = mem[k - 1];
			k--;
		}
		mem[k] = i;
	}
	int me = 0;
	for (int i = 0; i < n; i++) {
		if (mem[i] == c->rank)
			me = i;
		mem[i] = c->world[mem[i]];
	}
	free(all);
	MPI_Comm h = bcs_comm_alloc();
	if (!h) {
		free(mem);
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Comm_split");
	}
	bcs_comm_set(h, n, me, mem, ctx, c->errh);
	*newcomm = h;
	return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm)
{
	bcs_need_init("MPI_Comm_free");
	struct bcs_comm *c = bcs_comm_get(*comm);
	if (!c || *comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_free");
	int rc = bcs_attr_free_all(BCS_ATTR_COMM, *comm);
	if (rc)
		return bcs_err(*comm, rc, "MPI_Comm_free");
	free(c->world);
	free(c->rworld);
	free(c->topo);
	free(c->name);
	memset(c, 0, sizeof(*c));
	*comm = MPI_COMM_NULL;
	return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm a, MPI_Comm b, int *result)
{
	struct bcs_comm *x = bcs_comm_get(a), *y = bcs_comm_get(b);
	if (!x || !y)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_compare");
	if (a == b) {
		*result = MPI_IDENT;
		return MPI_SUCCESS;
	}
	if (x->rworld || y->rworld)
		return bcs_inter_compare(x, y, result);
	if (x->size != y->size) {
		*result = MPI_UNEQUAL;
		return MPI_SUCCESS;
	}
	bool same_order = true, same_set = true;
	for (int i = 0; i < x->size; i++) {
		if (x->world[i] != y->world[i])
			same_order = false;
		bool found = false;
		for (int k = 0; k < y->size && !found; k++)
			found = x->world[i] == y->world[k];
		same_set = same_set && found;
	}
	*result = same_order ? MPI_CONGRUENT : same_set ? MPI_SIMILAR : MPI_UNEQUAL;
	return MPI_SUCCESS;
}
