/* BCS-MPI datatypes and predefined reduction operators (dtype.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <complex.h>
#include <wchar.h>

#include "dtype.h"
#include "mpi.h"

_Static_assert(MPI_UB == BCS_TYPE_MAX - 1 && MPI_LB == BCS_TYPE_MAX - 2 &&
		       MPI_CHARACTER == BCS_TYPE_MAX - 9 && MPI_CXX_BOOL == BCS_TYPE_MAX - 13,
	       "the bound markers and Fortran's types are the datatype table's last handles");

static struct bcs_type types[BCS_TYPE_MAX];

struct pair_f { float v; int i; };
struct pair_d { double v; int i; };
struct pair_l { long v; int i; };
struct pair_2i { int v; int i; };
struct pair_s { short v; int i; };
struct pair_ld { long double v; int i; };

static long basic_align(int b);

/* true bounds: where the data bytes actually lie */
static void set_true(struct bcs_type *t)
{
	t->true_lb = t->true_ub = 0;
	for (int k = 0; k < t->nblocks; k++) {
		long lo = t->blocks[k].off, hi = lo + t->blocks[k].len;
		if (!k || lo < t->true_lb)
			t->true_lb = lo;
		if (!k || hi > t->true_ub)
			t->true_ub = hi;
	}
}

static void predef(int h, long size)
{
	struct bcs_type *t = &types[h];
	t->used = t->committed = t->predefined = 1;
	t->size = t->extent = size;
	t->basic = h;
	t->nelem = 1;
	t->nblocks = 1;
	t->blocks = malloc(sizeof(struct bcs_block));
	t->blocks[0] = (struct bcs_block){0, size, h};
	t->align = basic_align(h);
	set_true(t);
}

static void pair(int h, long vsize, long ioff, long extent)
{
	struct bcs_type *t = &types[h];
	t->used = t->committed = t->predefined = 1;
	t->size = vsize + (long)sizeof(int);
	t->extent = extent;
	t->basic = h;
	t->nelem = 1;
	if (ioff == vsize) {
		t->nblocks = 1;
		t->blocks = malloc(sizeof(struct bcs_block));
		t->blocks[0] = (struct bcs_block){0, t->size, h};
	} else {
		t->nblocks = 2;
		t->blocks = malloc(2 * sizeof(struct bcs_block));
		t->blocks[0] = (struct bcs_block){0, vsize, h};
		t->blocks[1] = (struct bcs_block){ioff, (long)sizeof(int), h};
	}
	t->align = basic_align(h);
	set_true(t);
}

long bcs_basic_size(int b)
{
	switch (b) {
	case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_UNSIGNED_CHAR: case MPI_BYTE:
	case MPI_INT8_T: case MPI_UINT8_T: case MPI_PACKED: return 1;
	case MPI_C_BOOL: return sizeof(_Bool);
	case MPI_WCHAR: return sizeof(wchar_t);
	case MPI_SHORT: case MPI_UNSIGNED_SHORT: case MPI_INT16_T: case MPI_UINT16_T: return 2;
	case MPI_INT: case MPI_UNSIGNED: case MPI_INT32_T: case MPI_UINT32_T: return 4;
	case MPI_FLOAT: return sizeof(float);
	case MPI_LONG: case MPI_UNSIGNED_LONG: return sizeof(long);
	case MPI_LONG_LONG_INT: case MPI_UNSIGNED_LONG_LONG: case MPI_INT64_T:
	case MPI_UINT64_T: return 8;
	case MPI_AINT: return sizeof(MPI_Aint);
	case MPI_OFFSET: return sizeof(MPI_Offset);
	case MPI_COUNT: return sizeof(MPI_Count);
	case MPI_DOUBLE: return sizeof(double);
	case MPI_LONG_DOUBLE: return sizeof(long double);
	case MPI_FLOAT_INT: return sizeof(float) + sizeof(int);
	case MPI_DOUBLE_INT: return sizeof(double) + sizeof(int);
	case MPI_LONG_INT: return sizeof(long) + sizeof(int);
	case MPI_2INT: return 2 * sizeof(int);
	case MPI_SHORT_INT: return sizeof(short) + sizeof(int);
	case MPI_LONG_DOUBLE_INT: return sizeof(long double) + sizeof(int);
	case MPI_C_FLOAT_COMPLEX: return sizeof(float _Complex);
	case MPI_C_DOUBLE_COMPLEX: return sizeof(double _Complex);
	case MPI_C_LONG_DOUBLE_COMPLEX: return sizeof(long double _Complex);
	}
	return 0;
}

/* a Fortran (or C++) type: its C equivalent's layout and elements (reductions and
 * external32 act on those), under a handle of its own */
static void fortran(int h, int like)
{
	predef(h, bcs_basic_size(like));
	types[h].basic = like;
	types[h].blocks[0].basic = like;
	types[h].align = types[like].align;
}

void bcs_types_init(void)
{
	if (types[MPI_INT].used)
		return;
	for (int h = MPI_CHAR; h <= MPI_C_LONG_DOUBLE_COMPLEX; h++)
		if (h < MPI_FLOAT_INT || h > MPI_LONG_DOUBLE_INT)
			predef(h, bcs_basic_size(h));
	pair(MPI_FLOAT_INT, sizeof(float), offsetof(struct pair_f, i), sizeof(struct pair_f));
	pair(MPI_DOUBLE_INT, sizeof(double), offsetof(struct pair_d, i), sizeof(struct pair_d));
	pair(MPI_LONG_INT, sizeof(long), offsetof(struct pair_l, i), sizeof(struct pair_l));
	pair(MPI_2INT, sizeof(int), offsetof(struct pair_2i, i), sizeof(struct pair_2i));
	pair(MPI_SHORT_INT, sizeof(short), offsetof(struct pair_s, i), sizeof(struct pair_s));
	/* the bound markers: no data (a struct takes their displacements) */
	predef(MPI_LB, 0);
	predef(MPI_UB, 0);
	fortran(MPI_CHARACTER, MPI_CHAR);
	fortran(MPI_LOGICAL, MPI_INT);
	fortran(MPI_INTEGER, MPI_INT);
	fortran(MPI_REAL, MPI_FLOAT);
	fortran(MPI_DOUBLE_PRECISION, MPI_DOUBLE);
	fortran(MPI_COMPLEX, MPI_C_FLOAT_COMPLEX);
	fortran(MPI_DOUBLE_COMPLEX, MPI_C_DOUBLE_COMPLEX);
	fortran(MPI_CXX_BOOL, MPI_C_BOOL);
	fortran(MPI_CXX_FLOAT_COMPLEX, MPI_C_FLOAT_COMPLEX);
	fortran(MPI_CXX_DOUBLE_COMPLEX, MPI_C_DOUBLE_COMPLEX);
	fortran(MPI_CXX_LONG_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX);
	/* long double carries 10 meaningful bytes in 16 on x86-64: all 16 travel */
	pair(MPI_LONG_DOUBLE_INT, sizeof(long double), offsetof(struct pair_ld, i),
	     sizeof(struct pair_ld));
}

struct bcs_type *bcs_type_held(int h)
{
	if (h <= 0 || h >= BCS_TYPE_MAX || !types[h].used)
		return NULL;
	return &types[h];
}

struct bcs_type *bcs_type_get(int h)
{
	struct bcs_type *t = bcs_type_held(h);
	return t && !t->freed ? t : NULL;
}

int bcs_type_hold(int h)
{
	struct bcs_type *t = bcs_type_get(h);
	if (!t)
		return MPI_ERR_TYPE;
	if (!t->predefined)
		t->refs++;
	return 0;
}

static void type_destroy(struct bcs_type *t)
{
	free(t->blocks);
	free(t->name);
	memset(t, 0, sizeof(*t));
}

void bcs_type_release(int h)
{
	struct bcs_type *t = bcs_type_held(h);
	if (!t || t->predefined || t->refs <= 0)
		return;
	if (--t->refs == 0 && t->freed)
		type_destroy(t);
}

bool bcs_type_is_contig(const struct bcs_type *t)
{
	return t->nblocks == 1 && t->blocks[0].off == 0 && t->blocks[0].len == t->size &&
	       t->extent == t->size;
}

static int alloc_type(void)
{
	for (int h = MPI_C_LONG_DOUBLE_COMPLEX + 1; h < BCS_TYPE_MAX; h++)
		if (!types[h].used)
			return h;
	return -1;
}

/* Appends a block, merging it with the previous one when adjacent and of
 * the same basic type (Get_elements counts by basic type). */
static void add_block(struct bcs_block *v, int *n, long off, long len, int basic)
{
	if (len == 0)
		return;
	if (*n && v[*n - 1].off + v[*n - 1].len == off && v[*n - 1].basic == basic) {
		v[*n - 1].len += len;
		return;
	}
	v[(*n)++] = (struct bcs_block){off, len, basic};
}

/* Alignment of a basic type, as the C compiler lays out a struct member of
 * it (the pair types align as their value or int, whichever is wider). */
static long basic_align(int b)
{
	switch (b) {
	case MPI_FLOAT_INT: return _Alignof(struct pair_f);
	case MPI_DOUBLE_INT: return _Alignof(struct pair_d);
	case MPI_LONG_INT: return _Alignof(struct pair_l);
	case MPI_2INT: return _Alignof(struct pair_2i);
	case MPI_SHORT_INT: return _Alignof(struct pair_s);
	case MPI_LONG_DOUBLE_INT: return _Alignof(struct pair_ld);
	case MPI_C_FLOAT_COMPLEX: return _Alignof(float);
	case MPI_C_DOUBLE_COMPLEX: return _Alignof(double);
	case MPI_C_LONG_DOUBLE_COMPLEX: return _Alignof(long double);
	}
	long s = bcs_basic_size(b);
	return s > 0 ? s : 1;
}

int bcs_type_build(int n, const long *blens, const long *disps, const int *olds, int pad,
		   int *newtype)
{
	if (n < 0)
		return MPI_ERR_COUNT;
	long nb = 0;
	for (int i = 0; i < n; i++) {
		const struct bcs_type *o = bcs_type_get(olds[i]);
		if (!o)
			return MPI_ERR_TYPE;
		if (blens[i] < 0)
			return MPI_ERR_COUNT;
		/* copies of a contiguous type are one block (a type of more
		 * than INT_MAX bytes is one of a few) */
		nb += bcs_type_is_contig(o) ? blens[i] > 0 : blens[i] * o->nblocks;
	}
	int h = alloc_type();
	if (h < 0)
		return MPI_ERR_INTERN;
	struct bcs_block *v = malloc((size_t)(nb ? nb : 1) * sizeof(*v));
	if (!v)
		return MPI_ERR_INTERN;
	int nv = 0, basic = -1;
	long size = 0, nelem = 0, lb = 0, ub = 0, align = 1;
	bool any = false;
	for (int i = 0; i < n; i++) {
		const struct bcs_type *o = bcs_type_get(olds[i]);
		if (bcs_type_is_contig(o) && blens[i] > 0)
			add_block(v, &nv, disps[i], blens[i] * o->size, o->blocks[0].basic);
		for (long k = 0; k < blens[i] && !bcs_type_is_contig(o); k++)
			for (int b = 0; b < o->nblocks; b++)
				add_block(v, &nv, disps[i] + k * o->extent + o->blocks[b].off,
					  o->blocks[b].len, o->blocks[b].basic);
		if (blens[i] == 0)
			continue;
		size += blens[i] * o->size;
		nelem += blens[i] * o->nelem;
		if (o->size)
			basic = basic == -1 || basic == o->basic ? o->basic : 0;
		if (o->align > align)
			align = o->align;
		/* the typemap's bounds (MPI-3.1 §4.1): copy k of old lies at
		 * disp + k * extent(old), k < blen, and spans [lb, lb + extent]
		 * of it; a negative extent (a resized type) puts the last copy
		 * lowest and the first highest */
		long run = (blens[i] - 1) * o->extent;
		long lo = disps[i] + o->lb + (run < 0 ? run : 0);
		long hi = disps[i] + o->lb + o->extent + (run > 0 ? run : 0);
		if (!any || lo < lb)
			lb = lo;
		if (!any || hi > ub)
			ub = hi;
		any = true;
	}
	/* merged blocks: a contiguous run of many items is one block */
	if (nv < nb) {
		struct bcs_block *w = realloc(v, (size_t)(nv ? nv : 1) * sizeof(*v));
		if (w)
			v = w;
	}
	long extent = ub - lb;
	/* a struct's extent rounds up to its strictest member's alignment, so an
	 * array of such structs has the C layout */
	if (pad && extent > 0 && extent % align)
		extent += align - extent % align;
	struct bcs_type *t = &types[h];
	memset(t, 0, sizeof(*t));
	t->used = 1;
	t->size = size;
	t->lb = lb;
	t->extent = extent;
	t->align = align;
	t->basic = basic == -1 ? n ? bcs_type_get(olds[0])->basic : MPI_BYTE : basic;
	t->nelem = nelem;
	t->nblocks = nv;
	t->blocks = v;
	set_true(t);
	*newtype = h;
	return 0;
}

/* The regular constructors: count blocks of blen items of old at byte
 * displacements first + i * step (step in bytes). */
static int regular(long count, long blen, long step, int old, int *newtype)
{
	if (count < 0 || blen < 0)
		return MPI_ERR_COUNT;
	if (!bcs_type_get(old))
		return MPI_ERR_TYPE;
	long *bl = malloc((size_t)(count ? count : 1) * sizeof(long));
	long *d = malloc((size_t)(count ? count : 1) * sizeof(long));
	int *o = malloc((size_t)(count ? count : 1) * sizeof(int));
	int rc = MPI_ERR_INTERN;
	if (bl && d && o) {
		for (long i = 0; i < count; i++) {
			bl[i] = blen;
			d[i] = i * step;
			o[i] = old;
		}
		rc = bcs_type_build((int)count, bl, d, o, 0, newtype);
	}
	free(bl);
	free(d);
	free(o);
	return rc;
}

int bcs_type_contiguous(int count, int old, int *newtype)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	return regular(1, count, 0, old, newtype);
}

int bcs_type_vector(int count, int blocklen, int stride, int old, int *newtype)
{
	const struct bcs_type *o = bcs_type_get(old);
	if (!o)
		return MPI_ERR_TYPE;
	return regular(count, blocklen, (long)stride * o->extent, old, newtype);
}

int bcs_type_hvector(int count, int blocklen, long stride, int old, int *newtype)
{
	return regular(count, blocklen, stride, old, newtype);
}

int bcs_type_indexed(int count, const int *blens, const long *disps, int disp_unit_bytes,
		     int old, int *newtype)
{
	const struct bcs_type *o = bcs_type_get(old);
	if (!o)
		return MPI_ERR_TYPE;
	if (count < 0)
		return MPI_ERR_COUNT;
	size_t m = (size_t)(count ? count : 1);
	long *bl = malloc(m * sizeof(long)), *d = malloc(m * sizeof(long));
	int *ol = malloc(m * sizeof(int));
	int rc = MPI_ERR_INTERN;
	if (bl && d && ol) {
		for (int i = 0; i < count; i++) {
			bl[i] = blens[i];
			d[i] = disp_unit_bytes ? disps[i] : disps[i] * o->extent;
			ol[i] = old;
		}
		rc = bcs_type_build(count, bl, d, ol, 0, newtype);
	}
	free(bl);
	free(d);
	free(ol);
	return rc;
}

int bcs_type_resized(int old, long lb, long extent, int *newtype)
{
	const struct bcs_type *o = bcs_type_get(old);
	if (!o)
		return MPI_ERR_TYPE;
	long bl = 1, d = 0;
	int rc = bcs_type_build(1, &bl, &d, &old, 0, newtype);
	if (rc)
		return rc;
	struct bcs_type *t = &types[*newtype];
	t->lb = lb;
	t->extent = extent;
	return 0;
}

int bcs_type_dup(int old, int *newtype)
{
	const struct bcs_type *o = bcs_type_get(old);
	if (!o)
		return MPI_ERR_TYPE;
	long lb = o->lb, ext = o->extent;
	int rc = bcs_type_resized(old, lb, ext, newtype);
	if (!rc)
		types[*newtype].align = o->align;
	return rc;
}

static int pair_value(int b);

/* basic elements in len bytes of a block of basic type b (-1: not a whole
 * number): a pair type's value and int count one each, as MPI_Get_elements
 * counts them (a block may hold a pair's value or its int alone) */
static long block_elements(int b, long len)
{
	long es = bcs_basic_size(b);
	if (es <= 0)
		return -1;
	if (!pair_value(b))
		return len % es ? -1 : len / es;
	long r = len % es, vn = bcs_basic_size(pair_value(b));
	if (r && r != vn && r != (long)sizeof(int))
		return -1;
	return len / es * 2 + (r ? 1 : 0);
}

long bcs_type_elements(const struct bcs_type *t, long bytes)
{
	if (t->size == 0)
		return 0;
	long per = 0, e, rem = bytes % t->size;
	for (int k = 0; k < t->nblocks; k++)
		per += block_elements(t->blocks[k].basic, t->blocks[k].len);
	e = bytes / t->size * per;
	for (int k = 0; k < t->nblocks && rem > 0; k++) {
		long len = t->blocks[k].len < rem ? t->blocks[k].len : rem;
		long n = block_elements(t->blocks[k].basic, len);
		if (n < 0)
			return -1;
		e += n;
		rem -= len;
	}
	return e;
}

int bcs_type_free(int *h)
{
	struct bcs_type *t = bcs_type_get(*h);
	if (!t || t->predefined)
		return MPI_ERR_TYPE;
	if (t->refs)
		t->freed = 1;
	else
		type_destroy(t);
	*h = MPI_DATATYPE_NULL;
	return 0;
}

void bcs_pack(const struct bcs_type *t, const void *buf, long count, void *out)
{
	const char *b = buf;
	char *o = out;
	if (bcs_type_is_contig(t)) {
		memcpy(o, b, (size_t)(count * t->size));
		return;
	}
	for (long i = 0; i < count; i++)
		for (int k = 0; k < t->nblocks; k++) {
			memcpy(o, b + i * t->extent + t->blocks[k].off, (size_t)t->blocks[k].len);
			o += t->blocks[k].len;
		}
}

void bcs_unpack(const struct bcs_type *t, const void *in, long bytes, void *buf)
{
	const char *p = in;
	char *b = buf;
	if (bcs_type_is_contig(t)) {
		memcpy(b, p, (size_t)bytes);
		return;
	}
	for (long i = 0; bytes > 0; i++)
		for (int k = 0; k < t->nblocks && bytes > 0; k++) {
			long n = t->blocks[k].len < bytes ? t->blocks[k].len : bytes;
			memcpy(b + i * t->extent + t->blocks[k].off, p, (size_t)n);
			p += n;
			bytes -= n;
		}
}

/* ---- predefined operators */

enum tclass { C_NONE, C_INT, C_FLOAT, C_BYTE, C_BOOL, C_PAIR, C_COMPLEX };

static enum tclass tclass(int b)
{
	switch (b) {
	case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_UNSIGNED_CHAR: case MPI_WCHAR:
	case MPI_SHORT: case MPI_UNSIGNED_SHORT: case MPI_INT: case MPI_UNSIGNED: case MPI_LONG:
	case MPI_UNSIGNED_LONG: case MPI_LONG_LONG_INT: case MPI_UNSIGNED_LONG_LONG:
	case MPI_INT8_T: case MPI_INT16_T: case MPI_INT32_T: case MPI_INT64_T: case MPI_UINT8_T:
	case MPI_UINT16_T: case MPI_UINT32_T: case MPI_UINT64_T: case MPI_AINT: case MPI_OFFSET:
	case MPI_COUNT:
		return C_INT;
	case MPI_FLOAT: case MPI_DOUBLE: case MPI_LONG_DOUBLE:
		return C_FLOAT;
	case MPI_BYTE:
		return C_BYTE;
	case MPI_C_FLOAT_COMPLEX: case MPI_C_DOUBLE_COMPLEX: case MPI_C_LONG_DOUBLE_COMPLEX:
		return C_COMPLEX;
	case MPI_C_BOOL:
		return C_BOOL;
	case MPI_FLOAT_INT: case MPI_DOUBLE_INT: case MPI_LONG_INT: case MPI_2INT:
	case MPI_SHORT_INT: case MPI_LONG_DOUBLE_INT:
		return C_PAIR;
	}
	return C_NONE;
}

bool bcs_op_valid(int op, int basic)
{
	enum tclass c = tclass(basic);
	switch (op) {
	case MPI_MAX: case MPI_MIN:
		return c == C_INT || c == C_FLOAT;
	case MPI_SUM: case MPI_PROD:
		return c == C_INT || c == C_FLOAT || c == C_COMPLEX;
	case MPI_LAND: case MPI_LOR: case MPI_LXOR:
		return c == C_INT || c == C_BOOL;
	case MPI_BAND: case MPI_BOR: case MPI_BXOR:
		return c == C_INT || c == C_BYTE;
	case MPI_MAXLOC: case MPI_MINLOC:
		return c == C_PAIR;
	}
	return false;
}

#define ARITH(T)                                                                        \
	do {                                                                            \
		for (long i = 0; i < n; i++) {                                          \
			T a, b;                                                         \
			memcpy(&a, (const char *)in + i * (long)sizeof(T), sizeof(T));  \
			memcpy(&b, (char *)inout + i * (long)sizeof(T), sizeof(T));      \
			T r = b;                                                        \
			switch (op) {                                                   \
			case MPI_MAX: r = a > b ? a : b; break;                         \
			case MPI_MIN: r = a < b ? a : b; break;                         \
			case MPI_SUM: r = a + b; break;                                 \
			case MPI_PROD: r = a * b; break;                                \
			case MPI_LAND: r = (a && b); break;                             \
			case MPI_LOR: r = (a || b); break;                              \
			case MPI_LXOR: r = (!a != !b); break;                           \
			}                                                               \
			memcpy((char *)inout + i * (long)sizeof(T), &r, sizeof(T));      \
		}                                                                       \
	} while (0)

#define BITS(T)                                                                         \
	do {                                                                            \
		for (long i = 0; i < n; i++) {                                          \
			T a, b;                                                         \
			memcpy(&a, (const char *)in + i * (long)sizeof(T), sizeof(T));  \
			memcpy(&b, (char *)inout + i * (long)sizeof(T), sizeof(T));      \
			T r = op == MPI_BAND ? (T)(a & b) : op == MPI_BOR ? (T)(a | b)  \
							  : (T)(a ^ b);          \
			memcpy((char *)inout + i * (long)sizeof(T), &r, sizeof(T));      \
		}                                                                       \
	} while (0)

#define INTOP(T)                                                                        \
	do {                                                                            \
		if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)                  \
			BITS(T);                                                        \
		else                                                                    \
			ARITH(T);                                                       \
	} while (0)

/* MAXLOC/MINLOC on packed (value, int) pairs: the better value wins; on a
 * tie, the smaller index (MPI-3 §5.9.4). */
#define LOC(T)                                                                          \
	do {                                                                            \
		const long es = (long)sizeof(T) + (long)sizeof(int);                    \
		for (long i = 0; i < n; i++) {                                          \
			T a, b;                                                         \
			int ia, ib;                                                     \
			const char *pa = (const char *)in + i * es;                     \
			char *pb = (char *)inout + i * es;                              \
			memcpy(&a, pa, sizeof(T));                                      \
			memcpy(&ia, pa + sizeof(T), sizeof(int));                       \
			memcpy(&b, pb, sizeof(T));                                      \
			memcpy(&ib, pb + sizeof(T), sizeof(int));                       \
			bool take = op == MPI_MAXLOC ? (a > b || (a == b && ia < ib))   \
						     : (a < b || (a == b && ia < ib));  \
			if (take) {                                                     \
				memcpy(pb, &a, sizeof(T));                              \
				memcpy(pb + sizeof(T), &ia, sizeof(int));               \
			}                                                               \
		}                                                                       \
	} while (0)

/* complex: SUM and PROD only (MPI-3 §5.9.2) */
#define CPX(T)                                                                          \
	do {                                                                            \
		for (long i = 0; i < n; i++) {                                          \
			T a, b;                                                         \
			memcpy(&a, (const char *)in + i * (long)sizeof(T), sizeof(T));  \
			memcpy(&b, (char *)inout + i * (long)sizeof(T), sizeof(T));      \
			T r = op == MPI_SUM ? a + b : a * b;                            \
			memcpy((char *)inout + i * (long)sizeof(T), &r, sizeof(T));      \
		}                                                                       \
	} while (0)

int bcs_op_apply(int op, int basic, const void *in, void *inout, long n)
{
	if (!bcs_op_valid(op, basic))
		return MPI_ERR_OP;
	switch (basic) {
	case MPI_CHAR: INTOP(char); break;
	case MPI_SIGNED_CHAR: case MPI_INT8_T: INTOP(int8_t); break;
	case MPI_UNSIGNED_CHAR: case MPI_UINT8_T: case MPI_BYTE: INTOP(uint8_t); break;
	case MPI_WCHAR: INTOP(wchar_t); break;
	case MPI_SHORT: case MPI_INT16_T: INTOP(int16_t); break;
	case MPI_UNSIGNED_SHORT: case MPI_UINT16_T: INTOP(uint16_t); break;
	case MPI_INT: case MPI_INT32_T: INTOP(int32_t); break;
	case MPI_UNSIGNED: case MPI_UINT32_T: INTOP(uint32_t); break;
	case MPI_LONG: case MPI_AINT: INTOP(long); break;
	case MPI_UNSIGNED_LONG: INTOP(unsigned long); break;
	case MPI_LONG_LONG_INT: case MPI_INT64_T: case MPI_OFFSET: case MPI_COUNT:
		INTOP(int64_t); break;
	case MPI_UNSIGNED_LONG_LONG: case MPI_UINT64_T: INTOP(uint64_t); break;
	case MPI_C_BOOL: ARITH(unsigned char); break; /* _Bool is one byte here */
	case MPI_FLOAT: ARITH(float); break;
	case MPI_DOUBLE: ARITH(double); break;
	case MPI_LONG_DOUBLE: ARITH(long double); break;
	case MPI_FLOAT_INT: LOC(float); break;
	case MPI_DOUBLE_INT: LOC(double); break;
	case MPI_LONG_INT: LOC(long); break;
	case MPI_2INT: LOC(int); break;
	case MPI_SHORT_INT: LOC(short); break;
	case MPI_LONG_DOUBLE_INT: LOC(long double); break;
	case MPI_C_FLOAT_COMPLEX: CPX(float _Complex); break;
	case MPI_C_DOUBLE_COMPLEX: CPX(double _Complex); break;
	case MPI_C_LONG_DOUBLE_COMPLEX: CPX(long double _Complex); break;
	default: return MPI_ERR_OP;
	}
	return 0;
}

/* ---- external32 (MPI_Pack_external): every basic element big-endian, of
 * MPI's sizes (long and unsigned long 4 bytes, wchar_t 2, long double 16),
 * as MPICH packs it; the pair types as their value, then the int */

static int pair_value(int b)
{
	switch (b) {
	case MPI_FLOAT_INT: return MPI_FLOAT;
	case MPI_DOUBLE_INT: return MPI_DOUBLE;
	case MPI_LONG_INT: return MPI_LONG;
	case MPI_2INT: return MPI_INT;
	case MPI_SHORT_INT: return MPI_SHORT;
	case MPI_LONG_DOUBLE_INT: return MPI_LONG_DOUBLE;
	}
	return 0;
}

static long ext32_basic(int b)
{
	switch (b) {
	case MPI_WCHAR: return 2;
	case MPI_LONG: case MPI_UNSIGNED_LONG: return 4;
	case MPI_LONG_DOUBLE: return 16;
	case MPI_C_BOOL: return 1;
	case MPI_C_LONG_DOUBLE_COMPLEX: return 32;
	}
	return bcs_basic_size(b);
}

static bool signed_int(int b)
{
	switch (b) {
	case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_SHORT: case MPI_INT: case MPI_LONG:
	case MPI_LONG_LONG_INT: case MPI_INT8_T: case MPI_INT16_T: case MPI_INT32_T:
	case MPI_INT64_T: case MPI_AINT: case MPI_OFFSET: case MPI_COUNT:
		return true;
	}
	return false;
}

/* the native byte of significance s (0: the least) of an n-byte value */
static unsigned char *sig(unsigned char *nat, long n, long s)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return nat + n - 1 - s;
#else
	(void)n;
	return nat + s;
#endif
}

/* one value: n native bytes to e big-endian bytes (out), or back, an
 * integer narrowed or sign-extended where the sizes differ */
static void conv(unsigned char *nat, long n, unsigned char *ext, long e, bool sgn, bool out)
{
	if (out) {
		for (long i = 0; i < e; i++)
			ext[i] = i >= e - n ? *sig(nat, n, e - 1 - i) : 0;
		return;
	}
	unsigned char fill = sgn && (ext[0] & 0x80) ? 0xff : 0;
	for (long s = 0; s < n; s++)
		*sig(nat, n, s) = s < e ? ext[e - 1 - s] : fill;
}

/* a long double as IEEE binary128, big-endian, as external32 has it (and
 * MPICH, through __float128); the 80-bit value converts exactly */
static void conv_ld(unsigned char *nat, unsigned char *ext, bool out)
{
	long double ld;
	__float128 q;
	if (out) {
		memcpy(&ld, nat, sizeof(ld));
		q = (__float128)ld;
		conv((unsigned char *)&q, sizeof(q), ext, 16, false, true);
	} else {
		conv((unsigned char *)&q, sizeof(q), ext, 16, false, false);
		ld = (long double)q;
		memcpy(nat, &ld, sizeof(ld));
	}
}

static void conv_basic(int b, unsigned char *nat, unsigned char *ext, bool out)
{
	long n = bcs_basic_size(b), e = ext32_basic(b);
	if (b == MPI_LONG_DOUBLE) {
		conv_ld(nat, ext, out);
	} else if (b == MPI_C_LONG_DOUBLE_COMPLEX) {
		conv_ld(nat, ext, out);
		conv_ld(nat + n / 2, ext + e / 2, out);
	} else if (b == MPI_C_BOOL && out) {
		*ext = *nat != 0; /* a bool travels as 0 or 1 */
	} else if (b == MPI_C_FLOAT_COMPLEX || b == MPI_C_DOUBLE_COMPLEX) {
		conv(nat, n / 2, ext, e / 2, false, out);
		conv(nat + n / 2, n / 2, ext + e / 2, e / 2, false, out);
	} else {
		conv(nat, n, ext, e, signed_int(b), out);
	}
}

/* external bytes of len packed bytes of basic b (a pair's block may hold
 * only its value or only its int) */
static long ext32_len(int b, long len)
{
	int v = pair_value(b);
	if (!v)
		return len / bcs_basic_size(b) * ext32_basic(b);
	long n = bcs_basic_size(b), vn = bcs_basic_size(v), rem = len % n;
	return len / n * (ext32_basic(v) + 4) + (rem == vn ? ext32_basic(v) : rem);
}

long bcs_ext32_size(const struct bcs_type *t, long count)
{
	long per = 0;
	for (int k = 0; k < t->nblocks; k++)
		per += ext32_len(t->blocks[k].basic, t->blocks[k].len);
	return per * count;
}

/* a run of len packed bytes of basic b */
static void conv_run(int b, unsigned char *nat, long len, unsigned char *ext, bool out)
{
	int v = pair_value(b);
	long n = v ? bcs_basic_size(v) : bcs_basic_size(b), e = v ? ext32_basic(v) : ext32_basic(b);
	while (len > 0) {
		if (v && len != 4) { /* a pair's value (4 bytes left: its int alone) */
			conv_basic(v, nat, ext, out);
			nat += n, ext += e, len -= n;
		}
		if (v && len > 0) {
			conv_basic(MPI_INT, nat, ext, out);
			nat += 4, ext += 4, len -= 4;
		} else if (!v) {
			conv_basic(b, nat, ext, out);
			nat += n, ext += e, len -= n;
		}
	}
}

void bcs_ext32(const struct bcs_type *t, long count, unsigned char *packed, unsigned char *ext,
	       bool out)
{
	/* runs of one basic type lie back to back in the packed bytes */
	int b = 0;
	long len = 0;
	for (long i = 0; i < count; i++) {
		for (int k = 0; k < t->nblocks; k++) {
			const struct bcs_block *bl = &t->blocks[k];
			if (bl->basic != b && len) {
				conv_run(b, packed, len, ext, out);
				ext += ext32_len(b, len);
				packed += len;
				len = 0;
			}
			b = bl->basic;
			len += bl->len;
		}
	}
	if (len)
		conv_run(b, packed, len, ext, out);
}
