/* BCS-MPI derived datatypes, counts in them, addresses and MPI_Pack: the
 * MPI calls over bcs_mpi/abi/dtype (flat block lists). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

#define TYPE_CALL(fn, expr)                                                    \
	do {                                                                   \
		bcs_types_init();                                              \
		return bcs_err(MPI_COMM_WORLD, (expr), fn);                    \
	} while (0)

/* a new type's envelope (MPI-3.1 §4.1.13): its constructor and how many
 * integers, addresses and datatypes it took */
static int made(int rc, const MPI_Datatype *newtype, int combiner, int ni, int na, int nd)
{
	if (rc)
		return rc;
	struct bcs_type *t = bcs_type_get(*newtype);
	t->combiner = combiner;
	t->ni = ni;
	t->na = na;
	t->nd = nd;
	return MPI_SUCCESS;
}

int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_contiguous", made(bcs_type_contiguous(count, old, newtype), newtype,
					      MPI_COMBINER_CONTIGUOUS, 1, 0, 1));
}

int MPI_Type_vector(int count, int blocklen, int stride, MPI_Datatype old, MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_vector", made(bcs_type_vector(count, blocklen, stride, old, newtype),
					  newtype, MPI_COMBINER_VECTOR, 3, 0, 1));
}

int MPI_Type_create_hvector(int count, int blocklen, MPI_Aint stride, MPI_Datatype old,
			    MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_hvector",
		  made(bcs_type_hvector(count, blocklen, (long)stride, old, newtype), newtype,
		       MPI_COMBINER_HVECTOR, 2, 1, 1));
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
	TYPE_CALL("MPI_Type_indexed", made(indexed(count, blens, 0, displs, NULL, old, newtype),
					   newtype, MPI_COMBINER_INDEXED, 2 * count + 1, 0, 1));
}

int MPI_Type_create_indexed_block(int count, int blen, const int displs[], MPI_Datatype old,
				  MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_indexed_block",
		  made(indexed(count, NULL, blen, displs, NULL, old, newtype), newtype,
		       MPI_COMBINER_INDEXED_BLOCK, count + 2, 0, 1));
}

int MPI_Type_create_hindexed(int count, const int blens[], const MPI_Aint displs[],
			     MPI_Datatype old, MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_hindexed",
		  made(indexed(count, blens, 0, NULL, displs, old, newtype), newtype,
		       MPI_COMBINER_HINDEXED, count + 1, count, 1));
}

int MPI_Type_create_hindexed_block(int count, int blen, const MPI_Aint displs[],
				   MPI_Datatype old, MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_hindexed_block",
		  made(indexed(count, NULL, blen, NULL, displs, old, newtype), newtype,
		       MPI_COMBINER_HINDEXED_BLOCK, 2, count, 1));
}

static int type_struct(int count, const int blens[], const MPI_Aint displs[],
		       const MPI_Datatype types[], MPI_Datatype *newtype)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	size_t m = (size_t)(count ? count : 1);
	long *bl = malloc(m * sizeof(long)), *d = malloc(m * sizeof(long));
	int rc = MPI_ERR_INTERN;
	if (bl && d) {
		for (int i = 0; i < count; i++) {
			bl[i] = blens[i];
			d[i] = (long)displs[i];
		}
		rc = bcs_type_build(count, bl, d, types, 1, newtype);
	}
	free(bl);
	free(d);
	return rc;
}

int MPI_Type_create_struct(int count, const int blens[], const MPI_Aint displs[],
			   const MPI_Datatype types[], MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_struct",
		  made(type_struct(count, blens, displs, types, newtype), newtype,
		       MPI_COMBINER_STRUCT, count + 1, count, count));
}

int MPI_Type_create_resized(MPI_Datatype old, MPI_Aint lb, MPI_Aint extent,
			    MPI_Datatype *newtype)
{
	TYPE_CALL("MPI_Type_create_resized",
		  made(bcs_type_resized(old, (long)lb, (long)extent, newtype), newtype,
		       MPI_COMBINER_RESIZED, 0, 2, 1));
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
	TYPE_CALL("MPI_Type_create_subarray",
		  made(subarray(ndims, sizes, subsizes, starts, order, old, newtype), newtype,
		       MPI_COMBINER_SUBARRAY, 3 * ndims + 2, 0, 1));
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
	TYPE_CALL("MPI_Type_create_darray",
		  made(darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old,
			      newtype), newtype, MPI_COMBINER_DARRAY, 4 * ndims + 4, 0, 1));
}

int MPI_Type_dup(MPI_Datatype old, MPI_Datatype *newtype)
{
	bcs_types_init();
	int rc = made(bcs_type_dup(old, newtype), newtype, MPI_COMBINER_DUP, 0, 0, 1);
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
	int rc = t && !t->predefined ? bcs_attr_free_all(BCS_ATTR_TYPE, *dt) : MPI_SUCCESS;
	TYPE_CALL("MPI_Type_free", rc ? rc : bcs_type_free(dt));
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
	*size = (int)t->size;
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
	bcs_name_get(t->name, named ? predef_name[dt] : "", name, len);
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
