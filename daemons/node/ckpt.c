/* Checkpoint and restore of a job's ranks on this node (libstormckpt).
 *
 * Both run in a helper process forked from the daemon, so the daemon's loop
 * keeps following strobes while memory is written (a 2 GiB job would
 * otherwise miss enough strobes to be declared DOWN). The helper reports
 * through a pipe and exits; its end is seen by the reaper (nd_ckpt_reaped).
 *  - Checkpoint: the job is stopped (SIGSTOP to its group, a rank's children
 *    included; with the freezer it is thawed so the stop takes effect) and
 *    kept stopped (ckpt_busy) while
 *    the helper writes DIR/rank<R>.img for each local rank and, the first
 *    time, copies the job directory's files to ckpt/JOB/files. When every
 *    image is written it says so (CHECKPOINT_CAPTURED: the job may run on)
 *    and fsyncs them; then the node stores the checkpoint id in
 *    GM_VAR_CKPT(slot), which the MM checks with COMPARE-AND-WRITE, and
 *    reports CHECKPOINTED.
 *  - Restore: the helper rebuilds each rank from its image, stopped, in one
 *    process group, with the daemon's pipes as stdout and stderr, as the
 *    job's user. The daemon is a child subreaper, so when the helper exits
 *    the ranks become its children, to be reaped like launched ones. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "layout.h"
#include "nd.h"
#include "rtguard.h"
#include "trace.pb-c.h"

enum helper_kind { H_DUMP, H_RESTORE };

struct nd_helper {
	pid_t pid;              /* 0: a dump waiting for the job's BCS-MPI drain */
	int fd;                 /* read end of its result pipe */
	enum helper_kind kind;
	uint64_t job, id;
	uint32_t slot;
	uint32_t first;         /* restore: the job's first local rank */
	int *pipes;             /* restore: per local rank, stdout and stderr read ends */
	bool captured;          /* dump: its images are written; the job may run on */
	char *dir, *files;      /* dump, until forked: where the images go */
	uint32_t cmd_seq;       /* dump: its Checkpoint command's number */
	uint64_t t_cmd;         /* dump: when it came (nd_now_ns) */
	uint64_t t_fork_us;     /* dump: when its helper started (wall clock, traces) */
	char buf[4096];         /* dump: what it said so far */
	size_t len;
	struct nd_helper *next;
};

static struct nd_job *job_of(struct nd *nd, uint64_t id)
{
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

static int mkdirs(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0711) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int copy_file(const char *from, const char *to, uid_t uid, gid_t gid, bool root)
{
	if (link(from, to) == 0 || errno == EEXIST)
		return 0;
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		rc = -errno;
	else if ((out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777)) < 0)
		rc = -errno;
	while (!rc) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
	}
	if (!rc && root && fchown(out, uid, gid) < 0)
		rc = -errno;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* Copies (links) every regular file of dir `from` into `to`. */
static int copy_dir_files(const char *from, const char *to, uid_t uid, gid_t gid, bool root)
{
	DIR *d = opendir(from);
	if (!d)
		return -errno;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char a[PATH_MAX + 256], b[PATH_MAX + 256];
		struct stat st;
		snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
		snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
		if (stat(a, &st) == 0 && S_ISREG(st.st_mode) && !strstr(e->d_name, ".img"))
			rc = copy_file(a, b, uid, gid, root);
	}
	closedir(d);
	return rc;
}

static int result_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	return 0;
}

static void helper_free(struct nd_helper *h)
{
	free(h->pipes);
	free(h->dir);
	free(h->files);
	free(h);
}

static void add_helper(struct nd *nd, struct nd_helper *h)
{
	h->next = nd->helpers;
	nd->helpers = h;
}

/* ---- checkpoint */

/* One rank's dump, in a thread of the helper: the ranks of a node are
 * dumped side by side, and each says when it may run on. */
struct rank_dump {
	pid_t pid;
	uint32_t rank;
	int sig;        /* one byte here when captured (or failed before) */
	atomic_bool captured;
	atomic_int rc;
	struct ckpt_stats cs;
	char path[PATH_MAX + 300];
	char err[1024];
	void *app;      /* its BCS-MPI state (nd_bcs_rank_state) */
	size_t app_len;
	int bcs_fd;     /* the job's BCS-MPI channel, the rank's fd 3; -1: none */
};

static void rank_captured(void *arg)
{
	struct rank_dump *r = arg;
	r->captured = true;
	(void)!write(r->sig, "c", 1);
}

static void *rank_dump(void *arg)
{
	struct rank_dump *r = arg;
	/* a snapshot lets it go before its memory is written; each image is
	 * fsync'd by its own thread */
	/* its BCS-MPI channel stays ours: the image keeps the rank's state in
	 * it (sealed by the drain), not the mapping's bytes */
	/* fd 3, the channel, is ours and given again at restore (any other
	 * descriptor there, e.g. a PMI socket, is judged as the rank's own) */
	struct ckpt_caller_fd chan = { 3, r->bcs_fd };
	struct ckpt_dump_opts o = {
		.flags = CKPT_DUMP_EXTERNAL_MEMFD | CKPT_DUMP_SNAPSHOT | CKPT_DUMP_WRITEBACK |
			 CKPT_DUMP_FSYNC,
		.caller_fds = &chan, .ncaller_fds = r->bcs_fd >= 0,
		.app = r->app, .app_len = r->app_len,
		.captured = rank_captured, .arg = r,
	};
	r->rc = ckpt_dump(r->pid, r->path, &o, &r->cs, r->err, sizeof(r->err));
	if (!r->captured)
		(void)!write(r->sig, "e", 1);
	return NULL;
}

/* The most processes a rank's tree may hold (libstormckpt refuses more). */
#define TREE_MAX 256

/* Whether every thread of pid has stopped (or exited). */
static bool threads_stopped(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return true; /* it exited meanwhile */
	bool all = true;
	struct dirent *e;
	while (all && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[128], st[512];
		snprintf(path, sizeof(path), "%s/%.32s/stat", dir, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue; /* it exited meanwhile */
		st[n] = 0;
		/* "tid (comm) S ...": the comm may hold ") " itself */
		const char *c = strrchr(st, ')');
		all = c && c[1] && strchr("TtZX", c[2]);
	}
	closedir(d);
	return all;
}

/* pid and its descendants (the children of each of their threads), at most
 * max, parents first. With stopped_only, a process's children are listed
 * only once every thread of it has stopped — a stopped process forks no
 * more, so that listing is complete — and *all says whether they all had. */
static size_t tree_pids(pid_t pid, pid_t *out, size_t max, bool stopped_only, bool *all)
{
	size_t n = 0;
	out[n++] = pid;
	if (all)
		*all = true;
	for (size_t i = 0; i < n; i++) {
		if (stopped_only && !threads_stopped(out[i])) {
			*all = false;
			break;
		}
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)out[i]);
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[128];
			snprintf(path, sizeof(path), "%s/%.32s/children", dir, e->d_name);
			FILE *f = fopen(path, "re");
			int c;
			while (f && n < max && fscanf(f, "%d", &c) == 1)
				out[n++] = c;
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
	}
	return n;
}

/* Waits until every thread of pid and of its descendants (a rank may have
 * forked) has taken the job's SIGSTOP (or exited). A rank's BCS-MPI area is
 * read before its dump: a thread still running could post a descriptor
 * after that read, which its image would lack. */
static int wait_stopped(pid_t pid, uint64_t timeout_ns)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	if (access(dir, F_OK) < 0)
		return -errno;
	pid_t pids[TREE_MAX];
	for (uint64_t until = clock_mono_ns() + timeout_ns;;) {
		bool all;
		tree_pids(pid, pids, TREE_MAX, true, &all);
		if (all)
			return 0;
		if (clock_mono_ns() > until)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

/* whole: the helper process's one life (seize, capture, release, write), timed from one clock */
static _Noreturn void dump_child(struct nd *nd, struct nd_job *job, const char *dir,
				 const char *files_dir, int w, uint64_t t_cmd)
{
	double t0 = t_cmd / 1e9, t_fork = clock_mono_ns() / 1e9 - t0;
	/* the ranks need not have taken their SIGSTOP yet: seized, a pending
	 * one is handed back when they are let go */
	int rc = mkdirs(dir, 0700);
	struct stat st;
	if (!rc && stat(files_dir, &st) < 0) {
		rc = mkdirs(files_dir, 0700);
		if (!rc)
			rc = copy_dir_files(job->dir, files_dir, 0, 0, false);
	}
	int sig[2];
	if (!rc && pipe2(sig, O_CLOEXEC) < 0)
		rc = -errno;
	struct rank_dump *rd = calloc(job->nranks ? job->nranks : 1, sizeof(*rd));
	pthread_t *th = calloc(job->nranks ? job->nranks : 1, sizeof(*th));
	if (!rc && (!rd || !th))
		rc = -ENOMEM;
	if (rc) {
		dprintf(w, "E %d cannot create %s: %s\n", rc, dir, strerror(-rc));
		_exit(1);
	}
	double t_dirs = clock_mono_ns() / 1e9 - t0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < job->nranks; i++) {
		if (job->ranks[i].pid <= 0)
			continue;
		struct rank_dump *r = &rd[n];
		r->pid = job->ranks[i].pid;
		r->rank = job->ranks[i].rank;
		r->sig = sig[1];
		r->bcs_fd = nd_bcs_fd(nd, job);
		snprintf(r->path, sizeof(r->path), "%s/rank%u.img", dir, r->rank);
		if (r->bcs_fd >= 0 && (rc = wait_stopped(r->pid, 5000000000ull)) < 0 && rc != -ENOENT) {
			dprintf(w, "E %d rank %u: pid %d did not stop for the checkpoint: %s\n", rc,
				r->rank, (int)r->pid, strerror(-rc));
			_exit(1);
		}
		if (nd_bcs_rank_state(nd, job, i, &r->app, &r->app_len) < 0) {
			dprintf(w, "E %d rank %u: out of memory\n", -ENOMEM, r->rank);
			_exit(1);
		}
		if ((rc = pthread_create(&th[n], NULL, rank_dump, r))) {
			dprintf(w, "E %d rank %u: cannot start its dump: %s\n", -rc, r->rank,
				strerror(rc));
			_exit(1);
		}
		n++;
	}
	/* every rank captured: the job may run on while the images reach the
	 * disk; the checkpoint is complete only once they have */
	for (uint32_t got = 0; got < n;) {
		char c;
		ssize_t k = read(sig[0], &c, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k != 1)
			break;
		got++;
		if (c == 'e')
			for (uint32_t i = 0; i < n; i++)
				if (!rd[i].captured && rd[i].rc < 0) {
					dprintf(w, "E %d rank %u: %s\n", (int)rd[i].rc, rd[i].rank,
						rd[i].err);
					_exit(1);
				}
	}
	double t_captured = clock_mono_ns() / 1e9 - t0, frozen = 0;
	dprintf(w, "C 0\n");
	uint64_t total = 0;
	double d_stop = 0, d_meta = 0, d_copy = 0;
	unsigned snaps = 0;
	int bad = -1;
	for (uint32_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (uint32_t i = 0; i < n; i++) {
		free(rd[i].app);
		if (rd[i].rc < 0 && bad < 0)
			bad = (int)i;
		total += rd[i].cs.bytes;
		d_stop += rd[i].cs.t_stop;
		d_meta += rd[i].cs.t_meta;
		d_copy += rd[i].cs.t_copy;
		frozen = rd[i].cs.t_frozen > frozen ? rd[i].cs.t_frozen : frozen;
		snaps += rd[i].cs.snapshot;
	}
	if (bad >= 0)
		dprintf(w, "E %d rank %u: %s\n", (int)rd[bad].rc, rd[bad].rank, rd[bad].err);
	free(rd);
	free(th);
	if (bad >= 0)
		_exit(1);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	/* from the command's arrival: the helper forked, dirs made, every rank
	 * captured, images written and fsync'd; ckpt_dump's parts summed over
	 * the ranks (stop, meta, copy) and the longest a rank was held */
	dprintf(w, "OK %" PRIu64 " %.6f fork %.3f dirs %.3f captured %.3f (stop %.3f meta %.3f "
		   "copy %.3f held %.3f, %u of %u from a snapshot)\n",
		total, clock_mono_ns() / 1e9 - t0, t_fork, t_dirs, t_captured, d_stop, d_meta, d_copy,
		frozen, snaps, n);
	_exit(0);
}

static void ckpt_remove(struct nd *nd, const Storm__Cl__Checkpoint *c)
{
	char path[PATH_MAX + 128];
	snprintf(path, sizeof(path), "%s/%s", nd->state_dir, c->dir);
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				char f[PATH_MAX + 400];
				snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
				unlink(f);
			}
		closedir(d);
	}
	rmdir(path);
	/* the job's last checkpoint: its files copy goes too */
	char *slash = strrchr(path, '/');
	*slash = 0;
	d = opendir(path);
	int others = 0;
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			others += e->d_name[0] != '.' && strcmp(e->d_name, "files");
		closedir(d);
	}
	if (!others) {
		char files[PATH_MAX + 140];
		snprintf(files, sizeof(files), "%s/files", path);
		d = opendir(files);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d)))
				if (e->d_name[0] != '.') {
					char f[PATH_MAX + 400];
					snprintf(f, sizeof(f), "%s/%s", files, e->d_name);
					unlink(f);
				}
			closedir(d);
		}
		rmdir(files);
		rmdir(path);
	}
	slog("checkpoint %" PRIu64 " of job %" PRIu64 " deleted", c->id, c->job);
}

/* The checkpoint lets go of its job: it stays stopped (frozen again with
 * the freezer, its SIGSTOP then undone): the first strobe that runs it once
 * the MM has heard that every node captured its ranks continues it. The
 * module's hold ends only now, with the job in that state. */
static void ckpt_unhold(struct nd *nd, struct nd_job *job)
{
	job->ckpt_busy = false;
	if (job->freeze_fd >= 0) {
		if (pwrite(job->freeze_fd, "1", 1, 0) < 0)
			slog("job %" PRIu64 ": cannot freeze it: %s", job->id, strerror(errno));
		killpg(job->pgid, SIGCONT);
	}
	nd_kswitch_hold(nd, job, false);
}

void nd_checkpoint(struct nd *nd, const Storm__Cl__Checkpoint *c)
{
	if (!nd_valid_ckpt_dir(c->dir)) {
		slog("checkpoint %" PRIu64 ": bad directory '%s'; ignored", c->id, c->dir);
		return;
	}
	if (c->remove) {
		/* unlinking gigabytes can stall on a busy disk: not in the loop
		 * (the reaper takes the child as a pid it does not know) */
		pid_t pid = fork();
		if (pid == 0) {
			ckpt_remove(nd, c);
			_exit(0);
		}
		if (pid < 0)
			ckpt_remove(nd, c);
		return;
	}
	if (c->send) { /* a restart's staging: this node only sends (ckpt_copy.c) */
		nd_copy_plan(nd, c);
		return;
	}
	struct nd_job *job = job_of(nd, c->job);
	const char *why = !job ? "the job does not run here"
			  : job->ckpt_busy ? "a checkpoint of the job is under way"
			  : job->pgid <= 0 || !job->nalive ? "the job has no live ranks here"
							   : NULL;
	if (why) {
		nd_queue_note(nd, c->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED,
			      UINT32_MAX, "%" PRIu64 " %s: %s", c->id, nd->name, why);
		return;
	}
	uint64_t t_cmd = clock_mono_ns();
	/* /dev/storm first leaves it alone (entries already pushed would
	 * continue it), then it is stopped for the helper: with the freezer,
	 * thawed so the stop lands */
	nd_kswitch_hold(nd, job, true);
	if (killpg(job->pgid, SIGSTOP) < 0 && errno != ESRCH)
		slog("job %" PRIu64 ": cannot stop it for a checkpoint: %s", job->id,
		       strerror(errno));
	if (job->freeze_fd >= 0 && pwrite(job->freeze_fd, "0", 1, 0) < 0)
		slog("job %" PRIu64 ": cannot thaw it for a checkpoint: %s", job->id,
		       strerror(errno));
	job->stopped = true;
	job->ckpt_busy = true;
	job->ckpt_frozen = true;
	nd_bcs_freeze(nd, job, c->id);
	char dir[PATH_MAX + 128], files[PATH_MAX + 128];
	snprintf(dir, sizeof(dir), "%s/%s", nd->state_dir, c->dir);
	snprintf(files, sizeof(files), "%s/ckpt/%" PRIu64 "/files", nd->state_dir, job->id);
	struct nd_helper *h = calloc(1, sizeof(*h));
	if (!h || !(h->dir = strdup(dir)) || !(h->files = strdup(files))) {
		nd_queue_note(nd, c->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED,
			      UINT32_MAX, "%" PRIu64 " %s: out of memory", c->id, nd->name);
		ckpt_unhold(nd, job);
		if (h)
			free(h->dir);
		free(h);
		return;
	}
	h->fd = -1;
	h->cmd_seq = nd->cmd_done + 1; /* the command being acted on */
	h->t_cmd = t_cmd;
	h->kind = H_DUMP;
	h->job = job->id;
	h->id = c->id;
	h->slot = c->slot;
	add_helper(nd, h);
	nd_copy_plan(nd, c); /* buddy copies, sent once the dump is done */
	/* test hook ckpt_deaf_for=N: the command overtakes the strobes, as on
	 * a node that lags: the next N are not heard (nor the one that brought
	 * it, if one did), so the module plays the entries pushed before the
	 * command (its slots come while the job is held), and the dump starts
	 * at the first strobe heard */
	uint64_t deaf = fault_value(&nd->fault, "ckpt_deaf_for");
	if (deaf) {
		nd->deaf_until = nd->slice + deaf;
		slog("test hook: checkpoint %" PRIu64 ": strobes to %" PRIu64 " ignored", c->id,
		     nd->deaf_until);
		return;
	}
	/* the helper starts once the job's BCS-MPI traffic has drained
	 * (nd_ckpt_poll): at once for a job that has none */
	nd_ckpt_poll(nd);
}

static void dump_unstarted(struct nd *nd, struct nd_helper *h, const char *why)
{
	struct nd_job *job = job_of(nd, h->job);
	if (job)
		ckpt_unhold(nd, job);
	nd_copy_forget(nd, h->id);
	nd_queue_note(nd, h->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED, UINT32_MAX,
		      "%" PRIu64 " %s: %s", h->id, nd->name, why);
	slog("job %" PRIu64 ": checkpoint %" PRIu64 " failed: %s", h->job, h->id, why);
}

/* Forks the dump helper once the drain is done. Returns false when the
 * checkpoint ended here (failed, or the job is gone): h is to be dropped. */
static bool dump_start(struct nd *nd, struct nd_helper *h)
{
	struct nd_job *job = job_of(nd, h->job);
	char why[256];
	if (!job) {
		nd_copy_forget(nd, h->id);
		return false; /* the job ended meanwhile; the MM knows */
	}
	int s = nd_bcs_sealed(nd, job, why, sizeof(why));
	if (s < 0) {
		dump_unstarted(nd, h, why);
		return false;
	}
	if (s == 0)
		return true;
	int fds[2];
	pid_t pid = -1;
	if (result_pipe(fds) == 0) {
		pid = fork();
		if (pid == 0) {
			close(fds[0]);
			dump_child(nd, job, h->dir, h->files, fds[1], h->t_cmd);
		}
		close(fds[1]);
		if (pid < 0)
			close(fds[0]);
	}
	if (pid < 0) {
		dump_unstarted(nd, h, "cannot start the checkpoint helper");
		return false;
	}
	h->pid = pid;
	h->fd = fds[0];
	h->t_fork_us = nd_wall_us();
	slog("job %" PRIu64 ": checkpoint %" PRIu64 " into %s (helper %d)", job->id, h->id,
	       h->dir, (int)pid);
	return true;
}

/* The helper's ranks may run again: its images are written (or it failed). */
static void dump_release(struct nd *nd, struct nd_helper *h)
{
	struct nd_job *job = job_of(nd, h->job);
	h->captured = true;
	if (job)
		ckpt_unhold(nd, job);
}

void nd_ckpt_running(struct nd *nd, struct nd_job *job)
{
	/* back in the run list before its drain ended here: the MM gave the
	 * checkpoint up (another node failed it) — if the strobe was sent after
	 * the command: a node that lags reads strobes sent before it (their run
	 * lists still have the job) after the command itself. */
	for (struct nd_helper **pp = &nd->helpers; *pp; pp = &(*pp)->next) {
		struct nd_helper *h = *pp;
		if (h->kind == H_DUMP && h->pid == 0 && h->job == job->id &&
		    (int32_t)(nd->strobe_cmd_seq - h->cmd_seq) >= 0) {
			dump_unstarted(nd, h, "the checkpoint was abandoned");
			*pp = h->next;
			helper_free(h);
			break;
		}
	}
	if (!job->ckpt_busy && job->ckpt_frozen) {
		nd_bcs_thaw(nd, job);
		job->ckpt_frozen = false;
	}
}

static void helper_read(struct nd_helper *h)
{
	ssize_t r;
	while (h->len < sizeof(h->buf) - 1 &&
	       (r = read(h->fd, h->buf + h->len, sizeof(h->buf) - 1 - h->len)) > 0)
		h->len += (size_t)r;
	h->buf[h->len] = 0;
}

/* The helper says "C <bytes>\n" first, once every image is written. */
static bool said_captured(const char *out, unsigned long long *bytes)
{
	return !strncmp(out, "C ", 2) && strchr(out, '\n') && sscanf(out, "C %llu", bytes) == 1;
}

/* The helper said every image is written. Every rank was
 * read stopped, and stays so until released: what it had done then is the
 * checkpoint's mark in its trace. */
static void dump_captured(struct nd *nd, struct nd_helper *h, unsigned long long bytes)
{
	struct nd_job *job = job_of(nd, h->job);
	if (job)
		nd_bcs_trace_mark(nd, job, h->id);
	dump_release(nd, h);
	nd_queue_note(nd, h->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_CAPTURED, UINT32_MAX,
		      "%" PRIu64 " %llu", h->id, bytes);
}

void nd_ckpt_poll(struct nd *nd)
{
	for (struct nd_helper **pp = &nd->helpers; *pp;) {
		struct nd_helper *h = *pp;
		if (h->kind == H_DUMP && h->pid == 0 && !dump_start(nd, h)) {
			*pp = h->next;
			helper_free(h);
			continue;
		}
		pp = &h->next;
		/* test hook ckpt_exit_first=K: checkpoint K's helper is heard
		 * only when it exits, as a loaded node may */
		if (h->kind != H_DUMP || h->captured || h->pid == 0 ||
		    fault_is(&nd->fault, "ckpt_exit_first", h->id))
			continue;
		helper_read(h);
		unsigned long long bytes;
		if (!said_captured(h->buf, &bytes))
			continue;
		dump_captured(nd, h, bytes);
	}
}

static void dump_done(struct nd *nd, struct nd_helper *h, const char *res)
{
	unsigned long long captured;
	/* its exit can be seen before its first line was read: the ranks are
	 * still stopped, and the mark still theirs (skipping it lost the
	 * checkpoint's mark from the trace under load) */
	if (!h->captured && said_captured(res, &captured))
		dump_captured(nd, h, captured);
	else if (!h->captured)
		dump_release(nd, h);
	unsigned long long bytes = 0;
	const char *ok = strstr(res, "OK "), *e = strstr(res, "E ");
	if (ok && !e && sscanf(ok, "OK %llu", &bytes) == 1) {
		if (nd_copy_after_dump(nd, h->id, h->slot, bytes))
			return; /* complete once its buddy has the copies */
		sn_var_store(nd->sn, GM_VAR_CKPT(h->slot), h->id);
		nd_queue_note(nd, h->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINTED, UINT32_MAX,
			      "%" PRIu64 " %llu", h->id, bytes);
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " written, %llu bytes: %.*s", h->job,
		       h->id, bytes, (int)strcspn(ok + 3, "\n"), ok + 3);
	} else {
		/* "E <-errno> <why>"; -ENOTSUP: a rank holds what cannot be restored
		 * (libstormckpt), which another try will meet again */
		char line[1100] = "the checkpoint helper died";
		int rc = 0, at = 0;
		if (e && sscanf(e, "E %d %n", &rc, &at) == 1 && at > 0)
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(e + at, "\n"), e + at);
		nd_copy_forget(nd, h->id);
		nd_queue_note_value(nd, h->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED,
				    rc == -ENOTSUP, "%" PRIu64 " %s: %s", h->id, nd->name, line);
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " failed: %s", h->job, h->id, line);
	}
}

/* ---- restore */

struct setup_arg {
	int out_w, err_w;
	int bcs_fd;             /* the new channel: fd 3, as at launch */
	pid_t pgid;
	struct nd *nd;
	struct nd_job *job;
	uint32_t lr;            /* the rank being restored, local index */
};

static int restore_setup(void *p)
{
	struct setup_arg *a = p;
	setpgid(0, a->pgid);
	int null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(a->out_w, 1) < 0 || dup2(a->err_w, 2) < 0)
		return -1;
	return 0;
}

/* The rank's BCS-MPI channel mapping: its area of the new channel, rebuilt
 * from the state its image keeps (chan_ckpt.h). */
static int restore_channel(void *p, const void *app, size_t app_len, uint64_t start,
			   uint64_t end, uint64_t offset, struct ckpt_ext_piece *pc, size_t max,
			   char *err, size_t errlen)
{
	struct setup_arg *a = p;
	return nd_bcs_restore_rank(a->nd, a->job, a->lr, app, app_len, start, end, offset, pc,
				   max, err, errlen);
}

/* What the restore did to the job's files changed since the checkpoint (cut
 * back, kept aside, left as they are), a priority it could not set: the
 * node's log, a line each, naming the job and rank. */
static void restore_say(void *p, const char *line)
{
	struct setup_arg *a = p;
	slog("job %" PRIu64 ": rank %u: restart: %s", a->job->id, a->job->ranks[a->lr].rank, line);
}

static _Noreturn void restore_child(struct nd *nd, const Storm__Cl__Launch *L,
				    struct nd_job *job, const int *wfds, int w)
{
	char err[1024], img[PATH_MAX + 128], files[PATH_MAX + 128];
	rt_guard_child();
	if (L->files_dir[0]) {
		snprintf(files, sizeof(files), "%s/%s", nd->state_dir, L->files_dir);
		int rc = nd_valid_ckpt_dir(L->files_dir) ? copy_dir_files(files, job->dir, L->spec->uid, L->spec->gid,
								  nd->root)
						 : -EINVAL;
		if (rc) {
			dprintf(w, "E cannot copy the job's files from %s: %s\n", files,
				strerror(-rc));
			_exit(1);
		}
	}
	struct setup_arg a = { .pgid = 0, .nd = nd, .job = job, .bcs_fd = nd_bcs_fd(nd, job) };
	struct ckpt_caller_fd chan = { 3, a.bcs_fd };
	struct ckpt_restore_opts o = {
		.stopped = 1, .uid = L->spec->uid, .gid = L->spec->gid, .drop_creds = nd->root,
		.child_setup = restore_setup, .child_arg = &a,
		.from_prefixes = (const char *const *)L->old_dirs, .nfrom = L->n_old_dirs,
		.to_prefix = job->dir,
		.external = restore_channel, .external_arg = &a, .external_fd = a.bcs_fd,
		.caller_fds = &chan, .ncaller_fds = a.bcs_fd >= 0,
		.log = restore_say, .log_arg = &a,
	};
	for (uint32_t i = 0; i < job->nranks; i++) {
		a.lr = i;
		uint32_t rank = job->ranks[i].rank;
		if (L->restore_dir[0])
			snprintf(img, sizeof(img), "%s/%s/rank%u.img", nd->state_dir, L->restore_dir,
				 rank);
		else
			snprintf(img, sizeof(img), "%s/rank%u.img", job->dir, rank);
		a.out_w = wfds[2 * i];
		a.err_w = wfds[2 * i + 1];
		pid_t pid;
		struct ckpt_stats cs;
		if (ckpt_restore(img, &o, &pid, &cs, err, sizeof(err)) < 0) {
			dprintf(w, "E rank %u: %s\n", rank, err);
			_exit(1);
		}
		if (!a.pgid)
			a.pgid = pid;
		dprintf(w, "R %u %d\n", rank, (int)pid);
	}
	/* test hook: a node slower to restore than the others, which must not
	 * take the job for quiescent meanwhile */
	uint64_t late_ms = fault_value(&nd->fault, "restore_late");
	if (late_ms) {
		struct timespec ts = {(time_t)(late_ms / 1000), (long)(late_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	_exit(0);
}

static void nd_restore_ranks(struct nd *nd, const Storm__Cl__Command *cmd, struct nd_job *job,
		      uint32_t first)
{
	const Storm__Cl__Launch *L = cmd->launch;
	if (L->restore_dir[0] && !nd_valid_ckpt_dir(L->restore_dir)) {
		nd_job_start_failed(nd, job, "bad checkpoint directory");
		return;
	}
	for (uint32_t i = 0; i < job->nranks; i++)
		job->ranks[i].rank = first + i;
	struct nd_helper *h = calloc(1, sizeof(*h));
	int *wfds = calloc(2 * job->nranks, sizeof(int));
	int *rfds = calloc(2 * job->nranks, sizeof(int));
	int res[2] = { -1, -1 };
	uint32_t made = 0;
	if (!h || !wfds || !rfds || result_pipe(res) < 0)
		goto fail;
	for (; made < job->nranks; made++) {
		int out[2], err[2];
		if (pipe2(out, O_CLOEXEC) < 0)
			goto fail;
		if (pipe2(err, O_CLOEXEC) < 0) {
			close(out[0]);
			close(out[1]);
			goto fail;
		}
		rfds[2 * made] = out[0];
		wfds[2 * made] = out[1];
		rfds[2 * made + 1] = err[0];
		wfds[2 * made + 1] = err[1];
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(res[0]);
		restore_child(nd, L, job, wfds, res[1]);
	}
	if (pid < 0)
		goto fail;
	close(res[1]);
	for (uint32_t i = 0; i < 2 * job->nranks; i++)
		close(wfds[i]);
	free(wfds);
	h->pid = pid;
	h->fd = res[0];
	h->kind = H_RESTORE;
	h->job = job->id;
	h->first = first;
	h->pipes = rfds;
	add_helper(nd, h);
	slog("job %" PRIu64 ": restoring ranks %u..%u (helper %d)", job->id, first,
	       first + job->nranks - 1, (int)pid);
	return;
fail:
	for (uint32_t i = 0; i < 2 * made; i++) {
		close(rfds[i]);
		close(wfds[i]);
	}
	if (res[0] >= 0) {
		close(res[0]);
		close(res[1]);
	}
	free(h);
	free(wfds);
	free(rfds);
	nd_job_start_failed(nd, job, "cannot start the restore helper");
}

static void restore_done(struct nd *nd, struct nd_helper *h, char *res)
{
	struct nd_job *job = job_of(nd, h->job);
	char why[1100] = "";
	for (char *line = strtok(res, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned rank;
		int pid;
		if (sscanf(line, "R %u %d", &rank, &pid) == 2 && job && rank >= h->first &&
		    rank - h->first < job->nranks) {
			struct nd_rank *r = &job->ranks[rank - h->first];
			r->pid = pid;
			job->nalive++;
			if (!job->pgid)
				job->pgid = pid;
			nd_rank_pipes_watch(nd, job, r, h->pipes[2 * (rank - h->first)],
					    h->pipes[2 * (rank - h->first) + 1]);
			h->pipes[2 * (rank - h->first)] = h->pipes[2 * (rank - h->first) + 1] = -1;
			/* the rank's children too (restored stopped: none forks) */
			pid_t pids[TREE_MAX];
			size_t np = tree_pids(pid, pids, TREE_MAX, false, NULL);
			for (size_t k = 0; k < np; k++)
				nd_gang_adopt(job, pids[k], true);
		} else if (line[0] == 'E') {
			snprintf(why, sizeof(why), "%s", line + 2);
		} else if (sscanf(line, "R %u %d", &rank, &pid) == 2) {
			kill(pid, SIGKILL); /* its job is gone */
		}
	}
	for (uint32_t i = 0; job && i < 2 * job->nranks; i++)
		if (h->pipes[i] >= 0)
			close(h->pipes[i]);
	if (!job)
		return;
	if (!why[0] && job->nalive < job->nranks)
		snprintf(why, sizeof(why), "the restore helper died");
	if (why[0]) {
		slog("job %" PRIu64 ": restore failed: %s", job->id, why);
		nd_job_start_failed(nd, job, why);
		return;
	}
	nd_bcs_restored(nd, job);
	/* restored stopped: continued now if its row runs (the freezer holds a
	 * frozen job by itself) */
	if (!job->stopped || job->freeze_fd >= 0)
		killpg(job->pgid, SIGCONT);
	nd_job_started(nd, job);
}

static bool nd_ckpt_reaped(struct nd *nd, pid_t pid, int status)
{
	for (struct nd_helper **pp = &nd->helpers; *pp; pp = &(*pp)->next) {
		struct nd_helper *h = *pp;
		if (h->pid != pid)
			continue;
		*pp = h->next;
		if (h->kind == H_DUMP) {
			helper_read(h);
			close(h->fd);
			struct nd_job *job = job_of(nd, h->job);
			if (job)
				nd_trace(job, STORM__TRACE__EVENT__KIND__CKPT, h->t_fork_us,
					 nd_wall_us() - h->t_fork_us, h->id,
					 WIFEXITED(status) && WEXITSTATUS(status) == 0);
			dump_done(nd, h, h->buf);
		} else {
			char buf[1 << 16];
			size_t n = 0;
			for (ssize_t r; n < sizeof(buf) - 1 &&
					(r = read(h->fd, buf + n, sizeof(buf) - 1 - n)) > 0;)
				n += (size_t)r;
			buf[n] = 0;
			close(h->fd);
			restore_done(nd, h, buf);
		}
		helper_free(h);
		return true;
	}
	return false;
}

void nd_ckpt_close(struct nd *nd)
{
	while (nd->helpers) {
		struct nd_helper *h = nd->helpers;
		nd->helpers = h->next;
		if (h->pid > 0) {
			kill(h->pid, SIGKILL);
			waitpid(h->pid, NULL, 0);
			close(h->fd);
		}
		helper_free(h);
	}
}

int nd_ckpt_init(struct nd *nd)
{
	nd->child_reaped = nd_ckpt_reaped;
	nd->restore_ranks = nd_restore_ranks;
	/* restored ranks are the helper's children: they must come to us */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		slog("cannot become a child subreaper (%s): restarts will not work",
		       strerror(errno));
	}
	return 0;
}
