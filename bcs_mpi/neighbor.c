/* BCS-MPI neighborhood collectives (MPI-3.1 §7.6) on Cartesian, graph and
 * distributed graph communicators: one round of point-to-point messages on
 * the collective context, block k of the send side to out-neighbour k and
 * block k of the receive side from in-neighbour k, all posted at the call
 * (MPI_PROC_NULL neighbours leave their block alone). Sends go out in the
 * order of the destinations and receives are posted in the order of the
 * sources (Cartesian: each dimension's pair swapped), so a peer named
 * twice pairs its messages in that order. The blocking forms wait for the same
 * round; the request completes through MPI_Wait/Test like any other. */
#include <stdlib.h>

#include "bcs.h"

/* a block: count items of dt at at */
struct nblk {
	const char *at;
	int count;
	MPI_Datatype dt;
};

/* a neighbourhood's blocks in flight: what comes from in[k], what goes to
 * out[k] */
struct hood {
	int *in, *out;
	int nin, nout;
	struct nblk *rcv, *snd;
};

static void hood_free(struct hood *h)
{
	free(h->in);
	free(h->out);
	free(h->rcv);
	free(h->snd);
}

static int hood_get(struct bcs_comm *c, struct hood *h)
{
	*h = (struct hood){0};
	int rc = bcs_topo_neighbors(c, &h->in, &h->nin, &h->out, &h->nout);
	if (rc)
		return rc;
	h->rcv = calloc((size_t)(h->nin ? h->nin : 1), sizeof(*h->rcv));
	h->snd = calloc((size_t)(h->nout ? h->nout : 1), sizeof(*h->snd));
	if (!h->rcv || !h->snd) {
		hood_free(h);
		return MPI_ERR_INTERN;
	}
	return MPI_SUCCESS;
}

static int blk_check(const struct nblk *b, int n)
{
	for (int k = 0; k < n; k++)
		if (b[k].count < 0)
			return MPI_ERR_COUNT;
		else if (!bcs_type_get(b[k].dt))
			return MPI_ERR_TYPE;
	return MPI_SUCCESS;
}

/* posts the round h describes; frees h */
static int hood_post(struct hood *h, struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	int rc = blk_check(h->rcv, h->nin);
	if (!rc)
		rc = blk_check(h->snd, h->nout);
	if (rc) {
		hood_free(h);
		return rc;
	}
	/* Cartesian: a dimension's two receives posted destination first, so
	 * that a peer both sides of a periodic dimension of size 1 or 2 pairs
	 * what it sent toward negative with what comes from the positive side
	 * (MPI-4.0 §7.6; MPICH's ring_neighbor_alltoall checks it) */
	int flip = c->topo && c->topo->kind == MPI_CART;
	int id = bcs_coll_start(comm, NULL, NULL);
	for (int i = 0; !rc && i < h->nin; i++) {
		MPI_Request q;
		int k = flip ? i ^ 1 : i;
		if (h->in[k] == MPI_PROC_NULL)
			continue;
		rc = bcs_irecv((void *)h->rcv[k].at, h->rcv[k].count, h->rcv[k].dt, h->in[k],
			       TAG_COLL, c, true, &q);
		if (!rc)
			bcs_coll_part(id, q);
	}
	for (int k = 0; !rc && k < h->nout; k++) {
		MPI_Request q;
		if (h->out[k] == MPI_PROC_NULL)
			continue;
		rc = bcs_isend(h->snd[k].at, h->snd[k].count, h->snd[k].dt, h->out[k], TAG_COLL, c,
			       true, &q);
		if (!rc)
			bcs_coll_part(id, q);
	}
	bcs_coll_arm(id, rc);
	*req = id;
	hood_free(h);
	return rc;
}

/* the blocking form of a posted round */
static int wait_round(int rc, MPI_Request *r)
{
	int w = *r != MPI_REQUEST_NULL ? bcs_waitall(1, r) : MPI_SUCCESS;
	return rc ? rc : w;
}

/* sdispls/rdispls NULL: blocks back to back (counts[0] items each);
 * bytes: displacements in bytes (alltoallw), else in extents of the type;
 * one send block for all (allgather) when scounts is NULL */
struct shape {
	const void *sbuf;
	const int *scounts;
	const void *sdispls;
	const MPI_Datatype *stypes;
	void *rbuf;
	const int *rcounts;
	const void *rdispls;
	const MPI_Datatype *rtypes;
	int scount, rcount;
	bool w, same_send;
};

static long disp(const struct shape *s, const void *displs, int k, MPI_Datatype dt, int count)
{
	if (!displs)
		return bcs_extent(dt) * (long)k * count;
	if (s->w)
		return (long)((const MPI_Aint *)displs)[k];
	return bcs_extent(dt) * ((const int *)displs)[k];
}

static int neighbor(const struct shape *s, struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	struct hood h;
	if (s->sbuf == MPI_IN_PLACE || s->rbuf == MPI_IN_PLACE)
		return MPI_ERR_BUFFER; /* MPI has no in-place neighborhood collective */
	int rc = hood_get(c, &h);
	if (rc)
		return rc;
	for (int k = 0; k < h.nin; k++) {
		MPI_Datatype dt = s->rtypes[s->w ? k : 0];
		int n = s->rcounts ? s->rcounts[k] : s->rcount;
		h.rcv[k] = (struct nblk){(char *)s->rbuf + disp(s, s->rdispls, k, dt, n), n, dt};
	}
	for (int k = 0; k < h.nout; k++) {
		MPI_Datatype dt = s->stypes[s->w ? k : 0];
		int n = s->scounts ? s->scounts[k] : s->scount;
		long at = s->same_send ? 0 : disp(s, s->sdispls, k, dt, n);
		h.snd[k] = (struct nblk){(const char *)s->sbuf + at, n, dt};
	}
	return hood_post(&h, c, comm, req);
}

static int allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		     const int *rcounts, int rcount, const int *displs, MPI_Datatype rtype,
		     struct bcs_comm *c, MPI_Comm comm, MPI_Request *req)
{
	struct shape s = {.sbuf = sbuf, .scount = scount, .stypes = &stype, .rbuf = rbuf,
			  .rcounts = rcounts, .rcount = rcount, .rdispls = displs,
			  .rtypes = &rtype, .same_send = true};
	return neighbor(&s, c, comm, req);
}

static int alltoall(const void *sbuf, const int *scounts, int scount, const void *sdispls,
		    const MPI_Datatype *stypes, void *rbuf, const int *rcounts, int rcount,
		    const void *rdispls, const MPI_Datatype *rtypes, bool w, struct bcs_comm *c,
		    MPI_Comm comm, MPI_Request *req)
{
	struct shape s = {.sbuf = sbuf, .scounts = scounts, .scount = scount,
			  .sdispls = sdispls, .stypes = stypes, .rbuf = rbuf,
			  .rcounts = rcounts, .rcount = rcount, .rdispls = rdispls,
			  .rtypes = rtypes, .w = w};
	return neighbor(&s, c, comm, req);
}

int MPI_Ineighbor_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			    int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Ineighbor_allgather");
	return bcs_err(comm, allgather(sbuf, scount, stype, rbuf, NULL, rcount, NULL, rtype, c,
				       comm, req), "MPI_Ineighbor_allgather");
}

int MPI_Neighbor_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			   int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	COMM(comm, "MPI_Neighbor_allgather");
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = allgather(sbuf, scount, stype, rbuf, NULL, rcount, NULL, rtype, c, comm, &r);
	return bcs_err(comm, wait_round(rc, &r), "MPI_Neighbor_allgather");
}

int MPI_Ineighbor_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			     const int rcounts[], const int displs[], MPI_Datatype rtype,
			     MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Ineighbor_allgatherv");
	return bcs_err(comm, allgather(sbuf, scount, stype, rbuf, rcounts, 0, displs, rtype, c,
				       comm, req), "MPI_Ineighbor_allgatherv");
}

int MPI_Neighbor_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			    const int rcounts[], const int displs[], MPI_Datatype rtype,
			    MPI_Comm comm)
{
	COMM(comm, "MPI_Neighbor_allgatherv");
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = allgather(sbuf, scount, stype, rbuf, rcounts, 0, displs, rtype, c, comm, &r);
	return bcs_err(comm, wait_round(rc, &r), "MPI_Neighbor_allgatherv");
}

int MPI_Ineighbor_alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			   int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	COMM(comm, "MPI_Ineighbor_alltoall");
	return bcs_err(comm, alltoall(sbuf, NULL, scount, NULL, &stype, rbuf, NULL, rcount, NULL,
				      &rtype, false, c, comm, req), "MPI_Ineighbor_alltoall");
}

int MPI_Neighbor_alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			  int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	COMM(comm, "MPI_Neighbor_alltoall");
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = alltoall(sbuf, NULL, scount, NULL, &stype, rbuf, NULL, rcount, NULL, &rtype,
			  false, c, comm, &r);
	return bcs_err(comm, wait_round(rc, &r), "MPI_Neighbor_alltoall");
}

int MPI_Ineighbor_alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
			    MPI_Datatype stype, void *rbuf, const int rcounts[],
			    const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
			    MPI_Request *req)
{
	COMM(comm, "MPI_Ineighbor_alltoallv");
	return bcs_err(comm, alltoall(sbuf, scounts, 0, sdispls, &stype, rbuf, rcounts, 0,
				      rdispls, &rtype, false, c, comm, req),
		       "MPI_Ineighbor_alltoallv");
}

int MPI_Neighbor_alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
			   MPI_Datatype stype, void *rbuf, const int rcounts[],
			   const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
	COMM(comm, "MPI_Neighbor_alltoallv");
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = alltoall(sbuf, scounts, 0, sdispls, &stype, rbuf, rcounts, 0, rdispls, &rtype,
			  false, c, comm, &r);
	return bcs_err(comm, wait_round(rc, &r), "MPI_Neighbor_alltoallv");
}

int MPI_Ineighbor_alltoallw(const void *sbuf, const int scounts[], const MPI_Aint sdispls[],
			    const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
			    const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
			    MPI_Request *req)
{
	COMM(comm, "MPI_Ineighbor_alltoallw");
	return bcs_err(comm, alltoall(sbuf, scounts, 0, sdispls, stypes, rbuf, rcounts, 0,
				      rdispls, rtypes, true, c, comm, req),
		       "MPI_Ineighbor_alltoallw");
}

int MPI_Neighbor_alltoallw(const void *sbuf, const int scounts[], const MPI_Aint sdispls[],
			   const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
			   const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
{
	COMM(comm, "MPI_Neighbor_alltoallw");
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = alltoall(sbuf, scounts, 0, sdispls, stypes, rbuf, rcounts, 0, rdispls, rtypes,
			  true, c, comm, &r);
	return bcs_err(comm, wait_round(rc, &r), "MPI_Neighbor_alltoallw");
}
