/* A reply as the storm CLI takes it from the MM (cli/conn.c, run.c,
 * matrix.c): unpack and version, then what the CLI does with the bodies
 * that carry structure: draws a Matrix (cli/matrix.c), splits Output into
 * labelled lines (cli/label.c). Properties: a decoded reply packs back to
 * the same bytes after a second decode (fuzz/pb.h); every labelled line starts with its
 * rank ("R: ") and ends with a newline. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"
#include "label.h"
#include "pb.h"

static void check_lines(const struct strbuf *b, unsigned rank)
{
	char prefix[16];
	int n = snprintf(prefix, sizeof(prefix), "%u: ", rank);
	for (size_t i = 0; i < b->len;) {
		FUZZ_ASSERT(b->len - i >= (size_t)n && !memcmp(b->data + i, prefix, (size_t)n),
			    "a labelled line without its rank");
		const char *nl = memchr(b->data + i, '\n', b->len - i);
		/* the data may hold NUL bytes and newlines of its own: find the end
		 * of this line as the CLI wrote it */
		FUZZ_ASSERT(nl, "a labelled line without a newline");
		i = (size_t)(nl - b->data) + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Storm__Ctl__Reply *rep = storm__ctl__reply__unpack(NULL, size, data);
	if (!rep)
		return 0;
	pb_round_trip(&rep->base);
	if (rep->version != CTL_VERSION) { /* ctl_recv refuses it here */
		storm__ctl__reply__free_unpacked(rep, NULL);
		return 0;
	}
	switch (rep->body_case) {
	case STORM__CTL__REPLY__BODY_MATRIX: {
		FILE *f = fopen("/dev/null", "w");
		FUZZ_ASSERT(f, "/dev/null");
		matrix_draw(rep->matrix, f);
		fclose(f);
		break;
	}
	case STORM__CTL__REPLY__BODY_OUTPUT: {
		const Storm__Ctl__Output *o = rep->output;
		struct label_split l = {0};
		struct strbuf out = {0}, end[2] = {{0}, {0}};
		int is_err = o->stream == STORM__CTL__STREAM__STDERR;
		/* twice: the second piece continues the first one's partial line */
		if (label_feed(&l, o->rank, is_err, o->data.data, o->data.len, &out) == 0 &&
		    label_feed(&l, o->rank, is_err, o->data.data, o->data.len, &out) == 0 &&
		    label_flush(&l, end) == 0) {
			check_lines(&out, o->rank);
			check_lines(&end[is_err], o->rank);
			FUZZ_ASSERT(end[!is_err].len == 0, "output on the other stream");
		}
		sb_free(&out);
		sb_free(&end[0]);
		sb_free(&end[1]);
		label_free(&l);
		break;
	}
	default:
		break;
	}
	storm__ctl__reply__free_unpacked(rep, NULL);
	return 0;
}
