/* ckpt_dump: write an image of a running or stopped process.
 *
 * Every thread of the process is seized and interrupted with ptrace
 * (threads.c). What /proc shows is read from /proc (maps, pagemap, fdinfo,
 * status, auxv, environ); the rest (signal handlers, brk, interval timers,
 * each thread's clear_child_tid) is asked of the process itself by injected
 * system calls, run from a "syscall; int3" gadget written over the first bytes
 * of its text (and put back). Memory is read through /proc/PID/mem; only pages
 * that differ from their file or from zero are saved (pagemap). */
#include <dirent.h>
#include <elf.h>
#include <linux/kcmp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "ckpt.pb-c.h"
#include "fdinfo.h"
#include "image.h"
#include "internal.h"
#include "threads.h"
#include "proctree.h"

struct kernel_sigaction {
	uint64_t handler, flags, restorer, mask;
};

#define PM_PRESENT (1ull << 63)
#define PM_SWAP (1ull << 62)
#define PM_FILE (1ull << 61)

struct dvma {
	struct ckpt_map m;
	Storm__Ckpt__Vma pb;
	Storm__Ckpt__Run **runs;
	size_t nruns;
	uint64_t npages; /* saved */
};

struct dump {
	pid_t pid;
	char proc[64];
	struct ckpt_tracee t;    /* the main thread */
	struct ckpt_threads th;  /* every thread, the main one first */
	struct user_regs_struct regs;
	uint64_t sigmask;
	int attached;
	struct dvma *v;
	size_t nv;
	unsigned flags;
	const pid_t *tree;       /* an image of a tree: every process of it */
	size_t ntree;
	char *err;
	size_t errlen;
	/* CKPT_DUMP_SNAPSHOT: the fork whose memory is read (pid 0: none) */
	struct ckpt_tracee snap;
	uint64_t patch_at;       /* the fork's text still holds the gadget here, */
	unsigned char patch[8];  /* over these bytes */
};

static uint64_t status_hex(const char *status, const char *key)
{
	const char *p = strstr(status, key);
	return p ? strtoull(p + strlen(key), NULL, 16) : 0;
}

/* The pages of area v worth saving, as runs (pagemap: present and not the
 * file's own page, or swapped out). */
static int plan_pages(struct dump *d, int pmfd, struct dvma *v)
{
	uint64_t n = (v->m.end - v->m.start) / CKPT_PAGE;
	uint64_t *pm = malloc(n * 8);
	if (!pm)
		return -ENOMEM;
	ssize_t want = n * 8, got = 0;
	while (got < want) {
		ssize_t r = pread(pmfd, (char *)pm + got, want - got, v->m.start / CKPT_PAGE * 8 + got);
		if (r <= 0) {
			free(pm);
			return ckpt_fail(d->err, d->errlen, -EIO, "pid %d: pagemap: %s", d->pid,
					 r < 0 ? strerror(errno) : "short read");
		}
		got += r;
	}
	for (uint64_t i = 0; i < n;) {
		int save;
		if (v->m.shared)
			save = (pm[i] & (PM_PRESENT | PM_SWAP)) != 0;
		else
			save = ((pm[i] & PM_PRESENT) && !(pm[i] & PM_FILE)) || (pm[i] & PM_SWAP);
		if (!save) {
			i++;
			continue;
		}
		uint64_t j = i;
		while (j < n && (v->m.shared ? (pm[j] & (PM_PRESENT | PM_SWAP)) != 0
					     : (((pm[j] & PM_PRESENT) && !(pm[j] & PM_FILE)) ||
						(pm[j] & PM_SWAP))))
			j++;
		Storm__Ckpt__Run **nr = realloc(v->runs, (v->nruns + 1) * sizeof(*nr));
		Storm__Ckpt__Run *run = malloc(sizeof(*run));
		if (!nr || !run) {
			free(run);
			free(pm);
			if (nr)
				v->runs = nr;
			return -ENOMEM;
		}
		v->runs = nr;
		storm__ckpt__run__init(run);
		run->page = i;
		run->count = j - i;
		v->runs[v->nruns++] = run;
		v->npages += j - i;
		i = j;
	}
	free(pm);
	return 0;
}

static int read_maps(struct dump *d)
{
	char path[96];
	snprintf(path, sizeof(path), "%s/maps", d->proc);
	char *maps = ckpt_read_all(path, NULL);
	if (!maps)
		return ckpt_fail(d->err, d->errlen, -errno, "pid %d: %s: %s", d->pid, path,
				 strerror(errno));
	int rc = 0;
	for (char *line = maps; *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		struct dvma *nv = realloc(d->v, (d->nv + 1) * sizeof(*nv));
		if (!nv) {
			rc = -ENOMEM;
			break;
		}
		d->v = nv;
		struct dvma *v = &d->v[d->nv];
		memset(v, 0, sizeof(*v));
		if (ckpt_parse_maps_line(line, &v->m) < 0) {
			rc = ckpt_fail(d->err, d->errlen, -EINVAL, "pid %d: unreadable maps line '%s'",
				       d->pid, line);
			break;
		}
		d->nv++;
		/* a memfd: the caller's (CKPT_DUMP_EXTERNAL_MEMFD) or one saved with
		 * the descriptors (files_dump.c ties it to its memfd) */
		if (v->m.kind == CKPT_VMA_FILE && !strncmp(v->m.path, "/memfd:", 7))
			v->m.kind = (d->flags & CKPT_DUMP_EXTERNAL_MEMFD) && v->m.shared
					    ? CKPT_VMA_EXTERNAL : CKPT_VMA_MEMFD;
		if (v->m.shared && !strncmp(v->m.path, "/SYSV", 5)) {
			rc = ckpt_fail(d->err, d->errlen, -ENOTSUP,
				       "pid %d: area %#llx-%#llx is SysV shared memory (key 0x%.8s): "
				       "SysV shared memory cannot be checkpointed",
				       d->pid, (unsigned long long)v->m.start,
				       (unsigned long long)v->m.end, v->m.path + 5);
			break;
		}
		if (v->m.deleted && v->m.kind == CKPT_VMA_FILE) {
			rc = ckpt_fail(d->err, d->errlen, -ENOTSUP,
				       "pid %d: maps deleted file %s (not supported)", d->pid,
				       v->m.path);
			break;
		}
		if (v->m.shared && v->m.kind == CKPT_VMA_ANON && v->m.path[0] == '/' &&
		    strcmp(v->m.path, "/dev/zero") != 0) {
			rc = ckpt_fail(d->err, d->errlen, -ENOTSUP,
				       "pid %d: shared mapping of %s (not supported)", d->pid,
				       v->m.path);
			break;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	free(maps);
	return rc;
}

/* Injected queries: signal handlers, brk, interval timers. */
static int query_by_injection(struct dump *d, Storm__Ckpt__Meta *meta, const char *status)
{
	struct ckpt_tracee *t = &d->t;
	uint64_t text = 0;
	for (size_t i = 0; i < d->nv; i++)
		if (d->v[i].m.kind == CKPT_VMA_FILE && (d->v[i].m.prot & PROT_EXEC)) {
			text = d->v[i].m.start;
			break;
		}
	if (!text)
		return ckpt_fail(d->err, d->errlen, -ENOEXEC, "pid %d: no executable file mapping",
				 d->pid);
	unsigned char saved[8], gadget[8] = { 0x0f, 0x05, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc };
	t->gadget = text;
	int rc = ckpt_mem_read(t, text, saved, 8);
	if (!rc)
		rc = ckpt_mem_write(t, text, gadget, 8);
	if (rc)
		return ckpt_fail(d->err, d->errlen, rc, "pid %d: cannot write the syscall gadget: %s",
				 d->pid, strerror(-rc));
	uint64_t mask = ckpt_inject_mask();
	ptrace(PTRACE_SETSIGMASK, d->pid, sizeof(mask), &mask);
	long scratch = 0, r;
	rc = ckpt_inject(t, &d->regs, SYS_mmap, &scratch, 0, 6, 0L, (long)CKPT_PAGE,
			 (long)(PROT_READ | PROT_WRITE), (long)(MAP_PRIVATE | MAP_ANONYMOUS), -1L, 0L);
	if (!rc && (unsigned long)scratch > -4096ul)
		rc = (int)scratch;
	if (rc) {
		rc = ckpt_fail(d->err, d->errlen, rc, "pid %d: injected mmap failed: %s", d->pid,
			       strerror(-rc));
		goto out;
	}
	uint64_t caught = status_hex(status, "SigCgt:\t"), ign = status_hex(status, "SigIgn:\t");
	meta->sigactions = calloc(64, sizeof(*meta->sigactions));
	for (int sig = 1; sig <= 64 && meta->sigactions; sig++) {
		uint64_t bit = 1ull << (sig - 1);
		if (sig == SIGKILL || sig == SIGSTOP || !((caught | ign) & bit))
			continue;
		struct kernel_sigaction ka;
		rc = ckpt_inject(t, &d->regs, SYS_rt_sigaction, &r, 0, 4, (long)sig, 0L, scratch, 8L);
		if (!rc && r < 0)
			rc = (int)r;
		if (!rc)
			rc = ckpt_mem_read(t, scratch, &ka, sizeof(ka));
		if (rc) {
			rc = ckpt_fail(d->err, d->errlen, rc, "pid %d: rt_sigaction(%d): %s", d->pid,
				       sig, strerror(-rc));
			goto out;
		}
		Storm__Ckpt__SigAction *sa = malloc(sizeof(*sa));
		storm__ckpt__sig_action__init(sa);
		sa->sig = sig;
		sa->handler = ka.handler;
		sa->flags = ka.flags;
		sa->restorer = ka.restorer;
		sa->mask = ka.mask;
		meta->sigactions[meta->n_sigactions++] = sa;
	}
	rc = ckpt_inject(t, &d->regs, SYS_brk, &r, 0, 1, 0L);
	if (rc)
		goto out;
	meta->mm->brk = r;
	meta->itimers = calloc(3, sizeof(*meta->itimers));
	for (int w = 0; w < 3; w++) {
		struct itimerval it;
		rc = ckpt_inject(t, &d->regs, SYS_getitimer, &r, 0, 2, (long)w, scratch);
		if (!rc)
			rc = ckpt_mem_read(t, scratch, &it, sizeof(it));
		if (rc)
			goto out;
		if (!it.it_value.tv_sec && !it.it_value.tv_usec)
			continue;
		Storm__Ckpt__ITimer *ti = malloc(sizeof(*ti));
		storm__ckpt__itimer__init(ti);
		ti->which = w;
		ti->interval_us = it.it_interval.tv_sec * 1000000ull + it.it_interval.tv_usec;
		ti->value_us = it.it_value.tv_sec * 1000000ull + it.it_value.tv_usec;
		meta->itimers[meta->n_itimers++] = ti;
	}
	if ((rc = ckpt_threads_query(&d->th, t, scratch, d->err, d->errlen)))
		goto out;
	rc = ckpt_inject(t, &d->regs, SYS_munmap, &r, 0, 2, scratch, (long)CKPT_PAGE);
out:
	ckpt_mem_write(t, text, saved, 8);
	ptrace(PTRACE_SETSIGMASK, d->pid, sizeof(d->sigmask), &d->sigmask);
	ptrace(PTRACE_SETREGS, d->pid, 0, &d->regs);
	return rc;
}

/* /proc/PID/stat fields 26.. (1-based): startcode endcode startstack at 26,27,28,
 * start_data end_data start_brk arg_start arg_end env_start env_end at 45..51. */
static int read_mm(struct dump *d, Storm__Ckpt__MmFields *mm)
{
	char path[96];
	snprintf(path, sizeof(path), "%s/stat", d->proc);
	char *st = ckpt_read_all(path, NULL);
	if (!st)
		return -errno;
	char *p = strrchr(st, ')');
	unsigned long long f[64] = { 0 };
	int i = 3; /* p points before field 3 */
	char *save = NULL; /* strtok_r: storm dumps a node's ranks in threads */
	for (char *tok = p ? strtok_r(p + 2, " ", &save) : NULL; tok && i < 64;
	     tok = strtok_r(NULL, " ", &save))
		f[i++] = strtoull(tok, NULL, 10);
	free(st);
	if (i < 52)
		return -EINVAL;
	mm->start_code = f[26];
	mm->end_code = f[27];
	mm->start_stack = f[28];
	mm->start_data = f[45];
	mm->end_data = f[46];
	mm->start_brk = f[47];
	mm->arg_start = f[48];
	mm->arg_end = f[49];
	mm->env_start = f[50];
	mm->env_end = f[51];
	snprintf(path, sizeof(path), "%s/auxv", d->proc);
	size_t n = 0;
	char *auxv = ckpt_read_all(path, &n);
	if (auxv) {
		mm->auxv.data = (uint8_t *)auxv;
		mm->auxv.len = n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf = (const char *)buf + w;
		len -= w;
	}
	return 0;
}

static int put_section(int out, uint64_t *off, struct ckpt_sec *s, uint32_t type,
		       const void *data, size_t len)
{
	s->type = type;
	s->index = 0;
	s->offset = *off;
	s->length = len;
	s->hash = ckpt_hash(data, len);
	*off += len;
	return write_all(out, data, len);
}

static void snapshot_drop(struct dump *d)
{
	if (d->snap.pid <= 0)
		return;
	kill(d->snap.pid, SIGKILL);
	int ws;
	while (waitpid(d->snap.pid, &ws, __WALL) == d->snap.pid && !WIFEXITED(ws) &&
	       !WIFSIGNALED(ws))
		;
	if (d->snap.memfd >= 0)
		close(d->snap.memfd);
	d->snap.pid = 0;
	d->snap.memfd = -1;
}

/* True if the fork holds every page planned from the process: same areas
 * (none left out by MADV_DONTFORK) and each planned page present or
 * swapped (MADV_WIPEONFORK areas come up empty). */
static bool snapshot_faithful(struct dump *d)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", d->snap.pid);
	char *maps = ckpt_read_all(path, NULL);
	if (!maps)
		return false;
	size_t k = 0;
	bool same = true;
	struct ckpt_map *m = malloc(sizeof(*m));
	for (char *line = maps; same && m && *line; k++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		same = k < d->nv && ckpt_parse_maps_line(line, m) == 0 &&
		       m->start == d->v[k].m.start && m->end == d->v[k].m.end;
		line = nl ? nl + 1 : line + strlen(line);
	}
	same = same && m && k == d->nv;
	free(m);
	free(maps);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", d->snap.pid);
	int pm = same ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (pm < 0)
		return false;
	uint64_t e[512];
	for (size_t i = 0; same && i < d->nv; i++)
		for (size_t r = 0; same && r < d->v[i].nruns; r++) {
			uint64_t p = d->v[i].m.start / CKPT_PAGE + d->v[i].runs[r]->page;
			for (uint64_t left = d->v[i].runs[r]->count; same && left;) {
				size_t n = left < 512 ? left : 512;
				same = pread(pm, e, n * 8, p * 8) == (ssize_t)(n * 8);
				for (size_t j = 0; same && j < n; j++)
					same = (e[j] & (PM_PRESENT | PM_SWAP)) != 0;
				p += n;
				left -= n;
			}
		}
	close(pm);
	return same;
}

/* Takes the snapshot: clone(CLONE_PARENT | SIGCHLD) run by the process, its
 * child auto-attached (PTRACE_O_TRACEFORK) and killed if we die
 * (PTRACE_O_EXITKILL, inherited). CLONE_PARENT: the process never sees a
 * child of its own; the fork's end goes to its parent. Returns true if the
 * memory is to be read from the fork. */
static bool snapshot(struct dump *d)
{
	for (size_t i = 0; i < d->nv; i++)
		if (d->v[i].m.shared && d->v[i].nruns)
			return false; /* shared pages would change under us */
	struct ckpt_tracee *t = &d->t;
	unsigned char gadget[8] = { 0x0f, 0x05, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc };
	if (!t->gadget || ckpt_mem_read(t, t->gadget, d->patch, 8) ||
	    ckpt_mem_write(t, t->gadget, gadget, 8))
		return false;
	d->patch_at = t->gadget;
	uint64_t mask = ckpt_inject_mask();
	ptrace(PTRACE_SETSIGMASK, d->pid, sizeof(mask), &mask);
	pid_t child = 0;
	struct user_regs_struct r = d->regs;
	r.rax = SYS_clone;
	r.orig_rax = -1;
	r.rdi = CLONE_PARENT | SIGCHLD;
	r.rsi = r.rdx = r.r10 = r.r8 = 0; /* same stack (copied), no tids, no tls */
	r.rip = t->gadget;
	bool ok = ptrace(PTRACE_SETOPTIONS, d->pid, 0, PTRACE_O_TRACEFORK | PTRACE_O_EXITKILL) == 0 &&
		  ptrace(PTRACE_SETREGS, d->pid, 0, &r) == 0 && ptrace(PTRACE_CONT, d->pid, 0, 0) == 0;
	while (ok) {
		int st;
		if (ckpt_wait(t, &st) < 0 || !WIFSTOPPED(st)) {
			ok = false;
			break;
		}
		if ((st >> 16) == PTRACE_EVENT_FORK) {
			unsigned long msg = 0;
			ptrace(PTRACE_GETEVENTMSG, d->pid, 0, &msg);
			child = (pid_t)msg;
		} else if (WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0) {
			break; /* the int3 after the syscall */
		} else if (WSTOPSIG(st) == SIGSEGV) {
			ok = false;
			break;
		} else if ((st >> 16) == 0) {
			t->pending_sig = WSTOPSIG(st);
		}
		ok = ptrace(PTRACE_CONT, d->pid, 0, 0) == 0;
	}
	ckpt_mem_write(t, t->gadget, d->patch, 8);
	ptrace(PTRACE_SETOPTIONS, d->pid, 0, 0);
	ptrace(PTRACE_SETSIGMASK, d->pid, sizeof(d->sigmask), &d->sigmask);
	ptrace(PTRACE_SETREGS, d->pid, 0, &d->regs);
	if (child <= 0)
		return false;
	d->snap.pid = child;
	d->snap.memfd = -1;
	int st;
	/* its first stop, before it ran anything */
	if (waitpid(child, &st, __WALL) != child || !WIFSTOPPED(st)) {
		d->snap.pid = 0;
		return false;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", child);
	d->snap.memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (!ok || d->snap.memfd < 0 || !snapshot_faithful(d)) {
		snapshot_drop(d);
		return false;
	}
	return true;
}

/* The gadget bytes in a chunk read from the fork give way to the text's. */
static void snapshot_patch(const struct dump *d, const struct iovec *rio, size_t n,
			   unsigned char *buf)
{
	for (size_t i = 0, at = 0; d->snap.pid > 0 && i < n; at += rio[i].iov_len, i++) {
		uint64_t a = (uint64_t)(uintptr_t)rio[i].iov_base, e = a + rio[i].iov_len;
		for (uint64_t p = d->patch_at; p < d->patch_at + 8; p++)
			if (p >= a && p < e)
				buf[at + (p - a)] = d->patch[p - d->patch_at];
	}
}

static void detach(struct dump *d)
{
	if (!d->attached)
		return;
	ckpt_threads_detach(&d->th);
	ptrace(PTRACE_DETACH, d->pid, 0, d->t.pending_sig);
	d->attached = 0;
}

/* Saves area v's runs to out: read a chunk of at most cap bytes of them with
 * one process_vm_readv (one copy, where /proc/PID/mem's pread makes two),
 * hash it and write it. What process_vm_readv may not read (a page without
 * PROT_READ), and a snapshot's pages, come through /proc/PID/mem. With
 * CKPT_DUMP_WRITEBACK the disk gets each chunk as it is written, so the
 * caller's fsync has little left to wait for. */
static int copy_area(struct dump *d, const struct dvma *v, int out, unsigned char *buf, size_t cap,
		     XXH3_state_t *xs, uint64_t *off, unsigned flags, const char *path)
{
	enum { NIOV = 256 };
	struct iovec rio[NIOV];
	size_t r = 0;
	uint64_t done = 0; /* bytes of run r already saved */
	while (r < v->nruns) {
		size_t n = 0, len = 0;
		for (size_t q = r; q < v->nruns && n < NIOV && len < cap; q++) {
			uint64_t base = v->m.start + v->runs[q]->page * CKPT_PAGE;
			uint64_t size = v->runs[q]->count * CKPT_PAGE;
			uint64_t skip = q == r ? done : 0;
			uint64_t take = size - skip < cap - len ? size - skip : cap - len;
			rio[n].iov_base = (void *)(uintptr_t)(base + skip);
			rio[n].iov_len = take;
			n++;
			len += take;
		}
		struct iovec lio = { buf, len };
		/* a fork's pages through /proc/PID/mem: process_vm_readv pins them,
		 * and pinning a copy-on-write page copies it (unshares) */
		struct ckpt_tracee *src = d->snap.pid > 0 ? &d->snap : &d->t;
		ssize_t got = src == &d->snap ? 0 : process_vm_readv(src->pid, &lio, 1, rio, n, 0);
		if (got < 0)
			got = 0;
		/* the rest of the chunk, slowly */
		for (size_t i = 0, at = 0; i < n && (size_t)got < len; i++) {
			size_t l = rio[i].iov_len;
			if (at + l > (size_t)got) {
				size_t from = (size_t)got > at ? (size_t)got - at : 0;
				uint64_t a = (uint64_t)(uintptr_t)rio[i].iov_base + from;
				int rc = ckpt_mem_read(src, a, buf + at + from, l - from);
				if (rc)
					return ckpt_fail(d->err, d->errlen, rc,
							 "pid %d: reading memory at %#llx: %s", d->pid,
							 (unsigned long long)a, strerror(-rc));
				got = (ssize_t)(at + l);
			}
			at += l;
		}
		snapshot_patch(d, rio, n, buf);
		XXH3_64bits_update(xs, buf, len);
		int rc = write_all(out, buf, len);
		if (rc)
			return ckpt_fail(d->err, d->errlen, rc, "%s: %s", path, strerror(-rc));
		if ((flags & CKPT_DUMP_WRITEBACK) && !d->attached)
			sync_file_range(out, (off64_t)*off, (off64_t)len, SYNC_FILE_RANGE_WRITE);
		*off += len;
		/* advance past what was taken */
		for (size_t left = len; left;) {
			uint64_t size = v->runs[r]->count * CKPT_PAGE - done;
			if (left >= size) {
				left -= size;
				r++;
				done = 0;
			} else {
				done += left;
				left = 0;
			}
		}
	}
	return 0;
}

/* The process may go on: killed (CKPT_DUMP_KILL) or let go as it was. */
static void let_go_one(struct dump *d, const struct ckpt_dump_opts *o)
{
	if (o->flags & CKPT_DUMP_KILL) {
		kill(d->pid, SIGKILL);
		ckpt_threads_reap(&d->th);
		int ws;
		while (waitpid(d->pid, &ws, __WALL) == d->pid && !WIFEXITED(ws) && !WIFSIGNALED(ws))
			;
		d->attached = 0;
	} else {
		detach(d);
	}
}

static void let_go(struct dump *d, const struct ckpt_dump_opts *o)
{
	let_go_one(d, o);
	if (o->captured)
		o->captured(o->arg);
}

/* What one dump gathers for the image's metadata sections, and frees. */
struct image {
	Storm__Ckpt__Meta meta;
	Storm__Ckpt__MmFields mm;
	Storm__Ckpt__VmaTable vt;
	Storm__Ckpt__FileTable ft;
	struct ckpt_fdump *files; /* files_*.c's side of ft */
	char *status;            /* /proc/PID/status at the stop */
	char comm[64], cwd[4096], exe[4096];
	uint32_t npsec;          /* page sections planned */
	struct ckpt_header h;
};

/* Seizes every thread and waits for their ptrace stops; a signal that
 * arrives first is handed back at the detach. */
static int stop_process(struct dump *d, struct image *im)
{
	pid_t pid = d->pid;
	char p[128];
	snprintf(p, sizeof(p), "%s/status", d->proc);
	im->status = ckpt_read_all(p, NULL);
	if (!im->status)
		return ckpt_fail(d->err, d->errlen, -ESRCH, "pid %d: no such process", pid);
	long tgid = ckpt_status_num(im->status, "Tgid:\t", 10);
	if (tgid != pid)
		return ckpt_fail(d->err, d->errlen, -EINVAL,
				 "pid %d: a thread of process %ld (dump the process)", pid, tgid);
	int rc = ckpt_threads_stop(&d->th, pid, d->err, d->errlen);
	d->attached = d->th.n > 0 && d->th.v[0].tid == pid;
	if (d->attached)
		d->t.pending_sig = d->th.v[0].sig;
	d->t.others = d->th.n > 1;
	return rc;
}

/* Every thread's registers, FP or extended state, signal mask, rseq, robust
 * list, name and pending signals; the main one's registers and mask are
 * what the injected calls start from. */
static int read_registers(struct dump *d, struct image *im)
{
	int rc = ckpt_threads_read(&d->th, &im->meta, d->err, d->errlen);
	if (rc)
		return rc;
	d->regs = d->th.v[0].regs;
	d->sigmask = d->th.v[0].sigmask;
	return 0;
}

/* Name, directories, umask, environment, command line, time, the caller's
 * own state (o->app). */
static void read_identity(struct dump *d, struct image *im, const struct ckpt_dump_opts *o)
{
	Storm__Ckpt__Meta *meta = &im->meta;
	char p[128];
	meta->pid = d->pid;
	const char *cp = strstr(im->status, "Name:\t");
	if (cp)
		sscanf(cp + 6, "%63[^\n]", im->comm);
	meta->comm = im->comm;
	snprintf(p, sizeof(p), "%s/cwd", d->proc);
	ssize_t n = readlink(p, im->cwd, sizeof(im->cwd) - 1);
	im->cwd[n > 0 ? n : 0] = 0;
	meta->cwd = im->cwd;
	snprintf(p, sizeof(p), "%s/exe", d->proc);
	n = readlink(p, im->exe, sizeof(im->exe) - 1);
	im->exe[n > 0 ? n : 0] = 0;
	meta->exe = im->exe;
	meta->umask = ckpt_status_num(im->status, "Umask:\t", 8);
	size_t elen = 0, clen = 0;
	snprintf(p, sizeof(p), "%s/environ", d->proc);
	meta->environ.data = (uint8_t *)ckpt_read_all(p, &elen);
	meta->environ.len = elen;
	snprintf(p, sizeof(p), "%s/cmdline", d->proc);
	meta->cmdline.data = (uint8_t *)ckpt_read_all(p, &clen);
	meta->cmdline.len = clen;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	meta->time_ns = now.tv_sec * 1000000000ll + now.tv_nsec;
	if (o->app_len) {
		meta->app.data = (uint8_t *)o->app;
		meta->app.len = o->app_len;
	}
}

/* The area table, and for each area what is saved: nothing (its file's
 * data), the vDSO for comparison, or its pages as runs in a page section. */
static int plan_areas(struct dump *d, struct image *im, int pmfd)
{
	im->vt.vmas = calloc(d->nv ? d->nv : 1, sizeof(*im->vt.vmas));
	if (!im->vt.vmas)
		return -ENOMEM;
	for (size_t i = 0; i < d->nv; i++) {
		struct dvma *v = &d->v[i];
		Storm__Ckpt__Vma *pb = &v->pb;
		storm__ckpt__vma__init(pb);
		pb->start = v->m.start;
		pb->end = v->m.end;
		pb->prot = v->m.prot;
		pb->shared = v->m.shared;
		pb->kind = v->m.kind;
		pb->path = v->m.path;
		pb->offset = v->m.offset;
		pb->pages_section = -1;
		if (v->m.kind == CKPT_VMA_MEMFD || (v->m.kind == CKPT_VMA_ANON && v->m.shared))
			pb->shm_id = v->m.ino;
		im->vt.vmas[im->vt.n_vmas++] = pb;
		int rc;
		if (v->m.kind == CKPT_VMA_VDSO) {
			im->meta.vdso.len = v->m.end - v->m.start;
			im->meta.vdso.data = malloc(im->meta.vdso.len);
			if (!im->meta.vdso.data)
				return -ENOMEM;
			if ((rc = ckpt_mem_read(&d->t, v->m.start, im->meta.vdso.data,
						im->meta.vdso.len)))
				return rc;
		}
		/* a shared memfd area's data is the memfd's, saved with it */
		if (v->m.kind >= CKPT_VMA_VDSO && !(v->m.kind == CKPT_VMA_MEMFD && !v->m.shared))
			continue;
		if (v->m.kind == CKPT_VMA_FILE) {
			rc = ckpt_file_range_hash(v->m.path, v->m.offset, v->m.end - v->m.start,
						  &pb->file_size, &pb->file_hash);
			if (rc)
				return ckpt_fail(d->err, d->errlen, rc, "pid %d: mapped file %s: %s",
						 d->pid, v->m.path, strerror(-rc));
			if (v->m.shared)
				continue; /* its data is the file's */
		}
		if ((rc = plan_pages(d, pmfd, v)))
			return rc;
		if (v->nruns) {
			pb->runs = v->runs;
			pb->n_runs = v->nruns;
			pb->pages_section = (int32_t)im->npsec++;
		}
	}
	return 0;
}

/* Every page section, each hashed as it is written; *pages counts them. */
static int write_pages(struct dump *d, struct image *im, int out, const char *tmp,
		       uint64_t *off, uint64_t *pages)
{
	/* small enough for the hash and the write to find it in the cache */
	const size_t BUF = 1 << 20;
	unsigned char *buf = malloc(BUF);
	XXH3_state_t *xs = XXH3_createState();
	int rc = buf && xs ? 0 : -ENOMEM;
	for (size_t i = 0, k = 0; !rc && i < d->nv; i++) {
		struct dvma *v = &d->v[i];
		if (v->pb.pages_section < 0)
			continue;
		struct ckpt_sec *s = &im->h.secs[k++];
		s->type = CKPT_SEC_PAGES;
		s->index = (uint32_t)v->pb.pages_section;
		s->offset = *off;
		XXH3_64bits_reset(xs);
		rc = copy_area(d, v, out, buf, BUF, xs, off, d->flags, tmp);
		if (rc)
			break;
		*pages += v->npages;
		s->length = *off - s->offset;
		s->hash = XXH3_64bits_digest(xs);
	}
	XXH3_freeState(xs);
	free(buf);
	return rc;
}

/* The metadata sections after the pages, at *off. */
static int write_meta(struct dump *d, struct image *im, int out, const char *tmp, uint64_t *off)
{
	struct {
		uint32_t type;
		const ProtobufCMessage *msg;
	} md[3] = { { CKPT_SEC_META, &im->meta.base },
		    { CKPT_SEC_VMAS, &im->vt.base },
		    { CKPT_SEC_FILES, &im->ft.base } };
	for (int i = 0; i < 3; i++) {
		size_t len = protobuf_c_message_get_packed_size(md[i].msg);
		uint8_t *pk = malloc(len ? len : 1);
		if (!pk)
			return -ENOMEM;
		protobuf_c_message_pack(md[i].msg, pk);
		int rc = put_section(out, off, &im->h.secs[im->npsec + i], md[i].type, pk, len);
		free(pk);
		if (rc)
			return ckpt_fail(d->err, d->errlen, rc, "%s: %s", tmp, strerror(-rc));
	}
	return 0;
}

/* The header at the start (h->file_size set). */
static int write_header(struct dump *d, const struct ckpt_header *h, int out, const char *tmp)
{
	size_t hsize = ckpt_header_size(h->nsec);
	unsigned char *hdr = malloc(hsize);
	if (!hdr)
		return -ENOMEM;
	ckpt_image_write_header(h, hdr);
	int rc = 0;
	if (pwrite(out, hdr, hsize, 0) != (ssize_t)hsize ||
	    ((d->flags & CKPT_DUMP_FSYNC) && fsync(out) < 0))
		rc = ckpt_fail(d->err, d->errlen, -errno, "%s: %s", tmp, strerror(errno));
	free(hdr);
	return rc;
}

/* The metadata sections after the pages, then the header at the start. */
static int write_meta_and_header(struct dump *d, struct image *im, int out, const char *tmp,
				 uint64_t off)
{
	int rc = write_meta(d, im, out, tmp, &off);
	if (rc)
		return rc;
	im->h.file_size = off;
	return write_header(d, &im->h, out, tmp);
}

static void image_free(struct image *im)
{
	for (size_t i = 0; i < im->meta.n_sigactions; i++)
		free(im->meta.sigactions[i]);
	free(im->meta.sigactions);
	for (size_t i = 0; i < im->meta.n_itimers; i++)
		free(im->meta.itimers[i]);
	free(im->meta.itimers);
	ckpt_files_dump_free(im->files, &im->ft);
	free(im->vt.vmas);
	free(im->meta.vdso.data);
	free(im->meta.environ.data);
	free(im->meta.cmdline.data);
	free(im->mm.auxv.data);
	free(im->status);
	free(im->h.secs);
}

static void dump_free(struct dump *d)
{
	snapshot_drop(d);
	if (d->t.memfd >= 0)
		close(d->t.memfd);
	ckpt_threads_free(&d->th);
	for (size_t i = 0; i < d->nv; i++) {
		for (size_t r = 0; r < d->v[i].nruns; r++)
			free(d->v[i].runs[r]);
		free(d->v[i].runs);
	}
	free(d->v);
}

/* What the image cannot hold and a restore could not make again, refused
 * before anything is injected (the process runs on as it was): POSIX
 * timers, and seccomp filters other than those the checkpointer runs under
 * itself (inherited from a common ancestor, as storm's ranks get the node
 * daemon's, which a restore by a fork of it gives back). */
static int refuse_unsaved(struct dump *d)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/timers", d->proc);
	char *timers = ckpt_read_all(p, NULL);
	int clock, nt = timers ? ckpt_proc_timers(timers, &clock) : 0;
	free(timers);
	if (nt)
		return ckpt_fail(d->err, d->errlen, -ENOTSUP,
				 "pid %d: it holds %d POSIX timer%s (timer_create, clock %d; %s): POSIX "
				 "timers are not restored", d->pid, nt, nt > 1 ? "s" : "", clock, p);
	char *own = ckpt_read_all("/proc/self/status", NULL);
	int omode, ofilters;
	ckpt_status_seccomp(own, &omode, &ofilters);
	free(own);
	for (size_t i = 0; i < d->th.n; i++) {
		snprintf(p, sizeof(p), "%s/task/%d/status", d->proc, d->th.v[i].tid);
		char *st = ckpt_read_all(p, NULL);
		int mode, filters;
		ckpt_status_seccomp(st, &mode, &filters);
		free(st);
		if (mode == 1 || (mode && (omode != mode || filters > ofilters)))
			return ckpt_fail(d->err, d->errlen, -ENOTSUP,
					 "pid %d: it runs under seccomp (thread %d: %s, %d filter%s; "
					 "the checkpointer %d): seccomp filters are not restored", d->pid,
					 d->th.v[i].tid, mode == 1 ? "strict mode" : "filter mode",
					 filters, filters == 1 ? "" : "s", ofilters);
	}
	return 0;
}

/* Everything but the memory, read while the process is stopped. */
static int read_state(struct dump *d, struct image *im, const struct ckpt_dump_opts *o,
		      int *pmfd)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/mem", d->proc);
	d->t.memfd = open(p, O_RDWR | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/pagemap", d->proc);
	*pmfd = open(p, O_RDONLY | O_CLOEXEC);
	if (d->t.memfd < 0 || *pmfd < 0)
		return ckpt_fail(d->err, d->errlen, -errno, "pid %d: %s: %s", d->pid, p,
				 strerror(errno));
	int rc;
	if ((rc = read_registers(d, im)) || (rc = refuse_unsaved(d)) || (rc = read_maps(d)))
		return rc;
	/* descriptors and shared memory judged before anything is injected: a
	 * refusal leaves the process as it was */
	if ((rc = ckpt_files_dump(d->pid, o, d->tree, d->ntree, &im->ft, &im->files, d->err,
				  d->errlen)))
		return rc;
	for (size_t i = 0; i < d->nv; i++)
		if ((rc = ckpt_files_area(im->files, &d->v[i].m)))
			return rc;
	if ((rc = query_by_injection(d, &im->meta, im->status)))
		return rc;
	if ((rc = read_mm(d, &im->mm)) < 0)
		return ckpt_fail(d->err, d->errlen, rc, "pid %d: reading stat/auxv failed", d->pid);
	/* the gadget write left a private copy of a text page: harmless, it is saved */
	read_identity(d, im, o);
	if ((rc = plan_areas(d, im, *pmfd)))
		return rc;
	ckpt_files_plan_data(im->files, &im->npsec);
	return 0;
}

/* ---- a process tree: the process and its descendants in one image */

/* One process of the tree while it is dumped. */
struct tproc {
	struct dump d;
	struct image im;
	int pmfd;
	Storm__Ckpt__Process pb;
};

/* The children of every thread of pid (/proc/PID/task/TID/children). */
static int list_children(pid_t pid, pid_t **out, size_t *n)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *dp = opendir(path);
	if (!dp)
		return -errno;
	struct dirent *de;
	int rc = 0;
	while (!rc && (de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", pid, de->d_name);
		char *list = ckpt_read_all(path, NULL);
		if (!list) {
			if (errno == ENOENT)
				continue; /* a thread that ended */
			rc = -errno;
			break;
		}
		for (char *p = list, *e; *p; p = e) {
			long c = strtol(p, &e, 10);
			if (e == p)
				break;
			pid_t *nv = realloc(*out, (*n + 1) * sizeof(*nv));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			*out = nv;
			nv[(*n)++] = (pid_t)c;
		}
		free(list);
	}
	closedir(dp);
	return rc;
}

/* State, group and session of pid from /proc/PID/stat. */
static int proc_stat(pid_t pid, char *state, pid_t *pgid, pid_t *sid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	char *st = ckpt_read_all(path, NULL);
	char *p = st ? strrchr(st, ')') : NULL;
	int pp, g, s;
	int ok = p && sscanf(p + 1, " %c %d %d %d", state, &pp, &g, &s) == 4;
	free(st);
	if (!ok)
		return -ESRCH;
	*pgid = g;
	*sid = s;
	return 0;
}

static void tproc_init(struct tproc *t, pid_t pid, const struct ckpt_dump_opts *o, char *err,
		       size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->d = (struct dump){ .pid = pid, .flags = o->flags, .err = err, .errlen = errlen,
			      .t = { .pid = pid, .memfd = -1 }, .snap = { .memfd = -1 } };
	t->im = (struct image){ .meta = STORM__CKPT__META__INIT, .mm = STORM__CKPT__MM_FIELDS__INIT,
				.vt = STORM__CKPT__VMA_TABLE__INIT,
				.ft = STORM__CKPT__FILE_TABLE__INIT };
	t->im.meta.mm = &t->im.mm;
	t->pmfd = -1;
	storm__ckpt__process__init(&t->pb);
	snprintf(t->d.proc, sizeof(t->d.proc), "/proc/%d", pid);
}

/* Every descendant of the stopped tp[0], each stopped before its own
 * children are listed (a stopped process forks no more, so a listing after
 * its stop is complete), or a refusal naming the one that cannot be
 * saved. *n counts those stopped (to let go on failure). */
static int stop_tree(struct tproc **tpp, size_t *n, const struct ckpt_dump_opts *o, char *err,
		     size_t errlen)
{
	int rc = 0;
	char st0;
	pid_t pg0, sid0;
	if (proc_stat((*tpp)[0].d.pid, &st0, &pg0, &sid0))
		return ckpt_fail(err, errlen, -ESRCH, "pid %d: no such process", (*tpp)[0].d.pid);
	(*tpp)[0].pb.pid = (*tpp)[0].d.pid;
	(*tpp)[0].pb.parent = -1;
	(*tpp)[0].pb.pgid = pg0;
	(*tpp)[0].pb.sid = sid0;
	for (size_t i = 0; !rc && i < *n; i++) {
		pid_t *kids = NULL;
		size_t nk = 0;
		pid_t parent = (*tpp)[i].d.pid;
		if ((rc = list_children(parent, &kids, &nk)) < 0)
			rc = ckpt_fail(err, errlen, rc, "pid %d: listing its children: %s", parent,
				       strerror(-rc));
		for (size_t k = 0; !rc && k < nk; k++) {
			bool known = false;
			for (size_t j = 0; j < *n; j++)
				known |= (*tpp)[j].d.pid == kids[k];
			if (known)
				continue;
			char state;
			pid_t pgid, sid;
			const char *why = NULL;
			if (proc_stat(kids[k], &state, &pgid, &sid))
				why = "it ended while the tree was being stopped";
			else if (state == 'Z' || state == 'X')
				why = "it has exited and was not reaped (a zombie), which is not saved";
			else if (syscall(SYS_kcmp, parent, kids[k], KCMP_VM, 0, 0) == 0)
				why = "it shares its parent's memory (a vfork in progress, or CLONE_VM)";
			else if (syscall(SYS_kcmp, parent, kids[k], KCMP_FILES, 0, 0) == 0)
				why = "it shares its parent's descriptor table (CLONE_FILES)";
			else
				why = ckpt_tree_refusal(kids[k], pgid, sid, (*tpp)[i].pb.pgid, sid0);
			if (!why && *n >= CKPT_MAX_PROCS)
				why = "the tree has more processes than an image holds";
			if (why) {
				rc = ckpt_fail(err, errlen, -ENOTSUP, "pid %d: its child %d: %s", parent,
					       kids[k], why);
				break;
			}
			struct tproc *nv = realloc(*tpp, (*n + 1) * sizeof(*nv));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			*tpp = nv;
			struct tproc *t = &nv[*n];
			tproc_init(t, kids[k], o, err, errlen);
			t->pb.pid = kids[k];
			t->pb.parent = (int32_t)i;
			t->pb.pgid = pgid;
			t->pb.sid = sid;
			(*n)++;
			rc = stop_process(&t->d, &t->im);
		}
		free(kids);
	}
	return rc;
}

/* The image of a tree: each process's page sections, then each one's
 * metadata sections, then the tree; every section's index names its
 * process (ckpt_sec_index). Read from the stopped processes (no snapshot:
 * the fork of one would not hold the memory it shares with the others). */
/* whole: one file written in offset order; the sections' offsets and the table are one count */
static int dump_tree(struct tproc *tp, size_t n, const char *path, const struct ckpt_dump_opts *o,
		     struct ckpt_stats *st, double t0, double t_stopped, char *err, size_t errlen)
{
	pid_t *pids = calloc(n, sizeof(*pids));
	Storm__Ckpt__Process **pbs = calloc(n, sizeof(*pbs));
	Storm__Ckpt__Tree tree = STORM__CKPT__TREE__INIT;
	struct ckpt_header h = { 0 };
	char *tmp = NULL;
	int out = -1, rc = pids && pbs ? 0 : -ENOMEM;
	uint64_t pages = 0, off = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		pids[i] = tp[i].d.pid;
		pbs[i] = &tp[i].pb;
		tp[i].im.meta.mm = &tp[i].im.mm; /* moved as the array grew */
	}
	tree.procs = pbs;
	tree.n_procs = n;
	for (size_t i = 0; !rc && i < n; i++) {
		tp[i].d.tree = pids;
		tp[i].d.ntree = n;
		rc = read_state(&tp[i].d, &tp[i].im, o, &tp[i].pmfd);
		if (!rc && tp[i].im.npsec > 0xffff)
			rc = ckpt_fail(err, errlen, -ENOTSUP,
				       "pid %d: %u areas with pages: too many for an image of a tree",
				       tp[i].d.pid, tp[i].im.npsec);
		h.nsec += tp[i].im.npsec + 3;
	}
	h.nsec += 1;
	for (size_t i = 0; !rc && i < n; i++) {
		tp[i].im.h.nsec = tp[i].im.npsec + 3;
		if (!(tp[i].im.h.secs = calloc(tp[i].im.h.nsec, sizeof(*tp[i].im.h.secs))))
			rc = -ENOMEM;
	}
	if (!rc && (!(h.secs = calloc(h.nsec, sizeof(*h.secs))) || asprintf(&tmp, "%s.tmp", path) < 0)) {
		tmp = NULL;
		rc = -ENOMEM;
	}
	if (!rc && (out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		rc = ckpt_fail(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
	off = ckpt_header_size(h.nsec);
	if (!rc && lseek(out, (off_t)off, SEEK_SET) < 0)
		rc = -errno;
	double t_planned = ckpt_now();
	for (size_t i = 0; !rc && i < n; i++)
		if (!(rc = write_pages(&tp[i].d, &tp[i].im, out, tmp, &off, &pages)))
			rc = ckpt_files_write_data(tp[i].im.files, out, tp[i].im.h.secs, &off, tmp);
	double t_copied = ckpt_now(), t_free = 0;
	if (!rc) {
		/* every process goes on at once, the leaves first (killed: before
		 * the parent that would see them end) */
		for (size_t i = n; i-- > 0;)
			let_go_one(&tp[i].d, o);
		if (o->captured)
			o->captured(o->arg);
		t_free = ckpt_now();
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = write_meta(&tp[i].d, &tp[i].im, out, tmp, &off);
	size_t k = 0;
	/* the table in offset order: pages of each, metadata of each, tree */
	for (size_t i = 0; !rc && i < n; i++)
		for (uint32_t j = 0; j < tp[i].im.npsec; j++, k++) {
			h.secs[k] = tp[i].im.h.secs[j];
			h.secs[k].index = ckpt_sec_index((uint32_t)i, h.secs[k].index);
		}
	for (size_t i = 0; !rc && i < n; i++)
		for (uint32_t j = 0; j < 3; j++, k++) {
			h.secs[k] = tp[i].im.h.secs[tp[i].im.npsec + j];
			h.secs[k].index = ckpt_sec_index((uint32_t)i, 0);
		}
	if (!rc) {
		size_t len = storm__ckpt__tree__get_packed_size(&tree);
		uint8_t *pk = malloc(len ? len : 1);
		if (!pk)
			rc = -ENOMEM;
		else {
			storm__ckpt__tree__pack(&tree, pk);
			rc = put_section(out, &off, &h.secs[k], CKPT_SEC_TREE, pk, len);
			free(pk);
			if (rc)
				rc = ckpt_fail(err, errlen, rc, "%s: %s", tmp, strerror(-rc));
		}
	}
	h.file_size = off;
	if (!rc)
		rc = write_header(&tp[0].d, &h, out, tmp);
	if (!rc && (close(out) < 0 || rename(tmp, path) < 0)) {
		out = -1;
		rc = ckpt_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	}
	if (!rc) {
		out = -1;
		if (st) {
			st->bytes = h.file_size;
			st->pages = pages;
			st->seconds = ckpt_now() - t0;
			st->t_stop = t_stopped - t0;
			st->t_meta = t_planned - t_stopped;
			st->t_copy = t_copied - t_planned;
			st->t_frozen = t_free - t0;
			st->snapshot = 0;
		}
	}
	if (out >= 0) {
		close(out);
		unlink(tmp);
	}
	free(tmp);
	free(h.secs);
	free(pbs);
	free(pids);
	return rc;
}

/* What the steps of ckpt_dump share; dump_end frees it. */
struct dumping {
	struct dump d;
	struct image im;
	const struct ckpt_dump_opts *o;
	const char *path;
	char *tmp;          /* path.tmp, renamed to path once whole */
	int out, pmfd;
	uint64_t off, pages;
	bool snap;          /* read from a snapshot: the process went on before */
	double t0, t_stopped, t_planned, t_copied, t_free;
};

/* w's process and its descendants in one image (dump_tree): w's process
 * becomes the tree's first, w keeps nothing. Frees tp. */
static int dump_children(struct dumping *w, struct tproc *tp, struct ckpt_stats *st)
{
	const struct ckpt_dump_opts *o = w->o;
	char *err = w->d.err;
	size_t errlen = w->d.errlen;
	size_t n = 1;
	tproc_init(&tp[0], w->d.pid, o, err, errlen);
	tp[0].d = w->d;
	tp[0].im = w->im;
	tp[0].im.meta.mm = &tp[0].im.mm;
	memset(&w->d, 0, sizeof(w->d));
	memset(&w->im, 0, sizeof(w->im));
	w->d.t.memfd = w->d.snap.memfd = -1;
	int rc = stop_tree(&tp, &n, o, err, errlen);
	w->t_stopped = ckpt_now();
	if (!rc)
		rc = dump_tree(tp, n, w->path, o, st, w->t0, w->t_stopped, err, errlen);
	for (size_t i = n; i-- > 0;) {
		if (rc)
			detach(&tp[i].d);
		if (tp[i].pmfd >= 0)
			close(tp[i].pmfd);
		dump_free(&tp[i].d);
		image_free(&tp[i].im);
	}
	free(tp);
	return rc;
}

/* path.tmp opened, at the end of the header's space. */
static int dump_open_file(struct dumping *w)
{
	struct image *im = &w->im;
	/* header space, page sections, metadata sections, then the header */
	im->h.nsec = im->npsec + 3;
	im->h.secs = calloc(im->h.nsec, sizeof(*im->h.secs));
	if (!im->h.secs || asprintf(&w->tmp, "%s.tmp", w->path) < 0) {
		w->tmp = NULL;
		return -ENOMEM;
	}
	w->out = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w->out < 0)
		return ckpt_fail(w->d.err, w->d.errlen, -errno, "%s: %s", w->tmp, strerror(errno));
	w->off = ckpt_header_size(im->h.nsec);
	if (lseek(w->out, (off_t)w->off, SEEK_SET) < 0)
		return -errno;
	return 0;
}

/* The pages and the files' data, the process let go, then its metadata
 * and the header; path.tmp renamed to path. */
static int dump_write_file(struct dumping *w)
{
	struct dump *d = &w->d;
	struct image *im = &w->im;
	int rc;
	w->t_planned = ckpt_now();
	if ((rc = write_pages(d, im, w->out, w->tmp, &w->off, &w->pages)) ||
	    (rc = ckpt_files_write_data(im->files, w->out, im->h.secs, &w->off, w->tmp)))
		return rc;
	w->t_copied = ckpt_now();
	snapshot_drop(d);
	/* the process itself is no longer needed */
	if (!w->snap) {
		let_go(d, w->o);
		w->t_free = ckpt_now();
	}
	if ((rc = write_meta_and_header(d, im, w->out, w->tmp, w->off)))
		return rc;
	if (close(w->out) < 0 || rename(w->tmp, w->path) < 0) {
		w->out = -1;
		return ckpt_fail(d->err, d->errlen, -errno, "%s: %s", w->path, strerror(errno));
	}
	w->out = -1;
	return 0;
}

/* Frees what w holds; after a failure (rc) the process detached if still
 * held. path.tmp, if still open, removed. Returns rc. */
static int dump_end(struct dumping *w, int rc)
{
	snapshot_drop(&w->d);
	if (rc)
		detach(&w->d);
	if (w->out >= 0) {
		close(w->out);
		unlink(w->tmp);
	}
	if (w->pmfd >= 0)
		close(w->pmfd);
	dump_free(&w->d);
	image_free(&w->im);
	free(w->tmp);
	return rc;
}

int ckpt_dump(pid_t pid, const char *path, const struct ckpt_dump_opts *o,
	      struct ckpt_stats *st, char *err, size_t errlen)
{
	static const struct ckpt_dump_opts none = { 0 };
	if (!o)
		o = &none;
	struct dumping w = {
		.d = { .pid = pid, .flags = o->flags, .err = err, .errlen = errlen,
		       .t = { .pid = pid, .memfd = -1 }, .snap = { .memfd = -1 } },
		.im = { .meta = STORM__CKPT__META__INIT, .mm = STORM__CKPT__MM_FIELDS__INIT,
			.vt = STORM__CKPT__VMA_TABLE__INIT, .ft = STORM__CKPT__FILE_TABLE__INIT },
		.o = o, .path = path, .out = -1, .pmfd = -1,
	};
	w.im.meta.mm = &w.im.mm;
	snprintf(w.d.proc, sizeof(w.d.proc), "/proc/%d", pid);
	w.t0 = ckpt_now();

	int rc = stop_process(&w.d, &w.im);
	if (rc)
		goto out;
	/* with children, the tree is the image */
	pid_t *kids = NULL;
	size_t nk = 0;
	if (list_children(pid, &kids, &nk) == 0 && nk) {
		free(kids);
		struct tproc *tp = malloc(sizeof(*tp));
		if (!tp) {
			rc = -ENOMEM;
			goto out;
		}
		return dump_children(&w, tp, st);
	}
	free(kids);
	w.t_stopped = ckpt_now();
	if ((rc = read_state(&w.d, &w.im, o, &w.pmfd)))
		goto out;

	/* with a snapshot to read, the process goes on now */
	w.snap = (w.d.flags & CKPT_DUMP_SNAPSHOT) && !(w.d.flags & CKPT_DUMP_KILL) &&
		 !ckpt_files_need_stop(w.im.files) && snapshot(&w.d);
	if (w.snap) {
		let_go(&w.d, o);
		w.t_free = ckpt_now();
	}
	if ((rc = dump_open_file(&w)) || (rc = dump_write_file(&w)))
		goto out;
	if (st) {
		st->bytes = w.im.h.file_size;
		st->pages = w.pages;
		st->seconds = ckpt_now() - w.t0;
		st->t_stop = w.t_stopped - w.t0;
		st->t_meta = w.t_planned - w.t_stopped;
		st->t_copy = w.t_copied - w.t_planned;
		st->t_frozen = w.t_free - w.t0;
		st->snapshot = w.snap;
	}
out:
	return dump_end(&w, rc);
}
