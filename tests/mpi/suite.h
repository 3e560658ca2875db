/* Shared by the conformance programs (plain MPI-3 C, the BCS-MPI subset only).
 *
 * Each rank keeps a log of its checks; suite_finish() has rank 0 print every
 * rank's log in rank order, so the output depends only on what MPI defines,
 * never on timing, and two implementations can be compared byte for byte.
 * A check's name says what it tests; a failed one adds what was got and wanted. */
#ifndef SUITE_H
#define SUITE_H
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *suite_log;
static size_t suite_len, suite_cap;
static int suite_checks, suite_fails;
static int rank, size;

static inline void suite_append(const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (suite_len + (size_t)n + 2 > suite_cap) {
		suite_cap = (suite_len + (size_t)n + 2) * 2;
		suite_log = realloc(suite_log, suite_cap);
		if (!suite_log)
			abort();
	}
	vsnprintf(suite_log + suite_len, (size_t)n + 1, fmt, ap);
	suite_len += (size_t)n;
	suite_log[suite_len++] = '\n';
	suite_log[suite_len] = '\0';
}

static inline void suite_line(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	suite_append(fmt, ap);
	va_end(ap);
}

/* nm: a printf-formatted check name, from a small ring of buffers */
static inline const char *nm(const char *fmt, ...)
{
	static char ring[8][160];
	static int next;
	char *b = ring[next++ % 8];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof ring[0], fmt, ap);
	va_end(ap);
	return b;
}

/* check: NAME holds when OK is true */
static inline int check(int ok, const char *name)
{
	suite_checks++;
	if (ok) {
		suite_line("ok   %s", name);
	} else {
		suite_fails++;
		suite_line("FAIL %s", name);
	}
	return ok;
}

/* checki: NAME holds when GOT == WANT (integers) */
static inline int checki(long long got, long long want, const char *name)
{
	suite_checks++;
	if (got == want) {
		suite_line("ok   %s", name);
		return 1;
	}
	suite_fails++;
	suite_line("FAIL %s: got %lld, wanted %lld", name, got, want);
	return 0;
}

/* checkrc: an MPI call returned the error class WANT (MPI_SUCCESS for none) */
static inline int checkrc(int rc, int want, const char *name)
{
	int cls = rc;
	if (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) != MPI_SUCCESS)
		cls = -1;
	return checki(cls, want, name);
}

/* The status of a receive: source, tag and count in elements of TYPE. */
static inline int check_status(const MPI_Status *st, int src, int tag, MPI_Datatype type,
			int count, const char *name)
{
	int got = -2;
	MPI_Get_count(st, type, &got);
	int ok = st->MPI_SOURCE == src && st->MPI_TAG == tag && got == count;
	suite_checks++;
	if (ok) {
		suite_line("ok   %s", name);
	} else {
		suite_fails++;
		suite_line("FAIL %s: source %d tag %d count %d, wanted %d %d %d", name,
			   st->MPI_SOURCE, st->MPI_TAG, got, src, tag, count);
	}
	return ok;
}

static inline void suite_begin(void)
{
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
}

/* Rank 0 prints every rank's log in rank order, then the totals; every rank
 * returns the exit status (1 if any check failed anywhere). */
#define SUITE_TAG 32100
static inline int suite_finish(const char *prog)
{
	int local[2] = { suite_checks, suite_fails }, total[2];
	if (rank == 0) {
		printf("%s: %d ranks\n", prog, size);
		for (int r = 0; r < size; r++) {
			char *text = suite_log;
			int len = (int)suite_len;
			if (r > 0) {
				MPI_Status st;
				MPI_Probe(r, SUITE_TAG, MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_CHAR, &len);
				text = malloc((size_t)len + 1);
				MPI_Recv(text, len, MPI_CHAR, r, SUITE_TAG, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			}
			for (char *line = text; line < text + len;) {
				char *end = memchr(line, '\n', (size_t)(text + len - line));
				if (!end)
					end = text + len;
				printf("%d %.*s\n", r, (int)(end - line), line);
				line = end + 1;
			}
			if (r > 0)
				free(text);
		}
	} else {
		MPI_Send(suite_log ? suite_log : "", (int)suite_len, MPI_CHAR, 0, SUITE_TAG,
			 MPI_COMM_WORLD);
	}
	MPI_Reduce(local, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("%s: %d checks, %d failed\n", prog, total[0], total[1]);
		fflush(stdout);
	}
	int failed = suite_fails;
	MPI_Bcast(total, 2, MPI_INT, 0, MPI_COMM_WORLD);
	free(suite_log);
	MPI_Finalize();
	return total[1] || failed ? 1 : 0;
}
/* A reduction no implementation may reorder: 2x2 integer matrices mod
 * SUITE_P multiplied, inout = in x inout (in holds the lower ranks'
 * product), so a result shows the order the operands were folded in. */
#define SUITE_P 10007
static inline void suite_matmul(const int *a, const int *b, int *out)
{
	int r[4] = {(a[0] * b[0] + a[1] * b[2]) % SUITE_P, (a[0] * b[1] + a[1] * b[3]) % SUITE_P,
		    (a[2] * b[0] + a[3] * b[2]) % SUITE_P, (a[2] * b[1] + a[3] * b[3]) % SUITE_P};
	memcpy(out, r, sizeof(r));
}

static inline void suite_mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		suite_matmul((int *)in + 4 * i, (int *)inout + 4 * i, (int *)inout + 4 * i);
}

#endif
