/* stormnd: the node daemon's start-up, event loop, strobes and commands. */
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
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sodium.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"
#include "nd.h"

static const char usage[] =
	"usage: stormnd -c CONF -n NODENAME [--no-realtime]\n"
	"\n"
	"The storm node daemon: follows the machine manager's strobes, runs the\n"
	"ranks of jobs on this node and reports their output and exits.\n"
	"\n"
	"  -c, --config CONF    storm.conf to read\n"
	"  -n, --name NODENAME  this node's name, as listed in [nodes] names\n"
	"      --no-realtime    do not try SCHED_FIFO priority 1\n"
	"  -h, --help           this text\n";

/* Does the ring slot hold a command the MM tagged? Its length in *len. */
static bool slot_genuine(struct nd *nd, const uint8_t *slot, uint32_t *len)
{
	memcpy(len, slot, 4);
	if (*len == 0 || *len > GM_CMD_SLOT_SIZE - 4 - GM_TAG_LEN)
		return false;
	return gm_mac_ok(nd->key, GM_MAC_CMD, GM_MAC_ANY_NODE, slot, 4 + *len, slot + 4 + *len);
}

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

static void act(struct nd *nd, const Storm__Cl__Command *cmd)
{
	size_t k;
	for (k = 0; k < cmd->n_nodes; k++)
		if (cmd->nodes[k] == nd->index)
			break;
	if (k == cmd->n_nodes)
		return; /* not addressed to this node */
	switch (cmd->body_case) {
	case STORM__CL__COMMAND__BODY_LAUNCH:
		nd_launch(nd, cmd, k);
		break;
	case STORM__CL__COMMAND__BODY_SIGNAL:
		nd_signal_job(nd, cmd->signal);
		break;
	case STORM__CL__COMMAND__BODY_CHECKPOINT:
		nd_checkpoint(nd, cmd->checkpoint);
		break;
	case STORM__CL__COMMAND__BODY_SHUTDOWN:
		slog("shutdown requested by the MM");
		nd->stop = true;
		break;
	default:
		slog("command %u has no body; ignored", cmd->seq);
	}
}

/* Acts on the ring's commands in sequence order, as far as they arrived. */
static void process_commands(struct nd *nd)
{
	while (nd->seen_strobe && !nd->stop) {
		uint32_t want = nd->cmd_done + 1;
		uint8_t *slot = nd->gmem + GM_CMD_SLOT(want);
		uint32_t len;
		memcpy(&len, slot, 4);
		if (len == 0)
			return; /* not arrived yet (consumed slots are zeroed) */
		if (!slot_genuine(nd, slot, &len)) {
			/* forged or altered: never acted on, never skipped over
			 * (skipping would let a forger cancel commands); the MM's
			 * genuine command overwrites it */
			if (nd->cmd_refused_seq != want)
				nd_log_refused(nd, "command slot for %u: %u bytes with a bad tag "
						   "(forged or altered); refused", want, len);
			nd->cmd_refused_seq = want;
			return;
		}
		Storm__Cl__Command *cmd = nd_command_decode(slot, &len);
		if (!cmd) {
			slog("command slot for %u is malformed (length %u); skipped", want,
			       len);
		} else if (cmd->seq > want && cmd->seq - want < GM_CMD_SLOTS * 1024u) {
			/* the slot was reused: commands want..seq-1 were overwritten
			 * before we looked (we were stopped or cut off); they are lost
			 * to us, and waiting for them would stall the ring for good */
			slog("commands %u..%u were overwritten before this node read them; "
				   "skipping to %u", want, cmd->seq - 1, cmd->seq);
			storm__cl__command__free_unpacked(cmd, NULL);
			nd->cmd_done = cmd->seq - 1;
			continue;
		} else if (cmd->seq != want) {
			/* an older command (a replay, or the slot's previous use) */
			if (nd->cmd_warned_seq != cmd->seq)
				slog("command slot for %u holds command %u; waiting", want,
				       cmd->seq);
			nd->cmd_warned_seq = cmd->seq;
			storm__cl__command__free_unpacked(cmd, NULL);
			return;
		} else {
			act(nd, cmd);
			storm__cl__command__free_unpacked(cmd, NULL);
		}
		/* zeroed so an old command is never taken for a new one; the MM
		 * reuses the slot only after we report cmd_done >= want */
		memset(slot, 0, 4);
		nd->cmd_done = want;
	}
}

/* ---- strobes */

static bool slot_holds(struct nd *nd, uint32_t seq);

/* Commands cmd_done+1..last_sent missing from the ring while a later one is
 * there were never sent to this node (it was not UP for the MM: the MM sends
 * the next command once every UP node holds the last). After a DOWN spell
 * (rejoined) none of the missing ones will come, even with no later one
 * here. Either way: continue at the first that did arrive, else after
 * last_sent. */
static void skip_unsent_commands(struct nd *nd, uint32_t last_sent, bool rejoined)
{
	uint32_t want = nd->cmd_done + 1, len;
	if (want > last_sent)
		return;
	memcpy(&len, nd->gmem + GM_CMD_SLOT(want), 4);
	if (len && !rejoined)
		return; /* it is there (or its slot's older command, to wait out) */
	uint32_t from = last_sent - want >= GM_CMD_SLOTS ? last_sent - GM_CMD_SLOTS + 1 : want;
	uint32_t resume = rejoined ? last_sent + 1 : 0;
	for (uint32_t q = from; q <= last_sent; q++)
		if (slot_holds(nd, q)) {
			resume = q;
			break;
		}
	if (!resume)
		return; /* the next one is on its way */
	if (rejoined)
		slog("back after missing more than %u strobes; commands %u..%u never "
			   "reached this node, continuing after them",
		       nd->conf.down_after, want, resume - 1);
	else
		slog("commands %u..%u were not sent to this node (it was not UP for the "
			   "MM); continuing at %u", want, resume - 1, resume);
	nd->cmd_done = resume - 1;
	process_commands(nd);
}

/* Does the ring slot of seq hold command seq? */
static bool slot_holds(struct nd *nd, uint32_t seq)
{
	uint32_t len;
	uint8_t *slot = nd->gmem + GM_CMD_SLOT(seq);
	if (!slot_genuine(nd, slot, &len))
		return false;
	Storm__Cl__Command *cmd = nd_command_decode(slot, &len);
	bool holds = cmd && cmd->seq == seq;
	if (cmd)
		storm__cl__command__free_unpacked(cmd, NULL);
	return holds;
}

/* The MM restarted (its strobes carry a new epoch): its command numbers,
 * file chunk numbers and slices start over. What the old one left in the
 * ring is dropped; the jobs, their ranks and the queued records stay, and
 * the reports continue (the MM takes any sequence above what it acked). */
static void mm_restarted(struct nd *nd, const struct strobe *s)
{
	slog("the machine manager restarted (new epoch at its slice %" PRIu64
		   "); commands from %u", s->slice, s->cmd_seq + 1);
	for (uint32_t q = 0; q < GM_CMD_SLOTS; q++)
		memset(nd->gmem + GM_CMD_SLOT(q), 0, 4);
	nd->cmd_done = s->cmd_seq;
	nd->cmd_warned_seq = 0;
	nd->slice = 0;
	nd_files_close(nd);
	for (int b = 0; b < 2; b++) {
		nd->file_seq[b] = 0;
		sn_var_store(nd->sn, GM_VAR_FILE_DONE(b), 0);
	}
}

static void on_strobe(struct nd *nd)
{
	struct strobe s;
	uint64_t ack, run;
	if (nd_strobe_read(nd->gmem + GM_STROBE, nd->index, &s, &ack, &run) < 0 ||
	    s.nnodes != (uint32_t)nd->conf.nnodes) {
		nd_log_refused(nd, "strobe %" PRIu64 " claims %u nodes, the cluster has %d; refused",
			       s.slice, s.nnodes, nd->conf.nnodes);
		return;
	}
	const uint8_t *raw = nd->gmem + GM_STROBE;
	if (!gm_mac_ok(nd->key, GM_MAC_STROBE, GM_MAC_ANY_NODE, raw, strobe_signed_size(s.nnodes),
		       raw + strobe_signed_size(s.nnodes))) {
		nd_log_refused(nd, "strobe %" PRIu64 " has a bad tag (forged or altered); refused",
			       s.slice);
		return;
	}
	/* strobes come down the tree or, to a late node, straight from the MM:
	 * an older one can land after a newer one, and its acknowledgements
	 * would look like the MM going back (then a report would be renumbered
	 * onto one already consumed, and lost) */
	if (nd->seen_strobe && s.epoch < nd->mm_epoch) {
		/* epochs only grow (db_next_epoch): an earlier MM's strobe */
		nd_log_refused(nd, "strobe %" PRIu64 " is from an earlier machine manager: "
				   "replayed; refused", s.slice);
		return;
	}
	if (nd->seen_strobe && s.epoch != nd->mm_epoch)
		mm_restarted(nd, &s);
	nd->mm_epoch = s.epoch;
	if (nd->seen_strobe && s.slice <= nd->slice) {
		/* the tree and a direct send can reorder by one or two slices;
		 * anything older is a replay */
		if (s.slice + 8 < nd->slice)
			nd_log_refused(nd, "strobe %" PRIu64 " is older than the last one (%" PRIu64
					   "): replayed; refused", s.slice, nd->slice);
		return;
	}
	if (!nd->seen_strobe) {
		nd->seen_strobe = true;
		/* earlier commands went out before this node was up */
		if (nd->cmd_done == 0)
			nd->cmd_done = s.cmd_seq;
		slog("first strobe: slice %" PRIu64 ", commands from %u", s.slice,
		       nd->cmd_done + 1);
	}
	uint64_t t_recv = clock_mono_ns();
	bool rejoined = nd->slice && s.slice > nd->slice + nd->conf.down_after;
	if (nd->slice && s.slice > nd->slice + 1)
		nd->missed_strobes += s.slice - nd->slice - 1;
	nd->slice = s.slice;
	process_commands(nd);
	skip_unsent_commands(nd, s.cmd_seq, rejoined);
	if (nd->helpers)
		nd_ckpt_poll(nd);
	nd->strobe_cmd_seq = s.cmd_seq;
	/* a checkpoint learns first that its job is named to run: it may
	 * have been given up, and then the job runs at once */
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->id == run && (j->ckpt_busy || j->ckpt_frozen))
			nd_ckpt_running(nd, j);
	int switched = nd_gang_apply(nd, run);
	nd_bcs_strobe(nd);
	if (nd->trace) {
		/* slice, the MM's switch count, when it came, when the switch was done */
		fprintf(nd->trace, "strobe %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d\n",
			s.slice, s.switches, t_recv, switched ? clock_mono_ns() : 0, switched);
	}
	nd->switches = s.switches;
	if (nd->cg_pending)
		nd_gang_timers(nd);
	nd_report(nd, ack);
}

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

static void go_realtime(void)
{
	/* reset on fork: the ranks must not inherit the daemon's priority */
	struct sched_param sp = {.sched_priority = 1};
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		slog("running without real-time priority: SCHED_FIFO refused: %s",
		       strerror(errno));
}

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

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* gang switches stop and continue ranks all the time: no SIGCHLD for that */
	struct sigaction chld = {.sa_handler = SIG_DFL, .sa_flags = SA_NOCLDSTOP};
	sigaction(SIGCHLD, &chld, NULL);
	if (nd_gang_init(nd) < 0 || nd_ckpt_init(nd) < 0)
		return -1;
	fault_init(&nd->fault, nd->name);
	if (fault_armed(&nd->fault))
		slog("test hook STORM_TEST_TAMPER=%s", getenv("STORM_TEST_TAMPER"));
	const char *trace = getenv("STORM_TRACE");
	if (trace && *trace) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s.trace", trace, nd->name);
		if (!(nd->trace = fopen(path, "w")))
			slog("cannot write the trace %s: %s", path, strerror(errno));
	}
	nd->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	nd->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (nd->sigfd < 0 || nd->epfd < 0) {
		fprintf(stderr, "stormnd: error: cannot create signalfd or epoll: %s\n",
			strerror(errno));
		return -1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ND_TAG_SIG};
	epoll_ctl(nd->epfd, EPOLL_CTL_ADD, nd->sigfd, &ev);

	struct sn_config sc;
	sn_config_defaults(&sc);
	sc.provider = nd->conf.provider;
	sc.sys_provider = nd->conf.sys_provider[0] ? nd->conf.sys_provider : NULL;
	sc.node_id = fabric_id(nd->index);
	sc.node_count = (uint32_t)nd->conf.nnodes + 1;
	sc.gmem_size = layout_gmem_size((uint32_t)nd->conf.nnodes);
	sc.bootstrap = nd->conf.bootstrap;
	sc.fanout = nd->conf.fanout;
	sc.timeout_ms = nd->conf.op_timeout_ms;
	int rc = sn_open(&sc, &nd->sn);
	if (rc < 0) {
		fprintf(stderr, "stormnd: error: cannot open the network: %s\n", sn_open_error());
		return -1;
	}
	nd->gmem = sn_gmem(nd->sn);
	if (nd_bcs_init(nd, sc.chunk_size) < 0) {
		fprintf(stderr, "stormnd: error: out of memory\n");
		return -1;
	}
	int wfd = sn_wait_fd(nd->sn);
	if (wfd >= 0) {
		ev.data.u64 = ND_TAG_SN;
		epoll_ctl(nd->epfd, EPOLL_CTL_ADD, wfd, &ev);
	}
	slog("node %u of %d up (fabric id %u, provider %s, %s)", nd->index,
	       nd->conf.nnodes, fabric_id(nd->index), sn_provider_name(nd->sn, 0),
	       wfd >= 0 ? "sleeps on its wait fd" : "no wait fd: polls every 1 ms");
	return 0;
}

static void on_signals(struct nd *nd)
{
	struct signalfd_siginfo si;
	while (read(nd->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			nd_reap(nd);
		} else {
			slog("%s received; shutting down", strsignal((int)si.ssi_signo));
			nd->stop = true;
		}
	}
	/* SIGCHLDs coalesce; reap whatever ended, signalled or not */
	nd_reap(nd);
}

static int drain_event(struct nd *nd, unsigned ev)
{
	int n = 0, rc;
	while ((rc = sn_test_event(nd->sn, ev, 0, NULL)) != 0) {
		if (rc < 0) {
			slog("event %u carries an error: %s", ev, sn_strerror(nd->sn));
			continue;
		}
		n++;
	}
	return n;
}

static void run(struct nd *nd)
{
	struct epoll_event evs[64];
	bool busy = true;
	bool have_wait_fd = sn_wait_fd(nd->sn) >= 0;
	while (!nd->stop) {
		int timeout = -1;
		if (!have_wait_fd || sn_prepare_wait(nd->sn) < 0)
			timeout = busy ? 0 : 1; /* progress is due, or must be polled */
		int t = sn_next_timeout_ms(nd->sn);
		if (t >= 0 && (timeout < 0 || t < timeout))
			timeout = t;
		t = nd_timer_ms(nd);
		if (t >= 0 && (timeout < 0 || t < timeout))
			timeout = t;
		t = nd_bcs_timer_ms(nd);
		if (t >= 0 && (timeout < 0 || t < timeout))
			timeout = t;
		t = nd_copy_timer_ms(nd);
		if (t >= 0 && (timeout < 0 || t < timeout))
			timeout = t;
		int n = epoll_wait(nd->epfd, evs, 64, timeout);
		if (n < 0 && errno != EINTR) {
			slog("epoll_wait: %s", strerror(errno));
			break;
		}
		/* pipes first: reaping may free a job whose pipes are in evs */
		bool signalled = false;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == ND_TAG_SIG)
				signalled = true;
			else if (evs[i].data.u64 != ND_TAG_SN)
				nd_pipe_readable(nd, evs[i].data.ptr);
		}
		if (signalled)
			on_signals(nd);
		int rc = sn_progress(nd->sn);
		if (rc < 0)
			slog("network progress: %s", sn_strerror(nd->sn));
		busy = rc > 0;
		for (int b = 0; b < 2; b++) {
			int files = drain_event(nd, EV_FILE(b));
			if (files)
				nd_files_arrived(nd, b, files);
		}
		if (drain_event(nd, EV_CMD))
			process_commands(nd);
		/* several strobes since the last turn: the latest one counts */
		if (drain_event(nd, EV_STROBE))
			on_strobe(nd);
		if (drain_event(nd, EV_BCS))
			nd_bcs_arrived(nd);
		nd_copy_pump(nd);
		if (drain_event(nd, EV_REPORT_ACK)) {
			const uint8_t *v = nd->gmem + GM_VAR_REPORT_ACK;
			uint64_t ack;
			memcpy(&ack, v, 8);
			if (!gm_mac_ok(nd->key, GM_MAC_ACK, nd->index, v, 8, v + 8))
				nd_log_refused(nd, "report ack %" PRIu64 " has a bad tag (forged or "
						   "altered); refused", ack);
			else if (ack > nd->acked && ack <= nd->report_seq)
				nd->acked = ack; /* an older one (a replay) changes nothing */
		}
		nd_report_flush(nd);
		nd_timers(nd);
		nd_bcs_timers(nd);
		if (!nd->pipes_paused && nd->q_bytes >= ND_OUTPUT_CAP) {
			slog("%zu bytes of output wait for reports; pausing rank pipes",
			       nd->q_bytes);
			nd_pipes_pause(nd, true);
		}
		else if (nd->pipes_paused && nd->q_bytes < ND_OUTPUT_CAP / 2)
			nd_pipes_pause(nd, false);
	}
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	if (parse_args(argc, argv, &o) < 0)
		return 2;
	struct nd nd = {.name = o.name, .epfd = -1, .sigfd = -1, .file_fd = -1};
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
	}
	nd_ckpt_close(&nd);
	nd_copy_close(&nd);
	nd_files_close(&nd);
	nd_queue_free(&nd);
	nd_gang_close(&nd);
	nd_bcs_close(&nd);
	if (nd.trace)
		fclose(nd.trace);
	sn_close(nd.sn);
	if (nd.epfd >= 0)
		close(nd.epfd);
	if (nd.sigfd >= 0)
		close(nd.sigfd);
	conf_free(&nd.conf);
	return status;
}
