/* Command-line option parsing from a table per command (opts.h). */
#include "opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_opt_init(struct cli_optparse *p, int argc, char **argv, int first, int stop_at_operand)
{
	memset(p, 0, sizeof(*p));
	p->argc = argc;
	p->argv = argv;
	p->ind = first;
	p->stop_at_operand = stop_at_operand;
}

static int fail(struct cli_optparse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(struct cli_optparse *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	/* the message quotes what was typed: keep it one line */
	for (char *c = p->err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return OPT_ERROR;
}

/* The option a long name (nlen bytes) means: its exact name, or with
 * abbrev the one it begins; options of one id below OPT_ID_SHARED are one
 * option's spellings (--name, --jobname) and not ambiguous. */
static const struct cli_opt *find_long(struct cli_optparse *p, const struct cli_opt *opts,
				       const char *name, size_t nlen)
{
	const struct cli_opt *o, *found = NULL;
	for (o = opts; o->name; o++)
		if (strlen(o->name) == nlen && !strncmp(o->name, name, nlen))
			return o;
	if (!p->abbrev || !nlen)
		return NULL;
	size_t n = 0, len = 0;
	char alts[160] = "";
	for (o = opts; o->name; o++) {
		if (strncmp(o->name, name, nlen))
			continue;
		if (found && found->id == o->id && o->id < OPT_ID_SHARED &&
		    found->has_arg == o->has_arg)
			continue;
		found = found ? found : o;
		n++;
		if (len < sizeof(alts))
			len += (size_t)snprintf(alts + len, sizeof(alts) - len, "%s--%s",
						len ? ", " : "", o->name);
	}
	if (n > 1) {
		fail(p, "option '--%.*s' is ambiguous (%s)", (int)nlen, name, alts);
		return NULL;
	}
	return found;
}

static int long_opt(struct cli_optparse *p, const struct cli_opt *opts, const char *a)
{
	const char *name = a + 2, *eq = strchr(name, '=');
	size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
	p->ind++;
	p->err[0] = '\0';
	const struct cli_opt *o = find_long(p, opts, name, nlen);
	if (!o)
		return p->err[0] ? OPT_ERROR
				 : fail(p, "unknown option '--%.*s'", (int)nlen, name);
	p->name = o->name;
	if (o->has_arg == OPT_OPTIONAL) {
		p->arg = eq ? eq + 1 : NULL;
		return o->id;
	}
	if (!o->has_arg) {
		if (eq)
			return fail(p, "option '--%s' takes no value", o->name);
		p->arg = NULL;
		return o->id;
	}
	if (eq) {
		p->arg = eq + 1;
	} else {
		if (p->ind >= p->argc)
			return fail(p, "option '--%s' needs a value", o->name);
		p->arg = p->argv[p->ind++];
	}
	return o->id;
}

static int short_opt(struct cli_optparse *p, const struct cli_opt *opts, const char *a)
{
	char c = a[p->sub_];
	const struct cli_opt *o = opts;
	p->name = NULL;
	while (o->name && o->short_name != c)
		o++;
	if (!o->name) {
		p->sub_ = 0;
		p->ind++;
		return fail(p, "unknown option '-%c'", c);
	}
	if (!o->has_arg || o->has_arg == OPT_OPTIONAL) {
		p->arg = NULL;
		if (a[++p->sub_] == '\0') {
			p->sub_ = 0;
			p->ind++;
		}
		return o->id;
	}
	p->ind++;
	if (a[p->sub_ + 1] != '\0') { /* -N4 */
		p->arg = a + p->sub_ + 1;
	} else {
		if (p->ind >= p->argc) {
			p->sub_ = 0;
			return fail(p, "option '-%c' needs a value", c);
		}
		p->arg = p->argv[p->ind++];
	}
	p->sub_ = 0;
	return o->id;
}

int cli_opt_next(struct cli_optparse *p, const struct cli_opt *opts)
{
	if (p->ind >= p->argc)
		return OPT_DONE;
	const char *a = p->argv[p->ind];
	if (p->sub_ > 0)
		return short_opt(p, opts, a);
	if (p->only_operands_ || a[0] != '-' || a[1] == '\0') {
		if (p->stop_at_operand)
			return OPT_DONE;
		p->arg = a;
		p->ind++;
		return OPT_OPERAND;
	}
	if (!strcmp(a, "--")) {
		p->ind++;
		if (p->stop_at_operand)
			return OPT_DONE;
		p->only_operands_ = 1;
		return cli_opt_next(p, opts);
	}
	if (a[1] == '-')
		return long_opt(p, opts, a);
	p->sub_ = 1;
	return short_opt(p, opts, a);
}

int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!s || s[0] < '0' || s[0] > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: error: %s; see '%s --help'\n", cmd, why, cmd);
	return 2;
}
