/* BCS-MPI in the node daemon: the work the BCS-MPI paper puts on NIC threads.
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

#define BCS_BUDGET (1u << 20)   /* bytes granted per source node and slice */
#define BCS_DEAD_JOBS 64
#define BCS_HASH 4096           /* buckets of the per-job request tables */
/* rounds a node may still have to run and report quiet (resolve) */
#define BCS_QLAG_MAX 16
/* a checkpoint gives up if the job's traffic has not drained by then */
#define BCS_DRAIN_NS (30ull * 1000000000u)

static unsigned hkey(uint32_t a, uint32_t b)
{
	return (a * 2654435761u ^ b * 40503u) % BCS_HASH;
}

enum mtype { M_DESC = 1, M_GRANT = 2, M_DATA = 3, M_ABORT = 4, M_RED = 5 };

/* BCS-MPI's header, first in the body of each of its mailbox messages; the
 * mailbox carries the job and, as its arg, the slice */
struct bhdr {
	uint32_t count; /* entries in the body */
	uint32_t flags;
	uint32_t quiet; /* DESC: the node was quiet for the job at this cover */
	uint32_t ckpt;  /* DESC: CK_* of the checkpoint ckpt_id being drained */
	uint64_t ckpt_id;
};

/* a received message as on_message reads it */
struct mhdr {
	uint32_t type;
	uint32_t len;   /* body bytes after BCS's header */
	uint64_t job;
	uint64_t slice; /* DESC: cover (UINT64_MAX: the node is done with the job) */
	uint32_t count, flags, quiet, ckpt;
	uint64_t ckpt_id;
};

/* A checkpoint drains the job first (nd_bcs_freeze): every node stops
 * collecting its ranks' descriptors and says so (FROZEN) in its DESCs; once
 * it has run the rounds up to every node's frozen cover and no transfer to
 * its ranks is left, it says DRAINED. When every node said DRAINED nothing
 * of the job moves any more: each node seals its ranks' pending operations
 * (chan_ckpt.h) for their images. */
enum { CK_FROZEN = 1, CK_DRAINED = 2, CK_ACTIVE = 4 /* the sender took part already */ };

struct wdesc { /* a send descriptor on the wire */
	int32_t src, dst, tag;
	uint32_t ctx, seq, sreq, flags, pad;
	uint64_t len;
};

struct wgrant {
	int32_t src, dst;
	uint32_t sreq, rreq;
	uint64_t off, len;
	uint32_t last, pad;
};

struct wdata {
	int32_t dst;
	uint32_t rreq;
	uint64_t off;
	uint64_t len;
};

/* a matched message, at the receiver's node */
struct xfer {
	struct bcs_msend *s;
	struct bcs_mrecv *r;
	uint32_t lr;      /* receiving local rank */
	uint64_t total, granted, done;
	struct xfer *next;
};

/* a send waiting for its grants, at the sender's node */
struct osend {
	uint32_t lr, seq;      /* seq: its post order among the rank's sends */
	struct bcs_desc d;     /* as the rank posted it (a checkpoint keeps it) */
	struct osend *next;
};

struct comps {
	struct bcs_comp *v;
	size_t n, cap;
};

struct bjob {
	uint64_t id;
	struct nd_job *job;        /* NULL until launched here */
	int memfd;
	uint8_t *map;
	size_t maplen;
	uint32_t nlocal, first, world;
	uint32_t nnodes_job;
	uint32_t *nodes, *nfirst, *ncount;
	bool active, final_sent, aborted;
	uint64_t *cover;           /* per cluster node index */
	uint64_t round;
	/* wildcard matching at quiescence: per cluster node index, its quiet
	 * reports (bcs_quiet_push); moved: a completion since the last phase */
	uint64_t *qmask;
	/* [node][slice % 64]: the rounds the node still had to run at that
	 * report (mhdr.quiet - 1) */
	uint8_t (*qlag)[64];
	bool moved;
	uint64_t resolved;         /* the last slice wildcards were resolved at */
	/* MPI_Barrier(MPI_COMM_WORLD): every DESC carries how many barriers all
	 * of its node's ranks entered; barrier k ends when every node says k */
	uint32_t *bar_posted, *bar_req; /* per local rank */
	uint32_t *bar_seen;             /* per cluster node index */
	uint32_t bar_done;
	/* MPI_Allreduce(MPI_COMM_WORLD) of small values: each node folds its
	 * ranks' values (rank order) and sends the partial to every node of the
	 * job (M_RED); each folds the partials in node order */
	uint32_t *red_posted, *red_req; /* per local rank */
	uint64_t *red_addr;
	uint8_t *red_val;               /* per local rank, BCS_RED_MAX bytes */
	uint32_t red_len, red_count;
	int red_op, red_basic;
	uint32_t red_done;
	uint8_t *red_part;              /* [node][2][BCS_RED_MAX] */
	uint32_t *red_part_seq;         /* [node][2]: which allreduce it holds */
	uint32_t *red_part_len;
	struct bcs_msend **inc;    /* sends not yet in a round */
	size_t ninc, capinc;
	struct bcs_mrecv **newr;   /* receives and probes not yet in a round */
	uint32_t *newr_lr;
	size_t nnewr, capnewr;
	struct bcs_mq *mq;         /* per local rank */
	struct bcs_mrecv **probes; /* blocking probes waiting, per local rank */
	uint32_t *sseq, *rseq;
	struct osend **osends;     /* hashed by (local rank, request) */
	struct xfer **gq_head, **gq_tail; /* per source node index: to grant */
	uint64_t *budget;          /* per source node index, this slice */
	struct xfer **wait_data;   /* granted, data pending; hashed by (rank, request) */
	struct comps *comps;       /* per local rank, to publish */
	struct wdesc **batch;      /* per cluster node index: sends for it */
	size_t *nbatch, *capbatch;
	/* checkpoint drain (CK_*): frozen for ckpt_id since freeze_ns; fcover:
	 * per cluster node, the cover of a FROZEN DESC (UINT64_MAX: none yet);
	 * drained: per cluster node, it said DRAINED; sealed: every node did,
	 * pend holds each local rank's pending operations in post order */
	bool frozen, sealed;
	bool restoring;            /* restored ranks not all back yet (nd_bcs_restored) */
	uint64_t ckpt_id, freeze_ns;
	uint64_t *fcover;
	bool *drained;
	struct bcs_desc **pend;
	uint32_t *npend;
	char seal_err[160];
	struct bjob *next;
};

struct nd_bcs {
	uint32_t nnodes, self;
	size_t max_msg;               /* a body, BCS's header included */
	uint32_t next_flags;          /* mhdr.flags of the next mb_send */
	uint32_t next_quiet;          /* mhdr.quiet of the next mb_send */
	uint32_t next_ckpt;           /* mhdr.ckpt and ckpt_id of the next mb_send */
	uint64_t next_ckpt_id;
	uint64_t phase_at_ns;         /* when this slice's exchange runs, 0: done */
	uint64_t phase_slice;
	struct bjob *jobs;
	uint64_t dead[BCS_DEAD_JOBS];
	unsigned ndead;
	uint8_t *bounce;
};

static void try_seal(struct bjob *j);

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(p, c * elem);
	if (!q) {
		abort(); /* the daemon cannot go on without its bookkeeping */
	}
	*cap = c;
	return q;
}

/* ---- sending, through the mailboxes (mailbox.c) */

static void mb_send(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t slice,
		    uint32_t count, const void *body, size_t len, const void *body2, size_t len2);

/* The barriers every local rank entered (UINT32_MAX once the node is done). */
static uint32_t bar_local(const struct bjob *j)
{
	uint32_t m = UINT32_MAX;
	for (uint32_t lr = 0; lr < j->nlocal; lr++)
		if (j->bar_posted[lr] < m)
			m = j->bar_posted[lr];
	return m;
}

static void mb_send_flags(struct nd *nd, uint32_t to, uint32_t type, uint64_t job,
			  uint64_t slice, uint32_t count, uint32_t flags, const void *body,
			  size_t len);

static void mb_send(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t slice,
		    uint32_t count, const void *body, size_t len, const void *body2, size_t len2)
{
	struct nd_bcs *b = nd->bcs;
	struct bhdr h = {.count = count, .flags = b->next_flags, .quiet = b->next_quiet,
			 .ckpt = b->next_ckpt, .ckpt_id = b->next_ckpt_id};
	b->next_flags = 0;
	b->next_quiet = 0;
	b->next_ckpt = 0;
	b->next_ckpt_id = 0;
	struct iovec parts[3] = {{&h, sizeof(h)}, {(void *)body, len}, {(void *)body2, len2}};
	nd_mb_send(nd, to, type, job, slice, parts, 3);
}

static void mb_send_flags(struct nd *nd, uint32_t to, uint32_t type, uint64_t job,
			  uint64_t slice, uint32_t count, uint32_t flags, const void *body,
			  size_t len)
{
	nd->bcs->next_flags = flags;
	mb_send(nd, to, type, job, slice, count, body, len, NULL, 0);
}

/* ---- jobs */

static struct bjob *bjob_find(struct nd_bcs *b, uint64_t id)
{
	for (struct bjob *j = b->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

static bool job_dead(struct nd_bcs *b, uint64_t id)
{
	for (unsigned i = 0; i < BCS_DEAD_JOBS && i < b->ndead; i++)
		if (b->dead[i] == id)
			return true;
	return false;
}

static struct bjob *bjob_new(struct nd_bcs *b, uint64_t id)
{
	struct bjob *j = calloc(1, sizeof(*j));
	if (!j)
		abort();
	j->id = id;
	j->memfd = -1;
	uint32_t n = b->nnodes;
	j->cover = calloc(n, sizeof(*j->cover));
	j->qmask = calloc(n, sizeof(*j->qmask));
	j->qlag = calloc(n, sizeof(*j->qlag));
	j->gq_head = calloc(n, sizeof(*j->gq_head));
	j->gq_tail = calloc(n, sizeof(*j->gq_tail));
	j->budget = calloc(n, sizeof(*j->budget));
	j->bar_seen = calloc(n, sizeof(*j->bar_seen));
	j->osends = calloc(BCS_HASH, sizeof(*j->osends));
	j->wait_data = calloc(BCS_HASH, sizeof(*j->wait_data));
	j->batch = calloc(n, sizeof(*j->batch));
	j->nbatch = calloc(n, sizeof(*j->nbatch));
	j->capbatch = calloc(n, sizeof(*j->capbatch));
	j->fcover = calloc(n, sizeof(*j->fcover));
	j->drained = calloc(n, sizeof(*j->drained));
	if (!j->fcover || !j->drained || !j->cover || !j->qmask || !j->qlag || !j->gq_head || !j->gq_tail || !j->budget || !j->batch || !j->nbatch ||
	    !j->capbatch || !j->bar_seen || !j->osends || !j->wait_data)
		abort();
	for (uint32_t i = 0; i < n; i++)
		j->budget[i] = BCS_BUDGET;
	j->next = b->jobs;
	b->jobs = j;
	return j;
}

static int node_of_rank(const struct bjob *j, int32_t rank)
{
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if ((uint32_t)rank >= j->nfirst[k] && (uint32_t)rank < j->nfirst[k] + j->ncount[k])
			return (int)j->nodes[k];
	return -1;
}

static struct bcs_area *area(struct bjob *j, uint32_t lr)
{
	return (struct bcs_area *)(j->map + BCS_CHAN_HDR + (uint64_t)lr * BCS_AREA_SIZE);
}

static pid_t pid_of(struct bjob *j, uint32_t lr)
{
	if (!j->job || lr >= j->job->nranks)
		return -1;
	return j->job->ranks[lr].pid;
}

static void complete(struct bjob *j, uint32_t lr, uint32_t req, int32_t src, int32_t tag, int err,
		     uint64_t len)
{
	struct comps *c = &j->comps[lr];
	if (err != BCS_ENOTFOUND)
		j->moved = true; /* an iprobe that found nothing moved nothing */
	c->v = grow(c->v, &c->cap, c->n + 1, sizeof(*c->v));
	c->v[c->n++] = (struct bcs_comp){.req = req, .src = src, .tag = tag, .err = err,
					 .len = len};
}

/* Completion micro-phase: into the rings, then wake. */
static void publish(struct bjob *j)
{
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct comps *c = &j->comps[lr];
		struct bcs_area *a = area(j, lr);
		bool wake = __atomic_load_n(&a->want_room, __ATOMIC_ACQUIRE);
		size_t k = 0;
		uint32_t head = a->comp_head;
		uint32_t tail = __atomic_load_n(&a->comp_tail, __ATOMIC_ACQUIRE);
		while (k < c->n && head - tail < BCS_COMP_RING) {
			a->comp[head % BCS_COMP_RING] = c->v[k++];
			head++;
		}
		if (k) {
			__atomic_store_n(&a->comp_head, head, __ATOMIC_RELEASE);
			memmove(c->v, c->v + k, (c->n - k) * sizeof(*c->v));
			c->n -= k;
			wake = true;
		}
		if (wake) {
			__atomic_fetch_add(&a->futex, 1, __ATOMIC_RELEASE);
			syscall(SYS_futex, &a->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		}
	}
}

/* ---- data movement */

static int copy_from(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
	return len == 0 || process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int copy_to(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = {(void *)buf, len}, r = {(void *)(uintptr_t)addr, len};
	return len == 0 || process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static struct osend *osend_take(struct bjob *j, uint32_t lr, uint32_t req, bool unlink)
{
	for (struct osend **pp = &j->osends[hkey(lr, req)]; *pp; pp = &(*pp)->next)
		if ((*pp)->lr == lr && (*pp)->d.req == req) {
			struct osend *o = *pp;
			if (unlink)
				*pp = o->next;
			return o;
		}
	return NULL;
}

static void recv_done(struct bjob *j, struct xfer *x, int err)
{
	if (!err && x->s->len > x->r->len)
		err = BCS_ETRUNC;
	complete(j, x->lr, x->r->req, x->s->src, x->s->tag, err, x->total);
}

static void xfer_free(struct xfer *x)
{
	free(x->s);
	free(x->r);
	free(x);
}

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
				struct osend *o = osend_take(j, slr, x->s->sreq, false);
				int err = o ? 0 : BCS_EFAULT;
				for (uint64_t d = 0; !err && d < chunk;) {
					size_t n = chunk - d > b->max_msg ? b->max_msg : chunk - d;
					if (copy_from(pid_of(j, slr), o->d.addr + off + d, b->bounce, n) < 0 ||
					    copy_to(pid_of(j, x->lr), x->r->addr + off + d, b->bounce, n) < 0)
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
						osend_take(j, slr, x->s->sreq, true);
						complete(j, slr, o->d.req, x->s->dst, x->s->tag, 0, o->d.len);
						free(o);
					}
					recv_done(j, x, err);
				}
			} else {
				g[ng++] = (struct wgrant){.src = x->s->src, .dst = x->s->dst,
							  .sreq = x->s->sreq, .rreq = x->r->req,
							  .off = off, .len = chunk, .last = last};
				if (ng == maxg) {
					mb_send(nd, node, M_GRANT, j->id, 0, (uint32_t)ng, g,
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
				xfer_free(x);
			} else if (x->total == 0) {
				recv_done(j, x, 0);
				xfer_free(x);
			} else {
				unsigned h = hkey((uint32_t)x->s->dst, x->r->req);
				x->next = j->wait_data[h];
				j->wait_data[h] = x;
			}
		}
		if (ng)
			mb_send(nd, node, M_GRANT, j->id, 0, (uint32_t)ng, g, ng * sizeof(*g), NULL, 0);
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
		complete(j, lr, p->req, s->src, s->tag, 0, s->len);
		*pp = p->next;
		free(p);
	}
}

/* Barrier k of MPI_COMM_WORLD ends once every node of the job reported k. */
static void barriers(struct bjob *j, uint32_t self)
{
	if (!j->job || !j->map || !j->nnodes_job)
		return;
	j->bar_seen[self] = bar_local(j);
	uint32_t all = UINT32_MAX;
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->bar_seen[j->nodes[k]] < all)
			all = j->bar_seen[j->nodes[k]];
	for (; j->bar_done < all && j->bar_done < bar_local(j); j->bar_done++)
		for (uint32_t lr = 0; lr < j->nlocal; lr++)
			complete(j, lr, j->bar_req[lr], -1, -1, 0, 0);
}

static uint32_t red_local(const struct bjob *j)
{
	uint32_t m = UINT32_MAX;
	for (uint32_t lr = 0; lr < j->nlocal; lr++)
		if (j->red_posted[lr] < m)
			m = j->red_posted[lr];
	return m;
}

static int node_pos(const struct bjob *j, uint32_t node)
{
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->nodes[k] == node)
			return (int)k;
	return -1;
}

static uint8_t *red_slot(struct bjob *j, int pos, uint32_t seq)
{
	return j->red_part + ((size_t)pos * 2 + seq % 2) * BCS_RED_MAX;
}

/* Allreduce number red_done+1: this node's partial out once every local
 * rank entered it, the result in once every node's partial is here. */
static void reduces(struct nd *nd, struct bjob *j)
{
	if (!j->job || !j->map || !j->nnodes_job || !j->red_part)
		return;
	uint32_t k = j->red_done + 1;
	int self = node_pos(j, nd->bcs->self);
	if (self < 0 || red_local(j) < k)
		return;
	if (j->red_part_seq[self * 2 + k % 2] != k) {
		/* fold the local values in rank order: x0 op (x1 op ...) */
		uint8_t *acc = red_slot(j, self, k);
		memcpy(acc, j->red_val + (j->nlocal - 1) * BCS_RED_MAX, j->red_len);
		for (int lr = (int)j->nlocal - 2; lr >= 0; lr--)
			bcs_op_apply(j->red_op, j->red_basic, j->red_val + (size_t)lr * BCS_RED_MAX,
				     acc, j->red_count);
		j->red_part_seq[self * 2 + k % 2] = k;
		j->red_part_len[self * 2 + k % 2] = j->red_len;
		for (uint32_t n = 0; n < j->nnodes_job; n++)
			if ((int)n != self)
				mb_send(nd, j->nodes[n], M_RED, j->id, k, j->red_len, acc, j->red_len,
					NULL, 0);
	}
	for (uint32_t n = 0; n < j->nnodes_job; n++)
		if (j->red_part_seq[n * 2 + k % 2] != k)
			return; /* a node's partial is still on its way */
	uint8_t res[BCS_RED_MAX];
	int err = 0;
	memcpy(res, red_slot(j, (int)j->nnodes_job - 1, k), j->red_len);
	for (int n = (int)j->nnodes_job - 2; n >= 0; n--) {
		if (j->red_part_len[n * 2 + k % 2] != j->red_len)
			err = BCS_EFAULT; /* the ranks disagree on the count or type */
		bcs_op_apply(j->red_op, j->red_basic, red_slot(j, n, k), res, j->red_count);
	}
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		int e = err ? err : copy_to(pid_of(j, lr), j->red_addr[lr], res, j->red_len) < 0
					    ? BCS_EFAULT : 0;
		complete(j, lr, j->red_req[lr], -1, -1, e, j->red_len);
	}
	j->red_done = k;
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
				complete(j, lr, r->req, s ? s->src : -1, s ? s->tag : -1,
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

/* Ranks in an MPI call exit with the abort code at once; the others are
 * killed after a second (the job's kill timer, ranks.c). */
static void kill_local(struct bjob *j, int code, const char *why)
{
	if (j->aborted || !j->job)
		return;
	j->aborted = true;
	slog("job %" PRIu64 ": %s; ending its ranks here", j->id, why);
	for (uint32_t lr = 0; j->map && lr < j->nlocal; lr++) {
		struct bcs_area *a = area(j, lr);
		a->abort_code = (uint32_t)(code & 255);
		__atomic_store_n(&a->aborted, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&a->futex, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &a->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	uint64_t at = clock_mono_ns() + 1000000000u;
	if (!j->job->kill_at_ns || at < j->job->kill_at_ns)
		j->job->kill_at_ns = at;
}

static void abort_job(struct nd *nd, struct bjob *j, uint32_t rank, int code)
{
	char why[96];
	snprintf(why, sizeof(why), "rank %u called MPI_Abort (%d)", rank, code);
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->nodes[k] != nd->bcs->self)
			mb_send(nd, j->nodes[k], M_ABORT, j->id, rank, (uint32_t)code & 255, NULL, 0,
				NULL, 0);
	kill_local(j, code, why);
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
		struct bcs_area *a = area(j, lr);
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
				    copy_from(pid_of(j, lr), d.addr, j->red_val + lr * BCS_RED_MAX,
					      d.len) < 0) {
					complete(j, lr, d.req, -1, -1, BCS_EFAULT, 0);
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
						   ? node_of_rank(j, d.peer) : -1;
				if (node < 0) {
					complete(j, lr, d.req, d.peer, d.tag, BCS_EFAULT, 0);
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
				j->batch[node] = grow(j->batch[node], &j->capbatch[node],
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
				j->newr = grow(j->newr, &j->capnewr, j->nnewr + 1, sizeof(*j->newr));
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
					complete(j, lr, r->req, BCS_ANY_SOURCE, BCS_ANY_TAG,
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
		j->inc = grow(j->inc, &j->capinc, j->ninc + 1, sizeof(*j->inc));
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
				mb_send_flags(nd, node, M_DESC, j->id, cv, (uint32_t)c, bar_local(j),
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
		struct osend *o = osend_take(j, lr, g[i].sreq, false);
		if (!o)
			continue;
		for (uint64_t d = 0; d < g[i].len;) {
			if (used + sizeof(struct wdata) + 64 > room) {
				mb_send(nd, from, M_DATA, j->id, 0, records, b->bounce, used, NULL, 0);
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
			    copy_from(pid_of(j, lr), o->d.addr + g[i].off + d, at, c) < 0)
				memset(at, 0, c); /* the rank is gone: the job dies anyway */
			used += sizeof(w) + c;
			records++;
			d += c;
		}
		if (g[i].last) {
			osend_take(j, lr, g[i].sreq, true);
			complete(j, lr, o->d.req, g[i].dst, 0, 0, o->d.len);
			free(o);
		}
	}
	if (records)
		mb_send(nd, from, M_DATA, j->id, 0, records, b->bounce, used, NULL, 0);
}

static void on_data(struct bjob *j, uint32_t from, const struct wdata *w, const uint8_t *payload)
{
	/* the head of the source's grant queue may be partly granted */
	struct xfer *h = j->gq_head ? j->gq_head[from] : NULL;
	if (h && h->s->dst == w->dst && h->r->req == w->rreq && w->off + w->len <= h->granted) {
		if (copy_to(pid_of(j, h->lr), h->r->addr + w->off, payload, w->len) == 0)
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
		int err = copy_to(pid_of(j, x->lr), x->r->addr + w->off, payload, w->len);
		x->done += w->len;
		if (x->done >= x->total || err) {
			recv_done(j, x, err ? BCS_EFAULT : 0);
			*pp = x->next;
			xfer_free(x);
		}
		return;
	}
}

static void on_message(struct nd *nd, uint32_t from, const struct mhdr *h, const uint8_t *body)
{
	struct nd_bcs *b = nd->bcs;
	if (job_dead(b, h->job))
		return;
	struct bjob *j = bjob_find(b, h->job);
	if (!j)
		j = bjob_new(b, h->job);
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
		barriers(j, nd->bcs->self);
		try_seal(j);
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
		kill_local(j, (int)h->count, "MPI_Abort on another node");
		break;
	case M_RED: {
		int pos = j->red_part ? node_pos(j, from) : -1;
		if (pos < 0 || h->len > BCS_RED_MAX || h->slice > UINT32_MAX)
			return;
		uint32_t k = (uint32_t)h->slice;
		memcpy(red_slot(j, pos, k), body, h->len);
		j->red_part_seq[pos * 2 + k % 2] = k;
		j->red_part_len[pos * 2 + k % 2] = h->len;
		reduces(nd, j);
		break;
	}
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
		struct bcs_area *a = area(j, lr);
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

/* ---- checkpoint drain */

/* Nothing of the job can move to this node's ranks any more: the rounds ran
 * up to every node's frozen cover (every send is matched or queued) and no
 * match waits for grants or data. */
static bool drained_here(struct bjob *j)
{
	for (uint32_t k = 0; k < j->nnodes_job; k++) {
		uint32_t n = j->nodes[k];
		if (j->cover[n] == UINT64_MAX)
			continue; /* done with the job: it sends nothing more */
		if (j->fcover[n] == UINT64_MAX || j->round < j->fcover[n])
			return false;
	}
	if (j->ninc || j->nnewr)
		return false;
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->gq_head[j->nodes[k]])
			return false;
	for (unsigned h = 0; h < BCS_HASH; h++)
		if (j->wait_data[h])
			return false;
	return true;
}

/* a pending operation and its post order, while sealing */
struct spend {
	uint32_t seq;
	struct bcs_desc d;
};

static int spend_cmp(const void *a, const void *b)
{
	const struct spend *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void spend_add(struct spend **v, size_t *n, size_t *cap, uint32_t seq,
		      struct bcs_desc d)
{
	*v = grow(*v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = (struct spend){.seq = seq, .d = d};
}

static void spend_recv(struct spend **v, size_t *n, size_t *cap, const struct bcs_mrecv *r)
{
	spend_add(v, n, cap, r->seq,
		  (struct bcs_desc){.op = r->op, .req = r->req, .peer = r->src, .tag = r->tag,
				    .ctx = r->ctx, .addr = r->addr, .len = r->len});
}

/* Each local rank's pending operations, in the order it posted them: sends
 * (not matched, so not granted), receives and blocking probes (not
 * matched), then the barrier or allreduce it waits in. */
static void seal(struct bjob *j)
{
	publish(j); /* what completed goes into the rings first */
	j->pend = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->pend));
	j->npend = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->npend));
	if (!j->pend || !j->npend)
		abort();
	struct spend *sv = NULL, *rv = NULL;
	size_t scap = 0, rcap = 0;
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		if (j->comps[lr].n)
			snprintf(j->seal_err, sizeof(j->seal_err),
				 "rank %u left more than %u completions unconsumed", j->first + lr,
				 BCS_COMP_RING);
		size_t ns = 0, nr = 0;
		for (unsigned h = 0; h < BCS_HASH; h++)
			for (struct osend *o = j->osends[h]; o; o = o->next)
				if (o->lr == lr)
					spend_add(&sv, &ns, &scap, o->seq, o->d);
		for (struct bcs_mrecv *r = j->mq[lr].phead; r; r = r->next)
			spend_recv(&rv, &nr, &rcap, r);
		for (struct bcs_mrecv *r = j->probes[lr]; r; r = r->next)
			spend_recv(&rv, &nr, &rcap, r);
		for (size_t i = 0; i < j->nnewr; i++)
			if (j->newr_lr[i] == lr)
				spend_recv(&rv, &nr, &rcap, j->newr[i]);
		qsort(sv, ns, sizeof(*sv), spend_cmp);
		qsort(rv, nr, sizeof(*rv), spend_cmp);
		struct bcs_desc *p = malloc((ns + nr + 3) * sizeof(*p));
		if (!p)
			abort();
		size_t n = 0;
		if (j->active)
			p[n++] = (struct bcs_desc){.op = BCS_OP_INIT};
		for (size_t i = 0; i < ns; i++)
			p[n++] = sv[i].d;
		for (size_t i = 0; i < nr; i++)
			p[n++] = rv[i].d;
		if (j->bar_posted[lr] > j->bar_done)
			p[n++] = (struct bcs_desc){.op = BCS_OP_BARRIER, .req = j->bar_req[lr]};
		if (j->red_posted[lr] > j->red_done)
			p[n++] = (struct bcs_desc){.op = BCS_OP_ALLREDUCE, .req = j->red_req[lr],
						   .peer = j->red_op, .tag = j->red_basic,
						   .ctx = j->red_count, .addr = j->red_addr[lr],
						   .len = j->red_len};
		j->pend[lr] = p;
		j->npend[lr] = (uint32_t)n;
	}
	free(sv);
	free(rv);
	j->sealed = true;
}

/* The sealed operations go (the checkpoint is over, or the job). */
static void free_pend(struct bjob *j)
{
	for (uint32_t lr = 0; j->pend && lr < j->nlocal; lr++)
		free(j->pend[lr]);
	free(j->pend);
	free(j->npend);
	j->pend = NULL;
	j->npend = NULL;
}

/* Sealed once every node of the job said DRAINED (this one included). */
static void try_seal(struct bjob *j)
{
	if (!j->frozen || j->sealed || !j->job || !j->map)
		return;
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (!j->drained[j->nodes[k]] && j->cover[j->nodes[k]] != UINT64_MAX)
			return;
	seal(j);
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
		/* rounds not run yet (other nodes' DESCs late, as under load) */
		uint8_t lag = j->round + 1 < slice ? (uint8_t)(slice - 1 - j->round) : 0;
		uint32_t ck = 0;
		if (j->frozen) {
			if (j->fcover[b->self] == UINT64_MAX)
				j->fcover[b->self] = slice;
			if (drained_here(j))
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
		barriers(j, b->self);
		reduces(nd, j);
		try_seal(j);
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
			publish(j); /* sealed: its rings are as its images keep them */
	}
	if (!any)
		return; /* no ranks here: no exchange to run this slice */
	b->phase_slice = nd->slice;
	b->phase_at_ns = clock_mono_ns() + (uint64_t)nd->conf.timeslice_us * 1000u / 4;
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

int nd_bcs_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k)
{
	struct nd_bcs *b = nd->bcs;
	const Storm__Cl__Launch *L = cmd->launch;
	if (!b)
		return -1;
	struct bjob *j = bjob_find(b, job->id);
	if (!j)
		j = bjob_new(b, job->id);
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
			xfer_free(x);
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
	free(j->red_part);
	free(j->red_part_seq);
	free(j->red_part_len);
	free(j->nbatch);
	free(j->capbatch);
	free_pend(j);
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
			xfer_free(x);
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
				mb_send_flags(nd, j->nodes[k], M_DESC, j->id, UINT64_MAX, 0, UINT32_MAX,
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

/* ---- checkpoints (daemons/node/ckpt.c) */

void nd_bcs_freeze(struct nd *nd, struct nd_job *job, uint64_t ckpt_id)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bjob_find(b, job->id) : NULL;
	if (!j)
		return;
	j->frozen = true;
	j->sealed = false;
	j->ckpt_id = ckpt_id;
	j->freeze_ns = clock_mono_ns();
	j->seal_err[0] = 0;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		j->fcover[i] = UINT64_MAX;
		j->drained[i] = false;
	}
	/* what the drain has to finish (tests check a checkpoint is taken with
	 * a message of many slices on its way) */
	uint64_t left = 0;
	unsigned nx = 0;
	for (uint32_t i = 0; i < b->nnodes; i++)
		for (struct xfer *x = j->gq_head[i]; x; x = x->next, nx++)
			left += x->total - x->done;
	for (unsigned h = 0; h < BCS_HASH; h++)
		for (struct xfer *x = j->wait_data[h]; x; x = x->next, nx++)
			left += x->total - x->done;
	if (j->active)
		slog("job %" PRIu64 ": checkpoint %" PRIu64 ": BCS-MPI frozen with %u transfers "
		       "to this node's ranks, %" PRIu64 " bytes still to move; draining",
		       j->id, ckpt_id, nx, left);
}

int nd_bcs_sealed(struct nd *nd, struct nd_job *job, char *why, size_t len)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bjob_find(b, job->id) : NULL;
	if (!j || !j->map)
		return 1; /* no channel: nothing to drain */
	if (j->aborted) {
		snprintf(why, len, "the job is ending (MPI_Abort)");
		return -1;
	}
	if (j->sealed && j->seal_err[0]) {
		snprintf(why, len, "%s", j->seal_err);
		return -1;
	}
	if (j->sealed) {
		if (j->freeze_ns) {
			slog("job %" PRIu64 ": checkpoint %" PRIu64 ": BCS-MPI drained in %.1f ms",
			       j->id, j->ckpt_id, (double)(clock_mono_ns() - j->freeze_ns) / 1e6);
			j->freeze_ns = 0;
		}
		return 1;
	}
	if (clock_mono_ns() - j->freeze_ns > BCS_DRAIN_NS) {
		uint32_t missing = UINT32_MAX;
		for (uint32_t k = 0; k < j->nnodes_job && missing == UINT32_MAX; k++)
			if (!j->drained[j->nodes[k]] && j->cover[j->nodes[k]] != UINT64_MAX)
				missing = j->nodes[k];
		snprintf(why, len,
			 "the job's BCS-MPI traffic did not drain within %u s (node index %u "
			 "not drained)",
			 (unsigned)(BCS_DRAIN_NS / 1000000000u), missing);
		return -1;
	}
	return 0;
}

void nd_bcs_thaw(struct nd *nd, struct nd_job *job)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bjob_find(b, job->id) : NULL;
	if (!j || !j->frozen)
		return;
	j->frozen = j->sealed = false;
	j->ckpt_id = 0;
	free_pend(j);
}

int nd_bcs_rank_state(struct nd *nd, struct nd_job *job, uint32_t lr, void **buf, size_t *len)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bjob_find(b, job->id) : NULL;
	*buf = NULL;
	*len = 0;
	if (!j || !j->map || !j->sealed || lr >= j->nlocal)
		return 0;
	*len = bcs_ckpt_size(j->npend[lr]);
	*buf = malloc(*len);
	if (!*buf)
		return -ENOMEM;
	struct bcs_ckpt_hdr h = {.rank = j->first + lr, .local = lr, .npend = j->npend[lr],
				 .job = j->id};
	bcs_ckpt_encode(*buf, &h, j->pend[lr], area(j, lr));
	return 0;
}

int nd_bcs_restore_rank(struct nd *nd, struct nd_job *job, uint32_t lr, const void *app,
			size_t app_len, uint64_t start, uint64_t end, uint64_t offset,
			struct ckpt_ext_piece *p, size_t max, char *err, size_t errlen)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bjob_find(b, job->id) : NULL;
	struct bcs_ckpt_view v;
	if (!j || !j->map || lr >= j->nlocal) {
		snprintf(err, errlen, "the job has no BCS-MPI channel here");
		return -ENOENT;
	}
	int rc = bcs_ckpt_decode(app, app_len, &v, err, errlen);
	if (rc)
		return rc;
	if (v.h.rank != j->first + lr) {
		snprintf(err, errlen, "BCS-MPI state of rank %u in the image of rank %u", v.h.rank,
			 j->first + lr);
		return -EINVAL;
	}
	/* the rank mapped its node's whole channel; it uses the header and its
	 * own area, which now lie where this node's channel has them */
	uint64_t at = start + BCS_CHAN_HDR + (uint64_t)v.h.local * BCS_AREA_SIZE;
	if (offset != 0 || end < at + BCS_AREA_SIZE || max < 2) {
		snprintf(err, errlen, "the channel mapping (%#llx-%#llx) does not hold area %u",
			 (unsigned long long)start, (unsigned long long)end, v.h.local);
		return -EINVAL;
	}
	if ((rc = bcs_ckpt_restore_area(area(j, lr), &v, err, errlen)))
		return rc;
	p[0] = (struct ckpt_ext_piece){.addr = start, .len = BCS_CHAN_HDR, .off = 0};
	p[1] = (struct ckpt_ext_piece){.addr = at, .len = BCS_AREA_SIZE,
				       .off = BCS_CHAN_HDR + (uint64_t)lr * BCS_AREA_SIZE};
	return 2;
}

void nd_bcs_restored(struct nd *nd, struct nd_job *job)
{
	struct bjob *j = nd->bcs ? bjob_find(nd->bcs, job->id) : NULL;
	if (j)
		j->restoring = false;
}

int nd_bcs_fd(struct nd *nd, struct nd_job *job)
{
	struct bjob *j = nd->bcs ? bjob_find(nd->bcs, job->id) : NULL;
	return j ? j->memfd : -1;
}
