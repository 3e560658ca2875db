/* storm trace: a job's trace as Chrome Trace Event JSON, for Perfetto
 * (ui.perfetto.dev) or chrome://tracing. One process per node and one for
 * the machine manager; on a node, one track each for its turns of the gang
 * matrix (with the switch's delay and skew), its ranks, its BCS-MPI
 * micro-phases and its checkpoints. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bcs.h"
#include "cli.h"
#include "fmt.h"
#include "jobid.h"
#include "opts.h"
#include "trace.pb-c.h"

/* waiting for quiet nodes' parts: 100 ms apart, 15 s at most */
#define TRACE_PENDING_US 100000
#define TRACE_PENDING_TRIES 150

static const char trace_help[] =
	"Usage: storm trace [-o FILE] JOBID\n"
	"       storm trace --bcs [-o FILE] [--json] JOBID\n"
	"\n"
	"Writes the job's trace as Chrome Trace Event JSON (open it in\n"
	"https://ui.perfetto.dev or chrome://tracing): per node, when the job ran\n"
	"(each turn of its row, with how long after the strobe the switch was done\n"
	"and the spread of that across the nodes), its ranks' execs and exits, its\n"
	"BCS-MPI micro-phases with the bytes they sent, its checkpoints; from the\n"
	"machine manager, its wait in the queue, the program's transfer, the launch,\n"
	"its row's turns, its checkpoints and its end. A node's events come when the\n"
	"job has ended there; each node keeps the newest 2048 of a job.\n"
	"\n"
	"With --bcs, writes instead the job's BCS-MPI record (a job run with 'storm\n"
	"run --record') as a trace for 'storm replay': every outcome each rank made\n"
	"up to the job's end or to now, however the job ended (a crash, a cancel, a\n"
	"time limit), and for each rank how it ended (reached MPI_Finalize, ended\n"
	"without it, was on a node that was lost, still running). A line on\n"
	"standard error sums it up.\n"
	"\n"
	"  -o, --output FILE  write there (default: standard output; with --bcs,\n"
	"                     storm-JOBID.bcs)\n"
	"      --bcs          the BCS-MPI record, as a trace file\n"
	"      --json         with --bcs: the summary as JSON on standard output\n"
	"      --conf FILE    the cluster's storm.conf\n"
	"  -h, --help         this help\n"
	"\n"
	"Exit status: 0, 1 when the job is unknown or not the caller's, 2 on bad usage.\n";

enum { T_OUTPUT = 1, T_CONF, T_HELP, T_BCS, T_JSON };
enum { TID_GANG = 1, TID_RANKS, TID_BCS, TID_CKPT };
enum { TID_JOB = 1, TID_ROWS, TID_CKPTS };

static void meta(json_t *ev, const char *what, int pid, int tid, const char *name)
{
	json_t *m = json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", pid,
			      "args", "name", name);
	if (tid)
		json_object_set_new(m, "tid", json_integer(tid));
	json_array_append_new(ev, m);
}

static void span(json_t *ev, const char *name, int pid, int tid, double ts, double dur,
		 json_t *args)
{
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "name", name,
					    "ph", "X", "pid", pid, "tid", tid, "ts", ts, "dur",
					    dur, "args", args ? args : json_object()));
}

static void instant(json_t *ev, const char *name, int pid, int tid, double ts, json_t *args)
{
	json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:o}", "name", name,
					    "ph", "i", "s", "t", "pid", pid, "tid", tid, "ts", ts,
					    "args", args ? args : json_object()));
}

/* a switch's skew: the spread of its delays over the nodes that made it */
struct skew {
	uint64_t sw, lo, hi;
};
static int by_switch(const void *a, const void *b)
{
	const struct skew *x = a, *y = b;
	return x->sw < y->sw ? -1 : x->sw > y->sw;
}

/* The trace's first moment, its times' zero; *nrun: how many turns the
 * nodes ran. */
static uint64_t trace_t0(const Storm__Ctl__Trace *t, size_t *nrun)
{
	uint64_t t0 = UINT64_MAX;
	for (size_t i = 0; i < t->n_mm; i++)
		if (t->mm[i]->t_us < t0)
			t0 = t->mm[i]->t_us;
	*nrun = 0;
	for (size_t n = 0; n < t->n_nodes; n++)
		for (size_t i = 0; i < t->nodes[n]->n_events; i++) {
			const Storm__Trace__Event *e = t->nodes[n]->events[i];
			if (e->t_us < t0)
				t0 = e->t_us;
			*nrun += e->kind == STORM__TRACE__EVENT__KIND__RUN;
		}
	if (t0 == UINT64_MAX)
		t0 = 0;
	return t0;
}

/* Each switch's skew over the nodes, sorted by switch; NULL if out of memory. */
static struct skew *switch_skews(const Storm__Ctl__Trace *t, size_t nrun, size_t *nskp)
{
	struct skew *sk = calloc(nrun + 1, sizeof(*sk));
	size_t nsk = 0;
	for (size_t n = 0; sk && n < t->n_nodes; n++)
		for (size_t i = 0; i < t->nodes[n]->n_events; i++) {
			const Storm__Trace__Event *e = t->nodes[n]->events[i];
			if (e->kind == STORM__TRACE__EVENT__KIND__RUN)
				sk[nsk++] = (struct skew){ e->a, e->b, e->b };
		}
	if (sk) {
		qsort(sk, nsk, sizeof(*sk), by_switch);
		size_t w = 0; /* fold each switch's delays into one lo..hi */
		for (size_t i = 0; i < nsk; i++) {
			if (w && sk[w - 1].sw == sk[i].sw) {
				sk[w - 1].lo = sk[i].lo < sk[w - 1].lo ? sk[i].lo : sk[w - 1].lo;
				sk[w - 1].hi = sk[i].hi > sk[w - 1].hi ? sk[i].hi : sk[w - 1].hi;
			} else {
				sk[w++] = sk[i];
			}
		}
		nsk = w;
	}
	*nskp = nsk;
	return sk;
}

#define TS(e) ((double)((e)->t_us - t0))
/* The machine manager's events: the job's life, its rows, its checkpoints. */
static void mm_events(json_t *ev, const Storm__Ctl__Trace *t, uint64_t t0)
{
	meta(ev, "process_name", 0, 0, "machine manager");
	meta(ev, "thread_name", 0, TID_JOB, "job");
	meta(ev, "thread_name", 0, TID_ROWS, "its row in the matrix");
	meta(ev, "thread_name", 0, TID_CKPTS, "checkpoints");
	for (size_t i = 0; i < t->n_mm; i++) {
		const Storm__Trace__Event *e = t->mm[i];
		char name[64];
		switch (e->kind) {
		case STORM__TRACE__EVENT__KIND__QUEUED:
			span(ev, "queued", 0, TID_JOB, TS(e), (double)e->dur_us, NULL);
			break;
		case STORM__TRACE__EVENT__KIND__TRANSFER:
			span(ev, "program transfer", 0, TID_JOB, TS(e), (double)e->dur_us, NULL);
			break;
		case STORM__TRACE__EVENT__KIND__LAUNCH:
			instant(ev, "launch", 0, TID_JOB, TS(e), NULL);
			break;
		case STORM__TRACE__EVENT__KIND__END:
			instant(ev, "end", 0, TID_JOB, TS(e),
				json_pack("{s:s, s:i}", "state", job_state_name((int)e->a), "exit",
					  (int)(int32_t)e->b));
			break;
		case STORM__TRACE__EVENT__KIND__ROW:
			snprintf(name, sizeof(name), "row %llu runs", (unsigned long long)e->a);
			span(ev, name, 0, TID_ROWS, TS(e), (double)e->dur_us,
			     json_pack("{s:I}", "row", (json_int_t)e->a));
			break;
		case STORM__TRACE__EVENT__KIND__CHECKPOINT:
			snprintf(name, sizeof(name), "checkpoint %llu", (unsigned long long)e->a);
			span(ev, name, 0, TID_CKPTS, TS(e), (double)e->dur_us,
			     json_pack("{s:I, s:f}", "id", (json_int_t)e->a, "frozen_ms",
				       (double)e->b / 1e3));
			break;
		default:
			break;
		}
	}
}

/* Each node's events: its gang turns, ranks, BCS-MPI and checkpoints. */
static void node_events(json_t *ev, const Storm__Ctl__Trace *t, uint64_t t0,
			const struct skew *sk, size_t nsk)
{
	for (size_t n = 0; n < t->n_nodes; n++) {
		int pid = (int)n + 1;
		meta(ev, "process_name", pid, 0, t->nodes[n]->node);
		meta(ev, "thread_name", pid, TID_GANG, "gang: its turns");
		meta(ev, "thread_name", pid, TID_RANKS, "ranks");
		meta(ev, "thread_name", pid, TID_BCS, "BCS-MPI");
		meta(ev, "thread_name", pid, TID_CKPT, "checkpoint");
		for (size_t i = 0; i < t->nodes[n]->n_events; i++) {
			const Storm__Trace__Event *e = t->nodes[n]->events[i];
			char name[64];
			switch (e->kind) {
			case STORM__TRACE__EVENT__KIND__RUN: {
				struct skew key = { e->a, 0, 0 }, *s =
					sk ? bsearch(&key, sk, nsk, sizeof(*sk), by_switch) : NULL;
				snprintf(name, sizeof(name), "row %d", (int)(int32_t)e->c);
				span(ev, name, pid, TID_GANG, TS(e), (double)e->dur_us,
				     json_pack("{s:i, s:I, s:I, s:I}", "row", (int)(int32_t)e->c,
					       "switch", (json_int_t)e->a, "delay_us", (json_int_t)e->b,
					       "skew_us", (json_int_t)(s ? s->hi - s->lo : 0)));
				break;
			}
			case STORM__TRACE__EVENT__KIND__EXEC:
				snprintf(name, sizeof(name), "rank %llu exec", (unsigned long long)e->a);
				instant(ev, name, pid, TID_RANKS, TS(e),
					json_pack("{s:I}", "rank", (json_int_t)e->a));
				break;
			case STORM__TRACE__EVENT__KIND__EXIT:
				snprintf(name, sizeof(name), "rank %llu exit", (unsigned long long)e->a);
				instant(ev, name, pid, TID_RANKS, TS(e),
					json_pack("{s:I, s:I}", "rank", (json_int_t)e->a, "wait_status",
						  (json_int_t)(int32_t)e->b));
				break;
			case STORM__TRACE__EVENT__KIND__BCS:
				span(ev, "micro-phase", pid, TID_BCS, TS(e), (double)e->dur_us,
				     json_pack("{s:I, s:I}", "slice", (json_int_t)e->a, "bytes_sent",
					       (json_int_t)e->b));
				break;
			case STORM__TRACE__EVENT__KIND__CKPT:
				snprintf(name, sizeof(name), "saving checkpoint %llu",
					 (unsigned long long)e->a);
				span(ev, name, pid, TID_CKPT, TS(e), (double)e->dur_us,
				     json_pack("{s:I, s:b}", "id", (json_int_t)e->a, "ok", (int)e->b));
				break;
			default:
				break;
			}
		}
	}
}
#undef TS

static json_t *build(const Storm__Ctl__Trace *t)
{
	json_t *ev = json_array();
	size_t nrun, nsk = 0;
	uint64_t t0 = trace_t0(t, &nrun);
	struct skew *sk = switch_skews(t, nrun, &nsk);
	mm_events(ev, t, t0);
	node_events(ev, t, t0, sk, nsk);
	free(sk);
	char id[48];
	const Storm__Ctl__JobInfo *j = t->job;
	jobid_format(j ? j->job : 0, j ? j->array_job : 0, j ? j->array_task : 0, id, sizeof(id));
	return json_pack("{s:o, s:s, s:{s:s, s:s, s:s, s:s, s:I}}", "traceEvents", ev,
			 "displayTimeUnit", "ms", "otherData", "job", id, "name",
			 j ? j->name : "", "state", job_state_name(j ? (int)j->state : 0),
			 "nodelist", j ? j->nodelist : "", "t0_unix_us", (json_int_t)t0);
}

int cmd_trace(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "output", 'o', 1, T_OUTPUT }, { "conf", 0, 1, T_CONF },
		{ "help", 'h', 0, T_HELP },	{ "bcs", 0, 0, T_BCS },
		{ "json", 0, 0, T_JSON },	{ NULL, 0, 0, 0 },
	};
	const char *out = NULL;
	int bcs = 0, js = 0;
	struct jobref ref = { 0 };
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	int id;
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case T_OUTPUT: out = p.arg; break;
		case T_BCS: bcs = 1; break;
		case T_JSON: js = 1; break;
		case T_CONF: c->conf_opt = p.arg; break;
		case T_HELP: fputs(trace_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			if (ref.id)
				return usage_error("storm trace", "one job at a time");
			if (jobid_parse(p.arg, &ref) < 0 || ref.task_given)
				return usage_error("storm trace", "'%s' is not a job id (JOBID or "
						   "JOBID.STEP; an array task by its own id)", p.arg);
			break;
		default: return usage_error("storm trace", "%s", p.err);
		}
	}
	if (!ref.id)
		return usage_error("storm trace", "no job given");
	if (js && !bcs)
		return usage_error("storm trace", "--json goes with --bcs (the trace is JSON already)");
	if (bcs) {
		char def[64];
		snprintf(def, sizeof(def), "storm-%llu.bcs", (unsigned long long)ref.id);
		return bcs_record_fetch(c, ref.id, out ? out : def, js);
	}
	Storm__Ctl__GetTrace g = STORM__CTL__GET_TRACE__INIT;
	g.job = ref.id;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_TRACE;
	req.trace = &g;
	int rc;
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_TRACE, &rc);
	/* a node that ended the job quietly sends its part with its next
	 * heartbeat (at most report_every x 16 slices later): asked again
	 * until it is there, up to a bound against a node that went away */
	for (int tries = 0; rep && rep->trace->n_pending && tries < TRACE_PENDING_TRIES; tries++) {
		ctl_reply_free(rep);
		usleep(TRACE_PENDING_US);
		rep = cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_TRACE, &rc);
	}
	if (!rep)
		return rc;
	for (size_t i = 0; i < rep->trace->n_pending; i++)
		fprintf(stderr, "storm: warning: node %s's trace of job %llu has not arrived; "
			"the trace lacks it\n", rep->trace->pending[i], (unsigned long long)ref.id);
	json_t *root = build(rep->trace);
	ctl_reply_free(rep);
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f) {
		fprintf(stderr, "storm: error: cannot write %s: %s\n", out, strerror(errno));
		json_decref(root);
		return EXIT_STORM;
	}
	int bad = !root || json_dumpf(root, f, JSON_COMPACT) != 0 || fputc('\n', f) == EOF;
	json_decref(root);
	if ((out ? fclose(f) : fflush(f)) != 0)
		bad = 1;
	if (bad) {
		fprintf(stderr, "storm: error: cannot write the trace%s%s: %s\n", out ? " to " : "",
			out ? out : "", strerror(errno));
		return EXIT_STORM;
	}
	return EXIT_OK;
}
