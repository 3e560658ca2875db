/* Private to the network layer: the context, its rails and records, and the
 * helpers that more than one of its files uses. sn.h is the public face. */
#ifndef SN_INT_H
#define SN_INT_H

#include "sn.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

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
 * overlaps one goes as a message too (sni_send_msg), ordered behind it. */
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
	 * just before the header that announces it (sni_send_msg) */
	bool write;
	uint64_t roff;
	bool big;            /* counted in its rail's big_tx */
	struct fwd_copy *copy; /* the forwarded chunk it sends from, if any */
	/* header, then an inline payload; not cleared on reuse */
	uint8_t hdr[SN_WIRE_HDR_MAX + SN_INLINE_MAX];
	/* every send slot from its malloc to its free (ctx->all_slots), so
	 * that those a provider still held when the context was closed
	 * without draining (sn_close_now) are freed too; not cleared on reuse */
	struct slot *all_next, **all_pprev;
};

/* Connection set-up (rxm over tcp or sockets) is progressed only inside
 * fi_cq_read, and an incoming connection request does not make the CQ's
 * wait fd readable. A node that sleeps until a message arrives can then
 * never accept the connection that message needs: a tree child whose only
 * traffic comes from its parent would sleep forever. So a sleeper wakes at
 * least this often to drive progress (struct rail, cm_poll_ms). */
#define SN_CM_POLL_MS 5
#define SN_CM_POLL_RXM_MS 12

struct rail {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int wait_fd;
	/* the longest this rail may go without progress while its wait fd is
	 * quiet, for connection set-up (progress.c, sn_next_timeout_ms) */
	unsigned cm_poll_ms;
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
	/* per peer: when its last message came, when our last send to it
	 * completed (0: never); read only to describe a silent peer */
	uint64_t *rx_ns, *tx_done_ns;
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

/* How long a tombstone (struct rec, tomb) waits for a late chunk, in the
 * last down message's budgets: a chunk of its transfer that comes after
 * it is gone is dropped, and its remote event never signalled here. */
#define SN_TOMB_BUDGETS 4

/* A message received while a test point holds this node's handling
 * (sn_config.fault_hold_off), kept for when it lets go. */
struct held_msg {
	struct held_msg *next;
	int rail;
	size_t len;
	uint8_t buf[];
};

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
	struct caw_gather gather; /* a gathering EVAL: its subtree's (caw.h) */
	bool in_set, local_done, finished;
	bool local_failed;      /* done here, but without effect: not confirmed */
	/* An XFER that expired here before all its chunks came: finished (its
	 * parent told), but kept to place, forward and signal the late ones,
	 * until every byte is here or SN_TOMB_BUDGETS budgets pass without a
	 * chunk (treeop.c) */
	bool tomb;
	bool lock_wait;         /* a CAW prepare queued for a lock here (caw.h) */
	uint64_t round_in;      /* the round of progress that brought it */
	bool eval_deferred;     /* a CAW prepare held for a later round (caw_net.c) */
	uint64_t wait_mark;     /* locks.releases when it queued */
	uint64_t bytes;         /* XFER bytes placed here */
	uint64_t deadline_ns;
	uint32_t budget_ms;     /* the last down message's */
	struct sn_nodeset gone; /* children a send to failed: sent nothing more */
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
	struct caw_gather leader_gather, gather; /* a gathering read's: the
				     leader's, then the whole set's */
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

/* What a lower file calls in a higher one, registered by sn_open (sn.c) so
 * that no file calls up into another: the send queues tell the tree
 * operations that a send of theirs ended, and a tree operation's member
 * hands COMPARE-AND-WRITE's phases to caw_net.c. */
struct sni_hooks {
	/* a send of r's completed or was refused (after send_failed) */
	void (*rec_sent)(struct sn_ctx *ctx, struct rec *r);
	/* a send of r's to dest failed: the peer is given up */
	void (*send_failed)(struct sn_ctx *ctx, struct rec *r, uint32_t dest);
	/* a CAW prepare or decision arrived at a member; false: queued */
	bool (*caw_prepare)(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m);
	void (*caw_decide)(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m);
	/* a prepare waiting for its lock gave up: younger ones may lock now */
	void (*caw_regrant)(struct sn_ctx *ctx);
};

struct sn_ctx {
	struct sn_config cfg;
	uint64_t round;         /* calls of sn_progress */
	struct sni_hooks hooks;
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
	/* fault_hold_off: what came since it held a transfer's chunk, in order,
	 * and that transfer (a transfer is held once) */
	struct held_msg *held, **held_tail;
	bool holding;
	uint32_t hold_origin, hold_opid;
	struct caw_locks locks;   /* this node's, as a member of CAWs */
	uint32_t caw_seq;         /* COMPARE-AND-WRITEs started here: their tickets */
	struct caw_call *calls;   /* the CAWs this node coordinates */
	uint64_t rng;             /* back-off of conflicting CAWs */
	struct event events[SN_MAX_EVENTS];
	struct slot *free_slots; /* cache of SN_SLOT_CACHE send slots at most */
	struct slot *all_slots;  /* every send slot (struct slot: all_next) */
	unsigned nfree_slots;
	uint64_t tx_outstanding; /* sends handed out and not yet completed */
	struct sn_stats stats;
	char err[512];
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 3, 4))) static inline int fail(struct sn_ctx *ctx, int err,
							     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
	return err;
}

static inline void note(struct sn_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Problems seen while serving others (malformed messages, late answers):
 * logged, never fatal. */
static inline void note(struct sn_ctx *ctx, const char *fmt, ...)
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

/* shm moves a message or write of more than this by a copy its receiver
 * makes (the kernel's cross-process copy), and completes the send only when
 * the sender next polls after that copy: the receiver rings the sender back
 * so that it does not sleep on a finished send. */
#define SN_BELL_COPY_MIN 4096
/* progress rounds between looks at the bell when the node does not sleep */
#define SN_BELL_READ_ROUNDS 1024
/* how long we poll every millisecond for such a ring back */
#define SN_BELL_STALL_MS 100

/* event.c */
void sni_event_signal(struct sn_ctx *ctx, unsigned ev);
void sni_event_fail(struct sn_ctx *ctx, unsigned ev, int err,
		    const struct sn_nodeset *failed);

/* rail.c */
void sni_peer_use(struct sn_ctx *ctx, int rail, uint32_t node);
void sni_peers_refresh(struct sn_ctx *ctx);
int sni_post_rx(struct sn_ctx *ctx, struct rail *rl, struct slot *s);
void sni_slot_drop_copy(struct slot *s);
int sni_ctx_open(const struct sn_config *cfg, struct sn_ctx **out);
void sni_ctx_free(struct sn_ctx *ctx);

/* queue.c */
void sni_bell_mark(struct rail *rl, uint32_t node);
int sni_send_msg(struct sn_ctx *ctx, int rail, uint32_t dest, const struct sn_msg *m,
		 const void *payload, size_t plen, struct rec *r);
void sni_tx_flush(struct sn_ctx *ctx, struct rail *rl);
void sni_tx_done(struct sn_ctx *ctx, struct slot *s);
void sni_tx_failed(struct sn_ctx *ctx, struct slot *s, int err);

/* gmem.c */
int sni_check_range(struct sn_ctx *ctx, uint64_t off, uint64_t len, bool user);
int sni_check_var(struct sn_ctx *ctx, uint64_t off);
ssize_t sni_rma_write(struct rail *rl, struct slot *s);
bool sni_map_write(struct sn_ctx *ctx, struct rail *rl, struct slot *s);
void sni_map_drop(struct rail *rl, uint32_t node);
int sni_bell_take(struct sn_ctx *ctx, struct rail *rl);
bool sni_overlaps_inflight(struct rail *rl, uint32_t d, uint64_t lo, uint64_t hi);
void sni_note_inflight(struct rail *rl, uint32_t d, uint64_t lo, uint64_t hi, uint64_t seq);

/* treeop.c */
void sni_rec_release(struct sn_ctx *ctx, struct rec *r);
void sni_rec_forward(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m,
		     const void *payload);
void sni_rec_try_finish(struct sn_ctx *ctx, struct rec *r, bool expired);
void sni_rec_expire(struct sn_ctx *ctx, struct rec *r);
void sni_hold_release(struct sn_ctx *ctx);
void sni_rec_child_failed(struct sn_ctx *ctx, struct rec *r, uint32_t child);
void sni_combine_status(struct rec *r, int32_t status);
void sni_handle_rx(struct sn_ctx *ctx, int rail, const uint8_t *buf, size_t len);
int sni_next_opid(struct sn_ctx *ctx);
int sni_pick_rail(struct sn_ctx *ctx, unsigned flags);
int sni_rec_outcome(struct sn_ctx *ctx, struct rec *r, struct sn_nodeset *failed);
void sni_root_identity(struct sn_ctx *ctx, struct sn_msg *m, bool ack);
struct rec *sni_root_new(struct sn_ctx *ctx, struct sn_msg *m, int rail,
			 uint64_t budget_ms, rec_done_fn done, bool ack);
void sni_root_launch(struct sn_ctx *ctx, struct rec *r);

/* caw_net.c */
bool sni_caw_member_prepare(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m);
void sni_caw_grant_waiters(struct sn_ctx *ctx);
void sni_caw_serve_deferred(struct sn_ctx *ctx);
void sni_caw_member_decide(struct sn_ctx *ctx, struct rec *r, const struct sn_msg *m);
void sni_caw_backoffs(struct sn_ctx *ctx);
int sni_caw_deliver(struct sn_ctx *ctx);
void sni_caw_cancel(struct sn_ctx *ctx);

#endif
