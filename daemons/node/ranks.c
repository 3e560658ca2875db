/* Ranks: fork and exec a job's local ranks in one process group, collect
 * their output through pipes, reap them, signal them, end the job. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"
#include "nd.h"
#include "rtguard.h"
#include "trace.pb-c.h"

#define NO_DONE_SLOT UINT32_MAX

/* Everything a child needs, prepared before fork: after fork only
 * async-signal-safe calls are made (the daemon may have library threads). */
struct plan {
	const char *path, *cwd, *node;
	char **argv, **envp;
	bool switch_user;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	pid_t pgid;
	int traced_w;           /* handshake pipe: "T" once the child is traced */
	int stdin_r;            /* its fd 0 (rank 0 under storm run), -1: /dev/null */
	int fd3;                /* becomes fd 3 (the BCS-MPI channel or the rank's PMI
				 * socket), -1: none */
};

static void put(int fd, const char *s)
{
	ssize_t rc = write(fd, s, strlen(s));
	(void)rc; /* nothing to do in a dying child */
}

static void child_fail(const struct plan *pl, const char *what, const char *arg, int err)
{
	put(2, "stormnd: ");
	put(2, pl->node);
	put(2, ": ");
	put(2, what);
	put(2, " '");
	put(2, arg);
	put(2, "': ");
	put(2, strerror(err));
	put(2, "\n");
	_exit(127);
}

static _Noreturn void run_child(const struct plan *pl, int out_w, int err_w)
{
	setpgid(0, pl->pgid);
	rt_guard_child();
	/* halt at the execve, before the program's first instruction, until
	 * the daemon has put us in our job's gang state (gang.c) */
	if (pl->traced_w >= 0 && ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 &&
	    write(pl->traced_w, "T", 1) < 0)
		_exit(127);
	int in = pl->stdin_r >= 0 ? pl->stdin_r : open("/dev/null", O_RDONLY);
	if (in < 0 || dup2(in, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		_exit(127);
	/* the BCS-MPI channel (STORM_BCS_FD) or the PMI socket (PMI_FD) at a
	 * fixed fd, kept across exec */
	if (pl->fd3 == 3)
		fcntl(3, F_SETFD, 0);
	else if (pl->fd3 >= 0 && dup2(pl->fd3, 3) < 0)
		_exit(127);
	close_range(pl->fd3 >= 0 ? 4 : 3, ~0u, 0);

	/* the daemon blocks signals for its signalfd and ignores SIGPIPE */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);

	/* raw system calls: glibc's setuid would signal every thread of the
	 * process to change them all, and a vfork child shares the daemon's
	 * threads (the PMIx server library runs one) */
	if (pl->switch_user) {
		char id[16];
		snprintf(id, sizeof(id), "%u", (unsigned)pl->uid);
		if (syscall(SYS_setgroups, (size_t)pl->ngroups, pl->groups) < 0 ||
		    syscall(SYS_setresgid, pl->gid, pl->gid, pl->gid) < 0 ||
		    syscall(SYS_setresuid, pl->uid, pl->uid, pl->uid) < 0)
			child_fail(pl, "cannot switch to uid", id, errno);
	}
	if (pl->cwd[0] && chdir(pl->cwd) < 0) {
		/* as Slurm does: run anyway, somewhere that exists */
		int err = errno;
		put(2, "stormnd: ");
		put(2, pl->node);
		put(2, ": warning: cannot chdir to '");
		put(2, pl->cwd);
		put(2, "': ");
		put(2, strerror(err));
		put(2, "; running in /tmp\n");
		if (chdir("/tmp") < 0)
			child_fail(pl, "cannot chdir to", "/tmp", errno);
	}
	execve(pl->path, pl->argv, pl->envp);
	child_fail(pl, "cannot execute", pl->path, errno);
	_exit(127);
}

static struct nd_job *find_job(struct nd *nd, uint64_t id)
{
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

static void on_pipe(void *arg, uint32_t events)
{
	struct nd_pipe *p = arg;
	(void)events;
	nd_pipe_readable(p->nd, p);
}

static void pipe_watch(struct nd *nd, struct nd_pipe *p)
{
	if (p->fd < 0 || p->in_epoll || nd->pipes_paused)
		return;
	p->nd = nd;
	if (ev_io_add(nd->loop, p->fd, EPOLLIN, on_pipe, p) == 0)
		p->in_epoll = true;
	else
		slog("cannot watch a rank's pipe: %s", strerror(errno));
}

static void pipe_close(struct nd *nd, struct nd_pipe *p)
{
	if (p->fd < 0)
		return;
	if (p->in_epoll)
		ev_io_del(nd->loop, p->fd);
	close(p->fd);
	p->fd = -1;
	p->in_epoll = false;
}

void nd_pipes_pause(struct nd *nd, bool pause)
{
	if (nd->pipes_paused == pause)
		return;
	nd->pipes_paused = pause;
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		for (uint32_t i = 0; i < j->nranks; i++)
			for (int s = 0; s < 2; s++) {
				struct nd_pipe *p = &j->ranks[i].pipes[s];
				if (pause && p->in_epoll) {
					/* removed, not masked: a hung-up pipe reports
					 * EPOLLHUP even with no events requested */
					ev_io_del(nd->loop, p->fd);
					p->in_epoll = false;
				} else if (!pause) {
					pipe_watch(nd, p);
				}
			}
}

/* Reads up to limit bytes in pieces of ND_READ_CHUNK; closes on EOF. */
static void read_pipe(struct nd *nd, struct nd_pipe *p, size_t limit)
{
	uint8_t buf[ND_READ_CHUNK];
	size_t total = 0;
	while (p->fd >= 0 && total < limit) {
		ssize_t n = read(p->fd, buf, sizeof(buf));
		if (n > 0) {
			nd_queue_output(nd, p->job, p->rank->rank, p->stream, buf, (size_t)n);
			total += (size_t)n;
		} else if (n == 0) {
			pipe_close(nd, p);
		} else if (errno == EINTR) {
			continue;
		} else {
			if (errno != EAGAIN)
				pipe_close(nd, p);
			return;
		}
	}
}

void nd_pipe_readable(struct nd *nd, struct nd_pipe *p)
{
	/* one pipe's worth per turn, so one chatty rank cannot starve others */
	read_pipe(nd, p, 4 * ND_READ_CHUNK);
}

static void job_free(struct nd *nd, struct nd_job *job)
{
	for (struct nd_job **pp = &nd->jobs; *pp; pp = &(*pp)->next)
		if (*pp == job) {
			*pp = job->next;
			break;
		}
	for (uint32_t i = 0; i < job->nranks; i++)
		for (int s = 0; s < 2; s++)
			pipe_close(nd, &job->ranks[i].pipes[s]);
	nd_kswitch_job_end(nd, job);
	nd_gang_job_end(nd, job);
	nd_bcs_job_end(nd, job);
	nd_pmi_job_end(nd, job);
	nd_trace_free(job);
	nd_stdin_end(nd, job);
	nd_ranks_forget(nd, job->id);
	free(job->ranks);
	free(job);
}

static void job_end(struct nd *nd, struct nd_job *job)
{
	/* whatever the ranks left behind in their group goes with them */
	if (job->pgid > 0 && killpg(job->pgid, SIGKILL) < 0 && errno != ESRCH)
		slog("job %" PRIu64 ": cannot kill process group %d: %s", job->id,
		       (int)job->pgid, strerror(errno));
	nd_job_dir_remove(nd, job->id);
	/* a trace with more than the ranks' starts and ends (turns, BCS-MPI
	 * phases, checkpoints) is worth a report of the end: it may say why
	 * the job was slow, and storm trace shows it whole at once */
	if (job->may_be_quiet && nd_trace_plain(job)) {
		/* every rank exited 0: the MM reads this end (nd_quiet_end) */
		uint64_t cpu = 0, rss = 0;
		for (uint32_t i = 0; i < job->nranks; i++) {
			cpu += job->ranks[i].kept_cpu_us;
			if (job->ranks[i].kept_rss_kb > rss)
				rss = job->ranks[i].kept_rss_kb;
		}
		nd_quiet_end(nd, job->id, job->slot, cpu, rss);
		/* its trace goes with a later report, after the end */
		nd_trace_flush(nd, job, nd_queue_trace_later);
		slog("job %" PRIu64 " done (every rank exited 0: no report)", job->id);
		job_free(nd, job);
		nd_leftovers_sweep(nd);
		return;
	}
	/* the exits kept while it might have ended quietly go now, before DONE */
	for (uint32_t i = 0; i < job->nranks; i++) {
		struct nd_rank *r = &job->ranks[i];
		if (!r->kept)
			continue;
		struct rusage ru = {0};
		ru.ru_maxrss = (long)r->kept_rss_kb;
		ru.ru_utime.tv_sec = (time_t)(r->kept_cpu_us / 1000000);
		ru.ru_utime.tv_usec = (suseconds_t)(r->kept_cpu_us % 1000000);
		nd_queue_exit(nd, job->id, r->rank, r->kept_status, &ru);
		r->kept = false;
	}
	nd_trace_flush(nd, job, nd_queue_trace); /* its events reach the MM before its end */
	nd_queue_note(nd, job->id, STORM__CL__JOB_NOTE__KIND__DONE, job->slot, "%s", "");
	/* the job's first node: the MM's read of the others' ends starts as
	 * it takes this DONE, so the word is there by then */
	nd->q_tail->done_at_send = job->first_node;
	slog("job %" PRIu64 " done", job->id);
	job_free(nd, job);
	/* and what left the group: no longer a job's once the job is gone */
	nd_leftovers_sweep(nd);
}

static void rank_ended(struct nd *nd, struct nd_job *job, struct nd_rank *r, int status,
		       const struct rusage *ru)
{
	/* everything it wrote before exiting goes before its exit */
	for (int s = 0; s < 2; s++) {
		read_pipe(nd, &r->pipes[s], ND_EXIT_DRAIN_MAX);
		pipe_close(nd, &r->pipes[s]);
	}
	r->pid = -1;
	nd_bcs_trace_rank_end(nd, job, (uint32_t)(r - job->ranks), status);
	nd_trace(job, STORM__TRACE__EVENT__KIND__EXIT, nd_wall_us(), 0, r->rank, (uint64_t)(uint32_t)status);
	if (job->may_be_quiet && status == 0) {
		/* kept: the job may end quietly here (job_end) */
		r->kept = true;
		r->kept_status = status;
		if (ru) {
			r->kept_rss_kb = (uint64_t)ru->ru_maxrss; /* Linux: KiB */
			r->kept_cpu_us = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 +
					 (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec);
		}
	} else {
		job->may_be_quiet = false;
		nd_queue_exit(nd, job->id, r->rank, status, ru);
	}
	if (--job->nalive == 0)
		job_end(nd, job);
}

void nd_reap(struct nd *nd)
{
	for (;;) {
		int status;
		struct rusage ru;
		/* its rusage: MaxRSS and CPU time in the accounting */
		pid_t pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid <= 0)
			return;
		if (nd->child_reaped && nd->child_reaped(nd, pid, status))
			continue;
		for (struct nd_job *j = nd->jobs; j; j = j->next)
			for (uint32_t i = 0; i < j->nranks; i++)
				if (j->ranks[i].pid == pid) {
					rank_ended(nd, j, &j->ranks[i], status, &ru);
					goto next;
				}
		/* a process that came to this subreaper: its children come too */
		nd_leftovers_sweep(nd);
next:;
	}
}

/* Supplementary groups of the job's user, as initgroups would set them. */
static int user_groups(const char *user, uid_t uid, gid_t gid, gid_t **out)
{
	struct passwd *pw = user[0] ? getpwnam(user) : NULL;
	int n = 1;
	gid_t *g = malloc(sizeof(*g));
	if (!g)
		return -1;
	g[0] = gid;
	if (!pw || pw->pw_uid != uid) {
		/* unknown here, or not that uid: only the primary group */
		*out = g;
		return 1;
	}
	for (int tries = 0; tries < 4; tries++) {
		int want = n;
		if (getgrouplist(user, gid, g, &want) >= 0) {
			*out = g;
			return want;
		}
		gid_t *bigger = realloc(g, (size_t)want * sizeof(*g));
		if (!bigger)
			break;
		g = bigger;
		n = want;
	}
	free(g);
	return -1;
}

/* Slurm's names for what a rank is told, set beside storm's own for the
 * tools and scripts written for Slurm; a submitter's (another job's, an
 * outer Slurm's) are replaced, not inherited. */
static const char *const slurm_vars[] = {
	"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NAME", "SLURM_JOB_NODELIST",
	"SLURM_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_NNODES", "SLURM_NTASKS",
	"SLURM_NPROCS", "SLURM_NODEID", "SLURM_SUBMIT_DIR", "SLURM_CPUS_ON_NODE",
	"SLURM_CLUSTER_NAME", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_ARRAY_JOB_ID",
	"SLURM_ARRAY_TASK_ID", "SLURM_PROCID", "SLURM_LOCALID",
};
#define SLURM_VARS (sizeof(slurm_vars) / sizeof(slurm_vars[0]))
struct slurm_env {
	char v[SLURM_VARS][600];
	size_t n;
};

static bool is_slurm_var(const char *e)
{
	for (size_t i = 0; i < SLURM_VARS; i++) {
		size_t n = strlen(slurm_vars[i]);
		if (!strncmp(e, slurm_vars[i], n) && e[n] == '=')
			return true;
	}
	return false;
}

static void slurm_set(struct slurm_env *se, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void slurm_set(struct slurm_env *se, const char *name, const char *fmt, ...)
{
	char *e = se->v[se->n++];
	int k = snprintf(e, sizeof(se->v[0]), "%s=", name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e + k, sizeof(se->v[0]) - (size_t)k, fmt, ap);
	va_end(ap);
}

/* The array a job is a task of, or the one its allocation is (a step of an
 * array's task): 0 for none. */
static uint64_t array_job_of(const Storm__Cl__Launch *L)
{
	return L->spec->array_job ? L->spec->array_job : L->alloc_array_job;
}
static uint32_t array_task_of(const Storm__Cl__Launch *L)
{
	return L->spec->array_job ? L->spec->array_task : L->alloc_array_task;
}

/* The job's (or step's) values, the same for each of its ranks here; the
 * last two entries are the rank's own, set per rank (slurm_env_rank). */
static void slurm_env_job(struct slurm_env *se, const struct nd *nd,
			  const Storm__Cl__Command *cmd)
{
	const Storm__Cl__Launch *L = cmd->launch;
	const Storm__Job__Spec *s = L->spec;
	uint32_t nnodes = L->alloc_nodes ? L->alloc_nodes : (uint32_t)cmd->n_nodes, pos = 0;
	for (size_t k = 0; k < cmd->n_nodes; k++)
		if (cmd->nodes[k] == nd->index)
			pos = (uint32_t)k;
	/* a batch script is one shell on its first node; its job's tasks are -n's */
	uint32_t ntasks = s->script ? (s->ranks ? s->ranks : nnodes) : L->ranks;
	long cpus = nd->conf.cpus ? (long)nd->conf.cpus : sysconf(_SC_NPROCESSORS_ONLN);
	se->n = 0;
	slurm_set(se, "SLURM_JOB_ID", "%" PRIu64, jobid_alloc(L->job));
	slurm_set(se, "SLURM_JOBID", "%" PRIu64, jobid_alloc(L->job));
	slurm_set(se, "SLURM_JOB_NAME", "%.500s", s->name);
	slurm_set(se, "SLURM_JOB_NODELIST", "%.500s", L->alloc_nodelist);
	/* Open MPI takes a task with SLURM_NODELIST and SLURM_STEP_ID for one
	 * direct-launched with a process manager (it looks for its PMIx server),
	 * and one with SLURM_NODELIST alone for a singleton in an allocation:
	 * a job storm gives no process manager (--mpi=none) goes without it,
	 * so an MPI program there still runs as singletons, as it did */
	if (s->mpi != STORM__JOB__MPI__MPI_NONE)
		slurm_set(se, "SLURM_NODELIST", "%.500s", L->alloc_nodelist);
	slurm_set(se, "SLURM_JOB_NUM_NODES", "%u", nnodes);
	slurm_set(se, "SLURM_NNODES", "%u", nnodes);
	slurm_set(se, "SLURM_NTASKS", "%u", ntasks);
	slurm_set(se, "SLURM_NPROCS", "%u", ntasks);
	slurm_set(se, "SLURM_NODEID", "%u", pos);
	slurm_set(se, "SLURM_SUBMIT_DIR", "%.500s", s->cwd);
	slurm_set(se, "SLURM_CPUS_ON_NODE", "%ld", cpus > 0 ? cpus : 1);
	slurm_set(se, "SLURM_CLUSTER_NAME", "%.60s", nd->conf.name);
	/* every task srun starts is in a step (0 of a job of its own); Open
	 * MPI's schizo/slurm takes a task with SLURM_NODELIST but without
	 * SLURM_STEP_ID for a singleton, not the direct launch it is. A batch
	 * script's shell is in no step, as Slurm's */
	if (!s->script || jobid_is_step(L->job)) {
		slurm_set(se, "SLURM_STEP_ID", "%u", jobid_is_step(L->job) ? jobid_step_no(L->job) : 0);
		slurm_set(se, "SLURM_STEPID", "%u", jobid_is_step(L->job) ? jobid_step_no(L->job) : 0);
	}
	if (array_job_of(L)) {
		slurm_set(se, "SLURM_ARRAY_JOB_ID", "%" PRIu64, array_job_of(L));
		slurm_set(se, "SLURM_ARRAY_TASK_ID", "%u", array_task_of(L));
	}
	slurm_set(se, "SLURM_PROCID", "0");
	slurm_set(se, "SLURM_LOCALID", "0");
}

static void slurm_env_rank(struct slurm_env *se, uint32_t rank, uint32_t local)
{
	se->n -= 2;
	slurm_set(se, "SLURM_PROCID", "%u", rank);
	slurm_set(se, "SLURM_LOCALID", "%u", local);
}

static bool env_is_ours(const char *e)
{
	if (is_slurm_var(e))
		return true;
	static const char *const ours[] = {
		"STORM_JOBID=", "STORM_RANK=", "STORM_SIZE=", "STORM_LOCAL_RANK=",
		"STORM_NODEID=", "STORM_NODENAME=", "STORM_NNODES=", "STORM_JOB_DIR=",
		"STORM_BCS_FD=", "STORM_STEPID=", "STORM_JOB_NODELIST=", "STORM_JOB_NUM_NODES=",
		"STORM_ARRAY_JOB_ID=", "STORM_ARRAY_TASK_ID=",
	};
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strncmp(e, ours[i], strlen(ours[i])))
			return true;
	return false;
}

/* Checks the transferred files; returns NULL or why the job cannot start. */
static const char *check_files(const Storm__Cl__Launch *L, const char *dir, char *why,
			       size_t len)
{
	for (size_t i = 0; i < L->n_files; i++) {
		const Storm__Cl__JobFile *f = L->files[i]; /* names: nd_launch_problem */
		char path[PATH_MAX + 256];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, f->name);
		if (lstat(path, &st) < 0) {
			snprintf(why, len, "transferred file '%s' is missing: %s", f->name,
				 strerror(errno));
			return why;
		}
		if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size) {
			snprintf(why, len, "transferred file '%s' has %lld bytes, expected %" PRIu64,
				 f->name, (long long)st.st_size, f->size);
			return why;
		}
	}
	return NULL;
}

static void fail_launch(struct nd *nd, uint64_t job, uint32_t slot, const char *why)
{
	slog("job %" PRIu64 " cannot start: %s", job, why);
	nd_job_dir_remove(nd, job);
	/* no rank runs here, so this node is done with the job at once */
	nd_queue_note(nd, job, STORM__CL__JOB_NOTE__KIND__FAILED, NO_DONE_SLOT, "%s: %s",
		      nd->name, why);
	nd_queue_note(nd, job, STORM__CL__JOB_NOTE__KIND__DONE,
		      slot < GM_JOB_SLOTS ? slot : NO_DONE_SLOT, "%s", "");
}

/* The child is past its execve (vfork returned) or, under a debugger's
 * fork emulation, on its way: it said "T" if it is traced, and then halts
 * at the exec for us to place it and let it go. An untraced child (ptrace
 * refused here) is placed just after its exec. */
static void adopt(struct nd_job *job, pid_t pid, int hs_r)
{
	char c;
	ssize_t n = -1;
	if (hs_r >= 0)
		while ((n = read(hs_r, &c, 1)) < 0 && errno == EINTR)
			;
	if (n != 1) {
		nd_gang_adopt(job, pid, false);
		return;
	}
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	/* WNOWAIT: if the exec failed it exited, and the reaper reports that */
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WSTOPPED | WNOWAIT) < 0 && errno == EINTR)
		;
	if (si.si_code != CLD_TRAPPED && si.si_code != CLD_STOPPED)
		return;
	nd_gang_adopt(job, pid, true);
	if (ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)nd_gang_release_signal(job)) < 0)
		slog("job %" PRIu64 ": cannot release pid %d after its exec: %s", job->id,
		       (int)pid, strerror(errno));
}

/* The environment strings of a job's ranks; the plan's envp points into
 * them (STORM_RANK and STORM_LOCAL_RANK rewritten for each rank). */
struct rank_env {
	char e_job[48], e_size[32], e_node[32], e_name[96], e_nn[32], e_rank[32], e_local[40];
	char e_dir[PATH_MAX + 16];
	char e_step[32], e_alist[600], e_anodes[48], e_ajob[48], e_atask[48];
};

/* pl->envp: the job's own variables but storm's, then storm's and Slurm's;
 * room left after them for the process manager's. Their count, or -1 out
 * of memory. */
static long job_envp(struct nd *nd, const Storm__Cl__Command *cmd, struct nd_job *job,
		     struct plan *pl, struct rank_env *ev, struct slurm_env *se)
{
	const Storm__Cl__Launch *L = cmd->launch;
	char jobid[32], size[16], nodeid[16], nnodes[16];
	/* a step's STORM_JOBID is its allocation's, as Slurm's SLURM_JOB_ID */
	snprintf(jobid, sizeof(jobid), "%" PRIu64, jobid_alloc(L->job));
	snprintf(size, sizeof(size), "%u", L->ranks);
	snprintf(nodeid, sizeof(nodeid), "%u", nd->index);
	snprintf(nnodes, sizeof(nnodes), "%zu", cmd->n_nodes);
	snprintf(ev->e_job, sizeof(ev->e_job), "STORM_JOBID=%s", jobid);
	snprintf(ev->e_size, sizeof(ev->e_size), "STORM_SIZE=%s", size);
	snprintf(ev->e_node, sizeof(ev->e_node), "STORM_NODEID=%s", nodeid);
	snprintf(ev->e_name, sizeof(ev->e_name), "STORM_NODENAME=%s", nd->name);
	snprintf(ev->e_nn, sizeof(ev->e_nn), "STORM_NNODES=%s", nnodes);
	snprintf(ev->e_dir, sizeof(ev->e_dir), "STORM_JOB_DIR=%s", job->dir);

	snprintf(ev->e_step, sizeof(ev->e_step), "STORM_STEPID=%u", jobid_step_no(L->job));
	snprintf(ev->e_alist, sizeof(ev->e_alist), "STORM_JOB_NODELIST=%.512s", L->alloc_nodelist);
	snprintf(ev->e_anodes, sizeof(ev->e_anodes), "STORM_JOB_NUM_NODES=%u", L->alloc_nodes);
	snprintf(ev->e_ajob, sizeof(ev->e_ajob), "STORM_ARRAY_JOB_ID=%" PRIu64, array_job_of(L));
	snprintf(ev->e_atask, sizeof(ev->e_atask), "STORM_ARRAY_TASK_ID=%u", array_task_of(L));

	size_t ne = 0;
	pl->envp = calloc(L->spec->n_env + 16 + SLURM_VARS + ND_PMI_ENV_MAX, sizeof(char *));
	if (!pl->envp)
		return -1;
	for (size_t i = 0; i < L->spec->n_env; i++)
		if (!env_is_ours(L->spec->env[i]))
			pl->envp[ne++] = L->spec->env[i];
	char *fixed[] = {ev->e_job, ev->e_size, ev->e_node, ev->e_name, ev->e_nn, ev->e_dir,
			 ev->e_rank, ev->e_local};
	for (size_t i = 0; i < 8; i++)
		pl->envp[ne++] = fixed[i];
	if (pl->fd3 >= 0)
		pl->envp[ne++] = "STORM_BCS_FD=3";
	if (jobid_is_step(L->job))
		pl->envp[ne++] = ev->e_step;
	if (L->alloc_nodes) {
		pl->envp[ne++] = ev->e_alist;
		pl->envp[ne++] = ev->e_anodes;
	}
	if (array_job_of(L)) {
		pl->envp[ne++] = ev->e_ajob;
		pl->envp[ne++] = ev->e_atask;
	}
	slurm_env_job(se, nd, cmd);
	for (size_t k = 0; k < se->n; k++)
		pl->envp[ne++] = se->v[k];
	pl->envp[ne] = NULL;
	return (long)ne;
}

/* Rank r's stdout and stderr (out, err: read end, write end), a terminal
 * for rank 0 with --pty. 0, or -1 (logged). */
static int rank_stdio(struct nd_job *job, const Storm__Cl__Launch *L, const struct nd_rank *r,
		      struct plan *pl, int out[2], int err[2])
{
	pl->stdin_r = -1;
	if (r->rank == 0 && L->spec->pty) {
		/* one terminal for its fds 0-2; its output comes as stdout */
		int m, s;
		int prc = nd_pty_open(job, L->spec->pty_rows, L->spec->pty_cols, &m, &s);
		if (prc < 0) {
			slog("job %" PRIu64 ": cannot open a pseudo-terminal: %s", job->id,
			     strerror(-prc));
			return -1;
		}
		out[0] = m;
		out[1] = s;
		err[1] = fcntl(s, F_DUPFD_CLOEXEC, 3);
		pl->stdin_r = fcntl(s, F_DUPFD_CLOEXEC, 3);
	} else if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		slog("job %" PRIu64 ": cannot create pipes for rank %u: %s",
		       job->id, r->rank, strerror(errno));
		for (int s = 0; s < 2; s++)
			if (out[s] >= 0)
				close(out[s]);
		return -1;
	}
	return 0;
}

/* Rank i forked and exec'd on its plan, its output watched. 0, or -1
 * (logged). */
static int fork_rank(struct nd *nd, struct nd_job *job, const Storm__Cl__Launch *L,
		     struct plan *pl, uint32_t i, int out[2], int err[2])
{
	struct nd_rank *r = &job->ranks[i];
	pl->pgid = job->pgid;
	int hs[2] = {-1, -1};
	if (pipe2(hs, O_CLOEXEC) < 0)
		hs[0] = hs[1] = -1;
	pl->traced_w = hs[1];
	if (r->rank == 0 && !L->spec->pty && L->spec->forward_stdin &&
	    nd_stdin_open(job, &pl->stdin_r) < 0)
		slog("job %" PRIu64 ": cannot open rank 0's stdin: %s; it reads /dev/null",
		     job->id, strerror(errno));
	/* vfork: fork() copies the page tables of the daemon's ~90 MB of
	 * buffers, 3-5 ms a rank here. run_child is vfork-safe: plain
	 * system calls on its own fd table and stack frame (the groups
	 * were looked up in the parent), then execve or _exit; the user
	 * switch is raw system calls, as the PMIx library's thread (pmix.c)
	 * goes on running beside it. */
	pid_t pid = vfork();
	if (pid == 0)
		run_child(pl, out[1], err[1]);
	int fork_err = errno;
	nd_pmi_rank_forked(nd, job, i);
	close(out[1]);
	close(err[1]);
	if (hs[1] >= 0)
		close(hs[1]);
	if (pl->stdin_r >= 0)
		close(pl->stdin_r);
	if (pid > 0) {
		adopt(job, pid, hs[0]);
		nd_trace(job, STORM__TRACE__EVENT__KIND__EXEC, nd_wall_us(), 0, r->rank, 0);
	}
	if (hs[0] >= 0)
		close(hs[0]);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		slog("job %" PRIu64 ": cannot fork rank %u: %s", job->id, r->rank,
		       strerror(fork_err));
		return -1;
	}
	if (job->pgid == 0)
		job->pgid = pid;
	/* both sides set the group, so neither order of running races */
	setpgid(pid, job->pgid);
	r->pid = pid;
	job->nalive++;
	nd_rank_pipes_watch(nd, job, r, out[0], err[0]);
	return 0;
}

/* Rank first + i of the job started: its environment (the process
 * manager's entries at envp[ne..]), stdio and process. 0, or -1 (logged). */
static int start_rank(struct nd *nd, struct nd_job *job, const Storm__Cl__Launch *L,
		      struct plan *pl, struct rank_env *ev, struct slurm_env *se, size_t ne,
		      int bcs_fd, uint32_t first, uint32_t i)
{
	char rank[16], local[16];
	/* the process manager's entries after the job's, per rank */
	int pfd = -1;
	int np = nd_pmi_rank_env(nd, job, i, pl->envp + ne, ND_PMI_ENV_MAX, &pfd);
	if (np < 0) {
		slog("job %" PRIu64 ": cannot set up the process manager for rank %u: %s",
		     job->id, first + i, strerror(-np));
		return -1;
	}
	pl->envp[ne + (size_t)np] = NULL;
	pl->fd3 = pfd >= 0 ? pfd : bcs_fd;
	struct nd_rank *r = &job->ranks[i];
	r->rank = first + i;
	snprintf(rank, sizeof(rank), "%u", r->rank);
	snprintf(local, sizeof(local), "%u", i);
	snprintf(ev->e_rank, sizeof(ev->e_rank), "STORM_RANK=%s", rank);
	snprintf(ev->e_local, sizeof(ev->e_local), "STORM_LOCAL_RANK=%s", local);
	slurm_env_rank(se, r->rank, i);
	int out[2] = {-1, -1}, err[2] = {-1, -1};
	if (rank_stdio(job, L, r, pl, out, err) < 0)
		return -1;
	return fork_rank(nd, job, L, pl, i, out, err);
}

static void start_ranks(struct nd *nd, const Storm__Cl__Command *cmd, struct nd_job *job, struct plan *pl, uint32_t first)
{
	const Storm__Cl__Launch *L = cmd->launch;
	struct rank_env ev;
	/* the event loop's alone, and only until the ranks' execve */
	static struct slurm_env slurm;
	int bcs_fd = pl->fd3;
	long ne = job_envp(nd, cmd, job, pl, &ev, &slurm);
	if (ne < 0) {
		fail_launch(nd, L->job, L->slot, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < job->nranks; i++)
		if (start_rank(nd, job, L, pl, &ev, &slurm, (size_t)ne, bcs_fd, first, i) < 0) {
			nd_job_start_failed(nd, job, "cannot start every rank (see the node's log)");
			return;
		}
	nd_job_started(nd, job);
}

void nd_rank_pipes_watch(struct nd *nd, struct nd_job *job, struct nd_rank *r, int out_r,
			 int err_r)
{
	int fds[2] = {out_r, err_r};
	for (int s = 0; s < 2; s++) {
		struct nd_pipe *p = &r->pipes[s];
		p->fd = fds[s];
		p->stream = (uint32_t)s + 1;
		p->job = job;
		p->rank = r;
		fcntl(p->fd, F_SETFL, O_NONBLOCK);
		pipe_watch(nd, p);
	}
}

void nd_job_started(struct nd *nd, struct nd_job *job)
{
	/* job_end_combined: the MM does nothing with a STARTED but mark the
	 * job's row for its next commit, so the first node's is enough */
	if (!nd->conf.job_end_combined || job->first_node)
		nd_queue_note(nd, job->id, STORM__CL__JOB_NOTE__KIND__STARTED, NO_DONE_SLOT, "%s",
			      "");
	slog("job %" PRIu64 ": started ranks %u..%u", job->id,
	       job->nranks ? job->ranks[0].rank : 0,
	       job->nranks ? job->ranks[job->nranks - 1].rank : 0);
	nd_ranks_save(nd, job);
}

void nd_job_start_failed(struct nd *nd, struct nd_job *job, const char *why)
{
	/* could not start them all: none may run; the reaper reports the
	 * killed ones and then DONE */
	nd_queue_note(nd, job->id, STORM__CL__JOB_NOTE__KIND__FAILED, NO_DONE_SLOT, "%s: %s",
		      nd->name, why);
	if (job->nalive > 0)
		killpg(job->pgid, SIGKILL);
	else
		job_end(nd, job);
}

/* whole: one launch, checks then fork, undoing what it made on each failure in one place */
void nd_launch(struct nd *nd, const Storm__Cl__Command *cmd, size_t k)
{
	const Storm__Cl__Launch *L = cmd->launch;
	char why[PATH_MAX + 256];
	if (find_job(nd, L->job)) {
		slog("job %" PRIu64 " launched again while it runs here; ignored", L->job);
		return;
	}
	if (L->slot < GM_JOB_SLOTS)
		nd->slot_job[L->slot] = L->job;
	const char *bad = nd_launch_problem(cmd, k, why, sizeof(why));
	if (bad) {
		fail_launch(nd, L->job, L->slot, bad);
		return;
	}
	uint32_t count = L->rank_count[k], first = L->first_rank[k];
	if (!nd->root && L->spec->uid != geteuid()) {
		snprintf(why, sizeof(why), "cannot run as uid %u: stormnd is not root (uid %u)",
			 L->spec->uid, (unsigned)geteuid());
		fail_launch(nd, L->job, L->slot, why);
		return;
	}
	struct nd_job *job = calloc(1, sizeof(*job));
	if (!job || !(job->ranks = calloc(count ? count : 1, sizeof(*job->ranks)))) {
		free(job);
		fail_launch(nd, L->job, L->slot, "out of memory");
		return;
	}
	job->id = L->job;
	job->slot = L->slot;
	job->nranks = count;
	job->freeze_fd = job->procs_fd = -1;
	job->stdin_w = -1;
	job->daemon = nd;
	job->first_node = k == 0;
	job->may_be_quiet = nd->conf.job_end_combined && k != 0 && !L->restore &&
			    !L->spec->replay_trace[0];
	for (uint32_t i = 0; i < count; i++)
		job->ranks[i].pipes[0].fd = job->ranks[i].pipes[1].fd = -1;
	int rc = nd_job_dir_create(nd, L->job, L->spec->uid, L->spec->gid, job->dir, sizeof(job->dir));
	if (rc < 0) {
		snprintf(why, sizeof(why), "cannot create job directory %s: %s", job->dir,
			 strerror(-rc));
		goto fail;
	}
	if (nd->file_err_job == L->job) {
		snprintf(why, sizeof(why), "%s", nd->file_err);
		goto fail;
	}
	if (check_files(L, job->dir, why, sizeof(why)))
		goto fail;

	char prog[PATH_MAX + 256];
	if (L->exec_path[0])
		snprintf(prog, sizeof(prog), "%s", L->exec_path);
	else if (L->n_files)
		snprintf(prog, sizeof(prog), "%s/%s", job->dir, L->files[0]->name);
	else /* a restore: the ranks come from their images */
		prog[0] = '\0';
	struct plan pl = {.path = prog, .cwd = L->spec->cwd, .node = nd->name, .uid = L->spec->uid,
			  .gid = L->spec->gid, .switch_user = nd->root, .fd3 = -1};
	char *argv0[] = {prog, NULL};
	pl.argv = argv0;
	if (L->spec->n_argv) {
		pl.argv = calloc(L->spec->n_argv + 1, sizeof(char *));
		if (!pl.argv) {
			snprintf(why, sizeof(why), "out of memory");
			goto fail;
		}
		memcpy(pl.argv, L->spec->argv, L->spec->n_argv * sizeof(char *));
	}
	if (nd->root && (pl.ngroups = user_groups(L->spec->user, L->spec->uid, L->spec->gid, &pl.groups)) < 0) {
		snprintf(why, sizeof(why), "cannot list the groups of user '%s'", L->spec->user);
		if (pl.argv != argv0)
			free(pl.argv);
		goto fail;
	}
	rc = nd_gang_job_start(nd, job);
	if (rc < 0) {
		snprintf(why, sizeof(why), "cannot create the job's cgroup for switch = freezer: %s",
			 strerror(-rc));
		if (pl.argv != argv0)
			free(pl.argv);
		free(pl.groups);
		goto fail;
	}
	job->next = nd->jobs;
	nd->jobs = job;
	job->mpi = L->spec->mpi;
	if (count && job->mpi == STORM__JOB__MPI__MPI_BCS)
		pl.fd3 = nd_bcs_job_start(nd, job, cmd, k);
	if (count && (rc = nd_pmi_job_start(nd, job, cmd, k)) < 0) {
		/* in the job list now, with no rank alive: this ends it */
		snprintf(why, sizeof(why), "cannot start the job's process manager: %s",
			 strerror(-rc));
		nd_job_start_failed(nd, job, why);
	} else if (count == 0) {
		if (!nd->conf.job_end_combined || job->first_node)
			nd_queue_note(nd, job->id, STORM__CL__JOB_NOTE__KIND__STARTED, NO_DONE_SLOT,
				      "%s", "");
		job_end(nd, job);
	} else if (L->restore) {
		nd->restore_ranks(nd, cmd, job, first);
	} else {
		start_ranks(nd, cmd, job, &pl, first);
	}
	if (pl.argv != argv0)
		free(pl.argv);
	free(pl.envp);
	free(pl.groups);
	return;
fail:
	free(job->ranks);
	free(job);
	fail_launch(nd, L->job, L->slot, why);
}

void nd_signal_job(struct nd *nd, const Storm__Cl__Signal *sig)
{
	nd->signalled_job = sig->job;
	struct nd_job *job = find_job(nd, sig->job);
	if (!job || job->pgid <= 0) {
		/* it may have ended since the MM decided; nothing to do */
		slog("signal %d for job %" PRIu64 ", which does not run here; ignored",
		       sig->signal, sig->job);
		return;
	}
	if (sig->signal <= 0 || sig->signal >= NSIG) {
		slog("job %" PRIu64 ": invalid signal %d; ignored", job->id, sig->signal);
		return;
	}
	nd_pmi_job_signalled(nd, job);
	if (killpg(job->pgid, sig->signal) < 0 && errno != ESRCH)
		slog("job %" PRIu64 ": cannot send signal %d: %s", job->id, sig->signal,
		       strerror(errno));
	if (sig->kill_after_ms) {
		uint64_t at = clock_mono_ns() + (uint64_t)sig->kill_after_ms * 1000000u;
		if (!job->kill_at_ns || at < job->kill_at_ns)
			job->kill_at_ns = at;
	}
}

void nd_timers(struct nd *nd)
{
	nd_leftovers_timer(nd);
	uint64_t now = clock_mono_ns();
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->kill_at_ns && now >= j->kill_at_ns) {
			j->kill_at_ns = 0;
			slog("job %" PRIu64 ": still running after the grace time; SIGKILL",
			       j->id);
			killpg(j->pgid, SIGKILL);
		}
}

int nd_timer_ms(const struct nd *nd)
{
	uint64_t now = clock_mono_ns(), best = nd->leftovers_kill_ns ? nd->leftovers_kill_ns : UINT64_MAX;
	if (nd->leftovers_look_ns && nd->leftovers_look_ns < best)
		best = nd->leftovers_look_ns;
	for (const struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->kill_at_ns && j->kill_at_ns < best)
			best = j->kill_at_ns;
	if (best == UINT64_MAX)
		return -1;
	return best <= now ? 0 : (int)((best - now + 999999) / 1000000);
}

void nd_kill_all(struct nd *nd)
{
	while (nd->jobs) {
		struct nd_job *j = nd->jobs;
		if (j->pgid > 0)
			killpg(j->pgid, SIGKILL);
		for (uint32_t i = 0; i < j->nranks; i++)
			if (j->ranks[i].pid > 0) {
				int st;
				while (waitpid(j->ranks[i].pid, &st, 0) < 0 && errno == EINTR)
					;
			}
		nd_job_dir_remove(nd, j->id);
		job_free(nd, j);
	}
}
