/* Report intake: each node's report slot in the MM's global memory, its
 * tag checked, decoded, its records handed to the jobs they are about,
 * stored and then acknowledged. */
#include "mm.h"

#include <stdio.h>
#include <string.h>

/* Test point drop_done_from=K: node K-1's reports that hold a DONE are
 * dropped, as if lost, until a read of that job's quiet ends has answered:
 * the node's DONE is out and not taken (the node resends it, unacknowledged,
 * strobes later) while the MM reads the done words. */
static bool done_dropped(struct mm *mm, int idx, const Storm__Cl__Report *r)
{
	if (!fault_armed(&mm->fault) || fault_value(&mm->fault, "drop_done_from") != (uint64_t)idx + 1)
		return false;
	for (size_t i = 0; i < r->n_notes; i++) {
		if (r->notes[i]->kind != STORM__CL__JOB_NOTE__KIND__DONE)
			continue;
		struct job *j = job_find(mm, r->notes[i]->job);
		if (!j || j->quiet_answers)
			return false;
		slog("test hook: node %s's report with the DONE of job %llu dropped", mm->conf.nodes[idx],
		     (unsigned long long)j->id);
		return true;
	}
	return false;
}

/* whole: a report's records applied in the order the node wrote them, each a short loop.
 * True when one was consumed: its acknowledgement is due once what it
 * changed is on disk (report_on_event). */
static bool consume_report(struct mm *mm, int idx)
{
	struct mm_node *n = &mm->nodes[idx];
	uint8_t *slot = (uint8_t *)sn_gmem(mm->sn) + GM_REPORT_SLOT(idx);
	uint32_t len;
	memcpy(&len, slot, 4);
	if (len == 0)
		return false; /* nothing new: every slot is looked at on any EV_REPORT */
	uint64_t t_took = clock_mono_ns(); /* the node's clock exchange: t2 */
	/* emptied at once, so the slot is decoded once per report that lands */
	memset(slot, 0, 4);
	if (len > GM_REPORT_SLOT_SIZE - 4 - GM_TAG_LEN) {
		slog_limited(&mm->rl_report, "node %s: report length %u exceeds its slot; ignored",
			       mm->conf.nodes[idx], len);
		return false;
	}
	/* verified and decoded in a private copy (gm_copy) */
	uint8_t *copy = (uint8_t *)gm_copy(&mm->verify, slot, 4 + len + GM_TAG_LEN);
	if (!copy) {
		slog("node %s: no memory to check its report; ignored", mm->conf.nodes[idx]);
		return false;
	}
	memcpy(copy, &len, 4); /* the tag covers the length word as sent */
	if (!gm_mac_ok(mm->key, GM_MAC_REPORT, (uint32_t)idx, copy, 4 + len, copy + 4 + len)) {
		/* forged or altered: the node resends a report that is not
		 * acknowledged, so a genuine one overwritten here is not lost */
		slog_limited(&mm->rl_report,
			       "node %s: report slot holds %u bytes with a bad tag (forged or "
			       "altered); ignored", mm->conf.nodes[idx], len);
		return false;
	}
	const char *why;
	Storm__Cl__Report *r = mm_report_decode(copy, len, &why);
	if (!r) {
		slog("node %s: %s (%u bytes); ignored", mm->conf.nodes[idx], why, len);
		return false;
	}
	if (r->seq <= n->report_seq) {
		/* a resend of one already consumed (a node resends an unacknowledged
		 * report), or a replay: either way not consumed twice */
		if (r->seq + 1 < n->report_seq)
			slog_limited(&mm->rl_report,
				       "node %s: report %llu is older than the last consumed (%llu): "
				       "replayed; ignored", mm->conf.nodes[idx],
				       (unsigned long long)r->seq, (unsigned long long)n->report_seq);
		storm__cl__report__free_unpacked(r, NULL);
		return false;
	}
	if (done_dropped(mm, idx, r)) {
		storm__cl__report__free_unpacked(r, NULL);
		return false;
	}
	n->report_seq = r->seq;
	n->ack_t1 = r->sent_ns;
	n->ack_t2 = t_took;
	node_incarnation(mm, idx, r->incarnation);
	metrics_on_report(mm, idx, r);
	for (size_t i = 0; i < r->n_traces; i++)
		trace_on_chunk(mm, idx, r->traces[i]);
	/* a report sent before the node saw this MM's strobes (a restart):
	 * its records count, but its command and file numbers are the old
	 * MM's, so the node is UP only once it reports under this epoch */
	bool current = r->epoch == mm->epoch;
	if (current) {
		n->heard_slice = mm->slice;
		n->heard_us = mm->elapsed_us;
		n->heard_time = clock_wall_s();
		n->cmd_done = r->cmd_done;
		if (n->state != STORM__CTL__NODE_STATE__UP)
			mark_node(mm, idx, STORM__CTL__NODE_STATE__UP, NULL);
		else
			cmd_on_report(mm, idx);
	}
	/* the node orders its records so that output precedes the exit of its
	 * rank and exits precede the DONE note (layout.h); a rank's recorded
	 * outcomes precede its exit too, so they are stored first */
	for (size_t i = 0; i < r->n_bcs; i++)
		if (trace_on_bcs(mm, idx, r->bcs[i]) && r->bcs[i]->checkpoint)
			ckpt_rec_mark(mm, r->bcs[i]);
	for (size_t i = 0; i < r->n_output; i++)
		job_on_output(mm, idx, r->output[i]);
	for (size_t i = 0; i < r->n_exits; i++)
		job_on_exit(mm, idx, r->exits[i]);
	for (size_t i = 0; i < r->n_notes; i++)
		job_on_note(mm, idx, r->notes[i]);
	for (size_t i = 0; i < r->n_running; i++)
		if (!job_runs_on(mm, r->running[i], idx))
			job_kill_stray(mm, r->running[i], idx);
	if (current)
		recover_node_report(mm, idx, r);
	storm__cl__report__free_unpacked(r, NULL);
	return true;
}

/* Now rather than in the next strobe: a node with more output or a job's
 * end to report sends at once. t1 and t2 (when the node sent the report,
 * when this MM took it) and t3 are its clock exchange. */
static void acknowledge(struct mm *mm, int idx)
{
	struct mm_node *n = &mm->nodes[idx];
	struct sn_nodeset one;
	sn_set_clear(&one);
	sn_set_add(&one, fabric_id((uint32_t)idx));
	uint8_t ack[GM_REPORT_ACK_SIZE];
	struct report_ack a = { .seq = n->report_seq, .t1 = n->ack_t1, .t2 = n->ack_t2,
				.t3 = clock_mono_ns() };
	memcpy(ack, &a, sizeof(a));
	gm_mac(mm->key, GM_MAC_ACK, (uint32_t)idx, ack, sizeof(a), ack + sizeof(a));
	sn_xfer(mm->sn, &one, GM_VAR_REPORT_ACK, ack, sizeof(ack), SN_NO_EVENT, EV_REPORT_ACK, 0);
}

/* Every slot that holds a report, then what they changed on disk, then
 * their acknowledgements: a node drops its records once their report is
 * acknowledged, so none goes out before the commit. One commit for all the
 * reports this turn of the loop found, not one per report: each writes a
 * job's whole row (its per-node and per-rank arrays), and a job's end
 * brings a report from every node of it at once. */
void report_on_event(struct mm *mm)
{
	int n = mm->conf.nnodes, k = 0;
	mm->acks_due = true;
	for (int i = 0; i < n; i++)
		if ((mm->nodes[i].ack_due = consume_report(mm, i)))
			k++;
	mm->acks_due = false;
	if (!k) {
		jobs_check_due(mm);
		return;
	}
	persist_flush(mm);
	for (int i = 0; i < n; i++)
		if (mm->nodes[i].ack_due) {
			mm->nodes[i].ack_due = false;
			acknowledge(mm, i);
		}
	jobs_check_due(mm);
}
