/* Pure helpers of the storm CLI: signal names, durations, sizes, node names,
 * paths. No protobuf here, so the unit tests link this file alone. */
#ifndef STORM_CLI_FMT_H
#define STORM_CLI_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "hostlist.h"

/* "INT", "SIGINT", "sigint", "2" -> 2; -1 when not a signal. */
int parse_signal(const char *s);
/* "SIGINT"; "signal 40" for one without an abbreviation. */
const char *signal_name(int sig, char *buf, size_t len);

/* squeue's TIME column: M:SS, H:MM:SS or D-HH:MM:SS. */
void fmt_elapsed(double secs, char *out, size_t len);
/* squeue's TIME, TIME_LIMIT and TIME_LEFT: fmt_elapsed's form, or INVALID
 * for a negative time or one over a year, as squeue's _print_secs writes
 * them (a job killed past its limit has a negative time left). */
void fmt_squeue_secs(long secs, char *out, size_t len);
/* sacct's Elapsed and Timelimit, scontrol's RunTime and TimeLimit:
 * HH:MM:SS, or D-HH:MM:SS from a day on. */
void fmt_hms(double secs, char *out, size_t len);
/* A timeslice: "10 ms", "1.5 ms", "500 us". */
void fmt_timeslice(unsigned us, char *out, size_t len);
/* Bytes as "512 B", "3.0 KiB", "12.0 MiB", "1.2 GiB". */
void fmt_bytes(uint64_t n, char *out, size_t len);

/* The virtual cluster's node names: node00.., three digits past 100 nodes. */
void virtual_node_names(int n, char (*names)[HOSTNAME_MAX]);

/* path made absolute against cwd (a lexical join; "." segments kept). 0, or
 * -1 when it does not fit. */
int absolute_path(const char *cwd, const char *path, char *out, size_t len);

/* storm acct --since: "2h" (that long before now; s, m, h, d) or a local
 * "YYYY-MM-DD[THH:MM[:SS]]". Epoch seconds in *out; 0, or -1 if not understood. */
int parse_since(const char *s, double now, double *out);

/* JobState / NodeState of control.proto by number. */
const char *job_state_name(int state);
/* A time limit as Slurm's -t takes it (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)
 * in seconds, at least 1; -1 when it is none of those. */
int parse_time_limit(const char *s, uint64_t *seconds);
const char *node_state_name(int state);

#endif
