/* Pieces shared by dump.c and restore.c (not part of the library's API). */
#ifndef STORM_CKPT_INTERNAL_H
#define STORM_CKPT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "ckpt.h"

#define CKPT_PAGE 4096ul

/* A process under our ptrace, with a "syscall; int3" gadget at gadget. */
struct ckpt_tracee {
	pid_t pid;
	int memfd;        /* /proc/PID/mem, read-write */
	uint64_t gadget;
	int pending_sig;  /* a signal that arrived while we drove it: delivered at detach */
	int others;       /* it is a main thread, and we hold others of its threads */
};

/* waitpid(t->pid, st, __WALL). With t->others it polls, reaping meanwhile
 * those threads that died: a process killed while we hold its threads
 * reports its main thread's end only once theirs are reaped. */
pid_t ckpt_wait(struct ckpt_tracee *t, int *st);

/* Runs syscall nr with args in the tracee (which is in a ptrace stop) and
 * leaves it stopped at the int3 after it; *ret gets the raw return value.
 * expect_segv: the call unmaps the gadget itself, so the trap is a SIGSEGV.
 * Returns 0 or -errno if the tracee could not be driven. */
int ckpt_inject(struct ckpt_tracee *t, const struct user_regs_struct *base, long nr, long *ret,
		int expect_segv, int nargs, ...);

/* A thread's saved registers made fit for the new process: a call stopped
 * with -ERESTART_RESTARTBLOCK cannot restart there (its restart block stayed
 * with the old task), so it returns -EINTR. Pure. */
void ckpt_restart_fixup(struct user_regs_struct *r);

/* The offset of the one 4-byte-aligned word of buf equal to tid; -1 if none
 * or several are. Pure. */
long ckpt_tid_offset(const void *buf, size_t len, pid_t tid);

int ckpt_mem_read(struct ckpt_tracee *t, uint64_t addr, void *buf, size_t len);
int ckpt_mem_write(struct ckpt_tracee *t, uint64_t addr, const void *buf, size_t len);

/* Reads a whole (/proc) file; NUL-terminated, *len without it. NULL on error. */
char *ckpt_read_all(const char *path, size_t *len);

/* err = "fmt..." ; returns rc. */
int ckpt_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* XXH3 of bytes [off, off+len) of a file, clipped to its size. */
int ckpt_file_range_hash(const char *path, uint64_t off, uint64_t len, uint64_t *size,
			 uint64_t *hash);

/* The signal mask used while a tracee is driven: everything blocked except
 * SIGTRAP and SIGSEGV (the kernel resets the handler of a forced signal that
 * is blocked, and our traps are forced signals). */
uint64_t ckpt_inject_mask(void);

double ckpt_now(void);

#endif
