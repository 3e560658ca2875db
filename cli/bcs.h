/* BCS-MPI traces in the CLI: the filter that takes the ranks'
 * trace and debug lines out of their stderr (bcs.c), and the job runner
 * storm replay (replay.c) starts through run.c. */
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
/* Writes the collected sections as a trace file; 0 or -1 (printed). */
int bcs_filter_write(struct bcs_filter *f, const char *path, unsigned nodes, unsigned ranks,
		     int argc, char **argv);
/* The gdb started for storm replay --debug, 0 if none. */
pid_t bcs_filter_debugger(const struct bcs_filter *f);
void bcs_filter_free(struct bcs_filter *f);

/* storm run with the BCS filter on (run.c): record is the trace to write
 * (NULL for a replay). */
int run_bcs_job(struct cli *c, int argc, char **argv, const char *record);

#endif
