/* stormmm: start-up and the event loop. */
#include "db.h"
#include "mm.h"
#include "rtguard.h"
#include "stall.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <sodium.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stormmm -c CONF [--foreground]\n"
		"The storm machine manager: runs the timeslice loop, the control socket\n"
		"and the job table of the cluster described by CONF (docs/storm.conf.md).\n"
		"  -c, --conf FILE   cluster configuration (required)\n"
		"  -h, --help        this text\n"
		"Exit status: 0 after a clean shutdown, 1 on a fatal error, 2 on bad usage.\n");
}

static int listen_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		slog("error: socket path %s is too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* a live MM answers connect; a stale socket file does not */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		slog("error: another machine manager already listens on %s", path);
		close(probe);
		close(fd);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		slog("error: cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* anyone may connect: identity comes from SO_PEERCRED, rights from the job */
	chmod(path, 0666);
	return fd;
}

void mm_wire(struct mm *mm)
{
	ctl_init(mm);
	job_init(mm);
	ckpt_init(mm);
}


/* Local completions and remote events the loop reacts to between slices. */
static void poll_events(struct mm *mm)
{
	mm->fabric_busy = sn_progress(mm->sn) > 0;
	if (sn_event_take(mm->sn, EV_REPORT, NULL) != 0) {
		while (sn_event_take(mm->sn, EV_REPORT, NULL) > 0)
			;
		report_on_event(mm);
	}
	cmd_on_sent_event(mm);
	transfer_step(mm);
	cmd_pump(mm);
}

/* SIGUSR1: what the manager believes, in its log, for diagnosis. */
static void dump_state(struct mm *mm)
{
	struct mallinfo2 mi = mallinfo2();
	int jobs = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		jobs++;
	/* bench/soak reads this line: heap in use against the job count */
	slog("memory: heap %zu bytes in use, %zu mapped, %lld of them SQLite's; %d jobs in "
	       "memory", mi.uordblks, mi.hblkhd, (long long)db_memory_used(), jobs);
	slog("state: slice %llu, command %u%s, %s transfer, file chunk %llu",
	       (unsigned long long)mm->slice, mm->cmd_seq, mm->cmd_inflight ? " in flight" : "",
	       transfer_job(mm) ? "a" : "no", (unsigned long long)mm->file_seq);
	for (int i = 0; i < mm->conf.nnodes; i++) {
		const struct mm_node *n = &mm->nodes[i];
		slog("  node %s: %s, report %llu heard at slice %llu, command %u%s, row %d job %llu",
		       mm->conf.nodes[i],
		       protobuf_c_enum_descriptor_get_value(&storm__ctl__node_state__descriptor,
							    n->state)->name,
		       (unsigned long long)n->report_seq, (unsigned long long)n->heard_slice,
		       n->cmd_done, n->cmd_lagging ? " (lagging)" : "", mm->row,
		       (unsigned long long)(mm->row >= 0 ? matrix_at(&mm->matrix, mm->row, i) : 0));
	}
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (!job_active(j))
			continue;
		char waiting[256] = "";
		size_t w = 0;
		for (uint32_t k = 0; k < j->nnodes && w + 12 < sizeof(waiting); k++)
			if (!j->node_done[k])
				w += (size_t)snprintf(waiting + w, sizeof(waiting) - w, " %s",
						      mm->conf.nodes[j->nodes[k]]);
		slog("  job %llu: %s, %u/%u nodes done, %u/%u ranks ended; waiting for:%s",
		       (unsigned long long)j->id,
		       protobuf_c_enum_descriptor_get_value(&storm__ctl__job_state__descriptor,
							    j->state)->name,
		       j->nodes_done, j->nnodes, j->ranks_ended, j->nranks, waiting);
	}
	slog("state: end"); /* a reader waits for this line */
}

/* ---- what the event loop calls (common/evloop.h) */

static void on_listen(void *arg, uint32_t events)
{
	struct mm *mm = arg;
	(void)events;
	while (client_accept(mm, mm->listen_fd, false) > 0)
		;
}

static void on_listen_tcp(void *arg, uint32_t events)
{
	struct mm *mm = arg;
	(void)events;
	while (client_accept(mm, mm->ctl_tcp_fd, true) > 0)
		;
}

/* ctl_address: control connections over TCP, for storm on other hosts.
 * Their credentials are restricted to the uid that owns storm.conf (the
 * CLI cannot learn ours from the socket), so that must be ours. 0 or -1. */
static int listen_ctl_tcp(struct mm *mm)
{
	const struct storm_conf *c = &mm->conf;
	struct stat st;
	if (stat(c->path, &st) != 0) {
		slog("error: ctl_address: cannot tell who owns %s: %s", c->path, strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		slog("error: ctl_address: %s belongs to uid %u, but this machine manager runs as "
		     "uid %u; remote storm commands seal their credential for the owner of "
		     "storm.conf", c->path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	char err[400];
	mm->ctl_tcp_fd = tcp_listen(c->ctl_address, err, sizeof(err));
	if (mm->ctl_tcp_fd < 0) {
		slog("error: ctl_address: %s", err);
		return -1;
	}
	if (ev_io_add(mm->loop, mm->ctl_tcp_fd, EPOLLIN, on_listen_tcp, mm) < 0) {
		slog("error: event loop: %s", strerror(errno));
		return -1;
	}
	slog("taking control connections on %s (TCP, MUNGE only)", c->ctl_address);
	return 0;
}

/* the slice runs after the turn's reports and commands (on_turn) */
static void on_slice_timer(void *arg)
{
	((struct mm *)arg)->tick_due = true;
}

static void on_probe_timer(void *arg)
{
	probe_tick(arg);
}

static void on_signal(void *arg, uint32_t events)
{
	struct mm *mm = arg;
	(void)events;
	struct signalfd_siginfo si;
	while (read(mm->signal_fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGUSR1)
			dump_state(mm);
		else if (!mm->shutting_down) {
			slog("signal %u: shutting the cluster down", si.ssi_signo);
			mm_shutdown(mm, "the machine manager was stopped");
		}
}

/* the fabric's wait descriptor only wakes the loop; on_turn progresses it */
static void on_fabric(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
}

/* how long the fabric lets the loop sleep; last, as it arms the wait fd */
static int64_t fabric_limit(void *arg)
{
	struct mm *mm = arg;
	return ev_ms(sn_sleep_limit_ms(mm->sn, mm->fabric_busy));
}

/* a transfer polls its flow control */
static int64_t transfer_limit(void *arg)
{
	return ((struct mm *)arg)->xfer ? 1000 : -1;
}

static void on_turn(void *arg)
{
	struct mm *mm = arg;
	if (rt_guard_tripped())
		slog("ran %d ms on a core without sleeping: SCHED_FIFO dropped, now nice -10",
		     RT_GUARD_MS);
	/* after its first wait, which ended the run a slow start counted */
	static bool rearmed;
	if (!rearmed) {
		rearmed = true;
		rt_guard_rearm(RT_GUARD_MS);
	}
	static bool share_logged;
	if (rt_guard_turn() == 1 && !share_logged) {
		share_logged = true;
		slog("over its share of a core (%.0f%%): nice -10 until under half of it, then "
		     "SCHED_FIFO again (said once)", 100 * rt_guard_share());
	}
	poll_events(mm);
	if (mm->tick_due) {
		mm->tick_due = false;
		slice_tick(mm);
	}
	if (mm->shutting_down && ((!mm->cmd_queue && !mm->cmd_inflight) ||
				  clock_wall_s() > mm->shutdown_deadline))
		ev_stop(mm->loop);
}

/* the configuration, the cluster key and what the MM holds per node */
static int load_conf(struct mm *mm, const char *conf_path)
{
	char err[512];
	if (conf_load(conf_path, &mm->conf, err, sizeof(err)) < 0) {
		slog("error: %s", err);
		return -1;
	}
	const struct storm_conf *c = &mm->conf;
	if (sodium_init() < 0)
		snprintf(err, sizeof(err), "libsodium cannot initialise");
	else if (gm_key_load(c->key_file, mm->key, err, sizeof(err)) == 0)
		err[0] = '\0';
	if (err[0]) {
		slog("error: %s", err);
		return -1;
	}
	randombytes_buf(mm->file_nonce, sizeof(mm->file_nonce));
	mm->nodes = calloc((size_t)c->nnodes, sizeof(*mm->nodes));
	mm->strobe_buf = calloc(1, GM_STROBE_MAX);
	if (!mm->nodes || !mm->strobe_buf || matrix_init(&mm->matrix, c->nnodes, (int)c->mpl) < 0) {
		slog("error: out of memory");
		return -1;
	}
	for (int i = 0; i < c->nnodes; i++)
		matrix_set_down(&mm->matrix, i, true); /* until its first report */
	mm->row = -1;
	return 0;
}

/* test hooks, the trace, the job queue and the descriptors it may hold */
static void set_up_run(struct mm *mm)
{
	fault_init(&mm->fault, NULL);
	if (fault_armed(&mm->fault))
		slog("test hook STORM_TEST_TAMPER=%s", getenv("STORM_TEST_TAMPER"));
	const char *trace = getenv("STORM_TRACE");
	if (trace && *trace) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/mm.trace", trace);
		if (!(mm->trace = fopen(path, "w")))
			slog("warning: cannot write the trace %s: %s", path, strerror(errno));
	}
	mm->next_job_id = 1;
	mm->cmd_tail = &mm->cmd_queue;
	/* a queued job holds its program's and files' descriptors until its
	 * transfer: room for large arrays, the rest for clients */
	struct rlimit nofile = { 1024, 1024 };
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
		getrlimit(RLIMIT_NOFILE, &nofile);
	}
	mm->fd_room = nofile.rlim_cur > 4096 ? (size_t)nofile.rlim_cur - 2048
					      : (size_t)nofile.rlim_cur / 2;
}

static int open_fabric(struct mm *mm, bool by_mm)
{
	const struct storm_conf *c = &mm->conf;
	struct sn_config sc;
	sn_config_defaults(&sc);
	sc.provider = c->provider;
	sc.sys_provider = c->sys_provider[0] ? c->sys_provider : NULL;
	sc.node_id = MM_FABRIC_ID;
	sc.node_count = (uint32_t)c->nnodes + 1;
	sc.gmem_size = layout_gmem_size((uint32_t)c->nnodes);
	sc.fanout = c->fanout;
	sc.timeout_ms = c->op_timeout_ms;
	const char **hosts = NULL;
	char mm_host[256], mm_port[16];
	if (by_mm) {
		sc.bootstrap = "external"; /* boot.c hands the addresses in */
	} else if (!strncmp(c->bootstrap, "static:", 7)) {
		sc.bootstrap = c->bootstrap;
		conf_address(c->mm_address, mm_host, sizeof(mm_host), mm_port, sizeof(mm_port));
		if (!(hosts = calloc(sc.node_count, sizeof(*hosts))))
			return -1;
		hosts[MM_FABRIC_ID] = mm_host;
		for (int i = 0; i < c->nnodes; i++)
			hosts[fabric_id((uint32_t)i)] = c->nodes[i];
		sc.hosts = hosts;
	} else {
		sc.bootstrap = c->bootstrap;
	}
	int rc = sn_open(&sc, &mm->sn);
	free(hosts);
	if (rc < 0) {
		slog("error: cannot open the fabric: %s", sn_open_error());
		return -1;
	}
	return 0;
}

/* the slice and probe timers, the signals and every descriptor the loop watches */
static int arm_loop(struct mm *mm)
{
	const struct storm_conf *c = &mm->conf;
	if (!(mm->loop = ev_loop_new()))
		return -1;
	/* slice 1 at once: with long slices, nodes would wait a whole one */
	mm->slice_origin_ns = clock_mono_ns() + 1000;
	mm->timer_us = c->timeslice_us;
	if ((mm->slice_timer = ev_timer_add(mm->loop, 1, c->timeslice_us, on_slice_timer, mm)) < 0) {
		slog("error: slice timer: %s", strerror(errno));
		return -1;
	}
	if ((uint64_t)c->timeslice_us * 4 > PROBE_US &&
	    (mm->probe_timer = ev_timer_add(mm->loop, PROBE_US, PROBE_US, on_probe_timer, mm)) < 0) {
		slog("error: probe timer: %s", strerror(errno));
		return -1;
	}
	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGUSR1);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	mm->signal_fd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	mm->sn_fd = sn_wait_fd(mm->sn);
	if (ev_io_add(mm->loop, mm->listen_fd, EPOLLIN, on_listen, mm) < 0 ||
	    ev_io_add(mm->loop, mm->signal_fd, EPOLLIN, on_signal, mm) < 0 ||
	    (mm->sn_fd >= 0 && ev_io_add(mm->loop, mm->sn_fd, EPOLLIN, on_fabric, mm) < 0) ||
	    ev_limit_add(mm->loop, fabric_limit, mm) < 0 ||
	    ev_limit_add(mm->loop, transfer_limit, mm) < 0 ||
	    ev_turn_add(mm->loop, on_turn, mm) < 0) {
		slog("error: event loop: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int start(struct mm *mm, const char *conf_path)
{
	mm->ctl_tcp_fd = -1;
	mm_wire(mm);
	if (load_conf(mm, conf_path) < 0)
		return -1;
	const struct storm_conf *c = &mm->conf;
	set_up_run(mm);
	/* the jobs of an earlier run of this MM, before anyone can submit */
	if (persist_open(mm) < 0 || recover_jobs(mm) < 0)
		return -1;

	/* listen first: the CLI may connect while the fabric is still forming;
	 * it is answered once every node has joined */
	mm->listen_fd = listen_socket(c->socket);
	if (mm->listen_fd < 0)
		return -1;
	bool by_mm = !strcmp(c->bootstrap, "mm");
	if (by_mm && boot_listen(mm) < 0)
		return -1;
	slog("listening on %s; joining the fabric", c->socket);
	if (open_fabric(mm, by_mm) < 0 || arm_loop(mm) < 0)
		return -1;
	/* a silent MM fails every job: its log must say why it stood still */
	if (stall_watch(STALL_MS) < 0)
		slog("running without a stall watcher: %s", strerror(errno));
	if (metrics_start(mm) < 0 || (by_mm && boot_start(mm) < 0) ||
	    (c->ctl_address[0] && listen_ctl_tcp(mm) < 0))
		return -1;
	slog("cluster '%s': %d nodes, %s (transfers by %s), timeslice %u us, socket %s",
	       c->name, c->nnodes, sn_provider_name(mm->sn, 0),
	       sn_rail_rma(mm->sn, 0) ? "RMA write" : "message", c->timeslice_us, c->socket);
	slog("authentication: MUNGE at %s for requests, cluster key %s for nodes",
	       c->munge_socket[0] ? c->munge_socket : "the default socket", c->key_file);
	return 0;
}

static void run(struct mm *mm)
{
	if (ev_run(mm->loop) < 0)
		slog("error: epoll_wait: %s", strerror(errno));
}

void mm_stop(struct mm *mm)
{
	for (struct client *c = mm->clients; c; c = c->next)
		client_close(mm, c);
	clients_reap(mm);
	transfer_abort(mm, NULL);
	while (mm->jobs) {
		struct job *j = mm->jobs;
		mm->jobs = j->next;
		job_destroy(j);
	}
	while (mm->ckpts)
		ckpt_rec_delete(mm, mm->ckpts);
	while (mm->cmd_queue) {
		struct pending_cmd *p = mm->cmd_queue;
		mm->cmd_queue = p->next;
		free(p->buf);
		free(p);
	}
	for (int i = 0; i < GM_CMD_SLOTS; i++)
		free(mm->cmd_ring[i].buf);
	metrics_stop(mm);
	boot_stop(mm);
	/* every node holds the shutdown and is leaving: nothing it waits on
	 * from the MM, whose own calls and sends to them (a liveness round, a
	 * strobe) would end only at the operation timeout, seconds of every
	 * cluster down */
	if (mm->sn && mm->shutting_down && mm->cmd_reached_all && !mm->cmd_queue &&
	    !mm->cmd_inflight)
		sn_close_now(mm->sn);
	else if (mm->sn)
		sn_close(mm->sn);
	if (mm->listen_fd > 0) {
		close(mm->listen_fd);
		unlink(mm->conf.socket);
	}
	if (mm->ctl_tcp_fd >= 0) {
		ev_io_del(mm->loop, mm->ctl_tcp_fd);
		close(mm->ctl_tcp_fd);
		mm->ctl_tcp_fd = -1;
	}
	if (mm->signal_fd > 0)
		close(mm->signal_fd);
	if (mm->loop)
		ev_loop_free(mm->loop);
	matrix_free(&mm->matrix);
	if (mm->trace)
		fclose(mm->trace);
	persist_close(mm);
	free(mm->nodes);
	free(mm->strobe_buf);
	gm_copy_free(&mm->verify);
	sodium_memzero(mm->key, sizeof(mm->key));
	conf_free(&mm->conf);
}

/* Test point mm_start_spin_ms: the MM spins that many ms of CPU before
 * main() runs, as the loader of a slow start does (an emulated guest, a
 * loaded host), while the virtual cluster may already have put it at
 * SCHED_FIFO under the guard, before its SIGXCPU handler exists. */
__attribute__((constructor)) static void start_spin(void)
{
	struct fault f;
	fault_init(&f, NULL);
	uint64_t ms = fault_value(&f, "mm_start_spin_ms");
	struct timespec t;
	while (ms && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 &&
	       (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000 < ms)
		;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "conf", required_argument, NULL, 'c' },
					      { "help", no_argument, NULL, 'h' },
					      { "foreground", no_argument, NULL, 'f' },
					      { 0 } };
	const char *conf = NULL;
	int o;
	log_set_ident("stormmm");
	/* a virtual cluster makes it real-time under the guard (rtguard.h):
	 * its SIGXCPU must find the handler, whenever it comes */
	rt_guard_install();
	rt_guard_share_from_env();
	while ((o = getopt_long(argc, argv, "c:hf", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			conf = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'f':
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!conf || optind < argc) {
		fprintf(stderr, "stormmm: error: %s\n",
			conf ? "unexpected argument" : "missing -c CONF");
		usage(stderr);
		return 2;
	}
	static struct mm mm;
	int rc = start(&mm, conf);
	if (rc == 0)
		run(&mm);
	mm_stop(&mm);
	slog(rc == 0 ? "stopped" : "failed to start");
	return rc == 0 ? 0 : 1;
}
