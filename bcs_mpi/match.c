/* BCS-MPI matching engine (match.h). */
#include <stddef.h>

#include "chan.h"
#include "match.h"

bool bcs_matches(int32_t rsrc, int32_t rtag, uint32_t rctx, const struct bcs_msend *s)
{
	return rctx == s->ctx && (rsrc == BCS_ANY_SOURCE || rsrc == s->src) &&
	       (rtag == BCS_ANY_TAG || rtag == s->tag);
}

struct bcs_mrecv *bcs_mq_send(struct bcs_mq *q, struct bcs_msend *s)
{
	for (struct bcs_mrecv *r = q->phead; r; r = r->next) {
		if (r->op != BCS_OP_RECV || !bcs_matches(r->src, r->tag, r->ctx, s))
			continue;
		if (r->prev)
			r->prev->next = r->next;
		else
			q->phead = r->next;
		if (r->next)
			r->next->prev = r->prev;
		else
			q->ptail = r->prev;
		r->prev = r->next = NULL;
		return r;
	}
	s->next = NULL;
	s->prev = q->utail;
	if (q->utail)
		q->utail->next = s;
	else
		q->uhead = s;
	q->utail = s;
	return NULL;
}

struct bcs_msend *bcs_mq_peek(const struct bcs_mq *q, int32_t src, int32_t tag, uint32_t ctx)
{
	for (struct bcs_msend *s = q->uhead; s; s = s->next)
		if (bcs_matches(src, tag, ctx, s))
			return s;
	return NULL;
}

struct bcs_msend *bcs_mq_recv(struct bcs_mq *q, struct bcs_mrecv *r)
{
	struct bcs_msend *s = bcs_mq_peek(q, r->src, r->tag, r->ctx);
	if (s) {
		if (s->prev)
			s->prev->next = s->next;
		else
			q->uhead = s->next;
		if (s->next)
			s->next->prev = s->prev;
		else
			q->utail = s->prev;
		s->prev = s->next = NULL;
		return s;
	}
	r->next = NULL;
	r->prev = q->ptail;
	if (q->ptail)
		q->ptail->next = r;
	else
		q->phead = r;
	q->ptail = r;
	return NULL;
}

struct bcs_mrecv *bcs_mq_cancel(struct bcs_mq *q, uint32_t req)
{
	for (struct bcs_mrecv *r = q->phead; r; r = r->next) {
		if (r->req != req)
			continue;
		if (r->prev)
			r->prev->next = r->next;
		else
			q->phead = r->next;
		if (r->next)
			r->next->prev = r->prev;
		else
			q->ptail = r->prev;
		r->prev = r->next = NULL;
		return r;
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
