/* The BCS-MPI channel between a rank and its node daemon: one memfd per job
 * on a node, created by stormnd at launch and inherited by the ranks as
 * fd STORM_BCS_FD. It holds a header and one area per local rank:
 *
 *   submit ring     rank -> daemon: descriptors (struct bcs_desc). The rank
 *                   writes an entry and then advances sub_head; the daemon
 *                   reads entries up to sub_head at each strobe and advances
 *                   sub_tail.
 *   trace ring      rank -> daemon: with storm run --record, the rank's
 *                   timing-dependent outcomes as stream events
 *                   (trace_codec.h) as it makes them. The rank writes
 *                   whole events and then advances tr_head; the daemon
 *                   drains them at each strobe (and at the rank's end, with
 *                   tr_run), so a rank that crashes or is killed leaves
 *                   every outcome it made. A rank that finds the ring full
 *                   sets want_room and waits for the strobe.
 *   completion ring daemon -> rank: struct bcs_comp. The daemon writes
 *                   entries, advances comp_head, bumps `futex` and wakes it
 *                   at the strobe (the completion micro-phase); the rank
 *                   consumes them and advances comp_tail.
 *
 *   copy orders     daemon -> rank: a piece of a matched message between two
 *                   ranks of this node, which the receiving rank copies
 *                   itself straight from the sender's buffer with one
 *                   process_vm_readv when the daemon grants it
 *                   (struct bcs_copy; docs/design/bcs-mpi.md, "One copy").
 *   write orders    daemon -> rank, across nodes (storm.conf
 *   and expectations bcs_rank_writes): the sending rank writes a granted
 *                   piece from its own endpoint into the receiving rank's
 *                   pool (struct bcs_wr), which the receiving rank copies
 *                   into its buffer once the write's immediate data says
 *                   it is there (struct bcs_rx; docs/design/bcs-mpi.md,
 *                   "Across nodes from rank to rank").
 *
 * A rank that waits reads `futex`, checks its completions, and sleeps in
 * FUTEX_WAIT on that value: a wake between the check and the sleep changes
 * the value, so it is never lost. Layout shared by bcs_mpi/ (the library)
 * and daemons/node/bcs.c; docs/design/bcs-mpi.md. */
#ifndef STORM_BCS_CHAN_H
#define STORM_BCS_CHAN_H

#include <stddef.h>
#include <stdint.h>

#define BCS_CHAN_MAGIC 0x4d534342u /* "BCSM" */
/* 2: bcs_area.idle; 3: copy orders; 4: the trace ring. The outcome counts
 * (tr_count), the open repeats of a call (tr_crun) and storm replay
 * --from's header fields came later, in what was padding and zeroed
 * header: a library or a daemon without them reads zeros or ignores them,
 * so the version stayed 4 (a program linked statically against an earlier
 * libbcsmpi still starts; the asserts below keep every older field where
 * it was) */
#define BCS_CHAN_VERSION 4
#define BCS_SUB_RING 4096u  /* power of two */
#define BCS_COMP_RING 4096u /* power of two */
#define BCS_TRACE_RING 16384u /* bytes, power of two */
#define BCS_CHAN_HDR 4096u
#define BCS_REPLAY_PATH 2048u /* bcs_chan_hdr.replay_trace, NUL included */

#define BCS_RED_MAX 512u

#define BCS_IDLE_DONE 0xffffffffu
#define BCS_ANY_SOURCE (-1)
#define BCS_ANY_TAG (-1)

enum bcs_op {
	BCS_OP_SEND = 1,   /* addr/len: the message; peer: destination world rank */
	BCS_OP_RECV = 2,   /* addr/len: the buffer; peer: source or BCS_ANY_SOURCE */
	BCS_OP_CANCEL = 3, /* req: the receive (or, flags BCS_CANCEL_SEND, the
			    * send) to cancel; decided at the job's quiescence */
	BCS_OP_PROBE = 4,  /* completes once a matching message is there (not taken) */
	BCS_OP_IPROBE = 5, /* completes at the next matching round, found or not */
	BCS_OP_ABORT = 6,  /* tag: error code; the daemon kills the job everywhere */
	BCS_OP_INIT = 7,   /* the rank entered MPI_Init: its node takes part */
	BCS_OP_BARRIER = 8, /* MPI_Barrier on MPI_COMM_WORLD, done by the daemons */
	BCS_OP_ALLREDUCE = 9, /* MPI_Allreduce on MPI_COMM_WORLD of at most
			       * BCS_RED_MAX packed bytes at addr (the result
			       * replaces them); peer: op, tag: basic type,
			       * ctx: element count */
};

struct bcs_desc {
	uint32_t op;
	uint32_t req;   /* the library's request id, echoed in the completion */
	int32_t peer;
	int32_t tag;
	uint32_t ctx;   /* communicator context id */
	uint32_t flags;
	uint64_t addr;  /* in the rank's address space */
	uint64_t len;
};

/* BCS_OP_CANCEL's flags: req names a send */
#define BCS_CANCEL_SEND 1u

/* completion error codes (the library maps them to MPI errors) */
enum bcs_err {
	BCS_OK = 0,
	BCS_ETRUNC = 1,     /* message longer than the receive buffer */
	BCS_ECANCELLED = 2, /* receive or send cancelled */
	BCS_ENOTFOUND = 3,  /* iprobe: nothing matched */
	BCS_EFAULT = 4,     /* the daemon could not read or write the buffer */
};

struct bcs_comp {
	uint32_t req;
	int32_t src;    /* world rank of the matched send */
	int32_t tag;
	int32_t err;    /* enum bcs_err */
	uint64_t len;   /* bytes received (recv) or message length (probe) */
};

/* A copy order's state. The daemon fills a FREE slot of one of the pair's
 * two ranks and makes it POSTED; that rank takes it (POSTED -> TAKEN,
 * compare-and-swap), copies, and says DONE or REFUSED (err: the errno). The daemon may take a POSTED
 * order back for itself (POSTED -> DAEMON, compare-and-swap), never a TAKEN
 * one; it frees DONE, REFUSED and DAEMON slots. */
enum bcs_copy_state {
	BCS_COPY_FREE = 0,
	BCS_COPY_POSTED = 1,
	BCS_COPY_TAKEN = 2,
	BCS_COPY_DONE = 3,
	BCS_COPY_REFUSED = 4,
	BCS_COPY_DAEMON = 5,
};
#define BCS_COPY_SLOTS 16u

struct bcs_copy {
	uint32_t state;   /* enum bcs_copy_state */
	uint32_t pid;     /* the pair's other rank */
	uint64_t src;     /* in the sending rank */
	uint64_t dst;     /* in the receiving rank */
	uint64_t len;
	int32_t err;      /* REFUSED: process_vm_readv's or _writev's errno */
	/* 0: this rank receives and reads the piece (process_vm_readv);
	 * 1: this rank sends and writes it into pid (process_vm_writev), the
	 * receiver being busy outside MPI at the grant */
	uint32_t write;
};

/* Across nodes, rank to rank. The rank opens its endpoint when it first
 * posts a send or receive of BCS_RANK_MIN bytes or more, on the provider
 * the header names (rank_prov), and publishes its blob
 * (net_abstraction/sn_ep.h: address, pool key and base) in its area,
 * ep_state OPEN last. A write order (bcs_wr) names a piece of one of the
 * rank's sends and where it goes: the receiver's blob and an offset in
 * its pool; the rank writes it with the immediate data imm and says DONE
 * once the write ended (REFUSED, err: it failed). An expectation (bcs_rx,
 * slot k: the pool's k-th BCS_RX_SLOTS part) says a write with imm is
 * coming for dst; the rank copies it there once it arrived and says DONE.
 * States as copy orders'. A rank asked to close (ep_close: a checkpoint
 * drains the job) closes its endpoint once nothing of it is in flight
 * (ep_state CLOSED) and opens a new one once asked no more. */
enum bcs_ep_state {
	BCS_EP_NONE = 0,
	BCS_EP_OPEN = 1,
	BCS_EP_CLOSED = 2,
	/* being opened: its sockets may exist, its blob is not out yet; a
	 * checkpoint's drain waits for it as for an open one, which it then
	 * asks to close (no image may hold the sockets) */
	BCS_EP_OPENING = 3,
};
/* an endpoint a checkpoint must see closed first */
static inline int bcs_ep_held(uint32_t state)
{
	return state == BCS_EP_OPEN || state == BCS_EP_OPENING;
}
/* Messages smaller than this keep the daemons' path even with rank writes
 * on: a piece on the ranks' path takes an order, a write and two
 * completions, each seen at a poll, where the daemons' path sends it with
 * its grant (the 16-node sweep's 6 KiB messages ran 2-3x slower). A rank
 * opens its endpoint when it first posts a send or receive this large:
 * opening it (libfabric and its providers loaded) took 0.45 s, at
 * MPI_Init of every job whatever its messages. */
#define BCS_RANK_MIN (64u << 10)
#define BCS_EP_BLOB 96u  /* SN_EP_BLOB_MAX */
#define BCS_WR_SLOTS 16u
#define BCS_RX_SLOTS 8u

struct bcs_wr {
	uint32_t state;
	uint32_t blen;
	uint64_t src;     /* in the sending rank */
	uint64_t len;
	uint64_t off;     /* in the receiving rank's pool */
	uint64_t imm;
	int32_t err;      /* REFUSED: the write's errno */
	uint32_t pad;
	uint8_t blob[BCS_EP_BLOB];
};

struct bcs_rx {
	uint32_t state;
	int32_t err;
	uint64_t imm;
	uint64_t dst;     /* in the receiving rank */
	uint64_t len;
};

/* bcs_chan_hdr.flags */
#define BCS_CHAN_REFUSE_COPY 1u /* test hook: every copy order is refused (EPERM) */
#define BCS_CHAN_STOP_IN_COPY 2u /* test hook: a rank stops itself in its first copy */

struct bcs_area {
	uint32_t futex;       /* bumped and woken by the daemon */
	uint32_t pid;
	uint32_t want_room;   /* the rank waits for room in the submit ring */
	uint32_t aborted;     /* MPI_Abort somewhere in the job: exit with abort_code */
	uint32_t abort_code;
	/* the rank waits (blocked, or its Test/Iprobe found nothing) having
	 * consumed every completion up to comp_head: idle = that comp_head + 1;
	 * 0 while it runs; BCS_IDLE_DONE once finalized. The daemon reports a
	 * node quiet only while every rank's idle is current (wildcard matching
	 * at quiescence, daemons/node/bcs.c) */
	uint32_t idle;
	/* non-zero while the rank is in a blocking MPI call (it looks at its
	 * copy orders whenever it wakes): the daemon gives it its copies */
	uint32_t waiting;
	/* the rank allowed its peers to read its memory (PR_SET_PTRACER where
	 * Yama asks for it); a restore clears it: that is not in the image */
	uint32_t peers_allowed;
	/* the rank's library takes write orders (bcs_copy.write): a library
	 * that predates them, in a job restored from its image, gets none */
	uint32_t takes_writes;
	/* written by the daemon at each collection of this rank's ring: the
	 * slice (never 0). An MPI_Iprobe that found nothing is answered the
	 * same by the library until it changes: nothing posted after it could
	 * be answered before the next collection anyway. 0: a daemon that
	 * predates it, every iprobe goes to the daemon */
	uint32_t phase;
	uint32_t pad0[6];
	uint32_t sub_head;    /* written by the rank */
	uint32_t pad1[15];
	uint32_t sub_tail;    /* written by the daemon */
	uint32_t pad2[15];
	uint32_t comp_head;   /* written by the daemon */
	uint32_t pad3[15];
	uint32_t comp_tail;   /* written by the rank */
	uint32_t pad4[15];
	struct bcs_desc sub[BCS_SUB_RING];
	struct bcs_comp comp[BCS_COMP_RING];
	uint32_t copy_posted; /* bumped by the daemon with each order posted */
	uint32_t pad5[15];
	struct bcs_copy copy[BCS_COPY_SLOTS];
	uint64_t tr_head;     /* written by the rank: trace bytes written */
	/* written by the rank: its outcomes so far per stream (enum
	 * bcs_stream: wildcards posted, test flags, Waitany indexes, Waitsome
	 * masks), each bumped by one instruction, so a rank stopped anywhere
	 * has in its area what its memory holds: a checkpoint reads its mark
	 * in the trace here (bcs_trace.c), and a rank restored to replay from
	 * it starts its cursors here */
	uint64_t tr_count[4];
	uint64_t pad6[3];
	uint64_t tr_tail;     /* written by the daemon: trace bytes taken */
	/* the test flags not yet in the ring (the open run): BCS_RUN_*. The
	 * rank rewrites it after every event it puts in the ring, tagged with
	 * the new tr_head; the daemon reads it once the rank is gone, and the
	 * tag tells whether the rank died before or after the run's last word
	 * (daemons/node/bcs_trace.c), so no flag is lost or taken twice */
	uint64_t tr_run;
	/* the repeats of the last call not yet in the ring (a polling loop
	 * of one call): BCS_RUN(count, 0, head), rewritten and read as tr_run */
	uint64_t tr_crun;
	uint64_t pad7[5];
	uint8_t tr[BCS_TRACE_RING];
	/* across nodes, rank to rank (above) */
	uint32_t ep_state;    /* written by the rank: enum bcs_ep_state */
	uint32_t ep_close;    /* written by the daemon: close the endpoint */
	uint32_t ep_blen;
	uint32_t ep_posted;   /* bumped by the daemon with each order or expectation */
	uint64_t ep_pool;     /* the pool's bytes */
	uint8_t ep_blob[BCS_EP_BLOB];
	struct bcs_wr wr[BCS_WR_SLOTS];
	struct bcs_rx rx[BCS_RX_SLOTS];
};

/* tr_count and tr_crun live in version 4's padding: the words around them
 * stay where an earlier library of version 4 has them */
_Static_assert(offsetof(struct bcs_area, tr_tail) == offsetof(struct bcs_area, tr_head) + 64,
	       "tr_count outgrew the padding after tr_head");
_Static_assert(offsetof(struct bcs_area, tr_run) == offsetof(struct bcs_area, tr_tail) + 8,
	       "tr_run moved");
_Static_assert(offsetof(struct bcs_area, tr) == offsetof(struct bcs_area, tr_run) + 56,
	       "tr_crun outgrew the padding after tr_run");

#define BCS_RUN_TAG(v) ((v) & 0xfffffu)    /* tr_head's low bits when written */
#define BCS_RUN_FLAG(v) (((v) >> 20) & 1u)
#define BCS_RUN_COUNT(v) ((v) >> 21)
#define BCS_RUN(count, flag, head) \
	(((uint64_t)(count) << 21) | ((uint64_t)(flag) << 20) | ((head) & 0xfffffu))

#define BCS_AREA_SIZE ((sizeof(struct bcs_area) + 4095) & ~(uint64_t)4095)

struct bcs_chan_hdr {
	uint32_t magic, version;
	uint32_t nlocal;      /* areas that follow */
	uint32_t area_size;
	uint64_t job;
	uint32_t world;       /* ranks in the job */
	uint32_t first_rank;  /* world rank of local area 0 */
	uint32_t replay;      /* reserved */
	uint32_t flags;       /* BCS_CHAN_* */
	/* storm replay --from: the job restores this checkpoint and its ranks
	 * replay the trace at replay_trace (the absolute path of the copy the
	 * MM sent into the job directory on this node) from the mark
	 * the checkpoint left in it; 0: not a replay from a checkpoint */
	uint64_t replay_ckpt;
	char replay_trace[BCS_REPLAY_PATH];
	/* rank to rank across nodes: the provider the ranks open their
	 * endpoints on and their pools' size; "": the daemons move the data */
	char rank_prov[64];
	uint64_t rank_pool;
	/* and the address their endpoints open at: the daemons' own ("": the
	 * provider's choice) */
	char rank_src[48];
};

_Static_assert(sizeof(struct bcs_chan_hdr) <= BCS_CHAN_HDR, "the channel header outgrew its page");

static inline uint64_t bcs_chan_size(uint32_t nlocal)
{
	return BCS_CHAN_HDR + (uint64_t)nlocal * BCS_AREA_SIZE;
}

#endif
