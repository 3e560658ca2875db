/* Checkpoints (BRIEF §7): the records, the coordinated protocol, restart
 * and recovery from a lost node.
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
 * Records live in a list behind ckpt_rec_*; each is also written through to
 * the database's checkpoints table (db_ckpt_*: job, epoch, nodes, size,
 * complete), which keeps no relaunch data: after an MM restart the table
 * is history, and only this MM's in-memory records can be restarted. */
#include "db.h"
#include "mm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- records */

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static char **dup_strv(char *const *v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(v[i]))) {
			free_strv(out, i);
			return NULL;
		}
	return out;
}

static void rec_free(struct mm_ckpt *r)
{
	free_strv(r->argv, r->argc);
	free_strv(r->env, r->nenv);
	for (int i = 0; i < r->nfiles; i++)
		free(r->fnames[i]);
	free(r->cwd);
	free(r->program);
	free(r->nodes);
	free(r->node_done);
	free(r->node_captured);
	free(r);
}

struct mm_ckpt *ckpt_rec_find(struct mm *mm, uint64_t id)
{
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

struct mm_ckpt *ckpt_rec_latest_complete(struct mm *mm, uint64_t job)
{
	struct mm_ckpt *best = NULL;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
		if (r->job == job && r->complete && (!best || r->epoch > best->epoch))
			best = r;
	return best;
}

void ckpt_rec_delete(struct mm *mm, struct mm_ckpt *r)
{
	for (struct mm_ckpt **pp = &mm->ckpts; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			rec_free(r);
			return;
		}
}

static struct mm_ckpt *rec_new(struct mm *mm, const struct job *j)
{
	struct mm_ckpt *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->id = ++mm->next_ckpt_id;
	r->job = j->id;
	snprintf(r->name, sizeof(r->name), "%s", j->name);
	snprintf(r->user, sizeof(r->user), "%s", j->user);
	snprintf(r->nodelist, sizeof(r->nodelist), "%s", j->nodelist);
	r->uid = j->uid;
	r->gid = j->gid;
	r->nnodes = j->nnodes;
	r->nranks = j->nranks;
	r->nodes = malloc(sizeof(int) * j->nnodes);
	r->node_done = calloc(j->nnodes, sizeof(bool));
	r->node_captured = calloc(j->nnodes, sizeof(bool));
	r->argv = dup_strv(j->argv, j->argc);
	r->argc = j->argc;
	r->env = dup_strv(j->env, j->nenv);
	r->nenv = j->nenv;
	r->cwd = strdup(j->cwd);
	r->program = strdup(j->program);
	r->no_bcast = j->no_bcast;
	r->interval = j->ckpt_interval;
	r->restart_on_failure = j->restart_on_failure;
	r->nfiles = j->restore_id ? 0 : j->nfds;
	if (j->restore_id) { /* a restart's files are those of what it restarted */
		const struct mm_ckpt *o = ckpt_rec_find(mm, j->restore_id);
		for (int i = 0; o && i < o->nfiles; i++) {
			r->fnames[i] = strdup(o->fnames[i]);
			r->fsizes[i] = o->fsizes[i];
			r->fmodes[i] = o->fmodes[i];
			r->nfiles = i + 1;
		}
	} else {
		for (int i = 0; i < j->nfds; i++) {
			r->fnames[i] = strdup(j->fnames[i]);
			r->fsizes[i] = j->fsizes[i];
			r->fmodes[i] = j->fmodes[i];
		}
	}
	if (!r->nodes || !r->node_done || !r->node_captured || !r->argv || !r->env || !r->cwd || !r->program) {
		rec_free(r);
		return NULL;
	}
	memcpy(r->nodes, j->nodes, sizeof(int) * j->nnodes);
	r->time = now_s();
	r->t_start = r->time;
	struct mm_ckpt **tail = &mm->ckpts;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	return r;
}

static void fill_info(const struct mm_ckpt *r, Storm__Ctl__CheckpointInfo *i)
{
	storm__ctl__checkpoint_info__init(i);
	i->id = r->id;
	i->job = r->job;
	i->epoch = r->epoch;
	i->name = (char *)r->name;
	i->user = (char *)r->user;
	i->uid = r->uid;
	i->nodelist = (char *)r->nodelist;
	i->nodes = r->nnodes;
	i->ranks = r->nranks;
	i->bytes = r->bytes;
	i->complete = r->complete;
	i->time = r->time;
	i->seconds = r->seconds;
	i->reason = (char *)r->reason;
	i->frozen = r->frozen;
}

static void reply_info(struct mm *mm, struct client *c, const struct mm_ckpt *r)
{
	Storm__Ctl__CheckpointInfo info;
	fill_info(r, &info);
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.version = PROTO_VERSION;
	rep.body_case = STORM__CTL__REPLY__BODY_CHECKPOINTED;
	rep.checkpointed = &info;
	client_send(mm, c, &rep);
}

/* ---- the protocol */

static void rel_dir(char *buf, size_t len, uint64_t job, uint32_t epoch)
{
	if (epoch)
		snprintf(buf, len, "ckpt/%" PRIu64 "/%u", job, epoch);
	else
		snprintf(buf, len, "ckpt/%" PRIu64 "/files", job);
}

int ckpt_begin(struct mm *mm, struct job *j, struct client *c, char *why, size_t len)
{
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
	struct mm_ckpt *r = rec_new(mm, j);
	if (!r) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	r->epoch = ++j->ckpt_epoch;
	char dir[96];
	rel_dir(dir, sizeof(dir), j->id, r->epoch);
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = j->id;
	ck.id = r->id;
	ck.slot = j->slot;
	ck.dir = dir;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	int rc = cmd_queue(mm, &cmd, j->nodes, j->nnodes);
	if (rc < 0) {
		snprintf(why, len, "cannot queue the checkpoint command: %s", strerror(-rc));
		ckpt_rec_delete(mm, r);
		j->ckpt_epoch--;
		return -1;
	}
	/* out of the run list from the next strobe on: the nodes stop it */
	r->periodic = !c;
	j->ckpt = r;
	if (mm->db && db_ckpt_add(mm->db, j->id, r->epoch, r->nodelist, 0, false, &r->db_id) < 0)
		mm_log("checkpoint %" PRIu64 ": cannot record it in the database: %s", r->id,
		       db_error(mm->db));
	j->ckpt_client = c;
	mm_log("job %" PRIu64 ": checkpoint %" PRIu64 " (epoch %u) started", j->id, r->id,
	       r->epoch);
	return 0;
}

#define KEEP_PERIODIC 2 /* complete periodic checkpoints kept per job */

static void remove_images(struct mm *mm, const struct mm_ckpt *r)
{
	char dir[96];
	rel_dir(dir, sizeof(dir), r->job, r->epoch);
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = r->job;
	ck.id = r->id;
	ck.dir = dir;
	ck.remove = true;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	cmd_queue(mm, &cmd, r->nodes, r->nnodes);
}

/* Gone for good (deleted, pruned): out of the list and the database. */
static void rec_forget(struct mm *mm, struct mm_ckpt *r)
{
	if (mm->db && r->db_id && db_ckpt_delete(mm->db, r->db_id) < 0)
		mm_log("checkpoint %" PRIu64 ": cannot delete it from the database: %s", r->id,
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
		mm_log("job %" PRIu64 ": checkpoint %" PRIu64 " (epoch %u) pruned", job, victim->id,
		       victim->epoch);
		remove_images(mm, victim);
		rec_forget(mm, victim);
	}
}

static void ckpt_finish(struct mm *mm, struct job *j, bool ok, const char *why)
{
	struct mm_ckpt *r = j->ckpt;
	r->complete = ok;
	r->seconds = now_s() - r->t_start;
	if (!r->thawed) {
		r->thawed = true;
		r->frozen = r->seconds;
	}
	if (!ok && !r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "%s", why);
	j->ckpt = NULL;
	if (j->ckpt_interval)
		j->ckpt_next = now_s() + j->ckpt_interval;
	mm_log("job %" PRIu64 ": %s checkpoint %" PRIu64 " (epoch %u): %" PRIu64 " bytes in %.3f s, "
	       "frozen %.3f s%s%s",
	       j->id, ok ? "complete" : "INCOMPLETE", r->id, r->epoch, r->bytes, r->seconds,
	       r->frozen, ok ? "" : ": ", ok ? "" : r->reason);
	if (ok && r->db_id && db_ckpt_complete(mm->db, r->db_id, r->bytes) < 0)
		mm_log("checkpoint %" PRIu64 ": cannot mark it complete in the database: %s", r->id,
		       db_error(mm->db));
	if (ok && r->periodic)
		prune(mm, j->id);
	struct client *c = j->ckpt_client;
	j->ckpt_client = NULL;
	if (!c)
		return;
	if (ok)
		reply_info(mm, c, r);
	else
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
				  "checkpoint %" PRIu64 " of job %" PRIu64 " is incomplete: %s", r->id,
				  j->id, r->reason);
	client_finish(mm, c);
}

void ckpt_on_note(struct mm *mm, int node, const Storm__Cl__JobNote *n)
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
		ckpt_finish(mm, j, false, r->reason);
		return;
	}
	/* captured (CHECKPOINTED implies it): when every node's ranks are in
	 * their images the job runs on while the nodes fsync them */
	if (!r->node_captured[k]) {
		r->node_captured[k] = true;
		if (++r->nodes_captured == r->nnodes && !r->thawed) {
			r->thawed = true;
			r->frozen = now_s() - r->t_start;
			mm_log("job %" PRIu64 ": checkpoint %" PRIu64 " captured on every node; "
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
	if (r->nodes_done < r->nnodes)
		return;
	/* every node said so: one COMPARE-AND-WRITE checks they all hold it */
	struct sn_nodeset failed;
	int rc = sn_caw(mm->sn, &j->set, GM_VAR_CKPT(j->slot), SN_EQ, r->id, false, 0, 0, &failed);
	if (rc == 1)
		ckpt_finish(mm, j, true, NULL);
	else
		ckpt_finish(mm, j, false,
			    rc == 0 ? "the confirmation found a node without it"
				    : "the confirmation did not reach every node");
}

void ckpt_tick(struct mm *mm)
{
	double now = now_s();
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (!j->ckpt_interval || j->ckpt || j->state != STORM__CTL__JOB_STATE__RUNNING ||
		    now < j->ckpt_next)
			continue;
		char why[256];
		if (ckpt_begin(mm, j, NULL, why, sizeof(why)) < 0) {
			mm_log("job %" PRIu64 ": periodic checkpoint not taken: %s", j->id, why);
			j->ckpt_next = now + j->ckpt_interval;
		}
	}
}

void ckpt_job_ended(struct mm *mm, struct job *j)
{
	if (j->ckpt)
		ckpt_finish(mm, j, false, "the job ended before every node saved it");
}

/* ---- restart */

/* A new job that restarts checkpoint r on `nodes` nodes (0: as many as it
 * had); c, when given, gets its output and end like a storm run. */
static struct job *restart_job(struct mm *mm, struct mm_ckpt *r, uint32_t nodes, char *why,
			       size_t len)
{
	if (!nodes)
		nodes = r->nnodes;
	if ((int)nodes > mm->conf.nnodes || nodes > r->nranks) {
		snprintf(why, len, "%u nodes for %u ranks on a cluster of %d nodes", nodes, r->nranks,
			 mm->conf.nnodes);
		return NULL;
	}
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	j->out_fd = -1;
	j->id = mm->next_job_id;
	snprintf(j->name, sizeof(j->name), "%s", r->name);
	snprintf(j->user, sizeof(j->user), "%s", r->user);
	j->uid = r->uid;
	j->gid = r->gid;
	j->nnodes = nodes;
	j->nranks = r->nranks;
	j->argv = dup_strv(r->argv, r->argc);
	j->argc = r->argc;
	j->env = dup_strv(r->env, r->nenv);
	j->nenv = r->nenv;
	j->cwd = strdup(r->cwd);
	j->program = strdup(r->program);
	j->no_bcast = r->no_bcast;
	j->nodes = calloc(nodes, sizeof(int));
	j->rank_status = malloc(sizeof(int32_t) * r->nranks);
	j->node_done = calloc(nodes, sizeof(bool));
	j->restore_id = r->id;
	j->ckpt_interval = r->interval;
	j->restart_on_failure = r->restart_on_failure;
	if (!j->argv || !j->env || !j->cwd || !j->program || !j->nodes || !j->rank_status ||
	    !j->node_done) {
		job_destroy(j);
		snprintf(why, len, "out of memory");
		return NULL;
	}
	for (uint32_t k = 0; k < r->nranks; k++)
		j->rank_status[k] = INT32_MIN;
	mm->next_job_id++;
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	j->t_submit = now_s();
	struct job **tail = &mm->jobs;
	while (*tail)
		tail = &(*tail)->next;
	*tail = j;
	mm_log("job %" PRIu64 " restarts checkpoint %" PRIu64 " of job %" PRIu64 " on %u nodes",
	       j->id, r->id, r->job, nodes);
	return j;
}

static void send_submitted(struct mm *mm, struct client *c, struct job *j, const char *reason)
{
	Storm__Ctl__Submitted sub = STORM__CTL__SUBMITTED__INIT;
	sub.job = j->id;
	sub.state = j->state == STORM__CTL__JOB_STATE__QUEUED ? "QUEUED" : "LAUNCHING";
	sub.reason = (char *)reason;
	sub.output = j->output_path ? j->output_path : "";
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.version = PROTO_VERSION;
	rep.body_case = STORM__CTL__REPLY__BODY_SUBMITTED;
	rep.submitted = &sub;
	client_send(mm, c, &rep);
}

uint64_t ckpt_node_lost(struct mm *mm, struct job *j, int node)
{
	char why[256];
	if (j->ckpt) {
		snprintf(why, sizeof(why), "node %s stopped responding", mm->conf.nodes[node]);
		ckpt_finish(mm, j, false, why);
	}
	if (!j->restart_on_failure)
		return 0;
	struct mm_ckpt *r = ckpt_rec_latest_complete(mm, j->id);
	if (!r && j->restore_id) /* none of its own yet: the one it came from */
		r = ckpt_rec_find(mm, j->restore_id);
	if (!r || !r->complete) {
		mm_log("job %" PRIu64 ": no complete checkpoint to restart from", j->id);
		return 0;
	}
	struct job *n = restart_job(mm, r, r->nnodes, why, sizeof(why));
	if (!n) {
		mm_log("job %" PRIu64 ": cannot restart checkpoint %" PRIu64 ": %s", j->id, r->id, why);
		return 0;
	}
	/* the new job speaks to the old one's storm run, or writes its output file */
	if (j->client) {
		n->client = j->client;
		n->client->job = n;
		j->client = NULL;
		snprintf(why, sizeof(why),
			 "node %s stopped responding; job %" PRIu64 " restarts from checkpoint %" PRIu64,
			 mm->conf.nodes[node], j->id, r->id);
		send_submitted(mm, n->client, n, why);
	}
	if (j->out_fd >= 0) {
		n->out_fd = j->out_fd;
		j->out_fd = -1;
		n->output_path = j->output_path ? strdup(j->output_path) : NULL;
	}
	return n->id;
}

static bool in_place(const struct job *j, const struct mm_ckpt *r)
{
	if (j->nnodes != r->nnodes)
		return false;
	for (uint32_t k = 0; k < j->nnodes; k++)
		if (j->nodes[k] != r->nodes[k])
			return false;
	return true;
}

/* The node of checkpoint r that holds rank `rank` (block distribution). */
static int node_of_rank(const struct mm_ckpt *r, uint32_t rank)
{
	uint32_t base = r->nranks / r->nnodes, extra = r->nranks % r->nnodes, first = 0;
	for (uint32_t k = 0; k < r->nnodes; k++) {
		uint32_t count = base + (k < extra);
		if (rank < first + count)
			return r->nodes[k];
		first += count;
	}
	return r->nodes[r->nnodes - 1];
}

int ckpt_restart_prepare(struct mm *mm, struct job *j)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, j->restore_id);
	if (!r) {
		job_fail(mm, j, "checkpoint %" PRIu64 " was deleted", j->restore_id);
		return -1;
	}
	if (in_place(j, r))
		return 1;
	/* elsewhere: the files and every image go out with the program
	 * multicast. The MM reads them from the nodes' state directories,
	 * which it reaches on a virtual cluster (one host). */
	int nf = (r->no_bcast ? 0 : r->nfiles) + (int)r->nranks;
	if (nf > FRAME_MAX_FDS) {
		job_fail(mm, j, "a restart on other nodes moves at most %d files (program, files "
				"and one image per rank), this one needs %d; restart on the same nodes",
			 FRAME_MAX_FDS, nf);
		return -1;
	}
	char path[PATH_MAX + 512];
	int k = 0;
	for (int i = 0; !r->no_bcast && i < r->nfiles; i++, k++) {
		snprintf(path, sizeof(path), "%s/%s/ckpt/%" PRIu64 "/files/%s", mm->conf.state_dir,
			 mm->conf.nodes[r->nodes[0]], r->job, r->fnames[i]);
		j->fnames[k] = strdup(r->fnames[i]);
		j->fmodes[k] = r->fmodes[i];
		j->fds[k] = open(path, O_RDONLY | O_CLOEXEC);
		j->nfds = k + 1;
		if (j->fds[k] < 0)
			goto missing;
		struct stat st;
		fstat(j->fds[k], &st);
		j->fsizes[k] = (uint64_t)st.st_size;
	}
	for (uint32_t rank = 0; rank < r->nranks; rank++, k++) {
		snprintf(path, sizeof(path), "%s/%s/ckpt/%" PRIu64 "/%u/rank%u.img",
			 mm->conf.state_dir, mm->conf.nodes[node_of_rank(r, rank)], r->job, r->epoch,
			 rank);
		char name[32];
		snprintf(name, sizeof(name), "rank%u.img", rank);
		j->fnames[k] = strdup(name);
		j->fmodes[k] = 0600;
		j->fds[k] = open(path, O_RDONLY | O_CLOEXEC);
		j->nfds = k + 1;
		if (j->fds[k] < 0)
			goto missing;
		struct stat st;
		fstat(j->fds[k], &st);
		j->fsizes[k] = (uint64_t)st.st_size;
	}
	return 0;
missing:
	job_fail(mm, j, "checkpoint %" PRIu64 ": %s: %s", r->id, path, strerror(errno));
	return -1;
}

void ckpt_fill_launch(struct mm *mm, struct job *j, Storm__Cl__Launch *l, char **old_dirs)
{
	static char restore_dir[96], files_dir[96];
	struct mm_ckpt *r = ckpt_rec_find(mm, j->restore_id);
	if (!r)
		return;
	l->restore = true;
	if (in_place(j, r)) {
		rel_dir(restore_dir, sizeof(restore_dir), r->job, r->epoch);
		rel_dir(files_dir, sizeof(files_dir), r->job, 0);
		l->restore_dir = restore_dir;
		l->files_dir = r->no_bcast ? "" : files_dir;
	}
	size_t n = r->nnodes < 64 ? r->nnodes : 64;
	for (size_t k = 0; k < n; k++) {
		char d[PATH_MAX + 512];
		snprintf(d, sizeof(d), "%s/%s/jobs/%" PRIu64, mm->conf.state_dir,
			 mm->conf.nodes[r->nodes[k]], r->job);
		old_dirs[k] = strdup(d);
	}
	l->old_dirs = old_dirs;
	l->n_old_dirs = n;
}

/* ---- requests */

static void handle_restart(struct mm *mm, struct client *c, const Storm__Ctl__Restart *rq)
{
	char why[512];
	struct mm_ckpt *r = ckpt_rec_find(mm, rq->checkpoint);
	if (!r) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no checkpoint %llu",
				  (unsigned long long)rq->checkpoint);
		return;
	}
	if (!mm_may_touch_ckpt(c, r, "restart", why, sizeof(why))) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	if (!r->complete) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
				  "checkpoint %llu is incomplete (%s); only a complete checkpoint "
				  "restarts",
				  (unsigned long long)r->id,
				  r->reason[0] ? r->reason : "still being taken");
		return;
	}
	if (mm->shutting_down) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
				  "the cluster is shutting down");
		return;
	}
	struct job *j = restart_job(mm, r, rq->nodes, why, sizeof(why));
	if (!j) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", why);
		return;
	}
	j->client = c;
	c->job = j;
	/* as a Submit: the reply says whether it starts now, then it does */
	bool first = true;
	for (struct job *q = mm->jobs; q && q != j; q = q->next)
		first &= q->state != STORM__CTL__JOB_STATE__QUEUED;
	if (first && (int)j->nnodes <= matrix_room(&mm->matrix) && !mm->xfer)
		j->state = STORM__CTL__JOB_STATE__LAUNCHING;
	send_submitted(mm, c, j, "");
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	jobs_schedule(mm);
}

static void handle_delete(struct mm *mm, struct client *c, uint64_t id)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, id);
	if (!r) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no checkpoint %llu",
				  (unsigned long long)id);
		return;
	}
	char why[256];
	if (!mm_may_touch_ckpt(c, r, "delete", why, sizeof(why))) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->ckpt == r) {
			client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
					  "checkpoint %llu is being taken", (unsigned long long)id);
			return;
		}
	remove_images(mm, r);
	reply_info(mm, c, r);
	mm_log("checkpoint %llu deleted by uid %u", (unsigned long long)id, (unsigned)c->uid);
	rec_forget(mm, r);
}

static void reply_list(struct mm *mm, struct client *c)
{
	size_t n = 0;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
		n++;
	Storm__Ctl__CheckpointInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Storm__Ctl__CheckpointInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	size_t k = 0;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next, k++) {
		fill_info(r, &infos[k]);
		ptrs[k] = &infos[k];
	}
	Storm__Ctl__CheckpointList cl = STORM__CTL__CHECKPOINT_LIST__INIT;
	cl.checkpoints = ptrs;
	cl.n_checkpoints = n;
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.version = PROTO_VERSION;
	rep.body_case = STORM__CTL__REPLY__BODY_CHECKPOINTS;
	rep.checkpoints = &cl;
	client_send(mm, c, &rep);
	free(infos);
	free(ptrs);
}

void ckpt_handle_request(struct mm *mm, struct client *c, const Storm__Ctl__Request *req)
{
	char why[512];
	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_CHECKPOINT: {
		struct job *j = job_find(mm, req->checkpoint->job);
		if (!j) {
			client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no job %llu",
					  (unsigned long long)req->checkpoint->job);
		} else if (!mm_may_touch(c, j, "checkpoint", why, sizeof(why))) {
			client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		} else if (ckpt_begin(mm, j, c, why, sizeof(why)) < 0) {
			client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", why);
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
