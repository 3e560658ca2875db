/* Parsers of /proc/PID/fdinfo, names of sockets, checks of a file table:
 * the pure parts of checkpoint/files_*.c (fdinfo.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#include "ckpt.h"
#include "fdinfo.h"
#include "internal.h"

/* The value after "key" at the start of a line of text, or NULL. */
static const char *field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl))
			return p + kl;
	return NULL;
}

/* An unsigned number in base after key; -EINVAL if there is none. */
static int field_u64(const char *text, const char *key, int base, uint64_t *v)
{
	const char *p = field(text, key);
	if (!p)
		return -EINVAL;
	while (*p == ' ' || *p == '\t')
		p++;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(p, &end, base);
	if (end == p || errno || *p == '-' || (*end && *end != '\n' && *end != ' '))
		return -EINVAL;
	*v = x;
	return 0;
}

int ckpt_fdinfo_common(const char *text, struct ckpt_fdinfo *fi)
{
	uint64_t flags;
	memset(fi, 0, sizeof(*fi));
	if (field_u64(text, "pos:", 10, &fi->pos) || field_u64(text, "flags:", 8, &flags) ||
	    flags > 0xffffffffu)
		return -EINVAL;
	fi->flags = (unsigned)flags;
	field_u64(text, "ino:", 10, &fi->ino);
	/* "lock:\t1: POSIX  ADVISORY  WRITE 1234 00:05:123 0 EOF" */
	const char *l = field(text, "lock:");
	char a[16], b[16], c[16];
	if (l && sscanf(l, " %*d: %15s %15s %15s", a, b, c) == 3)
		snprintf(fi->lock, sizeof(fi->lock), "%s %s %s", a, b, c);
	else if (l)
		snprintf(fi->lock, sizeof(fi->lock), "a lock");
	return 0;
}

int ckpt_fdinfo_eventfd(const char *text, uint64_t *count, int *semaphore)
{
	uint64_t sem = 0;
	if (field_u64(text, "eventfd-count:", 16, count))
		return -EINVAL;
	/* kernels before 6.6 do not show it: such an eventfd is taken as a counter */
	if (field(text, "eventfd-semaphore:") && field_u64(text, "eventfd-semaphore:", 10, &sem))
		return -EINVAL;
	*semaphore = sem != 0;
	return 0;
}

/* "(sec, nsec)" after key, in nanoseconds. */
static int field_timespec(const char *text, const char *key, uint64_t *ns)
{
	const char *p = field(text, key);
	unsigned long long s, n;
	int used = 0;
	if (!p || sscanf(p, " (%llu, %llu)%n", &s, &n, &used) != 2 || !used || n >= 1000000000ull ||
	    s > UINT64_MAX / 1000000000ull - 1)
		return -EINVAL;
	*ns = s * 1000000000ull + n;
	return 0;
}

int ckpt_fdinfo_timerfd(const char *text, struct ckpt_timerfd *t)
{
	uint64_t clockid, flags;
	memset(t, 0, sizeof(*t));
	if (field_u64(text, "clockid:", 10, &clockid) || clockid > 64 ||
	    field_u64(text, "ticks:", 10, &t->ticks) ||
	    field_u64(text, "settime flags:", 8, &flags) || flags > 0xffff ||
	    field_timespec(text, "it_value:", &t->value_ns) ||
	    field_timespec(text, "it_interval:", &t->interval_ns))
		return -EINVAL;
	t->clockid = (int)clockid;
	t->settime_flags = (unsigned)flags;
	return 0;
}

int ckpt_fdinfo_signalfd(const char *text, uint64_t *sigmask)
{
	return field_u64(text, "sigmask:", 16, sigmask);
}

int ckpt_fdinfo_epoll(const char *text, struct ckpt_epoll_item **items)
{
	size_t n = 0, cap = 0;
	*items = NULL;
	for (const char *p = field(text, "tfd:"); p; p = field(p, "tfd:")) {
		int tfd, used = 0;
		unsigned events;
		unsigned long long data;
		if (sscanf(p, " %d events: %x data: %llx%n", &tfd, &events, &data, &used) != 3 ||
		    !used || tfd < 0) {
			free(*items);
			*items = NULL;
			return -EINVAL;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			struct ckpt_epoll_item *ni = realloc(*items, cap * sizeof(*ni));
			if (!ni) {
				free(*items);
				*items = NULL;
				return -ENOMEM;
			}
			*items = ni;
		}
		(*items)[n++] = (struct ckpt_epoll_item){ tfd, events, data };
		p = strchr(p, '\n');
		if (!p)
			break;
	}
	return (int)n;
}

/* An address as "127.0.0.1:4000", "[::1]:53", "/tmp/s", "@name". */
static void fmt_addr(const struct sockaddr *sa, socklen_t len, char *buf, size_t blen)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, blen, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, blen, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else if (sa && sa->sa_family == AF_UNIX && len > offsetof(struct sockaddr_un, sun_path)) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		size_t n = len - offsetof(struct sockaddr_un, sun_path);
		if (n > sizeof(un->sun_path))
			n = sizeof(un->sun_path);
		if (un->sun_path[0]) /* a path, NUL-terminated or not */
			snprintf(buf, blen, "%.*s", (int)strnlen(un->sun_path, n), un->sun_path);
		else /* abstract: the bytes after the NUL, as far as printable */
			snprintf(buf, blen, "@%.*s", (int)strnlen(un->sun_path + 1, n - 1),
				 un->sun_path + 1);
	} else {
		snprintf(buf, blen, "unnamed");
	}
}

static int addr_set(const struct sockaddr *sa, socklen_t len)
{
	if (!sa || len < sizeof(sa_family_t))
		return 0;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return in->sin_port || in->sin_addr.s_addr;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		static const struct in6_addr any = IN6ADDR_ANY_INIT;
		return in6->sin6_port || memcmp(&in6->sin6_addr, &any, sizeof(any));
	}
	if (sa->sa_family == AF_UNIX)
		return len > offsetof(struct sockaddr_un, sun_path);
	return 0;
}

void ckpt_describe_socket(int domain, int type, int listening, const struct sockaddr *local,
			  socklen_t llen, const struct sockaddr *peer, socklen_t plen, char *buf,
			  size_t len)
{
	const char *what;
	char l[160], p[160];
	int st = type & 0xf;
	if (domain == AF_INET || domain == AF_INET6)
		what = st == SOCK_STREAM ? "a TCP socket" : st == SOCK_DGRAM ? "a UDP socket"
			: st == SOCK_RAW ? "a raw IP socket" : "an IP socket";
	else if (domain == AF_UNIX)
		what = st == SOCK_STREAM ? "a Unix stream socket" : st == SOCK_DGRAM
			? "a Unix datagram socket" : "a Unix seqpacket socket";
	else if (domain == AF_NETLINK) {
		snprintf(buf, len, "a netlink socket");
		return;
	} else if (domain == AF_PACKET) {
		snprintf(buf, len, "a packet socket");
		return;
	} else {
		snprintf(buf, len, "a socket of address family %d", domain);
		return;
	}
	fmt_addr(local, llen, l, sizeof(l));
	fmt_addr(peer, plen, p, sizeof(p));
	if (listening)
		snprintf(buf, len, "%s (listening on %s)", what, l);
	else if (addr_set(peer, plen))
		snprintf(buf, len, "%s (%s -> %s)", what, l, p);
	else if (addr_set(local, llen))
		snprintf(buf, len, "%s (bound to %s)", what, l);
	else
		snprintf(buf, len, "%s (unnamed)", what);
}

const Storm__Ckpt__File *ckpt_file_by_fd(const Storm__Ckpt__FileTable *ft, int fd)
{
	for (size_t i = 0; i < ft->n_files; i++)
		if (ft->files[i]->fd == fd)
			return ft->files[i];
	return NULL;
}

static const Storm__Ckpt__Memfd *memfd_by_id(const Storm__Ckpt__FileTable *ft, uint64_t id)
{
	for (size_t i = 0; i < ft->n_memfds; i++)
		if (ft->memfds[i]->id == id)
			return ft->memfds[i];
	return NULL;
}

/* Is the epoll at index e (or one it watches, recursively) watching the
 * epoll at index target? state: 0 unseen, 1 on the path, 2 done. */
static int epoll_visit(const Storm__Ckpt__FileTable *ft, size_t e, unsigned char *state,
		       size_t *order, size_t *n)
{
	if (state[e] == 2)
		return 0;
	if (state[e] == 1)
		return -ELOOP;
	state[e] = 1;
	const Storm__Ckpt__File *f = ft->files[e];
	for (size_t k = 0; k < f->n_items; k++) {
		for (size_t j = 0; j < ft->n_files; j++) {
			const Storm__Ckpt__File *t = ft->files[j];
			if (t->fd != f->items[k]->tfd)
				continue;
			/* a dup of an epoll is that epoll */
			const Storm__Ckpt__File *o = t->dup ? ckpt_file_by_fd(ft, t->dup_of) : t;
			if (!o || o->kind != CKPT_FILE_EPOLL)
				break;
			for (size_t x = 0; x < ft->n_files; x++)
				if (ft->files[x] == o) {
					int rc = epoll_visit(ft, x, state, order, n);
					if (rc)
						return rc;
				}
			break;
		}
	}
	state[e] = 2;
	order[(*n)++] = e;
	return 0;
}

int ckpt_epoll_order(const Storm__Ckpt__FileTable *ft, size_t *order)
{
	unsigned char *state = calloc(ft->n_files ? ft->n_files : 1, 1);
	if (!state)
		return -ENOMEM;
	size_t n = 0;
	int rc = 0;
	for (size_t i = 0; i < ft->n_files && !rc; i++)
		if (ft->files[i]->kind == CKPT_FILE_EPOLL && !ft->files[i]->dup)
			rc = epoll_visit(ft, i, state, order, &n);
	free(state);
	return rc ? rc : (int)n;
}

/* The page section with this index, or NULL. */
static const struct ckpt_sec *pages_section(const struct ckpt_header *h, int32_t index)
{
	for (uint32_t s = 0; h && index >= 0 && s < h->nsec; s++)
		if (h->secs[s].type == CKPT_SEC_PAGES && ckpt_sec_local(h, &h->secs[s]) == (uint32_t)index)
			return &h->secs[s];
	return NULL;
}

static int check_file(const Storm__Ckpt__FileTable *ft, size_t i, char *err, size_t errlen)
{
	const Storm__Ckpt__File *f = ft->files[i];
	if (f->fd < 0 || f->fd > 65535)
		return ckpt_fail(err, errlen, -EINVAL, "section files: fd %d", f->fd);
	for (size_t j = 0; j < i; j++)
		if (ft->files[j]->fd == f->fd)
			return ckpt_fail(err, errlen, -EINVAL, "section files: fd %d twice", f->fd);
	if (f->kind >= CKPT_FILE_KINDS)
		return ckpt_fail(err, errlen, -EINVAL, "section files: fd %d: unknown kind %u",
				 f->fd, f->kind);
	if (f->dup) {
		const Storm__Ckpt__File *o = ckpt_file_by_fd(ft, f->dup_of);
		if (!o || o->dup || o->fd >= f->fd || o->kind != f->kind ||
		    f->kind == CKPT_FILE_INHERITED)
			return ckpt_fail(err, errlen, -EINVAL,
					 "section files: fd %d: a dup of fd %d, which it cannot be",
					 f->fd, f->dup_of);
		return 0;
	}
	int ok = 1;
	switch (f->kind) {
	case CKPT_FILE_PIPE:
	case CKPT_FILE_FIFO:
		ok = f->kind == CKPT_FILE_FIFO && !f->object;
		for (size_t p = 0; !ok && p < ft->n_pipes; p++)
			ok = ft->pipes[p]->id == f->object;
		break;
	case CKPT_FILE_MEMFD:
		ok = memfd_by_id(ft, f->object) != NULL;
		break;
	case CKPT_FILE_TIMERFD:
		ok = (f->clockid == CLOCK_REALTIME || f->clockid == CLOCK_MONOTONIC ||
		      f->clockid == CLOCK_BOOTTIME || f->clockid == CLOCK_REALTIME_ALARM ||
		      f->clockid == CLOCK_BOOTTIME_ALARM) &&
		     f->value_ns / 1000000000ull < (1ull << 40) &&
		     f->interval_ns / 1000000000ull < (1ull << 40);
		break;
	case CKPT_FILE_EVENTFD:
		ok = f->count < UINT64_MAX;
		break;
	case CKPT_FILE_EPOLL:
		for (size_t k = 0; ok && k < f->n_items; k++)
			ok = ckpt_file_by_fd(ft, f->items[k]->tfd) != NULL &&
			     f->items[k]->tfd != f->fd;
		break;
	case CKPT_FILE_REGULAR:
	case CKPT_FILE_DIR:
	case CKPT_FILE_OPATH:
	case CKPT_FILE_DEVICE:
		ok = f->path && f->path[0] == '/';
		break;
	}
	if (!ok)
		return ckpt_fail(err, errlen, -EINVAL, "section files: fd %d (kind %u) is malformed",
				 f->fd, f->kind);
	return 0;
}

static int check_memfd(const Storm__Ckpt__FileTable *ft, size_t i, const struct ckpt_header *h,
		       char *err, size_t errlen)
{
	const Storm__Ckpt__Memfd *m = ft->memfds[i];
	for (size_t j = 0; j < i; j++)
		if (ft->memfds[j]->id == m->id)
			goto bad;
	if (!m->name || strlen(m->name) > 249 || m->size > (1ull << 46))
		goto bad;
	uint64_t npages = (m->size + CKPT_PAGE - 1) / CKPT_PAGE, next = 0, total = 0;
	for (size_t r = 0; r < m->n_runs; r++) {
		const Storm__Ckpt__Run *run = m->runs[r];
		if (run->page < next || run->count == 0 || run->count > npages ||
		    run->page > npages - run->count)
			goto bad;
		next = run->page + run->count;
		total += run->count;
	}
	if (m->pages_section < 0 ? m->n_runs != 0 : !pages_section(h, m->pages_section) ||
	    pages_section(h, m->pages_section)->length != total * CKPT_PAGE)
		goto bad;
	return 0;
bad:
	return ckpt_fail(err, errlen, -EINVAL, "section files: memfd %zu is malformed", i);
}

int ckpt_files_check(const Storm__Ckpt__FileTable *ft, const Storm__Ckpt__VmaTable *vt,
		     const struct ckpt_header *h, char *err, size_t errlen)
{
	int rc;
	for (size_t i = 0; i < ft->n_files; i++)
		if ((rc = check_file(ft, i, err, errlen)))
			return rc;
	for (size_t p = 0; p < ft->n_pipes; p++) {
		const Storm__Ckpt__Pipe *pp = ft->pipes[p];
		uint64_t sum = 0;
		for (size_t k = 0; k < pp->n_packets; k++)
			sum += pp->packets[k];
		int ok = pp->data.len <= pp->size && pp->size <= (1u << 30) &&
			 (!pp->n_packets || sum == pp->data.len);
		for (size_t q = 0; ok && q < p; q++)
			ok = ft->pipes[q]->id != pp->id;
		if (!ok)
			return ckpt_fail(err, errlen, -EINVAL, "section files: pipe %zu is malformed", p);
	}
	for (size_t i = 0; i < ft->n_memfds; i++)
		if ((rc = check_memfd(ft, i, h, err, errlen)))
			return rc;
	for (size_t i = 0; vt && i < vt->n_vmas; i++) {
		const Storm__Ckpt__Vma *v = vt->vmas[i];
		if (v->kind == CKPT_VMA_MEMFD && !memfd_by_id(ft, v->shm_id))
			return ckpt_fail(err, errlen, -EINVAL,
					 "section vmas: area %zu maps a memfd the image lacks", i);
	}
	size_t *order = malloc((ft->n_files ? ft->n_files : 1) * sizeof(*order));
	rc = order ? ckpt_epoll_order(ft, order) : -ENOMEM;
	free(order);
	if (rc < 0)
		return ckpt_fail(err, errlen, -EINVAL, "section files: epolls watch each other in a loop");
	return 0;
}

int ckpt_fsize_plan(uint32_t flags, uint64_t size, uint64_t pos, uint64_t now, uint64_t *newpos)
{
	bool writes = (flags & O_ACCMODE) != O_RDONLY;
	*newpos = pos;
	if (now == size)
		return CKPT_FSIZE_SAME;
	if (flags & O_APPEND) {
		/* its writes go to the end: an offset that was there goes too */
		if (pos >= size)
			*newpos = now;
		return CKPT_FSIZE_LEFT;
	}
	if (writes && now > size)
		return CKPT_FSIZE_CUT;
	return CKPT_FSIZE_LEFT;
}

void ckpt_fsize_say(const char *name, uint32_t flags, uint64_t size, uint64_t now, int act,
		    const char *saved, char *buf, size_t len)
{
	unsigned long long s = size, n = now;
	const char *how = (flags & O_APPEND) ? "opened O_APPEND"
			  : (flags & O_ACCMODE) == O_RDONLY ? "opened read-only"
			  : "shorter than at the checkpoint";
	if (act == CKPT_FSIZE_CUT)
		snprintf(buf, len, "%s: cut back from %llu to %llu bytes (the size at the checkpoint); "
			 "the %llu bytes cut are kept in %s", name, n, s, n - s, saved ? saved : "?");
	else if (act == CKPT_FSIZE_LEFT)
		snprintf(buf, len, "%s: %s; left as it is (%llu bytes, %llu at the checkpoint)", name,
			 how, n, s);
	else if (len)
		buf[0] = 0;
}

int ckpt_proc_timers(const char *text, int *clock)
{
	int n = 0;
	*clock = -1;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, "ID:", 3))
			n++;
		if (n == 1 && *clock < 0 && !strncmp(l, "ClockID:", 8))
			*clock = atoi(l + 8);
	}
	return n;
}

void ckpt_status_seccomp(const char *status, int *mode, int *filters)
{
	long m = ckpt_status_num(status, "\nSeccomp:\t", 10);
	long f = ckpt_status_num(status, "\nSeccomp_filters:\t", 10);
	*mode = m > 0 ? (int)m : 0;
	*filters = f > 0 ? (int)f : 0;
}
