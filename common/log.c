/* Daemon log lines and clocks (log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char ident[96] = "storm";
static int out_fd = STDERR_FILENO;
/* the local time's offset from UTC as the last locked conversion found it,
 * for lines written where the time-zone lock must not be taken */
static atomic_long utc_offset_s;

void log_set_output(int fd)
{
	out_fd = fd;
}

int log_output(void)
{
	return out_fd;
}

void log_set_ident(const char *id)
{
	snprintf(ident, sizeof(ident), "%s", id);
	time_t now = time(NULL);
	struct tm tm;
	if (localtime_r(&now, &tm))
		atomic_store(&utc_offset_s, tm.tm_gmtoff);
}

/* Hinnant's days-to-civil */
void log_civil(int64_t t, struct tm *tm)
{
	int64_t days = t / 86400, secs = t % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	*tm = (struct tm){ .tm_year = (int)(yoe + era * 400 + (m <= 2)) - 1900, .tm_mon = (int)m - 1,
			   .tm_mday = (int)(doy - (153 * mp + 2) / 5 + 1), .tm_hour = (int)(secs / 3600),
			   .tm_min = (int)(secs / 60 % 60), .tm_sec = (int)(secs % 60) };
}

static void vlog_at(bool locked, const char *fmt, va_list ap)
{
	if (out_fd < 0)
		return;
	struct timespec ts;
	struct tm tm;
	char line[1200];
	clock_gettime(CLOCK_REALTIME, &ts);
	if (locked) {
		localtime_r(&ts.tv_sec, &tm);
		atomic_store(&utc_offset_s, tm.tm_gmtoff);
	} else {
		log_civil((int64_t)ts.tv_sec + atomic_load(&utc_offset_s), &tm);
	}
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ld %s: ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, ts.tv_nsec / 1000000, ident);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	/* one write per line: lines of several daemons do not interleave */
	ssize_t w = write(out_fd, line, len);
	(void)w;
}

void slog(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog_at(true, fmt, ap);
	va_end(ap);
}

void slog_unlocked(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog_at(false, fmt, ap);
	va_end(ap);
}

void slog_limited(struct gm_ratelimit *rl, const char *fmt, ...)
{
	unsigned held;
	if (!gm_ratelimit_ok(rl, clock_wall_s(), &held))
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (held)
		slog("%s (%u similar lines suppressed)", msg, held);
	else
		slog("%s", msg);
}

double clock_wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
