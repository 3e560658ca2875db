/* What the OSU micro-benchmark equivalents share (our own code, written to
 * behave and print as OSU 5.x does): options -m [MIN:]MAX message sizes,
 * -i iterations, -x warm-up iterations, -W window (bandwidth tests), -c
 * validation (a Pass/Fail column, as OSU 7 prints); the header and the
 * "%-10d%18.2f" rows. */
#ifndef THIRDPARTY_OSU_H
#define THIRDPARTY_OSU_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OSU_VERSION "v5.9 (equivalent)"
#define FIELD_WIDTH 18
#define FLOAT_PRECISION 2

struct osu_opts {
	long min_size, max_size;
	int iterations, skip, window, validate;
};

/* Parses argv into o (defaults given in o); prints the usage on rank 0 and
 * returns 1 on a bad option (the caller finalizes and exits). */
static inline int osu_parse(int argc, char **argv, struct osu_opts *o, int rank)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-c")) {
			o->validate = 1;
			continue;
		}
		if (!v || a[0] != '-' || a[2]) {
			if (rank == 0)
				fprintf(stderr, "Usage: %s [-m [MIN:]MAX] [-i ITER] [-x SKIP] [-W WINDOW] [-c]\n",
					argv[0]);
			return 1;
		}
		i++;
		switch (a[1]) {
		case 'm': {
			const char *colon = strchr(v, ':');
			if (colon) {
				o->min_size = atol(v);
				o->max_size = atol(colon + 1);
			} else {
				o->max_size = atol(v);
			}
			break;
		}
		case 'i': o->iterations = atoi(v); break;
		case 'x': o->skip = atoi(v); break;
		case 'W': o->window = atoi(v); break;
		default:
			if (rank == 0)
				fprintf(stderr, "%s: unknown option %s\n", argv[0], a);
			return 1;
		}
	}
	return 0;
}

static inline void osu_header(const char *title, const char *columns, const struct osu_opts *o)
{
	printf("# OSU MPI %s Test %s\n", title, OSU_VERSION);
	if (o->validate)
		printf("%-*s%*s\n", 30, columns, FIELD_WIDTH, "Validation");
	else
		printf("%s\n", columns);
	fflush(stdout);
}

static inline void osu_row(long size, double value, const struct osu_opts *o, int valid)
{
	if (o->validate)
		printf("%-*ld%*.*f%*s\n", 10, size, FIELD_WIDTH, FLOAT_PRECISION, value,
		       FIELD_WIDTH, valid ? "Pass" : "Fail");
	else
		printf("%-*ld%*.*f\n", 10, size, FIELD_WIDTH, FLOAT_PRECISION, value);
	fflush(stdout);
}

/* the byte pattern of (size, iteration, sender) at index j: a wrong,
 * stale or misplaced byte shows */
static inline char osu_byte(long size, int iter, int sender, long j)
{
	return (char)((size * 7 + iter * 13 + sender * 31 + j) % 251);
}

static inline void osu_fill(char *buf, long size, int iter, int sender)
{
	for (long j = 0; j < size; j++)
		buf[j] = osu_byte(size, iter, sender, j);
}

static inline int osu_check(const char *buf, long size, int iter, int sender)
{
	for (long j = 0; j < size; j++)
		if (buf[j] != osu_byte(size, iter, sender, j))
			return 0;
	return 1;
}

/* the pt2pt tests need exactly two processes */
static inline int osu_two(int size, int rank)
{
	if (size == 2)
		return 1;
	if (rank == 0)
		fprintf(stderr, "This test requires exactly two processes\n");
	return 0;
}

#endif
