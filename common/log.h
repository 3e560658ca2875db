/* One log line format and the clocks for every storm daemon: a line is
 * "YYYY-MM-DDTHH:MM:SS.mmm IDENT: message", written with one write so lines
 * of daemons sharing a terminal or file do not interleave. */
#ifndef STORM_LOG_H
#define STORM_LOG_H

#include <stdint.h>
#include <time.h>

#include "gm_auth.h" /* struct gm_ratelimit */

/* Names the daemon in every line ("stormmm", "stormnd[node01]"); copied. */
void log_set_ident(const char *ident);
/* Where lines go: a descriptor (stderr by default), or -1 for nowhere (a
 * fuzz harness running the MM thousands of times a second). */
void log_set_output(int fd);
int log_output(void);
void slog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* slog for a thread beside the daemon's own: takes no lock a child forked
 * meanwhile could inherit held (the local time's offset is the one the
 * last slog saw). Formats no floating point. */
void slog_unlocked(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* slog at most GM_LOG_BURST lines per GM_LOG_WINDOW_S for one kind of
 * refusal (a flood of forged messages must not fill the disk). */
void slog_limited(struct gm_ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Seconds since the epoch (UTC, or shifted by an offset) as a civil date
 * and time of day, without the C library's time-zone lock; tm_year, tm_mon,
 * tm_mday, tm_hour, tm_min and tm_sec are set. Pure (unit-tested). */
void log_civil(int64_t t, struct tm *tm);

/* CLOCK_REALTIME in seconds: what users and the database see. */
double clock_wall_s(void);
/* CLOCK_MONOTONIC in nanoseconds: deadlines and durations. */
uint64_t clock_mono_ns(void);

#endif
