/* Tree operations: the record of one as each member sees it, the messages
 * that carry it down the tree and the ACKs that come back up, and the root
 * records that XFER-AND-SIGNAL and COMPARE-AND-WRITE start.
 *
 * Every primitive is a tree operation rooted at the node that starts it: a
 * "down" message (a chunk of data, a condition to evaluate, a value to write,
 * a commit) travels from each member to its children in the tree of
 * (root, set, fanout), and each member answers its parent with one ACK that
 * aggregates its subtree (which nodes confirmed, which children did not
 * answer, the AND of the condition). The root completes the operation when
 * every child answered or its deadline passed. See docs/design/network.md. */
#include "sn_int.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

/* --------------------------------------------------------- tree records */

static void rec_free(struct sn_ctx *ctx, struct rec *r)
{
	for (struct rec **p = &ctx->recs; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	free(r->owned);
	free(r);
}

void sni_rec_release(struct sn_ctx *ctx, struct rec *r)
{
	if (r->finished && !r->tomb && r->tx_pending == 0)
		rec_free(ctx, r);
}

/* The live record of an operation (the one its ACKs are for), or with
 * tombs also the tombstone of a transfer that expired here mid-way (the
 * one its late chunks are for). */
static struct rec *rec_find(struct sn_ctx *ctx, uint32_t origin, uint32_t opid, bool tombs)
{
	for (struct rec *r = ctx->recs; r; r = r->next)
		if (r->m.origin == origin && r->m.opid == opid &&
		    (!r->finished || (tombs && r->tomb)))
			return r;
	return NULL;
}

/* A tombstone's end: every byte came, or the rest never will. */
static void rec_bury(struct sn_ctx *ctx, struct rec *r)
{
	r->tomb = false;
	sni_rec_release(ctx, r);
}

/* Waits (or waits longer) for the rest of a transfer whose record here
 * expired: a relay descheduled between two chunks, or behind a slow parent,
 * still gets them, and without the record they would start a new one that
 * never reaches the transfer's size, so neither it nor its subtree would
 * ever signal the data that arrived. */
static void rec_entomb(struct sn_ctx *ctx, struct rec *r)
{
	uint64_t ms = r->budget_ms > ctx->cfg.timeout_ms ? r->budget_ms : ctx->cfg.timeout_ms;
	r->tomb = true;
	r->deadline_ns = now_ns() + SN_TOMB_BUDGETS * ms * 1000000ull;
}

static uint32_t budget_left_ms(const struct rec *r)
{
	uint64_t t = now_ns();
	if (t >= r->deadline_ns)
		return 0;
	/* children must answer before their parent gives up on them */
	return (uint32_t)((r->deadline_ns - t) / 1000000 * 3 / 4);
}

static struct rec *rec_new(struct sn_ctx *ctx, const struct sn_msg *m, int rail,
			   uint64_t budget_ms)
{
	struct sn_tree_pos pos;
	if (sn_tree_position(m->origin, &m->set, m->fanout, ctx->self, &pos))
		return NULL;
	struct rec *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->m = *m;
	r->round_in = ctx->round; /* a CAW prepare is evaluated in a later one */
	r->m.payload = NULL;
	r->rail = rail;
	r->parent = pos.parent;
	r->nchildren = pos.nchildren;
	memcpy(r->children, pos.children, pos.nchildren * sizeof(uint32_t));
	/* without SN_F_ACK no child answers, so there is nothing to wait for */
	if (m->flags & SN_F_ACK)
		for (uint32_t i = 0; i < pos.nchildren; i++)
			sn_set_add(&r->waiting, pos.children[i]);
	r->in_set = sn_set_has(&m->set, ctx->self);
	r->status = 1;
	r->local_ev = SN_NO_EVENT;
	r->budget_ms = (uint32_t)budget_ms;
	r->deadline_ns = now_ns() + budget_ms * 1000000ull;
	r->next = ctx->recs;
	ctx->recs = r;
	return r;
}

/* Sends the down message of r (with its payload slice, for XFER) to every child. */
void sni_rec_forward(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m,
		     const void *payload)
{
	struct sn_msg fw = *m;
	fw.sender = ctx->self;
	fw.budget_ms = budget_left_ms(r);
	for (uint32_t i = 0; i < r->nchildren; i++) {
		if (sn_set_has(&r->gone, r->children[i]))
			continue; /* already failed */
		if (sni_send_msg(ctx, r->rail, r->children[i], &fw, payload, fw.chunk_len, r))
			note(ctx, "out of memory forwarding to node %u", r->children[i]);
		if (m->type == SN_MSG_XFER)
			ctx->stats.forwards++;
	}
}

void sni_rec_try_finish(struct sn_ctx *ctx, struct rec *r, bool expired)
{
	if (r->finished)
		return;
	if (!expired && !(r->local_done && sn_set_empty(&r->waiting)))
		return;
	bool regrant = false;
	if (expired && r->lock_wait) {
		/* waited for its lock to the end: a conflict, answered as one;
		 * -EAGAIN if locks changed hands meanwhile (the call queues
		 * again at once, caw.h), -EBUSY if the queue stood still */
		r->lock_wait = false;
		caw_lock_cancel(&ctx->locks, r->m.origin, (uint32_t)r->m.total);
		sni_combine_status(r, ctx->locks.releases != r->wait_mark ? -EAGAIN : -EBUSY);
		r->local_done = true;
		regrant = true; /* younger prepares it held back */
	}
	if (expired) {
		/* children that did not answer in time are the suspects */
		sn_set_or(&r->suspect, &r->waiting);
		sn_set_clear(&r->waiting);
		ctx->stats.timeouts++;
	}
	if (r->in_set && r->local_done && !r->local_failed)
		sn_set_add(&r->ok, ctx->self);
	r->finished = true;
	/* the rest of a transfer may still come: its parent is told now that
	 * this subtree did not confirm, but its data and events are not lost */
	if (expired && r->m.type == SN_MSG_XFER && r->parent != UINT32_MAX &&
	    r->bytes < r->m.total)
		rec_entomb(ctx, r);
	if (r->parent == UINT32_MAX) {
		if (r->done)
			r->done(ctx, r);
	} else if (r->m.flags & SN_F_ACK) {
		struct sn_msg ack = {
			.type = SN_MSG_ACK,
			.origin = r->m.origin,
			.opid = r->m.opid,
			.sender = ctx->self,
			.nbits = ctx->n,
			.fanout = r->m.fanout,
			.status = r->status,
			.value = r->gather.sum,
			.value2 = r->gather.max,
			.event = SN_NO_EVENT,
			.set = r->ok,
			.set2 = r->suspect,
		};
		ctx->stats.acks_sent++;
		sni_send_msg(ctx, r->rail, r->parent, &ack, NULL, 0, r);
	}
	sni_rec_release(ctx, r);
	if (regrant)
		ctx->hooks.caw_regrant(ctx);
}

/* Called for a live record or a tombstone (a late chunk's forward). */
void sni_rec_child_failed(struct sn_ctx *ctx, struct rec *r, uint32_t child)
{
	/* later chunks do not go to a child known to be gone, whether or not
	 * anyone waits on its answer */
	sn_set_add(&r->gone, child);
	if (r->finished || !sn_set_has(&r->waiting, child))
		return;
	sn_set_del(&r->waiting, child);
	sn_set_add(&r->suspect, child);
	sni_rec_try_finish(ctx, r, false);
}

/* A deadline of r's passed (progress.c): a live record finishes as
 * expired; a tombstone gives up on the rest of its transfer. */
void sni_rec_expire(struct sn_ctx *ctx, struct rec *r)
{
	if (!r->tomb) {
		sni_rec_try_finish(ctx, r, true);
		return;
	}
	note(ctx, "op %u/%u: %llu of %llu bytes came; the rest never did, no event here",
	     r->m.origin, r->m.opid, (unsigned long long)r->bytes,
	     (unsigned long long)r->m.total);
	rec_bury(ctx, r);
}

void sni_combine_status(struct rec *r, int32_t status)
{
	if (r->status < 0)
		return;
	if (status < 0)
		r->status = status;
	else
		r->status = r->status && status;
}

/* Carries out m's local effect on this member. */
static void rec_local(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m)
{
	switch (m->type) {
	case SN_MSG_XFER:
		if (r->in_set && m->chunk_len && !(m->flags & SN_F_PLACED))
			memmove(ctx->gmem + m->off + m->chunk_off, m->payload, m->chunk_len);
		r->bytes += m->chunk_len;
		if (r->bytes < m->total)
			return;
		if (r->in_set && !(m->flags & SN_F_ATOMIC))
			sni_event_signal(ctx, m->event);
		break;
	case SN_MSG_COMMIT:
		if (r->in_set)
			sni_event_signal(ctx, m->event);
		break;
	case SN_MSG_EVAL:
		if (r->in_set && !ctx->hooks.caw_prepare(ctx, r, m))
			return; /* queued for its lock */
		break;
	case SN_MSG_WRITE:
		if (r->in_set)
			ctx->hooks.caw_decide(ctx, r, m);
		break;
	default:
		return;
	}
	r->local_done = true;
}

/* --------------------------------------------------------------- receive */

static int check_down(struct sn_ctx *ctx, const struct sn_msg *m, const char **why)
{
	if (m->fanout == 0 || m->fanout > SN_MAX_FANOUT)
		return *why = "bad fan-out", -EPROTO;
	if (m->type == SN_MSG_XFER &&
	    (m->off < SN_GMEM_RESERVED || m->off > ctx->gmem_size ||
	     m->total > ctx->gmem_size - m->off))
		return *why = "transfer outside global memory", -EPROTO;
	if ((m->type == SN_MSG_XFER || m->type == SN_MSG_COMMIT) && m->event != SN_NO_EVENT &&
	    m->event >= SN_MAX_EVENTS)
		return *why = "event out of range", -EPROTO;
	bool evals = m->type == SN_MSG_EVAL;
	bool writes = evals && (m->flags & SN_F_WRITE);
	if ((evals && (m->off % 8 || m->off > ctx->gmem_size - 8 || m->cmp > SN_GE)) ||
	    (writes && (m->off2 % 8 || m->off2 > ctx->gmem_size - 8)))
		return *why = "bad global variable", -EPROTO;
	if ((m->flags & SN_F_GATHER) &&
	    (!evals || writes || m->off2 % 8 || m->off2 > ctx->gmem_size - 16))
		return *why = "bad gathered variables", -EPROTO;
	if (!sn_set_has(&m->set, ctx->self) && m->origin != ctx->self)
		return *why = "not a member of the operation", -EPROTO;
	return 0;
}

/* A leaf that receives a whole transfer nobody waits on (no SN_F_ACK) needs
 * no record: place the data and signal. The common case of a small message
 * to one node, or of a strobe at the edge of the tree. */
static bool leaf_fast_path(struct sn_ctx *ctx, const struct sn_msg *m)
{
	if (m->type != SN_MSG_XFER || (m->flags & (SN_F_ACK | SN_F_ATOMIC)) || m->chunk_off ||
	    m->chunk_len != m->total || !sn_set_has(&m->set, ctx->self))
		return false;
	struct sn_tree_pos pos;
	if (sn_tree_position(m->origin, &m->set, m->fanout, ctx->self, &pos) || pos.nchildren)
		return false;
	if (m->chunk_len && !(m->flags & SN_F_PLACED))
		memmove(ctx->gmem + m->off, m->payload, m->chunk_len);
	sni_event_signal(ctx, m->event);
	return true;
}

/* The record a down message goes to: its operation's, or a new one. NULL:
 * dropped, said why. */
static struct rec *rec_of_down(struct sn_ctx *ctx, int rail, const struct sn_msg *m)
{
	struct rec *r = rec_find(ctx, m->origin, m->opid, true);
	/* a transfer's first chunk made its record, so one that finds a
	 * tombstone is another transfer's: the origin restarted, numbering
	 * its operations from 1 again */
	if (r && r->tomb && m->chunk_off == 0) {
		rec_bury(ctx, r);
		r = NULL;
	}
	if (r) {
		/* progress on a long transfer keeps it alive */
		uint64_t ms = (uint64_t)m->budget_ms * (r->tomb ? SN_TOMB_BUDGETS : 1);
		uint64_t d = now_ns() + ms * 1000000ull;
		if (d > r->deadline_ns)
			r->deadline_ns = d;
		r->budget_ms = m->budget_ms;
		if (r->tomb)
			ctx->stats.late_chunks++;
		return r;
	}
	/* one sender's messages come in order, so a later chunk without its
	 * transfer's record comes after that record's end: the bytes before it
	 * are not counted anywhere, and a record it began would never reach
	 * the transfer's size */
	if (m->type == SN_MSG_XFER && m->chunk_off) {
		note(ctx, "dropped a chunk of op %u/%u from node %u: the transfer ended here",
		     m->origin, m->opid, m->sender);
		return NULL;
	}
	r = rec_new(ctx, m, rail, m->budget_ms);
	if (!r)
		note(ctx, "cannot place node in tree of op %u/%u", m->origin, m->opid);
	return r;
}

static void handle_down(struct sn_ctx *ctx, int rail, const struct sn_msg *m)
{
	if (leaf_fast_path(ctx, m))
		return;
	struct rec *r = rec_of_down(ctx, rail, m);
	if (!r)
		return;
	rec_local(ctx, r, m);
	/* only the root can be outside the set, so the chunk is in our gmem now */
	const void *payload = m->chunk_len ? ctx->gmem + m->off + m->chunk_off : NULL;
	/* forwarded from a copy (struct fwd_copy), unless small enough to
	 * travel inside the send slot; out of memory, from global memory */
	struct fwd_copy *c = NULL;
	if (payload && r->nchildren && m->chunk_len > SN_INLINE_MAX &&
	    (c = malloc(sizeof(*c) + m->chunk_len))) {
		/* ours until every child's send is queued: a send may be done
		 * before the next is (a copy into a mapped peer's memory) */
		c->refs = 1;
		memcpy(c->data, payload, m->chunk_len);
		payload = c->data;
	}
	ctx->forwarding = c;
	sni_rec_forward(ctx, r, m, payload);
	ctx->forwarding = NULL;
	if (c && --c->refs == 0)
		free(c); /* every send from it done, or every child given up */
	if (r->tomb && r->bytes >= r->m.total)
		rec_bury(ctx, r); /* its parent heard from it at its deadline */
	else
		sni_rec_try_finish(ctx, r, false);
}

static void handle_ack(struct sn_ctx *ctx, const struct sn_msg *m)
{
	struct rec *r = rec_find(ctx, m->origin, m->opid, false);
	if (!r || !sn_set_has(&r->waiting, m->sender)) {
		note(ctx, "late or unknown ACK for op %u/%u from node %u", m->origin, m->opid,
		     m->sender);
		return;
	}
	sn_set_del(&r->waiting, m->sender);
	/* a child that confirmed has handled every message of the operation,
	 * and so (each peer's messages are handled in order) all we sent it
	 * before: the small transfers among them are placed (sni_note_inflight) */
	struct rail *rl = &ctx->rails[r->rail];
	for (uint32_t i = 0; i < r->nchildren; i++)
		if (r->children[i] == m->sender && sn_set_has(&m->set, m->sender) &&
		    r->child_seq[i] > rl->placed_seq[m->sender])
			rl->placed_seq[m->sender] = r->child_seq[i];
	sn_set_or(&r->ok, &m->set);
	sn_set_or(&r->suspect, &m->set2);
	sni_combine_status(r, m->status);
	if (r->m.flags & SN_F_GATHER)
		caw_gather_add(&r->gather, m->value, m->value2);
	sni_rec_try_finish(ctx, r, false);
}

static void handle_rx(struct sn_ctx *ctx, int rail, const uint8_t *buf, size_t len)
{
	struct sn_msg m;
	const char *why = "";
	ctx->stats.msgs_recv++;
	bool ok = sn_wire_decode(buf, len, ctx->n, &m, &why) == 0;
	/* a placed chunk came by RMA before its header: counted with it */
	ctx->stats.bytes_recv += len + (ok && (m.flags & SN_F_PLACED) ? m.chunk_len : 0);
	if (ctx->cfg.fault_die_after && ctx->stats.bytes_recv >= ctx->cfg.fault_die_after)
		raise(SIGKILL);
	if (!ok) {
		note(ctx, "dropped malformed message: %s", why);
		return;
	}
	sni_peer_use(ctx, rail, m.sender);
	ctx->rails[rail].rx_ns[m.sender] = now_ns();
	if (len > SN_BELL_COPY_MIN || ((m.flags & SN_F_PLACED) && m.chunk_len > SN_BELL_COPY_MIN))
		sni_bell_mark(&ctx->rails[rail], m.sender);
	switch (m.type) {
	case SN_MSG_XFER:
	case SN_MSG_COMMIT:
	case SN_MSG_EVAL:
	case SN_MSG_WRITE:
		if (check_down(ctx, &m, &why)) {
			note(ctx, "dropped message from node %u: %s", m.sender, why);
			return;
		}
		/* a placed chunk is already in our global memory (written
		 * there by RMA, then this header): only a rail that exposes
		 * it can have one */
		if ((m.flags & SN_F_PLACED) && (m.type != SN_MSG_XFER || !ctx->rails[rail].mr)) {
			note(ctx, "dropped message from node %u: placed chunk without RMA",
			     m.sender);
			return;
		}
		handle_down(ctx, rail, &m);
		break;
	case SN_MSG_ACK:
		ctx->stats.acks_recv++;
		handle_ack(ctx, &m);
		break;
	}
}

/* ------------------------------------------------- test point: a held node */

/* Handles what was held, in order. */
static void hold_flush(struct sn_ctx *ctx)
{
	ctx->holding = false;
	struct held_msg *h = ctx->held;
	ctx->held = NULL;
	while (h) {
		struct held_msg *next = h->next;
		handle_rx(ctx, h->rail, h->buf, h->len);
		free(h);
		h = next;
	}
}

/* sn_config.fault_hold_off: true if the message is held, to be handled once
 * the transfer it waits on has expired here (sni_hold_release). */
static bool hold_rx(struct sn_ctx *ctx, int rail, const uint8_t *buf, size_t len)
{
	struct sn_msg m;
	const char *why;
	bool ok = sn_wire_decode(buf, len, ctx->n, &m, &why) == 0;
	if (!ctx->holding) {
		if (!ok || m.type != SN_MSG_XFER || m.chunk_off < ctx->cfg.fault_hold_off ||
		    (m.origin == ctx->hold_origin && m.opid == ctx->hold_opid) ||
		    !rec_find(ctx, m.origin, m.opid, false))
			return false;
		note(ctx, "test point: holding op %u/%u at byte %llu", m.origin, m.opid,
		     (unsigned long long)m.chunk_off);
		ctx->holding = true;
		ctx->hold_origin = m.origin;
		ctx->hold_opid = m.opid;
	}
	struct held_msg *h = malloc(sizeof(*h) + len);
	if (!h) {
		hold_flush(ctx); /* out of memory: the hold ends, order kept */
		return false;
	}
	h->next = NULL;
	h->rail = rail;
	h->len = len;
	memcpy(h->buf, buf, len);
	if (!ctx->held)
		ctx->held_tail = &ctx->held;
	*ctx->held_tail = h;
	ctx->held_tail = &h->next;
	/* its sender may wait on our copy (shm) to complete the send */
	if (ok && (len > SN_BELL_COPY_MIN ||
		   ((m.flags & SN_F_PLACED) && m.chunk_len > SN_BELL_COPY_MIN)))
		sni_bell_mark(&ctx->rails[rail], m.sender);
	return true;
}

/* Handles what was held, in order, once the held transfer's record here has
 * expired (progress.c, after the deadlines). */
void sni_hold_release(struct sn_ctx *ctx)
{
	if (!ctx->holding || rec_find(ctx, ctx->hold_origin, ctx->hold_opid, false))
		return;
	note(ctx, "test point: op %u/%u expired, handling what was held", ctx->hold_origin,
	     ctx->hold_opid);
	hold_flush(ctx);
}

void sni_handle_rx(struct sn_ctx *ctx, int rail, const uint8_t *buf, size_t len)
{
	if (ctx->cfg.fault_hold_off && hold_rx(ctx, rail, buf, len))
		return;
	handle_rx(ctx, rail, buf, len);
}

int sni_next_opid(struct sn_ctx *ctx)
{
	if (++ctx->next_opid == 0)
		ctx->next_opid = 1;
	return (int)ctx->next_opid;
}

int sni_pick_rail(struct sn_ctx *ctx, unsigned flags)
{
	return (flags & SN_XFER_SYS) && ctx->nrails > 1 ? 1 : 0;
}

/* Failed = the set minus the nodes that confirmed. */
int sni_rec_outcome(struct sn_ctx *ctx, struct rec *r, struct sn_nodeset *failed)
{
	*failed = r->m.set;
	sn_set_andnot(failed, &r->ok);
	if (sn_set_empty(failed))
		return 0;
	(void)ctx;
	return sn_set_empty(&r->suspect) ? -ETIMEDOUT : -EHOSTUNREACH;
}

/* Gives m the identity of a new tree operation rooted here. */
void sni_root_identity(struct sn_ctx *ctx, struct sn_msg *m, bool ack)
{
	m->origin = ctx->self;
	m->opid = (uint32_t)sni_next_opid(ctx);
	m->sender = ctx->self;
	m->nbits = ctx->n;
	if (ack)
		m->flags |= SN_F_ACK;
}

/* Creates the root record of a tree operation; m gets its identity. Without
 * ack the members do not answer and the record finishes once sent. */
struct rec *sni_root_new(struct sn_ctx *ctx, struct sn_msg *m, int rail,
			 uint64_t budget_ms, rec_done_fn done, bool ack)
{
	sni_root_identity(ctx, m, ack);
	struct rec *r = rec_new(ctx, m, rail, budget_ms);
	if (r)
		r->done = done;
	return r;
}

/* Acts on a payload-less root record and sends it down the tree. */
void sni_root_launch(struct sn_ctx *ctx, struct rec *r)
{
	rec_local(ctx, r, &r->m);
	sni_rec_forward(ctx, r, &r->m, NULL);
	sni_rec_try_finish(ctx, r, false);
}
