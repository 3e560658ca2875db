/* The timeslice: strobes, membership and node reports. */
#include "mm.h"

#include "ahead.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A node not heard from for this many of the cluster's slices gets its strobe on its own,
 * not inside the tree, so a dead node cannot starve a subtree of strobes
 * before it is declared DOWN. */
static unsigned suspect_after(const struct mm *mm)
{
	unsigned s = conf_down_slices(&mm->conf) / 8;
	return s < 3 ? 3 : s;
}

/* UP and heard within suspect_after slices: in the strobe's tree and in
 * the liveness rounds */
static bool fresh(const struct mm *mm, int i)
{
	const struct mm_node *n = &mm->nodes[i];
	return n->state == STORM__CTL__NODE_STATE__UP &&
	       mm->elapsed_us - n->heard_us <=
		       (uint64_t)suspect_after(mm) * mm->conf.timeslice_us;
}

static void send_strobe(struct mm *mm)
{
	struct strobe *s = (struct strobe *)mm->strobe_buf;
	int nn = mm->conf.nnodes;
	s->slice = mm->slice;
	s->cmd_seq = mm->cmd_seq;
	s->nnodes = (uint32_t)nn;
	unsigned k = strobe_ahead_fit((uint32_t)nn, mm->conf.ahead);
	s->flags = k;
	s->epoch = mm->epoch;
	s->sent_ns = (uint64_t)(mm->slice_start * 1e9); /* slice_tick's clock, read once */
	gang_fill_strobe(mm, s);
	for (int i = 0; i < nn; i++)
		s->ack[i] = mm->nodes[i].report_seq;
	/* the tag covers the whole strobe: fill everything first */
	gm_mac(mm->key, GM_MAC_STROBE, GM_MAC_ANY_NODE, s, strobe_signed_size((uint32_t)nn, k),
	       mm->strobe_buf + strobe_signed_size((uint32_t)nn, k));
	size_t size = strobe_size((uint32_t)nn, k);
	if (mm->fault_stop_in && --mm->fault_stop_in == 0) {
		slog("test hook: the MM stops");
		_exit(137);
	}
	if (fault_hit(&mm->fault, "strobe", mm->slice)) {
		/* what a forger would send: the nodes must refuse it and go on */
		slog("test hook: strobe %llu goes out altered", (unsigned long long)mm->slice);
		s->row ^= 0x40;
	}
	uint64_t area = GM_STROBE_AT(mm->slice % 2);
	unsigned ev = EV_STROBE_AT(mm->slice % 2);
	struct sn_nodeset tree, single;
	sn_set_clear(&tree);
	for (int i = 0; i < nn; i++) {
		struct mm_node *n = &mm->nodes[i];
		if (fresh(mm, i)) {
			sn_set_add(&tree, fabric_id((uint32_t)i));
		} else if (n->state == STORM__CTL__NODE_STATE__UP ||
			   (!mm->probe_timer && mm->slice % 4 == 0)) {
			/* suspects every slice, the rest as a probe every fourth
			 * slice, or every PROBE_US from probe_tick when slices are
			 * long (else an 8 s slice kept a starting node waiting 32 s) */
			sn_set_clear(&single);
			sn_set_add(&single, fabric_id((uint32_t)i));
			sn_xfer(mm->sn, &single, area, s, size, SN_NO_EVENT, ev, SN_XFER_SYS);
		}
	}
	if (sn_set_count(&tree) == 0)
		return;
	if (mm->trace)
		fprintf(mm->trace, "strobe %llu %llu %d %.0f\n", (unsigned long long)mm->slice,
			(unsigned long long)mm->switches, mm->row, (double)clock_mono_ns());
	int rc = sn_xfer(mm->sn, &tree, area, s, size, SN_NO_EVENT, ev, SN_XFER_SYS);
	if (rc < 0)
		slog("strobe %llu: %s", (unsigned long long)mm->slice, sn_strerror(mm->sn));
}

/* A liveness round answered: on true every node asked was alive when it
 * started (it answered since, and had acted on a recent strobe) and took
 * the new lease. Anything else renews no lease: the nodes go back to the
 * heartbeat within gm_quiet_lease strobes, and are heard by their reports,
 * a vanished one not, as before the rounds. */
static void live_answered(struct mm *mm, uint64_t lease, uint64_t slice,
			  const struct sn_caw_result *res)
{
	if (lease != mm->live_round)
		return;
	mm->live_round = 0;
	if (mm->trace)
		fprintf(mm->trace, "live %llu %llu %d %.0f\n", (unsigned long long)slice,
			(unsigned long long)lease, res->status, (double)clock_mono_ns());
	if (res->status != 1)
		return;
	for (int i = 0; i < mm->conf.nnodes; i++) {
		struct mm_node *n = &mm->nodes[i];
		if (!sn_set_has(&mm->live_set, fabric_id((uint32_t)i)) ||
		    n->state != STORM__CTL__NODE_STATE__UP || n->heard_us >= mm->live_us)
			continue;
		n->heard_us = mm->live_us;
		n->heard_slice = slice;
		n->heard_time = mm->live_time;
	}
}

/* Every report_every slices, one COMPARE-AND-WRITE over the nodes in the
 * strobe's tree instead of a heartbeat report from each: its answer is
 * combined up the tree, so the MM's work for it does not grow with the
 * nodes. One round at a time; one that waits on a dead node holds the next
 * back, and the leases run out meanwhile. */
static void live_tick(struct mm *mm)
{
	unsigned every = mm->conf.report_every;
	if (mm->live_round || mm->slice % every || mm->slice <= 2 * (uint64_t)every)
		return;
	sn_set_clear(&mm->live_set);
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (fresh(mm, i))
			sn_set_add(&mm->live_set, fabric_id((uint32_t)i));
	if (sn_set_count(&mm->live_set) == 0)
		return;
	/* acted on one of the last two rounds' strobes: a node answering
	 * the network but no longer taking strobes renews nothing */
	uint64_t since = mm->slice - 2 * (uint64_t)every;
	uint64_t lease = ++mm->live_lease;
	mm->live_us = mm->elapsed_us;
	mm->live_time = clock_wall_s();
	mm->live_round = lease;
	/* job_end_combined: the commands the nodes took, which they do not
	 * report each (a node that lags them reports, cmd.c) */
	cmd_read_done(mm, mm->cmd_seq);
	if (mm_query_write(mm, &mm->live_set, GM_VAR_ALIVE, SN_GE, since, true, GM_VAR_QUIET,
			   lease, live_answered, lease, mm->slice) < 0) {
		mm->live_round = 0;
		slog_limited(&mm->rl_report, "liveness round: %s", sn_strerror(mm->sn));
	}
}

void probe_tick(struct mm *mm)
{
	status_waiters_answer(mm); /* their deadlines, between long slices */
	if (mm->slice == 0)
		return; /* no strobe yet to probe with */
	struct sn_nodeset single;
	const struct strobe *last = (const struct strobe *)mm->strobe_buf;
	size_t size = strobe_size((uint32_t)mm->conf.nnodes, strobe_ahead(last));
	for (int i = 0; i < mm->conf.nnodes; i++) {
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP)
			continue;
		/* the last strobe again: a node that already has it ignores it */
		sn_set_clear(&single);
		sn_set_add(&single, fabric_id((uint32_t)i));
		sn_xfer(mm->sn, &single, GM_STROBE_AT(last->slice % 2), mm->strobe_buf, size,
			SN_NO_EVENT, EV_STROBE_AT(last->slice % 2), SN_XFER_SYS);
	}
}

/* The rotation's step for the slice starting now, and that slice's start
 * and length. Slice boundaries this MM slept through (a loaded host): the
 * nodes switched at them on the schedule they held, so the rotation steps
 * as often, or this strobe would send them back a row. */
static void step_grid(struct mm *mm)
{
	uint64_t now = clock_mono_ns();
	uint64_t g = mm->slice_grid_ns ? mm->slice_grid_ns + (uint64_t)mm->slice_us * 1000
				       : mm->slice_origin_ns;
	unsigned old_us = mm->slice_us;
	for (unsigned steps = 0;; steps++) {
		gang_tick(mm);
		mm->slice_us = gang_slice_us(mm, mm->row);
		uint64_t len = (uint64_t)mm->slice_us * 1000;
		if (!mm->slice_grid_ns || !mm->conf.ahead || steps >= STROBE_AHEAD_MAX ||
		    g + len > now)
			break;
		g += len;
	}
	uint64_t len = (uint64_t)mm->slice_us * 1000;
	if (g + len <= now) /* further behind than the schedule ahead reaches */
		g = ahead_slice_start(g, len, now);
	mm->slice_grid_ns = g;
	if (mm->slice_us != mm->timer_us) {
		/* the next tick when this slice ends, then every slice of this length */
		uint64_t first = g + len > now ? (g + len - now + 999) / 1000 : 1;
		if (ev_timer_set(mm->loop, mm->slice_timer, first, mm->slice_us) < 0)
			slog("slice timer: %s", strerror(errno));
		else
			mm->timer_us = mm->slice_us;
	}
	if (mm->trace && mm->slice_us != old_us)
		fprintf(mm->trace, "slice %llu %u %d %.0f\n", (unsigned long long)mm->slice,
			mm->slice_us, mm->row, (double)g);
}

void slice_tick(struct mm *mm)
{
	mm->slice++;
	mm->slice_start = clock_wall_s();
	/* liveness counts the time of the slices stepped, one slice per tick,
	 * so a late MM only stretches it and short slices do not shorten it */
	mm->elapsed_us += mm->slice_us;
	nodes_check(mm);
	recover_tick(mm);
	jobs_check_time(mm);
	step_grid(mm);
	ckpt_tick(mm);
	send_strobe(mm);
	live_tick(mm);
	clients_tick(mm);
	/* what can let a job start (a submission, a job's end, a node UP, a
	 * transfer done) runs jobs_schedule itself; but an `after:` dependency
	 * holds once its job runs, and an array's limit may change with a
	 * launch, so a waiting queue is looked at again every 50 slices */
	if (mm->jobs_waiting && mm->slice % 50 == 0)
		jobs_schedule(mm);
}

/* ---- reports */

/* ---- the command ring */
