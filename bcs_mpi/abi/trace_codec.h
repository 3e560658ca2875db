/* The BCS-MPI trace codec (format in docs/bcs-trace.md): one rank's
 * recorded outcomes and the whole trace file, encoded and decoded. Pure;
 * shared by the rank library (recording, replay), the storm CLI (storm
 * replay, the file's header) and the unit tests. */
#ifndef BCS_TRACE_CODEC_H
#define BCS_TRACE_CODEC_H

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

#endif
