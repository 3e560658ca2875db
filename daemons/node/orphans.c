/* Ranks that outlive their node daemon (kill -9, a crash): each running
 * job's ranks are listed in <state dir>/ranks/<job> (pid and start time per
 * rank, the process group, the done slot). A restarted daemon cannot
 * re-attach to them: their stdout and stderr pipes died with the old daemon,
 * so their output could never reach the job's owner, and their next write
 * would kill them with SIGPIPE anyway. It kills them instead (a pid counts
 * only if its start time still matches: pids are reused) and reports the
 * job failed on this node, so the MM ends it everywhere. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.pb-c.h"
#include "layout.h"
#include "nd.h"

static void list_path(const struct nd *nd, uint64_t job, char *out, size_t len)
{
	snprintf(out, len, "%s/ranks/%" PRIu64, nd->state_dir, job);
}

char *nd_proc_stat(pid_t pid, char *buf, size_t len, char *comm, size_t comm_len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses */
	char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p)
		return NULL;
	if (comm)
		snprintf(comm, comm_len, "%.*s", (int)(close_p - open_p - 1), open_p + 1);
	return close_p + 1;
}

/* Field 22 of /proc/PID/stat: start time in clock ticks since boot; 0 if
 * the process is gone. */
uint64_t nd_proc_start_time(pid_t pid)
{
	char buf[1024];
	char *p = nd_proc_stat(pid, buf, sizeof(buf), NULL, 0);
	if (!p)
		return 0;
	/* after ")": field 3 (state) ... field 22 */
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

void nd_ranks_save(struct nd *nd, const struct nd_job *job)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
	list_path(nd, job->id, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f) {
		slog("job %" PRIu64 ": cannot write %s: %s (its ranks would survive a "
			   "restart of this daemon)", job->id, tmp, strerror(errno));
		return;
	}
	fprintf(f, "job %" PRIu64 " slot %u pgid %d\n", job->id, job->slot, (int)job->pgid);
	for (uint32_t i = 0; i < job->nranks; i++)
		if (job->ranks[i].pid > 0)
			fprintf(f, "rank %u pid %d start %" PRIu64 "\n", job->ranks[i].rank,
				(int)job->ranks[i].pid, nd_proc_start_time(job->ranks[i].pid));
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		slog("job %" PRIu64 ": cannot write %s: %s", job->id, path, strerror(errno));
		unlink(tmp);
	}
}

void nd_ranks_forget(struct nd *nd, uint64_t job)
{
	char path[PATH_MAX + 32];
	list_path(nd, job, path, sizeof(path));
	unlink(path);
}

/* Kills what is left of one job; returns the processes killed. */
static int kill_job(const char *path, uint64_t *job, uint32_t *slot)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int pgid = 0, killed = 0;
	bool group_ours = false;
	char line[256];
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "job %" SCNu64 " slot %u pgid %d", job, slot, &pgid) != 3) {
		fclose(f);
		*job = 0;
		return 0;
	}
	unsigned rank;
	int pid;
	uint64_t start;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "rank %u pid %d start %" SCNu64, &rank, &pid, &start) == 3 &&
		    pid > 1 && start && nd_proc_start_time(pid) == start) {
			/* still the rank we started: not a reused pid */
			if (pgid > 1 && getpgid(pid) == pgid)
				group_ours = true;
			if (kill(pid, SIGKILL) == 0)
				killed++;
		}
	fclose(f);
	/* what the ranks forked lives in their group, as long as one of
	 * them proves the group is still the job's */
	if (group_ours)
		killpg(pgid, SIGKILL);
	return killed;
}

void nd_ranks_recover(struct nd *nd)
{
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/ranks", nd->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		slog("cannot create %s: %s", dir, strerror(errno));
		return;
	}
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		uint64_t job = 0;
		uint32_t slot = UINT32_MAX;
		int killed = kill_job(path, &job, &slot);
		unlink(path);
		if (!job)
			continue;
		slog("job %" PRIu64 ": %d rank processes left by an earlier stormnd killed",
		       job, killed);
		/* the MM fails the job naming this node, and ends it elsewhere */
		nd_queue_note(nd, job, STORM__CL__JOB_NOTE__KIND__FAILED, UINT32_MAX,
			      "%s: the node daemon restarted and killed the job's ranks it had "
			      "lost (their output could not be recovered)", nd->name);
		nd_queue_note(nd, job, STORM__CL__JOB_NOTE__KIND__DONE,
			      slot < GM_JOB_SLOTS ? slot : UINT32_MAX, "%s", "");
	}
	closedir(d);
}
