/* A BCS-MPI job's record, as the machine manager keeps it (storm run
 * --record): fetched and written as a trace file that storm replay reads
 * (storm trace --bcs, and storm run --record at the job's end), listed and
 * deleted (storm traces). The machine manager holds each rank's stream
 * events as the rank made them (bcs_mpi/abi/trace_codec.h); they are folded
 * into the file's per-rank sections here. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace_codec.h"
#include "bcs.h"
#include "cli.h"
#include "jobid.h"
#include "opts.h"

/* rank r's section from its stream events; an absent stream is empty and
 * its end unknown */
static int fold(const Storm__Ctl__BcsRecord *rec, uint32_t r, struct bcs_rank_trace *t)
{
	memset(t, 0, sizeof(*t));
	t->rank = r;
	t->end = BCS_END_RUNNING;
	for (size_t i = 0; i < rec->n_streams; i++)
		if (rec->streams[i]->rank == r &&
		    bcs_stream_apply(t, rec->streams[i]->data.data, rec->streams[i]->data.len) < 0)
			return -1;
	return 0;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *out = fopen(path, "wb");
	if (!out || fwrite(buf, 1, len, out) != len || fclose(out) != 0) {
		fprintf(stderr, "storm: error: cannot write the trace %s: %s\n", path,
			strerror(errno));
		if (out)
			fclose(out);
		return -1;
	}
	return 0;
}

static void describe(uint64_t job, const char *path, const struct bcs_rank_trace *t,
		     uint32_t n)
{
	uint32_t count[BCS_END_MAX + 1] = { 0 };
	for (uint32_t r = 0; r < n; r++)
		count[t[r].end]++;
	fprintf(stderr, "storm: job %llu's trace is in %s: %u rank%s", (unsigned long long)job,
		path, n, n == 1 ? "" : "s");
	const char *sep = ": ";
	for (uint32_t e = 0; e <= BCS_END_MAX; e++) {
		if (!count[e])
			continue;
		fprintf(stderr, "%s%u %s", sep, count[e], bcs_end_name(e));
		sep = ", ";
	}
	for (uint32_t r = 0; r < n; r++)
		if (t[r].end == BCS_END_EXITED && WIFSIGNALED(t[r].status))
			fprintf(stderr, " (rank %u: signal %d)", r, WTERMSIG(t[r].status));
	fputc('\n', stderr);
	/* the checkpoints storm replay --from may start at: rank 0's marks
	 * (every rank of a checkpoint has one) */
	for (size_t k = 0; n && k < t[0].nmarks; k++) {
		const struct bcs_mark *m = &t[0].marks[k];
		fprintf(stderr, "storm: checkpoint %llu marked: rank 0 at %llu wildcards, %llu tests, "
			"%llu waitany, %llu waitsome\n", (unsigned long long)m->ckpt,
			(unsigned long long)m->n[BCS_S_WILD], (unsigned long long)m->n[BCS_S_TEST],
			(unsigned long long)m->n[BCS_S_INDEX], (unsigned long long)m->n[BCS_S_MASK]);
	}
}

static json_t *ranks_json(const struct bcs_rank_trace *t, uint32_t n)
{
	static const char *const ends[] = { "finalized", "exited", "node_lost", "running" };
	json_t *a = json_array();
	for (uint32_t r = 0; r < n; r++) {
		json_t *o = json_pack("{s:i, s:s, s:I, s:I, s:I, s:I}", "rank", (int)r, "end",
				      ends[t[r].end], "wildcards", (json_int_t)t[r].nwild,
				      "tests", (json_int_t)bcs_trace_ntest(&t[r]), "waitany",
				      (json_int_t)t[r].nindex, "waitsome", (json_int_t)t[r].nmask);
		if (t[r].end == BCS_END_EXITED)
			json_object_set_new(o, "wait_status", json_integer(t[r].status));
		json_t *marks = json_array();
		for (size_t k = 0; k < t[r].nmarks; k++) {
			const struct bcs_mark *m = &t[r].marks[k];
			json_array_append_new(marks, json_pack("{s:I, s:I, s:I, s:I, s:I}",
				"checkpoint", (json_int_t)m->ckpt,
				"wildcards", (json_int_t)m->n[BCS_S_WILD],
				"tests", (json_int_t)m->n[BCS_S_TEST],
				"waitany", (json_int_t)m->n[BCS_S_INDEX],
				"waitsome", (json_int_t)m->n[BCS_S_MASK]));
		}
		json_object_set_new(o, "marks", marks);
		json_array_append_new(a, o);
	}
	return a;
}

/* Writes rec as the trace file path; with js, its summary as JSON on
 * standard output instead of a line on standard error. 0 or -1 (printed). */
static int record_write(uint64_t job, const Storm__Ctl__BcsRecord *rec, const char *path,
			int js)
{
	if (!rec->n_argv || !rec->ranks) {
		fprintf(stderr, "storm: error: job %llu's record names no program\n",
			(unsigned long long)job);
		return -1;
	}
	struct bcs_rank_trace *t = calloc(rec->ranks, sizeof(*t));
	uint8_t **secs = calloc(rec->ranks, sizeof(*secs));
	size_t *lens = calloc(rec->ranks, sizeof(*lens));
	int rc = -1;
	uint32_t n = 0;
	if (!t || !secs || !lens)
		goto out;
	for (; n < rec->ranks; n++) {
		if (fold(rec, n, &t[n]) < 0) {
			fprintf(stderr, "storm: error: job %llu's record of rank %u is damaged\n",
				(unsigned long long)job, n);
			n++;
			goto out;
		}
		if (!(secs[n] = bcs_trace_encode_rank(&t[n], &lens[n])))
			goto out;
	}
	struct bcs_trace file = { .job = job, .nodes = rec->nodes, .ranks = rec->ranks,
				  .argc = (uint32_t)rec->n_argv, .argv = rec->argv,
				  .nsections = rec->ranks };
	size_t len;
	uint8_t *buf = bcs_trace_encode(&file, secs, lens, &len);
	if (buf && write_file(path, buf, len) == 0) {
		rc = 0;
		if (js) {
			json_t *o = json_pack("{s:I, s:s, s:I, s:o}", "job", (json_int_t)job, "file",
					      path, "bytes", (json_int_t)len, "ranks",
					      ranks_json(t, n));
			json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
			fputc('\n', stdout);
			json_decref(o);
		} else {
			describe(job, path, t, n);
		}
	}
	free(buf);
out:
	if (rc < 0 && (!t || !secs || !lens))
		fprintf(stderr, "storm: error: out of memory\n");
	for (uint32_t r = 0; t && secs && r < n && r < rec->ranks; r++) {
		bcs_rank_trace_free(&t[r]);
		free(secs[r]);
	}
	free(t);
	free(secs);
	free(lens);
	return rc;
}

int bcs_record_fetch(struct cli *c, uint64_t job, const char *path, int js)
{
	Storm__Ctl__GetTrace g = STORM__CTL__GET_TRACE__INIT;
	g.job = job;
	g.bcs = 1;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_TRACE;
	req.trace = &g;
	int rc;
	Storm__Ctl__Reply *rep = cli_call(c, &req, CTL_TIMEOUT_MS, &rc);
	if (!rep)
		return rc ? rc : EXIT_STORM;
	if (rep->body_case != STORM__CTL__REPLY__BODY_TRACE || !rep->trace->bcs) {
		rc = cli_unexpected(rep, "Trace");
		ctl_reply_free(rep);
		return rc;
	}
	rc = record_write(job, rep->trace->bcs, path, js) < 0 ? EXIT_STORM : EXIT_OK;
	ctl_reply_free(rep);
	return rc;
}

/* ---- storm traces */

static const char traces_help[] =
	"Usage: storm traces [--json] [--delete JOBID]\n"
	"\n"
	"Lists the BCS-MPI records the machine manager keeps, one per job run with\n"
	"'storm run --record' (yours; root sees everyone's): its job, user, name,\n"
	"ranks, size and when it began. A record is complete up to the job's end\n"
	"however the job ended; 'storm trace --bcs JOBID -o FILE' writes it as a\n"
	"trace for 'storm replay'.\n"
	"\n"
	"      --delete JOBID  delete that job's record, then list the rest\n"
	"      --json          print {\"traces\": [...]} for scripts\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: 0, 1 when the record is unknown or not the caller's, 2 on bad\n"
	"usage.\n";

enum { TS_JSON = 1, TS_DELETE, TS_CONF, TS_HELP };

static int print_traces(const Storm__Ctl__TraceList *l, int js)
{
	if (js) {
		json_t *a = json_array();
		for (size_t i = 0; i < l->n_traces; i++) {
			const Storm__Ctl__TraceInfo *t = l->traces[i];
			json_array_append_new(a, json_pack("{s:I, s:s, s:i, s:s, s:i, s:I, s:f}", "job",
							   (json_int_t)t->job, "user", t->user, "uid",
							   (int)t->uid, "name", t->name, "ranks",
							   (int)t->ranks, "bytes", (json_int_t)t->bytes,
							   "created", t->created));
		}
		json_t *o = json_pack("{s:o}", "traces", a);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
		json_decref(o);
		return EXIT_OK;
	}
	printf("%-10s %-10s %-16s %6s %10s  %s\n", "JOBID", "USER", "NAME", "RANKS", "BYTES",
	       "CREATED");
	for (size_t i = 0; i < l->n_traces; i++) {
		const Storm__Ctl__TraceInfo *t = l->traces[i];
		char when[32] = "-";
		time_t s = (time_t)t->created;
		struct tm tm;
		if (s && localtime_r(&s, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		printf("%-10llu %-10s %-16.16s %6u %10llu  %s\n", (unsigned long long)t->job,
		       t->user, t->name, t->ranks, (unsigned long long)t->bytes, when);
	}
	return EXIT_OK;
}

int cmd_traces(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "json", 0, 0, TS_JSON }, { "delete", 0, 1, TS_DELETE },
		{ "conf", 0, 1, TS_CONF }, { "help", 'h', 0, TS_HELP },
		{ NULL, 0, 0, 0 },
	};
	int js = 0;
	struct jobref del = { 0 };
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	int id;
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case TS_JSON: js = 1; break;
		case TS_DELETE:
			if (jobid_parse(p.arg, &del) < 0 || del.task_given)
				return usage_error("storm traces", "'%s' is not a job id", p.arg);
			break;
		case TS_CONF: c->conf_opt = p.arg; break;
		case TS_HELP: fputs(traces_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			return usage_error("storm traces", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm traces", "%s", p.err);
		}
	}
	Storm__Ctl__ListTraces l = STORM__CTL__LIST_TRACES__INIT;
	l.delete_ = del.id;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_TRACES;
	req.traces = &l;
	int rc;
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_TRACES,
					      &rc);
	if (!rep)
		return rc ? rc : EXIT_STORM;
	rc = print_traces(rep->traces, js);
	ctl_reply_free(rep);
	return rc;
}
