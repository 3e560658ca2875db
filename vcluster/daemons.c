/* The virtual cluster's daemons: found beside storm, started detached (in
 * their namespace or host), their pids kept in DIR/pids, stopped, and what
 * they leave behind removed. Shared by up, down and restart. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "cluster.h"
#include "munged.h"
#include "netns.h"
#include "rtguard.h"

/* ---- small file helpers */

int vc_path_join(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
	return rc != 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf that never follows a symlink or leaves the file system. */
static int rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Prints the last `lines` lines of a log, each prefixed with its name. */
void vc_log_tail(const char *dir, const char *name, int lines)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/log/%s.log", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
	close(fd);
	if (n <= 0) {
		fprintf(stderr, "  %s: (empty log %s)\n", name, path);
		return;
	}
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	char *start = buf + n;
	for (int k = 0; k < lines && start > buf;) {
		start--;
		if (*start == '\n' && ++k == lines)
			start++;
	}
	for (char *line = strtok(start, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(stderr, "  %s: %s\n", name, line);
}

/* ---- the daemons */

/* stormmm/stormnd next to this storm (a build tree or an install), else PATH. */
int vc_find_daemon(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if (vc_path_join(out, len, dirname(self), name) == 0 && access(out, X_OK) == 0)
			return 0;
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t dlen = colon ? (size_t)(colon - path) : strlen(path);
		int k = snprintf(out, len, "%.*s/%s", (int)dlen, path, name);
		if (dlen && k > 0 && (size_t)k < len && access(out, X_OK) == 0)
			return 0;
		path = colon ? colon + 1 : NULL;
	}
	fprintf(stderr,
		"storm: error: cannot find %s (not next to %s, not in PATH); build it with "
		"'make'\n",
		name, n > 0 ? self : "storm");
	return -1;
}

/* Starts argv detached: own session, stdin /dev/null, stdout+stderr to log.
 * A CLOEXEC pipe carries an exec failure back. pid or -errno. */
/* netns_node: the node's namespace (>= 0), the MM's (NETNS_MM), or no
 * namespace at all (NO_NETNS); host: with --hosts, the process whose mount,
 * UTS and IPC namespaces it joins (hosts.h), else 0. */
pid_t vc_spawn_detached(char *const argv[], const char *log, const char *dir, int netns_node,
			pid_t host, unsigned flags)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		int e = 0;
		signal(SIGINT, SIG_DFL);
		/* the guard's SIGXCPU may come while the loader still runs (a
		 * slow start: a loaded host, an emulated guest), and kill it */
		if (flags & VC_SPAWN_GUARDED)
			signal(SIGXCPU, SIG_IGN);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int in = open("/dev/null", O_RDONLY);
		int out = open(log, O_WRONLY | O_CREAT | (flags & VC_SPAWN_APPEND ? 0 : O_TRUNC) | O_APPEND, 0644);
		if (setsid() < 0 || in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(out, 2) < 0)
			e = errno;
		if (!e && netns_node != NO_NETNS)
			e = -netns_enter(dir, netns_node, !host);
		if (!e && host)
			e = -hosts_join(host);
		if (netns_node == NO_NETNS) {
			/* all on this host: loopback. The providers' default is the
			 * first other interface, which may be a bridge that someone's
			 * network namespaces take away mid-run, and every connection
			 * with it. The user's own choice stays. */
			setenv("FI_TCP_IFACE", "lo", 0);
			setenv("FI_SOCKETS_IFACE", "lo", 0);
			setenv("FI_UDP_IFACE", "lo", 0);
		}
		if (!e) {
			close_range(3, ~0u, CLOSE_RANGE_CLOEXEC); /* keep pfd[1] until exec */
			execv(argv[0], argv);
			e = errno;
		}
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	int e = 0;
	ssize_t n;
	while ((n = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		return -e;
	}
	return pid;
}

void vc_rt_share(int nnodes)
{
	/* half of the machine's cores split among the daemons (the MM
	 * counts), so that their ranks always keep the other half */
	cpu_set_t cpus;
	int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
	char v[32];
	snprintf(v, sizeof(v), "%g", 50.0 * (cores > 0 ? cores : 1) / (nnodes + 1));
	setenv("STORM_RT_SHARE", v, 0);
}

void vc_mm_priority(pid_t pid, int realtime)
{
	/* the MM's timer drives every switch: it must not wait for a core.
	 * SCHED_FIFO; unless asked for real time as such, under the guard
	 * (common/rtguard.h: nice -10 does not lift a session above the
	 * machine's others, and a spinning real-time MM would hold a core):
	 * nice -10 once it has run RT_GUARD_MS without sleeping. The MM
	 * catches the guard's SIGXCPU from its start. Not its children. */
	struct sched_param sp = { .sched_priority = 1 };
	if ((realtime || rt_guard_limit(pid, RT_GUARD_MS) == 0) &&
	    sched_setscheduler(pid, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
		return;
	int e = errno;
	sp.sched_priority = 0;
	if (realtime ||
	    sched_setscheduler(pid, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp) < 0 ||
	    setpriority(PRIO_PROCESS, (id_t)pid, -10) < 0)
		fprintf(stderr, "storm: warning: machine manager at normal priority: %s\n",
			strerror(e));
}

int vc_append_pid(const char *pids_file, pid_t pid, const char *name)
{
	FILE *f = fopen(pids_file, "a");
	if (!f)
		return -1;
	fprintf(f, "%d %s\n", (int)pid, name);
	return fclose(f);
}

/* DIR/pids: "PID NAME" lines. Count, 0 without a file. */
int vc_read_pids(const char *pids_file, struct daemon **out)
{
	*out = NULL;
	FILE *f = fopen(pids_file, "r");
	if (!f)
		return 0;
	int n = 0, cap = 0;
	struct daemon d = { 0 };
	int pid;
	while (fscanf(f, "%d %63s", &pid, d.name) == 2) {
		if (pid <= 1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct daemon *nd = realloc(*out, (size_t)cap * sizeof(*nd));
			if (!nd)
				break;
			*out = nd;
		}
		d.pid = pid;
		d.pidfd = -1;
		(*out)[n++] = d;
	}
	fclose(f);
	return n;
}

/* A pid from DIR/pids is ours only while it still runs with "-c CONF":
 * pids are reused, and an unrelated process must never be killed. */
int vc_runs_with_conf(pid_t pid, const char *conf)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *a = buf; a < buf + n; a += strlen(a) + 1)
		if (!strcmp(a, conf))
			return 1;
	return 0;
}

/* Waits until every daemon has exited or the deadline passes. Count left. */
static int wait_gone(struct daemon *d, int n, double deadline)
{
	for (;;) {
		int left = 0;
		struct pollfd *p = calloc((size_t)(n ? n : 1), sizeof(*p));
		if (!p)
			return n;
		for (int i = 0; i < n; i++) {
			if (d[i].gone)
				continue;
			p[left].fd = d[i].pidfd;
			p[left].events = POLLIN;
			left++;
		}
		double wait = deadline - now_s();
		if (!left || wait <= 0) {
			free(p);
			return left;
		}
		poll(p, (nfds_t)left, (int)(wait * 1000) + 1);
		free(p);
		for (int i = 0; i < n; i++) {
			if (d[i].gone)
				continue;
			struct pollfd q = { .fd = d[i].pidfd, .events = POLLIN };
			if (poll(&q, 1, 0) == 1) {
				d[i].gone = 1;
				close(d[i].pidfd);
				d[i].pidfd = -1;
				waitpid(d[i].pid, NULL, WNOHANG); /* reap if it is our child */
			}
		}
	}
}

/* Stops the daemons listed in pids_file: waits up to grace_s for them to
 * leave on their own (after a Shutdown), then SIGTERM, then SIGKILL. Names
 * the stubborn ones. Returns how many were still running at the start. */
int vc_stop_daemons(const char *pids_file, const char *conf, double grace_s, int quiet)
{
	struct daemon *d;
	int n = vc_read_pids(pids_file, &d);
	int running = 0;
	for (int i = 0; i < n; i++) {
		d[i].pidfd = pidfd_open(d[i].pid, 0);
		if (d[i].pidfd >= 0 && !vc_runs_with_conf(d[i].pid, conf)) {
			close(d[i].pidfd);
			d[i].pidfd = -1;
		}
		d[i].gone = d[i].pidfd < 0;
		running += !d[i].gone;
	}
	int left = wait_gone(d, n, now_s() + grace_s);
	for (int sig = SIGTERM; left > 0; sig = SIGKILL) {
		for (int i = 0; i < n; i++) {
			if (d[i].gone)
				continue;
			if (!quiet && sig == SIGKILL)
				fprintf(stderr, "storm: warning: %s (pid %d) did not exit; killing it\n",
					d[i].name, (int)d[i].pid);
			pidfd_send_signal(d[i].pidfd, sig, NULL, 0);
		}
		left = wait_gone(d, n, now_s() + 2.0);
		if (sig == SIGKILL)
			break;
	}
	for (int i = 0; i < n; i++)
		if (!d[i].gone) {
			fprintf(stderr, "storm: warning: %s (pid %d) survived SIGKILL\n", d[i].name,
				(int)d[i].pid);
			close(d[i].pidfd);
		}
	free(d);
	return running;
}

/* With --hosts: each host's files but its log (kept as DIR/log is). */
static int remove_hosts(const char *dir)
{
	char path[PATH_MAX];
	vc_path_join(path, sizeof(path), dir, "hosts");
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *h;
	while ((h = readdir(d))) {
		char root[PATH_MAX];
		if (h->d_name[0] == '.' || hosts_root(dir, h->d_name, root, sizeof(root)) != 0)
			continue;
		DIR *r = opendir(root);
		struct dirent *e;
		while (r && (e = readdir(r))) {
			char p[PATH_MAX + 300];
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			    !strcmp(e->d_name, "log"))
				continue;
			snprintf(p, sizeof(p), "%s/%s", root, e->d_name);
			if (rm_rf(p) != 0)
				fprintf(stderr, "storm: warning: cannot remove %s: %s\n", p,
					strerror(errno));
			else
				n++;
		}
		if (r)
			closedir(r);
	}
	closedir(d);
	return n;
}

/* Before a cluster that is not of hosts: what the hosts of an earlier one
 * in DIR kept, their logs and DIR/log's links to them, which this one's
 * daemons would otherwise write through (its logs start afresh anyway). */
void vc_forget_hosts(const char *dir)
{
	char path[PATH_MAX], link[PATH_MAX + 300], to[PATH_MAX];
	vc_path_join(path, sizeof(path), dir, "log");
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		ssize_t n = readlink(link, to, sizeof(to) - 1);
		if (n > 0 && (to[n] = '\0', !strncmp(to, "../hosts/", 9)))
			unlink(link);
	}
	if (d)
		closedir(d);
	vc_path_join(path, sizeof(path), dir, "hosts");
	if (rm_rf(path) != 0)
		fprintf(stderr, "storm: warning: cannot remove %s: %s\n", path, strerror(errno));
}

/* Removes what a cluster leaves at run time; DIR/log and storm.conf stay.
 * The munged daemons go too: after the daemons, which may still ask them;
 * then whatever still runs in the cluster's namespaces. */
int vc_remove_runtime(const char *dir)
{
	static const char *names[] = { "fabric", "state", "mm.sock", "pids", "cluster.key" };
	struct munged_at here = { .dir = dir };
	int removed = hosts_stop(dir);
	removed += netns_down(dir);
	removed += remove_hosts(dir) + munged_stop(&here);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[PATH_MAX];
		struct stat st;
		if (vc_path_join(path, sizeof(path), dir, names[i]) != 0 || lstat(path, &st) != 0)
			continue;
		if (rm_rf(path) != 0)
			fprintf(stderr, "storm: warning: cannot remove %s: %s\n", path,
				strerror(errno));
		else
			removed++;
	}
	return removed;
}

/* Where daemon NAME writes its log (vc_spawn_detached): DIR/log/NAME.log, or
 * with --hosts the same in its host (DIR/log links to it). */
void vc_daemon_log(const char *dir, const char *name, char *out, size_t len)
{
	char root[PATH_MAX];
	if (netns_of_hosts(dir) && hosts_root(dir, name, root, sizeof(root)) == 0)
		snprintf(out, len, "%s/log/%s.log", root, name);
	else
		snprintf(out, len, "%s/log/%s.log", dir, name);
}

/* --hosts: the process whose namespaces host NAME's daemon joins, or 0
 * (printed): without it the daemon would see this machine's files. */
pid_t vc_host_of(const char *dir, const char *name)
{
	pid_t pid = hosts_anchor(dir, name);
	if (!pid)
		fprintf(stderr, "storm: error: host %s's munged is not running (see %s/hosts/%s/log/"
				"munged.log); its namespaces are gone with it\n",
			name, dir, name);
	return pid;
}
