/* ptrace syscall injection, /proc helpers and the maps parser. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "internal.h"

int ckpt_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

double ckpt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t ckpt_inject_mask(void)
{
	return ~((1ull << (SIGTRAP - 1)) | (1ull << (SIGSEGV - 1)));
}

char *ckpt_read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		if (r == 0)
			break;
		n += r;
		if (n == cap) {
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (buf) {
		buf[n] = 0;
		if (len)
			*len = n;
	}
	return buf;
}

long ckpt_status_num(const char *status, const char *key, int base)
{
	const char *p = status ? strstr(status, key) : NULL;
	return p ? strtol(p + strlen(key), NULL, base) : -1;
}

void ckpt_log(const struct ckpt_restore_opts *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (o && o->log)
		o->log(o->log_arg, line);
	else
		fprintf(stderr, "%s\n", line);
}

char *ckpt_remap_path(const struct ckpt_restore_opts *o, const char *p)
{
	char *r;
	for (size_t i = 0; o->to_prefix && i < o->nfrom; i++) {
		size_t fl = strlen(o->from_prefixes[i]);
		if (fl && strncmp(p, o->from_prefixes[i], fl) == 0 && (p[fl] == '/' || !p[fl])) {
			if (asprintf(&r, "%s%s", o->to_prefix, p + fl) < 0)
				return NULL;
			return r;
		}
	}
	return strdup(p);
}

int ckpt_file_range_hash(const char *path, uint64_t off, uint64_t len, uint64_t *size,
			 uint64_t *hash)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*size = sb.st_size;
	XXH3_state_t *s = XXH3_createState();
	XXH3_64bits_reset(s);
	uint64_t end = off + len < (uint64_t)sb.st_size ? off + len : (uint64_t)sb.st_size;
	static __thread char buf[1 << 16];
	int rc = 0;
	for (uint64_t p = off; p < end;) {
		size_t want = end - p < sizeof(buf) ? end - p : sizeof(buf);
		ssize_t r = pread(fd, buf, want, p);
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			break;
		}
		XXH3_64bits_update(s, buf, r);
		p += r;
	}
	*hash = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	close(fd);
	return rc;
}

int ckpt_parse_maps_line(const char *line, struct ckpt_map *m)
{
	unsigned long long start, end, off, ino;
	char perms[8];
	unsigned dmaj, dmin;
	int n = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &dmaj,
		   &dmin, &ino, &n) < 7 || n == 0)
		return -EINVAL;
	if (start >= end || (start | end) & (CKPT_PAGE - 1) || strlen(perms) != 4)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->shared = perms[3] == 's';
	m->ino = ino;
	const char *p = line + n;
	size_t l = strcspn(p, "\n");
	if (l >= sizeof(m->path))
		return -EINVAL;
	memcpy(m->path, p, l);
	m->path[l] = 0;
	const char *del = " (deleted)";
	size_t dl = strlen(del);
	if (l > dl && strcmp(m->path + l - dl, del) == 0) {
		m->deleted = 1;
		m->path[l - dl] = 0;
	}
	if (strcmp(m->path, "[heap]") == 0)
		m->kind = CKPT_VMA_HEAP;
	else if (strcmp(m->path, "[stack]") == 0)
		m->kind = CKPT_VMA_STACK;
	else if (strcmp(m->path, "[vdso]") == 0)
		m->kind = CKPT_VMA_VDSO;
	else if (strcmp(m->path, "[vvar]") == 0)
		m->kind = CKPT_VMA_VVAR;
	else if (strcmp(m->path, "[vvar_vclock]") == 0)
		m->kind = CKPT_VMA_VVAR_VCLOCK;
	else if (strcmp(m->path, "[vsyscall]") == 0)
		m->kind = CKPT_VMA_VSYSCALL;
	else if (m->path[0] == '/' && ino != 0 && !(m->shared && strcmp(m->path, "/dev/zero") == 0))
		m->kind = CKPT_VMA_FILE;
	else
		m->kind = CKPT_VMA_ANON; /* "", [anon:...], shared /dev/zero */
	/* a shared anonymous area keeps its place in the object it maps */
	if (m->kind != CKPT_VMA_FILE && !(m->kind == CKPT_VMA_ANON && m->shared))
		m->offset = 0;
	return 0;
}

#define ERESTART_RESTARTBLOCK 516

void ckpt_restart_fixup(struct user_regs_struct *r)
{
	if ((long)r->orig_rax >= 0 && (long)r->rax == -ERESTART_RESTARTBLOCK)
		r->rax = (unsigned long long)-EINTR;
}

long ckpt_tid_offset(const void *buf, size_t len, pid_t tid)
{
	long at = -1;
	for (size_t off = 0; off + 4 <= len; off += 4) {
		int32_t w;
		memcpy(&w, (const char *)buf + off, 4);
		if (w != tid)
			continue;
		if (at >= 0)
			return -1;
		at = (long)off;
	}
	return at;
}

int ckpt_mem_read(struct ckpt_tracee *t, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(t->memfd, (char *)buf + done, len - done, addr + done);
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += r;
	}
	return 0;
}

int ckpt_mem_write(struct ckpt_tracee *t, uint64_t addr, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pwrite(t->memfd, (const char *)buf + done, len - done, addr + done);
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += r;
	}
	return 0;
}

/* The threads of process pid that died, reaped. Looked at first without
 * taking anything: a tracee's stop is reported whatever the options, and
 * one taken here would be missed by whoever waits for it. */
static void reap_dead_threads(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	DIR *dp = opendir(dir);
	if (!dp)
		return;
	struct dirent *de;
	while ((de = readdir(dp))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		siginfo_t si = { 0 };
		if (tid <= 0 || tid == pid ||
		    waitid(P_PID, (id_t)tid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ||
		    si.si_pid != tid ||
		    (si.si_code != CLD_EXITED && si.si_code != CLD_KILLED && si.si_code != CLD_DUMPED))
			continue;
		waitid(P_PID, (id_t)tid, &si, WEXITED | WNOHANG | __WALL);
	}
	closedir(dp);
}

pid_t ckpt_wait(struct ckpt_tracee *t, int *st)
{
	if (!t->others)
		return waitpid(t->pid, st, __WALL);
	for (unsigned n = 0;; n++) {
		pid_t r = waitpid(t->pid, st, __WALL | WNOHANG);
		if (r != 0)
			return r;
		/* an injected call takes microseconds: yield first, then sleep */
		if (n < 64) {
			sched_yield();
			continue;
		}
		reap_dead_threads(t->pid);
		nanosleep(&(struct timespec){ 0, n < 256 ? 50000 : 1000000 }, NULL);
	}
}

int ckpt_inject(struct ckpt_tracee *t, const struct user_regs_struct *base, long nr, long *ret,
		int expect_segv, int nargs, ...)
{
	struct user_regs_struct r = *base;
	long a[6] = { 0 };
	va_list ap;
	va_start(ap, nargs);
	for (int i = 0; i < nargs && i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	r.rax = nr;
	r.orig_rax = -1; /* no syscall restart when it resumes */
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	r.rip = t->gadget;
	if (ptrace(PTRACE_SETREGS, t->pid, 0, &r) < 0)
		return -errno;
	if (ptrace(PTRACE_CONT, t->pid, 0, 0) < 0)
		return -errno;
	for (;;) {
		int st;
		if (ckpt_wait(t, &st) < 0)
			return -errno;
		if (!WIFSTOPPED(st))
			return -ESRCH;
		int sig = WSTOPSIG(st);
		/* the int3; an event stop (a clone it made, a group stop) is not */
		if ((sig == SIGTRAP || (expect_segv && sig == SIGSEGV)) && (st >> 16) == 0)
			break;
		if (sig == SIGSEGV) /* the gadget faulted: give up */
			return -EFAULT;
		/* another signal or a group stop: keep it for the detach */
		if ((st >> 16) == 0)
			t->pending_sig = sig;
		if (ptrace(PTRACE_CONT, t->pid, 0, 0) < 0)
			return -errno;
	}
	if (ptrace(PTRACE_GETREGS, t->pid, 0, &r) < 0)
		return -errno;
	*ret = r.rax;
	return 0;
}
