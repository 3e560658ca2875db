/* The open descriptors of a process to checkpoint, judged: what each is
 * (/proc/PID/fd and fdinfo), which share one open file (kcmp: dups, the
 * files an epoll watches), who else holds its pipes; each kept as its kind
 * or the dump refused naming it. What each kind becomes is in
 * docs/design/checkpoint.md ("Descriptors"); the refused kinds are listed
 * in docs/RELIABILITY.md. Nothing is injected into the process, so a
 * refusal leaves it as it was. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "fdinfo.h"
#include "internal.h"
#include "files.h"

static int refuse(struct ckpt_fdump *s, const struct ckpt_fent *e, const char *what, const char *why)
{
	return ckpt_fail(s->err, s->errlen, -ENOTSUP, "pid %d: fd %d is %s: %s", s->pid, e->fd, what,
			 why);
}

static long kcmp(pid_t a, pid_t b, int type, unsigned long x, unsigned long y)
{
	return syscall(SYS_kcmp, a, b, type, x, y);
}

/* For each pipe or FIFO inode, a process other than pid, us and the
 * image's others (tree) holding it (0: none seen). Processes whose
 * descriptors we may not read are not seen. fifos: some are named (their
 * holders are found by stat). */
static void pipe_holders(pid_t pid, const pid_t *tree, size_t ntree, const uint64_t *inos,
			 pid_t *holders, size_t n, bool fifos)
{
	memset(holders, 0, n * sizeof(*holders));
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	struct dirent *pe;
	char path[96], link[64];
	while ((pe = readdir(proc))) {
		pid_t q = (pid_t)atoi(pe->d_name);
		bool ours = false;
		for (size_t i = 0; i < ntree; i++)
			ours |= tree[i] == q;
		if (q <= 0 || q == pid || q == getpid() || ours)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", q);
		DIR *fdd = opendir(path);
		if (!fdd)
			continue;
		struct dirent *de;
		while ((de = readdir(fdd))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", q, de->d_name);
			ssize_t l = readlink(path, link, sizeof(link) - 1);
			unsigned long long ino;
			if (l <= 0)
				continue;
			link[l] = 0;
			if (sscanf(link, "pipe:[%llu]", &ino) != 1 && (link[0] != '/' || !fifos))
				continue;
			struct stat sb;
			if (link[0] == '/' && (stat(path, &sb) < 0 || !S_ISFIFO(sb.st_mode)))
				continue;
			if (link[0] == '/')
				ino = sb.st_ino;
			for (size_t i = 0; i < n; i++)
				if (inos[i] == ino && !holders[i])
					holders[i] = q;
		}
		closedir(fdd);
	}
	closedir(proc);
}
/* Another process of the image holding e's open file itself (inherited
 * over a fork, not opened again), or 0. */
static pid_t open_file_sharer(const struct ckpt_fdump *s, const struct ckpt_fent *e)
{
	for (size_t i = 0; i < s->ntree; i++) {
		pid_t q = s->tree[i];
		char path[64];
		if (q == s->pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", q);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			struct stat sb;
			snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", q, de->d_name);
			if (de->d_name[0] != '.' && stat(path, &sb) == 0 && sb.st_dev == e->st.st_dev &&
			    sb.st_ino == e->st.st_ino &&
			    kcmp(s->pid, q, KCMP_FILE, (unsigned long)e->fd, strtoul(de->d_name, NULL, 10)) == 0) {
				closedir(d);
				return q;
			}
		}
		if (d)
			closedir(d);
	}
	return 0;
}

/* "a TCP socket (127.0.0.1:4000 -> 127.0.0.1:5000)", through a copy of the
 * process's descriptor (pidfd_getfd; what it is stays the same). */
static void socket_name(struct ckpt_fdump *s, int fd, char *buf, size_t len)
{
	snprintf(buf, len, "a socket");
	int pfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	int sk = pfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pfd, fd, 0) : -1;
	if (pfd >= 0)
		close(pfd);
	if (sk < 0)
		return;
	int domain = 0, type = 0, listening = 0;
	socklen_t ol = sizeof(int);
	struct sockaddr_storage la, pa;
	socklen_t ll = sizeof(la), pl = sizeof(pa);
	getsockopt(sk, SOL_SOCKET, SO_DOMAIN, &domain, &ol);
	ol = sizeof(int);
	getsockopt(sk, SOL_SOCKET, SO_TYPE, &type, &ol);
	ol = sizeof(int);
	getsockopt(sk, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol);
	if (getsockname(sk, (struct sockaddr *)&la, &ll) < 0)
		ll = 0;
	if (getpeername(sk, (struct sockaddr *)&pa, &pl) < 0)
		pl = 0;
	close(sk);
	ckpt_describe_socket(domain, type, listening, ll ? (struct sockaddr *)&la : NULL, ll,
			     pl ? (struct sockaddr *)&pa : NULL, pl, buf, len);
}

static bool is_terminal(dev_t rdev)
{
	unsigned ma = major(rdev);
	/* ttys, /dev/tty, /dev/console, /dev/ptmx, pty slaves (Unix98 136-143) */
	return ma == 4 || ma == 5 || (ma >= 136 && ma <= 143);
}

/* The stateless devices reopened by path: mem's null, zero, full, random,
 * urandom. */
static bool device_allowed(dev_t rdev)
{
	unsigned mi = minor(rdev);
	return major(rdev) == 1 && (mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9);
}

/* An anonymous inode's kind ("anon_inode:[eventfd]") in words, for a
 * refusal. */
static const char *anon_kind(const char *target, char *buf, size_t len)
{
	static const struct {
		const char *key, *what;
	} k[] = {
		{ "io_uring", "an io_uring instance" },  { "inotify", "an inotify instance" },
		{ "fanotify", "a fanotify group" },     { "userfaultfd", "a userfaultfd" },
		{ "pidfd", "a pidfd" },                 { "perf_event", "a perf event" },
		{ "bpf", "a BPF object" },              { "kvm", "a KVM object" },
		{ "dmabuf", "a DMA buffer" },           { "sync_file", "a sync file" },
	};
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (strstr(target, k[i].key)) {
			snprintf(buf, len, "%s (%s)", k[i].what, target);
			return buf;
		}
	snprintf(buf, len, "%s", target);
	return buf;
}

/* e holds the very file the caller gave the process at that number, and
 * supplies again at restore. */
static bool caller_holds(const struct ckpt_dump_opts *o, const struct ckpt_fent *e)
{
	for (size_t i = 0; i < o->ncaller_fds; i++) {
		struct stat cs;
		if (o->caller_fds[i].fd == e->fd && e->st_ok &&
		    fstat(o->caller_fds[i].caller_fd, &cs) == 0 && cs.st_dev == e->st.st_dev &&
		    cs.st_ino == e->st.st_ino)
			return true;
	}
	return false;
}

/* A pipe or a FIFO: kept when the image holds all of it (holder 0). */
static int judge_pipe(struct ckpt_fdump *s, struct ckpt_fent *e, pid_t holder)
{
	Storm__Ckpt__File *f = e->f;
	char what[PATH_MAX + 128];
	const char *t = e->target;
	int rc;
	bool fifo = t[0] == '/';
	if (fifo && strstr(t, " (deleted)"))
		return refuse(s, e, t, "a deleted FIFO cannot be reopened");
	if (holder && !fifo) {
		if (e->fd <= 2) {
			f->kind = CKPT_FILE_INHERITED;
			return 0;
		}
		/* its child's, say so: one image of the tree could pair them */
		char st[64], *sb = NULL;
		snprintf(st, sizeof(st), "/proc/%d/status", (int)holder);
		sb = ckpt_read_all(st, NULL);
		bool child = ckpt_status_num(sb, "\nPPid:\t", 10) == s->pid;
		free(sb);
		snprintf(what, sizeof(what), "a pipe (%s, %s end) also held by pid %d%s, which is not "
			 "part of the image", t, (e->fi.flags & O_ACCMODE) == O_RDONLY ? "read" : "write",
			 (int)holder, child ? ", its child" : "");
		return refuse(s, e, what, "a pipe is restored only when the image holds all of it");
	}
	f->kind = fifo ? CKPT_FILE_FIFO : CKPT_FILE_PIPE;
	/* a FIFO another process holds keeps its bytes there */
	if (!holder) {
		f->object = e->st.st_ino;
		if ((rc = ckpt_files_pipe_save(s, e, (e->fi.flags & O_DIRECT) != 0)))
			return rc;
	}
	return 0;
}

/* An anonymous inode: eventfd, timerfd, signalfd and epoll are kept (their
 * state from fdinfo), the rest refused. */
static int judge_anon(struct ckpt_fdump *s, struct ckpt_fent *e)
{
	Storm__Ckpt__File *f = e->f;
	char what[PATH_MAX + 128];
	const char *t = e->target;
	const char *k = t + 11;
	if (!strcmp(k, "[eventfd]")) {
		int sem;
		f->kind = CKPT_FILE_EVENTFD;
		if (ckpt_fdinfo_eventfd(e->info, &f->count, &sem))
			goto unreadable;
		f->semaphore = sem;
		return 0;
	}
	if (!strcmp(k, "[timerfd]")) {
		struct ckpt_timerfd tf;
		f->kind = CKPT_FILE_TIMERFD;
		if (ckpt_fdinfo_timerfd(e->info, &tf))
			goto unreadable;
		f->clockid = tf.clockid;
		f->value_ns = tf.value_ns;
		f->interval_ns = tf.interval_ns;
		f->ticks = tf.ticks;
		f->settime_flags = tf.settime_flags;
		return 0;
	}
	if (!strcmp(k, "[signalfd]")) {
		f->kind = CKPT_FILE_SIGNALFD;
		if (ckpt_fdinfo_signalfd(e->info, &f->sigmask))
			goto unreadable;
		return 0;
	}
	if (!strcmp(k, "[eventpoll]")) {
		f->kind = CKPT_FILE_EPOLL;
		return 0; /* its items once every descriptor is known */
	}
	return refuse(s, e, anon_kind(k, what, sizeof(what)), "it cannot be checkpointed");
unreadable:
	return ckpt_fail(s->err, s->errlen, -EINVAL, "pid %d: fd %d (%s): unreadable fdinfo", s->pid,
			 e->fd, t);
}

/* A file with a path: a memfd (its content saved), a regular file, a
 * directory or one of the devices reopened by path; the rest refused. */
static int judge_path(struct ckpt_fdump *s, struct ckpt_fent *e)
{
	Storm__Ckpt__File *f = e->f;
	char what[PATH_MAX + 128];
	const char *t = e->target;
	if (t[0] != '/' || !e->st_ok) {
		snprintf(what, sizeof(what), "%s (not a kind the checkpointer knows)", t);
		return refuse(s, e, what, "it cannot be checkpointed");
	}
	if (ckpt_files_is_memfd(e)) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", s->pid, e->fd);
		/* our own open file of it: reading it moves no offset of theirs */
		int mfd = open(p, O_RDONLY | O_CLOEXEC);
		snprintf(what, sizeof(what), "fd %d", e->fd);
		if (mfd < 0)
			return ckpt_fail(s->err, s->errlen, -errno, "pid %d: fd %d (%s): %s", s->pid,
					 e->fd, t, strerror(errno));
		f->kind = CKPT_FILE_MEMFD;
		f->object = e->st.st_ino;
		return ckpt_files_memfd_add(s, mfd, t, what);
	}
	if (strstr(t, " (deleted)"))
		return refuse(s, e, t, "a deleted file cannot be reopened");
	if (S_ISREG(e->st.st_mode)) {
		f->kind = CKPT_FILE_REGULAR;
		f->size = e->st.st_size;
		return 0;
	}
	if (S_ISDIR(e->st.st_mode)) {
		f->kind = CKPT_FILE_DIR;
		return 0;
	}
	if (S_ISCHR(e->st.st_mode) && device_allowed(e->st.st_rdev)) {
		f->kind = CKPT_FILE_DEVICE;
		f->rdev = e->st.st_rdev;
		return 0;
	}
	if (S_ISCHR(e->st.st_mode) && is_terminal(e->st.st_rdev)) {
		if (e->fd <= 2) {
			f->kind = CKPT_FILE_INHERITED;
			return 0;
		}
		snprintf(what, sizeof(what), "a terminal (%s)", t);
		return refuse(s, e, what, "a terminal is kept only as fd 0, 1 or 2, supplied by the restorer");
	}
	if (S_ISCHR(e->st.st_mode) || S_ISBLK(e->st.st_mode)) {
		snprintf(what, sizeof(what), "the %s device %s (%u:%u)",
			 S_ISCHR(e->st.st_mode) ? "character" : "block", t, major(e->st.st_rdev),
			 minor(e->st.st_rdev));
		return refuse(s, e, what, "only /dev/null, /dev/zero, /dev/full, /dev/random and "
				  "/dev/urandom are reopened");
	}
	snprintf(what, sizeof(what), "%s (not a kind the checkpointer knows)", t);
	return refuse(s, e, what, "it cannot be checkpointed");
}

/* Decides what e is (kind and its fields), or refuses it. holder: another
 * process holding the same pipe or FIFO (0: none seen). */
static int judge(struct ckpt_fdump *s, struct ckpt_fent *e, const struct ckpt_dump_opts *o, pid_t holder)
{
	Storm__Ckpt__File *f = e->f;
	char what[PATH_MAX + 128];
	const char *t = e->target;
	if (caller_holds(o, e)) {
		f->kind = CKPT_FILE_INHERITED;
		return 0;
	}
	if (e->fi.flags & O_ASYNC)
		return refuse(s, e, t, "signal-driven I/O (O_ASYNC) is not restored");
	if (e->fi.lock[0]) {
		snprintf(what, sizeof(what), "%s, which holds a file lock (%s)", t, e->fi.lock);
		return refuse(s, e, what, "file locks are not restored");
	}
	if (e->fi.flags & O_PATH) {
		if (t[0] != '/' || strstr(t, " (deleted)"))
			return refuse(s, e, t, "an O_PATH descriptor is reopened by its path, which this has not");
		f->kind = CKPT_FILE_OPATH;
		return 0;
	}
	if (!strncmp(t, "socket:[", 8)) {
		if (e->fd <= 2) {
			f->kind = CKPT_FILE_INHERITED;
			return 0;
		}
		socket_name(s, e->fd, what, sizeof(what));
		return refuse(s, e, what, "sockets cannot be checkpointed");
	}
	if (!strncmp(t, "pipe:[", 6) || (e->st_ok && S_ISFIFO(e->st.st_mode)))
		return judge_pipe(s, e, holder);
	if (!strncmp(t, "anon_inode:", 11))
		return judge_anon(s, e);
	if (!strncmp(t, "pidfd:", 6))
		return refuse(s, e, anon_kind(t, what, sizeof(what)), "it cannot be checkpointed");
	return judge_path(s, e);
}

/* An epoll's items, each checked to watch the file its fd holds now (the
 * kernel keys an item by file and number: one whose fd was closed or reused
 * since could not be added again). */
static int epoll_items(struct ckpt_fdump *s, struct ckpt_fent *e, const struct ckpt_fent *all, size_t n)
{
	struct ckpt_epoll_item *it;
	int ni = ckpt_fdinfo_epoll(e->info, &it);
	if (ni < 0)
		return ckpt_fail(s->err, s->errlen, ni, "pid %d: fd %d (%s): unreadable fdinfo", s->pid,
				 e->fd, e->target);
	Storm__Ckpt__File *f = e->f;
	f->items = calloc(ni ? ni : 1, sizeof(*f->items));
	int rc = f->items ? 0 : -ENOMEM;
	for (int k = 0; k < ni && !rc; k++) {
		bool open_there = false;
		for (size_t j = 0; j < n; j++)
			open_there |= all[j].fd == it[k].tfd;
		uint32_t toff = 0; /* items with this number before it */
		for (int q = 0; q < k; q++)
			toff += it[q].tfd == it[k].tfd;
		struct kcmp_epoll_slot slot = { (uint32_t)e->fd, (uint32_t)it[k].tfd, toff };
		long same = open_there ? kcmp(s->pid, s->pid, KCMP_EPOLL_TFD, it[k].tfd,
					      (unsigned long)&slot) : 1;
		if (same != 0 && !(same < 0 && errno == ENOSYS)) {
			char what[96];
			snprintf(what, sizeof(what), "an epoll instance watching fd %d", it[k].tfd);
			rc = refuse(s, e, what, "that fd was closed or holds another file since it was "
				    "added, so the watch cannot be made again");
			break;
		}
		Storm__Ckpt__EpollItem *pi = malloc(sizeof(*pi));
		if (!pi) {
			rc = -ENOMEM;
			break;
		}
		storm__ckpt__epoll_item__init(pi);
		pi->tfd = it[k].tfd;
		pi->events = it[k].events;
		pi->data = it[k].data;
		f->items[f->n_items++] = pi;
	}
	free(it);
	return rc;
}

static int by_fd(const void *a, const void *b)
{
	return ((const struct ckpt_fent *)a)->fd - ((const struct ckpt_fent *)b)->fd;
}

/* Reads what /proc says of every descriptor: ents (sorted by fd). */
static int read_ents(struct ckpt_fdump *s, struct ckpt_fent **ents, size_t *n)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", s->pid);
	DIR *dp = opendir(dir);
	if (!dp)
		return ckpt_fail(s->err, s->errlen, -errno, "pid %d: %s: %s", s->pid, dir,
				 strerror(errno));
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(dp)) && !rc) {
		if (de->d_name[0] == '.')
			continue;
		if ((rc = ckpt_files_grow(ents, *n, sizeof(**ents))))
			break;
		struct ckpt_fent *e = &(*ents)[*n];
		memset(e, 0, sizeof(*e));
		e->fd = atoi(de->d_name);
		char p[96];
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", s->pid, e->fd);
		ssize_t l = readlink(p, e->target, sizeof(e->target) - 1);
		if (l < 0)
			continue; /* closed meanwhile (it is stopped: by a dying thread) */
		e->target[l] = 0;
		e->st_ok = stat(p, &e->st) == 0;
		snprintf(p, sizeof(p), "/proc/%d/fdinfo/%d", s->pid, e->fd);
		e->info = ckpt_read_all(p, NULL);
		if (!e->info)
			continue;
		(*n)++;
		if (ckpt_fdinfo_common(e->info, &e->fi))
			rc = ckpt_fail(s->err, s->errlen, -EINVAL, "pid %d: fd %d: unreadable fdinfo",
				       s->pid, e->fd);
		else if (e->fd > 65535)
			rc = ckpt_fail(s->err, s->errlen, -ENOTSUP,
				       "pid %d: fd %d: descriptors above 65535 are not supported",
				       s->pid, e->fd);
	}
	closedir(dp);
	if (*n)
		qsort(*ents, *n, sizeof(**ents), by_fd);
	return rc;
}

/* A File in ft for each entry, every one before any is judged, so that a
 * refusal frees what was made. */
static int make_files(struct ckpt_fdump *s, struct ckpt_fent *ents, size_t n)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	for (size_t i = 0; i < n; i++) {
		Storm__Ckpt__File *f = malloc(sizeof(*f));
		if (!f)
			return -ENOMEM;
		storm__ckpt__file__init(f);
		f->fd = ents[i].fd;
		f->path = strdup(ents[i].target);
		f->flags = ents[i].fi.flags;
		f->pos = ents[i].fi.pos;
		ents[i].f = f;
		ft->files[ft->n_files++] = f;
		if (!f->path)
			return -ENOMEM;
	}
	return 0;
}

/* dups: one open file at several numbers (kcmp) */
static void find_dups(pid_t pid, struct ckpt_fent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (ents[i].st_ok && ents[j].st_ok && !ents[j].f->dup &&
			    ents[i].st.st_dev == ents[j].st.st_dev &&
			    ents[i].st.st_ino == ents[j].st.st_ino &&
			    kcmp(pid, pid, KCMP_FILE, ents[j].fd, ents[i].fd) == 0) {
				ents[i].f->dup = 1;
				ents[i].f->dup_of = ents[j].fd;
				break;
			}
}

/* Every entry but the dups judged, knowing who else holds its pipe or FIFO. */
static int judge_all(struct ckpt_fdump *s, const struct ckpt_dump_opts *o, struct ckpt_fent *ents,
		     size_t n)
{
	uint64_t *inos = calloc(n ? n : 1, sizeof(*inos));
	pid_t *holders = calloc(n ? n : 1, sizeof(*holders));
	size_t np = 0;
	bool fifos = false;
	int rc = inos && holders ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++)
		if (ents[i].st_ok && S_ISFIFO(ents[i].st.st_mode)) {
			inos[np++] = ents[i].st.st_ino;
			fifos |= ents[i].target[0] == '/';
		}
	if (!rc && np)
		pipe_holders(s->pid, s->tree, s->ntree, inos, holders, np, fifos);
	for (size_t i = 0; !rc && i < n; i++) {
		pid_t h = 0;
		for (size_t k = 0; k < np; k++)
			if (ents[i].st_ok && inos[k] == ents[i].st.st_ino)
				h = holders[k];
		if (!ents[i].f->dup)
			rc = judge(s, &ents[i], o, h);
	}
	free(inos);
	free(holders);
	return rc;
}

/* Once every open file is judged: a dup is of its kind, an epoll's items
 * are read. */
static int judge_dups_and_epolls(struct ckpt_fdump *s, struct ckpt_fent *ents, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		Storm__Ckpt__File *f = ents[i].f;
		if (f->dup) {
			const Storm__Ckpt__File *of = ckpt_file_by_fd(s->ft, f->dup_of);
			f->kind = of->kind;
			f->object = of->object;
		} else if (f->kind == CKPT_FILE_EPOLL) {
			rc = epoll_items(s, &ents[i], ents, n);
		}
	}
	return rc;
}

/* a regular file's open file shared over a fork is reopened by each
 * process at restore, so their offsets are one no more: only appends
 * (write-only, O_APPEND) come out the same */
static int refuse_shared_offsets(struct ckpt_fdump *s, struct ckpt_fent *ents, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		Storm__Ckpt__File *f = ents[i].f;
		pid_t q;
		if (f->dup || f->kind != CKPT_FILE_REGULAR ||
		    ((f->flags & O_ACCMODE) == O_WRONLY && (f->flags & O_APPEND)) ||
		    !(q = open_file_sharer(s, &ents[i])))
			continue;
		char what[PATH_MAX + 96];
		snprintf(what, sizeof(what), "%s, one open file with pid %d's", ents[i].target, (int)q);
		rc = refuse(s, &ents[i], what,
			    "processes of a tree sharing a regular file's offset are restored each "
			    "with its own (only write-only O_APPEND files are kept)");
	}
	return rc;
}

/* a dup of a stdio pipe, terminal or socket above 2 is one too */
static int refuse_inherited_dups(struct ckpt_fdump *s, const struct ckpt_dump_opts *o,
				 struct ckpt_fent *ents, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		if (ents[i].f->dup && ents[i].f->kind == CKPT_FILE_INHERITED && ents[i].fd > 2) {
			bool caller = false;
			for (size_t c = 0; c < o->ncaller_fds; c++)
				caller |= o->caller_fds[c].fd == ents[i].f->dup_of;
			if (!caller)
				rc = ckpt_fail(s->err, s->errlen, -ENOTSUP,
					       "pid %d: fd %d is %s, a dup of fd %d: a pipe, terminal or "
					       "socket is kept only as fd 0, 1 or 2, supplied by the restorer",
					       s->pid, ents[i].fd, ents[i].target, ents[i].f->dup_of);
		}
	return rc;
}

int ckpt_files_dump(pid_t pid, const struct ckpt_dump_opts *o, const pid_t *tree, size_t ntree,
		    Storm__Ckpt__FileTable *ft, struct ckpt_fdump **out, char *err, size_t errlen)
{
	struct ckpt_fdump *s = calloc(1, sizeof(*s));
	*out = s;
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->tree = tree;
	s->ntree = ntree;
	s->ft = ft;
	s->err = err;
	s->errlen = errlen;
	struct ckpt_fent *ents = NULL;
	size_t n = 0;
	int rc = read_ents(s, &ents, &n);
	ft->files = calloc(n ? n : 1, sizeof(*ft->files));
	if (!rc && !ft->files)
		rc = -ENOMEM;
	if (!rc)
		rc = make_files(s, ents, n);
	if (!rc) {
		find_dups(pid, ents, n);
		rc = judge_all(s, o, ents, n);
	}
	if (!rc)
		rc = judge_dups_and_epolls(s, ents, n);
	if (!rc && s->ntree > 1)
		rc = refuse_shared_offsets(s, ents, n);
	if (!rc)
		rc = refuse_inherited_dups(s, o, ents, n);
	for (size_t i = 0; i < n; i++)
		free(ents[i].info);
	free(ents);
	return rc;
}
