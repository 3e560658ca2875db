/* The send queues: the slots that carry messages and writes, their hand-over
 * to the provider in each destination's order, the doorbells rung once a
 * flush is through, and a send's end (completed, or refused). */
#include "sn_int.h"

#include <errno.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "bell.h"

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

/* Hands queued messages and writes to the provider, each destination's in
 * the order they were queued (the provider keeps that order to the peer:
 * FI_ORDER_SAS, and FI_ORDER_SAW on a rail with RMA). A destination that
 * pushes back (-FI_EAGAIN) keeps its own, in order, without holding up
 * the others; one that stays blocked past the timeout is given up as
 * unreachable. */
void sni_tx_flush(struct sn_ctx *ctx, struct rail *rl)
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
			sni_tx_done(ctx, s);
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
	} else {
		s->all_next = ctx->all_slots;
		s->all_pprev = &ctx->all_slots;
		if (ctx->all_slots)
			ctx->all_slots->all_pprev = &s->all_next;
		ctx->all_slots = s;
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
	sni_tx_flush(ctx, rl);
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

void sni_tx_done(struct sn_ctx *ctx, struct slot *s)
{
	struct rec *r = s->rec;
	ctx->tx_outstanding--;
	if (!s->err) { /* the provider took it; one it refused carries the error */
		ctx->rails[s->rail].tx_held[s->dest]--;
		ctx->rails[s->rail].tx_done_ns[s->dest] = now_ns();
	}
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
		*s->all_pprev = s->all_next;
		if (s->all_next)
			s->all_next->all_pprev = s->all_pprev;
		free(s);
	}
	if (r) {
		r->tx_pending--;
		ctx->hooks.rec_sent(ctx, r);
	}
}

void sni_tx_failed(struct sn_ctx *ctx, struct slot *s, int err)
{
	note(ctx, "%s to node %u failed: %s", s->write ? "RMA write" : "send", s->dest,
	     fi_strerror(-err));
	/* a tombstone forwards late chunks (treeop.c) */
	if (s->rec && (!s->rec->finished || s->rec->tomb))
		ctx->hooks.send_failed(ctx, s->rec, s->dest);
	sni_tx_done(ctx, s);
}
