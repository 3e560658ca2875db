/* The global memory map shared by the machine manager and the node daemons,
 * and the event ids they signal. Every process of a cluster opens its network
 * context with the same gmem size (layout_gmem_size), so an offset names the
 * same thing everywhere.
 *
 * Fabric ids: the MM is fabric node 0; the compute node with index i (its
 * position in the configuration's node list) is fabric node i + 1.
 *
 * Data flow (docs/design/control-plane.md):
 * Authentication (common/gm_auth.h): strobes, commands, reports, report acks
 * and file chunks carry a GM_TAG_LEN-byte tag with the cluster key; a
 * receiver drops (and logs) what fails it, and what is older than the last it
 * accepted.
 *
 *   strobe   MM -> all UP nodes, every timeslice, SYS rail, no local event:
 *            struct strobe in area slice % 2 (GM_STROBE_AT), remote event
 *            EV_STROBE_AT of that area. Two areas, so that the next strobe
 *            landing does not overwrite one a late node (or an inner node
 *            of the tree, forwarding it) is still reading. It names the
 *            matrix row running in this slice and, per node, the job of
 *            that node's cell in the row (strobe_run): each node continues
 *            that job and stops every other one it holds.
 *   command  MM -> all UP nodes: [u32 len][packed storm.cl.Command][tag] in ring
 *            slot (seq % GM_CMD_SLOTS), remote EV_CMD. The MM reuses a slot
 *            only when every UP node reported cmd_done >= GM_CMD_REUSE_DONE.
 *   file     MM -> a job's nodes: struct file_chunk + data in file buffer
 *            b = seq % 2, remote event EV_FILE(b). The two buffers' transfers
 *            are independent, so a chunk may land before the one sent ahead
 *            of it: a node writes each at its offset, whatever the order.
 *            A node that has written the chunk of buffer b stores its seq in
 *            GM_VAR_FILE_DONE(b); the MM sends chunk seq into buffer b only
 *            after COMPARE-AND-WRITE finds GM_VAR_FILE_DONE(b) >= seq - 2
 *            (GE) on every node of the job (transfers run one at a time, so
 *            the first two chunks of a transfer find both buffers free), and
 *            sends the Launch only after both buffers' last chunks are done.
 *   report   node i -> MM: [u32 len][packed storm.cl.Report][tag] in report slot
 *            i of the MM's memory, remote EV_REPORT. A node sends report
 *            seq k+1 only after k was acknowledged — by a strobe
 *            (strobe.ack[i] == k) or by the MM's direct ack (it writes k to
 *            GM_VAR_REPORT_ACK with remote EV_REPORT_ACK as soon as it has
 *            consumed report k) — so a slot is never overwritten unread. A
 *            node with records sends as soon as it may; an idle one every
 *            report_every strobes, as its heartbeat. The MM zeroes a slot's
 *            length word as it reads the report, so a slot is decoded once.
 *   liveness MM -> the UP nodes, every report_every slices: COMPARE-AND-WRITE
 *            GM_VAR_ALIVE (the slice of the last strobe a node acted on)
 *            >= a recent slice, writing a new lease number to GM_VAR_QUIET.
 *            Its answer comes up the tree combined, so the MM hears every
 *            node alive for a few messages, not one report per node. A node
 *            whose lease changed within gm_quiet_lease strobes and whose
 *            report would say nothing new (no records, no switch delays, the
 *            same commands done and epoch) sends its heartbeat only every
 *            GM_QUIET_BEAT report_every strobes (its clock exchange); a
 *            failed, false or late answer renews no lease, so the nodes go
 *            back to the heartbeat on their own and each is heard, or not,
 *            by its reports as before.
 *   done     node sets GM_VAR_DONE(slot) = job id once every local rank of the
 *            job ended and its output went out; the MM confirms the end of a
 *            job with COMPARE-AND-WRITE (EQ job) over the job's nodes.
 *   bcs      node j -> node i (BCS-MPI, daemons/node/bcs.c): message number
 *            s lands in i's mailbox for j, slot s % GM_BCS_SLOTS, remote
 *            EV_BCS; one message fits one network chunk, so a slot whose
 *            header shows s is complete. j writes s only after i acknowledged
 *            s - GM_BCS_SLOTS by storing its count of consumed messages into
 *            j's GM_BCS_ACK(i) (a separate 8-byte XFER, so acknowledgements
 *            never wait for a free slot themselves).
 *   bulk     node j -> node i (BCS-MPI message data): i grants j a buffer of
 *            its area for j (gm_bcs_area) in a mailbox message; j writes
 *            the data there in one XFER-AND-SIGNAL and, once it holds there
 *            (local event EV_BCS_BULK0 + k), says so in a mailbox message;
 *            i copies it out and only then grants that buffer again.
 */
#ifndef STORM_LAYOUT_H
#define STORM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define STORM_MAX_NODES 1000 /* fabric ids 0..1000 fit a 1024-bit node set */
#define STORM_MAX_LOCAL_RANKS 4096 /* ranks of one job a node starts */

enum storm_event {
	EV_STROBE0 = 1, /* remote, on nodes: strobe area 0 written */
	EV_CMD = 2,    /* remote, on nodes */
	EV_FILE0 = 3,  /* remote, on nodes: file buffer 0 filled */
	EV_REPORT = 4, /* remote, on the MM */
	EV_FILE1 = 5,  /* remote, on nodes: file buffer 1 filled */
	EV_REPORT_ACK = 6, /* remote, on nodes: GM_VAR_REPORT_ACK was written */
	EV_BCS = 7,    /* remote, on nodes: a BCS-MPI mailbox message or ack */
	EV_STROBE1 = 8, /* remote, on nodes: strobe area 1 written */
	/* local completions */
	EV_CMD_SENT = 10,
	EV_FILE_SENT0 = 11, /* + buffer index */
	EV_REPORT_SENT = 13,
	EV_PROBE_SENT = 14,
	/* local, on nodes: a BCS-MPI bulk transfer into a peer's area is held
	 * there; one id per transfer in flight (+ 0 .. GM_BCS_BULK_EVS - 1) */
	EV_BCS_BULK0 = 16,
};
#define GM_BCS_BULK_EVS 8

struct strobe {
	uint64_t slice;   /* timeslice number, from 1 */
	uint32_t cmd_seq; /* last command sent; acting on it may wait for its slot */
	int32_t row;      /* matrix row running in this slice, -1: none */
	uint32_t nnodes;  /* entries in ack and in run */
	uint32_t flags;   /* low byte: K, slices of the schedule ahead (0: none) */
	uint32_t slice_us; /* this slice's length: its row's, shorter than the
			    * cluster's timeslice_us while a job there asks for it */
	uint32_t pad;
	uint64_t switches; /* row changes so far: a new value is a new row's turn */
	uint64_t epoch;   /* the MM's incarnation: a new one means it restarted */
	uint64_t sent_ns; /* CLOCK_REALTIME when sent: a node reports how long
			   * after it its switch was done (the MM's metrics) */
	uint64_t ack[];   /* per node index: last report seq the MM consumed;
			   * then run[nnodes]: the job to run (0: none);
			   * with K > 0, the schedule ahead: struct strobe_slot
			   * slot[K + 1] (slot 0: this slice), then
			   * run_ahead[K][nnodes] (slot i's jobs, i = 1..K);
			   * then the tag (GM_MAC_STROBE) of all before it */
};

/* One slice of the schedule ahead: it starts at start_ns, the MM's
 * CLOCK_MONOTONIC (a node maps it to its own clock), and runs row; switches
 * is the MM's row-change count then. Each node switches at that instant from
 * its own timer; the strobe only has to land before it. */
struct strobe_slot {
	uint64_t start_ns;
	uint64_t switches;
	int32_t row;
	uint32_t pad;
};

#define STROBE_AHEAD_MAX 8 /* K at most */
#define GM_TAG_BYTES 16 /* GM_TAG_LEN (common/gm_auth.h) */
static inline uint64_t *strobe_run(struct strobe *s) { return s->ack + s->nnodes; }
static inline unsigned strobe_ahead(const struct strobe *s) { return s->flags & 0xff; }
/* bytes of the schedule ahead */
static inline size_t strobe_ahead_size(uint32_t nnodes, unsigned k)
{
	return k ? sizeof(struct strobe_slot) * (k + 1) + 8 * (size_t)k * nnodes : 0;
}
/* bytes the tag covers */
static inline size_t strobe_signed_size(uint32_t nnodes, unsigned k)
{
	return sizeof(struct strobe) + 16 * (size_t)nnodes + strobe_ahead_size(nnodes, k);
}
static inline size_t strobe_size(uint32_t nnodes, unsigned k)
{
	return strobe_signed_size(nnodes, k) + GM_TAG_BYTES;
}
static inline struct strobe_slot *strobe_slots(struct strobe *s)
{
	return (struct strobe_slot *)(s->ack + 2 * (size_t)s->nnodes);
}
/* slot i's (1..K) job for node p */
static inline uint64_t *strobe_run_ahead(struct strobe *s, unsigned i)
{
	return (uint64_t *)(strobe_slots(s) + strobe_ahead(s) + 1) + (size_t)(i - 1) * s->nnodes;
}

#define GM_STROBE ((uint64_t)4096)
/* one strobe area: K shrinks to fit (strobe_ahead_fit) */
#define GM_STROBE_MAX ((size_t)20480)
/* slice s's strobe goes to area s % 2 */
#define GM_STROBE_AT(p) (GM_STROBE + (uint64_t)(p) * GM_STROBE_MAX)
#define EV_STROBE_AT(p) ((p) ? EV_STROBE1 : EV_STROBE0)

#define GM_VARS (GM_STROBE_AT(2))
/* u64: seq of the last chunk written from file buffer b */
#define GM_VAR_FILE_DONE(b) (GM_VARS + 8 * (uint64_t)(b))
#define GM_JOB_SLOTS 256
#define GM_VAR_DONE(slot) (GM_VARS + 16 + 8 * (uint64_t)(slot))

/* u64 per job slot: the id of the last checkpoint this node finished for the
 * job there; the MM confirms a checkpoint with COMPARE-AND-WRITE (EQ id) */
#define GM_VAR_CKPT(slot) (GM_VARS + 4096 + 8 * (uint64_t)(slot))

/* On a node: struct report_ack, then its tag (GM_MAC_ACK, for that node);
 * written by the MM right after consuming a report, so a node with more to
 * say need not wait for the next strobe's ack. The three times make one
 * exchange of NTP's kind, from which the node estimates the MM's clock
 * against its own (common/ahead.h, struct clk_est). */
struct report_ack {
	uint64_t seq;     /* the last report of this node the MM consumed */
	uint64_t t1;      /* that report's sent_ns (the node's clock), echoed */
	uint64_t t2;      /* the MM's CLOCK_MONOTONIC when it took the report */
	uint64_t t3;      /* the MM's CLOCK_MONOTONIC as it sends this ack */
};
#define GM_VAR_REPORT_ACK (GM_VARS + 8192)

/* Liveness combined up the tree (the data flow above): u64 on a node, the
 * slice of the last strobe it acted on (it stores it), and the last lease
 * number the MM's liveness COMPARE-AND-WRITE wrote. A lease runs
 * gm_quiet_lease strobes from its change: three liveness rounds, so one
 * late answer does not end it, but at most a quarter of the slices a node
 * may be silent (down_slices): the MM counts a node heard from the start
 * of the last round it answered, so the lease, and the heartbeat after it
 * (report_every, at most half of them), must end well within that. */
#define GM_VAR_ALIVE (GM_VARS + 6144)
#define GM_VAR_QUIET (GM_VARS + 6152)
static inline unsigned gm_quiet_lease(unsigned report_every, unsigned down_slices)
{
	unsigned l = 3 * report_every;
	return l < down_slices / 4 ? l : down_slices / 4;
}
#define GM_QUIET_BEAT 16u
#define GM_REPORT_ACK_SIZE (sizeof(struct report_ack) + GM_TAG_BYTES)

/* The job's end combined up the tree (job_end_combined = 1): u64 on a node,
 * the last command it took (its cmd_done), which the MM reads with
 * COMPARE-AND-WRITE (GE) over the UP nodes before it reuses a ring slot and
 * each liveness round, so a node need not report each command it took.
 * And per job slot a pair: the CPU time (us) of the node's ranks summed and
 * their largest peak RSS (KiB), written before GM_VAR_DONE by a node that
 * ends the job quietly (zeroed before it by one whose accounting went in
 * its report); the MM's termination check sums and maxes the pairs up the
 * tree (sn_caw_gather_start) as it reads the done words. */
#define GM_VAR_CMD_DONE (GM_VARS + 6160)
#define GM_VAR_END_ACCT(slot) (GM_VARS + 8448 + 16 * (uint64_t)(slot))

_Static_assert(sizeof(struct strobe) + 16 * STORM_MAX_NODES + GM_TAG_BYTES <= GM_STROBE_MAX,
	       "a strobe without the schedule ahead must fit for every cluster size");
_Static_assert(GM_VAR_CKPT(GM_JOB_SLOTS) <= GM_VAR_ALIVE && GM_VAR_QUIET + 8 <= GM_VAR_REPORT_ACK,
	       "the liveness variables overlap others");
_Static_assert(GM_VAR_REPORT_ACK + GM_REPORT_ACK_SIZE <= 65536, "the variables overlap the command ring");
_Static_assert(GM_VAR_CMD_DONE + 8 <= GM_VAR_REPORT_ACK &&
	       GM_VAR_REPORT_ACK + GM_REPORT_ACK_SIZE <= GM_VAR_END_ACCT(0) &&
	       GM_VAR_END_ACCT(GM_JOB_SLOTS) <= 65536, "the job end's variables overlap others");

#define GM_CMD_RING ((uint64_t)65536)
#define GM_CMD_SLOTS 16
#define GM_CMD_SLOT_SIZE ((uint64_t)65536)
#define GM_CMD_SLOT(seq) (GM_CMD_RING + ((seq) % GM_CMD_SLOTS) * GM_CMD_SLOT_SIZE)
/* A node takes commands in order and leaves each in its slot (a relay may
 * still have to forward it); the number inside says whether a slot holds
 * the command wanted or the slot's previous one. So command seq, which
 * overwrites the command seq - GM_CMD_SLOTS, goes only once every UP node
 * reported cmd_done >= GM_CMD_REUSE_DONE(seq): the ring holds GM_CMD_SLOTS
 * commands not yet taken. */
#define GM_CMD_REUSE_DONE(seq) ((seq) > GM_CMD_SLOTS ? (seq) - GM_CMD_SLOTS : 0)

struct file_chunk {
	uint64_t job;
	uint64_t seq;     /* global chunk sequence, from 1 */
	uint64_t offset;  /* in the file */
	uint32_t file;    /* index in Launch.files / the announced list */
	uint32_t len;     /* data bytes following this header */
	uint64_t size;    /* whole file size */
	uint32_t mode;
	uint32_t flags;   /* FILE_LAST: last chunk of the file */
	uint32_t uid, gid; /* owner of the job directory and its files */
	char name[64];    /* basename in the job directory */
	uint8_t nonce[16]; /* the MM's, random per start: with seq, a one-time key */
	uint8_t tag[16];  /* gm_file_tag over the header before it and the data */
};
#define FILE_LAST 1u

#define GM_FILE_BUF ((uint64_t)2 << 20)
#define GM_FILE_BUF_SIZE ((uint64_t)4 << 20)
#define GM_FILE_DATA_MAX (GM_FILE_BUF_SIZE - sizeof(struct file_chunk))
#define GM_FILE_BUF_AT(i) (GM_FILE_BUF + (uint64_t)(i) * GM_FILE_BUF_SIZE)
#define EV_FILE(b) ((b) ? EV_FILE1 : EV_FILE0)

#define GM_REPORTS (GM_FILE_BUF + 2 * GM_FILE_BUF_SIZE)
#define GM_REPORT_SLOT_SIZE ((uint64_t)65536)
#define GM_REPORT_SLOT(idx) (GM_REPORTS + (uint64_t)(idx) * GM_REPORT_SLOT_SIZE)

/* BCS-MPI mailboxes, after the report slots (their place depends on the
 * node count, which every process of a cluster shares): per source node an
 * acknowledgement word, then GM_BCS_SLOTS message slots. */
#define GM_BCS_SLOTS 16u
#define GM_BCS_SLOT_SIZE ((uint64_t)65536)
_Static_assert(GM_BCS_SLOT_SIZE <= 128 * 1024, "a mailbox message must fit one network chunk");
static inline uint64_t gm_bcs_base(uint32_t nnodes)
{
	return (GM_REPORT_SLOT(nnodes) + 65535) & ~(uint64_t)65535;
}
/* on node i: how many of i's messages node `from` consumed */
static inline uint64_t gm_bcs_ack(uint32_t nnodes, uint32_t from)
{
	return gm_bcs_base(nnodes) + 8 * (uint64_t)from;
}
/* on node i: slot k of the mailbox for messages from node `from` */
static inline uint64_t gm_bcs_slot(uint32_t nnodes, uint32_t from, uint32_t k)
{
	uint64_t slots = (gm_bcs_base(nnodes) + 8 * (uint64_t)STORM_MAX_NODES + 65535) &
			 ~(uint64_t)65535;
	return slots + ((uint64_t)from * GM_BCS_SLOTS + k) * GM_BCS_SLOT_SIZE;
}

/* BCS-MPI bulk areas, after the mailboxes: on node i, one per source node,
 * which node `from` fills with message data node i granted it (bcs.c), in
 * GM_BCS_AREA_BUFS buffers, so that while one is copied into a rank others
 * are read from the sender's rank or on the wire. Size per source:
 * 32 MiB / nodes, between 512 KiB and 8 MiB (buffers of whole 64 KiB), so a
 * node's areas together stay at or under 32 MiB up to 64 nodes (512 KiB
 * each beyond: 500 MiB at the 1000-node maximum, mapped only where a peer
 * writes), while up to 4 nodes get buffers of 2 MiB: the fewer round trips
 * (grant, data, DATA) a message takes, the closer it gets to the link's
 * rate. */
#define GM_BCS_AREA_BUFS 4u
static inline uint64_t gm_bcs_area_size(uint32_t nnodes)
{
	uint64_t s = nnodes ? ((uint64_t)32 << 20) / nnodes : ((uint64_t)8 << 20);
	if (s > ((uint64_t)8 << 20))
		s = (uint64_t)8 << 20;
	if (s < ((uint64_t)512 << 10))
		s = (uint64_t)512 << 10;
	return s & ~((uint64_t)GM_BCS_AREA_BUFS * 65536 - 1); /* buffers of whole 64 KiB */
}
/* on node i: buffer k of the area for data from node `from` */
static inline uint64_t gm_bcs_area(uint32_t nnodes, uint32_t from, uint32_t k)
{
	return gm_bcs_slot(nnodes, nnodes, 0) + (uint64_t)from * gm_bcs_area_size(nnodes) +
	       (uint64_t)k * (gm_bcs_area_size(nnodes) / GM_BCS_AREA_BUFS);
}

static inline size_t layout_gmem_size(uint32_t nnodes)
{
	return gm_bcs_area(nnodes, nnodes, 0);
}

static inline uint32_t fabric_id(uint32_t node_index) { return node_index + 1; }
#define MM_FABRIC_ID 0u

#endif
