/* Every predefined reduction operation on every datatype it applies to
 * (MPI-3.1 §5.9.2), through Allreduce and Scan, and Reduce to a root: the C
 * integer and multi-language types, the floating point, logical and byte
 * types, and MAXLOC/MINLOC on the six pair types with ties. The complex types
 * are in ops_complex.c. */
#include "ops.h"

/* MAXLOC and MINLOC: values with ties (the lower index wins), indices that
 * fall with the rank so the lowest index is not the lowest rank's */
#define PAIR(NAME, VT)                                                                 \
	static void pair_##NAME(MPI_Datatype dt, const char *tname)                    \
	{                                                                              \
		struct { VT v; int i; } in[N], out[N];                                 \
		for (int e = 0; e < N; e++) {                                          \
			in[e].v = (VT)((rank * 7 + e) % 3 - 1);                        \
			in[e].i = (size - rank) * 3 + e;                               \
		}                                                                      \
		MPI_Op ops[2] = { MPI_MAXLOC, MPI_MINLOC };                            \
		const char *names[2] = { "MPI_MAXLOC", "MPI_MINLOC" };                 \
		for (int k = 0; k < 2; k++) {                                          \
			for (int scan = 0; scan < 2; scan++) {                         \
				memset(out, 0, sizeof out);                            \
				int rc = scan ? MPI_Scan(in, out, N, dt, ops[k], MPI_COMM_WORLD) \
					      : MPI_Allreduce(in, out, N, dt, ops[k], MPI_COMM_WORLD); \
				int good = rc == MPI_SUCCESS, hi = scan ? rank : size - 1; \
				for (int e = 0; e < N; e++) {                          \
					VT bv = 0;                                     \
					int bi = -1;                                   \
					for (int r = 0; r <= hi; r++) {                \
						VT v = (VT)((r * 7 + e) % 3 - 1);      \
						int ix = (size - r) * 3 + e;           \
						int better = k == 0 ? v > bv : v < bv; \
						if (bi < 0 || better || (v == bv && ix < bi)) \
							bv = v, bi = ix;               \
					}                                              \
					good &= out[e].v == bv && out[e].i == bi;      \
				}                                                      \
				check(good, nm("%s.%s.%s", scan ? "scan" : "allreduce", names[k], tname)); \
			}                                                              \
			int root = size / 2;                                           \
			memset(out, 0, sizeof out);                                    \
			MPI_Reduce(in, out, N, dt, ops[k], root, MPI_COMM_WORLD);      \
			if (rank == root)                                              \
				check(out[0].i > 0, nm("reduce.%s.%s", names[k], tname));  \
		}                                                                      \
	}
PAIR(float, float)
PAIR(double, double)
PAIR(long, long)
PAIR(2int, int)
PAIR(short, short)
PAIR(ldouble, long double)

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	const struct tdesc types[] = {
		{ MPI_INT, "MPI_INT", K_INT, sizeof(int), 1 },
		{ MPI_LONG, "MPI_LONG", K_INT, sizeof(long), 1 },
		{ MPI_SHORT, "MPI_SHORT", K_INT, sizeof(short), 1 },
		{ MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", K_INT, sizeof(unsigned short), 0 },
		{ MPI_UNSIGNED, "MPI_UNSIGNED", K_INT, sizeof(unsigned), 0 },
		{ MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", K_INT, sizeof(unsigned long), 0 },
		{ MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", K_INT, sizeof(long long), 1 },
		{ MPI_LONG_LONG, "MPI_LONG_LONG", K_INT, sizeof(long long), 1 },
		{ MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", K_INT, sizeof(unsigned long long), 0 },
		{ MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", K_INT, 1, 1 },
		{ MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", K_INT, 1, 0 },
		{ MPI_INT8_T, "MPI_INT8_T", K_INT, 1, 1 },
		{ MPI_INT16_T, "MPI_INT16_T", K_INT, 2, 1 },
		{ MPI_INT32_T, "MPI_INT32_T", K_INT, 4, 1 },
		{ MPI_INT64_T, "MPI_INT64_T", K_INT, 8, 1 },
		{ MPI_UINT8_T, "MPI_UINT8_T", K_INT, 1, 0 },
		{ MPI_UINT16_T, "MPI_UINT16_T", K_INT, 2, 0 },
		{ MPI_UINT32_T, "MPI_UINT32_T", K_INT, 4, 0 },
		{ MPI_UINT64_T, "MPI_UINT64_T", K_INT, 8, 0 },
		{ MPI_AINT, "MPI_AINT", K_INT, sizeof(MPI_Aint), 1 },
		{ MPI_OFFSET, "MPI_OFFSET", K_INT, sizeof(MPI_Offset), 1 },
		{ MPI_COUNT, "MPI_COUNT", K_INT, sizeof(MPI_Count), 1 },
		{ MPI_FLOAT, "MPI_FLOAT", K_FLT, sizeof(float), 1 },
		{ MPI_DOUBLE, "MPI_DOUBLE", K_FLT, sizeof(double), 1 },
		{ MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", K_FLT, sizeof(long double), 1 },
		{ MPI_C_BOOL, "MPI_C_BOOL", K_BOOL, sizeof(bool), 0 },
		{ MPI_BYTE, "MPI_BYTE", K_BYTE, 1, 0 },
	};
	const struct odesc ops[] = {
		{ MPI_MAX, "MPI_MAX", O_MAX },    { MPI_MIN, "MPI_MIN", O_MIN },
		{ MPI_SUM, "MPI_SUM", O_SUM },    { MPI_PROD, "MPI_PROD", O_PROD },
		{ MPI_LAND, "MPI_LAND", O_LAND }, { MPI_LOR, "MPI_LOR", O_LOR },
		{ MPI_LXOR, "MPI_LXOR", O_LXOR }, { MPI_BAND, "MPI_BAND", O_BAND },
		{ MPI_BOR, "MPI_BOR", O_BOR },    { MPI_BXOR, "MPI_BXOR", O_BXOR },
	};
	/* Allreduce for every pair; Scan and Reduce (each to another root) for
	 * every op on MPI_INT and on the non-integer types, and every type under
	 * MPI_SUM: each collective costs much under MPICH with more ranks than cores */
	int roots = 0;
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
			if (applies(ops[o].k, types[t].kind)) {
				int all = t == 0 || types[t].kind != K_INT || ops[o].k == O_SUM;
				one(&ops[o], &types[t], all, all ? roots++ % size : 0);
			}
	pair_float(MPI_FLOAT_INT, "MPI_FLOAT_INT");
	pair_double(MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
	pair_long(MPI_LONG_INT, "MPI_LONG_INT");
	pair_2int(MPI_2INT, "MPI_2INT");
	pair_short(MPI_SHORT_INT, "MPI_SHORT_INT");
	pair_ldouble(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT");
	return suite_finish("ops");
}
