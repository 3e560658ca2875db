/* Restore, in the new process: still a fork of the restorer (child_main),
 * it creates every descriptor of the table at its number. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>

#include "fdinfo.h"
#include "internal.h"
#include "files.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

int ckpt_files_maxfd(const Storm__Ckpt__FileTable *ft)
{
	int maxfd = 2;
	for (size_t i = 0; i < ft->n_files; i++)
		if (ft->files[i]->fd > maxfd)
			maxfd = ft->files[i]->fd;
	return maxfd;
}

static const struct ckpt_caller_fd *caller_supplies(const struct ckpt_restore_opts *o, int fd)
{
	for (size_t i = 0; i < o->ncaller_fds; i++)
		if (o->caller_fds[i].fd == fd && o->caller_fds[i].caller_fd >= 0)
			return &o->caller_fds[i];
	return NULL;
}

int ckpt_files_restorable(const char *image, const Storm__Ckpt__FileTable *ft,
			  const struct ckpt_restore_opts *o, char *err, size_t errlen)
{
	for (size_t i = 0; i < ft->n_files; i++) {
		const Storm__Ckpt__File *f = ft->files[i];
		if (f->kind == CKPT_FILE_INHERITED && !f->dup && f->fd > 2 && !caller_supplies(o, f->fd))
			return ckpt_fail(err, errlen, -ENOTSUP,
					 "%s: fd %d (%s) was the checkpointing caller's, and this "
					 "restorer does not supply it",
					 image, f->fd, f->path);
	}
	return 0;
}

struct child {
	const Storm__Ckpt__FileTable *ft;
	const struct ckpt_restore_opts *o;
	const struct ckpt_shared *sh;
	int base;        /* temporaries from here up */
	char *why;
	size_t wl;
	int logfd;       /* lines for the restorer's log (-1: none) */
	const char *tag; /* FILE.storm-cut-TAG */
};

static int cfail(struct child *c, const Storm__Ckpt__File *f, const char *what)
{
	snprintf(c->why, c->wl, "section files: fd %d (%s): %s: %s", f->fd, f->path, what,
		 strerror(errno));
	return -1;
}

/* x moved up among the temporaries (it may sit on a number still to fill). */
static int up(struct child *c, int x)
{
	if (x < 0 || x >= c->base)
		return x;
	int y = fcntl(x, F_DUPFD_CLOEXEC, c->base);
	int e = errno;
	close(x);
	errno = e;
	return y;
}

/* tmp becomes f->fd, with its close-on-exec flag. */
static int place(struct child *c, const Storm__Ckpt__File *f, int tmp, bool keep_tmp)
{
	if (dup3(tmp, f->fd, (f->flags & O_CLOEXEC) ? O_CLOEXEC : 0) < 0)
		return cfail(c, f, "dup3");
	if (!keep_tmp)
		close(tmp);
	return 0;
}

static void say(struct child *c, const char *line)
{
	if (c->logfd >= 0 && line[0]) {
		char l[PATH_MAX + 512];
		int n = snprintf(l, sizeof(l), "%s\n", line);
		/* one write a line: the tree's processes share the log */
		if (write(c->logfd, l, n < (int)sizeof(l) ? (size_t)n : sizeof(l) - 1) < 0)
			return;
	}
}

/* Bytes [from, to) of the file open at x copied to a new file beside it,
 * p.storm-cut-TAG (.2, .3... when restarted more than once); its name in
 * saved. Through our own open file of it: x may be write-only. */
static int keep_cut(struct child *c, const char *p, int x, mode_t mode, uint64_t from,
		    uint64_t to, char *saved, size_t sl)
{
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", x);
	int in = open(self, O_RDONLY | O_CLOEXEC), out = -1;
	for (int k = 1; in >= 0 && out < 0 && k < 100; k++) {
		if (k == 1)
			snprintf(saved, sl, "%s.storm-cut-%s", p, c->tag);
		else
			snprintf(saved, sl, "%s.storm-cut-%s.%d", p, c->tag, k);
		out = open(saved, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0666);
		if (out < 0 && errno != EEXIST)
			break;
	}
	int rc = in < 0 || out < 0 ? -1 : 0;
	loff_t off = (loff_t)from;
	while (!rc && (uint64_t)off < to) {
		ssize_t n = copy_file_range(in, &off, out, NULL, to - (uint64_t)off, 0);
		if (n <= 0)
			rc = -1;
	}
	int e = errno;
	if (rc && out >= 0)
		unlink(saved);
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0 && !rc) {
		e = errno;
		unlink(saved);
		rc = -1;
	}
	errno = e;
	return rc;
}

/* A regular file changed since the checkpoint: cut back (its cut bytes
 * kept first: nothing is lost) or left as it is, and said either way
 * (ckpt_fsize_plan); *pos: where its offset goes. */
static int file_size(struct child *c, const Storm__Ckpt__File *f, const char *p, int x,
		     uint64_t *pos)
{
	struct stat sb;
	char saved[PATH_MAX + 64] = "", line[2 * PATH_MAX + 256];
	if (fstat(x, &sb) < 0)
		return cfail(c, f, "fstat");
	uint64_t now = (uint64_t)sb.st_size;
	int act = ckpt_fsize_plan(f->flags, f->size, f->pos, now, pos);
	if (act == CKPT_FSIZE_CUT) {
		if (keep_cut(c, p, x, sb.st_mode, f->size, now, saved, sizeof(saved))) {
			snprintf(c->why, c->wl, "%s: %llu bytes written since the checkpoint would be "
				 "cut, and keeping them in %s failed: %s; nothing was cut", p,
				 (unsigned long long)(now - f->size), saved, strerror(errno));
			return -1;
		}
		if (ftruncate(x, (off_t)f->size) < 0) {
			snprintf(c->why, c->wl, "%s: cannot cut back to %llu bytes: %s (its bytes "
				 "past that are kept in %s)", p, (unsigned long long)f->size,
				 strerror(errno), saved);
			return -1;
		}
	}
	ckpt_fsize_say(p, f->flags, f->size, now, act, saved, line, sizeof(line));
	say(c, line);
	return 0;
}

static int open_regular(struct child *c, const Storm__Ckpt__File *f)
{
	char *path = ckpt_remap_path(c->o, f->path);
	const char *p = path ? path : f->path;
	int fl = (int)f->flags & ~(O_CREAT | O_TRUNC | O_EXCL | O_NOCTTY);
	int x = up(c, open(p, fl));
	if (x < 0) {
		snprintf(c->why, c->wl, "section files: fd %d: %s: %s", f->fd, p, strerror(errno));
		free(path);
		return -1;
	}
	struct stat sb;
	uint64_t pos = f->pos;
	if (f->kind == CKPT_FILE_REGULAR && file_size(c, f, p, x, &pos)) {
		free(path);
		return -1;
	}
	if (f->kind == CKPT_FILE_DEVICE && (fstat(x, &sb) < 0 || sb.st_rdev != f->rdev)) {
		snprintf(c->why, c->wl, "section files: fd %d: %s is not the device %u:%u it was", f->fd,
			 p, major(f->rdev), minor(f->rdev));
		free(path);
		return -1;
	}
	free(path);
	if (!(fl & O_PATH) && lseek(x, (off_t)pos, SEEK_SET) < 0 && errno != ESPIPE &&
	    errno != EINVAL)
		return cfail(c, f, "seek");
	return place(c, f, x, false);
}

struct pipe_ends {
	int end[2];      /* read, write: temporaries */
	bool used[2];    /* an entry took that open file already */
};

/* An end of a pipe the image holds alone: the pipe is made at its first
 * end, with its bytes; a second open file of one end (not a dup) is opened
 * through /proc. */
static int open_pipe(struct child *c, const Storm__Ckpt__File *f, struct pipe_ends *pe)
{
	const Storm__Ckpt__FileTable *ft = c->ft;
	size_t k = 0;
	while (k < ft->n_pipes && ft->pipes[k]->id != f->object)
		k++;
	const Storm__Ckpt__Pipe *p = ft->pipes[k];
	const struct ckpt_shobj *so = ckpt_files_shared(c->sh, CKPT_SH_PIPE, p->id);
	if (pe[k].end[0] < 0 && so) {
		/* the tree's: its open files, as after the fork that shared it */
		pe[k].end[0] = up(c, fcntl(so->fd[0], F_DUPFD_CLOEXEC, c->base));
		pe[k].end[1] = up(c, fcntl(so->fd[1], F_DUPFD_CLOEXEC, c->base));
		if (pe[k].end[0] < 0 || pe[k].end[1] < 0)
			return cfail(c, f, "taking the shared pipe");
	}
	if (pe[k].end[0] < 0) {
		int fds[2];
		if (pipe2(fds, p->n_packets ? O_DIRECT : 0) < 0)
			return cfail(c, f, "pipe");
		pe[k].end[0] = up(c, fds[0]);
		pe[k].end[1] = up(c, fds[1]);
		if (pe[k].end[0] < 0 || pe[k].end[1] < 0 || ckpt_files_pipe_fill(pe[k].end[1], p))
			return cfail(c, f, "refilling the pipe");
	}
	int e = (f->flags & O_ACCMODE) == O_RDONLY ? 0 : 1;
	if (!pe[k].used[e]) {
		pe[k].used[e] = true;
		return place(c, f, pe[k].end[e], true);
	}
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pe[k].end[e]);
	int x = up(c, open(self, (e ? O_WRONLY : O_RDONLY) | O_NONBLOCK));
	return x < 0 ? cfail(c, f, "reopening the pipe") : place(c, f, x, false);
}

/* A FIFO by its path: opened with O_NONBLOCK beside an O_RDWR open of it
 * (so neither end waits for the other); its bytes back if the image held
 * it alone. */
static int open_fifo(struct child *c, const Storm__Ckpt__File *f, bool *filled)
{
	char *path = ckpt_remap_path(c->o, f->path);
	const char *p = path ? path : f->path;
	int keep = up(c, open(p, O_RDWR | O_NONBLOCK));
	int x = keep < 0 ? -1 : up(c, open(p, ((int)f->flags & O_ACCMODE) | O_NONBLOCK));
	free(path);
	if (x < 0) {
		if (keep >= 0)
			close(keep);
		return cfail(c, f, "open");
	}
	/* the tree's: filled once, held open by the first process */
	if (ckpt_files_shared(c->sh, CKPT_SH_FIFO, f->object))
		*filled = true;
	for (size_t k = 0; f->object && !*filled && k < c->ft->n_pipes; k++)
		if (c->ft->pipes[k]->id == f->object) {
			*filled = true;
			if (ckpt_files_pipe_fill(keep, c->ft->pipes[k]) < 0) {
				close(keep);
				return cfail(c, f, "refilling the FIFO");
			}
		}
	close(keep);
	return place(c, f, x, false);
}

static int open_timerfd(struct child *c, const Storm__Ckpt__File *f)
{
	int x = up(c, timerfd_create(f->clockid, 0));
	if (x < 0)
		return cfail(c, f, "timerfd_create");
	/* a periodic timer that expired and was not read since shows no time
	 * left (the kernel moves it on at the read): its next expiry one
	 * interval on, its expiries pending as they were */
	uint64_t value = !f->value_ns && f->ticks ? f->interval_ns : f->value_ns;
	struct itimerspec its = {
		{ (time_t)(f->interval_ns / 1000000000ull), (long)(f->interval_ns % 1000000000ull) },
		{ (time_t)(value / 1000000000ull), (long)(value % 1000000000ull) },
	};
	int fl = (int)f->settime_flags;
	if (value && (fl & TFD_TIMER_ABSTIME)) {
		/* what was left, counted from now on the timer's clock */
		struct timespec now;
		clockid_t ck = f->clockid == CLOCK_REALTIME_ALARM ? CLOCK_REALTIME
			       : f->clockid == CLOCK_BOOTTIME_ALARM ? CLOCK_BOOTTIME : f->clockid;
		clock_gettime(ck, &now);
		uint64_t at = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec + value;
		its.it_value.tv_sec = (time_t)(at / 1000000000ull);
		its.it_value.tv_nsec = (long)(at % 1000000000ull);
	}
	if (value && timerfd_settime(x, fl, &its, NULL) < 0)
		return cfail(c, f, "timerfd_settime");
	/* after settime, which clears them */
	uint64_t ticks = f->ticks;
	if (ticks && ioctl(x, TFD_IOC_SET_TICKS, &ticks) < 0)
		return cfail(c, f, "setting its expiries");
	return place(c, f, x, false);
}

/* Each object of the image made and put at its number. */
static int make(struct child *c, const Storm__Ckpt__File *f, struct pipe_ends *pe,
		bool *fifo_filled, int maxfd)
{
	int x = -1;
	switch (f->kind) {
	case CKPT_FILE_REGULAR:
	case CKPT_FILE_DIR:
	case CKPT_FILE_OPATH:
	case CKPT_FILE_DEVICE:
		return open_regular(c, f);
	case CKPT_FILE_FIFO:
		return open_fifo(c, f, fifo_filled);
	case CKPT_FILE_PIPE:
		return open_pipe(c, f, pe);
	case CKPT_FILE_MEMFD: {
		size_t k = 0;
		while (c->ft->memfds[k]->id != f->object)
			k++;
		/* an open file of its own, through the memfd the restorer fills */
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", maxfd + 3 + (int)k);
		x = up(c, open(self, (int)f->flags & ~(O_CREAT | O_TRUNC | O_EXCL | O_NOCTTY)));
		if (x < 0 || lseek(x, (off_t)f->pos, SEEK_SET) < 0)
			return cfail(c, f, "reopening the memfd");
		return place(c, f, x, false);
	}
	case CKPT_FILE_EVENTFD:
		x = up(c, eventfd(0, f->semaphore ? EFD_SEMAPHORE : 0));
		if (x < 0 || (f->count && write(x, &f->count, 8) != 8))
			return cfail(c, f, "eventfd");
		return place(c, f, x, false);
	case CKPT_FILE_TIMERFD:
		return open_timerfd(c, f);
	case CKPT_FILE_SIGNALFD: {
		/* the kernel's 64-bit mask as it was (glibc's sigaddset refuses
		 * its own two signals) */
		uint64_t mask = f->sigmask;
		x = up(c, (int)syscall(SYS_signalfd4, -1, &mask, sizeof(mask), 0));
		return x < 0 ? cfail(c, f, "signalfd") : place(c, f, x, false);
	}
	case CKPT_FILE_EPOLL:
		x = up(c, epoll_create1(0));
		return x < 0 ? cfail(c, f, "epoll_create1") : place(c, f, x, false);
	}
	return 0;
}

/* Closes every descriptor but those in keep[0..n) (sorted or not). */
static void close_others(const int *keep, size_t n)
{
	int top = -1;
	for (size_t i = 0; i < n; i++)
		if (keep[i] > top)
			top = keep[i];
	for (int fd = 0; fd <= top; fd++) {
		bool k = false;
		for (size_t i = 0; i < n; i++)
			k |= keep[i] == fd;
		if (!k)
			close(fd);
	}
	syscall(SYS_close_range, (unsigned)(top + 1), ~0u, 0);
}

/* What the steps of ckpt_files_child share. */
struct child_fds {
	struct child c;
	int maxfd;           /* the table's highest descriptor */
	int *keep;           /* what close_others leaves open */
	size_t nk;
	int *from;           /* per file: the restorer's descriptor for it, moved up (-1: none) */
	int ew, ext;         /* the error pipe, the external fd (-1: none), moved up */
	struct pipe_ends *pe;
};

/* The restorer's descriptors (the error pipe, the log, the external fd,
 * the caller's, the tree's objects) moved up and kept; every other one
 * closed. */
static int child_hand_up(struct child_fds *x, int *errw, int *logfd)
{
	struct child *c = &x->c;
	const Storm__Ckpt__FileTable *ft = c->ft;
	const struct ckpt_restore_opts *o = c->o;
	size_t nsh = c->sh ? c->sh->n : 0;
	int ew = fcntl(*errw, F_DUPFD_CLOEXEC, c->base);
	if (ew < 0) {
		snprintf(c->why, c->wl, "dup: %s", strerror(errno));
		return -1;
	}
	close(*errw);
	*errw = x->keep[x->nk++] = x->ew = ew;
	if (*logfd >= 0) {
		c->logfd = fcntl(*logfd, F_DUPFD_CLOEXEC, c->base);
		close(*logfd);
		*logfd = c->logfd;
		if (c->logfd >= 0)
			x->keep[x->nk++] = c->logfd;
	}
	if (o->external && o->external_fd >= 0)
		x->keep[x->nk++] = x->ext = fcntl(o->external_fd, F_DUPFD_CLOEXEC, c->base);
	for (size_t i = 0; i < ft->n_files; i++) {
		const Storm__Ckpt__File *f = ft->files[i];
		const struct ckpt_caller_fd *cf = f->kind == CKPT_FILE_INHERITED && !f->dup
						  ? caller_supplies(o, f->fd) : NULL;
		x->from[i] = -1;
		if (cf)
			x->keep[x->nk++] = x->from[i] = fcntl(cf->caller_fd, F_DUPFD_CLOEXEC, c->base);
		else if (f->kind == CKPT_FILE_INHERITED && !f->dup)
			x->keep[x->nk++] = f->fd; /* 0-2 as child_setup left them */
		if (cf && x->from[i] < 0)
			return cfail(c, f, "dup of the restorer's descriptor");
	}
	for (size_t k = 0; k < nsh; k++)
		for (int e = 0; e < 2; e++)
			if (c->sh->v[k].fd[e] >= 0)
				x->keep[x->nk++] = c->sh->v[k].fd[e];
	close_others(x->keep, x->nk);
	return 0;
}

/* The inherited descriptors at their numbers, then the external fd and
 * the error pipe at theirs, right above the table's. */
static int child_inherited(struct child_fds *x, int *errw)
{
	struct child *c = &x->c;
	const Storm__Ckpt__FileTable *ft = c->ft;
	for (size_t i = 0; i < ft->n_files; i++) {
		const Storm__Ckpt__File *f = ft->files[i];
		if (f->kind != CKPT_FILE_INHERITED || f->dup)
			continue;
		if (x->from[i] >= 0 && place(c, f, x->from[i], false))
			return -1;
		if (x->from[i] < 0 &&
		    fcntl(f->fd, F_SETFD, (f->flags & O_CLOEXEC) ? FD_CLOEXEC : 0) < 0) {
			snprintf(c->why, c->wl, "fd %d (%s at the checkpoint) is not open: the restorer "
				 "supplies fds 0-2", f->fd, f->path);
			return -1;
		}
	}
	if ((x->ext >= 0 && dup3(x->ext, x->maxfd + 1, O_CLOEXEC) < 0) ||
	    dup3(x->ew, x->maxfd + 2, O_CLOEXEC) < 0) {
		snprintf(c->why, c->wl, "dup3: %s", strerror(errno));
		return -1;
	}
	if (x->ext >= 0)
		close(x->ext);
	close(x->ew);
	*errw = x->maxfd + 2;
	return 0;
}

/* The memfds, where the restorer finds them to fill and map. */
static int child_memfds(struct child_fds *x)
{
	struct child *c = &x->c;
	const Storm__Ckpt__FileTable *ft = c->ft;
	for (size_t k = 0; k < ft->n_memfds; k++) {
		const Storm__Ckpt__Memfd *m = ft->memfds[k];
		const struct ckpt_shobj *so = ckpt_files_shared(c->sh, CKPT_SH_MEMFD, m->id);
		int at = x->maxfd + 3 + (int)k;
		int fd = so ? fcntl(so->fd[0], F_DUPFD_CLOEXEC, c->base)
			    : memfd_create(m->name, MFD_ALLOW_SEALING | MFD_CLOEXEC);
		if (fd < 0 || (!so && ftruncate(fd, (off_t)m->size) < 0) ||
		    (fd != at && dup3(fd, at, O_CLOEXEC) < 0)) {
			snprintf(c->why, c->wl, "section files: memfd %s: %s", m->name, strerror(errno));
			return -1;
		}
		if (fd != at)
			close(fd);
	}
	return 0;
}

/* Each object of the table made at its number; then the ends the image
 * did not hold and the tree's objects closed. */
static int child_make_all(struct child_fds *x)
{
	struct child *c = &x->c;
	const Storm__Ckpt__FileTable *ft = c->ft;
	size_t nsh = c->sh ? c->sh->n : 0;
	for (size_t k = 0; k < ft->n_pipes; k++)
		x->pe[k].end[0] = x->pe[k].end[1] = -1;
	bool *fifo_filled = calloc(ft->n_pipes + 1, sizeof(*fifo_filled));
	if (!fifo_filled)
		return -1;
	for (size_t i = 0; i < ft->n_files; i++) {
		const Storm__Ckpt__File *f = ft->files[i];
		if (f->dup || f->kind == CKPT_FILE_INHERITED)
			continue;
		size_t k = 0;
		while (f->kind == CKPT_FILE_FIFO && k < ft->n_pipes && ft->pipes[k]->id != f->object)
			k++;
		if (make(c, f, x->pe, &fifo_filled[k], x->maxfd))
			return -1;
	}
	/* the pipe's ends the image had not (a reader whose writers were gone
	 * reads what was left, then the end), and the tree's objects: each
	 * process holds what its table says */
	for (size_t k = 0; k < ft->n_pipes; k++)
		for (int e = 0; e < 2; e++)
			if (x->pe[k].end[e] >= 0)
				close(x->pe[k].end[e]);
	for (size_t k = 0; k < nsh; k++)
		for (int e = 0; e < 2; e++)
			if (c->sh->v[k].fd[e] >= 0)
				close(c->sh->v[k].fd[e]);
	free(fifo_filled);
	return 0;
}

/* The dups, then the status flags the opens did not give. */
static int child_dups_and_flags(struct child_fds *x)
{
	struct child *c = &x->c;
	const Storm__Ckpt__FileTable *ft = c->ft;
	int fl;
	for (size_t i = 0; i < ft->n_files; i++) {
		const Storm__Ckpt__File *f = ft->files[i];
		if (f->dup && dup3(f->dup_of, f->fd, (f->flags & O_CLOEXEC) ? O_CLOEXEC : 0) < 0)
			return cfail(c, f, "dup3");
	}
	/* status flags (O_APPEND, O_NONBLOCK...) where the open did not give them */
	for (size_t i = 0; i < ft->n_files; i++) {
		const Storm__Ckpt__File *f = ft->files[i];
		unsigned want = f->flags & (O_APPEND | O_NONBLOCK | O_NOATIME | O_DIRECT);
		if (f->dup || f->kind == CKPT_FILE_OPATH || (fl = fcntl(f->fd, F_GETFL)) < 0)
			continue;
		unsigned have = (unsigned)fl & (O_APPEND | O_NONBLOCK | O_NOATIME | O_DIRECT);
		if (have != want && fcntl(f->fd, F_SETFL, ((unsigned)fl & ~have) | want) < 0)
			return cfail(c, f, "setting its flags");
	}
	return 0;
}

/* Each epoll's items added, epolls last, one an epoll watches before it. */
static int child_epolls(struct child_fds *x)
{
	struct child *c = &x->c;
	const Storm__Ckpt__FileTable *ft = c->ft;
	size_t nf = ft->n_files;
	size_t *order = malloc((nf ? nf : 1) * sizeof(*order));
	int ne = order ? ckpt_epoll_order(ft, order) : -ENOMEM;
	for (int i = 0; i < ne; i++) {
		const Storm__Ckpt__File *f = ft->files[order[i]];
		for (size_t k = 0; k < f->n_items; k++) {
			struct epoll_event ev = { .events = f->items[k]->events,
						  .data.u64 = f->items[k]->data };
			if (epoll_ctl(f->fd, EPOLL_CTL_ADD, f->items[k]->tfd, &ev) < 0) {
				snprintf(c->why, c->wl, "section files: fd %d (epoll): watching fd %d: %s",
					 f->fd, f->items[k]->tfd, strerror(errno));
				return -1;
			}
		}
	}
	free(order);
	return ne < 0 ? -1 : 0;
}

int ckpt_files_child(const Storm__Ckpt__FileTable *ft, const struct ckpt_restore_opts *o,
		     const struct ckpt_shared *sh, int *errw, int *logfd, const char *tag,
		     char *why, size_t wl)
{
	int maxfd = ckpt_files_maxfd(ft);
	struct child_fds x = { .c = { ft, o, sh, maxfd + 3 + (int)ft->n_memfds, why, wl, -1, tag },
			       .maxfd = maxfd, .ew = -1, .ext = -1 };
	size_t nf = ft->n_files, nsh = sh ? sh->n : 0;
	/* what the restorer hands over goes up first, out of the image's way */
	x.keep = calloc(nf + 8 + 2 * nsh, sizeof(*x.keep));
	x.from = calloc(nf + 1, sizeof(*x.from));
	x.pe = calloc(ft->n_pipes + 1, sizeof(*x.pe));
	if (!x.keep || !x.from || !x.pe) {
		snprintf(why, wl, "out of memory");
		return -1;
	}
	/* a failure leaves the rest to the new process's exit */
	if (child_hand_up(&x, errw, logfd) || child_inherited(&x, errw) || child_memfds(&x) ||
	    child_make_all(&x) || child_dups_and_flags(&x))
		return -1;
	int rc = child_epolls(&x);
	free(x.pe);
	free(x.from);
	free(x.keep);
	return rc;
}
