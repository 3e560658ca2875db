/* The storm CLI's pure parts: option parsing, --label line splitting,
 * signal names, formatting. */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/fmt.h"
#include "../../cli/label.h"
#include "../../cli/opts.h"
#include "../../cli/mview.h"
#include "suites.h"

void add_cli_suite(void);

enum { A = 1, B, N, NAME };
static const struct cli_opt opts[] = {
	{ "all", 'a', 0, A },	 { "bee", 'b', 0, B }, { "nodes", 'N', 1, N },
	{ "name", 0, 1, NAME }, { NULL, 0, 0, 0 },
};

static void test_opts_stop_at_program(void)
{
	char *argv[] = { "run", "-N4", "--name=x", "-ab", "--nodes", "8", "prog", "-N", "2", NULL };
	struct cli_optparse p;
	cli_opt_init(&p, 9, argv, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), N);
	CU_ASSERT_STRING_EQUAL(p.arg, "4");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), NAME);
	CU_ASSERT_STRING_EQUAL(p.arg, "x");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), A);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), B);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), N);
	CU_ASSERT_STRING_EQUAL(p.arg, "8");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_DONE);
	CU_ASSERT_EQUAL(p.ind, 6); /* the program; its own -N untouched */
}

static void test_opts_operands_and_dashdash(void)
{
	char *argv[] = { "cancel", "5", "-a", "6", "--", "-7", NULL };
	struct cli_optparse p;
	cli_opt_init(&p, 6, argv, 1, 0);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_OPERAND);
	CU_ASSERT_STRING_EQUAL(p.arg, "5");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), A);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_OPERAND);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_OPERAND);
	CU_ASSERT_STRING_EQUAL(p.arg, "-7");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_DONE);

	char *argv2[] = { "run", "--", "-prog", NULL };
	cli_opt_init(&p, 3, argv2, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_DONE);
	CU_ASSERT_EQUAL(p.ind, 2);
}

static void test_opts_errors(void)
{
	struct cli_optparse p;
	char *a1[] = { "run", "--frob", NULL };
	cli_opt_init(&p, 2, a1, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_ERROR);
	CU_ASSERT_STRING_EQUAL(p.err, "unknown option '--frob'");
	char *a2[] = { "run", "--frob=1", NULL };
	cli_opt_init(&p, 2, a2, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_ERROR);
	CU_ASSERT_STRING_EQUAL(p.err, "unknown option '--frob'");
	char *a3[] = { "run", "-N", NULL };
	cli_opt_init(&p, 2, a3, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_ERROR);
	CU_ASSERT_STRING_EQUAL(p.err, "option '-N' needs a value");
	char *a4[] = { "run", "--all=1", NULL };
	cli_opt_init(&p, 2, a4, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_ERROR);
	CU_ASSERT_STRING_EQUAL(p.err, "option '--all' takes no value");
	char *a5[] = { "run", "-ax", NULL };
	cli_opt_init(&p, 2, a5, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), A);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_ERROR);
	CU_ASSERT_STRING_EQUAL(p.err, "unknown option '-x'");
	char *a6[] = { "run", "--nodes", NULL };
	cli_opt_init(&p, 2, a6, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_ERROR);
	CU_ASSERT_STRING_EQUAL(p.err, "option '--nodes' needs a value");
}

/* Slurm's commands take a unique prefix of a long option, as getopt_long:
 * an exact name wins, spellings of one option are one, options of the
 * shared ids (each an option Slurm has on its own) are ambiguous. */
static void test_opts_abbrev(void)
{
	enum { PART = 1, PARS, PARS2, JOBS, IGN = OPT_ID_SHARED };
	static const struct cli_opt t[] = {
		{ "partition", 'p', 1, PART }, { "parsable", 0, 0, PARS },
		{ "parsable2", 0, 0, PARS2 },  { "jobs", 'j', 1, JOBS },
		{ "job", 0, 1, JOBS },	       { "mem", 0, 1, IGN },
		{ "mem-per-cpu", 0, 1, IGN },  { "mail-type", 0, 1, IGN },
		{ NULL, 0, 0, 0 },
	};
	struct cli_optparse p;
	char *a1[] = { "sbatch", "--part=x", "--parsable", "--jo", "5", "--mem-", "1", "--mai=a", NULL };
	cli_opt_init(&p, 8, a1, 1, 0);
	p.abbrev = 1;
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), PART);
	CU_ASSERT_STRING_EQUAL(p.arg, "x");
	CU_ASSERT_STRING_EQUAL(p.name, "partition");
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), PARS); /* exact, though a prefix of parsable2 */
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), JOBS); /* --jobs and --job are one option */
	CU_ASSERT_STRING_EQUAL(p.arg, "5");
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), IGN);
	CU_ASSERT_STRING_EQUAL(p.name, "mem-per-cpu");
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), IGN);
	CU_ASSERT_STRING_EQUAL(p.name, "mail-type");
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), OPT_DONE);

	char *a2[] = { "sbatch", "--pars", NULL };
	cli_opt_init(&p, 2, a2, 1, 0);
	p.abbrev = 1;
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), OPT_ERROR);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "'--pars' is ambiguous (--parsable, --parsable2)"));
	char *a3[] = { "sbatch", "--me=1", NULL };
	cli_opt_init(&p, 2, a3, 1, 0);
	p.abbrev = 1;
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), OPT_ERROR); /* two options Slurm ignores */
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "ambiguous"));
	char *a4[] = { "sbatch", "--", NULL }; /* no name: operands follow, as before */
	cli_opt_init(&p, 2, a4, 1, 0);
	p.abbrev = 1;
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), OPT_DONE);
	/* storm's own commands take names in full */
	char *a5[] = { "storm", "--part=x", NULL };
	cli_opt_init(&p, 2, a5, 1, 0);
	CU_ASSERT_EQUAL(cli_opt_next(&p, t), OPT_ERROR);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown option '--part'"));
}

static void test_parse_uint(void)
{
	uint64_t v;
	CU_ASSERT_EQUAL(parse_uint("12", 1, 100, &v), 0);
	CU_ASSERT_EQUAL(v, 12);
	CU_ASSERT_EQUAL(parse_uint("0", 1, 100, &v), -1);
	CU_ASSERT_EQUAL(parse_uint("101", 1, 100, &v), -1);
	CU_ASSERT_EQUAL(parse_uint("-1", 0, 100, &v), -1);
	CU_ASSERT_EQUAL(parse_uint(" 1", 0, 100, &v), -1);
	CU_ASSERT_EQUAL(parse_uint("1x", 0, 100, &v), -1);
	CU_ASSERT_EQUAL(parse_uint("", 0, 100, &v), -1);
	CU_ASSERT_EQUAL(parse_uint("99999999999999999999999", 0, UINT64_MAX, &v), -1);
}

static void test_signals(void)
{
	CU_ASSERT_EQUAL(parse_signal("INT"), SIGINT);
	CU_ASSERT_EQUAL(parse_signal("SIGINT"), SIGINT);
	CU_ASSERT_EQUAL(parse_signal("sigkill"), SIGKILL);
	CU_ASSERT_EQUAL(parse_signal("usr1"), SIGUSR1);
	CU_ASSERT_EQUAL(parse_signal("9"), 9);
	CU_ASSERT_EQUAL(parse_signal("0"), -1);
	CU_ASSERT_EQUAL(parse_signal("65"), -1);
	CU_ASSERT_EQUAL(parse_signal("NOPE"), -1);
	CU_ASSERT_EQUAL(parse_signal("SIG"), -1);
	CU_ASSERT_EQUAL(parse_signal(""), -1);
	char buf[32];
	CU_ASSERT_STRING_EQUAL(signal_name(SIGTERM, buf, sizeof(buf)), "SIGTERM");
}

static void test_label_pieces(void)
{
	struct label_split l = { 0 };
	struct strbuf out = { 0 };
	CU_ASSERT_EQUAL(label_feed(&l, 0, 0, "hel", 3, &out), 0);
	CU_ASSERT_EQUAL(out.len, 0);
	label_feed(&l, 1, 0, "other\n", 6, &out);
	label_feed(&l, 0, 1, "err", 3, &out); /* stderr keeps its own partial */
	label_feed(&l, 0, 0, "lo\nwor", 6, &out);
	label_feed(&l, 0, 0, "ld\n\nx", 5, &out);
	CU_ASSERT_STRING_EQUAL(out.data, "1: other\n0: hello\n0: world\n0: \n");
	struct strbuf end[2] = { { 0 }, { 0 } };
	CU_ASSERT_EQUAL(label_flush(&l, end), 0);
	CU_ASSERT_STRING_EQUAL(end[0].data, "0: x\n");
	CU_ASSERT_STRING_EQUAL(end[1].data, "0: err\n");
	/* flushed partials are gone */
	struct strbuf again[2] = { { 0 }, { 0 } };
	label_flush(&l, again);
	CU_ASSERT_EQUAL(again[0].len + again[1].len, 0);
	sb_free(&out);
	sb_free(&end[0]);
	sb_free(&end[1]);
	label_free(&l);
}

static void test_label_big_ranks_and_long_lines(void)
{
	struct label_split l = { 0 };
	struct strbuf out = { 0 };
	label_feed(&l, 4095, 1, "z\n", 2, &out);
	CU_ASSERT_STRING_EQUAL(out.data, "4095: z\n");
	static char big[LABEL_PARTIAL_MAX + 10];
	memset(big, 'a', sizeof(big));
	out.len = 0;
	label_feed(&l, 2, 0, big, sizeof(big), &out); /* no newline, too long */
	CU_ASSERT_EQUAL(out.len, 3 + sizeof(big) + 1);
	CU_ASSERT_EQUAL(out.data[out.len - 1], '\n');
	sb_free(&out);
	label_free(&l);
}

static void test_formatting(void)
{
	char b[64];
	fmt_elapsed(5, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:05");
	fmt_elapsed(3725, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1:02:05");
	fmt_elapsed(90061, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1-01:01:01");
	fmt_elapsed(-3, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:00");
	/* squeue's: a time left past the limit, or over a year, is INVALID */
	fmt_squeue_secs(287, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "4:47");
	fmt_squeue_secs(0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:00");
	fmt_squeue_secs(-1, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "INVALID");
	fmt_squeue_secs(365L * 86400, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "365-00:00:00");
	fmt_squeue_secs(365L * 86400 + 1, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "INVALID");
	fmt_hms(300, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "00:05:00");
	fmt_hms(90061, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1-01:01:01");
	fmt_hms(-3, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "00:00:00");
	fmt_timeslice(10000, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "10 ms");
	fmt_timeslice(500, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "500 us");
	fmt_timeslice(1500, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1.5 ms");
	fmt_bytes(512, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "512 B");
	fmt_bytes(12u << 20, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "12.0 MiB");
	CU_ASSERT_EQUAL(absolute_path("/home/u", "o-%j.txt", b, sizeof(b)), 0);
	CU_ASSERT_STRING_EQUAL(b, "/home/u/o-%j.txt");
	CU_ASSERT_EQUAL(absolute_path("/", "x", b, sizeof(b)), 0);
	CU_ASSERT_STRING_EQUAL(b, "/x");
	CU_ASSERT_EQUAL(absolute_path("/a", "/abs", b, sizeof(b)), 0);
	CU_ASSERT_STRING_EQUAL(b, "/abs");
	CU_ASSERT_EQUAL(absolute_path("/a", "xyz", b, 5), -1);
	CU_ASSERT_STRING_EQUAL(job_state_name(5), "CANCELLED");
	CU_ASSERT_STRING_EQUAL(node_state_name(2), "DOWN");
	CU_ASSERT_STRING_EQUAL(job_state_name(99), "UNKNOWN");
}

static void test_since(void)
{
	double t = 0;
	CU_ASSERT_EQUAL(parse_since("90s", 1000.0, &t), 0);
	CU_ASSERT_DOUBLE_EQUAL(t, 910.0, 1e-9);
	CU_ASSERT_EQUAL(parse_since("2h", 10000.0, &t), 0);
	CU_ASSERT_DOUBLE_EQUAL(t, 2800.0, 1e-9);
	CU_ASSERT_EQUAL(parse_since("1d", 100000.0, &t), 0);
	CU_ASSERT_DOUBLE_EQUAL(t, 13600.0, 1e-9);
	CU_ASSERT_EQUAL(parse_since("2026-11-22", 0, &t), 0);
	double day = t;
	CU_ASSERT_EQUAL(parse_since("2026-11-22T01:30", 0, &t), 0);
	CU_ASSERT_DOUBLE_EQUAL(t - day, 5400.0, 1e-9);
	CU_ASSERT_EQUAL(parse_since("2026-11-22 01:30:15", 0, &t), 0);
	CU_ASSERT_DOUBLE_EQUAL(t - day, 5415.0, 1e-9);
	const char *bad[] = { "", "h", "2x", "-2h", "2h ago", "2026-13-01", "2026-11-22T", "yesterday" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(parse_since(bad[i], 0, &t), -1);
}

static void test_time_limit(void)
{
	static const struct {
		const char *in;
		uint64_t want; /* 0: refused */
	} cases[] = {
		{ "5", 300 },	       { "0:30", 30 },	    { "1:2:3", 3723 },   { "2-0", 172800 },
		{ "1-2:3", 93780 },    { "1-2:3:4", 93784 }, { "90", 5400 },     { "0:0:1", 1 },
		{ "", 0 },	       { "0", 0 },	    { "0:0", 0 },	 { "1:2:3:4", 0 },
		{ "1-", 0 },	       { "-1", 0 },	    { "1-2-3", 0 },	 { "a", 0 },
		{ "1:", 0 },	       { ":1", 0 },	    { "1 ", 0 },	 { "99999999999", 0 },
		{ "1-2:3:4:5", 0 },    { "1000000000-0", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t got = 0;
		int rc = parse_time_limit(cases[i].in, &got);
		if (cases[i].want) {
			CU_ASSERT_EQUAL(rc, 0);
			CU_ASSERT_EQUAL(got, cases[i].want);
		} else {
			CU_ASSERT_EQUAL(rc, -1);
		}
	}
}

static void test_virtual_names(void)
{
	static char names[101][HOSTNAME_MAX];
	virtual_node_names(8, names);
	CU_ASSERT_STRING_EQUAL(names[0], "node00");
	CU_ASSERT_STRING_EQUAL(names[7], "node07");
	virtual_node_names(100, names);
	CU_ASSERT_STRING_EQUAL(names[99], "node99");
	virtual_node_names(101, names);
	CU_ASSERT_STRING_EQUAL(names[0], "node000");
	CU_ASSERT_STRING_EQUAL(names[100], "node100");
}

static void test_matrix_draw(void)
{
	/* 2 rows x 3 nodes: job 7 home in row 0 on nodes 0-1 and backfilled in
	 * row 1; job 12 in row 1 on node 2; node 2 is free and DOWN in row 0 */
	uint64_t cells[] = {7, 7, 0, 7, 7, 12};
	bool down[] = {false, false, true};
	uint64_t ids[] = {7, 12};
	int homes[] = {0, 1};
	struct mview v = {.mpl = 2, .nnodes = 3, .row = 1, .cells = cells, .down = down,
			  .njobs = 2, .job_ids = ids, .job_homes = homes};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	mview_draw(f, &v, 80);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(text, "node     0  1  2\n"
				     " row 0   7  7  x\n"
				     ">row 1  7+ 7+ 12\n");
	free(text);
	/* narrow: the nodes go in blocks of columns */
	f = open_memstream(&text, &len);
	mview_draw(f, &v, 14);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(text, "node     0  1\n"
				     " row 0   7  7\n"
				     ">row 1  7+ 7+\n"
				     "\n"
				     "node     2\n"
				     " row 0   x\n"
				     ">row 1  12\n");
	free(text);
}

void add_cli_suite(void)
{
	CU_pSuite s = CU_add_suite("cli", NULL, NULL);
	CU_add_test(s, "options end at the program", test_opts_stop_at_program);
	CU_add_test(s, "matrix drawing", test_matrix_draw);
	CU_add_test(s, "operands and --", test_opts_operands_and_dashdash);
	CU_add_test(s, "option errors", test_opts_errors);
	CU_add_test(s, "long options by a unique prefix", test_opts_abbrev);
	CU_add_test(s, "whole numbers", test_parse_uint);
	CU_add_test(s, "signal names", test_signals);
	CU_add_test(s, "--label pieces and partial lines", test_label_pieces);
	CU_add_test(s, "--label large ranks, long lines", test_label_big_ranks_and_long_lines);
	CU_add_test(s, "formatting", test_formatting);
	CU_add_test(s, "virtual node names", test_virtual_names);
	CU_add_test(s, "acct --since", test_since);
	CU_add_test(s, "-t time limits, as Slurm writes them", test_time_limit);
}
