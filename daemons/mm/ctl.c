/* Control requests: decoding, checking and handing each to the part that
 * serves it, and the replies that are about the cluster as a whole (status,
 * nodes, jobs, the matrix). Registered with the connection layer (conn.c)
 * at start-up; nothing below calls here. */
#include "mm.h"

#include <errno.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A Submit (or a replay's Restart) over TCP brings its files' bytes, not
 * descriptors: each goes into an anonymous file that stands for the
 * descriptor, so the job holds and sends it as one passed over the local
 * socket. 0, or -1 (answered). */
static int files_in(struct mm *mm, struct client *c, Storm__Ctl__FileData *const *files,
		    size_t n_files)
{
	if (c->rx.nfds || n_files > FRAME_MAX_FDS) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
			    "%zu files sent with %d descriptors: one or the other, at most %d",
			    n_files, c->rx.nfds, FRAME_MAX_FDS);
		return -1;
	}
	for (size_t i = 0; i < n_files; i++) {
		const Storm__Ctl__FileData *f = files[i];
		int fd = memfd_create("storm-submit", MFD_CLOEXEC);
		size_t done = 0;
		while (fd >= 0 && done < f->data.len) {
			ssize_t n = write(fd, f->data.data + done, f->data.len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done += (size_t)n;
		}
		if (fd < 0 || done < f->data.len || fchmod(fd, f->mode & 0777) < 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
				    "cannot hold file %zu of the submission (%zu bytes): %s", i + 1,
				    f->data.len, strerror(e));
			return -1; /* frame_rx_reset closes those made before */
		}
		c->rx.fds[c->rx.nfds++] = fd;
	}
	return 0;
}

static int nodes_up(const struct mm *mm)
{
	int up = 0;
	for (int i = 0; i < mm->conf.nnodes; i++)
		up += mm->nodes[i].state == STORM__CTL__NODE_STATE__UP;
	return up;
}

static void reply_status(struct mm *mm, struct client *c)
{
	Storm__Ctl__Status st = STORM__CTL__STATUS__INIT;
	st.cluster = mm->conf.name;
	st.nodes_total = (uint32_t)mm->conf.nnodes;
	st.nodes_up = (uint32_t)nodes_up(mm);
	st.slice = mm->slice;
	st.timeslice_us = mm->conf.timeslice_us;
	st.provider = (char *)sn_provider_name(mm->sn, 0);
	st.mm_pid = (uint32_t)getpid();
	st.mpl = mm->conf.mpl;
	st.quantum = mm->conf.quantum;
	st.policy = (char *)storm_policy_names[mm->conf.policy];
	for (struct job *j = mm->jobs; j; j = j->next) {
		bool launched = j->state == STORM__CTL__JOB_STATE__RUNNING;
		st.jobs_running += (launched && gang_runs_now(mm, j)) ||
				   j->state == STORM__CTL__JOB_STATE__LAUNCHING;
		st.jobs_suspended += launched && !gang_runs_now(mm, j);
		st.jobs_queued += j->state == STORM__CTL__JOB_STATE__QUEUED;
	}
	reply_send(mm, c, STORM__CTL__REPLY__BODY_STATUS, &st);
}

void status_waiters_answer(struct mm *mm)
{
	bool all_up = nodes_up(mm) == mm->conf.nnodes;
	double now = clock_wall_s();
	for (struct client *c = mm->clients; c; c = c->next)
		if (c->fd >= 0 && c->status_deadline > 0 && (all_up || now >= c->status_deadline)) {
			c->status_deadline = 0;
			reply_status(mm, c);
		}
}

void clients_tick(struct mm *mm)
{
	status_waiters_answer(mm);
	clients_reap(mm);
}

static void reply_jobs(struct mm *mm, struct client *c, bool all)
{
	size_t n = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		n += all || job_active(j);
	Storm__Ctl__JobInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Storm__Ctl__JobInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	size_t k = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		if (all || job_active(j)) {
			job_fill_info(mm, j, &infos[k]);
			ptrs[k] = &infos[k];
			k++;
		}
	Storm__Ctl__JobList jl = STORM__CTL__JOB_LIST__INIT;
	jl.jobs = ptrs;
	jl.n_jobs = n;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_JOBS, &jl);
	free(infos);
	free(ptrs);
}

static void reply_matrix(struct mm *mm, struct client *c)
{
	size_t nn = (size_t)mm->conf.nnodes, mpl = mm->conf.mpl, nj = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		nj += job_active(j);
	uint64_t *cells = calloc(nn * mpl, sizeof(*cells));
	Storm__Ctl__NodeState *states = calloc(nn, sizeof(*states));
	Storm__Ctl__JobInfo *infos = calloc(nj ? nj : 1, sizeof(*infos));
	Storm__Ctl__JobInfo **ptrs = calloc(nj ? nj : 1, sizeof(*ptrs));
	char **names = calloc(nn, sizeof(*names));
	if (!cells || !states || !infos || !ptrs || !names) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < mpl; r++)
		for (size_t p = 0; p < nn; p++)
			cells[r * nn + p] = matrix_at(&mm->matrix, (int)r, (int)p);
	for (size_t p = 0; p < nn; p++) {
		states[p] = mm->nodes[p].state;
		names[p] = mm->conf.nodes[p];
	}
	size_t k = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		if (job_active(j)) {
			job_fill_info(mm, j, &infos[k]);
			ptrs[k] = &infos[k];
			k++;
		}
	Storm__Ctl__Matrix m = STORM__CTL__MATRIX__INIT;
	m.mpl = (uint32_t)mpl;
	m.nodes = names;
	m.n_nodes = nn;
	m.cells = cells;
	m.n_cells = nn * mpl;
	m.node_states = states;
	m.n_node_states = nn;
	m.row = mm->row;
	m.slice = mm->slice;
	m.timeslice_us = mm->conf.timeslice_us;
	uint32_t row_us[STORM_MAX_MPL];
	for (size_t r = 0; r < mpl && r < STORM_MAX_MPL; r++)
		row_us[r] = gang_slice_us(mm, (int)r);
	m.row_slice_us = row_us;
	m.n_row_slice_us = mpl < STORM_MAX_MPL ? mpl : STORM_MAX_MPL;
	m.quantum = mm->conf.quantum;
	m.policy = (char *)storm_policy_names[mm->conf.policy];
	m.switches = mm->switches;
	m.jobs = ptrs;
	m.n_jobs = k;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_MATRIX, &m);
out:
	free(names);
	free(cells);
	free(states);
	free(infos);
	free(ptrs);
}

static void reply_nodes(struct mm *mm, struct client *c)
{
	size_t n = (size_t)mm->conf.nnodes;
	Storm__Ctl__NodeInfo *infos = calloc(n, sizeof(*infos));
	Storm__Ctl__NodeInfo **ptrs = calloc(n, sizeof(*ptrs));
	uint64_t *jobs = calloc(n * mm->conf.mpl, sizeof(*jobs));
	if (!infos || !ptrs || !jobs) {
		free(infos);
		free(ptrs);
		free(jobs);
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	double now = clock_wall_s();
	for (size_t i = 0; i < n; i++) {
		struct mm_node *nd = &mm->nodes[i];
		storm__ctl__node_info__init(&infos[i]);
		infos[i].name = mm->conf.nodes[i];
		infos[i].state = nd->state;
		infos[i].cpus = mm->conf.cpus;
		/* one job per row at most; an alternate copy is the same job */
		uint64_t *mine = &jobs[i * mm->conf.mpl];
		for (unsigned r = 0; r < mm->conf.mpl; r++) {
			uint64_t id = matrix_at(&mm->matrix, (int)r, (int)i);
			bool seen = false;
			for (size_t k = 0; k < infos[i].n_jobs; k++)
				seen |= mine[k] == id;
			if (id && !seen)
				mine[infos[i].n_jobs++] = id;
		}
		infos[i].jobs = mine;
		infos[i].last_heard = nd->heard_time > 0 ? now - nd->heard_time : -1;
		ptrs[i] = &infos[i];
	}
	Storm__Ctl__NodeList nl = STORM__CTL__NODE_LIST__INIT;
	nl.nodes = ptrs;
	nl.n_nodes = n;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_NODES, &nl);
	free(infos);
	free(ptrs);
	free(jobs);
}

/* The jobs a Cancel names: a job or a step; one task of an array; or, by
 * the array's id (its first task's), every task of it. */
static size_t cancel_targets(struct mm *mm, const Storm__Ctl__Cancel *cn, struct job **out,
			     size_t max)
{
	struct job *j = cn->task_given ? NULL : job_find(mm, cn->job);
	size_t n = 0;
	if (j && j->spec->array_job != j->id) {
		out[n++] = j;
		return n;
	}
	for (struct job *t = mm->jobs; t && n < max; t = t->next)
		if (t->spec->array_job == cn->job && (!cn->task_given || t->spec->array_task == cn->task))
			out[n++] = t;
	return n;
}

static void handle_cancel(struct mm *mm, struct client *c, const Storm__Ctl__Cancel *cn)
{
	struct job **targets = calloc(10000, sizeof(*targets));
	if (!targets) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	size_t n = cancel_targets(mm, cn, targets, 10000), active = 0;
	char why[256], who[96];
	if (!n) {
		if (cn->task_given)
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no task %llu_%u",
				    (unsigned long long)cn->job, cn->task);
		else
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no job %llu",
				    (unsigned long long)cn->job);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!mm_may_touch(c, targets[i], "cancel", why, sizeof(why))) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
			goto out;
		}
		active += job_active(targets[i]);
	}
	if (!active) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "job %llu has already ended",
			    (unsigned long long)targets[0]->id);
		goto out;
	}
	if (mm_req_check_cancel(cn, who, sizeof(who)) != STORM__CTL__ERROR_CODE__ERR_NONE) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", who);
		goto out;
	}
	struct passwd *pw = getpwuid(c->uid);
	snprintf(who, sizeof(who), "%s", pw ? pw->pw_name : "?");
	/* ids first: a cancel may end jobs, and an end may forget old ones */
	size_t k = 0;
	uint64_t *list = calloc(n, sizeof(*list));
	for (size_t i = 0; list && i < n; i++)
		if (job_active(targets[i]))
			list[k++] = targets[i]->id;
	for (size_t i = 0; i < k; i++) {
		struct job *j = job_find(mm, list[i]);
		if (j && job_active(j))
			job_cancel(mm, j, cn->signal, who);
	}
	free(list);
	Storm__Ctl__Cancelled ca = STORM__CTL__CANCELLED__INIT;
	ca.job = cn->job;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_CANCELLED, &ca);
out:
	free(targets);
}

static void handle_shutdown(struct mm *mm, struct client *c)
{
	if (c->uid != 0 && c->uid != geteuid()) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION,
			    "only root or the cluster's owner may shut it down");
		return;
	}
	slog("shutdown requested by uid %u", (unsigned)c->uid);
	mm_shutdown(mm, "the cluster was shut down");
	Storm__Ctl__ShuttingDown s = STORM__CTL__SHUTTING_DOWN__INIT;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_SHUTTING_DOWN, &s);
}

static void handle(struct mm *mm, struct client *c, const uint8_t *body, size_t blen)
{
	Storm__Ctl__Request *req;
	char why[512];
	Storm__Ctl__ErrorCode code = mm_req_decode(body, blen, &req, why, sizeof(why));
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE) {
		reply_error(mm, c, code, "%s", why);
		client_finish(mm, c);
		return;
	}
	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_SUBMIT:
		if (mm->shutting_down) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
				    "the cluster is shutting down");
			break;
		}
		if (c->job) {
			/* the connection belongs to that job's end: a second one
			 * would leave the first pointing at a freed client */
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
				    "this connection already follows job %llu; one job per connection",
				    (unsigned long long)c->job->id);
			break;
		}
		if (req->submit->n_files &&
		    files_in(mm, c, req->submit->files, req->submit->n_files) < 0)
			break;
		job_submit(mm, c, req->submit, c->rx.fds, c->rx.nfds);
		break;
	case STORM__CTL__REQUEST__BODY_JOBS:
		reply_jobs(mm, c, req->jobs->all);
		break;
	case STORM__CTL__REQUEST__BODY_NODES:
		reply_nodes(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_CANCEL:
		handle_cancel(mm, c, req->cancel);
		break;
	case STORM__CTL__REQUEST__BODY_STATUS:
		if (req->status->wait_ms && nodes_up(mm) < mm->conf.nnodes)
			c->status_deadline = clock_wall_s() + req->status->wait_ms / 1000.0;
		else
			reply_status(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_MATRIX:
		reply_matrix(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_SHUTDOWN:
		handle_shutdown(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_RESTART:
		if (req->restart->n_files &&
		    files_in(mm, c, req->restart->files, req->restart->n_files) < 0)
			break;
		ckpt_handle_request(mm, c, req);
		break;
	case STORM__CTL__REQUEST__BODY_CHECKPOINT:
	case STORM__CTL__REQUEST__BODY_CHECKPOINTS:
	case STORM__CTL__REQUEST__BODY_DELETE_CHECKPOINT:
		ckpt_handle_request(mm, c, req);
		break;
	case STORM__CTL__REQUEST__BODY_ACCT:
		acct_reply(mm, c, req->acct);
		break;
	case STORM__CTL__REQUEST__BODY_STDIN:
		job_stdin(mm, c, req->stdin);
		break;
	case STORM__CTL__REQUEST__BODY_TRACES:
		trace_bcs_request(mm, c, req);
		break;
	case STORM__CTL__REQUEST__BODY_TRACE: {
		if (req->trace->bcs) {
			trace_bcs_request(mm, c, req);
			break;
		}
		struct job *j = job_find(mm, req->trace->job);
		Storm__Ctl__JobInfo info;
		if (j)
			job_fill_info(mm, j, &info);
		trace_reply(mm, c, req->trace, j ? &info : NULL);
		break;
	}
	default: /* mm_req_decode let no other body through */
		break;
	}
	storm__ctl__request__free_unpacked(req, NULL);
}

/* The connection's job and a checkpoint waiting to answer it lose their
 * client: output then goes nowhere and the job runs on as batch (job.c). */
static void client_gone(struct mm *mm, struct client *c)
{
	if (c->job) {
		struct job *j = c->job;
		c->job = NULL;
		j->client = NULL;
		job_client_gone(mm, j);
	}
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->ckpt_client == c)
			j->ckpt_client = NULL;
}

void ctl_init(struct mm *mm)
{
	mm->on_request = handle;
	mm->on_client_gone = client_gone;
}
