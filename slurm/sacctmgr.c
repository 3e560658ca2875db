/* sacctmgr on storm, its read-only part: the users, the one account, their
 * associations and the one cluster, in sacctmgr's fields, widths and
 * parsable formats, from the calling user and the cluster's storm.conf.
 * storm has no user database: every local user may submit, to the one
 * account and partition, both named after the cluster. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "slurm.h"

static const char help[] =
	"Usage: sacctmgr [OPTIONS] show|list ENTITY [where] [CONDITION=VALUE...]\n"
	"                [format=FIELD[%WIDTH],...]\n"
	"\n"
	"Slurm's sacctmgr on a storm cluster, what it shows. storm has one cluster,\n"
	"one account and one partition, each named after the cluster, and no user\n"
	"database: every local user may submit, as a user of that account.\n"
	"\n"
	"  show user [NAME...]     users (default: the calling user): User, Def Acct,\n"
	"                          Admin; withassoc (or -s) adds their associations\n"
	"  show account [NAME...]  the account: Account, Descr, Org; withassoc too\n"
	"  show association        the account's association and its users'\n"
	"  show cluster [NAME...]  the cluster\n"
	"\n"
	"Conditions: user=, account=, cluster=, partition=, defaultaccount=,\n"
	"adminlevel= (show user), description=, organization= (show account);\n"
	"withassoc, withcoord, withdeleted, onlydefaults, wolimits, wopinfo,\n"
	"woplimits; format= with sacctmgr's field names.\n"
	"\n"
	"  -n, --noheader      no header lines\n"
	"  -p, --parsable      fields separated by '|', one after the last too\n"
	"  -P, --parsable2     fields separated by '|'\n"
	"  -s, --associations  show user/account withassoc\n"
	"  -i, -o, -Q, -r, -v  taken (--immediate, --oneliner, --quiet, --readonly,\n"
	"                      --verbose)\n"
	"  -V, --version       the version\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"\n"
	"Refused with one line: add, modify, delete and every other command that\n"
	"changes something; show of qos, tres, events and the other entities.\n";

enum { O_NOHDR = 1, O_P1, O_P2, O_ASSOC, O_QUIET, O_VERSION, O_CONF, O_HELP };
static const struct cli_opt opts[] = {
	{ "noheader", 'n', 0, O_NOHDR },   { "parsable", 'p', 0, O_P1 },
	{ "parsable2", 'P', 0, O_P2 },	   { "associations", 's', 0, O_ASSOC },
	{ "immediate", 'i', 0, O_QUIET },  { "oneliner", 'o', 0, O_QUIET },
	{ "quiet", 'Q', 0, O_QUIET },	   { "readonly", 'r', 0, O_QUIET },
	{ "verbose", 'v', 0, O_QUIET },	   { "version", 'V', 0, O_VERSION },
	{ "conf", 0, 1, O_CONF },	   { "help", 'h', 0, O_HELP },
	{ "usage", 0, 0, O_HELP },	   { NULL, 0, 0, 0 },
};

/* word names keyword: a case-insensitive prefix of it, at least min long,
 * as sacctmgr matches its keywords */
static bool kw(const char *word, size_t len, const char *keyword, size_t min)
{
	return len >= min && len <= strlen(keyword) && !strncasecmp(word, keyword, len);
}

/* ---- what a line shows: one user's, the account's or the cluster's */

enum ent { E_USER, E_ACCOUNT, E_ASSOC, E_CLUSTER };

struct line {
	const char *user;    /* NULL: the account's own association */
	bool assoc;          /* an association's fields are set */
	bool admin;          /* the user is root */
};

struct ctx {
	const char *cluster, *account;
	char host[256], port[16]; /* the MM's ctl_address, for ControlHost/Port */
	int parsable;             /* 0, 1 (-p), 2 (-P) */
	bool noheader;
};

/* A field's value on a line (NULL: printed blank). */
typedef const char *(*value_fn)(const struct ctx *x, enum ent e, const struct line *l);

static const char *v_blank(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)x, (void)e, (void)l;
	return NULL;
}
static const char *v_account(const struct ctx *x, enum ent e, const struct line *l)
{
	return e == E_ACCOUNT || l->assoc ? x->account : NULL;
}
static const char *v_cluster(const struct ctx *x, enum ent e, const struct line *l)
{
	return e == E_CLUSTER || l->assoc ? x->cluster : NULL;
}
static const char *v_user(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)x, (void)e;
	return l->user;
}
static const char *v_defacct(const struct ctx *x, enum ent e, const struct line *l)
{
	return e == E_USER ? x->account : v_blank(x, e, l);
}
static const char *v_admin(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)x;
	return e != E_USER ? NULL : l->admin ? "Administrator" : "None";
}
static const char *v_descr(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)l; /* an account added without a description has its name */
	return e == E_ACCOUNT ? x->account : NULL;
}
static const char *v_share(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)x;
	return e == E_CLUSTER || l->assoc ? "1" : NULL;
}
static const char *v_qos(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)x;
	return e == E_CLUSTER || l->assoc ? "normal" : NULL;
}
static const char *v_host(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)l;
	return e == E_CLUSTER ? x->host : NULL;
}
static const char *v_port(const struct ctx *x, enum ent e, const struct line *l)
{
	(void)l;
	return e == E_CLUSTER ? x->port : NULL;
}

/* sacctmgr's fields: the keyword, the least of it that names it, the
 * header and width (positive: right-justified), as Slurm 22.05 has them;
 * limits and TRES storm does not have print blank. Kept in sacctmgr's
 * order, which decides a prefix that begins two names. */
static const struct field {
	const char *keyword, *alias;
	size_t min, alias_min;
	const char *header;
	int width;
	value_fn value;
} fields[] = {
	{ "Account", "Acct", 3, 4, "Account", 10, v_account },
	{ "AdminLevel", NULL, 2, 0, "Admin", 9, v_admin },
	{ "Clusters", NULL, 2, 0, "Cluster", 10, v_cluster },
	{ "Coordinators", NULL, 2, 0, "Coord Accounts", 20, v_blank },
	{ "ControlHost", NULL, 8, 0, "ControlHost", 15, v_host },
	{ "ControlPort", NULL, 8, 0, "ControlPort", 12, v_port },
	{ "DefaultAccount", NULL, 8, 0, "Def Acct", 10, v_defacct },
	{ "DefaultQOS", NULL, 8, 0, "Def QOS", 9, v_blank },
	{ "DefaultWCKey", NULL, 8, 0, "Def WCKey", 10, v_blank },
	{ "Description", NULL, 3, 0, "Descr", 20, v_descr },
	{ "GrpCPUs", NULL, 6, 0, "GrpCPUs", 8, v_blank },
	{ "GrpCPUMins", NULL, 7, 0, "GrpCPUMins", 11, v_blank },
	{ "GrpTRES", NULL, 7, 0, "GrpTRES", 13, v_blank },
	{ "GrpTRESMins", NULL, 7, 0, "GrpTRESMins", 13, v_blank },
	{ "GrpTRESRunMins", NULL, 7, 0, "GrpTRESRunMins", 13, v_blank },
	{ "GrpJobs", NULL, 4, 0, "GrpJobs", 7, v_blank },
	{ "GrpMemory", NULL, 4, 0, "GrpMem", 7, v_blank },
	{ "GrpNodes", NULL, 4, 0, "GrpNodes", 8, v_blank },
	{ "GrpSubmitJobs", NULL, 4, 0, "GrpSubmit", 9, v_blank },
	{ "GrpWall", NULL, 4, 0, "GrpWall", 11, v_blank },
	{ "MaxCPUMinsPerJob", NULL, 7, 0, "MaxCPUMins", 11, v_blank },
	{ "MaxCPUsPerJob", NULL, 7, 0, "MaxCPUs", 8, v_blank },
	{ "MaxTRES", "MaxTRESPerJob", 7, 11, "MaxTRES", 13, v_blank },
	{ "MaxTRESPerNode", NULL, 11, 0, "MaxTRESPerNode", 14, v_blank },
	{ "MaxTRESMinsPerJob", NULL, 8, 0, "MaxTRESMins", 13, v_blank },
	{ "MaxJobs", NULL, 4, 0, "MaxJobs", 7, v_blank },
	{ "MaxNodesPerJob", NULL, 4, 0, "MaxNodes", 8, v_blank },
	{ "MaxSubmitJobs", NULL, 4, 0, "MaxSubmit", 9, v_blank },
	{ "MaxWallDurationPerJob", NULL, 4, 0, "MaxWall", 11, v_blank },
	{ "Organization", NULL, 1, 0, "Org", 20, v_descr },
	{ "ParentName", NULL, 7, 0, "ParentName", 10, v_blank },
	{ "Partition", NULL, 4, 0, "Partition", 10, v_blank },
	{ "Priority", NULL, 3, 0, "Priority", 10, v_blank },
	{ "QOSLevel", NULL, 3, 0, "QOS", 20, v_qos },
	{ "RPC", NULL, 1, 0, "RPC", 5, v_blank },
	{ "Share", "FairShare", 1, 2, "Share", 9, v_share },
	{ "User", NULL, 1, 0, "User", 10, v_user },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
#define MAX_COLS 64

struct col {
	const struct field *f;
	int width;
};

/* "Account%256" into a column: 0, or -1 after sacctmgr's message. */
static int parse_field(const char *spec, size_t len, struct col *c)
{
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)(len < 63 ? len : 63), spec);
	char *pct = strchr(name, '%');
	c->width = 0;
	if (pct) {
		c->width = atoi(pct + 1);
		*pct = '\0';
	}
	size_t n = strlen(name);
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct field *f = &fields[i];
		if (kw(name, n, f->keyword, f->min) || (f->alias && kw(name, n, f->alias, f->alias_min))) {
			c->f = f;
			if (!c->width)
				c->width = f->width;
			return 0;
		}
	}
	fprintf(stderr, "Unknown field '%s'\n", name);
	return -1;
}

/* format= lists, comma-separated, into cols after those already there. */
static int add_format(const char *list, struct col *cols, int *n)
{
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		if (w) {
			if (*n == MAX_COLS) {
				fprintf(stderr, "sacctmgr: error: format= has more than %d fields\n",
					MAX_COLS);
				return -1;
			}
			if (parse_field(p, w, &cols[*n]) < 0)
				return -1;
			(*n)++;
		}
		p += w + (p[w] == ',');
	}
	return 0;
}

/* ---- printing, as Slurm's print_fields */

static void cell(const struct ctx *x, const struct col *c, const char *v, bool last)
{
	if (x->parsable) {
		fputs(v ? v : "", stdout);
		if (!last || x->parsable == 1)
			putchar('|');
		return;
	}
	int w = abs(c->width);
	char buf[1024];
	if (!v) {
		v = " ";
	} else if ((int)strlen(v) > w && w > 0 && w < (int)sizeof(buf)) {
		/* too wide: cut, its last character a '+' */
		snprintf(buf, sizeof(buf), "%.*s", w - 1, v);
		strcat(buf, "+");
		v = buf;
	}
	printf(c->width < 0 ? "%-*.*s " : "%*.*s ", w, w, v);
}

static void header(const struct ctx *x, const struct col *cols, int n)
{
	if (x->noheader)
		return;
	for (int i = 0; i < n; i++) {
		if (x->parsable) {
			fputs(cols[i].f->header, stdout);
			if (i < n - 1 || x->parsable == 1)
				putchar('|');
		} else {
			int w = abs(cols[i].width);
			printf("%*.*s ", cols[i].width, w, cols[i].f->header);
		}
	}
	putchar('\n');
	if (x->parsable)
		return;
	for (int i = 0; i < n; i++) {
		for (int k = abs(cols[i].width); k > 0; k--)
			putchar('-');
		putchar(' ');
	}
	putchar('\n');
}

static void row(const struct ctx *x, enum ent e, const struct line *l, const struct col *cols,
		int n)
{
	for (int i = 0; i < n; i++)
		cell(x, &cols[i], cols[i].f->value(x, e, l), i == n - 1);
	putchar('\n');
}

/* ---- conditions */

struct cond {
	const char *users, *accounts, *clusters, *partitions, *defaccts, *admins;
	const char *descrs, *orgs;
	bool with_assoc, wo_limits;
	char users_buf[1024]; /* bare names, gathered */
	struct col cols[MAX_COLS];
	int ncol;
};

/* Case-insensitive list membership, as sacctmgr compares names. */
static bool in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		if (w == n && !strncasecmp(p, word, n))
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

static int bare_name(struct cond *q, const char *word)
{
	size_t len = strlen(q->users_buf);
	if (len + strlen(word) + 2 > sizeof(q->users_buf)) {
		fprintf(stderr, "sacctmgr: error: too many names\n");
		return -1;
	}
	snprintf(q->users_buf + len, sizeof(q->users_buf) - len, "%s%s", len ? "," : "", word);
	return 0;
}

/* KEY=VALUE of a show's conditions, or a flag word. 0, or -1 after the
 * message (sacctmgr's " Unknown condition: X"). */
static int one_cond(enum ent e, struct cond *q, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	const char *v = eq ? eq + 1 : NULL;
	bool names = e == E_USER || e == E_ACCOUNT || e == E_CLUSTER;
	if (!v) {
		if (kw(arg, n, "where", 5) || kw(arg, n, "WithCoordinators", 5) ||
		    kw(arg, n, "WithDeleted", 5) || kw(arg, n, "WithRawQOSLevel", 5) ||
		    (e == E_ASSOC && (kw(arg, n, "OnlyDefaults", 2) || kw(arg, n, "WOPInfo", 4))))
			return 0;
		if (e != E_CLUSTER && e != E_ASSOC && kw(arg, n, "WithAssoc", 5)) {
			q->with_assoc = true;
			return 0;
		}
		if ((e == E_ASSOC || e == E_ACCOUNT) && kw(arg, n, "WOPLimits", 4))
			return q->wo_limits = true, 0;
		if ((e == E_ASSOC || e == E_CLUSTER) && kw(arg, n, "WOLimits", 3))
			return q->wo_limits = true, 0;
		if (names)
			return bare_name(q, arg);
	} else if (kw(arg, n, "Format", 1)) {
		return add_format(v, q->cols, &q->ncol);
	} else if (e == E_CLUSTER && (kw(arg, n, "Names", 1) || kw(arg, n, "Clusters", 1))) {
		return bare_name(q, v);
	} else if (e == E_ACCOUNT && (kw(arg, n, "Names", 1) || kw(arg, n, "Accounts", 1) ||
				      kw(arg, n, "Acct", 4))) {
		return bare_name(q, v);
	} else if (e == E_ACCOUNT && kw(arg, n, "Descriptions", 1)) {
		return q->descrs = v, 0;
	} else if (e == E_ACCOUNT && kw(arg, n, "Organizations", 1)) {
		return q->orgs = v, 0;
	} else if (e == E_USER && kw(arg, n, "Names", 1)) {
		return bare_name(q, v);
	} else if (e == E_USER && kw(arg, n, "AdminLevel", 2)) {
		return q->admins = v, 0;
	} else if (e == E_USER && kw(arg, n, "DefaultAccount", 8)) {
		return q->defaccts = v, 0;
	} else if (e != E_CLUSTER && (kw(arg, n, "Accounts", 2) || kw(arg, n, "Acct", 4))) {
		return q->accounts = v, 0;
	} else if (e != E_CLUSTER && kw(arg, n, "Clusters", 1)) {
		return q->clusters = v, 0;
	} else if (e != E_CLUSTER && kw(arg, n, "Partitions", 3)) {
		return q->partitions = v, 0;
	} else if (e != E_CLUSTER && kw(arg, n, "Users", 1)) {
		return e == E_USER ? bare_name(q, v) : (q->users = v, 0);
	}
	fprintf(stderr, " Unknown condition: %s\n", arg);
	return -1;
}

/* ---- the entities */

/* The users a show speaks of: those named that this host has (storm has no
 * database: each may submit), else the calling user. */
static int each_user(const char *names, int (*fn)(void *, const char *, bool), void *arg)
{
	if (!names || !*names) {
		struct passwd *pw = getpwuid(getuid());
		if (!pw) {
			fprintf(stderr, "sacctmgr: error: uid %u has no name on this host\n",
				(unsigned)getuid());
			return -1;
		}
		return fn(arg, pw->pw_name, pw->pw_uid == 0);
	}
	for (const char *p = names; *p;) {
		size_t w = strcspn(p, ",");
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(w < 255 ? w : 255), p);
		struct passwd *pw = w ? getpwnam(name) : NULL;
		if (pw && fn(arg, pw->pw_name, pw->pw_uid == 0) < 0)
			return -1;
		p += w + (p[w] == ',');
	}
	return 0;
}

struct show {
	const struct ctx *x;
	struct cond *q;
	enum ent e;
};

/* The one account, cluster and partition that conditions may ask for. */
static bool assoc_ok(const struct show *s)
{
	const struct cond *q = s->q;
	return (!q->accounts || in_list(q->accounts, s->x->account)) &&
	       (!q->clusters || in_list(q->clusters, s->x->cluster)) &&
	       !q->partitions; /* storm's associations name no partition: all of them */
}

static int user_line(void *arg, const char *name, bool admin)
{
	const struct show *s = arg;
	const struct cond *q = s->q;
	struct line l = { .user = name, .admin = admin, .assoc = s->q->with_assoc };
	if (q->defaccts && !in_list(q->defaccts, s->x->account))
		return 0;
	if (q->admins && !in_list(q->admins, admin ? "Administrator" : "None") &&
	    !in_list(q->admins, admin ? "Admin" : "None"))
		return 0;
	if (q->with_assoc && !assoc_ok(s))
		return 0;
	row(s->x, s->e, &l, q->cols, q->ncol);
	return 0;
}

/* An association line of a user of the account (show assoc, account withassoc). */
static int assoc_user_line(void *arg, const char *name, bool admin)
{
	const struct show *s = arg;
	struct line l = { .user = name, .admin = admin, .assoc = true };
	if (s->q->users && !in_list(s->q->users, name))
		return 0;
	row(s->x, s->e, &l, s->q->cols, s->q->ncol);
	return 0;
}

static int show_user(struct show *s)
{
	return each_user(s->q->users_buf, user_line, s);
}

static int show_assoc(struct show *s)
{
	struct line acct = { .assoc = true };
	if (!assoc_ok(s))
		return 0;
	if (!s->q->users)
		row(s->x, s->e, &acct, s->q->cols, s->q->ncol);
	return each_user(s->q->users, assoc_user_line, s);
}

static int show_account(struct show *s)
{
	const struct cond *q = s->q;
	const char *a = s->x->account;
	if ((q->users_buf[0] && !in_list(q->users_buf, a)) || (q->descrs && !in_list(q->descrs, a)) ||
	    (q->orgs && !in_list(q->orgs, a)))
		return 0;
	if (!q->with_assoc) {
		struct line l = { 0 };
		row(s->x, s->e, &l, q->cols, q->ncol);
		return 0;
	}
	return show_assoc(s);
}

static int show_cluster(struct show *s)
{
	struct line l = { 0 };
	if (!s->q->users_buf[0] || in_list(s->q->users_buf, s->x->cluster))
		row(s->x, s->e, &l, s->q->cols, s->q->ncol);
	return 0;
}

/* sacctmgr's default fields of each entity */
static const char *default_format(enum ent e, const struct cond *q)
{
	switch (e) {
	case E_USER:
		return q->with_assoc ? "U,DefaultA,Ad,Cl,Acc,Part,Share,Priority,MaxJ,MaxN,MaxCPUs,"
				       "MaxS,MaxW,MaxCPUMins,QOS,DefaultQOS"
				     : "U,DefaultA,Ad";
	case E_ACCOUNT:
		return q->with_assoc ? "Acc,Des,O,Cl,ParentN,U,Share,Priority,GrpJ,GrpN,GrpCPUs,"
				       "GrpMEM,GrpS,GrpWall,GrpCPUMins,MaxJ,MaxN,MaxCPUs,MaxS,MaxW,"
				       "MaxCPUMins,QOS,DefaultQOS"
				     : "Acc,Des,O";
	case E_ASSOC:
		return q->wo_limits ? "Cluster,Account,User,Part"
				    : "Cluster,Account,User,Part,Share,Priority,GrpJ,GrpTRES,GrpS,"
				      "GrpWall,GrpTRESMins,MaxJ,MaxTRES,MaxTRESPerN,MaxS,MaxW,"
				      "MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins";
	case E_CLUSTER:
		return q->wo_limits ? "Cl,Controlh,Controlp,RPC"
				    : "Cl,Controlh,Controlp,RPC,Fa,GrpJ,GrpTRES,GrpS,MaxJ,MaxTRES,"
				      "MaxS,MaxW,QOS,DefaultQOS";
	}
	return "";
}

static int entity_of(const char *w, enum ent *e)
{
	size_t n = strlen(w);
	if (kw(w, n, "Accounts", 2) || kw(w, n, "Acct", 4))
		*e = E_ACCOUNT;
	else if (kw(w, n, "Associations", 2))
		*e = E_ASSOC;
	else if (kw(w, n, "Clusters", 2))
		*e = E_CLUSTER;
	else if (kw(w, n, "Users", 1))
		*e = E_USER;
	else
		return -1;
	return 0;
}

/* The one account, cluster and the MM's address from storm.conf. */
static int load(struct cli *c, struct ctx *x)
{
	if (cli_load_conf(c) != 0)
		return EXIT_STORM;
	x->cluster = x->account = c->conf.name[0] ? c->conf.name : "storm";
	if (!c->conf.ctl_address[0] ||
	    conf_address(c->conf.ctl_address, x->host, sizeof(x->host), x->port,
			 sizeof(x->port)) < 0)
		snprintf(x->port, sizeof(x->port), "0");
	return EXIT_OK;
}

static int show(struct cli *c, struct ctx *x, bool with_assoc, int argc, char **argv)
{
	enum ent e;
	if (argc < 1 || entity_of(argv[0], &e) < 0) {
		fprintf(stderr, "sacctmgr: error: show %s: storm shows user, account, association "
			"and cluster\n", argc < 1 ? "what?" : argv[0]);
		return EXIT_USAGE;
	}
	int rc = load(c, x);
	if (rc != EXIT_OK)
		return rc;
	struct cond *q = calloc(1, sizeof(*q));
	if (!q)
		return EXIT_STORM;
	q->with_assoc = with_assoc;
	for (int i = 1; i < argc && rc == EXIT_OK; i++)
		if (one_cond(e, q, argv[i]) < 0)
			rc = EXIT_STORM;
	if (rc == EXIT_OK && !q->ncol && add_format(default_format(e, q), q->cols, &q->ncol) < 0)
		rc = EXIT_STORM;
	struct show s = { .x = x, .q = q, .e = e };
	if (rc == EXIT_OK) {
		header(x, q->cols, q->ncol);
		int r = e == E_USER ? show_user(&s) : e == E_ACCOUNT ? show_account(&s)
			: e == E_ASSOC ? show_assoc(&s) : show_cluster(&s);
		rc = r < 0 ? EXIT_STORM : EXIT_OK;
	}
	free(q);
	if (fflush(stdout) != 0)
		rc = EXIT_STORM;
	return rc;
}

static int run(struct cli *c, struct ctx *x, bool with_assoc, int argc, char **argv)
{
	size_t n = strlen(argv[0]);
	if (kw(argv[0], n, "show", 3) || kw(argv[0], n, "list", 3))
		return show(c, x, with_assoc, argc - 1, argv + 1);
	if (kw(argv[0], n, "help", 2)) {
		fputs(help, stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "sacctmgr: error: %s is not supported: storm's sacctmgr only shows "
		"(show user, account, association, cluster)\n", argv[0]);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "sacctmgr" };
	struct ctx x = { 0 };
	struct cli_optparse p;
	bool with_assoc = false;
	int id, nw = 0, rc = -1;
	/* the command's words, options among them taken as getopt_long does */
	char **words = calloc((size_t)argc + 1, sizeof(char *));
	if (!words)
		return EXIT_STORM;
	sl_opt_init(&p, argc, argv, 0);
	while (rc < 0 && (id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case O_NOHDR: x.noheader = true; break;
		case O_P1: x.parsable = 1; break;
		case O_P2: x.parsable = 2; break;
		case O_ASSOC: with_assoc = true; break;
		case O_QUIET: break;
		case O_VERSION: puts("slurm 22.05 (storm)"); rc = EXIT_OK; break;
		case O_CONF: c.conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); rc = EXIT_OK; break;
		case OPT_OPERAND: words[nw++] = (char *)p.arg; break;
		default: rc = usage_error("sacctmgr", "%s", p.err); break;
		}
	}
	if (rc < 0 && !nw)
		rc = usage_error("sacctmgr", "no command (storm's sacctmgr takes one on its "
			"command line, not from stdin)");
	if (rc < 0)
		rc = run(&c, &x, with_assoc, nw, words);
	free(words);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
