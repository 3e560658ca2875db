/* The network layer: libfabric endpoints (rail.c), the progress engine
 * (progress.c), and the three primitives carried as tree operations
 * (treeop.c); README.md names every file. This one holds the configuration,
 * the accessors, the events and TEST-EVENT. */
#include "sn_int.h"

#include <errno.h>
#include <string.h>

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	unsigned long x = strtoul(v, &end, 10);
	return *end ? dflt : (unsigned)x;
}

void sn_config_defaults(struct sn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->provider = getenv("SN_PROVIDER") ? getenv("SN_PROVIDER") : "tcp;ofi_rxm";
	cfg->sys_provider = getenv("SN_SYS_PROVIDER");
	cfg->gmem_size = 1u << 20;
	cfg->fanout = env_uint("SN_FANOUT", 4);
	cfg->rma = env_uint("SN_RMA", SN_RMA_DEFAULT) != 0;
	cfg->timeout_ms = env_uint("SN_TIMEOUT_MS", 5000);
	cfg->spin_us = env_uint("SN_SPIN_US", 0);
	cfg->chunk_size = env_uint("SN_CHUNK_SIZE", 128 * 1024);
	cfg->rma_chunk_size = env_uint("SN_RMA_CHUNK_SIZE", SN_RMA_CHUNK_DEFAULT);
	cfg->rx_depth = env_uint("SN_RX_DEPTH", 32);
}

const char *sn_strerror(const struct sn_ctx *ctx) { return ctx->err; }
uint32_t sn_node_id(const struct sn_ctx *ctx) { return ctx->self; }
uint32_t sn_node_count(const struct sn_ctx *ctx) { return ctx->n; }
const char *sn_provider_name(const struct sn_ctx *ctx, int rail)
{
	return rail < ctx->nrails ? ctx->provider[rail] : NULL;
}
bool sn_rail_rma(const struct sn_ctx *ctx, int rail)
{
	return rail >= 0 && rail < ctx->nrails && ctx->rails[rail].mr;
}
void *sn_gmem(struct sn_ctx *ctx) { return ctx->gmem; }
size_t sn_gmem_size(const struct sn_ctx *ctx) { return ctx->gmem_size; }
void sn_get_stats(const struct sn_ctx *ctx, struct sn_stats *st) { *st = ctx->stats; }

/* ---------------------------------------------------------------- events */

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

/* ---------------------------------------------------------------- TEST-EVENT */

struct ev_arg {
	unsigned ev;
};

static bool ev_ready(struct sn_ctx *ctx, void *arg)
{
	struct event *e = &ctx->events[((struct ev_arg *)arg)->ev];
	return e->errors || e->signalled > e->consumed;
}

int sn_test_event(struct sn_ctx *ctx, unsigned ev, int timeout_ms, struct sn_nodeset *failed)
{
	if (ev >= SN_MAX_EVENTS)
		return fail(ctx, -EINVAL, "event %u out of range (max %d)", ev, SN_MAX_EVENTS - 1);
	struct ev_arg a = {ev};
	/* one round first: an event that is already there costs no clock read */
	sn_progress(ctx);
	if (timeout_ms != 0 && !ev_ready(ctx, &a))
		sni_wait_until(ctx, ev_ready, &a,
			       timeout_ms < 0 ? UINT64_MAX
					      : now_ns() + (uint64_t)timeout_ms * 1000000ull);
	return sn_event_take(ctx, ev, failed);
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
