/* BCS-MPI non-blocking collectives. Each is one round of point-to-point
 * messages on the communicator's collective context, all posted at the
 * call: a barrier is everyone's empty message to everyone, a broadcast the
 * root's to each, a reduction everyone's operand to whoever needs the
 * result, folded in rank order at completion (the blocking collectives'
 * order, so both give the same bits). Collectives are called in the same
 * order everywhere and matching keeps each pair's order, so the parts of
 * overlapping collectives never mix. The request completes through
 * MPI_Wait/Test like any other (bcs_coll_start, mpi.c). */
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

/* between the groups of an intercommunicator (at the end) */
static int nbi_bcast(void *buf, int count, MPI_Datatype dt, int root, bool barrier,
		     struct bcs_comm *c, MPI_Comm comm, MPI_Request *req);
static int nbi_flat(int kind, const void *sbuf, int scount, const int *scounts,
		    const int *sdispls, MPI_Datatype stype, void *rbuf, int rcount,
		    const int *rcounts, const int *rdispls, MPI_Datatype rtype, int root,
		    struct bcs_comm *c, MPI_Comm comm, MPI_Request *req);
static int nbi_reduce(const void *sbuf, void *rbuf, int count, const int *counts, int bcount,
		      MPI_Datatype dt, MPI_Op op, int root, struct bcs_comm *c, MPI_Comm comm,
		      MPI_Request *req);
/* Ialltoall's MPI_IN_PLACE: Ialltoallv's with equal blocks (below) */
static int nb_alltoall_in_place(void *rbuf, int rcount, MPI_Datatype rtype, struct bcs_comm *c,
				MPI_Comm comm, MPI_Request *req);

static int nb_barrier(struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int id = bcs_coll_start(comm, NULL, NULL), rc = MPI_SUCCESS;
	for (int i = 0; !rc && i < c->size; i++) {
		if (i == c->rank)
			continue;
		MPI_Request r;
		rc = bcs_irecv(NULL, 0, MPI_BYTE, i, TAG_COLL, c, true, &r);
		if (!rc) {
			bcs_coll_part(id, r);
			rc = bcs_isend(NULL, 0, MPI_BYTE, i, TAG_COLL, c, true, &r);
		}
		if (!rc)
			bcs_coll_part(id, r);
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return MPI_SUCCESS;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ibarrier");
	if (c->rworld)
		return bcs_err(comm, nbi_bcast(NULL, 0, MPI_BYTE, MPI_ROOT, true, c, comm, req),
			       "MPI_Ibarrier");
	return bcs_err(comm, nb_barrier(c, comm, req), "MPI_Ibarrier");
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ibcast");
	if (c->rworld)
		return bcs_err(comm, nbi_bcast(buf, count, dt, root, false, c, comm, req),
			       "MPI_Ibcast");
	if (root < 0 || root >= c->size)
		return bcs_err(comm, MPI_ERR_ROOT, "MPI_Ibcast");
	int id = bcs_coll_start(comm, NULL, NULL), rc = MPI_SUCCESS;
	MPI_Request r;
	if (c->rank == root) {
		for (int i = 0; !rc && i < c->size; i++) {
			if (i == root)
				continue;
			rc = bcs_isend(buf, count, dt, i, TAG_COLL, c, true, &r);
			if (!rc)
				bcs_coll_part(id, r);
		}
	} else {
		rc = bcs_irecv(buf, count, dt, root, TAG_COLL, c, true, &r);
		if (!rc)
			bcs_coll_part(id, r);
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return bcs_err(comm, rc, "MPI_Ibcast");
}

/* a reduction in flight: n slots of operands, folded at completion */
struct red {
	void *mem;
	char *all;
	long span;
	int n, count;
	MPI_Datatype dt;
	MPI_Op op;
	void *rbuf;
};

static int red_fin(void *state)
{
	struct red *s = state;
	int rc = MPI_SUCCESS;
	if (s->rbuf) {
		rc = bcs_fold(s->op, s->dt, s->count, s->all, s->span, 0, s->n);
		if (!rc)
			rc = bcs_copy_typed(s->all + s->span * (s->n - 1), s->count, s->dt, s->rbuf,
					    s->count, s->dt);
	}
	bcs_type_release(s->dt);
	bcs_op_release(s->op);
	free(s->mem);
	s->mem = NULL;
	return rc;
}

/* A fold's state: nslots operand slots of count dt, the first nfold of them
 * folded into rbuf at completion (NULL: no result on this rank). NULL when
 * out of memory. */
static struct red *red_new(int nslots, int nfold, int count, MPI_Datatype dt, MPI_Op op,
			   void *rbuf)
{
	struct red *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->mem = bcs_slots(nslots, count, dt, &s->span, &s->all);
	if (!s->mem) {
		free(s);
		return NULL;
	}
	s->n = nfold;
	s->count = count;
	s->dt = dt;
	bcs_type_hold(dt); /* the fold at completion may follow MPI_Type_free */
	bcs_op_hold(op); /* or MPI_Op_free */
	s->op = op;
	s->rbuf = rbuf;
	return s;
}

/* everyone's operand to root (root < 0: to everyone), one round */
static int nb_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		     int root, struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = c->size, me = c->rank, rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	if (count < 0)
		return MPI_ERR_COUNT;
	if (root >= n)
		return MPI_ERR_ROOT;
	bool gets = root < 0 || root == me;
	/* the operand is copied at the call, so MPI_IN_PLACE's rbuf may be
	 * overwritten by the result */
	struct red *s = red_new(n, n, count, dt, op, gets ? rbuf : NULL);
	if (!s)
		return MPI_ERR_INTERN;
	const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
	char *my = s->all + s->span * me;
	rc = bcs_copy_typed(mine, count, dt, my, count, dt);
	int id = bcs_coll_start(comm, red_fin, s);
	for (int i = 0; !rc && i < n; i++) {
		if (i == me)
			continue;
		MPI_Request r;
		if (root < 0 || i == root) {
			rc = bcs_isend(my, count, dt, i, TAG_COLL, c, true, &r);
			if (!rc)
				bcs_coll_part(id, r);
		}
		if (!rc && gets) {
			rc = bcs_irecv(s->all + s->span * i, count, dt, i, TAG_COLL, c, true, &r);
			if (!rc)
				bcs_coll_part(id, r);
		}
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return rc;
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		   MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Iallreduce");
	if (c->rworld)
		return bcs_err(comm, nbi_reduce(sbuf, rbuf, count, NULL, -1, dt, op, -1, c, comm, req),
			       "MPI_Iallreduce");
	return bcs_err(comm, nb_reduce(sbuf, rbuf, count, dt, op, -1, c, comm, req),
		       "MPI_Iallreduce");
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
		MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ireduce");
	if (c->rworld)
		return bcs_err(comm, nbi_reduce(sbuf, rbuf, count, NULL, -1, dt, op, root, c, comm,
						req), "MPI_Ireduce");
	if (root < 0)
		return bcs_err(comm, MPI_ERR_ROOT, "MPI_Ireduce");
	return bcs_err(comm, nb_reduce(sbuf, rbuf, count, dt, op, root, c, comm, req),
		       "MPI_Ireduce");
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Iallgather");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_ALLGATHER, sbuf, scount, NULL, NULL, stype,
					      rbuf, rcount, NULL, NULL, rtype, 0, c, comm, req),
			       "MPI_Iallgather");
	struct bcs_type *rt = bcs_type_get(rtype);
	if (!rt)
		return bcs_err(comm, MPI_ERR_TYPE, "MPI_Iallgather");
	int n = c->size, me = c->rank, rc = MPI_SUCCESS;
	char *mine_at = (char *)rbuf + rt->extent * (long)me * rcount;
	if (sbuf == MPI_IN_PLACE) {
		sbuf = mine_at;
		scount = rcount;
		stype = rtype;
	} else {
		rc = bcs_copy_typed(sbuf, scount, stype, mine_at, rcount, rtype);
	}
	int id = bcs_coll_start(comm, NULL, NULL);
	for (int i = 0; !rc && i < n; i++) {
		if (i == me)
			continue;
		MPI_Request r;
		rc = bcs_irecv((char *)rbuf + rt->extent * (long)i * rcount, rcount, rtype, i,
			       TAG_COLL, c, true, &r);
		if (!rc) {
			bcs_coll_part(id, r);
			rc = bcs_isend(sbuf, scount, stype, i, TAG_COLL, c, true, &r);
		}
		if (!rc)
			bcs_coll_part(id, r);
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return bcs_err(comm, rc, "MPI_Iallgather");
}

/* Igather, Iscatter, Ialltoall: the blocking forms' messages, posted at once.
 * dir: 0 gather (to root), 1 scatter (from root), 2 alltoall. */
static int nb_route(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		    MPI_Datatype rtype, int root, int dir, struct bcs_comm *c, MPI_Comm comm,
		    MPI_Request *req)
{
	struct bcs_type *st = bcs_type_get(stype), *rt = bcs_type_get(rtype);
	int n = c->size, me = c->rank, rc = MPI_SUCCESS;
	if (dir != 2 && (root < 0 || root >= n))
		return MPI_ERR_ROOT;
	bool at_root = dir == 2 || me == root;
	/* MPI_IN_PLACE: the root's own block stays where it is */
	bool in_place = (dir == 0 && at_root && sbuf == MPI_IN_PLACE) ||
			(dir == 1 && at_root && rbuf == MPI_IN_PLACE);
	bool needs_s = dir == 2 || (dir == 0 ? !in_place : at_root);
	bool needs_r = dir == 2 || (dir == 0 ? at_root : !in_place);
	if ((needs_s && !st) || (needs_r && !rt))
		return MPI_ERR_TYPE;
	int id = bcs_coll_start(comm, NULL, NULL);
	for (int i = 0; !rc && i < n; i++) {
		/* what I send to i and receive from i */
		bool sends = dir == 2 || (dir == 0 ? i == root : at_root);
		bool recvs = dir == 2 || (dir == 0 ? at_root : i == root);
		const char *s = (const char *)sbuf;
		char *r = rbuf;
		if (dir != 0 && st)
			s += st->extent * (long)i * scount; /* scatter and alltoall: block i */
		if (dir != 1 && rt)
			r += rt->extent * (long)i * rcount; /* gather and alltoall: block i */
		if (i == me) {
			if (sends && recvs && !in_place)
				rc = bcs_copy_typed(s, scount, stype, r, rcount, rtype);
			continue;
		}
		MPI_Request q;
		if (recvs) {
			rc = bcs_irecv(r, rcount, rtype, i, TAG_COLL, c, true, &q);
			if (!rc)
				bcs_coll_part(id, q);
		}
		if (sends && !rc) {
			rc = bcs_isend(s, scount, stype, i, TAG_COLL, c, true, &q);
			if (!rc)
				bcs_coll_part(id, q);
		}
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return rc;
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Igather");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_GATHER, sbuf, scount, NULL, NULL, stype, rbuf,
					      rcount, NULL, NULL, rtype, root, c, comm, req),
			       "MPI_Igather");
	return bcs_err(comm, nb_route(sbuf, scount, stype, rbuf, rcount, rtype, root, 0, c, comm,
				      req), "MPI_Igather");
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Iscatter");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_SCATTER, sbuf, scount, NULL, NULL, stype,
					      rbuf, rcount, NULL, NULL, rtype, root, c, comm, req),
			       "MPI_Iscatter");
	return bcs_err(comm, nb_route(sbuf, scount, stype, rbuf, rcount, rtype, root, 1, c, comm,
				      req), "MPI_Iscatter");
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ialltoall");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_ALLTOALL, sbuf, scount, NULL, NULL, stype,
					      rbuf, rcount, NULL, NULL, rtype, 0, c, comm, req),
			       "MPI_Ialltoall");
	if (sbuf == MPI_IN_PLACE)
		return bcs_err(comm, nb_alltoall_in_place(rbuf, rcount, rtype, c, comm, req),
			       "MPI_Ialltoall");
	return bcs_err(comm, nb_route(sbuf, scount, stype, rbuf, rcount, rtype, 0, 2, c, comm,
				      req), "MPI_Ialltoall");
}

/* ---- the v- and w- forms: per peer, what goes and what comes */

/* one block of a message: count items of dt at at (count < 0: none) */
struct blk {
	const char *at;
	int count;
	MPI_Datatype dt;
};

/* a send buffer that MPI_IN_PLACE made a copy of, freed at completion */
static int copy_fin(void *state)
{
	void **copy = state;
	free(*copy);
	*copy = NULL;
	return MPI_SUCCESS;
}

/* Posts snd[i] to i and rcv[i] from i for every peer i in one round (my
 * own block copied at once); state/fin as bcs_coll_start's. */
static int nb_blocks(const struct blk *snd, const struct blk *rcv, struct bcs_comm *c,
		     MPI_Comm comm, int (*fin)(void *), void *state, MPI_Request *req)
{
	/* on an intercommunicator the peers are the remote group: no own block */
	int n = bcs_peer_size(c), me = c->rworld ? -1 : c->rank, rc = MPI_SUCCESS;
	for (int i = 0; !rc && i < n; i++) {
		if (snd[i].count < 0 && rcv[i].count < 0)
			continue;
		if ((snd[i].count >= 0 && !bcs_type_get(snd[i].dt)) ||
		    (rcv[i].count >= 0 && !bcs_type_get(rcv[i].dt)))
			rc = MPI_ERR_TYPE;
	}
	if (!rc && me >= 0 && snd[me].count >= 0 && rcv[me].count >= 0)
		rc = bcs_copy_typed(snd[me].at, snd[me].count, snd[me].dt, (void *)rcv[me].at,
				    rcv[me].count, rcv[me].dt);
	if (rc) {
		if (fin)
			fin(state);
		free(state);
		return rc;
	}
	int id = bcs_coll_start(comm, fin, state);
	for (int i = 0; !rc && i < n; i++) {
		MPI_Request q;
		if (i == me)
			continue;
		if (rcv[i].count >= 0) {
			rc = bcs_irecv((void *)rcv[i].at, rcv[i].count, rcv[i].dt, i, TAG_COLL, c,
				       true, &q);
			if (!rc)
				bcs_coll_part(id, q);
		}
		if (!rc && snd[i].count >= 0) {
			rc = bcs_isend(snd[i].at, snd[i].count, snd[i].dt, i, TAG_COLL, c, true, &q);
			if (!rc)
				bcs_coll_part(id, q);
		}
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return rc;
}

/* n blocks, none yet */
static struct blk *blks(int n)
{
	struct blk *b = malloc(2 * (size_t)(n ? n : 1) * sizeof(*b));
	for (int i = 0; b && i < 2 * n; i++)
		b[i] = (struct blk){.count = -1};
	return b;
}


static int nb_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		      const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
		      struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = c->size, me = c->rank;
	if (root < 0 || root >= n)
		return MPI_ERR_ROOT;
	struct blk *b = blks(n), *snd = b, *rcv = b + n;
	if (!b)
		return MPI_ERR_INTERN;
	if (me == root) {
		long ext = bcs_extent(rtype);
		for (int i = 0; i < n; i++)
			rcv[i] = (struct blk){(char *)rbuf + ext * displs[i], rcounts[i], rtype};
		if (sbuf == MPI_IN_PLACE)
			rcv[me].count = -1; /* my block is already in place */
	}
	if (me != root || sbuf != MPI_IN_PLACE)
		snd[root] = (struct blk){sbuf, scount, stype};
	int rc = nb_blocks(snd, rcv, c, comm, NULL, NULL, req);
	free(b);
	return rc;
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		 const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
		 MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Igatherv");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_GATHER, sbuf, scount, NULL, NULL, stype, rbuf,
					      0, rcounts, displs, rtype, root, c, comm, req),
			       "MPI_Igatherv");
	return bcs_err(comm, nb_gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, c,
					comm, req), "MPI_Igatherv");
}

static int nb_scatterv(const void *sbuf, const int *scounts, const int *displs,
		       MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
		       struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = c->size, me = c->rank;
	if (root < 0 || root >= n)
		return MPI_ERR_ROOT;
	struct blk *b = blks(n), *snd = b, *rcv = b + n;
	if (!b)
		return MPI_ERR_INTERN;
	if (me == root) {
		long ext = bcs_extent(stype);
		for (int i = 0; i < n; i++)
			snd[i] = (struct blk){(const char *)sbuf + ext * displs[i], scounts[i], stype};
		if (rbuf == MPI_IN_PLACE)
			snd[me].count = -1; /* my block stays where it is */
	}
	if (me != root || rbuf != MPI_IN_PLACE)
		rcv[root] = (struct blk){rbuf, rcount, rtype};
	int rc = nb_blocks(snd, rcv, c, comm, NULL, NULL, req);
	free(b);
	return rc;
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
		  void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
		  MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Iscatterv");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_SCATTER, sbuf, 0, scounts, displs, stype,
					      rbuf, rcount, NULL, NULL, rtype, root, c, comm, req),
			       "MPI_Iscatterv");
	return bcs_err(comm, nb_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, c,
					 comm, req), "MPI_Iscatterv");
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		    const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
		    MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Iallgatherv");
	if (c->rworld)
		return bcs_err(comm, nbi_flat(BCS_INTER_ALLGATHER, sbuf, scount, NULL, NULL, stype,
					      rbuf, 0, rcounts, displs, rtype, 0, c, comm, req),
			       "MPI_Iallgatherv");
	int n = c->size, me = c->rank;
	struct blk *b = blks(n), *snd = b, *rcv = b + n;
	if (!b)
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Iallgatherv");
	long ext = bcs_extent(rtype);
	for (int i = 0; i < n; i++)
		rcv[i] = (struct blk){(char *)rbuf + ext * displs[i], rcounts[i], rtype};
	/* MPI_IN_PLACE: my block goes from where it already is */
	struct blk mine = sbuf == MPI_IN_PLACE ? rcv[me] : (struct blk){sbuf, scount, stype};
	for (int i = 0; i < n; i++)
		snd[i] = mine;
	if (sbuf == MPI_IN_PLACE)
		snd[me].count = -1;
	int rc = nb_blocks(snd, rcv, c, comm, NULL, NULL, req);
	free(b);
	return bcs_err(comm, rc, "MPI_Iallgatherv");
}

/* Ialltoallv (byte displs = 0: displacements in extents of the one type)
 * and Ialltoallw (types per peer, displacements in bytes). MPI_IN_PLACE
 * sends from a copy of the receive buffer taken at the call. */
static int nb_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
			const MPI_Datatype *stypes, void *rbuf, const int *rcounts,
			const int *rdispls, const MPI_Datatype *rtypes, bool w,
			struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = bcs_peer_size(c);
	if (c->rworld && sbuf == MPI_IN_PLACE)
		return MPI_ERR_ARG; /* MPI allows none on an intercommunicator */
	struct blk *b = blks(n), *snd = b, *rcv = b + n;
	void **copy = calloc(1, sizeof(*copy));
	if (!b || !copy) {
		free(b);
		free(copy);
		return MPI_ERR_INTERN;
	}
	for (int i = 0; i < n; i++) {
		MPI_Datatype rt = rtypes[w ? i : 0];
		rcv[i] = (struct blk){(char *)rbuf + (w ? 1 : bcs_extent(rt)) * rdispls[i], rcounts[i], rt};
	}
	int rc = MPI_SUCCESS;
	if (sbuf == MPI_IN_PLACE) {
		long hi = 0;
		for (int i = 0; !rc && i < n; i++) {
			struct bcs_type *t = bcs_type_get(rcv[i].dt);
			if (!t) {
				rc = MPI_ERR_TYPE;
				break;
			}
			long end = rcv[i].at - (char *)rbuf + t->true_ub +
				   (rcv[i].count > 0 ? (long)(rcv[i].count - 1) * t->extent : 0);
			if (rcv[i].count > 0 && end > hi)
				hi = end;
		}
		if (!rc && !(*copy = malloc((size_t)hi + 1)))
			rc = MPI_ERR_INTERN;
		if (!rc) {
			memcpy(*copy, rbuf, (size_t)hi);
			for (int i = 0; i < n; i++)
				snd[i] = (struct blk){(char *)*copy + (rcv[i].at - (char *)rbuf),
						      rcv[i].count, rcv[i].dt};
		}
	} else {
		for (int i = 0; i < n; i++) {
			MPI_Datatype st = stypes[w ? i : 0];
			snd[i] = (struct blk){(const char *)sbuf + (w ? 1 : bcs_extent(st)) * sdispls[i],
					      scounts[i], st};
		}
	}
	if (rc) {
		free(b);
		free(copy);
		return rc;
	}
	rc = nb_blocks(snd, rcv, c, comm, copy_fin, copy, req);
	free(b);
	return rc;
}

static int nb_alltoall_in_place(void *rbuf, int rcount, MPI_Datatype rtype, struct bcs_comm *c,
				MPI_Comm comm, MPI_Request *req)
{
	int n = c->size, *cd = malloc(2 * (size_t)n * sizeof(int));
	if (!cd)
		return MPI_ERR_INTERN;
	for (int i = 0; i < n; i++) {
		cd[i] = rcount;
		cd[n + i] = i * rcount;
	}
	int rc = nb_alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rbuf, cd, cd + n, &rtype, false, c,
			      comm, req);
	free(cd);
	return rc;
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
		   MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[],
		   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ialltoallv");
	return bcs_err(comm, nb_alltoallw(sbuf, scounts, sdispls, &stype, rbuf, rcounts, rdispls,
					  &rtype, false, c, comm, req), "MPI_Ialltoallv");
}

int MPI_Ialltoallw(const void *sbuf, const int scounts[], const int sdispls[],
		   const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
		   const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
		   MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ialltoallw");
	return bcs_err(comm, nb_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls,
					  rtypes, true, c, comm, req), "MPI_Ialltoallw");
}

/* the blocking form: the same round, waited for inside the call */
int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
		  const MPI_Datatype stypes[], void *rbuf, const int rcounts[], const int rdispls[],
		  const MPI_Datatype rtypes[], MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Alltoallw");
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = nb_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, true,
			      c, comm, &r);
	int w = bcs_waitall(1, &r);
	return bcs_err(comm, rc ? rc : w, "MPI_Alltoallw");
}

/* Ireduce_scatter(_block): block j of every rank's operand to rank j, which
 * folds the n of them in rank order at completion (Reduce_scatter's order) */
static int nb_reduce_scatter(const void *sbuf, void *rbuf, const int *counts, int bcount,
			     MPI_Datatype dt, MPI_Op op, struct bcs_comm *c, MPI_Comm comm,
			     MPI_Request *req)
{
	int n = c->size, me = c->rank, rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	long ext = bcs_extent(dt), off, myoff;
	int mycount = bcs_rs_block(counts, bcount, n, me, &myoff);
	if (mycount < 0)
		return -mycount;
	const char *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
	struct red *s = red_new(n, n, mycount, dt, op, rbuf);
	if (!s)
		return MPI_ERR_INTERN;
	rc = bcs_copy_typed(src + ext * myoff, mycount, dt, s->all + s->span * me, mycount, dt);
	int id = bcs_coll_start(comm, red_fin, s);
	off = 0;
	for (int i = 0; !rc && i < n; i++) {
		int k = counts ? counts[i] : bcount;
		MPI_Request r;
		if (i != me) {
			rc = bcs_isend(src + ext * off, k, dt, i, TAG_COLL, c, true, &r);
			if (!rc)
				bcs_coll_part(id, r);
			if (!rc)
				rc = bcs_irecv(s->all + s->span * i, mycount, dt, i, TAG_COLL, c, true,
					       &r);
			if (!rc)
				bcs_coll_part(id, r);
		}
		off += k;
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return rc;
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int counts[], MPI_Datatype dt,
			MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ireduce_scatter");
	if (c->rworld)
		return bcs_err(comm, nbi_reduce(sbuf, rbuf, 0, counts, 0, dt, op, -1, c, comm, req),
			       "MPI_Ireduce_scatter");
	return bcs_err(comm, nb_reduce_scatter(sbuf, rbuf, counts, 0, dt, op, c, comm, req),
		       "MPI_Ireduce_scatter");
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
			      MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ireduce_scatter_block");
	if (c->rworld)
		return bcs_err(comm, nbi_reduce(sbuf, rbuf, 0, NULL, count, dt, op, -1, c, comm, req),
			       "MPI_Ireduce_scatter_block");
	return bcs_err(comm, nb_reduce_scatter(sbuf, rbuf, NULL, count, dt, op, c, comm, req),
		       "MPI_Ireduce_scatter_block");
}

/* Iscan and Iexscan: my operand to every higher rank, the lower ranks'
 * from each, folded in rank order at completion (MPI_Scan's order); slot
 * i holds rank i's operand, the fold covers ranks 0..me (Iexscan:
 * 0..me-1, nothing on rank 0) */
static int nb_scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		   bool exclusive, struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = c->size, me = c->rank, rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	if (count < 0)
		return MPI_ERR_COUNT;
	int nfold = exclusive ? me : me + 1;
	struct red *s = red_new(me + 1, nfold, count, dt, op, nfold > 0 ? rbuf : NULL);
	if (!s)
		return MPI_ERR_INTERN;
	char *my = s->all + s->span * me;
	rc = bcs_copy_typed(sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, dt, my, count, dt);
	int id = bcs_coll_start(comm, red_fin, s);
	for (int i = me + 1; !rc && i < n; i++) {
		MPI_Request r;
		rc = bcs_isend(my, count, dt, i, TAG_COLL, c, true, &r);
		if (!rc)
			bcs_coll_part(id, r);
	}
	for (int i = 0; !rc && i < me; i++) {
		MPI_Request r;
		rc = bcs_irecv(s->all + s->span * i, count, dt, i, TAG_COLL, c, true, &r);
		if (!rc)
			bcs_coll_part(id, r);
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return rc;
}

int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
	      MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Iscan");
	return bcs_err(comm, nb_scan(sbuf, rbuf, count, dt, op, false, c, comm, req),
		       "MPI_Iscan");
}

int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Iexscan");
	return bcs_err(comm, nb_scan(sbuf, rbuf, count, dt, op, true, c, comm, req),
		       "MPI_Iexscan");
}

/* ---- between the two groups of an intercommunicator: every message
 * straight between the two ranks it joins, posted at once, blocks by rank
 * of the remote group; a root is MPI_ROOT at the root, MPI_PROC_NULL at the
 * rest of its group and the root's rank in the other group. Reductions fold
 * the remote group's operands in its rank order, as the blocking forms do */

/* block i of a buffer: counts[i] items at displs[i] extents (NULL: count
 * items at i * count) */
static struct blk blk_of(const void *buf, int count, const int *counts, const int *displs,
			 MPI_Datatype dt, int i)
{
	long at = displs ? (long)displs[i] : (long)i * count;
	return (struct blk){(const char *)buf + bcs_extent(dt) * at, counts ? counts[i] : count, dt};
}

static bool root_bad(int root, const struct bcs_comm *c)
{
	return root != MPI_ROOT && root != MPI_PROC_NULL && (root < 0 || root >= c->rsize);
}

/* Ibarrier (buf NULL, count 0, MPI_BYTE, root MPI_ROOT and every rank a
 * receiver: everyone's empty message to every remote rank) and Ibcast */
static int nbi_bcast(void *buf, int count, MPI_Datatype dt, int root, bool barrier,
		     struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = c->rsize;
	if (root_bad(root, c))
		return MPI_ERR_ROOT;
	struct blk *b = blks(n), *snd = b, *rcv = b + n;
	if (!b)
		return MPI_ERR_INTERN;
	for (int i = 0; i < n; i++) {
		if (root == MPI_ROOT)
			snd[i] = (struct blk){buf, count, dt};
		if (barrier || i == root)
			rcv[i] = (struct blk){buf, count, dt};
	}
	int rc = nb_blocks(snd, rcv, c, comm, NULL, NULL, req);
	free(b);
	return rc;
}

/* Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v) (bcs_inter_flat's
 * kinds) */
static int nbi_flat(int kind, const void *sbuf, int scount, const int *scounts,
		    const int *sdispls, MPI_Datatype stype, void *rbuf, int rcount,
		    const int *rcounts, const int *rdispls, MPI_Datatype rtype, int root,
		    struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int n = c->rsize;
	bool rooted = kind == BCS_INTER_GATHER || kind == BCS_INTER_SCATTER;
	if (rooted && root_bad(root, c))
		return MPI_ERR_ROOT;
	bool gather = kind == BCS_INTER_GATHER, scatter = kind == BCS_INTER_SCATTER;
	/* MPI allows no MPI_IN_PLACE on an intercommunicator */
	bool s_used = !rooted || (root == MPI_ROOT ? scatter : gather && root >= 0);
	bool r_used = !rooted || (root == MPI_ROOT ? gather : scatter && root >= 0);
	if ((s_used && sbuf == MPI_IN_PLACE) || (r_used && rbuf == MPI_IN_PLACE))
		return MPI_ERR_ARG;
	struct blk *b = blks(n), *snd = b, *rcv = b + n;
	if (!b)
		return MPI_ERR_INTERN;
	for (int i = 0; i < n; i++) {
		if (kind == BCS_INTER_ALLGATHER)
			snd[i] = (struct blk){sbuf, scount, stype};
		else if (!rooted || (scatter && root == MPI_ROOT))
			snd[i] = blk_of(sbuf, scount, scounts, sdispls, stype, i);
		if (!rooted || (gather && root == MPI_ROOT))
			rcv[i] = blk_of(rbuf, rcount, rcounts, rdispls, rtype, i);
	}
	if (gather && root >= 0)
		snd[root] = (struct blk){sbuf, scount, stype};
	if (scatter && root >= 0)
		rcv[root] = (struct blk){rbuf, rcount, rtype};
	int rc = nb_blocks(snd, rcv, c, comm, NULL, NULL, req);
	free(b);
	return rc;
}

/* sbuf's total items to remote rank to (-1: every remote rank,
 * MPI_PROC_NULL: none); gets: every remote rank's total items in, folded
 * in rank order at completion over this rank's block of them (mine items
 * at off) into rbuf */
static int nbi_fold(const void *sbuf, void *rbuf, int total, long off, int mine,
		    MPI_Datatype dt, MPI_Op op, bool gets, int to, struct bcs_comm *c,
		    MPI_Comm comm, MPI_Request *req)
{
	int n = c->rsize, rc = MPI_SUCCESS;
	struct red *s = gets ? red_new(n, n, total, dt, op, rbuf) : NULL;
	if (gets && !s)
		return MPI_ERR_INTERN;
	int id = bcs_coll_start(comm, gets ? red_fin : NULL, s);
	for (int i = 0; !rc && i < n; i++) {
		MPI_Request r;
		if (gets) {
			rc = bcs_irecv(s->all + s->span * i, total, dt, i, TAG_COLL, c, true, &r);
			if (!rc)
				bcs_coll_part(id, r);
		}
		if (!rc && (to == -1 || to == i)) {
			rc = bcs_isend(sbuf, total, dt, i, TAG_COLL, c, true, &r);
			if (!rc)
				bcs_coll_part(id, r);
		}
	}
	if (s) { /* whole vectors came; the fold covers this rank's block */
		s->all += bcs_extent(dt) * off;
		s->count = mine;
	}
	bcs_coll_arm(id, rc);
	*req = id;
	return rc;
}

/* Ireduce (root as above), Iallreduce (root -1) and, with counts or
 * bcount, Ireduce_scatter(_block): a group's vectors (the sum of the
 * counts of its own group long) to the other, whose ranks each keep their
 * block of the reduction */
static int nbi_reduce(const void *sbuf, void *rbuf, int count, const int *counts, int bcount,
		      MPI_Datatype dt, MPI_Op op, int root, struct bcs_comm *c, MPI_Comm comm,
		      MPI_Request *req)
{
	if (root != -1 && root_bad(root, c))
		return MPI_ERR_ROOT;
	bool gets = root == -1 || root == MPI_ROOT, sends = root == -1 || root >= 0;
	if ((sends && sbuf == MPI_IN_PLACE) || (gets && rbuf == MPI_IN_PLACE))
		return MPI_ERR_ARG; /* none on an intercommunicator */
	int rc = root == MPI_PROC_NULL ? MPI_SUCCESS : bcs_op_check(op, dt);
	if (rc)
		return rc;
	long off = 0;
	int mine = count;
	if (counts || bcount >= 0) {
		mine = bcs_rs_block(counts, bcount, c->size, c->rank, &off);
		if (mine < 0)
			return -mine;
		count = 0;
		for (int i = 0; i < c->size; i++)
			count += counts ? counts[i] : bcount;
	}
	if (count < 0)
		return MPI_ERR_COUNT;
	return nbi_fold(sbuf, rbuf, count, off, mine, dt, op, gets, sends ? root : MPI_PROC_NULL,
			c, comm, req);
}
