/* storm cluster up --slurm: a cluster inside a Slurm allocation, its
 * daemons started by srun (slurm.c), and slurm-task, each step's task. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <sodium.h>

#include "cluster.h"
#include "gm_auth.h"
#include "opts.h"
#include "slurm.h"

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
	if (vc_conf_from_opts(o, conf_path, conf) < 0)
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
	int p1 = vc_free_tcp_port(true), p2 = p1;
	while (p2 == p1 && p2 > 0)
		p2 = vc_free_tcp_port(true);
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
int vc_slurm_task(int argc, char **argv)
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
	if (!text || !hex || vc_prepare_dir(dir) != 0)
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
		if (vc_interrupted)
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
	if (n <= 0 || vc_find_daemon(is_mm ? "stormmm" : "stormnd", bin, sizeof(bin)))
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
	vc_append_pid(pids, pid, is_mm ? "srun-mm" : "srun-nodes");
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
	Storm__Ctl__Reply *rep = vc_wait_up(dir, conf->ctl_address, conf, d, *nd, o->up_timeout,
					    &interrupt);
	if (!rep)
		return -1;
	vc_print_up(dir, conf_path, conf, rep->status, false);
	ctl_reply_free(rep);
	return 0;
}

/* Until the command exits (cmd > 0), a step's srun does (the allocation
 * ended, or a daemon died) or a signal comes. Drains the MM step's stdout. */
static void supervise(struct daemon *d, int nd, pid_t cmd, int *cmd_status, int drain)
{
	int cmdfd = cmd > 0 ? pidfd_open(cmd, 0) : -1;
	while (!vc_interrupted) {
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
	vc_send_shutdown(conf->ctl_address, &err);
	vc_path_join(pids, sizeof(pids), dir, "pids");
	vc_stop_daemons(pids, conf_path, 5.0 + 0.05 * conf->nnodes, 0);
	vc_remove_runtime(dir);
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

int vc_cluster_up_slurm(const struct up_opts *o)
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
	if (vc_resolve_dir(o, def, dir) < 0 || vc_find_daemon("stormmm", probe, sizeof(probe)) ||
	    vc_find_daemon("stormnd", probe, sizeof(probe))) {
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
	if (vc_clear_dir(o, dir, conf_path, sock, pids) < 0 || vc_prepare_dir(dir) != 0 ||
	    slurm_configure(o, &a, dir, conf_path, &conf) != 0) {
		slurm_alloc_free(&a);
		return EXIT_STORM;
	}
	struct sigaction sa = { .sa_handler = vc_on_sigint }; /* no SA_RESTART: poll wakes */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (slurm_start(o, &a, dir, conf_path, &conf, d, &nd, &mm_out) != 0) {
		if (vc_interrupted)
			fprintf(stderr, "storm: vc_interrupted while the cluster was coming up\n");
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
