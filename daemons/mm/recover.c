/* Recovery after a restart: the jobs and the matrix rebuilt from the
 * database (persist.c loads, this decides what each record becomes).
 *
 *  - QUEUED and LAUNCHING jobs come back QUEUED: the program and files are
 *    opened again by path with the user's rights (a launch cut short by
 *    the restart simply starts over; no rank of it ran anywhere);
 *  - RUNNING jobs come back on their nodes (matrix cells, done slot, rank
 *    statuses, which nodes are done): the node daemons hold the ranks and
 *    report to the new MM, whose first strobes carry a new epoch; one that
 *    every node was done with (the MM died before it ended) ends. A node
 *    that had not received the launch command when the MM died (it reports
 *    twice with nothing queued and without the job, and had not said it
 *    was done with it: its ranks' ends are saved before their report is
 *    acknowledged) fails the job naming itself; a node that does not
 *    report within down_after_ms is DOWN,
 *    and its jobs fail as for any dead node. */
#include "db.h"
#include "mm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Opens path with the job user's rights, as the CLI did at submission. */
static int open_as(const struct job *j, const char *path, int flags, int *err)
{
	uid_t ou = (uid_t)setfsuid((uid_t)-1);
	gid_t og = (gid_t)setfsgid((gid_t)-1);
	setfsgid(j->spec->gid);
	setfsuid(j->spec->uid);
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY, 0644);
	*err = errno;
	setfsuid(ou);
	setfsgid(og);
	return fd;
}

/* The program and --file files of a queued job, opened again: the copies
 * kept of a submission over TCP, else by path. */
static int reopen_files(struct mm *mm, struct job *j, char *why, size_t len)
{
	const Storm__Job__Spec *s = j->spec;
	size_t n = s->n_files + (s->no_bcast ? 0 : 1);
	if (n > FRAME_MAX_FDS) {
		snprintf(why, len, "its record lists %zu files", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		const char *f = (!s->no_bcast && i == 0) ? s->program
							 : s->files[i - (s->no_bcast ? 0 : 1)];
		if (f[0] == '/')
			snprintf(path, sizeof(path), "%s", f);
		else
			snprintf(path, sizeof(path), "%s/%s", s->cwd, f);
		char kept[PATH_MAX + 64];
		int err = 0, fd = -1;
		if (persist_files_path(mm, j->id, (int)i, kept, sizeof(kept)) == 0)
			fd = open(kept, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			fd = open_as(j, path, O_RDONLY, &err);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    (!s->no_bcast && i == 0 && !(st.st_mode & 0111))) {
			if (fd >= 0) {
				err = S_ISREG(st.st_mode) ? EACCES : EINVAL;
				close(fd);
			}
			snprintf(why, len,
				 "cannot open %.300s again after the machine manager restarted: %s",
				 path, strerror(err));
			return -1;
		}
		j->fds[i] = fd;
		j->fsizes[i] = (uint64_t)st.st_size;
		j->fmodes[i] = st.st_mode & 07777;
		j->fnames[i] = strdup(base_name(f));
		j->nfds = (int)i + 1;
	}
	return 0;
}

/* A queued restart of storm replay --from: its trace again, from the copy
 * the MM kept of it (handle_restart); the path the CLI read it from may be
 * one this host does not see. */
static int reopen_trace(struct mm *mm, struct job *j, char *why, size_t len)
{
	char kept[PATH_MAX + 64];
	struct stat st;
	int fd = -1;
	if (persist_files_path(mm, j->id, 0, kept, sizeof(kept)) == 0)
		fd = open(kept, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !(j->fnames[0] = strdup(CKPT_REPLAY_NAME))) {
		snprintf(why, len, "its trace to replay is lost with the machine manager: %s",
			 strerror(fd < 0 ? errno : ENOMEM));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	j->fds[0] = fd;
	j->fsizes[0] = (uint64_t)st.st_size;
	j->fmodes[0] = 0400;
	j->nfds = 1;
	return 0;
}

struct restore {
	struct mm *mm;
	struct job **tail;
	uint64_t fail[256]; /* jobs to fail once all are back */
	int nfail, queued, running;
};

static void restore_running(struct mm *mm, struct job *j, const struct db_job *d, char *why,
			    size_t len)
{
	memcpy(j->nodes, d->nodes, sizeof(int) * j->nnodes);
	j->slot = (uint32_t)d->slot;
	j->t_start = d->t_start > 0 ? d->t_start : d->t_submit;
	j->t_transferred = d->t_launched;
	j->t_launched = d->t_launched > 0 ? d->t_launched : j->t_start;
	for (uint32_t r = 0; d->rank_status && r < j->nranks; r++)
		if ((j->rank_status[r] = d->rank_status[r]) != INT32_MIN)
			j->ranks_ended++;
	for (uint32_t k = 0; d->node_done && k < j->nnodes; k++)
		if ((j->node_done[k] = d->node_done[k]) && k < job_launch_nodes(j))
			j->nodes_done++;
	snprintf(j->nodelist, sizeof(j->nodelist), "%.500s", d->nodelist ? d->nodelist : "");
	sn_set_clear(&j->set);
	for (uint32_t k = 0; k < j->nnodes; k++)
		sn_set_add(&j->set, fabric_id((uint32_t)j->nodes[k]));
	j->state = STORM__CTL__JOB_STATE__RUNNING;
	j->recovered = true;
	if (d->slot < 0 || d->slot >= GM_JOB_SLOTS || mm->slot_used[d->slot]) {
		snprintf(why, len, "its done slot %d cannot be restored", d->slot);
		return;
	}
	mm->slot_used[d->slot] = true;
	/* a step runs in its allocation's cells */
	if (jobid_is_step(j->id))
		return;
	if (matrix_place_on(&mm->matrix, j->id, j->nodes, (int)j->nnodes) < 0)
		snprintf(why, len, "its nodes %.400s have no free row in the matrix", j->nodelist);
	else
		matrix_set_slice(&mm->matrix, j->id, j->spec->timeslice_us);
}

static int restore_one(void *arg, const struct db_job *d)
{
	struct restore *rs = arg;
	struct mm *mm = rs->mm;
	char why[512] = "";
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->out_fd = -1;
	for (int i = 0; i < FRAME_MAX_FDS; i++)
		j->fds[i] = -1;
	j->id = d->id;
	j->spec = jobspec_unpack(d->spec, d->spec_len);
	bool decoded = j->spec != NULL;
	if (!decoded) {
		/* what the row's columns say, so the job can be shown failing */
		Storm__Job__Spec e = STORM__JOB__SPEC__INIT;
		e.name = (char *)(d->name ? d->name : "?");
		e.user = (char *)(d->user ? d->user : "?");
		e.uid = d->uid;
		e.gid = d->gid;
		j->spec = jobspec_dup(&e);
	}
	j->nnodes = d->nnodes ? d->nnodes : 1;
	j->nranks = d->nranks ? d->nranks : 1;
	j->t_submit = d->t_submit;
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	j->nodes = calloc(j->nnodes, sizeof(int));
	j->rank_status = malloc(sizeof(int32_t) * j->nranks);
	j->node_done = calloc(j->nnodes, sizeof(bool));
	if (!j->spec || !j->nodes || !j->rank_status || !j->node_done) {
		job_destroy(j);
		return -ENOMEM;
	}
	for (uint32_t r = 0; r < j->nranks; r++)
		j->rank_status[r] = INT32_MIN;
	*rs->tail = j;
	rs->tail = &j->next;

	Storm__Ctl__JobState st = persist_state_value(d->state);
	if (!decoded) {
		snprintf(why, sizeof(why), "its record in the database cannot be decoded");
	} else if (st == STORM__CTL__JOB_STATE__RUNNING && d->nodes) {
		restore_running(mm, j, d, why, sizeof(why));
		rs->running++;
	} else if (st == STORM__CTL__JOB_STATE__RUNNING) {
		snprintf(why, sizeof(why), "its allocation is missing from the database");
	} else {
		/* queued, or its transfer was cut short: it starts (over); a
		 * restart takes its images and files from the nodes again */
		if (!j->spec->restore_checkpoint)
			reopen_files(mm, j, why, sizeof(why));
		else if (j->spec->replay_trace[0])
			reopen_trace(mm, j, why, sizeof(why));
		rs->queued++;
	}
	/* output: the batch file again; an interactive job lost its storm
	 * run with the old MM, so what it prints from now on goes to a file */
	if (decoded && j->spec->interactive) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/storm-%llu.out", j->spec->cwd, (unsigned long long)j->id);
		j->output_path = strdup(p);
	} else if (d->output_path) {
		j->output_path = strdup(d->output_path);
	}
	if (j->output_path) {
		int err = 0;
		j->out_fd = open_as(j, j->output_path, O_WRONLY | O_CREAT | O_APPEND, &err);
		if (j->out_fd < 0 && !why[0])
			snprintf(why, sizeof(why), "cannot open its output file %.400s again: %s",
				 j->output_path, strerror(err));
	}
	slog("job %llu restored from the database: %s%s%s", (unsigned long long)j->id,
	     persist_state_name(j->state), why[0] ? "; it fails: " : "", why);
	if (why[0] && rs->nfail < (int)(sizeof(rs->fail) / sizeof(rs->fail[0]))) {
		snprintf(j->reason, sizeof(j->reason), "%s", why);
		rs->fail[rs->nfail++] = j->id;
	}
	return 0;
}

static bool listed(const Storm__Cl__Report *r, uint64_t id)
{
	for (size_t i = 0; i < r->n_running; i++)
		if (r->running[i] == id)
			return true;
	return false;
}

void recover_node_report(struct mm *mm, int idx, const Storm__Cl__Report *r)
{
	struct mm_node *n = &mm->nodes[idx];
	/* a report with nothing queued says all the node holds; the first one
	 * may be a resend packed before the restart, so two are needed */
	if (r->n_output || r->n_exits || r->n_notes || ++n->idle_reports < 2)
		return;
	uint64_t ids[64];
	int nids = 0;
	for (struct job *j = mm->jobs; j && nids < 64; j = j->next)
		if (j->recovered && j->state == STORM__CTL__JOB_STATE__RUNNING &&
		    job_waits_on(mm, j->id, idx) && !listed(r, j->id))
			ids[nids++] = j->id;
	for (int i = 0; i < nids; i++) {
		struct job *j = job_find(mm, ids[i]);
		char why[256];
		snprintf(why, sizeof(why),
			 "node %s never received its launch command (the machine manager "
			 "restarted during the launch)", mm->conf.nodes[idx]);
		if (j)
			job_node_unlisted(mm, j, idx, why);
	}
}

void recover_tick(struct mm *mm)
{
	/* A restored job whose nodes were all done with it: the MM died
	 * between saving the last node's DONE and the job's end (its
	 * termination check is asynchronous), and no node will report on it
	 * again, so it ends now. With job_end_combined, one whose first
	 * node's DONE was saved: the others' ends are words in their memory,
	 * which the termination check reads (job.c) once they are UP. */
	if (!mm->recover_ended) {
		mm->recover_ended = true;
		uint64_t ids[256];
		int nids = 0;
		for (struct job *j = mm->jobs; j && nids < 256; j = j->next)
			if (j->recovered && j->state == STORM__CTL__JOB_STATE__RUNNING &&
			    job_launch_nodes(j) &&
			    (j->nodes_done >= job_launch_nodes(j) ||
			     (mm->conf.job_end_combined && j->node_done[0])))
				ids[nids++] = j->id;
		for (int i = 0; i < nids; i++) {
			struct job *j = job_find(mm, ids[i]);
			if (j) {
				slog("job %llu: %s before the restart; its end is checked",
				     (unsigned long long)j->id,
				     j->nodes_done >= job_launch_nodes(j) ? "every node was done with it"
									  : "its first node was done with it");
				job_end_if_done(mm, j);
			}
		}
	}
	/* a node holding restored jobs that has not reported for down_after_ms
	 * since the restart is as dead as one that stopped reporting */
	if (mm->recover_checked ||
	    mm->elapsed_us < (uint64_t)conf_down_slices(&mm->conf) * mm->conf.timeslice_us)
		return;
	mm->recover_checked = true;
	for (int i = 0; i < mm->conf.nnodes; i++) {
		if (mm->nodes[i].state != STORM__CTL__NODE_STATE__UNKNOWN)
			continue;
		bool holds = false;
		for (struct job *j = mm->jobs; j && !holds; j = j->next)
			holds = j->recovered && job_runs_on(mm, j->id, i);
		if (holds)
			mark_node(mm, i, STORM__CTL__NODE_STATE__DOWN,
				  "no report since the machine manager restarted");
	}
}

int recover_jobs(struct mm *mm)
{
	if (!mm->db)
		return 0;
	struct restore rs = { .mm = mm, .tail = &mm->jobs };
	while (*rs.tail)
		rs.tail = &(*rs.tail)->next;
	int rc = db_jobs_active(mm->db, restore_one, &rs);
	if (rc < 0) {
		slog("error: cannot read the jobs in the database: %s",
		       rc == -1 ? db_error(mm->db) : strerror(-rc));
		return -1;
	}
	matrix_backfill(&mm->matrix);
	if (ckpt_load(mm) < 0) /* the earlier MMs' checkpoints, restartable */
		return -1;
	for (int i = 0; i < rs.nfail; i++) {
		struct job *j = job_find(mm, rs.fail[i]);
		if (!j)
			continue;
		char why[512];
		snprintf(why, sizeof(why), "%s", j->reason);
		j->reason[0] = '\0';
		/* nothing of it will report: its nodes are done with it */
		for (uint32_t k = 0; k < j->nnodes; k++)
			j->node_done[k] = true;
		j->nodes_done = job_launch_nodes(j);
		job_fail(mm, j, "%s", why);
	}
	/* queued jobs got new reasons: saved as the scheduler sets them */
	slog("%d running and %d queued jobs restored from the database", rs.running, rs.queued);
	return 0;
}
