/* The record queue and the reports that carry it to the MM, one per strobe. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout.h"
#include "nd.h"
#include "trace.pb-c.h"

#define NOTE_MESSAGE_MAX 1024
/* held trace chunks (nd_queue_trace_later) that make a report of their own */
#define ND_LATER_MAX 64

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		/* the daemon cannot keep its ordering promise without memory */
		fprintf(stderr, "stormnd: error: out of memory\n");
		abort();
	}
	return p;
}

static void enqueue(struct nd *nd, struct nd_rec *r)
{
	if (nd->q_tail)
		nd->q_tail->next = r;
	else
		nd->q_head = r;
	nd->q_tail = r;
}

void nd_queue_output(struct nd *nd, struct nd_job *job, uint32_t rank, uint32_t stream,
		     const void *data, size_t len)
{
	struct nd_rec *r = xcalloc(1, sizeof(*r));
	r->kind = REC_OUTPUT;
	r->job = job->id;
	r->rank = rank;
	r->stream = stream;
	r->data = xcalloc(1, len);
	memcpy(r->data, data, len);
	r->len = len;
	nd->q_bytes += len;
	enqueue(nd, r);
}

void nd_queue_exit(struct nd *nd, uint64_t job, uint32_t rank, int status,
		   const struct rusage *ru)
{
	struct nd_rec *r = xcalloc(1, sizeof(*r));
	r->kind = REC_EXIT;
	r->job = job;
	r->rank = rank;
	r->wait_status = status;
	if (ru) {
		r->max_rss_kb = (uint64_t)ru->ru_maxrss; /* Linux: KiB */
		r->cpu_us = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 +
			    (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec);
	}
	enqueue(nd, r);
}

static struct nd_rec *trace_rec(uint64_t job, uint8_t *chunk, size_t len)
{
	struct nd_rec *r = xcalloc(1, sizeof(*r));
	r->kind = REC_TRACE;
	r->job = job;
	r->data = chunk;
	r->len = len;
	r->done_slot = UINT32_MAX;
	return r;
}

void nd_queue_trace(struct nd *nd, uint64_t job, uint8_t *chunk, size_t len)
{
	enqueue(nd, trace_rec(job, chunk, len));
}

void nd_queue_trace_later(struct nd *nd, uint64_t job, uint8_t *chunk, size_t len)
{
	struct nd_rec *r = trace_rec(job, chunk, len);
	if (nd->later_tail)
		nd->later_tail->next = r;
	else
		nd->later_head = r;
	nd->later_tail = r;
	nd->nlater++;
}

void nd_queue_bcs(struct nd *nd, uint64_t job, uint32_t rank, const uint8_t *d, size_t len)
{
	/* a recorded job's end is reported: its record ends with each rank's */
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->id == job)
			j->may_be_quiet = false;
	struct nd_rec *r = xcalloc(1, sizeof(*r));
	r->kind = REC_BCS;
	r->job = job;
	r->rank = rank;
	r->data = xcalloc(1, len);
	memcpy(r->data, d, len);
	r->len = len;
	r->done_slot = UINT32_MAX;
	enqueue(nd, r);
}

void nd_queue_bcs_mark(struct nd *nd, uint64_t job, uint32_t rank, const uint8_t *d, size_t len,
		       uint64_t ckpt, const uint64_t *counts)
{
	nd_queue_bcs(nd, job, rank, d, len);
	struct nd_rec *r = nd->q_tail;
	r->value = ckpt;
	memcpy(r->mark, counts, sizeof(r->mark));
}

void nd_queue_value(struct nd *nd, uint64_t job, int kind, uint64_t value)
{
	/* one per job waiting is enough: a later count covers an earlier */
	for (struct nd_rec *q = nd->q_head; q; q = q->next)
		if (q->kind == REC_NOTE && q->job == job && q->note == kind) {
			q->value = value;
			return;
		}
	struct nd_rec *r = xcalloc(1, sizeof(*r));
	r->kind = REC_NOTE;
	r->job = job;
	r->note = kind;
	r->value = value;
	r->done_slot = UINT32_MAX;
	r->message = xcalloc(1, 1);
	enqueue(nd, r);
}

static void vqueue_note(struct nd *nd, uint64_t job, int kind, uint32_t done_slot,
			uint64_t value, const char *fmt, va_list ap)
{
	/* a failure or an abort says something: the job's end here is reported */
	if (kind == STORM__CL__JOB_NOTE__KIND__FAILED || kind == STORM__CL__JOB_NOTE__KIND__ABORTED)
		for (struct nd_job *j = nd->jobs; j; j = j->next)
			if (j->id == job)
				j->may_be_quiet = false;
	struct nd_rec *r = xcalloc(1, sizeof(*r));
	r->kind = REC_NOTE;
	r->job = job;
	r->note = kind;
	r->done_slot = done_slot;
	r->value = value;
	r->message = xcalloc(1, NOTE_MESSAGE_MAX);
	vsnprintf(r->message, NOTE_MESSAGE_MAX, fmt, ap);
	enqueue(nd, r);
}

void nd_queue_note(struct nd *nd, uint64_t job, int kind, uint32_t done_slot,
		   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vqueue_note(nd, job, kind, done_slot, 0, fmt, ap);
	va_end(ap);
}

void nd_queue_note_value(struct nd *nd, uint64_t job, int kind, uint64_t value,
			 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vqueue_note(nd, job, kind, UINT32_MAX, value, fmt, ap);
	va_end(ap);
}

void nd_queue_abort(struct nd *nd, uint64_t job, uint32_t rank, int code)
{
	nd_queue_note_value(nd, job, STORM__CL__JOB_NOTE__KIND__ABORTED, (uint64_t)(code & 255),
			    "rank %u called MPI_Abort (exit code %d)", rank, code & 255);
	/* the MM's clock, so aborts heard on different nodes compare */
	nd->q_tail->at_ns = nd_mm_clock_ns(nd);
}

static void rec_free(struct nd_rec *r)
{
	free(r->data);
	free(r->message);
	free(r);
}

void nd_queue_free(struct nd *nd)
{
	while (nd->q_head) {
		struct nd_rec *r = nd->q_head;
		nd->q_head = r->next;
		rec_free(r);
	}
	nd->q_tail = NULL;
	nd->q_bytes = 0;
	while (nd->later_head) {
		struct nd_rec *r = nd->later_head;
		nd->later_head = r->next;
		rec_free(r);
	}
	nd->later_tail = NULL;
	nd->nlater = 0;
	free(nd->report_buf);
	nd->report_buf = NULL;
	free(nd->tamper_saved);
	nd->tamper_saved = NULL;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Bytes a submessage adds to a Report as a repeated field (tag < 16). */
static size_t field_cost(size_t sub)
{
	return 1 + varint_size(sub) + sub;
}

/* STORM_TEST_TAMPER: what a forger on the fabric would do, from a node, so
 * tests/cluster/test_users.sh can see the MM refuse it and go on. Sends an
 * altered report, or report 2 again, in place of the report due; the real one
 * goes out with the resend of an unacknowledged report. true: it did. */
static bool tamper(struct nd *nd, const struct sn_nodeset *mm)
{
	if (nd->report_seq == 2 && !nd->tamper_saved && fault_value(&nd->fault, "replay")) {
		nd->tamper_saved = xcalloc(1, nd->report_len);
		memcpy(nd->tamper_saved, nd->report_buf, nd->report_len);
		nd->tamper_saved_len = nd->report_len;
	}
	uint8_t *bad = NULL;
	size_t len = 0;
	if (fault_hit(&nd->fault, "report", nd->report_seq)) {
		bad = xcalloc(1, nd->report_len);
		memcpy(bad, nd->report_buf, nd->report_len);
		bad[4] ^= 0x01; /* one bit of the packed report */
		len = nd->report_len;
		slog("test hook: report %llu goes out altered",
		       (unsigned long long)nd->report_seq);
	} else if (nd->tamper_saved && fault_hit(&nd->fault, "replay", nd->report_seq)) {
		bad = nd->tamper_saved;
		nd->tamper_saved = NULL;
		len = nd->tamper_saved_len;
		slog("test hook: report 2 goes out again in place of report %llu",
		       (unsigned long long)nd->report_seq);
	}
	if (!bad)
		return false;
	sn_xfer(nd->sn, mm, GM_REPORT_SLOT(nd->index), bad, len, SN_NO_EVENT, EV_REPORT,
		SN_XFER_SYS);
	free(bad);
	return true;
}

static void send_bytes(struct nd *nd)
{
	struct sn_nodeset mm;
	sn_set_clear(&mm);
	sn_set_add(&mm, MM_FABRIC_ID);
	if (fault_armed(&nd->fault) && tamper(nd, &mm))
		return;
	int rc = sn_xfer(nd->sn, &mm, GM_REPORT_SLOT(nd->index), nd->report_buf,
			 nd->report_len, SN_NO_EVENT, EV_REPORT, SN_XFER_SYS);
	if (rc < 0)
		slog("cannot send report %llu to the MM: %s",
		       (unsigned long long)nd->report_seq, sn_strerror(nd->sn));
}

/* The records of one report while it is filled, and its room. */
struct report_fill {
	size_t cap, n_out, n_exit, n_note, n_trace, n_bcs;
	Storm__Cl__Output *outs;
	Storm__Cl__RankExit *exits;
	Storm__Cl__JobNote *notes;
	Storm__Trace__Chunk **traces;
	Storm__Cl__BcsStream *bcs;
	size_t used, budget; /* packed bytes so far, and the slot's */
};

/* The node's state every report carries, before its records: running and
 * sw/psw hold ND_SW_KEPT and 64 entries and live until it is packed. */
static void report_state(struct nd *nd, Storm__Cl__Report *rep, uint64_t seq, uint64_t *running,
			 Storm__Cl__SwitchDelay *sw, Storm__Cl__SwitchDelay **psw)
{
	rep->seq = seq;
	rep->slice = nd->slice;
	rep->cmd_done = nd->rep_cmd_done = nd->cmd_done;
	rep->epoch = nd->rep_epoch = nd->mm_epoch;
	rep->incarnation = nd->incarnation;
	if (nd->clk.valid) {
		rep->clock_offset_ns = nd->clk.offset_ns;
		rep->clock_rtt_ns = nd->clk.rtt_ns;
	}
	for (struct nd_job *j = nd->jobs; j && rep->n_running < 64; j = j->next)
		if (j->nalive > 0)
			running[rep->n_running++] = j->id;
	rep->running = running;
	for (unsigned i = 0; i < nd->nsw; i++) {
		storm__cl__switch_delay__init(&sw[i]);
		sw[i].switches = nd->sw[i].switches;
		sw[i].delay_us = nd->sw[i].delay_us;
		sw[i].off_us = nd->sw[i].off_us;
		sw[i].timeout = nd->sw[i].timeout;
		psw[i] = &sw[i];
	}
	rep->switches = psw;
	rep->n_switches = nd->nsw;
	nd->nsw = 0;
	rep->missed_strobes = nd->missed_strobes;
	rep->bcs_bytes = nd_bcs_bytes_sent(nd);
}

static void fill_init(struct report_fill *f)
{
	memset(f, 0, sizeof(*f));
	f->cap = 64;
	f->outs = xcalloc(f->cap, sizeof(*f->outs));
	f->exits = xcalloc(f->cap, sizeof(*f->exits));
	f->notes = xcalloc(f->cap, sizeof(*f->notes));
	f->traces = xcalloc(f->cap, sizeof(*f->traces));
	f->bcs = xcalloc(f->cap, sizeof(*f->bcs));
}

/* Room for one more record of any kind. */
static void fill_grow(struct report_fill *f)
{
	if (f->n_out < f->cap && f->n_exit < f->cap && f->n_note < f->cap &&
	    f->n_trace < f->cap && f->n_bcs < f->cap)
		return;
	f->cap *= 2;
	/* nothing points into these arrays until packing */
	f->outs = realloc(f->outs, f->cap * sizeof(*f->outs));
	f->exits = realloc(f->exits, f->cap * sizeof(*f->exits));
	f->notes = realloc(f->notes, f->cap * sizeof(*f->notes));
	f->traces = realloc(f->traces, f->cap * sizeof(*f->traces));
	f->bcs = realloc(f->bcs, f->cap * sizeof(*f->bcs));
	if (!f->outs || !f->exits || !f->notes || !f->traces || !f->bcs) {
		fprintf(stderr, "stormnd: error: out of memory\n");
		abort();
	}
}

static void fill_free(struct report_fill *f)
{
	free(f->bcs);
	free(f->outs);
	free(f->exits);
	free(f->notes);
	for (size_t i = 0; i < f->n_trace; i++)
		storm__trace__chunk__free_unpacked(f->traces[i], NULL);
	free(f->traces);
}

/* An output record: whole if it fits (true); else the part that fits, its
 * bytes in *partial, the rest first in line for the next report (false). */
static bool take_output(struct report_fill *f, struct nd_rec *r, size_t *partial)
{
	Storm__Cl__Output *o = &f->outs[f->n_out];
	storm__cl__output__init(o);
	o->job = r->job;
	o->rank = r->rank;
	o->stream = r->stream;
	o->data.data = r->data + r->off;
	o->data.len = r->len - r->off;
	size_t cost = field_cost(storm__cl__output__get_packed_size(o));
	if (f->used + cost <= f->budget) {
		f->n_out++;
		f->used += cost;
		return true;
	}
	/* split: send what fits, keep the rest first in line */
	size_t avail = f->budget - f->used;
	while (o->data.len > 0 && cost > avail) {
		size_t over = cost - avail;
		o->data.len = over >= o->data.len ? 0 : o->data.len - over;
		cost = field_cost(storm__cl__output__get_packed_size(o));
	}
	if (o->data.len > 0) {
		*partial = o->data.len;
		f->n_out++;
		f->used += cost;
	}
	return false;
}

static size_t put_exit(Storm__Cl__RankExit *e, const struct nd_rec *r)
{
	storm__cl__rank_exit__init(e);
	e->job = r->job;
	e->rank = r->rank;
	e->wait_status = r->wait_status;
	e->max_rss_kb = r->max_rss_kb;
	e->cpu_us = r->cpu_us;
	return field_cost(storm__cl__rank_exit__get_packed_size(e));
}

static size_t put_bcs(Storm__Cl__BcsStream *b, struct nd_rec *r)
{
	storm__cl__bcs_stream__init(b);
	b->job = r->job;
	b->rank = r->rank;
	b->data.data = r->data;
	b->data.len = r->len;
	if (r->value) {
		b->checkpoint = r->value;
		b->mark = r->mark;
		b->n_mark = 4;
	}
	return field_cost(storm__cl__bcs_stream__get_packed_size(b));
}

static size_t put_note(Storm__Cl__JobNote *m, const struct nd_rec *r)
{
	storm__cl__job_note__init(m);
	m->job = r->job;
	m->kind = (Storm__Cl__JobNote__Kind)r->note;
	m->message = r->message;
	m->value = r->value;
	m->at_ns = r->at_ns;
	return field_cost(storm__cl__job_note__get_packed_size(m));
}

/* r into the report if it fits (true); false: the report ends before it
 * (an output record may have gone in part, *partial). */
static bool take_rec(struct report_fill *f, struct nd_rec *r, size_t *partial)
{
	size_t cost;
	switch (r->kind) {
	case REC_OUTPUT:
		return take_output(f, r, partial);
	case REC_EXIT:
		if (f->used + (cost = put_exit(&f->exits[f->n_exit], r)) > f->budget)
			return false;
		f->n_exit++;
		break;
	case REC_TRACE:
		if (f->used + (cost = field_cost(r->len)) > f->budget)
			return false;
		if ((f->traces[f->n_trace] = storm__trace__chunk__unpack(NULL, r->len, r->data)))
			f->n_trace++;
		break;
	case REC_BCS:
		if (f->used + (cost = put_bcs(&f->bcs[f->n_bcs], r)) > f->budget)
			return false;
		f->n_bcs++;
		break;
	default:
		if (f->used + (cost = put_note(&f->notes[f->n_note], r)) > f->budget)
			return false;
		f->n_note++;
		break;
	}
	f->used += cost;
	return true;
}

/* The report's records pointed at, stamped, packed into nd->report_buf,
 * sealed and sent. */
static void pack_and_send(struct nd *nd, Storm__Cl__Report *rep, struct report_fill *f,
			  uint64_t seq)
{
	Storm__Cl__Output **po = xcalloc(f->n_out + 1, sizeof(*po));
	Storm__Cl__RankExit **pe = xcalloc(f->n_exit + 1, sizeof(*pe));
	Storm__Cl__JobNote **pn = xcalloc(f->n_note + 1, sizeof(*pn));
	Storm__Cl__BcsStream **pb = xcalloc(f->n_bcs + 1, sizeof(*pb));
	for (size_t i = 0; i < f->n_bcs; i++)
		pb[i] = &f->bcs[i];
	rep->n_bcs = f->n_bcs;
	rep->bcs = pb;
	for (size_t i = 0; i < f->n_out; i++)
		po[i] = &f->outs[i];
	for (size_t i = 0; i < f->n_exit; i++)
		pe[i] = &f->exits[i];
	for (size_t i = 0; i < f->n_note; i++)
		pn[i] = &f->notes[i];
	rep->n_output = f->n_out;
	rep->output = po;
	rep->n_exits = f->n_exit;
	rep->exits = pe;
	rep->n_notes = f->n_note;
	rep->notes = pn;
	rep->n_traces = f->n_trace;
	rep->traces = f->traces;
	/* stamped last: the ack's echo of it times the exchange (timed.c) */
	rep->sent_ns = nd->report_sent_ns = nd_clock_ns(nd);

	size_t len = storm__cl__report__get_packed_size(rep);
	free(nd->report_buf);
	nd->report_buf = xcalloc(1, 4 + len + GM_TAG_LEN);
	uint32_t len32 = (uint32_t)len;
	memcpy(nd->report_buf, &len32, 4);
	storm__cl__report__pack(rep, nd->report_buf + 4);
	nd_report_seal(nd, nd->report_buf, len);
	nd->report_len = 4 + len + GM_TAG_LEN;
	nd->report_seq = seq;
	nd->unacked_strobes = 0;
	send_bytes(nd);
	free(po);
	free(pe);
	free(pn);
	free(pb);
}

/* A job's end written into its done slot, unless a later job was launched
 * in that slot here since. The MM frees a slot when a job ends, and a job
 * whose node was DOWN ends without that node; back UP, the node kills what
 * it still ran of the job, and that end can come after the next job in the
 * slot ended here: written, it would hide the next job's end from the MM's
 * termination check for good. */
static void write_done(struct nd *nd, uint32_t slot, uint64_t job)
{
	uint64_t owner = nd->slot_job[slot];
	if (owner && owner != job) {
		slog("job %" PRIu64 " ended here after job %" PRIu64 " was launched in its done "
		     "slot %u; the slot is left to that job", job, owner, slot);
		return;
	}
	/* its accounting went in its records: the MM's read sums nothing here
	 * (written before the done word, which the read's lock is on) */
	if (nd->conf.job_end_combined) {
		sn_var_store(nd->sn, GM_VAR_END_ACCT(slot), 0);
		sn_var_store(nd->sn, GM_VAR_END_ACCT(slot) + 8, 0);
	}
	sn_var_store(nd->sn, GM_VAR_DONE(slot), job);
	nd->slot_done[slot] = job;
}

/* A job's end written here (reported or quiet), before which the slot held
 * before's: the test points that act on it. done_late=K: the K-th end is
 * followed by the slot's previous job's end, as from a node back from DOWN
 * whose stray ranks died after the next job's. silent=K: once the MM has
 * report seq (for a quiet end, the last one, which it has), the daemon
 * hangs (nd_report). */
static void done_hooks(struct nd *nd, uint32_t slot, uint64_t job, uint64_t before, uint64_t seq)
{
	if (before && before != job && fault_hit(&nd->fault, "done_late", nd->dones_out + 1)) {
		slog("test hook done_late: job %" PRIu64 "'s end written again into slot %u",
		     before, slot);
		write_done(nd, slot, before);
	}
	if (fault_hit(&nd->fault, "silent", ++nd->dones_out))
		nd->silent_report = seq ? seq : 1;
}

static void quiet_ends_write(struct nd *nd);

void nd_quiet_end(struct nd *nd, uint64_t job, uint32_t slot, uint64_t cpu_us,
		  uint64_t max_rss_kb)
{
	if (slot >= GM_JOB_SLOTS || nd->nquiet_ends >= GM_JOB_SLOTS)
		return;
	nd->quiet_ends[nd->nquiet_ends++] =
		(struct nd_quiet_end){.job = job, .cpu_us = cpu_us, .max_rss_kb = max_rss_kb, .slot = slot};
	/* at once when nothing of it waits for an acknowledgement: the MM's
	 * read, which the first node's DONE starts, finds it without waiting
	 * for the next strobe (and a slice or more for the read's retry) */
	quiet_ends_write(nd);
}

/* The quiet ends whose records are all with the MM: each one's accounting
 * pair, then its done word (the MM reads them under the done word's lock,
 * so it sees the pair whole once it sees the word). A record still queued
 * or a report not yet acknowledged holds it: output the MM has not taken
 * would otherwise miss storm run, which ends with the job. */
static void quiet_ends_write(struct nd *nd)
{
	if (!nd->nquiet_ends || (nd->report_seq && nd->acked != nd->report_seq))
		return;
	for (unsigned i = 0; i < nd->nquiet_ends;) {
		struct nd_quiet_end *e = &nd->quiet_ends[i];
		bool queued = false;
		for (struct nd_rec *r = nd->q_head; r && !queued; r = r->next)
			queued = r->job == e->job;
		if (queued) {
			i++;
			continue;
		}
		uint64_t owner = nd->slot_job[e->slot];
		if (owner && owner != e->job) {
			slog("job %" PRIu64 " ended quietly here after job %" PRIu64 " was launched "
			     "in its done slot %u; the slot is left to that job", e->job, owner, e->slot);
		} else {
			uint64_t before = nd->slot_done[e->slot];
			sn_var_store(nd->sn, GM_VAR_END_ACCT(e->slot), e->cpu_us);
			sn_var_store(nd->sn, GM_VAR_END_ACCT(e->slot) + 8, e->max_rss_kb);
			sn_var_store(nd->sn, GM_VAR_DONE(e->slot), e->job);
			nd->slot_done[e->slot] = e->job;
			slog("job %" PRIu64 ": its end written for the MM's read (no report)", e->job);
			done_hooks(nd, e->slot, e->job, before, nd->report_seq);
		}
		*e = nd->quiet_ends[--nd->nquiet_ends];
	}
}

/* The done words of DONEs whose reports the MM acknowledged. */
static void acked_dones_write(struct nd *nd)
{
	for (unsigned i = 0; i < nd->nsent_dones;) {
		struct nd_sent_done *d = &nd->sent_dones[i];
		if (nd->acked < d->seq) {
			i++;
			continue;
		}
		uint64_t before = nd->slot_done[d->slot];
		write_done(nd, d->slot, d->job);
		done_hooks(nd, d->slot, d->job, before, d->seq);
		*d = nd->sent_dones[--nd->nsent_dones];
	}
}

/* The held traces of jobs whose quiet ends are written, onto the queue:
 * called as a report goes anyway, so they cost the MM no report. One of a
 * job whose end still waits would hold that end (quiet_ends_write). */
static void later_splice(struct nd *nd)
{
	struct nd_rec **pp = &nd->later_head, *last = NULL;
	while (*pp) {
		struct nd_rec *r = *pp;
		bool waits = false;
		for (unsigned i = 0; i < nd->nquiet_ends && !waits; i++)
			waits = nd->quiet_ends[i].job == r->job;
		if (waits) {
			last = r;
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->next = NULL;
		nd->nlater--;
		enqueue(nd, r);
	}
	nd->later_tail = last;
}

void nd_cmd_done_store(struct nd *nd)
{
	if (nd->conf.job_end_combined)
		sn_var_store(nd->sn, GM_VAR_CMD_DONE, nd->cmd_done);
}

/* Drops what went out from the queue, up to stop, and partial bytes of
 * stop's output; a DONE going out completes the job for the MM. */
static void drop_sent(struct nd *nd, struct nd_rec *stop, size_t partial, uint64_t seq)
{
	while (nd->q_head && nd->q_head != stop) {
		struct nd_rec *d = nd->q_head;
		nd->q_head = d->next;
		if (d->kind == REC_OUTPUT)
			nd->q_bytes -= d->len - d->off;
		if (d->kind == REC_NOTE && d->done_slot != UINT32_MAX) {
			/* job_end_combined: a done word the MM's read of quiet ends
			 * found before the MM took this DONE would pass this node
			 * for quiet, its exits lost; written once acknowledged */
			if (nd->conf.job_end_combined && !d->done_at_send &&
			    nd->nsent_dones < GM_JOB_SLOTS) {
				nd->sent_dones[nd->nsent_dones++] = (struct nd_sent_done){
					.job = d->job, .seq = seq, .slot = d->done_slot};
			} else {
				uint64_t before = nd->slot_done[d->done_slot];
				write_done(nd, d->done_slot, d->job);
				done_hooks(nd, d->done_slot, d->job, before, seq);
			}
		}
		rec_free(d);
	}
	if (!nd->q_head)
		nd->q_tail = NULL;
	if (stop && partial) {
		stop->off += partial;
		nd->q_bytes -= partial;
	}
}

/* Test point abort_hold_code=K: this node's report of an abort with exit
 * code K, and all after it, reach the MM only once the MM has signalled
 * the job (another node's later abort arrived first: the event a test
 * wants), or a minute after, a bound against a hang; as from a node slow
 * to report. */
static bool abort_held(struct nd *nd, const struct nd_rec *r)
{
	if (!fault_armed(&nd->fault) || r->kind != REC_NOTE ||
	    r->note != STORM__CL__JOB_NOTE__KIND__ABORTED || nd->signalled_job == r->job ||
	    r->value != fault_value(&nd->fault, "abort_hold_code"))
		return false;
	return nd_mm_clock_ns(nd) < r->at_ns + 60000000000u;
}

/* Packs the longest prefix of the queue that fits a report slot, sends it,
 * and drops what went out from the queue. Order: the MM reads output, then
 * exits, then notes; a prefix keeps "exit after its output, DONE after its
 * exits" because those already precede in the queue. A STARTED note ends the
 * prefix when records follow it, so no output precedes its STARTED. */
static void send_next(struct nd *nd, uint64_t seq)
{
	Storm__Cl__Report rep = STORM__CL__REPORT__INIT;
	uint64_t running[64];
	Storm__Cl__SwitchDelay sw[ND_SW_KEPT], *psw[ND_SW_KEPT];
	report_state(nd, &rep, seq, running, sw, psw);
	struct report_fill f;
	fill_init(&f);
	f.budget = GM_REPORT_SLOT_SIZE - 4 - GM_TAG_LEN;
	rep.sent_ns = UINT64_MAX; /* room for the stamp, set as the report goes */
	f.used = storm__cl__report__get_packed_size(&rep);
	struct nd_rec *r = nd->q_head, *stop = NULL;
	size_t partial = 0; /* output bytes of `stop` that go out in this report */
	for (; r; r = r->next) {
		fill_grow(&f);
		if (abort_held(nd, r) || !take_rec(&f, r, &partial)) {
			stop = r;
			break;
		}
		if (r->kind == REC_NOTE && r->note == STORM__CL__JOB_NOTE__KIND__STARTED &&
		    r->next && r->next->kind != REC_NOTE) {
			stop = r->next;
			break;
		}
	}
	pack_and_send(nd, &rep, &f, seq);
	fill_free(&f);
	drop_sent(nd, stop, partial, seq);
}

void nd_report_seal(struct nd *nd, uint8_t *buf, size_t len)
{
	gm_mac(nd->key, GM_MAC_REPORT, nd->index, buf, 4 + len, buf + 4 + len);
}

void nd_report_flush(struct nd *nd)
{
	if (nd->report_seq && nd->acked == nd->report_seq && nd->q_head) {
		nd->quiet_strobes = 0;
		later_splice(nd);
		send_next(nd, nd->report_seq + 1);
	}
	acked_dones_write(nd);
	quiet_ends_write(nd);
}

/* Once a strobe: the MM's liveness lease renewed (its number changed) or
 * running out. true: it runs, and the report due would carry nothing the MM
 * lacks, so the heartbeat can wait: the lease says the MM hears this node
 * through the tree. A node that lags the commands the strobes announce
 * reports at the usual pace (the MM resends what it lacks on its reports). */
static bool quiet(struct nd *nd)
{
	uint64_t v = sn_var_load(nd->sn, GM_VAR_QUIET);
	if (v != nd->lease_val) {
		nd->lease_val = v;
		nd->lease_left = v ? gm_quiet_lease(nd->conf.report_every,
						 conf_down_slices(&nd->conf)) : 0;
	} else if (nd->lease_left) {
		nd->lease_left--;
	}
	/* job_end_combined: the MM reads the commands done (GM_VAR_CMD_DONE)
	 * rather than waiting for a report of each */
	bool cmds_said = nd->conf.job_end_combined || nd->cmd_done == nd->rep_cmd_done;
	return nd->lease_left && !nd->q_head && !nd->nsw && cmds_said &&
	       nd->cmd_done >= nd->strobe_cmd_seq && nd->mm_epoch == nd->rep_epoch;
}

/* The MM acknowledges more than this node sent (an acknowledgement meant
 * for an earlier daemon of this node): the last report, not consumed,
 * renumbered to follow what the MM has, and the DONEs it carries with it,
 * whose done words wait for its acknowledgement (written at once, the MM's
 * read of quiet ends could take this node for quiet before it took them). */
static void renumber(struct nd *nd, uint64_t ack)
{
	Storm__Cl__Report *r = storm__cl__report__unpack(
		NULL, nd->report_len - 4 - GM_TAG_LEN, nd->report_buf + 4);
	slog("MM acknowledges report %llu, but %llu was sent; resynchronising",
	     (unsigned long long)ack, (unsigned long long)nd->report_seq);
	if (!r)
		return;
	r->seq = ack + 1;
	size_t len = storm__cl__report__get_packed_size(r);
	uint8_t *buf = xcalloc(1, 4 + len + GM_TAG_LEN);
	uint32_t len32 = (uint32_t)len;
	memcpy(buf, &len32, 4);
	storm__cl__report__pack(r, buf + 4);
	nd_report_seal(nd, buf, len);
	storm__cl__report__free_unpacked(r, NULL);
	free(nd->report_buf);
	nd->report_buf = buf;
	nd->report_len = 4 + len + GM_TAG_LEN;
	for (unsigned i = 0; i < nd->nsent_dones; i++)
		if (nd->sent_dones[i].seq == nd->report_seq)
			nd->sent_dones[i].seq = ack + 1;
	nd->report_seq = ack + 1;
	nd->unacked_strobes = 0;
	send_bytes(nd);
}

void nd_report(struct nd *nd, uint64_t ack)
{
	bool q = quiet(nd);
	/* a strobe built before the MM's direct ack may carry an older one */
	if (ack < nd->acked)
		ack = nd->acked;
	nd->acked = ack;
	/* neither consumed nor pending: the MM lost track; before the done
	 * words of acknowledged DONEs are written */
	bool lost_track = nd->report_seq && ack > nd->report_seq;
	if (lost_track)
		renumber(nd, ack);
	if (nd->silent_report && ack >= nd->silent_report) {
		/* test hook: the MM took that job's end from this node, which
		 * now hangs (answers nothing, COMPARE-AND-WRITEs included) */
		uint64_t ms = fault_value(&nd->fault, "silent_ms");
		nd->silent_report = 0;
		slog("test hook: silent for %" PRIu64 " ms", ms);
		struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		slog("test hook: silent no more");
	}
	nd_cmd_done_store(nd);
	acked_dones_write(nd);
	quiet_ends_write(nd);
	if (nd->report_seq == 0) {
		/* first report: continue from whatever the MM last consumed
		 * from this slot (0 for a fresh MM), so a restarted daemon is
		 * not mistaken for a stale one */
		later_splice(nd);
		send_next(nd, ack + 1);
		return;
	}
	if (ack == nd->report_seq) {
		/* with nothing to say, only every report_every strobes: that
		 * is the heartbeat, and it keeps the MM's work per slice low;
		 * under a lease only for the clock exchange */
		unsigned every = nd->conf.report_every * (q ? GM_QUIET_BEAT : 1);
		/* held traces wait for the heartbeat, or go once there are
		 * enough of them to be worth a report */
		if (nd->q_head || ++nd->quiet_strobes >= every || nd->nlater >= ND_LATER_MAX) {
			nd->quiet_strobes = 0;
			later_splice(nd);
			send_next(nd, nd->report_seq + 1);
		}
		return;
	}
	if (lost_track)
		return; /* the renumbered report went out */
	/* not consumed yet; a report lost on the way would stop the
	 * heartbeat for good, so resend the same bytes now and then (the MM
	 * tells a duplicate by its seq) */
	if (++nd->unacked_strobes >= ND_RESEND_AFTER) {
		nd->unacked_strobes = 0;
		slog("report %llu not acknowledged after %d strobes (MM has %llu); resending",
		       (unsigned long long)nd->report_seq, ND_RESEND_AFTER,
		       (unsigned long long)ack);
		send_bytes(nd);
	}
}
