/* storm matrix: the gang-scheduling matrix, once or live (--watch). */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "jobid.h"
#include "fmt.h"
#include "mview.h"
#include "opts.h"

enum { M_WATCH = 1, M_INTERVAL, M_JSON, M_CONF, M_HELP };

static const char matrix_help[] =
	"Usage: storm matrix [--watch [--interval MS]] [--json]\n"
	"\n"
	"Draws the gang-scheduling matrix (the Ousterhout matrix): one line per row\n"
	"(time slot, up to the MPL), one column per node, the job id in each cell.\n"
	"The row running now is marked '>'; every quantum the machine manager moves\n"
	"to the next row that has a job, and a node runs only the job of its cell.\n"
	"\n"
	"  '.'   a free cell     'x'  a free cell on a DOWN node\n"
	"  '7+'  an alternate slot: job 7 also runs in this row, where its nodes\n"
	"        are free (backfill)\n"
	"\n"
	"  -w, --watch        redraw until interrupted (Ctrl-C)\n"
	"      --interval MS  between redraws with --watch (default 500)\n"
	"      --json         print the matrix as JSON (with --watch: one object per line)\n"
	"      --conf FILE    the cluster's storm.conf\n"
	"  -h, --help         this help\n";

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int term_width(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	int w = c ? atoi(c) : 0;
	return w >= 20 ? w : 80;
}

json_t *matrix_json(const Storm__Ctl__Matrix *m)
{
	json_t *rows = json_array(), *nodes = json_array(), *jobs = json_array();
	for (size_t r = 0; r < m->mpl; r++) {
		json_t *row = json_array();
		for (size_t p = 0; p < m->n_nodes && r * m->n_nodes + p < m->n_cells; p++)
			json_array_append_new(row, json_integer((json_int_t)m->cells[r * m->n_nodes + p]));
		json_array_append_new(rows, row);
	}
	for (size_t p = 0; p < m->n_nodes; p++)
		json_array_append_new(
			nodes, json_pack("{s:s, s:s}", "name", m->nodes[p], "state",
					 node_state_name(p < m->n_node_states ? (int)m->node_states[p] : 0)));
	for (size_t k = 0; k < m->n_jobs; k++) {
		const Storm__Ctl__JobInfo *j = m->jobs[k];
		char id[48];
		jobid_format(j->job, j->array_job, j->array_task, id, sizeof(id));
		json_array_append_new(jobs, json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, s:i, s:s}",
						      "job", (json_int_t)j->job, "jobid", id, "name",
						      j->name, "user", j->user, "state",
						      job_state_name(j->state), "row", (int)j->row,
						      "nodes", (int)j->nodes, "nodelist", j->nodelist));
	}
	json_t *row_us = json_array();
	for (size_t r = 0; r < m->n_row_slice_us; r++)
		json_array_append_new(row_us, json_integer(m->row_slice_us[r]));
	return json_pack("{s:i, s:i, s:I, s:I, s:i, s:o, s:i, s:s, s:o, s:o, s:o}", "mpl",
				 (int)m->mpl, "row", (int)m->row, "slice", (json_int_t)m->slice,
				 "switches", (json_int_t)m->switches, "timeslice_us",
				 (int)m->timeslice_us, "row_slice_us", row_us, "quantum",
				 (int)m->quantum, "policy", m->policy, "nodes", nodes, "rows", rows,
				 "jobs", jobs);
}

static int print_json(const Storm__Ctl__Matrix *m, bool compact)
{
	json_t *root = matrix_json(m);
	int rc = !root ? -1 : json_dumpf(root, stdout,
			    compact ? JSON_COMPACT | JSON_PRESERVE_ORDER
				    : JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc != 0 || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
		fprintf(stderr, "storm: error: cannot write JSON: %s\n", strerror(errno));
		return EXIT_STORM;
	}
	return EXIT_OK;
}

void matrix_draw(const Storm__Ctl__Matrix *m, FILE *f)
{
	size_t nn = m->n_nodes;
	bool *down = calloc(nn ? nn : 1, sizeof(bool));
	uint64_t *ids = calloc(m->n_jobs ? m->n_jobs : 1, sizeof(uint64_t));
	int *homes = calloc(m->n_jobs ? m->n_jobs : 1, sizeof(int));
	if (!down || !ids || !homes) {
		free(down);
		free(ids);
		free(homes);
		fprintf(stderr, "storm: error: out of memory\n");
		return;
	}
	for (size_t p = 0; p < nn && p < m->n_node_states; p++)
		down[p] = m->node_states[p] != STORM__CTL__NODE_STATE__UP;
	for (size_t k = 0; k < m->n_jobs; k++) {
		ids[k] = m->jobs[k]->job;
		homes[k] = m->jobs[k]->row;
	}
	char ts[32], q[32];
	fmt_timeslice(m->timeslice_us, ts, sizeof(ts));
	fmt_timeslice(m->timeslice_us * m->quantum, q, sizeof(q));
	fprintf(f, "policy %s, MPL %u, timeslice %s, quantum %u (%s); slice %llu, row %d, "
		   "%llu switches\n",
		m->policy, m->mpl, ts, m->quantum, q, (unsigned long long)m->slice, m->row,
		(unsigned long long)m->switches);
	/* rows whose jobs asked for shorter slices (storm run --timeslice-us) */
	for (size_t r = 0; r < m->n_row_slice_us; r++)
		if (m->row_slice_us[r] != m->timeslice_us) {
			fprintf(f, "slices:");
			for (size_t k = 0; k < m->n_row_slice_us; k++) {
				fmt_timeslice(m->row_slice_us[k], ts, sizeof(ts));
				fprintf(f, "%s row %zu %s", k ? "," : "", k, ts);
			}
			fputc('\n', f);
			break;
		}
	if (m->n_cells == (size_t)m->mpl * nn) {
		struct mview v = {.mpl = (int)m->mpl, .nnodes = (int)nn, .row = m->row,
				  .cells = m->cells, .down = down, .njobs = (int)m->n_jobs,
				  .job_ids = ids, .job_homes = homes};
		mview_draw(f, &v, term_width());
	}
	if (m->n_jobs) {
		fprintf(f, "\n%6s %-9s %4s %5s  %s\n", "JOBID", "STATE", "ROW", "NODES", "NAME");
		for (size_t k = 0; k < m->n_jobs; k++) {
			const Storm__Ctl__JobInfo *j = m->jobs[k];
			char row[16] = "-";
			if (j->row >= 0)
				snprintf(row, sizeof(row), "%d", j->row);
			fprintf(f, "%6llu %-9s %4s %5u  %s\n", (unsigned long long)j->job,
				job_state_name(j->state), row, j->nodes, j->name);
		}
	}
	free(down);
	free(ids);
	free(homes);
}

int cmd_matrix(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "watch", 'w', 0, M_WATCH }, { "interval", 0, 1, M_INTERVAL },
		{ "json", 0, 0, M_JSON },     { "conf", 0, 1, M_CONF },
		{ "help", 'h', 0, M_HELP },   { NULL, 0, 0, 0 },
	};
	int watch = 0, json = 0, id;
	uint64_t interval = 500;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case M_WATCH: watch = 1; break;
		case M_JSON: json = 1; break;
		case M_CONF: c->conf_opt = p.arg; break;
		case M_INTERVAL:
			if (parse_uint(p.arg, 10, 3600000, &interval) < 0)
				return usage_error("storm matrix",
						   "--interval wants 10 to 3600000 ms, not '%s'", p.arg);
			break;
		case M_HELP: fputs(matrix_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error("storm matrix", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm matrix", "%s", p.err);
		}
	}
	if (watch) {
		struct sigaction sa = { .sa_handler = on_sigint };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	bool tty = isatty(STDOUT_FILENO);
	int rc = EXIT_OK;
	do {
		Storm__Ctl__ShowMatrix sm = STORM__CTL__SHOW_MATRIX__INIT;
		Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
		req.body_case = STORM__CTL__REQUEST__BODY_MATRIX;
		req.matrix = &sm;
		Storm__Ctl__Reply *rep =
			cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_MATRIX, &rc);
		if (!rep)
			return interrupted ? EXIT_OK : rc;
		if (json) {
			rc = print_json(rep->matrix, watch);
		} else {
			/* draw into memory first, so the screen is replaced in one write */
			char *text = NULL;
			size_t len = 0;
			FILE *mem = open_memstream(&text, &len);
			if (mem) {
				matrix_draw(rep->matrix, mem);
				fclose(mem);
				if (watch && tty)
					fputs("\033[H\033[2J", stdout);
				else if (watch)
					fputs("\n", stdout);
				fwrite(text, 1, len, stdout);
				fflush(stdout);
				free(text);
			}
		}
		ctl_reply_free(rep);
		if (rc != EXIT_OK || !watch)
			break;
		poll(NULL, 0, (int)interval); /* EINTR on Ctrl-C ends the wait early */
	} while (!interrupted);
	return rc;
}
