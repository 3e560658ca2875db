/* A watcher beside a daemon's event loop that says, in the daemon's log,
 * why the loop stood still: a turn that ran too long (where it was: the
 * thread's state, its system call and a backtrace), a sleep that ended far
 * past its timeout (the thread waited for a core), or the whole process
 * not run at all (the watcher itself woke late). A node daemon that stands
 * still for seconds is reported DOWN by the machine manager and its jobs
 * fail; without this, the log shows only the silence.
 *
 * The loop marks each phase with two atomic stores; the watcher thread reads
 * them every quarter of the threshold and does everything else. It takes no
 * lock that a child forked by the daemon could inherit held (no stdio, no
 * malloc, no time-zone lock), so forking stays safe. */
#ifndef STORM_STALL_H
#define STORM_STALL_H

#include <stdint.h>

/* what the daemons report: a fifth of down_after_ms's default (5 s), so a
 * node made DOWN by its own silence has said why well before */
#define STALL_MS 1000

/* Starts watching the calling thread, the one that runs the loop; a phase
 * longer than stall_ms is reported. Call after the daemon's signal mask is
 * set. 0, or -1 with errno. */
int stall_watch(unsigned stall_ms);
/* The loop's marks (no-ops until stall_watch): it sleeps for at most
 * timeout_us (-1: without a bound), or it runs callbacks. */
void stall_mark_wait(int64_t timeout_us);
void stall_mark_turn(void);
/* How many backtraces of a long turn the loop's thread has written: a
 * test that makes a turn long holds it until the watcher has looked. */
uint64_t stall_backtraces(void);

#endif
