/* Time-triggered switching on a node: each strobe with a schedule ahead
 * (common/layout.h, struct strobe_slot) replaces the schedule this node
 * holds; a timerfd armed at the next slot's start (TFD_TIMER_ABSTIME) makes
 * the switch at that instant, so every node switches at the same time
 * whatever the strobe's delivery took. The strobe only has to land before
 * the next slot starts; a node that misses strobes follows what it holds
 * for at most K slices and then holds the last, as it does without
 * strobes. A strobe without a schedule switches on its arrival, as before.
 * With /dev/storm (kswitch.c) the module switches at the deadlines instead
 * of this timer.
 *
 * The slots' starts are the MM's CLOCK_MONOTONIC. Each node maps them onto
 * its own clock with the offset it estimates as NTP does, from the report
 * and its ack: the node stamps a report as it sends it (t1), the MM stamps
 * taking it (t2) and sending the ack (t3), which echoes t1; the node stamps
 * the ack's arrival (t4). offset = ((t2 - t1) + (t3 - t4)) / 2, with an
 * error of at most half the round trip (t4 - t1) - (t3 - t2); of the last
 * exchanges the one with the least round trip is kept (common/ahead.c).
 * Reports go every few slices, so the estimate follows a drifting clock.
 * On one host every clock is the same and the offset measures ~0. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "nd.h"

/* A row switch done here, for the MM's metrics (SwitchDelay). */
static void record(struct nd *nd, uint64_t switches, uint64_t delay_ns, const struct nd_gang_sw *sw)
{
	if (nd->nsw == ND_SW_KEPT) {
		memmove(nd->sw, nd->sw + 1, sizeof(nd->sw[0]) * (ND_SW_KEPT - 1));
		nd->nsw--;
	}
	nd->sw[nd->nsw].switches = switches;
	nd->sw[nd->nsw].delay_us = (uint32_t)(delay_ns / 1000);
	nd->sw[nd->nsw].off_us = sw ? (uint32_t)(sw->off_ns / 1000) : 0;
	nd->sw[nd->nsw++].timeout = sw && sw->timeout;
}

/* Armed at the next entry that changes something here. One that runs the
 * job already running, at the MM's switch count already reached, would
 * only cost a wake-up a slice on a node with nothing to switch (idle, or
 * one job per row): it is marked done here, and the next strobe, whose
 * own slot it is, or the next entry that does switch, does its
 * bookkeeping. */
static void arm(struct nd *nd)
{
	struct ahead_sched *a = &nd->ahead;
	while (a->done < a->n && a->e[a->done].run == nd->run_job &&
	       a->e[a->done].switches == nd->switches)
		a->done++;
	uint64_t next = nd->ks ? 0 : ahead_next_deadline(a);
	if (next == nd->ahead_armed_ns)
		return; /* a system call a slice saved */
	nd->ahead_armed_ns = next;
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = (time_t)(next / 1000000000u);
	its.it_value.tv_nsec = (long)(next % 1000000000u);
	if (nd->ahead_fd >= 0 && timerfd_settime(nd->ahead_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		slog("switch timer (fd %d): %s", nd->ahead_fd, strerror(errno));
}

/* Switches to the entry due at now, if any; returns the jobs switched. */
static int fire(struct nd *nd)
{
	uint64_t now = clock_mono_ns();
	int i = ahead_take_due(&nd->ahead, now);
	if (i < 0)
		return 0;
	const struct ahead_entry *e = &nd->ahead.e[i];
	/* the job traces' run events name this slot */
	nd->strobe_switches = e->switches;
	nd->strobe_row = e->row;
	uint64_t wall_now = nd_wall_us(), late = now - e->deadline_ns;
	nd->strobe_sent_us = wall_now > late / 1000 ? wall_now - late / 1000 : 0;
	struct nd_gang_sw sw;
	int switched = nd_gang_apply(nd, e->run, &sw);
	uint64_t done = clock_mono_ns();
	if (switched)
		record(nd, e->switches, done - e->deadline_ns, &sw);
	if (nd->trace)
		/* the MM's switch count, the slot's start, when the timer ran, when
		 * the switch was done, how long the outgoing ranks took to stop */
		fprintf(nd->trace,
			"switch %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64 " %d\n",
			e->switches, e->deadline_ns, now, switched ? done : 0, switched, sw.off_ns,
			sw.timeout);
	nd->switches = e->switches;
	return switched;
}

static void on_timer(void *arg, uint32_t events)
{
	struct nd *nd = arg;
	uint64_t n;
	(void)events;
	if (read(nd->ahead_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		slog("switch timer (fd %d): %s", nd->ahead_fd, strerror(errno));
	fire(nd);
	arm(nd);
}

uint64_t nd_clock_ns(const struct nd *nd)
{
	return clock_mono_ns() + nd->clock_skew_ns;
}

uint64_t nd_mm_clock_ns(const struct nd *nd)
{
	return nd_clock_ns(nd) + (uint64_t)(nd->clk.valid ? nd->clk.offset_ns : 0);
}

void nd_timed_clock_sample(struct nd *nd, const struct report_ack *a)
{
	if (!a->t1 || a->t1 != nd->report_sent_ns || a->seq != nd->report_seq)
		return; /* an ack of an older report, or of one sent before a restart */
	clk_est_sample(&nd->clk, a->t1, a->t2, a->t3, nd_clock_ns(nd));
	if (!nd->clk.valid)
		return; /* stamps out of order: no sample */
	int64_t off = nd->clk.offset_ns, moved = off - nd->clk_logged_ns;
	if (!nd->clk_logged || moved > 1000000 || moved < -1000000) {
		slog("clock: the MM's reads %+.3f ms against this node's (error at most %.3f ms)",
		     (double)off / 1e6, (double)nd->clk.rtt_ns / 2e6);
		nd->clk_logged = true;
		nd->clk_logged_ns = off;
	}
}

int nd_timed_init(struct nd *nd)
{
	nd->ahead.n = nd->ahead.done = 0;
	nd->ahead_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (nd->ahead_fd < 0 || ev_io_add(nd->loop, nd->ahead_fd, EPOLLIN, on_timer, nd) < 0) {
		slog("error: switch timer: %s", strerror(errno));
		return -1;
	}
	nd_kswitch_open(nd);
	return 0;
}

void nd_timed_close(struct nd *nd)
{
	nd_kswitch_close(nd);
	if (nd->ahead_fd >= 0) {
		ev_io_del(nd->loop, nd->ahead_fd);
		close(nd->ahead_fd);
	}
	nd->ahead_fd = -1;
}

int nd_timed_strobe(struct nd *nd, const struct strobe *s, uint64_t run,
		    const struct strobe_slot *slots, const uint64_t *run_ahead)
{
	unsigned k = strobe_ahead(s);
	struct ahead_sched *a = &nd->ahead;
	a->n = a->done = 0;
	if (k) {
		/* slot 0 is this strobe's own slice, with the run list above */
		for (unsigned i = 0; i <= k; i++)
			a->e[i] = (struct ahead_entry){
				.deadline_ns = clk_to_local(&nd->clk, slots[i].start_ns) -
					       nd->clock_skew_ns,
				.switches = slots[i].switches,
				.run = i ? run_ahead[i - 1] : run,
				.row = slots[i].row,
			};
		a->n = k + 1;
	} else {
		a->e[0] = (struct ahead_entry){ .deadline_ns = clock_mono_ns(),
						.switches = s->switches,
						.run = run,
						.row = s->row };
		a->n = 1;
	}
	if (nd->ks) {
		nd_kswitch_push(nd);
		return 0;
	}
	int switched;
	if (k) {
		switched = fire(nd);
	} else {
		/* as before the schedule ahead: at once, timed from the MM's send */
		a->done = 1;
		nd->strobe_switches = s->switches;
		nd->strobe_sent_us = s->sent_ns / 1000;
		nd->strobe_row = s->row;
		struct nd_gang_sw sw;
		switched = nd_gang_apply(nd, run, &sw);
		if (switched && s->sent_ns) {
			double late = clock_wall_s() * 1e9 - (double)s->sent_ns;
			record(nd, s->switches, late > 0 ? (uint64_t)late : 0, &sw);
		}
	}
	arm(nd);
	return switched;
}
