/* The threads of a process under our ptrace (threads.c): every one stopped
 * at one point and saved by ckpt_dump, made again by ckpt_restore. Not part
 * of the library's API. */
#ifndef STORM_CKPT_THREADS_H
#define STORM_CKPT_THREADS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "ckpt.pb-c.h"
#include "internal.h"

struct ckpt_thread {
	pid_t tid;
	int stopped;                  /* in a ptrace stop we waited for; -1: it cannot be */
	int sig;                      /* taken from it while we held it: handed back at the detach */
	siginfo_t si;                 /* sig's, as it came (dump) */
	struct user_regs_struct regs; /* at the stop (dump) */
	uint64_t sigmask;
	Storm__Ckpt__Thread pb;       /* what the image keeps of it (dump) */
	unsigned char *xbuf;          /* its FP or extended registers */
	char comm[16];
	unsigned char cpus[512];      /* its affinity mask (dump) */
};

struct ckpt_threads {
	struct ckpt_thread *v;        /* v[0]: the main thread (tid = pid) */
	size_t n;
	Storm__Ckpt__Thread **pbs;    /* Meta.threads */
	ProtobufCBinaryData *shared;  /* Meta.pending: signals pending for the process */
	size_t nshared;
};

/* ---- dump */

/* Seizes every thread of pid (PTRACE_O_TRACECLONE, so one made meanwhile is
 * ours too) and interrupts it, until the task list is stable and each one is
 * in its ptrace stop. A signal one takes first is kept for the detach. On
 * failure the threads seized so far are in ts (ckpt_threads_detach). */
int ckpt_threads_stop(struct ckpt_threads *ts, pid_t pid, char *err, size_t errlen);

/* Registers, FP/extended state, signal mask, rseq, robust futex list, name,
 * pending signals, CPU affinity, scheduling policy and nice of every
 * thread, into meta->threads and meta->pending. A thread under
 * SCHED_DEADLINE is refused (-ENOTSUP). */
int ckpt_threads_read(struct ckpt_threads *ts, Storm__Ckpt__Meta *meta, char *err,
		      size_t errlen);

/* What only each thread can say (its clear_child_tid, its sigaltstack), by
 * calls injected through main's gadget, with a scratch page at scratch. The
 * main thread's mask and registers are the caller's to put back. */
int ckpt_threads_query(struct ckpt_threads *ts, struct ckpt_tracee *main, uint64_t scratch,
		       char *err, size_t errlen);

/* Lets every thread but the main one go, with the signal it was taken; the
 * main one is left stopped for the caller. */
void ckpt_threads_detach(struct ckpt_threads *ts);

/* Once the process is SIGKILLed: waits for every thread but the main one
 * (whose end is reported only after theirs). */
void ckpt_threads_reap(struct ckpt_threads *ts);

void ckpt_threads_free(struct ckpt_threads *ts);

/* ---- the image */

/* Thread i of the image: Meta.threads, or for an image written before
 * threads were saved, its only thread from Meta's own fields (in *view). */
size_t ckpt_meta_nthreads(const Storm__Ckpt__Meta *m);
const Storm__Ckpt__Thread *ckpt_meta_thread(const Storm__Ckpt__Meta *m, size_t i,
					    Storm__Ckpt__Thread *view);

/* Checks the threads of a decoded meta section (err: "PATH: section meta: ..."). */
int ckpt_threads_check(const Storm__Ckpt__Meta *m, const char *path, char *err, size_t errlen);

/* ---- restore */

/* fork(), with pid want if it is free and we may choose it (clone3 set_tid,
 * only from a single-threaded caller: a raw clone runs no fork handlers). */
pid_t ckpt_fork_pid(pid_t want);

/* Once the memory is back: the main thread's own state (clear_child_tid,
 * robust list, sigaltstack, name, rseq), then each other thread cloned by it
 * with its tid where free, given its state, and its pending signals queued;
 * the process's last. The main thread's registers are left to the caller. */
int ckpt_threads_restore(struct ckpt_threads *ts, struct ckpt_tracee *main,
			 const struct user_regs_struct *base, const Storm__Ckpt__Meta *m,
			 uint64_t scratch, const struct ckpt_restore_opts *o, const char *path,
			 char *err, size_t errlen);

/* "0-3,6": the CPUs of an affinity mask of len bytes. */
void ckpt_cpus_list(const unsigned char *mask, size_t len, char *buf, size_t blen);

/* Registers (an interrupted restart-block call made to return EINTR),
 * FP/extended state and signal mask of a thread in a ptrace stop. */
int ckpt_thread_set_state(pid_t tid, const Storm__Ckpt__Thread *t);

#endif
