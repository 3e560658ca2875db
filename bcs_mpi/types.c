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
