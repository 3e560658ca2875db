/* BCS-MPI matching engine: pure, no I/O (unit-tested in tests/unit).
 *
 * Each receiving rank has a queue pair: receives posted and not matched yet
 * (in post order) and sends that arrived unmatched (in matching order). The
 * node daemon feeds one matching round at a time: the round's sends sorted by
 * (slice, source rank, source post order) — bcs_msend_cmp — then the round's
 * receives in post order. A send takes the first posted receive it matches;
 * a receive takes the first unmatched send it matches. The outcome is thus a
 * function of those keys only, never of arrival timing. */
#ifndef STORM_BCS_MATCH_H
#define STORM_BCS_MATCH_H

#include <stdbool.h>
#include <stdint.h>

struct bcs_msend {
	uint64_t label;     /* slice in which its node collected it */
	int32_t src, dst;   /* world ranks */
	int32_t tag;
	uint32_t ctx;
	uint32_t seq;       /* per source rank, in post order */
	uint32_t sreq;      /* the sender's request id */
	uint32_t src_node;  /* node index of the sender */
	uint32_t flags;
	uint64_t len;
	const uint8_t *inl; /* its bytes, when they came in its descriptor */
	struct bcs_msend *prev, *next;
};

struct bcs_mrecv {
	uint64_t label;
	uint32_t seq;       /* per receiving rank, in post order */
	int32_t src;        /* world rank or BCS_ANY_SOURCE */
	int32_t tag;        /* or BCS_ANY_TAG */
	uint32_t ctx;
	uint32_t req;
	uint32_t op;        /* BCS_OP_RECV or BCS_OP_PROBE */
	uint64_t addr, len;
	struct bcs_mrecv *prev, *next;
};

struct bcs_mq {
	struct bcs_msend *uhead, *utail; /* unmatched sends */
	struct bcs_mrecv *phead, *ptail; /* posted receives */
	/* a wildcard receive was posted and not everything it held back is
	 * resolved yet: only then do sends and receives look for one ahead */
	bool wild;
};

bool bcs_matches(int32_t rsrc, int32_t rtag, uint32_t rctx, const struct bcs_msend *s);
/* A send arrives: returns the posted receive it matches (unlinked), or NULL
 * after queueing the send as unmatched. */
struct bcs_mrecv *bcs_mq_send(struct bcs_mq *q, struct bcs_msend *s);
/* A receive is posted: returns the unmatched send it matches (unlinked), or
 * NULL after queueing the receive. */
struct bcs_msend *bcs_mq_recv(struct bcs_mq *q, struct bcs_mrecv *r);
/* The first unmatched send a probe for (src, tag, ctx) would see, left queued. */
struct bcs_msend *bcs_mq_peek(const struct bcs_mq *q, int32_t src, int32_t tag, uint32_t ctx);
/* Unlinks the posted receive with request id req; NULL if none (matched). */
struct bcs_mrecv *bcs_mq_cancel(struct bcs_mq *q, uint32_t req);
/* Unlinks the posted receive with post order seq; NULL if none (matched). */
struct bcs_mrecv *bcs_mq_cancel_recv(struct bcs_mq *q, uint32_t seq);
/* Unlinks the unmatched send of rank src with post order seq; NULL if none
 * (matched, or not arrived). */
struct bcs_msend *bcs_mq_cancel_send(struct bcs_mq *q, int32_t src, uint32_t seq);
/* Determinism of MPI_ANY_SOURCE: a wildcard receive never matches when a
 * send arrives or when it is posted (nor does a later receive that would
 * take a send the wildcard could take); the daemon resolves wildcards only
 * at quiescence of the job, with bcs_mq_resolve. */
/* For a wildcard source: the matching unmatched send of the lowest source
 * rank (its earliest); otherwise bcs_mq_peek. */
struct bcs_msend *bcs_mq_peek_lowest(const struct bcs_mq *q, int32_t src, int32_t tag,
				     uint32_t ctx);
/* At quiescence: the first posted receive (post order) that can match now,
 * unlinked, with its send (*sp, unlinked): the lowest source for a
 * wildcard. NULL when none can. Call until NULL. */
struct bcs_mrecv *bcs_mq_resolve(struct bcs_mq *q, struct bcs_msend **sp);
/* A node's quiet reports: bit i of qmask = quiet at slice cover-i.
 * bcs_quiet_push records the report for `slice` (UINT64_MAX: done with the
 * job, quiet for ever; a skipped slice counts as busy); bcs_quiet_at says
 * whether the node was quiet at slice and at slice-1. */
uint64_t bcs_quiet_push(uint64_t cover, uint64_t qmask, uint64_t slice, bool quiet);
bool bcs_quiet_at(uint64_t cover, uint64_t qmask, uint64_t slice);
/* Quiet at every slice from slice-span to slice (bcs_quiet_at: span 1). */
bool bcs_quiet_span(uint64_t cover, uint64_t qmask, uint64_t slice, uint64_t span);
/* qsort order of a round's sends: slice, source rank, source post order. */
int bcs_msend_cmp(const void *a, const void *b);

#endif
