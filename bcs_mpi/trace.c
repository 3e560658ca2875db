/* BCS-MPI record and replay, the library's side (trace.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi.h"
#include "trace.h"

static struct {
	int mode; /* 0 off, 1 record, 2 replay */
	struct bcs_area *area;  /* record: the trace ring is in it */
	void (*wait_room)(bool (*cond)(void *), void *arg);
	uint64_t run_count;     /* record: the open run of test flags */
	int run_flag;
	int held;               /* replay: the end of an unfinished run was reached */
	int rank;
	struct bcs_rank_trace t;
	/* outcomes so far per stream (enum bcs_stream): record counts, replay
	 * cursors; in the channel area, where a checkpoint reads them */
	uint64_t *count;
	uint64_t count0[BCS_S_N];    /* no area */
	const struct bcs_chan_hdr *hdr;
	size_t run;                  /* replay: the run being read, and how far */
	uint64_t run_off;
	struct bcs_trace file;
	void (*abort_job)(int code);
	/* the MPI calls, numbered from 1 in call order: a count of this
	 * memory only (the marks are of outcomes), which a restore from a
	 * checkpoint brings back with the rest of it */
	uint64_t ncall;
	struct bcs_call last;   /* record: the last call in the ring, and its */
	uint64_t crun;          /* repeats not yet there (chan.h, tr_crun) */
	int mute;               /* a call made inside another is not one */
	uint64_t stop;          /* replay: storm replay --stop's call (0: none) */
	uint64_t recorded;      /* replay: the calls the recorded rank made */
	int said_wait;
	int from;               /* replay: restored from a checkpoint (replay_from) */
} tr;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(p, c * elem);
	if (!q) {
		fprintf(stderr, "BCS-MPI rank %d: out of memory for the trace\n", tr.rank);
		exit(1);
	}
	*cap = c;
	return q;
}

static void diverged(const char *fn, size_t k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void diverged(const char *fn, size_t k, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(stderr, "storm replay: divergence at rank %d, %s (its #%zu such outcome): %s\n",
		tr.rank, fn, k + 1, what);
	tr.abort_job(3);
}

/* The next ordinal of stream s, taken in one instruction: a rank stopped
 * by a checkpoint has in its area exactly the count its memory holds. */
static uint64_t take(enum bcs_stream s)
{
	return __atomic_fetch_add(&tr.count[s], 1, __ATOMIC_RELAXED);
}

/* ---- recording: events into the channel's trace ring as they happen */

static bool ring_room(void *arg)
{
	size_t need = *(size_t *)arg;
	struct bcs_area *a = tr.area;
	return BCS_TRACE_RING - (a->tr_head - __atomic_load_n(&a->tr_tail, __ATOMIC_ACQUIRE)) >=
	       need;
}

/* Whole events only, then the head, then the open run tagged with the new
 * head: the order its node daemon relies on when the rank dies between
 * any two of these stores (chan.h, tr_run). */
static void emit(int ev, uint64_t a, uint64_t b, uint64_t c)
{
	uint8_t e[BCS_EV_MAX];
	size_t n = bcs_stream_event(e, ev, a, b, c);
	struct bcs_area *ar = tr.area;
	if (!ring_room(&n))
		tr.wait_room(ring_room, &n);
	uint64_t h = ar->tr_head;
	for (size_t i = 0; i < n; i++)
		ar->tr[(h + i) % BCS_TRACE_RING] = e[i];
	__atomic_store_n(&ar->tr_head, h + n, __ATOMIC_RELEASE);
	__atomic_store_n(&ar->tr_run, BCS_RUN(tr.run_count, tr.run_flag, h + n),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&ar->tr_crun, BCS_RUN(tr.crun, 0, h + n), __ATOMIC_RELEASE);
}

/* The repeats of the last call go into the ring; zeroed first, so the
 * word emit rewrites no longer counts them (chan.h, tr_crun). */
static void flush_repeats(void)
{
	uint64_t k = tr.crun;
	if (!k)
		return;
	tr.crun = 0;
	emit(BCS_EV_REPEAT, k, 0, 0);
}

static void record_call(const struct bcs_call *c)
{
	if (c->kind == tr.last.kind && c->peer == tr.last.peer &&
	    c->tag == tr.last.tag && c->bytes == tr.last.bytes) {
		tr.crun++;
		__atomic_store_n(&tr.area->tr_crun, BCS_RUN(tr.crun, 0, tr.area->tr_head),
				 __ATOMIC_RELEASE);
		return;
	}
	flush_repeats();
	tr.last = *c;
	emit(BCS_EV_CALL, c->kind | (uint64_t)((int64_t)c->peer + 3) << 6,
	     (uint64_t)((int64_t)c->tag + 1), c->bytes);
}

static void record_test(int flag)
{
	if (tr.run_count && tr.run_flag != flag) {
		uint64_t count = tr.run_count;
		int was = tr.run_flag;
		tr.run_count = 1;
		tr.run_flag = flag;
		emit(BCS_EV_TEST, (uint64_t)was, count, 0);
		return;
	}
	tr.run_count++;
	tr.run_flag = flag;
	__atomic_store_n(&tr.area->tr_run,
			 BCS_RUN(tr.run_count, tr.run_flag, tr.area->tr_head), __ATOMIC_RELEASE);
}

/* ---- replay */

/* The recorded run of this rank ended (crashed, killed, its node lost)
 * before this call: the replay has reached the point of failure, and the
 * rank waits there, as the recorded one did, until the job ends. */
static void hold_at_end(const char *fn)
{
	if (!tr.held)
		fprintf(stderr, "storm replay: rank %d reached the end of its recorded run at %s "
			"(the recorded rank %s there%s); holding until the job ends\n", tr.rank,
			fn, bcs_end_name(tr.t.end),
			tr.t.end == BCS_END_EXITED ? ", see its exit" : "");
	tr.held = 1;
	fflush(stderr);
	for (;;)
		pause();
}

/* replay: a stream has no entry left for call k of fn */
static void ran_out(const char *fn, size_t k, size_t n)
{
	if (tr.t.end != BCS_END_FINALIZED)
		hold_at_end(fn);
	diverged(fn, k, "the recorded run made only %zu such calls", n);
}

/* Reads and decodes the trace at path into tr.file; exits with a line
 * naming the cause if it cannot. */
static void load(const char *path)
{
	FILE *f = fopen(path, "rb");
	char why[256];
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	if (f) {
		for (;;) {
			buf = grow(buf, &cap, len + 65536, 1);
			size_t n = fread(buf + len, 1, 65536, f);
			len += n;
			if (n == 0)
				break;
		}
		fclose(f);
	}
	if (!f || bcs_trace_decode(buf, len, &tr.file, why, sizeof(why)) < 0) {
		fprintf(stderr, "BCS-MPI rank %d: cannot replay %s: %s\n", tr.rank, path,
			f ? why : "cannot open it");
		exit(1);
	}
	free(buf);
	for (uint32_t i = 0; i < tr.file.nsections; i++)
		if (tr.file.sec[i].rank == (uint32_t)tr.rank)
			tr.t = tr.file.sec[i];
	tr.recorded = bcs_trace_ncalls(&tr.t);
}

/* The test cursor at flag number n of the runs. */
static void seek_test(uint64_t n)
{
	for (tr.run = 0; tr.run < tr.t.nruns && n >= tr.t.runs[tr.run]; tr.run++)
		n -= tr.t.runs[tr.run];
	tr.run_off = n;
}

/* storm replay --from: this rank was restored from a checkpoint of a
 * recorded run, and from here on forces that run's outcomes. Its cursors
 * are its own counts, which the checkpoint's mark in the trace must be;
 * its call number is its memory's (restored with it), so it checks its
 * calls against the recorded ones from there on. */
static void replay_from(void)
{
	uint64_t ckpt = tr.hdr->replay_ckpt;
	char path[BCS_REPLAY_PATH];
	snprintf(path, sizeof(path), "%.*s", (int)sizeof(path) - 1, tr.hdr->replay_trace);
	load(path);
	tr.mode = 2;
	tr.from = 1;
	const struct bcs_mark *m = bcs_trace_mark(&tr.t, ckpt);
	if (!m) {
		fprintf(stderr, "storm replay: rank %d: %s has no mark for checkpoint %llu\n",
			tr.rank, path, (unsigned long long)ckpt);
		tr.abort_job(3);
		exit(3);
	}
	if (memcmp(m->n, tr.count, sizeof(m->n)))
		diverged("the restore", 0, "checkpoint %llu's mark in the trace says %llu/%llu/"
			 "%llu/%llu outcomes (wildcards/tests/waitany/waitsome), the restored rank "
			 "made %llu/%llu/%llu/%llu", (unsigned long long)ckpt,
			 (unsigned long long)m->n[0], (unsigned long long)m->n[1],
			 (unsigned long long)m->n[2], (unsigned long long)m->n[3],
			 (unsigned long long)tr.count[0], (unsigned long long)tr.count[1],
			 (unsigned long long)tr.count[2], (unsigned long long)tr.count[3]);
	seek_test(tr.count[BCS_S_TEST]);
	if (tr.rank) /* one line for the job; every rank's mark is in the trace */
		return;
	fprintf(stderr, "storm replay: rank %d replays from checkpoint %llu: from wildcard #%llu, "
		"test #%llu, waitany #%llu, waitsome #%llu, call #%llu\n", tr.rank,
		(unsigned long long)ckpt, (unsigned long long)m->n[0] + 1,
		(unsigned long long)m->n[1] + 1, (unsigned long long)m->n[2] + 1,
		(unsigned long long)m->n[3] + 1, (unsigned long long)tr.ncall + 1);
	fflush(stderr);
}

/* Each outcome first asks whether the rank was restored to replay: a
 * restore changes nothing else the library would notice. */
static void restored(void)
{
	if (tr.mode != 2 && tr.hdr && __atomic_load_n(&tr.hdr->replay_ckpt, __ATOMIC_RELAXED))
		replay_from();
}

void bcs_trace_init(int rank, void (*abort_job)(int code), struct bcs_area *area,
		    const struct bcs_chan_hdr *hdr,
		    void (*wait_room)(bool (*cond)(void *), void *arg))
{
	tr.abort_job = abort_job;
	tr.area = area;
	tr.hdr = hdr;
	tr.count = area ? area->tr_count : tr.count0;
	tr.wait_room = wait_room;
	tr.rank = rank;
	tr.t.rank = (uint32_t)rank;
	const char *rec = getenv("STORM_BCS_RECORD"), *rep = getenv("STORM_BCS_REPLAY");
	char path[4096];
	if (rep && *rep && !strchr(rep, '/')) {
		/* storm replay sends the trace along: it is in the job directory */
		const char *dir = getenv("STORM_JOB_DIR");
		snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", rep);
		rep = path;
	}
	if (rep && *rep) {
		load(rep);
		tr.mode = 2;
		/* storm replay --stop RANK:N (the CLI resolved "last") */
		const char *st = getenv("STORM_BCS_STOP");
		unsigned long long n;
		int r;
		if (st && sscanf(st, "%d:%llu", &r, &n) == 2 && r == rank)
			tr.stop = n;
	} else if (rec && *rec) {
		tr.mode = 1;
		/* an empty first event: its daemon knows from the head that this
		 * rank records, and reports its end even if it made no outcome */
		emit(BCS_EV_TEST, 0, 0, 0);
	}
}

int bcs_trace_replaying(void)
{
	return tr.mode == 2;
}

void bcs_trace_finish(void)
{
	restored();
	if (tr.mode == 2 && tr.t.end != BCS_END_FINALIZED)
		hold_at_end("MPI_Finalize");
	if (tr.mode == 2) {
		uint64_t ntest = bcs_trace_ntest(&tr.t);
		const uint64_t *n = tr.count;
		if (n[BCS_S_WILD] < tr.t.nwild || n[BCS_S_TEST] < ntest ||
		    n[BCS_S_INDEX] < tr.t.nindex || n[BCS_S_MASK] < tr.t.nmask)
			diverged("MPI_Finalize", 0,
				 "the recorded run had more outcomes (wildcards %llu/%zu, tests "
				 "%llu/%llu, waitany %llu/%zu, waitsome %llu/%zu)",
				 (unsigned long long)n[BCS_S_WILD], tr.t.nwild,
				 (unsigned long long)n[BCS_S_TEST], (unsigned long long)ntest,
				 (unsigned long long)n[BCS_S_INDEX], tr.t.nindex,
				 (unsigned long long)n[BCS_S_MASK], tr.t.nmask);
		return;
	}
	if (tr.mode != 1)
		return;
	/* the streams are whole: the open runs, then the mark of a clean end */
	flush_repeats();
	if (tr.run_count) {
		uint64_t count = tr.run_count;
		tr.run_count = 0;
		emit(BCS_EV_TEST, (uint64_t)tr.run_flag, count, 0);
	}
	emit(BCS_EV_FINAL, 0, 0, 0);
}

int bcs_trace_wild_post(int *src, int *tag)
{
	restored();
	size_t k = (size_t)take(BCS_S_WILD);
	if (tr.mode == 1) {
		emit(BCS_EV_WPOST, 0, 0, 0);
	} else if (tr.mode == 2) {
		if (k >= tr.t.nwild && tr.t.end != BCS_END_FINALIZED)
			hold_at_end("a wildcard receive");
		if (k >= tr.t.nwild)
			diverged("a wildcard receive", k, "the recorded run had only %zu",
				 tr.t.nwild);
		if (tr.t.wild[k].src >= 0) {
			*src = tr.t.wild[k].src;
			*tag = tr.t.wild[k].tag;
		}
	}
	return (int)k;
}

void bcs_trace_wild_done(int k, int src, int tag)
{
	restored();
	if (tr.mode == 1 && k >= 0 && (uint64_t)k < tr.count[BCS_S_WILD]) {
		emit(BCS_EV_WDONE, (uint64_t)k, (uint64_t)((int64_t)src + 1),
		     (uint64_t)((int64_t)tag + 1));
	} else if (tr.mode == 2 && k >= 0 && (size_t)k < tr.t.nwild && tr.t.wild[k].src < 0 &&
		   src >= 0 && tr.t.end != BCS_END_FINALIZED) {
		/* the recorded rank never got this message: its run ended waiting */
		hold_at_end("a wildcard receive");
	} else if (tr.mode == 2 && (size_t)k < tr.t.nwild && tr.t.wild[k].src >= 0 &&
		   (tr.t.wild[k].src != src || tr.t.wild[k].tag != tag)) {
		diverged("a wildcard receive", (size_t)k,
			 "expected source %d tag %d, matched source %d tag %d",
			 tr.t.wild[k].src, tr.t.wild[k].tag, src, tag);
	}
}

/* replay: the next flag's run, skipping spent and empty runs; nruns if none */
static size_t next_run(void)
{
	while (tr.run < tr.t.nruns && tr.run_off >= tr.t.runs[tr.run]) {
		tr.run++;
		tr.run_off = 0;
	}
	return tr.run;
}

int bcs_trace_peek_test(void)
{
	restored();
	if (tr.mode != 2)
		return -1;
	size_t r = next_run();
	return r < tr.t.nruns ? (int)(r % 2) : -2;
}

int bcs_trace_test(int flag, const char *fn)
{
	restored();
	uint64_t k = take(BCS_S_TEST);
	if (tr.mode == 1) {
		record_test(flag != 0);
	} else if (tr.mode == 2) {
		size_t r = next_run();
		if (r >= tr.t.nruns)
			ran_out(fn, (size_t)k, (size_t)k);
		tr.run_off++;
		return (int)(r % 2);
	}
	return flag;
}

int bcs_trace_index(int i, const char *fn)
{
	restored();
	size_t k = (size_t)take(BCS_S_INDEX);
	if (tr.mode == 1) {
		emit(BCS_EV_INDEX, (uint64_t)((int64_t)i + 1), 0, 0);
	} else if (tr.mode == 2) {
		if (k >= tr.t.nindex)
			ran_out(fn, k, tr.t.nindex);
		return tr.t.index[k];
	}
	return i;
}

uint64_t bcs_trace_mask(uint64_t mask, const char *fn)
{
	restored();
	size_t k = (size_t)take(BCS_S_MASK);
	if (tr.mode == 1) {
		emit(BCS_EV_MASK, mask, 0, 0);
	} else if (tr.mode == 2) {
		if (k >= tr.t.nmask)
			ran_out(fn, k, tr.t.nmask);
		return tr.t.mask[k];
	}
	return mask;
}

/* storm replay --debug and --stop: gdb clears this to let the rank go on */
volatile int bcs_debug_hold = 1;

/* Holds this rank where it is (where: "in MPI_Init", "at call #N ...") until
 * a debugger clears bcs_debug_hold, after saying how to attach: under
 * gdbserver when there is one and no terminal to run gdb in (the CLI runs
 * gdb itself on the marker line when it has one). */
static void hold_for_debugger(int rank, const char *where)
{
	bcs_debug_hold = 1; /* before the line a debugger clears it on */
	const char *node = getenv("STORM_NODENAME");
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	int pid = (int)getpid();
	const char *tty = getenv("STORM_BCS_DEBUG_TTY");
	if ((!tty || strcmp(tty, "1")) && access("/usr/bin/gdbserver", X_OK) == 0) {
		int port = 20000 + pid % 20000;
		char addr[64], self[16];
		snprintf(addr, sizeof(addr), ":%d", port);
		snprintf(self, sizeof(self), "%d", pid);
		if (fork() == 0) {
			execl("/usr/bin/gdbserver", "gdbserver", "--attach", addr, self, (char *)NULL);
			_exit(127);
		}
		fprintf(stderr, "storm replay: rank %d (pid %d on node %s) is held %s "
			"under gdbserver at %s:%d: gdb PROGRAM -ex 'target remote %s:%d' -ex "
			"'set var bcs_debug_hold = 0'\n", rank, pid, node ? node : host, where,
			host, port, host, port);
	} else {
		fprintf(stderr, "storm replay: rank %d (pid %d on node %s, host %s) is held %s: "
			"gdb -p %d -ex 'set var bcs_debug_hold = 0'\n", rank, pid,
			node ? node : host, host, where, pid);
	}
	fflush(stderr);
	dprintf(2, "\001BCS-DEBUG %d %d %s\n", rank, pid, host);
	while (bcs_debug_hold)
		usleep(50000);
}

void bcs_trace_debug_hold(int rank)
{
	const char *d = getenv("STORM_BCS_DEBUG");
	if (!d || !*d || atoi(d) != rank)
		return;
	hold_for_debugger(rank, "in MPI_Init");
}

void bcs_trace_mute(int on)
{
	tr.mute += on ? 1 : -1;
}

/* replay: a recorded call the run makes differently is a divergence */
static void check_call(const struct bcs_call *c)
{
	const struct bcs_call *was = bcs_trace_call_at(&tr.t, tr.ncall);
	if (!was || (was->kind == c->kind && was->peer == c->peer && was->tag == c->tag &&
		     was->bytes == c->bytes))
		return;
	char want[160], got[160];
	bcs_call_describe(was, want, sizeof(want));
	bcs_call_describe(c, got, sizeof(got));
	fprintf(stderr, "storm replay: divergence at rank %d, call #%llu: expected %s, made %s\n",
		tr.rank, (unsigned long long)tr.ncall, want, got);
	tr.abort_job(3);
}

void bcs_trace_call(int kind, int peer, int tag, uint64_t bytes)
{
	restored();
	if (!tr.mode || tr.mute)
		return;
	if (peer < BCS_PEER_NONE)
		peer = BCS_ARG_BAD;
	if (tag < -1)
		tag = BCS_ARG_BAD;
	struct bcs_call c = {.kind = (uint32_t)kind, .peer = peer, .tag = tag, .bytes = bytes};
	tr.ncall++;
	if (tr.mode == 1) {
		record_call(&c);
		return;
	}
	if (tr.recorded)
		check_call(&c);
	if (tr.stop && tr.ncall == tr.stop) {
		char what[160], where[200];
		bcs_call_describe(&c, what, sizeof(what));
		snprintf(where, sizeof(where), "at call #%llu %s", (unsigned long long)tr.ncall,
			 what);
		hold_for_debugger(tr.rank, where);
	}
	/* past the calls of a run that ended before MPI_Finalize: the point
	 * of failure, whatever the call (one that makes no outcome too) */
	if (tr.recorded && tr.ncall > tr.recorded && tr.t.end != BCS_END_FINALIZED)
		hold_at_end(bcs_call_name(c.kind));
}

void bcs_trace_waiting(void)
{
	restored();
	/* storm replay --from streams the job's output without the filter
	 * that reads this line (cli/bcs.c): it would print it raw */
	if (tr.mode != 2 || tr.from || !tr.t.blocked || tr.said_wait ||
	    tr.ncall != tr.recorded || !tr.recorded)
		return;
	/* the recorded rank ended waiting in this very call: the replay is
	 * where the recorded run was when it was stopped; the CLI names each
	 * rank's call once every rank has said so */
	const struct bcs_call *c = bcs_trace_call_at(&tr.t, tr.ncall);
	char what[160];
	bcs_call_describe(c, what, sizeof(what));
	const char *size = getenv("STORM_SIZE");
	tr.said_wait = 1;
	dprintf(2, "\001BCS-WAIT %d %s %llu %s\n", tr.rank, size && *size ? size : "1",
		(unsigned long long)tr.ncall, what);
}
