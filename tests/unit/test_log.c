/* The log line's clock: the lock-free civil date against the C library's,
 * and a line of each writer stamped alike. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "suites.h"

static void check_at(int64_t t)
{
	time_t tt = (time_t)t;
	struct tm want, got;
	CU_ASSERT_PTR_NOT_NULL_FATAL(gmtime_r(&tt, &want));
	log_civil(t, &got);
	CU_ASSERT_EQUAL(got.tm_year, want.tm_year);
	CU_ASSERT_EQUAL(got.tm_mon, want.tm_mon);
	CU_ASSERT_EQUAL(got.tm_mday, want.tm_mday);
	CU_ASSERT_EQUAL(got.tm_hour, want.tm_hour);
	CU_ASSERT_EQUAL(got.tm_min, want.tm_min);
	CU_ASSERT_EQUAL(got.tm_sec, want.tm_sec);
}

static void test_civil(void)
{
	/* every day from 1901 to 2099 (leap years, century rules, before the
	 * epoch), at a second that moves through the day */
	for (int64_t d = -25000; d < 47000; d++)
		check_at(d * 86400 + (d * 7919) % 86400);
	check_at(0);
	check_at(-1);
	check_at(951782400);  /* 2000-02-29 */
	check_at(4107542399); /* 2100-02-28 23:59:59: not a leap year */
	check_at(4107542400);
}

/* slog and slog_unlocked stamp a line the same way */
static void test_stamps(void)
{
	int p[2];
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	log_set_ident("logtest"); /* takes the local offset */
	log_set_output(p[1]);
	char a[256] = "", b[256] = "";
	for (int tries = 0; tries < 5; tries++) {
		slog("one");
		slog_unlocked("two");
		char buf[512];
		ssize_t n = read(p[0], buf, sizeof(buf) - 1);
		CU_ASSERT_FATAL(n > 0);
		buf[n] = '\0';
		CU_ASSERT_EQUAL_FATAL(sscanf(buf, "%255s logtest: one\n%255s logtest: two", a, b), 2);
		if (!strncmp(a, b, 19))
			break; /* a second boundary between the two moves on */
	}
	log_set_output(STDERR_FILENO);
	close(p[0]);
	close(p[1]);
	CU_ASSERT_EQUAL(strlen(a), 23); /* YYYY-MM-DDTHH:MM:SS.mmm */
	CU_ASSERT_NSTRING_EQUAL(a, b, 19);
}

void add_log_suite(void)
{
	CU_pSuite s = CU_add_suite("log", NULL, NULL);
	CU_add_test(s, "the lock-free civil date is gmtime's", test_civil);
	CU_add_test(s, "both writers stamp a line alike", test_stamps);
}
