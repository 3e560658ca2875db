/* stormnd: the node daemon's start-up and event loop. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sodium.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"
#include "nd.h"
#include "rtguard.h"
#include "sigchld.h"
#include "stall.h"

static const char usage[] =
	"usage: stormnd -c CONF -n NODENAME [--no-realtime]\n"
	"\n"
	"The storm node daemon: follows the machine manager's strobes, runs the\n"
	"ranks of jobs on this node and reports their output and exits.\n"
	"\n"
	"  -c, --config CONF    storm.conf to read\n"
	"  -n, --name NODENAME  this node's name, as listed in [nodes] names\n"
	"      --no-realtime    SCHED_FIFO priority 1 under a guard: dropped to nice\n"
	"                       -10 once it has run 0.5 s without sleeping (a\n"
	"                       virtual cluster: its daemons share cores with its\n"
	"                       ranks); nice -10 where real-time is refused\n"
	"  -h, --help           this text\n";

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* ---- commands */

/* ---- strobes */


/* ---- set-up and loop */

struct opts {
	const char *conf, *name;
	bool realtime;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"name", required_argument, NULL, 'n'},
		{"no-realtime", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	o->realtime = true;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->conf = optarg;
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'R':
			o->realtime = false;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "stormnd: error: option '%s' needs a value\n",
				argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "stormnd: error: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "stormnd: error: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return -1;
	}
	if (!o->conf || !o->name) {
		fprintf(stderr, "stormnd: error: %s is required (see --help)\n",
			!o->conf ? "-c CONF" : "-n NODENAME");
		return -1;
	}
	return 0;
}

#define ND_NICE (-10)

static void go_realtime(void)
{
	/* reset on fork: the ranks must not inherit the daemon's priority */
	struct sched_param sp = {.sched_priority = 1};
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		slog("running without real-time priority: SCHED_FIFO refused: %s",
		       strerror(errno));
}

/* A virtual cluster: every node's daemon and ranks share this machine's
 * cores. Nice -10 alone is not enough: under autogroups it weighs the
 * daemon only against the ranks of its own session (rtguard.h), and
 * beside a loaded machine's other sessions a turn of a few milliseconds
 * took seconds, long enough for the MM to call the node dead. So
 * SCHED_FIFO, with a guard that drops the daemon to nice -10 should it
 * ever run RT_GUARD_MS without sleeping (a spinning real-time daemon would
 * hold a core from everything else). Reset on fork: the ranks start at
 * SCHED_OTHER, nice 0. */
static void go_favoured(void)
{
	struct sched_param sp = {.sched_priority = 1};
	if (rt_guard_install() == 0 && rt_guard_limit(0, RT_GUARD_MS) == 0 &&
	    sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0) {
		rt_guard_share_from_env();
		return;
	}
	slog("running at nice %d: a guarded SCHED_FIFO refused: %s", ND_NICE, strerror(errno));
	sp.sched_priority = 0;
	if (sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp) < 0 ||
	    setpriority(PRIO_PROCESS, 0, ND_NICE) < 0)
		slog("running at nice 0: nice %d refused: %s", ND_NICE, strerror(errno));
}

/* ---- what the event loop calls (common/evloop.h) */

static void on_signalfd(void *arg, uint32_t events)
{
	(void)events;
	((struct nd *)arg)->signalled = true;
}

/* the fabric's wait descriptor only wakes the loop; on_turn progresses it */
static void on_fabric(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
}

static int64_t rank_timer_limit(void *arg)
{
	int ms = nd_timer_ms(arg);
	uint64_t drought = nd_strobe_watch_at(arg), now = clock_mono_ns();
	if (drought) {
		int d = drought <= now ? 0 : (int)((drought - now + 999999) / 1000000);
		if (ms < 0 || d < ms)
			ms = d;
	}
	return ev_ms(ms);
}

static int64_t bcs_limit(void *arg)
{
	return nd_bcs_timer_us(arg);
}

static int64_t copy_limit(void *arg)
{
	return ev_ms(nd_copy_timer_ms(arg));
}

static int64_t mb_limit(void *arg)
{
	return ev_ms(nd_mb_timer_ms(arg));
}

static int64_t fabric_limit(void *arg)
{
	struct nd *nd = arg;
	return ev_ms(sn_sleep_limit_ms(nd->sn, nd->fabric_busy));
}


static void hold_turn(uint64_t ms)
{
	uint64_t seen = stall_backtraces();
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	/* a bound against a watcher that never looks: a minute */
	for (int i = 0; i < 6000 && stall_backtraces() == seen; i++) {
		ts = (struct timespec){ .tv_nsec = 10000000L };
		nanosleep(&ts, NULL);
	}
}

/* a test's stand-in for a daemon that spins: on a core without ever
 * sleeping, for ms or until the real-time guard has dropped it */
static void spin_turn(uint64_t ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_FIFO &&
	       (uint64_t)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000) < ms);
}

/* SIGUSR1: what the daemon holds, in its log, for diagnosis (a job that
 * hangs: which command it took, which exchange waits for whom). */
static void dump_state(struct nd *nd)
{
	slog("state: slice %" PRIu64 ", command %u of the strobe's %u; %" PRIu64
	     " slices without a strobe, %" PRIu64 " strobes read again (torn)", nd->slice,
	     nd->cmd_done, nd->strobe_cmd_seq, nd->missed_strobes, nd->torn_strobes);
	for (const struct nd_job *j = nd->jobs; j; j = j->next)
		slog("  job %" PRIu64 ": %u of %u ranks alive, group %d, mpi %d%s", j->id,
		     j->nalive, j->nranks, (int)j->pgid, j->mpi, j->stopped ? ", stopped" : "");
	nd_mb_dump(nd);
	nd_bcs_dump(nd);
	nd_pmi_dump(nd);
	slog("state: end"); /* a reader waits for this line */
	/* a test's stand-in for a turn that runs too long: at least this
	 * long, and until the stall watcher has written where the loop is
	 * (a watcher woken late by a loaded machine still finds it here) */
	uint64_t ms = fault_value(&nd->fault, "dump_sleep_ms");
	if (ms)
		hold_turn(ms);
	if ((ms = fault_value(&nd->fault, "dump_spin_ms")))
		spin_turn(ms);
}

static void on_signals(struct nd *nd)
{
	struct signalfd_siginfo si;
	while (read(nd->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			nd_reap(nd);
		} else if (si.ssi_signo == SIGUSR1) {
			dump_state(nd);
		} else {
			slog("%s received; shutting down", strsignal((int)si.ssi_signo));
			nd->stop = true;
		}
	}
	/* SIGCHLDs coalesce; reap whatever ended, signalled or not */
	nd_reap(nd);
}

static void reap_if_signalled(struct nd *nd)
{
	if (nd->signalled) {
		nd->signalled = false;
		on_signals(nd);
	}
}

static int drain_event(struct nd *nd, unsigned ev)
{
	int n = 0, rc;
	while ((rc = sn_event_take(nd->sn, ev, NULL)) != 0) {
		if (rc < 0) {
			slog("event %u carries an error: %s", ev, sn_strerror(nd->sn));
			continue;
		}
		n++;
	}
	return n;
}

/* after every wake-up: signals (after the pipes' output was read: reaping
 * may end a job whose pipes were ready), then what the fabric brought: one
 * round of progress, then every event taken from it */
static void on_turn(void *arg)
{
	struct nd *nd = arg;
	if (rt_guard_tripped())
		slog("ran %d ms on a core without sleeping: SCHED_FIFO dropped, now nice %d",
		     RT_GUARD_MS, ND_NICE);
	if (rt_guard_turn() == 1 && !nd->share_logged) {
		nd->share_logged = true;
		slog("over its share of a core (%.0f%%): nice %d until under half of it, then "
		     "SCHED_FIFO again (said once)", 100 * rt_guard_share(), ND_NICE);
	}
	reap_if_signalled(nd);
	int rc = sn_progress(nd->sn);
	if (rc < 0)
		slog("network progress: %s", sn_strerror(nd->sn));
	nd->fabric_busy = rc > 0;
	for (int b = 0; b < 2; b++) {
		int files = drain_event(nd, EV_FILE(b));
		if (files)
			nd_files_arrived(nd, b, files);
	}
	if (drain_event(nd, EV_CMD))
		nd_on_commands(nd);
	/* several strobes since the last turn: the latest one counts */
	unsigned areas = 0;
	for (unsigned p = 0; p < 2; p++)
		if (drain_event(nd, EV_STROBE_AT(p)))
			areas |= 1u << p;
	if (areas)
		nd_on_strobe(nd, areas);
	if (drain_event(nd, EV_BCS))
		nd_mb_arrived(nd);
	nd_mb_timers(nd);
	for (unsigned k = 0; k < GM_BCS_BULK_EVS; k++)
		for (int ev; (ev = sn_event_take(nd->sn, EV_BCS_BULK0 + k, NULL)) != 0;)
			nd_bcs_bulk_sent(nd, k, ev < 0);
	nd_copy_pump(nd);
	if (drain_event(nd, EV_REPORT_ACK)) {
		/* verified and used in a private copy (gm_copy) */
		uint8_t v[sizeof(struct report_ack) + GM_TAG_LEN];
		memcpy(v, nd->gmem + GM_VAR_REPORT_ACK, sizeof(v));
		struct report_ack a;
		memcpy(&a, v, sizeof(a));
		if (!gm_mac_ok(nd->key, GM_MAC_ACK, nd->index, v, sizeof(a), v + sizeof(a))) {
			nd_log_refused(nd, "report ack %" PRIu64 " has a bad tag (forged or "
					   "altered); refused", a.seq);
		} else if (a.seq > nd->acked && a.seq <= nd->report_seq) {
			nd->acked = a.seq; /* an older one (a replay) changes nothing */
			nd_timed_clock_sample(nd, &a);
		}
	}
	nd_report_flush(nd);
	nd_timers(nd);
	nd_strobe_watch(nd);
	nd_bcs_timers(nd);
	if (!nd->pipes_paused && nd->q_bytes >= ND_OUTPUT_CAP) {
		slog("%zu bytes of output wait for reports; pausing rank pipes",
		       nd->q_bytes);
		nd_pipes_pause(nd, true);
	}
	else if (nd->pipes_paused && nd->q_bytes < ND_OUTPUT_CAP / 2)
		nd_pipes_pause(nd, false);
	/* a strict switch in this turn may have read a SIGCHLD off the
	 * signalfd: reap now, not at the next wake-up */
	reap_if_signalled(nd);
	if (nd->stop)
		ev_stop(nd->loop);
}

/* whole: the start-up steps in the order they must run, each a few lines on nd */
static int setup(struct nd *nd, const struct opts *o)
{
	char err[512];
	if (conf_load(o->conf, &nd->conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "stormnd: error: %s\n", err);
		return -1;
	}
	int idx = conf_node_index(&nd->conf, o->name);
	if (idx < 0) {
		fprintf(stderr, "stormnd: error: node '%s' is not listed in %s\n", o->name,
			o->conf);
		return -1;
	}
	nd->index = (uint32_t)idx;
	nd->root = geteuid() == 0;
	if (sodium_init() < 0)
		snprintf(err, sizeof(err), "libsodium cannot initialise");
	else if (gm_key_load(nd->conf.key_file, nd->key, err, sizeof(err)) == 0)
		err[0] = '\0';
	if (err[0]) {
		fprintf(stderr, "stormnd: error: %s\n", err);
		return -1;
	}
	/* room for "/jobs/<20 digits>/<63-char file name>" below it */
	int n = snprintf(nd->state_dir, sizeof(nd->state_dir), "%s/%s", nd->conf.state_dir,
			 o->name);
	if (n < 0 || (size_t)n + 100 >= sizeof(nd->state_dir)) {
		fprintf(stderr, "stormnd: error: state directory %s/%s is too long\n",
			nd->conf.state_dir, o->name);
		return -1;
	}
	memcpy(nd->jobs_dir, nd->state_dir, (size_t)n);
	memcpy(nd->jobs_dir + n, "/jobs", 6);
	umask(022); /* what ranks inherit; job directories are 0700 anyway */
	/* users must reach their own 0700 job directories below these */
	if (mkdir_p(nd->jobs_dir, 0711) < 0) {
		fprintf(stderr, "stormnd: error: cannot create state directory %s: %s\n",
			nd->jobs_dir, strerror(errno));
		return -1;
	}
	nd_ranks_recover(nd);
	nd_jobs_dir_clean(nd);
	if (o->realtime)
		go_realtime();
	else
		go_favoured();

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* gang switches stop and continue ranks all the time: no SIGCHLD for that
	 * (a strict switch asks for it while it waits) */
	sigchld_notify(false);
	if (nd_gang_init(nd) < 0 || nd_ckpt_init(nd) < 0)
		return -1;
	fault_init(&nd->fault, nd->name);
	if (fault_armed(&nd->fault))
		slog("test hook STORM_TEST_TAMPER=%s", getenv("STORM_TEST_TAMPER"));
	nd->clock_skew_ns = fault_value(&nd->fault, "clock_skew_us") * 1000;
	const char *trace = getenv("STORM_TRACE");
	if (trace && *trace) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s.trace", trace, nd->name);
		if (!(nd->trace = fopen(path, "w")))
			slog("cannot write the trace %s: %s", path, strerror(errno));
	}
	nd->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	nd->loop = ev_loop_new();
	if (nd->sigfd < 0 || !nd->loop || ev_io_add(nd->loop, nd->sigfd, EPOLLIN, on_signalfd, nd) < 0) {
		fprintf(stderr, "stormnd: error: cannot create signalfd or epoll: %s\n",
			strerror(errno));
		return -1;
	}
	if (nd_timed_init(nd) < 0)
		return -1;

	struct sn_config sc;
	sn_config_defaults(&sc);
	sc.provider = nd->conf.provider;
	sc.sys_provider = nd->conf.sys_provider[0] ? nd->conf.sys_provider : NULL;
	sc.node_id = fabric_id(nd->index);
	sc.node_count = (uint32_t)nd->conf.nnodes + 1;
	sc.gmem_size = layout_gmem_size((uint32_t)nd->conf.nnodes);
	/* a strobe is copied and checked every slice: only what one can hold */
	nd->strobe_len = strobe_size((uint32_t)nd->conf.nnodes,
				     strobe_ahead_fit((uint32_t)nd->conf.nnodes, STROBE_AHEAD_MAX));
	sc.fanout = nd->conf.fanout;
	sc.timeout_ms = nd->conf.op_timeout_ms;
	const char **hosts = NULL;
	char mm_host[256], mm_port[16];
	bool by_mm = !strcmp(nd->conf.bootstrap, "mm");
	if (by_mm) {
		sc.bootstrap = "external"; /* boot.c hands the addresses in */
	} else if (!strncmp(nd->conf.bootstrap, "static:", 7)) {
		sc.bootstrap = nd->conf.bootstrap;
		conf_address(nd->conf.mm_address, mm_host, sizeof(mm_host), mm_port, sizeof(mm_port));
		if (!(hosts = calloc(sc.node_count, sizeof(*hosts))))
			return -1;
		hosts[MM_FABRIC_ID] = mm_host;
		for (int i = 0; i < nd->conf.nnodes; i++)
			hosts[fabric_id((uint32_t)i)] = nd->conf.nodes[i];
		sc.hosts = hosts;
	} else {
		sc.bootstrap = nd->conf.bootstrap;
	}
	int rc = sn_open(&sc, &nd->sn);
	free(hosts);
	if (rc < 0) {
		fprintf(stderr, "stormnd: error: cannot open the network: %s\n", sn_open_error());
		return -1;
	}
	nd->gmem = sn_gmem(nd->sn);
	if (nd_mb_init(nd, sc.chunk_size) < 0 || nd_bcs_init(nd) < 0 || nd_pmi_init(nd) < 0) {
		fprintf(stderr, "stormnd: error: out of memory\n");
		return -1;
	}
	nd_copy_init(nd);
	int wfd = sn_wait_fd(nd->sn);
	/* the fabric's limit last: it arms the wait descriptor */
	if ((wfd >= 0 && ev_io_add(nd->loop, wfd, EPOLLIN, on_fabric, nd) < 0) ||
	    ev_limit_add(nd->loop, rank_timer_limit, nd) < 0 ||
	    ev_limit_add(nd->loop, bcs_limit, nd) < 0 || ev_limit_add(nd->loop, copy_limit, nd) < 0 ||
	    ev_limit_add(nd->loop, mb_limit, nd) < 0 ||
	    ev_limit_add(nd->loop, fabric_limit, nd) < 0 || ev_turn_add(nd->loop, on_turn, nd) < 0) {
		fprintf(stderr, "stormnd: error: event loop: %s\n", strerror(errno));
		return -1;
	}
	/* a node daemon silent for down_after_ms fails its jobs: its log must
	 * say why it stood still */
	if (stall_watch(STALL_MS) < 0)
		slog("running without a stall watcher: %s", strerror(errno));
	if (by_mm && nd_boot_start(nd) < 0)
		return -1;
	slog("node %u of %d up (fabric id %u, provider %s, %s, %s)", nd->index,
	       nd->conf.nnodes, fabric_id(nd->index), sn_provider_name(nd->sn, 0),
	       wfd >= 0 ? "sleeps on its wait fd" : "no wait fd: polls every 1 ms",
	       sn_rail_rma(nd->sn, 0) ? "transfers by RMA write" : "transfers by message");
	return 0;
}

static void run(struct nd *nd)
{
	if (ev_run(nd->loop) < 0)
		slog("epoll_wait: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	if (parse_args(argc, argv, &o) < 0)
		return 2;
	struct nd nd = {.name = o.name, .sigfd = -1, .ahead_fd = -1, .file_fd = -1, .fabric_busy = true};
	struct timespec start;
	clock_gettime(CLOCK_REALTIME, &start);
	nd.incarnation = (uint64_t)start.tv_sec * 1000000000u + (uint64_t)start.tv_nsec;
	char ident[96];
	snprintf(ident, sizeof(ident), "stormnd[%s]", o.name ? o.name : "?");
	log_set_ident(ident);
	int status = 0;
	if (setup(&nd, &o) < 0) {
		status = 1;
	} else {
		run(&nd);
		nd_kill_all(&nd);
		slog("stopped");
		if (nd.boot_refused)
			status = 1;
	}
	nd_boot_close(&nd);
	nd_ckpt_close(&nd);
	nd_copy_close(&nd);
	nd_files_close(&nd);
	nd_queue_free(&nd);
	if (nd.loop)
		nd_timed_close(&nd);
	nd_gang_close(&nd);
	nd_bcs_close(&nd);
	nd_pmi_close(&nd);
	nd_mb_close(&nd);
	if (nd.trace)
		fclose(nd.trace);
	sn_close(nd.sn);
	if (nd.loop)
		ev_loop_free(nd.loop);
	if (nd.sigfd >= 0)
		close(nd.sigfd);
	conf_free(&nd.conf);
	gm_copy_free(&nd.verify);
	return status;
}
