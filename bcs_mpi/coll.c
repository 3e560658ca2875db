/* BCS-MPI collectives over the library's point to point, on each
 * communicator's collective context. Under BCS a message costs a timeslice
 * whatever its peer count, so the algorithms are flat: every message of a
 * phase is posted at once and the phase takes one matching round (a tree
 * would take log2(P) rounds). Reductions fold in rank order, so every rank
 * computes the same bits, and non-commutative user ops are honoured. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bcs.h"
#include "chan.h"
#include "trace.h"

static MPI_Request *reqs(int n)
{
	MPI_Request *r = calloc((size_t)(n ? n : 1), sizeof(*r));
	return r;
}

/* Copies count items of stype at s into rcount items of rtype at r. */
static int copy_typed(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
		      MPI_Datatype rtype)
{
	/* held: a non-blocking reduction copies at completion, perhaps after
	 * MPI_Type_free (the call itself checked the types) */
	struct bcs_type *st = bcs_type_held(stype), *rt = bcs_type_held(rtype);
	if (!st || !rt)
		return MPI_ERR_TYPE;
	long sb = (long)scount * st->size, rb = (long)rcount * rt->size;
	if (sb > rb)
		return MPI_ERR_TRUNCATE;
	char *tmp = malloc((size_t)sb + 1);
	if (!tmp)
		return MPI_ERR_INTERN;
	bcs_pack(st, s, scount, tmp);
	bcs_unpack(rt, tmp, sb, r);
	free(tmp);
	return MPI_SUCCESS;
}

long bcs_extent(MPI_Datatype dt)
{
	struct bcs_type *t = bcs_type_get(dt);
	return t ? t->extent : 0;
}

int bcs_copy_typed(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
		   MPI_Datatype rtype)
{
	return copy_typed(s, scount, stype, r, rcount, rtype);
}

/* Slots span both the bytes count items really touch (true bounds: types
 * with a lower bound or a shrunk extent fit) and count whole extents (a
 * user op may copy whole C structs, padding included). */
void *bcs_slots(int n, int count, MPI_Datatype dt, long *stride, char **first)
{
	struct bcs_type *t = bcs_type_get(dt);
	long span = 0, lo = 0;
	if (t && count > 0) {
		long ext = t->extent, last = (long)(count - 1) * ext;
		long a = t->true_lb < t->lb ? t->true_lb : t->lb;
		long b = t->true_ub > t->lb + ext ? t->true_ub : t->lb + ext;
		lo = last < 0 ? a + last : a;
		span = (last < 0 ? b : b + last) - lo;
	}
	char *m = malloc((size_t)(span * n) + 1);
	*stride = span;
	*first = m ? m - lo : NULL;
	return m;
}

/* the trace's numbering of calls (trace.h): a collective, its root and size */
static void trace_coll(int kind, int root, int count, MPI_Datatype dt)
{
	struct bcs_type *t = bcs_type_get(dt);
	uint64_t bytes = t && count > 0 && t->size > 0 ? (uint64_t)count * (uint64_t)t->size : 0;
	bcs_trace_call(kind, root, -1, bytes);
}

int MPI_Barrier(MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Barrier");
	trace_coll(BCS_C_BARRIER, BCS_PEER_NONE, 0, MPI_DATATYPE_NULL);
	if (c->rworld)
		return bcs_inter_barrier(c, comm);
	if (c->size == 1)
		return MPI_SUCCESS;
	if (comm == MPI_COMM_WORLD)
		return bcs_err(comm, bcs_world_barrier(), "MPI_Barrier");
	int n = c->size, rc;
	MPI_Request *r = reqs(n);
	if (!r)
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Barrier");
	if (c->rank == 0) {
		for (int i = 1; i < n; i++)
			bcs_irecv(NULL, 0, MPI_BYTE, i, TAG_COLL, c, true, &r[i]);
		rc = bcs_waitall(n, r);
		for (int i = 1; !rc && i < n; i++)
			bcs_isend(NULL, 0, MPI_BYTE, i, TAG_COLL, c, true, &r[i]);
		if (!rc)
			rc = bcs_waitall(n, r);
	} else {
		rc = bcs_isend(NULL, 0, MPI_BYTE, 0, TAG_COLL, c, true, &r[0]);
		if (!rc)
			rc = bcs_irecv(NULL, 0, MPI_BYTE, 0, TAG_COLL, c, true, &r[1]);
		if (!rc)
			rc = bcs_waitall(2, r);
	}
	free(r);
	return bcs_err(comm, rc, "MPI_Barrier");
}

static int bcast(void *buf, int count, MPI_Datatype dt, int root, struct bcs_comm *c)
{
	int n = c->size, rc = MPI_SUCCESS;
	if (root < 0 || root >= n)
		return MPI_ERR_ROOT;
	if (n == 1)
		return MPI_SUCCESS;
	MPI_Request *r = reqs(n);
	if (!r)
		return MPI_ERR_INTERN;
	if (c->rank == root) {
		for (int i = 0; !rc && i < n; i++)
			if (i != root)
				rc = bcs_isend(buf, count, dt, i, TAG_COLL, c, true, &r[i]);
	} else {
		rc = bcs_irecv(buf, count, dt, root, TAG_COLL, c, true, &r[0]);
	}
	int w = bcs_waitall(n, r);
	free(r);
	return rc ? rc : w;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Bcast");
	trace_coll(BCS_C_BCAST, root, count, dt);
	if (c->rworld)
		return bcs_inter_bcast(buf, count, dt, root, c, comm);
	return bcs_err(comm, bcast(buf, count, dt, root, c), "MPI_Bcast");
}

/* Folds slots lo..hi-1 in rank order into the last: x(lo) op (... op
 * x(hi-1)), the order every reduction here uses, so all agree bit for bit. */
static int fold(MPI_Op op, MPI_Datatype dt, int count, char *all, long span, int lo, int hi)
{
	int rc = MPI_SUCCESS;
	for (int i = hi - 2; !rc && i >= lo; i--)
		rc = bcs_reduce_local(op, dt, count, all + span * i, all + span * (hi - 1));
	return rc;
}

int bcs_fold(MPI_Op op, MPI_Datatype dt, int count, char *all, long span, int lo, int hi)
{
	return fold(op, dt, count, all, span, lo, hi);
}

/* Every rank's count items to the root, folded in rank order: res = x0 op
 * ... op x(n-1) where each user call computes inout = in op inout. */
static int reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		  int root, struct bcs_comm *c)
{
	int n = c->size, rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	if (count < 0)
		return MPI_ERR_COUNT;
	if (root < 0 || root >= n)
		return MPI_ERR_ROOT;
	long span;
	if (c->rank != root) {
		MPI_Request r;
		/* MPI_Allreduce's MPI_IN_PLACE holds on every rank */
		rc = bcs_isend(sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, dt, root, TAG_COLL, c, true,
			       &r);
		return rc ? rc : bcs_waitall(1, &r);
	}
	const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
	char *all;
	void *mem = bcs_slots(n, count, dt, &span, &all);
	MPI_Request *r = reqs(n);
	if (!mem || !r) {
		free(mem);
		free(r);
		return MPI_ERR_INTERN;
	}
	for (int i = 0; !rc && i < n; i++)
		if (i != root)
			rc = bcs_irecv(all + span * i, count, dt, i, TAG_COLL, c, true, &r[i]);
	if (!rc)
		rc = bcs_waitall(n, r);
	if (!rc)
		rc = copy_typed(mine, count, dt, all + span * root, count, dt);
	if (!rc)
		rc = fold(op, dt, count, all, span, 0, n);
	if (!rc)
		rc = copy_typed(all + span * (n - 1), count, dt, rbuf, count, dt);
	free(mem);
	free(r);
	return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
	       MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Reduce");
	trace_coll(BCS_C_REDUCE, root, count, dt);
	if (c->rworld)
		return bcs_inter_reduce(sbuf, rbuf, count, dt, op, root, c, comm);
	return bcs_err(comm, reduce(sbuf, rbuf, count, dt, op, root, c), "MPI_Reduce");
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		  MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Allreduce");
	trace_coll(BCS_C_ALLREDUCE, BCS_PEER_NONE, count, dt);
	if (c->rworld)
		return bcs_inter_allreduce(sbuf, rbuf, count, dt, op, c, comm);
	struct bcs_type *t = bcs_type_get(dt);
	/* small values of a predefined type on MPI_COMM_WORLD: by the daemons */
	if (comm == MPI_COMM_WORLD && c->size > 1 && t && t->predefined && count > 0 &&
	    (long)count * t->size <= BCS_RED_MAX && op >= MPI_MAX && op <= MPI_MINLOC &&
	    bcs_op_valid(op, t->basic))
		return bcs_err(comm, bcs_world_allreduce(sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf,
							 count, t, op), "MPI_Allreduce");
	int rc = reduce(sbuf, rbuf, count, dt, op, 0, c);
	if (!rc)
		rc = bcast(rbuf, count, dt, 0, c);
	return bcs_err(comm, rc, "MPI_Allreduce");
}

/* inclusive (x0 op ... op x(me)) or exclusive (... op x(me - 1); rank 0's
 * result is left alone) prefix reduction, in one round */
static int scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		struct bcs_comm *c, bool exclusive)
{
	int n = c->size, me = c->rank, rc = MPI_SUCCESS;
	long span;
	char *all;
	const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
	void *mem = bcs_slots(me + 1, count, dt, &span, &all);
	MPI_Request *r = reqs(2 * n);
	if (!mem || !r) {
		free(mem);
		free(r);
		return MPI_ERR_INTERN;
	}
	/* each rank's contribution to every higher rank */
	for (int i = me + 1; !rc && i < n; i++)
		rc = bcs_isend(mine, count, dt, i, TAG_COLL, c, true, &r[n + i]);
	for (int i = 0; !rc && i < me; i++)
		rc = bcs_irecv(all + span * i, count, dt, i, TAG_COLL, c, true, &r[i]);
	int w = bcs_waitall(2 * n, r);
	if (!rc)
		rc = w;
	int top = exclusive ? me : me + 1;
	if (!rc && !exclusive)
		rc = copy_typed(mine, count, dt, all + span * me, count, dt);
	if (!rc && top > 0)
		rc = fold(op, dt, count, all, span, 0, top);
	if (!rc && top > 0)
		rc = copy_typed(all + span * (top - 1), count, dt, rbuf, count, dt);
	free(mem);
	free(r);
	return rc;
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	COMM(comm, "MPI_Scan");
	int rc = bcs_op_check(op, dt);
	if (!rc && count < 0)
		rc = MPI_ERR_COUNT;
	if (rc)
		return bcs_err(comm, rc, "MPI_Scan");
	return bcs_err(comm, scan(sbuf, rbuf, count, dt, op, c, false), "MPI_Scan");
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
	       MPI_Comm comm)
{
	COMM(comm, "MPI_Exscan");
	int rc = bcs_op_check(op, dt);
	if (!rc && count < 0)
		rc = MPI_ERR_COUNT;
	if (rc)
		return bcs_err(comm, rc, "MPI_Exscan");
	return bcs_err(comm, scan(sbuf, rbuf, count, dt, op, c, true), "MPI_Exscan");
}

/* gather(v): counts/displs NULL for the regular form */
static int gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		   const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
		   struct bcs_comm *c)
{
	int n = c->size, rc = MPI_SUCCESS;
	if (root < 0 || root >= n)
		return MPI_ERR_ROOT;
	if (c->rank != root) {
		MPI_Request r;
		rc = bcs_isend(sbuf, scount, stype, root, TAG_COLL, c, true, &r);
		return rc ? rc : bcs_waitall(1, &r);
	}
	long ext = bcs_extent(rtype);
	MPI_Request *r = reqs(n);
	if (!r)
		return MPI_ERR_INTERN;
	for (int i = 0; !rc && i < n; i++) {
		int cnt = rcounts ? rcounts[i] : rcount;
		char *at = (char *)rbuf + ext * (displs ? (long)displs[i] : (long)i * rcount);
		if (i == root) {
			if (sbuf != MPI_IN_PLACE)
				rc = copy_typed(sbuf, scount, stype, at, cnt, rtype);
		} else {
			rc = bcs_irecv(at, cnt, rtype, i, TAG_COLL, c, true, &r[i]);
		}
	}
	int w = bcs_waitall(n, r);
	free(r);
	return rc ? rc : w;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
	       MPI_Datatype rtype, int root, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Gather");
	trace_coll(BCS_C_GATHER, root, scount, stype);
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_GATHER, sbuf, scount, NULL, NULL, stype, rbuf,
				      rcount, NULL, NULL, rtype, root, c, comm, "MPI_Gather");
	return bcs_err(comm, gatherv(sbuf, scount, stype, rbuf, rcount, NULL, NULL, rtype, root, c),
		       "MPI_Gather");
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
		MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Gatherv");
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_GATHER, sbuf, scount, NULL, NULL, stype, rbuf, 0,
				      rcounts, displs, rtype, root, c, comm, "MPI_Gatherv");
	return bcs_err(comm, gatherv(sbuf, scount, stype, rbuf, 0, rcounts, displs, rtype, root, c),
		       "MPI_Gatherv");
}

static int scatterv(const void *sbuf, int scount, const int *scounts, const int *displs,
		    MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
		    struct bcs_comm *c)
{
	int n = c->size, rc = MPI_SUCCESS;
	if (root < 0 || root >= n)
		return MPI_ERR_ROOT;
	if (c->rank != root) {
		MPI_Request r;
		rc = bcs_irecv(rbuf, rcount, rtype, root, TAG_COLL, c, true, &r);
		return rc ? rc : bcs_waitall(1, &r);
	}
	long ext = bcs_extent(stype);
	MPI_Request *r = reqs(n);
	if (!r)
		return MPI_ERR_INTERN;
	for (int i = 0; !rc && i < n; i++) {
		int cnt = scounts ? scounts[i] : scount;
		const char *at = (const char *)sbuf +
				 ext * (displs ? (long)displs[i] : (long)i * scount);
		if (i == root) {
			if (rbuf != MPI_IN_PLACE)
				rc = copy_typed(at, cnt, stype, rbuf, rcount, rtype);
		} else {
			rc = bcs_isend(at, cnt, stype, i, TAG_COLL, c, true, &r[i]);
		}
	}
	int w = bcs_waitall(n, r);
	free(r);
	return rc ? rc : w;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		MPI_Datatype rtype, int root, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Scatter");
	trace_coll(BCS_C_SCATTER, root, rcount, rtype);
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_SCATTER, sbuf, scount, NULL, NULL, stype, rbuf,
				      rcount, NULL, NULL, rtype, root, c, comm, "MPI_Scatter");
	return bcs_err(comm, scatterv(sbuf, scount, NULL, NULL, stype, rbuf, rcount, rtype, root, c),
		       "MPI_Scatter");
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
		 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Scatterv");
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_SCATTER, sbuf, 0, scounts, displs, stype, rbuf,
				      rcount, NULL, NULL, rtype, root, c, comm, "MPI_Scatterv");
	return bcs_err(comm, scatterv(sbuf, 0, scounts, displs, stype, rbuf, rcount, rtype, root, c),
		       "MPI_Scatterv");
}

/* Every rank's block to every other rank, in one round. */
static int allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		      const int *rcounts, const int *displs, MPI_Datatype rtype,
		      struct bcs_comm *c)
{
	int n = c->size, me = c->rank, rc = MPI_SUCCESS;
	long ext = bcs_extent(rtype);
	char *mine_at = (char *)rbuf + ext * (displs ? (long)displs[me] : (long)me * rcount);
	int mycnt = rcounts ? rcounts[me] : rcount;
	const void *src = sbuf;
	int cnt = scount;
	MPI_Datatype type = stype;
	if (sbuf == MPI_IN_PLACE) {
		src = mine_at;
		cnt = mycnt;
		type = rtype;
	} else {
		rc = copy_typed(sbuf, scount, stype, mine_at, mycnt, rtype);
	}
	MPI_Request *r = reqs(2 * n);
	if (!r)
		return MPI_ERR_INTERN;
	for (int i = 0; !rc && i < n; i++) {
		if (i == me)
			continue;
		char *at = (char *)rbuf + ext * (displs ? (long)displs[i] : (long)i * rcount);
		rc = bcs_irecv(at, rcounts ? rcounts[i] : rcount, rtype, i, TAG_COLL, c, true,
			       &r[i]);
		if (!rc)
			rc = bcs_isend(src, cnt, type, i, TAG_COLL, c, true, &r[n + i]);
	}
	int w = bcs_waitall(2 * n, r);
	free(r);
	return rc ? rc : w;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		  MPI_Datatype rtype, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Allgather");
	trace_coll(BCS_C_ALLGATHER, BCS_PEER_NONE, scount, stype);
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_ALLGATHER, sbuf, scount, NULL, NULL, stype, rbuf,
				      rcount, NULL, NULL, rtype, 0, c, comm, "MPI_Allgather");
	return bcs_err(comm, allgatherv(sbuf, scount, stype, rbuf, rcount, NULL, NULL, rtype, c),
		       "MPI_Allgather");
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Allgatherv");
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_ALLGATHER, sbuf, scount, NULL, NULL, stype, rbuf,
				      0, rcounts, displs, rtype, 0, c, comm, "MPI_Allgatherv");
	return bcs_err(comm, allgatherv(sbuf, scount, stype, rbuf, 0, rcounts, displs, rtype, c),
		       "MPI_Allgatherv");
}

int bcs_allgather_ints(struct bcs_comm *c, const int *mine, int k, int *all)
{
	return allgatherv(mine, k, MPI_INT, all, k, NULL, NULL, MPI_INT, c);
}

static int alltoallv(const void *sbuf, int scount, const int *scounts, const int *sdispls,
		     MPI_Datatype stype, void *rbuf, int rcount, const int *rcounts,
		     const int *rdispls, MPI_Datatype rtype, struct bcs_comm *c)
{
	int n = c->size, rc = MPI_SUCCESS;
	void *copy = NULL;
	if (sbuf == MPI_IN_PLACE) {
		/* send from a copy of what the receives will overwrite */
		long hi = 0, ext = bcs_extent(rtype);
		for (int i = 0; i < n; i++) {
			long end = ext * ((rdispls ? (long)rdispls[i] : (long)i * rcount) +
					  (rcounts ? rcounts[i] : rcount));
			if (end > hi)
				hi = end;
		}
		if (!(copy = malloc((size_t)hi + 1)))
			return MPI_ERR_INTERN;
		memcpy(copy, rbuf, (size_t)hi);
		sbuf = copy;
		scount = rcount;
		scounts = rcounts;
		sdispls = rdispls;
		stype = rtype;
	}
	long sext = bcs_extent(stype), rext = bcs_extent(rtype);
	MPI_Request *r = reqs(2 * n);
	if (!r) {
		free(copy);
		return MPI_ERR_INTERN;
	}
	for (int i = 0; !rc && i < n; i++) {
		const char *s = (const char *)sbuf +
				sext * (sdispls ? (long)sdispls[i] : (long)i * scount);
		char *d = (char *)rbuf + rext * (rdispls ? (long)rdispls[i] : (long)i * rcount);
		int sc = scounts ? scounts[i] : scount, rcnt = rcounts ? rcounts[i] : rcount;
		if (i == c->rank) {
			rc = copy_typed(s, sc, stype, d, rcnt, rtype);
			continue;
		}
		rc = bcs_irecv(d, rcnt, rtype, i, TAG_COLL, c, true, &r[i]);
		if (!rc)
			rc = bcs_isend(s, sc, stype, i, TAG_COLL, c, true, &r[n + i]);
	}
	int w = bcs_waitall(2 * n, r);
	free(r);
	free(copy);
	return rc ? rc : w;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Alltoall");
	trace_coll(BCS_C_ALLTOALL, BCS_PEER_NONE, scount, stype);
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_ALLTOALL, sbuf, scount, NULL, NULL, stype, rbuf,
				      rcount, NULL, NULL, rtype, 0, c, comm, "MPI_Alltoall");
	return bcs_err(comm, alltoallv(sbuf, scount, NULL, NULL, stype, rbuf, rcount, NULL, NULL,
				       rtype, c), "MPI_Alltoall");
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
		  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
		  MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Alltoallv");
	if (c->rworld)
		return bcs_inter_flat(BCS_INTER_ALLTOALL, sbuf, 0, scounts, sdispls, stype, rbuf,
				      0, rcounts, rdispls, rtype, 0, c, comm, "MPI_Alltoallv");
	return bcs_err(comm, alltoallv(sbuf, 0, scounts, sdispls, stype, rbuf, 0, rcounts, rdispls,
				       rtype, c), "MPI_Alltoallv");
}

int bcs_rs_block(const int *counts, int bcount, int n, int me, long *myoff)
{
	long off = 0;
	*myoff = 0;
	for (int i = 0; i < n; i++) {
		int k = counts ? counts[i] : bcount;
		if (k < 0)
			return -MPI_ERR_COUNT;
		if (i == me)
			*myoff = off;
		off += k;
	}
	return counts ? counts[me] : bcount;
}

/* Rank j's block of the reduction to rank j, in one round: every rank sends
 * block j to rank j, which folds the n of them in rank order. */
static int reduce_scatter(const void *sbuf, void *rbuf, const int *counts, int bcount,
			  MPI_Datatype dt, MPI_Op op, struct bcs_comm *c)
{
	int n = c->size, me = c->rank, rc = bcs_op_check(op, dt);
	if (rc)
		return rc;
	long ext = bcs_extent(dt), off, myoff;
	int mycount = bcs_rs_block(counts, bcount, n, me, &myoff);
	if (mycount < 0)
		return -mycount;
	const char *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
	long span;
	char *all;
	void *mem = bcs_slots(n, mycount, dt, &span, &all);
	MPI_Request *r = reqs(2 * n);
	if (!mem || !r) {
		free(mem);
		free(r);
		return MPI_ERR_INTERN;
	}
	off = 0;
	for (int i = 0; !rc && i < n; i++) {
		int k = counts ? counts[i] : bcount;
		if (i != me) {
			rc = bcs_isend(src + ext * off, k, dt, i, TAG_COLL, c, true, &r[n + i]);
			if (!rc)
				rc = bcs_irecv(all + span * i, mycount, dt, i, TAG_COLL, c, true, &r[i]);
		}
		off += k;
	}
	int w = bcs_waitall(2 * n, r);
	if (!rc)
		rc = w;
	if (!rc)
		rc = copy_typed(src + ext * myoff, mycount, dt, all + span * me, mycount, dt);
	if (!rc)
		rc = fold(op, dt, mycount, all, span, 0, n);
	if (!rc)
		rc = copy_typed(all + span * (n - 1), mycount, dt, rbuf, mycount, dt);
	free(mem);
	free(r);
	return rc;
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
			     MPI_Op op, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Reduce_scatter_block");
	if (c->rworld)
		return bcs_inter_reduce_scatter(sbuf, rbuf, NULL, count, dt, op, c, comm,
						"MPI_Reduce_scatter_block");
	return bcs_err(comm, reduce_scatter(sbuf, rbuf, NULL, count, dt, op, c),
		       "MPI_Reduce_scatter_block");
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int counts[], MPI_Datatype dt,
		       MPI_Op op, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Reduce_scatter");
	if (c->rworld)
		return bcs_inter_reduce_scatter(sbuf, rbuf, counts, 0, dt, op, c, comm,
						"MPI_Reduce_scatter");
	return bcs_err(comm, reduce_scatter(sbuf, rbuf, counts, 0, dt, op, c),
		       "MPI_Reduce_scatter");
}
