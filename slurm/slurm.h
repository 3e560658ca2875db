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
#include "sbatchopt.h"

/* Slurm's name for a job state (PENDING, RUNNING, ..., NODE_FAIL); reason
 * tells a job that failed with its node from one whose rank failed. */
const char *sl_state(int state, const char *reason);
/* squeue's %t: PD, R, CD, F, CA, S, TO, NF. */
const char *sl_state_short(const char *slurm_state);
/* storm's exit status as Slurm's CODE:SIGNAL ("0:0", "3:0", "0:15"). */
void sl_exitcode(int32_t status, int state, char *out, size_t len);

/* The storm command line a Slurm command builds from its options. */
struct sl_args {
	char *v[128];
	int n;
};
/* Appends opt (and val unless NULL): -1, or cmd's usage exit when full. */
int sl_add(const char *cmd, struct sl_args *a, const char *opt, const char *val);
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
