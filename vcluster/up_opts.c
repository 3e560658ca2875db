/* storm cluster up's command line: its help, its options read into
 * struct up_opts and checked, then up or up --slurm. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "layout.h"
#include "cluster.h"
#include "fmt.h"
#include "opts.h"

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
	"      --bcs-rank-writes W  1: BCS-MPI message data between nodes goes from the\n"
	"                         sending rank's endpoint into the receiving rank where\n"
	"                         both wait in MPI (default); 0: through the daemons\n"
	"      --job-end-combined J  1: nodes whose ranks all exited 0 end a job without\n"
	"                         a report, read by the MM in one COMPARE-AND-WRITE\n"
	"                         (default); 0: every node reports its end\n"
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
	"      --up-timeout S     how long to wait for every node to come up before\n"
	"                         taking the cluster down again (1-86400; default 30\n"
	"                         plus half a second a node; a slow or emulated\n"
	"                         machine may need more)\n"
	"      --realtime         daemons at SCHED_FIFO without a guard, as on a real\n"
	"                         cluster (off: SCHED_FIFO too, but a daemon that runs\n"
	"                         0.5 s without sleeping drops to nice -10, and one\n"
	"                         over its share of a core (half the cores split\n"
	"                         among the daemons; STORM_RT_SHARE, per cent) runs at\n"
	"                         nice -10 until under half of it; ranks at nice 0)\n"
	"      --slurm            inside a Slurm allocation (salloc, sbatch): the MM on\n"
	"                         its first node and a node daemon on each of its nodes,\n"
	"                         started by srun, as the allocation's user, in\n"
	"                         /tmp/storm-slurm-$SLURM_JOB_ID on each node. With a\n"
	"                         COMMAND: runs it with STORM_CONF set, then takes the\n"
	"                         cluster down and exits with its status; without: the\n"
	"                         cluster stays up until 'storm cluster down' or the\n"
	"                         allocation's end\n"
	"  -h, --help             this help\n";

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
	{ C_UP_TIMEOUT, "--up-timeout", 1, 86400, " s", offsetof(struct up_opts, up_timeout) },
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
	{ C_RANK_WRITES, "--bcs-rank-writes", copies_names, "0 or 1", offsetof(struct up_opts, rank_writes) },
	{ C_JOB_END, "--job-end-combined", copies_names, "0 or 1", offsetof(struct up_opts, job_end) },
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

int vc_cmd_up(int argc, char **argv)
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
		{ "bcs-rank-writes", 0, 1, C_RANK_WRITES },
		{ "job-end-combined", 0, 1, C_JOB_END },
		{ "switch-wait-pct", 0, 1, C_SWITCH_WAIT }, { "slurm", 0, 0, C_SLURM },
		{ "hosts", 0, 0, C_HOSTS }, { "share", 0, 1, C_SHARE },
		{ "up-timeout", 0, 1, C_UP_TIMEOUT },
		{ NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster up";
	struct up_opts o = { .policy = -1,    .switch_mode = -1, .copies = -1,
			     .data_tags = -1, .rank_writes = -1, .job_end = -1, .ahead = -1,	 .switch_wait_pct = -1 };
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
	return o.slurm ? vc_cluster_up_slurm(&o) : vc_cluster_up(&o);
}
