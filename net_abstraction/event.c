/* Events: what a tree operation signals (or fails) on a member, and what
 * TEST-EVENT takes; the wait for one is sn.c's. */
#include "sn_int.h"

#include <errno.h>

void sni_event_signal(struct sn_ctx *ctx, unsigned ev)
{
	if (ev < SN_MAX_EVENTS)
		ctx->events[ev].signalled++;
}

void sni_event_fail(struct sn_ctx *ctx, unsigned ev, int err,
		    const struct sn_nodeset *failed)
{
	if (ev >= SN_MAX_EVENTS)
		return;
	ctx->events[ev].errors++;
	ctx->events[ev].err = err;
	ctx->events[ev].failed = *failed;
}

int sn_event_signal(struct sn_ctx *ctx, unsigned ev)
{
	if (ev >= SN_MAX_EVENTS)
		return fail(ctx, -EINVAL, "event %u out of range (max %d)", ev, SN_MAX_EVENTS - 1);
	sni_event_signal(ctx, ev);
	return 0;
}

int sn_event_take(struct sn_ctx *ctx, unsigned ev, struct sn_nodeset *failed)
{
	if (ev >= SN_MAX_EVENTS)
		return fail(ctx, -EINVAL, "event %u out of range (max %d)", ev, SN_MAX_EVENTS - 1);
	struct event *e = &ctx->events[ev];
	if (e->errors) {
		e->errors--;
		if (failed)
			*failed = e->failed;
		char list[256];
		sn_set_format(&e->failed, list, sizeof(list));
		return fail(ctx, e->err, "operation on event %u failed: node(s) %s did not confirm",
			    ev, list);
	}
	if (e->signalled > e->consumed) {
		e->consumed++;
		return 1;
	}
	return 0;
}
