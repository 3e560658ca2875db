/* BCS-MPI in the node daemon: a message between two ranks of this node
 * moves with one copy. The schedule is the daemon's as for any message
 * (matching, grants per slice); at its grant a piece becomes a copy order
 * in the receiving rank's channel area (chan.h, struct bcs_copy), and the
 * rank's library reads it straight from the sending rank's buffer with one
 * process_vm_readv; when the receiver computes at the grant and the sender
 * waits in MPI, the order goes to the sender, which writes the piece with
 * one process_vm_writev. The daemon copies itself, through its bounce
 * buffer, when neither waits in MPI at the grant (the order would wait for
 * one's next MPI call), when an order was not taken within a phase (the
 * rank is stopped), while a checkpoint drains the job, and for the rest of
 * the job once a rank's copy was refused (the kernel's ptrace policy):
 * docs/design/bcs-mpi.md, "One copy". */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "chan.h"
#include "layout.h"
#include "nd.h"
#include "bcs_int.h"

/* The daemon's copy between two ranks, through its bounce buffer
 * (process_vm_readv and _writev move data between the caller and one other
 * process only). Returns 0 or BCS_EFAULT. */
static int daemon_copy(struct nd_bcs *b, struct bjob *j, pid_t from, uint64_t src, pid_t to,
		       uint64_t dst, uint64_t len)
{
	for (uint64_t d = 0; d < len;) {
		size_t n = len - d > BCS_BOUNCE ? BCS_BOUNCE : len - d;
		if (bcs_copy_from(from, src + d, b->bounce, n) < 0 ||
		    bcs_copy_to(to, dst + d, b->bounce, n) < 0)
			return BCS_EFAULT;
		d += n;
	}
	j->copied_daemon += len;
	return 0;
}

/* The rank is in a blocking MPI call, or polls having seen every
 * completion (chan.h, waiting and idle): it takes an order at once. */
bool bcs_rank_waits(struct bjob *j, uint32_t lr)
{
	struct bcs_area *a = bcs_area_of(j, lr);
	uint32_t idle = __atomic_load_n(&a->idle, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&a->waiting, __ATOMIC_SEQ_CST) ||
	       (idle && idle != BCS_IDLE_DONE && idle == a->comp_head + 1);
}

static bool allocated(struct bjob *j)
{
	if (j->order)
		return true;
	uint32_t n = j->nlocal ? j->nlocal : 1;
	j->order = calloc(n, sizeof(*j->order));
	j->order_phase = calloc(n, sizeof(*j->order_phase));
	if (!j->order || !j->order_phase)
		abort();
	return true;
}

/* Posts a copy order for the piece to the receiving rank, or to the
 * sending one when only it waits in MPI; false: none (the daemon copies). */
static bool post_order(struct nd *nd, struct bjob *j, struct xfer *x, pid_t from,
		       uint64_t src, uint64_t off, uint64_t chunk)
{
	uint32_t slr = (uint32_t)x->s->src - j->first, lr = x->lr;
	pid_t to = bcs_pid_of(j, x->lr);
	if (j->copy_off || j->frozen || (j->job && j->job->stopped) || from <= 0 || to <= 0 ||
	    !allocated(j))
		return false;
	bool write = !bcs_rank_waits(j, lr);
	if (write) {
		if (!bcs_rank_waits(j, slr) ||
		    !__atomic_load_n(&bcs_area_of(j, slr)->takes_writes, __ATOMIC_RELAXED))
			return false;
		lr = slr;
	}
	struct bcs_area *a = bcs_area_of(j, lr);
	for (uint32_t k = 0; k < BCS_COPY_SLOTS; k++) {
		struct bcs_copy *c = &a->copy[k];
		if (j->order[lr][k] || __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != BCS_COPY_FREE)
			continue;
		c->pid = (uint32_t)(write ? to : from);
		c->src = src;
		c->dst = x->r->addr + off;
		c->len = chunk;
		c->err = 0;
		c->write = write;
		__atomic_store_n(&c->state, BCS_COPY_POSTED, __ATOMIC_RELEASE);
		__atomic_fetch_add(&a->copy_posted, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&a->futex, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &a->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		j->order[lr][k] = x;
		j->order_phase[lr][k] = nd->bcs->phases;
		x->norders++;
		j->norders++;
		nd->bcs->norders++;
		nd->bcs->order_at_ns = clock_mono_ns();
		return true;
	}
	return false;
}

/* Transmission of the next piece of a pair whose ranks are both here: a
 * copy order to one of them, within the slice's budget of such copies, or
 * the daemon's copy now, within the link's budget too (its copy takes the
 * daemon's time). False: nothing granted, the budget is spent. */
bool bcs_local_piece(struct nd *nd, struct bjob *j, struct xfer *x)
{
	uint32_t slr = (uint32_t)x->s->src - j->first;
	struct osend *o = bcs_osend_take(j, slr, x->s->sreq, false);
	pid_t from = bcs_pid_of(j, slr);
	uint64_t off = x->granted, chunk = x->total - off;
	uint64_t *link = &j->budget[nd->bcs->self];
	if (chunk > j->lbudget)
		chunk = j->lbudget;
	if (!chunk)
		return false;
	int err = o ? 0 : BCS_EFAULT;
	if (!err && !post_order(nd, j, x, from, o->d.addr + off, off, chunk)) {
		if (chunk > *link)
			chunk = *link;
		if (!chunk)
			return false;
		*link -= chunk;
		err = daemon_copy(nd->bcs, j, from, o->d.addr + off, bcs_pid_of(j, x->lr),
				  x->r->addr + off, chunk);
		x->done += chunk;
	}
	j->lbudget -= chunk;
	x->granted += chunk;
	if (!j->lcounted)
		j->lslices++;
	j->lcounted = true;
	if (err) {
		x->err = err;
		x->granted = x->total; /* a rank gone: finish the pair now */
	}
	return true;
}

/* Both ranks of the pair are done with it: the send completes, then the
 * receive. */
static void finish(struct bjob *j, struct xfer *x)
{
	uint32_t slr = (uint32_t)x->s->src - j->first;
	struct osend *o = bcs_osend_take(j, slr, x->s->sreq, true);
	if (o) {
		bcs_complete(j, slr, o->d.req, x->s->dst, x->s->tag, 0, o->d.len);
		free(o);
	}
	bcs_recv_done(j, x, x->err);
}

/* Grant has given a local pair its last piece and dropped it from its
 * queue: it completes now, or with its last order. */
void bcs_local_granted(struct bjob *j, struct xfer *x)
{
	if (x->norders) {
		x->next = j->lcopy;
		j->lcopy = x;
		return;
	}
	finish(j, x);
	bcs_xfer_free(x);
}

static void order_gone(struct nd_bcs *b, struct bjob *j, uint32_t lr, uint32_t k)
{
	struct xfer *x = j->order[lr][k];
	struct bcs_copy *c = &bcs_area_of(j, lr)->copy[k];
	j->order[lr][k] = NULL;
	x->done += c->len;
	x->norders--;
	j->norders--;
	b->norders--;
	__atomic_store_n(&c->state, BCS_COPY_FREE, __ATOMIC_RELEASE);
	if (x->norders || x->granted != x->total)
		return;
	for (struct xfer **pp = &j->lcopy; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			finish(j, x);
			bcs_xfer_free(x);
			return;
		}
	/* still the head of its grant queue: grant completes it */
}

/* The daemon does an order of rank lr itself: taken back, or refused. */
static void copy_instead(struct nd *nd, struct bjob *j, uint32_t lr, const struct bcs_copy *c,
			 struct xfer *x)
{
	pid_t me = bcs_pid_of(j, lr), other = (pid_t)c->pid;
	if (daemon_copy(nd->bcs, j, c->write ? me : other, c->src, c->write ? other : me, c->dst,
			c->len))
		x->err = BCS_EFAULT;
}

static void refused(struct nd *nd, struct bjob *j, uint32_t lr, const struct bcs_copy *c,
		    struct xfer *x)
{
	uint64_t before = j->copied_daemon;
	copy_instead(nd, j, lr, c, x);
	if (j->copied_daemon == before || j->copy_off)
		return; /* the daemon could not either: a buffer or a rank gone */
	j->copy_off = true;
	slog("job %" PRIu64 ": rank %u cannot %s rank %u's memory (process_vm_%s: %s; the "
	     "kernel's ptrace policy?); this daemon copies the job's messages between its ranks",
	     j->id, j->first + lr, c->write ? "write" : "read",
	     c->write ? (uint32_t)x->s->dst : (uint32_t)x->s->src, c->write ? "writev" : "readv",
	     strerror(c->err));
}

/* A rank stopped for a checkpoint while it copied (TAKEN): continued
 * alone until it says it is done, then stopped again, so that the drain
 * ends (the daemon must never redo a copy a rank may still make). */
static void resume_copier(struct bjob *j, uint32_t lr, bool taken)
{
	if (bcs_alone(j, lr, BCS_ALONE_COPY, taken) && taken)
		slog("job %" PRIu64 ": checkpoint: rank %u was stopped in a copy; continued until "
		     "it is done", j->id, j->first + lr);
}

/* A rank that left its blocking call (it computes) or is stopped (the gang
 * scheduler's other row) takes no order soon; one that waits in MPI takes
 * its orders as soon as it runs, however loaded the machine. */
static bool away(struct bjob *j, struct bcs_area *a)
{
	return !__atomic_load_n(&a->waiting, __ATOMIC_SEQ_CST) || (j->job && j->job->stopped);
}

/* The orders' states: done ones complete their pairs; one not taken
 * within a phase by a rank away, or any while a checkpoint drains the job,
 * the daemon takes back and does itself. */
void bcs_orders(struct nd *nd, struct bjob *j)
{
	struct nd_bcs *b = nd->bcs;
	if (!j->norders || !j->map)
		return;
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
		bool taken = false;
		for (uint32_t k = 0; k < BCS_COPY_SLOTS; k++) {
			struct xfer *x = j->order[lr][k];
			struct bcs_copy *c = &a->copy[k];
			if (!x)
				continue;
			uint32_t s = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
			if (s == BCS_COPY_POSTED && (j->frozen || (j->order_phase[lr][k] + 1 < b->phases &&
								   away(j, a))) &&
			    __atomic_compare_exchange_n(&c->state, &s, BCS_COPY_DAEMON, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				copy_instead(nd, j, lr, c, x);
				order_gone(b, j, lr, k);
			} else if (s == BCS_COPY_DONE) {
				j->copied_rank += c->len;
				if (c->write)
					j->copied_sender += c->len;
				order_gone(b, j, lr, k);
			} else if (s == BCS_COPY_REFUSED) {
				refused(nd, j, lr, c, x);
				order_gone(b, j, lr, k);
			} else if (s == BCS_COPY_TAKEN) {
				taken = true;
			}
		}
		if (j->frozen)
			resume_copier(j, lr, taken);
		else
			bcs_alone_thawed(j, lr, BCS_ALONE_COPY);
	}
}

/* The job ends here: its orders go with it. */
void bcs_orders_free(struct nd_bcs *b, struct bjob *j)
{
	b->norders -= j->norders;
	j->norders = 0;
	for (struct xfer *x = j->lcopy, *n; x; x = n) {
		n = x->next;
		bcs_xfer_free(x);
	}
	j->lcopy = NULL;
	free(j->order);
	free(j->order_phase);
}
