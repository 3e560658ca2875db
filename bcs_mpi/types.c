/* BCS-MPI derived datatypes, counts in them, addresses and MPI_Pack: the
 * MPI calls over bcs_mpi/abi/dtype (flat block lists). */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

#define TYPE_CALL(fn, expr)                                                    \
	do {                                                                   \
		bcs_types_init();                                              \
		return bcs_err(MPI_COMM_WORLD, (expr), fn);                    \
	} while (0)

/* MPI_Type_get_contents: a derived type's constructor arguments, by handle.
 * The derived types among them are held (bcs_type_hold), so that they stay
 * while this type does whatever the user frees; extra counts the references
 * to this handle that get_contents handed out beyond the user's own (each
 * MPI_Type_free takes one back before the handle is freed). */
struct targs {
	int *ints;
	MPI_Aint *addrs;
	MPI_Datatype *types;
	int nd, extra;
};
static struct targs targs[BCS_TYPE_MAX];

static void targs_gone(MPI_Datatype h);

/* lets go of h's arguments (their held types freed if nothing else holds
 * them) */
static void targs_drop(MPI_Datatype h)
{
	struct targs a = targs[h];
	targs[h] = (struct targs){0};
	for (int i = 0; i < a.nd; i++) {
		bcs_type_release(a.types[i]);
		targs_gone(a.types[i]);
	}
	free(a.ints);
	free(a.addrs);
	free(a.types);
}

/* h's arguments go once its slot has (a held type outlives MPI_Type_free) */
static void targs_gone(MPI_Datatype h)
{
	if (h > 0 && h < BCS_TYPE_MAX && !bcs_type_held(h))
		targs_drop(h);
}

/* the arguments of a constructor call, as MPI-3.1 §4.1.13 lists them */
struct env {
	int combiner, ni, na, nd;
	const int *ints;
	const MPI_Aint *addrs;
	const MPI_Datatype *types;
};

static void *dupmem(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);
	if (d && n)
		memcpy(d, p, n);
	return d;
}

static int targs_keep(MPI_Datatype h, const struct env *e)
{
	struct targs *a = &targs[h];
	if (a->ints || a->addrs || a->types)
		targs_drop(h); /* a type in this slot before, gone without MPI_Type_free */
	a->ints = dupmem(e->ints, (size_t)e->ni * sizeof(int));
	a->addrs = dupmem(e->addrs, (size_t)e->na * sizeof(MPI_Aint));
	a->types = malloc((size_t)(e->nd ? e->nd : 1) * sizeof(MPI_Datatype));
	if (!a->ints || !a->addrs || !a->types) {
		targs_drop(h);
		return MPI_ERR_INTERN;
	}
	/* predefined ones need no hold (bcs_type_hold takes none for them) */
	for (int i = 0; i < e->nd; i++) {
		bcs_type_hold(e->types[i]);
		a->types[a->nd++] = e->types[i];
	}
	return MPI_SUCCESS;
}

/* a new type's envelope (MPI-3.1 §4.1.13): its constructor and the
 * integers, addresses and datatypes it took */
static int made(int rc, MPI_Datatype *newtype, const struct env *e)
{
	if (rc)
		return rc;
	struct bcs_type *t = bcs_type_get(*newtype);
	t->combiner = e->combiner;
	t->ni = e->ni;
	t->na = e->na;
	t->nd = e->nd;
	rc = targs_keep(*newtype, e);
	if (rc)
		bcs_type_free(newtype);
	return rc;
}

/* ni integers from parts: pairs of (const int *, count), NULL ended; the
 * result freed by the caller (NULL when out of memory) */
static int *ints_cat(int ni, ...)
{
	int *v = malloc((size_t)(ni ? ni : 1) * sizeof(int)), k = 0;
	va_list ap;
	va_start(ap, ni);
	for (const int *p; v && (p = va_arg(ap, const int *));) {
		int n = va_arg(ap, int);
		memcpy(v + k, p, (size_t)n * sizeof(int));
		k += n;
	}
	va_end(ap);
	return v;
}

/* made() with ints from ints_cat (v NULL: out of memory) */
static int made_v(int rc, MPI_Datatype *newtype, struct env *e, int *v)
{
	if (!rc && !v) {
		bcs_type_free(newtype);
		rc = MPI_ERR_INTERN;
	}
	e->ints = v;
	rc = made(rc, newtype, e);
	free(v);
	return rc;
}

/* NULL ends ints_cat's parts */
#define END ((const int *)NULL)

int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_CONTIGUOUS, 1, 0, 1, (int[]){count}, NULL, &old};
	TYPE_CALL("MPI_Type_contiguous", made(bcs_type_contiguous(count, old, newtype), newtype, &e));
}

int MPI_Type_vector(int count, int blocklen, int stride, MPI_Datatype old, MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_VECTOR, 3, 0, 1, (int[]){count, blocklen, stride}, NULL, &old};
	TYPE_CALL("MPI_Type_vector", made(bcs_type_vector(count, blocklen, stride, old, newtype),
					  newtype, &e));
}

int MPI_Type_create_hvector(int count, int blocklen, MPI_Aint stride, MPI_Datatype old,
			    MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_HVECTOR, 2, 1, 1, (int[]){count, blocklen}, &stride, &old};
	TYPE_CALL("MPI_Type_create_hvector",
		  made(bcs_type_hvector(count, blocklen, (long)stride, old, newtype), newtype, &e));
}

/* displacements widened to long; blens NULL for the _block forms */
static int indexed(int count, const int *blens, int blen, const int *idispls,
		   const MPI_Aint *adispls, MPI_Datatype old, MPI_Datatype *newtype)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	size_t m = (size_t)(count ? count : 1);
	long *d = malloc(m * sizeof(long));
	int *bl = malloc(m * sizeof(int));
	if (!d || !bl) {
		free(d);
		free(bl);
		return MPI_ERR_INTERN;
	}
	for (int i = 0; i < count; i++) {
		d[i] = idispls ? (long)idispls[i] : (long)adispls[i];
		bl[i] = blens ? blens[i] : blen;
	}
	int rc = bcs_type_indexed(count, bl, d, idispls == NULL, old, newtype);
	free(d);
	free(bl);
	return rc;
}

int MPI_Type_indexed(int count, const int blens[], const int displs[], MPI_Datatype old,
		     MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_INDEXED, 2 * count + 1, 0, 1, NULL, NULL, &old};
	int *v = count < 0 ? NULL : ints_cat(e.ni, &count, 1, blens, count, displs, count, END);
	TYPE_CALL("MPI_Type_indexed",
		  made_v(indexed(count, blens, 0, displs, NULL, old, newtype), newtype, &e, v));
}

int MPI_Type_create_indexed_block(int count, int blen, const int displs[], MPI_Datatype old,
				  MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_INDEXED_BLOCK, count + 2, 0, 1, NULL, NULL, &old};
	int *v = count < 0 ? NULL : ints_cat(e.ni, &count, 1, &blen, 1, displs, count, END);
	TYPE_CALL("MPI_Type_create_indexed_block",
		  made_v(indexed(count, NULL, blen, displs, NULL, old, newtype), newtype, &e, v));
}

int MPI_Type_create_hindexed(int count, const int blens[], const MPI_Aint displs[],
			     MPI_Datatype old, MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_HINDEXED, count + 1, count, 1, NULL, displs, &old};
	int *v = count < 0 ? NULL : ints_cat(e.ni, &count, 1, blens, count, END);
	TYPE_CALL("MPI_Type_create_hindexed",
		  made_v(indexed(count, blens, 0, NULL, displs, old, newtype), newtype, &e, v));
}

int MPI_Type_create_hindexed_block(int count, int blen, const MPI_Aint displs[],
				   MPI_Datatype old, MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_HINDEXED_BLOCK, 2, count, 1, (int[]){count, blen}, displs, &old};
	TYPE_CALL("MPI_Type_create_hindexed_block",
		  made(indexed(count, NULL, blen, NULL, displs, old, newtype), newtype, &e));
}

/* MPI-1's markers: the lowest MPI_LB and the highest MPI_UB displacement
 * are the struct's bounds (each bound the data's where there is none of its
 * marker), without the alignment padding */
static int type_struct(int count, const int blens[], const MPI_Aint displs[],
		       const MPI_Datatype types[], MPI_Datatype *newtype)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	size_t m = (size_t)(count ? count : 1);
	long *bl = malloc(m * sizeof(long)), *d = malloc(m * sizeof(long));
	int *tv = malloc(m * sizeof(int)), n = 0, rc = MPI_ERR_INTERN;
	long lbm = 0, ubm = 0;
	bool has_lb = false, has_ub = false;
	if (bl && d && tv) {
		for (int i = 0; i < count; i++) {
			if (types[i] == MPI_LB) {
				lbm = has_lb && lbm < displs[i] ? lbm : (long)displs[i];
				has_lb = true;
			} else if (types[i] == MPI_UB) {
				ubm = has_ub && ubm > displs[i] ? ubm : (long)displs[i];
				has_ub = true;
			} else {
				bl[n] = blens[i];
				d[n] = (long)displs[i];
				tv[n++] = types[i];
			}
		}
		rc = bcs_type_build(n, bl, d, tv, !has_ub, newtype);
	}
	if (!rc && (has_lb || has_ub)) {
		struct bcs_type *t = bcs_type_get(*newtype);
		long lb = has_lb ? lbm : t->lb, ub = has_ub ? ubm : t->lb + t->extent;
		t->lb = lb;
		t->extent = ub - lb;
	}
	free(bl);
	free(d);
	free(tv);
	return rc;
}

int MPI_Type_create_struct(int count, const int blens[], const MPI_Aint displs[],
			   const MPI_Datatype types[], MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_STRUCT, count + 1, count, count, NULL, displs, types};
	int *v = count < 0 ? NULL : ints_cat(e.ni, &count, 1, blens, count, END);
	TYPE_CALL("MPI_Type_create_struct",
		  made_v(type_struct(count, blens, displs, types, newtype), newtype, &e, v));
}

int MPI_Type_create_resized(MPI_Datatype old, MPI_Aint lb, MPI_Aint extent,
			    MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_RESIZED, 0, 2, 1, NULL, (MPI_Aint[]){lb, extent}, &old};
	TYPE_CALL("MPI_Type_create_resized",
		  made(bcs_type_resized(old, (long)lb, (long)extent, newtype), newtype, &e));
}

/* MPI-1's names of these (deprecated, still in MPICH): the same types,
 * the same combiners, as MPI says of calls from C */
int MPI_Type_struct(int count, const int blens[], const MPI_Aint displs[],
		    const MPI_Datatype types[], MPI_Datatype *newtype)
{
	return MPI_Type_create_struct(count, blens, displs, types, newtype);
}

int MPI_Type_hvector(int count, int blocklen, MPI_Aint stride, MPI_Datatype old,
		     MPI_Datatype *newtype)
{
	return MPI_Type_create_hvector(count, blocklen, stride, old, newtype);
}

int MPI_Type_hindexed(int count, const int blens[], const MPI_Aint displs[], MPI_Datatype old,
		      MPI_Datatype *newtype)
{
	return MPI_Type_create_hindexed(count, blens, displs, old, newtype);
}

/* ---- subarrays and distributed arrays: one index list per dimension.
 * The type is built from the fastest-varying dimension out, each level a
 * byte-displaced list of the level inside it (typemap order: the array's
 * own), then resized to the whole array (lb 0), as MPI defines both. */

/* idx[d] holds cnt[d] indices of dimension d (0: slowest in C order) */
struct dims_sel {
	int n, order;
	const int *sizes;
	int *cnt;
	int **idx;
};

static int sel_type(const struct dims_sel *s, MPI_Datatype old, MPI_Datatype *newtype)
{
	struct bcs_type *ot = bcs_type_get(old);
	if (!ot)
		return MPI_ERR_TYPE;
	long stride = ot->extent, total = ot->extent;
	int cur = old, rc = MPI_SUCCESS;
	for (int k = 0; !rc && k < s->n; k++) {
		/* k-th fastest dimension */
		int d = s->order == MPI_ORDER_C ? s->n - 1 - k : k, m = s->cnt[d];
		long *disp = malloc((size_t)(m ? m : 1) * sizeof(long));
		int *one = malloc((size_t)(m ? m : 1) * sizeof(int)), next;
		if (!disp || !one)
			rc = MPI_ERR_INTERN;
		for (int i = 0; !rc && i < m; i++) {
			disp[i] = s->idx[d][i] * stride;
			one[i] = 1;
		}
		if (!rc)
			rc = bcs_type_indexed(m, one, disp, 1, cur, &next);
		free(disp);
		free(one);
		if (cur != old)
			bcs_type_free(&cur);
		if (!rc)
			cur = next;
		stride *= s->sizes[d];
		total *= s->sizes[d];
	}
	if (!rc) {
		rc = bcs_type_resized(cur, 0, total, newtype);
		if (cur != old)
			bcs_type_free(&cur);
	}
	return rc;
}

static void sel_free(struct dims_sel *s)
{
	for (int d = 0; s->idx && d < s->n; d++)
		free(s->idx[d]);
	free(s->idx);
	free(s->cnt);
}

static int sel_alloc(struct dims_sel *s, int n, int order, const int *sizes)
{
	*s = (struct dims_sel){.n = n, .order = order, .sizes = sizes};
	s->cnt = calloc((size_t)n, sizeof(int));
	s->idx = calloc((size_t)n, sizeof(int *));
	return s->cnt && s->idx ? MPI_SUCCESS : MPI_ERR_INTERN;
}

static int subarray(int n, const int sizes[], const int subsizes[], const int starts[],
		    int order, MPI_Datatype old, MPI_Datatype *newtype)
{
	if (n <= 0 || (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN))
		return MPI_ERR_ARG;
	for (int d = 0; d < n; d++)
		if (sizes[d] <= 0 || subsizes[d] <= 0 || subsizes[d] > sizes[d] || starts[d] < 0 ||
		    starts[d] > sizes[d] - subsizes[d])
			return MPI_ERR_ARG;
	struct dims_sel s;
	int rc = sel_alloc(&s, n, order, sizes);
	for (int d = 0; !rc && d < n; d++) {
		if (!(s.idx[d] = malloc((size_t)subsizes[d] * sizeof(int)))) {
			rc = MPI_ERR_INTERN;
			break;
		}
		s.cnt[d] = subsizes[d];
		for (int i = 0; i < subsizes[d]; i++)
			s.idx[d][i] = starts[d] + i;
	}
	if (!rc)
		rc = sel_type(&s, old, newtype);
	sel_free(&s);
	return rc;
}

int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[],
			     const int starts[], int order, MPI_Datatype old,
			     MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_SUBARRAY, 3 * ndims + 2, 0, 1, NULL, NULL, &old};
	int *v = ndims <= 0 ? NULL : ints_cat(e.ni, &ndims, 1, sizes, ndims, subsizes, ndims,
					      starts, ndims, &order, 1, END);
	TYPE_CALL("MPI_Type_create_subarray",
		  made_v(subarray(ndims, sizes, subsizes, starts, order, old, newtype), newtype, &e,
			 v));
}

/* the indices of a dimension of gsize that process p of np owns */
static int darray_dim(int gsize, int distrib, int darg, int np, int p, int **idx, int *cnt)
{
	int b;
	if (distrib == MPI_DISTRIBUTE_NONE) {
		b = gsize;
		np = 1;
		p = 0;
	} else if (distrib == MPI_DISTRIBUTE_BLOCK) {
		b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + np - 1) / np : darg;
		if (b <= 0 || (long)b * np < gsize)
			return MPI_ERR_ARG;
	} else if (distrib == MPI_DISTRIBUTE_CYCLIC) {
		b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
		if (b <= 0)
			return MPI_ERR_ARG;
	} else {
		return MPI_ERR_ARG;
	}
	int *v = malloc((size_t)(gsize ? gsize : 1) * sizeof(int)), n = 0;
	if (!v)
		return MPI_ERR_INTERN;
	/* blocks of b, dealt round the processes */
	for (long start = (long)p * b; start < gsize; start += (long)np * b)
		for (long i = start; i < start + b && i < gsize; i++)
			v[n++] = (int)i;
	*idx = v;
	*cnt = n;
	return MPI_SUCCESS;
}

static int darray(int size, int rank, int n, const int gsizes[], const int distribs[],
		  const int dargs[], const int psizes[], int order, MPI_Datatype old,
		  MPI_Datatype *newtype)
{
	if (n <= 0 || size <= 0 || rank < 0 || rank >= size ||
	    (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN))
		return MPI_ERR_ARG;
	long procs = 1;
	for (int d = 0; d < n; d++) {
		if (gsizes[d] <= 0 || psizes[d] <= 0 ||
		    (distribs[d] == MPI_DISTRIBUTE_NONE && psizes[d] != 1))
			return MPI_ERR_ARG;
		procs *= psizes[d];
	}
	if (procs != size)
		return MPI_ERR_ARG;
	struct dims_sel s;
	int rc = sel_alloc(&s, n, order, gsizes);
	/* the process grid is row-major whatever the array's order */
	for (int d = n - 1, r = rank; !rc && d >= 0; d--) {
		rc = darray_dim(gsizes[d], distribs[d], dargs[d], psizes[d], r % psizes[d],
				&s.idx[d], &s.cnt[d]);
		r /= psizes[d];
	}
	if (!rc)
		rc = sel_type(&s, old, newtype);
	sel_free(&s);
	return rc;
}

int MPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[],
			   const int distribs[], const int dargs[], const int psizes[], int order,
			   MPI_Datatype old, MPI_Datatype *newtype)
{
	struct env e = {MPI_COMBINER_DARRAY, 4 * ndims + 4, 0, 1, NULL, NULL, &old};
	int *v = ndims <= 0 ? NULL : ints_cat(e.ni, (int[]){size, rank, ndims}, 3, gsizes, ndims,
					      distribs, ndims, dargs, ndims, psizes, ndims,
					      &order, 1, END);
	TYPE_CALL("MPI_Type_create_darray",
		  made_v(darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old,
				newtype), newtype, &e, v));
}

int MPI_Type_dup(MPI_Datatype old, MPI_Datatype *newtype)
{
	bcs_types_init();
	struct env e = {MPI_COMBINER_DUP, 0, 0, 1, NULL, NULL, &old};
	int rc = made(bcs_type_dup(old, newtype), newtype, &e);
	if (!rc) {
		bcs_type_get(*newtype)->committed = bcs_type_get(old)->committed;
		rc = bcs_attr_copy(BCS_ATTR_TYPE, old, *newtype);
		if (rc)
			MPI_Type_free(newtype);
	}
	return bcs_err(MPI_COMM_WORLD, rc, "MPI_Type_dup");
}

int MPI_Type_commit(MPI_Datatype *dt)
{
	bcs_types_init();
	struct bcs_type *t = bcs_type_get(*dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_commit");
	t->committed = 1;
	return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *dt)
{
	bcs_types_init();
	struct bcs_type *t = bcs_type_get(*dt);
	MPI_Datatype h = *dt;
	if (t && !t->predefined && targs[h].extra > 0) {
		/* a reference MPI_Type_get_contents handed out */
		targs[h].extra--;
		bcs_type_release(h);
		*dt = MPI_DATATYPE_NULL;
		return MPI_SUCCESS;
	}
	int rc = t && !t->predefined ? bcs_attr_free_all(BCS_ATTR_TYPE, *dt) : MPI_SUCCESS;
	if (!rc)
		rc = bcs_type_free(dt);
	if (!rc)
		targs_gone(h);
	TYPE_CALL("MPI_Type_free", rc);
}

static struct bcs_type *type_of(MPI_Datatype dt)
{
	bcs_types_init();
	return bcs_type_get(dt);
}

int MPI_Type_size(MPI_Datatype dt, int *size)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_size");
	/* a type of more bytes than an int holds: MPI_Type_size_c's */
	*size = t->size > INT_MAX ? MPI_UNDEFINED : (int)t->size;
	return MPI_SUCCESS;
}

int MPI_Type_size_c(MPI_Datatype dt, MPI_Count *size)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_size_c");
	*size = t->size;
	return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype dt, MPI_Aint *lb, MPI_Aint *extent)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_extent");
	*lb = t->lb;
	*extent = t->extent;
	return MPI_SUCCESS;
}

/* MPI-1's forms (removed in MPI-3, still in MPICH) */
int MPI_Type_extent(MPI_Datatype dt, MPI_Aint *extent)
{
	MPI_Aint lb;
	return MPI_Type_get_extent(dt, &lb, extent);
}

int MPI_Type_lb(MPI_Datatype dt, MPI_Aint *displacement)
{
	MPI_Aint extent;
	return MPI_Type_get_extent(dt, displacement, &extent);
}

int MPI_Type_ub(MPI_Datatype dt, MPI_Aint *displacement)
{
	MPI_Aint lb, extent;
	int rc = MPI_Type_get_extent(dt, &lb, &extent);
	if (rc == MPI_SUCCESS)
		*displacement = lb + extent;
	return rc;
}

int MPI_Address(const void *location, MPI_Aint *address)
{
	return MPI_Get_address(location, address);
}

int MPI_Type_get_true_extent(MPI_Datatype dt, MPI_Aint *lb, MPI_Aint *extent)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_true_extent");
	*lb = t->true_lb;
	*extent = t->true_ub - t->true_lb;
	return MPI_SUCCESS;
}

int MPI_Type_get_envelope(MPI_Datatype dt, int *ni, int *na, int *nd, int *combiner)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_envelope");
	*ni = t->ni;
	*na = t->na;
	*nd = t->nd;
	*combiner = t->predefined ? MPI_COMBINER_NAMED : t->combiner;
	return MPI_SUCCESS;
}

int MPI_Type_get_contents(MPI_Datatype dt, int max_ints, int max_addrs, int max_types,
			  int ints[], MPI_Aint addrs[], MPI_Datatype types[])
{
	struct bcs_type *t = type_of(dt);
	if (!t || t->predefined)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_contents");
	const struct targs *a = &targs[dt];
	if (max_ints < t->ni || max_addrs < t->na || max_types < t->nd)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_get_contents");
	memcpy(ints, a->ints, (size_t)t->ni * sizeof(int));
	memcpy(addrs, a->addrs, (size_t)t->na * sizeof(MPI_Aint));
	for (int i = 0; i < t->nd; i++) {
		/* a derived type is the caller's to free (MPI-3.1 §4.1.13): a
		 * reference more, or the user's own again if it freed it */
		MPI_Datatype h = a->types[i];
		struct bcs_type *d = bcs_type_held(h);
		if (!d->predefined && d->freed) {
			d->freed = 0;
		} else if (!d->predefined) {
			bcs_type_hold(h);
			targs[h].extra++;
		}
		types[i] = h;
	}
	return MPI_SUCCESS;
}

/* the predefined types' names, as MPI-3.1 §6.8 has them */
#define TNAME(h) [h] = #h
static const char *const predef_name[] = {
	TNAME(MPI_CHAR), TNAME(MPI_SIGNED_CHAR), TNAME(MPI_UNSIGNED_CHAR), TNAME(MPI_BYTE),
	TNAME(MPI_WCHAR), TNAME(MPI_SHORT), TNAME(MPI_UNSIGNED_SHORT), TNAME(MPI_INT),
	TNAME(MPI_UNSIGNED), TNAME(MPI_LONG), TNAME(MPI_UNSIGNED_LONG),
	TNAME(MPI_LONG_LONG_INT), TNAME(MPI_UNSIGNED_LONG_LONG), TNAME(MPI_FLOAT),
	TNAME(MPI_DOUBLE), TNAME(MPI_LONG_DOUBLE), TNAME(MPI_C_BOOL), TNAME(MPI_INT8_T),
	TNAME(MPI_INT16_T), TNAME(MPI_INT32_T), TNAME(MPI_INT64_T), TNAME(MPI_UINT8_T),
	TNAME(MPI_UINT16_T), TNAME(MPI_UINT32_T), TNAME(MPI_UINT64_T), TNAME(MPI_AINT),
	TNAME(MPI_OFFSET), TNAME(MPI_COUNT), TNAME(MPI_FLOAT_INT), TNAME(MPI_DOUBLE_INT),
	TNAME(MPI_LONG_INT), TNAME(MPI_2INT), TNAME(MPI_SHORT_INT), TNAME(MPI_LONG_DOUBLE_INT),
	TNAME(MPI_PACKED), TNAME(MPI_C_FLOAT_COMPLEX), TNAME(MPI_C_DOUBLE_COMPLEX),
	TNAME(MPI_C_LONG_DOUBLE_COMPLEX),
};

/* the handles at the table's top: C++'s and Fortran's types, the bound
 * markers */
static const char *const top_name[] = {
	"MPI_CXX_BOOL", "MPI_CXX_FLOAT_COMPLEX", "MPI_CXX_DOUBLE_COMPLEX",
	"MPI_CXX_LONG_DOUBLE_COMPLEX", "MPI_CHARACTER", "MPI_LOGICAL", "MPI_INTEGER", "MPI_REAL", "MPI_DOUBLE_PRECISION",
	"MPI_COMPLEX",	 "MPI_DOUBLE_COMPLEX", "MPI_LB", "MPI_UB",
};

int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
	static const int real[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE},
			 integer[] = {MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T},
			 cplx[] = {MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
				   MPI_C_LONG_DOUBLE_COMPLEX};
	const int *v = typeclass == MPI_TYPECLASS_REAL	  ? real
		       : typeclass == MPI_TYPECLASS_INTEGER ? integer
		       : typeclass == MPI_TYPECLASS_COMPLEX ? cplx
							    : NULL;
	int n = typeclass == MPI_TYPECLASS_INTEGER ? 4 : 3;
	bcs_types_init();
	for (int i = 0; v && i < n; i++)
		if (bcs_basic_size(v[i]) == size) {
			*datatype = v[i];
			return MPI_SUCCESS;
		}
	return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_match_size");
}

int MPI_Type_set_name(MPI_Datatype dt, const char *name)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_set_name");
	return bcs_err(MPI_COMM_WORLD, bcs_name_set(&t->name, name), "MPI_Type_set_name");
}

int MPI_Type_get_name(MPI_Datatype dt, char *name, int *len)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_name");
	bool named = t->predefined && dt > 0 &&
		     dt < (int)(sizeof(predef_name) / sizeof(predef_name[0])) && predef_name[dt];
	const char *dflt = named ? predef_name[dt] : "";
	if (t->predefined && dt >= MPI_CXX_BOOL && dt <= MPI_UB)
		dflt = top_name[dt - MPI_CXX_BOOL];
	bcs_name_get(t->name, dflt, name, len);
	return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *st, MPI_Datatype dt, int *count)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_count");
	if (t->size == 0)
		*count = 0;
	else if (st->bcs_count % t->size)
		*count = MPI_UNDEFINED;
	else
		*count = (int)(st->bcs_count / t->size);
	return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *st, MPI_Datatype dt, int *count)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_elements");
	long e = bcs_type_elements(t, (long)st->bcs_count);
	*count = e < 0 ? MPI_UNDEFINED : (int)e;
	return MPI_SUCCESS;
}

int MPI_Get_elements_x(const MPI_Status *st, MPI_Datatype dt, MPI_Count *count)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_elements_x");
	long e = bcs_type_elements(t, (long)st->bcs_count);
	*count = e < 0 ? MPI_UNDEFINED : e;
	return MPI_SUCCESS;
}

/* A status says count basic elements of dt arrived: the bytes they take
 * (whole items, then the elements of a last partial one, which of a type
 * of one basic type are all of one size) */
static int set_elements(MPI_Status *st, MPI_Datatype dt, MPI_Count count, const char *fn)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, fn);
	if (count < 0)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COUNT, fn);
	if (t->nelem <= 0 || t->size == 0) {
		st->bcs_count = 0;
		return MPI_SUCCESS;
	}
	long long whole = count / t->nelem, part = count % t->nelem;
	long long bytes = whole * t->size;
	if (part && t->basic)
		bytes += part * bcs_basic_size(t->basic);
	else if (part)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COUNT, fn);
	st->bcs_count = bytes;
	return MPI_SUCCESS;
}

int MPI_Status_set_elements(MPI_Status *st, MPI_Datatype dt, int count)
{
	return set_elements(st, dt, count, "MPI_Status_set_elements");
}

int MPI_Status_set_elements_x(MPI_Status *st, MPI_Datatype dt, MPI_Count count)
{
	return set_elements(st, dt, count, "MPI_Status_set_elements_x");
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
	*address = (MPI_Aint)(uintptr_t)location;
	return MPI_SUCCESS;
}

MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
	return base + disp;
}

MPI_Aint MPI_Aint_diff(MPI_Aint a, MPI_Aint b)
{
	return a - b;
}

/* ---- MPI_Pack: the packed form is what travels (blocks back to back) */

int MPI_Pack_size(int count, MPI_Datatype dt, MPI_Comm comm, int *size)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(comm, MPI_ERR_TYPE, "MPI_Pack_size");
	if (count < 0)
		return bcs_err(comm, MPI_ERR_COUNT, "MPI_Pack_size");
	*size = (int)((long)count * t->size);
	return MPI_SUCCESS;
}

int MPI_Pack(const void *in, int count, MPI_Datatype dt, void *out, int outsize, int *position,
	     MPI_Comm comm)
{
	struct bcs_type *t = type_of(dt);
	if (!t || !t->committed)
		return bcs_err(comm, MPI_ERR_TYPE, "MPI_Pack");
	if (count < 0)
		return bcs_err(comm, MPI_ERR_COUNT, "MPI_Pack");
	long bytes = (long)count * t->size;
	if (*position < 0 || *position + bytes > outsize)
		return bcs_err(comm, MPI_ERR_TRUNCATE, "MPI_Pack");
	bcs_pack(t, in, count, (char *)out + *position);
	*position += (int)bytes;
	return MPI_SUCCESS;
}

int MPI_Unpack(const void *in, int insize, int *position, void *out, int count,
	       MPI_Datatype dt, MPI_Comm comm)
{
	struct bcs_type *t = type_of(dt);
	if (!t || !t->committed)
		return bcs_err(comm, MPI_ERR_TYPE, "MPI_Unpack");
	if (count < 0)
		return bcs_err(comm, MPI_ERR_COUNT, "MPI_Unpack");
	long bytes = (long)count * t->size;
	if (*position < 0 || *position + bytes > insize)
		return bcs_err(comm, MPI_ERR_TRUNCATE, "MPI_Unpack");
	bcs_unpack(t, (const char *)in + *position, bytes, out);
	*position += (int)bytes;
	return MPI_SUCCESS;
}

/* ---- MPI-4's large-count type constructors: the engine counts in longs,
 * so a type may hold more than INT_MAX bytes; its envelope names the
 * int form's combiner, with no arguments kept (get_contents gives none) */

static int large(int rc, MPI_Datatype *newtype, int combiner)
{
	if (!rc)
		bcs_type_get(*newtype)->combiner = combiner;
	return rc;
}

/* n fields of blens[i] items of old at byte displacements d[i] */
static int large_build(MPI_Count n, const MPI_Count *blens, MPI_Count blen,
		       const MPI_Count *d, long unit, MPI_Datatype old, MPI_Datatype *newtype)
{
	if (n < 0 || n > INT_MAX)
		return MPI_ERR_COUNT;
	size_t m = (size_t)(n ? n : 1);
	long *bl = malloc(m * sizeof(long)), *dd = malloc(m * sizeof(long));
	int *o = malloc(m * sizeof(int)), rc = MPI_ERR_INTERN;
	if (bl && dd && o) {
		for (MPI_Count i = 0; i < n; i++) {
			bl[i] = blens ? blens[i] : blen;
			dd[i] = d ? d[i] * unit : 0;
			o[i] = old;
		}
		rc = bcs_type_build((int)n, bl, dd, o, 0, newtype);
	}
	free(bl);
	free(dd);
	free(o);
	return rc;
}

int MPI_Type_contiguous_c(MPI_Count count, MPI_Datatype old, MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_contiguous_c",
		  large(count < 0 ? MPI_ERR_COUNT
				  : large_build(1, NULL, count, NULL, 0, old, newtype),
			newtype, MPI_COMBINER_CONTIGUOUS));
}

int MPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blen, const MPI_Count displs[],
				    MPI_Datatype old, MPI_Datatype *newtype)
{
	struct bcs_type *t = type_of(old);
	TYPE_CALL("MPI_Type_create_indexed_block_c",
		  large(!t ? MPI_ERR_TYPE
			   : large_build(count, NULL, blen, displs, t->extent, old, newtype),
			newtype, MPI_COMBINER_INDEXED_BLOCK));
}

int MPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count blens[], const MPI_Count displs[],
			       MPI_Datatype old, MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_hindexed_c",
		  large(large_build(count, blens, 0, displs, 1, old, newtype), newtype,
			MPI_COMBINER_HINDEXED));
}

int MPI_Type_get_extent_c(MPI_Datatype dt, MPI_Count *lb, MPI_Count *extent)
{
	struct bcs_type *t = type_of(dt);
	if (!t)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_extent_c");
	*lb = t->lb;
	*extent = t->extent;
	return MPI_SUCCESS;
}

int MPI_Type_get_true_extent_c(MPI_Datatype dt, MPI_Count *lb, MPI_Count *extent)
{
	MPI_Aint l, e;
	int rc = MPI_Type_get_true_extent(dt, &l, &e);
	if (rc == MPI_SUCCESS) {
		*lb = l;
		*extent = e;
	}
	return rc;
}

/* ---- MPI_Pack_external: "external32" only (big-endian, MPI's sizes) */

static int ext32_type(const char *datarep, MPI_Datatype dt, struct bcs_type **t)
{
	if (!datarep || strcmp(datarep, "external32"))
		return MPI_ERR_ARG;
	*t = type_of(dt);
	return *t && (*t)->committed ? MPI_SUCCESS : MPI_ERR_TYPE;
}

int MPI_Pack_external_size(const char datarep[], int count, MPI_Datatype dt, MPI_Aint *size)
{
	struct bcs_type *t;
	int rc = ext32_type(datarep, dt, &t);
	if (!rc && count < 0)
		rc = MPI_ERR_COUNT;
	if (!rc)
		*size = bcs_ext32_size(t, count);
	return bcs_err(MPI_COMM_WORLD, rc, "MPI_Pack_external_size");
}

int MPI_Pack_external(const char datarep[], const void *in, int count, MPI_Datatype dt,
		      void *out, MPI_Aint outsize, MPI_Aint *position)
{
	struct bcs_type *t;
	int rc = ext32_type(datarep, dt, &t);
	if (!rc && count < 0)
		rc = MPI_ERR_COUNT;
	long bytes = rc ? 0 : bcs_ext32_size(t, count);
	if (!rc && (*position < 0 || *position + bytes > outsize))
		rc = MPI_ERR_TRUNCATE;
	unsigned char *tmp = rc ? NULL : malloc((size_t)(count * t->size) + 1);
	if (!rc && !tmp)
		rc = MPI_ERR_NO_MEM;
	if (!rc) {
		bcs_pack(t, in, count, tmp);
		bcs_ext32(t, count, tmp, (unsigned char *)out + *position, true);
		*position += bytes;
	}
	free(tmp);
	return bcs_err(MPI_COMM_WORLD, rc, "MPI_Pack_external");
}

int MPI_Unpack_external(const char datarep[], const void *in, MPI_Aint insize,
			MPI_Aint *position, void *out, int count, MPI_Datatype dt)
{
	struct bcs_type *t;
	int rc = ext32_type(datarep, dt, &t);
	if (!rc && count < 0)
		rc = MPI_ERR_COUNT;
	long bytes = rc ? 0 : bcs_ext32_size(t, count);
	if (!rc && (*position < 0 || *position + bytes > insize))
		rc = MPI_ERR_TRUNCATE;
	unsigned char *tmp = rc ? NULL : malloc((size_t)(count * t->size) + 1);
	if (!rc && !tmp)
		rc = MPI_ERR_NO_MEM;
	if (!rc) {
		bcs_ext32(t, count, tmp, (unsigned char *)in + *position, false);
		bcs_unpack(t, tmp, count * t->size, out);
		*position += bytes;
	}
	free(tmp);
	return bcs_err(MPI_COMM_WORLD, rc, "MPI_Unpack_external");
}
