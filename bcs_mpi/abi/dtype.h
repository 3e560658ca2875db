/* BCS-MPI datatypes and reduction operators: pure (unit-tested).
 *
 * A datatype is a flat list of byte blocks (offset from the buffer, length,
 * basic type) in typemap order; item i of a buffer starts i extents after
 * it. Data travels packed: the blocks of each item, back to back. Predefined ops work
 * on packed arrays of basic elements; pair types pack as value then int. */
#ifndef BCS_DTYPE_H
#define BCS_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

struct bcs_block {
	long off, len;
	int basic;      /* the predefined type of its elements */
};

struct bcs_type {
	int used, committed, predefined;
	/* MPI_Type_free only marks a type held by pending operations (a
	 * receive, a fetch): its slot stays until the last one lets go */
	int refs, freed;
	/* MPI_Type_get_envelope: its constructor's combiner (0: predefined)
	 * and argument counts; its name (MPI_Type_set_name), or NULL */
	int combiner, ni, na, nd;
	char *name;
	long size;      /* data bytes per item */
	long lb, extent;
	long true_lb, true_ub; /* where the data bytes lie */
	long align;     /* strictest alignment of its basic types */
	int basic;      /* predefined type all elements are made of; 0 if mixed */
	long nelem;     /* basic elements per item */
	int nblocks;
	struct bcs_block *blocks;
};

#define BCS_TYPE_MAX 4096

void bcs_types_init(void);
/* NULL for an invalid handle (a freed type is invalid to its user) */
struct bcs_type *bcs_type_get(int handle);
/* A pending operation keeps a type valid after MPI_Type_free: hold takes a
 * reference (0 or MPI_ERR_TYPE), held reads the type through it, release
 * drops it and frees a type freed meanwhile. Predefined types need none. */
int bcs_type_hold(int handle);
struct bcs_type *bcs_type_held(int handle);
void bcs_type_release(int handle);
/* 0 or an MPI error class */
int bcs_type_contiguous(int count, int old, int *newtype);
int bcs_type_vector(int count, int blocklen, int stride, int old, int *newtype);
int bcs_type_hvector(int count, int blocklen, long stride_bytes, int old, int *newtype);
/* indexed (displacements in old's extents) or hindexed (disp_unit_bytes) */
int bcs_type_indexed(int count, const int *blens, const long *disps, int disp_unit_bytes,
		     int old, int *newtype);
/* The general constructor (struct): n fields of blens[i] items of olds[i] at
 * byte displacement disps[i]; pad rounds the extent up to the strictest
 * alignment, as MPI_Type_create_struct does. */
int bcs_type_build(int n, const long *blens, const long *disps, const int *olds, int pad,
		   int *newtype);
int bcs_type_resized(int old, long lb, long extent, int *newtype);
int bcs_type_dup(int old, int *newtype);
int bcs_type_free(int *handle);
/* basic elements in `bytes` packed bytes of t, or -1 if not a whole number */
long bcs_type_elements(const struct bcs_type *t, long bytes);
bool bcs_type_is_contig(const struct bcs_type *t);
long bcs_basic_size(int basic);
void bcs_pack(const struct bcs_type *t, const void *buf, long count, void *out);
/* Unpacks `bytes` packed bytes (whole blocks only) into count items at buf. */
void bcs_unpack(const struct bcs_type *t, const void *in, long bytes, void *buf);

/* external32 (MPI_Pack_external): its bytes for count items of t, and
 * count packed items (bcs_pack's bytes) to external32 (out) or back */
long bcs_ext32_size(const struct bcs_type *t, long count);
void bcs_ext32(const struct bcs_type *t, long count, unsigned char *packed, unsigned char *ext,
	       bool out);

/* Applies a predefined op: inout[i] = in[i] op inout[i] for n elements of
 * basic type `basic` (packed). Returns 0 or MPI_ERR_OP when op does not
 * apply to the type. */
int bcs_op_apply(int op, int basic, const void *in, void *inout, long n);
bool bcs_op_valid(int op, int basic);

#endif
