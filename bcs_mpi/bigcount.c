/* BCS-MPI's large-count (MPI-4 "_c") forms of calls: the int form's call
 * when every count and displacement fits in an int, which is all the
 * library's internals carry; a larger one is refused with MPI_ERR_COUNT
 * naming the call, never truncated. */
#include <limits.h>
#include <stdlib.h>

#include "bcs.h"

static bool fits(MPI_Count n)
{
	return n >= INT_MIN && n <= INT_MAX;
}

/* n counts (or displacements) as ints in out; false if one does not fit */
static bool narrow(int n, const MPI_Count *in, const MPI_Aint *ain, int *out)
{
	for (int i = 0; i < n; i++) {
		MPI_Count v = in ? in[i] : (MPI_Count)ain[i];
		if (!fits(v))
			return false;
		out[i] = (int)v;
	}
	return true;
}

#define NEED_FIT(comm, n, fn)                                      \
	do {                                                       \
		bcs_need_init(fn);                                 \
		if (!fits(n))                                      \
			return bcs_err(comm, MPI_ERR_COUNT, fn);   \
	} while (0)

int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag,
	       MPI_Comm comm)
{
	NEED_FIT(comm, count, "MPI_Send_c");
	return MPI_Send(buf, (int)count, dt, dest, tag, comm);
}

int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
	       MPI_Status *st)
{
	NEED_FIT(comm, count, "MPI_Recv_c");
	return MPI_Recv(buf, (int)count, dt, src, tag, comm, st);
}

int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag,
		MPI_Comm comm, MPI_Request *rq)
{
	NEED_FIT(comm, count, "MPI_Isend_c");
	return MPI_Isend(buf, (int)count, dt, dest, tag, comm, rq);
}

int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
		MPI_Request *rq)
{
	NEED_FIT(comm, count, "MPI_Irecv_c");
	return MPI_Irecv(buf, (int)count, dt, src, tag, comm, rq);
}

int MPI_Get_count_c(const MPI_Status *st, MPI_Datatype dt, MPI_Count *count)
{
	int n, rc = MPI_Get_count(st, dt, &n);
	if (rc == MPI_SUCCESS)
		*count = n; /* MPI_UNDEFINED stays MPI_UNDEFINED */
	return rc;
}

int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	NEED_FIT(comm, count, "MPI_Bcast_c");
	return MPI_Bcast(buf, (int)count, dt, root, comm);
}

int MPI_Reduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
		 int root, MPI_Comm comm)
{
	NEED_FIT(comm, count, "MPI_Reduce_c");
	return MPI_Reduce(sbuf, rbuf, (int)count, dt, op, root, comm);
}

int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
		    MPI_Comm comm)
{
	NEED_FIT(comm, count, "MPI_Allreduce_c");
	return MPI_Allreduce(sbuf, rbuf, (int)count, dt, op, comm);
}

/* the four arrays of an alltoallv, each of the size its side reads: the
 * remote group's on an intercommunicator */
int MPI_Alltoallv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
		    MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[],
		    const MPI_Aint rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
	const char *fn = "MPI_Alltoallv_c";
	bcs_need_init(fn);
	int n, inter = 0;
	if (MPI_Comm_test_inter(comm, &inter) || MPI_Comm_size(comm, &n) ||
	    (inter && MPI_Comm_remote_size(comm, &n)))
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	int *v = malloc(4 * (size_t)(n ? n : 1) * sizeof(*v));
	if (!v)
		return bcs_err(comm, MPI_ERR_INTERN, fn);
	bool in_place = sbuf == MPI_IN_PLACE;
	if (!(in_place || (narrow(n, scounts, NULL, v) && narrow(n, NULL, sdispls, v + n))) ||
	    !narrow(n, rcounts, NULL, v + 2 * n) || !narrow(n, NULL, rdispls, v + 3 * n)) {
		free(v);
		return bcs_err(comm, MPI_ERR_COUNT, fn);
	}
	int rc = MPI_Alltoallv(sbuf, in_place ? NULL : v, in_place ? NULL : v + n, stype, rbuf,
			       v + 2 * n, v + 3 * n, rtype, comm);
	free(v);
	return rc;
}
