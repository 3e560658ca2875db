/* storm network abstraction: global memory, events and the three primitives
 * (XFER-AND-SIGNAL, TEST-EVENT, COMPARE-AND-WRITE) over libfabric.
 *
 * Conventions: functions return 0 (or a documented non-negative value) on
 * success and a negative errno on failure; the context keeps a one-line
 * description of the last error (sn_strerror). A context is single-threaded:
 * one thread drives it, and every blocking call also drives progress, which is
 * what forwards tree traffic through this node. A node that is not inside a
 * blocking call must call sn_progress() whenever sn_wait_fd() is readable.
 */
#ifndef STORM_SN_H
#define STORM_SN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeset.h"

#define SN_MAX_EVENTS 256

struct sn_ctx;

struct sn_config {
	const char *provider;     /* libfabric provider, "tcp;ofi_rxm" if NULL */
	const char *sys_provider; /* second rail for system traffic, or NULL */
	uint32_t node_id;         /* this node, 0 .. node_count-1 */
	uint32_t node_count;
	size_t gmem_size;         /* bytes of global memory, same on every node */
	/* How nodes learn each other's fabric addresses. None waits for the
	 * others: a peer whose address is not known yet is unreachable (sends
	 * to it fail as to a dead node) until it is, except to a node relaying
	 * another node's operation, which waits for the address while that
	 * operation lives.
	 *   "dir:PATH"    each node publishes a file in PATH, read by all
	 *   "static:PORT" computed from hosts[] (node i on rail r listens at
	 *                 PORT + 2i + r): providers addressed by host and port
	 *   "external"    the caller learns them and hands them in
	 *                 (sn_local_addr, sn_peer_addr) */
	const char *bootstrap;
	const char *const *hosts; /* "static:": each node's host, node_count of them */
	unsigned fanout;          /* tree fan-out for sets, default 4 */
	unsigned timeout_ms;      /* bound on any operation, default 5000 */
	unsigned spin_us;         /* busy-poll this long before sleeping, default 0
				     (without a wait fd, 20 µs of sched_yield
				     polling always precede the first sleep) */
	size_t chunk_size;        /* payload bytes per message, default 128 KiB */
	size_t rma_chunk_size;    /* bytes per chunk sent by RMA write, default
				     1 MiB (at most the provider's largest
				     transfer); a chunk that must go as messages
				     instead is split into chunk_size pieces */
	unsigned rx_depth;        /* receive buffers posted per rail, default 32 */
	uint64_t fault_die_after; /* fault injection: SIGKILL self once this many
				     bytes were received (0: never) */
	uint64_t fault_hold_off;  /* fault injection: once a chunk at or past this
				     offset in its transfer (0: never) comes for a
				     transfer this node holds a record of, handle
				     nothing it receives until that record has
				     expired, as a node descheduled between two
				     chunks; once per transfer */
	bool rma;                 /* XFER-AND-SIGNAL chunks by RMA write into the
				     destination's global memory where the
				     provider has FI_RMA and the peer published
				     its key (not with "static:"); else messages.
				     On by default; SN_RMA=0 forces messages */
};
#define SN_RMA_DEFAULT 1
#define SN_RMA_CHUNK_DEFAULT (1u << 20)

/* Fills defaults and then overrides from environment variables SN_PROVIDER,
 * SN_SYS_PROVIDER, SN_FANOUT, SN_TIMEOUT_MS, SN_SPIN_US, SN_CHUNK_SIZE,
 * SN_RMA_CHUNK_SIZE, SN_RMA
 * (1, the default: RMA writes where the provider has them; 0: messages
 * only). */
void sn_config_defaults(struct sn_config *cfg);

int sn_open(const struct sn_config *cfg, struct sn_ctx **out);
/* This node's fabric address on a rail (buf of *len bytes, SN_ADDR_MAX
 * suffice). 0, or -ENOSPC/-EINVAL. */
#define SN_ADDR_MAX 256
int sn_local_addr(const struct sn_ctx *ctx, int rail, void *buf, size_t *len);
/* The IP address (text) rail 0 listens on, for another endpoint of this
 * node to be reached the same way (sn_ep_open's src); -ENOENT when the
 * provider's addresses are not IP ones (shm). */
int sn_local_host(const struct sn_ctx *ctx, char *buf, size_t len);
/* A peer's address on a rail, learned by the caller: a first one is usable
 * at once; a changed one (the peer restarted) replaces the old at its next
 * use. 0 or -errno (sn_strerror says why). */
int sn_peer_addr(struct sn_ctx *ctx, int rail, uint32_t node, const void *addr, size_t len);
int sn_rail_count(const struct sn_ctx *ctx);
/* How many nodes (this one included) have an address on every rail. */
uint32_t sn_peers_known(const struct sn_ctx *ctx);
/* Does node have an address on every rail (this node: yes)? */
bool sn_peer_known(const struct sn_ctx *ctx, uint32_t node);
/* Drives progress until every node's address is known: for programs that
 * start all their nodes together and need all of them (tests, benchmarks);
 * the daemons never wait. 0, or -ETIMEDOUT naming a missing node. */
int sn_wait_peers(struct sn_ctx *ctx, unsigned timeout_ms);

/* Why the last sn_open in this thread failed. */
const char *sn_open_error(void);
/* Closes the context once what others wait on from it is done (forwards,
 * ACKs, its COMPARE-AND-WRITE calls and their parts), or after the
 * operation timeout: a call to a dead node ends only there. */
void sn_close(struct sn_ctx *ctx);
/* The same without waiting for anything in flight: for a caller that
 * knows no peer waits on anything from it any more (the MM once every node
 * holds its shutdown command), whose answers and send completions would
 * only come from nodes that are leaving, or at the operation timeout.
 * Calls still open are answered -ECANCELED; what is in flight is freed. */
void sn_close_now(struct sn_ctx *ctx);

const char *sn_strerror(const struct sn_ctx *ctx);
uint32_t sn_node_id(const struct sn_ctx *ctx);
uint32_t sn_node_count(const struct sn_ctx *ctx);
const char *sn_provider_name(const struct sn_ctx *ctx, int rail);
/* Whether a rail carries XFER-AND-SIGNAL chunks by RMA write. */
bool sn_rail_rma(const struct sn_ctx *ctx, int rail);

/* Global memory: the same offsets name the same variables on every node. The
 * first SN_GMEM_RESERVED bytes belong to the library. */
#define SN_GMEM_RESERVED 4096
void *sn_gmem(struct sn_ctx *ctx);
size_t sn_gmem_size(const struct sn_ctx *ctx);
uint64_t sn_var_load(struct sn_ctx *ctx, uint64_t off);
void sn_var_store(struct sn_ctx *ctx, uint64_t off, uint64_t value);

/* Events are counting: each signal adds one, each successful test takes one.
 * Event ids are global, so a remote event is named by the same id. An event
 * that an operation failed on also carries the error and the nodes. */
int sn_event_signal(struct sn_ctx *ctx, unsigned ev);
/* TEST-EVENT: 1 if the event was signalled (and consumes it), 0 if not
 * (timeout_ms 0 polls, < 0 waits forever, otherwise waits that long),
 * negative errno if the operation that signals it failed; then *failed, if
 * given, receives the nodes that did not confirm. */
int sn_test_event(struct sn_ctx *ctx, unsigned ev, int timeout_ms,
		  struct sn_nodeset *failed);
/* TEST-EVENT without driving progress, on what the last sn_progress
 * brought: for a loop that calls sn_progress once at the top of its turn
 * and then looks at many events (on tcp each round of progress is a
 * system call). Same results as sn_test_event with timeout_ms 0. */
int sn_event_take(struct sn_ctx *ctx, unsigned ev, struct sn_nodeset *failed);

/* Spins of a contended pthread spin lock before it yields the core
 * (spinlock.c: every program that uses this library gets that lock). */
extern const unsigned sn_spin_yield_after;

enum sn_xfer_flags {
	SN_XFER_ATOMIC = 1u << 0, /* signal remote events only once all hold it */
	SN_XFER_SYS = 1u << 1,    /* use the system rail when there is one */
};
#define SN_NO_EVENT UINT32_MAX

/* XFER-AND-SIGNAL: put len bytes from src into [dst_off, dst_off+len) of the
 * global memory of every node in dst (which may include this node).
 * Non-blocking: src may be reused when local_ev fires, or at once when
 * local_ev is SN_NO_EVENT (the data is then copied). local_ev fires when every
 * destination holds the data (or with an error naming those that do not);
 * remote_ev fires on each destination when it holds the data.
 *
 * Order: one node's transfers to a destination are delivered there in the
 * order sn_xfer was called, whichever path each chunk takes (a message, or
 * an RMA write and its header): its remote events are signalled in that
 * order, and where two transfers' ranges overlap the later one's bytes
 * are what stays. Not ordered with each other: transfers from different
 * nodes, to different sets (they reach a node by different trees), on
 * different rails (SN_XFER_SYS with a system rail), and the remote event
 * of an SN_XFER_ATOMIC transfer, which is signalled at its commit.
 *
 * A destination may find the bytes in its global memory before its remote
 * event (an RMA write lands ahead of the header that announces it), and one
 * that passes the transfer down the tree copies what it forwards only when
 * that header arrives. So a destination may read what it was sent at once,
 * but must not overwrite it before the remote event, or before something
 * ordered after it, or the nodes below it may be sent what it wrote.
 *
 * Only a local event (or SN_XFER_ATOMIC, whose commit phase needs them) makes
 * the destinations acknowledge. With local_ev == SN_NO_EVENT and no
 * SN_XFER_ATOMIC no ACK is sent, so the sender learns nothing of delivery:
 * a dead or unreachable destination is not reported, and the data may be
 * lost without any error here. Use it where something else confirms (a
 * reply, a later COMPARE-AND-WRITE), as in a request/response or a strobe. */
int sn_xfer(struct sn_ctx *ctx, const struct sn_nodeset *dst, uint64_t dst_off,
	    const void *src, size_t len, unsigned local_ev, unsigned remote_ev,
	    unsigned flags);

enum sn_cmp { SN_EQ, SN_NE, SN_LT, SN_LE, SN_GT, SN_GE };
bool sn_cmp_eval(enum sn_cmp op, uint64_t lhs, uint64_t rhs);
const char *sn_cmp_name(enum sn_cmp op);

/* COMPARE-AND-WRITE: is (var at var_off) OP value true on every node of set?
 * If so and do_write, write write_val to write_off on every node of set.
 *
 * Semantics (docs/design/network.md has the protocol):
 * - Linearizable. Every call, read or write, takes per-variable locks on
 *   every member (prepare), evaluates there, and releases them or commits
 *   the staged write (decide): strict two-phase locking, so conflicting
 *   calls (one writes a variable the other reads or writes, on a common
 *   node) are ordered by who held the locks first, whatever their node sets;
 *   each call takes effect at one instant while it holds all its locks.
 *   Calls on one set take turns at its lowest node (locked first, where
 *   they queue, oldest call first). Elsewhere an older call waits for a
 *   younger one and a younger one is released and retried after a random
 *   back-off, within timeout_ms of its start (then -EBUSY), keeping its
 *   age: the oldest call is never refused, so calls always make progress.
 *   A call waits for the calls ahead of it in a queue that moves, however
 *   long they take.
 * - A write is all or nothing: it is committed only once every member
 *   holds it staged, and a commit that a dead inner node kept from a
 *   subtree is sent to each of its members directly. A read never sees half
 *   of one (the writer's locks exclude it until every member applied it).
 * - The node that calls coordinates it. The set's lowest node only orders
 *   calls on that set: when it is dead the call fails within timeout_ms,
 *   naming it, and nothing is written. A member that lost its coordinator
 *   drops its locks when their lease (4 x timeout_ms) ends, as aborted.
 * - Local sn_var_store and XFER-AND-SIGNAL writes are not ordered with it,
 *   but for one thing: a member evaluates the call in a later sn_progress
 *   than the one that brought it, so a program that takes its events
 *   after each sn_progress (a daemon's loop) has acted on those of
 *   everything that arrived before it from the same caller when it
 *   compares (sn_next_timeout_ms is 0 meanwhile).
 * - Answered within about 4 x timeout_ms of reaching the head of its
 *   queue, whatever fails. */
struct sn_caw_result {
	int status;             /* 1 (true, and written), 0 (false, nothing
				   written), or a negative errno */
	bool written;           /* the write was committed: every member not in
				   failed holds it (with status < 0: some did not confirm) */
	struct sn_nodeset failed; /* status < 0: the members that did not answer */
	/* sn_caw_gather_start with status 1: the sum of the pair's first
	 * words over the set, and the largest of its second words */
	uint64_t sum, max;
};
typedef void (*sn_caw_fn)(void *arg, const struct sn_caw_result *res);

/* Starts a COMPARE-AND-WRITE and returns at once: 0, or a negative errno
 * (bad arguments; then fn is never called). fn(arg, result) is called
 * exactly once, from sn_progress (or a blocking call, which drives
 * progress), never from inside sn_caw_start; a call still unanswered when
 * sn_close has drained what it waits for is answered there, -ECANCELED. While an answer waits to be
 * delivered, sn_next_timeout_ms is 0. */
int sn_caw_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
		 enum sn_cmp op, uint64_t value, bool do_write, uint64_t write_off,
		 uint64_t write_val, sn_caw_fn fn, void *arg);

/* A read (no write) that also gathers: every member adds the u64 at
 * pair_off into the answer's sum and takes the largest u64 at pair_off + 8
 * into its max, combined up the tree with the condition, so the caller
 * learns a total over the set for the messages of one read. The sum and
 * max are told only with status 1 (every member answered, every condition
 * held); the pair is read under the lock of var_off, so a member that
 * writes the pair before var_off is seen whole. */
int sn_caw_gather_start(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
			enum sn_cmp op, uint64_t value, uint64_t pair_off, sn_caw_fn fn,
			void *arg);

/* The same, blocking until the answer: 1, 0 or a negative errno; on
 * failure *failed names the unresponsive nodes. */
int sn_caw(struct sn_ctx *ctx, const struct sn_nodeset *set, uint64_t var_off,
	   enum sn_cmp op, uint64_t value, bool do_write, uint64_t write_off,
	   uint64_t write_val, struct sn_nodeset *failed);

/* Event-loop integration: an fd that becomes readable when progress may be
 * needed (or -1 if the provider offers none, then poll sn_progress), and the
 * call that makes it. sn_progress returns the number of events signalled. */
int sn_wait_fd(struct sn_ctx *ctx);
int sn_progress(struct sn_ctx *ctx);
/* 0 if it is safe to sleep on sn_wait_fd now, -EAGAIN if sn_progress must
 * run first (libfabric's fi_trywait contract). */
int sn_prepare_wait(struct sn_ctx *ctx);
/* Milliseconds until the caller must call sn_progress again even if the wait
 * fd stays quiet: the next internal deadline, and at most a few ms, because
 * connection set-up is not signalled on the wait fd (sn_int.h,
 * SN_CM_POLL_MS: 12 ms on rxm's providers, 5 on the others). */
int sn_next_timeout_ms(struct sn_ctx *ctx);
/* How long an event loop may sleep on sn_wait_fd now, in ms (-1: until it
 * fires), arming it as sn_prepare_wait does: 0 when completions wait to be
 * progressed; when there is no wait fd, or a send the provider pushed back
 * waits for its retry, 0 if the last sn_progress did work (busy), else 1;
 * never more than sn_next_timeout_ms. Called last before sleeping. */
int sn_sleep_limit_ms(struct sn_ctx *ctx, bool busy);

/* What this end knows of its traffic with peer node, one line into buf
 * (for a log, when the peer falls silent): per rail, the sends the provider
 * holds for it and those still queued here, when its last message came and
 * when our last send to it completed. The number of characters wanted, as
 * snprintf. */
int sn_peer_describe(const struct sn_ctx *ctx, uint32_t node, char *buf, size_t len);
/* Where the rails run over TCP, the kernel's view of this process's
 * connections to peer node and of any other that is not idle (bytes
 * unread, unsent or unacknowledged, retransmission back-off, zero-window
 * probes), one line into buf; as sn_peer_describe. */
int sn_peer_tcp_describe(const struct sn_ctx *ctx, uint32_t node, char *buf, size_t len);

/* Counters for tests and benchmarks. */
struct sn_stats {
	uint64_t msgs_sent, msgs_recv, bytes_sent, bytes_recv, forwards, timeouts;
	uint64_t acks_sent, acks_recv; /* tree ACKs (see sn_xfer: not every XFER has them) */
	uint64_t rma_writes;           /* chunks sent by RMA write (sn_rail_rma) */
	uint64_t mapped_writes;        /* of them, copied into a peer's memory mapped
					  here (shm peers: bell.h) */
	uint64_t map_refused;          /* requests for our memory from another user */
	uint64_t caw_retries;          /* COMPARE-AND-WRITE attempts after a call's first
					  (refused, or queued again) */
	uint64_t late_chunks;          /* XFER chunks that came after this node's record
					  of their transfer had expired, placed and
					  forwarded all the same (treeop.c) */
};
void sn_get_stats(const struct sn_ctx *ctx, struct sn_stats *st);

#endif
