/* storm run --record and storm replay: BCS-MPI traces (docs/bcs-trace.md).
 *
 * With --record every rank streams its timing-dependent outcomes to its
 * node daemon as it makes them, and the machine manager keeps them; at the
 * job's end, however it ended, the CLI writes the file from that record
 * (record.c). storm replay reruns the recorded program
 * and arguments on the same shape, with the trace sent along (--file) and
 * STORM_BCS_REPLAY naming it, so each rank forces its recorded outcomes.
 * "\001BCS-DEBUG RANK PID NODE" is the line of a rank held for --debug or
 * --stop; "\001BCS-WAIT RANK SIZE CALL DESCRIPTION" the line of a replayed
 * rank that waits in the call its recorded run ended waiting in. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_codec.h"
#include "bcs.h"
#include "cli.h"
#include "opts.h"

#define DEBUG_TAG "\001BCS-DEBUG "
#define WAIT_TAG "\001BCS-WAIT "

struct pending {
	uint32_t rank;
	struct strbuf line; /* a partial stderr line */
};

struct bcs_filter {
	struct pending *p;
	size_t n, cap;
	pid_t debugger;
	char **waits;      /* per rank: where it waits, once it said so */
	uint32_t world, nwaits;
	int deadlock;      /* 1: every rank waits (said once), 2: the CLI acted on it */
};

struct bcs_filter *bcs_filter_new(void)
{
	return calloc(1, sizeof(struct bcs_filter));
}

static struct strbuf *pending_of(struct bcs_filter *f, uint32_t rank)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->p[i].rank == rank)
			return &f->p[i].line;
	if (f->n == f->cap) {
		size_t c = f->cap ? 2 * f->cap : 16;
		struct pending *q = realloc(f->p, c * sizeof(*q));
		if (!q)
			return NULL;
		f->p = q;
		f->cap = c;
	}
	f->p[f->n] = (struct pending){.rank = rank};
	return &f->p[f->n++].line;
}

static void on_debug_line(struct bcs_filter *f, const char *line)
{
	unsigned rank;
	int pid;
	char node[128];
	if (sscanf(line, "%u %d %127s", &rank, &pid, node) != 3)
		return;
	if (f->debugger || !isatty(0) || !isatty(1))
		return; /* the rank printed how to attach */
	/* the virtual cluster runs on this host: gdb in this terminal */
	char pidarg[16];
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	pid_t g = fork();
	if (g == 0) {
		execlp("gdb", "gdb", "-q", "-p", pidarg, "-ex", "set var bcs_debug_hold = 0",
		       "-ex", "echo storm replay: rank held; set breakpoints, then 'continue'\\n",
		       (char *)NULL);
		fprintf(stderr, "storm: error: cannot run gdb: %s\n", strerror(errno));
		_exit(127);
	}
	if (g > 0)
		f->debugger = g;
}

/* Once every rank waits where its recorded run ended waiting, the replay
 * is in the recorded deadlock: each rank's call, in rank order. */
static void on_wait_line(struct bcs_filter *f, const char *line)
{
	unsigned rank, world;
	unsigned long long call;
	int off = 0;
	if (sscanf(line, "%u %u %llu %n", &rank, &world, &call, &off) != 3 || !off || !world ||
	    world > (1u << 24) || rank >= world || (f->world && f->world != world))
		return;
	if (!f->waits && !(f->waits = calloc(world, sizeof(char *))))
		return;
	f->world = world;
	if (f->waits[rank])
		return;
	if (asprintf(&f->waits[rank], "storm replay: rank %u waits in %s call #%llu\n", rank,
		     line + off, call) < 0) {
		f->waits[rank] = NULL;
		return;
	}
	if (++f->nwaits < world || f->deadlock)
		return;
	for (uint32_t r = 0; r < world; r++)
		fputs(f->waits[r], stderr);
	fprintf(stderr, "storm replay: every rank waits where its recorded run was waiting when "
		"it was stopped: the recorded deadlock; cancelling the replay\n");
	f->deadlock = 1;
}

int bcs_filter_deadlock(struct bcs_filter *f)
{
	if (!f || !f->deadlock)
		return 0;
	int first = f->deadlock == 1;
	f->deadlock = 2;
	return first ? 1 : 2;
}

pid_t bcs_filter_debugger(const struct bcs_filter *f)
{
	return f ? f->debugger : 0;
}

int bcs_filter_feed(struct bcs_filter *f, uint32_t rank, const uint8_t *d, size_t n,
		    struct strbuf *show)
{
	struct strbuf *pl = pending_of(f, rank);
	if (!pl || sb_append(pl, d, n) < 0)
		return -ENOMEM;
	size_t start = 0;
	for (size_t i = 0; i < pl->len; i++) {
		if (pl->data[i] != '\n')
			continue;
		char *line = pl->data + start;
		size_t len = i - start;
		if (len >= strlen(DEBUG_TAG) && !memcmp(line, DEBUG_TAG, strlen(DEBUG_TAG))) {
			pl->data[i] = '\0';
			on_debug_line(f, line + strlen(DEBUG_TAG));
		} else if (len >= strlen(WAIT_TAG) && !memcmp(line, WAIT_TAG, strlen(WAIT_TAG))) {
			pl->data[i] = '\0';
			on_wait_line(f, line + strlen(WAIT_TAG));
		} else if (sb_append(show, line, len + 1) < 0) {
			return -ENOMEM;
		}
		start = i + 1;
	}
	memmove(pl->data, pl->data + start, pl->len - start);
	pl->len -= start;
	/* a partial line that cannot be one of ours goes out now */
	if (pl->len && pl->data[0] != '\001') {
		if (sb_append(show, pl->data, pl->len) < 0)
			return -ENOMEM;
		pl->len = 0;
	}
	return 0;
}

void bcs_filter_flush(struct bcs_filter *f, uint32_t *rank, struct strbuf *show)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->p[i].line.len) {
			*rank = f->p[i].rank;
			sb_append(show, f->p[i].line.data, f->p[i].line.len);
			f->p[i].line.len = 0;
			return;
		}
}

void bcs_filter_free(struct bcs_filter *f)
{
	if (!f)
		return;
	if (f->debugger > 0) {
		int st;
		while (waitpid(f->debugger, &st, 0) < 0 && errno == EINTR)
			;
	}
	for (size_t i = 0; i < f->n; i++)
		sb_free(&f->p[i].line);
	for (uint32_t r = 0; f->waits && r < f->world; r++)
		free(f->waits[r]);
	free(f->waits);
	free(f->p);
	free(f);
}
