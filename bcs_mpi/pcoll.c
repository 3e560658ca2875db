/* BCS-MPI persistent collectives (MPI-4.0): the call's arguments are kept
 * at its _init, and each MPI_Start runs the non-blocking form on them,
 * whose request takes the persistent request's handle (mpi.c). So every
 * start is the non-blocking collective's one round of messages posted at
 * once, its reductions folded in rank order: the same bits every start.
 * The arguments are checked at each start, as the non-blocking call checks
 * them; buffers, count and displacement arrays and datatypes are the
 * program's until it frees the request. The info argument is ignored. */
#include <stdlib.h>

#include "bcs.h"

enum pkind {
	P_BARRIER, P_BCAST, P_REDUCE, P_ALLREDUCE, P_GATHER, P_GATHERV, P_SCATTER, P_SCATTERV,
	P_ALLGATHER, P_ALLGATHERV, P_ALLTOALL, P_ALLTOALLV, P_ALLTOALLW, P_RS, P_RSB, P_SCAN,
	P_EXSCAN, P_NB_ALLGATHER, P_NB_ALLGATHERV, P_NB_ALLTOALL, P_NB_ALLTOALLV, P_NB_ALLTOALLW
};

/* one call's arguments: s* the send side, r* the receive side (a one-
 * buffer call's buffer, count and type are r*) */
struct pargs {
	enum pkind kind;
	const void *sbuf;
	void *rbuf;
	int scount, rcount, root;
	const int *scounts, *sdispls, *rcounts, *rdispls;
	const MPI_Aint *sbdispls, *rbdispls; /* byte displacements (neighbor w) */
	MPI_Datatype stype, rtype;
	const MPI_Datatype *stypes, *rtypes;
	MPI_Op op;
	MPI_Comm comm;
};

static int pstart_rooted(const struct pargs *a, MPI_Request *q)
{
	switch (a->kind) {
	case P_BCAST:
		return MPI_Ibcast(a->rbuf, a->rcount, a->rtype, a->root, a->comm, q);
	case P_REDUCE:
		return MPI_Ireduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->root, a->comm, q);
	case P_GATHER:
		return MPI_Igather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
				   a->root, a->comm, q);
	case P_GATHERV:
		return MPI_Igatherv(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts, a->rdispls,
				    a->rtype, a->root, a->comm, q);
	case P_SCATTER:
		return MPI_Iscatter(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
				    a->root, a->comm, q);
	default: /* P_SCATTERV */
		return MPI_Iscatterv(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf, a->rcount,
				     a->rtype, a->root, a->comm, q);
	}
}

static int pstart_all(const struct pargs *a, MPI_Request *q)
{
	switch (a->kind) {
	case P_BARRIER:
		return MPI_Ibarrier(a->comm, q);
	case P_ALLREDUCE:
		return MPI_Iallreduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm, q);
	case P_ALLGATHER:
		return MPI_Iallgather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
				      a->comm, q);
	case P_ALLGATHERV:
		return MPI_Iallgatherv(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts,
				       a->rdispls, a->rtype, a->comm, q);
	case P_ALLTOALL:
		return MPI_Ialltoall(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
				     a->comm, q);
	case P_ALLTOALLV:
		return MPI_Ialltoallv(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf,
				      a->rcounts, a->rdispls, a->rtype, a->comm, q);
	case P_ALLTOALLW:
		return MPI_Ialltoallw(a->sbuf, a->scounts, a->sdispls, a->stypes, a->rbuf,
				      a->rcounts, a->rdispls, a->rtypes, a->comm, q);
	case P_RS:
		return MPI_Ireduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rtype, a->op, a->comm,
					   q);
	case P_RSB:
		return MPI_Ireduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op,
						 a->comm, q);
	case P_SCAN:
		return MPI_Iscan(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm, q);
	default: /* P_EXSCAN */
		return MPI_Iexscan(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm, q);
	}
}

static int pstart_neighbor(const struct pargs *a, MPI_Request *q)
{
	switch (a->kind) {
	case P_NB_ALLGATHER:
		return MPI_Ineighbor_allgather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount,
					       a->rtype, a->comm, q);
	case P_NB_ALLGATHERV:
		return MPI_Ineighbor_allgatherv(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts,
						a->rdispls, a->rtype, a->comm, q);
	case P_NB_ALLTOALL:
		return MPI_Ineighbor_alltoall(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount,
					      a->rtype, a->comm, q);
	case P_NB_ALLTOALLV:
		return MPI_Ineighbor_alltoallv(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf,
					       a->rcounts, a->rdispls, a->rtype, a->comm, q);
	default: /* P_NB_ALLTOALLW */
		return MPI_Ineighbor_alltoallw(a->sbuf, a->scounts, a->sbdispls, a->stypes,
					       a->rbuf, a->rcounts, a->rbdispls, a->rtypes,
					       a->comm, q);
	}
}

static int pstart(void *args, MPI_Request *q)
{
	const struct pargs *a = args;
	switch (a->kind) {
	case P_BCAST: case P_REDUCE: case P_GATHER: case P_GATHERV: case P_SCATTER:
	case P_SCATTERV:
		return pstart_rooted(a, q);
	case P_NB_ALLGATHER: case P_NB_ALLGATHERV: case P_NB_ALLTOALL: case P_NB_ALLTOALLV:
	case P_NB_ALLTOALLW:
		return pstart_neighbor(a, q);
	default:
		return pstart_all(a, q);
	}
}

static int pinit(struct pargs a, MPI_Comm comm, MPI_Request *req, const char *fn)
{
	ANY_COMM(comm, fn);
	(void)c;
	struct pargs *h = malloc(sizeof(*h));
	if (!h)
		return bcs_err(comm, MPI_ERR_NO_MEM, fn);
	a.comm = comm;
	*h = a;
	return bcs_err(comm, bcs_persist_coll_init(comm, pstart, free, h, req), fn);
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return pinit((struct pargs){.kind = P_BARRIER}, comm, req, "MPI_Barrier_init");
}

int MPI_Bcast_init(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
		   MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_BCAST, .rbuf = buf, .rcount = count, .rtype = dt, .root = root};
	return pinit(a, comm, req, "MPI_Bcast_init");
}

int MPI_Reduce_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		    int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count,
			  .rtype = dt, .op = op, .root = root};
	return pinit(a, comm, req, "MPI_Reduce_init");
}

/* Allreduce, Reduce_scatter_block, Scan and Exscan: one count and type */
static int reduction_init(enum pkind kind, const void *sbuf, void *rbuf, int count,
			  MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req,
			  const char *fn)
{
	struct pargs a = {.kind = kind, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rtype = dt,
			  .op = op};
	return pinit(a, comm, req, fn);
}

int MPI_Allreduce_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		       MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return reduction_init(P_ALLREDUCE, sbuf, rbuf, count, dt, op, comm, req,
			      "MPI_Allreduce_init");
}

int MPI_Reduce_scatter_block_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
				  MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return reduction_init(P_RSB, sbuf, rbuf, count, dt, op, comm, req,
			      "MPI_Reduce_scatter_block_init");
}

int MPI_Scan_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		  MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return reduction_init(P_SCAN, sbuf, rbuf, count, dt, op, comm, req, "MPI_Scan_init");
}

int MPI_Exscan_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		    MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return reduction_init(P_EXSCAN, sbuf, rbuf, count, dt, op, comm, req, "MPI_Exscan_init");
}

int MPI_Reduce_scatter_init(const void *sbuf, void *rbuf, const int counts[], MPI_Datatype dt,
			    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_RS, .sbuf = sbuf, .rbuf = rbuf, .rcounts = counts, .rtype = dt,
			  .op = op};
	return pinit(a, comm, req, "MPI_Reduce_scatter_init");
}

/* the regular data movers: count and type on each side (root < 0: none) */
static int regular_init(enum pkind kind, const void *sbuf, int scount, MPI_Datatype stype,
			void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
			MPI_Request *req, const char *fn)
{
	struct pargs a = {.kind = kind, .sbuf = sbuf, .scount = scount, .stype = stype,
			  .rbuf = rbuf, .rcount = rcount, .rtype = rtype, .root = root};
	return pinit(a, comm, req, fn);
}

int MPI_Gather_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		    MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return regular_init(P_GATHER, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req,
			    "MPI_Gather_init");
}

int MPI_Scatter_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		     MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info,
		     MPI_Request *req)
{
	(void)info;
	return regular_init(P_SCATTER, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req,
			    "MPI_Scatter_init");
}

int MPI_Allgather_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		       int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info,
		       MPI_Request *req)
{
	(void)info;
	return regular_init(P_ALLGATHER, sbuf, scount, stype, rbuf, rcount, rtype, -1, comm, req,
			    "MPI_Allgather_init");
}

int MPI_Alltoall_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		      MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return regular_init(P_ALLTOALL, sbuf, scount, stype, rbuf, rcount, rtype, -1, comm, req,
			    "MPI_Alltoall_init");
}

int MPI_Neighbor_allgather_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
				int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info,
				MPI_Request *req)
{
	(void)info;
	return regular_init(P_NB_ALLGATHER, sbuf, scount, stype, rbuf, rcount, rtype, -1, comm,
			    req, "MPI_Neighbor_allgather_init");
}

int MPI_Neighbor_alltoall_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			       int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info,
			       MPI_Request *req)
{
	(void)info;
	return regular_init(P_NB_ALLTOALL, sbuf, scount, stype, rbuf, rcount, rtype, -1, comm,
			    req, "MPI_Neighbor_alltoall_init");
}

int MPI_Gatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		     const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
		     MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_GATHERV, .sbuf = sbuf, .scount = scount, .stype = stype,
			  .rbuf = rbuf, .rcounts = rcounts, .rdispls = displs, .rtype = rtype,
			  .root = root};
	return pinit(a, comm, req, "MPI_Gatherv_init");
}

int MPI_Scatterv_init(const void *sbuf, const int scounts[], const int displs[],
		      MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
		      MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_SCATTERV, .sbuf = sbuf, .scounts = scounts, .sdispls = displs,
			  .stype = stype, .rbuf = rbuf, .rcount = rcount, .rtype = rtype,
			  .root = root};
	return pinit(a, comm, req, "MPI_Scatterv_init");
}

/* Allgatherv's and Neighbor_allgatherv's arguments */
static int allgatherv_init(enum pkind kind, const void *sbuf, int scount, MPI_Datatype stype,
			   void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rtype,
			   MPI_Comm comm, MPI_Request *req, const char *fn)
{
	struct pargs a = {.kind = kind, .sbuf = sbuf, .scount = scount, .stype = stype,
			  .rbuf = rbuf, .rcounts = rcounts, .rdispls = displs, .rtype = rtype};
	return pinit(a, comm, req, fn);
}

int MPI_Allgatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			const int rcounts[], const int displs[], MPI_Datatype rtype,
			MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return allgatherv_init(P_ALLGATHERV, sbuf, scount, stype, rbuf, rcounts, displs, rtype,
			       comm, req, "MPI_Allgatherv_init");
}

int MPI_Neighbor_allgatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
				 const int rcounts[], const int displs[], MPI_Datatype rtype,
				 MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return allgatherv_init(P_NB_ALLGATHERV, sbuf, scount, stype, rbuf, rcounts, displs,
			       rtype, comm, req, "MPI_Neighbor_allgatherv_init");
}

/* Alltoallv's and Neighbor_alltoallv's arguments */
static int alltoallv_init(enum pkind kind, const void *sbuf, const int *scounts,
			  const int *sdispls, MPI_Datatype stype, void *rbuf, const int *rcounts,
			  const int *rdispls, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req,
			  const char *fn)
{
	struct pargs a = {.kind = kind, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls,
			  .stype = stype, .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
			  .rtype = rtype};
	return pinit(a, comm, req, fn);
}

int MPI_Alltoallv_init(const void *sbuf, const int scounts[], const int sdispls[],
		       MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[],
		       MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	return alltoallv_init(P_ALLTOALLV, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls,
			      rtype, comm, req, "MPI_Alltoallv_init");
}

int MPI_Neighbor_alltoallv_init(const void *sbuf, const int scounts[], const int sdispls[],
				MPI_Datatype stype, void *rbuf, const int rcounts[],
				const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
				MPI_Info info, MPI_Request *req)
{
	(void)info;
	return alltoallv_init(P_NB_ALLTOALLV, sbuf, scounts, sdispls, stype, rbuf, rcounts,
			      rdispls, rtype, comm, req, "MPI_Neighbor_alltoallv_init");
}

int MPI_Alltoallw_init(const void *sbuf, const int scounts[], const int sdispls[],
		       const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
		       const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
		       MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_ALLTOALLW, .sbuf = sbuf, .scounts = scounts,
			  .sdispls = sdispls, .stypes = stypes, .rbuf = rbuf, .rcounts = rcounts,
			  .rdispls = rdispls, .rtypes = rtypes};
	return pinit(a, comm, req, "MPI_Alltoallw_init");
}

int MPI_Neighbor_alltoallw_init(const void *sbuf, const int scounts[], const MPI_Aint sdispls[],
				const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
				const MPI_Aint rdispls[], const MPI_Datatype rtypes[],
				MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
	(void)info;
	struct pargs a = {.kind = P_NB_ALLTOALLW, .sbuf = sbuf, .scounts = scounts,
			  .sbdispls = sdispls, .stypes = stypes, .rbuf = rbuf, .rcounts = rcounts,
			  .rbdispls = rdispls, .rtypes = rtypes};
	return pinit(a, comm, req, "MPI_Neighbor_alltoallw_init");
}
