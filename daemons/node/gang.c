/* Gang scheduling on a node: each strobe names the job this node's cell of
 * the running matrix row holds; that job runs and every other job here is
 * stopped. Two ways to stop a job (storm.conf [scheduler] switch):
 *   signals  SIGSTOP / SIGCONT to the job's process group (children that
 *            stay in the group go with it; one that makes its own session
 *            escapes);
 *   freezer  the job's cgroup v2 cgroup.freeze (every descendant, and the
 *            job's own processes cannot undo it with SIGCONT).
 * Ranks are born stopped when their job's row is not running: each child
 * asks to be traced before its execve, so it halts at the exec before the
 * program's first instruction; the daemon then puts it in its job's state
 * and lets go (ranks.c, nd_gang_adopt).
 *
 * Strict switch ([scheduler] switch_wait_pct > 0): the incoming job is
 * continued only once every outgoing rank is off the CPU (signals: each of
 * its threads in state T, or not run since the wait last looked, as a
 * stopping thread waiting for a core is off already; freezer:
 * cgroup.events says "frozen 1"), or once
 * the bound (that share of a slice) has passed. Stopping is asynchronous in
 * the kernel (a SIGSTOP takes effect when the task next runs, a freeze when
 * each task leaves the kernel), so without the wait both jobs share the
 * CPUs for a while after every switch. The wait blocks (it must not take
 * the CPU the outgoing ranks need to reach their stop): for the stop
 * notifications (SIGCHLD, asked for only while waiting), for a change of
 * the cgroups' cgroup.events, and at most LOOK_NS between looks. It is short
 * and bounded, and nothing the daemon has to do is more urgent than the
 * switch. When /dev/storm is there the module does all this (kswitch.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nd.h"
#include "sigchld.h"
#include "trace.pb-c.h"

/* ---- the cgroup v2 tree: <mount><own cgroup>/storm-<node>/job<id> */

static int find_own_cgroup(char *out, size_t len)
{
	char mnt[PATH_MAX] = "", own[PATH_MAX] = "", line[PATH_MAX + 256];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* ... mount-point ... - fstype source options */
		char *dash = strstr(line, " - cgroup2 ");
		if (!dash)
			continue;
		char point[PATH_MAX];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1) {
			snprintf(mnt, sizeof(mnt), "%s", point);
			break;
		}
	}
	fclose(f);
	if (!mnt[0])
		return -ENOENT;
	f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			snprintf(own, sizeof(own), "%.4000s", line + 3);
			own[strcspn(own, "\n")] = '\0';
		}
	fclose(f);
	if (!own[0])
		return -ENOENT;
	if ((size_t)snprintf(out, len, "%s%s", mnt, strcmp(own, "/") ? own : "") >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int err = n < 0 ? errno : 0;
	close(fd);
	return -err;
}

static void job_cgroup_path(const struct nd *nd, uint64_t job, char *out, size_t len)
{
	snprintf(out, len, "%s/job%" PRIu64, nd->cg_base, job);
}

/* A job cgroup left by an earlier daemon: its processes go, then it. */
static void remove_stale(struct nd *nd)
{
	DIR *d = opendir(nd->cg_base);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "job", 3))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", nd->cg_base, e->d_name);
		write_file(path, "cgroup.kill", "1");
		if (rmdir(path) < 0 && errno != ENOENT)
			nd_cg_remove_later(nd, path);
	}
	closedir(d);
}

int nd_gang_init(struct nd *nd)
{
	nd->cg_base[0] = '\0';
	if (nd->conf.switch_mode != SWITCH_FREEZER)
		return 0;
	char own[PATH_MAX];
	int rc = find_own_cgroup(own, sizeof(own));
	if (rc < 0) {
		fprintf(stderr,
			"stormnd: error: switch = freezer needs a cgroup v2 hierarchy, and none is "
			"mounted here (%s); use switch = signals\n",
			strerror(-rc));
		return -1;
	}
	if ((size_t)snprintf(nd->cg_base, sizeof(nd->cg_base), "%s/storm-%s", own, nd->name) >=
	    sizeof(nd->cg_base) - 32) {
		fprintf(stderr, "stormnd: error: cgroup path %s/storm-%s is too long\n", own,
			nd->name);
		return -1;
	}
	if (mkdir(nd->cg_base, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr,
			"stormnd: error: switch = freezer: cannot create cgroup %s: %s (the daemon "
			"needs a delegated cgroup v2 subtree; use switch = signals)\n",
			nd->cg_base, strerror(errno));
		return -1;
	}
	char probe[PATH_MAX + 64];
	snprintf(probe, sizeof(probe), "%s/cgroup.freeze", nd->cg_base);
	if (access(probe, W_OK) < 0) {
		fprintf(stderr,
			"stormnd: error: switch = freezer: %s is missing or not writable (%s); "
			"use switch = signals\n",
			probe, strerror(errno));
		return -1;
	}
	remove_stale(nd);
	return 0;
}

void nd_gang_close(struct nd *nd)
{
	if (nd->cg_base[0])
		rmdir(nd->cg_base); /* fails while a job cgroup is still going: harmless */
	for (int i = 0; i < nd->cg_pending; i++)
		free(nd->cg_remove[i]);
	nd->cg_pending = 0;
}

void nd_cg_remove_later(struct nd *nd, const char *path)
{
	if (nd->cg_pending < ND_CG_PENDING_MAX)
		nd->cg_remove[nd->cg_pending++] = strdup(path);
}

/* Cgroups whose last process was still exiting when its job ended. */
void nd_gang_timers(struct nd *nd)
{
	for (int i = 0; i < nd->cg_pending;) {
		if (!nd->cg_remove[i] || rmdir(nd->cg_remove[i]) == 0 || errno == ENOENT) {
			free(nd->cg_remove[i]);
			nd->cg_remove[i] = nd->cg_remove[--nd->cg_pending];
		} else {
			i++;
		}
	}
}

/* ---- per job */

int nd_gang_job_start(struct nd *nd, struct nd_job *job)
{
	job->stopped = nd->run_job != jobid_alloc(job->id);
	job->freeze_fd = job->procs_fd = job->events_fd = -1;
	if (!job->stopped)
		nd_trace_run(nd, job, true); /* launched into its running row */
	if (!nd->cg_base[0])
		return 0;
	char path[PATH_MAX + 64], file[PATH_MAX + 96];
	job_cgroup_path(nd, job->id, path, sizeof(path));
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(file, sizeof(file), "%s/cgroup.freeze", path);
	job->freeze_fd = open(file, O_WRONLY | O_CLOEXEC);
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	job->procs_fd = open(file, O_WRONLY | O_CLOEXEC);
	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	job->events_fd = open(file, O_RDONLY | O_CLOEXEC);
	if (job->freeze_fd < 0 || job->procs_fd < 0 || job->events_fd < 0) {
		int err = errno;
		nd_gang_job_end(nd, job);
		return -err;
	}
	/* frozen before any rank enters, if its row is not running */
	if (job->stopped && write(job->freeze_fd, "1", 1) < 0) {
		int err = errno;
		nd_gang_job_end(nd, job);
		return -err;
	}
	return 0;
}

/* A new rank, halted at its exec (or, untraced, just past it). */
void nd_gang_adopt(struct nd_job *job, pid_t pid, bool traced)
{
	if (job->procs_fd >= 0) {
		char s[24];
		int n = snprintf(s, sizeof(s), "%d", (int)pid);
		if (write(job->procs_fd, s, (size_t)n) < 0)
			slog("job %" PRIu64 ": cannot move pid %d into its cgroup: %s",
			       job->id, (int)pid, strerror(errno));
		return;
	}
	if (job->stopped && !traced)
		kill(pid, SIGSTOP); /* a few µs after its exec: the best without ptrace */
}

/* The signal a traced rank is let go with: it stops at once, before its
 * program's first instruction, if its job is stopped (the freezer holds a
 * frozen job's ranks by itself). */
int nd_gang_release_signal(const struct nd_job *job)
{
	return job->stopped && job->procs_fd < 0 ? SIGSTOP : 0;
}

void nd_gang_job_end(struct nd *nd, struct nd_job *job)
{
	if (job->freeze_fd >= 0)
		close(job->freeze_fd);
	if (job->procs_fd >= 0)
		close(job->procs_fd);
	if (job->events_fd >= 0)
		close(job->events_fd);
	job->freeze_fd = job->procs_fd = job->events_fd = -1;
	if (!nd->cg_base[0])
		return;
	char path[PATH_MAX + 64];
	job_cgroup_path(nd, job->id, path, sizeof(path));
	/* descendants that left the process group go too */
	write_file(path, "cgroup.kill", "1");
	if (rmdir(path) < 0 && errno != ENOENT)
		nd_cg_remove_later(nd, path);
}

static int set_stopped(struct nd_job *job, bool stop)
{
	int rc = 0;
	if (job->freeze_fd >= 0) {
		if (pwrite(job->freeze_fd, stop ? "1" : "0", 1, 0) < 0)
			rc = -errno;
	} else if (job->pgid > 0) {
		if (killpg(job->pgid, stop ? SIGSTOP : SIGCONT) < 0 && errno != ESRCH)
			rc = -errno;
	}
	if (rc < 0)
		slog("job %" PRIu64 ": cannot %s it: %s", job->id, stop ? "stop" : "continue",
		       strerror(-rc));
	job->stopped = stop;
	return rc;
}

static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Is every thread of the rank off the CPU for good? Stopped, traced or
 * dead; or not stopped yet but none has been on a CPU since the wait last
 * looked (schedstat's run time and run count, per thread, unchanged). A
 * stop is pending on each thread, so it stops before running any of its
 * code again, and one on a CPU when the stop came is kicked off it at once
 * (it is stopped by the next look): what is left has not run since, most
 * often a rank waiting for a core on a busy node, which would otherwise
 * hold the switch until the bound. */
static bool rank_off_cpu(struct nd_rank *r)
{
	/* the cheap answer first: the rank's group stop is complete (every
	 * thread stopped); WNOWAIT leaves that for the reaper */
	siginfo_t si = { 0 };
	if (waitid(P_PID, (id_t)r->pid, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0 &&
	    si.si_pid == r->pid)
		return true;
	char path[80], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)r->pid);
	DIR *d = opendir(path);
	if (!d)
		return true; /* gone */
	bool all = true;
	uint64_t mark = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", (int)r->pid, e->d_name);
		if (read_small(path, buf, sizeof(buf)) <= 0)
			continue; /* the thread exited */
		/* "tid (comm) S ...": comm may hold anything, the state follows the last ')' */
		const char *p = strrchr(buf, ')');
		char st = p && p[1] == ' ' ? p[2] : 'R';
		all &= st == 'T' || st == 't' || st == 'Z' || st == 'X' || st == 'x';
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/schedstat", (int)r->pid,
			 e->d_name);
		unsigned long long run = 0, wait = 0, count = 0;
		if (read_small(path, buf, sizeof(buf)) > 0)
			sscanf(buf, "%llu %llu %llu", &run, &wait, &count);
		mark = mark * 1000003 + strtoull(e->d_name, NULL, 10) * 31 + run * 7 + count;
	}
	closedir(d);
	mark |= 1; /* 0: not looked */
	bool still = r->run_mark == mark;
	r->run_mark = mark;
	return all || still;
}

static bool job_off_cpu(const struct nd_job *j)
{
	if (j->events_fd >= 0) {
		char buf[256];
		ssize_t n = pread(j->events_fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			return true; /* the cgroup is going */
		buf[n] = '\0';
		return strstr(buf, "frozen 1") != NULL;
	}
	for (uint32_t r = 0; r < j->nranks; r++)
		if (j->ranks[r].pid > 0 && !rank_off_cpu(&j->ranks[r]))
			return false;
	return true;
}

/* Between looks at the ranks that have not stopped: a rank waiting for a
 * core is off the CPU once a look finds it has not run since the last. */
#define LOOK_NS 50000u
#define WAIT_FDS 16

/* Sleeps until a rank of this daemon stops (SIGCHLD), a leaving job's
 * cgroup.events changes, or ns pass. Signals read here are handed on: a
 * SIGCHLD to the loop's reaper, anything else raised again for the loop
 * (after the wait, so that it does not wake the wait itself). */
static void wait_event(struct nd *nd, uint64_t ns, sigset_t *others)
{
	struct pollfd p[WAIT_FDS];
	nfds_t n = 0;
	p[n++] = (struct pollfd){ .fd = nd->sigfd, .events = POLLIN };
	for (struct nd_job *j = nd->jobs; j && n < WAIT_FDS; j = j->next)
		if (j->leaving && j->events_fd >= 0)
			p[n++] = (struct pollfd){ .fd = j->events_fd, .events = POLLPRI };
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	if (ppoll(p, n, &ts, NULL) <= 0 || !(p[0].revents & POLLIN))
		return;
	struct signalfd_siginfo si;
	while (read(nd->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			nd->signalled = true;
		else
			sigaddset(others, (int)si.ssi_signo);
	}
}

/* Waits until every leaving job is off the CPU or the bound passed; true
 * when they all are. */
static bool wait_off_cpu(struct nd *nd, uint64_t bound_ns)
{
	uint64_t until = clock_mono_ns() + bound_ns;
	sigset_t others;
	sigemptyset(&others);
	bool done;
	for (;;) {
		done = true;
		for (struct nd_job *j = nd->jobs; j && done; j = j->next)
			if (j->leaving && !job_off_cpu(j))
				done = false;
		uint64_t now = clock_mono_ns();
		if (done || now >= until)
			break;
		wait_event(nd, until - now < LOOK_NS ? until - now : LOOK_NS, &others);
	}
	for (int sig = 1; sig < SIGRTMIN; sig++)
		if (sigismember(&others, sig))
			raise(sig);
	return done;
}

uint64_t nd_gang_wait_bound_ns(const struct nd *nd)
{
	return (uint64_t)nd_slice_us(nd) * 10 * nd->conf.switch_wait_pct;
}

int nd_gang_apply(struct nd *nd, uint64_t run, struct nd_gang_sw *sw)
{
	int changed = 0;
	uint64_t t0 = clock_mono_ns();
	*sw = (struct nd_gang_sw){ 0 };
	nd->run_job = run;
	bool incoming = false, going = false;
	for (struct nd_job *j = nd->jobs; j; j = j->next) {
		incoming |= jobid_alloc(j->id) == run && j->stopped && !j->ckpt_busy;
		going |= jobid_alloc(j->id) != run && !j->stopped;
	}
	/* only an incoming job is worth waiting for: nothing else competes */
	bool strict = incoming && going && nd->conf.switch_wait_pct;
	if (strict)
		sigchld_notify(true);
	/* the outgoing job first, so two jobs never run at once */
	/* a step runs in its allocation's turn: the strobe names the allocation */
	for (struct nd_job *j = nd->jobs; j; j = j->next) {
		j->leaving = false;
		if (jobid_alloc(j->id) != run && !j->stopped) {
			set_stopped(j, true);
			for (uint32_t r = 0; r < j->nranks; r++)
				j->ranks[r].run_mark = 0;
			nd_trace_run(nd, j, false);
			j->leaving = true;
			changed++;
		}
	}
	if (strict) {
		sw->timeout = !wait_off_cpu(nd, nd_gang_wait_bound_ns(nd));
		sigchld_notify(false);
		sw->off_ns = clock_mono_ns() - t0;
		sw->waited = true;
		if (sw->timeout)
			slog("switch to job %" PRIu64 ": the outgoing ranks were not all off the "
			     "CPU after %" PRIu64 " us; continuing it anyway",
			     run, sw->off_ns / 1000);
	}
	/* a job being checkpointed stays stopped until its images are written */
	for (struct nd_job *j = nd->jobs; j; j = j->next) {
		if (jobid_alloc(j->id) == run && j->stopped && !j->ckpt_busy) {
			set_stopped(j, false);
			nd_trace_run(nd, j, true);
			changed++;
		}
	}
	return changed;
}

void nd_gang_mark(struct nd *nd, uint64_t run)
{
	nd->run_job = run;
	for (struct nd_job *j = nd->jobs; j; j = j->next) {
		bool stop = jobid_alloc(j->id) != run || j->ckpt_busy;
		if (stop != j->stopped) {
			j->stopped = stop;
			nd_trace_run(nd, j, !stop);
		}
	}
}
