/* MPI_Reduce_local (predefined ops on predefined and pair types, a
 * non-commutative user op applied as in op inout) and MPI_Op_commutative,
 * with MPI_ERR_OP for an op the type does not take. (Not derived types:
 * MPICH 4.0 refuses a predefined op on them here.) */
#include "suite.h"

/* inout = in * 10 + inout: the order of the operands shows */
static void shift_add(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	int *a = in, *b = inout;
	for (int i = 0; i < *len; i++)
		b[i] = a[i] * 10 + b[i];
}

static void predefined(void)
{
	int in[4] = {1, 7, -3, 4 + rank}, io[4] = {5, 2, -8, 4};
	checkrc(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_SUM), MPI_SUCCESS, "sum: rc");
	check(io[0] == 6 && io[1] == 9 && io[2] == -11 && io[3] == 8 + rank, "sum: int");
	int mx[3] = {3, 9, 1}, my[3] = {4, 2, 1};
	MPI_Reduce_local(mx, my, 3, MPI_INT, MPI_MAX);
	check(my[0] == 4 && my[1] == 9 && my[2] == 1, "max: int");
	double d[2] = {1.5, -2.0}, e[2] = {2.0, 4.0};
	MPI_Reduce_local(d, e, 2, MPI_DOUBLE, MPI_PROD);
	check(e[0] == 3.0 && e[1] == -8.0, "prod: double");
	unsigned u[2] = {0xf0u, 0x0fu}, v[2] = {0x3cu, 0x3cu};
	MPI_Reduce_local(u, v, 2, MPI_UNSIGNED, MPI_BXOR);
	check(v[0] == 0xccu && v[1] == 0x33u, "bxor: unsigned");
	struct {
		int val, loc;
	} p[2] = {{5, 1}, {2, 0}}, q[2] = {{5, 0}, {3, 4}};
	MPI_Reduce_local(p, q, 2, MPI_2INT, MPI_MINLOC);
	check(q[0].val == 5 && q[0].loc == 0 && q[1].val == 2 && q[1].loc == 0, "minloc: 2int");
	int zero[1] = {9};
	checkrc(MPI_Reduce_local(in, zero, 0, MPI_INT, MPI_SUM), MPI_SUCCESS, "count 0: rc");
	checki(zero[0], 9, "count 0: untouched");
}

static void user(void)
{
	MPI_Op op;
	MPI_Op_create(shift_add, 0, &op);
	int in[2] = {1, 2}, io[2] = {3, 4};
	checkrc(MPI_Reduce_local(in, io, 2, MPI_INT, op), MPI_SUCCESS, "user: rc");
	check(io[0] == 13 && io[1] == 24, "user: in op inout");
	int c = -1;
	MPI_Op_commutative(op, &c);
	checki(c, 0, "commutative: non-commutative user op");
	MPI_Op_free(&op);
	MPI_Op_create(shift_add, 1, &op);
	MPI_Op_commutative(op, &c);
	checki(c, 1, "commutative: commutative user op");
	MPI_Op_free(&op);
	static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_BAND, MPI_LXOR, MPI_MAXLOC};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		c = -1;
		MPI_Op_commutative(ops[i], &c);
		checki(c, 1, nm("commutative: predefined %d", (int)i));
	}
}

static void errors(void)
{
	int a[1] = {1}, b[1] = {2};
	checkrc(MPI_Reduce_local(a, b, 1, MPI_INT, MPI_OP_NULL), MPI_ERR_OP, "error: MPI_OP_NULL");
	double x[1] = {1}, y[1] = {2};
	checkrc(MPI_Reduce_local(x, y, 1, MPI_DOUBLE, MPI_BAND), MPI_ERR_OP,
		"error: band on double");
	checki((long long)y[0], 2, "error: untouched");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	predefined();
	user();
	errors();
	return suite_finish("reduce_local");
}
