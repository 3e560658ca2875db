/* BCS-MPI in the node daemon: the work the BCS-MPI paper puts on NIC threads,
 * here its micro-phases (the collectives are bcs_coll.c's, a checkpoint's
 * drain bcs_drain.c's, a job's bookkeeping and sending bcs_job.c's).
 *
 * Ranks post descriptors into a memfd shared with this daemon
 * (bcs_mpi/abi/chan.h). At every strobe, for each job that uses MPI here:
 *   1. completion: what a full completion ring held back goes into it and
 *      blocked ranks are woken (futex); every other completion was
 *      published when its data moved (publish_now);
 *   2. collection: the ranks' new descriptors are read, labelled with the
 *      slice;
 *   3. descriptor exchange: one DESC message per other node of the job
 *      carries the send descriptors for its ranks and says "nothing more
 *      from me up to this slice" (its cover);
 *   4. matching: once every node of the job covers slice t, the receivers'
 *      round t runs (match.h): sends in (slice, source rank, post
 *      order), then receives in post order; MPI_ANY_SOURCE receives and
 *      probes only once the job is quiescent (resolve), so that their
 *      matching is the same whatever the timing;
 *   5. transmission: a send of at most BCS_INLINE_MAX bytes came with its
 *      bytes in the DESC and is copied into the receiving rank at matching;
 *      larger ones are granted, per source node and slice up to what the
 *      link moves in a slice, into buffers of this node's area for that
 *      source in global memory (layout.h); the sender reads the bytes from
 *      its rank (process_vm_readv), puts them there in one XFER-AND-SIGNAL
 *      and, once they are held, says so (DATA); the receiver copies them
 *      into the receiving rank (process_vm_writev) and grants the buffer
 *      again. Within a node the daemon copies from one rank to the other.
 * Node to node everything travels through global memory by XFER-AND-SIGNAL,
 * never a same-host shortcut. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "chan_ckpt.h"
#include "dtype.h"
#include "match.h"
#include "ckpt.h"
#include "layout.h"
#include "sn_ep.h"
#include "nd.h"
#include "bcs_int.h"
#include "trace.pb-c.h"

/* ---- data movement */

/* A GRANT to the sender's node: records of one buffer (buf) or of none
 * (BCS_NOBUF: sends that just complete). */
static void send_grants(struct nd *nd, struct bjob *j, uint32_t node, uint32_t buf,
			uint64_t gen, const struct wgrant *g, size_t n)
{
	if (!n)
		return;
	/* the sender tags with AES-GMAC only for a node that can check it */
	nd->bcs->next_flags = buf | (buf != BCS_NOBUF && nd->bcs->gmac ? BCS_GRANT_GMAC : 0);
	bcs_send(nd, node, M_GRANT, j->id, gen, (uint32_t)n, g, n * sizeof(*g), NULL, 0);
	nd->bcs->spin_until_ns = clock_mono_ns() + BCS_SPIN_NS;
}

/* A GRANT_RANK to the sender's node: pieces its ranks write into ours. */
static void send_rank_grants(struct nd *nd, struct bjob *j, uint32_t node,
			     const struct wrgrant *g, size_t n)
{
	if (!n)
		return;
	nd->bcs->next_flags = BCS_GRANT_RANK;
	bcs_send(nd, node, M_GRANT, j->id, 0, (uint32_t)n, g, n * sizeof(*g), NULL, 0);
	nd->bcs->spin_until_ns = clock_mono_ns() + BCS_SPIN_NS;
}

/* A free buffer of the area for data from node `from`, taken; -1: none. */
static int take_buf(struct nd_bcs *b, uint32_t from)
{
	uint64_t now = clock_mono_ns();
	for (uint32_t k = 0; k < GM_BCS_AREA_BUFS; k++) {
		struct barea *a = &b->area[from][k];
		if (a->busy && now - a->since_ns > BCS_AREA_STALE_NS) {
			slog("node %u never said what it put in buffer %u of its area; freed", from, k);
			a->busy = false;
			b->nbusy--;
		}
		if (!a->busy) {
			a->busy = true;
			b->nbusy++;
			a->gen++;
			a->since_ns = now;
			return (int)k;
		}
	}
	return -1;
}

/* Test hook bcs_hold_job=J: job J's first message of a megabyte or more
 * stops half way until a checkpoint freezes the job, so a test's
 * checkpoint finds it under way however late its request lands. */
static bool held_by_test(struct nd *nd, struct bjob *j, const struct xfer *x)
{
	if (j->test_hold == 2 || fault_value(&nd->fault, "bcs_hold_job") != j->id ||
	    x->total < (1u << 20) || x->granted < x->total / 2)
		return false;
	if (j->frozen) {
		j->test_hold = 2;
		return false;
	}
	if (!j->test_hold)
		slog("test hook: job %" PRIu64 ": a message of %" PRIu64 " bytes held half way "
		     "until a checkpoint freezes the job", j->id, x->total);
	j->test_hold = 1;
	return true;
}

/* x, the head of node's grant queue, has had its last piece granted: it
 * leaves the queue for its completion. */
static void all_granted(struct bjob *j, uint32_t node, struct xfer *x, bool self)
{
	j->gq_head[node] = x->next;
	if (!x->next)
		j->gq_tail[node] = NULL;
	if (x->s->inl || x->total == 0) {
		bcs_xfer_free(x);
	} else if (self) {
		bcs_local_granted(j, x);
	} else {
		unsigned h = hkey((uint32_t)x->s->dst, x->r->req);
		x->next = j->wait_data[h];
		j->wait_data[h] = x;
	}
}

/* Transmission micro-phase, at the receiver: matched pairs in order per
 * source node. A send that came in its descriptor is copied into the rank
 * at once; a local one copied rank to rank (within the slice's budget of
 * such copies, bcs_local_piece); the others granted pieces of the area's
 * free buffers for their source, up to the slice's budget. The
 * buffer's data comes back as M_DATA, which frees it and grants again. */
static void grant(struct nd *nd, struct bjob *j)
{
	struct nd_bcs *b = nd->bcs;
	size_t maxg = (b->max_msg - sizeof(struct bhdr)) / sizeof(struct wgrant);
	size_t maxr = (b->max_msg - sizeof(struct bhdr)) / sizeof(struct wrgrant);
	struct wgrant *g = malloc(maxg * sizeof(*g)), *gn = malloc(maxg * sizeof(*gn));
	struct wrgrant *rg = malloc(maxr * sizeof(*rg));
	if (!g || !gn || !rg)
		abort();
	for (uint32_t node = 0; node < b->nnodes; node++) {
		size_t ng = 0, nn = 0, nr = 0;
		int rp;
		int buf = -1;
		uint64_t used = 0;
		while (j->gq_head[node]) {
			struct xfer *x = j->gq_head[node];
			bool self = node == b->self;
			if (x->s->inl || x->total == 0) {
				int err = bcs_copy_to(bcs_pid_of(j, x->lr), x->r->addr,
						      x->s->inl, x->total) < 0 ? BCS_EFAULT : 0;
				bcs_recv_done(j, x, err);
				if (self) {
					uint32_t slr = (uint32_t)x->s->src - j->first;
					struct osend *o = bcs_osend_take(j, slr, x->s->sreq, true);
					if (o) {
						bcs_complete(j, slr, o->d.req, x->s->dst, x->s->tag, 0,
							     o->d.len);
						free(o);
					}
				} else {
					gn[nn++] = (struct wgrant){.src = x->s->src, .dst = x->s->dst,
								   .sreq = x->s->sreq, .rreq = x->r->req,
								   .len = x->total, .last = 1};
					if (nn == maxg) {
						send_grants(nd, j, node, BCS_NOBUF, 0, gn, nn);
						nn = 0;
					}
				}
				x->granted = x->total;
			} else if (held_by_test(nd, j, x)) {
				break;
			} else if (self) {
				if (!bcs_local_piece(nd, j, x))
					break; /* budget spent: the rest next slice */
			} else if ((rp = bcs_rank_piece(nd, j, node, x, &rg[nr])) != 0) {
				if (rp < 0)
					break; /* the receiver's next free slot grants it */
				/* the sending rank writes it into the receiving rank */
				if (++nr == maxr) {
					send_rank_grants(nd, j, node, rg, nr);
					nr = 0;
				}
			} else {
				uint64_t chunk = x->total - x->granted;
				if (chunk > j->budget[node])
					chunk = j->budget[node];
				if (buf >= 0 && (used == b->buf_size || ng == maxg)) {
					/* earlier pieces first: a send completes with the
					 * record that says last, which must find the
					 * writes of its earlier pieces already ordered */
					send_rank_grants(nd, j, node, rg, nr);
					nr = 0;
					send_grants(nd, j, node, (uint32_t)buf, b->area[node][buf].gen,
						    g, ng);
					buf = -1;
				}
				if (buf < 0 && chunk) {
					buf = take_buf(b, node);
					ng = 0;
					used = 0;
				}
				if (buf < 0)
					break; /* every buffer in use: the next M_DATA grants */
				if (chunk > b->buf_size - used)
					chunk = b->buf_size - used;
				if (chunk == 0)
					break; /* budget spent: the rest next slice */
				j->budget[node] -= chunk;
				uint64_t off = x->granted;
				x->granted += chunk;
				g[ng++] = (struct wgrant){.src = x->s->src, .dst = x->s->dst,
							  .sreq = x->s->sreq, .rreq = x->r->req,
							  .off = off, .len = chunk,
							  .last = x->granted == x->total,
							  .aoff = (uint32_t)used};
				used += chunk;
			}
			if (x->granted != x->total)
				continue; /* the next piece, in the next buffer */
			all_granted(j, node, x, self);
		}
		send_rank_grants(nd, j, node, rg, nr);
		if (buf >= 0)
			send_grants(nd, j, node, (uint32_t)buf, b->area[node][buf].gen, g, ng);
		send_grants(nd, j, node, BCS_NOBUF, 0, gn, nn);
	}
	free(g);
	free(gn);
	free(rg);
}

void bcs_grant(struct nd *nd, struct bjob *j)
{
	grant(nd, j);
}

static void matched(struct bjob *j, struct bcs_msend *s, struct bcs_mrecv *r)
{
	struct xfer *x = calloc(1, sizeof(*x));
	if (!x)
		abort();
	x->s = s;
	x->r = r;
	x->lr = (uint32_t)s->dst - j->first;
	x->total = s->len < r->len ? s->len : r->len;
	uint32_t node = s->src_node;
	if (j->gq_tail[node])
		j->gq_tail[node]->next = x;
	else
		j->gq_head[node] = x;
	j->gq_tail[node] = x;
}

/* Blocking probes that can answer; wildcard ones (MPI_ANY_SOURCE) only with
 * wild, at quiescence. */
static void check_probes(struct bjob *j, uint32_t lr, bool wild)
{
	for (struct bcs_mrecv **pp = &j->probes[lr]; *pp;) {
		struct bcs_mrecv *p = *pp;
		struct bcs_msend *s = p->src == BCS_ANY_SOURCE && !wild
					      ? NULL
					      : bcs_mq_peek_lowest(&j->mq[lr], p->src, p->tag, p->ctx);
		if (!s) {
			pp = &p->next;
			continue;
		}
		bcs_complete(j, lr, p->req, s->src, s->tag, 0, s->len);
		*pp = p->next;
		free(p);
	}
}

/* Wildcard receives and probes (MPI_ANY_SOURCE) are resolved only when the
 * job is quiescent at the round just run: every node of the job reported
 * quiet at that slice and the one before (its ranks all waiting, nothing
 * collected, moved or in flight; see node_quiet). Then the sends that are
 * posted are all the program will post before a match, whatever the
 * timing: each local rank's posted receives in post order take theirs
 * (a wildcard the lowest source), then its blocking wildcard probes. */
/* A send's cancel won at the receiver: the sender's node completes the
 * send as cancelled (here at once, else told by a GRANT record). */
static void send_cancelled(struct nd *nd, struct bjob *j, const struct pcancel *c)
{
	if (c->from != nd->bcs->self) {
		struct wgrant g = {.src = c->src, .dst = (int32_t)(j->first + c->lr),
				   .sreq = c->sreq, .last = BCS_GRANT_CANCELLED};
		send_grants(nd, j, c->from, BCS_NOBUF, 0, &g, 1);
		return;
	}
	uint32_t slr = (uint32_t)c->src - j->first;
	struct osend *o = bcs_osend_take(j, slr, c->sreq, true);
	if (o) {
		bcs_complete(j, slr, o->d.req, -1, -1, BCS_ECANCELLED, 0);
		free(o);
	}
}

/* At quiescence, the cancels whose rounds have run: a send still unmatched
 * or a receive still posted is taken back; a matched one goes on. Before
 * wildcards resolve: what the program cancelled, no wildcard takes. */
static void resolve_cancels(struct nd *nd, struct bjob *j, uint64_t c)
{
	struct pcancel **pp = &j->cancels;
	while (*pp) {
		struct pcancel *k = *pp;
		if (k->label > c) {
			pp = &k->next;
			continue;
		}
		if (k->send) {
			k->lr = (uint32_t)k->dst - j->first;
		}
		if (k->lr >= j->nlocal) {
			/* not a rank of this node: nothing to cancel */
		} else if (k->send) {
			struct bcs_msend *s = bcs_mq_cancel_send(&j->mq[k->lr], k->src, k->seq);
			if (s)
				send_cancelled(nd, j, k);
			free(s);
		} else {
			struct bcs_mrecv *r = bcs_mq_cancel_recv(&j->mq[k->lr], k->seq);
			if (r)
				bcs_complete(j, k->lr, r->req, BCS_ANY_SOURCE, BCS_ANY_TAG,
					     BCS_ECANCELLED, 0);
			free(r);
		}
		*pp = k->next;
		free(k);
	}
	j->cancels_tail = pp;
}

/* Wildcards and cancels at slice c, if the job was quiescent there; the
 * rounds up to c run, none after it. */
static void resolve(struct nd *nd, struct bjob *j, uint64_t c)
{
	if (c == UINT64_MAX || c <= j->resolved || j->frozen)
		return; /* frozen: after the checkpoint, at the same quiescence */
	/* a node that reported with rounds still to run (its DESCs came late)
	 * was quiet only if nothing was collected in those rounds: every node
	 * quiet that many slices further back too */
	uint64_t lag = 0;
	for (uint32_t k = 0; k < j->nnodes_job; k++) {
		uint32_t n = j->nodes[k];
		if (j->cover[n] != UINT64_MAX && j->qlag[n][c % 64] > lag)
			lag = j->qlag[n][c % 64];
	}
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (!bcs_quiet_span(j->cover[j->nodes[k]], j->qmask[j->nodes[k]], c, lag + 1))
			return;
	j->resolved = c;
	resolve_cancels(nd, j, c);
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_mrecv *r;
		struct bcs_msend *s;
		while ((r = bcs_mq_resolve(&j->mq[lr], &s)))
			matched(j, s, r);
		check_probes(j, lr, true);
	}
}

/* Matching micro-phase: every round every node of the job covers. */
static void rounds(struct nd *nd, struct bjob *j)
{
	if (!j->job || !j->map)
		return;
	uint64_t t = UINT64_MAX;
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->cover[j->nodes[k]] < t)
			t = j->cover[j->nodes[k]];
	if (t <= j->round)
		return;
	/* this round's sends in matching order; later ones stay */
	size_t n = 0;
	for (size_t i = 0; i < j->ninc; i++)
		if (j->inc[i]->label <= t) {
			struct bcs_msend *tmp = j->inc[n];
			j->inc[n++] = j->inc[i];
			j->inc[i] = tmp;
		}
	qsort(j->inc, n, sizeof(*j->inc), bcs_msend_cmp);
	size_t si = 0, ri = 0;
	/* Every slice passed is a point the job may have been quiescent at,
	 * taken in order with that slice's descriptors matched and no later
	 * ones: which slices a node's rounds stop at depends on when the
	 * others' DESCs came (a node that skipped a slice moves every cover
	 * past it at once), and a node that looked only where its rounds
	 * stopped resolved its wildcards at another slice than the rest, or
	 * later, with sends posted after the quiescence among the candidates.
	 * Slices 64 or more before t cannot be quiet any more (the reports
	 * kept are the last 64). */
	uint64_t c = t == UINT64_MAX || t - j->round <= 64 ? j->round : t - 64;
	while (si < n || (ri < j->nnewr && j->newr[ri]->label <= t)) {
		uint64_t ls = si < n ? j->inc[si]->label : UINT64_MAX;
		uint64_t lr_ = ri < j->nnewr && j->newr[ri]->label <= t ? j->newr[ri]->label
									  : UINT64_MAX;
		uint64_t label = ls < lr_ ? ls : lr_;
		for (; c + 1 < label && t != UINT64_MAX; c++)
			resolve(nd, j, c + 1);
		if (label > c)
			c = label;
		for (; si < n && j->inc[si]->label == label; si++) {
			struct bcs_msend *s = j->inc[si];
			uint32_t lr = (uint32_t)s->dst - j->first;
			struct bcs_mrecv *r = bcs_mq_send(&j->mq[lr], s);
			if (r)
				matched(j, s, r);
			else
				check_probes(j, lr, false);
		}
		for (; ri < j->nnewr && j->newr[ri]->label == label; ri++) {
			struct bcs_mrecv *r = j->newr[ri];
			uint32_t lr = j->newr_lr[ri];
			if (r->op == BCS_OP_RECV) {
				struct bcs_msend *s = bcs_mq_recv(&j->mq[lr], r);
				if (s)
					matched(j, s, r);
				continue;
			}
			/* a blocking wildcard probe answers at quiescence only */
			struct bcs_msend *s = r->op == BCS_OP_PROBE && r->src == BCS_ANY_SOURCE
						      ? NULL
						      : bcs_mq_peek(&j->mq[lr], r->src, r->tag, r->ctx);
			if (s || r->op == BCS_OP_IPROBE) {
				bcs_complete(j, lr, r->req, s ? s->src : -1, s ? s->tag : -1,
					     s ? 0 : BCS_ENOTFOUND, s ? s->len : 0);
				free(r);
			} else {
				r->next = j->probes[lr];
				j->probes[lr] = r;
			}
		}
		if (t != UINT64_MAX)
			resolve(nd, j, label);
	}
	memmove(j->inc, j->inc + n, (j->ninc - n) * sizeof(*j->inc));
	j->ninc -= n;
	memmove(j->newr, j->newr + ri, (j->nnewr - ri) * sizeof(*j->newr));
	memmove(j->newr_lr, j->newr_lr + ri, (j->nnewr - ri) * sizeof(*j->newr_lr));
	j->nnewr -= ri;
	for (; c < t && t != UINT64_MAX; c++)
		resolve(nd, j, c + 1);
	j->round = t;
	grant(nd, j);
}

static void abort_job(struct nd *nd, struct bjob *j, uint32_t rank, int code)
{
	char why[96];
	snprintf(why, sizeof(why), "rank %u called MPI_Abort (%d)", rank, code);
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->nodes[k] != nd->bcs->self)
			bcs_send(nd, j->nodes[k], M_ABORT, j->id, rank, (uint32_t)code & 255, NULL, 0,
				 NULL, 0);
	bcs_kill_local(j, code, why);
}

static void cancel_add(struct bjob *j, struct pcancel c)
{
	struct pcancel *k = malloc(sizeof(*k));
	if (!k)
		abort();
	*k = c;
	k->next = NULL;
	if (!j->cancels_tail)
		j->cancels_tail = &j->cancels;
	*j->cancels_tail = k;
	j->cancels_tail = &k->next;
}

/* The post order of local rank lr's receive req, posted and not matched
 * (in a round or not yet); -1 if none */
static int64_t recv_pending(const struct bjob *j, uint32_t lr, uint32_t req)
{
	for (const struct bcs_mrecv *r = j->mq[lr].phead; r; r = r->next)
		if (r->req == req && r->op == BCS_OP_RECV)
			return r->seq;
	for (size_t i = 0; i < j->nnewr; i++)
		if (j->newr_lr[i] == lr && j->newr[i]->req == req && j->newr[i]->op == BCS_OP_RECV)
			return j->newr[i]->seq;
	return -1;
}

/* MPI_Cancel. A receive's waits here for the job's quiescence (resolve),
 * named by its post order: its request id may be reused once it completed.
 * A send's follows the send to the receiving rank's node, in the same
 * stream of descriptors, and waits there. One already complete fails. */
static void cancel_posted(struct bjob *j, uint32_t lr, const struct bcs_desc *d, uint64_t slice)
{
	if (!(d->flags & BCS_CANCEL_SEND)) {
		int64_t seq = recv_pending(j, lr, d->req);
		if (seq >= 0)
			cancel_add(j, (struct pcancel){.label = slice, .lr = lr, .req = d->req,
						       .seq = (uint32_t)seq});
		return;
	}
	struct osend *o = bcs_osend_take(j, lr, d->req, false);
	if (!o || o->cancel)
		return;
	int node = bcs_node_of_rank(j, o->d.peer);
	if (node < 0)
		return;
	o->cancel = true;
	struct wdesc w = {.src = (int32_t)(j->first + lr), .dst = o->d.peer, .tag = o->d.tag,
			  .ctx = o->d.ctx, .seq = o->seq, .sreq = o->d.req, .flags = BCS_W_CANCEL};
	size_t at = j->nbatch[node];
	j->batch[node] = bcs_grow(j->batch[node], &j->capbatch[node], at + sizeof(w), 1);
	memcpy(j->batch[node] + at, &w, sizeof(w));
	j->nbatch[node] += sizeof(w);
}

/* Collection micro-phase: the ranks' new descriptors. Returns whether any
 * but an iprobe came (an iprobe loop counts as polling, not as moving). */
/* whole: one switch over the descriptor kinds, each case a few lines on the same ring state */
static bool collect(struct nd *nd, struct bjob *j, uint64_t slice)
{
	struct nd_bcs *b = nd->bcs;
	bool any = false;
	if (j->restoring)
		return false; /* its rings hold what the ranks had pending: not before they are back */
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
		__atomic_store_n(&a->phase, (uint32_t)slice ? (uint32_t)slice : 1u, __ATOMIC_RELEASE);
		uint32_t head = __atomic_load_n(&a->sub_head, __ATOMIC_ACQUIRE);
		uint32_t tail = a->sub_tail;
		if (head - tail > BCS_SUB_RING) {
			slog("job %" PRIu64 ": rank %u's ring is corrupt", j->id, j->first + lr);
			tail = head;
		}
		for (; tail != head; tail++) {
			struct bcs_desc d = a->sub[tail % BCS_SUB_RING];
			int32_t me = (int32_t)(j->first + lr);
			if (d.op != BCS_OP_IPROBE)
				any = true;
			switch (d.op) {
			case BCS_OP_INIT:
				j->active = true;
				break;
			case BCS_OP_BARRIER:
				j->bar_posted[lr]++;
				j->bar_req[lr] = d.req;
				break;
			case BCS_OP_ALLREDUCE:
				if (d.len > BCS_RED_MAX || !bcs_op_valid(d.peer, d.tag) ||
				    bcs_copy_from(bcs_pid_of(j, lr), d.addr, j->red_val + lr * BCS_RED_MAX,
						  d.len) < 0) {
					bcs_complete(j, lr, d.req, -1, -1, BCS_EFAULT, 0);
					break;
				}
				j->red_posted[lr]++;
				j->red_req[lr] = d.req;
				j->red_addr[lr] = d.addr;
				j->red_len = (uint32_t)d.len;
				j->red_count = d.ctx;
				j->red_op = d.peer;
				j->red_basic = d.tag;
				break;
			case BCS_OP_SEND: {
				int node = d.peer >= 0 && (uint32_t)d.peer < j->world
						   ? bcs_node_of_rank(j, d.peer) : -1;
				if (node < 0) {
					bcs_complete(j, lr, d.req, d.peer, d.tag, BCS_EFAULT, 0);
					break;
				}
				/* a small one carries its bytes: matched, it is in place at once */
				struct wdesc w = {.src = me, .dst = d.peer, .tag = d.tag, .ctx = d.ctx,
						  .seq = j->sseq[lr], .sreq = d.req,
						  .flags = d.flags, .inl = d.len <= BCS_INLINE_MAX,
						  .len = d.len};
				size_t at = j->nbatch[node], sz = wdesc_size(&w);
				j->batch[node] = bcs_grow(j->batch[node], &j->capbatch[node], at + sz, 1);
				memset(j->batch[node] + at, 0, sz);
				memcpy(j->batch[node] + at, &w, sizeof(w));
				if (w.inl && bcs_copy_from(bcs_pid_of(j, lr), d.addr,
							   j->batch[node] + at + sizeof(w), d.len) < 0) {
					bcs_complete(j, lr, d.req, d.peer, d.tag, BCS_EFAULT, 0);
					break;
				}
				j->nbatch[node] += sz;
				j->sseq[lr]++;
				struct osend *o = malloc(sizeof(*o));
				if (!o)
					abort();
				unsigned h = hkey(lr, d.req);
				*o = (struct osend){.lr = lr, .seq = w.seq, .d = d, .next = j->osends[h]};
				j->osends[h] = o;
				break;
			}
			case BCS_OP_RECV:
			case BCS_OP_PROBE:
			case BCS_OP_IPROBE: {
				struct bcs_mrecv *r = calloc(1, sizeof(*r));
				if (!r)
					abort();
				*r = (struct bcs_mrecv){.label = slice, .seq = j->rseq[lr]++,
							.src = d.peer, .tag = d.tag, .ctx = d.ctx,
							.req = d.req, .op = d.op, .addr = d.addr,
							.len = d.len};
				j->newr = bcs_grow(j->newr, &j->capnewr, j->nnewr + 1, sizeof(*j->newr));
				size_t cap = j->capnewr;
				(void)cap;
				j->newr_lr = realloc(j->newr_lr, j->capnewr * sizeof(*j->newr_lr));
				if (!j->newr_lr)
					abort();
				j->newr_lr[j->nnewr] = lr;
				j->newr[j->nnewr++] = r;
				break;
			}
			case BCS_OP_CANCEL:
				cancel_posted(j, lr, &d, slice);
				break;
			case BCS_OP_ABORT:
				__atomic_store_n(&a->sub_tail, tail + 1, __ATOMIC_RELEASE);
				abort_job(nd, j, (uint32_t)me, d.tag);
				return true;
			default:
				slog("job %" PRIu64 ": rank %d posted unknown operation %u", j->id,
				       me, d.op);
			}
		}
		__atomic_store_n(&a->sub_tail, tail, __ATOMIC_RELEASE);
	}
	(void)b;
	return any;
}

/* Send descriptors (wdesc records, each with its bytes when inline) into
 * the next round; len: the records' bytes. */
static void add_incoming(struct bjob *j, uint32_t from, uint64_t label, const uint8_t *rec,
			 size_t len, uint32_t count)
{
	for (size_t at = 0; count-- && len - at >= sizeof(struct wdesc);) {
		struct wdesc w;
		memcpy(&w, rec + at, sizeof(w));
		if (w.inl && w.len > BCS_INLINE_MAX)
			return;
		size_t sz = wdesc_size(&w);
		if (sz > len - at)
			return;
		const uint8_t *payload = rec + at + sizeof(w);
		at += sz;
		if (w.dst < 0 || (uint32_t)w.dst < j->first ||
		    (j->job && (uint32_t)w.dst >= j->first + j->nlocal))
			continue;
		if (w.flags & BCS_W_CANCEL) {
			cancel_add(j, (struct pcancel){.label = label, .send = true,
						       .dst = w.dst, .src = w.src, .seq = w.seq, .sreq = w.sreq,
						       .from = from});
			continue;
		}
		struct bcs_msend *s = calloc(1, sizeof(*s) + (w.inl ? w.len : 0));
		if (!s)
			abort();
		*s = (struct bcs_msend){.label = label, .src = w.src, .dst = w.dst, .tag = w.tag,
					.ctx = w.ctx, .seq = w.seq, .sreq = w.sreq, .src_node = from,
					.flags = w.flags, .len = w.len};
		if (w.inl) {
			memcpy(s + 1, payload, w.len);
			s->inl = (const uint8_t *)(s + 1);
		}
		j->inc = bcs_grow(j->inc, &j->capinc, j->ninc + 1, sizeof(*j->inc));
		j->inc[j->ninc++] = s;
	}
}

/* Descriptor exchange: this slice's sends to every other node of the job,
 * in as many DESCs as their records need. */
static void exchange(struct nd *nd, struct bjob *j, uint64_t cover, uint32_t quiet,
		     uint32_t ckpt)
{
	struct nd_bcs *b = nd->bcs;
	size_t room = b->max_msg - sizeof(struct bhdr);
	for (uint32_t k = 0; k < j->nnodes_job; k++) {
		uint32_t node = j->nodes[k];
		const uint8_t *w = j->batch[node];
		size_t n = j->nbatch[node];
		if (node == b->self) {
			add_incoming(j, node, cover, w, n, UINT32_MAX);
		} else {
			size_t off = 0;
			do {
				size_t c = 0;
				uint32_t count = 0;
				while (off + c < n) {
					struct wdesc d;
					memcpy(&d, w + off + c, sizeof(d));
					if (c + wdesc_size(&d) > room)
						break;
					c += wdesc_size(&d);
					count++;
				}
				/* all but the last piece cover the slice before */
				uint64_t cv = off + c < n ? cover - 1 : cover;
				b->next_quiet = quiet;
				b->next_ckpt = ckpt;
				b->next_ckpt_id = ckpt ? j->ckpt_id : 0;
				bcs_send_flags(nd, node, M_DESC, j->id, cv, count, bcs_bar_local(j),
					       w + off, c);
				off += c;
			} while (off < n);
		}
		j->nbatch[node] = 0;
	}
}

/* ---- incoming mailbox messages */

/* Starts a bulk transfer into the peer's area, or queues it while every
 * event is taken. */
static void bulk_go(struct nd *nd, struct bulk *bk);

/* Staging blocks of a buffer's size are kept for the next transfers: a
 * fresh one would be faulted in page by page each time. */
static uint8_t *stage_get(struct nd_bcs *b)
{
	if (b->nspare)
		return b->spare[--b->nspare];
	uint8_t *p = malloc(b->buf_size);
	if (!p)
		abort();
	return p;
}

static void stage_put(struct nd_bcs *b, uint8_t *p)
{
	if (p && b->nspare < GM_BCS_BULK_EVS)
		b->spare[b->nspare++] = p;
	else
		free(p);
}

static void bulk_done(struct nd *nd, struct bulk *bk, int err)
{
	for (uint32_t i = 0; err && i < bk->nrec; i++)
		bk->rec[i].err = BCS_EFAULT;
	struct wseal seal = {.len = bk->len, .mac = bk->mac};
	memcpy(seal.tag, bk->tag, sizeof(seal.tag));
	nd->bcs->next_flags = bk->buf;
	bcs_send(nd, bk->to, M_DATA, bk->job, bk->gen, bk->nrec, bk->rec,
		 bk->nrec * sizeof(*bk->rec), &seal, sizeof(seal));
	stage_put(nd->bcs, bk->data);
	free(bk->rec);
	free(bk);
}

static void bulk_go(struct nd *nd, struct bulk *bk)
{
	struct nd_bcs *b = nd->bcs;
	if (!bk->len) {
		bulk_done(nd, bk, 0);
		return;
	}
	for (uint32_t k = 0; k < GM_BCS_BULK_EVS; k++) {
		if (b->inflight[k])
			continue;
		struct sn_nodeset to;
		sn_set_clear(&to);
		sn_set_add(&to, fabric_id(bk->to));
		/* no remote event: M_DATA, sent once the data is held there, is
		 * what the receiver acts on, so it can never overtake the data */
		if (sn_xfer(nd->sn, &to, gm_bcs_area(b->nnodes, b->self, bk->buf), bk->data, bk->len,
			    EV_BCS_BULK0 + k, SN_NO_EVENT, 0) < 0) {
			slog("job %" PRIu64 ": message data to node %u not sent: %s", bk->job, bk->to,
			     sn_strerror(nd->sn));
			bulk_done(nd, bk, BCS_EFAULT);
			return;
		}
		b->inflight[k] = bk;
		b->spin_until_ns = clock_mono_ns() + BCS_SPIN_NS;
		return;
	}
	bk->next = NULL;
	if (b->bq_tail)
		b->bq_tail->next = bk;
	else
		b->bq_head = bk;
	b->bq_tail = bk;
}

void nd_bcs_bulk_sent(struct nd *nd, unsigned k, bool failed)
{
	struct nd_bcs *b = nd->bcs;
	if (!b || k >= GM_BCS_BULK_EVS || !b->inflight[k])
		return;
	struct bulk *bk = b->inflight[k];
	b->inflight[k] = NULL;
	bulk_done(nd, bk, failed ? BCS_EFAULT : 0);
	if (b->bq_head) {
		struct bulk *q = b->bq_head;
		b->bq_head = q->next;
		if (!b->bq_head)
			b->bq_tail = NULL;
		bulk_go(nd, q);
	}
}

/* At the sender: the receiver's grants. Pieces of a buffer are read from
 * the sending ranks into one block and written into the buffer in one
 * XFER-AND-SIGNAL; BCS_NOBUF ones (data that went inline) just complete.
 * j is NULL for a job that ended here: the buffer is still answered, so
 * the receiver can grant it again. */
static void on_grant(struct nd *nd, struct bjob *j, uint32_t from, uint32_t buf, uint64_t gen,
		     const struct wgrant *g, size_t n)
{
	struct nd_bcs *b = nd->bcs;
	struct bulk *bk = NULL;
	bool gmac = false;
	if (buf != BCS_NOBUF) {
		gmac = (buf & BCS_GRANT_GMAC) && b->gmac;
		buf &= ~BCS_GRANT_GMAC;
		if (buf >= GM_BCS_AREA_BUFS)
			return;
		bk = calloc(1, sizeof(*bk));
		if (!bk || !(bk->rec = calloc(n ? n : 1, sizeof(*bk->rec))))
			abort();
		*bk = (struct bulk){.to = from, .buf = buf, .job = j ? j->id : 0, .gen = gen,
				    .rec = bk->rec, .nrec = (uint32_t)n};
		for (size_t i = 0; i < n; i++)
			if (g[i].len <= b->buf_size && g[i].aoff <= b->buf_size - g[i].len &&
			    g[i].aoff + g[i].len > bk->len)
				bk->len = g[i].aoff + g[i].len;
		if (bk->len)
			bk->data = stage_get(b);
	}
	for (size_t i = 0; i < n; i++) {
		struct wdata *w = bk ? &bk->rec[i] : NULL;
		bool fits = !bk || (g[i].len <= b->buf_size && g[i].aoff <= b->buf_size - g[i].len);
		if (w)
			*w = (struct wdata){.dst = g[i].dst, .rreq = g[i].rreq, .off = g[i].off,
					    .len = fits ? g[i].len : 0, .aoff = g[i].aoff,
					    .err = BCS_EFAULT};
		if (!j || g[i].src < 0 || (uint32_t)g[i].src < j->first ||
		    (uint32_t)g[i].src >= j->first + j->nlocal || !fits)
			continue;
		uint32_t lr = (uint32_t)g[i].src - j->first;
		struct osend *o = bcs_osend_take(j, lr, g[i].sreq, false);
		if (!o)
			continue;
		if (w && g[i].off <= o->d.len && g[i].len <= o->d.len - g[i].off &&
		    bcs_copy_from(bcs_pid_of(j, lr), o->d.addr + g[i].off, bk->data + g[i].aoff,
				  g[i].len) == 0)
			w->err = 0; /* else the rank is gone: the job dies anyway */
		if (bk) {
			/* with pieces its rank writes, it completes once every
			 * piece moved, whichever path moved the last */
			if (g[i].last) {
				o->wr_last = true;
				o->end = g[i].off + g[i].len;
			}
			bcs_send_moved(j, lr, o, g[i].len);
		} else if (g[i].last) {
			bool cancelled = !bk && g[i].last == BCS_GRANT_CANCELLED;
			bcs_osend_take(j, lr, g[i].sreq, true);
			bcs_complete(j, lr, o->d.req, cancelled ? -1 : g[i].dst, 0,
				     cancelled ? BCS_ECANCELLED : 0, cancelled ? 0 : o->d.len);
			free(o);
		}
	}
	if (!bk)
		return;
	/* the tag goes in M_DATA (itself tagged), the block by RMA, where
	 * anyone on the fabric could write over it */
	bk->mac = gmac ? GM_BULK_GMAC : GM_BULK_POLY1305;
	if (nd->conf.bcs_data_tags)
		gm_bulk_tag(nd->key, bk->mac, b->self, from, buf, gen, bk->data, bk->len, bk->tag);
	if (bk->len && fault_hit(&nd->fault, "bulk_flip", ++b->bulk_sent))
		bk->data[bk->len / 2] ^= 0x40;
	bulk_go(nd, bk);
}

/* At the receiver: a piece is in buffer `at` of the area. */
static void on_data(struct bjob *j, uint32_t from, const struct wdata *w, const uint8_t *at)
{
	/* the head of the source's grant queue may be partly granted */
	struct xfer *h = j->gq_head ? j->gq_head[from] : NULL;
	if (h && h->s->dst == w->dst && h->r->req == w->rreq && w->off + w->len <= h->granted) {
		/* a piece lost fails the receive once the rest is granted (below) */
		if (w->err || bcs_copy_to(bcs_pid_of(j, h->lr), h->r->addr + w->off, at + w->aoff,
					  w->len) < 0)
			h->err = BCS_EFAULT;
		else
			j->in_daemon += w->len;
		h->done += w->len;
		return;
	}
	for (struct xfer **pp = &j->wait_data[hkey((uint32_t)w->dst, w->rreq)]; *pp;
	     pp = &(*pp)->next) {
		struct xfer *x = *pp;
		if (x->s->dst != w->dst || x->r->req != w->rreq)
			continue;
		if (w->off + w->len > x->total)
			return;
		int err = x->err || w->err ||
			  bcs_copy_to(bcs_pid_of(j, x->lr), x->r->addr + w->off, at + w->aoff,
				      w->len) < 0;
		if (!err)
			j->in_daemon += w->len;
		x->done += w->len;
		if (err)
			x->err = BCS_EFAULT;
		/* pieces its ranks still write: the last of them completes it */
		if ((x->done >= x->total || err) && !x->nrx) {
			bcs_recv_done(j, x, err ? BCS_EFAULT : 0);
			*pp = x->next;
			bcs_xfer_free(x);
		}
		return;
	}
}

/* M_DATA: what the sender put into a buffer of its area here; the buffer
 * is free again once it is copied out (whatever became of the job). The
 * block is checked against the tag M_DATA carries on a private copy, and
 * only that copy reaches the ranks: the area is open to remote writes.
 * A block that fails the check fails the receives it was for. With
 * bcs_data_tags = 0 the ranks get the area's bytes as they are. */
static void on_bulk(struct nd *nd, struct bjob *j, uint32_t from, const struct mhdr *h,
		    const uint8_t *body)
{
	struct nd_bcs *b = nd->bcs;
	uint32_t k = h->flags;
	size_t recs = (size_t)h->count * sizeof(struct wdata);
	if (k >= GM_BCS_AREA_BUFS || recs > h->len || h->len - recs < sizeof(struct wseal))
		return;
	struct barea *a = &b->area[from][k];
	if (!a->busy || a->gen != h->slice)
		return; /* not the grant in force: freed as stale, granted again */
	struct wseal seal;
	memcpy(&seal, body + recs, sizeof(seal));
	const uint8_t *at = nd->gmem + gm_bcs_area(b->nnodes, from, k);
	uint8_t *copy = NULL;
	bool ok = seal.len <= b->buf_size;
	if (ok && j && h->count && nd->conf.bcs_data_tags) {
		ok = seal.mac == GM_BULK_POLY1305 || (seal.mac == GM_BULK_GMAC && b->gmac);
		if (ok) {
			uint8_t want[GM_TAG_BYTES];
			copy = stage_get(b);
			memcpy(copy, at, seal.len);
			gm_bulk_tag(nd->key, seal.mac, from, b->self, k, a->gen, copy, seal.len,
				    want);
			ok = sodium_memcmp(want, seal.tag, sizeof(want)) == 0;
		}
		if (!ok)
			nd_log_refused(nd, "job %" PRIu64 ": message data from node %u in buffer "
					   "%u has a bad tag (forged or altered); its receives fail",
				       j->id, from, k);
	}
	for (uint32_t i = 0; j && i < h->count; i++) {
		struct wdata w;
		memcpy(&w, body + i * sizeof(w), sizeof(w));
		if (!ok || w.len > seal.len || w.aoff > seal.len - w.len)
			w.err = BCS_EFAULT; /* on_data reads nothing then */
		if (w.len <= b->buf_size)
			on_data(j, from, &w, copy ? copy : at);
	}
	stage_put(b, copy);
	a->busy = false;
	b->nbusy--;
	if (j)
		grant(nd, j);
}

/* Completions go to the ranks as soon as their data moved, not at the next
 * strobe: a blocking call ends in the micro-phase that moved its data
 * (docs/design/bcs-mpi.md says why matching stays deterministic). Sealed:
 * its rings are as its images keep them. */
static void publish_now(struct bjob *j)
{
	if (j->job && j->map && j->active && !j->sealed)
		bcs_publish(j);
}

/* Node n's report for slice (quiet with lag rounds not run yet), before its
 * cover moves there. A quiet report covers the slices the node skipped since
 * its last one (bcs_quiet_push): they get its lag too, at least the rounds
 * before them it had still not run at slice, so resolving at one of them
 * waits for those rounds' slices to be quiet as well. */
static void note_quiet(struct bjob *j, uint32_t n, uint64_t slice, bool quiet, uint8_t lag)
{
	uint64_t cover = j->cover[n];
	j->qmask[n] = bcs_quiet_push(cover, j->qmask[n], slice, quiet);
	if (!quiet || slice == UINT64_MAX || slice < cover)
		return;
	uint64_t lo = slice;
	if (cover && slice > cover)
		lo = slice - cover > 63 ? slice - 63 : cover + 1;
	for (uint64_t t = lo; t <= slice; t++)
		j->qlag[n][t % 64] = lag;
}

static void on_message(struct nd *nd, uint32_t from, const struct mhdr *h, const uint8_t *body)
{
	struct nd_bcs *b = nd->bcs;
	if (bcs_job_dead(b, h->job)) {
		/* the buffers of the node's area still go back and forth */
		if (h->type == M_GRANT && h->flags != BCS_NOBUF && h->flags != BCS_GRANT_RANK &&
		    (size_t)h->count * sizeof(struct wgrant) <= h->len)
			on_grant(nd, NULL, from, h->flags, h->slice, (const struct wgrant *)body,
				 h->count);
		else if (h->type == M_DATA)
			on_bulk(nd, NULL, from, h, body);
		return;
	}
	struct bjob *j = bcs_job_find(b, h->job);
	if (!j)
		j = bcs_job_new(b, h->job);
	switch (h->type) {
	case M_DESC:
		if ((size_t)h->count * sizeof(struct wdesc) > h->len)
			return;
		add_incoming(j, from, h->slice == UINT64_MAX ? j->cover[from] + 1 : h->slice, body,
			     h->len, h->count);
		note_quiet(j, from, h->slice, h->quiet != 0 && h->quiet - 1 <= BCS_QLAG_MAX,
			   (uint8_t)(h->quiet - 1));
		if (h->slice > j->cover[from])
			j->cover[from] = h->slice;
		if (h->flags > j->bar_seen[from])
			j->bar_seen[from] = h->flags;
		if (!(h->ckpt & CK_FROZEN) || (h->ckpt & CK_ACTIVE))
			j->active = true;
		if (j->frozen && h->ckpt_id == j->ckpt_id && (h->ckpt & CK_FROZEN) &&
		    j->fcover[from] == UINT64_MAX)
			j->fcover[from] = h->slice;
		if (j->frozen && h->ckpt_id == j->ckpt_id && (h->ckpt & CK_DRAINED))
			j->drained[from] = true;
		rounds(nd, j);
		bcs_barriers(j, nd->bcs->self);
		bcs_try_seal(j);
		break;
	case M_GRANT:
		if (h->flags == BCS_GRANT_RANK) {
			if ((size_t)h->count * sizeof(struct wrgrant) <= h->len)
				bcs_rank_on_grant(nd, j, (const struct wrgrant *)body, h->count);
			break;
		}
		if ((size_t)h->count * sizeof(struct wgrant) > h->len)
			return;
		on_grant(nd, j, from, h->flags, h->slice, (const struct wgrant *)body, h->count);
		break;
	case M_DATA:
		on_bulk(nd, j, from, h, body);
		break;
	case M_ABORT:
		bcs_kill_local(j, (int)h->count, "MPI_Abort on another node");
		break;
	case M_RED:
		if (h->len > BCS_RED_MAX || h->slice > UINT32_MAX)
			return;
		bcs_red_partial(nd, j, from, (uint32_t)h->slice, body, h->len);
		break;
	}
	publish_now(j);
}

/* The mailbox's handler for BCS-MPI's types. */
static void on_mailbox(struct nd *nd, uint32_t from, uint32_t type, uint64_t job, uint64_t slice,
		       const uint8_t *body, size_t len)
{
	struct bhdr bh;
	if (!nd->bcs || len < sizeof(bh))
		return;
	memcpy(&bh, body, sizeof(bh));
	struct mhdr h = {.type = type, .len = (uint32_t)(len - sizeof(bh)), .job = job,
			 .slice = slice, .count = bh.count, .flags = bh.flags, .quiet = bh.quiet,
			 .ckpt = bh.ckpt, .ckpt_id = bh.ckpt_id};
	on_message(nd, from, &h, body + sizeof(bh));
}

/* ---- the strobe */

/* Every local rank waits having seen every completion published (chan.h,
 * idle); read before collecting, so a rank that posts in between shows. */
static bool ranks_idle(struct bjob *j)
{
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
		uint32_t idle = __atomic_load_n(&a->idle, __ATOMIC_SEQ_CST);
		if (idle != BCS_IDLE_DONE && idle != a->comp_head + 1)
			return false;
	}
	return true;
}

/* Nothing of the job moves on this node: no completion since the last
 * phase, every round before this slice run, no match waiting for its
 * grants or data (or writes from rank to rank), no completion waiting for
 * ring room. A node still
 * restoring ranks is never quiet: their rings hold what they had pending,
 * not collected until they are back, and a wildcard resolved before that
 * would miss their sends. */
static bool node_quiet(struct bjob *j, uint64_t slice)
{
	if (j->moved || j->restoring || j->norders || j->nwr || j->round == UINT64_MAX ||
	    j->round + 1 + BCS_QLAG_MAX < slice)
		return false;
	for (uint32_t n = 0; n < j->nnodes_job; n++)
		if (j->gq_head[j->nodes[n]])
			return false;
	for (unsigned h = 0; h < BCS_HASH; h++)
		if (j->wait_data[h])
			return false;
	for (uint32_t lr = 0; lr < j->nlocal; lr++)
		if (j->comps[lr].n)
			return false;
	return true;
}

/* Collection, descriptor exchange, matching, transmission: a quarter of a
 * slice after the strobe, so that ranks woken by the strobe's completions
 * have posted their next descriptors by then (one slice per blocking call,
 * not two). */
static void phase(struct nd *nd)
{
	struct nd_bcs *b = nd->bcs;
	uint64_t slice = b->phase_slice;
	b->phase_at_ns = 0;
	b->phases++;
	for (struct bjob *j = b->jobs; j; j = j->next) {
		if (!j->job || !j->map)
			continue;
		bcs_orders(nd, j); /* before moved is read: a completion of theirs counts */
		bcs_rank_poll(nd, j);
		bcs_rank_close(j);
		bool idle = ranks_idle(j);
		/* frozen: the ranks' descriptors stay in their rings */
		bool quiet = !j->frozen && !collect(nd, j, slice) && idle;
		if ((!j->active && !j->frozen) || j->aborted)
			continue;
		quiet = quiet && node_quiet(j, slice);
		j->moved = false;
		uint64_t t0 = nd_wall_us(), sent0 = nd_bcs_bytes_sent(nd);
		/* rounds not run yet (other nodes' DESCs late, as under load) */
		uint8_t lag = j->round + 1 < slice ? (uint8_t)(slice - 1 - j->round) : 0;
		uint32_t ck = 0;
		if (j->frozen) {
			if (j->fcover[b->self] == UINT64_MAX)
				j->fcover[b->self] = slice;
			if (bcs_drained_here(j))
				j->drained[b->self] = true;
			ck = CK_FROZEN | (j->drained[b->self] ? CK_DRAINED : 0) |
			     (j->active ? CK_ACTIVE : 0);
		}
		exchange(nd, j, slice, quiet ? lag + 1u : 0, ck);
		b->spin_until_ns = clock_mono_ns() + BCS_SPIN_NS;
		note_quiet(j, b->self, slice, quiet, lag);
		if (slice > j->cover[b->self])
			j->cover[b->self] = slice;
		rounds(nd, j);
		grant(nd, j);
		bcs_barriers(j, b->self);
		bcs_reduces(nd, j);
		bcs_try_seal(j);
		publish_now(j);
		uint64_t sent = nd_bcs_bytes_sent(nd) - sent0;
		if (!quiet || sent) /* a quiet slice is not worth a trace event */
			nd_trace(j->job, STORM__TRACE__EVENT__KIND__BCS, t0, nd_wall_us() - t0, slice, sent);
	}
}

void nd_bcs_strobe(struct nd *nd)
{
	struct nd_bcs *b = nd->bcs;
	if (!b)
		return;
	if (b->phase_at_ns)
		phase(nd); /* the last slice's, overtaken by this strobe */
	/* grants: what the link moves in this slice (its row's length), at
	 * least 64 KiB so that a slow link or a short slice still moves data */
	b->slice_budget = b->link_mbs * (uint64_t)nd_slice_us(nd);
	if (b->slice_budget < 65536)
		b->slice_budget = 65536;
	b->mem_budget = b->mem_mbs * (uint64_t)nd_slice_us(nd);
	if (b->mem_budget < b->slice_budget)
		b->mem_budget = b->slice_budget;
	/* completion: what a full ring held back, and wake-ups */
	bool any = false;
	for (struct bjob *j = b->jobs; j; j = j->next) {
		if (!j->job || !j->map)
			continue;
		any = true;
		for (uint32_t i = 0; i < b->nnodes; i++)
			j->budget[i] = b->slice_budget;
		j->lbudget = b->mem_budget;
		j->lcounted = false;
		if (j->active && !j->sealed)
			bcs_publish(j); /* sealed: its rings are as its images keep them */
	}
	if (!any)
		return; /* no ranks here: no exchange to run this slice */
	b->phase_slice = nd->slice;
	b->phase_at_ns = clock_mono_ns() + (uint64_t)nd_slice_us(nd) * 1000u / 4;
	if (!b->phase_at_ns)
		b->phase_at_ns = 1;
}

/* Something of BCS-MPI waits on a peer: a round on its DESC, a granted
 * buffer on its data, a bulk transfer on its completion. */
static bool waits_on_peer(const struct nd_bcs *b)
{
	if (b->nbusy || b->bq_head)
		return true;
	for (unsigned k = 0; k < GM_BCS_BULK_EVS; k++)
		if (b->inflight[k])
			return true;
	for (const struct bjob *j = b->jobs; j; j = j->next)
		if (j->job && j->map && j->round < j->cover[b->self])
			return true;
	return false;
}

int64_t nd_bcs_timer_us(const struct nd *nd)
{
	const struct nd_bcs *b = nd->bcs;
	if (!b)
		return -1;
	uint64_t now = clock_mono_ns();
	/* A provider without a wait descriptor (sockets) is polled every
	 * millisecond: a hop of the data path would cost that much, so while
	 * the path waits on a peer, for at most BCS_SPIN_NS after the last
	 * thing it sent, the loop wakes every BCS_NAP_NS (early_poll), or at
	 * once while completions stream in. */
	int64_t nap = -1;
	if (b->early_poll && now < b->spin_until_ns && waits_on_peer(b))
		nap = nd->fabric_busy ? 0 : BCS_NAP_NS / 1000;
	/* ranks copy what was granted: their orders are looked at this often
	 * (a rank has no way to wake the loop) */
	int64_t look = now - b->order_at_ns < BCS_ORDER_FAST_NS ? BCS_ORDER_POLL_NS / 1000 : 1000;
	if ((b->norders || b->nwr) && (nap < 0 || nap > look))
		nap = look;
	if (!b->phase_at_ns)
		return nap;
	int64_t phase = b->phase_at_ns <= now ? 0 : (int64_t)((b->phase_at_ns - now + 999) / 1000);
	return nap >= 0 && nap < phase ? nap : phase;
}

void nd_bcs_timers(struct nd *nd)
{
	struct nd_bcs *b = nd->bcs;
	if (b && (b->norders || b->nwr))
		for (struct bjob *j = b->jobs; j; j = j->next)
			if (j->norders || j->nwr) {
				bcs_orders(nd, j);
				if (bcs_rank_poll(nd, j))
					grant(nd, j);
				bcs_rank_close(j);
				bcs_try_seal(j);
				publish_now(j);
			}
	if (b && b->phase_at_ns && clock_mono_ns() >= b->phase_at_ns)
		phase(nd);
}

/* A rank's slots of the rank-to-rank path, one letter a slot (free,
 * posted, taken, done, refused, daemon's), and what it last said. */
static void dump_rank_writes(const struct bjob *j, uint32_t lr)
{
	static const char st[] = "-PTDRd";
	const struct bcs_area *a = bcs_area_of((struct bjob *)j, lr);
	char rx[BCS_RX_SLOTS + 1], wr[BCS_WR_SLOTS + 1];
	for (uint32_t k = 0; k < BCS_RX_SLOTS; k++) {
		uint32_t s = __atomic_load_n(&a->rx[k].state, __ATOMIC_ACQUIRE);
		rx[k] = s < sizeof(st) - 1 ? st[s] : '?';
	}
	for (uint32_t k = 0; k < BCS_WR_SLOTS; k++) {
		uint32_t s = __atomic_load_n(&a->wr[k].state, __ATOMIC_ACQUIRE);
		wr[k] = s < sizeof(st) - 1 ? st[s] : '?';
	}
	rx[BCS_RX_SLOTS] = wr[BCS_WR_SLOTS] = '\0';
	slog("      endpoint %u, waiting %u, idle %u, futex %u, orders %u; expectations %s, "
	     "write orders %s", a->ep_state, a->waiting, a->idle, a->futex, a->ep_posted, rx, wr);
}

/* SIGUSR1's part: where a job's matching stands (a wildcard receive that
 * never completes: the rounds run, the last resolution, every node's cover
 * and its last quiet reports), and each local rank's queues. */
void nd_bcs_dump(const struct nd *nd)
{
	const struct nd_bcs *b = nd->bcs;
	if (b)
		slog("  bcs: message data from other nodes, jobs ended here: %" PRIu64 " bytes "
		     "written by the sending ranks, %" PRIu64 " through this daemon; to other "
		     "nodes' ranks, %" PRIu64 " bytes its ranks left it wrote itself", b->in_rank,
		     b->in_daemon, b->out_daemon);
	for (const struct bjob *j = b ? b->jobs : NULL; j; j = j->next) {
		slog("  bcs job %" PRIu64 ": round %" PRIu64 ", resolved at %" PRIu64
		     ", %zu sends and %zu receives not in a round yet; from other nodes %" PRIu64
		     " bytes written by the sending ranks, %" PRIu64 " through this daemon",
		     j->id, j->round, j->resolved, j->ninc, j->nnewr, j->in_rank, j->in_daemon);
		for (uint32_t k = 0; k < j->nnodes_job; k++) {
			uint32_t n = j->nodes[k];
			slog("    node %u: cover %" PRIu64 ", quiet reports %016" PRIx64, n, j->cover[n],
			     j->qmask[n]);
		}
		for (uint32_t lr = 0; lr < (j->mq ? j->nlocal : 0); lr++) {
			size_t ns = 0, nr = 0;
			for (const struct bcs_msend *s = j->mq[lr].uhead; s; s = s->next)
				ns++;
			for (const struct bcs_mrecv *r = j->mq[lr].phead; r; r = r->next)
				nr++;
			const struct bcs_mrecv *r = j->mq[lr].phead;
			slog("    rank %u: %zu sends unmatched, %zu receives posted%s", j->first + lr, ns,
			     nr, r && r->src == BCS_ANY_SOURCE ? ", the first a wildcard" : "");
			if (j->map && j->rx_x)
				dump_rank_writes(j, lr);
		}
		if (j->map && j->rx_x) {
			size_t nq = 0;
			for (const struct rwrite *w = j->wq_head; w; w = w->next)
				nq++;
			size_t staged = 0;
			for (uint32_t lr = 0; lr < j->nlocal; lr++)
				for (uint32_t k = 0; k < BCS_WR_SLOTS; k++)
					staged += j->wr_w[lr][k] && j->wr_w[lr][k]->stage;
			slog("    rank writes out here: %u, %zu waiting for a slot; the daemon's own "
			     "endpoint %s, %u writes in flight, %zu staged", j->nwr, nq,
			     b->ep ? "open" : b->ep_failed ? "failed" : "not opened",
			     b->ep ? sn_ep_outstanding(b->ep) : 0, staged);
		}
	}
}

/* ---- set-up */

int nd_bcs_init(struct nd *nd)
{
	struct nd_bcs *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->nnodes = (uint32_t)nd->conf.nnodes;
	b->self = nd->index;
	b->max_msg = nd_mb_body_max(nd);
	b->bounce = malloc(BCS_BOUNCE);
	b->area = calloc(b->nnodes ? b->nnodes : 1, sizeof(*b->area));
	if (!b->bounce || !b->area) {
		free(b->bounce);
		free(b->area);
		free(b);
		return -ENOMEM;
	}
	/* generations name the one-time keys of bulk tags (gm_bulk_tag): a
	 * random start, so that a restarted daemon never repeats one */
	uint64_t gen0;
	randombytes_buf(&gen0, sizeof(gen0));
	for (uint32_t n = 0; n < b->nnodes; n++)
		for (uint32_t k = 0; k < GM_BCS_AREA_BUFS; k++)
			b->area[n][k].gen = gen0;
	/* no_gmac: a test hook, this node tags and checks with Poly1305 only */
	b->gmac = gm_bulk_gmac_ok() && !fault_value(&nd->fault, "no_gmac");
	b->buf_size = gm_bcs_area_size(b->nnodes) / GM_BCS_AREA_BUFS;
	const char *e = getenv("STORM_BCS_LINK_MBS");
	b->link_mbs = e && *e ? strtoull(e, NULL, 10) : 0;
	if (!b->link_mbs)
		b->link_mbs = BCS_LINK_MBS;
	e = getenv("STORM_BCS_MEM_MBS");
	b->mem_mbs = e && *e ? strtoull(e, NULL, 10) : 0;
	if (!b->mem_mbs)
		b->mem_mbs = BCS_MEM_MBS;
	b->slice_budget = 65536; /* until the first strobe gives the slice */
	b->mem_budget = 65536;
	/* Early polling only where the loop has nothing to sleep on: a wait
	 * descriptor (shm's doorbell included) wakes it by itself. */
	b->early_poll = sn_wait_fd(nd->sn) < 0;
	/* rank to rank between nodes (bcs_rank.c): on a network provider;
	 * between virtual nodes over shm the daemons' path stays */
	b->rank_writes = nd->conf.bcs_rank_writes && strncmp(nd->conf.provider, "shm", 3);
	nd->bcs = b;
	for (uint32_t t = M_DESC; t <= M_RED; t++)
		nd_mb_register(nd, t, on_mailbox);
	return 0;
}

uint64_t nd_bcs_bytes_sent(const struct nd *nd)
{
	uint64_t n = 0;
	for (uint32_t t = M_DESC; t <= M_RED; t++)
		n += nd->mb_sent_bytes[t];
	return n;
}

/* The channel's header, as the ranks read it at MPI_Init. Test hooks
 * bcs_copy_refuse=J (may name several jobs): job J's ranks refuse every
 * copy order, as a kernel whose ptrace policy forbids them would;
 * bcs_copy_stop=J: a rank of job J stops itself between taking its first
 * order and copying, as a checkpoint may find it. */
static void chan_header(struct nd *nd, const struct bjob *j, const struct nd_job *job,
			struct bcs_chan_hdr *h)
{
	uint32_t flags = (fault_is(&nd->fault, "bcs_copy_refuse", job->id)
				  ? BCS_CHAN_REFUSE_COPY : 0) |
			 (fault_value(&nd->fault, "bcs_copy_stop") == job->id
				  ? BCS_CHAN_STOP_IN_COPY : 0);
	*h = (struct bcs_chan_hdr){.magic = BCS_CHAN_MAGIC, .version = BCS_CHAN_VERSION,
				   .nlocal = j->nlocal, .area_size = (uint32_t)BCS_AREA_SIZE,
				   .job = job->id, .world = j->world, .first_rank = j->first,
				   .flags = flags};
	if (nd->bcs->rank_writes) {
		snprintf(h->rank_prov, sizeof(h->rank_prov), "%s", nd->conf.provider);
		h->rank_pool = BCS_RANK_POOL;
		if (sn_local_host(nd->sn, h->rank_src, sizeof(h->rank_src)))
			h->rank_src[0] = '\0';
	}
}

int nd_bcs_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k)
{
	struct nd_bcs *b = nd->bcs;
	const Storm__Cl__Launch *L = cmd->launch;
	if (!b)
		return -1;
	struct bjob *j = bcs_job_find(b, job->id);
	if (!j)
		j = bcs_job_new(b, job->id);
	j->job = job;
	j->restoring = L->restore;
	j->nlocal = job->nranks;
	j->first = L->first_rank[k];
	j->world = L->ranks;
	j->nnodes_job = (uint32_t)cmd->n_nodes;
	j->nodes = calloc(cmd->n_nodes, sizeof(uint32_t));
	j->nfirst = calloc(cmd->n_nodes, sizeof(uint32_t));
	j->ncount = calloc(cmd->n_nodes, sizeof(uint32_t));
	j->mq = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->mq));
	j->probes = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->probes));
	j->sseq = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint32_t));
	j->rseq = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint32_t));
	j->comps = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->comps));
	j->bar_posted = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint32_t));
	j->bar_req = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint32_t));
	j->red_posted = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint32_t));
	j->red_req = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint32_t));
	j->red_addr = calloc(j->nlocal ? j->nlocal : 1, sizeof(uint64_t));
	j->red_val = calloc(j->nlocal ? j->nlocal : 1, BCS_RED_MAX);
	j->red_part = calloc(cmd->n_nodes ? cmd->n_nodes * 2 : 2, BCS_RED_MAX);
	j->red_part_seq = calloc(cmd->n_nodes ? cmd->n_nodes * 2 : 2, sizeof(uint32_t));
	j->red_part_len = calloc(cmd->n_nodes ? cmd->n_nodes * 2 : 2, sizeof(uint32_t));
	if (!j->nodes || !j->nfirst || !j->ncount || !j->mq || !j->probes || !j->sseq ||
	    !j->rseq || !j->comps || !j->bar_posted || !j->bar_req || !j->red_posted ||
	    !j->red_req || !j->red_addr || !j->red_val || !j->red_part || !j->red_part_seq ||
	    !j->red_part_len)
		abort();
	/* nodes without ranks of the job take no part (they never cover) */
	j->nnodes_job = 0;
	for (size_t i = 0; i < cmd->n_nodes; i++) {
		if (!L->rank_count[i] || cmd->nodes[i] >= b->nnodes)
			continue;
		j->nodes[j->nnodes_job] = cmd->nodes[i];
		j->nfirst[j->nnodes_job] = L->first_rank[i];
		j->ncount[j->nnodes_job++] = L->rank_count[i];
	}
	bcs_red_take_early(j);
	/* dropped sends to ranks not here that arrived before the launch */
	size_t n = 0;
	for (size_t i = 0; i < j->ninc; i++)
		if ((uint32_t)j->inc[i]->dst >= j->first &&
		    (uint32_t)j->inc[i]->dst < j->first + j->nlocal)
			j->inc[n++] = j->inc[i];
		else
			free(j->inc[i]);
	j->ninc = n;
	j->maplen = bcs_chan_size(j->nlocal);
	j->memfd = memfd_create("storm-bcs", MFD_CLOEXEC);
	if (j->memfd < 0 || ftruncate(j->memfd, (off_t)j->maplen) < 0) {
		slog("job %" PRIu64 ": no BCS-MPI channel: memfd: %s", job->id,
		       strerror(errno));
		return -1;
	}
	j->map = mmap(NULL, j->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, j->memfd, 0);
	if (j->map == MAP_FAILED) {
		j->map = NULL;
		slog("job %" PRIu64 ": no BCS-MPI channel: mmap: %s", job->id,
		       strerror(errno));
		return -1;
	}
	struct bcs_chan_hdr h;
	chan_header(nd, j, job, &h);
	/* storm replay --from: the restored ranks replay from the checkpoint's
	 * mark the trace the MM sent into this node's job directory (its name
	 * is one of the launch's files: nd_launch_problem) */
	if (L->restore && L->spec->replay_trace[0]) {
		h.replay_ckpt = L->spec->restore_checkpoint;
		/* a path too long for the channel: none, which the ranks
		 * cannot open and say so, rather than replay something else */
		if ((size_t)snprintf(h.replay_trace, sizeof(h.replay_trace), "%s/%s", job->dir,
				     L->spec->replay_trace) >= sizeof(h.replay_trace))
			h.replay_trace[0] = '\0';
	}
	memcpy(j->map, &h, sizeof(h));
	rounds(nd, j);
	return j->memfd;
}

static void bjob_free(struct bjob *j)
{
	free(j->tr_last);
	free(j->tr_kind);
	for (size_t i = 0; i < j->ninc; i++)
		free(j->inc[i]);
	for (size_t i = 0; i < j->nnewr; i++)
		free(j->newr[i]);
	for (uint32_t lr = 0; j->mq && lr < j->nlocal; lr++) {
		for (struct bcs_msend *s = j->mq[lr].uhead, *n; s; s = n) {
			n = s->next;
			free(s);
		}
		for (struct bcs_mrecv *r = j->mq[lr].phead, *n; r; r = n) {
			n = r->next;
			free(r);
		}
		for (struct bcs_mrecv *r = j->probes[lr], *n; r; r = n) {
			n = r->next;
			free(r);
		}
		free(j->comps[lr].v);
	}
	for (struct pcancel *k = j->cancels, *n; k; k = n) {
		n = k->next;
		free(k);
	}
	for (unsigned h = 0; j->osends && h < BCS_HASH; h++)
		for (struct osend *o = j->osends[h], *n; o; o = n) {
			n = o->next;
			free(o);
		}
	free(j->osends);
	for (unsigned h = 0; j->wait_data && h < BCS_HASH; h++)
		for (struct xfer *x = j->wait_data[h], *n; x; x = n) {
			n = x->next;
			bcs_xfer_free(x);
		}
	free(j->wait_data);
	free(j->inc);
	free(j->newr);
	free(j->newr_lr);
	free(j->mq);
	free(j->probes);
	free(j->sseq);
	free(j->rseq);
	free(j->comps);
	free(j->nodes);
	free(j->nfirst);
	free(j->ncount);
	free(j->cover);
	free(j->qmask);
	free(j->qlag);
	free(j->budget);
	free(j->bar_seen);
	free(j->bar_posted);
	free(j->bar_req);
	free(j->red_posted);
	free(j->red_req);
	free(j->red_addr);
	free(j->red_val);
	bcs_red_free_early(j);
	free(j->red_part);
	free(j->red_part_seq);
	free(j->red_part_len);
	free(j->nbatch);
	free(j->capbatch);
	bcs_free_pend(j);
	free(j->fcover);
	free(j->drained);
	free(j->alone);
	if (j->map)
		munmap(j->map, j->maplen);
	if (j->memfd >= 0)
		close(j->memfd);
	free(j);
}

static void bjob_free_queues(struct nd_bcs *b, struct bjob *j)
{
	bcs_orders_free(b, j);
	bcs_rank_free(b, j);
	for (uint32_t i = 0; i < b->nnodes; i++) {
		for (struct xfer *x = j->gq_head[i], *n; x; x = n) {
			n = x->next;
			bcs_xfer_free(x);
		}
		free(j->batch[i]);
	}
	free(j->gq_head);
	free(j->gq_tail);
	free(j->batch);
	j->gq_head = j->gq_tail = NULL;
	j->batch = NULL;
}

void nd_bcs_job_end(struct nd *nd, struct nd_job *job)
{
	struct nd_bcs *b = nd->bcs;
	if (!b)
		return;
	struct bjob **pp = &b->jobs;
	while (*pp && (*pp)->id != job->id)
		pp = &(*pp)->next;
	struct bjob *j = *pp;
	if (!j)
		return;
	if (j->map && !j->aborted)
		collect(nd, j, nd->slice); /* an MPI_Abort just before the exit */
	if (j->active) {
		/* nothing more from this node: the others' rounds go on without it */
		for (uint32_t k = 0; k < j->nnodes_job; k++)
			if (j->nodes[k] != b->self)
				bcs_send_flags(nd, j->nodes[k], M_DESC, j->id, UINT64_MAX, 0, UINT32_MAX,
					       NULL, 0);
	}
	if (j->copied_rank || j->copied_daemon)
		slog("job %" PRIu64 ": messages between this node's ranks: %" PRIu64 " bytes copied "
		     "by the ranks, %" PRIu64 " by this daemon (%" PRIu64 " of the ranks' by the "
		     "sender), granted in %" PRIu64 " slice(s)", j->id, j->copied_rank,
		     j->copied_daemon, j->copied_sender, j->lslices);
	if (j->in_rank || j->in_daemon)
		slog("job %" PRIu64 ": message data from other nodes: %" PRIu64 " bytes written by "
		     "the sending ranks, %" PRIu64 " through this daemon", j->id, j->in_rank,
		     j->in_daemon);
	*pp = j->next;
	b->dead[b->ndead++ % BCS_DEAD_JOBS] = j->id;
	bjob_free_queues(b, j);
	bjob_free(j);
}

void nd_bcs_close(struct nd *nd)
{
	struct nd_bcs *b = nd->bcs;
	if (!b)
		return;
	while (b->jobs) {
		struct bjob *j = b->jobs;
		b->jobs = j->next;
		bjob_free_queues(b, j);
		bjob_free(j);
	}
	for (unsigned k = 0; k < GM_BCS_BULK_EVS; k++)
		if (b->inflight[k]) {
			free(b->inflight[k]->data);
			free(b->inflight[k]->rec);
			free(b->inflight[k]);
		}
	for (struct bulk *q = b->bq_head, *n; q; q = n) {
		n = q->next;
		free(q->data);
		free(q->rec);
		free(q);
	}
	while (b->nspare)
		free(b->spare[--b->nspare]);
	sn_ep_close(b->ep); /* writes still under way are lost with the daemon */
	free(b->area);
	free(b->bounce);
	free(b);
	nd->bcs = NULL;
}

int nd_bcs_fd(struct nd *nd, struct nd_job *job)
{
	struct bjob *j = nd->bcs ? bcs_job_find(nd->bcs, job->id) : NULL;
	return j ? j->memfd : -1;
}
