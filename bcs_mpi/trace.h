/* BCS-MPI record and replay (docs/bcs-trace.md).
 *
 * Matching under BCS is a function of (slice, source rank, post order); what
 * still depends on timing is what a program observes between slices: which
 * message a wildcard receive got, whether an MPI_Test* or MPI_Iprobe found
 * something, which request MPI_Waitany/Waitsome returned. `storm run
 * --record` has each rank log those outcomes (four streams, below); `storm
 * replay` hands each rank its streams back and the library forces every
 * outcome: a wildcard receive becomes a receive from the recorded source and
 * tag, a test returns the recorded flag (waiting if it has to), and so on.
 *
 * The codec (bcs_trace_encode_rank, bcs_trace_decode) is pure and shared by
 * the library, the storm CLI and the unit tests. */
#ifndef BCS_TRACE_H
#define BCS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define BCS_TRACE_MAGIC "BCST"
#define BCS_TRACE_VERSION 1

enum bcs_stream { BCS_S_WILD, BCS_S_TEST, BCS_S_INDEX, BCS_S_MASK, BCS_S_N };

struct bcs_wild {
	int32_t src, tag; /* world rank (-1: never completed) and tag */
};

/* one rank's outcomes, in call order per stream */
struct bcs_rank_trace {
	uint32_t rank;
	struct bcs_wild *wild;
	size_t nwild;
	uint64_t *runs;   /* MPI_Test/Testall/Iprobe flags as run lengths: runs[0]
			   * zeros, runs[1] ones, runs[2] zeros, ... (a polling
			   * loop of any length is one run, never expanded) */
	size_t nruns;
	int32_t *index;   /* MPI_Waitany/Testany: index, -1 none */
	size_t nindex;
	uint64_t *mask;   /* MPI_Waitsome: completed requests (first 64) */
	size_t nmask;
};

struct bcs_trace {
	uint32_t nodes, ranks;
	uint32_t argc;
	char **argv;
	uint32_t nsections;
	struct bcs_rank_trace *sec;
};

/* How many test flags the runs hold (saturating). */
uint64_t bcs_trace_ntest(const struct bcs_rank_trace *t);
/* Encodes one rank's streams; returns a malloc'd buffer (and its length) or NULL. */
uint8_t *bcs_trace_encode_rank(const struct bcs_rank_trace *t, size_t *len);
/* Whole file: header (job shape, argv) then the rank sections as encoded above. */
uint8_t *bcs_trace_encode(const struct bcs_trace *t, uint8_t *const *secs, const size_t *lens,
			  size_t *len);
/* Decodes a whole trace file. Returns 0, or -1 with a reason in why. Never
 * reads outside buf; every count is checked against the bytes left. */
int bcs_trace_decode(const void *buf, size_t len, struct bcs_trace *t, char *why, size_t whylen);
int bcs_trace_decode_rank(const uint8_t *buf, size_t len, struct bcs_rank_trace *r);
void bcs_trace_free(struct bcs_trace *t);
void bcs_rank_trace_free(struct bcs_rank_trace *r);
/* base64 for the trace lines ranks print at MPI_Finalize */
char *bcs_b64_encode(const uint8_t *in, size_t len);
uint8_t *bcs_b64_decode(const char *in, size_t *len);

/* ---- the library's side (trace.c) */
void bcs_trace_init(int rank);
void bcs_trace_finish(void);
/* A wildcard receive or probe is posted: returns its ordinal; in replay,
 * the source and tag become the recorded outcome. */
int bcs_trace_wild_post(int *src, int *tag);
void bcs_trace_wild_done(int ordinal, int src, int tag);
/* A timing-dependent flag: records it, or in replay returns the recorded one. */
int bcs_trace_test(int flag, const char *fn);
/* In replay, the next flag without taking it; -1 otherwise. */
int bcs_trace_peek_test(void);
int bcs_trace_index(int i, const char *fn);
uint64_t bcs_trace_mask(uint64_t mask, const char *fn);
/* Non-zero in replay. */
int bcs_trace_replaying(void);

#endif
