/* libstormckpt: checkpoint and restore of an unmodified Linux x86-64
 * process, every thread of it (pthreads, OpenMP), with ptrace and /proc (no
 * kernel module, no CRIU). Images: checkpoint/image.h. How it works:
 * docs/design/checkpoint.md. Functions return 0 or a negative errno and put
 * a one-line reason in err. */
#ifndef STORM_CKPT_H
#define STORM_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ckpt_vma_kind {
	CKPT_VMA_ANON = 0,
	CKPT_VMA_FILE = 1,
	CKPT_VMA_HEAP = 2,
	CKPT_VMA_STACK = 3,
	CKPT_VMA_VDSO = 4,
	CKPT_VMA_VVAR = 5,
	CKPT_VMA_VVAR_VCLOCK = 6,
	CKPT_VMA_VSYSCALL = 7,
	/* a shared memfd mapping that belongs to the caller (the BCS-MPI
	 * channel): nothing of it is saved; the restorer says what to map */
	CKPT_VMA_EXTERNAL = 8,
	/* a mapping of a memfd (the image's Memfd of the same id): mapped from
	 * it again; shared ones save no pages, their data is the memfd's */
	CKPT_VMA_MEMFD = 9,
};

/* What an open descriptor is and how it comes back (proto File.kind). */
enum ckpt_file_kind {
	CKPT_FILE_REGULAR = 0,  /* reopened by path at its offset */
	/* supplied by the restorer: fds 0-2 as its child_setup leaves them
	 * (a pipe, terminal or socket the node gave it), others through
	 * ckpt_restore_opts.caller_fds */
	CKPT_FILE_INHERITED = 1,
	CKPT_FILE_DIR = 2,      /* a directory, reopened by path */
	CKPT_FILE_OPATH = 3,    /* O_PATH, reopened by path */
	CKPT_FILE_FIFO = 4,     /* a named pipe, reopened by path */
	CKPT_FILE_DEVICE = 5,   /* a stateless character device (/dev/null...) */
	CKPT_FILE_PIPE = 6,     /* an end of a pipe the image holds alone */
	CKPT_FILE_MEMFD = 7,
	CKPT_FILE_EVENTFD = 8,
	CKPT_FILE_TIMERFD = 9,
	CKPT_FILE_SIGNALFD = 10,
	CKPT_FILE_EPOLL = 11,
};
#define CKPT_FILE_KINDS 12

/* One line of /proc/PID/maps. */
struct ckpt_map {
	uint64_t start, end, offset;
	unsigned prot;  /* PROT_* */
	int shared;
	unsigned kind;  /* enum ckpt_vma_kind */
	int deleted;    /* "(deleted)" file */
	uint64_t ino;   /* its inode (shared memory: which object it maps) */
	char path[4096];
};

/* Parses one /proc/PID/maps line. Returns 0 or -EINVAL. Pure. */
int ckpt_parse_maps_line(const char *line, struct ckpt_map *m);

enum {
	CKPT_DUMP_KILL = 1,  /* SIGKILL the process once the image is written */
	CKPT_DUMP_FSYNC = 2, /* fsync the image before renaming it into place */
	/* shared mappings of memfds are the caller's: saved as CKPT_VMA_EXTERNAL
	 * areas (without their bytes) instead of refused */
	CKPT_DUMP_EXTERNAL_MEMFD = 4,
	/* once the process is let go, start the disk writing the image as it
	 * is made, so the fsync finds little left */
	CKPT_DUMP_WRITEBACK = 8,
	/* let the process go before its memory is written: a copy-on-write
	 * fork of it (clone(CLONE_PARENT) injected, held under ptrace, killed
	 * after) is read instead. Not taken (the memory is read from the
	 * stopped process itself) where the fork would not be a faithful copy:
	 * saved shared memory, MADV_DONTFORK or MADV_WIPEONFORK areas, or a
	 * failed clone (a pids limit, seccomp). Its parent (the process's) sees
	 * an unknown child exit. */
	CKPT_DUMP_SNAPSHOT = 16,
};

/* A descriptor of the process that is one of the caller's own: fd in the
 * process is the open file the caller holds as caller_fd. */
struct ckpt_caller_fd {
	int fd;
	int caller_fd;
};

struct ckpt_dump_opts {
	unsigned flags;      /* CKPT_DUMP_* */
	/* descriptors the caller gave the process and supplies again at
	 * restore (ckpt_restore_opts.caller_fds): saved as inherited, not
	 * judged. One whose fd holds another file is judged as any other. */
	const struct ckpt_caller_fd *caller_fds;
	size_t ncaller_fds;
	const void *app;     /* the caller's bytes, kept in the image (meta) and */
	size_t app_len;      /* handed back to ckpt_restore_opts.external */
	/* called once the process is let go, its state captured (before the
	 * image is written with CKPT_DUMP_SNAPSHOT, after it without); not on
	 * a failure before that point */
	void (*captured)(void *arg);
	void *arg;
};

struct ckpt_stats {
	uint64_t bytes;      /* image size */
	uint64_t pages;      /* pages saved or restored */
	double seconds;
	/* dump: where the seconds went (bench/checkpoint reports them) */
	double t_stop;       /* seize and interrupt until it is stopped */
	double t_meta;       /* /proc, injected queries, files, page plan */
	double t_copy;       /* memory read and written to the image */
	double t_frozen;     /* from the start until the process was let go */
	int snapshot;        /* its memory was read from a snapshot */
};

/* Writes an image of process pid (stopped or running; left as it was unless
 * CKPT_DUMP_KILL) to path (through path.tmp and a rename). Every thread is
 * held from the stop until it is let go. o may be NULL. */
int ckpt_dump(pid_t pid, const char *path, const struct ckpt_dump_opts *o,
	      struct ckpt_stats *st, char *err, size_t errlen);

/* A piece of an external area: len bytes at addr map the external fd's
 * bytes from off on (MAP_SHARED). */
struct ckpt_ext_piece {
	uint64_t addr, len, off;
};

struct ckpt_restore_opts {
	int stopped;        /* leave it stopped by SIGSTOP (gang scheduling continues it) */
	uid_t uid;          /* run as this user/group once restored, if drop_creds */
	gid_t gid;
	int drop_creds;
	/* Runs in the new process before it is rebuilt (it is still a fork of
	 * the caller): set the process group, stdin/stdout/stderr (the image's
	 * inherited fds 0-2 must be open when it returns)... Return 0. */
	int (*child_setup)(void *arg);
	void *child_arg;
	/* Files of the image under one of from_prefixes are looked up under
	 * to_prefix instead (the job directory moved: a restart elsewhere). */
	const char *const *from_prefixes;
	size_t nfrom;
	const char *to_prefix;
	/* External areas (CKPT_DUMP_EXTERNAL_MEMFD): called in the caller for
	 * each, before the new process maps it, with the image's app bytes;
	 * fills up to max pieces of external_fd to map there and returns their
	 * number or a negative errno (with a reason in err). What no piece
	 * covers is mapped anonymous. Without it such an image is refused. */
	int (*external)(void *arg, const void *app, size_t app_len, uint64_t start,
			uint64_t end, uint64_t offset, struct ckpt_ext_piece *p, size_t max,
			char *err, size_t errlen);
	void *external_arg;
	int external_fd;    /* a descriptor of the caller, for the pieces (with external) */
	/* the image's inherited descriptors above 2 (ckpt_dump_opts.caller_fds):
	 * caller_fd becomes fd in the new process. An image with one not
	 * listed here is refused. */
	const struct ckpt_caller_fd *caller_fds;
	size_t ncaller_fds;
	/* One line for each thing the restore did that the image alone does
	 * not say: each file found changed since the checkpoint and what was
	 * done to it (cut back, its cut bytes kept in FILE.storm-cut-TIME, or
	 * left as it is), a thread's affinity or priority it could not set.
	 * Called in the caller, also when the restore fails after it. NULL:
	 * written to stderr. */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/* Rebuilds the process of the image at path as a child of the caller, with
 * its old pid and thread ids where they are free; *pid gets its pid (it is
 * running, or with opts->stopped all its threads are in a group stop that a
 * SIGCONT ends). */
int ckpt_restore(const char *path, const struct ckpt_restore_opts *opts, pid_t *pid,
		 struct ckpt_stats *st, char *err, size_t errlen);

/* Checks an image's header, table and every checksum without restoring. */
int ckpt_verify_file(const char *path, uint64_t *size, char *err, size_t errlen);

#endif
