/* sbatch's options, one parser for the sbatch command line and a batch
 * script's #SBATCH lines alike (so a script says what the command line
 * may, spelled as Slurm's getopt_long takes it), and what Slurm's commands
 * on storm share to take the options storm does not have: a warning for
 * one it ignores, one line for one it refuses. */
#ifndef STORM_CLI_SBATCHOPT_H
#define STORM_CLI_SBATCHOPT_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "opts.h"

struct job_opts;

/* Option ids every command's table may use for what storm lacks: shared by
 * unrelated options, so a prefix of two of them is ambiguous (opts.h). */
enum { SL_IGNORE = OPT_ID_SHARED, SL_REFUSE = OPT_ID_SHARED + 1 };
/* -p/--partition and -A/--account: taken quietly when they name storm's one
 * partition or account (the cluster's name), ignored with a warning else */
enum { SL_PARTITION = OPT_ID_SHARED + 2, SL_ACCOUNT = OPT_ID_SHARED + 3 };
struct sl_names {
	const char *partition, *account;
};
/* Keeps the value of an SL_PARTITION or SL_ACCOUNT option. */
void sl_names_take(struct sl_names *n, int id, const char *arg);
/* After the options (storm.conf may come with --conf): a warning for a
 * partition or account other than storm's, after where ("job.sh: " or "").
 * -1 to go on, or the exit code when no storm.conf is found. */
int sl_names_check(struct cli *c, const char *cmd, const char *where, const struct sl_names *n);

/* cli_opt_init, with long options taken by a unique prefix as Slurm's
 * getopt_long takes them (sbatch --part=x, squeue --noh). */
void sl_opt_init(struct cli_optparse *p, int argc, char **argv, int stop_at_operand);
/* An option of Slurm's storm does not have: a one-line warning naming it
 * (a long one in full, else the word as typed, cut at '='), then the
 * command goes on. where: "" or "job.sh:3: ". */
void sl_warn_ignored(const char *cmd, const char *where, const struct cli_optparse *p,
		     const char *why);
/* One that would change what runs if ignored: a one-line error; exit code 2. */
int sl_refuse(const char *cmd, const char *where, const struct cli_optparse *p, const char *why);
/* A count of 1 to 2^20 (nodes, tasks) into *out: -1, or cmd's usage exit
 * naming the option (what). */
int sl_count(const char *cmd, const char *what, const char *arg, uint64_t *out);
/* Comma-separated list membership (-p a,b / -j 1,2 / --name x,y). */
bool sl_in_list(const char *list, const char *word);

/* What sbatch's options asked, from a script's #SBATCH lines and then its
 * command line (the later wins, as Slurm's second pass over the command
 * line). Values point into the words parsed, which must outlive it. */
struct sbatch_opts {
	struct sl_names names;
	uint64_t nodes, ntasks, per_node;
	const char *name, *output, *error, *time, *dep, *array, *export, *chdir, *wrap, *mpi;
	int wait, parsable, overcommit;
	int help; /* -h/--help: sbatch prints its help */
};

/* Parses argv[first..argc) into s: on sbatch's command line (where "",
 * options end at the script: *ind is its index) or on a script's #SBATCH
 * line (where "job.sh:3: "; an operand ends the line with a warning, as
 * the options after it would not be read). -1 to go on, else the exit code
 * after one line saying why, as sbatch's: an option Slurm does not have
 * is an error, one storm ignores a warning, one it refuses an error. */
int sbatch_parse(struct cli *c, const char *cmd, const char *where, int argc, char **argv,
		 int first, struct sbatch_opts *s, int *ind);

/* s's options into o as storm submit's (--ntasks-per-node as the tasks of
 * -N nodes or the nodes of -n tasks; -D as the job's working directory).
 * under: the script's, when s is sbatch's command line: a shape s gives in
 * part is completed from it (#SBATCH --ntasks-per-node=2 with sbatch -N 3
 * is 6 tasks, as Slurm's). -1 to go on, else the exit code. */
int sbatch_apply(struct cli *c, const char *where, const struct sbatch_opts *s,
		 const struct sbatch_opts *under, struct job_opts *o);
/* Once every layer is in (#SBATCH lines, #STORM lines, the command line)
 * and the job's output file is known (its -o, else the command's default;
 * we are in the job's directory): a warning when -e names another file,
 * as a storm job's stderr goes to its output file. Not before, as a later
 * layer may give the -o that makes them one. */
void sbatch_check_error(const char *cmd, const struct job_opts *o, const char *output);

#endif
