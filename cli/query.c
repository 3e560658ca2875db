/* storm jobs, storm nodes, storm cancel: one request each, a table or JSON. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "jobid.h"
#include "jobtable.h"
#include "fmt.h"
#include "opts.h"

enum { Q_ALL = 1, Q_JSON, Q_SIGNAL, Q_CONF, Q_HELP, Q_FORMAT };

/* Returns 0 or the exit code of a failed print. */
static int print_json(json_t *root)
{
	int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc != 0 || fputc('\n', stdout) == EOF) {
		fprintf(stderr, "storm: error: cannot write JSON: %s\n", strerror(errno));
		return EXIT_STORM;
	}
	return 0;
}

/* ---- jobs */

static const char jobs_help[] =
	"Usage: storm jobs [--all] [--json | -o FIELDS]\n"
	"\n"
	"Lists the cluster's jobs, like squeue: queued, launching and running ones,\n"
	"with --all the finished ones too.\n"
	"\n"
	"  -a, --all      include completed, failed and cancelled jobs\n"
	"      --json     print {\"jobs\": [...]} for scripts\n"
	"  -o, --format FIELDS  these columns, comma-separated, each with an optional\n"
	"                 %WIDTH: JobID, JobName, User, UID, State, Elapsed, NodeList,\n"
	"                 NNodes, NTasks, ExitCode, Reason, Submit, Start, End,\n"
	"                 Timelimit (its -t, UNLIMITED without)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n"
	"\n"
	"Columns: JOBID NAME USER STATE NODES RANKS TIME NODELIST(REASON); TIME is the\n"
	"time since launch (to its end for finished jobs). JOBID is 12 for a job,\n"
	"12.0 for a step of allocation 12, 12_3 for task 3 of array 12.\n";

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "job" is the number the daemons use; "jobid" the id as users write it */
static json_t *job_json(const Storm__Ctl__JobInfo *j)
{
	char id[48];
	jobid_format(j->job, j->array_job, j->array_task, id, sizeof(id));
	json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:s, s:f, s:f, s:f, s:i, "
			      "s:s}",
			      "job", (json_int_t)j->job, "jobid", id, "name", j->name, "user",
			      j->user, "uid", (int)j->uid, "state", job_state_name(j->state),
			      "nodes", (int)j->nodes, "ranks", (int)j->ranks, "nodelist",
			      j->nodelist, "submit_time", j->submit_time, "start_time",
			      j->start_time, "end_time", j->end_time, "exit_status",
			      (int)j->exit_status, "reason", j->reason);
	if (jobid_is_step(j->job)) {
		json_object_set_new(o, "allocation", json_integer((json_int_t)jobid_alloc(j->job)));
		json_object_set_new(o, "step", json_integer(jobid_step_no(j->job)));
	}
	json_object_set_new(o, "time_limit", json_integer(j->time_limit)); /* seconds, 0: none */
	if (j->checkpoint_failed[0])
		json_object_set_new(o, "checkpoint_failed", json_string(j->checkpoint_failed));
	if (j->array_job) {
		json_object_set_new(o, "array_job", json_integer((json_int_t)j->array_job));
		json_object_set_new(o, "array_task", json_integer(j->array_task));
	}
	return o;
}

static int print_jobs_json(const Storm__Ctl__JobList *list)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < list->n_jobs; i++)
		json_array_append_new(arr, job_json(list->jobs[i]));
	return print_json(json_pack("{s:o}", "jobs", arr));
}

/* -o/--format: the columns asked for. */
static int print_jobs_format(const Storm__Ctl__JobList *list, const struct job_col *cols,
			     int ncol, double wall)
{
	struct job_row *rows = calloc(list->n_jobs ? list->n_jobs : 1, sizeof(*rows));
	for (size_t i = 0; rows && i < list->n_jobs; i++) {
		const Storm__Ctl__JobInfo *j = list->jobs[i];
		struct job_row *r = &rows[i];
		jobid_format(j->job, j->array_job, j->array_task, r->jobid, sizeof(r->jobid));
		r->name = j->name;
		r->user = j->user;
		r->nodelist = j->nodelist;
		r->reason = j->reason;
		r->state = j->state;
		r->uid = j->uid;
		r->nodes = j->nodes;
		r->ranks = j->ranks;
		r->submit = j->submit_time;
		r->start = j->start_time;
		r->end = j->end_time;
		r->now = wall;
		r->exit_status = j->exit_status;
		r->time_limit = j->time_limit;
	}
	if (rows)
		jobtable_print(stdout, cols, ncol, rows, list->n_jobs);
	free(rows);
	return rows ? EXIT_OK : EXIT_STORM;
}

/* The default table. */
static int print_jobs_table(const Storm__Ctl__JobList *list, double wall)
{
	/* column widths from the content, squeue-like left-aligned text */
	const char *hdr[] = { "JOBID", "NAME", "USER", "STATE", "NODES", "RANKS", "TIME",
			      "NODELIST(REASON)" };
	static const int numeric[8] = { 1, 0, 0, 0, 1, 1, 1, 0 };
	size_t n = list->n_jobs;
	char (*cells)[8][320] = calloc(n ? n : 1, sizeof(*cells));
	if (!cells) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	int w[8];
	for (int k = 0; k < 8; k++)
		w[k] = (int)strlen(hdr[k]);
	for (size_t i = 0; i < n; i++) {
		const Storm__Ctl__JobInfo *j = list->jobs[i];
		jobid_format(j->job, j->array_job, j->array_task, cells[i][0], 128);
		snprintf(cells[i][1], 128, "%s", j->name);
		snprintf(cells[i][2], 128, "%s", j->user[0] ? j->user : "?");
		snprintf(cells[i][3], 128, "%s", job_state_name(j->state));
		snprintf(cells[i][4], 128, "%u", j->nodes);
		snprintf(cells[i][5], 128, "%u", j->ranks);
		double elapsed = 0;
		if (j->start_time > 0)
			elapsed = (j->end_time > 0 ? j->end_time : wall) - j->start_time;
		fmt_elapsed(elapsed, cells[i][6], 128);
		if (j->state == STORM__CTL__JOB_STATE__QUEUED || !j->nodelist[0])
			snprintf(cells[i][7], sizeof(cells[i][7]), "(%s)",
				 j->reason[0] ? j->reason : "None");
		else if (j->reason[0] && j->state == STORM__CTL__JOB_STATE__FAILED)
			snprintf(cells[i][7], sizeof(cells[i][7]), "%s (%s)", j->nodelist, j->reason);
		else if (j->checkpoint_failed[0])
			snprintf(cells[i][7], sizeof(cells[i][7]), "%s (%s)", j->nodelist,
				 j->checkpoint_failed);
		else
			snprintf(cells[i][7], sizeof(cells[i][7]), "%s", j->nodelist);
		for (int k = 0; k < 8; k++)
			if ((int)strlen(cells[i][k]) > w[k])
				w[k] = (int)strlen(cells[i][k]);
	}
	/* numbers right-aligned, text left-aligned, the last column unpadded */
	for (int k = 0; k < 8; k++)
		printf("%*s%s", k == 7 ? 0 : numeric[k] ? w[k] : -w[k], hdr[k], k < 7 ? " " : "\n");
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 8; k++)
			printf("%*s%s", k == 7 ? 0 : numeric[k] ? w[k] : -w[k], cells[i][k],
			       k < 7 ? " " : "\n");
	free(cells);
	return EXIT_OK;
}

int cmd_jobs(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "all", 'a', 0, Q_ALL },   { "json", 0, 0, Q_JSON }, { "conf", 0, 1, Q_CONF },
		{ "help", 'h', 0, Q_HELP }, { "format", 'o', 1, Q_FORMAT }, { NULL, 0, 0, 0 },
	};
	int all = 0, json = 0, id, ncol = 0;
	struct job_col cols[JOBTABLE_MAX_COLS];
	char why[512];
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case Q_ALL: all = 1; break;
		case Q_JSON: json = 1; break;
		case Q_FORMAT:
			if (jobtable_parse(p.arg, cols, &ncol, why, sizeof(why)) < 0)
				return usage_error("storm jobs", "-o/--format: %s", why);
			break;
		case Q_CONF: c->conf_opt = p.arg; break;
		case Q_HELP: fputs(jobs_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error("storm jobs", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm jobs", "%s", p.err);
		}
	}
	Storm__Ctl__ListJobs lj = STORM__CTL__LIST_JOBS__INIT;
	lj.all = all;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_JOBS;
	req.jobs = &lj;
	int rc;
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_JOBS, &rc);
	if (!rep)
		return rc;
	Storm__Ctl__JobList *list = rep->jobs;
	if (json)
		rc = print_jobs_json(list);
	else if (ncol)
		rc = print_jobs_format(list, cols, ncol, wall_now());
	else
		rc = print_jobs_table(list, wall_now());
	ctl_reply_free(rep);
	return rc;
}

/* ---- nodes */

static const char nodes_help[] =
	"Usage: storm nodes [--json]\n"
	"\n"
	"Lists the cluster's nodes: NAME STATE CPUS JOBS. STATE is UP, DOWN (no\n"
	"report for down_after_ms) or UNKNOWN (never heard from).\n"
	"\n"
	"      --json     print {\"nodes\": [...]} for scripts\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

int cmd_nodes(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "json", 0, 0, Q_JSON }, { "conf", 0, 1, Q_CONF }, { "help", 'h', 0, Q_HELP },
		{ NULL, 0, 0, 0 },
	};
	int json = 0, id;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case Q_JSON: json = 1; break;
		case Q_CONF: c->conf_opt = p.arg; break;
		case Q_HELP: fputs(nodes_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error("storm nodes", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm nodes", "%s", p.err);
		}
	}
	Storm__Ctl__ListNodes ln = STORM__CTL__LIST_NODES__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_NODES;
	req.nodes = &ln;
	int rc;
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_NODES, &rc);
	if (!rep)
		return rc;
	Storm__Ctl__NodeList *list = rep->nodes;
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < list->n_nodes; i++) {
			const Storm__Ctl__NodeInfo *nd = list->nodes[i];
			json_t *jobs = json_array();
			for (size_t k = 0; k < nd->n_jobs; k++)
				json_array_append_new(jobs, json_integer((json_int_t)nd->jobs[k]));
			json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:o, s:f}", "name",
							     nd->name, "state",
							     node_state_name(nd->state), "cpus",
							     (int)nd->cpus, "jobs", jobs,
							     "last_heard", nd->last_heard));
		}
		rc = print_json(json_pack("{s:o}", "nodes", arr));
		ctl_reply_free(rep);
		return rc;
	}
	int wname = 4;
	for (size_t i = 0; i < list->n_nodes; i++)
		if ((int)strlen(list->nodes[i]->name) > wname)
			wname = (int)strlen(list->nodes[i]->name);
	printf("%-*s %-7s %4s JOBS\n", wname, "NAME", "STATE", "CPUS");
	for (size_t i = 0; i < list->n_nodes; i++) {
		const Storm__Ctl__NodeInfo *nd = list->nodes[i];
		printf("%-*s %-7s %4u ", wname, nd->name, node_state_name(nd->state), nd->cpus);
		if (!nd->n_jobs)
			fputs("-", stdout);
		for (size_t k = 0; k < nd->n_jobs; k++)
			printf("%s%llu", k ? "," : "", (unsigned long long)nd->jobs[k]);
		putchar('\n');
	}
	ctl_reply_free(rep);
	return EXIT_OK;
}

/* ---- cancel */

static const char cancel_help[] =
	"Usage: storm cancel [-s SIGNAL] JOBID...\n"
	"\n"
	"Cancels jobs, like scancel: without -s the ranks get SIGTERM, then SIGKILL\n"
	"after the cluster's kill_wait; a queued job is removed. With -s only that\n"
	"signal is sent. JOBID is a job (12; an allocation's steps go with it), a\n"
	"step (12.0), an array (12: every task) or one task of it (12_3).\n"
	"\n"
	"  -s, --signal SIGNAL  a name (INT, SIGUSR1) or a number\n"
	"      --conf FILE      the cluster's storm.conf\n"
	"  -h, --help           this help\n"
	"\n"
	"Exit status: 0 when every job was cancelled, 1 when any was not (the\n"
	"machine manager's reason is printed), 2 on bad usage.\n";

int cmd_cancel(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "signal", 's', 1, Q_SIGNAL }, { "conf", 0, 1, Q_CONF },
		{ "help", 'h', 0, Q_HELP },	{ NULL, 0, 0, 0 },
	};
	int sig = 0, id, njobs = 0;
	struct jobref *jobs = calloc((size_t)argc, sizeof(*jobs));
	if (!jobs) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	int rc = EXIT_OK;
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case Q_SIGNAL:
			sig = parse_signal(p.arg);
			if (sig < 0)
				rc = usage_error("storm cancel", "unknown signal '%s'", p.arg);
			break;
		case Q_CONF: c->conf_opt = p.arg; break;
		case Q_HELP: fputs(cancel_help, stdout); free(jobs); return EXIT_OK;
		case OPT_OPERAND:
			if (jobid_parse(p.arg, &jobs[njobs]) != 0)
				rc = usage_error("storm cancel", "'%s' is not a job id (JOBID, "
						 "JOBID.STEP or ARRAYID_TASK)", p.arg);
			njobs++;
			break;
		default: rc = usage_error("storm cancel", "%s", p.err); break;
		}
		if (rc != EXIT_OK) {
			free(jobs);
			return rc;
		}
	}
	if (!njobs) {
		free(jobs);
		return usage_error("storm cancel", "no job id given");
	}
	if (cli_load_conf(c) != 0) {
		free(jobs);
		return EXIT_STORM;
	}
	for (int i = 0; i < njobs; i++) {
		Storm__Ctl__Cancel cancel = STORM__CTL__CANCEL__INIT;
		cancel.job = jobs[i].id;
		cancel.task_given = jobs[i].task_given;
		cancel.task = jobs[i].task;
		cancel.signal = sig;
		Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
		req.body_case = STORM__CTL__REQUEST__BODY_CANCEL;
		req.cancel = &cancel;
		int fd = cli_connect(c);
		if (fd < 0) {
			rc = EXIT_STORM;
			break; /* the cluster is gone: the others would fail alike */
		}
		Storm__Ctl__Reply *rep = NULL;
		int e = ctl_send(fd, &req, NULL, 0);
		if (e == 0)
			e = ctl_recv(fd, CTL_TIMEOUT_MS, &rep);
		close(fd);
		char what[64], shown[48];
		if (jobs[i].task_given)
			snprintf(shown, sizeof(shown), "%llu_%u", (unsigned long long)jobs[i].id,
				 jobs[i].task);
		else
			jobid_format(jobs[i].id, 0, 0, shown, sizeof(shown));
		snprintf(what, sizeof(what), "cancel %s", shown);
		if (e != 0) {
			ctl_report(e);
			rc = EXIT_STORM;
		} else if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR) {
			rc = cli_print_error(rep->error, what);
		} else if (rep->body_case != STORM__CTL__REPLY__BODY_CANCELLED) {
			rc = cli_unexpected(rep, "Cancelled");
		}
		ctl_reply_free(rep);
	}
	free(jobs);
	return rc;
}
