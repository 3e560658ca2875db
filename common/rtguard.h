/* Real-time priority with a guard, for the daemons of a virtual cluster.
 *
 * With the kernel's autogroups (sched_autogroup_enabled, the default of
 * most distributions) a nice value orders threads only inside their
 * session's group; every session weighs alike against the others. Each
 * virtual daemon leads a session of its own, its ranks in it (a job's
 * process group cannot leave its daemon's session), so nice -10 put it
 * ahead of its own ranks only: beside a busy machine's other sessions it
 * got a core for a few per cent of the time it asked for one, and a turn
 * of a few milliseconds of work could take seconds. Giving the session
 * itself nice -10 (/proc/PID/autogroup) gives it to the daemon's ranks as
 * well, and heavy groups of ranks starved the other nodes' daemons worse.
 * SCHED_FIFO is above every group; the guard keeps a daemon that spins
 * from holding a core: once its thread has run the limit without
 * sleeping, the kernel (RLIMIT_RTTIME) sends SIGXCPU and the thread drops
 * to nice -10 for good. */
#ifndef STORM_RTGUARD_H
#define STORM_RTGUARD_H

#include <stdbool.h>
#include <sys/types.h>

/* how long a guarded daemon may run without sleeping */
#define RT_GUARD_MS 500

/* The calling thread is the one to drop on SIGXCPU: installs the handler.
 * Call early in main(), before any thread is created. 0, or -1 with errno. */
int rt_guard_install(void);
/* Sets process pid's (0: this one's) RLIMIT_RTTIME to ms (soft; the hard
 * limit stays as it was, so no SIGKILL). 0, or -1 with errno. */
int rt_guard_limit(pid_t pid, unsigned ms);
/* In a process another put under the guard, once it has slept after
 * rt_guard_install: each SIGXCPU the kernel sends raises the soft limit by
 * a second, so those that came before the handler existed (ignored:
 * VC_SPAWN_GUARDED) left the guard looser; back to ms where a limit is set
 * and above it. */
void rt_guard_rearm(unsigned ms);
/* In a child the daemon forked, before it execs or becomes a rank: the
 * limit as it was before rt_guard_limit(0, ...), so a rank that takes a
 * real-time policy of its own is not held to the daemon's guard.
 * Async-signal-safe. */
void rt_guard_child(void);
/* true once, the first time it is asked after the guard dropped the
 * thread (for the daemon's log, which the handler may not write) */
bool rt_guard_tripped(void);

/* A share of a core: N virtual daemons at SCHED_FIFO on a few cores, each
 * woken every slice, leave their ranks nothing once together they want
 * every core (16 nodes at 1 ms slices on 2 cores: a sweep 20 times
 * slower). A daemon over its share, measured over 200 ms windows, runs at
 * nice -10 until it is under half of it, then at SCHED_FIFO again.
 * STORM_RT_SHARE, in per cent of one core (the virtual cluster sets it
 * from its cores and daemons); unset: no share. Call from the thread the
 * guard drops, before rt_guard_turn. */
void rt_guard_share_from_env(void);
/* the share in force, of one core (0: none) */
double rt_guard_share(void);
/* Each turn of the daemon's loop: 1 if it just went to nice -10 for its
 * share, 2 if it just came back to SCHED_FIFO, else 0. Never after the
 * guard dropped the thread for good. */
int rt_guard_turn(void);

/* Runs fn(arg) and puts the threads it started (a library's progress
 * thread: OpenPMIx's) at the daemon's own policy: SCHED_FIFO under the
 * guard (a SIGXCPU drops them with the guarded thread), else nice -10.
 * SCHED_RESET_ON_FORK starts every thread of the daemon at nice 0, beside
 * whatever else runs, and the daemon's loop waits on them (a job's start
 * and end wait for OpenPMIx's thread): a thread the loop waits on must be
 * scheduled as the loop is, or the machine's other sessions (autogroups)
 * hold the loop too. Returns fn's result. */
int rt_threads_favoured(int (*fn)(void *), void *arg);

#endif
