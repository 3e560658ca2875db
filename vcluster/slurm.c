/* The Slurm allocation storm runs inside (slurm.h): read through scontrol,
 * which knows every node-list syntax and each node's address, and job steps
 * started with srun. */
#include "slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs argv (no shell: the values come from the environment) and keeps up
 * to len-1 bytes of its stdout in out. Its exit status, or -errno. */
static int capture(char *const argv[], char *out, size_t len)
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
		int devnull = open("/dev/null", O_RDWR);
		if (dup2(pfd[1], 1) < 0 || (devnull >= 0 && dup2(devnull, 0) < 0))
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	size_t have = 0;
	for (;;) {
		char buf[4096];
		ssize_t n = read(pfd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t take = have + (size_t)n < len ? (size_t)n : len - 1 - have;
		memcpy(out + have, buf, take);
		have += take;
	}
	out[have] = '\0';
	close(pfd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* KEY=VALUE's value from scontrol's one-line output (space-separated). */
static int field(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	for (const char *p = text; (p = strstr(p, key)); p += klen) {
		if ((p != text && p[-1] != ' ' && p[-1] != '\n') || p[klen] != '=')
			continue;
		const char *v = p + klen + 1;
		size_t n = strcspn(v, " \n");
		if (n >= len)
			return -1;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

/* SLURM_JOB_CPUS_PER_NODE, "4(x2),2": the smallest count; 0 if unreadable. */
static unsigned fewest_cpus(const char *s)
{
	unsigned fewest = 0;
	while (s && *s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s)
			return 0;
		if (v && (!fewest || v < fewest))
			fewest = (unsigned)v;
		s = strchr(end, ',');
		s = s ? s + 1 : NULL;
	}
	return fewest;
}

static int read_nodes(struct slurm_alloc *a, const char *list, char *err, size_t errlen)
{
	size_t cap = (size_t)STORM_CONF_MAX_NODES * (HOSTNAME_MAX + 1) + 1;
	char *out = malloc(cap);
	a->nodes = calloc(STORM_CONF_MAX_NODES, sizeof(*a->nodes));
	if (!out || !a->nodes) {
		free(out);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char *argv[] = { "scontrol", "show", "hostnames", (char *)list, NULL };
	int rc = capture(argv, out, cap);
	if (rc != 0) {
		snprintf(err, errlen, "'scontrol show hostnames %s' failed (%s)", list,
			 rc < 0 ? strerror(-rc) : rc == 127 ? "is Slurm installed?" : "exit status");
		free(out);
		return -1;
	}
	for (char *save = NULL, *n = strtok_r(out, "\n", &save); n; n = strtok_r(NULL, "\n", &save)) {
		if (a->nnodes == STORM_CONF_MAX_NODES || strlen(n) >= HOSTNAME_MAX) {
			snprintf(err, errlen, "the allocation has more than %d nodes or a name longer "
				 "than %d characters", STORM_CONF_MAX_NODES, HOSTNAME_MAX - 1);
			free(out);
			return -1;
		}
		snprintf(a->nodes[a->nnodes++], HOSTNAME_MAX, "%s", n);
	}
	free(out);
	if (!a->nnodes) {
		snprintf(err, errlen, "SLURM_JOB_NODELIST '%s' names no node", list);
		return -1;
	}
	return 0;
}

int slurm_alloc_read(struct slurm_alloc *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	const char *id = getenv("SLURM_JOB_ID"), *list = getenv("SLURM_JOB_NODELIST");
	if (!id || !*id || !list || !*list) {
		snprintf(err, errlen, "not inside a Slurm allocation (SLURM_JOB_ID or "
			 "SLURM_JOB_NODELIST unset); run it under salloc or sbatch");
		return -1;
	}
	snprintf(a->job_id, sizeof(a->job_id), "%s", id);
	if (strspn(id, "0123456789") != strlen(id) || strlen(id) >= sizeof(a->job_id)) {
		snprintf(err, errlen, "SLURM_JOB_ID '%s' is not a job number", id);
		return -1;
	}
	if (read_nodes(a, list, err, errlen) != 0) {
		slurm_alloc_free(a);
		return -1;
	}
	a->cpus = fewest_cpus(getenv("SLURM_JOB_CPUS_PER_NODE"));
	/* the address Slurm itself reaches the node at (NodeAddr; the node's
	 * name unless slurm.conf says otherwise) */
	char out[8192];
	char *show_node[] = { "scontrol", "show", "node", "-o", a->nodes[0], NULL };
	if (capture(show_node, out, sizeof(out)) != 0 ||
	    field(out, "NodeAddr", a->first_addr, sizeof(a->first_addr)) != 0)
		snprintf(a->first_addr, sizeof(a->first_addr), "%s", a->nodes[0]);
	/* storm's control connections use the munged Slurm uses */
	static char conf_out[1 << 16];
	char *show_conf[] = { "scontrol", "show", "config", NULL };
	char authinfo[512];
	if (capture(show_conf, conf_out, sizeof(conf_out)) == 0) {
		for (char *save = NULL, *l = strtok_r(conf_out, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			if (strncmp(l, "AuthInfo ", 9) != 0)
				continue;
			char *eq = strchr(l, '=');
			snprintf(authinfo, sizeof(authinfo), " %s", eq ? eq + 1 : "");
			for (char *c = authinfo; *c; c++)
				if (*c == ',')
					*c = ' ';
			if (field(authinfo, "socket", a->munge_socket, sizeof(a->munge_socket)) != 0)
				a->munge_socket[0] = '\0';
		}
	}
	return 0;
}

void slurm_alloc_free(struct slurm_alloc *a)
{
	free(a->nodes);
	a->nodes = NULL;
	a->nnodes = 0;
}

pid_t slurm_srun(const struct slurm_alloc *a, int first_only, char *const task_argv[],
		 char *const env_add[], int out_fd)
{
	char nodes[32], cpus[32];
	snprintf(nodes, sizeof(nodes), "%d", first_only ? 1 : a->nnodes);
	snprintf(cpus, sizeof(cpus), "%u", first_only || !a->cpus ? 1 : a->cpus);
	/* Every option that the allocation's SLURM_* variables would set is
	 * given: --export=ALL (the configuration travels in the environment,
	 * whatever sbatch --export said), the task counts, and for a node
	 * daemon the node's CPUs unbound, which its ranks inherit under
	 * task/affinity or task/cgroup. --overlap: the daemons' steps leave
	 * the allocation's CPUs and memory to the user's own steps;
	 * --mpi=none: no PMI for daemons; -J: what squeue -s shows. */
	char *head[] = { "srun", "--overlap", "--export=ALL", "--mpi=none", "--quiet",
			 "--cpu-bind=none", "-J", first_only ? "storm-mm" : "storm-nodes",
			 "-N", nodes, "-n", nodes, "--ntasks-per-node=1", "-c", cpus,
			 first_only ? "-w" : NULL, first_only ? (char *)a->nodes[0] : NULL, NULL };
	size_t nhead = 0, ntask = 0;
	while (head[nhead])
		nhead++;
	while (task_argv[ntask])
		ntask++;
	char **argv = calloc(nhead + ntask + 1, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	memcpy(argv, head, nhead * sizeof(*argv));
	memcpy(argv + nhead, task_argv, ntask * sizeof(*argv));
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		free(argv);
		return -e;
	}
	if (pid == 0) {
		/* a group of its own: the terminal's Ctrl-C is ours to handle,
		 * srun would end the step on a second one */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int devnull = open("/dev/null", O_RDWR);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd >= 0 ? out_fd : devnull, 1) < 0)
			_exit(127);
		for (int i = 0; env_add && env_add[i]; i++)
			putenv(env_add[i]);
		execvp(argv[0], argv);
		fprintf(stderr, "storm: error: cannot run srun: %s\n", strerror(errno));
		_exit(127);
	}
	free(argv);
	return pid;
}
