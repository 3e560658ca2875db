/* Thousands of outstanding requests, the completion calls, probes, cancel,
 * request_free, the v-collectives and MPI_IN_PLACE, and the environment. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M 5000
static int errs;
#define CHECK(c) do { if (!(c)) { errs++; printf("rank %d: check failed line %d: %s\n", rank, __LINE__, #c); } } while (0)

int main(int argc, char **argv)
{
	int rank, size, prov, flag;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(prov == MPI_THREAD_FUNNELED);
	MPI_Initialized(&flag);
	CHECK(flag);
	int *buf = malloc(M * sizeof(int));
	MPI_Request *rq = malloc(M * sizeof(MPI_Request));
	MPI_Status *st = malloc(M * sizeof(MPI_Status));
	int peer = size - 1;
	if (rank == 0) {
		for (int i = 0; i < M; i++)
			MPI_Irecv(&buf[i], 1, MPI_INT, peer, i % 7, MPI_COMM_WORLD, &rq[i]);
		MPI_Waitall(M, rq, st);
		int ok = 1;
		/* per tag, in send order */
		for (int i = 0; i < M; i++)
			ok &= buf[i] == i && st[i].MPI_SOURCE == peer && st[i].MPI_TAG == i % 7;
		CHECK(ok);
		for (int i = 0; i < M; i++)
			CHECK(rq[i] == MPI_REQUEST_NULL);
	} else if (rank == peer) {
		for (int i = 0; i < M; i++) {
			buf[i] = i;
			MPI_Isend(&buf[i], 1, MPI_INT, 0, i % 7, MPI_COMM_WORLD, &rq[i]);
		}
		MPI_Waitall(M, rq, MPI_STATUSES_IGNORE);
	}
	/* waitany, waitsome, testall */
	if (rank == 0) {
		int v[3] = {-1, -1, -1}, idx, cnt, done = 0, ids[3];
		for (int i = 0; i < 3; i++)
			MPI_Irecv(&v[i], 1, MPI_INT, peer, 100 + i, MPI_COMM_WORLD, &rq[i]);
		MPI_Waitany(3, rq, &idx, &st[0]);
		CHECK(idx >= 0 && idx < 3 && st[0].MPI_TAG == 100 + idx && rq[idx] == MPI_REQUEST_NULL);
		done = 1;
		while (done < 3) {
			MPI_Waitsome(3, rq, &cnt, ids, st);
			CHECK(cnt >= 1);
			done += cnt;
		}
		CHECK(v[0] == 0 && v[1] == 1 && v[2] == 2);
		MPI_Waitsome(3, rq, &cnt, ids, st);
		CHECK(cnt == MPI_UNDEFINED);
		MPI_Waitany(3, rq, &idx, &st[0]);
		CHECK(idx == MPI_UNDEFINED);
		MPI_Testall(3, rq, &flag, MPI_STATUSES_IGNORE);
		CHECK(flag);
	} else if (rank == peer) {
		for (int i = 0; i < 3; i++)
			MPI_Send(&i, 1, MPI_INT, 0, 100 + i, MPI_COMM_WORLD);
	}
	/* probe and get_count, iprobe */
	if (rank == 0) {
		MPI_Status s;
		int count;
		MPI_Probe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &s);
		MPI_Get_count(&s, MPI_DOUBLE, &count);
		CHECK(s.MPI_SOURCE == peer && count == 3);
		double d[3];
		MPI_Recv(d, 3, MPI_DOUBLE, s.MPI_SOURCE, 7, MPI_COMM_WORLD, &s);
		CHECK(d[2] == 2.5);
		MPI_Get_count(&s, MPI_INT, &count);
		CHECK(count == 6);
		MPI_Get_count(&s, MPI_DOUBLE_INT, &count);
		CHECK(count == 2);
		MPI_Iprobe(peer, 12345, MPI_COMM_WORLD, &flag, &s);
		CHECK(!flag);
	} else if (rank == peer) {
		double d[3] = {0.5, 1.5, 2.5};
		MPI_Send(d, 3, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
	}
	/* cancel of a receive, request_free of a send */
	{
		MPI_Request r;
		MPI_Status s;
		int x;
		MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &r);
		MPI_Cancel(&r);
		MPI_Wait(&r, &s);
		MPI_Test_cancelled(&s, &flag);
		CHECK(flag);
		int y = 5;
		MPI_Isend(&y, 1, MPI_INT, rank, 998, MPI_COMM_WORLD, &r);
		MPI_Request_free(&r);
		CHECK(r == MPI_REQUEST_NULL);
		MPI_Recv(&x, 1, MPI_INT, rank, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(x == 5);
		MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &s);
		CHECK(s.MPI_SOURCE == MPI_PROC_NULL && s.MPI_TAG == MPI_ANY_TAG);
	}
	/* sendrecv_replace around the ring */
	{
		int v = rank;
		MPI_Sendrecv_replace(&v, 1, MPI_INT, (rank + 1) % size, 3, (rank + size - 1) % size, 3,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(v == (rank + size - 1) % size);
	}
	/* v-collectives, in place */
	{
		int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int)), tot = 0;
		for (int i = 0; i < size; i++) {
			counts[i] = i + 1;
			displs[i] = tot;
			tot += i + 1;
		}
		int *all = malloc(tot * sizeof(int)), *mine = malloc((rank + 1) * sizeof(int));
		for (int i = 0; i <= rank; i++)
			mine[i] = rank * 10 + i;
		MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
		for (int r = 0; r < size; r++)
			for (int i = 0; i <= r; i++)
				CHECK(all[displs[r] + i] == r * 10 + i);
		memset(mine, 0, (rank + 1) * sizeof(int));
		MPI_Scatterv(all, counts, displs, MPI_INT, mine, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
		CHECK(mine[rank] == rank * 10 + rank);
		if (rank == 0)
			memset(all + counts[0], 0, (tot - counts[0]) * sizeof(int));
		MPI_Gatherv(rank == 0 ? MPI_IN_PLACE : mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0,
			    MPI_COMM_WORLD);
		if (rank == 0)
			CHECK(all[displs[size - 1]] == (size - 1) * 10);
		int s = rank + 1;
		MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		CHECK(s == size * (size + 1) / 2);
		int *a2 = malloc(size * sizeof(int));
		for (int i = 0; i < size; i++)
			a2[i] = rank * 100 + i;
		MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, a2, 1, MPI_INT, MPI_COMM_WORLD);
		for (int i = 0; i < size; i++)
			CHECK(a2[i] == i * 100 + rank);
		struct { int v, i; } in = {rank % 2, rank}, out;
		MPI_Reduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, size - 1, MPI_COMM_WORLD);
		if (rank == size - 1)
			CHECK(out.v == 0 && out.i == 0);
		MPI_Datatype pair;
		MPI_Type_contiguous(2, MPI_INT, &pair);
		MPI_Type_commit(&pair);
		int pv[2] = {rank, 1}, psum[2];
		MPI_Allreduce(pv, psum, 1, pair, MPI_SUM, MPI_COMM_WORLD);
		CHECK(psum[0] == size * (size - 1) / 2 && psum[1] == size);
		MPI_Type_free(&pair);
		free(counts); free(displs); free(all); free(mine); free(a2);
	}
	/* communicators */
	{
		MPI_Comm dup, none;
		MPI_Comm_dup(MPI_COMM_WORLD, &dup);
		int r2, res;
		MPI_Comm_rank(dup, &r2);
		CHECK(r2 == rank);
		MPI_Comm_compare(dup, MPI_COMM_WORLD, &res);
		CHECK(res == MPI_CONGRUENT);
		MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
		CHECK((rank == 0) == (none == MPI_COMM_NULL));
		if (none != MPI_COMM_NULL)
			MPI_Comm_free(&none);
		int x = rank, y = -1;
		/* a message on dup is not seen on world */
		MPI_Sendrecv(&x, 1, MPI_INT, rank, 0, &y, 1, MPI_INT, rank, 0, dup, MPI_STATUS_IGNORE);
		CHECK(y == rank);
		MPI_Comm_free(&dup);
		MPI_Comm_size(MPI_COMM_SELF, &res);
		CHECK(res == 1);
	}
	/* environment */
	{
		char name[MPI_MAX_PROCESSOR_NAME], es[MPI_MAX_ERROR_STRING];
		int len, v, sv, cls;
		MPI_Get_processor_name(name, &len);
		CHECK(len > 0 && (int)strlen(name) == len);
		MPI_Get_version(&v, &sv);
		CHECK(v == 3);
		MPI_Error_string(MPI_ERR_TRUNCATE, es, &len);
		CHECK(strstr(es, "truncated") != NULL);
		MPI_Error_class(MPI_ERR_RANK, &cls);
		CHECK(cls == MPI_ERR_RANK);
		CHECK(MPI_Wtick() > 0 && MPI_Wtime() > 0);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		CHECK(MPI_Send(&v, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
		CHECK(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT);
		CHECK(MPI_Send(&v, 1, 12345, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
		CHECK(MPI_Send(&v, 1, MPI_INT, 0, -3, MPI_COMM_WORLD) == MPI_ERR_TAG);
		CHECK(MPI_Allreduce(&v, &sv, 1, MPI_DOUBLE_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_OP);
		CHECK(MPI_Bcast(&v, 1, MPI_INT, size, MPI_COMM_WORLD) == MPI_ERR_ROOT);
	}
	int total;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("many: %d errors\n", total);
	free(buf); free(rq); free(st);
	MPI_Finalize();
	MPI_Finalized(&flag);
	return total != 0 || !flag;
}
