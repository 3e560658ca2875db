/* The BCS-MPI trace codec (format in docs/bcs-trace.md): one rank's
 * recorded outcomes and the whole trace file, encoded and decoded. Pure;
 * shared by the rank library (recording, replay), the storm CLI (storm
 * replay, the file's header) and the unit tests. */
#ifndef BCS_TRACE_CODEC_H
#define BCS_TRACE_CODEC_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define BCS_TRACE_MAGIC "BCST"
#define BCS_TRACE_VERSION 4 /* 2: each section says how its rank ended; 3: the job's
			     * id, each section's checkpoint marks; 4: each section
			     * lists its MPI calls */

/* How a rank's recorded run ended (a section's `end`). */
enum bcs_end {
	BCS_END_FINALIZED = 0, /* it reached MPI_Finalize: its streams are whole */
	BCS_END_EXITED = 1,    /* it ended without MPI_Finalize (status: wait status) */
	BCS_END_LOST = 2,      /* its node was lost: the streams up to its last report */
	BCS_END_RUNNING = 3,   /* no end reported yet (the trace was taken while it ran) */
	BCS_END_MAX = 3,
};

/* The streamed form of a rank's outcomes, as it makes them: events appended
 * by the rank (through its channel), its node daemon (EXIT) and the machine
 * manager (LOST); bcs_stream_apply folds them into a rank's streams. */
enum bcs_ev {
	BCS_EV_WPOST = 1, /* a wildcard receive or probe was posted */
	BCS_EV_WDONE = 2, /* ordinal, src+1, tag+1: it completed */
	BCS_EV_TEST = 3,  /* flag, count: that many test flags (runs merge) */
	BCS_EV_INDEX = 4, /* index+1 */
	BCS_EV_MASK = 5,  /* mask */
	BCS_EV_FINAL = 6, /* the rank reached MPI_Finalize */
	BCS_EV_EXIT = 7,  /* wait status: the rank ended (its node daemon) */
	BCS_EV_LOST = 8,  /* its node was lost (the machine manager) */
	BCS_EV_MARK = 9,  /* checkpoint, then the rank's count per stream at its
			   * quiescent point (its node daemon: struct bcs_mark) */
	BCS_EV_CALL = 10, /* kind | (peer+3) << 6, tag+1, bytes: an MPI call began */
	BCS_EV_REPEAT = 11, /* count: the last call again, that many times */
	BCS_EV_BLOCKED = 12, /* the rank ended waiting in its last call (its node daemon) */
};
#define BCS_EV_MAX 31 /* the longest event a rank writes: a kind and three 10-byte varints */
#define BCS_EV_MARK_MAX 51 /* a mark: a kind and five 10-byte varints */

/* The MPI calls a rank's calls stream numbers (BCS_EV_CALL's kind). */
enum bcs_call_kind {
	BCS_C_SEND = 1, BCS_C_SSEND, BCS_C_ISEND, BCS_C_ISSEND, BCS_C_RECV, BCS_C_IRECV,
	BCS_C_SENDRECV, BCS_C_WAIT, BCS_C_TEST, BCS_C_WAITALL, BCS_C_TESTALL, BCS_C_WAITANY,
	BCS_C_TESTANY, BCS_C_WAITSOME, BCS_C_PROBE, BCS_C_IPROBE, BCS_C_BARRIER, BCS_C_BCAST,
	BCS_C_REDUCE, BCS_C_ALLREDUCE, BCS_C_GATHER, BCS_C_SCATTER, BCS_C_ALLGATHER,
	BCS_C_ALLTOALL, BCS_C_FINALIZE, BCS_C_TESTSOME, BCS_C_ISENDRECV, BCS_C_RSEND,
	BCS_C_IRSEND,
	BCS_C_MAX = BCS_C_IRSEND, /* below 64: the kind shares a varint with the peer */
};

/* One MPI call, and how many times it was made again right after (a
 * polling loop is one entry). peer: the source, destination or root as
 * the program gave it (MPI_ANY_SOURCE -1, MPI_PROC_NULL -2), BCS_PEER_NONE
 * for none (a wait for a send, a barrier);
 * tag as given (MPI_ANY_TAG -1); bytes: the message's or buffer's size. */
#define BCS_PEER_NONE (-3)
/* a peer or tag outside what MPI allows (a rank below MPI_PROC_NULL, a tag
 * below MPI_ANY_TAG), kept as this: the call was refused, and the streams
 * carry only values from BCS_PEER_NONE (tags from MPI_ANY_TAG) up */
#define BCS_ARG_BAD INT32_MAX
struct bcs_call {
	uint32_t kind;
	int32_t peer, tag;
	uint64_t bytes;
	uint64_t repeat;
};

enum bcs_stream { BCS_S_WILD, BCS_S_TEST, BCS_S_INDEX, BCS_S_MASK, BCS_S_N };

/* Where checkpoint ckpt found a rank: how many outcomes of each stream
 * (enum bcs_stream) it had made. A replay from that checkpoint forces the
 * outcomes from there on. */
struct bcs_mark {
	uint64_t ckpt;
	uint64_t n[BCS_S_N];
};

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
	struct bcs_mark *marks; /* the checkpoints taken of it, in the order taken */
	size_t nmarks;
	uint32_t end;     /* enum bcs_end */
	int32_t status;   /* BCS_END_EXITED: its wait status */
	struct bcs_call *calls; /* version 4: its MPI calls in order */
	size_t ncalls;
	bool blocked;     /* it ended waiting in its last call (a deadlock's rank) */
	size_t capwild, capruns, capindex, capmask, capmarks, capcalls; /* bcs_stream_apply's room */
	bool finalized;   /* bcs_stream_apply: FINAL seen */
};

struct bcs_trace {
	uint32_t version; /* the file's (BCS_TRACE_VERSION or earlier) */
	uint64_t job;     /* the recorded job (0: a version 1 or 2 file) */
	uint32_t nodes, ranks;
	uint32_t argc;
	char **argv;
	uint32_t nsections;
	struct bcs_rank_trace *sec;
};

/* How many test flags the runs hold (saturating). */
uint64_t bcs_trace_ntest(const struct bcs_rank_trace *t);
/* How many MPI calls the section lists (repeats counted, saturating). */
uint64_t bcs_trace_ncalls(const struct bcs_rank_trace *t);
/* Call number n (from 1, repeats counted) of the section, or NULL. */
const struct bcs_call *bcs_trace_call_at(const struct bcs_rank_trace *t, uint64_t n);
/* "MPI_Recv", or "MPI_?" for a kind this storm does not know. */
const char *bcs_call_name(uint32_t kind);
/* Describes a call as a user wrote it: "MPI_Recv(source=2, tag=7, 4 bytes)". */
void bcs_call_describe(const struct bcs_call *c, char *out, size_t len);
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
/* Encodes one stream event of kind ev with up to three values into out
 * (BCS_EV_MAX bytes); returns its length. */
size_t bcs_stream_event(uint8_t *out, int ev, uint64_t a, uint64_t b, uint64_t c);
/* Encodes mark m as a BCS_EV_MARK event into out (BCS_EV_MARK_MAX bytes). */
size_t bcs_stream_mark(uint8_t *out, const struct bcs_mark *m);
/* t's mark of checkpoint ckpt, NULL if it has none. */
const struct bcs_mark *bcs_trace_mark(const struct bcs_rank_trace *t, uint64_t ckpt);
/* The length of the whole event at p (n bytes there), 0 if none is. */
size_t bcs_stream_event_len(const uint8_t *p, size_t n);
/* Folds a rank's stream events (whole events only) into t, which starts
 * zeroed with its rank set, end BCS_END_RUNNING. Returns 0, or -1 on a
 * malformed event (t then holds the events before it). */
int bcs_stream_apply(struct bcs_rank_trace *t, const uint8_t *buf, size_t len);
/* A name for a section's end, for messages: "reached MPI_Finalize", ... */
const char *bcs_end_name(uint32_t end);
/* base64 for the trace lines ranks print at MPI_Finalize */
char *bcs_b64_encode(const uint8_t *in, size_t len);
uint8_t *bcs_b64_decode(const char *in, size_t *len);

#endif
