/* A stand-in machine manager for testing the storm CLI without a cluster:
 * it accepts on the control socket, checks each Submit (descriptors really
 * received, the program's descriptor is the named file) and plays a scripted
 * job chosen by the program's first argument:
 *   hello      two ranks write lines in pieces, partial last lines; exit 0
 *   exit N     rank 1 fails with status N
 *   progress   2.5 s of Progress frames, then exit 0
 *   hang       waits for a cancel; ignores SIGINT, ends on SIGKILL (137)
 *   intr       waits for a cancel; ends with 128 + the signal
 *   drop       closes the connection mid-job
 *   refuse     answers the Submit with an Error
 *   files      prints each --file's name and size, then exit 0
 *   env        prints argv[0], program, cwd and HOME from the request
 * Requests must be authenticated as the real MM wants them (common/ctl_auth.h,
 * MUNGE at MUNGE_SOCKET or the configuration's munge_socket); replies are
 * tagged the same way.
 * Usage: fake_ctl_mm SOCKET MUNGE_SOCKET, or fake_ctl_mm -c storm.conf to stand in for
 * stormmm under `storm cluster up`: then a node counts as UP once the file
 * STATE_DIR/NAME.up exists (tests/cluster/fake_stormnd writes it). Exits
 * after a Shutdown, removing its socket. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl_auth.h"
#include "control.pb-c.h"
#include "frame.h"

#define MAX_JOBS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct {
	uint64_t id;
	int active;
	int signals[8]; /* received cancels, in order */
	int nsignals;
} jobs[MAX_JOBS];
static uint64_t next_job = 5;
static struct storm_conf conf;
static int have_conf;
static const char *sock_path;

static int node_up(int i)
{
	char p[PATH_MAX + 80];
	snprintf(p, sizeof(p), "%s/%s.up", conf.state_dir, conf.nodes[i]);
	return access(p, F_OK) == 0;
}

static unsigned nodes_up(void)
{
	unsigned n = 0;
	for (int i = 0; i < conf.nnodes; i++)
		n += node_up(i);
	return n;
} /* ids as in the docs' examples */

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* As the MM's status --wait does: returns once every node is up or WAIT_MS
 * passed, woken by each file made in the state directory (the watch is set
 * before the first count, so a node that comes up meanwhile is not missed). */
static void wait_nodes_up(uint32_t wait_ms)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, conf.state_dir, IN_CREATE | IN_MOVED_TO) < 0) {
		fprintf(stderr, "fake_ctl_mm: cannot watch %s: %s\n", conf.state_dir,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	while (nodes_up() < (unsigned)conf.nnodes) {
		long left = (long)wait_ms - ms_since(&t0);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[4096];
		if (left <= 0 || poll(&p, 1, (int)left) <= 0 || read(fd, buf, sizeof(buf)) < 0)
			break;
	}
	close(fd);
}

/* As the real MM's Shutdown command does: the stand-in node daemons of
 * `cluster up` (DIR/pids, next to the configuration) are told to stop. */
static void stop_fake_nodes(void)
{
	if (!have_conf)
		return;
	char path[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s", conf.path);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "pids");
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	int pid;
	char name[64];
	while (fscanf(f, "%d %63s", &pid, name) == 2)
		if (strcmp(name, "mm") != 0)
			kill(pid, SIGTERM);
	fclose(f);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static const char *munge_sock;
static __thread struct ctl_session sess; /* one connection per thread */

static int send_reply(int fd, Storm__Ctl__Reply *rep)
{
	rep->version = 1;
	size_t len = storm__ctl__reply__get_packed_size(rep), elen;
	uint8_t *buf = malloc(len ? len : 1), *env;
	char err[256];
	storm__ctl__reply__pack(rep, buf);
	int rc = ctl_auth_wrap(&sess, buf, len, &env, &elen, err, sizeof(err));
	free(buf);
	if (rc < 0)
		return rc;
	rc = frame_send(fd, env, elen, NULL, 0);
	free(env);
	return rc;
}

static int send_error(int fd, Storm__Ctl__ErrorCode code, const char *msg)
{
	Storm__Ctl__Error e = STORM__CTL__ERROR__INIT;
	e.code = code;
	e.message = (char *)msg;
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_ERROR;
	rep.error = &e;
	return send_reply(fd, &rep);
}

static int send_output(int fd, uint64_t job, unsigned rank, int is_err, const char *text)
{
	Storm__Ctl__Output o = STORM__CTL__OUTPUT__INIT;
	o.job = job;
	o.rank = rank;
	o.stream = is_err ? STORM__CTL__STREAM__STDERR : STORM__CTL__STREAM__STDOUT;
	o.data.data = (uint8_t *)text;
	o.data.len = strlen(text);
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_OUTPUT;
	rep.output = &o;
	return send_reply(fd, &rep);
}

static int send_end(int fd, uint64_t job, Storm__Ctl__JobState state, int status,
		    const char *reason)
{
	Storm__Ctl__JobEnd e = STORM__CTL__JOB_END__INIT;
	e.job = job;
	e.state = state;
	e.exit_status = status;
	e.reason = (char *)(reason ? reason : "");
	e.transfer_ms = 12.3;
	e.execute_ms = 20.1;
	e.total_ms = 35.0;
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_END;
	rep.end = &e;
	return send_reply(fd, &rep);
}

static int job_slot(uint64_t id)
{
	for (int i = 0; i < MAX_JOBS; i++)
		if (jobs[i].active && jobs[i].id == id)
			return i;
	return -1;
}

/* Closes as the real MM does: half-close, then wait (at most 5 s) for the
 * client to close, so frames it sent meanwhile (stdin) never reset the
 * connection under the replies it has not read yet. */
static void linger_close(int fd)
{
	char sink[4096];
	shutdown(fd, SHUT_WR);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, 5000) > 0 && read(fd, sink, sizeof(sink)) > 0)
		;
	close(fd);
}

/* Blocks until a cancel for job arrives; returns its signal. */
static int wait_signal(int slot, int *seen)
{
	pthread_mutex_lock(&lock);
	while (jobs[slot].nsignals <= *seen)
		pthread_cond_wait(&cond, &lock);
	int sig = jobs[slot].signals[(*seen)++];
	pthread_mutex_unlock(&lock);
	return sig;
}

static void play(int fd, const Storm__Job__Spec *s, int *fds, int nfds)
{
	const char *script = s->n_argv > 1 ? s->argv[1] : "hello";
	if (!strcmp(script, "refuse")) {
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_INVALID,
			   "64 ranks need 16 nodes of 4 CPUs, the cluster has 8");
		return;
	}
	/* the descriptors must be there, and the first must be the program */
	int want = (s->no_bcast ? 0 : 1) + (int)s->n_files;
	char msg[512];
	if (nfds != want) {
		snprintf(msg, sizeof(msg), "fake: expected %d descriptors, got %d", want, nfds);
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_INVALID, msg);
		return;
	}
	struct stat a, b;
	if (!s->no_bcast &&
	    (fstat(fds[0], &a) != 0 || stat(s->program, &b) != 0 || a.st_ino != b.st_ino ||
	     a.st_dev != b.st_dev)) {
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_INVALID,
			   "fake: the first descriptor is not the program");
		return;
	}
	pthread_mutex_lock(&lock);
	uint64_t id = next_job++;
	int slot = -1;
	for (int i = 0; i < MAX_JOBS && slot < 0; i++)
		if (!jobs[i].active)
			slot = i;
	jobs[slot].id = id;
	jobs[slot].active = 1;
	jobs[slot].nsignals = 0;
	pthread_mutex_unlock(&lock);

	Storm__Ctl__Submitted sub = STORM__CTL__SUBMITTED__INIT;
	sub.job = id;
	sub.state = "LAUNCHING";
	char out[4096] = "";
	if (!s->interactive) {
		/* batch: write the output file where the CLI asked, %j expanded */
		const char *pat = s->output[0] ? s->output : "storm-%j.out";
		char *o = out;
		for (const char *p = pat; *p && o < out + sizeof(out) - 24; p++) {
			if (p[0] == '%' && p[1] == 'j') {
				o += sprintf(o, "%llu", (unsigned long long)id);
				p++;
			} else {
				*o++ = *p;
			}
		}
		*o = '\0';
		sub.output = out;
	}
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_SUBMITTED;
	rep.submitted = &sub;
	send_reply(fd, &rep);
	if (!s->interactive) {
		FILE *f = fopen(out, "w");
		if (f) {
			fprintf(f, "fake output of job %llu\n", (unsigned long long)id);
			fclose(f);
		}
		goto done;
	}

	if (!strcmp(script, "hello")) {
		unsigned n = s->ranks ? s->ranks : 2;
		for (unsigned r = 0; r < n; r++) {
			send_output(fd, id, r, 0, "hel");
			send_output(fd, id, r, 1, "warn ");
		}
		for (unsigned r = 0; r < n; r++) {
			char t[64];
			snprintf(t, sizeof(t), "lo from rank %u\nsecond li", r);
			send_output(fd, id, r, 0, t);
			snprintf(t, sizeof(t), "%u\n", r);
			send_output(fd, id, r, 1, t);
		}
		for (unsigned r = 0; r < n; r++)
			send_output(fd, id, r, 0, "ne\ntail");
		send_end(fd, id, STORM__CTL__JOB_STATE__COMPLETED, 0, NULL);
	} else if (!strcmp(script, "exit")) {
		int st = s->n_argv > 2 ? atoi(s->argv[2]) : 1;
		send_output(fd, id, 1, 1, "rank 1 fails\n");
		snprintf(msg, sizeof(msg), "rank 1 exited with status %d", st);
		send_end(fd, id, STORM__CTL__JOB_STATE__FAILED, st, msg);
	} else if (!strcmp(script, "progress")) {
		uint64_t total = 48u << 20;
		for (int i = 0; i <= 25; i++) {
			Storm__Ctl__Progress p = STORM__CTL__PROGRESS__INIT;
			p.job = id;
			p.total = total;
			p.done = total * (uint64_t)i / 25;
			rep.body_case = STORM__CTL__REPLY__BODY_PROGRESS;
			rep.progress = &p;
			send_reply(fd, &rep);
			msleep(100);
		}
		send_output(fd, id, 0, 0, "transferred\n");
		send_end(fd, id, STORM__CTL__JOB_STATE__COMPLETED, 0, NULL);
	} else if (!strcmp(script, "hang") || !strcmp(script, "intr")) {
		int seen = 0;
		send_output(fd, id, 0, 0, "waiting\n");
		for (;;) {
			int sig = wait_signal(slot, &seen);
			snprintf(msg, sizeof(msg), "got signal %d\n", sig);
			send_output(fd, id, 0, 0, msg);
			if (!strcmp(script, "intr") || sig == SIGKILL) {
				snprintf(msg, sizeof(msg), "cancelled (signal %d)", sig);
				send_end(fd, id, STORM__CTL__JOB_STATE__CANCELLED, 128 + sig, msg);
				break;
			}
		}
	} else if (!strcmp(script, "drop")) {
		send_output(fd, id, 0, 0, "about to drop\n");
	} else if (!strcmp(script, "files")) {
		for (size_t i = 0; i < s->n_files; i++) {
			struct stat st;
			fstat(fds[nfds - (int)s->n_files + (int)i], &st);
			snprintf(msg, sizeof(msg), "file %s %lld bytes\n", s->files[i],
				 (long long)st.st_size);
			send_output(fd, id, 0, 0, msg);
		}
		send_end(fd, id, STORM__CTL__JOB_STATE__COMPLETED, 0, NULL);
	} else if (!strcmp(script, "env")) {
		const char *home = "";
		for (size_t i = 0; i < s->n_env; i++)
			if (!strncmp(s->env[i], "HOME=", 5))
				home = s->env[i] + 5;
		snprintf(msg, sizeof(msg), "argv0=%s program=%s cwd=%s HOME=%s name=%s N=%u n=%u\n",
			 s->argv[0], s->program, s->cwd, home, s->name, s->nodes, s->ranks);
		send_output(fd, id, 0, 0, msg);
		send_end(fd, id, STORM__CTL__JOB_STATE__COMPLETED, 0, NULL);
	} else {
		send_end(fd, id, STORM__CTL__JOB_STATE__COMPLETED, 0, NULL);
	}
done:
	pthread_mutex_lock(&lock);
	jobs[slot].active = 0;
	pthread_mutex_unlock(&lock);
}

static void cancel(int fd, Storm__Ctl__Cancel *c)
{
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	if (c->job == 13) {
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_PERMISSION,
			   "job 13 belongs to alice, not to you");
		return;
	}
	pthread_mutex_lock(&lock);
	int slot = job_slot(c->job);
	if (slot >= 0 && jobs[slot].nsignals < 8) {
		jobs[slot].signals[jobs[slot].nsignals++] = c->signal ? c->signal : SIGTERM;
		pthread_cond_broadcast(&cond);
	}
	pthread_mutex_unlock(&lock);
	if (slot < 0 && c->job != 7) { /* 7: a queued job of the canned list */
		char msg[64];
		snprintf(msg, sizeof(msg), "no job %llu", (unsigned long long)c->job);
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, msg);
		return;
	}
	Storm__Ctl__Cancelled done = STORM__CTL__CANCELLED__INIT;
	done.job = c->job;
	rep.body_case = STORM__CTL__REPLY__BODY_CANCELLED;
	rep.cancelled = &done;
	send_reply(fd, &rep);
}

static void list_jobs(int fd, int all)
{
	Storm__Ctl__JobInfo j[3];
	Storm__Ctl__JobInfo *pj[3];
	for (int i = 0; i < 3; i++) {
		Storm__Ctl__JobInfo init = STORM__CTL__JOB_INFO__INIT;
		j[i] = init;
		pj[i] = &j[i];
	}
	double now = (double)time(NULL);
	j[0].job = 6, j[0].name = "lammps", j[0].user = "root", j[0].state = 2;
	j[0].nodes = 8, j[0].ranks = 32, j[0].nodelist = "node[00-07]";
	j[0].submit_time = now - 100, j[0].start_time = now - 3725;
	j[1].job = 7, j[1].name = "big", j[1].user = "bob", j[1].uid = 1001, j[1].state = 0;
	j[1].nodes = 64, j[1].ranks = 256, j[1].reason = "Resources";
	j[2].job = 4, j[2].name = "old", j[2].user = "root", j[2].state = 3;
	j[2].nodes = 1, j[2].ranks = 1, j[2].nodelist = "node00";
	j[2].start_time = now - 50, j[2].end_time = now - 40;
	Storm__Ctl__JobList list = STORM__CTL__JOB_LIST__INIT;
	list.jobs = pj;
	list.n_jobs = all ? 3 : 2;
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_JOBS;
	rep.jobs = &list;
	send_reply(fd, &rep);
}

static void list_nodes_conf(int fd)
{
	Storm__Ctl__NodeInfo *n = calloc((size_t)conf.nnodes, sizeof(*n));
	Storm__Ctl__NodeInfo **pn = calloc((size_t)conf.nnodes, sizeof(*pn));
	for (int i = 0; i < conf.nnodes; i++) {
		Storm__Ctl__NodeInfo init = STORM__CTL__NODE_INFO__INIT;
		n[i] = init;
		n[i].name = conf.nodes[i];
		n[i].state = node_up(i) ? STORM__CTL__NODE_STATE__UP : STORM__CTL__NODE_STATE__UNKNOWN;
		n[i].cpus = conf.cpus;
		pn[i] = &n[i];
	}
	Storm__Ctl__NodeList list = STORM__CTL__NODE_LIST__INIT;
	list.nodes = pn;
	list.n_nodes = (size_t)conf.nnodes;
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_NODES;
	rep.nodes = &list;
	send_reply(fd, &rep);
	free(pn);
	free(n);
}

static void list_nodes(int fd)
{
	if (have_conf) {
		list_nodes_conf(fd);
		return;
	}
	Storm__Ctl__NodeInfo n[3];
	Storm__Ctl__NodeInfo *pn[3];
	uint64_t jobs0[] = { 6 };
	const char *names[] = { "node00", "node01", "node02" };
	for (int i = 0; i < 3; i++) {
		Storm__Ctl__NodeInfo init = STORM__CTL__NODE_INFO__INIT;
		n[i] = init;
		n[i].name = (char *)names[i];
		n[i].state = i == 2 ? STORM__CTL__NODE_STATE__DOWN : STORM__CTL__NODE_STATE__UP;
		n[i].cpus = 4;
		pn[i] = &n[i];
	}
	n[0].jobs = jobs0;
	n[0].n_jobs = 1;
	Storm__Ctl__NodeList list = STORM__CTL__NODE_LIST__INIT;
	list.nodes = pn;
	list.n_nodes = 3;
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	rep.body_case = STORM__CTL__REPLY__BODY_NODES;
	rep.nodes = &list;
	send_reply(fd, &rep);
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t *buf;
	size_t len;
	int fds[FRAME_MAX_FDS], nfds = 0;
	if (frame_recv(fd, &buf, &len, fds, &nfds) != 0) {
		close(fd);
		return NULL;
	}
	ctl_session_init(&sess, true, munge_sock, 0);
	const uint8_t *body;
	size_t blen;
	bool plain;
	char why[256];
	Storm__Ctl__Request *req = NULL;
	if (ctl_auth_unwrap(&sess, buf, len, &body, &blen, &plain, why, sizeof(why)) == CTL_AUTH_OK)
		req = storm__ctl__request__unpack(NULL, blen, body);
	else
		fprintf(stderr, "fake_ctl_mm: refused: %s\n", why);
	free(buf);
	Storm__Ctl__Reply rep = STORM__CTL__REPLY__INIT;
	if (!req || req->version != 1) {
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_PROTOCOL, "bad request");
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_SUBMIT && !req->submit->spec) {
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_INVALID, "no job description");
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_SUBMIT) {
		play(fd, req->submit->spec, fds, nfds);
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_CANCEL) {
		cancel(fd, req->cancel);
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_JOBS) {
		list_jobs(fd, req->jobs->all);
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_NODES) {
		list_nodes(fd);
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_STATUS) {
		Storm__Ctl__Status st = STORM__CTL__STATUS__INIT;
		st.cluster = "fake", st.nodes_total = 3, st.nodes_up = 2, st.slice = 1234;
		st.timeslice_us = 10000, st.provider = "tcp;ofi_rxm", st.jobs_running = 1;
		st.jobs_queued = 1, st.mm_pid = (uint32_t)getpid();
		if (have_conf) {
			wait_nodes_up(req->status->wait_ms);
			st.cluster = conf.name, st.provider = conf.provider;
			st.timeslice_us = conf.timeslice_us;
			st.nodes_total = (uint32_t)conf.nnodes, st.nodes_up = nodes_up();
		}
		rep.body_case = STORM__CTL__REPLY__BODY_STATUS;
		rep.status = &st;
		send_reply(fd, &rep);
	} else if (req->body_case == STORM__CTL__REQUEST__BODY_SHUTDOWN) {
		Storm__Ctl__ShuttingDown sd = STORM__CTL__SHUTTING_DOWN__INIT;
		rep.body_case = STORM__CTL__REPLY__BODY_SHUTTING_DOWN;
		rep.shutting_down = &sd;
		send_reply(fd, &rep);
		close(fd);
		unlink(sock_path);
		stop_fake_nodes();
		exit(0);
	} else {
		send_error(fd, STORM__CTL__ERROR_CODE__ERR_PROTOCOL, "unknown request");
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (req)
		storm__ctl__request__free_unpacked(req, NULL);
	linger_close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-c")) {
		char err[512];
		if (conf_load(argv[2], &conf, err, sizeof(err)) != 0) {
			fprintf(stderr, "fake_ctl_mm: %s\n", err);
			return 1;
		}
		have_conf = 1;
		sock_path = conf.socket;
		munge_sock = conf.munge_socket;
		if (getenv("FAKE_MM_FAIL")) {
			fprintf(stderr, "fake_ctl_mm: failing on purpose (FAKE_MM_FAIL)\n");
			return 3;
		}
	} else if (argc == 3) {
		sock_path = argv[1];
		munge_sock = argv[2];
	} else {
		fprintf(stderr, "usage: fake_ctl_mm SOCKET MUNGE_SOCKET | fake_ctl_mm -c storm.conf\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(sock_path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "fake_ctl_mm: %s: path too long for a socket\n", sock_path);
		return 1;
	}
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	unlink(sock_path);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(ls, 64) != 0) {
		fprintf(stderr, "fake_ctl_mm: %s: %s\n", sock_path, strerror(errno));
		return 1;
	}
	printf("listening\n"); /* tests wait for this line, not for time */
	fflush(stdout);
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_t t;
		if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
}
