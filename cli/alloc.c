/* storm alloc: an interactive allocation, like salloc. The machine manager
 * holds the nodes in one row of the matrix while this command's connection
 * lasts; the command (a shell by default) runs here with STORM_JOBID set,
 * so each `storm run` in it is a step on those nodes. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fmt.h"
#include "jobid.h"
#include "opts.h"
#include "sigchld.h"

extern char **environ;

static const char alloc_help[] =
	"Usage: storm alloc [OPTIONS] [COMMAND [ARGS...]]\n"
	"\n"
	"Obtains an allocation of nodes, like salloc, then runs COMMAND (default:\n"
	"$SHELL) here with STORM_JOBID, STORM_JOB_NODELIST and STORM_JOB_NUM_NODES\n"
	"set, and Slurm's SLURM_JOB_ID, SLURM_JOB_NODELIST and SLURM_JOB_NUM_NODES.\n"
	"Every 'storm run' in it is a step of the allocation: it runs on its\n"
	"nodes, gang-scheduled in its row of the matrix. The allocation ends when\n"
	"COMMAND exits. If the allocation is revoked (cancelled, its time limit, the\n"
	"machine manager gone) COMMAND gets SIGHUP and SIGTERM, and SIGKILL after the\n"
	"cluster's kill_wait_ms if it is still running.\n"
	"\n"
	"  -N, --nodes N       nodes to allocate (default 1)\n"
	"  -J, --job-name NAME the allocation's name (default: COMMAND's base name)\n"
	"  -t, --time T        end the allocation after T (as for storm run)\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: COMMAND's; 1 when the allocation was refused or revoked (COMMAND\n"
	"then ended by storm alloc), or no cluster is up; 2 on bad usage.\n";

enum { L_NODES = 1, L_NAME, L_TIME, L_CONF, L_HELP };

/* COMMAND's absolute path, as execvp would find it. 0 or -1. */
static int find_command(const char *cmd, char *out, size_t len)
{
	if (strchr(cmd, '/'))
		return realpath(cmd, out) ? 0 : -1;
	const char *path = getenv("PATH");
	for (const char *p = path && *path ? path : "/usr/bin:/bin"; p;) {
		const char *colon = strchr(p, ':');
		int n = snprintf(out, len, "%.*s/%s", colon ? (int)(colon - p) : (int)strlen(p), p, cmd);
		struct stat st;
		char real[PATH_MAX];
		if (n > 0 && (size_t)n < len && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0 && realpath(out, real)) {
			snprintf(out, len, "%s", real);
			return 0;
		}
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

static pid_t start_command(char **argv, const Storm__Ctl__Allocated *a)
{
	char id[32], nodes[16];
	snprintf(id, sizeof(id), "%llu", (unsigned long long)a->job);
	snprintf(nodes, sizeof(nodes), "%u", a->nodes);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	setenv("STORM_JOBID", id, 1);
	setenv("STORM_JOB_NODELIST", a->nodelist, 1);
	setenv("STORM_JOB_NUM_NODES", nodes, 1);
	/* Slurm's names, as salloc sets them, for tools written for Slurm */
	setenv("SLURM_JOB_ID", id, 1);
	setenv("SLURM_JOBID", id, 1);
	setenv("SLURM_JOB_NODELIST", a->nodelist, 1);
	setenv("SLURM_NODELIST", a->nodelist, 1);
	setenv("SLURM_JOB_NUM_NODES", nodes, 1);
	setenv("SLURM_NNODES", nodes, 1);
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGINT, SIG_DFL);
	execvp(argv[0], argv);
	fprintf(stderr, "storm alloc: error: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static int status_code(int ws)
{
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 1;
}

/* The allocation's end while COMMAND runs, as salloc's: SIGHUP (a shell
 * hangs up as when its terminal closes) and SIGTERM at once, SIGKILL
 * kill_wait later for a command that ignores both (nohup, a trap). */
struct alloc_wait {
	int conn;          /* the MM's connection, -1 once the allocation was revoked */
	pid_t child;       /* COMMAND, -1 before the grant */
	uint64_t job;
	double kill_at;    /* monotonic s of the SIGKILL, 0: none due */
	unsigned kill_wait_ms;
	const char *cmd;
};

static void alloc_revoke(struct alloc_wait *w, const char *why)
{
	/* a closed or revoked connection says nothing more: polling it
	 * again would report its hang-up at once, for ever */
	if (w->conn < 0)
		return;
	close(w->conn);
	w->conn = -1;
	fprintf(stderr, "storm alloc: job allocation %llu revoked: %s; ending %s (SIGHUP, SIGTERM, "
		"SIGKILL after %u ms)\n", (unsigned long long)w->job, why, w->cmd, w->kill_wait_ms);
	kill(w->child, SIGHUP);
	kill(w->child, SIGTERM);
	w->kill_at = now_s() + w->kill_wait_ms / 1000.0;
}

/* poll's timeout: until the SIGKILL, or none */
static int alloc_timeout(const struct alloc_wait *w)
{
	if (w->kill_at <= 0)
		return -1;
	double left = w->kill_at - now_s();
	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* One reply of the MM: -1 to go on waiting, else storm alloc's exit code */
static int alloc_reply(struct alloc_wait *w, char **cmd)
{
	Storm__Ctl__Reply *rep = NULL;
	int rc = -1, e = ctl_recv(w->conn, CTL_TIMEOUT_MS, &rep);
	if (e != 0) {
		if (w->child > 0) {
			char why[160];
			snprintf(why, sizeof(why), "the connection to the machine manager was %s",
				 e == -EPIPE ? "closed" : strerror(-e));
			alloc_revoke(w, why);
			return -1;
		}
		ctl_report(e);
		return EXIT_STORM;
	}
	switch (rep->body_case) {
	case STORM__CTL__REPLY__BODY_ERROR:
		rc = cli_print_error(rep->error, "alloc");
		break;
	case STORM__CTL__REPLY__BODY_SUBMITTED:
		w->job = rep->submitted->job;
		if (!strcmp(rep->submitted->state, "QUEUED"))
			fprintf(stderr, "storm alloc: job %llu queued%s%s\n",
				(unsigned long long)w->job, rep->submitted->reason[0] ? ": " : "",
				rep->submitted->reason);
		break;
	case STORM__CTL__REPLY__BODY_ALLOCATED:
		fprintf(stderr, "storm alloc: granted job allocation %llu on %s\n",
			(unsigned long long)rep->allocated->job, rep->allocated->nodelist);
		w->child = start_command(cmd, rep->allocated);
		if (w->child < 0) {
			fprintf(stderr, "storm alloc: error: fork: %s\n", strerror(errno));
			rc = EXIT_STORM;
		}
		break;
	case STORM__CTL__REPLY__BODY_END:
		if (w->child > 0) {
			alloc_revoke(w, rep->end->reason[0] ? rep->end->reason : "ended");
		} else {
			fprintf(stderr, "storm alloc: job allocation %llu revoked: %s\n",
				(unsigned long long)w->job,
				rep->end->reason[0] ? rep->end->reason : "ended");
			rc = EXIT_STORM;
		}
		break;
	default:
		break;
	}
	ctl_reply_free(rep);
	return rc;
}

/* COMMAND's end, read from the signalfd: its exit code, or -1 */
static int alloc_reap(struct alloc_wait *w, int sfd)
{
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	int ws;
	if (w->child <= 0 || waitpid(w->child, &ws, WNOHANG) != w->child)
		return -1;
	/* a revoked allocation's command was ended by us: its status is ours */
	return w->conn < 0 ? EXIT_STORM : status_code(ws);
}

/* Sends the request for an allocation that holds COMMAND, run here:
 * the connection's fd, or -1 with the reason told. */
static int request_alloc(struct cli *c, Storm__Job__Spec *spec, char **cmd, int ncmd,
			 const char *name)
{
	char program[PATH_MAX], cwd[PATH_MAX], base[PATH_MAX];
	if (find_command(cmd[0], program, sizeof(program)) < 0) {
		fprintf(stderr, "storm alloc: error: %s: command not found\n", cmd[0]);
		return -1;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "storm alloc: error: cannot tell the current directory: %s\n",
			strerror(errno));
		return -1;
	}
	snprintf(base, sizeof(base), "%s", strrchr(program, '/') + 1);
	size_t nenv = 0;
	while (environ[nenv])
		nenv++;
	spec->hold = 1;
	spec->interactive = 1;
	spec->no_bcast = 1; /* nothing is sent: COMMAND runs here */
	spec->program = program;
	spec->argv = cmd;
	spec->n_argv = (size_t)ncmd;
	spec->cwd = cwd;
	spec->env = environ;
	spec->n_env = nenv;
	spec->name = (char *)(name ? name : base);
	Storm__Ctl__Submit sub = STORM__CTL__SUBMIT__INIT;
	sub.spec = spec;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_SUBMIT;
	req.submit = &sub;
	int fd = cli_connect(c);
	int e = fd < 0 ? 0 : ctl_send(fd, &req, NULL, 0);
	/* sent or never to be: the request no longer needs this function's buffers */
	spec->program = spec->cwd = spec->name = NULL;
	if (fd < 0)
		return -1;
	if (e != 0) {
		ctl_report(e);
		close(fd);
		return -1;
	}
	return fd;
}

/* Runs COMMAND once the allocation is granted, until it ends or the
 * allocation does: its exit code. Closes fd. */
static int run_alloc(struct cli *c, int fd, char **cmd)
{
	/* the command's end comes as SIGCHLD on a signalfd, beside the MM's
	 * connection; Ctrl-C is the command's, not ours */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigchld_notify(false); /* inherited SIG_IGN would reap the command unseen */
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	signal(SIGINT, SIG_IGN);
	struct alloc_wait w = { .conn = fd, .child = -1, .cmd = cmd[0],
				.kill_wait_ms = c->have_conf ? c->conf.kill_wait_ms : 5000 };
	int rc = -1;
	while (rc < 0) {
		struct pollfd pf[2] = { { .fd = w.conn, .events = POLLIN },
					{ .fd = sfd, .events = POLLIN } };
		int n = poll(pf, 2, alloc_timeout(&w));
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "storm alloc: error: poll: %s\n", strerror(errno));
			rc = EXIT_STORM;
			break;
		}
		if (w.kill_at > 0 && now_s() >= w.kill_at) {
			kill(w.child, SIGKILL);
			w.kill_at = 0;
		}
		/* the MM's word first: a revoked allocation ends its steps and
		 * then itself in one turn, so COMMAND (a step's client) may
		 * have ended by the time both are read, and the revocation
		 * is what happened */
		if (w.conn >= 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			rc = alloc_reply(&w, cmd);
		if (rc < 0 && (pf[1].revents & POLLIN))
			rc = alloc_reap(&w, sfd);
	}
	if (w.job && w.conn >= 0)
		fprintf(stderr, "storm alloc: relinquishing job allocation %llu\n",
			(unsigned long long)w.job);
	if (w.conn >= 0)
		close(w.conn);
	close(sfd);
	return rc;
}

int cmd_alloc(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "nodes", 'N', 1, L_NODES }, { "job-name", 'J', 1, L_NAME },
		{ "time", 't', 1, L_TIME },   { "conf", 0, 1, L_CONF },
		{ "help", 'h', 0, L_HELP },   { NULL, 0, 0, 0 },
	};
	Storm__Job__Spec spec = STORM__JOB__SPEC__INIT;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 1);
	int id;
	uint64_t v;
	const char *name = NULL;
	while ((id = cli_opt_next(&p, opts)) > 0) {
		switch (id) {
		case L_NODES:
			if (parse_uint(p.arg, 1, 1u << 20, &v) != 0)
				return usage_error("storm alloc", "-N/--nodes wants a whole number from "
						   "1, not '%s'", p.arg);
			spec.nodes = (uint32_t)v;
			break;
		case L_NAME: name = p.arg; break;
		case L_TIME:
			if (parse_time_limit(p.arg, &v) != 0)
				return usage_error("storm alloc", "-t/--time wants minutes, M:S, H:M:S, "
						   "D-H, D-H:M or D-H:M:S, not '%s'", p.arg);
			spec.time_limit = (uint32_t)v;
			break;
		case L_CONF: c->conf_opt = p.arg; break;
		case L_HELP: fputs(alloc_help, stdout); return EXIT_OK;
		}
	}
	if (id == OPT_ERROR)
		return usage_error("storm alloc", "%s", p.err);
	char *shell_argv[] = { getenv("SHELL") && *getenv("SHELL") ? getenv("SHELL") : "/bin/sh",
			       NULL };
	char **cmd = p.ind < argc ? argv + p.ind : shell_argv;
	int ncmd = p.ind < argc ? argc - p.ind : 1;
	int fd = request_alloc(c, &spec, cmd, ncmd, name);
	if (fd < 0)
		return EXIT_STORM;
	return run_alloc(c, fd, cmd);
}
