/* Pure helpers of the CLI: signal names, durations, sizes, names, paths (fmt.h). */
#include "fmt.h"

#include <ctype.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <time.h>

#include "opts.h"

int parse_signal(const char *s)
{
	uint64_t n;
	if (!s || !*s)
		return -1;
	if (isdigit((unsigned char)s[0]))
		return parse_uint(s, 1, (uint64_t)SIGRTMAX, &n) == 0 ? (int)n : -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && !strcasecmp(abbrev, s))
			return sig;
	}
	return -1;
}

const char *signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

void fmt_elapsed(double secs, char *out, size_t len)
{
	if (secs < 0)
		secs = 0;
	unsigned long t = (unsigned long)secs;
	unsigned long d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, s = t % 60;
	if (d)
		snprintf(out, len, "%lu-%02lu:%02lu:%02lu", d, h, m, s);
	else if (h)
		snprintf(out, len, "%lu:%02lu:%02lu", h, m, s);
	else
		snprintf(out, len, "%lu:%02lu", m, s);
}

void fmt_squeue_secs(long secs, char *out, size_t len)
{
	if (secs < 0 || secs > 365L * 24 * 3600)
		snprintf(out, len, "INVALID");
	else
		fmt_elapsed((double)secs, out, len);
}

void fmt_hms(double secs, char *out, size_t len)
{
	unsigned long long s = secs > 0 ? (unsigned long long)secs : 0;
	if (s >= 86400)
		snprintf(out, len, "%llu-%02llu:%02llu:%02llu", s / 86400, s / 3600 % 24, s / 60 % 60,
			 s % 60);
	else
		snprintf(out, len, "%02llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
}

void fmt_timeslice(unsigned us, char *out, size_t len)
{
	if (us < 1000)
		snprintf(out, len, "%u us", us);
	else if (us % 1000 == 0)
		snprintf(out, len, "%u ms", us / 1000);
	else
		snprintf(out, len, "%.3g ms", us / 1000.0);
}

void fmt_bytes(uint64_t n, char *out, size_t len)
{
	static const char *unit[] = { "KiB", "MiB", "GiB", "TiB" };
	if (n < 1024) {
		snprintf(out, len, "%llu B", (unsigned long long)n);
		return;
	}
	double v = (double)n / 1024;
	int u = 0;
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f %s", v, unit[u]);
}

void virtual_node_names(int n, char (*names)[HOSTNAME_MAX])
{
	int width = n > 100 ? 3 : 2;
	for (int i = 0; i < n; i++)
		snprintf(names[i], HOSTNAME_MAX, "node%0*d", width, i);
}

int absolute_path(const char *cwd, const char *path, char *out, size_t len)
{
	int n;
	if (path[0] == '/')
		n = snprintf(out, len, "%s", path);
	else
		n = snprintf(out, len, "%s%s%s", cwd,
			     cwd[0] && cwd[strlen(cwd) - 1] == '/' ? "" : "/", path);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

const char *job_state_name(int state)
{
	static const char *names[] = { "QUEUED",    "LAUNCHING", "RUNNING", "COMPLETED",
				       "FAILED",    "CANCELLED", "SUSPENDED", "TIMEOUT" };
	return state >= 0 && state < 8 ? names[state] : "UNKNOWN";
}

const char *node_state_name(int state)
{
	static const char *names[] = { "UNKNOWN", "UP", "DOWN" };
	return state >= 0 && state < 3 ? names[state] : "UNKNOWN";
}

int parse_since(const char *s, double now, double *out)
{
	char *end;
	/* a duration back from now: 90s, 30m, 2h, 1d */
	if (s[0] >= '0' && s[0] <= '9') {
		double v = strtod(s, &end);
		double unit = 0;
		if (end != s && end[0] && !end[1]) {
			switch (end[0]) {
			case 's': unit = 1; break;
			case 'm': unit = 60; break;
			case 'h': unit = 3600; break;
			case 'd': unit = 86400; break;
			}
		}
		if (unit > 0 && v >= 0) {
			*out = now - v * unit;
			return 0;
		}
	}
	/* a local date or time: YYYY-MM-DD[THH:MM[:SS]] */
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	static const char *const forms[] = { "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M",
					     "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d" };
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, forms[i], &tm);
		if (end && !*end) {
			tm.tm_isdst = -1;
			time_t t = mktime(&tm);
			if (t == (time_t)-1)
				return -1;
			*out = (double)t;
			return 0;
		}
	}
	return -1;
}

/* digits at *p, at most a billion; -1 when none */
static int read_number(const char **p, uint64_t *v)
{
	if (**p < '0' || **p > '9')
		return -1;
	*v = 0;
	while (**p >= '0' && **p <= '9') {
		*v = *v * 10 + (uint64_t)(*(*p)++ - '0');
		if (*v > 1000000000u)
			return -1;
	}
	return 0;
}

int parse_time_limit(const char *s, uint64_t *seconds)
{
	/* Slurm's forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S */
	const char *p = s;
	uint64_t days = 0, f[3] = { 0 };
	bool with_days = strchr(s, '-') != NULL;
	if (with_days && (read_number(&p, &days) < 0 || *p++ != '-'))
		return -1;
	int n = 0;
	for (;;) {
		if (read_number(&p, &f[n++]) < 0)
			return -1;
		if (*p == ':' && n < 3) {
			p++;
			continue;
		}
		if (*p)
			return -1;
		break;
	}
	uint64_t h = 0, m = 0, sec = 0;
	if (with_days) {
		h = f[0];
		m = f[1];
		sec = f[2];
	} else if (n == 3) {
		h = f[0];
		m = f[1];
		sec = f[2];
	} else {
		m = f[0];
		sec = f[1];
	}
	uint64_t t = ((days * 24 + h) * 60 + m) * 60 + sec;
	if (t == 0 || t > UINT32_MAX)
		return -1;
	*seconds = t;
	return 0;
}
