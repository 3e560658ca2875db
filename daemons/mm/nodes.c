/* Membership: a node is UP while it reports, DOWN when it is silent for
 * down_after_ms or is declared dead; what UP and DOWN mean for the
 * jobs on it is job.c's. */
#include "mm.h"

#include <stdio.h>
#include <string.h>

/* Every job that runs on node idx fails there: for why, or (NULL) as one
 * whose node fell silent. */
static void fail_jobs_on(struct mm *mm, int idx, const char *why)
{
	/* ids first: ending a job may forget ended ones from the list */
	uint64_t ids[STORM_MAX_MPL * 4];
	int n_ids = 0;
	for (struct job *j = mm->jobs; j && n_ids < (int)(sizeof(ids) / sizeof(ids[0]));
	     j = j->next)
		if (job_runs_on(mm, j->id, idx))
			ids[n_ids++] = j->id;
	for (int k = 0; k < n_ids; k++) {
		struct job *j = job_find(mm, ids[k]);
		if (j && why)
			job_node_failed(mm, j, idx, why);
		else if (j)
			job_node_lost(mm, j, idx);
	}
}

void mark_node(struct mm *mm, int idx, Storm__Ctl__NodeState st, const char *why)
{
	struct mm_node *n = &mm->nodes[idx];
	if (n->state == st)
		return;
	n->state = st;
	matrix_set_down(&mm->matrix, idx, st != STORM__CTL__NODE_STATE__UP);
	slog("node %s is %s%s%s", mm->conf.nodes[idx],
	       st == STORM__CTL__NODE_STATE__UP ? "UP" : "DOWN", why ? ": " : "", why ? why : "");
	if (st == STORM__CTL__NODE_STATE__DOWN)
		fail_jobs_on(mm, idx, NULL);
	if (st == STORM__CTL__NODE_STATE__UP) {
		/* a node daemon that restarted has its file flow-control
		 * variables at 0: count every chunk so far as consumed there */
		uint64_t fd[2] = { mm->file_seq, mm->file_seq };
		struct sn_nodeset one;
		sn_set_clear(&one);
		sn_set_add(&one, fabric_id((uint32_t)idx));
		sn_xfer(mm->sn, &one, GM_VAR_FILE_DONE(0), fd, sizeof(fd), SN_NO_EVENT, SN_NO_EVENT, 0);
		jobs_node_up(mm, idx);
		jobs_schedule(mm);
		status_waiters_answer(mm);
	}
}

/* A daemon that restarted holds nothing of what ran under the old one, and
 * its first report may come after the MM scheduled more there: it is DOWN
 * (its jobs fail, or restart from a checkpoint) however recently the old
 * one reported, and UP again on the new one's report. */
void node_incarnation(struct mm *mm, int idx, uint64_t incarnation)
{
	struct mm_node *n = &mm->nodes[idx];
	if (!incarnation || incarnation == n->incarnation)
		return;
	bool restarted = n->incarnation != 0;
	n->incarnation = incarnation;
	if (!restarted)
		return;
	char why[128];
	snprintf(why, sizeof(why), "node %s: the node daemon restarted; what the job ran there is lost",
		 mm->conf.nodes[idx]);
	fail_jobs_on(mm, idx, why);
	mark_node(mm, idx, STORM__CTL__NODE_STATE__DOWN, "its daemon restarted");
}

void nodes_check(struct mm *mm)
{
	for (int i = 0; i < mm->conf.nnodes; i++) {
		struct mm_node *n = &mm->nodes[i];
		if (n->state != STORM__CTL__NODE_STATE__UP)
			continue;
		uint64_t missed_us = mm->elapsed_us - n->heard_us;
		/* counted in slices stepped: the MM steps at most one a slice, so
		 * a late MM only stretches the bound and a late node is never DOWN
		 * before down_after_ms; in their lengths, whatever rows ran */
		if (missed_us > (uint64_t)conf_down_slices(&mm->conf) * mm->conf.timeslice_us) {
			char why[128];
			snprintf(why, sizeof(why), "no report for %llu timeslices (%.1f s)",
				 (unsigned long long)(missed_us / mm->conf.timeslice_us),
				 clock_wall_s() - n->heard_time);
			mark_node(mm, i, STORM__CTL__NODE_STATE__DOWN, why);
			/* whether it or the fabric fell silent: the cause is
			 * otherwise in neither side's log */
			char fabric[600], tcp[1000];
			sn_peer_describe(mm->sn, fabric_id((uint32_t)i), fabric, sizeof(fabric));
			slog("node %s: report %llu last consumed; the fabric to it: %s",
			     mm->conf.nodes[i], (unsigned long long)n->report_seq, fabric);
			sn_peer_tcp_describe(mm->sn, fabric_id((uint32_t)i), tcp, sizeof(tcp));
			slog("node %s: the kernel's TCP to it: %s", mm->conf.nodes[i], tcp);
		}
	}
}
