/* The network layer's public face, on top of the others (README.md names
 * every file): the configuration, the accessors, and the calls that wait
 * (TEST-EVENT, sn_caw, sn_wait_peers, sn_close's drain), driving the
 * progress engine until what they wait for holds. */
#include "sn_int.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
/* the kernel's tcp_info: glibc's ends before tcpi_notsent_bytes */
#include <linux/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

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

/* ms since t, or -1 for never */
static long long ago_ms(uint64_t now, uint64_t t)
{
	return t ? (long long)((now - t) / 1000000u) : -1;
}

/* The kernel's view of the TCP connections that carry traffic with a
 * peer that fell silent: a stream whose retransmission timer has backed
 * off (a loss on a stalled machine waits 0.2, 0.4, 0.8, 1.6 s... before
 * the next try), bytes queued unsent or unacknowledged, or bytes that
 * arrived and sit unread in our socket say which side holds the silence;
 * the provider's counters (sn_peer_describe) cannot. A connection is matched to the
 * peer by its remote address (one we opened); one the peer opened comes
 * from a port of its choosing, so every one from its host is listed (on a
 * virtual cluster, from several peers), and any other that is not idle. */
static bool peer_sockaddr(const struct sn_ctx *ctx, uint32_t node, int rail,
			  struct sockaddr_storage *out)
{
	const struct rail *rl = &ctx->rails[rail];
	size_t alen = rl->alens[node];
	const uint8_t *a = rl->addrs + (size_t)node * SN_ADDR_MAX;
	sa_family_t fam;
	if (alen < sizeof(fam))
		return false;
	memcpy(&fam, a, sizeof(fam));
	if (!((fam == AF_INET && alen >= sizeof(struct sockaddr_in)) ||
	      (fam == AF_INET6 && alen >= sizeof(struct sockaddr_in6))))
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out, a, fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	return true;
}

/* the same host (and, with port, the same port) */
static bool same_sockaddr(const struct sockaddr_storage *a, const struct sockaddr_storage *b,
			  bool port)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return (!port || x->sin_port == y->sin_port) &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return (!port || x->sin6_port == y->sin6_port) &&
	       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
}

static void sockaddr_text(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		port = ntohs(s->sin_port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		port = ntohs(s->sin6_port);
	}
	snprintf(buf, len, "%s:%u", host, port);
}

int sn_peer_tcp_describe(const struct sn_ctx *ctx, uint32_t node, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	/* per rail: the peer's listening address and ours; a connection it
	 * opened reaches ours from its host, at a port of its choosing */
	struct sockaddr_storage want[8], mine[8];
	int nwant = 0;
	for (int i = 0; i < ctx->nrails && nwant < 8 && node < ctx->n; i++)
		if (peer_sockaddr(ctx, node, i, &want[nwant]) &&
		    peer_sockaddr(ctx, ctx->self, i, &mine[nwant]))
			nwant++;
	if (!nwant)
		return snprintf(buf, len, "the rails to it are not over TCP or IP");
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return snprintf(buf, len, "/proc/self/fd: %s", strerror(errno));
	size_t w = 0;
	unsigned idle = 0, shown = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end || fd < 0 || fd == dirfd(d))
			continue;
		int type = 0, proto = 0;
		socklen_t sl = sizeof(type);
		if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &sl) || type != SOCK_STREAM)
			continue;
		sl = sizeof(proto);
		if (getsockopt((int)fd, SOL_SOCKET, SO_PROTOCOL, &proto, &sl) || proto != IPPROTO_TCP)
			continue;
		struct sockaddr_storage local, remote;
		socklen_t ll = sizeof(local), rlen = sizeof(remote);
		if (getsockname((int)fd, (struct sockaddr *)&local, &ll) ||
		    getpeername((int)fd, (struct sockaddr *)&remote, &rlen))
			continue; /* a listener */
		bool ours = false, from_host = false;
		for (int k = 0; k < nwant; k++) {
			ours |= same_sockaddr(&remote, &want[k], true);
			from_host |= same_sockaddr(&local, &mine[k], true) &&
				     same_sockaddr(&remote, &want[k], false);
		}
		struct tcp_info ti;
		sl = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		if (getsockopt((int)fd, IPPROTO_TCP, TCP_INFO, &ti, &sl))
			continue;
		/* not SIOCOUTQNSD for the unsent bytes: valgrind does not know that
		 * ioctl, and warns of it on every call */
		int unread = 0, unacked = 0, unsent = (int)ti.tcpi_notsent_bytes;
		ioctl((int)fd, SIOCINQ, &unread);
		ioctl((int)fd, SIOCOUTQ, &unacked);
		bool busy = unread || unacked || ti.tcpi_backoff || ti.tcpi_retransmits ||
			    ti.tcpi_probes;
		if (!ours && !from_host && !busy) {
			idle++;
			continue;
		}
		if (shown == 6) {
			idle++;
			continue;
		}
		shown++;
		char l[64], r[64];
		sockaddr_text(&local, l, sizeof(l));
		sockaddr_text(&remote, r, sizeof(r));
		int k = snprintf(buf + w, len > w ? len - w : 0,
				 "%sfd %ld %s->%s (%s): unread %d, unacked %d (unsent %d), "
				 "retransmissions %u (%u in all), back-off %u, rto %u ms, "
				 "window probes %u; last data in %u ms ago, ack in %u, data out %u",
				 shown == 1 ? "" : "; ", fd, l, r,
				 ours ? "to it" : from_host ? "from its host" : "not idle",
				 unread, unacked, unsent, ti.tcpi_retransmits, ti.tcpi_total_retrans,
				 ti.tcpi_backoff, ti.tcpi_rto / 1000u, ti.tcpi_probes,
				 ti.tcpi_last_data_recv, ti.tcpi_last_ack_recv, ti.tcpi_last_data_sent);
		if (k < 0)
			break;
		w += (size_t)k;
	}
	closedir(d);
	int k = snprintf(buf + w, len > w ? len - w : 0, "%s%u other connection(s) idle",
			 shown ? "; " : "no connection to it; ", idle);
	return k < 0 ? k : (int)(w + (size_t)k);
}

int sn_peer_describe(const struct sn_ctx *ctx, uint32_t node, char *buf, size_t len)
{
	size_t w = 0;
	uint64_t now = now_ns();
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < ctx->nrails && node < ctx->n; i++) {
		const struct rail *rl = &ctx->rails[i];
		unsigned queued = 0;
		uint64_t oldest = 0;
		for (const struct slot *s = rl->txq_head; s; s = s->next)
			if (s->dest == node) {
				queued++;
				if (s->queued_ns && (!oldest || s->queued_ns < oldest))
					oldest = s->queued_ns;
			}
		char q[64] = "";
		if (oldest)
			snprintf(q, sizeof(q), " (the oldest pushed back %lld ms ago)",
				 ago_ms(now, oldest));
		int k = snprintf(buf + w, len > w ? len - w : 0,
				 "%srail %d: %u sends held by the provider (at most %u), %u queued "
				 "here%s, %llu sent in all; its last message %lld ms ago, our last "
				 "send to it completed %lld ms ago (-1: never)",
				 i ? "; " : "", i, rl->tx_held[node], rl->tx_held_max, queued, q,
				 (unsigned long long)rl->tx_seq[node], ago_ms(now, rl->rx_ns[node]),
				 ago_ms(now, rl->tx_done_ns[node]));
		if (k < 0)
			return k;
		w += (size_t)k;
	}
	return (int)w;
}

/* ---------------------------------------------------------------- open */

/* The layers below call the ones above only through these (struct
 * sni_hooks): set before anything is sent or received. */
int sn_open(const struct sn_config *cfg, struct sn_ctx **out)
{
	int rc = sni_ctx_open(cfg, out);
	if (rc)
		return rc;
	(*out)->hooks = (struct sni_hooks){
		.rec_sent = sni_rec_release,
		.send_failed = sni_rec_child_failed,
		.caw_prepare = sni_caw_member_prepare,
		.caw_decide = sni_caw_member_decide,
		.caw_regrant = sni_caw_grant_waiters,
	};
	return 0;
}

/* ---------------------------------------------------------------- waiting */

/* Drives progress until cond(arg) holds or deadline_ns passes; sleeps on the
 * wait fd rather than spinning, after an optional spin phase. */
static void wait_until(struct sn_ctx *ctx, bool (*cond)(struct sn_ctx *, void *), void *arg,
		       uint64_t deadline_ns)
{
	uint64_t start = now_ns();
	uint64_t spin_until = start + (uint64_t)ctx->cfg.spin_us * 1000;
	bool no_wait_obj = ctx->epfd < 0 || ctx->rails[0].wait_fd < 0;
	uint64_t yield_until = (spin_until > start ? spin_until : start) + SN_YIELD_NS;
	unsigned backoff_us = 1, spins = 0;
	bool spinning = spin_until > start;
	for (;;) {
		sn_progress(ctx);
		if (cond(ctx, arg))
			return;
		/* while busy-polling, read the clock only every 16th round: it
		 * costs about as much as an empty progress round */
		if (spinning && (++spins & 15))
			continue;
		uint64_t t = now_ns();
		if (t >= deadline_ns)
			return;
		if (t < spin_until)
			continue;
		spinning = false;
		if (no_wait_obj && t < yield_until) {
			/* nothing to sleep on: give the core away but look again
			 * soon, before paying for a timed sleep */
			sched_yield();
			continue;
		}
		uint64_t left_ms = (deadline_ns - t) / 1000000 + 1;
		int ms = left_ms > INT32_MAX ? -1 : (int)left_ms;
		int next = sn_next_timeout_ms(ctx);
		if (next >= 0 && (ms < 0 || next < ms))
			ms = next;
		if (no_wait_obj) {
			/* no wait object: back off from 1 µs to 1 ms */
			struct timespec ts = {0, (long)backoff_us * 1000};
			nanosleep(&ts, NULL);
			if (backoff_us < 1000)
				backoff_us *= 2;
			continue;
		}
		if (sn_prepare_wait(ctx))
			continue;
		struct pollfd pfd = {.fd = ctx->epfd, .events = POLLIN};
		poll(&pfd, 1, ms);
	}
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
		wait_until(ctx, ev_ready, &a,
			   timeout_ms < 0 ? UINT64_MAX
					  : now_ns() + (uint64_t)timeout_ms * 1000000ull);
	return sn_event_take(ctx, ev, failed);
}


static bool all_known(struct sn_ctx *ctx, void *arg)
{
	(void)arg;
	return sn_peers_known(ctx) == ctx->n;
}

int sn_wait_peers(struct sn_ctx *ctx, unsigned timeout_ms)
{
	wait_until(ctx, all_known, NULL, now_ns() + (uint64_t)timeout_ms * 1000000ull);
	if (all_known(ctx, NULL))
		return 0;
	uint32_t i = 0;
	while (i < ctx->n && ctx->rails[0].peers[i] != FI_ADDR_NOTAVAIL &&
	       (ctx->nrails < 2 || ctx->rails[1].peers[i] != FI_ADDR_NOTAVAIL))
		i++;
	return fail(ctx, -ETIMEDOUT, "node %u's fabric address did not arrive in %u ms", i,
		    timeout_ms);
}

static bool drained(struct sn_ctx *ctx, void *arg)
{
	(void)arg;
	if (ctx->tx_outstanding)
		return false;
	for (int i = 0; i < ctx->nrails; i++)
		if (ctx->rails[i].txq_head)
			return false;
	for (struct rec *r = ctx->recs; r; r = r->next)
		if (!r->finished || r->tx_pending)
			return false;
	return !ctx->calls;
}

void sn_close(struct sn_ctx *ctx)
{
	if (!ctx)
		return;
	/* finish what others are waiting on from us: forwards, ACKs, CAW jobs */
	if (ctx->opened) {
		wait_until(ctx, drained, NULL,
			   now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000ull);
		sni_caw_cancel(ctx);
	}
	sni_ctx_free(ctx);
}

void sn_close_now(struct sn_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->opened)
		sni_caw_cancel(ctx);
	sni_ctx_free(ctx);
}

struct caw_wait {
	bool done;
	struct sn_caw_result res;
};

static void caw_wait_fn(void *arg, const struct sn_caw_result *res)
{
	struct caw_wait *w = arg;
	w->done = true;
	w->res = *res;
}

static bool caw_waited(struct sn_ctx *ctx, void *arg)
{
	(void)ctx;
	return ((struct caw_wait *)arg)->done;
}

/* The call sn_caw waits for (its arg); NULL once answered and freed. */
static struct caw_call *caw_call_of(struct sn_ctx *ctx, const void *arg)
{
	struct caw_call *c = ctx->calls;
	while (c && c->arg != arg)
		c = c->next;
	return c;
}

int sn_caw(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off, enum sn_cmp op,
	   uint64_t value, bool do_write, uint64_t write_off, uint64_t write_val,
	   struct sn_nodeset *failed)
{
	struct caw_wait w = {0};
	int rc = sn_caw_start(ctx, set, var_off, op, value, do_write, write_off, write_val,
			      caw_wait_fn, &w);
	if (rc)
		return rc;
	/* every phase has a deadline, so the answer comes; the bound is for
	 * a fabric that stopped making progress at all. A call that waits
	 * behind others that go ahead starts attempts: that is progress. */
	unsigned attempts = 0;
	for (;;) {
		wait_until(ctx, caw_waited, &w, now_ns() + 5ull * ctx->cfg.timeout_ms * 1000000ull);
		const struct caw_call *c = caw_call_of(ctx, &w);
		if (w.done || !c || c->sm.attempt == attempts)
			break;
		attempts = c->sm.attempt;
	}
	if (!w.done) {
		struct caw_call *c = caw_call_of(ctx, &w);
		if (c)
			c->fn = NULL; /* the answer, if it comes, finds no one waiting */
		if (failed)
			sn_set_clear(failed);
		return fail(ctx, -ETIMEDOUT, "COMPARE-AND-WRITE: no progress on the fabric");
	}
	if (failed)
		*failed = w.res.failed;
	return w.res.status; /* a failure's reason is in ctx->err already */
}
