/* The network layer: libfabric endpoints, the progress engine, and the three
 * primitives carried as tree operations.
 *
 * Every primitive is a tree operation rooted at the node that starts it: a
 * "down" message (a chunk of data, a condition to evaluate, a value to write,
 * a commit) travels from each member to its children in the tree of
 * (root, set, fanout), and each member answers its parent with one ACK that
 * aggregates its subtree (which nodes confirmed, which children did not
 * answer, the AND of the condition). The root completes the operation when
 * every child answered or its deadline passed. See docs/design/network.md. */
#include "sn.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "bell.h"
#include "bootstrap.h"
#include "caw.h"
#include "tree.h"
#include "wire.h"

#define SN_RAILS 2
/* Payloads up to this size travel inside the send slot (one iovec, and the
 * caller's buffer is free at once without a separate copy). */
#define SN_INLINE_MAX 256
/* Per peer, the ranges of transfers sent to it as messages that it may not
 * have handled yet (struct inflight): more are merged into one. */
#define SN_INFLIGHT 4
/* Per peer, how many sends the provider may hold at once, as a share of
 * its transmit queue (struct rail's tx_held): within these bounds. */
#define SN_PEER_TX_MIN 8u
#define SN_PEER_TX_MAX 256u
/* Send slots kept for reuse instead of a malloc/free per message. */
#define SN_SLOT_CACHE 64
/* Without a wait object, poll with sched_yield this long before the nanosleep
 * back-off: a sleep costs the timer slack (~50 µs) even when asked for 1 µs. */
#define SN_YIELD_NS 20000ull

/* A transfer sent to an RMA peer as a message (a small one, or a chunk that
 * overlaps one) that the peer may not have handled yet: [lo, hi) of its
 * global memory, and the message's number (rail.tx_seq). The peer places
 * a message's payload only when it handles it, while an RMA write lands
 * whenever the provider puts it there: a later write into that range could
 * land first and be overwritten by the older bytes. So a chunk that
 * overlaps one goes as a message too (send_msg), ordered behind it. */
struct inflight {
	uint64_t lo, hi, seq;
};

enum slot_kind { SLOT_RX, SLOT_TX };

struct rec;

/* A chunk a relay forwards, copied out of its global memory when its
 * header arrives: the provider may read a send's buffer after the call
 * returned, and once the chunk is placed the node may overwrite what it
 * was sent (the node daemon zeroes a command slot it consumed), so
 * forwarding straight from global memory once sent the children those
 * zeros. An RMA-written chunk may be in place before its header: what a
 * node overwrites must wait for the event or what follows it (the command
 * ring zeroes one command late). Freed when the last send that reads it
 * completes. */
struct fwd_copy {
	unsigned refs;
	uint8_t data[];
};

struct slot {
	struct fi_context2 fctx; /* must be first: the CQ hands it back */
	enum slot_kind kind;
	int rail;
	/* rx */
	uint8_t *buf;
	size_t size;
	/* tx */
	struct slot *next;   /* pending queue */
	uint64_t queued_ns;  /* when the provider first pushed back */
	int err;             /* failed at once: handled by the next progress round */
	uint32_t dest;
	struct rec *rec;     /* operation this message belongs to, if any */
	struct iovec iov[2];
	void *desc[2];
	size_t niov;
	/* an RMA write of iov[0] into dest's global memory at roff, queued
	 * just before the header that announces it (send_msg) */
	bool write;
	uint64_t roff;
	bool big;            /* counted in its rail's big_tx */
	struct fwd_copy *copy; /* the forwarded chunk it sends from, if any */
	/* header, then an inline payload; not cleared on reuse */
	uint8_t hdr[SN_WIRE_HDR_MAX + SN_INLINE_MAX];
};

struct rail {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int wait_fd;
	/* a provider without a wait descriptor (shm): our doorbell, the peers
	 * to ring once the current flush is through, whether our completion
	 * queue may hold entries we have not read (our own sends complete into
	 * it without a ring), and how many sends wait on a peer to copy them */
	int bell_fd;
	bool *bell_due;
	uint32_t *bell_list, nbell;
	bool cq_dirty;
	/* shm peers' global memory, mapped here at our request (bell.h), so
	 * that a chunk is one plain copy rather than the kernel's
	 * cross-process copy: NULL until given; when we last asked (0: never) */
	uint8_t **map;
	size_t *map_len;
	uint64_t *map_asked_ns;
	uint32_t nmap;
	unsigned bell_rounds;   /* progress rounds since the bell was last read */
	uint32_t big_tx;
	uint64_t big_tx_ns; /* when big_tx last changed */
	fi_addr_t *peers;       /* FI_ADDR_NOTAVAIL: address not known yet */
	uint8_t *addrs;         /* each peer's address in use (SN_ADDR_MAX each) */
	size_t *alens;
	uint8_t *next;          /* a newer address of a peer that restarted */
	size_t *nlens;
	bool *stale;            /* next holds one: swap before use */
	struct slot *rx;        /* rx_depth receive slots */
	uint8_t *rx_mem;
	struct slot *txq_head, *txq_tail; /* not yet accepted by the provider */
	struct slot *failq;     /* refused by the provider, to report as failed */
	uint64_t *tx_seq;       /* per peer: messages queued to it so far */
	uint64_t *placed_seq;   /* per peer: it has handled our messages up to this
				   one (learned from its ACKs) */
	/* per peer: sends the provider accepted and has not completed. A peer
	 * cut off keeps them until its link returns (TCP retransmits for
	 * minutes), and they share one transmit queue: without a bound per
	 * peer, a strobe a slice to a node cut off filled it in ~20 s and
	 * every send to every other node was pushed back, the cluster frozen */
	uint32_t *tx_held, tx_held_max;
	struct inflight (*inflight)[SN_INFLIGHT]; /* per peer, empty: hi == 0 */
	size_t max_payload;     /* of a message: fits a receive buffer */
	size_t rma_chunk;       /* of a chunk written by RMA */
	bool flushing;
	/* RMA writes into the peers' global memory (rma_open) */
	struct fid_mr *mr;      /* our global memory, remote-writable */
	uint64_t mr_key, mr_base; /* what peers write with: address = base + offset */
	bool *rma, *nrma;       /* in use / pending (next) per peer: it has RMA */
	uint64_t *rkey, *rbase, *nrkey, *nrbase;
};

typedef void (*rec_done_fn)(struct sn_ctx *ctx, struct rec *r);

/* One tree operation as seen by one member. */
struct rec {
	struct rec *next;
	struct sn_msg m;        /* the down message's parameters */
	int rail;
	uint32_t parent;        /* UINT32_MAX at the root */
	uint32_t nchildren;
	uint32_t children[SN_MAX_FANOUT];
	uint64_t child_seq[SN_MAX_FANOUT]; /* our last message to each (tx_seq) */
	struct sn_nodeset waiting;  /* children yet to answer */
	struct sn_nodeset ok, suspect;
	int32_t status;         /* 1/0 AND of conditions, or -errno */
	bool in_set, local_done, finished;
	bool local_failed;      /* done here, but without effect: not confirmed */
	bool lock_wait;         /* a CAW prepare queued for a lock here (caw.h) */
	uint64_t wait_mark;     /* locks.releases when it queued */
	uint64_t bytes;         /* XFER bytes placed here */
	uint64_t deadline_ns;
	unsigned tx_pending;
	/* root only */
	rec_done_fn done;
	unsigned local_ev;
	void *owned;            /* private copy of the source, freed at the end */
	struct caw_call *call;  /* the COMPARE-AND-WRITE it is a phase of */
};

/* A COMPARE-AND-WRITE this node coordinates (caw.h has its states). */
struct caw_call {
	struct caw_call *next;
	struct caw_sm sm;
	struct sn_msg m;          /* the prepare's parameters */
	int rail;
	uint32_t lock_id;         /* this attempt's locks on the members */
	uint64_t ticket;          /* its priority, kept across attempts (caw.h) */
	bool leader_locked;       /* this attempt holds the set's lowest node */
	int leader_vote;          /* what the condition gave there */
	unsigned direct_left;     /* direct decisions still out */
	struct sn_nodeset direct_missing;
	sn_caw_fn fn;
	void *arg;
	bool delivered;
};

struct event {
	uint64_t signalled, consumed;
	unsigned errors;
	int err;
	struct sn_nodeset failed;
};

struct sn_ctx {
	struct sn_config cfg;
	char provider[2][64];
	enum { BOOT_DIR, BOOT_STATIC, BOOT_EXTERNAL } boot;
	char bootdir[4096];
	unsigned static_port;
	int nrails;
	struct rail rails[SN_RAILS];
	bool opened; /* every rail up: only then is there anything to drain */
	int epfd;
	int ino_fd;  /* inotify on the bootstrap directory: peers that restart */
	uint8_t *gmem;
	size_t gmem_size;
	int gmem_fd;  /* what shm peers map to write into gmem */
	struct fwd_copy *forwarding; /* set while a relay queues its forwards */
	uint32_t self, n;
	uint32_t next_opid;
	struct rec *recs;
	struct caw_locks locks;   /* this node's, as a member of CAWs */
	uint32_t caw_seq;         /* COMPARE-AND-WRITEs started here: their tickets */
	struct caw_call *calls;   /* the CAWs this node coordinates */
	uint64_t rng;             /* back-off of conflicting CAWs */
	struct event events[SN_MAX_EVENTS];
	struct slot *free_slots; /* cache of SN_SLOT_CACHE send slots at most */
	unsigned nfree_slots;
	uint64_t tx_outstanding; /* sends handed out and not yet completed */
	struct sn_stats stats;
	char err[512];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 3, 4))) static int fail(struct sn_ctx *ctx, int err,
						      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
	return err;
}

static void note(struct sn_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Problems seen while serving others (malformed messages, late answers):
 * logged, never fatal. */
static void note(struct sn_ctx *ctx, const char *fmt, ...)
{
	if (!getenv("SN_DEBUG"))
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sn[%u]: ", ctx->self);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

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

static void event_signal(struct sn_ctx *ctx, unsigned ev)
{
	if (ev < SN_MAX_EVENTS)
		ctx->events[ev].signalled++;
}

static void event_fail(struct sn_ctx *ctx, unsigned ev, int err,
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
	event_signal(ctx, ev);
	return 0;
}

/* ------------------------------------------------------------ global vars */

static int check_range(struct sn_ctx *ctx, uint64_t off, uint64_t len, bool user)
{
	if (off > ctx->gmem_size || len > ctx->gmem_size - off)
		return fail(ctx, -EINVAL,
			    "range [%" PRIu64 ", +%" PRIu64 ") is outside the global memory "
			    "(%zu bytes)", off, len, ctx->gmem_size);
	if (user && off < SN_GMEM_RESERVED && len)
		return fail(ctx, -EINVAL,
			    "offset %" PRIu64 " is in the reserved first %d bytes of global memory",
			    off, SN_GMEM_RESERVED);
	return 0;
}

static int check_var(struct sn_ctx *ctx, uint64_t off)
{
	if (off % 8)
		return fail(ctx, -EINVAL, "global variable offset %" PRIu64 " is not 8-aligned",
			    off);
	return check_range(ctx, off, 8, false);
}

uint64_t sn_var_load(struct sn_ctx *ctx, uint64_t off)
{
	return __atomic_load_n((uint64_t *)(ctx->gmem + off), __ATOMIC_ACQUIRE);
}

void sn_var_store(struct sn_ctx *ctx, uint64_t off, uint64_t value)
{
	__atomic_store_n((uint64_t *)(ctx->gmem + off), value, __ATOMIC_RELEASE);
}

bool sn_cmp_eval(enum sn_cmp op, uint64_t lhs, uint64_t rhs)
{
	switch (op) {
	case SN_EQ: return lhs == rhs;
	case SN_NE: return lhs != rhs;
	case SN_LT: return lhs < rhs;
	case SN_LE: return lhs <= rhs;
	case SN_GT: return lhs > rhs;
	case SN_GE: return lhs >= rhs;
	}
	return false;
}

const char *sn_cmp_name(enum sn_cmp op)
{
	static const char *names[] = {"==", "!=", "<", "<=", ">", ">="};
	return (unsigned)op <= SN_GE ? names[op] : "?";
}

/* ------------------------------------------------------------- transmit */

static void rec_free(struct sn_ctx *ctx, struct rec *r)
{
	for (struct rec **p = &ctx->recs; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	free(r->owned);
	free(r);
}

static void rec_release(struct sn_ctx *ctx, struct rec *r)
{
	if (r->finished && r->tx_pending == 0)
		rec_free(ctx, r);
}

static void txq_push(struct rail *rl, struct slot *s)
{
	s->next = NULL;
	if (rl->txq_tail)
		rl->txq_tail->next = s;
	else
		rl->txq_head = s;
	rl->txq_tail = s;
}

static void tx_failed(struct sn_ctx *ctx, struct slot *s, int err);

/* A chunk straight into dest's global memory. The rail has send-after-write
 * order (rail_open), so the header queued right after it is handled there
 * only once the chunk is in place: nothing waits for this completion but
 * the source buffer. */
static ssize_t rma_write(struct rail *rl, struct slot *s)
{
	struct fi_rma_iov riov = {
		.addr = rl->rbase[s->dest] + s->roff,
		.len = s->iov[0].iov_len,
		.key = rl->rkey[s->dest],
	};
	struct fi_msg_rma msg = {
		.msg_iov = &s->iov[0],
		.desc = &s->desc[0],
		.iov_count = 1,
		.addr = rl->peers[s->dest],
		.rma_iov = &riov,
		.rma_iov_count = 1,
		.context = &s->fctx,
	};
	return fi_writemsg(rl->ep, &msg, 0);
}

static void peer_use(struct sn_ctx *ctx, int rail, uint32_t node);

/* shm moves a message or write of more than this by a copy its receiver
 * makes (the kernel's cross-process copy), and completes the send only when
 * the sender next polls after that copy: the receiver rings the sender back
 * so that it does not sleep on a finished send. */
#define SN_BELL_COPY_MIN 4096
/* progress rounds between looks at the bell when the node does not sleep */
#define SN_BELL_READ_ROUNDS 1024
/* how long we poll every millisecond for such a ring back */
#define SN_BELL_STALL_MS 100

static void bell_mark(struct rail *rl, uint32_t node)
{
	if (rl->bell_fd < 0 || rl->bell_due[node])
		return;
	rl->bell_due[node] = true;
	rl->bell_list[rl->nbell++] = node;
}

/* One ring per peer per flush, however many messages went to it (a flush
 * follows each message queued outside progress, and ends each progress
 * round). A peer we cannot ring (gone, or not on this host's network
 * namespace) still sees our messages at its next poll (sn_next_timeout_ms). */
static void bell_ring_due(struct rail *rl)
{
	for (uint32_t i = 0; i < rl->nbell; i++) {
		uint32_t node = rl->bell_list[i];
		rl->bell_due[node] = false;
		if (rl->peers[node] != FI_ADDR_NOTAVAIL)
			bell_ring(rl->bell_fd, rl->addrs + (size_t)node * SN_ADDR_MAX,
				  rl->alens[node]);
	}
	rl->nbell = 0;
}

static void sent_big(struct rail *rl, struct slot *s, size_t len)
{
	s->big = rl->bell_fd >= 0 && len > SN_BELL_COPY_MIN;
	if (s->big) {
		rl->big_tx++;
		rl->big_tx_ns = now_ns();
	}
}

static void tx_done(struct sn_ctx *ctx, struct slot *s);

/* An RMA write into a peer's global memory mapped here: copied now, so it
 * is in place before the header queued behind it even leaves. A peer not
 * mapped yet is asked (again after a second without an answer) and written
 * by RMA meanwhile. */
static bool map_write(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	if (!rl->map)
		return false;
	uint8_t *m = rl->map[s->dest];
	if (!m) {
		uint64_t t = now_ns();
		if (!rl->map_asked_ns[s->dest] || t - rl->map_asked_ns[s->dest] > 1000000000ull) {
			rl->map_asked_ns[s->dest] = t;
			int rc = bell_ask_map(rl->bell_fd, rl->addrs + (size_t)s->dest * SN_ADDR_MAX,
					      rl->alens[s->dest]);
			if (rc)
				note(ctx, "asking node %u for its memory: %s", s->dest, strerror(-rc));
		}
		return false;
	}
	/* what the provider's write could reach: past the reserved page */
	size_t len = s->iov[0].iov_len;
	if (s->roff < SN_GMEM_RESERVED || s->roff > rl->map_len[s->dest] ||
	    len > rl->map_len[s->dest] - s->roff)
		return false;
	memcpy(m + s->roff, s->iov[0].iov_base, len);
	/* the header that announces it is sent after this, through memory
	 * the provider orders with its own barriers; this one keeps the
	 * compiler and the CPU from moving the copy past that */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return true;
}

static void map_drop(struct rail *rl, uint32_t node)
{
	if (!rl->map)
		return;
	if (rl->map[node])
		munmap(rl->map[node], rl->map_len[node]);
	rl->map[node] = NULL;
	rl->map_asked_ns[node] = 0;
}

struct bell_ctx {
	struct sn_ctx *ctx;
	struct rail *rl;
};

/* A peer on this host asks for our global memory, or gives us its own.
 * Only a process of our user (or root) may have it, the same as the
 * kernel's cross-process copy demands; an answer counts only from the
 * bell of a peer we asked, so nobody can slip us memory of their own. */
static void on_bell(void *arg, enum bell_kind kind, const char *from, uid_t uid, int fd)
{
	struct bell_ctx *b = arg;
	struct sn_ctx *ctx = b->ctx;
	struct rail *rl = b->rl;
	bool trusted = uid == geteuid() || uid == 0;
	if (kind == BELL_ASK_MAP) {
		if (!trusted) {
			ctx->stats.map_refused++;
			note(ctx, "%s (uid %u) asked for our memory: refused", from, (unsigned)uid);
		}
		else if (ctx->gmem_fd >= 0 && bell_give_map(rl->bell_fd, from, ctx->gmem_fd))
			note(ctx, "cannot answer %s's request for our memory", from);
		return;
	}
	uint32_t node = UINT32_MAX;
	for (uint32_t i = 0; i < ctx->n && node == UINT32_MAX; i++)
		if (rl->map_asked_ns[i] && !rl->map[i] && rl->peers[i] != FI_ADDR_NOTAVAIL &&
		    strnlen((const char *)rl->addrs + (size_t)i * SN_ADDR_MAX, rl->alens[i]) ==
			    strlen(from) &&
		    !memcmp(rl->addrs + (size_t)i * SN_ADDR_MAX, from, strlen(from)))
			node = i;
	struct stat st;
	if (!trusted || node == UINT32_MAX || fstat(fd, &st) || st.st_size <= 0) {
		note(ctx, "memory from %s (uid %u) not asked for or unusable: dropped", from,
		     (unsigned)uid);
		close(fd);
		return;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		note(ctx, "cannot map node %u's memory: %s", node, strerror(errno));
		return;
	}
	rl->map[node] = m;
	rl->map_len[node] = (size_t)st.st_size;
	note(ctx, "node %u's memory mapped (%zu bytes): its chunks are plain copies", node,
	     rl->map_len[node]);
}

static int bell_take(struct sn_ctx *ctx, struct rail *rl)
{
	struct bell_ctx b = {ctx, rl};
	rl->bell_rounds = 0;
	return bell_drain(rl->bell_fd, on_bell, &b);
}

/* Hands queued messages and writes to the provider, each destination's in
 * the order they were queued (the provider keeps that order to the peer:
 * FI_ORDER_SAS, and FI_ORDER_SAW on a rail with RMA). A destination that
 * pushes back (-FI_EAGAIN) keeps its own, in order, without holding up
 * the others; one that stays blocked past the timeout is given up as
 * unreachable. */
static void tx_flush(struct sn_ctx *ctx, struct rail *rl)
{
	/* a failure handled below may queue more (an ACK): the walk picks it up */
	if (rl->flushing)
		return;
	rl->flushing = true;
	struct sn_nodeset blocked;
	struct slot **pp = &rl->txq_head, *prev = NULL;
	uint64_t t = 0;
	bool any_blocked = false;
	while (*pp) {
		struct slot *s = *pp;
		ssize_t rc;
		bool no_addr = false, mapped = false;
		if ((any_blocked && sn_set_has(&blocked, s->dest)) ||
		    rl->tx_held[s->dest] >= rl->tx_held_max) {
			rc = -FI_EAGAIN; /* in order behind its own, or its share taken */
		} else {
			peer_use(ctx, (int)(rl - ctx->rails), s->dest);
			/* A peer whose address has not arrived is as a dead one
			 * to an operation we start: our caller chose the set. A
			 * relay (a forward or an answer in another node's
			 * operation) waits for it as for a peer that pushes
			 * back, within its operation's time: the origin knew the
			 * address, so it is on its way to us too (a node that
			 * registered early learns of the later ones a moment
			 * after the first multicast may reach it). */
			no_addr = rl->peers[s->dest] == FI_ADDR_NOTAVAIL;
			bool relay = s->rec && s->rec->m.origin != ctx->self;
			mapped = !no_addr && s->write && map_write(ctx, rl, s);
			rc = no_addr ? (relay ? -FI_EAGAIN : -FI_EHOSTUNREACH)
			     : mapped  ? 0
			     : s->write ? rma_write(rl, s)
			     : fi_sendv(rl->ep, s->iov, s->desc, s->niov, rl->peers[s->dest],
					&s->fctx);
			/* rung even when it pushed back: a first contact waits
			 * for the peer to take our connection request */
			if (!no_addr)
				bell_mark(rl, s->dest);
		}
		if (rc == -FI_EAGAIN) {
			if (!t)
				t = now_ns();
			if (!s->queued_ns)
				s->queued_ns = t;
			uint64_t until = s->queued_ns + (uint64_t)ctx->cfg.timeout_ms * 1000000ull;
			/* past its record's end the origin counts the peer failed:
			 * sent later, the message would take effect all the same */
			if (no_addr && s->rec->deadline_ns < until)
				until = s->rec->deadline_ns;
			if (t < until) {
				if (!any_blocked)
					sn_set_clear(&blocked);
				any_blocked = true;
				sn_set_add(&blocked, s->dest);
				prev = s;
				pp = &s->next;
				continue;
			}
			rc = -FI_ETIMEDOUT;
		}
		*pp = s->next;
		if (rl->txq_tail == s)
			rl->txq_tail = prev;
		if (rc) {
			/* reported by the next progress round, as a failed
			 * completion would be: failing it here, inside the
			 * send_msg of a caller that still uses the record
			 * (an ACK of an expiring record to an unreachable
			 * parent), freed that record under it */
			s->err = (int)rc;
			s->next = rl->failq;
			rl->failq = s;
			continue;
		}
		rl->tx_held[s->dest]++;
		if (mapped) {
			/* done already: the header behind it is queued, so its
			 * operation outlives this completion */
			ctx->stats.rma_writes++;
			ctx->stats.mapped_writes++;
			ctx->stats.bytes_sent += s->iov[0].iov_len;
			tx_done(ctx, s);
			continue;
		}
		rl->cq_dirty = true;
		if (s->write) {
			ctx->stats.rma_writes++;
			ctx->stats.bytes_sent += s->iov[0].iov_len;
			sent_big(rl, s, s->iov[0].iov_len);
			continue;
		}
		size_t len = s->iov[0].iov_len + (s->niov > 1 ? s->iov[1].iov_len : 0);
		ctx->stats.msgs_sent++;
		ctx->stats.bytes_sent += len;
		sent_big(rl, s, len);
	}
	rl->flushing = false;
	bell_ring_due(rl);
}

/* Does [lo, hi) overlap a transfer sent to node d as a message that it may
 * not have placed yet? */
static bool overlaps_inflight(struct rail *rl, uint32_t d, uint64_t lo, uint64_t hi)
{
	for (int i = 0; i < SN_INFLIGHT; i++) {
		struct inflight *f = &rl->inflight[d][i];
		if (f->hi && f->seq > rl->placed_seq[d] && lo < f->hi && f->lo < hi)
			return true;
	}
	return false;
}

/* Remembers [lo, hi), sent to node d as message seq. A slot is free when
 * empty or placed; when none is, the new range joins the one that grows
 * least (a range larger than sent only sends more chunks as messages). */
static void note_inflight(struct rail *rl, uint32_t d, uint64_t lo, uint64_t hi, uint64_t seq)
{
	struct inflight *fs = rl->inflight[d], *best = NULL;
	uint64_t grow = UINT64_MAX;
	for (int i = 0; i < SN_INFLIGHT; i++) {
		struct inflight *f = &fs[i];
		if (!f->hi || f->seq <= rl->placed_seq[d]) {
			*f = (struct inflight){lo, hi, seq};
			return;
		}
		uint64_t nlo = f->lo < lo ? f->lo : lo, nhi = f->hi > hi ? f->hi : hi;
		if (nhi - nlo - (f->hi - f->lo) < grow) {
			grow = nhi - nlo - (f->hi - f->lo);
			best = f;
		}
	}
	if (lo < best->lo)
		best->lo = lo;
	if (hi > best->hi)
		best->hi = hi;
	best->seq = seq;
}

static struct slot *slot_get(struct sn_ctx *ctx, int rail, uint32_t dest, struct rec *r)
{
	struct slot *s = ctx->free_slots;
	if (s) {
		ctx->free_slots = s->next;
		ctx->nfree_slots--;
	} else if (!(s = malloc(sizeof(*s)))) {
		return NULL;
	}
	memset(s, 0, offsetof(struct slot, hdr));
	s->kind = SLOT_TX;
	s->rail = rail;
	s->dest = dest;
	s->rec = r;
	s->iov[0].iov_base = s->hdr;
	s->niov = 1;
	return s;
}

static void slot_queue(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	if (s->rec)
		s->rec->tx_pending++;
	ctx->tx_outstanding++;
	txq_push(rl, s);
}

/* Queues message m to node dest, with an optional payload that must stay
 * valid until the send completes; write: the payload goes by RMA write into
 * dest's global memory, announced by the header alone (SN_F_PLACED). */
static int send_one(struct sn_ctx *ctx, int rail, uint32_t dest, const struct sn_msg *m,
		    const void *payload, size_t plen, struct rec *r, bool write)
{
	struct rail *rl = &ctx->rails[rail];
	struct slot *s = slot_get(ctx, rail, dest, r), *w = NULL;
	if (!s)
		return -ENOMEM;
	peer_use(ctx, rail, dest);
	uint64_t seq = ++rl->tx_seq[dest];
	for (uint32_t i = 0; r && i < r->nchildren; i++)
		if (r->children[i] == dest)
			r->child_seq[i] = seq;
	uint64_t lo = m->off + m->chunk_off;
	struct sn_msg pm = *m;
	if (write) {
		if (!(w = slot_get(ctx, rail, dest, r))) {
			free(s);
			return -ENOMEM;
		}
		w->write = true;
		w->iov[0].iov_base = (void *)payload;
		w->iov[0].iov_len = plen;
		w->roff = lo;
		pm.flags |= SN_F_PLACED;
	} else {
		if (m->type == SN_MSG_XFER && plen && rl->rma[dest])
			note_inflight(rl, dest, lo, lo + plen, seq);
		pm.flags &= (uint16_t)~SN_F_PLACED;
	}
	s->iov[0].iov_len = sn_wire_encode(&pm, s->hdr);
	if (!w && plen && plen <= SN_INLINE_MAX) {
		/* small: one contiguous buffer, and the source is free at once */
		memcpy(s->hdr + s->iov[0].iov_len, payload, plen);
		s->iov[0].iov_len += plen;
	} else if (!w && plen) {
		s->iov[1].iov_base = (void *)payload;
		s->iov[1].iov_len = plen;
		s->niov = 2;
	}
	struct slot *reader = w ? w : s->niov == 2 ? s : NULL;
	if (reader && ctx->forwarding) {
		reader->copy = ctx->forwarding;
		ctx->forwarding->refs++;
	}
	if (w)
		slot_queue(ctx, rl, w);
	slot_queue(ctx, rl, s);
	tx_flush(ctx, rl);
	return 0;
}

/* Queues message m to node dest (send_one). A chunk to a peer that published
 * its key goes by RMA write, unless it is small or overlaps a transfer the
 * peer may not have handled yet (note_inflight): then it goes as messages,
 * each no larger than a receive buffer, so a chunk cut for RMA is split
 * here (each piece choosing its path again: only the overlapping ones must
 * stay messages). */
static int send_msg(struct sn_ctx *ctx, int rail, uint32_t dest, const struct sn_msg *m,
		    const void *payload, size_t plen, struct rec *r)
{
	struct rail *rl = &ctx->rails[rail];
	uint64_t lo = m->off + m->chunk_off;
	bool write = m->type == SN_MSG_XFER && plen > SN_INLINE_MAX && rl->rma[dest] &&
		     !overlaps_inflight(rl, dest, lo, lo + plen);
	if (write || plen <= rl->max_payload)
		return send_one(ctx, rail, dest, m, payload, plen, r, write);
	struct sn_msg pm = *m;
	for (size_t o = 0; o < plen; o += pm.chunk_len) {
		pm.chunk_off = m->chunk_off + o;
		pm.chunk_len = (uint32_t)(plen - o < rl->max_payload ? plen - o : rl->max_payload);
		int rc = send_msg(ctx, rail, dest, &pm, (const uint8_t *)payload + o,
				  pm.chunk_len, r);
		if (rc)
			return rc;
	}
	return 0;
}

/* --------------------------------------------------------- tree records */

static struct rec *rec_find(struct sn_ctx *ctx, uint32_t origin, uint32_t opid)
{
	for (struct rec *r = ctx->recs; r; r = r->next)
		if (r->m.origin == origin && r->m.opid == opid && !r->finished)
			return r;
	return NULL;
}

static uint32_t budget_left_ms(const struct rec *r)
{
	uint64_t t = now_ns();
	if (t >= r->deadline_ns)
		return 0;
	/* children must answer before their parent gives up on them */
	return (uint32_t)((r->deadline_ns - t) / 1000000 * 3 / 4);
}

static struct rec *rec_new(struct sn_ctx *ctx, const struct sn_msg *m, int rail,
			   uint64_t budget_ms)
{
	struct sn_tree_pos pos;
	if (sn_tree_position(m->origin, &m->set, m->fanout, ctx->self, &pos))
		return NULL;
	struct rec *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->m = *m;
	r->m.payload = NULL;
	r->rail = rail;
	r->parent = pos.parent;
	r->nchildren = pos.nchildren;
	memcpy(r->children, pos.children, pos.nchildren * sizeof(uint32_t));
	/* without SN_F_ACK no child answers, so there is nothing to wait for */
	if (m->flags & SN_F_ACK)
		for (uint32_t i = 0; i < pos.nchildren; i++)
			sn_set_add(&r->waiting, pos.children[i]);
	r->in_set = sn_set_has(&m->set, ctx->self);
	r->status = 1;
	r->local_ev = SN_NO_EVENT;
	r->deadline_ns = now_ns() + budget_ms * 1000000ull;
	r->next = ctx->recs;
	ctx->recs = r;
	return r;
}

/* Sends the down message of r (with its payload slice, for XFER) to every child. */
static void rec_forward(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m,
			const void *payload)
{
	struct sn_msg fw = *m;
	fw.sender = ctx->self;
	fw.budget_ms = budget_left_ms(r);
	for (uint32_t i = 0; i < r->nchildren; i++) {
		if (sn_set_has(&r->suspect, r->children[i]))
			continue; /* already failed */
		if (send_msg(ctx, r->rail, r->children[i], &fw, payload, fw.chunk_len, r))
			note(ctx, "out of memory forwarding to node %u", r->children[i]);
		if (m->type == SN_MSG_XFER)
			ctx->stats.forwards++;
	}
}

static void combine_status(struct rec *r, int32_t status);
static void caw_grant_waiters(struct sn_ctx *ctx);

static void rec_try_finish(struct sn_ctx *ctx, struct rec *r, bool expired)
{
	if (r->finished)
		return;
	if (!expired && !(r->local_done && sn_set_empty(&r->waiting)))
		return;
	bool regrant = false;
	if (expired && r->lock_wait) {
		/* waited for its lock to the end: a conflict, answered as one;
		 * -EAGAIN if locks changed hands meanwhile (the call queues
		 * again at once, caw.h), -EBUSY if the queue stood still */
		r->lock_wait = false;
		caw_lock_cancel(&ctx->locks, r->m.origin, (uint32_t)r->m.total);
		combine_status(r, ctx->locks.releases != r->wait_mark ? -EAGAIN : -EBUSY);
		r->local_done = true;
		regrant = true; /* younger prepares it held back */
	}
	if (expired) {
		/* children that did not answer in time are the suspects */
		sn_set_or(&r->suspect, &r->waiting);
		sn_set_clear(&r->waiting);
		ctx->stats.timeouts++;
	}
	if (r->in_set && r->local_done && !r->local_failed)
		sn_set_add(&r->ok, ctx->self);
	r->finished = true;
	if (r->parent == UINT32_MAX) {
		if (r->done)
			r->done(ctx, r);
	} else if (r->m.flags & SN_F_ACK) {
		struct sn_msg ack = {
			.type = SN_MSG_ACK,
			.origin = r->m.origin,
			.opid = r->m.opid,
			.sender = ctx->self,
			.nbits = ctx->n,
			.fanout = r->m.fanout,
			.status = r->status,
			.event = SN_NO_EVENT,
			.set = r->ok,
			.set2 = r->suspect,
		};
		ctx->stats.acks_sent++;
		send_msg(ctx, r->rail, r->parent, &ack, NULL, 0, r);
	}
	rec_release(ctx, r);
	if (regrant)
		caw_grant_waiters(ctx);
}

static void rec_child_failed(struct sn_ctx *ctx, struct rec *r, uint32_t child)
{
	if (!sn_set_has(&r->waiting, child)) {
		/* nobody waits on an unacknowledged transfer, but later
		 * chunks should not go to a child known to be gone */
		if (!(r->m.flags & SN_F_ACK))
			sn_set_add(&r->suspect, child);
		return;
	}
	sn_set_del(&r->waiting, child);
	sn_set_add(&r->suspect, child);
	rec_try_finish(ctx, r, false);
}

static void combine_status(struct rec *r, int32_t status)
{
	if (r->status < 0)
		return;
	if (status < 0)
		r->status = status;
	else
		r->status = r->status && status;
}

static uint64_t caw_lease_ns(const struct sn_ctx *ctx)
{
	/* past the last direct decision a live coordinator can send (caw.h) */
	return 4ull * ctx->cfg.timeout_ms * 1000000ull;
}

/* A CAW prepare here: lock the variables, stage the write, evaluate. The
 * lock is held whatever the condition says: the answer must hold at one
 * instant on every member. A conflicting lock refuses it (-EBUSY) or queues
 * it (caw.h says which): false, not done. */
static bool caw_member_prepare(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m)
{
	struct caw_req req = {
		.origin = m->origin,
		.opid = (uint32_t)m->total,
		.ticket = m->chunk_off,
		.leader = m->event,
		.at_leader = m->flags & SN_F_WAIT,
		.writes = m->flags & SN_F_WRITE,
		.rvar = m->off,
		.wvar = m->off2,
		.wval = m->value2,
	};
	int rc = caw_lock_take(&ctx->locks, &req, now_ns(), caw_lease_ns(ctx));
	if (rc == -EAGAIN) {
		if (!r->lock_wait)
			r->wait_mark = ctx->locks.releases;
		r->lock_wait = true;
		return false;
	}
	r->lock_wait = false;
	if (rc < 0)
		combine_status(r, -EBUSY);
	else
		combine_status(r, sn_cmp_eval((enum sn_cmp)m->cmp, sn_var_load(ctx, m->off),
					      m->value));
	return true;
}

static void rec_try_finish(struct sn_ctx *ctx, struct rec *r, bool expired);

/* A queued prepare's place: the older call first (caw.h). */
struct caw_place {
	uint64_t ticket;
	uint32_t origin, opid;
};

static struct caw_place caw_place_of(const struct rec *r)
{
	return (struct caw_place){r->m.chunk_off, r->m.origin, r->m.opid};
}

static bool caw_before(struct caw_place a, struct caw_place b)
{
	if (a.ticket != b.ticket || a.origin != b.origin)
		return caw_older(a.ticket, a.origin, b.ticket, b.origin);
	return a.opid < b.opid;
}

/* A lock was released here: the queued prepares that can lock now do,
 * oldest call first. */
static void caw_grant_waiters(struct sn_ctx *ctx)
{
	struct caw_place after;
	bool first = true;
	for (;;) {
		struct rec *next = NULL;
		for (struct rec *r = ctx->recs; r; r = r->next)
			if (r->lock_wait && !r->finished &&
			    (first || caw_before(after, caw_place_of(r))) &&
			    (!next || caw_before(caw_place_of(r), caw_place_of(next))))
				next = r;
		if (!next)
			return;
		after = caw_place_of(next);
		first = false;
		if (caw_member_prepare(ctx, next, &next->m)) {
			next->local_done = true;
			rec_try_finish(ctx, next, false); /* may free it */
		}
	}
}

/* A CAW decision here: commit the staged write, or release. */
static void caw_member_decide(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m)
{
	uint64_t wvar = 0, wval = 0;
	int rc = caw_lock_decide(&ctx->locks, m->origin, (uint32_t)m->value,
				 m->flags & SN_F_COMMIT, now_ns(), &wvar, &wval);
	if (rc == 1)
		sn_var_store(ctx, wvar, wval);
	else if (rc < 0)
		r->local_failed = true; /* its lease ran out: the write is not here */
	caw_grant_waiters(ctx);
}

/* Carries out m's local effect on this member. */
static void rec_local(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m)
{
	switch (m->type) {
	case SN_MSG_XFER:
		if (r->in_set && m->chunk_len && !(m->flags & SN_F_PLACED))
			memmove(ctx->gmem + m->off + m->chunk_off, m->payload, m->chunk_len);
		r->bytes += m->chunk_len;
		if (r->bytes < m->total)
			return;
		if (r->in_set && !(m->flags & SN_F_ATOMIC))
			event_signal(ctx, m->event);
		break;
	case SN_MSG_COMMIT:
		if (r->in_set)
			event_signal(ctx, m->event);
		break;
	case SN_MSG_EVAL:
		if (r->in_set && !caw_member_prepare(ctx, r, m))
			return; /* queued for its lock */
		break;
	case SN_MSG_WRITE:
		if (r->in_set)
			caw_member_decide(ctx, r, m);
		break;
	default:
		return;
	}
	r->local_done = true;
}

/* --------------------------------------------------------------- receive */

static int check_down(struct sn_ctx *ctx, const struct sn_msg *m, const char **why)
{
	if (m->fanout == 0 || m->fanout > SN_MAX_FANOUT)
		return *why = "bad fan-out", -EPROTO;
	if (m->type == SN_MSG_XFER &&
	    (m->off < SN_GMEM_RESERVED || m->off > ctx->gmem_size ||
	     m->total > ctx->gmem_size - m->off))
		return *why = "transfer outside global memory", -EPROTO;
	if ((m->type == SN_MSG_XFER || m->type == SN_MSG_COMMIT) && m->event != SN_NO_EVENT &&
	    m->event >= SN_MAX_EVENTS)
		return *why = "event out of range", -EPROTO;
	bool evals = m->type == SN_MSG_EVAL;
	bool writes = evals && (m->flags & SN_F_WRITE);
	if ((evals && (m->off % 8 || m->off > ctx->gmem_size - 8 || m->cmp > SN_GE)) ||
	    (writes && (m->off2 % 8 || m->off2 > ctx->gmem_size - 8)))
		return *why = "bad global variable", -EPROTO;
	if (!sn_set_has(&m->set, ctx->self) && m->origin != ctx->self)
		return *why = "not a member of the operation", -EPROTO;
	return 0;
}

/* A leaf that receives a whole transfer nobody waits on (no SN_F_ACK) needs
 * no record: place the data and signal. The common case of a small message
 * to one node, or of a strobe at the edge of the tree. */
static bool leaf_fast_path(struct sn_ctx *ctx, const struct sn_msg *m)
{
	if (m->type != SN_MSG_XFER || (m->flags & (SN_F_ACK | SN_F_ATOMIC)) || m->chunk_off ||
	    m->chunk_len != m->total || !sn_set_has(&m->set, ctx->self))
		return false;
	struct sn_tree_pos pos;
	if (sn_tree_position(m->origin, &m->set, m->fanout, ctx->self, &pos) || pos.nchildren)
		return false;
	if (m->chunk_len && !(m->flags & SN_F_PLACED))
		memmove(ctx->gmem + m->off, m->payload, m->chunk_len);
	event_signal(ctx, m->event);
	return true;
}

static void handle_down(struct sn_ctx *ctx, int rail, const struct sn_msg *m)
{
	if (leaf_fast_path(ctx, m))
		return;
	struct rec *r = rec_find(ctx, m->origin, m->opid);
	if (!r) {
		r = rec_new(ctx, m, rail, m->budget_ms);
		if (!r) {
			note(ctx, "cannot place node in tree of op %u/%u", m->origin, m->opid);
			return;
		}
	} else {
		/* progress on a long transfer keeps it alive */
		uint64_t d = now_ns() + (uint64_t)m->budget_ms * 1000000ull;
		if (d > r->deadline_ns)
			r->deadline_ns = d;
	}
	rec_local(ctx, r, m);
	/* only the root can be outside the set, so the chunk is in our gmem now */
	const void *payload = m->chunk_len ? ctx->gmem + m->off + m->chunk_off : NULL;
	/* forwarded from a copy (struct fwd_copy), unless small enough to
	 * travel inside the send slot; out of memory, from global memory */
	struct fwd_copy *c = NULL;
	if (payload && r->nchildren && m->chunk_len > SN_INLINE_MAX &&
	    (c = malloc(sizeof(*c) + m->chunk_len))) {
		/* ours until every child's send is queued: a send may be done
		 * before the next is (a copy into a mapped peer's memory) */
		c->refs = 1;
		memcpy(c->data, payload, m->chunk_len);
		payload = c->data;
	}
	ctx->forwarding = c;
	rec_forward(ctx, r, m, payload);
	ctx->forwarding = NULL;
	if (c && --c->refs == 0)
		free(c); /* every send from it done, or every child given up */
	rec_try_finish(ctx, r, false);
}

static void handle_ack(struct sn_ctx *ctx, const struct sn_msg *m)
{
	struct rec *r = rec_find(ctx, m->origin, m->opid);
	if (!r || !sn_set_has(&r->waiting, m->sender)) {
		note(ctx, "late or unknown ACK for op %u/%u from node %u", m->origin, m->opid,
		     m->sender);
		return;
	}
	sn_set_del(&r->waiting, m->sender);
	/* a child that confirmed has handled every message of the operation,
	 * and so (each peer's messages are handled in order) all we sent it
	 * before: the small transfers among them are placed (note_inflight) */
	struct rail *rl = &ctx->rails[r->rail];
	for (uint32_t i = 0; i < r->nchildren; i++)
		if (r->children[i] == m->sender && sn_set_has(&m->set, m->sender) &&
		    r->child_seq[i] > rl->placed_seq[m->sender])
			rl->placed_seq[m->sender] = r->child_seq[i];
	sn_set_or(&r->ok, &m->set);
	sn_set_or(&r->suspect, &m->set2);
	combine_status(r, m->status);
	rec_try_finish(ctx, r, false);
}

static void handle_rx(struct sn_ctx *ctx, int rail, const uint8_t *buf, size_t len)
{
	struct sn_msg m;
	const char *why = "";
	ctx->stats.msgs_recv++;
	bool ok = sn_wire_decode(buf, len, ctx->n, &m, &why) == 0;
	/* a placed chunk came by RMA before its header: counted with it */
	ctx->stats.bytes_recv += len + (ok && (m.flags & SN_F_PLACED) ? m.chunk_len : 0);
	if (ctx->cfg.fault_die_after && ctx->stats.bytes_recv >= ctx->cfg.fault_die_after)
		raise(SIGKILL);
	if (!ok) {
		note(ctx, "dropped malformed message: %s", why);
		return;
	}
	peer_use(ctx, rail, m.sender);
	if (len > SN_BELL_COPY_MIN || ((m.flags & SN_F_PLACED) && m.chunk_len > SN_BELL_COPY_MIN))
		bell_mark(&ctx->rails[rail], m.sender);
	switch (m.type) {
	case SN_MSG_XFER:
	case SN_MSG_COMMIT:
	case SN_MSG_EVAL:
	case SN_MSG_WRITE:
		if (check_down(ctx, &m, &why)) {
			note(ctx, "dropped message from node %u: %s", m.sender, why);
			return;
		}
		/* a placed chunk is already in our global memory (written
		 * there by RMA, then this header): only a rail that exposes
		 * it can have one */
		if ((m.flags & SN_F_PLACED) && (m.type != SN_MSG_XFER || !ctx->rails[rail].mr)) {
			note(ctx, "dropped message from node %u: placed chunk without RMA",
			     m.sender);
			return;
		}
		handle_down(ctx, rail, &m);
		break;
	case SN_MSG_ACK:
		ctx->stats.acks_recv++;
		handle_ack(ctx, &m);
		break;
	}
}

static int post_rx(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	ssize_t rc;
	do {
		rc = fi_recv(rl->ep, s->buf, s->size, NULL, FI_ADDR_UNSPEC, &s->fctx);
		if (rc == -FI_EAGAIN)
			fi_cq_read(rl->cq, NULL, 0);
	} while (rc == -FI_EAGAIN);
	if (rc)
		return fail(ctx, (int)rc, "cannot post receive: %s", fi_strerror((int)-rc));
	return 0;
}

/* ---------------------------------------------------------------- progress */

static void slot_drop_copy(struct slot *s)
{
	if (s->copy && --s->copy->refs == 0)
		free(s->copy);
	s->copy = NULL;
}

static void tx_done(struct sn_ctx *ctx, struct slot *s)
{
	struct rec *r = s->rec;
	ctx->tx_outstanding--;
	if (!s->err) /* the provider took it; one it refused carries the error */
		ctx->rails[s->rail].tx_held[s->dest]--;
	slot_drop_copy(s);
	if (s->big) {
		ctx->rails[s->rail].big_tx--;
		ctx->rails[s->rail].big_tx_ns = now_ns();
		s->big = false;
	}
	if (ctx->nfree_slots < SN_SLOT_CACHE) {
		s->next = ctx->free_slots;
		ctx->free_slots = s;
		ctx->nfree_slots++;
	} else {
		free(s);
	}
	if (r) {
		r->tx_pending--;
		rec_release(ctx, r);
	}
}

static void tx_failed(struct sn_ctx *ctx, struct slot *s, int err)
{
	note(ctx, "%s to node %u failed: %s", s->write ? "RMA write" : "send", s->dest,
	     fi_strerror(-err));
	if (s->rec && !s->rec->finished)
		rec_child_failed(ctx, s->rec, s->dest);
	tx_done(ctx, s);
}

static void caw_backoffs(struct sn_ctx *ctx);

static void check_deadlines(struct sn_ctx *ctx)
{
	caw_backoffs(ctx);
	if (!ctx->recs)
		return; /* the idle case: no clock read on every progress round */
	uint64_t t = now_ns();
	/* finishing one record can free others (a failed ACK cascades), so
	 * rescan from the head after each; every pass finishes one record */
	for (struct rec *r = ctx->recs; r;) {
		if (!r->finished && t >= r->deadline_ns) {
			rec_try_finish(ctx, r, true);
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
				tx_failed(ctx, s, -(int)ee.err);
			} else {
				/* nothing here cancels a receive: FI_ECANCELED is
				 * rxm giving back a buffer it had matched to a peer
				 * whose connection died in the middle of the message
				 * (once: every message is eager, rxm_all_eager). Not
				 * posted again, an MM killed in a multicast took the
				 * buffers of its nodes with it: deaf to the new MM */
				note(ctx, "receive error: %s; buffer posted again",
				     fi_strerror((int)ee.err));
				post_rx(ctx, rl, s);
			}
			handled++;
			continue;
		}
		if (n < 0)
			return fail(ctx, (int)n, "completion queue: %s", fi_strerror((int)-n));
		for (ssize_t i = 0; i < n; i++) {
			struct slot *s = ent[i].op_context;
			if (s->kind == SLOT_TX) {
				tx_done(ctx, s);
			} else {
				handle_rx(ctx, rail, s->buf, ent[i].len);
				post_rx(ctx, rl, s);
			}
		}
		handled += (int)n;
	}
	for (struct slot *s; (s = rl->failq); handled++) {
		rl->failq = s->next;
		tx_failed(ctx, s, s->err);
	}
	tx_flush(ctx, rl);
	return handled;
}

/* A daemon that restarts (kill -9, then started again) opens a new endpoint
 * with a new address; its peers learn it (a file in the bootstrap
 * directory, or sn_peer_addr from the caller's exchange) and swap it into
 * their address vector at its first use (see peer_use), so the MM and node
 * daemons can come back without the others restarting. A peer whose
 * address never came is unreachable until it does. */
/* A node whose rail writes by RMA publishes, after its fabric address, the
 * key and base of its global memory: one blob, so every bootstrap that
 * carries addresses (dir:, the daemons' external exchange) carries them too
 * without knowing. "static:" computes addresses and carries none: messages. */
#define RMA_MAGIC 0x31524e53u /* "SNR1" */
#define RMA_TRAILER (8 + 8 + 4)

static size_t addr_blob(const struct rail *rl, const uint8_t *addr, size_t alen, uint8_t *out)
{
	memcpy(out, addr, alen);
	if (!rl->mr)
		return alen;
	uint32_t magic = RMA_MAGIC;
	memcpy(out + alen, &rl->mr_key, 8);
	memcpy(out + alen + 8, &rl->mr_base, 8);
	memcpy(out + alen + 16, &magic, 4);
	return alen + RMA_TRAILER;
}

/* The fabric address's length within a blob, and its RMA part if any. */
static size_t addr_unblob(const uint8_t *blob, size_t len, bool *rma, uint64_t *key,
			  uint64_t *base)
{
	uint32_t magic = 0;
	*rma = false;
	if (len > RMA_TRAILER)
		memcpy(&magic, blob + len - 4, 4);
	if (magic != RMA_MAGIC)
		return len;
	len -= RMA_TRAILER;
	memcpy(key, blob + len, 8);
	memcpy(base, blob + len + 8, 8);
	*rma = true;
	return len;
}

/* Swaps node's pending address into the address vector, dropping the old
 * one's connection. 1 swapped, 0 unchanged, -errno. */
static int peer_swap(struct sn_ctx *ctx, int rail, uint32_t node)
{
	struct rail *rl = &ctx->rails[rail];
	const uint8_t *addr = rl->next + (size_t)node * SN_ADDR_MAX;
	size_t alen = rl->nlens[node];
	rl->stale[node] = false;
	fi_addr_t fa;
	if (rl->peers[node] != FI_ADDR_NOTAVAIL)
		fi_av_remove(rl->av, &rl->peers[node], 1, 0);
	rl->peers[node] = FI_ADDR_NOTAVAIL;
	if (fi_av_insert(rl->av, addr, 1, &fa, 0, NULL) != 1) {
		note(ctx, "node %u has an address we cannot use", node);
		return -EINVAL;
	}
	rl->peers[node] = fa;
	memcpy(rl->addrs + (size_t)node * SN_ADDR_MAX, addr, alen);
	rl->alens[node] = alen;
	/* a peer's key is only good with its endpoint: a restart brings both */
	rl->rma[node] = rl->mr && rl->nrma[node];
	map_drop(rl, node); /* a restarted peer's memory is new */
	rl->rkey[node] = rl->nrkey[node];
	rl->rbase[node] = rl->nrbase[node];
	return 1;
}

/* Takes node's address on one rail: a first one goes into the address
 * vector at once, a changed one at its first use (peer_use). */
static int peer_set(struct sn_ctx *ctx, int rail, uint32_t node, const void *blob,
		    size_t blen)
{
	struct rail *rl = &ctx->rails[rail];
	const uint8_t *addr = blob;
	bool rma;
	uint64_t key = 0, base = 0;
	size_t alen = addr_unblob(blob, blen, &rma, &key, &base);
	if (!alen || alen > SN_ADDR_MAX)
		return -EINVAL;
	if (rl->peers[node] != FI_ADDR_NOTAVAIL && alen == rl->alens[node] &&
	    !memcmp(addr, rl->addrs + (size_t)node * SN_ADDR_MAX, alen) &&
	    rma == rl->nrma[node] && key == rl->nrkey[node] && base == rl->nrbase[node]) {
		rl->stale[node] = false; /* a restart back to the old address */
		return 0;
	}
	memcpy(rl->next + (size_t)node * SN_ADDR_MAX, addr, alen);
	rl->nlens[node] = alen;
	rl->nrma[node] = rma;
	rl->nrkey[node] = key;
	rl->nrbase[node] = base;
	if (rl->peers[node] == FI_ADDR_NOTAVAIL)
		return peer_swap(ctx, rail, node) < 0 ? -EINVAL : 0;
	rl->stale[node] = true;
	return 0;
}

int sn_peer_addr(struct sn_ctx *ctx, int rail, uint32_t node, const void *addr, size_t len)
{
	if (rail < 0 || rail >= ctx->nrails || node >= ctx->n)
		return fail(ctx, -EINVAL, "no node %u on rail %d", node, rail);
	if (node == ctx->self)
		return 0;
	int rc = peer_set(ctx, rail, node, addr, len);
	if (rc)
		return fail(ctx, rc, "node %u: fabric address of %zu bytes not usable on rail %d",
			    node, len, rail);
	return 0;
}

int sn_local_addr(const struct sn_ctx *ctx, int rail, void *buf, size_t *len)
{
	if (rail < 0 || rail >= ctx->nrails)
		return -EINVAL;
	const struct rail *rl = &ctx->rails[rail];
	uint8_t blob[SN_ADDR_MAX];
	size_t n = addr_blob(rl, rl->addrs + (size_t)ctx->self * SN_ADDR_MAX,
			     rl->alens[ctx->self], blob);
	if (*len < n)
		return -ENOSPC;
	memcpy(buf, blob, n);
	*len = n;
	return 0;
}

int sn_rail_count(const struct sn_ctx *ctx) { return ctx->nrails; }

/* The new address goes in at first use, not when it is published: if the
 * restarted peer speaks first, its connection is already there and carries
 * our answers; if we speak first, we connect. Swapping at once made both
 * sides connect at the same moment, and rxm then left neither connection
 * usable (a restarted MM heard no node). */
static void peer_use(struct sn_ctx *ctx, int rail, uint32_t node)
{
	if (node < ctx->n && ctx->rails[rail].stale[node] &&
	    peer_swap(ctx, rail, node) > 0)
		note(ctx, "node %u restarted: its new address on rail %d is in use", node, rail);
}

/* Reads a peer's file from the bootstrap directory, if it is there. */
static void peer_read_file(struct sn_ctx *ctx, int rail, uint32_t node)
{
	uint8_t addr[SN_ADDR_MAX];
	size_t alen = 0;
	if (sn_boot_read(ctx->bootdir, rail, node, addr, &alen) == 0 &&
	    peer_set(ctx, rail, node, addr, alen) < 0)
		note(ctx, "node %u published an address we cannot use", node);
}

static void peers_refresh(struct sn_ctx *ctx)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;
	while (ctx->ino_fd >= 0 && (len = read(ctx->ino_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			struct inotify_event *e = (struct inotify_event *)p;
			p += sizeof(*e) + e->len;
			int rail;
			uint32_t node;
			if (!e->len || sn_boot_parse_name(e->name, &rail, &node) ||
			    rail >= ctx->nrails || node >= ctx->n || node == ctx->self)
				continue;
			note(ctx, "node %u published its address on rail %d", node, rail);
			peer_read_file(ctx, rail, node);
		}
	}
}

static int caw_deliver(struct sn_ctx *ctx);

int sn_progress(struct sn_ctx *ctx)
{
	int total = 0;
	peers_refresh(ctx);
	for (int i = 0; i < ctx->nrails; i++) {
		/* a node that never sleeps (busy-polling) reads its bell now and
		 * then, for peers' requests; before the queue, so that a ring
		 * taken here is about something this round still sees */
		struct rail *rl = &ctx->rails[i];
		if (rl->bell_fd >= 0 && ++rl->bell_rounds >= SN_BELL_READ_ROUNDS)
			bell_take(ctx, rl);
		int rc = rail_progress(ctx, i);
		if (rc < 0)
			return rc;
		total += rc;
	}
	check_deadlines(ctx);
	return total + caw_deliver(ctx);
}

int sn_wait_fd(struct sn_ctx *ctx) { return ctx->epfd; }

/* May a rail with a doorbell sleep until its next ring? Not while our own
 * sends' completions may wait in the queue (they ring nothing), nor when a
 * ring came since the last look: it may be about something that look
 * missed. Drained here, just before sleeping, rather than at every look:
 * a daemon looks many times a turn, and each drain is a system call. */
static bool bell_quiet(struct sn_ctx *ctx, struct rail *rl)
{
	return !rl->cq_dirty && bell_take(ctx, rl) == 0;
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

/* Connection set-up (rxm over tcp or sockets) is progressed only inside
 * fi_cq_read, and an incoming connection request does not make the CQ's
 * wait fd readable. A node that sleeps until a message arrives can then
 * never accept the connection that message needs: a tree child whose only
 * traffic comes from its parent would sleep forever. So a sleeper wakes at
 * least this often to drive progress. */
#define SN_CM_POLL_MS 5

int sn_next_timeout_ms(struct sn_ctx *ctx)
{
	uint64_t t = now_ns(), best = UINT64_MAX;
	for (struct rec *r = ctx->recs; r; r = r->next)
		if (!r->finished && r->deadline_ns < best)
			best = r->deadline_ns;
	for (struct caw_call *c = ctx->calls; c; c = c->next) {
		if (c->sm.state == CAW_BACKOFF && c->sm.backoff_until_ns < best)
			best = c->sm.backoff_until_ns;
		if (c->sm.answered && !c->delivered)
			best = 0; /* an answer to hand over */
	}
	int ms = best == UINT64_MAX ? -1
		 : best <= t	     ? 0
				     : (int)((best - t + 999999) / 1000000);
	if (ms < 0 || ms > SN_CM_POLL_MS)
		ms = SN_CM_POLL_MS;
	for (int i = 0; i < ctx->nrails; i++) {
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

static bool all_known(struct sn_ctx *ctx, void *arg)
{
	(void)arg;
	return sn_peers_known(ctx) == ctx->n;
}

bool sn_peer_known(const struct sn_ctx *ctx, uint32_t node)
{
	if (node >= ctx->n)
		return false;
	for (int r = 0; r < ctx->nrails; r++)
		if (ctx->rails[r].peers[node] == FI_ADDR_NOTAVAIL)
			return false;
	return true;
}

uint32_t sn_peers_known(const struct sn_ctx *ctx)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < ctx->n; i++)
		k += sn_peer_known(ctx, i);
	return k;
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

/* ---------------------------------------------------------- XFER-AND-SIGNAL */

static int next_opid(struct sn_ctx *ctx)
{
	if (++ctx->next_opid == 0)
		ctx->next_opid = 1;
	return (int)ctx->next_opid;
}

static int pick_rail(struct sn_ctx *ctx, unsigned flags)
{
	return (flags & SN_XFER_SYS) && ctx->nrails > 1 ? 1 : 0;
}

/* Failed = the set minus the nodes that confirmed. */
static int rec_outcome(struct sn_ctx *ctx, struct rec *r, struct sn_nodeset *failed)
{
	*failed = r->m.set;
	sn_set_andnot(failed, &r->ok);
	if (sn_set_empty(failed))
		return 0;
	(void)ctx;
	return sn_set_empty(&r->suspect) ? -ETIMEDOUT : -EHOSTUNREACH;
}

static void xfer_commit_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	int err = rec_outcome(ctx, r, &failed);
	if (err)
		event_fail(ctx, r->local_ev, err, &failed);
	else
		event_signal(ctx, r->local_ev);
}

static struct rec *root_new(struct sn_ctx *ctx, struct sn_msg *m, int rail,
			    uint64_t budget_ms, rec_done_fn done, bool ack);
static void root_launch(struct sn_ctx *ctx, struct rec *r);

static void xfer_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	int err = rec_outcome(ctx, r, &failed);
	if (err) {
		event_fail(ctx, r->local_ev, err, &failed);
		return;
	}
	if (!(r->m.flags & SN_F_ATOMIC)) {
		event_signal(ctx, r->local_ev);
		return;
	}
	/* every destination holds the data: now let them see it */
	struct sn_msg c = r->m;
	c.type = SN_MSG_COMMIT;
	c.chunk_len = 0;
	c.total = 0;
	struct rec *cr = root_new(ctx, &c, r->rail, ctx->cfg.timeout_ms, xfer_commit_done, true);
	if (!cr) {
		event_fail(ctx, r->local_ev, -ENOMEM, &failed);
		return;
	}
	cr->local_ev = r->local_ev;
	root_launch(ctx, cr);
}

/* Gives m the identity of a new tree operation rooted here. */
static void root_identity(struct sn_ctx *ctx, struct sn_msg *m, bool ack)
{
	m->origin = ctx->self;
	m->opid = (uint32_t)next_opid(ctx);
	m->sender = ctx->self;
	m->nbits = ctx->n;
	if (ack)
		m->flags |= SN_F_ACK;
}

/* Creates the root record of a tree operation; m gets its identity. Without
 * ack the members do not answer and the record finishes once sent. */
static struct rec *root_new(struct sn_ctx *ctx, struct sn_msg *m, int rail,
			    uint64_t budget_ms, rec_done_fn done, bool ack)
{
	root_identity(ctx, m, ack);
	struct rec *r = rec_new(ctx, m, rail, budget_ms);
	if (r)
		r->done = done;
	return r;
}

/* Acts on a payload-less root record and sends it down the tree. */
static void root_launch(struct sn_ctx *ctx, struct rec *r)
{
	rec_local(ctx, r, &r->m);
	rec_forward(ctx, r, &r->m, NULL);
	rec_try_finish(ctx, r, false);
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
	if ((rc = check_range(ctx, dst_off, len, true)))
		return rc;
	if ((local_ev != SN_NO_EVENT && local_ev >= SN_MAX_EVENTS) ||
	    (remote_ev != SN_NO_EVENT && remote_ev >= SN_MAX_EVENTS))
		return fail(ctx, -EINVAL, "event out of range (max %d)", SN_MAX_EVENTS - 1);

	int rail = pick_rail(ctx, flags);
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
		root_identity(ctx, &m, false);
		if (sn_tree_position(ctx->self, dst, m.fanout, ctx->self, &pos))
			return fail(ctx, -EINVAL, "no tree for this node set");
		m.chunk_len = (uint32_t)len;
		m.budget_ms = (uint32_t)(budget * 3 / 4);
		for (uint32_t i = 0; i < pos.nchildren; i++) {
			if (send_msg(ctx, rail, pos.children[i], &m, src, len, NULL))
				return fail(ctx, -ENOMEM, "out of memory");
			ctx->stats.forwards++;
		}
		if (self_dest && len)
			memmove(ctx->gmem + dst_off, src, len);
		if (self_dest)
			event_signal(ctx, remote_ev);
		return 0;
	}
	struct rec *r = root_new(ctx, &m, rail, budget, xfer_done, ack);
	if (!r)
		return fail(ctx, -ENOMEM, "out of memory");
	r->local_ev = local_ev;

	const uint8_t *from = src;
	if (r->nchildren && len > SN_INLINE_MAX && local_ev == SN_NO_EVENT) {
		/* the caller may reuse src at once: send a private copy */
		r->owned = malloc(len);
		if (!r->owned) {
			r->finished = true;
			rec_release(ctx, r);
			return fail(ctx, -ENOMEM, "out of memory copying %zu bytes", len);
		}
		memcpy(r->owned, src, len);
		from = r->owned;
	}
	if (self_dest && len)
		memmove(ctx->gmem + dst_off, src, len);
	if (self_dest && !(flags & SN_XFER_ATOMIC))
		event_signal(ctx, remote_ev);
	r->local_done = true;

	/* chunks as large as the path allows: a child without RMA gets each
	 * in message-sized pieces (send_msg) */
	size_t chunk = rl->mr ? rl->rma_chunk : rl->max_payload;
	size_t off = 0;
	do {
		m.chunk_off = off;
		m.chunk_len = (uint32_t)(len - off < chunk ? len - off : chunk);
		rec_forward(ctx, r, &m, len ? from + off : NULL);
		off += m.chunk_len;
	} while (off < len);
	rec_try_finish(ctx, r, false);
	return 0;
}

/* -------------------------------------------------------- COMPARE-AND-WRITE */

/* The call's coordinator runs caw.h's state machine: PREPARE and DECIDE are
 * tree operations rooted here, the direct decisions one operation per
 * member that the tree did not reach. */

static uint64_t rnd_next(struct sn_ctx *ctx)
{
	/* xorshift64: a back-off needs spread, not secrecy */
	uint64_t x = ctx->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return ctx->rng = x;
}

static void caw_advance(struct sn_ctx *ctx, struct caw_call *c);

/* The set's lowest node, locked first: calls on one set queue there. */
static void caw_leader_done(struct sn_ctx *ctx, struct rec *r)
{
	struct caw_call *c = r->call;
	struct sn_nodeset failed;
	int err = rec_outcome(ctx, r, &failed);
	if (err || r->status < 0) {
		caw_sm_prepared(&c->sm, err ? err : r->status, &failed);
	} else {
		c->leader_locked = true;
		c->leader_vote = r->status;
	}
	caw_advance(ctx, c);
}

static void caw_prepare_done(struct sn_ctx *ctx, struct rec *r)
{
	struct caw_call *c = r->call;
	struct sn_nodeset failed;
	int err = rec_outcome(ctx, r, &failed);
	int status = err ? err : r->status < 0 ? r->status : r->status && c->leader_vote;
	caw_sm_prepared(&c->sm, status, &failed);
	caw_advance(ctx, c);
}

static void caw_decided(struct sn_ctx *ctx, struct caw_call *c, const struct sn_nodeset *failed)
{
	caw_sm_decided(&c->sm, failed, now_ns(), rnd_next(ctx));
	caw_advance(ctx, c);
}

static void caw_decide_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	rec_outcome(ctx, r, &failed);
	caw_decided(ctx, r->call, &failed);
}

/* One direct decision answered (or, with failed NULL, the loop that sent them ended). */
static void caw_direct_one(struct sn_ctx *ctx, struct caw_call *c, const struct sn_nodeset *failed)
{
	if (failed)
		sn_set_or(&c->direct_missing, failed);
	if (--c->direct_left == 0)
		caw_decided(ctx, c, &c->direct_missing);
}

static void caw_direct_done(struct sn_ctx *ctx, struct rec *r)
{
	struct sn_nodeset failed;
	rec_outcome(ctx, r, &failed);
	caw_direct_one(ctx, r->call, &failed);
}

/* Starts a phase of c over set; false when out of memory. */
static bool caw_launch(struct sn_ctx *ctx, struct caw_call *c, uint8_t type,
		       const struct sn_nodeset *set, rec_done_fn done)
{
	struct sn_msg m = c->m;
	m.type = type;
	m.set = *set;
	if (type == SN_MSG_WRITE) {
		m.flags = c->sm.commit ? SN_F_COMMIT : 0;
		m.value = c->lock_id;
	} else {
		m.total = c->lock_id;
		m.chunk_off = c->ticket;
		m.event = sn_set_next(&c->sm.set, 0);
		if (!c->leader_locked)
			m.flags |= SN_F_WAIT;
	}
	struct rec *r = root_new(ctx, &m, c->rail, ctx->cfg.timeout_ms, done, true);
	if (!r)
		return false;
	r->call = c;
	root_launch(ctx, r); /* may finish at once (a set of this node alone) */
	return true;
}

static void caw_advance(struct sn_ctx *ctx, struct caw_call *c)
{
	switch (c->sm.state) {
	case CAW_PREPARE: {
		/* the set's lowest node first, where calls on the same set wait
		 * their turn instead of refusing each other; then the rest */
		struct sn_nodeset lead, rest = c->sm.set;
		sn_set_clear(&lead);
		sn_set_add(&lead, sn_set_next(&c->sm.set, 0));
		sn_set_andnot(&rest, &lead);
		if (!c->leader_locked) {
			c->lock_id = (uint32_t)next_opid(ctx);
			if (!caw_launch(ctx, c, SN_MSG_EVAL, &lead, caw_leader_done)) {
				caw_sm_prepared(&c->sm, -ENOMEM, &c->sm.set);
				caw_advance(ctx, c);
			}
		} else if (sn_set_empty(&rest)) {
			caw_sm_prepared(&c->sm, c->leader_vote, &rest);
			caw_advance(ctx, c);
		} else if (!caw_launch(ctx, c, SN_MSG_EVAL, &rest, caw_prepare_done)) {
			caw_sm_prepared(&c->sm, -ENOMEM, &c->sm.set);
			caw_advance(ctx, c);
		}
		break;
	}
	case CAW_DECIDE:
		if (!caw_launch(ctx, c, SN_MSG_WRITE, &c->sm.set, caw_decide_done))
			caw_decided(ctx, c, &c->sm.set);
		break;
	case CAW_DECIDE_DIRECT: {
		/* each on its own, around a dead inner node; one extra count
		 * keeps an answer that comes at once from ending the round */
		struct sn_nodeset to = c->sm.direct, one;
		sn_set_clear(&c->direct_missing);
		c->direct_left = 1;
		for (uint32_t n = sn_set_next(&to, 0); n != UINT32_MAX; n = sn_set_next(&to, n + 1)) {
			sn_set_clear(&one);
			sn_set_add(&one, n);
			c->direct_left++;
			if (!caw_launch(ctx, c, SN_MSG_WRITE, &one, caw_direct_done))
				caw_direct_one(ctx, c, &one);
		}
		caw_direct_one(ctx, c, NULL);
		break;
	}
	case CAW_BACKOFF:
	case CAW_DONE:
		break; /* caw_backoffs, caw_deliver */
	}
}

static void caw_backoffs(struct sn_ctx *ctx)
{
	if (!ctx->calls)
		return;
	uint64_t t = now_ns();
	for (struct caw_call *c = ctx->calls; c; c = c->next)
		if (c->sm.state == CAW_BACKOFF && t >= c->sm.backoff_until_ns) {
			ctx->stats.caw_retries++;
			caw_sm_retry(&c->sm);
			c->leader_locked = false;
			caw_advance(ctx, c);
		}
}

/* Hands answers to their callers, outside any message handling, and frees
 * the calls that are over. The callback may start or wait for other calls:
 * the list is walked again from its head after each. */
static int caw_deliver(struct sn_ctx *ctx)
{
	int n = 0;
	for (;;) {
		struct caw_call *c = ctx->calls;
		while (c && !(c->sm.answered && !c->delivered))
			c = c->next;
		if (!c)
			break;
		c->delivered = true;
		struct sn_caw_result res = {
			.status = c->sm.status,
			.written = c->sm.written,
			.failed = c->sm.failed,
		};
		if (res.status == -EBUSY) {
			fail(ctx, res.status, "COMPARE-AND-WRITE met conflicting ones for %u ms",
			     ctx->cfg.timeout_ms);
		} else if (res.status < 0) {
			char list[256];
			sn_set_format(&res.failed, list, sizeof(list));
			fail(ctx, res.status, "COMPARE-AND-WRITE failed: node(s) %s did not answer%s",
			     list, res.written ? " (the others hold the write)" : "");
		}
		n++;
		if (c->fn)
			c->fn(c->arg, &res);
	}
	for (struct caw_call **pp = &ctx->calls; *pp;) {
		struct caw_call *c = *pp;
		if (c->sm.state == CAW_DONE && c->delivered) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
	return n;
}

/* A call's priority: its start in ms of the wall clock, which hosts share
 * well enough for fairness (order alone makes progress: any total order
 * does), then a count that keeps this node's calls of one ms apart. */
static uint64_t caw_ticket(struct sn_ctx *ctx)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	return ms << 20 | (ctx->caw_seq++ & 0xfffff);
}

int sn_caw_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
		 enum sn_cmp op, uint64_t value, bool do_write, uint64_t write_off,
		 uint64_t write_val, sn_caw_fn fn, void *arg)
{
	int rc;
	if (sn_set_empty(set))
		return fail(ctx, -EINVAL, "COMPARE-AND-WRITE on an empty node set");
	if (sn_set_span(set) > ctx->n)
		return fail(ctx, -EINVAL, "COMPARE-AND-WRITE on node %u, beyond the %u nodes",
			    sn_set_span(set) - 1, ctx->n);
	if ((unsigned)op > SN_GE)
		return fail(ctx, -EINVAL, "unknown comparison %d", (int)op);
	if ((rc = check_var(ctx, var_off)) || (do_write && (rc = check_var(ctx, write_off))))
		return rc;
	struct caw_call *c = calloc(1, sizeof(*c));
	if (!c)
		return fail(ctx, -ENOMEM, "out of memory");
	c->m = (struct sn_msg){
		.flags = (uint16_t)(do_write ? SN_F_WRITE : 0),
		.fanout = ctx->cfg.fanout,
		.event = SN_NO_EVENT,
		.cmp = (uint32_t)op,
		.off = var_off,
		.value = value,
		.off2 = do_write ? write_off : 0,
		.value2 = write_val,
	};
	c->rail = pick_rail(ctx, SN_XFER_SYS);
	c->ticket = caw_ticket(ctx);
	c->fn = fn;
	c->arg = arg;
	/* conflicts are retried for one timeout; the phases that follow are
	 * bounded by theirs (caw_lease_ns) */
	caw_sm_init(&c->sm, set, do_write, now_ns(), (uint64_t)ctx->cfg.timeout_ms * 1000000ull);
	c->next = ctx->calls;
	ctx->calls = c;
	caw_advance(ctx, c);
	return 0;
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

/* ------------------------------------------------------------- open/close */

/* The shm provider names its region /dev/shm/PID:IDX:IDX and never removes
 * it when a process is killed; with pids recycled (pid_max 32768), a later
 * process can draw a dead one's name and fail to open with EBUSY. We name
 * regions ourselves, with a random part so a name is never reused, and
 * remove our own regions whose process is gone. */
#define SHM_PREFIX "storm-sn."

static void shm_sweep_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		long pid;
		if (strncmp(e->d_name, SHM_PREFIX, strlen(SHM_PREFIX)) ||
		    sscanf(e->d_name + strlen(SHM_PREFIX), "%ld.", &pid) != 1 || pid <= 0 ||
		    fstatat(dirfd(d), e->d_name, &st, 0) || st.st_uid != geteuid())
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

static int shm_name_endpoint(struct fid_ep *ep, int rail)
{
	uint32_t token = 0;
	char name[64];
	shm_sweep_stale();
	if (getrandom(&token, sizeof(token), 0) != sizeof(token))
		token = (uint32_t)now_ns();
	snprintf(name, sizeof(name), SHM_PREFIX "%ld.%08x.%d", (long)getpid(), token, rail);
	return fi_setname(&ep->fid, name, strlen(name) + 1);
}

/* Every message goes by ofi_rxm's eager protocol, none by rendezvous: a
 * receive rxm matched to a rendezvous is completed by an RMA read from the
 * sender, one per iovec of its send, and when the sender dies (an MM killed
 * in a program multicast) rxm fails that receive once per read. Reposting
 * the buffer on the first failure put it in the receive queue twice (the
 * second failure reposted it again: two messages in one buffer); not
 * reposting lost it, and a node whose buffers were all lost never heard the
 * new MM. An eager message is one stream straight into the posted buffer
 * (rxm's dynamic receive buffers over tcp): a sender that dies in it fails
 * that receive once. With direct send (tcp) the sender does not copy it
 * either, so large eager messages cost no more than a rendezvous. rxm reads
 * the limit when an endpoint opens; other providers ignore it. */
static void rxm_all_eager(size_t chunk_size)
{
	size_t need = SN_WIRE_HDR_MAX + SN_INLINE_MAX + chunk_size;
	const char *cur = getenv("FI_OFI_RXM_EAGER_LIMIT");
	if (cur && strtoull(cur, NULL, 10) >= need)
		return;
	char v[32];
	snprintf(v, sizeof(v), "%zu", need);
	setenv("FI_OFI_RXM_EAGER_LIMIT", v, 1);
}

/* ofi_rxd keeps up to FI_OFI_RXD_MAX_UNACKED datagrams of 4 KiB in flight
 * to a peer, 128 by default: 512 KiB, beyond what the kernel's default
 * receive buffer (208 KiB) takes in while the peer is busy. The rest is
 * dropped, and rxd resends a lost datagram after a back-off that doubles up
 * to 4 s and starts over only once nothing is outstanding to that peer: a
 * node back from a stop, with the backlog it was sent, took 4 s a loss and
 * did not answer a COMPARE-AND-WRITE within the timeout (sn_mptest
 * `cutoff`). 32 fit in the buffer; other providers ignore it. */
static void rxd_window_fits(void)
{
	setenv("FI_OFI_RXD_MAX_UNACKED", "32", 0);
}

/* bootstrap "static:PORT": node i's endpoint on rail r listens on its host
 * at PORT + 2i + r, so no two endpoints of one host collide (a virtual
 * cluster runs every node on one host). */
static unsigned static_port(const struct sn_ctx *ctx, uint32_t node, int rail)
{
	return ctx->static_port + 2 * node + (unsigned)rail;
}

/* Every peer's address from its host and port, as the provider resolves
 * them (fi_getinfo with node and service): no exchange. A host that does
 * not resolve leaves that node unreachable, not the fabric closed. */
static int static_peers(struct sn_ctx *ctx, int rail)
{
	struct rail *rl = &ctx->rails[rail];
	for (uint32_t i = 0; i < ctx->n; i++) {
		if (i == ctx->self)
			continue;
		struct fi_info *hints = fi_dupinfo(rl->info), *info = NULL;
		if (!hints)
			return fail(ctx, -ENOMEM, "out of memory");
		free(hints->src_addr);
		hints->src_addr = NULL;
		hints->src_addrlen = 0;
		free(hints->dest_addr);
		hints->dest_addr = NULL;
		hints->dest_addrlen = 0;
		char port[16];
		snprintf(port, sizeof(port), "%u", static_port(ctx, i, rail));
		int rc = fi_getinfo(FI_VERSION(1, 9), ctx->cfg.hosts[i], port, 0, hints, &info);
		fi_freeinfo(hints);
		if (rc || !info->dest_addr || !info->dest_addrlen ||
		    peer_set(ctx, rail, i, info->dest_addr, info->dest_addrlen) < 0)
			note(ctx, "node %u: no fabric address for %s:%s: %s", i, ctx->cfg.hosts[i],
			     port, rc ? fi_strerror(-rc) : "not usable");
		if (!rc)
			fi_freeinfo(info);
	}
	return 0;
}

/* Registers global memory for remote writes; without it the rail stays on
 * messages. Only the part past SN_GMEM_RESERVED (the layer's own) is
 * exposed. The key and base go out with our address (addr_blob). */
static void rma_open(struct sn_ctx *ctx, struct rail *rl, const char *prov)
{
	const struct fi_info *fi = rl->info;
	uint64_t mode = fi->domain_attr->mr_mode;
	uint8_t *start = ctx->gmem + SN_GMEM_RESERVED;
	size_t len = ctx->gmem_size - SN_GMEM_RESERVED;
	/* a requested key (no FI_MR_PROV_KEY) only needs to be unique here */
	uint64_t want_key = (uint64_t)(rl - ctx->rails) + 1;
	int rc = fi_mr_reg(rl->domain, start, len, FI_REMOTE_WRITE, 0, want_key, 0, &rl->mr,
			   NULL);
	/* FI_MR_ENDPOINT: a region is usable only bound to the endpoint */
	if (!rc && (mode & FI_MR_ENDPOINT) && !(rc = fi_mr_bind(rl->mr, &rl->ep->fid, 0)))
		rc = fi_mr_enable(rl->mr);
	if (rc) {
		note(ctx, "%s: cannot register global memory (%s): messages", prov,
		     fi_strerror(-rc));
		if (rl->mr)
			fi_close(&rl->mr->fid);
		rl->mr = NULL;
		return;
	}
	rl->mr_key = fi_mr_key(rl->mr);
	/* address = base + offset: a virtual address, or one relative to the
	 * registered region's start */
	rl->mr_base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)ctx->gmem
					       : (uint64_t)0 - SN_GMEM_RESERVED;
}

static int rail_open(struct sn_ctx *ctx, int rail, const char *prov)
{
	struct rail *rl = &ctx->rails[rail];
	struct fi_info *hints = fi_allocinfo();
	int rc;
	rl->bell_fd = -1;
	if (!hints)
		return fail(ctx, -ENOMEM, "out of memory");
	/* Messages in order (sn.h promises one sender's transfers in order);
	 * RMA where the provider has it (FI_MSG alone otherwise, below), in
	 * order with them: send after write, so a chunk's header,
	 * sent right after its write, is handled by the peer once the chunk
	 * is in place, without waiting for the write's completion (waiting
	 * for it, delivery complete, let a stopped or dead peer stall every
	 * later write on shm, which completes a sender's operations in the
	 * order posted); write after write, so of two transfers into one
	 * range the later stays */
	hints->caps = ctx->cfg.rma ? FI_MSG | FI_RMA : FI_MSG;
	hints->tx_attr->msg_order = hints->rx_attr->msg_order =
		ctx->cfg.rma ? FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_WAW : FI_ORDER_SAS;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	/* no FI_MR_LOCAL: providers that need registered buffers are used under
	 * ofi_rxm, which registers for us */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	/* sockets' own progress threads starve on a busy node and drop
	 * connections; we drive progress ourselves (it then has no wait fd) */
	if (!strncmp(prov, "sockets", 7))
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	char port[16];
	const char *host = NULL;
	if (ctx->boot == BOOT_STATIC) {
		/* bind where every peer computes us to be */
		host = ctx->cfg.hosts[ctx->self];
		snprintf(port, sizeof(port), "%u", static_port(ctx, ctx->self, rail));
	}
	rc = fi_getinfo(FI_VERSION(1, 9), host, host ? port : NULL, host ? FI_SOURCE : 0, hints,
			&rl->info);
	if (rc == -FI_ENODATA && (hints->caps & FI_RMA)) {
		hints->caps = FI_MSG;
		hints->tx_attr->msg_order = hints->rx_attr->msg_order = FI_ORDER_SAS;
		rc = fi_getinfo(FI_VERSION(1, 9), host, host ? port : NULL,
				host ? FI_SOURCE : 0, hints, &rl->info);
	}
	fi_freeinfo(hints);
	if (rc)
		return fail(ctx, -ENOENT, "libfabric provider '%s' is not available here: %s",
			    prov, fi_strerror(-rc));
	struct fi_info *fi = rl->info;
	if ((rc = fi_fabric(fi->fabric_attr, &rl->fabric, NULL)) ||
	    (rc = fi_domain(rl->fabric, fi, &rl->domain, NULL)))
		return fail(ctx, rc, "opening provider '%s': %s", prov, fi_strerror(-rc));

	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
		.size = ctx->cfg.rx_depth + 4096,
	};
	rl->wait_fd = -1;
	if (fi_cq_open(rl->domain, &cq_attr, &rl->cq, NULL) == 0) {
		if (fi_control(&rl->cq->fid, FI_GETWAIT, &rl->wait_fd))
			rl->wait_fd = -1;
	} else {
		cq_attr.wait_obj = FI_WAIT_NONE;
		if ((rc = fi_cq_open(rl->domain, &cq_attr, &rl->cq, NULL)))
			return fail(ctx, rc, "opening completion queue: %s", fi_strerror(-rc));
	}
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = ctx->n};
	if ((rc = fi_av_open(rl->domain, &av_attr, &rl->av, NULL)))
		return fail(ctx, rc, "opening address vector: %s", fi_strerror(-rc));
	/* A listener bound to an ephemeral port (port 0, SO_REUSEADDR, as tcp
	 * binds it) may be handed a port that another socket with
	 * SO_REUSEADDR holds, typically a connection just opened by a daemon
	 * starting beside us; its listen() then fails with EADDRINUSE, and a
	 * new endpoint gets another port. A fixed port (static bootstrap)
	 * gets the same answer each time, so it is tried once. */
	for (int attempt = 0;; attempt++) {
		if (!(rc = fi_endpoint(rl->domain, fi, &rl->ep, NULL)) &&
		    !(rc = fi_ep_bind(rl->ep, &rl->av->fid, 0)) &&
		    !(rc = fi_ep_bind(rl->ep, &rl->cq->fid, FI_TRANSMIT | FI_RECV)) &&
		    !(!strcmp(fi->fabric_attr->prov_name, "shm") &&
		      (rc = shm_name_endpoint(rl->ep, rail))))
			rc = fi_enable(rl->ep);
		if (rc != -FI_EADDRINUSE || host || attempt == 7)
			break;
		note(ctx, "rail %d (%s): the port it was given is in use; opening again", rail,
		     prov);
		if (rl->ep)
			fi_close(&rl->ep->fid);
		rl->ep = NULL;
	}
	if (rc)
		return fail(ctx, rc, "opening endpoint on '%s': %s", prov, fi_strerror(-rc));

	size_t maxmsg = fi->ep_attr->max_msg_size;
	rl->max_payload = ctx->cfg.chunk_size;
	if (maxmsg && rl->max_payload > maxmsg - SN_WIRE_HDR_MAX)
		rl->max_payload = maxmsg - SN_WIRE_HDR_MAX;
	/* a write is one operation, bounded like a message; chunk_len is 32 bits */
	rl->rma_chunk = ctx->cfg.rma_chunk_size;
	if (maxmsg && rl->rma_chunk > maxmsg)
		rl->rma_chunk = maxmsg;
	if (rl->rma_chunk > UINT32_MAX)
		rl->rma_chunk = UINT32_MAX;
	if (fi->tx_attr->iov_limit < 2)
		return fail(ctx, -ENOTSUP, "provider '%s' cannot send two-part messages", prov);

	uint8_t addr[SN_ADDR_MAX];
	size_t alen = sizeof(addr);
	if ((rc = fi_getname(&rl->ep->fid, addr, &alen)))
		return fail(ctx, rc, "fi_getname: %s", fi_strerror(-rc));
	if (alen > SN_ADDR_MAX)
		return fail(ctx, -EOVERFLOW, "fabric address of %zu bytes (at most %d)", alen,
			    SN_ADDR_MAX);
	rl->addrs = malloc((size_t)ctx->n * SN_ADDR_MAX);
	rl->next = malloc((size_t)ctx->n * SN_ADDR_MAX);
	rl->alens = calloc(ctx->n, sizeof(size_t));
	rl->nlens = calloc(ctx->n, sizeof(size_t));
	rl->stale = calloc(ctx->n, sizeof(bool));
	rl->peers = malloc(ctx->n * sizeof(fi_addr_t));
	rl->rma = calloc(ctx->n, sizeof(bool));
	rl->nrma = calloc(ctx->n, sizeof(bool));
	rl->rkey = calloc(ctx->n, sizeof(uint64_t));
	rl->rbase = calloc(ctx->n, sizeof(uint64_t));
	rl->nrkey = calloc(ctx->n, sizeof(uint64_t));
	rl->nrbase = calloc(ctx->n, sizeof(uint64_t));
	rl->tx_seq = calloc(ctx->n, sizeof(uint64_t));
	rl->placed_seq = calloc(ctx->n, sizeof(uint64_t));
	rl->inflight = calloc(ctx->n, sizeof(*rl->inflight));
	rl->tx_held = calloc(ctx->n, sizeof(uint32_t));
	/* each peer's part of the queue: peers cut off take only theirs */
	size_t share = fi->tx_attr->size / (ctx->n ? ctx->n : 1);
	rl->tx_held_max = share < SN_PEER_TX_MIN   ? SN_PEER_TX_MIN
			  : share > SN_PEER_TX_MAX ? SN_PEER_TX_MAX
						   : (uint32_t)share;
	if (!rl->addrs || !rl->next || !rl->alens || !rl->nlens || !rl->stale || !rl->peers ||
	    !rl->rma || !rl->nrma || !rl->rkey || !rl->rbase || !rl->nrkey || !rl->nrbase ||
	    !rl->tx_seq || !rl->placed_seq || !rl->inflight || !rl->tx_held)
		return fail(ctx, -ENOMEM, "out of memory");
	if (rl->wait_fd < 0 && !strcmp(fi->fabric_attr->prov_name, "shm")) {
		rl->bell_due = calloc(ctx->n, sizeof(bool));
		rl->bell_list = calloc(ctx->n, sizeof(uint32_t));
		rl->map = calloc(ctx->n, sizeof(uint8_t *));
		rl->map_len = calloc(ctx->n, sizeof(size_t));
		rl->map_asked_ns = calloc(ctx->n, sizeof(uint64_t));
		rl->nmap = ctx->n;
		if (!rl->bell_due || !rl->bell_list || !rl->map || !rl->map_len ||
		    !rl->map_asked_ns)
			return fail(ctx, -ENOMEM, "out of memory");
		if ((rl->bell_fd = bell_open(addr, alen)) < 0)
			return fail(ctx, rl->bell_fd, "opening the doorbell of rail %d: %s", rail,
				    strerror(-rl->bell_fd));
		rl->wait_fd = rl->bell_fd;
		/* naming sn_spin_yield_after is also what links spinlock.c, and
		 * so its lock functions, into every program of this library */
		note(ctx, "rail %d (shm): doorbell open; region locks yield after %u spins", rail,
		     sn_spin_yield_after);
	}
	/* global memory is exposed to remote writes only when asked for */
	if (ctx->cfg.rma && (fi->caps & FI_RMA) && alen + RMA_TRAILER <= SN_ADDR_MAX)
		rma_open(ctx, rl, prov);
	note(ctx, "rail %d (%s): XFER-AND-SIGNAL by %s", rail, prov,
	     rl->mr ? "RMA write + header message" : "message");
	for (uint32_t i = 0; i < ctx->n; i++)
		rl->peers[i] = FI_ADDR_NOTAVAIL;
	/* our own entry: messages to ourselves go through the provider too */
	if ((rc = peer_set(ctx, rail, ctx->self, addr, alen)))
		return fail(ctx, rc, "our own fabric address is not usable on '%s'", prov);
	uint8_t blob[SN_ADDR_MAX];
	size_t blen = addr_blob(rl, addr, alen, blob);
	if (ctx->boot == BOOT_DIR &&
	    (rc = sn_boot_publish(ctx->bootdir, rail, ctx->self, blob, blen)))
		return fail(ctx, rc, "publishing address in %s: %s", ctx->bootdir, strerror(-rc));
	if (ctx->boot == BOOT_STATIC && (rc = static_peers(ctx, rail)))
		return rc;

	size_t bufsz = SN_WIRE_HDR_MAX + rl->max_payload;
	rl->rx = calloc(ctx->cfg.rx_depth, sizeof(struct slot));
	rl->rx_mem = malloc(bufsz * ctx->cfg.rx_depth);
	if (!rl->rx || !rl->rx_mem)
		return fail(ctx, -ENOMEM, "out of memory for receive buffers");
	for (unsigned i = 0; i < ctx->cfg.rx_depth; i++) {
		struct slot *s = &rl->rx[i];
		s->kind = SLOT_RX;
		s->rail = rail;
		s->buf = rl->rx_mem + bufsz * i;
		s->size = bufsz;
		if ((rc = post_rx(ctx, rl, s)))
			return rc;
	}
	snprintf(ctx->provider[rail], sizeof(ctx->provider[rail]), "%s", prov);
	return 0;
}

static void rail_close(struct rail *rl)
{
	if (rl->ep)
		fi_close(&rl->ep->fid);
	if (rl->mr)
		fi_close(&rl->mr->fid);
	if (rl->av)
		fi_close(&rl->av->fid);
	if (rl->cq)
		fi_close(&rl->cq->fid);
	if (rl->domain)
		fi_close(&rl->domain->fid);
	if (rl->fabric)
		fi_close(&rl->fabric->fid);
	if (rl->info)
		fi_freeinfo(rl->info);
	while (rl->txq_head) {
		struct slot *s = rl->txq_head;
		rl->txq_head = s->next;
		slot_drop_copy(s);
		free(s);
	}
	while (rl->failq) {
		struct slot *s = rl->failq;
		rl->failq = s->next;
		slot_drop_copy(s);
		free(s);
	}
	free(rl->rx);
	free(rl->rx_mem);
	free(rl->peers);
	free(rl->addrs);
	free(rl->alens);
	free(rl->bell_due);
	free(rl->bell_list);
	for (uint32_t i = 0; rl->map && i < rl->nmap; i++)
		map_drop(rl, i);
	free(rl->map);
	free(rl->map_len);
	free(rl->map_asked_ns);
	if (rl->bell_fd >= 0)
		close(rl->bell_fd);
	free(rl->next);
	free(rl->nlens);
	free(rl->stale);
	free(rl->rma);
	free(rl->nrma);
	free(rl->rkey);
	free(rl->rbase);
	free(rl->nrkey);
	free(rl->nrbase);
	free(rl->tx_seq);
	free(rl->placed_seq);
	free(rl->inflight);
	free(rl->tx_held);
}

/* "dir:PATH", "static:PORT" (with cfg->hosts) or "external". */
static int parse_bootstrap(struct sn_ctx *ctx, const struct sn_config *cfg)
{
	const char *b = cfg->bootstrap ? cfg->bootstrap : "(none)";
	if (!strncmp(b, "dir:", 4) && b[4]) {
		ctx->boot = BOOT_DIR;
		return 0;
	}
	if (!strcmp(b, "external")) {
		ctx->boot = BOOT_EXTERNAL;
		return 0;
	}
	if (!strncmp(b, "static:", 7)) {
		char *end;
		unsigned long port = strtoul(b + 7, &end, 10);
		if (end == b + 7 || *end || port == 0 ||
		    port + 2ull * ctx->n + 1 > 65535)
			return fail(ctx, -EINVAL, "bootstrap '%s': the port must leave room for "
				    "2 per node below 65536", b);
		if (!cfg->hosts)
			return fail(ctx, -EINVAL, "bootstrap '%s' needs every node's host", b);
		for (uint32_t i = 0; i < ctx->n; i++)
			if (!cfg->hosts[i] || !cfg->hosts[i][0])
				return fail(ctx, -EINVAL, "bootstrap '%s': node %u has no host", b, i);
		ctx->boot = BOOT_STATIC;
		ctx->static_port = (unsigned)port;
		return 0;
	}
	return fail(ctx, -EINVAL,
		    "bootstrap '%s' not understood (expected dir:PATH, static:PORT or external)", b);
}

/* sn_open fails before a context exists to hold the reason */
static _Thread_local char open_error[512];

int sn_open(const struct sn_config *cfg, struct sn_ctx **out)
{
	struct sn_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc = 0;
	*out = NULL;
	if (!ctx)
		return -ENOMEM;
	ctx->cfg = *cfg;
	ctx->self = cfg->node_id;
	ctx->n = cfg->node_count;
	/* operations are named (origin, opid): a restarted daemon must not
	 * reuse the ids its predecessor's operations still hold on its peers
	 * (their records live until their deadline), so it starts at random */
	if (getrandom(&ctx->next_opid, sizeof(ctx->next_opid), 0) != sizeof(ctx->next_opid))
		ctx->next_opid = (uint32_t)now_ns();
	ctx->rng = ((uint64_t)ctx->next_opid << 32) ^ now_ns() ^ 0x9e3779b97f4a7c15ull;
	ctx->epfd = -1;
	ctx->ino_fd = -1;
	ctx->gmem_fd = -1;
	if (!ctx->cfg.provider)
		ctx->cfg.provider = "tcp;ofi_rxm";
	if (!ctx->cfg.fanout)
		ctx->cfg.fanout = 4;
	if (!ctx->cfg.timeout_ms)
		ctx->cfg.timeout_ms = 5000;
	if (!ctx->cfg.chunk_size)
		ctx->cfg.chunk_size = 128 * 1024;
	if (!ctx->cfg.rma_chunk_size)
		ctx->cfg.rma_chunk_size = SN_RMA_CHUNK_DEFAULT;
	if (!ctx->cfg.rx_depth)
		ctx->cfg.rx_depth = 32;
	rxm_all_eager(ctx->cfg.chunk_size);
	rxd_window_fits();
	if (ctx->n == 0 || ctx->n > SN_MAX_NODES)
		rc = fail(ctx, -EINVAL, "node count %u out of range 1..%d", ctx->n, SN_MAX_NODES);
	else if (ctx->self >= ctx->n)
		rc = fail(ctx, -EINVAL, "node id %u out of range 0..%u", ctx->self, ctx->n - 1);
	else if (ctx->cfg.fanout > SN_MAX_FANOUT)
		rc = fail(ctx, -EINVAL, "fan-out %u out of range 1..%d", ctx->cfg.fanout,
			  SN_MAX_FANOUT);
	else if (cfg->gmem_size < SN_GMEM_RESERVED + 8)
		rc = fail(ctx, -EINVAL, "global memory of %zu bytes is smaller than %d",
			  cfg->gmem_size, SN_GMEM_RESERVED + 8);
	if (rc)
		goto err;
	if ((rc = parse_bootstrap(ctx, cfg)))
		goto err;
	if (ctx->boot == BOOT_DIR) {
		snprintf(ctx->bootdir, sizeof(ctx->bootdir), "%s", cfg->bootstrap + 4);
		if ((rc = sn_boot_mkdir(ctx->bootdir))) {
			rc = fail(ctx, rc, "cannot create the bootstrap directory %s: %s",
				  ctx->bootdir, strerror(-rc));
			goto err;
		}
		/* watched before the first scan, so no arrival is missed */
		ctx->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (ctx->ino_fd >= 0 &&
		    inotify_add_watch(ctx->ino_fd, ctx->bootdir, IN_MOVED_TO) < 0) {
			close(ctx->ino_fd);
			ctx->ino_fd = -1;
		}
	}
	ctx->gmem_size = (cfg->gmem_size + 4095) & ~(size_t)4095;
	/* a memory file, so that peers on this host can map it (bell.h) */
	ctx->gmem_fd = memfd_create("storm-gmem", MFD_CLOEXEC);
	if (ctx->gmem_fd < 0 || ftruncate(ctx->gmem_fd, (off_t)ctx->gmem_size)) {
		rc = fail(ctx, -errno, "cannot make %zu bytes of global memory", ctx->gmem_size);
		goto err;
	}
	ctx->gmem = mmap(NULL, ctx->gmem_size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->gmem_fd,
			 0);
	if (ctx->gmem == MAP_FAILED) {
		ctx->gmem = NULL;
		rc = fail(ctx, -errno, "cannot map %zu bytes of global memory", ctx->gmem_size);
		goto err;
	}
	ctx->nrails = 1;
	if ((rc = rail_open(ctx, 0, ctx->cfg.provider)))
		goto err;
	if (cfg->sys_provider && *cfg->sys_provider) {
		ctx->nrails = 2;
		if ((rc = rail_open(ctx, 1, cfg->sys_provider)))
			goto err;
	}
	/* whoever published before us; later ones come through the watch */
	for (int r = 0; ctx->boot == BOOT_DIR && r < ctx->nrails; r++)
		for (uint32_t i = 0; i < ctx->n; i++)
			if (i != ctx->self)
				peer_read_file(ctx, r, i);
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd >= 0 && ctx->ino_fd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN};
		epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->ino_fd, &ev);
	}
	for (int i = 0; i < ctx->nrails && ctx->epfd >= 0; i++) {
		struct epoll_event ev = {.events = EPOLLIN};
		if (ctx->rails[i].wait_fd < 0 ||
		    epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->rails[i].wait_fd, &ev)) {
			close(ctx->epfd);
			ctx->epfd = -1;
		}
	}
	ctx->opened = true;
	*out = ctx;
	return 0;
err:
	snprintf(open_error, sizeof(open_error), "%s", ctx->err);
	sn_close(ctx);
	return rc;
}

const char *sn_open_error(void) { return open_error; }

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
	if (ctx->opened)
		wait_until(ctx, drained, NULL,
			   now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000ull);
	for (int i = 0; i < ctx->nrails; i++)
		rail_close(&ctx->rails[i]);
	while (ctx->recs) {
		struct rec *r = ctx->recs;
		ctx->recs = r->next;
		free(r->owned);
		free(r);
	}
	while (ctx->free_slots) {
		struct slot *s = ctx->free_slots;
		ctx->free_slots = s->next;
		free(s);
	}
	while (ctx->calls) {
		struct caw_call *c = ctx->calls;
		ctx->calls = c->next;
		free(c);
	}
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	if (ctx->ino_fd >= 0)
		close(ctx->ino_fd);
	if (ctx->gmem)
		munmap(ctx->gmem, ctx->gmem_size);
	if (ctx->gmem_fd >= 0)
		close(ctx->gmem_fd);
	free(ctx);
}
