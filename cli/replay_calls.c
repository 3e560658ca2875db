/* storm replay --list and --stop: a rank's MPI calls as its trace section
 * numbers them (docs/bcs-trace.md), for the user to pick the call a rank
 * is held at; the rank library counts its calls the same way in the
 * replay (bcs_trace_call). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_codec.h"
#include "bcs.h"
#include "cli.h"

/* the section of rank r, or NULL */
static const struct bcs_rank_trace *section_of(const struct bcs_trace *t, uint32_t r)
{
	for (uint32_t i = 0; i < t->nsections; i++)
		if (t->sec[i].rank == r)
			return &t->sec[i];
	return NULL;
}

/* a rank as the user wrote it: 0 .. ranks-1; -1 after saying why */
static long rank_arg(const struct bcs_trace *t, const char *s, const char *opt)
{
	char *end;
	errno = 0;
	long r = strtol(s, &end, 10);
	if (errno || end == s || *end || r < 0) {
		fprintf(stderr, "storm replay: error: %s wants a rank, not '%s'\n", opt, s);
		return -1;
	}
	if ((uint64_t)r >= t->ranks) {
		fprintf(stderr, "storm replay: error: %s %ld: the job had ranks 0..%u\n", opt, r,
			t->ranks - 1);
		return -1;
	}
	return r;
}

static int no_calls(const struct bcs_trace *t, const struct bcs_rank_trace *s, long r,
		    const char *opt)
{
	if (s && s->ncalls)
		return 0;
	/* calls came with version 4 of the format */
	if (t->version < 4)
		fprintf(stderr, "storm replay: error: %s: the trace is of version %u of the format, "
			"written by a storm before call numbers (version 4)\n", opt, t->version);
	else
		fprintf(stderr, "storm replay: error: %s: the trace lists no MPI call of rank %ld "
			"(%s)\n", opt, r, s ? "the rank made none"
					   : "its record never reached the machine manager");
	return -1;
}

static int list_json(const struct bcs_rank_trace *s, long r)
{
	json_t *calls = json_array();
	uint64_t n = 1;
	for (size_t i = 0; i < s->ncalls; i++) {
		const struct bcs_call *c = &s->calls[i];
		char what[160];
		bcs_call_describe(c, what, sizeof(what));
		json_array_append_new(
			calls, json_pack("{sI sI ss ss si si sI}", "call", (json_int_t)n, "last",
					 (json_int_t)(n + c->repeat), "function",
					 bcs_call_name(c->kind), "text", what, "peer", c->peer,
					 "tag", c->tag, "bytes", (json_int_t)c->bytes));
		n += c->repeat + 1;
	}
	json_t *o = json_pack("{si sI ss sb so}", "rank", (int)r, "calls_made",
			      (json_int_t)bcs_trace_ncalls(s), "end", bcs_end_name(s->end),
			      "waiting_in_last", s->blocked, "calls", calls);
	char *txt = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
	json_decref(o);
	if (!txt)
		return EXIT_STORM;
	puts(txt);
	free(txt);
	return EXIT_OK;
}

static int replay_list(const struct bcs_trace *t, const char *rank, int json)
{
	long r = rank_arg(t, rank, "--list");
	if (r < 0)
		return EXIT_USAGE;
	const struct bcs_rank_trace *s = section_of(t, (uint32_t)r);
	if (no_calls(t, s, r, "--list") < 0)
		return EXIT_STORM;
	if (json)
		return list_json(s, r);
	printf("rank %ld made %llu MPI calls; the recorded rank %s%s\n", r,
	       (unsigned long long)bcs_trace_ncalls(s), bcs_end_name(s->end),
	       s->blocked ? ", waiting in its last call" : "");
	uint64_t n = 1;
	for (size_t i = 0; i < s->ncalls; i++) {
		const struct bcs_call *c = &s->calls[i];
		char what[160], num[48];
		bcs_call_describe(c, what, sizeof(what));
		if (c->repeat)
			snprintf(num, sizeof(num), "%llu-%llu", (unsigned long long)n,
				 (unsigned long long)(n + c->repeat));
		else
			snprintf(num, sizeof(num), "%llu", (unsigned long long)n);
		if (c->repeat)
			printf("%12s  %s, %llu times\n", num, what,
			       (unsigned long long)c->repeat + 1);
		else
			printf("%12s  %s\n", num, what);
		n += c->repeat + 1;
	}
	return EXIT_OK;
}

static int replay_stop_resolve(const struct bcs_trace *t, const char *arg, char *out,
			       size_t len)
{
	char rank[32];
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(rank) || !colon[1]) {
		fprintf(stderr, "storm replay: error: --stop wants RANK:N or RANK:last, not '%s'\n",
			arg);
		return EXIT_USAGE;
	}
	memcpy(rank, arg, (size_t)(colon - arg));
	rank[colon - arg] = '\0';
	long r = rank_arg(t, rank, "--stop");
	if (r < 0)
		return EXIT_USAGE;
	const struct bcs_rank_trace *s = section_of(t, (uint32_t)r);
	if (no_calls(t, s, r, "--stop") < 0)
		return EXIT_STORM;
	uint64_t made = bcs_trace_ncalls(s), n;
	if (!strcmp(colon + 1, "last")) {
		n = made;
	} else {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(colon + 1, &end, 10);
		if (errno || *end || colon[1] == '-' || v == 0) {
			fprintf(stderr, "storm replay: error: --stop %s: N is a call number from 1 "
				"(storm replay --list %ld shows them) or 'last'\n", arg, r);
			return EXIT_USAGE;
		}
		n = v;
	}
	if (n > made) {
		fprintf(stderr, "storm replay: error: --stop %s: the recorded rank %ld made %llu "
			"MPI calls\n", arg, r, (unsigned long long)made);
		return EXIT_USAGE;
	}
	char what[160];
	bcs_call_describe(bcs_trace_call_at(s, n), what, sizeof(what));
	fprintf(stderr, "storm replay: rank %ld will be held at its call #%llu, %s\n", r,
		(unsigned long long)n, what);
	snprintf(out, len, "%ld:%llu", r, (unsigned long long)n);
	return -1;
}

int replay_calls(const struct bcs_trace *t, const char *list, int json, const char *stop)
{
	char at[48];
	if (json && !list) {
		fprintf(stderr, "storm replay: error: --json is for --list\n");
		return EXIT_USAGE;
	}
	if (list && stop) {
		fprintf(stderr, "storm replay: error: --list runs nothing: not with --stop\n");
		return EXIT_USAGE;
	}
	if (list)
		return replay_list(t, list, json);
	if (!stop)
		return -1;
	int rc = replay_stop_resolve(t, stop, at, sizeof(at));
	if (rc >= 0)
		return rc;
	setenv("STORM_BCS_STOP", at, 1);
	/* with a terminal the CLI runs gdb itself (bcs.c, on_debug_line) */
	setenv("STORM_BCS_DEBUG_TTY", isatty(0) && isatty(1) ? "1" : "0", 1);
	return -1;
}
