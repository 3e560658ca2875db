/* Job life: submission checks, allocation, launch, output, end. */
#include "mm.h"

#include <errno.h>
#include <fcntl.h>
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
	free(j->stage);
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

static char *expand_output(const char *pattern, uint64_t id)
{
	char out[PATH_MAX];
	size_t w = 0;
	for (const char *p = pattern; *p && w + 24 < sizeof(out); p++) {
		if (p[0] == '%' && p[1] == 'j') {
			w += (size_t)snprintf(out + w, sizeof(out) - w, "%llu", (unsigned long long)id);
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
		if (!s->no_bcast && i == 0 && !(st.st_mode & 0111)) {
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
static struct job *new_job(struct mm *mm, const struct client *c, const Storm__Job__Spec *s,
			   const struct submit_plan *plan, int *fds, int nfds)
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
	j->spec = jobspec_dup(&mine);
	j->id = mm->next_job_id;
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
		snprintf(pattern, sizeof(pattern), "%s/storm-%%j.out", s->cwd);
	j->output_path = expand_output(pattern, j->id);
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
	bool starts = first_queued && (int)j->nnodes <= matrix_room(&mm->matrix) &&
		      (j->spec->no_bcast || !mm->xfer);
	Storm__Ctl__Submitted ok = STORM__CTL__SUBMITTED__INIT;
	ok.job = j->id;
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

void job_submit(struct mm *mm, struct client *c, const Storm__Ctl__Submit *sub, int *fds,
		int nfds)
{
	char why[512];
	Storm__Ctl__ErrorCode code = STORM__CTL__ERROR_CODE__ERR_INVALID;
	struct submit_plan plan;
	struct job *j = NULL;
	if (geteuid() != 0 && c->uid != geteuid()) {
		code = STORM__CTL__ERROR_CODE__ERR_PERMISSION;
		snprintf(why, sizeof(why),
			 "this cluster runs as uid %u and can run only that user's jobs (start it as root to serve others)",
			 (unsigned)geteuid());
		goto refuse;
	}
	if (!sub->spec) {
		snprintf(why, sizeof(why), "the submission holds no job description");
		goto refuse;
	}
	code = mm_req_check_submit(&mm->conf, sub->spec, nfds, &plan, why, sizeof(why));
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE)
		goto refuse;
	code = STORM__CTL__ERROR_CODE__ERR_INVALID;
	if (check_descriptors(sub->spec, fds, nfds, why, sizeof(why)) < 0)
		goto refuse;
	if (!(j = new_job(mm, c, sub->spec, &plan, fds, nfds))) {
		code = STORM__CTL__ERROR_CODE__ERR_INTERNAL;
		snprintf(why, sizeof(why), "out of memory");
		goto refuse;
	}
	if (!sub->spec->interactive && open_batch_output(j, why, sizeof(why)) < 0)
		goto refuse;
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	j->t_submit = clock_wall_s();
	/* nothing accepted is lost: on disk before the reply says so */
	if (persist_job_new(mm, j) < 0) {
		code = STORM__CTL__ERROR_CODE__ERR_INTERNAL;
		snprintf(why, sizeof(why),
			 "the machine manager cannot record the job in its database (see its log)");
		goto refuse;
	}
	if (sub->spec->interactive || sub->wait) {
		j->client = c;
		c->job = j;
	}
	mm->next_job_id++;
	struct job **tail = &mm->jobs;
	while (*tail)
		tail = &(*tail)->next;
	*tail = j;
	slog("job %llu submitted by %s: %u nodes, %u ranks, %s%s", (unsigned long long)j->id,
	     j->spec->user, j->nnodes, j->nranks, j->spec->program,
	     j->spec->no_bcast ? " (no transfer)" : "");
	answer_submitted(mm, c, j);
	return;
refuse:
	if (j)
		job_destroy(j);
	reply_error(mm, c, code, "%s", why);
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

static void start(struct mm *mm, struct job *j)
{
	int slot = take_slot(mm);
	if (slot < 0 || gang_place(mm, j) < 0) {
		if (slot >= 0)
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
	int in_place = j->spec->restore_checkpoint ? mm->ckpt_hooks->restart_prepare(mm, j) : 0;
	if (in_place < 0 || in_place == 2)
		return; /* failed, saying why; or its images move to its nodes first */
	if (j->spec->no_bcast || in_place)
		job_transferred(mm, j);
	else if (transfer_start(mm, j) < 0)
		job_fail(mm, j, "cannot start the program transfer: out of memory");
}

void jobs_schedule(struct mm *mm)
{
	if (mm->shutting_down)
		return;
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (j->state != STORM__CTL__JOB_STATE__QUEUED)
			continue;
		/* first come, first served: a job that cannot start holds back those after it */
		if (!j->spec->no_bcast && mm->xfer) {
			snprintf(j->reason, sizeof(j->reason), "waiting for another job's transfer");
			return;
		}
		start(mm, j);
		if (j->state == STORM__CTL__JOB_STATE__QUEUED) {
			gang_waiting_reason(mm, j, j->reason, sizeof(j->reason));
			return;
		}
	}
}

/* Slurm's block distribution: the first (ranks % nodes) nodes get one more. */
void job_transferred(struct mm *mm, struct job *j)
{
	j->t_transferred = clock_wall_s();
	Storm__Cl__Launch l = STORM__CL__LAUNCH__INIT;
	uint32_t first[j->nnodes], count[j->nnodes];
	uint32_t base = j->nranks / j->nnodes, extra = j->nranks % j->nnodes, r = 0;
	for (uint32_t k = 0; k < j->nnodes; k++) {
		first[k] = r;
		count[k] = base + (k < extra);
		r += count[k];
	}
	l.job = j->id;
	l.slot = j->slot;
	l.ranks = j->nranks;
	l.first_rank = first;
	l.n_first_rank = j->nnodes;
	l.rank_count = count;
	l.n_rank_count = j->nnodes;
	l.spec = j->spec;
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
	int rc = cmd_queue(mm, &cmd, j->nodes, j->nnodes);
	if (rc < 0) {
		job_fail(mm, j, "cannot queue the launch command: %s", strerror(-rc));
		return;
	}
	if (j->spec->restore_checkpoint)
		for (size_t i = 0; i < l.n_old_dirs; i++)
			free(old_dirs[i]);
	j->state = STORM__CTL__JOB_STATE__RUNNING;
	j->t_launched = clock_wall_s();
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

static void finish(struct mm *mm, struct job *j)
{
	j->t_end = clock_wall_s();
	mm->ckpt_hooks->ending(mm, j);
	int32_t code = 0;
	for (uint32_t r = 0; r < j->nranks; r++)
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

/* Every node of the job said DONE (or is gone): confirm with one
 * COMPARE-AND-WRITE over the live ones. */
static void check_end(struct mm *mm, struct job *j)
{
	if (!job_active(j) || j->nodes_done < j->nnodes)
		return;
	struct sn_nodeset live;
	sn_set_clear(&live);
	for (uint32_t k = 0; k < j->nnodes; k++)
		if (mm->nodes[j->nodes[k]].state == STORM__CTL__NODE_STATE__UP)
			sn_set_add(&live, fabric_id((uint32_t)j->nodes[k]));
	if (j->t_launched && !j->failed && sn_set_count(&live)) {
		struct sn_nodeset failed;
		/* no write: the MM is the only reader, and a stale job id in a
		 * slot never equals the next job's; a write would also route the
		 * operation through the set's lowest node (sn.h) */
		int rc = sn_caw(mm->sn, &live, GM_VAR_DONE(j->slot), SN_EQ, j->id, false, 0, 0,
				&failed);
		if (rc == 0)
			slog("job %llu: termination check found a node not done", (unsigned long long)j->id);
		else if (rc < 0)
			slog("job %llu: termination check failed: %s", (unsigned long long)j->id,
			       sn_strerror(mm->sn));
	}
	finish(mm, j);
}

static int job_node_pos(const struct job *j, int node);

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
	for (uint32_t k = 0; k < j->nnodes; k++)
		if (!j->node_done[k] && mm->nodes[j->nodes[k]].state == STORM__CTL__NODE_STATE__UP)
			targets[n++] = j->nodes[k];
	if (n)
		send_signal(mm, j->id, sig, kill_after_ms, targets, n);
}

void jobs_node_up(struct mm *mm, int idx)
{
	for (struct job *j = mm->jobs; j; j = j->next) {
		int k = job_active(j) && j->stop_sig ? job_node_pos(j, idx) : -1;
		if (k < 0 || j->node_done[k])
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

void jobs_check_time(struct mm *mm)
{
	double now = clock_wall_s();
	/* ids first: stopping a job that never launched ends it at once */
	uint64_t ids[64];
	int n = 0;
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
	if (job_active(j) && j->out_fd < 0)
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
	if (k < 0 || !job_active(j))
		return;
	if (!j->node_done[k]) {
		j->node_done[k] = true;
		j->nodes_done++;
	}
	/* with --restart-on-failure a restart job takes over from its latest
	 * checkpoint; why names the node, the end says what became of the job */
	uint64_t again = mm->ckpt_hooks->node_lost(mm, j, node);
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

void job_on_output(struct mm *mm, int node, const Storm__Cl__Output *o)
{
	struct job *j = job_find(mm, o->job);
	/* as for exits: only a rank of the job, from a node of the job (a bogus
	 * rank would make `storm run --label` allocate per rank up to it) */
	if (!j || !o->data.len || o->rank >= j->nranks || job_node_pos(j, node) < 0)
		return;
	if (j->out_fd < 0 && j->client) {
		Storm__Ctl__Output out = STORM__CTL__OUTPUT__INIT;
		out.job = o->job;
		out.rank = o->rank;
		out.stream = o->stream == 2 ? STORM__CTL__STREAM__STDERR : STORM__CTL__STREAM__STDOUT;
		out.data = o->data;
		reply_send(mm, j->client, STORM__CTL__REPLY__BODY_OUTPUT, &out);
	} else if (j->out_fd >= 0) { /* batch */
		const uint8_t *p = o->data.data;
		size_t left = o->data.len;
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

void job_on_exit(struct mm *mm, int node, const Storm__Cl__RankExit *e)
{
	struct job *j = job_find(mm, e->job);
	if (!j || e->rank >= j->nranks || job_node_pos(j, node) < 0)
		return;
	if (j->rank_status[e->rank] == INT32_MIN)
		j->ranks_ended++;
	j->rank_status[e->rank] = e->wait_status;
	j->dirty = true; /* saved before the report is acknowledged */
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
		if (!j->node_done[k]) {
			j->node_done[k] = true;
			j->nodes_done++;
		}
		job_fail(mm, j, "node %s: %s", mm->conf.nodes[node], n->message);
		check_end(mm, j);
		break;
	case STORM__CL__JOB_NOTE__KIND__DONE:
		if (!j->node_done[k]) {
			j->node_done[k] = true;
			j->nodes_done++;
		}
		check_end(mm, j);
		break;
	default:
		break;
	}
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
	job_transferred(mm, j);
	jobs_schedule(mm); /* the next transfer may start */
}

static const struct transfer_hooks transfer_hooks = {
	.progress = job_progress,
	.failed = transfer_failed,
	.done = transfer_done,
};

void job_init(struct mm *mm)
{
	mm->transfer_hooks = &transfer_hooks;
}
