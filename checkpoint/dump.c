/* ckpt_dump: write an image of a running or stopped process.
 *
 * The process is seized and interrupted with ptrace. What /proc shows is read
 * from /proc (maps, pagemap, fdinfo, status, auxv, environ); the rest (signal
 * handlers, brk, interval timers) is asked of the process itself by injected
 * system calls, run from a "syscall; int3" gadget written over the first bytes
 * of its text (and put back). Memory is read through /proc/PID/mem; only pages
 * that differ from their file or from zero are saved (pagemap). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "image.h"
#include "internal.h"

#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif
struct rseq_conf {
	uint64_t rseq_abi_pointer;
	uint32_t rseq_abi_size;
	uint32_t signature;
	uint32_t flags;
	uint32_t pad;
};

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
	struct ckpt_tracee t;
	struct user_regs_struct regs;
	uint64_t sigmask;
	int attached;
	struct dvma *v;
	size_t nv;
	unsigned flags;
	char *err;
	size_t errlen;
};

static uint64_t status_hex(const char *status, const char *key)
{
	const char *p = strstr(status, key);
	return p ? strtoull(p + strlen(key), NULL, 16) : 0;
}

static long status_dec(const char *status, const char *key, int base)
{
	const char *p = strstr(status, key);
	return p ? strtol(p + strlen(key), NULL, base) : -1;
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
		if ((d->flags & CKPT_DUMP_EXTERNAL_MEMFD) && v->m.shared &&
		    v->m.kind == CKPT_VMA_FILE && !strncmp(v->m.path, "/memfd:", 7))
			v->m.kind = CKPT_VMA_EXTERNAL;
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
	rc = ckpt_inject(t, &d->regs, SYS_munmap, &r, 0, 2, scratch, (long)CKPT_PAGE);
out:
	ckpt_mem_write(t, text, saved, 8);
	ptrace(PTRACE_SETSIGMASK, d->pid, sizeof(d->sigmask), &d->sigmask);
	ptrace(PTRACE_SETREGS, d->pid, 0, &d->regs);
	return rc;
}

static int list_files(struct dump *d, Storm__Ckpt__FileTable *ft)
{
	char dir[96];
	snprintf(dir, sizeof(dir), "%s/fd", d->proc);
	DIR *dp = opendir(dir);
	if (!dp)
		return ckpt_fail(d->err, d->errlen, -errno, "pid %d: %s: %s", d->pid, dir,
				 strerror(errno));
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		int fd = atoi(de->d_name);
		char p[128], target[4096], info[160];
		snprintf(p, sizeof(p), "%s/fd/%d", d->proc, fd);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		struct stat sb;
		int regular = stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && target[0] == '/' &&
			      !strstr(target, " (deleted)");
		snprintf(info, sizeof(info), "%s/fdinfo/%d", d->proc, fd);
		char *fi = ckpt_read_all(info, NULL);
		if (!fi)
			continue;
		Storm__Ckpt__File *f = malloc(sizeof(*f));
		storm__ckpt__file__init(f);
		f->fd = fd;
		f->kind = regular ? 0 : 1;
		f->path = strdup(target);
		f->pos = strtoull(strstr(fi, "pos:") ? strstr(fi, "pos:") + 4 : "0", NULL, 10);
		f->flags = status_dec(fi, "flags:", 8);
		f->size = regular ? (uint64_t)sb.st_size : 0;
		free(fi);
		Storm__Ckpt__File **nf = realloc(ft->files, (ft->n_files + 1) * sizeof(*nf));
		if (!nf) {
			rc = -ENOMEM;
			break;
		}
		ft->files = nf;
		ft->files[ft->n_files++] = f;
	}
	closedir(dp);
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
	for (char *tok = p ? strtok(p + 2, " ") : NULL; tok && i < 64; tok = strtok(NULL, " "))
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

static void detach(struct dump *d)
{
	if (!d->attached)
		return;
	ptrace(PTRACE_DETACH, d->pid, 0, d->t.pending_sig);
	d->attached = 0;
}

int ckpt_dump(pid_t pid, const char *path, const struct ckpt_dump_opts *o,
	      struct ckpt_stats *st, char *err, size_t errlen)
{
	unsigned flags = o ? o->flags : 0;
	struct dump d = { .pid = pid, .flags = flags, .err = err, .errlen = errlen,
			  .t = { .pid = pid, .memfd = -1 } };
	Storm__Ckpt__Meta meta = STORM__CKPT__META__INIT;
	Storm__Ckpt__MmFields mm = STORM__CKPT__MM_FIELDS__INIT;
	Storm__Ckpt__VmaTable vt = STORM__CKPT__VMA_TABLE__INIT;
	Storm__Ckpt__FileTable ft = STORM__CKPT__FILE_TABLE__INIT;
	char *status = NULL, *tmp = NULL, cwd[4096] = "", exe[4096] = "";
	int rc = 0, out = -1, pmfd = -1;
	unsigned char *xbuf = NULL, *buf = NULL, *hdr = NULL;
	struct ckpt_header h = { 0 };
	double t0 = ckpt_now();

	meta.mm = &mm;
	snprintf(d.proc, sizeof(d.proc), "/proc/%d", pid);
	char p[128];
	snprintf(p, sizeof(p), "%s/status", d.proc);
	status = ckpt_read_all(p, NULL);
	if (!status) {
		rc = ckpt_fail(err, errlen, -ESRCH, "pid %d: no such process", pid);
		goto out;
	}
	if (status_dec(status, "Threads:\t", 10) != 1) {
		rc = ckpt_fail(err, errlen, -ENOTSUP,
			       "pid %d: %ld threads (only single-threaded processes are supported)",
			       pid, status_dec(status, "Threads:\t", 10));
		goto out;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0) {
		rc = ckpt_fail(err, errlen, -errno, "pid %d: ptrace seize: %s", pid, strerror(errno));
		goto out;
	}
	d.attached = 1;
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0) {
		rc = ckpt_fail(err, errlen, -errno, "pid %d: ptrace interrupt: %s", pid,
			       strerror(errno));
		goto out;
	}
	for (;;) {
		int ws;
		if (waitpid(pid, &ws, __WALL) < 0 || !WIFSTOPPED(ws)) {
			d.attached = 0;
			rc = ckpt_fail(err, errlen, -ESRCH, "pid %d: exited while being stopped", pid);
			goto out;
		}
		if ((ws >> 16) == PTRACE_EVENT_STOP)
			break;
		/* a signal arrived first: hand it back at the detach */
		d.t.pending_sig = WSTOPSIG(ws);
		ptrace(PTRACE_CONT, pid, 0, 0);
		ptrace(PTRACE_INTERRUPT, pid, 0, 0);
	}
	snprintf(p, sizeof(p), "%s/mem", d.proc);
	d.t.memfd = open(p, O_RDWR | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/pagemap", d.proc);
	pmfd = open(p, O_RDONLY | O_CLOEXEC);
	if (d.t.memfd < 0 || pmfd < 0) {
		rc = ckpt_fail(err, errlen, -errno, "pid %d: %s: %s", pid, p, strerror(errno));
		goto out;
	}
	if (ptrace(PTRACE_GETREGS, pid, 0, &d.regs) < 0 ||
	    ptrace(PTRACE_GETSIGMASK, pid, sizeof(d.sigmask), &d.sigmask) < 0) {
		rc = ckpt_fail(err, errlen, -errno, "pid %d: reading registers: %s", pid,
			       strerror(errno));
		goto out;
	}
	meta.regs.data = (uint8_t *)&d.regs;
	meta.regs.len = sizeof(d.regs);
	meta.sigmask = d.sigmask;
	xbuf = malloc(65536);
	struct iovec iov = { xbuf, 65536 };
	if (ptrace(PTRACE_GETREGSET, pid, NT_X86_XSTATE, &iov) == 0) {
		meta.xstate.data = xbuf;
		meta.xstate.len = iov.iov_len;
	} else {
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETREGSET, pid, NT_PRFPREG, &iov) < 0) {
			rc = ckpt_fail(err, errlen, -errno, "pid %d: reading FP registers: %s", pid,
				       strerror(errno));
			goto out;
		}
		meta.fpregs.data = xbuf;
		meta.fpregs.len = iov.iov_len;
	}
	struct rseq_conf rc_conf = { 0 };
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, pid, sizeof(rc_conf), &rc_conf) > 0 &&
	    rc_conf.rseq_abi_pointer) {
		meta.rseq_addr = rc_conf.rseq_abi_pointer;
		meta.rseq_len = rc_conf.rseq_abi_size;
		meta.rseq_sig = rc_conf.signature;
	}
	rc = read_maps(&d);
	if (rc)
		goto out;
	rc = query_by_injection(&d, &meta, status);
	if (rc)
		goto out;
	if ((rc = read_mm(&d, &mm)) < 0) {
		ckpt_fail(err, errlen, rc, "pid %d: reading stat/auxv failed", pid);
		goto out;
	}
	/* the gadget write left a private copy of a text page: harmless, it is saved */
	meta.pid = pid;
	const char *cp = strstr(status, "Name:\t");
	char comm[64] = "";
	if (cp)
		sscanf(cp + 6, "%63[^\n]", comm);
	meta.comm = comm;
	snprintf(p, sizeof(p), "%s/cwd", d.proc);
	ssize_t n = readlink(p, cwd, sizeof(cwd) - 1);
	cwd[n > 0 ? n : 0] = 0;
	meta.cwd = cwd;
	snprintf(p, sizeof(p), "%s/exe", d.proc);
	n = readlink(p, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	meta.exe = exe;
	meta.umask = status_dec(status, "Umask:\t", 8);
	size_t elen = 0, clen = 0;
	snprintf(p, sizeof(p), "%s/environ", d.proc);
	meta.environ.data = (uint8_t *)ckpt_read_all(p, &elen);
	meta.environ.len = elen;
	snprintf(p, sizeof(p), "%s/cmdline", d.proc);
	meta.cmdline.data = (uint8_t *)ckpt_read_all(p, &clen);
	meta.cmdline.len = clen;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	meta.time_ns = now.tv_sec * 1000000000ll + now.tv_nsec;
	if (o && o->app_len) {
		meta.app.data = (uint8_t *)o->app;
		meta.app.len = o->app_len;
	}
	rc = list_files(&d, &ft);
	if (rc)
		goto out;

	/* plan the areas and their page sections */
	uint32_t npsec = 0;
	vt.vmas = calloc(d.nv ? d.nv : 1, sizeof(*vt.vmas));
	for (size_t i = 0; i < d.nv; i++) {
		struct dvma *v = &d.v[i];
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
		vt.vmas[vt.n_vmas++] = pb;
		if (v->m.kind == CKPT_VMA_VDSO) {
			meta.vdso.len = v->m.end - v->m.start;
			meta.vdso.data = malloc(meta.vdso.len);
			if ((rc = ckpt_mem_read(&d.t, v->m.start, meta.vdso.data, meta.vdso.len)))
				goto out;
		}
		if (v->m.kind >= CKPT_VMA_VDSO)
			continue;
		if (v->m.kind == CKPT_VMA_FILE) {
			rc = ckpt_file_range_hash(v->m.path, v->m.offset, v->m.end - v->m.start,
						  &pb->file_size, &pb->file_hash);
			if (rc) {
				rc = ckpt_fail(err, errlen, rc, "pid %d: mapped file %s: %s", pid,
					       v->m.path, strerror(-rc));
				goto out;
			}
			if (v->m.shared)
				continue; /* its data is the file's */
		}
		if ((rc = plan_pages(&d, pmfd, v)))
			goto out;
		if (v->nruns) {
			pb->runs = v->runs;
			pb->n_runs = v->nruns;
			pb->pages_section = npsec++;
		}
	}

	/* write: header space, page sections, metadata sections, then the header */
	h.nsec = npsec + 3;
	h.secs = calloc(h.nsec, sizeof(*h.secs));
	size_t hsize = ckpt_header_size(h.nsec);
	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = ckpt_fail(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	uint64_t off = hsize;
	if (lseek(out, off, SEEK_SET) < 0) {
		rc = -errno;
		goto out;
	}
	const size_t BUF = 8 << 20;
	buf = malloc(BUF);
	XXH3_state_t *xs = XXH3_createState();
	uint64_t pages = 0;
	for (size_t i = 0, k = 0; i < d.nv; i++) {
		struct dvma *v = &d.v[i];
		if (v->pb.pages_section < 0)
			continue;
		struct ckpt_sec *s = &h.secs[k++];
		s->type = CKPT_SEC_PAGES;
		s->index = v->pb.pages_section;
		s->offset = off;
		XXH3_64bits_reset(xs);
		for (size_t r = 0; r < v->nruns; r++) {
			uint64_t a = v->m.start + v->runs[r]->page * CKPT_PAGE;
			uint64_t left = v->runs[r]->count * CKPT_PAGE;
			while (left) {
				size_t chunk = left < BUF ? left : BUF;
				rc = ckpt_mem_read(&d.t, a, buf, chunk);
				if (rc) {
					rc = ckpt_fail(err, errlen, rc,
						       "pid %d: reading memory at %#llx: %s", pid,
						       (unsigned long long)a, strerror(-rc));
					break;
				}
				XXH3_64bits_update(xs, buf, chunk);
				if ((rc = write_all(out, buf, chunk))) {
					ckpt_fail(err, errlen, rc, "%s: %s", tmp, strerror(-rc));
					break;
				}
				a += chunk;
				left -= chunk;
				off += chunk;
			}
			if (rc)
				break;
		}
		if (rc) {
			XXH3_freeState(xs);
			goto out;
		}
		pages += v->npages;
		s->length = off - s->offset;
		s->hash = XXH3_64bits_digest(xs);
	}
	XXH3_freeState(xs);
	/* the process itself is no longer needed */
	if (flags & CKPT_DUMP_KILL) {
		kill(pid, SIGKILL);
		int ws;
		while (waitpid(pid, &ws, __WALL) == pid && !WIFEXITED(ws) && !WIFSIGNALED(ws))
			;
		d.attached = 0;
	} else {
		detach(&d);
	}
	struct {
		uint32_t type;
		const ProtobufCMessage *msg;
	} md[3] = { { CKPT_SEC_META, &meta.base },
		    { CKPT_SEC_VMAS, &vt.base },
		    { CKPT_SEC_FILES, &ft.base } };
	for (int i = 0; i < 3; i++) {
		size_t len = protobuf_c_message_get_packed_size(md[i].msg);
		uint8_t *pk = malloc(len ? len : 1);
		protobuf_c_message_pack(md[i].msg, pk);
		rc = put_section(out, &off, &h.secs[npsec + i], md[i].type, pk, len);
		free(pk);
		if (rc) {
			ckpt_fail(err, errlen, rc, "%s: %s", tmp, strerror(-rc));
			goto out;
		}
	}
	h.file_size = off;
	hdr = malloc(hsize);
	ckpt_image_write_header(&h, hdr);
	if (pwrite(out, hdr, hsize, 0) != (ssize_t)hsize ||
	    ((flags & CKPT_DUMP_FSYNC) && fsync(out) < 0)) {
		rc = ckpt_fail(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(out) < 0 || rename(tmp, path) < 0) {
		out = -1;
		rc = ckpt_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	out = -1;
	if (st) {
		st->bytes = h.file_size;
		st->pages = pages;
		st->seconds = ckpt_now() - t0;
	}
out:
	if (rc)
		detach(&d);
	if (out >= 0) {
		close(out);
		unlink(tmp);
	}
	if (d.t.memfd >= 0)
		close(d.t.memfd);
	if (pmfd >= 0)
		close(pmfd);
	for (size_t i = 0; i < d.nv; i++) {
		for (size_t r = 0; r < d.v[i].nruns; r++)
			free(d.v[i].runs[r]);
		free(d.v[i].runs);
	}
	free(d.v);
	free(vt.vmas);
	for (size_t i = 0; i < meta.n_sigactions; i++)
		free(meta.sigactions[i]);
	free(meta.sigactions);
	for (size_t i = 0; i < meta.n_itimers; i++)
		free(meta.itimers[i]);
	free(meta.itimers);
	for (size_t i = 0; i < ft.n_files; i++) {
		free(ft.files[i]->path);
		free(ft.files[i]);
	}
	free(ft.files);
	free(meta.vdso.data);
	free(meta.environ.data);
	free(meta.cmdline.data);
	free(mm.auxv.data);
	free(status);
	free(tmp);
	free(xbuf);
	free(buf);
	free(hdr);
	free(h.secs);
	return rc;
}
