/* BCS-MPI in the node daemon, the bottom: a job's bookkeeping (find,
 * create, its ranks' channel areas), sending through the mailboxes,
 * completions published to the ranks, and copying between ranks. */
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

void *bcs_grow(void *p, size_t *cap, size_t need, size_t elem)
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

void bcs_send(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t slice,
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

/* The barriers every local rank entered (UINT32_MAX once the node is done). */
uint32_t bcs_bar_local(const struct bjob *j)
{
	uint32_t m = UINT32_MAX;
	for (uint32_t lr = 0; lr < j->nlocal; lr++)
		if (j->bar_posted[lr] < m)
			m = j->bar_posted[lr];
	return m;
}

void bcs_send_flags(struct nd *nd, uint32_t to, uint32_t type, uint64_t job,
		    uint64_t slice, uint32_t count, uint32_t flags, const void *body,
		    size_t len)
{
	nd->bcs->next_flags = flags;
	bcs_send(nd, to, type, job, slice, count, body, len, NULL, 0);
}

struct bjob *bcs_job_find(struct nd_bcs *b, uint64_t id)
{
	for (struct bjob *j = b->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

bool bcs_job_dead(struct nd_bcs *b, uint64_t id)
{
	for (unsigned i = 0; i < BCS_DEAD_JOBS && i < b->ndead; i++)
		if (b->dead[i] == id)
			return true;
	return false;
}

struct bjob *bcs_job_new(struct nd_bcs *b, uint64_t id)
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
		j->budget[i] = b->slice_budget;
	j->lbudget = b->mem_budget;
	j->next = b->jobs;
	b->jobs = j;
	return j;
}

int bcs_node_of_rank(const struct bjob *j, int32_t rank)
{
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if ((uint32_t)rank >= j->nfirst[k] && (uint32_t)rank < j->nfirst[k] + j->ncount[k])
			return (int)j->nodes[k];
	return -1;
}

struct bcs_area *bcs_area_of(struct bjob *j, uint32_t lr)
{
	return (struct bcs_area *)(j->map + BCS_CHAN_HDR + (uint64_t)lr * BCS_AREA_SIZE);
}

pid_t bcs_pid_of(struct bjob *j, uint32_t lr)
{
	if (!j->job || lr >= j->job->nranks)
		return -1;
	return j->job->ranks[lr].pid;
}

void bcs_complete(struct bjob *j, uint32_t lr, uint32_t req, int32_t src, int32_t tag, int err,
		  uint64_t len)
{
	struct comps *c = &j->comps[lr];
	if (err != BCS_ENOTFOUND)
		j->moved = true; /* an iprobe that found nothing moved nothing */
	c->v = bcs_grow(c->v, &c->cap, c->n + 1, sizeof(*c->v));
	c->v[c->n++] = (struct bcs_comp){.req = req, .src = src, .tag = tag, .err = err,
					 .len = len};
}

/* Completion micro-phase: into the rings, then wake. */
void bcs_publish(struct bjob *j)
{
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		struct comps *c = &j->comps[lr];
		struct bcs_area *a = bcs_area_of(j, lr);
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

int bcs_copy_from(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
	return len == 0 || process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

int bcs_copy_to(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = {(void *)buf, len}, r = {(void *)(uintptr_t)addr, len};
	return len == 0 || process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

struct osend *bcs_osend_take(struct bjob *j, uint32_t lr, uint32_t req, bool unlink)
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

void bcs_recv_done(struct bjob *j, struct xfer *x, int err)
{
	if (!err && x->s->len > x->r->len)
		err = BCS_ETRUNC;
	bcs_complete(j, x->lr, x->r->req, x->s->src, x->s->tag, err, x->total);
}

void bcs_xfer_free(struct xfer *x)
{
	free(x->s);
	free(x->r);
	free(x);
}

/* Reason why on or off for local rank lr of a frozen job: the rank is
 * continued (SIGCONT) when its first reason comes, stopped again when its
 * last goes. True if why changed. */
bool bcs_alone(struct bjob *j, uint32_t lr, uint8_t why, bool on)
{
	if (!j->alone && !(j->alone = calloc(j->nlocal ? j->nlocal : 1, 1)))
		abort();
	uint8_t was = j->alone[lr], now = on ? was | why : was & (uint8_t)~why;
	pid_t pid = bcs_pid_of(j, lr);
	if (now == was || pid <= 0)
		return false;
	j->alone[lr] = now;
	if (!was != !now)
		kill(pid, now ? SIGCONT : SIGSTOP);
	return true;
}

/* The job thawed: its own SIGCONT covers every rank; the reason is gone. */
void bcs_alone_thawed(struct bjob *j, uint32_t lr, uint8_t why)
{
	if (j->alone)
		j->alone[lr] &= (uint8_t)~why;
}

/* Ranks in an MPI call exit with the abort code at once; the others are
 * killed after a second (the job's kill timer, ranks.c). */
void bcs_kill_local(struct bjob *j, int code, const char *why)
{
	if (j->aborted || !j->job)
		return;
	j->aborted = true;
	slog("job %" PRIu64 ": %s; ending its ranks here", j->id, why);
	for (uint32_t lr = 0; j->map && lr < j->nlocal; lr++) {
		struct bcs_area *a = bcs_area_of(j, lr);
		a->abort_code = (uint32_t)(code & 255);
		__atomic_store_n(&a->aborted, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&a->futex, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &a->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	uint64_t at = clock_mono_ns() + 1000000000u;
	if (!j->job->kill_at_ns || at < j->job->kill_at_ns)
		j->job->kill_at_ns = at;
}

int bcs_node_pos(const struct bjob *j, uint32_t node)
{
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->nodes[k] == node)
			return (int)k;
	return -1;
}
