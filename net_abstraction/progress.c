/* The progress engine: the send queues that hand messages and writes to the
 * provider, the doorbells rung once they are through, the completion
 * queues, and the waiting between progress rounds. */
#include "sn_int.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "bell.h"

/* ------------------------------------------------------------- transmit */

static void txq_push(struct rail *rl, struct slot *s)
{
	s->next = NULL;
	if (rl->txq_tail)
		rl->txq_tail->next = s;
	else
		rl->txq_head = s;
	rl->txq_tail = s;
}

void sni_bell_mark(struct rail *rl, uint32_t node)
{
	if (rl->bell_fd < 0 || rl->bell_due[node])
		return;
	rl->bell_due[node] = true;
	rl->bell_list[rl->nbell++] = node;
}

/* One ring per peer per flush, however many messages went to it (a flush
 * follows each message queued outside progress, and ends each progress
 * round). A peer we cannot ring (gone, or not on this host's network
 * namespace) still sees our messages at its next poll (sn_next_timeout_ms). */
static void bell_ring_due(struct rail *rl)
{
	for (uint32_t i = 0; i < rl->nbell; i++) {
		uint32_t node = rl->bell_list[i];
		rl->bell_due[node] = false;
		if (rl->peers[node] != FI_ADDR_NOTAVAIL)
			bell_ring(rl->bell_fd, rl->addrs + (size_t)node * SN_ADDR_MAX,
				  rl->alens[node]);
	}
	rl->nbell = 0;
}

static void sent_big(struct rail *rl, struct slot *s, size_t len)
{
	s->big = rl->bell_fd >= 0 && len > SN_BELL_COPY_MIN;
	if (s->big) {
		rl->big_tx++;
		rl->big_tx_ns = now_ns();
	}
}

static void tx_done(struct sn_ctx *ctx, struct slot *s);

/* Hands queued messages and writes to the provider, each destination's in
 * the order they were queued (the provider keeps that order to the peer:
 * FI_ORDER_SAS, and FI_ORDER_SAW on a rail with RMA). A destination that
 * pushes back (-FI_EAGAIN) keeps its own, in order, without holding up
 * the others; one that stays blocked past the timeout is given up as
 * unreachable. */
static void tx_flush(struct sn_ctx *ctx, struct rail *rl)
{
	/* a failure handled below may queue more (an ACK): the walk picks it up */
	if (rl->flushing)
		return;
	rl->flushing = true;
	struct sn_nodeset blocked;
	struct slot **pp = &rl->txq_head, *prev = NULL;
	uint64_t t = 0;
	bool any_blocked = false;
	while (*pp) {
		struct slot *s = *pp;
		ssize_t rc;
		bool no_addr = false, mapped = false;
		if ((any_blocked && sn_set_has(&blocked, s->dest)) ||
		    rl->tx_held[s->dest] >= rl->tx_held_max) {
			rc = -FI_EAGAIN; /* in order behind its own, or its share taken */
		} else {
			sni_peer_use(ctx, (int)(rl - ctx->rails), s->dest);
			/* A peer whose address has not arrived is as a dead one
			 * to an operation we start: our caller chose the set. A
			 * relay (a forward or an answer in another node's
			 * operation) waits for it as for a peer that pushes
			 * back, within its operation's time: the origin knew the
			 * address, so it is on its way to us too (a node that
			 * registered early learns of the later ones a moment
			 * after the first multicast may reach it). */
			no_addr = rl->peers[s->dest] == FI_ADDR_NOTAVAIL;
			bool relay = s->rec && s->rec->m.origin != ctx->self;
			mapped = !no_addr && s->write && sni_map_write(ctx, rl, s);
			rc = no_addr ? (relay ? -FI_EAGAIN : -FI_EHOSTUNREACH)
			     : mapped  ? 0
			     : s->write ? sni_rma_write(rl, s)
			     : fi_sendv(rl->ep, s->iov, s->desc, s->niov, rl->peers[s->dest],
					&s->fctx);
			/* rung even when it pushed back: a first contact waits
			 * for the peer to take our connection request */
			if (!no_addr)
				sni_bell_mark(rl, s->dest);
		}
		if (rc == -FI_EAGAIN) {
			if (!t)
				t = now_ns();
			if (!s->queued_ns)
				s->queued_ns = t;
			uint64_t until = s->queued_ns + (uint64_t)ctx->cfg.timeout_ms * 1000000ull;
			/* past its record's end the origin counts the peer failed:
			 * sent later, the message would take effect all the same */
			if (no_addr && s->rec->deadline_ns < until)
				until = s->rec->deadline_ns;
			if (t < until) {
				if (!any_blocked)
					sn_set_clear(&blocked);
				any_blocked = true;
				sn_set_add(&blocked, s->dest);
				prev = s;
				pp = &s->next;
				continue;
			}
			rc = -FI_ETIMEDOUT;
		}
		*pp = s->next;
		if (rl->txq_tail == s)
			rl->txq_tail = prev;
		if (rc) {
			/* reported by the next progress round, as a failed
			 * completion would be: failing it here, inside the
			 * sni_send_msg of a caller that still uses the record
			 * (an ACK of an expiring record to an unreachable
			 * parent), freed that record under it */
			s->err = (int)rc;
			s->next = rl->failq;
			rl->failq = s;
			continue;
		}
		rl->tx_held[s->dest]++;
		if (mapped) {
			/* done already: the header behind it is queued, so its
			 * operation outlives this completion */
			ctx->stats.rma_writes++;
			ctx->stats.mapped_writes++;
			ctx->stats.bytes_sent += s->iov[0].iov_len;
			tx_done(ctx, s);
			continue;
		}
		rl->cq_dirty = true;
		if (s->write) {
			ctx->stats.rma_writes++;
			ctx->stats.bytes_sent += s->iov[0].iov_len;
			sent_big(rl, s, s->iov[0].iov_len);
			continue;
		}
		size_t len = s->iov[0].iov_len + (s->niov > 1 ? s->iov[1].iov_len : 0);
		ctx->stats.msgs_sent++;
		ctx->stats.bytes_sent += len;
		sent_big(rl, s, len);
	}
	rl->flushing = false;
	bell_ring_due(rl);
}

static struct slot *slot_get(struct sn_ctx *ctx, int rail, uint32_t dest, struct rec *r)
{
	struct slot *s = ctx->free_slots;
	if (s) {
		ctx->free_slots = s->next;
		ctx->nfree_slots--;
	} else if (!(s = malloc(sizeof(*s)))) {
		return NULL;
	}
	memset(s, 0, offsetof(struct slot, hdr));
	s->kind = SLOT_TX;
	s->rail = rail;
	s->dest = dest;
	s->rec = r;
	s->iov[0].iov_base = s->hdr;
	s->niov = 1;
	return s;
}

static void slot_queue(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	if (s->rec)
		s->rec->tx_pending++;
	ctx->tx_outstanding++;
	txq_push(rl, s);
}

/* Queues message m to node dest, with an optional payload that must stay
 * valid until the send completes; write: the payload goes by RMA write into
 * dest's global memory, announced by the header alone (SN_F_PLACED). */
static int send_one(struct sn_ctx *ctx, int rail, uint32_t dest, const struct sn_msg *m,
		    const void *payload, size_t plen, struct rec *r, bool write)
{
	struct rail *rl = &ctx->rails[rail];
	struct slot *s = slot_get(ctx, rail, dest, r), *w = NULL;
	if (!s)
		return -ENOMEM;
	sni_peer_use(ctx, rail, dest);
	uint64_t seq = ++rl->tx_seq[dest];
	for (uint32_t i = 0; r && i < r->nchildren; i++)
		if (r->children[i] == dest)
			r->child_seq[i] = seq;
	uint64_t lo = m->off + m->chunk_off;
	struct sn_msg pm = *m;
	if (write) {
		if (!(w = slot_get(ctx, rail, dest, r))) {
			free(s);
			return -ENOMEM;
		}
		w->write = true;
		w->iov[0].iov_base = (void *)payload;
		w->iov[0].iov_len = plen;
		w->roff = lo;
		pm.flags |= SN_F_PLACED;
	} else {
		if (m->type == SN_MSG_XFER && plen && rl->rma[dest])
			sni_note_inflight(rl, dest, lo, lo + plen, seq);
		pm.flags &= (uint16_t)~SN_F_PLACED;
	}
	s->iov[0].iov_len = sn_wire_encode(&pm, s->hdr);
	if (!w && plen && plen <= SN_INLINE_MAX) {
		/* small: one contiguous buffer, and the source is free at once */
		memcpy(s->hdr + s->iov[0].iov_len, payload, plen);
		s->iov[0].iov_len += plen;
	} else if (!w && plen) {
		s->iov[1].iov_base = (void *)payload;
		s->iov[1].iov_len = plen;
		s->niov = 2;
	}
	struct slot *reader = w ? w : s->niov == 2 ? s : NULL;
	if (reader && ctx->forwarding) {
		reader->copy = ctx->forwarding;
		ctx->forwarding->refs++;
	}
	if (w)
		slot_queue(ctx, rl, w);
	slot_queue(ctx, rl, s);
	tx_flush(ctx, rl);
	return 0;
}

/* Queues message m to node dest (send_one). A chunk to a peer that published
 * its key goes by RMA write, unless it is small or overlaps a transfer the
 * peer may not have handled yet (sni_note_inflight): then it goes as messages,
 * each no larger than a receive buffer, so a chunk cut for RMA is split
 * here (each piece choosing its path again: only the overlapping ones must
 * stay messages). */
int sni_send_msg(struct sn_ctx *ctx, int rail, uint32_t dest, const struct sn_msg *m,
		 const void *payload, size_t plen, struct rec *r)
{
	struct rail *rl = &ctx->rails[rail];
	uint64_t lo = m->off + m->chunk_off;
	bool write = m->type == SN_MSG_XFER && plen > SN_INLINE_MAX && rl->rma[dest] &&
		     !sni_overlaps_inflight(rl, dest, lo, lo + plen);
	if (write || plen <= rl->max_payload)
		return send_one(ctx, rail, dest, m, payload, plen, r, write);
	struct sn_msg pm = *m;
	for (size_t o = 0; o < plen; o += pm.chunk_len) {
		pm.chunk_off = m->chunk_off + o;
		pm.chunk_len = (uint32_t)(plen - o < rl->max_payload ? plen - o : rl->max_payload);
		int rc = sni_send_msg(ctx, rail, dest, &pm, (const uint8_t *)payload + o,
				      pm.chunk_len, r);
		if (rc)
			return rc;
	}
	return 0;
}

int sni_post_rx(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	ssize_t rc;
	do {
		rc = fi_recv(rl->ep, s->buf, s->size, NULL, FI_ADDR_UNSPEC, &s->fctx);
		if (rc == -FI_EAGAIN)
			fi_cq_read(rl->cq, NULL, 0);
	} while (rc == -FI_EAGAIN);
	if (rc)
		return fail(ctx, (int)rc, "cannot post receive: %s", fi_strerror((int)-rc));
	return 0;
}

/* ---------------------------------------------------------------- progress */

void sni_slot_drop_copy(struct slot *s)
{
	if (s->copy && --s->copy->refs == 0)
		free(s->copy);
	s->copy = NULL;
}

static void tx_done(struct sn_ctx *ctx, struct slot *s)
{
	struct rec *r = s->rec;
	ctx->tx_outstanding--;
	if (!s->err) /* the provider took it; one it refused carries the error */
		ctx->rails[s->rail].tx_held[s->dest]--;
	sni_slot_drop_copy(s);
	if (s->big) {
		ctx->rails[s->rail].big_tx--;
		ctx->rails[s->rail].big_tx_ns = now_ns();
		s->big = false;
	}
	if (ctx->nfree_slots < SN_SLOT_CACHE) {
		s->next = ctx->free_slots;
		ctx->free_slots = s;
		ctx->nfree_slots++;
	} else {
		free(s);
	}
	if (r) {
		r->tx_pending--;
		sni_rec_release(ctx, r);
	}
}

static void tx_failed(struct sn_ctx *ctx, struct slot *s, int err)
{
	note(ctx, "%s to node %u failed: %s", s->write ? "RMA write" : "send", s->dest,
	     fi_strerror(-err));
	if (s->rec && !s->rec->finished)
		sni_rec_child_failed(ctx, s->rec, s->dest);
	tx_done(ctx, s);
}

static void check_deadlines(struct sn_ctx *ctx)
{
	sni_caw_backoffs(ctx);
	if (!ctx->recs)
		return; /* the idle case: no clock read on every progress round */
	uint64_t t = now_ns();
	/* finishing one record can free others (a failed ACK cascades), so
	 * rescan from the head after each; every pass finishes one record */
	for (struct rec *r = ctx->recs; r;) {
		if (!r->finished && t >= r->deadline_ns) {
			sni_rec_try_finish(ctx, r, true);
			r = ctx->recs;
		} else {
			r = r->next;
		}
	}
}

static int rail_progress(struct sn_ctx *ctx, int rail)
{
	struct rail *rl = &ctx->rails[rail];
	struct fi_cq_msg_entry ent[16];
	int handled = 0;
	for (;;) {
		ssize_t n = fi_cq_read(rl->cq, ent, 16);
		if (n == -FI_EAGAIN) {
			rl->cq_dirty = false;
			break;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = {0};
			if (fi_cq_readerr(rl->cq, &ee, 0) < 1)
				break;
			struct slot *s = ee.op_context;
			if (!s)
				continue;
			if (s->kind == SLOT_TX) {
				tx_failed(ctx, s, -(int)ee.err);
			} else {
				/* nothing here cancels a receive: FI_ECANCELED is
				 * rxm giving back a buffer it had matched to a peer
				 * whose connection died in the middle of the message
				 * (once: every message is eager, rxm_all_eager). Not
				 * posted again, an MM killed in a multicast took the
				 * buffers of its nodes with it: deaf to the new MM */
				note(ctx, "receive error: %s; buffer posted again",
				     fi_strerror((int)ee.err));
				sni_post_rx(ctx, rl, s);
			}
			handled++;
			continue;
		}
		if (n < 0)
			return fail(ctx, (int)n, "completion queue: %s", fi_strerror((int)-n));
		for (ssize_t i = 0; i < n; i++) {
			struct slot *s = ent[i].op_context;
			if (s->kind == SLOT_TX) {
				tx_done(ctx, s);
			} else {
				sni_handle_rx(ctx, rail, s->buf, ent[i].len);
				sni_post_rx(ctx, rl, s);
			}
		}
		handled += (int)n;
	}
	for (struct slot *s; (s = rl->failq); handled++) {
		rl->failq = s->next;
		tx_failed(ctx, s, s->err);
	}
	tx_flush(ctx, rl);
	return handled;
}

int sn_progress(struct sn_ctx *ctx)
{
	int total = 0;
	sni_peers_refresh(ctx);
	for (int i = 0; i < ctx->nrails; i++) {
		/* a node that never sleeps (busy-polling) reads its bell now and
		 * then, for peers' requests; before the queue, so that a ring
		 * taken here is about something this round still sees */
		struct rail *rl = &ctx->rails[i];
		if (rl->bell_fd >= 0 && ++rl->bell_rounds >= SN_BELL_READ_ROUNDS)
			sni_bell_take(ctx, rl);
		int rc = rail_progress(ctx, i);
		if (rc < 0)
			return rc;
		total += rc;
	}
	check_deadlines(ctx);
	return total + sni_caw_deliver(ctx);
}

int sn_wait_fd(struct sn_ctx *ctx) { return ctx->epfd; }

/* May a rail with a doorbell sleep until its next ring? Not while our own
 * sends' completions may wait in the queue (they ring nothing), nor when a
 * ring came since the last look: it may be about something that look
 * missed. Drained here, just before sleeping, rather than at every look:
 * a daemon looks many times a turn, and each drain is a system call. */
static bool bell_quiet(struct sn_ctx *ctx, struct rail *rl)
{
	return !rl->cq_dirty && sni_bell_take(ctx, rl) == 0;
}

int sn_prepare_wait(struct sn_ctx *ctx)
{
	for (int i = 0; i < ctx->nrails; i++) {
		/* a send the provider pushed back (txq) is no reason to spin:
		 * sn_next_timeout_ms brings the caller back within 1 ms */
		if (ctx->rails[i].wait_fd < 0 || ctx->rails[i].failq)
			return -EAGAIN;
		if (ctx->rails[i].bell_fd >= 0) {
			if (!bell_quiet(ctx, &ctx->rails[i]))
				return -EAGAIN;
			continue;
		}
		struct fid *f = &ctx->rails[i].cq->fid;
		if (fi_trywait(ctx->rails[i].fabric, &f, 1) != FI_SUCCESS)
			return -EAGAIN;
	}
	return 0;
}

int sn_sleep_limit_ms(struct sn_ctx *ctx, bool busy)
{
	int timeout = -1, t;
	for (int i = 0; i < ctx->nrails; i++) {
		struct fid *f = &ctx->rails[i].cq->fid;
		if (ctx->rails[i].wait_fd < 0 || ctx->rails[i].failq)
			t = busy ? 0 : 1; /* polled, or a retry due: no spin */
		else if (ctx->rails[i].bell_fd >= 0)
			t = bell_quiet(ctx, &ctx->rails[i]) ? -1 : 0;
		else if (fi_trywait(ctx->rails[i].fabric, &f, 1) != FI_SUCCESS)
			t = 0; /* completions to take now */
		else
			continue;
		if (t < 0)
			continue;
		if (timeout < 0 || t < timeout)
			timeout = t;
	}
	t = sn_next_timeout_ms(ctx);
	if (t >= 0 && (timeout < 0 || t < timeout))
		timeout = t;
	return timeout;
}

/* Connection set-up (rxm over tcp or sockets) is progressed only inside
 * fi_cq_read, and an incoming connection request does not make the CQ's
 * wait fd readable. A node that sleeps until a message arrives can then
 * never accept the connection that message needs: a tree child whose only
 * traffic comes from its parent would sleep forever. So a sleeper wakes at
 * least this often to drive progress. */
#define SN_CM_POLL_MS 5

int sn_next_timeout_ms(struct sn_ctx *ctx)
{
	uint64_t t = now_ns(), best = UINT64_MAX;
	for (struct rec *r = ctx->recs; r; r = r->next)
		if (!r->finished && r->deadline_ns < best)
			best = r->deadline_ns;
	for (struct caw_call *c = ctx->calls; c; c = c->next) {
		if (c->sm.state == CAW_BACKOFF && c->sm.backoff_until_ns < best)
			best = c->sm.backoff_until_ns;
		if (c->sm.answered && !c->delivered)
			best = 0; /* an answer to hand over */
	}
	int ms = best == UINT64_MAX ? -1
		 : best <= t	     ? 0
				     : (int)((best - t + 999999) / 1000000);
	if (ms < 0 || ms > SN_CM_POLL_MS)
		ms = SN_CM_POLL_MS;
	for (int i = 0; i < ctx->nrails; i++) {
		if (ctx->rails[i].txq_head && ms > 1)
			ms = 1; /* retry what the provider pushed back */
		/* in case its ring back never comes; a peer that copied
		 * nothing for SN_BELL_STALL_MS is stopped or dead, and the
		 * usual polling finds the completion if it ever comes */
		if (ctx->rails[i].big_tx && ms > 1 &&
		    t - ctx->rails[i].big_tx_ns < SN_BELL_STALL_MS * 1000000ull)
			ms = 1;
		if (ctx->rails[i].failq)
			ms = 0; /* report what it refused */
	}
	return ms;
}

/* Drives progress until cond(arg) holds or deadline_ns passes; sleeps on the
 * wait fd rather than spinning, after an optional spin phase. */
void sni_wait_until(struct sn_ctx *ctx, bool (*cond)(struct sn_ctx *, void *), void *arg,
		    uint64_t deadline_ns)
{
	uint64_t start = now_ns();
	uint64_t spin_until = start + (uint64_t)ctx->cfg.spin_us * 1000;
	bool no_wait_obj = ctx->epfd < 0 || ctx->rails[0].wait_fd < 0;
	uint64_t yield_until = (spin_until > start ? spin_until : start) + SN_YIELD_NS;
	unsigned backoff_us = 1, spins = 0;
	bool spinning = spin_until > start;
	for (;;) {
		sn_progress(ctx);
		if (cond(ctx, arg))
			return;
		/* while busy-polling, read the clock only every 16th round: it
		 * costs about as much as an empty progress round */
		if (spinning && (++spins & 15))
			continue;
		uint64_t t = now_ns();
		if (t >= deadline_ns)
			return;
		if (t < spin_until)
			continue;
		spinning = false;
		if (no_wait_obj && t < yield_until) {
			/* nothing to sleep on: give the core away but look again
			 * soon, before paying for a timed sleep */
			sched_yield();
			continue;
		}
		uint64_t left_ms = (deadline_ns - t) / 1000000 + 1;
		int ms = left_ms > INT32_MAX ? -1 : (int)left_ms;
		int next = sn_next_timeout_ms(ctx);
		if (next >= 0 && (ms < 0 || next < ms))
			ms = next;
		if (no_wait_obj) {
			/* no wait object: back off from 1 µs to 1 ms */
			struct timespec ts = {0, (long)backoff_us * 1000};
			nanosleep(&ts, NULL);
			if (backoff_us < 1000)
				backoff_us *= 2;
			continue;
		}
		if (sn_prepare_wait(ctx))
			continue;
		struct pollfd pfd = {.fd = ctx->epfd, .events = POLLIN};
		poll(&pfd, 1, ms);
	}
}
