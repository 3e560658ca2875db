/* Command-line option parsing for the storm CLI: long (--name, --name=V,
 * --name V) and short (-N 4, -N4, bundled flags) options, with a table per
 * command. Kept free of protobuf so the unit tests link it alone. */
#ifndef STORM_CLI_OPTS_H
#define STORM_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>

struct cli_opt {
	const char *name; /* long name without "--"; NULL ends the table */
	char short_name;  /* 0: none */
	int has_arg;      /* 0: none, 1: one, OPT_OPTIONAL: only as --name=V */
	int id;           /* > 0, returned by cli_opt_next */
};

enum { OPT_DONE = 0, OPT_ERROR = -1, OPT_OPERAND = -2 };
/* has_arg of an option whose value is optional (Slurm's --exclusive[=user]):
 * p->arg is NULL unless given as --name=V */
#define OPT_OPTIONAL 2
/* Ids from here up are shared by unrelated options (Slurm's commands give
 * every option they ignore one id): with abbrev, a prefix of two of them is
 * ambiguous, as two options of different ids are. */
#define OPT_ID_SHARED 1000

struct cli_optparse {
	int argc;
	char **argv;
	int ind;             /* next argv index; after OPT_DONE, the first operand */
	int stop_at_operand; /* run/submit: options end at the program, like srun */
	const char *arg;     /* the option's value, or the operand */
	const char *name;    /* the long option's full name, NULL for a short one */
	int abbrev;          /* long options by a unique prefix, as getopt_long (Slurm) */
	char err[256];       /* why OPT_ERROR, without the command name */
	int sub_;            /* position inside bundled short options */
	int only_operands_;  /* after "--" */
};

/* Starts parsing argv[first..argc). */
void cli_opt_init(struct cli_optparse *p, int argc, char **argv, int first, int stop_at_operand);
/* Next option id, OPT_OPERAND (p->arg) when operands may mix with options,
 * OPT_DONE at the end (or at the first operand with stop_at_operand; then
 * p->ind indexes it), OPT_ERROR with p->err. */
int cli_opt_next(struct cli_optparse *p, const struct cli_opt *opts);

/* Whole number in [min, max] written in decimal; 0 or -1. */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Prints "CMD: error: WHY; see 'CMD --help'" on stderr and returns 2, the
 * usage-error exit code. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
