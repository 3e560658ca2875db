/* What Slurm's client commands on storm share: Slurm's names for storm's
 * job states and exit codes, the options storm does not have (ignored with
 * a warning or refused), and the cluster's jobs as one list of rows. */
#ifndef STORM_SLURM_H
#define STORM_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "jobtable.h"
#include "opts.h"

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
 * partition or account other than storm's. -1 to go on, or the exit code
 * when no storm.conf is found. */
int sl_names_check(struct cli *c, const char *cmd, const struct sl_names *n);

/* Slurm's name for a job state (PENDING, RUNNING, ..., NODE_FAIL); reason
 * tells a job that failed with its node from one whose rank failed. */
const char *sl_state(int state, const char *reason);
/* squeue's %t: PD, R, CD, F, CA, S, TO, NF. */
const char *sl_state_short(const char *slurm_state);
/* storm's exit status as Slurm's CODE:SIGNAL ("0:0", "3:0", "0:15"). */
void sl_exitcode(int32_t status, int state, char *out, size_t len);

/* cli_opt_init, with long options taken by a unique prefix as Slurm's
 * getopt_long takes them (sbatch --part=x, squeue --noh). */
void sl_opt_init(struct cli_optparse *p, int argc, char **argv, int stop_at_operand);

/* An option of Slurm's storm does not have: a one-line warning naming it
 * (the word as typed, cut at '='), then the command goes on. */
void sl_warn_ignored(const char *cmd, const struct cli_optparse *p, const char *why);
/* One that would change what runs if ignored: a one-line error; exit code 2. */
int sl_refuse(const char *cmd, const struct cli_optparse *p, const char *why);
/* The storm command line a Slurm command builds from its options. */
struct sl_args {
	char *v[128];
	int n;
};
/* Appends opt (and val unless NULL): -1, or cmd's usage exit when full. */
int sl_add(const char *cmd, struct sl_args *a, const char *opt, const char *val);
/* A count of 1 to 2^20 (nodes, tasks) into *out: -1, or cmd's usage exit
 * naming the option (what). */
int sl_count(const char *cmd, const char *what, const char *arg, uint64_t *out);

/* The cluster's jobs, as the rows of a table: those the machine manager
 * runs or keeps (queued, running, recently ended), then with acct the ended
 * ones of its database that it no longer keeps, each job followed by its
 * batch line and steps as sacct lists them. */
struct sl_row {
	struct job_row r;  /* its slurm_exit points at exit */
	uint64_t raw;      /* the job's number as the daemons carry it */
	uint64_t job;      /* the job's (a step's allocation's) */
	bool batch, step;  /* JOB.batch, JOB.N */
	char exit[16];     /* CODE:SIGNAL */
};
struct sl_jobs {
	struct sl_row *v;
	size_t n;
	char partition[64]; /* the cluster's name, its one partition */
	char account[64];   /* the one account every user submits to: the same */
	void *replies_[2];
};
/* live: the machine manager's list of its jobs; acct: its database. 0, or
 * the exit code after printing why. */
int sl_jobs_load(struct cli *c, bool live, bool acct, struct sl_jobs *j);
void sl_jobs_free(struct sl_jobs *j);

/* "12", "12_3", "12.0", "12.batch" as -j takes it: this row? A job's id
 * names its batch line and steps too, an array's every task. */
bool sl_row_matches_id(const struct sl_row *r, const char *id);
/* Comma-separated list membership (-j 1,2 / -u a,b / --name x,y). */
bool sl_in_list(const char *list, const char *word);
/* squeue's and sinfo's -o: literal text and %[.][N]X fields ('.' right-
 * justifies, N the width a value is padded and cut to, %% a '%'). The field
 * function writes field X of row, or its header when row is NULL, and
 * returns false for an X it does not know. */
typedef bool (*sl_field_fn)(char x, const void *row, char *out, size_t len);
/* 0, or -1 with the first unknown X in *bad. */
int sl_format_check(const char *fmt, sl_field_fn f, char *bad);
/* One line of row (NULL: the header) on stdout. */
void sl_format_line(const char *fmt, sl_field_fn f, const void *row);

/* The machine manager's list of nodes (a Reply whose nodes is set), or
 * NULL after printing why with the exit code in *rc. */
Storm__Ctl__Reply *sl_nodes(struct cli *c, int *rc);

/* squeue -l's and sinfo -l's first line: the time, as ctime(3) writes it. */
void sl_print_date(void);

/* Wall-clock seconds. */
double sl_now(void);

#endif
