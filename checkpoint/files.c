/* The open descriptors of a checkpointed process: each one is saved and
 * restored, or the dump is refused naming it. What each kind becomes is in
 * docs/design/checkpoint.md ("Descriptors"); the refused kinds are listed in
 * docs/RELIABILITY.md.
 *
 * Dump: /proc/PID/fd and fdinfo say what each is; kcmp which share one open
 * file (dups) and which files an epoll watches; bytes buffered in a pipe are
 * copied with tee() from a descriptor of it opened through /proc (not taken
 * out of it); a memfd's content is read through such a descriptor while the
 * process is stopped. Nothing is injected into the process, so a refusal
 * leaves it as it was.
 *
 * Restore: the new process, still a fork of the restorer (child_main),
 * creates every descriptor at its number; the restorer then fills its memfds
 * through /proc/PID/fd, maps memfd and shared anonymous areas with injected
 * calls (ckpt_files_map_area) and seals the memfds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "fdinfo.h"
#include "internal.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* ---- dump */

struct ckpt_fdump {
	pid_t pid;
	const pid_t *tree;  /* the image's other processes */
	size_t ntree;
	Storm__Ckpt__FileTable *ft;
	int *memfd_fd;     /* ours, per ft->memfds: its content is read through it */
	char *err;
	size_t errlen;
};

/* One descriptor while it is judged. */
struct ent {
	int fd;
	char target[PATH_MAX];
	struct stat st;
	bool st_ok;
	struct ckpt_fdinfo fi;
	char *info;
	Storm__Ckpt__File *f;
};

static int refuse(struct ckpt_fdump *s, const struct ent *e, const char *what, const char *why)
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
static pid_t open_file_sharer(const struct ckpt_fdump *s, const struct ent *e)
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

static Storm__Ckpt__Pipe *pipe_find(Storm__Ckpt__FileTable *ft, uint64_t id)
{
	for (size_t i = 0; i < ft->n_pipes; i++)
		if (ft->pipes[i]->id == id)
			return ft->pipes[i];
	return NULL;
}

static int grow(void *arrp, size_t n, size_t size)
{
	void **arr = arrp;
	void *na = realloc(*arr, (n + 1) * size);
	if (!na)
		return -ENOMEM;
	*arr = na;
	return 0;
}

/* The bytes buffered in pipe (or FIFO) id, copied with tee() from a
 * descriptor of it opened through /proc (so not taken out), packet by
 * packet for a pipe in packet mode. */
static int pipe_save(struct ckpt_fdump *s, const struct ent *e, bool packets)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	if (pipe_find(ft, e->st.st_ino))
		return 0;
	Storm__Ckpt__Pipe *p = malloc(sizeof(*p));
	if (!p || grow(&ft->pipes, ft->n_pipes, sizeof(*ft->pipes))) {
		free(p);
		return -ENOMEM;
	}
	storm__ckpt__pipe__init(p);
	p->id = e->st.st_ino;
	ft->pipes[ft->n_pipes++] = p;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", s->pid, e->fd);
	int rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), sp[2] = { -1, -1 }, avail = 0;
	int size = rd >= 0 ? fcntl(rd, F_GETPIPE_SZ) : -1;
	int rc = 0;
	if (rd < 0 || size < 0 || ioctl(rd, FIONREAD, &avail) < 0) {
		rc = -errno;
		goto out;
	}
	p->size = (uint32_t)size;
	if (!avail)
		goto out;
	p->data.data = malloc(avail);
	if (!p->data.data) {
		rc = -ENOMEM;
		goto out;
	}
	if (pipe2(sp, O_CLOEXEC) < 0 || fcntl(sp[1], F_SETPIPE_SZ, size) < 0) {
		rc = -errno;
		goto out;
	}
	ssize_t t = tee(rd, sp[1], (size_t)avail, SPLICE_F_NONBLOCK);
	if (t != avail) {
		rc = t < 0 ? -errno : -EAGAIN;
		goto out;
	}
	close(sp[1]);
	sp[1] = -1;
	while (p->data.len < (size_t)avail) {
		ssize_t r = read(sp[0], p->data.data + p->data.len, (size_t)avail - p->data.len);
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			goto out;
		}
		/* a pipe in packet mode gives one packet a read */
		if (packets) {
			if (grow(&p->packets, p->n_packets, sizeof(*p->packets))) {
				rc = -ENOMEM;
				goto out;
			}
			p->packets[p->n_packets++] = (uint32_t)r;
		}
		p->data.len += r;
	}
out:
	if (rd >= 0)
		close(rd);
	for (int i = 0; i < 2; i++)
		if (sp[i] >= 0)
			close(sp[i]);
	if (rc)
		return ckpt_fail(s->err, s->errlen, rc, "pid %d: fd %d: reading what is buffered in %s: %s",
				 s->pid, e->fd, e->target, strerror(-rc));
	return 0;
}

static bool is_memfd(const struct ent *e)
{
	size_t l = strlen(e->target);
	return e->st_ok && S_ISREG(e->st.st_mode) && !strncmp(e->target, "/memfd:", 7) &&
	       l >= 17 && !strcmp(e->target + l - 10, " (deleted)");
}

/* A memfd of the image, from our descriptor of it (fd, taken over) whose
 * /proc name is target ("/memfd:NAME (deleted)"): its name, size, seals
 * and the pages that hold data (SEEK_DATA: a sparse memfd saves its holes
 * as nothing). */
static int memfd_add(struct ckpt_fdump *s, int fd, const char *target, const char *where)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	struct stat sb;
	struct statfs sf;
	if (fstat(fd, &sb) < 0 || fstatfs(fd, &sf) < 0) {
		close(fd);
		return ckpt_fail(s->err, s->errlen, -errno, "pid %d: %s: %s", s->pid, where,
				 strerror(errno));
	}
	for (size_t i = 0; i < ft->n_memfds; i++)
		if (ft->memfds[i]->id == sb.st_ino) {
			close(fd);
			return 0;
		}
	if (sf.f_type == HUGETLBFS_MAGIC) {
		close(fd);
		return ckpt_fail(s->err, s->errlen, -ENOTSUP,
				 "pid %d: %s is a memfd of huge pages (%s): not supported", s->pid,
				 where, target);
	}
	Storm__Ckpt__Memfd *m = malloc(sizeof(*m));
	if (!m || grow(&ft->memfds, ft->n_memfds, sizeof(*ft->memfds)) ||
	    grow(&s->memfd_fd, ft->n_memfds, sizeof(*s->memfd_fd))) {
		free(m);
		close(fd);
		return -ENOMEM;
	}
	storm__ckpt__memfd__init(m);
	m->id = sb.st_ino;
	m->pages_section = -1;
	m->name = strndup(target + 7, strlen(target) - 17);
	m->size = sb.st_size;
	int seals = fcntl(fd, F_GET_SEALS);
	m->seals = seals > 0 ? (uint32_t)seals : 0;
	s->memfd_fd[ft->n_memfds] = fd;
	ft->memfds[ft->n_memfds++] = m;
	if (!m->name)
		return -ENOMEM;
	for (off_t at = 0; at < (off_t)m->size;) {
		off_t data = lseek(fd, at, SEEK_DATA);
		if (data < 0)
			break; /* ENXIO: only a hole is left */
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			hole = (off_t)m->size;
		uint64_t first = (uint64_t)data / CKPT_PAGE;
		uint64_t end = ((uint64_t)hole + CKPT_PAGE - 1) / CKPT_PAGE;
		if (m->n_runs && m->runs[m->n_runs - 1]->page + m->runs[m->n_runs - 1]->count >= first) {
			Storm__Ckpt__Run *last = m->runs[m->n_runs - 1];
			if (end > last->page + last->count)
				last->count = end - last->page;
		} else {
			Storm__Ckpt__Run *r = malloc(sizeof(*r));
			if (!r || grow(&m->runs, m->n_runs, sizeof(*m->runs))) {
				free(r);
				return -ENOMEM;
			}
			storm__ckpt__run__init(r);
			r->page = first;
			r->count = end - first;
			m->runs[m->n_runs++] = r;
		}
		at = hole;
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
static bool caller_holds(const struct ckpt_dump_opts *o, const struct ent *e)
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
static int judge_pipe(struct ckpt_fdump *s, struct ent *e, pid_t holder)
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
		if ((rc = pipe_save(s, e, (e->fi.flags & O_DIRECT) != 0)))
			return rc;
	}
	return 0;
}

/* An anonymous inode: eventfd, timerfd, signalfd and epoll are kept (their
 * state from fdinfo), the rest refused. */
static int judge_anon(struct ckpt_fdump *s, struct ent *e)
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
static int judge_path(struct ckpt_fdump *s, struct ent *e)
{
	Storm__Ckpt__File *f = e->f;
	char what[PATH_MAX + 128];
	const char *t = e->target;
	if (t[0] != '/' || !e->st_ok) {
		snprintf(what, sizeof(what), "%s (not a kind the checkpointer knows)", t);
		return refuse(s, e, what, "it cannot be checkpointed");
	}
	if (is_memfd(e)) {
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
		return memfd_add(s, mfd, t, what);
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
static int judge(struct ckpt_fdump *s, struct ent *e, const struct ckpt_dump_opts *o, pid_t holder)
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
static int epoll_items(struct ckpt_fdump *s, struct ent *e, const struct ent *all, size_t n)
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
	return ((const struct ent *)a)->fd - ((const struct ent *)b)->fd;
}

/* Reads what /proc says of every descriptor: ents (sorted by fd). */
static int read_ents(struct ckpt_fdump *s, struct ent **ents, size_t *n)
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
		if ((rc = grow(ents, *n, sizeof(**ents))))
			break;
		struct ent *e = &(*ents)[*n];
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
	struct ent *ents = NULL;
	size_t n = 0;
	int rc = read_ents(s, &ents, &n);
	ft->files = calloc(n ? n : 1, sizeof(*ft->files));
	if (!rc && !ft->files)
		rc = -ENOMEM;
	/* every entry first, so a refusal frees what was made */
	for (size_t i = 0; !rc && i < n; i++) {
		Storm__Ckpt__File *f = malloc(sizeof(*f));
		if (!f) {
			rc = -ENOMEM;
			break;
		}
		storm__ckpt__file__init(f);
		f->fd = ents[i].fd;
		f->path = strdup(ents[i].target);
		f->flags = ents[i].fi.flags;
		f->pos = ents[i].fi.pos;
		ents[i].f = f;
		ft->files[ft->n_files++] = f;
		if (!f->path)
			rc = -ENOMEM;
	}
	/* dups: one open file at several numbers (kcmp) */
	for (size_t i = 0; !rc && i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (ents[i].st_ok && ents[j].st_ok && !ents[j].f->dup &&
			    ents[i].st.st_dev == ents[j].st.st_dev &&
			    ents[i].st.st_ino == ents[j].st.st_ino &&
			    kcmp(pid, pid, KCMP_FILE, ents[j].fd, ents[i].fd) == 0) {
				ents[i].f->dup = 1;
				ents[i].f->dup_of = ents[j].fd;
				break;
			}
	/* who else holds the pipes and FIFOs */
	uint64_t *inos = calloc(n ? n : 1, sizeof(*inos));
	pid_t *holders = calloc(n ? n : 1, sizeof(*holders));
	size_t np = 0;
	bool fifos = false;
	if (!rc && (!inos || !holders))
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++)
		if (ents[i].st_ok && S_ISFIFO(ents[i].st.st_mode)) {
			inos[np++] = ents[i].st.st_ino;
			fifos |= ents[i].target[0] == '/';
		}
	if (!rc && np)
		pipe_holders(pid, s->tree, s->ntree, inos, holders, np, fifos);
	for (size_t i = 0; !rc && i < n; i++) {
		pid_t h = 0;
		for (size_t k = 0; k < np; k++)
			if (ents[i].st_ok && inos[k] == ents[i].st.st_ino)
				h = holders[k];
		if (!ents[i].f->dup)
			rc = judge(s, &ents[i], o, h);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		Storm__Ckpt__File *f = ents[i].f;
		if (f->dup) {
			const Storm__Ckpt__File *of = ckpt_file_by_fd(ft, f->dup_of);
			f->kind = of->kind;
			f->object = of->object;
		} else if (f->kind == CKPT_FILE_EPOLL) {
			rc = epoll_items(s, &ents[i], ents, n);
		}
	}
	/* a regular file's open file shared over a fork is reopened by each
	 * process at restore, so their offsets are one no more: only appends
	 * (write-only, O_APPEND) come out the same */
	for (size_t i = 0; !rc && s->ntree > 1 && i < n; i++) {
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
	/* a dup of a stdio pipe, terminal or socket above 2 is one too */
	for (size_t i = 0; !rc && i < n; i++)
		if (ents[i].f->dup && ents[i].f->kind == CKPT_FILE_INHERITED && ents[i].fd > 2) {
			bool caller = false;
			for (size_t c = 0; c < o->ncaller_fds; c++)
				caller |= o->caller_fds[c].fd == ents[i].f->dup_of;
			if (!caller)
				rc = ckpt_fail(err, errlen, -ENOTSUP,
					       "pid %d: fd %d is %s, a dup of fd %d: a pipe, terminal or "
					       "socket is kept only as fd 0, 1 or 2, supplied by the restorer",
					       pid, ents[i].fd, ents[i].target, ents[i].f->dup_of);
		}
	free(inos);
	free(holders);
	for (size_t i = 0; i < n; i++)
		free(ents[i].info);
	free(ents);
	return rc;
}

int ckpt_files_area(struct ckpt_fdump *s, struct ckpt_map *m)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	if (m->kind != CKPT_VMA_MEMFD && m->kind != CKPT_VMA_EXTERNAL)
		return 0;
	for (size_t i = 0; i < ft->n_memfds; i++)
		if (ft->memfds[i]->id == m->ino) {
			m->kind = CKPT_VMA_MEMFD; /* the process's own, saved with it */
			return 0;
		}
	if (m->kind == CKPT_VMA_EXTERNAL)
		return 0;
	/* a memfd only mapped: its descriptor was closed */
	char p[96], what[96];
	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", s->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	snprintf(what, sizeof(what), "area %#llx-%#llx", (unsigned long long)m->start,
		 (unsigned long long)m->end);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ckpt_fail(s->err, s->errlen, -errno,
				 "pid %d: %s maps the memfd %s, which no descriptor holds (reading it "
				 "through %s: %s)", s->pid, what, m->path, p, strerror(errno));
	char target[PATH_MAX + 16];
	snprintf(target, sizeof(target), "%s (deleted)", m->path);
	return memfd_add(s, fd, target, what);
}

void ckpt_files_plan_data(struct ckpt_fdump *s, uint32_t *npsec)
{
	for (size_t i = 0; s && i < s->ft->n_memfds; i++)
		if (s->ft->memfds[i]->n_runs)
			s->ft->memfds[i]->pages_section = (int32_t)(*npsec)++;
}

bool ckpt_files_need_stop(const struct ckpt_fdump *s)
{
	for (size_t i = 0; s && i < s->ft->n_memfds; i++)
		if (s->ft->memfds[i]->n_runs)
			return true;
	return false;
}

int ckpt_files_write_data(struct ckpt_fdump *s, int out, struct ckpt_sec *secs, uint64_t *off,
			  const char *path)
{
	const size_t BUF = 1 << 20;
	unsigned char *buf = NULL;
	XXH3_state_t *xs = NULL;
	int rc = 0;
	for (size_t i = 0; s && !rc && i < s->ft->n_memfds; i++) {
		Storm__Ckpt__Memfd *m = s->ft->memfds[i];
		if (m->pages_section < 0)
			continue;
		if (!buf && (!(buf = malloc(BUF)) || !(xs = XXH3_createState()))) {
			rc = -ENOMEM;
			break;
		}
		struct ckpt_sec *sec = &secs[m->pages_section];
		sec->type = CKPT_SEC_PAGES;
		sec->index = (uint32_t)m->pages_section;
		sec->offset = *off;
		XXH3_64bits_reset(xs);
		for (size_t r = 0; !rc && r < m->n_runs; r++) {
			uint64_t at = m->runs[r]->page * CKPT_PAGE;
			for (uint64_t left = m->runs[r]->count * CKPT_PAGE; left && !rc;) {
				size_t want = left < BUF ? left : BUF;
				ssize_t got = pread(s->memfd_fd[i], buf, want, (off_t)at);
				if (got < 0) {
					rc = ckpt_fail(s->err, s->errlen, -errno, "pid %d: memfd %s: %s",
						       s->pid, m->name, strerror(errno));
					break;
				}
				/* the last page past its size: zeros */
				memset(buf + got, 0, want - (size_t)got);
				XXH3_64bits_update(xs, buf, want);
				for (size_t w = 0; w < want && !rc;) {
					ssize_t k = write(out, buf + w, want - w);
					if (k < 0 && errno != EINTR)
						rc = ckpt_fail(s->err, s->errlen, -errno, "%s: %s", path,
							       strerror(errno));
					else if (k > 0)
						w += (size_t)k;
				}
				at += want;
				left -= want;
				*off += want;
			}
		}
		sec->length = *off - sec->offset;
		sec->hash = XXH3_64bits_digest(xs);
	}
	if (xs)
		XXH3_freeState(xs);
	free(buf);
	return rc;
}

void ckpt_files_dump_free(struct ckpt_fdump *s, Storm__Ckpt__FileTable *ft)
{
	for (size_t i = 0; i < ft->n_files; i++) {
		Storm__Ckpt__File *f = ft->files[i];
		for (size_t k = 0; k < f->n_items; k++)
			free(f->items[k]);
		free(f->items);
		free(f->path);
		free(f);
	}
	free(ft->files);
	for (size_t i = 0; i < ft->n_pipes; i++) {
		free(ft->pipes[i]->data.data);
		free(ft->pipes[i]->packets);
		free(ft->pipes[i]);
	}
	free(ft->pipes);
	for (size_t i = 0; i < ft->n_memfds; i++) {
		for (size_t r = 0; r < ft->memfds[i]->n_runs; r++)
			free(ft->memfds[i]->runs[r]);
		free(ft->memfds[i]->runs);
		free(ft->memfds[i]->name);
		free(ft->memfds[i]);
		if (s)
			close(s->memfd_fd[i]);
	}
	free(ft->memfds);
	if (s)
		free(s->memfd_fd);
	free(s);
}

/* ---- restore: in the new process (child_main) */

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

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The bytes it had, written back (packet by packet in packet mode). */
static int pipe_fill(int w, const Storm__Ckpt__Pipe *p)
{
	if (p->size && fcntl(w, F_GETPIPE_SZ) != (int)p->size &&
	    fcntl(w, F_SETPIPE_SZ, (int)p->size) < 0)
		return -1;
	size_t at = 0;
	for (size_t k = 0; k < p->n_packets; k++) {
		if (write_all(w, p->data.data + at, p->packets[k]))
			return -1;
		at += p->packets[k];
	}
	return write_all(w, p->data.data + at, p->data.len - at);
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
		if (pe[k].end[0] < 0 || pe[k].end[1] < 0 || pipe_fill(pe[k].end[1], p))
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
			if (pipe_fill(keep, c->ft->pipes[k]) < 0) {
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

/* ---- restore: in the restorer, driving the new process */

bool ckpt_files_maps_area(const Storm__Ckpt__Vma *v)
{
	return v->kind == CKPT_VMA_MEMFD || (v->kind == CKPT_VMA_ANON && v->shared);
}

static int inj(struct ckpt_frestore *r, const char *what, long *ret, long nr, int nargs, long a0,
	       long a1, long a2, long a3, long a4, long a5)
{
	long x;
	int rc = ckpt_inject(r->t, r->base, nr, &x, 0, nargs, a0, a1, a2, a3, a4, a5);
	if (!rc && (unsigned long)x > -4096ul)
		rc = (int)x;
	if (rc)
		return ckpt_fail(r->err, r->errlen, rc, "%s: restoring: %s: %s", r->image, what,
				 strerror(-rc));
	if (ret)
		*ret = x;
	return 0;
}

static size_t memfd_index(const Storm__Ckpt__FileTable *ft, uint64_t id)
{
	size_t k = 0;
	while (k < ft->n_memfds && ft->memfds[k]->id != id)
		k++;
	return k;
}

int ckpt_files_restore_start(struct ckpt_frestore *r)
{
	const Storm__Ckpt__FileTable *ft = r->ft;
	r->memfd = calloc(ft->n_memfds + 1, sizeof(*r->memfd));
	if (!r->memfd)
		return -ENOMEM;
	for (size_t k = 0; k < ft->n_memfds; k++)
		r->memfd[k] = -1;
	const size_t BUF = 1 << 20;
	char *buf = NULL, name[32];
	XXH3_state_t *xs = XXH3_createState();
	int rc = xs ? 0 : -ENOMEM;
	for (size_t k = 0; !rc && k < ft->n_memfds; k++) {
		const Storm__Ckpt__Memfd *m = ft->memfds[k];
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", r->t->pid, r->maxfd + 3 + (int)k);
		r->memfd[k] = open(p, O_RDWR | O_CLOEXEC);
		if (r->memfd[k] < 0) {
			rc = ckpt_fail(r->err, r->errlen, -errno, "%s: restoring memfd %s: %s", r->image,
				       m->name, strerror(errno));
			break;
		}
		/* a memfd of the tree that another process's restore filled */
		bool done = false;
		for (size_t i = 0; r->sh && i < r->sh->nfilled; i++)
			done |= r->sh->filled[i] == m->id;
		if (done)
			continue;
		if (r->sh && ckpt_files_shared(r->sh, CKPT_SH_MEMFD, m->id)) {
			uint64_t *nf = realloc(r->sh->filled, (r->sh->nfilled + 1) * sizeof(*nf));
			if (!nf) {
				rc = -ENOMEM;
				break;
			}
			r->sh->filled = nf;
			nf[r->sh->nfilled++] = m->id;
		}
		const struct ckpt_sec *s = NULL;
		for (uint32_t i = 0; m->pages_section >= 0 && i < r->h->nsec; i++)
			if (r->h->secs[i].type == CKPT_SEC_PAGES &&
			    ckpt_sec_local(r->h, &r->h->secs[i]) == (uint32_t)m->pages_section)
				s = &r->h->secs[i];
		if (s && !buf && !(buf = malloc(BUF)))
			rc = -ENOMEM;
		XXH3_64bits_reset(xs);
		uint64_t off = s ? s->offset : 0;
		for (size_t i = 0; s && !rc && i < m->n_runs; i++) {
			uint64_t at = m->runs[i]->page * CKPT_PAGE;
			for (uint64_t left = m->runs[i]->count * CKPT_PAGE; left && !rc;) {
				size_t n = left < BUF ? left : BUF;
				ssize_t got = pread(r->imgfd, buf, n, (off_t)off);
				if (got != (ssize_t)n) {
					rc = ckpt_fail(r->err, r->errlen, -EIO, "%s: section %s: %s",
						       r->image, ckpt_sec_name(s, name, sizeof(name)),
						       got < 0 ? strerror(errno) : "short read");
					break;
				}
				XXH3_64bits_update(xs, buf, n);
				/* not past its size: the last page is only partly the memfd's */
				size_t w = at >= m->size ? 0 : m->size - at < n ? m->size - at : n;
				if (w && pwrite(r->memfd[k], buf, w, (off_t)at) != (ssize_t)w)
					rc = ckpt_fail(r->err, r->errlen, -errno,
						       "%s: restoring memfd %s: %s", r->image, m->name,
						       strerror(errno));
				off += n;
				at += n;
				left -= n;
			}
		}
		if (!rc && s && XXH3_64bits_digest(xs) != s->hash)
			rc = ckpt_fail(r->err, r->errlen, -EINVAL,
				       "%s: section %s: checksum mismatch (corrupted)", r->image,
				       ckpt_sec_name(s, name, sizeof(name)));
		/* before its areas are mapped (a write seal makes a read-only
		 * shared mapping of it one that may never write, as it was);
		 * a future-write seal after them, which would refuse a writable
		 * one made before it */
		unsigned late = m->seals & F_SEAL_FUTURE_WRITE ? F_SEAL_FUTURE_WRITE | F_SEAL_SEAL : 0;
		unsigned early = m->seals & ~late;
		if (!rc && early && fcntl(r->memfd[k], F_ADD_SEALS, early) < 0)
			rc = ckpt_fail(r->err, r->errlen, -errno, "%s: sealing memfd %s: %s", r->image,
				       m->name, strerror(errno));
	}
	XXH3_freeState(xs);
	free(buf);
	return rc;
}

/* A range of len bytes free in the image and in the new process now. */
static uint64_t free_range(struct ckpt_frestore *r, uint64_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", r->t->pid);
	char *maps = ckpt_read_all(path, NULL);
	if (!maps)
		return 0;
	uint64_t found = 0;
	for (uint64_t a = 0x10000000ull; !found && a + len < 0x7f0000000000ull; a += 0x1000000ull) {
		bool ok = true;
		for (size_t i = 0; ok && i < r->vt->n_vmas; i++)
			ok = !(a < r->vt->vmas[i]->end && r->vt->vmas[i]->start < a + len);
		for (char *l = maps; ok && *l;) {
			unsigned long long s, e;
			if (sscanf(l, "%llx-%llx", &s, &e) == 2)
				ok = !(a < e && s < a + len);
			char *nl = strchr(l, '\n');
			l = nl ? nl + 1 : l + strlen(l);
		}
		if (ok)
			found = a;
	}
	free(maps);
	return found;
}

int ckpt_files_map_area(struct ckpt_frestore *r, size_t vi)
{
	const Storm__Ckpt__VmaTable *vt = r->vt;
	const Storm__Ckpt__Vma *v = vt->vmas[vi];
	long got;
	if (v->kind == CKPT_VMA_MEMFD) {
		size_t k = memfd_index(r->ft, v->shm_id);
		int rc = inj(r, "mmap of a memfd", &got, SYS_mmap, 6, (long)v->start,
			     (long)(v->end - v->start), (long)v->prot,
			     MAP_FIXED | (v->shared ? MAP_SHARED : MAP_PRIVATE),
			     r->maxfd + 3 + (long)k, (long)v->offset);
		return rc;
	}
	/* shared anonymous: one object for the areas of one id, each area at its
	 * place in it (mremap of size 0 maps the same pages again); writable
	 * until its pages are written, ckpt_files_areas_done sets the rest */
	for (size_t j = 0; v->shm_id && j < vi; j++)
		if (vt->vmas[j]->shm_id == v->shm_id && ckpt_files_maps_area(vt->vmas[j]))
			return 0; /* mapped with the first */
	/* the tree's: the first process mapped it before the fork, and every
	 * one has it at so->addr (unmapped by the caller once all is placed) */
	const struct ckpt_shobj *so = v->shm_id ? ckpt_files_shared(r->sh, CKPT_SH_ANON, v->shm_id)
					      : NULL;
	uint64_t size = 0;
	for (size_t j = vi; j < vt->n_vmas; j++) {
		const Storm__Ckpt__Vma *w = vt->vmas[j];
		if (j == vi || (v->shm_id && w->shm_id == v->shm_id && w->kind == v->kind && w->shared))
			if (w->offset + (w->end - w->start) > size)
				size = w->offset + (w->end - w->start);
	}
	uint64_t tmp = so ? so->addr : free_range(r, size);
	if (!tmp)
		return ckpt_fail(r->err, r->errlen, -ENOMEM, "%s: restoring: no free range of %llu bytes",
				 r->image, (unsigned long long)size);
	int rc = so ? 0 : inj(r, "mmap of shared memory", &got, SYS_mmap, 6, (long)tmp, (long)size,
			      PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (size_t j = vi; !rc && j < vt->n_vmas; j++) {
		const Storm__Ckpt__Vma *w = vt->vmas[j];
		if (j != vi && !(v->shm_id && w->shm_id == v->shm_id && w->kind == v->kind && w->shared))
			continue;
		rc = inj(r, "mremap of shared memory", &got, SYS_mremap, 5, (long)(tmp + w->offset), 0,
			 (long)(w->end - w->start), MREMAP_MAYMOVE | MREMAP_FIXED, (long)w->start, 0);
	}
	if (!rc && !so)
		rc = inj(r, "munmap", NULL, SYS_munmap, 2, (long)tmp, (long)size, 0, 0, 0, 0);
	return rc;
}

int ckpt_files_areas_done(struct ckpt_frestore *r)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < r->vt->n_vmas; i++) {
		const Storm__Ckpt__Vma *v = r->vt->vmas[i];
		if (v->kind == CKPT_VMA_ANON && v->shared && v->prot != (PROT_READ | PROT_WRITE))
			rc = inj(r, "mprotect", NULL, SYS_mprotect, 3, (long)v->start,
				 (long)(v->end - v->start), (long)v->prot, 0, 0, 0);
	}
	for (size_t k = 0; !rc && k < r->ft->n_memfds; k++)
		rc = inj(r, "close", NULL, SYS_close, 1, r->maxfd + 3 + (long)k, 0, 0, 0, 0, 0);
	return rc;
}

int ckpt_files_restore_finish(struct ckpt_frestore *r)
{
	for (size_t k = 0; k < r->ft->n_memfds; k++) {
		unsigned seals = r->ft->memfds[k]->seals;
		int have = fcntl(r->memfd[k], F_GET_SEALS);
		if ((seals & F_SEAL_FUTURE_WRITE) && !(have > 0 && (have & F_SEAL_FUTURE_WRITE)) &&
		    fcntl(r->memfd[k], F_ADD_SEALS, seals & (F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)) < 0)
			return ckpt_fail(r->err, r->errlen, -errno, "%s: sealing memfd %s: %s", r->image,
					 r->ft->memfds[k]->name, strerror(errno));
	}
	return 0;
}

/* ---- restore: a tree's shared objects */

const struct ckpt_shobj *ckpt_files_shared(const struct ckpt_shared *sh, int kind, uint64_t id)
{
	for (size_t i = 0; sh && id && i < sh->n; i++)
		if (sh->v[i].kind == kind && sh->v[i].id == id)
			return &sh->v[i];
	return NULL;
}

static int share_add(struct ckpt_shared *sh, int kind, uint64_t id, struct ckpt_shobj **out)
{
	struct ckpt_shobj *o = (struct ckpt_shobj *)ckpt_files_shared(sh, kind, id);
	if (!o) {
		if (grow(&sh->v, sh->n, sizeof(*sh->v)))
			return -ENOMEM;
		o = &sh->v[sh->n++];
		memset(o, 0, sizeof(*o));
		o->kind = kind;
		o->id = id;
		o->fd[0] = o->fd[1] = -1;
	}
	*out = o;
	return 0;
}

int ckpt_files_share_plan(Storm__Ckpt__FileTable *const *fts, Storm__Ckpt__VmaTable *const *vts,
			  size_t n, struct ckpt_shared *sh)
{
	struct ckpt_shobj *o;
	for (size_t p = 0; p < n; p++) {
		const Storm__Ckpt__FileTable *ft = fts[p];
		for (size_t i = 0; i < ft->n_pipes; i++) {
			const Storm__Ckpt__Pipe *pp = ft->pipes[i];
			bool other = false; /* another process holds it too */
			for (size_t q = 0; q < n && !other; q++)
				for (size_t j = 0; q != p && j < fts[q]->n_pipes && !other; j++)
					other = fts[q]->pipes[j]->id == pp->id;
			const Storm__Ckpt__File *fifo = NULL;
			for (size_t j = 0; j < ft->n_files && !fifo; j++)
				if (ft->files[j]->kind == CKPT_FILE_FIFO && ft->files[j]->object == pp->id)
					fifo = ft->files[j];
			if (!other || ckpt_files_shared(sh, fifo ? CKPT_SH_FIFO : CKPT_SH_PIPE, pp->id))
				continue;
			if (share_add(sh, fifo ? CKPT_SH_FIFO : CKPT_SH_PIPE, pp->id, &o))
				return -ENOMEM;
			o->pipe = pp;
			o->path = fifo ? fifo->path : NULL;
		}
		for (size_t i = 0; i < ft->n_memfds; i++) {
			bool other = false;
			for (size_t q = 0; q < n && !other; q++)
				for (size_t j = 0; q != p && j < fts[q]->n_memfds && !other; j++)
					other = fts[q]->memfds[j]->id == ft->memfds[i]->id;
			if (!other || ckpt_files_shared(sh, CKPT_SH_MEMFD, ft->memfds[i]->id))
				continue;
			if (share_add(sh, CKPT_SH_MEMFD, ft->memfds[i]->id, &o))
				return -ENOMEM;
			o->memfd = ft->memfds[i];
		}
		for (size_t i = 0; i < vts[p]->n_vmas; i++) {
			const Storm__Ckpt__Vma *v = vts[p]->vmas[i];
			if (v->kind != CKPT_VMA_ANON || !v->shared || !v->shm_id)
				continue;
			bool other = false;
			for (size_t q = 0; q < n && !other; q++)
				for (size_t j = 0; q != p && j < vts[q]->n_vmas && !other; j++)
					other = vts[q]->vmas[j]->shm_id == v->shm_id &&
						vts[q]->vmas[j]->kind == CKPT_VMA_ANON && vts[q]->vmas[j]->shared;
			if (!other)
				continue;
			if (share_add(sh, CKPT_SH_ANON, v->shm_id, &o))
				return -ENOMEM;
			/* the object is as big as the furthest any process maps of it */
			if (v->offset + (v->end - v->start) > o->size)
				o->size = v->offset + (v->end - v->start);
		}
	}
	return 0;
}

int ckpt_files_share_make(struct ckpt_shared *sh, const struct ckpt_restore_opts *o, int base,
			  char *why, size_t wl)
{
	for (size_t i = 0; i < sh->n; i++) {
		struct ckpt_shobj *so = &sh->v[i];
		int fds[2] = { -1, -1 };
		const char *what = "";
		switch (so->kind) {
		case CKPT_SH_PIPE:
			what = "pipe";
			if (pipe2(fds, O_CLOEXEC | (so->pipe->n_packets ? O_DIRECT : 0)) < 0 ||
			    pipe_fill(fds[1], so->pipe) < 0)
				goto fail;
			break;
		case CKPT_SH_FIFO: {
			/* held open read-write, so its bytes stay while the
			 * processes open it by path */
			what = so->path;
			char *path = ckpt_remap_path(o, so->path);
			fds[0] = open(path ? path : so->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
			free(path);
			if (fds[0] < 0 || pipe_fill(fds[0], so->pipe) < 0)
				goto fail;
			break;
		}
		case CKPT_SH_MEMFD:
			what = so->memfd->name;
			fds[0] = memfd_create(so->memfd->name, MFD_ALLOW_SEALING | MFD_CLOEXEC);
			if (fds[0] < 0 || ftruncate(fds[0], (off_t)so->memfd->size) < 0)
				goto fail;
			break;
		case CKPT_SH_ANON:
			what = "shared memory";
			if (mmap((void *)(uintptr_t)so->addr, so->size, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
				 0) != (void *)(uintptr_t)so->addr)
				goto fail;
			continue;
		}
		for (int e = 0; e < 2; e++) {
			if (fds[e] < 0)
				continue;
			so->fd[e] = fcntl(fds[e], F_DUPFD_CLOEXEC, base);
			close(fds[e]);
			if (so->fd[e] < 0)
				goto fail;
		}
		continue;
fail:
		snprintf(why, wl, "section files: making the %s the processes share: %s", what,
			 strerror(errno));
		return -1;
	}
	return 0;
}

void ckpt_files_share_free(struct ckpt_shared *sh)
{
	free(sh->v);
	free(sh->filled);
	memset(sh, 0, sizeof(*sh));
}

void ckpt_files_restore_end(struct ckpt_frestore *r)
{
	for (size_t k = 0; r->memfd && k < r->ft->n_memfds; k++)
		if (r->memfd[k] >= 0)
			close(r->memfd[k]);
	free(r->memfd);
	r->memfd = NULL;
}
