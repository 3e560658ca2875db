/* The profiling interface: the program's own MPI_Send, MPI_Recv and
 * MPI_Allreduce replace the library's, count the calls and pass them on
 * to PMPI_Send, PMPI_Recv and PMPI_Allreduce, as a tool that wraps MPI
 * calls does. The counts are the program's calls only: the library's own
 * point-to-point and collectives (Sendrecv, Bcast, Reduce, Barrier,
 * Allgather) are not the wrappers'. Other PMPI_ names answer as their
 * MPI_ twins. */
#include "suite.h"

static int sends, recvs, allreduces, last_tag = -1;
static long long sent_bytes;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	     MPI_Comm comm)
{
	int sz = 0;
	PMPI_Type_size(datatype, &sz);
	sends++;
	sent_bytes += (long long)count * sz;
	last_tag = tag;
	return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
	     MPI_Status *status)
{
	recvs++;
	return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		  MPI_Op op, MPI_Comm comm)
{
	allreduces++;
	return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* pairs (0,1), (2,3), ...: the lower sends first; a rank without a pair
 * sends nothing */
static void pairs(void)
{
	int peer = rank ^ 1, v = -1;
	if (peer >= size) {
		checki(sends, 0, "pair: no peer, no send");
		return;
	}
	for (int i = 0; i < 3; i++) {
		int mine = rank * 100 + i;
		if (rank < peer) {
			MPI_Send(&mine, 1, MPI_INT, peer, 40 + i, MPI_COMM_WORLD);
			MPI_Recv(&v, 1, MPI_INT, peer, 40 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&v, 1, MPI_INT, peer, 40 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(&mine, 1, MPI_INT, peer, 40 + i, MPI_COMM_WORLD);
		}
		checki(v, peer * 100 + i, nm("pair: message %d", i));
	}
	checki(sends, 3, "pair: sends counted");
	checki(recvs, 3, "pair: receives counted");
	checki(sent_bytes, 3 * (long long)sizeof(int), "pair: bytes seen by the wrapper");
	checki(last_tag, 42, "pair: last tag seen by the wrapper");
}

static void allreduce(void)
{
	int in = rank + 1, out = 0;
	MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	checki(out, size * (size + 1) / 2, "allreduce: sum through the wrapper");
	MPI_Allreduce(MPI_IN_PLACE, &in, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	checki(in, size, "allreduce: in place");
	checki(allreduces, 2, "allreduce: calls counted");
}

/* calls the wrappers do not wrap, whose implementation may send and
 * receive: none of it is the wrappers' to see */
static void internal(void)
{
	int s0 = sends, r0 = recvs, a0 = allreduces;
	int x = rank, y = -1;
	MPI_Sendrecv(&x, 1, MPI_INT, (rank + 1) % size, 7, &y, 1, MPI_INT,
		     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	checki(y, (rank + size - 1) % size, "internal: sendrecv ring");
	int b = rank == 0 ? 99 : 0;
	MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
	checki(b, 99, "internal: bcast");
	int sum = 0;
	MPI_Reduce(&x, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		checki(sum, size * (size - 1) / 2, "internal: reduce");
	MPI_Barrier(MPI_COMM_WORLD);
	int *all = malloc(sizeof(int) * (size_t)size);
	MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	checki(all[size - 1], size - 1, "internal: allgather");
	free(all);
	MPI_Request rq[2];
	MPI_Irecv(&y, 1, MPI_INT, rank, 8, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(&x, 1, MPI_INT, rank, 8, MPI_COMM_WORLD, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	checki(y, rank, "internal: isend and irecv to self");
	checki(sends - s0, 0, "internal: no send counted");
	checki(recvs - r0, 0, "internal: no receive counted");
	checki(allreduces - a0, 0, "internal: no allreduce counted");
}

/* PMPI_ names of calls the program does not wrap answer as the MPI_ ones */
static void twins(void)
{
	int r = -1, s = -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &r);
	PMPI_Comm_size(MPI_COMM_WORLD, &s);
	check(r == rank && s == size, "twins: PMPI_Comm_rank, PMPI_Comm_size");
	check(PMPI_Message_c2f(MPI_MESSAGE_NULL) == MPI_Message_c2f(MPI_MESSAGE_NULL),
	      "twins: PMPI_Message_c2f");
	check(PMPI_Comm_f2c(PMPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD,
	      "twins: PMPI_Comm_c2f and f2c");
	int flag = 0;
	PMPI_Initialized(&flag);
	checki(flag, 1, "twins: PMPI_Initialized");
	double t = PMPI_Wtime();
	check(t >= 0, "twins: PMPI_Wtime");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	pairs();
	allreduce();
	internal();
	twins();
	return suite_finish("profile");
}
