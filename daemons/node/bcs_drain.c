/* A checkpoint of a BCS-MPI job: its traffic frozen and drained on every
 * node, then each rank's pending operations sealed for its image, and put
 * back at restore (the protocol: docs/design/checkpoint.md). */
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

/* Nothing of the job can move to this node's ranks any more: the rounds ran
 * up to every node's frozen cover (every send is matched or queued) and no
 * match waits for grants or data. */
bool bcs_drained_here(struct bjob *j)
{
	for (uint32_t k = 0; k < j->nnodes_job; k++) {
		uint32_t n = j->nodes[k];
		if (j->cover[n] == UINT64_MAX)
			continue; /* done with the job: it sends nothing more */
		if (j->fcover[n] == UINT64_MAX || j->round < j->fcover[n])
			return false;
	}
	if (j->ninc || j->nnewr || j->norders || j->nwr)
		return false;
	/* no image may hold a rank's endpoint: each closes it once asked
	 * (bcs_rank_close), at its next MPI call if it computes */
	for (uint32_t lr = 0; j->map && lr < j->nlocal; lr++)
		if (bcs_ep_held(__atomic_load_n(&bcs_area_of(j, lr)->ep_state, __ATOMIC_ACQUIRE)) &&
		    bcs_pid_of(j, lr) > 0)
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
	bool cancel; /* a send the rank asked to cancel */
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
	*v = bcs_grow(*v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = (struct spend){.seq = seq, .d = d};
}

static void spend_send(struct spend **v, size_t *n, size_t *cap, const struct osend *o)
{
	spend_add(v, n, cap, o->seq, o->d);
	(*v)[*n - 1].cancel = o->cancel;
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
	bcs_publish(j); /* what completed goes into the rings first */
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
					spend_send(&sv, &ns, &scap, o);
		for (struct bcs_mrecv *r = j->mq[lr].phead; r; r = r->next)
			spend_recv(&rv, &nr, &rcap, r);
		for (struct bcs_mrecv *r = j->probes[lr]; r; r = r->next)
			spend_recv(&rv, &nr, &rcap, r);
		for (size_t i = 0; i < j->nnewr; i++)
			if (j->newr_lr[i] == lr)
				spend_recv(&rv, &nr, &rcap, j->newr[i]);
		qsort(sv, ns, sizeof(*sv), spend_cmp);
		qsort(rv, nr, sizeof(*rv), spend_cmp);
		size_t nc = 0;
		for (size_t i = 0; i < ns; i++)
			nc += sv[i].cancel;
		for (struct pcancel *k = j->cancels; k; k = k->next)
			nc += !k->send && k->lr == lr;
		struct bcs_desc *p = malloc((ns + nr + nc + 3) * sizeof(*p));
		if (!p)
			abort();
		size_t n = 0;
		if (j->active)
			p[n++] = (struct bcs_desc){.op = BCS_OP_INIT};
		for (size_t i = 0; i < ns; i++)
			p[n++] = sv[i].d;
		for (size_t i = 0; i < nr; i++)
			p[n++] = rv[i].d;
		/* cancels not decided yet: posted again after what they cancel */
		for (size_t i = 0; i < ns; i++)
			if (sv[i].cancel)
				p[n++] = (struct bcs_desc){.op = BCS_OP_CANCEL, .req = sv[i].d.req,
							   .flags = BCS_CANCEL_SEND};
		for (struct pcancel *k = j->cancels; k; k = k->next)
			if (!k->send && k->lr == lr)
				p[n++] = (struct bcs_desc){.op = BCS_OP_CANCEL, .req = k->req};
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
void bcs_free_pend(struct bjob *j)
{
	for (uint32_t lr = 0; j->pend && lr < j->nlocal; lr++)
		free(j->pend[lr]);
	free(j->pend);
	free(j->npend);
	j->pend = NULL;
	j->npend = NULL;
}

/* Sealed once every node of the job said DRAINED (this one included). */
void bcs_try_seal(struct bjob *j)
{
	if (!j->frozen || j->sealed || !j->job || !j->map)
		return;
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (!j->drained[j->nodes[k]] && j->cover[j->nodes[k]] != UINT64_MAX)
			return;
	seal(j);
}

void nd_bcs_freeze(struct nd *nd, struct nd_job *job, uint64_t ckpt_id)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bcs_job_find(b, job->id) : NULL;
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
	for (struct xfer *x = j->lcopy; x; x = x->next, nx++)
		left += x->total - x->done;
	bcs_orders(nd, j); /* the ranks are stopped: the daemon does what they had not begun */
	if (j->active)
		slog("job %" PRIu64 ": checkpoint %" PRIu64 ": BCS-MPI frozen with %u transfers "
		       "to this node's ranks, %" PRIu64 " bytes still to move; draining",
		       j->id, ckpt_id, nx, left);
}

int nd_bcs_sealed(struct nd *nd, struct nd_job *job, char *why, size_t len)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bcs_job_find(b, job->id) : NULL;
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
	struct bjob *j = b ? bcs_job_find(b, job->id) : NULL;
	if (!j || !j->frozen)
		return;
	j->frozen = j->sealed = false;
	j->ckpt_id = 0;
	bcs_free_pend(j);
}

int nd_bcs_rank_state(struct nd *nd, struct nd_job *job, uint32_t lr, void **buf, size_t *len)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bcs_job_find(b, job->id) : NULL;
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
	bcs_ckpt_encode(*buf, &h, j->pend[lr], bcs_area_of(j, lr));
	return 0;
}

int nd_bcs_restore_rank(struct nd *nd, struct nd_job *job, uint32_t lr, const void *app,
			size_t app_len, uint64_t start, uint64_t end, uint64_t offset,
			struct ckpt_ext_piece *p, size_t max, char *err, size_t errlen)
{
	struct nd_bcs *b = nd->bcs;
	struct bjob *j = b ? bcs_job_find(b, job->id) : NULL;
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
	if ((rc = bcs_ckpt_restore_area(bcs_area_of(j, lr), &v, err, errlen)))
		return rc;
	/* a new process: its peers are allowed again (PR_SET_PTRACER is not
	 * in the image) at its first MPI call */
	bcs_area_of(j, lr)->peers_allowed = 0;
	p[0] = (struct ckpt_ext_piece){.addr = start, .len = BCS_CHAN_HDR, .off = 0};
	p[1] = (struct ckpt_ext_piece){.addr = at, .len = BCS_AREA_SIZE,
				       .off = BCS_CHAN_HDR + (uint64_t)lr * BCS_AREA_SIZE};
	return 2;
}

void nd_bcs_restored(struct nd *nd, struct nd_job *job)
{
	struct bjob *j = nd->bcs ? bcs_job_find(nd->bcs, job->id) : NULL;
	if (j)
		j->restoring = false;
}
