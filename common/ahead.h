/* The schedule ahead (common/layout.h, struct strobe_slot): the arithmetic
 * the MM and the node daemons share, pure so that it is unit-tested. The MM
 * stamps each slice with its nominal start on the slice timer's grid; a node
 * holds the slots of the last strobe and switches at each from its own
 * timer, so a late or lost strobe costs nothing until its K slots run out:
 * then the node holds the last one (as it does today without strobes). */
#ifndef STORM_AHEAD_H
#define STORM_AHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"

/* The K (at most want, at most STROBE_AHEAD_MAX) whose strobe fits its area
 * for nnodes nodes. */
unsigned strobe_ahead_fit(uint32_t nnodes, unsigned want);

/* The start of the slice running at now, on the grid origin + n * period. */
uint64_t ahead_slice_start(uint64_t origin_ns, uint64_t period_ns, uint64_t now_ns);
/* Grid points passed from last_ns (a grid point) to now: slices elapsed. */
uint64_t ahead_slices_since(uint64_t last_ns, uint64_t period_ns, uint64_t now_ns);

/* A node's held schedule: entry 0 is the last strobe's own slice. */
struct ahead_entry {
	uint64_t deadline_ns; /* this node's CLOCK_MONOTONIC */
	uint64_t switches;
	uint64_t run;         /* the job to run here, 0: none */
	int32_t row;
};
struct ahead_sched {
	struct ahead_entry e[STROBE_AHEAD_MAX + 1];
	unsigned n;           /* entries held, 0: none (switch on strobes) */
	unsigned done;        /* entries already switched to */
};

/* The entry to switch to at now: the latest due one not yet done, or -1.
 * Marks it and the ones it passes over done. */
int ahead_take_due(struct ahead_sched *a, uint64_t now_ns);
/* The deadline of the next entry not yet done, 0: none (the node holds). */
uint64_t ahead_next_deadline(const struct ahead_sched *a);

/* The MM's clock against a node's, estimated from exchanges: the node sent
 * at t1 (its clock), the MM received at t2 and answered at t3 (its clock),
 * the node received at t4. offset = MM - node; of the last CLK_WINDOW
 * samples the one with the least round trip wins, as its error is at most
 * rtt / 2, and an old one leaves the window, so drift is followed. */
#define CLK_WINDOW 16
struct clk_est {
	int64_t offset_ns;    /* the estimate */
	uint64_t rtt_ns;
	bool valid;
	unsigned n, next;     /* samples in win, where the next goes */
	struct { int64_t off; uint64_t rtt; } win[CLK_WINDOW];
};
void clk_est_sample(struct clk_est *c, uint64_t t1, uint64_t t2, uint64_t t3, uint64_t t4);
/* The MM's time t on this node's clock (t itself without an estimate). */
uint64_t clk_to_local(const struct clk_est *c, uint64_t mm_ns);

#endif
