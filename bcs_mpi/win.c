/* BCS-MPI one-sided communication: windows, their epochs and operations.
 *
 * The BCS way: an operation is never done when it is called. The origin
 * queues it, per target, as a record of a batch (abi/rma.h); the epoch's
 * synchronisation ships each batch in one message over the library's own
 * point to point, on the window's private communicator (its collective
 * context, tags of their own: user traffic never matches them), and the
 * target applies the batches it receives. Data thus moves in the daemons'
 * schedule like any message, and everything a window holds lives in the
 * rank's memory, so a checkpoint taken mid-epoch has it all.
 *
 * Determinism: a target applies the batches of one synchronisation in
 * origin rank order (then issue order within a batch), so even floating
 * point and non-commutative accumulates give the same bits every run.
 *   fence        every member sends every other its batch (maybe empty);
 *                each applies them in rank order, then answers the fetches.
 *   post/start/  MPI_Win_post pre-posts a header receive from each origin
 *   complete/    of the group; MPI_Win_complete ships the batches; the
 *   wait         target applies them in rank order once all arrived.
 *   lock/unlock  lazy: the epoch's batch goes at MPI_Win_unlock (or
 *                MPI_Win_flush, after which the target keeps the lock held
 *                for that origin until its unlock) and is applied whole,
 *                atomically, under the lock's rules; the answer (always
 *                sent) completes the unlock. The target learns of batches
 *                through one wildcard header receive per window, which the
 *                daemons resolve at quiescence, lowest source first: the
 *                order of lock epochs at a target is itself deterministic.
 *
 * Dynamic windows: displacements are addresses at the target, and only the
 * target knows what is attached there; it checks each batch whole before
 * applying any of it, and its answer starts with a verdict that the origin
 * reports (MPI_ERR_RMA_RANGE): the target never fails for an origin's
 * mistake. Request-based fetches (MPI_Rget...) are shipped by progress as a
 * flush would, without waiting; their answers complete the requests.
 *
 * Progress: a target serves post/start and lock batches while it is inside
 * any MPI call that waits or polls (bcs_progress_hook), as MPICH without an
 * asynchronous progress thread does; a rank computing outside MPI delays
 * the origins that wait on it, never corrupts them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bcs.h"
#include "chan.h"
#include "rma.h"

#define MAX_WINS 1024

/* tags on the window's collective context (coll.c uses 1) */
enum {
	T_FHDR = 101, T_FBODY, T_FREPLY, /* fence */
	T_PHDR, T_PBODY, T_PREPLY,       /* post/start/complete/wait */
	T_LHDR, T_LBODY, T_LREPLY,       /* lock/unlock */
};

/* a lock batch of up to this many bytes travels in its header's message:
 * the target applies it when the header arrives, not a round later when
 * a separate body would (an epoch of one get or compare-and-swap is
 * a few dozen bytes) */
#define LOCK_INLINE 512

/* wildcard header receives a window keeps posted (up to one per member):
 * one quiescence takes every lock batch then waiting for this target, in
 * the same order one receive took them in over as many quiescences
 * (lowest source first), instead of one batch per quiescence */
#define LOCK_HDRS 16

#define F_EXCL 1u /* a batch of an exclusive lock epoch */
#define F_HOLD 2u /* flushed: the epoch goes on, the target keeps it held */
/* this rank's own exclusive lock on its window, asked of itself through
 * the daemons like any origin's epoch: it is granted in the order the
 * other origins' batches are, decided at quiescence, and a rank spinning on
 * its own window waits there, so the job can become quiescent and the
 * batches it waits for arrive (taken at once, a rank spinning on epochs of
 * its own memory never let the job be quiescent, and every other origin's
 * header waited for ever) */
#define F_SELF 4u

struct hdr {
	uint64_t bytes;  /* the batch's length */
	uint32_t flags;
	uint32_t pad;
	uint64_t reply;  /* bytes of its answer */
};

struct fetch {
	void *addr;
	int count;
	MPI_Datatype dt;
	uint64_t len;
	MPI_Request req; /* MPI_Rget's or MPI_Rget_accumulate's, else 0 */
};

/* A dynamic window's answer starts with the target's verdict on the batch:
 * the target checks it against the memory attached there, which no origin
 * knows, and refuses it whole rather than fail or touch the wrong bytes. */
struct verdict {
	int32_t err;
	uint32_t pad;
	uint64_t addr; /* MPI_ERR_RMA_RANGE: the first block not attached */
};

/* what an origin queued for one target */
struct tq {
	struct bcs_rma_buf b;
	struct fetch *f;
	int nf, capf;
	int lock;  /* 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE */
	int held;  /* flushed in this lock epoch: the target holds it for us */
	int rq;    /* request-based fetches queued: progress ships the batch */
};

/* a lock batch shipped by progress for request-based operations, awaiting
 * its answer */
struct flight {
	int t;
	MPI_Request r;
	uint8_t *rep;
	struct fetch *f;
	int nf;
	struct flight *next;
};

/* a lock batch at the target, in arrival order */
struct incoming {
	int from;
	struct hdr h;
	MPI_Request body_req;
	uint8_t *body;
	struct incoming *next;
};

struct win {
	MPI_Comm comm;     /* private duplicate of the user's communicator */
	int rank, size;
	char *base;
	MPI_Aint bytes;
	int disp_unit, allocated;
	MPI_Aint *sizes;   /* every member's window size and displacement unit */
	int *units;
	struct tq *q;
	/* access epoch of post/start/complete/wait: targets, ascending */
	int *start, nstart;
	/* exposure epoch: origins, ascending; 1 headers, 2 bodies, 3 applied */
	int *post, npost, pstate;
	struct hdr *phdr;
	MPI_Request *preq;
	uint8_t **pbody;
	/* passive target */
	MPI_Request *lreq; /* nlreq wildcard header receives, posted in */
	struct lmsg {      /* ring order from lnext: the oldest first */
		struct hdr h;
		uint8_t body[LOCK_INLINE];
	} *lmsg;
	int nlreq, lnext;
	struct incoming *in;
	int excl;          /* the origin holding the lock exclusively, or -1 */
	char *shared;      /* origins holding it shared (flushed epochs) */
	int nshared;
	int self_lock;     /* this rank's own lock on its window */
	int servicing;
	char *name;        /* MPI_Win_set_name's, or NULL */
	MPI_Info hints;    /* the hints set (win_hints), or MPI_INFO_NULL */
	int flavor;        /* MPI_WIN_FLAVOR_* */
	struct bcs_rma_region *rg; /* dynamic: the memory attached here */
	uint32_t nrg, caprg;
	struct flight *fl; /* request-based batches on the way, in order */
	void *shm;         /* shared: the node's mapping of every segment */
	size_t shmlen;
	char why[160];     /* what the last refused batch tried to reach */
	int rqs;           /* some target has request-based fetches queued */
};

static struct win *wins[MAX_WINS];

/* sends whose buffer is freed once they completed */
static struct pend {
	MPI_Request r;
	void *buf;
} *pend;
static int npend, cappend;

static struct win *win_get(MPI_Win h)
{
	return h > 0 && h < MAX_WINS ? wins[h] : NULL;
}

static struct bcs_comm *wc(const struct win *w)
{
	return bcs_comm_get(w->comm);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "one-sided communication");
	return p;
}

/* ---- messages */

static void reap(void)
{
	int k = 0;
	for (int i = 0; i < npend; i++) {
		if (bcs_req_done(pend[i].r)) {
			bcs_req_take(&pend[i].r, MPI_STATUS_IGNORE);
			free(pend[i].buf);
		} else {
			pend[k++] = pend[i];
		}
	}
	npend = k;
}

/* Sends len bytes at buf (taken: freed once sent). */
static int send_owned(struct win *w, int dest, int tag, void *buf, uint64_t len)
{
	if (npend == cappend) {
		int n = cappend ? cappend * 2 : 64;
		struct pend *v = realloc(pend, (size_t)n * sizeof(*v));
		if (!v) {
			free(buf);
			return MPI_ERR_NO_MEM;
		}
		pend = v;
		cappend = n;
	}
	MPI_Request r;
	int rc = bcs_isend(buf, (int)len, MPI_BYTE, dest, tag, wc(w), true, &r);
	if (rc) {
		free(buf);
		return rc;
	}
	pend[npend++] = (struct pend){r, buf};
	return MPI_SUCCESS;
}

static int send_hdr(struct win *w, int dest, int tag, struct hdr h)
{
	struct hdr *p = xmalloc(sizeof(h));
	*p = h;
	return send_owned(w, dest, tag, p, sizeof(h));
}

/* Sends a lock batch B of LEN bytes (taken) to T: in its header's message
 * when it is small, else after it (take_lock_hdr receives either). */
static int send_lock_batch(struct win *w, int t, struct hdr h, void *b, uint64_t len)
{
	if (len > LOCK_INLINE) {
		int rc = send_hdr(w, t, T_LHDR, h);
		if (rc) {
			free(b);
			return rc;
		}
		return send_owned(w, t, T_LBODY, b, len);
	}
	uint8_t *m = xmalloc(sizeof(h) + len);
	memcpy(m, &h, sizeof(h));
	if (len)
		memcpy(m + sizeof(h), b, len);
	free(b);
	return send_owned(w, t, T_LHDR, m, sizeof(h) + len);
}

static int recv(struct win *w, void *buf, uint64_t len, int src, int tag, MPI_Request *r)
{
	return bcs_irecv(buf, (int)len, MPI_BYTE, src, tag, wc(w), true, r);
}

static bool all_done(void *arg)
{
	MPI_Request *v = arg;
	for (int i = 0; v[i] != -1; i++)
		if (!bcs_req_done(v[i]))
			return false;
	return true;
}

/* Waits for the requests (ended by -1) and finishes them. */
static int wait_reqs(MPI_Request *v)
{
	bcs_wait(all_done, v);
	int err = MPI_SUCCESS;
	for (int i = 0; v[i] != -1; i++) {
		int e = bcs_req_take(&v[i], MPI_STATUS_IGNORE);
		if (e && !err)
			err = e;
	}
	return err;
}

/* ---- batches */

/* Applies a batch to this rank's window; the answer in *reply (malloc'd). */
static bool dynamic(const struct win *w)
{
	return w->flavor == MPI_WIN_FLAVOR_DYNAMIC;
}

/* A dynamic window's batch: checked whole against what is attached here,
 * then applied at its absolute addresses; the verdict goes back to the
 * origin, which reports the error (this rank is not at fault). */
static void apply_dynamic(struct win *w, const void *batch, uint64_t n, uint64_t want,
			  uint8_t *rep)
{
	struct verdict v = {0};
	uint64_t rlen = 0, cap = want - sizeof(v);
	memset(rep, 0, want);
	v.err = bcs_rma_check(batch, n, w->rg, w->nrg, &v.addr);
	if (!v.err)
		v.err = bcs_rma_apply(NULL, BCS_RMA_ANY, batch, n, rep + sizeof(v), cap, &rlen);
	if (!v.err && rlen != cap)
		v.err = MPI_ERR_INTERN;
	memcpy(rep, &v, sizeof(v));
}

static void apply(struct win *w, const void *batch, uint64_t n, uint64_t want, void **reply)
{
	void *rep = xmalloc(want);
	if (dynamic(w) && want >= sizeof(struct verdict)) {
		apply_dynamic(w, batch, n, want, rep);
		*reply = rep;
		return;
	}
	uint64_t rlen = 0;
	int rc = bcs_rma_apply(w->base, (uint64_t)w->bytes, batch, n, rep, want, &rlen);
	if (!rc && rlen != want)
		rc = MPI_ERR_INTERN;
	if (rc)
		bcs_err(w->comm, rc, "one-sided operation at its target");
	*reply = rep;
}

/* Hands the fetched bytes of target t's answer to their result buffers and
 * completes their requests. A batch the target refused (a dynamic window's
 * verdict) leaves them alone; its error is returned, w->why says why. */
static int unpack_list(struct win *w, int t, struct fetch *f, int *nf, const uint8_t *rep)
{
	int err = 0;
	if (dynamic(w)) {
		struct verdict v;
		memcpy(&v, rep, sizeof(v));
		rep += sizeof(v);
		err = v.err;
		if (err == MPI_ERR_RMA_RANGE)
			snprintf(w->why, sizeof(w->why),
				 "rank %d has no memory attached at address 0x%llx of its dynamic window",
				 t, (unsigned long long)v.addr);
		else if (err)
			snprintf(w->why, sizeof(w->why), "rank %d refused the operations", t);
	}
	uint64_t off = 0;
	for (int i = 0; i < *nf; i++) {
		struct bcs_type *ty = err ? NULL : bcs_type_held(f[i].dt);
		if (ty)
			bcs_unpack(ty, rep + off, (long)f[i].len, f[i].addr);
		bcs_type_release(f[i].dt);
		off += f[i].len;
		if (f[i].req)
			bcs_coll_arm(f[i].req, err);
	}
	*nf = 0;
	return err;
}

static int unpack_fetches(struct win *w, int t, const uint8_t *rep)
{
	struct tq *q = &w->q[t];
	q->rq = 0;
	return unpack_list(w, t, q->f, &q->nf, rep);
}

/* Reports err of fn, with what the target said when it refused a batch. */
static int win_err(struct win *w, int err, const char *fn)
{
	if (!err)
		return MPI_SUCCESS;
	char msg[256];
	if (w->why[0])
		snprintf(msg, sizeof(msg), "%s: %s", fn, w->why);
	else
		snprintf(msg, sizeof(msg), "%s", fn);
	w->why[0] = '\0';
	return bcs_err(w->comm, err, msg);
}

/* The batch leaves the queue: its bytes, which the caller owns now. */
static void *detach(struct win *w, struct tq *q, uint64_t *len, uint64_t *reply)
{
	void *p = q->b.p;
	*len = q->b.len;
	*reply = q->b.reply + (dynamic(w) ? sizeof(struct verdict) : 0);
	memset(&q->b, 0, sizeof(q->b));
	return p;
}

/* This rank's own batch to itself, applied now. */
static int apply_self(struct win *w)
{
	struct tq *q = &w->q[w->rank];
	uint64_t len, want;
	void *b = detach(w, q, &len, &want), *rep;
	apply(w, b, len, want, &rep);
	int err = unpack_fetches(w, w->rank, rep);
	free(rep);
	free(b);
	return err;
}

/* ---- passive target at the target */

static bool may_apply(const struct win *w, const struct incoming *e)
{
	if (e->h.flags & F_SELF)
		return w->excl < 0 && w->nshared == 0 && w->self_lock == 0;
	if (w->excl >= 0)
		return w->excl == e->from;
	if (w->self_lock == MPI_LOCK_EXCLUSIVE)
		return false;
	if (e->h.flags & F_EXCL)
		return w->self_lock == 0 && w->nshared - (w->shared[e->from] ? 1 : 0) == 0;
	return true;
}

/* Applies, in arrival order, every received lock batch the holds allow. */
static void serve_locks(struct win *w)
{
	if (w->servicing)
		return;
	w->servicing = 1;
	for (bool again = true; again;) {
		again = false;
		for (struct incoming **pp = &w->in; *pp; pp = &(*pp)->next) {
			struct incoming *e = *pp;
			if (e->body_req != MPI_REQUEST_NULL) {
				if (!bcs_req_done(e->body_req))
					continue;
				bcs_req_take(&e->body_req, MPI_STATUS_IGNORE);
			}
			if (!may_apply(w, e))
				continue;
			if (e->h.flags & F_SELF) {
				w->self_lock = MPI_LOCK_EXCLUSIVE; /* lock_one waits for it */
				*pp = e->next;
				free(e->body);
				free(e);
				again = true;
				break;
			}
			void *rep;
			apply(w, e->body, e->h.bytes, e->h.reply, &rep);
			send_owned(w, e->from, T_LREPLY, rep, e->h.reply);
			if (e->h.flags & F_HOLD) {
				if (e->h.flags & F_EXCL) {
					w->excl = e->from;
				} else if (!w->shared[e->from]) {
					w->shared[e->from] = 1;
					w->nshared++;
				}
			} else {
				if (w->excl == e->from)
					w->excl = -1;
				if (w->shared[e->from]) {
					w->shared[e->from] = 0;
					w->nshared--;
				}
			}
			*pp = e->next;
			free(e->body);
			free(e);
			again = true; /* the holds changed: look from the start */
			break;
		}
	}
	w->servicing = 0;
}

static int post_lock_hdr(struct win *w, int i)
{
	return recv(w, &w->lmsg[i], sizeof(w->lmsg[i]), MPI_ANY_SOURCE, T_LHDR, &w->lreq[i]);
}

/* The oldest header receive, when it has completed: the daemons match the
 * posted ones in post order, so none after it completes before it. */
static bool lock_hdr_ready(const struct win *w)
{
	return w->nlreq && w->lreq[w->lnext] != MPI_REQUEST_NULL &&
	       bcs_req_done(w->lreq[w->lnext]);
}

/* A lock batch announced itself: receive its body, look for the next. */
static void take_lock_hdr(struct win *w)
{
	MPI_Status st;
	int i = w->lnext;
	bcs_req_take(&w->lreq[i], &st);
	struct bcs_comm *c = wc(w);
	int from = -1;
	for (int i = 0; i < c->size; i++)
		if (c->world[i] == st.MPI_SOURCE)
			from = i;
	struct incoming *e = xmalloc(sizeof(*e));
	*e = (struct incoming){.from = from, .h = w->lmsg[i].h, .body_req = MPI_REQUEST_NULL};
	e->body = xmalloc(e->h.bytes);
	if (e->h.bytes <= LOCK_INLINE)
		memcpy(e->body, w->lmsg[i].body, e->h.bytes);
	else
		recv(w, e->body, e->h.bytes, from, T_LBODY, &e->body_req);
	struct incoming **pp = &w->in;
	while (*pp)
		pp = &(*pp)->next;
	*pp = e;
	post_lock_hdr(w, i); /* now the newest */
	w->lnext = (i + 1) % w->nlreq;
}

/* ---- post/start/complete/wait at the target */

static void serve_exposure(struct win *w)
{
	if (w->pstate == 1) {
		for (int i = 0; i < w->npost; i++)
			if (!bcs_req_done(w->preq[i]))
				return;
		for (int i = 0; i < w->npost; i++) {
			bcs_req_take(&w->preq[i], MPI_STATUS_IGNORE);
			w->pbody[i] = xmalloc(w->phdr[i].bytes);
			if (w->phdr[i].bytes)
				recv(w, w->pbody[i], w->phdr[i].bytes, w->post[i], T_PBODY,
				     &w->preq[i]);
		}
		w->pstate = 2;
	}
	if (w->pstate == 2) {
		for (int i = 0; i < w->npost; i++)
			if (!bcs_req_done(w->preq[i]))
				return;
		/* every origin's batch is here: applied in rank order */
		for (int i = 0; i < w->npost; i++) {
			bcs_req_take(&w->preq[i], MPI_STATUS_IGNORE);
			void *rep;
			apply(w, w->pbody[i], w->phdr[i].bytes, w->phdr[i].reply, &rep);
			if (w->phdr[i].reply)
				send_owned(w, w->post[i], T_PREPLY, rep, w->phdr[i].reply);
			else
				free(rep);
			free(w->pbody[i]);
			w->pbody[i] = NULL;
		}
		w->pstate = 3;
	}
}

/* ---- request-based operations at the origin */

/* Ships target t's lock batch now, as a flush would, without waiting: its
 * answer completes the MPI_Rget and MPI_Rget_accumulate requests in it. */
static void ship_async(struct win *w, int t)
{
	struct tq *q = &w->q[t];
	if (t == w->rank) {
		/* our own memory: the flush is a local application */
		apply_self(w);
		return;
	}
	struct flight *f = xmalloc(sizeof(*f));
	uint64_t len, want;
	void *b = detach(w, q, &len, &want);
	uint32_t flags = (q->lock == MPI_LOCK_EXCLUSIVE ? F_EXCL : 0) | F_HOLD;
	*f = (struct flight){.t = t, .r = MPI_REQUEST_NULL, .rep = xmalloc(want), .f = q->f,
			     .nf = q->nf};
	q->f = NULL;
	q->nf = q->capf = q->rq = 0;
	q->held = 1;
	int rc = send_lock_batch(w, t, (struct hdr){.bytes = len, .flags = flags, .reply = want},
				 b, len);
	if (!rc)
		rc = recv(w, f->rep, want, t, T_LREPLY, &f->r);
	if (rc)
		bcs_err(w->comm, rc, "one-sided request-based operation");
	struct flight **pp = &w->fl;
	while (*pp)
		pp = &(*pp)->next;
	*pp = f;
}

/* Finishes the shipped batches whose answers came, in shipping order. */
static void serve_flights(struct win *w)
{
	while (w->fl && bcs_req_done(w->fl->r)) {
		struct flight *f = w->fl;
		bcs_req_take(&f->r, MPI_STATUS_IGNORE);
		/* a refused batch fails its requests: the error is theirs */
		unpack_list(w, f->t, f->f, &f->nf, f->rep);
		w->why[0] = '\0';
		w->fl = f->next;
		free(f->rep);
		free(f->f);
		free(f);
	}
}

static bool flights_done(void *arg)
{
	return ((struct win *)arg)->fl == NULL;
}

static void ship_requested(struct win *w)
{
	if (!w->rqs)
		return;
	w->rqs = 0;
	for (int t = 0; t < w->size; t++)
		if (w->q[t].rq && w->q[t].lock)
			ship_async(w, t);
}

static void progress(void)
{
	reap();
	for (int h = 1; h < MAX_WINS; h++) {
		struct win *w = wins[h];
		if (!w)
			continue;
		while (lock_hdr_ready(w))
			take_lock_hdr(w);
		if (w->in)
			serve_locks(w);
		if (w->pstate == 1 || w->pstate == 2)
			serve_exposure(w);
		ship_requested(w);
		serve_flights(w);
	}
}

/* ---- windows */

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	(void)info;
	if (size < 0)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_SIZE, "MPI_Alloc_mem");
	void *p = malloc(size ? (size_t)size : 1);
	if (!p)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Alloc_mem");
	memcpy(baseptr, &p, sizeof(p));
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	free(base);
	return MPI_SUCCESS;
}

/* A window's info hints: none changes what a window does here (MPI-4.0
 * §12.2.7 lets an implementation ignore them), but MPI_Win_get_info gives
 * back those MPI defines as the creating call or MPI_Win_set_info set
 * them, the others at MPI's defaults, as MPICH does */
static const char *const win_keys[] = {"no_locks", "accumulate_ordering", "accumulate_ops",
				       "same_size", "same_disp_unit", "alloc_shared_noncontig",
				       "mpi_accumulate_granularity"};
#define NKEYS (sizeof(win_keys) / sizeof(win_keys[0]))

static int win_hints(struct win *w, MPI_Info info)
{
	if (info == MPI_INFO_NULL)
		return MPI_SUCCESS;
	char v[MPI_MAX_INFO_VAL + 1];
	int flag, rc = MPI_SUCCESS;
	if (w->hints == MPI_INFO_NULL)
		rc = MPI_Info_create(&w->hints);
	for (size_t k = 0; k < NKEYS && !rc; k++) {
		rc = MPI_Info_get(info, win_keys[k], MPI_MAX_INFO_VAL, v, &flag);
		if (!rc && flag)
			rc = MPI_Info_set(w->hints, win_keys[k], v);
	}
	return rc;
}

static int win_new(void *base, MPI_Aint size, int disp_unit, MPI_Comm comm, int flavor,
		   MPI_Info info, MPI_Win *win, const char *fn)
{
	bcs_need_init(fn);
	struct bcs_comm *uc = bcs_comm_get(comm);
	if (!uc)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	if (uc->rworld)
		return bcs_inter_refuse(comm, fn);
	if (size < 0)
		return bcs_err(comm, MPI_ERR_SIZE, fn);
	if (disp_unit <= 0)
		return bcs_err(comm, MPI_ERR_ARG, fn);
	int h = 1;
	while (h < MAX_WINS && wins[h])
		h++;
	if (h == MAX_WINS)
		return bcs_err(comm, MPI_ERR_INTERN, fn);
	struct win *w = calloc(1, sizeof(*w));
	if (!w)
		return bcs_err(comm, MPI_ERR_NO_MEM, fn);
	int rc = bcs_comm_dup(comm, &w->comm);
	if (rc) {
		free(w);
		return bcs_err(comm, rc, fn);
	}
	struct bcs_comm *c = wc(w);
	w->rank = c->rank;
	w->size = c->size;
	w->base = base;
	w->bytes = size;
	w->disp_unit = disp_unit;
	w->allocated = flavor == MPI_WIN_FLAVOR_ALLOCATE;
	w->flavor = flavor;
	w->excl = -1;
	w->nlreq = w->size < LOCK_HDRS ? w->size : LOCK_HDRS;
	w->lreq = xmalloc((size_t)w->nlreq * sizeof(*w->lreq));
	w->lmsg = xmalloc((size_t)w->nlreq * sizeof(*w->lmsg));
	for (int i = 0; i < w->nlreq; i++)
		w->lreq[i] = MPI_REQUEST_NULL;
	w->sizes = xmalloc((size_t)w->size * sizeof(MPI_Aint));
	w->units = xmalloc((size_t)w->size * sizeof(int));
	w->q = calloc((size_t)w->size, sizeof(struct tq));
	w->shared = calloc((size_t)w->size, 1);
	int mine[3] = {(int)(size & 0x7fffffff), (int)(size >> 31), disp_unit};
	int *all = xmalloc((size_t)w->size * 3 * sizeof(int));
	if (!w->q || !w->shared)
		return bcs_err(comm, MPI_ERR_NO_MEM, fn);
	rc = bcs_allgather_ints(c, mine, 3, all);
	if (rc)
		return bcs_err(comm, rc, fn);
	for (int i = 0; i < w->size; i++) {
		w->sizes[i] = (MPI_Aint)all[3 * i] | ((MPI_Aint)all[3 * i + 1] << 31);
		w->units[i] = all[3 * i + 2];
	}
	free(all);
	for (int i = 0; i < w->nlreq && !rc; i++)
		rc = post_lock_hdr(w, i);
	w->hints = MPI_INFO_NULL;
	if (!rc)
		rc = win_hints(w, info);
	if (rc)
		return bcs_err(comm, rc, fn);
	wins[h] = w;
	bcs_progress_hook = progress;
	c->win = h;
	/* a program's handler for communicators is not one for windows: the
	 * window starts with MPI's default */
	if (!bcs_errh_fits(c->errh, h))
		c->errh = MPI_ERRORS_ARE_FATAL;
	*win = h;
	return MPI_SUCCESS;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		   MPI_Win *win)
{
	if (!base && size > 0)
		return bcs_err(comm, MPI_ERR_BASE, "MPI_Win_create");
	return win_new(base, size, disp_unit, comm, MPI_WIN_FLAVOR_CREATE, info, win,
		       "MPI_Win_create");
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
		     MPI_Win *win)
{
	if (size < 0)
		return bcs_err(comm, MPI_ERR_SIZE, "MPI_Win_allocate");
	/* zeroed, so that what a program sees does not depend on the heap */
	void *p = calloc(1, size ? (size_t)size : 1);
	if (!p)
		return bcs_err(comm, MPI_ERR_NO_MEM, "MPI_Win_allocate");
	int rc = win_new(p, size, disp_unit, comm, MPI_WIN_FLAVOR_ALLOCATE, info, win,
			 "MPI_Win_allocate");
	if (rc) {
		free(p);
		return rc;
	}
	memcpy(baseptr, &p, sizeof(p));
	return MPI_SUCCESS;
}

#define WIN(h, fn)                                                                     \
	bcs_need_init(fn);                                                             \
	struct win *w = win_get(h);                                                    \
	if (!w)                                                                        \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_WIN, fn)

/* ---- dynamic windows: memory attached and detached locally; an origin's
 * target displacements are addresses at the target (MPI_Get_address) */

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
	return win_new(NULL, 0, 1, comm, MPI_WIN_FLAVOR_DYNAMIC, info, win,
		       "MPI_Win_create_dynamic");
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
	WIN(win, "MPI_Win_attach");
	if (!dynamic(w))
		return bcs_err(w->comm, MPI_ERR_RMA_FLAVOR, "MPI_Win_attach: not a dynamic window");
	if (size < 0)
		return bcs_err(w->comm, MPI_ERR_SIZE, "MPI_Win_attach");
	if (!base && size > 0)
		return bcs_err(w->comm, MPI_ERR_BASE, "MPI_Win_attach");
	uint64_t a = (uint64_t)(uintptr_t)base, n = (uint64_t)size;
	for (uint32_t i = 0; i < w->nrg; i++)
		if (n && w->rg[i].len && a < w->rg[i].addr + w->rg[i].len &&
		    w->rg[i].addr < a + n)
			return bcs_err(w->comm, MPI_ERR_RMA_ATTACH,
				       "MPI_Win_attach: overlaps memory already attached");
	if (w->nrg == w->caprg) {
		uint32_t cap = w->caprg ? 2 * w->caprg : 8;
		struct bcs_rma_region *v = realloc(w->rg, cap * sizeof(*v));
		if (!v)
			return bcs_err(w->comm, MPI_ERR_NO_MEM, "MPI_Win_attach");
		w->rg = v;
		w->caprg = cap;
	}
	w->rg[w->nrg++] = (struct bcs_rma_region){a, n};
	return MPI_SUCCESS;
}

int MPI_Win_detach(MPI_Win win, const void *base)
{
	WIN(win, "MPI_Win_detach");
	if (!dynamic(w))
		return bcs_err(w->comm, MPI_ERR_RMA_FLAVOR, "MPI_Win_detach: not a dynamic window");
	uint64_t a = (uint64_t)(uintptr_t)base;
	for (uint32_t i = 0; i < w->nrg; i++)
		if (w->rg[i].addr == a) {
			memmove(&w->rg[i], &w->rg[i + 1], (w->nrg - i - 1) * sizeof(*w->rg));
			w->nrg--;
			return MPI_SUCCESS;
		}
	return bcs_err(w->comm, MPI_ERR_RMA_ATTACH,
		       "MPI_Win_detach: no memory attached at that address");
}

/* ---- shared windows: the segments of a node's ranks, back to back in one
 * memfd that comm's first rank creates and the others map through /proc */

static int map_shared(struct win *w)
{
	struct bcs_comm *c = wc(w);
	int me[3] = {bcs_node_id(), -1, -1}, *all = xmalloc((size_t)w->size * 3 * sizeof(int));
	uint64_t total = 0;
	for (int i = 0; i < w->size; i++)
		total += (uint64_t)w->sizes[i];
	w->shmlen = total ? total : 1;
	if (w->rank == 0) {
		int fd = memfd_create("bcs-mpi-shared-window", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, (off_t)w->shmlen) == 0) {
			me[1] = getpid();
			me[2] = fd;
		} else if (fd >= 0) {
			close(fd);
		}
	}
	int rc = bcs_allgather_ints(c, me, 3, all);
	for (int i = 0; !rc && i < w->size; i++)
		if (all[3 * i] != all[0])
			rc = MPI_ERR_RMA_SHARED; /* not one node: no memory to share */
	if (!rc && all[2] < 0)
		rc = MPI_ERR_NO_MEM;
	int fd = -1;
	if (w->rank == 0) {
		fd = me[2];
	} else if (!rc) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", all[1], all[2]);
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	void *p = MAP_FAILED;
	if (fd >= 0 && !rc)
		p = mmap(NULL, w->shmlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	/* every rank has it mapped (or failed) before the first closes it */
	int ok[1] = {rc ? rc : p == MAP_FAILED ? MPI_ERR_NO_MEM : 0};
	int err = bcs_allgather_ints(c, ok, 1, all);
	for (int i = 0; !err && i < w->size; i++)
		err = all[i];
	if (fd >= 0)
		close(fd);
	free(all);
	if (err) {
		if (p != MAP_FAILED)
			munmap(p, w->shmlen);
		return err;
	}
	w->shm = p;
	uint64_t off = 0;
	for (int i = 0; i < w->rank; i++)
		off += (uint64_t)w->sizes[i];
	w->base = (char *)p + off;
	return MPI_SUCCESS;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
			    void *baseptr, MPI_Win *win)
{
	if (size < 0)
		return bcs_err(comm, MPI_ERR_SIZE, "MPI_Win_allocate_shared");
	int rc = win_new(NULL, size, disp_unit, comm, MPI_WIN_FLAVOR_SHARED, info, win,
			 "MPI_Win_allocate_shared");
	if (rc)
		return rc;
	struct win *w = win_get(*win);
	rc = map_shared(w);
	if (rc) {
		w->base = NULL;
		MPI_Win_free(win);
		return bcs_err(comm, rc, rc == MPI_ERR_RMA_SHARED ?
			       "MPI_Win_allocate_shared: the communicator spans several nodes" :
			       "MPI_Win_allocate_shared");
	}
	memcpy(baseptr, &w->base, sizeof(void *));
	return MPI_SUCCESS;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
	WIN(win, "MPI_Win_shared_query");
	if (w->flavor != MPI_WIN_FLAVOR_SHARED)
		return bcs_err(w->comm, MPI_ERR_RMA_FLAVOR,
			       "MPI_Win_shared_query: not a shared window");
	if (rank == MPI_PROC_NULL) { /* the first segment that has memory */
		rank = 0;
		while (rank < w->size - 1 && w->sizes[rank] == 0)
			rank++;
	}
	if (rank < 0 || rank >= w->size)
		return bcs_err(w->comm, MPI_ERR_RANK, "MPI_Win_shared_query");
	uint64_t off = 0;
	for (int i = 0; i < rank; i++)
		off += (uint64_t)w->sizes[i];
	void *p = (char *)w->shm + off;
	*size = w->sizes[rank];
	*disp_unit = w->units[rank];
	memcpy(baseptr, &p, sizeof(p));
	return MPI_SUCCESS;
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler h)
{
	WIN(win, "MPI_Win_set_errhandler");
	return MPI_Comm_set_errhandler(w->comm, h);
}

int MPI_Win_call_errhandler(MPI_Win win, int code)
{
	WIN(win, "MPI_Win_call_errhandler");
	return MPI_Comm_call_errhandler(w->comm, code);
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *h)
{
	WIN(win, "MPI_Win_get_errhandler");
	return MPI_Comm_get_errhandler(w->comm, h);
}

static bool no_pending(void *arg)
{
	(void)arg;
	reap();
	return npend == 0;
}

int MPI_Win_free(MPI_Win *win)
{
	WIN(*win, "MPI_Win_free");
	for (int i = 0; i < w->size; i++)
		if (w->q[i].lock || w->q[i].b.nrec)
			return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_free");
	if (w->pstate || w->nstart)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_free");
	int rc = bcs_attr_free_all(BCS_ATTR_WIN, *win);
	if (rc)
		return bcs_err(w->comm, rc, "MPI_Win_free");
	/* every lock epoch aimed at us ended before its origin got here (an
	 * unlock waits for our answer): we serve them while we wait */
	rc = MPI_Barrier(w->comm);
	if (rc)
		return rc;
	if (w->nlreq) {
		/* ours now, not progress's (which would post the next ones) */
		int n = w->nlreq;
		MPI_Request *v = xmalloc((size_t)(n + 1) * sizeof(*v));
		w->nlreq = 0;
		for (int i = 0; i < n; i++) {
			v[i] = w->lreq[i];
			MPI_Cancel(&v[i]);
		}
		v[n] = -1;
		wait_reqs(v);
		free(v);
	}
	free(w->lreq);
	free(w->lmsg);
	/* our answers must have left before the memory goes */
	bcs_wait(no_pending, NULL);
	for (int i = 0; i < w->size; i++) {
		bcs_rma_buf_free(&w->q[i].b);
		free(w->q[i].f);
	}
	free(w->q);
	free(w->shared);
	free(w->sizes);
	free(w->units);
	free(w->start);
	free(w->post);
	free(w->phdr);
	free(w->preq);
	free(w->pbody);
	if (w->allocated)
		free(w->base);
	if (w->shm)
		munmap(w->shm, w->shmlen);
	free(w->rg);
	MPI_Comm_free(&w->comm);
	free(w->name);
	if (w->hints != MPI_INFO_NULL)
		MPI_Info_free(&w->hints);
	free(w);
	wins[*win] = NULL;
	*win = MPI_WIN_NULL;
	return MPI_SUCCESS;
}

int MPI_Win_get_attr(MPI_Win win, int keyval, void *val, int *flag)
{
	WIN(win, "MPI_Win_get_attr");
	/* MPI hands back pointers to the values */
	static MPI_Aint size;
	static int unit;
	*flag = 1;
	if (keyval == MPI_WIN_BASE) {
		memcpy(val, &w->base, sizeof(void *));
	} else if (keyval == MPI_WIN_SIZE) {
		size = w->bytes;
		void *p = &size;
		memcpy(val, &p, sizeof(p));
	} else if (keyval == MPI_WIN_DISP_UNIT) {
		unit = w->disp_unit;
		void *p = &unit;
		memcpy(val, &p, sizeof(p));
	} else if (keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL) {
		/* one copy of each window's memory: the unified model */
		static int flavor, model = MPI_WIN_UNIFIED;
		flavor = w->flavor;
		void *p = keyval == MPI_WIN_MODEL ? &model : &flavor;
		memcpy(val, &p, sizeof(p));
	} else {
		return bcs_err(w->comm, bcs_attr_get(BCS_ATTR_WIN, win, keyval, val, flag),
			       "MPI_Win_get_attr");
	}
	return MPI_SUCCESS;
}

int MPI_Win_set_attr(MPI_Win win, int keyval, void *val)
{
	WIN(win, "MPI_Win_set_attr");
	return bcs_err(w->comm, bcs_attr_set(BCS_ATTR_WIN, win, keyval, val), "MPI_Win_set_attr");
}

int MPI_Win_delete_attr(MPI_Win win, int keyval)
{
	WIN(win, "MPI_Win_delete_attr");
	return bcs_err(w->comm, bcs_attr_delete(BCS_ATTR_WIN, win, keyval),
		       "MPI_Win_delete_attr");
}

int MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
	WIN(win, "MPI_Win_get_group");
	return MPI_Comm_group(w->comm, group);
}

int MPI_Win_set_name(MPI_Win win, const char *name)
{
	WIN(win, "MPI_Win_set_name");
	return bcs_err(w->comm, bcs_name_set(&w->name, name), "MPI_Win_set_name");
}

int MPI_Win_get_name(MPI_Win win, char *name, int *len)
{
	WIN(win, "MPI_Win_get_name");
	bcs_name_get(w->name, "", name, len);
	return MPI_SUCCESS;
}

/* ---- operations */

static int add_fetch(struct tq *q, void *addr, int count, MPI_Datatype dt, uint64_t len)
{
	if (q->nf == q->capf) {
		int n = q->capf ? q->capf * 2 : 16;
		struct fetch *v = realloc(q->f, (size_t)n * sizeof(*v));
		if (!v)
			return MPI_ERR_NO_MEM;
		q->f = v;
		q->capf = n;
	}
	/* the result's type may be freed before the epoch ends */
	if (bcs_type_hold(dt))
		return MPI_ERR_TYPE;
	q->f[q->nf++] = (struct fetch){addr, count, dt, len, 0};
	return MPI_SUCCESS;
}

static bool op_ok(int op, int basic)
{
	return op == MPI_REPLACE || op == MPI_NO_OP ||
	       (op >= MPI_MAX && op <= MPI_MINLOC && bcs_op_valid(op, basic));
}

/* Queues one operation for target trank. origin: data sent (put, acc),
 * compare: CAS's comparand, result: where fetched bytes land. */
static int queue_op(uint32_t kind, const void *origin, int ocount, MPI_Datatype odt,
		    const void *compare, void *result, int rcount, MPI_Datatype rdt, int trank,
		    MPI_Aint tdisp, int tcount, MPI_Datatype tdt, MPI_Op op, MPI_Win win,
		    const char *fn)
{
	WIN(win, fn);
	if (trank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (trank < 0 || trank >= w->size)
		return bcs_err(w->comm, MPI_ERR_RANK, fn);
	if (ocount < 0 || tcount < 0 || rcount < 0)
		return bcs_err(w->comm, MPI_ERR_COUNT, fn);
	struct bcs_type *tt = bcs_type_get(tdt);
	struct bcs_type *ot = odt ? bcs_type_get(odt) : NULL;
	struct bcs_type *rt = rdt ? bcs_type_get(rdt) : NULL;
	if (!tt || !tt->committed || (odt && (!ot || !ot->committed)) ||
	    (rdt && (!rt || !rt->committed)))
		return bcs_err(w->comm, MPI_ERR_TYPE, fn);
	long tbytes = (long)tcount * tt->size;
	bool sends = kind != BCS_RMA_GET && !(kind == BCS_RMA_GACC && op == MPI_NO_OP);
	if ((sends && (!ot || (long)ocount * ot->size != tbytes)) ||
	    (kind == BCS_RMA_GET && (long)ocount * ot->size != tbytes) ||
	    (rt && (long)rcount * rt->size != tbytes))
		return bcs_err(w->comm, MPI_ERR_ARG, fn); /* type signatures differ */
	if ((kind == BCS_RMA_ACC || kind == BCS_RMA_GACC) && !op_ok(op, tt->basic))
		return bcs_err(w->comm, MPI_ERR_OP, fn);
	uint32_t nb;
	struct bcs_block *blocks = bcs_rma_blocks(tt, tcount, (long)tdisp * w->units[trank], &nb);
	if (!blocks)
		return bcs_err(w->comm, MPI_ERR_NO_MEM, fn);
	/* a dynamic window's target checks its attached memory itself */
	for (uint32_t i = 0; i < nb; i++)
		if (blocks[i].off < 0 ||
		    (!dynamic(w) && blocks[i].off + blocks[i].len > w->sizes[trank])) {
			free(blocks);
			return bcs_err(w->comm, MPI_ERR_RMA_RANGE, fn);
		}
	struct tq *q = &w->q[trank];
	uint8_t *data = bcs_rma_add(&q->b, kind, op, tt->basic, blocks, nb);
	free(blocks);
	if (!data)
		return bcs_err(w->comm, MPI_ERR_NO_MEM, fn);
	if (kind == BCS_RMA_CAS) {
		bcs_pack(rt, compare, rcount, data);
		bcs_pack(rt, origin, rcount, data + tbytes);
	} else if (sends) {
		bcs_pack(ot, origin, ocount, data);
	} else if (kind == BCS_RMA_GACC) {
		memset(data, 0, (size_t)tbytes);
	}
	int rc = MPI_SUCCESS;
	if (kind == BCS_RMA_GET)
		rc = add_fetch(q, (void *)origin, ocount, odt, (uint64_t)tbytes);
	else if (kind == BCS_RMA_GACC || kind == BCS_RMA_CAS)
		rc = add_fetch(q, result, rcount, rdt, (uint64_t)tbytes);
	return rc ? bcs_err(w->comm, rc, fn) : MPI_SUCCESS;
}

int MPI_Put(const void *origin, int ocount, MPI_Datatype odt, int trank, MPI_Aint tdisp,
	    int tcount, MPI_Datatype tdt, MPI_Win win)
{
	return queue_op(BCS_RMA_PUT, origin, ocount, odt, NULL, NULL, 0, 0, trank, tdisp,
			tcount, tdt, MPI_REPLACE, win, "MPI_Put");
}

int MPI_Get(void *origin, int ocount, MPI_Datatype odt, int trank, MPI_Aint tdisp, int tcount,
	    MPI_Datatype tdt, MPI_Win win)
{
	return queue_op(BCS_RMA_GET, origin, ocount, odt, NULL, NULL, 0, 0, trank, tdisp,
			tcount, tdt, MPI_NO_OP, win, "MPI_Get");
}

int MPI_Accumulate(const void *origin, int ocount, MPI_Datatype odt, int trank,
		   MPI_Aint tdisp, int tcount, MPI_Datatype tdt, MPI_Op op, MPI_Win win)
{
	if (op == MPI_NO_OP)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_OP, "MPI_Accumulate");
	return queue_op(BCS_RMA_ACC, origin, ocount, odt, NULL, NULL, 0, 0, trank, tdisp,
			tcount, tdt, op, win, "MPI_Accumulate");
}

int MPI_Get_accumulate(const void *origin, int ocount, MPI_Datatype odt, void *result,
		       int rcount, MPI_Datatype rdt, int trank, MPI_Aint tdisp, int tcount,
		       MPI_Datatype tdt, MPI_Op op, MPI_Win win)
{
	return queue_op(BCS_RMA_GACC, origin, ocount, op == MPI_NO_OP ? 0 : odt, NULL, result,
			rcount, rdt, trank, tdisp, tcount, tdt, op, win, "MPI_Get_accumulate");
}

int MPI_Fetch_and_op(const void *origin, void *result, MPI_Datatype dt, int trank,
		     MPI_Aint tdisp, MPI_Op op, MPI_Win win)
{
	return queue_op(BCS_RMA_GACC, origin, 1, op == MPI_NO_OP ? 0 : dt, NULL, result, 1, dt,
			trank, tdisp, 1, dt, op, win, "MPI_Fetch_and_op");
}

int MPI_Compare_and_swap(const void *origin, const void *compare, void *result,
			 MPI_Datatype dt, int trank, MPI_Aint tdisp, MPI_Win win)
{
	struct bcs_type *t = bcs_type_get(dt);
	if (!t || !t->predefined)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Compare_and_swap");
	return queue_op(BCS_RMA_CAS, origin, 1, dt, compare, result, 1, dt, trank, tdisp, 1, dt,
			MPI_NO_OP, win, "MPI_Compare_and_swap");
}

/* ---- fence */

int MPI_Win_fence(int assert, MPI_Win win)
{
	(void)assert;
	WIN(win, "MPI_Win_fence");
	int n = w->size, me = w->rank;
	struct hdr *inh = calloc((size_t)n, sizeof(*inh));
	uint8_t **body = calloc((size_t)n, sizeof(*body)), **rep = calloc((size_t)n, sizeof(*rep));
	MPI_Request *r = xmalloc((size_t)(2 * n + 1) * sizeof(*r));
	if (!inh || !body || !rep)
		return bcs_err(w->comm, MPI_ERR_NO_MEM, "MPI_Win_fence");
	int k = 0, rc = MPI_SUCCESS;
	for (int p = 0; p < n && !rc; p++) {
		if (p == me)
			continue;
		struct tq *q = &w->q[p];
		uint64_t len, want;
		void *b = detach(w, q, &len, &want);
		rc = send_hdr(w, p, T_FHDR, (struct hdr){.bytes = len, .reply = want});
		if (!rc && len)
			rc = send_owned(w, p, T_FBODY, b, len);
		else
			free(b);
		rep[p] = xmalloc(want);
		if (!rc && want)
			rc = recv(w, rep[p], want, p, T_FREPLY, &r[n + k++]);
	}
	for (int p = 0, j = 0; p < n && !rc; p++)
		if (p != me)
			rc = recv(w, &inh[p], sizeof(inh[p]), p, T_FHDR, &r[j++]);
	if (rc)
		return bcs_err(w->comm, rc, "MPI_Win_fence");
	int nh = n - 1;
	r[nh] = -1;
	wait_reqs(r);
	int j = 0;
	for (int p = 0; p < n; p++) {
		if (p == me || !inh[p].bytes)
			continue;
		body[p] = xmalloc(inh[p].bytes);
		recv(w, body[p], inh[p].bytes, p, T_FBODY, &r[j++]);
	}
	r[j] = -1;
	wait_reqs(r);
	/* every batch of the epoch is here: applied in origin rank order */
	int err = MPI_SUCCESS;
	for (int o = 0; o < n; o++) {
		if (o == me) {
			err = apply_self(w);
			continue;
		}
		void *a;
		apply(w, body[o], inh[o].bytes, inh[o].reply, &a);
		free(body[o]);
		if (inh[o].reply)
			send_owned(w, o, T_FREPLY, a, inh[o].reply);
		else
			free(a);
	}
	memmove(r, r + n, (size_t)k * sizeof(*r));
	r[k] = -1;
	wait_reqs(r);
	for (int p = 0; p < n; p++) {
		if (p != me) {
			int e = unpack_fetches(w, p, rep[p]);
			if (e && !err)
				err = e;
		}
		free(rep[p]);
	}
	free(inh);
	free(body);
	free(rep);
	free(r);
	return win_err(w, err, "MPI_Win_fence");
}

/* ---- post/start/complete/wait */

/* A group's members as ranks of the window, ascending, without this rank. */
static int group_ranks(struct win *w, MPI_Group group, int **out, int *nout)
{
	int gn;
	const int *gw = bcs_group_world(group, &gn);
	if (!gw)
		return MPI_ERR_GROUP;
	struct bcs_comm *c = wc(w);
	int *v = xmalloc((size_t)(gn ? gn : 1) * sizeof(int)), k = 0;
	for (int i = 0; i < c->size; i++)
		for (int m = 0; m < gn; m++)
			if (gw[m] == c->world[i] && i != w->rank)
				v[k++] = i;
	*out = v;
	*nout = k;
	return MPI_SUCCESS;
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	(void)assert;
	WIN(win, "MPI_Win_post");
	if (w->pstate)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_post");
	free(w->post);
	int rc = group_ranks(w, group, &w->post, &w->npost);
	if (rc)
		return bcs_err(w->comm, rc, "MPI_Win_post");
	int n = w->npost ? w->npost : 1;
	free(w->phdr);
	free(w->preq);
	free(w->pbody);
	w->phdr = calloc((size_t)n, sizeof(*w->phdr));
	w->preq = calloc((size_t)n, sizeof(*w->preq));
	w->pbody = calloc((size_t)n, sizeof(*w->pbody));
	if (!w->phdr || !w->preq || !w->pbody)
		return bcs_err(w->comm, MPI_ERR_NO_MEM, "MPI_Win_post");
	for (int i = 0; i < w->npost && !rc; i++)
		rc = recv(w, &w->phdr[i], sizeof(w->phdr[i]), w->post[i], T_PHDR, &w->preq[i]);
	w->pstate = 1;
	return rc ? bcs_err(w->comm, rc, "MPI_Win_post") : MPI_SUCCESS;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	(void)assert;
	WIN(win, "MPI_Win_start");
	if (w->start)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_start");
	int rc = group_ranks(w, group, &w->start, &w->nstart);
	if (rc)
		return bcs_err(w->comm, rc, "MPI_Win_start");
	return MPI_SUCCESS;
}

int MPI_Win_complete(MPI_Win win)
{
	WIN(win, "MPI_Win_complete");
	if (!w->start)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_complete");
	int n = w->nstart, k = 0, rc = MPI_SUCCESS, err = MPI_SUCCESS;
	MPI_Request *r = xmalloc((size_t)(n + 1) * sizeof(*r));
	uint8_t **rep = calloc((size_t)(n ? n : 1), sizeof(*rep));
	/* operations on our own window (we exposed it too) take effect now */
	if (w->q[w->rank].b.nrec)
		err = apply_self(w);
	for (int i = 0; i < n && !rc; i++) {
		int t = w->start[i];
		uint64_t len, want;
		void *b = detach(w, &w->q[t], &len, &want);
		rc = send_hdr(w, t, T_PHDR, (struct hdr){.bytes = len, .reply = want});
		if (!rc && len)
			rc = send_owned(w, t, T_PBODY, b, len);
		else
			free(b);
		rep[i] = xmalloc(want);
		if (!rc && want)
			rc = recv(w, rep[i], want, t, T_PREPLY, &r[k++]);
	}
	r[k] = -1;
	if (!rc)
		rc = wait_reqs(r);
	for (int i = 0; i < n; i++) {
		int e = rc ? MPI_SUCCESS : unpack_fetches(w, w->start[i], rep[i]);
		if (e && !err)
			err = e;
		free(rep[i]);
	}
	if (!rc)
		rc = err;
	free(rep);
	free(r);
	free(w->start);
	w->start = NULL;
	w->nstart = 0;
	return win_err(w, rc, "MPI_Win_complete");
}

static bool exposure_done(void *arg)
{
	return ((struct win *)arg)->pstate == 3;
}

int MPI_Win_wait(MPI_Win win)
{
	WIN(win, "MPI_Win_wait");
	if (!w->pstate)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_wait");
	serve_exposure(w);
	bcs_wait(exposure_done, w);
	w->pstate = 0;
	return MPI_SUCCESS;
}

int MPI_Win_set_info(MPI_Win win, MPI_Info info)
{
	WIN(win, "MPI_Win_set_info");
	return bcs_err(w->comm, win_hints(w, info), "MPI_Win_set_info");
}

int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
	WIN(win, "MPI_Win_get_info");
	MPI_Info i;
	int rc = MPI_Info_create(&i);
	if (!rc)
		rc = MPI_Info_set(i, "accumulate_ordering", "rar,raw,war,waw");
	if (!rc)
		rc = MPI_Info_set(i, "accumulate_ops", "same_op_no_op");
	char v[MPI_MAX_INFO_VAL + 1];
	for (size_t k = 0; k < NKEYS && !rc && w->hints != MPI_INFO_NULL; k++) {
		int flag;
		rc = MPI_Info_get(w->hints, win_keys[k], MPI_MAX_INFO_VAL, v, &flag);
		if (!rc && flag)
			rc = MPI_Info_set(i, win_keys[k], v);
	}
	if (rc)
		return bcs_err(w->comm, rc, "MPI_Win_get_info");
	*info_used = i;
	return MPI_SUCCESS;
}

int MPI_Win_test(MPI_Win win, int *flag)
{
	WIN(win, "MPI_Win_test");
	if (!w->pstate)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_test");
	serve_exposure(w);
	*flag = bcs_test(exposure_done, w, "MPI_Win_test");
	if (*flag)
		w->pstate = 0;
	return MPI_SUCCESS;
}

/* ---- lock/unlock */

static bool self_lockable(void *arg)
{
	struct win *w = arg;
	return w->excl < 0 && (w->self_lock != MPI_LOCK_EXCLUSIVE) &&
	       (w->self_lock == 0 || w->self_lock == MPI_LOCK_SHARED);
}

static bool self_locked_excl(void *arg)
{
	return ((struct win *)arg)->self_lock == MPI_LOCK_EXCLUSIVE;
}

static int lock_one(struct win *w, int type, int rank, const char *fn)
{
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS; /* MPI-3: a valid target, an epoch of nothing */
	if (rank < 0 || rank >= w->size)
		return bcs_err(w->comm, MPI_ERR_RANK, fn);
	if (w->q[rank].lock)
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, fn);
	w->q[rank].lock = type;
	if (rank == w->rank && type == MPI_LOCK_EXCLUSIVE) {
		/* our own memory: no origin's batch while we hold it; granted
		 * in turn with the other origins' epochs (F_SELF) */
		int rc = send_lock_batch(w, rank, (struct hdr){.flags = F_SELF | F_EXCL}, NULL, 0);
		if (rc)
			return bcs_err(w->comm, rc, fn);
		bcs_wait(self_locked_excl, w);
	} else if (rank == w->rank) {
		/* shared: only an exclusive holder keeps us out; what we do in
		 * the epoch goes through the daemons as any origin's (ship_locked) */
		serve_locks(w);
		bcs_wait(self_lockable, w);
		w->self_lock = type;
	}
	return MPI_SUCCESS;
}

int MPI_Win_lock(int type, int rank, int assert, MPI_Win win)
{
	(void)assert;
	WIN(win, "MPI_Win_lock");
	if (type != MPI_LOCK_SHARED && type != MPI_LOCK_EXCLUSIVE)
		return bcs_err(w->comm, MPI_ERR_LOCKTYPE, "MPI_Win_lock");
	return lock_one(w, type, rank, "MPI_Win_lock");
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
	(void)assert;
	WIN(win, "MPI_Win_lock_all");
	for (int t = 0; t < w->size; t++) {
		int rc = lock_one(w, MPI_LOCK_SHARED, t, "MPI_Win_lock_all");
		if (rc)
			return rc;
	}
	return MPI_SUCCESS;
}

/* Ships the lock batches of the targets marked in `which` (hold: a flush)
 * and waits for every answer. */
static int ship_locked(struct win *w, const char *which, bool hold)
{
	int n = w->size, k = 0, rc = MPI_SUCCESS, err = MPI_SUCCESS;
	MPI_Request *r = xmalloc((size_t)(n + 1) * sizeof(*r));
	uint8_t **rep = calloc((size_t)n, sizeof(*rep));
	int *tgt = xmalloc((size_t)n * sizeof(int));
	if (!rep)
		return MPI_ERR_NO_MEM;
	/* the batches progress shipped for request-based operations go first */
	bcs_wait(flights_done, w);
	for (int t = 0; t < n && !rc; t++) {
		struct tq *q = &w->q[t];
		if (!which[t])
			continue;
		if (t == w->rank && (q->lock == MPI_LOCK_EXCLUSIVE || !q->b.nrec)) {
			/* held exclusively: nothing else applies here meanwhile */
			if (q->b.nrec)
				err = apply_self(w);
			continue;
		}
		/* nothing done and nothing held: the target never hears of it */
		if (!q->b.nrec && !q->held && !hold)
			continue;
		if (!q->b.nrec && hold)
			continue;
		uint64_t len, want;
		void *b = detach(w, q, &len, &want);
		/* to ourselves under our shared lock: in turn with the other
		 * origins' batches, never held (our own lock is the hold) */
		uint32_t flags = (q->lock == MPI_LOCK_EXCLUSIVE ? F_EXCL : 0) |
				 (hold && t != w->rank ? F_HOLD : 0);
		rc = send_lock_batch(w, t, (struct hdr){.bytes = len, .flags = flags, .reply = want},
				     b, len);
		rep[t] = xmalloc(want);
		tgt[k] = t;
		if (!rc)
			rc = recv(w, rep[t], want, t, T_LREPLY, &r[k++]);
		q->held = hold && t != w->rank;
	}
	r[k] = -1;
	if (!rc)
		rc = wait_reqs(r);
	for (int i = 0; i < k && !rc; i++) {
		int e = unpack_fetches(w, tgt[i], rep[tgt[i]]);
		if (e && !err)
			err = e;
	}
	for (int t = 0; t < n; t++)
		free(rep[t]);
	free(rep);
	free(tgt);
	free(r);
	return rc ? rc : err;
}

static int unlock(struct win *w, const char *which, const char *fn)
{
	for (int t = 0; t < w->size; t++)
		if (which[t] && !w->q[t].lock)
			return bcs_err(w->comm, MPI_ERR_RMA_SYNC, fn);
	int rc = ship_locked(w, which, false);
	for (int t = 0; t < w->size; t++)
		if (which[t]) {
			w->q[t].lock = 0;
			w->q[t].held = 0;
		}
	if (which[w->rank]) {
		w->self_lock = 0;
		serve_locks(w); /* what waited for our own lock to go */
	}
	return win_err(w, rc, fn);
}

static int flush(struct win *w, const char *which, const char *fn)
{
	for (int t = 0; t < w->size; t++)
		if (which[t] && !w->q[t].lock)
			return bcs_err(w->comm, MPI_ERR_RMA_SYNC, fn);
	int rc = ship_locked(w, which, true);
	return win_err(w, rc, fn);
}

static int on_one(struct win *w, int rank, int (*fn)(struct win *, const char *, const char *),
		  const char *name)
{
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS; /* its lock epoch had nothing to end or flush */
	if (rank < 0 || rank >= w->size)
		return bcs_err(w->comm, MPI_ERR_RANK, name);
	char *which = calloc((size_t)w->size, 1);
	if (!which)
		return bcs_err(w->comm, MPI_ERR_NO_MEM, name);
	which[rank] = 1;
	int rc = fn(w, which, name);
	free(which);
	return rc;
}

static int on_locked(struct win *w, int (*fn)(struct win *, const char *, const char *),
		     const char *name)
{
	char *which = calloc((size_t)w->size, 1);
	if (!which)
		return bcs_err(w->comm, MPI_ERR_NO_MEM, name);
	for (int t = 0; t < w->size; t++)
		which[t] = w->q[t].lock != 0;
	int rc = fn(w, which, name);
	free(which);
	return rc;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
	WIN(win, "MPI_Win_unlock");
	return on_one(w, rank, unlock, "MPI_Win_unlock");
}

int MPI_Win_unlock_all(MPI_Win win)
{
	WIN(win, "MPI_Win_unlock_all");
	return on_locked(w, unlock, "MPI_Win_unlock_all");
}

int MPI_Win_flush(int rank, MPI_Win win)
{
	WIN(win, "MPI_Win_flush");
	return on_one(w, rank, flush, "MPI_Win_flush");
}

int MPI_Win_flush_all(MPI_Win win)
{
	WIN(win, "MPI_Win_flush_all");
	return on_locked(w, flush, "MPI_Win_flush_all");
}

/* Local completion is remote completion here: the operations wait for it. */
int MPI_Win_flush_local(int rank, MPI_Win win)
{
	return MPI_Win_flush(rank, win);
}

int MPI_Win_flush_local_all(MPI_Win win)
{
	return MPI_Win_flush_all(win);
}

/* One copy of the window: its views need only this rank's loads and stores
 * ordered against the other ranks of a shared window. */
int MPI_Win_sync(MPI_Win win)
{
	WIN(win, "MPI_Win_sync");
	(void)w;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return MPI_SUCCESS;
}

/* ---- request-based operations: only in passive-target epochs. The data
 * of MPI_Rput and MPI_Raccumulate is packed at the call, so their requests
 * complete at once (local completion); a fetch's request completes when
 * its answer is unpacked, progress shipping its batch meanwhile. */

static int rop_check(MPI_Win win, int trank, MPI_Request *req, const char *fn)
{
	WIN(win, fn);
	*req = MPI_REQUEST_NULL;
	if (trank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (trank < 0 || trank >= w->size)
		return bcs_err(w->comm, MPI_ERR_RANK, fn);
	if (!w->q[trank].lock) {
		char msg[160];
		snprintf(msg, sizeof(msg), "%s: no passive-target epoch (MPI_Win_lock or "
			 "MPI_Win_lock_all) at rank %d", fn, trank);
		return bcs_err(w->comm, MPI_ERR_RMA_SYNC, msg);
	}
	return MPI_SUCCESS;
}

static int rop_end(MPI_Win win, int trank, int rc, bool fetch, MPI_Request *req)
{
	if (rc)
		return rc;
	struct win *w = win_get(win);
	int id = bcs_coll_start(w->comm, NULL, NULL);
	if (trank == MPI_PROC_NULL || !fetch) {
		bcs_coll_arm(id, MPI_SUCCESS);
	} else {
		struct tq *q = &w->q[trank];
		q->f[q->nf - 1].req = id;
		q->rq++;
		w->rqs = 1;
	}
	*req = id;
	return MPI_SUCCESS;
}

int MPI_Rput(const void *origin, int ocount, MPI_Datatype odt, int trank, MPI_Aint tdisp,
	     int tcount, MPI_Datatype tdt, MPI_Win win, MPI_Request *req)
{
	int rc = rop_check(win, trank, req, "MPI_Rput");
	if (!rc)
		rc = queue_op(BCS_RMA_PUT, origin, ocount, odt, NULL, NULL, 0, 0, trank, tdisp,
			      tcount, tdt, MPI_REPLACE, win, "MPI_Rput");
	return rop_end(win, trank, rc, false, req);
}

int MPI_Rget(void *origin, int ocount, MPI_Datatype odt, int trank, MPI_Aint tdisp, int tcount,
	     MPI_Datatype tdt, MPI_Win win, MPI_Request *req)
{
	int rc = rop_check(win, trank, req, "MPI_Rget");
	if (!rc)
		rc = queue_op(BCS_RMA_GET, origin, ocount, odt, NULL, NULL, 0, 0, trank, tdisp,
			      tcount, tdt, MPI_NO_OP, win, "MPI_Rget");
	return rop_end(win, trank, rc, true, req);
}

int MPI_Raccumulate(const void *origin, int ocount, MPI_Datatype odt, int trank,
		    MPI_Aint tdisp, int tcount, MPI_Datatype tdt, MPI_Op op, MPI_Win win,
		    MPI_Request *req)
{
	int rc = rop_check(win, trank, req, "MPI_Raccumulate");
	if (!rc && op == MPI_NO_OP)
		rc = bcs_err(MPI_COMM_WORLD, MPI_ERR_OP, "MPI_Raccumulate");
	if (!rc)
		rc = queue_op(BCS_RMA_ACC, origin, ocount, odt, NULL, NULL, 0, 0, trank, tdisp,
			      tcount, tdt, op, win, "MPI_Raccumulate");
	return rop_end(win, trank, rc, false, req);
}

int MPI_Rget_accumulate(const void *origin, int ocount, MPI_Datatype odt, void *result,
			int rcount, MPI_Datatype rdt, int trank, MPI_Aint tdisp, int tcount,
			MPI_Datatype tdt, MPI_Op op, MPI_Win win, MPI_Request *req)
{
	int rc = rop_check(win, trank, req, "MPI_Rget_accumulate");
	if (!rc)
		rc = queue_op(BCS_RMA_GACC, origin, ocount, op == MPI_NO_OP ? 0 : odt, NULL,
			      result, rcount, rdt, trank, tdisp, tcount, tdt, op, win,
			      "MPI_Rget_accumulate");
	return rop_end(win, trank, rc, true, req);
}
