/* XFER-AND-SIGNAL: a transfer into the global memory of a node set, as a
 * tree operation in chunks, with a commit phase when atomic. */
#include "sn_int.h"

#include <errno.h>
#include <string.h>

/* ---------------------------------------------------------- XFER-AND-SIGNAL */

static void xfer_commit_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	int err = sni_rec_outcome(ctx, r, &failed);
	if (err)
		sni_event_fail(ctx, r->local_ev, err, &failed);
	else
		sni_event_signal(ctx, r->local_ev);
}

static void xfer_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	int err = sni_rec_outcome(ctx, r, &failed);
	if (err) {
		sni_event_fail(ctx, r->local_ev, err, &failed);
		return;
	}
	if (!(r->m.flags & SN_F_ATOMIC)) {
		sni_event_signal(ctx, r->local_ev);
		return;
	}
	/* every destination holds the data: now let them see it */
	struct sn_msg c = r->m;
	c.type = SN_MSG_COMMIT;
	c.chunk_len = 0;
	c.total = 0;
	struct rec *cr = sni_root_new(ctx, &c, r->rail, ctx->cfg.timeout_ms, xfer_commit_done, true);
	if (!cr) {
		sni_event_fail(ctx, r->local_ev, -ENOMEM, &failed);
		return;
	}
	cr->local_ev = r->local_ev;
	sni_root_launch(ctx, cr);
}

int sn_xfer(struct sn_ctx *ctx, const struct sn_nodeset *dst, uint64_t dst_off,
	    const void *src, size_t len, unsigned local_ev, unsigned remote_ev, unsigned flags)
{
	int rc;
	if (sn_set_empty(dst))
		return fail(ctx, -EINVAL, "XFER-AND-SIGNAL to an empty node set");
	if (sn_set_span(dst) > ctx->n)
		return fail(ctx, -EINVAL, "XFER-AND-SIGNAL to node %u, beyond the %u nodes",
			    sn_set_span(dst) - 1, ctx->n);
	if ((rc = sni_check_range(ctx, dst_off, len, true)))
		return rc;
	if ((local_ev != SN_NO_EVENT && local_ev >= SN_MAX_EVENTS) ||
	    (remote_ev != SN_NO_EVENT && remote_ev >= SN_MAX_EVENTS))
		return fail(ctx, -EINVAL, "event out of range (max %d)", SN_MAX_EVENTS - 1);

	int rail = sni_pick_rail(ctx, flags);
	struct rail *rl = &ctx->rails[rail];
	struct sn_msg m = {
		.type = SN_MSG_XFER,
		.flags = (uint16_t)((flags & SN_XFER_ATOMIC) ? SN_F_ATOMIC : 0),
		.fanout = ctx->cfg.fanout,
		.event = remote_ev,
		.off = dst_off,
		.total = len,
		.set = *dst,
	};
	/* the tree moves len bytes per member; assume at least 25 MB/s for that */
	uint64_t budget = ctx->cfg.timeout_ms + (uint64_t)len * sn_set_count(dst) / 25000;
	bool self_dest = sn_set_has(dst, ctx->self);
	/* Only a local event or the commit phase of an atomic transfer waits on
	 * the destinations' ACKs; without either nobody would read them. */
	bool ack = local_ev != SN_NO_EVENT || (flags & SN_XFER_ATOMIC);
	if (!ack && len <= SN_INLINE_MAX) {
		/* one message per child with the payload inline: no record at all */
		struct sn_tree_pos pos;
		sni_root_identity(ctx, &m, false);
		if (sn_tree_position(ctx->self, dst, m.fanout, ctx->self, &pos))
			return fail(ctx, -EINVAL, "no tree for this node set");
		m.chunk_len = (uint32_t)len;
		m.budget_ms = (uint32_t)(budget * 3 / 4);
		for (uint32_t i = 0; i < pos.nchildren; i++) {
			if (sni_send_msg(ctx, rail, pos.children[i], &m, src, len, NULL))
				return fail(ctx, -ENOMEM, "out of memory");
			ctx->stats.forwards++;
		}
		if (self_dest && len)
			memmove(ctx->gmem + dst_off, src, len);
		if (self_dest)
			sni_event_signal(ctx, remote_ev);
		return 0;
	}
	struct rec *r = sni_root_new(ctx, &m, rail, budget, xfer_done, ack);
	if (!r)
		return fail(ctx, -ENOMEM, "out of memory");
	r->local_ev = local_ev;

	const uint8_t *from = src;
	if (r->nchildren && len > SN_INLINE_MAX && local_ev == SN_NO_EVENT) {
		/* the caller may reuse src at once: send a private copy */
		r->owned = malloc(len);
		if (!r->owned) {
			r->finished = true;
			sni_rec_release(ctx, r);
			return fail(ctx, -ENOMEM, "out of memory copying %zu bytes", len);
		}
		memcpy(r->owned, src, len);
		from = r->owned;
	}
	if (self_dest && len)
		memmove(ctx->gmem + dst_off, src, len);
	if (self_dest && !(flags & SN_XFER_ATOMIC))
		sni_event_signal(ctx, remote_ev);
	r->local_done = true;

	/* chunks as large as the path allows: a child without RMA gets each
	 * in message-sized pieces (sni_send_msg) */
	size_t chunk = rl->mr ? rl->rma_chunk : rl->max_payload;
	size_t off = 0;
	do {
		m.chunk_off = off;
		m.chunk_len = (uint32_t)(len - off < chunk ? len - off : chunk);
		sni_rec_forward(ctx, r, &m, len ? from + off : NULL);
		off += m.chunk_len;
	} while (off < len);
	sni_rec_try_finish(ctx, r, false);
	return 0;
}
