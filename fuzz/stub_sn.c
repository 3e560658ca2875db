/* A stand-in for libstormnet under fuzz/mm_state: no fabric, one global
 * memory buffer, events that fire when the harness says so. The MM's code
 * above it runs unchanged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "stub_sn.h"

struct sn_ctx {
	int unused;
};
static struct sn_ctx the_ctx;
struct stub_sn stub;

void stub_sn_reset(size_t gmem_size)
{
	if (stub.gmem_size != gmem_size) {
		free(stub.gmem);
		stub.gmem = calloc(1, gmem_size);
		stub.gmem_size = gmem_size;
	} else { /* the MM reads only its report slots */
		memset(stub.gmem + GM_REPORTS, 0, gmem_size - GM_REPORTS);
	}
	memset(stub.pending, 0, sizeof(stub.pending));
	stub.caw_result = 1;
	stub.fail_events = 0;
	stub.xfers = 0;
}

void sn_config_defaults(struct sn_config *cfg) { memset(cfg, 0, sizeof(*cfg)); }
int sn_open(const struct sn_config *cfg, struct sn_ctx **out)
{
	(void)cfg;
	*out = &the_ctx;
	return 0;
}
const char *sn_open_error(void) { return "stub"; }
void sn_close(struct sn_ctx *ctx) { (void)ctx; }
void sn_close_now(struct sn_ctx *ctx) { (void)ctx; }
const char *sn_strerror(const struct sn_ctx *ctx)
{
	(void)ctx;
	return "stub failure";
}
const char *sn_provider_name(const struct sn_ctx *ctx, int rail)
{
	(void)ctx;
	(void)rail;
	return "stub";
}
bool sn_rail_rma(const struct sn_ctx *ctx, int rail)
{
	(void)ctx;
	(void)rail;
	return false;
}
void *sn_gmem(struct sn_ctx *ctx)
{
	(void)ctx;
	return stub.gmem;
}
int sn_wait_fd(struct sn_ctx *ctx)
{
	(void)ctx;
	return -1;
}
int sn_prepare_wait(struct sn_ctx *ctx)
{
	(void)ctx;
	return 0;
}
int sn_next_timeout_ms(struct sn_ctx *ctx)
{
	(void)ctx;
	return 5;
}
int sn_sleep_limit_ms(struct sn_ctx *ctx, bool busy)
{
	(void)ctx;
	(void)busy;
	return 5;
}

int sn_test_event(struct sn_ctx *ctx, unsigned ev, int timeout_ms, struct sn_nodeset *failed)
{
	(void)timeout_ms;
	return sn_event_take(ctx, ev, failed);
}

int sn_event_take(struct sn_ctx *ctx, unsigned ev, struct sn_nodeset *failed)
{
	(void)ctx;
	if (ev >= STUB_EVENTS || !stub.pending[ev])
		return 0;
	stub.pending[ev]--;
	if (stub.fail_events) {
		stub.fail_events--;
		if (failed) {
			sn_set_clear(failed);
			sn_set_add(failed, 1);
		}
		return -ETIMEDOUT;
	}
	return 1;
}

int sn_xfer(struct sn_ctx *ctx, const struct sn_nodeset *dst, uint64_t dst_off, const void *src,
	    size_t len, unsigned local_ev, unsigned remote_ev, unsigned flags)
{
	(void)ctx;
	(void)remote_ev;
	(void)flags;
	/* what the MM sends must lie inside every node's global memory */
	if (dst_off + len > stub.gmem_size || sn_set_empty(dst))
		abort();
	(void)src;
	stub.xfers++;
	if (local_ev != SN_NO_EVENT && local_ev < STUB_EVENTS)
		stub.pending[local_ev]++;
	return 0;
}

/* COMPARE-AND-WRITEs started and not yet answered: sn_progress answers
 * them with stub.caw_result, as the fabric would on a later turn. */
struct stub_caw {
	struct stub_caw *next;
	sn_caw_fn fn;
	void *arg;
};
static struct stub_caw *cawq;

int sn_caw_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
		 enum sn_cmp op, uint64_t value, bool do_write, uint64_t write_off,
		 uint64_t write_val, sn_caw_fn fn, void *arg)
{
	(void)ctx;
	(void)op;
	(void)value;
	(void)do_write;
	(void)write_off;
	(void)write_val;
	if (var_off + 8 > stub.gmem_size || sn_set_empty(set))
		abort();
	struct stub_caw *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct stub_caw){cawq, fn, arg};
	cawq = c;
	return 0;
}

/* the gathering read: answered as any COMPARE-AND-WRITE, its sum and max 0 */
int sn_caw_gather_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
			enum sn_cmp op, uint64_t value, uint64_t pair_off, sn_caw_fn fn,
			void *arg)
{
	if (pair_off + 16 > stub.gmem_size)
		abort();
	return sn_caw_start(ctx, set, var_off, op, value, false, 0, 0, fn, arg);
}

int sn_progress(struct sn_ctx *ctx)
{
	(void)ctx;
	int n = 0;
	while (cawq) {
		struct stub_caw *c = cawq;
		cawq = c->next;
		struct sn_caw_result res = {.status = stub.caw_result};
		sn_set_clear(&res.failed);
		if (res.status < 0)
			sn_set_add(&res.failed, 1);
		c->fn(c->arg, &res);
		free(c);
		n++;
	}
	return n;
}

int sn_rail_count(const struct sn_ctx *ctx)
{
	(void)ctx;
	return 1;
}
int sn_peer_describe(const struct sn_ctx *ctx, uint32_t node, char *buf, size_t len)
{
	(void)ctx;
	(void)node;
	if (len)
		buf[0] = '\0';
	return 0;
}
int sn_peer_tcp_describe(const struct sn_ctx *ctx, uint32_t node, char *buf, size_t len)
{
	return sn_peer_describe(ctx, node, buf, len);
}
int sn_local_addr(const struct sn_ctx *ctx, int rail, void *buf, size_t *len)
{
	(void)ctx;
	(void)rail;
	(void)buf;
	*len = 0;
	return 0;
}
int sn_peer_addr(struct sn_ctx *ctx, int rail, uint32_t node, const void *addr, size_t len)
{
	(void)ctx;
	(void)rail;
	(void)node;
	(void)addr;
	(void)len;
	return 0;
}
