/* The pure parts of saving descriptors (checkpoint/files_*.c): parsers of
 * /proc/PID/fdinfo, the names of sockets in refusals, and the checks of an
 * image's file table before it is restored. No I/O: unit-tested and fuzzed. */
#ifndef STORM_CKPT_FDINFO_H
#define STORM_CKPT_FDINFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ckpt.pb-c.h"
#include "image.h"

/* What every descriptor's fdinfo has ("pos:", "flags:", "ino:"), and its
 * first lock line ("lock:\t1: POSIX  ADVISORY  WRITE ..."), if any. */
struct ckpt_fdinfo {
	uint64_t pos;
	unsigned flags;
	uint64_t ino;
	char lock[64];   /* "POSIX ADVISORY WRITE", "" without a lock */
};

/* Each returns 0 or -EINVAL (a line it needs is missing or unreadable). */
int ckpt_fdinfo_common(const char *text, struct ckpt_fdinfo *fi);
int ckpt_fdinfo_eventfd(const char *text, uint64_t *count, int *semaphore);

struct ckpt_timerfd {
	int clockid;
	uint64_t value_ns, interval_ns; /* it_value (time left), it_interval */
	uint64_t ticks;
	unsigned settime_flags;
};
int ckpt_fdinfo_timerfd(const char *text, struct ckpt_timerfd *t);
int ckpt_fdinfo_signalfd(const char *text, uint64_t *sigmask);

struct ckpt_epoll_item {
	int tfd;
	uint32_t events;
	uint64_t data;
};
/* The "tfd:" lines of an epoll descriptor: *items is malloc'd (NULL for
 * none). Returns their number, -EINVAL or -ENOMEM. */
int ckpt_fdinfo_epoll(const char *text, struct ckpt_epoll_item **items);

/* "TCP socket (127.0.0.1:4000 -> 127.0.0.1:5000)", "Unix stream socket
 * (/tmp/s)", "UDP socket (bound to [::1]:53)", "netlink socket"...: what a
 * refusal calls it. local/peer may be NULL (their length 0). */
void ckpt_describe_socket(int domain, int type, int listening, const struct sockaddr *local,
			  socklen_t llen, const struct sockaddr *peer, socklen_t plen, char *buf,
			  size_t len);

/* Checks a file table from an image against itself, its areas (memfd and
 * shared memory ids) and its header (the memfds' page sections): fds in
 * 0..65535 and apart, known kinds, dups of an earlier own file, pipes and
 * memfds that exist, epoll items on descriptors of the table and no epoll
 * loop. Returns 0 or -EINVAL with a one-line reason naming the section. */
int ckpt_files_check(const Storm__Ckpt__FileTable *ft, const Storm__Ckpt__VmaTable *vt,
		     const struct ckpt_header *h, char *err, size_t errlen);

/* The table's epoll descriptors (indices into ft->files, dups left out) in
 * the order to fill them: one an epoll watches comes before it. Returns
 * their number, or -ELOOP if epolls watch each other in a loop. order has
 * room for ft->n_files. */
int ckpt_epoll_order(const Storm__Ckpt__FileTable *ft, size_t *order);

/* The entry of ft for fd, or NULL. */
const Storm__Ckpt__File *ckpt_file_by_fd(const Storm__Ckpt__FileTable *ft, int fd);

/* The POSIX timers (timer_create) of /proc/PID/timers: their number; the
 * clock of the first in *clock (-1: none). Pure. */
int ckpt_proc_timers(const char *text, int *clock);
/* The "Seccomp:" mode and "Seccomp_filters:" count of /proc/PID/status
 * (0 each where a kernel shows none, or status is NULL). Pure. */
void ckpt_status_seccomp(const char *status, int *mode, int *filters);

/* What a restore does to a regular file it reopens, whose size was size at
 * the checkpoint and is now now (docs/RELIABILITY.md, "What a checkpointable
 * rank may hold"). A file opened for writing without O_APPEND is the rank's
 * output: cut back, so the restarted run writes what the uninterrupted one
 * did (the bytes cut are kept beside it). An O_APPEND one may be a log that
 * others append to: never cut, its offset follows to the end if it was at
 * the end. Anything else is left as it is, and said. */
enum ckpt_fsize_act {
	CKPT_FSIZE_SAME = 0, /* the checkpoint's size, or nothing to do: no word */
	CKPT_FSIZE_CUT = 1,  /* cut back to the checkpoint's size */
	CKPT_FSIZE_LEFT = 2, /* changed, left as it is */
};
/* flags: the open flags saved (File.flags); pos: the offset saved; *newpos
 * gets where the offset goes. Returns an enum ckpt_fsize_act. Pure. */
int ckpt_fsize_plan(uint32_t flags, uint64_t size, uint64_t pos, uint64_t now, uint64_t *newpos);
/* The log line of that decision for the file name ("" for CKPT_FSIZE_SAME):
 * "out.f: cut back from 1234 to 1000 bytes (the size at the checkpoint);
 * the 234 bytes cut are kept in out.f.storm-cut-T", "log: opened O_APPEND;
 * left as it is (1234 bytes, 1000 at the checkpoint)". saved: where the cut
 * bytes went. Pure. */
void ckpt_fsize_say(const char *name, uint32_t flags, uint64_t size, uint64_t now, int act,
		    const char *saved, char *buf, size_t len);

#endif
