/* A BCS-MPI trace file (bcs_mpi/abi/trace_codec.c) as storm replay and the
 * ranks read it. Properties: bcs_trace_decode either refuses with a one-line
 * reason or yields a trace whose every section is for a rank of the job;
 * encoding what it decoded and decoding that again gives the same trace.
 * The same bytes as stream events (bcs_stream_apply) fold or are refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_codec.h"
#include "fuzz.h"

static void same_rank(const struct bcs_rank_trace *a, const struct bcs_rank_trace *b)
{
	FUZZ_ASSERT(a->rank == b->rank && a->nwild == b->nwild && a->nruns == b->nruns &&
			    a->nindex == b->nindex && a->nmask == b->nmask,
		    "rank %u re-decoded differently", a->rank);
	FUZZ_ASSERT(!a->nwild || !memcmp(a->wild, b->wild, a->nwild * sizeof(*a->wild)), "wild");
	FUZZ_ASSERT(!a->nruns || !memcmp(a->runs, b->runs, a->nruns * sizeof(*a->runs)),
		    "test flag runs");
	FUZZ_ASSERT(!a->nindex || !memcmp(a->index, b->index, a->nindex * sizeof(*a->index)),
		    "index");
	FUZZ_ASSERT(!a->nmask || !memcmp(a->mask, b->mask, a->nmask * sizeof(*a->mask)), "mask");
	FUZZ_ASSERT(a->end == b->end && a->status == b->status, "end");
	FUZZ_ASSERT(a->nmarks == b->nmarks &&
			    (!a->nmarks || !memcmp(a->marks, b->marks, a->nmarks * sizeof(*a->marks))),
		    "checkpoint marks");
	FUZZ_ASSERT(a->ncalls == b->ncalls && a->blocked == b->blocked, "calls");
	for (size_t i = 0; i < a->ncalls; i++)
		FUZZ_ASSERT(a->calls[i].kind == b->calls[i].kind &&
				    a->calls[i].peer == b->calls[i].peer &&
				    a->calls[i].tag == b->calls[i].tag &&
				    a->calls[i].bytes == b->calls[i].bytes &&
				    a->calls[i].repeat == b->calls[i].repeat,
			    "call %zu", i);
}

/* The same bytes as a rank's stream events (what the machine manager
 * keeps): folded or refused, and a folded section re-decodes the same. */
static void as_stream(const uint8_t *data, size_t size)
{
	struct bcs_rank_trace t = {.rank = 1, .end = BCS_END_RUNNING}, u;
	if (bcs_stream_apply(&t, data, size) == 0) {
		size_t len;
		uint8_t *sec = bcs_trace_encode_rank(&t, &len);
		FUZZ_ASSERT(sec, "encode");
		FUZZ_ASSERT(bcs_trace_decode_rank(sec, len, &u) == 0, "a folded section refused");
		same_rank(&t, &u);
		bcs_rank_trace_free(&u);
		free(sec);
	}
	bcs_rank_trace_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bcs_trace t, u;
	char why[256];
	as_stream(data, size);
	if (bcs_trace_decode(data, size, &t, why, sizeof(why)) < 0) {
		FUZZ_ONE_LINE(why);
		return 0;
	}
	FUZZ_ASSERT(t.argc >= 1 && t.nsections <= t.ranks, "shape");
	uint8_t **secs = calloc(t.nsections + 1, sizeof(*secs));
	size_t *lens = calloc(t.nsections + 1, sizeof(*lens));
	FUZZ_ASSERT(secs && lens, "out of memory");
	for (uint32_t i = 0; i < t.nsections; i++) {
		FUZZ_ASSERT(t.sec[i].rank < t.ranks, "section for rank %u of %u", t.sec[i].rank,
			    t.ranks);
		secs[i] = bcs_trace_encode_rank(&t.sec[i], &lens[i]);
		FUZZ_ASSERT(secs[i], "encode");
	}
	size_t len;
	uint8_t *again = bcs_trace_encode(&t, secs, lens, &len);
	FUZZ_ASSERT(again, "encode");
	FUZZ_ASSERT(bcs_trace_decode(again, len, &u, why, sizeof(why)) == 0,
		    "its own encoding refused: %s", why);
	FUZZ_ASSERT(u.job == t.job && u.nodes == t.nodes && u.ranks == t.ranks && u.argc == t.argc &&
			    u.nsections == t.nsections, "header re-decoded differently");
	for (uint32_t i = 0; i < t.argc; i++)
		FUZZ_ASSERT(!strcmp(t.argv[i], u.argv[i]), "argument %u", i);
	for (uint32_t i = 0; i < t.nsections; i++)
		same_rank(&t.sec[i], &u.sec[i]);
	for (uint32_t i = 0; i < t.nsections; i++)
		free(secs[i]);
	free(secs);
	free(lens);
	free(again);
	bcs_trace_free(&u);
	bcs_trace_free(&t);
	return 0;
}
