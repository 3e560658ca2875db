/* Restarting a checkpoint: a new job from a complete record, on as many
 * nodes as it had or others, and a restart's staging: every new node first
 * receives, from an up node that holds them, the images and files it lacks
 * (node to node, daemons/node/ckpt_copy.c), then the job launches. The MM
 * never reads an image. */
#include "ckptrec.pb-c.h"
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

/* a sender that restarted (and lost its copies) without being declared
 * DOWN would leave the restart waiting forever */
#define STAGE_MAX_S 600.0


/* The trace a restart of storm replay --from replays, as the job's one
 * file: multicast into its job directory on each node before the launch,
 * as a run's --file is. *fd is taken. 0, or -1: out of memory. */
static int take_trace(struct job *j, int *fd)
{
	struct stat st;
	char *name = strdup(CKPT_REPLAY_NAME);
	if (!name || fstat(*fd, &st) < 0) {
		free(name);
		return -1;
	}
	/* protobuf-c's empty default is static: only a set one is freed */
	if (j->spec->replay_trace[0])
		free(j->spec->replay_trace);
	j->spec->replay_trace = name;
	j->fds[0] = *fd; /* job_destroy closes it from here on */
	j->nfds = 1;
	*fd = -1;
	j->fsizes[0] = (uint64_t)st.st_size;
	j->fmodes[0] = 0400; /* the job's user reads it; nothing writes it */
	return (j->fnames[0] = strdup(CKPT_REPLAY_NAME)) ? 0 : -1;
}

/* A new job that restarts checkpoint r on `nodes` nodes (0: as many as it
 * had); c, when given, gets its output and end like a storm run. */
struct job *ckpt_restart_job(struct mm *mm, struct mm_ckpt *r, uint32_t nodes, bool interactive,
			       int *trace_fd, char *why, size_t len)
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
	j->spec = jobspec_dup(r->spec);
	j->nnodes = nodes;
	j->nranks = r->nranks;
	j->nodes = calloc(nodes, sizeof(int));
	j->rank_status = malloc(sizeof(int32_t) * r->nranks);
	j->node_done = calloc(nodes, sizeof(bool));
	bool oom = !j->spec || !j->nodes || !j->rank_status || !j->node_done;
	if (!oom && j->spec->replay_trace[0] && !(trace_fd && *trace_fd >= 0)) {
		/* a checkpoint of a replay restarted without a trace: its
		 * ranks replay on from what they hold, or not at all */
		free(j->spec->replay_trace);
		j->spec->replay_trace = (char *)protobuf_c_empty_string;
	}
	if (!oom && trace_fd && *trace_fd >= 0)
		oom = take_trace(j, trace_fd) < 0;
	if (oom) {
		job_destroy(j);
		snprintf(why, len, "out of memory");
		return NULL;
	}
	/* the job as it was, as a restart: in the database as a job (its id
	 * is never given again) that a restarted MM starts as the same restart */
	j->spec->restore_checkpoint = r->id;
	j->spec->nodes = nodes;
	j->spec->ranks = r->nranks;
	j->spec->interactive = interactive;
	j->spec->overcommit = true;
	for (uint32_t k = 0; k < r->nranks; k++)
		j->rank_status[k] = INT32_MIN;
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	j->t_submit = clock_wall_s();
	if (persist_job_new(mm, j) < 0)
		slog("job %" PRIu64 ": a restarted MM will not know it", j->id);
	mm->next_job_id++;
	struct job **tail = &mm->jobs;
	while (*tail)
		tail = &(*tail)->next;
	*tail = j;
	slog("job %" PRIu64 " restarts checkpoint %" PRIu64 " of job %" PRIu64 " on %u nodes",
	       j->id, r->id, r->job, nodes);
	return j;
}

void ckpt_send_submitted(struct mm *mm, struct client *c, struct job *j, const char *reason)
{
	Storm__Ctl__Submitted sub = STORM__CTL__SUBMITTED__INIT;
	sub.job = j->id;
	sub.state = j->state == STORM__CTL__JOB_STATE__QUEUED ? "QUEUED" : "LAUNCHING";
	sub.reason = (char *)reason;
	sub.output = j->output_path ? j->output_path : "";
	reply_send(mm, c, STORM__CTL__REPLY__BODY_SUBMITTED, &sub);
}

struct ckpt_stage {
	double t_start;
	uint32_t n, left;
	struct {
		int node;
		bool done;
	} from[];
};

static bool node_up(const struct mm *mm, int node)
{
	return node >= 0 && mm->nodes[node].state == STORM__CTL__NODE_STATE__UP;
}

static bool in_list(const int *v, uint32_t n, int node)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == node)
			return true;
	return false;
}

/* Adds a staging entry; `from` joins the senders. -1: out of memory. */
static int stage_add(Storm__Cl__CkptCopy ***v, size_t *n, size_t *cap, int from, int to,
		     const char *name)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		Storm__Cl__CkptCopy **nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = c;
	}
	Storm__Cl__CkptCopy *e = malloc(sizeof(*e));
	if (e)
		storm__cl__ckpt_copy__init(e);
	if (!e || !(e->name = strdup(name))) {
		free(e);
		return -1;
	}
	e->from = (uint32_t)from;
	e->to = (uint32_t)to;
	(*v)[(*n)++] = e;
	return 0;
}

static void stage_free(Storm__Cl__CkptCopy **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i]->name);
		free(v[i]);
	}
	free(v);
}

/* Before a restart launches, every node of it must hold the images of its
 * ranks and the job's files (ckpt/JOB/files): a rank's image is on the node
 * that wrote it and on its buddy; what a node lacks is sent to it, node to
 * node, by an up node that holds it (ckpt_copy.c on the nodes). The MM never
 * reads the images itself. 1: everything is in place; 2: staging started,
 * the launch waits for it; -1: the job failed, saying why. */
/* whole: one plan of copies built in one array, then sent; its cleanup is shared */
int ckpt_restart_prepare(struct mm *mm, struct job *j)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, j->spec->restore_checkpoint);
	if (!r) {
		job_fail(mm, j, "checkpoint %" PRIu64 " was deleted", j->spec->restore_checkpoint);
		return -1;
	}
	Storm__Cl__CkptCopy **v = NULL;
	size_t n = 0, cap = 0;
	char name[128], dir[96];
	ckpt_rec_dir(dir, sizeof(dir), r->job, r->epoch);
	for (uint32_t rank = 0; rank < r->nranks; rank++) {
		int to = j->nodes[ckpt_pos_of_rank(j->nranks, j->nnodes, rank)];
		int a = r->rank_node[rank], b = r->rank_copy[rank];
		if (to == a || to == b)
			continue;
		int from = node_up(mm, a) ? a : node_up(mm, b) ? b : -1;
		if (from < 0) {
			job_fail(mm, j, "checkpoint %" PRIu64 ": no node holding the image of rank %u "
					"is up (%s%s%s)", r->id, rank, mm->conf.nodes[a],
				 b >= 0 ? ", its copy on " : "; no copy was made",
				 b >= 0 ? mm->conf.nodes[b] : "");
			stage_free(v, n);
			return -1;
		}
		snprintf(name, sizeof(name), "%s/rank%u.img", dir, rank);
		if (stage_add(&v, &n, &cap, from, to, name) < 0)
			goto oom;
	}
	for (uint32_t k = 0; !r->spec->no_bcast && k < j->nnodes; k++) {
		int to = j->nodes[k], from = -1;
		if (in_list(r->nodes, r->nnodes, to))
			continue; /* each node of the job copied its files at its dump */
		for (uint32_t i = 0; i < r->nnodes && from < 0; i++)
			if (node_up(mm, r->nodes[i]))
				from = r->nodes[i];
		if (from < 0) {
			job_fail(mm, j, "checkpoint %" PRIu64 ": no node holding the job's files is up",
				 r->id);
			stage_free(v, n);
			return -1;
		}
		ckpt_rec_dir(name, sizeof(name), r->job, 0);
		if (stage_add(&v, &n, &cap, from, to, name) < 0)
			goto oom;
	}
	if (!n)
		return 1;
	int *senders = malloc(sizeof(int) * n);
	uint32_t ns = 0;
	if (!senders)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		if (!in_list(senders, ns, (int)v[i]->from))
			senders[ns++] = (int)v[i]->from;
		if (!in_list(r->extra, r->nextra, (int)v[i]->to) &&
		    !in_list(r->nodes, r->nnodes, (int)v[i]->to)) {
			int *e = realloc(r->extra, sizeof(int) * (r->nextra + 1));
			if (!e) {
				free(senders);
				goto oom;
			}
			r->extra = e;
			r->extra[r->nextra++] = (int)v[i]->to;
		}
	}
	j->stage = calloc(1, sizeof(*j->stage) + ns * sizeof(j->stage->from[0]));
	if (!j->stage) {
		free(senders);
		goto oom;
	}
	j->stage->n = j->stage->left = ns;
	j->stage->t_start = clock_wall_s();
	for (uint32_t i = 0; i < ns; i++)
		j->stage->from[i].node = senders[i];
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = j->id; /* the notes are the restart's */
	ck.id = r->id;
	ck.dir = dir;
	ck.send = true;
	ck.copies = v;
	ck.n_copies = n;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	int rc = cmd_queue(mm, &cmd, senders, ns);
	free(senders);
	stage_free(v, n);
	if (rc < 0) {
		job_fail(mm, j, "cannot queue the staging of checkpoint %" PRIu64 ": %s", r->id,
			 strerror(-rc));
		return -1;
	}
	ckpt_persist(mm, r); /* its new holders */
	slog("job %" PRIu64 ": %zu files of checkpoint %" PRIu64 " move to its nodes from %u "
	       "nodes", j->id, n, r->id, ns);
	return 2;
oom:
	stage_free(v, n);
	job_fail(mm, j, "out of memory");
	return -1;
}

bool ckpt_stage_note(struct mm *mm, struct job *j, int node, const Storm__Cl__JobNote *n)
{
	if (n->kind != STORM__CL__JOB_NOTE__KIND__CHECKPOINT_COPIED &&
	    n->kind != STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED)
		return false;
	char *rest = NULL;
	if (strtoull(n->message, &rest, 10) != j->spec->restore_checkpoint)
		return false;
	if (j->state != STORM__CTL__JOB_STATE__LAUNCHING)
		return true; /* it ended meanwhile */
	while (rest && *rest == ' ')
		rest++;
	struct ckpt_stage *st = j->stage;
	if (n->kind == STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED) {
		free(j->stage);
		j->stage = NULL;
		job_fail(mm, j, "checkpoint %" PRIu64 ": its images could not be moved: %s",
			 j->spec->restore_checkpoint, rest ? rest : "a node failed");
		return true;
	}
	for (uint32_t i = 0; i < st->n; i++)
		if (st->from[i].node == node && !st->from[i].done) {
			st->from[i].done = true;
			st->left--;
		}
	if (st->left)
		return true;
	free(j->stage);
	j->stage = NULL;
	slog("job %" PRIu64 ": the images of checkpoint %" PRIu64 " are on its nodes", j->id,
	       j->spec->restore_checkpoint);
	job_transferred(mm, j);
	return true;
}

/* Every slice: a sender that went down fails the restart it was staging. */
void ckpt_stage_check(struct mm *mm)
{
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (!j->stage || !job_active(j))
			continue;
		if (clock_wall_s() - j->stage->t_start > STAGE_MAX_S) {
			free(j->stage);
			j->stage = NULL;
			job_fail(mm, j, "the images of checkpoint %" PRIu64 " did not reach its nodes "
					"in %.0f s", j->spec->restore_checkpoint, STAGE_MAX_S);
			continue;
		}
		for (uint32_t i = 0; i < j->stage->n; i++) {
			int node = j->stage->from[i].node;
			if (j->stage->from[i].done || node_up(mm, node))
				continue;
			free(j->stage);
			j->stage = NULL;
			job_fail(mm, j, "node %s went down while it moved the images of checkpoint "
					"%" PRIu64, mm->conf.nodes[node], j->spec->restore_checkpoint);
			break;
		}
	}
}

void ckpt_fill_launch(struct mm *mm, struct job *j, Storm__Cl__Launch *l, char **old_dirs)
{
	static char restore_dir[96], files_dir[96];
	struct mm_ckpt *r = ckpt_rec_find(mm, j->spec->restore_checkpoint);
	if (!r)
		return;
	l->restore = true;
	/* staged or not, every node has its ranks' images and the files there */
	ckpt_rec_dir(restore_dir, sizeof(restore_dir), r->job, r->epoch);
	ckpt_rec_dir(files_dir, sizeof(files_dir), r->job, 0);
	l->restore_dir = restore_dir;
	l->files_dir = r->spec->no_bcast ? "" : files_dir;
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
