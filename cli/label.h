/* `storm run --label`: splits each rank's output into lines and prefixes
 * every line with "RANK: ". Output arrives in arbitrary pieces, so a partial
 * line is kept per (rank, stream) until its newline or the end of the job. */
#ifndef STORM_CLI_LABEL_H
#define STORM_CLI_LABEL_H

#include <stddef.h>

/* A partial line longer than this is emitted as a line of its own, so a rank
 * that never writes a newline cannot grow the CLI without bound. */
#define LABEL_PARTIAL_MAX 65536
/* Ranks a job can have (1000 nodes of 4096 ranks) fit below this; the
 * partial line of a rank beyond it is not kept (it would size the table). */
#define LABEL_MAX_RANKS (1u << 22)

struct strbuf {
	char *data;
	size_t len, cap;
};
int sb_append(struct strbuf *b, const void *data, size_t len); /* 0 or -ENOMEM */
void sb_free(struct strbuf *b);

struct label_part {
	char *data;
	size_t len, cap;
};
struct label_split {
	struct label_part *parts; /* [rank * 2 + (stream == stderr)] */
	size_t nparts;
};

/* Appends to out every line that data completes for (rank, is_stderr), each
 * as "RANK: line\n"; keeps the rest. 0 or -ENOMEM. */
int label_feed(struct label_split *l, unsigned rank, int is_stderr, const void *data,
	       size_t len, struct strbuf *out);
/* At the end of the job: every kept partial line, labelled and given a
 * newline, rank by rank, into out[0] (stdout) and out[1] (stderr). */
int label_flush(struct label_split *l, struct strbuf out[2]);
void label_free(struct label_split *l);

#endif
