/* The options of storm run, storm submit and storm alloc: their tables,
 * their help, and one parser for the command line and a batch script's
 * #STORM / #SBATCH directives alike. */
#ifndef STORM_CLI_JOBOPT_H
#define STORM_CLI_JOBOPT_H

#include <limits.h>

#include "cli.h"
#include "frame.h"
#include "slurmopt.h"

#define MAX_FILES (FRAME_MAX_FDS - 1) /* one descriptor is the program's */

struct job_opts {
	const char *cmd; /* "storm run" or "storm submit" */
	int batch;
	unsigned nodes, ranks;
	int label, no_bcast, timing, overcommit, parsable, wait;
	unsigned ckpt_interval;
	unsigned time_limit; /* -t, seconds; 0: none */
	int restart_on_failure;
	const char *name, *output;
	/* sbatch's -e/--error as the last layer that gave one said it, and
	 * where ("job.sh: " or "" for the command line): checked against the
	 * output file once every layer is in (sbatch_check_error) */
	const char *error;
	char error_where[PATH_MAX + 8];
	const char *chdir; /* sbatch's -D: the job's working directory */
	const char *files[MAX_FILES];
	int nfiles;
	char **argv; /* the program and its arguments */
	int argc;
	const char *record; /* --record FILE: the BCS-MPI trace to write */
	int bcs;            /* take BCS-MPI trace/debug lines out of stderr */
	struct dep deps[DEP_MAX]; /* --dependency */
	size_t ndeps;
	uint32_t *array_tasks; /* --array, malloc'd */
	size_t ntasks;
	uint32_t array_limit;
	const char *export_spec; /* --export, NULL: ALL */
	int script;         /* submit: PROGRAM is a batch script */
	int no_stdin;       /* run --input=none: rank 0 reads /dev/null */
	int forward_stdin;  /* run: our stdin goes to rank 0 */
	int pty;            /* run --pty: rank 0 on a terminal, ours raw */
	int mpi;            /* --mpi: enum mpi_kind, or -1 for auto */
	unsigned timeslice_us; /* --timeslice-us, 0: the cluster's */
#define JOBOPT_KEEP 256
	char **keep[JOBOPT_KEEP]; /* directive words the options point into */
	int nkeep;
};

/* The options' ids, for job_opt_apply */
enum {
	J_NODES = 1, J_RANKS, J_LABEL, J_NOBCAST, J_FILE, J_TIMING, J_NAME, J_OVERCOMMIT,
	J_OUTPUT, J_PARSABLE, J_CONF, J_HELP, J_WAIT, J_CKPT_INTERVAL, J_RESTART_ON_FAILURE,
	J_RECORD, J_TIME, J_DEPENDENCY, J_ARRAY, J_EXPORT, J_INPUT, J_PTY, J_MPI, J_TIMESLICE
};
/* One option into o: -1 to go on, else the exit code (why printed with
 * where before it, as "script.sh:3: "). */
int job_opt_apply(struct cli *c, struct job_opts *o, int id, const char *arg, const char *where);

/* Parses argv[1..] into o (o->cmd and o->batch set by the caller). Returns
 * -1 to go on, else the exit code (help printed, or a usage error). */
int parse_job_opts(struct cli *c, int argc, char **argv, struct job_opts *o);

/* storm submit of a batch script: its directives into o, before the command
 * line's options (which win): its #SBATCH lines as sbatch's command line
 * (sbatchopt.h), then its #STORM lines as storm submit's, then with sbatch
 * (c->sbatch) sbatch's own command line. -1 to go on, else the exit code. */
int apply_directives(struct cli *c, const char *path, struct job_opts *o);

void job_opts_free(struct job_opts *o);

#endif
