/* Pure parsers of the job options storm shares with Slurm: --array,
 * --dependency, --export, and the #STORM / #SBATCH directives of a batch
 * script. No protobuf and no I/O, so the unit tests link this file alone. */
#ifndef STORM_CLI_SLURMOPT_H
#define STORM_CLI_SLURMOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobid.h"

#define ARRAY_MAX_TASKS 10000u  /* tasks of one --array */
#define ARRAY_MAX_INDEX 999999u /* largest task id */

/* --array=0-99%8, 1,3,5-7, 0-15:4 (a step), any of them joined by commas.
 * *tasks (malloc'd, ascending, no repeats), *n, *limit (0: none). 0, or -1
 * with why. */
int parse_array(const char *s, uint32_t **tasks, size_t *n, uint32_t *limit, char *why,
		size_t len);

enum dep_kind { DEP_AFTER = 1, DEP_AFTEROK, DEP_AFTERANY, DEP_AFTERNOTOK };
struct dep {
	enum dep_kind kind;
	struct jobref job;
};
#define DEP_MAX 64
/* --dependency=afterok:12:13,afterany:14_2 (every condition must hold);
 * at most DEP_MAX jobs. 0, or -1 with why. */
int parse_dependency(const char *s, struct dep *out, size_t *n, char *why, size_t len);
const char *dep_kind_name(enum dep_kind k);

/* --export: ALL (the default), NONE, or NAME[=VALUE] entries, with ALL
 * among them for everything plus those. From env, the NULL-ended list the
 * job gets into *out (malloc'd array of pointers; values set on the
 * command line point into the copy *buf). 0, or -1 with why. */
int export_env(const char *spec, char *const *env, char ***out, size_t *n, char **buf,
	       char *why, size_t len);

/* The directives of a batch script's header: lines "#STORM ..." and
 * "#SBATCH ..." before its first line that is neither blank nor a comment
 * (the #! line included), as Slurm reads them. Each directive's words (shell
 * quoting: '...', "...", \x; a word starting with # ends the line) go to the
 * callback with its line number and whether the line was #SBATCH. A
 * callback's non-zero return stops the walk and is returned; -1 with why
 * for unbalanced quotes. */
typedef int (*directive_fn)(void *arg, int line, bool sbatch, int argc, char **argv);
int script_directives(const char *text, size_t len, directive_fn fn, void *arg, char *why,
		      size_t whylen);

#endif
