/* The command ring's MM end: commands queued with their numbers, sent one
 * at a time into every UP node's ring slot, resent until every node has
 * taken them (layout.h's GM_CMD_SLOT). Its nodes' progress comes back in
 * their reports (report intake, report.c): a node that reports a command
 * missing long after it was sent gets it again. */
#include "mm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A node that missed a command: out of the multicasts until it holds the
 * last one sent; what it lacks after upto (sent or resent just now) it gets
 * on its own as its reports come (cmd_on_report). */
static void mark_lagging(struct mm_node *n, uint32_t upto)
{
	if (n->cmd_lagging)
		return;
	n->cmd_lagging = true;
	n->cmd_resent_upto = upto;
	n->cmd_resent_ns = clock_mono_ns();
}

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
	cmd->epoch = mm->epoch;
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

static void cmd_read_answer(struct mm *mm, uint64_t upto, uint64_t slice,
			    const struct sn_caw_result *res)
{
	(void)slice;
	mm->cmd_read_pending = false;
	if (res->status != 1)
		return; /* asked again: the next slice that needs it, or liveness round */
	/* every node asked holds upto; a node that went DOWN meanwhile was
	 * not UP when asked, or answered before it went */
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP && mm->nodes[i].cmd_done < upto &&
		    sn_set_has(&mm->cmd_read_set, fabric_id((uint32_t)i)))
			mm->nodes[i].cmd_done = (uint32_t)upto;
	cmd_pump(mm);
}

void cmd_read_done(struct mm *mm, uint32_t upto)
{
	if (!mm->conf.job_end_combined || mm->cmd_read_pending || upto == 0)
		return;
	sn_set_clear(&mm->cmd_read_set);
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP && mm->nodes[i].cmd_done < upto)
			sn_set_add(&mm->cmd_read_set, fabric_id((uint32_t)i));
	if (sn_set_empty(&mm->cmd_read_set))
		return;
	mm->cmd_read_slice = mm->slice;
	if (mm_query(mm, &mm->cmd_read_set, GM_VAR_CMD_DONE, SN_GE, upto, cmd_read_answer, upto,
		     mm->slice) == 0)
		mm->cmd_read_pending = true;
}

void cmd_pump(struct mm *mm)
{
	if (mm->cmd_inflight || !mm->cmd_queue)
		return;
	uint32_t seq = mm->cmd_seq + 1;
	if (min_cmd_done(mm) < GM_CMD_REUSE_DONE(seq)) {
		/* a slow node has yet to take the slot's command, or (with
		 * job_end_combined) has not said so: its count is read, once
		 * a slice at most */
		if (mm->cmd_read_slice != mm->slice)
			cmd_read_done(mm, GM_CMD_REUSE_DONE(seq));
		return;
	}
	struct pending_cmd *p = mm->cmd_queue;
	mm->cmd_queue = p->next;
	if (!mm->cmd_queue)
		mm->cmd_tail = &mm->cmd_queue;
	/* the slot's old command: every UP node took it (min_cmd_done) */
	struct sent_cmd *c = &mm->cmd_ring[seq % GM_CMD_SLOTS];
	free(c->buf);
	*c = (struct sent_cmd){.seq = seq, .buf = p->buf, .len = p->len, .sent_ns = clock_mono_ns()};
	free(p);

	/* test hook: the command never reaches the cluster's last node, as
	 * when its sends and their resend failed while it was cut off */
	if (fault_hit(&mm->fault, "cmd_lost", seq)) {
		slog("test hook: command %u left out for %s", seq,
		     mm->conf.nodes[mm->conf.nnodes - 1]);
		mark_lagging(&mm->nodes[mm->conf.nnodes - 1], seq - 1);
	}
	sn_set_clear(&mm->cmd_set);
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__UP && !mm->nodes[i].cmd_lagging)
			sn_set_add(&mm->cmd_set, fabric_id((uint32_t)i));
	mm->cmd_seq = seq;
	mm->cmd_reached_all = false;
	/* a node that is DOWN may only be slow or cut off: it gets each
	 * command on its own (best effort, outside the tree, which it must not
	 * cut), so that when it returns its ring is not missing one; but not
	 * over a command it has yet to take (it skips what was overwritten
	 * instead) */
	struct sn_nodeset one;
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (mm->nodes[i].state == STORM__CTL__NODE_STATE__DOWN &&
		    mm->nodes[i].cmd_done >= GM_CMD_REUSE_DONE(seq)) {
			sn_set_clear(&one);
			sn_set_add(&one, fabric_id((uint32_t)i));
			sn_xfer(mm->sn, &one, GM_CMD_SLOT(seq), c->buf, c->len, SN_NO_EVENT, EV_CMD,
				0);
		}
	if (sn_set_count(&mm->cmd_set) == 0)
		return; /* nobody to tell; nodes adopt cmd_seq from the strobe */
	int rc = sn_xfer(mm->sn, &mm->cmd_set, GM_CMD_SLOT(seq), c->buf, c->len, EV_CMD_SENT,
			 EV_CMD, 0);
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
	int rc = sn_event_take(mm->sn, EV_CMD_SENT, &failed);
	if (rc == 0)
		return;
	mm->cmd_inflight = false;
	mm->cmd_reached_all = rc > 0 && sn_set_count(&mm->cmd_set) == (uint32_t)mm->conf.nnodes;
	if (rc < 0) {
		/* a dead node inside the tree cuts its subtree off: send again to
		 * each node that did not confirm, on its own */
		char list[256];
		sn_set_format(&failed, list, sizeof(list));
		slog("command %u did not reach fabric nodes %s; resending to each", mm->cmd_seq,
		       list);
		const struct sent_cmd *c = &mm->cmd_ring[mm->cmd_seq % GM_CMD_SLOTS];
		struct sn_nodeset one;
		for (uint32_t f = sn_set_next(&failed, 0); f != UINT32_MAX;
		     f = sn_set_next(&failed, f + 1)) {
			sn_set_clear(&one);
			sn_set_add(&one, f);
			sn_xfer(mm->sn, &one, GM_CMD_SLOT(mm->cmd_seq), c->buf, c->len, SN_NO_EVENT,
				EV_CMD, 0);
			if (f != MM_FABRIC_ID && f <= (uint32_t)mm->conf.nnodes)
				mark_lagging(&mm->nodes[f - 1], mm->cmd_seq); /* resent just now */
		}
	}
	cmd_pump(mm);
}

/* A lagging node (cmd_lagging) was cut off while it stayed UP (its link
 * down for less than down_after_ms): the sends of a command to it failed,
 * resend included, after the operation timeout. Its reports say what it
 * holds once it hears us again: every command of the ring it lacks goes to
 * it on its own, in order (the ones sent since the last report's, and all
 * of them again once per operation timeout), until it holds the last one
 * sent; then it is back in the multicasts. The ring waits for it meanwhile
 * (min_cmd_done), so none of its slots is reused. */
void cmd_on_report(struct mm *mm, int idx)
{
	struct mm_node *n = &mm->nodes[idx];
	if (!n->cmd_lagging)
		return;
	if (n->state != STORM__CTL__NODE_STATE__UP || n->cmd_done >= mm->cmd_seq) {
		if (n->state == STORM__CTL__NODE_STATE__UP)
			slog("node %s holds every command again (%u)", mm->conf.nodes[idx],
			     n->cmd_done);
		n->cmd_lagging = false;
		return;
	}
	uint64_t now = clock_mono_ns(), timeout = (uint64_t)mm->conf.op_timeout_ms * 1000000ull;
	bool again = now - n->cmd_resent_ns >= timeout;
	uint32_t from = n->cmd_done + 1;
	if (!again && n->cmd_resent_upto >= from)
		from = n->cmd_resent_upto + 1;
	if (from > mm->cmd_seq)
		return; /* all sent to it since; its next reports will say */
	if (mm->cmd_seq - from >= GM_CMD_SLOTS)
		from = mm->cmd_seq - GM_CMD_SLOTS + 1; /* the older ones were taken */
	struct sn_nodeset one;
	sn_set_clear(&one);
	sn_set_add(&one, fabric_id((uint32_t)idx));
	uint32_t last = 0;
	for (uint32_t q = from; q <= mm->cmd_seq; q++) {
		const struct sent_cmd *c = &mm->cmd_ring[q % GM_CMD_SLOTS];
		if (c->seq != q || !c->buf ||
		    sn_xfer(mm->sn, &one, GM_CMD_SLOT(q), c->buf, c->len, SN_NO_EVENT, EV_CMD, 0) < 0)
			break;
		last = q;
	}
	if (!last)
		return;
	if (again)
		n->cmd_resent_ns = now;
	n->cmd_resent_upto = last;
	slog("node %s lacks commands %u..%u: sent to it on its own", mm->conf.nodes[idx], from,
	     last);
}
