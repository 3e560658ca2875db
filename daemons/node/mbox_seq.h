/* The bookkeeping of one node-to-node mailbox stream, without the network:
 * which sequence numbers a sender may use, what an acknowledgement frees,
 * when its unacknowledged window goes again (a timeout with back-off), and
 * on the receiving side which message is the next to deliver, which is a
 * duplicate and when to acknowledge. mailbox.c does the transfers; this is
 * pure (unit-tested: tests/unit/test_mbox_seq.c). Times are nanoseconds on
 * any monotonic clock; sequence numbers wrap (compared as differences). */
#ifndef STORM_MBOX_SEQ_H
#define STORM_MBOX_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#define MBS_WINDOW 16u                        /* == GM_BCS_SLOTS */
#define MBS_RTO_MIN_NS (500ull * 1000000)     /* first resend after this */
#define MBS_RTO_MAX_NS (4000ull * 1000000)    /* the back-off stops doubling here */
#define MBS_ACK_DELAY_NS (20ull * 1000000)    /* a lone delivery's ack waits this */

/* sender: one stream to a peer */
struct mbs_out {
	uint32_t sent;    /* the newest number given (messages 1..sent) */
	uint32_t acked;   /* the peer consumed 1..acked: those are freed */
	uint64_t rto_ns;  /* the wait before the next resend (backs off) */
	uint64_t due_ns;  /* when the window goes again; 0: nothing unacknowledged */
	uint32_t resends; /* windows sent again, for the dump */
	uint32_t gap_resent; /* the last number sent again for a gap report, 0: none */
};

/* How many numbers the window still takes. */
uint32_t mbs_room(const struct mbs_out *o);
/* Numbers the next message (only with mbs_room > 0): its sequence number.
 * The first of an empty window starts the resend timer. */
uint32_t mbs_number(struct mbs_out *o, uint64_t now);
/* The peer says it consumed 1..ack. Returns how many messages that frees
 * (0 for an old, repeated or impossible value: beyond what was sent, or
 * from an earlier stream). Progress restarts the timer at the shortest
 * wait; an empty window stops it. */
uint32_t mbs_ack(struct mbs_out *o, uint32_t ack, uint64_t now);
/* A transmission failed at once (the provider refused it): the window goes
 * again at the next resend, no later than the shortest wait from now. */
void mbs_send_failed(struct mbs_out *o, uint64_t now);
/* The peer's count came with a gap report: it holds later messages but not
 * ack+1 (transfers to a peer arrive in order, so that one was lost). True
 * when ack+1 must be sent again now: once per reported gap, while it is
 * unacknowledged; the timer covers a resend that is lost too. */
bool mbs_gap_reported(struct mbs_out *o, uint32_t ack);
/* At a timer: true when the unacknowledged window acked+1..sent must be
 * sent again now; the next wait doubles (up to MBS_RTO_MAX_NS). */
bool mbs_resend_due(struct mbs_out *o, uint64_t now);

/* receiver: one stream from a peer */
struct mbs_in {
	uint32_t consumed;   /* messages 1..consumed were delivered */
	uint32_t acked;      /* the last count written back to the sender */
	uint32_t last_xmit;  /* transmission number of message `consumed` as delivered */
	bool ack_again;      /* a duplicate came: the sender missed our ack */
	bool gap;            /* the next ack reports a gap at consumed+1 */
	uint32_t gap_at;     /* the number a gap was last reported for, 0: none */
	uint32_t repeated;   /* the last count a strobe wrote: each count goes
			      * out at a strobe once more, so a lost ack costs
			      * a strobe, not a resend timeout */
	uint64_t ack_due_ns; /* when a delayed ack is due; 0: none pending */
	uint32_t dups;       /* duplicates seen, for the dump */
};

enum mbs_verdict {
	MBS_DELIVER,   /* the next in order: hand it over, then mbs_delivered */
	MBS_DUPLICATE, /* already delivered and sent again: dropped, re-acked */
	MBS_IGNORE,    /* anything else (ahead of a gap, stale): not now */
};
/* What to do with the message (seq, xmit) found in a slot the receiver
 * looks at (the next one's, and the last delivered one's). A duplicate
 * is counted and asks for an ack at once. */
enum mbs_verdict mbs_offer(struct mbs_in *in, uint32_t seq, uint32_t xmit);
void mbs_delivered(struct mbs_in *in, uint32_t xmit, uint64_t now);
/* A later message of the window is there while consumed+1 is not: true
 * when that gap is to be reported (an ack at once, with the gap flag), once
 * per missing number. */
bool mbs_gap_seen(struct mbs_in *in);
/* Should the count go to the sender now? At once for half a window, a
 * duplicate or a gap, after MBS_ACK_DELAY_NS for fewer; at a strobe
 * (strobe) for any, and a count no strobe wrote yet once more. */
bool mbs_ack_due(const struct mbs_in *in, uint64_t now, bool strobe);
/* Does the count carry the gap flag? While the gap reported stays open:
 * a later write of the same count (a strobe's repeat) must not take it
 * back before the sender read it. */
bool mbs_gap_open(const struct mbs_in *in);
/* The ack of `consumed` was written (with mbs_gap_open's flag), at a
 * strobe or not. */
void mbs_ack_sent(struct mbs_in *in, bool strobe);
/* The stream is taken up at message next (a peer that restarted). */
void mbs_restart(struct mbs_in *in, uint32_t next);

/* The earliest deadline of a stream pair (0: none). */
uint64_t mbs_next_due(const struct mbs_out *o, const struct mbs_in *in);

#endif
