/* The progress engine: the completion queues, the deadlines of records and
 * calls, and what a caller needs to sleep between progress rounds. */
#include "sn_int.h"

#include <errno.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "bell.h"

/* ---------------------------------------------------------------- progress */

static void check_deadlines(struct sn_ctx *ctx)
{
	sni_caw_backoffs(ctx);
	if (!ctx->recs)
		return; /* the idle case: no clock read on every progress round */
	uint64_t t = now_ns();
	/* finishing one record can free others (a failed ACK cascades), so
	 * rescan from the head after each; every pass finishes one record */
	for (struct rec *r = ctx->recs; r;) {
		if ((!r->finished || r->tomb) && t >= r->deadline_ns) {
			sni_rec_expire(ctx, r);
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
				sni_tx_failed(ctx, s, -(int)ee.err);
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
				sni_tx_done(ctx, s);
			} else {
				sni_handle_rx(ctx, rail, s->buf, ent[i].len);
				sni_post_rx(ctx, rl, s);
			}
		}
		handled += (int)n;
	}
	for (struct slot *s; (s = rl->failq); handled++) {
		rl->failq = s->next;
		sni_tx_failed(ctx, s, s->err);
	}
	sni_tx_flush(ctx, rl);
	return handled;
}

int sn_progress(struct sn_ctx *ctx)
{
	int total = 0;
	ctx->round++;
	sni_caw_serve_deferred(ctx);
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
	if (ctx->cfg.fault_hold_off)
		sni_hold_release(ctx);
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

int sn_next_timeout_ms(struct sn_ctx *ctx)
{
	uint64_t t = now_ns(), best = UINT64_MAX;
	for (struct rec *r = ctx->recs; r; r = r->next) {
		if (!r->finished && r->deadline_ns < best)
			best = r->deadline_ns;
		if (!r->finished && r->eval_deferred)
			best = 0; /* a prepare to evaluate in the next round */
	}
	for (struct caw_call *c = ctx->calls; c; c = c->next) {
		if (c->sm.state == CAW_BACKOFF && c->sm.backoff_until_ns < best)
			best = c->sm.backoff_until_ns;
		if (c->sm.answered && !c->delivered)
			best = 0; /* an answer to hand over */
	}
	int ms = best == UINT64_MAX ? -1
		 : best <= t	     ? 0
				     : (int)((best - t + 999999) / 1000000);
	for (int i = 0; i < ctx->nrails; i++) {
		if (ms < 0 || ms > (int)ctx->rails[i].cm_poll_ms)
			ms = (int)ctx->rails[i].cm_poll_ms;
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
