/* Job life: submission checks, allocation, launch, output, end. */
#include "mm.h"
#include "mpikind.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ended jobs kept in memory for `storm jobs --all`; all of them are in the
 * database (`storm acct`), so memory does not grow with the job count */
#define KEEP_FINISHED 100

void job_destroy(struct job *j)
{
	jobspec_free(j->spec);
	for (int i = 0; i < j->nfds; i++) {
		if (j->fds[i] >= 0)
			close(j->fds[i]);
		free(j->fnames[i]);
	}
	if (j->out_fd >= 0)
		close(j->out_fd);
	free(j->output_path);
	free(j->nodes);
	free(j->rank_status);
	free(j->node_done);
	free(j->trace_state);
	free(j->quiet_read);
	free(j->stage);
	free(j->stdin_held);
	trace_free(j);
	free(j);
}

/* Opens the batch output file with the submitting user's rights. */
static int open_as_user(const struct job *j, const char *path, int *err)
{
	uid_t ou = (uid_t)setfsuid((uid_t)-1);
	gid_t og = (gid_t)setfsgid((gid_t)-1);
	setfsgid(j->spec->gid);
	setfsuid(j->spec->uid);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	*err = errno;
	setfsuid(ou);
	setfsgid(og);
	return fd;
}

/* %j the job id, %A an array's id, %a the task's number (Slurm's) */
static char *expand_output(const char *pattern, const struct job *j)
{
	char out[PATH_MAX];
	size_t w = 0;
	for (const char *p = pattern; *p && w + 24 < sizeof(out); p++) {
		if (p[0] == '%' && (p[1] == 'j' || p[1] == 'A' || p[1] == 'a')) {
			unsigned long long v = p[1] == 'j' ? j->id
					       : p[1] == 'A' ? (j->spec->array_job ? j->spec->array_job : j->id)
							     : j->spec->array_task;
			w += (size_t)snprintf(out + w, sizeof(out) - w, "%llu", v);
			p++;
		} else {
			out[w++] = *p;
		}
	}
	out[w] = '\0';
	return strdup(out);
}

/* The submitter's descriptors: regular files, the program executable, as
 * the user could open them. 0, or -1 with why. */
static int check_descriptors(const Storm__Job__Spec *s, const int *fds, int nfds, char *why,
			     size_t len)
{
	char shown[PATH_MAX];
	for (int i = 0; i < nfds; i++) {
		struct stat st;
		const char *what = (!s->no_bcast && i == 0) ? s->program
							    : s->files[i - (s->no_bcast ? 0 : 1)];
		if (fstat(fds[i], &st) < 0 || !S_ISREG(st.st_mode)) {
			snprintf(why, len, "%s is not a regular file",
				 mm_printable(what, shown, sizeof(shown)));
			return -1;
		}
		if (!s->no_bcast && i == 0 && !s->script && !(st.st_mode & 0111)) {
			snprintf(why, len, "%s is not executable",
				 mm_printable(what, shown, sizeof(shown)));
			return -1;
		}
	}
	return 0;
}

/* A new job of the client's: the description as the user sent it,
 * completed with what only the MM may say (whose job it is, its name, no
 * restart), and the descriptors taken over. NULL when memory runs out. */
static struct job *new_job(const struct client *c, const Storm__Job__Spec *s,
			   const struct submit_plan *plan, int *fds, int nfds, uint64_t id)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->out_fd = -1;
	char user[64], name[64];
	struct passwd *pw = getpwuid(c->uid);
	if (pw)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	else
		snprintf(user, sizeof(user), "%u", (unsigned)c->uid);
	snprintf(name, sizeof(name), "%s", s->name[0] ? s->name : mm_base_name(s->argv[0]));
	Storm__Job__Spec mine = *s;
	mine.user = user;
	mine.uid = c->uid;
	mine.gid = c->gid;
	mine.name = name;
	mine.restore_checkpoint = 0;
	mine.replay_trace = "";
	j->spec = jobspec_dup(&mine);
	j->id = id;
	j->nnodes = plan->nodes;
	j->nranks = plan->ranks;
	j->nodes = calloc(plan->nodes, sizeof(int));
	j->rank_status = malloc(sizeof(int32_t) * plan->ranks);
	j->node_done = calloc(plan->nodes, sizeof(bool));
	if (!j->spec || !j->nodes || !j->rank_status || !j->node_done) {
		job_destroy(j);
		return NULL;
	}
	for (uint32_t r = 0; r < plan->ranks; r++)
		j->rank_status[r] = INT32_MIN;
	for (int i = 0; i < nfds; i++) {
		struct stat st;
		fstat(fds[i], &st);
		j->fds[i] = fds[i];
		fds[i] = -1; /* taken */
		j->fsizes[i] = (uint64_t)st.st_size;
		j->fmodes[i] = st.st_mode & 07777;
		if (i == 0 && s->script && !s->no_bcast)
			j->fmodes[i] |= 0500; /* sbatch runs a script without its x bit */
		const char *nm = (!s->no_bcast && i == 0) ? mm_base_name(s->program)
							  : mm_base_name(s->files[i - (s->no_bcast ? 0 : 1)]);
		j->fnames[i] = strdup(mm_plain_name(nm) ? nm : "program");
		j->nfds = i + 1;
	}
	return j;
}

/* A batch job's output file (-o, or storm-%j.out in its directory), opened
 * with the user's rights. 0, or -1 with why. */
static int open_batch_output(struct job *j, char *why, size_t len)
{
	const Storm__Job__Spec *s = j->spec;
	char pattern[PATH_MAX], shown[PATH_MAX];
	if (s->output[0])
		snprintf(pattern, sizeof(pattern), "%s%s%s", s->output[0] == '/' ? "" : s->cwd,
			 s->output[0] == '/' ? "" : "/", s->output);
	else
		snprintf(pattern, sizeof(pattern), "%s/storm-%s.out", s->cwd,
			 s->array_job ? "%A_%a" : "%j");
	j->output_path = expand_output(pattern, j);
	int err = 0;
	if (j->output_path)
		j->out_fd = open_as_user(j, j->output_path, &err);
	if (j->out_fd >= 0)
		return 0;
	snprintf(why, len, "cannot write the output file %s: %s",
		 mm_printable(j->output_path ? j->output_path : pattern, shown, 400),
		 strerror(err));
	return -1;
}

/* The Submitted reply; the scheduler runs right after it (the reply must
 * come first on the connection), or before it when the job waits, to name
 * its reason. */
static void answer_submitted(struct mm *mm, struct client *c, struct job *j)
{
	bool first_queued = true;
	for (struct job *q = mm->jobs; q && q != j; q = q->next)
		if (q->state == STORM__CTL__JOB_STATE__QUEUED)
			first_queued = false;
	char why[sizeof(j->reason)];
	bool starts = (j->spec->no_bcast || !mm->xfer) &&
		      (jobid_is_step(j->id) ||
		       (first_queued && (int)j->nnodes <= matrix_room(&mm->matrix) &&
			job_eligible(mm, j, why, sizeof(why)) == ELIGIBLE));
	Storm__Ctl__Submitted ok = STORM__CTL__SUBMITTED__INIT;
	ok.job = j->spec->array_job ? j->spec->array_job : j->id;
	ok.state = starts ? "LAUNCHING" : "QUEUED";
	if (!starts) {
		jobs_schedule(mm); /* fills in the reason */
		ok.reason = j->reason;
	}
	ok.output = j->output_path ? j->output_path : "";
	reply_send(mm, c, STORM__CTL__REPLY__BODY_SUBMITTED, &ok);
	if (starts)
		jobs_schedule(mm);
}

static void finish(struct mm *mm, struct job *j);

static void append_job(struct mm *mm, struct job *j)
{
	struct job **tail = &mm->jobs;
	while (*tail)
		tail = &(*tail)->next;
	*tail = j;
}

/* The tasks of an array hold the submitter's descriptors each: the first
 * their own duplicates, the last the originals. */
static int dup_fds(const int *fds, int nfds, int *out)
{
	for (int i = 0; i < nfds; i++)
		if ((out[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0) {
			int err = errno;
			while (i--)
				close(out[i]);
			return -err;
		}
	return 0;
}

/* What a submission asks for that this machine manager does not run: one
 * line in why (true), or false. */
static bool submit_refused(struct mm *mm, const Storm__Ctl__Submit *sub,
			   const Storm__Job__Spec *spec, int *fds, int nfds, char *why, size_t wl)
{
	if (spec->hold && (!spec->interactive || nfds || spec->n_array_tasks || spec->script)) {
		snprintf(why, wl, "an allocation held by storm alloc runs no program");
		return true;
	}
	if ((spec->script || spec->hold) && (spec->restart_on_failure || spec->checkpoint_interval)) {
		snprintf(why, wl, "an allocation is not checkpointed: give its steps "
				  "--checkpoint-interval or --restart-on-failure");
		return true;
	}
	const char *nock = mpi_kind_no_checkpoint(spec->mpi);
	if (nock && (spec->restart_on_failure || spec->checkpoint_interval)) {
		snprintf(why, wl, "the job cannot be checkpointed: %s", nock);
		return true;
	}
	if (spec->n_array_tasks && (spec->interactive || sub->wait)) {
		snprintf(why, wl, "an array is a batch job: no --wait, no storm run");
		return true;
	}
	size_t ntasks = spec->n_array_tasks ? spec->n_array_tasks : 1;
	if (ntasks > 10000 || ntasks * (size_t)(nfds + 1) > mm->fd_room) {
		snprintf(why, wl, "an array of %zu tasks is more than this machine manager "
			 "holds (at most %zu, with %d files each)", ntasks,
			 mm->fd_room / (size_t)(nfds + 1), nfds);
		return true;
	}
	if (!depend_known(mm, spec, why, wl))
		return true;
	return check_descriptors(spec, fds, nfds, why, wl) < 0;
}

/* The checks of a submission before any job is made: ERR_NONE with spec
 * (the client's, the fields ours to set cleared), plan, *alloc (a step's
 * allocation) and *id set; or the code, why in one line. */
static Storm__Ctl__ErrorCode submit_check(struct mm *mm, struct client *c,
					  const Storm__Ctl__Submit *sub, int *fds, int nfds,
					  Storm__Job__Spec *spec, struct submit_plan *plan,
					  struct job **alloc, uint64_t *id, char *why, size_t wl)
{
	if (geteuid() != 0 && c->uid != geteuid()) {
		snprintf(why, wl,
			 "this cluster runs as uid %u and can run only that user's jobs (start it as root to serve others)",
			 (unsigned)geteuid());
		return STORM__CTL__ERROR_CODE__ERR_PERMISSION;
	}
	if (!sub->spec) {
		snprintf(why, wl, "the submission holds no job description");
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	}
	/* ours to set, whatever a client sends */
	*spec = *sub->spec;
	spec->array_job = 0;
	spec->array_task = 0;
	*id = mm->next_job_id;
	Storm__Ctl__ErrorCode code;
	if (spec->allocation) {
		code = alloc_step_check(mm, c, spec, alloc, id, why, wl);
		if (code != STORM__CTL__ERROR_CODE__ERR_NONE)
			return code;
	}
	code = mm_req_check_submit(&mm->conf, spec, nfds, plan, why, wl);
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE)
		return code;
	if (spec->script || spec->hold)
		plan->ranks = 1; /* the script; storm alloc runs nothing */
	if (submit_refused(mm, sub, spec, fds, nfds, why, wl))
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	return STORM__CTL__ERROR_CODE__ERR_NONE;
}

/* A job made queues: its batch output opened, recorded, its client's if
 * the client waits. ERR_NONE, or the code and why. */
static Storm__Ctl__ErrorCode queue_job(struct mm *mm, struct client *c,
				       const Storm__Ctl__Submit *sub, const Storm__Job__Spec *spec,
				       struct job *j, char *why, size_t wl)
{
	if (!spec->interactive && open_batch_output(j, why, wl) < 0)
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	j->t_submit = clock_wall_s();
	/* nothing accepted is lost: on disk before the reply says so */
	if (persist_job_new(mm, j) < 0) {
		snprintf(why, wl,
			 "the machine manager cannot record the job in its database (see its log)");
		return STORM__CTL__ERROR_CODE__ERR_INTERNAL;
	}
	if (c->tcp)
		persist_files_keep(mm, j);
	if (spec->interactive || sub->wait) {
		j->client = c;
		c->job = j;
	}
	metrics_job_submitted(mm);
	return STORM__CTL__ERROR_CODE__ERR_NONE;
}

/* Task t of an array of ntasks (or the job, ntasks 1) made and queued in
 * *out: ERR_NONE, or the code and why (nothing of it is left). */
static Storm__Ctl__ErrorCode submit_task(struct mm *mm, struct client *c,
					 const Storm__Ctl__Submit *sub, const Storm__Job__Spec *spec,
					 struct submit_plan *plan, struct job *alloc, uint64_t id,
					 size_t t, size_t ntasks, int *fds, int nfds, struct job **out,
					 char *why, size_t wl)
{
	Storm__Job__Spec task = *spec;
	int mine[FRAME_MAX_FDS];
	int *use = fds;
	if (spec->n_array_tasks) {
		task.n_array_tasks = 0;
		task.array_tasks = NULL;
		task.array_job = mm->next_job_id - t; /* the first task's id */
		task.array_task = spec->array_tasks[t];
		if (t + 1 < ntasks) {
			int rc = dup_fds(fds, nfds, mine);
			if (rc < 0) {
				snprintf(why, wl, "cannot hold the array's files: %s", strerror(-rc));
				return STORM__CTL__ERROR_CODE__ERR_INTERNAL;
			}
			use = mine;
		}
	}
	struct job *j = new_job(c, &task, plan, use, nfds, spec->allocation ? id : mm->next_job_id);
	if (!j) {
		if (use == mine)
			for (int i = 0; i < nfds; i++)
				close(mine[i]);
		snprintf(why, wl, "out of memory");
		return STORM__CTL__ERROR_CODE__ERR_INTERNAL;
	}
	Storm__Ctl__ErrorCode code = queue_job(mm, c, sub, spec, j, why, wl);
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE) {
		job_destroy(j);
		return code;
	}
	if (alloc)
		alloc->nsteps++;
	else
		mm->next_job_id++;
	append_job(mm, j);
	*out = j;
	return STORM__CTL__ERROR_CODE__ERR_NONE;
}

/* An array that could not be accepted whole: the tasks taken from first
 * on end (ids first: each end may forget older jobs). */
static void refuse_array(struct mm *mm, struct job *first)
{
	size_t n = 0;
	for (struct job *x = first; x; x = x->next)
		n++;
	uint64_t *ids = calloc(n, sizeof(*ids));
	n = 0;
	for (struct job *x = first; x; x = x->next) {
		snprintf(x->reason, sizeof(x->reason), "the rest of its array was refused");
		x->cancelled = true;
		x->state = STORM__CTL__JOB_STATE__CANCELLED; /* the scheduler passes it by */
		if (ids)
			ids[n++] = x->id;
	}
	for (size_t i = 0; i < n; i++) {
		struct job *x = job_find(mm, ids[i]);
		if (x)
			finish(mm, x);
	}
	free(ids);
}

void job_submit(struct mm *mm, struct client *c, const Storm__Ctl__Submit *sub, int *fds,
		int nfds)
{
	char why[512];
	struct submit_plan plan;
	Storm__Job__Spec spec = STORM__JOB__SPEC__INIT;
	struct job *alloc = NULL, *first = NULL, *j = NULL;
	uint64_t id = 0;
	Storm__Ctl__ErrorCode code = submit_check(mm, c, sub, fds, nfds, &spec, &plan, &alloc, &id,
						  why, sizeof(why));
	size_t ntasks = spec.n_array_tasks ? spec.n_array_tasks : 1;
	for (size_t t = 0; code == STORM__CTL__ERROR_CODE__ERR_NONE && t < ntasks; t++) {
		code = submit_task(mm, c, sub, &spec, &plan, alloc, id, t, ntasks, fds, nfds, &j,
				   why, sizeof(why));
		if (code == STORM__CTL__ERROR_CODE__ERR_NONE && !first)
			first = j;
	}
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE) {
		if (first)
			refuse_array(mm, first);
		reply_error(mm, c, code, "%s", why);
		return;
	}
	char shown[32];
	jobid_format(first->id, first->spec->array_job, 0, shown, sizeof(shown));
	slog("job %s%s submitted by %s: %u nodes, %u ranks, %s%s%s", shown,
	     ntasks > 1 ? " (array)" : "", first->spec->user, first->nnodes, first->nranks,
	     first->spec->program, first->spec->no_bcast ? " (no transfer)" : "",
	     spec.script ? " (batch script)" : spec.hold ? " (allocation)" : "");
	answer_submitted(mm, c, first);
}

/* ---- starting */

static void release_nodes(struct mm *mm, struct job *j)
{
	if (!j->t_start)
		return;
	gang_remove(mm, j);
	mm->slot_used[j->slot] = false;
}

static int take_slot(struct mm *mm)
{
	for (int i = 0; i < GM_JOB_SLOTS; i++)
		if (!mm->slot_used[i]) {
			mm->slot_used[i] = true;
			return i;
		}
	return -1;
}

/* The job multicasts files to its nodes before its launch: its program
 * (unless no_bcast) and --file files; a restart's program and files are in
 * its checkpoint, and it sends only the trace a replay --from brings. */
static bool sends_files(const struct job *j)
{
	return j->spec->restore_checkpoint ? j->nfds > 0 : !j->spec->no_bcast;
}

/* Its files are on its nodes (or it sends none): a restart's checkpoint
 * goes there next, then it launches. */
static void files_sent(struct mm *mm, struct job *j)
{
	int in_place = j->spec->restore_checkpoint ? mm->ckpt_hooks->restart_prepare(mm, j) : 1;
	/* else failed, saying why; or its images move to its nodes first, and
	 * the end of that launches it (ckpt_stage_note) */
	if (in_place == 1)
		job_transferred(mm, j);
}

static void start(struct mm *mm, struct job *j)
{
	struct job *a = NULL;
	if (jobid_is_step(j->id) &&
	    (!(a = alloc_of(mm, j)) || a->state != STORM__CTL__JOB_STATE__RUNNING)) {
		job_fail(mm, j, "its allocation %llu ended", (unsigned long long)jobid_alloc(j->id));
		return;
	}
	int slot = take_slot(mm);
	if (slot < 0)
		return;
	if (a) {
		/* a step: the allocation's first nodes, in its cells of the matrix */
		memcpy(j->nodes, a->nodes, sizeof(int) * j->nnodes);
	} else if (gang_place(mm, j) < 0) {
		mm->slot_used[slot] = false;
		return;
	}
	j->slot = (uint32_t)slot;
	j->state = STORM__CTL__JOB_STATE__LAUNCHING;
	j->t_start = clock_wall_s();
	j->reason[0] = '\0';
	sn_set_clear(&j->set);
	const char **names = malloc(sizeof(char *) * j->nnodes);
	for (uint32_t k = 0; k < j->nnodes; k++) {
		sn_set_add(&j->set, fabric_id((uint32_t)j->nodes[k]));
		if (names)
			names[k] = mm->conf.nodes[j->nodes[k]];
	}
	if (names)
		hostlist_compress(names, (int)j->nnodes, j->nodelist, sizeof(j->nodelist));
	free(names);
	slog("job %llu starts on %s in row %d", (unsigned long long)j->id, j->nodelist,
	       gang_home(mm, j));
	persist_job(mm, j);
	if (!sends_files(j))
		files_sent(mm, j);
	else if (transfer_start(mm, j) < 0)
		job_fail(mm, j, "cannot start the program transfer: out of memory");
}

/* First come, first served among the jobs that may start: one that finds
 * no room holds back those after it. A job waiting on a dependency or on
 * its array's limit holds back nobody, and a step needs only its
 * allocation, so neither waits behind the queue. */
void jobs_schedule(struct mm *mm)
{
	if (mm->shutting_down)
		return;
	bool blocked = false;
	uint64_t never[64];
	int nnever = 0;
	mm->jobs_waiting = false;
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (j->state != STORM__CTL__JOB_STATE__QUEUED)
			continue;
		bool step = jobid_is_step(j->id);
		if (!step) {
			enum eligible e = job_eligible(mm, j, j->reason, sizeof(j->reason));
			if (e == NEVER && nnever < 64)
				never[nnever++] = j->id;
			if (e != ELIGIBLE) {
				mm->jobs_waiting = true;
				continue;
			}
			if (blocked) {
				snprintf(j->reason, sizeof(j->reason), "waiting for the jobs before it");
				continue;
			}
		}
		if (sends_files(j) && mm->xfer) {
			snprintf(j->reason, sizeof(j->reason), "waiting for another job's transfer");
			blocked |= !step;
			continue;
		}
		start(mm, j);
		if (j->state == STORM__CTL__JOB_STATE__QUEUED && !step) {
			gang_waiting_reason(mm, j, j->reason, sizeof(j->reason));
			blocked = true;
		}
	}
	/* ended after the walk: an end forgets old jobs and schedules again */
	for (int i = 0; i < nnever; i++) {
		struct job *j = job_find(mm, never[i]);
		if (!j || j->state != STORM__CTL__JOB_STATE__QUEUED)
			continue;
		slog("job %llu: %s; it will not run", (unsigned long long)j->id, j->reason);
		j->cancelled = true;
		finish(mm, j);
	}
}

/* ---- rank 0's standard input */

#define STDIN_MSG_MAX (16u << 10)
#define STDIN_HELD_MAX (80u << 10) /* the CLI's 64 KiB window and a message */

static void send_stdin(struct mm *mm, struct job *j, const uint8_t *data, size_t len, bool eof)
{
	Storm__Cl__Stdin s = STORM__CL__STDIN__INIT;
	s.job = j->id;
	s.data.data = (uint8_t *)data;
	s.data.len = len;
	s.eof = eof;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_STDIN;
	cmd.stdin = &s;
	int rc = cmd_queue(mm, &cmd, &j->nodes[0], 1); /* rank 0's node */
	if (rc < 0)
		slog("job %llu: cannot queue its stdin: %s", (unsigned long long)j->id, strerror(-rc));
}

/* Slurm's block distribution: the first (ranks % nodes) nodes get one more. */
void job_transferred(struct mm *mm, struct job *j)
{
	j->t_transferred = clock_wall_s();
	uint32_t ln = job_launch_nodes(j);
	if (ln == 0) { /* storm alloc: the allocation is all there is */
		j->state = STORM__CTL__JOB_STATE__RUNNING;
		j->t_launched = clock_wall_s();
		metrics_job_launched(mm, j);
		persist_job(mm, j);
		j->ran = gang_runs_now(mm, j);
		if (j->client) {
			Storm__Ctl__Allocated al = STORM__CTL__ALLOCATED__INIT;
			al.job = j->id;
			al.nodelist = j->nodelist;
			al.nodes = j->nnodes;
			reply_send(mm, j->client, STORM__CTL__REPLY__BODY_ALLOCATED, &al);
		}
		return;
	}
	Storm__Cl__Launch l = STORM__CL__LAUNCH__INIT;
	uint32_t first[ln], count[ln];
	uint32_t base = j->nranks / ln, extra = j->nranks % ln, r = 0;
	for (uint32_t k = 0; k < ln; k++) {
		first[k] = r;
		count[k] = base + (k < extra);
		r += count[k];
	}
	l.job = j->id;
	l.slot = j->slot;
	l.ranks = j->nranks;
	l.first_rank = first;
	l.n_first_rank = ln;
	l.rank_count = count;
	l.n_rank_count = ln;
	l.spec = j->spec;
	l.alloc_nodelist = j->nodelist;
	l.alloc_nodes = j->nnodes;
	/* a step of an array's task is told the task's place, as Slurm's are */
	const struct job *a = jobid_is_step(j->id) ? alloc_of(mm, j) : NULL;
	if (a) {
		l.alloc_array_job = a->spec->array_job;
		l.alloc_array_task = a->spec->array_task;
	}
	Storm__Cl__JobFile files[FRAME_MAX_FDS], *fptr[FRAME_MAX_FDS];
	for (int i = 0; i < j->nfds; i++) {
		storm__cl__job_file__init(&files[i]);
		files[i].name = j->fnames[i];
		files[i].size = j->fsizes[i];
		files[i].mode = j->fmodes[i];
		fptr[i] = &files[i];
	}
	l.files = fptr;
	l.n_files = (size_t)j->nfds;
	l.exec_path = j->spec->no_bcast ? j->spec->program : "";
	char *old_dirs[STORM_MAX_NODES > 64 ? 64 : STORM_MAX_NODES];
	if (j->spec->restore_checkpoint)
		mm->ckpt_hooks->fill_launch(mm, j, &l, old_dirs);
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_LAUNCH;
	cmd.launch = &l;
	int rc = cmd_queue(mm, &cmd, j->nodes, ln);
	if (rc < 0) {
		job_fail(mm, j, "cannot queue the launch command: %s", strerror(-rc));
		return;
	}
	if (j->spec->restore_checkpoint)
		for (size_t i = 0; i < l.n_old_dirs; i++)
			free(old_dirs[i]);
	j->state = STORM__CTL__JOB_STATE__RUNNING;
	j->t_launched = clock_wall_s();
	metrics_job_launched(mm, j);
	if (j->stdin_held_len || j->stdin_held_eof) {
		/* after the Launch in the ring, so the node has the job */
		for (size_t off = 0; off < j->stdin_held_len || j->stdin_held_eof;) {
			size_t n = j->stdin_held_len - off < STDIN_MSG_MAX ? j->stdin_held_len - off
									   : STDIN_MSG_MAX;
			bool last = off + n == j->stdin_held_len;
			send_stdin(mm, j, j->stdin_held + off, n, last && j->stdin_held_eof);
			off += n;
			if (last)
				break;
		}
		free(j->stdin_held);
		j->stdin_held = NULL;
		j->stdin_held_len = 0;
		j->stdin_held_eof = false;
	}
	if (j->spec->checkpoint_interval)
		j->ckpt_next = j->t_launched + j->spec->checkpoint_interval;
	persist_job(mm, j);
	/* launched into the running row: it runs from its first strobe */
	j->ran = gang_runs_now(mm, j);
}

/* ---- ending */

static int32_t status_code(int32_t ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return 1;
}

/* An allocation's end ends its steps: queued ones at once, running ones
 * stopped like it. */
static void stop_job(struct mm *mm, struct job *j, int sig, unsigned kill_after_ms);
static void stop_steps(struct mm *mm, struct job *a, int sig, unsigned kill_after_ms)
{
	if (!a->spec->script && !a->spec->hold)
		return;
	uint64_t ids[GM_JOB_SLOTS + 64];
	size_t n = alloc_steps(mm, a, ids, sizeof(ids) / sizeof(ids[0]));
	for (size_t i = 0; i < n; i++) {
		struct job *s = job_find(mm, ids[i]);
		if (!s || !job_active(s) || s->cancelled || s->failed)
			continue;
		snprintf(s->reason, sizeof(s->reason), "its allocation %llu ended",
			 (unsigned long long)a->id);
		s->cancelled = true;
		stop_job(mm, s, sig, kill_after_ms);
	}
}

static void finish(struct mm *mm, struct job *j)
{
	stop_steps(mm, j, SIGKILL, 0);
	j->t_end = clock_wall_s();
	mm->ckpt_hooks->ending(mm, j);
	int32_t code = j->abort_code ? j->abort_code - 1 : 0;
	for (uint32_t r = 0; !j->abort_code && r < j->nranks; r++)
		if (j->rank_status[r] != INT32_MIN && status_code(j->rank_status[r]) != 0) {
			code = status_code(j->rank_status[r]);
			break;
		}
	if (code == 0 && (j->failed || j->cancelled || j->timed_out))
		code = 1; /* ended early without a rank saying why */
	j->exit_status = code;
	j->state = j->cancelled ? STORM__CTL__JOB_STATE__CANCELLED
		   : j->timed_out ? STORM__CTL__JOB_STATE__TIMEOUT
		   : (j->failed || code) ? STORM__CTL__JOB_STATE__FAILED
					 : STORM__CTL__JOB_STATE__COMPLETED;
	if (j->state == STORM__CTL__JOB_STATE__FAILED && !j->reason[0])
		for (uint32_t r = 0; r < j->nranks; r++)
			if (j->rank_status[r] != INT32_MIN && status_code(j->rank_status[r])) {
				int ws = j->rank_status[r];
				if (WIFSIGNALED(ws))
					snprintf(j->reason, sizeof(j->reason), "rank %u killed by signal %d (%s)",
						 r, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
				else
					snprintf(j->reason, sizeof(j->reason), "rank %u exited with status %d",
						 r, WEXITSTATUS(ws));
				break;
			}
	persist_job_end(mm, j);
	metrics_job_ended(mm, j);
	trace_job_end(mm, j);
	release_nodes(mm, j);
	if (mm->xfer)
		transfer_abort(mm, j);
	slog("job %llu ended: %s, exit %d%s%s", (unsigned long long)j->id,
	       protobuf_c_enum_descriptor_get_value(&storm__ctl__job_state__descriptor, j->state)->name,
	       code, j->reason[0] ? ", " : "", j->reason);
	if (j->client) {
		Storm__Ctl__JobEnd e = STORM__CTL__JOB_END__INIT;
		e.job = j->id;
		e.state = j->state;
		e.exit_status = code;
		e.reason = j->reason;
		Storm__Ctl__RankEnd *re = calloc(j->nranks, sizeof(*re));
		Storm__Ctl__RankEnd **rp = calloc(j->nranks, sizeof(*rp));
		size_t n = 0;
		for (uint32_t r = 0; re && rp && r < j->nranks; r++)
			if (j->rank_status[r] != INT32_MIN) {
				storm__ctl__rank_end__init(&re[n]);
				re[n].rank = r;
				re[n].wait_status = j->rank_status[r];
				rp[n] = &re[n];
				n++;
			}
		e.ranks = rp;
		e.n_ranks = n;
		e.transfer_ms = j->t_transferred && !j->spec->no_bcast ? (j->t_transferred - j->t_start) * 1e3 : 0;
		e.execute_ms = j->t_launched ? (j->t_end - j->t_launched) * 1e3 : 0;
		e.total_ms = (j->t_end - j->t_submit) * 1e3;
		struct client *c = j->client;
		j->client = NULL;
		c->job = NULL;
		reply_send(mm, c, STORM__CTL__REPLY__BODY_END, &e);
		client_finish(mm, c);
		free(re);
		free(rp);
	}
	if (j->out_fd >= 0) {
		if (j->reason[0] && (j->failed || j->cancelled || j->timed_out))
			dprintf(j->out_fd, "storm: job %llu: %s\n", (unsigned long long)j->id, j->reason);
		close(j->out_fd);
		j->out_fd = -1;
	}
	for (int i = 0; i < j->nfds; i++)
		if (j->fds[i] >= 0) {
			close(j->fds[i]);
			j->fds[i] = -1;
		}
	/* forget the oldest ended jobs beyond the limit */
	int ended = 0;
	for (struct job **pp = &mm->jobs; *pp;) {
		struct job *x = *pp;
		if (!job_active(x) && ++ended > KEEP_FINISHED && x != j) {
			*pp = x->next;
			job_destroy(x);
			continue;
		}
		pp = &x->next;
	}
	jobs_schedule(mm);
}

static void end_answer(struct mm *mm, uint64_t id, uint64_t unused,
		       const struct sn_caw_result *res);
static void quiet_answer(struct mm *mm, uint64_t id, uint64_t unused,
			 const struct sn_caw_result *res);

/* job_end_combined: the job's first node said DONE and others did not:
 * they may have ended quietly (every rank exited 0), which only their done
 * words say. One read over the job's live nodes, which also sums their
 * accounting pairs (a node that reported has zeroed its pair; one an
 * earlier read found quiet is not asked again, its pair counted); asked
 * again a slice after a false answer, then at doubling intervals up to
 * report_every slices. */
static void read_quiet(struct mm *mm, struct job *j)
{
	if (mm->slice < j->quiet_next) {
		j->confirm_again = true; /* jobs_check_time, each slice */
		return;
	}
	j->confirm_again = false;
	struct sn_nodeset live;
	sn_set_clear(&live);
	bool asks = false;
	for (uint32_t k = 0; k < job_launch_nodes(j); k++)
		if (mm->nodes[j->nodes[k]].state == STORM__CTL__NODE_STATE__UP &&
		    !(j->quiet_read && j->quiet_read[k])) {
			sn_set_add(&live, fabric_id((uint32_t)j->nodes[k]));
			asks = asks || !j->node_done[k];
		}
	/* a node neither done nor UP: it is asked once UP (after a restart of
	 * the MM, at its first report), or liveness makes it DOWN, which ends
	 * the job */
	if (!asks) {
		j->confirm_again = true;
		return;
	}
	/* test point end_check, as in check_end: the MM stops two strobes
	 * after the first node's DONE was saved and the read started */
	if (fault_hit(&mm->fault, "end_check", j->id)) {
		slog("test hook: job %llu's read of its nodes' ends starts; the MM stops in "
		     "two strobes", (unsigned long long)j->id);
		mm->fault_stop_in = 2;
	}
	j->quiet_set = live;
	if (mm_query_gather(mm, &live, GM_VAR_DONE(j->slot), SN_EQ, j->id, GM_VAR_END_ACCT(j->slot),
			    quiet_answer, j->id, 0) == 0) {
		j->confirm_pending = true;
		return;
	}
	slog("job %llu: read of its nodes' ends not started: %s", (unsigned long long)j->id,
	     sn_strerror(mm->sn));
	j->confirm_again = true;
}

static void node_is_done(struct job *j, int k);

/* Node k of j ended it quietly: each of its ranks exited 0 (the block
 * distribution of the Launch says which they are: job_transferred) */
static void mark_quiet(struct job *j, uint32_t k)
{
	uint32_t ln = job_launch_nodes(j), base = j->nranks / ln, extra = j->nranks % ln;
	uint32_t first = k * base + (k < extra ? k : extra), count = base + (k < extra);
	for (uint32_t i = first; i < first + count; i++)
		if (j->rank_status[i] == INT32_MIN) {
			j->rank_status[i] = 0;
			j->ranks_ended++;
		}
	if (!j->quiet_read)
		j->quiet_read = calloc(j->nnodes, sizeof(bool));
	if (j->quiet_read)
		j->quiet_read[k] = true;
	if (!j->trace_state)
		j->trace_state = calloc(j->nnodes, 1);
	if (j->trace_state && j->trace_state[k] == TRACE_UNKNOWN)
		j->trace_state[k] = TRACE_OWED;
	node_is_done(j, (int)k);
}

/* The job a read of quiet ends answers for, its read no longer pending;
 * NULL if the answer is stale or the job already ended. */
static struct job *answered(struct mm *mm, uint64_t id)
{
	struct job *j = job_find(mm, id);
	if (!j || !j->confirm_pending || mm->fault_stop_in)
		return NULL;
	j->confirm_pending = false;
	return job_active(j) ? j : NULL;
}

/* the quiet nodes' accounting pair, summed and maxed by the read */
static void add_quiet_acct(struct job *j, const struct sn_caw_result *res)
{
	j->cpu_us += res->sum;
	if (res->max > j->max_rss_kb)
		j->max_rss_kb = res->max;
	j->dirty = true;
}

static void quiet_answer(struct mm *mm, uint64_t id, uint64_t unused,
			 const struct sn_caw_result *res)
{
	(void)unused;
	struct job *j = answered(mm, id);
	if (!j)
		return;
	j->quiet_answers++;
	if (res->status != 1) {
		unsigned every = mm->conf.report_every;
		j->quiet_wait = j->quiet_wait ? j->quiet_wait * 2 : 1;
		if (j->quiet_wait > every)
			j->quiet_wait = every;
		j->quiet_next = mm->slice + j->quiet_wait;
		j->confirm_again = true;
		return;
	}
	/* each node asked that had not reported ended quietly */
	uint32_t ln = job_launch_nodes(j);
	for (uint32_t k = 0; k < ln; k++)
		if (!j->node_done[k] && sn_set_has(&j->quiet_set, fabric_id((uint32_t)j->nodes[k])))
			mark_quiet(j, k);
	add_quiet_acct(j, res);
	/* the read held every live node's done word: the end is confirmed;
	 * a node neither done nor UP then is read once it is UP again */
	if (j->nodes_done >= ln) {
		finish(mm, j);
		return;
	}
	j->confirm_again = true;
	char waiting[256] = "";
	size_t w = 0;
	for (uint32_t k = 0; k < ln && w + 12 < sizeof(waiting); k++)
		if (!j->node_done[k])
			w += (size_t)snprintf(waiting + w, sizeof(waiting) - w, " %s",
					      mm->conf.nodes[j->nodes[k]]);
	slog("job %llu: %u of %u nodes have ended it; waiting for the rest, not UP:%s",
	     (unsigned long long)j->id, j->nodes_done, ln, waiting);
}

static int job_node_pos(const struct job *j, int node);
static void check_end(struct mm *mm, struct job *j);

static void unlisted_answer(struct mm *mm, uint64_t id, uint64_t node,
			    const struct sn_caw_result *res)
{
	struct job *j = answered(mm, id);
	if (!j)
		return;
	int k = job_node_pos(j, (int)node);
	if (k >= 0 && !j->node_done[k] && res->status == 1) {
		mark_quiet(j, (uint32_t)k);
		add_quiet_acct(j, res);
	} else if (k >= 0 && !j->node_done[k] && res->status == 0) {
		char why[256];
		snprintf(why, sizeof(why),
			 "node %s never received its launch command (the machine manager "
			 "restarted during the launch)", mm->conf.nodes[node]);
		job_node_failed(mm, j, (int)node, why);
		return;
	}
	/* no answer: its next report asks again, or liveness makes it DOWN */
	check_end(mm, j);
}

void job_node_unlisted(struct mm *mm, struct job *j, int node, const char *why)
{
	int k = job_node_pos(j, node);
	if (!mm->conf.job_end_combined || k < 0) {
		job_node_failed(mm, j, node, why);
		return;
	}
	if (j->confirm_pending || j->node_done[k])
		return; /* a read is out: the node's next report asks again */
	sn_set_clear(&j->quiet_set);
	sn_set_add(&j->quiet_set, fabric_id((uint32_t)node));
	if (mm_query_gather(mm, &j->quiet_set, GM_VAR_DONE(j->slot), SN_EQ, j->id,
			    GM_VAR_END_ACCT(j->slot), unlisted_answer, j->id, (uint64_t)node) == 0)
		j->confirm_pending = true;
}

/* Every node of the job said DONE (or is gone): confirm with one
 * COMPARE-AND-WRITE over the live ones that each one's done variable holds
 * the job; its answer (end_answer) ends the job. */
static void check_end(struct mm *mm, struct job *j)
{
	uint32_t ln = job_launch_nodes(j);
	if (!job_active(j) || j->confirm_pending)
		return;
	if (mm->acks_due && mm->conf.job_end_combined) {
		/* the DONE just consumed is written into its node's done word
		 * once acknowledged: read after the acknowledgements go out */
		j->check_due = true;
		return;
	}
	if (j->nodes_done < ln) {
		if (mm->conf.job_end_combined && j->node_done[0] && j->t_launched)
			read_quiet(mm, j);
		return;
	}
	/* storm alloc's allocation: until its shell is done, or it is stopped */
	if (!ln && !j->released && !j->cancelled && !j->failed && !j->timed_out)
		return;
	struct sn_nodeset live;
	sn_set_clear(&live);
	for (uint32_t k = 0; k < ln; k++)
		if (mm->nodes[j->nodes[k]].state == STORM__CTL__NODE_STATE__UP)
			sn_set_add(&live, fabric_id((uint32_t)j->nodes[k]));
	if (j->t_launched && !j->failed && ln && sn_set_count(&live)) {
		/* patience from the first ask of this check (confirm_again
		 * may also be the read of quiet ends' retry, before it) */
		if (!j->confirm_again || !j->end_asked)
			j->end_asked = clock_wall_s();
		j->confirm_again = false;
		/* the MM then stops two strobes later (slice.c), as a kill -9
		 * would: every node's DONE saved and acknowledged, the job's
		 * end not (tests restart the MM after it) */
		if (fault_hit(&mm->fault, "end_check", j->id)) {
			slog("test hook: job %llu's termination check starts; the MM stops in "
			     "two strobes", (unsigned long long)j->id);
			mm->fault_stop_in = 2;
		}
		/* no write: the MM is the only reader, and a stale job id in a
		 * slot never equals the next job's */
		if (mm_query(mm, &live, GM_VAR_DONE(j->slot), SN_EQ, j->id, end_answer, j->id, 0) ==
		    0) {
			j->confirm_pending = true;
			return;
		}
		slog("job %llu: termination check not started: %s", (unsigned long long)j->id,
		     sn_strerror(mm->sn));
	}
	finish(mm, j);
}

void job_end_if_done(struct mm *mm, struct job *j)
{
	check_end(mm, j);
}

/* How long a job whose end is not confirmed is asked again: a node that
 * does not answer is declared DOWN by then, and leaves the set asked. */
static double end_patience_s(const struct mm *mm)
{
	return (mm->conf.down_after_ms + 2.0 * mm->conf.op_timeout_ms) / 1e3;
}

static void end_answer(struct mm *mm, uint64_t id, uint64_t unused,
		       const struct sn_caw_result *res)
{
	(void)unused;
	struct job *j = job_find(mm, id);
	if (!j || !j->confirm_pending || mm->fault_stop_in)
		return; /* (test point end_check: the answer dies with the MM) */
	j->confirm_pending = false;
	if (!job_active(j))
		return;
	if (res->status == 1 || j->failed) {
		finish(mm, j);
		return;
	}
	char why[300];
	if (res->status == 0) {
		snprintf(why, sizeof(why), "a node's done variable does not hold the job");
	} else {
		char names[256] = "";
		size_t w = 0;
		for (uint32_t f = sn_set_next(&res->failed, 0); f != UINT32_MAX && w + 70 < sizeof(names);
		     f = sn_set_next(&res->failed, f + 1))
			if (f >= 1 && (int)f <= mm->conf.nnodes)
				w += (size_t)snprintf(names + w, sizeof(names) - w, "%s%s",
						      w ? "," : "", mm->conf.nodes[f - 1]);
		snprintf(why, sizeof(why), "node(s) %s did not answer", names[0] ? names : "?");
	}
	if (clock_wall_s() - j->end_asked < end_patience_s(mm)) {
		slog("job %llu: termination check: %s; asking again", (unsigned long long)j->id, why);
		j->confirm_again = true; /* jobs_check_time, next slice */
		return;
	}
	job_fail(mm, j, "its end was not confirmed: %s", why); /* ends it (check_end) */
	if (job_active(j))
		finish(mm, j);
}

static int job_node_pos(const struct job *j, int node);

/* A node of the job is done with it: said so, failed, or gone. Only the
 * nodes its ranks run on count towards its end. */
static void node_is_done(struct job *j, int k)
{
	if (j->node_done[k])
		return;
	j->node_done[k] = true;
	if ((uint32_t)k < job_launch_nodes(j))
		j->nodes_done++;
}

static void send_signal(struct mm *mm, uint64_t id, int sig, unsigned kill_after_ms,
			const int *targets, size_t n)
{
	Storm__Cl__Signal sg = STORM__CL__SIGNAL__INIT;
	sg.job = id;
	sg.signal = sig;
	sg.kill_after_ms = kill_after_ms;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_SIGNAL;
	cmd.signal = &sg;
	cmd_queue(mm, &cmd, targets, n);
}

/* Only UP nodes get commands; a node not UP now but not done with the job
 * either (after an MM restart, one not heard from yet) gets the signal when
 * it comes UP (jobs_node_up): a command sent before it saw the new MM's
 * epoch would be dropped with the old ring, and its ranks would run on. */
static void signal_nodes(struct mm *mm, struct job *j, int sig, unsigned kill_after_ms)
{
	j->stop_sig = sig;
	j->stop_kill_after_ms = kill_after_ms;
	int targets[j->nnodes];
	size_t n = 0;
	for (uint32_t k = 0; k < job_launch_nodes(j); k++)
		if (!j->node_done[k] && mm->nodes[j->nodes[k]].state == STORM__CTL__NODE_STATE__UP)
			targets[n++] = j->nodes[k];
	if (n)
		send_signal(mm, j->id, sig, kill_after_ms, targets, n);
}

void jobs_node_up(struct mm *mm, int idx)
{
	for (struct job *j = mm->jobs; j; j = j->next) {
		int k = job_active(j) && j->stop_sig ? job_node_pos(j, idx) : -1;
		if (k < 0 || (uint32_t)k >= job_launch_nodes(j) || j->node_done[k])
			continue;
		slog("job %llu: node %s is back; it gets the signal that stops the job",
		       (unsigned long long)j->id, mm->conf.nodes[idx]);
		send_signal(mm, j->id, j->stop_sig, j->stop_kill_after_ms, &idx, 1);
	}
}

/* Before the launch command went out no rank exists; after it, wait for
 * the nodes to report their ranks' ends. */
static void stop_job(struct mm *mm, struct job *j, int sig, unsigned kill_after_ms)
{
	stop_steps(mm, j, sig, kill_after_ms);
	if (j->state == STORM__CTL__JOB_STATE__QUEUED ||
	    j->state == STORM__CTL__JOB_STATE__LAUNCHING) {
		if (j->state == STORM__CTL__JOB_STATE__LAUNCHING)
			signal_nodes(mm, j, SIGKILL, 0); /* nodes drop partial files */
		finish(mm, j);
		return;
	}
	signal_nodes(mm, j, sig, kill_after_ms);
	check_end(mm, j);
}

void job_fail(struct mm *mm, struct job *j, const char *fmt, ...)
{
	if (!job_active(j))
		return;
	if (!j->failed && !j->cancelled) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(j->reason, sizeof(j->reason), fmt, ap);
		va_end(ap);
	}
	bool first = !j->failed;
	j->failed = true;
	if (first)
		stop_job(mm, j, SIGKILL, 0);
}

void jobs_check_due(struct mm *mm)
{
	uint64_t ids[64];
	int n = 0;
	for (struct job *j = mm->jobs; j && n < 64; j = j->next)
		if (j->check_due)
			ids[n++] = j->id;
	for (int i = 0; i < n; i++) {
		struct job *j = job_find(mm, ids[i]);
		if (j && j->check_due) {
			j->check_due = false;
			check_end(mm, j);
		}
	}
}

void jobs_check_time(struct mm *mm)
{
	jobs_check_due(mm); /* any held past the 64 a turn takes */
	double now = clock_wall_s();
	/* ids first: ending a job (at once, or a job that never launched)
	 * changes the list */
	uint64_t ids[64];
	int n = 0;
	for (struct job *j = mm->jobs; j && n < 64; j = j->next)
		if (j->confirm_again && job_active(j))
			ids[n++] = j->id;
	for (int i = 0; i < n; i++) {
		struct job *j = job_find(mm, ids[i]);
		if (j && j->confirm_again && job_active(j))
			check_end(mm, j);
	}
	n = 0;
	/* a storm alloc allocation taken back from the database after a restart
	 * of the MM: its storm alloc lost its connection and ended its command,
	 * so nothing holds it any more */
	for (struct job *j = mm->jobs; j && n < 64; j = j->next)
		if (j->spec->hold && j->recovered && !j->client && job_active(j) && !j->released)
			ids[n++] = j->id;
	for (int i = 0; i < n; i++) {
		struct job *j = job_find(mm, ids[i]);
		if (!j)
			continue;
		slog("job %llu: its storm alloc went with the earlier machine manager; ending it",
		     (unsigned long long)j->id);
		j->released = true;
		stop_job(mm, j, SIGKILL, 0);
	}
	n = 0;
	for (struct job *j = mm->jobs; j && n < 64; j = j->next)
		if (j->spec->time_limit && j->t_start > 0 && !j->timed_out && !j->cancelled &&
		    !j->failed && (j->state == STORM__CTL__JOB_STATE__LAUNCHING ||
				   j->state == STORM__CTL__JOB_STATE__RUNNING) &&
		    now - j->t_start >= j->spec->time_limit)
			ids[n++] = j->id;
	for (int i = 0; i < n; i++) {
		struct job *j = job_find(mm, ids[i]);
		if (!j)
			continue;
		char limit[32];
		uint32_t t = j->spec->time_limit;
		snprintf(limit, sizeof(limit), "%u:%02u:%02u", t / 3600, t / 60 % 60, t % 60);
		snprintf(j->reason, sizeof(j->reason), "time limit %s reached", limit);
		j->timed_out = true;
		slog("job %llu: %s; stopping it", (unsigned long long)j->id, j->reason);
		stop_job(mm, j, SIGTERM, mm->conf.kill_wait_ms);
	}
}

void job_cancel(struct mm *mm, struct job *j, int sig, const char *who)
{
	if (!j->cancelled && !j->failed)
		snprintf(j->reason, sizeof(j->reason), "cancelled by %s", who);
	j->cancelled = true;
	stop_job(mm, j, sig ? sig : SIGTERM, sig ? 0 : mm->conf.kill_wait_ms);
}

void job_client_gone(struct mm *mm, struct job *j)
{
	/* like srun: an interactive job dies with its client; a batch job
	 * whose `submit --wait` went away runs on */
	if (job_active(j) && j->spec->hold) {
		/* storm alloc's shell is done: the allocation ends, its steps with it */
		j->released = true;
		stop_job(mm, j, SIGKILL, 0);
	} else if (job_active(j) && j->out_fd < 0)
		job_cancel(mm, j, SIGKILL, "the end of its storm run");
}

void jobs_end_all(struct mm *mm, const char *why)
{
	for (struct job *j = mm->jobs; j; j = j->next)
		if (job_active(j)) {
			snprintf(j->reason, sizeof(j->reason), "%s", why);
			j->failed = true;
			finish(mm, j);
		}
}

static int job_node_pos(const struct job *j, int node)
{
	for (uint32_t k = 0; k < j->nnodes; k++)
		if (j->nodes[k] == node)
			return (int)k;
	return -1;
}

bool job_runs_on(struct mm *mm, uint64_t id, int idx)
{
	struct job *j = job_find(mm, id);
	return j && job_active(j) && job_node_pos(j, idx) >= 0;
}

bool job_waits_on(struct mm *mm, uint64_t id, int idx)
{
	struct job *j = job_find(mm, id);
	int k = j && job_active(j) ? job_node_pos(j, idx) : -1;
	return k >= 0 && !j->node_done[k];
}

void job_kill_stray(struct mm *mm, uint64_t id, int idx)
{
	struct mm_node *n = &mm->nodes[idx];
	/* once, and again only if it is still there 100 slices later */
	if (n->orphan_killed == id && mm->slice - n->orphan_slice < 100)
		return;
	n->orphan_killed = id;
	n->orphan_slice = mm->slice;
	slog("node %s still runs job %llu, which the manager does not run there; killing it",
	       mm->conf.nodes[idx], (unsigned long long)id);
	send_signal(mm, id, SIGKILL, 0, &idx, 1);
}

void job_node_failed(struct mm *mm, struct job *j, int node, const char *why)
{
	int k = job_node_pos(j, node);
	/* once a node: a restarted daemon fails its jobs, then makes the node
	 * DOWN, which fails them again (a second restart, with a job that
	 * already failed there). A node that reported its part done still
	 * fails the job: the job's ranks elsewhere may wait on the ones it
	 * ran, and die with the job only. */
	if (k < 0 || !job_active(j) || sn_set_has(&j->lost, (uint32_t)node))
		return;
	sn_set_add(&j->lost, (uint32_t)node);
	node_is_done(j, k);
	trace_bcs_node_lost(mm, j, node);
	/* with --restart-on-failure a restart job takes over from its latest
	 * checkpoint; why names the node, the end says what became of the job */
	uint64_t again = mm->ckpt_hooks->node_lost(mm, j, why);
	if (again)
		job_fail(mm, j, "%s; restarted from its latest checkpoint as job %llu", why,
			 (unsigned long long)again);
	else
		job_fail(mm, j, "%s; the job was terminated", why);
	check_end(mm, j);
}

void job_node_lost(struct mm *mm, struct job *j, int node)
{
	char why[256];
	const struct mm_node *n = &mm->nodes[node];
	if (n->heard_time > 0)
		snprintf(why, sizeof(why),
			 "node %s stopped responding (no report for %.1f s)",
			 mm->conf.nodes[node], clock_wall_s() - n->heard_time);
	else
		snprintf(why, sizeof(why), "node %s did not report since the machine manager "
			 "restarted", mm->conf.nodes[node]);
	job_node_failed(mm, j, node, why);
}

/* ---- reports */

/* To storm run, or into the batch output file. */
static void job_output(struct mm *mm, struct job *j, uint32_t rank, bool err,
		       ProtobufCBinaryData data)
{
	if (j->out_fd < 0 && j->client) {
		Storm__Ctl__Output out = STORM__CTL__OUTPUT__INIT;
		out.job = j->id;
		out.rank = rank;
		out.stream = err ? STORM__CTL__STREAM__STDERR : STORM__CTL__STREAM__STDOUT;
		out.data = data;
		reply_send(mm, j->client, STORM__CTL__REPLY__BODY_OUTPUT, &out);
	} else if (j->out_fd >= 0) { /* batch */
		const uint8_t *p = data.data;
		size_t left = data.len;
		while (left) {
			ssize_t w = write(j->out_fd, p, left);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				slog("job %llu: writing %s: %s", (unsigned long long)j->id,
				       j->output_path, strerror(errno));
				break;
			}
			p += w;
			left -= (size_t)w;
		}
	}
}

void job_on_output(struct mm *mm, int node, const Storm__Cl__Output *o)
{
	struct job *j = job_find(mm, o->job);
	/* as for exits: only a rank of the job, from a node of the job (a bogus
	 * rank would make `storm run --label` allocate per rank up to it) */
	if (!j || !o->data.len || o->rank >= j->nranks || job_node_pos(j, node) < 0)
		return;
	job_output(mm, j, o->rank, o->stream == 2, o->data);
}

void job_warn(struct mm *mm, struct job *j, const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "storm: warning: job %" PRIu64 ": ", j->id);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	slog("%s", line + 16);
	strcat(line, "\n");
	job_output(mm, j, UINT32_MAX, true,
		   (ProtobufCBinaryData){ .len = strlen(line), .data = (uint8_t *)line });
}

void job_on_exit(struct mm *mm, int node, const Storm__Cl__RankExit *e)
{
	struct job *j = job_find(mm, e->job);
	if (!j || e->rank >= j->nranks || job_node_pos(j, node) < 0)
		return;
	if (j->rank_status[e->rank] == INT32_MIN) {
		j->ranks_ended++;
		if (e->max_rss_kb > j->max_rss_kb)
			j->max_rss_kb = e->max_rss_kb;
		j->cpu_us += e->cpu_us;
	}
	j->rank_status[e->rank] = e->wait_status;
	j->dirty = true; /* saved before the report is acknowledged */
}

/* The other ranks die by signal: the first abort's code is the job's, as
 * mpiexec's. First by when the nodes heard them, not by when their reports
 * came: a rank that aborts makes its peers fail (an MPI library that finds
 * the aborted peer gone aborts with its own code), and the peers' node may
 * report in the same round or sooner. */
static void on_abort(struct mm *mm, struct job *j, int node, const Storm__Cl__JobNote *n)
{
	if (j->abort_code && !(n->at_ns && n->at_ns < j->abort_at_ns))
		return; /* a later one: the job already fails with the first */
	if (!j->abort_code) {
		j->abort_named = !j->failed && !j->cancelled; /* the reason will be this */
	} else {
		slog("job %llu: node %s heard an abort %.3f ms before the one reported first: %s",
		     (unsigned long long)j->id, mm->conf.nodes[node],
		     (double)(j->abort_at_ns - n->at_ns) / 1e6, n->message);
		if (j->abort_named)
			snprintf(j->reason, sizeof(j->reason), "node %s: %s",
				 mm->conf.nodes[node], n->message);
	}
	j->abort_code = (int)(n->value & 255) + 1;
	j->abort_at_ns = n->at_ns;
	job_fail(mm, j, "node %s: %s", mm->conf.nodes[node], n->message);
}

void job_on_note(struct mm *mm, int node, const Storm__Cl__JobNote *n)
{
	struct job *j = job_find(mm, n->job);
	if (j && j->stage && mm->ckpt_hooks->stage_note(mm, j, node, n))
		return; /* its senders need not be its nodes */
	int k = j ? job_node_pos(j, node) : -1;
	if (k < 0 || !job_active(j))
		return;
	j->dirty = true;
	switch (n->kind) {
	case STORM__CL__JOB_NOTE__KIND__CHECKPOINTED:
	case STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED:
	case STORM__CL__JOB_NOTE__KIND__CHECKPOINT_CAPTURED:
		mm->ckpt_hooks->on_note(mm, node, n);
		break;
	case STORM__CL__JOB_NOTE__KIND__FAILED:
		node_is_done(j, k);
		job_fail(mm, j, "node %s: %s", mm->conf.nodes[node], n->message);
		check_end(mm, j);
		break;
	case STORM__CL__JOB_NOTE__KIND__ABORTED:
		on_abort(mm, j, node, n);
		break;
	case STORM__CL__JOB_NOTE__KIND__STDIN_ACK:
		if (k == 0 && j->client) {
			Storm__Ctl__StdinAck a = STORM__CTL__STDIN_ACK__INIT;
			a.job = j->id;
			a.written = n->value;
			reply_send(mm, j->client, STORM__CTL__REPLY__BODY_STDIN_ACK, &a);
		}
		break;
	case STORM__CL__JOB_NOTE__KIND__DONE:
		node_is_done(j, k);
		check_end(mm, j);
		break;
	default:
		break;
	}
}

void job_stdin(struct mm *mm, struct client *c, const Storm__Ctl__StdinData *d)
{
	struct job *j = c->job;
	if (!j || j->id != d->job || !j->spec->forward_stdin || d->data.len > STDIN_MSG_MAX) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
			    "stdin for job %llu: not this connection's job, not forwarding its "
			    "stdin, or more than %u bytes at once", (unsigned long long)d->job,
			    STDIN_MSG_MAX);
		return;
	}
	if (!job_active(j) || j->stdin_eof)
		return; /* ended, or after its end of input: nothing reads it */
	if (j->state == STORM__CTL__JOB_STATE__RUNNING) {
		send_stdin(mm, j, d->data.data, d->data.len, d->eof);
	} else {
		/* not launched yet: held, and sent right after the launch */
		if (j->stdin_held_len + d->data.len > STDIN_HELD_MAX) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
				    "stdin for job %llu beyond its window before the launch",
				    (unsigned long long)d->job);
			return;
		}
		uint8_t *nb = realloc(j->stdin_held, j->stdin_held_len + d->data.len + 1);
		if (!nb)
			return;
		memcpy(nb + j->stdin_held_len, d->data.data, d->data.len);
		j->stdin_held = nb;
		j->stdin_held_len += d->data.len;
		j->stdin_held_eof = d->eof;
	}
	j->stdin_eof = d->eof;
}

static void job_progress(struct mm *mm, struct job *j, uint64_t done, uint64_t total)
{
	if (!j->client)
		return;
	Storm__Ctl__Progress p = STORM__CTL__PROGRESS__INIT;
	p.job = j->id;
	p.done = done;
	p.total = total;
	reply_send(mm, j->client, STORM__CTL__REPLY__BODY_PROGRESS, &p);
}

void job_fill_info(struct mm *mm, const struct job *j, Storm__Ctl__JobInfo *info)
{
	storm__ctl__job_info__init(info);
	info->job = j->id;
	info->name = (char *)j->spec->name;
	info->user = (char *)j->spec->user;
	info->uid = j->spec->uid;
	info->state = j->state;
	if (j->state == STORM__CTL__JOB_STATE__RUNNING && !gang_runs_now(mm, j))
		info->state = STORM__CTL__JOB_STATE__SUSPENDED;
	info->row = gang_home(mm, j);
	info->nodes = j->nnodes;
	info->ranks = j->nranks;
	info->nodelist = (char *)j->nodelist;
	info->submit_time = j->t_submit;
	info->start_time = j->t_start;
	info->end_time = j->t_end;
	info->exit_status = j->exit_status;
	info->reason = (char *)j->reason;
	info->array_job = j->spec->array_job;
	info->array_task = j->spec->array_task;
	info->checkpoint_failed = (char *)j->ckpt_failed;
	info->time_limit = j->spec->time_limit;
}

void mm_shutdown(struct mm *mm, const char *why)
{
	jobs_end_all(mm, why);
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	Storm__Cl__Shutdown sd = STORM__CL__SHUTDOWN__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_SHUTDOWN;
	cmd.shutdown = &sd;
	cmd_queue(mm, &cmd, NULL, 0);
	mm->shutting_down = true;
	mm->shutdown_deadline = clock_wall_s() + 2; /* for the command to reach the nodes */
}

static void transfer_failed(struct mm *mm, struct job *j, const char *why)
{
	job_fail(mm, j, "%s", why);
}

static void transfer_done(struct mm *mm, struct job *j)
{
	files_sent(mm, j);
	jobs_schedule(mm); /* the next transfer may start */
}

static void transfer_drained(struct mm *mm)
{
	jobs_schedule(mm); /* the next transfer may start */
}

static const struct transfer_hooks transfer_hooks = {
	.progress = job_progress,
	.failed = transfer_failed,
	.done = transfer_done,
	.drained = transfer_drained,
};

void job_init(struct mm *mm)
{
	mm->transfer_hooks = &transfer_hooks;
}
