/* storm cluster status: the cluster's state from its MM. */
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>

#include "cluster.h"
#include "fmt.h"
#include "opts.h"

static const char status_help[] =
	"Usage: storm cluster status [--json] [--wait SECONDS] [--dir DIR]\n"
	"\n"
	"The cluster's name, nodes up, provider, timeslice, current slice, jobs and\n"
	"the machine manager's pid; the nodes that are not UP by name.\n"
	"\n"
	"      --json     print a JSON object for scripts\n"
	"      --wait S   answer once every node is UP, or after S seconds (then\n"
	"                 exit 1 if some are not)\n"
	"      --dir DIR  the virtual cluster in DIR (default: the usual search)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

int vc_cmd_status(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "json", 0, 0, C_JSON }, { "dir", 0, 1, C_DIR },   { "conf", 0, 1, C_CONF },
		{ "wait", 0, 1, C_WAIT }, { "help", 'h', 0, C_HELP }, { NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster status", *dir = NULL;
	int json = 0, id;
	unsigned wait_s = 0;
	uint64_t v;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case C_JSON: json = 1; break;
		case C_DIR: dir = p.arg; break;
		case C_CONF: c->conf_opt = p.arg; break;
		case C_WAIT:
			if (parse_uint(p.arg, 1, 86400, &v))
				return usage_error(cmd, "--wait wants 1 to 86400 seconds, not '%s'", p.arg);
			wait_s = (unsigned)v;
			break;
		case C_HELP: fputs(status_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error(cmd, "unexpected argument '%s'", p.arg);
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	char err[512];
	if (dir && vc_locate(c, dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: %s\n", err);
		return EXIT_STORM;
	}
	Storm__Ctl__ClusterStatus cs = STORM__CTL__CLUSTER_STATUS__INIT;
	cs.wait_ms = wait_s * 1000; /* the MM answers when all are UP, or then */
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_STATUS;
	req.status = &cs;
	int rc;
	Storm__Ctl__Reply *rep = cli_call(c, &req, CTL_TIMEOUT_MS + (int)cs.wait_ms, &rc);
	if (!rep)
		return rc;
	if (rep->body_case != STORM__CTL__REPLY__BODY_STATUS) {
		rc = cli_unexpected(rep, "Status");
		ctl_reply_free(rep);
		return rc;
	}
	Storm__Ctl__Status *s = rep->status;
	/* nodes that are not UP, by name */
	int nerr;
	const char *remote = cli_remote(c);
	Storm__Ctl__Reply *nodes = s->nodes_up < s->nodes_total
					   ? vc_ask_nodes(remote ? remote : c->conf.socket, &nerr)
					   : NULL;
	const char **down = calloc(s->nodes_total + 1, sizeof(*down));
	int ndown = 0;
	if (nodes && nodes->body_case == STORM__CTL__REPLY__BODY_NODES && down)
		for (size_t i = 0; i < nodes->nodes->n_nodes && ndown < (int)s->nodes_total; i++)
			if (nodes->nodes->nodes[i]->state != STORM__CTL__NODE_STATE__UP)
				down[ndown++] = nodes->nodes->nodes[i]->name;
	char downlist[4096] = "";
	hostlist_compress(down, ndown, downlist, sizeof(downlist));
	if (json) {
		json_t *arr = json_array();
		for (int i = 0; i < ndown; i++)
			json_array_append_new(arr, json_string(down[i]));
		json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:o, s:I, s:i, s:s, s:i, s:i, s:i}",
				      "cluster", s->cluster, "conf", c->conf_path, "nodes_total",
				      (int)s->nodes_total, "nodes_up", (int)s->nodes_up,
				      "nodes_not_up", arr, "slice", (json_int_t)s->slice,
				      "timeslice_us", (int)s->timeslice_us, "provider", s->provider,
				      "jobs_running", (int)s->jobs_running, "jobs_queued",
				      (int)s->jobs_queued, "mm_pid", (int)s->mm_pid);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(o);
	} else {
		char ts[32];
		fmt_timeslice(s->timeslice_us, ts, sizeof(ts));
		printf("cluster '%s': %u of %u nodes up, provider %s, timeslice %s\n", s->cluster,
		       s->nodes_up, s->nodes_total, s->provider, ts);
		if (ndown)
			printf("not up: %s\n", downlist);
		printf("slice %llu, jobs: %u running, %u queued; machine manager pid %u; %s\n",
		       (unsigned long long)s->slice, s->jobs_running, s->jobs_queued, s->mm_pid,
		       c->conf_path);
	}
	/* --wait: the MM answered at its deadline with nodes still missing */
	rc = wait_s && s->nodes_up < s->nodes_total ? EXIT_STORM : EXIT_OK;
	free(down);
	ctl_reply_free(nodes);
	ctl_reply_free(rep);
	return rc;
}
