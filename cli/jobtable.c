/* A table of named job fields (jobtable.h). */
#include "jobtable.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fmt.h"

static void f_jobid(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%s", r->jobid); }
static void f_name(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%s", r->name); }
static void f_user(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->user && r->user[0] ? r->user : "?");
}
static void f_uid(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%u", r->uid); }
static void f_state(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->slurm_state ? r->slurm_state : job_state_name(r->state));
}
static void f_jobid_raw(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->jobid_raw[0] ? r->jobid_raw : r->jobid);
}
static void f_partition(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->partition ? r->partition : "");
}
static void f_account(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->account ? r->account : "");
}
static void f_cpus(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%u", r->cpus ? r->cpus : r->ranks);
}
/* sacct's: a step's line (JOB.batch, JOB.0) has none of its own, a job's
 * is HH:MM:SS; storm acct's as its Elapsed */
static void f_timelimit(const struct job_row *r, char *o, size_t l)
{
	if (r->slurm_state && strchr(r->jobid_raw, '.'))
		o[0] = '\0';
	else if (!r->time_limit)
		snprintf(o, l, "UNLIMITED");
	else if (r->slurm_state)
		fmt_hms(r->time_limit, o, l);
	else
		fmt_elapsed(r->time_limit, o, l);
}
static void f_workdir(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->workdir ? r->workdir : "");
}
static void f_elapsed(const struct job_row *r, char *o, size_t l)
{
	double e = r->start > 0 ? (r->end > 0 ? r->end : r->now) - r->start : 0;
	if (!r->slurm_state)
		fmt_elapsed(e > 0 ? e : 0, o, l);
	else
		fmt_hms(e, o, l);
}
static void f_nodelist(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->nodelist && r->nodelist[0] ? r->nodelist : "None");
}
static void f_nodes(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%u", r->nodes); }
static void f_ranks(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%u", r->ranks); }
static void f_exit(const struct job_row *r, char *o, size_t l)
{
	if (r->slurm_exit)
		snprintf(o, l, "%s", r->slurm_exit);
	else
		snprintf(o, l, "%d", r->exit_status);
}
static void f_reason(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->reason && r->reason[0] ? r->reason : "None");
}
/* sacct's forms: 12345K, and [D-][H:]MM:SS.mmm */
static void f_maxrss(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%lluK", (unsigned long long)r->max_rss_kb);
}
static void f_cpu(const struct job_row *r, char *o, size_t l)
{
	double s = r->cpu_seconds;
	unsigned long long whole = (unsigned long long)s;
	unsigned ms = (unsigned)((s - (double)whole) * 1000);
	if (whole >= 3600)
		snprintf(o, l, "%llu:%02llu:%02llu.%03u", whole / 3600, whole / 60 % 60, whole % 60, ms);
	else
		snprintf(o, l, "%02llu:%02llu.%03u", whole / 60, whole % 60, ms);
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
static void f_submit(const struct job_row *r, char *o, size_t l) { time_of(r->submit, o, l); }
static void f_start(const struct job_row *r, char *o, size_t l) { time_of(r->start, o, l); }
static void f_end(const struct job_row *r, char *o, size_t l) { time_of(r->end, o, l); }

/* swidth: sacct's width for the field (its print_fields table) */
static const struct {
	const char *name, *alias;
	bool numeric;
	void (*get)(const struct job_row *, char *, size_t);
	int swidth;
} fields[] = {
	{ "JobID", NULL, false, f_jobid, 12 },	     { "JobName", "Name", false, f_name, 10 },
	{ "User", NULL, false, f_user, 9 },	     { "UID", NULL, true, f_uid, 6 },
	{ "State", NULL, false, f_state, 10 },	     { "Elapsed", "Time", true, f_elapsed, 10 },
	{ "NodeList", NULL, false, f_nodelist, 15 }, { "NNodes", "NumNodes", true, f_nodes, 8 },
	{ "NTasks", "NumTasks", true, f_ranks, 8 },  { "ExitCode", NULL, true, f_exit, 8 },
	{ "Reason", NULL, false, f_reason, 20 },     { "Submit", NULL, false, f_submit, 19 },
	{ "Start", NULL, false, f_start, 19 },	     { "End", NULL, false, f_end, 19 },
	{ "MaxRSS", NULL, true, f_maxrss, 10 },	     { "TotalCPU", NULL, true, f_cpu, 10 },
	{ "JobIDRaw", NULL, false, f_jobid_raw, 12 }, { "Partition", NULL, false, f_partition, 10 },
	{ "Account", NULL, false, f_account, 10 },   { "AllocCPUS", "NCPUS", true, f_cpus, 10 },
	{ "Timelimit", NULL, true, f_timelimit, 10 }, { "WorkDir", NULL, false, f_workdir, 30 },
};
#define NFIELDS (int)(sizeof(fields) / sizeof(fields[0]))

int jobtable_parse(const char *spec, struct job_col *cols, int *ncol, char *why, size_t len)
{
	int n = 0;
	const char *p = spec;
	while (*p) {
		size_t w = strcspn(p, ",%");
		int f = -1;
		for (int i = 0; i < NFIELDS && f < 0; i++)
			if ((strlen(fields[i].name) == w && !strncasecmp(p, fields[i].name, w)) ||
			    (fields[i].alias && strlen(fields[i].alias) == w &&
			     !strncasecmp(p, fields[i].alias, w)))
				f = i;
		if (f < 0) {
			size_t k = (size_t)snprintf(why, len, "unknown field '%.*s'; fields are", (int)w, p);
			for (int i = 0; i < NFIELDS && k < len; i++)
				k += (size_t)snprintf(why + k, len - k, "%s%s", i ? "," : " ", fields[i].name);
			return -1;
		}
		if (n == JOBTABLE_MAX_COLS) {
			snprintf(why, len, "more than %d fields", JOBTABLE_MAX_COLS);
			return -1;
		}
		cols[n].field = f;
		cols[n].width = 0;
		p += w;
		if (*p == '%') {
			char *end;
			long v = strtol(p + 1, &end, 10);
			if (end == p + 1 || v < 1 || v > 1000 || (*end && *end != ',')) {
				snprintf(why, len, "field %s: a width is %%N, N from 1 to 1000",
					 fields[f].name);
				return -1;
			}
			cols[n].width = (int)v;
			p = end;
		}
		n++;
		if (*p == ',' && p[1])
			p++;
		else if (*p) {
			snprintf(why, len, "unexpected '%s'", p);
			return -1;
		}
	}
	if (!n) {
		snprintf(why, len, "no fields given");
		return -1;
	}
	*ncol = n;
	return 0;
}

void jobtable_print(FILE *f, const struct job_col *cols, int ncol, const struct job_row *rows,
		    size_t n)
{
	enum { CELL = 256 };
	char(*cells)[CELL] = calloc((n ? n : 1) * (size_t)ncol, CELL);
	int w[JOBTABLE_MAX_COLS];
	if (!cells)
		return;
	for (int k = 0; k < ncol; k++)
		w[k] = (int)strlen(fields[cols[k].field].name);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < ncol; k++) {
			char *c = cells[i * (size_t)ncol + (size_t)k];
			fields[cols[k].field].get(&rows[i], c, CELL);
			if (cols[k].width) /* sacct's %N: that wide, cut to it */
				c[cols[k].width < CELL ? cols[k].width : CELL - 1] = '\0';
			if (!cols[k].width && (int)strlen(c) > w[k])
				w[k] = (int)strlen(c);
		}
	for (int k = 0; k < ncol; k++)
		if (cols[k].width)
			w[k] = cols[k].width;
	for (size_t i = 0; i <= n; i++)
		for (int k = 0; k < ncol; k++) {
			const char *c = i == 0 ? fields[cols[k].field].name
					       : cells[(i - 1) * (size_t)ncol + (size_t)k];
			int width = fields[cols[k].field].numeric ? w[k] : -w[k];
			if (k == ncol - 1)
				fprintf(f, "%*s\n", width < 0 ? 0 : width, c);
			else
				fprintf(f, "%*.*s ", width, w[k], c);
		}
	free(cells);
}

/* A value wider than sacct's column ends in '+', as sacct cuts it. */
static void print_fixed(FILE *f, const char *c, int w, bool left)
{
	if ((int)strlen(c) > w)
		fprintf(f, "%.*s+", w - 1, c);
	else
		fprintf(f, "%*s", left ? -w : w, c);
}

void jobtable_print_style(FILE *f, const struct job_col *cols, int ncol,
			  const struct job_row *rows, size_t n, const struct jobtable_style *st)
{
	if (!st->delim && !st->slurm_widths) {
		jobtable_print(f, cols, ncol, rows, n);
		return;
	}
	char cell[256];
	for (size_t i = st->noheader ? 1 : 0; i <= n; i++) {
		for (int k = 0; k < ncol; k++) {
			int fi = cols[k].field, w = cols[k].width ? cols[k].width : fields[fi].swidth;
			const char *c = fields[fi].name;
			if (i) {
				fields[fi].get(&rows[i - 1], cell, sizeof(cell));
				c = cell;
			}
			if (st->delim)
				fprintf(f, "%s%s", c, k < ncol - 1 || st->delim_last ? st->delim : "");
			else {
				/* sacct: the job id to the left, every other field to the right */
				print_fixed(f, c, w, !strncmp(fields[fi].name, "JobID", 5));
				fputc(' ', f);
			}
		}
		fputc('\n', f);
		if (i == 0 && !st->delim) {
			for (int k = 0; k < ncol; k++) {
				int w = cols[k].width ? cols[k].width : fields[cols[k].field].swidth;
				for (int d = 0; d < w; d++)
					fputc('-', f);
				fputc(' ', f);
			}
			fputc('\n', f);
		}
	}
}
