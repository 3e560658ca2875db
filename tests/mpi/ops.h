/* Shared by ops.c and ops_complex.c: a predefined reduction operation on a
 * predefined datatype through Allreduce, and Scan and Reduce.
 *
 * Values are small integers (halves for floating point) chosen so that no
 * result overflows its type and every floating point sum or product is exact
 * whatever order an implementation reduces in. Logical operations get 0 and 1
 * only: with one process the result is the input as it is. */
#ifndef OPS_H
#define OPS_H
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

static inline int applies(enum opk o, enum kind k)
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
static inline cval gen(enum opk o, const struct tdesc *t, int r, int i)
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

static inline cval apply(enum opk o, cval a, cval b)
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

static inline void put(const struct tdesc *t, void *p, cval v)
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

static inline cval get(const struct tdesc *t, const void *p)
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
static inline cval fold(const struct odesc *o, const struct tdesc *t, int hi, int i)
{
	cval acc = gen(o->k, t, 0, i);
	for (int r = 1; r <= hi; r++)
		acc = apply(o->k, acc, gen(o->k, t, r, i));
	return acc;
}

static inline int matches(const struct odesc *o, const struct tdesc *t, const unsigned char *buf, int hi)
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
static inline void one(const struct odesc *o, const struct tdesc *t, int all, int root)
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

#endif
