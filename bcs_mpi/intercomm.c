/* BCS-MPI intercommunicators: two disjoint groups, point to point from one
 * to the other (ranks name the remote group), made by MPI_Intercomm_create
 * and turned into one intracommunicator by MPI_Intercomm_merge; the
 * collectives between the groups that coll.c hands over.
 *
 * An intercommunicator holds four context ids from ctx: ctx for point to
 * point, ctx + 1 for its collectives between the groups, ctx + 3 for the
 * collective steps inside one group (the "local view", whose own point to
 * point id ctx + 2 stays unused). Every step names its source, and the
 * agreement steps (dup, split, merge) run over both groups on ctx + 1 in a
 * fixed order, so no outcome depends on timing, and record/replay has
 * nothing to record here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

#define INTER_CTX_IDS 4

static int *ints_dup(const int *v, int n)
{
	int *w = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	if (w && n > 0)
		memcpy(w, v, (size_t)n * sizeof(int));
	return w;
}

/* A new intercommunicator taking ownership of world and rworld. */
static int inter_new(int size, int rank, int *world, int rsize, int *rworld, uint32_t ctx,
		     int errh, MPI_Comm *out)
{
	MPI_Comm h = world && rworld ? bcs_comm_new(size, rank, world, ctx, errh) : MPI_COMM_NULL;
	if (h == MPI_COMM_NULL) {
		free(world);
		free(rworld);
		return MPI_ERR_INTERN;
	}
	struct bcs_comm *n = bcs_comm_get(h);
	n->rsize = rsize;
	n->rworld = rworld;
	*out = h;
	return MPI_SUCCESS;
}

/* c's own group as an intracommunicator (collective steps on ctx + 3) */
static struct bcs_comm local_of(const struct bcs_comm *c)
{
	return (struct bcs_comm){.used = 1, .size = c->size, .rank = c->rank, .world = c->world,
				 .ctx = c->ctx + 2, .errh = c->errh};
}

int bcs_inter_union(const struct bcs_comm *c, struct bcs_comm *u, int *off)
{
	int n = c->size + c->rsize, *w = malloc((size_t)n * sizeof(int));
	if (!w)
		return MPI_ERR_INTERN;
	bool mine_first = c->world[0] < c->rworld[0];
	*off = mine_first ? 0 : c->rsize;
	memcpy(w + *off, c->world, (size_t)c->size * sizeof(int));
	memcpy(w + (mine_first ? c->size : 0), c->rworld, (size_t)c->rsize * sizeof(int));
	*u = (struct bcs_comm){.used = 1, .size = n, .rank = *off + c->rank, .world = w,
			       .ctx = c->ctx, .errh = c->errh};
	return MPI_SUCCESS;
}

/* Every member's k ints (all: k per union rank) over both groups, and the
 * largest context id start among them in *ctx. */
static int union_gather(const struct bcs_comm *c, int *mine, int k, int **all, int *off,
			uint32_t *ctx)
{
	struct bcs_comm u;
	int rc = bcs_inter_union(c, &u, off);
	if (rc)
		return rc;
	mine[k - 1] = (int)bcs_ctx_next();
	*all = malloc((size_t)u.size * (size_t)k * sizeof(int));
	rc = *all ? bcs_allgather_ints(&u, mine, k, *all) : MPI_ERR_INTERN;
	*ctx = 0;
	for (int i = 0; !rc && i < u.size; i++)
		if ((uint32_t)(*all)[i * k + k - 1] > *ctx)
			*ctx = (uint32_t)(*all)[i * k + k - 1];
	free(u.world);
	if (rc) {
		free(*all);
		*all = NULL;
	}
	return rc;
}

/* ---- creation */

/* The local leader's half of MPI_Intercomm_create: its group's (max
 * context id, size, world ranks) for the remote leader's, over peer_comm's
 * point to point with the caller's tag, in two rounds. */
static int leaders_swap(const struct bcs_comm *c, MPI_Comm peer_comm, int remote_leader,
			int tag, const int hdr[2], int rhdr[2], int **rworld)
{
	struct bcs_comm *p = bcs_comm_get(peer_comm);
	if (!p)
		return MPI_ERR_COMM;
	if (remote_leader < 0 || remote_leader >= bcs_peer_size(p))
		return MPI_ERR_RANK;
	if (bcs_peer_world(p)[remote_leader] == c->world[c->rank])
		return MPI_ERR_RANK; /* the remote leader would be this rank */
	MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	int rc = bcs_irecv(rhdr, 2, MPI_INT, remote_leader, tag, p, false, &r[0]);
	if (!rc)
		rc = bcs_isend(hdr, 2, MPI_INT, remote_leader, tag, p, false, &r[1]);
	int w = bcs_waitall(2, r);
	if (rc || w)
		return rc ? rc : w;
	if (rhdr[1] <= 0)
		return MPI_ERR_COMM;
	if (!(*rworld = malloc((size_t)rhdr[1] * sizeof(int))))
		return MPI_ERR_INTERN;
	rc = bcs_irecv(*rworld, rhdr[1], MPI_INT, remote_leader, tag, p, false, &r[0]);
	if (!rc)
		rc = bcs_isend(c->world, c->size, MPI_INT, remote_leader, tag, p, false, &r[1]);
	w = bcs_waitall(2, r);
	return rc ? rc : w;
}

static bool overlaps(const int *a, int na, const int *b, int nb)
{
	for (int i = 0; i < na; i++)
		for (int k = 0; k < nb; k++)
			if (a[i] == b[k])
				return true;
	return false;
}

/* The group's largest context id start, over local_comm. */
static int local_max_ctx(struct bcs_comm *c, int *max)
{
	int mine = (int)bcs_ctx_next(), *all = malloc((size_t)c->size * sizeof(int));
	int rc = all ? bcs_allgather_ints(c, &mine, 1, all) : MPI_ERR_INTERN;
	*max = 0;
	for (int i = 0; !rc && i < c->size; i++)
		if (all[i] > *max)
			*max = all[i];
	free(all);
	return rc;
}

static int intercomm_create(struct bcs_comm *c, MPI_Comm local_comm, int local_leader,
			    MPI_Comm peer_comm, int remote_leader, int tag, MPI_Comm *out)
{
	if (local_leader < 0 || local_leader >= c->size)
		return MPI_ERR_RANK;
	if (tag < 0 || tag > MPI_TAG_UB)
		return MPI_ERR_TAG;
	int hdr[2] = {0, c->size}, rhdr[2] = {0, 0}, *rworld = NULL;
	int rc = local_max_ctx(c, &hdr[0]);
	if (rc)
		return rc;
	if (c->rank == local_leader) {
		rc = leaders_swap(c, peer_comm, remote_leader, tag, hdr, rhdr, &rworld);
		if (rc)
			rhdr[1] = -rc; /* the leader's failure, for the whole group */
	}
	/* the leader hands the remote group to its own */
	rc = MPI_Bcast(rhdr, 2, MPI_INT, local_leader, local_comm);
	if (!rc && rhdr[1] <= 0)
		rc = rhdr[1] < 0 ? -rhdr[1] : MPI_ERR_COMM;
	if (!rc && c->rank != local_leader && !(rworld = malloc((size_t)rhdr[1] * sizeof(int))))
		rc = MPI_ERR_INTERN; /* the group goes on to the next broadcast regardless */
	if (rhdr[1] > 0) {
		int brc = MPI_Bcast(rworld ? rworld : NULL, rworld ? rhdr[1] : 0, MPI_INT,
				    local_leader, local_comm);
		rc = rc ? rc : brc;
	}
	if (!rc && overlaps(c->world, c->size, rworld, rhdr[1]))
		rc = MPI_ERR_COMM; /* MPI asks for disjoint groups */
	if (rc) {
		free(rworld);
		return rc;
	}
	/* both leaders saw both maxima: every member of both groups agrees */
	uint32_t ctx = (uint32_t)(hdr[0] > rhdr[0] ? hdr[0] : rhdr[0]);
	bcs_ctx_claim(ctx + INTER_CTX_IDS);
	return inter_new(c->size, c->rank, ints_dup(c->world, c->size), rhdr[1], rworld, ctx,
			 c->errh, out);
}

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
			 int remote_leader, int tag, MPI_Comm *newintercomm)
{
	ANY_COMM(local_comm, "MPI_Intercomm_create");
	if (c->rworld)
		return bcs_inter_refuse(local_comm, "MPI_Intercomm_create (as the local comm)");
	return bcs_err(local_comm,
		       intercomm_create(c, local_comm, local_leader, peer_comm, remote_leader, tag,
					newintercomm),
		       "MPI_Intercomm_create");
}

/* ---- queries */

int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
	ANY_COMM(comm, "MPI_Comm_test_inter");
	*flag = c->rworld != NULL;
	return MPI_SUCCESS;
}

int MPI_Comm_remote_size(MPI_Comm comm, int *size)
{
	INTER(comm, "MPI_Comm_remote_size");
	*size = c->rsize;
	return MPI_SUCCESS;
}

/* same order (0), same members (1) or neither (2) */
static int list_cmp(const int *a, int na, const int *b, int nb)
{
	if (na != nb)
		return 2;
	bool order = true;
	for (int i = 0; i < na; i++) {
		order = order && a[i] == b[i];
		bool found = false;
		for (int k = 0; k < nb && !found; k++)
			found = a[i] == b[k];
		if (!found)
			return 2;
	}
	return order ? 0 : 1;
}

int bcs_inter_compare(const struct bcs_comm *x, const struct bcs_comm *y, int *result)
{
	if (!x->rworld || !y->rworld) {
		*result = MPI_UNEQUAL; /* an intercommunicator and an intracommunicator */
		return MPI_SUCCESS;
	}
	int l = list_cmp(x->world, x->size, y->world, y->size);
	int r = list_cmp(x->rworld, x->rsize, y->rworld, y->rsize);
	int worst = l > r ? l : r;
	*result = worst == 0 ? MPI_CONGRUENT : worst == 1 ? MPI_SIMILAR : MPI_UNEQUAL;
	return MPI_SUCCESS;
}

/* ---- new communicators from an intercommunicator */

int bcs_inter_dup(struct bcs_comm *c, MPI_Comm comm, MPI_Comm *newcomm)
{
	int mine[1], *all, off;
	uint32_t ctx;
	int rc = union_gather(c, mine, 1, &all, &off, &ctx);
	free(all);
	if (!rc) {
		bcs_ctx_claim(ctx + INTER_CTX_IDS);
		rc = inter_new(c->size, c->rank, ints_dup(c->world, c->size), c->rsize,
			       ints_dup(c->rworld, c->rsize), ctx, c->errh, newcomm);
	}
	return bcs_err(comm, rc, "MPI_Comm_dup");
}

/* The world ranks of union ranks lo..lo+n-1 of colour color, ordered by
 * (key, rank); their count in *cnt, this rank's place in *me. */
static int *members(const int *all, const int *uworld, int lo, int n, int color, int self,
		    int *cnt, int *me)
{
	int *m = malloc((size_t)n * sizeof(int)), k = 0;
	if (!m)
		return NULL;
	for (int i = lo; i < lo + n; i++) {
		if (all[3 * i] != color)
			continue;
		int j = k++;
		while (j > 0 && all[3 * m[j - 1] + 1] > all[3 * i + 1]) {
			m[j] = m[j - 1];
			j--;
		}
		m[j] = i;
	}
	for (int i = 0; i < k; i++) {
		if (m[i] == self)
			*me = i;
		m[i] = uworld[m[i]];
	}
	*cnt = k;
	return m;
}

/* Each group split by colour; the new intercommunicator joins the members
 * of one colour on both sides, and is MPI_COMM_NULL where either side has
 * none (MPI-3.1 §6.4.2). */
static int inter_split(struct bcs_comm *c, int color, int key, MPI_Comm *newcomm)
{
	int mine[3] = {color, key, 0}, *all, off;
	uint32_t ctx;
	int rc = union_gather(c, mine, 3, &all, &off, &ctx);
	if (rc)
		return rc;
	bcs_ctx_claim(ctx + INTER_CTX_IDS); /* one id for every colour: they are disjoint */
	*newcomm = MPI_COMM_NULL;
	struct bcs_comm u;
	if (color == MPI_UNDEFINED || (rc = bcs_inter_union(c, &u, &off))) {
		free(all);
		return rc;
	}
	int roff = off ? 0 : c->size, n = 0, rn = 0, me = 0, rme = 0;
	int *w = members(all, u.world, off, c->size, color, u.rank, &n, &me);
	int *rw = members(all, u.world, roff, c->rsize, color, -1, &rn, &rme);
	free(all);
	free(u.world);
	if (w && rw && rn == 0) {
		free(w);
		free(rw);
		return MPI_SUCCESS;
	}
	return inter_new(n, me, w, rn, rw, ctx, c->errh, newcomm);
}

int bcs_inter_split(struct bcs_comm *c, MPI_Comm comm, int color, int key, MPI_Comm *newcomm,
		    const char *fn)
{
	return bcs_err(comm, inter_split(c, color, key, newcomm), fn);
}

/* The union of both groups: the group whose processes passed high = false
 * first; where both passed the same, the group of the lower world rank
 * first (MPI leaves that order to the implementation). */
static int merge(struct bcs_comm *c, int high, MPI_Comm *out)
{
	int mine[2] = {high != 0, 0}, *all, off;
	uint32_t ctx;
	int rc = union_gather(c, mine, 2, &all, &off, &ctx);
	if (rc)
		return rc;
	/* the union's first group is A, of a = its size; a group's flag is its
	 * first member's */
	int a = off ? c->rsize : c->size, n = c->size + c->rsize;
	bool b_first = all[0] && !all[2 * a];
	free(all);
	int *w = malloc((size_t)n * sizeof(int));
	if (!w)
		return MPI_ERR_INTERN;
	bool mine_first = (off == 0) != b_first;
	memcpy(w + (mine_first ? 0 : n - c->size), c->world, (size_t)c->size * sizeof(int));
	memcpy(w + (mine_first ? c->size : 0), c->rworld, (size_t)c->rsize * sizeof(int));
	bcs_ctx_claim(ctx + 2);
	*out = bcs_comm_new(n, (mine_first ? 0 : c->rsize) + c->rank, w, ctx, c->errh);
	if (*out == MPI_COMM_NULL) {
		free(w);
		return MPI_ERR_INTERN;
	}
	return MPI_SUCCESS;
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
	INTER(intercomm, "MPI_Intercomm_merge");
	return bcs_err(intercomm, merge(c, high, newintracomm), "MPI_Intercomm_merge");
}

/* ---- collectives between the groups */

/* local view: every other member's empty message to rank 0 (gather) or
 * from it (release) */
static int local_fan(struct bcs_comm *l, bool in)
{
	int n = l->size, rc = MPI_SUCCESS;
	if (n == 1)
		return MPI_SUCCESS;
	MPI_Request *r = calloc((size_t)n, sizeof(*r));
	if (!r)
		return MPI_ERR_INTERN;
	if (l->rank == 0) {
		for (int i = 1; !rc && i < n; i++)
			rc = in ? bcs_irecv(NULL, 0, MPI_BYTE, i, TAG_COLL, l, true, &r[i])
				: bcs_isend(NULL, 0, MPI_BYTE, i, TAG_COLL, l, true, &r[i]);
	} else {
		rc = in ? bcs_isend(NULL, 0, MPI_BYTE, 0, TAG_COLL, l, true, &r[0])
			: bcs_irecv(NULL, 0, MPI_BYTE, 0, TAG_COLL, l, true, &r[0]);
	}
	int w = bcs_waitall(n, r);
	free(r);
	return rc ? rc : w;
}

/* local rank 0 and remote rank 0 swap count items of dt (s out, r in) */
static int leaders_sendrecv(struct bcs_comm *c, const void *s, void *r, int count,
			    MPI_Datatype dt)
{
	MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	int rc = bcs_irecv(r, count, dt, 0, TAG_COLL, c, true, &q[0]);
	if (!rc)
		rc = bcs_isend(s, count, dt, 0, TAG_COLL, c, true, &q[1]);
	int w = bcs_waitall(2, q);
	return rc ? rc : w;
}

/* Nobody leaves before every member of both groups has entered: each
 * group gathers at its rank 0, the two swap a message, each releases its
 * group. */
int bcs_inter_barrier(struct bcs_comm *c, MPI_Comm comm)
{
	struct bcs_comm l = local_of(c);
	int rc = local_fan(&l, true);
	if (!rc && c->rank == 0)
		rc = leaders_sendrecv(c, NULL, NULL, 0, MPI_BYTE);
	if (!rc)
		rc = local_fan(&l, false);
	return bcs_err(comm, rc, "MPI_Barrier");
}

/* count items at buf from local rank 0 to the group's other members */
static int local_bcast(struct bcs_comm *l, void *buf, int count, MPI_Datatype dt)
{
	int n = l->size, rc = MPI_SUCCESS;
	if (n == 1)
		return MPI_SUCCESS;
	MPI_Request *r = calloc((size_t)n, sizeof(*r));
	if (!r)
		return MPI_ERR_INTERN;
	if (l->rank == 0)
		for (int i = 1; !rc && i < n; i++)
			rc = bcs_isend(buf, count, dt, i, TAG_COLL, l, true, &r[i]);
	else
		rc = bcs_irecv(buf, count, dt, 0, TAG_COLL, l, true, &r[0]);
	int w = bcs_waitall(n, r);
	free(r);
	return rc ? rc : w;
}

/* The root passes MPI_ROOT, the rest of its group MPI_PROC_NULL, the other
 * group the root's rank there: the root sends to that group's rank 0,
 * which passes it on. */
static int inter_bcast(void *buf, int count, MPI_Datatype dt, int root, struct bcs_comm *c)
{
	if (root == MPI_PROC_NULL)
		return MPI_SUCCESS;
	MPI_Request q = MPI_REQUEST_NULL;
	if (root == MPI_ROOT) {
		int rc = bcs_isend(buf, count, dt, 0, TAG_COLL, c, true, &q);
		int w = bcs_waitall(1, &q);
		return rc ? rc : w;
	}
	if (root < 0 || root >= c->rsize)
		return MPI_ERR_ROOT;
	struct bcs_comm l = local_of(c);
	if (c->rank == 0) {
		int rc = bcs_irecv(buf, count, dt, root, TAG_COLL, c, true, &q);
		int w = bcs_waitall(1, &q);
		if (rc || w)
			return rc ? rc : w;
	}
	return local_bcast(&l, buf, count, dt);
}

int bcs_inter_bcast(void *buf, int count, MPI_Datatype dt, int root, struct bcs_comm *c,
		    MPI_Comm comm)
{
	return bcs_err(comm, inter_bcast(buf, count, dt, root, c), "MPI_Bcast");
}

/* Local rank 0 folds its group's contributions in rank order into the slot
 * it returns in *res (free *mem). */
static int local_reduce(struct bcs_comm *l, const void *sbuf, int count, MPI_Datatype dt,
			MPI_Op op, void **mem, char **res)
{
	int n = l->size, rc = MPI_SUCCESS;
	long span;
	char *first;
	*mem = NULL;
	if (l->rank != 0) {
		MPI_Request q = MPI_REQUEST_NULL;
		rc = bcs_isend(sbuf, count, dt, 0, TAG_COLL, l, true, &q);
		int w = bcs_waitall(1, &q);
		return rc ? rc : w;
	}
	MPI_Request *r = calloc((size_t)n, sizeof(*r));
	if (r)
		*mem = bcs_slots(n, count, dt, &span, &first);
	if (!r || !*mem) {
		free(r);
		return MPI_ERR_INTERN;
	}
	rc = bcs_copy_typed(sbuf, count, dt, first, count, dt);
	for (int i = 1; !rc && i < n; i++)
		rc = bcs_irecv(first + span * i, count, dt, i, TAG_COLL, l, true, &r[i]);
	int w = bcs_waitall(n, r);
	free(r);
	if (!rc)
		rc = w;
	if (!rc)
		rc = bcs_fold(op, dt, count, first, span, 0, n);
	*res = first + span * (n - 1);
	return rc;
}

/* Each group receives the reduction of the other group's contributions:
 * each reduces at its rank 0, the two swap results, each passes the one
 * it got to its group. */
static int inter_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
			   MPI_Op op, struct bcs_comm *c)
{
	if (sbuf == MPI_IN_PLACE)
		return MPI_ERR_ARG; /* MPI allows no MPI_IN_PLACE on an intercommunicator */
	int rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	if (count < 0)
		return MPI_ERR_COUNT;
	struct bcs_comm l = local_of(c);
	void *mem;
	char *res = NULL;
	rc = local_reduce(&l, sbuf, count, dt, op, &mem, &res);
	if (!rc && c->rank == 0)
		rc = leaders_sendrecv(c, res, rbuf, count, dt);
	free(mem);
	/* a failed leader still releases its group: the members wait on it */
	int b = local_bcast(&l, rbuf, count, dt);
	return rc ? rc : b;
}

int bcs_inter_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			struct bcs_comm *c, MPI_Comm comm)
{
	return bcs_err(comm, inter_allreduce(sbuf, rbuf, count, dt, op, c), "MPI_Allreduce");
}

/* Rooted reduction: the root (MPI_ROOT) gets the other group's reduction,
 * folded at that group's rank 0 in rank order. */
static int inter_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			int root, struct bcs_comm *c)
{
	if (root == MPI_PROC_NULL)
		return MPI_SUCCESS;
	MPI_Request q = MPI_REQUEST_NULL;
	if (root == MPI_ROOT) {
		int rc = bcs_irecv(rbuf, count, dt, 0, TAG_COLL, c, true, &q);
		int w = bcs_waitall(1, &q);
		return rc ? rc : w;
	}
	if (root < 0 || root >= c->rsize)
		return MPI_ERR_ROOT;
	if (sbuf == MPI_IN_PLACE)
		return MPI_ERR_ARG;
	int rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	struct bcs_comm l = local_of(c);
	void *mem;
	char *res = NULL;
	rc = local_reduce(&l, sbuf, count, dt, op, &mem, &res);
	if (!rc && c->rank == 0) {
		rc = bcs_isend(res, count, dt, root, TAG_COLL, c, true, &q);
		int w = bcs_waitall(1, &q);
		rc = rc ? rc : w;
	}
	free(mem);
	return rc;
}

int bcs_inter_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		     int root, struct bcs_comm *c, MPI_Comm comm)
{
	return bcs_err(comm, inter_reduce(sbuf, rbuf, count, dt, op, root, c), "MPI_Reduce");
}

/* ---- the flat ones: every message straight between the two ranks it
 * joins, posted at once (a message costs a slice whatever the peer
 * count), blocks by rank of the remote group */

/* one side of a flat collective: block j is count (counts[j]) items at
 * displacement j * count (displs[j]) extents, or the whole buffer (same) */
struct side {
	const char *buf;
	int count;
	const int *counts, *displs;
	MPI_Datatype dt;
	bool same;
};

static const char *block(const struct side *s, int j, int *n)
{
	*n = s->counts ? s->counts[j] : s->count;
	if (s->same)
		return s->buf;
	struct bcs_type *t = bcs_type_get(s->dt);
	long ext = t ? t->extent : 0;
	return s->buf + ext * (s->displs ? (long)s->displs[j] : (long)j * s->count);
}

/* sends block j of s to remote ranks slo..shi-1, receives block j of r
 * from remote ranks rlo..rhi-1 */
static int exchange(struct bcs_comm *c, const struct side *s, int slo, int shi,
		    const struct side *r, int rlo, int rhi)
{
	int n = c->rsize, rc = MPI_SUCCESS, k;
	MPI_Request *q = calloc(2 * (size_t)n, sizeof(*q));
	if (!q)
		return MPI_ERR_INTERN;
	for (int j = rlo; !rc && j < rhi; j++) {
		char *at = (char *)block(r, j, &k);
		rc = bcs_irecv(at, k, r->dt, j, TAG_COLL, c, true, &q[j]);
	}
	for (int j = slo; !rc && j < shi; j++) {
		const char *at = block(s, j, &k);
		rc = bcs_isend(at, k, s->dt, j, TAG_COLL, c, true, &q[n + j]);
	}
	int w = bcs_waitall(2 * n, q);
	free(q);
	return rc ? rc : w;
}

static int inter_flat(int kind, const void *sbuf, int scount, const int *scounts,
		      const int *sdispls, MPI_Datatype stype, void *rbuf, int rcount,
		      const int *rcounts, const int *rdispls, MPI_Datatype rtype, int root,
		      struct bcs_comm *c)
{
	struct side s = {sbuf, scount, scounts, sdispls, stype, false};
	struct side r = {rbuf, rcount, rcounts, rdispls, rtype, false};
	bool rooted = kind == BCS_INTER_GATHER || kind == BCS_INTER_SCATTER;
	int n = c->rsize;
	if (rooted && root == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rooted && root != MPI_ROOT && (root < 0 || root >= n))
		return MPI_ERR_ROOT;
	/* MPI allows no MPI_IN_PLACE on an intercommunicator */
	bool s_used = !rooted || (kind == BCS_INTER_GATHER) != (root == MPI_ROOT);
	bool r_used = !rooted || (kind == BCS_INTER_GATHER) == (root == MPI_ROOT);
	if ((s_used && sbuf == MPI_IN_PLACE) || (r_used && rbuf == MPI_IN_PLACE))
		return MPI_ERR_ARG;
	switch (kind) {
	case BCS_INTER_GATHER:
		s.same = true;
		return root == MPI_ROOT ? exchange(c, &s, 0, 0, &r, 0, n)
					: exchange(c, &s, root, root + 1, &r, 0, 0);
	case BCS_INTER_SCATTER:
		r.same = true;
		return root == MPI_ROOT ? exchange(c, &s, 0, n, &r, 0, 0)
					: exchange(c, &s, 0, 0, &r, root, root + 1);
	case BCS_INTER_ALLGATHER:
		s.same = true;
		return exchange(c, &s, 0, n, &r, 0, n);
	default:
		return exchange(c, &s, 0, n, &r, 0, n);
	}
}

int bcs_inter_flat(int kind, const void *sbuf, int scount, const int *scounts,
		   const int *sdispls, MPI_Datatype stype, void *rbuf, int rcount,
		   const int *rcounts, const int *rdispls, MPI_Datatype rtype, int root,
		   struct bcs_comm *c, MPI_Comm comm, const char *fn)
{
	return bcs_err(comm,
		       inter_flat(kind, sbuf, scount, scounts, sdispls, stype, rbuf, rcount,
				  rcounts, rdispls, rtype, root, c),
		       fn);
}

/* Reduce_scatter(_block) between the groups: each group's vectors (the sum
 * of its own group's counts long, equal on both sides) to every rank of
 * the other, which folds them in rank order over its own block. Every
 * message in one round; the non-blocking form takes the same routes. */
static int inter_reduce_scatter(const void *sbuf, void *rbuf, const int *counts, int bcount,
				MPI_Datatype dt, MPI_Op op, struct bcs_comm *c)
{
	if (sbuf == MPI_IN_PLACE)
		return MPI_ERR_ARG; /* MPI allows no MPI_IN_PLACE on an intercommunicator */
	int rc = bcs_op_check(op, dt), n = c->rsize, total = 0;
	long off, span;
	int mine = bcs_rs_block(counts, bcount, c->size, c->rank, &off);
	if (rc || mine < 0)
		return rc ? rc : -mine;
	for (int i = 0; i < c->size; i++)
		total += counts ? counts[i] : bcount;
	char *all;
	void *mem = bcs_slots(n, total, dt, &span, &all);
	MPI_Request *q = calloc(2 * (size_t)n, sizeof(*q));
	for (int j = 0; mem && q && !rc && j < n; j++) {
		rc = bcs_irecv(all + span * j, total, dt, j, TAG_COLL, c, true, &q[j]);
		if (!rc)
			rc = bcs_isend(sbuf, total, dt, j, TAG_COLL, c, true, &q[n + j]);
	}
	int w = mem && q ? bcs_waitall(2 * n, q) : MPI_ERR_INTERN;
	char *blk = all + bcs_extent(dt) * off;
	if (!rc)
		rc = w;
	if (!rc)
		rc = bcs_fold(op, dt, mine, blk, span, 0, n);
	if (!rc)
		rc = bcs_copy_typed(blk + span * (n - 1), mine, dt, rbuf, mine, dt);
	free(mem);
	free(q);
	return rc;
}

int bcs_inter_reduce_scatter(const void *sbuf, void *rbuf, const int *counts, int bcount,
			     MPI_Datatype dt, MPI_Op op, struct bcs_comm *c, MPI_Comm comm,
			     const char *fn)
{
	return bcs_err(comm, inter_reduce_scatter(sbuf, rbuf, counts, bcount, dt, op, c), fn);
}
