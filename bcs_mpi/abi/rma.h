/* BCS-MPI one-sided communication: the batch codec and its application at
 * the target (pure, unit-tested).
 *
 * An origin queues the operations of an epoch, per target, as records in a
 * byte buffer; at the epoch's synchronisation the buffer travels to the
 * target in one message and the target applies its records in order. A
 * record describes the target locations as byte blocks (offsets from the
 * start of the target's window), so the target needs none of the origin's
 * datatypes. Operations that fetch (get, get-accumulate, fetch-and-op,
 * compare-and-swap) produce the old target bytes, appended in record order
 * to the reply. */
#ifndef BCS_RMA_H
#define BCS_RMA_H

#include <stdint.h>

#include "dtype.h"

enum bcs_rma_kind {
	BCS_RMA_PUT = 1,  /* data: len bytes */
	BCS_RMA_GET = 2,  /* no data; reply: len bytes */
	BCS_RMA_ACC = 3,  /* data: len bytes, combined with op */
	BCS_RMA_GACC = 4, /* as ACC; reply: the bytes before */
	BCS_RMA_CAS = 5,  /* data: compare then new value (2 * len); reply: old */
};

struct bcs_rma_rec {
	uint32_t kind;
	int32_t op;      /* MPI_Op (ACC, GACC): predefined, MPI_REPLACE or MPI_NO_OP */
	int32_t basic;   /* the basic type of the elements (ACC, GACC, CAS) */
	uint32_t nblocks;
	uint64_t len;    /* target bytes: the blocks' sum */
	/* then nblocks x {int64 off, uint64 len}, then the data */
};

struct bcs_rma_buf {
	uint8_t *p;
	uint64_t len, cap;
	uint64_t reply; /* reply bytes the records will produce */
	uint32_t nrec;
};

/* Appends a record; returns where its data (of bcs_rma_data_len bytes) goes,
 * or NULL when out of memory. Blocks are offsets from the window's start. */
uint8_t *bcs_rma_add(struct bcs_rma_buf *b, uint32_t kind, int op, int basic,
		     const struct bcs_block *blocks, uint32_t nblocks);
uint64_t bcs_rma_data_len(uint32_t kind, uint64_t len);
void bcs_rma_buf_free(struct bcs_rma_buf *b);

/* The target blocks of count items of t at byte displacement disp: merged
 * where adjacent; *n of them in a malloc'd array (NULL when out of memory). */
struct bcs_block *bcs_rma_blocks(const struct bcs_type *t, long count, long disp, uint32_t *n);

/* Applies the batch to the window [base, base+size): every record in order.
 * reply receives the fetched bytes (cap bytes room), *rlen their count.
 * Returns 0, or an MPI error class for a malformed batch, a block outside the
 * window (MPI_ERR_RMA_RANGE) or an op that does not apply to the type; the
 * records before the bad one stay applied. */
int bcs_rma_apply(void *base, uint64_t size, const void *batch, uint64_t n, void *reply,
		  uint64_t cap, uint64_t *rlen);

/* A dynamic window's memory: the regions attached at the target, whose
 * blocks are absolute addresses (base NULL, size BCS_RMA_ANY for apply). */
struct bcs_rma_region {
	uint64_t addr, len;
};
#define BCS_RMA_ANY ((uint64_t)INT64_MAX)

/* Checks, before anything is applied, that every block of the batch lies
 * within one of the n regions: 0, MPI_ERR_RMA_RANGE with the first block
 * outside in *bad, or MPI_ERR_ARG for a malformed batch. */
int bcs_rma_check(const void *batch, uint64_t n, const struct bcs_rma_region *rg, uint32_t nrg,
		  uint64_t *bad);

#endif
