/* BCS-MPI traces in the CLI: the filter that takes the ranks' debug
 * lines out of their stderr (bcs.c), the records the machine manager keeps
 * (record.c), and the job runner storm replay (replay.c) starts through
 * run.c. */
#ifndef STORM_CLI_BCS_H
#define STORM_CLI_BCS_H

#include <stdint.h>
#include <sys/types.h>

#include "cli.h"
#include "label.h"

struct bcs_filter;
struct bcs_filter *bcs_filter_new(void);
/* Appends to show what of this stderr chunk is the rank's own output. */
int bcs_filter_feed(struct bcs_filter *f, uint32_t rank, const uint8_t *d, size_t n,
		    struct strbuf *show);
/* One rank's held partial line (its rank in *rank), or nothing. */
void bcs_filter_flush(struct bcs_filter *f, uint32_t *rank, struct strbuf *show);
/* record.c: job's BCS-MPI record from the machine manager, written as the
 * trace file path (a summary line on stderr, or with js JSON on stdout);
 * an exit code */
int bcs_record_fetch(struct cli *c, uint64_t job, const char *path, int js);
/* storm replay: 1 the first time after every rank said it waits where its
 * recorded run ended waiting (the recorded deadlock, named on stderr),
 * 2 after that, 0 before. */
int bcs_filter_deadlock(struct bcs_filter *f);
#define EXIT_DEADLOCK 4 /* storm replay reached the recorded deadlock */
/* storm replay --list RANK (list: print the calls of a rank as the trace
 * numbers them) and --stop RANK:N|RANK:last (stop: checked against the
 * trace, handed to the ranks): an exit code, or -1 to run the replay
 * (replay_calls.c). */
struct bcs_trace;
int replay_calls(const struct bcs_trace *t, const char *list, int json, const char *stop);
/* The gdb started for storm replay --debug, 0 if none. */
pid_t bcs_filter_debugger(const struct bcs_filter *f);
void bcs_filter_free(struct bcs_filter *f);

/* storm run with the BCS filter on (run.c): record is the trace to write
 * (NULL for a replay). */
int run_bcs_job(struct cli *c, int argc, char **argv, const char *record);

#endif
