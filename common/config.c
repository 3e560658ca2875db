/* storm.conf, parsed with inih and checked (config.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "layout.h"

struct parse {
	struct storm_conf *c;
	char *err;
	size_t errlen;
	int failed;
	char nodes_spec[STORM_CONF_MAX_NODES * HOSTNAME_MAX]; /* 1000 names, uncompressed */
	char reason[256];
	int mpl_set;
	int down_ms_set;
	int line, err_line;      /* lines read; the line of a reader error */
};

/* What ini_parse_stream reads from: a string or a file. inih (as Debian
 * builds it) cuts a line at INI_MAX_LINE (200) and parses the rest as a line
 * of its own, so a long comment could set a key and a long value was cut:
 * this reader refuses such a line instead, naming it. */
struct source {
	const char *s;
	FILE *f;
	struct parse *p;
};

static int source_getc(struct source *src)
{
	if (src->f)
		return fgetc(src->f);
	return *src->s ? (unsigned char)*src->s++ : EOF;
}

static void source_ungetc(struct source *src, int c)
{
	if (src->f)
		ungetc(c, src->f);
	else
		src->s--;
	(void)c;
}

static char *read_line(char *str, int num, void *stream)
{
	struct source *src = stream;
	struct parse *p = src->p;
	int n = 0, c = EOF;
	if (p->failed)
		return NULL;
	while (n < num - 1 && (c = source_getc(src)) != EOF) {
		str[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n == 0)
		return NULL;
	p->line++;
	if (n == num - 1 && str[n - 1] != '\n') {
		/* full: the line ends here or it is too long */
		c = source_getc(src);
		if (c == '\r')
			c = source_getc(src);
		if (c != EOF && c != '\n') {
			source_ungetc(src, c);
			snprintf(p->reason, sizeof(p->reason),
				 "line longer than %d characters (continue a long names list on "
				 "indented lines)", num - 1);
			p->failed = 1;
			p->err_line = p->line;
			return NULL;
		}
	}
	str[n] = '\0';
	return str;
}

struct uint_key {
	const char *section, *name;
	size_t off;
	unsigned min, max;
};

static const struct uint_key uint_keys[] = {
	{ "cluster", "timeslice_us", offsetof(struct storm_conf, timeslice_us), 100, 10000000 },
	{ "cluster", "down_after_ms", offsetof(struct storm_conf, down_after_ms), 1, 3600000 },
	{ "cluster", "down_after", offsetof(struct storm_conf, down_after), 2, 1000000 },
	{ "cluster", "report_every", offsetof(struct storm_conf, report_every), 1, 100000 },
	{ "cluster", "fanout", offsetof(struct storm_conf, fanout), 2, 64 },
	{ "cluster", "op_timeout_ms", offsetof(struct storm_conf, op_timeout_ms), 10, 600000 },
	{ "cluster", "kill_wait_ms", offsetof(struct storm_conf, kill_wait_ms), 0, 600000 },
	{ "cluster", "checkpoint_copies", offsetof(struct storm_conf, checkpoint_copies), 0, 1 },
	{ "cluster", "bcs_data_tags", offsetof(struct storm_conf, bcs_data_tags), 0, 1 },
	{ "cluster", "bcs_rank_writes", offsetof(struct storm_conf, bcs_rank_writes), 0, 1 },
	{ "cluster", "job_end_combined", offsetof(struct storm_conf, job_end_combined), 0, 1 },
	{ "nodes", "cpus", offsetof(struct storm_conf, cpus), 1, 4096 },
	{ "scheduler", "quantum", offsetof(struct storm_conf, quantum), 1, 1000000 },
	{ "scheduler", "min_timeslice_us", offsetof(struct storm_conf, min_timeslice_us), 100,
	  10000000 },
	{ "scheduler", "mpl", offsetof(struct storm_conf, mpl), 1, STORM_MAX_MPL },
	{ "scheduler", "ahead", offsetof(struct storm_conf, ahead), 0, STROBE_AHEAD_MAX },
	{ "scheduler", "switch_wait_pct", offsetof(struct storm_conf, switch_wait_pct), 0, 90 },
	{ "metrics", "port", offsetof(struct storm_conf, metrics_port), 0, 65535 },
};

const char *const storm_policy_names[] = {"gang", "fcfs", NULL};
const char *const storm_switch_names[] = {"signals", "freezer", NULL};
const char *const storm_db_sync_names[] = {"normal", "full", NULL};

struct enum_key {
	const char *section, *name;
	size_t off;
	const char *const *values;
};

static const struct enum_key enum_keys[] = {
	{ "scheduler", "policy", offsetof(struct storm_conf, policy), storm_policy_names },
	{ "scheduler", "switch", offsetof(struct storm_conf, switch_mode), storm_switch_names },
	{ "cluster", "database_sync", offsetof(struct storm_conf, database_sync),
	  storm_db_sync_names },
};

struct str_key {
	const char *section, *name;
	size_t off, size;
};

#define STR_KEY(sec, field) \
	{ sec, #field, offsetof(struct storm_conf, field), sizeof(((struct storm_conf *)0)->field) }
static const struct str_key str_keys[] = {
	STR_KEY("cluster", name),     STR_KEY("cluster", provider),
	STR_KEY("cluster", sys_provider), STR_KEY("cluster", state_dir),
	STR_KEY("cluster", socket),   STR_KEY("cluster", bootstrap),
	STR_KEY("cluster", mm_address), STR_KEY("cluster", ctl_address),
	STR_KEY("cluster", database),
	STR_KEY("cluster", key_file), STR_KEY("cluster", munge_socket),
	{ "metrics", "address", offsetof(struct storm_conf, metrics_address),
	  sizeof(((struct storm_conf *)0)->metrics_address) },
};

/* inih (as Debian builds it) does not pass line numbers to the handler, but
 * returns the line of the first handler error; finish() prefixes it. */
static int bad(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
	va_end(ap);
	p->failed = 1;
	return 0;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	if (p->failed)
		return 0;
	for (size_t i = 0; i < sizeof(uint_keys) / sizeof(uint_keys[0]); i++) {
		const struct uint_key *k = &uint_keys[i];
		if (strcmp(section, k->section) || strcmp(name, k->name))
			continue;
		char *end;
		errno = 0;
		unsigned long v = strtoul(value, &end, 10);
		if (errno || end == value || *end || value[0] == '-')
			return bad(p, "%s must be a whole number, not '%s'", name, value);
		if (v < k->min || v > k->max)
			return bad(p, "%s = %lu is out of range [%u, %u]", name, v, k->min,
				   k->max);
		*(unsigned *)((char *)p->c + k->off) = (unsigned)v;
		if (!strcmp(name, "mpl"))
			p->mpl_set = 1;
		if (!strcmp(name, "down_after_ms"))
			p->down_ms_set = 1;
		return 1;
	}
	for (size_t i = 0; i < sizeof(str_keys) / sizeof(str_keys[0]); i++) {
		const struct str_key *k = &str_keys[i];
		if (strcmp(section, k->section) || strcmp(name, k->name))
			continue;
		if (strlen(value) >= k->size)
			return bad(p, "%s is too long (at most %zu characters)", name,
				   k->size - 1);
		memcpy((char *)p->c + k->off, value, strlen(value) + 1);
		return 1;
	}
	for (size_t i = 0; i < sizeof(enum_keys) / sizeof(enum_keys[0]); i++) {
		const struct enum_key *k = &enum_keys[i];
		if (strcmp(section, k->section) || strcmp(name, k->name))
			continue;
		char choices[128] = "";
		for (int v = 0; k->values[v]; v++) {
			if (!strcmp(value, k->values[v])) {
				*(int *)((char *)p->c + k->off) = v;
				return 1;
			}
			snprintf(choices + strlen(choices), sizeof(choices) - strlen(choices), "%s%s",
				 v ? ", " : "", k->values[v]);
		}
		return bad(p, "%s must be one of %s, not '%s'", name, choices, value);
	}
	if (!strcmp(section, "nodes") && !strcmp(name, "names")) {
		/* an indented line continues the list (inih passes it as the same
		 * key again): join the pieces with a comma */
		size_t have = strlen(p->nodes_spec);
		bool sep = have && p->nodes_spec[have - 1] != ',' && value[0] != ',';
		if (have + sep + strlen(value) >= sizeof(p->nodes_spec))
			return bad(p, "names is too long (at most %zu characters)",
				   sizeof(p->nodes_spec) - 1);
		snprintf(p->nodes_spec + have, sizeof(p->nodes_spec) - have, "%s%s",
			 sep ? "," : "", value);
		return 1;
	}
	if (!section[0])
		return bad(p, "'%s' outside any section ([cluster], [scheduler] or [nodes])", name);
	return bad(p, "unknown key '%s' in [%s]", name, section);
}

unsigned conf_down_slices(const struct storm_conf *c)
{
	uint64_t us = (uint64_t)c->down_after_ms * 1000;
	uint64_t n = (us + c->timeslice_us - 1) / c->timeslice_us;
	return n > UINT_MAX ? UINT_MAX : (unsigned)n;
}

unsigned conf_slices_to_ms(unsigned slices, unsigned timeslice_us)
{
	uint64_t ms = ((uint64_t)slices * timeslice_us + 999) / 1000;
	return ms > UINT_MAX ? UINT_MAX : (unsigned)ms;
}

static void defaults(struct storm_conf *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	strcpy(c->name, "storm");
	strcpy(c->provider, "tcp;ofi_rxm");
	c->timeslice_us = 10000;
	c->down_after_ms = 5000; /* a loaded host stalls a daemon for a second or more */
	c->report_every = 10;
	c->fanout = 4;
	c->op_timeout_ms = 5000;
	c->kill_wait_ms = 5000;
	c->checkpoint_copies = 1;
	c->bcs_data_tags = 1;
	c->bcs_rank_writes = 1;
	c->job_end_combined = 1;
	strcpy(c->state_dir, "/var/lib/storm");
	strcpy(c->socket, "/run/storm/mm.sock");
	strcpy(c->metrics_address, "127.0.0.1");
	/* bootstrap: set by finish(), after mm_address is known */
	strcpy(c->key_file, "/etc/storm/cluster.key");
	c->cpus = 4;
	c->quantum = 1;
	c->min_timeslice_us = 1000;
	c->mpl = 2;
	c->policy = POLICY_GANG;
	c->switch_mode = SWITCH_SIGNALS;
	c->ahead = 4;
	c->switch_wait_pct = 25;
}

/* whole: the configuration's cross-key checks one after the other, each a test and its error */
static int finish(struct parse *p, int rc)
{
	struct storm_conf *c = p->c;
	if (p->failed) {
		snprintf(p->err, p->errlen, "%s:%d: %s", c->path, p->err_line ? p->err_line : rc,
			 p->reason);
		return -1;
	}
	if (rc < 0) {
		snprintf(p->err, p->errlen, "%s: %s", c->path, strerror(errno ? errno : EIO));
		return -1;
	}
	if (rc > 0) {
		snprintf(p->err, p->errlen, "%s:%d: syntax error (expected [section] or key = value)",
			 c->path, rc);
		return -1;
	}
	if (c->down_after) {
		if (p->down_ms_set) {
			snprintf(p->err, p->errlen,
				 "%s: both down_after_ms and the deprecated down_after (timeslices) "
				 "are set; keep down_after_ms", c->path);
			return -1;
		}
		c->down_after_ms = conf_slices_to_ms(c->down_after, c->timeslice_us);
		c->down_after = 0;
	}
	if ((uint64_t)c->report_every * c->timeslice_us * 2 > (uint64_t)c->down_after_ms * 1000) {
		snprintf(p->err, p->errlen,
			 "%s: report_every (%u timeslices of %u us) must be at most half of "
			 "down_after_ms (%u), or idle nodes would be declared DOWN between "
			 "their reports",
			 c->path, c->report_every, c->timeslice_us, c->down_after_ms);
		return -1;
	}
	if (c->policy == POLICY_FCFS) {
		/* first come, first served runs one job per node: a matrix of one row */
		if (p->mpl_set && c->mpl != 1) {
			snprintf(p->err, p->errlen,
				 "%s: policy = fcfs runs one job per node, so mpl must be 1 (it is %u); "
				 "use policy = gang to time-share nodes",
				 c->path, c->mpl);
			return -1;
		}
		c->mpl = 1;
	}
	if (!p->nodes_spec[0]) {
		snprintf(p->err, p->errlen, "%s: no nodes (set names = ... in [nodes])", c->path);
		return -1;
	}
	if (!c->bootstrap[0])
		strcpy(c->bootstrap, c->mm_address[0] ? "mm" : "dir:/run/storm/fabric");
	char host[256], port[16];
	if (c->mm_address[0] && conf_address(c->mm_address, host, sizeof(host), port, sizeof(port))) {
		snprintf(p->err, p->errlen, "%s: mm_address must be HOST:PORT, not '%s'", c->path,
			 c->mm_address);
		return -1;
	}
	if (c->ctl_address[0] && conf_address(c->ctl_address, host, sizeof(host), port, sizeof(port))) {
		snprintf(p->err, p->errlen, "%s: ctl_address must be HOST:PORT, not '%s'", c->path,
			 c->ctl_address);
		return -1;
	}
	/* two listeners, two protocols: one port cannot serve both */
	if (c->ctl_address[0] && !strcmp(c->ctl_address, c->mm_address)) {
		snprintf(p->err, p->errlen, "%s: ctl_address and mm_address are both '%s'; they "
			 "need different ports", c->path, c->ctl_address);
		return -1;
	}
	char *end = NULL;
	unsigned long sport = !strncmp(c->bootstrap, "static:", 7)
				      ? strtoul(c->bootstrap + 7, &end, 10) : 0;
	if (!strcmp(c->bootstrap, "mm")) {
		if (!c->mm_address[0]) {
			snprintf(p->err, p->errlen, "%s: bootstrap = mm needs mm_address = HOST:PORT",
				 c->path);
			return -1;
		}
	} else if (end) {
		if (end == c->bootstrap + 7 || *end || sport == 0 || sport > 65535) {
			snprintf(p->err, p->errlen, "%s: bootstrap = static:PORT needs a port "
				 "(1-65535), not '%s'", c->path, c->bootstrap + 7);
			return -1;
		}
		if (!c->mm_address[0]) {
			snprintf(p->err, p->errlen, "%s: bootstrap = static needs mm_address = "
				 "HOST:PORT for the MM's host", c->path);
			return -1;
		}
	} else if (strncmp(c->bootstrap, "dir:", 4) != 0 || !c->bootstrap[4]) {
		snprintf(p->err, p->errlen,
			 "%s: bootstrap must be mm, static:PORT or dir:PATH, not '%s'", c->path,
			 c->bootstrap);
		return -1;
	}
	c->nodes = calloc(STORM_CONF_MAX_NODES, sizeof(*c->nodes));
	if (!c->nodes) {
		snprintf(p->err, p->errlen, "%s: out of memory", c->path);
		return -1;
	}
	char herr[256];
	c->nnodes = hostlist_expand(p->nodes_spec, c->nodes, STORM_CONF_MAX_NODES, herr,
				    sizeof(herr));
	if (c->nnodes < 0) {
		snprintf(p->err, p->errlen, "%s: [nodes] names: %s", c->path, herr);
		conf_free(c);
		return -1;
	}
	return 0;
}

int conf_address(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *a = addr, *colon;
	size_t hl;
	if (a[0] == '[') {
		const char *close = strchr(a, ']');
		if (!close || close[1] != ':')
			return -1;
		a++;
		hl = (size_t)(close - a);
		colon = close + 1;
	} else {
		colon = strrchr(a, ':');
		if (!colon || strchr(a, ':') != colon)
			return -1;
		hl = (size_t)(colon - a);
	}
	char *end;
	unsigned long v = strtoul(colon + 1, &end, 10);
	if (!hl || hl >= hostlen || end == colon + 1 || *end || v == 0 || v > 65535)
		return -1;
	memcpy(host, a, hl);
	host[hl] = '\0';
	snprintf(port, portlen, "%lu", v);
	return 0;
}

int conf_load(const char *path, struct storm_conf *c, char *err, size_t errlen)
{
	struct parse p = { .c = c, .err = err, .errlen = errlen };
	defaults(c, path);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "cannot read configuration %s: %s", path, strerror(errno));
		return -1;
	}
	struct source src = { .f = f, .p = &p };
	int rc = ini_parse_stream(read_line, &src, on_key, &p);
	fclose(f);
	return finish(&p, rc);
}

int conf_load_string(const char *text, const char *path, struct storm_conf *c, char *err,
		     size_t errlen)
{
	struct parse p = { .c = c, .err = err, .errlen = errlen };
	defaults(c, path);
	struct source src = { .s = text, .p = &p };
	return finish(&p, ini_parse_stream(read_line, &src, on_key, &p));
}

void conf_free(struct storm_conf *c)
{
	free(c->nodes);
	c->nodes = NULL;
	c->nnodes = 0;
}

int conf_node_index(const struct storm_conf *c, const char *name)
{
	for (int i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i], name))
			return i;
	return -1;
}

/* inih reads lines of at most this many characters (read_line) */
#define CONF_LINE_MAX 199
#define NAMES_LINE 120 /* names per line, wrapped onto indented lines */

/* The node list as "names = L1\n  L2\n...", each Li a host list of its own
 * of at most NAMES_LINE characters where the names allow it. */
static int print_names(const struct storm_conf *c, FILE *f)
{
	const char **names = malloc(sizeof(*names) * (size_t)(c->nnodes ? c->nnodes : 1));
	char *list = malloc(CONF_LINE_MAX + 1), *fit = malloc(CONF_LINE_MAX + 1);
	if (!names || !list || !fit) {
		free(names);
		free(list);
		free(fit);
		return -ENOMEM;
	}
	for (int i = 0; i < c->nnodes; i++)
		names[i] = c->nodes[i];
	fputs("names =", f);
	int rc = 0;
	for (int i = 0; i < c->nnodes;) {
		/* the longest run from i whose compressed form fits a line */
		int j = i + 1;
		hostlist_compress(names + i, 1, fit, CONF_LINE_MAX + 1);
		while (j < c->nnodes &&
		       hostlist_compress(names + i, j + 1 - i, list, CONF_LINE_MAX + 1) <= NAMES_LINE) {
			memcpy(fit, list, strlen(list) + 1);
			j++;
		}
		fprintf(f, "%s%s\n", i ? "  " : " ", fit);
		i = j;
	}
	if (!c->nnodes)
		fputc('\n', f);
	free(names);
	free(list);
	free(fit);
	return rc;
}

int conf_print(const struct storm_conf *c, FILE *f)
{
	/* a value inih would cut would not read back */
	const char *strs[] = { c->name,	  c->provider, c->sys_provider, c->state_dir,
			       c->socket, c->bootstrap, c->key_file,	c->munge_socket,
			       c->mm_address, c->ctl_address,
			       c->database };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strlen(strs[i]) + strlen("sys_provider = ") > CONF_LINE_MAX)
			return -ENAMETOOLONG;
	fprintf(f,
		"# storm cluster configuration (docs/storm.conf.md)\n"
		"[cluster]\nname = %s\nprovider = %s\n%s%s%s"
		"timeslice_us = %u\ndown_after_ms = %u\nreport_every = %u\nfanout = %u\n"
		"op_timeout_ms = %u\n"
		"kill_wait_ms = %u\nstate_dir = %s\nsocket = %s\nbootstrap = %s\n%s%s%s%s%s%s"
		"key_file = %s\n%s%s%s%s%s%s%s%s%s%s%s\n"
		"[scheduler]\npolicy = %s\nmpl = %u\nquantum = %u\nmin_timeslice_us = %u\n"
		"switch = %s\nahead = %u\nswitch_wait_pct = %u\n\n"
		"[nodes]\ncpus = %u\n",
		c->name, c->provider, c->sys_provider[0] ? "sys_provider = " : "",
		c->sys_provider, c->sys_provider[0] ? "\n" : "", c->timeslice_us, c->down_after_ms,
		c->report_every, c->fanout, c->op_timeout_ms, c->kill_wait_ms, c->state_dir, c->socket,
		c->bootstrap, c->mm_address[0] ? "mm_address = " : "", c->mm_address,
		c->mm_address[0] ? "\n" : "", c->ctl_address[0] ? "ctl_address = " : "",
		c->ctl_address, c->ctl_address[0] ? "\n" : "", c->key_file,
		c->munge_socket[0] ? "munge_socket = " : "",
		c->munge_socket, c->munge_socket[0] ? "\n" : "", c->database[0] ? "database = " : "",
		c->database, c->database[0] ? "\n" : "",
		c->database_sync == DB_SYNC_FULL ? "database_sync = full\n" : "",
		c->checkpoint_copies ? "" : "checkpoint_copies = 0\n",
		c->bcs_data_tags ? "" : "bcs_data_tags = 0\n",
		c->bcs_rank_writes ? "" : "bcs_rank_writes = 0\n",
		c->job_end_combined ? "" : "job_end_combined = 0\n",
		storm_policy_names[c->policy], c->mpl,
		c->quantum, c->min_timeslice_us,
		storm_switch_names[c->switch_mode], c->ahead, c->switch_wait_pct, c->cpus);
	int rc = print_names(c, f);
	if (rc == 0 && c->metrics_port)
		fprintf(f, "\n[metrics]\nport = %u\naddress = %s\n", c->metrics_port,
			c->metrics_address);
	if (rc == 0 && ferror(f))
		rc = -EIO;
	return rc;
}

int conf_write(const struct storm_conf *c, const char *path)
{
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	int rc = conf_print(c, f);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}
