/* storm run --record, the node's side: each recording rank streams its
 * timing-dependent outcomes into its channel's trace ring as it makes them
 * (bcs_mpi/abi/chan.h); at every strobe the daemon takes them out, appends
 * them to the job's trace on this node (STATE/bcs-trace/JOB/RANK) and
 * queues them for the machine manager, which keeps them in its database.
 * When a rank ends, however, its last outcomes and its wait status follow,
 * before its exit: a crash, a cancel or a time limit leaves a trace complete
 * up to that moment. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan.h"
#include "trace_codec.h"
#include "nd.h"
#include "bcs_int.h"

#define TR_CHUNK 8192 /* bytes of one record in a report */

/* the node's copy: appended as it comes, kept after the job */
static void keep_copy(struct nd *nd, uint64_t job, uint32_t rank, const uint8_t *d, size_t n)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/bcs-trace", nd->state_dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), "%s/bcs-trace/%" PRIu64, nd->state_dir, job);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), "%s/bcs-trace/%" PRIu64 "/%u", nd->state_dir, job, rank);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, d, n) != (ssize_t)n)
		slog("job %" PRIu64 ": cannot keep rank %u's trace in %s: %s", job, rank, path,
		     strerror(errno));
	close(fd);
}

static void ship(struct nd *nd, uint64_t job, uint32_t rank, const uint8_t *d, size_t n)
{
	keep_copy(nd, job, rank, d, n);
	for (size_t off = 0; off < n; off += TR_CHUNK)
		nd_queue_bcs(nd, job, rank, d + off, n - off < TR_CHUNK ? n - off : TR_CHUNK);
}

/* A job of storm replay --from: its ranks replay, and what a restored
 * rank still had in its ring belongs to the recorded run's trace */
static bool replaying(const struct bjob *j)
{
	return ((const struct bcs_chan_hdr *)j->map)->replay_ckpt != 0;
}

static bool has_state(struct bjob *j)
{
	if (j->tr_last)
		return true;
	j->tr_last = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->tr_last));
	j->tr_kind = calloc(j->nlocal ? j->nlocal : 1, sizeof(*j->tr_kind));
	return j->tr_last && j->tr_kind;
}

/* What local rank lr put in its ring since the last time. */
static void drain_rank(struct nd *nd, struct bjob *j, uint32_t lr)
{
	struct bcs_area *a = bcs_area_of(j, lr);
	uint64_t tail = a->tr_tail, head = __atomic_load_n(&a->tr_head, __ATOMIC_ACQUIRE);
	if (head == tail || !has_state(j))
		return;
	uint64_t n = head - tail;
	if (replaying(j)) {
		__atomic_store_n(&a->tr_tail, head, __ATOMIC_RELEASE);
		return;
	}
	if (n > BCS_TRACE_RING) {
		/* the rank's memory is its own: a head it scribbled on */
		slog("job %" PRIu64 ": rank %u's trace ring says %" PRIu64 " bytes; dropped", j->id,
		     j->first + lr, n);
		__atomic_store_n(&a->tr_tail, head, __ATOMIC_RELEASE);
		return;
	}
	uint8_t buf[BCS_TRACE_RING];
	for (uint64_t i = 0; i < n; i++)
		buf[i] = a->tr[(tail + i) % BCS_TRACE_RING];
	__atomic_store_n(&a->tr_tail, head, __ATOMIC_RELEASE);
	/* where the last whole event began: the open run's tag is read
	 * against it when the rank dies (rank_end) */
	for (size_t off = 0, len; off < n; off += len) {
		if (!(len = bcs_stream_event_len(buf + off, (size_t)n - off)))
			break;
		j->tr_last[lr] = tail + off;
		j->tr_kind[lr] = buf[off];
	}
	ship(nd, j->id, j->first + lr, buf, (size_t)n);
}

void nd_bcs_trace_strobe(struct nd *nd)
{
	if (!nd->bcs)
		return;
	for (struct bjob *j = nd->bcs->jobs; j; j = j->next) {
		if (!j->job || !j->map || j->sealed) /* sealed: as its images keep it */
			continue;
		for (uint32_t lr = 0; lr < j->nlocal; lr++)
			drain_rank(nd, j, lr);
	}
}

/* The rank died with test flags it had not put in the ring yet (the open
 * run) unless the run was written after the last event (its tag is the
 * head), or before an event that was not a run (chan.h, tr_run). */
static size_t open_run(struct bjob *j, uint32_t lr, uint8_t *out)
{
	struct bcs_area *a = bcs_area_of(j, lr);
	uint64_t head = a->tr_head, run = a->tr_run;
	bool current = BCS_RUN_TAG(run) == (head & 0xfffffu);
	bool before_event = j->tr_last && BCS_RUN_TAG(run) == (j->tr_last[lr] & 0xfffffu) &&
			    j->tr_kind[lr] != BCS_EV_TEST;
	if (!BCS_RUN_COUNT(run) || !(current || before_event))
		return 0;
	return bcs_stream_event(out, BCS_EV_TEST, BCS_RUN_FLAG(run), BCS_RUN_COUNT(run), 0);
}

void nd_bcs_trace_mark(struct nd *nd, struct nd_job *job, uint64_t ckpt)
{
	struct bjob *j = nd->bcs ? bcs_job_find(nd->bcs, job->id) : NULL;
	if (!j || !j->map || replaying(j))
		return;
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		const struct bcs_area *a = bcs_area_of(j, lr);
		if (!a->tr_head)
			continue; /* not recording, or it never reached MPI_Init */
		struct bcs_mark m = { .ckpt = ckpt };
		for (int s = 0; s < BCS_S_N; s++)
			m.n[s] = __atomic_load_n(&a->tr_count[s], __ATOMIC_RELAXED);
		uint8_t ev[BCS_EV_MARK_MAX];
		size_t n = bcs_stream_mark(ev, &m);
		keep_copy(nd, j->id, j->first + lr, ev, n);
		nd_queue_bcs_mark(nd, j->id, j->first + lr, ev, n, ckpt, m.n);
	}
}

/* The same for the repeats of its last call (chan.h, tr_crun): a REPEAT
 * event that reached the ring already holds them. */
static size_t open_repeats(struct bjob *j, uint32_t lr, uint8_t *out)
{
	struct bcs_area *a = bcs_area_of(j, lr);
	uint64_t head = a->tr_head, run = a->tr_crun;
	bool current = BCS_RUN_TAG(run) == (head & 0xfffffu);
	bool before_event = j->tr_last && BCS_RUN_TAG(run) == (j->tr_last[lr] & 0xfffffu) &&
			    j->tr_kind[lr] != BCS_EV_REPEAT;
	if (!BCS_RUN_COUNT(run) || !(current || before_event))
		return 0;
	return bcs_stream_event(out, BCS_EV_REPEAT, BCS_RUN_COUNT(run), 0, 0);
}

void nd_bcs_trace_rank_end(struct nd *nd, struct nd_job *job, uint32_t lr, int status)
{
	struct bjob *j = nd->bcs ? bcs_job_find(nd->bcs, job->id) : NULL;
	if (!j || !j->map || lr >= j->nlocal)
		return;
	struct bcs_area *a = bcs_area_of(j, lr);
	if (!a->tr_head)
		return; /* not recording, or it never reached MPI_Init */
	drain_rank(nd, j, lr);
	uint8_t ev[4 * BCS_EV_MAX];
	size_t n = open_run(j, lr, ev);
	n += open_repeats(j, lr, ev + n);
	/* it died inside a blocking call (a deadlock cancelled): storm replay
	 * names that call when every rank of the replay waits in its own */
	if (__atomic_load_n(&a->waiting, __ATOMIC_SEQ_CST))
		n += bcs_stream_event(ev + n, BCS_EV_BLOCKED, 0, 0, 0);
	n += bcs_stream_event(ev + n, BCS_EV_EXIT, (uint32_t)status, 0, 0);
	ship(nd, j->id, j->first + lr, ev, n);
}
