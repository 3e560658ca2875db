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
	COMM(comm, "MPI_Ibarrier");
	return bcs_err(comm, nb_barrier(c, comm, req), "MPI_Ibarrier");
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Ibcast");
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
	free(s->mem);
	s->mem = NULL;
	return rc;
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
	struct red *s = calloc(1, sizeof(*s));
	if (!s)
		return MPI_ERR_INTERN;
	/* the operand is copied at the call, so MPI_IN_PLACE's rbuf may be
	 * overwritten by the result */
	s->mem = bcs_slots(n, count, dt, &s->span, &s->all);
	if (!s->mem) {
		free(s);
		return MPI_ERR_INTERN;
	}
	s->n = n;
	s->count = count;
	s->dt = dt;
	bcs_type_hold(dt); /* the fold at completion may follow MPI_Type_free */
	s->op = op;
	s->rbuf = gets ? rbuf : NULL;
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
	COMM(comm, "MPI_Iallreduce");
	return bcs_err(comm, nb_reduce(sbuf, rbuf, count, dt, op, -1, c, comm, req),
		       "MPI_Iallreduce");
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
		MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Ireduce");
	if (root < 0)
		return bcs_err(comm, MPI_ERR_ROOT, "MPI_Ireduce");
	return bcs_err(comm, nb_reduce(sbuf, rbuf, count, dt, op, root, c, comm, req),
		       "MPI_Ireduce");
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Iallgather");
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
	if (dir == 2 && sbuf == MPI_IN_PLACE)
		return MPI_ERR_ARG; /* outside the subset for the non-blocking form */
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
	COMM(comm, "MPI_Igather");
	return bcs_err(comm, nb_route(sbuf, scount, stype, rbuf, rcount, rtype, root, 0, c, comm,
				      req), "MPI_Igather");
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Iscatter");
	return bcs_err(comm, nb_route(sbuf, scount, stype, rbuf, rcount, rtype, root, 1, c, comm,
				      req), "MPI_Iscatter");
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Ialltoall");
	return bcs_err(comm, nb_route(sbuf, scount, stype, rbuf, rcount, rtype, 0, 2, c, comm,
				      req), "MPI_Ialltoall");
}
