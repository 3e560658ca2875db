/* `storm jobs -o` and `storm acct --format`: a table of the fields a user
 * names, with Slurm's field names (JobID, JobName, User, State, Elapsed,
 * NodeList, ExitCode, ...), optionally with a width (JobName%30). No
 * protobuf, so the unit tests link it alone. */
#ifndef STORM_CLI_JOBTABLE_H
#define STORM_CLI_JOBTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One job as both commands know it. */
struct job_row {
	char jobid[48];  /* as users write it: 12, 12.0, 12_3 */
	const char *name, *user, *nodelist, *reason;
	int state;       /* control.proto's JobState */
	uint32_t uid, nodes, ranks;
	double submit, start, end; /* Unix seconds, 0: not yet */
	double now;      /* for the elapsed time of a job still running */
	int32_t exit_status;
	uint64_t max_rss_kb; /* accounting only: the largest peak RSS of its ranks */
	double cpu_seconds;  /* accounting only: its ranks' CPU time */
	/* Slurm's commands (slurm/): its state name and CODE:SIGNAL exit code,
	 * NULL: storm's; the partition (the cluster's name) and account */
	const char *slurm_state, *slurm_exit, *partition, *account;
	char jobid_raw[32];  /* the number: 12, 12.0 for a step, 12.batch */
	uint32_t cpus;       /* CPUs allocated: its ranks */
	uint32_t time_limit; /* seconds, 0: none */
	const char *workdir;
};

#define JOBTABLE_MAX_COLS 32
struct job_col {
	int field;       /* index in the field table */
	int width;       /* 0: as wide as the widest cell */
};

/* "JobID,JobName%30,State": 0 and *ncol, or -1 with why (naming the field
 * names there are). Names match case-insensitively. */
int jobtable_parse(const char *spec, struct job_col *cols, int *ncol, char *why, size_t len);
/* Header line, then one line per row. */
void jobtable_print(FILE *f, const struct job_col *cols, int ncol, const struct job_row *rows,
		    size_t n);

/* sacct's ways of printing the same table. */
struct jobtable_style {
	bool noheader;      /* -n, --noheader */
	const char *delim;  /* --parsable(2): "|" (or --delimiter) between fields */
	bool delim_last;    /* --parsable: after the last field too */
	bool slurm_widths;  /* sacct's fixed widths, its dashes under the header
			     * and '+' ending a value cut short */
};
void jobtable_print_style(FILE *f, const struct job_col *cols, int ncol,
			  const struct job_row *rows, size_t n, const struct jobtable_style *st);

#endif
