/* storm run and storm submit: check the program here, pass it (and each
 * --file) to the MM as open descriptors with the Submit, then for run stream
 * the job's output, progress and end. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "bcs.h"
#include "cli.h"
#include "fmt.h"
#include "jobopt.h"
#include "frame.h"
#include "label.h"
#include "mpidetect.h"
#include "mpikind.h"
#include "opts.h"
#include "sbatchopt.h"

extern char **environ;

#define SUBMIT_TIMEOUT_MS 60000 /* the MM answers a Submit before any transfer */

/* PROGRAM without '/' is looked up in PATH like execvp does. */
static int resolve_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int denied = 0;
	while (path) {
		const char *colon = strchr(path, ':');
		size_t dlen = colon ? (size_t)(colon - path) : strlen(path);
		int n = dlen ? snprintf(out, len, "%.*s/%s", (int)dlen, path, prog)
			     : snprintf(out, len, "./%s", prog); /* empty entry: cwd */
		struct stat st;
		if (n > 0 && (size_t)n < len && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			denied = 1;
		}
		path = colon ? colon + 1 : NULL;
	}
	if (denied)
		fprintf(stderr, "storm: error: %s: found in PATH but not executable\n", prog);
	else
		fprintf(stderr, "storm: error: %s: command not found (searched PATH)\n", prog);
	return -1;
}

/* Opens a file to send, checking it is a regular one. fd or -1 (printed). */
static int open_regular(const char *shown, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "storm: error: %s: %s\n", shown, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "storm: error: %s: %s\n", shown,
			S_ISDIR(st.st_mode) ? "Is a directory" : "not a regular file");
		close(fd);
		return -1;
	}
	return fd;
}

struct prepared {
	Storm__Ctl__Submit sub;
	Storm__Job__Spec spec;
	Storm__Job__Dependency deps[DEP_MAX], *dep_ptrs[DEP_MAX];
	char **env;       /* --export's choice, malloc'd; NULL: environ */
	char *env_buf;
	int fds[FRAME_MAX_FDS];
	int nfds;
	char program[PATH_MAX];
	char cwd[PATH_MAX];
	char output[PATH_MAX];
	char *file_names[MAX_FILES];
	char name[256];
};

static void close_fds(struct prepared *pr)
{
	for (int i = 0; i < pr->nfds; i++)
		close(pr->fds[i]);
	pr->nfds = 0;
}

/* --mpi: how the ranks wire up, from the program's linkage unless told.
 * A program linked with one MPI and told another is warned about, never
 * left to start as unrelated singletons unawares. -1 to go on. */
static int choose_mpi(const struct job_opts *o, const char *prog, const char *path,
		      Storm__Job__Spec *s)
{
	char lib[128];
	enum mpi_found f = o->script ? MPI_FOUND_NONE : mpi_detect(path, lib, sizeof(lib));
	int kind = o->mpi;
	if (kind < 0)
		/* no MPI seen (a script, a static program) keeps the BCS-MPI
		 * channel, which costs a program that ignores it nothing */
		kind = f == MPI_FOUND_NONE ? MPI_KIND_BCS : mpi_found_kind(f);
	else if (f != MPI_FOUND_NONE && kind != mpi_found_kind(f))
		fprintf(stderr, "storm: warning: %s is linked with %s (%s) but runs with --mpi=%s: "
			"%s\n", prog, mpi_found_name(f), lib, mpi_kind_name(kind),
			kind == MPI_KIND_NONE ? "its ranks will not find each other (each one a "
						"singleton MPI job of size 1)"
					      : "it will not wire up that way");
	const char *why = mpi_kind_no_checkpoint(kind);
	if (why && (o->restart_on_failure || o->ckpt_interval))
		return usage_error(o->cmd, "%s cannot be checkpointed: %s", prog, why);
	s->mpi = (Storm__Job__Mpi)kind;
	return -1;
}

/* The program exists, is a regular (and, unless a script, executable)
 * file; its absolute path goes to pr->program. -1 to go on. */
static int check_program(const struct job_opts *o, const char *prog, const char *found,
			 struct prepared *pr)
{
	struct stat st;
	if (stat(found, &st) != 0) {
		fprintf(stderr, "storm: error: %s: %s\n", prog, strerror(errno));
		return EXIT_STORM;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "storm: error: %s: Is a directory\n", prog);
		return EXIT_STORM;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "storm: error: %s: not a regular file\n", prog);
		return EXIT_STORM;
	}
	if (!o->script && access(found, X_OK) != 0) {
		fprintf(stderr, "storm: error: %s: Permission denied (not executable)\n", prog);
		return EXIT_STORM;
	}
	if (!realpath(found, pr->program)) {
		fprintf(stderr, "storm: error: %s: %s\n", prog, strerror(errno));
		return EXIT_STORM;
	}
	return -1;
}

/* The fds sent with the request: the program's (unless --no-bcast), then
 * each --file's, under a name of its own. -1 to go on; on an error the
 * fds opened so far are closed. */
static int open_files(const struct job_opts *o, const char *prog, const char *found,
		      struct prepared *pr)
{
	if (!o->no_bcast) {
		int fd = open_regular(prog, found);
		if (fd < 0)
			return EXIT_STORM;
		pr->fds[pr->nfds++] = fd;
	}
	for (int i = 0; i < o->nfiles; i++) {
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof(tmp), "%s", o->files[i]);
		pr->file_names[i] = strdup(basename(tmp));
		if (!pr->file_names[i]) {
			fprintf(stderr, "storm: error: out of memory\n");
			close_fds(pr);
			return EXIT_STORM;
		}
		for (int j = 0; j < i; j++)
			if (!strcmp(pr->file_names[j], pr->file_names[i])) {
				close_fds(pr);
				return usage_error(o->cmd, "two --file options share the name '%s'",
						   pr->file_names[i]);
			}
		int fd = open_regular(o->files[i], o->files[i]);
		if (fd < 0) {
			close_fds(pr);
			return EXIT_STORM;
		}
		pr->fds[pr->nfds++] = fd;
	}
	return -1;
}

/* The working directory, -o's absolute path and the job's name. -1 to go on. */
static int place_job(const struct job_opts *o, const char *prog, struct prepared *pr)
{
	if (!getcwd(pr->cwd, sizeof(pr->cwd))) {
		fprintf(stderr, "storm: error: cannot tell the current directory: %s\n",
			strerror(errno));
		close_fds(pr);
		return EXIT_STORM;
	}
	pr->output[0] = '\0';
	if (o->output && absolute_path(pr->cwd, o->output, pr->output, sizeof(pr->output))) {
		close_fds(pr);
		return usage_error(o->cmd, "-o %s: path too long", o->output);
	}
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", prog);
	snprintf(pr->name, sizeof(pr->name), "%s", o->name ? o->name : basename(tmp));
	return -1;
}

/* The environment sent: --export's choice, or all of ours. -1 to go on. */
static int choose_env(const struct job_opts *o, struct prepared *pr)
{
	size_t nenv = 0;
	char **env = environ;
	if (o->export_spec) {
		char why[256];
		if (export_env(o->export_spec, environ, &pr->env, &nenv, &pr->env_buf, why,
			       sizeof(why)) < 0) {
			close_fds(pr);
			return usage_error(o->cmd, "%s", why);
		}
		env = pr->env;
	} else {
		while (environ[nenv])
			nenv++;
	}
	pr->spec.n_env = nenv;
	pr->spec.env = env;
	return -1;
}

/* The spec's fields that come straight from the options. */
static void fill_spec(const struct job_opts *o, struct prepared *pr)
{
	Storm__Job__Spec *s = &pr->spec;
	s->n_argv = (size_t)o->argc;
	s->argv = o->argv;
	s->program = pr->program;
	s->nodes = o->nodes;
	s->ranks = o->ranks;
	s->interactive = !o->batch;
	pr->sub.wait = o->batch && o->wait;
	s->no_bcast = o->no_bcast;
	s->cwd = pr->cwd;
	s->output = pr->output;
	s->n_files = (size_t)o->nfiles;
	s->files = pr->file_names;
	s->name = pr->name;
	s->overcommit = o->overcommit;
	s->checkpoint_interval = o->ckpt_interval;
	s->time_limit = o->time_limit;
	s->timeslice_us = o->timeslice_us;
	s->restart_on_failure = o->restart_on_failure;
	s->script = o->script;
	s->forward_stdin = o->forward_stdin;
	if (o->pty) {
		struct winsize ws;
		s->pty = 1;
		if (ioctl(1, TIOCGWINSZ, &ws) == 0 || ioctl(0, TIOCGWINSZ, &ws) == 0) {
			s->pty_rows = ws.ws_row;
			s->pty_cols = ws.ws_col;
		}
	}
	for (size_t i = 0; i < o->ndeps; i++) {
		storm__job__dependency__init(&pr->deps[i]);
		pr->deps[i].kind = (Storm__Job__Dependency__Kind)o->deps[i].kind;
		pr->deps[i].job = o->deps[i].job.id;
		pr->deps[i].task_given = o->deps[i].job.task_given;
		pr->deps[i].task = o->deps[i].job.task;
		pr->dep_ptrs[i] = &pr->deps[i];
	}
	s->dependencies = pr->dep_ptrs;
	s->n_dependencies = o->ndeps;
	s->array_tasks = o->array_tasks;
	s->n_array_tasks = o->ntasks;
	s->array_limit = o->array_limit;
}

/* storm run inside a batch script or a storm alloc shell: a step of it.
 * -1 to go on. */
static int join_allocation(const struct job_opts *o, struct prepared *pr)
{
	const char *alloc = o->batch ? NULL : getenv("STORM_JOBID");
	struct jobref ref;
	if (alloc && *alloc) {
		if (jobid_parse(alloc, &ref) < 0 || ref.task_given || jobid_is_step(ref.id)) {
			close_fds(pr);
			return usage_error(o->cmd, "STORM_JOBID=%s is not a job id", alloc);
		}
		pr->spec.allocation = ref.id;
	}
	return -1;
}

/* Everything that can be checked here is, before any request is sent. */
static int prepare(const struct job_opts *o, struct prepared *pr)
{
	Storm__Ctl__Submit init = STORM__CTL__SUBMIT__INIT;
	Storm__Job__Spec spec = STORM__JOB__SPEC__INIT;
	pr->sub = init;
	pr->spec = spec;
	pr->sub.spec = &pr->spec;
	pr->nfds = 0;
	const char *prog = o->argv[0];
	char found[PATH_MAX];
	if (resolve_program(prog, found, sizeof(found)) != 0)
		return EXIT_STORM;
	int rc = check_program(o, prog, found, pr);
	if (rc < 0)
		rc = choose_mpi(o, prog, pr->program, &pr->spec);
	if (rc < 0)
		rc = open_files(o, prog, found, pr);
	if (rc < 0)
		rc = place_job(o, prog, pr);
	if (rc < 0)
		rc = choose_env(o, pr);
	if (rc < 0) {
		fill_spec(o, pr);
		rc = join_allocation(o, pr);
	}
	return rc;
}

static void free_prepared(struct prepared *pr, int nfiles)
{
	close_fds(pr);
	free(pr->env);
	free(pr->env_buf);
	for (int i = 0; i < nfiles; i++)
		free(pr->file_names[i]);
}

int cli_file_inline(int fd, const char *what, size_t *total, Storm__Ctl__FileData *msg,
		    uint8_t **data)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		fprintf(stderr, "storm: error: %s: %s\n", what, strerror(errno));
		return -1;
	}
	*total += (size_t)st.st_size;
	if (*total > FRAME_MAX)
		return -EFBIG;
	size_t len = (size_t)st.st_size, got = 0;
	if (!(*data = malloc(len ? len : 1))) {
		fprintf(stderr, "storm: error: out of memory\n");
		return -1;
	}
	while (got < len) {
		ssize_t n = pread(fd, *data + got, len - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "storm: error: cannot read %s: %s\n", what,
				n < 0 ? strerror(errno) : "it shrank while read");
			return -1;
		}
		got += (size_t)n;
	}
	storm__ctl__file_data__init(msg);
	msg->data.data = *data;
	msg->data.len = len;
	msg->mode = st.st_mode & 0777;
	return 0;
}

/* Over TCP the descriptors cannot go: their files' bytes go in the Submit
 * instead (proto/control.proto), each in data[i] (malloc'd; freed by the
 * caller, also on failure). 0, or -1 (printed). */
static int files_inline(struct prepared *pr, Storm__Ctl__FileData *fd_msgs,
			Storm__Ctl__FileData **ptrs, uint8_t **data)
{
	size_t total = 0;
	for (int i = 0; i < pr->nfds; i++) {
		const char *what = (!pr->spec.no_bcast && i == 0)
					   ? pr->program
					   : pr->file_names[i - (pr->spec.no_bcast ? 0 : 1)];
		int rc = cli_file_inline(pr->fds[i], what, &total, &fd_msgs[i], &data[i]);
		if (rc == -EFBIG)
			fprintf(stderr, "storm: error: %s: the program and --file files exceed the %u "
					"MiB a request over TCP carries; use --no-bcast with the "
					"program on a file system the nodes share\n",
				what, FRAME_MAX >> 20);
		if (rc < 0)
			return -1;
		ptrs[i] = &fd_msgs[i];
	}
	pr->sub.files = ptrs;
	pr->sub.n_files = (size_t)pr->nfds;
	return 0;
}

/* Sends the Submit with its descriptors (their files' bytes over TCP).
 * Connected fd or -1 (printed). */
static int send_submit(struct cli *c, struct prepared *pr)
{
	int fd = cli_connect(c);
	if (fd < 0)
		return -1;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_SUBMIT;
	req.submit = &pr->sub;
	Storm__Ctl__FileData msgs[FRAME_MAX_FDS], *ptrs[FRAME_MAX_FDS];
	uint8_t *data[FRAME_MAX_FDS] = { 0 };
	int remote = ctl_is_remote(fd), rc = 0;
	if (remote && files_inline(pr, msgs, ptrs, data) < 0)
		rc = -1;
	if (rc == 0)
		rc = ctl_send(fd, &req, remote ? NULL : pr->fds, remote ? 0 : pr->nfds);
	for (int i = 0; i < FRAME_MAX_FDS; i++)
		free(data[i]);
	pr->sub.files = NULL;
	pr->sub.n_files = 0;
	if (rc != 0) {
		if (rc == -EMSGSIZE)
			fprintf(stderr, "storm: error: the job description is too large to send "
					"(environment, arguments%s exceed %u MiB)\n",
				remote ? " and files" : "", FRAME_MAX >> 20);
		else if (rc != -1)
			ctl_report(rc);
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- storm run: the streaming loop */

struct run_state {
	struct cli *c;
	const struct job_opts *o;
	uint64_t job; /* 0 until Submitted */
	struct label_split labels;
	/* Ctrl-C */
	int interrupts;
	double last_interrupt;
	int pending_signal; /* to send once the job has an id */
	int killed;
	/* progress */
	int stderr_tty;
	double xfer_start, progress_last;
	uint64_t done, total;
	int progress_shown, progress_open;
	struct bcs_filter *bf; /* --record, storm replay */
	/* our stdin, forwarded to rank 0: at most STDIN_WINDOW unacknowledged */
	int stdin_open;
	uint64_t stdin_sent, stdin_acked;
	int sock;
};

#define STDIN_CHUNK (16u << 10)
#define STDIN_WINDOW (64u << 10)

static int on_interrupt(struct run_state *st);

/* A chunk of our stdin to rank 0 (or its end). -1 to go on, or an exit code. */
static int forward_stdin(struct run_state *st)
{
	uint8_t buf[STDIN_CHUNK];
	ssize_t n = read(0, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	if (n > 0 && st->o->pty) {
		/* a raw terminal sends Ctrl-C as a byte: it still interrupts the job */
		ssize_t w = 0;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != 3) {
				buf[w++] = buf[i];
				continue;
			}
			int code = on_interrupt(st);
			if (code >= 0)
				return code;
		}
		if (w == 0)
			return -1;
		n = w;
	}
	Storm__Ctl__StdinData d = STORM__CTL__STDIN_DATA__INIT;
	d.job = st->job;
	if (n > 0) {
		d.data.data = buf;
		d.data.len = (size_t)n;
		st->stdin_sent += (uint64_t)n;
	} else {
		d.eof = 1; /* end of our input, or it cannot be read: rank 0 sees EOF */
		st->stdin_open = 0;
	}
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_STDIN;
	req.stdin = &d;
	int rc = ctl_send(st->sock, &req, NULL, 0);
	if (rc != 0) {
		ctl_report(rc);
		return EXIT_STORM;
	}
	return -1;
}

static void write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere to report a broken stdout */
		}
		data += n;
		len -= (size_t)n;
	}
}

/* A \r-updated progress line must be ended before anything else is written. */
static void end_progress_line(struct run_state *st)
{
	if (st->progress_open) {
		write_all(2, "\n", 1);
		st->progress_open = 0;
	}
}

static void show_progress(struct run_state *st)
{
	double t = now_s(), elapsed = t - st->xfer_start;
	int final = st->total && st->done >= st->total;
	if (elapsed < 1.0 && !st->progress_shown)
		return; /* fast transfers stay silent */
	if (!final && st->progress_shown && t - st->progress_last < (st->stderr_tty ? 0.1 : 5.0))
		return;
	if (final && !st->progress_shown)
		return;
	char done[32], total[32], line[256];
	fmt_bytes(st->done, done, sizeof(done));
	fmt_bytes(st->total, total, sizeof(total));
	int pct = st->total ? (int)(st->done * 100 / st->total) : 0;
	snprintf(line, sizeof(line), "storm: job %llu: transferring %s of %s (%d%%), %.1f s",
		 (unsigned long long)st->job, done, total, pct, elapsed);
	char out[300];
	int n;
	if (st->stderr_tty) {
		n = snprintf(out, sizeof(out), "\r%s\033[K%s", line, final ? "\n" : "");
		st->progress_open = !final;
	} else {
		n = snprintf(out, sizeof(out), "%s\n", line);
	}
	write_all(2, out, (size_t)n);
	st->progress_shown = 1;
	st->progress_last = t;
}

static int send_cancel(struct cli *c, uint64_t job, int sig)
{
	char err[PATH_MAX + 400];
	int fd = cli_dial(c, 2000, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "storm: error: cannot cancel job %llu: %s\n",
			(unsigned long long)job, err);
		return -1;
	}
	Storm__Ctl__Cancel cancel = STORM__CTL__CANCEL__INIT;
	cancel.job = job;
	cancel.signal = sig;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_CANCEL;
	req.cancel = &cancel;
	Storm__Ctl__Reply *rep = NULL;
	int rc = ctl_send(fd, &req, NULL, 0);
	if (rc == 0)
		rc = ctl_recv(fd, 5000, &rep);
	close(fd);
	if (rc != 0) {
		ctl_report(rc);
		return -1;
	}
	if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR) {
		char what[64];
		snprintf(what, sizeof(what), "cancel job %llu", (unsigned long long)job);
		cli_print_error(rep->error, what);
		rc = -1;
	}
	ctl_reply_free(rep);
	return rc;
}

/* Returns -1 to go on, else the exit code. */
static int on_interrupt(struct run_state *st)
{
	double t = now_s();
	if (bcs_filter_debugger(st->bf) > 0 && waitpid(bcs_filter_debugger(st->bf), NULL, WNOHANG) == 0)
		return -1; /* Ctrl-C is gdb's while it runs (storm replay --debug) */
	int quick = st->interrupts > 0 && t - st->last_interrupt < 1.0;
	st->interrupts++;
	st->last_interrupt = t;
	end_progress_line(st);
	if (st->killed && quick) {
		fprintf(stderr, "storm: leaving job %llu while it is being killed\n",
			(unsigned long long)st->job);
		return 128 + SIGINT;
	}
	int sig = quick ? SIGKILL : SIGINT;
	if (!st->job) {
		st->pending_signal = sig;
		fprintf(stderr, "storm: interrupt: the job will get %s as soon as it is accepted\n",
			sig == SIGKILL ? "SIGKILL" : "SIGINT");
		return -1;
	}
	if (sig == SIGKILL) {
		fprintf(stderr, "storm: interrupt: killing job %llu (SIGKILL)\n",
			(unsigned long long)st->job);
		st->killed = 1;
	} else {
		fprintf(stderr,
			"storm: interrupt: sent SIGINT to job %llu (Ctrl-C again within 1 s "
			"kills it)\n",
			(unsigned long long)st->job);
	}
	send_cancel(st->c, st->job, sig);
	return -1;
}

static void flush_labels(struct run_state *st)
{
	struct strbuf out[2] = { { 0 }, { 0 } };
	label_flush(&st->labels, out);
	for (int i = 0; i < 2; i++) {
		if (out[i].len)
			write_all(1 + i, out[i].data, out[i].len);
		sb_free(&out[i]);
	}
}

static int exit_code_of(const Storm__Ctl__JobEnd *e)
{
	int code = e->exit_status;
	if (code < 0 || code > 255)
		code = 255;
	if (code == 0 && e->state != STORM__CTL__JOB_STATE__COMPLETED)
		code = 1; /* a job that did not run to its end never reports success */
	return code;
}

/* Returns -1 to go on, else the exit code. */
static int show_output(struct run_state *st, uint32_t rank, int is_err, const uint8_t *data,
		       size_t len)
{
	if (!len)
		return -1;
	if (!st->o->label) {
		write_all(is_err ? 2 : 1, (const char *)data, len);
		return -1;
	}
	struct strbuf lines = { 0 };
	if (label_feed(&st->labels, rank, is_err, data, len, &lines) != 0) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	if (lines.len)
		write_all(is_err ? 2 : 1, lines.data, lines.len);
	sb_free(&lines);
	return -1;
}

/* The job is in (or back, from a checkpoint, its node lost): a Ctrl-C
 * that came before its id is sent now. Returns -1. */
static int on_submitted(struct run_state *st, Storm__Ctl__Reply *rep)
{
	Storm__Ctl__Submitted *s = rep->submitted;
	int restarted = st->job && s->job != st->job;
	if (restarted) /* from a checkpoint, its node lost */
		fprintf(stderr, "storm: %s; now job %llu\n",
			s->reason[0] ? s->reason : "restarted", (unsigned long long)s->job);
	st->job = s->job;
	st->xfer_start = now_s();
	if (!restarted && s->state && !strcmp(s->state, "QUEUED"))
		fprintf(stderr, "storm: job %llu queued%s%s\n", (unsigned long long)s->job,
			s->reason[0] ? ": " : "", s->reason);
	if (st->pending_signal) {
		if (st->pending_signal == SIGKILL)
			st->killed = 1;
		fprintf(stderr, "storm: interrupt: sending %s to job %llu\n",
			st->pending_signal == SIGKILL ? "SIGKILL" : "SIGINT",
			(unsigned long long)st->job);
		send_cancel(st->c, st->job, st->pending_signal);
		st->pending_signal = 0;
	}
	return -1;
}

/* A rank's output, or storm's own line. Returns -1 to go on, else the exit code. */
static int on_output(struct run_state *st, Storm__Ctl__Reply *rep)
{
	Storm__Ctl__Output *out = rep->output;
	int is_err = out->stream == STORM__CTL__STREAM__STDERR;
	end_progress_line(st);
	if (out->rank == UINT32_MAX) { /* storm's own line, not a rank's */
		write_all(2, (const char *)out->data.data, out->data.len);
		return -1;
	}
	if (is_err && st->bf) {
		struct strbuf keep = { 0 };
		int rc = bcs_filter_feed(st->bf, out->rank, out->data.data, out->data.len,
					 &keep) < 0 ? EXIT_STORM
						    : show_output(st, out->rank, 1,
								  (const uint8_t *)keep.data,
								  keep.len);
		sb_free(&keep);
		/* storm replay in the recorded deadlock: it ends there */
		if (rc < 0 && bcs_filter_deadlock(st->bf) == 1)
			send_cancel(st->c, st->job, 0);
		return rc;
	}
	return show_output(st, out->rank, is_err, out->data.data, out->data.len);
}

/* The job ended: what is held back is shown, then its exit code. */
static int on_end(struct run_state *st, Storm__Ctl__Reply *rep)
{
	Storm__Ctl__JobEnd *e = rep->end;
	if (st->bf) {
		for (;;) {
			struct strbuf rest = { 0 };
			uint32_t rank = 0;
			bcs_filter_flush(st->bf, &rank, &rest);
			if (!rest.len)
				break;
			show_output(st, rank, 1, (const uint8_t *)rest.data, rest.len);
			sb_free(&rest);
		}
	}
	flush_labels(st);
	end_progress_line(st);
	if (e->reason && e->reason[0])
		fprintf(stderr, "storm: error: job %llu: %s\n", (unsigned long long)e->job,
			e->reason);
	if (st->o->timing)
		fprintf(stderr,
			"storm: job %llu timing: transfer %.1f ms, execute %.1f ms, total "
			"%.1f ms\n",
			(unsigned long long)e->job, e->transfer_ms, e->execute_ms,
			e->total_ms);
	int code = exit_code_of(e);
	if (bcs_filter_deadlock(st->bf))
		code = EXIT_DEADLOCK;
	/* the record is complete however the job ended: its ranks streamed
	 * their outcomes as they ran, and their ends came before the job's */
	if (st->o->record && bcs_record_fetch(st->c, e->job, st->o->record, 0) != EXIT_OK &&
	    code == 0)
		code = EXIT_STORM;
	return code;
}

/* Returns -1 to go on, else the exit code. */
static int on_reply(struct run_state *st, Storm__Ctl__Reply *rep)
{
	switch (rep->body_case) {
	case STORM__CTL__REPLY__BODY_SUBMITTED:
		return on_submitted(st, rep);
	case STORM__CTL__REPLY__BODY_OUTPUT:
		return on_output(st, rep);
	case STORM__CTL__REPLY__BODY_STDIN_ACK:
		if (rep->stdin_ack->written > st->stdin_acked)
			st->stdin_acked = rep->stdin_ack->written;
		return -1;
	case STORM__CTL__REPLY__BODY_PROGRESS:
		/* the transfer's clock starts with its first report, not at
		 * submission: a queued job has not started moving */
		if (rep->progress->done == 0 && !st->progress_shown)
			st->xfer_start = now_s();
		st->done = rep->progress->done;
		st->total = rep->progress->total;
		show_progress(st);
		return -1;
	case STORM__CTL__REPLY__BODY_END:
		return on_end(st, rep);
	case STORM__CTL__REPLY__BODY_ERROR:
		flush_labels(st);
		end_progress_line(st);
		if (st->job) {
			char what[64];
			snprintf(what, sizeof(what), "job %llu", (unsigned long long)st->job);
			return cli_print_error(rep->error, what);
		}
		return cli_print_error(rep->error, NULL);
	case STORM__CTL__REPLY__BODY_SHUTTING_DOWN:
		flush_labels(st);
		end_progress_line(st);
		fprintf(stderr, "storm: error: job %llu: the machine manager is shutting down\n",
			(unsigned long long)st->job);
		return EXIT_STORM;
	default:
		return -1; /* a kind this storm does not know: newer MM, ignore */
	}
}

static int stream_job(struct run_state *st, int fd)
{
	/* Ctrl-C arrives on a signalfd so it is handled between frames; an
	 * ignored SIGINT (background job of a script) stays ignored. */
	int sfd = -1;
	struct sigaction old;
	sigaction(SIGINT, NULL, &old);
	if (old.sa_handler != SIG_IGN) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	}
	struct frame_rx rx = { 0 };
	double submitted_by = now_s() + SUBMIT_TIMEOUT_MS / 1000.0;
	int code = -1;
	while (code < 0) {
		int rc;
		while ((rc = frame_rx_read(fd, &rx)) == 1) {
			Storm__Ctl__Reply *rep;
			int e = ctl_decode_reply(fd, rx.buf, rx.len, &rep);
			frame_rx_reset(&rx);
			if (e != 0) {
				end_progress_line(st);
				ctl_report(e);
				code = EXIT_STORM;
				break;
			}
			code = on_reply(st, rep);
			ctl_reply_free(rep);
			if (code >= 0)
				break;
		}
		if (code >= 0)
			break;
		if (rc < 0) {
			flush_labels(st);
			end_progress_line(st);
			if ((rc == -EPIPE || rc == -ECONNRESET) && st->job)
				/* the MM died or was restarted: the nodes still run the
				 * job, and a restarted MM finds it in its database */
				fprintf(stderr,
					"storm: error: lost the connection to the machine manager "
					"(it stopped or restarted); job %llu keeps running: 'storm "
					"jobs' shows it, and its further output goes to "
					"storm-%llu.out in the job's directory\n",
					(unsigned long long)st->job, (unsigned long long)st->job);
			else if (rc == -EPIPE || rc == -ECONNRESET)
				fprintf(stderr, "storm: error: lost connection to the machine manager\n");
			else
				ctl_report(rc);
			code = EXIT_STORM;
			break;
		}
		st->sock = fd;
		bool want_in = st->stdin_open && st->job &&
			       st->stdin_sent - st->stdin_acked < STDIN_WINDOW;
		struct pollfd p[3] = { { .fd = fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN },
				       { .fd = want_in ? 0 : -1, .events = POLLIN } };
		int timeout = -1;
		if (!st->job) {
			double left = submitted_by - now_s();
			if (left <= 0) {
				fprintf(stderr, "storm: error: the machine manager did not accept the "
						"job within %d s\n",
					SUBMIT_TIMEOUT_MS / 1000);
				code = EXIT_STORM;
				break;
			}
			timeout = (int)(left * 1000) + 1;
		}
		if (poll(p, 3, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "storm: error: poll: %s\n", strerror(errno));
			code = EXIT_STORM;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && code < 0)
				code = on_interrupt(st);
		}
		if (code < 0 && want_in && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
			code = forward_stdin(st);
	}
	frame_rx_reset(&rx);
	if (sfd >= 0)
		close(sfd);
	return code;
}

int cli_stream(struct cli *c, int fd, const char *cmd, int label)
{
	struct job_opts o = { .cmd = cmd, .label = label };
	struct run_state st = { .c = c, .o = &o, .stderr_tty = isatty(2) };
	int rc = stream_job(&st, fd);
	label_free(&st.labels);
	return rc;
}

static int job_run(struct cli *c, struct job_opts *o, int batch);

/* A batch script, as sbatch takes it: a file (by its path, from the
 * current directory) whose first bytes are #!. */
static int is_script(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	char head[2];
	int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, head, 2) == 2 &&
		  head[0] == '#' && head[1] == '!';
	close(fd);
	return yes;
}

/* A script is found from here, not from PATH, and from -D's directory
 * too: -D moves us there, as the job's working directory. -1 to go on. */
static int script_here(struct job_opts *o, char *path, size_t len)
{
	char cwd[PATH_MAX];
	if (o->chdir) {
		if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, o->argv[0], path, len) < 0)
			return usage_error(o->cmd, "%s: path too long", o->argv[0]);
		o->argv[0] = path;
		if (chdir(o->chdir) < 0) {
			fprintf(stderr, "%s: error: chdir(%s): %s\n", o->cmd, o->chdir,
				strerror(errno));
			return EXIT_STORM;
		}
	} else if (!strchr(o->argv[0], '/')) {
		snprintf(path, len, "./%s", o->argv[0]);
		o->argv[0] = path;
	}
	return -1;
}

static int job_main(struct cli *c, int argc, char **argv, int batch, int bcs)
{
	struct job_opts o = { .cmd = c->slurm_cmd ? c->slurm_cmd
				    : batch ? "storm submit" : bcs ? "storm replay" : "storm run",
			      .batch = batch, .bcs = bcs, .mpi = -1 };
	int rc = parse_job_opts(c, argc, argv, &o);
	if (rc >= 0) {
		job_opts_free(&o);
		return rc;
	}
	char script_path[PATH_MAX];
	if (batch && is_script(o.argv[0])) {
		/* its directives first, then the command line again over them */
		struct job_opts d = { .cmd = o.cmd, .batch = 1, .script = 1, .mpi = -1 };
		job_opts_free(&o);
		rc = apply_directives(c, o.argv[0], &d);
		if (rc < 0)
			rc = parse_job_opts(c, argc, argv, &d);
		if (rc >= 0) {
			job_opts_free(&d);
			return rc;
		}
		o = d;
		if ((rc = script_here(&o, script_path, sizeof(script_path))) >= 0) {
			job_opts_free(&o);
			return rc;
		}
	}
	if (batch && c->slurm_cmd && !o.output) /* sbatch's default, not storm's */
		o.output = o.ntasks ? "slurm-%A_%a.out" : "slurm-%j.out";
	if (batch)
		sbatch_check_error(o.cmd, &o, o.output ? o.output
					  : o.ntasks ? "storm-%A_%a.out" : "storm-%j.out");
	if (o.ntasks && o.wait) {
		job_opts_free(&o);
		return usage_error(o.cmd, "--array and --wait do not go together");
	}
	rc = job_run(c, &o, batch);
	job_opts_free(&o);
	return rc;
}

/* Our stdin is ours to read: open, and not a terminal we are in the
 * background of (reading it would stop us with SIGTTIN). */
static int stdin_forwardable(void)
{
	if (fcntl(0, F_GETFD) < 0)
		return 0;
	return !isatty(0) || tcgetpgrp(0) == getpgrp();
}

/* --pty: our terminal raw while the job runs, as it was after */
static struct termios saved_tty;
static int tty_raw;
static void tty_restore(void)
{
	if (tty_raw) {
		tcsetattr(0, TCSADRAIN, &saved_tty);
		tty_raw = 0;
	}
}
static void tty_make_raw(void)
{
	struct termios t;
	if (!isatty(0) || tcgetattr(0, &saved_tty) != 0)
		return;
	t = saved_tty;
	cfmakeraw(&t);
	t.c_oflag |= OPOST | ONLCR; /* our own messages still start their lines */
	if (tcsetattr(0, TCSADRAIN, &t) == 0) {
		tty_raw = 1;
		atexit(tty_restore);
	}
}

/* --record's trace file can be written; the run records its BCS traffic.
 * -1 to go on. */
static int open_record(struct job_opts *o)
{
	/* fail now rather than after the run */
	int tfd = open(o->record, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (tfd < 0) {
		fprintf(stderr, "storm: error: cannot write the trace %s: %s\n", o->record,
			strerror(errno));
		return EXIT_STORM;
	}
	close(tfd);
	setenv("STORM_BCS_RECORD", "1", 1);
	o->bcs = 1;
	return -1;
}

/* Checks and sends the request; *fd is the job's connection. -1 to go on. */
static int submit_job(struct cli *c, const struct job_opts *o, int *fd)
{
	struct prepared *pr = calloc(1, sizeof(*pr));
	if (!pr) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	int rc = prepare(o, pr);
	if (rc >= 0) {
		free_prepared(pr, o->nfiles);
		free(pr);
		return rc;
	}
	*fd = send_submit(c, pr);
	free_prepared(pr, o->nfiles); /* the MM holds its own copies now */
	free(pr);
	return *fd < 0 ? EXIT_STORM : -1;
}

/* storm run: the job's output, stdin and signals until it ends. Closes fd. */
static int attend_job(struct cli *c, const struct job_opts *o, int fd)
{
	struct run_state st = { .c = c, .o = o, .stderr_tty = isatty(2),
				.stdin_open = o->forward_stdin };
	if (o->bcs && !(st.bf = bcs_filter_new())) {
		fprintf(stderr, "storm: error: out of memory\n");
		close(fd);
		return EXIT_STORM;
	}
	if (o->pty)
		tty_make_raw();
	int rc = stream_job(&st, fd);
	tty_restore();
	label_free(&st.labels);
	bcs_filter_free(st.bf);
	close(fd);
	return rc;
}

/* --wait: the MM keeps the connection and ends it with the JobEnd. Closes fd. */
static int wait_job_end(int fd)
{
	for (;;) {
		Storm__Ctl__Reply *rep = NULL;
		int rc = ctl_recv(fd, -1, &rep);
		if (rc != 0) {
			ctl_report(rc);
			close(fd);
			return EXIT_STORM;
		}
		if (rep->body_case == STORM__CTL__REPLY__BODY_END) {
			const Storm__Ctl__JobEnd *e = rep->end;
			if (e->reason && e->reason[0])
				fprintf(stderr, "storm: error: job %llu: %s\n", (unsigned long long)e->job,
					e->reason);
			rc = e->exit_status ? e->exit_status
			     : e->state == STORM__CTL__JOB_STATE__COMPLETED ? 0 : EXIT_STORM;
			ctl_reply_free(rep);
			close(fd);
			return rc;
		}
		ctl_reply_free(rep);
	}
}

/* storm submit: the job's id, then with --wait its end. Closes fd. */
static int report_submitted(struct cli *c, const struct job_opts *o, int fd)
{
	Storm__Ctl__Reply *rep = NULL;
	int rc = ctl_recv(fd, SUBMIT_TIMEOUT_MS, &rep);
	if (!o->wait)
		close(fd);
	if (rc != 0) {
		if (o->wait)
			close(fd);
		ctl_report(rc);
		return EXIT_STORM;
	}
	if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR)
		rc = cli_print_error(rep->error, NULL);
	else if (rep->body_case != STORM__CTL__REPLY__BODY_SUBMITTED)
		rc = cli_unexpected(rep, "Submitted");
	else if (o->parsable)
		printf("%llu\n", (unsigned long long)rep->submitted->job);
	else
		printf("Submitted %sjob %llu\n", c->slurm_cmd ? "batch " : "",
		       (unsigned long long)rep->submitted->job);
	int waiting = rc == 0 && o->wait;
	ctl_reply_free(rep);
	if (!waiting) {
		if (o->wait)
			close(fd);
		return rc;
	}
	fflush(stdout);
	return wait_job_end(fd);
}

static int job_run(struct cli *c, struct job_opts *o_, int batch)
{
	struct job_opts o = *o_;
	int rc, fd = -1;
	o.forward_stdin = !batch && !o.no_stdin && strcmp(o.cmd, "storm replay") != 0 &&
			  stdin_forwardable();
	if (o.pty && (batch || !o.forward_stdin))
		return usage_error(o.cmd, "--pty is for storm run with its stdin forwarded");
	if (o.record && (rc = open_record(&o)) >= 0)
		return rc;
	rc = submit_job(c, &o, &fd);
	if (rc >= 0)
		return rc;
	if (!batch)
		return attend_job(c, &o, fd);
	return report_submitted(c, &o, fd);
}

int cmd_run(struct cli *c, int argc, char **argv)
{
	return job_main(c, argc, argv, 0, 0);
}

int run_bcs_job(struct cli *c, int argc, char **argv, const char *record)
{
	(void)record;
	return job_main(c, argc, argv, 0, 1);
}

int cmd_submit(struct cli *c, int argc, char **argv)
{
	return job_main(c, argc, argv, 1, 0);
}
