/* BCS-MPI in the node daemon: the work the BCS-MPI paper puts on NIC threads,
 * here its micro-phases (the collectives are bcs_coll.c's, a checkpoint's
 * drain bcs_drain.c's, a job's bookkeeping and sending bcs_job.c's).
 *
 * Ranks post descriptors into a memfd shared with this daemon
 * (bcs_mpi/abi/chan.h). At every strobe, for each job that uses MPI here:
 *   1. completion: completions gathered during the last slice go into the
 *      ranks' completion rings and blocked ranks are woken (futex);
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
 *   5. transmission: per source node and slice at most BCS_BUDGET bytes are
 *      granted (GRANT to the sender's node); the sender reads the bytes from
 *      its rank (process_vm_readv) and puts them into the receiver node's
 *      mailbox (DATA); the receiver writes them into the receiving rank
 *      (process_vm_writev). A message larger than the budget takes several
 *      slices. Within a node the daemon copies from one rank to the other.
 * Node to node everything travels through the mailboxes of common/layout.h
 * (XFER-AND-SIGNAL), never a same-host shortcut. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
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
#include "nd.h"
#include "bcs_int.h"
#include "trace.pb-c.h"

/* ---- data movement */
/* Grants (and within the node, copies) up to the slice's budget per source. */
static void grant(struct nd *nd, struct bjob *j)
{
	struct nd_bcs *b = nd->bcs;
	size_t maxg = (b->max_msg - sizeof(struct bhdr)) / sizeof(struct wgrant);
	struct wgrant *g = malloc(maxg * sizeof(*g));
	if (!g)
		abort();
	for (uint32_t node = 0; node < b->nnodes; node++) {
		size_t ng = 0;
		while (j->gq_head[node]) {
			struct xfer *x = j->gq_head[node];
			uint64_t chunk = x->total - x->granted;
			if (chunk > j->budget[node])
				chunk = j->budget[node];
			if (chunk == 0 && x->total != 0)
				break; /* budget spent: the rest next slice */
			j->budget[node] -= chunk;
			uint64_t off = x->granted;
			x->granted += chunk;
			bool last = x->granted == x->total;
			if (node == b->self) {
				/* both ranks here: the daemon copies, through its bounce buffer */
				uint32_t slr = (uint32_t)x->s->src - j->first;
				struct osend *o = bcs_osend_take(j, slr, x->s->sreq, false);
				int err = o ? 0 : BCS_EFAULT;
				for (uint64_t d = 0; !err && d < chunk;) {
					size_t n = chunk - d > b->max_msg ? b->max_msg : chunk - d;
					if (bcs_copy_from(bcs_pid_of(j, slr), o->d.addr + off + d, b->bounce, n) < 0 ||
					    bcs_copy_to(bcs_pid_of(j, x->lr), x->r->addr + off + d, b->bounce, n) < 0)
						err = BCS_EFAULT;
					d += n;
				}
				x->done += chunk;
				if (err) {
					/* a rank gone: finish the pair now, never grant it again */
					x->granted = x->total;
					last = true;
				}
				if (last) {
					if (o) {
						bcs_osend_take(j, slr, x->s->sreq, true);
						bcs_complete(j, slr, o->d.req, x->s->dst, x->s->tag, 0, o->d.len);
						free(o);
					}
					bcs_recv_done(j, x, err);
				}
			} else {
				g[ng++] = (struct wgrant){.src = x->s->src, .dst = x->s->dst,
							  .sreq = x->s->sreq, .rreq = x->r->req,
							  .off = off, .len = chunk, .last = last};
				if (ng == maxg) {
					bcs_send(nd, node, M_GRANT, j->id, 0, (uint32_t)ng, g,
						 ng * sizeof(*g), NULL, 0);
					ng = 0;
				}
			}
			if (!last)
				break;
			j->gq_head[node] = x->next;
			if (!x->next)
				j->gq_tail[node] = NULL;
			if (node == b->self) {
				bcs_xfer_free(x);
			} else if (x->total == 0) {
				bcs_recv_done(j, x, 0);
				bcs_xfer_free(x);
			} else {
				unsigned h = hkey((uint32_t)x->s->dst, x->r->req);
				x->next = j->wait_data[h];
				j->wait_data[h] = x;
			}
		}
		if (ng)
			bcs_send(nd, node, M_GRANT, j->id, 0, (uint32_t)ng, g, ng * sizeof(*g), NULL, 0);
	}
	free(g);
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
static void resolve(struct bjob *j)
{
	uint64_t c = j->round;
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
	while (si < n || (ri < j->nnewr && j->newr[ri]->label <= t)) {
		uint64_t ls = si < n ? j->inc[si]->label : UINT64_MAX;
		uint64_t lr_ = ri < j->nnewr && j->newr[ri]->label <= t ? j->newr[ri]->label
									  : UINT64_MAX;
		uint64_t label = ls < lr_ ? ls : lr_;
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
	}
	memmove(j->inc, j->inc + n, (j->ninc - n) * sizeof(*j->inc));
	j->ninc -= n;
	memmove(j->newr, j->newr + ri, (j->nnewr - ri) * sizeof(*j->newr));
	memmove(j->newr_lr, j->newr_lr + ri, (j->nnewr - ri) * sizeof(*j->newr_lr));
	j->nnewr -= ri;
	j->round = t;
	resolve(j);
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

/* Collection micro-phase: the ranks' new descriptors. Returns whether any
 * but an iprobe came (an iprobe loop counts as polling, not as moving). */
static bool collect(struct nd *nd, struct bjob *j, uint64_t slice)
{
	struct nd_bcs *b = nd->bcs;
	bool any = false;
	if (j->restoring)
		return false; /* its rings hold what the ranks had pending: not before they are back */
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
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
				struct osend *o = malloc(sizeof(*o));
				if (!o)
					abort();
				unsigned h = hkey(lr, d.req);
				*o = (struct osend){.lr = lr, .seq = j->sseq[lr], .d = d,
						    .next = j->osends[h]};
				j->osends[h] = o;
				struct wdesc w = {.src = me, .dst = d.peer, .tag = d.tag, .ctx = d.ctx,
						  .seq = j->sseq[lr]++, .sreq = d.req,
						  .flags = d.flags, .len = d.len};
				j->batch[node] = bcs_grow(j->batch[node], &j->capbatch[node],
							  j->nbatch[node] + 1, sizeof(w));
				j->batch[node][j->nbatch[node]++] = w;
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
			case BCS_OP_CANCEL: {
				struct bcs_mrecv *r = bcs_mq_cancel(&j->mq[lr], d.req);
				for (size_t i = 0; !r && i < j->nnewr; i++)
					if (j->newr_lr[i] == lr && j->newr[i]->req == d.req &&
					    j->newr[i]->op == BCS_OP_RECV) {
						r = j->newr[i];
						memmove(j->newr + i, j->newr + i + 1,
							(j->nnewr - i - 1) * sizeof(*j->newr));
						memmove(j->newr_lr + i, j->newr_lr + i + 1,
							(j->nnewr - i - 1) * sizeof(*j->newr_lr));
						j->nnewr--;
					}
				if (r) {
					bcs_complete(j, lr, r->req, BCS_ANY_SOURCE, BCS_ANY_TAG,
						     BCS_ECANCELLED, 0);
					free(r);
				}
				break;
			}
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

static void add_incoming(struct nd_bcs *b, struct bjob *j, uint32_t from, uint64_t label,
			 const struct wdesc *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (w[i].dst < 0 || (uint32_t)w[i].dst < j->first ||
		    (j->job && (uint32_t)w[i].dst >= j->first + j->nlocal))
			continue;
		struct bcs_msend *s = calloc(1, sizeof(*s));
		if (!s)
			abort();
		*s = (struct bcs_msend){.label = label, .src = w[i].src, .dst = w[i].dst,
					.tag = w[i].tag, .ctx = w[i].ctx, .seq = w[i].seq,
					.sreq = w[i].sreq, .src_node = from, .flags = w[i].flags,
					.len = w[i].len};
		j->inc = bcs_grow(j->inc, &j->capinc, j->ninc + 1, sizeof(*j->inc));
		j->inc[j->ninc++] = s;
	}
	(void)b;
}

/* Descriptor exchange: this slice's sends to every other node of the job. */
static void exchange(struct nd *nd, struct bjob *j, uint64_t cover, uint32_t quiet,
		     uint32_t ckpt)
{
	struct nd_bcs *b = nd->bcs;
	size_t per = (b->max_msg - sizeof(struct bhdr)) / sizeof(struct wdesc);
	for (uint32_t k = 0; k < j->nnodes_job; k++) {
		uint32_t node = j->nodes[k];
		struct wdesc *w = j->batch[node];
		size_t n = j->nbatch[node];
		if (node == b->self) {
			add_incoming(b, j, node, cover, w, n);
		} else {
			size_t off = 0;
			do {
				size_t c = n - off > per ? per : n - off;
				/* all but the last piece cover the slice before */
				uint64_t cv = off + c < n ? cover - 1 : cover;
				b->next_quiet = quiet;
				b->next_ckpt = ckpt;
				b->next_ckpt_id = ckpt ? j->ckpt_id : 0;
				bcs_send_flags(nd, node, M_DESC, j->id, cv, (uint32_t)c, bcs_bar_local(j),
					       w + off, c * sizeof(*w));
				off += c;
			} while (off < n);
		}
		j->nbatch[node] = 0;
	}
}

/* ---- incoming mailbox messages */

/* DATA payload per message: 16 KiB, chosen when rxm sent larger messages by
 * rendezvous (a round trip more each); sn_open now makes every message eager
 * (net_abstraction/sn.c), larger records are not measured yet */
static size_t bcs_data_max(const struct nd_bcs *b)
{
	const char *e = getenv("STORM_BCS_DATA_MAX");
	size_t want = e && *e ? (size_t)strtoul(e, NULL, 10) : 16384 - 256;
	size_t most = b->max_msg - sizeof(struct bhdr) - sizeof(struct wdata);
	return want && want < most ? want : most;
}

static void on_grant(struct nd *nd, struct bjob *j, uint32_t from, const struct wgrant *g,
		     size_t n)
{
	struct nd_bcs *b = nd->bcs;
	/* DATA messages pack records (struct wdata + bytes) up to the eager size */
	size_t room = bcs_data_max(b) + sizeof(struct wdata), used = 0;
	uint32_t records = 0;
	for (size_t i = 0; i < n; i++) {
		if (g[i].src < 0 || (uint32_t)g[i].src < j->first ||
		    (uint32_t)g[i].src >= j->first + j->nlocal)
			continue;
		uint32_t lr = (uint32_t)g[i].src - j->first;
		struct osend *o = bcs_osend_take(j, lr, g[i].sreq, false);
		if (!o)
			continue;
		for (uint64_t d = 0; d < g[i].len;) {
			if (used + sizeof(struct wdata) + 64 > room) {
				bcs_send(nd, from, M_DATA, j->id, 0, records, b->bounce, used, NULL, 0);
				used = records = 0;
			}
			size_t c = room - used - sizeof(struct wdata);
			if (c > g[i].len - d)
				c = g[i].len - d;
			struct wdata w = {.dst = g[i].dst, .rreq = g[i].rreq, .off = g[i].off + d,
					  .len = c};
			memcpy(b->bounce + used, &w, sizeof(w));
			uint8_t *at = b->bounce + used + sizeof(w);
			if (g[i].off + d + c > o->d.len ||
			    bcs_copy_from(bcs_pid_of(j, lr), o->d.addr + g[i].off + d, at, c) < 0)
				memset(at, 0, c); /* the rank is gone: the job dies anyway */
			used += sizeof(w) + c;
			records++;
			d += c;
		}
		if (g[i].last) {
			bcs_osend_take(j, lr, g[i].sreq, true);
			bcs_complete(j, lr, o->d.req, g[i].dst, 0, 0, o->d.len);
			free(o);
		}
	}
	if (records)
		bcs_send(nd, from, M_DATA, j->id, 0, records, b->bounce, used, NULL, 0);
}

static void on_data(struct bjob *j, uint32_t from, const struct wdata *w, const uint8_t *payload)
{
	/* the head of the source's grant queue may be partly granted */
	struct xfer *h = j->gq_head ? j->gq_head[from] : NULL;
	if (h && h->s->dst == w->dst && h->r->req == w->rreq && w->off + w->len <= h->granted) {
		if (bcs_copy_to(bcs_pid_of(j, h->lr), h->r->addr + w->off, payload, w->len) == 0)
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
		int err = bcs_copy_to(bcs_pid_of(j, x->lr), x->r->addr + w->off, payload, w->len);
		x->done += w->len;
		if (x->done >= x->total || err) {
			bcs_recv_done(j, x, err ? BCS_EFAULT : 0);
			*pp = x->next;
			bcs_xfer_free(x);
		}
		return;
	}
}

static void on_message(struct nd *nd, uint32_t from, const struct mhdr *h, const uint8_t *body)
{
	struct nd_bcs *b = nd->bcs;
	if (bcs_job_dead(b, h->job))
		return;
	struct bjob *j = bcs_job_find(b, h->job);
	if (!j)
		j = bcs_job_new(b, h->job);
	switch (h->type) {
	case M_DESC:
		if ((size_t)h->count * sizeof(struct wdesc) > h->len)
			return;
		add_incoming(b, j, from, h->slice == UINT64_MAX ? j->cover[from] + 1 : h->slice,
			     (const struct wdesc *)body, h->count);
		{
			bool q = h->quiet != 0 && h->quiet - 1 <= BCS_QLAG_MAX;
			j->qmask[from] = bcs_quiet_push(j->cover[from], j->qmask[from], h->slice, q);
			if (q && h->slice != UINT64_MAX && h->slice >= j->cover[from])
				j->qlag[from][h->slice % 64] = (uint8_t)(h->quiet - 1);
		}
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
		if ((size_t)h->count * sizeof(struct wgrant) > h->len)
			return;
		on_grant(nd, j, from, (const struct wgrant *)body, h->count);
		break;
	case M_DATA: {
		size_t off = 0;
		for (uint32_t k = 0; k < h->count; k++) {
			struct wdata w;
			if (h->len - off < sizeof(w))
				return;
			memcpy(&w, body + off, sizeof(w));
			off += sizeof(w);
			if (w.len > h->len - off)
				return;
			on_data(j, from, &w, body + off);
			off += w.len;
		}
		break;
	}
	case M_ABORT:
		bcs_kill_local(j, (int)h->count, "MPI_Abort on another node");
		break;
	case M_RED:
		if (h->len > BCS_RED_MAX || h->slice > UINT32_MAX)
			return;
		bcs_red_partial(nd, j, from, (uint32_t)h->slice, body, h->len);
		break;
	}
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
 * grants or data, no completion waiting for ring room. */
static bool node_quiet(struct bjob *j, uint64_t slice)
{
	if (j->moved || j->round == UINT64_MAX || j->round + 1 + BCS_QLAG_MAX < slice)
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
	for (struct bjob *j = b->jobs; j; j = j->next) {
		if (!j->job || !j->map)
			continue;
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
		j->qmask[b->self] = bcs_quiet_push(j->cover[b->self], j->qmask[b->self], slice, quiet);
		if (quiet)
			j->qlag[b->self][slice % 64] = lag;
		if (slice > j->cover[b->self])
			j->cover[b->self] = slice;
		rounds(nd, j);
		grant(nd, j);
		bcs_barriers(j, b->self);
		bcs_reduces(nd, j);
		bcs_try_seal(j);
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
	/* completion: what finished in the last slice, and wake-ups */
	bool any = false;
	for (struct bjob *j = b->jobs; j; j = j->next) {
		if (!j->job || !j->map)
			continue;
		any = true;
		for (uint32_t i = 0; i < b->nnodes; i++)
			j->budget[i] = BCS_BUDGET;
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

int nd_bcs_timer_ms(const struct nd *nd)
{
	const struct nd_bcs *b = nd->bcs;
	if (!b || !b->phase_at_ns)
		return -1;
	uint64_t now = clock_mono_ns();
	return b->phase_at_ns <= now ? 0 : (int)((b->phase_at_ns - now + 999999) / 1000000);
}

void nd_bcs_timers(struct nd *nd)
{
	struct nd_bcs *b = nd->bcs;
	if (b && b->phase_at_ns && clock_mono_ns() >= b->phase_at_ns)
		phase(nd);
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
	b->bounce = malloc(b->max_msg);
	if (!b->bounce) {
		free(b);
		return -ENOMEM;
	}
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
	struct bcs_chan_hdr h = {.magic = BCS_CHAN_MAGIC, .version = BCS_CHAN_VERSION,
				 .nlocal = j->nlocal, .area_size = (uint32_t)BCS_AREA_SIZE,
				 .job = job->id, .world = j->world, .first_rank = j->first};
	memcpy(j->map, &h, sizeof(h));
	rounds(nd, j);
	return j->memfd;
}

static void bjob_free(struct bjob *j)
{
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
	if (j->map)
		munmap(j->map, j->maplen);
	if (j->memfd >= 0)
		close(j->memfd);
	free(j);
}

static void bjob_free_queues(struct nd_bcs *b, struct bjob *j)
{
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
	free(b->bounce);
	free(b);
	nd->bcs = NULL;
}

int nd_bcs_fd(struct nd *nd, struct nd_job *job)
{
	struct bjob *j = nd->bcs ? bcs_job_find(nd->bcs, job->id) : NULL;
	return j ? j->memfd : -1;
}
