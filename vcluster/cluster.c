/* storm cluster up|status|down: the virtual cluster on this machine, the
 * embedded default. `up` writes DIR/storm.conf, starts stormmm and N stormnd
 * detached (pids in DIR/pids, logs in DIR/log) and waits until every node is
 * UP; `down` asks the MM to shut down, waits for every pid, kills leftovers
 * and removes the run-time files (logs stay). */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sodium.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "layout.h"
#include "vcluster.h"
#include "gm_auth.h"
#include "hosts.h"
#include "munged.h"
#include "netns.h"
#include "fmt.h"
#include "hostlist.h"
#include "opts.h"
#include "slurm.h"

#define MAX_VIRTUAL_NODES 1000 /* STORM_CONF_MAX_NODES; tested up to 64 */
/* DIR/mm.sock must fit a socket address (108 bytes), so DIR is short */
#define DIR_MAX 96

struct daemon {
	pid_t pid;
	char name[HOSTNAME_MAX]; /* "mm" or the node name */
	int pidfd;
	int gone;
};

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* ---- small file helpers */

static int path_join(char *out, size_t len, const char *dir, const char *name)
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
static void log_tail(const char *dir, const char *name, int lines)
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
static int find_daemon(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if (path_join(out, len, dirname(self), name) == 0 && access(out, X_OK) == 0)
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
#define NO_NETNS (-1000)
static pid_t spawn_detached(char *const argv[], const char *log, const char *dir, int netns_node,
			    pid_t host, int append)
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
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int in = open("/dev/null", O_RDONLY);
		int out = open(log, O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC) | O_APPEND, 0644);
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

static int append_pid(const char *pids_file, pid_t pid, const char *name)
{
	FILE *f = fopen(pids_file, "a");
	if (!f)
		return -1;
	fprintf(f, "%d %s\n", (int)pid, name);
	return fclose(f);
}

/* DIR/pids: "PID NAME" lines. Count, 0 without a file. */
static int read_pids(const char *pids_file, struct daemon **out)
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
static int runs_with_conf(pid_t pid, const char *conf)
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
static int stop_daemons(const char *pids_file, const char *conf, double grace_s, int quiet)
{
	struct daemon *d;
	int n = read_pids(pids_file, &d);
	int running = 0;
	for (int i = 0; i < n; i++) {
		d[i].pidfd = pidfd_open(d[i].pid, 0);
		if (d[i].pidfd >= 0 && !runs_with_conf(d[i].pid, conf)) {
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
	path_join(path, sizeof(path), dir, "hosts");
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
static void forget_hosts(const char *dir)
{
	char path[PATH_MAX], link[PATH_MAX + 300], to[PATH_MAX];
	path_join(path, sizeof(path), dir, "log");
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
	path_join(path, sizeof(path), dir, "hosts");
	if (rm_rf(path) != 0)
		fprintf(stderr, "storm: warning: cannot remove %s: %s\n", path, strerror(errno));
}

/* Removes what a cluster leaves at run time; DIR/log and storm.conf stay.
 * The munged daemons go too: after the daemons, which may still ask them;
 * then whatever still runs in the cluster's namespaces. */
static int remove_runtime(const char *dir)
{
	static const char *names[] = { "fabric", "state", "mm.sock", "pids", "cluster.key" };
	struct munged_at here = { .dir = dir };
	int removed = hosts_stop(dir);
	removed += netns_down(dir);
	removed += remove_hosts(dir) + munged_stop(&here);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[PATH_MAX];
		struct stat st;
		if (path_join(path, sizeof(path), dir, names[i]) != 0 || lstat(path, &st) != 0)
			continue;
		if (rm_rf(path) != 0)
			fprintf(stderr, "storm: warning: cannot remove %s: %s\n", path,
				strerror(errno));
		else
			removed++;
	}
	return removed;
}

/* ---- talking to the MM */

/* The MM where a command reaches it: its socket, or its ctl_address when
 * that socket is not here (cli_conf_remote: --hosts, whose MM has it in its
 * own host, or a Slurm allocation's MM on another node). */
static const char *mm_where(const struct storm_conf *conf)
{
	const char *remote = cli_conf_remote(conf);
	return remote ? remote : conf->socket;
}

/* where: the MM's socket (a path) or its ctl_address (HOST:PORT). */
static Storm__Ctl__Reply *ask(const char *where, Storm__Ctl__Request *req, int timeout_ms,
			      int *err)
{
	Storm__Ctl__Reply *rep = NULL;
	char why[300];
	int fd = where[0] == '/' ? ctl_connect(where, 1000)
				 : ctl_connect_tcp(where, getuid(), 1000, why, sizeof(why));
	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	*err = ctl_send(fd, req, NULL, 0);
	if (*err == 0)
		*err = ctl_recv(fd, timeout_ms, &rep);
	close(fd);
	return rep;
}

static Storm__Ctl__Reply *ask_status(const char *sock, unsigned wait_ms, int *err)
{
	Storm__Ctl__ClusterStatus cs = STORM__CTL__CLUSTER_STATUS__INIT;
	cs.wait_ms = wait_ms;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_STATUS;
	req.status = &cs;
	return ask(sock, &req, (int)wait_ms + 5000, err);
}

static Storm__Ctl__Reply *ask_nodes(const char *sock, int *err)
{
	Storm__Ctl__ListNodes ln = STORM__CTL__LIST_NODES__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_NODES;
	req.nodes = &ln;
	return ask(sock, &req, CTL_TIMEOUT_MS, err);
}

static int send_shutdown(const char *sock, int *err)
{
	Storm__Ctl__Shutdown sd = STORM__CTL__SHUTDOWN__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_SHUTDOWN;
	req.shutdown = &sd;
	Storm__Ctl__Reply *rep = ask(sock, &req, CTL_TIMEOUT_MS, err);
	if (!rep)
		return -1;
	int rc = 0;
	if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR)
		rc = cli_print_error(rep->error, "shutdown");
	else if (rep->body_case != STORM__CTL__REPLY__BODY_SHUTTING_DOWN)
		rc = cli_unexpected(rep, "ShuttingDown");
	ctl_reply_free(rep);
	return rc ? 1 : 0;
}

/* ---- storm cluster up */

static const char up_help[] =
	"Usage: storm cluster up --nodes N [OPTIONS]\n"
	"       storm cluster up --slurm [OPTIONS] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Starts a virtual cluster on this machine: the machine manager (stormmm)\n"
	"and N node daemons (stormnd) named node00, node01, ... (node000.. past 100),\n"
	"each detached with its log in DIR/log. Returns once every node is UP.\n"
	"Other storm commands find the cluster without flags when DIR is the default.\n"
	"\n"
	"  -N, --nodes N          node daemons to start (1-1000; tested up to 64)\n"
	"      --dir DIR          where the cluster lives (default /tmp/storm-$UID)\n"
	"      --provider P       libfabric provider (default tcp;ofi_rxm)\n"
	"      --timeslice-us T   timeslice in microseconds (default 10000)\n"
	"      --cpus C           CPUs per virtual node (default 4)\n"
	"      --down-after-ms MS a node silent this long is DOWN (default 5000)\n"
	"      --down-after K     deprecated: K timeslices, converted to milliseconds\n"
	"      --mpl M            rows of the gang-scheduling matrix (1-16, default 2)\n"
	"      --quantum Q        timeslices each row runs before the next (default 1)\n"
	"      --policy P         gang (time-share nodes) or fcfs (MPL 1); default gang\n"
	"      --switch S         how nodes stop a job out of its row: signals or\n"
	"                         freezer (cgroup v2); default signals\n"
	"      --ahead K          slices of the schedule each strobe carries (0-8;\n"
	"                         default 4; 0: nodes switch as the strobe lands)\n"
	"      --switch-wait-pct P  a switch waits up to P% of a slice for the outgoing\n"
	"                         ranks to leave the CPU (0-90; default 25; 0: no wait)\n"
	"      --checkpoint-copies C  1: checkpoints of jobs of 2+ nodes also keep a copy\n"
	"                         on a buddy node (default); 0: images only where written\n"
	"      --bcs-data-tags T  1: BCS-MPI message data between nodes is tagged and\n"
	"                         checked (default); 0: not, for a fabric only the\n"
	"                         cluster's hosts reach (more bandwidth)\n"
	"      --netns            each node daemon in its own network namespace on a\n"
	"                         bridge (root; 10.X.0.0/16, X 213 or the first free), so a node can be cut off\n"
	"      --hosts            the MM and each node daemon on a host of its own\n"
	"                         sharing only the network: own network, mount and\n"
	"                         UTS namespaces, host name, address, munged, private\n"
	"                         /tmp, /run, state and log (DIR/hosts/NAME); storm\n"
	"                         here reaches the MM over TCP only (root)\n"
	"      --share DIR        with --hosts: DIR seen at its path on every host, as\n"
	"                         a site's network file system (a shared /home) is\n"
	"      --ctl-port P       the machine manager also takes control connections\n"
	"                         over TCP at 127.0.0.1:P (--netns: the bridge's\n"
	"                         address; --hosts: the MM host's, default a free\n"
	"                         port): ctl_address, for storm on other hosts\n"
	"      --metrics-port P   the machine manager serves Prometheus metrics at\n"
	"                         http://127.0.0.1:P/metrics (--hosts: the MM host's\n"
	"                         address; default: off)\n"
	"      --realtime         daemons at SCHED_FIFO, as on a real cluster (off:\n"
	"                         N real-time daemons would share this machine's cores)\n"
	"      --slurm            inside a Slurm allocation (salloc, sbatch): the MM on\n"
	"                         its first node and a node daemon on each of its nodes,\n"
	"                         started by srun, as the allocation's user, in\n"
	"                         /tmp/storm-slurm-$SLURM_JOB_ID on each node. With a\n"
	"                         COMMAND: runs it with STORM_CONF set, then takes the\n"
	"                         cluster down and exits with its status; without: the\n"
	"                         cluster stays up until 'storm cluster down' or the\n"
	"                         allocation's end\n"
	"  -h, --help             this help\n";

enum { C_NODES = 1, C_DIR, C_PROVIDER, C_TIMESLICE, C_CPUS, C_DOWN_AFTER, C_DOWN_AFTER_MS,
       C_NETNS, C_REALTIME, C_WAIT, C_JSON, C_CONF, C_HELP, C_MPL, C_QUANTUM, C_POLICY, C_SWITCH, C_COPIES, C_DATA_TAGS, C_METRICS, C_CTL_PORT, C_AHEAD,
       C_SWITCH_WAIT, C_SLURM, C_HOSTS, C_SHARE };

struct up_opts {
	unsigned nodes, timeslice_us, cpus, down_after, down_after_ms, mpl, quantum, metrics_port, ctl_port;
	int netns, hosts, realtime, slurm;
	char **cmd; /* --slurm: the command to run with the cluster up, or NULL */
	char *shares[HOSTS_MAX_SHARES]; /* --share, absolute */
	int nshares;
	int policy, switch_mode, copies, data_tags; /* -1: the default */
	int ahead, switch_wait_pct;      /* -1: the default */
	const char *dir, *provider;
};

/* Describes why nodes never came up: names from NodeList, their log tails. */
static void report_missing(const char *dir, const char *sock, const struct storm_conf *conf,
			   double waited)
{
	int err;
	Storm__Ctl__Reply *rep = ask_nodes(sock, &err);
	const char **missing = calloc((size_t)conf->nnodes, sizeof(*missing));
	int nmissing = 0;
	if (!missing)
		return;
	if (rep && rep->body_case == STORM__CTL__REPLY__BODY_NODES) {
		for (size_t i = 0; i < rep->nodes->n_nodes; i++)
			if (rep->nodes->nodes[i]->state != STORM__CTL__NODE_STATE__UP)
				missing[nmissing++] = rep->nodes->nodes[i]->name;
	} else {
		/* the nodes may be up: it is the MM that does not answer here */
		if (rep && rep->body_case == STORM__CTL__REPLY__BODY_ERROR)
			cli_print_error(rep->error, "cluster status");
		else
			fprintf(stderr, "storm: error: the machine manager at %s did not answer "
					"within %.0f s (%s)\n", sock, waited,
				rep ? "an unexpected reply" : strerror(-err));
		log_tail(dir, "mm", 5);
		char mm_host[PATH_MAX];
		path_join(mm_host, sizeof(mm_host), dir, "hosts/mm");
		log_tail(netns_of_hosts(dir) ? mm_host : dir, "munged", 5);
		free(missing);
		ctl_reply_free(rep);
		return;
	}
	char list[4096];
	hostlist_compress(missing, nmissing, list, sizeof(list));
	fprintf(stderr,
		"storm: error: the cluster did not come up within %.0f s: %d of %d nodes never "
		"came up: %s\n",
		waited, nmissing, conf->nnodes, list);
	for (int i = 0; i < nmissing && i < 4; i++)
		log_tail(dir, missing[i], 3);
	if (nmissing > 4)
		fprintf(stderr, "  (logs of the others in %s/log)\n", dir);
	free(missing);
	ctl_reply_free(rep);
}

/* Takes down what `up` started after a failure. */
static void teardown(const char *dir, const char *sock, const char *conf_path)
{
	int err;
	send_shutdown(sock, &err);
	char pids[PATH_MAX];
	path_join(pids, sizeof(pids), dir, "pids");
	stop_daemons(pids, conf_path, 3.0, 1);
	remove_runtime(dir);
	fprintf(stderr, "storm: took the partial cluster down (logs in %s/log)\n", dir);
}

/* A child that exited during `up`: its name, or NULL. */
static const char *dead_child(struct daemon *d, int n, int *status)
{
	for (int i = 0; i < n; i++)
		if (!d[i].gone && waitpid(d[i].pid, status, WNOHANG) == d[i].pid) {
			d[i].gone = 1;
			return d[i].name;
		}
	return NULL;
}

static void describe_exit(const char *name, int status)
{
	if (WIFEXITED(status))
		fprintf(stderr, "storm: error: %s exited with status %d during start-up:\n", name,
			WEXITSTATUS(status));
	else
		fprintf(stderr, "storm: error: %s was killed by signal %d during start-up:\n", name,
			WTERMSIG(status));
}

static int prepare_dir(const char *dir)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "storm: error: cannot create %s: %s\n", dir, strerror(errno));
		return -1;
	}
	struct stat st;
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "storm: error: %s is not a directory\n", dir);
		return -1;
	}
	/* a predictable name in /tmp: someone else may have made it first */
	if (st.st_uid != getuid() || (st.st_mode & 022)) {
		fprintf(stderr,
			"storm: error: %s belongs to uid %u or others may write it; use a "
			"directory of your own (--dir)\n",
			dir, (unsigned)st.st_uid);
		return -1;
	}
	static const char *subdirs[] = { "log", "state", "fabric" };
	for (size_t i = 0; i < 3; i++) {
		char p[PATH_MAX];
		if (path_join(p, sizeof(p), dir, subdirs[i]) != 0 ||
		    (mkdir(p, 0755) != 0 && errno != EEXIST)) {
			fprintf(stderr, "storm: error: cannot create %s/%s: %s\n", dir, subdirs[i],
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The cluster's directory, absolute: --dir, else def, else /tmp/storm-$UID;
 * -1 (printed). */
static int resolve_dir(const struct up_opts *o, const char *def, char *dir)
{
	char cwd[PATH_MAX], abs[PATH_MAX];
	if (o->dir) {
		if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, o->dir, abs, sizeof(abs))) {
			fprintf(stderr, "storm: error: cannot make %s absolute\n", o->dir);
			return -1;
		}
	} else if (def) {
		snprintf(abs, sizeof(abs), "%s", def);
	} else {
		snprintf(abs, sizeof(abs), "/tmp/storm-%u", (unsigned)getuid());
	}
	if (strlen(abs) >= DIR_MAX) {
		fprintf(stderr,
			"storm: error: %s: too long a path for the control socket in it (at most "
			"%d characters)\n",
			abs, DIR_MAX - 1);
		return -1;
	}
	if (o->hosts && (int)strlen(abs) > hosts_dir_max()) {
		fprintf(stderr,
			"storm: error: %s: too long a path for the hosts' munge sockets in it (at "
			"most %d characters with --hosts)\n",
			abs, hosts_dir_max());
		return -1;
	}
	memcpy(dir, abs, strlen(abs) + 1);
	return 0;
}

/* A cluster that answers in dir is left alone (-1, printed); a dead one is
 * cleaned up. */
static int clear_dir(const struct up_opts *o, const char *dir, const char *conf_path,
		     const char *sock, const char *pids)
{
	int err;
	struct storm_conf old;
	char cerr[512];
	const char *old_sock = sock;
	bool have_old = conf_load(conf_path, &old, cerr, sizeof(cerr)) == 0;
	if (have_old) {
		old_sock = mm_where(&old);
		ctl_set_munge_socket(old.munge_socket);
	}
	Storm__Ctl__Reply *rep = ask_status(old_sock, 0, &err);
	int rc = 0;
	/* over TCP (--hosts), a dead cluster's address may have no route left */
	int dead = err == -ECONNREFUSED || err == -ENOENT ||
		   (old_sock[0] != '/' &&
		    (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -ETIMEDOUT));
	if (rep || !dead) {
		if (rep && rep->body_case == STORM__CTL__REPLY__BODY_STATUS)
			fprintf(stderr,
				"storm: error: a cluster is already up in %s (cluster '%s', %u of %u "
				"nodes up); take it down first with 'storm cluster down%s%s'\n",
				dir, rep->status->cluster, rep->status->nodes_up,
				rep->status->nodes_total, o->dir ? " --dir " : "", o->dir ? dir : "");
		else
			fprintf(stderr,
				"storm: error: something answers on %s; is a cluster up in %s? ('storm "
				"cluster down%s%s' takes it down)\n",
				old_sock, dir, o->dir ? " --dir " : "", o->dir ? dir : "");
		ctl_reply_free(rep);
		rc = -1;
	}
	if (have_old)
		conf_free(&old);
	if (rc == 0 && (stop_daemons(pids, conf_path, 0.0, 1) > 0 || remove_runtime(dir) > 0)) {
		remove_runtime(dir);
		fprintf(stderr, "storm: cleaned up a stale cluster in %s\n", dir);
	}
	if (rc == 0 && !o->hosts)
		forget_hosts(dir);
	return rc;
}

/* A TCP port no one listens on now (the kernel's pick), or -errno. */
static int free_tcp_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	if (fd < 0)
		return -errno;
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
			 getsockname(fd, (struct sockaddr *)&sa, &len) == 0
		 ? ntohs(sa.sin_port) : -errno;
	close(fd);
	return rc;
}

/* storm.conf for the options, a fresh cluster key and the cluster's own
 * munged (docs/design/security.md): the daemons and this CLI read their
 * paths from storm.conf. 0 with *conf filled, or -1 (printed). */
/* The defaults with the options' values over them; paths, addresses and
 * nodes are the caller's. 0, or -1 (printed). */
static int conf_from_opts(const struct up_opts *o, const char *conf_path, struct storm_conf *conf)
{
	char cerr[512];
	if (conf_load_string("[nodes]\nnames = node0\n", conf_path, conf, cerr, sizeof(cerr))) {
		fprintf(stderr, "storm: error: %s\n", cerr);
		return -1;
	}
	if (o->provider)
		snprintf(conf->provider, sizeof(conf->provider), "%s", o->provider);
	if (o->timeslice_us)
		conf->timeslice_us = o->timeslice_us;
	if (o->cpus)
		conf->cpus = o->cpus;
	if (o->policy >= 0)
		conf->policy = o->policy;
	conf->metrics_port = o->metrics_port;
	if (o->mpl)
		conf->mpl = o->mpl;
	else if (conf->policy == POLICY_FCFS)
		conf->mpl = 1;
	if (o->quantum)
		conf->quantum = o->quantum;
	if (o->switch_mode >= 0)
		conf->switch_mode = o->switch_mode;
	if (o->copies >= 0)
		conf->checkpoint_copies = (unsigned)o->copies;
	if (o->data_tags >= 0)
		conf->bcs_data_tags = (unsigned)o->data_tags;
	if (o->ahead >= 0)
		conf->ahead = (unsigned)o->ahead;
	if (o->switch_wait_pct >= 0)
		conf->switch_wait_pct = (unsigned)o->switch_wait_pct;
	/* the deprecated slice count means what it meant at this timeslice */
	if (o->down_after)
		conf->down_after_ms = conf_slices_to_ms(o->down_after, conf->timeslice_us);
	if (o->down_after_ms)
		conf->down_after_ms = o->down_after_ms;
	unsigned down_slices = conf_down_slices(conf);
	if (conf->report_every * 2 > down_slices) /* the config requires it */
		conf->report_every = down_slices / 2 ? down_slices / 2 : 1;
	return 0;
}

/* --hosts: the trees of storm's programs each host must be shown at their
 * paths (hosts_tree): this one's (storm on a host) and the daemons'. A
 * build or an install under /tmp is hidden by every host's own /tmp. The
 * count, or -1 with err set. */
static int storm_trees(char trees[][PATH_MAX], char *err, size_t errlen)
{
	static const char *const names[] = { NULL, "stormmm", "stormnd" };
	char bin[PATH_MAX + 16], real[PATH_MAX], t[PATH_MAX];
	int n = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ssize_t k = 0;
		if (!names[i] && (k = readlink("/proc/self/exe", bin, sizeof(bin) - 1)) > 0)
			bin[k] = '\0';
		if (k < 0 || (names[i] && find_daemon(names[i], bin, sizeof(bin))) ||
		    !realpath(bin, real)) {
			snprintf(err, errlen, "cannot find %s: %s", names[i] ? names[i] : "storm-cluster",
				 strerror(errno));
			return -1;
		}
		if (hosts_tree(real, t, sizeof(t)) < 0) {
			snprintf(err, errlen, "%s lies directly in a directory each host has of its "
					      "own; put them in a directory of their own",
				 real);
			return -1;
		}
		int seen = !t[0];
		for (int j = 0; j < n && !seen; j++)
			seen = !strcmp(trees[j], t);
		if (!seen)
			memcpy(trees[n++], t, strlen(t) + 1);
	}
	return n;
}

static int configure(const struct up_opts *o, const char *dir, const char *conf_path,
		     const char *sock, struct storm_conf *conf)
{
	if (conf_from_opts(o, conf_path, conf) < 0)
		return -1;
	snprintf(conf->state_dir, sizeof(conf->state_dir), "%s/state", dir);
	snprintf(conf->socket, sizeof(conf->socket), "%s", sock);
	/* the daemons register their fabric addresses with the MM, as on
	 * hosts without a shared file system */
	int port = free_tcp_port();
	if (port < 0) {
		fprintf(stderr, "storm: error: no free TCP port for the MM's registrations: %s\n",
			strerror(-port));
		conf_free(conf);
		return -1;
	}
	char mm_addr[32] = "127.0.0.1";
	if (o->hosts || o->netns)
		netns_addr(dir, o->hosts ? NETNS_MM : NETNS_BRIDGE, mm_addr, sizeof(mm_addr));
	if (o->hosts) /* where a scraper on this machine reaches it */
		snprintf(conf->metrics_address, sizeof(conf->metrics_address), "%s", mm_addr);
	snprintf(conf->bootstrap, sizeof(conf->bootstrap), "mm");
	snprintf(conf->mm_address, sizeof(conf->mm_address), "%s:%d", mm_addr, port);
	/* --hosts: storm here has no other way to the MM; the MM's host has
	 * every port free, so one that is free here does */
	int ctl_port = o->ctl_port ? (int)o->ctl_port : o->hosts ? free_tcp_port() : 0;
	if (ctl_port < 0) {
		fprintf(stderr, "storm: error: no free TCP port for the MM's control connections: %s\n",
			strerror(-ctl_port));
		conf_free(conf);
		return -1;
	}
	if (ctl_port)
		snprintf(conf->ctl_address, sizeof(conf->ctl_address), "%s:%d", mm_addr, ctl_port);
	snprintf(conf->key_file, sizeof(conf->key_file), "%s/cluster.key", dir);
	munged_socket_path(dir, conf->munge_socket, sizeof(conf->munge_socket));
	conf->nnodes = (int)o->nodes;
	virtual_node_names(conf->nnodes, conf->nodes);
	char emsg[2 * PATH_MAX + 128];
	struct munged_at here = { .dir = dir };
	int rc = conf_write(conf, conf_path);
	if (rc == 0 && (rc = gm_key_create(conf->key_file)) != 0)
		snprintf(emsg, sizeof(emsg), "cannot create the cluster key %s: %s", conf->key_file,
			 strerror(-rc));
	else if (rc != 0)
		snprintf(emsg, sizeof(emsg), "cannot write %s: %s", conf_path, strerror(-rc));
	else if (munged_start(&here, emsg, sizeof(emsg)) < 0)
		rc = -1;
	/* --hosts: each host with its copies of the files and its own munged */
	char trees[HOSTS_MAX_TREES][PATH_MAX];
	const char *tree_list[HOSTS_MAX_TREES];
	struct hosts_view view = { .shares = (const char *const *)o->shares,
				   .nshares = o->nshares, .trees = tree_list };
	if (rc == 0 && o->hosts && (view.ntrees = storm_trees(trees, emsg, sizeof(emsg))) < 0)
		rc = -1;
	for (int i = 0; i < view.ntrees; i++)
		tree_list[i] = trees[i];
	for (int i = o->hosts ? -1 : conf->nnodes; rc == 0 && i < conf->nnodes; i++)
		if (hosts_start(dir, i < 0 ? HOSTS_MM : conf->nodes[i], i < 0 ? NETNS_MM : i, &view,
				emsg, sizeof(emsg)) < 0)
			rc = -1;
	if (rc != 0) {
		fprintf(stderr, "storm: error: %s\n", emsg);
		remove_runtime(dir);
		conf_free(conf);
		return -1;
	}
	ctl_set_munge_socket(conf->munge_socket);
	return 0;
}

/* Where daemon NAME writes its log (spawn_detached): DIR/log/NAME.log, or
 * with --hosts the same in its host (DIR/log links to it). */
static void daemon_log(const char *dir, const char *name, char *out, size_t len)
{
	char root[PATH_MAX];
	if (netns_of_hosts(dir) && hosts_root(dir, name, root, sizeof(root)) == 0)
		snprintf(out, len, "%s/log/%s.log", root, name);
	else
		snprintf(out, len, "%s/log/%s.log", dir, name);
}

/* --hosts: the process whose namespaces host NAME's daemon joins, or 0
 * (printed): without it the daemon would see this machine's files. */
static pid_t host_of(const char *dir, const char *name)
{
	pid_t pid = hosts_anchor(dir, name);
	if (!pid)
		fprintf(stderr, "storm: error: host %s's munged is not running (see %s/hosts/%s/log/"
				"munged.log); its namespaces are gone with it\n",
			name, dir, name);
	return pid;
}

/* The MM and every node daemon, detached, all at once: each node daemon
 * registers its fabric address with the MM (retrying until the MM listens)
 * and learns the others' from it; none waits for the others. The started
 * ones are in d[0..*nd). 0, or -1 (printed). */
static int start_daemons(const struct up_opts *o, const char *dir, const char *conf_path,
			 const struct storm_conf *conf, struct daemon *d, int *nd)
{
	char mm_bin[PATH_MAX + 16], nd_bin[PATH_MAX + 16], log[PATH_MAX], pids[PATH_MAX];
	if (find_daemon("stormmm", mm_bin, sizeof(mm_bin)) ||
	    find_daemon("stormnd", nd_bin, sizeof(nd_bin)))
		return -1;
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	daemon_log(dir, HOSTS_MM, log, sizeof(log));
	char *mm_argv[] = { mm_bin, "-c", (char *)conf_path, NULL };
	pid_t host = 0;
	if (o->hosts && (host = host_of(dir, HOSTS_MM)) == 0)
		return -1;
	pid_t pid = spawn_detached(mm_argv, log, dir, o->netns || o->hosts ? NETNS_MM : NO_NETNS,
				   host, 0);
	if (pid < 0) {
		fprintf(stderr, "storm: error: cannot start %s: %s\n", mm_bin, strerror(-(int)pid));
		return -1;
	}
	if (o->realtime) {
		/* the MM's timer drives every switch: it must not wait for a core */
		struct sched_param sp = { .sched_priority = 1 };
		if (sched_setscheduler(pid, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
			fprintf(stderr, "storm: warning: machine manager without real-time "
					"priority: %s\n", strerror(errno));
	}
	d[*nd].pid = pid;
	snprintf(d[(*nd)++].name, HOSTNAME_MAX, "mm");
	append_pid(pids, pid, "mm");
	for (int i = 0; i < conf->nnodes; i++) {
		daemon_log(dir, conf->nodes[i], log, sizeof(log));
		/* SCHED_FIFO is for a node with one daemon: 64 real-time daemons
		 * on a few cores would starve everything else if one spun */
		char *nd_argv[] = { nd_bin, "-c", (char *)conf_path, "-n", conf->nodes[i],
				    o->realtime ? NULL : "--no-realtime", NULL };
		if (o->hosts && (host = host_of(dir, conf->nodes[i])) == 0)
			return -1;
		pid = spawn_detached(nd_argv, log, dir, o->netns || o->hosts ? i : NO_NETNS, host, 0);
		if (pid < 0) {
			fprintf(stderr, "storm: error: cannot start %s for %s: %s\n", nd_bin,
				conf->nodes[i], strerror(-(int)pid));
			return -1;
		}
		d[*nd].pid = pid;
		snprintf(d[(*nd)++].name, HOSTNAME_MAX, "%s", conf->nodes[i]);
		append_pid(pids, pid, conf->nodes[i]);
	}
	return 0;
}

/* Waits until the MM says every node is UP: its status reply (the caller
 * frees it), or NULL (printed) when a daemon died, the wait timed out or
 * Ctrl-C came (*interrupt set). */
static Storm__Ctl__Reply *wait_up(const char *dir, const char *sock,
				  const struct storm_conf *conf, struct daemon *d, int nd,
				  bool *interrupt)
{
	double start = now_s(), limit = 30.0 + 0.5 * conf->nnodes;
	int err, status;
	const char *dead;
	for (;;) {
		if ((dead = dead_child(d, nd, &status))) {
			describe_exit(!strcmp(dead, "mm") ? "the machine manager" : dead, status);
			log_tail(dir, dead, 5);
			return NULL;
		}
		if (interrupted) {
			*interrupt = true;
			return NULL;
		}
		double left = limit - (now_s() - start);
		if (left <= 0) {
			report_missing(dir, sock, conf, limit);
			return NULL;
		}
		/* short waits so a dead daemon or Ctrl-C is noticed quickly */
		Storm__Ctl__Reply *rep = ask_status(sock, left < 1.0 ? (unsigned)(left * 1000) : 1000,
						    &err);
		if (!rep) {
			/* not listening yet, or still joining the fabric */
			if (err == -ENOENT || err == -ECONNREFUSED || err == -ETIMEDOUT ||
			    err == -EHOSTUNREACH) {
				if (err != -ETIMEDOUT)
					usleep(20000);
				continue;
			}
			fprintf(stderr, "storm: error: the machine manager stopped answering: %s\n",
				strerror(-err));
			log_tail(dir, "mm", 5);
			return NULL;
		}
		if (rep->body_case == STORM__CTL__REPLY__BODY_STATUS &&
		    rep->status->nodes_up == rep->status->nodes_total &&
		    rep->status->nodes_total == (uint32_t)conf->nnodes)
			return rep;
		if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR) {
			cli_print_error(rep->error, "cluster status");
			ctl_reply_free(rep);
			return NULL;
		}
		ctl_reply_free(rep);
	}
}

/* The line a script reads: the cluster's name, nodes, provider, slice. */
static void print_up(const char *dir, const char *conf_path, const struct storm_conf *conf,
		     const Storm__Ctl__Status *st, bool hint)
{
	char list[4096], ts[32];
	const char **names = malloc(sizeof(*names) * (size_t)conf->nnodes);
	for (int i = 0; names && i < conf->nnodes; i++)
		names[i] = conf->nodes[i];
	if (names)
		hostlist_compress(names, conf->nnodes, list, sizeof(list));
	else
		list[0] = '\0';
	free(names);
	fmt_timeslice(st->timeslice_us ? st->timeslice_us : conf->timeslice_us, ts, sizeof(ts));
	printf("storm: cluster '%s' up: %d nodes %s, %s, timeslice %s (%s)\n", st->cluster,
	       conf->nnodes, list, st->provider[0] ? st->provider : conf->provider, ts, dir);
	fflush(stdout);
	char def[64];
	snprintf(def, sizeof(def), "/tmp/storm-%u", (unsigned)getuid());
	if (hint && strcmp(dir, def) != 0)
		fprintf(stderr, "storm: other commands find it with --conf %s or STORM_CONF=%s\n",
			conf_path, conf_path);
}

static int cluster_up(const struct up_opts *o)
{
	char dir[DIR_MAX], conf_path[PATH_MAX], sock[PATH_MAX], pids[PATH_MAX];
	if (resolve_dir(o, NULL, dir) < 0)
		return EXIT_STORM;
	snprintf(conf_path, sizeof(conf_path), "%s/storm.conf", dir);
	snprintf(sock, sizeof(sock), "%s/mm.sock", dir);
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	char probe[PATH_MAX + 16];
	if (find_daemon("stormmm", probe, sizeof(probe)) ||
	    find_daemon("stormnd", probe, sizeof(probe)))
		return EXIT_STORM;
	if (clear_dir(o, dir, conf_path, sock, pids) < 0 || prepare_dir(dir) != 0)
		return EXIT_STORM;
	char cerr[512];
	if ((o->netns || o->hosts) && netns_up(dir, (int)o->nodes, o->hosts, cerr, sizeof(cerr)) != 0) {
		fprintf(stderr, "storm: error: %s\n", cerr);
		return EXIT_STORM;
	}
	struct storm_conf conf;
	if (configure(o, dir, conf_path, sock, &conf) < 0)
		return EXIT_STORM;
	struct daemon *d = calloc(o->nodes + 1, sizeof(*d));
	if (!d) {
		conf_free(&conf);
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	struct sigaction sa = { .sa_handler = on_sigint };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int nd = 0, code = EXIT_STORM;
	bool interrupt = false;
	Storm__Ctl__Reply *rep = NULL;
	/* --hosts: over TCP, as from any machine but the MM's */
	const char *where = o->hosts ? conf.ctl_address : sock;
	if (start_daemons(o, dir, conf_path, &conf, d, &nd) == 0 &&
	    (rep = wait_up(dir, where, &conf, d, nd, &interrupt))) {
		print_up(dir, conf_path, &conf, rep->status, true);
		ctl_reply_free(rep);
		code = EXIT_OK;
	} else {
		if (interrupt)
			fprintf(stderr, "storm: interrupted while the cluster was coming up\n");
		teardown(dir, where, conf_path);
	}
	free(d);
	conf_free(&conf);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return code;
}

/* ---- storm cluster up --slurm: a cluster inside a Slurm allocation */

/* The job steps' tasks get the configuration and the cluster key in their
 * environment (srun passes it on), so the nodes need no shared file system;
 * the MM's task answers with the ports it took on its node. */
#define ENV_CONF_TEXT "STORM_CLUSTER_CONF_TEXT"
#define ENV_KEY_HEX "STORM_CLUSTER_KEY"
#define PORTS_LINE "storm-cluster-ports"

/* HOST:PORT, an IPv6 address in brackets. */
static void host_port(char *out, size_t len, const char *host, int port)
{
	snprintf(out, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* storm.conf's text for conf (malloc'd), or NULL. */
static char *conf_text(const struct storm_conf *conf)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = conf_print(conf, f);
	if (fclose(f) != 0 || rc != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Writes data to path unless it holds exactly that already, through a file
 * of this process's own renamed into place: daemons of one host share the
 * directory (all nodes are one machine in tests). 0 or -errno. */
static int put_file(const char *path, const void *data, size_t len, mode_t mode)
{
	char *old = malloc(len + 1);
	int fd = old ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (fd >= 0) {
		ssize_t n = read(fd, old, len + 1);
		close(fd);
		if (n == (ssize_t)len && !memcmp(old, data, len)) {
			free(old);
			return 0;
		}
	}
	free(old);
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, data, len);
	int e = n == (ssize_t)len ? 0 : n < 0 ? errno : EIO;
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) != 0)
		e = errno;
	if (e)
		unlink(tmp);
	return -e;
}

/* The allocation's storm.conf: its nodes, the MM's addresses on the first
 * (ports 1 and 2 stand in until the MM's task has chosen), Slurm's munged,
 * a fresh cluster key in dir. 0, or -1 (printed). */
static int slurm_configure(const struct up_opts *o, const struct slurm_alloc *a, const char *dir,
			   const char *conf_path, struct storm_conf *conf)
{
	if (conf_from_opts(o, conf_path, conf) < 0)
		return -1;
	snprintf(conf->name, sizeof(conf->name), "slurm-%s", a->job_id);
	if (!o->cpus && a->cpus)
		conf->cpus = a->cpus;
	snprintf(conf->state_dir, sizeof(conf->state_dir), "%s/state", dir);
	snprintf(conf->socket, sizeof(conf->socket), "%s/mm.sock", dir);
	snprintf(conf->bootstrap, sizeof(conf->bootstrap), "mm");
	host_port(conf->mm_address, sizeof(conf->mm_address), a->first_addr, 1);
	host_port(conf->ctl_address, sizeof(conf->ctl_address), a->first_addr, 2);
	snprintf(conf->key_file, sizeof(conf->key_file), "%s/cluster.key", dir);
	snprintf(conf->munge_socket, sizeof(conf->munge_socket), "%s", a->munge_socket);
	conf->nnodes = a->nnodes;
	memcpy(conf->nodes, a->nodes, sizeof(*a->nodes) * (size_t)a->nnodes);
	int rc = gm_key_create(conf->key_file);
	if (rc != 0) {
		fprintf(stderr, "storm: error: cannot create the cluster key %s: %s\n",
			conf->key_file, strerror(-rc));
		conf_free(conf);
		return -1;
	}
	ctl_set_munge_socket(conf->munge_socket);
	return 0;
}

/* "STORM_CLUSTER_KEY=<hex>" of the key file (malloc'd), or NULL (printed). */
static char *key_env(const char *path)
{
	uint8_t key[GM_KEY_LEN];
	char err[300];
	if (gm_key_load(path, key, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: %s\n", err);
		return NULL;
	}
	size_t pre = strlen(ENV_KEY_HEX "=");
	char *env = malloc(pre + 2 * GM_KEY_LEN + 1);
	if (env) {
		memcpy(env, ENV_KEY_HEX "=", pre);
		sodium_bin2hex(env + pre, 2 * GM_KEY_LEN + 1, key, GM_KEY_LEN);
	}
	sodium_memzero(key, sizeof(key));
	return env;
}

/* The MM's node: two free TCP ports here for mm_address and ctl_address,
 * on the host the configuration names. 0, or -1 (printed). */
static int take_ports(struct storm_conf *conf)
{
	char host[256], port[16];
	int p1 = free_tcp_port(), p2 = p1;
	while (p2 == p1 && p2 > 0)
		p2 = free_tcp_port();
	if (p1 < 0 || p2 < 0 ||
	    conf_address(conf->mm_address, host, sizeof(host), port, sizeof(port)) != 0) {
		fprintf(stderr, "storm: error: no free TCP port for the machine manager: %s\n",
			strerror(p1 < 0 ? -p1 : p2 < 0 ? -p2 : EINVAL));
		return -1;
	}
	host_port(conf->mm_address, sizeof(conf->mm_address), host, p1);
	host_port(conf->ctl_address, sizeof(conf->ctl_address), host, p2);
	return 0;
}

/* storm-cluster slurm-task mm|nd DAEMON CONF [--realtime]: one task of a job
 * step `up --slurm` started, on an allocated node. Writes the configuration
 * and key from its environment into CONF's directory on this node (the MM's
 * task first takes two free ports here and prints them), then becomes the
 * daemon, its log in DIR/log. */
static int slurm_task(int argc, char **argv)
{
	const char *cmd = "storm-cluster slurm-task";
	if (argc < 4 || (strcmp(argv[1], "mm") && strcmp(argv[1], "nd")))
		return usage_error(cmd, "wants mm|nd DAEMON CONF (storm cluster up --slurm runs it)");
	int is_mm = !strcmp(argv[1], "mm"), realtime = argc > 4 && !strcmp(argv[4], "--realtime");
	const char *daemon = argv[2], *conf_path = argv[3];
	const char *text_env = getenv(ENV_CONF_TEXT), *hex_env = getenv(ENV_KEY_HEX);
	if (!text_env || !hex_env) {
		fprintf(stderr, "storm: error: %s: %s or %s unset; storm cluster up --slurm runs it\n",
			cmd, ENV_CONF_TEXT, ENV_KEY_HEX);
		return EXIT_STORM;
	}
	char *text = strdup(text_env), *hex = strdup(hex_env);
	/* the daemon, and the ranks it starts, never see the key */
	unsetenv(ENV_CONF_TEXT);
	unsetenv(ENV_KEY_HEX);
	char tmp[PATH_MAX], dir[PATH_MAX], cerr[512], log[PATH_MAX + 80];
	snprintf(tmp, sizeof(tmp), "%s", conf_path);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	const char *node = getenv("SLURMD_NODENAME");
	struct storm_conf conf;
	uint8_t key[GM_KEY_LEN];
	size_t klen = 0;
	int rc = EXIT_STORM;
	if (!text || !hex || prepare_dir(dir) != 0)
		goto out_free;
	if (conf_load_string(text, conf_path, &conf, cerr, sizeof(cerr)) != 0) {
		fprintf(stderr, "storm: error: %s\n", cerr);
		goto out_free;
	}
	if (sodium_hex2bin(key, sizeof(key), hex, strlen(hex), NULL, &klen, NULL) != 0 ||
	    klen != GM_KEY_LEN) {
		fprintf(stderr, "storm: error: %s: %s is not a cluster key\n", cmd, ENV_KEY_HEX);
		goto out;
	}
	int e = put_file(conf.key_file, key, sizeof(key), 0600);
	sodium_memzero(key, sizeof(key));
	if (e) {
		fprintf(stderr, "storm: error: cannot write %s: %s\n", conf.key_file, strerror(-e));
		goto out;
	}
	if (!is_mm && (!node || conf_node_index(&conf, node) < 0)) {
		fprintf(stderr, "storm: error: this node (SLURMD_NODENAME=%s) is not one of the "
			"allocation's\n", node ? node : "unset");
		goto out;
	}
	if (is_mm && take_ports(&conf) != 0)
		goto out;
	char *out = conf_text(&conf);
	e = out ? put_file(conf_path, out, strlen(out), 0644) : -ENOMEM;
	free(out);
	if (e) {
		fprintf(stderr, "storm: error: cannot write %s: %s\n", conf_path, strerror(-e));
		goto out;
	}
	if (access(daemon, X_OK) != 0) {
		fprintf(stderr, "storm: error: cannot run %s on %s: %s\n", daemon,
			node ? node : "this node", strerror(errno));
		goto out;
	}
	snprintf(log, sizeof(log), "%s/log/%s.log", dir, is_mm ? "mm" : node);
	int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (lfd < 0 || nul < 0) {
		fprintf(stderr, "storm: error: cannot open %s: %s\n", log, strerror(errno));
		goto out;
	}
	if (is_mm) {
		printf(PORTS_LINE " %s %s\n", conf.mm_address, conf.ctl_address);
		fflush(stdout);
	}
	dup2(nul, 0);
	dup2(lfd, 1);
	dup2(lfd, 2);
	char *nd_argv[] = { (char *)daemon, "-c", (char *)conf_path, "-n", (char *)node,
			    realtime ? NULL : "--no-realtime", NULL };
	char *mm_argv[] = { (char *)daemon, "-c", (char *)conf_path, NULL };
	execv(daemon, is_mm ? mm_argv : nd_argv);
	fprintf(stderr, "storm: error: cannot run %s: %s\n", daemon, strerror(errno));
out:
	conf_free(&conf);
out_free:
	free(text);
	free(hex);
	return rc;
}

/* The MM's task's line: its mm_address and ctl_address. 0, or -1 (printed)
 * when its step ended first, a signal came or a minute passed. */
static int read_ports(int fd, struct daemon *mm, struct storm_conf *conf)
{
	char line[1024];
	size_t have = 0;
	double limit = now_s() + 60;
	for (;;) {
		char *nl = memchr(line, '\n', have);
		if (nl) {
			*nl = '\0';
			char mm_addr[256], ctl_addr[256];
			if (sscanf(line, PORTS_LINE " %255s %255s", mm_addr, ctl_addr) != 2) {
				fprintf(stderr, "storm: error: the machine manager's task said '%s'\n",
					line);
				return -1;
			}
			snprintf(conf->mm_address, sizeof(conf->mm_address), "%s", mm_addr);
			snprintf(conf->ctl_address, sizeof(conf->ctl_address), "%s", ctl_addr);
			return 0;
		}
		int status;
		if (waitpid(mm->pid, &status, WNOHANG) == mm->pid) {
			mm->gone = 1;
			fprintf(stderr, "storm: error: the machine manager's job step ended (%s %d) "
				"before it started\n", WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			return -1;
		}
		if (interrupted)
			return -1;
		if (now_s() > limit || have == sizeof(line) - 1) {
			fprintf(stderr, "storm: error: the machine manager's job step did not start "
				"within 60 s ('squeue -s -j %s' shows the allocation's steps)\n",
				getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "JOB");
			return -1;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 200) == 1) {
			ssize_t n = read(fd, line + have, sizeof(line) - 1 - have);
			if (n > 0)
				have += (size_t)n;
			else if (n == 0)
				usleep(50000); /* EOF: its exit is next */
		}
	}
}

/* Starts one step: the MM's task on the first node or a node daemon's on
 * every node, with the configuration and key in its environment. The
 * step's srun is d[*nd] and in DIR/pids. 0 or -1 (printed). */
static int start_step(const struct up_opts *o, const struct slurm_alloc *a, const char *dir,
		      const char *conf_path, const struct storm_conf *conf, int is_mm, int out_fd,
		      struct daemon *d, int *nd)
{
	char self[PATH_MAX], bin[PATH_MAX + 16], pids[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || find_daemon(is_mm ? "stormmm" : "stormnd", bin, sizeof(bin)))
		return -1;
	self[n] = '\0';
	char *text = conf_text(conf), *key = key_env(conf->key_file), *conf_env = NULL;
	if (!text || !key || asprintf(&conf_env, ENV_CONF_TEXT "=%s", text) < 0) {
		conf_env = NULL;
		free(text);
		free(key);
		return -1;
	}
	char *task[] = { self, "slurm-task", is_mm ? "mm" : "nd", bin, (char *)conf_path,
			 o->realtime ? "--realtime" : NULL, NULL };
	char *env[] = { conf_env, key, NULL };
	pid_t pid = slurm_srun(a, is_mm, task, env, out_fd);
	sodium_memzero(key, strlen(key));
	free(key);
	free(conf_env);
	free(text);
	if (pid < 0) {
		fprintf(stderr, "storm: error: cannot start srun: %s\n", strerror(-(int)pid));
		return -1;
	}
	d[*nd].pid = pid;
	d[*nd].pidfd = pidfd_open(pid, 0);
	snprintf(d[(*nd)++].name, HOSTNAME_MAX, "%s", is_mm ? "mm" : "srun-nodes");
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	append_pid(pids, pid, is_mm ? "srun-mm" : "srun-nodes");
	return 0;
}

/* Both steps, and the wait until every node is UP. 0, or -1 (printed). */
static int slurm_start(const struct up_opts *o, const struct slurm_alloc *a, const char *dir,
		       const char *conf_path, struct storm_conf *conf, struct daemon *d, int *nd,
		       int *mm_out)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, "storm: error: pipe: %s\n", strerror(errno));
		return -1;
	}
	*mm_out = pfd[0];
	int rc = start_step(o, a, dir, conf_path, conf, 1, pfd[1], d, nd);
	close(pfd[1]);
	if (rc != 0 || read_ports(pfd[0], &d[0], conf) != 0)
		return -1;
	int e = conf_write(conf, conf_path);
	if (e) {
		fprintf(stderr, "storm: error: cannot write %s: %s\n", conf_path, strerror(-e));
		return -1;
	}
	if (start_step(o, a, dir, conf_path, conf, 0, -1, d, nd) != 0)
		return -1;
	bool interrupt = false;
	Storm__Ctl__Reply *rep = wait_up(dir, conf->ctl_address, conf, d, *nd, &interrupt);
	if (!rep)
		return -1;
	print_up(dir, conf_path, conf, rep->status, false);
	ctl_reply_free(rep);
	return 0;
}

/* Until the command exits (cmd > 0), a step's srun does (the allocation
 * ended, or a daemon died) or a signal comes. Drains the MM step's stdout. */
static void supervise(struct daemon *d, int nd, pid_t cmd, int *cmd_status, int drain)
{
	int cmdfd = cmd > 0 ? pidfd_open(cmd, 0) : -1;
	while (!interrupted) {
		struct pollfd p[4];
		int n = 0;
		for (int i = 0; i < nd; i++)
			p[n++] = (struct pollfd){ .fd = d[i].pidfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = cmdfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = drain, .events = POLLIN };
		if (poll(p, (nfds_t)n, 1000) < 0 && errno != EINTR)
			break;
		if (cmd > 0 && waitpid(cmd, cmd_status, WNOHANG) == cmd)
			break;
		if (drain >= 0 && (p[n - 1].revents & (POLLIN | POLLHUP))) {
			char buf[4096];
			if (read(drain, buf, sizeof(buf)) <= 0)
				drain = -1; /* the step's stdout closed */
		}
		int status, gone = -1;
		for (int i = 0; i < nd && gone < 0; i++)
			if (waitpid(d[i].pid, &status, WNOHANG) == d[i].pid)
				gone = i;
		if (gone >= 0) {
			d[gone].gone = 1;
			fprintf(stderr, "storm: the %s job step ended (%s %d); taking the cluster down\n",
				gone == 0 ? "machine manager's" : "node daemons'",
				WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			break;
		}
	}
	if (cmdfd >= 0)
		close(cmdfd);
}

/* Takes the allocation's cluster down: Shutdown, the steps' sruns awaited
 * (SIGTERM, which srun passes to the daemons, then SIGKILL), this host's
 * run-time files removed. */
static void slurm_teardown(const char *dir, const char *conf_path, const struct storm_conf *conf)
{
	int err;
	char pids[PATH_MAX];
	send_shutdown(conf->ctl_address, &err);
	path_join(pids, sizeof(pids), dir, "pids");
	stop_daemons(pids, conf_path, 5.0 + 0.05 * conf->nnodes, 0);
	remove_runtime(dir);
}

/* Runs the command with STORM_CONF set; its pid or -1 (printed). */
static pid_t run_command(char **cmd, const char *conf_path)
{
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		setenv("STORM_CONF", conf_path, 1);
		execvp(cmd[0], cmd);
		fprintf(stderr, "storm: error: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "storm: error: fork: %s\n", strerror(errno));
	return pid;
}

/* Detached (no command): the cluster stays up after `up` returns, watched
 * by this process's child, which `up` waits for until the cluster is up.
 * Returns in the child (0) or the parent's exit code (> 0, or EXIT_OK via
 * *parent_done). */
static int detach(int *ready_fd, int *parent_done)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(pfd[0]);
		*ready_fd = pfd[1];
		return 0;
	}
	/* the child hears Ctrl-C as well and takes down what it started */
	signal(SIGINT, SIG_IGN);
	close(pfd[1]);
	unsigned char code = EXIT_STORM;
	ssize_t n;
	while ((n = read(pfd[0], &code, 1)) < 0 && errno == EINTR)
		;
	*parent_done = 1;
	return n == 1 ? code : EXIT_STORM;
}

/* The detached cluster's watcher, once it is up: tells the waiting `up`
 * (ready), which returns; from here nobody reads our output (DIR/log/
 * storm-cluster.log has it) and the terminal's signals are not ours. */
static void become_watcher(const char *dir, int ready)
{
	unsigned char ok = EXIT_OK;
	if (write(ready, &ok, 1) != 1) { /* `up` is gone: nobody waits for the cluster */
	}
	close(ready);
	char log[PATH_MAX + 32];
	snprintf(log, sizeof(log), "%s/log/storm-cluster.log", dir);
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul >= 0)
		dup2(nul, 0);
	if (lfd >= 0) {
		dup2(lfd, 1);
		dup2(lfd, 2);
	}
	setsid();
}

static const char slurm_hint[] =
	"storm: storm commands in this allocation find it by themselves (SLURM_JOB_ID);\n"
	"storm: elsewhere, STORM_CONF=%s; 'storm cluster down' takes it down before the\n"
	"storm: allocation ends\n";

static int cluster_up_slurm(const struct up_opts *o)
{
	struct slurm_alloc a;
	char err[512];
	if (slurm_alloc_read(&a, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: %s\n", err);
		return EXIT_STORM;
	}
	char def[64], dir[DIR_MAX], conf_path[PATH_MAX], sock[PATH_MAX], pids[PATH_MAX];
	snprintf(def, sizeof(def), "/tmp/storm-slurm-%s", a.job_id);
	int code = EXIT_STORM;
	char probe[PATH_MAX + 16];
	if (resolve_dir(o, def, dir) < 0 || find_daemon("stormmm", probe, sizeof(probe)) ||
	    find_daemon("stormnd", probe, sizeof(probe))) {
		slurm_alloc_free(&a);
		return EXIT_STORM;
	}
	snprintf(conf_path, sizeof(conf_path), "%s/storm.conf", dir);
	snprintf(sock, sizeof(sock), "%s/mm.sock", dir);
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	int ready = -1, parent_done = 0;
	if (!o->cmd) {
		int rc = detach(&ready, &parent_done);
		if (parent_done || rc < 0) {
			slurm_alloc_free(&a);
			return rc < 0 ? EXIT_STORM : rc;
		}
	}
	struct storm_conf conf;
	struct daemon d[2] = { 0 };
	int nd = 0, mm_out = -1;
	if (clear_dir(o, dir, conf_path, sock, pids) < 0 || prepare_dir(dir) != 0 ||
	    slurm_configure(o, &a, dir, conf_path, &conf) != 0) {
		slurm_alloc_free(&a);
		return EXIT_STORM;
	}
	struct sigaction sa = { .sa_handler = on_sigint }; /* no SA_RESTART: poll wakes */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (slurm_start(o, &a, dir, conf_path, &conf, d, &nd, &mm_out) != 0) {
		if (interrupted)
			fprintf(stderr, "storm: interrupted while the cluster was coming up\n");
		slurm_teardown(dir, conf_path, &conf);
		fprintf(stderr, "storm: took the partial cluster down (logs in %s/log on each node)\n",
			dir);
		goto out;
	}
	int status = 0;
	pid_t cmd = -1;
	if (o->cmd) {
		cmd = run_command(o->cmd, conf_path);
		/* as salloc: Ctrl-C is the command's (an interactive shell's
		 * prompt survives it, and so must the cluster); its exit ends
		 * the cluster */
		signal(SIGINT, SIG_IGN);
	} else {
		fprintf(stderr, slurm_hint, conf_path);
		become_watcher(dir, ready);
	}
	if (!o->cmd || cmd > 0)
		supervise(d, nd, cmd, &status, mm_out);
	if (cmd > 0 && kill(cmd, 0) == 0 && waitpid(cmd, &status, WNOHANG) == 0) {
		/* the cluster went first: the command has no use for it */
		kill(cmd, SIGTERM);
		waitpid(cmd, &status, 0);
	}
	slurm_teardown(dir, conf_path, &conf);
	printf("storm: cluster down (%s)\n", dir);
	if (cmd > 0)
		code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	else
		code = o->cmd ? EXIT_STORM : EXIT_OK;
out:
	if (mm_out >= 0)
		close(mm_out);
	for (int i = 0; i < nd; i++)
		if (d[i].pidfd >= 0)
			close(d[i].pidfd);
	conf_free(&conf);
	slurm_alloc_free(&a);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	return code;
}

/* The options of storm cluster up that take a number: each read into its
 * field of struct up_opts within its range, or refused naming the range. */
static const struct up_number {
	int id;
	const char *flag;
	uint64_t min, max;
	const char *unit;
	size_t field;
} up_numbers[] = {
	{ C_NODES, "--nodes", 1, MAX_VIRTUAL_NODES, "", offsetof(struct up_opts, nodes) },
	{ C_TIMESLICE, "--timeslice-us", 100, 10000000, "", offsetof(struct up_opts, timeslice_us) },
	{ C_CPUS, "--cpus", 1, 4096, "", offsetof(struct up_opts, cpus) },
	{ C_DOWN_AFTER, "--down-after", 2, 1000000, " timeslices", offsetof(struct up_opts, down_after) },
	{ C_DOWN_AFTER_MS, "--down-after-ms", 1, 3600000, " ms", offsetof(struct up_opts, down_after_ms) },
	{ C_MPL, "--mpl", 1, STORM_MAX_MPL, "", offsetof(struct up_opts, mpl) },
	{ C_QUANTUM, "--quantum", 1, 1000000, " timeslices", offsetof(struct up_opts, quantum) },
	{ C_METRICS, "--metrics-port", 1, 65535, "", offsetof(struct up_opts, metrics_port) },
	{ C_CTL_PORT, "--ctl-port", 1, 65535, "", offsetof(struct up_opts, ctl_port) },
};

static const char *const copies_names[] = { "0", "1", NULL }; /* and the other 0/1 settings */

/* The options that name one of a few words: its index into the field. */
static const struct up_choice {
	int id;
	const char *flag;
	const char *const *names;
	const char *said;
	size_t field;
} up_choices[] = {
	{ C_POLICY, "--policy", storm_policy_names, "gang or fcfs", offsetof(struct up_opts, policy) },
	{ C_SWITCH, "--switch", storm_switch_names, "signals or freezer",
	  offsetof(struct up_opts, switch_mode) },
	{ C_COPIES, "--checkpoint-copies", copies_names, "0 or 1", offsetof(struct up_opts, copies) },
	{ C_DATA_TAGS, "--bcs-data-tags", copies_names, "0 or 1", offsetof(struct up_opts, data_tags) },
};

/* 1 when id is a table option (read into o), 0 when not, -1 (printed) when
 * its value is refused. */
static int up_table_option(const char *cmd, int id, const char *arg, struct up_opts *o)
{
	for (size_t i = 0; i < sizeof(up_numbers) / sizeof(up_numbers[0]); i++) {
		const struct up_number *n = &up_numbers[i];
		uint64_t v;
		if (n->id != id)
			continue;
		if (parse_uint(arg, n->min, n->max, &v)) {
			usage_error(cmd, "%s wants %llu to %llu%s, not '%s'", n->flag,
				    (unsigned long long)n->min, (unsigned long long)n->max, n->unit,
				    arg);
			return -1;
		}
		*(unsigned *)((char *)o + n->field) = (unsigned)v;
		return 1;
	}
	for (size_t i = 0; i < sizeof(up_choices) / sizeof(up_choices[0]); i++) {
		const struct up_choice *c = &up_choices[i];
		if (c->id != id)
			continue;
		int k = 0;
		while (c->names[k] && strcmp(c->names[k], arg))
			k++;
		if (!c->names[k]) {
			usage_error(cmd, "%s wants %s, not '%s'", c->flag, c->said, arg);
			return -1;
		}
		*(int *)((char *)o + c->field) = k;
		return 1;
	}
	return 0;
}

/* The options that contradict each other or the mode; with --slurm,
 * its command after them. -1 to go on, else the exit code. */
static int check_up_opts(const char *cmd, struct up_opts *o, int argc, char **argv, int ind)
{
	if (o->nshares && !o->hosts)
		return usage_error(cmd, "--share is for --hosts (without it every daemon sees "
					"every directory)");
	if (o->netns && o->hosts)
		return usage_error(cmd, "--hosts and --netns both set; --hosts already gives every "
					"daemon a network namespace of its own");
	if ((o->netns || o->hosts) && o->provider &&
	    (!strcmp(o->provider, "shm") || strstr(o->provider, "shm;")))
		return usage_error(cmd, "%s needs a network provider, not '%s'",
				   o->hosts ? "--hosts" : "--netns", o->provider);
	if (ind < argc && !o->slurm)
		return usage_error(cmd, "unexpected argument '%s'", argv[ind]);
	if (o->slurm) {
		if (o->nodes || o->netns || o->hosts || o->ctl_port)
			return usage_error(cmd, "--slurm takes the allocation's nodes and addresses; "
						"--nodes, --netns, --hosts and --ctl-port do not apply");
		o->cmd = ind < argc ? argv + ind : NULL;
	} else if (!o->nodes)
		return usage_error(cmd, "--nodes N is required");
	if (o->down_after && o->down_after_ms)
		return usage_error(cmd, "--down-after-ms and the deprecated --down-after both "
					"set; keep --down-after-ms");
	if (o->policy == POLICY_FCFS && o->mpl > 1)
		return usage_error(cmd, "--policy fcfs runs one job per node; --mpl %u contradicts it",
				   o->mpl);
	return -1;
}

static int cmd_up(int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "nodes", 'N', 1, C_NODES },	       { "dir", 0, 1, C_DIR },
		{ "provider", 0, 1, C_PROVIDER },      { "timeslice-us", 0, 1, C_TIMESLICE },
		{ "cpus", 0, 1, C_CPUS },	       { "down-after", 0, 1, C_DOWN_AFTER },
		{ "down-after-ms", 0, 1, C_DOWN_AFTER_MS },
		{ "netns", 0, 0, C_NETNS },	       { "help", 'h', 0, C_HELP },
		{ "realtime", 0, 0, C_REALTIME },      { "mpl", 0, 1, C_MPL },
		{ "quantum", 0, 1, C_QUANTUM },        { "policy", 0, 1, C_POLICY },
		{ "switch", 0, 1, C_SWITCH },	       { "checkpoint-copies", 0, 1, C_COPIES },
		{ "metrics-port", 0, 1, C_METRICS },   { "ahead", 0, 1, C_AHEAD },
		{ "ctl-port", 0, 1, C_CTL_PORT },      { "bcs-data-tags", 0, 1, C_DATA_TAGS },
		{ "switch-wait-pct", 0, 1, C_SWITCH_WAIT }, { "slurm", 0, 0, C_SLURM },
		{ "hosts", 0, 0, C_HOSTS }, { "share", 0, 1, C_SHARE },
		{ NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster up";
	struct up_opts o = { .policy = -1,    .switch_mode = -1, .copies = -1,
			     .data_tags = -1, .ahead = -1,	 .switch_wait_pct = -1 };
	uint64_t v;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 1); /* --slurm's command ends the options */
	int id;
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		int t = id > 0 ? up_table_option(cmd, id, p.arg, &o) : 0;
		if (t < 0)
			return EXIT_USAGE;
		if (t > 0)
			continue;
		switch (id) {
		case C_DIR:
			if (!p.arg[0])
				return usage_error(cmd, "--dir wants a directory");
			o.dir = p.arg;
			break;
		case C_PROVIDER:
			if (!p.arg[0] || strlen(p.arg) >= 64 || strpbrk(p.arg, "\n\r"))
				return usage_error(cmd, "--provider wants a libfabric provider name "
							"such as 'tcp;ofi_rxm'");
			o.provider = p.arg;
			break;
		case C_AHEAD: /* 0 is a value here, so not in up_numbers */
			if (parse_uint(p.arg, 0, STROBE_AHEAD_MAX, &v))
				return usage_error(cmd, "--ahead wants 0 to %d, not '%s'",
						   STROBE_AHEAD_MAX, p.arg);
			o.ahead = (int)v;
			break;
		case C_SWITCH_WAIT:
			if (parse_uint(p.arg, 0, 90, &v))
				return usage_error(cmd, "--switch-wait-pct wants 0 to 90, not '%s'",
						   p.arg);
			o.switch_wait_pct = (int)v;
			break;
		case C_NETNS: o.netns = 1; break;
		case C_HOSTS: o.hosts = 1; break;
		case C_SHARE: {
			char cwd[PATH_MAX], abs[PATH_MAX];
			struct stat st;
			if (o.nshares == HOSTS_MAX_SHARES)
				return usage_error(cmd, "at most %d --share", HOSTS_MAX_SHARES);
			if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, p.arg, abs, sizeof(abs)) ||
			    stat(abs, &st) != 0 || !S_ISDIR(st.st_mode))
				return usage_error(cmd, "--share wants a directory, not '%s'", p.arg);
			o.shares[o.nshares++] = strdup(abs);
			break;
		}
		case C_REALTIME: o.realtime = 1; break;
		case C_SLURM: o.slurm = 1; break;
		case C_HELP: fputs(up_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error(cmd, "unexpected argument '%s'", p.arg);
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	int rc = check_up_opts(cmd, &o, argc, argv, p.ind);
	if (rc >= 0)
		return rc;
	return o.slurm ? cluster_up_slurm(&o) : cluster_up(&o);
}

/* ---- storm cluster status / down: which cluster */

/* --dir DIR means DIR/storm.conf; else the usual search. 0 or -1 when there
 * is no configuration at all (err says where it looked). */
static int locate(struct cli *c, const char *dir, char *err, size_t errlen)
{
	if (dir) {
		char cwd[PATH_MAX], abs[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, dir, abs, sizeof(abs)) ||
		    path_join(c->conf_path, sizeof(c->conf_path), abs, "storm.conf")) {
			snprintf(err, errlen, "cannot make %s absolute", dir);
			return -1;
		}
		c->conf_opt = c->conf_path;
		return 0;
	}
	return cli_find_conf(c, err, errlen);
}

static const char status_help[] =
	"Usage: storm cluster status [--json] [--wait SECONDS] [--dir DIR]\n"
	"\n"
	"The cluster's name, nodes up, provider, timeslice, current slice, jobs and\n"
	"the machine manager's pid; the nodes that are not UP by name.\n"
	"\n"
	"      --json     print a JSON object for scripts\n"
	"      --wait S   answer once every node is UP, or after S seconds (then\n"
	"                 exit 1 if some are not)\n"
	"      --dir DIR  the virtual cluster in DIR (default: the usual search)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

static int cmd_status(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "json", 0, 0, C_JSON }, { "dir", 0, 1, C_DIR },   { "conf", 0, 1, C_CONF },
		{ "wait", 0, 1, C_WAIT }, { "help", 'h', 0, C_HELP }, { NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster status", *dir = NULL;
	int json = 0, id;
	unsigned wait_s = 0;
	uint64_t v;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case C_JSON: json = 1; break;
		case C_DIR: dir = p.arg; break;
		case C_CONF: c->conf_opt = p.arg; break;
		case C_WAIT:
			if (parse_uint(p.arg, 1, 86400, &v))
				return usage_error(cmd, "--wait wants 1 to 86400 seconds, not '%s'", p.arg);
			wait_s = (unsigned)v;
			break;
		case C_HELP: fputs(status_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error(cmd, "unexpected argument '%s'", p.arg);
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	char err[512];
	if (dir && locate(c, dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: %s\n", err);
		return EXIT_STORM;
	}
	Storm__Ctl__ClusterStatus cs = STORM__CTL__CLUSTER_STATUS__INIT;
	cs.wait_ms = wait_s * 1000; /* the MM answers when all are UP, or then */
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_STATUS;
	req.status = &cs;
	int rc;
	Storm__Ctl__Reply *rep = cli_call(c, &req, CTL_TIMEOUT_MS + (int)cs.wait_ms, &rc);
	if (!rep)
		return rc;
	if (rep->body_case != STORM__CTL__REPLY__BODY_STATUS) {
		rc = cli_unexpected(rep, "Status");
		ctl_reply_free(rep);
		return rc;
	}
	Storm__Ctl__Status *s = rep->status;
	/* nodes that are not UP, by name */
	int nerr;
	const char *remote = cli_remote(c);
	Storm__Ctl__Reply *nodes = s->nodes_up < s->nodes_total
					   ? ask_nodes(remote ? remote : c->conf.socket, &nerr)
					   : NULL;
	const char **down = calloc(s->nodes_total + 1, sizeof(*down));
	int ndown = 0;
	if (nodes && nodes->body_case == STORM__CTL__REPLY__BODY_NODES && down)
		for (size_t i = 0; i < nodes->nodes->n_nodes && ndown < (int)s->nodes_total; i++)
			if (nodes->nodes->nodes[i]->state != STORM__CTL__NODE_STATE__UP)
				down[ndown++] = nodes->nodes->nodes[i]->name;
	char downlist[4096] = "";
	hostlist_compress(down, ndown, downlist, sizeof(downlist));
	if (json) {
		json_t *arr = json_array();
		for (int i = 0; i < ndown; i++)
			json_array_append_new(arr, json_string(down[i]));
		json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:o, s:I, s:i, s:s, s:i, s:i, s:i}",
				      "cluster", s->cluster, "conf", c->conf_path, "nodes_total",
				      (int)s->nodes_total, "nodes_up", (int)s->nodes_up,
				      "nodes_not_up", arr, "slice", (json_int_t)s->slice,
				      "timeslice_us", (int)s->timeslice_us, "provider", s->provider,
				      "jobs_running", (int)s->jobs_running, "jobs_queued",
				      (int)s->jobs_queued, "mm_pid", (int)s->mm_pid);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(o);
	} else {
		char ts[32];
		fmt_timeslice(s->timeslice_us, ts, sizeof(ts));
		printf("cluster '%s': %u of %u nodes up, provider %s, timeslice %s\n", s->cluster,
		       s->nodes_up, s->nodes_total, s->provider, ts);
		if (ndown)
			printf("not up: %s\n", downlist);
		printf("slice %llu, jobs: %u running, %u queued; machine manager pid %u; %s\n",
		       (unsigned long long)s->slice, s->jobs_running, s->jobs_queued, s->mm_pid,
		       c->conf_path);
	}
	/* --wait: the MM answered at its deadline with nodes still missing */
	rc = wait_s && s->nodes_up < s->nodes_total ? EXIT_STORM : EXIT_OK;
	free(down);
	ctl_reply_free(nodes);
	ctl_reply_free(rep);
	return rc;
}

static const char down_help[] =
	"Usage: storm cluster down [--dir DIR]\n"
	"\n"
	"Asks the machine manager to shut down, waits for every daemon of the\n"
	"virtual cluster (DIR/pids) to exit, kills those that do not, stops the\n"
	"cluster's munged (each host's too with --hosts), kills whatever is left\n"
	"in its network namespaces and removes them, and removes DIR/fabric,\n"
	"DIR/state, DIR/mm.sock, DIR/pids, DIR/munge, DIR/cluster.key and each\n"
	"host's files but its log; DIR/log stays. On a\n"
	"cluster that is not up it removes what is left and says so (exit 0).\n"
	"\n"
	"      --dir DIR  the virtual cluster in DIR (default: the usual search)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

static int cmd_down(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "dir", 0, 1, C_DIR }, { "conf", 0, 1, C_CONF }, { "help", 'h', 0, C_HELP },
		{ NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster down", *dir_opt = NULL;
	int id;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case C_DIR: dir_opt = p.arg; break;
		case C_CONF: c->conf_opt = p.arg; break;
		case C_HELP: fputs(down_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error(cmd, "unexpected argument '%s'", p.arg);
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	char err[512];
	if (locate(c, dir_opt, err, sizeof(err)) != 0) {
		printf("storm: no cluster is up (%s); nothing to take down\n", err);
		return EXIT_OK;
	}
	char dir[PATH_MAX], tmp[PATH_MAX], pids[PATH_MAX + 8], sock[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s", c->conf_path);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	path_join(pids, sizeof(pids), dir, "pids");
	struct storm_conf conf;
	int have_conf = conf_load(c->conf_path, &conf, err, sizeof(err)) == 0;
	snprintf(sock, sizeof(sock), "%s/mm.sock", dir);
	/* only a virtual cluster's own layout is cleaned: never a real
	 * cluster's state directory */
	int is_virtual = access(pids, F_OK) == 0;
	if (have_conf) {
		char st[PATH_MAX + 8];
		snprintf(st, sizeof(st), "%s/state", dir);
		is_virtual |= !strcmp(conf.socket, sock) && !strcmp(conf.state_dir, st);
		/* --hosts, or a Slurm allocation's MM on another node: its
		 * ctl_address */
		snprintf(sock, sizeof(sock), "%s", mm_where(&conf));
		ctl_set_munge_socket(conf.munge_socket);
		conf_free(&conf);
	} else if (!is_virtual) {
		printf("storm: no cluster is up (%s); nothing to take down\n", err);
		return EXIT_OK;
	}
	int e;
	int rc = send_shutdown(sock, &e);
	if (rc > 0)
		return EXIT_STORM; /* refused, e.g. not root's: message printed */
	int was_up = rc == 0;
	if (!is_virtual) {
		if (was_up)
			printf("storm: the machine manager on %s is shutting down\n", sock);
		else
			printf("storm: no cluster is up (cannot connect to %s: %s)\n", sock,
			       strerror(-e));
		return EXIT_OK;
	}
	struct daemon *d;
	int n = read_pids(pids, &d);
	free(d);
	int running = stop_daemons(pids, c->conf_path, was_up ? 5.0 + 0.1 * n : 0.0, !was_up);
	int removed = remove_runtime(dir);
	if (was_up)
		printf("storm: cluster down (%s)\n", dir);
	else if (running || removed)
		printf("storm: no cluster was up in %s; cleaned up what was left (%d daemons)\n", dir,
		       running);
	else
		printf("storm: no cluster is up in %s; nothing to take down\n", dir);
	return EXIT_OK;
}

/* ---- restart: one daemon of the virtual cluster, started again as up did */

static const char restart_help[] =
	"Usage: storm cluster restart mm|NODE [--dir DIR]\n"
	"\n"
	"Starts the machine manager (mm) or node NODE's daemon of the virtual cluster\n"
	"again, as 'cluster up' started it (detached, its log appended, in its\n"
	"network namespace with --netns, in its host with --hosts), after it died\n"
	"or was killed. The machine\n"
	"manager takes its jobs back from its database and the node daemons\n"
	"re-register with it; a restarted node daemon kills the ranks it lost and\n"
	"reports their jobs failed. For the machine manager, waits until it\n"
	"answers. Refused while that daemon still runs.\n"
	"\n"
	"      --dir DIR   the cluster's directory (default: where storm.conf is found)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

/* The daemon NAME of the cluster at conf_path still runs: told, 1. */
static int daemon_still_runs(const char *pids, const char *name, const char *conf_path)
{
	struct daemon *d;
	int n = read_pids(pids, &d);
	for (int i = 0; i < n; i++)
		if (!strcmp(d[i].name, name) && kill(d[i].pid, 0) == 0 &&
		    runs_with_conf(d[i].pid, conf_path)) {
			fprintf(stderr, "storm: error: %s still runs (pid %d); it must die first\n",
				name, (int)d[i].pid);
			free(d);
			return 1;
		}
	free(d);
	return 0;
}

/* Waits for the restarted machine manager (pid) to answer: EXIT_OK, or
 * EXIT_STORM once it died or 30 s went by. */
static int wait_mm_again(const struct storm_conf *conf, pid_t pid, double start,
			 const char *log)
{
	/* the MM listens at once, answers once it has joined the fabric */
	ctl_set_munge_socket(conf->munge_socket);
	for (;;) {
		int e;
		Storm__Ctl__Reply *rep = ask_status(mm_where(conf), 1000, &e);
		if (rep && rep->body_case == STORM__CTL__REPLY__BODY_STATUS) {
			printf("storm: machine manager started again (pid %d) in %.2f s: %u of %u "
			       "nodes up, %u jobs running, %u queued\n",
			       (int)pid, now_s() - start, rep->status->nodes_up,
			       rep->status->nodes_total, rep->status->jobs_running,
			       rep->status->jobs_queued);
			ctl_reply_free(rep);
			return EXIT_OK;
		}
		ctl_reply_free(rep);
		if (kill(pid, 0) != 0 || now_s() - start > 30) {
			fprintf(stderr, "storm: error: the machine manager did not answer; see %s\n",
				log);
			return EXIT_STORM;
		}
		if (!rep) {
			struct timespec ts = { 0, 20 * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

static int cluster_restart(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "dir", 0, 1, C_DIR }, { "conf", 0, 1, C_CONF }, { "help", 'h', 0, C_HELP },
		{ NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster restart", *dir_opt = NULL, *name = NULL;
	int id;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case C_DIR: dir_opt = p.arg; break;
		case C_CONF: c->conf_opt = p.arg; break;
		case C_HELP: fputs(restart_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			if (name)
				return usage_error(cmd, "unexpected argument '%s'", p.arg);
			name = p.arg;
			break;
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	if (!name)
		return usage_error(cmd, "which daemon? 'mm' or a node name");
	char err[512];
	if (locate(c, dir_opt, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: no virtual cluster found (%s)\n", err);
		return EXIT_STORM;
	}
	char dir[PATH_MAX], tmp[PATH_MAX], pids[PATH_MAX + 8], log[PATH_MAX + 80], nsf[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s", c->conf_path);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	path_join(pids, sizeof(pids), dir, "pids");
	path_join(nsf, sizeof(nsf), dir, "netns");
	if (access(pids, F_OK) != 0) {
		fprintf(stderr, "storm: error: %s is not a virtual cluster's directory (no pids file)\n",
			dir);
		return EXIT_STORM;
	}
	struct storm_conf conf;
	if (conf_load(c->conf_path, &conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: %s\n", err);
		return EXIT_STORM;
	}
	int is_mm = !strcmp(name, "mm"), idx = is_mm ? -1 : conf_node_index(&conf, name);
	int rc = EXIT_STORM;
	if (!is_mm && idx < 0) {
		rc = usage_error(cmd, "'%s' is neither mm nor a node of %s", name, c->conf_path);
		goto out;
	}
	if (daemon_still_runs(pids, name, c->conf_path))
		goto out;
	char bin[PATH_MAX + 16];
	if (find_daemon(is_mm ? "stormmm" : "stormnd", bin, sizeof(bin)))
		goto out;
	int netns = access(nsf, F_OK) == 0;
	pid_t host = 0;
	if (netns_of_hosts(dir) && (host = host_of(dir, is_mm ? HOSTS_MM : name)) == 0)
		goto out;
	daemon_log(dir, is_mm ? HOSTS_MM : name, log, sizeof(log));
	char *mm_argv[] = { bin, "-c", c->conf_path, NULL };
	char *nd_argv[] = { bin, "-c", c->conf_path, "-n", (char *)name, "--no-realtime", NULL };
	double start = now_s();
	pid_t pid = spawn_detached(is_mm ? mm_argv : nd_argv, log, dir,
				   netns ? (is_mm ? NETNS_MM : idx) : NO_NETNS, host, 1);
	if (pid < 0) {
		fprintf(stderr, "storm: error: cannot start %s: %s\n", bin, strerror(-(int)pid));
		goto out;
	}
	append_pid(pids, pid, name);
	if (!is_mm) {
		printf("storm: %s's node daemon started again (pid %d)\n", name, (int)pid);
		rc = EXIT_OK;
		goto out;
	}
	rc = wait_mm_again(&conf, pid, start, log);
out:
	conf_free(&conf);
	return rc;
}

static const char cluster_help[] =
	"Usage: storm cluster up|status|down|restart [OPTIONS]\n"
	"\n"
	"  up --nodes N   start a virtual cluster on this machine\n"
	"  status         the cluster's state\n"
	"  down           stop the virtual cluster and clean up\n"
	"  restart NAME   start its machine manager (mm) or a node daemon again\n"
	"\n"
	"'storm cluster SUBCOMMAND --help' for the options.\n";

int cmd_cluster(struct cli *c, int argc, char **argv)
{
	if (argc < 2) {
		fputs(cluster_help, stderr);
		return EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(cluster_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(sub, "up")) {
		if (c->conf_opt) /* up writes a configuration, it reads none */
			return usage_error("storm cluster up",
					   "--conf does not apply; --dir DIR chooses where it goes");
		return cmd_up(argc - 1, argv + 1);
	}
	if (!strcmp(sub, "status"))
		return cmd_status(c, argc - 1, argv + 1);
	if (!strcmp(sub, "down"))
		return cmd_down(c, argc - 1, argv + 1);
	if (!strcmp(sub, "restart"))
		return cluster_restart(c, argc - 1, argv + 1);
	if (!strcmp(sub, "slurm-task")) /* not for users: up --slurm's job steps */
		return slurm_task(argc - 1, argv + 1);
	return usage_error("storm cluster", "unknown subcommand '%s'", sub);
}
