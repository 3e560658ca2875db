/* Pieces shared by dump.c, restore.c and the files_*.c (not part of the library's API). */
#ifndef STORM_CKPT_INTERNAL_H
#define STORM_CKPT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "ckpt.h"
#include "ckpt.pb-c.h"
#include "image.h"

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
/* The number after key ("Tgid:\t") in a /proc status text, in base; -1
 * when status is NULL or has no such line. */
long ckpt_status_num(const char *status, const char *key, int base);

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

/* One line for o->log (stderr without it). */
void ckpt_log(const struct ckpt_restore_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A path of the image as this restore finds it (o->from_prefixes moved to
 * o->to_prefix); malloc'd, NULL without memory. */
char *ckpt_remap_path(const struct ckpt_restore_opts *o, const char *p);

/* ---- descriptors (files_*.c: files.h has what they share) */

/* What a dump keeps of the descriptors beside the file table. */
struct ckpt_fdump;

/* Judges every descriptor of the stopped process pid into ft, or refuses
 * with one line naming the pid, the fd and its kind. Touches nothing in the
 * process: called before anything is injected. tree[0..ntree): the other
 * processes of the image, whose holding a pipe is no reason to refuse it.
 * *s: free with ckpt_files_dump_free (also on failure). */
int ckpt_files_dump(pid_t pid, const struct ckpt_dump_opts *o, const pid_t *tree, size_t ntree,
		    Storm__Ckpt__FileTable *ft, struct ckpt_fdump **s, char *err, size_t errlen);
/* An area read from maps: a memfd one (CKPT_VMA_MEMFD, or EXTERNAL for the
 * caller's) is tied to the memfd of the table it maps, which is added if
 * no descriptor holds it. Returns 0 or a refusal. */
int ckpt_files_area(struct ckpt_fdump *s, struct ckpt_map *m);
/* Numbers the page sections of the memfds' contents after the areas'. */
void ckpt_files_plan_data(struct ckpt_fdump *s, uint32_t *npsec);
/* True if a memfd's content is to be read: the process must stay stopped
 * until ckpt_files_write_data (no snapshot: a fork shares its memfds). */
bool ckpt_files_need_stop(const struct ckpt_fdump *s);
/* The memfds' page sections, at *off in out; secs: the header's table. */
int ckpt_files_write_data(struct ckpt_fdump *s, int out, struct ckpt_sec *secs, uint64_t *off,
			  const char *path);
void ckpt_files_dump_free(struct ckpt_fdump *s, Storm__Ckpt__FileTable *ft);

/* Objects of a tree image that several of its processes hold: a pipe (its
 * ends, with its bytes), a FIFO (held open, with its bytes), a memfd, shared
 * anonymous memory. The first process makes each once before it forks the
 * others, which inherit them; each takes its own from there. */
enum { CKPT_SH_PIPE, CKPT_SH_FIFO, CKPT_SH_MEMFD, CKPT_SH_ANON };
struct ckpt_shobj {
	int kind;                        /* CKPT_SH_* */
	uint64_t id;                     /* Pipe.id, Memfd.id, Vma.shm_id */
	const Storm__Ckpt__Pipe *pipe;   /* pipe, FIFO: its bytes */
	const Storm__Ckpt__Memfd *memfd;
	const char *path;                /* FIFO */
	uint64_t addr, size;             /* memory: mapped there in the first process */
	int fd[2];                       /* pipe: read, write end; FIFO, memfd: fd[0] */
};
struct ckpt_shared {
	struct ckpt_shobj *v;
	size_t n;
	uint64_t *filled;                /* the restorer's: memfds whose content is written */
	size_t nfilled;
};
/* Before the fork: the objects of the n processes' tables that more than
 * one of them holds (memory's addr is the caller's to choose). */
int ckpt_files_share_plan(Storm__Ckpt__FileTable *const *fts, Storm__Ckpt__VmaTable *const *vts,
			  size_t n, struct ckpt_shared *sh);
/* In the first process, before it forks the others: each object made, its
 * descriptors at numbers from base up. Returns 0, or -1 with a reason. */
int ckpt_files_share_make(struct ckpt_shared *sh, const struct ckpt_restore_opts *o, int base,
			  char *why, size_t wl);
const struct ckpt_shobj *ckpt_files_shared(const struct ckpt_shared *sh, int kind, uint64_t id);
void ckpt_files_share_free(struct ckpt_shared *sh);

/* The highest descriptor of the table, at least 2. In the new process
 * maxfd + 1 is the external fd, maxfd + 2 the error pipe and maxfd + 3 + k
 * memfd k until the restorer closes them. */
int ckpt_files_maxfd(const Storm__Ckpt__FileTable *ft);
/* Before the fork: does the restorer supply the image's inherited fds? */
int ckpt_files_restorable(const char *image, const Storm__Ckpt__FileTable *ft,
			  const struct ckpt_restore_opts *o, char *err, size_t errlen);
/* In the new process, after child_setup: every descriptor of the table at
 * its number, nothing else but the above. *errw (the error pipe) moves.
 * sh (NULL: none): the tree's shared objects, taken and then closed.
 * Returns 0, or -1 with a reason in why. */
/* logfd (-1: none): where the lines for o->log go, from every process
 * (each one write); it moves like *errw, and is the caller's to close.
 * tag names the files that keep bytes cut off (FILE.storm-cut-TAG). */
int ckpt_files_child(const Storm__Ckpt__FileTable *ft, const struct ckpt_restore_opts *o,
		     const struct ckpt_shared *sh, int *errw, int *logfd, const char *tag,
		     char *why, size_t wl);

/* The restorer's side, once the new process is stopped under it. */
struct ckpt_frestore {
	struct ckpt_tracee *t;
	const struct user_regs_struct *base;
	const char *image;
	int imgfd;
	const struct ckpt_header *h;
	const Storm__Ckpt__FileTable *ft;
	const Storm__Ckpt__VmaTable *vt;
	int maxfd;
	int *memfd;         /* ours, per ft->memfds */
	struct ckpt_shared *sh; /* a tree's shared objects (NULL: none) */
	char *err;
	size_t errlen;
};
/* The memfds' contents and the seals their mappings need first. */
int ckpt_files_restore_start(struct ckpt_frestore *r);
/* Areas ckpt_files_maps_area says are ours: memfd and shared anonymous. */
bool ckpt_files_maps_area(const Storm__Ckpt__Vma *v);
int ckpt_files_map_area(struct ckpt_frestore *r, size_t vi);
/* Once their pages are written: shared areas' protections, the new
 * process's memfd descriptors above the image's closed. */
int ckpt_files_areas_done(struct ckpt_frestore *r);
/* The seals that had to wait for the mappings. */
int ckpt_files_restore_finish(struct ckpt_frestore *r);
void ckpt_files_restore_end(struct ckpt_frestore *r);

#endif
