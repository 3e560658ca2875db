/* Every predefined reduction operation on every datatype it applies to
 * (MPI-3.1 §5.9.2), through Allreduce and Scan, and Reduce to every root on
 * a few: the C integer and multi-language types, the floating point, complex,
 * logical and byte types, and MAXLOC/MINLOC on the six pair types with ties.
 *
 * Values are small integers (halves for floating point) chosen so that no
 * result overflows its type and every floating point sum or product is exact
 * whatever order an implementation reduces in. Logical operations get 0 and 1
 * only: with one process the result is the input as it is. */
#include "suite.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

enum kind { K_INT, K_FLT, K_CPX, K_BOOL, K_BYTE };
struct tdesc {
	MPI_Datatype dt;
	const char *name;
	enum kind kind;
	size_t sz;
	int sgn;
};
enum opk { O_MAX, O_MIN, O_SUM, O_PROD, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR };
struct odesc {
	MPI_Op op;
	const char *name;
	enum opk k;
};
#define N 6 /* elements per call */
typedef long double _Complex cval;

static int applies(enum opk o, enum kind k)
{
	switch (o) {
	case O_MAX:
	case O_MIN:
		return k == K_INT || k == K_FLT;
	case O_SUM:
	case O_PROD:
		return k == K_INT || k == K_FLT || k == K_CPX;
	case O_LAND:
	case O_LOR:
	case O_LXOR:
		return k == K_INT || k == K_BOOL;
	default:
		return k == K_INT || k == K_BYTE;
	}
}

/* the value rank R contributes at element I */
static cval gen(enum opk o, const struct tdesc *t, int r, int i)
{
	int neg = t->sgn || t->kind == K_FLT;
	long double half = t->kind == K_FLT ? 0.5L : 1.0L;
	switch (o) {
	case O_MAX:
	case O_MIN:
		return ((r * 5 + i * 3) % 11 - (neg ? 5 : 0)) * half;
	case O_SUM:
		if (t->kind == K_CPX)
			return (r + i) % 4 - 1 + ((r * 3 + i) % 5 - 2) * I;
		return ((r + i) % 5 - (neg ? 2 : 0)) * half;
	case O_PROD:
		if (t->kind == K_CPX) {
			static const cval f[4] = { 1, I, -1, 1 + I };
			return f[(r + 2 * i) % 4];
		}
		if (t->kind == K_FLT)
			return (r + i) % 3 == 0 ? 2.0L : (r + i) % 3 == 1 ? 0.5L : -1.0L;
		if (neg && (r + i) % 4 == 1)
			return -1;
		return 1 + ((r + i) % 3 == 0);
	case O_LAND:
	case O_LOR:
	case O_LXOR:
		/* columns 0 and 3 are all true, the others mixed */
		return i % 3 == 0 ? 1 : (r * 2 + i) % 3 != 0;
	default:
		return (r * 37 + i * 11 + 5) & 0x7f;
	}
}

static cval apply(enum opk o, cval a, cval b)
{
	long double x = creall(a), y = creall(b);
	long long p = (long long)x, q = (long long)y;
	switch (o) {
	case O_MAX: return x > y ? x : y;
	case O_MIN: return x < y ? x : y;
	case O_SUM: return a + b;
	case O_PROD: return a * b;
	case O_LAND: return p && q;
	case O_LOR: return p || q;
	case O_LXOR: return !p != !q;
	case O_BAND: return p & q;
	case O_BOR: return p | q;
	default: return p ^ q;
	}
}

static void put(const struct tdesc *t, void *p, cval v)
{
	long long x = (long long)creall(v);
	switch (t->kind) {
	case K_FLT:
		if (t->sz == sizeof(float))
			*(float *)p = (float)creall(v);
		else if (t->sz == sizeof(double))
			*(double *)p = (double)creall(v);
		else
			*(long double *)p = creall(v);
		return;
	case K_CPX:
		if (t->sz == sizeof(float _Complex))
			*(float _Complex *)p = (float _Complex)v;
		else if (t->sz == sizeof(double _Complex))
			*(double _Complex *)p = (double _Complex)v;
		else
			*(long double _Complex *)p = v;
		return;
	case K_BOOL:
		*(bool *)p = x != 0;
		return;
	default:
		switch (t->sz) {
		case 1: *(int8_t *)p = (int8_t)x; return;
		case 2: *(int16_t *)p = (int16_t)x; return;
		case 4: *(int32_t *)p = (int32_t)x; return;
		default: *(int64_t *)p = (int64_t)x; return;
		}
	}
}

static cval get(const struct tdesc *t, const void *p)
{
	switch (t->kind) {
	case K_FLT:
		if (t->sz == sizeof(float))
			return *(const float *)p;
		if (t->sz == sizeof(double))
			return *(const double *)p;
		return *(const long double *)p;
	case K_CPX:
		if (t->sz == sizeof(float _Complex))
			return *(const float _Complex *)p;
		if (t->sz == sizeof(double _Complex))
			return *(const double _Complex *)p;
		return *(const long double _Complex *)p;
	case K_BOOL:
		return *(const bool *)p;
	default:
		if (t->sgn)
			switch (t->sz) {
			case 1: return *(const int8_t *)p;
			case 2: return *(const int16_t *)p;
			case 4: return *(const int32_t *)p;
			default: return (long double)*(const int64_t *)p;
			}
		switch (t->sz) {
		case 1: return *(const uint8_t *)p;
		case 2: return *(const uint16_t *)p;
		case 4: return *(const uint32_t *)p;
		default: return (long double)*(const uint64_t *)p;
		}
	}
}

/* the reduction of ranks 0..HI at element I */
static cval fold(const struct odesc *o, const struct tdesc *t, int hi, int i)
{
	cval acc = gen(o->k, t, 0, i);
	for (int r = 1; r <= hi; r++)
		acc = apply(o->k, acc, gen(o->k, t, r, i));
	return acc;
}

static int matches(const struct odesc *o, const struct tdesc *t, const unsigned char *buf, int hi)
{
	for (int i = 0; i < N; i++) {
		unsigned char want[64];
		memset(want, 0, sizeof want);
		put(t, want, fold(o, t, hi, i));
		if (get(t, buf + (size_t)i * t->sz) != get(t, want))
			return 0;
	}
	return 1;
}

/* Allreduce; with ALL also Scan and Reduce to one root, ROOT */
static void one(const struct odesc *o, const struct tdesc *t, int all, int root)
{
	unsigned char in[N * 32], out[N * 32];
	for (int i = 0; i < N; i++)
		put(t, in + (size_t)i * t->sz, gen(o->k, t, rank, i));
	memset(out, 0, sizeof out);
	int rc = MPI_Allreduce(in, out, N, t->dt, o->op, MPI_COMM_WORLD);
	check(rc == MPI_SUCCESS && matches(o, t, out, size - 1),
	      nm("allreduce.%s.%s", o->name, t->name));
	if (!all)
		return;
	memset(out, 0, sizeof out);
	rc = MPI_Scan(in, out, N, t->dt, o->op, MPI_COMM_WORLD);
	check(rc == MPI_SUCCESS && matches(o, t, out, rank), nm("scan.%s.%s", o->name, t->name));
	memset(out, 0, sizeof out);
	rc = MPI_Reduce(in, out, N, t->dt, o->op, root, MPI_COMM_WORLD);
	if (rank == root)
		check(rc == MPI_SUCCESS && matches(o, t, out, size - 1),
		      nm("reduce.%s.%s", o->name, t->name));
	else
		check(rc == MPI_SUCCESS, nm("reduce.%s.%s.rc", o->name, t->name));
}

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
		{ MPI_C_COMPLEX, "MPI_C_COMPLEX", K_CPX, sizeof(float _Complex), 1 },
		{ MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", K_CPX, sizeof(float _Complex), 1 },
		{ MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", K_CPX, sizeof(double _Complex), 1 },
		{ MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", K_CPX, sizeof(long double _Complex), 1 },
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
