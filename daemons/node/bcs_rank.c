/* BCS-MPI in the node daemon: message data between nodes from rank to rank
 * (storm.conf bcs_rank_writes). The schedule is the daemons' as for any
 * message: matching, grants per source node and slice within the link's
 * budget. At its grant a piece whose receiving rank waits in MPI and has
 * its endpoint open goes the ranks' way: the receiving node posts an
 * expectation in that rank's area (chan.h, struct bcs_rx: slot k of its
 * pool, the immediate data to wait for, where the bytes go) and sends the
 * sending node a GRANT_RANK record naming the rank's blob, the slot and
 * the immediate data; the sending node turns it into a write order in the
 * sending rank's area (struct bcs_wr), which the rank writes from its own
 * endpoint. The receiving rank copies the piece out of its pool once the
 * write's immediate data arrived, and says DONE: that, not a DATA, is
 * what completes the receive here; the send completes when its rank's
 * last write ended. Any other piece goes through the daemons (bcs.c,
 * grant): a receiver computing at the grant (a write is placed only while
 * its endpoint is driven), a rank without an endpoint, no free slot, a
 * job a checkpoint drains. A write order its sending rank leaves (it
 * computes outside MPI past a phase, has no endpoint, is drained, or its
 * write failed) the sending node's daemon takes back and writes itself,
 * from its own endpoint (the same sn_ep) after reading the piece out of
 * the rank. docs/design/bcs-mpi.md, "Across nodes from rank to rank". */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chan.h"
#include "layout.h"
#include "nd.h"
#include "bcs_int.h"

static void wake(struct bcs_area *a)
{
	__atomic_fetch_add(&a->ep_posted, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&a->futex, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &a->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void allocated(struct bjob *j)
{
	if (j->rx_x)
		return;
	uint32_t n = j->nlocal ? j->nlocal : 1;
	j->rx_x = calloc(n, sizeof(*j->rx_x));
	j->wr_w = calloc(n, sizeof(*j->wr_w));
	if (!j->rx_x || !j->wr_w)
		abort();
}

/* At the receiving node, in grant: 1, the next piece of x from node goes
 * the ranks' way, its record in *out; 0: the daemons' way; -1: the ranks'
 * way but not now (every slot of the receiver's pool in use, or the
 * budget spent): the next free slot grants it. */
int bcs_rank_piece(struct nd *nd, struct bjob *j, uint32_t node, struct xfer *x,
		    struct wrgrant *out)
{
	struct nd_bcs *b = nd->bcs;
	if (!b->rank_writes || j->frozen || !j->map || (j->job && j->job->stopped) ||
	    x->total < BCS_RANK_MIN)
		return 0;
	struct bcs_area *a = bcs_area_of(j, x->lr);
	if (__atomic_load_n(&a->ep_state, __ATOMIC_ACQUIRE) != BCS_EP_OPEN ||
	    a->ep_pool < BCS_RX_SLOTS * 65536ull || a->ep_blen > BCS_EP_BLOB ||
	    !bcs_rank_waits(j, x->lr))
		return 0;
	allocated(j);
	uint64_t slot = a->ep_pool / BCS_RX_SLOTS;
	uint64_t chunk = x->total - x->granted;
	if (chunk > j->budget[node])
		chunk = j->budget[node];
	if (chunk > slot)
		chunk = slot;
	if (!chunk)
		return -1;
	for (uint32_t k = 0; k < BCS_RX_SLOTS; k++) {
		struct bcs_rx *r = &a->rx[k];
		if (j->rx_x[x->lr][k] || __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != BCS_COPY_FREE)
			continue;
		uint64_t off = x->granted;
		/* 32 bits (SN_EP_IMM_MAX): a generation of 24, the slot */
		r->imm = ((++j->rx_gen & 0xffffffu) << 8) | k;
		r->dst = x->r->addr + off;
		r->len = chunk;
		r->err = 0;
		__atomic_store_n(&r->state, BCS_COPY_POSTED, __ATOMIC_RELEASE);
		wake(a);
		j->rx_x[x->lr][k] = x;
		x->nrx++;
		j->nwr++;
		b->nwr++;
		b->order_at_ns = clock_mono_ns();
		j->budget[node] -= chunk;
		x->granted += chunk;
		*out = (struct wrgrant){.g = {.src = x->s->src, .dst = x->s->dst, .sreq = x->s->sreq,
					      .rreq = x->r->req, .off = off, .len = chunk,
					      .last = x->granted == x->total},
					.poff = k * slot, .imm = r->imm, .blen = a->ep_blen};
		memcpy(out->blob, a->ep_blob, a->ep_blen);
		return 1;
	}
	return -1;
}

/* At the sending node: write orders for queued pieces, as slots free. */
static void post_writes(struct nd *nd, struct bjob *j)
{
	struct rwrite **pp = &j->wq_head, *last = NULL;
	while (*pp) {
		struct rwrite *w = *pp;
		struct bcs_area *a = bcs_area_of(j, w->lr);
		uint32_t k = 0;
		for (; k < BCS_WR_SLOTS; k++)
			if (!j->wr_w[w->lr][k] &&
			    __atomic_load_n(&a->wr[k].state, __ATOMIC_ACQUIRE) == BCS_COPY_FREE)
				break;
		if (k == BCS_WR_SLOTS) {
			last = w;
			pp = &w->next;
			continue;
		}
		struct osend *o = bcs_osend_take(j, w->lr, w->sreq, false);
		if (!o) { /* gone with its rank */
			*pp = w->next;
			free(w);
			j->nwr--;
			nd->bcs->nwr--;
			continue;
		}
		struct bcs_wr *c = &a->wr[k];
		c->src = o->d.addr + w->w.g.off;
		c->len = w->w.g.len;
		c->off = w->w.poff;
		c->imm = w->w.imm;
		c->blen = w->w.blen;
		memcpy(c->blob, w->w.blob, w->w.blen);
		c->err = 0;
		__atomic_store_n(&c->state, BCS_COPY_POSTED, __ATOMIC_RELEASE);
		wake(a);
		j->wr_w[w->lr][k] = w;
		w->phase = nd->bcs->phases;
		w->j = j;
		w->k = k;
		nd->bcs->order_at_ns = clock_mono_ns();
		*pp = w->next;
	}
	j->wq_tail = last;
}

/* At the sending node: GRANT_RANK's records. A piece of a send that is
 * gone (the rank died, the job ends) is dropped: the job ends anyway. */
void bcs_rank_on_grant(struct nd *nd, struct bjob *j, const struct wrgrant *r, size_t n)
{
	if (!j || !j->map)
		return;
	allocated(j);
	for (size_t i = 0; i < n; i++) {
		const struct wgrant *g = &r[i].g;
		if (g->src < 0 || (uint32_t)g->src < j->first ||
		    (uint32_t)g->src >= j->first + j->nlocal || r[i].blen > BCS_EP_BLOB)
			continue;
		uint32_t lr = (uint32_t)g->src - j->first;
		struct osend *o = bcs_osend_take(j, lr, g->sreq, false);
		if (!o || g->off > o->d.len || g->len > o->d.len - g->off)
			continue;
		struct rwrite *w = calloc(1, sizeof(*w));
		if (!w)
			abort();
		*w = (struct rwrite){.lr = lr, .sreq = g->sreq, .w = r[i]};
		o->nwr++;
		if (g->last) {
			o->wr_last = true;
			o->end = g->off + g->len;
		}
		j->nwr++;
		nd->bcs->nwr++;
		if (j->wq_tail)
			j->wq_tail->next = w;
		else
			j->wq_head = w;
		j->wq_tail = w;
	}
	post_writes(nd, j);
}

/* At the sending node: len more bytes of send o moved (read by the
 * daemon, or written by its rank); it completes once its last piece is
 * granted and every piece moved, whichever path moved which. */
void bcs_send_moved(struct bjob *j, uint32_t lr, struct osend *o, uint64_t len)
{
	o->moved += len;
	if (!o->wr_last || o->nwr || o->moved < o->end)
		return;
	bcs_osend_take(j, lr, o->d.req, true);
	bcs_complete(j, lr, o->d.req, o->d.peer, 0, 0, o->d.len);
	free(o);
}

/* A receive whose every piece is in completes (as on_data does). */
static void rx_landed(struct bjob *j, struct xfer *x)
{
	if (x->nrx || x->granted != x->total || (x->done < x->total && !x->err))
		return;
	for (struct xfer **pp = &j->wait_data[hkey((uint32_t)x->s->dst, x->r->req)]; *pp;
	     pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			bcs_recv_done(j, x, x->err);
			bcs_xfer_free(x);
			return;
		}
}

static void wr_ended(struct nd *nd, struct bjob *j, uint32_t lr, uint32_t k)
{
	struct bcs_wr *c = &bcs_area_of(j, lr)->wr[k];
	struct rwrite *w = j->wr_w[lr][k];
	bool ok = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == BCS_COPY_DONE;
	if (!ok)
		slog("job %" PRIu64 ": rank %u could not write %" PRIu64 " bytes to rank %d: %s",
		     j->id, j->first + lr, c->len, w->w.g.dst, strerror(c->err));
	struct osend *o = bcs_osend_take(j, lr, w->sreq, false);
	if (o) {
		o->nwr--;
		bcs_send_moved(j, lr, o, c->len);
	}
	j->wr_w[lr][k] = NULL;
	__atomic_store_n(&c->state, BCS_COPY_FREE, __ATOMIC_RELEASE);
	free(w);
	j->nwr--;
	nd->bcs->nwr--;
}

static void rx_ended(struct nd *nd, struct bjob *j, uint32_t lr, uint32_t k)
{
	struct bcs_rx *r = &bcs_area_of(j, lr)->rx[k];
	struct xfer *x = j->rx_x[lr][k];
	if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == BCS_COPY_DONE) {
		x->done += r->len;
		j->in_rank += r->len;
	} else {
		x->err = BCS_EFAULT;
	}
	j->rx_x[lr][k] = NULL;
	__atomic_store_n(&r->state, BCS_COPY_FREE, __ATOMIC_RELEASE);
	x->nrx--;
	j->nwr--;
	nd->bcs->nwr--;
	rx_landed(j, x);
}

/* The daemon writes order w itself (state DAEMON): read out of its rank,
 * then one write from the daemon's endpoint; its end marks the order DONE
 * (daemon_events). Not now (queue full): tried again at the next poll. */
static void daemon_write(struct nd *nd, struct bjob *j, uint32_t lr, struct rwrite *w)
{
	struct nd_bcs *b = nd->bcs;
	struct bcs_wr *c = &bcs_area_of(j, lr)->wr[w->k];
	if (w->stage)
		return; /* under way */
	w->by_daemon = true;
	if (!b->ep && !b->ep_failed) {
		char why[200] = "";
		char src[48];
		if (sn_local_host(nd->sn, src, sizeof(src)))
			src[0] = '\0';
		if (sn_ep_open(nd->conf.provider, src, 65536, &b->ep, why, sizeof(why))) {
			b->ep_failed = true;
			slog("BCS-MPI: no endpoint of this daemon's own (%s): write orders its ranks "
			     "leave wait for them", why);
		}
	}
	if (!b->ep)
		return;
	w->stage = malloc(c->len ? c->len : 1);
	if (!w->stage)
		abort();
	int rc = bcs_copy_from(bcs_pid_of(j, lr), c->src, w->stage, c->len) < 0
			 ? -EFAULT
			 : sn_ep_write(b->ep, c->blob, c->blen, w->stage, c->len, c->off, c->imm, w);
	if (rc == 0)
		return;
	free(w->stage);
	w->stage = NULL;
	if (rc == -EAGAIN)
		return;
	c->err = -rc;
	__atomic_store_n(&c->state, BCS_COPY_REFUSED, __ATOMIC_RELEASE);
}

static void daemon_events(struct nd *nd)
{
	struct nd_bcs *b = nd->bcs;
	struct sn_ep_event ev[32];
	int n;
	while (b->ep && (n = sn_ep_poll(b->ep, ev, 32)) > 0)
		for (int i = 0; i < n; i++) {
			struct rwrite *w = ev[i].ctx;
			if (ev[i].kind != SN_EP_SENT || !w)
				continue;
			if (!w->j) { /* its job ended meanwhile */
				free(w->stage);
				free(w);
				continue;
			}
			struct bcs_wr *c = &bcs_area_of(w->j, w->lr)->wr[w->k];
			free(w->stage);
			w->stage = NULL;
			c->err = -ev[i].err;
			if (!ev[i].err)
				b->out_daemon += c->len;
			__atomic_store_n(&c->state, ev[i].err ? BCS_COPY_REFUSED : BCS_COPY_DONE,
					 __ATOMIC_RELEASE);
		}
}

/* The sending rank will not write order k soon: it computes (past a
 * phase), is stopped, drained, or has no endpoint. */
static bool left(struct nd *nd, struct bjob *j, struct bcs_area *a, const struct rwrite *w)
{
	return j->frozen || (j->job && j->job->stopped) ||
	       __atomic_load_n(&a->ep_state, __ATOMIC_ACQUIRE) != BCS_EP_OPEN ||
	       (w->phase + 1 < nd->bcs->phases && !__atomic_load_n(&a->waiting, __ATOMIC_SEQ_CST));
}

/* Both sides: orders and expectations done. True if any was: a slot is
 * free, the next grant may use it. */
bool bcs_rank_poll(struct nd *nd, struct bjob *j)
{
	bool any = false;
	if (!j->nwr || !j->map || !j->rx_x)
		return false;
	daemon_events(nd);
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
		for (uint32_t k = 0; k < BCS_RX_SLOTS; k++) {
			uint32_t s = __atomic_load_n(&a->rx[k].state, __ATOMIC_ACQUIRE);
			if (j->rx_x[lr][k] && (s == BCS_COPY_DONE || s == BCS_COPY_REFUSED)) {
				rx_ended(nd, j, lr, k);
				any = true;
			}
		}
		for (uint32_t k = 0; k < BCS_WR_SLOTS; k++) {
			struct rwrite *w = j->wr_w[lr][k];
			uint32_t s = __atomic_load_n(&a->wr[k].state, __ATOMIC_ACQUIRE);
			if (!w)
				continue;
			if (s == BCS_COPY_REFUSED && !w->by_daemon) {
				/* the rank's write failed: the daemon's, once */
				__atomic_store_n(&a->wr[k].state, BCS_COPY_DAEMON, __ATOMIC_RELEASE);
				daemon_write(nd, j, lr, w);
			} else if (s == BCS_COPY_DONE || s == BCS_COPY_REFUSED) {
				wr_ended(nd, j, lr, k);
				any = true;
			} else if (s == BCS_COPY_DAEMON) {
				daemon_write(nd, j, lr, w); /* not begun yet: the queue was full */
			} else if (s == BCS_COPY_POSTED && left(nd, j, a, w) &&
				   __atomic_compare_exchange_n(&a->wr[k].state, &s, BCS_COPY_DAEMON,
							       false, __ATOMIC_ACQ_REL,
							       __ATOMIC_ACQUIRE)) {
				daemon_write(nd, j, lr, w);
			}
		}
	}
	if (j->wq_head)
		post_writes(nd, j);
	return any;
}

/* Every phase: a job a checkpoint drains has its ranks close their
 * endpoints (no image may hold one) once no order or expectation of the
 * job is out here (a write order for a closed endpoint would wait for the
 * thaw, which waits for the drain), and open new ones once it thaws. The
 * checkpoint has stopped the job: a rank with an expectation out, or a
 * write it took and has not seen end, is continued alone until they are
 * done (only it copies its pieces out, only it polls its writes' ends; a
 * write order it had not taken its daemon takes over), and one whose endpoint
 * is open until it has closed it (at its next MPI call, where the frozen
 * job holds it), then stopped again, as a copier is (bcs_copy.c). */
void bcs_rank_close(struct bjob *j)
{
	if (!j->map)
		return;
	j->ep_closing = j->frozen && (j->ep_closing || !j->nwr);
	uint32_t want = j->ep_closing ? 1 : 0;
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
		pid_t pid = bcs_pid_of(j, lr);
		bool open = bcs_ep_held(__atomic_load_n(&a->ep_state, __ATOMIC_ACQUIRE));
		/* its own work out: expectations, and writes it took */
		bool own = false;
		for (uint32_t k = 0; j->rx_x && k < BCS_RX_SLOTS; k++)
			own |= j->rx_x[lr][k] != NULL;
		for (uint32_t k = 0; j->wr_w && k < BCS_WR_SLOTS; k++)
			own |= j->wr_w[lr][k] &&
			       __atomic_load_n(&a->wr[k].state, __ATOMIC_ACQUIRE) == BCS_COPY_TAKEN;
		if (j->frozen && pid > 0)
			bcs_alone(j, lr, BCS_ALONE_RX, own);
		if (want && pid > 0)
			bcs_alone(j, lr, BCS_ALONE_EP, open);
		if (!j->frozen)
			bcs_alone_thawed(j, lr, BCS_ALONE_EP | BCS_ALONE_RX);
		if (__atomic_load_n(&a->ep_close, __ATOMIC_ACQUIRE) == want)
			continue;
		__atomic_store_n(&a->ep_close, want, __ATOMIC_RELEASE);
		wake(a);
		/* and the rank's closer, which sleeps on the word itself */
		syscall(SYS_futex, &a->ep_close, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/* The job ends here: what it had out goes with it. */
void bcs_rank_free(struct nd_bcs *b, struct bjob *j)
{
	b->nwr -= j->nwr;
	b->in_rank += j->in_rank;
	b->in_daemon += j->in_daemon;
	j->nwr = 0;
	for (uint32_t lr = 0; j->wr_w && lr < j->nlocal; lr++)
		for (uint32_t k = 0; k < BCS_WR_SLOTS; k++) {
			struct rwrite *w = j->wr_w[lr][k];
			if (w && w->stage)
				w->j = NULL; /* the daemon's write under way: its end frees it */
			else
				free(w);
		}
	for (struct rwrite *w = j->wq_head, *n; w; w = n) {
		n = w->next;
		free(w);
	}
	j->wq_head = j->wq_tail = NULL;
	free(j->rx_x);
	free(j->wr_w);
	j->rx_x = NULL;
	j->wr_w = NULL;
}
