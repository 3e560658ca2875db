/* BCS-MPI record and replay (docs/bcs-trace.md).
 *
 * Matching under BCS is a function of (slice, source rank, post order); what
 * still depends on timing is what a program observes between slices: which
 * message a wildcard receive got, whether an MPI_Test* or MPI_Iprobe found
 * something, which request MPI_Waitany/Waitsome returned. `storm run
 * --record` has each rank stream those outcomes, as it makes them, to its
 * node daemon through the channel's trace ring (chan.h), whence they reach
 * the machine manager's database whatever becomes of the rank; `storm
 * replay` hands each rank its streams back and the library forces every
 * outcome: a wildcard receive becomes a receive from the recorded source and
 * tag, a test returns the recorded flag (waiting if it has to), and so on.
 *
 * This is the library's side; the codec is trace_codec.h. */
#ifndef BCS_TRACE_H
#define BCS_TRACE_H

#include <stdbool.h>

#include "chan.h"
#include "trace_codec.h"

/* ---- the library's side (trace.c) */
/* abort_job ends the whole job when a replay diverges (MPI_Abort); a
 * recording rank streams its outcomes into area's trace ring, and
 * wait_room waits (until the daemon's next strobe) while cond fails; hdr,
 * the channel's header, says when a restore made the rank replay from a
 * checkpoint (storm replay --from). */
void bcs_trace_init(int rank, void (*abort_job)(int code), struct bcs_area *area,
		    const struct bcs_chan_hdr *hdr,
		    void (*wait_room)(bool (*cond)(void *), void *arg));
void bcs_trace_finish(void);
/* A wildcard receive or probe is posted: returns its ordinal; in replay,
 * the source and tag become the recorded outcome. */
int bcs_trace_wild_post(int *src, int *tag);
void bcs_trace_wild_done(int ordinal, int src, int tag);
/* A timing-dependent flag: records it, or in replay returns the recorded one. */
int bcs_trace_test(int flag, const char *fn);
/* In replay, the next flag without taking it; -1 otherwise. */
int bcs_trace_peek_test(void);
int bcs_trace_index(int i, const char *fn);
uint64_t bcs_trace_mask(uint64_t mask, const char *fn);
/* Non-zero in replay. */
int bcs_trace_replaying(void);
/* In replay, a stream that runs out in a rank whose recorded run did not
 * reach MPI_Finalize holds the rank there (the point of failure) until the
 * job ends. */

/* An MPI call begins (enum bcs_call_kind; peer, tag and bytes as the
 * program gave them, -1 when the call has none): the calls are numbered
 * from 1. Recording streams it (a repeat of the same call is counted, not
 * streamed); replay checks it against the recorded one, holds the rank at
 * storm replay --stop's call, and holds a rank that has made every call
 * its recorded run made when that run ended before MPI_Finalize. */
void bcs_trace_call(int kind, int peer, int tag, uint64_t bytes);
/* Calls made inside another (MPI_Finalize's barrier) are not calls. */
void bcs_trace_mute(int on);
/* The rank is about to wait in its current call: in replay, if its recorded
 * run ended waiting in this call, tells the CLI (storm replay names a
 * deadlock once every rank has). */
void bcs_trace_waiting(void);

/* storm replay --debug: holds the rank named by STORM_BCS_DEBUG in MPI_Init
 * (under gdbserver when there is one) until a debugger clears bcs_debug_hold */
void bcs_trace_debug_hold(int rank);

#endif
