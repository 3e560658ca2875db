/* Job ids as users write them, and the options storm shares with Slurm:
 * --array, --dependency, --export and a batch script's directives. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/jobtable.h"
#include "../../cli/opts.h"
#include "../../cli/slurmopt.h"
#include "jobid.h"
#include "suites.h"

static void test_jobid(void)
{
	struct jobref r;
	char s[64];
	CU_ASSERT_EQUAL(jobid_parse("12", &r), 0);
	CU_ASSERT(r.id == 12 && !r.task_given);
	CU_ASSERT_EQUAL(jobid_parse("12.0", &r), 0);
	CU_ASSERT(jobid_is_step(r.id) && jobid_alloc(r.id) == 12 && jobid_step_no(r.id) == 0);
	jobid_format(r.id, 0, 0, s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "12.0");
	CU_ASSERT_EQUAL(jobid_parse("4294967295.65535", &r), 0);
	CU_ASSERT(jobid_alloc(r.id) == 4294967295u && jobid_step_no(r.id) == 65535);
	jobid_format(r.id, 0, 0, s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "4294967295.65535");
	CU_ASSERT_EQUAL(jobid_parse("7_3", &r), 0);
	CU_ASSERT(r.id == 7 && r.task_given && r.task == 3);
	jobid_format(9, 7, 3, s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "7_3");
	jobid_format(9, 0, 0, s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "9");
	CU_ASSERT_FALSE(jobid_is_step(9));
	CU_ASSERT_EQUAL(jobid_alloc(9), 9);
	const char *bad[] = { "", "0", "x", "12.", "12_", "12.1.2", "12.65536", "4294967296",
			      "-1", "12 ", "12.x", " 12", "12_3_4" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(jobid_parse(bad[i], &r), -1);
}

static void test_array(void)
{
	uint32_t *t, lim;
	size_t n;
	char why[256];
	CU_ASSERT_EQUAL(parse_array("0-99%8", &t, &n, &lim, why, sizeof(why)), 0);
	CU_ASSERT(n == 100 && t[0] == 0 && t[99] == 99 && lim == 8);
	free(t);
	CU_ASSERT_EQUAL(parse_array("5,1,3-4,0-8:4", &t, &n, &lim, why, sizeof(why)), 0);
	uint32_t want[] = { 0, 1, 3, 4, 5, 8 };
	CU_ASSERT_EQUAL(n, 6);
	for (size_t i = 0; i < n && i < 6; i++)
		CU_ASSERT_EQUAL(t[i], want[i]);
	CU_ASSERT_EQUAL(lim, 0);
	free(t);
	CU_ASSERT_EQUAL(parse_array("7", &t, &n, &lim, why, sizeof(why)), 0);
	CU_ASSERT(n == 1 && t[0] == 7);
	free(t);
	CU_ASSERT_EQUAL(parse_array("0-9999", &t, &n, &lim, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(n, 10000);
	free(t);
	CU_ASSERT_EQUAL(parse_array("0-10000", &t, &n, &lim, why, sizeof(why)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "more than"));
	const char *bad[] = { "", "a", "1-", "5-3", "1-3:0", "1%", "1%0", "1,,2", "1-3%2%3",
			      "1000000", "-1", "1 ", "0-3:x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(parse_array(bad[i], &t, &n, &lim, why, sizeof(why)), -1);
}

static void test_dependency(void)
{
	struct dep d[DEP_MAX];
	size_t n;
	char why[256];
	CU_ASSERT_EQUAL(parse_dependency("afterok:12:13,afterany:14_2,after:3.1", d, &n, why,
					 sizeof(why)), 0);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT(d[0].kind == DEP_AFTEROK && d[0].job.id == 12);
	CU_ASSERT(d[1].kind == DEP_AFTEROK && d[1].job.id == 13);
	CU_ASSERT(d[2].kind == DEP_AFTERANY && d[2].job.id == 14 && d[2].job.task_given &&
		  d[2].job.task == 2);
	CU_ASSERT(d[3].kind == DEP_AFTER && d[3].job.id == jobid_step(3, 1));
	CU_ASSERT_EQUAL(parse_dependency("afternotok:5", d, &n, why, sizeof(why)), 0);
	CU_ASSERT(n == 1 && d[0].kind == DEP_AFTERNOTOK);
	CU_ASSERT_STRING_EQUAL(dep_kind_name(DEP_AFTERANY), "afterany");
	const char *bad[] = { "", "afterok", "afterok:", "afterok:x", "before:3", "afterok:1,",
			      "afterok:1;2", "singleton", "afterok::1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(parse_dependency(bad[i], d, &n, why, sizeof(why)), -1);
}

static bool has(char **v, size_t n, const char *e)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], e))
			return true;
	return false;
}

static void test_export(void)
{
	char *env[] = { "PATH=/bin", "HOME=/root", "A=1", NULL };
	char **out, *buf, why[256];
	size_t n;
	CU_ASSERT_EQUAL(export_env("ALL", env, &out, &n, &buf, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(n, 3);
	free(out);
	free(buf);
	CU_ASSERT_EQUAL(export_env("NONE", env, &out, &n, &buf, why, sizeof(why)), 0);
	CU_ASSERT(n == 0 && out[0] == NULL);
	free(out);
	free(buf);
	CU_ASSERT_EQUAL(export_env("PATH,B=2", env, &out, &n, &buf, why, sizeof(why)), 0);
	CU_ASSERT(n == 2 && has(out, n, "PATH=/bin") && has(out, n, "B=2"));
	free(out);
	free(buf);
	CU_ASSERT_EQUAL(export_env("ALL,A=9,C=x=y", env, &out, &n, &buf, why, sizeof(why)), 0);
	CU_ASSERT(n == 4 && has(out, n, "A=9") && !has(out, n, "A=1") && has(out, n, "C=x=y") &&
		  has(out, n, "HOME=/root"));
	free(out);
	free(buf);
	const char *bad[] = { "", "NONE,A", "1A", "A-B", ",", "A=1,NONE" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(export_env(bad[i], env, &out, &n, &buf, why, sizeof(why)), -1);
}

struct seen {
	int n;
	char text[1024];
};
static int collect(void *arg, int line, bool sbatch, int argc, char **argv)
{
	struct seen *s = arg;
	size_t w = strlen(s->text);
	w += (size_t)snprintf(s->text + w, sizeof(s->text) - w, "%d%s", line, sbatch ? "S" : "T");
	for (int i = 1; i < argc; i++)
		w += (size_t)snprintf(s->text + w, sizeof(s->text) - w, "[%s]", argv[i]);
	snprintf(s->text + w, sizeof(s->text) - w, ";");
	s->n++;
	return 0;
}

static void test_directives(void)
{
	const char *script = "#!/bin/bash\n"
			     "#SBATCH -N 2 --time=5   # two nodes\n"
			     "\n"
			     "# a comment\n"
			     "#STORM -J \"my job\" --output='out %j'\r\n"
			     "#STORMY -N 9\n"
			     "  #SBATCH -n\\ 4\n"
			     "#SBATCH\n"
			     "echo start\n"
			     "#SBATCH -N 7\n";
	struct seen s = { 0 };
	char why[128];
	CU_ASSERT_EQUAL(script_directives(script, strlen(script), collect, &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 3);
	CU_ASSERT_STRING_EQUAL(s.text, "2S[-N][2][--time=5];5T[-J][my job][--output=out %j];"
				       "7S[-n 4];");
	const char *open = "#!/bin/sh\n#STORM -J 'x\n";
	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL(script_directives(open, strlen(open), collect, &s, why, sizeof(why)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2"));
	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL(script_directives("", 0, collect, &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 0);
}

static void test_jobtable(void)
{
	struct job_col cols[JOBTABLE_MAX_COLS];
	int n = 0;
	char why[512];
	CU_ASSERT_EQUAL(jobtable_parse("JobID,name%5,state,MaxRSS,TotalCPU", cols, &n, why,
				       sizeof(why)), 0);
	CU_ASSERT_EQUAL(n, 5);
	CU_ASSERT_EQUAL(cols[1].width, 5);
	struct job_row r = { .jobid = "12.3", .name = "longname", .user = "ann", .state = 3,
			     .max_rss_kb = 2048, .cpu_seconds = 3725.5 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	jobtable_print(f, cols, n, &r, 1);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(text, "JobID JobNa State     MaxRSS    TotalCPU\n"
				     "12.3  longn COMPLETED  2048K 1:02:05.500\n");
	free(text);
	const char *bad[] = { "", "Bogus", "JobID,", "JobID%0", "JobID%x", "JobID%5x", ",JobID" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(jobtable_parse(bad[i], cols, &n, why, sizeof(why)), -1);
	jobtable_parse("Bogus", cols, &n, why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "fields are JobID,JobName"));
}

/* sacct's ways: --parsable2 and --parsable, --noheader, its fixed widths
 * with dashes under the header and '+' ending a value cut short */
static void test_jobtable_sacct(void)
{
	struct job_col cols[JOBTABLE_MAX_COLS];
	int n = 0;
	char why[512], *text = NULL;
	size_t len = 0;
	CU_ASSERT_EQUAL(jobtable_parse("JobIdRaw,jobname,State,ExitCode", cols, &n, why,
				       sizeof(why)), 0);
	struct job_row r = { .jobid = "12_3", .jobid_raw = "15", .name = "averyverylongname",
			     .state = 7, .slurm_state = "TIMEOUT", .slurm_exit = "0:15" };
	struct jobtable_style p2 = { .delim = "|" }, p1 = { .delim = "|", .delim_last = true,
							   .noheader = true },
			      fixed = { .slurm_widths = true };
	FILE *f = open_memstream(&text, &len);
	jobtable_print_style(f, cols, n, &r, 1, &p2);
	jobtable_print_style(f, cols, n, &r, 1, &p1);
	jobtable_print_style(f, cols, n, &r, 1, &fixed);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(text, "JobIDRaw|JobName|State|ExitCode\n"
				     "15|averyverylongname|TIMEOUT|0:15\n"
				     "15|averyverylongname|TIMEOUT|0:15|\n"
				     "JobIDRaw        JobName      State ExitCode \n"
				     "------------ ---------- ---------- -------- \n"
				     "15           averyvery+    TIMEOUT     0:15 \n");
	free(text);
}

/* Timelimit: sacct's HH:MM:SS on a job's line, nothing on its steps',
 * UNLIMITED without one; storm acct's as its Elapsed */
static void test_jobtable_timelimit(void)
{
	struct job_col cols[JOBTABLE_MAX_COLS];
	int n = 0;
	char why[512], *text = NULL;
	size_t len = 0;
	CU_ASSERT_EQUAL(jobtable_parse("JobID,Timelimit", cols, &n, why, sizeof(why)), 0);
	struct job_row r[] = {
		{ .jobid = "7", .jobid_raw = "7", .slurm_state = "RUNNING", .time_limit = 300 },
		{ .jobid = "7.batch", .jobid_raw = "7.batch", .slurm_state = "RUNNING",
		  .time_limit = 300 },
		{ .jobid = "7.0", .jobid_raw = "7.0", .slurm_state = "RUNNING" },
		{ .jobid = "8", .jobid_raw = "8", .slurm_state = "PENDING" },
		{ .jobid = "9", .jobid_raw = "9", .slurm_state = "PENDING", .time_limit = 90061 },
		{ .jobid = "10", .time_limit = 300 }, /* storm acct's */
		{ .jobid = "11" },
	};
	struct jobtable_style p2 = { .delim = "|", .noheader = true };
	FILE *f = open_memstream(&text, &len);
	jobtable_print_style(f, cols, n, r, sizeof(r) / sizeof(r[0]), &p2);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(text, "7|00:05:00\n7.batch|\n7.0|\n8|UNLIMITED\n9|1-01:01:01\n"
				     "10|5:00\n11|UNLIMITED\n");
	free(text);
}

/* Slurm's optional values: --exclusive or --exclusive=user, never the next word */
static void test_opt_optional(void)
{
	enum { X = 1, N };
	static const struct cli_opt opts[] = {
		{ "exclusive", 0, OPT_OPTIONAL, X }, { "nodes", 'N', 1, N }, { NULL, 0, 0, 0 },
	};
	char *argv[] = { "sbatch", "--exclusive", "-N", "2", "--exclusive=user", "job.sh" };
	struct cli_optparse p;
	cli_opt_init(&p, 6, argv, 1, 1);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), X);
	CU_ASSERT_PTR_NULL(p.arg);
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), N);
	CU_ASSERT_STRING_EQUAL(p.arg, "2");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), X);
	CU_ASSERT_STRING_EQUAL(p.arg, "user");
	CU_ASSERT_EQUAL(cli_opt_next(&p, opts), OPT_DONE);
	CU_ASSERT_EQUAL(p.ind, 5);
}

void add_slurmopt_suite(void)
{
	CU_pSuite s = CU_add_suite("slurm options", NULL, NULL);
	CU_add_test(s, "job ids: 12, 12.0, 12_3", test_jobid);
	CU_add_test(s, "--array", test_array);
	CU_add_test(s, "--dependency", test_dependency);
	CU_add_test(s, "--export", test_export);
	CU_add_test(s, "#STORM and #SBATCH directives", test_directives);
	CU_add_test(s, "-o/--format fields", test_jobtable);
	CU_add_test(s, "sacct's --parsable(2), --noheader, fixed widths", test_jobtable_sacct);
	CU_add_test(s, "Timelimit as sacct and storm acct show it", test_jobtable_timelimit);
	CU_add_test(s, "options with an optional value", test_opt_optional);
}
