/* BCS-MPI buffered sends: MPI_Buffer_attach/detach, MPI_Bsend, MPI_Ibsend.
 *
 * A send here completes only once its receiver took the message, so a
 * message parked in the attached buffer would hold its room for as long
 * as the receiver pleases: whether the next one fits would depend on the
 * receivers' timing, and MPI_Buffer_detach (which waits for the messages
 * in the buffer) could wait for a receive the program posts after it. So a
 * buffered send leaves from a copy of the library's own, as a small
 * MPI_Send does, and the attached buffer only bounds a message: one larger
 * than the whole buffer (with MPI_BSEND_OVERHEAD) fails with MPI_ERR_BUFFER,
 * whatever is in flight. Nothing is written to the attached buffer, so
 * MPI_Buffer_detach returns at once; MPI_Finalize waits for the copies. */
#include <stdlib.h>

#include "bcs.h"

static struct {
	void *buf;
	int size;
} attached;

int bcs_bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	int need;
	int rc = MPI_Pack_size(count, dt, comm, &need);
	if (rc)
		return rc;
	if (!attached.buf || (long)need + MPI_BSEND_OVERHEAD > attached.size)
		return MPI_ERR_BUFFER;
	return bcs_bsend_post(buf, count, dt, dest, tag, comm);
}

int MPI_Buffer_attach(void *buffer, int size)
{
	bcs_need_init("MPI_Buffer_attach");
	if (attached.buf)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_BUFFER, "MPI_Buffer_attach");
	if (size < 0 || !buffer)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_BUFFER, "MPI_Buffer_attach");
	attached.buf = buffer;
	attached.size = size;
	return MPI_SUCCESS;
}

int MPI_Buffer_detach(void *buffer_addr, int *size)
{
	bcs_need_init("MPI_Buffer_detach");
	*(void **)buffer_addr = attached.buf;
	*size = attached.size;
	attached.buf = NULL;
	attached.size = 0;
	return MPI_SUCCESS;
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	ANY_COMM(comm, "MPI_Bsend");
	(void)c;
	return bcs_err(comm, bcs_bsend(buf, count, dt, dest, tag, comm), "MPI_Bsend");
}

/* complete at once: the message is copied when the call returns */
int MPI_Ibsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	ANY_COMM(comm, "MPI_Ibsend");
	(void)c;
	int rc = bcs_bsend(buf, count, dt, dest, tag, comm);
	if (!rc)
		rc = bcs_req_complete(comm, req);
	return bcs_err(comm, rc, "MPI_Ibsend");
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	return bcs_persist_bsend_init(buf, count, dt, dest, tag, comm, req, bcs_bsend);
}
