/* The node's end of the timeslice, mirroring the MM's slice.c and cmd.c:
 * each strobe checked (tag, epoch, order), then the command ring read
 * (commands for this node acted on in order, those of a restarted MM or
 * never sent skipped), then the gang switch, BCS-MPI's turn and the report. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "nd.h"

static bool slot_holds(struct nd *nd, uint32_t seq);

/* If the ring slot holds a command the MM tagged: a private copy of it,
 * verified there and to be decoded from there (gm_copy); else NULL. Its
 * length in *len. */
static const uint8_t *slot_genuine(struct nd *nd, const uint8_t *slot, uint32_t *len)
{
	memcpy(len, slot, 4);
	if (*len == 0 || *len > GM_CMD_SLOT_SIZE - 4 - GM_TAG_LEN)
		return NULL;
	uint8_t *c = (uint8_t *)gm_copy(&nd->verify, slot, 4 + *len + GM_TAG_LEN);
	if (!c)
		return NULL;
	memcpy(c, len, 4);
	return gm_mac_ok(nd->key, GM_MAC_CMD, GM_MAC_ANY_NODE, c, 4 + *len, c + 4 + *len) ? c
											      : NULL;
}

static void act(struct nd *nd, const Storm__Cl__Command *cmd)
{
	size_t k;
	for (k = 0; k < cmd->n_nodes; k++)
		if (cmd->nodes[k] == nd->index)
			break;
	if (k == cmd->n_nodes)
		return; /* not addressed to this node */
	switch (cmd->body_case) {
	case STORM__CL__COMMAND__BODY_LAUNCH:
		nd_launch(nd, cmd, k);
		break;
	case STORM__CL__COMMAND__BODY_SIGNAL:
		nd_signal_job(nd, cmd->signal);
		break;
	case STORM__CL__COMMAND__BODY_CHECKPOINT:
		nd_checkpoint(nd, cmd->checkpoint);
		break;
	case STORM__CL__COMMAND__BODY_STDIN:
		nd_stdin(nd, cmd->stdin);
		break;
	case STORM__CL__COMMAND__BODY_SHUTDOWN:
		slog("shutdown requested by the MM");
		nd->stop = true;
		break;
	default:
		slog("command %u has no body; ignored", cmd->seq);
	}
}

/* Acts on the ring's commands in sequence order, as far as they arrived.
 * True when it stopped at a slot with a bad tag (forged or altered). */
bool nd_on_commands(struct nd *nd)
{
	while (nd->seen_strobe && !nd->stop) {
		uint32_t want = nd->cmd_done + 1;
		uint8_t *slot = nd->gmem + GM_CMD_SLOT(want);
		uint32_t len;
		memcpy(&len, slot, 4);
		if (len == 0)
			return false; /* never written, or cleared */
		const uint8_t *copy = slot_genuine(nd, slot, &len);
		if (!copy) {
			/* forged or altered: never acted on, never skipped over
			 * (skipping would let a forger cancel commands); the MM's
			 * genuine command overwrites it */
			if (nd->cmd_refused_seq != want)
				nd_log_refused(nd, "command slot for %u: %u bytes with a bad tag "
						   "(forged or altered); refused", want, len);
			nd->cmd_refused_seq = want;
			return true;
		}
		Storm__Cl__Command *cmd = nd_command_decode(copy, &len);
		if (cmd && cmd->epoch != nd->mm_epoch) {
			/* a dead MM's, landed late: not the command this MM numbers
			 * so; cleared, so the genuine one (or a skip) can come */
			slog("command slot for %u holds command %u of an earlier machine "
			     "manager; cleared", want, cmd->seq);
			storm__cl__command__free_unpacked(cmd, NULL);
			memset(slot, 0, 4);
			return false;
		}
		if (!cmd) {
			/* cleared: left, it would be skipped again as the next
			 * command of its slot */
			slog("command slot for %u is malformed (length %u); skipped", want,
			       len);
			memset(slot, 0, 4);
		} else if (cmd->seq > want && cmd->seq - want < GM_CMD_SLOTS * 1024u) {
			/* the slot was reused: commands want..seq-1 were overwritten
			 * before we looked (we were stopped or cut off); they are lost
			 * to us, and waiting for them would stall the ring for good */
			slog("commands %u..%u were overwritten before this node read them; "
				   "skipping to %u", want, cmd->seq - 1, cmd->seq);
			nd->cmd_done = cmd->seq - 1;
			storm__cl__command__free_unpacked(cmd, NULL);
			continue;
		} else if (cmd->seq != want) {
			/* the slot's previous use (or a replay of it): want has
			 * not arrived yet */
			storm__cl__command__free_unpacked(cmd, NULL);
			return false;
		} else {
			act(nd, cmd);
			storm__cl__command__free_unpacked(cmd, NULL);
		}
		/* the slot keeps the command: a relay forwards a command down
		 * the tree with the bytes its slot holds when the header comes,
		 * which may be after the node took it, even after it took the
		 * next (the resend of a command that missed a subtree goes to
		 * each node apart from the tree); its sequence number, not an
		 * empty slot, says a slot's command is old */
		nd->cmd_done = want;
	}
	return false;
}

/* How many operation timeouts a command the strobes announced may take to
 * arrive: its send, the MM's resend to each node that missed it, and its
 * sending again what the node's report says it lacks. */
#define CMD_LOST_TIMEOUTS 3

/* Called after nd_on_commands took what arrived: command cmd_done+1 is not
 * in its slot (forged: the slot holds one with a bad tag). Commands
 * cmd_done+1..last_sent missing from the ring while a later one is there
 * were never sent to this node (it was not UP for the MM: the MM sends the
 * next command once every UP node holds the last). After a DOWN spell
 * (rejoined) none of the missing ones will come, even with no later one
 * here. Either way: continue at the first that did arrive, else after
 * last_sent. Missing (or forged over) for longer than a send and its resend
 * can take, they were lost (sent while this node was cut off): continue
 * after last_sent. */
static void skip_unsent_commands(struct nd *nd, uint32_t last_sent, bool rejoined, bool forged)
{
	uint32_t want = nd->cmd_done + 1;
	if (want > last_sent)
		return;
	/* a slot with a bad tag is waited out, not skipped at once for a later
	 * command (a forger must not cancel commands) */
	forged = forged && !rejoined;
	uint32_t from = last_sent - want >= GM_CMD_SLOTS ? last_sent - GM_CMD_SLOTS + 1 : want;
	uint32_t resume = rejoined ? last_sent + 1 : 0;
	for (uint32_t q = from; q <= last_sent && !forged; q++)
		if (slot_holds(nd, q)) {
			resume = q;
			break;
		}
	if (!resume) {
		/* on its way, unless the MM sent it while this node was cut
		 * off: a send not through within the operation timeout is
		 * dropped, and the MM sends a node that missed one every
		 * command it lacks, in order, as its reports come (mm/cmd.c).
		 * Missing for longer, it is lost, and the MM, which reuses a
		 * slot only once every UP node took its command, would wait
		 * for this node for good */
		uint64_t now = clock_mono_ns();
		if (nd->cmd_gap_want != want) {
			nd->cmd_gap_want = want;
			nd->cmd_gap_ns = now;
		}
		if (now - nd->cmd_gap_ns < CMD_LOST_TIMEOUTS * nd->conf.op_timeout_ms * 1000000ull)
			return;
		slog("commands %u..%u, announced %.1f s ago, never reached this node; continuing "
		     "after them", want, last_sent, (double)(now - nd->cmd_gap_ns) / 1e9);
		nd->cmd_done = last_sent;
		nd_on_commands(nd);
		return;
	}
	if (rejoined)
		slog("back after missing more than %u strobes; commands %u..%u never "
			   "reached this node, continuing after them",
		       conf_down_slices(&nd->conf), want, resume - 1);
	else
		slog("commands %u..%u were not sent to this node (it was not UP for the "
			   "MM); continuing at %u", want, resume - 1, resume);
	nd->cmd_done = resume - 1;
	nd_on_commands(nd);
}

/* Does the ring slot of seq hold command seq, tagged by this epoch's MM? */
static bool slot_holds(struct nd *nd, uint32_t seq)
{
	uint32_t len;
	const uint8_t *copy = slot_genuine(nd, nd->gmem + GM_CMD_SLOT(seq), &len);
	if (!copy)
		return false;
	Storm__Cl__Command *cmd = nd_command_decode(copy, &len);
	bool holds = cmd && cmd->seq == seq && cmd->epoch == nd->mm_epoch;
	if (cmd)
		storm__cl__command__free_unpacked(cmd, NULL);
	return holds;
}

/* The MM restarted (its strobes carry a new epoch): its command numbers,
 * file chunk numbers and slices start over. What the old one left in the
 * ring is dropped; the jobs, their ranks and the queued records stay, and
 * the reports continue (the MM takes any sequence above what it acked). */
static void mm_restarted(struct nd *nd, const struct strobe *s)
{
	slog("the machine manager restarted (new epoch at its slice %" PRIu64
		   "); commands from %u", s->slice, s->cmd_seq + 1);
	for (uint32_t q = 0; q < GM_CMD_SLOTS; q++)
		memset(nd->gmem + GM_CMD_SLOT(q), 0, 4);
	nd->cmd_done = s->cmd_seq;
	nd->cmd_gap_want = 0;
	nd->slice = 0;
	nd_files_close(nd);
	for (int b = 0; b < 2; b++) {
		nd->file_seq[b] = 0;
		sn_var_store(nd->sn, GM_VAR_FILE_DONE(b), 0);
	}
}

/* The strobe area copied (gm_copy), parsed and its tag checked: 0, or -1
 * with the log line's words in *why. */
static int strobe_copy(struct nd *nd, unsigned area, struct strobe *s, uint64_t *ack,
		       uint64_t *run, struct strobe_slot *slots, uint64_t *run_ahead,
		       const char **why)
{
	/* read and verified in a private copy of the most a strobe for this
	 * cluster's size can hold, not the whole area: the copy is made every
	 * slice */
	size_t len = nd->strobe_len;
	const uint8_t *raw = gm_copy(&nd->verify, nd->gmem + GM_STROBE_AT(area), len);
	if (!raw) {
		*why = NULL;
		return -1;
	}
	if (nd_strobe_read(raw, len, nd->index, s, ack, run, slots, run_ahead) < 0 ||
	    s->nnodes != (uint32_t)nd->conf.nnodes) {
		*why = "claims other nodes or slices ahead than the cluster's, or its slots go back";
		return -1;
	}
	size_t signed_size = strobe_signed_size(s->nnodes, strobe_ahead(s));
	if (!gm_mac_ok(nd->key, GM_MAC_STROBE, GM_MAC_ANY_NODE, raw, signed_size,
		       raw + signed_size)) {
		*why = "has a bad tag (forged or altered)";
		return -1;
	}
	return 0;
}

/* The strobe in an area read and checked: its size for this cluster,
 * its tag, its epoch and slice against the last one's (an MM restart is
 * taken here). true: one to act on, in *s and the rest. */
static bool strobe_accept(struct nd *nd, unsigned area, struct strobe *s, uint64_t *ack,
			  uint64_t *run, struct strobe_slot *slots, uint64_t *run_ahead,
			  bool *bad_tag)
{
	*bad_tag = false;
	const char *why;
	if (strobe_copy(nd, area, s, ack, run, slots, run_ahead, &why) < 0) {
		/* An area is written again two slices later: a daemon that
		 * reads that late (a loaded machine) can copy it while the
		 * strobe after next lands, half of each, and its tag fails.
		 * That one is whole by now, and taken if its own tag holds
		 * (nothing unverified is ever acted on); what still fails is
		 * refused. */
		if (why && strobe_copy(nd, area, s, ack, run, slots, run_ahead, &why) == 0) {
			nd->torn_strobes++;
		} else {
			if (!why)
				slog("no memory to check a strobe; ignored");
			else
				nd_log_refused(nd, "strobe %" PRIu64 " %s; refused", s->slice, why);
			*bad_tag = why != NULL;
			return false;
		}
	}
	/* strobes come down the tree or, to a late node, straight from the MM:
	 * an older one can land after a newer one, and its acknowledgements
	 * would look like the MM going back (then a report would be renumbered
	 * onto one already consumed, and lost) */
	if (nd->seen_strobe && s->epoch < nd->mm_epoch) {
		/* epochs only grow (db_next_epoch): an earlier MM's strobe */
		nd_log_refused(nd, "strobe %" PRIu64 " is from an earlier machine manager: "
				   "replayed; refused", s->slice);
		return false;
	}
	if (nd->seen_strobe && s->epoch != nd->mm_epoch)
		mm_restarted(nd, s);
	nd->mm_epoch = s->epoch;
	if (nd->seen_strobe && s->slice <= nd->slice) {
		nd->strobes_old++;
		/* the tree and a direct send can reorder by one or two slices;
		 * anything older is a replay */
		if (s->slice + 8 < nd->slice)
			nd_log_refused(nd, "strobe %" PRIu64 " is older than the last one (%" PRIu64
					   "): replayed; refused", s->slice, nd->slice);
		return false;
	}
	return true;
}

/* test hook: this node is cut off from strobes for a while, and follows
 * the schedule it holds. true: strobe s is not heard. */
static bool strobe_deaf(struct nd *nd, const struct strobe *s)
{
	if (nd->deaf_until) {
		if (nd->deaf_until >= s->slice)
			return true;
		slog("test hook: hearing strobes again at %" PRIu64, s->slice);
		nd->deaf_until = 0;
	}
	/* a node on a loaded machine: it hears one strobe in K, the others
	 * overtaken by the next before it reads them */
	uint64_t every = fault_value(&nd->fault, "hear_every");
	if (every > 1 && s->slice % every)
		return true;
	if (fault_hit(&nd->fault, "deaf", s->slice)) {
		uint64_t n = fault_value(&nd->fault, "deaf_for");
		nd->deaf_until = s->slice + (n ? n : 1) - 1;
		slog("test hook: strobes %" PRIu64 "..%" PRIu64 " ignored", s->slice,
		     nd->deaf_until);
		return true;
	}
	return false;
}

/* The node's slice and clocks moved to strobe s, received at t_recv.
 * true: it ends a DOWN spell (the node rejoins). */
static bool strobe_advance(struct nd *nd, const struct strobe *s, uint64_t t_recv)
{
	/* a DOWN spell is a time: slices are shorter while a row asks for it.
	 * Timed on the MM's clock, between the slices' starts: strobes held
	 * for a node cut off arrive in a burst when its link returns, the
	 * last of them just before the current one (a wall clock: one that
	 * stepped back falls back to the arrival times) */
	uint64_t gap_ns = nd->strobe_mm_ns && s->sent_ns > nd->strobe_mm_ns
				  ? s->sent_ns - nd->strobe_mm_ns
				  : t_recv - nd->strobe_ns;
	bool rejoined = nd->slice && s->slice > nd->slice + conf_down_slices(&nd->conf) &&
			gap_ns >= (uint64_t)nd->conf.down_after_ms * 1000000;
	if (nd->slice && s->slice > nd->slice + 1)
		nd->missed_strobes += s->slice - nd->slice - 1;
	if (nd->strobe_drought) {
		slog("strobes again: slice %" PRIu64 ", %" PRIu64 " ms after slice %" PRIu64,
		     s->slice, (t_recv - nd->strobe_ns) / 1000000u, nd->slice);
		nd->strobe_drought = false;
	}
	nd->events_at_take = nd->strobe_events;
	nd->old_at_take = nd->strobes_old;
	nd->slice = s->slice;
	nd->strobe_ns = t_recv;
	nd->strobe_mm_ns = s->sent_ns;
	nd->slice_us = s->slice_us;
	return rejoined;
}

/* The strobe of an area acted on. false: it was not one to act on, and
 * *bad_tag says whether it failed its tag. */
static bool strobe_take(struct nd *nd, unsigned area, bool *bad_tag)
{
	struct strobe s;
	struct strobe_slot slots[STROBE_AHEAD_MAX + 1];
	uint64_t ack, run, run_ahead[STROBE_AHEAD_MAX];
	if (!strobe_accept(nd, area, &s, &ack, &run, slots, run_ahead, bad_tag))
		return false;
	if (strobe_deaf(nd, &s))
		return true;
	if (!nd->seen_strobe) {
		nd->seen_strobe = true;
		/* earlier commands went out before this node was up */
		if (nd->cmd_done == 0)
			nd->cmd_done = s.cmd_seq;
		slog("first strobe: slice %" PRIu64 ", commands from %u", s.slice,
		       nd->cmd_done + 1);
	}
	uint64_t t_recv = clock_mono_ns();
	bool rejoined = strobe_advance(nd, &s, t_recv);
	/* what the MM's liveness COMPARE-AND-WRITE reads: this daemon acts on
	 * strobes, not only answers the network */
	sn_var_store(nd->sn, GM_VAR_ALIVE, s.slice);
	/* a command is taken on its own event; here only when the strobe
	 * says one was sent that is not taken yet (it came before the first
	 * strobe, or is waited for), not every slice: the slot's previous
	 * command would be verified and decoded each time */
	bool forged = nd->cmd_done < s.cmd_seq && nd_on_commands(nd);
	skip_unsent_commands(nd, s.cmd_seq, rejoined, forged);
	/* test hook ckpt_deaf_for: a Checkpoint command this strobe brought
	 * makes the node deaf from this strobe on, its schedule unread */
	if (nd->deaf_until >= s.slice)
		return true;
	if (nd->helpers)
		nd_ckpt_poll(nd);
	nd->strobe_cmd_seq = s.cmd_seq;
	/* a checkpoint learns first that its job is named to run: it may
	 * have been given up, and then the job runs at once (a step is
	 * named by its allocation, as the gang switch reads it) */
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (jobid_alloc(j->id) == run && (j->ckpt_busy || j->ckpt_frozen))
			nd_ckpt_running(nd, j);
	int switched = nd_timed_strobe(nd, &s, run, slots, run_ahead);
	/* the ranks' recorded outcomes first: the completion micro-phase wakes
	 * a rank that waits for room in its trace ring */
	nd_bcs_trace_strobe(nd);
	nd_bcs_strobe(nd);
	nd_mb_strobe(nd);
	if (nd->trace) {
		/* slice, the MM's switch count, when it came, when the switch was
		 * done (one due at its arrival: timed.c traces those at their
		 * slot) */
		fprintf(nd->trace, "strobe %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d\n",
			s.slice, s.switches, t_recv, switched ? clock_mono_ns() : 0, switched);
	}
	nd->switches = s.switches;
	if (nd->cg_pending)
		nd_gang_timers(nd);
	nd_report(nd, ack);
	return true;
}

/* Is area a's strobe later than area b's? Read unverified, only to choose
 * which to verify first: epochs only grow, and slices within one. */
static bool strobe_later(const struct nd *nd, unsigned a, unsigned b)
{
	uint64_t sa, sb, ea, eb;
	const uint8_t *pa = nd->gmem + GM_STROBE_AT(a), *pb = nd->gmem + GM_STROBE_AT(b);
	memcpy(&sa, pa + offsetof(struct strobe, slice), 8);
	memcpy(&sb, pb + offsetof(struct strobe, slice), 8);
	memcpy(&ea, pa + offsetof(struct strobe, epoch), 8);
	memcpy(&eb, pb + offsetof(struct strobe, epoch), 8);
	return ea != eb ? ea > eb : sa > sb;
}

/* A node whose loop turns but takes no strobe for this long says so, once
 * a drought: the MM declares a silent node DOWN after down_after_ms, and
 * the node's log would not say whether strobes stopped coming, came and
 * were refused, or came with nothing to act on. */
static uint64_t drought_ns(const struct nd *nd)
{
	uint64_t ns = 4ull * nd->slice_us * 1000u;
	return ns > 1000000000u ? ns : 1000000000u;
}

uint64_t nd_strobe_watch_at(const struct nd *nd)
{
	return nd->seen_strobe && !nd->strobe_drought ? nd->strobe_ns + drought_ns(nd) : 0;
}

void nd_strobe_watch(struct nd *nd)
{
	uint64_t at = nd_strobe_watch_at(nd), now = clock_mono_ns();
	if (!at || now < at)
		return;
	nd->strobe_drought = true;
	uint64_t slice[2], epoch[2];
	for (unsigned a = 0; a < 2; a++) {
		const uint8_t *p = nd->gmem + GM_STROBE_AT(a);
		memcpy(&slice[a], p + offsetof(struct strobe, slice), 8);
		memcpy(&epoch[a], p + offsetof(struct strobe, epoch), 8);
	}
	char fabric[600], tcp[1000];
	sn_peer_describe(nd->sn, MM_FABRIC_ID, fabric, sizeof(fabric));
	slog("no strobe taken for %" PRIu64 " ms since slice %" PRIu64 " (epoch %" PRIu64
	     "): %" PRIu64 " strobe arrivals since, %" PRIu64 " of them not newer; "
	     "the strobe areas hold slices %" PRIu64 " and %" PRIu64 " (epochs %" PRIu64
	     " and %" PRIu64 ", unverified); report %" PRIu64 " sent, %" PRIu64
	     " acknowledged; to the MM: %s",
	     (now - nd->strobe_ns) / 1000000u, nd->slice, nd->mm_epoch,
	     nd->strobe_events - nd->events_at_take, nd->strobes_old - nd->old_at_take, slice[0], slice[1], epoch[0], epoch[1], nd->report_seq, nd->acked,
	     fabric);
	sn_peer_tcp_describe(nd->sn, MM_FABRIC_ID, tcp, sizeof(tcp));
	slog("the kernel's TCP to the MM: %s", tcp);
}

void nd_on_strobe(struct nd *nd, unsigned areas)
{
	nd->strobe_events++;
	/* both areas written since the last turn: the later strobe counts,
	 * the earlier one only if the later failed its tag (a later one
	 * merely taken already makes the earlier old: not copied again) */
	unsigned first = areas == 3 ? !strobe_later(nd, 0, 1) : areas == 2;
	bool bad_tag;
	if (!strobe_take(nd, first, &bad_tag) && bad_tag && areas == 3)
		strobe_take(nd, !first, &bad_tag);
}
