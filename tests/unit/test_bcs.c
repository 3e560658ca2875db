/* BCS-MPI's pure parts: the matching engine, datatype pack/unpack, the
 * predefined reduction operators, the trace codec, one-sided batches. */
#include <CUnit/CUnit.h>
#include <complex.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan.h"
#include "layout.h"
#include "chan_ckpt.h"
#include "dtype.h"
#include "procs.h"
#include "../../daemons/node/match.h"
#include "mpi.h"
#include "rma.h"
#include "trace_codec.h"
#include "suites.h"

/* ---- matching */

static struct bcs_msend *snd(uint64_t label, int src, int tag, uint32_t ctx, uint32_t seq)
{
	struct bcs_msend *s = calloc(1, sizeof(*s));
	*s = (struct bcs_msend){.label = label, .src = src, .dst = 0, .tag = tag, .ctx = ctx,
				.seq = seq, .len = 4};
	return s;
}

static struct bcs_mrecv *rcv(int src, int tag, uint32_t ctx, uint32_t req)
{
	struct bcs_mrecv *r = calloc(1, sizeof(*r));
	*r = (struct bcs_mrecv){.src = src, .tag = tag, .ctx = ctx, .req = req,
				.op = BCS_OP_RECV, .len = 4};
	return r;
}

static void test_match_order(void)
{
	struct bcs_mq q = {0};
	/* a round's sends, arrived in any order, are matched by (slice, src, seq) */
	struct bcs_msend *in[5] = {snd(2, 3, 0, 0, 0), snd(1, 2, 0, 0, 1), snd(1, 2, 0, 0, 0),
				   snd(1, 1, 7, 0, 0), snd(2, 1, 0, 0, 1)};
	qsort(in, 5, sizeof(in[0]), bcs_msend_cmp);
	CU_ASSERT(in[0]->label == 1 && in[0]->src == 1);
	CU_ASSERT(in[1]->src == 2 && in[1]->seq == 0);
	CU_ASSERT(in[2]->src == 2 && in[2]->seq == 1);
	CU_ASSERT(in[3]->label == 2 && in[3]->src == 1);
	CU_ASSERT(in[4]->src == 3);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_PTR_NULL(bcs_mq_send(&q, in[i]));
	/* ANY_TAG with a source is matched at once, in that source's order */
	struct bcs_mrecv *r2 = rcv(2, BCS_ANY_TAG, 0, 2);
	struct bcs_msend *s = bcs_mq_recv(&q, r2);
	CU_ASSERT(s == in[1]);
	free(s);
	/* a wildcard source waits for quiescence: posted, nothing taken */
	struct bcs_mrecv *r = rcv(BCS_ANY_SOURCE, BCS_ANY_TAG, 0, 1);
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, r));
	CU_ASSERT(q.phead == r);
	/* probe peeks without taking */
	CU_ASSERT(bcs_mq_peek(&q, 2, BCS_ANY_TAG, 0) == in[2]);
	CU_ASSERT(bcs_mq_peek(&q, 9, BCS_ANY_TAG, 0) == NULL);
	CU_ASSERT(bcs_mq_peek(&q, BCS_ANY_SOURCE, 0, 1) == NULL); /* other context */
	/* at quiescence the wildcard takes the lowest source (its earliest) */
	struct bcs_msend *got;
	CU_ASSERT(bcs_mq_resolve(&q, &got) == r);
	CU_ASSERT(got == in[0]); /* src 1, slice 1 */
	CU_ASSERT_PTR_NULL(q.phead);
	free(got);
	free(r);
	free(r2);
	while (q.uhead) {
		struct bcs_mrecv *x = rcv(BCS_ANY_SOURCE, BCS_ANY_TAG, 0, 3);
		CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, x));
		CU_ASSERT(bcs_mq_resolve(&q, &got) == x);
		CU_ASSERT_PTR_NOT_NULL_FATAL(got);
		free(got);
		free(x);
	}
	CU_ASSERT_PTR_NULL(q.utail);
}

/* Wildcard resolution is independent of the order sends arrived in, and a
 * specific receive posted behind a wildcard never takes what the wildcard
 * could have taken. */
static void test_match_wild(void)
{
	/* the same sends, arriving in two different orders (other slices) */
	int order[2][4] = {{3, 1, 2, 1}, {1, 2, 1, 3}};
	int got[2][4];
	for (int k = 0; k < 2; k++) {
		struct bcs_mq q = {0};
		uint32_t seq[4] = {0};
		for (int i = 0; i < 4; i++) {
			int src = order[k][i];
			CU_ASSERT_PTR_NULL(bcs_mq_send(&q, snd((uint64_t)i + 1, src, 0, 0, seq[src]++)));
		}
		struct bcs_mrecv *w[4];
		for (int i = 0; i < 4; i++) {
			w[i] = rcv(BCS_ANY_SOURCE, 0, 0, (uint32_t)i);
			CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, w[i]));
		}
		for (int i = 0; i < 4; i++) {
			struct bcs_msend *s;
			struct bcs_mrecv *r = bcs_mq_resolve(&q, &s);
			CU_ASSERT_PTR_NOT_NULL_FATAL(r);
			CU_ASSERT(r == w[i]); /* post order */
			got[k][i] = s->src * 10 + (int)s->seq;
			free(s);
			free(r);
		}
		CU_ASSERT_PTR_NULL(q.uhead);
	}
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(got[0][i], got[1][i]);
	CU_ASSERT_EQUAL(got[0][0], 10);
	CU_ASSERT_EQUAL(got[0][1], 11);
	CU_ASSERT_EQUAL(got[0][2], 20);
	CU_ASSERT_EQUAL(got[0][3], 30);

	/* posted: wildcard, then a receive from 2; a send from 2 waits for the
	 * wildcard (it could take it), and so does the specific receive */
	struct bcs_mq q = {0};
	struct bcs_mrecv *w = rcv(BCS_ANY_SOURCE, 0, 0, 1), *r2 = rcv(2, 0, 0, 2);
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, w));
	struct bcs_msend *a = snd(1, 2, 0, 0, 0), *b = snd(2, 2, 0, 0, 1);
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, a));
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, r2));
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, b)); /* a is still ahead of it */
	/* a send the wildcard cannot take (other tag) matches at once */
	struct bcs_mrecv *t9 = rcv(2, 9, 0, 3);
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, t9));
	struct bcs_msend *c = snd(3, 2, 9, 0, 2);
	CU_ASSERT(bcs_mq_send(&q, c) == t9);
	struct bcs_msend *s;
	CU_ASSERT(bcs_mq_resolve(&q, &s) == w);
	CU_ASSERT(s == a);
	CU_ASSERT(bcs_mq_resolve(&q, &s) == r2);
	CU_ASSERT(s == b);
	CU_ASSERT_PTR_NULL(bcs_mq_resolve(&q, &s));
	free(w);
	free(r2);
	free(t9);
	free(a);
	free(b);
	free(c);
}

/* The quiet reports: quiescence at slice t needs t and t-1 quiet. */
static void test_quiet(void)
{
	uint64_t cover = 0, m = 0;
	bool q[] = {false, true, true, false, true, true, true};
	for (uint64_t t = 1; t <= 7; t++) {
		m = bcs_quiet_push(cover, m, t, q[t - 1]);
		cover = t;
	}
	CU_ASSERT(!bcs_quiet_at(cover, m, 1));
	CU_ASSERT(!bcs_quiet_at(cover, m, 2)); /* slice 1 was busy */
	CU_ASSERT(bcs_quiet_at(cover, m, 3));
	CU_ASSERT(!bcs_quiet_at(cover, m, 4));
	CU_ASSERT(!bcs_quiet_at(cover, m, 5));
	CU_ASSERT(bcs_quiet_at(cover, m, 6));
	CU_ASSERT(bcs_quiet_at(cover, m, 7));
	CU_ASSERT(!bcs_quiet_at(cover, m, 8)); /* not reported yet */
	/* a node lagging L rounds needs the L slices before quiet too */
	CU_ASSERT(bcs_quiet_span(cover, m, 7, 2));
	CU_ASSERT(!bcs_quiet_span(cover, m, 7, 3)); /* slice 4 was busy */
	CU_ASSERT(bcs_quiet_span(cover, m, 3, 1));
	CU_ASSERT(!bcs_quiet_span(cover, m, 3, 3)); /* before slice 1 */
	/* a piece of the same cover that is busy clears it */
	m = bcs_quiet_push(cover, m, 7, false);
	CU_ASSERT(!bcs_quiet_at(cover, m, 7));
	CU_ASSERT(bcs_quiet_at(cover, m, 6));
	/* slices a node skipped (no phase: its strobe overtaken or refused)
	 * take the report that covers them: a loaded node hearing every other
	 * strobe must still let the job be quiescent */
	m = bcs_quiet_push(cover, m, 10, true);
	cover = 10;
	CU_ASSERT(bcs_quiet_at(cover, m, 10));
	CU_ASSERT(bcs_quiet_span(cover, m, 10, 2)); /* 8..10 */
	CU_ASSERT(!bcs_quiet_span(cover, m, 10, 3)); /* slice 7 was busy */
	m = bcs_quiet_push(cover, m, 12, false);
	cover = 12;
	CU_ASSERT(!bcs_quiet_at(cover, m, 11)); /* busy over a skip: busy */
	m = bcs_quiet_push(cover, m, 14, true);
	cover = 14;
	CU_ASSERT(bcs_quiet_at(cover, m, 14));
	CU_ASSERT(!bcs_quiet_span(cover, m, 14, 2)); /* slice 12 was busy */
	/* far history is forgotten */
	m = bcs_quiet_push(cover, m, 200, true);
	cover = 200;
	CU_ASSERT(bcs_quiet_span(cover, m, 200, 16));
	CU_ASSERT(!bcs_quiet_at(cover, m, 10));
	/* a node's first report covers only its own slice */
	CU_ASSERT(!bcs_quiet_at(50, bcs_quiet_push(0, 0, 50, true), 50));
	/* a node done with the job is quiet for ever */
	m = bcs_quiet_push(cover, m, UINT64_MAX, false);
	CU_ASSERT(bcs_quiet_at(UINT64_MAX, m, 500));
}

static void test_match_posted(void)
{
	struct bcs_mq q = {0};
	struct bcs_mrecv *a = rcv(1, 5, 0, 10), *b = rcv(BCS_ANY_SOURCE, 5, 0, 11),
			 *c = rcv(BCS_ANY_SOURCE, BCS_ANY_TAG, 4, 12);
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, a));
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, b));
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, c));
	/* a send whose first matching receive is a wildcard waits */
	struct bcs_msend *s = snd(1, 2, 5, 0, 0);
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, s));
	struct bcs_msend *s2 = snd(1, 1, 5, 0, 0);
	CU_ASSERT(bcs_mq_send(&q, s2) == a);
	/* cancel removes an unmatched receive, and only that */
	CU_ASSERT(bcs_mq_cancel(&q, 10) == NULL);
	CU_ASSERT(bcs_mq_cancel(&q, 12) == c);
	CU_ASSERT(bcs_mq_cancel(&q, 11) == b);
	CU_ASSERT_PTR_NULL(q.phead);
	struct bcs_msend *s3 = snd(1, 1, 5, 4, 0);
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, s3)); /* nothing posted: unexpected */
	CU_ASSERT(q.uhead == s && q.utail == s3);
	free(a);
	free(b);
	free(c);
	free(s);
	free(s2);
	free(s3);
}

/* cancels at quiescence: an unmatched send by (source, post order), a
 * posted receive by post order; a matched one is not found */
static void test_match_cancel(void)
{
	struct bcs_mq q = {0};
	struct bcs_msend *s1 = snd(1, 2, 5, 0, 0), *s2 = snd(1, 2, 5, 0, 1),
			 *s3 = snd(1, 3, 5, 0, 0);
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, s1));
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, s2));
	CU_ASSERT_PTR_NULL(bcs_mq_send(&q, s3));
	/* a receive takes the first: cancelling it finds nothing */
	struct bcs_mrecv *r = rcv(2, 5, 0, 20);
	CU_ASSERT(bcs_mq_recv(&q, r) == s1);
	CU_ASSERT_PTR_NULL(bcs_mq_cancel_send(&q, 2, 0));
	/* another source's send of the same post order stays */
	CU_ASSERT(bcs_mq_cancel_send(&q, 2, 1) == s2);
	CU_ASSERT(q.uhead == s3 && q.utail == s3);
	CU_ASSERT_PTR_NULL(bcs_mq_cancel_send(&q, 2, 1));
	/* the next receive from rank 2 waits: the cancelled send is gone */
	struct bcs_mrecv *r2 = rcv(2, 5, 0, 21), *r3 = rcv(3, 6, 0, 22);
	r2->seq = 4;
	r3->seq = 5;
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, r2));
	CU_ASSERT_PTR_NULL(bcs_mq_recv(&q, r3));
	CU_ASSERT(bcs_mq_cancel_recv(&q, 5) == r3);
	CU_ASSERT_PTR_NULL(bcs_mq_cancel_recv(&q, 5));
	CU_ASSERT(q.phead == r2 && q.ptail == r2);
	CU_ASSERT(bcs_mq_cancel_recv(&q, 4) == r2);
	CU_ASSERT_PTR_NULL(q.phead);
	CU_ASSERT(bcs_mq_cancel_send(&q, 3, 0) == s3);
	CU_ASSERT_PTR_NULL(q.uhead);
	free(s1);
	free(s2);
	free(s3);
	free(r);
	free(r2);
	free(r3);
}

/* ---- datatypes */

static void test_pack_vector(void)
{
	bcs_types_init();
	int vec, cont;
	CU_ASSERT_EQUAL_FATAL(bcs_type_vector(3, 2, 4, MPI_INT, &vec), 0);
	struct bcs_type *t = bcs_type_get(vec);
	CU_ASSERT_EQUAL(t->size, 24);
	CU_ASSERT_EQUAL(t->extent, (2 * 4 + 2) * 4);
	CU_ASSERT_EQUAL(t->nblocks, 3);
	CU_ASSERT_FALSE(bcs_type_is_contig(t));
	int src[20], packed[12], back[20];
	for (int i = 0; i < 20; i++) {
		src[i] = i;
		back[i] = -1;
	}
	bcs_pack(t, src, 1, packed);
	int want[6] = {0, 1, 4, 5, 8, 9};
	CU_ASSERT_EQUAL(memcmp(packed, want, sizeof(want)), 0);
	bcs_unpack(t, packed, 24, back);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(back[i], (i % 4) < 2 ? i : -1);
	/* two items: the second starts one extent later */
	bcs_pack(t, src, 2, packed);
	CU_ASSERT_EQUAL(packed[6], 10);
	CU_ASSERT_EQUAL(packed[11], 19);
	/* a partial unpack writes whole blocks only as far as the bytes go */
	for (int i = 0; i < 20; i++)
		back[i] = -1;
	bcs_unpack(t, packed, 12, back);
	CU_ASSERT(back[0] == 0 && back[1] == 1 && back[4] == 4 && back[5] == -1);
	/* contiguous of a vector merges nothing wrongly */
	CU_ASSERT_EQUAL_FATAL(bcs_type_contiguous(2, vec, &cont), 0);
	CU_ASSERT_EQUAL(bcs_type_get(cont)->size, 48);
	CU_ASSERT_EQUAL(bcs_type_get(cont)->nelem, 12);
	/* contiguous of contiguous is one block */
	int c2;
	CU_ASSERT_EQUAL_FATAL(bcs_type_contiguous(5, MPI_DOUBLE, &c2), 0);
	CU_ASSERT_TRUE(bcs_type_is_contig(bcs_type_get(c2)));
	CU_ASSERT_EQUAL(bcs_type_free(&vec), 0);
	CU_ASSERT_EQUAL(vec, MPI_DATATYPE_NULL);
	CU_ASSERT_EQUAL(bcs_type_free(&cont), 0);
	CU_ASSERT_EQUAL(bcs_type_free(&c2), 0);
	int pre = MPI_INT;
	CU_ASSERT_EQUAL(bcs_type_free(&pre), MPI_ERR_TYPE);
	/* a negative stride: the lower bound moves below the buffer */
	CU_ASSERT_EQUAL_FATAL(bcs_type_vector(3, 1, -2, MPI_INT, &vec), 0);
	t = bcs_type_get(vec);
	CU_ASSERT_EQUAL(t->lb, -16);
	CU_ASSERT_EQUAL(t->extent, 20);
	CU_ASSERT_EQUAL(t->true_lb, -16);
	bcs_pack(t, src + 8, 1, packed);
	CU_ASSERT(packed[0] == 8 && packed[1] == 6 && packed[2] == 4);
	bcs_type_free(&vec);
	CU_ASSERT_EQUAL(bcs_type_contiguous(-1, MPI_INT, &vec), MPI_ERR_COUNT);
	CU_ASSERT_EQUAL(bcs_type_contiguous(1, 9999, &vec), MPI_ERR_TYPE);
}

static void test_pair_types(void)
{
	bcs_types_init();
	struct bcs_type *t = bcs_type_get(MPI_DOUBLE_INT);
	CU_ASSERT_EQUAL(t->size, 12);
	CU_ASSERT_EQUAL(t->extent, 16);
	struct { double v; int i; } a[2] = {{1.5, 3}, {-2.0, 9}}, b[2];
	uint8_t p[24];
	bcs_pack(t, a, 2, p);
	double d;
	int k;
	memcpy(&d, p + 12, 8);
	memcpy(&k, p + 20, 4);
	CU_ASSERT(d == -2.0 && k == 9);
	bcs_unpack(t, p, 24, b);
	CU_ASSERT(b[0].v == 1.5 && b[0].i == 3 && b[1].v == -2.0 && b[1].i == 9);
	CU_ASSERT_EQUAL(bcs_type_get(MPI_SHORT_INT)->size, 6);
	CU_ASSERT_EQUAL(bcs_type_get(MPI_2INT)->extent, 8);
}

/* struct of mixed fields: typemap order, padding, elements of a partial item */
static void test_struct_type(void)
{
	bcs_types_init();
	struct s { char c; double d[2]; int i; } x[2] = {{'x', {1.5, -2}, 7}, {'y', {3, 4}, 9}}, y[2];
	long bl[3] = {1, 1, 2}, dp[3] = {offsetof(struct s, i), offsetof(struct s, c),
					 offsetof(struct s, d)};
	int ty[3] = {MPI_INT, MPI_CHAR, MPI_DOUBLE}, h;
	CU_ASSERT_EQUAL_FATAL(bcs_type_build(3, bl, dp, ty, 1, &h), 0);
	struct bcs_type *t = bcs_type_get(h);
	CU_ASSERT_EQUAL(t->size, 4 + 1 + 16);
	CU_ASSERT_EQUAL(t->extent, (long)sizeof(struct s));
	CU_ASSERT_EQUAL(t->lb, 0);
	CU_ASSERT_EQUAL(t->basic, 0); /* mixed: no predefined op applies */
	CU_ASSERT_FALSE(bcs_op_valid(MPI_SUM, t->basic));
	CU_ASSERT_EQUAL(t->nelem, 4);
	uint8_t p[42];
	bcs_pack(t, x, 2, p);
	int i0, i1;
	double d1;
	memcpy(&i0, p, 4);
	memcpy(&d1, p + 13, 8);
	memcpy(&i1, p + 21, 4);
	CU_ASSERT(i0 == 7 && p[4] == 'x' && d1 == -2 && i1 == 9 && p[25] == 'y');
	memset(y, 0, sizeof(y));
	bcs_unpack(t, p, 42, y);
	CU_ASSERT(y[1].c == 'y' && y[1].d[1] == 4 && y[1].i == 9 && y[0].d[0] == 1.5);
	/* elements: whole items, then whole blocks of the partial one */
	CU_ASSERT_EQUAL(bcs_type_elements(t, 42), 8);
	CU_ASSERT_EQUAL(bcs_type_elements(t, 21 + 4 + 1), 4 + 2);
	CU_ASSERT_EQUAL(bcs_type_elements(t, 21 + 4 + 1 + 8), 4 + 3);
	CU_ASSERT_EQUAL(bcs_type_elements(t, 21 + 4 + 1 + 3), -1);
	/* without padding (hindexed-like) the extent ends at the last byte */
	int h2;
	long bl2[2] = {1, 1}, dp2[2] = {0, 8};
	int ty2[2] = {MPI_DOUBLE, MPI_CHAR};
	CU_ASSERT_EQUAL_FATAL(bcs_type_build(2, bl2, dp2, ty2, 0, &h2), 0);
	CU_ASSERT_EQUAL(bcs_type_get(h2)->extent, 9);
	int h3;
	CU_ASSERT_EQUAL_FATAL(bcs_type_build(2, bl2, dp2, ty2, 1, &h3), 0);
	CU_ASSERT_EQUAL(bcs_type_get(h3)->extent, 16);
	bcs_type_free(&h);
	bcs_type_free(&h2);
	bcs_type_free(&h3);
}

/* indexed in typemap order, hvector, resized: what travels and where it lands */
static void test_indexed_resized(void)
{
	bcs_types_init();
	int ix, hv, rs, cont;
	int bl[3] = {2, 1, 3};
	long dp[3] = {9, 0, 5};
	CU_ASSERT_EQUAL_FATAL(bcs_type_indexed(3, bl, dp, 0, MPI_INT, &ix), 0);
	struct bcs_type *t = bcs_type_get(ix);
	CU_ASSERT_EQUAL(t->size, 24);
	CU_ASSERT_EQUAL(t->extent, 44);
	CU_ASSERT_EQUAL(t->basic, MPI_INT);
	int src[32], out[16];
	for (int i = 0; i < 32; i++)
		src[i] = i;
	bcs_pack(t, src, 1, out);
	int want[6] = {9, 10, 0, 5, 6, 7};
	CU_ASSERT_EQUAL(memcmp(out, want, sizeof(want)), 0);
	/* byte displacements: the same map */
	long bdp[3] = {36, 0, 20};
	int ixb;
	CU_ASSERT_EQUAL_FATAL(bcs_type_indexed(3, bl, bdp, 1, MPI_INT, &ixb), 0);
	bcs_pack(bcs_type_get(ixb), src, 1, out);
	CU_ASSERT_EQUAL(memcmp(out, want, sizeof(want)), 0);
	CU_ASSERT_EQUAL_FATAL(bcs_type_hvector(3, 2, 20, MPI_INT, &hv), 0);
	bcs_pack(bcs_type_get(hv), src, 1, out);
	CU_ASSERT(out[0] == 0 && out[1] == 1 && out[2] == 5 && out[5] == 11);
	/* a 4-int column of a 4x4 matrix resized to one int: items interleave */
	int col;
	CU_ASSERT_EQUAL_FATAL(bcs_type_vector(4, 1, 4, MPI_INT, &col), 0);
	CU_ASSERT_EQUAL_FATAL(bcs_type_resized(col, 0, 4, &rs), 0);
	t = bcs_type_get(rs);
	CU_ASSERT_EQUAL(t->extent, 4);
	CU_ASSERT_EQUAL(t->true_ub - t->true_lb, 13 * 4);
	bcs_pack(t, src, 2, out);
	CU_ASSERT(out[0] == 0 && out[1] == 4 && out[3] == 12 && out[4] == 1 && out[7] == 13);
	/* contiguous over a resized type steps by the new extent */
	CU_ASSERT_EQUAL_FATAL(bcs_type_contiguous(4, rs, &cont), 0);
	bcs_pack(bcs_type_get(cont), src, 1, out);
	CU_ASSERT(out[4] == 1 && out[8] == 2 && out[15] == 15);
	int d;
	CU_ASSERT_EQUAL_FATAL(bcs_type_dup(rs, &d), 0);
	CU_ASSERT_EQUAL(bcs_type_get(d)->extent, 4);
	bcs_type_free(&d);
	bcs_type_free(&ix);
	bcs_type_free(&ixb);
	bcs_type_free(&hv);
	bcs_type_free(&rs);
	bcs_type_free(&col);
	bcs_type_free(&cont);
}

/* bounds of a type made of 4-byte resized items, as MPI-3.1 §4.1 defines
 * them with explicit lb/ub markers (MPICH's answers) */
static void check_bounds(int h, long size, long lb, long extent, long tlb, long text)
{
	const struct bcs_type *t = bcs_type_get(h);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(t->size, size);
	CU_ASSERT_EQUAL(t->lb, lb);
	CU_ASSERT_EQUAL(t->extent, extent);
	CU_ASSERT_EQUAL(t->true_lb, tlb);
	CU_ASSERT_EQUAL(t->true_ub - t->true_lb, text);
}

static void test_negative_extent(void)
{
	bcs_types_init();
	int four, pos, neg, h;
	CU_ASSERT_EQUAL_FATAL(bcs_type_contiguous(4, MPI_BYTE, &four), 0);
	/* {(LB,-3), 4*(BYTE,0), (UB,6)} and {(LB,6), 4*(BYTE,0), (UB,-3)} */
	CU_ASSERT_EQUAL_FATAL(bcs_type_resized(four, -3, 9, &pos), 0);
	CU_ASSERT_EQUAL_FATAL(bcs_type_resized(four, 6, -9, &neg), 0);
	check_bounds(neg, 4, 6, -9, 0, 4);
	static const struct {
		int count, blen, stride, neg;
		long size, lb, extent, tlb, text;
	} cases[] = {
		{3, 1, 1, 0, 12, -3, 27, 0, 22},     {3, 4, 1, 0, 48, -3, 54, 0, 49},
		{3, 4, 5, 0, 48, -3, 126, 0, 121},   {3, 4, -5, 0, 48, -93, 126, -90, 121},
		{3, 1, 1, 1, 12, -12, 9, -18, 22},   {3, 4, 5, 1, 48, -111, 108, -117, 121},
		{3, 4, -5, 1, 48, -21, 108, -27, 121},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		CU_ASSERT_EQUAL_FATAL(bcs_type_vector(cases[k].count, cases[k].blen,
						      cases[k].stride, cases[k].neg ? neg : pos,
						      &h), 0);
		check_bounds(h, cases[k].size, cases[k].lb, cases[k].extent, cases[k].tlb,
			     cases[k].text);
		bcs_type_free(&h);
	}
	/* contiguous of the negative type: the same as vector(3, 1, 1) */
	CU_ASSERT_EQUAL_FATAL(bcs_type_contiguous(3, neg, &h), 0);
	check_bounds(h, 12, -12, 9, -18, 22);
	bcs_type_free(&h);
	bcs_type_free(&four);
	bcs_type_free(&pos);
	bcs_type_free(&neg);
}

/* external32: big-endian, long narrowed to 4 bytes and sign-extended back,
 * a pair type's value then its int, complex halves each swapped */
static void test_external32(void)
{
	bcs_types_init();
	long l[2] = {-3, 0x12345678};
	unsigned char ext[64], nat[64];
	const struct bcs_type *t = bcs_type_get(MPI_LONG);
	CU_ASSERT_EQUAL(bcs_ext32_size(t, 2), 8);
	bcs_ext32(t, 2, (unsigned char *)l, ext, true);
	static const unsigned char want_l[] = {0xff, 0xff, 0xff, 0xfd, 0x12, 0x34, 0x56, 0x78};
	CU_ASSERT(memcmp(ext, want_l, 8) == 0);
	long back[2] = {0, 0};
	bcs_ext32(t, 2, (unsigned char *)back, ext, false);
	CU_ASSERT(back[0] == -3 && back[1] == 0x12345678);
	/* MPI_DOUBLE_INT packs as 8 + 4 bytes: 12 in external32 too */
	struct {
		double d;
		int i;
	} p = {1.0, 258};
	t = bcs_type_get(MPI_DOUBLE_INT);
	CU_ASSERT_EQUAL(bcs_ext32_size(t, 1), 12);
	bcs_pack(t, &p, 1, nat);
	bcs_ext32(t, 1, nat, ext, true);
	static const unsigned char want_p[] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2};
	CU_ASSERT(memcmp(ext, want_p, 12) == 0);
	float _Complex z = 1.0f + 2.0f * _Complex_I;
	t = bcs_type_get(MPI_C_FLOAT_COMPLEX);
	bcs_ext32(t, 1, (unsigned char *)&z, ext, true);
	static const unsigned char want_z[] = {0x3f, 0x80, 0, 0, 0x40, 0, 0, 0};
	CU_ASSERT(memcmp(ext, want_z, 8) == 0);
	/* unsigned long: narrowed, not sign-extended back */
	unsigned long u = 0xfffffff0UL, ub = 0;
	t = bcs_type_get(MPI_UNSIGNED_LONG);
	bcs_ext32(t, 1, (unsigned char *)&u, ext, true);
	bcs_ext32(t, 1, (unsigned char *)&ub, ext, false);
	CU_ASSERT_EQUAL(ub, 0xfffffff0UL);
	/* a bool travels as 0 or 1; a long double as binary128 (1.0: 3fff 0...) */
	_Bool bv = 1;
	memset(&bv, 2, 1);
	bcs_ext32(bcs_type_get(MPI_C_BOOL), 1, (unsigned char *)&bv, ext, true);
	CU_ASSERT_EQUAL(ext[0], 1);
	long double ld = 1.0L, ldb = 0;
	bcs_ext32(bcs_type_get(MPI_LONG_DOUBLE), 1, (unsigned char *)&ld, ext, true);
	CU_ASSERT(ext[0] == 0x3f && ext[1] == 0xff && ext[2] == 0 && ext[15] == 0);
	bcs_ext32(bcs_type_get(MPI_LONG_DOUBLE), 1, (unsigned char *)&ldb, ext, false);
	CU_ASSERT(ldb == 1.0L);
}

/* copies of a contiguous type are one block, however many: a type of more
 * than INT_MAX bytes is built at once */
static void test_large_contig(void)
{
	bcs_types_init();
	long bl[2] = {5000000000L, 3}, d[2] = {0, 5000000000L};
	int olds[2] = {MPI_CHAR, MPI_CHAR}, h;
	CU_ASSERT_EQUAL_FATAL(bcs_type_build(2, bl, d, olds, 0, &h), 0);
	const struct bcs_type *t = bcs_type_get(h);
	CU_ASSERT(t->nblocks == 1 && t->size == 5000000003L && t->extent == 5000000003L);
	bcs_type_free(&h);
	/* of a pair type with a gap (not contiguous): a block per copy still */
	long b3 = 3, z = 0;
	int di = MPI_DOUBLE_INT;
	CU_ASSERT_EQUAL_FATAL(bcs_type_build(1, &b3, &z, &di, 0, &h), 0);
	CU_ASSERT_EQUAL(bcs_type_get(h)->nblocks, 3);
	bcs_type_free(&h);
}

/* MPI_Get_elements counts a pair type's value and int apart: 2 a pair */
static void test_pair_elements(void)
{
	bcs_types_init();
	const struct bcs_type *t = bcs_type_get(MPI_DOUBLE_INT);
	long n = bcs_basic_size(MPI_DOUBLE_INT);
	CU_ASSERT_EQUAL(bcs_type_elements(t, 2 * n), 4);
	CU_ASSERT_EQUAL(bcs_type_elements(t, n + (long)sizeof(double)), 3);
	CU_ASSERT_EQUAL(bcs_type_elements(t, n + 3), -1);
	CU_ASSERT_EQUAL(bcs_type_elements(bcs_type_get(MPI_2INT), 8), 2);
}

/* a type freed while a receive holds it keeps its layout and its slot */
static void test_type_refs(void)
{
	bcs_types_init();
	int vec, other;
	CU_ASSERT_EQUAL_FATAL(bcs_type_vector(4, 1, 2, MPI_INT, &vec), 0);
	int held = vec;
	CU_ASSERT_EQUAL(bcs_type_hold(held), 0);
	CU_ASSERT_EQUAL(bcs_type_free(&vec), 0);
	CU_ASSERT_EQUAL(vec, MPI_DATATYPE_NULL);
	/* invalid to its user, a second free fails; alive for the holder */
	CU_ASSERT_PTR_NULL(bcs_type_get(held));
	CU_ASSERT_EQUAL(bcs_type_free(&held), MPI_ERR_TYPE);
	CU_ASSERT_EQUAL(bcs_type_hold(held), MPI_ERR_TYPE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bcs_type_held(held));
	/* new types do not take its slot */
	CU_ASSERT_EQUAL_FATAL(bcs_type_contiguous(8, MPI_INT, &other), 0);
	CU_ASSERT_NOT_EQUAL(other, held);
	int in[4] = {1, 2, 3, 4}, out[8] = {0};
	bcs_unpack(bcs_type_held(held), in, sizeof(in), out);
	CU_ASSERT(out[0] == 1 && out[2] == 2 && out[4] == 3 && out[6] == 4 && out[1] == 0);
	bcs_type_release(held);
	CU_ASSERT_PTR_NULL(bcs_type_held(held));
	/* released before the free: the free destroys it */
	CU_ASSERT_EQUAL(bcs_type_hold(other), 0);
	bcs_type_release(other);
	int o = other;
	CU_ASSERT_EQUAL(bcs_type_free(&o), 0);
	CU_ASSERT_PTR_NULL(bcs_type_held(other));
	/* predefined types are never counted */
	CU_ASSERT_EQUAL(bcs_type_hold(MPI_INT), 0);
	bcs_type_release(MPI_INT);
	CU_ASSERT_PTR_NOT_NULL(bcs_type_get(MPI_INT));
}

/* ---- process sets */

static void test_dims_create(void)
{
	/* MPICH's answers */
	static const int cases[][6] = {
		{6, 2, 3, 2, 0, 0}, {8, 3, 2, 2, 2, 0}, {12, 2, 4, 3, 0, 0}, {20, 4, 5, 2, 2, 1},
		{42, 4, 7, 3, 2, 1}, {7, 2, 7, 1, 0, 0}, {360, 4, 6, 5, 4, 3}, {1, 3, 1, 1, 1, 0},
		{64, 3, 4, 4, 4, 0}, {128, 2, 16, 8, 0, 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int d[4] = {0, 0, 0, 0};
		CU_ASSERT_EQUAL(bcs_dims_create(cases[k][0], cases[k][1], d), 0);
		for (int i = 0; i < cases[k][1]; i++)
			CU_ASSERT_EQUAL(d[i], cases[k][2 + i]);
	}
	/* MPICH 4.0.2's answers (mpiexec -n 1 of a program printing
	 * MPI_Dims_create's): its balance search (the smallest spread, a
	 * later candidate winning a tie), large primes in dimensions of their
	 * own, prime powers dealt in turn, and squares computed in int */
	static const int more[][10] = {
		{5040, 3, 21, 16, 15},        {360, 3, 10, 6, 6},
		{2160, 4, 10, 6, 6, 6},       {2520, 4, 10, 7, 6, 6},
		{17280, 5, 10, 8, 6, 6, 6},   {19600, 6, 7, 7, 5, 5, 4, 4},
		{12600, 7, 7, 5, 5, 4, 3, 3, 2}, {362880, 8, 7, 6, 6, 6, 5, 4, 4, 3},
		{1024, 3, 16, 8, 8},          {7776, 5, 6, 6, 6, 6, 6},
		{6002, 3, 3001, 2, 1},        {9699, 4, 61, 53, 3, 1},
		{15015, 2, 143, 105},         {14400, 2, 120, 120},
		{2000000014, 2, 1000000007, 2}, {999999937, 3, 999999937, 1, 1},
		{2147483646, 3, 1661, 1302, 993}, {1000000000, 4, 200, 200, 200, 125},
		{1838378520, 4, 464237, 22, 15, 12},
	};
	for (size_t k = 0; k < sizeof(more) / sizeof(more[0]); k++) {
		int d[8] = {0};
		CU_ASSERT_EQUAL(bcs_dims_create(more[k][0], more[k][1], d), 0);
		int same = 1;
		for (int i = 0; i < more[k][1]; i++)
			same &= d[i] == more[k][2 + i];
		CU_ASSERT(same);
		if (!same)
			fprintf(stderr, "dims_create(%d, %d): %d %d %d ...\n", more[k][0],
				more[k][1], d[0], d[1], d[2]);
	}
	int f[3] = {0, 3, 0};
	CU_ASSERT_EQUAL(bcs_dims_create(24, 3, f), 0);
	CU_ASSERT(f[0] == 4 && f[1] == 3 && f[2] == 2);
	int bad[2] = {5, 0};
	CU_ASSERT_EQUAL(bcs_dims_create(12, 2, bad), MPI_ERR_DIMS);
	int full[2] = {3, 4};
	CU_ASSERT_EQUAL(bcs_dims_create(12, 2, full), 0);
	CU_ASSERT_EQUAL(bcs_dims_create(13, 2, full), MPI_ERR_DIMS);
	int neg[1] = {-1};
	CU_ASSERT_EQUAL(bcs_dims_create(4, 1, neg), MPI_ERR_DIMS);
}

static void test_group_ops(void)
{
	int a[4] = {6, 2, 4, 0}, b[3] = {1, 4, 6}, out[7];
	int n = bcs_ranks_setop(0, a, 4, b, 3, out);
	int want_u[5] = {6, 2, 4, 0, 1};
	CU_ASSERT_EQUAL_FATAL(n, 5);
	CU_ASSERT_EQUAL(memcmp(out, want_u, sizeof(want_u)), 0);
	n = bcs_ranks_setop(1, a, 4, b, 3, out);
	CU_ASSERT(n == 2 && out[0] == 6 && out[1] == 4);
	n = bcs_ranks_setop(2, a, 4, b, 3, out);
	CU_ASSERT(n == 2 && out[0] == 2 && out[1] == 0);
	CU_ASSERT_EQUAL(bcs_ranks_setop(1, a, 4, NULL, 0, out), 0);
	int r1[5] = {0, 1, 2, 3, MPI_PROC_NULL}, r2[5];
	CU_ASSERT_EQUAL(bcs_ranks_translate(a, 4, b, 3, 5, r1, r2), 0);
	CU_ASSERT(r2[0] == 2 && r2[1] == MPI_UNDEFINED && r2[2] == 1 && r2[3] == MPI_UNDEFINED &&
		  r2[4] == MPI_PROC_NULL);
	int badr[1] = {4};
	CU_ASSERT_EQUAL(bcs_ranks_translate(a, 4, b, 3, 1, badr, r2), MPI_ERR_RANK);
}

static void test_cart(void)
{
	int dims[3] = {4, 3, 2}, per[3] = {1, 0, 1}, co[3];
	for (int r = 0; r < 24; r++) {
		bcs_cart_coords(3, dims, r, 3, co);
		CU_ASSERT(co[0] == r / 6 && co[1] == (r / 2) % 3 && co[2] == r % 2);
		CU_ASSERT_EQUAL(bcs_cart_rank(3, dims, per, co), r);
	}
	int wrap[3] = {-1, 2, 3};
	CU_ASSERT_EQUAL(bcs_cart_rank(3, dims, per, wrap), 3 * 6 + 2 * 2 + 1);
	int off[3] = {0, 3, 0};
	CU_ASSERT_EQUAL(bcs_cart_rank(3, dims, per, off), -1);
	int two[2];
	bcs_cart_coords(3, dims, 23, 2, two); /* only the first maxdims */
	CU_ASSERT(two[0] == 3 && two[1] == 2);
}

/* ---- ops */

static void test_ops(void)
{
	int a[4] = {1, -5, 7, 0}, b[4] = {3, 2, 7, -1};
	CU_ASSERT_EQUAL(bcs_op_apply(MPI_SUM, MPI_INT, a, b, 4), 0);
	CU_ASSERT(b[0] == 4 && b[1] == -3 && b[2] == 14 && b[3] == -1);
	int c[2] = {5, 0}, d[2] = {3, 9};
	bcs_op_apply(MPI_MAX, MPI_INT, c, d, 2);
	CU_ASSERT(d[0] == 5 && d[1] == 9);
	bcs_op_apply(MPI_LAND, MPI_INT, c, d, 2);
	CU_ASSERT(d[0] == 1 && d[1] == 0);
	unsigned char x = 0xf0, y = 0x3c;
	bcs_op_apply(MPI_BXOR, MPI_BYTE, &x, &y, 1);
	CU_ASSERT_EQUAL(y, 0xcc);
	double e = 2.5, f = 4.0;
	bcs_op_apply(MPI_PROD, MPI_DOUBLE, &e, &f, 1);
	CU_ASSERT_DOUBLE_EQUAL(f, 10.0, 1e-12);
	uint64_t u = UINT64_MAX, v = 2;
	bcs_op_apply(MPI_MIN, MPI_UINT64_T, &u, &v, 1);
	CU_ASSERT_EQUAL(v, 2);
	/* MAXLOC on packed pairs: larger value; ties go to the smaller index */
	uint8_t in[12], io[12];
	double dv = 3.0;
	int di = 7;
	memcpy(in, &dv, 8);
	memcpy(in + 8, &di, 4);
	dv = 3.0;
	di = 2;
	memcpy(io, &dv, 8);
	memcpy(io + 8, &di, 4);
	CU_ASSERT_EQUAL(bcs_op_apply(MPI_MAXLOC, MPI_DOUBLE_INT, in, io, 1), 0);
	memcpy(&di, io + 8, 4);
	CU_ASSERT_EQUAL(di, 2);
	dv = 1.0;
	memcpy(io, &dv, 8);
	bcs_op_apply(MPI_MAXLOC, MPI_DOUBLE_INT, in, io, 1);
	memcpy(&di, io + 8, 4);
	CU_ASSERT_EQUAL(di, 7);
	int mi[2] = {4, 1}, mo[2] = {4, 0};
	bcs_op_apply(MPI_MINLOC, MPI_2INT, mi, mo, 1);
	CU_ASSERT(mo[0] == 4 && mo[1] == 0);
	/* ops that do not apply are refused, never computed */
	CU_ASSERT_EQUAL(bcs_op_apply(MPI_BAND, MPI_DOUBLE, &e, &f, 1), MPI_ERR_OP);
	CU_ASSERT_EQUAL(bcs_op_apply(MPI_SUM, MPI_BYTE, &x, &y, 1), MPI_ERR_OP);
	CU_ASSERT_EQUAL(bcs_op_apply(MPI_MAXLOC, MPI_INT, a, b, 1), MPI_ERR_OP);
	CU_ASSERT_EQUAL(bcs_op_apply(MPI_REPLACE, MPI_INT, a, b, 1), MPI_ERR_OP);
	CU_ASSERT_TRUE(bcs_op_valid(MPI_LOR, MPI_C_BOOL));
	CU_ASSERT_FALSE(bcs_op_valid(MPI_SUM, MPI_C_BOOL));
}

/* ---- trace codec */

static void test_trace_roundtrip(void)
{
	struct bcs_wild w[3] = {{3, 0}, {1, 70000}, {-1, -1}};
	uint64_t runs[4] = {3, 2, 1, 1}; /* 0 0 0 1 1 0 1 */
	int32_t idx[2] = {2, -1};
	uint64_t masks[1] = {0x8000000000000005ull};
	struct bcs_rank_trace r = {.rank = 5, .wild = w, .nwild = 3, .runs = runs, .nruns = 4,
				   .index = idx, .nindex = 2, .mask = masks, .nmask = 1};
	size_t len;
	uint8_t *sec = bcs_trace_encode_rank(&r, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
	/* at most 16 bytes per event, far less here */
	CU_ASSERT(len <= 16 * (3 + 7 + 2 + 1));
	struct bcs_rank_trace d;
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode_rank(sec, len, &d), 0);
	CU_ASSERT_EQUAL(d.rank, 5);
	CU_ASSERT_EQUAL_FATAL(d.nwild, 3);
	CU_ASSERT(d.wild[1].src == 1 && d.wild[1].tag == 70000 && d.wild[2].src == -1);
	CU_ASSERT_EQUAL_FATAL(d.nruns, 4);
	CU_ASSERT_EQUAL(bcs_trace_ntest(&d), 7);
	CU_ASSERT_EQUAL(memcmp(d.runs, runs, sizeof(runs)), 0);
	CU_ASSERT(d.nindex == 2 && d.index[0] == 2 && d.index[1] == -1);
	CU_ASSERT(d.nmask == 1 && d.mask[0] == masks[0]);
	bcs_rank_trace_free(&d);

	char *argv[2] = {"./prog", "arg one"};
	struct bcs_trace t = {.nodes = 4, .ranks = 8, .argc = 2, .argv = argv, .nsections = 1};
	size_t flen;
	uint8_t *file = bcs_trace_encode(&t, &sec, &len, &flen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	struct bcs_trace back;
	char why[128];
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(file, flen, &back, why, sizeof(why)), 0);
	CU_ASSERT(back.nodes == 4 && back.ranks == 8 && back.argc == 2);
	CU_ASSERT_STRING_EQUAL(back.argv[1], "arg one");
	CU_ASSERT(back.nsections == 1 && back.sec[0].rank == 5 && bcs_trace_ntest(&back.sec[0]) == 7);
	bcs_trace_free(&back);
	/* every truncation and every single-bit flip is either refused or
	 * decoded within bounds (ASan checks the reads in make unit-asan) */
	for (size_t n = 0; n < flen; n++) {
		if (bcs_trace_decode(file, n, &back, why, sizeof(why)) == 0) {
			CU_FAIL("a truncated trace decoded");
			bcs_trace_free(&back);
		}
	}
	uint8_t *flip = malloc(flen);
	for (size_t i = 0; i < flen * 8; i++) {
		memcpy(flip, file, flen);
		flip[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (bcs_trace_decode(flip, flen, &back, why, sizeof(why)) == 0)
			bcs_trace_free(&back);
	}
	free(flip);
	free(file);
	free(sec);
	/* a run of billions of flags costs its varint, never an allocation */
	uint8_t huge[] = {0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0};
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode_rank(huge, sizeof(huge), &d), 0);
	CU_ASSERT_EQUAL(bcs_trace_ntest(&d), 0xfffffffffull);
	bcs_rank_trace_free(&d);
}

/* a call refused for its rank or tag (kept as BCS_ARG_BAD by the library)
 * goes through a stream and a section, and is described as such */
static void test_trace_bad_args(void)
{
	uint8_t b[2 * BCS_EV_MAX];
	size_t n = bcs_stream_event(b, BCS_EV_CALL,
				    BCS_C_SEND | (uint64_t)((int64_t)BCS_ARG_BAD + 3) << 6, 1 + 1, 4);
	n += bcs_stream_event(b + n, BCS_EV_CALL, BCS_C_TESTSOME | (uint64_t)(0 + 3) << 6,
			      (uint64_t)((int64_t)BCS_ARG_BAD + 1), 0);
	struct bcs_rank_trace t = {0};
	CU_ASSERT_EQUAL_FATAL(bcs_stream_apply(&t, b, n), 0);
	CU_ASSERT_EQUAL_FATAL(t.ncalls, 2);
	size_t len;
	uint8_t *sec = bcs_trace_encode_rank(&t, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
	struct bcs_rank_trace d;
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode_rank(sec, len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(d.ncalls, 2);
	char what[160];
	bcs_call_describe(&d.calls[0], what, sizeof(what));
	CU_ASSERT_STRING_EQUAL(what, "MPI_Send(dest=invalid, tag=1, 4 bytes)");
	bcs_call_describe(&d.calls[1], what, sizeof(what));
	CU_ASSERT_STRING_EQUAL(what, "MPI_Testsome(source=0, tag=invalid, 0 bytes)");
	bcs_rank_trace_free(&d);
	bcs_rank_trace_free(&t);
	free(sec);
}

/* a section's MPI calls: kind, peer, tag, size, repeats; numbered from 1 */
static void test_trace_calls(void)
{
	struct bcs_call calls[4] = {
		{BCS_C_SEND, 3, 7, 4, 0},
		{BCS_C_TEST, -1, -1, 1u << 20, 999999}, /* a polling loop: one entry */
		{BCS_C_RECV, -2, 70000, 0, 0},
		{BCS_C_BARRIER, BCS_PEER_NONE, -1, 0, 0},
	};
	struct bcs_rank_trace r = {.rank = 1, .calls = calls, .ncalls = 4, .blocked = true,
				   .end = BCS_END_EXITED, .status = 15};
	size_t len;
	uint8_t *sec = bcs_trace_encode_rank(&r, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
	/* a few bytes a call: rank, 4 empty streams, end, status, marks, count, flag */
	CU_ASSERT(len <= 10 + 4 * 8);
	struct bcs_rank_trace d;
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode_rank(sec, len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(d.ncalls, 4);
	for (size_t i = 0; i < 4; i++)
		CU_ASSERT(d.calls[i].kind == calls[i].kind && d.calls[i].peer == calls[i].peer &&
			  d.calls[i].tag == calls[i].tag && d.calls[i].bytes == calls[i].bytes &&
			  d.calls[i].repeat == calls[i].repeat);
	CU_ASSERT(d.blocked && d.end == BCS_END_EXITED && d.status == 15);
	CU_ASSERT_EQUAL(bcs_trace_ncalls(&d), 1000003);
	CU_ASSERT(bcs_trace_call_at(&d, 1)->kind == BCS_C_SEND);
	CU_ASSERT(bcs_trace_call_at(&d, 2)->kind == BCS_C_TEST);
	CU_ASSERT(bcs_trace_call_at(&d, 1000001)->kind == BCS_C_TEST);
	CU_ASSERT(bcs_trace_call_at(&d, 1000002)->kind == BCS_C_RECV);
	CU_ASSERT(bcs_trace_call_at(&d, 1000003)->kind == BCS_C_BARRIER);
	CU_ASSERT_PTR_NULL(bcs_trace_call_at(&d, 0));
	CU_ASSERT_PTR_NULL(bcs_trace_call_at(&d, 1000004));
	char what[160];
	bcs_call_describe(&d.calls[0], what, sizeof(what));
	CU_ASSERT_STRING_EQUAL(what, "MPI_Send(dest=3, tag=7, 4 bytes)");
	bcs_call_describe(&d.calls[2], what, sizeof(what));
	CU_ASSERT_STRING_EQUAL(what, "MPI_Recv(source=MPI_PROC_NULL, tag=70000, 0 bytes)");
	bcs_call_describe(&d.calls[3], what, sizeof(what));
	CU_ASSERT_STRING_EQUAL(what, "MPI_Barrier(0 bytes)");
	bcs_rank_trace_free(&d);
	/* every truncation is refused; bit flips decode within bounds or not at all */
	for (size_t n = 0; n < len; n++)
		if (bcs_trace_decode_rank(sec, n, &d) == 0) {
			CU_FAIL("a truncated section decoded");
			bcs_rank_trace_free(&d);
		}
	for (size_t i = 0; i < len * 8; i++) {
		sec[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (bcs_trace_decode_rank(sec, len, &d) == 0) {
			CU_ASSERT(bcs_trace_call_at(&d, bcs_trace_ncalls(&d)) != NULL || !d.ncalls);
			bcs_rank_trace_free(&d);
		}
		sec[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	free(sec);

	/* streamed: a call, its repeats (from the rank and, at its end, from its
	 * daemon), another call, the daemon's word that it ended waiting */
	uint8_t b[128];
	size_t n = 0;
	n += bcs_stream_event(b + n, BCS_EV_CALL, BCS_C_IPROBE | (uint64_t)(-1 + 3) << 6, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_REPEAT, 4095, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_TEST, 0, 4096, 0); /* other streams between */
	n += bcs_stream_event(b + n, BCS_EV_REPEAT, 10, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_CALL, BCS_C_RECV | (uint64_t)(2 + 3) << 6, 999999 + 1, 4);
	n += bcs_stream_event(b + n, BCS_EV_BLOCKED, 0, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_EXIT, 9, 0, 0);
	struct bcs_rank_trace t = {.rank = 1, .end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL_FATAL(bcs_stream_apply(&t, b, n), 0);
	CU_ASSERT_EQUAL_FATAL(t.ncalls, 2);
	CU_ASSERT(t.calls[0].kind == BCS_C_IPROBE && t.calls[0].peer == -1 && t.calls[0].tag == -1 &&
		  t.calls[0].repeat == 4105);
	CU_ASSERT(t.calls[1].kind == BCS_C_RECV && t.calls[1].peer == 2 &&
		  t.calls[1].tag == 999999 && t.calls[1].bytes == 4 && t.calls[1].repeat == 0);
	CU_ASSERT(t.blocked && t.end == BCS_END_EXITED && bcs_trace_ncalls(&t) == 4107);
	bcs_rank_trace_free(&t);
	/* refused: repeats of no call, a call of kind 0 or beyond the last */
	uint8_t e[64];
	size_t m = bcs_stream_event(e, BCS_EV_REPEAT, 3, 0, 0);
	t = (struct bcs_rank_trace){.end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL(bcs_stream_apply(&t, e, m), -1);
	m = bcs_stream_event(e, BCS_EV_CALL, 0 | 3u << 6, 0, 0);
	CU_ASSERT_EQUAL(bcs_stream_apply(&t, e, m), -1);
	m = bcs_stream_event(e, BCS_EV_CALL, (BCS_C_MAX + 1) | 3u << 6, 0, 0);
	CU_ASSERT_EQUAL(bcs_stream_apply(&t, e, m), -1);
	bcs_rank_trace_free(&t);

	/* a version 2 file (before sections listed calls) still reads */
	const uint8_t v2[] = {'B', 'C', 'S', 'T', 2, 1, 1, 1, 1, 'p', 1, 7, 0, 0, 0, 0, 0, 1, 9};
	struct bcs_trace f;
	char why[128];
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(v2, sizeof(v2), &f, why, sizeof(why)), 0);
	CU_ASSERT(f.nsections == 1 && f.sec[0].end == BCS_END_EXITED && f.sec[0].ncalls == 0);
	bcs_trace_free(&f);
}

/* the streamed form: events as a rank makes them, folded into its section */
static void test_trace_stream(void)
{
	uint8_t b[512];
	size_t n = 0;
	n += bcs_stream_event(b + n, BCS_EV_TEST, 0, 0, 0); /* a recording rank's first */
	n += bcs_stream_event(b + n, BCS_EV_WPOST, 0, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_WPOST, 0, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_WDONE, 1, 4, 8); /* out of post order */
	n += bcs_stream_event(b + n, BCS_EV_TEST, 0, 1000000, 0);
	n += bcs_stream_event(b + n, BCS_EV_TEST, 0, 5, 0); /* the same flag: one run */
	n += bcs_stream_event(b + n, BCS_EV_TEST, 1, 1, 0);
	n += bcs_stream_event(b + n, BCS_EV_INDEX, 0, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_MASK, UINT64_MAX, 0, 0);
	size_t upto_exit = n;
	n += bcs_stream_event(b + n, BCS_EV_EXIT, 11, 0, 0);
	/* each event's length is found from its bytes, a partial one is none */
	size_t off = 0, k = 0;
	for (size_t len; off < n && (len = bcs_stream_event_len(b + off, n - off)); off += len)
		k++;
	CU_ASSERT(off == n && k == 10);
	CU_ASSERT_EQUAL(bcs_stream_event_len(b + upto_exit, 1), 0);
	struct bcs_rank_trace t = {.rank = 2, .end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL_FATAL(bcs_stream_apply(&t, b, n), 0);
	CU_ASSERT(t.nwild == 2 && t.wild[0].src == -1 && t.wild[1].src == 3 && t.wild[1].tag == 7);
	CU_ASSERT(t.nruns == 2 && t.runs[0] == 1000005 && t.runs[1] == 1);
	CU_ASSERT(t.nindex == 1 && t.index[0] == -1);
	CU_ASSERT(t.nmask == 1 && t.mask[0] == UINT64_MAX);
	CU_ASSERT(t.end == BCS_END_EXITED && t.status == 11);
	/* the section says how the rank ended, through the file */
	size_t len;
	uint8_t *sec = bcs_trace_encode_rank(&t, &len);
	struct bcs_rank_trace d;
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode_rank(sec, len, &d), 0);
	CU_ASSERT(d.end == BCS_END_EXITED && d.status == 11 && bcs_trace_ntest(&d) == 1000006);
	bcs_rank_trace_free(&d);
	free(sec);
	bcs_rank_trace_free(&t);

	/* ends: a node's word (EXIT) stands over the MM's (LOST); FINAL over EXIT */
	uint8_t e[64];
	size_t m = bcs_stream_event(e, BCS_EV_LOST, 0, 0, 0);
	t = (struct bcs_rank_trace){.end = BCS_END_RUNNING};
	CU_ASSERT(bcs_stream_apply(&t, e, m) == 0 && t.end == BCS_END_LOST);
	bcs_rank_trace_free(&t);
	m = bcs_stream_event(e, BCS_EV_EXIT, 9, 0, 0);
	m += bcs_stream_event(e + m, BCS_EV_LOST, 0, 0, 0);
	t = (struct bcs_rank_trace){.end = BCS_END_RUNNING};
	CU_ASSERT(bcs_stream_apply(&t, e, m) == 0 && t.end == BCS_END_EXITED && t.status == 9);
	bcs_rank_trace_free(&t);
	m = bcs_stream_event(e, BCS_EV_FINAL, 0, 0, 0);
	m += bcs_stream_event(e + m, BCS_EV_EXIT, 256, 0, 0);
	t = (struct bcs_rank_trace){.end = BCS_END_RUNNING};
	CU_ASSERT(bcs_stream_apply(&t, e, m) == 0 && t.end == BCS_END_FINALIZED);
	bcs_rank_trace_free(&t);
	/* refused: a completion of a receive never posted, an unknown event,
	 * a flag that is not 0 or 1 */
	m = bcs_stream_event(e, BCS_EV_WDONE, 0, 1, 1);
	t = (struct bcs_rank_trace){.end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL(bcs_stream_apply(&t, e, m), -1);
	bcs_rank_trace_free(&t);
	e[0] = 99;
	CU_ASSERT_EQUAL(bcs_stream_apply(&t, e, 1), -1);
	m = bcs_stream_event(e, BCS_EV_TEST, 2, 1, 0);
	CU_ASSERT_EQUAL(bcs_stream_apply(&t, e, m), -1);
	bcs_rank_trace_free(&t);
	/* every truncation of the stream is refused or folds within bounds */
	for (size_t cut = 0; cut < n; cut++) {
		t = (struct bcs_rank_trace){.end = BCS_END_RUNNING};
		bcs_stream_apply(&t, b, cut);
		bcs_rank_trace_free(&t);
	}

	/* a version 1 file (before sections said how their rank ended) still
	 * reads: its ranks all reached MPI_Finalize */
	const uint8_t v1[] = {'B', 'C', 'S', 'T', 1, 1, 1, 1, 1, 'p', 1, 5, 0, 0, 0, 0, 0};
	struct bcs_trace f;
	char why[128];
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(v1, sizeof(v1), &f, why, sizeof(why)), 0);
	CU_ASSERT(f.nsections == 1 && f.sec[0].end == BCS_END_FINALIZED);
	bcs_trace_free(&f);
	/* a version 2 file (before the job's id and checkpoint marks) still
	 * reads: no job, no marks */
	const uint8_t v2[] = {'B', 'C', 'S', 'T', 2, 1, 1, 1, 1, 'p', 1, 7, 0, 0, 0, 0, 0, 1, 11};
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(v2, sizeof(v2), &f, why, sizeof(why)), 0);
	CU_ASSERT(f.job == 0 && f.nsections == 1 && f.sec[0].nmarks == 0 &&
		  f.sec[0].end == BCS_END_EXITED && f.sec[0].status == 11);
	bcs_trace_free(&f);
}

/* checkpoint marks: the event its node daemon streams, folded into the
 * section, kept by the file with the job's id */
static void test_trace_marks(void)
{
	uint8_t b[4 * BCS_EV_MARK_MAX];
	size_t n = bcs_stream_event(b, BCS_EV_WPOST, 0, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_TEST, 0, 300, 0);
	struct bcs_mark m1 = {.ckpt = 7, .n = {1, 300, 0, 0}};
	struct bcs_mark big = {.ckpt = UINT64_MAX, .n = {UINT64_MAX, UINT64_MAX, 1, 2}};
	size_t k = bcs_stream_mark(b + n, &m1);
	CU_ASSERT_EQUAL(bcs_stream_event_len(b + n, k), k);
	n += k;
	k = bcs_stream_mark(b + n, &big);
	CU_ASSERT(k <= BCS_EV_MARK_MAX);
	CU_ASSERT_EQUAL(bcs_stream_event_len(b + n, k), k);
	n += k;
	n += bcs_stream_mark(b + n, &m1); /* a report sent again: the same mark */
	CU_ASSERT_EQUAL(bcs_stream_event(b + n, BCS_EV_MARK, 1, 2, 3), 0);
	struct bcs_rank_trace t = {.rank = 1, .end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL_FATAL(bcs_stream_apply(&t, b, n), 0);
	CU_ASSERT_EQUAL_FATAL(t.nmarks, 2);
	const struct bcs_mark *got = bcs_trace_mark(&t, 7);
	CU_ASSERT(got && !memcmp(got, &m1, sizeof(m1)));
	got = bcs_trace_mark(&t, UINT64_MAX);
	CU_ASSERT(got && !memcmp(got, &big, sizeof(big)));
	CU_ASSERT_PTR_NULL(bcs_trace_mark(&t, 8));
	/* a truncated mark is refused */
	struct bcs_rank_trace u = {.rank = 1, .end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL(bcs_stream_apply(&u, b + n - k, k - 1), -1);
	bcs_rank_trace_free(&u);

	size_t len, flen;
	uint8_t *sec = bcs_trace_encode_rank(&t, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
	char *argv[1] = {"./prog"};
	struct bcs_trace f = {.job = 42, .nodes = 1, .ranks = 2, .argc = 1, .argv = argv,
			      .nsections = 1};
	uint8_t *file = bcs_trace_encode(&f, &sec, &len, &flen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	struct bcs_trace back;
	char why[128];
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(file, flen, &back, why, sizeof(why)), 0);
	CU_ASSERT(back.job == 42 && back.nsections == 1 && back.sec[0].nmarks == 2);
	got = bcs_trace_mark(&back.sec[0], 7);
	CU_ASSERT(got && !memcmp(got, &m1, sizeof(m1)));
	bcs_trace_free(&back);
	for (size_t cut = 0; cut < flen; cut++)
		if (bcs_trace_decode(file, cut, &back, why, sizeof(why)) == 0) {
			CU_FAIL("a truncated trace with marks decoded");
			bcs_trace_free(&back);
		}
	free(file);
	free(sec);
	bcs_rank_trace_free(&t);
}

/* version 4: a section holds its marks and its calls, streamed as events
 * of their own kinds; a version 3 file (marks, no calls) still reads */
static void test_trace_marks_calls(void)
{
	uint8_t b[4 * BCS_EV_MARK_MAX];
	size_t n = bcs_stream_event(b, BCS_EV_CALL, BCS_C_IRECV | (uint64_t)(-1 + 3) << 6, 5 + 1, 4);
	n += bcs_stream_event(b + n, BCS_EV_WPOST, 0, 0, 0);
	n += bcs_stream_event(b + n, BCS_EV_REPEAT, 2, 0, 0);
	struct bcs_mark mk = {.ckpt = 3, .n = {1, 0, 0, 0}};
	n += bcs_stream_mark(b + n, &mk);
	n += bcs_stream_event(b + n, BCS_EV_REPEAT, 4, 0, 0); /* after the mark: the same call */
	n += bcs_stream_event(b + n, BCS_EV_CALL, BCS_C_BARRIER | (uint64_t)(BCS_PEER_NONE + 3) << 6,
			      0, 0);
	struct bcs_rank_trace t = {.rank = 0, .end = BCS_END_RUNNING};
	CU_ASSERT_EQUAL_FATAL(bcs_stream_apply(&t, b, n), 0);
	CU_ASSERT(t.nmarks == 1 && t.ncalls == 2 && t.calls[0].repeat == 6 && t.nwild == 1);
	CU_ASSERT(bcs_trace_mark(&t, 3) && bcs_trace_ncalls(&t) == 8);
	size_t len, flen;
	uint8_t *sec = bcs_trace_encode_rank(&t, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
	char *argv[1] = {"./prog"};
	struct bcs_trace f = {.job = 9, .nodes = 1, .ranks = 1, .argc = 1, .argv = argv,
			      .nsections = 1};
	uint8_t *file = bcs_trace_encode(&f, &sec, &len, &flen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	struct bcs_trace back;
	char why[128];
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(file, flen, &back, why, sizeof(why)), 0);
	CU_ASSERT(back.version == BCS_TRACE_VERSION && back.job == 9 && back.sec[0].nmarks == 1 &&
		  back.sec[0].ncalls == 2 && bcs_trace_ncalls(&back.sec[0]) == 8 &&
		  back.sec[0].calls[1].kind == BCS_C_BARRIER);
	bcs_trace_free(&back);
	free(file);
	free(sec);
	bcs_rank_trace_free(&t);

	const uint8_t v3[] = {'B', 'C', 'S', 'T', 3, 1, 1, 5, 1, 1, 'p', 1, 13,
			      0, 0, 0, 0, 0, 1, 11, 1, 2, 1, 2, 3, 4};
	CU_ASSERT_EQUAL_FATAL(bcs_trace_decode(v3, sizeof(v3), &back, why, sizeof(why)), 0);
	CU_ASSERT(back.version == 3 && back.job == 5 && back.nsections == 1 &&
		  back.sec[0].ncalls == 0 && !back.sec[0].blocked && back.sec[0].nmarks == 1 &&
		  back.sec[0].marks[0].ckpt == 2 && back.sec[0].marks[0].n[3] == 4 &&
		  back.sec[0].end == BCS_END_EXITED && back.sec[0].status == 11);
	bcs_trace_free(&back);
	/* the same bytes as version 4 lack the calls: refused, not misread */
	uint8_t v4[sizeof(v3)];
	memcpy(v4, v3, sizeof(v3));
	v4[4] = 4;
	CU_ASSERT_EQUAL(bcs_trace_decode(v4, sizeof(v4), &back, why, sizeof(why)), -1);
}

static void test_b64(void)
{
	const uint8_t in[5] = {0, 0xff, 0x10, 'a', 'b'};
	for (size_t n = 0; n <= 5; n++) {
		char *e = bcs_b64_encode(in, n);
		size_t len;
		uint8_t *d = bcs_b64_decode(e, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		CU_ASSERT_EQUAL(len, n);
		CU_ASSERT_EQUAL(memcmp(d, in, n), 0);
		free(d);
		free(e);
	}
	size_t len;
	CU_ASSERT_PTR_NULL(bcs_b64_decode("ab=c", &len));
	CU_ASSERT_PTR_NULL(bcs_b64_decode("abc", &len));
	CU_ASSERT_PTR_NULL(bcs_b64_decode("a!cd", &len));
}

/* ---- a rank's state in a checkpoint (chan_ckpt.h) */

static void test_ckpt_state(void)
{
	struct bcs_area *a = calloc(1, BCS_AREA_SIZE), *b = calloc(1, BCS_AREA_SIZE);
	/* the rank posted 5 descriptors, the daemon collected 3 of them; the
	 * ring has wrapped (indices near UINT32_MAX) */
	a->sub_tail = UINT32_MAX - 1;
	a->sub_head = a->sub_tail + 2;
	a->sub[(a->sub_tail) % BCS_SUB_RING] = (struct bcs_desc){.op = BCS_OP_RECV, .req = 41};
	a->sub[(a->sub_tail + 1) % BCS_SUB_RING] = (struct bcs_desc){.op = BCS_OP_SEND, .req = 42};
	a->comp_head = 7;
	a->comp_tail = 5;
	struct bcs_desc pend[3] = {{.op = BCS_OP_INIT},
				   {.op = BCS_OP_SEND, .req = 3, .peer = 1, .tag = 9, .len = 100},
				   {.op = BCS_OP_BARRIER, .req = 8}};
	struct bcs_ckpt_hdr h = {.rank = 6, .local = 2, .npend = 3, .job = 77};
	size_t n = bcs_ckpt_size(3);
	uint8_t *buf = malloc(n + 1);
	CU_ASSERT_EQUAL(bcs_ckpt_encode(buf, &h, pend, a), n);
	struct bcs_ckpt_view v;
	char err[256];
	CU_ASSERT_EQUAL(bcs_ckpt_decode(buf, n, &v, err, sizeof(err)), 0);
	CU_ASSERT(v.h.rank == 6 && v.h.local == 2 && v.h.npend == 3 && v.h.job == 77);
	CU_ASSERT_EQUAL(bcs_ckpt_restore_area(b, &v, err, sizeof(err)), 0);
	/* the pending ones come first, then what was not collected */
	CU_ASSERT_EQUAL(b->sub_head - b->sub_tail, 5u);
	uint32_t expect_req[5] = {0, 3, 8, 41, 42}, expect_op[5] = {BCS_OP_INIT, BCS_OP_SEND,
								     BCS_OP_BARRIER, BCS_OP_RECV,
								     BCS_OP_SEND};
	for (uint32_t i = 0; i < 5; i++) {
		const struct bcs_desc *d = &b->sub[(b->sub_tail + i) % BCS_SUB_RING];
		CU_ASSERT(d->req == expect_req[i] && d->op == expect_op[i]);
	}
	CU_ASSERT(b->comp_head == 7 && b->comp_tail == 5);
	/* every truncation and a trailing byte are refused */
	for (size_t k = 0; k < n; k += (k < 64 ? 1 : 4093))
		CU_ASSERT_EQUAL(bcs_ckpt_decode(buf, k, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(bcs_ckpt_decode(buf, n + 1, &v, err, sizeof(err)), -EINVAL);
	/* another version, another area size */
	buf[4] ^= 1;
	CU_ASSERT_EQUAL(bcs_ckpt_decode(buf, n, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "version") != NULL);
	buf[4] ^= 1;
	buf[20] ^= 1;
	CU_ASSERT_EQUAL(bcs_ckpt_decode(buf, n, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "channel area") != NULL);
	buf[20] ^= 1;
	/* more than the ring holds */
	a->sub_head = a->sub_tail + BCS_SUB_RING - 1;
	bcs_ckpt_encode(buf, &h, pend, a);
	CU_ASSERT_EQUAL(bcs_ckpt_decode(buf, n, &v, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(bcs_ckpt_restore_area(b, &v, err, sizeof(err)), -ENOSPC);
	CU_ASSERT(strstr(err, "exceed the submit ring") != NULL);
	free(buf);
	free(a);
	free(b);
}

/* ---- one-sided batches */

static void test_rma_batch(void)
{
	bcs_types_init();
	long win[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	struct bcs_rma_buf b = {0};
	struct bcs_block one = {.off = 2 * sizeof(long), .len = sizeof(long)};
	/* put 40 into [2], sum 5 into [2], get [2], max into [3], cas [4] 4 -> 44,
	 * cas [5] with a wrong comparand, get_accumulate replace [6], no-op read [6] */
	long v = 40;
	memcpy(bcs_rma_add(&b, BCS_RMA_PUT, 0, MPI_LONG, &one, 1), &v, sizeof(v));
	v = 5;
	memcpy(bcs_rma_add(&b, BCS_RMA_ACC, MPI_SUM, MPI_LONG, &one, 1), &v, sizeof(v));
	CU_ASSERT_PTR_NOT_NULL(bcs_rma_add(&b, BCS_RMA_GET, 0, MPI_LONG, &one, 1));
	struct bcs_block three = {.off = 3 * sizeof(long), .len = sizeof(long)};
	v = 2;
	memcpy(bcs_rma_add(&b, BCS_RMA_ACC, MPI_MAX, MPI_LONG, &three, 1), &v, sizeof(v));
	struct bcs_block four = {.off = 4 * sizeof(long), .len = sizeof(long)};
	long cas[2] = {4, 44};
	memcpy(bcs_rma_add(&b, BCS_RMA_CAS, 0, MPI_LONG, &four, 1), cas, sizeof(cas));
	struct bcs_block five = {.off = 5 * sizeof(long), .len = sizeof(long)};
	long cas2[2] = {4, 55};
	memcpy(bcs_rma_add(&b, BCS_RMA_CAS, 0, MPI_LONG, &five, 1), cas2, sizeof(cas2));
	struct bcs_block six = {.off = 6 * sizeof(long), .len = sizeof(long)};
	v = 66;
	memcpy(bcs_rma_add(&b, BCS_RMA_GACC, MPI_REPLACE, MPI_LONG, &six, 1), &v, sizeof(v));
	CU_ASSERT_PTR_NOT_NULL(bcs_rma_add(&b, BCS_RMA_GACC, MPI_NO_OP, MPI_LONG, &six, 1));
	CU_ASSERT_EQUAL(b.nrec, 8);
	CU_ASSERT_EQUAL(b.reply, 5 * sizeof(long));
	long rep[5] = {0};
	uint64_t rlen = 0;
	CU_ASSERT_EQUAL(bcs_rma_apply(win, sizeof(win), b.p, b.len, rep, sizeof(rep), &rlen), 0);
	CU_ASSERT_EQUAL(rlen, sizeof(rep));
	CU_ASSERT_EQUAL(win[2], 45);
	CU_ASSERT_EQUAL(rep[0], 45);
	CU_ASSERT_EQUAL(win[3], 3);
	CU_ASSERT_EQUAL(win[4], 44);
	CU_ASSERT_EQUAL(rep[1], 4);
	CU_ASSERT_EQUAL(win[5], 5);
	CU_ASSERT_EQUAL(rep[2], 5);
	CU_ASSERT_EQUAL(rep[3], 6);
	CU_ASSERT_EQUAL(rep[4], 66);
	CU_ASSERT_EQUAL(win[6], 66);
	CU_ASSERT_EQUAL(win[0], 0);
	CU_ASSERT_EQUAL(win[7], 7);
	bcs_rma_buf_free(&b);
}

static void test_rma_errors(void)
{
	bcs_types_init();
	double win[4] = {1, 2, 3, 4};
	struct bcs_rma_buf b = {0};
	/* a block past the end: range error, the record before stays applied */
	struct bcs_block ok = {.off = 0, .len = sizeof(double)},
			 past = {.off = 3 * sizeof(double), .len = 2 * sizeof(double)};
	double v = 9;
	memcpy(bcs_rma_add(&b, BCS_RMA_PUT, 0, MPI_DOUBLE, &ok, 1), &v, sizeof(v));
	memcpy(bcs_rma_add(&b, BCS_RMA_PUT, 0, MPI_DOUBLE, &past, 1), &v, sizeof(v));
	uint64_t rlen;
	CU_ASSERT_EQUAL(bcs_rma_apply(win, sizeof(win), b.p, b.len, NULL, 0, &rlen),
			MPI_ERR_RMA_RANGE);
	CU_ASSERT_EQUAL(win[0], 9);
	CU_ASSERT_EQUAL(win[3], 4);
	bcs_rma_buf_free(&b);
	/* a bitwise op on doubles does not apply */
	memcpy(bcs_rma_add(&b, BCS_RMA_ACC, MPI_BXOR, MPI_DOUBLE, &ok, 1), &v, sizeof(v));
	CU_ASSERT_EQUAL(bcs_rma_apply(win, sizeof(win), b.p, b.len, NULL, 0, &rlen), MPI_ERR_OP);
	/* every truncation of a batch is refused, never read past */
	struct bcs_rma_buf c = {0};
	memcpy(bcs_rma_add(&c, BCS_RMA_ACC, MPI_SUM, MPI_DOUBLE, &ok, 1), &v, sizeof(v));
	for (uint64_t n = 1; n < c.len; n++) {
		uint8_t *cut = malloc(n);
		memcpy(cut, c.p, n);
		CU_ASSERT_NOT_EQUAL(bcs_rma_apply(win, sizeof(win), cut, n, NULL, 0, &rlen), 0);
		free(cut);
	}
	/* no room for a fetch's answer */
	struct bcs_rma_buf d = {0};
	CU_ASSERT_PTR_NOT_NULL(bcs_rma_add(&d, BCS_RMA_GET, 0, MPI_DOUBLE, &ok, 1));
	double r1;
	CU_ASSERT_EQUAL(bcs_rma_apply(win, sizeof(win), d.p, d.len, &r1, 4, &rlen), MPI_ERR_ARG);
	bcs_rma_buf_free(&b);
	bcs_rma_buf_free(&c);
	bcs_rma_buf_free(&d);
}

/* A dynamic window's batch: checked against the attached regions before
 * anything is applied, then applied at absolute addresses. */
static void test_rma_regions(void)
{
	bcs_types_init();
	/* one array, so what lies between the regions is known: r1, a gap of
	 * one long, r2, a gap, then memory never attached */
	long mem[10] = {1, 2, 3, 4, -1, 5, 6, -1, 7, 8};
	long *r1 = mem, *r2 = mem + 5, *gone = mem + 8;
	struct bcs_rma_region rg[2] = {{(uint64_t)(uintptr_t)r1, 4 * sizeof(long)},
				       {(uint64_t)(uintptr_t)r2, 2 * sizeof(long)}};
	struct bcs_block in1 = {.off = (long)(uintptr_t)&r1[3], .len = sizeof(long)},
			 in2 = {.off = (long)(uintptr_t)r2, .len = 2 * sizeof(long)},
			 out = {.off = (long)(uintptr_t)&gone[1], .len = sizeof(long)},
			 straddle = {.off = (long)(uintptr_t)&r1[3], .len = 2 * sizeof(long)};
	struct bcs_rma_buf b = {0};
	long v = 40, w2[2] = {50, 60};
	memcpy(bcs_rma_add(&b, BCS_RMA_PUT, 0, MPI_LONG, &in1, 1), &v, sizeof(v));
	memcpy(bcs_rma_add(&b, BCS_RMA_ACC, MPI_SUM, MPI_LONG, &in2, 1), w2, sizeof(w2));
	CU_ASSERT_PTR_NOT_NULL(bcs_rma_add(&b, BCS_RMA_GET, 0, MPI_LONG, &in1, 1));
	uint64_t bad = 0, rlen = 0;
	CU_ASSERT_EQUAL(bcs_rma_check(b.p, b.len, rg, 2, &bad), 0);
	long got = 0;
	CU_ASSERT_EQUAL(bcs_rma_apply(NULL, BCS_RMA_ANY, b.p, b.len, &got, sizeof(got), &rlen), 0);
	CU_ASSERT(r1[3] == 40 && r2[0] == 55 && r2[1] == 66 && got == 40 && rlen == sizeof(got));
	/* a block in no region, or across a region's end: the first one named */
	memcpy(bcs_rma_add(&b, BCS_RMA_PUT, 0, MPI_LONG, &out, 1), &v, sizeof(v));
	CU_ASSERT_EQUAL(bcs_rma_check(b.p, b.len, rg, 2, &bad), MPI_ERR_RMA_RANGE);
	CU_ASSERT_EQUAL(bad, (uint64_t)(uintptr_t)&gone[1]);
	CU_ASSERT_EQUAL(bcs_rma_check(b.p, b.len, rg, 0, &bad), MPI_ERR_RMA_RANGE);
	CU_ASSERT_EQUAL(bad, (uint64_t)(uintptr_t)&r1[3]);
	bcs_rma_buf_free(&b);
	memcpy(bcs_rma_add(&b, BCS_RMA_PUT, 0, MPI_LONG, &straddle, 1), w2, sizeof(w2));
	CU_ASSERT_EQUAL(bcs_rma_check(b.p, b.len, rg, 2, &bad), MPI_ERR_RMA_RANGE);
	CU_ASSERT_EQUAL(bad, (uint64_t)(uintptr_t)&r1[3]);
	/* the gap attached too: one block may run across regions side by
	 * side, in whatever order they were attached; not one byte further */
	struct bcs_rma_region side[3] = {rg[1], {(uint64_t)(uintptr_t)&mem[4], sizeof(long)},
					 rg[0]};
	CU_ASSERT_EQUAL(bcs_rma_check(b.p, b.len, side, 3, &bad), 0);
	struct bcs_block across = {.off = (long)(uintptr_t)&r1[1], .len = 6 * sizeof(long)},
			 past = {.off = (long)(uintptr_t)&r1[1], .len = 7 * sizeof(long)};
	struct bcs_rma_buf e = {0};
	CU_ASSERT_PTR_NOT_NULL(bcs_rma_add(&e, BCS_RMA_GET, 0, MPI_LONG, &across, 1));
	CU_ASSERT_EQUAL(bcs_rma_check(e.p, e.len, side, 3, &bad), 0);
	CU_ASSERT_EQUAL(bcs_rma_check(e.p, e.len, side, 2, &bad), MPI_ERR_RMA_RANGE);
	CU_ASSERT_PTR_NOT_NULL(bcs_rma_add(&e, BCS_RMA_GET, 0, MPI_LONG, &past, 1));
	CU_ASSERT_EQUAL(bcs_rma_check(e.p, e.len, side, 3, &bad), MPI_ERR_RMA_RANGE);
	CU_ASSERT_EQUAL(bad, (uint64_t)(uintptr_t)&r1[1]);
	bcs_rma_buf_free(&e);
	CU_ASSERT_EQUAL(bcs_rma_apply(NULL, BCS_RMA_ANY, b.p, b.len, NULL, 0, &rlen), 0);
	CU_ASSERT(mem[3] == 50 && mem[4] == 60 && mem[5] == 55);
	bcs_rma_buf_free(&b);
	/* every truncation of a good batch is refused, never read past */
	memcpy(bcs_rma_add(&b, BCS_RMA_ACC, MPI_SUM, MPI_LONG, &in2, 1), w2, sizeof(w2));
	CU_ASSERT_EQUAL(bcs_rma_check(b.p, b.len, rg, 2, &bad), 0);
	for (uint64_t n = 1; n < b.len; n++) {
		uint8_t *cut = malloc(n);
		memcpy(cut, b.p, n);
		CU_ASSERT_EQUAL(bcs_rma_check(cut, n, rg, 2, &bad), MPI_ERR_ARG);
		free(cut);
	}
	bcs_rma_buf_free(&b);
	CU_ASSERT(gone[0] == 7 && gone[1] == 8);
}

static void test_rma_blocks(void)
{
	bcs_types_init();
	int vec;
	CU_ASSERT_EQUAL(bcs_type_vector(3, 1, 2, MPI_INT, &vec), 0);
	uint32_t n;
	struct bcs_block *b = bcs_rma_blocks(bcs_type_get(vec), 2, 8, &n);
	/* two items of a 3-int vector (extent 5 ints) at byte 8: the first's
	 * last int and the second's first are adjacent, one block */
	CU_ASSERT_EQUAL(n, 5);
	CU_ASSERT_EQUAL(b[0].off, 8);
	CU_ASSERT_EQUAL(b[1].off, 16);
	CU_ASSERT_EQUAL(b[2].off, 8 + 16);
	CU_ASSERT_EQUAL(b[2].len, 8);
	CU_ASSERT_EQUAL(b[4].off, 8 + 36);
	CU_ASSERT_EQUAL(b[4].len, 4);
	free(b);
	/* contiguous items merge into one block */
	b = bcs_rma_blocks(bcs_type_get(MPI_INT), 10, 4, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(b[0].off, 4);
	CU_ASSERT_EQUAL(b[0].len, 40);
	free(b);
	bcs_type_free(&vec);
}

/* The bulk areas: 32 MiB per node in all up to 64 nodes, 512 KiB to 8 MiB
 * each, after the mailboxes and inside global memory, buffers apart. */
static void test_bulk_areas(void)
{
	CU_ASSERT_EQUAL(gm_bcs_area_size(2), (uint64_t)8 << 20);
	CU_ASSERT_EQUAL(gm_bcs_area_size(16), (uint64_t)2 << 20);
	CU_ASSERT_EQUAL(gm_bcs_area_size(64), (uint64_t)512 << 10);
	CU_ASSERT_EQUAL(gm_bcs_area_size(STORM_MAX_NODES), (uint64_t)512 << 10);
	for (uint32_t n = 1; n <= 64; n++) {
		uint64_t a = gm_bcs_area_size(n), buf = a / GM_BCS_AREA_BUFS;
		CU_ASSERT(n * a <= ((uint64_t)32 << 20) || a == ((uint64_t)512 << 10));
		CU_ASSERT_EQUAL(buf % 65536, 0);
		CU_ASSERT(gm_bcs_area(n, 0, 0) >= gm_bcs_slot(n, n - 1, GM_BCS_SLOTS - 1) + GM_BCS_SLOT_SIZE);
		CU_ASSERT_EQUAL(gm_bcs_area(n, n - 1, GM_BCS_AREA_BUFS - 1) + buf, layout_gmem_size(n));
		CU_ASSERT_EQUAL(gm_bcs_area(n, 0, 1) - gm_bcs_area(n, 0, 0), buf);
	}
}

void add_bcs_suite(void)
{
	CU_pSuite s = CU_add_suite("bcs-mpi", NULL, NULL);
	CU_add_test(s, "matching order: slice, source, post order", test_match_order);
	CU_add_test(s, "posted receives, cancel", test_match_posted);
	CU_add_test(s, "cancel of unmatched sends and posted receives", test_match_cancel);
	CU_add_test(s, "wildcards resolved at quiescence, by source", test_match_wild);
	CU_add_test(s, "quiet reports and quiescence", test_quiet);
	CU_add_test(s, "bulk areas: sizes and places", test_bulk_areas);
	CU_add_test(s, "vector and contiguous pack/unpack", test_pack_vector);
	CU_add_test(s, "pair types", test_pair_types);
	CU_add_test(s, "struct types: padding, order, elements", test_struct_type);
	CU_add_test(s, "indexed, hvector, resized", test_indexed_resized);
	CU_add_test(s, "lb and extent of negative extents and strides", test_negative_extent);
	CU_add_test(s, "a freed type stays while held", test_type_refs);
	CU_add_test(s, "external32: sizes, byte order, pairs, complex", test_external32);
	CU_add_test(s, "elements of pair types", test_pair_elements);
	CU_add_test(s, "copies of a contiguous type: one block", test_large_contig);
	CU_add_test(s, "dims_create: MPICH's factoring", test_dims_create);
	CU_add_test(s, "group set operations and translation", test_group_ops);
	CU_add_test(s, "Cartesian coordinates and ranks", test_cart);
	CU_add_test(s, "predefined ops", test_ops);
	CU_add_test(s, "trace codec round trip, truncation, bit flips", test_trace_roundtrip);
	CU_add_test(s, "trace stream events folded into a section, ends, v1 and v2 files",
		    test_trace_stream);
	CU_add_test(s, "trace checkpoint marks: streamed, folded, in the file", test_trace_marks);
	CU_add_test(s, "trace calls: numbered, described, streamed, v2 files", test_trace_calls);
	CU_add_test(s, "trace calls: a refused rank or tag, Testsome", test_trace_bad_args);
	CU_add_test(s, "trace v4: marks and calls in one section, v3 files", test_trace_marks_calls);
	CU_add_test(s, "base64", test_b64);
	CU_add_test(s, "checkpoint state codec and ring restore", test_ckpt_state);
	CU_add_test(s, "one-sided batch: every kind applied in order", test_rma_batch);
	CU_add_test(s, "one-sided batch: range, op, truncation, reply room", test_rma_errors);
	CU_add_test(s, "one-sided target blocks of a datatype", test_rma_blocks);
	CU_add_test(s, "one-sided batch of a dynamic window: attached regions", test_rma_regions);
}
