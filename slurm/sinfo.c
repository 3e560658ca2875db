/* sinfo on storm: the cluster's one partition (named after the cluster)
 * and its nodes grouped by state, in sinfo's -o formats, from the machine
 * manager's node list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostlist.h"
#include "slurm.h"

static const char help[] =
	"Usage: sinfo [OPTIONS]\n"
	"\n"
	"Slurm's sinfo on a storm cluster: one partition, named after the cluster\n"
	"(the default, marked '*'), its nodes grouped by state: idle (up, no job),\n"
	"alloc (up, running jobs), down (silent for down_after_ms), unk (never\n"
	"heard from).\n"
	"\n"
	"  -N, --Node          one line per node\n"
	"  -o, --format FMT    sinfo's format: %[.][N]X fields (X: P R a l D t T N n c\n"
	"                      C F O m e E z G)\n"
	"  -s, --summarize     the partition's summary (NODES(A/I/O/T))\n"
	"  -l, --long          the long format\n"
	"  -h, --noheader      no header line\n"
	"  -p, --partition P   only partition P (the cluster's name)\n"
	"  -t, --states LIST   only nodes in these states (idle, alloc, down, unk)\n"
	"  -r, --responding    only nodes that are up\n"
	"  -e, --exact, -a, --all, -v, --verbose  taken\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"      --help          this help\n"
	"\n"
	"Ignored with a warning: -M/--clusters, -n/--nodes, -R/--list-reasons,\n"
	"-S/--sort, -i/--iterate. Refused: -O/--Format, --json, --yaml.\n";

enum { O_NODE = 1, O_FORMAT, O_SUM, O_LONG, O_NOHDR, O_PART, O_STATES, O_RESP, O_QUIET,
       O_CONF, O_HELP };
static const struct cli_opt opts[] = {
	{ "Node", 'N', 0, O_NODE },	     { "format", 'o', 1, O_FORMAT },
	{ "summarize", 's', 0, O_SUM },	     { "long", 'l', 0, O_LONG },
	{ "noheader", 'h', 0, O_NOHDR },     { "partition", 'p', 1, O_PART },
	{ "states", 't', 1, O_STATES },	     { "responding", 'r', 0, O_RESP },
	{ "exact", 'e', 0, O_QUIET },	     { "all", 'a', 0, O_QUIET },
	{ "verbose", 'v', 0, O_QUIET },	     { "conf", 0, 1, O_CONF },
	{ "help", 0, 0, O_HELP },	     { "clusters", 'M', 1, SL_IGNORE },
	{ "nodes", 'n', 1, SL_IGNORE },	     { "list-reasons", 'R', 0, SL_IGNORE },
	{ "sort", 'S', 1, SL_IGNORE },	     { "iterate", 'i', 1, SL_IGNORE },
	{ "Format", 'O', 1, SL_REFUSE },     { "json", 0, 0, SL_REFUSE },
	{ "yaml", 0, 0, SL_REFUSE },	     { NULL, 0, 0, 0 },
};

#define FMT_DEFAULT "%9P %.5a %.10l %.6D %.6t %N"
#define FMT_NODE "%%%dN %%.6D %%.9P %%6t" /* the node names' width in it */
#define FMT_LONG "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
#define FMT_SUM "%9P %.5a %.10l %.16F %N"

/* One line: the nodes of one state (or one node with -N). */
struct group {
	const char *state, *state_long;
	char *names;       /* node[] compressed: node[00-03] */
	const char **node;
	int n;
	unsigned cpus;       /* per node */
	int a, i, o, t;      /* allocated, idle, other, total nodes */
	const char *partition;
};

static void state_of(const Storm__Ctl__NodeInfo *nd, const char **s, const char **l)
{
	if (nd->state == STORM__CTL__NODE_STATE__DOWN) {
		*s = "down";
		*l = "down";
	} else if (nd->state != STORM__CTL__NODE_STATE__UP) {
		*s = "unk";
		*l = "unknown";
	} else if (nd->n_jobs) {
		*s = "alloc";
		*l = "allocated";
	} else {
		*s = "idle";
		*l = "idle";
	}
}

static bool field(char x, const void *row, char *o, size_t l)
{
	static const struct { char x; const char *h; } hdr[] = {
		{ 'P', "PARTITION" }, { 'R', "PARTITION" }, { 'a', "AVAIL" },
		{ 'l', "TIMELIMIT" }, { 'D', "NODES" },	    { 't', "STATE" },
		{ 'T', "STATE" },     { 'N', "NODELIST" },  { 'n', "HOSTNAMES" },
		{ 'c', "CPUS" },      { 'C', "CPUS(A/I/O/T)" }, { 'F', "NODES(A/I/O/T)" },
		{ 'O', "CPU_LOAD" },  { 'm', "MEMORY" },    { 'e', "FREE_MEM" },
		{ 'E', "REASON" },    { 'z', "S:C:T" },	    { 'G', "GRES" },
		{ 's', "JOB_SIZE" },  { 'r', "ROOT" },	    { 'h', "OVERSUBS" },
		{ 'g', "GROUPS" },
	};
	const char *h = NULL;
	for (size_t k = 0; k < sizeof(hdr) / sizeof(hdr[0]) && !h; k++)
		if (hdr[k].x == x)
			h = hdr[k].h;
	if (!h)
		return false;
	const struct group *g = row;
	if (!g) {
		snprintf(o, l, "%s", h);
		return true;
	}
	unsigned tot = g->cpus * (unsigned)g->n;
	switch (x) {
	case 'P': snprintf(o, l, "%s*", g->partition); break;
	case 'R': snprintf(o, l, "%s", g->partition); break;
	case 'a': snprintf(o, l, "up"); break;
	case 'l': snprintf(o, l, "infinite"); break;
	case 's': snprintf(o, l, "1-infinite"); break;
	case 'D': snprintf(o, l, "%d", g->n); break;
	case 't': snprintf(o, l, "%s", g->state); break;
	case 'T': snprintf(o, l, "%s", g->state_long); break;
	case 'N': case 'n': snprintf(o, l, "%s", g->names); break;
	case 'c': snprintf(o, l, "%u", g->cpus); break;
	case 'C':
		snprintf(o, l, "%u/%u/%u/%u", g->cpus * (unsigned)g->a, g->cpus * (unsigned)g->i,
			 g->cpus * (unsigned)g->o, tot);
		break;
	case 'F': snprintf(o, l, "%d/%d/%d/%d", g->a, g->i, g->o, g->t); break;
	case 'r': snprintf(o, l, "no"); break;
	case 'h': snprintf(o, l, "NO"); break;
	case 'g': snprintf(o, l, "all"); break;
	case 'E': snprintf(o, l, "none"); break;
	case 'z': snprintf(o, l, "1:%u:1", g->cpus); break;
	default: snprintf(o, l, "N/A"); break;
	}
	return true;
}

struct want {
	const char *format, *partition, *states;
	bool per_node, summarize, noheader, responding, date;
};

static void add_node(struct group *g, const Storm__Ctl__NodeInfo *nd)
{
	g->node[g->n++] = nd->name;
	g->cpus = nd->cpus;
	g->t++;
	if (!strcmp(g->state, "alloc"))
		g->a++;
	else if (!strcmp(g->state, "idle"))
		g->i++;
	else
		g->o++;
}

static bool node_wanted(const struct want *w, const char *state)
{
	if (w->responding && (!strcmp(state, "down") || !strcmp(state, "unk")))
		return false;
	return !w->states || sl_in_list(w->states, state) ||
	       (!strcmp(state, "alloc") && sl_in_list(w->states, "allocated"));
}

/* The groups of the lines: by state, one per node with -N, one for all
 * with -s (the summary counts states). */
static int group_nodes(const struct want *w, const Storm__Ctl__NodeList *nl, struct group *gs,
		       const char *part)
{
	int ng = 0;
	for (size_t i = 0; i < nl->n_nodes; i++) {
		const char *s, *sl;
		state_of(nl->nodes[i], &s, &sl);
		if (!node_wanted(w, s))
			continue;
		int k = 0;
		while (!w->per_node && k < ng && (!w->summarize && strcmp(gs[k].state, s)))
			k++;
		if (w->per_node || k == ng) {
			k = ng++;
			gs[k].state = s;
			gs[k].state_long = sl;
			gs[k].partition = part;
			gs[k].node = calloc(w->per_node ? 1 : nl->n_nodes, sizeof(char *));
			if (!gs[k].node)
				return -1;
		}
		add_node(&gs[k], nl->nodes[i]);
	}
	for (int k = 0; k < ng; k++) {
		size_t len = (size_t)gs[k].n * HOSTNAME_MAX + 16;
		if (!(gs[k].names = malloc(len)))
			return -1;
		hostlist_compress(gs[k].node, gs[k].n, gs[k].names, len);
	}
	return ng;
}

static int show(struct cli *c, const struct want *w)
{
	int rc;
	Storm__Ctl__Reply *rep = sl_nodes(c, &rc);
	if (!rep)
		return rc;
	const char *part = c->conf.name[0] ? c->conf.name : "storm";
	struct group *gs = calloc(rep->nodes->n_nodes + 1, sizeof(*gs));
	if (!gs) {
		ctl_reply_free(rep);
		return EXIT_STORM;
	}
	int ng = w->partition && strcmp(w->partition, part) ? 0
		 : group_nodes(w, rep->nodes, gs, part);
	rc = ng < 0 ? EXIT_STORM : EXIT_OK;
	if (ng < 0)
		fprintf(stderr, "sinfo: error: out of memory\n");
	const char *f = w->format ? w->format : w->summarize ? FMT_SUM : FMT_DEFAULT;
	char nodefmt[64];
	if (!w->format && w->per_node && !w->summarize) {
		/* as sinfo -N: its node names at least 9 wide, as wide as the longest */
		int width = 9;
		for (size_t k = 0; k < rep->nodes->n_nodes; k++)
			if ((int)strlen(rep->nodes->nodes[k]->name) > width)
				width = (int)strlen(rep->nodes->nodes[k]->name);
		snprintf(nodefmt, sizeof(nodefmt), FMT_NODE, width);
		f = nodefmt;
	}
	if (w->date)
		sl_print_date();
	if (!w->noheader && rc == EXIT_OK)
		sl_format_line(f, field, NULL);
	for (int k = 0; k < ng; k++)
		sl_format_line(f, field, &gs[k]);
	for (size_t k = 0; k <= rep->nodes->n_nodes; k++) {
		free(gs[k].node);
		free(gs[k].names);
	}
	free(gs);
	ctl_reply_free(rep);
	return fflush(stdout) == 0 ? rc : EXIT_STORM;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "sinfo" };
	struct want w = { 0 };
	struct cli_optparse p;
	int id, rc = -1;
	char bad;
	sl_opt_init(&p, argc, argv, 0);
	while (rc < 0 && (id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case O_NODE: w.per_node = true; break;
		case O_FORMAT:
			if (sl_format_check(p.arg, field, &bad) < 0)
				rc = usage_error("sinfo", "Invalid node format specification: %c", bad);
			w.format = p.arg;
			break;
		case O_SUM: w.summarize = true; break;
		case O_LONG: w.format = FMT_LONG; w.date = true; break;
		case O_NOHDR: w.noheader = true; break;
		case O_PART: w.partition = p.arg; break;
		case O_STATES: w.states = p.arg; break;
		case O_RESP: w.responding = true; break;
		case O_QUIET: break;
		case O_CONF: c.conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); rc = EXIT_OK; break;
		case SL_IGNORE: sl_warn_ignored("sinfo", "", &p, "storm does not have it"); break;
		case SL_REFUSE: rc = sl_refuse("sinfo", "", &p, "use -o/--format"); break;
		case OPT_OPERAND: rc = usage_error("sinfo", "unexpected argument '%s'", p.arg); break;
		default: rc = usage_error("sinfo", "%s", p.err); break;
		}
	}
	if (rc < 0)
		rc = show(&c, &w);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
