/* The timeslice: strobes, membership, the command ring and node reports. */
#include "mm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A node not heard from for this many slices gets its strobe on its own,
 * not inside the tree, so a dead node cannot starve a subtree of strobes
 * before it is declared DOWN. */
static unsigned suspect_after(const struct mm *mm)
{
	unsigned s = mm->conf.down_after / 8;
	return s < 3 ? 3 : s;
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
	if (st == STORM__CTL__NODE_STATE__DOWN) {
		/* ids first: ending a job may forget ended ones from the list */
		uint64_t ids[STORM_MAX_MPL * 4];
		int n_ids = 0;
		for (struct job *j = mm->jobs; j && n_ids < (int)(sizeof(ids) / sizeof(ids[0]));
		     j = j->next)
			if (job_runs_on(mm, j->id, idx))
				ids[n_ids++] = j->id;
		for (int k = 0; k < n_ids; k++) {
			struct job *j = job_find(mm, ids[k]);
			if (j)
				job_node_lost(mm, j, idx);
		}
	}
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

static void send_strobe(struct mm *mm)
{
	struct strobe *s = (struct strobe *)mm->strobe_buf;
	int nn = mm->conf.nnodes;
	s->slice = mm->slice;
	s->cmd_seq = mm->cmd_seq;
	s->nnodes = (uint32_t)nn;
	s->flags = 0;
	s->epoch = mm->epoch;
	gang_fill_strobe(mm, s);
	for (int i = 0; i < nn; i++)
		s->ack[i] = mm->nodes[i].report_seq;
	/* the tag covers the whole strobe: fill everything first */
	gm_mac(mm->key, GM_MAC_STROBE, GM_MAC_ANY_NODE, s, strobe_signed_size((uint32_t)nn),
	       mm->strobe_buf + strobe_signed_size((uint32_t)nn));
	size_t size = strobe_size((uint32_t)nn);
	if (fault_hit(&mm->fault, "strobe", mm->slice)) {
		/* what a forger would send: the nodes must refuse it and go on */
		slog("test hook: strobe %llu goes out altered", (unsigned long long)mm->slice);
		s->row ^= 0x40;
	}
	struct sn_nodeset tree, single;
	sn_set_clear(&tree);
	for (int i = 0; i < nn; i++) {
		struct mm_node *n = &mm->nodes[i];
		bool fresh = n->state == STORM__CTL__NODE_STATE__UP &&
			     mm->slice - n->heard_slice <= suspect_after(mm);
		if (fresh) {
			sn_set_add(&tree, fabric_id((uint32_t)i));
		} else if (n->state == STORM__CTL__NODE_STATE__UP ||
			   (mm->probe_fd < 0 && mm->slice % 4 == 0)) {
			/* suspects every slice, the rest as a probe every fourth
			 * slice, or every PROBE_US from probe_tick when slices are
			 * long (else an 8 s slice kept a starting node waiting 32 s) */
			sn_set_clear(&single);
			sn_set_add(&single, fabric_id((uint32_t)i));
			sn_xfer(mm->sn, &single, GM_STROBE, s, size, SN_NO_EVENT, EV_STROBE,
				SN_XFER_SYS);
		}
	}
	if (sn_set_count(&tree) == 0)
		return;
	if (mm->trace)
		fprintf(mm->trace, "strobe %llu %llu %d %.0f\n", (unsigned long long)mm->slice,
			(unsigned long long)mm->switches, mm->row, (double)clock_mono_ns());
	int rc = sn_xfer(mm->sn, &tree, GM_STROBE, s, size, SN_NO_EVENT, EV_STROBE, SN_XFER_SYS);
	if (rc < 0)
		slog("strobe %llu: %s", (unsigned long long)mm->slice, sn_strerror(mm->sn));
}

void probe_tick(struct mm *mm)
{
	status_waiters_answer(mm); /* their deadlines, between long slices */
	if (mm->slice == 0)
		return; /* no strobe yet to probe with */
	struct sn_nodeset single;
	size_t size = strobe_size((uint32_t)mm->conf.nnodes);
	for (int i = 0; i < mm->conf.nnodes; i++) {
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP)
			continue;
		/* the last strobe again: a node that already has it ignores it */
		sn_set_clear(&single);
		sn_set_add(&single, fabric_id((uint32_t)i));
		sn_xfer(mm->sn, &single, GM_STROBE, mm->strobe_buf, size, SN_NO_EVENT, EV_STROBE,
			SN_XFER_SYS);
	}
}

static void check_membership(struct mm *mm)
{
	for (int i = 0; i < mm->conf.nnodes; i++) {
		struct mm_node *n = &mm->nodes[i];
		if (n->state != STORM__CTL__NODE_STATE__UP)
			continue;
		uint64_t missed = mm->slice - n->heard_slice;
		if (missed > mm->conf.down_after) {
			char why[128];
			snprintf(why, sizeof(why), "no report for %llu timeslices (%.1f s)",
				 (unsigned long long)missed, clock_wall_s() - n->heard_time);
			mark_node(mm, i, STORM__CTL__NODE_STATE__DOWN, why);
		}
	}
}

void slice_tick(struct mm *mm)
{
	mm->slice++;
	mm->slice_start = clock_wall_s();
	check_membership(mm);
	persist_tick(mm);
	gang_tick(mm);
	ckpt_tick(mm);
	send_strobe(mm);
	clients_tick(mm);
	/* no scheduling pass here: what can let a job start (a submission, a
	 * job's end, a node UP, a transfer done) runs jobs_schedule itself */
}

/* ---- reports */

static void consume_report(struct mm *mm, int idx)
{
	struct mm_node *n = &mm->nodes[idx];
	uint8_t *slot = (uint8_t *)sn_gmem(mm->sn) + GM_REPORT_SLOT(idx);
	uint32_t len;
	memcpy(&len, slot, 4);
	if (len == 0)
		return; /* nothing new: every slot is looked at on any EV_REPORT */
	/* emptied at once, so the slot is decoded once per report that lands */
	memset(slot, 0, 4);
	if (len > GM_REPORT_SLOT_SIZE - 4 - GM_TAG_LEN) {
		slog_limited(&mm->rl_report, "node %s: report length %u exceeds its slot; ignored",
			       mm->conf.nodes[idx], len);
		return;
	}
	uint8_t *tag = slot + 4 + len;
	memcpy(slot, &len, 4); /* the tag covers the length word as sent */
	bool genuine = gm_mac_ok(mm->key, GM_MAC_REPORT, (uint32_t)idx, slot, 4 + len, tag);
	memset(slot, 0, 4);
	if (!genuine) {
		/* forged or altered: the node resends a report that is not
		 * acknowledged, so a genuine one overwritten here is not lost */
		slog_limited(&mm->rl_report,
			       "node %s: report slot holds %u bytes with a bad tag (forged or "
			       "altered); ignored", mm->conf.nodes[idx], len);
		return;
	}
	const char *why;
	Storm__Cl__Report *r = mm_report_decode(slot, len, &why);
	if (!r) {
		slog("node %s: %s (%u bytes); ignored", mm->conf.nodes[idx], why, len);
		return;
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
		return;
	}
	n->report_seq = r->seq;
	/* a report sent before the node saw this MM's strobes (a restart):
	 * its records count, but its command and file numbers are the old
	 * MM's, so the node is UP only once it reports under this epoch */
	bool current = r->epoch == mm->epoch;
	if (current) {
		n->heard_slice = mm->slice;
		n->heard_time = clock_wall_s();
		n->cmd_done = r->cmd_done;
		if (n->state != STORM__CTL__NODE_STATE__UP)
			mark_node(mm, idx, STORM__CTL__NODE_STATE__UP, NULL);
	}
	/* the node orders its records so that output precedes the exit of its
	 * rank and exits precede the DONE note (layout.h) */
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
		persist_node_report(mm, idx, r);
	storm__cl__report__free_unpacked(r, NULL);
	/* what the report changed is on disk before the node may forget it:
	 * a node drops its records once their report is acknowledged */
	persist_flush(mm);
	/* acknowledge now rather than in the next strobe: a node with more
	 * output or a job's end to report sends at once */
	struct sn_nodeset one;
	sn_set_clear(&one);
	sn_set_add(&one, fabric_id((uint32_t)idx));
	uint8_t ack[GM_REPORT_ACK_SIZE];
	memcpy(ack, &n->report_seq, 8);
	gm_mac(mm->key, GM_MAC_ACK, (uint32_t)idx, ack, 8, ack + 8);
	sn_xfer(mm->sn, &one, GM_VAR_REPORT_ACK, ack, sizeof(ack), SN_NO_EVENT, EV_REPORT_ACK, 0);
}

void slice_on_report_event(struct mm *mm)
{
	for (int i = 0; i < mm->conf.nnodes; i++)
		consume_report(mm, i);
}

/* ---- the command ring */

int cmd_queue(struct mm *mm, Storm__Cl__Command *cmd, const int *targets, size_t ntargets)
{
	/* no targets: every node (nodes act only on commands that name them) */
	size_t n = targets ? ntargets : (size_t)mm->conf.nnodes;
	uint32_t *nodes = malloc(sizeof(uint32_t) * (n ? n : 1));
	if (!nodes)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		nodes[i] = targets ? (uint32_t)targets[i] : (uint32_t)i;
	cmd->nodes = nodes;
	cmd->n_nodes = n;
	/* commands leave in queue order, so the sequence is known now */
	cmd->seq = mm->cmd_queued_seq + 1;
	size_t len = 4 + storm__cl__command__get_packed_size(cmd) + GM_TAG_LEN;
	struct pending_cmd *p = calloc(1, sizeof(*p));
	uint8_t *buf = malloc(len);
	if (!p || !buf || len > GM_CMD_SLOT_SIZE) {
		free(p);
		free(buf);
		free(nodes);
		cmd->nodes = NULL;
		cmd->n_nodes = 0;
		return len > GM_CMD_SLOT_SIZE ? -E2BIG : -ENOMEM;
	}
	uint32_t plen = (uint32_t)storm__cl__command__pack(cmd, buf + 4);
	memcpy(buf, &plen, 4); /* [u32 len][packed][tag], as the ring slot holds it */
	gm_mac(mm->key, GM_MAC_CMD, GM_MAC_ANY_NODE, buf, 4 + plen, buf + 4 + plen);
	p->buf = buf;
	p->len = len;
	mm->cmd_queued_seq++;
	free(nodes);
	cmd->nodes = NULL;
	cmd->n_nodes = 0;
	*mm->cmd_tail = p;
	mm->cmd_tail = &p->next;
	cmd_pump(mm);
	return 0;
}

static uint32_t min_cmd_done(const struct mm *mm)
{
	uint32_t m = mm->cmd_seq;
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP && mm->nodes[i].cmd_done < m)
			m = mm->nodes[i].cmd_done;
	return m;
}

void cmd_pump(struct mm *mm)
{
	if (mm->cmd_inflight || !mm->cmd_queue)
		return;
	uint32_t seq = mm->cmd_seq + 1;
	if (seq > GM_CMD_SLOTS && min_cmd_done(mm) < seq - GM_CMD_SLOTS)
		return; /* a slow node still has the slot to read */
	struct pending_cmd *p = mm->cmd_queue;
	mm->cmd_queue = p->next;
	if (!mm->cmd_queue)
		mm->cmd_tail = &mm->cmd_queue;
	free(mm->cmd_buf); /* the previous one is confirmed: no resend needs it */
	mm->cmd_buf = p->buf;
	mm->cmd_len = p->len;
	free(p);

	sn_set_clear(&mm->cmd_set);
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP)
			sn_set_add(&mm->cmd_set, fabric_id((uint32_t)i));
	mm->cmd_seq = seq;
	/* a node that is DOWN may only be slow or cut off: it gets each
	 * command on its own (best effort, outside the tree, which it must not
	 * cut), so that when it returns its ring is not missing one */
	struct sn_nodeset one;
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__DOWN) {
			sn_set_clear(&one);
			sn_set_add(&one, fabric_id((uint32_t)i));
			sn_xfer(mm->sn, &one, GM_CMD_SLOT(seq), mm->cmd_buf, mm->cmd_len, SN_NO_EVENT,
				EV_CMD, 0);
		}
	if (sn_set_count(&mm->cmd_set) == 0)
		return; /* nobody to tell; nodes adopt cmd_seq from the strobe */
	int rc = sn_xfer(mm->sn, &mm->cmd_set, GM_CMD_SLOT(seq), mm->cmd_buf, mm->cmd_len,
			 EV_CMD_SENT, EV_CMD, 0);
	if (rc < 0) {
		slog("command %u: %s", seq, sn_strerror(mm->sn));
		return;
	}
	mm->cmd_inflight = true;
}

void cmd_on_sent_event(struct mm *mm)
{
	if (!mm->cmd_inflight)
		return;
	struct sn_nodeset failed;
	int rc = sn_test_event(mm->sn, EV_CMD_SENT, 0, &failed);
	if (rc == 0)
		return;
	mm->cmd_inflight = false;
	if (rc < 0) {
		/* a dead node inside the tree cuts its subtree off: send again to
		 * each node that did not confirm, on its own */
		char list[256];
		sn_set_format(&failed, list, sizeof(list));
		slog("command %u did not reach fabric nodes %s; resending to each", mm->cmd_seq,
		       list);
		struct sn_nodeset one;
		for (uint32_t f = sn_set_next(&failed, 0); f != UINT32_MAX;
		     f = sn_set_next(&failed, f + 1)) {
			sn_set_clear(&one);
			sn_set_add(&one, f);
			sn_xfer(mm->sn, &one, GM_CMD_SLOT(mm->cmd_seq), mm->cmd_buf, mm->cmd_len,
				SN_NO_EVENT, EV_CMD, 0);
		}
	}
	cmd_pump(mm);
}
