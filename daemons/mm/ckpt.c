/* Checkpoints: the coordinated protocol, the requests, and recovery from a
 * lost node. Records are ckpt_rec.c's, restarting them ckpt_restart.c's.
 *
 * Protocol: the MM takes the job out of the strobes' run list (it is
 * stopped at the next slice boundary, as for a row that does not run) and
 * sends a Checkpoint command to its nodes; each node daemon saves its ranks
 * into its own state directory (ckpt/JOB/EPOCH/rank<R>.img) in a helper
 * process, stores the checkpoint id in GM_VAR_CKPT(slot) and reports
 * CHECKPOINTED. When every node did, one COMPARE-AND-WRITE (EQ id over the
 * job's nodes) confirms it; the record is complete and the job is back in
 * the run list. A node that fails or dies leaves the record incomplete, and
 * an incomplete checkpoint is never restarted.
 *
 * With checkpoint_copies, each node's images also go to its buddy (the next
 * node of the job), node to node (daemons/node/ckpt_copy.c); a node reports
 * CHECKPOINTED only once its copies are on disk. */
#include "ckptrec.pb-c.h"
#include "db.h"
#include "mm.h"
#include "mpikind.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the protocol */

int ckpt_begin(struct mm *mm, struct job *j, struct client *c, char *why, size_t len)
{
	if (j->spec->script || j->spec->hold) {
		snprintf(why, len, "job %" PRIu64 " is an allocation; checkpoint its steps (%" PRIu64
			 ".0, ...)", j->id, j->id);
		return -1;
	}
	const char *nock = mpi_kind_no_checkpoint(j->spec->mpi);
	if (nock) {
		snprintf(why, len, "job %" PRIu64 " cannot be checkpointed: %s", j->id, nock);
		return -1;
	}
	if (j->state != STORM__CTL__JOB_STATE__RUNNING) {
		snprintf(why, len, "job %" PRIu64 " is not running (%s)", j->id,
			 protobuf_c_enum_descriptor_get_value(&storm__ctl__job_state__descriptor,
							      j->state)->name);
		return -1;
	}
	if (j->ckpt) {
		snprintf(why, len, "a checkpoint of job %" PRIu64 " is under way", j->id);
		return -1;
	}
	for (uint32_t k = 0; k < j->nnodes; k++)
		if (mm->nodes[j->nodes[k]].state != STORM__CTL__NODE_STATE__UP) {
			snprintf(why, len, "node %s of job %" PRIu64 " is down",
				 mm->conf.nodes[j->nodes[k]], j->id);
			return -1;
		}
	struct mm_ckpt *r = ckpt_rec_new(mm, j);
	if (!r) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	r->epoch = ++j->ckpt_epoch;
	char dir[96];
	ckpt_rec_dir(dir, sizeof(dir), j->id, r->epoch);
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = j->id;
	ck.id = r->id;
	ck.slot = j->slot;
	ck.dir = dir;
	/* buddy copies: each node's images also go to the next node of the
	 * job, so that the checkpoint survives the loss of one node */
	bool copies = mm->conf.checkpoint_copies && j->nnodes >= 2;
	Storm__Cl__CkptCopy *cps = copies ? calloc(j->nnodes, sizeof(*cps)) : NULL;
	Storm__Cl__CkptCopy **cpp = copies ? calloc(j->nnodes, sizeof(*cpp)) : NULL;
	if (copies && (!cps || !cpp)) {
		free(cps);
		free(cpp);
		snprintf(why, len, "out of memory");
		ckpt_rec_delete(mm, r);
		j->ckpt_epoch--;
		return -1;
	}
	for (uint32_t k = 0; copies && k < j->nnodes; k++) {
		storm__cl__ckpt_copy__init(&cps[k]);
		cps[k].from = (uint32_t)j->nodes[k];
		cps[k].to = (uint32_t)j->nodes[(k + 1) % j->nnodes];
		cps[k].name = ""; /* its images */
		cpp[k] = &cps[k];
	}
	for (uint32_t k = 0; copies && k < r->nranks; k++)
		r->rank_copy[k] = j->nodes[(ckpt_pos_of_rank(r->nranks, r->nnodes, k) + 1) % j->nnodes];
	ck.copies = cpp;
	ck.n_copies = copies ? j->nnodes : 0;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	int rc = cmd_queue(mm, &cmd, j->nodes, j->nnodes);
	free(cps);
	free(cpp);
	if (rc < 0) {
		snprintf(why, len, "cannot queue the checkpoint command: %s", strerror(-rc));
		ckpt_rec_delete(mm, r);
		j->ckpt_epoch--;
		return -1;
	}
	/* out of the run list from the next strobe on: the nodes stop it */
	r->periodic = !c;
	j->ckpt = r;
	ckpt_persist(mm, r);
	j->ckpt_client = c;
	slog("job %" PRIu64 ": checkpoint %" PRIu64 " (epoch %u) started", j->id, r->id,
	       r->epoch);
	return 0;
}

#define KEEP_PERIODIC 2 /* complete periodic checkpoints kept per job */

static void remove_images(struct mm *mm, const struct mm_ckpt *r)
{
	char dir[96];
	ckpt_rec_dir(dir, sizeof(dir), r->job, r->epoch);
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = r->job;
	ck.id = r->id;
	ck.dir = dir;
	ck.remove = true;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	cmd_queue(mm, &cmd, r->nodes, r->nnodes);
	if (r->nextra) /* what restarts staged elsewhere */
		cmd_queue(mm, &cmd, r->extra, r->nextra);
}

/* Gone for good (deleted, pruned): out of the list and the database. */
static void rec_forget(struct mm *mm, struct mm_ckpt *r)
{
	if (mm->db && r->db_id && db_ckpt_delete(mm->db, r->db_id) < 0)
		slog("checkpoint %" PRIu64 ": cannot delete it from the database: %s", r->id,
		       db_error(mm->db));
	ckpt_rec_delete(mm, r);
}

/* Periodic checkpoints would fill the nodes' disks: once one completes,
 * the job's older periodic ones go, but for the last KEEP_PERIODIC complete.
 * Those taken by storm checkpoint stay until deleted. */
static void prune(struct mm *mm, uint64_t job)
{
	for (;;) {
		struct mm_ckpt *victim = NULL, *newest = NULL;
		for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
			if (r->job == job && r->periodic)
				newest = r;
		for (struct mm_ckpt *r = newest ? mm->ckpts : NULL; r; r = r->next) {
			if (r->job != job || !r->periodic)
				continue;
			unsigned newer = 0;
			for (struct mm_ckpt *q = r->next; q; q = q->next)
				newer += q->job == job && q->periodic && q->complete;
			if (newer >= KEEP_PERIODIC) {
				victim = r;
				break;
			}
		}
		if (!victim)
			return;
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " (epoch %u) pruned", job, victim->id,
		       victim->epoch);
		remove_images(mm, victim);
		rec_forget(mm, victim);
	}
}

static void ckpt_finish(struct mm *mm, struct job *j, bool ok, const char *why)
{
	struct mm_ckpt *r = j->ckpt;
	r->complete = ok;
	r->seconds = clock_wall_s() - r->t_start;
	if (!r->thawed) {
		r->thawed = true;
		r->frozen = r->seconds;
	}
	if (!ok && !r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "%s", why);
	if (ok)
		metrics_checkpoint(mm, r->seconds);
	trace_checkpoint(mm, j, r);
	j->ckpt = NULL;
	if (j->spec->checkpoint_interval)
		j->ckpt_next = clock_wall_s() + j->spec->checkpoint_interval;
	slog("job %" PRIu64 ": %s checkpoint %" PRIu64 " (epoch %u): %" PRIu64 " bytes in %.3f s, "
	       "frozen %.3f s%s%s",
	       j->id, ok ? "complete" : "INCOMPLETE", r->id, r->epoch, r->bytes, r->seconds,
	       r->frozen, ok ? "" : ": ", ok ? "" : r->reason);
	ckpt_persist(mm, r);
	if (ok && r->periodic)
		prune(mm, j->id);
	/* the job's record says why its last checkpoint failed (storm jobs) */
	if (ok)
		j->ckpt_failed[0] = '\0';
	else
		snprintf(j->ckpt_failed, sizeof(j->ckpt_failed), "checkpoint %" PRIu64 " failed: %s",
			 r->id, r->reason);
	/* a job that counts on --restart-on-failure hears once that it cannot
	 * be restarted, in its own error output: later tries fail alike */
	if (!ok && r->unrestorable && j->spec->restart_on_failure && !j->ckpt_warned) {
		j->ckpt_warned = true;
		job_warn(mm, j, "not protected by --restart-on-failure: checkpoint %" PRIu64
			 " failed: %s", r->id, r->reason);
	}
	struct client *c = j->ckpt_client;
	j->ckpt_client = NULL;
	if (!c)
		return;
	if (ok)
		ckpt_reply_info(mm, c, r);
	else
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
			    "checkpoint %" PRIu64 " of job %" PRIu64 " is incomplete: %s", r->id,
			    j->id, r->reason);
	client_finish(mm, c);
}

/* The confirmation's answer; the checkpoint may have ended meanwhile (the
 * job ended, a node was lost). */
static void confirmed(struct mm *mm, uint64_t job, uint64_t id, const struct sn_caw_result *res)
{
	struct job *j = job_find(mm, job);
	if (!j || !j->ckpt || j->ckpt->id != id || !j->ckpt->confirming)
		return;
	j->ckpt->confirming = false;
	if (res->status == 1)
		ckpt_finish(mm, j, true, NULL);
	else
		ckpt_finish(mm, j, false,
			    res->status == 0 ? "the confirmation found a node without it"
					     : "the confirmation did not reach every node");
}

static void ckpt_on_note(struct mm *mm, int node, const Storm__Cl__JobNote *n)
{
	struct job *j = job_find(mm, n->job);
	struct mm_ckpt *r = j ? j->ckpt : NULL;
	char *rest = NULL;
	uint64_t id = strtoull(n->message, &rest, 10);
	if (!r || r->id != id)
		return; /* a checkpoint that already ended */
	while (rest && *rest == ' ')
		rest++;
	int k = -1;
	for (uint32_t i = 0; i < r->nnodes; i++)
		if (r->nodes[i] == node)
			k = (int)i;
	if (k < 0)
		return;
	if (n->kind == STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED) {
		snprintf(r->reason, sizeof(r->reason), "%s", rest ? rest : "a node failed");
		r->unrestorable = n->value == 1;
		ckpt_finish(mm, j, false, r->reason);
		return;
	}
	/* captured (CHECKPOINTED implies it): when every node's ranks are in
	 * their images the job runs on while the nodes fsync them */
	if (!r->node_captured[k]) {
		r->node_captured[k] = true;
		if (++r->nodes_captured == r->nnodes && !r->thawed) {
			r->thawed = true;
			r->frozen = clock_wall_s() - r->t_start;
			slog("job %" PRIu64 ": checkpoint %" PRIu64 " captured on every node; "
			       "frozen %.3f s",
			       j->id, r->id, r->frozen);
		}
	}
	if (n->kind == STORM__CL__JOB_NOTE__KIND__CHECKPOINT_CAPTURED)
		return;
	if (!r->node_done[k]) {
		r->node_done[k] = true;
		r->nodes_done++;
		r->bytes += strtoull(rest ? rest : "0", NULL, 10);
	}
	if (r->nodes_done < r->nnodes || r->confirming)
		return;
	/* every node said so: one COMPARE-AND-WRITE checks they all hold it */
	if (mm_query(mm, &j->set, GM_VAR_CKPT(j->slot), SN_EQ, r->id, confirmed, j->id, r->id) < 0) {
		ckpt_finish(mm, j, false, "the confirmation could not be sent");
		return;
	}
	r->confirming = true;
}

void ckpt_stage_check(struct mm *mm);

void ckpt_tick(struct mm *mm)
{
	double now = clock_wall_s();
	ckpt_stage_check(mm);
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (!j->spec->checkpoint_interval || j->ckpt || j->state != STORM__CTL__JOB_STATE__RUNNING ||
		    now < j->ckpt_next)
			continue;
		char why[256];
		if (ckpt_begin(mm, j, NULL, why, sizeof(why)) < 0) {
			slog("job %" PRIu64 ": periodic checkpoint not taken: %s", j->id, why);
			j->ckpt_next = now + j->spec->checkpoint_interval;
		}
	}
}

static void ckpt_job_ended(struct mm *mm, struct job *j)
{
	free(j->stage); /* ended while its images moved: late notes are ignored */
	j->stage = NULL;
	if (j->ckpt)
		ckpt_finish(mm, j, false, "the job ended before every node saved it");
}

/* ---- a lost node: the checkpoint under way fails; a restart takes over */

static uint64_t ckpt_node_lost(struct mm *mm, struct job *j, const char *lost)
{
	char why[256];
	if (j->ckpt)
		ckpt_finish(mm, j, false, lost);
	if (!j->spec->restart_on_failure)
		return 0;
	struct mm_ckpt *r = ckpt_rec_latest_complete(mm, j->id);
	if (!r && j->spec->restore_checkpoint) /* none of its own yet: the one it came from */
		r = ckpt_rec_find(mm, j->spec->restore_checkpoint);
	if (!r || !r->complete) {
		slog("job %" PRIu64 ": no complete checkpoint to restart from", j->id);
		return 0;
	}
	struct job *n = ckpt_restart_job(mm, r, r->nnodes, j->client != NULL, NULL, why,
					 sizeof(why));
	if (!n) {
		slog("job %" PRIu64 ": cannot restart checkpoint %" PRIu64 ": %s", j->id, r->id, why);
		return 0;
	}
	/* the new job speaks to the old one's storm run, or writes its output file */
	if (j->client) {
		n->client = j->client;
		n->client->job = n;
		j->client = NULL;
		snprintf(why, sizeof(why), "%s; job %" PRIu64 " restarts from checkpoint %" PRIu64,
			 lost, j->id, r->id);
		ckpt_send_submitted(mm, n->client, n, why);
	}
	if (j->out_fd >= 0) {
		n->out_fd = j->out_fd;
		j->out_fd = -1;
		n->output_path = j->output_path ? strdup(j->output_path) : NULL;
	}
	return n->id;
}

/* ---- requests */

static void handle_restart(struct mm *mm, struct client *c, const Storm__Ctl__Restart *rq)
{
	char why[512];
	struct mm_ckpt *r = ckpt_rec_find(mm, rq->checkpoint);
	if (!r) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no checkpoint %llu",
			    (unsigned long long)rq->checkpoint);
		return;
	}
	if (!mm_may_touch_ckpt(c, r, "restart", why, sizeof(why))) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	if (!r->complete) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
			    "checkpoint %llu is incomplete (%s); only a complete checkpoint "
			    "restarts",
			    (unsigned long long)r->id,
			    r->reason[0] ? r->reason : "still being taken");
		return;
	}
	if (mm->shutting_down) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
			    "the cluster is shutting down");
		return;
	}
	/* the trace comes as a Submit's --file does: one descriptor (a TCP
	 * request's bytes were made one, ctl.c), multicast to the nodes */
	if (c->rx.nfds != (rq->replay ? 1 : 0)) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
			    "a restart%s takes %s, not %d", rq->replay ? " to replay" : "",
			    rq->replay ? "its trace as one file" : "no file", c->rx.nfds);
		return;
	}
	struct stat st;
	if (rq->replay && (fstat(c->rx.fds[0], &st) < 0 || !S_ISREG(st.st_mode))) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
			    "the trace to replay is not a regular file");
		return;
	}
	if (rq->replay && !r->marks) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
			    "checkpoint %llu of job %llu has no mark in a trace: the job did not "
			    "run with storm run --record",
			    (unsigned long long)r->id, (unsigned long long)r->job);
		return;
	}
	struct job *j = ckpt_restart_job(mm, r, rq->nodes, true, rq->replay ? &c->rx.fds[0] : NULL,
					 why, sizeof(why));
	if (!j) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", why);
		return;
	}
	/* the one copy of the trace this cluster has: a restarted MM takes
	 * the queued restart up with it (recover.c) */
	if (j->nfds)
		persist_files_keep(mm, j);
	j->client = c;
	c->job = j;
	/* as a Submit: the reply says whether it starts now, then it does */
	bool first = true;
	for (struct job *q = mm->jobs; q && q != j; q = q->next)
		first &= q->state != STORM__CTL__JOB_STATE__QUEUED;
	if (first && (int)j->nnodes <= matrix_room(&mm->matrix) && (!j->nfds || !mm->xfer))
		j->state = STORM__CTL__JOB_STATE__LAUNCHING;
	ckpt_send_submitted(mm, c, j, "");
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	jobs_schedule(mm);
}

static void handle_delete(struct mm *mm, struct client *c, uint64_t id)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, id);
	if (!r) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no checkpoint %llu",
			    (unsigned long long)id);
		return;
	}
	char why[256];
	if (!mm_may_touch_ckpt(c, r, "delete", why, sizeof(why))) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->ckpt == r) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
				    "checkpoint %llu is being taken", (unsigned long long)id);
			return;
		}
	remove_images(mm, r);
	ckpt_reply_info(mm, c, r);
	slog("checkpoint %llu deleted by uid %u", (unsigned long long)id, (unsigned)c->uid);
	rec_forget(mm, r);
}

static void reply_list(struct mm *mm, struct client *c)
{
	size_t n = 0, ranks = 0;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next, n++)
		ranks += r->nranks;
	char **where = calloc(2 * ranks + 1, sizeof(char *));
	Storm__Ctl__CheckpointInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Storm__Ctl__CheckpointInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!infos || !ptrs || !where) {
		free(infos);
		free(ptrs);
		free(where);
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	size_t k = 0;
	char **w = where;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next, k++) {
		ckpt_rec_info(mm, r, &infos[k], w);
		w += 2 * (size_t)r->nranks;
		ptrs[k] = &infos[k];
	}
	Storm__Ctl__CheckpointList cl = STORM__CTL__CHECKPOINT_LIST__INIT;
	cl.checkpoints = ptrs;
	cl.n_checkpoints = n;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_CHECKPOINTS, &cl);
	free(infos);
	free(ptrs);
	free(where);
}

void ckpt_handle_request(struct mm *mm, struct client *c, const Storm__Ctl__Request *req)
{
	char why[512];
	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_CHECKPOINT: {
		struct job *j = job_find(mm, req->checkpoint->job);
		if (!j) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no job %llu",
				    (unsigned long long)req->checkpoint->job);
		} else if (!mm_may_touch(c, j, "checkpoint", why, sizeof(why))) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		} else if (ckpt_begin(mm, j, c, why, sizeof(why)) < 0) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", why);
		}
		break;
	}
	case STORM__CTL__REQUEST__BODY_RESTART:
		handle_restart(mm, c, req->restart);
		break;
	case STORM__CTL__REQUEST__BODY_CHECKPOINTS:
		reply_list(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_DELETE_CHECKPOINT:
		handle_delete(mm, c, req->delete_checkpoint->checkpoint);
		break;
	default:
		break;
	}
}

static const struct job_ckpt_hooks hooks = {
	.restart_prepare = ckpt_restart_prepare,
	.fill_launch = ckpt_fill_launch,
	.node_lost = ckpt_node_lost,
	.on_note = ckpt_on_note,
	.stage_note = ckpt_stage_note,
	.ending = ckpt_job_ended,
};

void ckpt_init(struct mm *mm)
{
	mm->ckpt_hooks = &hooks;
}
