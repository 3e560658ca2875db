/* BCS-MPI in the node daemon, shared by its files: the wire format of its
 * mailbox messages, a job's state (struct bjob) and the functions the files
 * call of each other. bcs_job.c is the bottom (a job's bookkeeping,
 * sending, completions); bcs_coll.c the collectives on MPI_COMM_WORLD;
 * bcs_drain.c a checkpoint's drain and seal; bcs.c the micro-phases of a
 * timeslice on top of them. */
#ifndef STORM_ND_BCS_INT_H
#define STORM_ND_BCS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "chan.h"
#include "layout.h"
#include "sn_ep.h"
#include "match.h"
#include "nd.h"

/* Grants per source node and slice: what the link moves in a slice, at
 * this rate (STORM_BCS_LINK_MBS overrides it), and at least 64 KiB (grant) */
#define BCS_LINK_MBS 4000
/* Grants per slice between two ranks of this node that one of them copies:
 * what a core copies in memory in a slice, at this rate (STORM_BCS_MEM_MBS
 * overrides it), not the link's: no network is in the way. It still bounds
 * a piece, so that a rank's copy ends near its slice (a checkpoint's drain
 * and the next row wait for a copy under way). The daemon's own copies
 * take its time, not a rank's: they stay within the link's budget. */
#define BCS_MEM_MBS 16000
/* sends of at most this many bytes travel in their DESC (exchange) */
#define BCS_INLINE_MAX 4096
/* a granted buffer whose sender never answered is free again after this:
 * any transfer into it has failed long before (sn_xfer's bound) */
#define BCS_AREA_STALE_NS (30ull * 1000000000u)
#define BCS_NOBUF UINT32_MAX    /* GRANT: records that move no data */
#define BCS_GRANT_GMAC (1u << 30) /* GRANT's buffer: its node checks AES-GMAC tags */
/* GRANT: records of pieces the sending rank writes into the receiving
 * rank's pool (struct wrgrant), no buffer of the area */
#define BCS_GRANT_RANK (UINT32_MAX - 1)
/* a rank's pool for writes from other nodes' ranks: BCS_RX_SLOTS pieces */
#define BCS_RANK_POOL (8u << 20)
#define BCS_SPIN_NS (2000000u)  /* polling often after sending (nd_bcs_timer_us) */
#define BCS_NAP_NS (200000)     /* ... every this long */
#define BCS_BOUNCE (1u << 20)   /* copies between two ranks of a node, per step */
/* copy orders out: the daemon looks this often for BCS_ORDER_FAST_NS after
 * posting one (a piece takes a rank tens to hundreds of µs), then every ms
 * (a rank not running yet: no use waking a real-time daemon for it) */
#define BCS_ORDER_POLL_NS 100000
#define BCS_ORDER_FAST_NS 2000000u
#define BCS_DEAD_JOBS 64
#define BCS_HASH 4096           /* buckets of the per-job request tables */
/* rounds a node may still have to run and report quiet (resolve) */
#define BCS_QLAG_MAX 16
/* a checkpoint gives up if the job's traffic has not drained by then */
#define BCS_DRAIN_NS (30ull * 1000000000u)

static inline unsigned hkey(uint32_t a, uint32_t b)
{
	return (a * 2654435761u ^ b * 40503u) % BCS_HASH;
}

/* M_DATA: the sender's word that a granted buffer holds its data (bulk) */
enum mtype { M_DESC = 1, M_GRANT = 2, M_DATA = 3, M_ABORT = 4, M_RED = 5 };

/* BCS-MPI's header, first in the body of each of its mailbox messages; the
 * mailbox carries the job and, as its arg, the slice */
struct bhdr {
	uint32_t count; /* entries in the body */
	uint32_t flags;
	uint32_t quiet; /* DESC: the node was quiet for the job at this cover */
	uint32_t ckpt;  /* DESC: CK_* of the checkpoint ckpt_id being drained */
	uint64_t ckpt_id;
};

/* a received message as on_message reads it */
struct mhdr {
	uint32_t type;
	uint32_t len;   /* body bytes after BCS's header */
	uint64_t job;
	uint64_t slice; /* DESC: cover (UINT64_MAX: the node is done with the job) */
	uint32_t count, flags, quiet, ckpt;
	uint64_t ckpt_id;
};

/* A checkpoint drains the job first (nd_bcs_freeze): every node stops
 * collecting its ranks' descriptors and says so (FROZEN) in its DESCs; once
 * it has run the rounds up to every node's frozen cover and no transfer to
 * its ranks is left, it says DRAINED. When every node said DRAINED nothing
 * of the job moves any more: each node seals its ranks' pending operations
 * (chan_ckpt.h) for their images. */
enum { CK_FROZEN = 1, CK_DRAINED = 2, CK_ACTIVE = 4 /* the sender took part already */ };

struct wdesc { /* a send descriptor on the wire */
	int32_t src, dst, tag;
	uint32_t ctx, seq, sreq, flags;
	uint32_t inl;   /* its len bytes follow it, padded to 8 (BCS_INLINE_MAX) */
	uint64_t len;
};
/* wdesc.flags: not a send but its sender's MPI_Cancel (seq, sreq: the send) */
#define BCS_W_CANCEL 1u
static inline size_t wdesc_size(const struct wdesc *w)
{
	return sizeof(*w) + (w->inl ? (w->len + 7) & ~(uint64_t)7 : 0);
}

/* A GRANT's header says which buffer of the receiver's area for the sender
 * (bhdr.flags; BCS_NOBUF: nothing to move, the sends just complete) and,
 * as the mailbox's arg, the buffer's generation, which M_DATA echoes. */
struct wgrant {
	int32_t src, dst;
	uint32_t sreq, rreq;
	uint64_t off, len; /* the piece of the message */
	uint32_t last;     /* BCS_GRANT_LAST, or BCS_GRANT_CANCELLED (len 0) */
	uint32_t aoff;     /* where in the buffer */
};

/* A GRANT_RANK record: the piece, and where the sending rank writes it:
 * the receiving rank's blob (sn_ep.h), an offset in its pool and the
 * immediate data its expectation waits for (chan.h, struct bcs_rx) */
struct wrgrant {
	struct wgrant g;
	uint64_t poff, imm;
	uint32_t blen, pad;
	uint8_t blob[BCS_EP_BLOB];
};

#define BCS_GRANT_LAST 1u
#define BCS_GRANT_CANCELLED 2u /* the send's MPI_Cancel won: it ends cancelled */

struct wdata { /* M_DATA: a piece now in the buffer */
	int32_t dst;
	uint32_t rreq;
	uint64_t off;
	uint64_t len;
	uint32_t aoff;
	int32_t err;       /* the sender could not read it, or not send it */
};

/* M_DATA's trailer, after its records: how many bytes of the buffer the
 * sender wrote and their tag (gm_bulk_tag), which the receiver checks on a
 * private copy before any of it reaches a rank */
struct wseal {
	uint64_t len;
	uint32_t mac, pad; /* enum gm_bulk_mac */
	uint8_t tag[GM_TAG_BYTES];
};

/* a buffer of this node's area for one source node (layout.h) */
struct barea {
	bool busy;
	uint64_t gen;       /* its grant in force: from a random start, one more per grant */
	uint64_t since_ns;  /* granted at */
};

/* a bulk transfer at its sender: in flight on event EV_BCS_BULK0 + ev, or
 * queued for a free event */
struct bulk {
	struct bulk *next;
	uint32_t to, buf;
	uint64_t job, gen;
	uint8_t *data;
	size_t len;
	uint32_t mac;              /* enum gm_bulk_mac */
	uint8_t tag[GM_TAG_BYTES]; /* of data[0..len) */
	struct wdata *rec;
	uint32_t nrec;
};

/* a matched message, at the receiver's node */
struct xfer {
	struct bcs_msend *s;
	struct bcs_mrecv *r;
	uint32_t lr;      /* receiving local rank */
	uint64_t total, granted, done;
	int err;          /* a piece was lost: the receive fails */
	uint32_t norders; /* both ranks here: copy orders its receiver still has */
	uint32_t nrx;     /* pieces the sending rank writes, not arrived yet */
	struct xfer *next;
};

/* a send waiting for its grants, at the sender's node */
struct osend {
	uint32_t lr, seq;      /* seq: its post order among the rank's sends */
	struct bcs_desc d;     /* as the rank posted it (a checkpoint keeps it) */
	bool cancel;           /* the rank asked to cancel it (a checkpoint keeps it) */
	/* pieces its rank still writes (bcs_rank.c); its last piece granted
	 * (end: where it ends); bytes moved by either path. It completes when
	 * all are moved */
	uint32_t nwr;
	bool wr_last;
	uint64_t end, moved;
	struct osend *next;
};

/* An MPI_Cancel waiting for the job's quiescence, at the receiving rank's
 * node: of a send (src, seq: the send; from: its node) or of a receive
 * (req). Until then the send or receive matches as if not cancelled, so
 * whether the cancel wins depends on what the program posts, never on
 * timing. */
struct pcancel {
	struct pcancel *next;
	uint64_t label;        /* its round: it waits for that round to have run */
	uint32_t lr;           /* the receiving local rank (a receive's) */
	bool send;
	int32_t src, dst;      /* a send's ranks (dst: lr may not be known yet) */
	uint32_t seq, sreq, from, req;
};

struct comps {
	struct bcs_comp *v;
	size_t n, cap;
};

struct bjob {
	uint64_t id;
	struct nd_job *job;        /* NULL until launched here */
	int memfd;
	uint8_t *map;
	size_t maplen;
	uint32_t nlocal, first, world;
	uint32_t nnodes_job;
	uint32_t *nodes, *nfirst, *ncount;
	bool active, final_sent, aborted;
	uint64_t *cover;           /* per cluster node index */
	uint64_t round;
	/* wildcard matching at quiescence: per cluster node index, its quiet
	 * reports (bcs_quiet_push); moved: a completion since the last phase */
	uint64_t *qmask;
	/* [node][slice % 64]: the rounds the node still had to run at that
	 * report (mhdr.quiet - 1) */
	uint8_t (*qlag)[64];
	bool moved;
	uint64_t resolved;         /* the last slice wildcards were resolved at */
	/* MPI_Barrier(MPI_COMM_WORLD): every DESC carries how many barriers all
	 * of its node's ranks entered; barrier k ends when every node says k */
	uint32_t *bar_posted, *bar_req; /* per local rank */
	uint32_t *bar_seen;             /* per cluster node index */
	uint32_t bar_done;
	/* MPI_Allreduce(MPI_COMM_WORLD) of small values: each node folds its
	 * ranks' values (rank order) and sends the partial to every node of the
	 * job (M_RED); each folds the partials in node order */
	uint32_t *red_posted, *red_req; /* per local rank */
	uint64_t *red_addr;
	uint8_t *red_val;               /* per local rank, BCS_RED_MAX bytes */
	uint32_t red_len, red_count;
	int red_op, red_basic;
	uint32_t red_done;
	uint8_t *red_part;              /* [node][2][BCS_RED_MAX] */
	struct early_red *early_red;    /* partials that came before this node's launch */
	uint32_t *red_part_seq;         /* [node][2]: which allreduce it holds */
	uint32_t *red_part_len;
	struct bcs_msend **inc;    /* sends not yet in a round */
	size_t ninc, capinc;
	struct bcs_mrecv **newr;   /* receives and probes not yet in a round */
	uint32_t *newr_lr;
	size_t nnewr, capnewr;
	struct bcs_mq *mq;         /* per local rank */
	struct bcs_mrecv **probes; /* blocking probes waiting, per local rank */
	struct pcancel *cancels, **cancels_tail; /* in arrival order */
	uint32_t *sseq, *rseq;
	struct osend **osends;     /* hashed by (local rank, request) */
	struct xfer **gq_head, **gq_tail; /* per source node index: to grant */
	uint64_t *budget;          /* per source node index, this slice */
	uint64_t lbudget;          /* this slice's, of copies between ranks here */
	struct xfer **wait_data;   /* granted, data pending; hashed by (rank, request) */
	struct comps *comps;       /* per local rank, to publish */
	uint8_t **batch;           /* per cluster node index: sends for it (wdesc records) */
	size_t *nbatch, *capbatch;
	/* checkpoint drain (CK_*): frozen for ckpt_id since freeze_ns; fcover:
	 * per cluster node, the cover of a FROZEN DESC (UINT64_MAX: none yet);
	 * drained: per cluster node, it said DRAINED; sealed: every node did,
	 * pend holds each local rank's pending operations in post order */
	bool frozen, sealed;
	uint8_t test_hold;         /* test hook bcs_hold_job: 1 holding, 2 its one hold over */
	bool restoring;            /* restored ranks not all back yet (nd_bcs_restored) */
	uint64_t ckpt_id, freeze_ns;
	uint64_t *fcover;
	bool *drained;
	struct bcs_desc **pend;
	uint32_t *npend;
	char seal_err[160];
	/* one copy between ranks of this node (bcs_copy.c): per local rank
	 * and slot the pair an order is for and the phase it was posted in;
	 * pairs fully granted whose orders are out; whether the ranks may
	 * copy (not once one was refused) and the bytes copied each way */
	struct xfer *(*order)[BCS_COPY_SLOTS];
	uint64_t (*order_phase)[BCS_COPY_SLOTS];
	uint32_t norders;
	struct xfer *lcopy;
	bool copy_off;
	uint64_t copied_rank, copied_daemon;
	uint64_t copied_sender;    /* of copied_rank: by the sending rank */
	uint64_t lslices;          /* slices (budgets) that granted such copies */
	bool lcounted;             /* this slice's among them */
	/* rank to rank between nodes (bcs_rank.c): per local rank and slot,
	 * the pair an expectation is for (receiving) and the write an order
	 * is for (sending); writes waiting for a free slot; the orders and
	 * expectations out, and the bytes from other nodes each path moved */
	struct xfer *(*rx_x)[BCS_RX_SLOTS];
	struct rwrite *(*wr_w)[BCS_WR_SLOTS];
	struct rwrite *wq_head, *wq_tail;
	uint64_t rx_gen;
	uint32_t nwr;
	uint64_t in_rank, in_daemon;
	/* per local rank of a frozen job: why it runs alone (BCS_ALONE_*) */
	uint8_t *alone;
	/* frozen, its ranks asked to close their endpoints: until the thaw,
	 * not asked to open them again (a grant that was on its way when the
	 * job froze makes a write order here, which the daemon then writes) */
	bool ep_closing;
	/* storm run --record (bcs_trace.c): per local rank, where the last
	 * event taken from its trace ring began and its kind */
	uint64_t *tr_last;
	uint8_t *tr_kind;
	struct bjob *next;
};


/* A node's allreduce partial that came before the job's launch here (a
 * restored rank elsewhere may reduce at once): kept until the launch. */
struct early_red {
	struct early_red *next;
	uint32_t from, seq, len;
	uint8_t val[BCS_RED_MAX];
};

struct nd_bcs {
	uint32_t nnodes, self;
	size_t max_msg;               /* a body, BCS's header included */
	uint32_t next_flags;          /* mhdr.flags of the next bcs_send */
	uint32_t next_quiet;          /* mhdr.quiet of the next bcs_send */
	uint32_t next_ckpt;           /* mhdr.ckpt and ckpt_id of the next bcs_send */
	uint64_t next_ckpt_id;
	uint64_t phase_at_ns;         /* when this slice's exchange runs, 0: done */
	uint64_t phase_slice;
	struct bjob *jobs;
	uint64_t dead[BCS_DEAD_JOBS];
	unsigned ndead;
	uint8_t *bounce;
	/* bulk data: per source node, its area's buffers here */
	struct barea (*area)[GM_BCS_AREA_BUFS];
	uint64_t buf_size, slice_budget; /* slice_budget: per source, this slice */
	uint64_t link_mbs;                /* the link's rate, MB/s (BCS_LINK_MBS) */
	uint64_t mem_mbs, mem_budget;     /* memory's (BCS_MEM_MBS), its budget this slice */
	struct bulk *inflight[GM_BCS_BULK_EVS];
	struct bulk *bq_head, *bq_tail;   /* waiting for an event */
	uint32_t nbusy;                   /* buffers granted, their data not in yet */
	uint8_t *spare[GM_BCS_BULK_EVS];  /* staging blocks for the next transfers */
	uint64_t bulk_sent;               /* bulk blocks sent (test hook bulk_flip) */
	bool gmac;                        /* AES-GMAC tags (gm_bulk_gmac_ok) */
	uint32_t nspare;
	uint64_t spin_until_ns;           /* nd_bcs_timer_us */
	uint64_t phases;                  /* phases run (copy orders' age) */
	uint32_t norders;                 /* copy orders out, every job */
	uint64_t order_at_ns;             /* the last one posted */
	bool early_poll;                  /* poll the fabric soon while waiting on a peer */
	bool rank_writes;                 /* storm.conf bcs_rank_writes, on a provider for it */
	struct sn_ep *ep;                 /* the daemon's own, for orders its ranks leave */
	bool ep_failed;
	uint64_t out_daemon;              /* bytes of such orders it wrote itself */
	uint32_t nwr;                     /* rank write orders and expectations out */
	uint64_t in_rank, in_daemon;      /* bytes from other nodes, every job ended here */
};

/* a piece the sending rank writes: as granted, until its order is done */
struct rwrite {
	struct rwrite *next;
	uint32_t lr, sreq;
	uint64_t phase;     /* posted in (bcs_rank_poll: the daemon takes it back) */
	uint8_t *stage;     /* the daemon writes it itself: the bytes, read out of the rank */
	bool by_daemon;     /* the daemon took it over */
	struct bjob *j;
	uint32_t k;         /* its order's slot */
	struct wrgrant w;
};

/* Why a rank of a job a checkpoint stopped is continued alone: to finish
 * a copy it was stopped in, to close its endpoint, to end its own rank
 * writes (take the pieces its expectations wait for, which only it copies
 * out of its pool; see the end of the writes it took). One mask, so that
 * no reason stops the rank while another still needs it running. */
#define BCS_ALONE_COPY 1u
#define BCS_ALONE_EP 2u
#define BCS_ALONE_RX 4u

/* bcs_job.c */
bool bcs_alone(struct bjob *j, uint32_t lr, uint8_t why, bool on);
void bcs_alone_thawed(struct bjob *j, uint32_t lr, uint8_t why);
void *bcs_grow(void *p, size_t *cap, size_t need, size_t elem);
void bcs_send(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t slice,
	      uint32_t count, const void *body, size_t len, const void *body2, size_t len2);
uint32_t bcs_bar_local(const struct bjob *j);
void bcs_send_flags(struct nd *nd, uint32_t to, uint32_t type, uint64_t job,
		    uint64_t slice, uint32_t count, uint32_t flags, const void *body,
		    size_t len);
struct bjob *bcs_job_find(struct nd_bcs *b, uint64_t id);
bool bcs_job_dead(struct nd_bcs *b, uint64_t id);
struct bjob *bcs_job_new(struct nd_bcs *b, uint64_t id);
int bcs_node_of_rank(const struct bjob *j, int32_t rank);
struct bcs_area *bcs_area_of(struct bjob *j, uint32_t lr);
pid_t bcs_pid_of(struct bjob *j, uint32_t lr);
void bcs_complete(struct bjob *j, uint32_t lr, uint32_t req, int32_t src, int32_t tag, int err,
		  uint64_t len);
void bcs_publish(struct bjob *j);
int bcs_copy_from(pid_t pid, uint64_t addr, void *buf, size_t len);
int bcs_copy_to(pid_t pid, uint64_t addr, const void *buf, size_t len);
struct osend *bcs_osend_take(struct bjob *j, uint32_t lr, uint32_t req, bool unlink);
void bcs_recv_done(struct bjob *j, struct xfer *x, int err);
void bcs_xfer_free(struct xfer *x);
void bcs_kill_local(struct bjob *j, int code, const char *why);
int bcs_node_pos(const struct bjob *j, uint32_t node);

/* bcs_copy.c */
bool bcs_local_piece(struct nd *nd, struct bjob *j, struct xfer *x);
void bcs_local_granted(struct bjob *j, struct xfer *x);
void bcs_orders(struct nd *nd, struct bjob *j);
void bcs_orders_free(struct nd_bcs *b, struct bjob *j);

bool bcs_rank_waits(struct bjob *j, uint32_t lr);

/* bcs_rank.c */
int bcs_rank_piece(struct nd *nd, struct bjob *j, uint32_t node, struct xfer *x,
		    struct wrgrant *out);
void bcs_rank_on_grant(struct nd *nd, struct bjob *j, const struct wrgrant *r, size_t n);
bool bcs_rank_poll(struct nd *nd, struct bjob *j);
void bcs_send_moved(struct bjob *j, uint32_t lr, struct osend *o, uint64_t len);
void bcs_rank_close(struct bjob *j);
void bcs_rank_free(struct nd_bcs *b, struct bjob *j);

/* bcs.c */
void bcs_grant(struct nd *nd, struct bjob *j);

/* bcs_coll.c */
/* One node's partial of allreduce seq; kept aside while the job has not
 * been launched here (no slots yet), taken in by bcs_red_take_early. */
void bcs_red_partial(struct nd *nd, struct bjob *j, uint32_t from, uint32_t seq,
		     const uint8_t *val, uint32_t len);
void bcs_red_take_early(struct bjob *j);
void bcs_red_free_early(struct bjob *j);
void bcs_barriers(struct bjob *j, uint32_t self);
uint8_t *bcs_red_slot(struct bjob *j, int pos, uint32_t seq);
void bcs_reduces(struct nd *nd, struct bjob *j);

/* bcs_drain.c */
bool bcs_drained_here(struct bjob *j);
void bcs_free_pend(struct bjob *j);
void bcs_try_seal(struct bjob *j);

#endif
