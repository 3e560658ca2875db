/* COMPARE-AND-WRITE over the fabric: a member's prepare and decision as
 * its tree operations arrive, and the coordinator's phases launched as tree
 * operations (caw.c holds the locks and the state machine they drive). */
#include "sn_int.h"

#include <errno.h>

static uint64_t caw_lease_ns(const struct sn_ctx *ctx)
{
	/* past the last direct decision a live coordinator can send (caw.h) */
	return 4ull * ctx->cfg.timeout_ms * 1000000ull;
}

/* A CAW prepare here: lock the variables, stage the write, evaluate. The
 * lock is held whatever the condition says: the answer must hold at one
 * instant on every member. A conflicting lock refuses it (-EBUSY) or queues
 * it (caw.h says which): false, not done. */
bool sni_caw_member_prepare(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m)
{
	/* Not in the round of progress that brought it, but at the start of
	 * the next: the program has then taken the events of everything that
	 * arrived before it and acted on them. The MM acknowledges a node's
	 * report and reads, right after, the done word that the node writes
	 * when it takes that acknowledgement: both arrived in one round, the
	 * read compared the word before the node had written it, and asked
	 * again a slice later. */
	if (r->round_in == ctx->round) {
		r->eval_deferred = true;
		return false;
	}
	r->eval_deferred = false;
	struct caw_req req = {
		.origin = m->origin,
		.opid = (uint32_t)m->total,
		.ticket = m->chunk_off,
		.leader = m->event,
		.at_leader = m->flags & SN_F_WAIT,
		.writes = m->flags & SN_F_WRITE,
		.rvar = m->off,
		.wvar = m->off2,
		.wval = m->value2,
	};
	int rc = caw_lock_take(&ctx->locks, &req, now_ns(), caw_lease_ns(ctx));
	if (rc == -EAGAIN) {
		if (!r->lock_wait)
			r->wait_mark = ctx->locks.releases;
		r->lock_wait = true;
		return false;
	}
	r->lock_wait = false;
	if (rc < 0) {
		sni_combine_status(r, -EBUSY);
		return true;
	}
	sni_combine_status(r, sn_cmp_eval((enum sn_cmp)m->cmp, sn_var_load(ctx, m->off), m->value));
	if (m->flags & SN_F_GATHER)
		caw_gather_add(&r->gather, sn_var_load(ctx, m->off2), sn_var_load(ctx, m->off2 + 8));
	return true;
}

/* A queued prepare's place: the older call first (caw.h). */
struct caw_place {
	uint64_t ticket;
	uint32_t origin, opid;
};

static struct caw_place caw_place_of(const struct rec *r)
{
	return (struct caw_place){r->m.chunk_off, r->m.origin, r->m.opid};
}

static bool caw_before(struct caw_place a, struct caw_place b)
{
	if (a.ticket != b.ticket || a.origin != b.origin)
		return caw_older(a.ticket, a.origin, b.ticket, b.origin);
	return a.opid < b.opid;
}

/* A lock was released here: the queued prepares that can lock now do,
 * oldest call first. */
void sni_caw_grant_waiters(struct sn_ctx *ctx)
{
	struct caw_place after;
	bool first = true;
	for (;;) {
		struct rec *next = NULL;
		for (struct rec *r = ctx->recs; r; r = r->next)
			if (r->lock_wait && !r->finished &&
			    (first || caw_before(after, caw_place_of(r))) &&
			    (!next || caw_before(caw_place_of(r), caw_place_of(next))))
				next = r;
		if (!next)
			return;
		after = caw_place_of(next);
		first = false;
		if (sni_caw_member_prepare(ctx, next, &next->m)) {
			next->local_done = true;
			sni_rec_try_finish(ctx, next, false); /* may free it */
		}
	}
}

/* The prepares that arrived in an earlier round of progress, at the start
 * of this one. */
void sni_caw_serve_deferred(struct sn_ctx *ctx)
{
	for (bool again = true; again;) {
		again = false;
		for (struct rec *r = ctx->recs; r; r = r->next) {
			if (!r->eval_deferred || r->finished)
				continue;
			if (sni_caw_member_prepare(ctx, r, &r->m)) {
				r->local_done = true;
				sni_rec_try_finish(ctx, r, false); /* may free it */
				again = true;
				break;
			}
		}
	}
}

/* A CAW decision here: commit the staged write, or release. */
void sni_caw_member_decide(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m)
{
	uint64_t wvar = 0, wval = 0;
	int rc = caw_lock_decide(&ctx->locks, m->origin, (uint32_t)m->value,
				 m->flags & SN_F_COMMIT, now_ns(), &wvar, &wval);
	if (rc == 1)
		sn_var_store(ctx, wvar, wval);
	else if (rc < 0)
		r->local_failed = true; /* its lease ran out: the write is not here */
	sni_caw_grant_waiters(ctx);
}

/* -------------------------------------------------------- COMPARE-AND-WRITE */

/* The call's coordinator runs caw.h's state machine: PREPARE and DECIDE are
 * tree operations rooted here, the direct decisions one operation per
 * member that the tree did not reach. */

static uint64_t rnd_next(struct sn_ctx *ctx)
{
	/* xorshift64: a back-off needs spread, not secrecy */
	uint64_t x = ctx->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return ctx->rng = x;
}

static void caw_advance(struct sn_ctx *ctx, struct caw_call *c);

/* The set's lowest node, locked first: calls on one set queue there. */
static void caw_leader_done(struct sn_ctx *ctx, struct rec *r)
{
	struct caw_call *c = r->call;
	struct sn_nodeset failed;
	int err = sni_rec_outcome(ctx, r, &failed);
	if (err || r->status < 0) {
		caw_sm_prepared(&c->sm, err ? err : r->status, &failed);
	} else {
		c->leader_locked = true;
		c->leader_vote = r->status;
		c->leader_gather = r->gather;
	}
	caw_advance(ctx, c);
}

static void caw_prepare_done(struct sn_ctx *ctx, struct rec *r)
{
	struct caw_call *c = r->call;
	struct sn_nodeset failed;
	int err = sni_rec_outcome(ctx, r, &failed);
	int status = err ? err : r->status < 0 ? r->status : r->status && c->leader_vote;
	c->gather = c->leader_gather;
	caw_gather_add(&c->gather, r->gather.sum, r->gather.max);
	caw_sm_prepared(&c->sm, status, &failed);
	caw_advance(ctx, c);
}

static void caw_decided(struct sn_ctx *ctx, struct caw_call *c, const struct sn_nodeset *failed)
{
	caw_sm_decided(&c->sm, failed, now_ns(), rnd_next(ctx));
	caw_advance(ctx, c);
}

static void caw_decide_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	sni_rec_outcome(ctx, r, &failed);
	caw_decided(ctx, r->call, &failed);
}

/* One direct decision answered (or, with failed NULL, the loop that sent them ended). */
static void caw_direct_one(struct sn_ctx *ctx, struct caw_call *c, const struct sn_nodeset *failed)
{
	if (failed)
		sn_set_or(&c->direct_missing, failed);
	if (--c->direct_left == 0)
		caw_decided(ctx, c, &c->direct_missing);
}

static void caw_direct_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	sni_rec_outcome(ctx, r, &failed);
	caw_direct_one(ctx, r->call, &failed);
}

/* Starts a phase of c over set; false when out of memory. */
static bool caw_launch(struct sn_ctx *ctx, struct caw_call *c, uint8_t type,
		       const struct sn_nodeset *set, rec_done_fn done)
{
	struct sn_msg m = c->m;
	m.type = type;
	m.set = *set;
	if (type == SN_MSG_WRITE) {
		m.flags = c->sm.commit ? SN_F_COMMIT : 0;
		m.value = c->lock_id;
	} else {
		m.total = c->lock_id;
		m.chunk_off = c->ticket;
		m.event = sn_set_next(&c->sm.set, 0);
		if (!c->leader_locked)
			m.flags |= SN_F_WAIT;
	}
	struct rec *r = sni_root_new(ctx, &m, c->rail, ctx->cfg.timeout_ms, done, true);
	if (!r)
		return false;
	r->call = c;
	sni_root_launch(ctx, r); /* may finish at once (a set of this node alone) */
	return true;
}

static void caw_advance(struct sn_ctx *ctx, struct caw_call *c)
{
	switch (c->sm.state) {
	case CAW_PREPARE: {
		/* the set's lowest node first, where calls on the same set wait
		 * their turn instead of refusing each other; then the rest */
		struct sn_nodeset lead, rest = c->sm.set;
		sn_set_clear(&lead);
		sn_set_add(&lead, sn_set_next(&c->sm.set, 0));
		sn_set_andnot(&rest, &lead);
		if (!c->leader_locked) {
			c->lock_id = (uint32_t)sni_next_opid(ctx);
			if (!caw_launch(ctx, c, SN_MSG_EVAL, &lead, caw_leader_done)) {
				caw_sm_prepared(&c->sm, -ENOMEM, &c->sm.set);
				caw_advance(ctx, c);
			}
		} else if (sn_set_empty(&rest)) {
			c->gather = c->leader_gather;
			caw_sm_prepared(&c->sm, c->leader_vote, &rest);
			caw_advance(ctx, c);
		} else if (!caw_launch(ctx, c, SN_MSG_EVAL, &rest, caw_prepare_done)) {
			caw_sm_prepared(&c->sm, -ENOMEM, &c->sm.set);
			caw_advance(ctx, c);
		}
		break;
	}
	case CAW_DECIDE:
		if (!caw_launch(ctx, c, SN_MSG_WRITE, &c->sm.set, caw_decide_done))
			caw_decided(ctx, c, &c->sm.set);
		break;
	case CAW_DECIDE_DIRECT: {
		/* each on its own, around a dead inner node; one extra count
		 * keeps an answer that comes at once from ending the round */
		struct sn_nodeset to = c->sm.direct, one;
		sn_set_clear(&c->direct_missing);
		c->direct_left = 1;
		for (uint32_t n = sn_set_next(&to, 0); n != UINT32_MAX; n = sn_set_next(&to, n + 1)) {
			sn_set_clear(&one);
			sn_set_add(&one, n);
			c->direct_left++;
			if (!caw_launch(ctx, c, SN_MSG_WRITE, &one, caw_direct_done))
				caw_direct_one(ctx, c, &one);
		}
		caw_direct_one(ctx, c, NULL);
		break;
	}
	case CAW_BACKOFF:
	case CAW_DONE:
		break; /* sni_caw_backoffs, sni_caw_deliver */
	}
}

void sni_caw_backoffs(struct sn_ctx *ctx)
{
	if (!ctx->calls)
		return;
	uint64_t t = now_ns();
	for (struct caw_call *c = ctx->calls; c; c = c->next)
		if (c->sm.state == CAW_BACKOFF && t >= c->sm.backoff_until_ns) {
			ctx->stats.caw_retries++;
			caw_sm_retry(&c->sm);
			c->leader_locked = false;
			caw_advance(ctx, c);
		}
}

/* Hands answers to their callers, outside any message handling, and frees
 * the calls that are over. The callback may start or wait for other calls:
 * the list is walked again from its head after each. */
int sni_caw_deliver(struct sn_ctx *ctx)
{
	int n = 0;
	for (;;) {
		struct caw_call *c = ctx->calls;
		while (c && !(c->sm.answered && !c->delivered))
			c = c->next;
		if (!c)
			break;
		c->delivered = true;
		struct sn_caw_result res = {
			.status = c->sm.status,
			.written = c->sm.written,
			.failed = c->sm.failed,
		};
		if (res.status == 1 && (c->m.flags & SN_F_GATHER)) {
			res.sum = c->gather.sum;
			res.max = c->gather.max;
		}
		if (res.status == -EBUSY) {
			fail(ctx, res.status, "COMPARE-AND-WRITE met conflicting ones for %u ms",
			     ctx->cfg.timeout_ms);
		} else if (res.status < 0 && res.status != -ECANCELED) {
			char list[256];
			sn_set_format(&res.failed, list, sizeof(list));
			fail(ctx, res.status, "COMPARE-AND-WRITE failed: node(s) %s did not answer%s",
			     list, res.written ? " (the others hold the write)" : "");
		}
		n++;
		if (c->fn)
			c->fn(c->arg, &res);
	}
	for (struct caw_call **pp = &ctx->calls; *pp;) {
		struct caw_call *c = *pp;
		if (c->sm.state == CAW_DONE && c->delivered) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
	return n;
}

/* At close: a call the drain did not see answered (one that commits a
 * write takes a decision phase and direct decisions after its prepare,
 * each up to the operation timeout) is answered all the same, -ECANCELED:
 * every started call gets its one answer, and its caller frees there what
 * it passed as arg. */
void sni_caw_cancel(struct sn_ctx *ctx)
{
	for (struct caw_call *c = ctx->calls; c; c = c->next)
		if (!c->delivered && !c->sm.answered) {
			c->sm.answered = true;
			c->sm.status = -ECANCELED;
		}
	sni_caw_deliver(ctx);
}

/* A call's priority: its start in ms of the wall clock, which hosts share
 * well enough for fairness (order alone makes progress: any total order
 * does), then a count that keeps this node's calls of one ms apart. */
static uint64_t caw_ticket(struct sn_ctx *ctx)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	return ms << 20 | (ctx->caw_seq++ & 0xfffff);
}

static int caw_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
		     enum sn_cmp op, uint64_t value, bool do_write, uint64_t write_off,
		     uint64_t write_val, bool gather, sn_caw_fn fn, void *arg)
{
	int rc;
	if (sn_set_empty(set))
		return fail(ctx, -EINVAL, "COMPARE-AND-WRITE on an empty node set");
	if (sn_set_span(set) > ctx->n)
		return fail(ctx, -EINVAL, "COMPARE-AND-WRITE on node %u, beyond the %u nodes",
			    sn_set_span(set) - 1, ctx->n);
	if ((unsigned)op > SN_GE)
		return fail(ctx, -EINVAL, "unknown comparison %d", (int)op);
	if ((rc = sni_check_var(ctx, var_off)) || (do_write && (rc = sni_check_var(ctx, write_off))) ||
	    (gather && ((rc = sni_check_var(ctx, write_off)) ||
			(rc = sni_check_var(ctx, write_off + 8)))))
		return rc;
	struct caw_call *c = calloc(1, sizeof(*c));
	if (!c)
		return fail(ctx, -ENOMEM, "out of memory");
	c->m = (struct sn_msg){
		.flags = (uint16_t)(do_write ? SN_F_WRITE : gather ? SN_F_GATHER : 0),
		.fanout = ctx->cfg.fanout,
		.event = SN_NO_EVENT,
		.cmp = (uint32_t)op,
		.off = var_off,
		.value = value,
		.off2 = do_write || gather ? write_off : 0,
		.value2 = write_val,
	};
	c->rail = sni_pick_rail(ctx, SN_XFER_SYS);
	c->ticket = caw_ticket(ctx);
	c->fn = fn;
	c->arg = arg;
	/* conflicts are retried for one timeout; the phases that follow are
	 * bounded by theirs (caw_lease_ns) */
	caw_sm_init(&c->sm, set, do_write, now_ns(), (uint64_t)ctx->cfg.timeout_ms * 1000000ull);
	c->next = ctx->calls;
	ctx->calls = c;
	caw_advance(ctx, c);
	return 0;
}

int sn_caw_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
		 enum sn_cmp op, uint64_t value, bool do_write, uint64_t write_off,
		 uint64_t write_val, sn_caw_fn fn, void *arg)
{
	return caw_start(ctx, set, var_off, op, value, do_write, write_off, write_val, false, fn,
			 arg);
}

int sn_caw_gather_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
			enum sn_cmp op, uint64_t value, uint64_t pair_off, sn_caw_fn fn,
			void *arg)
{
	return caw_start(ctx, set, var_off, op, value, false, pair_off, 0, true, fn, arg);
}
