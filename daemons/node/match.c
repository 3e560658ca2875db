/* BCS-MPI matching engine (match.h). */
#include <stddef.h>

#include "chan.h"
#include "match.h"

bool bcs_matches(int32_t rsrc, int32_t rtag, uint32_t rctx, const struct bcs_msend *s)
{
	return rctx == s->ctx && (rsrc == BCS_ANY_SOURCE || rsrc == s->src) &&
	       (rtag == BCS_ANY_TAG || rtag == s->tag);
}

static void unlink_send(struct bcs_mq *q, struct bcs_msend *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		q->uhead = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		q->utail = s->prev;
	s->prev = s->next = NULL;
}

static void queue_send(struct bcs_mq *q, struct bcs_msend *s)
{
	s->next = NULL;
	s->prev = q->utail;
	if (q->utail)
		q->utail->next = s;
	else
		q->uhead = s;
	q->utail = s;
}

static void unlink_recv(struct bcs_mq *q, struct bcs_mrecv *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		q->phead = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		q->ptail = r->prev;
	r->prev = r->next = NULL;
}

static void queue_recv(struct bcs_mq *q, struct bcs_mrecv *r)
{
	r->next = NULL;
	r->prev = q->ptail;
	if (q->ptail)
		q->ptail->next = r;
	else
		q->phead = r;
	q->ptail = r;
}

struct bcs_mrecv *bcs_mq_send(struct bcs_mq *q, struct bcs_msend *s)
{
	for (struct bcs_mrecv *r = q->phead; r; r = r->next) {
		if (r->op != BCS_OP_RECV || !bcs_matches(r->src, r->tag, r->ctx, s))
			continue;
		/* the first receive it matches is a wildcard (resolved only at
		 * quiescence), or an earlier send waits for that receive: queue */
		if (q->wild && (r->src == BCS_ANY_SOURCE || bcs_mq_peek(q, r->src, r->tag, r->ctx)))
			break;
		unlink_recv(q, r);
		return r;
	}
	queue_send(q, s);
	return NULL;
}

struct bcs_msend *bcs_mq_peek(const struct bcs_mq *q, int32_t src, int32_t tag, uint32_t ctx)
{
	for (struct bcs_msend *s = q->uhead; s; s = s->next)
		if (bcs_matches(src, tag, ctx, s))
			return s;
	return NULL;
}

/* A posted wildcard receive ahead that could take s. */
static bool wild_ahead(const struct bcs_mq *q, const struct bcs_msend *s)
{
	for (const struct bcs_mrecv *r = q->phead; r; r = r->next)
		if (r->op == BCS_OP_RECV && r->src == BCS_ANY_SOURCE &&
		    bcs_matches(r->src, r->tag, r->ctx, s))
			return true;
	return false;
}

struct bcs_msend *bcs_mq_recv(struct bcs_mq *q, struct bcs_mrecv *r)
{
	struct bcs_msend *s = r->src == BCS_ANY_SOURCE ? NULL
						       : bcs_mq_peek(q, r->src, r->tag, r->ctx);
	if (r->src == BCS_ANY_SOURCE)
		q->wild = true;
	if (s && !(q->wild && wild_ahead(q, s))) {
		unlink_send(q, s);
		return s;
	}
	queue_recv(q, r);
	return NULL;
}

struct bcs_mrecv *bcs_mq_cancel(struct bcs_mq *q, uint32_t req)
{
	for (struct bcs_mrecv *r = q->phead; r; r = r->next) {
		if (r->req != req)
			continue;
		unlink_recv(q, r);
		return r;
	}
	return NULL;
}

struct bcs_mrecv *bcs_mq_cancel_recv(struct bcs_mq *q, uint32_t seq)
{
	for (struct bcs_mrecv *r = q->phead; r; r = r->next) {
		if (r->seq != seq)
			continue;
		unlink_recv(q, r);
		return r;
	}
	return NULL;
}

struct bcs_msend *bcs_mq_cancel_send(struct bcs_mq *q, int32_t src, uint32_t seq)
{
	for (struct bcs_msend *s = q->uhead; s; s = s->next) {
		if (s->src != src || s->seq != seq)
			continue;
		unlink_send(q, s);
		return s;
	}
	return NULL;
}

int bcs_msend_cmp(const void *a, const void *b)
{
	const struct bcs_msend *x = *(const struct bcs_msend *const *)a;
	const struct bcs_msend *y = *(const struct bcs_msend *const *)b;
	if (x->label != y->label)
		return x->label < y->label ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

struct bcs_msend *bcs_mq_peek_lowest(const struct bcs_mq *q, int32_t src, int32_t tag,
				     uint32_t ctx)
{
	if (src != BCS_ANY_SOURCE)
		return bcs_mq_peek(q, src, tag, ctx);
	struct bcs_msend *best = NULL;
	/* queue order is post order within a source: the first of the lowest */
	for (struct bcs_msend *s = q->uhead; s; s = s->next)
		if (bcs_matches(src, tag, ctx, s) && (!best || s->src < best->src))
			best = s;
	return best;
}

struct bcs_mrecv *bcs_mq_resolve(struct bcs_mq *q, struct bcs_msend **sp)
{
	for (struct bcs_mrecv *r = q->phead; r; r = r->next) {
		if (r->op != BCS_OP_RECV)
			continue;
		struct bcs_msend *s = bcs_mq_peek_lowest(q, r->src, r->tag, r->ctx);
		if (!s)
			continue;
		unlink_send(q, s);
		unlink_recv(q, r);
		*sp = s;
		return r;
	}
	q->wild = false;
	for (struct bcs_mrecv *r = q->phead; r; r = r->next)
		if (r->src == BCS_ANY_SOURCE)
			q->wild = true;
	return NULL;
}

bool bcs_quiet_span(uint64_t cover, uint64_t qmask, uint64_t slice, uint64_t span)
{
	if (cover == UINT64_MAX)
		return true; /* the node is done with the job */
	if (cover < slice || slice <= span)
		return false;
	uint64_t d = cover - slice;
	if (d + span >= 64)
		return false;
	for (uint64_t i = 0; i <= span; i++)
		if (!(qmask >> (d + i) & 1))
			return false;
	return true;
}

bool bcs_quiet_at(uint64_t cover, uint64_t qmask, uint64_t slice)
{
	return bcs_quiet_span(cover, qmask, slice, 1);
}

uint64_t bcs_quiet_push(uint64_t cover, uint64_t qmask, uint64_t slice, bool quiet)
{
	if (slice == UINT64_MAX)
		return ~(uint64_t)0;
	if (slice < cover)
		return qmask; /* stale: covers only grow */
	if (slice == cover)
		return quiet ? qmask : qmask & ~(uint64_t)1;
	uint64_t d = slice - cover;
	/* The slices between are ones the node ran no phase in (its strobe
	 * came late and was overtaken, or was refused): its report now covers
	 * them. What its ranks posted in them is collected now and a completion
	 * in them marks it moved, so a quiet report says they were quiet too;
	 * counted busy, a loaded node that misses every other strobe kept the
	 * job from ever being quiescent. A first report (cover 0) covers only
	 * its own slice. */
	uint64_t fill = !quiet ? 0 : cover == 0 ? 1 : d >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << d) - 1;
	qmask = d >= 64 ? 0 : qmask << d;
	return qmask | fill;
}
