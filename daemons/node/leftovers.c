/* Processes a job left behind outside its process group. A job's end kills
 * its ranks' process group, but a descendant that started its own session
 * (setsid: Open MPI's singleton starts its orted so, daemons do) is not in
 * it and would outlive the job. The daemon is a child subreaper, so such a
 * process becomes the daemon's child once its parents are gone; its
 * environment names the job it came from (STORM_JOB_DIR, unique to a job on
 * this node). One whose job no longer runs here gets SIGTERM (an orted then
 * removes its session directory) at each job's end and whenever a process
 * the daemon did not start is reaped (its own children are then the
 * daemon's), and SIGKILL if it is still there kill_wait_ms later. Nothing
 * is swept while a checkpoint helper runs: a restored rank carries its old
 * job's environment and comes to the daemon before it is the new job's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nd.h"

#define DIR_VAR "STORM_JOB_DIR="
#define LOOK_AGAIN_NS (20 * 1000000ull) /* an execve's gap is far shorter */
#define LOOKS_MAX 50u                   /* a second of looks, then the next event */

/* The parent pid (field 4 of /proc/PID/stat), -1 if it cannot be read. */
static pid_t parent_of(pid_t pid, char *comm, size_t comm_len)
{
	char buf[512], state;
	int ppid;
	const char *p = nd_proc_stat(pid, buf, sizeof(buf), comm, comm_len);
	return p && sscanf(p, " %c %d", &state, &ppid) == 2 ? ppid : -1;
}

/* Its STORM_JOB_DIR into dir: 1; 0 if it has none (not a job's); -1 if its
 * environment read empty, as it does for a moment inside execve (the new
 * memory map has no environment yet): undecided, to be read again. */
static int job_dir_of(const char *pid, char *dir, size_t len)
{
	char path[300];
	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* a job's environment is small; its storm entries come first after the
	 * user's, so a bounded read finds them in any real one */
	size_t cap = 256 * 1024, have = 0;
	char *env = malloc(cap + 1);
	ssize_t n;
	while (env && have < cap && (n = read(fd, env + have, cap - have)) > 0)
		have += (size_t)n;
	close(fd);
	int found = env && !have ? -1 : 0;
	if (env) {
		env[have] = '\0';
		for (size_t at = 0; at < have; at += strlen(env + at) + 1)
			if (!strncmp(env + at, DIR_VAR, strlen(DIR_VAR))) {
				snprintf(dir, len, "%s", env + at + strlen(DIR_VAR));
				found = 1;
				break;
			}
	}
	free(env);
	return found;
}

static bool is_rank(const struct nd *nd, pid_t pid)
{
	for (const struct nd_job *j = nd->jobs; j; j = j->next)
		for (uint32_t i = 0; i < j->nranks; i++)
			if (j->ranks[i].pid == pid)
				return true;
	return false;
}

/* A job of this daemon's (its directory under the daemon's) that still
 * runs here; a directory elsewhere is another daemon's job (this daemon
 * itself started inside one) and not this one's to judge. */
static bool job_runs(const struct nd *nd, const char *dir)
{
	size_t n = strlen(nd->jobs_dir);
	if (strncmp(dir, nd->jobs_dir, n) || dir[n] != '/')
		return true;
	for (const struct nd_job *j = nd->jobs; j; j = j->next)
		if (!strcmp(j->dir, dir))
			return true;
	return false;
}

/* Signals pid if it is a child of this daemon that a job left behind;
 * true if it is. *unread: its environment read empty, so it is undecided. */
static bool judge(struct nd *nd, pid_t self, long pid, int sig, bool *unread)
{
	char id[24], comm[64], dir[PATH_MAX];
	snprintf(id, sizeof(id), "%ld", pid);
	/* the parent read again: a pid listed a moment ago may be another's now */
	if (pid <= 0 || pid == self || parent_of((pid_t)pid, comm, sizeof(comm)) != self ||
	    is_rank(nd, (pid_t)pid))
		return false;
	int has = job_dir_of(id, dir, sizeof(dir));
	/* a test's stand-in for a child caught inside execve: its first reads
	 * come back empty */
	if (has > 0 && nd->leftovers_unread_faked < fault_value(&nd->fault, "environ_unread")) {
		nd->leftovers_unread_faked++;
		slog("test point environ_unread: process %ld's environment taken as empty", pid);
		has = -1;
	}
	*unread |= has < 0;
	if (has <= 0 || job_runs(nd, dir))
		return false;
	if (kill((pid_t)pid, sig) == 0)
		slog("process %ld (%s) of a job that ended here (%s) outlived it; %s", pid, comm, dir,
		     sig == SIGKILL ? "SIGKILL" : "SIGTERM");
	return true;
}

/* This daemon's children as the kernel lists them per thread
 * (/proc/self/task/TID/children): a few entries, not every process of the
 * host. NULL if the kernel has no such list (CONFIG_PROC_CHILDREN). */
static long *children(size_t *n)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return NULL;
	long *pids = NULL;
	size_t cap = 0;
	bool listed = false;
	*n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		listed = true;
		long pid;
		while (fscanf(f, "%ld", &pid) == 1) {
			if (*n == cap) {
				long *more = realloc(pids, (cap ? cap * 2 : 16) * sizeof(*pids));
				if (!more)
					break;
				pids = more;
				cap = cap ? cap * 2 : 16;
			}
			pids[(*n)++] = pid;
		}
		fclose(f);
	}
	closedir(d);
	if (!listed) {
		free(pids);
		return NULL;
	}
	return pids ? pids : calloc(1, sizeof(*pids));
}

static void sweep(struct nd *nd, int sig)
{
	pid_t self = getpid();
	bool found = false, unread = false;
	size_t n;
	long *pids = children(&n);
	if (pids) {
		for (size_t i = 0; i < n; i++)
			found |= judge(nd, self, pids[i], sig, &unread);
		free(pids);
	} else {
		/* no list from the kernel: every process of the host, by its parent */
		DIR *d = opendir("/proc");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (!*end)
				found |= judge(nd, self, pid, sig, &unread);
		}
		if (d)
			closedir(d);
	}
	if (found && sig != SIGKILL && !nd->leftovers_kill_ns)
		nd->leftovers_kill_ns = clock_mono_ns() + (uint64_t)nd->conf.kill_wait_ms * 1000000u;
	/* a child caught inside execve is looked at again soon: no later event
	 * need come (the next job's end may be hours away); a bounded number of
	 * times, for a process whose environment stays empty */
	if (!unread) {
		nd->leftovers_looks = 0;
		return;
	}
	if (sig != SIGKILL && nd->leftovers_looks < LOOKS_MAX && !nd->leftovers_look_ns) {
		nd->leftovers_looks++;
		nd->leftovers_look_ns = clock_mono_ns() + LOOK_AGAIN_NS;
	}
}

void nd_leftovers_sweep(struct nd *nd)
{
	if (!nd->helpers)
		sweep(nd, SIGTERM);
}

void nd_leftovers_timer(struct nd *nd)
{
	uint64_t now = clock_mono_ns();
	if (nd->leftovers_look_ns && now >= nd->leftovers_look_ns) {
		nd->leftovers_look_ns = 0;
		nd_leftovers_sweep(nd);
	}
	if (!nd->leftovers_kill_ns || now < nd->leftovers_kill_ns)
		return;
	nd->leftovers_kill_ns = 0;
	if (nd->helpers) /* a restore's ranks may look like leftovers: later */
		nd->leftovers_kill_ns = now + (uint64_t)nd->conf.kill_wait_ms * 1000000u;
	else
		sweep(nd, SIGKILL);
}
