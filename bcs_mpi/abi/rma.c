/* BCS-MPI one-sided batches: encoding and application (rma.h). */
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "rma.h"

#define BLK_BYTES 16u

uint64_t bcs_rma_data_len(uint32_t kind, uint64_t len)
{
	switch (kind) {
	case BCS_RMA_PUT: case BCS_RMA_ACC: case BCS_RMA_GACC: return len;
	case BCS_RMA_CAS: return 2 * len;
	default: return 0;
	}
}

static int grow(struct bcs_rma_buf *b, uint64_t more)
{
	if (b->len + more <= b->cap)
		return 0;
	uint64_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

uint8_t *bcs_rma_add(struct bcs_rma_buf *b, uint32_t kind, int op, int basic,
		     const struct bcs_block *blocks, uint32_t nblocks)
{
	uint64_t len = 0;
	for (uint32_t i = 0; i < nblocks; i++)
		len += (uint64_t)blocks[i].len;
	uint64_t data = bcs_rma_data_len(kind, len);
	if (grow(b, sizeof(struct bcs_rma_rec) + (uint64_t)nblocks * BLK_BYTES + data))
		return NULL;
	struct bcs_rma_rec r = {.kind = kind, .op = op, .basic = basic, .nblocks = nblocks,
				.len = len};
	uint8_t *p = b->p + b->len;
	memcpy(p, &r, sizeof(r));
	p += sizeof(r);
	for (uint32_t i = 0; i < nblocks; i++) {
		int64_t off = blocks[i].off;
		uint64_t l = (uint64_t)blocks[i].len;
		memcpy(p, &off, 8);
		memcpy(p + 8, &l, 8);
		p += BLK_BYTES;
	}
	b->len = (uint64_t)(p - b->p) + data;
	if (kind == BCS_RMA_GET || kind == BCS_RMA_GACC || kind == BCS_RMA_CAS)
		b->reply += len;
	b->nrec++;
	return p;
}

void bcs_rma_buf_free(struct bcs_rma_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

struct bcs_block *bcs_rma_blocks(const struct bcs_type *t, long count, long disp, uint32_t *n)
{
	long max = count * t->nblocks;
	struct bcs_block *v = malloc((size_t)(max > 0 ? max : 1) * sizeof(*v));
	if (!v)
		return NULL;
	uint32_t k = 0;
	for (long i = 0; i < count; i++)
		for (int j = 0; j < t->nblocks; j++) {
			long off = disp + i * t->extent + t->blocks[j].off, len = t->blocks[j].len;
			if (len == 0)
				continue;
			if (k > 0 && v[k - 1].off + v[k - 1].len == off)
				v[k - 1].len += len;
			else
				v[k++] = (struct bcs_block){.off = off, .len = len, .basic = t->blocks[j].basic};
		}
	*n = k;
	return v;
}

/* base + off without arithmetic on a null base (a dynamic window's blocks
 * are absolute addresses) */
static uint8_t *at(const uint8_t *base, int64_t off)
{
	return (uint8_t *)((uintptr_t)base + (uint64_t)off);
}

/* Copies between the window's blocks and a packed buffer. */
static void gather(const uint8_t *base, const uint8_t *blk, uint32_t n, uint8_t *out)
{
	for (uint32_t i = 0; i < n; i++, blk += BLK_BYTES) {
		int64_t off;
		uint64_t len;
		memcpy(&off, blk, 8);
		memcpy(&len, blk + 8, 8);
		memcpy(out, at(base, off), len);
		out += len;
	}
}

static void scatter(uint8_t *base, const uint8_t *blk, uint32_t n, const uint8_t *in)
{
	for (uint32_t i = 0; i < n; i++, blk += BLK_BYTES) {
		int64_t off;
		uint64_t len;
		memcpy(&off, blk, 8);
		memcpy(&len, blk + 8, 8);
		memcpy(at(base, off), in, len);
		in += len;
	}
}

/* One record (its header already read) at p with `left` bytes after it. */
static int apply_one(uint8_t *base, uint64_t size, const struct bcs_rma_rec *r,
		     const uint8_t *p, uint64_t left, uint8_t *reply, uint64_t cap,
		     uint64_t *rlen, uint64_t *used)
{
	if (r->nblocks > left / BLK_BYTES)
		return MPI_ERR_ARG;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < r->nblocks; i++) {
		int64_t off;
		uint64_t len;
		memcpy(&off, p + (uint64_t)i * BLK_BYTES, 8);
		memcpy(&len, p + (uint64_t)i * BLK_BYTES + 8, 8);
		if (off < 0 || (uint64_t)off > size || len > size - (uint64_t)off)
			return MPI_ERR_RMA_RANGE;
		sum += len;
	}
	if (sum != r->len)
		return MPI_ERR_ARG;
	const uint8_t *blk = p, *data = p + (uint64_t)r->nblocks * BLK_BYTES;
	uint64_t dlen = bcs_rma_data_len(r->kind, r->len);
	if (dlen > left - (uint64_t)r->nblocks * BLK_BYTES)
		return MPI_ERR_ARG;
	bool fetch = r->kind == BCS_RMA_GET || r->kind == BCS_RMA_GACC || r->kind == BCS_RMA_CAS;
	if (fetch && r->len > cap - *rlen)
		return MPI_ERR_ARG;
	*used = (uint64_t)r->nblocks * BLK_BYTES + dlen;
	if (r->kind == BCS_RMA_PUT) {
		scatter(base, blk, r->nblocks, data);
		return 0;
	}
	if (r->kind == BCS_RMA_GET) {
		gather(base, blk, r->nblocks, reply + *rlen);
		*rlen += r->len;
		return 0;
	}
	if (r->kind != BCS_RMA_ACC && r->kind != BCS_RMA_GACC && r->kind != BCS_RMA_CAS)
		return MPI_ERR_ARG;
	/* combined in aligned copies: the batch's data may sit anywhere */
	uint8_t *cur = malloc(r->len + 1), *in = malloc(dlen + 1);
	if (!cur || !in) {
		free(cur);
		free(in);
		return MPI_ERR_NO_MEM;
	}
	gather(base, blk, r->nblocks, cur);
	memcpy(in, data, dlen);
	int rc = 0;
	if (fetch) {
		memcpy(reply + *rlen, cur, r->len);
		*rlen += r->len;
	}
	if (r->kind == BCS_RMA_CAS) {
		if (memcmp(cur, in, r->len) == 0)
			scatter(base, blk, r->nblocks, in + r->len);
	} else if (r->op == MPI_REPLACE) {
		scatter(base, blk, r->nblocks, in);
	} else if (r->op != MPI_NO_OP) {
		long es = bcs_basic_size(r->basic);
		if (es <= 0 || r->len % (uint64_t)es)
			rc = MPI_ERR_TYPE;
		else
			rc = bcs_op_apply(r->op, r->basic, in, cur, (long)(r->len / (uint64_t)es));
		if (!rc)
			scatter(base, blk, r->nblocks, cur);
	}
	free(cur);
	free(in);
	return rc;
}

int bcs_rma_apply(void *base, uint64_t size, const void *batch, uint64_t n, void *reply,
		  uint64_t cap, uint64_t *rlen)
{
	const uint8_t *p = batch, *end = p + n;
	*rlen = 0;
	while (p < end) {
		struct bcs_rma_rec r;
		if ((uint64_t)(end - p) < sizeof(r))
			return MPI_ERR_ARG;
		memcpy(&r, p, sizeof(r));
		p += sizeof(r);
		uint64_t used = 0;
		int rc = apply_one(base, size, &r, p, (uint64_t)(end - p), reply, cap, rlen, &used);
		if (rc)
			return rc;
		p += used;
	}
	return 0;
}

/* Whether [off, off + len) is attached: every byte in some region. One
 * access may run across regions attached side by side (MPI asks only that
 * the memory be attached, and MPICH serves it), so the block is walked
 * region by region; a zero-length block needs only its start in one. */
static bool in_regions(uint64_t off, uint64_t len, const struct bcs_rma_region *rg, uint32_t n)
{
	if (len > UINT64_MAX - off)
		return false;
	uint64_t at = off, end = off + len;
	for (;;) {
		/* of the regions holding byte `at`, the one reaching furthest */
		bool held = false;
		uint64_t reach = at;
		for (uint32_t i = 0; i < n; i++) {
			if (rg[i].len > UINT64_MAX - rg[i].addr)
				continue;
			uint64_t rend = rg[i].addr + rg[i].len;
			if (at >= rg[i].addr && (at < rend || (len == 0 && at == rend))) {
				held = true;
				if (rend > reach)
					reach = rend;
			}
		}
		if (!held)
			return false;
		if (reach >= end)
			return true;
		at = reach;
	}
}

int bcs_rma_check(const void *batch, uint64_t n, const struct bcs_rma_region *rg, uint32_t nrg,
		  uint64_t *bad)
{
	const uint8_t *p = batch, *end = p + n;
	while (p < end) {
		struct bcs_rma_rec r;
		if ((uint64_t)(end - p) < sizeof(r))
			return MPI_ERR_ARG;
		memcpy(&r, p, sizeof(r));
		p += sizeof(r);
		if (r.nblocks > (uint64_t)(end - p) / BLK_BYTES)
			return MPI_ERR_ARG;
		for (uint32_t i = 0; i < r.nblocks; i++, p += BLK_BYTES) {
			uint64_t off, len;
			memcpy(&off, p, 8);
			memcpy(&len, p + 8, 8);
			if (!in_regions(off, len, rg, nrg)) {
				*bad = off;
				return MPI_ERR_RMA_RANGE;
			}
		}
		uint64_t dlen = bcs_rma_data_len(r.kind, r.len);
		if (dlen > (uint64_t)(end - p))
			return MPI_ERR_ARG;
		p += dlen;
	}
	return 0;
}
