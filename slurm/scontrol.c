/* scontrol on storm, its read-only part: show job, node, partition and
 * config as Slurm's KEY=VALUE records, and show hostnames/hostlist, from
 * the machine manager's lists and the cluster's storm.conf. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fmt.h"
#include "hostlist.h"
#include "slurm.h"

static const char help[] =
	"Usage: scontrol [-o] [-d] show ENTITY [ID]\n"
	"\n"
	"Slurm's scontrol on a storm cluster, what it shows:\n"
	"  show job [JOB]        a job (or every one) as KEY=VALUE (also: show jobid)\n"
	"  show node [NAME]      a node (or every one)\n"
	"  show partition [P]    the cluster's one partition\n"
	"  show config           the cluster's configuration\n"
	"  show hostnames LIST   node[00-03] as one name a line (LIST default:\n"
	"                        $SLURM_JOB_NODELIST)\n"
	"  show hostlist A,B,... names as node[00-03]\n"
	"\n"
	"  -o, --oneliner   a record on one line\n"
	"  -d, --details    taken (-dd too)\n"
	"  -Q, --quiet, -v, --verbose  taken\n"
	"      --conf FILE  the cluster's storm.conf\n"
	"  -h, --help       this help\n"
	"\n"
	"Ignored with a warning: -M/--clusters.\n"
	"Refused with one line: every other command (update, hold, release,\n"
	"requeue, suspend, ...); storm changes jobs through storm(1).\n";

enum { O_ONE = 1, O_DETAIL, O_QUIET, O_CONF, O_HELP };
static const struct cli_opt opts[] = {
	{ "oneliner", 'o', 0, O_ONE }, { "details", 'd', 0, O_DETAIL },
	{ "quiet", 'Q', 0, O_QUIET },  { "verbose", 'v', 0, O_QUIET },
	{ "conf", 0, 1, O_CONF },      { "help", 'h', 0, O_HELP },
	{ "clusters", 'M', 1, SL_IGNORE }, { NULL, 0, 0, 0 },
};

static bool oneline;

/* Records: "Key=Value" items, lines of them indented three spaces. */
static void item(bool first_of_line, bool first, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void item(bool first_of_line, bool first, const char *fmt, ...)
{
	va_list ap;
	if (!first)
		fputs(oneline || !first_of_line ? " " : "\n   ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

static void time_of(double t, char *o, size_t l)
{
	if (t <= 0) {
		snprintf(o, l, "Unknown");
		return;
	}
	time_t s = (time_t)t;
	struct tm tm;
	localtime_r(&s, &tm);
	strftime(o, l, "%Y-%m-%dT%H:%M:%S", &tm);
}

static void show_job(const struct sl_row *v)
{
	const struct job_row *r = &v->r;
	char sub[32], st[32], en[32], run[32], limit[32] = "UNLIMITED";
	time_of(r->submit, sub, sizeof(sub));
	time_of(r->start, st, sizeof(st));
	time_of(r->end, en, sizeof(en));
	fmt_hms(r->start > 0 ? (r->end > 0 ? r->end : r->now) - r->start : 0, run, sizeof(run));
	if (r->time_limit)
		fmt_hms(r->time_limit, limit, sizeof(limit));
	const char *us = strchr(r->jobid, '_');
	item(true, true, "JobId=%s", r->jobid_raw);
	if (us)
		item(false, false, "ArrayJobId=%.*s ArrayTaskId=%s", (int)(us - r->jobid), r->jobid,
		     us + 1);
	item(false, false, "JobName=%s", r->name);
	item(true, false, "UserId=%s(%u) GroupId=(null) MCS_label=N/A", r->user, r->uid);
	item(true, false, "Priority=1 Nice=0 Account=%s QOS=normal", r->account);
	item(true, false, "JobState=%s Reason=%s Dependency=(null)", r->slurm_state,
	     r->state == STORM__CTL__JOB_STATE__QUEUED && r->reason[0] ? "Priority" : "None");
	item(true, false, "Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=%s", v->exit);
	item(true, false, "RunTime=%s TimeLimit=%s TimeMin=N/A", run, limit);
	item(true, false, "SubmitTime=%s EligibleTime=%s", sub, sub);
	item(true, false, "StartTime=%s EndTime=%s Deadline=N/A", st, r->end > 0 ? en : "Unknown");
	item(true, false, "Partition=%s", r->partition);
	item(true, false, "NodeList=%s", r->nodelist[0] ? r->nodelist : "(null)");
	item(true, false, "NumNodes=%u NumCPUs=%u NumTasks=%u CPUs/Task=1", r->nodes, r->ranks,
	     r->ranks);
	if (r->reason[0])
		item(true, false, "Comment=%s", r->reason); /* storm's own words, for people */
	fputs(oneline ? "\n" : "\n\n", stdout);
}

static int jobs(struct cli *c, const char *id)
{
	struct sl_jobs j;
	int rc = sl_jobs_load(c, true, true, &j), shown = 0;
	if (rc != EXIT_OK)
		return rc;
	for (size_t i = 0; i < j.n; i++) {
		const struct sl_row *v = &j.v[i];
		if (v->batch || v->step || (id && !sl_row_matches_id(v, id)))
			continue;
		if (!id && v->r.end > 0)
			continue; /* scontrol keeps jobs a short while after they end */
		show_job(v);
		shown++;
	}
	sl_jobs_free(&j);
	if (id && !shown) {
		fprintf(stderr, "slurm_load_jobs error: Invalid job id specified\n");
		return EXIT_STORM;
	}
	if (!shown)
		puts("No jobs in the system");
	return EXIT_OK;
}

static int nodes(struct cli *c, const char *name)
{
	int rc, shown = 0;
	Storm__Ctl__Reply *rep = sl_nodes(c, &rc);
	if (!rep)
		return rc;
	for (size_t i = 0; i < rep->nodes->n_nodes; i++) {
		const Storm__Ctl__NodeInfo *nd = rep->nodes->nodes[i];
		if (name && strcmp(name, nd->name))
			continue;
		const char *st = nd->state == STORM__CTL__NODE_STATE__DOWN ? "DOWN*"
				 : nd->state != STORM__CTL__NODE_STATE__UP ? "UNKNOWN*"
				 : nd->n_jobs ? "ALLOCATED" : "IDLE";
		item(true, true, "NodeName=%s Arch=(null) CoresPerSocket=%u", nd->name, nd->cpus);
		item(true, false, "CPUAlloc=%u CPUTot=%u CPULoad=N/A",
		     nd->n_jobs ? nd->cpus : 0, nd->cpus);
		item(true, false, "NodeAddr=%s NodeHostName=%s", nd->name, nd->name);
		item(true, false, "State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1", st);
		item(true, false, "Partitions=%s", c->conf.name[0] ? c->conf.name : "storm");
		item(true, false, "LastBusyTime=Unknown");
		fputs(oneline ? "\n" : "\n\n", stdout);
		shown++;
	}
	ctl_reply_free(rep);
	if (name && !shown) {
		fprintf(stderr, "Node %s not found\n", name);
		return EXIT_STORM;
	}
	return EXIT_OK;
}

static int partition(struct cli *c, const char *name)
{
	int rc;
	Storm__Ctl__Reply *rep = sl_nodes(c, &rc);
	if (!rep)
		return rc;
	const char *part = c->conf.name[0] ? c->conf.name : "storm";
	if (name && strcmp(name, part)) {
		ctl_reply_free(rep);
		fprintf(stderr, "Partition %s not found\n", name);
		return EXIT_STORM;
	}
	size_t n = rep->nodes->n_nodes;
	const char **names = calloc(n + 1, sizeof(char *));
	char *list = malloc(n * HOSTNAME_MAX + 16);
	unsigned cpus = 0;
	for (size_t i = 0; names && i < n; i++) {
		names[i] = rep->nodes->nodes[i]->name;
		cpus += rep->nodes->nodes[i]->cpus;
	}
	if (names && list) {
		hostlist_compress(names, (int)n, list, n * HOSTNAME_MAX + 16);
		item(true, true, "PartitionName=%s", part);
		item(true, false, "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL");
		item(true, false, "Default=YES State=UP MaxTime=UNLIMITED");
		item(true, false, "Nodes=%s", list);
		item(true, false, "TotalCPUs=%u TotalNodes=%zu", cpus, n);
		fputs(oneline ? "\n" : "\n\n", stdout);
	}
	free(names);
	free(list);
	ctl_reply_free(rep);
	return names && list ? EXIT_OK : EXIT_STORM;
}

static int config(struct cli *c)
{
	if (cli_load_conf(c) != 0)
		return EXIT_STORM;
	char now[32];
	time_of(sl_now(), now, sizeof(now));
	printf("Configuration data as of %s\n", now);
	printf("%-22s = %s\n", "AccountingStorageType", "accounting_storage/storm");
	printf("%-22s = %s\n", "ClusterName", c->conf.name);
	printf("%-22s = %s\n", "SchedulerType", "sched/storm-gang");
	printf("%-22s = %u\n", "SchedulerTimeSlice", c->conf.timeslice_us);
	printf("%-22s = %u sec\n", "KillWait", c->conf.kill_wait_ms / 1000);
	printf("%-22s = %s\n", "SLURM_CONF", c->conf_path);
	printf("%-22s = %s\n", "SLURM_VERSION", "22.05 (storm)");
	printf("%-22s = %s\n", "StateSaveLocation", c->conf.state_dir);
	return EXIT_OK;
}

/* show hostnames / hostlist: pure, no cluster needed */
static int hostnames(const char *list)
{
	static char names[STORM_CONF_MAX_NODES][HOSTNAME_MAX];
	if (!list || !*list)
		list = getenv("SLURM_JOB_NODELIST");
	if (!list || !*list)
		return usage_error("scontrol", "show hostnames wants a node list");
	int n = hostlist_expand(list, names, STORM_CONF_MAX_NODES, NULL, 0);
	if (n < 0)
		return usage_error("scontrol", "'%s' is not a node list", list);
	for (int i = 0; i < n; i++)
		puts(names[i]);
	return EXIT_OK;
}

static int hostlist(const char *list)
{
	static char names[STORM_CONF_MAX_NODES][HOSTNAME_MAX];
	static const char *ptr[STORM_CONF_MAX_NODES];
	static char out[STORM_CONF_MAX_NODES * HOSTNAME_MAX];
	if (!list || !*list)
		return usage_error("scontrol", "show hostlist wants names");
	int n = hostlist_expand(list, names, STORM_CONF_MAX_NODES, NULL, 0);
	if (n < 0)
		return usage_error("scontrol", "'%s' is not a node list", list);
	for (int i = 0; i < n; i++)
		ptr[i] = names[i];
	hostlist_compress(ptr, n, out, sizeof(out));
	puts(out);
	return EXIT_OK;
}

static int show(struct cli *c, const char *what, const char *id)
{
	size_t n = strlen(what);
	if (n >= 3 && !strncasecmp(what, "jobid", n))
		return jobs(c, id);
	if (n >= 1 && !strncasecmp(what, "job", n < 3 ? 3 : n) && n <= 3)
		return jobs(c, id);
	if (n >= 1 && !strncasecmp(what, "nodes", n))
		return nodes(c, id);
	if (n >= 1 && !strncasecmp(what, "partitions", n))
		return partition(c, id);
	if (n >= 1 && !strncasecmp(what, "config", n))
		return config(c);
	if (!strcasecmp(what, "hostnames"))
		return hostnames(id);
	if (!strcasecmp(what, "hostlist") || !strcasecmp(what, "hostlistsorted"))
		return hostlist(id);
	fprintf(stderr, "scontrol: error: show %s: storm shows job, node, partition, config, "
		"hostnames and hostlist\n", what);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "scontrol" };
	struct cli_optparse p;
	const char *words[3] = { NULL, NULL, NULL };
	int id, nw = 0, rc = -1;
	sl_opt_init(&p, argc, argv, 0);
	while (rc < 0 && (id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case O_ONE: oneline = true; break;
		case O_DETAIL: case O_QUIET: break;
		case O_CONF: c.conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); rc = EXIT_OK; break;
		case SL_IGNORE: sl_warn_ignored("scontrol", "", &p, "storm is one cluster"); break;
		case OPT_OPERAND:
			if (nw == 3)
				rc = usage_error("scontrol", "unexpected argument '%s'", p.arg);
			else
				words[nw++] = p.arg;
			break;
		default: rc = usage_error("scontrol", "%s", p.err); break;
		}
	}
	if (rc < 0 && (!nw || strcasecmp(words[0], "show"))) {
		fprintf(stderr, "scontrol: error: %s%s: storm's scontrol only shows (show job, "
			"node, partition, config); storm(1) changes jobs\n",
			nw ? "" : "no command", nw ? words[0] : "");
		rc = EXIT_USAGE;
	}
	if (rc < 0 && nw < 2)
		rc = usage_error("scontrol", "show what? (job, node, partition, config, hostnames)");
	if (rc < 0)
		rc = show(&c, words[1], words[2]);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
