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
	snprintf(o, l, "%s", job_state_name(r->state));
}
static void f_elapsed(const struct job_row *r, char *o, size_t l)
{
	double e = r->start > 0 ? (r->end > 0 ? r->end : r->now) - r->start : 0;
	fmt_elapsed(e > 0 ? e : 0, o, l);
}
static void f_nodelist(const struct job_row *r, char *o, size_t l)
{
	snprintf(o, l, "%s", r->nodelist && r->nodelist[0] ? r->nodelist : "None");
}
static void f_nodes(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%u", r->nodes); }
static void f_ranks(const struct job_row *r, char *o, size_t l) { snprintf(o, l, "%u", r->ranks); }
static void f_exit(const struct job_row *r, char *o, size_t l)
{
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

static const struct {
	const char *name, *alias;
	bool numeric;
	void (*get)(const struct job_row *, char *, size_t);
} fields[] = {
	{ "JobID", NULL, false, f_jobid },	 { "JobName", "Name", false, f_name },
	{ "User", NULL, false, f_user },	 { "UID", NULL, true, f_uid },
	{ "State", NULL, false, f_state },	 { "Elapsed", "Time", true, f_elapsed },
	{ "NodeList", NULL, false, f_nodelist }, { "NNodes", "NumNodes", true, f_nodes },
	{ "NTasks", "NumTasks", true, f_ranks }, { "ExitCode", NULL, true, f_exit },
	{ "Reason", NULL, false, f_reason },	 { "Submit", NULL, false, f_submit },
	{ "Start", NULL, false, f_start },	 { "End", NULL, false, f_end },
	{ "MaxRSS", NULL, true, f_maxrss },	 { "TotalCPU", NULL, true, f_cpu },
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
