/* MPI_SUM and MPI_PROD on the four C complex types (MPI-3.1 §5.9.2), through
 * Allreduce, Scan and Reduce; the other types are in ops.c. */
#include "ops.h"

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	const struct tdesc types[] = {
		{ MPI_C_COMPLEX, "MPI_C_COMPLEX", K_CPX, sizeof(float _Complex), 1 },
		{ MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", K_CPX, sizeof(float _Complex), 1 },
		{ MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", K_CPX, sizeof(double _Complex), 1 },
		{ MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", K_CPX, sizeof(long double _Complex), 1 },
	};
	const struct odesc ops[] = {
		{ MPI_SUM, "MPI_SUM", O_SUM },
		{ MPI_PROD, "MPI_PROD", O_PROD },
	};
	int roots = 0;
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
			one(&ops[o], &types[t], 1, roots++ % size);
	return suite_finish("ops_complex");
}
