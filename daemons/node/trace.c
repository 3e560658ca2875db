/* A job's events on this node, for `storm trace`: when it ran (each turn of
 * its row, with the switch's delay from the strobe's send), its ranks'
 * execs and exits, its BCS-MPI micro-phases, its checkpoints. The newest
 * ND_TRACE_MAX are kept, and go to the machine manager before the job's
 * DONE, in report-sized chunks. */
#include <stdlib.h>
#include <string.h>

#include "nd.h"
#include "trace.pb-c.h"

#define ND_TRACE_MAX 2048
#define CHUNK_EVENTS 512 /* ~20 KiB packed: a few go in one report */

struct tr_ev {
	uint8_t kind;
	uint64_t t_us, dur_us, a, b, c;
};

struct nd_trace {
	struct tr_ev ev[ND_TRACE_MAX];
	uint32_t head, n; /* the oldest, and how many */
	bool running;     /* a RUN is open since run_t */
	uint64_t run_t, run_switch, run_delay;
	int32_t run_row;
};

uint64_t nd_wall_us(void)
{
	return (uint64_t)(clock_wall_s() * 1e6);
}

void nd_trace(struct nd_job *job, int kind, uint64_t t_us, uint64_t dur_us, uint64_t a,
	      uint64_t b)
{
	if (!job->trace && !(job->trace = calloc(1, sizeof(*job->trace))))
		return; /* a trace is worth less than the job: go on without */
	struct nd_trace *t = job->trace;
	uint32_t at = (t->head + t->n) % ND_TRACE_MAX;
	if (t->n == ND_TRACE_MAX)
		t->head = (t->head + 1) % ND_TRACE_MAX; /* the oldest goes */
	else
		t->n++;
	t->ev[at] = (struct tr_ev){ (uint8_t)kind, t_us, dur_us, a, b, 0 };
}

void nd_trace_run(struct nd *nd, struct nd_job *job, bool running)
{
	uint64_t now = nd_wall_us();
	if (!job->trace && !(job->trace = calloc(1, sizeof(*job->trace))))
		return;
	struct nd_trace *t = job->trace;
	if (running && !t->running) {
		t->running = true;
		t->run_t = now;
		t->run_switch = nd->strobe_switches;
		t->run_delay = nd->strobe_sent_us && now > nd->strobe_sent_us ? now - nd->strobe_sent_us : 0;
		t->run_row = nd->strobe_row;
	} else if (!running && t->running) {
		t->running = false;
		nd_trace(job, STORM__TRACE__EVENT__KIND__RUN, t->run_t, now - t->run_t, t->run_switch,
			 t->run_delay);
		if (t->n) /* the row it ran in, on the event just added */
			t->ev[(t->head + t->n - 1) % ND_TRACE_MAX].c = (uint64_t)(uint32_t)t->run_row;
	}
}

void nd_trace_flush(struct nd *nd, struct nd_job *job,
		    void (*queue)(struct nd *, uint64_t, uint8_t *, size_t))
{
	nd_trace_run(nd, job, false);
	struct nd_trace *t = job->trace;
	uint32_t n = t ? t->n : 0;
	Storm__Trace__Event ev[CHUNK_EVENTS], *pev[CHUNK_EVENTS];
	/* at least one chunk, the last marked: the MM then knows this node's
	 * trace of the job is whole (one that came after the job's end) */
	uint32_t done = 0;
	do {
		uint32_t k = 0;
		for (; k < CHUNK_EVENTS && done < n; k++, done++) {
			const struct tr_ev *e = &t->ev[(t->head + done) % ND_TRACE_MAX];
			storm__trace__event__init(&ev[k]);
			ev[k].kind = (Storm__Trace__Event__Kind)e->kind;
			ev[k].t_us = e->t_us;
			ev[k].dur_us = e->dur_us;
			ev[k].a = e->a;
			ev[k].b = e->b;
			ev[k].c = e->c;
			pev[k] = &ev[k];
		}
		Storm__Trace__Chunk c = STORM__TRACE__CHUNK__INIT;
		c.job = job->id;
		c.events = pev;
		c.n_events = k;
		c.last = done == n;
		size_t len = storm__trace__chunk__get_packed_size(&c);
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf)
			break;
		storm__trace__chunk__pack(&c, buf);
		queue(nd, job->id, buf, len);
	} while (done < n);
	free(t);
	job->trace = NULL;
}

bool nd_trace_plain(const struct nd_job *job)
{
	const struct nd_trace *t = job->trace;
	for (uint32_t i = 0; t && i < t->n; i++) {
		int k = t->ev[(t->head + i) % ND_TRACE_MAX].kind;
		if (k != STORM__TRACE__EVENT__KIND__EXEC && k != STORM__TRACE__EVENT__KIND__EXIT)
			return false;
	}
	return true;
}

void nd_trace_free(struct nd_job *job)
{
	free(job->trace);
	job->trace = NULL;
}
