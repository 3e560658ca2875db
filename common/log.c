/* Daemon log lines and clocks (log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char ident[96] = "storm";
static int out_fd = STDERR_FILENO;

void log_set_output(int fd)
{
	out_fd = fd;
}

void log_set_ident(const char *id)
{
	snprintf(ident, sizeof(ident), "%s", id);
}

static void vlog(const char *fmt, va_list ap)
{
	if (out_fd < 0)
		return;
	struct timespec ts;
	struct tm tm;
	char stamp[32], line[1200];
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	int n = snprintf(line, sizeof(line), "%s.%03ld %s: ", stamp, ts.tv_nsec / 1000000, ident);
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
	vlog(fmt, ap);
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
